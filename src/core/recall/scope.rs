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
use crate::core::filter::Filter;
use crate::core::ports::SqlValue;
use crate::core::time::{date_of, iso};
use rustc_hash::FxHashSet as HashSet;

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
    /// Only memories passing this filter.
    pub filter: Option<Filter>,
    /// What was active at this instant (ISO-8601 UTC, as stored).
    pub as_of: Option<String>,
    /// With a filter or `asOf`: every memory the recall may return, read
    /// once ([`RecallScope::visible`]) for the two places that rank before
    /// they read the memory rows (the memories' full text and the vector
    /// index), so that a memory filtered out never takes a slot.
    pub passing: Option<std::rc::Rc<Passing>>,
}

/// The memories a narrowed recall may return.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Passing {
    pub rowids: HashSet<i64>,
    pub ids: HashSet<String>,
}

/// A recall's filter: its `filter`, and with `sessionId` the memories of
/// that session only (both must hold).
fn filter_of(opts: &crate::core::api::RecallOptions) -> Option<Filter> {
    use crate::core::filter::{Cmp, Scalar};
    // Checked by the request's validation: one that does not parse never
    // reaches here.
    let given = opts.filter.as_ref().and_then(|f| crate::core::filter::from_json(f).ok());
    let session = opts.session_id.as_ref().map(|s| Filter::Leaf { field: "sessionId".into(), cmp: Cmp::Eq, values: vec![Scalar::Text(s.clone())] });
    match (session, given) {
        (Some(s), Some(f)) => Some(Filter::All(vec![s, f])),
        (s, f) => s.or(f),
    }
}

impl RecallScope {
    /// The scope of `req` at `now` (epoch milliseconds).
    pub fn new(req: &RecallRequest, now: i64) -> RecallScope {
        let opts = &req.options;
        let today = chrono::DateTime::from_timestamp_millis(now).unwrap_or_default().date_naive();
        RecallScope {
            query: req.query.clone(),
            include_inactive: opts.include_inactive.unwrap_or(false),
            limit: opts.limit.map_or(crate::core::api::DEFAULT_RECALL_LIMIT, crate::core::api::count),
            reference: opts.reference_date.as_deref().and_then(date_of).unwrap_or(today),
            now_iso: iso(now),
            explain: opts.explain.unwrap_or(false),
            length: opts.response_length.unwrap_or_default(),
            thinking: opts.thinking_level.unwrap_or_default(),
            filter: filter_of(opts),
            as_of: opts.as_of.as_deref().and_then(crate::core::time::parse_millis).map(iso),
            passing: None,
        }
    }

    /// Whether the recall is narrowed (a filter or `asOf`).
    pub fn narrowed(&self) -> bool {
        self.filter.is_some() || self.as_of.is_some()
    }

    /// The condition a memory row `m` meets to be returned, its parameters
    /// numbered from `?{at}`: active and unexpired (or, with `asOf`, valid
    /// and unexpired then, superseded since or not; or anything, with
    /// `includeInactive`), and passing the filter.
    pub fn visible(&self, at: usize) -> (String, Vec<SqlValue>) {
        let (mut cond, mut params) = self.visible_status(at);
        if let Some(f) = &self.filter {
            let slot = at.saturating_add(params.len());
            cond = format!("{cond} AND {}", f.sql(slot));
            params.push(SqlValue::Text(f.param()));
        }
        (cond, params)
    }

    /// [`RecallScope::visible`] without the filter: status, expiry and
    /// `asOf` only. A statement whose rows come through an index of its
    /// own (the key channel's) tests the filter with
    /// [`RecallScope::passes_id`] instead: in SQL, an indexed filter field
    /// would draw the planner to the wrong index.
    pub fn visible_status(&self, at: usize) -> (String, Vec<SqlValue>) {
        match (&self.as_of, self.include_inactive) {
            (Some(t), _) => (crate::core::filter::valid_at(at), vec![SqlValue::from(t.as_str())]),
            (None, true) => ("1 = 1".to_string(), vec![]),
            (None, false) => (format!("m.status = 'active' AND (m.expires_at IS NULL OR m.expires_at > ?{at})"), vec![SqlValue::from(self.now_iso.as_str())]),
        }
    }

    /// Whether the memory stored under `rowid` may be returned (always,
    /// unless narrowed).
    pub fn passes_rowid(&self, rowid: i64) -> bool {
        self.passing.as_ref().is_none_or(|p| p.rowids.contains(&rowid))
    }

    /// Whether the memory `id` may be returned (always, unless narrowed).
    pub fn passes_id(&self, id: &str) -> bool {
        self.passing.as_ref().is_none_or(|p| p.ids.contains(id))
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
