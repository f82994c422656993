//! LoCoMo evidence-recall harness: `cargo bench --bench locomo`.
//!
//! For each conversation: a fresh native profile (or a live Worker when
//! `MEMORY_URL` is set), every session ingested in order with its session
//! date as each message's timestamp and as `now`, the outbox drained; then
//! every question of categories 1-4 asked through `recall` (reference date
//! = the last session's date, limit 20). The ranked candidates map to their
//! source turns (`sourceMessageIds` -> message -> `dia_id`, first
//! occurrence, distinct), and evidence recall@k is the mean over questions
//! of the share of evidence turns among the first k distinct source turns.
//!
//! A fixed baseline runs in the same pass: SQLite FTS5 (`porter
//! unicode61`) over the raw turns (speaker and text), the question's words
//! OR-ed, ranked by `bm25()`. Nothing in it is tuned.
//!
//! The data is read from `LOCOMO` (or the first argument), by default
//! `../shared/bench/locomo/locomo-dev.json` relative to the crate root,
//! falling back to `/work/shared/bench/locomo/locomo-dev.json`. It is never
//! copied into the repository. The last line printed is
//! `recall@10 pipeline=<x.xxx> bm25=<y.yyy>`.

#[path = "../support/mod.rs"]
mod support;

use agent_memory::core::api::{IngestRequest, RecallOptions, RecallRequest};
use agent_memory::core::model::MessageInput;
use agent_memory::core::time::{iso, parse_millis};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// Cut-offs reported.
const KS: [usize; 3] = [5, 10, 20];
/// Candidates asked of recall (and of the baseline).
const LIMIT: usize = 20;
/// Categories scored (5, adversarial, has no evidence to find).
const CATEGORIES: [(u64, &str); 4] = [(1, "multi-hop"), (2, "temporal"), (3, "open-domain"), (4, "single-hop")];

// ---- the data ---------------------------------------------------------

struct Turn {
    dia_id: String,
    speaker: String,
    /// The text, with the shared image's caption appended.
    content: String,
}

struct Session {
    number: usize,
    /// ISO-8601 UTC.
    timestamp: String,
    millis: i64,
    turns: Vec<Turn>,
}

struct Question {
    text: String,
    category: u64,
    evidence: Vec<String>,
}

struct Conversation {
    id: String,
    sessions: Vec<Session>,
    questions: Vec<Question>,
}

fn data_path() -> std::path::PathBuf {
    if let Ok(p) = std::env::var("LOCOMO") {
        if !p.is_empty() {
            return p.into();
        }
    }
    if let Some(p) = std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        return p.into();
    }
    let rel = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/locomo/locomo-dev.json");
    if rel.exists() {
        rel
    } else {
        "/work/shared/bench/locomo/locomo-dev.json".into()
    }
}

/// `"D8:6; D9:17"` -> `["D8:6", "D9:17"]`; `"D:11:26"` -> `["D11:26"]`;
/// anything else that names no turn is skipped.
fn evidence_ids(raw: &Value) -> Vec<String> {
    let re = regex::Regex::new(r"D:?(\d+):(\d+)").expect("valid regex");
    let mut out = Vec::new();
    for e in raw.as_array().into_iter().flatten().filter_map(Value::as_str) {
        for c in re.captures_iter(e) {
            let id = format!("D{}:{}", &c[1], &c[2]);
            if !out.contains(&id) {
                out.push(id);
            }
        }
    }
    out
}

fn turn_content(t: &Value) -> String {
    let text = t.get("text").and_then(Value::as_str).unwrap_or("").trim().to_string();
    match t.get("blip_caption").and_then(Value::as_str).map(str::trim).filter(|c| !c.is_empty()) {
        Some(caption) => {
            let caption = caption.strip_prefix("a photo of ").unwrap_or(caption);
            if text.is_empty() {
                format!("[shares a photo of {caption}]")
            } else {
                format!("{text} [shares a photo of {caption}]")
            }
        }
        None => text,
    }
}

fn load(path: &std::path::Path) -> Vec<Conversation> {
    let raw = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("failed to read {}: {e}", path.display()));
    let data: Value = serde_json::from_str(&raw).expect("LoCoMo file is JSON");
    let mut out = Vec::new();
    for (ci, c) in data.as_array().expect("a list of conversations").iter().enumerate() {
        let id = c.get("sample_id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| format!("conv-{ci}"));
        let conv = &c["conversation"];
        let mut sessions = Vec::new();
        for (key, turns) in conv.as_object().into_iter().flatten() {
            let Some(n) = key.strip_prefix("session_").and_then(|n| n.parse::<usize>().ok()) else { continue };
            let Some(turns) = turns.as_array().filter(|t| !t.is_empty()) else { continue };
            let date = conv.get(format!("session_{n}_date_time")).and_then(Value::as_str).unwrap_or("");
            let millis = parse_millis(date).unwrap_or_else(|| panic!("{id} session {n}: unreadable date {date:?}"));
            sessions.push(Session {
                number: n,
                timestamp: iso(millis),
                millis,
                turns: turns
                    .iter()
                    .map(|t| Turn {
                        dia_id: t.get("dia_id").and_then(Value::as_str).unwrap_or("").to_string(),
                        speaker: t.get("speaker").and_then(Value::as_str).unwrap_or("user").to_string(),
                        content: turn_content(t),
                    })
                    .filter(|t| !t.content.is_empty())
                    .collect(),
            });
        }
        sessions.sort_by_key(|s| s.number);
        let questions = c["qa"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|q| {
                let category = q.get("category").and_then(Value::as_u64)?;
                Some(Question {
                    text: q.get("question").and_then(Value::as_str)?.to_string(),
                    category,
                    evidence: evidence_ids(q.get("evidence").unwrap_or(&Value::Null)),
                })
            })
            .filter(|q| CATEGORIES.iter().any(|(c, _)| *c == q.category))
            .collect();
        out.push(Conversation { id, sessions, questions });
    }
    out
}

// ---- scoring ----------------------------------------------------------

/// Share of `evidence` among the first `k` of `ranked` turns.
fn recall_at(ranked: &[String], evidence: &[String], k: usize) -> f64 {
    let top: HashSet<&String> = ranked.iter().take(k).collect();
    evidence.iter().filter(|e| top.contains(e)).count() as f64 / evidence.len() as f64
}

#[derive(Default, Clone)]
struct Tally {
    n: usize,
    sums: [f64; 3],
}

impl Tally {
    fn add(&mut self, ranked: &[String], evidence: &[String]) {
        self.n += 1;
        for (i, k) in KS.iter().enumerate() {
            self.sums[i] += recall_at(ranked, evidence, *k);
        }
    }
    fn mean(&self, i: usize) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sums[i] / self.n as f64
        }
    }
}

/// Distinct turns, first occurrence order, of candidates' source messages.
fn turns_of(candidates: &[Vec<String>], dia_of: &HashMap<String, String>) -> Vec<String> {
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

struct Baseline {
    conn: rusqlite::Connection,
}

impl Baseline {
    fn new(conv: &Conversation) -> Baseline {
        let conn = rusqlite::Connection::open_in_memory().expect("open sqlite");
        conn.execute_batch("CREATE VIRTUAL TABLE turns USING fts5(dia_id UNINDEXED, speaker, text, tokenize='porter unicode61')")
            .expect("create fts5");
        {
            let mut ins = conn.prepare("INSERT INTO turns (dia_id, speaker, text) VALUES (?, ?, ?)").expect("prepare");
            for s in &conv.sessions {
                for t in &s.turns {
                    ins.execute([&t.dia_id, &t.speaker, &t.content]).expect("insert turn");
                }
            }
        }
        Baseline { conn }
    }

    fn search(&self, question: &str) -> Vec<String> {
        let words: Vec<String> = question
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| format!("\"{w}\""))
            .collect();
        if words.is_empty() {
            return vec![];
        }
        let mut stmt = self.conn.prepare("SELECT dia_id FROM turns WHERE turns MATCH ? ORDER BY bm25(turns) LIMIT ?").expect("prepare");
        let rows = stmt
            .query_map(rusqlite::params![words.join(" OR "), LIMIT as i64], |r| r.get::<_, String>(0))
            .expect("query");
        let mut out = Vec::new();
        for r in rows.flatten() {
            if !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }
}

// ---- the pipeline: native or over REST ----------------------------------

trait Memory {
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
    /// Recall: each candidate's source message ids, best first.
    fn recall(&mut self, question: &str, reference: &Session) -> Vec<Vec<String>>;
}

fn messages_of(session: &Session) -> Vec<MessageInput> {
    session
        .turns
        .iter()
        .map(|t| MessageInput { role: t.speaker.clone(), content: t.content.clone(), timestamp: Some(session.timestamp.clone()) })
        .collect()
}

struct Native {
    sql: support::NativeSql,
    /// Kept across calls, as the Durable Object keeps it.
    turns: agent_memory::core::recall::directory::TurnDirectory,
}

impl Memory for Native {
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
        support::with_profile_in(&self.sql, session.millis, &self.turns, |p| {
            let report = support::block_on(p.ingest(IngestRequest {
                messages: messages_of(session),
                session_id: Some(session_id.to_string()),
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
        support::with_profile_in(&self.sql, reference.millis, &self.turns, |p| {
            let req = RecallRequest {
                query: question.to_string(),
                options: RecallOptions {
                    reference_date: Some(reference.timestamp.clone()),
                    limit: Some(LIMIT),
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
                .collect()
        })
    }

    fn recall(&mut self, question: &str, reference: &Session) -> Vec<Vec<String>> {
        support::with_profile_in(&self.sql, reference.millis, &self.turns, |p| {
            let req = RecallRequest {
                query: question.to_string(),
                options: RecallOptions {
                    reference_date: Some(reference.timestamp.clone()),
                    limit: Some(LIMIT),
                    thinking_level: thinking_level(),
                    ..RecallOptions::default()
                },
            };
            let r = support::block_on(p.recall(req)).unwrap_or_else(|e| panic!("recall of {question:?} failed: {e}"));
            r.candidates.into_iter().map(|c| c.source_message_ids).collect()
        })
    }
}

/// A live Worker over plain HTTP/1.1 (no TLS).
struct Remote {
    host: String,
    port: u16,
    base_path: String,
    token: String,
}

impl Remote {
    fn new(url: &str, profile: &str) -> Remote {
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
        }
    }

    fn call(&self, method: &str, suffix: &str, body: Option<&Value>) -> (u16, Value) {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut stream = std::net::TcpStream::connect((self.host.as_str(), self.port))
            .unwrap_or_else(|e| panic!("failed to connect to {}:{}: {e}", self.host, self.port));
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

fn dechunk(mut b: &[u8]) -> Vec<u8> {
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
        v["result"]["candidates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["sourceMessageIds"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect())
            .collect()
    }
}

// ---- the run ------------------------------------------------------------

/// `LOCOMO_THINKING=low|medium|high`: the recalls' thinking level (the
/// service's default when unset).
fn thinking_level() -> Option<agent_memory::core::model::ThinkingLevel> {
    let level = std::env::var("LOCOMO_THINKING").ok().filter(|v| !v.is_empty())?;
    Some(serde_json::from_value(json!(level)).unwrap_or_else(|_| panic!("LOCOMO_THINKING={level}: low, medium or high")))
}

fn main() {
    let path = data_path();
    let conversations = load(&path);
    let live = std::env::var("MEMORY_URL").ok().filter(|u| !u.is_empty());
    let verbose = std::env::var("LOCOMO_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0");
    println!("LoCoMo evidence recall: {} ({} conversations)", path.display(), conversations.len());
    println!("pipeline: {}", live.as_deref().map_or("native profile, local rule-based provider".to_string(), |u| format!("live Worker at {u}")));

    let mut pipe: HashMap<u64, Tally> = HashMap::new();
    let mut base: HashMap<u64, Tally> = HashMap::new();
    let (mut ingested, mut ingest_time) = (0usize, Duration::ZERO);
    let mut latencies: Vec<Duration> = Vec::new();
    let mut skipped = 0usize;
    let mut ceiling = Tally::default();
    let mut statuses: std::collections::BTreeMap<String, i64> = Default::default();
    let per_channel = std::env::var("LOCOMO_CHANNELS").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut channel_tallies: std::collections::BTreeMap<String, Tally> = Default::default();

    for conv in &conversations {
        let Some(last) = conv.sessions.last() else { continue };
        let mut memory: Box<dyn Memory> = match &live {
            Some(url) => {
                let r = Remote::new(url, &conv.id);
                // A fresh profile: drop whatever an earlier run left.
                let _ = r.call("DELETE", "", None);
                Box::new(r)
            }
            None => Box::new(Native { sql: support::database(), turns: Default::default() }),
        };
        let mut dia_of: HashMap<String, String> = HashMap::new();
        let started = Instant::now();
        for s in &conv.sessions {
            let ids = memory.ingest(s, &format!("session_{}", s.number));
            for (id, t) in ids.into_iter().zip(&s.turns) {
                dia_of.entry(id).or_insert_with(|| t.dia_id.clone());
            }
            ingested += s.turns.len();
        }
        ingest_time += started.elapsed();
        if live.is_some() {
            // The Worker vectorizes in its alarm, after the response.
            let settle = std::env::var("LOCOMO_SETTLE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
            std::thread::sleep(Duration::from_millis(settle));
        }
        for (status, n) in memory.statuses() {
            *statuses.entry(status).or_insert(0) += n;
        }
        let cited: Option<HashSet<String>> =
            memory.cited().map(|ids| ids.iter().filter_map(|id| dia_of.get(id).cloned()).collect());
        let baseline = Baseline::new(conv);
        let mut conv_tally = (Tally::default(), Tally::default());
        for q in &conv.questions {
            if q.evidence.is_empty() {
                skipped += 1;
                continue;
            }
            let t0 = Instant::now();
            let candidates = memory.recall(&q.text, last);
            latencies.push(t0.elapsed());
            let ranked = turns_of(&candidates, &dia_of);
            let bm25 = baseline.search(&q.text);
            if per_channel {
                for (name, lists) in memory.channels(&q.text, last) {
                    channel_tallies.entry(name).or_default().add(&turns_of(&lists, &dia_of), &q.evidence);
                }
            }
            if let Some(c) = &cited {
                let reachable: Vec<String> = q.evidence.iter().filter(|e| c.contains(*e)).cloned().collect();
                ceiling.add(&reachable, &q.evidence);
            }
            pipe.entry(q.category).or_default().add(&ranked, &q.evidence);
            base.entry(q.category).or_default().add(&bm25, &q.evidence);
            conv_tally.0.add(&ranked, &q.evidence);
            conv_tally.1.add(&bm25, &q.evidence);
            if verbose {
                println!(
                    "  [{}] c{} r10={:.2} b10={:.2} {:?} ev={:?} got={:?}",
                    conv.id,
                    q.category,
                    recall_at(&ranked, &q.evidence, 10),
                    recall_at(&bm25, &q.evidence, 10),
                    q.text,
                    q.evidence,
                    ranked.iter().take(10).collect::<Vec<_>>()
                );
            }
        }
        println!(
            "{:<8} sessions={:<3} turns={:<4} questions={:<4} recall@10 pipeline={:.3} bm25={:.3}",
            conv.id,
            conv.sessions.len(),
            conv.sessions.iter().map(|s| s.turns.len()).sum::<usize>(),
            conv_tally.0.n,
            conv_tally.0.mean(1),
            conv_tally.1.mean(1)
        );
    }

    println!();
    println!("{:<16} {:>5}   {:>7} {:>7} {:>7}   {:>7} {:>7} {:>7}", "category", "n", "pipe@5", "pipe@10", "pipe@20", "bm25@5", "bm25@10", "bm25@20");
    let row = |label: &str, p: &Tally, b: &Tally| {
        println!(
            "{:<16} {:>5}   {:>7.3} {:>7.3} {:>7.3}   {:>7.3} {:>7.3} {:>7.3}",
            label,
            p.n,
            p.mean(0),
            p.mean(1),
            p.mean(2),
            b.mean(0),
            b.mean(1),
            b.mean(2)
        );
    };
    let (mut all_p, mut all_b) = (Tally::default(), Tally::default());
    for (c, name) in CATEGORIES {
        let p = pipe.get(&c).cloned().unwrap_or_default();
        let b = base.get(&c).cloned().unwrap_or_default();
        row(&format!("{c} {name}"), &p, &b);
        all_p.n += p.n;
        all_b.n += b.n;
        for i in 0..3 {
            all_p.sums[i] += p.sums[i];
            all_b.sums[i] += b.sums[i];
        }
    }
    row("overall", &all_p, &all_b);
    for (name, t) in &channel_tallies {
        println!("channel {name:<10} alone: recall@5={:.3} @10={:.3} @20={:.3}", t.mean(0), t.mean(1), t.mean(2));
    }
    if !statuses.is_empty() {
        let all: Vec<String> = statuses.iter().map(|(s, n)| format!("{n} {s}")).collect();
        println!("memories: {}", all.join(", "));
    }
    if ceiling.n > 0 {
        println!("extraction ceiling: {:.3} of evidence turns are cited by some active memory", ceiling.mean(2));
    }
    if skipped > 0 {
        println!("({skipped} questions without a readable evidence id skipped)");
    }
    latencies.sort();
    let pct = |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
    println!(
        "timing: ingest {ingested} msgs in {:.1} s ({:.0} msgs/s, drain included); recall p50 {:.1} ms, p95 {:.1} ms over {} queries",
        ingest_time.as_secs_f64(),
        ingested as f64 / ingest_time.as_secs_f64().max(1e-9),
        pct(0.5).as_secs_f64() * 1000.0,
        pct(0.95).as_secs_f64() * 1000.0,
        latencies.len()
    );
    println!("recall@10 pipeline={:.3} bm25={:.3}", all_p.mean(1), all_b.mean(1));
}
