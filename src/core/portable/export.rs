//! Export: a profile's file written to its spool in one transaction, a
//! page of records at a time, and read out a part at a time.

use super::{ConsolidationEntry, Restatement, Withheld, FORMAT, VERSION};
use crate::core::error::{Error, Result};
use crate::core::model::Memory;
use crate::core::ports::Sql;
use crate::core::store::{Kept, Store};
use crate::core::time::iso;
use serde::Serialize;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::HashSet;

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
/// hard delete leaves them): the file imports anywhere ([`super::check_links`]).
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
