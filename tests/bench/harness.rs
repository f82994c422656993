//! The parts of the evidence-recall harness (`cargo bench --bench locomo`)
//! shared by its two readers (LoCoMo's, in `locomo.rs`, and LongMemEval's,
//! in `longmemeval.rs`) and by `tests/longmemeval_reader.rs`: the turns a
//! profile ingests, the pipeline (a native profile or a live Worker), the
//! FTS5 bm25 baseline over raw turns, and the recall@k tallies.
//!
//! Included with `#[path]` by a crate root that also declares
//! `mod support` (tests/support/mod.rs).

#![allow(dead_code)]

use crate::support;
use crate::support::openai_embed::OpenAiEmbedder;
use agent_memory::core::api::{IngestRequest, RecallOptions, RecallRequest};
use agent_memory::core::model::MessageInput;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::rc::Rc;
use std::time::Duration;

/// Cut-offs reported.
pub const KS: [usize; 3] = [5, 10, 20];
/// Candidates asked of recall (and of the baseline).
pub const LIMIT: usize = 20;

// ---- the data ---------------------------------------------------------

/// One turn as a profile ingests it.
pub struct Turn {
    pub dia_id: String,
    pub speaker: String,
    /// The text (LoCoMo's with the shared image's caption appended).
    pub content: String,
}

/// One session: its turns ingested in one request, at its date.
pub struct Session {
    pub number: usize,
    /// ISO-8601 UTC.
    pub timestamp: String,
    pub millis: i64,
    pub turns: Vec<Turn>,
}

// ---- scoring ----------------------------------------------------------

/// Share of `evidence` among the first `k` of `ranked` turns.
pub fn recall_at(ranked: &[String], evidence: &[String], k: usize) -> f64 {
    let top: HashSet<&String> = ranked.iter().take(k).collect();
    evidence.iter().filter(|e| top.contains(e)).count() as f64 / evidence.len() as f64
}

#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub n: usize,
    pub sums: [f64; 3],
}

impl Tally {
    pub fn add(&mut self, ranked: &[String], evidence: &[String]) {
        self.n += 1;
        for (i, k) in KS.iter().enumerate() {
            self.sums[i] += recall_at(ranked, evidence, *k);
        }
    }
    pub fn mean(&self, i: usize) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sums[i] / self.n as f64
        }
    }
}

/// Distinct turns, first occurrence order, of candidates' source messages.
pub fn turns_of(candidates: &[Vec<String>], dia_of: &HashMap<String, String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for sources in candidates {
        for m in sources {
            if let Some(d) = dia_of.get(m) {
                if !out.contains(d) {
                    out.push(d.clone());
                }
            }
        }
    }
    out
}

// ---- the baseline: FTS5 bm25 over raw turns -----------------------------

/// How the baseline treats long turns: whole (the fixed baseline), or
/// also as passages of `words` words (half-overlapping windows), a turn
/// then scoring its own bm25 plus `mix` times its best passage's, or its
/// best passage's alone (`mix` = None). Set by `LOCOMO_PASSAGES=<words>`
/// and `LOCOMO_PASSAGE_MIX=<mix>|only` (default `only`): the measurement
/// of passage scoring in docs/bench/generalization/passages.txt.
#[derive(Clone, Copy, Debug)]
struct Passages {
    words: usize,
    mix: Option<f64>,
}

impl Passages {
    fn from_env() -> Option<Passages> {
        let words: usize = std::env::var("LOCOMO_PASSAGES").ok()?.parse().ok().filter(|&w| w > 0)?;
        let mix = match std::env::var("LOCOMO_PASSAGE_MIX").ok().as_deref() {
            None | Some("only") => None,
            Some(v) => Some(v.parse().expect("LOCOMO_PASSAGE_MIX: a number or `only`")),
        };
        Some(Passages { words, mix })
    }

    /// The passages of `text`: windows of `words` words, every `words / 2`.
    fn of(self, text: &str) -> Vec<String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let stride = (self.words / 2).max(1);
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let end = (start + self.words).min(words.len());
            out.push(words[start..end].join(" "));
            if end == words.len() {
                return out;
            }
            start += stride;
        }
    }
}

pub struct Baseline {
    pub conn: rusqlite::Connection,
    passages: Option<Passages>,
}

impl Baseline {
    /// A turn's text, by its id.
    pub fn text(&self, dia_id: &str) -> Option<String> {
        self.conn.query_row("SELECT text FROM turns WHERE dia_id = ?", [dia_id], |r| r.get(0)).ok()
    }

    /// An index over every turn of `sessions` (and their passages, with
    /// `LOCOMO_PASSAGES`).
    pub fn new<'a>(sessions: impl IntoIterator<Item = &'a Session>) -> Baseline {
        let passages = Passages::from_env();
        let conn = rusqlite::Connection::open_in_memory().expect("open sqlite");
        conn.execute_batch(
            "CREATE VIRTUAL TABLE turns USING fts5(dia_id UNINDEXED, speaker, text, tokenize='porter unicode61'); \
             CREATE VIRTUAL TABLE passages USING fts5(dia_id UNINDEXED, speaker, text, tokenize='porter unicode61');",
        )
        .expect("create fts5");
        {
            let mut ins = conn.prepare("INSERT INTO turns (dia_id, speaker, text) VALUES (?, ?, ?)").expect("prepare");
            let mut pins = conn.prepare("INSERT INTO passages (dia_id, speaker, text) VALUES (?, ?, ?)").expect("prepare");
            for s in sessions {
                for t in &s.turns {
                    ins.execute([&t.dia_id, &t.speaker, &t.content]).expect("insert turn");
                    for p in passages.map(|p| p.of(&t.content)).unwrap_or_default() {
                        pins.execute([&t.dia_id, &t.speaker, &p]).expect("insert passage");
                    }
                }
            }
        }
        Baseline { conn, passages }
    }

    /// Each turn's best bm25 in `table` for `expr` (as a positive score),
    /// over the best `limit` rows.
    fn scores(&self, table: &str, expr: &str, limit: usize) -> HashMap<String, f64> {
        let mut stmt =
            self.conn.prepare(&format!("SELECT dia_id, -bm25({table}) FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}) LIMIT ?")).expect("prepare");
        let mut best: HashMap<String, f64> = HashMap::new();
        let rows = stmt.query_map(rusqlite::params![expr, limit as i64], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?))).expect("query");
        for (id, s) in rows.flatten() {
            let e = best.entry(id).or_insert(f64::MIN);
            *e = e.max(s);
        }
        best
    }

    pub fn search(&self, question: &str) -> Vec<String> {
        let words: Vec<String> = question.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| format!("\"{w}\"")).collect();
        if words.is_empty() {
            return vec![];
        }
        let expr = words.join(" OR ");
        let mut scored: Vec<(String, f64)> = match self.passages {
            None => {
                // The fixed baseline: the turns in bm25's order.
                let mut stmt = self.conn.prepare("SELECT dia_id FROM turns WHERE turns MATCH ? ORDER BY bm25(turns) LIMIT ?").expect("prepare");
                let rows = stmt.query_map(rusqlite::params![expr, LIMIT as i64], |r| r.get::<_, String>(0)).expect("query");
                let mut out = Vec::new();
                for r in rows.flatten() {
                    if !out.contains(&r) {
                        out.push(r);
                    }
                }
                return out;
            }
            Some(p) => {
                let best = self.scores("passages", &expr, 8 * LIMIT);
                let mut score: HashMap<String, f64> = match p.mix {
                    None => HashMap::new(),
                    Some(_) => self.scores("turns", &expr, 4 * LIMIT),
                };
                for (id, s) in best {
                    *score.entry(id).or_insert(0.0) += p.mix.unwrap_or(1.0) * s;
                }
                score.into_iter().collect()
            }
        };
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        scored.into_iter().take(LIMIT).map(|(id, _)| id).collect()
    }
}

// ---- the pipeline: native or over REST ----------------------------------

pub trait Memory {
    /// Ingests one session; returns the message ids in request order.
    fn ingest(&mut self, session: &Session, session_id: &str) -> Vec<String>;
    /// Ids of the messages some live memory cites (native only): the
    /// ceiling extraction sets on any memory-based recall.
    fn cited(&self) -> Option<HashSet<String>> {
        None
    }
    /// Memories by status (native only).
    fn statuses(&self) -> Vec<(String, i64)> {
        vec![]
    }
    /// Each channel's own ranking as source-message lists (native only,
    /// with `LOCOMO_CHANNELS=1`): which channel finds what.
    fn channels(&mut self, _question: &str, _reference: &Session) -> Vec<(String, Vec<Vec<String>>)> {
        vec![]
    }
    /// The profile as export NDJSON (native).
    fn export(&self) -> Option<String> {
        None
    }
    /// Active memories and the bytes of their content (native).
    fn active(&self) -> Option<(i64, i64)> {
        None
    }
    /// Whether some active memory's content holds `text` (lowercase;
    /// native).
    fn stores(&self, _text: &str) -> Option<bool> {
        None
    }
    /// Consolidates the profile now (the real time: a conversation dated
    /// years ago is old), background work drained (native).
    fn consolidate(&mut self) -> Option<agent_memory::core::model::ConsolidationReport> {
        None
    }
    /// Lets the profile's state go (native): its recalls answer from
    /// SQLite alone from now on, as a Durable Object's do once evicted.
    /// Whether it could.
    fn go_cold(&mut self) -> bool {
        false
    }
    /// Recall: each candidate's source message ids, best first.
    fn recall(&mut self, question: &str, reference: &Session) -> Vec<Vec<String>>;
    /// The last recall's candidates' summaries, best first.
    fn texts(&self) -> &[String];
}

pub fn messages_of(session: &Session) -> Vec<MessageInput> {
    session.turns.iter().map(|t| MessageInput { role: t.speaker.clone(), content: t.content.clone(), timestamp: Some(session.timestamp.clone()) }).collect()
}

pub struct Native {
    pub sql: support::NativeSql,
    /// Kept across calls, as the Durable Object keeps it.
    pub turns: agent_memory::core::recall::directory::TurnDirectory,
    /// The local vector index's resident copy, kept across calls as the
    /// Durable Object keeps it when the isolate's budget allows.
    pub packed: std::cell::RefCell<agent_memory::core::local::vector::Packed>,
    pub embedding: Embedding,
    /// The last recall's candidates' summaries.
    pub texts: Vec<String>,
    /// The state let go ([`Memory::go_cold`]): SQLite alone.
    pub cold: bool,
}

impl Native {
    /// A fresh, empty profile embedding with `embedding`.
    pub fn new(embedding: &Embedding) -> Native {
        Native { sql: support::database(), turns: Default::default(), packed: Default::default(), embedding: embedding.clone(), texts: Vec::new(), cold: false }
    }

    /// Runs `f` with the profile at `now`: the local defaults (rules,
    /// the resident vector index) with the chosen embedder.
    fn with_profile<T>(&self, now: i64, f: impl FnOnce(&agent_memory::core::ops::Profile<'_>) -> T) -> T {
        // Cold, as providers::index: the vectors read from SQLite.
        let cached = agent_memory::core::local::vector::CachedVectorIndex { sql: &self.sql, packed: &self.packed };
        let lean = agent_memory::core::local::vector::SqlVectorIndex { sql: &self.sql };
        let index: &dyn agent_memory::core::ports::VectorIndex = if self.cold { &lean } else { &cached };
        let embedder: &dyn agent_memory::core::ports::Embedder = match &self.embedding {
            Embedding::Local => &agent_memory::core::local::embed::HashEmbedder,
            Embedding::OpenAi(e) => e.as_ref(),
        };
        let p = agent_memory::core::ops::Profile {
            name: "test/p",
            sql: &self.sql,
            reasoner: &agent_memory::core::rules::Rules,
            embedder,
            index,
            turns: (!self.cold).then_some(&self.turns),
            now,
            limits: agent_memory::core::ops::Limits::default(),
            memory: Default::default(),
            room: &agent_memory::core::ports::Unshared,
        };
        f(&p)
    }
}

/// Which embedder native profiles use: `LOCOMO_EMBEDDER` unset or
/// `local` is the service's local default (feature hashing); `openai` an
/// OpenAI-compatible `/embeddings` endpoint (`OPENAI_BASE_URL`, default
/// `http://127.0.0.1:11434/v1`, and `OPENAI_EMBEDDING_MODEL`).
#[derive(Clone)]
pub enum Embedding {
    Local,
    OpenAi(Rc<OpenAiEmbedder>),
}

impl Embedding {
    /// From `LOCOMO_EMBEDDER`; an OpenAI endpoint is probed once so a
    /// run fails at its start, not in its first drain.
    pub fn from_env() -> Embedding {
        match std::env::var("LOCOMO_EMBEDDER").unwrap_or_default().trim() {
            "" | "local" | "hash" => Embedding::Local,
            "openai" => {
                let e = OpenAiEmbedder::from_env();
                if let Err(err) = e.embed_blocking(&["probe".to_string()]) {
                    panic!("LOCOMO_EMBEDDER=openai: {}/embeddings (model {}) does not answer: {err}", e.base_url, e.model);
                }
                Embedding::OpenAi(Rc::new(e))
            }
            other => panic!("LOCOMO_EMBEDDER={other}: local or openai"),
        }
    }

    /// What the run's header says.
    pub fn describe(&self) -> String {
        match self {
            Embedding::Local => format!("local (feature hashing, {} dims)", agent_memory::core::local::embed::DIMS),
            Embedding::OpenAi(e) => format!("openai (model {} at {}, {} dims)", e.model, e.base_url, e.dims()),
        }
    }

    /// Embedding requests sent, texts sent in them, and texts the cache
    /// file answered, so far (OpenAI only).
    pub fn usage(&self) -> Option<(usize, usize, usize)> {
        match self {
            Embedding::Local => None,
            Embedding::OpenAi(e) => Some((e.requests(), e.texts(), e.cached())),
        }
    }
}

impl Native {
    /// The full-text channel's plain counterpart: FTS5 bm25 over the
    /// active memories' content, searched as the baseline searches the
    /// turns (every word of the question, OR-ed), each hit standing for its
    /// source messages.
    fn plain_memories(&self, question: &str) -> Vec<Vec<String>> {
        use agent_memory::core::ports::Sql;
        let rows = self.sql.query("SELECT content, source_message_ids FROM memories WHERE status = 'active'", &[]).expect("read memories");
        let conn = rusqlite::Connection::open_in_memory().expect("open sqlite");
        conn.execute_batch("CREATE VIRTUAL TABLE m USING fts5(sources UNINDEXED, content, tokenize='porter unicode61')").expect("create fts5");
        {
            let mut ins = conn.prepare("INSERT INTO m (sources, content) VALUES (?, ?)").expect("prepare");
            for r in rows {
                ins.execute([r[1].opt_string().unwrap_or_default(), r[0].opt_string().unwrap_or_default()]).expect("insert memory");
            }
        }
        let words: Vec<String> = question.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(|w| format!("\"{w}\"")).collect();
        if words.is_empty() {
            return vec![];
        }
        let mut stmt = conn.prepare("SELECT sources FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT ?").expect("prepare");
        let rows = stmt.query_map(rusqlite::params![words.join(" OR "), LIMIT as i64], |r| r.get::<_, String>(0)).expect("query");
        rows.flatten().map(|s| serde_json::from_str::<Vec<String>>(&s).expect("source ids")).collect()
    }
}

impl Memory for Native {
    fn go_cold(&mut self) -> bool {
        self.turns.clear();
        self.packed.borrow_mut().clear();
        self.cold = true;
        true
    }

    fn export(&self) -> Option<String> {
        self.with_profile(0, |p| p.export(Default::default()).ok())
    }

    fn active(&self) -> Option<(i64, i64)> {
        let rows = agent_memory::core::ports::Sql::query(
            &self.sql,
            "SELECT COUNT(*), COALESCE(SUM(length(CAST(content AS BLOB))), 0) FROM memories WHERE status = 'active'",
            &[],
        )
        .ok()?;
        let r = rows.first()?;
        Some((r[0].as_i64()?, r[1].as_i64()?))
    }

    fn stores(&self, text: &str) -> Option<bool> {
        let rows = agent_memory::core::ports::Sql::query(
            &self.sql,
            "SELECT EXISTS (SELECT 1 FROM memories WHERE status = 'active' AND instr(lower(content), ?1) > 0)",
            &[agent_memory::core::ports::SqlValue::Text(text.to_string())],
        )
        .ok()?;
        Some(rows.first()?.first()?.as_i64()? == 1)
    }

    fn consolidate(&mut self) -> Option<agent_memory::core::model::ConsolidationReport> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        self.with_profile(now, |p| {
            let report = support::block_on(p.consolidate(Default::default())).expect("consolidate");
            while support::block_on(p.drain()).map(|d| d.pending > 0 && (d.embedded > 0 || d.indexed > 0 || d.consolidated > 0)).unwrap_or(false) {}
            Some(report)
        })
    }

    fn statuses(&self) -> Vec<(String, i64)> {
        agent_memory::core::ports::Sql::query(&self.sql, "SELECT status, COUNT(*) FROM memories GROUP BY status ORDER BY status", &[])
            .unwrap_or_default()
            .into_iter()
            .map(|r| (r[0].opt_string().unwrap_or_default(), r[1].as_i64().unwrap_or(0)))
            .collect()
    }

    fn cited(&self) -> Option<HashSet<String>> {
        let rows = agent_memory::core::ports::Sql::query(
            &self.sql,
            "SELECT DISTINCT g.id FROM citations s JOIN memories m ON m.id = s.memory_id JOIN messages g ON g.rowid = s.message_rowid WHERE m.status = 'active'",
            &[],
        )
        .ok()?;
        Some(rows.into_iter().filter_map(|r| r[0].opt_string()).collect())
    }

    fn ingest(&mut self, session: &Session, session_id: &str) -> Vec<String> {
        self.with_profile(session.millis, |p| {
            let report = support::block_on(p.ingest(IngestRequest {
                messages: messages_of(session),
                session_id: Some(session_id.to_string()),
                metadata: Default::default(),
            }))
            .unwrap_or_else(|e| panic!("ingest of {session_id} failed: {e}"));
            // Drain the outbox (embeddings) before the next session.
            let mut last = i64::MAX;
            loop {
                let d = support::block_on(p.drain()).expect("drain");
                if d.pending == 0 || d.pending >= last {
                    break;
                }
                last = d.pending;
            }
            report.message_ids
        })
    }

    fn channels(&mut self, question: &str, reference: &Session) -> Vec<(String, Vec<Vec<String>>)> {
        let plain = ("fts-plain".to_string(), self.plain_memories(question));
        let mut out = self.with_profile(reference.millis, |p| {
            let req = RecallRequest {
                query: question.to_string(),
                options: RecallOptions {
                    reference_date: Some(reference.timestamp.clone()),
                    limit: Some(LIMIT as u64),
                    explain: Some(true),
                    ..RecallOptions::default()
                },
            };
            let r = support::block_on(p.recall(req)).expect("recall");
            let store = p.store();
            r.explain
                .map(|e| e.channels)
                .unwrap_or_default()
                .into_iter()
                .map(|c| {
                    let mems = store.memories_by_ids(&c.ids).unwrap_or_default();
                    let by_id: HashMap<String, Vec<String>> = mems.into_iter().map(|m| (m.id, m.source_message_ids)).collect();
                    (c.channel.name().to_string(), c.ids.iter().filter_map(|id| by_id.get(id).cloned()).collect())
                })
                .collect::<Vec<_>>()
        });
        out.push(plain);
        out
    }

    fn recall(&mut self, question: &str, reference: &Session) -> Vec<Vec<String>> {
        let got = self.with_profile(reference.millis, |p| {
            let explain = std::env::var("LOCOMO_EXPLAIN").ok().is_some_and(|s| !s.is_empty() && question.contains(s.as_str()));
            let req = RecallRequest {
                query: question.to_string(),
                options: RecallOptions {
                    reference_date: Some(reference.timestamp.clone()),
                    limit: Some(LIMIT as u64),
                    thinking_level: thinking_level(),
                    explain: explain.then_some(true),
                    ..RecallOptions::default()
                },
            };
            let r = support::block_on(p.recall(req)).unwrap_or_else(|e| panic!("recall of {question:?} failed: {e}"));
            // A channel that failed is noted and left out: a measurement
            // without it is not the pipeline's.
            assert!(r.messages.is_empty(), "recall of {question:?} degraded: {:?}", r.messages);
            if explain {
                eprintln!("== explain: {question}");
                for (i, c) in r.candidates.iter().enumerate() {
                    let trace: Vec<String> = c.trace.iter().flatten().map(|t| format!("{}@{}={:.4}", t.channel.name(), t.rank, t.contribution)).collect();
                    eprintln!("{:2} {:.4} {:?} {} | {}", i + 1, c.score, c.source_message_ids, trace.join(" "), c.summary.chars().take(90).collect::<String>());
                }
            }
            r.candidates.into_iter().map(|c| (c.source_message_ids, c.summary)).collect::<Vec<_>>()
        });
        let (sources, texts) = got.into_iter().unzip();
        self.texts = texts;
        sources
    }

    fn texts(&self) -> &[String] {
        &self.texts
    }
}

/// A live Worker over plain HTTP/1.1 (no TLS).
pub struct Remote {
    pub host: String,
    pub port: u16,
    pub base_path: String,
    pub token: String,
    /// The last recall's candidates' summaries.
    pub texts: Vec<String>,
}

impl Remote {
    pub fn new(url: &str, profile: &str) -> Remote {
        let rest = url.strip_prefix("http://").unwrap_or_else(|| panic!("MEMORY_URL must be http:// (got {url})"));
        let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse().expect("port")),
            None => (authority.to_string(), 80),
        };
        let prefix = if path.is_empty() { String::new() } else { format!("/{}", path.trim_end_matches('/')) };
        Remote {
            host,
            port,
            base_path: format!("{prefix}/accounts/local/agent-memory/namespaces/locomo/profiles/{profile}"),
            token: std::env::var("MEMORY_TOKEN").ok().filter(|t| !t.is_empty()).unwrap_or_else(|| "dev-token".into()),
            texts: Vec::new(),
        }
    }

    pub fn call(&self, method: &str, suffix: &str, body: Option<&Value>) -> (u16, Value) {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut stream =
            std::net::TcpStream::connect((self.host.as_str(), self.port)).unwrap_or_else(|e| panic!("failed to connect to {}:{}: {e}", self.host, self.port));
        stream.set_read_timeout(Some(Duration::from_secs(300))).ok();
        let req = format!(
            "{method} {}{suffix} HTTP/1.1\r\nHost: {}:{}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
             Accept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.base_path,
            self.host,
            self.port,
            self.token,
            body.len()
        );
        stream.write_all(req.as_bytes()).expect("send request");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).expect("read response");
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("HTTP response has headers");
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let mut payload = raw[split + 4..].to_vec();
        let status: u16 = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        if head.to_lowercase().contains("transfer-encoding: chunked") {
            payload = dechunk(&payload);
        }
        (status, serde_json::from_slice(&payload).unwrap_or(Value::Null))
    }
}

pub fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(String::from_utf8_lossy(&b[..eol]).split(';').next().unwrap_or("0").trim(), 16).unwrap_or(0);
        if size == 0 || eol + 2 + size > b.len() {
            break;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + size]);
        b = &b[(eol + 4 + size).min(b.len())..];
    }
    out
}

impl Memory for Remote {
    fn ingest(&mut self, session: &Session, session_id: &str) -> Vec<String> {
        let body = json!({ "messages": messages_of(session), "sessionId": session_id });
        let (status, v) = self.call("POST", "/ingest", Some(&body));
        assert!(v["success"].as_bool() == Some(true), "ingest of {session_id} failed ({status}): {v}");
        v["result"]["messageIds"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()
    }

    fn recall(&mut self, question: &str, reference: &Session) -> Vec<Vec<String>> {
        let body = json!({ "query": question, "referenceDate": reference.timestamp, "limit": LIMIT });
        let (status, v) = self.call("POST", "/recall", Some(&body));
        assert!(v["success"].as_bool() == Some(true), "recall of {question:?} failed ({status}): {v}");
        let candidates: Vec<&Value> = v["result"]["candidates"].as_array().into_iter().flatten().collect();
        self.texts = candidates.iter().map(|c| c["summary"].as_str().unwrap_or_default().to_string()).collect();
        candidates.iter().map(|c| c["sourceMessageIds"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()).collect()
    }

    fn texts(&self) -> &[String] {
        &self.texts
    }
}

/// `LOCOMO_THINKING=low|medium|high`: the recalls' thinking level (the
/// service's default when unset).
pub fn thinking_level() -> Option<agent_memory::core::model::ThinkingLevel> {
    let level = std::env::var("LOCOMO_THINKING").ok().filter(|v| !v.is_empty())?;
    Some(serde_json::from_value(json!(level)).unwrap_or_else(|_| panic!("LOCOMO_THINKING={level}: low, medium or high")))
}
