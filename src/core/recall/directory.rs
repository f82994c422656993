//! The turn directory: where each stored message sits in its conversation
//! (session and position), who said it, its date, and whether it mentions
//! a time, with the words of every message and of every memory, kept in
//! memory between recalls by whoever owns the profile (the Durable Object;
//! a test's or a tool's own value natively).
//!
//! The full-text channels score a message with the messages around it
//! ([`super::channels::score_turns`]): the neighbouring turns, roles and
//! dates are looked up here instead of read by SQL on every recall. Both
//! full-text channels rank by FTS5's bm25, which SQLite computes by
//! reading every matching row's size and phrase instances; the
//! directory's two [`TextIndex`]es compute the same scores in memory.
//!
//! It is derived data and never decides what is stored: SQLite stays the
//! record. Each use starts with [`TurnDirectory::sync`], one statement
//! reading four numbers:
//! * the highest `rowid` of `messages` and of `memories` (whose
//!   `memories_fts` rows are written with them, under the same rowids):
//!   rows are only ever appended (rowids grow), so rows above the highest
//!   one read are new and are read in;
//! * how many messages and memories were ever deleted, counted by
//!   triggers (`deletions`, schema version 4) on every path that deletes
//!   one (a hard delete, a wipe, anything added later): when a count
//!   moved, that half is read again from scratch. (A memory's searchable
//!   text never changes; its status does, and is read by SQL.)
//!
//! What it does not do: hold message or memory text (the words are kept
//! as term counts, the time check as one bit per message), or know which
//! memories are live.

use crate::core::error::{Error, Result};
use crate::core::ports::{Sql, SqlValue};
use crate::core::recall::parts::{PartReader, PartWriter};
use crate::core::recall::temporal::mentions_time;
use crate::core::recall::text_index::TextIndex;
use rustc_hash::FxHashMap as HashMap;
use std::cell::{Cell, Ref, RefCell};

/// Messages read per statement when (re)loading (each at most
/// [`MAX_MESSAGE_BYTES`](crate::core::api::MAX_MESSAGE_BYTES) of text).
const LOAD_PAGE: i64 = 500;

/// Most speakers a recall checks the query against ([`Directory::speakers`]):
/// roles come from callers, and a profile with a new role for every
/// message would otherwise have each recall read them all. The names of
/// speakers beyond these stay ordinary search words.
pub const SPEAKERS_READ: usize = 1000;

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
    /// The memories' words (content, key, search queries).
    pub fn text(&self) -> &TextIndex<3> {
        &self.text
    }

    /// The rowid of document `doc`.
    pub fn rowid(&self, doc: u32) -> i64 {
        self.rowids[doc as usize]
    }
}

/// The messages' places, read through [`TurnDirectory::sync`].
#[derive(Debug, Default, PartialEq)]
pub struct Directory {
    mark: Option<Mark>,
    turns: Vec<Turn>,
    by_rowid: HashMap<i64, u32>,
    by_id: HashMap<String, u32>,
    at: HashMap<(u32, i64), u32>,
    sessions: HashMap<String, u32>,
    roles: Vec<String>,
    role_index: HashMap<String, u32>,
    /// The first [`SPEAKERS_READ`] roles in order.
    speakers: Vec<String>,
    /// The messages' words, numbered as `turns`.
    text: TextIndex<2>,
    memories: MemoryWords,
}

impl Directory {
    /// The message stored under `rowid` (the full-text index's key).
    pub fn by_rowid(&self, rowid: i64) -> Option<u32> {
        self.by_rowid.get(&rowid).copied()
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
        if self.by_rowid.contains_key(&rowid) {
            return;
        }
        self.text.add(self.turns.len() as u32, [&role, &content]);
        let head = content.char_indices().nth(super::channels::TEXT_READ_CHARS).map_or(content.len(), |(i, _)| i);
        let session = Directory::intern(&mut self.sessions, None, session);
        let role = Directory::intern(&mut self.role_index, Some(&mut self.roles), role);
        let i = self.turns.len() as u32;
        self.by_rowid.insert(rowid, i);
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
}

impl TurnDirectory {
    pub fn new() -> TurnDirectory {
        TurnDirectory::default()
    }

    /// Brings the directory in step with `sql` (see the module docs) and
    /// lends it out. One statement when nothing changed. An empty
    /// directory starts from the snapshot when it is in step.
    pub fn sync(&self, sql: &dyn Sql) -> Result<Ref<'_, Directory>> {
        let (messages, memories) = marks(sql)?;
        let (known_messages, known_memories) = {
            let dir = self.inner.borrow();
            (dir.mark, dir.memories.mark)
        };
        if known_messages.is_none() && known_memories.is_none() && !self.snapshot_unusable.get() {
            match read_snapshot(sql, messages, memories) {
                Ok(Some(dir)) => {
                    *self.inner.borrow_mut() = dir;
                    self.from_snapshot.set(true);
                }
                Ok(None) => {}
                Err(_) => self.snapshot_unusable.set(true),
            }
        }
        let (known_messages, known_memories) = {
            let dir = self.inner.borrow();
            (dir.mark, dir.memories.mark)
        };
        if known_messages != Some(messages) {
            let mut dir = self.inner.borrow_mut();
            let from = match known_messages {
                Some(k) if k.deletes == messages.deletes && k.high <= messages.high => k.high,
                _ => {
                    let memories = std::mem::take(&mut dir.memories);
                    *dir = Directory { memories, ..Directory::default() };
                    0
                }
            };
            // On failure the mark stays unset, so the next use starts over.
            dir.mark = None;
            load(sql, &mut dir, from, messages.high)?;
            dir.mark = Some(messages);
        }
        if known_memories != Some(memories) {
            let mut dir = self.inner.borrow_mut();
            let from = match known_memories {
                Some(k) if k.deletes == memories.deletes && k.high <= memories.high => k.high,
                _ => {
                    dir.memories = MemoryWords::default();
                    0
                }
            };
            dir.memories.mark = None;
            load_memories(sql, &mut dir.memories, from, memories.high)?;
            dir.memories.mark = Some(memories);
        }
        Ok(self.inner.borrow())
    }

    /// Brings the directory in step and writes its snapshot when the
    /// stored one is missing, out of step (something was deleted since),
    /// unreadable, or [`SNAPSHOT_GROWTH`] behind; profiles under
    /// [`SNAPSHOT_MIN`] documents keep none. Background work (the alarm's
    /// drain runs it): a recall then never waits for it. Returns whether
    /// it wrote one.
    pub fn maintain(&self, sql: &dyn Sql) -> Result<bool> {
        let dir = self.sync(sql)?;
        let docs = dir.turns.len() + dir.memories.text.len();
        if docs < SNAPSHOT_MIN {
            return Ok(false);
        }
        let stored = match PartReader::open(sql, SNAPSHOT_TABLE)? {
            Some((header, _)) => Header::decode(&header),
            None => None,
        };
        let due = self.snapshot_unusable.get()
            || match stored {
                None => true,
                Some(h) => {
                    Some(h.messages.deletes) != dir.mark.map(|m| m.deletes)
                        || Some(h.memories.deletes) != dir.memories.mark.map(|m| m.deletes)
                        || docs as f64 > h.docs as f64 * SNAPSHOT_GROWTH
                }
            };
        if !due {
            return Ok(false);
        }
        write_snapshot(sql, &dir)?;
        self.snapshot_unusable.set(false);
        Ok(true)
    }

    /// Whether the directory was last started from its snapshot.
    pub fn from_snapshot(&self) -> bool {
        self.from_snapshot.get()
    }

    /// Forgets everything (the next sync starts over: from the snapshot
    /// when it is in step, else from every row).
    pub fn clear(&self) {
        *self.inner.borrow_mut() = Directory::default();
        self.from_snapshot.set(false);
        self.snapshot_unusable.set(false);
    }

    /// Messages known (without syncing).
    pub fn len(&self) -> usize {
        self.inner.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Reads the memories' words with `from < rowid <= to` into `words`, in
/// pages, from `memories_fts` itself (its columns as indexed).
fn load_memories(sql: &dyn Sql, words: &mut MemoryWords, from: i64, to: i64) -> Result<()> {
    let mut after = from;
    while after < to {
        let rows = sql.query(
            "SELECT rowid, content, key, queries FROM memories_fts WHERE rowid > ?1 AND rowid <= ?2 ORDER BY rowid LIMIT ?3",
            &[SqlValue::Integer(after), SqlValue::Integer(to), SqlValue::Integer(LOAD_PAGE)],
        )?;
        let Some(last) = rows.last().and_then(|r| r[0].as_i64()) else { break };
        for r in rows {
            let text = |i: usize| r[i].as_str().unwrap_or("");
            let doc = words.rowids.len() as u32;
            words.rowids.push(r[0].as_i64().unwrap_or_default());
            words.text.add(doc, [text(1), text(2), text(3)]);
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
        let rows = sql.query(
            "SELECT rowid, id, session_id, position, role, timestamp, content FROM messages \
             WHERE rowid > ?1 AND rowid <= ?2 ORDER BY rowid LIMIT ?3",
            &[SqlValue::Integer(after), SqlValue::Integer(to), SqlValue::Integer(LOAD_PAGE)],
        )?;
        let Some(last) = rows.last().and_then(|r| r[0].as_i64()) else { break };
        for mut r in rows {
            let text = |v: &mut SqlValue| match std::mem::replace(v, SqlValue::Null) {
                SqlValue::Text(s) => s,
                _ => String::new(),
            };
            let row = LoadRow {
                rowid: r[0].as_i64().unwrap_or_default(),
                id: text(&mut r[1]),
                session: text(&mut r[2]),
                position: r[3].as_i64().unwrap_or_default(),
                role: text(&mut r[4]),
                timestamp: Some(text(&mut r[5])).filter(|t| !t.is_empty()),
                content: text(&mut r[6]),
            };
            dir.add(row);
        }
        after = last;
    }
    if dir.roles.len() != roles_before {
        let mut roles = dir.roles.clone();
        roles.sort_unstable();
        roles.truncate(SPEAKERS_READ);
        dir.speakers = roles;
    }
    Ok(())
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
    let n = |i: usize| row.first().and_then(|r| r.get(i)).and_then(SqlValue::as_i64).unwrap_or(0);
    Ok((Mark { deletes: n(0), high: n(1) }, Mark { deletes: n(2), high: n(3) }))
}

/// The table the snapshot is kept in (schema version 4).
const SNAPSHOT_TABLE: &str = "directory_snapshot";
/// Profiles with fewer documents (messages and memories) than this read
/// every row when cold (fast enough) and keep no snapshot.
pub const SNAPSHOT_MIN: usize = 4096;
/// The snapshot is rewritten once the directory holds this many times the
/// documents it holds.
pub const SNAPSHOT_GROWTH: f64 = 1.1;
const SNAPSHOT_MAGIC: &[u8; 4] = b"TD01";

/// The snapshot's part 0: what it holds.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Header {
    messages: Mark,
    memories: Mark,
    docs: u64,
}

impl Header {
    fn encode(&self) -> Vec<u8> {
        let mut b = SNAPSHOT_MAGIC.to_vec();
        for v in [self.messages.deletes, self.messages.high, self.memories.deletes, self.memories.high, self.docs as i64] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }

    fn decode(b: &[u8]) -> Option<Header> {
        if b.len() != 4 + 5 * 8 || &b[..4] != SNAPSHOT_MAGIC {
            return None;
        }
        let v = |i: usize| i64::from_le_bytes(b[4 + 8 * i..12 + 8 * i].try_into().expect("eight bytes"));
        Some(Header { messages: Mark { deletes: v(0), high: v(1) }, memories: Mark { deletes: v(2), high: v(3) }, docs: v(4) as u64 })
    }
}

/// Days since the common era of a date, or `i32::MIN` for none.
fn day_number(d: Option<chrono::NaiveDate>) -> i32 {
    use chrono::Datelike;
    d.map_or(i32::MIN, |d| d.num_days_from_ce())
}

fn from_day_number(n: i32) -> Option<chrono::NaiveDate> {
    (n != i32::MIN).then(|| chrono::NaiveDate::from_num_days_from_ce_opt(n)).flatten()
}

/// Names in the order of their indexes in `map`.
fn in_index_order(map: &HashMap<String, u32>) -> Vec<&str> {
    let mut names: Vec<(&str, u32)> = map.iter().map(|(n, &i)| (n.as_str(), i)).collect();
    names.sort_unstable_by_key(|&(_, i)| i);
    names.into_iter().map(|(n, _)| n).collect()
}

fn write_snapshot(sql: &dyn Sql, dir: &Directory) -> Result<()> {
    let (Some(messages), Some(memories)) = (dir.mark, dir.memories.mark) else { return Ok(()) };
    let mut w = PartWriter::new(sql, SNAPSHOT_TABLE)?;
    w.u32(dir.turns.len() as u32)?;
    for t in &dir.turns {
        w.i64(t.rowid)?;
        w.text(t.id.as_bytes())?;
        w.u32(t.session)?;
        w.i64(t.position)?;
        w.u32(t.role)?;
        w.bytes(&day_number(t.date).to_le_bytes())?;
        w.u8(t.mentions_time as u8)?;
    }
    let sessions = in_index_order(&dir.sessions);
    w.u32(sessions.len() as u32)?;
    for s in sessions {
        w.text(s.as_bytes())?;
    }
    w.u32(dir.roles.len() as u32)?;
    for r in &dir.roles {
        w.text(r.as_bytes())?;
    }
    dir.text.write_to(&mut w)?;
    w.u32(dir.memories.rowids.len() as u32)?;
    for &r in &dir.memories.rowids {
        w.i64(r)?;
    }
    dir.memories.text.write_to(&mut w)?;
    let docs = (dir.turns.len() + dir.memories.text.len()) as u64;
    w.finish(&Header { messages, memories, docs }.encode())?;
    Ok(())
}

/// The directory as its snapshot holds it, when the snapshot is in step
/// with the `messages` and `memories` marks (nothing deleted since; rows
/// added since are read by the sync after it). `None` without one.
fn read_snapshot(sql: &dyn Sql, messages: Mark, memories: Mark) -> Result<Option<Directory>> {
    let Some((header, mut r)) = PartReader::open(sql, SNAPSHOT_TABLE)? else { return Ok(None) };
    let Some(h) = Header::decode(&header) else { return Err(Error::storage("failed to read a snapshot: bad header")) };
    let in_step = |stored: Mark, now: Mark| stored.deletes == now.deletes && stored.high <= now.high;
    if !in_step(h.messages, messages) || !in_step(h.memories, memories) {
        return Ok(None);
    }
    let text = |r: &mut PartReader<'_>| -> Result<String> {
        String::from_utf8(r.text()?).map_err(|_| Error::storage("failed to read a snapshot: a name is not UTF-8"))
    };
    let mut dir = Directory::default();
    let turns = r.u32()? as usize;
    dir.turns.reserve_exact(turns);
    for i in 0..turns {
        let rowid = r.i64()?;
        let id = text(&mut r)?;
        let session = r.u32()?;
        let position = r.i64()?;
        let role = r.u32()?;
        let date = from_day_number(i32::from_le_bytes(r.bytes(4)?.try_into().expect("four bytes")));
        let mentions_time = r.u8()? != 0;
        dir.by_rowid.insert(rowid, i as u32);
        dir.by_id.insert(id.clone(), i as u32);
        dir.at.insert((session, position), i as u32);
        dir.turns.push(Turn { rowid, id, session, position, role, date, mentions_time });
    }
    for i in 0..r.u32()? {
        let name = text(&mut r)?;
        dir.sessions.insert(name, i);
    }
    for i in 0..r.u32()? {
        let name = text(&mut r)?;
        dir.role_index.insert(name.clone(), i);
        dir.roles.push(name);
    }
    if dir.turns.iter().any(|t| t.session as usize >= dir.sessions.len() || t.role as usize >= dir.roles.len()) {
        return Err(Error::storage("failed to read a snapshot: a turn names no session or role"));
    }
    dir.text = TextIndex::read_from(&mut r)?;
    let rowids = r.u32()? as usize;
    dir.memories.rowids.reserve_exact(rowids);
    for _ in 0..rowids {
        dir.memories.rowids.push(r.i64()?);
    }
    dir.memories.text = TextIndex::read_from(&mut r)?;
    if !r.at_end() || dir.text.len() != dir.turns.len() || dir.memories.text.len() != dir.memories.rowids.len() {
        return Err(Error::storage("failed to read a snapshot: its parts do not add up"));
    }
    let mut speakers = dir.roles.clone();
    speakers.sort_unstable();
    speakers.truncate(SPEAKERS_READ);
    dir.speakers = speakers;
    dir.mark = Some(h.messages);
    dir.memories.mark = Some(h.memories);
    Ok(Some(dir))
}
