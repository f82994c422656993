//! The lean vector search (core::local::vector::search_lean): the three
//! passes without a memory copy, against `search` on a freshly loaded
//! copy, and the snapshot upkeep that runs without one.
//!
//! The sets are big enough for the Hamming pass to cut (6,000 vectors of
//! 256 dimensions, 200 kept), with duplicated vectors so that equal
//! scores meet at every cut, and a snapshot of several parts.

mod support;

use agent_memory::core::error::Result;
use agent_memory::core::local::vector::{
    exact_scan, load, maintain_snapshot_lean, search, search_lean, search_many, search_many_lean, search_many_lean_in, search_passing, CachedVectorIndex,
    Packed, SqlVectorIndex, LEAN_SNAPSHOT_MIN,
};
use agent_memory::core::ports::{Hits, IndexFilter, LocalBoxFuture, Row, Sql, SqlValue, VectorIndex};
use rustc_hash::FxHashSet;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use support::{block_on, database, NativeSql, Rng};

const DIMS: usize = 256;
const N: usize = 6000;
const FIRST_PASS: usize = 200;

fn id(i: usize) -> String {
    format!("{i:032x}")
}

fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

/// Clustered vectors around 40 centers; every 25th repeats an earlier one
/// (same vector, another id: equal distances and scores).
struct Data {
    rng: Rng,
    centers: Vec<Vec<f32>>,
}

impl Data {
    fn new(seed: u64) -> Data {
        let mut rng = Rng(seed);
        let centers = (0..40).map(|_| (0..DIMS).map(|_| rng.normal()).collect()).collect();
        Data { rng, centers }
    }

    fn vector(&mut self) -> Vec<f32> {
        let c = &self.centers[self.rng.below(self.centers.len())];
        let rng = &mut self.rng;
        normalized(c.iter().map(|x| x + 0.8 * rng.normal()).collect())
    }

    fn items(&mut self, ids: std::ops::Range<usize>) -> Vec<(String, Vec<f32>)> {
        let mut out: Vec<(String, Vec<f32>)> = Vec::new();
        for i in ids {
            let v = if i % 25 == 24 && !out.is_empty() { out[self.rng.below(out.len())].1.clone() } else { self.vector() };
            out.push((id(i), v));
        }
        out
    }

    /// Stored vectors, new ones, and a zero vector (every score equal).
    fn queries(&mut self, stored: &[(String, Vec<f32>)]) -> Vec<Vec<f32>> {
        let mut qs: Vec<Vec<f32>> = (0..4).map(|_| stored[self.rng.below(stored.len())].1.clone()).collect();
        qs.extend((0..4).map(|_| self.vector()));
        qs.push(vec![0.0; DIMS]);
        qs
    }
}

fn store(sql: &dyn Sql, items: &[(String, Vec<f32>)]) {
    let index = SqlVectorIndex { sql };
    for chunk in items.chunks(1000) {
        block_on(index.upsert(chunk)).unwrap();
    }
}

/// `search` on a copy loaded now (which may write a snapshot).
fn fresh(sql: &dyn Sql, qs: &[Vec<f32>], top_k: usize) -> Vec<Hits> {
    let mut packed = Packed::new();
    load(sql, &mut packed).unwrap();
    qs.iter().map(|q| search(sql, &mut packed, q, top_k, FIRST_PASS).unwrap()).collect()
}

fn lean(sql: &dyn Sql, qs: &[Vec<f32>], top_k: usize) -> Vec<Hits> {
    qs.iter().map(|q| search_lean(sql, q, top_k, FIRST_PASS).unwrap()).collect()
}

fn snapshot_parts(sql: &dyn Sql) -> Vec<(i64, Vec<u8>)> {
    sql.query("SELECT part, data FROM vector_snapshot ORDER BY part", &[])
        .unwrap()
        .into_iter()
        .map(|r| (r[0].as_i64().unwrap(), r[1].as_blob().unwrap().to_vec()))
        .collect()
}

/// SQL that tells which way the lean path read the codes: snapshot parts
/// read, and code rows read from `vectors`.
struct Reads<'a> {
    inner: &'a NativeSql,
    parts: Cell<usize>,
    code_rows: Cell<usize>,
}

impl<'a> Reads<'a> {
    fn new(inner: &'a NativeSql) -> Reads<'a> {
        Reads { inner, parts: Cell::new(0), code_rows: Cell::new(0) }
    }
    fn take(&self) -> (usize, usize) {
        (self.parts.replace(0), self.code_rows.replace(0))
    }
}

impl Sql for Reads<'_> {
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>> {
        let rows = self.inner.query(sql, params)?;
        if sql.contains("FROM vector_snapshot WHERE part = ?") {
            self.parts.set(self.parts.get() + 1);
        }
        if sql.contains("SELECT rowid, memory_id, code FROM vectors") {
            self.code_rows.set(self.code_rows.get() + rows.len());
        }
        Ok(rows)
    }
    fn transaction(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        self.inner.transaction(f)
    }
    fn database_size(&self) -> i64 {
        self.inner.database_size()
    }
}

#[test]
fn test_lean_search_answers_as_a_freshly_loaded_copy_with_and_without_a_snapshot() {
    let sql = database();
    let reads = Reads::new(&sql);
    let mut data = Data::new(0x1ea_0001);
    let mut items = data.items(0..N);
    // Forty copies of one vector: more equal scores than a shortlist
    // keeps, so which copies it keeps depends on the slot order.
    let a = data.vector();
    items[100..140].iter_mut().for_each(|i| i.1 = a.clone());
    store(&sql, &items);
    let mut qs = data.queries(&items);
    qs.push(a);
    assert!(snapshot_parts(&sql).is_empty());

    // No snapshot: the rows, a page at a time.
    for top_k in [10, 40] {
        let got = lean(&reads, &qs, top_k);
        let (parts, code_rows) = reads.take();
        assert_eq!((parts, code_rows), (0, 2 * N * qs.len() + qs.len()), "two streams over the rows per query (and the first row's dims)");
        let want = fresh(&sql, &qs, top_k); // writes the snapshot (due)
        assert_eq!(got, want, "top {top_k}, from the rows");
        assert!(got.iter().take(8).all(|h| h.len() == top_k));
        sql.execute("DELETE FROM vector_snapshot", &[]).unwrap();
    }
    let want = fresh(&sql, &qs, 10);
    let parts = snapshot_parts(&sql);
    assert!(parts.len() >= 3, "loading wrote a snapshot of several parts, not {}", parts.len());

    // The snapshot, nothing written since: no row read.
    let got = lean(&reads, &qs, 10);
    let (part_reads, code_rows) = reads.take();
    assert_eq!((part_reads, code_rows), (2 * (parts.len() - 1) * qs.len(), 0));
    assert_eq!(got, want, "from the snapshot");

    // Rows written after the snapshot: new ids, rewritten ids (in place),
    // ids that are not 32 hex characters.
    let mut qs = data.queries(&items);
    let b = data.vector();
    qs.push(b.clone());
    let mut more = data.items(N..N + 150);
    more[10..50].iter_mut().for_each(|i| i.1 = b.clone());
    for i in (0..N).step_by(50) {
        more.push((id(i), if i % 100 == 0 && i < 4000 { b.clone() } else { data.vector() }));
    }
    more.push(("note-about-coffee".into(), qs[4].clone()));
    more.push(("NOT-HEX-00000000000000000000000000".into(), data.vector()));
    store(&sql, &more);
    for top_k in [10, 40] {
        let got = lean(&reads, &qs, top_k);
        let (part_reads, code_rows) = reads.take();
        assert!(part_reads > 0 && code_rows == more.len() * qs.len(), "the snapshot and the rows after it, read once per query");
        assert_eq!(got, fresh(&sql, &qs, top_k), "top {top_k}, from the snapshot and the rows after it");
        assert!(got[4].iter().any(|h| h.0 == "note-about-coffee"), "an id that is not hex is found under its own text");
    }
    assert_eq!(parts, snapshot_parts(&sql), "neither path rewrote the snapshot");

    // Records repeated in the snapshot (its count still right): skipped,
    // as `load` skips them. The first two of part 1 (ids 0 and 1; id 0
    // was rewritten since) again at the end of part 2.
    let record = 16 + 4 + 64 + DIMS / 2;
    assert_eq!(parts[1].1[..16], 0u128.to_le_bytes());
    let mut part2 = parts[2].1.clone();
    part2.extend_from_slice(&parts[1].1[..2 * record]);
    sql.execute("UPDATE vector_snapshot SET data = ? WHERE part = 2", &[SqlValue::Blob(part2)]).unwrap();
    let got = lean(&reads, &qs, 10);
    assert_eq!(reads.take().1, more.len() * qs.len(), "still the snapshot");
    assert_eq!(got, fresh(&sql, &qs, 10));
    // A repeat that leaves a record out (the count differs): both read the rows.
    sql.execute("UPDATE vector_snapshot SET data = ? WHERE part = 2", &[SqlValue::Blob(parts[2].1.clone())]).unwrap();
    let mut part1 = parts[1].1.clone();
    part1.copy_within(0..record, record);
    sql.execute("UPDATE vector_snapshot SET data = ? WHERE part = 1", &[SqlValue::Blob(part1)]).unwrap();
    let got = lean(&reads, &qs, 10);
    assert!(reads.take().1 > 2 * N * qs.len(), "the rows");
    assert_eq!(got, fresh(&sql, &qs, 10));
}

#[test]
fn test_several_lean_queries_share_the_streams_and_answer_as_each_alone() {
    let sql = database();
    let reads = Reads::new(&sql);
    let mut data = Data::new(0x1ea_0002);
    let items = data.items(0..N);
    store(&sql, &items);
    assert!(maintain_snapshot_lean(&sql).unwrap());
    store(&sql, &data.items(N..N + 300));
    let mut qs = data.queries(&items);
    qs.insert(2, vec![1.0, 0.0, 0.5]); // another dimension count: the exact scan
    let together = search_many_lean(&reads, &qs, 20, FIRST_PASS).unwrap();
    let (parts, code_rows) = reads.take();
    assert_eq!((parts, code_rows), (2 * (snapshot_parts(&sql).len() - 1), 300), "one pair of streams for all the queries");
    assert_eq!(together, lean(&sql, &qs, 20));
    assert_eq!(together[2], exact_scan(&sql, &qs[2], 20).unwrap());
    let mut packed = Packed::new();
    load(&sql, &mut packed).unwrap();
    assert_eq!(together, search_many(&sql, &mut packed, &qs, 20, FIRST_PASS).unwrap());

    // Through the trait.
    let index = SqlVectorIndex { sql: &sql };
    assert_eq!(block_on(index.query_many(&qs, 20)).unwrap(), search_many_lean(&sql, &qs, 20, agent_memory::core::local::vector::FIRST_PASS).unwrap());
    assert!(block_on(index.query(&items[7].1, 1)).unwrap()[0].1 > 0.9999);
    assert!(search_many_lean(&sql, &qs, 0, FIRST_PASS).unwrap().iter().all(Vec::is_empty));
    assert!(search_many_lean(&sql, &[], 5, FIRST_PASS).unwrap().is_empty());
}

#[test]
fn test_lean_search_drops_stale_entries_and_reads_the_rows_after_a_bulk_delete() {
    let sql = database();
    let mut data = Data::new(0x1ea_0003);
    let items = data.items(0..N);
    store(&sql, &items);
    assert!(maintain_snapshot_lean(&sql).unwrap());
    let q = items[10].1.clone();

    // The best hits deleted behind the snapshot's back: never returned,
    // and the answer is still full.
    let before = search_lean(&sql, &q, 10, FIRST_PASS).unwrap();
    let gone: Vec<String> = before.iter().take(4).map(|h| h.0.clone()).collect();
    for g in &gone {
        sql.execute("DELETE FROM vectors WHERE memory_id = ?", &[g.into()]).unwrap();
    }
    let after = search_lean(&sql, &q, 10, FIRST_PASS).unwrap();
    assert_eq!(after.len(), 10);
    assert!(after.iter().all(|h| !gone.contains(&h.0)));
    assert_eq!(after[..6], before[4..], "the rest keep their places");
    // Nearly every shortlisted entry stale: the exact scan answers.
    let short = search_lean(&sql, &q, 60, FIRST_PASS).unwrap();
    for h in &short[..50] {
        sql.execute("DELETE FROM vectors WHERE memory_id = ?", &[h.0.as_str().into()]).unwrap();
    }
    assert_eq!(search_lean(&sql, &q, 60, FIRST_PASS).unwrap(), exact_scan(&sql, &q, 60).unwrap());

    // Half the rows deleted: the snapshot disagrees with the table, and
    // both paths read the rows (old codes among them recoded in place).
    sql.execute("DELETE FROM vectors WHERE rowid % 2 = 0", &[]).unwrap();
    sql.execute("UPDATE vectors SET code = x'0f' WHERE rowid % 7 = 1", &[]).unwrap();
    let qs = data.queries(&items);
    let got = lean(&sql, &qs, 10);
    let old = sql.query("SELECT COUNT(*) FROM vectors WHERE length(code) = 1", &[]).unwrap()[0][0].as_i64().unwrap();
    assert_eq!(old, 0, "old codes were rewritten");
    assert_eq!(got, fresh(&sql, &qs, 10));

    // A query of another dimension count: the exact scan.
    let odd = vec![0.5f32; 17];
    assert_eq!(search_lean(&sql, &odd, 5, FIRST_PASS).unwrap(), exact_scan(&sql, &odd, 5).unwrap());
    // An empty table.
    assert!(search_lean(&database(), &q, 5, FIRST_PASS).unwrap().is_empty());
}

#[test]
fn test_lean_snapshot_upkeep_writes_what_a_loaded_copy_writes() {
    let sql = database();
    let index = SqlVectorIndex { sql: &sql };
    let mut data = Data::new(0x1ea_0004);
    store(&sql, &data.items(0..LEAN_SNAPSHOT_MIN - 1));
    assert!(!block_on(index.maintain()).unwrap(), "fewer than LEAN_SNAPSHOT_MIN vectors keep no snapshot");
    store(&sql, &data.items(LEAN_SNAPSHOT_MIN - 1..N));
    assert!(block_on(index.maintain()).unwrap());
    assert!(!block_on(index.maintain()).unwrap(), "not due again");
    let lean_parts = snapshot_parts(&sql);
    // The same bytes as a copy loaded from the rows writes.
    sql.execute("DELETE FROM vector_snapshot", &[]).unwrap();
    load(&sql, &mut Packed::new()).unwrap();
    assert_eq!(snapshot_parts(&sql), lean_parts);
    assert!(lean_parts.len() > 3);

    // Due again once a tenth of all (at least LEAN_SNAPSHOT_MIN) was
    // written since.
    let tenth = (1..).find(|t| *t >= (N + t) / 10).unwrap();
    assert!(tenth >= LEAN_SNAPSHOT_MIN);
    store(&sql, &data.items(N..N + tenth - 1));
    assert!(!block_on(index.maintain()).unwrap());
    store(&sql, &data.items(N + tenth - 1..N + tenth));
    assert!(block_on(index.maintain()).unwrap());
    let mut packed = Packed::new();
    load(&sql, &mut packed).unwrap();
    assert_eq!(packed.len(), N + tenth);
    assert!(!block_on(index.maintain()).unwrap());

    // A snapshot load could not use is rewritten: a part missing, records
    // gone from the table.
    sql.execute("DELETE FROM vector_snapshot WHERE part = 2", &[]).unwrap();
    assert!(block_on(index.maintain()).unwrap());
    sql.execute("DELETE FROM vectors WHERE rowid % 10 = 0", &[]).unwrap();
    assert!(block_on(index.maintain()).unwrap());
    let rewritten = snapshot_parts(&sql);

    // An id that is not 32 hex characters: no snapshot (as write_snapshot).
    store(&sql, &[("Not-Hex".to_string(), data.vector())]);
    sql.execute("DELETE FROM vector_snapshot WHERE part = 2", &[]).unwrap();
    assert!(!block_on(index.maintain()).unwrap());
    assert_eq!(snapshot_parts(&sql).len(), rewritten.len() - 1, "left as it was");
    block_on(index.delete(&["Not-Hex".to_string()])).unwrap();

    // The index a Durable Object keeps: nothing while its copy is loaded.
    let cell = RefCell::new(Packed::new());
    let cached = CachedVectorIndex { sql: &sql, packed: &cell };
    sql.execute("DELETE FROM vector_snapshot", &[]).unwrap();
    assert!(block_on(cached.maintain()).unwrap(), "not loaded: the lean upkeep");
    block_on(cached.query(&data.vector(), 1)).unwrap();
    sql.execute("DELETE FROM vector_snapshot", &[]).unwrap();
    assert!(!block_on(cached.maintain()).unwrap(), "loaded: its own snapshots");
}

/// `search_passing` on a copy loaded now, over the memories `passing`
/// holds: read ahead, or (`ahead` false) tested as the walk asks.
fn fresh_in(sql: &dyn Sql, qs: &[Vec<f32>], top_k: usize, passing: &FxHashSet<String>, ahead: bool) -> Vec<Hits> {
    let mut packed = Packed::new();
    load(sql, &mut packed).unwrap();
    let test = |ids: &[String]| Ok(ids.iter().filter(|id| passing.contains(*id)).cloned().collect());
    let only = IndexFilter { passing: &test, ahead: ahead.then_some(passing), filter: None };
    search_passing(sql, &mut packed, qs, top_k, FIRST_PASS, &only).unwrap()
}

/// [`search_many_lean_in`] over the memories `passing` holds, and how
/// many ids the walk asked about (each must be asked once).
fn lean_in(sql: &dyn Sql, qs: &[Vec<f32>], top_k: usize, passing: &FxHashSet<String>, ahead: bool) -> (Vec<Hits>, usize) {
    let asked = Cell::new(0usize);
    let test = |ids: &[String]| {
        asked.set(asked.get() + ids.len());
        Ok(ids.iter().filter(|id| passing.contains(*id)).cloned().collect())
    };
    let only = IndexFilter { passing: &test, ahead: ahead.then_some(passing), filter: None };
    let hits = search_many_lean_in(sql, qs, top_k, FIRST_PASS, &only).unwrap();
    (hits, asked.get())
}

#[test]
fn test_a_narrowed_lean_search_answers_as_the_copy_does_walking_and_reading_ahead() {
    let sql = database();
    let mut data = Data::new(0x1ea_0007);
    let items = data.items(0..N);
    let mut qs = data.queries(&items);
    qs.push(vec![1.0, 0.0, 0.5]); // another dimension count: nothing, as the copy
                                  // Memories passing: every 97th (1%), every 10th, half, all but every
                                  // 100th; an id that is not hex (stored later) passes with the first two.
    let shares: [(&str, fn(usize) -> bool); 4] = [("1%", |i| i % 97 == 0), ("10%", |i| i % 10 == 3), ("50%", |i| i % 2 == 1), ("99%", |i| i % 100 != 0)];
    let passing_of = |keep: fn(usize) -> bool| -> FxHashSet<String> {
        let mut p: FxHashSet<String> = (0..N + 150).filter(|&i| keep(i)).map(id).collect();
        if keep(0) || keep(3) {
            p.insert("note-about-coffee".into());
        }
        p
    };
    let check = |sql: &dyn Sql, stage: &str| {
        for (share, keep) in shares {
            let passing = passing_of(keep);
            for top_k in [10, 50] {
                let want = fresh_in(sql, &qs, top_k, &passing, true);
                assert_eq!(fresh_in(sql, &qs, top_k, &passing, false), want, "the copy walks as it reads ahead");
                for ahead in [true, false] {
                    let (got, asked) = lean_in(sql, &qs, top_k, &passing, ahead);
                    assert_eq!(got, want, "{share} passing, top {top_k}, {stage}, read ahead: {ahead}");
                    assert!(got.iter().flatten().all(|(id, _)| passing.contains(id)));
                    assert!(asked <= N + 152, "each memory asked about once at most: {asked}");
                    assert_eq!(asked == 0, ahead, "a walk asks, a read ahead does not");
                }
                // However narrow, the answers are full.
                assert!(want.iter().take(8).all(|h| h.len() == top_k), "{share} passing, top {top_k}, {stage}");
                assert!(want.last().unwrap().is_empty());
            }
        }
    };
    // From the rows.
    store(&sql, &items);
    check(&sql, "from the rows");
    // A profile holding only the passing memories draws the same answer.
    let passing = passing_of(shares[0].1);
    let alone = database();
    store(&alone, &items.iter().filter(|(i, _)| passing.contains(i)).cloned().collect::<Vec<_>>());
    let mut alone_hits = lean(&alone, &qs, 10);
    *alone_hits.last_mut().unwrap() = Vec::new(); // (the unnarrowed scan answers another dimension count)
    assert_eq!(lean_in(&sql, &qs, 10, &passing, false).0, alone_hits, "as an index of the 1% alone");
    // From the snapshot, and with rows after it (new, rewritten, not hex).
    maintain_snapshot_lean(&sql).unwrap(); // (loading a copy above may have written it)
    assert!(snapshot_parts(&sql).len() > 2);
    let reads = Reads::new(&sql);
    lean_in(&reads, &qs, 10, &passing, false);
    assert_eq!(reads.take(), (2 * (snapshot_parts(&sql).len() - 1), 0), "two streams over the snapshot, no row");
    check(&sql, "from the snapshot");
    let mut more = data.items(N..N + 150);
    for i in (0..N).step_by(40) {
        more.push((id(i), data.vector()));
    }
    more.push(("note-about-coffee".into(), qs[4].clone()));
    store(&sql, &more);
    check(&sql, "with rows after the snapshot");
    let (hits, _) = lean_in(&sql, &qs[4..5], 10, &passing_of(shares[0].1), false);
    assert_eq!(hits[0][0].0, "note-about-coffee", "an id that is not hex is found under its own text");

    // Through the trait: what a profile over the memory budget asks.
    let passing = passing_of(shares[0].1);
    let test = |ids: &[String]| Ok(ids.iter().filter(|id| passing.contains(*id)).cloned().collect());
    let only = IndexFilter { passing: &test, ahead: None, filter: None };
    let through = block_on(SqlVectorIndex { sql: &sql }.query_many_in(&qs, 10, &only)).unwrap();
    assert_eq!(through, search_many_lean_in(&sql, &qs, 10, agent_memory::core::local::vector::FIRST_PASS, &only).unwrap());
    assert!(through.iter().take(8).all(|h| h.len() == 10));
}

/// An index that only answers queries: the default upkeep does nothing.
struct Plain;

impl VectorIndex for Plain {
    fn upsert<'a>(&'a self, _: &'a [(String, Vec<f32>)]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async { Ok(()) })
    }
    fn delete<'a>(&'a self, _: &'a [String]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async { Ok(()) })
    }
    fn query<'a>(&'a self, _: &'a [f32], _: usize) -> LocalBoxFuture<'a, Result<Vec<(String, f32)>>> {
        Box::pin(async { Ok(vec![]) })
    }
}

#[test]
fn test_an_index_without_upkeep_maintains_nothing() {
    assert!(!block_on(Plain.maintain()).unwrap());
}

// Heap in use by this thread, for the memory test below (tests run on
// threads of their own; a block freed on another thread than the one that
// took it would skew the count, which these tests do not do).
struct Counting;

thread_local! {
    static HEAP: Cell<(isize, isize)> = const { Cell::new((0, 0)) };
}

fn heap_add(bytes: isize) {
    let _ = HEAP.try_with(|h| {
        let (now, peak) = h.get();
        h.set((now + bytes, peak.max(now + bytes)));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        heap_add(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        heap_add(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        heap_add(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most heap `f` held at once beyond what was in use before it.
fn peak_heap<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let start = HEAP.with(|h| {
        let (now, _) = h.get();
        h.set((now, now));
        now
    });
    let out = f();
    let peak = HEAP.with(|h| h.get().1);
    (out, (peak - start).max(0) as usize)
}

#[test]
fn test_lean_search_holds_a_small_share_of_the_codes() {
    let sql = database();
    let mut data = Data::new(0x1ea_0005);
    let n = 20_000;
    let items = data.items(0..n);
    store(&sql, &items);
    let q = data.vector();
    let mut packed = Packed::new();
    let (_, loading) = peak_heap(|| load(&sql, &mut packed).unwrap()); // writes the snapshot
    store(&sql, &data.items(n..n + 1000)); // rows after it
    let want = search(&sql, &mut Packed::new(), &q, 10, 2000).unwrap();
    let (got, from_snapshot) = peak_heap(|| search_lean(&sql, &q, 10, 2000).unwrap());
    assert_eq!(got, want);
    sql.execute("DELETE FROM vector_snapshot", &[]).unwrap();
    let (_, from_rows) = peak_heap(|| search_lean(&sql, &q, 10, 2000).unwrap());
    eprintln!(
        "{n} vectors + 1,000 after the snapshot: loading a copy peaks at {loading} B ({} B held); search_lean peaks at {from_snapshot} B from the snapshot, {from_rows} B from the rows",
        packed.heap_bytes()
    );
    assert!(from_snapshot * 3 < packed.heap_bytes(), "{from_snapshot} B");
    assert!(from_rows * 3 < packed.heap_bytes(), "{from_rows} B");
}

/// Times and heap peaks, printed, not asserted: `search` on a loaded
/// copy, a load then `search` (a cold start), and `search_lean` from the
/// snapshot (with `newer` rows written after it) and from the rows.
fn measure(n: usize, newer: usize) {
    let sql = database();
    let mut data = Data::new(0x1ea_0006);
    store(&sql, &data.items(0..n));
    let qs: Vec<Vec<f32>> = (0..20).map(|_| data.vector()).collect();
    let run = |label: &str, f: &mut dyn FnMut(&[f32])| {
        let start = std::time::Instant::now();
        let ((), peak) = peak_heap(|| qs.iter().for_each(|q| f(q)));
        eprintln!("{n} vectors, {label}: {:.2} ms a query, heap peak {peak} B", start.elapsed().as_secs_f64() * 1000.0 / qs.len() as f64);
    };
    let mut packed = Packed::new();
    let ((), loading) = peak_heap(|| load(&sql, &mut packed).unwrap()); // writes the snapshot
    eprintln!("{n} vectors: loading the copy peaks at {loading} B, holds {} B", packed.heap_bytes());
    run("search, copy loaded", &mut |q| drop(search(&sql, &mut packed, q, 10, 2000).unwrap()));
    drop(packed);
    run("load + search (cold)", &mut |q| drop(search(&sql, &mut Packed::new(), q, 10, 2000).unwrap()));
    run("search_lean, snapshot", &mut |q| drop(search_lean(&sql, q, 10, 2000).unwrap()));
    store(&sql, &data.items(n..n + newer));
    run(&format!("search_lean, snapshot + {newer} rows after it"), &mut |q| drop(search_lean(&sql, q, 10, 2000).unwrap()));
    sql.execute("DELETE FROM vector_snapshot", &[]).unwrap();
    run("search_lean, rows", &mut |q| drop(search_lean(&sql, q, 10, 2000).unwrap()));
}

#[test]
#[ignore = "timing: cargo test --profile bench --test vector_lean -- --ignored --nocapture"]
fn measure_search_and_search_lean_at_20k() {
    measure(20_000, 2000);
}

#[test]
#[ignore = "timing: cargo test --profile bench --test vector_lean -- --ignored --nocapture"]
fn measure_search_and_search_lean_at_100k() {
    measure(100_000, 10_000);
}

/// Memories made since ids became ULIDs (and those imported with the
/// earlier hex ids beside them) get a snapshot from the rows as hex ids
/// alone do; an id of neither form keeps the profile on its rows.
#[test]
fn test_a_profile_of_ulid_ids_gets_its_snapshot_from_the_rows() {
    let sql = database();
    let mut data = Data::new(0x1ea_0005);
    let items: Vec<(String, Vec<f32>)> = data
        .items(0..600)
        .into_iter()
        .enumerate()
        .map(|(i, (hex, v))| if i % 3 == 0 { (hex, v) } else { (agent_memory::core::ids::memory_id(1_765_000_000_000 + i as i64, &hex, 0), v) })
        .collect();
    assert!(items.iter().any(|(id, _)| agent_memory::core::ids::is_ulid(id)));
    store(&sql, &items);
    assert!(maintain_snapshot_lean(&sql).unwrap(), "a snapshot of hex and ULID ids");
    assert!(!snapshot_parts(&sql).is_empty());
    let qs = data.queries(&items);
    assert_eq!(lean(&sql, &qs, 10), fresh(&sql, &qs, 10));
    // An id of neither form: the rows only.
    store(&sql, &data.items(0..300).into_iter().map(|(_, v)| ("imported-7".to_string(), v)).take(1).collect::<Vec<_>>());
    sql.execute("DELETE FROM vector_snapshot", &[]).unwrap();
    assert!(!maintain_snapshot_lean(&sql).unwrap(), "no snapshot beside an id of neither form");
}
