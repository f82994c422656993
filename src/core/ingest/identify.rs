//! Which id each message of a call takes.
//!
//! A message's id is its words' (SHA-256 over session, role and content:
//! [`ids::message_id`]), so a call sent again finds its messages stored and
//! adds nothing. The same words said again are numbered into ids of their
//! own ([`ids::repeated_message_id`]): within one call by their order, and
//! across calls by their timestamps. For words the session holds already,
//! each timed saying in the call takes the stored repeat with its own time
//! (it is that message, sent again: a re-send, or a window overlapping an
//! earlier call's); a timed saying no stored repeat has the time of was
//! said again later (a second "yes" in a later call, a preference stated
//! again after it changed) and takes a repeat stored untimed (it may be
//! that saying, sent before without its time), else the first repeat
//! number that is free. An untimed saying keeps its number within the
//! call, as it always did, unless a timed re-send holds it.
//!
//! What this does not do:
//! - tell a saying sent without a timestamp from a repeat: without one,
//!   the same words in a later call are the stored message;
//! - tell two sayings apart whose timestamps are equal (a date alone, the
//!   same for a whole session);
//! - look past the first repeat: words whose first saying was deleted
//!   (`delete(id)` of the memory drawn from it) and later ones kept are
//!   numbered as if the session had none, so a re-send of a later saying
//!   is stored again.

use crate::core::error::Result;
use crate::core::ids;
use crate::core::model::MessageInput;
use crate::core::store::Store;
use crate::core::time::parse_millis;
use std::collections::{HashMap, HashSet};

/// Most repeats of the same words one session numbers (an import checks
/// a message's id against this many).
pub const MAX_REPEATS: usize = 10_000;

/// How many repeat numbers are looked up in one statement.
const PROBE: usize = 64;

/// The ids `messages` take in `session_id` (see the module's docs).
pub fn identify(store: &Store<'_>, session_id: &str, messages: &[MessageInput]) -> Result<Vec<String>> {
    let mut assigned = ids::message_ids(session_id, messages.iter().map(|m| (m.role.as_str(), m.content.as_str())));
    let stored = store.message_times(&assigned)?;
    // The call's sayings of each words, in order.
    let mut groups: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        groups.entry((m.role.as_str(), m.content.as_str())).or_default().push(i);
    }
    for ((role, content), sayings) in groups {
        // The session's first saying of these words, and when it was said.
        let Some(first) = stored.get(&ids::message_id(session_id, role, content)) else { continue };
        let first = first.as_deref().and_then(parse_millis);
        let timed: Vec<i64> = sayings.iter().filter_map(|&i| time_of(messages.get(i))).collect();
        // Nothing timed to tell apart, or the one saying is the first sent
        // again (a re-sent call): each keeps its number in the call.
        if timed.is_empty() || (sayings.len() == 1 && timed.first().copied() == first) {
            continue;
        }
        let mut repeats = stored_repeats(store, session_id, role, content)?;
        repeats.insert(0, first);
        for (i, n) in number(&sayings, messages, &repeats) {
            if let Some(slot) = assigned.get_mut(i) {
                *slot = ids::repeated_message_id(session_id, role, content, n);
            }
        }
    }
    Ok(assigned)
}

/// When message `m` was sent, in epoch millis, if it says.
fn time_of(m: Option<&MessageInput>) -> Option<i64> {
    m.and_then(|m| m.timestamp.as_deref()).and_then(parse_millis)
}

/// The repeat numbers the sayings (indices into `messages`, in order) of
/// one words take, given the session's stored repeats of them (number to
/// time, `None` for one stored untimed):
/// 1. each timed saying the stored repeat with its time, not taken yet;
/// 2. each untimed saying its number within the call if not taken, else
///    the lowest stored repeat not taken;
/// 3. each timed saying left the lowest stored untimed repeat not taken
///    (it may be the same saying, sent untimed before), else the first
///    number neither stored nor taken.
fn number(sayings: &[usize], messages: &[MessageInput], repeats: &HashMap<usize, Option<i64>>) -> Vec<(usize, usize)> {
    let mut taken: HashSet<usize> = HashSet::new();
    let mut out = Vec::with_capacity(sayings.len());
    let lowest =
        |taken: &HashSet<usize>, want: &dyn Fn(Option<i64>) -> bool| repeats.iter().filter(|(n, t)| want(**t) && !taken.contains(*n)).map(|(n, _)| *n).min();
    let mut left = Vec::new();
    for &i in sayings {
        let Some(sent) = time_of(messages.get(i)) else { continue };
        match lowest(&taken, &|t| t == Some(sent)) {
            Some(n) => {
                taken.insert(n);
                out.push((i, n));
            }
            None => left.push(i),
        }
    }
    for (k, &i) in sayings.iter().enumerate() {
        if time_of(messages.get(i)).is_some() {
            continue;
        }
        let n = if taken.contains(&k) { lowest(&taken, &|_| true) } else { Some(k) };
        if let Some(n) = n.or_else(|| first_free(repeats, &taken)) {
            taken.insert(n);
            out.push((i, n));
        }
    }
    for i in left {
        if let Some(n) = lowest(&taken, &|t| t.is_none()).or_else(|| first_free(repeats, &taken)) {
            taken.insert(n);
            out.push((i, n));
        }
    }
    out
}

/// The lowest repeat number neither stored nor taken.
fn first_free(repeats: &HashMap<usize, Option<i64>>, taken: &HashSet<usize>) -> Option<usize> {
    (0..MAX_REPEATS).find(|n| !repeats.contains_key(n) && !taken.contains(n))
}

/// The session's stored repeats of these words after the first, number to
/// time (`None`: stored without one), read [`PROBE`] numbers at a time
/// (the words hashed once) until a whole probe finds none stored.
fn stored_repeats(store: &Store<'_>, session_id: &str, role: &str, content: &str) -> Result<HashMap<usize, Option<i64>>> {
    let mut repeats = HashMap::new();
    let mut from = 1;
    while from < MAX_REPEATS {
        let to = from.saturating_add(PROBE).min(MAX_REPEATS);
        let probe = ids::repeat_ids(session_id, role, content, from..to);
        let times = store.message_times(&probe.iter().map(|(_, id)| id.clone()).collect::<Vec<_>>())?;
        if times.is_empty() {
            break;
        }
        for (n, id) in &probe {
            if let Some(t) = times.get(id) {
                repeats.insert(*n, t.as_deref().and_then(parse_millis));
            }
        }
        from = to;
    }
    Ok(repeats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(t: Option<&str>) -> MessageInput {
        MessageInput { role: "user".into(), content: "yes".into(), timestamp: t.map(str::to_string) }
    }

    #[test]
    fn test_a_window_overlapping_earlier_calls_takes_their_repeats_by_time() {
        let t = |s: &str| parse_millis(s);
        // Stored: r0 at t1, r1 at t2. The call: yes@t2 then yes@t3 (a window
        // that dropped t1), at the call's own indices 1 and 3.
        let stored: HashMap<usize, Option<i64>> = [(0, t("2025-01-01T00:00:00Z")), (1, t("2025-01-02T00:00:00Z"))].into_iter().collect();
        let mut messages = vec![said(None); 4];
        messages[1] = said(Some("2025-01-02T00:00:00Z"));
        messages[3] = said(Some("2025-01-03T00:00:00Z"));
        let got = number(&[1, 3], &messages, &stored);
        assert_eq!(got, vec![(1, 1), (3, 2)], "t2 is r1 sent again; t3 is new, the first free number");
        // In the other order, the same.
        let got = number(&[3, 1], &messages, &stored);
        assert!(got.contains(&(1, 1)) && got.contains(&(3, 2)), "{got:?}");
        // A gap (r1 deleted) does not take a re-send of r2.
        let gapped: HashMap<usize, Option<i64>> = [(0, t("2025-01-01T00:00:00Z")), (2, t("2025-01-03T00:00:00Z"))].into_iter().collect();
        assert_eq!(number(&[3], &messages, &gapped), vec![(3, 2)]);
        // Untimed sayings keep their number in the call.
        let untimed = vec![said(None), said(Some("2025-01-09T00:00:00Z"))];
        assert_eq!(number(&[0, 1], &untimed, &stored), vec![(0, 0), (1, 2)]);
        // A timed re-send comes first: an untimed saying whose number it
        // holds takes another stored one.
        let both = vec![said(Some("2025-01-02T00:00:00Z")), said(None)];
        let got = number(&[0, 1], &both, &stored);
        assert!(got.contains(&(0, 1)) && got.contains(&(1, 0)), "{got:?}");
        // Words stored untimed and sent again with a time are that saying.
        let untimed_first: HashMap<usize, Option<i64>> = [(0, None)].into_iter().collect();
        assert_eq!(number(&[0], &[said(Some("2025-01-05T00:00:00Z"))], &untimed_first), vec![(0, 0)]);
        // The same words at the same time twice in one call: two sayings.
        let twice = vec![said(Some("2025-01-02T00:00:00Z")), said(Some("2025-01-02T00:00:00Z"))];
        let got = number(&[0, 1], &twice, &stored);
        assert!(got.contains(&(0, 1)) && got.contains(&(1, 2)), "{got:?}");
    }
}
