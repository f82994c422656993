//! Metadata, filters and point-in-time recall, natively.
//!
//! The property test fills a profile with a few thousand memories carrying
//! random metadata (imported, with no source messages) and runs hundreds
//! of random filters through `list` and `recall`:
//! * no result violates its filter, and `list` returns every memory that
//!   passes (SQL and `Filter::matches` agree);
//! * recall's hits equal, in order, those of the same query on a profile
//!   holding only the passing memories.
//!
//! For the second to be exact rather than approximate, the data keeps
//! what depends on the whole profile out of the comparison: every
//! memory's text has the same number of words and a query is one word, so
//! a memory's bm25 order does not depend on the profile's average length
//! or the word's rarity; vectors are ranked by the same shortlist over the
//! passing memories as over a profile holding them alone
//! (`Packed::shortlist_passing`). A filter applied after ranking (a filtered-out
//! memory taking a slot), one ignored by a channel, or a channel over-
//! or under-fetching fails it.

#[path = "support/mod.rs"]
mod support;

use agent_memory::core::api::{ListRequest, RecallOptions, RecallRequest, RememberRequest};
use agent_memory::core::filter::Filter;
use agent_memory::core::local::vector::{CachedVectorIndex, Packed, SqlVectorIndex};
use agent_memory::core::model::{Memory, MemoryType, Status};
use agent_memory::core::ops::Profile;
use agent_memory::core::recall::directory::TurnDirectory;
use agent_memory::core::recall::{Narrowing, RecallScope};
use serde_json::{json, Value};
use std::cell::RefCell;
use support::{block_on, database, msg, NativeSql, APRIL_15, DAY};

/// A native profile with the resident state the Durable Object keeps: the
/// turn directory and the vector index's codes.
struct Held {
    sql: NativeSql,
    turns: TurnDirectory,
    packed: RefCell<Packed>,
}

impl Held {
    fn new() -> Held {
        Held { sql: database(), turns: Default::default(), packed: Default::default() }
    }

    fn with<T>(&self, now: i64, f: impl FnOnce(&Profile<'_>) -> T) -> T {
        self.with_turns(now, Some(&self.turns), f)
    }

    /// [`Held::with`], with the turn directory or (`None`) on SQLite alone.
    fn with_turns<T>(&self, now: i64, turns: Option<&TurnDirectory>, f: impl FnOnce(&Profile<'_>) -> T) -> T {
        let index = CachedVectorIndex { sql: &self.sql, packed: &self.packed };
        self.with_state(now, turns, &index, f)
    }

    /// [`Held::with`] with nothing resident, as a cold profile answers:
    /// SQLite alone, the vector codes streamed from it for each query.
    fn with_nothing<T>(&self, now: i64, f: impl FnOnce(&Profile<'_>) -> T) -> T {
        self.with_state(now, None, &SqlVectorIndex { sql: &self.sql }, f)
    }

    fn with_state<T>(
        &self,
        now: i64,
        turns: Option<&TurnDirectory>,
        index: &dyn agent_memory::core::ports::VectorIndex,
        f: impl FnOnce(&Profile<'_>) -> T,
    ) -> T {
        let p = Profile {
            name: "test/p",
            sql: &self.sql,
            reasoner: &agent_memory::core::rules::Rules,
            embedder: &agent_memory::core::local::embed::HashEmbedder,
            index,
            turns,
            now,
            limits: agent_memory::core::ops::Limits::default(),
            memory: Default::default(),
            room: &agent_memory::core::ports::Unshared,
        };
        f(&p)
    }

    fn import(&self, ndjson: &str) {
        self.with(APRIL_15, |p| {
            p.import(ndjson).expect("import");
            // A drain has a budget: until every embedding is written.
            while block_on(p.drain()).expect("drain").embedded > 0 {}
        });
    }
}

/// xorshift64*, seeded: the same data and filters on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < p
    }
}

const AGENTS: [&str; 4] = ["reviewer", "coder", "chat", "planner"];
const USERS: [&str; 3] = ["ana", "bo", "cy"];
const TEAMS: [&str; 3] = ["core", "web", "ops"];
const SESSIONS: [&str; 5] = ["s1", "s2", "s3", "s4", "s5"];
/// Words a memory's text is made of; queries are one of them.
const WORDS: [&str; 24] = [
    "fox", "heron", "badger", "otter", "lynx", "raven", "maple", "cedar", "birch", "willow", "harbor", "canyon", "meadow", "glacier", "copper", "silver",
    "amber", "cobalt", "lantern", "compass", "anchor", "quill", "ember", "tide",
];

/// The metadata of memory `i`: each key present or not.
fn random_metadata(r: &mut Rng) -> Value {
    let mut m = serde_json::Map::new();
    if r.chance(0.8) {
        m.insert("agentId".into(), json!(r.pick(&AGENTS)));
    }
    if r.chance(0.6) {
        m.insert("userId".into(), json!(r.pick(&USERS)));
    }
    if r.chance(0.7) {
        m.insert("priority".into(), json!(r.below(5)));
    }
    if r.chance(0.5) {
        m.insert("score".into(), json!(r.below(100) as f64 / 10.0));
    }
    if r.chance(0.5) {
        m.insert("draft".into(), json!(r.chance(0.5)));
    }
    if r.chance(0.6) {
        m.insert("team".into(), json!(r.pick(&TEAMS)));
    }
    Value::Object(m)
}

/// Seven words, each at most twice, from [`WORDS`]: every text has the
/// same length (see the module docs), none repeats another.
fn random_text(r: &mut Rng, i: usize) -> String {
    let mut words: Vec<&str> = (0..6).map(|_| *r.pick(&WORDS)).collect();
    words.sort_unstable();
    let mut kept: Vec<&str> = Vec::new();
    for w in words {
        if kept.iter().filter(|k| **k == w).count() < 2 {
            kept.push(w);
        }
    }
    while kept.len() < 6 {
        kept.push("plain");
    }
    format!("{} item{i}", kept.join(" "))
}

/// Export lines of `n` random memories, oldest first.
fn random_memories(r: &mut Rng, n: usize) -> Vec<(Memory, String)> {
    (0..n)
        .map(|i| {
            let created = APRIL_15 - 60 * DAY + (i as i64) * (60 * DAY / n as i64);
            let content = random_text(r, i);
            let kind = *r.pick(&[MemoryType::Fact, MemoryType::Event, MemoryType::Instruction]);
            let mut line = json!({
                "kind": "memory",
                "id": agent_memory::core::ids::memory_id(created, &agent_memory::core::ids::fingerprint(kind.as_str(), &content, &Default::default()), i as u64),
                "type": kind,
                "summary": content,
                "content": content,
                "sessionId": r.pick(&SESSIONS),
                "sourceMessageIds": [],
                "searchQueries": [],
                "status": "active",
                "createdAt": agent_memory::core::time::iso(created),
                "updatedAt": agent_memory::core::time::iso(created),
            });
            let meta = random_metadata(r);
            if meta.as_object().is_some_and(|m| !m.is_empty()) {
                line["metadata"] = meta;
            }
            let memory: Memory = serde_json::from_value(line.clone()).expect("a memory");
            (memory, line.to_string())
        })
        .collect()
}

fn export_of<'a>(lines: impl Iterator<Item = &'a String>) -> String {
    let mut out = json!({"kind": "header", "format": "agent-memory-export", "version": 1, "profile": "test/p"}).to_string();
    out.push('\n');
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// A random leaf: a field, an operator, a value (sometimes of another kind
/// than the field holds).
fn random_leaf(r: &mut Rng) -> Value {
    let field = *r.pick(&["agentId", "userId", "priority", "score", "draft", "team", "type", "sessionId", "createdAt", "missing"]);
    let value = |r: &mut Rng| -> Value {
        match field {
            "agentId" => json!(r.pick(&AGENTS)),
            "userId" => json!(r.pick(&USERS)),
            "team" => json!(r.pick(&TEAMS)),
            "priority" if r.chance(0.1) => json!(r.below(5).to_string()),
            "priority" | "missing" => json!(r.below(5)),
            "score" => json!(r.below(100) as f64 / 10.0),
            "draft" => json!(r.chance(0.5)),
            "type" => json!(r.pick(&["fact", "event", "instruction"])),
            "sessionId" => json!(r.pick(&SESSIONS)),
            _ => json!(agent_memory::core::time::iso(APRIL_15 - r.below(60) as i64 * DAY)),
        }
    };
    let ordered = matches!(field, "priority" | "score" | "createdAt" | "missing");
    let ops: &[&str] = if ordered { &["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "plain"] } else { &["eq", "ne", "in", "nin", "plain"] };
    match *r.pick(ops) {
        "plain" => json!({ field: value(r) }),
        op @ ("in" | "nin") => {
            let n = 1 + r.below(3);
            let vs: Vec<Value> = (0..n).map(|_| value(r)).collect();
            json!({ field: { op: vs } })
        }
        op => json!({ field: { op: value(r) } }),
    }
}

fn random_filter(r: &mut Rng, depth: usize) -> Value {
    if depth >= 3 || r.chance(0.4) {
        return random_leaf(r);
    }
    match r.below(4) {
        0 => json!({ "AND": (0..1 + r.below(3)).map(|_| random_filter(r, depth + 1)).collect::<Vec<_>>() }),
        1 => json!({ "OR": (0..1 + r.below(3)).map(|_| random_filter(r, depth + 1)).collect::<Vec<_>>() }),
        2 => json!({ "NOT": random_filter(r, depth + 1) }),
        _ => {
            // Two fields side by side in one object: both must hold.
            let (a, b) = (random_leaf(r), random_leaf(r));
            let mut m = a.as_object().cloned().unwrap_or_default();
            m.extend(b.as_object().cloned().unwrap_or_default());
            Value::Object(m)
        }
    }
}

fn list_all(p: &Profile<'_>, filter: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor = None;
    loop {
        let page = p.list(ListRequest { limit: Some(1000), cursor: cursor.clone(), filter: Some(filter.clone()), ..ListRequest::default() }).expect("list");
        ids.extend(page.memories.iter().map(|m| m.id.clone()));
        match page.cursor {
            Some(c) => cursor = Some(c),
            None => return ids,
        }
    }
}

fn recall_ids(p: &Profile<'_>, query: &str, filter: Option<&Value>) -> Vec<String> {
    block_on(p.recall(recall_request(query, filter))).expect("recall").candidates.into_iter().map(|c| c.id).collect()
}

fn recall_request(query: &str, filter: Option<&Value>) -> RecallRequest {
    RecallRequest { query: query.into(), options: RecallOptions { limit: Some(20), filter: filter.cloned(), ..RecallOptions::default() } }
}

/// [`recall_ids`], narrowed `how` rather than as the sample decides.
fn recall_ids_by(p: &Profile<'_>, query: &str, filter: &Value, how: Narrowing) -> Vec<String> {
    let scope = RecallScope::new(&recall_request(query, Some(filter)), p.now).expect("scope").narrow(p.sql, how).expect("narrow");
    block_on(agent_memory::core::recall::run_in(p, scope)).expect("recall").candidates.into_iter().map(|c| c.id).collect()
}

#[test]
fn test_random_filters_hold_in_every_channel_and_equal_a_profile_of_the_passing_memories() {
    // More than the vector index's first pass (2,000): its walk in
    // Hamming order tests the nearest a batch at a time.
    const MEMORIES: usize = 2500;
    const FILTERS: usize = 200;
    let mut r = Rng(0x5eed_f117);
    let all = random_memories(&mut r, MEMORIES);
    let full = Held::new();
    full.import(&export_of(all.iter().map(|(_, l)| l)));
    let mut compared = 0usize;
    let mut nonempty = 0usize;
    for n in 0..FILTERS {
        let fv = random_filter(&mut r, 0);
        let filter = Filter::parse(&fv).unwrap_or_else(|e| panic!("filter {fv} refused: {e}"));
        let passing: Vec<&(Memory, String)> = all.iter().filter(|(m, _)| filter.matches(m)).collect();
        // list: exactly the passing memories (newest first).
        let listed = full.with(APRIL_15, |p| list_all(p, &fv));
        let mut want: Vec<String> = passing.iter().map(|(m, _)| m.id.clone()).collect();
        want.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(listed, want, "list with filter {fv}");
        // recall: nothing violates the filter, and the hits are a profile's
        // holding only the passing memories.
        let query = *r.pick(&WORDS);
        let got = full.with(APRIL_15, |p| recall_ids(p, query, Some(&fv)));
        let by_id: std::collections::HashMap<&str, &Memory> = all.iter().map(|(m, _)| (m.id.as_str(), m)).collect();
        for id in &got {
            assert!(filter.matches(by_id[id.as_str()]), "recall of {query:?} with {fv} returned {id}, which fails it");
        }
        if !got.is_empty() {
            nonempty += 1;
        }
        // Each way of narrowing, with the directory and on SQLite alone
        // (which ranks the memories' words itself, FTS5 asked for more
        // until enough pass), and with nothing resident (the vector codes
        // streamed, the first pass drawn from the passing memories as the
        // copy draws it): the same hits.
        // A walk bounded at 300 tests reads ahead part way through.
        for how in [Narrowing::Walk, Narrowing::WalkWithin(300), Narrowing::Ahead] {
            let resident = full.with(APRIL_15, |p| recall_ids_by(p, query, &fv, how));
            assert_eq!(resident, got, "recall of {query:?} with filter {fv}, narrowed {how:?}");
            let on_sql = full.with_turns(APRIL_15, None, |p| recall_ids_by(p, query, &fv, how));
            assert_eq!(on_sql, got, "recall of {query:?} with filter {fv} on SQLite alone, narrowed {how:?}");
            let cold = full.with_nothing(APRIL_15, |p| recall_ids_by(p, query, &fv, how));
            assert_eq!(cold, got, "recall of {query:?} with filter {fv} with nothing resident, narrowed {how:?}");
        }
        // The equality check on a fresh profile costs an import: every
        // other filter.
        if n % 2 == 0 {
            let alone = Held::new();
            alone.import(&export_of(passing.iter().map(|(_, l)| l)));
            let expected = alone.with(APRIL_15, |p| recall_ids(p, query, None));
            assert_eq!(got, expected, "recall of {query:?} with filter {fv} ({} passing)", passing.len());
            compared += 1;
        }
    }
    assert!(compared >= FILTERS / 2);
    // The filters are not all empty-handed: most recalls find something.
    assert!(nonempty * 2 > FILTERS, "only {nonempty} of {FILTERS} filtered recalls found anything");
}

#[test]
fn test_a_filtered_out_memory_never_takes_a_slot_in_recall() {
    // 300 memories about foxes by the coder, then one by the reviewer: an
    // unfiltered recall of 10 is all coder; filtered, the reviewer's is
    // found although 300 better-ranked memories, more than any channel's
    // depth or pool, are filtered out.
    let held = Held::new();
    let mut lines = Vec::new();
    for i in 0..301 {
        let agent = if i == 300 { "reviewer" } else { "coder" };
        let content = if i == 300 { format!("plain plain plain plain plain fox item{i}") } else { format!("fox fox plain plain plain plain item{i}") };
        let created = APRIL_15 - DAY + i;
        lines.push(
            json!({"kind": "memory", "id": agent_memory::core::ids::memory_id(created, &content, 0), "type": "fact", "summary": content, "content": content,
                   "sessionId": "s", "sourceMessageIds": [], "searchQueries": [], "status": "active",
                   "createdAt": agent_memory::core::time::iso(created), "updatedAt": agent_memory::core::time::iso(created),
                   "metadata": {"agentId": agent}})
            .to_string(),
        );
    }
    held.import(&export_of(lines.iter()));
    let reviewer = json!({"agentId": "reviewer"});
    held.with(APRIL_15, |p| {
        let unfiltered = block_on(p.recall(RecallRequest { query: "fox".into(), options: RecallOptions { limit: Some(10), ..Default::default() } })).unwrap();
        assert!(unfiltered.candidates.iter().all(|c| c.metadata.get("agentId") == Some(&agent_memory::core::model::MetaValue::Text("coder".into()))));
        let filtered = block_on(p.recall(RecallRequest {
            query: "fox".into(),
            options: RecallOptions { limit: Some(10), filter: Some(reviewer.clone()), explain: Some(true), ..Default::default() },
        }))
        .unwrap();
        assert_eq!(filtered.candidates.len(), 1, "{:?}", filtered.candidates);
        // Every channel applied it: none ranked a coder's memory.
        for c in filtered.explain.unwrap().channels {
            assert!(c.ids.len() <= 1, "channel {:?} ranked {:?}", c.channel, c.ids);
        }
    });
}

#[test]
fn test_metadata_is_stored_listed_recalled_exported_and_imported() {
    let held = Held::new();
    held.with(APRIL_15, |p| {
        let m = block_on(p.remember(RememberRequest {
            content: "The review bot flags every TODO left in a pull request.".into(),
            session_id: None,
            kind: None,
            key: None,
            expires_at: None,
            ttl_seconds: None,
            sensitive: None,
            metadata: serde_json::from_value(json!({"agentId": "reviewer", "priority": 2, "draft": false})).unwrap(),
        }))
        .unwrap();
        assert_eq!(m.metadata.len(), 3);
        let listed = p.list(ListRequest { filter: Some(json!("{\"priority\": {\"gte\": 2}}")), ..Default::default() }).unwrap();
        assert_eq!(listed.memories.len(), 1);
        assert_eq!(listed.memories[0].metadata, m.metadata);
        block_on(p.ingest(agent_memory::core::api::IngestRequest {
            messages: vec![msg("user", "I prefer tabs over spaces in every Go file.")],
            session_id: Some("s1".into()),
            metadata: serde_json::from_value(json!({"agentId": "coder", "userId": "ana"})).unwrap(),
        }))
        .unwrap();
        let coder = p.list(ListRequest { filter: Some(json!({"agentId": "coder"})), ..Default::default() }).unwrap();
        assert!(!coder.memories.is_empty());
        assert!(coder.memories.iter().all(|e| e.metadata.get("userId").is_some()));
        let export = p.export(Default::default()).unwrap();
        assert!(export.contains("\"agentId\":\"coder\""), "messages and memories carry it");
        let only = p.export(agent_memory::core::api::ExportRequest { filter: Some(json!({"agentId": "reviewer"})) }).unwrap();
        assert_eq!(only.lines().count(), 2, "the header and the reviewer's memory: {only}");
        let copy = Held::new();
        copy.import(&export);
        copy.with(APRIL_15, |q| {
            assert_eq!(q.export(Default::default()).unwrap().lines().skip(1).collect::<Vec<_>>(), export.lines().skip(1).collect::<Vec<_>>())
        });
    });
}

#[test]
fn test_bad_metadata_and_filters_are_refused_and_change_nothing() {
    let held = Held::new();
    held.with(APRIL_15, |p| {
        for meta in [json!({"agentId": 7}), json!({"type": "x"}), json!({"k": "x".repeat(600)})] {
            let req: Result<RememberRequest, _> = serde_json::from_value(json!({"content": "A statement long enough to store.", "metadata": meta}));
            match req {
                Ok(req) => assert_eq!(block_on(p.remember(req)).unwrap_err().status(), 400, "{meta}"),
                Err(_) => {}
            }
        }
        assert!(p.list(ListRequest::default()).unwrap().memories.is_empty());
        for f in [json!({"p": {"like": 1}}), json!([1]), json!({"AND": []})] {
            let e =
                block_on(p.recall(RecallRequest { query: "x".into(), options: RecallOptions { filter: Some(f.clone()), ..Default::default() } })).unwrap_err();
            assert_eq!(e.status(), 400, "{f}");
            assert_eq!(p.list(ListRequest { filter: Some(f.clone()), ..Default::default() }).unwrap_err().status(), 400);
        }
    });
}

#[test]
fn test_a_filter_text_naming_a_key_twice_is_refused_by_list_export_and_recall() {
    let held = Held::new();
    held.with(APRIL_15, |p| {
        for agent in ["alice", "bob"] {
            let req: RememberRequest =
                serde_json::from_value(json!({"content": format!("{agent} owns the billing service."), "metadata": {"agentId": agent}})).unwrap();
            block_on(p.remember(req)).unwrap();
        }
        let twice = json!(r#"{"agentId":"alice","agentId":"bob"}"#);
        let e = p.list(ListRequest { filter: Some(twice.clone()), ..Default::default() }).unwrap_err();
        assert!(e.status() == 400 && e.message().contains("duplicate key \"agentId\""), "{e}");
        let e = p.export(agent_memory::core::api::ExportRequest { filter: Some(twice.clone()) }).unwrap_err();
        assert_eq!(e.status(), 400, "{e}");
        let e = block_on(p.recall(RecallRequest { query: "who owns billing".into(), options: RecallOptions { filter: Some(twice), ..Default::default() } }))
            .unwrap_err();
        assert_eq!(e.status(), 400, "{e}");
    });
}

/// `asOf`: a fact superseded on day 10 is what was true on day 5; its
/// successor is on day 15. Validity follows when things were said (the
/// messages' timestamps), not when they were ingested.
#[test]
fn test_as_of_returns_what_was_active_then() {
    let held = Held::new();
    let day = |d: i64| agent_memory::core::time::iso(APRIL_15 - 30 * DAY + d * DAY);
    let said = |content: &str, d: i64| agent_memory::core::model::MessageInput { role: "user".into(), content: content.into(), timestamp: Some(day(d)) };
    // Both ingested on day 20, in one call each.
    held.with(APRIL_15 - 10 * DAY, |p| {
        block_on(p.ingest(agent_memory::core::api::IngestRequest {
            messages: vec![said("Use pnpm, not npm, for this project.", 1)],
            session_id: Some("early".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        block_on(p.ingest(agent_memory::core::api::IngestRequest {
            messages: vec![said("Actually, switch to npm for this project.", 10)],
            session_id: Some("later".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        block_on(p.drain()).unwrap();
    });
    held.with(APRIL_15, |p| {
        let all = p.list(ListRequest { status: Some(agent_memory::core::api::ListStatus::All), ..Default::default() }).unwrap().memories;
        let old = all.iter().find(|m| m.content.contains("pnpm")).expect("the first fact");
        let new = all.iter().find(|m| m.content.contains("switch to npm")).expect("its successor");
        assert_eq!(old.status, Status::Superseded, "{all:#?}");
        assert_eq!(old.valid_from.as_deref(), Some(day(1).as_str()));
        assert_eq!(old.valid_to.as_deref(), Some(day(10).as_str()));
        assert_eq!(new.valid_from.as_deref(), Some(day(10).as_str()));
        let at = |d: i64| -> Vec<String> {
            let r = block_on(p.recall(RecallRequest {
                query: "Which package manager does the project use?".into(),
                options: RecallOptions { as_of: Some(day(d)), ..Default::default() },
            }))
            .unwrap();
            r.candidates.into_iter().map(|c| c.id).collect()
        };
        assert!(at(5).contains(&old.id) && !at(5).contains(&new.id), "day 5: {:?}", at(5));
        assert!(at(15).contains(&new.id) && !at(15).contains(&old.id), "day 15: {:?}", at(15));
        assert!(at(0).is_empty(), "nothing was said yet on day 0: {:?}", at(0));
        let listed =
            |d: i64| -> Vec<String> { p.list(ListRequest { as_of: Some(day(d)), ..Default::default() }).unwrap().memories.into_iter().map(|m| m.id).collect() };
        assert!(listed(5).contains(&old.id) && !listed(5).contains(&new.id));
        assert!(listed(15).contains(&new.id) && !listed(15).contains(&old.id));
        // get shows each version's interval.
        let detail = p.get(&new.id).unwrap();
        let versions: Vec<(Option<String>, Option<String>)> = detail.versions.iter().map(|v| (v.valid_from.clone(), v.valid_to.clone())).collect();
        assert!(versions.contains(&(Some(day(1)), Some(day(10)))) && versions.contains(&(Some(day(10)), None)), "{versions:?}");
    });
}

/// Two memories whose `orderId` are 2^53 and 2^53 + 1, which no f64 tells
/// apart, in a fresh profile; returns their ids (2^53's first).
fn two_big_orders(held: &Held) -> (String, String) {
    held.with(APRIL_15, |p| {
        let mut ids = Vec::new();
        for (n, order) in [(9_007_199_254_740_992u64, "first"), (9_007_199_254_740_993u64, "second")] {
            let req: RememberRequest = serde_json::from_value(json!({
                "content": format!("The {order} warehouse order shipped on Monday."),
                "metadata": {"orderId": n},
            }))
            .unwrap();
            ids.push(block_on(p.remember(req)).unwrap().id);
        }
        (ids[0].clone(), ids[1].clone())
    })
}

/// The memory ids of an export with `filter`, in the export's order.
fn exported_ids(p: &Profile<'_>, filter: &Value) -> Vec<String> {
    let text = p.export(agent_memory::core::api::ExportRequest { filter: Some(filter.clone()) }).expect("export");
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "memory")
        .filter_map(|v| v["id"].as_str().map(String::from))
        .collect()
}

#[test]
fn test_a_filter_on_an_integer_above_2_pow_53_selects_exactly_on_list_recall_and_export() {
    let held = Held::new();
    let (low, high) = two_big_orders(&held);
    let (lo, hi) = (json!(9_007_199_254_740_992u64), json!(9_007_199_254_740_993u64));
    let cases: Vec<(Value, Vec<&String>)> = vec![
        (json!({"orderId": hi}), vec![&high]),
        (json!({"orderId": lo}), vec![&low]),
        (json!({"orderId": {"eq": hi}}), vec![&high]),
        (json!({"orderId": {"ne": hi}}), vec![&low]),
        (json!({"orderId": {"in": [hi]}}), vec![&high]),
        (json!({"orderId": {"nin": [hi]}}), vec![&low]),
        (json!({"orderId": {"gt": lo}}), vec![&high]),
        (json!({"orderId": {"gte": hi}}), vec![&high]),
        (json!({"orderId": {"lt": hi}}), vec![&low]),
        (json!({"orderId": {"lte": lo}}), vec![&low]),
        // A number with a fraction is compared with the integers exactly
        // too: 2^53 as a float equals the first, and the second is above it.
        (json!({"orderId": 9_007_199_254_740_992.0}), vec![&low]),
        (json!({"orderId": {"gt": 9_007_199_254_740_992.0}}), vec![&high]),
        (json!({"NOT": {"orderId": hi}}), vec![&low]),
    ];
    held.with(APRIL_15, |p| {
        for (filter, want) in &cases {
            let want: Vec<String> = want.iter().map(|s| (*s).clone()).collect();
            assert_eq!(list_all(p, filter), want, "list with {filter}");
            assert_eq!(exported_ids(p, filter), want, "export with {filter}");
            assert_eq!(recall_ids(p, "warehouse order shipped", Some(filter)), want, "recall with {filter}");
            // As the query parameter's text, too.
            assert_eq!(list_all(p, &Value::String(filter.to_string())), want, "list with the text of {filter}");
        }
    });
}

#[test]
fn test_the_metadata_column_yields_an_integer_above_2_pow_53_exactly() {
    // What the SQL filters read: `json_extract` on the stored metadata is
    // an INTEGER, the number sent, not a REAL rounded to 2^53.
    let held = Held::new();
    two_big_orders(&held);
    let rows = agent_memory::core::ports::Sql::query(
        &held.sql,
        "SELECT typeof(json_extract(metadata, '$.\"orderId\"')), json_extract(metadata, '$.\"orderId\"') FROM memories ORDER BY 2",
        &[],
    )
    .unwrap();
    use agent_memory::core::ports::SqlValue;
    let got: Vec<(String, i64)> = rows
        .iter()
        .map(|r| match (&r[0], &r[1]) {
            (SqlValue::Text(t), SqlValue::Integer(n)) => (t.clone(), *n),
            other => panic!("orderId read as {other:?}"),
        })
        .collect();
    assert_eq!(got, vec![("integer".to_string(), 9_007_199_254_740_992), ("integer".to_string(), 9_007_199_254_740_993)]);
}

#[test]
fn test_a_filter_integer_beyond_i64_is_refused_and_huge_stored_integers_agree_on_every_path() {
    let held = Held::new();
    let (low, high) = two_big_orders(&held);
    // u64::MAX: SQLite reads it as a REAL (2^64); so does every path.
    let huge = held.with(APRIL_15, |p| {
        let req: RememberRequest =
            serde_json::from_value(json!({"content": "The third warehouse order shipped on Monday.", "metadata": {"orderId": u64::MAX}})).unwrap();
        block_on(p.remember(req)).unwrap().id
    });
    held.with(APRIL_15, |p| {
        for filter in [json!({"orderId": u64::MAX}), json!({"orderId": {"lt": 9_223_372_036_854_775_808u64}}), json!({"orderId": {"in": [1, u64::MAX]}})] {
            let e = p.list(ListRequest { filter: Some(filter.clone()), ..Default::default() }).unwrap_err();
            assert!(e.status() == 400 && e.message().contains("must fit in 64 bits"), "list with {filter}: {e}");
            let e = p.export(agent_memory::core::api::ExportRequest { filter: Some(filter.clone()) }).unwrap_err();
            assert_eq!(e.status(), 400, "export with {filter}: {e}");
            let e = block_on(p.recall(RecallRequest { query: "order".into(), options: RecallOptions { filter: Some(filter.clone()), ..Default::default() } }))
                .unwrap_err();
            assert_eq!(e.status(), 400, "recall with {filter}: {e}");
        }
        // i64's own ends are integers, and 2^64 as a float is the huge one.
        let cases: Vec<(Value, Vec<&String>)> = vec![
            (json!({"orderId": {"lt": i64::MAX}}), vec![&low, &high]),
            (json!({"orderId": {"gt": i64::MIN}}), vec![&low, &high, &huge]),
            (json!({"orderId": {"gte": 18_446_744_073_709_551_616.0}}), vec![&huge]),
            (json!({"orderId": {"gt": 9_223_372_036_854_775_807i64}}), vec![&huge]),
        ];
        for (filter, want) in &cases {
            let mut want: Vec<String> = want.iter().map(|s| (*s).clone()).collect();
            want.sort();
            let sorted = |mut ids: Vec<String>| {
                ids.sort();
                ids
            };
            assert_eq!(sorted(list_all(p, filter)), want, "list with {filter}");
            assert_eq!(sorted(exported_ids(p, filter)), want, "export with {filter}");
        }
    });
}

#[test]
fn test_ordered_comparisons_agree_with_matches_across_every_kind_a_field_holds() {
    // One memory per stored value of `v`: numbers (integers, reals, the
    // ends of the range), booleans, texts (empty, digits, letters), a
    // JSON-looking text, and none at all. Each ordered comparison against
    // bounds of both kinds selects in SQL (`list`) exactly the memories
    // `Filter::matches` passes.
    let stored = [
        json!(-1e300),
        json!(-3),
        json!(0),
        json!(false),
        json!(true),
        json!(2),
        json!(2.5),
        json!(3),
        json!(i64::MAX),
        json!(1e300),
        json!(""),
        json!("2"),
        json!("3"),
        json!("10"),
        json!("abc"),
        json!("{\"a\":1}"),
        Value::Null,
    ];
    let held = Held::new();
    let mut memories: Vec<Memory> = Vec::new();
    held.with(APRIL_15, |p| {
        for (i, v) in stored.iter().enumerate() {
            let metadata = match v {
                Value::Null => json!({ "other": i }),
                v => json!({ "v": v, "other": i }),
            };
            memories.push(
                block_on(p.remember(RememberRequest {
                    content: format!("Stored value number {i} of the ordered comparison test."),
                    session_id: None,
                    kind: None,
                    // A topic each: none supersedes another.
                    key: Some(format!("ordered.value{i}")),
                    expires_at: None,
                    ttl_seconds: None,
                    sensitive: None,
                    metadata: serde_json::from_value(metadata).unwrap(),
                }))
                .unwrap(),
            );
        }
        assert_eq!(list_all(p, &json!({"other": {"gte": 0}})).len(), stored.len(), "every memory is stored");
        let bounds = [json!(-5), json!(0), json!(2), json!(2.5), json!(3), json!(1e300), json!(""), json!("2"), json!("3"), json!("abc")];
        let mut checked = 0;
        for op in ["gt", "gte", "lt", "lte"] {
            for b in &bounds {
                for fv in [json!({ "v": { op: b } }), json!({ "NOT": { "v": { op: b } } })] {
                    let filter = Filter::parse(&fv).unwrap();
                    let mut want: Vec<String> = memories.iter().filter(|m| filter.matches(m)).map(|m| m.id.clone()).collect();
                    want.sort_unstable_by(|a, b| b.cmp(a));
                    assert_eq!(list_all(p, &fv), want, "list with filter {fv}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 80);
    });
}

#[test]
fn test_the_sample_sees_the_share_that_passes_and_walks_only_where_it_pays() {
    use agent_memory::core::recall::scope::{Sampled, SAMPLE};
    const MEMORIES: usize = 2500;
    let mut r = Rng(0x5a3b_1e00);
    let all = random_memories(&mut r, MEMORIES);
    let full = Held::new();
    full.import(&export_of(all.iter().map(|(_, l)| l)));
    for fv in [json!({"agentId": "coder"}), json!({"draft": {"eq": true}}), json!({"priority": {"gte": 3}}), json!({"NOT": {"team": "ops"}})] {
        let filter = Filter::parse(&fv).unwrap();
        let share = all.iter().filter(|(m, _)| filter.matches(m)).count() as f64 / MEMORIES as f64;
        let s = full.with(APRIL_15, |p| RecallScope::new(&recall_request("fox", Some(&fv)), p.now).expect("scope").sample(p.sql).expect("sample"));
        assert_eq!((s.tested, s.span), (SAMPLE as i64, MEMORIES as i64), "{fv}");
        let seen = s.passed as f64 / s.tested as f64;
        assert!((seen - share).abs() < 0.1, "{fv}: the sample saw {seen:.3} pass, {share:.3} do");
    }
    // An empty profile has nothing to sample: read ahead (nothing).
    let empty = Held::new();
    let s = empty
        .with(APRIL_15, |p| RecallScope::new(&recall_request("fox", Some(&json!({"agentId": "coder"}))), p.now).expect("scope").sample(p.sql).expect("sample"));
    assert_eq!(s, Sampled { tested: 0, passed: 0, span: 0 });
    assert!(!s.walk_pays(2000));
    // Walking 2,000 deep tests about 2000 / share memories, each costing
    // TEST_COST (3) rows read ahead; reading ahead reads at least the
    // share x span that pass.
    let walks = |passed: i64, span: i64| Sampled { tested: 256, passed, span }.walk_pays(2000);
    assert!(walks(256, 100_000), "all pass at 100k: 6,000 against 100,000");
    assert!(walks(103, 100_000), "40% at 100k: 14,900 against 40,200");
    assert!(!walks(26, 100_000), "10% at 100k: 59,000 against 10,200");
    assert!(!walks(256, 5_000), "all pass at 5k: 6,000 against 5,000");
    assert!(!walks(0, 100_000), "none pass");
}

#[test]
fn test_a_walk_past_its_budget_reads_ahead_and_explain_says_when() {
    use agent_memory::core::recall::scope::{NarrowingWay, Sampled};
    let mut r = Rng(0xb0d6_e700);
    let all = random_memories(&mut r, 1500);
    let full = Held::new();
    full.import(&export_of(all.iter().map(|(_, l)| l)));
    let fv = json!({"priority": {"gte": 3}});
    let recall = |how: Narrowing| {
        full.with(APRIL_15, |p| {
            let req = RecallRequest {
                options: RecallOptions { explain: Some(true), ..recall_request("cedar", Some(&fv)).options },
                ..recall_request("cedar", Some(&fv))
            };
            let scope = RecallScope::new(&req, p.now).expect("scope").narrow(p.sql, how).expect("narrow");
            let got = block_on(agent_memory::core::recall::run_in(p, scope)).expect("recall");
            let ids: Vec<String> = got.candidates.into_iter().map(|c| c.id).collect();
            (ids, got.explain.expect("explain").narrowing.expect("narrowed"))
        })
    };
    let (walked, unbounded) = recall(Narrowing::Walk);
    assert_eq!((unbounded.way, unbounded.read_ahead_after), (NarrowingWay::Walk, None), "an unbounded walk never reads ahead");
    let (ahead, read) = recall(Narrowing::Ahead);
    assert_eq!((read.way, read.read_ahead_after), (NarrowingWay::Ahead, None));
    for budget in [0, 300, 1000] {
        let (ids, report) = recall(Narrowing::WalkWithin(budget));
        assert_eq!(ids, walked, "a walk bounded at {budget} finds what an unbounded one does");
        assert_eq!(report.way, NarrowingWay::Walk);
        let after = report.read_ahead_after.unwrap_or_else(|| panic!("a walk bounded at {budget} reads ahead: {report:?}"));
        assert!(after as usize <= budget, "it read ahead after {after} tests, within its budget of {budget}");
    }
    assert_eq!(ahead, walked, "reading ahead finds the same");
    assert!(!walked.is_empty());
    // A walk's budget: twice the 2,000 / share tests the sample predicts.
    assert_eq!(Sampled { tested: 256, passed: 128, span: 100_000 }.walk_budget(2000), 8000);
    assert_eq!(Sampled { tested: 256, passed: 256, span: 100_000 }.walk_budget(2000), 4000);
}

#[test]
fn test_what_passes_is_read_ahead_whole_across_pages_and_a_pinned_scope_key_from_its_index() {
    use agent_memory::core::ports::Sql;
    const MEMORIES: usize = 700;
    let mut r = Rng(0x5eed_a4ead);
    let all = random_memories(&mut r, MEMORIES);
    let held = Held::new();
    held.import(&export_of(all.iter().map(|(_, l)| l)));
    // Some memories superseded, some expired, some expiring later: a
    // read ahead keeps what is live.
    let sql = &held.sql;
    sql.execute("UPDATE memories SET status = 'superseded' WHERE rowid % 7 = 0", &[]).unwrap();
    sql.execute("UPDATE memories SET expires_at = ? WHERE rowid % 11 = 0", &[agent_memory::core::time::iso(APRIL_15 - DAY).as_str().into()]).unwrap();
    sql.execute("UPDATE memories SET expires_at = ? WHERE rowid % 13 = 0", &[agent_memory::core::time::iso(APRIL_15 + DAY).as_str().into()]).unwrap();
    let live: std::collections::HashSet<String> = sql
        .query(
            "SELECT id FROM memories WHERE status = 'active' AND (expires_at IS NULL OR expires_at > ?)",
            &[agent_memory::core::time::iso(APRIL_15).as_str().into()],
        )
        .unwrap()
        .into_iter()
        .map(|row| row[0].opt_string().unwrap())
        .collect();
    assert!(live.len() > MEMORIES / 2 && live.len() < MEMORIES);
    let filters = [
        (json!({"agentId": AGENTS[1]}), true),
        (json!({"AND": [{"userId": USERS[0]}, {"priority": {"gte": 2}}]}), true),
        (json!({"agentId": {"in": [AGENTS[0], AGENTS[2]]}}), true),
        (json!({"NOT": {"agentId": {"in": [AGENTS[0], AGENTS[2]]}}}), false),
        (json!({"priority": {"gte": 3}}), false),
        (json!({"OR": [{"agentId": AGENTS[1]}, {"team": TEAMS[0]}]}), false),
    ];
    for (fv, pinned) in &filters {
        let filter = Filter::parse(fv).unwrap();
        assert_eq!(filter.pins_scope_key(), *pinned, "{fv}");
        let mut want: Vec<String> = all.iter().filter(|(m, _)| live.contains(&m.id) && filter.matches(m)).map(|(m, _)| m.id.clone()).collect();
        want.sort_unstable();
        assert!(want.len() > 20, "{fv}: {} pass", want.len());
        let scope = RecallScope::new(&recall_request("heron", Some(fv)), APRIL_15).expect("scope");
        for page in [1, 7, want.len(), 20_000] {
            let passing = scope.read_passing_paged(sql, page).unwrap();
            let mut got: Vec<String> = passing.ids.iter().cloned().collect();
            got.sort_unstable();
            assert_eq!(got, want, "{fv}, pages of {page}");
            assert_eq!(passing.rowids.len(), want.len(), "{fv}, pages of {page}");
        }
        // How SQLite reads it: a pinned scope key through its index (one
        // value in id order, no sort); anything else in the table's own
        // order.
        let recording = support::Recorded::new(sql, |s| s.contains("json_array(rowid, id)"));
        scope.read_passing_paged(&recording, 20_000).unwrap();
        let (statement, params) = recording.seen.borrow()[0].clone();
        let plan: Vec<String> =
            sql.query(&format!("EXPLAIN QUERY PLAN {statement}"), &params).unwrap().iter().filter_map(|row| row.last().and_then(|v| v.opt_string())).collect();
        let key = if fv.to_string().contains("userId") { "memories_by_user (user_id=? AND id>?)" } else { "memories_by_agent (agent_id=? AND id>?)" };
        match pinned {
            true => {
                assert!(plan.iter().any(|s| s.contains(key)), "{fv}: {plan:#?}");
                let one_value = !fv.to_string().contains("\"in\"");
                assert!(!one_value || !plan.iter().any(|s| s.contains("TEMP B-TREE")), "{fv}: {plan:#?}");
            }
            false => assert!(plan.iter().any(|s| s.contains("USING INTEGER PRIMARY KEY (rowid>?)")), "{fv}: {plan:#?}"),
        }
    }
}

#[test]
fn test_migration_16_widens_the_scope_key_indexes_of_a_filled_profile() {
    use agent_memory::core::ports::Sql;
    let sql = support::database_at(15);
    let columns = |index: &str| -> Vec<String> {
        sql.query(&format!("SELECT name FROM pragma_index_info('{index}') ORDER BY seqno"), &[]).unwrap().iter().filter_map(|r| r[0].opt_string()).collect()
    };
    assert_eq!(columns("memories_by_agent"), vec!["agent_id"]);
    // Memories of three agents, some superseded, stored at version 15.
    for i in 0..90 {
        let (agent, status) = (AGENTS[i % 3], if i % 4 == 0 { "superseded" } else { "active" });
        sql.execute(
            "INSERT INTO memories (id, type, summary, content, session_id, source_message_ids, search_queries, status, fingerprint, created_at, updated_at, metadata) \
             VALUES (?1, 'fact', 's', 'c', 's1', '[]', '[]', ?2, ?1, '2026-04-01T00:00:00.000Z', '2026-04-01T00:00:00.000Z', ?3)",
            &[format!("m{i:03}").as_str().into(), status.into(), json!({"agentId": agent, "userId": USERS[i % 2]}).to_string().as_str().into()],
        )
        .unwrap();
    }
    agent_memory::core::schema::migrate(&sql).unwrap();
    assert_eq!(columns("memories_by_agent"), vec!["agent_id", "id", "status", "expires_at"]);
    assert_eq!(columns("memories_by_user"), vec!["user_id", "id", "status", "expires_at"]);
    // What passes is read from the new index: every live memory of the agent.
    let scope = RecallScope::new(&recall_request("c", Some(&json!({"agentId": AGENTS[1]}))), APRIL_15).expect("scope");
    let mut got: Vec<String> = scope.read_passing_paged(&sql, 7).unwrap().ids.into_iter().collect();
    got.sort_unstable();
    let want: Vec<String> = (0..90).filter(|i| i % 3 == 1 && i % 4 != 0).map(|i| format!("m{i:03}")).collect();
    assert_eq!(got, want);
}

/// A memory remembered without a session has no `sessionId`: like any
/// field a memory lacks, it matches `ne` and `nin` and nothing else, on
/// list (SQL) and recall (in memory) alike.
#[test]
fn test_a_memory_without_a_session_matches_only_ne_and_nin_on_session_id() {
    let held = Held::new();
    held.with(APRIL_15, |p| {
        let none =
            block_on(p.remember(serde_json::from_value(json!({ "content": "The review bot flags every TODO left in a pull request." })).unwrap())).unwrap();
        let some = block_on(p.remember(
            serde_json::from_value(json!({ "content": "The deploy bot posts every release note to the team channel.", "sessionId": "s1" })).unwrap(),
        ))
        .unwrap();
        let cases = [
            (json!({ "sessionId": { "lt": "zzz" } }), vec![&some.id]),
            (json!({ "sessionId": { "gte": "" } }), vec![&some.id]),
            (json!({ "sessionId": "" }), vec![]),
            (json!({ "sessionId": { "in": [""] } }), vec![]),
            (json!({ "sessionId": { "ne": "s1" } }), vec![&none.id]),
            (json!({ "sessionId": { "nin": ["s1"] } }), vec![&none.id]),
        ];
        for (filter, want) in cases {
            let listed: Vec<String> =
                p.list(ListRequest { filter: Some(filter.clone()), ..Default::default() }).unwrap().memories.into_iter().map(|m| m.id).collect();
            let want: Vec<String> = want.into_iter().cloned().collect();
            assert_eq!(listed, want, "list {filter}");
            let req = agent_memory::core::api::RecallRequest {
                query: "Which bot flags TODO or posts release notes?".into(),
                options: serde_json::from_value(json!({ "filter": filter, "limit": 10 })).unwrap(),
            };
            let mut recalled: Vec<String> = block_on(p.recall(req)).unwrap().candidates.into_iter().map(|c| c.id).collect();
            recalled.sort();
            let mut want = want;
            want.sort();
            assert_eq!(recalled, want, "recall {filter}");
        }
    });
    // The session column is read bare, so its index serves a filter on it.
    use agent_memory::core::ports::Sql;
    let f = agent_memory::core::filter::from_json(&json!({ "sessionId": "s1" })).unwrap();
    let statement = format!("EXPLAIN QUERY PLAN SELECT m.id FROM memories m WHERE {}", f.sql(1));
    let plan: Vec<String> = held.sql.query(&statement, &[f.param().into()]).unwrap().iter().filter_map(|row| row.last().and_then(|v| v.opt_string())).collect();
    assert!(plan.iter().any(|s| s.contains("SEARCH") && s.contains("memories_by_session (session_id=?")), "{plan:#?}");
}

#[test]
fn test_an_integer_past_64_bits_in_a_filter_text_is_refused_not_read_as_the_float_of_a_stored_one() {
    let held = Held::new();
    held.with(APRIL_15, |p| {
        let req: RememberRequest =
            serde_json::from_value(json!({"content": "The third warehouse order shipped on Monday.", "metadata": {"orderId": u64::MAX}})).unwrap();
        block_on(p.remember(req)).unwrap();
        // 2^64 + 1 read as a float is 2^64, which is how the stored u64::MAX reads.
        for text in [r#"{"orderId": 18446744073709551617}"#, r#"{"orderId": {"in": [1, 123456789012345678901234567891]}}"#] {
            let e = p.list(ListRequest { filter: Some(Value::String(text.into())), ..Default::default() }).unwrap_err();
            assert!(e.status() == 400 && e.message().contains("does not fit in 64 bits"), "{text}: {e}");
        }
    });
}
