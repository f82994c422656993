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
use std::collections::HashSet;
use std::rc::Rc;

/// Chunks processed concurrently.
pub const MAX_CONCURRENT_CHUNKS: usize = 4;

/// The most candidates one message gives (those citing it first): past
/// it, its further statements are not kept as memories, and the report
/// says so once per message (the message itself is stored and searched
/// like any other). The rule-based extractor makes a memory of every
/// sentence that states something, so one 32 KB message of prose gave
/// ~400, each held at ~1.5 KB through the judging stages: an ingest of
/// 500 such messages would need several times the isolate's 128 MB. The
/// long-answer style gives 10.5 a message on average.
pub const MAX_MEMORIES_PER_MESSAGE: usize = 32;

/// A candidate with the transcript it was drawn from.
pub type Found = (Candidate, Rc<Transcript>);

/// What extraction found.
pub struct Extracted {
    /// Every candidate with the transcript it was drawn from, deduped.
    pub found: Vec<Found>,
    /// Each chunk whose extraction failed (a model fault: a retry may do
    /// better).
    pub failed: Vec<Dropped>,
    /// The lines of the chunks whose extraction failed.
    pub faulted: Vec<usize>,
    /// Each new message that gave more than [`MAX_MEMORIES_PER_MESSAGE`],
    /// and how many more.
    pub capped: Vec<Dropped>,
}

/// Runs extraction over `messages`: every chunk's candidates are merged
/// as they arrive, so what is held is bounded by the messages, not by
/// what the extractor returns. A candidate counts against the first new
/// message (in `fresh_ids`) it cites, or, citing none, the first it cites:
/// it is dropped later, but held meanwhile.
pub async fn run(reasoner: &dyn Reasoner, session_id: &str, messages: &[Message], fresh_ids: &HashSet<String>) -> Extracted {
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
    let mut results = stream::iter(jobs)
        .map(|(t, pass)| async move {
            let found = reasoner.extract(&t, pass).await;
            (t, pass, found)
        })
        .buffered(MAX_CONCURRENT_CHUNKS);
    let mut merged = Merged::new(MAX_MEMORIES_PER_MESSAGE);
    let mut failed = Vec::new();
    let mut faulted = Vec::new();
    let fresh = |i: usize| messages.get(i).is_some_and(|m| fresh_ids.contains(&m.id));
    let group = |lines: &[usize]| lines.iter().copied().filter(|&i| fresh(i)).min().or_else(|| lines.iter().copied().filter(|&i| i < messages.len()).min());
    while let Some((t, pass, result)) = results.next().await {
        // One transcript shared by the candidates drawn from it.
        let t = Rc::new(t);
        match result {
            Ok(cs) => cs.into_iter().for_each(|c| {
                let g = group(&c.lines);
                merged.add(c, &t, g)
            }),
            Err(e) => {
                faulted.extend(t.lines.iter().map(|l| l.index));
                failed.push(Dropped { content: describe(&t, pass), reason: format!("extraction failed: {e}") })
            }
        }
    }
    let (found, capped) = merged.finish(messages, fresh);
    Extracted { found, failed, faulted, capped }
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
    let mut merged = Merged::new(usize::MAX);
    for (c, t) in items {
        merged.add(c, &t, None);
    }
    merged.out
}

/// Candidates merged as they arrive ([`merge`]), at most `cap` a message.
struct Merged {
    out: Vec<(Candidate, Rc<Transcript>)>,
    /// Normalized content: its place in `out`.
    seen: std::collections::HashMap<String, usize>,
    cap: usize,
    /// By the message a candidate counts against: those kept, those past
    /// the cap (each content once, however many chunks find it again: a
    /// hash of it is kept, not the text).
    kept: std::collections::HashMap<usize, usize>,
    over: std::collections::BTreeMap<usize, usize>,
    over_seen: HashSet<u64>,
}

impl Merged {
    fn new(cap: usize) -> Merged {
        Merged { out: Vec::new(), seen: Default::default(), cap, kept: Default::default(), over: Default::default(), over_seen: Default::default() }
    }

    /// Adds a candidate counted against message `group` (none: not capped).
    fn add(&mut self, c: Candidate, t: &Rc<Transcript>, group: Option<usize>) {
        let norm = normalize(&c.content);
        if norm.is_empty() {
            return;
        }
        if let Some(&i) = self.seen.get(&norm) {
            // `seen` holds places in `out`.
            if let Some((kept, _)) = self.out.get_mut(i) {
                for l in c.lines {
                    if !kept.lines.contains(&l) {
                        kept.lines.push(l);
                    }
                }
            }
            return;
        }
        if let Some(g) = group {
            let count = self.kept.entry(g).or_insert(0);
            if *count >= self.cap {
                if self.over_seen.insert(hash_of(&norm)) {
                    let over = self.over.entry(g).or_insert(0);
                    *over = over.saturating_add(1);
                }
                return;
            }
            *count = count.saturating_add(1);
        }
        self.seen.insert(norm, self.out.len());
        self.out.push((c, Rc::clone(t)));
    }

    /// The candidates kept, and one drop per new message (`fresh`) past
    /// the cap (what a message already stored gave is dropped anyway).
    fn finish(self, messages: &[Message], fresh: impl Fn(usize) -> bool) -> (Vec<Found>, Vec<Dropped>) {
        let cap = self.cap;
        let capped = self
            .over
            .into_iter()
            .filter(|&(i, _)| fresh(i))
            .filter_map(|(i, n)| {
                Some(Dropped {
                    content: format!("{n} more statement{} of message {}", if n == 1 { "" } else { "s" }, messages.get(i)?.id),
                    reason: format!("a message gives at most {cap} memories: the rest of its statements are not kept as memories (the message itself is stored and searched)"),
                })
            })
            .collect();
        (self.out, capped)
    }
}

fn hash_of(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

fn normalize(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric() || c.is_whitespace()).collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}
