//! Identifiers. Every id is text, so none loses precision crossing into
//! JavaScript.
//!
//! * Message ids are content-addressed: SHA-256 over the session id, role
//!   and content, each field prefixed by its byte length (so no two
//!   different triples encode alike), truncated to 128 bits, lowercase hex.
//! * Memory ids are ULIDs: 48 bits of milliseconds since the epoch, then
//!   80 bits derived from the memory's fingerprint and a per-call sequence
//!   number, as 26 characters of Crockford base32, lowercase. They sort by
//!   creation time, after every id of the earlier form (32 hex digits: 12
//!   of milliseconds, 20 of the same derivation), which stay valid.

use crate::core::error::{Error, Result};
use sha2::{Digest, Sha256};

/// The content-addressed id of a message (32 hex characters).
pub fn message_id(session_id: &str, role: &str, content: &str) -> String {
    repeat_id(message_digest(session_id, role, content), 0)
}

/// The digest every id of a message with these fields starts from: the
/// three fields, each prefixed by its byte length.
fn message_digest(session_id: &str, role: &str, content: &str) -> Sha256 {
    let mut h = Sha256::new();
    for field in [session_id, role, content] {
        h.update((field.len() as u64).to_be_bytes());
        h.update(field.as_bytes());
    }
    h
}

/// The id of the `n`-th repeat ([`repeated_message_id`]) from its
/// message's [`message_digest`]: the first's is the digest as it is, each
/// later one's has `repeat` and `n` added as two more fields.
fn repeat_id(mut h: Sha256, n: usize) -> String {
    if n > 0 {
        let repeat = n.to_string();
        for field in ["repeat", repeat.as_str()] {
            h.update((field.len() as u64).to_be_bytes());
            h.update(field.as_bytes());
        }
    }
    hex(h.finalize().iter().take(16))
}

/// A short stable digest of `text` (8 hex characters of SHA-256): the
/// same on every platform and build, so a key made with it is too.
pub fn digest(text: &str) -> String {
    hex(Sha256::digest(text.as_bytes()).iter().take(4))
}

/// The [`digest`] of a keyed memory's words with their dates set aside
/// ([`crate::core::dates::undated`]), stored beside it so that the holders
/// of a key saying the same words are found by an index. Equal words give
/// equal digests; equal digests are then checked word for word.
///
/// Stored digests hold only while `undated` reads as it did when they were
/// written: a change to it needs a migration that sets every
/// `undated_digest` to NULL (`Store::active_key_holders` then reads those
/// holders whole and writes theirs again). A stale digest would hide a
/// repeat, not invent one.
pub fn undated_digest(content: &str) -> String {
    digest(&crate::core::dates::undated(content))
}

/// The id of the `n`-th repeat of a message within one call: the first
/// (`n` 0) is [`message_id`]; each later one, the same words said again
/// (a second "yes"), has an id of its own, so both are kept.
pub fn repeated_message_id(session_id: &str, role: &str, content: &str, n: usize) -> String {
    repeat_id(message_digest(session_id, role, content), n)
}

/// The ids of one call's messages (role, content), in order: each repeat
/// of the same role and words within the call numbered from its first
/// ([`repeated_message_id`]). Sending the same call again gives the same
/// ids, so ingest stays idempotent.
pub fn message_ids<'a>(session_id: &str, messages: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let mut seen: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    messages
        .into_iter()
        .map(|(role, content)| {
            let n = seen.entry((role, content)).or_insert(0);
            let id = repeated_message_id(session_id, role, content, *n);
            *n = n.saturating_add(1);
            id
        })
        .collect()
}

/// Which repeat (0 for the first) `id` is of a message with these
/// fields, trying at most `max_repeats` repeats; `None` when it is none.
/// The fields are hashed once and the digest copied for each repeat, so a
/// long content costs one pass over it, not one per repeat tried.
pub fn repeat_of(id: &str, session_id: &str, role: &str, content: &str, max_repeats: usize) -> Option<usize> {
    find_repeat(&message_digest(session_id, role, content), id, 0..max_repeats)
}

/// The number in `range` whose repeat id, from `digest`, is `id`.
fn find_repeat(digest: &Sha256, id: &str, range: std::ops::Range<usize>) -> Option<usize> {
    range.into_iter().find(|&n| repeat_id(digest.clone(), n) == id)
}

/// The ids of repeats `range` of a message with these fields, the fields
/// hashed once for all of them.
pub fn repeat_ids(session_id: &str, role: &str, content: &str, range: std::ops::Range<usize>) -> Vec<(usize, String)> {
    let digest = message_digest(session_id, role, content);
    range.map(|n| (n, repeat_id(digest.clone(), n))).collect()
}

/// [`repeat_of`] for many ids: each words' repeats are hashed once, however
/// many of its ids are asked (an import of a long session's thousand
/// "ok"s hashes a thousand ids, not half a million), up to
/// [`Repeats::MAX_KEPT`] ids kept for one session at a time (a file lists
/// its messages session by session; the ids kept are dropped when the
/// session changes); past that, each is hashed afresh (a file cannot make
/// it hold more), and at most [`Repeats::MAX_HASHED`] are hashed for the
/// file.
#[derive(Default)]
pub struct Repeats {
    /// By the first id of some words: the later repeats' ids hashed so
    /// far, each with its number.
    known: std::collections::HashMap<String, std::collections::HashMap<String, usize>>,
    kept: usize,
    /// The session `known` holds repeats of: a message's id names its
    /// session, so another session's repeats never match, and an export
    /// lists its messages session by session.
    session: String,
    /// Repeat ids hashed for the file so far ([`Repeats::MAX_HASHED`]).
    hashed: usize,
}

impl Repeats {
    /// Which repeat `id` is of a message with these fields, trying at most
    /// `max_repeats`; `Ok(None)` when it is none. An error once the file
    /// has had [`Repeats::MAX_HASHED`] ids hashed.
    pub fn of(&mut self, id: &str, session_id: &str, role: &str, content: &str, max_repeats: usize) -> Result<Option<usize>> {
        if self.session != session_id {
            self.known.clear();
            self.kept = 0;
            self.session = session_id.to_string();
        }
        let digest = message_digest(session_id, role, content);
        let first = Self::hash(&mut self.hashed, &digest, 0)?;
        if first == id {
            return Ok(Some(0));
        }
        if self.kept >= Self::MAX_KEPT && !self.known.contains_key(&first) {
            return Self::find(&mut self.hashed, &digest, id, 1..max_repeats);
        }
        let (kept, hashed) = (&mut self.kept, &mut self.hashed);
        let later = self.known.entry(first).or_default();
        if let Some(&n) = later.get(id) {
            return Ok(Some(n));
        }
        // Numbers 1..=len are hashed already.
        for n in later.len().saturating_add(1)..max_repeats {
            let r = Self::hash(hashed, &digest, n)?;
            if r == id {
                if *kept < Self::MAX_KEPT {
                    later.insert(r, n);
                    *kept = kept.saturating_add(1);
                }
                return Ok(Some(n));
            }
            if *kept >= Self::MAX_KEPT {
                // Full: the rest of this search is not kept.
                return Self::find(hashed, &digest, id, n.saturating_add(1)..max_repeats);
            }
            later.insert(r, n);
            *kept = kept.saturating_add(1);
        }
        Ok(None)
    }

    /// [`repeat_id`] `n` of `digest`, counted in `hashed` against
    /// [`Repeats::MAX_HASHED`].
    fn hash(hashed: &mut usize, digest: &Sha256, n: usize) -> Result<String> {
        if *hashed >= Self::MAX_HASHED {
            return Err(Error::invalid(format!(
                "the file's message ids name repeats of their words past what an import checks ({} ids hashed; a repeat is a message's n-th saying of the same words in its session)",
                Self::MAX_HASHED
            )));
        }
        *hashed = hashed.saturating_add(1);
        Ok(repeat_id(digest.clone(), n))
    }

    /// The repeat in `range` whose id is `id`, hashed afresh.
    fn find(hashed: &mut usize, digest: &Sha256, id: &str, range: std::ops::Range<usize>) -> Result<Option<usize>> {
        for n in range {
            if Self::hash(hashed, digest, n)? == id {
                return Ok(Some(n));
            }
        }
        Ok(None)
    }

    /// Most repeat ids kept for one file (about 2 MB).
    pub const MAX_KEPT: usize = 20_000;

    /// Most repeat ids hashed for one file (the first of each message's
    /// words included): a file's message naming its words' 9,999th repeat
    /// costs 10,000 hashes, and thousands of such records, each of other
    /// words, would take minutes; an export's messages are nearly all
    /// their words' first saying.
    pub const MAX_HASHED: usize = 1_000_000;
}

/// A stable fingerprint of a memory's meaning and scope: type, normalized
/// content, and its metadata when it has any (whose it is: the same words
/// from another agent or user are another memory). Without metadata it is
/// what it always was, so stored fingerprints keep matching.
pub fn fingerprint(kind: &str, content: &str, metadata: &crate::core::model::Metadata) -> String {
    let norm: String = content.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let mut h = Sha256::new();
    h.update((kind.len() as u64).to_be_bytes());
    h.update(kind.as_bytes());
    h.update(norm.as_bytes());
    if !metadata.is_empty() {
        // A map with its keys in order: the same metadata, the same text.
        let scope = serde_json::to_string(metadata).unwrap_or_default();
        h.update([0u8]);
        h.update((scope.len() as u64).to_be_bytes());
        h.update(scope.as_bytes());
    }
    hex(h.finalize().iter().take(16))
}

/// Crockford's base32 alphabet, lowercase (no i, l, o, u).
const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// Length of a ULID in characters.
pub const ULID_CHARS: usize = 26;

/// A time-sortable memory id: a ULID (26 lowercase Crockford base32
/// characters). Lowercase, so that every id of the earlier hex form (all
/// made before now, so starting `019` or `01a`) sorts before it, as the
/// time order says.
pub fn memory_id(now_millis: i64, fingerprint: &str, seq: u64) -> String {
    let mut h = Sha256::new();
    h.update(fingerprint.as_bytes());
    h.update(seq.to_be_bytes());
    let digest = h.finalize();
    let time = u128::from(now_millis.max(0) as u64 & 0xffff_ffff_ffff);
    let tail = digest.iter().take(10).fold(0u128, |acc, b| (acc << 8) | u128::from(*b));
    id_of_key(((time << 80) | tail) | ULID_KEY_BIT)
}

/// The bit that marks a ULID's 128-bit key (see [`key_of_id`]): a ULID's
/// own top bit is its time's, zero until the year 6429.
const ULID_KEY_BIT: u128 = 1 << 127;

/// An id this service makes as 128 bits, for compact in-memory tables:
/// a hex id's value, or a ULID's with [`ULID_KEY_BIT`] set, so that the
/// two forms never share a key. `None` for any other text.
pub fn key_of_id(id: &str) -> Option<u128> {
    if is_hex_id(id) {
        return u128::from_str_radix(id, 16).ok().filter(|k| k & ULID_KEY_BIT == 0);
    }
    if !is_ulid(id) {
        return None;
    }
    let mut value: u128 = 0;
    for b in id.bytes() {
        let digit = CROCKFORD.iter().position(|c| *c == b)? as u128;
        value = (value << 5) | digit;
    }
    (value & ULID_KEY_BIT == 0).then_some(value | ULID_KEY_BIT)
}

/// The id whose key [`key_of_id`] gave.
pub fn id_of_key(key: u128) -> String {
    if key & ULID_KEY_BIT == 0 {
        return format!("{key:032x}");
    }
    // Five bits a character, the lowest last.
    let mut value = key & !ULID_KEY_BIT;
    let mut chars = [b'0'; ULID_CHARS];
    for c in chars.iter_mut().rev() {
        *c = CROCKFORD.get((value & 31) as usize).copied().unwrap_or(b'0');
        value = value.checked_shr(5).unwrap_or(0);
    }
    chars.iter().map(|b| char::from(*b)).collect()
}

/// Whether `s` is an id this service makes: a ULID (lowercase, see
/// [`memory_id`]) or the earlier 32 lowercase hex characters.
pub fn is_id(s: &str) -> bool {
    is_hex_id(s) || is_ulid(s)
}

/// 32 lowercase hex characters (message ids; memory ids before ULIDs).
pub fn is_hex_id(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A lowercase ULID whose first character keeps it within 128 bits.
pub fn is_ulid(s: &str) -> bool {
    s.len() == ULID_CHARS && s.bytes().all(|b| CROCKFORD.contains(&b)) && s.as_bytes().first().is_some_and(|b| *b <= b'7')
}

/// Lowercase hex of `bytes` (a digest, or the leading bytes of one).
pub(crate) fn hex<'a>(bytes: impl IntoIterator<Item = &'a u8, IntoIter: ExactSizeIterator>) -> String {
    let bytes = bytes.into_iter();
    let mut s = String::with_capacity(bytes.len().saturating_mul(2));
    for b in bytes {
        // A nibble is below 16, so it always is a hex digit.
        s.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        s.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_repeats_finds_each_repeat_as_repeat_of_does() {
        let mut r = Repeats::default();
        for n in [0, 5, 3, 40, 5, 0] {
            let id = repeated_message_id("s", "user", "ok", n);
            assert_eq!(r.of(&id, "s", "user", "ok", 100).unwrap(), Some(n));
            assert_eq!(repeat_of(&id, "s", "user", "ok", 100), Some(n));
        }
        assert_eq!(r.of(&repeated_message_id("s", "user", "ok", 150), "s", "user", "ok", 100).unwrap(), None);
        assert_eq!(r.of(&message_id("s", "user", "no"), "s", "user", "ok", 100).unwrap(), None);
        // A file of many words asked at their last repeat keeps at most MAX_KEPT ids.
        let mut r = Repeats::default();
        for w in 0..5 {
            let content = format!("word {w}");
            let id = repeated_message_id("s", "user", &content, 9_000);
            assert_eq!(r.of(&id, "s", "user", &content, 10_000).unwrap(), Some(9_000));
        }
        assert!(r.kept <= Repeats::MAX_KEPT && r.known.values().map(|m| m.len()).sum::<usize>() <= Repeats::MAX_KEPT);
        assert_eq!(repeat_ids("s", "user", "ok", 3..5), vec![(3, repeated_message_id("s", "user", "ok", 3)), (4, repeated_message_id("s", "user", "ok", 4))]);
    }

    /// An export of 400 sessions each saying "ok" 100 times (40,000
    /// records, about 7 MB) checks each id with a hash or two: the ids
    /// kept are one session's.
    #[test]
    fn test_repeats_in_session_order_cost_a_hash_or_two_each() {
        let mut r = Repeats::default();
        for s in 0..400 {
            let session = format!("s{s}");
            for n in 0..100 {
                let id = repeated_message_id(&session, "user", "ok", n);
                assert_eq!(r.of(&id, &session, "user", "ok", 10_000).unwrap(), Some(n), "{session} repeat {n}");
            }
        }
        assert!(r.hashed <= 2 * 40_000, "{} hashes for 40,000 records", r.hashed);
    }

    /// However a file's repeats come, no more than MAX_KEPT ids are kept,
    /// and ids hashed past MAX_HASHED refuse the file.
    #[test]
    fn test_repeats_keep_at_most_max_kept_and_hash_at_most_max_hashed() {
        let mut r = Repeats::default();
        for w in 0..Repeats::MAX_KEPT {
            let c = format!("w{w}");
            assert_eq!(r.of(&repeated_message_id("s", "user", &c, 1), "s", "user", &c, 10).unwrap(), Some(1));
        }
        for w in 0..2_000 {
            let c = format!("w{w}");
            for n in 2..10 {
                assert_eq!(r.of(&repeated_message_id("s", "user", &c, n), "s", "user", &c, 10).unwrap(), Some(n));
            }
        }
        assert!(r.kept <= Repeats::MAX_KEPT, "kept {} > MAX_KEPT", r.kept);
        let mut r = Repeats { hashed: Repeats::MAX_HASHED - 5, ..Repeats::default() };
        let deep = repeated_message_id("s", "user", "ok", 9);
        assert!(r.of(&deep, "s", "user", "ok", 10_000).is_err(), "past the budget: refused");
    }

    #[test]
    fn test_message_id_is_stable_and_32_hex() {
        let a = message_id("s1", "user", "Use pnpm");
        assert_eq!(a, message_id("s1", "user", "Use pnpm"));
        assert!(is_id(&a));
    }

    #[test]
    fn test_message_id_fields_are_unambiguous() {
        // Without length prefixes these two would hash the same bytes.
        assert_ne!(message_id("ab", "c", "d"), message_id("a", "bc", "d"));
        assert_ne!(message_id("s", "user", "x"), message_id("s", "assistant", "x"));
    }

    #[test]
    fn test_a_repeated_message_in_one_call_has_an_id_of_its_own_and_resending_gives_the_same() {
        let call = [("user", "yes"), ("assistant", "Shall I delete it?"), ("user", "yes"), ("user", "yes")];
        let ids = message_ids("s", call);
        assert_eq!(ids[0], message_id("s", "user", "yes"), "a first saying keeps the id it always had");
        assert_eq!(ids.iter().collect::<std::collections::HashSet<_>>().len(), 4, "{ids:?}");
        assert_eq!(ids, message_ids("s", call));
        assert_eq!(repeat_of(&ids[3], "s", "user", "yes", 500), Some(2));
        assert_eq!(repeat_of(&ids[1], "s", "user", "yes", 500), None);
    }

    #[test]
    fn test_memory_ids_sort_by_time() {
        let early = memory_id(1_000, "f", 0);
        let late = memory_id(2_000, "a", 0);
        assert!(early < late);
        assert!(is_id(&early));
    }

    #[test]
    fn test_memory_ids_are_ulids_with_the_time_in_front() {
        // 2026-04-21T00:00:00Z
        let id = memory_id(1_776_729_600_000, "f", 0);
        assert_eq!(id.len(), 26);
        assert!(is_ulid(&id) && !is_hex_id(&id));
        // The first ten characters are the 48-bit time alone.
        assert_eq!(&id[..10], &memory_id(1_776_729_600_000, "other", 7)[..10]);
        assert_eq!(&id[..10], "01kppncc00");
    }

    #[test]
    fn test_ids_of_either_form_round_trip_through_their_keys() {
        // A memory id of the earlier form: 12 hex digits of time in front.
        let hex = format!("{:012x}{}", 1_776_729_600_000u64, "0123456789abcdef0123");
        let ulid = memory_id(1_776_729_600_000, "f", 3);
        for id in [&hex, &ulid] {
            assert_eq!(id_of_key(key_of_id(id).unwrap()), *id);
        }
        assert_ne!(key_of_id(&hex), key_of_id(&ulid));
        assert_eq!(key_of_id("01JSGCEXAMPLE000000000000"), None);
    }

    #[test]
    fn test_ulids_sort_after_every_earlier_hex_id() {
        // The last hex id made before the switch, and one from 2039 (the
        // form could not reach further before sorting past a ULID of 2026).
        let hex_now = format!("{:012x}{}", 1_796_000_000_000u64, "f".repeat(20));
        let hex_2039 = format!("{:012x}{}", 0x01ff_ffff_ffffu64, "f".repeat(20));
        let ulid = memory_id(1_796_000_000_001, "f", 0);
        assert!(is_hex_id(&hex_now) && is_hex_id(&hex_2039));
        assert!(hex_now < ulid && hex_2039 < ulid, "{hex_now} {hex_2039} {ulid}");
    }
}
