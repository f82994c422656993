//! A vector's compact code: its 512-bit SimHash and its 4-bit quantized
//! form ([`Code`]), the distances between codes and queries, and a
//! code's body as stored.

use crate::core::error::Result;
use crate::core::ports::{first_passing, IndexFilter, KnownPassing};
use rustc_hash::FxHashSet;

/// Bits of the SimHash code.
pub const CODE_BITS: usize = 512;
pub(super) const CODE_WORDS: usize = CODE_BITS / 64;
/// Code format written by this version (first byte of `code`).
pub(super) const CODE_FORMAT: u8 = 2;
pub(super) const HEADER: usize = 1 + 2 + 4;
pub(super) const SEED: u64 = 0x5eed_0f51_3a5c_0de5;

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

pub(super) fn splitmix(mut z: u64) -> u64 {
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
pub(super) fn dot_quantized(table: &[[f32; 256]], bytes: &[u8]) -> f32 {
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
pub(super) fn nibble_table() -> &'static [(f32, f32); 256] {
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
pub(super) fn hamming(code: &[u64], qh: &[u64; CODE_WORDS]) -> u16 {
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
pub(super) fn nearest(dist: &[u16], first_pass: usize) -> Vec<usize> {
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
pub(super) fn score_table(q: &[f32]) -> (Vec<[f32; 256]>, f32) {
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
pub(super) fn best(mut scored: Vec<(f32, usize)>, keep: usize) -> Vec<(f32, usize)> {
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
pub(super) const BODY_AT: usize = 3;
/// Where the SimHash and the 4-bit vector start in a body.
pub(super) const BODY_SIMHASH: usize = 4;
pub(super) const BODY_QUANTIZED: usize = BODY_SIMHASH + CODE_WORDS * 8;
/// Bytes of a key (a memory id as 128 bits) in a snapshot record.
pub(super) const KEY_BYTES: usize = 16;

/// Bytes of the body of a `dims`-dimensional code.
pub(super) fn body_len(dims: usize) -> usize {
    BODY_QUANTIZED + dims.div_ceil(2)
}

/// The dimension count of a `code` column value in this version's
/// format: `Some` exactly where [`Code::from_bytes`] reads one. Copies
/// nothing.
pub(super) fn code_dims(b: &[u8]) -> Option<usize> {
    if b.len() < HEADER + CODE_WORDS * 8 || b[0] != CODE_FORMAT {
        return None;
    }
    let dims = u16::from_le_bytes([b[1], b[2]]) as usize;
    (b.len() - HEADER - CODE_WORDS * 8 == dims.div_ceil(2)).then_some(dims)
}

pub(super) fn record_key(rec: &[u8]) -> u128 {
    u128::from_le_bytes(rec[..KEY_BYTES].try_into().unwrap_or_default())
}

pub(super) fn body_simhash(body: &[u8]) -> [u64; CODE_WORDS] {
    let mut h = [0u64; CODE_WORDS];
    for (w, b) in h.iter_mut().zip(body[BODY_SIMHASH..BODY_QUANTIZED].chunks_exact(8)) {
        *w = u64::from_le_bytes(b.try_into().unwrap_or_default());
    }
    h
}

pub(super) fn body_inv_norm(body: &[u8]) -> f32 {
    f32::from_le_bytes(body[..BODY_SIMHASH].try_into().unwrap_or_default())
}

pub(super) fn body_quantized(body: &[u8]) -> &[u8] {
    &body[BODY_QUANTIZED..]
}

/// A memory id as 128 bits: an id this service makes (a ULID or 32
/// lowercase hex characters) is its key (`ids::key_of_id`); anything else
/// is hashed and its text kept aside.
pub(super) fn key_of(id: &str) -> (u128, bool) {
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

/// [`nearest`] over `slots` only (in slot order), each at `dist_of` its
/// slot: every one of them when there are no more than `first_pass`.
pub(super) fn nearest_among(slots: &[usize], dist_of: impl Fn(usize) -> u16, first_pass: usize) -> Vec<usize> {
    if slots.len() <= first_pass {
        return slots.to_vec();
    }
    let dist: Vec<u16> = slots.iter().map(|&s| dist_of(s)).collect();
    nearest(&dist, first_pass).into_iter().filter_map(|i| slots.get(i).copied()).collect()
}

/// The id of the slot key `k`: the text kept in `odd` for an id that is
/// neither hex nor a ULID, else the key's own.
pub(super) fn id_of_slot_key<'o>(k: u128, odd: impl FnOnce(&u128) -> Option<&'o String>) -> String {
    odd(&k).cloned().unwrap_or_else(|| crate::core::ids::id_of_key(k))
}

/// The slots (of `n`, each with its `key`) of the memories `ids`, in slot
/// order; `odd` gives the text of an id that is neither hex nor a ULID.
pub(super) fn slots_among<'o>(n: usize, key: impl Fn(usize) -> u128, odd: impl Fn(&u128) -> Option<&'o String>, ids: &FxHashSet<String>) -> Vec<usize> {
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
pub(super) fn walk_passing(
    dist: &[u16],
    first_pass: usize,
    id_of: impl Fn(usize) -> String,
    known: &mut KnownPassing,
    only: &IndexFilter<'_>,
) -> Result<Vec<usize>> {
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
pub(super) fn by_distance(dist: &[u16]) -> Vec<usize> {
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
