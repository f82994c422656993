//! Crowding: one message's many memories must not fill a recall.
//!
//! A long message (an assistant's detailed answer, a pasted document)
//! yields many memories, and they rank together: each carries the
//! message's words, and the message channel ranks them all at once. Left
//! alone they fill every candidate slot, and the other messages that
//! answer the question never show (a recall of twenty memories may then
//! cite two messages). So a memory joins the candidates only while one of
//! its source messages has fewer than [`MAX_PER_MESSAGE`] memories there
//! already; the rest are passed over, in fused order, and the next
//! memories take their places. Scores are untouched, so the candidates
//! stay in descending order of score.
//!
//! Where every message yields a memory or two (short turns, as in a chat
//! between people), nothing is passed over: the rule acts only where its
//! signal (several memories of one message competing) is present.

use crate::core::model::Memory;
use std::collections::HashMap;

/// Most candidates that cite one message alone.
pub const MAX_PER_MESSAGE: usize = 2;

/// The candidates, in order, without the memories whose every source
/// message already has [`MAX_PER_MESSAGE`] memories among them; at most
/// `limit`. A memory that cites no message (remembered directly) is never
/// passed over.
pub fn spread<T>(ranked: impl IntoIterator<Item = (Memory, T)>, limit: usize) -> Vec<(Memory, T)> {
    let mut crowding = Crowding::default();
    ranked.into_iter().filter(|(m, _)| crowding.admits(m)).take(limit).collect()
}

/// The candidates placed so far, by source message: [`spread`] one
/// memory at a time, for a caller that reads candidates in batches.
#[derive(Default)]
pub struct Crowding {
    placed: HashMap<String, usize>,
}

impl Crowding {
    /// Whether `m`, next in fused order, joins the candidates (and if so,
    /// counts it).
    pub fn admits(&mut self, m: &Memory) -> bool {
        let crowded = !m.source_message_ids.is_empty() && m.source_message_ids.iter().all(|s| self.placed.get(s).copied().unwrap_or(0) >= MAX_PER_MESSAGE);
        if crowded {
            return false;
        }
        for s in &m.source_message_ids {
            let n = self.placed.entry(s.clone()).or_insert(0);
            *n = n.saturating_add(1);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(id: &str, sources: &[&str]) -> (Memory, ()) {
        let mut m = Memory::sample(id, id);
        m.source_message_ids = sources.iter().map(|s| s.to_string()).collect();
        (m, ())
    }

    fn ids(v: Vec<(Memory, ())>) -> Vec<String> {
        v.into_iter().map(|(m, _)| m.id).collect()
    }

    #[test]
    fn test_a_long_messages_memories_make_room_for_other_messages() {
        let ranked = vec![memory("a1", &["long"]), memory("a2", &["long"]), memory("a3", &["long"]), memory("a4", &["long"]), memory("b", &["short"])];
        assert_eq!(ids(spread(ranked, 3)), ["a1", "a2", "b"]);
    }

    #[test]
    fn test_short_turns_are_left_as_they_are() {
        let ranked = vec![memory("a", &["m1"]), memory("b", &["m2"]), memory("c", &["m1"]), memory("d", &["m3"])];
        assert_eq!(ids(spread(ranked, 10)), ["a", "b", "c", "d"]);
    }

    #[test]
    fn test_a_memory_bringing_a_new_message_or_none_is_kept() {
        let ranked = vec![memory("a1", &["x"]), memory("a2", &["x"]), memory("both", &["x", "y"]), memory("direct", &[]), memory("a3", &["x"])];
        assert_eq!(ids(spread(ranked, 10)), ["a1", "a2", "both", "direct"]);
    }
}
