//! What one call on a profile borrows: its database, its providers, its
//! resident state, the time and its limits. Every pipeline (ingest,
//! recall, remember, the background drain) takes a [`Profile`]; the
//! operations that run them are in [`crate::core::ops`], above them. This
//! module imports no pipeline.

use crate::core::error::Result;
use crate::core::ports::{Embedder, Sql, VectorIndex, WorkingRoom};
use crate::core::provider::Reasoner;
use crate::core::recall::directory::TurnDirectory;
use crate::core::store::Store;

/// Everything an operation needs, borrowed for one call.
pub struct Profile<'a> {
    /// `{namespace}/{profile}`.
    pub name: &'a str,
    pub sql: &'a dyn Sql,
    pub reasoner: &'a dyn Reasoner,
    pub embedder: &'a dyn Embedder,
    pub index: &'a dyn VectorIndex,
    /// Where each message sits, kept between calls by the profile's owner
    /// (see [`crate::core::recall::directory`]) when its memory budget
    /// allows; `None`: the profile runs on SQLite alone
    /// ([`crate::core::recall::places::Source::Sql`]).
    pub turns: Option<&'a TurnDirectory>,
    /// Milliseconds since the epoch, read once per call.
    pub now: i64,
    pub limits: Limits,
    /// What the profile and its isolate hold in memory, as its owner
    /// reports it for `stats` (see [`crate::core::resident`]).
    pub memory: MemoryView,
    /// Room in the working memory its owner shares with other profiles
    /// ([`crate::core::ports::Unshared`] natively), taken by a pipeline
    /// before it holds much across an await.
    pub room: &'a dyn WorkingRoom,
}

/// What a profile keeps in memory between requests, and its isolate's
/// figures, when its owner keeps a budget (`None` natively).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryView {
    pub resident_bytes: u64,
    pub isolate: Option<crate::core::resident::IsolateMemory>,
}

/// Per-profile write limits (SPEC.md section 7).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Most memories a profile holds (all statuses). Writes that would go
    /// over it are refused with 409; nothing is evicted silently.
    pub max_memories: i64,
    /// How long a profile marked for deletion can be restored before the
    /// alarm purges it (`PROFILE_DELETE_GRACE_SECONDS`), in milliseconds.
    pub delete_grace_millis: i64,
    /// The first retry of a failed background job waits this long; each
    /// further one twice as long (`JOB_RETRY_BASE_MS`).
    pub job_retry_base_millis: i64,
    /// The alarm starts a consolidation run once this many memories were
    /// written since the last run began (`CONSOLIDATE_EVERY`); never when
    /// `None` (runs then start on demand only).
    pub consolidate_every: Option<i64>,
}

/// The default grace period of a deleted profile: one day.
pub const DEFAULT_DELETE_GRACE_MILLIS: i64 = 24 * 60 * 60 * 1000;

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_memories: 1_000_000, delete_grace_millis: DEFAULT_DELETE_GRACE_MILLIS, job_retry_base_millis: 1000, consolidate_every: None }
    }
}

impl<'a> Profile<'a> {
    pub fn store(&self) -> Store<'a> {
        Store::new(self.sql, self.now)
    }

    /// Creates or upgrades the schema, and the full-text rows written
    /// before index forms ([`Store::write_index_forms_once`]).
    pub fn migrate(&self) -> Result<()> {
        crate::core::store::migrate(self.sql)
    }
}
