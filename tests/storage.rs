//! Native tests of the schema and the storage-level profile operations.

mod support;

use agent_memory::core::api::{IngestRequest, ListRequest, RememberRequest};
use agent_memory::core::model::{MessageInput, Status};
use agent_memory::core::store::{FullText, TEXT_BATCH};
use serde_json::json;
use support::{block_on, database, with_profile, APRIL_15};

fn msg(role: &str, content: &str) -> MessageInput {
    MessageInput { role: role.into(), content: content.into(), timestamp: None }
}

fn remember(content: &str) -> RememberRequest {
    serde_json::from_value(json!({ "content": content })).unwrap()
}

#[test]
fn test_migrations_are_idempotent() {
    let sql = database();
    agent_memory::core::schema::migrate(&sql).unwrap();
    let rows = agent_memory::core::ports::Sql::query(&sql, "SELECT COUNT(*) FROM schema_migrations", &[]).unwrap();
    assert_eq!(rows[0][0].as_i64(), Some(agent_memory::core::schema::latest_version()));
}

#[test]
fn test_remember_then_list_shows_it() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let m = block_on(p.remember(remember("API rate limit was increased to 10,000 req/s per zone."))).unwrap();
        let page = p.list(ListRequest::default()).unwrap();
        assert_eq!(page.memories.len(), 1);
        assert_eq!(page.memories[0].id, m.id);
        assert_eq!(page.memories[0].status, Status::Active);
    });
}

#[test]
fn test_blank_remember_is_refused_and_stores_nothing_but_a_short_statement_is_kept() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let err = block_on(p.remember(remember(" \n\t "))).unwrap_err();
        assert!(err.is_invalid());
        assert_eq!(p.stats().unwrap().memories, 0);
        // However short, a statement is kept (as Cloudflare's interface does).
        let m = block_on(p.remember(remember("Prefers dark mode."))).unwrap();
        assert_eq!(m.content, "Prefers dark mode.");
        assert_eq!(p.stats().unwrap().memories, 1);
    });
}

#[test]
fn test_same_messages_twice_store_each_once() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let req = IngestRequest {
            messages: vec![msg("user", "Use pnpm, not npm."), msg("assistant", "Got it, pnpm it is.")],
            session_id: Some("s1".into()),
            metadata: Default::default(),
        };
        let a = block_on(p.ingest(req.clone())).unwrap();
        let b = block_on(p.ingest(req)).unwrap();
        assert_eq!(a.message_ids, b.message_ids);
        assert_eq!(a.messages_stored, 2);
        assert_eq!(b.messages_stored, 0);
        assert_eq!(b.memories_stored, 0);
        assert_eq!(p.stats().unwrap().messages, 2);
    });
}

#[test]
fn test_oversized_message_is_refused_and_stores_nothing() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let req = IngestRequest { messages: vec![msg("user", "fine"), msg("user", &"x".repeat(40 * 1024))], session_id: None, metadata: Default::default() };
        let err = block_on(p.ingest(req)).unwrap_err();
        assert!(err.is_client_error());
        assert_eq!(p.stats().unwrap().messages, 0);
    });
}

#[test]
fn test_list_pages_with_a_cursor_and_filters() {
    let sql = database();
    for i in 0..5 {
        with_profile(&sql, APRIL_15 + i * 1000, |p| {
            block_on(p.remember(remember(&format!("Remembered fact {i} about the deployment pipeline")))).unwrap();
        });
    }
    // Each fact supersedes the one before (alike statements): the pages
    // list every state.
    with_profile(&sql, APRIL_15 + 10_000, |p| {
        use agent_memory::core::api::ListStatus;
        let first = p.list(ListRequest { limit: Some(2), status: Some(ListStatus::All), ..ListRequest::default() }).unwrap();
        assert_eq!(first.memories.len(), 2);
        let second = p.list(ListRequest { limit: Some(2), status: Some(ListStatus::All), cursor: first.cursor.clone(), ..ListRequest::default() }).unwrap();
        let third = p.list(ListRequest { limit: Some(2), status: Some(ListStatus::All), cursor: second.cursor.clone(), ..ListRequest::default() }).unwrap();
        assert_eq!(third.memories.len(), 1);
        assert!(third.cursor.is_none());
        // The pages hold every memory once, newest first.
        let all: Vec<String> = [first, second, third].into_iter().flat_map(|p| p.memories).map(|m| m.id).collect();
        let mut expected: Vec<String> = p
            .list(ListRequest { limit: Some(100), status: Some(ListStatus::All), ..ListRequest::default() })
            .unwrap()
            .memories
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(all, expected);
        expected.sort();
        expected.dedup();
        assert_eq!(expected.len(), 5);
        assert_eq!(p.list(ListRequest::default()).unwrap().memories.len(), 1, "only the newest is active, and listed by default");
        let none = p.list(ListRequest { session_id: Some("other".into()), ..ListRequest::default() }).unwrap();
        assert!(none.memories.is_empty());
    });
}

/// A page holds at most `PAGE_TEXT_BYTES` of memories' texts, however
/// high its limit: one cut short ends with a cursor, and the pages hold
/// every memory once, newest first.
#[test]
fn test_a_list_page_of_large_memories_stops_at_its_byte_budget_and_pages_through_all() {
    let sql = database();
    for i in 0..80 {
        with_profile(&sql, APRIL_15 + i, |p| block_on(p.remember(remember(&support::long_statement(i as u64)))).unwrap());
    }
    with_profile(&sql, APRIL_15 + 1_000, |p| {
        let (mut seen, mut cursor, mut pages) = (Vec::new(), None, 0);
        loop {
            let page = p.list(ListRequest { limit: Some(1000), cursor: cursor.take(), ..ListRequest::default() }).unwrap();
            let bytes: usize = page.memories.iter().map(|m| m.content.len() + m.summary.len()).sum();
            assert!(bytes <= agent_memory::core::store::PAGE_TEXT_BYTES, "a page of {bytes} bytes");
            assert!(!page.memories.is_empty());
            pages += 1;
            seen.extend(page.memories.into_iter().map(|m| m.id));
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert!(pages >= 3, "80 memories of 30 KB take several pages of 1 MB: {pages}");
        let mut newest_first = seen.clone();
        newest_first.sort_by(|a, b| b.cmp(a));
        assert_eq!(seen, newest_first, "newest first");
        newest_first.dedup();
        assert_eq!(newest_first.len(), 80, "every memory once");
    });
}

#[test]
fn test_a_list_given_the_empty_cursor_of_a_last_page_starts_again_and_others_are_refused() {
    let sql = database();
    for (i, text) in ["The build runs on Tuesdays.", "Invoices go out on the first."].iter().enumerate() {
        with_profile(&sql, APRIL_15 + i as i64 * 1000, |p| {
            block_on(p.remember(remember(text))).unwrap();
        });
    }
    with_profile(&sql, APRIL_15 + 10_000, |p| {
        let first = p.list(ListRequest { limit: Some(1), ..ListRequest::default() }).unwrap();
        let again = p.list(ListRequest { limit: Some(1), cursor: Some(String::new()), ..ListRequest::default() }).unwrap();
        assert_eq!(again, first, "an empty cursor sent back is the first page");
        for bad in ["\0junk", "not one", "a/b"] {
            let e = p.list(ListRequest { cursor: Some(bad.into()), ..ListRequest::default() }).unwrap_err();
            assert!(e.is_invalid() && e.message().contains("cursor"), "{bad:?}: {e}");
        }
    });
}

/// A list cursor belongs to the profile that gave it: another profile's
/// cursor, or a memory id sent as one, is a 400, never an empty "last
/// page"; a cursor whose memory was deleted since still leads on.
#[test]
fn test_a_cursor_of_another_profile_is_refused_and_one_whose_memory_went_still_pages() {
    let sql = database();
    let ids: Vec<String> = ["The build runs on Tuesdays.", "Invoices go out on the first.", "The office opens at nine."]
        .iter()
        .enumerate()
        .map(|(i, text)| with_profile(&sql, APRIL_15 + i as i64 * 1000, |p| block_on(p.remember(remember(text))).unwrap().id))
        .collect();
    with_profile(&sql, APRIL_15 + 10_000, |p| {
        let first = p.list(ListRequest { limit: Some(1), ..ListRequest::default() }).unwrap();
        let cursor = first.cursor.clone().expect("more remain");
        let store = agent_memory::core::store::Store::new(p.sql, APRIL_15);
        let secret = store.cursor_secret().unwrap();
        assert_eq!(secret.len(), 32, "128 random bits");
        let elsewhere = agent_memory::core::api::seal_cursor(&agent_memory::core::api::cursor_key("test/other", &secret), &first.memories[0].id);
        // Made as the code makes one, but without the profile's secret.
        let forged = agent_memory::core::api::seal_cursor(&agent_memory::core::api::cursor_key(p.name, ""), &ids[0]);
        for bad in [elsewhere, forged, first.memories[0].id.clone(), format!("{}.000000000000", ids[0])] {
            let e = p.list(ListRequest { limit: Some(1), cursor: Some(bad.clone()), ..ListRequest::default() }).unwrap_err();
            assert!(e.is_invalid() && e.message().contains("cursor"), "{bad}: {e}");
        }
        p.delete(&first.memories[0].id).unwrap();
        let next = p.list(ListRequest { limit: Some(5), cursor: Some(cursor), ..ListRequest::default() }).unwrap();
        assert_eq!(next.memories.len(), 2, "the rest after a deleted memory's cursor");
    });
}

#[test]
fn test_forget_hides_from_active_list_and_queues_vector_removal() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let m = block_on(p.remember(remember("The staging database lives in the eu-west region."))).unwrap();
        let f = p.forget(&m.id).unwrap();
        assert_eq!(f.status, Status::Forgotten);
        let active = p.list(ListRequest { status: Some(agent_memory::core::api::ListStatus::Active), ..ListRequest::default() }).unwrap();
        assert!(active.memories.is_empty());
        block_on(p.drain()).unwrap();
        assert_eq!(p.stats().unwrap().vectors, 0);
        assert_eq!(p.stats().unwrap().pending_jobs, 0);
    });
}

#[test]
fn test_delete_removes_memory_messages_and_fts_rows() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let r = block_on(p.ingest(IngestRequest {
            messages: vec![msg("user", "The secret launch codename is Bluebird for the April release.")],
            session_id: Some("s1".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        let id = r.memories[0].id.clone();
        block_on(p.drain()).unwrap();
        // Its full-text rows written (a reader of the index does this),
        // so there is something to delete.
        let count = |q: &str| agent_memory::core::ports::Sql::query(&sql, q, &[]).unwrap()[0][0].as_i64().unwrap();
        for which in FullText::BOTH {
            which.catch_up(&sql).unwrap();
            assert!(count(&format!("SELECT COUNT(*) FROM {} WHERE {0} MATCH 'bluebird'", which.table())) > 0);
        }
        // Through the operation, as every way in calls it: the vector
        // index drops the vectors within the call.
        block_on(p.dispatch("delete", serde_json::json!({ "id": id }))).unwrap();
        let export = p.export(Default::default()).unwrap();
        assert!(!export.contains("Bluebird"), "deleted text survives in export");
        for table in ["memories_fts", "messages_fts", "vectors", "citations", "citations_waiting"] {
            assert_eq!(count(&format!("SELECT COUNT(*) FROM {table}")), 0, "{table} not empty");
        }
        // Only the vector-removal job of the deleted memory remains.
        assert_eq!(count("SELECT COUNT(*) FROM outbox WHERE kind <> 'unvector'"), 0);
        assert_eq!(count("SELECT COUNT(*) FROM outbox WHERE kind = 'unvector'"), 1);
        block_on(p.drain()).unwrap();
        assert_eq!(p.stats().unwrap().pending_jobs, 0);
    });
}

#[test]
fn test_delete_session_removes_only_that_session() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for (s, text) in [("a", "The build server runs on Debian twelve."), ("b", "The office coffee machine is broken again.")] {
            block_on(p.ingest(IngestRequest { messages: vec![msg("user", text)], session_id: Some(s.into()), metadata: Default::default() })).unwrap();
        }
        p.delete_session("a").unwrap();
        let export = p.export(Default::default()).unwrap();
        assert!(!export.contains("Debian"));
        assert!(export.contains("coffee"));
    });
}

#[test]
fn test_only_active_unexpired_non_task_memories_want_a_vector() {
    let sql = database();
    let ids = with_profile(&sql, APRIL_15, |p| {
        let add = |v: serde_json::Value| block_on(p.remember(serde_json::from_value(v).unwrap())).unwrap().id;
        let fact = add(json!({ "content": "The staging database runs Postgres 16 on a dedicated host." }));
        let task = add(json!({ "content": "Migrating the billing service to the new queue this sprint.", "type": "task" }));
        let forgotten = add(json!({ "content": "The old VPN gateway lives in the Frankfurt rack." }));
        let expiring = add(json!({ "content": "The office door code this week is the building number twice.", "ttlSeconds": 60 }));
        p.forget(&forgotten).unwrap();
        vec![fact, task, forgotten, expiring, "mem_unknown".to_string()]
    });
    let wanting = |now: i64| with_profile(&sql, now, |p| p.store().wanting_vectors(&ids).unwrap());
    let expected_now: std::collections::HashSet<String> = [ids[0].clone(), ids[3].clone()].into();
    assert_eq!(wanting(APRIL_15), expected_now);
    // Two minutes later the TTL has passed: the memory reads as expired.
    assert_eq!(wanting(APRIL_15 + 120_000), [ids[0].clone()].into());
}

#[test]
fn test_speakers_follow_the_messages_and_leave_with_their_last_one() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let session = |s: &str, messages: Vec<MessageInput>| IngestRequest { messages, session_id: Some(s.into()), metadata: Default::default() };
        // The directory's, and SQLite's alone (a cold profile's): the same.
        let speakers = || {
            let held = p.turns.unwrap().sync(p.sql).unwrap().speakers().to_vec();
            let read = agent_memory::core::recall::places::Source::Sql(&Default::default()).speakers(p.sql).unwrap().to_vec();
            assert_eq!(held, read, "the directory's speakers and SQLite's");
            held
        };
        block_on(p.ingest(session("a", vec![msg("Maria", "I baked a lemon tart for the fair."), msg("user", "Lemon tarts are my favourite dessert.")])))
            .unwrap();
        assert_eq!(speakers(), vec!["Maria", "user"]);
        block_on(p.ingest(session("b", vec![msg("John Smith", "The trail up the ridge took us four hours.")]))).unwrap();
        assert_eq!(speakers(), vec!["John Smith", "Maria", "user"], "a new speaker is seen on the next sync");
        p.delete_session("b").unwrap();
        assert_eq!(speakers(), vec!["Maria", "user"], "a deleted session's only speaker leaves with it");
        p.wipe().unwrap();
        assert!(speakers().is_empty());
    });
}

#[test]
fn test_turn_directory_follows_appends_deletes_and_a_wipe() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let session = |s: &str, messages: Vec<MessageInput>| IngestRequest { messages, session_id: Some(s.into()), metadata: Default::default() };
        let places = || {
            let dir = p.turns.unwrap().sync(p.sql).unwrap();
            let rows = p.sql.query("SELECT rowid, id, session_id, position FROM messages ORDER BY rowid", &[]).unwrap();
            // Every stored message is found by rowid and by id at its place,
            // and the directory holds nothing else.
            assert_eq!(dir.len(), rows.len(), "one entry per stored message");
            for r in &rows {
                let i = dir.by_rowid(r[0].as_i64().unwrap()).expect("a stored message by rowid");
                let t = dir.turn(i);
                assert_eq!(Some(t.id.as_str()), r[1].as_str());
                assert_eq!(dir.by_id(&t.id), Some(i));
                assert_eq!(dir.at(t.session, t.position), Some(i));
                assert_eq!(Some(t.position), r[3].as_i64());
            }
            rows.len()
        };
        assert_eq!(places(), 0);
        block_on(p.ingest(session("a", vec![msg("Maria", "We adopted a puppy in 2022."), msg("user", "What is the puppy called?")]))).unwrap();
        assert_eq!(places(), 2);
        {
            let dir = p.turns.unwrap().sync(p.sql).unwrap();
            let first = dir.turn(dir.by_rowid(1).unwrap());
            assert!(first.mentions_time, "a year is a time");
            assert!(!dir.turn(dir.by_rowid(2).unwrap()).mentions_time);
            assert_eq!(dir.role_name(first.role), "Maria");
        }
        block_on(p.ingest(session("a", vec![msg("Maria", "She is called Biscuit.")]))).unwrap();
        block_on(p.ingest(session("b", vec![msg("John", "The trail took four hours."), msg("user", "Long walk!")]))).unwrap();
        assert_eq!(places(), 5, "appended messages are read in");
        p.delete_session("b").unwrap();
        assert_eq!(places(), 3, "deleted messages leave");
        // The rowids the delete freed are the highest: a new message takes
        // one again, under another id.
        block_on(p.ingest(session("c", vec![msg("user", "A new session after the delete.")]))).unwrap();
        assert_eq!(places(), 4);
        assert_eq!(p.sql.query("SELECT max(rowid) FROM messages", &[]).unwrap()[0][0].as_i64(), Some(4), "a rowid was taken again");
        p.wipe().unwrap();
        assert_eq!(places(), 0);
        block_on(p.ingest(session("d", vec![msg("user", "Starting over.")]))).unwrap();
        assert_eq!(places(), 1, "rowids restart after a wipe; the directory with them");
    });
}

/// What the state held is kept beside the estimate it was measured
/// against (core::resident::Measured): read back as written, gone with a
/// wipe, and an error, never a default, when it does not read. The
/// directory says which rowids its size stands for.
#[test]
fn test_a_state_measurement_reads_back_goes_with_a_wipe_and_a_corrupt_one_is_an_error() {
    use agent_memory::core::resident::{Measured, META_STATE_MEASURED};
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let store = agent_memory::core::store::Store::new(p.sql, APRIL_15);
        assert_eq!(store.state_measured().unwrap(), None);
        let session = IngestRequest {
            messages: vec![msg("user", "We adopted a puppy."), msg("assistant", "What is it called?")],
            session_id: Some("a".into()),
            metadata: Default::default(),
        };
        block_on(p.ingest(session)).unwrap();
        let turns = p.turns.unwrap();
        assert_eq!(turns.read_up_to(), None, "nothing read yet");
        drop(turns.sync(p.sql).unwrap());
        let (messages, memories) = store.highest_rowids().unwrap();
        assert_eq!(turns.read_up_to(), Some((messages, memories)), "the rowids its size stands for");
        let m = Measured {
            held: turns.heap_bytes() as u64,
            estimated: agent_memory::core::resident::words_estimate(messages, memories) as u64,
            code_dims: 256,
            vectors: 0,
            memories,
        };
        store.set_state_measured(&m).unwrap();
        assert_eq!(store.state_measured().unwrap(), Some(m));
        store.meta_set(META_STATE_MEASURED, "12 apples").unwrap();
        assert!(store.state_measured().is_err(), "a corrupt measurement is an error");
        store.set_state_measured(&m).unwrap();
        p.wipe().unwrap();
        assert_eq!(store.state_measured().unwrap(), None, "a wipe removes it");
    });
}

#[test]
fn test_export_then_import_reproduces_everything() {
    let src = database();
    let export = with_profile(&src, APRIL_15, |p| {
        block_on(p.ingest(IngestRequest {
            messages: vec![msg("user", "Set up the project with React and TypeScript."), msg("user", "Use pnpm, not npm. And dark mode by default.")],
            session_id: Some("s1".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        block_on(p.remember(remember("API rate limit was increased to 10,000 req/s per zone."))).unwrap();
        p.export(Default::default()).unwrap()
    });
    let dst = database();
    with_profile(&dst, APRIL_15 + 5000, |p| {
        let report = p.import(&export).unwrap();
        assert!(report.memories >= 3);
        let again = p.export(Default::default()).unwrap();
        let body = |s: &str| s.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(body(&export), body(&again));
    });
}

#[test]
fn test_import_of_many_megabytes_is_written_whole_in_bounded_statements() {
    // Several MB of memories and messages: more than one JSON parameter
    // can carry (the native SQL refuses any value over the platform's
    // 2 MB, as the Durable Object does), so the store must split its
    // writes, and lose nothing.
    use agent_memory::core::model::{Memory, MemoryType, Message};
    let filler = "the quick brown fox jumps over the lazy dog ".repeat(40);
    let mut lines = vec![
        json!({"kind": "header", "format": "agent-memory-export", "version": 1, "profile": "test/p", "exportedAt": "2026-04-15T10:00:00.000Z"}).to_string(),
    ];
    let mut memories = Vec::new();
    for i in 0..1500 {
        let content = format!("Teammate number {i} fixed build script {i} on Tuesday. {filler}");
        let m = Message {
            id: agent_memory::core::ids::message_id("bulk", "user", &content),
            session_id: "bulk".into(),
            role: "user".into(),
            content: content.clone(),
            timestamp: Some("2026-04-14T10:00:00.000Z".into()),
            position: i,
            created_at: "2026-04-14T10:00:00.000Z".into(),
            metadata: Default::default(),
        };
        let mut v = serde_json::to_value(&m).unwrap();
        v["kind"] = json!("message");
        lines.push(v.to_string());
        memories.push(Memory {
            id: format!("{:032x}", i + 1),
            kind: if i % 10 == 0 { MemoryType::Task } else { MemoryType::Fact },
            // A task takes no key (import refuses one, as remember does).
            key: (i % 10 != 0).then(|| format!("team.build_{i}")),
            summary: format!("Teammate {i} fixed build script {i}"),
            content,
            session_id: "bulk".into(),
            source_message_ids: vec![m.id.clone()],
            search_queries: vec![format!("who fixed build script {i}")],
            status: agent_memory::core::model::Status::Active,
            supersedes: None,
            superseded_by: None,
            event_date: None,
            created_at: "2026-04-14T10:00:00.000Z".into(),
            updated_at: "2026-04-14T10:00:00.000Z".into(),
            expires_at: None,
            metadata: Default::default(),
            valid_from: None,
            valid_to: None,
        });
    }
    for m in &memories {
        let mut v = serde_json::to_value(m).unwrap();
        v["kind"] = json!("memory");
        lines.push(v.to_string());
    }
    let ndjson = lines.join("\n") + "\n";
    assert!(ndjson.len() > 5_000_000, "the file is {} bytes", ndjson.len());
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let report = p.import(&ndjson).unwrap();
        assert_eq!((report.messages, report.memories), (1500, 1500));
        let stats = p.stats().unwrap();
        assert_eq!((stats.messages, stats.memories), (1500, 1500));
        let count = |q: &str| agent_memory::core::ports::Sql::query(p.sql, q, &[]).unwrap()[0][0].as_i64().unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM memories_fts"), 1500);
        assert_eq!(count("SELECT COUNT(*) FROM messages_fts"), 1500);
        assert_eq!(count("SELECT COUNT(*) FROM outbox WHERE kind = 'index_text'"), 0, "the import wrote them itself");
        assert_eq!(count("SELECT COUNT(*) FROM citations"), 1500);
        // Every active memory but the tasks waits for its vector.
        assert_eq!(count("SELECT COUNT(*) FROM outbox WHERE kind = 'embed'"), 1350);
        let back = p.get("00000000000000000000000000000577").unwrap();
        assert_eq!(back.memory, memories[1398]);
        assert_eq!(back.source_messages.len(), 1);
        // A second import of the same file adds nothing.
        let again = p.import(&ndjson).unwrap();
        assert_eq!((again.messages, again.memories), (0, 0));
        assert_eq!(count("SELECT COUNT(*) FROM memories_fts"), 1500);
    });
}

#[test]
fn test_an_import_whose_ids_alone_are_over_one_value_is_written_whole() {
    // 62,000 messages and as many memories: each kind's ids alone, as one
    // JSON list, are over the 2 MB a bound value may carry (the native SQL
    // refuses it, as the Durable Object does).
    let (messages, memories) = (62_000usize, 62_000usize);
    let mut lines = vec![
        json!({"kind": "header", "format": "agent-memory-export", "version": 1, "profile": "test/p", "exportedAt": "2026-04-15T10:00:00.000Z"}).to_string(),
    ];
    let mut message_ids = Vec::new();
    for i in 0..messages {
        let content = format!("note {i}");
        let id = agent_memory::core::ids::message_id("bulk", "user", &content);
        lines.push(
            json!({"kind": "message", "id": id, "sessionId": "bulk", "role": "user", "content": content,
                   "timestamp": "2026-04-14T10:00:00.000Z", "position": i, "createdAt": "2026-04-14T10:00:00.000Z"})
            .to_string(),
        );
        message_ids.push(id);
    }
    assert!(message_ids.iter().map(|id| id.len() + 3).sum::<usize>() > 2 << 20, "the message ids are over 2 MB");
    for i in 0..memories {
        lines.push(
            json!({"kind": "memory", "id": format!("{:032x}", i + 1), "type": "fact", "summary": format!("Note {i}"), "content": format!("Note {i}"),
                   "sessionId": "bulk", "sourceMessageIds": [message_ids[i]], "searchQueries": [], "status": "active",
                   "createdAt": "2026-04-14T10:00:00.000Z", "updatedAt": "2026-04-14T10:00:00.000Z"})
            .to_string(),
        );
    }
    let ndjson = lines.join("\n") + "\n";
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let report = p.import(&ndjson).unwrap();
        assert_eq!((report.messages, report.memories), (messages, memories));
        let count = |q: &str| agent_memory::core::ports::Sql::query(p.sql, q, &[]).unwrap()[0][0].as_i64().unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM memories"), memories as i64);
        assert_eq!(count("SELECT COUNT(*) FROM messages"), messages as i64);
        assert_eq!(count("SELECT COUNT(*) FROM citations"), memories as i64);
        assert_eq!(count("SELECT COUNT(*) FROM outbox WHERE kind = 'embed'"), memories as i64, "every memory waits for its vector, once");
        let again = p.import(&ndjson).unwrap();
        assert_eq!((again.messages, again.memories), (0, 0), "a second import adds nothing");
    });
}

#[test]
fn test_bad_import_changes_nothing() {
    // A good profile's export, with one record spoilt after its good ones.
    let source = database();
    let good = with_profile(&source, APRIL_15, |p| {
        block_on(p.ingest(IngestRequest {
            messages: vec![msg("user", "I moved to Lisbon in 2021 and work as a baker.")],
            session_id: Some("s1".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        block_on(p.remember(serde_json::from_value(json!({"content": "The office closes on Friday.", "expiresAt": "2026-05-01T00:00:00Z"})).unwrap())).unwrap();
        p.export(Default::default()).unwrap()
    });
    assert!(good.contains("\"expiresAt\""), "{good}");
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let truncated = format!("{good}{{\"kind\":\"message\",\"id\":\"00\"}}\n");
        assert!(p.import(&truncated).unwrap_err().is_invalid());
        // A misspelt field is refused by name, never dropped.
        let misspelt = good.replace("\"expiresAt\"", "\"expiresAT\"");
        let e = p.import(&misspelt).unwrap_err();
        assert!(e.is_invalid() && e.message().contains("unknown field \"expiresAT\""), "{e}");
        let stats = p.stats().unwrap();
        assert_eq!((stats.messages, stats.memories), (0, 0), "nothing of either file was written");
        p.import(&good).unwrap();
        assert!(p.stats().unwrap().memories >= 2, "the good file imports");
    });
}

#[test]
fn test_import_refuses_a_message_larger_than_ingest_accepts() {
    use agent_memory::core::api::MAX_MESSAGE_BYTES;
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let line = |content: &str| {
            let id = agent_memory::core::ids::message_id("s1", "user", content);
            json!({ "kind": "message", "id": id, "sessionId": "s1", "role": "user", "content": content, "position": 0, "createdAt": "2026-04-15T10:00:00Z" })
                .to_string()
        };
        let header = "{\"kind\":\"header\",\"format\":\"agent-memory-export\",\"version\":1}";
        let fits = "x".repeat(MAX_MESSAGE_BYTES);
        p.import(&format!("{header}\n{}\n", line(&fits))).expect("a message at the limit is imported");
        let over = "y".repeat(MAX_MESSAGE_BYTES + 1);
        let e = p.import(&format!("{header}\n{}\n", line(&over))).unwrap_err();
        assert!(e.is_invalid(), "{e}");
        assert_eq!(p.stats().unwrap().messages, 1, "nothing of the refused file is stored");
    });
}

/// Rows in `table` and in its full-text table.
fn indexed(sql: &support::NativeSql, which: FullText) -> (i64, i64) {
    let count = |t: &str| agent_memory::core::ports::Sql::query(sql, &format!("SELECT COUNT(*) FROM {t}"), &[]).unwrap()[0][0].as_i64().unwrap();
    let table = which.table().trim_end_matches("_fts");
    (count(table), count(which.table()))
}

/// The background jobs that write waiting full-text rows, by table.
fn text_jobs(sql: &support::NativeSql) -> Vec<String> {
    agent_memory::core::ports::Sql::query(sql, "SELECT memory_id FROM outbox WHERE kind = 'index_text' ORDER BY memory_id", &[])
        .unwrap()
        .into_iter()
        .map(|r| r[0].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn test_full_text_rows_wait_for_a_batch_then_the_drain_writes_them_together() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let say = |i: usize| format!("Message {i}: the deploy of service number {i} moved to the Tuesday window.");
        block_on(p.ingest(IngestRequest {
            messages: (0..10).map(|i| msg("user", &say(i))).collect(),
            session_id: Some("a".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        block_on(p.drain()).unwrap();
        let (messages, memories) = (indexed(&sql, FullText::Messages), indexed(&sql, FullText::Memories));
        assert_eq!((messages.0, messages.1), (10, 0), "ten messages wait, drained or not");
        assert!(memories.0 > 0 && memories.1 == 0, "the memories wait: {memories:?}");
        assert!(text_jobs(&sql).is_empty());
        // A write that leaves a batch waiting queues one job for its table
        // (calls of a quarter batch: an ingest takes at most 500 messages).
        let rest: Vec<usize> = (10..10 + TEXT_BATCH).collect();
        let parts: Vec<&[usize]> = rest.chunks(TEXT_BATCH / 4).collect();
        for (k, part) in parts.iter().enumerate() {
            let many: Vec<MessageInput> = part.iter().map(|&i| msg("user", &say(i))).collect();
            block_on(p.ingest(IngestRequest { messages: many, session_id: Some(format!("b{k}")), metadata: Default::default() })).unwrap();
            if k + 1 < parts.len() {
                assert!(!text_jobs(&sql).contains(&"messages_fts".to_string()), "still fewer than a batch after call {k}");
            }
        }
        assert_eq!(indexed(&sql, FullText::Messages).1, 0, "nothing written before the drain");
        let jobs = text_jobs(&sql);
        assert!(jobs.contains(&"messages_fts".to_string()), "{jobs:?}");
        // Another write while it waits queues nothing more.
        block_on(p.ingest(IngestRequest { messages: vec![msg("user", &say(7777))], session_id: Some("b-more".into()), metadata: Default::default() })).unwrap();
        assert_eq!(text_jobs(&sql), jobs);
        // One drain takes a bounded share of the outbox (the embeddings of
        // the new memories come first): drained until the outbox is empty.
        let mut indexed_jobs = 0;
        for _ in 0..10 {
            let report = block_on(p.drain()).unwrap();
            indexed_jobs += report.indexed;
            if report.pending == 0 {
                break;
            }
        }
        assert_eq!(indexed_jobs, jobs.len());
        assert!(text_jobs(&sql).is_empty());
        let messages = indexed(&sql, FullText::Messages);
        assert_eq!(messages, (11 + TEXT_BATCH as i64, 11 + TEXT_BATCH as i64));
        let memories = indexed(&sql, FullText::Memories);
        assert_eq!(memories.0, memories.1);
        // Fewer wait again; a reader's catch-up indexes them, once.
        block_on(p.ingest(IngestRequest { messages: vec![msg("user", &say(9999))], session_id: Some("c".into()), metadata: Default::default() })).unwrap();
        assert_eq!(indexed(&sql, FullText::Messages).1, messages.1);
        assert_eq!(FullText::Messages.catch_up(&sql).unwrap(), 1);
        assert_eq!(FullText::Messages.catch_up(&sql).unwrap(), 0);
        assert_eq!(indexed(&sql, FullText::Messages), (messages.0 + 1, messages.1 + 1));
    });
}

/// A write of few rows but much text (an ingest of 40 messages of 32 KB)
/// queues the job as a batch of rows would: the first recall after it
/// wrote their full-text rows itself (1.3 s natively for 500 such
/// messages, 5.1 s for Chinese text).
#[test]
fn test_a_write_of_a_batchs_bytes_in_few_rows_queues_the_text_job() {
    use agent_memory::core::store::TEXT_BATCH_BYTES;
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let long = |i: usize| format!("Note {i}. {}", "The deploy window moved to Tuesday for the billing service. ".repeat(500));
        let few = |n: usize, s: &str| IngestRequest {
            messages: (0..n).map(|i| msg("user", &long(i))).collect(),
            session_id: Some(s.into()),
            metadata: Default::default(),
        };
        block_on(p.ingest(few(2, "small"))).unwrap();
        assert!(2 * long(0).len() < TEXT_BATCH_BYTES);
        assert!(text_jobs(&sql).is_empty(), "two long messages wait for the next reader");
        let n = TEXT_BATCH_BYTES / long(0).len() + 1;
        assert!(n < TEXT_BATCH / 4);
        block_on(p.ingest(few(n, "large"))).unwrap();
        // (Their memories are a few short sentences: no job for them.)
        assert_eq!(text_jobs(&sql), ["messages_fts"], "{n} messages of {} bytes", long(0).len());
        block_on(p.drain()).unwrap();
        let messages = indexed(&sql, FullText::Messages);
        assert_eq!(messages.0, messages.1, "the drain wrote them");
    });
}

#[test]
fn test_full_text_catch_up_follows_deletes_and_reused_rowids() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let r = block_on(p.ingest(IngestRequest {
            messages: vec![msg("user", "The launch codename is Bluebird."), msg("user", "The backup codename is Kestrel.")],
            session_id: Some("s1".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        FullText::Messages.catch_up(&sql).unwrap();
        // The newest message goes (its full-text row with it); the next
        // message stored takes its rowid and must be indexed too.
        p.store().delete_messages(&r.message_ids[1..]).unwrap();
        assert_eq!(indexed(&sql, FullText::Messages), (1, 1));
        block_on(p.ingest(IngestRequest {
            messages: vec![msg("user", "The spare codename is Osprey.")],
            session_id: Some("s2".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        assert_eq!(FullText::Messages.catch_up(&sql).unwrap(), 1);
        let matches = |w: &str| {
            agent_memory::core::ports::Sql::query(&sql, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?1", &[w.into()]).unwrap()[0][0]
                .as_i64()
                .unwrap()
        };
        assert_eq!((matches("bluebird"), matches("kestrel"), matches("osprey")), (1, 0, 1));
    });
}

#[test]
fn test_embedding_inputs_are_those_of_the_memories_that_want_a_vector() {
    use agent_memory::core::background::{embedding_text, embedding_text_of, wants_vector};
    use agent_memory::core::model::{Memory, MemoryType};
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let statuses = [Status::Active, Status::Superseded, Status::Forgotten];
        let expiries = [None, Some("2026-04-14T00:00:00.000Z"), Some("2027-01-01T00:00:00.000Z")];
        let mut all = Vec::new();
        for i in 0..36usize {
            all.push(Memory {
                id: format!("{:032x}", i + 1),
                kind: if i % 4 == 0 { MemoryType::Task } else { MemoryType::Fact },
                key: None,
                summary: format!("Fact {i}"),
                content: format!("Fact number {i} about the \"quoted\" build\nwith a second line."),
                session_id: "s".into(),
                source_message_ids: vec![],
                search_queries: (0..(i / 3) % 4).map(|q| format!("query {q} of {i}?")).collect(),
                status: statuses[i % 3],
                supersedes: None,
                superseded_by: None,
                event_date: None,
                created_at: "2026-04-14T10:00:00.000Z".into(),
                updated_at: "2026-04-14T10:00:00.000Z".into(),
                expires_at: expiries[(i / 3) % 3].map(String::from),
                metadata: Default::default(),
                valid_from: None,
                valid_to: None,
            });
        }
        let items: Vec<(&Memory, &str)> = all.iter().map(|m| (m, m.id.as_str())).collect();
        p.store().insert_memories(&items).unwrap();
        // One memory's stored queries are not a JSON list: a storage error,
        // as reading the whole memory is, never a memory without queries.
        assert!(wants_vector(&all[6]) && !all[6].search_queries.is_empty());
        agent_memory::core::ports::Sql::execute(&sql, "UPDATE memories SET search_queries = 'not json' WHERE id = ?1", &[all[6].id.as_str().into()]).unwrap();
        let e = p.store().embedding_inputs(std::slice::from_ref(&all[6].id)).unwrap_err();
        assert!(e.is_storage() && e.message().contains("search queries"), "{e}");
        assert!(p.store().memories_by_ids(std::slice::from_ref(&all[6].id)).unwrap_err().is_storage());
        // An expiry that is not a time is one too (every path, next_expiry
        // included), never read as a memory that does not expire.
        let corrupt = all.iter().find(|m| wants_vector(m) && m.id != all[6].id).expect("another memory wanting a vector").id.clone();
        agent_memory::core::ports::Sql::execute(&sql, "UPDATE memories SET expires_at = 'soon' WHERE id = ?1", &[corrupt.as_str().into()]).unwrap();
        for e in [
            p.store().embedding_inputs(std::slice::from_ref(&corrupt)).unwrap_err(),
            p.store().wanting_vectors(std::slice::from_ref(&corrupt)).unwrap_err(),
            p.store().memories_by_ids(std::slice::from_ref(&corrupt)).unwrap_err(),
        ] {
            assert!(e.is_storage() && e.message().contains("expiry"), "{e}");
        }
        let at = all.iter().find(|m| m.id == corrupt).and_then(|m| m.expires_at.clone());
        agent_memory::core::ports::Sql::execute(&sql, "UPDATE memories SET expires_at = ?2 WHERE id = ?1", &[corrupt.as_str().into(), at.into()]).unwrap();
        let mut ids: Vec<String> = all.iter().map(|m| m.id.clone()).filter(|id| *id != all[6].id).collect();
        ids.push("00000000000000000000000000000fff".into()); // not stored
        ids.push(all[5].id.clone()); // asked twice, read once
        let mut expected: Vec<(String, String)> =
            p.store().memories_by_ids(&ids).unwrap().iter().filter(|m| wants_vector(m)).map(|m| (m.id.clone(), embedding_text(m))).collect();
        let mut got: Vec<(String, String)> = p.store().embedding_inputs(&ids).unwrap().into_iter().map(|(id, q, c)| (id, embedding_text_of(&q, &c))).collect();
        expected.sort();
        got.sort();
        assert!(expected.len() >= 5 && expected.len() < 35, "a mix: {} of 35 want a vector", expected.len());
        assert!(expected.iter().any(|(_, text)| text.starts_with("query ")), "some with search queries");
        assert_eq!(got, expected);
        assert!(p.store().embedding_inputs(&[]).unwrap().is_empty());
    });
}

/// The message the citation tests' imported memory cites (said by the
/// user in session `s1`), and that memory's id.
const CITED: &str = "Use pnpm, not npm, in every repository.";
const CITING: &str = "00000000000000000000000000000007";

/// The single number `q` selects.
fn count(sql: &support::NativeSql, q: &str) -> i64 {
    agent_memory::core::ports::Sql::query(sql, q, &[]).unwrap()[0][0].as_i64().unwrap()
}

/// A one-memory export whose memory ([`CITING`]) cites [`CITED`], the
/// message itself left out; and the message's id.
fn memory_citing_an_absent_message() -> (String, String) {
    use agent_memory::core::model::{Memory, MemoryType};
    let message_id = agent_memory::core::ids::message_id("s1", "user", CITED);
    let memory = Memory {
        id: CITING.into(),
        kind: MemoryType::Fact,
        key: Some("tooling.package_manager".into()),
        summary: "The team uses pnpm".into(),
        content: "The team uses pnpm.".into(),
        session_id: "s1".into(),
        source_message_ids: vec![message_id.clone()],
        search_queries: vec!["which package manager".into()],
        status: Status::Active,
        supersedes: None,
        superseded_by: None,
        event_date: None,
        created_at: "2026-04-14T10:00:00.000Z".into(),
        updated_at: "2026-04-14T10:00:00.000Z".into(),
        expires_at: None,
        metadata: Default::default(),
        valid_from: None,
        valid_to: None,
    };
    let mut v = serde_json::to_value(&memory).unwrap();
    v["kind"] = json!("memory");
    let header = json!({"kind": "header", "format": "agent-memory-export", "version": 1, "profile": "test/p", "exportedAt": "2026-04-15T10:00:00.000Z"});
    (format!("{header}\n{v}\n"), message_id)
}

#[test]
fn test_a_citation_of_a_message_stored_later_is_found_once_it_is_stored() {
    use agent_memory::core::store::Store;
    let sql = database();
    let count = |q: &str| count(&sql, q);
    let (file, message_id) = memory_citing_an_absent_message();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file).unwrap();
        let store = Store::new(p.sql, APRIL_15);
        // The message is not stored: the citation waits for it, and the
        // reverse lookups still see it.
        assert_eq!((count("SELECT COUNT(*) FROM citations"), count("SELECT COUNT(*) FROM citations_waiting")), (0, 1));
        assert_eq!(store.memories_citing(&[message_id.clone()]).unwrap(), vec![CITING.to_string()]);
        // Storing it moves the citation to its rowid.
        block_on(p.ingest(IngestRequest { messages: vec![msg("user", CITED)], session_id: Some("s1".into()), metadata: Default::default() })).unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM citations_waiting"), 0);
        assert_eq!(
            count(&format!(
                "SELECT COUNT(*) FROM citations c JOIN messages m ON m.rowid = c.message_rowid \
                 WHERE m.id = '{message_id}' AND c.memory_id = '{CITING}'"
            )),
            1
        );
        assert!(store.memories_citing(&[message_id.clone()]).unwrap().contains(&CITING.to_string()));
        assert!(store.cited_messages(&[message_id.clone()]).unwrap().contains(&message_id));
    });
}

#[test]
fn test_a_deleted_message_leaves_its_citations_waiting_not_pointing_at_a_reused_rowid() {
    use agent_memory::core::store::Store;
    let sql = database();
    let count = |q: &str| count(&sql, q);
    let (file, message_id) = memory_citing_an_absent_message();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(IngestRequest { messages: vec![msg("user", CITED)], session_id: Some("s1".into()), metadata: Default::default() })).unwrap();
        p.import(&file).unwrap();
        let store = Store::new(p.sql, APRIL_15);
        let rowid = count(&format!("SELECT rowid FROM messages WHERE id = '{message_id}'"));
        let citing = count(&format!("SELECT COUNT(*) FROM citations WHERE message_rowid = {rowid}"));
        assert!(citing >= 1, "the imported memory cites the stored message");
        // Deleting the message (the highest rowid, so SQLite may hand it
        // out again) moves its citations aside.
        store.delete_messages(&[message_id.clone()]).unwrap();
        assert_eq!(count(&format!("SELECT COUNT(*) FROM citations WHERE message_rowid = {rowid}")), 0);
        assert_eq!(count("SELECT COUNT(*) FROM citations_waiting"), citing);
        // Another message takes the rowid: nothing cites it.
        block_on(p.ingest(IngestRequest {
            messages: vec![msg("user", "Lunch is at noon today.")],
            session_id: Some("s2".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        let other = agent_memory::core::ids::message_id("s2", "user", "Lunch is at noon today.");
        assert_eq!(count(&format!("SELECT rowid FROM messages WHERE id = '{other}'")), rowid, "SQLite reused the rowid");
        assert!(!store.memories_citing(&[other.clone()]).unwrap().contains(&CITING.to_string()));
        // The deleted message's memories are still found by its id.
        assert!(store.memories_citing(&[message_id.clone()]).unwrap().contains(&CITING.to_string()));
    });
}

#[test]
fn test_migration_5_moves_every_source_into_citations_or_waiting() {
    use agent_memory::core::ports::Sql;
    let sql = support::database_at(4);
    // Two stored messages and one that is not; three memories citing them.
    for (id, position) in [("a", 0), ("b", 1)] {
        sql.execute(
            "INSERT INTO messages (id, session_id, role, content, position, created_at) VALUES (?, 's', 'user', 'hi', ?, 'then')",
            &[id.into(), (position as i64).into()],
        )
        .unwrap();
    }
    for (memory, message) in [("m1", "a"), ("m1", "b"), ("m2", "b"), ("m3", "gone")] {
        sql.execute("INSERT INTO memory_sources (memory_id, message_id) VALUES (?, ?)", &[memory.into(), message.into()]).unwrap();
    }
    agent_memory::core::schema::migrate(&sql).unwrap();
    let rows = |q: &str| -> Vec<String> {
        sql.query(q, &[]).unwrap().into_iter().map(|r| format!("{}:{}", r[0].opt_string().unwrap(), r[1].opt_string().unwrap())).collect()
    };
    assert_eq!(rows("SELECT c.memory_id, m.id FROM citations c JOIN messages m ON m.rowid = c.message_rowid ORDER BY 1, 2"), ["m1:a", "m1:b", "m2:b"]);
    assert_eq!(rows("SELECT memory_id, message_id FROM citations_waiting"), ["m3:gone"]);
    assert!(sql.query("SELECT 1 FROM sqlite_master WHERE name = 'memory_sources'", &[]).unwrap().is_empty());
}

#[test]
fn test_the_same_meaning_remembered_again_before_any_drain_is_the_stored_memory() {
    // The profile's directory is kept across calls, as the Durable Object
    // keeps it, and no drain runs between them: the second call must see
    // the first call's memory through it (the fingerprint has no index).
    use agent_memory::core::recall::directory::TurnDirectory;
    let sql = database();
    let turns = TurnDirectory::new();
    let first =
        support::with_profile_in(&sql, APRIL_15, &turns, |p| block_on(p.remember(remember("API rate limit was increased to 10,000 req/s per zone."))).unwrap());
    let again = support::with_profile_in(&sql, APRIL_15 + 1000, &turns, |p| {
        // Spacing and case do not change a meaning.
        block_on(p.remember(remember("API  rate limit was increased to 10,000 REQ/S per zone."))).unwrap()
    });
    assert_eq!(again.id, first.id);
    support::with_profile_in(&sql, APRIL_15 + 2000, &turns, |p| {
        assert_eq!(p.stats().unwrap().memories, 1);
        // Once it is gone, the same meaning is a new memory.
        p.delete(&first.id).unwrap();
        let third = block_on(p.remember(remember("API rate limit was increased to 10,000 req/s per zone."))).unwrap();
        assert_ne!(third.id, first.id);
        assert_eq!(p.stats().unwrap().memories, 1);
    });
}

#[test]
fn test_a_superseded_memory_does_not_absorb_its_meaning_stated_again() {
    // Only an active memory holds a meaning: once superseded, the same
    // content stated again is stored anew (the directory's candidates
    // are checked against the stored status).
    use agent_memory::core::recall::directory::TurnDirectory;
    let sql = database();
    let turns = TurnDirectory::new();
    let keyed = |content: &str| -> RememberRequest { serde_json::from_value(json!({ "content": content, "key": "tooling.package_manager" })).unwrap() };
    let npm = support::with_profile_in(&sql, APRIL_15, &turns, |p| block_on(p.remember(keyed("The team uses npm for packages."))).unwrap());
    let pnpm = support::with_profile_in(&sql, APRIL_15 + 1000, &turns, |p| block_on(p.remember(keyed("The team uses pnpm for packages."))).unwrap());
    support::with_profile_in(&sql, APRIL_15 + 2000, &turns, |p| {
        assert_eq!(p.get(&npm.id).unwrap().memory.status, Status::Superseded);
        let back = block_on(p.remember(keyed("The team uses npm for packages."))).unwrap();
        assert_ne!(back.id, npm.id, "the superseded memory is not returned as the stored meaning");
        assert_eq!(p.get(&pnpm.id).unwrap().memory.status, Status::Superseded);
    });
}

#[test]
fn test_a_list_filtered_by_key_finds_exactly_the_memories_holding_it_before_any_drain() {
    use agent_memory::core::recall::directory::TurnDirectory;
    let sql = database();
    let turns = TurnDirectory::new();
    let keyed = |content: &str, key: &str| -> RememberRequest { serde_json::from_value(json!({ "content": content, "key": key })).unwrap() };
    let at = |i: i64| APRIL_15 + i * 1000;
    let npm =
        support::with_profile_in(&sql, at(0), &turns, |p| block_on(p.remember(keyed("The team uses npm for packages.", "tooling.package_manager"))).unwrap());
    let other = support::with_profile_in(&sql, at(1), &turns, |p| block_on(p.remember(keyed("Deploys go out on Tuesdays.", "process.deploy_day"))).unwrap());
    let pnpm =
        support::with_profile_in(&sql, at(2), &turns, |p| block_on(p.remember(keyed("The team uses pnpm for packages.", "tooling.package_manager"))).unwrap());
    support::with_profile_in(&sql, at(3), &turns, |p| {
        use agent_memory::core::api::ListStatus;
        let ids = |key: &str, status: Option<ListStatus>| -> Vec<String> {
            p.list(ListRequest { key: Some(key.into()), status, ..ListRequest::default() }).unwrap().memories.into_iter().map(|m| m.id).collect()
        };
        assert_eq!(ids("tooling.package_manager", Some(ListStatus::All)), vec![pnpm.id.clone(), npm.id.clone()]);
        assert_eq!(ids("tooling.package_manager", None), vec![pnpm.id.clone()], "active by default");
        assert_eq!(ids("tooling.package_manager", Some(ListStatus::Superseded)), vec![npm.id.clone()]);
        assert_eq!(ids("process.deploy_day", None), vec![other.id.clone()]);
        assert!(ids("tooling", Some(ListStatus::All)).is_empty(), "a key is matched whole");
        assert!(ids("process.nothing_here", Some(ListStatus::All)).is_empty());
    });
}

fn remember_as(p: &agent_memory::core::ops::Profile<'_>, body: serde_json::Value) -> agent_memory::core::model::Memory {
    block_on(p.remember(serde_json::from_value::<RememberRequest>(body).unwrap())).unwrap()
}

/// The same words from another agent or user are another memory (each
/// keeps its own metadata, and a filter finds it); from the same one, the
/// memory already stored, whose expiry becomes the later of the two.
#[test]
fn test_a_statement_remembered_again_is_one_memory_per_owner_and_keeps_the_later_expiry() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let text = "The release train leaves every second Tuesday.";
        let a = remember_as(p, json!({"content": text, "metadata": {"userId": "ana"}}));
        let b = remember_as(p, json!({"content": text, "metadata": {"userId": "ben"}}));
        assert_ne!(a.id, b.id, "another user's statement is its own memory");
        assert_eq!(serde_json::to_value(&b.metadata).unwrap(), json!({"userId": "ben"}));
        let bens = p.list(serde_json::from_value::<ListRequest>(json!({"filter": {"userId": "ben"}})).unwrap()).unwrap().memories;
        assert_eq!(bens.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), [b.id.as_str()]);
        // Again from ana: her memory, now with her expiry.
        let again = remember_as(p, json!({"content": text, "metadata": {"userId": "ana"}, "expiresAt": "2026-05-01T00:00:00Z"}));
        assert_eq!(again.id, a.id);
        assert_eq!(again.expires_at, None, "a memory without expiry holds: the later of never and May is never");
        let temp = remember_as(p, json!({"content": "The office is closed on Friday.", "expiresAt": "2026-04-20T00:00:00Z"}));
        let longer = remember_as(p, json!({"content": "The office is closed on Friday.", "expiresAt": "2026-05-20T00:00:00Z"}));
        assert_eq!((longer.id.as_str(), longer.expires_at.as_deref()), (temp.id.as_str(), Some("2026-05-20T00:00:00.000Z")));
        let shorter = remember_as(p, json!({"content": "The office is closed on Friday.", "ttlSeconds": 60}));
        assert_eq!(shorter.expires_at.as_deref(), Some("2026-05-20T00:00:00.000Z"), "an earlier expiry does not cut it short");
        let forever = remember_as(p, json!({"content": "The office is closed on Friday."}));
        assert_eq!(forever.expires_at, None, "said again without an expiry: it holds");
        // An update of the metadata moves the memory to its new owner.
        p.update(serde_json::from_value(json!({"id": b.id, "metadata": {"userId": "cy"}})).unwrap()).unwrap();
        assert_eq!(remember_as(p, json!({"content": text, "metadata": {"userId": "cy"}})).id, b.id);
        // Ben's statement again, in the same millisecond: a memory of its
        // own (the id its words and time give is taken), with ben's metadata.
        let bens_again = remember_as(p, json!({"content": text, "metadata": {"userId": "ben"}}));
        assert_ne!(bens_again.id, b.id);
        assert_eq!(serde_json::to_value(&bens_again.metadata).unwrap(), json!({"userId": "ben"}));
    });
}

/// A key's value from one user does not replace another user's: each
/// owner (metadata) keeps its own holder of the key.
#[test]
fn test_a_keyed_statement_supersedes_only_its_own_owners_holder() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let city = |content: &str, user: &str| remember_as(p, json!({"content": content, "key": "user.city", "metadata": {"userId": user}}));
        let ana = city("Ana lives in Lisbon.", "ana");
        let ben = city("Ben lives in Porto.", "ben");
        let ana_moved = city("Ana lives in Madrid now.", "ana");
        let status = |id: &str| p.get(id).unwrap().memory.status;
        assert_eq!(status(&ben.id), Status::Active, "another user's value stays");
        assert_eq!(status(&ana.id), Status::Superseded);
        assert_eq!(p.get(&ana.id).unwrap().memory.superseded_by.as_deref(), Some(ana_moved.id.as_str()));
        // Neither version of ana's chain moves to another owner: the chain
        // would join two owners' values (409, nothing changed). Metadata
        // that keeps the owner is taken.
        for id in [&ana.id, &ana_moved.id] {
            let e = p.update(serde_json::from_value(json!({"id": id, "metadata": {"userId": "ben"}})).unwrap()).unwrap_err();
            assert_eq!(e.status(), 409, "{e}");
            assert!(e.message().contains("cannot change"), "{e}");
            assert_eq!(serde_json::to_value(&p.get(id).unwrap().memory.metadata).unwrap(), json!({"userId": "ana"}));
        }
        p.update(serde_json::from_value(json!({"id": ana.id, "metadata": {"userId": "ana", "source": "crm"}})).unwrap()).unwrap();
    });
}

/// The same words said twice in one conversation are two messages: the
/// second "yes" is kept, in its place, and sending the call again stores
/// nothing new; an export of the session imports whole.
#[test]
fn test_a_message_repeated_within_one_ingest_is_kept_and_reingest_stays_idempotent() {
    let call = || IngestRequest {
        messages: vec![msg("user", "yes"), msg("assistant", "Shall I delete the prod database?"), msg("user", "yes")],
        session_id: Some("confirm".into()),
        metadata: Default::default(),
    };
    let sql = database();
    let data = with_profile(&sql, APRIL_15, |p| {
        let r = block_on(p.ingest(call())).unwrap();
        assert_eq!(r.messages_stored, 3);
        assert_eq!(r.message_ids.iter().collect::<std::collections::HashSet<_>>().len(), 3, "{:?}", r.message_ids);
        let again = block_on(p.ingest(call())).unwrap();
        assert_eq!(again.messages_stored, 0);
        assert_eq!(again.message_ids, r.message_ids);
        assert_eq!(p.stats().unwrap().messages, 3);
        let export = block_on(p.dispatch("export", json!({}))).unwrap();
        export.as_str().map(str::to_string).unwrap_or_else(|| export.to_string())
    });
    let copy = database();
    with_profile(&copy, APRIL_15, |p| {
        block_on(p.dispatch("import", json!({ "data": data }))).unwrap();
        assert_eq!(p.stats().unwrap().messages, 3, "the export carries both sayings");
    });
}

/// The same words said again in a later call at another time are a new
/// message, not a re-send: "yes" to a second question is kept, and a
/// preference stated again after it changed is the latest. Sending any of
/// the calls again stores nothing; without timestamps the later words are
/// the stored message, as before; an export imports whole.
#[test]
fn test_words_said_again_in_a_later_call_at_another_time_are_kept_and_resends_stay_idempotent() {
    let at = |role: &str, content: &str, t: &str| MessageInput { role: role.into(), content: content.into(), timestamp: Some(t.into()) };
    let call = |messages: Vec<MessageInput>| IngestRequest { messages, session_id: Some("prefs".into()), metadata: Default::default() };
    let first = || call(vec![at("user", "I prefer tabs for indentation.", "2025-01-01T10:00:00Z"), at("assistant", "Noted.", "2025-01-01T10:00:05Z")]);
    let second =
        || call(vec![at("user", "Actually, I prefer spaces for indentation.", "2025-02-01T10:00:00Z"), at("assistant", "Noted.", "2025-02-01T10:00:05Z")]);
    let third = || {
        call(vec![
            at("user", "I prefer tabs for indentation.", "2025-03-01T10:00:00Z"),
            at("assistant", "Noted.", "2025-03-01T10:00:05Z"),
            at("user", "yes", "2025-03-01T10:01:00Z"),
            at("user", "yes", "2025-03-01T10:02:00Z"),
        ])
    };
    let sql = database();
    let data = with_profile(&sql, APRIL_15, |p| {
        for c in [first(), second(), third()] {
            block_on(p.ingest(c)).unwrap();
        }
        assert_eq!(p.stats().unwrap().messages, 8, "every saying kept");
        for c in [first(), second(), third()] {
            let again = block_on(p.ingest(c)).unwrap();
            assert_eq!(again.messages_stored, 0, "a re-send stores nothing");
        }
        // A window overlapping the third call (its last "yes" again, then
        // new turns) stores only what is new, and sent again nothing.
        let window = || {
            call(vec![
                at("user", "yes", "2025-03-01T10:02:00Z"),
                at("assistant", "Anything else?", "2025-03-01T10:03:00Z"),
                at("user", "yes", "2025-03-01T10:04:00Z"),
            ])
        };
        assert_eq!(block_on(p.ingest(window())).unwrap().messages_stored, 2);
        assert_eq!(block_on(p.ingest(window())).unwrap().messages_stored, 0);
        assert_eq!(block_on(p.ingest(third())).unwrap().messages_stored, 0, "the third call, sent again after the window");
        // The third call's "Noted." and the first's are two messages.
        let ids = block_on(p.ingest(third())).unwrap().message_ids;
        assert_eq!(ids.iter().collect::<std::collections::HashSet<_>>().len(), 4, "{ids:?}");
        assert!(!block_on(p.ingest(first())).unwrap().message_ids.contains(&ids[1]));
        let recalled = block_on(p.recall(serde_json::from_value(json!({ "query": "Does the user prefer tabs or spaces for indentation?" })).unwrap())).unwrap();
        let top = &recalled.candidates[0];
        assert!(top.summary.contains("tabs") && !top.summary.contains("spaces"), "the latest preference first: {:?}", recalled.candidates);
        let export = block_on(p.dispatch("export", json!({}))).unwrap();
        export.as_str().map(str::to_string).unwrap_or_else(|| export.to_string())
    });
    let copy = database();
    with_profile(&copy, APRIL_15, |p| {
        block_on(p.dispatch("import", json!({ "data": data }))).unwrap();
        assert_eq!(p.stats().unwrap().messages, 10, "the export carries every saying");
    });
    // Without timestamps a later call's same words are the stored message.
    let plain = database();
    with_profile(&plain, APRIL_15, |p| {
        let untimed = || call(vec![msg("user", "yes"), msg("assistant", "Done.")]);
        block_on(p.ingest(untimed())).unwrap();
        assert_eq!(block_on(p.ingest(untimed())).unwrap().messages_stored, 0);
        assert_eq!(p.stats().unwrap().messages, 2);
    });
}

/// Memory ids are read in either case: a client that writes ULIDs in
/// capitals, as they usually are, gets the memory rather than a 404.
#[test]
fn test_a_memory_id_in_capitals_finds_the_memory() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let m = block_on(p.remember(remember("The staging database lives in the eu-west region."))).unwrap();
        let upper = m.id.to_ascii_uppercase();
        assert_ne!(upper, m.id);
        let got = block_on(p.dispatch("get", json!({ "id": upper }))).unwrap();
        assert_eq!(got["id"], json!(m.id));
        block_on(p.dispatch("update", json!({ "id": upper, "metadata": { "team": "infra" } }))).unwrap();
        let forgotten = block_on(p.dispatch("forget", json!({ "id": upper }))).unwrap();
        assert_eq!((forgotten["id"].as_str(), forgotten["status"].as_str()), (Some(m.id.as_str()), Some("forgotten")));
        assert_eq!(block_on(p.dispatch("delete", json!({ "id": upper }))).unwrap()["deletedMemories"], json!([m.id]));
    });
}

/// Thirty support calls, each with its agent's own refund reference: the
/// key `project.refund_reference` has thirty live holders.
fn thirty_refund_calls(sql: &support::NativeSql) {
    for i in 0..30 {
        let req = IngestRequest {
            messages: vec![
                msg("user", "I was charged twice."),
                msg("assistant", &format!("The refund reference is RF-{:06}, and it should reach your card within five days.", 100_000 + i)),
            ],
            session_id: Some(format!("call-{i}")),
            metadata: Default::default(),
        };
        with_profile(sql, APRIL_15 + i * 60_000, |p| block_on(p.ingest(req)).unwrap());
    }
}

#[test]
fn test_an_agents_key_holders_are_looked_up_by_session_and_words_not_read_whole() {
    use agent_memory::core::ports::Sql;
    use agent_memory::core::store::{KeyProbe, Store, KEY_HOLDERS_QUERY};
    let sql = database();
    thirty_refund_calls(&sql);
    let store = Store::new(&sql, APRIL_15);
    let key = "project.refund_reference";
    let probe = |session: &'static str, content: &str, any_session| KeyProbe {
        key,
        session_id: session,
        undated_digest: agent_memory::core::ids::undated_digest(content),
        any_session,
    };
    let sessions =
        |probes: &[KeyProbe<'_>]| -> Vec<String> { store.active_key_holders(probes).unwrap().into_values().flatten().map(|h| h.session_id).collect() };
    let new_words = "The refund reference is RF-999999, and it should reach your card within five days.";
    // An agent in a new call, saying something new: none of the thirty.
    assert_eq!(sessions(&[probe("call-new", new_words, false)]), Vec::<String>::new());
    // In call 7: that call's holder only.
    assert_eq!(sessions(&[probe("call-7", new_words, false)]), vec!["call-7".to_string()]);
    // Saying call 12's words again, elsewhere: that holder only.
    let stored = sql.query("SELECT content FROM memories WHERE session_id = 'call-12' AND key IS NOT NULL", &[]).unwrap();
    let again = stored[0][0].opt_string().expect("call 12's statement");
    assert_eq!(sessions(&[probe("call-new", &again, false)]), vec!["call-12".to_string()]);
    // A person reaches every session's.
    assert_eq!(sessions(&[probe("call-new", new_words, true)]).len(), 30);
    // Every part of the statement reads memories through an index.
    let plan = sql.query(&format!("EXPLAIN QUERY PLAN {KEY_HOLDERS_QUERY}"), &[json!([[key, "call-new", "0", false]]).to_string().into()]).unwrap();
    let steps: Vec<String> = plan.iter().filter_map(|r| r.last().and_then(|v| v.opt_string())).collect();
    assert!(steps.iter().any(|s| s.contains("memories_active_by_key_session")), "{steps:#?}");
    assert!(steps.iter().any(|s| s.contains("memories_active_by_key_words")), "{steps:#?}");
    assert!(steps.iter().all(|s| !s.starts_with("SCAN m")), "{steps:#?}");
}

#[test]
fn test_holders_stored_before_the_words_digest_are_still_reached_and_get_theirs() {
    use agent_memory::core::ports::Sql;
    let sql = database();
    let advice = |session: &str| IngestRequest {
        messages: vec![msg("assistant", "Keep notes as you go, since it is surprisingly hard to remember details a few weeks later.")],
        session_id: Some(session.into()),
        metadata: Default::default(),
    };
    let first = with_profile(&sql, APRIL_15, |p| block_on(p.ingest(advice("tea-chat"))).unwrap()).memories[0].clone();
    // As a profile written before schema version 14 holds it.
    sql.execute("UPDATE memories SET undated_digest = NULL", &[]).unwrap();
    let again = with_profile(&sql, APRIL_15 + 7 * support::DAY, |p| block_on(p.ingest(advice("bread-chat"))).unwrap()).memories[0].clone();
    assert_ne!(first.content, again.content, "dated differently");
    assert_eq!(again.supersedes.as_deref(), Some(first.id.as_str()), "the same advice again replaces the copy stored before");
    let digests = sql.query("SELECT id FROM memories WHERE key IS NOT NULL AND undated_digest IS NULL", &[]).unwrap();
    assert!(digests.is_empty(), "the holder read whole has its digest written: {digests:?}");
}

#[test]
fn test_holders_found_by_index_are_exactly_those_a_read_of_every_holder_lets_reach() {
    use agent_memory::core::ingest::supersede::{Reach, Said};
    use agent_memory::core::model::Memory;
    use agent_memory::core::ports::Sql;
    use agent_memory::core::store::{KeyProbe, Store};
    let sql = database();
    let mut rng = support::Rng(7);
    let (keys, sessions, owners) = (["a.x", "a.y", "b.x"], ["", "s1", "s2", "S1"], [None, Some("agent-1"), Some("agent-2")]);
    let words = ["Keep notes on 2026-04-01.", "Keep notes on 2026-05-09.", "keep NOTES on March 2025.", "Ship on Friday.", "ship on friday."];
    let memory = |i: usize, rng: &mut support::Rng| -> Memory {
        let mut m = json!({
            "id": format!("{i:032x}"), "type": "fact", "key": rng.pick(&keys), "summary": "", "content": rng.pick(&words),
            "sessionId": rng.pick(&sessions), "sourceMessageIds": [], "searchQueries": [], "status": "active",
            "createdAt": "2026-04-15T00:00:00.000Z", "updatedAt": "2026-04-15T00:00:00.000Z",
        });
        if let Some(agent) = owners[rng.below(owners.len())] {
            m["metadata"] = json!({ "agentId": agent });
        }
        serde_json::from_value(m).unwrap()
    };
    let stored: Vec<Memory> = (0..120).map(|i| memory(i, &mut rng)).collect();
    let store = Store::new(&sql, APRIL_15);
    store.transaction(|| store.insert_memories(&stored.iter().map(|m| (m, "fp")).collect::<Vec<_>>())).unwrap();
    for round in 0..2 {
        if round == 1 {
            // Half of them as stored before schema version 14.
            sql.execute("UPDATE memories SET undated_digest = NULL WHERE rowid % 2 = 0", &[]).unwrap();
        }
        for i in 0..200 {
            let new = memory(1000 + i, &mut rng);
            let reach = if rng.below(2) == 0 { Reach::AnySession } else { Reach::OwnSession };
            let key = new.key.as_deref().unwrap();
            let said = Said { session: &new.session_id, content: &new.content };
            let reaching = reach.from(said);
            let owner = agent_memory::core::model::Owner::of(&new.metadata);
            // What reading every holder whole lets this statement reach.
            let mut every: Vec<&str> = stored
                .iter()
                .filter(|m| m.key.as_deref() == Some(key) && agent_memory::core::model::Owner::of(&m.metadata) == owner)
                .filter(|m| reaching.reaches(Said { session: &m.session_id, content: &m.content }))
                .map(|m| m.id.as_str())
                .collect();
            every.sort_unstable_by(|a, b| b.cmp(a));
            let probe = KeyProbe {
                key,
                session_id: &new.session_id,
                undated_digest: agent_memory::core::ids::undated_digest(&new.content),
                any_session: reach == Reach::AnySession,
            };
            let found = store.transaction(|| store.active_key_holders(std::slice::from_ref(&probe))).unwrap();
            let reached: Vec<String> = found
                .get(&(key.to_string(), owner))
                .into_iter()
                .flatten()
                .filter(|h| reaching.reaches(Said { session: &h.session_id, content: &h.content }))
                .map(|h| h.id.clone())
                .collect();
            assert_eq!(reached, every, "round {round}, probe {probe:?}");
        }
    }
}

/// A stored value of the wrong type (a blob where the schema keeps text;
/// a number would be turned into text by the columns' affinity) is a storage error when read, never an empty session, an
/// empty list of sources, a memory that never expires or one without its
/// owner.
#[test]
fn test_a_column_of_the_wrong_type_is_a_storage_error_never_a_default() {
    use agent_memory::core::ports::Sql;
    let columns = [
        ("memories", "session_id", "X'00'"),
        ("memories", "summary", "X'00'"),
        ("memories", "created_at", "X'00'"),
        ("memories", "source_message_ids", "X'5b5d'"),
        ("memories", "search_queries", "X'5b5d'"),
        ("memories", "key", "X'6b'"),
        ("memories", "expires_at", "X'00'"),
        ("memories", "metadata", "X'7b7d'"),
        ("messages", "session_id", "X'00'"),
        ("messages", "role", "X'75'"),
        ("messages", "content", "X'00'"),
        ("messages", "timestamp", "X'00'"),
        ("messages", "metadata", "X'7b7d'"),
    ];
    for (table, column, value) in columns {
        let sql = database();
        let id = with_profile(&sql, APRIL_15, |p| {
            block_on(p.ingest(IngestRequest {
                messages: vec![msg("user", "I moved to Lisbon last spring.")],
                session_id: Some("s1".into()),
                metadata: Default::default(),
            }))
            .unwrap();
            block_on(p.remember(remember("The staging cluster runs in Oslo."))).unwrap().id
        });
        sql.execute(&format!("UPDATE {table} SET {column} = {value}"), &[]).unwrap();
        with_profile(&sql, APRIL_15, |p| {
            let store = p.store();
            let read = match table {
                "memories" => store.get_memory(&id).map(|m| format!("{m:?}")),
                _ => store.all_messages().map(|m| format!("{m:?}")),
            };
            match read {
                Err(e) => assert!(e.is_storage(), "{table}.{column} = {value}: {e}"),
                Ok(read) => panic!("{table}.{column} = {value} was read as {read}"),
            }
        });
    }
}

#[test]
fn test_json_parameters_are_made_one_at_a_time_and_a_row_that_does_not_serialize_is_an_error() {
    use agent_memory::core::ports::SqlValue;
    use agent_memory::core::store::{json_chunks, json_chunks_of, MAX_JSON_PARAM};
    // 3 MB of rows: several parameters, each under the cap, every row in
    // exactly one, in order.
    let rows: Vec<String> = (0..3000).map(|i| format!("{i:04}{}", "x".repeat(1000))).collect();
    let chunks = json_chunks(&rows).unwrap();
    assert!(chunks.len() >= 6, "{} parameters", chunks.len());
    let mut back = Vec::new();
    for c in &chunks {
        let SqlValue::Text(t) = c else { panic!("not text") };
        assert!(t.len() <= MAX_JSON_PARAM);
        back.extend(serde_json::from_str::<Vec<String>>(t).unwrap());
    }
    assert_eq!(back, rows);
    // Made as they are taken: the second is not written before it is asked for.
    let made = std::cell::Cell::new(0);
    let mut lazy = json_chunks_of(rows.iter().map(|r| {
        made.set(made.get() + 1);
        Ok(r)
    }));
    lazy.next().unwrap().unwrap();
    assert!(made.get() < 600, "{} rows written for the first parameter", made.get());
    // A map with keys JSON cannot hold fails the write, never writes "null".
    let bad: Vec<std::collections::HashMap<(i32, i32), i32>> = vec![[((1, 2), 3)].into_iter().collect()];
    assert!(json_chunks(&bad).unwrap_err().is_storage());
}

const DEBIAN: &str = "The build server runs on Debian twelve.";

/// [`DEBIAN`] said in each session, at its timestamp if given.
fn say_debian_in(p: &agent_memory::core::ops::Profile<'_>, sessions: &[(&str, Option<&str>)]) {
    for (s, at) in sessions {
        let messages = vec![MessageInput { role: "user".into(), content: DEBIAN.into(), timestamp: at.map(str::to_string) }];
        block_on(p.ingest(IngestRequest { messages, session_id: Some((*s).into()), metadata: Default::default() })).unwrap();
    }
}

/// The memories saying [`DEBIAN`], as `list` gives them.
fn debian(p: &agent_memory::core::ops::Profile<'_>) -> Vec<agent_memory::core::model::Memory> {
    p.list(ListRequest::default()).unwrap().memories.into_iter().filter(|m| m.content.contains("Debian")).collect()
}

/// A statement said again word for word in another session is stored once,
/// citing where it was first said; the later session's words are recorded
/// as a restatement. Deleting the first session leaves the memory, now
/// citing the restatement's message and in its session (nothing of the
/// deleted messages stays); deleting that one too removes it.
#[test]
fn test_a_memory_said_again_in_another_session_outlives_the_deletion_of_the_first() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        say_debian_in(p, &[("a", None), ("b", None)]);
        let before = debian(p);
        assert_eq!(before.len(), 1, "said twice, stored once");
        assert_eq!(before[0].session_id, "a");
        let b_message = p.store().session_messages("b").unwrap().remove(0).id;
        p.delete_session("a").unwrap();
        let after = debian(p);
        assert_eq!(after.len(), 1, "the memory outlives the first session: session b says it too");
        assert_eq!(after[0].id, before[0].id);
        assert_eq!(after[0].status, Status::Active);
        assert_eq!(after[0].session_id, "b");
        assert_eq!(after[0].source_message_ids, vec![b_message.clone()]);
        let cited: Vec<String> = p.store().memories_citing(&[b_message]).unwrap();
        assert_eq!(cited, vec![after[0].id.clone()], "its citation is b's message");
        let found = block_on(p.recall(serde_json::from_value(json!({ "query": "Which OS does the build server run?" })).unwrap())).unwrap();
        assert!(found.candidates.iter().any(|m| m.id == after[0].id), "recall still finds it");
        p.delete_session("b").unwrap();
        assert!(debian(p).is_empty(), "with the last session that says it, it goes");
        assert_eq!(p.sql.query("SELECT COUNT(*) FROM restatements", &[]).unwrap()[0][0].as_i64(), Some(0));
    });
}

/// Said in three sessions, a memory stays while any session that said it
/// remains, whatever order the sessions are deleted in: it moves to one
/// remaining message at a time, and the others stay restatements of it.
#[test]
fn test_a_memory_said_in_three_sessions_stays_until_the_last_of_them_is_deleted_in_any_order() {
    for order in [["a", "b", "c"], ["a", "c", "b"], ["b", "a", "c"], ["b", "c", "a"], ["c", "a", "b"], ["c", "b", "a"]] {
        let sql = database();
        with_profile(&sql, APRIL_15, |p| {
            say_debian_in(p, &[("a", None), ("b", None), ("c", None)]);
            let id = debian(p).remove(0).id;
            for (i, gone) in order.iter().enumerate() {
                p.delete_session(gone).unwrap();
                let left: Vec<&str> = order.get(i + 1..).unwrap().to_vec();
                let now = debian(p);
                if left.is_empty() {
                    assert!(now.is_empty(), "{order:?}: with the last session that says it, it goes");
                    continue;
                }
                assert_eq!(now.len(), 1, "{order:?}: after deleting {gone}, {left:?} still say it");
                assert_eq!(now[0].id, id);
                assert!(left.contains(&now[0].session_id.as_str()), "{order:?}: in a remaining session, not {}", now[0].session_id);
                assert_eq!(now[0].source_message_ids.len(), 1, "{order:?}: one message is its source");
            }
            assert_eq!(p.sql.query("SELECT COUNT(*) FROM restatements", &[]).unwrap()[0][0].as_i64(), Some(0));
        });
    }
}

/// A memory whose source is deleted moves to the remaining message that
/// said it first, not to the first stored (a backdated session stored
/// later).
#[test]
fn test_a_moved_memory_goes_to_the_remaining_message_said_first() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        say_debian_in(p, &[("a", Some("2026-03-01T09:00:00.000Z")), ("b", Some("2026-04-10T09:00:00.000Z")), ("c", Some("2026-04-02T09:00:00.000Z"))]);
        let id = debian(p).remove(0).id;
        p.delete_session("a").unwrap();
        let moved = p.get(&id).unwrap().memory;
        assert_eq!((moved.session_id.as_str(), moved.valid_from.as_deref()), ("c", Some("2026-04-02T09:00:00.000Z")));
    });
}

/// A moved memory keeps the day its words name ("on April 2, 2026"),
/// however it names it; one whose words name none takes the day its new
/// message was said.
#[test]
fn test_a_moved_memory_keeps_the_day_its_words_name() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for (content, named) in [("I deployed the billing service to production on April 2, 2026.", Some("2026-04-02")), (DEBIAN, None)] {
            for (s, at) in [("a", "2026-04-03T09:00:00.000Z"), ("b", "2026-04-10T09:00:00.000Z")] {
                let messages = vec![MessageInput { role: "user".into(), content: content.into(), timestamp: Some(at.into()) }];
                let session = format!("{s}-{}", named.unwrap_or("none"));
                block_on(p.ingest(IngestRequest { messages, session_id: Some(session), metadata: Default::default() })).unwrap();
            }
            let memory = p.list(ListRequest::default()).unwrap().memories.into_iter().find(|m| m.content.contains(&content[..12])).unwrap();
            p.delete_session(&format!("a-{}", named.unwrap_or("none"))).unwrap();
            let moved = p.get(&memory.id).unwrap().memory;
            assert_eq!(moved.session_id, format!("b-{}", named.unwrap_or("none")));
            assert_eq!(memory.event_date.as_deref(), Some(named.unwrap_or("2026-04-03")), "{content}");
            assert_eq!(moved.event_date.as_deref(), Some(named.unwrap_or("2026-04-10")), "{content}");
        }
    });
}

/// Deleting a memory by id deletes it however many sessions said it: the
/// caller asked for that memory to go.
#[test]
fn test_deleting_a_restated_memory_by_id_removes_it() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        say_debian_in(p, &[("a", None), ("b", None)]);
        let id = debian(p).remove(0).id;
        block_on(p.dispatch("delete", json!({ "id": id }))).unwrap();
        assert!(debian(p).is_empty());
        assert_eq!(p.store().session_messages("b").unwrap().len(), 1, "b's message is no source of it: it stays");
        assert_eq!(p.sql.query("SELECT COUNT(*) FROM restatements", &[]).unwrap()[0][0].as_i64(), Some(0));
    });
}

/// A memory moved to the message that said it again takes that message's
/// time: valid from when it was said there, and its event date (its words
/// name none) that day, not the deleted message's.
#[test]
fn test_a_moved_memory_is_dated_by_the_message_it_moved_to() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        say_debian_in(p, &[("a", Some("2026-03-01T09:00:00.000Z")), ("b", Some("2026-04-02T09:00:00.000Z"))]);
        let id = debian(p).remove(0).id;
        let before = p.get(&id).unwrap().memory;
        assert_eq!((before.event_date.as_deref(), before.valid_from.as_deref()), (Some("2026-03-01"), Some("2026-03-01T09:00:00.000Z")));
        p.delete_session("a").unwrap();
        let after = p.get(&id).unwrap().memory;
        assert_eq!((after.event_date.as_deref(), after.valid_from.as_deref()), (Some("2026-04-02"), Some("2026-04-02T09:00:00.000Z")));
    });
}

/// Statements about numbered things ("project number 3") are one topic a
/// thing: five projects' versions stay five memories, and a project's new
/// version supersedes its old one only.
#[test]
fn test_numbered_things_keep_a_topic_each_and_a_new_value_supersedes_only_its_own() {
    let sql = database();
    for i in 1..=5 {
        with_profile(&sql, APRIL_15 + i, |p| block_on(p.remember(remember(&format!("Project number {i} uses Rust version 1.7{i}."))))).unwrap();
    }
    with_profile(&sql, APRIL_15 + 100, |p| {
        assert_eq!(p.list(ListRequest::default()).unwrap().memories.len(), 5, "five projects, five memories");
        block_on(p.remember(remember("Project number 3 uses Rust version 1.80."))).unwrap();
        let active: Vec<String> = p.list(ListRequest::default()).unwrap().memories.into_iter().map(|m| m.summary).collect();
        assert_eq!(active.len(), 5, "{active:?}");
        assert!(active.iter().any(|s| s.contains("1.80")) && !active.iter().any(|s| s.contains("1.73")), "{active:?}");
    });
}

/// A number after a naming word later in a statement is its value: the
/// meeting's new room supersedes the old one.
#[test]
fn test_a_new_room_for_the_meeting_supersedes_the_old_room() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| block_on(p.remember(remember("The meeting is in room 12.")))).unwrap();
    with_profile(&sql, APRIL_15 + 1_000, |p| {
        block_on(p.remember(remember("The meeting is in room 14."))).unwrap();
        let active: Vec<String> = p.list(ListRequest::default()).unwrap().memories.into_iter().map(|m| m.summary).collect();
        assert_eq!(active.len(), 1, "{active:?}");
        assert!(active[0].contains("14"), "{active:?}");
    });
}

/// A message that said again what a memory says keeps, once the memory is
/// deleted by id, its fingerprint and no text: a retry of its session
/// reads the message as having given that statement, and the row goes
/// with the message.
#[test]
fn test_a_deleted_memorys_restating_message_keeps_its_fingerprint_not_its_text() {
    use agent_memory::core::store::Store;
    let sql = database();
    let count = |q: &str| count(&sql, q);
    let said = |session: &str| IngestRequest {
        messages: vec![msg("user", "My favourite editor is Helix.")],
        session_id: Some(session.into()),
        metadata: Default::default(),
    };
    with_profile(&sql, APRIL_15, |p| {
        let first = block_on(p.ingest(said("s1"))).unwrap();
        block_on(p.ingest(said("s2"))).unwrap();
        let store = Store::new(p.sql, APRIL_15);
        let again: Vec<String> = store.session_messages("s2").unwrap().into_iter().map(|m| m.id).collect();
        assert_eq!(count("SELECT COUNT(*) FROM restatements"), 1);
        let before = store.given_by(&again).unwrap();
        let fingerprint = before.get(&again[0]).and_then(|g| g.first()).map(|g| g.0.clone()).unwrap();
        p.delete(&first.memories[0].id).unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM memories"), 0);
        assert_eq!(store.given_by(&again).unwrap().get(&again[0]), Some(&vec![(fingerprint, None)]), "the fingerprint alone");
        assert!(store.cited_messages(&again).unwrap().contains(&again[0]), "the message counts as having given it");
        p.delete_session("s2").unwrap();
        assert_eq!(count("SELECT COUNT(*) FROM withheld"), 0, "the row went with its message");
    });
}

/// `get` answers a bounded part of a long version chain: the 100 versions
/// nearest the memory beside it, within 1 MiB of their texts, and says
/// so; `get` of the farthest one given reads on from there.
#[test]
fn test_get_of_a_long_version_chain_answers_the_nearest_versions_and_says_more() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let mut ids = Vec::new();
        for n in 0..130 {
            let req: RememberRequest =
                serde_json::from_value(json!({ "content": format!("The runbook's revision is number {n}."), "key": "ops.runbook" })).unwrap();
            ids.push(block_on(p.remember(req)).unwrap().id);
        }
        let last = p.get(ids.last().unwrap()).unwrap();
        assert!(last.more_versions);
        assert_eq!(last.versions.len(), 101, "the memory and the 100 before it");
        assert_eq!(last.versions.iter().map(|v| v.id.clone()).collect::<Vec<_>>(), ids[29..].to_vec(), "the nearest, oldest first");
        let on = p.get(&ids[29]).unwrap();
        assert!(on.versions.iter().any(|v| v.id == ids[0]), "from the farthest given, the rest of the chain");
        let first = p.get(&ids[0]).unwrap();
        assert!(first.more_versions && first.versions.first().map(|v| &v.id) == Some(&ids[0]));
        let other: RememberRequest = serde_json::from_value(json!({ "content": "The deploy window is on Fridays.", "key": "ops.window" })).unwrap();
        let whole = p.get(&block_on(p.remember(other)).unwrap().id).unwrap();
        assert!(!whole.more_versions && whole.versions.len() == 1 && !whole.more_source_messages);
    });
}

/// A memory's source messages come within 1 MiB of their texts, and the
/// answer says some were left out.
#[test]
fn test_get_of_a_memory_citing_many_long_messages_answers_a_bounded_part_of_them() {
    let sql = database();
    let big = |i: usize| format!("Message {i}: {}", "lorem ipsum dolor sit amet ".repeat(1_200));
    let messages: Vec<serde_json::Value> = (0..40)
        .map(|i| {
            let id = agent_memory::core::ids::message_id("s1", "user", &big(i));
            json!({ "kind": "message", "id": id, "sessionId": "s1", "role": "user", "content": big(i), "position": i, "createdAt": "2026-04-01T00:00:00.000Z" })
        })
        .collect();
    let sources: Vec<serde_json::Value> = messages.iter().map(|m| m["id"].clone()).collect();
    let memory = json!({
        "kind": "memory", "id": format!("{:032x}", 7), "type": "fact", "summary": "Forty long notes.", "content": "Forty long notes.", "sessionId": "s1",
        "sourceMessageIds": sources, "searchQueries": [], "status": "active", "createdAt": "2026-04-01T00:00:00.000Z", "updatedAt": "2026-04-01T00:00:00.000Z"
    });
    let header = json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "profile": "ns/p" });
    let file: String = std::iter::once(header).chain(messages).chain([memory]).map(|l| format!("{l}\n")).collect();
    with_profile(&sql, APRIL_15, |p| {
        p.import(&file).unwrap();
        let d = p.get(&format!("{:032x}", 7)).unwrap();
        assert!(d.more_source_messages);
        let bytes: usize = d.source_messages.iter().map(|m| m.content.len()).sum();
        assert!(!d.source_messages.is_empty() && bytes <= 1 << 20, "{} messages, {bytes} bytes", d.source_messages.len());
        assert_eq!(d.source_messages[0].position, 0, "in the conversation's order");
        assert!(!d.more_versions);
    });
}

/// A remember whose expiry is not later than now is refused and changes
/// nothing: stored already expired, it still superseded the key's
/// current value, and the key was left with no active value.
#[test]
fn test_a_remember_already_expired_is_refused_and_the_keys_value_stays() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let current =
            block_on(p.remember(serde_json::from_value(json!({ "content": "The user's package manager is pnpm.", "key": "user.package_manager" })).unwrap()))
                .unwrap();
        for late in [json!({ "expiresAt": "2001-01-01T00:00:00Z" }), json!({ "ttlSeconds": 0 })] {
            let mut req = json!({ "content": "The user's package manager is yarn.", "key": "user.package_manager" });
            req.as_object_mut().unwrap().extend(late.as_object().unwrap().clone());
            let e = block_on(p.remember(serde_json::from_value(req).unwrap())).unwrap_err();
            assert_eq!(e.status(), 400, "{e}");
        }
        assert_eq!(p.get(&current.id).unwrap().memory.status, Status::Active);
        assert_eq!(p.stats().unwrap().memories, 1);
    });
}

#[test]
fn test_migration_20_keys_the_members_of_folds_made_before_it() {
    use agent_memory::core::ports::Sql;
    let sql = support::database_at(19);
    fold_without_member_keys(&sql, 7, "");
    agent_memory::core::schema::migrate(&sql).unwrap();
    let keys = sql.query("SELECT memory_id, key FROM consolidation_members ORDER BY memory_id", &[]).unwrap();
    let keys: Vec<(String, Option<String>)> = keys.into_iter().map(|r| (r[0].opt_string().unwrap(), r[1].opt_string())).collect();
    assert_eq!(keys, [("f".to_string(), None), ("m1".to_string(), Some("user.favorite_color".to_string())), ("m2".to_string(), None)]);
    // Ingest finds the fold by the key.
    let store = agent_memory::core::store::Store::new(&sql, APRIL_15);
    let held = store.folds_holding(&["user.favorite_color"]).unwrap();
    assert_eq!(held.iter().map(|f| (f.fold, f.key.as_str())).collect::<Vec<_>>(), [(7, "user.favorite_color")]);
}

/// Version 25 reads word boundaries in `dates::undated` as ASCII does: the
/// stored digests of texts beyond printable ASCII are cleared, to be read
/// again where next needed; the others stay.
#[test]
fn test_migration_25_clears_the_undated_digests_of_texts_beyond_ascii() {
    use agent_memory::core::ports::Sql;
    let sql = support::database_at(24);
    for (id, content) in [("ascii", "User: I moved on 2026-04-15."), ("accented", "User: Je suis né 2026-04-15."), ("tabbed", "User:\tI moved.")] {
        sql.execute(
            "INSERT INTO memories (id, type, key, summary, content, session_id, source_message_ids, search_queries, status, fingerprint, created_at, updated_at, undated_digest) \
             VALUES (?1, 'fact', 'user.home', ?2, ?2, 's', '[]', '[]', 'active', ?1, 'then', 'then', 'stale')",
            &[id.into(), content.into()],
        )
        .unwrap();
    }
    agent_memory::core::schema::migrate(&sql).unwrap();
    let rows = sql.query("SELECT id, undated_digest FROM memories ORDER BY id", &[]).unwrap();
    let digests: Vec<(String, Option<String>)> = rows.into_iter().map(|r| (r[0].opt_string().unwrap(), r[1].opt_string())).collect();
    assert_eq!(digests, [("accented".to_string(), None), ("ascii".to_string(), Some("stale".to_string())), ("tabbed".to_string(), None)]);
}

/// A fold as a build before schema 20 records one (consolidation `id`):
/// two statements of one message, one keyed, folded into `f`, its
/// members indexed without their keys. `prefix` names the memories.
fn fold_without_member_keys(sql: &dyn agent_memory::core::ports::Sql, id: i64, prefix: &str) {
    use agent_memory::core::ports::SqlValue;
    let name = |n: &str| format!("{prefix}{n}");
    for (n, key, status, by) in
        [("m1", Some("user.favorite_color"), "superseded", Some("f")), ("m2", None, "superseded", Some("f")), ("f", None, "active", None)]
    {
        sql.execute(
            "INSERT INTO memories (id, type, key, summary, content, session_id, source_message_ids, search_queries, status, superseded_by, fingerprint, created_at, updated_at) \
             VALUES (?1, 'fact', ?2, ?1, ?1, 's', '[]', '[]', ?3, ?4, ?1, 'then', 'then')",
            &[name(n).into(), key.map_or(SqlValue::Null, Into::into), status.into(), by.map(name).map_or(SqlValue::Null, Into::into)],
        )
        .unwrap();
    }
    let members = serde_json::to_string(&[name("m1"), name("m2")]).unwrap();
    let created = serde_json::to_string(&[name("f")]).unwrap();
    sql.execute(
        "INSERT INTO consolidations (id, run_id, action, target, members, created, reason, before, at) VALUES (?1, 'r', 'fold', ?2, ?3, ?4, 'old', '[]', 'then')",
        &[SqlValue::Integer(id), name("f").into(), members.into(), created.into()],
    )
    .unwrap();
    for n in ["m1", "m2", "f"] {
        sql.execute("INSERT INTO consolidation_members (memory_id, consolidation_id) VALUES (?, ?)", &[name(n).into(), SqlValue::Integer(id)]).unwrap();
    }
}

/// A fold a build before schema 20 made after this one had run (a
/// rollback, then this build again): its members are keyed when this
/// build starts again, as version 20 keyed those before it, and ingest
/// finds it by the key. The folds this build has looked at already are
/// not read again.
#[test]
fn test_a_fold_an_older_build_made_after_a_rollback_is_keyed_at_the_next_start() {
    use agent_memory::core::ports::Sql;
    let sql = database();
    fold_without_member_keys(&sql, 7, "a-");
    agent_memory::core::schema::migrate(&sql).unwrap();
    let keyed = |fold: i64| {
        let rows = sql.query("SELECT key FROM consolidation_members WHERE consolidation_id = ? AND key IS NOT NULL", &[fold.into()]).unwrap();
        rows.into_iter().map(|r| r[0].opt_string().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(keyed(7), ["user.favorite_color"]);
    fold_without_member_keys(&sql, 8, "b-");
    agent_memory::core::schema::migrate(&sql).unwrap();
    assert_eq!(keyed(8), ["user.favorite_color"]);
    let store = agent_memory::core::store::Store::new(&sql, APRIL_15);
    let held = store.folds_holding(&["user.favorite_color"]).unwrap();
    let mut folds: Vec<i64> = held.iter().map(|f| f.fold).collect();
    folds.sort();
    assert_eq!(folds, [7, 8]);
    // Folds up to the last one looked at are not read again.
    sql.execute("UPDATE consolidation_members SET key = NULL WHERE consolidation_id = 7", &[]).unwrap();
    let statements = support::Recorded::new(&sql, |s| s.contains("consolidation_members"));
    agent_memory::core::schema::migrate(&statements).unwrap();
    assert!(statements.seen.borrow().is_empty(), "{:?}", statements.seen.borrow());
}

/// A deletion reads and clears the version links around what it deletes
/// through indexes: none of its statements on memories scans the table
/// (it scanned every memory three times a deletion).
#[test]
fn test_a_deletion_closes_the_version_chain_without_scanning_every_memory() {
    let sql = database();
    let said = |p: &agent_memory::core::ops::Profile<'_>, text: &str| {
        let messages = vec![msg("user", text)];
        block_on(p.ingest(IngestRequest { messages, session_id: Some("s1".into()), metadata: Default::default() })).unwrap()
    };
    with_profile(&sql, APRIL_15, |p| said(p, "My favorite color is blue."));
    let newer = with_profile(&sql, APRIL_15 + 1000, |p| said(p, "My favorite color is green now."));
    assert_eq!(newer.memories_superseded, 1);
    let recorded = support::Recorded::new(&sql, |s| s.contains("memories"));
    with_profile(&recorded, APRIL_15 + 2000, |p| p.delete(&newer.memories[0].id).unwrap());
    let seen = recorded.seen.borrow().clone();
    assert!(seen.iter().any(|(s, _)| s.contains("superseded_by IN")), "{seen:?}");
    for (statement, params) in seen {
        let scans = support::table_scans(&sql, &statement, &params);
        assert!(scans.iter().all(|s| s.contains("COVERING INDEX")), "{statement}: {scans:?}");
    }
    // The older version is active again.
    with_profile(&sql, APRIL_15 + 3000, |p| assert!(p.list(ListRequest::default()).unwrap().memories.iter().any(|m| m.content.contains("blue"))));
}

#[test]
fn test_a_paged_read_gives_a_row_longer_than_a_page_a_page_of_its_own() {
    // Forty rows of 100 KB around one of 1.9 MB: 5.9 MB as one text, over
    // the 2 MB cap on a value, so the read goes again in pages. Paged by
    // the running length alone, the long row shared its page with the
    // two rows after it (2.1 MB); the native stand-in fails the test at
    // any result value over 2 MB outside the one-text read.
    let sql = database();
    let rows: Vec<(i64, String)> = agent_memory::core::store::json_rows_paged(
        &sql,
        "SELECT json_array(i, hex(zeroblob(CASE WHEN i = 20 THEN 950000 ELSE 50000 END))) AS r \
         FROM (WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 40) SELECT i FROM n)",
        &[],
    )
    .unwrap();
    let mut got: Vec<(i64, usize)> = rows.iter().map(|(i, text)| (*i, text.len())).collect();
    got.sort();
    let want: Vec<(i64, usize)> = (0..=40).map(|i| (i, if i == 20 { 1_900_000 } else { 100_000 })).collect();
    assert_eq!(got, want, "every row once, whole");
}

#[test]
fn test_a_session_position_that_does_not_read_is_a_storage_error_not_the_callers() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let first =
            IngestRequest { session_id: Some("s".into()), messages: vec![msg("user", "The deploy key rotates monthly.")], metadata: Default::default() };
        block_on(p.ingest(first)).unwrap();
        agent_memory::core::ports::Sql::execute(&sql, "UPDATE messages SET position = 'x' WHERE session_id = 's'", &[]).unwrap();
        let next = IngestRequest { session_id: Some("s".into()), messages: vec![msg("user", "The staging key rotates weekly.")], metadata: Default::default() };
        let err = block_on(p.ingest(next)).unwrap_err();
        assert!(err.is_storage(), "{err:?}");
        assert_eq!(err.status(), 500);
    });
}
