//! Row decoders: a row that does not read as what it should is a storage
//! error, never a record of made-up values.

use super::*;

/// The memories (`m`) that belong in the vector index, but for expiry
/// (read as `expired` once past): `core::background::wants_vector` in SQL.
pub(super) const WANTS_VECTOR: &str = "m.status = 'active' AND m.type <> 'task'";

/// Columns of `memories`, in the order [`memory_from_row`] reads them.
pub(super) const MEMORY_COLUMNS: &str = "id, type, key, summary, content, session_id, source_message_ids, \
     search_queries, status, supersedes, superseded_by, event_date, created_at, updated_at, expires_at, \
     metadata, valid_from, valid_to";

pub(super) const MESSAGE_COLUMNS: &str = "id, session_id, role, content, timestamp, position, created_at, metadata";

/// The id in the first column of a row of ids (a `SELECT id ...`): a row
/// without one is a storage error, never skipped.
pub(super) fn id_of_row(r: &[SqlValue]) -> Result<String> {
    r.first().and_then(SqlValue::opt_string).ok_or_else(|| Error::storage("a row has no id"))
}

/// The two texts of a two-column row (`what` names the first, for the
/// error).
pub(super) fn two_texts(r: &[SqlValue], what: &str) -> Result<(String, String)> {
    match r {
        [a, b] => match (a.opt_string(), b.opt_string()) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(Error::storage(format!("failed to read {what} and id"))),
        },
        _ => Err(Error::storage(format!("failed to read {what} and id"))),
    }
}

/// A `(text, COUNT(*))` row of a `GROUP BY`.
pub(super) fn text_and_count(r: &[SqlValue]) -> Result<(String, i64)> {
    match r {
        [t, n] => Ok((
            t.opt_string().ok_or_else(|| Error::storage("a count's group is not text"))?,
            n.as_i64().ok_or_else(|| Error::storage("a count returned no number"))?,
        )),
        _ => Err(Error::storage("a count returned no number")),
    }
}

/// A text column's value: anything else (NULL in a `NOT NULL` column, a
/// number, a blob) is a storage error naming `what`, never read as empty.
pub(super) fn text(v: SqlValue, what: &str) -> Result<String> {
    match v {
        SqlValue::Text(s) => Ok(s),
        _ => Err(Error::storage(format!("a row has {what} that is not text"))),
    }
}

/// A nullable text column's value: `None` for NULL; a number or a blob is
/// a storage error naming `what`, never read as absent.
pub(super) fn opt_text(v: SqlValue, what: &str) -> Result<Option<String>> {
    match v {
        SqlValue::Null => Ok(None),
        SqlValue::Text(s) => Ok(Some(s)),
        _ => Err(Error::storage(format!("a row has {what} that is neither text nor null"))),
    }
}

/// A metadata column: empty for NULL or empty text, a flat JSON object
/// otherwise; anything else is a storage error.
fn metadata_of(v: SqlValue, row: &str) -> Result<crate::core::model::Metadata> {
    let bad = || Error::storage(format!("a {row} row has metadata that is not a flat JSON object"));
    match v {
        SqlValue::Null => Ok(Default::default()),
        SqlValue::Text(t) if t.is_empty() => Ok(Default::default()),
        SqlValue::Text(t) => serde_json::from_str(&t).map_err(|_| bad()),
        _ => Err(bad()),
    }
}

/// Whether a memory expiring at `expires_at` has expired at `now`. An
/// expiry that does not read as a time is a storage error (every path
/// writes a checked one), as [`Store::next_expiry`] finds it: read as
/// "never", the memory would stay active past any expiry it was given.
pub(super) fn expired(expires_at: Option<&str>, now: i64) -> Result<bool> {
    match expires_at {
        None => Ok(false),
        Some(at) => crate::core::time::parse_millis(at)
            .map(|t| t <= now)
            .ok_or_else(|| Error::storage(format!("a memory's expiry {} does not read as a time", crate::core::api::quoted(at)))),
    }
}

/// Builds a memory from a row of [`MEMORY_COLUMNS`]. An active memory whose
/// expiry has passed reads as `expired` even before the alarm marks it.
/// A row of other columns, without an id, or with a status or type this
/// version does not know is a storage error: a corrupt row is never read
/// as an active fact.
pub fn memory_from_row(r: Row, now: i64) -> Result<Memory> {
    let bad = || Error::storage("failed to read a memory row");
    let [id, kind, key, summary, content, session_id, sources, queries, status, supersedes, superseded_by, event_date, created_at, updated_at, expires_at, metadata, valid_from, valid_to] =
        <[SqlValue; 18]>::try_from(r).map_err(|_| bad())?;
    let metadata = metadata_of(metadata, "memory")?;
    let expires_at = opt_text(expires_at, "an expiry")?;
    let known = |what: &str, v: &SqlValue| Error::storage(format!("a memory row has {what} {}", crate::core::api::quoted(v.as_str().unwrap_or("(not text)"))));
    let mut status = status.as_str().and_then(Status::parse).ok_or_else(|| known("the status", &status))?;
    if status == Status::Active && expired(expires_at.as_deref(), now)? {
        status = Status::Expired;
    }
    Ok(Memory {
        id: opt_text(id, "an id")?.ok_or_else(bad)?,
        kind: kind.as_str().and_then(MemoryType::parse).ok_or_else(|| known("the type", &kind))?,
        key: opt_text(key, "a key")?,
        summary: text(summary, "a summary")?,
        content: text(content, "a content")?,
        session_id: text(session_id, "a session id")?,
        source_message_ids: json_ids(opt_text(sources, "source message ids")?.as_deref(), "source message ids")?,
        search_queries: json_ids(opt_text(queries, "search queries")?.as_deref(), "search queries")?,
        status,
        supersedes: opt_text(supersedes, "a supersedes id")?,
        superseded_by: opt_text(superseded_by, "a superseded-by id")?,
        event_date: opt_text(event_date, "an event date")?,
        created_at: text(created_at, "a creation time")?,
        updated_at: text(updated_at, "an update time")?,
        expires_at,
        metadata,
        valid_from: opt_text(valid_from, "a valid-from date")?,
        valid_to: opt_text(valid_to, "a valid-to date")?,
    })
}

/// Builds a message from a row of [`MESSAGE_COLUMNS`]. A row of other
/// columns, or without an id or a position, is a storage error.
pub fn message_from_row(r: Row) -> Result<Message> {
    let bad = || Error::storage("failed to read a message row");
    let [id, session_id, role, content, timestamp, position, created_at, metadata] = <[SqlValue; 8]>::try_from(r).map_err(|_| bad())?;
    let metadata = metadata_of(metadata, "message")?;
    Ok(Message {
        id: opt_text(id, "an id")?.ok_or_else(bad)?,
        session_id: text(session_id, "a session id")?,
        role: text(role, "a role")?,
        content: text(content, "a content")?,
        timestamp: opt_text(timestamp, "a timestamp")?,
        position: position.as_i64().ok_or_else(bad)?,
        created_at: text(created_at, "a creation time")?,
        metadata,
    })
}
