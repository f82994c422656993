//! Identifiers. Every id is text, so none loses precision crossing into
//! JavaScript.
//!
//! * Message ids are content-addressed: SHA-256 over the session id, role
//!   and content, each field prefixed by its byte length (so no two
//!   different triples encode alike), truncated to 128 bits, lowercase hex.
//! * Memory ids sort by creation time: 12 hex digits of milliseconds since
//!   the epoch, then 20 hex digits derived from the memory's fingerprint
//!   and a per-call sequence number.

use sha2::{Digest, Sha256};

/// The content-addressed id of a message (32 hex characters).
pub fn message_id(session_id: &str, role: &str, content: &str) -> String {
    let mut h = Sha256::new();
    for field in [session_id, role, content] {
        h.update((field.len() as u64).to_be_bytes());
        h.update(field.as_bytes());
    }
    hex(h.finalize().iter().take(16))
}

/// A stable fingerprint of a memory's meaning: type and normalized content.
pub fn fingerprint(kind: &str, content: &str) -> String {
    let norm: String = content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let mut h = Sha256::new();
    h.update((kind.len() as u64).to_be_bytes());
    h.update(kind.as_bytes());
    h.update(norm.as_bytes());
    hex(h.finalize().iter().take(16))
}

/// A time-sortable memory id (32 hex characters).
pub fn memory_id(now_millis: i64, fingerprint: &str, seq: u64) -> String {
    let mut h = Sha256::new();
    h.update(fingerprint.as_bytes());
    h.update(seq.to_be_bytes());
    let tail = hex(h.finalize().iter().take(10));
    format!("{:012x}{}", now_millis.max(0) as u64 & 0xffff_ffff_ffff, tail)
}

/// Whether `s` looks like an id of ours (32 lowercase hex characters).
pub fn is_id(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
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
    fn test_memory_ids_sort_by_time() {
        let early = memory_id(1_000, "f", 0);
        let late = memory_id(2_000, "a", 0);
        assert!(early < late);
        assert!(is_id(&early));
    }
}
