//! Weighted Reciprocal Rank Fusion, pure.
//!
//! `score(d) = Σ_c w_c / (K + rank_c(d))` over the channels `c` that
//! ranked `d` (ranks start at 1). Ties go to the more recent memory (the
//! larger id, since memory ids sort by time). Every fused hit carries its
//! trace: which channel ranked it where and what that contributed, so the
//! fused score is exactly the sum of the trace's contributions.

use serde::{Deserialize, Serialize};

/// The RRF constant: larger flattens the curve between ranks.
pub const K: f64 = 60.0;

/// The five channels, with their weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub enum Channel {
    /// Exact topic-key lookup: the strongest signal.
    Key,
    /// FTS5 over memories (Porter).
    Fts,
    /// Vector search with the HyDE statement's embedding.
    Hyde,
    /// Vector search with the query's embedding.
    Vector,
    /// FTS5 over raw messages: the safety net, weighted least.
    Messages,
}

impl Channel {
    pub const ALL: [Channel; 5] = [Channel::Key, Channel::Fts, Channel::Hyde, Channel::Vector, Channel::Messages];

    pub fn weight(self) -> f64 {
        match self {
            Channel::Key => WEIGHT_KEY,
            Channel::Fts => WEIGHT_FTS,
            Channel::Hyde => WEIGHT_HYDE,
            Channel::Vector => WEIGHT_VECTOR,
            Channel::Messages => WEIGHT_MESSAGES,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Channel::Key => "key",
            Channel::Fts => "fts",
            Channel::Hyde => "hyde",
            Channel::Vector => "vector",
            Channel::Messages => "messages",
        }
    }
}

pub const WEIGHT_KEY: f64 = 2.0;
pub const WEIGHT_FTS: f64 = 1.0;
pub const WEIGHT_HYDE: f64 = 0.8;
pub const WEIGHT_VECTOR: f64 = 0.8;
pub const WEIGHT_MESSAGES: f64 = 0.5;

/// One channel's ranking: ids best first.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranking {
    pub channel: Channel,
    pub ids: Vec<String>,
}

/// One channel's part in a fused score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Contribution {
    pub channel: Channel,
    pub rank: usize,
    pub weight: f64,
    pub contribution: f64,
}

/// A fused hit with its explanation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fused {
    pub id: String,
    pub score: f64,
    pub trace: Vec<Contribution>,
}

/// Fuses rankings. An id ranked by a channel more than once counts at its
/// best rank.
pub fn fuse(rankings: &[Ranking]) -> Vec<Fused> {
    let mut by_id: std::collections::HashMap<&str, Fused> = std::collections::HashMap::new();
    for r in rankings {
        let mut seen = std::collections::HashSet::new();
        for (i, id) in r.ids.iter().enumerate() {
            if !seen.insert(id.as_str()) {
                continue;
            }
            let rank = i + 1;
            let weight = r.channel.weight();
            let contribution = weight / (K + rank as f64);
            let f = by_id.entry(id.as_str()).or_insert_with(|| Fused { id: id.clone(), score: 0.0, trace: Vec::new() });
            f.trace.push(Contribution { channel: r.channel, rank, weight, contribution });
        }
    }
    let mut out: Vec<Fused> = by_id
        .into_values()
        .map(|mut f| {
            f.trace.sort_by_key(|c| c.channel);
            f.score = f.trace.iter().map(|c| c.contribution).sum();
            f
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.id.cmp(&a.id)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(channel: Channel, ids: &[&str]) -> Ranking {
        Ranking { channel, ids: ids.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn test_fused_score_is_sum_of_contributions() {
        let out = fuse(&[r(Channel::Fts, &["a", "b"]), r(Channel::Key, &["b"]), r(Channel::Messages, &["c", "a"])]);
        for f in &out {
            let sum: f64 = f.trace.iter().map(|c| c.contribution).sum();
            assert!((f.score - sum).abs() < 1e-12);
        }
        assert_eq!(out[0].id, "b", "key match outweighs");
    }

    #[test]
    fn test_single_channel_hit_can_win() {
        let out = fuse(&[r(Channel::Key, &["only"]), r(Channel::Messages, &["x"])]);
        assert_eq!(out[0].id, "only");
    }

    #[test]
    fn test_ties_go_to_the_more_recent_id() {
        let out = fuse(&[r(Channel::Fts, &["0001"]), r(Channel::Fts, &[]), Ranking { channel: Channel::Vector, ids: vec![] }]);
        assert_eq!(out.len(), 1);
        let tie = fuse(&[r(Channel::Hyde, &["0001"]), r(Channel::Vector, &["0002"])]);
        assert_eq!(tie[0].id, "0002");
    }
}
