//! Extraction: the full pass over overlapping chunks (up to four at once)
//! and, for longer conversations, the detail pass over small windows; then
//! merge and dedupe.
//!
//! A chunk whose extraction fails (a provider error, a reply that could
//! not be parsed) is reported as dropped, with the span of messages it
//! covered; the other chunks still count. Extraction does not judge what
//! it finds: verification and classification do.

use crate::core::ingest::{chunk, transcript};
use crate::core::model::{Dropped, Message};
use crate::core::provider::{Candidate, Pass, Reasoner, Transcript};
use futures::stream::{self, StreamExt};
use std::rc::Rc;

/// Chunks processed concurrently.
pub const MAX_CONCURRENT_CHUNKS: usize = 4;

/// Every candidate with the transcript it was extracted from, and a record
/// of each chunk whose extraction failed.
pub async fn run(reasoner: &dyn Reasoner, session_id: &str, messages: &[Message]) -> (Vec<(Candidate, Rc<Transcript>)>, Vec<Dropped>) {
    let lengths: Vec<usize> = messages.iter().map(|m| m.content.len().saturating_add(m.role.len()).saturating_add(8)).collect();
    let lines = transcript::lines(messages, None);
    let mut jobs: Vec<(Transcript, Pass)> =
        chunk::split(&lengths, chunk::CHUNK_CHARS, chunk::CHUNK_OVERLAP).into_iter().map(|r| (transcript::build(session_id, &lines, r), Pass::Full)).collect();
    if messages.len() >= chunk::DETAIL_MIN_MESSAGES {
        jobs.extend(
            chunk::windows(messages.len(), chunk::DETAIL_WINDOW, chunk::DETAIL_STEP)
                .into_iter()
                .map(|r| (transcript::build(session_id, &lines, r), Pass::Detail)),
        );
    }
    drop(lines);
    let results: Vec<(Transcript, Pass, _)> = stream::iter(jobs)
        .map(|(t, pass)| async move {
            let found = reasoner.extract(&t, pass).await;
            (t, pass, found)
        })
        .buffered(MAX_CONCURRENT_CHUNKS)
        .collect()
        .await;
    let mut found = Vec::new();
    let mut failed = Vec::new();
    for (t, pass, result) in results {
        // One transcript shared by the candidates drawn from it.
        let t = Rc::new(t);
        match result {
            Ok(cs) => found.extend(cs.into_iter().map(|c| (c, Rc::clone(&t)))),
            Err(e) => failed.push(Dropped { content: describe(&t, pass), reason: format!("extraction failed: {e}") }),
        }
    }
    (merge(found), failed)
}

/// `"messages 0-3 (full pass)"`: what a failed extraction job covered.
fn describe(t: &Transcript, pass: Pass) -> String {
    let first = t.lines.first().map_or(0, |l| l.index);
    let last = t.lines.last().map_or(0, |l| l.index);
    let pass = match pass {
        Pass::Full => "full",
        Pass::Detail => "detail",
    };
    format!("messages {first}-{last} ({pass} pass)")
}

/// Dedupes candidates by normalized content; the first keeps its place and
/// gains the other's cited lines.
pub fn merge(items: Vec<(Candidate, Rc<Transcript>)>) -> Vec<(Candidate, Rc<Transcript>)> {
    let mut out: Vec<(Candidate, Rc<Transcript>)> = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (c, t) in items {
        let norm = normalize(&c.content);
        if norm.is_empty() {
            continue;
        }
        match seen.get(&norm) {
            Some(&i) => {
                // `seen` holds places in `out`.
                if let Some((kept, _)) = out.get_mut(i) {
                    for l in c.lines {
                        if !kept.lines.contains(&l) {
                            kept.lines.push(l);
                        }
                    }
                }
            }
            None => {
                seen.insert(norm, out.len());
                out.push((c, t));
            }
        }
    }
    out
}

fn normalize(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric() || c.is_whitespace()).collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}
