//! Parse: an export file read and validated whole, before anything is
//! written: each line as strict as a request body, each record once, each
//! passing its write route's checks.

use super::{ConsolidationEntry, Link, Parsed, Restatement, Withheld, FORMAT, VERSION};
use crate::core::api;
use crate::core::error::{serde_message, Error, Result};
use crate::core::ids;
use crate::core::model::{Memory, Message};
use crate::core::store::Store;
use crate::core::time::iso;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// Longest `runId` and `reason` of an imported consolidation record.
const MAX_CONSOLIDATION_TEXT: usize = 4096;

/// An imported consolidation record as the service writes one: a known
/// action, ids, dates as stored, its memories before it each checked as a
/// memory record, and none of them beside its members and target.
fn checked_consolidation(mut c: ConsolidationEntry) -> Result<ConsolidationEntry> {
    if c.id < 1 {
        return Err(Error::invalid("a consolidation's id is a positive integer"));
    }
    if !["merge", "supersede", "fold", "retire"].contains(&c.action.as_str()) {
        return Err(Error::invalid("a consolidation's action is merge, supersede, fold or retire"));
    }
    if [&c.run_id, &c.reason].iter().any(|t| t.is_empty() || t.len() > MAX_CONSOLIDATION_TEXT) {
        return Err(Error::invalid(format!("a consolidation's runId and reason hold 1 to {MAX_CONSOLIDATION_TEXT} bytes")));
    }
    if !c.involved().all(|id| ids::is_id(id)) {
        return Err(Error::invalid("a consolidation's target, members and created are memory ids"));
    }
    if c.members.len() > api::MAX_SOURCES || c.created.len() > api::MAX_SOURCES || c.before.len() > api::MAX_SOURCES {
        return Err(Error::invalid(format!("a consolidation names at most {} memories in each list", api::MAX_SOURCES)));
    }
    c.at = instant("at", &c.at)?;
    c.before = c.before.into_iter().map(checked_memory).collect::<Result<_>>()?;
    if let Some(m) = c.before.iter().find(|m| m.id != c.target && !c.members.contains(&m.id)) {
        return Err(Error::invalid(format!("a consolidation's memories before it name {}, neither its target nor a member", m.id)));
    }
    Ok(c)
}

/// A consolidation record as its action leaves the memories: a merge's
/// or a supersession's target among its members, a fold's the one memory
/// it created, a retirement's its one member; its copies before it one of
/// each member; and each member but the target superseded by the target
/// in the file (one the file does not hold is not written:
/// [`import`]). Undo, forget and delete read a record as what it did: one
/// that did not would reach memories it never touched.
fn consolidation_holds(c: &ConsolidationEntry, held: &HashMap<&str, &Memory>) -> Result<()> {
    let shape = match c.action.as_str() {
        "merge" | "supersede" => c.members.contains(&c.target) && c.created.is_empty(),
        "fold" => !c.members.contains(&c.target) && c.created == [c.target.clone()],
        _ => c.members == [c.target.clone()] && c.created.is_empty(),
    };
    if !shape {
        return Err(Error::invalid(format!(
            "consolidation {}: a {} names its target among its members{}",
            c.id,
            c.action,
            if c.action == "fold" { " never, and created only its target" } else { ", and created nothing" }
        )));
    }
    let mut copies: Vec<&str> = c.before.iter().map(|m| m.id.as_str()).collect();
    let mut members: Vec<&str> = c.members.iter().map(String::as_str).collect();
    copies.sort_unstable();
    members.sort_unstable();
    if copies != members || members.windows(2).any(|w| matches!(w, [a, b] if a == b)) {
        return Err(Error::invalid(format!("consolidation {}: its memories before it are one copy of each member", c.id)));
    }
    if c.action != "retire" {
        for m in c.members.iter().filter(|m| **m != c.target) {
            if let Some(memory) = held.get(m.as_str()).filter(|memory| memory.superseded_by.as_deref() != Some(c.target.as_str())) {
                return Err(Error::invalid(format!("consolidation {}: member {} is not superseded by its target {}", c.id, memory.id, c.target)));
            }
        }
    }
    Ok(())
}

/// The fields a header record has besides `kind`.
const HEADER_FIELDS: [&str; 4] = ["format", "version", "profile", "exportedAt"];

/// Parses and validates every line; the first bad line fails the import.
///
/// Each line is read as strictly as a request body (a key given twice is
/// refused), and each record passes the checks its write route makes (the
/// same validators and limits of [`crate::core::api`]), and its text the
/// same redaction: `<private>` spans become `[private]` before anything is
/// stored. A message whose text a redaction changed gets the id of its new
/// text, and the memories of the file that cite it cite that id. A file
/// holds each record once: a second record of a kind with an id already
/// read (a message's as stored, after redaction) is refused, never merged
/// into or dropped for the first.
pub fn parse(ndjson: &str) -> Result<Parsed> {
    let mut reader = Reader::new();
    for (n, line) in ndjson.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let number = n.saturating_add(1);
        // A record out of limits makes the file invalid (400), whatever
        // status the same value gets on its write route.
        reader.record(number, line).map_err(|e| Error::invalid(format!("import line {number}: {}", e.message())))?;
    }
    reader.finish()
}

/// What [`parse`] has read so far.
struct Reader {
    /// The fields each kind of record has.
    message_fields: HashSet<String>,
    memory_fields: HashSet<String>,
    restatement_fields: HashSet<String>,
    withheld_fields: HashSet<String>,
    consolidation_fields: HashSet<String>,
    header_fields: HashSet<String>,
    parsed: Parsed,
    saw_header: bool,
    /// Old message id to new, for each message a redaction renamed.
    renamed: HashMap<String, String>,
    /// Each words' repeat ids, hashed once for the file.
    repeats: ids::Repeats,
    /// The line of each message (by its id as stored) and memory read.
    message_lines: HashMap<String, usize>,
    memory_lines: HashMap<String, usize>,
    /// The line of each memory in `parsed.memories`, in order.
    lines: Vec<usize>,
    /// The line of each restatement read, by its (memory, message).
    restatement_lines: HashMap<(String, String), usize>,
    /// The line of each withheld record read, by its (message, fingerprint).
    withheld_lines: HashMap<(String, String), usize>,
    /// The line of each consolidation record read, by its id.
    consolidation_lines: HashMap<i64, usize>,
}

impl Reader {
    fn new() -> Reader {
        Reader {
            message_fields: fields_of::<Message>(),
            memory_fields: fields_of::<Memory>(),
            restatement_fields: fields_of::<Restatement>(),
            withheld_fields: fields_of::<Withheld>(),
            consolidation_fields: fields_of::<ConsolidationEntry>(),
            header_fields: HEADER_FIELDS.iter().map(|f| f.to_string()).collect(),
            parsed: Parsed::default(),
            saw_header: false,
            renamed: HashMap::new(),
            repeats: ids::Repeats::default(),
            message_lines: HashMap::new(),
            memory_lines: HashMap::new(),
            lines: Vec::new(),
            restatement_lines: HashMap::new(),
            withheld_lines: HashMap::new(),
            consolidation_lines: HashMap::new(),
        }
    }

    fn record(&mut self, line: usize, text: &str) -> Result<()> {
        let mut v = crate::core::json::parse_strict(text).map_err(|e| Error::invalid(format!("invalid json: {e}")))?;
        let kind = match v.as_object_mut().map(|o| o.remove("kind")) {
            Some(Some(Value::String(k))) => k,
            _ => String::new(),
        };
        match (kind.as_str(), self.saw_header) {
            ("header", true) => return Err(Error::invalid("a second header: a file has one, on its first line")),
            ("header", false) => {}
            (_, false) => return Err(Error::invalid("the header must come first")),
            _ => {}
        }
        match kind.as_str() {
            "header" => {
                known_fields(&v, &self.header_fields)?;
                check_header(&v)?;
                self.saw_header = true;
            }
            "message" => self.message(line, v)?,
            "memory" => self.memory(line, v)?,
            "restatement" => self.restatement(line, v)?,
            "withheld" => self.withheld(line, v)?,
            "consolidation" => self.consolidation(line, v)?,
            other => return Err(Error::invalid(format!("unknown record kind {}", api::quoted(other)))),
        }
        Ok(())
    }

    fn message(&mut self, line: usize, v: Value) -> Result<()> {
        known_fields(&v, &self.message_fields)?;
        let m: Message = serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid message: {}", serde_message(&e))))?;
        let given = m.id.clone();
        let m = checked_message(m, &mut self.renamed, &mut self.repeats)?;
        if let Some(first) = self.message_lines.insert(m.id.clone(), line) {
            let what = if given == m.id { String::new() } else { format!(" (once redacted, message {})", m.id) };
            return Err(Error::invalid(format!("message {given}{what} repeats line {first}: a file holds each record once")));
        }
        self.parsed.messages.push(m);
        Ok(())
    }

    fn memory(&mut self, line: usize, v: Value) -> Result<()> {
        known_fields(&v, &self.memory_fields)?;
        let m: Memory = serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid memory: {}", serde_message(&e))))?;
        let m = checked_memory(m)?;
        if let Some(first) = self.memory_lines.insert(m.id.clone(), line) {
            return Err(Error::invalid(format!("memory {} repeats line {first}: a file holds each record once", m.id)));
        }
        self.parsed.memories.push(m);
        self.lines.push(line);
        Ok(())
    }

    fn restatement(&mut self, line: usize, v: Value) -> Result<()> {
        known_fields(&v, &self.restatement_fields)?;
        let r: Restatement = serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid restatement: {}", serde_message(&e))))?;
        if !ids::is_id(&r.memory_id) || !ids::is_hex_id(&r.message_id) {
            return Err(Error::invalid("a restatement names a memory id and a message id"));
        }
        if let Some(first) = self.restatement_lines.insert((r.memory_id.clone(), r.message_id.clone()), line) {
            return Err(Error::invalid(format!(
                "the restatement of memory {} by message {} repeats line {first}: a file holds each record once",
                r.memory_id, r.message_id
            )));
        }
        self.parsed.restatements.push(r);
        Ok(())
    }

    fn withheld(&mut self, line: usize, v: Value) -> Result<()> {
        known_fields(&v, &self.withheld_fields)?;
        let w: Withheld = serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid withheld record: {}", serde_message(&e))))?;
        if !ids::is_hex_id(&w.message_id) || !ids::is_hex_id(&w.fingerprint) {
            return Err(Error::invalid("a withheld record names a message id and a fingerprint (32 lowercase hex digits)"));
        }
        if let Some(first) = self.withheld_lines.insert((w.message_id.clone(), w.fingerprint.clone()), line) {
            return Err(Error::invalid(format!(
                "the withheld fingerprint {} of message {} repeats line {first}: a file holds each record once",
                w.fingerprint, w.message_id
            )));
        }
        self.parsed.withheld.push(w);
        Ok(())
    }

    fn consolidation(&mut self, line: usize, v: Value) -> Result<()> {
        known_fields(&v, &self.consolidation_fields)?;
        // Each copy as strict as a memory record.
        for m in v.get("before").and_then(Value::as_array).into_iter().flatten() {
            known_fields(m, &self.memory_fields)?;
        }
        let c: ConsolidationEntry = serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid consolidation: {}", serde_message(&e))))?;
        let c = checked_consolidation(c)?;
        if let Some(first) = self.consolidation_lines.insert(c.id, line) {
            return Err(Error::invalid(format!("consolidation {} repeats line {first}: a file holds each record once", c.id)));
        }
        self.parsed.consolidations.push(c);
        Ok(())
    }

    /// The file, its citations following the redactions and its links to
    /// versions it does not hold listed.
    fn finish(mut self) -> Result<Parsed> {
        if !self.saw_header {
            return Err(Error::invalid("import: the file has no header line"));
        }
        for m in &mut self.parsed.memories {
            follow_renames(&self.renamed, &mut m.source_message_ids);
        }
        self.restated_links();
        self.refuse_cycles()?;
        closed_validity(&mut self.parsed.memories);
        self.consolidation_links()?;
        // The copies name messages as the file's memories do.
        for c in &mut self.parsed.consolidations {
            for m in &mut c.before {
                follow_renames(&self.renamed, &mut m.source_message_ids);
            }
        }
        self.version_links();
        Ok(self.parsed)
    }

    /// The restatements' and withheld records' messages renamed by their
    /// redactions, and those naming what the file does not hold listed.
    fn restated_links(&mut self) {
        for r in &mut self.parsed.restatements {
            let line = self.restatement_lines.get(&(r.memory_id.clone(), r.message_id.clone())).copied().unwrap_or(0);
            if let Some(new) = self.renamed.get(&r.message_id) {
                r.message_id.clone_from(new);
            }
            if !self.memory_lines.contains_key(&r.memory_id) {
                self.parsed.outside_restated.push(Link { line, field: "memoryId", id: r.memory_id.clone() });
            }
            if !self.message_lines.contains_key(&r.message_id) {
                self.parsed.outside_restated.push(Link { line, field: "messageId", id: r.message_id.clone() });
            }
        }
        for w in &mut self.parsed.withheld {
            let line = self.withheld_lines.get(&(w.message_id.clone(), w.fingerprint.clone())).copied().unwrap_or(0);
            if let Some(new) = self.renamed.get(&w.message_id) {
                w.message_id.clone_from(new);
            }
            if !self.message_lines.contains_key(&w.message_id) {
                self.parsed.outside_restated.push(Link { line, field: "withheld", id: w.message_id.clone() });
            }
        }
    }

    /// A 400 for a version chain that comes back round to where it began.
    fn refuse_cycles(&self) -> Result<()> {
        for field in ["supersedes", "supersededBy"] {
            if let Some(id) = chain_cycle(&self.parsed.memories, field) {
                let line = self.memory_lines.get(id).copied().unwrap_or(0);
                return Err(Error::invalid(format!("import line {line}: memory {id}'s {field} leads back to it: a version chain cannot be a cycle")));
            }
        }
        Ok(())
    }

    /// Each consolidation checked against the file's memories, and the
    /// memories it names that the file does not hold listed.
    fn consolidation_links(&mut self) -> Result<()> {
        let held: HashMap<&str, &Memory> = self.parsed.memories.iter().map(|m| (m.id.as_str(), m)).collect();
        for c in &self.parsed.consolidations {
            let line = self.consolidation_lines.get(&c.id).copied().unwrap_or(0);
            consolidation_holds(c, &held).map_err(|e| Error::invalid(format!("import line {line}: {}", e.message())))?;
            let named = std::iter::once(("target", &c.target)).chain(c.members.iter().map(|m| ("members", m))).chain(c.created.iter().map(|m| ("created", m)));
            for (field, id) in named {
                if !self.memory_lines.contains_key(id) {
                    self.parsed.outside.push(Link { line, field, id: id.clone() });
                }
            }
        }
        Ok(())
    }

    /// The versions the file's memories link to that it does not hold.
    fn version_links(&mut self) {
        for (m, &line) in self.parsed.memories.iter().zip(&self.lines) {
            for (field, id) in [("supersedes", &m.supersedes), ("supersededBy", &m.superseded_by)] {
                match id {
                    Some(id) if !self.memory_lines.contains_key(id) => self.parsed.outside.push(Link { line, field, id: id.clone() }),
                    _ => {}
                }
            }
        }
    }
}

/// Message ids following the redactions that renamed them.
fn follow_renames(renamed: &HashMap<String, String>, ids: &mut [String]) {
    for id in ids {
        if let Some(new) = renamed.get(id) {
            id.clone_from(new);
        }
    }
}

/// A memory of `memories` from which following `field` (`supersedes` or
/// `supersededBy`) through the file comes back to where it began, if
/// one does: each memory names at most one, so the links form chains,
/// and a walk that meets a memory met on its own walk is in a cycle.
fn chain_cycle<'m>(memories: &'m [Memory], field: &str) -> Option<&'m str> {
    let next: HashMap<&str, &str> = memories
        .iter()
        .filter_map(|m| if field == "supersedes" { m.supersedes.as_deref() } else { m.superseded_by.as_deref() }.map(|to| (m.id.as_str(), to)))
        .collect();
    // The walk each memory was first met on (a walk that meets an earlier
    // one's memory ends: what lies ahead was walked already).
    let mut walk_of: HashMap<&str, usize> = HashMap::new();
    for (walk, m) in memories.iter().enumerate() {
        let mut at = m.id.as_str();
        loop {
            if let Some(&met) = walk_of.get(at) {
                if met == walk {
                    return Some(at);
                }
                break;
            }
            walk_of.insert(at, walk);
            match next.get(at) {
                Some(to) => at = to,
                None => break,
            }
        }
    }
    None
}

/// A header's values: this format and version, a profile name and an
/// export time if given.
fn check_header(v: &Value) -> Result<()> {
    if v.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(Error::invalid("not an agent-memory export"));
    }
    if v.get("version").and_then(Value::as_i64) != Some(VERSION) {
        return Err(Error::invalid("unsupported export version"));
    }
    if v.get("profile").is_some_and(|p| !p.is_string()) {
        return Err(Error::invalid("the header's profile must be a string"));
    }
    match v.get("exportedAt") {
        Some(Value::String(t)) if crate::core::time::parse_datetime(t).is_some() => Ok(()),
        Some(_) => Err(Error::invalid("the header's exportedAt must be an ISO-8601 date-time")),
        None => Ok(()),
    }
}

/// Refuses a file whose memories name a version (`supersedes`,
/// `supersededBy`) that neither the file nor the profile holds: a link
/// to nothing, which `get`'s version chain could not follow. `store` is
/// `None` for a profile that counts as empty (one the import will purge
/// first).
pub fn check_links(store: Option<&Store<'_>>, p: &Parsed) -> Result<()> {
    let memories = |links: &mut dyn Iterator<Item = &Link>| -> Result<HashSet<String>> {
        match store {
            Some(store) => store.existing_memory_ids(&links.map(|l| l.id.as_str()).collect::<Vec<_>>()),
            None => Ok(Default::default()),
        }
    };
    let present = memories(&mut p.outside.iter())?;
    if let Some(l) = p.outside.iter().find(|l| !present.contains(&l.id)) {
        return Err(Error::invalid(format!("import line {}: {} names memory {}, which is neither in the file nor in the profile", l.line, l.field, l.id)));
    }
    // A restatement's memory and message, and a withheld record's message, likewise.
    let restated = memories(&mut p.outside_restated.iter().filter(|l| l.field == "memoryId"))?;
    let messages: Vec<String> = p.outside_restated.iter().filter(|l| l.field != "memoryId").map(|l| l.id.clone()).collect();
    let said = match store {
        Some(store) => store.existing_message_ids(&messages)?,
        None => Default::default(),
    };
    let held = |l: &&Link| if l.field == "memoryId" { restated.contains(&l.id) } else { said.contains(&l.id) };
    match p.outside_restated.iter().find(|l| !held(l)) {
        Some(l) if l.field == "withheld" => Err(Error::invalid(format!(
            "import line {}: the withheld record's messageId names message {}, which is neither in the file nor in the profile",
            l.line, l.id
        ))),
        Some(l) => {
            let what = if l.field == "memoryId" { "memory" } else { "message" };
            Err(Error::invalid(format!(
                "import line {}: the restatement's {} names {what} {}, which is neither in the file nor in the profile",
                l.line, l.field, l.id
            )))
        }
        None => Ok(()),
    }
}

/// The fields a record of type `T` has: its schema's properties (the
/// Rust type is the one source of them).
fn fields_of<T: schemars::JsonSchema>() -> HashSet<String> {
    let schema = schemars::schema_for!(T);
    schema.as_value().get("properties").and_then(Value::as_object).map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

/// Refuses a record with a field its type does not have: a misspelt
/// `expiresAt` is an error, never a memory imported without its expiry.
fn known_fields(v: &Value, fields: &HashSet<String>) -> Result<()> {
    match v.as_object().and_then(|o| o.keys().find(|k| !fields.contains(k.as_str()))) {
        Some(unknown) => Err(Error::invalid(format!("unknown field {}", api::quoted(unknown)))),
        None => Ok(()),
    }
}

/// A message record as ingest would have stored it: id, session, role,
/// text, timestamp and dates checked, private spans redacted (its id
/// follows its redacted text; `renamed` maps the old id to the new).
///
/// The id is checked last: finding which repeat of its text it is hashes
/// the text, so the size and the other cheap checks come first (an
/// over-size text is refused as over-size, without being hashed).
fn checked_message(mut m: Message, renamed: &mut HashMap<String, String>, repeats: &mut ids::Repeats) -> Result<Message> {
    api::validate_session_id(&m.session_id)?;
    api::validate_role("role", &m.role)?;
    api::validate_message_content("content", &m.content)?;
    api::validate_date("timestamp", &m.timestamp)?;
    api::validate_date("createdAt", &Some(m.created_at.clone()))?;
    if !(0..=api::MAX_POSITION).contains(&m.position) {
        return Err(Error::invalid(format!("position must be from 0 to {}", api::MAX_POSITION)));
    }
    crate::core::filter::validate_metadata("metadata", &m.metadata)?;
    let repeat = repeats
        .of(&m.id, &m.session_id, &m.role, &m.content, crate::core::ingest::identify::MAX_REPEATS)?
        .ok_or_else(|| Error::invalid("message id does not match its content"))?;
    let (content, role) = (api::redact_private(&m.content), api::redact_private(&m.role));
    if matches!(content, Cow::Owned(_)) || matches!(role, Cow::Owned(_)) {
        (m.content, m.role) = (content.into_owned(), role.into_owned());
        let id = ids::repeated_message_id(&m.session_id, &m.role, &m.content, repeat);
        renamed.insert(std::mem::replace(&mut m.id, id.clone()), id);
    }
    Ok(m)
}

/// A memory record as remember or ingest would have stored it: ids,
/// session, text, summary, key (in its stored form, on a type keys
/// supersede: remember's check), search queries, sources and dates
/// checked, private spans redacted, its dates written in the formats the
/// service stores (they compare as text: filters, `asOf`, undo's "changed
/// since"), its validity not ending before it starts, and no link to
/// itself.
fn checked_memory(mut m: Memory) -> Result<Memory> {
    if !ids::is_id(&m.id) {
        return Err(Error::invalid("memory id is neither a lowercase ULID nor 32 lowercase hex characters"));
    }
    // Empty: remembered without a session (exported as `null`).
    if !m.session_id.is_empty() {
        api::validate_session_id(&m.session_id)?;
    }
    api::redact_statement("content", &mut m.content)?;
    api::redact_statement("summary", &mut m.summary)?;
    m.search_queries.iter_mut().for_each(redact);
    api::validate_content("content", &m.content)?;
    api::validate_content("summary", &m.summary)?;
    if let Some(k) = &m.key {
        api::validate_key("key", k)?;
        crate::core::text::check_key_as_given(k, Some(m.kind))?;
    }
    api::validate_search_queries("searchQueries", &m.search_queries)?;
    check_links_of(&m)?;
    crate::core::filter::validate_metadata("metadata", &m.metadata)?;
    stored_dates(&mut m)?;
    Ok(m)
}

/// Sources that are message ids, versions that are memory ids and never
/// the memory itself.
fn check_links_of(m: &Memory) -> Result<()> {
    if m.source_message_ids.len() > api::MAX_SOURCES {
        return Err(Error::invalid(format!("sourceMessageIds must hold at most {} ids", api::MAX_SOURCES)));
    }
    if !m.source_message_ids.iter().all(|id| ids::is_id(id)) {
        return Err(Error::invalid("sourceMessageIds must be message ids"));
    }
    if !m.supersedes.iter().chain(&m.superseded_by).all(|id| ids::is_id(id)) {
        return Err(Error::invalid("supersedes and supersededBy must be memory ids"));
    }
    if m.supersedes.iter().chain(&m.superseded_by).any(|id| *id == m.id) {
        return Err(Error::invalid(format!("memory {} names itself in supersedes or supersededBy", m.id)));
    }
    Ok(())
}

/// Checks a memory's dates and writes each as the service stores it: the
/// event date as `YYYY-MM-DD` (as ingest and the filters write it), the
/// instants as ISO-8601 UTC with milliseconds. A validity that ends
/// before it starts is refused.
fn stored_dates(m: &mut Memory) -> Result<()> {
    api::validate_date("eventDate", &m.event_date)?;
    api::validate_date("createdAt", &Some(m.created_at.clone()))?;
    api::validate_date("updatedAt", &Some(m.updated_at.clone()))?;
    api::validate_expiry("expiresAt", &m.expires_at)?;
    if let Some(d) = &m.event_date {
        // The day where it happened (a date-time's own offset), as ingest,
        // the model's reader and the filters reckon it.
        let day = crate::core::time::local_date_of(d).ok_or_else(|| Error::invalid("eventDate is not a date"))?;
        m.event_date = Some(day.format("%Y-%m-%d").to_string());
    }
    for (what, v) in [("expiresAt", &mut m.expires_at), ("validFrom", &mut m.valid_from), ("validTo", &mut m.valid_to)] {
        if let Some(t) = v.as_deref() {
            *v = Some(instant(what, t)?);
        }
    }
    for (what, v) in [("createdAt", &mut m.created_at), ("updatedAt", &mut m.updated_at)] {
        *v = instant(what, v)?;
    }
    // Both as stored: ISO-8601 UTC in years 0000-9999 orders as text.
    if let (Some(from), Some(to)) = (&m.valid_from, &m.valid_to) {
        if to < from {
            return Err(Error::invalid(format!("validTo ({to}) is before validFrom ({from})")));
        }
    }
    Ok(())
}

/// Ends the validity a record's status says ended but its dates leave
/// open (a file written before validity was recorded, or by hand), so an
/// `asOf` read agrees with the status: a superseded memory without
/// `validTo` ends where the version after it in the file begins (its
/// `validFrom`, else its `createdAt`), else when it was last updated; an
/// expired one without `expiresAt` expired when it was last updated.
/// Never before the memory's own `validFrom`.
fn closed_validity(memories: &mut [Memory]) {
    use crate::core::model::Status;
    let begins: HashMap<String, String> = memories.iter().map(|m| (m.id.clone(), m.said_from().to_string())).collect();
    for m in memories.iter_mut() {
        match m.status {
            Status::Superseded if m.valid_to.is_none() => {
                let next = m.superseded_by.as_ref().and_then(|id| begins.get(id)).unwrap_or(&m.updated_at).clone();
                // Instants as stored (ISO-8601 UTC) order as text.
                m.valid_to = Some(m.valid_from.clone().map_or(next.clone(), |from| from.max(next)));
            }
            Status::Expired if m.expires_at.is_none() => m.expires_at = Some(m.updated_at.clone()),
            _ => {}
        }
    }
}

/// `t` as ISO-8601 UTC with milliseconds; `what` names it in the error.
fn instant(what: &str, t: &str) -> Result<String> {
    crate::core::time::parse_millis(t).map(iso).ok_or_else(|| Error::invalid(format!("{what} is not a date")))
}

fn redact(text: &mut String) {
    if let Cow::Owned(r) = api::redact_private(text) {
        *text = r;
    }
}
