//! `make bench-heap`: the Rust heap one large ingest needs, natively, step
//! by step along the path the Worker and its profile object run it.
//!
//! In workerd (and on Cloudflare) a Rust Worker's fetch handler and its
//! Durable Objects may share one isolate and so one Wasm linear memory,
//! which grows to its high-water mark and never shrinks. The mark of one
//! request is what the Worker still holds while it waits for the object,
//! plus the object's own peak. `make bench-peaks` reads that mark in
//! workerd but cannot say where it comes from; this counts every
//! allocation of the same Rust code natively (a counting global
//! allocator), over native SQLite (whose memory, like the Durable
//! Object's, is not on the Rust heap), and prints the live bytes held and
//! the peak reached at each step:
//!   1. the Worker: the body read, routed (parsed), and written as the
//!      internal call it posts to the object; what it holds while it waits;
//!   2. the object: the call read, decoded, prepared, run; its reply;
//!   3. the Worker again: the reply read and put in the envelope.
//!
//! The body is the published limits' worst case, as `make bench-peaks`
//! sends it: HEAP_MESSAGES (default 500) messages of 32 KB of questions
//! with a statement now and then. HEAP_CASE=prose: prose instead, every
//! sentence a statement (and so a memory); HEAP_CASE=import: an import of
//! the export of a profile that took such an ingest (230 messages stay
//! under the 8 MB import limit). HEAP_CASE=consolidate: one consolidation
//! window of several shapes at its byte bound instead (see
//! `consolidate_windows`). Natively, not Wasm: allocation sizes
//! match (the same code and serde), the allocator's slack does not.
//!
//! Usage: `cargo bench --bench heap [-- MESSAGES]`.

#[path = "../support/mod.rs"]
mod support;

use agent_memory::core::op::Call;
use agent_memory::core::ops::Answer;
use agent_memory::core::rest::{self, Incoming, ObjectCall, Route};
use support::heap::{self, live, peak, reset_peak};
use support::*;

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

const MIB: f64 = 1_048_576.0;

/// One line of the table: the step, live bytes after it, the peak within it.
fn step(rows: &mut Vec<(String, usize, usize)>, name: &str) {
    rows.push((name.to_string(), live(), peak()));
    reset_peak();
}

fn main() {
    let messages: usize = std::env::args().skip(1).find(|a| !a.starts_with('-')).and_then(|a| a.parse().ok()).unwrap_or(500);
    let case = std::env::var("HEAP_CASE").unwrap_or_else(|_| "ingest".into());
    if case == "consolidate" {
        return consolidate_windows();
    }
    let sql = database();
    let ingest = heap::ingest_body_of(messages, "s1", case == "prose");
    // An import's file: the export of a profile that took such an ingest.
    let (what, route, content_type, body) = match case.as_str() {
        "import" => {
            let source = database();
            let v: serde_json::Value = serde_json::from_slice(&ingest).expect("body");
            with_profile(&source, APRIL_15, |p| block_on(p.run(agent_memory::core::op::Op::Ingest, v)).expect("fill"));
            let file = with_profile(&source, APRIL_15, |p| p.export(Default::default()).expect("export"));
            ("import", "import", "application/x-ndjson", file.into_bytes())
        }
        _ => ("ingest", "ingest", "application/json", ingest),
    };
    // What was live before the body was read.
    let before = live() - body.capacity();
    let body_len = body.len();
    reset_peak();
    let mut rows = Vec::new();
    step(&mut rows, "worker: body read");

    // 1. The Worker (src/cloudflare/mod.rs `fetch`, `handle`, `call_object_text`).
    let path = format!("/accounts/a/agent-memory/namespaces/ns/profiles/p/{route}");
    let incoming = Incoming { method: "POST", path: &path, query: "", content_type: Some(content_type), body: &body };
    let Route::Profile(mut call) = rest::route(&incoming).expect("route") else { panic!("not a profile route") };
    drop(body);
    step(&mut rows, "worker: body routed (parsed), dropped");
    let args = call.take_args();
    let internal =
        ObjectCall::post(&call.object_name(), call.op.name(), args, rest::Asks { unread: call.unread(), pieces: rest::envelope_ends(&call).is_some() })
            .expect("internal call");
    step(&mut rows, "worker: internal call written");
    // Handed to the platform (JavaScript strings, off the Wasm memory),
    // and read by the object as strings of its own: the call, and an
    // import's file sent beside it.
    let text = internal.call.as_str().to_string();
    let raw = internal.raw.as_deref().map(str::to_string);
    drop(internal);
    let worker_holds = live() - text.len() - raw.as_ref().map_or(0, String::len);

    // 2. The object (src/cloudflare/profile_object.rs `fetch`, `checked_then_run`).
    let decoded = match raw {
        Some(raw) => ObjectCall::read_posted(&text, raw).expect("read call"),
        None => ObjectCall::read(&text).expect("read call"),
    };
    drop(text);
    step(&mut rows, "object: call read");
    let out = with_profile(&sql, APRIL_15, |p| {
        let op = agent_memory::core::op::Op::parse(&decoded.op).expect("op");
        let call = Call::decode(op, decoded.args).expect("decode");
        let mut prepared = p.prepare_as(call, false).expect("prepare");
        if decoded.unread {
            prepared = prepared.unread();
        }
        if decoded.pieces {
            prepared = prepared.in_pieces();
        }
        p.admit(&prepared).expect("admit");
        block_on(p.answer_prepared(prepared)).expect("the call")
    });
    let reply_len;
    match out {
        // An ingest's report: its text in pieces, sent as they are; the
        // Worker streams each between its envelope's ends as it arrives
        // (a copy of one piece at a time).
        Answer::Pieces(pieces) => {
            step(&mut rows, &format!("object: {what} run (result as JSON text in pieces)"));
            reply_len = pieces.len();
            assert!(rest::envelope_ends(&call).is_some(), "the Worker streams this result");
            for piece in pieces.into_pieces() {
                drop(piece.clone());
            }
            step(&mut rows, "worker: pieces streamed into the envelope");
        }
        Answer::Json(mut reply) => {
            step(&mut rows, &format!("object: {what} run (result as JSON text)"));
            reply.insert_str(0, "{\"ok\":");
            reply.push('}');
            step(&mut rows, "object: reply written");
            reply_len = reply.len();
            // 3. The Worker reads the reply and answers.
            let result = reply.clone();
            drop(reply);
            let enveloped = rest::envelope_for(&call, result).into_parts();
            step(&mut rows, "worker: reply enveloped");
            drop(enveloped);
        }
        Answer::File(_) => panic!("not an export"),
    }
    drop(call);
    step(&mut rows, "all dropped");

    let overall = rows.iter().map(|r| r.2).max().unwrap_or(0);
    println!("# make bench-heap: {case} of {messages} messages of 32 KB, body {:.1} MiB, reply {:.1} MiB", body_len as f64 / MIB, reply_len as f64 / MIB);
    println!();
    println!("| step | live after MiB | peak within MiB |");
    println!("|---|---:|---:|");
    for (name, live, peak) in &rows {
        println!("| {name} | {:.1} | {:.1} |", (*live - before.min(*live)) as f64 / MIB, (*peak - before.min(*peak)) as f64 / MIB);
    }
    println!();
    println!("Worker holds while the object runs: {:.1} MiB", (worker_holds - before) as f64 / MIB);
    println!("peak over the request: {:.1} MiB, {:.1} times the body", (overall - before) as f64 / MIB, (overall - before) as f64 / body_len as f64);
}

/// HEAP_CASE=consolidate: what one consolidation window holds, for
/// windows of several shapes at `consolidate::WINDOW_BYTES` of content
/// (many short memories, half of them near copies of the one before; few
/// long ones), over what was live before: what it holds while the
/// reasoner decides, which the room it takes in the isolate's working
/// set (`consolidate::WINDOW_ROOM_BYTES`) bounds (every profile waiting
/// on a model holds it at once), and its peak (planning's stems, held
/// between two awaits: one profile's at a time).
fn consolidate_windows() {
    use agent_memory::core::consolidate::{WINDOW_BYTES, WINDOW_ROOM_BYTES};
    use agent_memory::core::ports::LocalBoxFuture;
    use agent_memory::core::provider::{Consolidation, Group, Reasoner};
    use std::cell::Cell;

    /// The rules, recording what the heap holds when they are asked.
    struct Held<'a>(&'a Cell<usize>);
    impl Reasoner for Held<'_> {
        fn extract<'a>(
            &'a self,
            t: &'a agent_memory::core::provider::Transcript,
            pass: agent_memory::core::provider::Pass,
        ) -> LocalBoxFuture<'a, agent_memory::core::error::Result<Vec<agent_memory::core::provider::Candidate>>> {
            agent_memory::core::rules::Rules.extract(t, pass)
        }
        fn verify<'a>(
            &'a self,
            t: &'a agent_memory::core::provider::Transcript,
            c: &'a [agent_memory::core::provider::Candidate],
        ) -> LocalBoxFuture<'a, agent_memory::core::error::Result<Vec<agent_memory::core::provider::Verdict>>> {
            agent_memory::core::rules::Rules.verify(t, c)
        }
        fn classify<'a>(
            &'a self,
            t: &'a agent_memory::core::provider::Transcript,
            c: &'a [agent_memory::core::provider::Candidate],
        ) -> LocalBoxFuture<'a, agent_memory::core::error::Result<Vec<agent_memory::core::provider::Classification>>> {
            agent_memory::core::rules::Rules.classify(t, c)
        }
        fn analyze<'a>(&'a self, q: &'a str) -> LocalBoxFuture<'a, agent_memory::core::error::Result<agent_memory::core::provider::QueryAnalysis>> {
            agent_memory::core::rules::Rules.analyze(q)
        }
        fn synthesize<'a>(&'a self, i: &'a agent_memory::core::provider::SynthesisInput) -> LocalBoxFuture<'a, agent_memory::core::error::Result<String>> {
            agent_memory::core::rules::Rules.synthesize(i)
        }
        fn consolidate<'a>(&'a self, groups: &'a [Group]) -> LocalBoxFuture<'a, agent_memory::core::error::Result<Vec<Consolidation>>> {
            self.0.set(live());
            agent_memory::core::rules::Rules.consolidate(groups)
        }
    }

    println!("# HEAP_CASE=consolidate make bench-heap: one consolidation window at {} KiB of content", WINDOW_BYTES / 1024);
    println!();
    println!("| window | memories | held while the reasoner decides MiB | peak over the window MiB |");
    println!("|---|---:|---:|---:|");
    let mut worst = 0usize;
    for (name, count, size, near) in [
        ("short, every one its own words", 1000, 500, false),
        ("short, half near copies", 1000, 500, true),
        ("very short, half near copies", 1000, 200, true),
        ("long, every one its own words", 18, 30_000, false),
    ] {
        // Twice, the first filling the isolate's regex caches (made once,
        // and grown with the text they scan up to a bound): the second is
        // what a window holds.
        let mut measured = (0, 0, 0);
        for _ in 0..2 {
            let sql = database();
            let mut prev = String::new();
            let contents: Vec<String> = (0..count)
                .map(|i| {
                    let c = if near && i % 2 == 1 { format!("Also noted: {prev}") } else { pseudo_words(size, i as u64) };
                    prev = c.clone();
                    c
                })
                .collect();
            import_memories(&sql, &contents);
            let held = Cell::new(0);
            let before = live();
            reset_peak();
            let report = with_reasoner(&sql, APRIL_15 + 1, Default::default(), &Held(&held), |p| {
                block_on(p.consolidate(serde_json::from_value(serde_json::json!({ "maxWindows": 1 })).expect("request"))).expect("consolidate")
            });
            measured = (report.examined, held.get().saturating_sub(before), peak().saturating_sub(before));
        }
        let (examined, held, over) = measured;
        worst = worst.max(held);
        println!("| {name} | {examined} of {count} | {:.2} | {:.2} |", held as f64 / MIB, over as f64 / MIB);
    }
    println!();
    println!("the room a window takes: {:.1} MiB; the most one held while its reasoner decided: {:.2} MiB", WINDOW_ROOM_BYTES as f64 / MIB, worst as f64 / MIB);
    assert!(worst <= WINDOW_ROOM_BYTES, "a window held more across its reasoner's call than the room it takes");
}

/// `bytes` of pseudo-words from seed `seed` (no digits, a full stop now and then).
fn pseudo_words(bytes: usize, seed: u64) -> String {
    const SYL: [&str; 20] = ["ba", "ke", "li", "mo", "nu", "pa", "re", "si", "to", "vu", "za", "ge", "hi", "jo", "fu", "da", "we", "xi", "yo", "qu"];
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(12_345);
    let mut next = || {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) as usize
    };
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        for _ in 0..2 + next() % 3 {
            s.push_str(SYL[next() % SYL.len()]);
        }
        s.push_str(if next() % 12 == 0 { ". " } else { " " });
    }
    s.truncate(bytes);
    format!("{}.", s.trim_end())
}

/// Imports `contents` as active facts, their ids in order, and drains.
fn import_memories(sql: &NativeSql, contents: &[String]) {
    let header =
        serde_json::json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "profile": "ns/p", "exportedAt": "2026-01-01T00:00:00.000Z" });
    let lines = contents.iter().enumerate().map(|(i, content)| {
        serde_json::json!({
            "kind": "memory", "id": format!("{i:032x}"), "type": "fact", "summary": content.chars().take(100).collect::<String>(), "content": content,
            "sessionId": null, "sourceMessageIds": [], "searchQueries": [], "status": "active",
            "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z"
        })
    });
    let file: String = std::iter::once(header).chain(lines).map(|l| format!("{l}\n")).collect();
    with_profile(sql, APRIL_15, |p| {
        p.import(&file).expect("import");
        while p.stats().expect("stats").pending_jobs > 0 {
            block_on(p.drain()).expect("drain");
        }
    });
}
