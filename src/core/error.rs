//! One opaque error type for the whole core.
//!
//! An [`Error`] has a private kind. Callers ask it questions with the
//! `is_*` predicates, read its stable machine code with [`Error::code`]
//! and its HTTP status with [`Error::status`]. Mapping to HTTP happens in
//! exactly one place: here.

use std::fmt;

/// The error returned by every fallible operation of the core.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    kind: Kind,
    message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// The caller sent something malformed or out of limits.
    Invalid,
    /// No credentials were presented.
    Unauthenticated,
    /// Credentials do not grant access to this namespace.
    Forbidden,
    /// The addressed thing does not exist.
    NotFound,
    /// The request conflicts with the stored state.
    Conflict,
    /// A name to be created is taken (the published code 10008: "Namespace
    /// name already exists").
    AlreadyExists,
    /// The request is too large.
    TooLarge,
    /// The path exists, but not for this method.
    MethodNotAllowed,
    /// The caller accepts no representation this endpoint answers in.
    NotAcceptable,
    /// The body is of a media type this endpoint does not take.
    UnsupportedMediaType,
    /// A storage operation failed.
    Storage,
    /// A model, embedder or index provider failed.
    Provider,
    /// The service is misconfigured (for example: no tokens in production).
    Config,
    /// The isolate is busy with other large requests: no room was made
    /// for this one's working set in time (retry).
    Busy,
    /// A large request's body did not arrive in time while it held room
    /// that others wait for.
    Timeout,
}

impl Kind {
    /// Every kind, so that a code reads back to its kind by the one table
    /// in [`Error::code`].
    const ALL: [Kind; 15] = [
        Kind::Invalid,
        Kind::Unauthenticated,
        Kind::Forbidden,
        Kind::NotFound,
        Kind::Conflict,
        Kind::AlreadyExists,
        Kind::TooLarge,
        Kind::MethodNotAllowed,
        Kind::NotAcceptable,
        Kind::UnsupportedMediaType,
        Kind::Storage,
        Kind::Provider,
        Kind::Config,
        Kind::Busy,
        Kind::Timeout,
    ];
}

/// Longest message an error carries, in characters: a message quotes
/// caller input at times, and an error never carries a caller's megabyte
/// back to them (or into a log).
pub const MAX_MESSAGE_CHARS: usize = 300;

impl Error {
    fn new(kind: Kind, message: impl Into<String>) -> Error {
        Error { kind, message: printable(message.into()) }
    }

    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(Kind::Invalid, message)
    }
    pub fn unauthenticated(message: impl Into<String>) -> Error {
        Error::new(Kind::Unauthenticated, message)
    }
    pub fn forbidden(message: impl Into<String>) -> Error {
        Error::new(Kind::Forbidden, message)
    }
    pub fn not_found(message: impl Into<String>) -> Error {
        Error::new(Kind::NotFound, message)
    }
    pub fn conflict(message: impl Into<String>) -> Error {
        Error::new(Kind::Conflict, message)
    }
    pub fn already_exists(message: impl Into<String>) -> Error {
        Error::new(Kind::AlreadyExists, message)
    }
    pub fn too_large(message: impl Into<String>) -> Error {
        Error::new(Kind::TooLarge, message)
    }
    pub fn method_not_allowed(message: impl Into<String>) -> Error {
        Error::new(Kind::MethodNotAllowed, message)
    }
    pub fn not_acceptable(message: impl Into<String>) -> Error {
        Error::new(Kind::NotAcceptable, message)
    }
    pub fn unsupported_media_type(message: impl Into<String>) -> Error {
        Error::new(Kind::UnsupportedMediaType, message)
    }
    pub fn storage(message: impl Into<String>) -> Error {
        Error::new(Kind::Storage, message)
    }
    pub fn provider(message: impl Into<String>) -> Error {
        Error::new(Kind::Provider, message)
    }
    pub fn config(message: impl Into<String>) -> Error {
        Error::new(Kind::Config, message)
    }
    pub fn busy(message: impl Into<String>) -> Error {
        Error::new(Kind::Busy, message)
    }

    pub fn timeout(message: impl Into<String>) -> Error {
        Error::new(Kind::Timeout, message)
    }

    pub fn is_invalid(&self) -> bool {
        self.kind == Kind::Invalid
    }
    pub fn is_not_found(&self) -> bool {
        self.kind == Kind::NotFound
    }
    pub fn is_forbidden(&self) -> bool {
        self.kind == Kind::Forbidden
    }
    pub fn is_unauthenticated(&self) -> bool {
        self.kind == Kind::Unauthenticated
    }
    pub fn is_provider(&self) -> bool {
        self.kind == Kind::Provider
    }
    pub fn is_storage(&self) -> bool {
        self.kind == Kind::Storage
    }
    pub fn is_conflict(&self) -> bool {
        self.kind == Kind::Conflict
    }
    pub fn is_busy(&self) -> bool {
        self.kind == Kind::Busy
    }
    pub fn is_timeout(&self) -> bool {
        self.kind == Kind::Timeout
    }
    /// Whether the fault is the caller's (a 4xx).
    pub fn is_client_error(&self) -> bool {
        self.status() < 500
    }

    /// The human-readable message, lowercase, without the code.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// A stable numeric code, shared by REST, RPC and MCP.
    pub fn code(&self) -> u32 {
        match self.kind {
            Kind::Invalid => 10001,
            Kind::Unauthenticated => 10002,
            Kind::Forbidden => 10003,
            Kind::NotFound => 10004,
            Kind::Conflict => 10005,
            Kind::TooLarge => 10006,
            Kind::MethodNotAllowed => 10007,
            Kind::AlreadyExists => 10008,
            Kind::NotAcceptable => 10013,
            Kind::UnsupportedMediaType => 10009,
            Kind::Storage => 10010,
            Kind::Provider => 10011,
            Kind::Config => 10012,
            Kind::Busy => 10014,
            Kind::Timeout => 10015,
        }
    }

    /// The HTTP status this error maps to. The only such mapping.
    pub fn status(&self) -> u16 {
        match self.kind {
            Kind::Invalid => 400,
            Kind::Unauthenticated => 401,
            Kind::Forbidden => 403,
            Kind::NotFound => 404,
            Kind::Conflict | Kind::AlreadyExists => 409,
            Kind::TooLarge => 413,
            Kind::MethodNotAllowed => 405,
            Kind::NotAcceptable => 406,
            Kind::Timeout => 408,
            Kind::UnsupportedMediaType => 415,
            Kind::Storage => 500,
            Kind::Provider => 502,
            Kind::Config | Kind::Busy => 503,
        }
    }

    /// Rebuilds an error from its code and message (the inverse of
    /// [`Error::code`]), used when an error crosses a Durable Object or RPC
    /// boundary.
    pub fn from_code(code: u32, message: impl Into<String>) -> Error {
        // An unknown code (a newer build's) reads as a storage failure.
        let kind = Kind::ALL.into_iter().find(|k| Error::new(*k, "").code() == code).unwrap_or(Kind::Storage);
        Error::new(kind, message)
    }

    /// A short name of what went wrong, for text read by people or models
    /// (MCP's tool errors), one per code.
    pub fn label(&self) -> &'static str {
        match self.kind {
            Kind::Invalid => "invalid input",
            Kind::Unauthenticated => "unauthenticated",
            Kind::Forbidden => "forbidden",
            Kind::NotFound => "not found",
            Kind::Conflict => "conflict",
            Kind::AlreadyExists => "already exists",
            Kind::TooLarge => "too large",
            Kind::MethodNotAllowed => "method not allowed",
            Kind::NotAcceptable => "not acceptable",
            Kind::UnsupportedMediaType => "unsupported media type",
            Kind::Storage => "storage failure",
            Kind::Provider => "provider failure",
            Kind::Config => "misconfigured",
            Kind::Busy => "busy, retry",
            Kind::Timeout => "timed out",
        }
    }
}

/// `message` with control characters escaped (`\u{0}`) and cut to
/// [`MAX_MESSAGE_CHARS`], so an error that quotes input shows it, and only
/// as printable text.
fn printable(message: String) -> String {
    if message.chars().count() <= MAX_MESSAGE_CHARS && !message.chars().any(char::is_control) {
        return message;
    }
    let mut out = String::new();
    for c in message.chars() {
        if out.chars().count() >= MAX_MESSAGE_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Error {
        Error::invalid(format!("failed to parse json: {e}"))
    }
}

/// The core's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Longest piece of caller input an error message quotes, in characters.
pub const MAX_QUOTED_CHARS: usize = 64;

/// `input` as an error message may show it: in quotes, control characters
/// escaped, cut to [`MAX_QUOTED_CHARS`]. Every message that names what a
/// caller sent (a path, a name, a content type) goes through here.
pub fn quoted(input: &str) -> String {
    let mut out = String::from("\"");
    for (i, c) in input.chars().enumerate() {
        if i >= MAX_QUOTED_CHARS {
            out.push('…');
            break;
        }
        out.extend(c.escape_debug());
    }
    out.push('"');
    out
}

/// serde's message for a value that does not fit a record, each piece of
/// caller input in it [`quoted`]: serde writes an unknown field or variant
/// and a string of the wrong type whole, however long.
pub fn serde_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    unknown_name(&text).unwrap_or_else(|| quoted_strings(&text))
}

/// serde's ``unknown field `NAME`, …`` and ``unknown variant `NAME`, …``
/// with NAME [`quoted`]; `None` for any other message. NAME is written
/// raw (backticks and all), so it ends where serde's own words after it
/// begin, the last of them in the message.
fn unknown_name(text: &str) -> Option<String> {
    let (lead, rest) = ["unknown field ", "unknown variant "].iter().find_map(|lead| Some((*lead, text.strip_prefix(lead)?.strip_prefix('`')?)))?;
    let end = ["`, expected", "`, there are no"].iter().filter_map(|s| rest.rfind(s)).max().or_else(|| rest.rfind('`'))?;
    let (name, tail) = rest.split_at_checked(end)?;
    Some(format!("{lead}{}{}", quoted(name), tail.strip_prefix('`')?))
}

/// `text` with each string serde shows as Rust writes it (``invalid type:
/// string "…", expected …``) [`quoted`] instead.
fn quoted_strings(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some((before, after)) = rest.split_once("string \"") {
        let Some((value, tail)) = debug_string(after) else {
            break;
        };
        out.push_str(before);
        out.push_str("string ");
        out.push_str(&quoted(&value));
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// The text a string written by Rust's `{:?}` stands for, read from `s`
/// (what follows its opening quote), and what follows its closing quote;
/// `None` when it does not close.
fn debug_string(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, s.get(i..)?.strip_prefix('"')?)),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                '0' => out.push('\0'),
                'u' => {
                    let hex: String = chars.by_ref().map(|(_, h)| h).take_while(|h| *h != '}').filter(|h| *h != '{').collect();
                    out.push(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32)?);
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_every_code_reads_back_to_its_kind_with_a_label_of_its_own() {
        let mut labels = std::collections::BTreeSet::new();
        for kind in Kind::ALL {
            let e = Error::new(kind, "m");
            let back = Error::from_code(e.code(), "m");
            assert_eq!(back, e, "{kind:?}");
            assert!(labels.insert(e.label()), "{kind:?} shares its label");
        }
        assert!(Error::from_code(19_999, "newer").is_storage());
    }
}
