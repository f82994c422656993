//! Background work after the response: the outbox drain the Durable Object
//! alarm runs. Embeds memories and upserts their vectors, removes vectors
//! of memories that left recall, writes full-text rows in batches,
//! expires memories whose TTL passed.
//! Failures are recorded on the job and retried with backoff; a job leaves
//! the outbox only when its work is done.

use crate::core::context::Profile;
use crate::core::error::{Error, Result};
use crate::core::jobs::{Job, JobKind, Work};
use crate::core::model::{Memory, MemoryType, Status};
use crate::core::store::FullText;

/// `text` cut to at most `max` bytes, at a character boundary.
pub fn truncated(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut at = max;
        while !text.is_char_boundary(at) {
            at = at.saturating_sub(1);
        }
        text.truncate(at);
    }
    text
}
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
    let at = due.max(now.saturating_add(DRAIN_DELAY_MILLIS));
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
    /// Full-text tables brought up to date (index-text jobs).
    #[serde(default)]
    pub indexed: usize,
    /// Consolidation runs finished.
    #[serde(default)]
    pub consolidated: usize,
    /// Jobs left for later, not at fault (not an attempt; never parked for
    /// it): consolidation runs for which no room for a window was made in
    /// the owner's working memory in time, and session extractions while
    /// an ingest of their session runs.
    #[serde(default)]
    pub waiting: usize,
    pub expired: usize,
    pub failed: usize,
    /// Jobs parked by this drain (over their attempt cap, or of a kind
    /// this version does not know).
    #[serde(default)]
    pub parked: i64,
    /// Parked jobs given one more attempt by this drain, their day up.
    #[serde(default)]
    pub revived: i64,
    /// Jobs still in the outbox.
    pub pending: i64,
    /// When the next job or expiry is due (epoch millis), if any.
    pub next_at: Option<i64>,
    /// Whether the turn directory's snapshot was written (see
    /// [`crate::core::recall::directory::TurnDirectory::maintain`]).
    pub snapshot: bool,
    /// Whether the profile was purged (its deletion's grace period over).
    #[serde(default)]
    pub purged: bool,
    /// Why keeping the turn directory failed, if it did. Derived data:
    /// the jobs' outcome stands, the next drain or recall tries again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_error: Option<String>,
    /// Whether the vector index rewrote its snapshot (a profile on SQLite
    /// alone streams its codes from it; see
    /// [`crate::core::ports::VectorIndex::maintain`]).
    #[serde(default)]
    pub vector_snapshot: bool,
    /// Why keeping the vector index's snapshot failed, if it did (derived
    /// data, as the directory's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_snapshot_error: Option<String>,
    /// Why the alarm's consolidation schedule failed, if it did (a run
    /// record that does not read: an explicit `consolidate` replaces it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consolidation_error: Option<String>,
}

impl DrainReport {
    /// What failed of the work a drain does beside its jobs (the jobs'
    /// failures are recorded on the jobs), if anything did: the errors it
    /// carries, joined.
    pub fn trouble(&self) -> Option<String> {
        let parts: Vec<String> = [
            self.directory_error.as_ref().map(|e| format!("the turn directory: {e}")),
            self.vector_snapshot_error.as_ref().map(|e| format!("the vector snapshot: {e}")),
            self.consolidation_error.as_ref().map(|e| format!("the consolidation schedule: {e}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
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

/// Attempts a job gets before it is parked (see [`Store::park_jobs`]):
/// with the default retry base of one second, about four minutes of
/// retries.
pub const MAX_ATTEMPTS: i64 = 8;

/// Most bytes of text in one embedder request: a drain's embeddings go in
/// requests of at most [`EMBED_BATCH`] texts and at most this many bytes,
/// so one large memory does not make a request too large for the model
/// (or for the memory of the isolate).
pub const EMBED_BATCH_BYTES: usize = 256 * 1024;

/// Most bytes of one memory's text sent to the embedder: the content
/// limit of a memory. A text over it (stored before the limit held) is
/// embedded by its beginning.
pub const EMBED_TEXT_BYTES: usize = crate::core::api::MAX_MESSAGE_BYTES;

/// Runs the jobs that are due, each attempt recorded before it runs.
///
/// A job that failed before runs alone (its embedding in a request of its
/// own), so a poisoned job fails by itself and the others in its first
/// batch finish on their next try; one over [`MAX_ATTEMPTS`] is parked.
pub async fn drain(p: &Profile<'_>) -> Result<DrainReport> {
    let store = p.store();
    let mut report = DrainReport { expired: store.transaction(|| store.expire_due())?, ..DrainReport::default() };
    report.parked = store.transaction(|| store.park_jobs(MAX_ATTEMPTS))?;
    report.revived = store.transaction(|| store.revive_parked(MAX_ATTEMPTS))?;
    let jobs = store.due_jobs(DRAIN_BATCH, EXTRACT_BATCH)?;
    let of = |kind: JobKind| jobs.iter().filter(|j| j.work.kind() == kind).cloned().collect::<Vec<Job>>();
    run_extracts(p, &of(JobKind::Extract), &mut report).await?;
    // Removals first, so a memory forgotten and re-embedded in one batch
    // cannot lose its fresh vector.
    run_unvectors(p, &of(JobKind::Unvector), &mut report).await?;
    run_embeds(p, &of(JobKind::Embed), &mut report).await?;
    // The codes a profile without them in memory streams (the rows alone
    // would be read one by one).
    match p.index.maintain().await {
        Ok(written) => report.vector_snapshot = written,
        Err(e) => report.vector_snapshot_error = Some(e.to_string()),
    }
    run_index_text(p, &of(JobKind::IndexText), &mut report)?;
    if let Some(every) = p.limits.consolidate_every {
        // A run begun now is taken by the next drain (its job is due). A
        // run record that does not read stops the schedule, not the other
        // jobs: the drain reports it until a `consolidate` call replaces it.
        if let Err(e) = crate::core::consolidate::schedule(p, every) {
            report.consolidation_error = Some(e.to_string());
        }
    }
    run_consolidations(p, &of(JobKind::Consolidate), &mut report).await?;
    // The turn directory reads what this work and the writes before it
    // added, here rather than on the next recall, and keeps its snapshot.
    if let Some(turns) = p.turns {
        match turns.maintain(p.sql) {
            Ok(written) => report.snapshot = written,
            Err(e) => report.directory_error = Some(e.to_string()),
        }
    }
    // A job that used its last attempt just now is parked now, not shown
    // as waiting until the next drain.
    let parked_now = store.transaction(|| store.park_jobs(MAX_ATTEMPTS))?;
    report.parked = report.parked.saturating_add(parked_now);
    report.pending = store.pending_jobs()?;
    report.next_at = store.next_due()?;
    Ok(report)
}

/// Claims `jobs` (one attempt each, recorded before they run), runs
/// `work`, and finishes them or records its error on each.
/// The outer error is the store's (the drain stops); the inner `None` is
/// the work's failure, recorded on the jobs.
async fn attempt<F: std::future::Future<Output = Result<usize>>>(p: &Profile<'_>, jobs: &[Job], work: F) -> Result<Option<usize>> {
    let store = p.store();
    let ids: Vec<i64> = jobs.iter().map(|j| j.id).collect();
    store.transaction(|| store.claim_jobs(&ids, p.limits.job_retry_base_millis))?;
    match work.await {
        Ok(n) => {
            store.finish_jobs(&ids)?;
            Ok(Some(n))
        }
        Err(e) => {
            let message = e.to_string();
            store.transaction(|| ids.iter().try_for_each(|id| store.record_failure(*id, &message)))?;
            Ok(None)
        }
    }
}

/// Sessions whose model stages failed at ingest: judged again, a few per
/// drain. Their new memories queue their own embeddings.
async fn run_extracts(p: &Profile<'_>, jobs: &[Job], report: &mut DrainReport) -> Result<()> {
    let store = p.store();
    for j in jobs.iter().take(EXTRACT_BATCH) {
        let Work::Extract { session_id } = &j.work else { continue };
        // An ingest of the session still running judges what it stored:
        // this waits for it (not an attempt) rather than judge it too.
        // One running past its guard's time (a slow model) is still
        // running in this process: its guard waits another guard's time.
        let running_here = crate::core::running::ingest_running(p.name, session_id, p.now);
        let until = match store.ingest_running_until(session_id)? {
            None if running_here => Some(p.now.saturating_add(crate::core::running::INGEST_GUARD_MILLIS)),
            until => until,
        };
        if let Some(until) = until {
            store.transaction(|| {
                store.claim_jobs(&[j.id], p.limits.job_retry_base_millis)?;
                store.defer_job(j.id, until, "an ingest of this session is running: retried once it has ended")
            })?;
            report.waiting = report.waiting.saturating_add(1);
            continue;
        }
        let work = async {
            match crate::core::ingest::retry_session(p, session_id).await? {
                0 => Ok(1),
                n => Err(Error::provider(format!("{n} model faults remain"))),
            }
        };
        tally(report, attempt(p, std::slice::from_ref(j), work).await?, |r, n| r.extracted = r.extracted.saturating_add(n), 1);
    }
    Ok(())
}

/// Vector removals. A memory that wants its vector again by the time its
/// removal runs (restored by a consolidation's undo while the removal
/// backed off, its new vector written since) keeps it: the job finishes
/// without touching the index.
async fn run_unvectors(p: &Profile<'_>, jobs: &[Job], report: &mut DrainReport) -> Result<()> {
    for group in isolate_suspects(jobs, |_| 0, usize::MAX, DRAIN_BATCH) {
        let ids = memory_ids(&group);
        let wanted = p.store().wanting_vectors(&ids)?;
        let ids: Vec<String> = ids.into_iter().filter(|id| !wanted.contains(id)).collect();
        let work = async {
            if !ids.is_empty() {
                p.index.delete(&ids).await?;
            }
            Ok(ids.len())
        };
        tally(report, attempt(p, &group, work).await?, |r, n| r.removed = r.removed.saturating_add(n), group.len());
    }
    Ok(())
}

async fn run_embeds(p: &Profile<'_>, jobs: &[Job], report: &mut DrainReport) -> Result<()> {
    let sizes = p.store().embedding_sizes(&memory_ids(jobs))?;
    let size = |j: &Job| j.memory_id().and_then(|id| sizes.get(id)).copied().unwrap_or(0).min(EMBED_TEXT_BYTES);
    for group in isolate_suspects(jobs, size, EMBED_BATCH_BYTES, EMBED_BATCH) {
        let ids = memory_ids(&group);
        let outcome = attempt(p, &group, embed_memories(p, &ids)).await?;
        tally(report, outcome, |r, n| r.embedded = r.embedded.saturating_add(n), group.len());
    }
    Ok(())
}

/// Full-text rows a batch of writes left waiting, one statement a table.
fn run_index_text(p: &Profile<'_>, jobs: &[Job], report: &mut DrainReport) -> Result<()> {
    let store = p.store();
    for j in jobs {
        let Work::IndexText { table } = &j.work else { continue };
        store.transaction(|| store.claim_jobs(&[j.id], p.limits.job_retry_base_millis))?;
        let written = match FullText::named(table) {
            Some(which) => store.transaction(|| which.catch_up(p.sql).map(|_| ())),
            // A table this version does not have (a newer one queued it):
            // finished here, since that version's next write queues it
            // again, where a job left waiting would keep the alarm due.
            None => Ok(()),
        };
        match written {
            Ok(()) => {
                store.finish_jobs(&[j.id])?;
                report.indexed = report.indexed.saturating_add(1);
            }
            Err(e) => {
                store.record_failure(j.id, &e.to_string())?;
                report.failed = report.failed.saturating_add(1);
            }
        }
    }
    Ok(())
}

/// The memories `jobs` (of embedding or vector removal) are about.
/// A consolidation run goes on for a few windows
/// ([`crate::core::consolidate::WINDOWS_PER_DRAIN`]); one that is not done
/// yields and is due again at once, one that fails retries with backoff,
/// and one that found no room for its first window (other profiles of
/// the isolate hold it) waits [`BUSY_RETRY_MILLIS`] more, its attempt not
/// counted.
async fn run_consolidations(p: &Profile<'_>, jobs: &[Job], report: &mut DrainReport) -> Result<()> {
    let store = p.store();
    for j in jobs {
        let Work::Consolidate { run_id } = &j.work else { continue };
        store.transaction(|| store.claim_jobs(&[j.id], p.limits.job_retry_base_millis))?;
        match crate::core::consolidate::resume(p, run_id).await {
            Ok(true) => {
                store.finish_jobs(&[j.id])?;
                report.consolidated = report.consolidated.saturating_add(1);
            }
            Ok(false) => store.requeue_job(j.id)?,
            Err(e) if e.is_busy() => {
                // From when it was refused: it waited for room first.
                let refused = p.room.now_millis().unwrap_or(p.now).max(p.now);
                store.defer_job(j.id, refused.saturating_add(BUSY_RETRY_MILLIS), &e.to_string())?;
                report.waiting = report.waiting.saturating_add(1);
            }
            Err(e) => {
                store.record_failure(j.id, &e.to_string())?;
                report.failed = report.failed.saturating_add(1);
            }
        }
    }
    Ok(())
}

/// How long a consolidation run that found no room for a window waits,
/// from its refusal, before it asks again: a moment, as it has just
/// waited for room as long as a request does, holding nothing (a longer
/// pause left room unused: 64 profiles consolidating with a model took
/// 139 s at 30 s, 85 s at 1 s; docs/bench/consolidation-memory.md).
pub const BUSY_RETRY_MILLIS: i64 = 1_000;

fn memory_ids(jobs: &[Job]) -> Vec<String> {
    jobs.iter().filter_map(Job::memory_id).map(str::to_string).collect()
}

/// Adds an attempt's outcome to the report: its count of work done, or
/// `jobs` failures.
fn tally(report: &mut DrainReport, outcome: Option<usize>, done: impl FnOnce(&mut DrainReport, usize), jobs: usize) {
    match outcome {
        Some(n) => done(report, n),
        None => report.failed = report.failed.saturating_add(jobs),
    }
}

/// `jobs` in groups run together: a job that has failed before alone,
/// the rest in groups of at most `max_count` jobs and `max_bytes` of
/// `size` (a group always takes one job, whatever its size).
pub fn isolate_suspects(jobs: &[Job], size: impl Fn(&Job) -> usize, max_bytes: usize, max_count: usize) -> Vec<Vec<Job>> {
    let mut groups: Vec<Vec<Job>> = Vec::new();
    let mut current: Vec<Job> = Vec::new();
    let mut bytes = 0usize;
    for j in jobs {
        if j.attempts > 0 {
            groups.push(vec![j.clone()]);
            continue;
        }
        let s = size(j);
        if !current.is_empty() && (current.len() >= max_count || bytes.saturating_add(s) > max_bytes) {
            groups.push(std::mem::take(&mut current));
            bytes = 0;
        }
        bytes = bytes.saturating_add(s);
        current.push(j.clone());
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
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
    let texts: Vec<String> = inputs.iter().map(|(_, queries, content)| truncated(embedding_text_of(queries, content), EMBED_TEXT_BYTES)).collect();
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
    // Vectors of two dimensions cannot be compared: fail the batch (it is
    // retried, and parked if it keeps failing) rather than finish a job
    // whose vector no query of the other dimension can reach.
    let vectors = crate::core::llm::protocol::one_dimension(vectors)?;
    // The embedder call yields: a memory may have been forgotten or
    // deleted meanwhile (its removal job is already queued behind this
    // one). Upsert only memories that still want a vector, so no vector
    // of deleted content is written after its delete.
    let ids: Vec<String> = inputs.iter().map(|(id, _, _)| id.clone()).collect();
    let still = store.wanting_vectors(&ids)?;
    let items: Vec<(String, Vec<f32>)> = ids.into_iter().zip(vectors).filter(|(id, _)| still.contains(id)).collect();
    if !items.is_empty() {
        let mut meta = store.vector_meta(&items.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>())?;
        let meta: Vec<crate::core::ports::VectorMeta> =
            items.iter().map(|(id, _)| meta.remove(id).ok_or_else(|| Error::storage(format!("memory {id} has no vector metadata")))).collect::<Result<_>>()?;
        p.index.upsert_with(&items, &meta).await?;
    }
    Ok(items.len())
}
