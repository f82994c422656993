//! Classification: type, topic key, summary and search queries.

use crate::core::error::Result;
use crate::core::provider::{Candidate, Classification, Reasoner, Transcript};

pub async fn run(
    reasoner: &dyn Reasoner,
    items: Vec<(Candidate, Transcript)>,
) -> Result<Vec<(Candidate, Classification, Transcript)>> {
    let mut out = Vec::with_capacity(items.len());
    for (c, t) in items {
        let cls = reasoner.classify(&t, std::slice::from_ref(&c)).await?;
        if let Some(cls) = cls.into_iter().next() {
            out.push((c, normalize(cls), t));
        }
    }
    Ok(out)
}

/// Keeps keys only on keyed types, lowercased `a.b_c`, and 3-5 queries.
pub fn normalize(mut c: Classification) -> Classification {
    c.key = if c.kind.is_keyed() { c.key.as_deref().and_then(normalize_key) } else { None };
    c.search_queries.retain(|q| !q.trim().is_empty());
    c.search_queries.dedup();
    c.search_queries.truncate(5);
    c
}

/// `"User / Package Manager"` -> `user.package_manager`.
pub fn normalize_key(k: &str) -> Option<String> {
    let parts: Vec<String> = k
        .split(['.', '/', ':'])
        .map(|p| {
            p.trim()
                .to_lowercase()
                .chars()
                .map(|c| if c.is_alphanumeric() { c } else { '_' })
                .collect::<String>()
                .split('_')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("_")
        })
        .filter(|p| !p.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("."))
}

#[cfg(test)]
mod tests {
    #[test]
    fn test_keys_are_normalized() {
        assert_eq!(super::normalize_key("User / Package Manager").as_deref(), Some("user.package_manager"));
        assert_eq!(super::normalize_key("  "), None);
    }
}
