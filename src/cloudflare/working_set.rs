//! The isolate's [`WorkingSet`]: room for the working memory of large
//! requests, taken before they hold it and given back when they are done.
//! The Worker and the profile objects of an isolate share one Wasm memory,
//! so they share this room too (core::resident says why and how much).
//!
//! Two ways to take it:
//! - [`take`]: the whole room a request needs, known before it holds any
//!   of it (a body of a declared length, a call of a known size). It waits
//!   in line for room, holding nothing, and is refused as busy (503,
//!   nothing done) when none is made in time.
//! - [`Room::grow`]: more room for a body of no declared length as it
//!   arrives. It never waits (a request that waits while holding room
//!   could wait on another that waits on it): without room, it is refused
//!   at once.
//!
//! A [`Room`] gives back what it holds, and its place in line, when it is
//! dropped; room held past `MAX_HOLD_MILLIS` is taken back regardless.

use crate::core::error::Error;
use crate::core::ports::{Held, LocalBoxFuture};
use crate::core::resident::{WorkingSet, DEFAULT_WORKING_SET_BYTES, WORKING_SET_FLOOR_BYTES};
use crate::core::turns::Turns;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

thread_local! {
    static WORKING: RefCell<WorkingSet> = RefCell::new(WorkingSet::new(DEFAULT_WORKING_SET_BYTES));
}

/// How often a waiting request asks for room again.
const POLL_MILLIS: u64 = 25;

/// A request's room in the isolate's working set (none yet, or what it
/// took); given back, with its place in line, when dropped.
#[derive(Debug)]
pub struct Room {
    ticket: u64,
    bytes: usize,
    limit: usize,
}

impl Room {
    /// A request's room, holding nothing yet, under the limit `limit` (the
    /// isolate's limit is set by those that take room, not here).
    pub fn new(limit: usize) -> Room {
        Room { ticket: WORKING.with(|w| w.borrow_mut().ticket()), bytes: 0, limit }
    }

    /// Whether the room holds anything.
    pub fn holds(&self) -> bool {
        self.bytes > 0
    }

    /// Grows the room to `bytes` if it is free, without waiting: a body of
    /// no declared length as it arrives. Busy (503) when it is not.
    pub fn grow(&mut self, bytes: usize, what: &str) -> Result<(), Error> {
        if bytes <= self.bytes || bytes < WORKING_SET_FLOOR_BYTES {
            return Ok(());
        }
        let more = bytes.saturating_sub(self.bytes);
        let ticket = self.ticket;
        let taken = with(self.limit, |w| {
            let taken = w.try_grow(ticket, more, now_millis());
            if !taken {
                w.note_refusal();
            }
            taken
        });
        if !taken {
            return Err(busy(what, bytes, 0));
        }
        self.bytes = bytes;
        Ok(())
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        let ticket = self.ticket;
        WORKING.with(|w| {
            if let Ok(mut w) = w.try_borrow_mut() {
                w.leave(ticket);
            }
        });
    }
}

/// Takes `bytes` of room for `what` under the limit `limit`, waiting in
/// line up to `wait_millis` for it, holding nothing meanwhile; busy (503)
/// when none was made in time. Below the floor, no room is taken.
pub async fn take(bytes: usize, limit: usize, wait_millis: u64, what: &str) -> Result<Room, Error> {
    take_by(bytes, limit, wait_millis, what, WorkingSet::try_take).await
}

/// [`take`] for background work: after requests, and within its share
/// ([`WorkingSet::try_take_background`]).
pub async fn take_background(bytes: usize, limit: usize, wait_millis: u64, what: &str) -> Result<Room, Error> {
    take_by(bytes, limit, wait_millis, what, WorkingSet::try_take_background).await
}

async fn take_by(bytes: usize, limit: usize, wait_millis: u64, what: &str, try_take: fn(&mut WorkingSet, u64, usize, u64) -> bool) -> Result<Room, Error> {
    let mut room = Room::new(limit);
    if bytes < WORKING_SET_FLOOR_BYTES {
        return Ok(room);
    }
    let started = now_millis();
    let mut waited = false;
    loop {
        let ticket = room.ticket;
        if with(limit, |w| try_take(w, ticket, bytes, now_millis())) {
            room.bytes = bytes;
            return Ok(room);
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

/// The isolate's working set as a pipeline's
/// [`WorkingRoom`](crate::core::ports::WorkingRoom): room taken with
/// [`take_background`] under `limit` (after requests, within background
/// work's share), waiting up to `wait_millis`, then the
/// isolate's background turn ([`crate::core::turns`]), after the
/// isolate's other work had its turn of the event loop.
/// One profile object's, which lends one piece at a time: a second
/// caller of the profile (a `consolidate` call beside the alarm's run)
/// waits for the first's piece to be given back, then finds the run moved
/// on rather than read and decide the same window again.
pub struct Isolate {
    pub limit: usize,
    pub wait_millis: u64,
    lent: Rc<Cell<bool>>,
}

impl Isolate {
    pub fn new(limit: usize, wait_millis: u64) -> Isolate {
        Isolate { limit, wait_millis, lent: Rc::default() }
    }
}

/// The profile's piece, lent: given back when dropped.
struct Lent(Rc<Cell<bool>>);

impl Drop for Lent {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl crate::core::ports::WorkingRoom for Isolate {
    fn take<'a>(&'a self, bytes: usize, what: &'a str) -> LocalBoxFuture<'a, Result<Held, Error>> {
        Box::pin(async move {
            let started = now_millis();
            while self.lent.get() {
                if now_millis().saturating_sub(started) >= self.wait_millis {
                    return Err(Error::busy(format!("another call of this profile holds {what}; nothing was done, retry")));
                }
                worker::Delay::from(Duration::from_millis(POLL_MILLIS)).await;
            }
            self.lent.set(true);
            let lent = Lent(self.lent.clone());
            let left = self.wait_millis.saturating_sub(now_millis().saturating_sub(started));
            let room = take_background(bytes, self.limit, left, what).await?;
            Ok(Held::by((lent, room), turn().await))
        })
    }

    fn now_millis(&self) -> Option<i64> {
        i64::try_from(now_millis()).ok()
    }
}

thread_local! {
    static TURNS: RefCell<Turns> = RefCell::new(Turns::default());
}

/// How often the next in line for the background turn asks for it (the
/// others ask every [`POLL_MILLIS`]).
const NEXT_POLL_MILLIS: u64 = 1;

/// The isolate's background turn, held: given back, with its place in
/// line, when dropped.
struct Turn(u64);

impl Drop for Turn {
    fn drop(&mut self) {
        let ticket = self.0;
        TURNS.with(|t| {
            if let Ok(mut t) = t.try_borrow_mut() {
                t.end(ticket);
            }
        });
    }
}

/// Waits for the isolate's background turn, always a turn of the event
/// loop at least (the isolate's requests run first).
async fn turn() -> Turn {
    let turn = Turn(TURNS.with(|t| t.borrow_mut().ticket()));
    let mut wait = 0;
    loop {
        worker::Delay::from(Duration::from_millis(wait)).await;
        let (took, next) = TURNS.with(|t| {
            let mut t = t.borrow_mut();
            (t.try_take(turn.0, now_millis()), t.is_next(turn.0))
        });
        if took {
            return turn;
        }
        wait = if next { NEXT_POLL_MILLIS } else { POLL_MILLIS };
    }
}

/// The isolate's working set as it is now, under the limit `limit`.
pub fn report(limit: usize) -> WorkingSet {
    with(limit, |w| w.clone())
}

/// The isolate's clock, in milliseconds.
pub(crate) fn now_millis() -> u64 {
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
