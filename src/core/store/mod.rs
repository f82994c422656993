//! Profile storage: every read and write of a profile's database, over the
//! [`Sql`] trait. Nothing here knows about HTTP, models or Cloudflare.
//!
//! The store keeps three invariants:
//! * a memory's FTS row (rowid = the memory's rowid) exists only while the
//!   memory row exists, and every memory up to the highest rowid in
//!   `memories_fts` has its row; likewise for messages. Rows above it are
//!   indexed in the background once [`TEXT_BATCH`] of them wait, and
//!   before any read of the full-text table ([`FullText::catch_up`]);
//! * a memory with status other than `active` has no vector, or has an
//!   `unvector` job pending in the outbox;
//! * multi-row writes stay under the platform's limits: lists travel as
//!   JSON parameters of at most [`MAX_JSON_PARAM`] bytes ([`json_chunks`]),
//!   placeholders stay under [`MAX_SQL_PARAMS`].
//!
//! One file per thing stored: `messages`, `memories` (with their
//! citations), `outbox`, `fulltext`, `spool` (exports being read out), `restatements`
//! (later messages that said a memory again); `rows` decodes rows, `sql` holds the
//! statement helpers. This file: the store itself, its transactions,
//! `meta`, statistics and the wipe.

use crate::core::error::{Error, Result};
use crate::core::jobs::{Job, JobKind, Work};
use crate::core::model::{ListPage, Memory, MemoryType, Message, Stats, Status};
use crate::core::ports::{Row, Sql, SqlValue, MAX_SQL_PARAMS};
use crate::core::time::iso;

/// The `meta` key holding the profile's `{namespace}/{profile}` name.
pub const META_NAME: &str = "name";
/// The secret of the profile's list cursors ([`Store::cursor_secret`]).
pub const META_CURSOR_SECRET: &str = "cursor_secret";
/// Set by the profile's first write that may create it (and cleared by a
/// wipe): a profile emptied by deletions still exists, one never written
/// does not.
pub const META_WRITTEN: &str = "written";
/// Set once the profile is recorded in the namespace catalog (by its first
/// write); a wipe clears it, so the next write records it again.
pub const META_CATALOGED: &str = "cataloged";
/// The `meta` key holding when the profile was marked for deletion.
pub const META_DELETED_AT: &str = "deleted_at";
/// The meta key of why the last drain failed, in whole or in part (absent
/// once one runs clean).
pub const META_DRAIN_ERROR: &str = "drain_error";

/// A borrowed view of one profile's database at one instant.
pub struct Store<'a> {
    sql: &'a dyn Sql,
    now: i64,
}

/// Filters for [`Store::list`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListFilter {
    pub limit: usize,
    pub cursor: Option<String>,
    pub session_id: Option<String>,
    pub kind: Option<MemoryType>,
    pub status: Option<Status>,
    pub key: Option<String>,
    /// Only memories passing it.
    pub filter: Option<crate::core::filter::Filter>,
    /// What was active at this instant (ISO-8601 UTC as stored), in place
    /// of a status.
    pub as_of: Option<String>,
}

/// A message [`Store::insert_messages`] wrote: its rowid, its place in
/// the call's messages, and the position it was stored at in its session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inserted {
    pub rowid: i64,
    pub index: usize,
    pub position: i64,
}

mod consolidations;
mod fulltext;
mod memories;
mod merges;
mod messages;
mod outbox;
pub use outbox::PARKED_RETRY_MILLIS;
mod restatements;
mod rows;
mod spool;
mod sql;
mod versions;

pub use consolidations::{FoldedMember, NewConsolidation, META_CONSOLIDATION};
pub use fulltext::*;
pub use memories::{within_page, KeyHolder, KeyHolders, KeyProbe, KEY_HOLDERS_QUERY, PAGE_TEXT_BYTES};
pub use merges::Merges;
use rows::*;
pub use rows::{memory_from_row, message_from_row};
pub use spool::{Kept, META_NEXT_EXPORT};
pub use sql::*;

impl<'a> Store<'a> {
    pub fn new(sql: &'a dyn Sql, now_millis: i64) -> Store<'a> {
        Store { sql, now: now_millis }
    }

    pub fn sql(&self) -> &'a dyn Sql {
        self.sql
    }

    pub fn now(&self) -> i64 {
        self.now
    }

    /// Runs `f` in one transaction.
    pub fn transaction<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let mut f = Some(f);
        let mut out = None;
        self.sql.transaction(&mut || {
            let f = f.take().ok_or_else(|| Error::storage("a transaction body ran twice"))?;
            out = Some(f()?);
            Ok(())
        })?;
        out.ok_or_else(|| Error::storage("a transaction body did not run"))
    }

    /// Profile statistics.
    pub fn stats(&self) -> Result<Stats> {
        let one = |sql: &str| self.count(sql);
        let mut stats = Stats {
            messages: one("SELECT COUNT(*) FROM messages")?,
            sessions: one("SELECT COUNT(DISTINCT session_id) FROM messages")?,
            memories: one("SELECT COUNT(*) FROM memories")?,
            pending_jobs: one("SELECT COUNT(*) FROM outbox WHERE parked = 0")?,
            failed_jobs: one("SELECT COUNT(*) FROM outbox WHERE parked = 0 AND attempts > 0")?,
            parked_jobs: one("SELECT COUNT(*) FROM outbox WHERE parked = 1")?,
            parked: self.parked_jobs(crate::core::model::PARKED_SHOWN)?,
            vectors: one("SELECT COUNT(*) FROM vectors")?,
            storage_bytes: self.sql.database_size(),
            spooled_exports: self.spooled_exports()?,
            drain_error: self.meta_get(META_DRAIN_ERROR)?,
            ..Stats::default()
        };
        for t in MemoryType::ALL {
            stats.by_type.insert(t.as_str().into(), 0);
        }
        for s in Status::ALL {
            stats.by_status.insert(s.as_str().into(), 0);
        }
        for r in self.sql.query("SELECT type, COUNT(*) FROM memories GROUP BY type", &[])? {
            let (t, n) = text_and_count(&r)?;
            stats.by_type.insert(t, n);
        }
        for r in self.sql.query("SELECT status, COUNT(*) FROM memories GROUP BY status", &[])? {
            let (s, n) = text_and_count(&r)?;
            stats.by_status.insert(s, n);
        }
        Ok(stats)
    }

    /// Removes everything in the profile but its name (which the alarm
    /// needs to reach the profile's vectors) and the schema.
    pub fn wipe(&self) -> Result<()> {
        // Citations first: a deleted message's trigger would move them aside.
        // The vectors are the vector index's: the caller queues their removal.
        for t in [
            "citations",
            "citations_waiting",
            "restatements",
            "withheld",
            "rejudge",
            "messages",
            "messages_fts",
            "memories",
            "memories_fts",
            "directory_snapshot",
            "outbox",
            "consolidations",
            "consolidation_members",
            "export_spool",
            "export_kept",
        ] {
            self.sql.execute(&format!("DELETE FROM {t}"), &[])?;
        }
        self.sql.execute("DELETE FROM meta WHERE key NOT IN (?, ?)", &[META_NAME.into(), META_NEXT_EXPORT.into()])?;
        self.purge_deleted_text()
    }

    /// When the profile was marked for deletion (epoch millis), if it is.
    pub fn deletion_mark(&self) -> Result<Option<i64>> {
        match self.meta_get(META_DELETED_AT)? {
            None => Ok(None),
            Some(at) => at.parse().map(Some).map_err(|_| Error::storage(format!("meta {META_DELETED_AT} is not a time"))),
        }
    }

    /// Marks the profile for deletion at `at` (epoch millis).
    pub fn mark_for_deletion(&self, at: i64) -> Result<()> {
        self.meta_set(META_DELETED_AT, &at.to_string())
    }

    /// Takes the deletion mark away (a restore).
    pub fn clear_deletion_mark(&self) -> Result<()> {
        self.sql.execute("DELETE FROM meta WHERE key = ?", &[META_DELETED_AT.into()])
    }

    /// Whether the profile holds no message and no memory (it was never
    /// written, or everything in it was deleted).
    pub fn is_empty(&self) -> Result<bool> {
        let rows = self.sql.query("SELECT EXISTS (SELECT 1 FROM messages) OR EXISTS (SELECT 1 FROM memories)", &[])?;
        let any =
            rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("failed to read whether the profile is empty"))?;
        Ok(any == 0)
    }

    /// The highest rowids of `messages` and `memories` (about how many
    /// of each were ever stored; what a profile's state is estimated by).
    pub fn highest_rowids(&self) -> Result<(u64, u64)> {
        let rows = self.sql.query("SELECT (SELECT COALESCE(MAX(rowid), 0) FROM messages), (SELECT COALESCE(MAX(rowid), 0) FROM memories)", &[])?;
        let n = |i: usize| rows.first().and_then(|r| r.get(i)).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("failed to read the highest rowids"));
        Ok((u64::try_from(n(0)?).unwrap_or(0), u64::try_from(n(1)?).unwrap_or(0)))
    }

    /// The bytes of every message's and memory's content (the directory's
    /// words come from them): read once, before a profile's state is
    /// first built ([`crate::core::resident::estimate_with_text`]). Reads
    /// every row.
    pub fn text_bytes(&self) -> Result<u64> {
        let rows = self.sql.query(
            "SELECT (SELECT COALESCE(SUM(octet_length(content)), 0) FROM messages) + (SELECT COALESCE(SUM(octet_length(content)), 0) FROM memories)",
            &[],
        )?;
        let n = rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("failed to read the texts' size"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The profile's state as last measured ([`crate::core::resident::Measured`]),
    /// if it was.
    pub fn state_measured(&self) -> Result<Option<crate::core::resident::Measured>> {
        use crate::core::resident::{Measured, META_STATE_MEASURED};
        self.meta_get(META_STATE_MEASURED)?.map(|text| Measured::decode(&text).map_err(Error::storage)).transpose()
    }

    pub fn set_state_measured(&self, measured: &crate::core::resident::Measured) -> Result<()> {
        self.meta_set(crate::core::resident::META_STATE_MEASURED, &measured.encode())
    }

    /// The profile's own secret for its list cursors' tags
    /// ([`crate::core::api::seal_cursor`]): 128 random bits SQLite drew the
    /// first time it was asked for (again after a purge), never answered.
    pub fn cursor_secret(&self) -> Result<String> {
        if let Some(secret) = self.meta_get(META_CURSOR_SECRET)? {
            return Ok(secret);
        }
        self.sql.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, lower(hex(randomblob(16))))", &[META_CURSOR_SECRET.into()])?;
        self.meta_get(META_CURSOR_SECRET)?.ok_or_else(|| Error::storage("the profile's cursor secret was not stored"))
    }

    pub fn meta_get(&self, key: &str) -> Result<Option<String>> {
        Ok(self.sql.query("SELECT value FROM meta WHERE key = ?", &[key.into()])?.first().and_then(|r| r.first()).and_then(SqlValue::opt_string))
    }

    pub fn meta_set(&self, key: &str, value: &str) -> Result<()> {
        self.sql.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", &[key.into(), value.into()])
    }

    pub fn meta_delete(&self, key: &str) -> Result<()> {
        self.sql.execute("DELETE FROM meta WHERE key = ?", &[key.into()])
    }

    /// Records why the drain failed, with when, or clears it (`None`).
    pub fn note_drain_error(&self, error: Option<&str>) -> Result<()> {
        match error {
            Some(e) => {
                let e: String = e.chars().take(1000).collect();
                self.meta_set(META_DRAIN_ERROR, &format!("{}: {e}", iso(self.now)))
            }
            None => self.sql.execute("DELETE FROM meta WHERE key = ?", &[META_DRAIN_ERROR.into()]),
        }
    }
}
