//! Benchmark-only operations (`make bench`): the Durable Object answers
//! them only when the Worker runs with `BENCH=1`. They let the benchmark
//! time each recall stage on its own, run one bare FTS5 query for
//! comparison, fill the vector index in large batches, and measure the
//! local index's recall against an exact scan, all on the same data.
//!
//! Timing happens outside: inside a Worker the clock stands still while
//! code runs, so a stage is repeated `repeat` times and the caller compares
//! round trips with `repeat` = R and 0.

// Exception to the core's panic lints (src/core/mod.rs): benchmark
// operations, answered only with BENCH=1, never by the product's routes.
#![allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::core::api::RecallRequest;
use crate::core::error::{Error, Result};
use crate::core::jobs::JobKind;
use crate::core::local::vector::{cosine, decode};
use crate::core::ops::Profile;
use crate::core::ports::SqlValue;
use crate::core::recall::places::{with_source, Source};
use crate::core::recall::{channels, fuse, query};
use serde_json::{json, Value};

/// Whether `op` is one of these.
pub fn is_bench_op(op: &str) -> bool {
    op.starts_with("bench")
}

fn str_arg<'v>(args: &'v Value, name: &str) -> Result<&'v str> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| Error::invalid(format!("{name} is required")))
}

fn usize_arg(args: &Value, name: &str, default: usize) -> usize {
    args.get(name).and_then(Value::as_u64).map_or(default, |v| v as usize)
}

/// Runs one benchmark operation.
pub async fn dispatch(p: &Profile<'_>, op: &str, args: &Value) -> Result<Value> {
    match op {
        "benchPing" => Ok(json!({})),
        "benchFts" => bare_fts(p, str_arg(args, "query")?, usize_arg(args, "repeat", 1)),
        "benchStage" => stage(p, str_arg(args, "query")?, str_arg(args, "stage")?, usize_arg(args, "repeat", 1)).await,
        "benchDrain" => drain(p, usize_arg(args, "limit", 2000)).await,
        "benchIndexText" => Ok(json!({ "indexed": p.store().write_waiting_text()? })),
        "benchVectorRecall" => vector_recall(p, args, usize_arg(args, "k", 10)).await,
        "benchIngest" => {
            // The same messages ingested `repeat` times under fresh session
            // ids: the ingest pipeline's cost inside the Durable Object.
            let mut stored = 0;
            for i in 0..usize_arg(args, "repeat", 1) {
                let mut req = args.clone();
                let sid = format!("{}-{i}", str_arg(args, "sessionId")?);
                if let Value::Object(m) = &mut req {
                    m.remove("repeat");
                    m.insert("sessionId".into(), Value::String(sid));
                }
                stored += p.ingest(crate::core::api::parse(req)?).await?.messages_stored;
            }
            Ok(json!({ "stored": stored }))
        }
        "benchReplay" => replay(p, str_arg(args, "query")?, usize_arg(args, "repeat", 1)).await,
        "benchSql" => {
            // One statement's round trip: `SELECT 1`, or a point lookup.
            let sql = if args.get("lookup").and_then(Value::as_bool) == Some(true) {
                "SELECT id, summary FROM memories WHERE id = (SELECT max(id) FROM memories)"
            } else {
                "SELECT 1"
            };
            for _ in 0..usize_arg(args, "repeat", 1) {
                p.sql.query(sql, &[])?;
            }
            Ok(json!({}))
        }
        other => Err(Error::not_found(format!("no operation named {other}"))),
    }
}

/// One bare FTS5 query: the query's content words OR-ed, bm25, top 10
/// memories with their content. What a minimal service would run.
pub fn bare_fts(p: &Profile<'_>, query: &str, repeat: usize) -> Result<Value> {
    let terms = crate::core::text::content_words(query);
    let Some(expr) = query::match_expr(&terms) else { return Ok(json!({ "hits": 0 })) };
    crate::core::store::FullText::Memories.catch_up(p.sql)?;
    let mut hits = 0;
    for _ in 0..repeat {
        hits = p
            .sql
            .query(
                "SELECT m.id, m.content FROM memories_fts f JOIN memories m ON m.rowid = f.rowid \
                 WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts) LIMIT 10",
                &[SqlValue::Text(expr.clone())],
            )?
            .len();
    }
    Ok(json!({ "hits": hits }))
}

/// SQL that keeps every statement it runs, to run them again.
struct Recorded<'a> {
    inner: &'a dyn crate::core::ports::Sql,
    log: std::cell::RefCell<Vec<(String, Vec<SqlValue>)>>,
}

impl crate::core::ports::Sql for Recorded<'_> {
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<crate::core::ports::Row>> {
        self.log.borrow_mut().push((sql.to_string(), params.to_vec()));
        self.inner.query(sql, params)
    }
    fn transaction(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        self.inner.transaction(f)
    }
    fn database_size(&self) -> i64 {
        self.inner.database_size()
    }
}

/// Runs one recall, keeping its statements (those of the vector index's
/// own reads excepted), then runs those statements again `repeat` times:
/// what the SQL of a recall costs inside the Durable Object, the crossing
/// of the Wasm boundary included. A recall's cost minus this is its
/// Wasm compute.
pub async fn replay(p: &Profile<'_>, query: &str, repeat: usize) -> Result<Value> {
    // Full-text rows still waiting are written first, so the recording
    // holds the recall's reads only (a replayed catch-up would write rows
    // already there).
    p.store().write_waiting_text()?;
    let rec = Recorded { inner: p.sql, log: Default::default() };
    let recording = Profile {
        name: p.name,
        sql: &rec,
        reasoner: p.reasoner,
        embedder: p.embedder,
        index: p.index,
        turns: p.turns,
        now: p.now,
        limits: p.limits,
        memory: p.memory.clone(),
        room: p.room,
    };
    let req: RecallRequest = crate::core::api::parse(json!({ "query": query }))?;
    recording.recall(req).await?;
    let log = rec.log.into_inner();
    let mut rows = 0;
    for _ in 0..repeat {
        for (sql, params) in &log {
            rows += p.sql.query(sql, params)?.len();
        }
    }
    Ok(json!({ "statements": log.len(), "rows": rows }))
}

/// Runs one recall stage `repeat` times, its inputs prepared once.
pub async fn stage(p: &Profile<'_>, query: &str, stage: &str, repeat: usize) -> Result<Value> {
    let scope = crate::core::recall::RecallScope::live_at(p.now).sized(p.store().texts_stored_about()?);
    let analysis = p.reasoner.analyze(query).await?;
    let texts = vec![query.to_string(), if analysis.hyde.is_empty() { query.to_string() } else { analysis.hyde.clone() }];
    let embeddings = p.embedder.embed(&texts).await?;
    let reference = chrono::DateTime::from_timestamp_millis(p.now).unwrap_or_default().date_naive();
    // The full-text query as recall builds it. Each text stage syncs the
    // turn directory (one statement, as a recall does) and lends it out
    // only while it runs: no await holds it.
    let on_source = |f: &dyn Fn(Source<'_>) -> Result<usize>| with_source(p.sql, p.turns, f);
    let q = with_source(p.sql, p.turns, |src| crate::core::recall::text_query(p.sql, src, query, &analysis.terms, reference))?;
    let mut out = 0usize;
    match stage {
        "analyze" => {
            for _ in 0..repeat {
                out = p.reasoner.analyze(query).await?.terms.len();
            }
        }
        "embed" => {
            for _ in 0..repeat {
                out = p.embedder.embed(&texts).await?.len();
            }
        }
        "key" => {
            for _ in 0..repeat {
                out = channels::key(p.sql, &analysis.keys, &scope)?.ids.len();
            }
        }
        "turns" => {
            // The message scoring both text channels share in a recall
            // (the fts and messages stages each include it).
            for _ in 0..repeat {
                out = on_source(&|src| Ok(channels::score_turns(p.sql, src, &q, &scope)?.context.len()))?;
            }
        }
        "fts" => {
            for _ in 0..repeat {
                out = on_source(&|src| Ok(channels::fts(p.sql, src, &q, &scope)?.ids.len()))?;
            }
        }
        "messages" => {
            for _ in 0..repeat {
                out = on_source(&|src| Ok(channels::messages(p.sql, src, &q, &scope)?.0.ids.len()))?;
            }
        }
        "vector" | "hyde" => {
            let (channel, e) = if stage == "vector" { (fuse::Channel::Vector, &embeddings[0]) } else { (fuse::Channel::Hyde, &embeddings[1]) };
            for _ in 0..repeat {
                out = channels::vector(channel, p.sql, p.index, e, &scope).await?.ids.len();
            }
        }
        "vectorIndex" => {
            // The index alone (no live-status filter).
            for _ in 0..repeat {
                out = p.index.query(&embeddings[0], channels::CHANNEL_DEPTH).await?.len();
            }
        }
        "fuse" => {
            // Fusion of the channels' rankings, then loading the winners:
            // what recall does between the channels and synthesis.
            let (fts, messages) =
                with_source(p.sql, p.turns, |src| Ok((channels::fts(p.sql, src, &q, &scope)?, channels::messages(p.sql, src, &q, &scope)?.0)))?;
            // The directory's borrow ends here, before any await.
            let key = channels::key(p.sql, &analysis.keys, &scope)?;
            let rankings = vec![
                key,
                fts,
                messages,
                channels::vector(fuse::Channel::Vector, p.sql, p.index, &embeddings[0], &scope).await?,
                channels::vector(fuse::Channel::Hyde, p.sql, p.index, &embeddings[1], &scope).await?,
            ];
            let weights = fuse::Weights::new(p.embedder.kind()).with_lexical_match(crate::core::recall::lexical_match(p, &scope, &rankings));
            for _ in 0..repeat {
                let mut fused = fuse::fuse(&rankings, weights);
                fused.truncate(crate::core::api::DEFAULT_RECALL_LIMIT);
                out = p.store().memories_by_ids(&fused.iter().map(|f| f.id.clone()).collect::<Vec<_>>())?.len();
            }
        }
        "recall" => {
            for _ in 0..repeat {
                let req: RecallRequest = crate::core::api::parse(json!({ "query": query }))?;
                out = p.recall(req).await?.count;
            }
        }
        other => return Err(Error::invalid(format!("unknown stage {other}"))),
    }
    Ok(json!({ "stage": stage, "out": out }))
}

/// Embeds up to `limit` pending embed jobs in one embedder request (the
/// alarm's drain sends at most 64 texts per request): fills the index
/// quickly after a bulk import.
pub async fn drain(p: &Profile<'_>, limit: usize) -> Result<Value> {
    let store = p.store();
    let jobs: Vec<(i64, String)> = p
        .sql
        .query("SELECT id, memory_id FROM outbox WHERE kind = ? ORDER BY id LIMIT ?", &[JobKind::Embed.as_str().into(), SqlValue::Integer(limit as i64)])?
        .into_iter()
        .filter_map(|r| Some((r[0].as_i64()?, r[1].opt_string()?)))
        .collect();
    let embedded = crate::core::background::embed_memories(p, &jobs.iter().map(|j| j.1.clone()).collect::<Vec<_>>()).await?;
    store.finish_jobs(&jobs.iter().map(|j| j.0).collect::<Vec<_>>())?;
    let left = p.sql.query("SELECT COUNT(*) FROM outbox WHERE kind = ?", &[JobKind::Embed.as_str().into()])?.first().and_then(|r| r[0].as_i64()).unwrap_or(0);
    Ok(json!({ "embedded": embedded, "jobs": jobs.len(), "left": left }))
}

/// recall@k of the index against an exact cosine scan over every stored
/// vector, for the given query texts (one pass over the vectors for all).
pub async fn vector_recall(p: &Profile<'_>, args: &Value, k: usize) -> Result<Value> {
    let queries: Vec<String> =
        args.get("queries").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default();
    if queries.is_empty() {
        return Err(Error::invalid("queries is required"));
    }
    let vectors = p.embedder.embed(&queries).await?;
    let mut got = Vec::with_capacity(vectors.len());
    for v in &vectors {
        got.push(p.index.query(v, k).await?.into_iter().map(|(id, _)| id).collect::<Vec<_>>());
    }
    // Exact: one paged scan, a running top-k per query.
    let mut best: Vec<Vec<(f32, String)>> = vec![Vec::new(); vectors.len()];
    let mut after = crate::core::local::vector::BEFORE_FIRST_ROWID;
    let mut n = 0usize;
    loop {
        let rows = p.sql.query("SELECT rowid, memory_id, vector FROM vectors WHERE rowid > ? ORDER BY rowid LIMIT 2000", &[SqlValue::Integer(after)])?;
        let Some(last) = rows.last() else { break };
        after = last[0].as_i64().unwrap_or(i64::MAX);
        let full = rows.len() == 2000;
        for r in rows {
            let (Some(id), Some(b)) = (r[1].as_str(), r[2].as_blob()) else { continue };
            n += 1;
            let v = decode(b);
            for (qi, q) in vectors.iter().enumerate() {
                let s = cosine(q, &v);
                let top = &mut best[qi];
                if top.len() < k || s > top[top.len() - 1].0 {
                    top.push((s, id.to_string()));
                    top.sort_by(|a, b| b.0.total_cmp(&a.0));
                    top.truncate(k);
                }
            }
        }
        if !full {
            break;
        }
    }
    let mut hit = 0usize;
    let mut total = 0usize;
    for (qi, exact) in best.iter().enumerate() {
        total += exact.len();
        hit += exact.iter().filter(|(_, id)| got[qi].contains(id)).count();
    }
    Ok(json!({ "k": k, "queries": vectors.len(), "vectors": n, "recall": if total == 0 { 1.0 } else { hit as f64 / total as f64 } }))
}
