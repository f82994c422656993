//! A counting global allocator, for the tests and benchmarks that measure
//! how much of the Rust heap a call holds at once (`tests/heap.rs`,
//! `tests/bench/heap.rs`). A binary opts in with
//! `#[global_allocator] static A: heap::Counting = heap::Counting;`;
//! without that, [`live`] and [`peak`] stay 0.

use super::Rng;
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live and their high-water
/// mark since the last [`reset_peak`].
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= BIG_BYTES {
            trace_big(layout.size(), new_size);
        }
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            // A block that moves exists twice for a moment: the mark counts both.
            let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
            PEAK.fetch_max(live, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        q
    }
}

/// A reallocation at least this large is a buffer grown (or shrunk) in
/// one piece of a megabyte or more: in the Wasm memory, a stretch the
/// holes small blocks leave cannot give.
const BIG_BYTES: usize = 1 << 20;

/// With `HEAP_BIG_REALLOCS` set, prints a reallocation of [`BIG_BYTES`]
/// or more to stderr with the crate's frames that made it (`make
/// bench-heap HEAP_BIG_REALLOCS=1`): where a buffer grows by doubling.
fn trace_big(from: usize, to: usize) {
    thread_local!(static TRACING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    // The trace allocates: not traced itself.
    if std::env::var_os("HEAP_BIG_REALLOCS").is_none() || TRACING.with(|t| t.replace(true)) {
        return;
    }
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    let frames: Vec<&str> =
        trace.lines().map(str::trim).filter(|l| (l.contains("agent_memory::") || l.contains("regex")) && !l.contains("heap::")).take(6).collect();
    eprintln!("realloc {from} -> {to} bytes: {}", frames.join(" < "));
    TRACING.with(|t| t.set(false));
}

/// Bytes allocated and not yet freed.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The most bytes live at once since the last [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Starts a new high-water mark from what is live now.
pub fn reset_peak() {
    PEAK.store(live(), Ordering::Relaxed);
}

/// The largest message the published limits take.
pub const INGEST_MESSAGE_BYTES: usize = 32 * 1024;

const WORDS: &[&str] = &[
    "the", "a", "of", "to", "and", "in", "that", "it", "with", "for", "on", "as", "was", "at", "by", "from", "this", "have", "not", "but", "what", "when",
    "there", "can", "your", "which", "their", "said", "will", "each", "about", "how", "out", "them", "then", "many", "some", "would", "other", "into", "more",
    "like", "time", "could", "make", "than", "first", "people", "made", "over", "only", "way", "find", "use", "water", "long", "little", "very", "after",
    "words", "called", "just", "where", "most", "know", "through", "back", "much", "before", "good", "new", "garden", "kitchen", "project", "meeting",
    "budget", "holiday", "train", "river", "mountain", "coffee", "dinner", "weekend", "sister", "doctor", "office", "report", "invoice", "schedule", "concert",
    "museum", "library", "bicycle", "recipe", "festival", "market", "station",
];
const CITIES: &[&str] = &["Lisbon", "Oslo", "Kyoto", "Lima", "Accra", "Tallinn", "Porto", "Quebec", "Hanoi", "Bergen"];
const THINGS: &[&str] = &["tea", "jazz", "chess", "hiking", "sushi", "opera", "tennis", "poetry", "pottery", "sailing"];

/// `bytes` of questions with a first-person statement now and then, as
/// `tests/bench/peaks.mjs` writes them (the same shape, not the same
/// words); `prose`: every sentence a statement.
fn text(rng: &mut Rng, bytes: usize, prose: bool) -> String {
    let mut out = String::with_capacity(bytes + 256);
    while out.len() < bytes {
        if !out.is_empty() {
            out.push(' ');
        }
        // A first-person statement; in prose, most sentences state
        // something in plain words instead (as peaks.mjs writes it).
        if (prose && rng.below(100) < 8) || (!prose && (out.is_empty() || rng.below(200) == 0)) {
            match rng.below(3) {
                0 => out.push_str(&format!("I moved to {} in {}.", rng.pick(CITIES), 2000 + rng.below(25))),
                1 => out.push_str(&format!("My favorite hobby is {}.", rng.pick(THINGS))),
                _ => out.push_str("We planned the garden meeting for the weekend."),
            }
            continue;
        }
        let n = 8 + rng.below(14);
        let words: Vec<&str> = (0..n).map(|_| rng.pick(WORDS)).collect();
        let mut s = words.join(" ");
        s[..1].make_ascii_uppercase();
        out.push_str(&s);
        out.push(if prose { '.' } else { '?' });
    }
    out.truncate(bytes);
    out
}

/// An ingest's body: `messages` messages of 32 KB ([`text`]) in session
/// `session`, as `make bench-peaks` sends at the published limits.
pub fn ingest_body(messages: usize, session: &str) -> Vec<u8> {
    ingest_body_of(messages, session, false)
}

/// [`ingest_body`] of prose (`prose`): every sentence states something,
/// and the local extraction makes a memory of each.
pub fn ingest_body_of(messages: usize, session: &str, prose: bool) -> Vec<u8> {
    let mut rng = Rng(0x5eed_cafe);
    let msgs: Vec<_> = (0..messages)
        .map(|i| {
            json!({
                "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": text(&mut rng, INGEST_MESSAGE_BYTES, prose),
                "timestamp": format!("2024-01-01T{:02}:{:02}:00Z", (i / 60) % 24, i % 60),
            })
        })
        .collect();
    serde_json::to_vec(&json!({ "messages": msgs, "sessionId": session })).expect("body")
}
