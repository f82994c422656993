//! What a profile's state costs the allocator, against what the memory
//! budget counts for it (`heap_bytes`), counted by a global allocator that
//! wraps the system's. Thousands of small profiles share one isolate's
//! Wasm memory: each block the allocator hands out carries a header and is
//! rounded up, and many small blocks fragment the memory, so a state is
//! held in few blocks (no block of its own for each word), and what the
//! budget counts is what the allocator holds.

mod support;

use agent_memory::core::api::IngestRequest;
use agent_memory::core::recall::directory::TurnDirectory;
use agent_memory::core::recall::text_index::TextIndex;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use support::{block_on, database, msg, with_profile, APRIL_15};

/// Bytes and blocks handed out and not yet returned by the thread that
/// measures ([`held`] marks it): the test harness's own threads free their
/// blocks meanwhile (a finished test's captured output), and counted with
/// them the blocks a measurement keeps once read below zero. The tests
/// that read them run one at a time (`SERIAL`).
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static BLOCKS: AtomicUsize = AtomicUsize::new(0);
static SERIAL: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread's allocations are counted.
    static MEASURED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is the one measured (never while its
/// thread-locals are torn down).
fn measured() -> bool {
    MEASURED.try_with(std::cell::Cell::get).unwrap_or(false)
}

// SAFETY: every call goes to `System` unchanged; the counts allocate nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if measured() {
            LIVE.fetch_add(l.size(), Relaxed);
            BLOCKS.fetch_add(1, Relaxed);
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if measured() {
            LIVE.fetch_sub(l.size(), Relaxed);
            BLOCKS.fetch_sub(1, Relaxed);
        }
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if measured() {
            LIVE.fetch_add(n, Relaxed);
            LIVE.fetch_sub(l.size(), Relaxed);
        }
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// What building `f`'s value took from the allocator and kept: bytes and
/// blocks.
fn held<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    let (l0, b0) = (LIVE.load(Relaxed), BLOCKS.load(Relaxed));
    MEASURED.with(|m| m.set(true));
    let v = f();
    MEASURED.with(|m| m.set(false));
    (v, LIVE.load(Relaxed).wrapping_sub(l0), BLOCKS.load(Relaxed).wrapping_sub(b0))
}

/// The development styles' turns: the first `sessions` sessions of
/// `style`, six turns of each, as bench-many gives its profiles.
fn sessions(style: &str, sessions: usize) -> Vec<Vec<(String, String)>> {
    let path = format!("{}/tests/fixtures/dev-styles/{style}.json", env!("CARGO_MANIFEST_DIR"));
    let questions: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    questions
        .iter()
        .flat_map(|q| q["haystack_sessions"].as_array().unwrap().iter())
        .take(sessions)
        .map(|s| s.as_array().unwrap().iter().take(6).map(|t| (t["role"].as_str().unwrap().to_string(), t["content"].as_str().unwrap().to_string())).collect())
        .collect()
}

const STYLES: [&str; 4] = ["support-chat", "long-answers", "coding-agent", "knowledge-updates"];

#[test]
fn test_a_small_profiles_directory_is_a_few_blocks_per_row_and_counted_as_held() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for style in STYLES {
        for n in [1usize, 4, 32] {
            let sql = database();
            with_profile(&sql, APRIL_15, |profile| {
                for (k, session) in sessions(style, n).into_iter().enumerate() {
                    let messages = session.iter().map(|(role, content)| msg(role, content)).collect();
                    block_on(profile.ingest(IngestRequest { messages, session_id: Some(format!("s{k}")), metadata: Default::default() })).unwrap();
                }
            });
            // The connection's prepared-statement cache holds the reads
            // a directory makes once another has made them: no entry of it
            // is made (nor one left by the ingest before evicted, which
            // read as blocks freed) while this one is measured.
            drop(TurnDirectory::new().sync(&sql).map(drop));
            let turns = TurnDirectory::new();
            let ((), bytes, blocks) = held(|| drop(turns.sync(&sql).unwrap()));
            let (messages, memories) = turns.read_up_to().unwrap();
            let rows = (messages + memories) as usize;
            let counted = turns.heap_bytes();
            println!("{style}, {n} sessions: {messages} messages, {memories} memories: {blocks} blocks, {bytes} bytes held, {counted} counted");
            // Each word had two blocks of its own (its bytes and its
            // postings): 30-32 blocks a row on one session.
            assert!(blocks <= 8 * rows, "{style}, {n} sessions: {blocks} blocks for {rows} rows");
            let ratio = counted as f64 / bytes as f64;
            assert!((0.85..=1.15).contains(&ratio), "{style}, {n} sessions: {counted} counted against {bytes} held");
        }
    }
}

#[test]
fn test_a_word_in_one_document_takes_no_block_of_its_own() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 2,000 distinct words, each in one document, and one word in all.
    let (ix, _, blocks) = held(|| {
        let mut ix = TextIndex::<2>::default();
        for doc in 0..100u32 {
            let words: Vec<String> = (0..20).map(|w| format!("w{doc}x{w}")).collect();
            ix.add(doc, ["user", &format!("common {}", words.join(" "))]);
        }
        ix
    });
    assert!(blocks < 60, "{blocks} blocks for 2,001 words: their tables, not a block each");
    let hits = ix.bm25(&["w7x3".to_string()], [0.3, 1.0], 10).unwrap();
    assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![7]);
    assert_eq!(ix.bm25(&["common".to_string()], [0.3, 1.0], 1000).unwrap().len(), 100);
}
