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
//!
//! The same file may hold LongMemEval's format instead (a list of
//! questions, each with its own haystack of sessions): `longmemeval.rs`
//! reads it, recognised from the content, and reports turn-level recall@k
//! with LongMemEval's session-level `recall_any@5` / `recall_all@5`.
//!
//! `LOCOMO_EMBEDDER=openai` embeds through an OpenAI-compatible endpoint
//! (`OPENAI_BASE_URL`, `OPENAI_EMBEDDING_MODEL`) instead of the local
//! feature-hashing embedder (native profiles only).

mod harness;
mod longmemeval;
mod one_profile;
#[path = "../support/mod.rs"]
mod support;

use agent_memory::core::time::{iso, parse_millis};
use harness::{recall_at, turns_of, Baseline, Embedding, Memory, Native, Remote, Session, Tally, Turn};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// Categories scored (5, adversarial, has no evidence to find).
const CATEGORIES: [(u64, &str); 4] = [(1, "multi-hop"), (2, "temporal"), (3, "open-domain"), (4, "single-hop")];

// ---- the data ---------------------------------------------------------

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

fn load(data: &Value) -> Vec<Conversation> {
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

/// Prints recall@5/10/20 by category and overall, pipeline beside bm25;
/// the overall tallies.
fn print_categories(pipe: &HashMap<u64, Tally>, base: &HashMap<u64, Tally>) -> (Tally, Tally) {
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
    (all_p, all_b)
}

/// The timing line: ingest throughput, and recall's p50 and p95.
fn print_timing(ingested: usize, ingest_time: Duration, latencies: &mut [Duration]) {
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
}

// ---- the run ------------------------------------------------------------

fn main() {
    let path = data_path();
    let raw = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("failed to read {}: {e}", path.display()));
    let data: Value = serde_json::from_str(&raw).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let live = std::env::var("MEMORY_URL").ok().filter(|u| !u.is_empty());
    let embedding = if live.is_some() { Embedding::Local } else { Embedding::from_env() };
    let embedder_line = match &live {
        Some(_) => "embedder: the Worker's own configuration".to_string(),
        None => format!("embedder: {}", embedding.describe()),
    };
    if longmemeval::detect(&data) == longmemeval::Format::LongMemEval {
        let questions = longmemeval::parse(&data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let options = longmemeval::Options {
            live: live.clone(),
            embedding,
            per_channel: std::env::var("LOCOMO_CHANNELS").is_ok_and(|v| !v.is_empty() && v != "0"),
            verbose: std::env::var("LOCOMO_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0"),
            one_profile: std::env::var("LOCOMO_ONE_PROFILE").is_ok_and(|v| !v.is_empty() && v != "0"),
        };
        println!("LongMemEval evidence recall: {} ({} questions)", path.display(), questions.len());
        println!("pipeline: {}", live.as_deref().map_or("native profile, local rule-based provider".to_string(), |u| format!("live Worker at {u}")));
        println!("{embedder_line}");
        let report = longmemeval::run(&questions, &options);
        longmemeval::print(&report, &options);
        return;
    }
    let conversations = load(&data);
    if std::env::var("LOCOMO_ONE_PROFILE").is_ok_and(|v| !v.is_empty() && v != "0") {
        if live.is_some() {
            panic!("LOCOMO_ONE_PROFILE with a LoCoMo file runs natively only");
        }
        println!("LoCoMo evidence recall, every conversation in one profile: {} ({} conversations)", path.display(), conversations.len());
        println!("{embedder_line}");
        one_profile::run(&conversations, &embedding);
        return;
    }
    let verbose = std::env::var("LOCOMO_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0");
    println!("LoCoMo evidence recall: {} ({} conversations)", path.display(), conversations.len());
    println!("pipeline: {}", live.as_deref().map_or("native profile, local rule-based provider".to_string(), |u| format!("live Worker at {u}")));
    println!("{embedder_line}");

    let mut pipe: HashMap<u64, Tally> = HashMap::new();
    let mut base: HashMap<u64, Tally> = HashMap::new();
    let (mut ingested, mut ingest_time) = (0usize, Duration::ZERO);
    let mut latencies: Vec<Duration> = Vec::new();
    let mut skipped = 0usize;
    let mut ceiling = Tally::default();
    let mut statuses: std::collections::BTreeMap<String, i64> = Default::default();
    let per_channel = std::env::var("LOCOMO_CHANNELS").is_ok_and(|v| !v.is_empty() && v != "0");
    // LOCOMO_CONSOLIDATE=1: each conversation's questions asked once before
    // a consolidation run, and (the main figures) after it.
    let consolidating = std::env::var("LOCOMO_CONSOLIDATE").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut before = Tally::default();
    let (mut active_before, mut active_after, mut bytes_before, mut bytes_after, mut messages) = (0i64, 0i64, 0i64, 0i64, 0i64);
    let mut actions: std::collections::BTreeMap<String, usize> = Default::default();
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
            None => Box::new(Native::new(&embedding)),
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
        if let (Ok(dir), Some(text)) = (std::env::var("LOCOMO_DUMP"), memory.export()) {
            let _ = std::fs::write(format!("{dir}/{}.ndjson", conv.id), text);
        }
        let cited: Option<HashSet<String>> = memory.cited().map(|ids| ids.iter().filter_map(|id| dia_of.get(id).cloned()).collect());
        let baseline = Baseline::new(&conv.sessions);
        if consolidating {
            let conv_messages: i64 = conv.sessions.iter().map(|s| s.turns.len() as i64).sum();
            for q in conv.questions.iter().filter(|q| !q.evidence.is_empty()) {
                before.add(&turns_of(&memory.recall(&q.text, last), &dia_of), &q.evidence);
            }
            let (n0, b0) = memory.active().unwrap_or_default();
            let report = memory.consolidate();
            let (n1, b1) = memory.active().unwrap_or_default();
            active_before += n0;
            active_after += n1;
            bytes_before += b0;
            bytes_after += b1;
            messages += conv_messages;
            if let Some(r) = report {
                for a in r.actions {
                    *actions.entry(a.action).or_insert(0) += 1;
                }
            }
        }
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

    let (all_p, all_b) = print_categories(&pipe, &base);
    for (name, t) in &channel_tallies {
        println!("channel {name:<10} alone: recall@5={:.3} @10={:.3} @20={:.3}", t.mean(0), t.mean(1), t.mean(2));
    }
    if !statuses.is_empty() {
        let all: Vec<String> = statuses.iter().map(|(s, n)| format!("{n} {s}")).collect();
        println!("memories: {}", all.join(", "));
    }
    if consolidating {
        let per = |n: i64| n as f64 / messages.max(1) as f64;
        println!(
            "consolidation: active memories {active_before} -> {active_after} ({:.1}% fewer); per message {:.2} -> {:.2}; stored bytes per message {:.0} -> {:.0}; actions {actions:?}",
            100.0 * (active_before - active_after) as f64 / active_before.max(1) as f64,
            per(active_before),
            per(active_after),
            per(bytes_before),
            per(bytes_after)
        );
        println!("consolidation: recall@10 before={:.3} after={:.3}", before.mean(1), all_p.mean(1));
    }
    if ceiling.n > 0 {
        println!("extraction ceiling: {:.3} of evidence turns are cited by some active memory", ceiling.mean(2));
    }
    if skipped > 0 {
        println!("({skipped} questions without a readable evidence id skipped)");
    }
    print_timing(ingested, ingest_time, &mut latencies);
    if let Some((requests, texts, cached)) = embedding.usage() {
        println!("embeddings: {texts} texts in {requests} requests, {cached} from the cache file");
    }
    println!("recall@10 pipeline={:.3} bm25={:.3}", all_p.mean(1), all_b.mean(1));
}
