//! The background drain when what it reads is wrong or its storage fails:
//! nothing stalls unseen. A row of the outbox that does not read as a job
//! is parked, not left to fail every batch; a drain that fails is shown
//! by `stats` until one runs clean (a drain whose side work fails:
//! tests/consolidation.rs, the unreadable run record).

mod support;

use agent_memory::core::api::RememberRequest;
use agent_memory::core::local::embed::HashEmbedder;
use agent_memory::core::ops::{Limits, Profile};
use agent_memory::core::ports::{LocalBoxFuture, Sql, SqlValue, VectorIndex};
use agent_memory::core::recall::directory::TurnDirectory;
use agent_memory::core::rules::Rules;
use serde_json::json;
use support::{block_on, database, with_profile, FailingAt, APRIL_15};

fn remember(content: &str) -> RememberRequest {
    serde_json::from_value(json!({ "content": content })).unwrap()
}

#[test]
fn test_an_outbox_row_that_does_not_read_as_a_job_is_parked_and_the_jobs_behind_it_run() {
    let sql = database();
    // A known kind, due, but its subject a blob: no job can be read from it.
    sql.execute(
        "INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) VALUES ('embed', X'00ff', 0, ?, 'then')",
        &[SqlValue::Integer(APRIL_15)],
    )
    .unwrap();
    with_profile(&sql, APRIL_15, |p| block_on(p.remember(remember("The staging cluster runs in Oslo.")))).unwrap();
    with_profile(&sql, APRIL_15, |p| {
        let report = block_on(p.drain()).unwrap();
        assert_eq!((report.parked, report.embedded, report.pending), (1, 1, 0), "{report:?}");
        let stats = p.stats().unwrap();
        assert_eq!((stats.parked_jobs, stats.vectors, stats.drain_error.as_deref()), (1, 1, None), "{stats:?}");
    });
    let why = sql.query("SELECT last_error FROM outbox WHERE parked = 1", &[]).unwrap();
    assert!(why[0][0].opt_string().unwrap().contains("does not read as a job (text kind, blob subject"), "{why:?}");
}

#[test]
fn test_a_failed_drain_is_shown_by_stats_until_one_runs_clean() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| block_on(p.remember(remember("Backups are kept for thirty days.")))).unwrap();
    let failing = FailingAt { inner: &sql, pattern: "SELECT id, kind, memory_id, attempts FROM outbox", n: std::cell::Cell::new(1) };
    with_profile(&failing, APRIL_15, |p| {
        let e = block_on(p.drain()).unwrap_err();
        assert!(e.message().contains("injected failure"), "{e}");
    });
    with_profile(&sql, APRIL_15 + 1, |p| {
        let shown = p.stats().unwrap().drain_error.expect("the failure is shown");
        assert!(shown.starts_with("2026-04-15T") && shown.ends_with("injected failure"), "{shown}");
        let report = block_on(p.drain()).unwrap();
        assert_eq!((report.embedded, report.pending), (1, 0), "the next drain does the work");
        assert_eq!(p.stats().unwrap().drain_error, None, "cleared once a drain runs clean");
    });
}

/// The local vector index with a delete that fails: a vector index that
/// is down for removals.
struct FailingDelete<'a>(agent_memory::core::local::vector::SqlVectorIndex<'a>);

impl VectorIndex for FailingDelete<'_> {
    fn upsert<'a>(&'a self, items: &'a [(String, Vec<f32>)]) -> LocalBoxFuture<'a, agent_memory::core::error::Result<()>> {
        self.0.upsert(items)
    }
    fn delete<'a>(&'a self, _ids: &'a [String]) -> LocalBoxFuture<'a, agent_memory::core::error::Result<()>> {
        Box::pin(async { Err(agent_memory::core::error::Error::provider("the index is down")) })
    }
    fn query<'a>(&'a self, v: &'a [f32], k: usize) -> LocalBoxFuture<'a, agent_memory::core::error::Result<Vec<(String, f32)>>> {
        self.0.query(v, k)
    }
}

/// A profile over `sql` at `now` whose index fails removals, when `down`.
fn with_index<T>(sql: &dyn Sql, now: i64, down: bool, f: impl FnOnce(&Profile<'_>) -> T) -> T {
    use agent_memory::core::local::vector::SqlVectorIndex;
    let turns = TurnDirectory::new();
    let up = SqlVectorIndex { sql };
    let failing = FailingDelete(SqlVectorIndex { sql });
    let index: &dyn VectorIndex = if down { &failing } else { &up };
    let p = Profile {
        name: "test/p",
        sql,
        reasoner: &Rules,
        embedder: &HashEmbedder,
        index,
        turns: Some(&turns),
        now,
        limits: Limits::default(),
        memory: Default::default(),
        room: &agent_memory::core::ports::Unshared,
    };
    f(&p)
}

fn vectors(sql: &dyn Sql) -> i64 {
    sql.query("SELECT COUNT(*) FROM vectors", &[]).unwrap()[0][0].as_i64().unwrap()
}

#[test]
fn test_a_removal_retried_after_its_memory_came_back_leaves_the_new_vector() {
    let sql = database();
    let m = with_index(&sql, APRIL_15, false, |p| block_on(p.remember(remember("The staging cluster runs in Oslo.")))).unwrap();
    with_index(&sql, APRIL_15, false, |p| assert_eq!(block_on(p.drain()).unwrap().embedded, 1));
    let before = with_index(&sql, APRIL_15 + 1, false, |p| p.get(&m.id)).unwrap();
    with_index(&sql, APRIL_15 + 1, false, |p| p.forget(&m.id)).unwrap();
    // The index fails the removal, which backs off.
    assert_eq!(with_index(&sql, APRIL_15 + 2, true, |p| block_on(p.drain())).unwrap().failed, 1);
    // The memory comes back, as a consolidation's undo brings it, and its
    // new vector is written before the removal is due again.
    agent_memory::core::store::Store::new(&sql, APRIL_15 + 3).restore_memory(&before.memory).unwrap();
    assert_eq!(with_index(&sql, APRIL_15 + 4, false, |p| block_on(p.drain())).unwrap().embedded, 1);
    let r = with_index(&sql, APRIL_15 + 3_600_000, false, |p| block_on(p.drain())).unwrap();
    assert_eq!(r.failed, 0, "{r:?}");
    assert_eq!(vectors(&sql), 1, "the removal took the vector of a memory that wants it");
    assert_eq!(sql.query("SELECT COUNT(*) FROM outbox", &[]).unwrap()[0][0].as_i64(), Some(0));
}

#[test]
fn test_a_wipe_keeps_the_removals_of_memories_deleted_before_it() {
    let sql = database();
    let m = with_index(&sql, APRIL_15, false, |p| block_on(p.remember(remember("Backups are kept for thirty days.")))).unwrap();
    with_index(&sql, APRIL_15, false, |p| assert_eq!(block_on(p.drain()).unwrap().embedded, 1));
    // Deleted for good; its vector's removal waits in the outbox (the
    // index is down).
    with_index(&sql, APRIL_15 + 1, false, |p| p.delete(&m.id)).unwrap();
    assert_eq!(with_index(&sql, APRIL_15 + 2, true, |p| block_on(p.drain())).unwrap().failed, 1);
    with_index(&sql, APRIL_15 + 3, false, |p| p.wipe()).unwrap();
    with_index(&sql, APRIL_15 + 3_600_000, false, |p| block_on(p.drain())).unwrap();
    assert_eq!(vectors(&sql), 0, "the deleted memory's vector outlived the wipe");
}

/// Drains `n` times, an hour apart from `from` (every backoff passed),
/// the index failing removals when `down`.
fn drain_hours(sql: &dyn Sql, from: i64, n: i64, down: bool) {
    for i in 0..n {
        with_index(sql, from + i * 3_600_000, down, |p| block_on(p.drain()).unwrap());
    }
}

const HOUR: i64 = 3_600_000;

/// A removal parked while the index was down is tried once more a day
/// later, and then the deleted memory's vector goes; meanwhile `stats`
/// shows the parked job with its error and when it is tried again.
#[test]
fn test_a_parked_removal_is_tried_again_a_day_later_and_shown_with_its_error_meanwhile() {
    let sql = database();
    let m = with_index(&sql, APRIL_15, false, |p| block_on(p.remember(remember("My bank PIN hint is the cat's birthday.")))).unwrap();
    drain_hours(&sql, APRIL_15, 1, false);
    assert_eq!(vectors(&sql), 1);
    with_index(&sql, APRIL_15 + 1_000, true, |p| p.delete(&m.id)).unwrap();
    drain_hours(&sql, APRIL_15 + HOUR, 10, true);
    let parked_at = APRIL_15 + 11 * HOUR;
    let stats = with_index(&sql, parked_at, false, |p| p.stats().unwrap());
    assert_eq!(stats.parked_jobs, 1, "{stats:?}");
    let shown = &stats.parked[0];
    assert_eq!((shown.kind.as_str(), shown.subject.as_deref()), ("unvector", Some(m.id.as_str())));
    assert!(shown.error.contains("parked after 8 attempts") && shown.error.contains("the index is down"), "{shown:?}");
    assert!(shown.retry_at.is_some(), "{shown:?}");
    // The index is back; within the day nothing is tried (no spin)...
    let early = with_index(&sql, parked_at + 12 * HOUR, false, |p| block_on(p.drain()).unwrap());
    assert_eq!((early.revived, early.removed), (0, 0), "{early:?}");
    assert_eq!(vectors(&sql), 1);
    // ...and the alarm is asked for when the day is up.
    let next = early.next_at.expect("the alarm comes back for the parked job");
    assert!(next > parked_at + 12 * HOUR && next <= parked_at + 25 * HOUR, "{next}");
    drain_hours(&sql, parked_at + 25 * HOUR, 2, false);
    assert_eq!(vectors(&sql), 0, "the deleted memory's vector went once the removal was tried again");
    assert_eq!(with_index(&sql, parked_at + 27 * HOUR, false, |p| p.stats().unwrap().parked_jobs), 0);
}

/// A parked job that fails again is parked again for another day, with
/// one attempt spent: never a spin.
#[test]
fn test_a_parked_job_that_fails_again_is_parked_for_another_day_after_one_attempt() {
    let sql = database();
    let m = with_index(&sql, APRIL_15, false, |p| block_on(p.remember(remember("The staging cluster runs in Oslo.")))).unwrap();
    drain_hours(&sql, APRIL_15, 1, false);
    with_index(&sql, APRIL_15 + 1_000, true, |p| p.delete(&m.id)).unwrap();
    drain_hours(&sql, APRIL_15 + HOUR, 10, true);
    let day = APRIL_15 + 36 * HOUR;
    let revived = with_index(&sql, day, true, |p| block_on(p.drain()).unwrap());
    assert_eq!((revived.revived, revived.failed, revived.parked, revived.pending), (1, 1, 1, 0), "tried once, parked again: {revived:?}");
    let after = with_index(&sql, day + HOUR, true, |p| block_on(p.drain()).unwrap());
    assert_eq!((after.revived, after.failed), (0, 0), "not tried again within the day: {after:?}");
    let stats = with_index(&sql, day + 2 * HOUR, true, |p| p.stats().unwrap());
    assert_eq!((stats.parked_jobs, stats.pending_jobs, stats.failed_jobs), (1, 0, 0));
    let retry = stats.parked[0].retry_at.clone().unwrap();
    assert!(retry.as_str() > "2026-04-17T", "a day later again: {retry}");
}

/// The statements that find a job by its subject (a memory, a session, a
/// consolidation run) read it through an index, not by scanning the
/// outbox, which an ingest of thousands of memories fills with their
/// embedding jobs until the alarm drains them.
#[test]
fn test_jobs_are_found_by_their_subject_through_an_index() {
    use agent_memory::core::jobs::Work;
    let sql = database();
    let ingested = with_profile(&sql, APRIL_15, |p| block_on(p.ingest(support::spec_conversation())).unwrap());
    let recorded = support::Recorded::new(&sql, |s| s.contains("outbox") && s.contains("memory_id"));
    let store = agent_memory::core::store::Store::new(&recorded, APRIL_15);
    let run = Work::Consolidate { run_id: "run-1".into() };
    store.revive_work(&run).unwrap();
    assert!(!store.work_claimed(&run).unwrap());
    store.finish_work(&run).unwrap();
    store.delete_session_jobs("s1").unwrap();
    with_profile(&recorded, APRIL_15 + 1, |p| p.delete(&ingested.memories[0].id).unwrap());
    let seen = recorded.seen.borrow().clone();
    assert!(seen.len() >= 5, "{seen:?}");
    for (statement, params) in seen {
        let scans = support::table_scans(&sql, &statement, &params);
        assert!(scans.iter().all(|s| !s.starts_with("SCAN outbox")), "{statement}: {scans:?}");
    }
}

/// A backlog of session extractions (a model outage during a bulk
/// ingest) does not hold back the jobs queued after it: the drain reads a
/// few extractions, as many as it runs, beside the other jobs. (Read by id
/// with the rest, 512 of them filled every read, and a memory remembered
/// after them waited for its vector until fewer were left.)
#[test]
fn test_a_backlog_of_session_extractions_does_not_hold_back_the_jobs_queued_after_it() {
    use agent_memory::core::background::EXTRACT_BATCH;
    use agent_memory::core::jobs::Work;
    let sql = database();
    let store = agent_memory::core::store::Store::new(&sql, APRIL_15);
    store.transaction(|| (0..600).try_for_each(|i| store.enqueue(&Work::Extract { session_id: format!("s{i}") }).map(|_| ()))).unwrap();
    with_profile(&sql, APRIL_15, |p| block_on(p.remember(remember("The staging cluster runs in Oslo.")))).unwrap();
    with_profile(&sql, APRIL_15, |p| {
        let report = block_on(p.drain()).unwrap();
        assert_eq!((report.extracted, report.embedded), (EXTRACT_BATCH, 1), "{report:?}");
        assert_eq!(report.pending, 600 - EXTRACT_BATCH as i64, "{report:?}");
    });
}

/// Work queued again while the same work waits untried is queued once
/// (faulted ingests of one session: one judging of it, which reads every
/// message when it runs); once that one has been tried (it may be running,
/// having read the session before the new write), another is queued.
#[test]
fn test_work_queued_again_while_an_untried_copy_waits_is_queued_once() {
    use agent_memory::core::jobs::Work;
    let sql = database();
    let store = agent_memory::core::store::Store::new(&sql, APRIL_15);
    let work = Work::Extract { session_id: "s1".into() };
    let queued = || sql.query("SELECT COUNT(*) FROM outbox WHERE kind = 'extract' AND memory_id = 's1'", &[]).unwrap()[0][0].as_i64().unwrap();
    // An ingest's guard (due later, removed by id when its call ends) is
    // not the judging its faults need.
    let guard = store.enqueue_at(&work, APRIL_15 + 900_000).unwrap();
    store.enqueue_unless_waiting(&work).unwrap();
    assert_eq!(queued(), 2);
    store.finish_jobs(&[guard]).unwrap();
    store.enqueue_unless_waiting(&work).unwrap();
    store.enqueue_unless_waiting(&work).unwrap();
    assert_eq!(queued(), 1);
    let id = sql.query("SELECT id FROM outbox", &[]).unwrap()[0][0].as_i64().unwrap();
    store.transaction(|| store.claim_jobs(&[id], 1000)).unwrap();
    store.enqueue_unless_waiting(&work).unwrap();
    assert_eq!(queued(), 2, "the one tried may have read the session already");
    // Another session's work is its own.
    store.enqueue_unless_waiting(&Work::Extract { session_id: "s2".into() }).unwrap();
    assert_eq!(sql.query("SELECT COUNT(*) FROM outbox", &[]).unwrap()[0][0].as_i64(), Some(3));
}

/// Memories whose time is up are expired by the drain all at once, each
/// with its vector's removal queued and run.
#[test]
fn test_the_drain_expires_every_memory_whose_time_is_up_and_removes_their_vectors() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for (content, ttl) in
            [("The office wifi code is ORANGE.", Some(60)), ("Parking is on level two.", Some(60)), ("Lunch is at noon.", Some(60)), ("The CEO is Dana.", None)]
        {
            let req: RememberRequest = serde_json::from_value(json!({ "content": content, "ttlSeconds": ttl })).unwrap();
            block_on(p.remember(req)).unwrap();
        }
        block_on(p.drain()).unwrap();
        assert_eq!(p.stats().unwrap().vectors, 4);
    });
    with_profile(&sql, APRIL_15 + 61_000, |p| {
        let report = block_on(p.drain()).unwrap();
        assert_eq!((report.expired, report.removed), (3, 3), "{report:?}");
        let stats = p.stats().unwrap();
        assert_eq!((stats.vectors, stats.pending_jobs), (1, 0), "{stats:?}");
        let left = p.list(Default::default()).unwrap().memories;
        assert_eq!(left.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["The CEO is Dana."]);
        assert_eq!(block_on(p.drain()).unwrap().expired, 0, "expired once");
    });
}

/// A job parked for a kind this build did not know (a rollback), known
/// again, comes back with the attempts it had, not one short of the cap:
/// it was never tried.
#[test]
fn test_a_job_parked_for_its_kind_is_revived_with_the_attempts_it_had() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| block_on(p.remember(remember("The staging cluster runs in Oslo.")))).unwrap();
    sql.execute("UPDATE outbox SET parked = 1, last_error = 'parked: this version knows no job of kind ''embed'''", &[]).unwrap();
    let store = agent_memory::core::store::Store::new(&sql, APRIL_15 + 1);
    assert_eq!(store.revive_parked(agent_memory::core::background::MAX_ATTEMPTS).unwrap(), 1);
    let attempts = sql.query("SELECT attempts FROM outbox", &[]).unwrap()[0][0].as_i64();
    assert_eq!(attempts, Some(0));
    with_profile(&sql, APRIL_15 + 1, |p| assert_eq!(block_on(p.drain()).unwrap().embedded, 1));
}

#[test]
fn test_a_waiting_job_whose_time_does_not_read_is_due_at_once_then_parked_not_spun() {
    let sql = database();
    // The only job, its time text: never due by comparison, and a minimum
    // that does not read. The alarm is set for now, the drain parks it,
    // and nothing is due after.
    sql.execute("INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) VALUES ('embed', 'm1', 0, 'soon', 'then')", &[]).unwrap();
    with_profile(&sql, APRIL_15, |p| {
        assert_eq!(p.next_due().unwrap(), Some(0), "due at once");
        let report = block_on(p.drain()).unwrap();
        assert_eq!((report.parked, report.pending, report.next_at), (1, 0, None), "{report:?}");
        assert_eq!(p.next_due().unwrap(), None, "parked, it sets no alarm again");
    });
    let why = sql.query("SELECT last_error FROM outbox WHERE parked = 1", &[]).unwrap();
    assert!(why[0][0].opt_string().unwrap().contains("text time"), "{why:?}");
}

#[test]
fn test_an_expiry_that_does_not_read_is_a_storage_error_not_nothing_due() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| block_on(p.remember(remember("The staging cluster runs in Oslo.")))).unwrap();
    sql.execute("UPDATE memories SET expires_at = '0000 never'", &[]).unwrap();
    with_profile(&sql, APRIL_15, |p| {
        let err = p.next_due().unwrap_err();
        assert!(err.is_storage(), "{err:?}");
    });
}
