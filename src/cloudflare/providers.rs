//! Builds the configured implementation of each port for one call.

use crate::cloudflare::config::{Config, EmbedderKind, IndexKind, LlmKind};
use crate::core::error::{Error, Result};
use crate::core::local::embed::HashEmbedder;
use crate::core::local::vector::{CachedVectorIndex, Packed, SqlVectorIndex};
use crate::core::ports::{Embedder, Sql, VectorIndex};
use crate::core::provider::Reasoner;
use crate::core::rules::Rules;
use std::cell::RefCell;
use worker::Env;

pub struct Providers {
    reasoner: Box<dyn Reasoner>,
    embedder: Box<dyn Embedder>,
    index: IndexKind,
    vectorize: Option<crate::cloudflare::vectorize::VectorizeIndex>,
}

impl Providers {
    pub fn new(config: &Config, env: &Env, profile: &str) -> Result<Providers> {
        let reasoner: Box<dyn Reasoner> = match config.llm {
            LlmKind::Local => Box::new(Rules),
            LlmKind::WorkersAi => Box::new(crate::cloudflare::models::workers_ai_reasoner(config, env, profile)?),
            LlmKind::OpenAi => Box::new(crate::cloudflare::models::openai_reasoner(config)),
        };
        let embedder: Box<dyn Embedder> = match config.embedder {
            EmbedderKind::Local => Box::new(HashEmbedder),
            EmbedderKind::WorkersAi => Box::new(crate::cloudflare::models::workers_ai_embedder(config, env, profile)?),
            EmbedderKind::OpenAi => Box::new(crate::cloudflare::models::openai_embedder(config)),
        };
        let vectorize = match config.index {
            IndexKind::Vectorize => Some(
                crate::cloudflare::vectorize::VectorizeIndex::from_env(env, profile).map_err(|e| Error::config(format!("failed to bind VECTORIZE: {e}")))?,
            ),
            IndexKind::Local => None,
        };
        Ok(Providers { reasoner, embedder, index: config.index.clone(), vectorize })
    }

    pub fn reasoner(&self) -> &dyn Reasoner {
        self.reasoner.as_ref()
    }

    pub fn embedder(&self) -> &dyn Embedder {
        self.embedder.as_ref()
    }

    /// The vector index. The local one reads the profile's SQL; when the
    /// profile is `warm` (its state resident) it keeps its codes in
    /// `packed`, which the Durable Object holds across calls, else it
    /// streams them from SQLite for each query.
    pub fn index<'a>(&'a self, sql: &'a dyn Sql, packed: &'a RefCell<Packed>, warm: bool) -> Box<dyn VectorIndex + 'a> {
        match (&self.index, &self.vectorize) {
            (IndexKind::Vectorize, Some(v)) => Box::new(v),
            // Codes still held (a profile let go while they were lent
            // out) are kept in step too: a write past them would leave
            // them stale for when the profile is warm again.
            _ if warm || packed.try_borrow().is_ok_and(|p| p.is_loaded()) => Box::new(CachedVectorIndex { sql, packed }),
            _ => Box::new(SqlVectorIndex { sql }),
        }
    }

    /// Whether vectors are kept in the profile's own SQLite (the local
    /// index), whose codes a warm profile holds in memory.
    pub fn local_index(&self) -> bool {
        self.vectorize.is_none()
    }
}
