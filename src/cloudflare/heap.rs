//! The isolate's heap as its allocator sees it: the bytes handed out and
//! not yet returned, their most at once, and the blocks behind them.
//!
//! The Wasm linear memory only grows, so its size says how high the heap
//! once reached, not what lives in it now or how much of it is unusable
//! between live blocks. These counts say both: the linear memory's size
//! against the most ever live is what fragmentation and the allocator's
//! own bookkeeping cost, and the live bytes against the budget's
//! [`crate::core::resident::Budget`] figure are what its estimates miss.
//!
//! It counts; it does not allocate differently. Every call goes to the
//! platform's allocator as it would without it (`System`: dlmalloc on
//! wasm32), at the cost of a few additions.

use crate::core::resident::HeapCounts;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The counting wrapper around [`System`].
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static BLOCKS: AtomicUsize = AtomicUsize::new(0);

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Relaxed).saturating_add(bytes);
    PEAK.fetch_max(live, Relaxed);
}

// SAFETY: every call is passed to `System` unchanged; the counts are
// plain atomics (the isolate runs one thread) and allocate nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
            BLOCKS.fetch_add(1, Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
            BLOCKS.fetch_add(1, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
        BLOCKS.fetch_sub(1, Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        p
    }
}

/// The heap now: bytes live, the most live at once since the isolate
/// started, and live blocks.
pub fn counts() -> HeapCounts {
    HeapCounts { live: LIVE.load(Relaxed) as u64, peak: PEAK.load(Relaxed) as u64, blocks: BLOCKS.load(Relaxed) as u64 }
}
