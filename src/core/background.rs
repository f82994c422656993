//! Background work after the response: the outbox drain the Durable Object
//! alarm runs. Embeds memories and upserts their vectors, removes vectors
//! of memories that left recall, writes full-text rows in batches,
//! expires memories whose TTL passed.
//! Failures are recorded on the job and retried with backoff; a job leaves
//! the outbox only when its work is done.

use crate::core::error::{Error, Result};
use crate::core::model::{Memory, MemoryType, Status};
use crate::core::ops::Profile;
use crate::core::store::{FullText, Job, JOB_EMBED, JOB_EXTRACT, JOB_INDEX_TEXT, JOB_UNVECTOR};
use serde::{Deserialize, Serialize};

/// Jobs taken per drain.
pub const DRAIN_BATCH: usize = 512;

/// Sessions re-judged per drain (`extract` jobs): each is a round of
/// model calls, so a drain takes a few and leaves the rest due for the
/// next alarm, rather than running past the alarm's time.
pub const EXTRACT_BATCH: usize = 8;

/// Texts per embedder request: a drain embeds its jobs in requests of at
/// most this many (remote models cap a request's inputs; Workers AI's
/// embedding models take 100).
pub const EMBED_BATCH: usize = 64;

/// How long background work waits after the write that queued it, so
/// that the writes of a burst are drained together: one alarm, one
/// commit and a few embedder requests for many calls, not one each. A
/// memory is found by full text and topic key at once and by vector
/// search this much later.
pub const DRAIN_DELAY_MILLIS: i64 = 100;

/// When the profile's alarm should next fire, after a write: `due` is the
/// earliest pending job or expiry (epoch millis), `current` the alarm
/// already set, if any. `None` keeps the current alarm, which comes first
/// and drains this write's work with the rest.
pub fn next_alarm(due: i64, now: i64, current: Option<i64>) -> Option<i64> {
    let at = due.max(now + DRAIN_DELAY_MILLIS);
    match current {
        Some(c) if c <= at => None,
        _ => Some(at),
    }
}

#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainReport {
    pub embedded: usize,
    pub removed: usize,
    /// Sessions re-judged successfully after a model fault.
    pub extracted: usize,
    /// Full-text tables brought up to date ([`JOB_INDEX_TEXT`]).
    #[serde(default)]
    pub indexed: usize,
    pub expired: usize,
    pub failed: usize,
    /// Jobs still in the outbox.
    pub pending: i64,
    /// When the next job or expiry is due (epoch millis), if any.
    pub next_at: Option<i64>,
    /// Whether the turn directory's snapshot was written (see
    /// [`crate::core::recall::directory::TurnDirectory::maintain`]).
    pub snapshot: bool,
    /// Why keeping the turn directory failed, if it did. Derived data:
    /// the jobs' outcome stands, the next drain or recall tries again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_error: Option<String>,
}

/// The text embedded for a memory: its search queries, then its content.
pub fn embedding_text(m: &Memory) -> String {
    embedding_text_of(&m.search_queries, &m.content)
}

/// [`embedding_text`] from the two fields it reads.
pub fn embedding_text_of(search_queries: &[String], content: &str) -> String {
    let mut s = search_queries.join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s.push_str(content);
    s
}

/// Whether a memory belongs in the vector index. (The drain asks SQLite
/// the same of stored rows: `WANTS_VECTOR` in `core::store`, pinned equal
/// by tests.)
pub fn wants_vector(m: &Memory) -> bool {
    m.status == Status::Active && m.kind != MemoryType::Task
}

pub async fn drain(p: &Profile<'_>) -> Result<DrainReport> {
    let store = p.store();
    let mut report = DrainReport { expired: store.transaction(|| store.expire_due())?, ..DrainReport::default() };
    let jobs = store.due_jobs(DRAIN_BATCH)?;
    let (extracts, jobs): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.kind == JOB_EXTRACT);
    let (embeds, jobs): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.kind == JOB_EMBED);
    let (unvectors, jobs): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.kind == JOB_UNVECTOR);
    let (index_text, unknown): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.kind == JOB_INDEX_TEXT);
    // A kind this version does not know (written by a newer one) is left
    // for that version rather than guessed at.
    let _ = unknown;

    // Sessions whose model stages failed at ingest: judge them again. Their
    // new memories queue their own embeddings, drained below or next time.
    for j in extracts.iter().take(EXTRACT_BATCH) {
        match crate::core::ingest::retry_session(p, &j.memory_id).await {
            Ok(0) => {
                store.finish_jobs(&[j.id])?;
                report.extracted += 1;
            }
            Ok(n) => {
                store.fail_job(j.id, j.attempts, &format!("{n} model faults remain"))?;
                report.failed += 1;
            }
            Err(e) => {
                store.fail_job(j.id, j.attempts, &e.to_string())?;
                report.failed += 1;
            }
        }
    }

    // Removals first, so a memory forgotten and re-embedded in one batch
    // cannot lose its fresh vector.
    if !unvectors.is_empty() {
        let ids: Vec<String> = unvectors.iter().map(|j| j.memory_id.clone()).collect();
        match p.index.delete(&ids).await {
            Ok(()) => {
                store.finish_jobs(&unvectors.iter().map(|j| j.id).collect::<Vec<_>>())?;
                report.removed = ids.len();
            }
            Err(e) => {
                for j in &unvectors {
                    store.fail_job(j.id, j.attempts, &e.to_string())?;
                }
                report.failed += unvectors.len();
            }
        }
    }

    for batch in embeds.chunks(EMBED_BATCH) {
        match embed_memories(p, &batch.iter().map(|j| j.memory_id.clone()).collect::<Vec<_>>()).await {
            Ok(n) => {
                store.finish_jobs(&batch.iter().map(|j| j.id).collect::<Vec<_>>())?;
                report.embedded += n;
            }
            Err(e) => {
                for j in batch {
                    store.fail_job(j.id, j.attempts, &e.to_string())?;
                }
                report.failed += batch.len();
            }
        }
    }
    // Full-text rows a batch of writes left waiting, one statement a table.
    for j in &index_text {
        let written = match FullText::named(&j.memory_id) {
            Some(which) => store.transaction(|| which.catch_up(p.sql).map(|_| ())),
            // A table this version does not have (a newer one queued it):
            // finished here, since that version's next write queues it
            // again, where a job left waiting would keep the alarm due.
            None => Ok(()),
        };
        match written {
            Ok(()) => {
                store.finish_jobs(&[j.id])?;
                report.indexed += 1;
            }
            Err(e) => {
                store.fail_job(j.id, j.attempts, &e.to_string())?;
                report.failed += 1;
            }
        }
    }
    // The turn directory reads what this work and the writes before it
    // added, here rather than on the next recall, and keeps its snapshot.
    match p.turns.maintain(p.sql) {
        Ok(written) => report.snapshot = written,
        Err(e) => report.directory_error = Some(e.to_string()),
    }
    report.pending = store.pending_jobs()?;
    report.next_at = store.next_due()?;
    Ok(report)
}

/// Embeds the memories `ids` that want a vector (one embedder request)
/// and upserts the vectors of those that still want one after it; how
/// many were upserted.
pub async fn embed_memories(p: &Profile<'_>, ids: &[String]) -> Result<usize> {
    let store = p.store();
    let inputs = store.embedding_inputs(ids)?;
    if inputs.is_empty() {
        return Ok(0);
    }
    let texts: Vec<String> = inputs.iter().map(|(_, queries, content)| embedding_text_of(queries, content)).collect();
    let vectors = p.embedder.embed(&texts).await?;
    // A reply with a vector missing (or one too many) cannot be matched
    // to memories: fail the batch so it is retried, rather than finishing
    // jobs whose memories got no vector.
    if vectors.len() != texts.len() {
        return Err(Error::provider(format!("embedder returned {} vectors for {} texts", vectors.len(), texts.len())));
    }
    if vectors.iter().any(|v| v.is_empty() || v.iter().any(|x| !x.is_finite())) {
        return Err(Error::provider("embedder returned an empty or non-finite vector"));
    }
    // The embedder call yields: a memory may have been forgotten or
    // deleted meanwhile (its removal job is already queued behind this
    // one). Upsert only memories that still want a vector, so no vector
    // of deleted content is written after its delete.
    let ids: Vec<String> = inputs.iter().map(|(id, _, _)| id.clone()).collect();
    let still = store.wanting_vectors(&ids)?;
    let items: Vec<(String, Vec<f32>)> = ids.into_iter().zip(vectors).filter(|(id, _)| still.contains(id)).collect();
    if !items.is_empty() {
        p.index.upsert(&items).await?;
    }
    Ok(items.len())
}
