//! The turn directory: where each stored message sits in its conversation
//! (session and position), who said it, its date, and whether it mentions
//! a time, with the words of every message and of every memory, kept in
//! memory between recalls by whoever owns the profile (the Durable Object;
//! a test's or a tool's own value natively).
//!
//! The full-text channels score a message with the messages around it
//! ([`super::channels::score_turns`], scored by `recall::score`): the neighbouring turns, roles and
//! dates are looked up here instead of read by SQL on every recall. Both
//! full-text channels rank by FTS5's bm25, which SQLite computes by
//! reading every matching row's size and phrase instances; the
//! directory's two [`TextIndex`]es compute the same scores in memory.
//!
//! It is derived data and never decides what is stored: SQLite stays the
//! record. Each use starts with [`TurnDirectory::sync`], one statement
//! reading four numbers:
//! * the highest `rowid` of `messages` and of `memories` (whose
//!   `memories_fts` rows take the same rowids): rows are only ever
//!   appended (rowids grow), so rows above the highest one read are new
//!   and are read in;
//! * how many messages and memories were ever deleted or had what the
//!   directory holds changed, counted by triggers (`deletions`, schema
//!   version 4) on every path that deletes or updates one (a hard delete,
//!   a wipe, anything added later; no path updates those columns today):
//!   when a count moved, that half is read again from scratch. (A
//!   memory's status changes; it is read by SQL. `INSERT OR REPLACE`
//!   would delete without firing the triggers: no path may use it on
//!   these tables.)
//!
//! What it does not do: hold message or memory text (the words are kept
//! as term counts, the time check as one bit per message), or know which
//! memories are live.

// Exception to the core's panic lints (src/core/mod.rs): positions and counts
// index the directory's own tables, built together from the same rows;
// tests/recall.rs and tests/text_index.rs hold it to SQLite.
#![allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::core::error::{Error, Result};
use crate::core::model::{Memory, Message};
use crate::core::ports::{Sql, SqlValue};
use crate::core::recall::parts::{PartReader, PartWriter};
use crate::core::recall::temporal::mentions_time;
use crate::core::recall::text_index::TextIndex;
use crate::core::store::{memory_fts_texts, MEMORY_FTS_COLUMNS};
use rustc_hash::FxHashMap as HashMap;
use std::cell::{Cell, Ref, RefCell};

/// Rows read per statement when (re)loading, at most; fewer where their
/// texts pass [`LOAD_PAGE_BYTES`].
const LOAD_PAGE: i64 = 500;

/// Most bytes of text one loading statement reads (one row always): a
/// page of 500 messages of 32 KB was 16 MB as the statement's one JSON
/// text, and twice that with its rows parsed, in the memory every profile
/// of the isolate shares.
const LOAD_PAGE_BYTES: usize = crate::core::store::PAGE_TEXT_BYTES;

/// The last rowid of the next page of `table` after `after` (at most `to`):
/// at most [`LOAD_PAGE`] rows and [`LOAD_PAGE_BYTES`] of the texts
/// `bytes` sums (one row always). `None` when no row is left. The sizes
/// are SQLite's to read; only the numbers come back.
fn page_end(sql: &dyn Sql, table: &str, bytes: &str, after: i64, to: i64) -> Result<Option<i64>> {
    let rows = sql.query(
        &format!("SELECT rowid, {bytes} FROM {table} WHERE rowid > ?1 AND rowid <= ?2 ORDER BY rowid LIMIT ?3"),
        &[SqlValue::Integer(after), SqlValue::Integer(to), SqlValue::Integer(LOAD_PAGE)],
    )?;
    let mut end = None;
    let mut held = 0usize;
    for r in &rows {
        let size = usize::try_from(int_at(r, 1, "text size")?).unwrap_or(usize::MAX);
        if end.is_some() && held.saturating_add(size) > LOAD_PAGE_BYTES {
            break;
        }
        held = held.saturating_add(size);
        end = Some(int_at(r, 0, "rowid")?);
    }
    Ok(end)
}

/// Most speakers a recall checks the query against ([`Directory::speakers`]):
/// roles come from callers, and a profile with a new role for every
/// message would otherwise have each recall read them all. The names of
/// speakers beyond these stay ordinary search words.
pub const SPEAKERS_READ: usize = 1000;

/// How much of a text recall reads when it needs the words (a time word
/// for the channels' time boost, the query's words for the order of one
/// message's memories): the first characters only, so that the rows of one
/// statement, built as one JSON text, stay well under the platform's 2 MB
/// cap on a value whatever the messages hold.
pub const TEXT_READ_CHARS: usize = 1000;

/// One message in the directory.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub rowid: i64,
    pub id: String,
    /// Its session, as an index private to the directory.
    pub session: u32,
    pub position: i64,
    /// Its role, as an index into [`Directory::role_name`].
    pub role: u32,
    pub date: Option<chrono::NaiveDate>,
    /// Whether its first characters mention a time
    /// ([`mentions_time`]).
    pub mentions_time: bool,
}

/// What one half of the directory knew at its last sync: deletions
/// counted and the highest rowid read.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Mark {
    deletes: i64,
    high: i64,
}

impl Mark {
    /// Whether what was read at this mark is still in step at `now`:
    /// nothing deleted or changed since, rows at most added.
    fn leads_to(self, now: Mark) -> bool {
        self.deletes == now.deletes && self.high <= now.high
    }
}

/// Column weights of `bm25()` over `memories_fts` (content, key, search
/// queries): a memory's topic key says most about it per word, the
/// queries written for it least.
pub const MEMORY_WEIGHTS: [f64; 3] = [1.0, 2.0, 0.6];

/// The memories' words, as `memories_fts` holds them.
#[derive(Debug, Default, PartialEq)]
pub struct MemoryWords {
    mark: Option<Mark>,
    /// Documents numbered as added; their rowids.
    rowids: Vec<i64>,
    text: TextIndex<3>,
}

impl MemoryWords {
    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.rowids.capacity() * 8 + self.text.heap_bytes()
    }

    /// The memories' words (content, key, search queries).
    pub fn text(&self) -> &TextIndex<3> {
        &self.text
    }

    /// The rowid of document `doc`.
    pub fn rowid(&self, doc: u32) -> i64 {
        self.rowids[doc as usize]
    }

    /// The document of the memory stored under `rowid`, if it has one
    /// (memories are added in rowid order).
    pub fn doc_of(&self, rowid: i64) -> Option<u32> {
        self.rowids.binary_search(&rowid).ok().map(|d| d as u32)
    }

    /// Adds the memory stored under `rowid` (the next one): the texts
    /// `memories_fts` indexes ([`MEMORY_FTS_COLUMNS`]).
    fn add(&mut self, rowid: i64, texts: [&str; 3]) {
        let doc = self.rowids.len() as u32;
        self.rowids.push(rowid);
        self.text.add(doc, texts);
    }
}

/// The messages' places, read through [`TurnDirectory::sync`].
#[derive(Debug, Default, PartialEq)]
pub struct Directory {
    mark: Option<Mark>,
    /// In rowid order (rows are read in that order).
    turns: Vec<Turn>,
    by_id: HashMap<String, u32>,
    at: HashMap<(u32, i64), u32>,
    sessions: HashMap<String, u32>,
    roles: Vec<String>,
    role_index: HashMap<String, u32>,
    /// How many of `turns` each role (numbered as `roles`) said.
    said: Vec<u32>,
    /// The first [`SPEAKERS_READ`] roles in order.
    speakers: Vec<String>,
    /// The messages' words, numbered as `turns`.
    text: TextIndex<2>,
    memories: MemoryWords,
}

/// Heap bytes of a map of strings: its slots and the strings' bytes.
fn map_bytes<V>(map: &HashMap<String, V>) -> usize {
    map.capacity() * (std::mem::size_of::<(String, V)>() + 1) + map.keys().map(String::capacity).sum::<usize>()
}

/// The bytes of a message id (content-addressed: 32 hex digits).
const ID_BYTES: usize = 32;

impl Directory {
    /// Bytes the directory holds on the heap (its tables' capacities, the
    /// strings they own, its two text indexes and key tables): what the
    /// memory budget counts for it ([`crate::core::resident`]). Walks only
    /// its sessions and roles.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let strings = |v: &[String]| v.iter().map(String::capacity).sum::<usize>();
        // Message ids are counted, not walked: one per turn, in the turn
        // and as a key of `by_id`.
        self.turns.capacity() * size_of::<Turn>()
            + self.turns.len() * ID_BYTES * 2
            + self.by_id.capacity() * (size_of::<(String, u32)>() + 1)
            + self.at.capacity() * (size_of::<((u32, i64), u32)>() + 1)
            + map_bytes(&self.sessions)
            + self.roles.capacity() * size_of::<String>()
            + strings(&self.roles)
            + map_bytes(&self.role_index)
            + self.said.capacity() * size_of::<u32>()
            + self.speakers.capacity() * size_of::<String>()
            + strings(&self.speakers)
            + self.text.heap_bytes()
            + self.memories.heap_bytes()
    }

    /// Bounds each of its two text indexes to `each` bytes.
    fn hold_within(&mut self, each: usize) {
        self.text.hold_within(each);
        self.memories.text.hold_within(each);
    }

    /// The message stored under `rowid` (the full-text index's key).
    pub fn by_rowid(&self, rowid: i64) -> Option<u32> {
        self.turns.binary_search_by_key(&rowid, |t| t.rowid).ok().map(|i| i as u32)
    }

    /// The message with id `id`.
    pub fn by_id(&self, id: &str) -> Option<u32> {
        self.by_id.get(id).copied()
    }

    /// The message at `position` in session `session`.
    pub fn at(&self, session: u32, position: i64) -> Option<u32> {
        self.at.get(&(session, position)).copied()
    }

    pub fn turn(&self, i: u32) -> &Turn {
        &self.turns[i as usize]
    }

    /// The messages' words (role, content), documents numbered as the
    /// turns.
    pub fn text(&self) -> &TextIndex<2> {
        &self.text
    }

    /// The memories' words.
    pub fn memories(&self) -> &MemoryWords {
        &self.memories
    }

    pub fn role_name(&self, role: u32) -> &str {
        &self.roles[role as usize]
    }

    /// How many of the messages known `role` said (0 for a role that
    /// speaks in none).
    pub fn said(&self, role: &str) -> usize {
        self.role_index.get(role).and_then(|&r| self.said.get(r as usize)).map_or(0, |&n| n as usize)
    }

    /// Messages known.
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// The roles that speak in the profile's messages, in order, the
    /// first [`SPEAKERS_READ`] of them.
    pub fn speakers(&self) -> &[String] {
        &self.speakers
    }

    /// Counts one more message said by `role`.
    fn count_said(&mut self, role: u32) {
        let role = role as usize;
        if self.said.len() <= role {
            self.said.resize(role.saturating_add(1), 0);
        }
        if let Some(n) = self.said.get_mut(role) {
            *n = n.saturating_add(1);
        }
    }

    fn refresh_speakers(&mut self) {
        let mut roles = self.roles.clone();
        roles.sort_unstable();
        roles.truncate(SPEAKERS_READ);
        self.speakers = roles;
    }

    fn intern(map: &mut HashMap<String, u32>, names: Option<&mut Vec<String>>, name: String) -> u32 {
        if let Some(&i) = map.get(&name) {
            return i;
        }
        let i = map.len() as u32;
        if let Some(names) = names {
            names.push(name.clone());
        }
        map.insert(name, i);
        i
    }

    fn add(&mut self, row: LoadRow) {
        let LoadRow { rowid, id, session, position, role, timestamp, content } = row;
        if self.turns.last().is_some_and(|t| t.rowid >= rowid) {
            return;
        }
        self.text.add(self.turns.len() as u32, [&role, &content]);
        let head = content.char_indices().nth(TEXT_READ_CHARS).map_or(content.len(), |(i, _)| i);
        let session = Directory::intern(&mut self.sessions, None, session);
        let role = Directory::intern(&mut self.role_index, Some(&mut self.roles), role);
        self.count_said(role);
        let i = self.turns.len() as u32;
        self.by_id.insert(id.clone(), i);
        self.at.insert((session, position), i);
        self.turns.push(Turn {
            rowid,
            id,
            session,
            position,
            role,
            date: timestamp.as_deref().and_then(crate::core::time::date_of),
            mentions_time: mentions_time(&content[..head]),
        });
    }
}

/// A message as the directory reads it.
struct LoadRow {
    rowid: i64,
    id: String,
    session: String,
    position: i64,
    role: String,
    timestamp: Option<String>,
    content: String,
}

/// The directory of one profile, kept by its owner between calls.
#[derive(Debug, Default)]
pub struct TurnDirectory {
    inner: RefCell<Directory>,
    from_snapshot: Cell<bool>,
    /// Set when the stored snapshot could not be read: it is not tried
    /// again, and is rewritten at the next [`TurnDirectory::maintain`].
    snapshot_unusable: Cell<bool>,
    /// The stored segments' last header, once read or written: `None`
    /// unknown, `Some(None)` no segment.
    stored: Cell<Option<Option<Header>>>,
    /// The most bytes each of its two text indexes may hold
    /// ([`TurnDirectory::hold_within`]); `None`, unbounded but for
    /// [`super::text_index::MAX_POSTINGS`].
    index_bytes: Cell<Option<usize>>,
}

impl TurnDirectory {
    pub fn new() -> TurnDirectory {
        TurnDirectory::default()
    }

    /// Bounds what the directory keeps to the `budget_bytes` its owner's
    /// profiles keep together ([`crate::core::resident`]): each of its two
    /// text indexes to half of them, past which it turns off (recall asks
    /// SQLite's full-text tables instead). A directory over the budget is
    /// not kept between requests; the bound keeps one from passing it by
    /// more than a document within a request, where mostly new words (an
    /// ingest of identifiers, hashes, Chinese or Japanese text) took
    /// twenty times their text's bytes.
    pub fn hold_within(&self, budget_bytes: usize) {
        self.index_bytes.set(Some(budget_bytes / 2));
        if let Ok(mut dir) = self.inner.try_borrow_mut() {
            self.bound(&mut dir);
        }
    }

    fn bound(&self, dir: &mut Directory) {
        if let Some(each) = self.index_bytes.get() {
            dir.hold_within(each);
        }
    }

    /// Brings the directory in step with `sql` (see the module docs) and
    /// lends it out. One statement when nothing changed. An empty
    /// directory starts from the snapshot when it is in step.
    pub fn sync(&self, sql: &dyn Sql) -> Result<Ref<'_, Directory>> {
        let (messages, memories) = marks(sql)?;
        let empty = {
            let dir = self.inner.borrow();
            dir.mark.is_none() && dir.memories.mark.is_none()
        };
        if empty && !self.snapshot_unusable.get() {
            match read_snapshot(sql, messages, memories, self.index_bytes.get()) {
                Ok(Some((dir, last))) => {
                    *self.inner.borrow_mut() = dir;
                    self.from_snapshot.set(true);
                    self.stored.set(Some(Some(last)));
                }
                Ok(None) => self.stored.set(Some(None)),
                // Derived data: a snapshot that does not read is passed
                // over, and the directory is read from the rows below
                // (where a failing store fails the call).
                Err(_) => self.snapshot_unusable.set(true),
            }
        }
        let mut dir = self.inner.borrow_mut();
        self.bound(&mut dir);
        if dir.mark != Some(messages) {
            // Rows after the mark, or every row when it no longer holds.
            let from = match dir.mark {
                Some(known) if known.leads_to(messages) => known.high,
                _ => {
                    let memories = std::mem::take(&mut dir.memories);
                    *dir = Directory { memories, ..Directory::default() };
                    self.bound(&mut dir);
                    self.from_snapshot.set(false);
                    0
                }
            };
            // On failure the mark stays unset, so the next use starts over.
            dir.mark = None;
            load(sql, &mut dir, from, messages.high)?;
            if from == 0 {
                dir.text.shrink_to_fit();
            }
            dir.mark = Some(messages);
        }
        if dir.memories.mark != Some(memories) {
            let from = match dir.memories.mark {
                Some(known) if known.leads_to(memories) => known.high,
                _ => {
                    dir.memories = MemoryWords::default();
                    self.bound(&mut dir);
                    self.from_snapshot.set(false);
                    0
                }
            };
            dir.memories.mark = None;
            load_memories(sql, &mut dir.memories, from, memories.high)?;
            if from == 0 {
                dir.memories.text.shrink_to_fit();
            }
            dir.memories.mark = Some(memories);
        }
        drop(dir);
        Ok(self.inner.borrow())
    }

    /// Takes messages their writer just stored (rowid, the position it
    /// stored the message at, and the message; the transaction that wrote
    /// them done), so the next sync need not read them back. Taken only
    /// when they are exactly the rows after the directory's mark (no other
    /// row stored since it was in step); otherwise ignored, and the next
    /// sync reads them as it would.
    pub fn feed_messages(&self, stored: &[(i64, i64, &Message)]) {
        let mut dir = self.inner.borrow_mut();
        let Some(mark) = dir.mark else { return };
        if !follows(mark, stored.iter().map(|(r, _, _)| *r)) {
            return;
        }
        let roles_before = dir.roles.len();
        for (rowid, position, m) in stored {
            dir.add(LoadRow {
                rowid: *rowid,
                id: m.id.clone(),
                session: m.session_id.clone(),
                position: *position,
                role: m.role.clone(),
                timestamp: m.timestamp.clone().filter(|t| !t.is_empty()),
                content: m.content.clone(),
            });
        }
        if dir.roles.len() != roles_before {
            dir.refresh_speakers();
        }
        dir.mark = Some(Mark { high: stored.last().map_or(mark.high, |(r, _, _)| *r), ..mark });
    }

    /// [`TurnDirectory::feed_messages`] for memories (rowid, memory).
    pub fn feed_memories(&self, stored: &[(i64, &Memory)]) {
        let mut dir = self.inner.borrow_mut();
        let Some(mark) = dir.memories.mark else { return };
        if !follows(mark, stored.iter().map(|(r, _)| *r)) {
            return;
        }
        for (rowid, m) in stored {
            let [content, key, queries] = memory_fts_texts(m);
            dir.memories.add(*rowid, [&content, &key, &queries]);
        }
        dir.memories.mark = Some(Mark { high: stored.last().map_or(mark.high, |(r, _)| *r), ..mark });
    }

    /// Brings the directory in step and extends its snapshot: a new
    /// segment holding the documents the stored segments do not, once
    /// they are [`SEGMENT_SHARE`] of all (and at least
    /// [`SEGMENT_MIN`]); every segment again when the stored ones are out
    /// of step (something was deleted since) or unreadable. Profiles under
    /// [`SNAPSHOT_MIN`] documents keep none. Background work (the alarm's
    /// drain runs it): a recall never waits for it. Returns whether it
    /// wrote a segment.
    pub fn maintain(&self, sql: &dyn Sql) -> Result<bool> {
        let dir = self.sync(sql)?;
        let (Some(messages), Some(memories)) = (dir.mark, dir.memories.mark) else { return Ok(false) };
        let docs = dir.turns.len() + dir.memories.rowids.len();
        if docs < SNAPSHOT_MIN {
            return Ok(false);
        }
        let chain = match self.stored.get() {
            _ if self.snapshot_unusable.get() => None,
            Some(known) if known.is_none_or(|h| h.in_step(messages, memories)) => Some(known),
            _ => stored_chain(sql, messages, memories)?,
        };
        let (stream, start) = match chain {
            // A long chain is written again as one segment.
            Some(Some(h)) if h.stream + 1 >= MAX_SEGMENTS => {
                sql.execute(&format!("DELETE FROM {SNAPSHOT_TABLE}"), &[])?;
                (0, (0, 0))
            }
            Some(last) => {
                let (t, m) = last.map_or((0, 0), |h| (h.turns_end as usize, h.memories_end as usize));
                let uncovered = dir.turns.len() - t + dir.memories.rowids.len() - m;
                if uncovered < SEGMENT_MIN.max((docs as f64 * SEGMENT_SHARE) as usize) {
                    return Ok(false);
                }
                (last.map_or(0, |h| h.stream + 1), (t, m))
            }
            None => {
                sql.execute(&format!("DELETE FROM {SNAPSHOT_TABLE}"), &[])?;
                (0, (0, 0))
            }
        };
        // Unknown until written whole.
        self.stored.set(None);
        let last = write_segment(sql, &dir, stream, start)?;
        self.stored.set(last.map(Some));
        self.snapshot_unusable.set(false);
        Ok(true)
    }

    /// Bytes the directory holds on the heap now (0 when cleared, or while
    /// it is lent out).
    pub fn heap_bytes(&self) -> usize {
        self.inner.try_borrow().map_or(0, |d| d.heap_bytes())
    }

    /// Whether the directory holds anything (it was synced since it was
    /// created or cleared). While it is lent out: yes.
    pub fn is_loaded(&self) -> bool {
        self.inner.try_borrow().map_or(true, |d| d.mark.is_some() || d.memories.mark.is_some())
    }

    /// The highest message and memory rowids the directory has read, when
    /// it holds both halves (and is not lent out): the counts its
    /// [`TurnDirectory::heap_bytes`] stands for, as
    /// [`crate::core::resident::estimate`] takes them.
    pub fn read_up_to(&self) -> Option<(u64, u64)> {
        let dir = self.inner.try_borrow().ok()?;
        let high = |m: Option<Mark>| m.map(|m| u64::try_from(m.high).unwrap_or(0));
        Some((high(dir.mark)?, high(dir.memories.mark)?))
    }

    /// Whether the directory was last started from its snapshot.
    pub fn from_snapshot(&self) -> bool {
        self.from_snapshot.get()
    }

    /// Forgets everything (the next sync starts over: from the snapshot
    /// when it is in step, else from every row).
    pub fn clear(&self) {
        self.try_clear();
    }

    /// [`TurnDirectory::clear`], unless the directory is lent out (a
    /// request holds it across an await): then nothing, and `false`.
    pub fn try_clear(&self) -> bool {
        let Ok(mut dir) = self.inner.try_borrow_mut() else { return false };
        *dir = Directory::default();
        self.from_snapshot.set(false);
        self.snapshot_unusable.set(false);
        self.stored.set(None);
        true
    }
}

/// Reads the memories' words with `from < rowid <= to` into `words`, in
/// pages: the text `memories_fts` indexes ([`MEMORY_FTS_COLUMNS`]), read
/// from `memories` by rowid (a range of the full-text table itself is
/// read by scanning all of it).
fn load_memories(sql: &dyn Sql, words: &mut MemoryWords, from: i64, to: i64) -> Result<()> {
    let mut after = from;
    while after < to {
        let sizes = "length(CAST(content AS BLOB)) + ifnull(length(CAST(key AS BLOB)), 0) + ifnull(length(CAST(search_queries AS BLOB)), 0)";
        let Some(end) = page_end(sql, "memories", sizes, after, to)? else { break };
        let rows = sql.query(
            &format!("SELECT m.rowid, {MEMORY_FTS_COLUMNS} FROM memories m WHERE m.rowid > ?1 AND m.rowid <= ?2 ORDER BY m.rowid"),
            &[SqlValue::Integer(after), SqlValue::Integer(end)],
        )?;
        let Some(last) = rows.last().and_then(|r| r[0].as_i64()) else { break };
        for r in rows {
            let text = |i: usize| r.get(i).and_then(SqlValue::as_str).ok_or_else(|| Error::storage("a memory's indexed text is not text"));
            words.add(int_at(&r, 0, "memory rowid")?, [text(1)?, text(2)?, text(3)?]);
        }
        after = last;
    }
    Ok(())
}

/// Reads the messages with `from < rowid <= to` into `dir`, in pages.
fn load(sql: &dyn Sql, dir: &mut Directory, from: i64, to: i64) -> Result<()> {
    let roles_before = dir.roles.len();
    let mut after = from;
    while after < to {
        let Some(end) = page_end(sql, "messages", "length(CAST(content AS BLOB))", after, to)? else { break };
        let rows = sql.query(
            "SELECT rowid, id, session_id, position, role, timestamp, content FROM messages \
             WHERE rowid > ?1 AND rowid <= ?2 ORDER BY rowid",
            &[SqlValue::Integer(after), SqlValue::Integer(end)],
        )?;
        let Some(last) = rows.last().and_then(|r| r[0].as_i64()) else { break };
        for mut r in rows {
            let row = LoadRow {
                rowid: int_at(&r, 0, "message rowid")?,
                id: text_at(&mut r, 1, "message id")?,
                session: text_at(&mut r, 2, "message's session id")?,
                position: int_at(&r, 3, "message's position")?,
                role: text_at(&mut r, 4, "message's role")?,
                timestamp: match r.get(5) {
                    Some(SqlValue::Null) => None,
                    _ => Some(text_at(&mut r, 5, "message's timestamp")?).filter(|t| !t.is_empty()),
                },
                content: text_at(&mut r, 6, "message's content")?,
            };
            dir.add(row);
        }
        after = last;
    }
    if dir.roles.len() != roles_before {
        dir.refresh_speakers();
    }
    Ok(())
}

/// Column `i` of a row, which must be an integer.
fn int_at(r: &[SqlValue], i: usize, what: &str) -> Result<i64> {
    r.get(i).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage(format!("a {what} that is not an integer")))
}

/// Column `i` of a row, which must be text, taken out of it.
fn text_at(r: &mut [SqlValue], i: usize, what: &str) -> Result<String> {
    match r.get_mut(i).map(|v| std::mem::replace(v, SqlValue::Null)) {
        Some(SqlValue::Text(s)) => Ok(s),
        _ => Err(Error::storage(format!("a {what} that is not text"))),
    }
}

/// Whether `rowids` are the rows right after `mark`: one each, in order,
/// from `mark.high + 1` with none missing.
fn follows(mark: Mark, rowids: impl Iterator<Item = i64>) -> bool {
    let mut next = mark.high.checked_add(1);
    for r in rowids {
        if Some(r) != next {
            return false;
        }
        next = r.checked_add(1);
    }
    true
}

/// The current [`Mark`]s of the messages and of the memories, in one
/// statement.
fn marks(sql: &dyn Sql) -> Result<(Mark, Mark)> {
    let row = sql.query(
        "SELECT d.messages, (SELECT COALESCE(MAX(rowid), 0) FROM messages), \
                d.memories, (SELECT COALESCE(MAX(rowid), 0) FROM memories) \
         FROM (SELECT COALESCE(MAX(messages), 0) AS messages, COALESCE(MAX(memories), 0) AS memories FROM deletions) d",
        &[],
    )?;
    let r = row.first().ok_or_else(|| Error::storage("the directory's marks returned no row"))?;
    let n = |i: usize| int_at(r, i, "mark");
    Ok((Mark { deletes: n(0)?, high: n(1)? }, Mark { deletes: n(2)?, high: n(3)? }))
}

/// The table the snapshot is kept in (schema version 4): one stream of
/// parts per segment ([`super::parts`]).
const SNAPSHOT_TABLE: &str = "directory_snapshot";
/// Profiles with fewer documents (messages and memories) than this read
/// every row when cold (fast enough) and keep no snapshot.
pub const SNAPSHOT_MIN: usize = 4096;
/// A new segment is written once the documents no segment holds are this
/// share of all: a cold start reads at most about this share row by row.
pub const SEGMENT_SHARE: f64 = 0.1;
/// ... and at least this many.
pub const SEGMENT_MIN: usize = 1024;
/// Once this many segments are stored, the next write replaces them all
/// with one (a chain grows by a tenth per segment: about every doubling).
pub const MAX_SEGMENTS: i64 = 8;
/// Version 3 no longer holds the memories' fingerprints and topic keys
/// (SQL indexes answer those, schema version 9); a segment of an earlier
/// version reads as out of step, and the directory is rebuilt from the
/// rows.
const SEGMENT_MAGIC: &[u8; 4] = b"TS03";

/// A segment's header: the documents it holds (turns and memory
/// documents from `*_start` up to `*_end`, as numbered in the directory)
/// and the directory's marks when it was written.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Header {
    stream: i64,
    messages: Mark,
    memories: Mark,
    turns_start: u32,
    turns_end: u32,
    memories_start: u32,
    memories_end: u32,
}

impl Header {
    /// Whether nothing was deleted since this header was written and
    /// nothing it covers is beyond what is stored.
    fn in_step(&self, messages: Mark, memories: Mark) -> bool {
        self.messages.leads_to(messages) && self.memories.leads_to(memories)
    }

    fn encode(&self) -> Vec<u8> {
        let mut b = SEGMENT_MAGIC.to_vec();
        for v in [self.messages.deletes, self.messages.high, self.memories.deletes, self.memories.high] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for v in [self.turns_start, self.turns_end, self.memories_start, self.memories_end] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }

    fn decode(stream: i64, b: &[u8]) -> Option<Header> {
        if b.len() != 4 + 4 * 8 + 4 * 4 || &b[..4] != SEGMENT_MAGIC {
            return None;
        }
        let v = |i: usize| Some(i64::from_le_bytes(b.get(4 + 8 * i..12 + 8 * i)?.try_into().ok()?));
        let u = |i: usize| Some(u32::from_le_bytes(b.get(36 + 4 * i..40 + 4 * i)?.try_into().ok()?));
        Some(Header {
            stream,
            messages: Mark { deletes: v(0)?, high: v(1)? },
            memories: Mark { deletes: v(2)?, high: v(3)? },
            turns_start: u(0)?,
            turns_end: u(1)?,
            memories_start: u(2)?,
            memories_end: u(3)?,
        })
    }
}

/// The stored segments when they form one chain in step with the marks
/// (each starting where the one before ended, nothing deleted since, none
/// beyond what is stored): `Some(last)`, `Some(None)` when there are
/// none, `None` when they are out of step or unreadable.
fn stored_chain(sql: &dyn Sql, messages: Mark, memories: Mark) -> Result<Option<Option<Header>>> {
    let mut last: Option<Header> = None;
    for (stream, bytes) in super::parts::headers(sql, SNAPSHOT_TABLE)? {
        let Some(h) = Header::decode(stream, &bytes) else { return Ok(None) };
        let (t, m) = last.map_or((0, 0), |l| (l.turns_end, l.memories_end));
        let in_step = h.stream == last.map_or(0, |l| l.stream + 1) && (h.turns_start, h.memories_start) == (t, m) && h.in_step(messages, memories);
        if !in_step {
            return Ok(None);
        }
        last = Some(h);
    }
    Ok(Some(last))
}

/// Days since the common era of a date, or `i32::MIN` for none.
fn day_number(d: Option<chrono::NaiveDate>) -> i32 {
    use chrono::Datelike;
    d.map_or(i32::MIN, |d| d.num_days_from_ce())
}

fn from_day_number(n: i32) -> Option<chrono::NaiveDate> {
    (n != i32::MIN).then(|| chrono::NaiveDate::from_num_days_from_ce_opt(n)).flatten()
}

/// Names of `map` from index `from` on, in index order.
fn names_from(map: &HashMap<String, u32>, from: u32) -> Vec<&str> {
    let mut names: Vec<(&str, u32)> = map.iter().filter(|(_, &i)| i >= from).map(|(n, &i)| (n.as_str(), i)).collect();
    names.sort_unstable_by_key(|&(_, i)| i);
    names.into_iter().map(|(n, _)| n).collect()
}

/// Writes segment `stream`: the turns and memory documents from `start`
/// (turn, memory document) to the directory's end. Returns its header.
fn write_segment(sql: &dyn Sql, dir: &Directory, stream: i64, start: (usize, usize)) -> Result<Option<Header>> {
    let (Some(messages), Some(memories)) = (dir.mark, dir.memories.mark) else { return Ok(None) };
    let (t0, m0) = start;
    let mut w = PartWriter::new(sql, SNAPSHOT_TABLE, stream)?;
    let new = &dir.turns[t0..];
    w.u32(new.len() as u32)?;
    for t in new {
        w.i64(t.rowid)?;
        w.text(t.id.as_bytes())?;
        w.u32(t.session)?;
        w.i64(t.position)?;
        w.u32(t.role)?;
        w.bytes(&day_number(t.date).to_le_bytes())?;
        w.u8(t.mentions_time as u8)?;
    }
    // Sessions and roles are numbered as first met: those the earlier
    // turns did not meet are this segment's.
    let before = &dir.turns[..t0];
    let sessions_from = before.iter().map(|t| t.session + 1).max().unwrap_or(0);
    let roles_from = before.iter().map(|t| t.role + 1).max().unwrap_or(0);
    let sessions = names_from(&dir.sessions, sessions_from);
    w.u32(sessions.len() as u32)?;
    for s in sessions {
        w.text(s.as_bytes())?;
    }
    let roles = &dir.roles[(roles_from as usize).min(dir.roles.len())..];
    w.u32(roles.len() as u32)?;
    for r in roles {
        w.text(r.as_bytes())?;
    }
    dir.text.write_since(&mut w, t0 as u32)?;
    let rowids = &dir.memories.rowids[m0..];
    w.u32(rowids.len() as u32)?;
    for &r in rowids {
        w.i64(r)?;
    }
    dir.memories.text.write_since(&mut w, m0 as u32)?;
    let header = Header {
        stream,
        messages,
        memories,
        turns_start: t0 as u32,
        turns_end: dir.turns.len() as u32,
        memories_start: m0 as u32,
        memories_end: dir.memories.rowids.len() as u32,
    };
    w.finish(&header.encode())?;
    Ok(Some(header))
}

/// The directory as its snapshot's segments hold it, with the last
/// segment's header, when they are in step with the `messages` and
/// `memories` marks (rows added since are read by the sync after it).
/// `None` without segments.
fn read_snapshot(sql: &dyn Sql, messages: Mark, memories: Mark, index_bytes: Option<usize>) -> Result<Option<(Directory, Header)>> {
    let Some(chain) = stored_chain(sql, messages, memories)? else {
        return Err(Error::storage("failed to read a snapshot: its segments are out of step"));
    };
    let Some(last) = chain else { return Ok(None) };
    let bad = |what: &str| Error::storage(format!("failed to read a snapshot: {what}"));
    let text = |r: &mut PartReader<'_>| -> Result<String> { String::from_utf8(r.text()?).map_err(|_| bad("a name is not UTF-8")) };
    let mut dir = Directory::default();
    if let Some(each) = index_bytes {
        dir.hold_within(each);
    }
    for stream in 0..=last.stream {
        let mut r = PartReader::open(sql, SNAPSHOT_TABLE, stream)?;
        let turns = r.u32()? as usize;
        // A count read from storage bounds nothing: reserve modestly.
        dir.turns.reserve(turns.min(1 << 16));
        for _ in 0..turns {
            let i = dir.turns.len() as u32;
            let rowid = r.i64()?;
            let id = text(&mut r)?;
            let session = r.u32()?;
            let position = r.i64()?;
            let role = r.u32()?;
            let date = from_day_number(r.i32()?);
            let mentions_time = r.u8()? != 0;
            if dir.turns.last().is_some_and(|t| t.rowid >= rowid) {
                return Err(bad("turns out of order"));
            }
            dir.by_id.insert(id.clone(), i);
            dir.at.insert((session, position), i);
            dir.turns.push(Turn { rowid, id, session, position, role, date, mentions_time });
            dir.count_said(role);
        }
        for _ in 0..r.u32()? {
            let name = text(&mut r)?;
            let i = dir.sessions.len() as u32;
            dir.sessions.insert(name, i);
        }
        for _ in 0..r.u32()? {
            let name = text(&mut r)?;
            dir.role_index.insert(name.clone(), dir.roles.len() as u32);
            dir.roles.push(name);
        }
        dir.text.read_more(&mut r)?;
        let added = r.u32()?;
        for _ in 0..added {
            dir.memories.rowids.push(r.i64()?);
        }
        dir.memories.text.read_more(&mut r)?;
        if !r.at_end() {
            return Err(bad("a segment holds more than it says"));
        }
    }
    let counts_agree = dir.turns.len() == last.turns_end as usize
        && (dir.text.is_off() || dir.text.len() == dir.turns.len())
        && dir.memories.rowids.len() == last.memories_end as usize
        && (dir.memories.text.is_off() || dir.memories.text.len() == dir.memories.rowids.len())
        && dir.sessions.len() == dir.turns.iter().map(|t| t.session as usize + 1).max().unwrap_or(0)
        && dir.roles.len() == dir.turns.iter().map(|t| t.role as usize + 1).max().unwrap_or(0);
    if !counts_agree {
        return Err(bad("its segments do not add up"));
    }
    dir.text.shrink_to_fit();
    dir.memories.text.shrink_to_fit();
    dir.refresh_speakers();
    dir.mark = Some(last.messages);
    dir.memories.mark = Some(last.memories);
    Ok(Some((dir, last)))
}
