//! The traits at every I/O seam.
//!
//! Each has a Cloudflare implementation (in `src/cloudflare/`) and a local
//! one (in `core::local`, `core::rules`, or `tests/support/` for native
//! SQLite). The pipelines are written against these traits only.
//!
//! Futures are `!Send` ([`LocalBoxFuture`]): a Worker is single-threaded.

use crate::core::error::Result;
pub use futures::future::LocalBoxFuture;

/// A value bound to or read from SQL.
#[derive(Clone, Debug, PartialEq)]
pub enum SqlValue {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl SqlValue {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            SqlValue::Text(s) => Some(s),
            _ => None,
        }
    }
    /// An integer, or a REAL that is one exactly (a whole number within
    /// i64's range); `None` otherwise, where a cast would round or
    /// saturate (`MAX(position) + 1` past i64::MAX is a REAL).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            SqlValue::Integer(i) => Some(*i),
            // 2^63 as f64 is the first whole number past i64::MAX.
            SqlValue::Real(f) if f.fract() == 0.0 && *f >= -9_223_372_036_854_775_808.0 && *f < 9_223_372_036_854_775_808.0 => Some(*f as i64),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            SqlValue::Integer(i) => Some(*i as f64),
            SqlValue::Real(f) => Some(*f),
            _ => None,
        }
    }
    pub fn as_blob(&self) -> Option<&[u8]> {
        match self {
            SqlValue::Blob(b) => Some(b),
            _ => None,
        }
    }
    /// Text, or `None` for NULL.
    pub fn opt_string(&self) -> Option<String> {
        self.as_str().map(str::to_string)
    }
}

impl From<&str> for SqlValue {
    fn from(s: &str) -> SqlValue {
        SqlValue::Text(s.to_string())
    }
}
impl From<String> for SqlValue {
    fn from(s: String) -> SqlValue {
        SqlValue::Text(s)
    }
}
impl From<&String> for SqlValue {
    fn from(s: &String) -> SqlValue {
        SqlValue::Text(s.clone())
    }
}
impl From<i64> for SqlValue {
    fn from(i: i64) -> SqlValue {
        SqlValue::Integer(i)
    }
}
impl From<f64> for SqlValue {
    fn from(f: f64) -> SqlValue {
        SqlValue::Real(f)
    }
}
impl From<Vec<u8>> for SqlValue {
    fn from(b: Vec<u8>) -> SqlValue {
        SqlValue::Blob(b)
    }
}
impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(o: Option<T>) -> SqlValue {
        o.map_or(SqlValue::Null, Into::into)
    }
}

/// One result row: values in select order.
pub type Row = Vec<SqlValue>;

/// The one value an aggregate statement (`SELECT MIN(…) …`) answers, as an
/// integer: `None` when it is NULL (no row qualified), and a storage error
/// naming `what` when it is anything else that is not one; never read as
/// "nothing", which would stop what waits on it without a word.
pub fn aggregate_i64(rows: &[Row], what: &str) -> Result<Option<i64>> {
    match rows.first().and_then(|r| r.first()) {
        None | Some(SqlValue::Null) => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| crate::core::error::Error::storage(format!("{what} does not read as an integer"))),
    }
}

/// Most bound parameters one statement may carry (Durable Object SQL's
/// limit). Multi-row writes are chunked to stay under it.
pub const MAX_SQL_PARAMS: usize = 100;

/// A synchronous SQL connection to one profile's database.
///
/// Both implementations (Durable Object SQL and native SQLite) are
/// synchronous, which keeps a profile's writes free of interleaving.
pub trait Sql {
    /// Runs one statement and returns every row it yields.
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>>;

    /// Runs one statement for its effect; returns rows written where known.
    fn execute(&self, sql: &str, params: &[SqlValue]) -> Result<()> {
        self.query(sql, params).map(|_| ())
    }

    /// Runs `f` atomically: every write it makes commits, or none does.
    fn transaction(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()>;

    /// The database's size in bytes, where the platform reports it.
    fn database_size(&self) -> i64;
}

impl<T: Sql + ?Sized> Sql for &T {
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>> {
        (**self).query(sql, params)
    }
    fn execute(&self, sql: &str, params: &[SqlValue]) -> Result<()> {
        (**self).execute(sql, params)
    }
    fn transaction(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        (**self).transaction(f)
    }
    fn database_size(&self) -> i64 {
        (**self).database_size()
    }
}

/// A chat-completion model reached over some protocol.
pub trait ChatModel {
    /// Sends a system and a user message and returns the model's text.
    /// `json` asks for a JSON object response.
    fn complete<'a>(&'a self, req: &'a ChatRequest) -> LocalBoxFuture<'a, Result<String>>;
}

impl<T: ChatModel + ?Sized> ChatModel for &T {
    fn complete<'a>(&'a self, req: &'a ChatRequest) -> LocalBoxFuture<'a, Result<String>> {
        (**self).complete(req)
    }
}

/// One chat-completion request.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    /// Which configured model: the instruct model or the synthesis model.
    pub role: ModelRole,
    pub system: String,
    pub user: String,
    pub json: bool,
    pub max_tokens: u32,
}

/// The two model slots of SPEC.md section 5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelRole {
    /// Extraction, verification, classification, query analysis.
    Instruct,
    /// Answer synthesis.
    Synthesis,
}

/// What an embedder's vectors capture, which decides how much recall's
/// vector channels weigh against full text (`recall::fuse::Weights`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EmbeddingKind {
    /// Words and their fragments, hashed (the local default): it re-finds
    /// lexically what full text finds.
    #[default]
    Lexical,
    /// A sentence-embedding model: it finds paraphrases full text cannot.
    Semantic,
}

/// Turns texts into vectors.
pub trait Embedder {
    fn embed<'a>(&'a self, texts: &'a [String]) -> LocalBoxFuture<'a, Result<Vec<Vec<f32>>>>;

    /// What its vectors capture; lexical unless the embedder says
    /// otherwise (a model's adapter says semantic).
    fn kind(&self) -> EmbeddingKind {
        EmbeddingKind::Lexical
    }

    /// The cosine similarity at or above which one of its vectors alone
    /// shows that a query matches a memory (`recall::fuse::shows_a_match`).
    /// `None`: its vectors never show a match alone (the lexical default:
    /// what they find, full text finds). A semantic adapter answers
    /// [`crate::core::recall::fuse::semantic_match_floor`] of its model.
    fn match_floor(&self) -> Option<f32> {
        match self.kind() {
            EmbeddingKind::Lexical => None,
            EmbeddingKind::Semantic => Some(0.0),
        }
    }
}

/// A vector index scoped to one profile.
/// Ids with their cosine similarity to a query, best first.
pub type Hits = Vec<(String, f32)>;

pub trait VectorIndex {
    fn upsert<'a>(&'a self, items: &'a [(String, Vec<f32>)]) -> LocalBoxFuture<'a, Result<()>>;
    fn delete<'a>(&'a self, ids: &'a [String]) -> LocalBoxFuture<'a, Result<()>>;
    /// The `top_k` nearest ids with their cosine similarity, best first.
    fn query<'a>(&'a self, vector: &'a [f32], top_k: usize) -> LocalBoxFuture<'a, Result<Vec<(String, f32)>>>;

    /// [`VectorIndex::query`] for each of `vectors`, in their order. By
    /// default the queries run concurrently; an index that can answer
    /// several in one pass does.
    fn query_many<'a>(&'a self, vectors: &'a [Vec<f32>], top_k: usize) -> LocalBoxFuture<'a, Result<Vec<Hits>>> {
        Box::pin(futures::future::try_join_all(vectors.iter().map(move |v| self.query(v, top_k))))
    }

    /// Upkeep of the index's derived data, run between requests (the
    /// local index's snapshot of its codes); whether it wrote anything.
    /// By default there is none: nothing is done.
    fn maintain<'a>(&'a self) -> LocalBoxFuture<'a, Result<bool>> {
        Box::pin(async { Ok(false) })
    }

    /// [`VectorIndex::upsert`] with what each memory may be filtered by
    /// ([`VectorMeta`], one per item, in order). An index that cannot
    /// filter by metadata ignores it (the default: the local index reads
    /// the memories' rows instead).
    fn upsert_with<'a>(&'a self, items: &'a [(String, Vec<f32>)], _meta: &'a [VectorMeta]) -> LocalBoxFuture<'a, Result<()>> {
        self.upsert(items)
    }

    /// [`VectorIndex::query_many`] over the memories `only` lets pass:
    /// for each vector, its `top_k` nearest among those, so a memory
    /// filtered out never takes a place. By default it asks for more
    /// neighbours each round ([`OVERFETCH`] times as many, up to
    /// [`MAX_OVERFETCH`]) until `top_k` pass or the index has no more,
    /// testing each neighbour once.
    fn query_many_in<'a>(&'a self, vectors: &'a [Vec<f32>], top_k: usize, only: &'a IndexFilter<'a>) -> LocalBoxFuture<'a, Result<Vec<Hits>>> {
        Box::pin(async move {
            let mut k = top_k.saturating_mul(OVERFETCH).max(1);
            let mut known = KnownPassing::default();
            loop {
                let hits = self.query_many(vectors, k).await?;
                let exhausted = hits.iter().all(|h| h.len() < k);
                known.test(hits.iter().flatten().map(|(id, _)| id.as_str()), only)?;
                let kept: Vec<Hits> = hits.into_iter().map(|h| h.into_iter().filter(|(id, _)| known.passes(id)).take(top_k).collect()).collect();
                if exhausted || k >= MAX_OVERFETCH || kept.iter().all(|h| h.len() >= top_k) {
                    return Ok(kept);
                }
                k = k.saturating_mul(OVERFETCH).min(MAX_OVERFETCH);
            }
        })
    }
}

/// Candidates a narrowed recall tests at once, at first: a ranking is
/// walked best first, and its candidates are tested against the scope a
/// batch at a time until enough pass ([`first_passing`]). Each batch
/// after the first is sized by the share that passed so far, up to
/// [`MAX_BATCH`].
pub const FIRST_BATCH: usize = 256;
/// How much larger each batch of candidates is than the last while none
/// has passed yet.
pub const BATCH_GROWTH: usize = 4;
/// How many more candidates a batch holds than the share passed so far
/// says are needed: a little more, so that one more batch usually does.
pub const BATCH_MARGIN: f64 = 1.25;
/// The most candidates tested in one statement: their ids, as one JSON
/// parameter, stay far below the platform's 2 MB cap on a value.
pub const MAX_BATCH: usize = 16_384;

/// The first `limit` of `ranked` (in its order) whose keys `passing`
/// lets through, testing the ranking's head a batch at a time: what
/// ranking only the passing items would give, without reading what
/// passes ahead of time. The first batch is `limit` (at least
/// [`FIRST_BATCH`]); each after it holds what the share passed so far
/// says the rest needs, [`BATCH_MARGIN`] times over ([`BATCH_GROWTH`]
/// times the last while none has passed).
pub fn first_passing<T, K>(
    ranked: Vec<T>,
    limit: usize,
    key: impl Fn(&T) -> K,
    mut passing: impl FnMut(&[K]) -> Result<rustc_hash::FxHashSet<K>>,
) -> Result<Vec<T>>
where
    K: Eq + std::hash::Hash,
{
    let mut kept = Vec::new();
    let (mut batch, mut tested, mut passed) = (limit.max(FIRST_BATCH), 0usize, 0usize);
    let mut rest = ranked.into_iter().peekable();
    while kept.len() < limit && rest.peek().is_some() {
        let head: Vec<T> = rest.by_ref().take(batch.clamp(1, MAX_BATCH)).collect();
        let keys: Vec<K> = head.iter().map(&key).collect();
        let pass = passing(&keys)?;
        tested = tested.saturating_add(keys.len());
        passed = passed.saturating_add(pass.len());
        kept.extend(head.into_iter().zip(keys).filter(|(_, k)| pass.contains(k)).map(|(t, _)| t).take(limit.saturating_sub(kept.len())));
        batch = match passed {
            0 => batch.saturating_mul(BATCH_GROWTH),
            _ => (limit.saturating_sub(kept.len()) as f64 * tested as f64 / passed as f64 * BATCH_MARGIN).ceil() as usize,
        }
        .max(FIRST_BATCH);
    }
    Ok(kept)
}

/// The ids an [`IndexFilter`] has been asked about, and its answers: each
/// id is tested once however many rounds or vectors it comes up in.
#[derive(Default)]
pub struct KnownPassing {
    tested: rustc_hash::FxHashSet<String>,
    passing: rustc_hash::FxHashSet<String>,
}

impl KnownPassing {
    /// Tests the ids among `ids` not tested before, in one call of
    /// `only.passing`.
    pub fn test<'i>(&mut self, ids: impl Iterator<Item = &'i str>, only: &IndexFilter<'_>) -> Result<()> {
        let mut fresh: Vec<String> = ids.filter(|id| !self.tested.contains(*id)).map(str::to_string).collect();
        fresh.sort_unstable();
        fresh.dedup();
        if fresh.is_empty() {
            return Ok(());
        }
        self.passing.extend((only.passing)(&fresh)?);
        self.tested.extend(fresh);
        Ok(())
    }

    /// Whether `id` was tested and passes.
    pub fn passes(&self, id: &str) -> bool {
        self.passing.contains(id)
    }
}

/// How many times more neighbours each round of a filtered query asks for.
pub const OVERFETCH: usize = 4;
/// The most neighbours a filtered query asks an index for.
pub const MAX_OVERFETCH: usize = 4096;

/// What a vector is indexed with to be filtered by: its memory's `type`,
/// `sessionId`, and the scope keys `agentId` and `userId` when present.
pub type VectorMeta = serde_json::Map<String, serde_json::Value>;

/// What a narrowed vector query may return ([`VectorIndex::query_many_in`]).
/// Unless the caller read the passing memories ahead, the index ranks
/// first and asks about the memories it would return, a batch at a time.
pub struct IndexFilter<'a> {
    /// Which of these memory ids pass (the recall's whole condition:
    /// status, `asOf` and the filter), in one read of their rows.
    pub passing: &'a dyn Fn(&[String]) -> Result<rustc_hash::FxHashSet<String>>,
    /// Every passing id, when the caller read them ahead of ranking (an
    /// index may then test its own keys against them, not walk).
    pub ahead: Option<&'a rustc_hash::FxHashSet<String>>,
    /// The caller's filter, for an index that can apply part of it itself
    /// (Vectorize, on the fields in [`VectorMeta`]).
    pub filter: Option<&'a crate::core::filter::Filter>,
}

/// Room in a working memory shared with others: a Worker isolate's Wasm
/// memory, which all its profile objects share, and which never shrinks.
/// A pipeline takes room before it reads a large piece of data that it
/// holds across an await (a consolidation window while its reasoner
/// decides), so that many profiles doing so at once take turns rather
/// than together pass the memory's size. Natively nothing is shared:
/// [`Unshared`].
///
/// With the room comes the owner's turn for background work
/// ([`crate::core::turns`]): one such stretch of computing runs at a time,
/// and the owner's other work runs before it, so requests are not kept
/// waiting behind many profiles' background work at once. The caller ends
/// its turn ([`Held::end_turn`]) before it awaits anything slow.
///
/// One profile's: it may lend one piece at a time, so that a second
/// caller of the profile waits for the first's piece (and then finds its
/// consolidation run moved on, rather than decide a window twice).
///
/// It does not measure anything: the caller says how much it will hold.
pub trait WorkingRoom {
    /// Waits for `bytes` of room for `what`, then for the turn; the room
    /// is held until the [`Held`] is dropped. Busy
    /// ([`crate::core::error::Error::busy`]) when no room was made in
    /// time: the caller has read nothing yet, and does nothing.
    fn take<'a>(&'a self, bytes: usize, what: &'a str) -> LocalBoxFuture<'a, Result<Held>>;

    /// The owner's clock (milliseconds since the epoch) where waiting for
    /// room takes time: when a refusal came, which may be long after the
    /// call's `now`. `None` where room is never waited for.
    fn now_millis(&self) -> Option<i64> {
        None
    }
}

/// Room taken from a [`WorkingRoom`], and the turn: given back when
/// dropped (the turn at [`Held::end_turn`] if before).
pub struct Held {
    /// Kept for its drop, which gives the room back.
    _room: Option<Box<dyn std::any::Any>>,
    turn: Option<Box<dyn std::any::Any>>,
}

impl Held {
    /// Room held by `room`, and the turn by `turn`, each given back when
    /// dropped.
    pub fn by(room: impl std::any::Any, turn: impl std::any::Any) -> Held {
        Held { _room: Some(Box::new(room)), turn: Some(Box::new(turn)) }
    }

    /// No room held (nothing is shared).
    pub fn nothing() -> Held {
        Held { _room: None, turn: None }
    }

    /// Gives the turn back, keeping the room: before an await that lets
    /// others run for long (a model's call).
    pub fn end_turn(&mut self) {
        self.turn = None;
    }
}

/// A working memory shared with no one (native runs, tests): room is
/// always there, at once.
pub struct Unshared;

impl WorkingRoom for Unshared {
    fn take<'a>(&'a self, _bytes: usize, _what: &'a str) -> LocalBoxFuture<'a, Result<Held>> {
        Box::pin(async { Ok(Held::nothing()) })
    }
}
