//! Verification: each candidate is checked against its transcript (the
//! eight checks of SPEC.md section 3 are the reasoner's job); it passes, is
//! corrected, or is dropped with the reason kept.
//!
//! Candidates go to the reasoner in batches (see [`batch`]). A batch whose
//! verification fails (a provider error, a reply that could not be parsed)
//! is dropped with the error as the reason: unverified text is never
//! stored, and the failure is reported, not raised.

use crate::core::ingest::batch::{self, Faults};
use crate::core::model::Dropped;
use crate::core::provider::{Candidate, Reasoner, Transcript, Verdict};
use std::rc::Rc;

/// Verified candidates, the ones verification dropped, and the ones whose
/// verification failed (a model fault: worth retrying later).
pub async fn run(reasoner: &dyn Reasoner, items: Vec<(Candidate, Rc<Transcript>)>) -> (Vec<(Candidate, Rc<Transcript>)>, Vec<Dropped>, Faults) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let mut failed = Faults::default();
    for (t, candidates) in batch::batches(items, batch::BATCH_SIZE) {
        match reasoner.verify(&t, &candidates).await {
            Ok(verdicts) => {
                for (i, c) in candidates.into_iter().enumerate() {
                    let verdict = verdicts.get(i).cloned().unwrap_or_else(|| Verdict::Drop { reason: "the verifier returned no verdict for it".into() });
                    match apply(c, verdict) {
                        Ok(c) => kept.push((c, t.clone())),
                        Err(d) => dropped.push(d),
                    }
                }
            }
            Err(e) => failed.add(candidates, &format!("verification failed: {e}")),
        }
    }
    (kept, dropped, failed)
}

/// Applies one verdict to its candidate. A correction to empty text is a
/// drop.
pub fn apply(mut c: Candidate, v: Verdict) -> std::result::Result<Candidate, Dropped> {
    match v {
        Verdict::Pass => Ok(c),
        Verdict::Correct { content, reason } => {
            if content.trim().is_empty() {
                return Err(Dropped { content: c.content, reason: format!("corrected to nothing: {reason}") });
            }
            c.content = content.trim().to_string();
            Ok(c)
        }
        Verdict::Drop { reason } => Err(Dropped { content: c.content, reason }),
    }
}
