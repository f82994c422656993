//! The warm copy: every vector's code packed in blocks in memory
//! ([`Packed`]), loaded from the snapshot and the rows written since,
//! written back as a snapshot, kept in step with every upsert and delete,
//! and searched in the three passes.

use super::code::{
    best, body_inv_norm, body_quantized, body_simhash, cosine, dot_quantized, encode, hamming, id_of_slot_key, key_of, nearest, nearest_among, record_key,
    score_table, simhash, slots_among, walk_passing, Code, CODE_WORDS, KEY_BYTES,
};
use super::rows::{exact_scan, read_vectors, rescore_exactly, rowid_of, sort_hits, BEFORE_FIRST_ROWID, IN_CHUNK, PAGE};
use super::snapshot::{count, count_agrees, header_bytes, record_len, snapshot_growth, snapshot_head, Head, SNAPSHOT_MIN, SNAPSHOT_PART};
use super::RESCORE_MARGIN;
use crate::core::error::Result;
use crate::core::ports::{IndexFilter, KnownPassing, Sql, SqlValue};
use rustc_hash::FxHashSet;
use std::collections::HashMap;

/// Slots per block of [`Packed`].
pub(super) const BLOCK: usize = 4096;

/// Heap bytes of a slot map entry (key, slot, control byte, rounded up).
pub(super) const SLOT_ENTRY_BYTES: usize = 40;

/// Heap bytes of the blocks of `n` codes of `dims` dimensions: the first
/// block at the power of two its doubling reached (from
/// [`FIRST_BLOCK_SLOTS`]), or whole blocks past it.
pub(super) fn block_bytes(n: usize, dims: usize) -> usize {
    let slots = match n {
        0 => 0,
        n if n <= BLOCK => n.max(FIRST_BLOCK_SLOTS).checked_next_power_of_two().unwrap_or(BLOCK).min(BLOCK),
        n => n.div_ceil(BLOCK).saturating_mul(BLOCK),
    };
    slots.saturating_mul(slot_bytes(dims))
}

/// Slots the first block starts with: it doubles as it fills, up to
/// [`BLOCK`], so a small profile's codes take what they need (a whole
/// first block is 868 KB at 256 dimensions, whatever the count). At 64
/// slots a profile of a few memories held 13.6 KB of codes, half of all
/// it kept, and a budget of 32 MB held ~1,165 such profiles
/// (`make bench-many`); at 8, 1.7 KB.
pub(super) const FIRST_BLOCK_SLOTS: usize = 8;

/// Heap bytes of one slot of `dims`-dimensional codes: a key, the
/// SimHash, the 4-bit vector and 1/norm.
pub(super) fn slot_bytes(dims: usize) -> usize {
    16 + CODE_WORDS * 8 + dims.div_ceil(2) + 4
}

/// The codes of up to [`BLOCK`] vectors. The blocks after the first are
/// allocated once at their full size: the copy grows a block at a time,
/// without the doubling reallocations (and the Wasm heap they leave
/// behind) of one flat array.
pub(super) struct Block {
    pub(super) keys: Vec<u128>,
    pub(super) simhash: Vec<u64>,
    pub(super) quantized: Vec<u8>,
    pub(super) inv_norm: Vec<f32>,
}

impl Block {
    pub(super) fn new(stride: usize, slots: usize) -> Block {
        Block {
            keys: Vec::with_capacity(slots),
            simhash: Vec::with_capacity(slots * CODE_WORDS),
            quantized: Vec::with_capacity(slots * stride),
            inv_norm: Vec::with_capacity(slots),
        }
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.keys.capacity() * 16 + self.simhash.capacity() * 8 + self.quantized.capacity() + self.inv_norm.capacity() * 4
    }
}

/// Every vector's code, slot-indexed, in blocks; kept in memory between
/// calls. All vectors share one dimension count; vectors of another are
/// left to the exact scan.
#[derive(Default)]
pub struct Packed {
    pub(super) loaded: bool,
    pub(super) dims: usize,
    pub(super) len: usize,
    pub(super) blocks: Vec<Block>,
    pub(super) slot_of: HashMap<u128, u32>,
    /// Ids that are neither hex nor ULIDs (`ids::key_of_id`), by key.
    pub(super) odd: HashMap<u128, String>,
    /// Scratch for the Hamming pass.
    pub(super) dist: Vec<u16>,
    /// Vectors written since the snapshot was taken.
    pub(super) since_snapshot: usize,
    /// Whether `vector_snapshot` holds this copy slot for slot as of its
    /// last write, except the parts in `dirty`: the next snapshot then
    /// rewrites those parts only. Otherwise it is written whole.
    pub(super) snapshot_in_step: bool,
    /// Parts (0-based, of [`Packed::per_part`] slots) changed since.
    pub(super) dirty: std::collections::BTreeSet<usize>,
}

impl Packed {
    pub fn new() -> Packed {
        Packed::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// Whether enough was written since the last snapshot to take another.
    pub(super) fn snapshot_due(&self) -> bool {
        self.len >= SNAPSHOT_MIN && self.odd.is_empty() && self.since_snapshot >= snapshot_growth(self.len)
    }

    /// Forgets everything; the next query reloads from SQLite.
    pub fn clear(&mut self) {
        *self = Packed::default();
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(Block::heap_bytes).sum::<usize>()
            + self.slot_of.capacity() * SLOT_ENTRY_BYTES
            + self.dist.capacity() * 2
            + self.odd.values().map(|s| s.capacity() + 40).sum::<usize>()
    }

    /// What `n` codes of `dims` dimensions hold once loaded, as
    /// [`Packed::heap_bytes`] counts them (the slot map at the capacity a
    /// map of `n` keys has), for an owner that has not loaded them.
    pub fn heap_bytes_for(n: usize, dims: usize) -> usize {
        // A hashbrown map of n keys: buckets a power of two, 7/8 used
        // (under 8 buckets, all but one).
        let capacity = match n {
            0 => 0,
            1..=3 => 3,
            4..=7 => 7,
            n => n.saturating_mul(8).div_ceil(7).checked_next_power_of_two().unwrap_or(usize::MAX) / 8 * 7,
        };
        block_bytes(n, dims).saturating_add(capacity.saturating_mul(SLOT_ENTRY_BYTES)).saturating_add(n.saturating_mul(2))
    }

    /// The codes' dimensions (0 before the first).
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Bytes of one slot's snapshot record: key, 1/norm, SimHash, 4-bit vector.
    pub(super) fn record(&self) -> usize {
        record_len(self.dims)
    }

    /// Slots per snapshot part.
    pub(super) fn per_part(&self) -> usize {
        (SNAPSHOT_PART / self.record()).max(1)
    }

    /// Notes that slot `s` changed (for the next snapshot).
    pub(super) fn touch(&mut self, s: usize) {
        if self.snapshot_in_step {
            let part = s / self.per_part();
            self.dirty.insert(part);
        }
    }

    pub(super) fn stride(&self) -> usize {
        self.dims.div_ceil(2)
    }

    pub(super) fn key(&self, s: usize) -> u128 {
        self.blocks[s / BLOCK].keys[s % BLOCK]
    }

    pub(super) fn quantized_of(&self, s: usize) -> &[u8] {
        let stride = self.stride();
        let i = s % BLOCK;
        &self.blocks[s / BLOCK].quantized[i * stride..(i + 1) * stride]
    }

    pub(super) fn simhash_of(&self, s: usize) -> &[u64] {
        let i = s % BLOCK;
        &self.blocks[s / BLOCK].simhash[i * CODE_WORDS..(i + 1) * CODE_WORDS]
    }

    pub(super) fn inv_norm_of(&self, s: usize) -> f32 {
        self.blocks[s / BLOCK].inv_norm[s % BLOCK]
    }

    /// Appends a slot (the key must be new).
    pub(super) fn push(&mut self, key: u128, simhash: &[u64], quantized: &[u8], inv_norm: f32) {
        if self.len == self.blocks.len() * BLOCK {
            let stride = self.stride();
            let slots = if self.blocks.is_empty() { FIRST_BLOCK_SLOTS } else { BLOCK };
            self.blocks.push(Block::new(stride, slots));
        }
        // A block was pushed above when none had room: never `None`.
        let Some(b) = self.blocks.last_mut() else { return };
        b.keys.push(key);
        b.simhash.extend_from_slice(simhash);
        b.quantized.extend_from_slice(quantized);
        b.inv_norm.push(inv_norm);
        self.slot_of.insert(key, self.len as u32);
        self.touch(self.len);
        self.len += 1;
    }

    /// Adds or replaces one vector's code.
    pub fn insert(&mut self, id: &str, code: &Code) {
        if self.len == 0 {
            if code.dims != self.dims {
                self.snapshot_in_step = false; // another record size
            }
            self.dims = code.dims;
            self.blocks.clear();
        }
        if code.dims != self.dims {
            self.remove(id);
            return;
        }
        let (key, hex) = key_of(id);
        if !hex {
            self.odd.insert(key, id.to_string());
        }
        match self.slot_of.get(&key) {
            Some(&s) => {
                let (stride, s) = (self.stride(), s as usize);
                let (b, i) = (&mut self.blocks[s / BLOCK], s % BLOCK);
                b.simhash[i * CODE_WORDS..(i + 1) * CODE_WORDS].copy_from_slice(&code.simhash);
                b.quantized[i * stride..(i + 1) * stride].copy_from_slice(&code.quantized);
                b.inv_norm[i] = code.inv_norm;
                self.touch(s);
            }
            None => self.push(key, &code.simhash, &code.quantized, code.inv_norm),
        }
    }

    /// Removes one vector (the last slot moves into its place).
    pub fn remove(&mut self, id: &str) {
        let (key, _) = key_of(id);
        let Some(s) = self.slot_of.remove(&key) else { return };
        self.odd.remove(&key);
        let (s, last, stride) = (s as usize, self.len - 1, self.stride());
        self.touch(s);
        self.touch(last);
        if s != last {
            let (k, h, q, n) = (self.key(last), self.simhash_of(last).to_vec(), self.quantized_of(last).to_vec(), self.inv_norm_of(last));
            let (b, i) = (&mut self.blocks[s / BLOCK], s % BLOCK);
            b.keys[i] = k;
            b.simhash[i * CODE_WORDS..(i + 1) * CODE_WORDS].copy_from_slice(&h);
            b.quantized[i * stride..(i + 1) * stride].copy_from_slice(&q);
            b.inv_norm[i] = n;
            self.slot_of.insert(k, s as u32);
        }
        // The last slot's block: there is one, as there is a slot.
        if let Some(b) = self.blocks.last_mut() {
            b.keys.pop();
            b.simhash.truncate(b.keys.len() * CODE_WORDS);
            b.quantized.truncate(b.keys.len() * stride);
            b.inv_norm.pop();
            if b.keys.is_empty() {
                self.blocks.pop();
            }
        }
        self.len = last;
    }

    pub(super) fn id_of(&self, slot: usize) -> String {
        id_of_slot_key(self.key(slot), |k| self.odd.get(k))
    }

    /// Passes 1 and 2: the `keep` ids whose 4-bit vectors score best
    /// against `q`, among the `first_pass` nearest by Hamming distance.
    /// Best first, with the approximate cosine.
    pub fn shortlist(&mut self, q: &[f32], first_pass: usize, keep: usize) -> Vec<(String, f32)> {
        let n = self.len;
        if n == 0 || q.len() != self.dims {
            return vec![];
        }
        // Pass 1: Hamming distances, then a histogram cut at the first_pass-th.
        let candidates: Vec<usize> = if n <= first_pass {
            (0..n).collect()
        } else {
            let qh = simhash(q);
            self.dist.clear();
            for b in &self.blocks {
                self.dist.extend(b.simhash.chunks_exact(CODE_WORDS).map(|c| hamming(c, &qh)));
            }
            nearest(&self.dist, first_pass)
        };
        self.rescore(q, candidates, keep)
    }

    /// Pass 2: the `keep` best of `candidates` by the float query · their
    /// 4-bit vectors, one table lookup per byte; best first, with ids.
    pub(super) fn rescore(&self, q: &[f32], candidates: Vec<usize>, keep: usize) -> Vec<(String, f32)> {
        let (table, qinv) = score_table(q);
        let scored: Vec<(f32, usize)> = candidates.into_iter().map(|s| (dot_quantized(&table, self.quantized_of(s)) * self.inv_norm_of(s) * qinv, s)).collect();
        best(scored, keep).into_iter().map(|(score, s)| (self.id_of(s), score)).collect()
    }

    /// The slots of the memories `ids`, in slot order, found by key.
    pub fn slots_of(&self, ids: &FxHashSet<String>) -> Vec<usize> {
        slots_among(self.len, |s| self.key(s), |k| self.odd.get(k), ids)
    }

    /// [`Packed::shortlist`] over `slots` only ([`Packed::slots_of`]): the
    /// same two passes the index would make holding those slots alone.
    pub fn shortlist_in(&mut self, q: &[f32], first_pass: usize, keep: usize, slots: &[usize]) -> Vec<(String, f32)> {
        if self.len == 0 || q.len() != self.dims {
            return vec![];
        }
        let qh = simhash(q);
        let candidates = nearest_among(slots, |s| hamming(self.simhash_of(s), &qh), first_pass);
        self.rescore(q, candidates, keep)
    }

    /// [`Packed::shortlist`] over the memories `passing` lets through:
    /// the first `first_pass` of them in Hamming order (ties by slot, as
    /// [`nearest`] breaks them), which is the shortlist the index would
    /// draw holding those memories alone. Nothing is read ahead: the
    /// slots are walked nearest first and tested a batch at a time
    /// ([`first_passing`](crate::core::ports::first_passing)); `known` keeps the answers for the next query.
    pub fn shortlist_passing(
        &mut self,
        q: &[f32],
        first_pass: usize,
        keep: usize,
        known: &mut KnownPassing,
        only: &IndexFilter<'_>,
    ) -> Result<Vec<(String, f32)>> {
        if self.len == 0 || q.len() != self.dims {
            return Ok(vec![]);
        }
        let qh = simhash(q);
        self.dist.clear();
        for b in &self.blocks {
            self.dist.extend(b.simhash.chunks_exact(CODE_WORDS).map(|c| hamming(c, &qh)));
        }
        let candidates = walk_passing(&self.dist, first_pass, |s| self.id_of(s), known, only)?;
        Ok(self.rescore(q, candidates, keep))
    }
}

/// Fills `packed`: from the snapshot and the rows written after it when a
/// snapshot exists (tens of milliseconds at 100k vectors), else from every
/// row (about a second at 100k). A snapshot that disagrees with the table
/// (a wipe or bulk delete since) is ignored and rewritten.
pub fn load(sql: &dyn Sql, packed: &mut Packed) -> Result<()> {
    packed.clear();
    // The snapshot is derived data: any failure to read or write it falls
    // back to the rows.
    match read_snapshot(sql, packed).unwrap_or_else(|_| {
        packed.clear();
        None
    }) {
        Some(covered) => {
            let delta = load_rows(sql, packed, covered)?;
            if !count_agrees(sql, packed.len())? {
                packed.clear();
                load_rows(sql, packed, BEFORE_FIRST_ROWID)?;
                packed.since_snapshot = usize::MAX;
            } else {
                packed.since_snapshot = delta;
            }
        }
        None => {
            load_rows(sql, packed, BEFORE_FIRST_ROWID)?;
            packed.since_snapshot = usize::MAX;
        }
    }
    packed.loaded = true;
    if packed.snapshot_due() {
        // Derived data, written when due: a write that fails leaves it due,
        // and the next load or write tries again; the codes in memory are
        // whole either way.
        let _ = write_snapshot(sql, packed);
    }
    Ok(())
}

/// Fills `packed` from every row, ignoring any snapshot (tests compare
/// the two ways).
pub fn load_from_rows(sql: &dyn Sql, packed: &mut Packed) -> Result<()> {
    packed.clear();
    load_rows(sql, packed, BEFORE_FIRST_ROWID)?;
    packed.loaded = true;
    Ok(())
}

/// Reads the codes of rows after rowid `after` (paged, so memory stays
/// bounded); returns how many. Rows written by the first version
/// (sign-bit codes) are recoded from their vectors and rewritten.
pub(super) fn load_rows(sql: &dyn Sql, packed: &mut Packed, mut after: i64) -> Result<usize> {
    let mut stale: Vec<String> = Vec::new();
    let mut n = 0;
    loop {
        let rows = sql
            .query("SELECT rowid, memory_id, code FROM vectors WHERE rowid > ? ORDER BY rowid LIMIT ?", &[SqlValue::Integer(after), SqlValue::Integer(PAGE)])?;
        let Some(last) = rows.last() else { break };
        after = rowid_of(last)?;
        let full = rows.len() as i64 == PAGE;
        n += rows.len();
        for r in rows {
            let id = r.get(1).and_then(SqlValue::as_str).ok_or_else(|| crate::core::error::Error::storage("a stored vector's memory id is not text"))?;
            match r[2].as_blob().and_then(Code::from_bytes) {
                Some(code) => packed.insert(id, &code),
                None => stale.push(id.to_string()),
            }
        }
        if !full {
            break;
        }
    }
    for chunk in stale.chunks(IN_CHUNK) {
        for (id, v) in read_vectors(sql, chunk)? {
            let code = Code::of(&v);
            sql.execute("UPDATE vectors SET code = ? WHERE memory_id = ?", &[SqlValue::Blob(code.to_bytes()), id.as_str().into()])?;
            packed.insert(&id, &code);
        }
    }
    Ok(n)
}

/// Writes the memory copy to `vector_snapshot` as fixed-size records
/// (key, 1/norm, SimHash, 4-bit vector) in parts of at most 512 KB; part 0
/// is the header: magic, dims, count, the last vectors rowid it covers,
/// parts. When the stored snapshot is in step with the copy but for the
/// parts written since, only those parts are written again (new vectors
/// fill the last parts: a snapshot costs what changed, not the whole
/// copy); otherwise the snapshot is written whole.
pub fn write_snapshot(sql: &dyn Sql, packed: &mut Packed) -> Result<()> {
    if !packed.odd.is_empty() {
        return Ok(()); // ids that are neither hex nor ULIDs: rows only
    }
    let covered = count(sql, "SELECT MAX(rowid) FROM vectors", &[])?;
    let (record, per_part, n) = (packed.record(), packed.per_part(), packed.len());
    let parts = n.div_ceil(per_part);
    let header = header_bytes(packed.dims, n, covered, parts);
    // The header goes first out and last in: a snapshot cut short has none
    // and is not read.
    // In step only if the stored snapshot is still there: a hard delete or
    // a wipe through the store removes it without the copy knowing.
    let stored = packed.snapshot_in_step && !sql.query("SELECT 1 FROM vector_snapshot WHERE part = 0", &[])?.is_empty();
    let rewrite: Vec<usize> = if stored {
        sql.execute("DELETE FROM vector_snapshot WHERE part = 0 OR part > ?", &[SqlValue::Integer(parts as i64)])?;
        packed.dirty.iter().copied().filter(|&p| p < parts).collect()
    } else {
        sql.execute("DELETE FROM vector_snapshot", &[])?;
        (0..parts).collect()
    };
    for part in rewrite {
        let (from, to) = (part * per_part, ((part + 1) * per_part).min(n));
        let mut data = Vec::with_capacity((to - from) * record);
        for s in from..to {
            data.extend(packed.key(s).to_le_bytes());
            data.extend(packed.inv_norm_of(s).to_le_bytes());
            for w in packed.simhash_of(s) {
                data.extend(w.to_le_bytes());
            }
            data.extend(packed.quantized_of(s));
        }
        sql.execute("INSERT OR REPLACE INTO vector_snapshot (part, data) VALUES (?, ?)", &[SqlValue::Integer(part as i64 + 1), SqlValue::Blob(data)])?;
    }
    sql.execute("INSERT INTO vector_snapshot (part, data) VALUES (0, ?)", &[SqlValue::Blob(header)])?;
    packed.since_snapshot = 0;
    packed.dirty.clear();
    packed.snapshot_in_step = true;
    Ok(())
}

/// Reads the snapshot into an empty `packed`; the rowid it covers, or
/// `None` without a (readable) snapshot.
pub(super) fn read_snapshot(sql: &dyn Sql, packed: &mut Packed) -> Result<Option<i64>> {
    let Some(Head { dims, n, covered, parts }) = snapshot_head(sql)? else { return Ok(None) };
    let record = record_len(dims);
    packed.dims = dims;
    // The header's count is only believed once the records agree with it
    // (below): a corrupt one must not reserve past Wasm's memory.
    packed.slot_of.reserve(n.min(1 << 16));
    for part in 1..=parts {
        let rows = sql.query("SELECT data FROM vector_snapshot WHERE part = ?", &[SqlValue::Integer(part)])?;
        let Some(data) = rows.first().and_then(|r| r[0].as_blob()) else {
            packed.clear();
            return Ok(None);
        };
        for rec in data.chunks_exact(record) {
            let (key, body) = (record_key(rec), &rec[KEY_BYTES..]);
            if packed.slot_of.contains_key(&key) {
                continue;
            }
            packed.push(key, &body_simhash(body), body_quantized(body), body_inv_norm(body));
        }
    }
    if packed.len() != n {
        packed.clear();
        return Ok(None);
    }
    // Slot for slot what is stored (a repeated key would have made the
    // count differ): later writes only mark their parts.
    packed.snapshot_in_step = true;
    packed.dirty.clear();
    Ok(Some(covered))
}

pub(super) fn upsert_rows(sql: &dyn Sql, items: &[(String, Vec<f32>)], mut packed: Option<&mut Packed>) -> Result<()> {
    // Several rows per statement (three parameters each).
    const ROWS: usize = crate::core::ports::MAX_SQL_PARAMS / 3;
    for chunk in items.chunks(ROWS) {
        let codes: Vec<Code> = chunk.iter().map(|(_, v)| Code::of(v)).collect();
        let mut params = Vec::with_capacity(chunk.len() * 3);
        for ((id, v), code) in chunk.iter().zip(&codes) {
            params.extend([id.into(), SqlValue::Blob(encode(v)), SqlValue::Blob(code.to_bytes())]);
        }
        sql.execute(
            &format!("INSERT OR REPLACE INTO vectors (memory_id, vector, code) VALUES {}", crate::core::store::rows_placeholders(chunk.len(), 3)),
            &params,
        )?;
        if let Some(p) = packed.as_deref_mut().filter(|p| p.loaded) {
            for ((id, _), code) in chunk.iter().zip(&codes) {
                p.insert(id, code);
                p.since_snapshot = p.since_snapshot.saturating_add(1);
            }
        }
    }
    if let Some(p) = packed.filter(|p| p.loaded && p.snapshot_due()) {
        // As in `load`: a snapshot that fails to write stays due.
        let _ = write_snapshot(sql, p);
    }
    Ok(())
}

pub(super) fn delete_rows(sql: &dyn Sql, ids: &[String], mut packed: Option<&mut Packed>) -> Result<()> {
    let mut hard_deleted = false;
    for chunk in ids.chunks(IN_CHUNK) {
        let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
        let ph = crate::core::store::placeholders(chunk.len());
        sql.execute(&format!("DELETE FROM vectors WHERE memory_id IN ({ph})"), &params)?;
        let kept = sql.query(&format!("SELECT COUNT(*) FROM memories WHERE id IN ({ph})"), &params)?;
        hard_deleted |= kept.first().and_then(|r| r[0].as_i64()).unwrap_or(0) < chunk.len() as i64;
    }
    if hard_deleted {
        // A deleted memory leaves no derived copy: the snapshot goes, and
        // is taken again without it.
        sql.execute("DELETE FROM vector_snapshot", &[])?;
        if let Some(p) = packed.as_deref_mut() {
            p.since_snapshot = usize::MAX;
            p.snapshot_in_step = false;
        }
    }
    if let Some(p) = packed {
        ids.iter().for_each(|id| p.remove(id));
    }
    Ok(())
}

/// The three passes over a loaded `packed`, with an explicit first-pass
/// budget (tests pin the recall of small sets at the same ratio as 2,000
/// of 100k).
pub fn search(sql: &dyn Sql, packed: &mut Packed, q: &[f32], top_k: usize, first_pass: usize) -> Result<Vec<(String, f32)>> {
    if top_k == 0 {
        return Ok(vec![]);
    }
    if !packed.loaded {
        load(sql, packed)?;
    }
    if !packed.is_empty() && q.len() != packed.dims {
        return exact_scan(sql, q, top_k);
    }
    let keep = top_k + RESCORE_MARGIN.max(top_k / 2);
    // Pass 3, twice at most: a stale entry found missing is evicted and
    // the shortlist drawn again without it.
    for _ in 0..2 {
        let short = packed.shortlist(q, first_pass.max(keep), keep);
        let ids: Vec<String> = short.iter().map(|(id, _)| id.clone()).collect();
        let mut hits: Vec<(String, f32)> = read_vectors(sql, &ids)?.into_iter().map(|(id, v)| (id, cosine(q, &v))).collect();
        if hits.len() < ids.len() {
            let found: std::collections::HashSet<&str> = hits.iter().map(|(id, _)| id.as_str()).collect();
            let missing: Vec<String> = ids.iter().filter(|id| !found.contains(id.as_str())).cloned().collect();
            missing.iter().for_each(|id| packed.remove(id));
            if missing.len() * 2 > ids.len() {
                // Mostly stale (a wipe, a bulk delete): reload once.
                load(sql, packed)?;
            }
            if hits.len() < top_k.min(packed.len()) {
                continue;
            }
        }
        sort_hits(&mut hits);
        hits.truncate(top_k);
        return Ok(hits);
    }
    exact_scan(sql, q, top_k)
}

/// [`search`] for several queries: a pass over the codes for each, then
/// one read of the union of their shortlists for the exact rescoring.
/// Falls back to [`search`] one by one when a shortlisted entry turns out
/// stale (that path evicts it) or the dimensions are odd.
pub fn search_many(sql: &dyn Sql, packed: &mut Packed, qs: &[Vec<f32>], top_k: usize, first_pass: usize) -> Result<Vec<Vec<(String, f32)>>> {
    if top_k == 0 {
        return Ok(vec![Vec::new(); qs.len()]);
    }
    if !packed.loaded {
        load(sql, packed)?;
    }
    let one_by_one = |packed: &mut Packed| qs.iter().map(|q| search(sql, packed, q, top_k, first_pass)).collect();
    if qs.len() < 2 || packed.is_empty() || qs.iter().any(|q| q.len() != packed.dims) {
        return one_by_one(packed);
    }
    let keep = top_k + RESCORE_MARGIN.max(top_k / 2);
    let shortlists: Vec<Vec<String>> = qs.iter().map(|q| packed.shortlist(q, first_pass.max(keep), keep).into_iter().map(|(id, _)| id).collect()).collect();
    match rescore_exactly(sql, qs, &shortlists, top_k)? {
        (hits, true) => Ok(hits),
        (_, false) => one_by_one(packed),
    }
}
