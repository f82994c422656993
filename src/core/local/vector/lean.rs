//! The lean path: the three passes without a memory copy, the codes
//! streamed from SQLite twice in the order a fresh load would give them.

use super::code::{
    best, body_inv_norm, body_len, body_quantized, body_simhash, cosine, dot_quantized, hamming, id_of_slot_key, key_of, nearest, nearest_among, record_key,
    score_table, simhash, slots_among, walk_passing, CODE_WORDS, KEY_BYTES,
};
use super::rows::{code_page, exact_scan, fingerprint, read_vectors, rescore_exactly, sort_hits, CodeRow, BEFORE_FIRST_ROWID, PAGE};
use super::snapshot::{count, count_agrees, record_len, snapshot_growth, snapshot_head, Head, SNAPSHOT_GROWTH_MIN};
use super::RESCORE_MARGIN;
use crate::core::error::Result;
use crate::core::ports::{first_passing, Hits, IndexFilter, KnownPassing, Sql, SqlValue};
use rustc_hash::{FxHashMap, FxHashSet};

// The lean path: the three passes of `search` without a memory copy, for
// profiles that keep nothing in memory between requests. The codes are
// streamed from SQLite twice, in the order a fresh `load` would give the
// slots, so the answers are those of `search` on a freshly loaded copy.

/// Rows after the snapshot the lean path holds at most, for a snapshot of
/// `n` slots: the growth that makes the next snapshot due, and 2,000 more
/// (writes between upkeep runs); ~260 bytes each at 256 dimensions. With
/// more (upkeep not running), it streams every row instead.
pub(super) fn newer_cap(n: usize) -> usize {
    snapshot_growth(n) + SNAPSHOT_GROWTH_MIN
}

/// The rows written after the snapshot, in rowid order: what `load`
/// inserts into the snapshot's slots (`load_rows`).
pub(super) struct Newer {
    pub(super) keys: Vec<u128>,
    /// Key → index in `keys`.
    pub(super) index: FxHashMap<u128, usize>,
    /// Whether each has the snapshot's dimension count.
    pub(super) same: Vec<bool>,
    /// Their bodies, [`body_len`] bytes each (zeros for another dimension
    /// count).
    pub(super) bodies: Vec<u8>,
    /// Ids that are neither hex nor ULIDs (`ids::key_of_id`), by key.
    pub(super) odd: FxHashMap<u128, String>,
    /// Whether each one's key is in the snapshot (the row then replaces
    /// that record in place); set by the first stream over the parts.
    pub(super) in_snapshot: Vec<bool>,
}

impl Newer {
    /// Room for `rows` rows of `dims` dimensions, taken once.
    pub(super) fn with_capacity(rows: usize, dims: usize) -> Newer {
        Newer {
            keys: Vec::with_capacity(rows),
            index: FxHashMap::with_capacity_and_hasher(rows, Default::default()),
            same: Vec::with_capacity(rows),
            bodies: Vec::with_capacity(rows * body_len(dims)),
            odd: FxHashMap::default(),
            in_snapshot: Vec::with_capacity(rows),
        }
    }

    /// Adds a row (the snapshot's vectors have `dims` dimensions); a key
    /// added again replaces its row in place, as `Packed::insert` does.
    pub(super) fn add(&mut self, row: &CodeRow, dims: usize) {
        let (key, hex) = key_of(&row.id);
        let len = body_len(dims);
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                self.index.insert(key, self.keys.len());
                self.keys.push(key);
                self.same.push(false);
                self.in_snapshot.push(false);
                self.bodies.resize(self.bodies.len() + len, 0);
                self.keys.len() - 1
            }
        };
        self.same[i] = row.dims == dims;
        if self.same[i] {
            self.bodies[i * len..(i + 1) * len].copy_from_slice(row.body());
        }
        if !hex {
            self.odd.insert(key, row.id.clone());
        }
    }

    pub(super) fn body(&self, i: usize, dims: usize) -> &[u8] {
        let len = body_len(dims);
        &self.bodies[i * len..(i + 1) * len]
    }
}

/// The snapshot as the lean path reads it: its header, the rows written
/// after it, and what the first stream over its parts found.
pub(super) struct Snap {
    pub(super) head: Head,
    pub(super) newer: Newer,
    /// Ordinals (among all its records) of the records that repeat an
    /// earlier key, skipped as `read_snapshot` skips them.
    pub(super) repeated: Vec<usize>,
    /// Whether the parts were streamed once (`repeated` and
    /// `newer.in_snapshot` are then known).
    pub(super) streamed: bool,
}

/// Opens the snapshot and reads the rows written after it (their codes
/// held in memory: a tenth of the vectors at most while snapshot upkeep
/// runs). `None` when there is none to use: no header, or one that
/// cannot be read (as in `load`, the snapshot is derived data), no slot,
/// or more rows after it than [`newer_cap`]. Reads no part.
pub(super) fn open_snapshot(sql: &dyn Sql) -> Result<Option<Snap>> {
    // A header that does not read is no snapshot (`snapshot_head`); a
    // failed read of it is the store's error.
    let Some(head) = snapshot_head(sql)? else { return Ok(None) };
    let after = count(sql, "SELECT COUNT(*) FROM vectors WHERE rowid > ?", &[SqlValue::Integer(head.covered)])?;
    if head.n == 0 || usize::try_from(after).unwrap_or(usize::MAX) > newer_cap(head.n) {
        return Ok(None);
    }
    let mut newer = Newer::with_capacity(usize::try_from(after).unwrap_or(0), head.dims);
    let mut from = head.covered;
    loop {
        let (rows, last, full) = code_page(sql, from, PAGE)?;
        rows.iter().for_each(|r| newer.add(r, head.dims));
        match last {
            Some(l) if full => from = l,
            _ => break,
        }
    }
    Ok(Some(Snap { head, newer, repeated: Vec::new(), streamed: false }))
}

/// What a stream calls for each slot: its key, its id when that is not 32
/// hex characters, its code's body.
pub(super) type Visit<'v> = dyn FnMut(u128, Option<&str>, &[u8]) + 'v;

/// Calls `f(key, id if neither hex nor a ULID, body)` for each slot `load`
/// builds from the snapshot, in slot order: its records in order (a
/// repeat of an earlier key skipped, a record whose key has a newer row
/// replaced by that row's code in place), then the newer rows whose key
/// it lacks, in rowid order. One part in memory at a time. Returns how
/// many slots, or `None` where `load` would not use the snapshot (the
/// first stream finds out, the second repeats its choices): a part
/// missing or unreadable, a count other than its header's, or a newer
/// row of another dimension count replacing a record (`load` then
/// removes that slot, moving the last slot into it; the lean path streams
/// the rows instead, the same vectors in rowid order).
///
/// Repeats are found with 64-bit fingerprints of the keys: a repeat
/// always matches. Two keys that share a fingerprint (about once in 10^9
/// snapshots of 100k vectors) make the count differ from the header's,
/// and the rows are streamed instead: correct, only slower.
pub(super) fn stream_snapshot(sql: &dyn Sql, snap: &mut Snap, f: &mut Visit<'_>) -> Result<Option<usize>> {
    let first = !snap.streamed;
    let (dims, record) = (snap.head.dims, record_len(snap.head.dims));
    let mut seen: FxHashSet<u64> = FxHashSet::default();
    if first {
        seen.reserve(snap.head.n);
    }
    let (mut ordinal, mut next_repeat, mut slots, mut removed) = (0usize, 0usize, 0usize, false);
    for part in 1..=snap.head.parts {
        let rows = match sql.query("SELECT data FROM vector_snapshot WHERE part = ?", &[SqlValue::Integer(part)]) {
            Ok(rows) => rows,
            Err(_) if first => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(data) = rows.first().and_then(|r| r.first()).and_then(SqlValue::as_blob) else { return Ok(None) };
        for rec in data.chunks_exact(record) {
            let key = record_key(rec);
            let repeat = if first { !seen.insert(fingerprint(key)) } else { snap.repeated.get(next_repeat) == Some(&ordinal) };
            if repeat {
                if first {
                    snap.repeated.push(ordinal);
                } else {
                    next_repeat += 1;
                }
            } else {
                slots += 1;
                let newer = &mut snap.newer;
                match newer.index.get(&key) {
                    Some(&i) => {
                        newer.in_snapshot[i] = true;
                        removed |= !newer.same[i];
                        f(key, newer.odd.get(&key).map(String::as_str), newer.body(i, dims));
                    }
                    None => f(key, None, &rec[KEY_BYTES..]),
                }
            }
            ordinal += 1;
        }
    }
    if first && (slots != snap.head.n || removed) {
        return Ok(None);
    }
    let newer = &snap.newer;
    for (i, &key) in newer.keys.iter().enumerate() {
        if newer.same[i] && !newer.in_snapshot[i] {
            slots += 1;
            f(key, newer.odd.get(&key).map(String::as_str), newer.body(i, dims));
        }
    }
    snap.streamed = true;
    Ok(Some(slots))
}

/// Calls `f(key, id if neither hex nor a ULID, body)` for every row of
/// `vectors` in rowid order, a page at a time, leaving out the rows of
/// another dimension count than `dims` (as a load from the rows leaves
/// them out). Returns how many.
pub(super) fn stream_rows(sql: &dyn Sql, dims: usize, f: &mut Visit<'_>) -> Result<usize> {
    let (mut after, mut slots) = (BEFORE_FIRST_ROWID, 0);
    loop {
        let (rows, last, full) = code_page(sql, after, PAGE)?;
        for r in rows.iter().filter(|r| r.dims == dims) {
            let (key, hex) = key_of(&r.id);
            f(key, (!hex).then_some(r.id.as_str()), r.body());
            slots += 1;
        }
        match last {
            Some(l) if full => after = l,
            _ => return Ok(slots),
        }
    }
}

/// The dimension count of the first row with a code (recoded if old),
/// which a load from the rows keeps; `None` without one.
pub(super) fn first_dims(sql: &dyn Sql) -> Result<Option<usize>> {
    let mut after = BEFORE_FIRST_ROWID;
    loop {
        let (rows, last, _) = code_page(sql, after, 1)?;
        if let Some(r) = rows.first() {
            return Ok(Some(r.dims));
        }
        match last {
            Some(l) => after = l,
            None => return Ok(None),
        }
    }
}

/// Where the lean passes read the codes.
pub(super) enum Source {
    Snapshot(Box<Snap>),
    /// Every row; the dimension count they are searched at (`None`: no
    /// row with a code).
    Rows(Option<usize>),
}

impl Source {
    pub(super) fn rows(sql: &dyn Sql) -> Result<Source> {
        Ok(Source::Rows(first_dims(sql)?))
    }

    pub(super) fn dims(&self) -> Option<usize> {
        match self {
            Source::Snapshot(s) => Some(s.head.dims),
            Source::Rows(dims) => *dims,
        }
    }

    /// Slots the stream will give at most, as far as known (for reserving).
    pub(super) fn slots_hint(&self) -> usize {
        match self {
            Source::Snapshot(s) => s.head.n + s.newer.keys.len(),
            Source::Rows(_) => 0,
        }
    }

    /// Calls `f(key, id if neither hex nor a ULID, body)` for every slot,
    /// in the slot order of a fresh `load`. How many slots, or `None` when
    /// the snapshot turns out unusable.
    pub(super) fn stream(&mut self, sql: &dyn Sql, f: &mut Visit<'_>) -> Result<Option<usize>> {
        match self {
            Source::Snapshot(snap) => stream_snapshot(sql, snap, f),
            Source::Rows(Some(dims)) => stream_rows(sql, *dims, f).map(Some),
            Source::Rows(None) => Ok(Some(0)),
        }
    }
}

/// [`search`](super::search)'s three passes for each of `qs` without a memory copy (see
/// [`search_lean`]).
pub(super) fn lean(sql: &dyn Sql, qs: &[&[f32]], top_k: usize, first_pass: usize) -> Result<Vec<Hits>> {
    let none = || vec![Vec::new(); qs.len()];
    if top_k == 0 || qs.is_empty() {
        return Ok(none());
    }
    let keep = top_k + RESCORE_MARGIN.max(top_k / 2);
    let Some(mut pass) = hamming_pass(sql, qs, None)? else { return Ok(none()) };
    if pass.slots == 0 {
        return Ok(none());
    }
    let budget = first_pass.max(keep);
    let candidates: Vec<Vec<usize>> = pass
        .dist
        .iter()
        .zip(qs)
        .map(|(d, q)| match q.len() == pass.dims {
            true if pass.slots <= budget => (0..pass.slots).collect(),
            true => nearest(d, budget),
            false => Vec::new(),
        })
        .collect();
    pass.dist = Vec::new();
    let Some(shortlists) = quantized_pass(sql, &mut pass, qs, &candidates, keep)? else {
        // The codes changed between the two passes, which nothing between
        // them writes: exact answers rather than mismatched slots.
        return qs.iter().map(|q| exact_scan(sql, q, top_k)).collect();
    };
    exact_pass(sql, qs, &shortlists, pass.dims, pass.slots, top_k)
}

/// The first pass's outcome: where the codes stream from, their
/// dimension count, each query's Hamming distance to each slot (none for
/// a query of another dimension count), and how many slots.
pub(super) struct HammingPass {
    pub(super) source: Source,
    pub(super) dims: usize,
    pub(super) dist: Vec<Vec<u16>>,
    pub(super) slots: usize,
}

/// Pass 1: each slot's Hamming distance to each query of the codes'
/// dimension count, 2 bytes a slot; from the snapshot if `load` would use
/// it, else from the rows. `None` when there are no codes. With `keys`,
/// each slot's key as well (16 bytes a slot), for a narrowed search.
pub(super) fn hamming_pass(sql: &dyn Sql, qs: &[&[f32]], mut keys: Option<&mut SlotKeys>) -> Result<Option<HammingPass>> {
    let mut source = match open_snapshot(sql)? {
        Some(snap) => Source::Snapshot(Box::new(snap)),
        None => Source::rows(sql)?,
    };
    loop {
        let Some(dims) = source.dims() else { return Ok(None) };
        let qh: Vec<Option<[u64; CODE_WORDS]>> = qs.iter().map(|q| (q.len() == dims).then(|| simhash(q))).collect();
        let hint = source.slots_hint();
        let mut dist: Vec<Vec<u16>> = qh.iter().map(|h| Vec::with_capacity(if h.is_some() { hint } else { 0 })).collect();
        if let Some(k) = keys.as_deref_mut() {
            *k = SlotKeys { keys: Vec::with_capacity(hint), odd: FxHashMap::default() };
        }
        let streamed = source.stream(sql, &mut |key, odd, body| {
            let h = body_simhash(body);
            for (d, qh) in dist.iter_mut().zip(&qh) {
                if let Some(qh) = qh {
                    d.push(hamming(&h, qh));
                }
            }
            if let Some(k) = keys.as_deref_mut() {
                k.push(key, odd);
            }
        })?;
        match (streamed, &source) {
            (Some(slots), Source::Rows(_)) => return Ok(Some(HammingPass { source, dims, dist, slots })),
            (Some(slots), Source::Snapshot(_)) if count_agrees(sql, slots)? => return Ok(Some(HammingPass { source, dims, dist, slots })),
            // `load` would not use the snapshot: the rows (which always stream).
            _ => source = Source::rows(sql)?,
        }
    }
}

/// Pass 2: the 4-bit score of each query's `candidates` (slots, in slot
/// order), as `shortlist` scores them; the ids of the best `keep` of each.
/// `None` when the codes streamed differ from the first pass's.
pub(super) fn quantized_pass(sql: &dyn Sql, pass: &mut HammingPass, qs: &[&[f32]], candidates: &[Vec<usize>], keep: usize) -> Result<Option<Vec<Vec<String>>>> {
    let dims = pass.dims;
    let active = |q: &[f32]| q.len() == dims;
    let tables: Vec<Option<(Vec<[f32; 256]>, f32)>> = qs.iter().map(|q| active(q).then(|| score_table(q))).collect();
    let mut scored: Vec<Vec<(f32, usize)>> = candidates.iter().map(|c| Vec::with_capacity(c.len())).collect();
    let mut next = vec![0usize; qs.len()];
    let (mut keys, mut odd) = (FxHashMap::<usize, u128>::default(), FxHashMap::<u128, String>::default());
    let mut slot = 0usize;
    let mut score = |key: u128, odd_id: Option<&str>, body: &[u8]| {
        let mut taken = false;
        for (((c, next), scored), table) in candidates.iter().zip(next.iter_mut()).zip(scored.iter_mut()).zip(&tables) {
            let Some((table, qinv)) = table else { continue };
            if c.get(*next) == Some(&slot) {
                *next += 1;
                scored.push((dot_quantized(table, body_quantized(body)) * body_inv_norm(body) * qinv, slot));
                taken = true;
            }
        }
        if taken {
            keys.insert(slot, key);
            if let Some(id) = odd_id {
                odd.insert(key, id.to_string());
            }
        }
        slot += 1;
    };
    // No query of the codes' dimension count: nothing to score.
    let streamed = if qs.iter().any(|q| active(q)) { pass.source.stream(sql, &mut score)? } else { Some(pass.slots) };
    if streamed != Some(pass.slots) {
        return Ok(None);
    }
    let id_of = |s: usize| {
        let k = keys.get(&s).copied().unwrap_or_default();
        odd.get(&k).cloned().unwrap_or_else(|| crate::core::ids::id_of_key(k))
    };
    Ok(Some(scored.into_iter().map(|sc| best(sc, keep).into_iter().map(|(_, s)| id_of(s)).collect()).collect()))
}

/// Pass 3: the exact cosine over the float vectors of the shortlists'
/// union, read once; the best `top_k` of each query.
pub(super) fn exact_pass(sql: &dyn Sql, qs: &[&[f32]], shortlists: &[Vec<String>], dims: usize, slots: usize, top_k: usize) -> Result<Vec<Hits>> {
    let mut union: Vec<String> = shortlists.concat();
    union.sort_unstable();
    union.dedup();
    let vectors: FxHashMap<String, Vec<f32>> = read_vectors(sql, &union)?.into_iter().collect();
    qs.iter()
        .zip(shortlists)
        .map(|(q, ids)| {
            if q.len() != dims {
                return exact_scan(sql, q, top_k);
            }
            let mut hits: Vec<(String, f32)> = ids.iter().filter_map(|id| Some((id.clone(), cosine(q, vectors.get(id)?)))).collect();
            // A stale entry (its row deleted behind the snapshot's back) is
            // dropped; with too few hits left, the exact scan answers.
            let missing = ids.len() - hits.len();
            if missing > 0 && hits.len() < top_k.min(slots.saturating_sub(missing)) {
                return exact_scan(sql, q, top_k);
            }
            sort_hits(&mut hits);
            hits.truncate(top_k);
            Ok(hits)
        })
        .collect()
}

/// [`search`](super::search) without a memory copy, for profiles that keep nothing in
/// memory between requests. The same three passes, the codes streamed
/// from SQLite twice in the order a fresh [`load`](super::load) gives the slots: the
/// answer is exactly `search`'s on a freshly loaded [`Packed`](super::Packed) (same ids,
/// order, scores) where no row was deleted behind the snapshot's back
/// (`search` evicts and shortlists again, this drops), no row's code is
/// in an older format (both recode it; the order then differs), and the
/// rows after the snapshot are of its dimension count and no more than
/// the growth that makes the next snapshot due plus 2,000 (else the rows
/// are streamed: the same vectors, in rowid order).
///
/// Pass 1 streams every code and keeps only its Hamming distance (2
/// bytes a vector); pass 2 streams them again and scores only the
/// chosen candidates; pass 3 reads those few vectors. The codes come
/// from the snapshot, one 512 KB part at a time, with the rows written
/// after it held in memory (few while [`maintain_snapshot_lean`](super::maintain_snapshot_lean) runs);
/// without a snapshot `load` would use, from the rows, a page at a time.
/// A stale entry found in pass 3 is dropped (nothing to evict: no copy);
/// with too few hits left, and for a query of another dimension count,
/// the exact scan answers. Rows with an old code are recoded and
/// rewritten as `load` does. Writes no snapshot.
pub fn search_lean(sql: &dyn Sql, q: &[f32], top_k: usize, first_pass: usize) -> Result<Vec<(String, f32)>> {
    Ok(lean(sql, &[q], top_k, first_pass)?.into_iter().next().unwrap_or_default())
}

/// [`search_lean`] for several queries, sharing the streams: one pass
/// over the codes computes every query's distances (2 bytes a vector
/// each), one scores every query's candidates, one read fetches the
/// union of the shortlists. Each answer is [`search_lean`]'s.
pub fn search_many_lean(sql: &dyn Sql, qs: &[Vec<f32>], top_k: usize, first_pass: usize) -> Result<Vec<Hits>> {
    let qs: Vec<&[f32]> = qs.iter().map(Vec::as_slice).collect();
    lean(sql, &qs, top_k, first_pass)
}

/// Each slot's key as pass 1 streamed it, and the text of every id that
/// is neither hex nor a ULID: what a narrowed lean search tests slots by.
#[derive(Default)]
pub(super) struct SlotKeys {
    pub(super) keys: Vec<u128>,
    pub(super) odd: FxHashMap<u128, String>,
}

impl SlotKeys {
    pub(super) fn push(&mut self, key: u128, odd: Option<&str>) {
        self.keys.push(key);
        if let Some(id) = odd {
            self.odd.insert(key, id.to_string());
        }
    }

    pub(super) fn id_of(&self, slot: usize) -> String {
        id_of_slot_key(self.keys[slot], |k| self.odd.get(k))
    }

    /// The slots of the memories `ids`, in slot order, as
    /// [`Packed::slots_of`] finds them.
    pub(super) fn slots_of(&self, ids: &FxHashSet<String>) -> Vec<usize> {
        slots_among(self.keys.len(), |s| self.keys[s], |k| self.odd.get(k), ids)
    }
}

/// [`search_passing`](super::search_passing) without a memory copy: for each of `qs`, the
/// answer the index would give holding the memories `only` lets through
/// alone, so the same answer as `search_passing` on a freshly loaded copy
/// (the conditions of [`search_lean`]). Pass 1 also keeps each slot's key
/// (16 bytes a vector: ~1.6 MB at 100k). The first pass is then drawn
/// from the passing slots: those of the memories read ahead when they
/// were, else the slots in Hamming order (ties by slot) tested a batch at
/// a time ([`first_passing`]), each memory once for all of `qs`. Pass 2
/// scores those candidates, pass 3 rescores the shortlists exactly; a
/// stale entry is left out, as `search_passing` leaves it.
///
/// Before this, a lean index answered a narrowed query by asking for
/// more neighbours of the whole index, at most 4,096
/// ([`VectorIndex::query_many_in`](crate::core::ports::VectorIndex::query_many_in)'s default): under a narrow filter
/// the passing memories past them were never found.
pub fn search_many_lean_in(sql: &dyn Sql, qs: &[Vec<f32>], top_k: usize, first_pass: usize, only: &IndexFilter<'_>) -> Result<Vec<Hits>> {
    let none = || vec![Vec::new(); qs.len()];
    if top_k == 0 || qs.is_empty() {
        return Ok(none());
    }
    let refs: Vec<&[f32]> = qs.iter().map(Vec::as_slice).collect();
    let keep = top_k + RESCORE_MARGIN.max(top_k / 2);
    let budget = first_pass.max(keep);
    let mut slots = SlotKeys::default();
    let Some(mut pass) = hamming_pass(sql, &refs, Some(&mut slots))? else { return Ok(none()) };
    let dims = pass.dims;
    let mut candidates: Vec<Vec<usize>> = Vec::with_capacity(qs.len());
    // One distance list a query (empty for one of another dimension count).
    let dists = std::mem::take(&mut pass.dist);
    let searched = qs.iter().zip(&dists).map(|(q, d)| (q.len() == dims).then_some(d));
    match only.ahead {
        Some(ids) => {
            let inside = slots.slots_of(ids);
            for dist in searched {
                candidates.push(match dist {
                    None => Vec::new(),
                    Some(d) => nearest_among(&inside, |s| d[s], budget),
                });
            }
        }
        None => {
            let mut known = KnownPassing::default();
            for dist in searched {
                let Some(d) = dist else {
                    candidates.push(Vec::new());
                    continue;
                };
                let walked = walk_passing(d, budget, |s| slots.id_of(s), &mut known, only)?;
                candidates.push(walked);
            }
        }
    }
    drop((slots, dists));
    let Some(shortlists) = quantized_pass(sql, &mut pass, &refs, &candidates, keep)? else {
        // The codes changed between the two passes, which nothing between
        // them writes: exact answers over the passing memories.
        return qs.iter().map(|q| exact_scan_in(sql, q, top_k, only)).collect();
    };
    Ok(rescore_exactly(sql, qs, &shortlists, top_k)?.0)
}

/// [`exact_scan`](super::exact_scan) over the memories `only` lets through: every stored
/// vector ranked, the passing ones kept (a fallback; it holds every id).
pub(super) fn exact_scan_in(sql: &dyn Sql, q: &[f32], top_k: usize, only: &IndexFilter<'_>) -> Result<Hits> {
    let ranked = exact_scan(sql, q, usize::MAX)?;
    match only.ahead {
        Some(ids) => Ok(ranked.into_iter().filter(|(id, _)| ids.contains(id)).take(top_k).collect()),
        None => first_passing(ranked, top_k, |h| h.0.clone(), |ids: &[String]| (only.passing)(ids)),
    }
}
