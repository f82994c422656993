//! `LOCOMO_ONE_PROFILE=1` with a LoCoMo file: every conversation in one
//! native profile, and every question asked of all of it. A larger
//! profile than one conversation makes: each question's evidence sits
//! among every conversation's turns, which is what `thinkingLevel` is
//! for (`LOCOMO_THINKING`).
//!
//! `LOCOMO_FILLER` names LongMemEval-format files (space-separated) whose
//! haystack sessions go into the same profile, each session once: turns
//! no question asks for, in the profile and in the bm25 baseline alike.
//! Their ids are prefixed with the file's name, the conversations' with
//! theirs, so no two turns share an id. All sessions are ingested oldest
//! first.
//!
//! `LOCOMO_CHANNELS=1` scores each channel's own ranking too.
//!
//! What it does not do: the filler's own questions are not asked (the
//! generated styles share templates, so one file's question can be
//! answered by another file's turns).

use crate::harness::{turns_of, Baseline, Embedding, Memory, Native, Session, Tally, Turn};
use crate::longmemeval;
use crate::Conversation;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// Every conversation (and the filler) in one profile; prints recall by
/// category beside bm25, the profile's size and timing, and last the
/// `recall@10 pipeline=<x> bm25=<y>` line.
pub fn run(conversations: &[Conversation], embedding: &Embedding) {
    let mut sessions = conversation_sessions(conversations);
    let filler = filler_sessions();
    println!("filler: {} sessions, {} turns", filler.len(), filler.iter().map(|(_, s)| s.turns.len()).sum::<usize>());
    sessions.extend(filler);
    sessions.sort_by_key(|(_, s)| s.millis);

    let mut memory = Native::new(embedding);
    let started = Instant::now();
    let mut dia_of: HashMap<String, String> = HashMap::new();
    for (sid, s) in &sessions {
        for (id, t) in memory.ingest(s, sid).into_iter().zip(&s.turns) {
            dia_of.entry(id).or_insert_with(|| t.dia_id.clone());
        }
    }
    let ingest_time = started.elapsed();
    let ingested: usize = sessions.iter().map(|(_, s)| s.turns.len()).sum();
    let baseline = Baseline::new(sessions.iter().map(|(_, s)| s));

    let (mut pipe, mut base): (HashMap<u64, Tally>, HashMap<u64, Tally>) = Default::default();
    let mut latencies: Vec<Duration> = Vec::new();
    let mut warm: Vec<Vec<Vec<String>>> = Vec::new();
    let per_channel = std::env::var("LOCOMO_CHANNELS").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut channels: std::collections::BTreeMap<String, Tally> = Default::default();
    for conv in conversations {
        let Some(last) = conv.sessions.last() else { continue };
        for q in conv.questions.iter().filter(|q| !q.evidence.is_empty()) {
            let evidence: Vec<String> = q.evidence.iter().map(|e| format!("{}/{e}", conv.id)).collect();
            let t0 = Instant::now();
            let candidates = memory.recall(&q.text, last);
            latencies.push(t0.elapsed());
            warm.push(candidates.clone());
            pipe.entry(q.category).or_default().add(&turns_of(&candidates, &dia_of), &evidence);
            base.entry(q.category).or_default().add(&baseline.search(&q.text), &evidence);
            if per_channel {
                for (name, lists) in memory.channels(&q.text, last) {
                    channels.entry(name).or_default().add(&turns_of(&lists, &dia_of), &evidence);
                }
            }
        }
    }
    let (all_p, all_b) = crate::print_categories(&pipe, &base);
    for (name, t) in &channels {
        println!("channel {name:<10} alone: recall@5={:.3} @10={:.3} @20={:.3}", t.mean(0), t.mean(1), t.mean(2));
    }
    let statuses: Vec<String> = memory.statuses().into_iter().map(|(s, n)| format!("{n} {s}")).collect();
    println!("profile: {} sessions, {ingested} messages; memories: {}", sessions.len(), statuses.join(", "));
    crate::print_timing(ingested, ingest_time, &mut latencies);
    cold_pass(&mut memory, conversations, warm);
    println!("recall@10 pipeline={:.3} bm25={:.3}", all_p.mean(1), all_b.mean(1));
}

/// The same questions once more with the state let go, as an evicted
/// profile answers them: their p50 and p95, and how many were answered
/// otherwise than warm (none may be: the state is a cache over SQLite).
fn cold_pass(memory: &mut Native, conversations: &[Conversation], warm: Vec<Vec<Vec<String>>>) {
    if !memory.go_cold() {
        return;
    }
    let mut latencies: Vec<Duration> = Vec::new();
    let mut differ: Vec<String> = Vec::new();
    let asked = conversations
        .iter()
        .flat_map(|c| c.sessions.last().map(|last| c.questions.iter().filter(|q| !q.evidence.is_empty()).map(move |q| (q, last))))
        .flatten();
    for ((q, last), warm) in asked.zip(warm) {
        let t0 = Instant::now();
        let cold = memory.recall(&q.text, last);
        latencies.push(t0.elapsed());
        if cold != warm {
            differ.push(q.text.clone());
        }
    }
    longmemeval::print_cold(&mut latencies, &differ);
}

/// Each conversation's sessions, ids prefixed with the conversation's.
fn conversation_sessions(conversations: &[Conversation]) -> Vec<(String, Session)> {
    let mut out = Vec::new();
    for conv in conversations {
        for s in &conv.sessions {
            out.push((format!("{}/session_{}", conv.id, s.number), prefixed(&conv.id, s)));
        }
    }
    out
}

/// The sessions of the files `LOCOMO_FILLER` names, each once, ids
/// prefixed with the file's stem.
fn filler_sessions() -> Vec<(String, Session)> {
    let mut out = Vec::new();
    for path in std::env::var("LOCOMO_FILLER").unwrap_or_default().split_whitespace() {
        let raw = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("failed to read {path}: {e}"));
        let data: serde_json::Value = serde_json::from_str(&raw).unwrap_or_else(|e| panic!("{path} is not JSON: {e}"));
        let questions = longmemeval::parse(&data).unwrap_or_else(|e| panic!("{path}: {e}"));
        let stem = std::path::Path::new(path).file_stem().map_or(path.to_string(), |s| s.to_string_lossy().to_string());
        let mut seen: HashSet<String> = HashSet::new();
        for q in &questions {
            for (sid, s) in longmemeval::harness_sessions(q) {
                if seen.insert(format!("{sid}#{}", s.turns.first().map_or("", |t| t.dia_id.as_str()))) {
                    out.push((format!("{stem}/{sid}"), prefixed(&stem, &s)));
                }
            }
        }
    }
    out
}

/// `s` with every turn's id prefixed by `prefix/`.
fn prefixed(prefix: &str, s: &Session) -> Session {
    Session {
        number: s.number,
        timestamp: s.timestamp.clone(),
        millis: s.millis,
        turns: s.turns.iter().map(|t| Turn { dia_id: format!("{prefix}/{}", t.dia_id), speaker: t.speaker.clone(), content: t.content.clone() }).collect(),
    }
}
