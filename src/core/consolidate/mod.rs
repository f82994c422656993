//! Consolidation: a profile that grows for months stays lean and gets
//! sharper. A run walks the active memories window by window: find the
//! groups worth consolidating (`plan`), let the reasoner decide each
//! (rules locally, a prompt with a model), carry the decisions out with
//! their records (`apply`). Every change is recorded with the memories as
//! they were, and `undo` puts them back exactly.
//!
//! A run is durable: it is an outbox job, and each window is one
//! transaction that writes its changes, their records and the run's
//! cursor together. A run cut short (a restart, an eviction, a
//! `maxWindows`) loses and repeats nothing; the alarm goes on from the
//! cursor. A run stops at the last memory written when it began (by row,
//! not by id: an import keeps ids that sort anywhere), so it never
//! consolidates what it created itself, nor what came while it ran; that
//! counts toward the next run. A window is bounded by its memories' bytes
//! as well as their number: what planning holds grows with the words.
//!
//! What it does *not* do: touch memories that are not active (forgotten
//! and deleted ones stay gone), rewrite a memory's words with rules, or
//! run while another run is in progress (a second call continues it).
//! A run record that does not read is never taken for "no run": the
//! background job and the alarm's schedule fail on it (the job is parked,
//! the drain reports it), and only an explicit `consolidate` replaces it,
//! saying so in its report. Nothing is lost by that: each window's
//! changes were committed with their records.

pub mod apply;
pub mod plan;

use crate::core::api::ConsolidateRequest;
use crate::core::context::Profile;
use crate::core::error::{Error, Result};
use crate::core::ingest::supersede;
use crate::core::jobs::Work;
use crate::core::model::{ConsolidationRecord, ConsolidationReport, Memory};
use crate::core::store::META_CONSOLIDATION;
use serde::{Deserialize, Serialize};

/// Active memories read per window (one transaction each).
pub const WINDOW: usize = 1000;
/// Bytes of content a window reads at most (and the memory that crosses
/// it). Planning holds each memory's stems and pairs them: a thousand
/// memories of 30 KB took a window to 235 MiB of the Wasm memory the
/// isolate's profiles share, and 110 s. A thousand memories of a few
/// hundred bytes, the usual, fit whole.
pub const WINDOW_BYTES: usize = 512 * 1024;
/// The working memory one window holds at most, from its read to its
/// transaction, and across the reasoner's call: taken as room
/// ([`crate::core::ports::WorkingRoom`]) before the window is read, so
/// that the profiles of one isolate waiting on a model together hold no
/// more than the isolate's working set. Natively, a window at
/// [`WINDOW_BYTES`] held 2.5 MiB at most across the reasoner's call
/// (`HEAP_CASE=consolidate make bench-heap`: 1,000 memories of 512 bytes,
/// half of them near copies). Its peak, planning's stems (up to 9.6
/// MiB), comes between two awaits: one profile's at a time.
pub const WINDOW_ROOM_BYTES: usize = 3 * 1024 * 1024;
/// Windows one background run of the job goes through before it yields.
pub const WINDOWS_PER_DRAIN: usize = 4;
/// Windows a `consolidate` call goes through when it names no
/// `maxWindows`, dry or not: as many as one background run. Each window
/// is one reasoner call (a model call with Workers AI), so "every window"
/// would make one request call the model once per 1,000 memories, a
/// thousand times at a million. A run cut short loses nothing: it reports
/// `done: false` and the alarm goes on with the rest.
pub const DEFAULT_WINDOWS: u64 = WINDOWS_PER_DRAIN as u64;

/// A run in progress, as `meta` keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub id: String,
    /// The last memory id gone through.
    pub cursor: String,
    /// The newest memory id when the run began: where it stops.
    pub end: String,
    /// The last memory row written when the run began: what it reads
    /// at most (absent from runs begun before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_row: Option<i64>,
    pub active_before: i64,
}

impl Run {
    /// The window after the cursor: at most `limit` memories and
    /// [`WINDOW_BYTES`] of content.
    fn window(&self, store: &crate::core::store::Store<'_>, limit: usize) -> Result<Vec<Memory>> {
        store.active_window(&self.cursor, &self.end, self.end_row, limit, WINDOW_BYTES)
    }
}

/// `consolidate`: a dry run reports what a run would do over the first
/// `maxWindows` windows and changes nothing; otherwise the run in
/// progress (or a new one) goes through at most `maxWindows` windows now,
/// and the alarm does the rest. Without `maxWindows`, either goes through
/// [`DEFAULT_WINDOWS`].
pub async fn run(p: &Profile<'_>, req: ConsolidateRequest) -> Result<ConsolidationReport> {
    req.validate()?;
    let windows = req.max_windows.unwrap_or(DEFAULT_WINDOWS);
    if req.dry_run == Some(true) {
        return dry_run(p, windows).await;
    }
    let (mut run, replaced_run, new) = begin(p)?;
    let begun = new.then(|| run.clone());
    let mut report = ConsolidationReport { run_id: run.id.clone(), active_before: run.active_before, replaced_run, ..ConsolidationReport::default() };
    report.done = match go_on(p, &mut run, windows, &mut report).await {
        // No room for a first window in time: the call did nothing, and
        // a run it began is taken back with its job.
        Err(e) if e.is_busy() => {
            if let Some(begun) = &begun {
                unbegin(p, begun, report.replaced_run.as_deref())?;
            }
            return Err(e);
        }
        done => done?,
    };
    if !report.done {
        // The alarm does the rest: its job is due, even one parked after
        // failing (this call just went through windows of the run).
        p.store().revive_work(&Work::Consolidate { run_id: run.id.clone() })?;
    }
    report.active_after = p.store().active_count()?;
    Ok(report)
}

/// The background job: up to [`WINDOWS_PER_DRAIN`] windows of the run in
/// progress; whether the run is done.
pub async fn resume(p: &Profile<'_>, run_id: &str) -> Result<bool> {
    let Some(mut run) = current(p)?.filter(|r| r.id == run_id) else { return Ok(true) };
    go_on(p, &mut run, WINDOWS_PER_DRAIN as u64, &mut ConsolidationReport::default()).await
}

/// Up to `windows` windows of `run`; whether it is done. Two callers may
/// go on with one run at once (the alarm's job, and a `consolidate` call
/// while the job awaits the reasoner): a window whose run moved meanwhile
/// is not carried out, and the caller goes on from where the other left
/// the run, or stops if the other ended it.
async fn go_on(p: &Profile<'_>, run: &mut Run, windows: u64, report: &mut ConsolidationReport) -> Result<bool> {
    let mut went = 0u64;
    for _ in 0..windows {
        let stepped = match step(p, run, report).await {
            // No room for another window in time: the windows gone
            // through are kept, and the rest is left for later (only
            // when none went is the wait the caller's error: it did
            // nothing).
            Err(e) if e.is_busy() && went > 0 => break,
            stepped => stepped?,
        };
        match stepped {
            Stepped::Went => went = went.saturating_add(1),
            Stepped::Nothing => {
                finish(p, run)?;
                return Ok(true);
            }
            Stepped::Moved(Some(now)) if now.id == run.id => *run = now,
            Stepped::Moved(_) => return Ok(true),
        }
    }
    // Ended by another caller while this one waited for room: done.
    if current(p)?.is_none_or(|now| now.id != run.id) {
        return Ok(true);
    }
    // Whether a window is left: one memory read, no reasoner call.
    if run.window(&p.store(), 1)?.is_empty() {
        finish(p, run)?;
        return Ok(true);
    }
    Ok(false)
}

/// What one [`step`] did.
enum Stepped {
    /// Went through a window.
    Went,
    /// Found nothing left: the run is done.
    Nothing,
    /// Found the run's record not as it read it (another caller went on
    /// with it, or ended it): changed nothing. The record as it is.
    Moved(Option<Run>),
}

/// The `meta` key holding the last memory row the last run read: the
/// memories written since count toward the next.
const META_LAST_END: &str = "consolidation_last_end";

/// The alarm's schedule: begins a run when `every` memories were written
/// since the last run began (or since the profile began; deleted ones
/// count) and none is in progress. Whether it began one.
pub fn schedule(p: &Profile<'_>, every: i64) -> Result<bool> {
    if current(p)?.is_some() {
        return Ok(false);
    }
    let store = p.store();
    let last = match store.meta_get(META_LAST_END)? {
        None => 0,
        Some(v) => v.parse::<i64>().map_err(|e| Error::storage(format!("the count at the last consolidation's end does not read ({e}): {v:?}")))?,
    };
    if memory_rows(&store)? < last.saturating_add(every) {
        return Ok(false);
    }
    begin(p)?;
    Ok(true)
}

/// The last memory row written: how many memories the profile was ever
/// given, near enough (a row deleted last is written again).
fn memory_rows(store: &crate::core::store::Store<'_>) -> Result<i64> {
    Ok(i64::try_from(store.highest_rowids()?.1).unwrap_or(i64::MAX))
}

/// The run in progress, if any; an error if its record does not read.
pub fn current(p: &Profile<'_>) -> Result<Option<Run>> {
    read_run(p.store().meta_get(META_CONSOLIDATION)?)
}

/// A run record as `meta` keeps it: empty or absent is no run.
fn read_run(raw: Option<String>) -> Result<Option<Run>> {
    match raw.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => serde_json::from_str(&s).map(Some).map_err(|e| {
            Error::storage(format!("the consolidation run in progress does not read ({e}); an explicit consolidate call replaces it with a new run"))
        }),
    }
}

/// The run in progress, or a new one with its job queued (and `true`). A
/// record that does not read is replaced by the new run, and returned (as
/// it was stored) to be reported.
fn begin(p: &Profile<'_>) -> Result<(Run, Option<String>, bool)> {
    let store = p.store();
    let raw = store.meta_get(META_CONSOLIDATION)?;
    let replaced = match read_run(raw.clone()) {
        Ok(Some(run)) => return Ok((run, None, false)),
        Ok(None) => None,
        Err(_) => raw,
    };
    store.transaction(|| {
        let (end, end_row) = store.newest_memory()?;
        let end = end.unwrap_or_default();
        let id = format!("c-{}", crate::core::ids::memory_id(p.now, &end, 0));
        let run = Run { id: id.clone(), cursor: String::new(), end, end_row: Some(end_row), active_before: store.active_count()? };
        store.meta_set(META_CONSOLIDATION, &serde_json::to_string(&run)?)?;
        store.enqueue(&Work::Consolidate { run_id: id })?;
        Ok((run, replaced, true))
    })
}

/// Takes back `run`, which [`begin`] made (with `replaced`, the record it
/// replaced, put back), if it is still as it was begun and its job was
/// never claimed: nothing else went on with it meanwhile.
fn unbegin(p: &Profile<'_>, run: &Run, replaced: Option<&str>) -> Result<()> {
    let store = p.store();
    let job = Work::Consolidate { run_id: run.id.clone() };
    store.transaction(|| {
        // Its job claimed: the alarm took the run up meanwhile, and may be
        // deciding its first window now.
        if !run.cursor.is_empty() || current(p)?.as_ref() != Some(run) || store.work_claimed(&job)? {
            return Ok(());
        }
        store.meta_set(META_CONSOLIDATION, replaced.unwrap_or(""))?;
        store.finish_work(&job)
    })
}

/// One window: plan, decide, carry out with the cursor in one
/// transaction, if the run's record is still as `run` (the reasoner's
/// call may have let another caller move it).
async fn step(p: &Profile<'_>, run: &mut Run, report: &mut ConsolidationReport) -> Result<Stepped> {
    let mut room = p.room.take(WINDOW_ROOM_BYTES, "a consolidation window").await?;
    let store = p.store();
    // Another caller may have gone on with the run while this one waited.
    let now = current(p)?;
    if now.as_ref() != Some(&*run) {
        return Ok(Stepped::Moved(now));
    }
    let window = run.window(&store, WINDOW)?;
    let Some(last) = window.last().map(|m| m.id.clone()) else { return Ok(Stepped::Nothing) };
    report.examined = report.examined.saturating_add(window.len());
    let groups = not_undone(&store, plan::groups(&window, p.now, &authorities(&store, &window)?))?;
    room.end_turn();
    let decisions = p.reasoner.consolidate(&groups).await?;
    let mut next = run.clone();
    next.cursor = last;
    let done: std::result::Result<Vec<ConsolidationRecord>, Option<Run>> = store.transaction(|| {
        let now = current(p)?;
        if now.as_ref() != Some(&*run) {
            return Ok(Err(now));
        }
        // The members as they are now, read once: the reasoner's call may
        // have let another request change one. Groups share no member, so
        // carrying one out changes no other's.
        let ids: Vec<String> = groups.iter().flat_map(|g| g.members.iter().map(|m| m.id.clone())).collect();
        let current = apply::Current::read(&store, &ids)?;
        let mut done = Vec::new();
        let under = apply::Run { id: &run.id, max_memories: p.limits.max_memories };
        for (seq, (g, d)) in (0u64..).zip(groups.iter().zip(&decisions)) {
            done.extend(apply::apply(&store, &under, g, d, seq, &current)?);
        }
        store.meta_set(META_CONSOLIDATION, &serde_json::to_string(&next)?)?;
        Ok(Ok(done))
    })?;
    match done {
        Ok(done) => {
            *run = next;
            report.actions.extend(done);
            Ok(Stepped::Went)
        }
        Err(now) => Ok(Stepped::Moved(now)),
    }
}

/// Ends a run: its state and its job go.
fn finish(p: &Profile<'_>, run: &Run) -> Result<()> {
    let store = p.store();
    store.transaction(|| {
        // A safeguard (both callers read the record just before, with no
        // await since): a run ended by another caller, perhaps with a
        // new one begun since, leaves that one's record. (One that does
        // not read is replaced.)
        if let Ok(now) = current(p) {
            if now.is_none_or(|now| now.id != run.id) {
                return store.finish_work(&Work::Consolidate { run_id: run.id.clone() });
            }
        }
        store.meta_set(META_CONSOLIDATION, "")?;
        // What the run read; what came meanwhile counts toward the next.
        let read = match run.end_row {
            Some(row) => row,
            None => memory_rows(&store)?,
        };
        store.meta_set(META_LAST_END, &read.to_string())?;
        store.finish_work(&Work::Consolidate { run_id: run.id.clone() })
    })
}

/// What a run would do over the first `windows` windows, without
/// changing anything. `done` says whether that was the whole profile: a
/// dry run keeps no cursor, so one cut short previews the first windows
/// only (a larger `maxWindows` previews more).
async fn dry_run(p: &Profile<'_>, windows: u64) -> Result<ConsolidationReport> {
    let store = p.store();
    let (end, end_row) = store.newest_memory()?;
    let active = store.active_count()?;
    let mut report = ConsolidationReport { run_id: "dry-run".into(), dry_run: true, active_before: active, ..ConsolidationReport::default() };
    let mut walk = Run { id: String::new(), cursor: String::new(), end: end.unwrap_or_default(), end_row: Some(end_row), active_before: active };
    let mut retired = 0i64;
    for went in 0..windows {
        let mut room = match p.room.take(WINDOW_ROOM_BYTES, "a consolidation window").await {
            // As a run: the windows previewed are reported, not done.
            Err(e) if e.is_busy() && went > 0 => break,
            room => room?,
        };
        let window = walk.window(&store, WINDOW)?;
        let Some(last) = window.last() else { break };
        walk.cursor = last.id.clone();
        report.examined = report.examined.saturating_add(window.len());
        let groups = not_undone(&store, plan::groups(&window, p.now, &authorities(&store, &window)?))?;
        room.end_turn();
        let decisions = p.reasoner.consolidate(&groups).await?;
        for (g, d) in groups.iter().zip(&decisions) {
            if let Some((action, target, net)) = preview(g, d) {
                retired = retired.saturating_add(net);
                report.actions.push(ConsolidationRecord {
                    id: 0,
                    run_id: report.run_id.clone(),
                    action: action.into(),
                    target,
                    members: g.members.iter().map(|m| m.id.clone()).collect(),
                    reason: g.why.clone(),
                    at: crate::core::time::iso(p.now),
                    undone_at: None,
                });
            }
        }
    }
    // Whether a window is left: one memory read, no reasoner call.
    report.done = walk.window(&store, 1)?.is_empty();
    report.active_after = active.saturating_sub(retired);
    Ok(report)
}

/// `groups` but those an undone consolidation held (all their members
/// among its): a person took that grouping back, and a later run would
/// make it again, window after window.
fn not_undone(store: &crate::core::store::Store<'_>, groups: Vec<plan::Group>) -> Result<Vec<plan::Group>> {
    let ids: Vec<String> = groups.iter().flat_map(|g| g.members.iter().map(|m| m.id.clone())).collect();
    if ids.is_empty() {
        return Ok(groups);
    }
    let undone = store.undone_groupings(&ids)?;
    Ok(groups.into_iter().filter(|g| !undone.iter().any(|set| g.members.iter().all(|m| set.contains(&m.id)))).collect())
}

/// The weight of each memory's word in `window`, by id, as ingest
/// weighed it ([`supersede::authority_of`] over its sources' roles).
fn authorities(store: &crate::core::store::Store<'_>, window: &[Memory]) -> Result<plan::Authorities> {
    let sources: Vec<&String> = window.iter().flat_map(|m| m.source_message_ids.iter()).collect();
    let roles = store.message_roles(&sources)?;
    let of = |m: &Memory| supersede::authority_of(m.source_message_ids.iter().filter_map(|s| roles.get(s).map(String::as_str)));
    Ok(window.iter().map(|m| (m.id.clone(), of(m))).collect())
}

/// A decision as a dry run reports it: the action, its target, and how
/// many active memories fewer it leaves.
fn preview(g: &plan::Group, d: &crate::core::provider::Consolidation) -> Option<(&'static str, String, i64)> {
    use crate::core::provider::Consolidation::*;
    let fewer = (g.members.len() as i64).saturating_sub(1);
    let newest = g.members.last()?.id.clone();
    match d {
        Keep { .. } => None,
        Merge { survivor, .. } => g.members.iter().any(|m| &m.id == survivor).then(|| ("merge", survivor.clone(), fewer)),
        Supersede { .. } => Some(("supersede", newest, fewer)),
        Fold { .. } => Some(("fold", "(new)".into(), fewer)),
        Retire { .. } => Some(("retire", g.members.first()?.id.clone(), 1)),
    }
}
