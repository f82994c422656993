//! An inverted index in memory, scoring a query exactly as FTS5's
//! `bm25()` scores it on the same rows, without SQL: the directory keeps
//! one of the messages (as `messages_fts`) and one of the memories (as
//! `memories_fts`).
//!
//! FTS5 computes bm25 by reading, for every row matching any query word,
//! that row's size from its `docsize` table and its phrase instances: the
//! cost of the full-text statements grows with how many messages share a
//! common word. Here the same quantities are kept per message (each
//! term's count per column, the row's size in tokens) and the score is
//! summed in memory, term by term, with FTS5's formula and constants:
//!
//! ```text
//! idf(t)      = ln((N - n(t) + 0.5) / (n(t) + 0.5)), 1e-6 if not above 0
//! f(t, d)     = sum over t's instances in d of its column's weight
//! bm25(d)     = -sum over t of idf(t) * f * (k1 + 1) / (f + k1 * (1 - b + b * |d| / avgdl))
//! ```
//!
//! with `N` rows, `n(t)` rows containing `t`, `|d|` the row's tokens in
//! all columns, `avgdl` the mean of `|d|`, `k1 = 1.2`, `b = 0.75`.
//!
//! What it does not do: phrases of several words (FTS5 matches them by
//! position, which is not kept), or grow without bound: past
//! [`MAX_POSTINGS`] postings or the bytes its owner allows
//! ([`TextIndex::hold_within`]), or with a word more than 65,535 times in
//! one column of one document, an index gives its memory back and stays
//! off. [`TextIndex::bm25`] returns `None` then and the caller asks
//! SQLite. Ties in score are broken by the lower rowid (FTS5 leaves
//! their order open).

// Exception to the core's panic lints (src/core/mod.rs): postings and counts
// index the index's own tables, built together; tests/text_index.rs holds its
// scores to FTS5's.
#![allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use super::parts::{PartReader, PartWriter};
use super::porter;
use crate::core::error::{Error, Result};
use rustc_hash::FxHashMap as HashMap;

/// FTS5's bm25 constants.
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// What FTS5's idf adds to the counts of rows with and without a term,
/// `ln((N - n + 0.5) / (n + 0.5))`.
const IDF_SMOOTHING: f64 = 0.5;
/// The idf FTS5 gives a term in half the rows or more (where the formula
/// gives 0 or less).
const MIN_IDF: f64 = 1e-6;
/// A term's count in each of the `C` columns of one document, packed in
/// 32 bits: `32 / C` bits a column (10 with three columns, 16 with two).
/// A count that fills its bits (1,023 or more with three columns) is kept
/// whole in the index's `overflow`, its bits all set: eight bytes a
/// posting, where three columns of `u16` took twelve.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Posting<const C: usize> {
    doc: u32,
    packed: u32,
}

impl<const C: usize> Posting<C> {
    const BITS: u32 = 32 / C as u32;
    /// A column's bits all set: its count is in `overflow`.
    const FULL: u32 = if Self::BITS >= 32 { u32::MAX } else { (1 << Self::BITS) - 1 };

    /// The posting of `counts` in `doc`, and whether a count filled its
    /// bits (the caller keeps it whole).
    fn new(doc: u32, counts: [u16; C]) -> (Posting<C>, bool) {
        let mut packed = 0u32;
        let mut full = false;
        for (c, &n) in counts.iter().enumerate() {
            let v = u32::from(n).min(Self::FULL);
            full |= v == Self::FULL;
            packed |= v << (c as u32 * Self::BITS);
        }
        (Posting { doc, packed }, full)
    }

    fn field(&self, c: usize) -> u32 {
        (self.packed >> (c as u32 * Self::BITS)) & Self::FULL
    }

    fn is_full(&self) -> bool {
        (0..C).any(|c| self.field(c) == Self::FULL)
    }
}

/// A term's postings, in the order their documents were added. Most terms
/// of a small profile occur in one document: that posting is kept in
/// place, with no block of its own on the heap.
#[derive(Clone, Debug)]
enum List<const C: usize> {
    One(Posting<C>),
    Many(Vec<Posting<C>>),
}

impl<const C: usize> List<C> {
    const EMPTY: List<C> = List::Many(Vec::new());

    fn as_slice(&self) -> &[Posting<C>] {
        match self {
            List::One(p) => std::slice::from_ref(p),
            List::Many(v) => v,
        }
    }

    /// Postings the list has room for on the heap (none when kept in place).
    fn capacity(&self) -> usize {
        match self {
            List::One(_) => 0,
            List::Many(v) => v.capacity(),
        }
    }

    fn last(&self) -> Option<&Posting<C>> {
        self.as_slice().last()
    }

    fn push(&mut self, p: Posting<C>) {
        match self {
            List::Many(v) if v.is_empty() && v.capacity() == 0 => *self = List::One(p),
            List::Many(v) => v.push(p),
            List::One(first) => {
                let mut v = Vec::with_capacity(2);
                v.extend([*first, p]);
                *self = List::Many(v);
            }
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            List::Many(v) if v.len() == 1 => *self = List::One(v[0]),
            List::Many(v) => v.shrink_to_fit(),
            List::One(_) => {}
        }
    }
}

impl<const C: usize> PartialEq for List<C> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// The index's terms: each one's bytes, one after another in one buffer,
/// numbered in the order they were first seen, and a table finding a
/// term's number by its bytes. No term has a block of its own.
#[derive(Default)]
struct Terms {
    table: hashbrown::HashTable<u32>,
    text: Vec<u8>,
    /// Where each term's bytes end in `text`.
    ends: Vec<u32>,
}

impl std::fmt::Debug for Terms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terms").field("terms", &self.ends.len()).field("bytes", &self.text.len()).finish()
    }
}

/// Two term sets are equal when they number the same terms alike.
impl PartialEq for Terms {
    fn eq(&self, other: &Self) -> bool {
        (&self.text, &self.ends) == (&other.text, &other.ends)
    }
}

fn term_hash(term: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(term);
    h.finish()
}

/// Term `id`'s bytes in `text`, whose terms end at `ends` (a free
/// function, so the table can be rehashed while it is borrowed mutably).
fn term_bytes<'a>(text: &'a [u8], ends: &[u32], id: u32) -> &'a [u8] {
    let start = if id == 0 { 0 } else { ends[id as usize - 1] as usize };
    &text[start..ends[id as usize] as usize]
}

impl Terms {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn bytes(&self, id: u32) -> &[u8] {
        term_bytes(&self.text, &self.ends, id)
    }

    fn find(&self, term: &[u8]) -> Option<u32> {
        self.table.find(term_hash(term), |&id| self.bytes(id) == term).copied()
    }

    /// The number of `term`, and whether it is new (numbered next).
    fn intern(&mut self, term: &[u8]) -> (u32, bool) {
        if let Some(id) = self.find(term) {
            return (id, false);
        }
        let id = self.ends.len() as u32;
        self.text.extend_from_slice(term);
        self.ends.push(self.text.len() as u32);
        let Terms { table, text, ends } = self;
        table.insert_unique(term_hash(term), id, |&i| term_hash(term_bytes(text, ends, i)));
        (id, true)
    }

    fn heap_bytes(&self) -> usize {
        self.table.capacity() * (std::mem::size_of::<u32>() + 1) + self.text.capacity() + self.ends.capacity() * std::mem::size_of::<u32>()
    }

    fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
        let Terms { table, text, ends } = self;
        table.shrink_to_fit(|&i| term_hash(term_bytes(text, ends, i)));
    }
}

/// Postings (a term in a document) an index holds at most: ~50 MB of
/// three-column postings, with the vector index's codes and the turn
/// directory well under a Durable Object's 128 MB. About 280,000
/// LoCoMo-like memories, or 160,000 messages.
pub const MAX_POSTINGS: usize = 5_000_000;

/// A snapshot's mark of an index that is off, followed by the bound it
/// went over ([`TextIndex::write_since`]).
const OFF_WITHIN: u8 = 2;

/// A query term's number, its postings and its idf.
type TermPostings<'a, const C: usize> = (u32, &'a [Posting<C>], f64);

/// Documents of `C` columns.
#[derive(Debug)]
pub struct TextIndex<const C: usize> {
    /// Set once the index went over its bounds: it holds nothing and
    /// scores nothing.
    off: bool,
    /// The bound it turned off under: [`TextIndex::max_bytes`] then, or
    /// `usize::MAX` when no bound would hold it (more than
    /// [`MAX_POSTINGS`], a word said more than 65,535 times). A snapshot
    /// keeps it, so that a larger bound later builds the index again.
    off_within: usize,
    /// The most [`TextIndex::heap_bytes`] it may hold
    /// ([`TextIndex::hold_within`]; unbounded but for [`MAX_POSTINGS`]
    /// until told).
    max_bytes: usize,
    postings_held: usize,
    /// The postings' lists' capacities on the heap, summed (room they grew
    /// into included).
    postings_capacity: usize,
    terms: Terms,
    /// Per term, its documents in the order they were added.
    postings: Vec<List<C>>,
    /// The counts of the postings whose bits they fill, by (term,
    /// document): none but in documents that say one word a thousand
    /// times.
    overflow: HashMap<(u32, u32), [u16; C]>,
    /// Per document, its tokens in all columns.
    lengths: Vec<u32>,
    total: u64,
}

/// Two indexes are equal when they hold the same documents: the room
/// their lists grew into, which depends on how they were built, aside.
impl<const C: usize> PartialEq for TextIndex<C> {
    fn eq(&self, other: &Self) -> bool {
        let TextIndex { off, off_within: _, max_bytes: _, postings_held, postings_capacity: _, terms, postings, overflow, lengths, total } = self;
        (*off, *postings_held, terms, postings, overflow, lengths, *total)
            == (other.off, other.postings_held, &other.terms, &other.postings, &other.overflow, &other.lengths, other.total)
    }
}

impl<const C: usize> Default for TextIndex<C> {
    fn default() -> Self {
        TextIndex {
            off: false,
            off_within: usize::MAX,
            max_bytes: usize::MAX,
            postings_held: 0,
            postings_capacity: 0,
            terms: Terms::default(),
            postings: Vec::new(),
            overflow: HashMap::default(),
            lengths: Vec::new(),
            total: 0,
        }
    }
}

impl<const C: usize> TextIndex<C> {
    /// Bytes the index holds on the heap, in constant time: its tables'
    /// capacities, its terms' bytes, and its postings' lists' capacities
    /// (the room a list grew into counts: a list doubles as it grows).
    /// The memory budget counts it ([`crate::core::resident`]).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let postings = self.postings.capacity() * size_of::<List<C>>() + self.postings_capacity * size_of::<Posting<C>>();
        let overflow = self.overflow.capacity() * (size_of::<((u32, u32), [u16; C])>() + 1);
        self.terms.heap_bytes() + postings + overflow + self.lengths.capacity() * size_of::<u32>()
    }

    /// Adds document number `doc` (the next one: documents are numbered
    /// in the order added, as their rowids grow) with its columns' text.
    pub fn add(&mut self, doc: u32, columns: [&str; C]) {
        if self.off {
            return;
        }
        debug_assert_eq!(doc as usize, self.lengths.len());
        // Each token as (term, column), then counted per term.
        let mut tokens: Vec<(u32, u8)> = Vec::with_capacity(64);
        let mut length = 0u32;
        for (c, text) in columns.iter().enumerate() {
            // As the full-text tables are written (`FullText::catch_up`).
            let text = crate::core::text::index_form(text);
            length += porter::tokens(&text, |t| {
                let (term, fresh) = self.terms.intern(t);
                if fresh {
                    self.postings.push(List::EMPTY);
                }
                tokens.push((term, c as u8));
            }) as u32;
        }
        tokens.sort_unstable();
        for run in tokens.chunk_by(|a, b| a.0 == b.0) {
            let mut count = [0u32; C];
            for &(_, c) in run {
                count[c as usize] += 1;
            }
            let mut narrow = [0u16; C];
            for (to, &from) in narrow.iter_mut().zip(&count) {
                let Ok(v) = u16::try_from(from) else {
                    return self.turn_off(usize::MAX);
                };
                *to = v;
            }
            let term = run[0].0;
            let list = &mut self.postings[term as usize];
            let room = list.capacity();
            let (posting, full) = Posting::new(doc, narrow);
            list.push(posting);
            self.postings_capacity += list.capacity() - room;
            self.postings_held += 1;
            if full {
                self.overflow.insert((term, doc), narrow);
            }
        }
        self.lengths.push(length);
        self.total += length as u64;
        self.turn_off_if_over();
    }

    /// Bounds the index to `bytes` of [`TextIndex::heap_bytes`]: past
    /// them (now, or once a document or a snapshot's term takes it there)
    /// it turns off. A document's words are many times its text's bytes
    /// when they are mostly new (hashes, identifiers, Chinese or Japanese
    /// text read in pairs), so a text's size does not bound its index.
    pub fn hold_within(&mut self, bytes: usize) {
        self.max_bytes = bytes;
        self.turn_off_if_over();
    }

    fn turn_off_if_over(&mut self) {
        if !self.off && self.postings_held > MAX_POSTINGS {
            self.turn_off(usize::MAX);
        } else if !self.off && self.heap_bytes() > self.max_bytes {
            self.turn_off(self.max_bytes);
        }
    }

    /// Gives the memory back and scores nothing from now on; `within`,
    /// the bound it went over ([`TextIndex::off_within`]).
    fn turn_off(&mut self, within: usize) {
        *self = TextIndex { off: true, off_within: within, max_bytes: self.max_bytes, ..TextIndex::default() };
    }

    /// Whether the index went over its bounds (and scores nothing).
    pub fn is_off(&self) -> bool {
        self.off
    }

    /// Writes the documents from `first` on (their terms' postings and
    /// their lengths) to a snapshot stream.
    pub fn write_since(&self, w: &mut PartWriter<'_>, first: u32) -> Result<()> {
        // 0 on; 2 off, with the bound it went over (-1: none would hold
        // it). Builds before the bound was kept wrote 1 for off, and read
        // any byte but 0 as off.
        if self.off {
            w.u8(OFF_WITHIN)?;
            w.i64(i64::try_from(self.off_within).unwrap_or(-1))?;
        } else {
            w.u8(0)?;
        }
        let tails: Vec<(u32, &[Posting<C>])> = (0..self.terms.len() as u32)
            .map(|i| {
                let list = self.postings[i as usize].as_slice();
                (i, &list[list.partition_point(|p| p.doc < first)..])
            })
            .filter(|(_, tail)| !tail.is_empty())
            .collect();
        w.u32(tails.len() as u32)?;
        for (term, tail) in tails {
            w.text(self.terms.bytes(term))?;
            w.u32(tail.len() as u32)?;
            for p in tail {
                w.u32(p.doc)?;
                for c in self.counts(term, p) {
                    w.u16(c)?;
                }
            }
        }
        let lengths = self.lengths.get(first as usize..).unwrap_or(&[]);
        w.u32(lengths.len() as u32)?;
        for &n in lengths {
            w.u32(n)?;
        }
        Ok(())
    }

    /// Adds the documents a stream [`TextIndex::write_since`] wrote from
    /// the next document on (as numbered here).
    pub fn read_more(&mut self, r: &mut PartReader<'_>) -> Result<()> {
        let bad = |what: &str| Error::storage(format!("failed to read a snapshot: {what}"));
        match r.u8()? {
            0 => {}
            OFF_WITHIN => {
                let within = usize::try_from(r.i64()?).unwrap_or(usize::MAX);
                // Off under a smaller bound than this one's: it may fit
                // now, and is read again from the rows (then written
                // again) rather than kept off for good.
                if self.max_bytes > within {
                    return Err(bad("an index turned off under a smaller bound than the one it is read under"));
                }
                self.turn_off(within);
            }
            _ => self.turn_off(usize::MAX),
        }
        let first = self.lengths.len() as u32;
        let terms = r.u32()? as usize;
        let mut last_doc: Option<u32> = None;
        for _ in 0..terms {
            let term = r.text()?;
            if self.off {
                // Over its bounds: the rest of the stream is read past
                // (each posting a document and its counts).
                let n = r.u32()? as usize;
                r.bytes(n.saturating_mul(4 + 2 * C))?;
                continue;
            }
            let (i, fresh) = self.terms.intern(&term);
            if fresh {
                self.postings.push(List::EMPTY);
            }
            let n = r.u32()? as usize;
            let list = &mut self.postings[i as usize];
            let room = list.capacity();
            if n > 1 {
                // A count read from storage bounds nothing: reserve modestly.
                let more = n.min(1 << 16);
                match list {
                    List::Many(v) => v.reserve(more),
                    List::One(p) => {
                        let mut v = Vec::with_capacity(1 + more);
                        v.push(*p);
                        *list = List::Many(v);
                    }
                }
            }
            for _ in 0..n {
                let doc = r.u32()?;
                let mut count = [0u16; C];
                for c in count.iter_mut() {
                    *c = r.u16()?;
                }
                if doc < first || list.last().is_some_and(|p| p.doc >= doc) {
                    return Err(bad("postings out of order"));
                }
                last_doc = last_doc.max(Some(doc));
                let (posting, full) = Posting::new(doc, count);
                list.push(posting);
                self.postings_held += 1;
                if full {
                    self.overflow.insert((i, doc), count);
                }
            }
            self.postings_capacity += list.capacity() - room;
            self.turn_off_if_over();
        }
        let docs = r.u32()? as usize;
        if last_doc.is_some_and(|d| d as usize >= first as usize + docs) {
            return Err(bad("a posting past the last document"));
        }
        self.lengths.reserve(docs.min(1 << 16));
        for _ in 0..docs {
            let n = r.u32()?;
            self.lengths.push(n);
            self.total += n as u64;
        }
        if self.off {
            self.turn_off(self.off_within);
        }
        Ok(())
    }

    /// Gives back the room lists grew into.
    pub fn shrink_to_fit(&mut self) {
        self.postings.iter_mut().for_each(List::shrink_to_fit);
        self.postings_capacity = self.postings.iter().map(List::capacity).sum();
        self.terms.shrink_to_fit();
        self.postings.shrink_to_fit();
        self.lengths.shrink_to_fit();
    }

    /// Documents indexed (none once off).
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The best `limit` documents matching any of `phrases` (an FTS5
    /// `"p1" OR "p2" ...` query), with `bm25()` as FTS5 returns it
    /// (negative; lower is better) for the column `weights`, best first.
    /// `None` when a phrase is not one token (FTS5 matches several by
    /// position, which the index does not keep).
    pub fn bm25(&self, phrases: &[String], weights: [f64; C], limit: usize) -> Option<Vec<(u32, f64)>> {
        self.bm25_of(phrases, weights, limit, |_| true)
    }

    /// [`TextIndex::bm25`] over the documents `keep` accepts only (the
    /// statistics stay the whole index's, as FTS5's do under a filter).
    pub fn bm25_of(&self, phrases: &[String], weights: [f64; C], limit: usize, keep: impl Fn(u32) -> bool) -> Option<Vec<(u32, f64)>> {
        let (terms, avgdl) = self.query_terms(phrases)?;
        let mut scores: HashMap<u32, f64> = HashMap::default();
        for (term, list, idf) in terms {
            for p in list.iter().filter(|p| keep(p.doc)) {
                *scores.entry(p.doc).or_insert(0.0) += self.share(term, p, weights, idf, avgdl);
            }
        }
        let mut best: Vec<(u32, f64)> = scores.into_iter().map(|(d, s)| (d, -s)).collect();
        // The best `limit` in order, the rest dropped unsorted (stop words
        // match most documents).
        let cmp = |a: &(u32, f64), b: &(u32, f64)| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0));
        if limit < best.len() {
            best.select_nth_unstable_by(limit, cmp);
            best.truncate(limit);
        }
        best.sort_unstable_by(cmp);
        Some(best)
    }

    /// [`TextIndex::bm25`] of the documents `docs` (ascending) only, each that matches
    /// (in no order): the scores [`TextIndex::bm25_of`] gives them, found
    /// by looking each document up in each term's postings (which are in
    /// document order) instead of walking the postings. For a few
    /// documents and common words, whose postings run as long as the
    /// index.
    pub fn bm25_for(&self, phrases: &[String], weights: [f64; C], docs: &[u32]) -> Option<Vec<(u32, f64)>> {
        let (terms, avgdl) = self.query_terms(phrases)?;
        let mut scores: HashMap<u32, f64> = HashMap::default();
        for (term, list, idf) in terms {
            // `docs` ascend, so each search starts where the last ended.
            let mut from = 0;
            for &doc in docs {
                let rest = list.get(from..).unwrap_or_default();
                match rest.binary_search_by_key(&doc, |p| p.doc) {
                    Ok(at) => {
                        *scores.entry(doc).or_insert(0.0) += self.share(term, &rest[at], weights, idf, avgdl);
                        from += at + 1;
                    }
                    Err(at) => from += at,
                }
            }
        }
        Some(scores.into_iter().map(|(d, s)| (d, -s)).collect())
    }

    /// The postings and idf of each query term the index holds, and the
    /// mean document length. `None` when the index is off or a phrase is
    /// not one token.
    fn query_terms(&self, phrases: &[String]) -> Option<(Vec<TermPostings<'_, C>>, f64)> {
        if self.off {
            return None;
        }
        let mut terms: Vec<Option<u32>> = Vec::with_capacity(phrases.len());
        for p in phrases {
            let mut token: Option<Vec<u8>> = None;
            if porter::tokens(p, |t| token = Some(t.to_vec())) != 1 {
                return None;
            }
            terms.push(token.and_then(|t| self.terms.find(&t)));
        }
        let rows = self.lengths.len() as i64;
        if rows == 0 {
            return Some((Vec::new(), 0.0));
        }
        let avgdl = self.total as f64 / rows as f64;
        let lists = terms
            .into_iter()
            .flatten()
            .map(|term| {
                let list = self.postings[term as usize].as_slice();
                let hits = list.len() as i64;
                let idf = (((rows - hits) as f64 + IDF_SMOOTHING) / (hits as f64 + IDF_SMOOTHING)).ln();
                (term, list, if idf <= 0.0 { MIN_IDF } else { idf })
            })
            .collect();
        Some((lists, avgdl))
    }

    /// The counts of `term`'s posting `p`: from its bits, or whole from
    /// `overflow` when they fill them.
    fn counts(&self, term: u32, p: &Posting<C>) -> [u16; C] {
        if p.is_full() {
            if let Some(counts) = self.overflow.get(&(term, p.doc)) {
                return *counts;
            }
        }
        std::array::from_fn(|c| p.field(c) as u16)
    }

    /// A posting's share of its document's bm25 (positive), by FTS5's
    /// formula.
    fn share(&self, term: u32, p: &Posting<C>, weights: [f64; C], idf: f64, avgdl: f64) -> f64 {
        // Instance by instance, as FTS5 sums them.
        let mut f = 0.0f64;
        for (c, &n) in self.counts(term, p).iter().enumerate() {
            for _ in 0..n {
                f += weights[c];
            }
        }
        let d = self.lengths[p.doc as usize] as f64;
        idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / avgdl)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phrases(ws: &[&str]) -> Vec<String> {
        ws.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn test_rarer_words_and_shorter_documents_score_higher() {
        let mut ix = TextIndex::<2>::default();
        ix.add(0, ["Maria", "I baked a lemon tart"]);
        ix.add(1, ["John", "The lemon tree in the garden is full of lemons this year"]);
        ix.add(2, ["Maria", "We walked to the garden"]);
        let hits = ix.bm25(&phrases(&["lemon", "tart"]), [0.3, 1.0], 10).unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![0, 1]);
        assert!(hits[0].1 < hits[1].1 && hits[1].1 < 0.0, "bm25 is negative, best lowest");
        assert_eq!(ix.bm25(&phrases(&["lemon"]), [0.3, 1.0], 1).unwrap().len(), 1, "limit");
    }

    #[test]
    fn test_phrases_of_several_words_are_left_to_sqlite() {
        let mut ix = TextIndex::<2>::default();
        ix.add(0, ["user", "plain text"]);
        assert!(ix.bm25(&phrases(&["ice cream"]), [0.3, 1.0], 10).is_none(), "a phrase of two words");
        assert_eq!(ix.bm25(&phrases(&["absent"]), [0.3, 1.0], 10), Some(vec![]));
        ix.add(1, ["user", "un Café"]);
        assert_eq!(ix.bm25(&phrases(&["CAFE"]), [0.3, 1.0], 10).map(|h| h.len()), Some(1), "folded as FTS5 folds");
    }

    #[test]
    fn test_an_index_past_the_bytes_it_may_hold_gives_them_back_and_scores_nothing() {
        let mut ix = TextIndex::<2>::default();
        ix.hold_within(64 * 1024);
        let mut doc = 0u32;
        // Words all new: each a term of its own.
        while !ix.is_off() && doc < 10_000 {
            let words: Vec<String> = (0..50).map(|i| format!("w{doc}x{i}")).collect();
            ix.add(doc, ["user", &words.join(" ")]);
            assert!(ix.is_off() || ix.heap_bytes() <= 64 * 1024, "held within its bytes after each document");
            doc += 1;
        }
        assert!(ix.is_off(), "turned off after {doc} documents");
        assert!(doc > 10, "not before it held anything: {doc}");
        assert_eq!((ix.len(), ix.heap_bytes()), (0, 0), "its memory given back");
        assert!(ix.bm25(&phrases(&["w1x1"]), [0.3, 1.0], 10).is_none(), "SQLite is asked");
        ix.add(doc, ["user", "more words"]);
        assert_eq!(ix.len(), 0, "off for good");
        let mut small = TextIndex::<2>::default();
        small.add(0, ["user", "a few words"]);
        small.hold_within(16);
        assert!(small.is_off(), "bounded below what it holds: off at once");
    }

    #[test]
    fn test_heap_bytes_count_the_room_posting_lists_grew_into() {
        let mut ix = TextIndex::<2>::default();
        for doc in 0..1000u32 {
            ix.add(doc, ["user", if doc % 3 == 0 { "common words here" } else { "common other words" }]);
        }
        let walked: usize = ix.postings.iter().map(List::capacity).sum();
        assert!(walked > ix.postings_held, "the lists grew past what they hold: {walked} for {}", ix.postings_held);
        assert_eq!(ix.postings_capacity, walked);
        let grown = ix.heap_bytes();
        ix.shrink_to_fit();
        assert_eq!(ix.postings_capacity, ix.postings.iter().map(List::capacity).sum::<usize>());
        assert!(ix.heap_bytes() < grown, "giving the room back is seen: {} then {grown}", ix.heap_bytes());
    }
}
