//! Consolidation decided by rules: each kind of group gets its one
//! decision. Duplicates merge into their fullest wording, contradictions
//! keep the newest as the current version, fine-grained statements fold
//! into one memory whose content is theirs joined (a speaker prefix they
//! share is written once; events get their date in front), and stale
//! tasks retire.
//!
//! What it does not do: rewrite, summarize or judge what the memories
//! say; a model does that through the same seam (`core::llm`).

use super::extract::label_of;
use crate::core::provider::{Consolidation, Group, GroupKind};

/// The decision for `g`.
pub fn decide(g: &Group) -> Consolidation {
    let reason = g.why.clone();
    match g.kind {
        // The wording with the most words keeps the most detail; of equals,
        // the newest.
        GroupKind::Duplicates => match g.members.iter().max_by_key(|m| crate::core::text::content_words(&m.content).len()) {
            Some(best) => Consolidation::Merge { survivor: best.id.clone(), reason },
            None => Consolidation::Keep { reason: "an empty group".into() },
        },
        GroupKind::Contradiction => Consolidation::Supersede { reason },
        GroupKind::Siblings | GroupKind::Events => Consolidation::Fold { content: folded(g), reason },
        GroupKind::StaleTask => Consolidation::Retire { reason },
    }
}

/// The members' contents joined: a `Name: ` prefix all share written
/// once, each statement ending in a full stop; events dated.
pub fn folded(g: &Group) -> String {
    let prefix = g.members.first().and_then(|m| label_of(&m.content)).map(|(label, _)| format!("{label}: "));
    let prefix = prefix.filter(|p| g.members.iter().all(|m| m.content.starts_with(p.as_str())));
    let mut parts: Vec<String> = Vec::new();
    for m in &g.members {
        let body = prefix.as_deref().and_then(|p| m.content.strip_prefix(p)).unwrap_or(&m.content).trim();
        let mut s = body.to_string();
        if !s.ends_with(['.', '!', '?']) {
            s.push('.');
        }
        if !parts.contains(&s) {
            parts.push(s);
        }
    }
    let date = match g.kind {
        GroupKind::Events => g.members.first().and_then(|m| m.event_date.clone()).map(|d| format!("On {d}: ")),
        _ => None,
    };
    format!("{}{}{}", prefix.unwrap_or_default(), date.unwrap_or_default(), parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::{Memory, MemoryType};

    #[test]
    fn test_a_shared_speaker_is_written_once_and_events_are_dated() {
        let m = |c: &str| {
            let mut m = Memory::sample("x", c);
            m.kind = MemoryType::Event;
            m.event_date = Some("2023-07-05".into());
            m
        };
        let g = Group { kind: GroupKind::Events, members: vec![m("Mel: took the kids to the museum"), m("Mel: We had a picnic!")], why: String::new() };
        assert_eq!(folded(&g), "Mel: On 2023-07-05: took the kids to the museum. We had a picnic!");
    }
}
