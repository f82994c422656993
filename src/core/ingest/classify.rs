//! Classification: type, topic key, summary and search queries, then
//! normalization (keys only on keyed types, in `subject.attribute` form;
//! 3-5 distinct queries).
//!
//! Candidates go to the reasoner in batches (see [`batch`]). A batch whose
//! classification fails is dropped with the error as the reason; the
//! failure is reported, not raised.

use crate::core::ingest::batch::{self, Faults};
use crate::core::provider::{Candidate, Classification, Reasoner, Transcript};
use std::rc::Rc;

/// Classified candidates, and the ones whose classification failed (a
/// model fault: worth retrying later).
pub async fn run(reasoner: &dyn Reasoner, items: Vec<(Candidate, Rc<Transcript>)>) -> (Vec<(Candidate, Classification, Rc<Transcript>)>, Faults) {
    let mut out = Vec::new();
    let mut failed = Faults::default();
    for (t, candidates) in batch::batches(items, batch::BATCH_SIZE) {
        match reasoner.classify(&t, &candidates).await {
            Ok(classes) => {
                let mut classes = classes.into_iter();
                for c in candidates {
                    match classes.next() {
                        Some(cls) => out.push((c, normalize(cls), t.clone())),
                        None => failed.add(vec![c], "the classifier returned nothing for it"),
                    }
                }
            }
            Err(e) => failed.add(candidates, &format!("classification failed: {e}")),
        }
    }
    (out, failed)
}

/// Keeps keys only on keyed types, lowercased `a.b_c`; keeps at most five
/// distinct, non-empty search queries, each cut to the longest query a
/// recall accepts.
pub fn normalize(mut c: Classification) -> Classification {
    c.key = if c.kind.is_keyed() { c.key.as_deref().and_then(crate::core::text::normalize_key) } else { None };
    let mut queries: Vec<String> = Vec::new();
    for q in c.search_queries.drain(..) {
        let q = crate::core::background::truncated(q.trim().to_string(), crate::core::api::MAX_QUERY_BYTES);
        if !q.is_empty() && !queries.iter().any(|p| p.eq_ignore_ascii_case(&q)) {
            queries.push(q);
        }
    }
    queries.truncate(crate::core::provider::MAX_CLASSIFIED_QUERIES);
    c.search_queries = queries;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::MemoryType;

    #[test]
    fn test_keys_are_normalized() {
        assert_eq!(crate::core::text::normalize_key("User / Package Manager").as_deref(), Some("user.package_manager"));
        assert_eq!(crate::core::text::normalize_key("  "), None);
    }

    #[test]
    fn test_normalize_drops_keys_of_unkeyed_types_and_duplicate_queries() {
        let c = Classification {
            kind: MemoryType::Event,
            key: Some("user.deploy".into()),
            summary: "s".into(),
            search_queries: vec!["When?".into(), " when? ".into(), "".into(), "Where?".into()],
        };
        let n = normalize(c);
        assert_eq!(n.key, None);
        assert_eq!(n.search_queries, vec!["When?", "Where?"]);
    }
}
