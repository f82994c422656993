//! What one recall reads, decided once from its request and the time, and
//! handed to every step and channel instead of a row of flags.

use crate::core::api::RecallRequest;
use crate::core::model::{ResponseLength, ThinkingLevel};

/// Hits each channel returns at most, at the default thinking level (the
/// messages channel: messages).
pub const CHANNEL_DEPTH: usize = 50;
/// Full-text hits scored before the corrections re-rank them, at the
/// default thinking level: deeper than [`CHANNEL_DEPTH`] so a boosted or
/// neighbour-lifted hit can rise into it.
pub const FTS_POOL: usize = 100;
use crate::core::time::{date_of, iso};

/// The scope of one recall.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecallScope {
    pub query: String,
    /// Superseded, forgotten and expired memories too.
    pub include_inactive: bool,
    /// Candidates returned at most.
    pub limit: usize,
    /// The date relative phrases and "how long ago" are computed from.
    pub reference: chrono::NaiveDate,
    /// Now, as stored timestamps are written (expiry is checked against it).
    pub now_iso: String,
    /// Whether the response carries the explanation (the channels then
    /// say why each hit holds its place).
    pub explain: bool,
    pub length: ResponseLength,
    /// How widely the channels search.
    pub thinking: ThinkingLevel,
}

impl RecallScope {
    /// The scope of `req` at `now` (epoch milliseconds).
    pub fn new(req: &RecallRequest, now: i64) -> RecallScope {
        let opts = &req.options;
        let today = chrono::DateTime::from_timestamp_millis(now).unwrap_or_default().date_naive();
        RecallScope {
            query: req.query.clone(),
            include_inactive: opts.include_inactive.unwrap_or(false),
            limit: opts.limit.unwrap_or(crate::core::api::DEFAULT_RECALL_LIMIT),
            reference: opts.reference_date.as_deref().and_then(date_of).unwrap_or(today),
            now_iso: iso(now),
            explain: opts.explain.unwrap_or(false),
            length: opts.response_length.unwrap_or_default(),
            thinking: opts.thinking_level.unwrap_or_default(),
        }
    }

    /// Hits each channel returns at most: [`CHANNEL_DEPTH`] times the
    /// thinking level's breadth.
    pub fn channel_depth(&self) -> usize {
        CHANNEL_DEPTH.saturating_mul(self.thinking.breadth())
    }

    /// Full-text hits scored before the corrections re-rank them:
    /// [`FTS_POOL`] times the thinking level's breadth.
    pub fn fts_pool(&self) -> usize {
        FTS_POOL.saturating_mul(self.thinking.breadth())
    }

    /// Live memories only, at `now`, without explanations: what a stage
    /// run alone (a benchmark, a test) reads.
    pub fn live_at(now: i64) -> RecallScope {
        RecallScope { now_iso: iso(now), limit: crate::core::api::DEFAULT_RECALL_LIMIT, ..RecallScope::default() }
    }
}
