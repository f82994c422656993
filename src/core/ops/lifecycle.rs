//! The operations on a profile whole: export and import, stats, deletion
//! (marked, restored, purged, wiped) and the background drain the alarm
//! runs.

use super::Profile;
use crate::core::api;
use crate::core::error::{Error, Result};
use crate::core::model::{ProfileDeleteReport, ProfileRestoreReport, Stats};
use crate::core::store::META_WRITTEN;
use crate::core::{background, portable};
use serde_json::{json, Value};

impl Profile<'_> {
    /// The profile's export file, spooled and read back whole
    /// ([`portable::spool_export`]).
    pub fn export(&self, req: api::ExportRequest) -> Result<String> {
        portable::read_whole(self.sql, self.spool_export(req)?)
    }

    /// [`Profile::export`]'s file written to the spool, to be read out a
    /// part at a time ([`portable::spool_export`]).
    pub fn spool_export(&self, req: api::ExportRequest) -> Result<portable::Spooled> {
        req.validate()?;
        let filter = req.filter.as_ref().map(crate::core::filter::from_json).transpose()?;
        portable::spool_export(&self.store(), self.name, filter.as_ref())
    }

    pub fn import(&self, ndjson: &str) -> Result<portable::ImportReport> {
        let empty_first = self.store().deletion_mark()?.is_some();
        self.import_parsed(&self.prepare_import(ndjson, empty_first)?)
    }

    /// Writes a parsed import, whole or not at all.
    pub fn import_parsed(&self, parsed: &portable::Parsed) -> Result<portable::ImportReport> {
        self.check_capacity(i64::try_from(self.import_adds(parsed)?).unwrap_or(i64::MAX))?;
        let store = self.store();
        store.transaction(|| {
            let report = portable::import(&store, parsed)?;
            // An import is one large batch: its full-text rows are written
            // with it, so the next reader has none to write.
            store.write_waiting_text()?;
            Ok(report)
        })
    }

    pub fn stats(&self) -> Result<Stats> {
        let mut stats = self.store().stats()?;
        stats.resident_bytes = self.memory.resident_bytes;
        stats.isolate = self.memory.isolate.clone();
        Ok(stats)
    }

    /// Marks the profile for deletion (Cloudflare's "marks for
    /// deletion"): from now on it answers 404 to everything but
    /// [`Profile::restore`] and this call, and the alarm purges it
    /// ([`Profile::wipe`]) once [`crate::core::context::Limits::delete_grace_millis`] has passed.
    /// A marked profile is not found, to this call too (as a deleted
    /// namespace is): its first mark stays.
    pub fn mark_deleted(&self) -> Result<ProfileDeleteReport> {
        let store = self.store();
        let marked_at = match store.deletion_mark()? {
            Some(_) => {
                return Err(Error::not_found(
                    "profile not found: it is already marked for deletion (restoreProfile, or POST …/restore, brings it back within its grace period)",
                ))
            }
            None if store.meta_get(META_WRITTEN)?.is_none() && store.is_empty()? => {
                return Err(Error::not_found("profile not found: nothing was ever written to it"))
            }
            None => {
                store.mark_for_deletion(self.now)?;
                self.now
            }
        };
        let purge_at = marked_at.saturating_add(self.limits.delete_grace_millis);
        Ok(ProfileDeleteReport { deleted: true, marked_at: crate::core::time::iso(marked_at), purge_at: crate::core::time::iso(purge_at) })
    }

    /// Undoes [`Profile::mark_deleted`] within the grace period: the
    /// profile answers again with everything it held. 404 when nothing is
    /// marked (never deleted, or already purged).
    pub fn restore(&self) -> Result<ProfileRestoreReport> {
        let store = self.store();
        if store.deletion_mark()?.is_none() {
            return Err(Error::not_found("this profile is not marked for deletion: there is nothing to restore"));
        }
        store.clear_deletion_mark()?;
        Ok(ProfileRestoreReport { restored: true })
    }

    /// When a profile marked for deletion is purged (epoch millis), if it
    /// is marked.
    pub fn purge_due(&self) -> Result<Option<i64>> {
        Ok(self.store().deletion_mark()?.map(|at| at.saturating_add(self.limits.delete_grace_millis)))
    }

    /// Wipes the profile at once and takes its deletion mark away: what a
    /// write into a deleted profile does first, and a namespace's deletion
    /// does to each of its profiles.
    pub fn purge_now(&self) -> Result<()> {
        let store = self.store();
        self.wipe()?;
        store.clear_deletion_mark()
    }

    /// Deletes every row of the profile, then every vector: those of its
    /// memories, and those a removal job still waited to take out (a
    /// memory deleted before, whose removal had not gone through yet: the
    /// wipe empties the outbox with the rest).
    pub fn wipe(&self) -> Result<Value> {
        let store = self.store();
        let ids = store.all_memory_ids()?;
        let memories = ids.len();
        let mut ids: Vec<String> = ids.into_iter().chain(store.removals_pending()?).collect();
        ids.sort_unstable();
        ids.dedup();
        store.transaction(|| {
            store.wipe()?;
            store.enqueue_many(crate::core::jobs::JobKind::Unvector, &ids.iter().map(String::as_str).collect::<Vec<_>>())
        })?;
        Ok(json!({ "deleted": true, "memories": memories }))
    }

    /// Runs due background jobs once (the alarm calls this). A profile
    /// whose grace period is over is purged first.
    ///
    /// What failed, the drain as a whole or a part of it beside the jobs
    /// ([`background::DrainReport::trouble`]), is kept in the profile and
    /// shown by [`Profile::stats`] (`drain_error`) until a drain runs
    /// clean: the alarm has no caller to tell.
    pub async fn drain(&self) -> Result<background::DrainReport> {
        let outcome = self.drain_once().await;
        let trouble = match &outcome {
            Ok(report) => report.trouble(),
            Err(e) => Some(e.to_string()),
        };
        let noted = self.store().note_drain_error(trouble.as_deref());
        let report = outcome?;
        noted?;
        Ok(report)
    }

    async fn drain_once(&self) -> Result<background::DrainReport> {
        let purged = match self.purge_due()? {
            Some(at) if at <= self.now => {
                self.wipe()?;
                true
            }
            _ => false,
        };
        let mut report = background::drain(self).await?;
        report.purged = purged;
        report.next_at = self.next_due()?;
        Ok(report)
    }

    /// When background work is next due (epoch millis): the earliest
    /// pending job, expiry or purge, if any. The object sets its alarm by
    /// it.
    pub fn next_due(&self) -> Result<Option<i64>> {
        let due = self.store().next_due()?;
        Ok(match (due, self.purge_due()?) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }
}
