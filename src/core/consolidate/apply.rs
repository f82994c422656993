//! Carrying out a consolidation decision. Each change is written with its
//! record (the memories as they were, those it created) in the caller's
//! transaction; `Store::undo_consolidation` puts the memories back exactly
//! and deletes what the change created.
//!
//! A decision is carried out only on members still as the window read
//! them: the reasoner's call may have let another request change one.

use crate::core::error::Result;
use crate::core::ids;
use crate::core::model::{ConsolidationRecord, Memory, MemoryType, Metadata, Status};
use crate::core::provider::{Consolidation, Group};
use crate::core::store::{NewConsolidation, Store};
use crate::core::time::iso;

/// Search queries a folded memory keeps at most.
const FOLD_QUERIES: usize = crate::core::api::MAX_SEARCH_QUERIES;

/// The memories of a window's groups as they are when its changes are
/// written.
pub struct Current(std::collections::HashMap<String, Memory>);

impl Current {
    /// `ids`' memories, read in one pass.
    pub fn read(store: &Store<'_>, ids: &[String]) -> Result<Current> {
        Ok(Current(store.memories_by_ids(ids)?.into_iter().map(|m| (m.id.clone(), m)).collect()))
    }

    /// Whether every member of `g` is still active and as the window read it.
    fn unchanged(&self, g: &Group) -> bool {
        g.members.iter().all(|m| self.0.get(&m.id).is_some_and(|n| n == m && n.status == Status::Active))
    }
}

/// What a window's changes are written under: the run, and the most
/// memories the profile may store (a fold adds one; its members stay).
pub struct Run<'r> {
    pub id: &'r str,
    pub max_memories: i64,
}

/// Carries out `decision` for `g` in run `run`; the record, or `None`
/// when it changes nothing (a keep, a member changed meanwhile, a merge
/// naming no member, a fold with no room). `seq` tells apart the memories
/// one run creates.
pub fn apply(store: &Store<'_>, run: &Run<'_>, g: &Group, decision: &Consolidation, seq: u64, current: &Current) -> Result<Option<ConsolidationRecord>> {
    let run_id = run.id;
    if !current.unchanged(g) {
        return Ok(None);
    }
    match decision {
        Consolidation::Keep { .. } => Ok(None),
        Consolidation::Merge { survivor, reason } => merge(store, run_id, g, survivor, reason),
        Consolidation::Supersede { reason } => supersede(store, run_id, g, reason),
        Consolidation::Fold { content, reason } => match store.memory_count_near(run.max_memories, 1)? {
            // The profile is full: the group stays as it is.
            Some(count) if count.saturating_add(1) > run.max_memories => Ok(None),
            _ => fold(store, run_id, g, content, reason, seq),
        },
        Consolidation::Retire { reason } => retire(store, run_id, g, reason),
    }
}

fn sources_of(members: &[&Memory]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in members {
        for s in &m.source_message_ids {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
    }
    out
}

fn merge(store: &Store<'_>, run_id: &str, g: &Group, survivor: &str, reason: &str) -> Result<Option<ConsolidationRecord>> {
    let Some(keep) = g.members.iter().find(|m| m.id == survivor) else { return Ok(None) };
    let mut order: Vec<&Memory> = vec![keep];
    order.extend(g.members.iter().filter(|m| m.id != survivor));
    store.set_sources(survivor, &sources_of(&order))?;
    // The merged statement holds as long as any of its wordings did.
    let until = latest_expiry(&g.members);
    if until != keep.expires_at {
        store.set_expiry(survivor, until.as_deref())?;
    }
    let until = keep.valid_from.clone();
    for m in g.members.iter().filter(|m| m.id != survivor) {
        store.retire_into(&m.id, survivor, until.as_deref().filter(|u| m.valid_from.as_deref().is_some_and(|f| f < *u)))?;
    }
    record(store, run_id, "merge", survivor, g, &[], reason)
}

fn supersede(store: &Store<'_>, run_id: &str, g: &Group, reason: &str) -> Result<Option<ConsolidationRecord>> {
    let Some(newest) = g.members.last() else { return Ok(None) };
    let until = newest.valid_from.clone().unwrap_or_else(|| newest.created_at.clone());
    let older: Vec<&Memory> = g.members.iter().filter(|m| m.id != newest.id).collect();
    for m in &older {
        store.retire_into(&m.id, &newest.id, Some(&until))?;
    }
    if let Some(last) = older.last() {
        store.link_versions(&last.id, &newest.id)?;
    }
    record(store, run_id, "supersede", &newest.id, g, &[], reason)
}

/// Folds the group into one new memory of `content`. A content no memory
/// may hold ([`crate::core::api::validate_content`]: longer than a
/// message may be, as several long members joined can be, or nothing
/// visible) keeps the group as it is.
fn fold(store: &Store<'_>, run_id: &str, g: &Group, content: &str, reason: &str, seq: u64) -> Result<Option<ConsolidationRecord>> {
    let Some(first) = g.members.first() else { return Ok(None) };
    if crate::core::api::validate_content("content", content).is_err() {
        return Ok(None);
    }
    let members: Vec<&Memory> = g.members.iter().collect();
    let kind = first.kind;
    let metadata = shared_metadata(&g.members);
    let fingerprint = ids::fingerprint(kind.as_str(), content, &metadata);
    let now = store.now();
    let mut queries: Vec<String> = Vec::new();
    for q in g.members.iter().flat_map(|m| &m.search_queries) {
        if queries.len() < FOLD_QUERIES && !queries.contains(q) {
            queries.push(q.clone());
        }
    }
    // What the fold says holds once its last member was said: before, an
    // `asOf` read shows each member as it was, and nothing said later.
    let since = iso(g.members.iter().map(Memory::said_at).max().unwrap_or(now));
    // The id its words and time give, unless a memory holds it already (a
    // fold of the same words in an earlier window of this run).
    let mut id = ids::memory_id(now, &fingerprint, seq);
    if !store.memory_ids_among(std::slice::from_ref(&id))?.is_empty() {
        id = crate::core::ingest::persist::next_free_id(store, &fingerprint, seq, &Default::default())?;
    }
    let folded = Memory {
        id,
        kind,
        key: None,
        summary: crate::core::text::lead(content, crate::core::text::SUMMARY_CHARS),
        content: content.to_string(),
        session_id: first.session_id.clone(),
        source_message_ids: sources_of(&members),
        search_queries: queries,
        status: Status::Active,
        supersedes: None,
        superseded_by: None,
        event_date: g.members.iter().filter_map(|m| m.event_date.clone()).min(),
        created_at: iso(now),
        updated_at: iso(now),
        expires_at: latest_expiry(&g.members),
        metadata,
        valid_from: Some(since.clone()),
        valid_to: None,
    };
    store.insert_memories(&[(&folded, fingerprint.as_str())])?;
    for m in &g.members {
        // Each member holds until the fold does (the last one, never).
        store.retire_into(&m.id, &folded.id, Some(&since))?;
    }
    record(store, run_id, "fold", &folded.id, g, std::slice::from_ref(&folded.id), reason)
}

/// The latest of `members`' expiries, none being never.
fn latest_expiry(members: &[Memory]) -> Option<String> {
    members.iter().map(|m| m.expires_at.clone()).collect::<Option<Vec<String>>>()?.into_iter().max()
}

fn retire(store: &Store<'_>, run_id: &str, g: &Group, reason: &str) -> Result<Option<ConsolidationRecord>> {
    let Some(task) = g.members.first().filter(|m| m.kind == MemoryType::Task) else { return Ok(None) };
    store.retire_task(&task.id)?;
    record(store, run_id, "retire", &task.id, g, &[], reason)
}

/// The metadata every member has, with the same value.
fn shared_metadata(members: &[Memory]) -> Metadata {
    let Some(first) = members.first() else { return Metadata::new() };
    first.metadata.iter().filter(|(k, v)| members.iter().all(|m| m.metadata.get(*k) == Some(*v))).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn record(store: &Store<'_>, run_id: &str, action: &str, target: &str, g: &Group, created: &[String], reason: &str) -> Result<Option<ConsolidationRecord>> {
    let members: Vec<String> = g.members.iter().map(|m| m.id.clone()).collect();
    Ok(Some(store.record_consolidation(&NewConsolidation { run_id, action, target, members: &members, created, reason, before: &g.members })?))
}
