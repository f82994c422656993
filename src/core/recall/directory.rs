//! The turn directory: where each stored message sits in its conversation
//! (session and position), who said it, its date, and whether it mentions
//! a time, kept in memory between recalls by whoever owns the profile (the
//! Durable Object; a test's or a tool's own value natively).
//!
//! The full-text channels score a message with the messages around it
//! ([`super::channels::score_turns`]). With the directory, a recall's
//! full-text statements return only row ids and scores, and the
//! neighbouring turns, roles and dates are looked up here instead of read
//! by SQL on every recall (the neighbour read was a fifth of a recall's
//! time in the Durable Object).
//!
//! It is derived data and holds no text but ids, and never decides what is
//! stored: SQLite stays the record. Each use starts with
//! [`TurnDirectory::sync`], one statement reading two numbers:
//! * the highest message `rowid`: messages only ever get appended (rowids
//!   grow), so rows above the highest one read are new and are read in;
//! * a count of deleted messages, kept by a trigger (`message_changes`,
//!   schema version 4) on every path that deletes one (forget with its
//!   messages, a profile's wipe, anything added later): when it moved,
//!   the directory is read again from scratch.
//!
//! What it does not do: hold message text (the time check is kept as one
//! bit per message), or know about memories (their status changes on every
//! supersession; they are read by SQL).

use crate::core::error::Result;
use crate::core::ports::{Sql, SqlValue};
use crate::core::recall::temporal::mentions_time;
use crate::core::recall::text_index::TextIndex;
use rustc_hash::FxHashMap as HashMap;
use std::cell::{Ref, RefCell};

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

/// What the directory knew at its last sync.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Mark {
    deletes: i64,
    high: i64,
}

/// The messages' places, read through [`TurnDirectory::sync`].
#[derive(Debug, Default)]
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
    text: TextIndex,
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

    /// The messages' words, documents numbered as the turns.
    pub fn text(&self) -> &TextIndex {
        &self.text
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
}

impl TurnDirectory {
    pub fn new() -> TurnDirectory {
        TurnDirectory::default()
    }

    /// Brings the directory in step with `sql` (see the module docs) and
    /// lends it out. One statement when nothing changed.
    pub fn sync(&self, sql: &dyn Sql) -> Result<Ref<'_, Directory>> {
        let row = sql.query(
            "SELECT (SELECT COALESCE(MAX(deletes), 0) FROM message_changes), (SELECT COALESCE(MAX(rowid), 0) FROM messages)",
            &[],
        )?;
        let now = Mark {
            deletes: row.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).unwrap_or(0),
            high: row.first().and_then(|r| r.get(1)).and_then(SqlValue::as_i64).unwrap_or(0),
        };
        let known = self.inner.borrow().mark;
        if known != Some(now) {
            let mut dir = self.inner.borrow_mut();
            let from = match known {
                Some(k) if k.deletes == now.deletes && k.high <= now.high => k.high,
                _ => {
                    *dir = Directory::default();
                    0
                }
            };
            // On failure the mark stays unset, so the next use starts over.
            dir.mark = None;
            load(sql, &mut dir, from, now.high)?;
            dir.mark = Some(now);
        }
        Ok(self.inner.borrow())
    }

    /// Forgets everything (the next sync reads every message again).
    pub fn clear(&self) {
        *self.inner.borrow_mut() = Directory::default();
    }

    /// Messages known (without syncing).
    pub fn len(&self) -> usize {
        self.inner.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
