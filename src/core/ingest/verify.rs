//! Verification: each candidate is checked against its transcript; it
//! passes, is corrected, or is dropped with the reason kept.

use crate::core::error::Result;
use crate::core::model::Dropped;
use crate::core::provider::{Candidate, Reasoner, Transcript, Verdict};

/// Verified candidates, and the dropped ones with reasons.
pub async fn run(
    reasoner: &dyn Reasoner,
    items: Vec<(Candidate, Transcript)>,
) -> Result<(Vec<(Candidate, Transcript)>, Vec<Dropped>)> {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (c, t) in items {
        let verdict = reasoner.verify(&t, std::slice::from_ref(&c)).await?.into_iter().next().unwrap_or(Verdict::Pass);
        match apply(c, verdict) {
            Ok(c) => kept.push((c, t)),
            Err(d) => dropped.push(d),
        }
    }
    Ok((kept, dropped))
}

/// Applies one verdict to its candidate.
pub fn apply(mut c: Candidate, v: Verdict) -> std::result::Result<Candidate, Dropped> {
    match v {
        Verdict::Pass => Ok(c),
        Verdict::Correct { content, .. } => {
            c.content = content;
            Ok(c)
        }
        Verdict::Drop { reason } => Err(Dropped { content: c.content, reason }),
    }
}
