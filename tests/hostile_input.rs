//! Hostile input, natively: what a caller can send never panics, never
//! deletes more than it names, and never half-writes; background work
//! survives jobs that fail or kill their run. The property tests run over
//! the whole input space of each parser and validator.

mod support;

use agent_memory::core::api::{self, IngestRequest, ListRequest, RecallRequest, RememberRequest};
use agent_memory::core::background::{EMBED_BATCH_BYTES, MAX_ATTEMPTS};
use agent_memory::core::dates;
use agent_memory::core::error::{Error, Result};
use agent_memory::core::local::embed::HashEmbedder;
use agent_memory::core::model::MessageInput;
use agent_memory::core::ops::{Limits, Profile};
use agent_memory::core::ports::{Embedder, LocalBoxFuture, Sql, SqlValue};
use agent_memory::core::recall::directory::TurnDirectory;
use agent_memory::core::rest::{self, Incoming};
use agent_memory::core::{portable, time};
use chrono::{Datelike, NaiveDate};
use proptest::prelude::*;
use serde_json::json;
use std::cell::RefCell;
use std::future::Future;
use std::task::{Context, Poll};
use support::{block_on, database, snapshot, with_profile, FailingAt, NativeSql, APRIL_15, DAY};

fn msg(role: &str, content: &str, timestamp: Option<&str>) -> MessageInput {
    MessageInput { role: role.into(), content: content.into(), timestamp: timestamp.map(str::to_string) }
}

fn remember(content: &str) -> RememberRequest {
    serde_json::from_value(json!({ "content": content })).unwrap()
}

fn count(sql: &NativeSql, statement: &str) -> i64 {
    sql.query(statement, &[]).unwrap()[0][0].as_i64().unwrap()
}

// ---------------------------------------------------------------------------
// Dates off the calendar.

#[test]
fn test_far_range_timestamps_are_refused_with_400_and_store_nothing() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for ts in ["+262142-12-31", "-262143-01-01", "+10000-01-01", "-0001-12-31", "275760-09-13T00:00:00Z"] {
            let before = snapshot(&sql);
            let req = IngestRequest {
                messages: vec![msg("user", "We ship the day after tomorrow, not yesterday.", Some(ts))],
                session_id: Some("s1".into()),
                metadata: Default::default(),
            };
            let e = block_on(p.ingest(req)).unwrap_err();
            assert_eq!(e.status(), 400, "{ts}: {e}");
            assert_eq!(snapshot(&sql), before, "{ts}: the refused call changed the profile");
            let recall: RecallRequest = serde_json::from_value(json!({ "query": "when do we ship", "referenceDate": ts })).unwrap();
            assert_eq!(block_on(p.recall(recall)).unwrap_err().status(), 400, "{ts} as referenceDate");
        }
    });
}

#[test]
fn test_phrases_that_fall_off_the_calendar_stay_as_written() {
    let last = NaiveDate::from_ymd_opt(9999, 12, 31).unwrap();
    let first = NaiveDate::from_ymd_opt(0, 1, 1).unwrap();
    assert_eq!(dates::resolve("the day after tomorrow", last), "the day after tomorrow");
    assert_eq!(dates::resolve("next week", last), "next week");
    assert_eq!(dates::resolve("in 999 years", last), "in 999 years");
    assert_eq!(dates::resolve("yesterday", first), "yesterday");
    assert_eq!(dates::resolve("last year", first), "last year");
    // Inside the calendar they still resolve.
    assert_eq!(dates::resolve("yesterday", last), "on 9999-12-30");
    // At chrono's own ends, where `date + duration` used to panic.
    assert_eq!(dates::resolve("the day after tomorrow", NaiveDate::MAX), "the day after tomorrow");
    assert_eq!(dates::resolve("the day before yesterday", NaiveDate::MIN), "the day before yesterday");
}

#[test]
fn test_a_message_dated_at_the_end_of_the_calendar_is_ingested_unresolved() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let req = IngestRequest {
            messages: vec![msg("user", "My visa interview is the day after tomorrow in Lisbon.", Some("9999-12-31T23:00:00Z"))],
            session_id: Some("s1".into()),
            metadata: Default::default(),
        };
        let r = block_on(p.ingest(req)).unwrap();
        assert_eq!(r.messages_stored, 1);
        assert!(!r.memories.is_empty(), "the statement is extracted");
        assert!(r.memories.iter().all(|m| !m.content.contains("10000")), "{:?}", r.memories);
        assert!(r.memories.iter().any(|m| m.content.contains("the day after tomorrow")), "the relative date is left as written: {:?}", r.memories);
    });
}

/// The phrases the date resolver knows, with any number in them.
fn date_phrase() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("the day before yesterday".to_string()),
        Just("the day after tomorrow".to_string()),
        Just("yesterday".to_string()),
        Just("tomorrow".to_string()),
        Just("tonight".to_string()),
        Just("this morning".to_string()),
        Just("today".to_string()),
        "(last|next|this|on|this past|this coming) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)",
        "(last|next|this) (week|month|year|weekend)",
        "([0-9]{1,3}|a|an|one|twelve|a couple of|a few) (day|days|week|weeks|month|months|year|years) (ago|later|from now)",
        "in ([0-9]{1,3}|a|twelve|a few) (day|days|week|weeks|month|months|year|years)",
        ".{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Over every date chrono can hold and every phrase: no panic, and a
    /// date written in is one of the years 0000-9999.
    #[test]
    fn prop_date_resolution_never_panics_and_stays_on_the_calendar(
        days in (NaiveDate::MIN.num_days_from_ce())..=(NaiveDate::MAX.num_days_from_ce()),
        phrases in proptest::collection::vec(date_phrase(), 1..4),
    ) {
        let anchor = NaiveDate::from_num_days_from_ce_opt(days).unwrap();
        let text = phrases.join(", and ");
        let out = dates::resolve(&text, anchor);
        // A year the resolver writes has at most four digits and no sign:
        // any longer run of digits in its output was in its input.
        let long = regex::Regex::new(r"[+-]?\d{5,}").unwrap();
        for m in long.find_iter(&out) {
            prop_assert!(text.contains(m.as_str()), "{text} at {anchor} -> {out}");
        }
        if let Some(d) = dates::event_date(&out, None) {
            let year: i32 = d[..4].parse().unwrap();
            prop_assert!(time::YEARS.contains(&year), "{text} at {anchor} -> {out}");
        }
    }

    #[test]
    fn prop_date_parsing_never_panics_and_answers_only_calendar_years(s in "\\PC{0,40}", sign in "[+-]?", year in 0i64..300_000, rest in "(-[0-9]{2}-[0-9]{2})?(T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})?)?") {
        for input in [s.clone(), format!("{sign}{year:04}{rest}"), format!("{sign}{year}-12-31")] {
            if let Some(d) = time::parse_datetime(&input) {
                prop_assert!(time::YEARS.contains(&d.year()), "{input} -> {d}");
            }
            let _ = time::parse_millis(&input);
        }
    }

    #[test]
    fn prop_validators_never_panic(s in "\\PC{0,80}", bytes in proptest::collection::vec(any::<u8>(), 0..80), n in any::<usize>()) {
        let lossy = String::from_utf8_lossy(&bytes).to_string();
        for text in [&s, &lossy] {
            let _ = api::validate_profile(text);
            let _ = api::validate_namespace(text);
            let _ = api::validate_session_id(text);
            let _ = api::validate_id(text);
            let _ = api::validate_role("role", text);
            let _ = api::validate_content("content", text);
            let _ = api::validate_key("key", text);
            let _ = api::validate_date("date", &Some(text.clone()));
            let _ = api::validate_search_queries("queries", &[text.clone()]);
            let _ = api::quoted(text);
            let _ = api::redact_private(text);
            let _ = rest::rpc_profile_name(text, None);
            let _ = rest::rpc_profile_name(text, Some("ns"));
            let _ = rest::parse_strict(text);
            let _ = portable::parse(text);
            let ingest = IngestRequest { messages: vec![msg(text, text, Some(text))], session_id: Some(text.clone()), metadata: Default::default() };
            let _ = ingest.validate();
            let rem = RememberRequest { content: text.clone(), session_id: Some(text.clone()), kind: None, key: Some(text.clone()), expires_at: Some(text.clone()), ttl_seconds: Some(n as u64), sensitive: None, metadata: Default::default() };
            let _ = rem.validate();
            let recall = RecallRequest { query: text.clone(), options: serde_json::from_value(json!({ "limit": n, "referenceDate": text, "sessionId": text })).unwrap_or_default() };
            let _ = recall.validate();
            let list: ListRequest = serde_json::from_value(json!({ "limit": n, "cursor": text, "sessionId": text, "key": text })).unwrap_or_default();
            let _ = list.validate();
            let e = Error::invalid(text.clone());
            prop_assert!(e.message().chars().count() <= agent_memory::core::error::MAX_MESSAGE_CHARS + 1);
            prop_assert!(!e.message().chars().any(char::is_control));
        }
    }

    /// A dot segment spelled any way is never a session id.
    #[test]
    fn prop_dot_segments_are_never_session_ids(parts in proptest::collection::vec(prop_oneof![Just("."), Just("%2e"), Just("%2E")], 1..=2)) {
        let id = parts.concat();
        prop_assert!(api::validate_session_id(&id).is_err(), "{id} accepted");
    }

    #[test]
    fn prop_routing_never_panics(method in "(GET|POST|DELETE|PUT|PATCH|[A-Z]{1,8})", path in "(/[a-zA-Z0-9.%_-]{0,12}){0,10}/?", body in proptest::collection::vec(any::<u8>(), 0..64)) {
        let req = Incoming { method: &method, path: &path, query: "", content_type: Some("application/json"), body: &body };
        let _ = rest::route(&req);
        let _ = rest::allowed_methods(&path);
        let _ = rest::target(&path);
    }
}

// ---------------------------------------------------------------------------
// Deletion that cannot be reached by accident.

const BASE: &str = "/accounts/a/agent-memory/namespaces/ns/profiles/p";

fn route(method: &str, path: &str) -> Result<rest::Route> {
    rest::route(&Incoming { method, path, query: "", content_type: None, body: b"" })
}

#[test]
fn test_normalised_dot_segment_paths_never_reach_the_profile() {
    // What a URL parser makes of `…/sessions/%2E%2E` and `…/memories/%2e%2e`.
    for path in [format!("{BASE}/"), format!("{BASE}//"), format!("{BASE}/sessions/"), format!("{BASE}/memories/")] {
        let e = route("DELETE", &path).unwrap_err();
        assert!(e.is_not_found(), "DELETE {path}: {e}");
    }
    let rest::Route::Profile(call) = route("DELETE", BASE).unwrap() else { panic!("the profile itself routes") };
    assert_eq!(call.op, agent_memory::core::op::Op::DeleteProfile);
}

#[test]
fn test_paths_that_no_method_answers_are_404() {
    for path in [format!("{BASE}/memories/0123456789abcdef0123456789abcdef/extra"), format!("{BASE}/nowhere"), format!("{BASE}/stats/x")] {
        assert!(rest::allowed_methods(&path).is_none(), "{path}");
        assert!(route("GET", &path).unwrap_err().is_not_found(), "{path}");
    }
}

#[test]
fn test_dot_session_ids_are_refused_at_ingest_and_remember() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for sid in [".", "..", "%2e%2E", ".%2e"] {
            let req =
                IngestRequest { messages: vec![msg("user", "A message in an odd session.", None)], session_id: Some(sid.into()), metadata: Default::default() };
            assert!(block_on(p.ingest(req)).unwrap_err().is_invalid(), "{sid}");
            let mut rem = remember("Something worth remembering for later.");
            rem.session_id = Some(sid.into());
            assert!(block_on(p.remember(rem)).unwrap_err().is_invalid(), "{sid}");
        }
        assert_eq!(p.stats().unwrap().messages, 0);
    });
}

#[test]
fn test_a_session_stored_as_dot_dot_can_still_be_deleted() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(IngestRequest {
            messages: vec![msg("user", "I keep my notes in Obsidian.", None)],
            session_id: Some("s1".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        // As an older version stored it.
        sql.execute("UPDATE messages SET session_id = '..'", &[]).unwrap();
        sql.execute("UPDATE memories SET session_id = '..'", &[]).unwrap();
        let out = p.delete_session("..").unwrap();
        assert_eq!(out.deleted_messages, 1);
        assert_eq!(p.stats().unwrap().messages, 0);
    });
}

fn grace(limits_grace_millis: i64) -> Limits {
    Limits { delete_grace_millis: limits_grace_millis, ..Limits::default() }
}

fn with_limits<T>(sql: &NativeSql, now: i64, limits: Limits, f: impl FnOnce(&Profile<'_>) -> T) -> T {
    support::with_profile_limits(sql, now, &TurnDirectory::new(), limits, f)
}

#[test]
fn test_a_deleted_profile_answers_404_until_restored_with_everything() {
    let sql = database();
    let limits = grace(DAY);
    let before = with_limits(&sql, APRIL_15, limits, |p| {
        block_on(p.remember(remember("The deploy key rotates every ninety days."))).unwrap();
        block_on(p.drain()).unwrap();
        p.export(Default::default()).unwrap()
    });
    with_limits(&sql, APRIL_15 + 1_000, limits, |p| {
        let marked = block_on(p.dispatch("deleteProfile", json!({}))).unwrap();
        assert_eq!(marked["deleted"], true);
        for op in ["stats", "export", "list", "getSummary"] {
            let e = block_on(p.dispatch(op, json!({}))).unwrap_err();
            assert!(e.is_not_found(), "{op} of a marked profile: {e}");
        }
        let e = block_on(p.dispatch("recall", json!({ "query": "deploy key" }))).unwrap_err();
        assert!(e.is_not_found());
        // Deleting it again is 404, as for a deleted namespace, and keeps
        // the first mark.
        let purge_due = p.purge_due().unwrap();
        assert!(block_on(p.dispatch("deleteProfile", json!({}))).unwrap_err().is_not_found());
        assert_eq!(p.purge_due().unwrap(), purge_due);
        // Within the grace period the drain purges nothing.
        assert!(!block_on(p.drain()).unwrap().purged);
        assert_eq!(block_on(p.dispatch("restoreProfile", json!({}))).unwrap()["restored"], true);
        let after = p.export(Default::default()).unwrap();
        assert_eq!(after.lines().skip(1).collect::<Vec<_>>(), before.lines().skip(1).collect::<Vec<_>>(), "restored whole");
        assert!(block_on(p.dispatch("restoreProfile", json!({}))).unwrap_err().is_not_found(), "nothing left to restore");
    });
}

#[test]
fn test_a_write_into_a_deleted_profile_starts_it_afresh_and_empty() {
    let sql = database();
    let limits = grace(DAY);
    with_limits(&sql, APRIL_15, limits, |p| {
        block_on(p.remember(remember("The deploy key rotates every ninety days."))).unwrap();
        block_on(p.dispatch("deleteProfile", json!({}))).unwrap();
        // Profiles are created by their first write: the marked one is
        // purged at once and the write lands in an empty profile.
        let fresh = block_on(p.dispatch("remember", json!({ "content": "Prefers dark mode." }))).unwrap();
        let listed = block_on(p.dispatch("list", json!({}))).unwrap();
        let ids: Vec<&str> = listed["memories"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert_eq!(ids, vec![fresh["id"].as_str().unwrap()]);
        assert!(!snapshot(&sql).contains("ninety days"), "nothing of the deleted profile is left");
        assert!(block_on(p.dispatch("restoreProfile", json!({}))).unwrap_err().is_not_found(), "no mark left to restore");
    });
}

#[test]
fn test_a_profile_emptied_by_deletions_still_exists_and_can_be_deleted() {
    let sql = database();
    with_limits(&sql, APRIL_15, grace(DAY), |p| {
        let m = block_on(p.dispatch("remember", json!({ "content": "Prefers dark mode.", "sessionId": "s1" }))).unwrap();
        block_on(p.dispatch("deleteSession", json!({ "sessionId": "s1" }))).unwrap();
        assert!(block_on(p.dispatch("get", json!({ "id": m["id"] }))).unwrap_err().is_not_found());
        assert_eq!(block_on(p.dispatch("deleteProfile", json!({}))).unwrap()["deleted"], true);
    });
}

#[test]
fn test_deleting_a_profile_never_written_is_not_found() {
    let sql = database();
    with_limits(&sql, APRIL_15, grace(DAY), |p| {
        let e = block_on(p.dispatch("deleteProfile", json!({}))).unwrap_err();
        assert!(e.is_not_found() && e.message().contains("profile not found"), "{e}");
    });
}

#[test]
fn test_a_deleted_profile_is_purged_after_its_grace_period() {
    let sql = database();
    let limits = grace(DAY);
    with_limits(&sql, APRIL_15, limits, |p| {
        block_on(p.dispatch("remember", json!({"content": "The quokkanebula backup runs nightly at 02:00.", "key": "backup.a", "type": "fact"}))).unwrap();
        block_on(p.dispatch("remember", json!({"content": "Nightly at 02:00, the quokkanebula backup runs.", "key": "backup.b", "type": "fact"}))).unwrap();
        block_on(p.drain()).unwrap();
        // A consolidation record copies the memories as they were.
        let merged = block_on(p.dispatch("consolidate", json!({}))).unwrap();
        assert!(merged.to_string().contains("merge"), "{merged}");
        while block_on(p.drain()).unwrap().pending > 0 {}
        block_on(p.dispatch("deleteProfile", json!({}))).unwrap();
        assert_eq!(p.next_due().unwrap(), Some(APRIL_15 + DAY), "the alarm is due at the purge");
    });
    with_limits(&sql, APRIL_15 + DAY, limits, |p| {
        let report = block_on(p.drain()).unwrap();
        assert!(report.purged);
        let stats = p.stats().expect("a purged profile answers again, empty");
        assert_eq!((stats.memories, stats.messages, stats.vectors), (0, 0, 0));
        assert!(!snapshot(&sql).contains("quokkanebula"));
        assert!(block_on(p.dispatch("restoreProfile", json!({}))).unwrap_err().is_not_found());
        assert_eq!(p.store().meta_get("name").unwrap(), None, "this native profile never stored a name");
    });
}

// ---------------------------------------------------------------------------
// Import validates like the write routes.

fn header() -> String {
    json!({ "kind": "header", "format": "agent-memory-export", "version": 1 }).to_string()
}

fn memory_line(overrides: serde_json::Value) -> String {
    let mut m = json!({
        "kind": "memory", "id": "0123456789abcdef0123456789abcdef", "type": "fact", "summary": "s",
        "content": "The office moved to Porto in March.", "sessionId": "s1", "sourceMessageIds": [],
        "searchQueries": [], "status": "active", "createdAt": "2026-04-15T10:00:00.000Z", "updatedAt": "2026-04-15T10:00:00.000Z"
    });
    for (k, v) in overrides.as_object().unwrap() {
        m[k] = v.clone();
    }
    m.to_string()
}

fn message_line(role: &str, content: &str, overrides: serde_json::Value) -> String {
    let id = agent_memory::core::ids::message_id("s1", role, content);
    let mut m =
        json!({ "kind": "message", "id": id, "sessionId": "s1", "role": role, "content": content, "position": 0, "createdAt": "2026-04-15T10:00:00.000Z" });
    for (k, v) in overrides.as_object().unwrap() {
        m[k] = v.clone();
    }
    m.to_string()
}

#[test]
fn test_import_refuses_every_invalid_record_kind_with_400_and_changes_nothing() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.remember(remember("A memory that was here before the import."))).unwrap();
        let before = snapshot(&sql);
        let big = "x".repeat(3 * 1024 * 1024);
        let over = "y".repeat(api::MAX_MESSAGE_BYTES + 1);
        let cases: Vec<(&str, String)> = vec![
            ("3 MB content", memory_line(json!({ "content": big }))),
            ("32 KB + 1 content", memory_line(json!({ "content": over }))),
            ("empty content", memory_line(json!({ "content": "" }))),
            ("blank content", memory_line(json!({ "content": "   " }))),
            ("10 KB key", memory_line(json!({ "key": "k".repeat(10 * 1024) }))),
            ("1 MB of search queries", memory_line(json!({ "searchQueries": vec!["q".repeat(1024); 1024] }))),
            ("one oversized search query", memory_line(json!({ "searchQueries": ["q".repeat(2000)] }))),
            ("a date that is not a date", memory_line(json!({ "eventDate": "last Tuesday-ish" }))),
            ("createdAt not a date", memory_line(json!({ "createdAt": "yesterday" }))),
            ("updatedAt off the calendar", memory_line(json!({ "updatedAt": "+262142-12-31" }))),
            ("expiresAt not a date", memory_line(json!({ "expiresAt": "soon" }))),
            ("a source that is not an id", memory_line(json!({ "sourceMessageIds": ["../../etc"] }))),
            ("session ..", memory_line(json!({ "sessionId": ".." }))),
            ("empty role", message_line("", "Hello there.", json!({}))),
            ("5,000-character role", message_line(&"r".repeat(5000), "Hello there.", json!({}))),
            ("32 KB + 1 message", message_line("user", &over, json!({}))),
            ("timestamp not a date", message_line("user", "Hello there.", json!({ "timestamp": "the other day" }))),
            ("timestamp off the calendar", message_line("user", "Hello there.", json!({ "timestamp": "-262143-01-01" }))),
            ("negative position", message_line("user", "Hello there.", json!({ "position": -1 }))),
        ];
        for (what, line) in cases {
            // A valid record before the bad one: nothing of the file lands.
            let file = format!("{}\n{}\n{line}\n", header(), message_line("user", "A fine message.", json!({})));
            let e = p.import(&file).unwrap_err();
            assert_eq!(e.status(), 400, "{what}: {e}");
            assert_eq!(snapshot(&sql), before, "{what}: the refused import changed the profile");
        }
    });
}

#[test]
fn test_import_redacts_private_spans_and_keeps_the_citations() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let content = "My door code is <private>7719</private>, ring twice.";
        let old_id = agent_memory::core::ids::message_id("s1", "user", content);
        let file = format!(
            "{}\n{}\n{}\n",
            header(),
            message_line("user", content, json!({})),
            memory_line(json!({
                "content": "The door code is <private>7719</private>.",
                "summary": "door <PRIVATE>7719</PRIVATE>",
                "searchQueries": ["what is the code <private>7719</private>"],
                "sourceMessageIds": [old_id],
            })),
        );
        p.import(&file).unwrap();
        let all = snapshot(&sql);
        assert!(!all.contains("7719"), "a private span was stored: {all}");
        let m = p.get("0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!(m.memory.content, "The door code is [private].");
        assert_eq!(m.source_messages.len(), 1, "the memory still cites its (redacted) message");
        assert_eq!(m.source_messages[0].content, "My door code is [private], ring twice.");
        assert_eq!(m.source_messages[0].id, agent_memory::core::ids::message_id("s1", "user", &m.source_messages[0].content));
    });
}

// ---------------------------------------------------------------------------
// Background work that fails or dies.

/// Embeds like the local embedder, but fails every request holding a text
/// with the poison mark, and records each request's total bytes.
struct Poisoned {
    requests: RefCell<Vec<usize>>,
}

const POISON: &str = "zzpoisonzz";

impl Embedder for Poisoned {
    fn embed<'a>(&'a self, texts: &'a [String]) -> LocalBoxFuture<'a, Result<Vec<Vec<f32>>>> {
        self.requests.borrow_mut().push(texts.iter().map(String::len).sum());
        if texts.iter().any(|t| t.contains(POISON)) {
            return Box::pin(async { Err(Error::provider("the model rejects this input")) });
        }
        HashEmbedder.embed(texts)
    }
}

/// An embedder that never answers: a run that dies mid-request once its
/// future is dropped (an isolate killed, an alarm out of memory).
struct Dies;

impl Embedder for Dies {
    fn embed<'a>(&'a self, _: &'a [String]) -> LocalBoxFuture<'a, Result<Vec<Vec<f32>>>> {
        Box::pin(std::future::pending())
    }
}

fn with_embedder<T>(sql: &NativeSql, now: i64, embedder: &dyn Embedder, f: impl FnOnce(&Profile<'_>) -> T) -> T {
    support::with_profile_embedding(sql, now, &TurnDirectory::new(), Limits::default(), embedder, f)
}

/// An export of `n` memories of `bytes` each, unbroken text.
fn big_memories(n: usize, bytes: usize) -> String {
    let mut file = header();
    for i in 0..n {
        let id = format!("{:032x}", 0xabc0_0000_u64 + i as u64);
        let content = format!("{i:04}{}", "w".repeat(bytes - 4));
        file.push('\n');
        file.push_str(&memory_line(json!({ "id": id, "content": content })));
    }
    file.push('\n');
    file
}

/// Drains at advancing times until nothing is pending (at most `rounds`):
/// a parked job's next try, a day on, is not waited for.
fn drain_until_idle(sql: &NativeSql, embedder: &dyn Embedder, mut now: i64, rounds: usize) -> i64 {
    for _ in 0..rounds {
        let report = with_embedder(sql, now, embedder, |p| block_on(p.drain()).unwrap());
        match report.next_at {
            Some(at) if report.pending > 0 => now = at.max(now + 1),
            _ => return now,
        }
    }
    panic!("still pending after {rounds} drains");
}

#[test]
fn test_twenty_memories_at_the_limit_and_a_poisoned_job_drain_to_zero_pending() {
    let sql = database();
    let embedder = Poisoned { requests: RefCell::new(Vec::new()) };
    with_profile(&sql, APRIL_15, |p| {
        p.import(&big_memories(20, api::MAX_MESSAGE_BYTES)).unwrap();
        block_on(p.remember(remember(&format!("The {POISON} config lives in vault."))))
    })
    .unwrap();
    drain_until_idle(&sql, &embedder, APRIL_15, 64);
    with_profile(&sql, APRIL_15, |p| {
        let stats = p.stats().unwrap();
        assert_eq!((stats.pending_jobs, stats.parked_jobs, stats.vectors), (0, 1, 20), "{stats:?}");
    });
    let parked = sql.query("SELECT attempts, last_error FROM outbox WHERE parked = 1", &[]).unwrap();
    assert_eq!(parked[0][0].as_i64(), Some(MAX_ATTEMPTS));
    assert!(parked[0][1].opt_string().unwrap().contains("rejects this input"));
    // Every request stayed within the byte budget (a lone text may fill it).
    let requests = embedder.requests.borrow();
    assert!(requests.iter().all(|b| *b <= EMBED_BATCH_BYTES), "{requests:?}");
    assert!(requests.len() >= 3, "twenty texts of 32 KB need several requests: {requests:?}");
}

#[test]
fn test_a_job_that_kills_its_run_is_counted_and_parked_and_the_others_finish() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| block_on(p.remember(remember("The staging cluster runs in Oslo.")))).unwrap();
    let mut now = APRIL_15;
    for _ in 0..MAX_ATTEMPTS {
        with_embedder(&sql, now, &Dies, |p| {
            // Poll once (the attempt is claimed, the request sent), then drop.
            let mut run = Box::pin(p.drain());
            let waker = futures::task::noop_waker();
            assert!(matches!(run.as_mut().poll(&mut Context::from_waker(&waker)), Poll::Pending));
        });
        now += 11 * 60 * 1000;
    }
    assert_eq!(count(&sql, "SELECT attempts FROM outbox"), MAX_ATTEMPTS, "every dead run counted");
    // A new memory written afterwards still gets its vector; the killer is parked.
    with_profile(&sql, now, |p| block_on(p.remember(remember("Backups are kept for thirty days.")))).unwrap();
    let report = with_profile(&sql, now, |p| block_on(p.drain()).unwrap());
    // The alarm comes back only for the killer's one more try, a day on.
    let retry = Some(now + agent_memory::core::store::PARKED_RETRY_MILLIS);
    assert_eq!((report.parked, report.embedded, report.pending, report.next_at), (1, 1, 0, retry));
    assert_eq!(count(&sql, "SELECT COUNT(*) FROM vectors"), 1);
}

#[test]
fn test_a_job_of_an_unknown_kind_is_parked_and_the_alarm_does_not_rearm() {
    let sql = database();
    sql.execute(
        "INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) VALUES ('reindex_v9', 'x', 0, ?, 'then')",
        &[SqlValue::Integer(APRIL_15)],
    )
    .unwrap();
    with_profile(&sql, APRIL_15, |p| {
        assert_eq!(p.next_due().unwrap(), Some(APRIL_15));
        let report = block_on(p.drain()).unwrap();
        assert_eq!((report.parked, report.pending, report.next_at), (1, 0, None), "{report:?}");
        assert_eq!(p.next_due().unwrap(), None, "nothing due: the alarm is not set again");
        assert_eq!(p.stats().unwrap().parked_jobs, 1);
        let again = block_on(p.drain()).unwrap();
        assert_eq!((again.parked, again.next_at), (0, None));
    });
}

#[test]
fn test_extraction_from_long_unbroken_text_keeps_keys_and_queries_within_the_write_limits() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let word = "c".repeat(api::MAX_MESSAGE_BYTES - 40);
        let req = IngestRequest {
            messages: vec![msg("user", &format!("My project build is {word}."), None), msg("user", &format!("I prefer {word} for everything."), None)],
            session_id: Some("s1".into()),
            metadata: Default::default(),
        };
        block_on(p.ingest(req)).unwrap();
        let memories = p.list(ListRequest::default()).unwrap().memories;
        assert!(!memories.is_empty(), "the statements are extracted");
        assert!(memories.iter().any(|m| m.key.is_some()), "at least one has a key: {memories:?}");
        for m in &memories {
            if let Some(k) = &m.key {
                assert!(k.chars().count() <= api::MAX_KEY_CHARS, "a key of {} characters", k.chars().count());
            }
            api::validate_search_queries("searchQueries", &m.search_queries).unwrap();
        }
        // What was stored exports and imports again.
        let export = p.export(Default::default()).unwrap();
        let target = database();
        with_profile(&target, APRIL_15, |q| q.import(&export)).unwrap();
    });
}

/// One user message about the staging database, ingested and drained.
fn ingest_staging_move(p: &Profile<'_>) {
    let req = IngestRequest {
        messages: vec![msg("user", "We moved the staging database to the Frankfurt region last week.", None)],
        session_id: Some("s1".into()),
        metadata: Default::default(),
    };
    block_on(p.ingest(req)).unwrap();
    block_on(p.drain()).unwrap();
}

#[test]
fn test_a_memory_row_whose_source_ids_do_not_read_is_an_error_in_reads_and_a_failed_channel_in_recall() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        ingest_staging_move(p);
        let m = p.list(ListRequest::default()).unwrap().memories.into_iter().find(|m| !m.source_message_ids.is_empty()).expect("a memory citing the message");
        sql.execute("UPDATE memories SET source_message_ids = 'not json' WHERE id = ?1", &[m.id.as_str().into()]).unwrap();
        let e = p.get(&m.id).unwrap_err();
        assert!(e.is_storage() && e.message().contains("source message ids"), "{e}");
        // Recall reports every channel that read the row as failed; none
        // ranks the memory as one without sources.
        let r = block_on(p.recall(RecallRequest { query: "Which region is the staging database in?".into(), options: Default::default() })).unwrap();
        let failed: Vec<&String> = r.messages.iter().filter(|n| n.contains("source message ids")).collect();
        assert!(failed.iter().any(|n| n.contains("channel fts failed")), "{:?}", r.messages);
        assert!(r.candidates.iter().all(|c| c.id != m.id), "{:?}", r.candidates);
    });
}

#[test]
fn test_a_memory_row_of_unknown_status_or_type_is_a_storage_error_not_an_active_fact() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let m = block_on(p.remember(remember("The deploy key rotates every ninety days."))).unwrap();
        for (column, value) in [("status", "archived"), ("type", "opinion")] {
            sql.execute(&format!("UPDATE memories SET {column} = ?"), &[value.into()]).unwrap();
            let e = p.get(&m.id).unwrap_err();
            assert!(e.is_storage(), "{column} {value}: {e}");
            assert!(e.message().contains(value), "{e}");
            assert!(p.list(ListRequest { status: Some(agent_memory::core::api::ListStatus::All), ..Default::default() }).unwrap_err().is_storage());
            sql.execute("UPDATE memories SET status = 'active', type = 'fact'", &[]).unwrap();
        }
        assert_eq!(p.get(&m.id).unwrap().memory.status, agent_memory::core::model::Status::Active);
    });
}

/// The turn directory reads messages with the same strictness as the
/// store: a message whose content is not text fails both full-text
/// channels (each reports it), rather than joining the directory as an
/// empty turn.
#[test]
fn test_a_message_row_whose_content_is_not_text_fails_the_full_text_channels_not_an_empty_turn() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        ingest_staging_move(p);
    });
    sql.execute("UPDATE messages SET content = x'00ff'", &[]).unwrap();
    // A fresh directory (a cold profile) loads the rows.
    with_profile(&sql, APRIL_15, |p| {
        let out = block_on(p.recall(RecallRequest { query: "Which region is the staging database in?".into(), options: Default::default() }));
        let r = out.unwrap();
        for channel in ["fts", "messages"] {
            let note = format!("channel {channel} failed: a message's content that is not text");
            assert!(r.messages.contains(&note), "{:?}", r.messages);
        }
    });
}

/// An ingest that fails after its messages are stored (here a memory's
/// write fails) keeps its re-extraction job: the caller's retry finds
/// nothing new to store, and the alarm then extracts the memories rather
/// than leaving the messages uncited for good.
#[test]
fn test_an_ingest_that_fails_after_storing_its_messages_is_extracted_by_the_alarm() {
    let sql = database();
    let req = || IngestRequest {
        messages: vec![msg("user", "I moved to Lisbon in 2021 and work as a baker.", None), msg("user", "My sister Ana lives in Porto with two cats.", None)],
        session_id: Some("s1".into()),
        metadata: Default::default(),
    };
    let failing = FailingAt { inner: &sql, pattern: "INTO memories (", n: std::cell::Cell::new(1) };
    with_profile(&failing, APRIL_15, |p| {
        let e = block_on(p.ingest(req())).unwrap_err();
        assert!(e.message().contains("injected failure"), "{e}");
    });
    with_profile(&sql, APRIL_15 + 1_000, |p| {
        let stats = p.stats().unwrap();
        assert_eq!((stats.messages, stats.memories), (2, 0), "the raw messages were kept, no memory");
        let again = block_on(p.ingest(req())).unwrap();
        assert_eq!((again.messages_stored, again.memories_stored), (0, 0), "the retry finds nothing new");
        assert_eq!(p.stats().unwrap().pending_jobs, 1, "the re-extraction job stays");
    });
    with_profile(&sql, APRIL_15 + agent_memory::core::ops::INGEST_GUARD_MILLIS + 1_000, |p| {
        assert_eq!(block_on(p.drain()).unwrap().extracted, 1);
        assert!(p.stats().unwrap().memories >= 2, "the alarm extracted the memories");
    });
}

/// The alarm's re-extraction of a session gives each memory the metadata
/// its own messages were stored with, when calls of one session carried
/// different metadata.
#[test]
fn test_a_re_extracted_session_keeps_each_calls_metadata() {
    let sql = database();
    let call = |content: &str, agent: &str| IngestRequest {
        messages: vec![msg("user", content, None)],
        session_id: Some("shared".into()),
        metadata: serde_json::from_value(serde_json::json!({"agentId": agent})).unwrap(),
    };
    for (content, agent) in [("I moved to Lisbon in 2021 and work as a baker.", "planner"), ("My sister Ana lives in Porto with two cats.", "coder")] {
        let failing = FailingAt { inner: &sql, pattern: "INTO memories (", n: std::cell::Cell::new(1) };
        with_profile(&failing, APRIL_15, |p| assert!(block_on(p.ingest(call(content, agent))).is_err()));
    }
    with_profile(&sql, APRIL_15 + agent_memory::core::ops::INGEST_GUARD_MILLIS + 1_000, |p| {
        block_on(p.drain()).unwrap();
        let memories = p.list(ListRequest::default()).unwrap().memories;
        assert!(memories.len() >= 2, "{memories:?}");
        for m in &memories {
            let agent = serde_json::to_value(&m.metadata).unwrap()["agentId"].as_str().unwrap().to_string();
            let expected = if m.summary.contains("Lisbon") { "planner" } else { "coder" };
            assert_eq!(agent, expected, "{}", m.summary);
        }
    });
}

/// A write refused for room (409) is refused before anything is written:
/// an import of more memories than the profile may hold, into a profile
/// marked for deletion, leaves it marked and restorable with everything.
#[test]
fn test_an_import_refused_for_room_leaves_a_marked_profile_restorable() {
    let other = database();
    let data = with_limits(&other, APRIL_15, Limits::default(), |p| {
        for fact in ["Alpha runs on port 8001.", "Bravo listens on port 8002.", "Charlie serves port 8003.", "Echo binds port 8005."] {
            block_on(p.remember(remember(fact))).unwrap();
        }
        block_on(p.dispatch("export", json!({}))).unwrap()
    });
    let data = data.as_str().map(str::to_string).unwrap_or_else(|| data.to_string());
    let sql = database();
    with_limits(&sql, APRIL_15, Limits { max_memories: 3, ..grace(DAY) }, |p| {
        block_on(p.remember(remember("The quokkanebula backup runs nightly at 02:00."))).unwrap();
        block_on(p.remember(remember("Delta runs on port 8004."))).unwrap();
        block_on(p.dispatch("deleteProfile", json!({}))).unwrap();
        let e = block_on(p.dispatch("import", json!({ "data": data }))).unwrap_err();
        assert_eq!(e.status(), 409, "{e}");
        block_on(p.dispatch("restoreProfile", json!({}))).unwrap();
        assert_eq!(p.stats().unwrap().memories, 2, "restored whole: the refused import purged nothing");
    });
}

/// A full profile still answers a re-sent write that adds nothing: a
/// remember of a stored statement gets its memory, an import of records
/// the profile holds skips them; a write that adds one is a 409 and
/// changes nothing.
#[test]
fn test_a_full_profile_answers_a_resent_write_that_adds_nothing() {
    let sql = database();
    with_limits(&sql, APRIL_15, Limits { max_memories: 2, ..Limits::default() }, |p| {
        let a = block_on(p.remember(remember("Alpha runs on port 8001."))).unwrap();
        let b = block_on(p.remember(remember("Bravo listens on port 8002."))).unwrap();
        let again = block_on(p.dispatch("remember", json!({ "content": "Bravo listens on port 8002." }))).unwrap();
        assert_eq!(again["id"], json!(b.id), "the re-sent remember is answered with its memory");
        let own = block_on(p.dispatch("export", json!({}))).unwrap();
        let own = own.as_str().map(str::to_string).unwrap_or_else(|| own.to_string());
        let report = block_on(p.dispatch("import", json!({ "data": own }))).unwrap();
        assert_eq!(report, json!({ "memories": 0, "messages": 0, "consolidationsLeftOut": 0 }), "importing the profile's own export adds nothing");
        let before = snapshot(&sql);
        let e = block_on(p.dispatch("remember", json!({ "content": "Charlie serves port 8003." }))).unwrap_err();
        assert_eq!(e.status(), 409, "{e}");
        assert_eq!(snapshot(&sql), before, "the refused remember changed nothing");
        assert_eq!(p.stats().unwrap().memories, 2);
        assert_ne!(a.id, b.id);
    });
}

/// Memories an ingest had no room for are not lost: their messages are
/// marked and the session's retry queued; the retry fails (409, backing
/// off, then parked and shown) while the profile is full, and stores
/// them once there is room.
#[test]
fn test_memories_with_no_room_are_judged_again_once_there_is_room() {
    let sql = database();
    let full = Limits { max_memories: 1, ..Limits::default() };
    let said = "Alpha runs on port 8001. Bravo listens on port 8002. Charlie serves port 8003.";
    let report = with_limits(&sql, APRIL_15, full, |p| {
        block_on(p.ingest(IngestRequest { messages: vec![msg("user", said, None)], session_id: Some("s".into()), metadata: Default::default() })).unwrap()
    });
    assert_eq!(report.memories_stored, 1, "{report:?}");
    assert!(!report.dropped.is_empty() && report.dropped.iter().all(|d| d.reason.starts_with("the profile is full")), "{:?}", report.dropped);
    // Still full: the retry fails with the reason, nothing is lost.
    let later = APRIL_15 + 60 * 60 * 1000;
    with_limits(&sql, later, full, |p| {
        let drained = block_on(p.drain()).unwrap();
        assert_eq!((drained.extracted, drained.failed), (0, 1), "{drained:?}");
        let error = sql.query("SELECT last_error FROM outbox WHERE kind = 'extract'", &[]).unwrap();
        assert!(error[0][0].as_str().unwrap().contains("for room"), "{error:?}");
    });
    // Room: the next retry stores what had none.
    with_limits(&sql, later + DAY, Limits::default(), |p| {
        let drained = block_on(p.drain()).unwrap();
        assert_eq!(drained.extracted, 1, "{drained:?}");
        assert_eq!(p.stats().unwrap().memories, 1 + report.dropped.len() as i64);
    });
}

/// A statement the profile holds active already takes no room: near the
/// limit, an ingest that says it again beside one new statement keeps both
/// (the held one as stored), dropping nothing.
#[test]
fn test_a_statement_held_already_takes_no_room() {
    let sql = database();
    let ingest = |p: &Profile<'_>, session: &str, said: &str| {
        block_on(p.ingest(IngestRequest {
            messages: vec![msg("user", said, Some("2026-04-01T10:00:00Z"))],
            session_id: Some(session.into()),
            metadata: Default::default(),
        }))
        .unwrap()
    };
    let held = with_limits(&sql, APRIL_15, Limits::default(), |p| {
        ingest(p, "s1", "Alpha runs on port 8001.");
        p.stats().unwrap().memories
    });
    let near = Limits { max_memories: held + 1, ..Limits::default() };
    let report = with_limits(&sql, APRIL_15 + 1_000, near, |p| ingest(p, "s2", "Alpha runs on port 8001. Delta runs on port 8004."));
    assert!(report.dropped.is_empty(), "{:?}", report.dropped);
    with_limits(&sql, APRIL_15 + 2_000, near, |p| assert_eq!(p.stats().unwrap().memories, held + 1));
}

/// A write refused as bad input changes nothing, not even the purge a
/// valid write to a profile marked for deletion would make: the profile
/// can still be restored with everything in it.
#[test]
fn test_a_refused_write_to_a_profile_marked_for_deletion_purges_nothing() {
    let sql = database();
    let limits = grace(DAY);
    with_limits(&sql, APRIL_15, limits, |p| {
        block_on(p.remember(remember("The quokkanebula backup runs nightly at 02:00."))).unwrap();
        block_on(p.dispatch("deleteProfile", json!({}))).unwrap();
        for (op, args) in [
            ("ingest", json!({"messages": []})),
            ("remember", json!({"content": "   "})),
            ("remember", json!({"content": "x y z", "expiresAt": "2001-01-01T00:00:00Z"})),
            ("remember", json!({"content": "x y z", "ttlSeconds": 0})),
            ("import", json!({"data": "{\"kind\":\"message\"}\n"})),
        ] {
            let e = block_on(p.dispatch(op, args)).unwrap_err();
            assert!(e.is_invalid(), "{op}: {e}");
        }
        block_on(p.dispatch("restoreProfile", json!({}))).unwrap();
        assert_eq!(p.stats().unwrap().memories, 1, "restored whole: the refused writes purged nothing");
    });
}

/// An import of a file with no records (a header alone: an empty
/// profile's export) writes nothing, so it is no write: a profile marked
/// for deletion answers it as it answers a read (404) and stays
/// restorable, and a profile never written stays never written.
#[test]
fn test_an_import_of_no_records_is_no_write() {
    let header = r#"{"kind":"header","format":"agent-memory-export","version":1,"profile":"x/y","exportedAt":"2024-01-01T00:00:00.000Z"}"#;
    let sql = database();
    with_limits(&sql, APRIL_15, grace(DAY), |p| {
        block_on(p.remember(remember("The quokkanebula backup runs nightly at 02:00."))).unwrap();
        block_on(p.dispatch("deleteProfile", json!({}))).unwrap();
        let e = block_on(p.dispatch("import", json!({ "data": header }))).unwrap_err();
        assert!(e.is_not_found(), "{e}");
        block_on(p.dispatch("restoreProfile", json!({}))).unwrap();
        assert_eq!(p.stats().unwrap().memories, 1, "restored whole: the empty import purged nothing");
    });
    let fresh = database();
    with_limits(&fresh, APRIL_15, grace(DAY), |p| {
        let report = block_on(p.dispatch("import", json!({ "data": header }))).unwrap();
        assert_eq!(report, json!({ "memories": 0, "messages": 0, "consolidationsLeftOut": 0 }));
        let e = block_on(p.dispatch("deleteProfile", json!({}))).unwrap_err();
        assert!(e.is_not_found(), "still never written: {e}");
    });
}

fn remember_body(p: &Profile<'_>, body: serde_json::Value) -> agent_memory::core::error::Result<serde_json::Value> {
    block_on(p.dispatch("remember", body))
}

/// A caller's key is stored exactly as given, or refused (400) with the
/// form it would need; never rewritten, never dropped, and two keys that
/// would rewrite alike never supersede each other.
#[test]
fn test_a_key_given_to_remember_is_stored_as_given_or_refused() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for (key, kind) in
            [("Cache Bucket", None), ("db-host", None), ("!!!", None), ("\u{200b}", None), ("deploy.date", Some("event")), ("report.q3", Some("task"))]
        {
            let mut body = json!({ "content": format!("A statement filed under {key:?}."), "key": key });
            if let Some(k) = kind {
                body["type"] = json!(k);
            }
            let e = remember_body(p, body).unwrap_err();
            assert!(e.is_invalid(), "{key:?}: {e}");
        }
        assert_eq!(p.stats().unwrap().memories, 0, "nothing stored");
        let e = remember_body(p, json!({ "content": "The cache lives in bucket b7.", "key": "Cache Bucket" })).unwrap_err();
        assert!(e.message().contains("\"cache_bucket\""), "the refusal names the stored form: {e}");
        // As given: stored under it, found by it; an event's words with a
        // key and no type become a keyed fact rather than lose the key.
        let m = remember_body(p, json!({ "content": "The cache lives in bucket b7.", "key": "cache.bucket" })).unwrap();
        assert_eq!(m["key"], "cache.bucket");
        let e = remember_body(p, json!({ "content": "We deployed on 3 March 2026.", "key": "deploy.last" })).unwrap();
        assert_eq!((e["key"].as_str(), e["type"].as_str()), (Some("deploy.last"), Some("fact")));
    });
}

/// The same statement remembered again under another key is refused (409)
/// instead of answering with the stored memory and dropping the key.
#[test]
fn test_a_statement_remembered_again_under_another_key_is_refused_not_rekeyed_silently() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let first = remember_body(p, json!({ "content": "The build cache lives in bucket b7.", "key": "cache.bucket" })).unwrap();
        let again = remember_body(p, json!({ "content": "The build cache lives in bucket b7.", "key": "cache.bucket" })).unwrap();
        assert_eq!(again["id"], first["id"], "same key: the stored memory");
        let e = remember_body(p, json!({ "content": "The build cache lives in bucket b7.", "key": "storage.bucket" })).unwrap_err();
        assert_eq!(e.status(), 409, "{e}");
        assert!(e.message().contains("cache.bucket"), "{e}");
        assert_eq!(p.stats().unwrap().memories, 1);
        assert_eq!(p.get(first["id"].as_str().unwrap()).unwrap().memory.key.as_deref(), Some("cache.bucket"));
    });
}

/// The same statement remembered again in another session is refused
/// (409) instead of answering with the stored memory and dropping the
/// session: the memory would not be listed in it or deleted with it.
#[test]
fn test_a_statement_remembered_again_in_another_session_is_refused_not_answered_from_the_first() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let content = "The release notes live in docs/changes.md.";
        let first = remember_body(p, json!({ "content": content, "sessionId": "a" })).unwrap();
        let again = remember_body(p, json!({ "content": content, "sessionId": "a" })).unwrap();
        assert_eq!(again["id"], first["id"], "same session: the stored memory");
        let unsaid = remember_body(p, json!({ "content": content })).unwrap();
        assert_eq!(unsaid["id"], first["id"], "no session claimed: the stored memory");
        let before = snapshot(&sql);
        let e = remember_body(p, json!({ "content": content, "sessionId": "b" })).unwrap_err();
        assert_eq!(e.status(), 409, "{e}");
        assert!(e.message().contains("\"a\""), "{e}");
        assert_eq!(snapshot(&sql), before, "nothing changed");
        let none = remember_body(p, json!({ "content": "Deploys need two approvals." })).unwrap();
        let e = remember_body(p, json!({ "content": "Deploys need two approvals.", "sessionId": "b" })).unwrap_err();
        assert!(e.status() == 409 && e.message().contains("no session"), "{e} ({})", none["id"]);
    });
}

/// Content that is nothing but private spans is refused (400): there is no
/// statement left to store once they are redacted. Nested spans hide
/// everything up to the closing mark that balances the first.
#[test]
fn test_private_only_content_is_refused_and_nested_spans_hide_their_whole_extent() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for content in ["<private>my PIN is 4921</private>", "  <PRIVATE>a</PRIVATE> <private>b</private>  ", "<private>cut off"] {
            let e = remember_body(p, json!({ "content": content })).unwrap_err();
            assert!(e.is_invalid(), "{content}: {e}");
        }
        assert_eq!(p.stats().unwrap().memories, 0);
        let m = remember_body(p, json!({ "content": "pin: <private>outer <private>inner</private> LEAKED-TAIL</private> end of note" })).unwrap();
        let text = m.to_string();
        assert!(!text.contains("LEAKED-TAIL") && !text.contains("inner"), "{text}");
        assert!(text.contains("pin: [private] end of note"), "{text}");
    });
}

/// An ingest never takes a profile past its limit: the memories that fit
/// are stored, the rest listed in `dropped` with the reason; the messages
/// are kept whole.
#[test]
fn test_an_ingest_stores_only_the_memories_that_fit_and_reports_the_rest() {
    let sql = database();
    with_limits(&sql, APRIL_15, Limits { max_memories: 3, ..Limits::default() }, |p| {
        block_on(p.remember(remember("The quokkanebula backup runs nightly at 02:00."))).unwrap();
        block_on(p.remember(remember("Delta runs on port 8004."))).unwrap();
        let said = |c: &str| agent_memory::core::model::MessageInput { role: "user".into(), content: c.into(), timestamp: None };
        let r = block_on(p.ingest(agent_memory::core::api::IngestRequest {
            messages: vec![
                said("I moved to Lisbon last spring."),
                said("My sister Ana is a marine biologist."),
                said("I prefer tea over coffee in the morning."),
                said("Our staging cluster runs Kubernetes 1.29."),
            ],
            session_id: Some("many".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        let full: Vec<_> = r.dropped.iter().filter(|d| d.reason.contains("the profile is full")).collect();
        assert!(!full.is_empty(), "something did not fit: {:?}", r.dropped);
        assert_eq!(r.memories_stored, 1, "{r:?}");
        let stats = p.stats().unwrap();
        assert_eq!((stats.memories, stats.messages), (3, 4), "at the limit, every message kept");
    });
}

/// A message given as an array (`["user", "..."]`) is refused (400), not
/// read as role and content by position; over REST and MCP alike.
#[test]
fn test_a_message_given_as_an_array_is_refused_not_read_by_position() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let e =
            block_on(p.dispatch("ingest", json!({ "messages": [["user", "I moved to Lisbon last spring.", "2024-03-01"]], "sessionId": "s" }))).unwrap_err();
        assert!(e.is_invalid(), "{e}");
        assert_eq!(p.stats().unwrap().messages, 0);
        block_on(p.dispatch("ingest", json!({ "messages": [{ "role": "user", "content": "I moved to Lisbon last spring." }], "sessionId": "s" }))).unwrap();
        assert_eq!(p.stats().unwrap().messages, 1);
    });
}

/// A REST body with a 100,000-character unknown field name is refused
/// (400) with a message that quotes the name cut to 64 characters, as
/// every message quoting caller input does, and still says which fields
/// there are: serde's own message carries the name whole, and the cut of
/// every message to 300 characters left nothing but the name.
#[test]
fn test_a_rest_body_with_a_huge_unknown_field_name_is_refused_with_a_short_message() {
    let long = "x".repeat(100_000);
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        // The name at the top of a remember or ingest body, and in an
        // ingest message.
        let mut remember = json!({ "content": "The user likes long walks on the beach." });
        let mut ingest = json!({ "messages": [{ "role": "user", "content": "I like long walks on the beach." }] });
        let mut in_message = ingest.clone();
        in_message["messages"][0][long.as_str()] = json!(1);
        remember[long.as_str()] = json!(1);
        ingest[long.as_str()] = json!(1);
        for (path, body) in [("remember", remember), ("ingest", ingest), ("ingest", in_message)] {
            let text = body.to_string();
            let path = format!("{BASE}/{path}");
            let req = Incoming { method: "POST", path: &path, query: "", content_type: Some("application/json"), body: text.as_bytes() };
            let rest::Route::Profile(call) = rest::route(&req).unwrap() else { panic!("{path} routes to the profile") };
            let e = block_on(p.dispatch(call.op.name(), call.args)).unwrap_err();
            assert_eq!(e.status(), 400, "{path}");
            assert!(e.message().len() < 300, "{path}: {} characters: {}", e.message().len(), e.message().chars().take(300).collect::<String>());
            assert!(
                e.message().contains(&format!("unknown field \"{}…\", expected", "x".repeat(64))),
                "{path}: {}",
                e.message().chars().take(300).collect::<String>()
            );
            assert!(e.message().contains("expected one of `"), "{path}: the fields there are: {}", e.message());
        }
        assert_eq!(p.stats().unwrap().memories, 0, "nothing was stored");
    });
}

// ---------------------------------------------------------------------------
// What a route does not read is refused, not dropped.

#[test]
fn test_a_post_that_reads_no_body_refuses_one_and_takes_none_or_an_empty_object() {
    let base = "/accounts/a/agent-memory/namespaces/ns/profiles/p";
    for path in [format!("{base}/memories/01abc/forget"), format!("{base}/restore"), format!("{base}/consolidations/5/undo")] {
        let routed = |body: &[u8]| rest::route(&Incoming { method: "POST", path: &path, query: "", content_type: Some("application/json"), body });
        let e = routed(br#"{"dryRun": true}"#).err().unwrap_or_else(|| panic!("{path} took a body"));
        assert_eq!(e.status(), 400, "{path}: {e}");
        for none in [&b""[..], b"  ", b"{}", b" { } "] {
            assert!(routed(none).is_ok(), "{path} refused {:?}", String::from_utf8_lossy(none));
        }
    }
}

/// A GET or DELETE reads no body: `{"dryRun": true}` sent with a DELETE
/// is refused (400) before anything is deleted, never dropped.
#[test]
fn test_a_get_or_delete_refuses_a_body_and_takes_none_or_an_empty_object() {
    let base = "/accounts/a/agent-memory/namespaces/ns";
    let routes = [
        ("DELETE", format!("{base}/profiles/p/memories/01abc")),
        ("DELETE", format!("{base}/profiles/p/sessions/s1")),
        ("DELETE", format!("{base}/profiles/p")),
        ("DELETE", base.to_string()),
        ("GET", format!("{base}/profiles/p/stats")),
        ("GET", format!("{base}/profiles/p/memories/01abc")),
        ("GET", base.to_string()),
    ];
    for (method, path) in &routes {
        let routed = |body: &[u8]| rest::route(&Incoming { method, path, query: "", content_type: Some("application/json"), body });
        let e = routed(br#"{"dryRun": true}"#).err().unwrap_or_else(|| panic!("{method} {path} took a body"));
        assert_eq!(e.status(), 400, "{method} {path}: {e}");
        assert!(e.message().contains("takes no body"), "{e}");
        for none in [&b""[..], b" \r\n", b"{}", b" { } "] {
            assert!(routed(none).is_ok(), "{method} {path} refused {:?}", String::from_utf8_lossy(none));
        }
    }
}

/// Control characters show nothing: content made only of them is blank,
/// refused by remember, and an ingest whose every message is such is
/// refused whole; a NUL inside visible text stays.
#[test]
fn test_content_of_control_characters_alone_is_blank_and_refused() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for content in ["\u{0}", "\u{1}\u{2}\u{3}", "\u{7f}", "\u{85}\u{0} \u{7}", "\u{9b}"] {
            let e = block_on(p.remember(remember(content))).err().unwrap_or_else(|| panic!("{content:?} remembered"));
            assert_eq!(e.status(), 400, "{content:?}: {e}");
        }
        let blank = IngestRequest {
            messages: vec![msg("user", "\u{0}", None), msg("assistant", "\u{1}\u{2}", None)],
            session_id: Some("c".into()),
            metadata: Default::default(),
        };
        assert_eq!(block_on(p.ingest(blank)).unwrap_err().status(), 400);
        assert_eq!((p.stats().unwrap().messages, p.stats().unwrap().memories), (0, 0), "nothing was stored");
        let kept = block_on(p.remember(remember("The build log holds a \u{0} byte at offset 12."))).unwrap();
        assert!(kept.content.contains('\u{0}'));
    });
}

/// A JSON text's tree takes far more memory than its text where its values
/// are small: a body is refused as soon as its reading passes what it may
/// take as a tree, whatever its size in bytes, and the largest calls the
/// service takes fit.
#[test]
fn test_a_body_whose_tree_would_pass_its_memory_is_refused_before_it_is_built() {
    use agent_memory::core::json::{MAX_JSON_TREE_BYTES, TREE_VALUE_BYTES};
    let arrays = |n: usize| format!("{{\"query\": \"a\", \"filter\": [{}]}}", vec!["[]"; n].join(","));
    assert!(rest::parse_strict(&arrays(MAX_JSON_TREE_BYTES / TREE_VALUE_BYTES - 40)).is_ok(), "just under");
    let Err(e) = rest::parse_strict(&arrays(MAX_JSON_TREE_BYTES / TREE_VALUE_BYTES)) else { panic!("a tree over the limit was taken") };
    assert_eq!(e.status(), 400);
    assert!(e.message().contains(&format!("would take more than {MAX_JSON_TREE_BYTES} bytes")), "{e}");
    // 17 MB of empty arrays (about 190 MB as a tree) and 2 MB of one-key
    // objects (about 170 MB): refused, not built.
    let body = arrays((rest::MAX_BODY_BYTES - 40) / 3);
    assert!(body.len() <= rest::MAX_BODY_BYTES);
    assert!(rest::parse_strict(&body).is_err(), "17 MB of empty arrays was taken");
    assert!(rest::parse_strict(&format!("[{}]", vec![r#"{"a":0}"#; 262_144].join(","))).is_err(), "one-key objects were taken");
    // The largest ingest: 500 messages at the content limit, with metadata.
    let messages: Vec<serde_json::Value> = (0..api::MAX_MESSAGES_PER_INGEST)
        .map(|i| json!({ "role": "user", "content": format!("{i} {}", "x".repeat(30_000)), "timestamp": "2026-04-15T10:00:00Z" }))
        .collect();
    let metadata: serde_json::Map<String, serde_json::Value> = (0..32).map(|k| (format!("key{k}"), json!("value"))).collect();
    let ingest = json!({ "sessionId": "s", "messages": messages, "metadata": metadata }).to_string();
    assert!(rest::parse_strict(&ingest).is_ok(), "the largest ingest, {} bytes", ingest.len());
}

#[test]
fn test_the_import_limit_is_the_import_routes_not_an_mcp_endpoint_of_a_profile_named_import() {
    assert_eq!(rest::body_limit("/accounts/a/agent-memory/namespaces/ns/profiles/p/import"), api::MAX_IMPORT_BYTES);
    assert_eq!(rest::body_limit("/mcp/namespaces/ns/profiles/import"), rest::MAX_BODY_BYTES);
    assert_eq!(rest::body_limit("/mcp/namespaces/profiles/profiles/import"), rest::MAX_BODY_BYTES);
    assert_eq!(rest::body_limit("/accounts/a/agent-memory/namespaces/ns/profiles/p/ingest"), rest::MAX_BODY_BYTES);
}

#[test]
fn test_list_refuses_a_key_no_memory_can_hold() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for key in ["Not A Key!", "package-manager", &"k".repeat(5000)] {
            let req = ListRequest { key: Some(key.to_string()), ..Default::default() };
            let e = p.list(req).err().unwrap_or_else(|| panic!("{key:.40} listed"));
            assert_eq!(e.status(), 400, "{e}");
        }
        assert!(p.list(ListRequest { key: Some("user.package_manager".into()), ..Default::default() }).is_ok());
    });
}

#[test]
fn test_rpc_reaches_the_published_methods_and_not_the_drain_or_the_purge() {
    assert!(rest::rpc_op("recall").is_ok() && rest::rpc_op("deleteSession").is_ok());
    for name in ["drain", "purge", "benchDrain", "constructor", ""] {
        assert_eq!(rest::rpc_op(name).err().map(|e| e.status()), Some(404), "{name}");
    }
}
