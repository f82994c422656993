//! One key said by an agent in many sessions: `make bench-key-holders`.
//!
//! An agent's statement replaces a holder of its key only in its own
//! session (`ingest::supersede`), so a support agent's "The refund
//! reference is RF-…" stays live once per call: after N calls the key
//! has N live holders. This measures what that costs, natively: ingest
//! per call (which looks up the key's holders to decide what a new statement
//! replaces) and recall of a question the key matches (the key channel
//! counts every holder and ranks at most its depth), beside the same
//! calls with the statement said by the user, whose newer statement
//! replaces the older, so the key keeps one holder. Then, with every
//! holder's digest cleared (as stored before schema version 14), the
//! next call, which reads them whole and writes theirs, and the one after.
//!
//! Ingest finds the holders it may replace by index
//! (`Store::active_key_holders`).
//!
//! Usage: `cargo bench --bench key_holders -- [N]` (default 2000 calls).
//! It prints figures; it asserts nothing about time.

#[path = "../support/mod.rs"]
mod support;

use agent_memory::core::api::{IngestRequest, RecallRequest};
use agent_memory::core::ports::Sql;
use agent_memory::core::recall::{channels, RecallScope};
use std::time::Instant;
use support::*;

/// Calls between two ingest figures.
const STEP: usize = 250;
/// Recalls timed at the end.
const RECALLS: usize = 20;
const QUESTION: &str = "What is the refund reference for order number 17?";

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(2000);
    for role in ["assistant", "user"] {
        println!("refund reference said by the {role}, {n} calls:");
        run(role, n);
    }
}

const MINUTE: i64 = 60_000;

/// Call `i`: the user's complaint and `role`'s refund reference.
fn call(role: &str, i: usize) -> IngestRequest {
    IngestRequest {
        messages: vec![
            msg("user", &format!("I was charged twice for order number {i}.")),
            msg(role, &format!("The refund reference is RF-{:06}, and it should reach your card within five days.", 100_000 + i)),
        ],
        session_id: Some(format!("call-{i}")),
        metadata: Default::default(),
    }
}

fn run(role: &str, n: usize) {
    let sql = database();
    let mut t = Instant::now();
    let mut line = String::from("  ingest ms/call by calls so far:");
    for i in 0..n {
        let req = call(role, i);
        with_profile(&sql, APRIL_15 + i as i64 * MINUTE, |p| block_on(p.ingest(req)).expect("ingest"));
        if (i + 1) % STEP == 0 {
            line.push_str(&format!(" {}:{:.1}", i + 1, t.elapsed().as_secs_f64() * 1000.0 / STEP as f64));
            t = Instant::now();
        }
    }
    println!("{line}");
    with_profile(&sql, APRIL_15 + n as i64 * MINUTE, |p| {
        let q = RecallRequest { query: QUESTION.into(), options: Default::default() };
        let t = Instant::now();
        for _ in 0..RECALLS {
            block_on(p.recall(q.clone())).expect("recall");
        }
        let recall_ms = t.elapsed().as_secs_f64() * 1000.0 / RECALLS as f64;
        let keys = agent_memory::core::rules::query::analyze(QUESTION).keys;
        let scope = RecallScope::live_at(APRIL_15 + n as i64 * MINUTE);
        let t = Instant::now();
        let mut ranked = 0;
        for _ in 0..RECALLS {
            ranked = channels::key(p.sql, &keys, &scope).expect("key channel").ids.len();
        }
        let key_ms = t.elapsed().as_secs_f64() * 1000.0 / RECALLS as f64;
        let holders = p
            .sql
            .query("SELECT COUNT(*) FROM memories WHERE key IN ('project.refund_reference', 'user.refund_reference') AND status = 'active'", &[])
            .expect("holders")[0][0]
            .as_i64()
            .unwrap_or(0);
        println!("  live holders of the key: {holders}; recall {recall_ms:.1} ms, of which the key channel {key_ms:.2} ms ({ranked} ranked)");
    });
    // As a profile stored before schema version 14 holds them: no holder
    // has its words' digest. The next call reads them whole and writes
    // theirs; the one after finds them by index again.
    sql.execute("UPDATE memories SET undated_digest = NULL", &[]).expect("clear digests");
    let mut line = String::from("  holders without a digest (stored before version 14), ingest ms:");
    for (k, label) in [(n, "first call"), (n + 1, "next call")] {
        let t = Instant::now();
        with_profile(&sql, APRIL_15 + k as i64 * MINUTE, |p| block_on(p.ingest(call(role, k))).expect("ingest"));
        line.push_str(&format!(" {label} {:.1}", t.elapsed().as_secs_f64() * 1000.0));
    }
    println!("{line}");
}
