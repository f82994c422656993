//! Import takes a file whole or not at all, and takes it only when it is
//! consistent: each line read as strictly as a request body, each record
//! once, its dates in the formats the service stores and compares, its
//! links to other versions resolvable. A refused file changes nothing.

mod support;

use agent_memory::core::api::{ExportRequest, IngestRequest, ListRequest, ListStatus};
use agent_memory::core::error::Error;
use agent_memory::core::model::{MessageInput, Status};
use agent_memory::core::ops::Profile;
use agent_memory::core::portable::{self, SpooledParts, EXPORT_PART_BYTES};
use agent_memory::core::ports::Sql;
use agent_memory::core::store::Store;
use serde_json::{json, Value};
use support::{block_on, database, snapshot, with_profile, NativeSql, APRIL_15, DAY};

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
    let mut m =
        json!({ "kind": "message", "id": id, "sessionId": "s1", "role": "user", "content": content, "position": 0, "createdAt": "2026-01-01T00:00:00.000Z" });
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    m.to_string()
}

fn file(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
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

/// Every memory, in any state, newest first (every page).
fn all(p: &Profile<'_>) -> Vec<agent_memory::core::model::Memory> {
    let (mut out, mut cursor) = (Vec::new(), None);
    loop {
        let page = p.list(ListRequest { status: Some(ListStatus::All), limit: Some(1000), cursor: cursor.take(), ..Default::default() }).unwrap();
        out.extend(page.memories);
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
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
fn test_import_redacts_a_private_role_and_renames_its_message() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let role = "<private>Jane Quokkason</private>";
        let id = agent_memory::core::ids::message_id("s1", role, "I prefer dark mode.");
        let line = json!({ "kind": "message", "id": id, "sessionId": "s1", "role": role, "content": "I prefer dark mode.", "position": 0, "createdAt": "2026-01-01T00:00:00.000Z" });
        let report = p.import(&file(&[header(), line.to_string()])).unwrap();
        assert_eq!(report.messages, 1);
        assert!(!snapshot(&sql).to_lowercase().contains("quokkason"), "a private role reached storage");
        let export = p.export(Default::default()).unwrap();
        let renamed = agent_memory::core::ids::message_id("s1", "[private]", "I prefer dark mode.");
        assert!(export.contains(&renamed) && export.contains(r#""role":"[private]""#), "{export}");
    });
}

#[test]
fn test_import_of_a_version_chain_that_is_a_cycle_is_refused() {
    const THIRD: &str = "01m8wd82f91ktpz8e5mx00g5ws";
    let superseded = |by: &str, of: &str| json!({ "status": "superseded", "key": "user.editor", "supersededBy": by, "supersedes": of });
    // Two that supersede each other.
    let e = refused(&file(&[
        header(),
        memory(FIRST, "The user edits in vim.", superseded(SECOND, SECOND)),
        memory(SECOND, "The user edits in emacs.", superseded(FIRST, FIRST)),
    ]));
    assert!(e.message().contains("cannot be a cycle"), "{e}");
    // Three round, one of them active.
    let e = refused(&file(&[
        header(),
        memory(FIRST, "The user edits in vim.", json!({ "key": "user.editor", "supersedes": THIRD })),
        memory(THIRD, "The user edits in nano.", json!({ "status": "superseded", "key": "user.editor", "supersededBy": FIRST, "supersedes": SECOND })),
        memory(SECOND, "The user edits in emacs.", json!({ "status": "superseded", "key": "user.editor", "supersededBy": THIRD, "supersedes": FIRST })),
    ]));
    assert!(e.message().contains("cannot be a cycle"), "{e}");
    // A chain that ends imports.
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let f = file(&[
            header(),
            memory(FIRST, "The user edits in vim.", json!({ "key": "user.editor", "supersedes": SECOND })),
            memory(SECOND, "The user edits in emacs.", json!({ "status": "superseded", "key": "user.editor", "supersededBy": FIRST })),
        ]);
        assert_eq!(p.import(&f).unwrap().memories, 2);
    });
}

#[test]
fn test_import_of_statements_the_profile_holds_already_under_other_ids_writes_them_once() {
    let call = || agent_memory::core::api::IngestRequest {
        session_id: Some("s1".into()),
        messages: vec![agent_memory::core::model::MessageInput {
            role: "user".into(),
            content: "Yesterday we shipped version 2.1 to production. I prefer tabs for indentation.".into(),
            timestamp: Some("2024-05-10T10:00:00Z".into()),
        }],
        metadata: Default::default(),
    };
    let (a, b) = (database(), database());
    let export = with_profile(&a, APRIL_15, |p| {
        block_on(p.ingest(call())).unwrap();
        p.export(Default::default()).unwrap()
    });
    // Another profile given the same conversation: its memories have other ids.
    with_profile(&b, APRIL_15 + 1_000, |p| {
        block_on(p.ingest(call())).unwrap();
        let before = all(p).into_iter().filter(|m| m.status == Status::Active).count();
        assert!(before >= 2);
        let report = p.import(&export).unwrap();
        assert_eq!((report.messages, report.memories), (0, 0), "every statement is held already");
        let active: Vec<String> = all(p).into_iter().filter(|m| m.status == Status::Active).map(|m| m.content).collect();
        assert_eq!(active.len(), before, "no statement twice: {active:?}");
    });
    // A profile full to its limit takes the file too: it adds nothing.
    let held = with_profile(&b, APRIL_15, |p| p.stats().unwrap().memories);
    let full = agent_memory::core::ops::Limits { max_memories: held, ..Default::default() };
    support::with_profile_limits(&b, APRIL_15 + 2_000, &agent_memory::core::recall::directory::TurnDirectory::new(), full, |p| {
        assert_eq!(p.import(&export).unwrap().memories, 0, "admitted: it adds nothing");
    });
}

#[test]
fn test_import_writes_a_held_statement_that_carries_what_the_holder_does_not() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let held = block_on(p.remember(serde_json::from_value(json!({ "content": "The build server runs Debian.", "type": "fact" })).unwrap())).unwrap();
        // The same statement plain: the holder has it.
        assert_eq!(p.import(&file(&[header(), memory(SECOND, "The build server runs Debian.", json!({}))])).unwrap().memories, 0);
        // With an expiry: written, not folded into the holder.
        let expiring = memory(FIRST, "The build server runs Debian.", json!({ "expiresAt": "2027-01-01T00:00:00.000Z" }));
        assert_eq!(p.import(&file(&[header(), expiring])).unwrap().memories, 1);
        assert_eq!(p.get(&held.id).unwrap().memory.status, Status::Active);
    });
}

/// Of two active holders of one statement, one plain and one that
/// expires, the plain one holds it for a plain record: the record is not
/// written a third time, whichever holder's id sorts last.
#[test]
fn test_import_finds_the_plain_holder_of_a_statement_beside_an_expiring_one() {
    const LAST: &str = "01zzzzzzzzzzzzzzzzzzzzzzzz";
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let content = "The build server runs Debian.";
        let both = file(&[header(), memory(FIRST, content, json!({})), memory(LAST, content, json!({ "expiresAt": "2027-01-01T00:00:00.000Z" }))]);
        assert_eq!(p.import(&both).unwrap().memories, 2, "the expiring one carries what the plain one does not");
        assert_eq!(p.import(&file(&[header(), memory(SECOND, content, json!({}))])).unwrap().memories, 0, "the plain holder has it");
        assert_eq!(active_ids(p).len(), 2);
    });
}

#[test]
fn test_import_of_a_file_holding_each_record_once_counts_each() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let f = file(&[
            header(),
            message("hello there", json!({})),
            message("and again", json!({})),
            memory(FIRST, "Alpha lives in Oslo.", json!({})),
            memory(SECOND, "Beta lives in Rome.", json!({})),
        ]);
        let report = p.import(&f).unwrap();
        assert_eq!((report.messages, report.memories), (2, 2));
        assert_eq!(counts(p), (2, 2));
    });
}

// ---------------------------------------------------------------------------
// Each message's id and text.

#[test]
fn test_import_of_an_over_size_message_with_a_wrong_id_is_refused_for_its_size() {
    let limit = agent_memory::core::api::MAX_MESSAGE_BYTES;
    let line = message(&"x".repeat(limit + 1), json!({ "id": "0123456789abcdef0123456789abcdef" }));
    let e = refused(&file(&[header(), line]));
    assert!(e.message().contains("line 2") && e.message().contains(&format!("the limit is {limit}")), "{e}");
}

#[test]
fn test_a_message_repeat_is_found_by_the_id_it_always_had() {
    use agent_memory::core::ids::{repeat_of, repeated_message_id};
    // The ids as every earlier version computed them: SHA-256 over the
    // length-prefixed fields (and "repeat", n past the first), 16 bytes.
    let golden = [
        (0, "af788294a31ccb47a3be6e3fcfa46f94"),
        (1, "3e4e723d965e648396d43a6caf0ebf39"),
        (2, "2f60b15aa3a5d0c1e18da089aea4f79c"),
        (499, "844ccd8104874a779b1e3bb9b3c82154"),
    ];
    for (n, id) in golden {
        assert_eq!(repeated_message_id("s1", "user", "yes", n), id, "repeat {n}");
        assert_eq!(repeat_of(id, "s1", "user", "yes", 500), Some(n), "repeat {n}");
    }
    assert_eq!(repeat_of("844ccd8104874a779b1e3bb9b3c82154", "s1", "user", "yes", 499), None, "repeat 499 is past 499 tried");
    assert_eq!(repeat_of("af788294a31ccb47a3be6e3fcfa46f94", "s1", "user", "no", 500), None);
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

/// A key remember would refuse (not in its stored form, or on a type
/// keys do not supersede) is refused in a file too, never stored as given.
#[test]
fn test_import_of_a_key_remember_would_refuse_is_refused() {
    for (key, kind) in [("Package Manager", "fact"), ("!!!", "instruction"), ("deploy.date", "event"), ("report.q3", "task")] {
        let e = refused(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({ "key": key, "type": kind }))]));
        assert!(e.message().contains("line 2") && e.message().contains("key"), "{key} on a {kind}: {e}");
    }
    let e = refused(&file(&[header(), memory(FIRST, "Alpha uses pnpm.", json!({ "key": "Package Manager" }))]));
    assert!(e.message().contains("\"package_manager\""), "the refusal names the stored form: {e}");
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), memory(FIRST, "Alpha uses pnpm.", json!({ "key": "tooling.package_manager" }))])).unwrap();
        assert_eq!(p.get(FIRST).unwrap().memory.key.as_deref(), Some("tooling.package_manager"), "a key in its stored form is taken");
    });
}

/// A record whose value does not fit its type is refused with the value
/// quoted cut to 64 characters and serde's words after it: serde's
/// message carries a 100,000-character type, status or position whole, and
/// the cut of every message to 300 characters left nothing but it.
#[test]
fn test_import_of_a_huge_value_of_the_wrong_type_quotes_it_cut() {
    let long = "x".repeat(100_000);
    let records = [
        ("type", memory(FIRST, "Alpha lives in Oslo.", json!({ "type": long }))),
        ("status", memory(FIRST, "Alpha lives in Oslo.", json!({ "status": long }))),
        ("position", message("Alpha lives in Oslo.", json!({ "position": long }))),
    ];
    for (field, record) in records {
        let e = refused(&file(&[header(), record]));
        let text: String = e.message().chars().take(300).collect();
        assert!(e.message().len() < 300, "{field}: {} characters: {text}", e.message().len());
        assert!(e.message().contains(&format!("\"{}…\", expected", "x".repeat(64))), "{field}: {text}");
    }
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

// ---------------------------------------------------------------------------
// Records consistent as the service writes them.

#[test]
fn test_import_stores_an_event_date_as_the_day_filters_compare() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), memory(FIRST, "The launch happened.", json!({ "type": "event", "eventDate": "8 May, 2023" }))])).unwrap();
        assert_eq!(p.get(FIRST).unwrap().memory.event_date.as_deref(), Some("2023-05-08"));
        for f in [json!({"eventDate": "2023-05-08"}), json!({"eventDate": {"gte": "2023-01-01"}})] {
            let found = p.list(ListRequest { filter: Some(f.clone()), ..Default::default() }).unwrap().memories;
            assert_eq!(found.len(), 1, "{f}");
        }
    });
}

#[test]
fn test_import_stores_an_event_date_time_as_the_day_where_it_happened() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let late = json!({ "type": "event", "eventDate": "2023-02-03T23:30:00-05:00" });
        p.import(&file(&[header(), memory(FIRST, "The launch happened.", late)])).unwrap();
        assert_eq!(p.get(FIRST).unwrap().memory.event_date.as_deref(), Some("2023-02-03"), "not the UTC day, 2023-02-04");
        // A filter reads the same date-time as the same day.
        let f = json!({"eventDate": "2023-02-03T23:30:00-05:00"});
        assert_eq!(p.list(ListRequest { filter: Some(f), ..Default::default() }).unwrap().memories.len(), 1);
    });
}

#[test]
fn test_import_of_a_memory_of_private_spans_alone_is_refused_as_remember_refuses_it() {
    for (content, summary) in [("<private>all of it</private>", "A fact."), ("A fact.", "<private>x</private> <private>y</private>")] {
        let e = refused(&file(&[header(), memory(FIRST, content, json!({ "summary": summary }))]));
        assert!(e.message().contains("only private spans"), "{content} / {summary}: {e}");
    }
}

#[test]
fn test_import_with_validity_ending_before_it_starts_is_refused() {
    let e = refused(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({ "validFrom": "2023-05-08T13:56:00Z", "validTo": "2020-01-01" }))]));
    assert!(e.message().contains("line 2") && e.message().contains("validTo"), "{e}");
    // Ending as it starts is an instant, not a contradiction.
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({ "validFrom": "2023-05-08", "validTo": "2023-05-08T00:00:00Z" }))])).unwrap();
    });
}

#[test]
fn test_import_with_a_blank_summary_is_refused() {
    for blank in ["", "  \n "] {
        let e = refused(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({ "summary": blank }))]));
        assert!(e.message().contains("line 2") && e.message().contains("summary"), "{e}");
    }
}

#[test]
fn test_import_of_a_memory_naming_itself_as_a_version_is_refused() {
    for field in ["supersedes", "supersededBy"] {
        let e = refused(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({ field: FIRST }))]));
        assert!(e.message().contains("line 2") && e.message().contains("itself"), "{e}");
    }
}

#[test]
fn test_import_naming_a_version_held_nowhere_is_refused() {
    for field in ["supersedes", "supersededBy"] {
        let e = refused(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({ "status": "superseded", field: SECOND }))]));
        assert!(e.message().contains("line 2") && e.message().contains(field) && e.message().contains(SECOND), "{e}");
    }
}

#[test]
fn test_import_naming_a_version_the_file_or_the_profile_holds_is_taken() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let old = memory(FIRST, "Alpha lives in Oslo.", json!({ "status": "superseded", "supersededBy": SECOND }));
        let new = memory(SECOND, "Alpha lives in Rome.", json!({ "supersedes": FIRST }));
        p.import(&file(&[header(), old, new])).unwrap();
        // A later file naming a memory only the profile holds.
        let third = "01m8wd82f91ktpz8e5mx00g5ws";
        p.import(&file(&[header(), memory(third, "Alpha lives in Lima.", json!({ "supersedes": SECOND }))])).unwrap();
        assert_eq!(p.get(third).unwrap().memory.supersedes.as_deref(), Some(SECOND));
    });
}

/// A copy of a profile, and later that profile's export: the file's new
/// version of a memory the copy holds active supersedes it there, as the
/// ingest that made it did in the original (not two active versions).
#[test]
fn test_an_imported_version_supersedes_the_one_the_profile_holds_active() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({}))])).unwrap();
        let old = memory(FIRST, "Alpha lives in Oslo.", json!({ "status": "superseded", "supersededBy": SECOND }));
        let new = memory(SECOND, "Alpha lives in Rome.", json!({ "supersedes": FIRST, "validFrom": "2026-03-01T00:00:00.000Z" }));
        assert_eq!(p.import(&file(&[header(), old, new])).unwrap().memories, 1);
        let held = p.get(FIRST).unwrap().memory;
        assert_eq!((held.status, held.superseded_by.as_deref()), (Status::Superseded, Some(SECOND)));
        assert_eq!(held.valid_to.as_deref(), Some("2026-03-01T00:00:00.000Z"));
        let active: Vec<String> = all(p).into_iter().filter(|m| m.status == Status::Active).map(|m| m.id).collect();
        assert_eq!(active, [SECOND]);
    });
}

/// A message record of `session` said by `role`, and a keyed memory
/// record citing it, said at `valid_from`.
fn said_by(session: &str, role: &str, id: &str, content: &str, key: &str, valid_from: &str) -> [String; 2] {
    let message_id = agent_memory::core::ids::message_id(session, role, content);
    let message =
        json!({ "kind": "message", "id": message_id, "sessionId": session, "role": role, "content": content, "position": 0, "createdAt": valid_from });
    let extra = json!({ "key": key, "sessionId": session, "sourceMessageIds": [message_id], "validFrom": valid_from });
    [message.to_string(), memory(id, content, extra)]
}

fn active_ids(p: &Profile<'_>) -> Vec<String> {
    let mut ids: Vec<String> = all(p).into_iter().filter(|m| m.status == Status::Active).map(|m| m.id).collect();
    ids.sort();
    ids
}

/// A file's value of a key the profile holds under another id (no
/// version link between them: another profile heard it) ends with one
/// active value, the one said later, whichever side holds it, as ingest
/// would have left them.
#[test]
fn test_an_imported_value_of_a_held_key_leaves_the_later_one_active() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({ "key": "user.city", "validFrom": "2026-02-01T00:00:00.000Z" }))])).unwrap();
        p.import(&file(&[header(), memory(SECOND, "Alpha lives in Rome.", json!({ "key": "user.city", "validFrom": "2026-03-01T00:00:00.000Z" }))])).unwrap();
        let (oslo, rome) = (p.get(FIRST).unwrap().memory, p.get(SECOND).unwrap().memory);
        assert_eq!((oslo.status, oslo.superseded_by.as_deref()), (Status::Superseded, Some(SECOND)));
        assert_eq!(oslo.valid_to.as_deref(), Some("2026-03-01T00:00:00.000Z"));
        assert_eq!(rome.supersedes.as_deref(), Some(FIRST));
        // An older value arriving after: it is the one superseded, at its
        // place in the chain (before Oslo, said before it).
        let third = "01m8wd82f91ktpz8e5mx00g5ws";
        p.import(&file(&[header(), memory(third, "Alpha lives in Lima.", json!({ "key": "user.city", "validFrom": "2026-01-01T00:00:00.000Z" }))])).unwrap();
        let lima = p.get(third).unwrap().memory;
        assert_eq!((lima.status, lima.superseded_by.as_deref()), (Status::Superseded, Some(FIRST)));
        assert_eq!(lima.valid_to.as_deref(), Some("2026-02-01T00:00:00.000Z"));
        assert_eq!(p.get(FIRST).unwrap().memory.supersedes.as_deref(), Some(third));
        assert_eq!(active_ids(p), [SECOND]);
    });
}

/// A value said between two versions of a key the profile holds goes in
/// between them, as ingest in date order would have left them: one line
/// of versions, each valid until the next was said, so `asOf` finds one
/// value at any instant and deleting the newest brings back the one said
/// last before it.
#[test]
fn test_an_imported_value_said_between_two_held_versions_goes_between_them() {
    let sql = database();
    const PARIS: &str = "01m8wd82f91ktpz8e5mx00g5wt";
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({ "key": "user.city", "validFrom": "2026-02-01T00:00:00.000Z" }))])).unwrap();
        p.import(&file(&[header(), memory(SECOND, "Alpha lives in Rome.", json!({ "key": "user.city", "validFrom": "2026-03-01T00:00:00.000Z" }))])).unwrap();
        p.import(&file(&[header(), memory(PARIS, "Alpha lives in Paris.", json!({ "key": "user.city", "validFrom": "2026-02-15T00:00:00.000Z" }))])).unwrap();
        let (oslo, paris, rome) = (p.get(FIRST).unwrap().memory, p.get(PARIS).unwrap().memory, p.get(SECOND).unwrap().memory);
        assert_eq!((oslo.superseded_by.as_deref(), oslo.valid_to.as_deref()), (Some(PARIS), Some("2026-02-15T00:00:00.000Z")));
        assert_eq!((paris.supersedes.as_deref(), paris.superseded_by.as_deref()), (Some(FIRST), Some(SECOND)));
        assert_eq!((paris.status, paris.valid_to.as_deref()), (Status::Superseded, Some("2026-03-01T00:00:00.000Z")));
        assert_eq!(rome.supersedes.as_deref(), Some(PARIS));
        let as_of = |at: &str| -> Vec<String> {
            let req: ListRequest = serde_json::from_value(json!({ "asOf": at })).unwrap();
            p.list(req).unwrap().memories.into_iter().map(|m| m.id).collect()
        };
        assert_eq!(as_of("2026-02-20T00:00:00.000Z"), [PARIS]);
        assert_eq!(as_of("2026-02-10T00:00:00.000Z"), [FIRST]);
        block_on(p.dispatch("delete", json!({ "id": SECOND }))).unwrap();
        assert_eq!(active_ids(p), [PARIS], "the one said last before the deleted newest");
        assert_eq!(p.get(FIRST).unwrap().memory.status, Status::Superseded);
    });
}

/// An export with its own history of a key, imported into a profile with
/// another history of it: the two chains become one line in the order
/// the values were said, whatever the order they were imported in.
#[test]
fn test_two_histories_of_a_key_merge_into_one_line_by_when_each_value_was_said() {
    const LIMA: &str = "01m8wd82f91ktpz8e5mx00g5ws";
    const PARIS: &str = "01m8wd82f91ktpz8e5mx00g5wt";
    let city = |id: &str, content: &str, from: &str| memory(id, content, json!({ "key": "user.city", "validFrom": from }));
    let other = database();
    let export = with_profile(&other, APRIL_15, |p| {
        p.import(&file(&[header(), city(LIMA, "Alpha lives in Lima.", "2026-01-01T00:00:00.000Z")])).unwrap();
        p.import(&file(&[header(), city(PARIS, "Alpha lives in Paris.", "2026-02-15T00:00:00.000Z")])).unwrap();
        assert_eq!(p.get(LIMA).unwrap().memory.superseded_by.as_deref(), Some(PARIS));
        p.export(Default::default()).unwrap()
    });
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), city(FIRST, "Alpha lives in Oslo.", "2026-02-01T00:00:00.000Z")])).unwrap();
        p.import(&file(&[header(), city(SECOND, "Alpha lives in Rome.", "2026-03-01T00:00:00.000Z")])).unwrap();
        p.import(&export).unwrap();
        let line = [LIMA, FIRST, PARIS, SECOND];
        for pair in line.windows(2) {
            let (before, after) = (p.get(pair[0]).unwrap().memory, p.get(pair[1]).unwrap().memory);
            assert_eq!(before.superseded_by.as_deref(), Some(pair[1]), "{pair:?}");
            assert_eq!(after.supersedes.as_deref(), Some(pair[0]), "{pair:?}");
            assert_eq!(before.valid_to, after.valid_from, "{pair:?}: valid until the next was said");
            assert_eq!(before.status, Status::Superseded, "{pair:?}");
        }
        assert_eq!(active_ids(p), [SECOND]);
        let as_of = |at: &str| -> Vec<String> {
            let req: ListRequest = serde_json::from_value(json!({ "asOf": at })).unwrap();
            p.list(req).unwrap().memories.into_iter().map(|m| m.id).collect()
        };
        assert_eq!(as_of("2026-02-20T00:00:00.000Z"), [PARIS], "one value at any instant");
        block_on(p.dispatch("delete", json!({ "id": SECOND }))).unwrap();
        assert_eq!(active_ids(p), [PARIS], "the one said last before the deleted newest");
    });
}

/// A profile where an agent's backdated value arrived after a person's
/// in another session (ingest keeps both: an agent's word reaches its own
/// session): its export after the person's value, and after the agent's,
/// with the ids then active.
fn person_then_backdated_agent(source: &NativeSql) -> (String, String, Vec<String>) {
    let first = with_profile(source, APRIL_15, |p| {
        let r = serde_json::from_value(json!({ "content": "The refund reference is RF-200002.", "key": "project.refund_reference", "sessionId": "call-2" }));
        block_on(p.remember(r.unwrap())).unwrap();
        p.export(Default::default()).unwrap()
    });
    let backdated = IngestRequest {
        messages: vec![MessageInput {
            role: "assistant".into(),
            content: "The refund reference is RF-100001.".into(),
            timestamp: Some("2026-03-01T10:00:00Z".into()),
        }],
        session_id: Some("call-1".into()),
        metadata: Default::default(),
    };
    let (later, active) = with_profile(source, APRIL_15 + DAY, |p| {
        block_on(p.ingest(backdated)).unwrap();
        (p.export(Default::default()).unwrap(), active_ids(p))
    });
    assert_eq!(active.len(), 2, "ingest keeps both");
    (first, later, active)
}

/// Two active values of a key in one file are as the file records them:
/// an export's are as ingest left them, which decided by the order they
/// arrived in, not by their dates.
#[test]
fn test_an_export_imports_with_its_key_holders_as_ingest_left_them() {
    let (_, export, before) = person_then_backdated_agent(&database());
    let copy = database();
    with_profile(&copy, APRIL_15 + 2 * DAY, |p| {
        p.import(&export).unwrap();
        assert_eq!(active_ids(p), before);
    });
}

/// A copy of a profile that takes the original's later export ends as the
/// original, when one of the two values the export records active came
/// with an earlier export: two values the file records active are left
/// so, whichever import wrote them.
#[test]
fn test_a_copy_taking_the_originals_later_export_keeps_its_key_holders_as_the_original() {
    let (first, later, original) = person_then_backdated_agent(&database());
    let copy = database();
    with_profile(&copy, APRIL_15, |p| p.import(&first).map(|_| ())).unwrap();
    with_profile(&copy, APRIL_15 + 2 * DAY, |p| {
        p.import(&later).unwrap();
        assert_eq!(active_ids(p), original);
    });
}

/// An imported value is weighed against the holders it meets oldest
/// first, as they were said: what stays active never depends on the
/// holders' ids.
#[test]
fn test_an_imported_value_settles_the_same_whatever_the_holders_ids() {
    const NEW: &str = "01m8wd82f91ktpz8e5mx00g5ws";
    let key = "project.refund_reference";
    let settle = |person_id: &str, agent_id: &str| {
        let sql = database();
        with_profile(&sql, APRIL_15, |p| {
            let person = said_by("call-2", "user", person_id, "The refund reference is RF-2.", key, "2026-04-01T00:00:00.000Z");
            let agent = said_by("call-1", "assistant", agent_id, "The refund reference is RF-1.", key, "2026-03-01T00:00:00.000Z");
            p.import(&file(&[&[header()][..], &person, &agent].concat())).unwrap();
            assert_eq!(active_ids(p).len(), 2, "a file's two values are left as it records them");
            let newer = said_by("call-1", "assistant", NEW, "The refund reference is RF-1B.", key, "2026-03-15T00:00:00.000Z");
            p.import(&file(&[&[header()][..], &newer].concat())).unwrap();
            let status = |id: &str| p.get(id).unwrap().memory.status;
            (status(person_id), status(agent_id), status(NEW))
        })
    };
    let one = settle(SECOND, FIRST);
    assert_eq!(one, settle(FIRST, SECOND), "the statuses differ by the holders' ids alone");
    // The new value replaces its call's older one; the person's later
    // word, reaching any session, replaces it.
    assert_eq!(one, (Status::Active, Status::Superseded, Status::Superseded));
}

/// An agent's value reaches its own session only (a refund reference of
/// one support call is not another call's): an imported agent's value
/// from another session leaves the profile's active beside it, and a
/// person's later word replaces both.
#[test]
fn test_an_imported_agents_value_from_another_session_stays_beside_the_profiles() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let key = "project.refund_reference";
        let one = said_by("call-1", "assistant", FIRST, "The refund reference is RF-1.", key, "2026-02-01T00:00:00.000Z");
        let two = said_by("call-2", "assistant", SECOND, "The refund reference is RF-2.", key, "2026-03-01T00:00:00.000Z");
        p.import(&file(&[header(), one[0].clone(), one[1].clone()])).unwrap();
        p.import(&file(&[header(), two[0].clone(), two[1].clone()])).unwrap();
        assert_eq!(active_ids(p), [FIRST, SECOND]);
        let third = "01m8wd82f91ktpz8e5mx00g5ws";
        let person = said_by("call-3", "user", third, "The refund reference is RF-3.", key, "2026-04-01T00:00:00.000Z");
        p.import(&file(&[header(), person[0].clone(), person[1].clone()])).unwrap();
        assert_eq!(active_ids(p), [third]);
    });
}

/// An agent's key said in each of thousands of support calls has as
/// many active holders: an import of them weighs each against the
/// holders it may reach (its own call's), not against every other, so it
/// costs a few statements for the key, not a few for each pair.
#[test]
fn test_an_import_of_an_agents_key_held_in_many_sessions_costs_statements_by_key_not_by_pair() {
    const CALLS: usize = 2_000;
    let sql = database();
    let mut lines = vec![header()];
    for i in 0..CALLS {
        let id = format!("01m8wd82f91ktpz8e5m{i:07}");
        let valid_from = format!("2026-02-01T00:{:02}:{:02}.000Z", i / 60 % 60, i % 60);
        lines.extend(said_by(
            &format!("call-{i}"),
            "assistant",
            &id,
            &format!("The refund reference is RF-{}.", 100_000 + i),
            "project.refund_reference",
            &valid_from,
        ));
    }
    let recorded = support::Recorded::new(&sql, |_| true);
    with_profile(&recorded, APRIL_15, |p| assert_eq!(p.import(&file(&lines)).unwrap().memories, CALLS));
    let statements = recorded.seen.borrow().len();
    let active = sql.query("SELECT COUNT(*) FROM memories WHERE status = 'active'", &[]).unwrap()[0][0].as_i64();
    assert_eq!(active, Some(CALLS as i64), "each call's reference stays active");
    // 42 when written; the first version weighed every pair: over five
    // minutes, millions of statements.
    assert!(statements < 100, "{statements} statements");
}

#[test]
fn test_import_into_a_profile_marked_for_deletion_counts_it_empty_and_purges_nothing() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({}))])).unwrap();
        block_on(p.dispatch("deleteProfile", json!({}))).unwrap();
        let before = snapshot(&sql);
        let linked = file(&[header(), memory(SECOND, "Alpha lives in Rome.", json!({ "supersedes": FIRST }))]);
        let e = block_on(p.dispatch("import", json!({ "data": linked }))).unwrap_err();
        assert_eq!(e.status(), 400, "{e}");
        assert_eq!(snapshot(&sql), before, "the refused import purged the marked profile");
    });
}

#[test]
fn test_import_into_a_profile_awaiting_its_namespace_purge_counts_it_empty_before_anything_is_written() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({}))])).unwrap();
        let before = snapshot(&sql);
        let linked = file(&[header(), memory(SECOND, "Alpha lives in Rome.", json!({ "supersedes": FIRST }))]);
        let call = || agent_memory::core::op::Call::decode(agent_memory::core::op::Op::Import, json!({ "data": linked })).unwrap();
        // Its namespace was deleted: the memory it links to will be purged
        // before the write, so the link is refused at the check, before the
        // Durable Object registers the profile (or purges it).
        let e = p.prepare_as(call(), true).err().expect("a link into what the purge removes");
        assert_eq!(e.status(), 400, "{e}");
        assert_eq!(snapshot(&sql), before, "the refused import changed the profile");
        // Without a pending purge the same link is taken.
        assert!(p.prepare_as(call(), false).is_ok());
    });
}

// ---------------------------------------------------------------------------
// What the service exports, it imports.

/// Two facts of one key said out of order, ingested a day apart: the
/// later call's was said earlier. Supersession follows the calls,
/// validity the saying.
fn said_out_of_order(sql: &NativeSql) {
    let day = |d: i64| agent_memory::core::time::iso(APRIL_15 - 30 * DAY + d * DAY);
    let said = |content: &str, d: i64| MessageInput { role: "user".into(), content: content.into(), timestamp: Some(day(d)) };
    let calls = [(APRIL_15 - DAY, "late", "Use pnpm, not npm, for this project.", 10), (APRIL_15, "early", "Actually, switch to npm for this project.", 1)];
    for (now, session, content, d) in calls {
        with_profile(sql, now, |p| {
            block_on(p.ingest(IngestRequest { messages: vec![said(content, d)], session_id: Some(session.into()), metadata: Default::default() })).unwrap();
        });
    }
}

#[test]
fn test_an_export_of_versions_said_out_of_order_imports_elsewhere() {
    let src = database();
    said_out_of_order(&src);
    let export = with_profile(&src, APRIL_15, |p| {
        let memories = all(p);
        assert!(memories.iter().any(|m| m.status == Status::Superseded), "{memories:#?}");
        for m in &memories {
            if let (Some(from), Some(to)) = (&m.valid_from, &m.valid_to) {
                assert!(to >= from, "{} is valid from {from} to {to}", m.id);
            }
        }
        p.export(Default::default()).unwrap()
    });
    let dst = database();
    with_profile(&dst, APRIL_15 + DAY, |p| {
        p.import(&export).unwrap();
        let again = p.export(Default::default()).unwrap();
        assert_eq!(export.lines().skip(1).collect::<Vec<_>>(), again.lines().skip(1).collect::<Vec<_>>());
    });
}

#[test]
fn test_a_filtered_export_imports_into_an_empty_profile() {
    let src = database();
    said_out_of_order(&src);
    let (export, kept) = with_profile(&src, APRIL_15, |p| {
        let memories = all(p);
        let old = memories.iter().find(|m| m.status == Status::Superseded).expect("a superseded version");
        let new = old.superseded_by.clone().expect("its successor");
        // Only the old version passes: its link names one the file lacks.
        let created = old.created_at.clone();
        let export = p.export(ExportRequest { filter: Some(json!({ "createdAt": { "lte": created } })) }).unwrap();
        assert!(!export.contains(&format!("\"id\":\"{new}\"")), "{export}");
        (export, old.id.clone())
    });
    let kept_ids = src.query("SELECT COUNT(*) FROM export_kept", &[]).unwrap()[0][0].as_i64();
    assert_eq!(kept_ids, Some(0), "the ids the filter kept are forgotten once the file is written");
    let dst = database();
    with_profile(&dst, APRIL_15, |p| {
        p.import(&export).unwrap();
        let m = p.get(&kept).unwrap().memory;
        assert_eq!((m.status, m.superseded_by), (Status::Superseded, None));
    });
}

#[test]
fn test_migration_13_ends_no_validity_before_it_begins() {
    let sql = support::database_at(12);
    // Valid from day 10 until day 1; from day 1 until day 10; open.
    let rows = [
        ("m1", "2026-03-26T10:00:00.000Z", Some("2026-03-17T10:00:00.000Z")),
        ("m2", "2026-03-17T10:00:00.000Z", Some("2026-03-26T10:00:00.000Z")),
        ("m3", "2026-03-17T10:00:00.000Z", None),
    ];
    for (id, from, to) in rows {
        sql.execute(
            "INSERT INTO memories (id, type, summary, content, session_id, source_message_ids, search_queries, status, fingerprint, created_at, updated_at, valid_from, valid_to) \
             VALUES (?1, 'fact', 's', 'c', '', '[]', '[]', 'superseded', ?1, '2026-04-01T00:00:00.000Z', '2026-04-01T00:00:00.000Z', ?2, ?3)",
            &[id.into(), from.into(), to.map_or(agent_memory::core::ports::SqlValue::Null, Into::into)],
        )
        .unwrap();
    }
    agent_memory::core::schema::migrate(&sql).unwrap();
    let to = |id: &str| sql.query("SELECT valid_to FROM memories WHERE id = ?", &[id.into()]).unwrap()[0][0].opt_string();
    assert_eq!(to("m1").as_deref(), Some("2026-03-26T10:00:00.000Z"), "ends where it begins");
    assert_eq!(to("m2").as_deref(), Some("2026-03-26T10:00:00.000Z"), "a proper interval is kept");
    assert_eq!(to("m3"), None);
}

#[test]
fn test_versions_said_out_of_order_in_one_call_never_end_before_they_begin() {
    let sql = database();
    let day = |d: i64| agent_memory::core::time::iso(APRIL_15 - 30 * DAY + d * DAY);
    let said = |content: &str, d: i64| MessageInput { role: "user".into(), content: content.into(), timestamp: Some(day(d)) };
    with_profile(&sql, APRIL_15, |p| {
        let messages = vec![said("Use pnpm, not npm, for this project.", 10), said("Actually, switch to npm for this project.", 1)];
        block_on(p.ingest(IngestRequest { messages, session_id: Some("s".into()), metadata: Default::default() })).unwrap();
        let memories = all(p);
        let old = memories.iter().find(|m| m.status == Status::Superseded).expect("the first version, superseded in the call");
        assert_eq!((old.valid_from.as_deref(), old.valid_to.as_deref()), (Some(day(10).as_str()), Some(day(10).as_str())));
    });
}

#[test]
fn test_a_memory_retired_into_one_said_before_it_ends_where_it_begins() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let old = memory(FIRST, "Alpha lives in Oslo.", json!({ "validFrom": "2026-03-26T10:00:00.000Z" }));
        let new = memory(SECOND, "Alpha lives in Rome.", json!({ "validFrom": "2026-03-17T10:00:00.000Z" }));
        p.import(&file(&[header(), old, new])).unwrap();
        p.store().retire_into(FIRST, SECOND, Some("2026-03-17T10:00:00.000Z")).unwrap();
        assert_eq!(p.get(FIRST).unwrap().memory.valid_to.as_deref(), Some("2026-03-26T10:00:00.000Z"));
        p.store().supersede(FIRST, SECOND).unwrap();
        assert_eq!(p.get(FIRST).unwrap().memory.valid_to.as_deref(), Some("2026-03-26T10:00:00.000Z"));
    });
}

#[test]
fn test_import_with_a_record_before_the_header_or_a_second_header_is_refused() {
    let e = refused(&file(&[memory(FIRST, "Alpha lives in Oslo.", json!({})), header()]));
    assert!(e.message().contains("line 1") && e.message().contains("header must come first"), "{e}");
    let e = refused(&file(&[header(), memory(FIRST, "Alpha lives in Oslo.", json!({})), header()]));
    assert!(e.message().contains("line 3") && e.message().contains("second header"), "{e}");
}

#[test]
fn test_an_export_read_in_pages_holds_every_record_once_in_order() {
    // More messages and memories than an export reads at once, in three
    // sessions of two teams; each message states something, so each is
    // cited by a memory.
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for (s, team) in [("s1", "a"), ("s2", "b"), ("s3", "a")] {
            let messages =
                (0..300).map(|i| MessageInput { role: "user".into(), content: format!("My locker number in {s} is {i}."), timestamp: None }).collect();
            let mut metadata = agent_memory::core::model::Metadata::default();
            metadata.insert("team".into(), agent_memory::core::model::MetaValue::Text(team.into()));
            block_on(p.ingest(IngestRequest { messages, session_id: Some(s.into()), metadata })).unwrap();
        }
    });
    let ids = |export: &str, kind: &str| -> Vec<String> {
        export
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["kind"] == kind)
            .map(|v| v["id"].as_str().unwrap().to_string())
            .collect()
    };
    with_profile(&sql, APRIL_15, |p| {
        let store = p.store();
        let messages: Vec<String> = store.all_messages().unwrap().into_iter().map(|m| m.id).collect();
        let mut memories: Vec<String> = all(p).into_iter().map(|m| m.id).collect();
        memories.sort();
        assert!(messages.len() == 900 && memories.len() > 600, "{} messages, {} memories", messages.len(), memories.len());

        let export = p.export(Default::default()).unwrap();
        assert_eq!(ids(&export, "message"), messages, "every message once, by session then position");
        assert_eq!(ids(&export, "memory"), memories, "every memory once, by id");

        // Filtered: team b's memories, and exactly the messages they cite.
        let export = p.export(ExportRequest { filter: Some(json!({ "team": "b" })) }).unwrap();
        let kept: Vec<agent_memory::core::model::Memory> =
            all(p).into_iter().filter(|m| m.metadata.get("team") == Some(&agent_memory::core::model::MetaValue::Text("b".into()))).collect();
        let mut kept_ids: Vec<String> = kept.iter().map(|m| m.id.clone()).collect();
        kept_ids.sort();
        let cited: std::collections::HashSet<&String> = kept.iter().flat_map(|m| &m.source_message_ids).collect();
        assert_eq!(ids(&export, "memory"), kept_ids);
        assert_eq!(ids(&export, "message"), messages.iter().filter(|id| cited.contains(id)).cloned().collect::<Vec<_>>());
        assert_eq!(cited.len(), 300, "the filter kept session s2's memories, citing its 300 messages");
    });
}

/// An export reads memories a page at a time, each page cut at
/// `PAGE_TEXT_BYTES` of their texts: large memories take more pages, and
/// every one is in the file once, in id order.
#[test]
fn test_an_export_of_large_memories_holds_every_one_once_in_order() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for i in 0..80 {
            let req = serde_json::from_value(json!({ "content": support::long_statement(i) })).unwrap();
            block_on(p.remember(req)).unwrap();
        }
        let mut expected: Vec<String> = all(p).into_iter().map(|m| m.id).collect();
        expected.sort();
        assert_eq!(expected.len(), 80);
        let export = p.export(Default::default()).unwrap();
        let got: Vec<String> = export
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["kind"] == "memory")
            .map(|v| v["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(got, expected);
    });
}

/// Ingests `n` messages of about 32 KB into session `session`.
fn ingest_long(p: &Profile<'_>, session: &str, n: usize) {
    let messages = (0..n)
        .map(|i| MessageInput { role: "user".into(), content: format!("My desk is number {i}. {}", "Plain words here. ".repeat(1800)), timestamp: None })
        .collect();
    block_on(p.ingest(IngestRequest { messages, session_id: Some(session.into()), metadata: Default::default() })).unwrap();
}

/// The spooled exports' parts left in the database.
fn spooled_parts(sql: &NativeSql) -> i64 {
    sql.query("SELECT COUNT(*) FROM export_spool", &[]).unwrap()[0][0].as_i64().unwrap()
}

/// A spooled export read out part by part, as the object streams it.
fn read_out(sql: &NativeSql, spooled: portable::Spooled) -> String {
    let mut file = Vec::new();
    for part in SpooledParts::new(sql, spooled, |e| panic!("{e}")) {
        let part = part.unwrap();
        assert!(part.len() <= EXPORT_PART_BYTES, "a part of {} bytes", part.len());
        file.extend(part);
    }
    String::from_utf8(file).unwrap()
}

/// The file's records, its header (which carries the time) aside.
fn records(file: &str) -> Vec<&str> {
    file.lines().skip(1).collect()
}

#[test]
fn test_an_export_spooled_in_parts_joins_to_the_file_and_leaves_the_spool_once_read() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        ingest_long(p, "s1", 100);
        let spooled = p.spool_export(Default::default()).unwrap();
        assert!(spooled.parts >= 6, "{} parts", spooled.parts);
        assert_eq!(spooled_parts(&sql), spooled.parts);
        let file = read_out(&sql, spooled);
        assert_eq!(spooled_parts(&sql), 0, "the export left the spool");
        assert!(file.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()), "the joined parts are whole records");
        assert_eq!(records(&file), records(&p.export(Default::default()).unwrap()));
        assert_eq!(file.lines().filter(|l| l.contains("\"kind\":\"message\"")).count(), 100);
        assert_eq!(spooled_parts(&sql), 0, "an export read whole leaves nothing spooled");
    });
}

#[test]
fn test_an_export_reads_out_the_profile_as_it_was_when_asked_whatever_is_written_meanwhile() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        ingest_long(p, "s1", 40);
        ingest_long(p, "s2", 40);
        let before = p.export(Default::default()).unwrap();
        let spooled = p.spool_export(Default::default()).unwrap();
        // While it is read out: a session deleted, another ingested.
        let mut parts = SpooledParts::new(&sql, spooled, |e| panic!("{e}"));
        let mut file = parts.next().unwrap().unwrap();
        p.delete_session("s1").unwrap();
        ingest_long(p, "s3", 10);
        parts.try_for_each(|part| part.map(|part| file.extend(part))).unwrap();
        let file = String::from_utf8(file).unwrap();
        assert_eq!(records(&file), records(&before));
        assert!(!p.export(Default::default()).unwrap().contains("\"sessionId\":\"s1\""), "the profile itself did change");
        // The file imports into an empty profile.
        let other = database();
        with_profile(&other, APRIL_15, |q| q.import(&file).unwrap());
        assert_eq!(records(&with_profile(&other, APRIL_15, |q| q.export(Default::default()).unwrap())), records(&before));
    });
}

#[test]
fn test_an_export_whose_reading_ends_early_leaves_the_spool() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        ingest_long(p, "s1", 40);
        let kept = p.spool_export(Default::default()).unwrap();
        let mut parts = SpooledParts::new(&sql, p.spool_export(Default::default()).unwrap(), |e| panic!("{e}"));
        parts.next().unwrap().unwrap();
        assert_eq!(p.stats().unwrap().spooled_exports, 2, "stats show both");
        drop(parts);
        assert_eq!(spooled_parts(&sql), kept.parts, "the export dropped part-read left; the other stayed");
        assert_eq!(p.stats().unwrap().spooled_exports, 1);
        // A part gone (the profile was emptied) ends the reading with an
        // error, and what is left of the export goes.
        let mut parts = SpooledParts::new(&sql, kept, |e| panic!("{e}"));
        parts.next().unwrap().unwrap();
        sql.execute("DELETE FROM export_spool WHERE part = 1", &[]).unwrap();
        assert!(parts.next().unwrap().is_err());
        assert!(parts.next().is_none(), "the reading ended");
        assert_eq!(spooled_parts(&sql), 0);
    });
}

#[test]
fn test_a_third_export_read_out_at_once_is_refused_and_taken_once_one_is_read() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        ingest_long(p, "s1", 20);
        let first = p.spool_export(Default::default()).unwrap();
        let _second = p.spool_export(Default::default()).unwrap();
        let before = spooled_parts(&sql);
        let err = p.spool_export(Default::default()).unwrap_err();
        assert!(err.is_conflict(), "{err:?}");
        assert!(err.message().contains("2 exports of this profile are being read out"), "{}", err.message());
        assert_eq!(spooled_parts(&sql), before, "the refused export spooled nothing");
        read_out(&sql, first);
        assert!(p.spool_export(Default::default()).is_ok(), "taken once one is read out");
    });
    // An hour on, the two left unread are taken as abandoned: removed when
    // another is asked for.
    let later = APRIL_15 + agent_memory::core::portable::ABANDONED_EXPORT_MILLIS + 1;
    let third = with_profile(&sql, later, |p| p.spool_export(Default::default()).unwrap());
    assert_eq!(spooled_parts(&sql), third.parts, "only the new export is spooled");
}

#[test]
fn test_a_wipe_removes_spooled_exports_and_never_reuses_their_numbers() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        ingest_long(p, "s1", 20);
        let first = p.spool_export(Default::default()).unwrap();
        p.wipe().unwrap();
        assert_eq!(spooled_parts(&sql), 0, "a wiped profile's export does not outlive it");
        let err = Store::new(&sql, APRIL_15).export_part(first.export, 0).unwrap_err();
        assert!(err.message().contains("gone"), "{}", err.message());
        let second = p.spool_export(Default::default()).unwrap();
        assert!(second.export > first.export, "export {} after {}", second.export, first.export);
        // Removing what is left of the first touches nothing of the second.
        Store::new(&sql, APRIL_15).drop_export(first.export).unwrap();
        assert_eq!(spooled_parts(&sql), second.parts);
    });
}

// ---------------------------------------------------------------------------
// Every export imports: what the service stores, by any way in, is what
// import accepts, and an export holds all of it.

/// Exports `sql`'s profile, imports the file into a fresh one, and checks
/// that the file held every record and that the fresh profile took them.
fn exports_whole_and_imports(sql: &NativeSql) {
    let (file, stored) = with_profile(sql, APRIL_15, |p| (p.export(ExportRequest::default()).unwrap(), counts(p)));
    let held = |kind: &str| file.lines().skip(1).filter(|l| serde_json::from_str::<Value>(l).unwrap()["kind"] == kind).count() as i64;
    assert_eq!((held("message"), held("memory")), stored, "the export left records out");
    let fresh = database();
    with_profile(&fresh, APRIL_15, |p| {
        p.import(&file).unwrap_or_else(|e| panic!("the export does not import: {e}"));
        assert_eq!(counts(p), stored);
    });
}

fn session_of(tag: &str, session: &str, n: usize) -> IngestRequest {
    IngestRequest {
        messages: (0..n).map(|i| MessageInput { role: "user".into(), content: format!("{tag} wrote line {i} of the notes."), timestamp: None }).collect(),
        session_id: Some(session.into()),
        metadata: Default::default(),
    }
}

#[test]
fn test_export_keeps_every_message_of_a_session_whose_positions_repeat() {
    // Two profiles with a session "chat" of their own: importing one's
    // export into the other gives each position of "chat" two messages,
    // and the export's pages (32 messages) end between them.
    let other = database();
    let file = with_profile(&other, APRIL_15, |p| {
        block_on(p.ingest(session_of("Bob", "chat", 40))).unwrap();
        p.export(ExportRequest::default()).unwrap()
    });
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(session_of("Ann", "aaa", 1))).unwrap();
        block_on(p.ingest(session_of("Ann", "chat", 40))).unwrap();
        p.import(&file).unwrap();
        assert_eq!(counts(p).0, 81);
    });
    exports_whole_and_imports(&sql);
}

#[test]
fn test_a_remembered_day_off_the_calendar_is_no_event_date() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let m = block_on(p.dispatch("remember", json!({ "content": "The invoice is dated 2023-02-30 by mistake." }))).unwrap();
        assert_eq!(m["eventDate"], Value::Null, "{m}");
        let m = block_on(p.dispatch("remember", json!({ "content": "The invoice of 2023-02-30 was paid on 2023-03-02." }))).unwrap();
        assert_eq!(m["eventDate"], "2023-03-02", "{m}");
    });
    exports_whole_and_imports(&sql);
}

#[test]
fn test_a_remembered_text_its_dates_would_take_past_the_limit_is_stored_as_sent() {
    let sql = database();
    let sent = "We meet tonight. ".repeat(1900).trim().to_string();
    assert!(sent.len() <= agent_memory::core::api::MAX_MESSAGE_BYTES);
    with_profile(&sql, APRIL_15, |p| {
        let m = block_on(p.dispatch("remember", json!({ "content": sent }))).unwrap();
        assert_eq!(m["content"], sent.as_str());
        // A short one still has its dates written out.
        let m = block_on(p.dispatch("remember", json!({ "content": "We meet tonight." }))).unwrap();
        assert_ne!(m["content"], "We meet tonight.", "{m}");
    });
    exports_whole_and_imports(&sql);
}

#[test]
fn test_a_sentence_of_a_message_at_the_limit_becomes_a_memory_import_accepts() {
    // One sentence of 32 KB: its memory says who said it ("User: ...")
    // and writes "today" out, both past the limit a memory is held to.
    let limit = agent_memory::core::api::MAX_MESSAGE_BYTES;
    let mut content = String::from("I deployed the billing service today and the ");
    while content.len() < limit - 40 {
        content.push_str("queue ");
    }
    content.push_str("drained today.");
    assert!(content.len() <= limit);
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(IngestRequest { messages: vec![support::msg("user", &content)], session_id: Some("s1".into()), metadata: Default::default() }))
            .unwrap();
        let stored = all(p);
        assert!(!stored.is_empty());
        assert!(stored.iter().all(|m| m.content.len() <= limit && m.summary.len() <= limit));
    });
    exports_whole_and_imports(&sql);
}

#[test]
fn test_import_refuses_a_position_past_the_largest() {
    let largest = agent_memory::core::api::MAX_POSITION;
    let e = refused(&file(&[header(), message("Hello.", json!({ "position": largest + 1 }))]));
    assert!(e.to_string().contains("position"), "{e}");
    refused(&file(&[header(), message("Hello.", json!({ "position": i64::MAX }))]));
}

#[test]
fn test_ingest_continues_a_session_imported_near_the_largest_position_up_to_it() {
    let largest = agent_memory::core::api::MAX_POSITION;
    let sql = database();
    let two = |a: &str, b: &str| IngestRequest {
        messages: vec![support::msg("user", a), support::msg("user", b)],
        session_id: Some("s1".into()),
        metadata: Default::default(),
    };
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file(&[header(), message("Hello.", json!({ "position": largest - 2 }))])).unwrap();
        block_on(p.ingest(two("My name is Ann.", "I live in Oslo."))).unwrap();
        let positions: Vec<i64> = p.store().session_messages("s1").unwrap().iter().map(|m| m.position).collect();
        assert_eq!(positions, [largest - 2, largest - 1, largest]);
        // Past it: refused, and nothing of the call is stored.
        let before = snapshot(&sql);
        let e = block_on(p.ingest(two("I work at Acme.", "I like tea."))).unwrap_err();
        assert_eq!(e.status(), 400, "{e}");
        assert_eq!(snapshot(&sql), before);
    });
    exports_whole_and_imports(&sql);
}

/// A statement said again in a second session is recorded as a
/// restatement; the export carries it, an import writes it back, and in
/// the imported profile deleting the first session moves the memory to
/// the second, as in the profile exported.
#[test]
fn test_a_restatement_travels_through_export_and_import() {
    let said = "The build server runs on Debian twelve.";
    let from = database();
    let export = with_profile(&from, APRIL_15, |p| {
        for s in ["a", "b"] {
            let messages = vec![MessageInput { role: "user".into(), content: said.into(), timestamp: None }];
            block_on(p.ingest(IngestRequest { messages, session_id: Some(s.into()), metadata: Default::default() })).unwrap();
        }
        p.export(ExportRequest::default()).unwrap()
    });
    let restatements: Vec<Value> = export.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|v| v["kind"] == "restatement").collect();
    assert_eq!(restatements.len(), 1, "{export}");
    let to = database();
    with_profile(&to, APRIL_15 + DAY, |p| {
        p.import(&export).unwrap();
        assert_eq!(p.export(ExportRequest::default()).unwrap().lines().skip(1).collect::<Vec<_>>(), export.lines().skip(1).collect::<Vec<_>>());
        p.delete_session("a").unwrap();
        let kept: Vec<_> = p.list(ListRequest::default()).unwrap().memories.into_iter().filter(|m| m.content.contains("Debian")).collect();
        assert_eq!(kept.len(), 1, "moved to session b, not deleted");
        assert_eq!(kept[0].session_id, "b");
        assert_eq!(Value::String(kept[0].id.clone()), restatements[0]["memoryId"]);
    });
}

#[test]
fn test_import_of_a_restatement_naming_what_neither_the_file_nor_the_profile_holds_is_refused() {
    let m = memory(FIRST, "The build server runs on Debian twelve.", json!({}));
    let g = message("The build server runs on Debian twelve.", json!({}));
    let id = agent_memory::core::ids::message_id("s1", "user", "The build server runs on Debian twelve.");
    let restated = |memory: &str, message: &str| json!({ "kind": "restatement", "memoryId": memory, "messageId": message }).to_string();
    let e = refused(&file(&[header(), m.clone(), restated(FIRST, "0123456789abcdef0123456789abcdee")]));
    assert!(e.message().contains("messageId names message 0123456789abcdef0123456789abcdee"), "{e}");
    let e = refused(&file(&[header(), g.clone(), restated(SECOND, &id)]));
    assert!(e.message().contains(&format!("memoryId names memory {SECOND}")), "{e}");
    let e = refused(&file(&[header(), m.clone(), g.clone(), restated(FIRST, &id), restated(FIRST, &id)]));
    assert!(e.message().contains("repeats line 4"), "{e}");
    let e = refused(&file(&[header(), m, g, json!({ "kind": "restatement", "memoryId": FIRST, "messageId": id, "at": 1 }).to_string()]));
    assert!(e.message().contains("at"), "{e}");
}

/// A file whose messages each name a deep repeat of other words (the
/// 9,999th saying of each) would cost an import 10,000 hashes a record:
/// past [`Repeats::MAX_HASHED`] for the file, it is refused and nothing is
/// written. One record at such a depth still imports.
///
/// [`Repeats::MAX_HASHED`]: agent_memory::core::ids::Repeats::MAX_HASHED
#[test]
fn test_an_import_naming_deep_repeats_of_many_words_is_refused_past_its_hashing_budget() {
    use agent_memory::core::ids::{repeated_message_id, Repeats};
    let deep = |i: usize| {
        let content = format!("Word number {i} said again and again.");
        let id = repeated_message_id("s1", "user", &content, 9_999);
        json!({ "kind": "message", "id": id, "sessionId": "s1", "role": "user", "content": content, "position": i, "createdAt": "2026-01-01T00:00:00.000Z" })
            .to_string()
    };
    let records = Repeats::MAX_HASHED / 10_000 + 1;
    let mut lines = vec![header()];
    lines.extend((0..records).map(deep));
    let e = refused(&file(&lines));
    assert!(e.message().contains("past what an import checks"), "{e}");
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let report = p.import(&file(&[header(), deep(0)])).unwrap();
        assert_eq!(report.messages, 1);
    });
}

/// A memory deleted by id leaves, on the message that said it again, its
/// fingerprint (a `withheld` record): the export carries it and an import
/// writes it back, so the imported profile's retries do not store the
/// deleted statement anew either.
#[test]
fn test_a_withheld_fingerprint_travels_through_export_and_import() {
    let said = "The build server runs on Debian twelve.";
    let from = database();
    let export = with_profile(&from, APRIL_15, |p| {
        let mut first = None;
        for s in ["a", "b"] {
            let messages = vec![MessageInput { role: "user".into(), content: said.into(), timestamp: None }];
            let r = block_on(p.ingest(IngestRequest { messages, session_id: Some(s.into()), metadata: Default::default() })).unwrap();
            first = first.or(r.memories.first().map(|m| m.id.clone()));
        }
        p.delete(&first.unwrap()).unwrap();
        p.export(ExportRequest::default()).unwrap()
    });
    let withheld: Vec<Value> = export.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|v| v["kind"] == "withheld").collect();
    assert_eq!(withheld.len(), 1, "{export}");
    assert!(!export.contains("\"kind\":\"memory\""), "the memory is gone: {export}");
    let to = database();
    with_profile(&to, APRIL_15 + DAY, |p| {
        p.import(&export).unwrap();
        assert_eq!(p.export(ExportRequest::default()).unwrap().lines().skip(1).collect::<Vec<_>>(), export.lines().skip(1).collect::<Vec<_>>());
    });
}

#[test]
fn test_import_of_a_withheld_record_naming_no_message_or_no_fingerprint_is_refused() {
    let g = message("The build server runs on Debian twelve.", json!({}));
    let id = agent_memory::core::ids::message_id("s1", "user", "The build server runs on Debian twelve.");
    let withheld = |message: &str, fingerprint: &str| json!({ "kind": "withheld", "messageId": message, "fingerprint": fingerprint }).to_string();
    let fp = "00112233445566778899aabbccddeeff";
    let e = refused(&file(&[header(), withheld("0123456789abcdef0123456789abcdee", fp)]));
    assert!(e.message().contains("messageId names message 0123456789abcdef0123456789abcdee"), "{e}");
    let e = refused(&file(&[header(), g.clone(), withheld(&id, "Debian")]));
    assert!(e.message().contains("fingerprint"), "{e}");
    let e = refused(&file(&[header(), g.clone(), withheld(&id, fp), withheld(&id, fp)]));
    assert!(e.message().contains("repeats line 3"), "{e}");
    let e = refused(&file(&[header(), g.clone(), json!({ "kind": "withheld", "messageId": id, "fingerprint": fp, "content": "x" }).to_string()]));
    assert!(e.message().contains("content"), "{e}");
    with_profile(&database(), APRIL_15, |p| {
        p.import(&file(&[header(), g, withheld(&id, fp)])).unwrap();
        assert!(p.export(ExportRequest::default()).unwrap().contains(&format!("\"fingerprint\":\"{fp}\"")));
    });
}

/// A record whose status ended its validity but whose dates leave it open
/// (a superseded memory without `validTo`, an expired one without
/// `expiresAt`) is closed on import, so an `asOf` read of now agrees with
/// the status: before, all three were valid now beside the current value.
#[test]
fn test_import_closes_the_validity_a_records_status_ended() {
    let third = "01m8wd82f91ktpz8e5mx00g5ws";
    let lines = [
        header(),
        memory(FIRST, "The office is in Berlin.", json!({ "status": "superseded", "supersededBy": SECOND, "validFrom": "2026-01-01T00:00:00.000Z" })),
        memory(
            SECOND,
            "The office is in Munich.",
            json!({ "supersedes": FIRST, "validFrom": "2026-02-01T00:00:00.000Z", "createdAt": "2026-02-01T00:00:00.000Z", "updatedAt": "2026-02-01T00:00:00.000Z" }),
        ),
        memory(third, "Renew the office lease by March.", json!({ "type": "task", "status": "expired", "updatedAt": "2026-03-01T00:00:00.000Z" })),
    ];
    with_profile(&database(), APRIL_15, |p| {
        p.import(&file(&lines)).unwrap();
        let now: ListRequest = serde_json::from_value(json!({ "asOf": "2026-04-15T10:00:00.000Z", "status": "all" })).unwrap();
        let valid: Vec<String> = p.list(now).unwrap().memories.into_iter().map(|m| m.id).collect();
        assert_eq!(valid, vec![SECOND.to_string()]);
        let january: ListRequest = serde_json::from_value(json!({ "asOf": "2026-01-15T00:00:00.000Z", "status": "all" })).unwrap();
        let mut valid: Vec<String> = p.list(january).unwrap().memories.into_iter().map(|m| m.id).collect();
        valid.sort();
        assert_eq!(valid, vec![FIRST.to_string(), third.to_string()], "each was valid before it ended");
        assert_eq!(p.get(FIRST).unwrap().memory.valid_to.as_deref(), Some("2026-02-01T00:00:00.000Z"), "Berlin ends where Munich begins");
    });
}

#[test]
fn test_import_of_a_consolidation_record_that_does_not_hold_is_refused() {
    let m = memory(FIRST, "The build server runs on Debian twelve.", json!({}));
    let copy = |id: &str| {
        let mut c: Value = serde_json::from_str(&memory(id, "The build server runs on Debian twelve.", json!({}))).unwrap();
        c.as_object_mut().unwrap().remove("kind");
        c
    };
    let record = |extra: Value| {
        let mut c = json!({
            "kind": "consolidation", "id": 1, "runId": "c-1", "action": "merge", "target": FIRST, "members": [FIRST], "created": [],
            "reason": "alike", "at": "2026-04-15T10:00:00.000Z", "before": [copy(FIRST)]
        });
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c.to_string()
    };
    let e = refused(&file(&[header(), m.clone(), record(json!({ "action": "shuffle" }))]));
    assert!(e.message().contains("action"), "{e}");
    let e = refused(&file(&[header(), m.clone(), record(json!({ "members": [FIRST, SECOND], "before": [copy(FIRST), copy(SECOND)] }))]));
    assert!(e.message().contains(&format!("members names memory {SECOND}")), "{e}");
    // What the record says it did must be what the file's memories show:
    // a merged member superseded by the target, a fold's creation its
    // target, a retirement creating nothing.
    let active_second = memory(SECOND, "The build server is in Frankfurt.", json!({}));
    let e = refused(&file(&[header(), m.clone(), active_second.clone(), record(json!({ "members": [FIRST, SECOND], "before": [copy(FIRST), copy(SECOND)] }))]));
    assert!(e.message().contains("not superseded by its target"), "{e}");
    let e = refused(&file(&[header(), m.clone(), active_second, record(json!({ "action": "retire", "created": [SECOND] }))]));
    assert!(e.message().contains("created nothing"), "{e}");
    let e = refused(&file(&[header(), m.clone(), record(json!({ "before": [copy(FIRST), copy(FIRST)] }))]));
    assert!(e.message().contains("one copy of each member"), "{e}");
    let e = refused(&file(&[header(), m.clone(), record(json!({})), record(json!({}))]));
    assert!(e.message().contains("repeats line 3"), "{e}");
    let e = refused(&file(&[header(), m.clone(), record(json!({ "undone": true }))]));
    assert!(e.message().contains("undone"), "{e}");
    let mut stranger: Value = serde_json::from_str(&memory(SECOND, "Another memory entirely.", json!({}))).unwrap();
    stranger.as_object_mut().unwrap().remove("kind");
    let e = refused(&file(&[header(), m.clone(), record(json!({ "before": [stranger] }))]));
    assert!(e.message().contains("neither its target nor a member"), "{e}");
    let mut misspelt: Value = serde_json::from_str(&memory(FIRST, "The build server runs on Debian twelve.", json!({}))).unwrap();
    misspelt.as_object_mut().unwrap().remove("kind");
    misspelt["expiresAtt"] = json!("2030-01-01T00:00:00Z");
    let e = refused(&file(&[header(), m.clone(), record(json!({ "before": [misspelt] }))]));
    assert!(e.message().contains("expiresAtt"), "{e}");
    let e = refused(&file(&[header(), m, record(json!({ "at": "yesterday" }))]));
    assert!(e.message().contains("at"), "{e}");
}

/// A consolidation record touching a memory the profile held before the
/// import is left out: the held memory stays as it is, and an undo of the
/// record would have written the file's copy of it over the profile's.
#[test]
fn test_an_imported_consolidation_record_never_reaches_a_memory_held_before() {
    let held = memory(FIRST, "The build server runs on Debian twelve.", json!({}));
    let mut copy: Value = serde_json::from_str(&memory(FIRST, "Words the profile never held.", json!({}))).unwrap();
    copy.as_object_mut().unwrap().remove("kind");
    let record = json!({
        "kind": "consolidation", "id": 7, "runId": "c-1", "action": "retire", "target": FIRST, "members": [FIRST], "created": [],
        "reason": "stale", "at": "2026-01-01T00:00:00.000Z", "before": [copy]
    })
    .to_string();
    with_profile(&database(), APRIL_15, |p| {
        p.import(&file(&[header(), held.clone()])).unwrap();
        let report = p.import(&file(&[header(), held, record])).unwrap();
        assert_eq!(report.consolidations_left_out, 1, "the record left out is counted");
        assert_eq!(p.undo_consolidation(7).unwrap_err().status(), 404, "the record was not written");
        assert_eq!(p.get(FIRST).unwrap().memory.content, "The build server runs on Debian twelve.");
    });
}

/// Two records of the file recording one change (the same run, action,
/// target and time, under two ids): the second is not written, and the
/// report counts it left out.
#[test]
fn test_a_record_of_a_change_held_already_is_counted_left_out() {
    let held = memory(FIRST, "The build server runs on Debian twelve.", json!({}));
    let mut copy: Value = serde_json::from_str(&memory(FIRST, "The build server runs on Debian twelve.", json!({}))).unwrap();
    copy.as_object_mut().unwrap().remove("kind");
    let record = |id: i64| {
        json!({
            "kind": "consolidation", "id": id, "runId": "c-1", "action": "retire", "target": FIRST, "members": [FIRST], "created": [],
            "reason": "stale", "at": "2026-01-01T00:00:00.000Z", "before": [copy.clone()]
        })
        .to_string()
    };
    with_profile(&database(), APRIL_15, |p| {
        let report = p.import(&file(&[header(), held, record(7), record(8)])).unwrap();
        assert_eq!((report.memories, report.consolidations_left_out), (1, 1));
        assert_eq!(p.undo_consolidation(8).unwrap_err().status(), 404, "the second was not written");
    });
}

/// An export holding a fold imported twice writes the fold's record once.
/// (The second import writes no memory, so it leaves every record out
/// before the store's own check is asked: that check is
/// `test_a_consolidation_record_put_again_is_not_written_twice`.)
#[test]
fn test_a_consolidation_record_imported_again_is_written_once() {
    let src = database();
    with_profile(&src, APRIL_15 - 90 * DAY, |p| {
        let messages = vec![support::msg("user", "My favorite color is blue. I live in Edinburgh. I work at Acme as a designer.")];
        block_on(p.ingest(IngestRequest { messages, session_id: Some("s1".into()), metadata: Default::default() })).unwrap();
    });
    let export = with_profile(&src, APRIL_15, |p| {
        let report = block_on(p.consolidate(serde_json::from_value(json!({})).unwrap())).unwrap();
        assert!(report.actions.iter().any(|r| r.action == "fold"), "{report:?}");
        p.export(Default::default()).unwrap()
    });
    assert!(export.contains("\"kind\":\"consolidation\""));
    let dst = database();
    let records = |sql: &NativeSql| sql.query("SELECT COUNT(*) FROM consolidations", &[]).unwrap()[0][0].as_i64().unwrap();
    with_profile(&dst, APRIL_15 + DAY, |p| p.import(&export).unwrap());
    let once = records(&dst);
    assert!(once >= 1);
    with_profile(&dst, APRIL_15 + 2 * DAY, |p| p.import(&export).unwrap());
    assert_eq!(records(&dst), once, "the records imported again were written again");
}

/// The store writes a consolidation record it holds already (the same
/// run, action, target and time) no second time, and one that differs in
/// any of those it writes.
#[test]
fn test_a_consolidation_record_put_again_is_not_written_twice() {
    let sql = database();
    with_profile(&sql, APRIL_15 - 90 * DAY, |p| {
        let messages = vec![support::msg("user", "My favorite color is blue. I live in Edinburgh. I work at Acme as a designer.")];
        block_on(p.ingest(IngestRequest { messages, session_id: Some("s1".into()), metadata: Default::default() })).unwrap();
    });
    let id = with_profile(&sql, APRIL_15, |p| {
        let report = block_on(p.consolidate(serde_json::from_value(json!({})).unwrap())).unwrap();
        report.actions.iter().find(|r| r.action == "fold").expect("a fold").id
    });
    let records = || sql.query("SELECT COUNT(*) FROM consolidations", &[]).unwrap()[0][0].as_i64().unwrap();
    let store = Store::new(&sql, APRIL_15 + DAY);
    let (record, before, created) = store.consolidation(id).unwrap().expect("the fold's record");
    let once = records();
    assert!(!store.put_consolidation(&record, &before, &created).unwrap(), "a held record was written again");
    assert_eq!(records(), once);
    let later = agent_memory::core::model::ConsolidationRecord { at: "2026-04-17T00:00:00.000Z".into(), ..record };
    assert!(store.put_consolidation(&later, &before, &created).unwrap(), "a record of another time is not the one held");
    assert_eq!(records(), once + 1);
}

/// A file's active version that names, as the version before it, one the
/// profile has since replaced (A, then B here): it follows the profile's
/// newest, so the chain reads A, B, X, not X after A with B cut out.
#[test]
fn test_an_imported_version_of_one_the_profile_replaced_since_follows_the_replacement() {
    let sql = database();
    let remember = |p: &Profile<'_>, content: &str| {
        let req = serde_json::from_value(json!({ "content": content, "key": "user.city", "type": "fact" })).unwrap();
        block_on(p.remember(req)).unwrap().id
    };
    let a = with_profile(&sql, APRIL_15, |p| remember(p, "The user lives in Lisbon."));
    let b = with_profile(&sql, APRIL_15 + DAY, |p| remember(p, "The user lives in Porto."));
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        assert_eq!(p.get(&b).unwrap().memory.supersedes.as_deref(), Some(a.as_str()));
        let x = memory(
            FIRST,
            "The user lives in Braga.",
            json!({ "key": "user.city", "supersedes": a, "createdAt": "2026-04-20T00:00:00.000Z", "updatedAt": "2026-04-20T00:00:00.000Z" }),
        );
        p.import(&file(&[header(), x])).unwrap();
        let got = p.get(FIRST).unwrap();
        assert_eq!(p.get(&b).unwrap().memory.superseded_by.as_deref(), Some(FIRST), "B is replaced by the imported version");
        assert_eq!(got.memory.supersedes.as_deref(), Some(b.as_str()), "which names B as the version before it");
        let chain: Vec<&str> = got.versions.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(chain, [a.as_str(), b.as_str(), FIRST]);
    });
}

/// The version chains of one key, whatever order its values are said and
/// imported in, and after one profile's export is imported into another,
/// stay one line: each version superseded by at most one other and that
/// one's `supersedes` naming it back, each valid no longer than until the
/// next was said (never ending before it begins), one active value, and
/// `asOf` at any instant finds at most one.
mod chains_stay_one_line {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};

    fn value(n: usize, day: u8) -> String {
        let id = format!("01m8wd82f91ktpz8e5mx{n:06}");
        memory(&id, &format!("Alpha lives in city number {n}."), json!({ "key": "user.city", "validFrom": format!("2026-02-{day:02}T00:00:00.000Z") }))
    }

    fn check_one_line(p: &Profile<'_>) -> std::result::Result<(), TestCaseError> {
        let all = all(p);
        let by_id: HashMap<&str, &agent_memory::core::model::Memory> = all.iter().map(|m| (m.id.as_str(), m)).collect();
        let mut successors = HashSet::new();
        for m in &all {
            if let Some(next) = &m.superseded_by {
                prop_assert!(successors.insert(next.clone()), "two versions superseded by {next}");
                prop_assert_eq!(by_id.get(next.as_str()).and_then(|n| n.supersedes.as_deref()), Some(m.id.as_str()), "{} -> {} is not named back", m.id, next);
                prop_assert_eq!(
                    &m.valid_to,
                    &by_id.get(next.as_str()).map(|n| n.valid_from.clone().unwrap_or_default().max(m.valid_from.clone().unwrap_or_default())),
                    "{} is valid until {} was said",
                    m.id,
                    next
                );
            }
            prop_assert!(m.valid_to.is_none() || m.valid_to >= m.valid_from, "{} ends before it begins", m.id);
        }
        prop_assert!(all.iter().filter(|m| m.status == Status::Active).count() <= 1);
        for day in 1..=28 {
            let req: ListRequest = serde_json::from_value(json!({ "asOf": format!("2026-02-{day:02}T12:00:00.000Z") })).unwrap();
            prop_assert!(p.list(req).unwrap().memories.len() <= 1, "two values on day {}", day);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        #[test]
        fn test_histories_of_one_key_imported_in_any_order_stay_one_line(events in proptest::collection::vec((any::<bool>(), 1u8..=28), 1..10)) {
            let (a, b) = (database(), database());
            for (n, (in_a, day)) in events.iter().enumerate() {
                let sql = if *in_a { &a } else { &b };
                with_profile(sql, APRIL_15, |p| p.import(&file(&[header(), value(n, *day)])).map(|_| ())).unwrap();
            }
            let export = with_profile(&b, APRIL_15, |p| {
                check_one_line(p)?;
                Ok::<_, TestCaseError>(p.export(Default::default()).unwrap())
            })?;
            with_profile(&a, APRIL_15, |p| {
                check_one_line(p)?;
                p.import(&export).unwrap();
                check_one_line(p)
            })?;
        }
    }
}

/// Two profiles' histories of one key, each ingested in any order of time
/// (so a chain may hold a backdated value), one exported into the other:
/// the merged versions stay one line and `asOf` finds at most one value.
mod ingested_histories_merge_into_one_line {
    use super::*;
    use proptest::prelude::*;

    const FRUITS: [&str; 10] = ["apple", "banana", "cherry", "grape", "mango", "peach", "plum", "lemon", "melon", "guava"];

    fn say(p: &Profile<'_>, n: usize, day: u8) {
        let messages = vec![MessageInput {
            role: "user".into(),
            content: format!("My favorite fruit is {}.", FRUITS[n]),
            timestamp: Some(format!("2024-01-{day:02}T10:00:00Z")),
        }];
        block_on(p.ingest(IngestRequest { messages, session_id: Some(format!("s{n}")), metadata: Default::default() })).unwrap();
    }

    fn check(p: &Profile<'_>) -> std::result::Result<(), TestCaseError> {
        support::one_line_of(p, "favorite fruit", 1..=20).map_err(TestCaseError::fail)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 60, ..ProptestConfig::default() })]
        #[test]
        fn test_two_ingested_histories_of_a_key_merge_into_one_line(events in proptest::collection::vec((any::<bool>(), 1u8..=20), 2..10)) {
            let (a, b) = (database(), database());
            for (n, (in_a, day)) in events.iter().enumerate() {
                with_profile(if *in_a { &a } else { &b }, APRIL_15, |p| say(p, n, *day));
            }
            let export = with_profile(&b, APRIL_15, |p| p.export(Default::default()).unwrap());
            with_profile(&a, APRIL_15, |p| {
                check(p)?;
                p.import(&export).unwrap();
                check(p)
            })?;
        }
    }
}

/// A profile's export imported back into it after it changed: values said
/// since (in any order of time), sessions deleted and values forgotten.
/// What the file holds that the profile lost comes back into the key's
/// one line of versions (each superseded by at most one other, named
/// back; one value active; `asOf` finds at most one).
mod an_export_imported_back_stays_one_line {
    use super::*;
    use proptest::prelude::*;

    const FRUITS: [&str; 12] = ["apple", "banana", "cherry", "grape", "mango", "peach", "plum", "lemon", "melon", "guava", "papaya", "lime"];

    /// What happens to the profile after its export.
    #[derive(Clone, Debug)]
    enum Change {
        Say(u8),
        DeleteSession(usize),
        ForgetActive,
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![(1u8..=20).prop_map(Change::Say), (0usize..12).prop_map(Change::DeleteSession), Just(Change::ForgetActive)]
    }

    fn say(p: &Profile<'_>, n: usize, day: u8) {
        let messages = vec![MessageInput {
            role: "user".into(),
            content: format!("My favorite fruit is {}.", FRUITS[n % FRUITS.len()]),
            timestamp: Some(format!("2024-01-{day:02}T10:00:00Z")),
        }];
        block_on(p.ingest(IngestRequest { messages, session_id: Some(format!("s{n}")), metadata: Default::default() })).unwrap();
    }

    fn check(p: &Profile<'_>) -> std::result::Result<(), TestCaseError> {
        support::one_line_of(p, "favorite fruit", 1..=20).map_err(TestCaseError::fail)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]
        #[test]
        fn test_an_export_imported_back_after_changes_stays_one_line(
            before in proptest::collection::vec(1u8..=20, 1..5),
            after in proptest::collection::vec(change(), 1..6),
        ) {
            let sql = database();
            with_profile(&sql, APRIL_15, |p| {
                for (n, day) in before.iter().enumerate() {
                    say(p, n, *day);
                }
                let export = p.export(Default::default()).unwrap();
                let mut n = before.len();
                for c in &after {
                    match c {
                        Change::Say(day) => {
                            say(p, n, *day);
                            n += 1;
                        }
                        Change::DeleteSession(s) => drop(p.delete_session(&format!("s{s}")).unwrap()),
                        Change::ForgetActive => {
                            for m in p.list(ListRequest::default()).unwrap().memories.into_iter().filter(|m| m.content.contains("favorite fruit")) {
                                p.forget(&m.id).unwrap();
                            }
                        }
                    }
                    check(p)?;
                }
                p.import(&export).unwrap();
                check(p)
            })?;
        }
    }
}
