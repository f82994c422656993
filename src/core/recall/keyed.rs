//! Two things ingest and recall look memories up by, held in memory by
//! the turn directory instead of indexed in SQLite: a memory's
//! fingerprint ([`crate::core::ids::fingerprint`]: a hash of type and
//! normalized content, how ingest finds a meaning already stored) and its
//! topic key (how supersession and the key channel find the memories
//! holding one).
//!
//! An index on either column put every new memory on a random leaf of a
//! B-tree as large as the profile: at 100k memories, the two were over a
//! third of the pages an ingest call wrote (docs/bench/ingest-io.md). A
//! table here costs 16 to 24 bytes per memory instead (an 8-byte key, and
//! 4-byte slots at most half full), and is rebuilt with the directory.
//!
//! What it does not do: tell which memories are live, or decide a match.
//! Keys are 64 bits of the looked-up text, so two texts may share one; a
//! lookup returns candidates that the caller checks against the stored
//! rows (status and whole text).

/// Documents (numbered as the directory numbers memories) by a 64-bit
/// key: open addressing, linear probing, a slot holding document + 1
/// (0 is empty). Append-only, like the directory. A document may have no
/// key ([`NONE`]): it is numbered but never found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyedDocs {
    /// Each document's key, in document order.
    keys: Vec<u64>,
    slots: Vec<u32>,
    /// Documents with a key.
    placed: usize,
}

/// The key of a document that has none.
pub const NONE: u64 = 0;

/// The key of a fingerprint: its first 16 hex digits (our fingerprints
/// are 32), or [`text_key`] when they are not hex (a fingerprint is never
/// parsed for meaning; any stable 64 bits do).
pub fn fingerprint_key(fingerprint: &str) -> u64 {
    match fingerprint.get(..16).map(|h| u64::from_str_radix(h, 16)) {
        Some(Ok(k)) => k.max(1),
        _ => text_key(fingerprint),
    }
}

/// The key of any text (a topic key): a 64-bit FNV-1a of its bytes, never
/// [`NONE`]. Stable across builds: snapshots keep these keys.
pub fn text_key(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3)).max(1)
}

impl KeyedDocs {
    /// Bytes the table holds on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.keys.capacity().saturating_mul(8).saturating_add(self.slots.capacity().saturating_mul(4))
    }

    /// Documents held.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys of documents `from..`, in order (for a snapshot).
    pub fn keys_from(&self, from: usize) -> &[u64] {
        self.keys.get(from..).unwrap_or(&[])
    }

    /// Adds the next document, with `key` ([`NONE`] for none).
    pub fn push(&mut self, key: u64) {
        let doc = self.keys.len() as u32;
        self.keys.push(key);
        if key == NONE {
            return;
        }
        self.placed = self.placed.saturating_add(1);
        if self.placed.saturating_mul(2) > self.slots.len() {
            self.grow();
        } else {
            place(&mut self.slots, key, doc);
        }
    }

    /// The documents whose key is `key`, in no particular order (none for
    /// [`NONE`]).
    pub fn docs_with(&self, key: u64) -> impl Iterator<Item = u32> + '_ {
        let mask = self.slots.len().wrapping_sub(1);
        let start = if self.slots.is_empty() { 0 } else { slot_of(key) & mask };
        let mut i = start;
        let mut done = self.slots.is_empty() || key == NONE;
        std::iter::from_fn(move || {
            while !done {
                let Some(&s) = self.slots.get(i) else {
                    done = true;
                    return None;
                };
                let Some(doc) = s.checked_sub(1) else {
                    done = true;
                    return None;
                };
                // The length is a power of two, `mask` one less: `i + 1`
                // is at most the length, and wraps to 0 past the end.
                i = i.wrapping_add(1) & mask;
                done = i == start;
                if self.keys.get(doc as usize) == Some(&key) {
                    return Some(doc);
                }
            }
            None
        })
    }

    /// Frees what growing left unused (after a load from scratch).
    pub fn shrink_to_fit(&mut self) {
        self.keys.shrink_to_fit();
    }

    /// Room for the placed documents at most half full, every one placed
    /// again.
    fn grow(&mut self) {
        let cap = self.placed.saturating_mul(2).next_power_of_two().max(64);
        let mut slots = vec![0; cap];
        for (doc, &key) in self.keys.iter().enumerate() {
            if key != NONE {
                place(&mut slots, key, doc as u32);
            }
        }
        self.slots = slots;
    }
}

/// Puts `doc` with key `key` in the first free slot from where the key's
/// probe starts. `slots` is a power of two long and at most half full, so
/// a free slot is found. A document numbered past `u32::MAX - 1` has no
/// slot value: it is left unplaced, never found (as one without a key).
fn place(slots: &mut [u32], key: u64, doc: u32) {
    let Some(value) = doc.checked_add(1) else { return };
    let mask = slots.len().wrapping_sub(1);
    let mut i = slot_of(key) & mask;
    while let Some(slot) = slots.get_mut(i) {
        if *slot == 0 {
            *slot = value;
            return;
        }
        i = i.wrapping_add(1) & mask;
    }
}

/// Where a key's probe starts: its high bits mixed with the low ones
/// (FNV's low bits mix less than its high ones).
fn slot_of(key: u64) -> usize {
    (key ^ (key >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(20) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_a_fingerprint_key_is_its_hex_prefix_and_any_other_text_is_hashed() {
        assert_eq!(fingerprint_key("00000000000000ff0123456789abcdef"), 255);
        assert_eq!(fingerprint_key("not hex at all"), text_key("not hex at all"));
        assert_ne!(text_key("not hex at all"), text_key("not hex at alm"));
        // FNV-1a of "a", fixed: snapshots keep these keys.
        assert_eq!(text_key("a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(fingerprint_key("0000000000000000ffff"), NONE);
    }

    #[test]
    fn test_every_document_is_found_by_its_key_through_growth() {
        let mut t = KeyedDocs::default();
        let key = |d: u64| (d + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
        for d in 0..5000u64 {
            t.push(key(d));
        }
        for d in 0..5000u64 {
            assert_eq!(t.docs_with(key(d)).collect::<Vec<_>>(), vec![d as u32]);
        }
        assert_eq!(t.docs_with(12345).count(), 0);
    }

    #[test]
    fn test_documents_sharing_a_key_are_all_returned() {
        let mut t = KeyedDocs::default();
        for k in [7, 9, 7, 7, 11] {
            t.push(k);
        }
        let mut docs: Vec<u32> = t.docs_with(7).collect();
        docs.sort_unstable();
        assert_eq!(docs, vec![0, 2, 3]);
    }

    #[test]
    fn test_documents_without_a_key_are_numbered_but_never_found() {
        let mut t = KeyedDocs::default();
        for k in [NONE, 5, NONE, NONE, 5] {
            t.push(k);
        }
        assert_eq!(t.len(), 5);
        let mut docs: Vec<u32> = t.docs_with(5).collect();
        docs.sort_unstable();
        assert_eq!(docs, vec![1, 4]);
        assert_eq!(t.docs_with(NONE).count(), 0);
    }

    #[test]
    fn test_an_empty_table_finds_nothing() {
        assert_eq!(KeyedDocs::default().docs_with(0).count(), 0);
    }
}
