//! A tool's result rendered as text for the model, read from the JSON text
//! the profile wrote (in pieces, as it arrived) only as far as that text
//! needs: the top-level members, and of each list its first items and its
//! length. No tree of the whole result is made: an ingest's can hold
//! 16,000 memories, and a tree of them is several times their text in the
//! Wasm memory the isolate's profiles share.

use crate::core::error::{Error, Result};
use crate::core::json::JsonPieces;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Most items of one list an ingest's text gives the model; the
/// structured result holds them all. The largest ingest can create
/// thousands, and the text is one more copy of them in the Wasm memory.
/// (A list's and a recall's results are bounded pages, given whole.)
pub const MAX_RENDERED_ITEMS: usize = 100;

/// `tool`'s text for `result` (the operation's JSON text). Reading it
/// checks the whole text is JSON.
pub fn render(tool: &str, result: &JsonPieces) -> Result<String> {
    let keep = if tool == "ingest" { MAX_RENDERED_ITEMS } else { usize::MAX };
    let v = Shallow::read(result, keep)?;
    Ok(match tool {
        "recall" => render_recall(&v),
        "remember" => render_memory("Remembered", &v),
        "forget" => render_memory("Forgot", &v),
        "list" => render_list(&v),
        "ingest" => render_ingest(&v),
        _ => result.text(),
    })
}

/// A result's top-level members as far as a text needs them.
#[derive(Debug, Default)]
struct Shallow {
    members: BTreeMap<String, Member>,
}

#[derive(Debug)]
enum Member {
    One(Value),
    /// An array: its first items (as many as the reading keeps) and its
    /// length.
    List {
        first: Vec<Value>,
        len: usize,
    },
}

impl Shallow {
    /// Reads `result`; a result that is no object has no members.
    fn read(result: &JsonPieces, keep: usize) -> Result<Shallow> {
        let unreadable = |e: serde_json::Error| Error::storage(format!("failed to read an operation's result: {e}"));
        if result.first_byte() != Some(b'{') {
            // Read through all the same: the text must be JSON.
            return serde_json::from_reader::<_, IgnoredAny>(result.reader()).map(|_| Shallow::default()).map_err(unreadable);
        }
        let mut de = serde_json::Deserializer::from_reader(result.reader());
        ShallowSeed { keep }.deserialize(&mut de).and_then(|v| de.end().map(|()| v)).map_err(unreadable)
    }

    fn get(&self, key: &str) -> Option<&Value> {
        match self.members.get(key) {
            Some(Member::One(v)) => Some(v),
            _ => None,
        }
    }

    /// Member `key` as a string; empty if it is none.
    fn str(&self, key: &str) -> &str {
        self.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// The first items of array member `key` the reading kept, and its
    /// length; none if it is no array.
    fn items(&self, key: &str) -> (&[Value], usize) {
        match self.members.get(key) {
            Some(Member::List { first, len }) => (first, *len),
            _ => (&[], 0),
        }
    }
}

struct ShallowSeed {
    keep: usize,
}

impl<'de> DeserializeSeed<'de> for ShallowSeed {
    type Value = Shallow;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Shallow, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ShallowSeed {
    type Value = Shallow;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Shallow, A::Error> {
        let mut members = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let fields = if key == "dropped" { DROPPED_FIELDS } else { MEMORY_FIELDS };
            let member = map.next_value_seed(MemberSeed { keep: self.keep, fields })?;
            members.insert(key, member);
        }
        Ok(Shallow { members })
    }
}

/// One member: a value, or an array's first `keep` items (of an object,
/// its `fields`) and its length.
struct MemberSeed {
    keep: usize,
    fields: &'static [&'static str],
}

impl<'de> DeserializeSeed<'de> for MemberSeed {
    type Value = Member;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Member, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MemberSeed {
    type Value = Member;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Member, A::Error> {
        let mut first = Vec::new();
        while first.len() < self.keep {
            match seq.next_element::<Value>()? {
                Some(mut v) => {
                    if let Value::Object(item) = &mut v {
                        item.retain(|k, _| self.fields.contains(&k.as_str()));
                    }
                    first.push(v);
                }
                None => return Ok(Member::List { len: first.len(), first }),
            }
        }
        let mut len = first.len();
        while seq.next_element::<IgnoredAny>()?.is_some() {
            len = len.saturating_add(1);
        }
        Ok(Member::List { first, len })
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Member, A::Error> {
        Value::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Member::One)
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Member, E> {
        Ok(Member::One(Value::from(v)))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Member, E> {
        Ok(Member::One(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Member, E> {
        Ok(Member::One(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Member, E> {
        Ok(Member::One(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Member, E> {
        Ok(Member::One(Value::from(v)))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Member, E> {
        Ok(Member::One(Value::from(v)))
    }
    fn visit_unit<E>(self) -> std::result::Result<Member, E> {
        Ok(Member::One(Value::Null))
    }
}

/// The members of a memory its line shows; the rest (its full content,
/// its sources) is not kept.
const MEMORY_FIELDS: &[&str] = &["type", "status", "summary", "id", "sessionId", "eventDate", "score", "createdAt"];
/// The members of an ingest's dropped statement its line shows.
const DROPPED_FIELDS: &[&str] = &["content", "reason"];

fn s<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `[fact] The user prefers pnpm. (id …, session …)`, one memory.
fn memory_line(m: &Value, with_status: bool) -> String {
    let mut line =
        if with_status { format!("[{}, {}] {}", s(m, "type"), s(m, "status"), s(m, "summary")) } else { format!("[{}] {}", s(m, "type"), s(m, "summary")) };
    let _ = write!(line, " (id {}", s(m, "id"));
    match m.get("sessionId").and_then(Value::as_str) {
        Some(session) => {
            let _ = write!(line, ", session {session}");
        }
        // Remembered outside any session (`sessionId: null`).
        None => line.push_str(", no session"),
    }
    if let Some(d) = m.get("eventDate").and_then(Value::as_str) {
        let _ = write!(line, ", date {d}");
    }
    if let Some(score) = m.get("score").and_then(Value::as_f64) {
        let _ = write!(line, ", score {score:.3}");
    } else if let Some(created) = m.get("createdAt").and_then(Value::as_str) {
        let _ = write!(line, ", created {}", created.get(..10).unwrap_or(created));
    }
    line.push(')');
    line
}

fn numbered(out: &mut String, memories: &[Value], with_status: bool) {
    for (i, m) in memories.iter().enumerate() {
        let _ = writeln!(out, "{}. {}", i.saturating_add(1), memory_line(m, with_status));
    }
}

fn render_recall(v: &Shallow) -> String {
    let mut out = String::new();
    let answer = v.str("answer");
    let answer = if answer.is_empty() { v.str("result") } else { answer };
    let (candidates, count) = v.items("candidates");
    if answer.trim().is_empty() && count == 0 {
        out.push_str("No stored memory matches this query.\n");
    } else {
        if !answer.trim().is_empty() {
            let _ = writeln!(out, "{}\n", answer.trim());
        }
        let _ = writeln!(out, "Memories ({count}):");
        numbered(&mut out, candidates, false);
    }
    let notes: Vec<&str> = v.items("messages").0.iter().filter_map(Value::as_str).collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "\nNotes: {}", notes.join("; "));
    }
    out.trim_end().to_string()
}

fn render_memory(verb: &str, m: &Shallow) -> String {
    let mut out = format!("{verb} {} memory {}", m.str("type"), m.str("id"));
    if let Some(k) = m.get("key").and_then(Value::as_str) {
        let _ = write!(out, " (key {k})");
    }
    match m.get("sessionId").and_then(Value::as_str) {
        Some(session) => {
            let _ = write!(out, " in session {session}");
        }
        None => out.push_str(" in no session"),
    }
    let _ = write!(out, ", status {}: {}", m.str("status"), m.str("summary"));
    if let Some(old) = m.get("supersedes").and_then(Value::as_str) {
        let _ = write!(out, "\nIt supersedes memory {old}.");
    }
    if let Some(new) = m.get("supersededBy").and_then(Value::as_str) {
        let _ = write!(out, "\nIt is superseded by memory {new}.");
    }
    out
}

fn render_list(v: &Shallow) -> String {
    let (memories, count) = v.items("memories");
    let mut out = String::new();
    if count == 0 {
        out.push_str("No memories match.\n");
    } else {
        let _ = writeln!(out, "{count} memories, newest first:");
        numbered(&mut out, memories, true);
    }
    if let Some(c) = v.get("cursor").and_then(Value::as_str) {
        let _ = writeln!(out, "\nMore remain: call list again with cursor \"{c}\".");
    }
    out.trim_end().to_string()
}

fn render_ingest(v: &Shallow) -> String {
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    let mut out = format!(
        "Ingested {} messages into session {} ({} new). {} memories created, {} superseded.\n",
        v.items("messageIds").1,
        v.str("sessionId"),
        n("messagesStored"),
        n("memoriesStored"),
        n("memoriesSuperseded"),
    );
    let (memories, count) = v.items("memories");
    if count > 0 {
        out.push_str("\nCreated:\n");
        numbered(&mut out, memories, false);
        more_than_rendered(&mut out, count);
    }
    let (dropped, count) = v.items("dropped");
    if count > 0 {
        out.push_str("\nDropped:\n");
        for d in dropped {
            let _ = writeln!(out, "- {} ({})", s(d, "content"), s(d, "reason"));
        }
        more_than_rendered(&mut out, count);
    }
    out.trim_end().to_string()
}

/// The line saying how many of `n` items the text left out, if any.
fn more_than_rendered(out: &mut String, n: usize) {
    if n > MAX_RENDERED_ITEMS {
        let _ = writeln!(out, "... and {} more (the structured result lists all {n}).", n.saturating_sub(MAX_RENDERED_ITEMS));
    }
}
