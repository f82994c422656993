//! Native profile of recall and ingest: `make bench-native`.
//!
//! The same pipeline code as the Worker, over native SQLite, on the data
//! `tests/bench/native-data.mjs` writes (a profile of N generated
//! LoCoMo-style memories, 250 questions, ~1,000 messages to ingest). It
//! prints each recall stage's p50/p95, the SQL statements one recall and
//! one ingested message run (calls, rows and time), and ingest
//! throughput. Native SQLite is not the Durable Object's, and Wasm is not
//! native code, so the figures are for finding where time goes, not the
//! published ones (`make bench` measures the built Worker in workerd).
//!
//! Usage: `cargo bench --bench stages -- DIR [recall|ingest|first-pass|filtered|cold|text-batch]`
//! (DIR holds `fill.ndjson`, `queries.json`, `ingest.json`; the second
//! argument runs one part only: `first-pass` measures the local vector
//! index's recall and time for several first-pass sizes, `filtered` recall
//! with `make bench`'s filters (as the sample narrows it, then each way of
//! narrowing forced, with the Rust heap one recall holds), `cold` recall on SQLite alone (no turn
//! directory, no codes in memory), `text-batch` what a full-text row costs
//! written in batches of several sizes).

#[path = "../support/mod.rs"]
mod support;

use agent_memory::core::error::Result;
use agent_memory::core::local::bench;
use agent_memory::core::local::vector::{CachedVectorIndex, Packed};
use agent_memory::core::ops::Profile;
use agent_memory::core::ports::{Row, Sql, SqlValue};
use agent_memory::core::recall::directory::TurnDirectory;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;
use support::*;

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

/// Questions whose statements are counted.
const TRACED_QUERIES: usize = 60;

/// SQL that counts the statements it runs: calls, rows, milliseconds.
struct Counted<'a> {
    inner: &'a NativeSql,
    stats: RefCell<HashMap<String, (usize, usize, f64)>>,
}

impl Sql for Counted<'_> {
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>> {
        let t = Instant::now();
        let rows = self.inner.query(sql, params);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let mut shape: String = sql.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(100).collect();
        if sql.contains("+rowid IN") {
            // A full-text query over given rows: the memories' stop words
            // for a recall's candidates, or a narrowed recall's passing set.
            shape.insert_str(0, "[rows] ");
        }
        let mut stats = self.stats.borrow_mut();
        let e = stats.entry(shape).or_default();
        e.0 += 1;
        e.1 += rows.as_ref().map_or(0, |r| r.len());
        e.2 += ms;
        rows
    }
    fn transaction(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        self.inner.transaction(f)
    }
    fn database_size(&self) -> i64 {
        self.inner.database_size()
    }
}

impl Counted<'_> {
    fn print(&self, per: f64, unit: &str) {
        let mut v: Vec<_> = self.stats.borrow().iter().map(|(k, v)| (k.clone(), *v)).collect();
        v.sort_by(|a, b| b.1 .2.total_cmp(&a.1 .2));
        let calls: usize = v.iter().map(|(_, s)| s.0).sum();
        let ms: f64 = v.iter().map(|(_, s)| s.2).sum();
        eprintln!("  {:.1} statements, {:.3} ms per {unit}; the costliest:", calls as f64 / per, ms / per);
        for (shape, (calls, rows, ms)) in v.iter().take(8) {
            eprintln!("  {:7.3} ms {:5.2} calls {:6.1} rows  {shape}", ms / per, *calls as f64 / per, *rows as f64 / per);
        }
    }
}

fn pct(xs: &mut [f64], p: f64) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[(((p / 100.0) * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1]
}

fn read(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("failed to read {}: {e} (run make bench-native)", dir.join(name).display()))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let dir = std::path::Path::new(args.first().map_or("target/bench-native", String::as_str));
    let only = args.get(1).map(String::as_str);
    let fill = read(dir, "fill.ndjson");
    let queries: Vec<String> = serde_json::from_str(&read(dir, "queries.json")).expect("queries");
    let ingest: Vec<Value> = serde_json::from_str(&read(dir, "ingest.json")).expect("ingest requests");

    let sql = database();
    let now = APRIL_15;
    let t = Instant::now();
    let stats = with_profile(&sql, now, |p| {
        block_on(p.dispatch("import", json!({ "data": fill }))).expect("import");
        while block_on(bench::dispatch(p, "benchDrain", &json!({ "limit": 5000 }))).expect("drain")["left"].as_u64() != Some(0) {}
        p.stats().expect("stats")
    });
    eprintln!("filled: {} memories, {} messages in {:.1} s", stats.memories, stats.messages, t.elapsed().as_secs_f64());

    // The index keeps its codes in memory across calls, as in the Durable Object.
    let packed = RefCell::new(Packed::new());
    // So does the turn directory.
    let turns = TurnDirectory::new();
    let profile = |sql: &'_ dyn Sql, index: &'_ CachedVectorIndex<'_>, f: &mut dyn FnMut(&Profile<'_>)| profile_over(sql, index, Some(&turns), now, f);

    if only == Some("first-pass") {
        first_pass(&sql, &queries, &profile);
        return;
    }
    if only == Some("text-batch") {
        text_batch(&sql);
        return;
    }
    if only == Some("filtered") {
        recall_filtered(&sql, &packed, &queries, &profile);
        return;
    }
    if only == Some("cold") {
        recall_cold(&sql, &queries, now);
        return;
    }
    if only != Some("ingest") {
        recall_all(&sql, &packed, &queries, &profile);
    }
    if only != Some("recall") {
        ingest_all(&sql, &packed, &ingest, &profile);
    }
}

/// A profile over `sql` with the local defaults, this `index` and the
/// turn directory `turns` (`None`: SQLite alone).
fn profile_over(sql: &dyn Sql, index: &dyn agent_memory::core::ports::VectorIndex, turns: Option<&TurnDirectory>, now: i64, f: &mut dyn FnMut(&Profile<'_>)) {
    with_profile(&NativeSql::memory(), now, |base| {
        f(&Profile {
            sql,
            index,
            turns,
            name: base.name,
            reasoner: base.reasoner,
            embedder: base.embedder,
            now,
            limits: base.limits,
            memory: base.memory.clone(),
            room: base.room,
        })
    })
}

type WithProfile<'p> = dyn Fn(&dyn Sql, &CachedVectorIndex<'_>, &mut dyn FnMut(&Profile<'_>)) + 'p;

fn recall_all(sql: &NativeSql, packed: &RefCell<Packed>, queries: &[String], profile: &WithProfile<'_>) {
    eprintln!("recall stages over {} questions (each: one run minus the same call with nothing to repeat):", queries.len());
    let index = CachedVectorIndex { sql, packed };
    profile(sql, &index, &mut |p| print_stages(p, queries, &["analyze", "key", "turns", "fts", "messages", "vector", "hyde", "fuse", "recall"]));

    eprintln!("statements of one recall ({TRACED_QUERIES} questions):");
    let counted = Counted { inner: sql, stats: RefCell::new(HashMap::new()) };
    let index = CachedVectorIndex { sql: &counted, packed };
    profile(&counted, &index, &mut |p| trace_recalls(p, queries));
    counted.print(TRACED_QUERIES as f64, "recall");
}

/// Each stage's p50 and p95 over `queries`: one run of the stage minus
/// the same call with nothing to repeat.
fn print_stages(p: &Profile<'_>, queries: &[String], stages: &[&str]) {
    for stage in stages {
        let mut xs = Vec::new();
        for q in queries {
            let t = Instant::now();
            block_on(bench::stage(p, q, stage, 1)).expect("stage");
            let whole = t.elapsed().as_secs_f64();
            let t = Instant::now();
            block_on(bench::stage(p, q, stage, 0)).expect("stage");
            xs.push((whole - t.elapsed().as_secs_f64()) * 1000.0);
        }
        eprintln!("  {stage:>9}: p50 {:6.2} ms  p95 {:6.2} ms", pct(&mut xs, 50.0), pct(&mut xs, 95.0));
    }
}

/// Runs `recall` for each of `queries` and prints its time's p50 and p95
/// and the most Rust heap one call held above what was live before it.
fn timed(label: &str, queries: &[String], recall: &mut dyn FnMut(&str)) {
    let (mut xs, mut heap) = (Vec::new(), Vec::new());
    for q in queries {
        heap::reset_peak();
        let before = heap::live();
        let t = Instant::now();
        recall(q);
        xs.push(t.elapsed().as_secs_f64() * 1000.0);
        heap.push((heap::peak() - before) as f64 / 1e6);
    }
    let (p50, p95, h50, hmax) = (pct(&mut xs, 50.0), pct(&mut xs, 95.0), pct(&mut heap, 50.0), pct(&mut heap, 100.0));
    eprintln!("  {label:>36}: p50 {p50:6.2} ms  p95 {p95:6.2} ms  heap p50 {h50:5.2} MB  max {hmax:5.2} MB");
}

/// The first [`TRACED_QUERIES`] recalls, for their statements to be counted.
fn trace_recalls(p: &Profile<'_>, queries: &[String]) {
    for q in queries.iter().take(TRACED_QUERIES) {
        block_on(bench::stage(p, q, "recall", 1)).expect("recall");
    }
}

/// Whole recalls with `make bench`'s filters beside the same recalls
/// unfiltered (state resident), and the statements of each.
fn recall_filtered(sql: &NativeSql, packed: &RefCell<Packed>, queries: &[String], profile: &WithProfile<'_>) {
    let filters = bench_filters();
    let request = recall_request;
    let index = CachedVectorIndex { sql, packed };
    profile(sql, &index, &mut |p| {
        // Warm: the codes and the directory loaded.
        block_on(p.dispatch("recall", request(&queries[0], &None))).expect("recall");
        eprintln!("  (heap: the most Rust heap one recall holds above what was live before it, a counting allocator)");
        for (name, f) in &filters {
            timed(name, queries, &mut |q| {
                block_on(p.dispatch("recall", request(q, f))).expect("recall");
            });
        }
        // Each way of narrowing forced, beside the sampled choice above.
        use agent_memory::core::recall::{run_in, Narrowing, RecallScope};
        for (name, f) in filters.iter().filter(|(_, f)| f.is_some()) {
            for how in [Narrowing::Walk, Narrowing::Ahead] {
                timed(&format!("{name}, {how:?}"), queries, &mut |q| {
                    let req: agent_memory::core::api::RecallRequest = serde_json::from_value(request(q, f)).expect("a request");
                    let scope = RecallScope::new(&req, p.now).expect("scope").narrow(p.sql, how).expect("narrow");
                    block_on(run_in(p, scope)).expect("recall");
                });
            }
        }
    });
    for (name, f) in &filters {
        eprintln!("statements of one recall, {name} ({TRACED_QUERIES} questions):");
        let counted = Counted { inner: sql, stats: RefCell::new(HashMap::new()) };
        let index = CachedVectorIndex { sql: &counted, packed };
        profile(&counted, &index, &mut |p| {
            for q in queries.iter().take(TRACED_QUERIES) {
                block_on(p.dispatch("recall", request(q, f))).expect("recall");
            }
        });
        counted.print(TRACED_QUERIES as f64, "recall");
    }
}

/// Recall on SQLite alone, as a profile over the memory budget answers:
/// no turn directory, the vector codes streamed from their snapshot on
/// every query. The same stages and statement counts as [`recall_all`].
fn recall_cold(sql: &NativeSql, queries: &[String], now: i64) {
    use agent_memory::core::local::vector::SqlVectorIndex;
    let run = |sql: &dyn Sql, f: &mut dyn FnMut(&Profile<'_>)| profile_over(sql, &SqlVectorIndex { sql }, None, now, f);
    // The snapshot the alarm keeps: the codes stream from it, not the rows.
    run(sql, &mut |p| {
        block_on(p.index.maintain()).expect("snapshot");
    });
    eprintln!("recall stages on SQLite alone over {} questions (each: one run minus the same call with nothing to repeat):", queries.len());
    run(sql, &mut |p| print_stages(p, queries, &["key", "turns", "fts", "messages", "vector", "hyde", "fuse", "recall"]));
    eprintln!("statements of one recall on SQLite alone ({TRACED_QUERIES} questions):");
    let counted = Counted { inner: sql, stats: RefCell::new(HashMap::new()) };
    run(&counted, &mut |p| trace_recalls(p, queries));
    counted.print(TRACED_QUERIES as f64, "recall");
    eprintln!("whole recalls on SQLite alone, with make bench's filters (heap: the most Rust heap one recall holds above what was live before it):");
    run(sql, &mut |p| {
        for (name, f) in bench_filters() {
            timed(name, queries, &mut |q| {
                block_on(p.dispatch("recall", recall_request(q, &f))).expect("recall");
            });
        }
    });
}

/// `make bench`'s filters: none, one on an indexed scope key (~10%
/// pass), one on a metadata field no index serves (~40%).
fn bench_filters() -> [(&'static str, Option<Value>); 3] {
    [
        ("unfiltered", None),
        ("agentId agent-3 (indexed)", Some(json!({"agentId": "agent-3"}))),
        ("priority >= 3 (not indexed)", Some(json!({"priority": {"gte": 3}}))),
    ]
}

fn recall_request(q: &str, f: &Option<Value>) -> Value {
    match f {
        Some(f) => json!({ "query": q, "filter": f }),
        None => json!({ "query": q }),
    }
}

/// Recall@k of the local index against an exact scan, and its time per
/// query, for first passes of several sizes (k = 10, and a channel's
/// depth). What `vector::first_pass` is chosen by.
fn first_pass(sql: &NativeSql, queries: &[String], profile: &WithProfile<'_>) {
    use agent_memory::core::local::vector::{cosine, decode, search};
    use agent_memory::core::recall::channels::CHANNEL_DEPTH;
    let packed = RefCell::new(Packed::new());
    let index = CachedVectorIndex { sql, packed: &packed };
    profile(sql, &index, &mut |p| {
        let vectors = block_on(p.embedder.embed(queries)).expect("embed");
        let all: Vec<(String, Vec<f32>)> = sql
            .query("SELECT memory_id, vector FROM vectors", &[])
            .expect("vectors")
            .into_iter()
            .map(|r| (r[0].as_str().unwrap().to_string(), decode(r[1].as_blob().unwrap())))
            .collect();
        let exact = |q: &[f32], k: usize| {
            let mut s: Vec<(f32, &str)> = all.iter().map(|(id, v)| (cosine(q, v), id.as_str())).collect();
            s.sort_by(|a, b| b.0.total_cmp(&a.0));
            s.into_iter().take(k).map(|(_, id)| id.to_string()).collect::<Vec<_>>()
        };
        eprintln!("local vector index over {} vectors, {} queries:", all.len(), queries.len());
        for fp in [250, 500, 1000, 1500, 2000, 3000] {
            let mut line = format!("  first pass {fp:>5}:");
            for k in [10, CHANNEL_DEPTH] {
                let (mut hit, mut total, mut ms) = (0, 0, 0.0);
                for q in &vectors {
                    let want = exact(q, k);
                    let t = Instant::now();
                    let got = search(sql, &mut packed.borrow_mut(), q, k, fp).expect("search");
                    ms += t.elapsed().as_secs_f64() * 1000.0;
                    total += want.len();
                    hit += want.iter().filter(|id| got.iter().any(|(g, _)| g == *id)).count();
                }
                line += &format!("  recall@{k} {:.3} ({:.2} ms)", hit as f64 / total as f64, ms / vectors.len() as f64);
            }
            eprintln!("{line}");
        }
    });
}

fn ingest_all(sql: &NativeSql, packed: &RefCell<Packed>, ingest: &[Value], profile: &WithProfile<'_>) {
    let counted = Counted { inner: sql, stats: RefCell::new(HashMap::new()) };
    let index = CachedVectorIndex { sql: &counted, packed };
    let mut stored = 0;
    let t = Instant::now();
    profile(&counted, &index, &mut |p| {
        for req in ingest {
            stored += block_on(p.dispatch("ingest", req.clone())).expect("ingest")["messagesStored"].as_u64().unwrap_or(0);
        }
    });
    let secs = t.elapsed().as_secs_f64();
    eprintln!("ingest: {stored} messages in {:.2} s, {:.0} messages/s; statements per message:", secs, stored as f64 / secs);
    counted.print(stored.max(1) as f64, "message");
}

/// What one full-text row costs written in batches of several sizes
/// (`core::store::TEXT_BATCH`): the profile's memories' texts, all but
/// the last 4,000 indexed first, then those 4,000 in transactions of a
/// batch each, into a fresh FTS5 table like `memories_fts`.
fn text_batch(sql: &NativeSql) {
    let texts: Vec<Row> =
        sql.query(&format!("SELECT {} FROM memories m ORDER BY m.rowid", agent_memory::core::store::MEMORY_FTS_COLUMNS), &[]).expect("memories' texts");
    let timed = 4000.min(texts.len() / 2);
    let (before, after) = texts.split_at(texts.len() - timed);
    eprintln!("full-text rows: {} indexed first, then {timed} in batches (one transaction each):", before.len());
    for batch in [20, 200, 1024, 2000] {
        let db = NativeSql::memory();
        db.execute("CREATE VIRTUAL TABLE f USING fts5(content, key, queries, tokenize='porter unicode61')", &[]).expect("table");
        let insert = |rows: &[Row]| {
            db.transaction(&mut || {
                for r in rows {
                    db.execute("INSERT INTO f (content, key, queries) VALUES (?1, ?2, ?3)", &r[..3])?;
                }
                Ok(())
            })
            .expect("insert")
        };
        insert(before);
        let t = Instant::now();
        for rows in after.chunks(batch) {
            insert(rows);
        }
        eprintln!("  batches of {batch:>4}: {:6.1} µs per row", t.elapsed().as_secs_f64() * 1e6 / timed as f64);
    }
}
