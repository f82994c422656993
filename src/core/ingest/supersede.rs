//! Supersession: a new keyed memory replaces the active memory holding the
//! same topic key. The old one is kept, marked superseded, and points
//! forward to its successor; the new one points back.

use crate::core::model::Memory;

/// One replacement: `old` is superseded by `new`.
#[derive(Clone, Debug, PartialEq)]
pub struct Replacement {
    pub old: String,
    pub new: String,
}

/// Plans replacements for `new` memories given the active memories that
/// already hold their keys. Among several new memories with one key, the
/// last (latest in the conversation) wins and supersedes the earlier ones.
/// Sets `supersedes` on the new memories.
pub fn plan(new: &mut [Memory], existing_by_key: &dyn Fn(&str) -> Vec<String>) -> Vec<Replacement> {
    let mut out = Vec::new();
    let mut holder: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for m in new.iter_mut() {
        let Some(key) = m.key.clone() else { continue };
        let previous: Vec<String> = match holder.get(&key) {
            Some(id) => vec![id.clone()],
            None => existing_by_key(&key),
        };
        for old in &previous {
            out.push(Replacement { old: old.clone(), new: m.id.clone() });
        }
        if let Some(first) = previous.first() {
            m.supersedes = Some(first.clone());
        }
        holder.insert(key, m.id.clone());
    }
    out
}
