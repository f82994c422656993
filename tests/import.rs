//! Import takes a file whole or not at all, and takes it only when each
//! line reads as strictly as a request body and each record is there
//! once. A refused file changes nothing.

mod support;

use agent_memory::core::error::Error;
use agent_memory::core::ops::Profile;
use agent_memory::core::ports::Sql;
use serde_json::{json, Value};
use support::{database, with_profile, NativeSql, APRIL_15};

const FIRST: &str = "01m8wd82f91ktpz8e5mx00g5wq";
const SECOND: &str = "01m8wd82f91ktpz8e5mx00g5wr";

fn header() -> String {
    json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "profile": "ns/p", "exportedAt": "2026-04-15T10:00:00.000Z" }).to_string()
}

/// A memory record `id` saying `content`, with `extra` fields over it.
fn memory(id: &str, content: &str, extra: Value) -> String {
    let mut m = json!({
        "kind": "memory", "id": id, "type": "fact", "summary": content, "content": content, "sessionId": null,
        "sourceMessageIds": [], "searchQueries": [], "status": "active",
        "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z"
    });
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    m.to_string()
}

/// A message record of session `s1` saying `content`, with `extra` fields.
fn message(content: &str, extra: Value) -> String {
    let id = agent_memory::core::ids::message_id("s1", "user", content);
    let mut m = json!({ "kind": "message", "id": id, "sessionId": "s1", "role": "user", "content": content, "position": 0, "createdAt": "2026-01-01T00:00:00.000Z" });
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    m.to_string()
}

fn file(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Every row of every table but the migration record, as text.
fn snapshot(sql: &NativeSql) -> String {
    let tables: Vec<String> = sql
        .query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", &[])
        .unwrap()
        .into_iter()
        .filter_map(|r| r[0].opt_string())
        .collect();
    tables.iter().map(|t| format!("{t}: {:?}\n", sql.query(&format!("SELECT * FROM \"{t}\""), &[]).unwrap())).collect()
}

/// Imports `ndjson` into a profile that holds one memory already; the
/// refusal, after checking it is a 400 and that nothing changed.
fn refused(ndjson: &str) -> Error {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), memory("0123456789abcdef0123456789abcdef", "A memory that was here before.", json!({}))])).unwrap();
        let before = snapshot(&sql);
        let before_counts = counts(p);
        let e = p.import(ndjson).unwrap_err();
        assert_eq!(e.status(), 400, "{e}");
        assert_eq!(counts(p), before_counts, "{e}: the counts moved");
        assert_eq!(snapshot(&sql), before, "{e}: the refused import changed the profile");
        e
    })
}

fn counts(p: &Profile<'_>) -> (i64, i64) {
    let s = p.stats().unwrap();
    (s.messages, s.memories)
}

// ---------------------------------------------------------------------------
// Each record once.

#[test]
fn test_import_with_a_repeated_memory_id_is_refused() {
    let e = refused(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({})), memory(FIRST, "Beta lives in Rome.", json!({}))]));
    assert!(e.message().contains(FIRST) && e.message().contains("line 3") && e.message().contains("line 2"), "{e}");
}

#[test]
fn test_import_with_a_repeated_message_id_is_refused() {
    let e = refused(&file(&[
        header(),
        message("hello there", json!({ "metadata": { "a": 1 } })),
        message("hello there", json!({ "position": 5, "metadata": { "a": 2 }, "timestamp": "2020-01-01" })),
    ]));
    let id = agent_memory::core::ids::message_id("s1", "user", "hello there");
    assert!(e.message().contains(&id) && e.message().contains("line 3") && e.message().contains("line 2"), "{e}");
}

#[test]
fn test_import_of_two_messages_that_redact_to_one_is_refused() {
    let e = refused(&file(&[header(), message("my pin is <private>1234</private>", json!({})), message("my pin is <private>9876</private>", json!({}))]));
    assert!(e.message().contains("line 3") && e.message().contains("redacted"), "{e}");
}

#[test]
fn test_import_of_a_file_holding_each_record_once_counts_each() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let f = file(&[header(), message("hello there", json!({})), message("and again", json!({})), memory(FIRST, "Alpha lives in Oslo.", json!({})), memory(SECOND, "Beta lives in Rome.", json!({}))]);
        let report = p.import(&f).unwrap();
        assert_eq!((report.messages, report.memories), (2, 2));
        assert_eq!(counts(p), (2, 2));
    });
}

// ---------------------------------------------------------------------------
// Each line as strict as a request body.

#[test]
fn test_import_line_naming_a_key_twice_is_refused() {
    let twice = memory(FIRST, "Alpha lives in Oslo.", json!({})).replace("}", ",\"content\":\"Gamma lives in Lima.\"}");
    let e = refused(&file(&[header(), twice]));
    assert!(e.message().contains("line 2") && e.message().contains("duplicate key \"content\""), "{e}");
    // The kind too, and inside metadata.
    refused(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({})).replace("}", ",\"kind\":\"header\"}")]));
    refused(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({})).replace("\"status\"", "\"metadata\":{\"a\":1,\"a\":2},\"status\"")]));
    refused(&file(&[header().replace("}", ",\"version\":1}"), memory(FIRST, "Alpha lives in Oslo.", json!({}))]));
}

#[test]
fn test_import_header_with_an_unknown_field_is_refused() {
    let bogus = json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "bogus": true }).to_string();
    let e = refused(&file(&[bogus, memory(FIRST, "Alpha lives in Oslo.", json!({}))]));
    assert!(e.message().contains("line 1") && e.message().contains("unknown field \"bogus\""), "{e}");
    let odd_time = json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "exportedAt": "yesterday" }).to_string();
    refused(&file(&[odd_time, memory(FIRST, "Alpha lives in Oslo.", json!({}))]));
    let odd_profile = json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "profile": 7 }).to_string();
    refused(&file(&[odd_profile, memory(FIRST, "Alpha lives in Oslo.", json!({}))]));
}
