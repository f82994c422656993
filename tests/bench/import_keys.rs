//! One key's values imported beside as many the profile holds:
//! `make bench-import-keys`.
//!
//! An import weighs each active value of a key it writes against the
//! profile's active values of that key and owner, as ingest would have
//! had they been said in that order (`portable::import`'s `settle_keys`).
//! Here a first file writes M values of one key, each an agent's in one
//! session, said in 2025; a second writes N values of the same key in
//! another session, said by the user in 2020 (older: none replaces a
//! held one, and none is replaced, an agent's word not reaching another
//! session), or (`agent`) said by the agent in the first session in 2030
//! (each newer, the first replacing all M). Each case prints the second
//! import's time and the active values left.
//!
//! Usage: `cargo bench --bench import_keys -- [M,N]` (default 16000,16000;
//! 27900,31500 fill two files to the 8 MiB import limit). It prints
//! figures; it asserts nothing about time.

#[path = "../support/mod.rs"]
mod support;

use agent_memory::core::ids;
use agent_memory::core::ports::Sql;
use serde_json::json;
use std::time::Instant;
use support::*;

/// A ULID-shaped id: `file` in its high bits, `i` below.
fn ulid(file: u32, i: usize) -> String {
    const CROCKFORD: &[u8] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut n = (u128::from(file) << 40) | i as u128;
    let mut s = vec![b'0'; 26];
    for c in s.iter_mut().rev() {
        *c = CROCKFORD[(n % 32) as usize];
        n /= 32;
    }
    String::from_utf8(s).expect("ascii")
}

fn header() -> String {
    json!({"kind": "header", "format": "agent-memory-export", "version": 1}).to_string()
}

fn memory(id: String, text: &str, session: &str, sources: &[String], at: &str) -> String {
    json!({"kind": "memory", "id": id, "type": "fact", "key": "k", "summary": text, "content": text, "sessionId": session,
           "sourceMessageIds": sources, "searchQueries": [], "status": "active", "createdAt": at, "updatedAt": at})
    .to_string()
}

fn run(m: usize, n: usize, agent: bool) {
    let sql = database();
    let said = ids::message_id("s1", "assistant", "ok");
    let mut first = vec![
        header(),
        json!({"kind": "message", "id": said, "sessionId": "s1", "role": "assistant", "content": "ok", "position": 0, "createdAt": "2025-01-01T00:00:00.000Z"})
            .to_string(),
    ];
    first.extend((0..m).map(|i| memory(ulid(1, i), &format!("h{i}"), "s1", std::slice::from_ref(&said), "2025-01-01T00:00:00.000Z")));
    let (session, sources, at) = if agent { ("s1", vec![said.clone()], "2030-01-01T00:00:00.000Z") } else { ("s2", vec![], "2020-01-01T00:00:00.000Z") };
    let second: Vec<String> = std::iter::once(header()).chain((0..n).map(|i| memory(ulid(2, i), &format!("p{i}"), session, &sources, at))).collect();
    let (first, second) = (first.join("\n"), second.join("\n"));
    let t = Instant::now();
    with_profile(&sql, APRIL_15, |p| p.import(&first)).expect("first import");
    let t1 = t.elapsed();
    let t = Instant::now();
    with_profile(&sql, APRIL_15, |p| p.import(&second)).expect("second import");
    let t2 = t.elapsed();
    let active = sql.query("SELECT count(*) FROM memories WHERE status = 'active'", &[]).expect("count");
    let case = if agent { "agent, newer, same session" } else { "user, older, another session" };
    println!(
        "M={m} ({:.1} MB) in {:.2} s; N={n} {case} ({:.1} MB) in {:.2} s; active after: {:?}",
        first.len() as f64 / 1e6,
        t1.as_secs_f64(),
        second.len() as f64 / 1e6,
        t2.as_secs_f64(),
        active.first().and_then(|r| r.first())
    );
}

fn main() {
    let arg = std::env::args().skip(1).find(|a| a.contains(',')).unwrap_or_else(|| "16000,16000".into());
    let (m, n) = arg.split_once(',').and_then(|(m, n)| Some((m.parse().ok()?, n.parse().ok()?))).expect("M,N");
    for agent in [false, true] {
        run(m, n, agent);
    }
}
