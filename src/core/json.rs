//! The one parser of JSON text a caller sent: a request body, a filter
//! given as text, a line of an import; and the writers of a large text
//! that never grow a buffer by doubling: [`to_string_exact`] (one buffer
//! of its length) and [`JsonPieces`] (pieces of 64 KiB). An object that names a key twice
//! is refused: parsers disagree on which one wins, so a proxy or a log and
//! this service could read different things from the same bytes (and the
//! loser would be silently dropped). serde_json's nesting limit (128)
//! still applies. Below `filter`, `portable` and `rest`, which all read
//! caller text through it; each names the text in its own errors.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The memory one JSON text the service reads may take as a tree, beside
/// its strings (which take about their length, as the text does: the
/// body's own limit holds them). A tree of small values takes far more
/// than its text: 17 MB of `[[],[],...]` is 5.9 million arrays, about 190
/// MB, and 390 KB of `{"a":0},...` 33 MB (a map's first node holds room
/// for eleven members), past an isolate's 128 MB. Charged as the text is
/// read ([`TREE_VALUE_BYTES`], [`TREE_OBJECT_BYTES`],
/// [`TREE_MEMBER_BYTES`]), measured natively. An ingest of 500 messages
/// takes about 380 KB; an MCP batch of twenty such fits, one of a hundred
/// does not.
pub const MAX_JSON_TREE_BYTES: usize = 8 * 1024 * 1024;
/// What each value takes in its parent (an array's slot, a member's value).
pub const TREE_VALUE_BYTES: usize = 32;
/// What an object's map takes besides its members (its first node).
pub const TREE_OBJECT_BYTES: usize = 600;
/// What each member's key takes besides its text.
pub const TREE_MEMBER_BYTES: usize = 32;

/// Parses `text` as one JSON value (nothing after it but whitespace),
/// refusing a key given twice in any object, however deep, and a text
/// whose tree would take more than [`MAX_JSON_TREE_BYTES`], as soon as
/// its reading passes them.
pub fn parse_strict(text: &str) -> Result<Value, serde_json::Error> {
    let left = std::cell::Cell::new(MAX_JSON_TREE_BYTES);
    let huge = std::cell::Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(text);
    let v = StrictValue { left: &left, huge: &huge }.deserialize(&mut de)?;
    de.end()?;
    // Only a text that gave a whole number from 2^63 up may hold an
    // integer past 64 bits (read as such a float): it alone is read again
    // (a pass over 17 MB took as long as the parse itself).
    if huge.get() {
        if let Some(n) = integer_past_64_bits(text) {
            return Err(serde_json::Error::custom(format!(
                "the integer {} does not fit in 64 bits: it would be read as the nearest float and compare equal to others; send it as a string",
                crate::core::error::quoted(n)
            )));
        }
    }
    Ok(v)
}

/// Most digits an integer that fits in 64 bits has (`u64::MAX`).
const MAX_INTEGER_DIGITS: usize = 20;

/// The first integer of `text`, outside its strings, below `i64::MIN` or
/// above `u64::MAX` that is not how a float is written
/// ([`a_float_as_written`]). serde_json reads such an integer as the
/// nearest float, silently: `18446744073709551617` as `2^64`, equal to a
/// stored `u64::MAX`. Only a text with a run of 19 digits (`i64::MIN`'s) anywhere
/// is read token by token.
fn integer_past_64_bits(text: &str) -> Option<&str> {
    let mut run = 0usize;
    if !text.bytes().any(|c| {
        run = if c.is_ascii_digit() { run.saturating_add(1) } else { 0 };
        run >= MAX_INTEGER_DIGITS.saturating_sub(1)
    }) {
        return None;
    }
    let mut bytes = text.bytes().enumerate().peekable();
    let (mut in_string, mut escaped) = (false, false);
    while let Some((start, c)) = bytes.next() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'-' | b'0'..=b'9' => {
                // The number's whole token: digits, then a fraction or an
                // exponent if it has one (a float, read as one).
                let mut end = start.saturating_add(1);
                let mut float = false;
                while let Some(&(i, d)) = bytes.peek() {
                    if !(d.is_ascii_digit() || matches!(d, b'.' | b'e' | b'E' | b'+' | b'-')) {
                        break;
                    }
                    float |= matches!(d, b'.' | b'e' | b'E');
                    end = i.saturating_add(1);
                    bytes.next();
                }
                let n = text.get(start..end).unwrap_or_default();
                let digits = n.trim_start_matches('-').len();
                if !float && digits >= MAX_INTEGER_DIGITS.saturating_sub(1) && n.parse::<i64>().is_err() && n.parse::<u64>().is_err() && !a_float_as_written(n)
                {
                    return Some(n);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether the digits `n` are how a float is written without an exponent
/// (its shortest digits, then zeros): JavaScript's `JSON.stringify`
/// writes every number from 2^64 to 1e21 so (`2 ** 64` as
/// `18446744073709552000`), and such a text means that float, which it
/// is read as. `18446744073709551617` is no float's writing: an integer a
/// float cannot hold.
fn a_float_as_written(n: &str) -> bool {
    n.parse::<f64>().is_ok_and(|f| f.is_finite() && format!("{f}") == n)
}

/// `value` as JSON text, in a buffer of exactly its length: the text is
/// measured first (written to a counter, nothing kept), then written. A
/// buffer grown by doubling holds up to twice a text's length, and the old
/// and the new one at once while it grows: for a text of megabytes, a
/// stretch of the Wasm memory (which never shrinks) that the holes small
/// blocks leave cannot give, so the memory grows for it. Writes the text
/// twice: for small texts, `serde_json::to_string` is as good.
pub fn to_string_exact<T: serde::Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut length = Length(0);
    serde_json::to_writer(&mut length, value)?;
    let mut text = Vec::with_capacity(length.0);
    serde_json::to_writer(&mut text, value)?;
    // serde_json writes UTF-8 only.
    String::from_utf8(text).map_err(|e| serde_json::Error::io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// The most a piece of [`JsonPieces`] holds.
pub const PIECE_BYTES: usize = 64 * 1024;

/// A result's JSON text in pieces, for a result of megabytes: written
/// in pieces of [`PIECE_BYTES`] without ever being one buffer, read from
/// the pieces it arrived in, and sent as it is. One buffer of megabytes,
/// grown by doubling, is held at twice its size while it is copied into
/// the next, and takes a stretch of the Wasm memory that small
/// allocations' holes cannot give, so the memory grows for it (never to
/// shrink). A piece may end inside a character: the pieces are bytes,
/// UTF-8 only once joined.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JsonPieces {
    pieces: Vec<Vec<u8>>,
}

impl JsonPieces {
    /// A text that is one piece.
    pub fn one(text: String) -> JsonPieces {
        JsonPieces { pieces: vec![text.into_bytes()] }
    }

    /// A text in the pieces it arrived in.
    pub fn from_pieces(pieces: Vec<Vec<u8>>) -> JsonPieces {
        JsonPieces { pieces }
    }

    /// These pieces between `head` and `tail`.
    pub fn between(mut self, head: String, tail: &str) -> JsonPieces {
        self.pieces.insert(0, head.into_bytes());
        self.pieces.push(tail.as_bytes().to_vec());
        self
    }

    /// The text whole, what is not UTF-8 replaced (for tests and errors).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.pieces.concat()).into_owned()
    }

    /// The first byte that is not whitespace.
    pub fn first_byte(&self) -> Option<u8> {
        self.pieces.iter().flatten().copied().find(|b| !b.is_ascii_whitespace())
    }

    /// A reader of the text, piece after piece.
    pub fn reader(&self) -> impl std::io::Read + '_ {
        PiecesReader { rest: &self.pieces, at: &[] }
    }

    pub fn write<T: serde::Serialize + ?Sized>(value: &T) -> Result<JsonPieces, serde_json::Error> {
        let mut w = JsonPieces { pieces: Vec::new() };
        serde_json::to_writer(&mut w, value)?;
        Ok(w)
    }

    /// The text's length in bytes.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn into_pieces(self) -> Vec<Vec<u8>> {
        self.pieces
    }

    /// The text whole, for a caller that needs it as one.
    pub fn into_text(self) -> Result<String, std::string::FromUtf8Error> {
        String::from_utf8(self.pieces.concat())
    }
}

/// Reads [`JsonPieces`] one after the other.
struct PiecesReader<'a> {
    rest: &'a [Vec<u8>],
    at: &'a [u8],
}

impl std::io::Read for PiecesReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at.is_empty() {
            let Some((next, rest)) = self.rest.split_first() else { return Ok(0) };
            self.at = next;
            self.rest = rest;
        }
        self.at.read(buf)
    }
}

impl std::io::Write for JsonPieces {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while !rest.is_empty() {
            if self.pieces.last().is_none_or(|p| p.len() >= PIECE_BYTES) {
                // The first grows as it fills (a small result stays small).
                let capacity = if self.pieces.is_empty() { 0 } else { PIECE_BYTES };
                self.pieces.push(Vec::with_capacity(capacity));
            }
            let Some(piece) = self.pieces.last_mut() else { break };
            let (now, later) = rest.split_at(rest.len().min(PIECE_BYTES.saturating_sub(piece.len())));
            piece.extend_from_slice(now);
            rest = later;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A writer that keeps only the number of bytes written to it.
struct Length(usize);

impl std::io::Write for Length {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A `serde_json::Value` seed whose objects refuse duplicate keys, and
/// which refuses a tree past the bytes `left` ([`MAX_JSON_TREE_BYTES`]);
/// `huge` is set by a float that is a whole number from 2^63 up, as an
/// integer past 64 bits is read.
#[derive(Clone, Copy)]
struct StrictValue<'l> {
    left: &'l std::cell::Cell<usize>,
    huge: &'l std::cell::Cell<bool>,
}

impl StrictValue<'_> {
    fn spend<E: serde::de::Error>(self, bytes: usize) -> Result<(), E> {
        match self.left.get().checked_sub(bytes) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => Err(E::custom(format!(
                "too many values: as read, they would take more than {MAX_JSON_TREE_BYTES} bytes ({TREE_VALUE_BYTES} a value, {TREE_OBJECT_BYTES} more an object)"
            ))),
        }
    }
}

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.spend(TREE_VALUE_BYTES)?;
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // 2^63: no integer of 64 bits, signed, is a float this large.
        if v.fract() == 0.0 && v.abs() >= 9_223_372_036_854_775_808.0 {
            self.huge.set(true);
        }
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.spend(TREE_OBJECT_BYTES)?;
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            self.spend(TREE_MEMBER_BYTES)?;
            if out.contains_key(&k) {
                return Err(A::Error::custom(format!("duplicate key {}", crate::core::error::quoted(&k))));
            }
            let v = map.next_value_seed(self)?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn test_json_pieces_join_to_the_text_written_whole() {
        // Characters of two to four bytes, so pieces end inside them.
        let memories: Vec<String> = (0..20_000).map(|i| format!("東京 {i} \"é\" 😀\n")).collect();
        let pieces = JsonPieces::write(&memories).unwrap();
        let whole = serde_json::to_string(&memories).unwrap();
        assert_eq!(pieces.len(), whole.len());
        let parts = JsonPieces::write(&memories).unwrap().into_pieces();
        assert!(parts.len() > 4 && parts.iter().all(|p| p.len() <= PIECE_BYTES) && parts[..parts.len() - 1].iter().all(|p| p.len() == PIECE_BYTES));
        assert!(parts.iter().any(|p| std::str::from_utf8(p).is_err()), "a piece ends inside a character");
        assert_eq!(pieces.into_text().unwrap(), whole);
        assert_eq!(JsonPieces::write(&json!({"a": 1})).unwrap().into_text().unwrap(), "{\"a\":1}");
    }

    #[test]
    fn test_an_exact_text_is_the_text_in_a_buffer_of_its_length() {
        let value = json!({"a": vec!["東京 \"é\" 😀\n"; 3000], "b": 1.5, "c": null});
        let text = to_string_exact(&value).unwrap();
        assert_eq!(text, serde_json::to_string(&value).unwrap());
        assert_eq!(text.capacity(), text.len());
    }

    #[test]
    fn test_an_integer_past_64_bits_is_refused_not_read_as_the_nearest_float() {
        for text in [r#"{"n": 18446744073709551616}"#, r#"[1, {"a": [-9223372036854775809]}]"#, r#"{"s": "\\\"", "n": 123456789012345678901234567891}"#] {
            let e = parse_strict(text).unwrap_err().to_string();
            assert!(e.contains("does not fit in 64 bits"), "{text}: {e}");
        }
        for (text, n) in [
            // JSON.stringify(2 ** 64) and JSON.stringify(1e20): floats, as written.
            (r#"{"n": 18446744073709552000}"#, json!({"n": 18446744073709551616.0})),
            (r#"{"n": -100000000000000000000}"#, json!({"n": -1e20})),
            (r#"{"n": 18446744073709551615}"#, json!({"n": u64::MAX})),
            (r#"{"n": -9223372036854775808}"#, json!({"n": i64::MIN})),
            (r#"{"n": 18446744073709551616.0}"#, json!({"n": 18446744073709551616.0})),
            (r#"{"n": 1e300}"#, json!({"n": 1e300})),
            (
                r#"{"s": "18446744073709551616", "t": "a\"b 99999999999999999999999"}"#,
                json!({"s": "18446744073709551616", "t": "a\"b 99999999999999999999999"}),
            ),
        ] {
            assert_eq!(parse_strict(text).unwrap(), n, "{text}");
        }
    }

    #[test]
    fn test_a_key_given_twice_is_refused_at_any_depth() {
        for text in [r#"{"query": "a", "query": "b"}"#, r#"{"a": {"b": 1, "b": 2}}"#, r#"[{"x": [{"k": 1, "k": 1}]}]"#] {
            let e = parse_strict(text).unwrap_err();
            assert!(e.to_string().contains("duplicate key"), "{text}: {e}");
        }
    }

    #[test]
    fn test_deep_nesting_and_trailing_text_are_refused() {
        assert!(parse_strict(&format!("{}{}", "[".repeat(5000), "]".repeat(5000))).is_err());
        assert!(parse_strict("{} trailing").is_err());
    }

    #[test]
    fn test_a_well_formed_text_reads_as_serde_json_reads_it() {
        let text = r#"{"a": [1, -2, 1.5, "x", null, true], "b": {}, "big": 18446744073709551615, "float": 1.2345678901234567e29}"#;
        assert_eq!(parse_strict(text).unwrap(), serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(parse_strict(" 3 ").unwrap(), json!(3));
    }
}
