//! Vectorize, bound by hand (worker 0.8.7 has no Vectorize API): a raw
//! extern type for the binding, and a typed wrapper implementing the
//! core's `VectorIndex` for one profile.
//!
//! Isolation: each profile queries its own Vectorize namespace (a digest of
//! the profile's name), and its vector ids carry a 16-hex prefix of the
//! same digest, because `deleteByIds` is not namespaced.
//!
//! Metadata and filters. Each vector is upserted with its memory's
//! [`VectorMeta`] as Vectorize metadata (`type`, `sessionId`, and
//! `agentId`/`userId` when present); the index needs a string metadata
//! index on each of those four (README "Deploying"). A filtered query
//! ([`VectorIndex::query_many_in`]) hands Vectorize the part of the
//! caller's filter it applies exactly ([`pushdown`]), and what comes back
//! is always checked again against the whole condition (`only.passes`:
//! status, `asOf` and the filter, from the profile's SQLite, the source of
//! truth). Pushed down, from the top-level conjunction only (a single
//! condition, or the conditions side by side in the top-level `AND`,
//! nested `AND`s flattened into it):
//! * `eq` and `in` on `type`, `sessionId`, `agentId` and `userId`, with
//!   string values of at most 64 bytes (Vectorize indexes the first 64
//!   bytes of a string: a longer value could miss its own vector);
//!   several on one field become one `$in` of the values all allow.
//!
//! Not pushed down (left to `only.passes` alone):
//! * `OR` and `NOT`, and anything inside them (Vectorize has neither);
//! * any other field (only those four are indexed);
//! * `ne` and `nin`: Vectorize does not document what they do to a vector
//!   without the field, and ours match it (a memory without `agentId`
//!   passes `{"agentId": {"ne": "x"}}`);
//! * `gt`, `gte`, `lt`, `lte`: Vectorize does not document how it orders
//!   strings (ours is byte order) over their 64-byte prefixes.
//!
//! When the filter was pushed down whole, a query asks for `top_k`
//! neighbours; otherwise for [`MAX_TOP_K`], so the post-filter has more to
//! keep. Either way, when fewer than `top_k` pass and Vectorize may hold
//! more, the query is asked once more for [`MAX_TOP_K`]: no more can be had.
//! Vectors upserted before the metadata indexes existed (or before this
//! version sent metadata) are not in them, and a pushed-down filter does
//! not find them until they are upserted again.

use crate::core::error::{Error, Result};
use crate::core::filter::{Cmp, Filter, Scalar};
use crate::core::ports::{Hits, IndexFilter, KnownPassing, LocalBoxFuture, VectorIndex, VectorMeta};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
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
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a VectorMeta>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueryOptions<'a> {
    top_k: usize,
    namespace: &'a str,
    return_values: bool,
    return_metadata: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    filter: Option<&'a Value>,
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
/// The metadata fields the index has (string) metadata indexes for: the
/// only ones a filter may be pushed down on.
pub const INDEXED_FIELDS: [&str; 4] = ["type", "sessionId", "agentId", "userId"];
/// Bytes of a string value a metadata index holds (its first 64).
pub const INDEXED_STRING_BYTES: usize = 64;
/// Bytes a query's filter must stay under, as compact JSON.
pub const MAX_FILTER_JSON_BYTES: usize = 2048;

/// What of `filter` Vectorize can apply exactly, as its query's `filter`
/// option (see the module docs), and whether that is the whole filter:
/// every vector the filter lets through, Vectorize's filter lets through
/// too, and when the second is true, no other.
pub fn pushdown(filter: &Filter) -> (Option<Value>, bool) {
    // The conjunction at the top: a condition alone, or an AND's (nested
    // ANDs are the same conjunction).
    let mut conjuncts: Vec<&Filter> = Vec::new();
    let mut stack = vec![filter];
    while let Some(f) = stack.pop() {
        match f {
            Filter::All(fs) => stack.extend(fs.iter().rev()),
            other => conjuncts.push(other),
        }
    }
    let mut whole = true;
    // Per field, the values every pushed condition on it allows, in order.
    let mut allowed: Vec<(&str, Vec<&str>)> = Vec::new();
    for f in conjuncts {
        let Some((field, values)) = pushable(f) else {
            whole = false;
            continue;
        };
        match allowed.iter_mut().find(|(k, _)| *k == field) {
            Some((_, vs)) => vs.retain(|v| values.contains(v)),
            None => {
                let mut vs: Vec<&str> = Vec::new();
                for v in values {
                    if !vs.contains(&v) {
                        vs.push(v);
                    }
                }
                allowed.push((field, vs));
            }
        }
    }
    let mut out = Map::new();
    for (field, values) in allowed {
        let value = match values.as_slice() {
            // Conditions on one field no value satisfies: the filter lets
            // nothing through, which Vectorize has no way to say. Leave the
            // field to the post-filter.
            [] => {
                whole = false;
                continue;
            }
            [one] => Value::String((*one).to_string()),
            many => serde_json::json!({ "$in": many }),
        };
        out.insert(field.to_string(), value);
    }
    // Vectorize refuses a filter of 2 KiB or more: drop the largest
    // fields until it fits (each dropped one is left to the post-filter).
    while !out.is_empty() && Value::Object(out.clone()).to_string().len() >= MAX_FILTER_JSON_BYTES {
        let largest = out.iter().max_by_key(|(k, v)| k.len().saturating_add(v.to_string().len())).map(|(k, _)| k.clone());
        if let Some(k) = largest {
            out.remove(&k);
        }
        whole = false;
    }
    if out.is_empty() {
        return (None, false);
    }
    (Some(Value::Object(out)), whole)
}

/// The field and the values a condition allows, when Vectorize can apply
/// it exactly: `eq` or `in` on an indexed field, string values no longer
/// than an index holds.
fn pushable(f: &Filter) -> Option<(&str, Vec<&str>)> {
    let Filter::Leaf { field, cmp: Cmp::Eq | Cmp::In, values } = f else {
        return None;
    };
    if !INDEXED_FIELDS.contains(&field.as_str()) || values.is_empty() {
        return None;
    }
    let texts: Vec<&str> = values
        .iter()
        .map(|v| match v {
            Scalar::Text(t) if t.len() <= INDEXED_STRING_BYTES => Some(t.as_str()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    Some((field.as_str(), texts))
}

impl VectorizeIndex {
    pub fn from_env(env: &worker::Env, profile: &str) -> worker::Result<VectorizeIndex> {
        let sys: JsValue =
            js_sys::Reflect::get(env.as_ref(), &JsValue::from_str("VECTORIZE")).map_err(|_| worker::Error::RustError("no VECTORIZE binding".into()))?;
        if sys.is_undefined() {
            return Err(worker::Error::RustError("no VECTORIZE binding".into()));
        }
        let digest = crate::core::ids::message_id("vectorize", "profile", profile);
        Ok(VectorizeIndex { sys: sys.unchecked_into(), namespace: digest.clone(), prefix: digest[..16].to_string() })
    }

    fn vector_id(&self, memory_id: &str) -> String {
        format!("{}{}", self.prefix, memory_id)
    }

    async fn upsert_items(&self, items: &[(String, Vec<f32>)], meta: Option<&[VectorMeta]>) -> Result<()> {
        for (at, chunk) in items.chunks(UPSERT_BATCH).enumerate() {
            let start = at.saturating_mul(UPSERT_BATCH);
            let body: Vec<UpsertItem> = chunk
                .iter()
                .enumerate()
                .map(|(i, (id, v))| UpsertItem {
                    id: self.vector_id(id),
                    values: v,
                    namespace: &self.namespace,
                    metadata: meta.and_then(|m| m.get(start.saturating_add(i))).filter(|m| !m.is_empty()),
                })
                .collect();
            settle(self.sys.upsert(to_js(&body)?), "upsert").await?;
        }
        Ok(())
    }

    /// The `top_k` nearest of the profile's vectors that `filter` (a
    /// Vectorize filter) lets through; memory ids, best first.
    async fn query_with(&self, vector: &[f32], top_k: usize, filter: Option<&Value>) -> Result<Hits> {
        let opts = QueryOptions { top_k: top_k.min(MAX_TOP_K), namespace: &self.namespace, return_values: false, return_metadata: "none", filter };
        let out = settle(self.sys.query(to_js(&vector)?, to_js(&opts)?), "query").await?;
        let parsed: QueryResult = serde_wasm_bindgen::from_value(out).map_err(|e| Error::provider(format!("failed to parse vectorize query result: {e}")))?;
        Ok(parsed.matches.into_iter().filter_map(|m| m.id.strip_prefix(&self.prefix).map(|id| (id.to_string(), m.score))).collect())
    }
}

async fn settle(p: std::result::Result<js_sys::Promise, JsValue>, what: &str) -> Result<JsValue> {
    let p = p.map_err(|e| Error::provider(format!("failed to call vectorize {what}: {e:?}")))?;
    JsFuture::from(p).await.map_err(|e| Error::provider(format!("vectorize {what} failed: {e:?}")))
}

fn to_js<T: Serialize>(v: &T) -> Result<JsValue> {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).map_err(|e| Error::provider(format!("failed to encode vectorize request: {e}")))
}

impl VectorIndex for &VectorizeIndex {
    fn upsert<'a>(&'a self, items: &'a [(String, Vec<f32>)]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(self.upsert_items(items, None))
    }

    /// Each vector with its [`VectorMeta`] as its Vectorize metadata.
    fn upsert_with<'a>(&'a self, items: &'a [(String, Vec<f32>)], meta: &'a [VectorMeta]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(self.upsert_items(items, Some(meta)))
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
        Box::pin(self.query_with(vector, top_k, None))
    }

    /// The filter's part Vectorize can apply goes with each query
    /// ([`pushdown`]); every match is then checked against `only.passing`,
    /// each once.
    /// A query asks for `top_k` when the filter went whole, else for
    /// [`MAX_TOP_K`]; one that kept fewer than `top_k` of a full answer is
    /// asked again for [`MAX_TOP_K`].
    fn query_many_in<'a>(&'a self, vectors: &'a [Vec<f32>], top_k: usize, only: &'a IndexFilter<'a>) -> LocalBoxFuture<'a, Result<Vec<Hits>>> {
        Box::pin(async move {
            if top_k == 0 {
                return Ok(vectors.iter().map(|_| Hits::new()).collect());
            }
            let (filter, whole) = match only.filter {
                Some(f) => pushdown(f),
                None => (None, true),
            };
            let first = if whole { top_k } else { MAX_TOP_K }.min(MAX_TOP_K);
            let filter = filter.as_ref();
            let known = std::cell::RefCell::new(KnownPassing::default());
            let one = |v: &'a [f32]| {
                let known = &known;
                async move {
                    let mut k = first;
                    loop {
                        let hits = self.query_with(v, k, filter).await?;
                        let full = hits.len() >= k;
                        let mut known = known.borrow_mut();
                        known.test(hits.iter().map(|(id, _)| id.as_str()), only)?;
                        let kept: Hits = hits.into_iter().filter(|(id, _)| known.passes(id)).take(top_k).collect();
                        if kept.len() >= top_k || !full || k >= MAX_TOP_K {
                            return Ok::<Hits, Error>(kept);
                        }
                        k = MAX_TOP_K;
                    }
                }
            };
            futures::future::try_join_all(vectors.iter().map(|v| one(v.as_slice()))).await
        })
    }
}
