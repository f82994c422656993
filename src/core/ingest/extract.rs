//! Extraction: the full pass over overlapping chunks (up to four at once)
//! and, for longer conversations, the detail pass over small windows; then
//! merge and dedupe.

use crate::core::error::Result;
use crate::core::ingest::{chunk, transcript};
use crate::core::model::Message;
use crate::core::provider::{Candidate, Pass, Reasoner, Transcript};
use futures::stream::{self, StreamExt, TryStreamExt};

/// Chunks processed concurrently.
pub const MAX_CONCURRENT_CHUNKS: usize = 4;

/// Every candidate with the transcript it was extracted from.
pub async fn run(
    reasoner: &dyn Reasoner,
    session_id: &str,
    messages: &[Message],
) -> Result<Vec<(Candidate, Transcript)>> {
    let lengths: Vec<usize> = messages.iter().map(|m| m.content.len() + m.role.len() + 8).collect();
    let mut jobs: Vec<(Transcript, Pass)> = chunk::split(&lengths, chunk::CHUNK_CHARS, chunk::CHUNK_OVERLAP)
        .into_iter()
        .map(|r| (transcript::build(session_id, messages, r, None), Pass::Full))
        .collect();
    if messages.len() >= chunk::DETAIL_MIN_MESSAGES {
        jobs.extend(
            chunk::windows(messages.len(), chunk::DETAIL_WINDOW, chunk::DETAIL_STEP)
                .into_iter()
                .map(|r| (transcript::build(session_id, messages, r, None), Pass::Detail)),
        );
    }
    let results: Vec<Vec<(Candidate, Transcript)>> = stream::iter(jobs)
        .map(|(t, pass)| async move {
            let found = reasoner.extract(&t, pass).await?;
            Ok::<_, crate::core::error::Error>(found.into_iter().map(|c| (c, t.clone())).collect())
        })
        .buffered(MAX_CONCURRENT_CHUNKS)
        .try_collect()
        .await?;
    Ok(merge(results.into_iter().flatten().collect()))
}

/// Dedupes candidates by normalized content; the first keeps its place and
/// gains the other's cited lines.
pub fn merge(items: Vec<(Candidate, Transcript)>) -> Vec<(Candidate, Transcript)> {
    let mut out: Vec<(Candidate, Transcript)> = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (c, t) in items {
        let norm = normalize(&c.content);
        if norm.is_empty() {
            continue;
        }
        match seen.get(&norm) {
            Some(&i) => {
                for l in c.lines {
                    if !out[i].0.lines.contains(&l) {
                        out[i].0.lines.push(l);
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
    s.chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}
