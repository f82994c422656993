//! Requests of the interface contract, their limits, and validation.
//!
//! Every way in (REST, RPC, MCP, the console) parses its input into these
//! records with [`parse`], so every way in rejects the same bad input with
//! the same error.

use crate::core::error::{serde_message, Error, Result};
use crate::core::model::{MemoryType, MessageInput, Status};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Most messages in one ingest call.
pub const MAX_MESSAGES_PER_INGEST: usize = 500;
/// The largest position a message may be imported at: 2^53 - 1, a whole
/// number every JSON reader holds exactly, and far enough below i64::MAX
/// that a session's later ingests continue it.
pub const MAX_POSITION: i64 = (1 << 53) - 1;
/// Most bytes in one message's content (defined with the message record,
/// whose schema states it).
pub use crate::core::model::MAX_MESSAGE_BYTES;
/// Most bytes in a recall query.
pub const MAX_QUERY_BYTES: usize = 1024;
/// Longest session id.
pub const MAX_SESSION_ID_CHARS: usize = 64;
/// Longest namespace name (the published limits).
pub const MAX_NAME_CHARS: usize = 32;
/// Longest profile name (the published limits: 100 characters).
pub const MAX_PROFILE_NAME_CHARS: usize = 100;
/// Longest id a lookup accepts (ids are opaque to callers; ours are 26 or
/// 32 characters).
pub const MAX_ID_CHARS: usize = 64;
/// List page size bounds.
pub const MAX_PAGE_SIZE: usize = 1000;
/// The published default page size of `list`.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// Shortest content `remember` accepts, in characters besides white
/// space: any non-blank statement, however short ("Prefers dark mode."),
/// as Cloudflare's published interface takes it.
pub const MIN_REMEMBER_CHARS: usize = 1;
/// Most candidates a recall returns.
pub const MAX_RECALL_LIMIT: usize = 100;
pub const DEFAULT_RECALL_LIMIT: usize = 10;

/// A caller's count as a `usize`, once validated. Counts are read as
/// `u64` on every platform, so one past Wasm's 32-bit `usize` is refused
/// by the range checks with their own message rather than by the
/// decoder's ("expected usize"); past the platform's range it saturates.
pub fn count(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Largest import body accepted, in bytes. An import's request peaks at
/// about ten times its body in the Wasm memory (`make bench-peaks`,
/// docs/bench/peaks.md: 8 MiB -> 82 MiB, 17 MiB -> 200 MiB), which an
/// isolate's 128 MB must hold beside everything else: a larger profile
/// moves in parts (an export with a filter imports anywhere, and an
/// import skips what is present).
pub const MAX_IMPORT_BYTES: usize = 8 * 1024 * 1024;
/// Longest role of a message (defined with the message record).
pub use crate::core::model::MAX_ROLE_CHARS;
/// Longest topic key.
pub const MAX_KEY_CHARS: usize = 128;
/// Most search queries a memory carries, each at most [`MAX_QUERY_BYTES`].
pub const MAX_SEARCH_QUERIES: usize = 16;
/// Most source messages a memory cites (one ingest call's worth).
pub const MAX_SOURCES: usize = MAX_MESSAGES_PER_INGEST;

/// Latest expiry stored: 9999-12-31T23:59:59.999Z. Expiries are compared
/// as ISO strings, which only order correctly with four-digit years, so
/// one past it (an offset carrying 9999 into 10000, a TTL reaching past
/// it) is refused rather than clamped or wrapped.
pub const MAX_EXPIRY_MILLIS: i64 = 253_402_300_799_999;
/// Earliest expiry stored: 0000-01-01T00:00:00.000Z.
pub const MIN_EXPIRY_MILLIS: i64 = -62_167_219_200_000;
/// Longest `ttlSeconds`: 10^10 seconds, about 317 years.
pub const MAX_TTL_SECONDS: u64 = 10_000_000_000;

/// Opening and closing marks of content the caller marks sensitive inline.
pub const PRIVATE_OPEN: &str = "<private>";
pub const PRIVATE_CLOSE: &str = "</private>";
/// What a private span is replaced with before anything is stored.
pub const REDACTED: &str = "[private]";

/// Removes every `<private>…</private>` span (case-insensitive) from
/// `text`, replacing each with `[private]` (SPEC.md section 7: content
/// marked sensitive is not stored). Spans nest: a span ends at the closing
/// mark that balances its opening one, so `<private>a <private>b</private>
/// c</private>` hides `c` too. An opening mark without its closing mark
/// hides everything after it: the safe reading of a cut-off span.
pub fn redact_private(text: &str) -> std::borrow::Cow<'_, str> {
    let lower = text.to_ascii_lowercase();
    if !lower.contains(PRIVATE_OPEN) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    // Offsets within `text`'s length: their sums cannot overflow.
    while let Some(open) = lower[at..].find(PRIVATE_OPEN).map(|i| at.saturating_add(i)) {
        out.push_str(&text[at..open]);
        out.push_str(REDACTED);
        at = span_end(&lower, open.saturating_add(PRIVATE_OPEN.len()));
    }
    out.push_str(&text[at..]);
    std::borrow::Cow::Owned(out)
}

/// Where the private span whose opening mark ends at `from` ends (past its
/// balancing closing mark), or the text's end when it is never closed.
/// Each mark is found once: the next opening and closing marks are kept
/// and searched for again only once passed, so a text of thousands of
/// opening marks and one closing mark is read once, not once a mark.
fn span_end(lower: &str, from: usize) -> usize {
    // Offsets within `lower`'s length: their sums cannot overflow.
    let find = |mark: &str, at: usize| lower.get(at..).and_then(|rest| rest.find(mark)).map(|i| at.saturating_add(i));
    let (mut depth, mut at) = (1usize, from);
    let (mut open, mut close) = (find(PRIVATE_OPEN, at), find(PRIVATE_CLOSE, at));
    while depth > 0 {
        let Some(c) = close else { return lower.len() };
        match open {
            Some(o) if o < c => {
                depth = depth.saturating_add(1);
                at = o.saturating_add(PRIVATE_OPEN.len());
                open = find(PRIVATE_OPEN, at);
            }
            _ => {
                depth = depth.saturating_sub(1);
                at = c.saturating_add(PRIVATE_CLOSE.len());
                close = find(PRIVATE_CLOSE, at);
                if open.is_some_and(|o| o < at) {
                    open = find(PRIVATE_OPEN, at);
                }
            }
        }
    }
    at
}

/// Whether redacted text holds nothing but `[private]` marks and spaces:
/// nothing of it is left to store as a statement.
pub fn only_redacted(text: &str) -> bool {
    text.split(REDACTED).all(|rest| rest.trim().is_empty())
}

/// Redacts a statement's `text` in place ([`redact_private`]), refusing
/// one that was private spans alone: nothing of it is left to store
/// (`remember`, and an import's memory as `remember` would take it).
pub fn redact_statement(what: &str, text: &mut String) -> Result<()> {
    if let std::borrow::Cow::Owned(r) = redact_private(text) {
        if only_redacted(&r) {
            return Err(Error::invalid(format!("{what} is only private spans: nothing is left to store once they are redacted")));
        }
        *text = r;
    }
    Ok(())
}

pub use crate::core::error::{quoted, MAX_QUOTED_CHARS};

/// Parses a JSON value into a request record, mapping serde's message to
/// an invalid-input error with the caller's text in it quoted and cut
/// ([`serde_message`]): serde writes an unknown field name or a string of
/// the wrong type whole, however long.
pub fn parse<T: DeserializeOwned>(v: serde_json::Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| Error::invalid(format!("invalid request: {}", serde_message(&e))))
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IngestRequest {
    #[schemars(length(min = 1, max = MAX_MESSAGES_PER_INGEST))]
    pub messages: Vec<MessageInput>,
    #[serde(default)]
    #[schemars(with = "Option<crate::core::wire::SessionId>")]
    pub session_id: Option<String>,
    /// Attached to every memory extracted from this call and to its
    /// messages.
    #[serde(default, deserialize_with = "crate::core::model::metadata_or_null", skip_serializing_if = "crate::core::filter::is_empty")]
    #[schemars(with = "Option<crate::core::model::Metadata>")]
    pub metadata: crate::core::model::Metadata,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RememberRequest {
    #[schemars(length(min = 1, max = MAX_MESSAGE_BYTES))]
    pub content: String,
    #[serde(default)]
    #[schemars(with = "Option<crate::core::wire::SessionId>")]
    pub session_id: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<MemoryType>,
    /// Topic key in its stored form (lowercase words joined by `_`,
    /// segments by `.`); any other form is refused, as is a key on an
    /// event or a task. A memory with the same key is superseded.
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_KEY_CHARS))]
    pub key: Option<String>,
    /// ISO-8601 instant after which the memory expires; later than now.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// Seconds to live; an alternative to `expiresAt`.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_TTL_SECONDS))]
    pub ttl_seconds: Option<u64>,
    /// Content the caller marks sensitive is refused (SPEC.md section 7).
    #[serde(default)]
    pub sensitive: Option<bool>,
    #[serde(default, deserialize_with = "crate::core::model::metadata_or_null", skip_serializing_if = "crate::core::filter::is_empty")]
    #[schemars(with = "Option<crate::core::model::Metadata>")]
    pub metadata: crate::core::model::Metadata,
}

/// How long a recall's answer should be (a record of the model).
pub use crate::core::model::ResponseLength;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecallOptions {
    #[serde(default)]
    pub reference_date: Option<String>,
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_RECALL_LIMIT), extend("default" = DEFAULT_RECALL_LIMIT))]
    pub limit: Option<u64>,
    #[serde(default)]
    pub response_length: Option<ResponseLength>,
    /// How widely to search: `low` (default), `medium`, `high`.
    #[serde(default)]
    pub thinking_level: Option<crate::core::model::ThinkingLevel>,
    #[serde(default)]
    pub explain: Option<bool>,
    /// Also consider superseded, forgotten and expired memories. Not with
    /// `asOf`, which chooses what was active at its instant.
    #[serde(default)]
    pub include_inactive: Option<bool>,
    /// Only memories of this session.
    #[serde(default)]
    #[schemars(with = "Option<crate::core::wire::SessionId>")]
    pub session_id: Option<String>,
    /// Only memories passing this filter (see `core::filter`): fields
    /// mapped to values or operator objects, `AND`/`OR` arrays, `NOT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub filter: Option<serde_json::Value>,
    /// What was active at this instant (ISO-8601): a memory superseded
    /// since counts, one said after it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecallRequest {
    /// The question: at most 1,024 bytes of UTF-8 (`maxLength` counts
    /// characters, so it bounds the text only loosely).
    #[schemars(length(min = 1, max = MAX_QUERY_BYTES))]
    pub query: String,
    #[serde(flatten)]
    pub options: RecallOptions,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListRequest {
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_PAGE_SIZE), extend("default" = DEFAULT_PAGE_SIZE))]
    pub limit: Option<u64>,
    #[serde(default)]
    #[schemars(with = "Option<crate::core::wire::Cursor>")]
    pub cursor: Option<String>,
    #[serde(default)]
    #[schemars(with = "Option<crate::core::wire::SessionId>")]
    pub session_id: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<MemoryType>,
    /// Which states to list: active memories when absent (unless `asOf`
    /// asks what held then), every state with `all`.
    #[serde(default)]
    pub status: Option<ListStatus>,
    /// Only memories of this topic key, given in its stored form
    /// (`user.package_manager`); any other form is refused.
    #[serde(default)]
    pub key: Option<String>,
    /// A filter as for recall: an object, or its JSON text (a query
    /// parameter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<FilterArg>")]
    pub filter: Option<serde_json::Value>,
    /// What was active at this instant (ISO-8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
}

/// Which memories `list` shows by their state (`all`: every state).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListStatus {
    Active,
    Superseded,
    Forgotten,
    Expired,
    All,
}

/// The media type of a `Content-Type` header (lowercase, without its
/// parameters), and whether it is JSON: `application/json` or a
/// `+json` type. `application/jsonx` is not.
pub fn json_media(content_type: &str) -> (String, bool) {
    let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let json = media == "application/json" || media.ends_with("+json");
    (media, json)
}

/// The `charset` a content type names, other than UTF-8 (the only one a
/// body is read in): `application/json; charset=latin1` is refused rather
/// than read as UTF-8.
pub fn foreign_charset(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        let value = value.trim().trim_matches('"').to_ascii_lowercase();
        // ASCII is UTF-8's first half.
        (name.trim().eq_ignore_ascii_case("charset") && !matches!(value.as_str(), "utf-8" | "utf8" | "us-ascii" | "ascii")).then_some(value)
    })
}

/// Hex digits of the tag that ties a list cursor to its profile.
const CURSOR_TAG_HEX: usize = 12;

/// A list cursor for the page after memory `id` in the profile whose
/// cursor key is `key` (its name and its secret, which is never
/// answered): the id and a tag of both, so a cursor of another profile,
/// or one made for an id by anyone who read this code, is refused rather
/// than read as a place in this profile's list (a cursor whose memory was
/// deleted since stays good).
pub fn seal_cursor(key: &str, id: &str) -> String {
    format!("{id}.{}", cursor_tag(key, id))
}

/// A profile's cursor key ([`seal_cursor`]): its name and its secret.
pub fn cursor_key(profile: &str, secret: &str) -> String {
    format!("{profile}\0{secret}")
}

/// The memory id of a cursor [`seal_cursor`] made with `key`; 400 for
/// anything else.
pub fn open_cursor(key: &str, cursor: &str) -> Result<String> {
    let id = cursor_id(cursor)?;
    match cursor.get(id.len().saturating_add(1)..) == Some(cursor_tag(key, id).as_str()) {
        true => Ok(id.to_string()),
        false => Err(not_a_cursor()),
    }
}

fn cursor_id(cursor: &str) -> Result<&str> {
    let (id, tag) = cursor.split_once('.').ok_or_else(not_a_cursor)?;
    validate_id(id).map_err(|_| not_a_cursor())?;
    match tag.len() == CURSOR_TAG_HEX && tag.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
        true => Ok(id),
        false => Err(not_a_cursor()),
    }
}

fn cursor_tag(key: &str, id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::new().chain_update(b"list-cursor\0").chain_update(key.as_bytes()).chain_update(b"\0").chain_update(id.as_bytes()).finalize();
    digest.iter().take(CURSOR_TAG_HEX / 2).map(|b| format!("{b:02x}")).collect()
}

fn not_a_cursor() -> Error {
    Error::invalid("cursor is not one this service returned for this profile")
}

impl ListRequest {
    /// The one status to list, or `None` for every state: active unless
    /// asked otherwise, and every state for `asOf` without a status (what
    /// held then, whatever became of it since).
    pub fn status_filter(&self) -> Option<Status> {
        match self.status {
            None if self.as_of.is_some() => None,
            None | Some(ListStatus::Active) => Some(Status::Active),
            Some(ListStatus::Superseded) => Some(Status::Superseded),
            Some(ListStatus::Forgotten) => Some(Status::Forgotten),
            Some(ListStatus::Expired) => Some(Status::Expired),
            Some(ListStatus::All) => None,
        }
    }
}

/// A filter where a query parameter may carry it: the object, or its JSON
/// text.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum FilterArg {
    Object(serde_json::Map<String, serde_json::Value>),
    Text(String),
}

/// What `update` takes: a memory's id and its new metadata (which
/// replaces the old; `{}` clears it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateRequest {
    #[schemars(with = "crate::core::wire::Id")]
    pub id: String,
    pub metadata: crate::core::model::Metadata,
}

impl UpdateRequest {
    pub fn validate(&self) -> Result<()> {
        validate_id(&self.id)?;
        crate::core::filter::validate_metadata("metadata", &self.metadata)
    }
}

/// What `consolidate` takes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsolidateRequest {
    /// Report what would change, and change nothing.
    #[serde(default)]
    pub dry_run: Option<bool>,
    /// Windows of 1,000 active memories to go through now, at most (the
    /// alarm goes on with the rest; a dry run previews the first ones);
    /// 4 by default, each one reasoner call.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_windows: Option<u64>,
}

impl ConsolidateRequest {
    pub fn validate(&self) -> Result<()> {
        if self.max_windows == Some(0) {
            return Err(Error::invalid("maxWindows must be at least 1"));
        }
        Ok(())
    }
}

/// What `export` takes: optionally a filter (as for `list`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<FilterArg>")]
    pub filter: Option<serde_json::Value>,
}

impl ExportRequest {
    pub fn validate(&self) -> Result<()> {
        if let Some(f) = &self.filter {
            crate::core::filter::from_json(f)?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SummaryRequest {
    #[serde(default)]
    #[schemars(with = "Option<crate::core::wire::SessionId>")]
    pub session_id: Option<String>,
}

/// Checks a namespace name: 1-32 characters of `[A-Za-z0-9._-]`, and not
/// `.` or `..`.
pub fn validate_namespace(name: &str) -> Result<()> {
    validate_name_up_to("namespace", name, MAX_NAME_CHARS)
}

/// Checks the name of a namespace about to be created: the API
/// reference's rule, `^[a-z0-9]([a-z0-9-]*[a-z0-9])?$` and at most 32
/// characters. A namespace taken before under the wider rule of
/// [`validate_namespace`] keeps working; none is created under it.
pub fn validate_new_namespace(name: &str) -> Result<()> {
    // The creation rule first, so that a name it refuses is told that
    // rule, not the wider one of names taken before.
    let b = name.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    let edge = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(b.iter().all(inner) && edge(b.first()) && edge(b.last())) {
        return Err(Error::invalid(format!(
            "namespace name {} must match ^[a-z0-9]([a-z0-9-]*[a-z0-9])?$ (lowercase letters, digits and inner hyphens) to be created",
            quoted(name)
        )));
    }
    validate_namespace(name)
}

/// Checks a profile name: 1-100 characters of `[A-Za-z0-9._@+-]`, and not
/// `.` or `..`.
pub fn validate_profile(name: &str) -> Result<()> {
    validate_name_of("profile", name, MAX_PROFILE_NAME_CHARS, PROFILE_NAME_EXTRA)
}

/// What a profile name may hold beside `[A-Za-z0-9._-]`: an email or a
/// `user+tag` (the published pages limit its length only). Both are plain
/// characters in a URL path segment and in a Durable Object's name.
pub const PROFILE_NAME_EXTRA: &[u8] = b"@+";

fn validate_name_up_to(what: &str, name: &str, max: usize) -> Result<()> {
    validate_name_of(what, name, max, b"")
}

fn validate_name_of(what: &str, name: &str, max: usize, extra: &[u8]) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(format!("{what} name must not be empty")));
    }
    if name.chars().count() > max {
        return Err(Error::invalid(format!("{what} name must be at most {max} characters")));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') || extra.contains(&b)) {
        // The hyphen last: `[A-Za-z0-9._-@+]` would read as a range.
        let class = format!("[A-Za-z0-9._{}-]", String::from_utf8_lossy(extra));
        return Err(Error::invalid(format!("{what} name must match {class}")));
    }
    if name == "." || name == ".." {
        return Err(Error::invalid(format!("{what} name must not be . or ..")));
    }
    Ok(())
}

/// Whether `segment` is one a URL parser rewrites when it stands in a
/// path: `.` or `..`, written plainly or with `%2e` (any case). A path
/// `/profiles/p/sessions/%2E%2E` reaches the Worker as `/profiles/p/`, so
/// such a value must never name anything.
pub fn is_dot_segment(segment: &str) -> bool {
    let plain = segment.to_ascii_lowercase().replace("%2e", ".");
    plain == "." || plain == ".."
}

/// Checks a session id: 1-64 characters, no control characters, and not
/// a dot segment ([`is_dot_segment`]): a session is deleted by a path
/// that names it, and such a path would name its profile instead.
pub fn validate_session_id(s: &str) -> Result<()> {
    validate_session_id_as("sessionId", s)
}

/// [`validate_session_id`] of a session id sent as `what` (a query's
/// `session_id`: refused under the name it was sent as).
pub fn validate_session_id_as(what: &str, s: &str) -> Result<()> {
    validate_session_id_shape_as(what, s)?;
    if is_dot_segment(s) {
        return Err(Error::invalid(format!("{what} must not be . or .. (a URL path would read it as a directory step)")));
    }
    if s.chars().all(is_invisible) {
        return Err(Error::invalid(format!("{what} must hold a visible character")));
    }
    if s.chars().any(is_bidi_control) {
        return Err(Error::invalid(format!("{what} must not contain bidirectional controls")));
    }
    Ok(())
}

/// Whether `c` shows nothing of its own: white space, a control character
/// (C0, DEL, C1: a NUL is no text), one of Unicode's default-ignorable
/// code points (zero-width space and joiners, direction marks and
/// controls, word joiner, byte-order mark, soft hyphen, variation
/// selectors, tag characters, Hangul fillers: [`is_default_ignorable`]),
/// or a combining mark of the generic blocks (U+0300-036F, 1AB0-1AFF,
/// 1DC0-1DFF, 20D0-20FF, FE20-FE2F), which marks the letter before it and
/// is nothing alone. A text of only these is blank: 100 tag characters
/// or combining accents were stored as a memory with nothing to show.
/// Not done: the combining marks of particular scripts (a Devanagari
/// vowel sign alone counts as visible).
pub fn is_invisible(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || is_default_ignorable(c)
        || matches!(c, '\u{0300}'..='\u{036F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}' | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
}

/// Unicode's `Default_Ignorable_Code_Point` property (DerivedCoreProperties,
/// Unicode 15): characters a renderer shows nothing for.
fn is_default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// Whether `c` overrides or embeds a text direction (it can make one id
/// display as another).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The length and character checks of [`validate_session_id`] alone:
/// what `deleteSession` asks over RPC and MCP (no URL in between), so a
/// session stored as `.` or `..` before they were refused can still be
/// deleted.
pub fn validate_session_id_shape(s: &str) -> Result<()> {
    validate_session_id_shape_as("sessionId", s)
}

fn validate_session_id_shape_as(what: &str, s: &str) -> Result<()> {
    if s.is_empty() {
        return Err(Error::invalid(format!("{what} must not be empty")));
    }
    if s.chars().count() > MAX_SESSION_ID_CHARS {
        return Err(Error::invalid(format!("{what} must be at most {MAX_SESSION_ID_CHARS} characters")));
    }
    if s.chars().any(char::is_control) {
        return Err(Error::invalid(format!("{what} must not contain control characters")));
    }
    Ok(())
}

/// Checks a message role: 1-64 characters, not blank, no control
/// characters.
pub fn validate_role(what: &str, role: &str) -> Result<()> {
    validate_label(what, role, MAX_ROLE_CHARS)
}

/// A short label (a role, a key): not blank, at most `max` characters,
/// no control characters.
fn validate_label(what: &str, s: &str, max: usize) -> Result<()> {
    if s.trim().is_empty() || s.chars().count() > max {
        return Err(Error::invalid(format!("{what} must be 1-{max} characters")));
    }
    if s.chars().any(char::is_control) {
        return Err(Error::invalid(format!("{what} must not contain control characters")));
    }
    // A role is shown as a speaker's name (`Us\u{202E}er: ...`). The
    // isolates (U+2066-2069), with which interfaces wrap a right-to-left
    // name, reorder nothing outside themselves: they stay.
    if s.chars().any(|c| matches!(c, '\u{202A}'..='\u{202E}')) {
        return Err(Error::invalid(format!("{what} must not contain bidirectional embeddings or overrides")));
    }
    Ok(())
}

/// Checks a message's or memory's text: not blank, at most
/// [`MAX_MESSAGE_BYTES`] (a 400 past it, as every field's bound).
pub fn validate_content(what: &str, content: &str) -> Result<()> {
    validate_message_content(what, content)?;
    if content.chars().all(is_invisible) {
        return Err(Error::invalid(format!("{what} must hold a visible character")));
    }
    Ok(())
}

/// Checks a conversation message's content: at most [`MAX_MESSAGE_BYTES`]
/// (the limits page's "Message content size"), refused as a bad request
/// (400), as the HTTP reference's error table has every bound on a field;
/// 413 is for a whole request over its route's limit.
/// It may be empty: a turn that said nothing (the published chat example
/// ingests `assistantMessage || ""`) is still a turn of the conversation,
/// stored as sent; nothing is extracted from it. (An ingest whose every
/// message is blank is refused: see [`IngestRequest::validate`].)
pub fn validate_message_content(what: &str, content: &str) -> Result<()> {
    if content.len() > MAX_MESSAGE_BYTES {
        return Err(Error::invalid(format!("{what} is {} bytes; the limit is {MAX_MESSAGE_BYTES}", content.len())));
    }
    Ok(())
}

/// Checks a topic key: 1-128 characters, no control characters, no
/// bidirectional embeddings or overrides.
pub fn validate_key(what: &str, key: &str) -> Result<()> {
    validate_label(what, key, MAX_KEY_CHARS)
}

/// Checks a memory's search queries: at most [`MAX_SEARCH_QUERIES`], each
/// at most [`MAX_QUERY_BYTES`].
pub fn validate_search_queries(what: &str, queries: &[String]) -> Result<()> {
    if queries.len() > MAX_SEARCH_QUERIES {
        return Err(Error::invalid(format!("{what} must hold at most {MAX_SEARCH_QUERIES} queries")));
    }
    if queries.iter().any(|q| q.len() > MAX_QUERY_BYTES) {
        return Err(Error::invalid(format!("{what} must be at most {MAX_QUERY_BYTES} bytes each")));
    }
    Ok(())
}

/// Checks an id argument: 1-64 ASCII letters and digits. Ids are opaque
/// to callers (the published samples are not ids this service makes), so
/// a well-formed id nobody holds is a 404, not a 400.
pub fn validate_id(id: &str) -> Result<()> {
    if !id.is_empty() && id.len() <= MAX_ID_CHARS && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        Ok(())
    } else {
        Err(Error::invalid(format!("id must be 1-{MAX_ID_CHARS} ASCII letters and digits")))
    }
}

/// Checks an optional ISO-8601 date argument: a date or date-time in the
/// years 0000-9999 (see [`crate::core::time::parse_datetime`]).
pub fn validate_date(what: &str, s: &Option<String>) -> Result<()> {
    // Kept as sent (a message's timestamp), so nothing around it either.
    if s.as_deref().is_some_and(|d| d.trim() != d || d.chars().any(char::is_control)) {
        return Err(Error::invalid(format!("{what} must not have white space around it or control characters in it")));
    }
    match s {
        Some(d) if crate::core::time::parse_datetime(d).is_none() => {
            Err(Error::invalid(format!("{what} must be an ISO-8601 date or date-time in the years 0000-9999")))
        }
        _ => Ok(()),
    }
}

/// An expiry: a date (as [`validate_date`]) whose instant, in UTC, lies in
/// the years 0000-9999 (`9999-12-31T23:00:00-05:00` does not).
pub fn validate_expiry(what: &str, s: &Option<String>) -> Result<()> {
    validate_date(what, s)?;
    match s.as_deref().and_then(crate::core::time::parse_millis) {
        Some(ms) if !(MIN_EXPIRY_MILLIS..=MAX_EXPIRY_MILLIS).contains(&ms) => Err(Error::invalid(format!("{what} must fall in the years 0000-9999 in UTC"))),
        _ => Ok(()),
    }
}

impl IngestRequest {
    pub fn validate(&self) -> Result<()> {
        if self.messages.is_empty() {
            return Err(Error::invalid("messages must not be empty"));
        }
        if self.messages.len() > MAX_MESSAGES_PER_INGEST {
            return Err(Error::invalid(format!("at most {MAX_MESSAGES_PER_INGEST} messages per ingest")));
        }
        if let Some(s) = &self.session_id {
            validate_session_id(s)?;
        }
        crate::core::filter::validate_metadata("metadata", &self.metadata)?;
        for (i, m) in self.messages.iter().enumerate() {
            validate_role(&format!("messages[{i}].role"), &m.role)?;
            validate_message_content(&format!("messages[{i}].content"), &m.content)?;
            validate_date(&format!("messages[{i}].timestamp"), &m.timestamp)?;
        }
        // A turn may say nothing within a conversation; a call in which
        // no turn says anything has nothing to remember.
        if self.messages.iter().all(|m| m.content.chars().all(is_invisible)) {
            return Err(Error::invalid("messages must hold a visible character: every message of this call is blank"));
        }
        Ok(())
    }
}

impl RememberRequest {
    pub fn validate(&self) -> Result<()> {
        if self.content.len() > MAX_MESSAGE_BYTES {
            return Err(Error::invalid(format!("content is {} bytes; the limit is {MAX_MESSAGE_BYTES}", self.content.len())));
        }
        if self.content.chars().filter(|&c| !is_invisible(c)).count() < MIN_REMEMBER_CHARS {
            return Err(Error::invalid("content must not be blank"));
        }
        if self.sensitive == Some(true) {
            return Err(Error::invalid("content marked sensitive is not stored"));
        }
        if let Some(s) = &self.session_id {
            validate_session_id(s)?;
        }
        if let Some(k) = &self.key {
            validate_key("key", k)?;
        }
        crate::core::filter::validate_metadata("metadata", &self.metadata)?;
        if self.expires_at.is_some() && self.ttl_seconds.is_some() {
            return Err(Error::invalid("give expiresAt or ttlSeconds, not both"));
        }
        if self.ttl_seconds.is_some_and(|t| t > MAX_TTL_SECONDS) {
            return Err(Error::invalid(format!("ttlSeconds must be at most {MAX_TTL_SECONDS} (about 317 years)")));
        }
        if self.ttl_seconds == Some(0) {
            return Err(Error::invalid("ttlSeconds must be at least 1: a memory remembered already expired would end the value its key holds now"));
        }
        validate_expiry("expiresAt", &self.expires_at)
    }
}

impl RecallRequest {
    pub fn validate(&self) -> Result<()> {
        if self.query.trim().is_empty() {
            return Err(Error::invalid("query must not be empty"));
        }
        // Zero-width and formatting marks alone ask nothing either.
        if self.query.chars().all(is_invisible) {
            return Err(Error::invalid("query must hold a visible character"));
        }
        if self.query.len() > MAX_QUERY_BYTES {
            return Err(Error::invalid(format!("query must be at most {MAX_QUERY_BYTES} bytes")));
        }
        if let Some(l) = self.options.limit {
            if l == 0 || l > MAX_RECALL_LIMIT as u64 {
                return Err(Error::invalid(format!("limit must be 1-{MAX_RECALL_LIMIT}")));
            }
        }
        if let Some(s) = &self.options.session_id {
            validate_session_id(s)?;
        }
        if let Some(f) = &self.options.filter {
            crate::core::filter::from_json(f)?;
        }
        validate_date("asOf", &self.options.as_of)?;
        if self.options.as_of.is_some() && self.options.include_inactive == Some(true) {
            return Err(Error::invalid("includeInactive cannot be combined with asOf: asOf chooses what was active at that instant"));
        }
        validate_date("referenceDate", &self.options.reference_date)
    }
}

impl ListRequest {
    /// Where the page starts: after this cursor, or at the first memory
    /// when there is none. The empty cursor is none: a client that sends
    /// back an empty cursor (as the namespace list's last page gives it,
    /// and this service's memory list gave it before the API schema said
    /// to leave it out) gets the first page, not a 400.
    pub fn after(&self) -> Option<&str> {
        self.cursor.as_deref().filter(|c| !c.is_empty())
    }

    pub fn validate(&self) -> Result<()> {
        if let Some(l) = self.limit {
            if l == 0 || l > MAX_PAGE_SIZE as u64 {
                return Err(Error::invalid(format!("limit must be 1-{MAX_PAGE_SIZE}")));
            }
        }
        if let Some(c) = self.after() {
            cursor_id(c)?;
        }
        if let Some(s) = &self.session_id {
            validate_session_id(s)?;
        }
        if let Some(f) = &self.filter {
            crate::core::filter::from_json(f)?;
        }
        validate_date("asOf", &self.as_of)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn test_json_media_is_the_type_before_its_parameters_not_a_prefix() {
        assert_eq!(super::json_media("Application/JSON; charset=utf-8"), ("application/json".into(), true));
        assert!(super::json_media("application/merge-patch+json").1);
        for not in ["application/jsonx", "application/json-seq", "application/jsonl", "text/plain", ""] {
            assert!(!super::json_media(not).1, "{not}");
        }
    }

    use super::*;

    #[test]
    fn test_a_profile_may_be_named_by_an_email_and_a_namespace_may_not() {
        for ok in ["alice@example.com", "bob+work@example.org", "user-123"] {
            assert!(validate_profile(ok).is_ok(), "{ok}");
        }
        for bad in ["a/b", "a b", "a%40b", "..", "a:b"] {
            assert!(validate_profile(bad).is_err(), "{bad}");
        }
        assert!(validate_namespace("team@example.com").unwrap_err().message().contains("[A-Za-z0-9._-]"));
        for refused in ["Not Valid!", "é", "a.b", "Team", "-a", ""] {
            let e = validate_new_namespace(refused).unwrap_err();
            assert!(e.message().contains("^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"), "{refused:?} is told the creation rule: {}", e.message());
        }
        assert!(validate_new_namespace(&"a".repeat(33)).unwrap_err().message().contains("32"));
        assert!(validate_new_namespace("my-app").is_ok());
    }

    #[test]
    fn test_names_out_of_pattern_are_refused() {
        for bad in ["", "..", ".", "a/b", "a%2Fb", "ａbc", &"x".repeat(101), "a b"] {
            assert!(validate_profile(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["p1", "my-project", "a.b_c", &"x".repeat(32), &"x".repeat(100)] {
            assert!(validate_profile(good).is_ok(), "{good:?} refused");
        }
        assert!(validate_namespace(&"x".repeat(32)).is_ok());
        assert!(validate_namespace(&"x".repeat(33)).is_err());
    }

    #[test]
    fn test_an_oversized_message_is_refused_as_a_bad_request() {
        let req = IngestRequest {
            messages: vec![MessageInput { role: "user".into(), content: "x".repeat(40 * 1024), timestamp: None }],
            session_id: None,
            metadata: Default::default(),
        };
        let err = req.validate().unwrap_err();
        assert_eq!((err.status(), err.code()), (400, 10001), "a field's bound, as the error table lists them");
    }

    #[test]
    fn test_a_recall_query_of_invisible_characters_is_refused() {
        for q in ["", "  ", "\u{200B}\u{200D}", " \u{FEFF} \u{2060}", &"\u{0301}".repeat(500)] {
            let req: RecallRequest = serde_json::from_value(serde_json::json!({ "query": q })).unwrap();
            assert!(req.validate().unwrap_err().is_invalid(), "{q:?}");
        }
        let req: RecallRequest = serde_json::from_value(serde_json::json!({ "query": "\u{200B}why?" })).unwrap();
        assert!(req.validate().is_ok());
    }

    #[test]
    fn test_a_role_or_key_with_a_bidirectional_control_is_refused() {
        for role in ["us\u{202E}er", "\u{202A}assistant"] {
            let e = validate_role("role", role).unwrap_err();
            assert!(e.message().contains("bidirectional"), "{role:?}: {e}");
        }
        assert!(validate_key("key", "user.\u{202E}name").is_err());
        assert!(validate_role("role", "Caroline").is_ok());
        assert!(validate_role("role", "\u{2067}\u{0645}\u{062D}\u{0645}\u{062F}\u{2069}").is_ok(), "an isolated right-to-left name");
    }

    #[test]
    fn test_a_date_with_white_space_around_it_or_a_control_character_is_refused() {
        for d in [" 2026-01-01", "2026-01-01\n", "2026-01-01\t", "2026-01\u{0}-01"] {
            let e = validate_date("timestamp", &Some(d.into())).unwrap_err();
            assert!(e.message().contains("white space"), "{d:?}: {e}");
        }
        for d in ["2026-01-01", "2026-01-01T10:00:00Z", "1:56 pm on 8 May, 2023"] {
            assert!(validate_date("timestamp", &Some(d.into())).is_ok(), "{d}");
        }
    }

    #[test]
    fn test_private_spans_are_redacted() {
        assert_eq!(redact_private("no marks here"), "no marks here");
        assert_eq!(redact_private("key is <private>sk-123</private>, ok"), "key is [private], ok");
        assert_eq!(redact_private("a <PRIVATE>x</Private> b <private>y</private>"), "a [private] b [private]");
        assert_eq!(redact_private("cut <private>secret to the end"), "cut [private]");
        // ASCII lowercasing keeps byte offsets, so multi-byte text is safe.
        assert_eq!(redact_private("é <private>ü</private> ß"), "é [private] ß");
        assert_eq!(redact_private("p <private>a <private>b</private> c</private> d"), "p [private] d");
        assert_eq!(redact_private("p <private>a</private> b </private> d"), "p [private] b </private> d", "a stray closing mark hides nothing");
        assert_eq!(redact_private("<private>a <private>b</private> c"), "[private]", "an unbalanced span runs to the end");
        let many = format!("keep {}</private> after", "<private>".repeat(3_333));
        assert_eq!(redact_private(&many), "keep [private]", "3,334 open, one closed: unbalanced to the end");
    }

    /// The span reader as first written: every closing mark searched for
    /// again from each mark (quadratic in marks; the reference).
    fn span_end_by_rescanning(lower: &str, from: usize) -> usize {
        let (mut depth, mut at) = (1usize, from);
        while depth > 0 {
            let (open, close) = (lower[at..].find(PRIVATE_OPEN), lower[at..].find(PRIVATE_CLOSE));
            match (open, close) {
                (_, None) => return lower.len(),
                (Some(o), Some(c)) if o < c => {
                    depth += 1;
                    at += o + PRIVATE_OPEN.len();
                }
                (_, Some(c)) => {
                    depth -= 1;
                    at += c + PRIVATE_CLOSE.len();
                }
            }
        }
        at
    }

    #[test]
    fn test_the_span_reader_ends_every_span_where_rescanning_does() {
        let pieces = ["<private>", "</private>", "a", " ", "<PRIVATE>", "</pri", "vate>", "é"];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..4_000 {
            let mut text = String::new();
            for _ in 0..(seed % 24) {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                text.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let lower = text.to_ascii_lowercase();
            for (from, _) in lower.match_indices(PRIVATE_OPEN) {
                let from = from + PRIVATE_OPEN.len();
                assert_eq!(span_end(&lower, from), span_end_by_rescanning(&lower, from), "{text:?} from {from}");
            }
        }
        assert!(only_redacted(" [private] [private] ") && !only_redacted("[private] x"));
    }

    #[test]
    fn test_invisible_session_ids_and_content_are_refused() {
        for s in [" ", "\u{200b}", "\u{feff}\u{2060}", "a\u{202e}b", "x\u{2066}y"] {
            assert!(validate_session_id(s).is_err(), "{s:?} accepted");
        }
        for s in ["s1", "chat 2026-04-15", "café", "a\u{200d}b"] {
            assert!(validate_session_id(s).is_ok(), "{s:?} refused");
        }
        assert!(validate_content("content", "\u{200b} \u{200b}").is_err());
        assert!(validate_content("content", "ok\u{200b}").is_ok());
        // Tag characters, variation selectors, combining accents alone,
        // a Hangul filler: nothing shows.
        for blank in ["\u{E0041}".repeat(100), "\u{FE0F}".repeat(100), "\u{0301}".repeat(100), "\u{3164}\u{034F}".to_string()] {
            assert!(validate_content("content", &blank).is_err(), "{blank:?} accepted");
            assert!(validate_session_id(&blank.chars().take(10).collect::<String>()).is_err(), "{blank:?} accepted as an id");
        }
        // A letter they mark shows: an accent written apart, an emoji's
        // variation selector, a flag of tags.
        for shown in ["cafe\u{0301}", "\u{2764}\u{FE0F}", "\u{1F3F4}\u{E0067}\u{E0062}\u{E007F}"] {
            assert!(validate_content("content", shown).is_ok(), "{shown:?} refused");
        }
    }

    #[test]
    fn test_unknown_fields_are_refused() {
        let v = serde_json::json!({"content": "a long enough piece of content", "bogus": 1});
        assert!(parse::<RememberRequest>(v).is_err());
    }
}
