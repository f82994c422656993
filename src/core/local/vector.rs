//! The local vector index: vectors in the profile's own SQLite (`vectors`
//! table), searched in three passes so a query never reads every vector.
//!
//! Each row keeps the float32 vector (`vector`) and a compact code
//! (`code`, see [`Code`]): a 512-bit SimHash (signs of 512 pseudo-random
//! ±1 projections, computed from a seeded hash, no stored matrix) and the
//! vector quantized to 4 bits per dimension. The codes of every vector are
//! kept in memory as packed arrays ([`Packed`], ~0.25 KB per 256-dim
//! vector, ~25 MB at 100k) by the Durable Object between calls.
//!
//! A query then runs:
//! 1. Hamming distance between the query's SimHash and every code (8
//!    xor+popcount per vector), keeping the nearest [`FIRST_PASS`];
//! 2. the dot product of the float query with those candidates' 4-bit
//!    vectors (near-exact), keeping the best `top_k + RESCORE_MARGIN`;
//! 3. the exact cosine over the float32 vectors of those few, read from
//!    SQLite by id, best `top_k` returned.
//!
//! Sign bits of the raw vector (the previous code) rank poorly here: the
//! feature-hashing embedder's vectors are sparse (most of 256 dimensions
//! are 0), so a projection first spreads every feature over all 512 bits.
//!
//! A cold Durable Object loads the copy from `vector_snapshot` (the packed
//! arrays in 512 KB parts, rewritten after every 10% of growth) plus the
//! rows written since, instead of reading every row.
//!
//! Writes go through the index (upsert/delete) and keep the memory copy in
//! step. Rows deleted by other paths (hard deletes, wipe) leave stale
//! entries that pass 3 finds missing and evicts.

// Exception to the core's panic lints (src/core/mod.rs): the index's
// arithmetic and indexing run over its own packed codes and fixed-size
// vectors, whose lengths are invariants set when they are built
// (tests/vector_index.rs); no caller input indexes them.
#![allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::core::error::Result;
use crate::core::ports::{LocalBoxFuture, Sql, SqlValue, VectorIndex};
use std::cell::RefCell;
use std::collections::HashMap;

/// Bits of the SimHash code.
pub const CODE_BITS: usize = 512;
const CODE_WORDS: usize = CODE_BITS / 64;
/// Candidates kept by the Hamming pass.
pub const FIRST_PASS: usize = 2000;
/// Extra candidates rescored exactly beyond `top_k`.
pub const RESCORE_MARGIN: usize = 24;
/// Code format written by this version (first byte of `code`).
const CODE_FORMAT: u8 = 2;
const HEADER: usize = 1 + 2 + 4;
/// Rows per page when loading codes or scanning vectors.
const PAGE: i64 = 2000;
/// Snapshot parts hold at most this many bytes (a row stays far under the
/// platform's 2 MB).
const SNAPSHOT_PART: usize = 512 * 1024;
/// Profiles with fewer vectors load row by row (fast enough) and keep no
/// snapshot.
pub const SNAPSHOT_MIN: usize = 4096;
const SNAPSHOT_MAGIC: &[u8; 4] = b"VS01";
const SEED: u64 = 0x5eed_0f51_3a5c_0de5;

/// No single SQL statement takes more bound parameters than this.
const IN_CHUNK: usize = crate::core::ports::MAX_SQL_PARAMS;

pub fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn decode(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}


pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The 512-bit SimHash of `v`: bit b is set where Σ_i v_i·r(b, i) > 0,
/// with r(b, i) = ±1 from a seeded hash of (i, b).
///
/// Integer arithmetic, four 16-bit lanes per u64: each nonzero component
/// is scaled to ±q (q ≤ 127, small enough that no lane can overflow) and
/// added as q ± x (never negative, so lanes cannot borrow from each
/// other); a lane's sum is above n·q exactly where the projection is
/// positive. Zero components cost nothing.
pub fn simhash(v: &[f32]) -> [u64; CODE_WORDS] {
    let mut out = [0u64; CODE_WORDS];
    let nz = v.iter().filter(|x| **x != 0.0 && x.is_finite()).count();
    let max = v.iter().filter(|x| x.is_finite()).fold(0f32, |m, x| m.max(x.abs()));
    if nz == 0 || max == 0.0 {
        return out;
    }
    let q = (65_535 / (2 * nz)).clamp(1, 127) as i64;
    let mut acc = [0u64; CODE_BITS / 4];
    let mut offset = 0u64;
    for (i, &x) in v.iter().enumerate() {
        if x == 0.0 || !x.is_finite() {
            continue;
        }
        let xi = ((x / max) * q as f32).round() as i64;
        let (plus, minus) = ((q + xi) as u64, (q - xi) as u64);
        offset += q as u64;
        // table[n]: four lanes, lane l holding q - x where bit l of n is set.
        let mut table = [0u64; 16];
        for (n, t) in table.iter_mut().enumerate() {
            for l in 0..4 {
                *t |= (if (n >> l) & 1 == 1 { minus } else { plus }) << (16 * l);
            }
        }
        for w in 0..CODE_WORDS {
            let signs = splitmix(SEED ^ ((i as u64) << 8 | w as u64));
            let lanes = &mut acc[w * 16..w * 16 + 16];
            for (k, a) in lanes.iter_mut().enumerate() {
                *a += table[((signs >> (4 * k)) & 15) as usize];
            }
        }
    }
    for (g, a) in acc.iter().enumerate() {
        for l in 0..4 {
            if (a >> (16 * l)) & 0xffff > offset {
                let b = g * 4 + l;
                out[b / 64] |= 1 << (b % 64);
            }
        }
    }
    out
}

/// `v` at 4 bits per dimension (-7..=7, scaled to its largest component),
/// two per byte, low nibble first; and 1/|quantized v| (0 for a zero vector).
pub fn quantize4(v: &[f32]) -> (Vec<u8>, f32) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let mut out = vec![0u8; v.len().div_ceil(2)];
    let mut norm2 = 0f32;
    if max > 0.0 {
        for (i, x) in v.iter().enumerate() {
            let q = (x * 7.0 / max).round().clamp(-7.0, 7.0) as i8;
            norm2 += (q as f32) * (q as f32);
            out[i / 2] |= ((q as u8) & 0x0f) << ((i % 2) * 4);
        }
    }
    (out, if norm2 > 0.0 { 1.0 / norm2.sqrt() } else { 0.0 })
}

/// A query's dot product with one 4-bit vector: the sum of
/// `table[p][bytes[p]]`. Four running sums (independent additions) and
/// a byte index into a row of 256 (no bounds check per lookup).
fn dot_quantized(table: &[[f32; 256]], bytes: &[u8]) -> f32 {
    let mut acc = [0f32; 4];
    let (rows4, bytes4) = (table.chunks_exact(4), bytes.chunks_exact(4));
    let (rows_rest, bytes_rest) = (rows4.remainder(), bytes4.remainder());
    for (r, b) in rows4.zip(bytes4) {
        acc[0] += r[0][b[0] as usize];
        acc[1] += r[1][b[1] as usize];
        acc[2] += r[2][b[2] as usize];
        acc[3] += r[3][b[3] as usize];
    }
    let rest: f32 = rows_rest.iter().zip(bytes_rest).map(|(r, &b)| r[b as usize]).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + rest
}

/// The two signed nibbles of every byte, as floats.
fn nibble_table() -> &'static [(f32, f32); 256] {
    static TABLE: std::sync::OnceLock<[(f32, f32); 256]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [(0f32, 0f32); 256];
        for (b, e) in t.iter_mut().enumerate() {
            let lo = ((b as u8) << 4) as i8 >> 4;
            let hi = (b as u8) as i8 >> 4;
            *e = (lo as f32, hi as f32);
        }
        t
    })
}

/// The `code` column: what the first two passes need of one vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Code {
    pub dims: usize,
    pub simhash: [u64; CODE_WORDS],
    pub inv_norm: f32,
    pub quantized: Vec<u8>,
}

impl Code {
    pub fn of(v: &[f32]) -> Code {
        let (quantized, inv_norm) = quantize4(v);
        Code { dims: v.len(), simhash: simhash(v), inv_norm, quantized }
    }

    /// `[format][dims u16][1/norm f32][simhash 64 B][4-bit vector]`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + CODE_WORDS * 8 + self.quantized.len());
        out.push(CODE_FORMAT);
        out.extend((self.dims as u16).to_le_bytes());
        out.extend(self.inv_norm.to_le_bytes());
        for w in self.simhash {
            out.extend(w.to_le_bytes());
        }
        out.extend(&self.quantized);
        out
    }

    /// `None` for another format (the first version's sign bits).
    pub fn from_bytes(b: &[u8]) -> Option<Code> {
        if b.len() < HEADER + CODE_WORDS * 8 || b[0] != CODE_FORMAT {
            return None;
        }
        let dims = u16::from_le_bytes([b[1], b[2]]) as usize;
        let inv_norm = f32::from_le_bytes([b[3], b[4], b[5], b[6]]);
        let mut simhash = [0u64; CODE_WORDS];
        for (w, c) in simhash.iter_mut().zip(b[HEADER..HEADER + CODE_WORDS * 8].chunks_exact(8)) {
            *w = u64::from_le_bytes(c.try_into().ok()?);
        }
        let quantized = b[HEADER + CODE_WORDS * 8..].to_vec();
        (quantized.len() == dims.div_ceil(2)).then_some(Code { dims, simhash, inv_norm, quantized })
    }
}

/// A memory id as 128 bits: ids are 32 lowercase hex characters; anything
/// else is hashed and its text kept aside.
fn key_of(id: &str) -> (u128, bool) {
    if id.len() == 32 {
        if let Ok(k) = u128::from_str_radix(id, 16) {
            if crate::core::ids::is_id(id) {
                return (k, true);
            }
        }
    }
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in id.bytes() {
        h ^= b as u128;
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    (h, false)
}

/// Slots per block of [`Packed`].
const BLOCK: usize = 4096;

/// The codes of up to [`BLOCK`] vectors, each array allocated once at its
/// full size: the copy grows a block at a time, without the doubling
/// reallocations (and the Wasm heap they leave behind) of one flat array.
struct Block {
    keys: Vec<u128>,
    simhash: Vec<u64>,
    quantized: Vec<u8>,
    inv_norm: Vec<f32>,
}

impl Block {
    fn new(stride: usize) -> Block {
        Block {
            keys: Vec::with_capacity(BLOCK),
            simhash: Vec::with_capacity(BLOCK * CODE_WORDS),
            quantized: Vec::with_capacity(BLOCK * stride),
            inv_norm: Vec::with_capacity(BLOCK),
        }
    }
}

/// Every vector's code, slot-indexed, in blocks; kept in memory between
/// calls. All vectors share one dimension count; vectors of another are
/// left to the exact scan.
#[derive(Default)]
pub struct Packed {
    loaded: bool,
    dims: usize,
    len: usize,
    blocks: Vec<Block>,
    slot_of: HashMap<u128, u32>,
    /// Ids that are not 32 hex characters, by key.
    odd: HashMap<u128, String>,
    /// Scratch for the Hamming pass.
    dist: Vec<u16>,
    /// Vectors written since the snapshot was taken.
    since_snapshot: usize,
    /// Whether `vector_snapshot` holds this copy slot for slot as of its
    /// last write, except the parts in `dirty`: the next snapshot then
    /// rewrites those parts only. Otherwise it is written whole.
    snapshot_in_step: bool,
    /// Parts (0-based, of [`Packed::per_part`] slots) changed since.
    dirty: std::collections::BTreeSet<usize>,
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
    fn snapshot_due(&self) -> bool {
        self.len >= SNAPSHOT_MIN && self.odd.is_empty() && self.since_snapshot >= (self.len / 10).max(2000)
    }

    /// Forgets everything; the next query reloads from SQLite.
    pub fn clear(&mut self) {
        *self = Packed::default();
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.blocks.len() * BLOCK * (16 + CODE_WORDS * 8 + self.stride() + 4)
            + self.slot_of.capacity() * 40
            + self.dist.capacity() * 2
            + self.odd.values().map(|s| s.capacity() + 40).sum::<usize>()
    }

    /// Bytes of one slot's snapshot record: key, 1/norm, SimHash, 4-bit vector.
    fn record(&self) -> usize {
        16 + 4 + CODE_WORDS * 8 + self.stride()
    }

    /// Slots per snapshot part.
    fn per_part(&self) -> usize {
        (SNAPSHOT_PART / self.record()).max(1)
    }

    /// Notes that slot `s` changed (for the next snapshot).
    fn touch(&mut self, s: usize) {
        if self.snapshot_in_step {
            let part = s / self.per_part();
            self.dirty.insert(part);
        }
    }

    fn stride(&self) -> usize {
        self.dims.div_ceil(2)
    }

    fn key(&self, s: usize) -> u128 {
        self.blocks[s / BLOCK].keys[s % BLOCK]
    }

    fn quantized_of(&self, s: usize) -> &[u8] {
        let stride = self.stride();
        let i = s % BLOCK;
        &self.blocks[s / BLOCK].quantized[i * stride..(i + 1) * stride]
    }

    fn simhash_of(&self, s: usize) -> &[u64] {
        let i = s % BLOCK;
        &self.blocks[s / BLOCK].simhash[i * CODE_WORDS..(i + 1) * CODE_WORDS]
    }

    fn inv_norm_of(&self, s: usize) -> f32 {
        self.blocks[s / BLOCK].inv_norm[s % BLOCK]
    }

    /// Appends a slot (the key must be new).
    fn push(&mut self, key: u128, simhash: &[u64], quantized: &[u8], inv_norm: f32) {
        if self.len == self.blocks.len() * BLOCK {
            let stride = self.stride();
            self.blocks.push(Block::new(stride));
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

    fn id_of(&self, slot: usize) -> String {
        let k = self.key(slot);
        match self.odd.get(&k) {
            Some(s) => s.clone(),
            None => format!("{k:032x}"),
        }
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
                self.dist.extend(b.simhash.chunks_exact(CODE_WORDS).map(|c| {
                    let mut d = 0u32;
                    for w in 0..CODE_WORDS {
                        d += (c[w] ^ qh[w]).count_ones();
                    }
                    d as u16
                }));
            }
            let mut hist = [0u32; CODE_BITS + 1];
            for &d in &self.dist {
                hist[d as usize] += 1;
            }
            let (mut cut, mut below) = (0usize, 0usize);
            while cut <= CODE_BITS && below + hist[cut] as usize <= first_pass {
                below += hist[cut] as usize;
                cut += 1;
            }
            // Everything closer than `cut`, then ties at `cut` up to the budget.
            let mut at_cut = first_pass - below;
            let mut out = Vec::with_capacity(first_pass);
            for (s, &d) in self.dist.iter().enumerate() {
                let d = d as usize;
                if d < cut {
                    out.push(s);
                } else if d == cut && at_cut > 0 {
                    out.push(s);
                    at_cut -= 1;
                }
            }
            out
        };
        // Pass 2: float query · 4-bit vectors, one table lookup per byte:
        // table[p][b] = q[2p]·lo(b) + q[2p+1]·hi(b).
        let nibbles = nibble_table();
        let stride = self.stride();
        let mut table = vec![[0f32; 256]; stride];
        for (p, row) in table.iter_mut().enumerate() {
            let (a, b) = (q[2 * p], q.get(2 * p + 1).copied().unwrap_or(0.0));
            for (t, (lo, hi)) in row.iter_mut().zip(nibbles.iter()) {
                *t = a * lo + b * hi;
            }
        }
        let qn = q.iter().map(|x| x * x).sum::<f32>().sqrt();
        let qinv = if qn > 0.0 { 1.0 / qn } else { 0.0 };
        let mut scored: Vec<(f32, usize)> = candidates
            .into_iter()
            .map(|s| (dot_quantized(&table, self.quantized_of(s)) * self.inv_norm_of(s) * qinv, s))
            .collect();
        let keep = keep.min(scored.len());
        if keep == 0 {
            return vec![];
        }
        if keep < scored.len() {
            scored.select_nth_unstable_by(keep - 1, |a, b| b.0.total_cmp(&a.0));
            scored.truncate(keep);
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().map(|(score, s)| (self.id_of(s), score)).collect()
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
            let actual = sql.query("SELECT COUNT(*) FROM vectors", &[])?.first().and_then(|r| r[0].as_i64()).unwrap_or(0);
            if (packed.len() as i64 - actual).abs() > (actual / 20).max(64) {
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
fn load_rows(sql: &dyn Sql, packed: &mut Packed, mut after: i64) -> Result<usize> {
    let mut stale: Vec<String> = Vec::new();
    let mut n = 0;
    loop {
        let rows = sql.query(
            "SELECT rowid, memory_id, code FROM vectors WHERE rowid > ? ORDER BY rowid LIMIT ?",
            &[SqlValue::Integer(after), SqlValue::Integer(PAGE)],
        )?;
        let Some(last) = rows.last() else { break };
        after = last[0].as_i64().unwrap_or(i64::MAX);
        let full = rows.len() as i64 == PAGE;
        n += rows.len();
        for r in rows {
            let Some(id) = r[1].as_str() else { continue };
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
        return Ok(()); // ids that are not 32 hex characters: rows only
    }
    let covered = sql.query("SELECT MAX(rowid) FROM vectors", &[])?.first().and_then(|r| r[0].as_i64()).unwrap_or(0);
    let (record, per_part, n) = (packed.record(), packed.per_part(), packed.len());
    let parts = n.div_ceil(per_part);
    let mut header = Vec::with_capacity(22);
    header.extend(SNAPSHOT_MAGIC);
    header.extend((packed.dims as u16).to_le_bytes());
    header.extend((n as u32).to_le_bytes());
    header.extend(covered.to_le_bytes());
    header.extend((parts as u32).to_le_bytes());
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
        sql.execute(
            "INSERT OR REPLACE INTO vector_snapshot (part, data) VALUES (?, ?)",
            &[SqlValue::Integer(part as i64 + 1), SqlValue::Blob(data)],
        )?;
    }
    sql.execute("INSERT INTO vector_snapshot (part, data) VALUES (0, ?)", &[SqlValue::Blob(header)])?;
    packed.since_snapshot = 0;
    packed.dirty.clear();
    packed.snapshot_in_step = true;
    Ok(())
}

/// Reads the snapshot into an empty `packed`; the rowid it covers, or
/// `None` without a (readable) snapshot.
fn read_snapshot(sql: &dyn Sql, packed: &mut Packed) -> Result<Option<i64>> {
    let head = sql.query("SELECT data FROM vector_snapshot WHERE part = 0", &[])?;
    let Some(h) = head.first().and_then(|r| r[0].as_blob()) else { return Ok(None) };
    if h.len() != 22 || &h[0..4] != SNAPSHOT_MAGIC {
        return Ok(None);
    }
    let dims = u16::from_le_bytes([h[4], h[5]]) as usize;
    let n = u32::from_le_bytes([h[6], h[7], h[8], h[9]]) as usize;
    let covered = i64::from_le_bytes(h[10..18].try_into().unwrap_or_default());
    let parts = u32::from_le_bytes([h[18], h[19], h[20], h[21]]) as i64;
    let stride = dims.div_ceil(2);
    let record = 16 + 4 + CODE_WORDS * 8 + stride;
    packed.dims = dims;
    packed.slot_of.reserve(n);
    let mut simhash = [0u64; CODE_WORDS];
    for part in 1..=parts {
        let rows = sql.query("SELECT data FROM vector_snapshot WHERE part = ?", &[SqlValue::Integer(part)])?;
        let Some(data) = rows.first().and_then(|r| r[0].as_blob()) else {
            packed.clear();
            return Ok(None);
        };
        for rec in data.chunks_exact(record) {
            let key = u128::from_le_bytes(rec[0..16].try_into().unwrap_or_default());
            if packed.slot_of.contains_key(&key) {
                continue;
            }
            for (w, b) in simhash.iter_mut().zip(rec[20..20 + CODE_WORDS * 8].chunks_exact(8)) {
                *w = u64::from_le_bytes(b.try_into().unwrap_or_default());
            }
            let inv_norm = f32::from_le_bytes(rec[16..20].try_into().unwrap_or_default());
            packed.push(key, &simhash, &rec[20 + CODE_WORDS * 8..], inv_norm);
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

/// The float vectors of these ids, in one statement.
fn read_vectors(sql: &dyn Sql, ids: &[String]) -> Result<Vec<(String, Vec<f32>)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = sql.query(
        "SELECT v.memory_id, v.vector FROM json_each(?1) j CROSS JOIN vectors v ON v.memory_id = j.value",
        &[crate::core::store::json_param(ids)],
    )?;
    Ok(rows.into_iter().filter_map(|r| Some((r[0].opt_string()?, decode(r[1].as_blob()?)))).collect())
}

/// A rowid below every row of `vectors` (SQLite assigns them from 1).
/// Not `i64::MIN`: that does not survive the trip through a JavaScript
/// number on Durable Object SQL.
pub const BEFORE_FIRST_ROWID: i64 = 0;

/// Exact cosine over every stored vector, paged (the reference the
/// index is measured against, and the fallback for odd dimensions).
pub fn exact_scan(sql: &dyn Sql, q: &[f32], top_k: usize) -> Result<Vec<(String, f32)>> {
    let mut best: Vec<(String, f32)> = Vec::new();
    let mut after = BEFORE_FIRST_ROWID;
    loop {
        let rows = sql.query(
            "SELECT rowid, memory_id, vector FROM vectors WHERE rowid > ? ORDER BY rowid LIMIT ?",
            &[SqlValue::Integer(after), SqlValue::Integer(PAGE)],
        )?;
        let Some(last) = rows.last() else { break };
        after = last[0].as_i64().unwrap_or(i64::MAX);
        let full = rows.len() as i64 == PAGE;
        for r in rows {
            if let (Some(id), Some(b)) = (r[1].opt_string(), r[2].as_blob()) {
                best.push((id, cosine(q, &decode(b))));
            }
        }
        sort_hits(&mut best);
        best.truncate(top_k);
        if !full {
            break;
        }
    }
    Ok(best)
}

/// Best first; equal scores by id, descending (as the brute-force index did).
fn sort_hits(hits: &mut [(String, f32)]) {
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
}

fn upsert_rows(sql: &dyn Sql, items: &[(String, Vec<f32>)], mut packed: Option<&mut Packed>) -> Result<()> {
    // Several rows per statement (three parameters each).
    const ROWS: usize = crate::core::ports::MAX_SQL_PARAMS / 3;
    for chunk in items.chunks(ROWS) {
        let codes: Vec<Code> = chunk.iter().map(|(_, v)| Code::of(v)).collect();
        let mut params = Vec::with_capacity(chunk.len() * 3);
        for ((id, v), code) in chunk.iter().zip(&codes) {
            params.extend([id.into(), SqlValue::Blob(encode(v)), SqlValue::Blob(code.to_bytes())]);
        }
        sql.execute(
            &format!(
                "INSERT OR REPLACE INTO vectors (memory_id, vector, code) VALUES {}",
                crate::core::store::rows_placeholders(chunk.len(), 3)
            ),
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

fn delete_rows(sql: &dyn Sql, ids: &[String], mut packed: Option<&mut Packed>) -> Result<()> {
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
    let shortlists: Vec<Vec<String>> =
        qs.iter().map(|q| packed.shortlist(q, first_pass.max(keep), keep).into_iter().map(|(id, _)| id).collect()).collect();
    let mut union: Vec<String> = shortlists.concat();
    union.sort_unstable();
    union.dedup();
    let vectors: std::collections::HashMap<String, Vec<f32>> = read_vectors(sql, &union)?.into_iter().collect();
    if vectors.len() < union.len() {
        return one_by_one(packed);
    }
    Ok(qs
        .iter()
        .zip(&shortlists)
        .map(|(q, ids)| {
            let mut hits: Vec<(String, f32)> = ids.iter().map(|id| (id.clone(), cosine(q, &vectors[id]))).collect();
            sort_hits(&mut hits);
            hits.truncate(top_k);
            hits
        })
        .collect())
}

/// The local index without a memory copy: every query loads the codes
/// from SQLite first (native tests, one-off use).
pub struct SqlVectorIndex<'a> {
    pub sql: &'a dyn Sql,
}

impl SqlVectorIndex<'_> {
    fn query_now(&self, q: &[f32], top_k: usize) -> Result<Vec<(String, f32)>> {
        search(self.sql, &mut Packed::new(), q, top_k, FIRST_PASS)
    }
}

impl VectorIndex for SqlVectorIndex<'_> {
    fn upsert<'a>(&'a self, items: &'a [(String, Vec<f32>)]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move { upsert_rows(self.sql, items, None) })
    }
    fn delete<'a>(&'a self, ids: &'a [String]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move { delete_rows(self.sql, ids, None) })
    }
    fn query<'a>(&'a self, vector: &'a [f32], top_k: usize) -> LocalBoxFuture<'a, Result<Vec<(String, f32)>>> {
        Box::pin(async move { self.query_now(vector, top_k) })
    }
}

/// The local index with its codes kept in memory across calls (the
/// Durable Object owns the [`Packed`]; it loads on the first query).
pub struct CachedVectorIndex<'a> {
    pub sql: &'a dyn Sql,
    pub packed: &'a RefCell<Packed>,
}

impl VectorIndex for CachedVectorIndex<'_> {
    fn upsert<'a>(&'a self, items: &'a [(String, Vec<f32>)]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move { upsert_rows(self.sql, items, Some(&mut self.packed.borrow_mut())) })
    }
    fn delete<'a>(&'a self, ids: &'a [String]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move { delete_rows(self.sql, ids, Some(&mut self.packed.borrow_mut())) })
    }
    fn query<'a>(&'a self, vector: &'a [f32], top_k: usize) -> LocalBoxFuture<'a, Result<Vec<(String, f32)>>> {
        Box::pin(async move { search(self.sql, &mut self.packed.borrow_mut(), vector, top_k, FIRST_PASS) })
    }
    fn query_many<'a>(&'a self, vectors: &'a [Vec<f32>], top_k: usize) -> LocalBoxFuture<'a, Result<Vec<crate::core::ports::Hits>>> {
        Box::pin(async move { search_many(self.sql, &mut self.packed.borrow_mut(), vectors, top_k, FIRST_PASS) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_code_round_trips_and_rejects_the_old_format() {
        let v: Vec<f32> = (0..256).map(|i| ((i * 37 % 11) as f32 - 5.0) / 10.0).collect();
        let c = Code::of(&v);
        assert_eq!(Code::from_bytes(&c.to_bytes()), Some(c));
        // The first version's code: one sign bit per dimension, no format byte.
        let sign_bits: Vec<u8> = v.chunks(8).map(|c| c.iter().enumerate().fold(0u8, |b, (i, x)| if *x > 0.0 { b | 1 << i } else { b })).collect();
        assert_eq!(Code::from_bytes(&sign_bits), None);
    }

    #[test]
    fn test_packed_remove_moves_the_last_slot() {
        let mut p = Packed::new();
        let ids: Vec<String> = (0..3).map(|i| format!("{i:032x}")).collect();
        for (i, id) in ids.iter().enumerate() {
            let mut v = vec![0f32; 8];
            v[i] = 1.0;
            p.insert(id, &Code::of(&v));
        }
        p.remove(&ids[0]);
        assert_eq!(p.len(), 2);
        let mut q = vec![0f32; 8];
        q[2] = 1.0;
        assert_eq!(p.shortlist(&q, 10, 1)[0].0, ids[2]);
        p.insert("not-hex", &Code::of(&q));
        assert!(p.shortlist(&q, 10, 2).iter().any(|(id, _)| id == "not-hex"));
    }

    #[test]
    fn test_quantize4_keeps_signs_and_scale() {
        let (q, inv) = quantize4(&[1.0, -0.5, 0.0]);
        let t = nibble_table();
        assert_eq!(t[q[0] as usize], (7.0, -4.0));
        assert!((inv - 1.0 / (49f32 + 16.0).sqrt()).abs() < 1e-6);
    }
}
