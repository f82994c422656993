//! Vectorize, bound by hand (worker 0.8.7 has no Vectorize API): a raw
//! extern type for the binding, and a typed wrapper implementing the
//! core's `VectorIndex` for one profile.
//!
//! Isolation: each profile queries its own Vectorize namespace (a digest of
//! the profile's name), and its vector ids carry a 16-hex prefix of the
//! same digest, because `deleteByIds` is not namespaced.

use crate::core::error::{Error, Result};
use crate::core::ports::{LocalBoxFuture, VectorIndex};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    /// The `VectorizeIndex` binding object.
    #[derive(Clone)]
    pub type VectorizeSys;
    #[wasm_bindgen(method, catch)]
    fn upsert(this: &VectorizeSys, vectors: JsValue) -> std::result::Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn query(this: &VectorizeSys, vector: JsValue, options: JsValue) -> std::result::Result<js_sys::Promise, JsValue>;
    #[wasm_bindgen(method, catch, js_name = deleteByIds)]
    fn delete_by_ids(this: &VectorizeSys, ids: JsValue) -> std::result::Result<js_sys::Promise, JsValue>;
}

#[derive(Serialize)]
struct UpsertItem<'a> {
    id: String,
    values: &'a [f32],
    namespace: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueryOptions<'a> {
    top_k: usize,
    namespace: &'a str,
    return_values: bool,
    return_metadata: &'a str,
}

#[derive(Deserialize)]
struct QueryResult {
    #[serde(default)]
    matches: Vec<Match>,
}

#[derive(Deserialize)]
struct Match {
    id: String,
    score: f32,
}

/// Vectorize for one profile.
pub struct VectorizeIndex {
    sys: VectorizeSys,
    namespace: String,
    prefix: String,
}

/// Most vectors one upsert carries.
pub const UPSERT_BATCH: usize = 500;
/// Vectorize's largest topK when values are not returned.
pub const MAX_TOP_K: usize = 100;

impl VectorizeIndex {
    pub fn from_env(env: &worker::Env, profile: &str) -> worker::Result<VectorizeIndex> {
        let sys: JsValue = js_sys::Reflect::get(env.as_ref(), &JsValue::from_str("VECTORIZE"))
            .map_err(|_| worker::Error::RustError("no VECTORIZE binding".into()))?;
        if sys.is_undefined() {
            return Err(worker::Error::RustError("no VECTORIZE binding".into()));
        }
        let digest = crate::core::ids::message_id("vectorize", "profile", profile);
        Ok(VectorizeIndex { sys: sys.unchecked_into(), namespace: digest.clone(), prefix: digest[..16].to_string() })
    }

    fn vector_id(&self, memory_id: &str) -> String {
        format!("{}{}", self.prefix, memory_id)
    }
}

async fn settle(p: std::result::Result<js_sys::Promise, JsValue>, what: &str) -> Result<JsValue> {
    let p = p.map_err(|e| Error::provider(format!("failed to call vectorize {what}: {e:?}")))?;
    JsFuture::from(p).await.map_err(|e| Error::provider(format!("vectorize {what} failed: {e:?}")))
}

fn to_js<T: Serialize>(v: &T) -> Result<JsValue> {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| Error::provider(format!("failed to encode vectorize request: {e}")))
}

impl VectorIndex for &VectorizeIndex {
    fn upsert<'a>(&'a self, items: &'a [(String, Vec<f32>)]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move {
            for chunk in items.chunks(UPSERT_BATCH) {
                let body: Vec<UpsertItem> = chunk
                    .iter()
                    .map(|(id, v)| UpsertItem { id: self.vector_id(id), values: v, namespace: &self.namespace })
                    .collect();
                settle(self.sys.upsert(to_js(&body)?), "upsert").await?;
            }
            Ok(())
        })
    }

    fn delete<'a>(&'a self, ids: &'a [String]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move {
            for chunk in ids.chunks(UPSERT_BATCH) {
                let body: Vec<String> = chunk.iter().map(|id| self.vector_id(id)).collect();
                settle(self.sys.delete_by_ids(to_js(&body)?), "deleteByIds").await?;
            }
            Ok(())
        })
    }

    fn query<'a>(&'a self, vector: &'a [f32], top_k: usize) -> LocalBoxFuture<'a, Result<Vec<(String, f32)>>> {
        Box::pin(async move {
            let opts = QueryOptions {
                top_k: top_k.min(MAX_TOP_K),
                namespace: &self.namespace,
                return_values: false,
                return_metadata: "none",
            };
            let out = settle(self.sys.query(to_js(&vector)?, to_js(&opts)?), "query").await?;
            let parsed: QueryResult = serde_wasm_bindgen::from_value(out)
                .map_err(|e| Error::provider(format!("failed to parse vectorize query result: {e}")))?;
            Ok(parsed
                .matches
                .into_iter()
                .filter_map(|m| m.id.strip_prefix(&self.prefix).map(|id| (id.to_string(), m.score)))
                .collect())
        })
    }
}
