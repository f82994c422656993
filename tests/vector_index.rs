//! The local vector index (core::local::vector) against exact search.
//!
//! Recall@10 is pinned on two fixed sets: clustered random vectors from a
//! seeded generator, and realistic texts embedded by the local embedder.
//! The sets are small (a test, not a benchmark), so the Hamming pass keeps
//! the same share of them it keeps at 100k vectors (2,000 of 100,000 = 2%);
//! `make bench` measures the real thing at 100k inside the Worker.

mod support;

use agent_memory::core::local::embed::{embed_one, DIMS};
use agent_memory::core::local::vector::{
    cosine, exact_scan, load, load_from_rows, search, search_many, CachedVectorIndex, Packed, SqlVectorIndex, FIRST_PASS, SNAPSHOT_MIN,
};
use agent_memory::core::ports::{Sql, VectorIndex};
use std::cell::RefCell;
use support::{block_on, database, Rng};

/// The largest single allocation this test binary has asked for: a
/// header's claimed count must not size one (whether the host could
/// grant it or not).
static LARGEST_ALLOCATION: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

struct Watching;

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl std::alloc::GlobalAlloc for Watching {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        LARGEST_ALLOCATION.fetch_max(layout.size(), std::sync::atomic::Ordering::Relaxed);
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Watching = Watching;

fn id(i: usize) -> String {
    format!("{i:032x}")
}

fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

/// Exact top-k ids by cosine, computed here from the vectors themselves.
fn exact(vectors: &[Vec<f32>], q: &[f32], k: usize) -> Vec<String> {
    let mut s: Vec<(f32, usize)> = vectors.iter().enumerate().map(|(i, v)| (cosine(q, v), i)).collect();
    s.sort_by(|a, b| b.0.total_cmp(&a.0));
    s.into_iter().take(k).map(|(_, i)| id(i)).collect()
}

/// Stores `vectors` through the index and returns recall@10 of
/// `queries` with the Hamming pass keeping `share` of the set.
fn recall_at_10(vectors: &[Vec<f32>], queries: &[Vec<f32>], share: f64) -> f64 {
    let sql = database();
    let items: Vec<(String, Vec<f32>)> = vectors.iter().enumerate().map(|(i, v)| (id(i), v.clone())).collect();
    block_on(SqlVectorIndex { sql: &sql }.upsert(&items)).unwrap();
    let first_pass = ((vectors.len() as f64 * share).ceil() as usize).max(1);
    let mut packed = Packed::new();
    let mut hit = 0;
    for q in queries {
        let got: Vec<String> = search(&sql, &mut packed, q, 10, first_pass).unwrap().into_iter().map(|(id, _)| id).collect();
        let want = exact(vectors, q, 10);
        hit += want.iter().filter(|w| got.contains(w)).count();
    }
    hit as f64 / (10 * queries.len()) as f64
}

const SHARE: f64 = FIRST_PASS as f64 / 100_000.0;

#[test]
fn test_recall_at_10_on_clustered_random_vectors() {
    let mut rng = Rng(0x00c0_ffee_1234_5678);
    let centers: Vec<Vec<f32>> = (0..60).map(|_| (0..DIMS).map(|_| rng.normal()).collect()).collect();
    let around = |rng: &mut Rng, spread: f32| {
        let c = &centers[rng.below(centers.len())];
        normalized(c.iter().map(|x| x + spread * rng.normal()).collect())
    };
    let vectors: Vec<Vec<f32>> = (0..3000).map(|_| around(&mut rng, 0.9)).collect();
    let queries: Vec<Vec<f32>> = (0..40).map(|_| around(&mut rng, 0.9)).collect();
    let r = recall_at_10(&vectors, &queries, SHARE);
    eprintln!("clustered random vectors: recall@10 {r:.3}");
    assert!(r >= 0.95, "recall@10 {r:.3} on clustered random vectors");
}

#[test]
fn test_recall_at_10_on_embedded_texts() {
    let mut rng = Rng(42);
    let names = ["Caroline", "Melanie", "Jon", "Gina", "Deborah", "Jolene", "Andrew", "Audrey", "Tim", "John"];
    let verbs = ["went to", "painted", "signed up for", "talked about", "bought", "planned", "finished", "visited", "cooked", "joined"];
    let things = [
        "a pottery class",
        "the LGBTQ support group",
        "a charity race",
        "a camping trip in the mountains",
        "the adoption agency",
        "a new dance studio",
        "her first marathon",
        "the farmers market",
        "a sunrise over the lake",
        "a book club about sci-fi",
        "the local animal shelter",
        "a job interview at a bank",
        "a violin concert",
        "his grandmother's recipe",
        "a road trip",
    ];
    let times = ["yesterday", "last week", "on Sunday", "in May 2023", "two years ago", "this morning", "last summer", ""];
    let text = |rng: &mut Rng| {
        let who = names[rng.below(names.len())];
        let what = things[rng.below(things.len())];
        format!(
            "What is known about {what}?\n{who}: I {} {what} {} and it was {}.",
            verbs[rng.below(verbs.len())],
            times[rng.below(times.len())],
            ["great", "hard", "fun", "so powerful", "relaxing"][rng.below(5)]
        )
    };
    let vectors: Vec<Vec<f32>> = (0..3000).map(|_| embed_one(&text(&mut rng))).collect();
    let queries: Vec<Vec<f32>> = (0..40)
        .map(|_| {
            let q = format!("When did {} go to {}?", names[rng.below(names.len())], things[rng.below(things.len())]);
            embed_one(&q)
        })
        .collect();
    let r = recall_at_10(&vectors, &queries, SHARE);
    eprintln!("embedded texts: recall@10 {r:.3}");
    assert!(r >= 0.95, "recall@10 {r:.3} on embedded texts");
}

#[test]
fn test_several_queries_in_one_pass_answer_as_each_alone() {
    let mut rng = Rng(7);
    let vectors: Vec<Vec<f32>> = (0..3000).map(|_| normalized((0..DIMS).map(|_| rng.normal()).collect())).collect();
    let sql = database();
    let items: Vec<(String, Vec<f32>)> = vectors.iter().enumerate().map(|(i, v)| (id(i), v.clone())).collect();
    block_on(SqlVectorIndex { sql: &sql }.upsert(&items)).unwrap();
    let mut packed = Packed::new();
    for _ in 0..5 {
        let qs: Vec<Vec<f32>> = (0..3).map(|_| vectors[rng.below(vectors.len())].clone()).collect();
        let together = search_many(&sql, &mut packed, &qs, 20, 300).unwrap();
        let alone: Vec<Vec<(String, f32)>> = qs.iter().map(|q| search(&sql, &mut packed, q, 20, 300).unwrap()).collect();
        assert_eq!(together, alone);
        assert_eq!(together[0].len(), 20);
    }
    // Through the trait, on the index a Durable Object keeps.
    let cell = RefCell::new(Packed::new());
    let index = CachedVectorIndex { sql: &sql, packed: &cell };
    let qs = vec![vectors[1].clone(), vectors[2].clone()];
    let hits = block_on(index.query_many(&qs, 5)).unwrap();
    assert_eq!((hits[0][0].0.as_str(), hits[1][0].0.as_str()), (id(1).as_str(), id(2).as_str()));
}

#[test]
fn test_small_sets_are_searched_exactly() {
    let mut rng = Rng(7);
    let vectors: Vec<Vec<f32>> = (0..300).map(|_| normalized((0..DIMS).map(|_| rng.normal()).collect())).collect();
    let sql = database();
    let items: Vec<(String, Vec<f32>)> = vectors.iter().enumerate().map(|(i, v)| (id(i), v.clone())).collect();
    let index = SqlVectorIndex { sql: &sql };
    block_on(index.upsert(&items)).unwrap();
    for q in vectors.iter().take(10) {
        let got = block_on(index.query(q, 10)).unwrap();
        let want = exact_scan(&sql, q, 10).unwrap();
        assert_eq!(got.iter().map(|h| &h.0).collect::<Vec<_>>(), want.iter().map(|h| &h.0).collect::<Vec<_>>());
        assert!((got[0].1 - 1.0).abs() < 1e-5, "scores are exact cosines");
    }
}

#[test]
fn test_memory_copy_follows_writes_and_heals_after_outside_deletes() {
    let sql = database();
    let packed = RefCell::new(Packed::new());
    let index = CachedVectorIndex { sql: &sql, packed: &packed };
    let v = |s: &str| embed_one(s);
    let items = vec![
        (id(1), v("The user prefers dark roast coffee")),
        (id(2), v("The user's dog is called Biscuit")),
        (id(3), v("Coffee with oat milk in the morning")),
    ];
    block_on(index.upsert(&items)).unwrap();
    let q = v("What coffee does the user like?");
    assert_eq!(block_on(index.query(&q, 1)).unwrap()[0].0, id(1));
    assert_eq!(packed.borrow().len(), 3, "the first query loaded the codes");

    // Writes through the index keep the copy in step.
    block_on(index.upsert(&[(id(4), v("The user likes dark roast coffee best"))])).unwrap();
    block_on(index.delete(&[id(1)])).unwrap();
    assert_eq!(packed.borrow().len(), 3);
    let ids: Vec<String> = block_on(index.query(&q, 3)).unwrap().into_iter().map(|h| h.0).collect();
    assert!(ids.contains(&id(4)) && !ids.contains(&id(1)));

    // A row deleted behind the index's back (hard delete, wipe) is never
    // returned, and leaves the memory copy at the next query.
    sql.execute("DELETE FROM vectors WHERE memory_id = ?", &[id(4).into()]).unwrap();
    let ids: Vec<String> = block_on(index.query(&q, 3)).unwrap().into_iter().map(|h| h.0).collect();
    assert!(!ids.contains(&id(4)));
    assert_eq!(ids.len(), 2);
    assert_eq!(packed.borrow().len(), 2);

    // Rows in the first version's format (sign bits) are recoded on load.
    sql.execute("UPDATE vectors SET code = x'0f'", &[]).unwrap();
    let fresh = RefCell::new(Packed::new());
    let index = CachedVectorIndex { sql: &sql, packed: &fresh };
    assert_eq!(block_on(index.query(&q, 1)).unwrap()[0].0, id(3));
    assert_eq!(fresh.borrow().len(), 2);

    // A query of another dimension falls back to the exact scan.
    assert!(block_on(index.query(&[1.0, 0.0], 1)).unwrap().len() <= 1);
}

/// A unit vector of 16 random dimensions.
fn random_vector(rng: &mut Rng) -> Vec<f32> {
    normalized((0..16).map(|_| rng.normal()).collect())
}

/// A random vector for each id of `ids`.
fn random_items(rng: &mut Rng, ids: std::ops::Range<usize>) -> Vec<(String, Vec<f32>)> {
    ids.map(|i| (id(i), random_vector(rng))).collect()
}

/// Loads the resident copy (empty), then upserts `n` random vectors
/// through it in batches of 500, as the alarm does: past
/// [`SNAPSHOT_MIN`] the copy writes its snapshot.
fn fill_through_the_cache(sql: &dyn Sql, rng: &mut Rng, n: usize) {
    let packed = RefCell::new(Packed::new());
    let index = CachedVectorIndex { sql, packed: &packed };
    block_on(index.query(&random_vector(rng), 1)).unwrap();
    for batch in random_items(rng, 0..n).chunks(500) {
        block_on(index.upsert(batch)).unwrap();
    }
}

#[test]
fn test_cold_start_reads_the_snapshot_and_the_rows_after_it() {
    let sql = database();
    let mut rng = Rng(11);
    let n = SNAPSHOT_MIN + 2500;
    fill_through_the_cache(&sql, &mut rng, n);
    let parts = |sql: &dyn Sql| sql.query("SELECT COUNT(*) FROM vector_snapshot", &[]).unwrap()[0][0].as_i64().unwrap();
    assert!(parts(&sql) > 1, "a snapshot was taken once the copy grew past {SNAPSHOT_MIN}");

    // Rows written after the snapshot, then a cold start.
    let more = random_items(&mut rng, n..n + 300);
    block_on(SqlVectorIndex { sql: &sql }.upsert(&more)).unwrap();
    let (mut cold, mut rows) = (Packed::new(), Packed::new());
    load(&sql, &mut cold).unwrap();
    load_from_rows(&sql, &mut rows).unwrap();
    assert_eq!(cold.len(), n + 300);
    let q = random_vector(&mut rng);
    assert_eq!(cold.shortlist(&q, 500, 20), rows.shortlist(&q, 500, 20));

    // A wipe behind the index's back: the snapshot no longer agrees with
    // the table and is not used.
    sql.execute("DELETE FROM vectors", &[]).unwrap();
    let mut after_wipe = Packed::new();
    load(&sql, &mut after_wipe).unwrap();
    assert_eq!(after_wipe.len(), 0);
}

#[test]
fn test_a_snapshot_header_claiming_too_many_records_is_read_from_the_rows() {
    let sql = database();
    let mut rng = Rng(12);
    let n = SNAPSHOT_MIN + 100;
    fill_through_the_cache(&sql, &mut rng, n);
    // The header (part 0) says u32::MAX records: reserving for them would
    // ask more than Wasm's whole memory.
    let mut head = sql.query("SELECT data FROM vector_snapshot WHERE part = 0", &[]).unwrap()[0][0].as_blob().unwrap().to_vec();
    head[6..10].copy_from_slice(&u32::MAX.to_le_bytes());
    sql.execute("UPDATE vector_snapshot SET data = ? WHERE part = 0", &[agent_memory::core::ports::SqlValue::Blob(head)]).unwrap();
    let mut cold = Packed::new();
    load(&sql, &mut cold).unwrap();
    assert_eq!(cold.len(), n, "the rows, not the header, decide");
    let largest = LARGEST_ALLOCATION.load(std::sync::atomic::Ordering::Relaxed);
    assert!(largest < 1 << 30, "no allocation sized by the header's count: {largest} bytes");
}

#[test]
fn test_a_hard_delete_drops_the_snapshot() {
    let sql = database();
    sql.execute("INSERT INTO vector_snapshot (part, data) VALUES (0, x'00')", &[]).unwrap();
    let index = SqlVectorIndex { sql: &sql };
    block_on(index.upsert(&[(id(1), embed_one("some memory"))])).unwrap();
    // No memory row with this id: it was hard-deleted.
    block_on(index.delete(&[id(1)])).unwrap();
    assert!(sql.query("SELECT 1 FROM vector_snapshot", &[]).unwrap().is_empty());
}

#[test]
fn test_a_snapshot_rewrites_only_the_parts_that_changed_and_loads_as_the_rows_do() {
    let sql = database();
    let packed = RefCell::new(Packed::new());
    let index = CachedVectorIndex { sql: &sql, packed: &packed };
    let mut rng = Rng(23);
    block_on(index.query(&random_vector(&mut rng), 1)).unwrap(); // loads (empty)
                                                                 // Sixteen dimensions: a record is 92 bytes, a part ~5,700 slots.
    let n = 20_000;
    let items = random_items(&mut rng, 0..n);
    for batch in items.chunks(1000) {
        block_on(index.upsert(batch)).unwrap();
    }
    let stored = |sql: &dyn Sql| -> Vec<(i64, Vec<u8>)> {
        sql.query("SELECT part, data FROM vector_snapshot WHERE part > 0 ORDER BY part", &[])
            .unwrap()
            .into_iter()
            .map(|r| (r[0].as_i64().unwrap(), r[1].as_blob().unwrap().to_vec()))
            .collect()
    };
    let before = stored(&sql);
    assert!(before.len() >= 4, "a snapshot of several parts, not {}", before.len());

    // Memories that stay (forgotten, not deleted): removing their vectors
    // moves the last slots into theirs.
    for i in [5, 6] {
        sql.execute(
            "INSERT INTO memories (id, type, summary, content, session_id, source_message_ids, search_queries, status, fingerprint, created_at, updated_at) \
             VALUES (?, 'fact', 's', 'c', 'x', '[]', '[]', 'forgotten', ?, '2026-01-01', '2026-01-01')",
            &[id(i).into(), id(i).into()],
        )
        .unwrap();
    }
    // The same copy, its snapshot writes counted.
    // The snapshot parts written (the header is part 0).
    let counting = support::Recorded::new(&sql, |s| s.contains("INTO vector_snapshot") && !s.contains("VALUES (0,"));
    let index = CachedVectorIndex { sql: &counting, packed: &packed };
    block_on(index.delete(&[id(5), id(6)])).unwrap();
    // Replaced vectors, then enough new ones for the next snapshot.
    block_on(index.upsert(&[(id(7), random_vector(&mut rng)), (id(8), random_vector(&mut rng))])).unwrap();
    let more = random_items(&mut rng, n..n + 2100);
    block_on(index.upsert(&more)).unwrap();
    assert_eq!(counting.seen.borrow().len(), 2, "the first part (removals, replacements) and the last (new vectors, moved slots) only");

    let after = stored(&sql);
    let bytes = |parts: &[(i64, Vec<u8>)]| parts.iter().map(|p| p.1.len()).sum::<usize>();
    assert!(bytes(&after) > bytes(&before), "the new vectors are in the snapshot");
    let unchanged = before.iter().filter(|p| after.contains(p)).count();
    assert_eq!(unchanged, before.len() - 2, "the parts between are as they were");

    // A cold start reads the snapshot and agrees with the rows.
    let (mut cold, mut rows) = (Packed::new(), Packed::new());
    load(&sql, &mut cold).unwrap();
    load_from_rows(&sql, &mut rows).unwrap();
    assert_eq!(cold.len(), n + 2100 - 2);
    assert_eq!(cold.len(), rows.len());
    for _ in 0..5 {
        let q = random_vector(&mut rng);
        assert_eq!(cold.shortlist(&q, 500, 20), rows.shortlist(&q, 500, 20));
    }
    let mut fresh = Packed::new();
    load(&sql, &mut fresh).unwrap();
    assert!(!stored(&sql).is_empty(), "loading an up-to-date snapshot keeps it");

    // A snapshot removed behind the copy's back (the store's wipe or hard
    // delete) is written whole at the next one, not in parts.
    sql.execute("DELETE FROM vector_snapshot", &[]).unwrap();
    let again = random_items(&mut rng, n + 2100..n + 4700);
    block_on(index.upsert(&again)).unwrap();
    let slots = n + 4700 - 2;
    assert_eq!(bytes(&stored(&sql)), slots * (16 + 4 + 64 + 8), "every slot's 92-byte record is stored");
}

#[test]
fn test_rescoring_reads_vectors_back_bit_for_bit() {
    // Wide vectors (3,072 dimensions) with values a round trip through
    // text could change: negative zero, subnormals, large finite floats.
    let mut rng = Rng(11);
    let specials = [-0.0f32, 1e-40, -1e-42, f32::MAX / 4.0, f32::MIN_POSITIVE];
    let vectors: Vec<Vec<f32>> =
        (0..200).map(|_| (0..3072).map(|d| if d % 97 == 0 { specials[rng.below(specials.len())] } else { rng.normal() }).collect()).collect();
    let sql = database();
    let items: Vec<(String, Vec<f32>)> = vectors.iter().enumerate().map(|(i, v)| (id(i), v.clone())).collect();
    block_on(SqlVectorIndex { sql: &sql }.upsert(&items)).unwrap();
    let mut packed = Packed::new();
    for q in vectors.iter().take(3) {
        // 150 hits, each rescored from its stored floats.
        let hits = search(&sql, &mut packed, q, 150, 300).unwrap();
        assert_eq!(hits.len(), 150);
        for (hit, score) in hits {
            let i: usize = usize::from_str_radix(&hit, 16).unwrap();
            assert_eq!(score.to_bits(), cosine(q, &vectors[i]).to_bits(), "{hit}: the stored floats, read back exactly");
        }
    }
}
