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
//! [`DEFAULT_MODEL`]), `OPENAI_API_KEY` (sent as a bearer token if set),
//! `OPENAI_EMBED_CACHE` (a file: vectors already fetched for this model and
//! text are read from it, new ones appended; so that a harness run with a
//! slow model can be repeated while only the scoring changes).

use agent_memory::core::error::{Error, Result};
use agent_memory::core::llm::{openai_embed_request, parse_openai_embed_response};
use agent_memory::core::ports::{Embedder, LocalBoxFuture};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::{BufRead, Write};
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
    /// Texts answered by the cache file, without a request.
    cached: Cell<usize>,
    /// Dimensions of the last vectors returned.
    dims: Cell<usize>,
    /// The cache file and what it holds, by [`cache_key`].
    cache: Option<(std::path::PathBuf, RefCell<HashMap<u64, Vec<f32>>>)>,
}

/// FNV-1a over the model's name, a zero byte and the text: stable across
/// runs and builds.
fn cache_key(model: &str, text: &str) -> u64 {
    model.bytes().chain([0u8]).chain(text.bytes()).fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
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
            cached: Cell::new(0),
            dims: Cell::new(0),
            cache: None,
        }
    }

    /// Reads and extends the cache file `path` (JSON lines `[key, vector]`;
    /// created when missing).
    pub fn with_cache(mut self, path: &std::path::Path) -> Result<OpenAiEmbedder> {
        let mut held = HashMap::new();
        if let Ok(f) = std::fs::File::open(path) {
            for line in std::io::BufReader::new(f).lines() {
                let line = line.map_err(|e| Error::storage(format!("{}: {e}", path.display())))?;
                let (key, vector): (u64, Vec<f32>) = serde_json::from_str(&line).map_err(|e| Error::storage(format!("{}: a bad line: {e}", path.display())))?;
                held.insert(key, vector);
            }
        }
        self.cache = Some((path.to_path_buf(), RefCell::new(held)));
        Ok(self)
    }

    /// From `OPENAI_BASE_URL`, `OPENAI_EMBEDDING_MODEL` and `OPENAI_API_KEY`.
    pub fn from_env() -> OpenAiEmbedder {
        let mut e = OpenAiEmbedder::new(
            &env("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.into()),
            &env("OPENAI_EMBEDDING_MODEL").unwrap_or_else(|| DEFAULT_MODEL.into()),
        );
        e.api_key = env("OPENAI_API_KEY");
        match env("OPENAI_EMBED_CACHE") {
            Some(path) => e.with_cache(std::path::Path::new(&path)).expect("OPENAI_EMBED_CACHE: a readable cache file"),
            None => e,
        }
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

    /// Texts the cache file answered so far, without a request.
    pub fn cached(&self) -> usize {
        self.cached.get()
    }

    /// Dimensions of the vectors last returned (0 before any).
    pub fn dims(&self) -> usize {
        self.dims.get()
    }

    /// Embeds `texts` in requests of at most [`MAX_BATCH`], in order; with
    /// a cache, only the texts it does not hold.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let Some((path, held)) = &self.cache else { return self.fetch(texts) };
        let keys: Vec<u64> = texts.iter().map(|t| cache_key(&self.model, t)).collect();
        let missing: Vec<String> = {
            let held = held.borrow();
            let mut seen = std::collections::HashSet::new();
            texts.iter().zip(&keys).filter(|(_, k)| !held.contains_key(k) && seen.insert(**k)).map(|(t, _)| t.clone()).collect()
        };
        if !missing.is_empty() {
            let fetched = self.fetch(&missing)?;
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| Error::storage(format!("{}: {e}", path.display())))?;
            let mut held = held.borrow_mut();
            for (t, v) in missing.iter().zip(fetched) {
                let key = cache_key(&self.model, t);
                writeln!(file, "{}", serde_json::json!([key, v])).map_err(|e| Error::storage(format!("{}: {e}", path.display())))?;
                held.insert(key, v);
            }
        }
        let held = held.borrow();
        let out: Vec<Vec<f32>> =
            keys.iter().map(|k| held.get(k).cloned().ok_or_else(|| Error::provider("a cached embedding went missing"))).collect::<Result<_>>()?;
        self.cached.set(self.cached.get() + texts.len() - missing.len());
        if let Some(v) = out.last() {
            self.dims.set(v.len());
        }
        Ok(out)
    }

    /// Embeds `texts` by the server, in requests of at most [`MAX_BATCH`].
    fn fetch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
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
        let v: serde_json::Value = serde_json::from_str(&reply).map_err(|e| Error::provider(format!("{url} returned invalid JSON: {e}")))?;
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

    /// Its model's match floor, as the Worker's adapter says.
    fn match_floor(&self) -> Option<f32> {
        Some(agent_memory::core::recall::fuse::semantic_match_floor(&self.model))
    }
}
