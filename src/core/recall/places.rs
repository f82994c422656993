//! Where recall reads what it knows about messages and words: the
//! profile's turn directory when its owner keeps one in memory
//! ([`Source::Resident`]), or SQLite alone ([`Source::Sql`]): FTS5's own
//! `bm25()`, and the messages around the best hits by one join over the
//! session index. Both give the same answers (tests/resident.rs holds
//! them to it); the directory is a cache that makes them cheaper.
//!
//! A recall asks for:
//! * the best messages and memories for some words ([`Source::message_hits`],
//!   [`Source::memory_hits`]): FTS5's `bm25()`, computed by the
//!   directory's text indexes or by SQLite;
//! * the places of those messages and of the turns around them
//!   ([`Source::places`]): session, position, role, date, whether it
//!   mentions a time, gathered into a small [`Places`] for this recall;
//! * the roles of some messages, and the profile's speakers.
//!
//! What it does not do: decide which source a profile uses (its owner
//! does, by the memory budget: [`crate::core::resident`]), or keep
//! anything between recalls.

use crate::core::error::{Error, Result};
use crate::core::ports::{first_passing, Sql, SqlValue, BATCH_GROWTH, FIRST_BATCH};
use crate::core::recall::directory::{Directory, Turn, TurnDirectory, SPEAKERS_READ, TEXT_READ_CHARS};
use crate::core::recall::temporal::mentions_time;
use crate::core::store::{json_param, json_rows, json_rows_paged, FullText};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The memories a narrowed recall may return, as the full-text ranking
/// learns them.
#[derive(Clone, Copy)]
pub enum Narrowed<'a> {
    /// Every one, read ahead (their rowids).
    Ahead(&'a HashSet<i64>),
    /// Which of some rowids pass, asked a batch at a time
    /// ([`crate::core::recall::scope::RecallScope::passing_rowids`]).
    Tested(&'a dyn Fn(&[i64]) -> Result<HashSet<i64>>),
}

/// Where one recall reads messages' places and full-text scores.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// The profile's turn directory, in step with SQLite.
    Resident(&'a Directory),
    /// SQLite alone: nothing in memory beyond this recall, whose
    /// full-text reads each table is brought in step for once.
    Sql(&'a CaughtUp),
}

/// The full-text tables one recall on SQLite alone has indexed the
/// waiting rows of ([`FullText::catch_up`]): each before its first read
/// only, where every query asked again (one statement each, three to six
/// a recall; nothing is written between them).
#[derive(Debug, Default)]
pub struct CaughtUp(std::cell::Cell<(bool, bool)>);

impl CaughtUp {
    fn catch_up(&self, sql: &dyn Sql, which: FullText) -> Result<()> {
        let (messages, memories) = self.0.get();
        let (done, now) = match which {
            FullText::Messages => (messages, (true, memories)),
            FullText::Memories => (memories, (messages, true)),
        };
        if !done {
            which.catch_up(sql)?;
            self.0.set(now);
        }
        Ok(())
    }

    /// [`fts5_best_of`] with `which` caught up first unless it was.
    fn fts5(
        &self,
        sql: &dyn Sql,
        which: FullText,
        weights: &[f64],
        phrases: &[String],
        limit: usize,
        passing: Option<&HashSet<i64>>,
    ) -> Result<Vec<(i64, f64)>> {
        if phrases.is_empty() {
            return Ok(Vec::new());
        }
        self.catch_up(sql, which)?;
        fts5_query(sql, which, weights, phrases, limit, passing)
    }
}

/// A message's place, for one recall.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Place<'a> {
    pub rowid: i64,
    pub id: &'a str,
    /// Its session, as an index private to its [`Places`].
    pub session: u32,
    pub position: i64,
    /// Its role, as an index into [`Places::role_name`].
    pub role: u32,
    pub date: Option<chrono::NaiveDate>,
    pub mentions_time: bool,
}

/// The places a recall may ask for: the directory itself (every message),
/// or those of its best messages and the turns around them, read by SQL.
#[derive(Debug)]
pub enum Places<'a> {
    Resident(&'a Directory),
    Read(ReadPlaces),
}

/// Places read by SQL, in rowid order.
#[derive(Debug, Default)]
pub struct ReadPlaces {
    places: Vec<Row>,
    by_rowid: HashMap<i64, u32>,
    at: HashMap<(u32, i64), u32>,
    roles: Vec<String>,
    /// Each session's number, and each role's, by name.
    session_numbers: HashMap<String, u32>,
    role_numbers: HashMap<String, u32>,
}

/// A message as [`ReadPlaces::push`] takes it: its session and role by
/// name.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadMessage<'a> {
    pub rowid: i64,
    pub id: String,
    pub session: &'a str,
    pub position: i64,
    pub role: &'a str,
    pub date: Option<chrono::NaiveDate>,
    pub mentions_time: bool,
}

impl ReadPlaces {
    /// Adds a message. Added in rowid order, as the directory holds them:
    /// a later message at a position already taken is the one found there.
    pub fn push(&mut self, m: ReadMessage<'_>) {
        let i = self.places.len() as u32;
        let session = number(&mut self.session_numbers, m.session, |_| {});
        let roles = &mut self.roles;
        let role = number(&mut self.role_numbers, m.role, |name| roles.push(name.to_string()));
        self.by_rowid.insert(m.rowid, i);
        self.at.insert((session, m.position), i);
        self.places.push(Row { rowid: m.rowid, id: m.id, session, position: m.position, role, date: m.date, mentions_time: m.mentions_time });
    }
}

/// `name`'s number in `numbers`, the next one (told to `new`) if it has
/// none yet.
fn number(numbers: &mut HashMap<String, u32>, name: &str, new: impl FnOnce(&str)) -> u32 {
    if let Some(&n) = numbers.get(name) {
        return n;
    }
    let n = numbers.len() as u32;
    numbers.insert(name.to_string(), n);
    new(name);
    n
}

/// A message's place as read (its session and role numbered by the reader).
#[derive(Debug)]
struct Row {
    rowid: i64,
    id: String,
    session: u32,
    position: i64,
    role: u32,
    date: Option<chrono::NaiveDate>,
    mentions_time: bool,
}

impl Places<'_> {
    /// The message stored under `rowid`, if it is one of these.
    pub fn by_rowid(&self, rowid: i64) -> Option<u32> {
        match self {
            Places::Resident(dir) => dir.by_rowid(rowid),
            Places::Read(r) => r.by_rowid.get(&rowid).copied(),
        }
    }

    /// The message at `position` in session `session`, if it is one of
    /// these.
    pub fn at(&self, session: u32, position: i64) -> Option<u32> {
        match self {
            Places::Resident(dir) => dir.at(session, position),
            Places::Read(r) => r.at.get(&(session, position)).copied(),
        }
    }

    /// Place `i` (an index this value gave).
    pub fn place(&self, i: u32) -> Option<Place<'_>> {
        match self {
            Places::Resident(dir) => (i < dir.len() as u32).then(|| {
                let t: &Turn = dir.turn(i);
                Place { rowid: t.rowid, id: &t.id, session: t.session, position: t.position, role: t.role, date: t.date, mentions_time: t.mentions_time }
            }),
            Places::Read(r) => r.places.get(i as usize).map(|t| Place {
                rowid: t.rowid,
                id: &t.id,
                session: t.session,
                position: t.position,
                role: t.role,
                date: t.date,
                mentions_time: t.mentions_time,
            }),
        }
    }

    pub fn role_name(&self, role: u32) -> &str {
        match self {
            Places::Resident(dir) => dir.role_name(role),
            Places::Read(r) => r.roles.get(role as usize).map_or("", String::as_str),
        }
    }
}

/// Runs `f` on the profile's source: its directory (brought in step, lent
/// out for `f` only: `f` must not await) when its owner keeps one, else
/// SQLite.
pub fn with_source<T>(sql: &dyn Sql, turns: Option<&TurnDirectory>, f: impl FnOnce(Source<'_>) -> Result<T>) -> Result<T> {
    match turns {
        Some(turns) => {
            let dir = turns.sync(sql)?;
            f(Source::Resident(&dir))
        }
        None => f(Source::Sql(&CaughtUp::default())),
    }
}

impl Source<'_> {
    /// [`fts5_best_of`], each full-text table caught up once a recall on
    /// SQLite alone (the directory's reads, which need FTS5 only for a
    /// phrase of several words, catch up each time).
    fn fts5(
        &self,
        sql: &dyn Sql,
        which: FullText,
        weights: &[f64],
        phrases: &[String],
        limit: usize,
        passing: Option<&HashSet<i64>>,
    ) -> Result<Vec<(i64, f64)>> {
        let fresh = CaughtUp::default();
        let caught = match self {
            Source::Sql(caught) => caught,
            Source::Resident(_) => &fresh,
        };
        caught.fts5(sql, which, weights, phrases, limit, passing)
    }

    /// The best `limit` messages matching any of `phrases`, by FTS5's
    /// `bm25()` over `messages_fts` with the column `weights`: `(rowid,
    /// bm25)`, best first, ties by rowid.
    pub fn message_hits(&self, sql: &dyn Sql, phrases: &[String], weights: [f64; 2], limit: usize) -> Result<Vec<(i64, f64)>> {
        if let Source::Resident(dir) = self {
            if let Some(best) = dir.text().bm25(phrases, weights, limit) {
                return Ok(best.into_iter().map(|(i, s)| (dir.turn(i).rowid, s)).collect());
            }
        }
        self.fts5(sql, FullText::Messages, &weights, phrases, limit, None)
    }

    /// [`Source::message_hits`] for memories (`memories_fts`).
    /// Narrowed, only the memories that pass rank: those read ahead, or
    /// the best tested a batch at a time ([`first_passing`]), FTS5 asked
    /// for [`BATCH_GROWTH`] times more until `limit` pass or none are left.
    pub fn memory_hits(&self, sql: &dyn Sql, phrases: &[String], weights: [f64; 3], limit: usize, narrowed: Option<Narrowed<'_>>) -> Result<Vec<(i64, f64)>> {
        if let Source::Resident(dir) = self {
            let words = dir.memories();
            let best = match narrowed {
                Some(Narrowed::Ahead(p)) => words.text().bm25_of(phrases, weights, limit, |doc| p.contains(&words.rowid(doc))),
                Some(Narrowed::Tested(passing)) => match words.text().bm25(phrases, weights, usize::MAX) {
                    Some(all) => Some(first_passing(all, limit, |&(doc, _)| words.rowid(doc), passing)?),
                    None => None,
                },
                None => words.text().bm25(phrases, weights, limit),
            };
            if let Some(best) = best {
                return Ok(best.into_iter().map(|(doc, s)| (words.rowid(doc), s)).collect());
            }
        }
        let passing = match narrowed {
            None => return self.fts5(sql, FullText::Memories, &weights, phrases, limit, None),
            Some(Narrowed::Ahead(p)) => return self.fts5(sql, FullText::Memories, &weights, phrases, limit, Some(p)),
            Some(Narrowed::Tested(passing)) => passing,
        };
        let (mut kept, mut tested, mut depth) = (Vec::new(), 0, limit.max(FIRST_BATCH));
        loop {
            let best = self.fts5(sql, FullText::Memories, &weights, phrases, depth, None)?;
            let full = best.len() >= depth;
            // The same order each time (bm25, then rowid): the rows tested
            // already are the head of this answer.
            let fresh: Vec<(i64, f64)> = best.into_iter().skip(tested).collect();
            tested = tested.saturating_add(fresh.len());
            kept.extend(first_passing(fresh, limit.saturating_sub(kept.len()), |&(rowid, _)| rowid, passing)?);
            if kept.len() >= limit || !full {
                return Ok(kept);
            }
            depth = depth.saturating_mul(BATCH_GROWTH);
        }
    }

    /// The bm25 of `phrases` of each memory stored under `rowids` that
    /// matches them (in no order): the scores [`Source::memory_hits`]
    /// gives those memories, read for them only.
    pub fn memory_scores(&self, sql: &dyn Sql, phrases: &[String], weights: [f64; 3], rowids: &HashSet<i64>) -> Result<Vec<(i64, f64)>> {
        if rowids.is_empty() {
            return Ok(Vec::new());
        }
        if let Source::Resident(dir) = self {
            let words = dir.memories();
            let mut docs: Vec<u32> = rowids.iter().filter_map(|&r| words.doc_of(r)).collect();
            docs.sort_unstable();
            if let Some(scored) = words.text().bm25_for(phrases, weights, &docs) {
                return Ok(scored.into_iter().map(|(doc, s)| (words.rowid(doc), s)).collect());
            }
        }
        self.fts5(sql, FullText::Memories, &weights, phrases, rowids.len(), Some(rowids))
    }

    /// The places of the messages stored under `rowids` and of every
    /// message at most `window` positions from one of them in its
    /// session (the directory: all of them). A rowid that is not a stored
    /// message has none. Read by SQL, whether a message mentions a time
    /// is read only when `times` asks for it (else each place says no:
    /// it counts for a question about a time only, and reading it means
    /// the start of every message's text).
    pub fn places(&self, sql: &dyn Sql, rowids: &[i64], window: usize, times: bool) -> Result<Places<'_>> {
        Ok(match self {
            Source::Resident(dir) => Places::Resident(dir),
            Source::Sql(_) => Places::Read(places_by_sql(sql, rowids, window, times)?),
        })
    }

    /// The roles of the stored messages among `ids`.
    pub fn roles_of(&self, sql: &dyn Sql, ids: &[&String]) -> Result<HashMap<String, String>> {
        match self {
            Source::Resident(dir) => {
                Ok(ids.iter().filter_map(|id| dir.by_id(id).map(|i| ((*id).clone(), dir.role_name(dir.turn(i).role).to_string()))).collect())
            }
            Source::Sql(_) => {
                if ids.is_empty() {
                    return Ok(HashMap::default());
                }
                let rows: Vec<(String, String)> = json_rows(
                    sql,
                    "SELECT json_group_array(json_array(g.id, g.role)) FROM json_each(?1) j CROSS JOIN messages g ON g.id = j.value",
                    &[json_param(ids)?],
                )?;
                Ok(rows.into_iter().collect())
            }
        }
    }

    /// How many messages each of `roles` said, in order, and how many the
    /// profile holds.
    ///
    /// On SQLite, one statement: a count over the role index for each
    /// role, and the profile's (through its smallest index) once. Asked
    /// only for the speakers a query names by name.
    pub fn said(&self, sql: &dyn Sql, roles: &[&str]) -> Result<(Vec<usize>, usize)> {
        match self {
            Source::Resident(dir) => Ok((roles.iter().map(|r| dir.said(r)).collect(), dir.len())),
            Source::Sql(_) => {
                let rows: Vec<(usize, usize, usize)> = json_rows(
                    sql,
                    "SELECT json_group_array(json_array(j.key, (SELECT count(*) FROM messages WHERE role = j.value), (SELECT count(*) FROM messages))) \
                     FROM json_each(?1) j",
                    &[json_param(roles)?],
                )?;
                let mut said = vec![0; roles.len()];
                for (i, n, _) in &rows {
                    *said.get_mut(*i).ok_or_else(|| Error::storage("a count for a role not asked about"))? = *n;
                }
                Ok((said, rows.first().map_or(0, |r| r.2)))
            }
        }
    }

    /// The roles that speak in the profile's messages, in order, the
    /// first [`SPEAKERS_READ`] of them.
    ///
    /// On SQLite, one step of the role index per role (the next role
    /// after the last, by `min`): `SELECT DISTINCT role` read the whole
    /// index, a row per message (1.8 ms natively at 40,000 messages, for
    /// the two or three roles a profile has).
    pub fn speakers(&self, sql: &dyn Sql) -> Result<std::borrow::Cow<'_, [String]>> {
        match self {
            Source::Resident(dir) => Ok(std::borrow::Cow::Borrowed(dir.speakers())),
            Source::Sql(_) => Ok(std::borrow::Cow::Owned(json_rows(
                sql,
                "WITH RECURSIVE r(role, n) AS ( \
                   SELECT (SELECT min(role) FROM messages), 1 \
                   UNION ALL \
                   SELECT (SELECT min(role) FROM messages WHERE role > r.role), r.n + 1 FROM r WHERE r.role IS NOT NULL AND r.n < ?1) \
                 SELECT json_group_array(role) FROM r WHERE role IS NOT NULL",
                &[SqlValue::Integer(SPEAKERS_READ as i64)],
            )?)),
        }
    }
}

/// [`Source::places`] by SQL: the hits, then every message of their
/// sessions within `window` positions, in one statement. The neighbours'
/// rowids come from the session index alone (it holds them), and each
/// message is read once. (Read whole for every hit and neighbour, with
/// its first [`TEXT_READ_CHARS`] characters, and then made distinct,
/// the rows took 2.35 ms of a 12.9 ms recall on SQLite alone at 10k
/// memories, `make bench-native` `cold`.)
fn places_by_sql(sql: &dyn Sql, rowids: &[i64], window: usize, times: bool) -> Result<ReadPlaces> {
    let mut out = ReadPlaces::default();
    if rowids.is_empty() {
        return Ok(out);
    }
    type Read = (i64, String, String, i64, String, Option<String>, Option<String>);
    let mut read: Vec<Read> = json_rows_paged(
        sql,
        &format!(
            "SELECT json_array(m.rowid, m.id, m.session_id, m.position, m.role, m.timestamp, \
                    CASE WHEN ?3 THEN substr(m.content, 1, {TEXT_READ_CHARS}) END) AS r \
             FROM messages m WHERE m.rowid IN ( \
               SELECT n.rowid FROM json_each(?1) j CROSS JOIN messages h ON h.rowid = j.value \
               CROSS JOIN messages n ON n.session_id = h.session_id AND n.position BETWEEN h.position - ?2 AND h.position + ?2)"
        ),
        &[json_param(rowids)?, SqlValue::Integer(window as i64), SqlValue::Integer(times as i64)],
    )?;
    // In rowid order, as the directory holds them (a later message at a
    // position already taken is the one found there).
    read.sort_unstable_by_key(|r| r.0);
    for (rowid, id, session, position, role, timestamp, head) in read {
        let date = timestamp.as_deref().filter(|t| !t.is_empty()).and_then(crate::core::time::date_of);
        out.push(ReadMessage { rowid, id, session: &session, position, role: &role, date, mentions_time: head.as_deref().is_some_and(mentions_time) });
    }
    Ok(out)
}

/// An FTS5 MATCH expression OR-ing `phrases`, each quoted; `None` when
/// there is nothing to search for.
pub fn quoted(phrases: &[String]) -> Option<String> {
    (!phrases.is_empty()).then(|| phrases.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(" OR "))
}

/// The best `limit` rows of the full-text table `which` matching any of
/// `phrases`, by FTS5's `bm25()` with the column `weights`: `(rowid,
/// bm25)`, best first, ties by rowid. Indexes the rows still waiting for
/// their full-text rows first (usually fewer than
/// [`TEXT_BATCH`](crate::core::store::TEXT_BATCH)).
///
/// Each score crosses as 17 significant digits (`printf('%!.17g')`),
/// which give the double back bit for bit. SQLite's JSON writes a REAL
/// with 15, and a score so rounded ranked near-ties otherwise than the
/// directory's exact one (tests/resident.rs).
pub fn fts5_best(sql: &dyn Sql, which: FullText, weights: &[f64], phrases: &[String], limit: usize) -> Result<Vec<(i64, f64)>> {
    fts5_best_of(sql, which, weights, phrases, limit, None)
}

/// [`fts5_best`] over the rows stored under `passing` only, when given.
/// The rowid test is written `+rowid` so that it is not handed to FTS5 as
/// a constraint: SQLite then looped over the rowids and had FTS5 run the
/// whole query again for each one. The memories' stop words, scored for
/// a recall's candidates (`channels::add_function_words`), took a cold
/// recall from 20 to 48 ms natively at 4.6k memories and to 1.4 s at 100k
/// in workerd (`make bench-multi`); now the query runs once and its rows
/// are filtered.
pub fn fts5_best_of(
    sql: &dyn Sql,
    which: FullText,
    weights: &[f64],
    phrases: &[String],
    limit: usize,
    passing: Option<&HashSet<i64>>,
) -> Result<Vec<(i64, f64)>> {
    CaughtUp::default().fts5(sql, which, weights, phrases, limit, passing)
}

/// [`fts5_best_of`] over the full-text table as it is (its waiting rows
/// not indexed first).
fn fts5_query(sql: &dyn Sql, which: FullText, weights: &[f64], phrases: &[String], limit: usize, passing: Option<&HashSet<i64>>) -> Result<Vec<(i64, f64)>> {
    let Some(expr) = quoted(phrases) else { return Ok(Vec::new()) };
    let table = which.table();
    let slots: Vec<String> = weights.iter().zip(3usize..).map(|(_, i)| format!("?{i}")).collect();
    let mut params = vec![SqlValue::Text(expr), SqlValue::Integer(limit as i64)];
    params.extend(weights.iter().map(|&w| SqlValue::Real(w)));
    let only = match passing {
        Some(p) => {
            let mut rowids: Vec<i64> = p.iter().copied().collect();
            rowids.sort_unstable();
            params.push(json_param(&rowids)?);
            format!(" AND +rowid IN (SELECT value FROM json_each(?{}))", params.len())
        }
        None => String::new(),
    };
    json_rows(
        sql,
        &format!(
            "SELECT json_group_array(json_array(rowid, json(printf('%!.17g', s)))) \
             FROM (SELECT rowid, bm25({table}, {}) AS s FROM {table} WHERE {table} MATCH ?1{only} ORDER BY s, rowid LIMIT ?2)",
            slots.join(", ")
        ),
        &params,
    )
}
