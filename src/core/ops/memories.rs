//! The operations on a profile's memories one at a time or a session at
//! a time: list, get, update, forget, the hard deletions, consolidation
//! and its undo, and the summary.

use super::Profile;
use crate::core::api::{self, ListRequest, SummaryRequest, DEFAULT_PAGE_SIZE};
use crate::core::error::{Error, Result};
use crate::core::model::{DeleteReport, ListPage, Memory, MemoryDetail, SessionDeleteReport, Summary};
use crate::core::store::ListFilter;
use crate::core::summary;

/// `ids` as a set to look up in: a deletion's lists run to tens of
/// thousands of ids, and a lookup in a list for each of them took most of
/// the deletion of a 64,000-memory session (12 s natively, now linear).
fn id_set(ids: &[String]) -> rustc_hash::FxHashSet<&str> {
    ids.iter().map(String::as_str).collect()
}

/// `ids` without those in `listed`.
fn retain_unlisted(ids: &mut Vec<String>, listed: &[String]) {
    let listed = id_set(listed);
    ids.retain(|id| !listed.contains(id.as_str()));
}

impl Profile<'_> {
    /// A page of memories; its cursor is sealed to this profile
    /// ([`api::seal_cursor`]).
    pub fn list(&self, req: ListRequest) -> Result<ListPage> {
        req.validate()?;
        // A key no memory can hold (not in the form keys are stored in) is
        // refused, as remember refuses it, not answered with an empty page.
        if let Some(key) = &req.key {
            api::validate_key("key", key)?;
            crate::core::text::check_key_as_given(key, None)?;
        }
        let status = req.status_filter();
        let store = self.store();
        // Read (or drawn) only where a cursor is: an empty profile's list
        // writes nothing.
        let key = || Ok::<_, Error>(api::cursor_key(self.name, &store.cursor_secret()?));
        let mut page = store.list(&ListFilter {
            limit: req.limit.map_or(DEFAULT_PAGE_SIZE, api::count),
            cursor: req.after().map(|c| api::open_cursor(&key()?, c)).transpose()?,
            session_id: req.session_id,
            kind: req.kind,
            status,
            key: req.key,
            filter: req.filter.as_ref().map(crate::core::filter::from_json).transpose()?,
            as_of: req.as_of.as_deref().map(crate::core::filter::as_of).transpose()?,
        })?;
        page.cursor = page.cursor.map(|id| Ok::<_, Error>(api::seal_cursor(&key()?, &id))).transpose()?;
        Ok(page)
    }

    pub fn get(&self, id: &str) -> Result<MemoryDetail> {
        api::validate_id(id)?;
        let store = self.store();
        let memory = store.get_memory(id)?.ok_or_else(|| Error::not_found(format!("no memory with id {id}")))?;
        let (versions, more_versions) = store.version_chain(&memory)?;
        let (source_messages, more_source_messages) = store.messages_within(&memory.source_message_ids)?;
        let consolidations = store.consolidations_of(&memory.id)?;
        Ok(MemoryDetail { memory, versions, more_versions, source_messages, more_source_messages, consolidations })
    }

    /// Consolidates the profile (see [`crate::core::consolidate`]).
    pub async fn consolidate(&self, req: api::ConsolidateRequest) -> Result<crate::core::model::ConsolidationReport> {
        crate::core::consolidate::run(self, req).await
    }

    /// Undoes one consolidation: its memories back exactly as they were.
    pub fn undo_consolidation(&self, id: i64) -> Result<crate::core::model::ConsolidationRecord> {
        let store = self.store();
        store.transaction(|| store.undo_consolidation(id))
    }

    /// Replaces a memory's metadata; its vector is written again, so an
    /// index filtering by metadata sees the change.
    /// New metadata for a memory. An active keyed memory is not moved to
    /// an owner (`agentId`, `userId`) whose active memory holds its key
    /// already (409): the owner would hold two values of one key; nor is
    /// a version in a chain (409): the chain would join two owners'.
    ///
    /// Not done: a chain of the new owner's whose last value was forgotten
    /// or expired ([`crate::core::store::Store::lapsed_ends`]) is not
    /// joined: the moved value starts a line of its own beside it. Joined,
    /// it would be a version in a chain, which cannot move again (a move
    /// made one-way).
    pub fn update(&self, req: api::UpdateRequest) -> Result<Memory> {
        req.validate()?;
        let store = self.store();
        store.transaction(|| {
            if let Some(m) = store.get_memory(&req.id)? {
                let owner = crate::core::model::Owner::of(&req.metadata);
                // A version chain is one owner's values of one key: a
                // version moved to another owner would join two owners'.
                if let Some(other) = m.supersedes.as_deref().or(m.superseded_by.as_deref()).filter(|_| owner != crate::core::model::Owner::of(&m.metadata)) {
                    return Err(Error::conflict(format!(
                        "memory {} is a version in a chain of its owner's values (beside memory {other}): its agentId and userId cannot change; remember the value under the new owner instead",
                        m.id
                    )));
                }
                if let (crate::core::model::Status::Active, Some(key)) = (m.status, m.key.as_deref()) {
                    if owner != crate::core::model::Owner::of(&m.metadata) {
                        // The memory as it would be, under its new owner.
                        let moved = Memory { metadata: req.metadata.clone(), ..m.clone() };
                        if let Some(h) = store.holder_beside(&moved, true, &|_| false)? {
                            return Err(Error::conflict(format!(
                                "the memory's new owner holds its key {} already (memory {h}): forget or update that one first",
                                api::quoted(key)
                            )));
                        }
                    }
                }
            }
            store.set_metadata(&req.id, &req.metadata)
        })
    }

    /// Forgets memory `id`. One folded away is put back first (the folds
    /// holding it undone), so its words leave recall with it and the
    /// fold's other members are active again; a fold that cannot be undone
    /// (changed since, or consolidated again) makes it a 409, changing
    /// nothing: forget or delete the fold instead.
    pub fn forget(&self, id: &str) -> Result<Memory> {
        api::validate_id(id)?;
        let store = self.store();
        store.transaction(|| {
            let folds = store.folds_around(id)?;
            if let Some(&outer) = folds.last() {
                let wanted = folds.len();
                if store.open_folds(folds, &|m| crate::core::ingest::persist::reaches_any_session(&store, m))? < wanted {
                    return Err(Error::conflict(format!(
                        "memory {id} is folded into another by consolidation {outer}, which cannot be undone now: forget or delete that memory instead"
                    )));
                }
            }
            store.forget(id)
        })
    }

    /// Hard delete: the memory, the messages it was drawn from together
    /// with every other memory that cites them (nothing derived from a
    /// deleted message survives it), and the memories consolidation merged
    /// or folded into it; the messages those came from stay.
    pub fn delete(&self, id: &str) -> Result<DeleteReport> {
        api::validate_id(id)?;
        let store = self.store();
        let memory = store.get_memory(id)?.ok_or_else(|| Error::not_found(format!("no memory with id {id}")))?;
        store.transaction(|| {
            let (merged, drawn_from) = store.consolidated_into(&memory.id, &memory.source_message_ids)?;
            let mut memory_ids = store.memories_citing(&drawn_from)?;
            store.delete_messages(&drawn_from)?;
            // Another that a remaining message said again stays, moved to
            // it; the memory asked for goes, however often it was said.
            let merged_set = id_set(&merged);
            memory_ids.retain(|id| *id != memory.id && !merged_set.contains(id.as_str()));
            let mut moved = store.rehome(&memory_ids)?;
            retain_unlisted(&mut memory_ids, &moved);
            // A merge's survivor whose own messages remain stays.
            moved.extend(store.keep_merged(&memory_ids)?);
            retain_unlisted(&mut memory_ids, &moved);
            memory_ids.push(memory.id.clone());
            memory_ids.extend(merged);
            memory_ids.sort();
            memory_ids.dedup();
            store.withhold(&memory_ids)?;
            store.splice_out(&memory_ids)?;
            store.delete_memories(&memory_ids)?;
            store.erase_consolidations_of(&memory_ids)?;
            store.erase_consolidations_of(&moved)?;
            store.purge_deleted_text()?;
            Ok(DeleteReport { memory: memory.clone(), deleted_memories: memory_ids, deleted_messages: drawn_from })
        })
    }

    pub fn delete_session(&self, session_id: &str) -> Result<SessionDeleteReport> {
        Ok(self.delete_session_memories(session_id)?.0)
    }

    /// Asks the vector index to drop the vectors of hard-deleted memories
    /// now, within the call that deleted them. The `unvector` jobs queued
    /// with the deletion stay the record of it: should the index fail
    /// here, the alarm retries them (and a vector without its memory is
    /// never recalled meanwhile).
    pub(super) async fn drop_vectors(&self, ids: &[String]) {
        if ids.is_empty() {
            return;
        }
        // The failure is recorded as the queued jobs, retried by the alarm.
        let _ = self.index.delete(ids).await;
    }

    /// [`Profile::delete_session`], with the ids of the memories deleted.
    pub(super) fn delete_session_memories(&self, session_id: &str) -> Result<(SessionDeleteReport, Vec<String>)> {
        // The shape alone: a session stored as `..` before such ids were
        // refused can still be deleted (over RPC or MCP; no path names it).
        api::validate_session_id_shape(session_id)?;
        let store = self.store();
        store.transaction(|| {
            let messages: Vec<String> = store.session_message_sizes(session_id)?.into_iter().map(|(id, _)| id).collect();
            let of_session = store.session_memory_ids(session_id)?;
            let mut memory_ids = store.memories_citing(&messages)?;
            memory_ids.extend(of_session.iter().cloned());
            memory_ids.sort();
            memory_ids.dedup();
            store.delete_messages(&messages)?;
            // One that another session said again stays, moved to it; a
            // merge's survivor of another session whose own messages
            // remain stays where it is.
            let mut moved = store.rehome(&memory_ids)?;
            retain_unlisted(&mut memory_ids, &moved);
            let of_session = id_set(&of_session);
            let other_sessions: Vec<String> = memory_ids.iter().filter(|id| !of_session.contains(id.as_str())).cloned().collect();
            moved.extend(store.keep_merged(&other_sessions)?);
            retain_unlisted(&mut memory_ids, &moved);
            store.splice_out(&memory_ids)?;
            store.delete_memories(&memory_ids)?;
            store.erase_consolidations_of(&memory_ids)?;
            store.erase_consolidations_of(&moved)?;
            store.delete_session_jobs(session_id)?;
            store.purge_deleted_text()?;
            let report =
                SessionDeleteReport { session_id: session_id.to_string(), deleted_memories: memory_ids.len() as u64, deleted_messages: messages.len() as u64 };
            Ok((report, memory_ids))
        })
    }

    pub fn summary(&self, req: SummaryRequest) -> Result<Summary> {
        if let Some(s) = &req.session_id {
            api::validate_session_id(s)?;
        }
        Ok(Summary { summary: summary::render(&self.store(), req.session_id.as_deref(), self.now)? })
    }
}
