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
//! under the 8 MB import limit). Natively, not Wasm: allocation sizes
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
