//! Which id each message of a call takes.
//!
//! A message's id is its words' (SHA-256 over session, role and content:
//! [`ids::message_id`]), so a call sent again finds its messages stored and
//! adds nothing. The same words said again are numbered into ids of their
//! own ([`ids::repeated_message_id`]): within one call by their order, and
//! across calls by their timestamps. A message whose id is stored with
//! another timestamp was said again later (a second "yes" in a later call,
//! a preference stated again after it changed), not sent again: it takes
//! the next repeat number that is free, or the one stored with its own
//! timestamp (which it is, sent again).
//!
//! What this does not do: tell a message sent without a timestamp from a
//! repeat. Without one, the same words in a later call of the session are
//! the stored message, as they always were.

use crate::core::error::Result;
use crate::core::ids;
use crate::core::model::MessageInput;
use crate::core::store::Store;
use crate::core::time::parse_millis;
use std::collections::HashSet;

/// Most repeats of the same words one session numbers (an import checks
/// a message's id against this many).
pub const MAX_REPEATS: usize = 10_000;

/// How many repeat numbers are looked up in one statement.
const PROBE: usize = 64;

/// The ids `messages` take in `session_id` (see the module's docs).
pub fn identify(store: &Store<'_>, session_id: &str, messages: &[MessageInput]) -> Result<Vec<String>> {
    let mut assigned = ids::message_ids(session_id, messages.iter().map(|m| (m.role.as_str(), m.content.as_str())));
    let stored = store.message_times(&assigned)?;
    let mut taken: HashSet<String> = assigned.iter().cloned().collect();
    for (m, id) in messages.iter().zip(assigned.iter_mut()) {
        let Some(sent) = m.timestamp.as_deref().and_then(parse_millis) else { continue };
        let said_before = stored.get(id.as_str()).is_some_and(|t| t.as_deref().and_then(parse_millis).is_some_and(|t| t != sent));
        if !said_before {
            continue;
        }
        let Some(first) = ids::repeat_of(id, session_id, &m.role, &m.content, MAX_REPEATS) else { continue };
        if let Some(free) = next_repeat(store, session_id, m, sent, first, &taken)? {
            taken.insert(free.clone());
            *id = free;
        }
    }
    Ok(assigned)
}

/// The first repeat after `after` of `m`'s words that no other message
/// of the call took and that is not stored, or stored with `sent` as its
/// time; `None` past [`MAX_REPEATS`].
fn next_repeat(store: &Store<'_>, session_id: &str, m: &MessageInput, sent: i64, after: usize, taken: &HashSet<String>) -> Result<Option<String>> {
    let mut from = after.saturating_add(1);
    while from < MAX_REPEATS {
        let to = from.saturating_add(PROBE).min(MAX_REPEATS);
        let candidates: Vec<String> = (from..to).map(|n| ids::repeated_message_id(session_id, &m.role, &m.content, n)).filter(|c| !taken.contains(c)).collect();
        let stored = store.message_times(&candidates)?;
        let fits = |c: &String| match stored.get(c) {
            None => true,
            Some(t) => t.as_deref().and_then(parse_millis) == Some(sent),
        };
        if let Some(c) = candidates.into_iter().find(fits) {
            return Ok(Some(c));
        }
        from = to;
    }
    Ok(None)
}
