//! Building memory records and storing them, with their supersessions and
//! outbox jobs, in one transaction.

use crate::core::error::Result;
use crate::core::ids;
use crate::core::ingest::{dates, supersede};
use crate::core::model::{Memory, Message, Status};
use crate::core::provider::{Candidate, Classification, Transcript};
use crate::core::store::Store;
use crate::core::time::iso;

/// A memory ready to store, with its fingerprint.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    pub memory: Memory,
    pub fingerprint: String,
}

/// Turns classified candidates into memory records.
pub fn build(
    session_id: &str,
    messages: &[Message],
    items: Vec<(Candidate, Classification, Transcript)>,
    now: i64,
) -> Vec<Pending> {
    items
        .into_iter()
        .enumerate()
        .map(|(seq, (c, cls, t))| {
            let mut lines = c.lines.clone();
            lines.sort_unstable();
            lines.dedup();
            let source_message_ids: Vec<String> =
                lines.iter().filter_map(|&i| messages.get(i)).map(|m| m.id.clone()).collect();
            let event_date = c.event_date.clone().or_else(|| {
                lines.iter().find_map(|&i| t.lines.iter().find(|l| l.index == i)).and_then(|l| l.date.clone())
            });
            let fingerprint = ids::fingerprint(cls.kind.as_str(), &c.content);
            Pending {
                memory: Memory {
                    id: ids::memory_id(now, &fingerprint, seq as u64),
                    kind: cls.kind,
                    key: cls.key,
                    summary: cls.summary,
                    content: c.content.clone(),
                    session_id: session_id.to_string(),
                    source_message_ids,
                    search_queries: cls.search_queries,
                    status: Status::Active,
                    supersedes: None,
                    superseded_by: None,
                    event_date: event_date.or_else(|| dates::first_date(&c.content)),
                    created_at: iso(now),
                    updated_at: iso(now),
                    expires_at: None,
                },
                fingerprint,
            }
        })
        .collect()
}

/// What [`store`] did.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Outcome {
    pub stored: Vec<Memory>,
    /// Memories already present (same meaning, still active): ids.
    pub existing: Vec<String>,
    pub superseded: usize,
}

/// Stores memories in one transaction: drops those whose meaning is
/// already stored and active, supersedes by key, inserts, queues vectors.
pub fn store(store: &Store<'_>, pending: Vec<Pending>) -> Result<Outcome> {
    store.transaction(|| {
        let mut outcome = Outcome::default();
        let mut fresh = Vec::new();
        for p in pending {
            match store.active_by_fingerprint(&p.fingerprint)? {
                Some(id) => outcome.existing.push(id),
                None => fresh.push(p),
            }
        }
        let mut memories: Vec<Memory> = fresh.iter().map(|p| p.memory.clone()).collect();
        let lookup = |key: &str| -> Vec<String> {
            store.active_by_key(key).map(|v| v.into_iter().map(|m| m.id).collect()).unwrap_or_default()
        };
        let replacements = supersede::plan(&mut memories, &lookup);
        // Within one call, an earlier memory replaced by a later one is
        // stored already superseded.
        let new_ids: std::collections::HashSet<&str> = memories.iter().map(|m| m.id.as_str()).collect();
        let mut superseded_in_call = std::collections::HashMap::new();
        for r in &replacements {
            if new_ids.contains(r.old.as_str()) {
                superseded_in_call.insert(r.old.clone(), r.new.clone());
            }
        }
        for (m, p) in memories.iter_mut().zip(&fresh) {
            if let Some(next) = superseded_in_call.get(&m.id) {
                m.status = Status::Superseded;
                m.superseded_by = Some(next.clone());
            }
            store.insert_memory(m, &p.fingerprint)?;
        }
        for r in replacements.iter().filter(|r| !superseded_in_call.contains_key(&r.old)) {
            store.supersede(&r.old, &r.new)?;
        }
        outcome.superseded = replacements.len();
        outcome.stored = memories;
        Ok(outcome)
    })
}
