//! What deleting a long session, judging one again (the alarm's `extract`
//! job) and loading a cold profile's turn directory hold at once. A
//! session has no bound: each call adds up to 500 messages of 32 KB, and
//! the first two paths read every message's text together, where a 64 MB
//! session took the Wasm memory every profile of an isolate shares past
//! its 128 MB; the load read 500 rows a statement, 16 MB of such texts.
//! Deleting now reads the ids alone, a retry reads the session a window at
//! a time (`ingest::RETRY_WINDOW_BYTES`), and the load a page of at most
//! 1 MiB of text.
//!
//! One test in this binary: the allocator counts every thread's blocks.

mod support;

use agent_memory::core::api::IngestRequest;
use agent_memory::core::error::{Error, Result};
use agent_memory::core::ingest::RETRY_WINDOW_BYTES;
use agent_memory::core::ops::Limits;
use agent_memory::core::ports::{LocalBoxFuture, Sql};
use agent_memory::core::provider::{Candidate, Classification, Consolidation, Group, Pass, QueryAnalysis, Reasoner, SynthesisInput, Transcript, Verdict};
use agent_memory::core::recall::directory::TurnDirectory;
use agent_memory::core::rules::Rules;
use std::cell::Cell;
use support::heap::{self, live, peak, reset_peak};
use support::*;

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

/// Calls into the one session, each of [`PER_CALL`] messages of 32 KB:
/// 24 MB together, six retry windows.
const CALLS: usize = 6;
const PER_CALL: usize = 128;

/// The rule-based reasoner, whose extraction fails while `down`.
struct Switch(Cell<bool>);

impl Reasoner for Switch {
    fn extract<'a>(&'a self, t: &'a Transcript, pass: Pass) -> LocalBoxFuture<'a, Result<Vec<Candidate>>> {
        if self.0.get() {
            return Box::pin(async { Err(Error::provider("model unavailable")) });
        }
        Rules.extract(t, pass)
    }
    fn verify<'a>(&'a self, t: &'a Transcript, c: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Verdict>>> {
        Rules.verify(t, c)
    }
    fn classify<'a>(&'a self, t: &'a Transcript, c: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Classification>>> {
        Rules.classify(t, c)
    }
    fn analyze<'a>(&'a self, q: &'a str) -> LocalBoxFuture<'a, Result<QueryAnalysis>> {
        Rules.analyze(q)
    }
    fn synthesize<'a>(&'a self, i: &'a SynthesisInput) -> LocalBoxFuture<'a, Result<String>> {
        Rules.synthesize(i)
    }
    fn consolidate<'a>(&'a self, g: &'a [Group]) -> LocalBoxFuture<'a, Result<Vec<Consolidation>>> {
        Rules.consolidate(g)
    }
}

/// A message of about 32 KB: one statement to remember, then filler.
fn message(call: usize, i: usize) -> String {
    let mut s = format!("My locker number for shift {call}-{i} is {}. ", call * 1000 + i);
    while s.len() < 32 * 1024 - 64 {
        s.push_str("The weather was grey and the walk home took a while. ");
    }
    s
}

#[test]
fn test_a_long_session_is_judged_again_loaded_and_deleted_a_window_or_page_at_a_time() {
    let sql = database();
    let turns = TurnDirectory::new();
    let model = Switch(Cell::new(true));
    let parts = Parts { reasoner: &model, ..Parts::default() };
    let mut session_bytes = 0usize;
    for call in 0..CALLS {
        let texts: Vec<String> = (0..PER_CALL).map(|i| message(call, i)).collect();
        session_bytes += texts.iter().map(String::len).sum::<usize>();
        let req = IngestRequest { messages: texts.iter().map(|t| msg("user", t)).collect(), session_id: Some("long".into()), metadata: Default::default() };
        let report = with_parts(&sql, APRIL_15, &turns, Limits::default(), parts, |p| block_on(p.ingest(req))).unwrap();
        assert_eq!((report.messages_stored, report.memories_stored), (PER_CALL, 0), "the model is down: messages kept, judged later");
    }
    assert!(session_bytes >= 4 * RETRY_WINDOW_BYTES, "a session of several windows");

    // The alarm's retry judges the whole session, a window at a time.
    model.0.set(false);
    let start = live();
    reset_peak();
    let drained = with_parts(&sql, APRIL_15 + 60_000, &turns, Limits::default(), parts, |p| block_on(p.drain())).unwrap();
    let retry_peak = peak().saturating_sub(start);
    assert_eq!(drained.extracted, 1);
    let lockers = with_parts(&sql, APRIL_15 + 60_000, &turns, Limits::default(), parts, |p| p.stats()).unwrap().memories;
    assert!(lockers >= (CALLS * PER_CALL) as i64, "every window judged: {lockers} memories of {} messages", CALLS * PER_CALL);

    // A cold start with no snapshot reads the rows a page of at most
    // 1 MiB of text at a time: one of 500 rows was 16 MB of 32 KB texts.
    sql.execute("DELETE FROM directory_snapshot", &[]).unwrap();
    let cold = TurnDirectory::new();
    let start = live();
    reset_peak();
    drop(cold.sync(&sql).unwrap());
    let load_peak = peak().saturating_sub(start).saturating_sub(cold.heap_bytes());
    assert!(cold.is_loaded());

    // Deleting it reads the ids of its messages, not their texts.
    let start = live();
    reset_peak();
    let deleted = with_parts(&sql, APRIL_15 + 120_000, &turns, Limits::default(), parts, |p| p.delete_session("long")).unwrap();
    let delete_peak = peak().saturating_sub(start);
    assert_eq!(deleted.deleted_messages, (CALLS * PER_CALL) as u64);

    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    println!(
        "session {:.1} MiB: retry held {:.1} MiB at its peak, a cold load {:.1} MiB beside what it keeps, delete {:.1} MiB (window {:.0} MiB)",
        mib(session_bytes),
        mib(retry_peak),
        mib(load_peak),
        mib(delete_peak),
        mib(RETRY_WINDOW_BYTES)
    );
    assert!(retry_peak < session_bytes / 2, "the retry held {:.1} MiB of a {:.1} MiB session", mib(retry_peak), mib(session_bytes));
    assert!(load_peak < session_bytes / 8, "a cold load held {:.1} MiB of a {:.1} MiB session", mib(load_peak), mib(session_bytes));
    assert!(delete_peak < session_bytes / 16, "the delete held {:.1} MiB of a {:.1} MiB session", mib(delete_peak), mib(session_bytes));
}
