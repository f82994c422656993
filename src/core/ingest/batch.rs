//! Grouping candidates for the judging stages (verification and
//! classification): consecutive candidates extracted from one transcript
//! go to the reasoner together, a bounded number at a time, so a language
//! model reads each transcript once per batch instead of once per
//! candidate. Grouping never reorders candidates.

use crate::core::provider::{Candidate, Transcript};
use std::rc::Rc;

/// The candidates of the batches a model fault failed: each dropped with
/// the fault as its reason, and the lines they cite (whose messages a
/// retry judges again).
#[derive(Debug, Default)]
pub struct Faults {
    pub dropped: Vec<crate::core::model::Dropped>,
    pub lines: Vec<usize>,
}

impl Faults {
    /// Records a failed batch's candidates, each dropped for `reason`.
    pub fn add(&mut self, candidates: Vec<Candidate>, reason: &str) {
        for c in candidates {
            self.lines.extend(c.lines.iter().copied());
            self.dropped.push(crate::core::model::Dropped { content: c.content, reason: reason.to_string() });
        }
    }
}

/// Most candidates judged in one reasoner call.
pub const BATCH_SIZE: usize = 16;

/// The message span a transcript covers: transcripts with equal spans hold
/// the same lines.
fn span(t: &Transcript) -> (usize, usize, usize) {
    let first = t.lines.first().map_or(0, |l| l.index);
    let last = t.lines.last().map_or(0, |l| l.index);
    (first, last, t.lines.len())
}

/// Consecutive candidates of one transcript, at most `size` per batch.
pub fn batches(items: Vec<(Candidate, Rc<Transcript>)>, size: usize) -> Vec<(Rc<Transcript>, Vec<Candidate>)> {
    let mut out: Vec<(Rc<Transcript>, Vec<Candidate>)> = Vec::new();
    for (c, t) in items {
        match out.last_mut() {
            Some((bt, cs)) if cs.len() < size.max(1) && span(bt) == span(&t) => cs.push(c),
            _ => out.push((t, vec![c])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::provider::Line;

    fn t(range: std::ops::Range<usize>) -> Rc<Transcript> {
        let lines = range.map(|i| Line { index: i, message_id: format!("m{i}"), role: "user".into(), date: None, text: "".into() }).collect();
        Rc::new(Transcript { session_id: "s".into(), lines })
    }

    fn c(s: &str) -> Candidate {
        Candidate { content: s.into(), lines: vec![0], event_date: None }
    }

    #[test]
    fn test_batches_group_by_transcript_and_cap_size_in_order() {
        let items = vec![(c("a"), t(0..4)), (c("b"), t(0..4)), (c("c"), t(0..4)), (c("d"), t(2..6))];
        let b = batches(items, 2);
        let names: Vec<Vec<&str>> = b.iter().map(|(_, cs)| cs.iter().map(|c| c.content.as_str()).collect()).collect();
        assert_eq!(names, vec![vec!["a", "b"], vec!["c"], vec!["d"]]);
        assert_eq!(b[2].0.lines[0].index, 2);
    }
}
