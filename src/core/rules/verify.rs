//! Rule-based verification against the transcript.
//!
//! The eight checks of SPEC.md section 3 reduce, without a model, to
//! grounding: every content word of the candidate (after the speaker
//! label) must appear in its cited lines (entity, object, location,
//! organization and relation words are all content words), dates in the
//! candidate must appear in the resolved lines (temporal accuracy), the
//! candidate must cite at least one line (completeness of provenance), and
//! nothing it says may be absent from the source (inferred facts). A
//! candidate with a few unsupported words is corrected to the cited
//! sentence; one mostly unsupported is dropped.

use crate::core::provider::{Candidate, Transcript, Verdict};
use crate::core::text;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Share of content words that must be found in the cited lines.
pub const MIN_GROUNDING: f64 = 0.8;
/// Share below [`MIN_GROUNDING`] at which a candidate is still corrected
/// to its cited sentence; under it, dropped.
pub const MIN_CORRECTABLE_GROUNDING: f64 = 0.5;

/// Verifies every candidate of one transcript, stemming each cited line
/// once (candidates of one message cite the same line).
pub fn verify_all(t: &Transcript, cs: &[Candidate]) -> Vec<Verdict> {
    let mut stems: HashMap<usize, HashSet<String>> = HashMap::default();
    cs.iter().map(|c| verify_with(t, c, &mut stems)).collect()
}

pub fn verify(t: &Transcript, c: &Candidate) -> Verdict {
    verify_with(t, c, &mut HashMap::default())
}

/// [`verify`] with the stems of transcript lines (by index) kept in
/// `stems` across candidates.
fn verify_with(t: &Transcript, c: &Candidate, stems: &mut HashMap<usize, HashSet<String>>) -> Verdict {
    if c.lines.is_empty() {
        return Verdict::Drop { reason: "cites no source line".into() };
    }
    let lines: Vec<&crate::core::provider::Line> = t.lines.iter().filter(|l| c.lines.contains(&l.index)).collect();
    let cited: Vec<&str> = lines.iter().map(|l| &*l.text).collect();
    let Some(first_line) = lines.first() else {
        return Verdict::Drop { reason: "cites lines outside its transcript".into() };
    };
    let first_cited = &first_line.text;
    for l in &lines {
        stems.entry(l.index).or_insert_with(|| text::stems(&l.text).into_iter().collect());
    }
    let source: HashSet<&String> = lines.iter().flat_map(|l| stems.get(&l.index).into_iter().flatten()).collect();
    let body = super::extract::statement_body(&c.content, &first_line.role);
    let words = text::stems(body);
    if words.is_empty() {
        return Verdict::Drop { reason: "states nothing".into() };
    }
    let grounded = words.iter().filter(|w| source.contains(w)).count();
    let share = grounded as f64 / words.len() as f64;
    if let Some(d) = crate::core::dates::first_date(body) {
        if !cited.iter().any(|s| s.contains(&d)) {
            return Verdict::Drop { reason: format!("temporal accuracy: date {d} is not in the source") };
        }
    }
    if share >= MIN_GROUNDING {
        Verdict::Pass
    } else if share >= MIN_CORRECTABLE_GROUNDING {
        Verdict::Correct {
            content: format!("{}: {}", super::extract::speaker(&first_line.role), first_cited.trim()),
            reason: format!("only {:.0}% of its words are in the source; replaced by the source sentence", share * 100.0),
        }
    } else {
        Verdict::Drop { reason: format!("unsupported: only {:.0}% of its words are in the source", share * 100.0) }
    }
}
