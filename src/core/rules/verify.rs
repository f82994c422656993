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
    // The day the candidate names ("2026-04-15", "on April 15") must be
    // one its cited lines name, however they write it.
    let said_on = |l: &crate::core::provider::Line| l.date.as_deref().and_then(crate::core::time::date_of);
    if let Some(d) = crate::core::dates::event_date(body, said_on(first_line)) {
        if !lines.iter().any(|l| l.text.contains(&d) || crate::core::dates::days_named(&l.text, said_on(l)).any(|named| named == d)) {
            return Verdict::Drop { reason: format!("temporal accuracy: date {d} is not in the source") };
        }
    }
    if share >= MIN_GROUNDING {
        Verdict::Pass
    } else if share >= MIN_CORRECTABLE_GROUNDING {
        Verdict::Correct {
            content: super::extract::labelled(&first_line.role, first_cited.trim()),
            reason: format!("only {:.0}% of its words are in the source; replaced by the source sentence", share * 100.0),
        }
    } else {
        Verdict::Drop { reason: format!("unsupported: only {:.0}% of its words are in the source", share * 100.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::provider::Line;

    fn said(text: &str) -> Transcript {
        Transcript {
            session_id: "s".into(),
            lines: vec![Line { index: 0, message_id: "m0".into(), role: "user".into(), date: Some("2026-04-16".into()), text: text.into() }],
        }
    }

    fn candidate(content: &str) -> Candidate {
        Candidate { content: content.into(), lines: vec![0], event_date: None }
    }

    /// A candidate naming a day its source does not is dropped, however
    /// either writes the day; one naming a day its source names, written
    /// otherwise, is not dropped for it.
    #[test]
    fn test_a_day_the_source_does_not_name_fails_temporal_accuracy() {
        let source = "I deployed the new billing service to the production cluster in Frankfurt.";
        let v = verify(&said(source), &candidate(&format!("User: {} on March 3.", source.trim_end_matches('.'))));
        assert!(matches!(&v, Verdict::Drop { reason } if reason.contains("temporal accuracy")), "{v:?}");
        let v = verify(&said(source), &candidate(&format!("User: {} on 2026-03-03.", source.trim_end_matches('.'))));
        assert!(matches!(&v, Verdict::Drop { reason } if reason.contains("temporal accuracy")), "{v:?}");
        for (line, claim) in [
            ("I deployed the billing service on 3 March.", "User: I deployed the billing service on March 3."),
            ("I deployed the billing service on March 3, 2026.", "User: I deployed the billing service on 2026-03-03."),
        ] {
            let v = verify(&said(line), &candidate(claim));
            assert!(!matches!(&v, Verdict::Drop { reason } if reason.contains("temporal accuracy")), "{line} / {claim}: {v:?}");
        }
    }
}
