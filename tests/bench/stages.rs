//! Native profile of the recall stages and ingest: `cargo bench --bench stages -- FILL QUERIES INGEST`.
#[path = "../support/mod.rs"]
mod support;

use agent_memory::core::local::bench;
use serde_json::{json, Value};
use std::time::Instant;
use support::*;
use agent_memory::core::ports::{Row, Sql, SqlValue};
use agent_memory::core::error::Result;
use std::cell::RefCell;
use std::collections::HashMap;

struct Timed<'a> {
    inner: &'a NativeSql,
    on: std::cell::Cell<bool>,
    stats: RefCell<HashMap<String, (usize, f64, usize)>>,
    log: RefCell<Vec<Value>>,
}
impl Sql for Timed<'_> {
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>> {
        let t = Instant::now();
        let r = self.inner.query(sql, params);
        if self.on.get() {
            let key: String = sql.split("IN (").next().unwrap().chars().take(110).collect();
            let mut st = self.stats.borrow_mut();
            let e = st.entry(key).or_default();
            e.0 += 1;
            e.1 += t.elapsed().as_secs_f64() * 1000.0;
            e.2 += r.as_ref().map(|r| r.len()).unwrap_or(0);
            let ps: Vec<Value> = params.iter().map(|p| match p { SqlValue::Integer(i) => json!(i), SqlValue::Real(f) => json!(f), SqlValue::Text(t) => json!(t), _ => Value::Null }).collect();
            self.log.borrow_mut().push(json!({ "sql": sql, "params": ps }));
        }
        r
    }
    fn transaction(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()> { self.inner.transaction(f) }
    fn database_size(&self) -> i64 { self.inner.database_size() }
}

fn pct(xs: &mut Vec<f64>, p: f64) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[((p / 100.0) * xs.len() as f64).ceil() as usize - 1]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let fill = std::fs::read_to_string(&args[0]).unwrap();
    let queries: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let ingest: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&args[2]).unwrap()).unwrap();
    let sql = database();
    let now = 1_800_000_000_000;
    with_profile(&sql, now, |p| {
        let t = Instant::now();
        block_on(p.dispatch("import", json!({ "data": fill }))).unwrap();
        eprintln!("import {:.1} s", t.elapsed().as_secs_f64());
        let t = Instant::now();
        loop {
            let d = block_on(bench::dispatch(p, "benchDrain", &json!({ "limit": 5000 }))).unwrap();
            if d["left"].as_u64() == Some(0) { break; }
        }
        eprintln!("drain {:.1} s", t.elapsed().as_secs_f64());
        let packed = std::cell::RefCell::new(agent_memory::core::local::vector::Packed::new());
        let cached = agent_memory::core::local::vector::CachedVectorIndex { sql: &sql, packed: &packed };
        let p = &agent_memory::core::ops::Profile { name: p.name, sql: &sql, index: &cached, reasoner: p.reasoner, embedder: p.embedder, now: p.now, limits: p.limits.clone() };
        if let Ok(path) = std::env::var("SAVE") {
            sql.execute(&format!("VACUUM INTO '{path}'"), &[]).unwrap();
            return;
        }
        if std::env::var("STMTS").is_ok() {
            let timed = Timed { inner: &sql, on: std::cell::Cell::new(true), stats: RefCell::new(HashMap::new()), log: RefCell::new(Vec::new()) };
            let index = agent_memory::core::local::vector::CachedVectorIndex { sql: &timed, packed: &packed };
            let tp = agent_memory::core::ops::Profile { sql: &timed, index: &index, name: p.name, reasoner: p.reasoner, embedder: p.embedder, now: p.now, limits: p.limits.clone() };
            let ingest_mode = std::env::var("STMTS").as_deref() == Ok("ingest");
            if ingest_mode {
                for s in &ingest { block_on(tp.dispatch("ingest", s.clone())).unwrap(); }
            } else {
                for q in queries.iter().take(60) { block_on(bench::stage(&tp, q, "recall", 1)).unwrap(); }
            }
            std::fs::write("/tmp/prof/stmts.json", serde_json::to_string(&*timed.log.borrow()).unwrap()).unwrap();
            let mut v: Vec<_> = timed.stats.borrow().iter().map(|(k, v)| (k.clone(), *v)).collect();
            v.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
            let nq = if ingest_mode { 1013.0 } else { 60.0 };
            for (k, (n, ms, rows)) in v.iter().take(25) {
                eprintln!("{:7.3} ms/q {:6.1} calls/q {:7.1} rows/q  {}", ms / nq, *n as f64 / nq, *rows as f64 / nq, k);
            }
            return;
        }
        if let Ok(only) = std::env::var("ONLY") {
            let t = Instant::now();
            for _ in 0..4 { for q in &queries { block_on(bench::stage(p, q, &only, 1)).unwrap(); } }
            eprintln!("{only}: {:.2} ms per query", t.elapsed().as_secs_f64() * 1000.0 / (4 * queries.len()) as f64);
            return;
        }
        let stages = ["analyze", "key", "turns", "fts", "messages", "vector", "hyde", "fuse", "recall"];
        for s in stages {
            let mut xs = Vec::new();
            for q in &queries {
                let t = Instant::now();
                block_on(bench::stage(p, q, s, 1)).unwrap();
                let whole = t.elapsed().as_secs_f64();
                let t = Instant::now();
                block_on(bench::stage(p, q, s, 0)).unwrap();
                xs.push((whole - t.elapsed().as_secs_f64()) * 1000.0);
            }
            let p50 = pct(&mut xs, 50.0);
            let p95 = pct(&mut xs, 95.0);
            eprintln!("{s:>10}: p50 {p50:.2} ms p95 {p95:.2} ms");
        }
        let t = Instant::now();
        let mut n = 0;
        for s in &ingest {
            let r = block_on(p.dispatch("ingest", s.clone())).unwrap();
            n += r["messagesStored"].as_u64().unwrap();
        }
        eprintln!("ingest {n} msgs in {:.2} s = {:.0} msg/s", t.elapsed().as_secs_f64(), n as f64 / t.elapsed().as_secs_f64());
    });
}
