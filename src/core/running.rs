//! Which ingests this process is running now, by profile and session.
//!
//! An ingest queues a guard job before it stores its messages, due
//! [`INGEST_GUARD_MILLIS`] later, and removes it when the call ends; only a
//! call that died leaves it to run. A call still running when its guard
//! falls due (a slow model) must not be judged twice, and whether a call
//! is alive is not something SQLite can say: it dies with the process that
//! runs it. So the process keeps a list of the ingests it runs, an entry
//! per running call (a few at most, gone when the call's future is), and
//! the drain reads it before it runs a guard.
//!
//! What this does not do: tell one process about another's calls. A Durable
//! Object runs in one process at a time, and one that restarts has lost its
//! calls and its list together. Nor does it trust an entry for ever: a call
//! whose future is neither finished nor dropped (its request's context torn
//! down around it) holds its guard back for at most [`MAX_HELD_MILLIS`].

use std::cell::RefCell;

/// How long an ingest may run before its re-extraction guard job falls
/// due; long enough for a 500-message call over a remote model, short
/// enough that an interrupted one is healed soon. A call that runs longer
/// is still not judged twice: its entry here holds the guard back.
pub const INGEST_GUARD_MILLIS: i64 = 15 * 60 * 1000;

/// How long after a call began its entry holds its guard back: three
/// guards' time, past which the call is taken for dead.
pub const MAX_HELD_MILLIS: i64 = 3 * INGEST_GUARD_MILLIS;

thread_local! {
    /// Each call's own number, profile, session and when it began (epoch
    /// millis).
    static RUNNING: RefCell<Vec<(u64, String, String, i64)>> = const { RefCell::new(Vec::new()) };
    /// The number the next call takes.
    static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// An ingest of one session of one profile, listed while this lives.
#[must_use = "the ingest is listed only while this is held"]
pub struct Ingest {
    /// Its entry's number: two calls of one session each leave with their own.
    number: u64,
}

/// Lists an ingest of `session` in `profile`, begun at `now`, until the
/// returned value is dropped (the call ended, or its future was dropped).
pub fn enter(profile: &str, session: &str, now: i64) -> Ingest {
    let number = NEXT.with(|n| n.replace(n.get().wrapping_add(1)));
    RUNNING.with(|r| r.borrow_mut().push((number, profile.to_string(), session.to_string(), now)));
    Ingest { number }
}

/// Whether this process is running an ingest of `session` in `profile`
/// begun less than [`MAX_HELD_MILLIS`] before `now`.
pub fn ingest_running(profile: &str, session: &str, now: i64) -> bool {
    RUNNING.with(|r| r.borrow().iter().any(|(_, p, s, began)| p == profile && s == session && now.saturating_sub(*began) < MAX_HELD_MILLIS))
}

impl Drop for Ingest {
    fn drop(&mut self) {
        RUNNING.with(|r| {
            let mut r = r.borrow_mut();
            if let Some(at) = r.iter().position(|(n, ..)| *n == self.number) {
                r.swap_remove(at);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_an_ingest_is_listed_while_held_and_once_per_call() {
        assert!(!ingest_running("ns/p", "s", 0));
        let a = enter("ns/p", "s", 0);
        let b = enter("ns/p", "s", 0);
        assert!(ingest_running("ns/p", "s", 1));
        assert!(!ingest_running("ns/p", "t", 1));
        assert!(!ingest_running("ns/q", "s", 1));
        drop(a);
        assert!(ingest_running("ns/p", "s", 1), "the second call still runs");
        drop(b);
        assert!(!ingest_running("ns/p", "s", 1));
    }

    #[test]
    fn test_each_call_leaves_with_its_own_entry() {
        let old = enter("ns/p", "two", 0);
        let new = enter("ns/p", "two", MAX_HELD_MILLIS);
        drop(old);
        assert!(ingest_running("ns/p", "two", MAX_HELD_MILLIS + 1), "the later call's entry, with its own start, stays");
        drop(new);
    }

    #[test]
    fn test_an_entry_older_than_three_guards_holds_nothing_back() {
        let _stuck = enter("ns/p", "stuck", 0);
        assert!(ingest_running("ns/p", "stuck", MAX_HELD_MILLIS - 1));
        assert!(!ingest_running("ns/p", "stuck", MAX_HELD_MILLIS), "a call that never ended is taken for dead");
    }
}
