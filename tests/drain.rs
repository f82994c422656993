//! The background drain when what it reads is wrong or its storage fails:
//! nothing stalls unseen. A row of the outbox that does not read as a job
//! is parked, not left to fail every batch; a drain that fails is shown
//! by `stats` until one runs clean (a drain whose side work fails:
//! tests/consolidation.rs, the unreadable run record).

mod support;

use agent_memory::core::api::RememberRequest;
use agent_memory::core::ports::{Sql, SqlValue};
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
