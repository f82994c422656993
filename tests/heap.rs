//! How many copies of a large call the Rust heap holds at once. A Rust
//! Worker and its Durable Objects may share one isolate, and so one Wasm
//! memory that grows to its high-water mark and never shrinks: each copy
//! of a 16 MB ingest held at once is 16 MB of every profile's room.
//! Counted natively with a counting allocator (the same code and serde as
//! the Wasm build; allocation sizes match, the allocator's slack does
//! not). `make bench-heap` prints the same steps at the published limits.
//!
//! One test in this binary: the allocator counts every thread's blocks.

mod support;

use agent_memory::core::mcp::{self, Backend};
use agent_memory::core::op::{Call, Op};
use agent_memory::core::ports::LocalBoxFuture;
use agent_memory::core::rest::{self, Incoming, ObjectCall, Route};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use support::heap::{self, live, peak, reset_peak};
use support::*;

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

/// Messages of 32 KB in the measured call (a fifth of the limit's 500,
/// for a debug build's time).
const MESSAGES: usize = 100;

const PATH: &str = "/accounts/a/agent-memory/namespaces/ns/profiles/p/ingest";

/// An MCP backend that records what the heap holds when it is called, the
/// arguments it is handed dropped, and answers `result`.
struct Recording {
    held: Cell<Option<usize>>,
    result: RefCell<String>,
}

impl Backend for Recording {
    fn call<'a>(&'a self, _op: &'a str, args: Value) -> LocalBoxFuture<'a, agent_memory::core::error::Result<agent_memory::core::json::JsonPieces>> {
        drop(args);
        self.held.set(Some(live()));
        // What follows the call (the reply made) is counted from here.
        reset_peak();
        let result = agent_memory::core::json::JsonPieces::one(self.result.take());
        Box::pin(async { Ok(result) })
    }
}

/// How far the profile object's heap rises over an ingest `body` it is
/// handed, run as the object runs it; and the body's length.
fn object_ingest_peak(sql: &NativeSql, body: Vec<u8>) -> (usize, usize) {
    let body_len = body.len();
    let incoming = Incoming { method: "POST", path: PATH, query: "", content_type: Some("application/json"), body: &body };
    let Ok(Route::Profile(mut call)) = rest::route(&incoming) else { panic!("not routed as a profile call") };
    drop(body);
    let text = ObjectCall::write(&call.object_name(), call.op.name(), call.take_args(), rest::Asks::unread(call.unread())).unwrap();
    let decoded = ObjectCall::read(&text).unwrap();
    drop(text);
    let start = live();
    reset_peak();
    with_profile(sql, APRIL_15, |p| {
        let call = Call::decode(Op::Ingest, decoded.args).unwrap();
        let prepared = p.prepare_as(call, false).unwrap();
        p.admit(&prepared).unwrap();
        block_on(p.execute_prepared(prepared)).unwrap()
    });
    (peak() - start, body_len)
}

#[test]
fn test_a_large_ingest_is_held_once_on_its_way_and_about_twice_by_the_object_and_an_export_a_part_at_a_time() {
    let sql = database();
    // The regexes' caches (lazy DFAs, which grow with the text they scan
    // up to a bound) are the isolate's, made once: filled here, by a call
    // of the same text in another session, before anything is counted.
    let warm: Value = serde_json::from_slice(&heap::ingest_body(20, "warm")).unwrap();
    with_profile(&sql, APRIL_15, |p| block_on(p.run(Op::Ingest, warm)).unwrap());

    // The Worker: the body routed, then dropped; the arguments written to
    // the object and dropped. Nothing of the call is left while it waits.
    let before = live();
    let body = heap::ingest_body(MESSAGES, "s1");
    let body_len = body.len();
    let incoming = Incoming { method: "POST", path: PATH, query: "", content_type: Some("application/json"), body: &body };
    let Ok(Route::Profile(mut call)) = rest::route(&incoming) else { panic!("not routed as a profile call") };
    drop(body);
    let text = ObjectCall::write(&call.object_name(), call.op.name(), call.take_args(), rest::Asks::unread(call.unread())).unwrap();
    let held = live() - before - text.capacity();
    assert!(held < body_len / 100, "the Worker holds {held} bytes of a {body_len}-byte call besides the text it posts");

    // The object: the call read (its text dropped), decoded, prepared and
    // run. Its peak over what it was handed stays near two copies of the
    // messages (the messages, and the transcript lines' texts).
    let decoded = ObjectCall::read(&text).unwrap();
    drop(text);
    let start = live();
    reset_peak();
    let report = with_profile(&sql, APRIL_15, |p| {
        let call = Call::decode(Op::Ingest, decoded.args).unwrap();
        let prepared = p.prepare_as(call, false).unwrap();
        p.admit(&prepared).unwrap();
        block_on(p.execute_prepared(prepared)).unwrap()
    });
    let over = peak() - start;
    assert!(report.contains("\"messagesStored\":100"), "the ingest stored its messages: {}", &report[..200.min(report.len())]);
    assert!(over < body_len * 2, "the object's ingest rose {over} bytes over its {body_len}-byte call (more than two copies)");

    // A call of relative dates to write out ("tonight" becomes "on the
    // night of 2026-04-16", 3.25 times as long), each message one
    // statement: a message whose dates written out would pass a message's
    // limit stays as sent in the transcript, so the object holds three
    // copies at most (the transcript lines' texts and the memories drawn
    // from them beside the messages: 3.1 times the call). Written out,
    // the transcripts and the memories held 10.7 times the call.
    let tonight: Vec<Value> = (0..MESSAGES)
        .map(
            |i| json!({ "role": "user", "content": format!("{i} {}", "tonight ".repeat(heap::INGEST_MESSAGE_BYTES / 9)), "timestamp": "2026-04-16T10:00:00Z" }),
        )
        .collect();
    let dated = serde_json::to_vec(&json!({ "messages": tonight, "sessionId": "s-tonight" })).unwrap();
    let (over, dated_len) = object_ingest_peak(&sql, dated);
    assert!(over < dated_len * 4, "an ingest of dates to write out rose {over} bytes over its {dated_len}-byte call (more than three copies)");

    // The Worker envelopes the report (this route answers it) by moving it
    // between the envelope's head and tail, which it sends as they are:
    // never beside an enveloped copy.
    let report_len = report.len();
    // For MCP below: the report with its memories repeated to 5,000, as
    // the largest ingest's report holds 16,000.
    let mut many: Value = serde_json::from_str(&report).unwrap();
    let memories = many["memories"].as_array().unwrap().clone();
    assert!(memories.len() > 10, "the ingest made memories: {}", memories.len());
    many["memories"] = Value::Array(memories.iter().cycle().take(5_000).cloned().collect());
    let mcp_result = many.to_string();
    let report_copy = mcp_result.clone();
    drop((many, memories));
    let start = live();
    reset_peak();
    let pieces = rest::envelope_for(&call, report).into_parts();
    let over = peak() - start;
    assert_eq!(pieces[1].len(), report_len, "the report is the middle piece");
    assert!(over < 4096, "enveloping a {report_len}-byte report rose {over} bytes");
    drop(pieces);

    // An export of the profile (the warm-up's, this call's and 200 more
    // messages, and their memories: a file many parts long), spooled, then read out a part at a time as the object
    // streams it: the object holds one part of the file, never the file.
    // Messages and memories are read a page at a time; with a filter, the
    // first pass keeps ids only. (Held as parts until sent, it rose by the
    // whole file.)
    let more: Value = serde_json::from_slice(&heap::ingest_body(200, "s3")).unwrap();
    with_profile(&sql, APRIL_15, |p| block_on(p.run(Op::Ingest, more)).unwrap());
    for filter in [None, Some(json!({ "createdAt": { "gte": "2000-01-01T00:00:00Z" } }))] {
        let start = live();
        reset_peak();
        let spooled = with_profile(&sql, APRIL_15, |p| p.spool_export(agent_memory::core::api::ExportRequest { filter: filter.clone() }).unwrap());
        let parts = agent_memory::core::portable::SpooledParts::new(&sql, spooled, |e| panic!("{e}"));
        let file: usize = parts.map(|part| part.unwrap().len()).sum();
        let over = peak() - start;
        assert!(file > body_len, "the export holds the call's messages: {file} bytes");
        // A page of messages (32 of 32 KB), the part being filled, the
        // part being read, and one record as it is written.
        let bound = 4 * agent_memory::core::portable::EXPORT_PART_BYTES + 2 * 32 * 32 * 1024;
        assert!(bound < file / 2, "the bound ({bound} bytes) tells a part from the file ({file} bytes)");
        assert!(over < bound, "an export of {file} bytes rose {over} bytes (filter {filter:?})");
    }

    // An import's file travels beside its call, unescaped, and the object
    // moves the text it read into the call's arguments. (Escaped into the
    // call, its read rose about twice the file.)
    let file = "{\"kind\":\"message\",\"content\":\"a \\\"quoted\\\" word\"}\n".repeat(50_000).into_bytes();
    // The Worker routes it holding the body and one text of it (the
    // arguments take the text as it is).
    let import_path = "/accounts/a/agent-memory/namespaces/ns/profiles/p/import";
    let start = live();
    reset_peak();
    let incoming = Incoming { method: "POST", path: import_path, query: "", content_type: Some("application/x-ndjson"), body: &file };
    let Ok(Route::Profile(mut routed)) = rest::route(&incoming) else { panic!("not routed as a profile call") };
    let over = peak() - start;
    assert!(over < file.len() + 4096, "routing an import of {} bytes rose {over} bytes (more than one text of it)", file.len());
    drop(file);
    let posted = ObjectCall::post("ns/p", "import", routed.take_args(), rest::Asks::default()).unwrap();
    let (call_text, raw) = (posted.call, posted.raw.expect("the file travels beside the call"));
    let file_len = raw.len();
    let start = live();
    reset_peak();
    let read = ObjectCall::read_posted(&call_text, raw).unwrap();
    let over = peak() - start;
    assert_eq!(read.args["data"].as_str().map(str::len), Some(file_len));
    assert!(over < 4096, "reading a posted import of {file_len} bytes rose {over} bytes");
    drop(read);

    // MCP: the message parsed, the body dropped; when the profile is
    // called, the heap holds the arguments it is handed and nothing else
    // of the size of the call.
    let args: Value = serde_json::from_slice(&heap::ingest_body(MESSAGES, "s2")).unwrap();
    let body = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "ingest", "arguments": args } })).unwrap();
    drop(args);
    let before = live() - body.capacity();
    let read = mcp::read(&body, Some("application/json"));
    drop(body);
    let backend = Recording { held: Cell::new(None), result: RefCell::new(mcp_result) };
    let reply = block_on(mcp::answer(read, &backend));
    let called = backend.held.get().expect("the profile was called");
    let over = peak() - called;
    assert_eq!(reply.status, 200, "{}", reply.body_text());
    let held = called - before;
    assert!(held < body_len, "MCP held {held} bytes besides the arguments of a {body_len}-byte call");
    // The report goes into the reply as the piece of text it is, beside a
    // text rendering a hundred of its memories, read from it without a
    // tree of the rest (measured: 124 KB for a 3.6 MB report). Parsed into a tree and written out again, it rose
    // 9.6 times the report's bytes; joined into one buffer of the reply,
    // more than once.
    let report_len = report_copy.len();
    let structured = reply.message().expect("a JSON reply")["result"]["structuredContent"].to_string();
    assert_eq!(serde_json::from_str::<Value>(&structured).unwrap(), serde_json::from_str::<Value>(&report_copy).unwrap(), "the report, whole");
    assert!(over < report_len / 10, "answering a {report_len}-byte report by MCP rose {over} bytes");
}
