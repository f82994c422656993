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
/// The profile size, in messages, up to which full text draws
/// [`FTS_POOL`] messages by plain bm25 for each part of the query (its
/// words together, its expansions, its stop words;
/// [`RecallScope::message_pool`]). The corrections (the speaker a query
/// names, neighbouring turns, the session, dates) re-rank only that pool;
/// in a larger profile its best hundred hold a smaller share of it, and a
/// turn plain bm25 puts at 150 but the named speaker's boost would put
/// first was never scored. So the pool grows with the profile, one message
/// in `POOL_PROFILE_MESSAGES / FTS_POOL` (7), up to [`MAX_POOL_GROWTH`]
/// times. Chosen so that every profile the pool was measured on keeps it
/// (LoCoMo's conversations, 369-680 messages; the generated styles'
/// haystacks, at most 205); measured where it grows in
/// docs/bench/generalization/pools.txt: LoCoMo's five conversations in one
/// profile (2,760 messages) full text 0.751 -> 0.766, fused 0.745 ->
/// 0.753; beside 45,735 turns of the styles 0.725 -> 0.735 and 0.719 ->
/// 0.729; recall p50 natively at 100k memories 12.3 -> 14.3 ms warm and
/// 53 -> 62 ms on SQLite alone.
pub const POOL_PROFILE_MESSAGES: u64 = 700;
/// How many times [`FTS_POOL`] the message pool grows at most with
/// the profile ([`POOL_PROFILE_MESSAGES`]), before the thinking level's
/// breadth.
pub const MAX_POOL_GROWTH: u64 = 4;
use crate::core::error::{Error, Result};
use crate::core::filter::Filter;
use crate::core::ports::{Sql, SqlValue};
use crate::core::store::{json_param, json_rows};
use crate::core::time::{iso, local_date_of};
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
    /// About how many messages the profile holds
    /// (`MessageStore::texts_stored_about`; 0 until [`RecallScope::sized`]):
    /// what the message pool grows with.
    pub profile_texts: u64,
    /// Only memories passing this filter.
    pub filter: Option<Filter>,
    /// What was active at this instant (ISO-8601 UTC, as stored).
    pub as_of: Option<String>,
    /// Every memory a narrowed recall may return, read ahead of ranking
    /// when that is cheaper than testing the channels' best a batch at a
    /// time ([`RecallScope::narrow`]), or once a walk has tested more than
    /// its budget; the tests then read it instead of the rows
    /// ([`RecallScope::ahead`]).
    pub passing: std::cell::OnceCell<Passing>,
    /// The memories a walk may test before it reads what passes ahead
    /// instead (`None`: no bound).
    pub walk_budget: Option<usize>,
    /// The memories the walk has tested so far.
    pub walked: std::cell::Cell<usize>,
    /// With a filter or `asOf`: how the channels learn what passes, and
    /// why ([`RecallScope::narrow`]).
    pub narrowing: Option<NarrowingReport>,
}

/// The memories a narrowed recall may return, read ahead of ranking.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Passing {
    pub rowids: HashSet<i64>,
    pub ids: HashSet<String>,
}

/// How a narrowed recall's channels learn which memories pass. Both give
/// the same answer (tests/filters.rs); they differ in cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Narrowing {
    /// By a sample of the profile ([`Sampled::walk_pays`]): what a recall
    /// does.
    Sampled,
    /// Each channel ranks first and tests its best a batch at a time.
    Walk,
    /// As [`Narrowing::Walk`], reading every passing memory ahead once
    /// this many have been tested.
    WalkWithin(usize),
    /// Every passing memory is read ahead of ranking.
    Ahead,
}

/// Memories a narrowed recall tests before it ranks, spread evenly over
/// the rowids, to learn what share of the profile passes.
pub const SAMPLE: usize = 256;
/// How many times more a memory tested by id costs than one read by the
/// scan ahead of ranking. Measured natively at 100k memories
/// (`make bench-native BENCH_NATIVE_PART=filtered`): 2.1-3.8 us a test
/// against 0.7-0.8 us a row read.
pub const TEST_COST: f64 = 3.0;
/// How many times the tests a sample predicts a walk may make before it
/// reads ahead instead ([`Sampled::walk_budget`]).
pub const WALK_SLACK: f64 = 2.0;
/// Memories read per statement when the passing memories are read ahead.
const PASSING_PAGE: usize = 20_000;

/// What [`SAMPLE`] memories said: how many were tested, how many passed,
/// and the span of the profile's rowids.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Sampled {
    /// Memories tested (fewer than [`SAMPLE`] only in a smaller profile).
    pub tested: i64,
    /// Those that passed.
    pub passed: i64,
    /// The profile's greatest memory rowid less its least, plus one: about
    /// how many memories it holds.
    pub span: i64,
}

/// How a narrowed recall learned what passes, as `explain` shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NarrowingReport {
    /// `walk`: each channel ranked first and tested its best a batch at a
    /// time; `ahead`: every passing memory was read before ranking.
    pub way: NarrowingWay,
    /// The sample that chose the way (absent when it was forced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<Sampled>,
    /// A walk that went past its budget: the memories it had tested when
    /// it read every passing memory ahead instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead_after: Option<i64>,
}

/// The two ways a narrowed recall learns what passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NarrowingWay {
    Walk,
    Ahead,
}

impl Sampled {
    /// Whether testing the channels' best beats reading every passing
    /// memory ahead. The deepest channel (the local vector index's first
    /// pass, `deepest` memories) tests about `deepest / share` memories
    /// walking its ranking; reading ahead reads at least the `share x
    /// span` that pass (all of the span when no index serves the filter).
    /// Walking pays when its tests, each counted as [`TEST_COST`] rows,
    /// come to no more than the rows read ahead.
    /// With a narrow filter on an indexed field (one agent of many),
    /// reading ahead wins; with a broad one on a large profile (a field
    /// most memories have), walking does.
    pub fn walk_pays(&self, deepest: usize) -> bool {
        match self.share() {
            Some(share) => deepest as f64 / share * TEST_COST <= share * self.span as f64,
            None => false,
        }
    }

    /// The memories a walk that pays may test before it reads ahead
    /// instead: [`WALK_SLACK`] times the `deepest / share` the sample
    /// predicts. A walk that goes past it meets fewer passing memories
    /// than the sample said (they lie far from the query), and reading
    /// ahead then bounds its cost.
    pub fn walk_budget(&self, deepest: usize) -> usize {
        let share = self.share().unwrap_or(1.0);
        (deepest as f64 / share * WALK_SLACK).ceil() as usize
    }

    /// The share of the sample that passed (`None` when none did).
    fn share(&self) -> Option<f64> {
        (self.tested > 0 && self.passed > 0).then(|| self.passed as f64 / self.tested as f64)
    }
}

/// A recall's filter: its `filter`, and with `sessionId` the memories of
/// that session only (both must hold).
fn filter_of(opts: &crate::core::api::RecallOptions) -> Result<Option<Filter>> {
    use crate::core::filter::{Cmp, Scalar};
    // Checked by the request's validation already; a filter that does not
    // parse is refused again here, never run as no filter.
    let given = opts.filter.as_ref().map(crate::core::filter::from_json).transpose()?;
    let session = opts.session_id.as_ref().map(|s| Filter::Leaf { field: "sessionId".into(), cmp: Cmp::Eq, values: vec![Scalar::Text(s.clone())] });
    Ok(match (session, given) {
        (Some(s), Some(f)) => Some(Filter::All(vec![s, f])),
        (s, f) => s.or(f),
    })
}

impl RecallScope {
    /// The scope of `req` at `now` (epoch milliseconds).
    pub fn new(req: &RecallRequest, now: i64) -> Result<RecallScope> {
        let opts = &req.options;
        let today = chrono::DateTime::from_timestamp_millis(now).unwrap_or_default().date_naive();
        // Each checked by the request's validation already; one that does
        // not read is refused again here, never dropped.
        let unread = |what: &str| Error::invalid(format!("{what} is not a date"));
        let reference = opts.reference_date.as_deref().map(|d| local_date_of(d).ok_or_else(|| unread("referenceDate"))).transpose()?;
        let as_of = opts.as_of.as_deref().map(|d| crate::core::time::parse_millis(d).map(iso).ok_or_else(|| unread("asOf"))).transpose()?;
        Ok(RecallScope {
            query: req.query.clone(),
            include_inactive: opts.include_inactive.unwrap_or(false),
            limit: opts.limit.map_or(crate::core::api::DEFAULT_RECALL_LIMIT, crate::core::api::count),
            reference: reference.unwrap_or(today),
            now_iso: iso(now),
            explain: opts.explain.unwrap_or(false),
            length: opts.response_length.unwrap_or_default(),
            thinking: opts.thinking_level.unwrap_or_default(),
            profile_texts: 0,
            filter: filter_of(opts)?,
            as_of,
            passing: Default::default(),
            walk_budget: None,
            walked: Default::default(),
            narrowing: None,
        })
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
    /// [`RecallScope::passing_ids`] instead: in SQL, an indexed filter field
    /// would draw the planner to the wrong index.
    pub fn visible_status(&self, at: usize) -> (String, Vec<SqlValue>) {
        match (&self.as_of, self.include_inactive) {
            (Some(t), _) => (crate::core::filter::valid_at(at), vec![SqlValue::from(t.as_str())]),
            (None, true) => ("1 = 1".to_string(), vec![]),
            (None, false) => (format!("m.status = 'active' AND (m.expires_at IS NULL OR m.expires_at > ?{at})"), vec![SqlValue::from(self.now_iso.as_str())]),
        }
    }

    /// With a filter or `asOf`, how the channels learn what passes
    /// ([`Narrowing`]): they rank first and test their best a batch at a
    /// time, or every passing memory is read here, once, and the tests
    /// read that.
    pub fn narrow(mut self, sql: &dyn Sql, how: Narrowing) -> Result<RecallScope> {
        if !self.narrowed() {
            return Ok(self);
        }
        let deepest = crate::core::local::vector::FIRST_PASS;
        let (way, sample) = match how {
            Narrowing::Sampled => {
                let sample = self.sample(sql)?;
                let way = if sample.walk_pays(deepest) { NarrowingWay::Walk } else { NarrowingWay::Ahead };
                self.walk_budget = Some(sample.walk_budget(deepest));
                (way, Some(sample))
            }
            Narrowing::Walk => (NarrowingWay::Walk, None),
            Narrowing::WalkWithin(budget) => {
                self.walk_budget = Some(budget);
                (NarrowingWay::Walk, None)
            }
            Narrowing::Ahead => (NarrowingWay::Ahead, None),
        };
        if way == NarrowingWay::Ahead {
            self.read_ahead(sql)?;
        }
        self.narrowing = Some(NarrowingReport { way, sample, read_ahead_after: None });
        Ok(self)
    }

    /// The memories read ahead, if they were.
    pub fn ahead(&self) -> Option<&Passing> {
        self.passing.get()
    }

    /// How the channels learned what passes, as `explain` shows it: with
    /// the tests after which a walk read ahead, if it did.
    pub fn narrowing_report(&self) -> Option<NarrowingReport> {
        let mut report = self.narrowing.clone()?;
        if report.way == NarrowingWay::Walk && self.ahead().is_some() {
            report.read_ahead_after = Some(self.walked.get() as i64);
        }
        Some(report)
    }

    /// Reads every passing memory ahead, unless it was.
    fn read_ahead(&self, sql: &dyn Sql) -> Result<&Passing> {
        if let Some(p) = self.passing.get() {
            return Ok(p);
        }
        let read = self.read_passing(sql)?;
        Ok(self.passing.get_or_init(|| read))
    }

    /// The memories read ahead, reading them now if `more` tests would
    /// take the walk past its budget; `None` while it walks on.
    fn ahead_or_over(&self, sql: &dyn Sql, more: usize) -> Result<Option<&Passing>> {
        if self.ahead().is_none() {
            let walked = self.walked.get().saturating_add(more);
            if self.walk_budget.is_none_or(|b| walked <= b) {
                self.walked.set(walked);
                return Ok(None);
            }
        }
        self.read_ahead(sql).map(Some)
    }

    /// Tests [`SAMPLE`] memories spread evenly over the rowids (the first
    /// at or after each of [`SAMPLE`] points between the least and the
    /// greatest).
    pub fn sample(&self, sql: &dyn Sql) -> Result<Sampled> {
        // min and max apart: together, SQLite reads the whole table for them.
        let bounds: Vec<(Option<i64>, Option<i64>)> =
            json_rows(sql, "SELECT json_array(json_array((SELECT min(rowid) FROM memories), (SELECT max(rowid) FROM memories)))", &[])?;
        let Some(&(Some(lo), Some(hi))) = bounds.first() else { return Ok(Sampled { tested: 0, passed: 0, span: 0 }) };
        let span = hi.saturating_sub(lo).saturating_add(1);
        let points: Vec<i64> = (0..SAMPLE as i64).map(|i| lo.saturating_add(span.saturating_mul(i).checked_div(SAMPLE as i64).unwrap_or(0))).collect();
        let (cond, extra) = self.visible(2);
        let mut params = vec![json_param(&points)?];
        params.extend(extra);
        let counted: Vec<(i64, i64)> = json_rows(
            sql,
            &format!(
                "SELECT json_array(json_array(count(*), coalesce(sum(CASE WHEN {cond} THEN 1 ELSE 0 END), 0))) FROM json_each(?1) j \
                 CROSS JOIN memories m ON m.rowid = (SELECT rowid FROM memories WHERE rowid >= j.value ORDER BY rowid LIMIT 1)"
            ),
            &params,
        )?;
        let &(tested, passed) = counted.first().ok_or_else(|| crate::core::error::Error::storage("failed to read a sample's counts"))?;
        Ok(Sampled { tested, passed, span })
    }

    /// Every memory the recall may return, paged so that one page's JSON
    /// stays far below the platform's 2 MB cap on a value: by id when the
    /// filter pins a scope key (its index holds the id, status and expiry
    /// beside the key, so a page is read from the index alone), else by
    /// rowid (the table in its own order; by id it would be read a row at
    /// a time through the id's index, twice as long natively).
    fn read_passing(&self, sql: &dyn Sql) -> Result<Passing> {
        self.read_passing_paged(sql, PASSING_PAGE)
    }

    /// [`RecallScope::read_passing`] `page` memories a statement (tests
    /// read in small pages to cross their bounds).
    pub fn read_passing_paged(&self, sql: &dyn Sql, page: usize) -> Result<Passing> {
        let page = page.max(1);
        let (cond, mut params) = self.visible(2);
        let by_id = self.filter.as_ref().is_some_and(Filter::pins_scope_key);
        let (order, start) = match by_id {
            true => ("m.id", SqlValue::from("")),
            false => ("m.rowid", SqlValue::Integer(0)),
        };
        params.insert(0, start);
        let mut passing = Passing::default();
        loop {
            let rows: Vec<(i64, String)> = json_rows(
                sql,
                &format!(
                    "SELECT json_group_array(json_array(rowid, id)) FROM (SELECT m.rowid AS rowid, m.id AS id FROM memories m \
                     WHERE {order} > ?1 AND {cond} ORDER BY {order} LIMIT {page})"
                ),
                &params,
            )?;
            let Some((last_rowid, last_id)) = rows.last().cloned() else { break };
            let full = rows.len() >= page;
            for (rowid, id) in rows {
                passing.rowids.insert(rowid);
                passing.ids.insert(id);
            }
            if !full {
                break;
            }
            if let Some(after) = params.first_mut() {
                *after = if by_id { SqlValue::from(last_id) } else { SqlValue::Integer(last_rowid) };
            }
        }
        Ok(passing)
    }

    /// Which of the memories stored under `rowids` the recall may return
    /// ([`RecallScope::visible`]): from the memories read ahead (read now
    /// if these tests would take a walk past its budget), else from their
    /// rows, a batch of [`MAX_BATCH`](crate::core::ports::MAX_BATCH) at a
    /// time.
    pub fn passing_rowids(&self, sql: &dyn Sql, rowids: &[i64]) -> Result<HashSet<i64>> {
        match self.ahead_or_over(sql, rowids.len())? {
            Some(p) => Ok(rowids.iter().copied().filter(|r| p.rowids.contains(r)).collect()),
            None => self.passing_of(sql, rowids, "rowid"),
        }
    }

    /// Which of the memories `ids` the recall may return.
    pub fn passing_ids(&self, sql: &dyn Sql, ids: &[String]) -> Result<HashSet<String>> {
        match self.ahead_or_over(sql, ids.len())? {
            Some(p) => Ok(ids.iter().filter(|id| p.ids.contains(*id)).cloned().collect()),
            None => self.passing_of(sql, ids, "id"),
        }
    }

    fn passing_of<K>(&self, sql: &dyn Sql, keys: &[K], column: &str) -> Result<HashSet<K>>
    where
        K: serde::Serialize + serde::de::DeserializeOwned + Eq + std::hash::Hash,
    {
        let (cond, extra) = self.visible(2);
        let mut out = HashSet::default();
        for batch in keys.chunks(crate::core::ports::MAX_BATCH) {
            let mut params = vec![json_param(batch)?];
            params.extend(extra.iter().cloned());
            let rows: Vec<K> = json_rows(
                sql,
                &format!("SELECT json_group_array(m.{column}) FROM json_each(?1) j CROSS JOIN memories m ON m.{column} = j.value WHERE {cond}"),
                &params,
            )?;
            out.extend(rows);
        }
        Ok(out)
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

    /// This scope in a profile of about `texts` messages.
    pub fn sized(self, texts: u64) -> RecallScope {
        RecallScope { profile_texts: texts, ..self }
    }

    /// Messages full text draws by plain bm25 for each part of the
    /// query: [`FTS_POOL`], one
    /// message in `POOL_PROFILE_MESSAGES / FTS_POOL` of a profile larger
    /// than [`POOL_PROFILE_MESSAGES`] up to [`MAX_POOL_GROWTH`] times
    /// that, times the thinking level's breadth.
    pub fn message_pool(&self) -> usize {
        let floor = FTS_POOL as u64;
        let per = POOL_PROFILE_MESSAGES.checked_div(floor).unwrap_or(1).max(1);
        let grown = self.profile_texts.checked_div(per).unwrap_or(0).clamp(floor, floor.saturating_mul(MAX_POOL_GROWTH));
        usize::try_from(grown).unwrap_or(FTS_POOL).saturating_mul(self.thinking.breadth())
    }

    /// Live memories only, at `now`, without explanations: what a stage
    /// run alone (a benchmark, a test) reads.
    pub fn live_at(now: i64) -> RecallScope {
        RecallScope { now_iso: iso(now), limit: crate::core::api::DEFAULT_RECALL_LIMIT, ..RecallScope::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_the_message_pool_grows_with_the_profile_from_its_measured_size_up_to_its_bound() {
        let at = |texts: u64, thinking: ThinkingLevel| RecallScope { thinking, ..RecallScope::default() }.sized(texts).message_pool();
        assert_eq!(at(0, ThinkingLevel::Low), FTS_POOL);
        assert_eq!(at(POOL_PROFILE_MESSAGES, ThinkingLevel::Low), FTS_POOL);
        assert_eq!(at(2_800, ThinkingLevel::Low), 400);
        assert_eq!(at(1_000_000, ThinkingLevel::Low), FTS_POOL * MAX_POOL_GROWTH as usize);
        assert_eq!(at(2_800, ThinkingLevel::High), 1_600);
        assert_eq!(at(0, ThinkingLevel::Medium), 2 * FTS_POOL);
    }
}
