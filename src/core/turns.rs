//! Background work's turns in one isolate: one stretch of background
//! computing at a time, taken first come first served.
//!
//! A Worker's isolate runs one thing at a time, and between two awaits
//! Rust code runs to the end. Profiles consolidating in the background
//! that each yield between their windows are all ready again at once: a
//! request arriving meanwhile waits behind every one of their windows (64
//! profiles consolidating with the rules kept an idle profile's `stats`
//! waiting 14 s). With turns, one background stretch is ready at a time,
//! and each waits a turn of the event loop before it takes its turn, so a
//! request waits for one stretch at most.
//!
//! It does not bound memory (the working set does:
//! [`crate::core::resident::WorkingSet`]), nor time a stretch: a stretch
//! is as long as the work between two awaits. A holder that never gave
//! its turn back (its future dropped unpolled, a bug) loses it after
//! [`STALE_TURN_MILLIS`].

use std::collections::VecDeque;

/// A turn held longer than this is taken back: no stretch between two
/// awaits runs this long, and one whose holder ended without giving it
/// back must not stop background work for the isolate's life.
pub const STALE_TURN_MILLIS: u64 = 10_000;

/// A waiter that has not asked for this long has left the line (its work
/// ended without saying so).
pub const STALE_WAITER_MILLIS: u64 = 2_000;

/// How long nobody may ask (waiters ask every 25 ms at most) before the
/// isolate is taken to have been blocked, and that time not counted
/// against the waiters.
pub const BLOCKED_MILLIS: u64 = STALE_WAITER_MILLIS / 4;

/// Waiters in line, first come first served: the isolate's background
/// turn's, and its working set's
/// ([`crate::core::resident::WorkingSet`]). A waiter asks again every
/// little while, or leaves the line after [`STALE_WAITER_MILLIS`]; time
/// when nobody asked at all (the isolate blocked, even in several
/// stretches) is not counted against it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Line {
    /// Ticket, and when it last asked.
    waiting: VecDeque<(u64, u64)>,
    /// When anyone last asked.
    last_asked: u64,
}

impl Line {
    /// Forgets the waiters that stopped asking, as of `now`.
    pub fn forget_stale(&mut self, now: u64) {
        let gap = now.saturating_sub(self.last_asked);
        if gap > BLOCKED_MILLIS {
            self.waiting.iter_mut().for_each(|(_, seen)| *seen = seen.saturating_add(gap).min(now));
        }
        self.last_asked = now;
        self.waiting.retain(|(_, seen)| now.saturating_sub(*seen) <= STALE_WAITER_MILLIS);
    }

    /// `ticket` asks at `now`, joining the line at its end if it is not in
    /// it: whether it is first.
    pub fn ask(&mut self, ticket: u64, now: u64) -> bool {
        self.forget_stale(now);
        match self.waiting.iter_mut().find(|(t, _)| *t == ticket) {
            Some(waiting) => waiting.1 = now,
            None => self.waiting.push_back((ticket, now)),
        }
        self.is_first(ticket)
    }

    /// Whether `ticket` is first in line.
    pub fn is_first(&self, ticket: u64) -> bool {
        self.waiting.front().is_some_and(|(t, _)| *t == ticket)
    }

    /// The first in line leaves it, served.
    pub fn serve_first(&mut self) {
        self.waiting.pop_front();
    }

    /// `ticket` leaves the line.
    pub fn leave(&mut self, ticket: u64) {
        self.waiting.retain(|(t, _)| *t != ticket);
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

/// The isolate's background turn: who holds it, and who waits for it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Turns {
    /// Ticket and when it took the turn.
    holder: Option<(u64, u64)>,
    line: Line,
    next_ticket: u64,
}

impl Turns {
    /// A ticket for work about to ask for the turn.
    pub fn ticket(&mut self) -> u64 {
        self.next_ticket = self.next_ticket.wrapping_add(1);
        self.next_ticket
    }

    /// Takes the turn for `ticket` at `now` (milliseconds) if it is first
    /// in line and nobody holds the turn: whether it did. One that did not
    /// is in line, and asks again.
    pub fn try_take(&mut self, ticket: u64, now: u64) -> bool {
        if self.holder.is_some_and(|(_, at)| now.saturating_sub(at) > STALE_TURN_MILLIS) {
            self.holder = None;
        }
        if !self.line.ask(ticket, now) || self.holder.is_some() {
            return false;
        }
        self.line.serve_first();
        self.holder = Some((ticket, now));
        true
    }

    /// Gives back `ticket`'s turn, if it holds it, and its place in line.
    pub fn end(&mut self, ticket: u64) {
        if self.holder.is_some_and(|(t, _)| t == ticket) {
            self.holder = None;
        }
        self.line.leave(ticket);
    }

    /// Whether `ticket` is next: first in line (it asks again soonest).
    pub fn is_next(&self, ticket: u64) -> bool {
        self.line.is_first(ticket)
    }

    /// Whether anyone holds the turn.
    pub fn held(&self) -> bool {
        self.holder.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_one_holds_the_turn_and_the_others_take_it_in_the_order_they_asked() {
        let mut turns = Turns::default();
        let (a, b, c) = (turns.ticket(), turns.ticket(), turns.ticket());
        assert!(turns.try_take(a, 0));
        assert!(!turns.try_take(c, 1), "held");
        assert!(!turns.try_take(b, 2), "held, and c asked first");
        turns.end(a);
        assert!(turns.is_next(c) && !turns.is_next(b));
        assert!(!turns.try_take(b, 3), "c asked first");
        assert!(turns.try_take(c, 4));
        turns.end(c);
        assert!(turns.try_take(b, 5));
        turns.end(b);
        assert!(!turns.held());
    }

    #[test]
    fn test_waiters_keep_their_places_while_the_isolate_was_blocked() {
        let mut turns = Turns::default();
        let (a, first, second) = (turns.ticket(), turns.ticket(), turns.ticket());
        assert!(turns.try_take(a, 0));
        assert!(!turns.try_take(first, 1));
        assert!(!turns.try_take(second, 2));
        // `a`'s stretch blocked the isolate for 5 s.
        turns.end(a);
        assert!(!turns.try_take(second, 5_000), "first asked first");
        assert!(turns.try_take(first, 5_001));
        // Nor over stretches of 1.5 s one after the other, the next in
        // line asking between them (it asks every millisecond).
        let (third, fourth) = (turns.ticket(), turns.ticket());
        assert!(!turns.try_take(second, 5_002));
        assert!(!turns.try_take(third, 5_003));
        assert!(!turns.try_take(fourth, 5_004));
        turns.end(first);
        assert!(turns.try_take(second, 6_500), "after first's stretch");
        turns.end(second);
        assert!(!turns.try_take(fourth, 8_000), "third asked first");
        assert!(turns.try_take(third, 8_001));
    }

    #[test]
    fn test_a_turn_not_given_back_and_a_waiter_that_stopped_asking_are_forgotten() {
        let mut turns = Turns::default();
        let (lost, gone, next) = (turns.ticket(), turns.ticket(), turns.ticket());
        assert!(turns.try_take(lost, 0));
        assert!(!turns.try_take(gone, 1));
        assert!(!turns.try_take(next, 2));
        // `gone` stops asking; `next` goes on asking while `lost` holds on.
        let mut now = 2;
        while now <= STALE_TURN_MILLIS {
            now += 500;
            let took = turns.try_take(next, now);
            assert_eq!(took, now > STALE_TURN_MILLIS, "at {now}");
        }
    }
}
