//! Which implementation backs each port, read from the Worker's
//! environment. Local (embedded) implementations are the default.

use worker::Env;

#[derive(Clone, Debug, PartialEq)]
pub enum LlmKind {
    /// The rule-based reasoner: no model, no network.
    Local,
    WorkersAi,
    OpenAi,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EmbedderKind {
    Local,
    WorkersAi,
    OpenAi,
}

#[derive(Clone, Debug, PartialEq)]
pub enum IndexKind {
    /// Vectors in the profile's own SQLite.
    Local,
    Vectorize,
}

/// Defaults of SPEC.md section 5.
pub const DEFAULT_INSTRUCT_MODEL: &str = "@cf/meta/llama-4-scout-17b-16e-instruct";
pub const DEFAULT_SYNTHESIS_MODEL: &str = "@cf/nvidia/nemotron-3-120b-a12b";
pub const DEFAULT_EMBEDDING_MODEL: &str = "@cf/baai/bge-base-en-v1.5";

#[derive(Clone, Debug)]
pub struct Config {
    pub llm: LlmKind,
    pub embedder: EmbedderKind,
    pub index: IndexKind,
    pub instruct_model: String,
    pub synthesis_model: String,
    pub embedding_model: String,
    pub openai_base_url: String,
    pub openai_model: String,
    pub openai_embedding_model: String,
    pub openai_api_key: Option<String>,
    pub max_memories: i64,
    /// `PROFILE_DELETE_GRACE_SECONDS`, in milliseconds.
    pub delete_grace_millis: i64,
    /// `JOB_RETRY_BASE_MS`.
    pub job_retry_base_millis: i64,
    /// `CONSOLIDATE_EVERY`: memories added between background
    /// consolidation runs; unset or 0, none.
    pub consolidate_every: Option<i64>,
    /// `MEMORY_BUDGET_MB`, in bytes: what every profile of the isolate
    /// keeps between requests, together (see core::resident).
    pub memory_budget_bytes: usize,
    /// JSON token map (`AUTH_TOKENS`), if configured.
    pub auth_tokens: Option<String>,
}

fn text(env: &Env, name: &str) -> Option<String> {
    env.var(name)
        .map(|v| v.to_string())
        .ok()
        .or_else(|| env.secret(name).map(|s| s.to_string()).ok())
        .filter(|s| !s.trim().is_empty())
}

impl Config {
    pub fn from_env(env: &Env) -> Config {
        let get = |n: &str, d: &str| text(env, n).unwrap_or_else(|| d.to_string());
        Config {
            llm: match get("LLM_PROVIDER", "local").as_str() {
                "workers-ai" => LlmKind::WorkersAi,
                "openai" => LlmKind::OpenAi,
                _ => LlmKind::Local,
            },
            embedder: match get("EMBEDDER", "local").as_str() {
                "workers-ai" => EmbedderKind::WorkersAi,
                "openai" => EmbedderKind::OpenAi,
                _ => EmbedderKind::Local,
            },
            index: match get("VECTOR_INDEX", "local").as_str() {
                "vectorize" => IndexKind::Vectorize,
                _ => IndexKind::Local,
            },
            instruct_model: get("INSTRUCT_MODEL", DEFAULT_INSTRUCT_MODEL),
            synthesis_model: get("SYNTHESIS_MODEL", DEFAULT_SYNTHESIS_MODEL),
            embedding_model: get("EMBEDDING_MODEL", DEFAULT_EMBEDDING_MODEL),
            openai_base_url: get("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"),
            openai_model: get("OPENAI_MODEL", "llama3.1"),
            openai_embedding_model: get("OPENAI_EMBEDDING_MODEL", "nomic-embed-text"),
            openai_api_key: text(env, "OPENAI_API_KEY"),
            max_memories: get("MAX_MEMORIES", "1000000").parse().unwrap_or(1_000_000),
            delete_grace_millis: get("PROFILE_DELETE_GRACE_SECONDS", "")
                .parse::<i64>()
                .ok()
                .filter(|s| *s >= 0)
                .map_or(crate::core::ops::DEFAULT_DELETE_GRACE_MILLIS, |s| s.saturating_mul(1000)),
            job_retry_base_millis: get("JOB_RETRY_BASE_MS", "1000").parse::<i64>().ok().filter(|m| *m > 0).unwrap_or(1000),
            consolidate_every: get("CONSOLIDATE_EVERY", "").parse::<i64>().ok().filter(|n| *n > 0),
            memory_budget_bytes: get("MEMORY_BUDGET_MB", "")
                .parse::<f64>()
                .ok()
                .filter(|mb| mb.is_finite() && *mb >= 0.0)
                .map_or(crate::core::resident::DEFAULT_BUDGET_BYTES, |mb| (mb * 1024.0 * 1024.0) as usize),
            auth_tokens: text(env, "AUTH_TOKENS"),
        }
    }
}
