//! The isolate's [`WorkingSet`]: room for the working memory of large
//! requests, taken before they hold it and given back when they are done.
//! The Worker and the profile objects of an isolate share one Wasm memory,
//! so they share this room too (core::resident says why and how much).
//!
//! Two ways to take it:
//! - [`take`]: the whole room a request needs, known before it holds any
//!   of it (a body of a declared length, a call of a known size). It waits
//!   for room, holding nothing, and is refused as busy (503, nothing done)
//!   when none is made in time.
//! - [`Room::grow`]: more room for a body of no declared length as it
//!   arrives. It never waits (a request that waits while holding room
//!   could wait on another that waits on it): without room, it is refused
//!   at once.

use crate::core::error::Error;
use crate::core::resident::{WorkingSet, DEFAULT_WORKING_SET_BYTES, WORKING_SET_FLOOR_BYTES};
use std::cell::RefCell;
use std::time::Duration;

thread_local! {
    static WORKING: RefCell<WorkingSet> = RefCell::new(WorkingSet::new(DEFAULT_WORKING_SET_BYTES));
}

/// How often a waiting request looks for room again.
const POLL_MILLIS: u64 = 25;

/// Room taken in the isolate's working set; given back when dropped.
#[derive(Debug)]
pub struct Room {
    bytes: usize,
}

impl Room {
    /// No room: a request too small to count, or one that grows its room
    /// as its body arrives.
    pub fn none() -> Room {
        Room { bytes: 0 }
    }

    /// Grows the room to `bytes` if it is free, without waiting: a body of
    /// no declared length as it arrives. Busy (503) when it is not.
    pub fn grow(&mut self, bytes: usize, limit: usize, what: &str) -> Result<(), Error> {
        if bytes <= self.bytes || bytes < WORKING_SET_FLOOR_BYTES {
            return Ok(());
        }
        let more = bytes.saturating_sub(self.bytes).max(WORKING_SET_FLOOR_BYTES);
        let taken = with(limit, |w| {
            let taken = w.try_take(more);
            if !taken {
                w.note_refusal();
            }
            taken
        });
        if !taken {
            return Err(busy(what, bytes, 0));
        }
        self.bytes = self.bytes.saturating_add(more);
        Ok(())
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        let bytes = self.bytes;
        WORKING.with(|w| {
            if let Ok(mut w) = w.try_borrow_mut() {
                w.give_back(bytes);
            }
        });
    }
}

/// Takes `bytes` of room for `what`, waiting up to `wait_millis` for it,
/// holding nothing meanwhile; busy (503) when none was made in time.
pub async fn take(bytes: usize, limit: usize, wait_millis: u64, what: &str) -> Result<Room, Error> {
    if bytes < WORKING_SET_FLOOR_BYTES {
        return Ok(Room::none());
    }
    let started = now_millis();
    let mut waited = false;
    loop {
        if with(limit, |w| w.try_take(bytes)) {
            return Ok(Room { bytes });
        }
        if !waited {
            waited = true;
            with(limit, WorkingSet::note_wait);
        }
        if now_millis().saturating_sub(started) >= wait_millis {
            with(limit, WorkingSet::note_refusal);
            return Err(busy(what, bytes, wait_millis));
        }
        worker::Delay::from(Duration::from_millis(POLL_MILLIS)).await;
    }
}

/// The isolate's working set as it is now.
pub fn report() -> WorkingSet {
    WORKING.with(|w| w.try_borrow().map(|w| w.clone()).unwrap_or_default())
}

fn now_millis() -> u64 {
    js_sys::Date::now() as u64
}

fn with<T>(limit: usize, f: impl FnOnce(&mut WorkingSet) -> T) -> T {
    WORKING.with(|w| {
        let mut w = w.borrow_mut();
        w.set_limit(limit);
        f(&mut w)
    })
}

fn busy(what: &str, bytes: usize, waited_millis: u64) -> Error {
    Error::busy(format!(
        "the service is busy with other large requests: no room for {what} ({:.1} MB of working memory) was made{}; nothing was done, retry",
        bytes as f64 / 1_048_576.0,
        if waited_millis > 0 { format!(" within {:.1} s", waited_millis as f64 / 1000.0) } else { String::new() }
    ))
}
