//! Which implementation backs each port, read from the Worker's
//! environment. Local (embedded) implementations are the default.

use crate::core::error::Error;
use std::rc::Rc;
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
    /// `MEMORY_WORKING_SET_MB`, in bytes: the room large requests of the
    /// isolate may hold at once for their working memory (see
    /// core::resident::WorkingSet).
    pub working_set_bytes: usize,
    /// `WORKING_SET_WAIT_MS`: how long a large request waits for room
    /// before it is refused as busy.
    pub working_set_wait_millis: u64,
    /// `BODY_GRACE_MS`: how long a body that holds room may take beyond
    /// its length at the slowest rate (core::resident::body_deadline_millis).
    pub body_grace_millis: u64,
    /// JSON token map (`AUTH_TOKENS`), if configured.
    pub auth_tokens: Option<String>,
}

thread_local! {
    /// The isolate's configuration ([`Config::shared`]).
    static SHARED: std::cell::RefCell<Option<Rc<Config>>> = const { std::cell::RefCell::new(None) };
}

fn text(env: &Env, name: &str) -> Option<String> {
    env.var(name).map(|v| v.to_string()).ok().or_else(|| env.secret(name).map(|s| s.to_string()).ok()).filter(|s| !s.trim().is_empty())
}

impl Config {
    /// The configuration of an environment that sets nothing: the local
    /// (embedded) implementations and the documented defaults.
    pub fn defaults() -> Config {
        Config {
            llm: LlmKind::Local,
            embedder: EmbedderKind::Local,
            index: IndexKind::Local,
            instruct_model: DEFAULT_INSTRUCT_MODEL.into(),
            synthesis_model: DEFAULT_SYNTHESIS_MODEL.into(),
            embedding_model: DEFAULT_EMBEDDING_MODEL.into(),
            openai_base_url: "http://127.0.0.1:11434/v1".into(),
            openai_model: "llama3.1".into(),
            openai_embedding_model: "nomic-embed-text".into(),
            openai_api_key: None,
            max_memories: 1_000_000,
            delete_grace_millis: crate::core::ops::DEFAULT_DELETE_GRACE_MILLIS,
            job_retry_base_millis: 1000,
            consolidate_every: None,
            memory_budget_bytes: crate::core::resident::DEFAULT_BUDGET_BYTES,
            working_set_bytes: crate::core::resident::DEFAULT_WORKING_SET_BYTES,
            working_set_wait_millis: crate::core::resident::WORKING_SET_WAIT_MILLIS,
            body_grace_millis: crate::core::resident::BODY_GRACE_MILLIS,
            auth_tokens: None,
        }
    }

    /// The configuration the Worker's environment gives, or a `config`
    /// error naming the first setting that does not read: a misspelt
    /// provider never falls back to the local one, and a number that does
    /// not parse never becomes its default.
    pub fn from_env(env: &Env) -> Result<Config, Error> {
        Config::read(&|name| text(env, name))
    }

    /// [`Config::from_env`], read by the isolate's first caller and shared
    /// by the rest: an isolate runs one Worker, whose environment does not
    /// change while it lives. Every request asked the environment for each
    /// setting (most unset, so twice: as a variable, then as a secret), and
    /// each of the thousands of profile objects an isolate may hold kept a
    /// copy of every setting, the token map included, until the garbage
    /// collector freed it. One that does not read is read again by each
    /// caller, which reports it.
    pub fn shared(env: &Env) -> Result<Rc<Config>, Error> {
        if let Some(config) = SHARED.with(|c| c.borrow().clone()) {
            return Ok(config);
        }
        let config = Rc::new(Config::from_env(env)?);
        SHARED.with(|c| *c.borrow_mut() = Some(config.clone()));
        Ok(config)
    }

    fn read(var: &dyn Fn(&str) -> Option<String>) -> Result<Config, Error> {
        let d = Config::defaults();
        let providers = [("local", LlmKind::Local), ("workers-ai", LlmKind::WorkersAi), ("openai", LlmKind::OpenAi)];
        let embedders = [("local", EmbedderKind::Local), ("workers-ai", EmbedderKind::WorkersAi), ("openai", EmbedderKind::OpenAi)];
        let indexes = [("local", IndexKind::Local), ("vectorize", IndexKind::Vectorize)];
        Ok(Config {
            llm: one_of(var, "LLM_PROVIDER", &providers)?.unwrap_or(d.llm),
            embedder: one_of(var, "EMBEDDER", &embedders)?.unwrap_or(d.embedder),
            index: one_of(var, "VECTOR_INDEX", &indexes)?.unwrap_or(d.index),
            instruct_model: var("INSTRUCT_MODEL").unwrap_or(d.instruct_model),
            synthesis_model: var("SYNTHESIS_MODEL").unwrap_or(d.synthesis_model),
            embedding_model: var("EMBEDDING_MODEL").unwrap_or(d.embedding_model),
            openai_base_url: var("OPENAI_BASE_URL").unwrap_or(d.openai_base_url),
            openai_model: var("OPENAI_MODEL").unwrap_or(d.openai_model),
            openai_embedding_model: var("OPENAI_EMBEDDING_MODEL").unwrap_or(d.openai_embedding_model),
            openai_api_key: var("OPENAI_API_KEY"),
            max_memories: number(var, "MAX_MEMORIES", "a positive integer", |n: &i64| *n > 0)?.unwrap_or(d.max_memories),
            delete_grace_millis: number(var, "PROFILE_DELETE_GRACE_SECONDS", "a whole number of seconds, 0 or more", |s: &i64| *s >= 0)?
                .map_or(d.delete_grace_millis, |s| s.saturating_mul(1000)),
            job_retry_base_millis: number(var, "JOB_RETRY_BASE_MS", "a positive integer", |m: &i64| *m > 0)?.unwrap_or(d.job_retry_base_millis),
            consolidate_every: number(var, "CONSOLIDATE_EVERY", "a whole number of memories, 0 or more", |n: &i64| *n >= 0)?.filter(|n| *n > 0),
            memory_budget_bytes: number(var, "MEMORY_BUDGET_MB", "a number of megabytes, 0 or more", |mb: &f64| mb.is_finite() && *mb >= 0.0)?
                .map_or(d.memory_budget_bytes, |mb| (mb * 1024.0 * 1024.0) as usize),
            working_set_bytes: number(var, "MEMORY_WORKING_SET_MB", "a number of megabytes, 0 or more", |mb: &f64| mb.is_finite() && *mb >= 0.0)?
                .map_or(d.working_set_bytes, |mb| (mb * 1024.0 * 1024.0) as usize),
            working_set_wait_millis: number(var, "WORKING_SET_WAIT_MS", "a whole number of milliseconds, 0 or more", |_: &u64| true)?
                .unwrap_or(d.working_set_wait_millis),
            body_grace_millis: number(var, "BODY_GRACE_MS", "a whole number of milliseconds, 0 or more", |_: &u64| true)?.unwrap_or(d.body_grace_millis),
            auth_tokens: var("AUTH_TOKENS"),
        })
    }
}

/// Setting `name`: one of `choices`; `None` when unset.
fn one_of<T: Clone>(var: &dyn Fn(&str) -> Option<String>, name: &str, choices: &[(&str, T)]) -> Result<Option<T>, Error> {
    let Some(value) = var(name) else { return Ok(None) };
    choices.iter().find(|(k, _)| *k == value.trim()).map(|(_, v)| Some(v.clone())).ok_or_else(|| {
        let names: Vec<&str> = choices.iter().map(|(k, _)| *k).collect();
        Error::config(format!("{name} must be one of {}; it is {value:?}", names.join(", ")))
    })
}

/// Setting `name` as a number that passes `ok`; `None` when unset.
fn number<T: std::str::FromStr>(var: &dyn Fn(&str) -> Option<String>, name: &str, what: &str, ok: impl Fn(&T) -> bool) -> Result<Option<T>, Error> {
    let Some(value) = var(name) else { return Ok(None) };
    match value.trim().parse::<T>() {
        Ok(n) if ok(&n) => Ok(Some(n)),
        _ => Err(Error::config(format!("{name} must be {what}; it is {value:?}"))),
    }
}
