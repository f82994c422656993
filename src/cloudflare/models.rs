//! Model adapters: Workers AI (through the `AI` binding, with a
//! session-affinity header keyed by the profile name on every call) and
//! any OpenAI-compatible HTTP endpoint. Request and response shapes live
//! in the core (`core::llm`); this file only moves them.

use crate::cloudflare::config::Config;
use crate::core::error::{Error, Result};
use crate::core::llm::{self, LlmReasoner};
use crate::core::ports::{ChatModel, ChatRequest, Embedder, LocalBoxFuture, ModelRole};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use worker::{Env, Fetch, Headers, Method, Request, RequestInit};

/// The header Workers AI reads to keep a profile's calls on one backend.
pub const AFFINITY_HEADER: &str = "x-session-affinity";

/// How long one model or embedding call may take before it counts as a
/// provider fault (ingest records it and retries later; recall degrades).
pub const MODEL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs `f`, or fails with a provider error after [`MODEL_TIMEOUT`].
async fn within_timeout<T>(what: &str, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    let f = std::pin::pin!(f);
    let timer = worker::Delay::from(MODEL_TIMEOUT);
    match futures::future::select(f, timer).await {
        futures::future::Either::Left((out, _)) => out,
        futures::future::Either::Right(_) => Err(Error::provider(format!("{what} did not answer within {} s", MODEL_TIMEOUT.as_secs()))),
    }
}

/// The `AI` binding, called as `AI.run(model, inputs, { extraHeaders })`.
#[derive(Clone)]
pub struct WorkersAi {
    binding: JsValue,
    affinity: String,
}

impl WorkersAi {
    pub fn from_env(env: &Env, profile: &str) -> Result<WorkersAi> {
        let binding = js_sys::Reflect::get(env.as_ref(), &JsValue::from_str("AI"))
            .ok()
            .filter(|b| !b.is_undefined())
            .ok_or_else(|| Error::config("LLM_PROVIDER or EMBEDDER is workers-ai but there is no AI binding"))?;
        Ok(WorkersAi { binding, affinity: profile.to_string() })
    }

    pub async fn run(&self, model: &str, input: &Value) -> Result<Value> {
        let run: js_sys::Function = js_sys::Reflect::get(&self.binding, &JsValue::from_str("run"))
            .map_err(|_| Error::config("the AI binding has no run method"))?
            .dyn_into()
            .map_err(|_| Error::config("the AI binding has no run method"))?;
        let to_js = |v: &Value| {
            serde::Serialize::serialize(v, &serde_wasm_bindgen::Serializer::json_compatible())
                .map_err(|e| Error::provider(format!("failed to encode model input: {e}")))
        };
        let options = serde_json::json!({ "extraHeaders": { AFFINITY_HEADER: self.affinity } });
        let promise = run
            .call3(&self.binding, &JsValue::from_str(model), &to_js(input)?, &to_js(&options)?)
            .map_err(|e| Error::provider(format!("failed to call workers ai: {e:?}")))?;
        let out = JsFuture::from(js_sys::Promise::resolve(&promise)).await.map_err(|e| Error::provider(format!("workers ai {model} failed: {e:?}")))?;
        serde_wasm_bindgen::from_value(out).map_err(|e| Error::provider(format!("failed to read workers ai output: {e}")))
    }
}

pub struct WorkersAiChat {
    ai: WorkersAi,
    instruct: String,
    synthesis: String,
}

impl ChatModel for WorkersAiChat {
    fn complete<'a>(&'a self, req: &'a ChatRequest) -> LocalBoxFuture<'a, Result<String>> {
        Box::pin(async move {
            let model = match req.role {
                ModelRole::Instruct => &self.instruct,
                ModelRole::Synthesis => &self.synthesis,
            };
            let out = within_timeout(model, self.ai.run(model, &llm::workers_ai_request(req, model))).await?;
            llm::parse_workers_ai_response(&out)
        })
    }
}

pub struct WorkersAiEmbedder {
    ai: WorkersAi,
    model: String,
}

impl Embedder for WorkersAiEmbedder {
    fn kind(&self) -> crate::core::ports::EmbeddingKind {
        crate::core::ports::EmbeddingKind::Semantic
    }

    fn match_floor(&self) -> Option<f32> {
        Some(crate::core::recall::fuse::semantic_match_floor(&self.model))
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> LocalBoxFuture<'a, Result<Vec<Vec<f32>>>> {
        Box::pin(async move {
            let out = within_timeout(&self.model, self.ai.run(&self.model, &llm::workers_ai_embed_request(texts))).await?;
            llm::parse_workers_ai_embed_response(&out)
        })
    }
}

/// An OpenAI-compatible endpoint (`{base}/chat/completions`,
/// `{base}/embeddings`).
#[derive(Clone)]
pub struct OpenAi {
    base_url: String,
    api_key: Option<String>,
}

impl OpenAi {
    async fn post(&self, path: &str, body: &Value) -> Result<Value> {
        let headers = Headers::new();
        let bad_header = |e: worker::Error| Error::config(format!("failed to set a request header: {e}"));
        headers.set("content-type", "application/json").map_err(bad_header)?;
        if let Some(k) = &self.api_key {
            headers.set("authorization", &format!("Bearer {k}")).map_err(bad_header)?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Post).with_headers(headers).with_body(Some(JsValue::from_str(&body.to_string())));
        let url = format!("{}/{path}", self.base_url.trim_end_matches('/'));
        let req = Request::new_with_init(&url, &init).map_err(|e| Error::config(format!("bad OPENAI_BASE_URL: {e}")))?;
        // Errors name the endpoint, not the server: callers read them as
        // recall notes, and the server's address is the operator's.
        let endpoint = format!("the OpenAI-compatible server's /{path}");
        let resp = Fetch::Request(req).send().await.map_err(|e| Error::provider(format!("failed to reach {endpoint}: {e}")))?;
        let status = resp.status_code();
        let text = super::response_text(&resp).await.map_err(|e| Error::provider(format!("failed to read {endpoint}: {e}")))?;
        if !(200..300).contains(&status) {
            return Err(Error::provider(format!("{endpoint} answered {status}: {}", text.chars().take(200).collect::<String>())));
        }
        serde_json::from_str(&text).map_err(|e| Error::provider(format!("{endpoint} returned invalid JSON: {e}")))
    }
}

pub struct OpenAiChat {
    api: OpenAi,
    model: String,
}

impl ChatModel for OpenAiChat {
    fn complete<'a>(&'a self, req: &'a ChatRequest) -> LocalBoxFuture<'a, Result<String>> {
        Box::pin(async move {
            let out = within_timeout(&self.model, self.api.post("chat/completions", &llm::openai_chat_request(req, &self.model))).await?;
            llm::parse_openai_chat_response(&out)
        })
    }
}

pub struct OpenAiEmbedder {
    api: OpenAi,
    model: String,
}

impl Embedder for OpenAiEmbedder {
    fn kind(&self) -> crate::core::ports::EmbeddingKind {
        crate::core::ports::EmbeddingKind::Semantic
    }

    fn match_floor(&self) -> Option<f32> {
        Some(crate::core::recall::fuse::semantic_match_floor(&self.model))
    }

    fn embed<'a>(&'a self, texts: &'a [String]) -> LocalBoxFuture<'a, Result<Vec<Vec<f32>>>> {
        Box::pin(async move {
            let out = within_timeout(&self.model, self.api.post("embeddings", &llm::openai_embed_request(texts, &self.model))).await?;
            llm::parse_openai_embed_response(&out)
        })
    }
}

pub fn workers_ai_reasoner(c: &Config, env: &Env, profile: &str) -> Result<LlmReasoner<WorkersAiChat>> {
    Ok(LlmReasoner {
        model: WorkersAiChat { ai: WorkersAi::from_env(env, profile)?, instruct: c.instruct_model.clone(), synthesis: c.synthesis_model.clone() },
    })
}

pub fn openai_reasoner(c: &Config) -> LlmReasoner<OpenAiChat> {
    LlmReasoner { model: OpenAiChat { api: OpenAi { base_url: c.openai_base_url.clone(), api_key: c.openai_api_key.clone() }, model: c.openai_model.clone() } }
}

pub fn workers_ai_embedder(c: &Config, env: &Env, profile: &str) -> Result<WorkersAiEmbedder> {
    Ok(WorkersAiEmbedder { ai: WorkersAi::from_env(env, profile)?, model: c.embedding_model.clone() })
}

pub fn openai_embedder(c: &Config) -> OpenAiEmbedder {
    OpenAiEmbedder { api: OpenAi { base_url: c.openai_base_url.clone(), api_key: c.openai_api_key.clone() }, model: c.openai_embedding_model.clone() }
}
