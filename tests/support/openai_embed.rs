//! An OpenAI-compatible embedder for native tests and the LoCoMo /
//! LongMemEval harness (`LOCOMO_EMBEDDER=openai`): the core's
//! [`Embedder`] over a blocking HTTP client, `POST {base}/embeddings`
//! with at most [`MAX_BATCH`] texts a request.
//!
//! The request body and the reply are read by the same functions the
//! Worker's OpenAI embedder uses (`core::llm::openai_embed_request`,
//! `core::llm::parse_openai_embed_response`), so the harness measures the
//! production protocol. Plain HTTP only (a local server on loopback).
//!
//! Environment ([`OpenAiEmbedder::from_env`]): `OPENAI_BASE_URL` (default
//! [`DEFAULT_BASE_URL`]), `OPENAI_EMBEDDING_MODEL` (default
//! [`DEFAULT_MODEL`]), `OPENAI_API_KEY` (sent as a bearer token if set).

use agent_memory::core::error::{Error, Result};
use agent_memory::core::llm::{openai_embed_request, parse_openai_embed_response};
use agent_memory::core::ports::{Embedder, LocalBoxFuture};
use std::cell::Cell;
use std::time::Duration;

/// The service's own default (`OPENAI_BASE_URL` in the README).
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";
/// The service's own default (`OPENAI_EMBEDDING_MODEL` in the README).
pub const DEFAULT_MODEL: &str = "nomic-embed-text";
/// Most texts sent in one request.
pub const MAX_BATCH: usize = 64;
const _: () = assert!(MAX_BATCH <= 64);

pub struct OpenAiEmbedder {
    /// Without a trailing slash, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    pub model: String,
    api_key: Option<String>,
    agent: ureq::Agent,
    /// Requests sent and texts embedded so far.
    requests: Cell<usize>,
    texts: Cell<usize>,
    /// Dimensions of the last vectors returned.
    dims: Cell<usize>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

impl OpenAiEmbedder {
    pub fn new(base_url: &str, model: &str) -> OpenAiEmbedder {
        OpenAiEmbedder {
            base_url: base_url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api_key: None,
            agent: ureq::AgentBuilder::new().timeout_connect(Duration::from_secs(10)).timeout(Duration::from_secs(600)).build(),
            requests: Cell::new(0),
            texts: Cell::new(0),
            dims: Cell::new(0),
        }
    }

    /// From `OPENAI_BASE_URL`, `OPENAI_EMBEDDING_MODEL` and `OPENAI_API_KEY`.
    pub fn from_env() -> OpenAiEmbedder {
        let mut e = OpenAiEmbedder::new(
            &env("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.into()),
            &env("OPENAI_EMBEDDING_MODEL").unwrap_or_else(|| DEFAULT_MODEL.into()),
        );
        e.api_key = env("OPENAI_API_KEY");
        e
    }

    pub fn with_api_key(mut self, key: &str) -> OpenAiEmbedder {
        self.api_key = Some(key.to_string());
        self
    }

    /// Requests sent so far.
    pub fn requests(&self) -> usize {
        self.requests.get()
    }

    /// Texts embedded so far.
    pub fn texts(&self) -> usize {
        self.texts.get()
    }

    /// Dimensions of the vectors last returned (0 before any).
    pub fn dims(&self) -> usize {
        self.dims.get()
    }

    /// Embeds `texts` in requests of at most [`MAX_BATCH`], in order.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(MAX_BATCH) {
            let vectors = self.request(batch)?;
            if vectors.len() != batch.len() {
                return Err(Error::provider(format!("{} returned {} embeddings for {} texts", self.url(), vectors.len(), batch.len())));
            }
            if let Some(v) = vectors.first() {
                self.dims.set(v.len());
            }
            out.extend(vectors);
        }
        Ok(out)
    }

    fn url(&self) -> String {
        format!("{}/embeddings", self.base_url)
    }

    fn request(&self, batch: &[String]) -> Result<Vec<Vec<f32>>> {
        let url = self.url();
        let body = openai_embed_request(batch, &self.model).to_string();
        let mut req = self.agent.post(&url).set("Content-Type", "application/json").set("Accept", "application/json");
        if let Some(key) = &self.api_key {
            req = req.set("Authorization", &format!("Bearer {key}"));
        }
        self.requests.set(self.requests.get() + 1);
        let reply = match req.send_string(&body) {
            Ok(r) => r.into_string().map_err(|e| Error::provider(format!("{url}: unreadable reply: {e}")))?,
            Err(ureq::Error::Status(code, r)) => {
                let text = r.into_string().unwrap_or_default();
                return Err(Error::provider(format!("{url} answered {code}: {}", text.chars().take(300).collect::<String>())));
            }
            Err(e) => return Err(Error::provider(format!("{url}: {e}"))),
        };
        let v: serde_json::Value =
            serde_json::from_str(&reply).map_err(|e| Error::provider(format!("{url} returned invalid JSON: {e}")))?;
        let vectors = parse_openai_embed_response(&v)?;
        self.texts.set(self.texts.get() + batch.len());
        Ok(vectors)
    }
}

impl Embedder for OpenAiEmbedder {
    fn embed<'a>(&'a self, texts: &'a [String]) -> LocalBoxFuture<'a, Result<Vec<Vec<f32>>>> {
        Box::pin(async move { self.embed_blocking(texts) })
    }

    /// A sentence-embedding model, as the Worker's OpenAI adapter says.
    fn kind(&self) -> agent_memory::core::ports::EmbeddingKind {
        agent_memory::core::ports::EmbeddingKind::Semantic
    }
}
