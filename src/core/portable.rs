//! Export and import: a profile as NDJSON, one record per line.
//!
//! ```text
//! {"kind":"header","format":"agent-memory-export","version":1,"profile":"ns/p","exportedAt":"..."}
//! {"kind":"message", ...Message}
//! {"kind":"memory", ...Memory}
//! {"kind":"restatement","memoryId":"...","messageId":"..."}
//! {"kind":"withheld","messageId":"...","fingerprint":"..."}
//! {"kind":"consolidation","id":1,"action":"fold",...,"before":[...Memory]}
//! ```
//! A restatement records that a message said a memory again word for
//! word (core::store::restatements): deleting the messages the memory
//! cites then moves it to that message. A withheld record is what such a
//! message said of a memory since deleted by id, by its fingerprint: a
//! retry of the message's session does not store it anew. A consolidation
//! record is a change consolidation made and not undone, with the memories as they were
//! before it: an imported profile can undo it, and a later value of a
//! folded member's key reopens the fold, as in the profile exported.
//! Import validates the whole file before writing anything, then writes
//! everything in one transaction; records already present are left as
//! they are (`INSERT OR IGNORE`), but for one held active that a new
//! active version in the file supersedes: it is superseded by it; and a
//! file's active memory meeting another active holder of its key by key
//! alone ends as ingest would have left them ([`settle_keys`]). A file is taken only when it is
//! consistent: each line as strict as a request body, each record once,
//! each passing its write route's checks, its dates as the service writes
//! them, its links to other versions held by the file or the profile.

use crate::core::api;
use crate::core::error::{serde_message, Error, Result};
use crate::core::ids;
use crate::core::model::{Memory, Message};
use crate::core::ports::Sql;
use crate::core::store::{Kept, Store};
use crate::core::time::iso;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

pub const FORMAT: &str = "agent-memory-export";
pub const VERSION: i64 = 1;

/// Messages an export reads at once: with 32 KB of content each, about
/// 1 MB.
const EXPORT_MESSAGE_PAGE: usize = 32;
/// Memories an export reads at once (statements, far shorter).
const EXPORT_MEMORY_PAGE: usize = 256;

/// How large each part of a spooled export is (the last one may be
/// smaller): well under the platform's 2 MB cap on a value.
pub const EXPORT_PART_BYTES: usize = 512 * 1024;

/// Exports of one profile spooled at once, at most: each holds a copy of
/// the profile in its database until it is read out.
pub const MAX_SPOOLED_EXPORTS: i64 = 2;

/// How long a spooled export may take to be read out: one spooled longer
/// ago is taken as abandoned (its reader never finished nor cancelled)
/// and removed when another export is asked for, its reading, if any,
/// then failing.
pub const ABANDONED_EXPORT_MILLIS: i64 = 60 * 60 * 1000;

/// A spooled export read back whole, then removed from the spool.
pub fn read_whole(sql: &dyn Sql, spooled: Spooled) -> Result<String> {
    let store = Store::new(sql, 0);
    let parts = (0..spooled.parts).map(|part| store.export_part(spooled.export, part)).collect::<Result<Vec<_>>>();
    // A part that did not read is the error to report, removed or not.
    let removed = store.drop_export(spooled.export);
    let parts = parts?;
    removed?;
    String::from_utf8(parts.concat()).map_err(|e| Error::storage(format!("a spooled export is not UTF-8: {e}")))
}

/// A spooled export read out a part at a time, each part read from the
/// database when it is asked for, so the reader holds one part. The
/// export leaves the spool with its last part, or when the reading ends
/// early (a part that does not read ends it, and so does dropping the
/// reader: the caller went away). `left` hears of a removal that failed;
/// its parts stay until the spool is cleared
/// ([`Store::clear_export_spool`]).
pub struct SpooledParts<Q: Sql> {
    sql: Q,
    spooled: Spooled,
    next: i64,
    left: fn(&Error),
}

impl<Q: Sql> SpooledParts<Q> {
    pub fn new(sql: Q, spooled: Spooled, left: fn(&Error)) -> SpooledParts<Q> {
        SpooledParts { sql, spooled, next: 0, left }
    }

    /// The spool's store (reading it needs no clock).
    fn store(&self) -> Store<'_> {
        Store::new(&self.sql, 0)
    }
}

impl<Q: Sql> Iterator for SpooledParts<Q> {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Result<Vec<u8>>> {
        if self.next >= self.spooled.parts {
            return None;
        }
        let part = self.store().export_part(self.spooled.export, self.next);
        self.next = if part.is_ok() { self.next.saturating_add(1) } else { self.spooled.parts };
        if self.next == self.spooled.parts {
            if let Err(e) = self.store().drop_export(self.spooled.export) {
                (self.left)(&e);
            }
        }
        Some(part)
    }
}

impl<Q: Sql> Drop for SpooledParts<Q> {
    fn drop(&mut self) {
        if self.next < self.spooled.parts {
            if let Err(e) = self.store().drop_export(self.spooled.export) {
                (self.left)(&e);
            }
        }
    }
}

/// An export written to the profile's spool (`core::store::spool`): parts
/// `0..parts` of export number `export`, to be read out with
/// [`Store::export_part`] and removed with [`Store::drop_export`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spooled {
    pub export: i64,
    pub parts: i64,
}

/// Writes the profile as NDJSON to the spool: a header, every message,
/// every memory. With a filter, the memories passing it and the messages
/// they cite, their links to versions that do not pass left out (as a
/// hard delete leaves them): the file imports anywhere ([`check_links`]).
///
/// The file is written in parts of [`EXPORT_PART_BYTES`] (a part may end
/// inside a record: the parts are one byte stream), in one transaction,
/// so the file is one moment's profile however the profile changes while
/// the file is read out.
///
/// The object holds one part at a time, whatever the profile's size:
/// messages and memories are read a page ([`EXPORT_MESSAGE_PAGE`],
/// [`EXPORT_MEMORY_PAGE`]) at a time, and with a filter, which records
/// pass is recorded in the database ([`write_export`]). The Durable
/// Object answers with a stream that reads the parts back one by one as
/// the platform sends them ([`SpooledParts`]). (Held in memory instead,
/// the parts of a profile of about 100 MB would fill an isolate's 128 MB.)
///
/// At most [`MAX_SPOOLED_EXPORTS`] exports of a profile are spooled at
/// once; another is refused (409) until one is read out, or is older than
/// [`ABANDONED_EXPORT_MILLIS`].
pub fn spool_export(store: &Store<'_>, profile: &str, filter: Option<&crate::core::filter::Filter>) -> Result<Spooled> {
    store.drop_exports_before(store.now().saturating_sub(ABANDONED_EXPORT_MILLIS))?;
    let spooled = store.spooled_exports()?;
    if spooled >= MAX_SPOOLED_EXPORTS {
        return Err(Error::conflict(format!(
            "{spooled} exports of this profile are being read out, the most at once; try again once one is read (or its reading is cancelled)"
        )));
    }
    store.transaction(|| {
        let mut out = Spool { store, export: store.next_export()?, parts: 0, current: Vec::new() };
        write_export(&mut out, store, profile, filter)?;
        out.finish()
    })
}

/// The export's records, written to `out` in order. With a filter, a
/// first pass records in the database which memories pass and which
/// messages they cite ([`Store::keep_for_export`]); each page is then
/// checked against that record, so no list of ids grows with the profile.
fn write_export(out: &mut Spool<'_, '_>, store: &Store<'_>, profile: &str, filter: Option<&crate::core::filter::Filter>) -> Result<()> {
    out.push_str(&json!({"kind": "header", "format": FORMAT, "version": VERSION, "profile": profile, "exportedAt": iso(store.now())}).to_string())?;
    out.push_str("\n")?;
    let export = out.export;
    if let Some(f) = filter {
        keep_passing(store, export, f)?;
    }
    // Without a filter, every record is kept.
    let kept = |kind: Kept, ids: &mut dyn Iterator<Item = &str>| filter.map(|_| store.kept_by_export(export, kind, ids)).transpose();
    write_messages(out, store, &kept)?;
    write_memories(out, store, &kept)?;
    write_restatements(out, store, &kept)?;
    write_withheld(out, store, &kept)?;
    write_consolidations(out, store, &kept)?;
    store.drop_export_kept(export)
}

/// Which of some ids of a kind an export keeps (`None`: every one, with
/// no filter).
type KeptBy<'k> = dyn Fn(Kept, &mut dyn Iterator<Item = &str>) -> Result<Option<HashSet<String>>> + 'k;

/// Records, for export `export`, the memories passing `f` and the
/// messages they cite.
fn keep_passing(store: &Store<'_>, export: i64, f: &crate::core::filter::Filter) -> Result<()> {
    each_memory_page(store, |page| {
        let passing: Vec<&Memory> = page.iter().filter(|m| f.matches(m)).collect();
        store.keep_for_export(export, Kept::Memory, passing.iter().map(|m| m.id.as_str()))?;
        store.keep_for_export(export, Kept::Message, passing.iter().flat_map(|m| m.source_message_ids.iter().map(String::as_str)))
    })
}

/// The kept messages, by session and position.
fn write_messages(out: &mut Spool<'_, '_>, store: &Store<'_>, kept: &KeptBy<'_>) -> Result<()> {
    let mut after: Option<(String, i64, i64)> = None;
    loop {
        let page = store.messages_after(after.as_ref().map(|(s, p, r)| (s.as_str(), *p, *r)), EXPORT_MESSAGE_PAGE)?;
        let Some((rowid, last)) = page.last() else { break };
        after = Some((last.session_id.clone(), last.position, *rowid));
        let kept = kept(Kept::Message, &mut page.iter().map(|(_, m)| m.id.as_str()))?;
        for (_, m) in page.iter().filter(|(_, m)| kept.as_ref().is_none_or(|k| k.contains(&m.id))) {
            out.push_str(&tagged("message", m)?)?;
        }
    }
    Ok(())
}

/// The kept memories, each with its links to versions the file holds.
fn write_memories(out: &mut Spool<'_, '_>, store: &Store<'_>, kept: &KeptBy<'_>) -> Result<()> {
    each_memory_page(store, |page| {
        // The page's memories and the versions they link to.
        let mut linked = page.iter().flat_map(|m| [Some(&m.id), m.supersedes.as_ref(), m.superseded_by.as_ref()]).flatten().map(String::as_str);
        let held = kept(Kept::Memory, &mut linked)?;
        for m in page.iter().filter(|m| held.as_ref().is_none_or(|h| h.contains(&m.id))) {
            out.push_str(&tagged("memory", &linked_within(m, held.as_ref()))?)?;
        }
        Ok(())
    })
}

/// The restatements whose memory and message are both in the file.
fn write_restatements(out: &mut Spool<'_, '_>, store: &Store<'_>, kept: &KeptBy<'_>) -> Result<()> {
    let mut after: Option<(String, i64)> = None;
    loop {
        let page = store.restatements_after(after.as_ref().map(|(m, r)| (m.as_str(), *r)), EXPORT_MEMORY_PAGE)?;
        let Some((memory, rowid, _)) = page.last() else { break };
        after = Some((memory.clone(), *rowid));
        let memories = kept(Kept::Memory, &mut page.iter().map(|r| r.0.as_str()))?;
        let messages = kept(Kept::Message, &mut page.iter().map(|r| r.2.as_str()))?;
        let both = |r: &&(String, i64, String)| memories.as_ref().is_none_or(|m| m.contains(&r.0)) && messages.as_ref().is_none_or(|g| g.contains(&r.2));
        for (memory_id, _, message_id) in page.iter().filter(both) {
            out.push_str(&tagged("restatement", &Restatement { memory_id: memory_id.clone(), message_id: message_id.clone() })?)?;
        }
    }
    Ok(())
}

/// What messages in the file said of memories since deleted.
fn write_withheld(out: &mut Spool<'_, '_>, store: &Store<'_>, kept: &KeptBy<'_>) -> Result<()> {
    let mut after: Option<(i64, String)> = None;
    loop {
        let page = store.withheld_after(after.as_ref().map(|(r, f)| (*r, f.as_str())), EXPORT_MEMORY_PAGE)?;
        let Some((rowid, _, fingerprint)) = page.last() else { break };
        after = Some((*rowid, fingerprint.clone()));
        let kept = kept(Kept::Message, &mut page.iter().map(|w| w.1.as_str()))?;
        for (_, message_id, fingerprint) in page.iter().filter(|w| kept.as_ref().is_none_or(|k| k.contains(&w.1))) {
            out.push_str(&tagged("withheld", &Withheld { message_id: message_id.clone(), fingerprint: fingerprint.clone() })?)?;
        }
    }
    Ok(())
}

/// The consolidations that stand (not undone), whose memories are all in
/// the file: an undone one is history whose creations are gone.
fn write_consolidations(out: &mut Spool<'_, '_>, store: &Store<'_>, kept: &KeptBy<'_>) -> Result<()> {
    let mut after = 0;
    loop {
        let ids = store.consolidation_ids_after(after, EXPORT_CONSOLIDATION_PAGE)?;
        let Some(&last) = ids.last() else { break };
        after = last;
        for id in ids {
            let Some((record, before, created)) = store.consolidation(id)?.filter(|(r, _, _)| r.undone_at.is_none()) else { continue };
            let entry = ConsolidationEntry::of(record, before, created);
            if let Some(f) = kept(Kept::Memory, &mut entry.involved().map(String::as_str))? {
                if !entry.involved().all(|m| f.contains(m)) {
                    continue;
                }
            }
            out.push_str(&tagged("consolidation", &entry)?)?;
        }
    }
    Ok(())
}

/// Consolidation records an export reads at a time: each holds copies of
/// its memories as they were (a fold's up to its size limit).
const EXPORT_CONSOLIDATION_PAGE: usize = 16;

/// A change consolidation made, with the memories as they were before it
/// and those it created (an export's `consolidation` record).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsolidationEntry {
    pub id: i64,
    pub run_id: String,
    pub action: String,
    pub target: String,
    pub members: Vec<String>,
    #[serde(default)]
    pub created: Vec<String>,
    pub reason: String,
    pub at: String,
    pub before: Vec<Memory>,
}

impl ConsolidationEntry {
    fn of(r: crate::core::model::ConsolidationRecord, before: Vec<Memory>, created: Vec<String>) -> ConsolidationEntry {
        ConsolidationEntry { id: r.id, run_id: r.run_id, action: r.action, target: r.target, members: r.members, created, reason: r.reason, at: r.at, before }
    }

    /// Every memory it names: its target, members and those it created.
    fn involved(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.target).chain(&self.members).chain(&self.created)
    }

    fn record(&self) -> crate::core::model::ConsolidationRecord {
        crate::core::model::ConsolidationRecord {
            id: self.id,
            run_id: self.run_id.clone(),
            action: self.action.clone(),
            target: self.target.clone(),
            members: self.members.clone(),
            reason: self.reason.clone(),
            at: self.at.clone(),
            undone_at: None,
        }
    }
}

/// Longest `runId` and `reason` of an imported consolidation record.
const MAX_CONSOLIDATION_TEXT: usize = 4096;

/// An imported consolidation record as the service writes one: a known
/// action, ids, dates as stored, its memories before it each checked as a
/// memory record, and none of them beside its members and target.
fn checked_consolidation(mut c: ConsolidationEntry) -> Result<ConsolidationEntry> {
    if c.id < 1 {
        return Err(Error::invalid("a consolidation's id is a positive integer"));
    }
    if !["merge", "supersede", "fold", "retire"].contains(&c.action.as_str()) {
        return Err(Error::invalid("a consolidation's action is merge, supersede, fold or retire"));
    }
    if [&c.run_id, &c.reason].iter().any(|t| t.is_empty() || t.len() > MAX_CONSOLIDATION_TEXT) {
        return Err(Error::invalid(format!("a consolidation's runId and reason hold 1 to {MAX_CONSOLIDATION_TEXT} bytes")));
    }
    if !c.involved().all(|id| ids::is_id(id)) {
        return Err(Error::invalid("a consolidation's target, members and created are memory ids"));
    }
    if c.members.len() > api::MAX_SOURCES || c.created.len() > api::MAX_SOURCES || c.before.len() > api::MAX_SOURCES {
        return Err(Error::invalid(format!("a consolidation names at most {} memories in each list", api::MAX_SOURCES)));
    }
    c.at = instant("at", &c.at)?;
    c.before = c.before.into_iter().map(checked_memory).collect::<Result<_>>()?;
    if let Some(m) = c.before.iter().find(|m| m.id != c.target && !c.members.contains(&m.id)) {
        return Err(Error::invalid(format!("a consolidation's memories before it name {}, neither its target nor a member", m.id)));
    }
    Ok(c)
}

/// A consolidation record as its action leaves the memories: a merge's
/// or a supersession's target among its members, a fold's the one memory
/// it created, a retirement's its one member; its copies before it one of
/// each member; and each member but the target superseded by the target
/// in the file (one the file does not hold is not written:
/// [`import`]). Undo, forget and delete read a record as what it did: one
/// that did not would reach memories it never touched.
fn consolidation_holds(c: &ConsolidationEntry, held: &HashMap<&str, &Memory>) -> Result<()> {
    let shape = match c.action.as_str() {
        "merge" | "supersede" => c.members.contains(&c.target) && c.created.is_empty(),
        "fold" => !c.members.contains(&c.target) && c.created == [c.target.clone()],
        _ => c.members == [c.target.clone()] && c.created.is_empty(),
    };
    if !shape {
        return Err(Error::invalid(format!(
            "consolidation {}: a {} names its target among its members{}",
            c.id,
            c.action,
            if c.action == "fold" { " never, and created only its target" } else { ", and created nothing" }
        )));
    }
    let mut copies: Vec<&str> = c.before.iter().map(|m| m.id.as_str()).collect();
    let mut members: Vec<&str> = c.members.iter().map(String::as_str).collect();
    copies.sort_unstable();
    members.sort_unstable();
    if copies != members || members.windows(2).any(|w| matches!(w, [a, b] if a == b)) {
        return Err(Error::invalid(format!("consolidation {}: its memories before it are one copy of each member", c.id)));
    }
    if c.action != "retire" {
        for m in c.members.iter().filter(|m| **m != c.target) {
            if let Some(memory) = held.get(m.as_str()).filter(|memory| memory.superseded_by.as_deref() != Some(c.target.as_str())) {
                return Err(Error::invalid(format!("consolidation {}: member {} is not superseded by its target {}", c.id, memory.id, c.target)));
            }
        }
    }
    Ok(())
}

/// What a message said again of a memory since deleted by id, by the
/// memory's fingerprint (an export's `withheld` record).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Withheld {
    pub message_id: String,
    pub fingerprint: String,
}

/// A message that said a memory again word for word (an export's
/// `restatement` record).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Restatement {
    pub memory_id: String,
    pub message_id: String,
}

/// Text written to the spool in parts of [`EXPORT_PART_BYTES`], one part
/// held at a time.
struct Spool<'s, 'q> {
    store: &'s Store<'q>,
    export: i64,
    parts: i64,
    current: Vec<u8>,
}

impl Spool<'_, '_> {
    fn push_str(&mut self, text: &str) -> Result<()> {
        if self.current.capacity() == 0 {
            self.current.reserve_exact(EXPORT_PART_BYTES);
        }
        let Spool { store, export, parts, current } = self;
        crate::core::recall::parts::fill_parts(current, EXPORT_PART_BYTES, text.as_bytes(), |full| {
            put_part(store, *export, parts, full)?;
            full.reserve_exact(EXPORT_PART_BYTES);
            Ok(())
        })
    }

    fn finish(mut self) -> Result<Spooled> {
        if !self.current.is_empty() {
            put_part(self.store, self.export, &mut self.parts, &mut self.current)?;
        }
        Ok(Spooled { export: self.export, parts: self.parts })
    }
}

/// Writes `part` (emptied) as part `parts` of `export`, and counts it.
fn put_part(store: &Store<'_>, export: i64, parts: &mut i64, part: &mut Vec<u8>) -> Result<()> {
    store.put_export_part(export, *parts, std::mem::take(part))?;
    *parts = parts.saturating_add(1);
    Ok(())
}

/// Calls `f` with every memory, in id order, a page at a time.
fn each_memory_page(store: &Store<'_>, mut f: impl FnMut(&[Memory]) -> Result<()>) -> Result<()> {
    let mut after: Option<String> = None;
    loop {
        let page = store.memories_after(after.as_deref(), EXPORT_MEMORY_PAGE)?;
        let Some(last) = page.last() else { return Ok(()) };
        after = Some(last.id.clone());
        f(&page)?;
    }
}

/// `m` without its links (`supersedes`, `supersededBy`) to memories that
/// are not `held` (all are when `held` is `None`).
fn linked_within<'m>(m: &'m Memory, held: Option<&HashSet<String>>) -> Cow<'m, Memory> {
    let outside = |id: &Option<String>| id.as_deref().is_some_and(|id| held.is_some_and(|h| !h.contains(id)));
    if !outside(&m.supersedes) && !outside(&m.superseded_by) {
        return Cow::Borrowed(m);
    }
    let mut m = m.clone();
    if outside(&m.supersedes) {
        m.supersedes = None;
    }
    if outside(&m.superseded_by) {
        m.superseded_by = None;
    }
    Cow::Owned(m)
}

fn tagged<T: Serialize>(kind: &str, v: &T) -> Result<String> {
    let mut obj = serde_json::to_value(v)?;
    if let Value::Object(map) = &mut obj {
        map.insert("kind".into(), Value::String(kind.into()));
    }
    Ok(format!("{obj}\n"))
}

/// A parsed, validated export file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    pub messages: Vec<Message>,
    pub memories: Vec<Memory>,
    pub restatements: Vec<Restatement>,
    pub withheld: Vec<Withheld>,
    pub consolidations: Vec<ConsolidationEntry>,
    /// The memories and messages its restatements and withheld records
    /// name that the file does not hold: the profile must ([`check_links`]).
    pub outside_restated: Vec<Link>,
    /// The versions its memories name (`supersedes`, `supersededBy`) that
    /// the file does not hold: the profile must ([`check_links`]).
    pub outside: Vec<Link>,
}

impl Parsed {
    /// Whether the file holds no records (a header alone).
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.memories.is_empty() && self.restatements.is_empty() && self.withheld.is_empty() && self.consolidations.is_empty()
    }
}

/// A memory's link to another version, as a file gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// The line of the memory that names it.
    pub line: usize,
    /// `supersedes` or `supersededBy`.
    pub field: &'static str,
    pub id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    pub messages: usize,
    pub memories: usize,
    /// The file's consolidation records not written: those touching a
    /// memory the profile held before the import (left as it is: an undo
    /// would write the file's copy over it; an export imported again
    /// leaves each of its records out so), and those recording a change
    /// held already (the same run, action, target and time).
    #[serde(default)]
    pub consolidations_left_out: usize,
}

/// The fields a header record has besides `kind`.
const HEADER_FIELDS: [&str; 4] = ["format", "version", "profile", "exportedAt"];

/// Parses and validates every line; the first bad line fails the import.
///
/// Each line is read as strictly as a request body (a key given twice is
/// refused), and each record passes the checks its write route makes (the
/// same validators and limits of [`crate::core::api`]), and its text the
/// same redaction: `<private>` spans become `[private]` before anything is
/// stored. A message whose text a redaction changed gets the id of its new
/// text, and the memories of the file that cite it cite that id. A file
/// holds each record once: a second record of a kind with an id already
/// read (a message's as stored, after redaction) is refused, never merged
/// into or dropped for the first.
pub fn parse(ndjson: &str) -> Result<Parsed> {
    let mut reader = Reader::new();
    for (n, line) in ndjson.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let number = n.saturating_add(1);
        // A record out of limits makes the file invalid (400), whatever
        // status the same value gets on its write route.
        reader.record(number, line).map_err(|e| Error::invalid(format!("import line {number}: {}", e.message())))?;
    }
    reader.finish()
}

/// What [`parse`] has read so far.
struct Reader {
    /// The fields each kind of record has.
    message_fields: HashSet<String>,
    memory_fields: HashSet<String>,
    restatement_fields: HashSet<String>,
    withheld_fields: HashSet<String>,
    consolidation_fields: HashSet<String>,
    header_fields: HashSet<String>,
    parsed: Parsed,
    saw_header: bool,
    /// Old message id to new, for each message a redaction renamed.
    renamed: HashMap<String, String>,
    /// Each words' repeat ids, hashed once for the file.
    repeats: ids::Repeats,
    /// The line of each message (by its id as stored) and memory read.
    message_lines: HashMap<String, usize>,
    memory_lines: HashMap<String, usize>,
    /// The line of each memory in `parsed.memories`, in order.
    lines: Vec<usize>,
    /// The line of each restatement read, by its (memory, message).
    restatement_lines: HashMap<(String, String), usize>,
    /// The line of each withheld record read, by its (message, fingerprint).
    withheld_lines: HashMap<(String, String), usize>,
    /// The line of each consolidation record read, by its id.
    consolidation_lines: HashMap<i64, usize>,
}

impl Reader {
    fn new() -> Reader {
        Reader {
            message_fields: fields_of::<Message>(),
            memory_fields: fields_of::<Memory>(),
            restatement_fields: fields_of::<Restatement>(),
            withheld_fields: fields_of::<Withheld>(),
            consolidation_fields: fields_of::<ConsolidationEntry>(),
            header_fields: HEADER_FIELDS.iter().map(|f| f.to_string()).collect(),
            parsed: Parsed::default(),
            saw_header: false,
            renamed: HashMap::new(),
            repeats: ids::Repeats::default(),
            message_lines: HashMap::new(),
            memory_lines: HashMap::new(),
            lines: Vec::new(),
            restatement_lines: HashMap::new(),
            withheld_lines: HashMap::new(),
            consolidation_lines: HashMap::new(),
        }
    }

    fn record(&mut self, line: usize, text: &str) -> Result<()> {
        let mut v = crate::core::json::parse_strict(text).map_err(|e| Error::invalid(format!("invalid json: {e}")))?;
        let kind = match v.as_object_mut().map(|o| o.remove("kind")) {
            Some(Some(Value::String(k))) => k,
            _ => String::new(),
        };
        match (kind.as_str(), self.saw_header) {
            ("header", true) => return Err(Error::invalid("a second header: a file has one, on its first line")),
            ("header", false) => {}
            (_, false) => return Err(Error::invalid("the header must come first")),
            _ => {}
        }
        match kind.as_str() {
            "header" => {
                known_fields(&v, &self.header_fields)?;
                check_header(&v)?;
                self.saw_header = true;
            }
            "message" => self.message(line, v)?,
            "memory" => self.memory(line, v)?,
            "restatement" => self.restatement(line, v)?,
            "withheld" => self.withheld(line, v)?,
            "consolidation" => self.consolidation(line, v)?,
            other => return Err(Error::invalid(format!("unknown record kind {}", api::quoted(other)))),
        }
        Ok(())
    }

    fn message(&mut self, line: usize, v: Value) -> Result<()> {
        known_fields(&v, &self.message_fields)?;
        let m: Message = serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid message: {}", serde_message(&e))))?;
        let given = m.id.clone();
        let m = checked_message(m, &mut self.renamed, &mut self.repeats)?;
        if let Some(first) = self.message_lines.insert(m.id.clone(), line) {
            let what = if given == m.id { String::new() } else { format!(" (once redacted, message {})", m.id) };
            return Err(Error::invalid(format!("message {given}{what} repeats line {first}: a file holds each record once")));
        }
        self.parsed.messages.push(m);
        Ok(())
    }

    fn memory(&mut self, line: usize, v: Value) -> Result<()> {
        known_fields(&v, &self.memory_fields)?;
        let m: Memory = serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid memory: {}", serde_message(&e))))?;
        let m = checked_memory(m)?;
        if let Some(first) = self.memory_lines.insert(m.id.clone(), line) {
            return Err(Error::invalid(format!("memory {} repeats line {first}: a file holds each record once", m.id)));
        }
        self.parsed.memories.push(m);
        self.lines.push(line);
        Ok(())
    }

    fn restatement(&mut self, line: usize, v: Value) -> Result<()> {
        known_fields(&v, &self.restatement_fields)?;
        let r: Restatement = serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid restatement: {}", serde_message(&e))))?;
        if !ids::is_id(&r.memory_id) || !ids::is_hex_id(&r.message_id) {
            return Err(Error::invalid("a restatement names a memory id and a message id"));
        }
        if let Some(first) = self.restatement_lines.insert((r.memory_id.clone(), r.message_id.clone()), line) {
            return Err(Error::invalid(format!(
                "the restatement of memory {} by message {} repeats line {first}: a file holds each record once",
                r.memory_id, r.message_id
            )));
        }
        self.parsed.restatements.push(r);
        Ok(())
    }

    fn withheld(&mut self, line: usize, v: Value) -> Result<()> {
        known_fields(&v, &self.withheld_fields)?;
        let w: Withheld = serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid withheld record: {}", serde_message(&e))))?;
        if !ids::is_hex_id(&w.message_id) || !ids::is_hex_id(&w.fingerprint) {
            return Err(Error::invalid("a withheld record names a message id and a fingerprint (32 lowercase hex digits)"));
        }
        if let Some(first) = self.withheld_lines.insert((w.message_id.clone(), w.fingerprint.clone()), line) {
            return Err(Error::invalid(format!(
                "the withheld fingerprint {} of message {} repeats line {first}: a file holds each record once",
                w.fingerprint, w.message_id
            )));
        }
        self.parsed.withheld.push(w);
        Ok(())
    }

    fn consolidation(&mut self, line: usize, v: Value) -> Result<()> {
        known_fields(&v, &self.consolidation_fields)?;
        // Each copy as strict as a memory record.
        for m in v.get("before").and_then(Value::as_array).into_iter().flatten() {
            known_fields(m, &self.memory_fields)?;
        }
        let c: ConsolidationEntry = serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid consolidation: {}", serde_message(&e))))?;
        let c = checked_consolidation(c)?;
        if let Some(first) = self.consolidation_lines.insert(c.id, line) {
            return Err(Error::invalid(format!("consolidation {} repeats line {first}: a file holds each record once", c.id)));
        }
        self.parsed.consolidations.push(c);
        Ok(())
    }

    /// The file, its citations following the redactions and its links to
    /// versions it does not hold listed.
    fn finish(mut self) -> Result<Parsed> {
        if !self.saw_header {
            return Err(Error::invalid("import: the file has no header line"));
        }
        for m in &mut self.parsed.memories {
            follow_renames(&self.renamed, &mut m.source_message_ids);
        }
        self.restated_links();
        self.refuse_cycles()?;
        closed_validity(&mut self.parsed.memories);
        self.consolidation_links()?;
        // The copies name messages as the file's memories do.
        for c in &mut self.parsed.consolidations {
            for m in &mut c.before {
                follow_renames(&self.renamed, &mut m.source_message_ids);
            }
        }
        self.version_links();
        Ok(self.parsed)
    }

    /// The restatements' and withheld records' messages renamed by their
    /// redactions, and those naming what the file does not hold listed.
    fn restated_links(&mut self) {
        for r in &mut self.parsed.restatements {
            let line = self.restatement_lines.get(&(r.memory_id.clone(), r.message_id.clone())).copied().unwrap_or(0);
            if let Some(new) = self.renamed.get(&r.message_id) {
                r.message_id.clone_from(new);
            }
            if !self.memory_lines.contains_key(&r.memory_id) {
                self.parsed.outside_restated.push(Link { line, field: "memoryId", id: r.memory_id.clone() });
            }
            if !self.message_lines.contains_key(&r.message_id) {
                self.parsed.outside_restated.push(Link { line, field: "messageId", id: r.message_id.clone() });
            }
        }
        for w in &mut self.parsed.withheld {
            let line = self.withheld_lines.get(&(w.message_id.clone(), w.fingerprint.clone())).copied().unwrap_or(0);
            if let Some(new) = self.renamed.get(&w.message_id) {
                w.message_id.clone_from(new);
            }
            if !self.message_lines.contains_key(&w.message_id) {
                self.parsed.outside_restated.push(Link { line, field: "withheld", id: w.message_id.clone() });
            }
        }
    }

    /// A 400 for a version chain that comes back round to where it began.
    fn refuse_cycles(&self) -> Result<()> {
        for field in ["supersedes", "supersededBy"] {
            if let Some(id) = chain_cycle(&self.parsed.memories, field) {
                let line = self.memory_lines.get(id).copied().unwrap_or(0);
                return Err(Error::invalid(format!("import line {line}: memory {id}'s {field} leads back to it: a version chain cannot be a cycle")));
            }
        }
        Ok(())
    }

    /// Each consolidation checked against the file's memories, and the
    /// memories it names that the file does not hold listed.
    fn consolidation_links(&mut self) -> Result<()> {
        let held: HashMap<&str, &Memory> = self.parsed.memories.iter().map(|m| (m.id.as_str(), m)).collect();
        for c in &self.parsed.consolidations {
            let line = self.consolidation_lines.get(&c.id).copied().unwrap_or(0);
            consolidation_holds(c, &held).map_err(|e| Error::invalid(format!("import line {line}: {}", e.message())))?;
            let named = std::iter::once(("target", &c.target)).chain(c.members.iter().map(|m| ("members", m))).chain(c.created.iter().map(|m| ("created", m)));
            for (field, id) in named {
                if !self.memory_lines.contains_key(id) {
                    self.parsed.outside.push(Link { line, field, id: id.clone() });
                }
            }
        }
        Ok(())
    }

    /// The versions the file's memories link to that it does not hold.
    fn version_links(&mut self) {
        for (m, &line) in self.parsed.memories.iter().zip(&self.lines) {
            for (field, id) in [("supersedes", &m.supersedes), ("supersededBy", &m.superseded_by)] {
                match id {
                    Some(id) if !self.memory_lines.contains_key(id) => self.parsed.outside.push(Link { line, field, id: id.clone() }),
                    _ => {}
                }
            }
        }
    }
}

/// Message ids following the redactions that renamed them.
fn follow_renames(renamed: &HashMap<String, String>, ids: &mut [String]) {
    for id in ids {
        if let Some(new) = renamed.get(id) {
            id.clone_from(new);
        }
    }
}

/// A memory of `memories` from which following `field` (`supersedes` or
/// `supersededBy`) through the file comes back to where it began, if
/// one does: each memory names at most one, so the links form chains,
/// and a walk that meets a memory met on its own walk is in a cycle.
fn chain_cycle<'m>(memories: &'m [Memory], field: &str) -> Option<&'m str> {
    let next: HashMap<&str, &str> = memories
        .iter()
        .filter_map(|m| if field == "supersedes" { m.supersedes.as_deref() } else { m.superseded_by.as_deref() }.map(|to| (m.id.as_str(), to)))
        .collect();
    // The walk each memory was first met on (a walk that meets an earlier
    // one's memory ends: what lies ahead was walked already).
    let mut walk_of: HashMap<&str, usize> = HashMap::new();
    for (walk, m) in memories.iter().enumerate() {
        let mut at = m.id.as_str();
        loop {
            if let Some(&met) = walk_of.get(at) {
                if met == walk {
                    return Some(at);
                }
                break;
            }
            walk_of.insert(at, walk);
            match next.get(at) {
                Some(to) => at = to,
                None => break,
            }
        }
    }
    None
}

/// A header's values: this format and version, a profile name and an
/// export time if given.
fn check_header(v: &Value) -> Result<()> {
    if v.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(Error::invalid("not an agent-memory export"));
    }
    if v.get("version").and_then(Value::as_i64) != Some(VERSION) {
        return Err(Error::invalid("unsupported export version"));
    }
    if v.get("profile").is_some_and(|p| !p.is_string()) {
        return Err(Error::invalid("the header's profile must be a string"));
    }
    match v.get("exportedAt") {
        Some(Value::String(t)) if crate::core::time::parse_datetime(t).is_some() => Ok(()),
        Some(_) => Err(Error::invalid("the header's exportedAt must be an ISO-8601 date-time")),
        None => Ok(()),
    }
}

/// Refuses a file whose memories name a version (`supersedes`,
/// `supersededBy`) that neither the file nor the profile holds: a link
/// to nothing, which `get`'s version chain could not follow. `store` is
/// `None` for a profile that counts as empty (one the import will purge
/// first).
pub fn check_links(store: Option<&Store<'_>>, p: &Parsed) -> Result<()> {
    let memories = |links: &mut dyn Iterator<Item = &Link>| -> Result<HashSet<String>> {
        match store {
            Some(store) => store.existing_memory_ids(&links.map(|l| l.id.as_str()).collect::<Vec<_>>()),
            None => Ok(Default::default()),
        }
    };
    let present = memories(&mut p.outside.iter())?;
    if let Some(l) = p.outside.iter().find(|l| !present.contains(&l.id)) {
        return Err(Error::invalid(format!("import line {}: {} names memory {}, which is neither in the file nor in the profile", l.line, l.field, l.id)));
    }
    // A restatement's memory and message, and a withheld record's message, likewise.
    let restated = memories(&mut p.outside_restated.iter().filter(|l| l.field == "memoryId"))?;
    let messages: Vec<String> = p.outside_restated.iter().filter(|l| l.field != "memoryId").map(|l| l.id.clone()).collect();
    let said = match store {
        Some(store) => store.existing_message_ids(&messages)?,
        None => Default::default(),
    };
    let held = |l: &&Link| if l.field == "memoryId" { restated.contains(&l.id) } else { said.contains(&l.id) };
    match p.outside_restated.iter().find(|l| !held(l)) {
        Some(l) if l.field == "withheld" => Err(Error::invalid(format!(
            "import line {}: the withheld record's messageId names message {}, which is neither in the file nor in the profile",
            l.line, l.id
        ))),
        Some(l) => {
            let what = if l.field == "memoryId" { "memory" } else { "message" };
            Err(Error::invalid(format!(
                "import line {}: the restatement's {} names {what} {}, which is neither in the file nor in the profile",
                l.line, l.field, l.id
            )))
        }
        None => Ok(()),
    }
}

/// The fields a record of type `T` has: its schema's properties (the
/// Rust type is the one source of them).
fn fields_of<T: schemars::JsonSchema>() -> HashSet<String> {
    let schema = schemars::schema_for!(T);
    schema.as_value().get("properties").and_then(Value::as_object).map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

/// Refuses a record with a field its type does not have: a misspelt
/// `expiresAt` is an error, never a memory imported without its expiry.
fn known_fields(v: &Value, fields: &HashSet<String>) -> Result<()> {
    match v.as_object().and_then(|o| o.keys().find(|k| !fields.contains(k.as_str()))) {
        Some(unknown) => Err(Error::invalid(format!("unknown field {}", api::quoted(unknown)))),
        None => Ok(()),
    }
}

/// A message record as ingest would have stored it: id, session, role,
/// text, timestamp and dates checked, private spans redacted (its id
/// follows its redacted text; `renamed` maps the old id to the new).
///
/// The id is checked last: finding which repeat of its text it is hashes
/// the text, so the size and the other cheap checks come first (an
/// over-size text is refused as over-size, without being hashed).
fn checked_message(mut m: Message, renamed: &mut HashMap<String, String>, repeats: &mut ids::Repeats) -> Result<Message> {
    api::validate_session_id(&m.session_id)?;
    api::validate_role("role", &m.role)?;
    api::validate_message_content("content", &m.content)?;
    api::validate_date("timestamp", &m.timestamp)?;
    api::validate_date("createdAt", &Some(m.created_at.clone()))?;
    if !(0..=api::MAX_POSITION).contains(&m.position) {
        return Err(Error::invalid(format!("position must be from 0 to {}", api::MAX_POSITION)));
    }
    crate::core::filter::validate_metadata("metadata", &m.metadata)?;
    let repeat = repeats
        .of(&m.id, &m.session_id, &m.role, &m.content, crate::core::ingest::identify::MAX_REPEATS)
        .ok_or_else(|| Error::invalid("message id does not match its content"))?;
    let (content, role) = (api::redact_private(&m.content), api::redact_private(&m.role));
    if matches!(content, Cow::Owned(_)) || matches!(role, Cow::Owned(_)) {
        (m.content, m.role) = (content.into_owned(), role.into_owned());
        let id = ids::repeated_message_id(&m.session_id, &m.role, &m.content, repeat);
        renamed.insert(std::mem::replace(&mut m.id, id.clone()), id);
    }
    Ok(m)
}

/// A memory record as remember or ingest would have stored it: ids,
/// session, text, summary, key (in its stored form, on a type keys
/// supersede: remember's check), search queries, sources and dates
/// checked, private spans redacted, its dates written in the formats the
/// service stores (they compare as text: filters, `asOf`, undo's "changed
/// since"), its validity not ending before it starts, and no link to
/// itself.
fn checked_memory(mut m: Memory) -> Result<Memory> {
    if !ids::is_id(&m.id) {
        return Err(Error::invalid("memory id is neither a lowercase ULID nor 32 lowercase hex characters"));
    }
    // Empty: remembered without a session (exported as `null`).
    if !m.session_id.is_empty() {
        api::validate_session_id(&m.session_id)?;
    }
    api::redact_statement("content", &mut m.content)?;
    api::redact_statement("summary", &mut m.summary)?;
    m.search_queries.iter_mut().for_each(redact);
    api::validate_content("content", &m.content)?;
    api::validate_content("summary", &m.summary)?;
    if let Some(k) = &m.key {
        api::validate_key("key", k)?;
        crate::core::text::check_key_as_given(k, Some(m.kind))?;
    }
    api::validate_search_queries("searchQueries", &m.search_queries)?;
    check_links_of(&m)?;
    crate::core::filter::validate_metadata("metadata", &m.metadata)?;
    stored_dates(&mut m)?;
    Ok(m)
}

/// Sources that are message ids, versions that are memory ids and never
/// the memory itself.
fn check_links_of(m: &Memory) -> Result<()> {
    if m.source_message_ids.len() > api::MAX_SOURCES {
        return Err(Error::invalid(format!("sourceMessageIds must hold at most {} ids", api::MAX_SOURCES)));
    }
    if !m.source_message_ids.iter().all(|id| ids::is_id(id)) {
        return Err(Error::invalid("sourceMessageIds must be message ids"));
    }
    if !m.supersedes.iter().chain(&m.superseded_by).all(|id| ids::is_id(id)) {
        return Err(Error::invalid("supersedes and supersededBy must be memory ids"));
    }
    if m.supersedes.iter().chain(&m.superseded_by).any(|id| *id == m.id) {
        return Err(Error::invalid(format!("memory {} names itself in supersedes or supersededBy", m.id)));
    }
    Ok(())
}

/// Checks a memory's dates and writes each as the service stores it: the
/// event date as `YYYY-MM-DD` (as ingest and the filters write it), the
/// instants as ISO-8601 UTC with milliseconds. A validity that ends
/// before it starts is refused.
fn stored_dates(m: &mut Memory) -> Result<()> {
    api::validate_date("eventDate", &m.event_date)?;
    api::validate_date("createdAt", &Some(m.created_at.clone()))?;
    api::validate_date("updatedAt", &Some(m.updated_at.clone()))?;
    api::validate_expiry("expiresAt", &m.expires_at)?;
    if let Some(d) = &m.event_date {
        // The day where it happened (a date-time's own offset), as ingest,
        // the model's reader and the filters reckon it.
        let day = crate::core::time::local_date_of(d).ok_or_else(|| Error::invalid("eventDate is not a date"))?;
        m.event_date = Some(day.format("%Y-%m-%d").to_string());
    }
    for (what, v) in [("expiresAt", &mut m.expires_at), ("validFrom", &mut m.valid_from), ("validTo", &mut m.valid_to)] {
        if let Some(t) = v.as_deref() {
            *v = Some(instant(what, t)?);
        }
    }
    for (what, v) in [("createdAt", &mut m.created_at), ("updatedAt", &mut m.updated_at)] {
        *v = instant(what, v)?;
    }
    // Both as stored: ISO-8601 UTC in years 0000-9999 orders as text.
    if let (Some(from), Some(to)) = (&m.valid_from, &m.valid_to) {
        if to < from {
            return Err(Error::invalid(format!("validTo ({to}) is before validFrom ({from})")));
        }
    }
    Ok(())
}

/// Ends the validity a record's status says ended but its dates leave
/// open (a file written before validity was recorded, or by hand), so an
/// `asOf` read agrees with the status: a superseded memory without
/// `validTo` ends where the version after it in the file begins (its
/// `validFrom`, else its `createdAt`), else when it was last updated; an
/// expired one without `expiresAt` expired when it was last updated.
/// Never before the memory's own `validFrom`.
fn closed_validity(memories: &mut [Memory]) {
    use crate::core::model::Status;
    let begins: HashMap<String, String> = memories.iter().map(|m| (m.id.clone(), m.said_from().to_string())).collect();
    for m in memories.iter_mut() {
        match m.status {
            Status::Superseded if m.valid_to.is_none() => {
                let next = m.superseded_by.as_ref().and_then(|id| begins.get(id)).unwrap_or(&m.updated_at).clone();
                // Instants as stored (ISO-8601 UTC) order as text.
                m.valid_to = Some(m.valid_from.clone().map_or(next.clone(), |from| from.max(next)));
            }
            Status::Expired if m.expires_at.is_none() => m.expires_at = Some(m.updated_at.clone()),
            _ => {}
        }
    }
}

/// `t` as ISO-8601 UTC with milliseconds; `what` names it in the error.
fn instant(what: &str, t: &str) -> Result<String> {
    crate::core::time::parse_millis(t).map(iso).ok_or_else(|| Error::invalid(format!("{what} is not a date")))
}

fn redact(text: &mut String) {
    if let Cow::Owned(r) = api::redact_private(text) {
        *text = r;
    }
}

/// Names back, in the profile, each written version the file records as
/// superseded by a memory the profile held already (an export imported
/// back after that version was deleted here): its chain and the held
/// one's merge into one line in the order they were said
/// ([`Store::merge_versions`]), not a version superseded by one that
/// supersedes another. One whose chain shares a version with the held
/// one's is left as the file has it; one naming a held memory of another
/// owner is refused (400), the import writing nothing.
fn join_held_successors(store: &Store<'_>, file: &[Memory], written: &HashSet<&str>) -> Result<()> {
    let mut joins: Vec<(&str, &str)> = Vec::new();
    for m in file.iter().filter(|m| written.contains(m.id.as_str())) {
        let Some(next) = m.superseded_by.as_deref().filter(|n| !written.contains(n)) else { continue };
        let Some(held) = store.get_memory(next)? else { continue };
        if held.supersedes.as_deref() == Some(m.id.as_str()) {
            continue;
        }
        // A chain is one owner's values (as `update` keeps it).
        if crate::core::model::Owner::of(&held.metadata) != crate::core::model::Owner::of(&m.metadata) {
            return Err(Error::invalid(format!(
                "import: memory {}'s supersededBy names memory {next}, which the profile holds under another owner (agentId, userId): a version chain is one owner's values",
                m.id
            )));
        }
        joins.push((&m.id, next));
    }
    // Those naming one held memory are merged into its line together
    // (each line written once, however many join it).
    joins.sort_by_key(|&(_, next)| next);
    let mut merges = crate::core::store::Merges::default();
    for (id, next) in joins {
        merges.release(store, id)?;
        store.unlink_successor(id)?;
        if !merges.merge(store, id, next)? {
            merges.finish(store)?;
            store.link_successor(id, next)?;
        }
    }
    merges.finish(store)
}

/// Leaves one active value of each key per owner, as far as its speaker
/// reaches, where the file's active memories meet the profile's by key
/// rather than by a version link (two the file records active are left
/// so, whether this import or an earlier one wrote them: an export's are
/// as ingest left them, by the order they arrived in): the one said later
/// supersedes the other, when its speaker reaches it (a person's word
/// any session's, an agent's its own session's or its own words said
/// again, dates aside: [`crate::core::ingest::supersede::Reach`]), as
/// ingest would have left them had the two been said to this profile in
/// that order. At the same instant the profile's own stays. `written`:
/// the file's memories this import wrote; the others were present already
/// and are left as they are.
///
/// With no active holder, the key's lapsed end ([`Store::lapsed_ends`])
/// the profile held is weighed in its place: a value said before it goes
/// before it, one said after it after it, one line either way.
///
/// A key's holders are read once for all the file's values of it, and
/// each value is weighed against the holders its reach or theirs can
/// join (found by session and by words), not against every holder: an
/// agent's key said in each of thousands of support calls has as many
/// active holders.
fn settle_keys(store: &Store<'_>, file: &[Memory], written: &HashSet<&str>) -> Result<()> {
    use crate::core::model::{Owner, Status};
    let mut groups: std::collections::BTreeMap<(&str, Owner), Vec<&str>> = Default::default();
    for m in file.iter().filter(|m| m.status == Status::Active && written.contains(m.id.as_str())) {
        if let Some(key) = m.key.as_deref() {
            groups.entry((key, Owner::of(&m.metadata))).or_default().push(&m.id);
        }
    }
    let recorded: HashSet<&str> = file.iter().filter(|m| m.status == Status::Active).map(|m| m.id.as_str()).collect();
    for ((key, owner), arriving) in groups {
        let probe = crate::core::store::KeyProbe { key, session_id: "", undated_digest: String::new(), any_session: true };
        let mut held: Vec<String> =
            store.active_key_holders(&[probe])?.remove(&(key.to_string(), owner.clone())).unwrap_or_default().into_iter().map(|h| h.id).collect();
        if held.iter().all(|id| written.contains(id.as_str())) {
            // No active value but the file's: the chain's lapsed end
            // (forgotten or expired) is weighed as a holder, as ingest
            // weighs it.
            let lapsed = store.lapsed_ends(&[key])?.remove(&(key.to_string(), owner)).unwrap_or_default();
            held.extend(lapsed.into_iter().map(|e| e.id).find(|id| !written.contains(id.as_str())));
        }
        let versions = Versions::read(store, store.memories_by_ids(&held)?, written, &recorded)?;
        let mut arriving: Vec<usize> = arriving.iter().filter_map(|id| versions.at.get(*id).copied()).collect();
        arriving.sort_by_key(|&i| versions.rank(i));
        // Each line the key's values join is written once, whatever
        // joins it ([`crate::core::store::Merges`]).
        let mut merges = crate::core::store::Merges::default();
        for m in arriving {
            versions.settle(store, &mut merges, m)?;
        }
        merges.finish(store)?;
    }
    Ok(())
}

/// The active holders of one key and owner, as [`settle_keys`] weighs
/// them: who said each (a person reaches any session), and where to find
/// those an agent's word reaches (its session, its words undated).
struct Versions {
    memories: Vec<Memory>,
    person: Vec<bool>,
    undated: Vec<String>,
    active: Vec<std::cell::Cell<bool>>,
    at: HashMap<String, usize>,
    by_session: HashMap<String, Vec<usize>>,
    by_words: HashMap<String, Vec<usize>>,
    persons: Vec<usize>,
    /// Each one's place in the order they were said ([`Versions::read`]).
    ranks: Vec<usize>,
    /// Those a file's value is weighed against, in the order they were
    /// said: all but the ones the file records active (two of those are
    /// as its profile left them). `by_session`, `by_words` and `persons`
    /// hold only these too.
    weighed: Vec<usize>,
}

impl Versions {
    fn read(store: &Store<'_>, memories: Vec<Memory>, written: &HashSet<&str>, recorded: &HashSet<&str>) -> Result<Versions> {
        use crate::core::ingest::supersede::{authority_of, Reach};
        let sources: Vec<&String> = memories.iter().flat_map(|m| &m.source_message_ids).collect();
        let roles = store.message_roles(&sources)?;
        let person: Vec<bool> = memories
            .iter()
            .map(|m| Reach::of(authority_of(m.source_message_ids.iter().filter_map(|s| roles.get(s).map(String::as_str)))) == Reach::AnySession)
            .collect();
        let undated: Vec<String> = memories.iter().map(|m| ids::undated_digest(&m.content)).collect();
        let weighable: Vec<bool> = memories.iter().map(|m| !recorded.contains(m.id.as_str())).collect();
        let (mut by_session, mut by_words): (HashMap<String, Vec<usize>>, HashMap<String, Vec<usize>>) = Default::default();
        for (i, (m, words)) in memories.iter().zip(&undated).enumerate().filter(|(i, _)| weighable.get(*i) == Some(&true)) {
            by_session.entry(m.session_id.clone()).or_default().push(i);
            by_words.entry(words.clone()).or_default().push(i);
        }
        // Said later, or at the same instant the profile's own (one this
        // import did not write); then by id.
        let said: Vec<(i64, bool, &str)> = memories.iter().map(|m| (m.said_at(), !written.contains(m.id.as_str()), m.id.as_str())).collect();
        let mut ordered: Vec<usize> = (0..memories.len()).collect();
        ordered.sort_by(|&a, &b| said.get(a).cmp(&said.get(b)));
        let mut ranks = vec![0; memories.len()];
        for (rank, &i) in ordered.iter().enumerate() {
            if let Some(r) = ranks.get_mut(i) {
                *r = rank;
            }
        }
        Ok(Versions {
            at: memories.iter().enumerate().map(|(i, m)| (m.id.clone(), i)).collect(),
            active: memories.iter().map(|_| std::cell::Cell::new(true)).collect(),
            persons: person.iter().enumerate().filter(|&(i, &p)| p && weighable.get(i) == Some(&true)).map(|(i, _)| i).collect(),
            weighed: ordered.iter().copied().filter(|&i| weighable.get(i) == Some(&true)).collect(),
            memories,
            person,
            undated,
            by_session,
            by_words,
            ranks,
        })
    }

    /// Its place in the order they were said.
    fn rank(&self, i: usize) -> usize {
        self.ranks.get(i).copied().unwrap_or(0)
    }

    /// Whether the word of `newer` reaches `older`.
    fn reaches(&self, newer: usize, older: usize) -> bool {
        let (Some(n), Some(o)) = (self.memories.get(newer), self.memories.get(older)) else { return false };
        self.person.get(newer).copied().unwrap_or(true) || n.session_id == o.session_id || self.undated.get(newer) == self.undated.get(older)
    }

    /// Weighs the file's value `m` against the holders either may reach,
    /// oldest first, as they would have been said: it supersedes the older
    /// ones it reaches, then a newer one that reaches it supersedes it.
    fn settle(&self, store: &Store<'_>, merges: &mut crate::core::store::Merges, m: usize) -> Result<()> {
        let (Some(memory), Some(words)) = (self.memories.get(m), self.undated.get(m)) else { return Ok(()) };
        let mut near: Vec<usize>;
        let candidates: &[usize] = if self.person.get(m).copied().unwrap_or(true) {
            &self.weighed
        } else {
            near = [self.by_session.get(&memory.session_id), self.by_words.get(words), Some(&self.persons)].into_iter().flatten().flatten().copied().collect();
            near.sort_by_key(|&i| self.rank(i));
            near.dedup();
            &near
        };
        let is_active = |i: usize| self.active.get(i).is_some_and(std::cell::Cell::get);
        for &other in candidates {
            if !is_active(m) {
                break;
            }
            if other == m || !is_active(other) {
                continue;
            }
            let (newer, older) = if self.rank(other) > self.rank(m) { (other, m) } else { (m, other) };
            let (Some(n), Some(o)) = (self.memories.get(newer), self.memories.get(older)) else { continue };
            if !self.reaches(newer, older) {
                continue;
            }
            // The older one's chain and the newer one's made one line by
            // when each version was said, not left beside a version the
            // newer one replaced (either may carry a history).
            let inserted = merges.merge(store, &o.id, &n.id)?;
            if inserted || {
                merges.finish(store)?;
                store.supersede_if_active(&o.id, &n.id)?
            } {
                if !inserted {
                    store.link_versions(&o.id, &n.id)?;
                }
                if let Some(a) = self.active.get(older) {
                    a.set(false);
                }
            }
        }
        Ok(())
    }
}

/// The file's memories with their fingerprints, but for an active one
/// whose statement the profile holds active already under another id
/// (both profiles were given the same conversation): it is not written
/// twice, as ingest does not store a statement said again, and the
/// messages it cites are recorded as restating the held memory. One that
/// another record of the file names (a version, a restatement, a
/// consolidation), or that carries what the holder does not (a version
/// link, an expiry, a key it lacks; a holder that expires) is written as
/// it is.
#[allow(clippy::type_complexity)] // the pairs insert_memories takes, and the restatements
fn not_held_already<'p>(store: &Store<'_>, p: &'p Parsed, fingerprints: &'p [String]) -> Result<(Vec<(&'p Memory, &'p str)>, Vec<(String, &'p str)>)> {
    let in_file: HashSet<&str> = p.memories.iter().map(|m| m.id.as_str()).collect();
    let named: HashSet<&str> = p
        .memories
        .iter()
        .flat_map(|m| m.supersedes.iter().chain(&m.superseded_by))
        .chain(p.restatements.iter().map(|r| &r.memory_id))
        .chain(p.consolidations.iter().flat_map(ConsolidationEntry::involved))
        .map(String::as_str)
        .collect();
    let held = store.active_by_fingerprints(&fingerprints.iter().map(String::as_str).collect::<Vec<_>>())?;
    let (mut fresh, mut restated) = (Vec::new(), Vec::new());
    for (m, f) in p.memories.iter().zip(fingerprints) {
        // Only a plain statement: one with a version link, an expiry or a
        // key the holder lacks carries what the holder does not say.
        let plain = m.status == crate::core::model::Status::Active
            && !named.contains(m.id.as_str())
            && m.supersedes.is_none()
            && m.superseded_by.is_none()
            && m.expires_at.is_none();
        let holder = match held.get(f).filter(|h| plain && !in_file.contains(h.as_str())) {
            Some(h) => store.get_memory(h)?.filter(|held| (m.key.is_none() || held.key == m.key) && held.expires_at.is_none()).map(|held| held.id),
            None => None,
        };
        match holder {
            Some(h) => restated.extend(m.source_message_ids.iter().map(|s| (h.clone(), s.as_str()))),
            None => fresh.push((m, f.as_str())),
        }
    }
    Ok((fresh, restated))
}

/// How many of a parsed file's memories an import would write now: those
/// the profile holds neither by id nor, active, by statement
/// ([`not_held_already`]).
pub fn adds(store: &Store<'_>, p: &Parsed) -> Result<usize> {
    let fingerprints: Vec<String> = p.memories.iter().map(|m| ids::fingerprint(m.kind.as_str(), &m.content, &m.metadata)).collect();
    let (fresh, _) = not_held_already(store, p, &fingerprints)?;
    let held = store.existing_memory_ids(&fresh.iter().map(|(m, _)| m.id.as_str()).collect::<Vec<_>>())?;
    Ok(fresh.iter().filter(|(m, _)| !held.contains(m.id.as_str())).count())
}

/// Writes a parsed file, its links checked against the profile as it is
/// now. Call inside a transaction.
pub fn import(store: &Store<'_>, p: &Parsed) -> Result<ImportReport> {
    check_links(Some(store), p)?;
    let before = store.existing_message_ids(&p.messages.iter().map(|m| m.id.clone()).collect::<Vec<_>>())?;
    store.put_messages(&p.messages)?;
    let fingerprints: Vec<String> = p.memories.iter().map(|m| ids::fingerprint(m.kind.as_str(), &m.content, &m.metadata)).collect();
    let (fresh, restated_held) = not_held_already(store, p, &fingerprints)?;
    // insert_memories queues an embedding for active, non-task memories.
    let memories = store.insert_memories(&fresh)?;
    // A new active version of a memory the profile holds active (the file
    // a later export of a profile this one was copied from): the held one
    // is superseded by it, as ingest would have left them, not two active
    // versions of one thing. The file's own record of the held one was
    // skipped with the rest already present.
    let written: HashSet<&str> = memories.iter().map(|(_, id)| id.as_str()).collect();
    for m in p.memories.iter().filter(|m| m.status == crate::core::model::Status::Active && written.contains(m.id.as_str())) {
        if let Some(old) = m.supersedes.as_deref().filter(|old| !written.contains(old)) {
            // Said before the versions it now follows, it ends them when
            // it was said, as ingest would have.
            if store.supersede_if_active(old, &m.id)? {
                store.close_earlier_versions(old, &m.id)?;
            }
        }
    }
    join_held_successors(store, &p.memories, &written)?;
    settle_keys(store, &p.memories, &written)?;
    let restated: Vec<(&str, &str)> =
        p.restatements.iter().map(|r| (r.memory_id.as_str(), r.message_id.as_str())).chain(restated_held.iter().map(|(h, s)| (h.as_str(), *s))).collect();
    store.record_restatements(&restated)?;
    let withheld: Vec<(&str, &str)> = p.withheld.iter().map(|w| (w.message_id.as_str(), w.fingerprint.as_str())).collect();
    store.record_withheld(&withheld)?;
    // A record is written back with the memories it involves: one touching
    // a memory the profile held already (left as it is, so perhaps not as
    // the record's copies have it) is left out, or an undo would write the
    // file's copy over the profile's memory.
    let mut standing: Vec<&ConsolidationEntry> = p.consolidations.iter().filter(|c| c.involved().all(|id| written.contains(id.as_str()))).collect();
    standing.sort_by_key(|c| c.id);
    let mut consolidations_left_out = p.consolidations.len().saturating_sub(standing.len());
    for c in standing {
        if !store.put_consolidation(&c.record(), &c.before, &c.created)? {
            consolidations_left_out = consolidations_left_out.saturating_add(1);
        }
    }
    Ok(ImportReport { messages: p.messages.len().saturating_sub(before.len()), memories: memories.len(), consolidations_left_out })
}
