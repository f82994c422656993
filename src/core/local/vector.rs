//! The local vector index: vectors in the profile's own SQLite (`vectors`
//! table), searched in three passes so a query never reads every vector.
//!
//! Each row keeps the float32 vector (`vector`) and a compact code
//! (`code`, see [`Code`]): a 512-bit SimHash (signs of 512 pseudo-random
//! ±1 projections, computed from a seeded hash, no stored matrix) and the
//! vector quantized to 4 bits per dimension. A warm profile keeps the
//! codes of every vector in memory as packed arrays ([`Packed`], ~0.25 KB
//! per 256-dim vector, ~25 MB at 100k) in the Durable Object between
//! calls ([`CachedVectorIndex`]); a lean profile keeps nothing and
//! streams them for each query (below, [`SqlVectorIndex`]).
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
//!
//! The lean path ([`search_lean`]) runs the same three passes without the
//! copy, so its answers are the ones a freshly loaded copy gives. It reads
//! the codes twice, in the order the copy would hold them: the snapshot
//! one 512 KB part at a time, with the few rows written after it held
//! aside (their codes replace the snapshot's, new ones come last), or,
//! without a snapshot the copy would use, the rows a page at a time. The
//! first read keeps only each vector's Hamming distance (2 bytes a
//! vector: ~200 KB at 100k), the second scores only the candidates it
//! chose. A request holds a few MB at 100k vectors, never every code.
//! A narrowed query ([`search_many_lean_in`]) also keeps each vector's
//! key in the first read (16 bytes a vector), to draw its first pass
//! from the passing memories as the copy does ([`search_passing`]).
//! Without a copy to take them, snapshots are written by
//! [`maintain_snapshot_lean`] (from the rows, a part at a time), which
//! the service runs between requests ([`VectorIndex::maintain`]).

// Exception to the core's panic lints (src/core/mod.rs): the index's
// arithmetic and indexing run over its own packed codes and fixed-size
// vectors, whose lengths are invariants set when they are built
// (tests/vector_index.rs); no caller input indexes them.
#![allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::core::error::{Error, Result};
use crate::core::ports::{first_passing, Hits, IndexFilter, KnownPassing, LocalBoxFuture, Sql, SqlValue, VectorIndex};
use rustc_hash::{FxHashMap, FxHashSet};
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
/// Bytes of the snapshot's header (part 0).
const HEAD_BYTES: usize = 22;
/// Vectors written since the last snapshot that make the next one due
/// (with a tenth of all vectors, whichever is more).
const SNAPSHOT_GROWTH_MIN: usize = 2000;
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

/// Hamming distance between a stored SimHash and a query's (8
/// xor+popcount).
fn hamming(code: &[u64], qh: &[u64; CODE_WORDS]) -> u16 {
    let mut d = 0u32;
    for w in 0..CODE_WORDS {
        d += (code[w] ^ qh[w]).count_ones();
    }
    d as u16
}

/// Pass 1's cut, from the Hamming distance of every slot (in slot order):
/// a histogram finds the `first_pass`-th smallest distance; the slots
/// closer than it are kept, then those at it in slot order up to
/// `first_pass` in all. Ascending slots. Every slot when there are no
/// more than `first_pass`.
fn nearest(dist: &[u16], first_pass: usize) -> Vec<usize> {
    let mut hist = [0u32; CODE_BITS + 1];
    for &d in dist {
        hist[d as usize] += 1;
    }
    let (mut cut, mut below) = (0usize, 0usize);
    while cut <= CODE_BITS && below + hist[cut] as usize <= first_pass {
        below += hist[cut] as usize;
        cut += 1;
    }
    // Everything closer than `cut`, then ties at `cut` up to the budget.
    let mut at_cut = first_pass - below;
    let mut out = Vec::with_capacity(first_pass.min(dist.len()));
    for (s, &d) in dist.iter().enumerate() {
        let d = d as usize;
        if d < cut {
            out.push(s);
        } else if d == cut && at_cut > 0 {
            out.push(s);
            at_cut -= 1;
        }
    }
    out
}

/// Pass 2's lookup table for `q`, `table[p][b] = q[2p]·lo(b) +
/// q[2p+1]·hi(b)` (one row per byte of a 4-bit vector), and 1/|q| (0 for
/// a zero query).
fn score_table(q: &[f32]) -> (Vec<[f32; 256]>, f32) {
    let nibbles = nibble_table();
    let mut table = vec![[0f32; 256]; q.len().div_ceil(2)];
    for (p, row) in table.iter_mut().enumerate() {
        let (a, b) = (q[2 * p], q.get(2 * p + 1).copied().unwrap_or(0.0));
        for (t, (lo, hi)) in row.iter_mut().zip(nibbles.iter()) {
            *t = a * lo + b * hi;
        }
    }
    let qn = q.iter().map(|x| x * x).sum::<f32>().sqrt();
    (table, if qn > 0.0 { 1.0 / qn } else { 0.0 })
}

/// Pass 2's choice: the best `keep` of `(approximate cosine, slot)`, best
/// first. Which of equal scores at the boundary stay depends on the order
/// `scored` comes in (slot order, in every caller).
fn best(mut scored: Vec<(f32, usize)>, keep: usize) -> Vec<(f32, usize)> {
    let keep = keep.min(scored.len());
    if keep == 0 {
        return vec![];
    }
    if keep < scored.len() {
        scored.select_nth_unstable_by(keep - 1, |a, b| b.0.total_cmp(&a.0));
        scored.truncate(keep);
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
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

// A code's body: the `code` column after its format byte and dims, laid
// out as a snapshot record after its key, `[1/norm f32][SimHash 64 B]
// [4-bit vector]`. The lean path reads codes as bodies in place, from
// either source, without building a `Code`.

/// Where the body starts in the `code` column.
const BODY_AT: usize = 3;
/// Where the SimHash and the 4-bit vector start in a body.
const BODY_SIMHASH: usize = 4;
const BODY_QUANTIZED: usize = BODY_SIMHASH + CODE_WORDS * 8;
/// Bytes of a key (a memory id as 128 bits) in a snapshot record.
const KEY_BYTES: usize = 16;

/// Bytes of the body of a `dims`-dimensional code.
fn body_len(dims: usize) -> usize {
    BODY_QUANTIZED + dims.div_ceil(2)
}

/// The dimension count of a `code` column value in this version's
/// format: `Some` exactly where [`Code::from_bytes`] reads one. Copies
/// nothing.
fn code_dims(b: &[u8]) -> Option<usize> {
    if b.len() < HEADER + CODE_WORDS * 8 || b[0] != CODE_FORMAT {
        return None;
    }
    let dims = u16::from_le_bytes([b[1], b[2]]) as usize;
    (b.len() - HEADER - CODE_WORDS * 8 == dims.div_ceil(2)).then_some(dims)
}

fn record_key(rec: &[u8]) -> u128 {
    u128::from_le_bytes(rec[..KEY_BYTES].try_into().unwrap_or_default())
}

fn body_simhash(body: &[u8]) -> [u64; CODE_WORDS] {
    let mut h = [0u64; CODE_WORDS];
    for (w, b) in h.iter_mut().zip(body[BODY_SIMHASH..BODY_QUANTIZED].chunks_exact(8)) {
        *w = u64::from_le_bytes(b.try_into().unwrap_or_default());
    }
    h
}

fn body_inv_norm(body: &[u8]) -> f32 {
    f32::from_le_bytes(body[..BODY_SIMHASH].try_into().unwrap_or_default())
}

fn body_quantized(body: &[u8]) -> &[u8] {
    &body[BODY_QUANTIZED..]
}

/// A memory id as 128 bits: an id this service makes (a ULID or 32
/// lowercase hex characters) is its key (`ids::key_of_id`); anything else
/// is hashed and its text kept aside.
fn key_of(id: &str) -> (u128, bool) {
    if let Some(k) = crate::core::ids::key_of_id(id) {
        return (k, true);
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

/// Heap bytes of a slot map entry (key, slot, control byte, rounded up).
const SLOT_ENTRY_BYTES: usize = 40;

/// Heap bytes of the blocks of `n` codes of `dims` dimensions: the first
/// block at the power of two its doubling reached (from
/// [`FIRST_BLOCK_SLOTS`]), or whole blocks past it.
fn block_bytes(n: usize, dims: usize) -> usize {
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
const FIRST_BLOCK_SLOTS: usize = 8;

/// Heap bytes of one slot of `dims`-dimensional codes: a key, the
/// SimHash, the 4-bit vector and 1/norm.
fn slot_bytes(dims: usize) -> usize {
    16 + CODE_WORDS * 8 + dims.div_ceil(2) + 4
}

/// The codes of up to [`BLOCK`] vectors. The blocks after the first are
/// allocated once at their full size: the copy grows a block at a time,
/// without the doubling reallocations (and the Wasm heap they leave
/// behind) of one flat array.
struct Block {
    keys: Vec<u128>,
    simhash: Vec<u64>,
    quantized: Vec<u8>,
    inv_norm: Vec<f32>,
}

impl Block {
    fn new(stride: usize, slots: usize) -> Block {
        Block {
            keys: Vec::with_capacity(slots),
            simhash: Vec::with_capacity(slots * CODE_WORDS),
            quantized: Vec::with_capacity(slots * stride),
            inv_norm: Vec::with_capacity(slots),
        }
    }

    fn heap_bytes(&self) -> usize {
        self.keys.capacity() * 16 + self.simhash.capacity() * 8 + self.quantized.capacity() + self.inv_norm.capacity() * 4
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
    /// Ids that are neither hex nor ULIDs (`ids::key_of_id`), by key.
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
    fn record(&self) -> usize {
        record_len(self.dims)
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

    fn id_of(&self, slot: usize) -> String {
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
    fn rescore(&self, q: &[f32], candidates: Vec<usize>, keep: usize) -> Vec<(String, f32)> {
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
    /// ([`first_passing`]); `known` keeps the answers for the next query.
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

/// [`nearest`] over `slots` only (in slot order), each at `dist_of` its
/// slot: every one of them when there are no more than `first_pass`.
fn nearest_among(slots: &[usize], dist_of: impl Fn(usize) -> u16, first_pass: usize) -> Vec<usize> {
    if slots.len() <= first_pass {
        return slots.to_vec();
    }
    let dist: Vec<u16> = slots.iter().map(|&s| dist_of(s)).collect();
    nearest(&dist, first_pass).into_iter().filter_map(|i| slots.get(i).copied()).collect()
}

/// The id of the slot key `k`: the text kept in `odd` for an id that is
/// neither hex nor a ULID, else the key's own.
fn id_of_slot_key<'o>(k: u128, odd: impl FnOnce(&u128) -> Option<&'o String>) -> String {
    odd(&k).cloned().unwrap_or_else(|| crate::core::ids::id_of_key(k))
}

/// The slots (of `n`, each with its `key`) of the memories `ids`, in slot
/// order; `odd` gives the text of an id that is neither hex nor a ULID.
fn slots_among<'o>(n: usize, key: impl Fn(usize) -> u128, odd: impl Fn(&u128) -> Option<&'o String>, ids: &FxHashSet<String>) -> Vec<usize> {
    let keys: FxHashSet<u128> = ids.iter().filter_map(|id| crate::core::ids::key_of_id(id)).collect();
    (0..n)
        .filter(|&s| {
            let k = key(s);
            match odd(&k) {
                Some(id) => ids.contains(id),
                None => keys.contains(&k),
            }
        })
        .collect()
}

/// The first `first_pass` slots in Hamming order (`dist`, one per slot;
/// ties by slot) whose memories `only` lets through, tested a batch at a
/// time ([`first_passing`]); in slot order. `known` keeps the answers for
/// the next query.
fn walk_passing(dist: &[u16], first_pass: usize, id_of: impl Fn(usize) -> String, known: &mut KnownPassing, only: &IndexFilter<'_>) -> Result<Vec<usize>> {
    let mut walked = first_passing(
        by_distance(dist),
        first_pass,
        |&s| s,
        |batch: &[usize]| {
            let ids: Vec<String> = batch.iter().map(|&s| id_of(s)).collect();
            known.test(ids.iter().map(String::as_str), only)?;
            Ok(batch.iter().zip(&ids).filter(|(_, id)| known.passes(id)).map(|(&s, _)| s).collect())
        },
    )?;
    walked.sort_unstable();
    Ok(walked)
}

/// Every slot, nearest first by the distances `dist` (one per slot), ties
/// by slot: a counting sort over the [`CODE_BITS`] + 1 distances.
fn by_distance(dist: &[u16]) -> Vec<usize> {
    let mut start = [0usize; CODE_BITS + 2];
    for &d in dist {
        start[d as usize + 1] += 1;
    }
    for d in 1..start.len() {
        start[d] += start[d - 1];
    }
    let mut order = vec![0usize; dist.len()];
    for (s, &d) in dist.iter().enumerate() {
        order[start[d as usize]] = s;
        start[d as usize] += 1;
    }
    order
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
fn load_rows(sql: &dyn Sql, packed: &mut Packed, mut after: i64) -> Result<usize> {
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

/// Part 0 of the snapshot: magic, dims, count, the last vectors rowid it
/// covers, parts.
fn header_bytes(dims: usize, n: usize, covered: i64, parts: usize) -> Vec<u8> {
    let mut header = Vec::with_capacity(HEAD_BYTES);
    header.extend(SNAPSHOT_MAGIC);
    header.extend((dims as u16).to_le_bytes());
    header.extend((n as u32).to_le_bytes());
    header.extend(covered.to_le_bytes());
    header.extend((parts as u32).to_le_bytes());
    header
}

/// Bytes of one snapshot record for vectors of `dims` dimensions: key,
/// then the code's body (1/norm, SimHash, 4-bit vector).
fn record_len(dims: usize) -> usize {
    KEY_BYTES + body_len(dims)
}

/// The snapshot's header (part 0).
struct Head {
    dims: usize,
    /// Records (slots) it holds.
    n: usize,
    /// The last `vectors` rowid it covers.
    covered: i64,
    parts: i64,
}

/// Reads the snapshot's header; `None` without one in this format.
/// Reads no part.
fn snapshot_head(sql: &dyn Sql) -> Result<Option<Head>> {
    let head = sql.query("SELECT data FROM vector_snapshot WHERE part = 0", &[])?;
    let Some(h) = head.first().and_then(|r| r.first()).and_then(SqlValue::as_blob) else { return Ok(None) };
    if h.len() != HEAD_BYTES || &h[0..4] != SNAPSHOT_MAGIC {
        return Ok(None);
    }
    Ok(Some(Head {
        dims: u16::from_le_bytes([h[4], h[5]]) as usize,
        n: u32::from_le_bytes([h[6], h[7], h[8], h[9]]) as usize,
        covered: i64::from_le_bytes(h[10..18].try_into().unwrap_or_default()),
        parts: u32::from_le_bytes([h[18], h[19], h[20], h[21]]) as i64,
    }))
}

/// `load`'s check of a copy built from the snapshot: whether its `slots`
/// agree with the rows of `vectors` (within 5%, or 64). A wipe or bulk
/// delete since the snapshot makes them disagree.
fn count_agrees(sql: &dyn Sql, slots: usize) -> Result<bool> {
    let actual = count(sql, "SELECT COUNT(*) FROM vectors", &[])?;
    Ok((slots as i64 - actual).abs() <= (actual / 20).max(64))
}

/// The single integer a `SELECT COUNT(*)`-like statement yields (0 for
/// NULL; a storage error for a value that is not an integer).
fn count(sql: &dyn Sql, statement: &str, params: &[SqlValue]) -> Result<i64> {
    Ok(crate::core::ports::aggregate_i64(&sql.query(statement, params)?, "a count of vectors")?.unwrap_or(0))
}

/// Reads the snapshot into an empty `packed`; the rowid it covers, or
/// `None` without a (readable) snapshot.
fn read_snapshot(sql: &dyn Sql, packed: &mut Packed) -> Result<Option<i64>> {
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

/// The float vectors of these ids, in one statement.
fn read_vectors(sql: &dyn Sql, ids: &[String]) -> Result<Vec<(String, Vec<f32>)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows =
        sql.query("SELECT v.memory_id, v.vector FROM json_each(?1) j CROSS JOIN vectors v ON v.memory_id = j.value", &[crate::core::store::json_param(ids)])?;
    rows.into_iter()
        .map(|r| match r.as_slice() {
            [SqlValue::Text(id), SqlValue::Blob(b)] => Ok((id.clone(), decode(b))),
            _ => Err(crate::core::error::Error::storage("a stored vector row does not read (memory id and vector)")),
        })
        .collect()
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
        after = rowid_of(last)?;
        let full = rows.len() as i64 == PAGE;
        for r in rows {
            match (r.get(1).and_then(SqlValue::opt_string), r.get(2).and_then(SqlValue::as_blob)) {
                (Some(id), Some(b)) => best.push((id, cosine(q, &decode(b)))),
                _ => return Err(Error::storage("failed to read a stored vector's memory id and bytes")),
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

/// A `vectors` row's rowid (its first column).
fn rowid_of(r: &[SqlValue]) -> Result<i64> {
    r.first().and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("a stored vector's rowid is not an integer"))
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
    let shortlists: Vec<Vec<String>> = qs.iter().map(|q| packed.shortlist(q, first_pass.max(keep), keep).into_iter().map(|(id, _)| id).collect()).collect();
    match rescore_exactly(sql, qs, &shortlists, top_k)? {
        (hits, true) => Ok(hits),
        (_, false) => one_by_one(packed),
    }
}

/// Pass 3 for several queries at once: each of `qs` scored by cosine
/// against the vectors of its shortlist, read for all of them in one
/// statement; best first, `top_k` at most. The flag says whether every
/// shortlisted vector was found (one missing is left out).
fn rescore_exactly(sql: &dyn Sql, qs: &[Vec<f32>], shortlists: &[Vec<String>], top_k: usize) -> Result<(Vec<Hits>, bool)> {
    let mut union: Vec<String> = shortlists.concat();
    union.sort_unstable();
    union.dedup();
    let vectors: FxHashMap<String, Vec<f32>> = read_vectors(sql, &union)?.into_iter().collect();
    let whole = vectors.len() == union.len();
    let hits = qs
        .iter()
        .zip(shortlists)
        .map(|(q, ids)| {
            let mut hits: Vec<(String, f32)> = ids.iter().filter_map(|id| vectors.get(id).map(|v| (id.clone(), cosine(q, v)))).collect();
            sort_hits(&mut hits);
            hits.truncate(top_k);
            hits
        })
        .collect();
    Ok((hits, whole))
}

// The lean path: the three passes of `search` without a memory copy, for
// profiles that keep nothing in memory between requests. The codes are
// streamed from SQLite twice, in the order a fresh `load` would give the
// slots, so the answers are those of `search` on a freshly loaded copy.

/// Vectors written since the last snapshot that make the next one due,
/// for `n` vectors: a tenth, at least [`SNAPSHOT_GROWTH_MIN`].
fn snapshot_growth(n: usize) -> usize {
    (n / 10).max(SNAPSHOT_GROWTH_MIN)
}

/// Vectors from which a profile without its codes in memory keeps a
/// snapshot: every lean query streams the codes, and reading them from the
/// rows costs a value per row (~20 ms at 1,000 vectors in a Durable
/// Object), from the snapshot a value per 512 KB part.
pub const LEAN_SNAPSHOT_MIN: usize = 256;

/// Rows written after the lean snapshot that make the next one due: a
/// tenth of the snapshot, and at least [`LEAN_SNAPSHOT_MIN`] (at most
/// [`snapshot_growth`], which the lean read path allows for).
fn lean_snapshot_growth(n: usize) -> usize {
    (n / 10).max(LEAN_SNAPSHOT_MIN).min(snapshot_growth(n))
}

/// Rows after the snapshot the lean path holds at most, for a snapshot of
/// `n` slots: the growth that makes the next snapshot due, and 2,000 more
/// (writes between upkeep runs); ~260 bytes each at 256 dimensions. With
/// more (upkeep not running), it streams every row instead.
fn newer_cap(n: usize) -> usize {
    snapshot_growth(n) + SNAPSHOT_GROWTH_MIN
}

/// 64 bits of a key, for the set of keys a stream has seen. Both halves
/// folded: a memory id's first half is mostly its creation time.
fn fingerprint(key: u128) -> u64 {
    (key as u64) ^ ((key >> 64) as u64)
}

/// One row's code as the lean path reads it.
struct CodeRow {
    id: String,
    dims: usize,
    /// The `code` column, in this version's format.
    code: Vec<u8>,
}

impl CodeRow {
    fn body(&self) -> &[u8] {
        &self.code[BODY_AT..]
    }
}

/// The codes of up to `limit` rows of `vectors` after rowid `after`, in
/// rowid order; with the last rowid read (`None` past the end) and
/// whether `limit` rows were read. A row whose code is in an older
/// format is recoded from its vector and rewritten, as `load` does, and
/// keeps its place (where a load after the rewrite puts it). A row
/// without a text id is a storage error, as in `load`.
fn code_page(sql: &dyn Sql, after: i64, limit: i64) -> Result<(Vec<CodeRow>, Option<i64>, bool)> {
    let rows =
        sql.query("SELECT rowid, memory_id, code FROM vectors WHERE rowid > ? ORDER BY rowid LIMIT ?", &[SqlValue::Integer(after), SqlValue::Integer(limit)])?;
    let last = rows.last().map(|r| rowid_of(r)).transpose()?;
    let full = rows.len() as i64 == limit;
    let mut out = Vec::with_capacity(rows.len());
    let mut stale: Vec<usize> = Vec::new();
    for row in rows {
        let mut values = row.into_iter().skip(1);
        let (Some(SqlValue::Text(id)), code) = (values.next(), values.next()) else {
            return Err(Error::storage("a stored vector's memory id is not text"));
        };
        let code = match code {
            Some(SqlValue::Blob(code)) => code,
            _ => Vec::new(),
        };
        let dims = code_dims(&code);
        if dims.is_none() {
            stale.push(out.len());
        }
        out.push(CodeRow { id, dims: dims.unwrap_or(0), code });
    }
    for chunk in stale.chunks(IN_CHUNK) {
        let ids: Vec<String> = chunk.iter().map(|&i| out[i].id.clone()).collect();
        let vectors: FxHashMap<String, Vec<f32>> = read_vectors(sql, &ids)?.into_iter().collect();
        for &i in chunk {
            let row = &mut out[i];
            row.code.clear(); // left out unless its vector is read
            if let Some(v) = vectors.get(&row.id) {
                let code = Code::of(v);
                row.code = code.to_bytes();
                row.dims = code.dims;
                sql.execute("UPDATE vectors SET code = ? WHERE memory_id = ?", &[SqlValue::Blob(row.code.clone()), row.id.as_str().into()])?;
            }
        }
    }
    out.retain(|r| !r.code.is_empty());
    Ok((out, last, full))
}

/// The rows written after the snapshot, in rowid order: what `load`
/// inserts into the snapshot's slots (`load_rows`).
struct Newer {
    keys: Vec<u128>,
    /// Key → index in `keys`.
    index: FxHashMap<u128, usize>,
    /// Whether each has the snapshot's dimension count.
    same: Vec<bool>,
    /// Their bodies, [`body_len`] bytes each (zeros for another dimension
    /// count).
    bodies: Vec<u8>,
    /// Ids that are neither hex nor ULIDs (`ids::key_of_id`), by key.
    odd: FxHashMap<u128, String>,
    /// Whether each one's key is in the snapshot (the row then replaces
    /// that record in place); set by the first stream over the parts.
    in_snapshot: Vec<bool>,
}

impl Newer {
    /// Room for `rows` rows of `dims` dimensions, taken once.
    fn with_capacity(rows: usize, dims: usize) -> Newer {
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
    fn add(&mut self, row: &CodeRow, dims: usize) {
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

    fn body(&self, i: usize, dims: usize) -> &[u8] {
        let len = body_len(dims);
        &self.bodies[i * len..(i + 1) * len]
    }
}

/// The snapshot as the lean path reads it: its header, the rows written
/// after it, and what the first stream over its parts found.
struct Snap {
    head: Head,
    newer: Newer,
    /// Ordinals (among all its records) of the records that repeat an
    /// earlier key, skipped as `read_snapshot` skips them.
    repeated: Vec<usize>,
    /// Whether the parts were streamed once (`repeated` and
    /// `newer.in_snapshot` are then known).
    streamed: bool,
}

/// Opens the snapshot and reads the rows written after it (their codes
/// held in memory: a tenth of the vectors at most while snapshot upkeep
/// runs). `None` when there is none to use: no header, or one that
/// cannot be read (as in `load`, the snapshot is derived data), no slot,
/// or more rows after it than [`newer_cap`]. Reads no part.
fn open_snapshot(sql: &dyn Sql) -> Result<Option<Snap>> {
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
type Visit<'v> = dyn FnMut(u128, Option<&str>, &[u8]) + 'v;

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
fn stream_snapshot(sql: &dyn Sql, snap: &mut Snap, f: &mut Visit<'_>) -> Result<Option<usize>> {
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
fn stream_rows(sql: &dyn Sql, dims: usize, f: &mut Visit<'_>) -> Result<usize> {
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
fn first_dims(sql: &dyn Sql) -> Result<Option<usize>> {
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
enum Source {
    Snapshot(Box<Snap>),
    /// Every row; the dimension count they are searched at (`None`: no
    /// row with a code).
    Rows(Option<usize>),
}

impl Source {
    fn rows(sql: &dyn Sql) -> Result<Source> {
        Ok(Source::Rows(first_dims(sql)?))
    }

    fn dims(&self) -> Option<usize> {
        match self {
            Source::Snapshot(s) => Some(s.head.dims),
            Source::Rows(dims) => *dims,
        }
    }

    /// Slots the stream will give at most, as far as known (for reserving).
    fn slots_hint(&self) -> usize {
        match self {
            Source::Snapshot(s) => s.head.n + s.newer.keys.len(),
            Source::Rows(_) => 0,
        }
    }

    /// Calls `f(key, id if neither hex nor a ULID, body)` for every slot,
    /// in the slot order of a fresh `load`. How many slots, or `None` when
    /// the snapshot turns out unusable.
    fn stream(&mut self, sql: &dyn Sql, f: &mut Visit<'_>) -> Result<Option<usize>> {
        match self {
            Source::Snapshot(snap) => stream_snapshot(sql, snap, f),
            Source::Rows(Some(dims)) => stream_rows(sql, *dims, f).map(Some),
            Source::Rows(None) => Ok(Some(0)),
        }
    }
}

/// [`search`]'s three passes for each of `qs` without a memory copy (see
/// [`search_lean`]).
fn lean(sql: &dyn Sql, qs: &[&[f32]], top_k: usize, first_pass: usize) -> Result<Vec<Hits>> {
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
struct HammingPass {
    source: Source,
    dims: usize,
    dist: Vec<Vec<u16>>,
    slots: usize,
}

/// Pass 1: each slot's Hamming distance to each query of the codes'
/// dimension count, 2 bytes a slot; from the snapshot if `load` would use
/// it, else from the rows. `None` when there are no codes. With `keys`,
/// each slot's key as well (16 bytes a slot), for a narrowed search.
fn hamming_pass(sql: &dyn Sql, qs: &[&[f32]], mut keys: Option<&mut SlotKeys>) -> Result<Option<HammingPass>> {
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
fn quantized_pass(sql: &dyn Sql, pass: &mut HammingPass, qs: &[&[f32]], candidates: &[Vec<usize>], keep: usize) -> Result<Option<Vec<Vec<String>>>> {
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
fn exact_pass(sql: &dyn Sql, qs: &[&[f32]], shortlists: &[Vec<String>], dims: usize, slots: usize, top_k: usize) -> Result<Vec<Hits>> {
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

/// [`search`] without a memory copy, for profiles that keep nothing in
/// memory between requests. The same three passes, the codes streamed
/// from SQLite twice in the order a fresh [`load`] gives the slots: the
/// answer is exactly `search`'s on a freshly loaded [`Packed`] (same ids,
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
/// after it held in memory (few while [`maintain_snapshot_lean`] runs);
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
struct SlotKeys {
    keys: Vec<u128>,
    odd: FxHashMap<u128, String>,
}

impl SlotKeys {
    fn push(&mut self, key: u128, odd: Option<&str>) {
        self.keys.push(key);
        if let Some(id) = odd {
            self.odd.insert(key, id.to_string());
        }
    }

    fn id_of(&self, slot: usize) -> String {
        id_of_slot_key(self.keys[slot], |k| self.odd.get(k))
    }

    /// The slots of the memories `ids`, in slot order, as
    /// [`Packed::slots_of`] finds them.
    fn slots_of(&self, ids: &FxHashSet<String>) -> Vec<usize> {
        slots_among(self.keys.len(), |s| self.keys[s], |k| self.odd.get(k), ids)
    }
}

/// [`search_passing`] without a memory copy: for each of `qs`, the
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
/// ([`VectorIndex::query_many_in`]'s default): under a narrow filter
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

/// [`exact_scan`] over the memories `only` lets through: every stored
/// vector ranked, the passing ones kept (a fallback; it holds every id).
fn exact_scan_in(sql: &dyn Sql, q: &[f32], top_k: usize, only: &IndexFilter<'_>) -> Result<Hits> {
    let ranked = exact_scan(sql, q, usize::MAX)?;
    match only.ahead {
        Some(ids) => Ok(ranked.into_iter().filter(|(id, _)| ids.contains(id)).take(top_k).collect()),
        None => first_passing(ranked, top_k, |h| h.0.clone(), |ids: &[String]| (only.passing)(ids)),
    }
}

/// Snapshot upkeep without a memory copy. When the table holds at least
/// [`SNAPSHOT_MIN`] vectors and the rows after the snapshot's covered
/// rowid are at least a tenth of them (and 2,000), rewrites the snapshot
/// whole from the rows, in the format [`write_snapshot`] writes. A
/// snapshot `load` could not use counts as none (every row is after it):
/// a header missing or unreadable, parts missing or of another size than
/// its count, or more of its records gone from the table than `load`'s
/// count check allows (a record rewritten since counts as gone: the
/// check errs towards rewriting). Returns whether it wrote.
///
/// Streams the rows in rowid order a page at a time and writes each part
/// as it fills: one part and one page in memory. The slots are those of a
/// load from the rows (the first row's dimension count; rows with an old
/// code are recoded and rewritten). Writes nothing while an id is of
/// neither form `ids::key_of_id` reads (as `write_snapshot`: such ids are
/// read from the rows).
pub fn maintain_snapshot_lean(sql: &dyn Sql) -> Result<bool> {
    let total = count(sql, "SELECT COUNT(*) FROM vectors", &[])?;
    let n = usize::try_from(total).unwrap_or(0);
    if n < LEAN_SNAPSHOT_MIN || !snapshot_due_lean(sql, n)? {
        return Ok(false);
    }
    // An id of neither form `ids::key_of_id` reads (32 hex characters of a
    // value below 2^127, or a ULID whose top bit is clear): the rows only.
    // (It tested for hex alone, so no profile of ULIDs got a snapshot.)
    let odd = sql.query(
        "SELECT 1 FROM vectors WHERE NOT ( \
           (length(memory_id) = 32 AND memory_id NOT GLOB '*[^0-9a-f]*' AND memory_id < '8') \
           OR (length(memory_id) = 26 AND memory_id NOT GLOB '*[^0-9a-hjkmnp-tv-z]*' AND memory_id < '4')) LIMIT 1",
        &[],
    )?;
    if !odd.is_empty() {
        return Ok(false);
    }
    write_snapshot_from_rows(sql)
}

/// Whether a snapshot is due for a table of `n` vectors (see
/// [`maintain_snapshot_lean`]). Reads the header and counts, no part.
fn snapshot_due_lean(sql: &dyn Sql, n: usize) -> Result<bool> {
    // Derived data: a header that does not read is no snapshot
    // (`snapshot_head`); a failed read of it is the store's error.
    let Some(head) = snapshot_head(sql)? else { return Ok(true) };
    let after = count(sql, "SELECT COUNT(*) FROM vectors WHERE rowid > ?", &[SqlValue::Integer(head.covered)])?;
    let after = usize::try_from(after).unwrap_or(0);
    if after >= lean_snapshot_growth(n) {
        return Ok(true);
    }
    let stored =
        sql.query("SELECT COUNT(*), COALESCE(SUM(length(data)), 0) FROM vector_snapshot WHERE part BETWEEN 1 AND ?", &[SqlValue::Integer(head.parts)])?;
    let (parts, bytes) = stored.first().map_or((0, 0), |r| (r[0].as_i64().unwrap_or(0), r[1].as_i64().unwrap_or(0)));
    // In u64: on Wasm, 4 GiB of snapshot overflows a usize.
    let expected = (head.n as u64).checked_mul(record_len(head.dims) as u64);
    let whole = parts == head.parts && u64::try_from(bytes).ok() == expected;
    // Records whose row at or before `covered` is gone.
    let gone = head.n.saturating_sub(n.saturating_sub(after));
    Ok(!whole || gone > (n / 20).max(64))
}

/// Rewrites the snapshot whole from the rows (see
/// [`maintain_snapshot_lean`]); whether it wrote (not for an empty table
/// or an id that is neither hex nor a ULID).
fn write_snapshot_from_rows(sql: &dyn Sql) -> Result<bool> {
    // The header goes first out and last in: a snapshot cut short has none
    // and is not read.
    sql.execute("DELETE FROM vector_snapshot", &[])?;
    let (mut after, mut dims, mut n, mut parts) = (BEFORE_FIRST_ROWID, None, 0usize, 0usize);
    let mut part: Vec<u8> = Vec::new();
    let write_part = |part: &mut Vec<u8>, parts: &mut usize| -> Result<()> {
        *parts += 1;
        sql.execute(
            "INSERT OR REPLACE INTO vector_snapshot (part, data) VALUES (?, ?)",
            &[SqlValue::Integer(*parts as i64), SqlValue::Blob(std::mem::take(part))],
        )
    };
    loop {
        let (rows, last, full) = code_page(sql, after, PAGE)?;
        for r in &rows {
            let d = *dims.get_or_insert(r.dims);
            if r.dims != d {
                continue; // as a load from the rows leaves it out
            }
            let (key, hex) = key_of(&r.id);
            if !hex {
                sql.execute("DELETE FROM vector_snapshot", &[])?;
                return Ok(false);
            }
            let record = record_len(d);
            let part_bytes = (SNAPSHOT_PART / record).max(1) * record;
            if part.is_empty() {
                part.reserve_exact(part_bytes);
            }
            part.extend(key.to_le_bytes());
            part.extend(r.body());
            n += 1;
            if part.len() >= part_bytes {
                write_part(&mut part, &mut parts)?;
            }
        }
        if let Some(l) = last {
            after = l;
        }
        if !full {
            break;
        }
    }
    if !part.is_empty() {
        write_part(&mut part, &mut parts)?;
    }
    let Some(dims) = dims.filter(|_| n > 0) else { return Ok(false) };
    sql.execute("INSERT INTO vector_snapshot (part, data) VALUES (0, ?)", &[SqlValue::Blob(header_bytes(dims, n, after, parts))])?;
    Ok(true)
}

/// The local index without a memory copy (lean profiles, native tests):
/// every query streams the codes from SQLite ([`search_lean`]); the
/// snapshot is kept by [`VectorIndex::maintain`].
pub struct SqlVectorIndex<'a> {
    pub sql: &'a dyn Sql,
}

impl VectorIndex for SqlVectorIndex<'_> {
    fn upsert<'a>(&'a self, items: &'a [(String, Vec<f32>)]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move { upsert_rows(self.sql, items, None) })
    }
    fn delete<'a>(&'a self, ids: &'a [String]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move { delete_rows(self.sql, ids, None) })
    }
    fn query<'a>(&'a self, vector: &'a [f32], top_k: usize) -> LocalBoxFuture<'a, Result<Vec<(String, f32)>>> {
        Box::pin(async move { search_lean(self.sql, vector, top_k, FIRST_PASS) })
    }
    fn query_many<'a>(&'a self, vectors: &'a [Vec<f32>], top_k: usize) -> LocalBoxFuture<'a, Result<Vec<Hits>>> {
        Box::pin(async move { search_many_lean(self.sql, vectors, top_k, FIRST_PASS) })
    }
    /// The shortlist is drawn from the passing memories only
    /// ([`search_many_lean_in`]), as the copy draws it.
    fn query_many_in<'a>(&'a self, vectors: &'a [Vec<f32>], top_k: usize, only: &'a IndexFilter<'a>) -> LocalBoxFuture<'a, Result<Vec<Hits>>> {
        Box::pin(async move { search_many_lean_in(self.sql, vectors, top_k, FIRST_PASS, only) })
    }
    fn maintain<'a>(&'a self) -> LocalBoxFuture<'a, Result<bool>> {
        Box::pin(async move { maintain_snapshot_lean(self.sql) })
    }
}

/// The local index with its codes kept in memory across calls (the
/// Durable Object owns the [`Packed`]; it loads on the first query).
pub struct CachedVectorIndex<'a> {
    pub sql: &'a dyn Sql,
    pub packed: &'a RefCell<Packed>,
}

/// [`search`] for each of `qs` over the memories `only` lets through:
/// the answer the index would give holding those alone (the shortlist is
/// drawn from them: from their slots when they were read ahead,
/// [`Packed::shortlist_in`], else walking, [`Packed::shortlist_passing`];
/// the exact rescoring reads their vectors). Each memory is tested once
/// for all of `qs`.
pub fn search_passing(sql: &dyn Sql, packed: &mut Packed, qs: &[Vec<f32>], top_k: usize, first_pass: usize, only: &IndexFilter<'_>) -> Result<Vec<Hits>> {
    if top_k == 0 {
        return Ok(vec![Vec::new(); qs.len()]);
    }
    if !packed.loaded {
        load(sql, packed)?;
    }
    let keep = top_k + RESCORE_MARGIN.max(top_k / 2);
    let mut known = KnownPassing::default();
    let ahead = only.ahead.map(|ids| packed.slots_of(ids));
    let mut shortlists = Vec::with_capacity(qs.len());
    for q in qs {
        let short = match &ahead {
            Some(slots) => packed.shortlist_in(q, first_pass.max(keep), keep, slots),
            None => packed.shortlist_passing(q, first_pass.max(keep), keep, &mut known, only)?,
        };
        shortlists.push(short.into_iter().map(|(id, _)| id).collect::<Vec<_>>());
    }
    Ok(rescore_exactly(sql, qs, &shortlists, top_k)?.0)
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
    fn query_many<'a>(&'a self, vectors: &'a [Vec<f32>], top_k: usize) -> LocalBoxFuture<'a, Result<Vec<Hits>>> {
        Box::pin(async move { search_many(self.sql, &mut self.packed.borrow_mut(), vectors, top_k, FIRST_PASS) })
    }
    /// The shortlist is drawn from the passing memories only
    /// ([`search_passing`]).
    fn query_many_in<'a>(&'a self, vectors: &'a [Vec<f32>], top_k: usize, only: &'a IndexFilter<'a>) -> LocalBoxFuture<'a, Result<Vec<Hits>>> {
        Box::pin(async move { search_passing(self.sql, &mut self.packed.borrow_mut(), vectors, top_k, FIRST_PASS, only) })
    }
    /// Nothing while the copy is loaded (it takes its own snapshots as it
    /// is written); else as [`SqlVectorIndex`], without loading it.
    fn maintain<'a>(&'a self) -> LocalBoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            if self.packed.borrow().is_loaded() {
                return Ok(false);
            }
            maintain_snapshot_lean(self.sql)
        })
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

    /// A small profile's codes take what they need: the first block
    /// doubles from 8 slots (a whole one is 868 KB at 256 dimensions),
    /// and later blocks are whole; `heap_bytes_for` says the same.
    #[test]
    fn test_the_first_block_grows_with_its_codes_and_heap_bytes_for_agrees() {
        let mut p = Packed::new();
        let code = |i: usize| {
            let v: Vec<f32> = (0..256).map(|d| if d == i % 256 { 1.0 } else { 0.01 * (d % 7) as f32 }).collect();
            Code::of(&v)
        };
        for n in 1..=(BLOCK + 10) {
            p.insert(&format!("{n:032x}"), &code(n));
            if [1, 8, 9, 64, 65, 1000, BLOCK, BLOCK + 1].contains(&n) {
                let slots = p.blocks.iter().map(|b| b.keys.capacity()).sum::<usize>();
                let want = if n <= BLOCK { n.max(FIRST_BLOCK_SLOTS).next_power_of_two() } else { 2 * BLOCK };
                assert_eq!(slots, want, "{n} codes");
                assert_eq!(Packed::heap_bytes_for(n, 256), p.heap_bytes() + 2 * n - p.dist.capacity() * 2, "{n} codes");
            }
        }
        assert!(Packed::heap_bytes_for(1, 256) < 4 * 1024, "one code: {}", Packed::heap_bytes_for(1, 256));
    }

    #[test]
    fn test_quantize4_keeps_signs_and_scale() {
        let (q, inv) = quantize4(&[1.0, -0.5, 0.0]);
        let t = nibble_table();
        assert_eq!(t[q[0] as usize], (7.0, -4.0));
        assert!((inv - 1.0 / (49f32 + 16.0).sqrt()).abs() < 1e-6);
    }
}
