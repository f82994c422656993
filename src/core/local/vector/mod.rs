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

mod code;
mod lean;
mod packed;
mod rows;
mod snapshot;

use crate::core::error::Result;
use crate::core::ports::{Hits, IndexFilter, KnownPassing, LocalBoxFuture, Sql, VectorIndex};
use packed::{delete_rows, upsert_rows};
use rows::rescore_exactly;
use std::cell::RefCell;

pub use code::{cosine, decode, encode, quantize4, simhash, Code, CODE_BITS};
pub use lean::{search_lean, search_many_lean, search_many_lean_in};
pub use packed::{load, load_from_rows, search, search_many, write_snapshot, Packed};
pub use rows::{exact_scan, BEFORE_FIRST_ROWID};
pub use snapshot::{maintain_snapshot_lean, LEAN_SNAPSHOT_MIN, SNAPSHOT_MIN};

/// Candidates kept by the Hamming pass.
pub const FIRST_PASS: usize = 2000;
/// Extra candidates rescored exactly beyond `top_k`.
pub const RESCORE_MARGIN: usize = 24;

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
    use super::code::*;
    use super::packed::*;

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
