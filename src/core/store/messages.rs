//! Messages: storing a call's messages (content-addressed, positioned in
//! their session), reading them back by id, session or rowid, deleting them.

use super::*;
use crate::core::api::MAX_POSITION;

/// What a message gave: a memory's fingerprint, and its content unless
/// it was deleted since ([`Store::given_by`]).
pub type Given = (String, Option<String>);

impl<'a> Store<'a> {
    /// Which of `ids` are already stored.
    pub fn existing_message_ids(&self, ids: &[String]) -> Result<std::collections::HashSet<String>> {
        let mut found = std::collections::HashSet::new();
        if ids.is_empty() {
            return Ok(found);
        }
        // In chunks: an import's ids alone can be over one value's 2 MB.
        for chunk in json_chunks(ids)? {
            for row in self.sql.query("SELECT m.id FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value", &[chunk])? {
                found.insert(id_of_row(&row)?);
            }
        }
        Ok(found)
    }

    /// When each of these stored messages was sent, by id: its timestamp
    /// as sent, `None` for one sent without. Ids not stored are left out.
    pub fn message_times(&self, ids: &[String]) -> Result<std::collections::HashMap<String, Option<String>>> {
        let mut found = std::collections::HashMap::new();
        for chunk in json_chunks(ids)? {
            for row in self.sql.query("SELECT m.id, m.timestamp FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value", &[chunk])? {
                match row.as_slice() {
                    [SqlValue::Text(id), SqlValue::Text(t)] => found.insert(id.clone(), Some(t.clone())),
                    [SqlValue::Text(id), SqlValue::Null] => found.insert(id.clone(), None),
                    _ => return Err(Error::storage("a message's id and timestamp do not read as text")),
                };
            }
        }
        Ok(found)
    }

    /// Marks these stored messages to be judged again by the session's
    /// `extract` job (schema version 18): a model fault left them partly
    /// judged.
    pub fn mark_rejudge(&self, ids: &[String]) -> Result<()> {
        for chunk in json_chunks(ids)? {
            self.sql.execute(
                "INSERT OR IGNORE INTO rejudge (message_rowid) SELECT m.rowid FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value",
                &[chunk],
            )?;
        }
        Ok(())
    }

    /// Which of `ids` are marked to be judged again.
    pub fn marked_rejudge(&self, ids: &[String]) -> Result<std::collections::HashSet<String>> {
        let mut found = std::collections::HashSet::new();
        for chunk in json_chunks(ids)? {
            for row in self
                .sql
                .query("SELECT m.id FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value CROSS JOIN rejudge r ON r.message_rowid = m.rowid", &[chunk])?
            {
                found.insert(id_of_row(&row)?);
            }
        }
        Ok(found)
    }

    /// What each of these messages gave: by message id, the fingerprint
    /// and content of every memory, in any state, that cites it or that it
    /// said again (a restatement), and the fingerprint alone of what it
    /// said again of a memory since deleted ([`Store::withhold`]).
    pub fn given_by(&self, ids: &[String]) -> Result<std::collections::HashMap<String, Vec<Given>>> {
        let mut found: std::collections::HashMap<String, Vec<Given>> = std::collections::HashMap::new();
        for chunk in json_chunks(ids)? {
            for row in self.sql.query(
                "SELECT DISTINCT g.id, m.fingerprint, m.content FROM json_each(?1) j CROSS JOIN messages g ON g.id = j.value \
                 CROSS JOIN citations c ON c.message_rowid = g.rowid CROSS JOIN memories m ON m.id = c.memory_id \
                 UNION SELECT g.id, m.fingerprint, m.content FROM json_each(?1) j CROSS JOIN messages g ON g.id = j.value \
                 CROSS JOIN restatements r ON r.message_rowid = g.rowid CROSS JOIN memories m ON m.id = r.memory_id \
                 UNION SELECT g.id, w.fingerprint, NULL FROM json_each(?1) j CROSS JOIN messages g ON g.id = j.value \
                 CROSS JOIN withheld w ON w.message_rowid = g.rowid",
                &[chunk],
            )? {
                match row.as_slice() {
                    [SqlValue::Text(message), SqlValue::Text(fingerprint), content @ (SqlValue::Text(_) | SqlValue::Null)] => {
                        found.entry(message.clone()).or_default().push((fingerprint.clone(), content.opt_string()))
                    }
                    _ => return Err(Error::storage("failed to read a message's id and a memory's fingerprint and content")),
                }
            }
        }
        Ok(found)
    }

    /// Clears the marks of `ids` ([`Store::mark_rejudge`]).
    pub fn clear_rejudge(&self, ids: &[String]) -> Result<()> {
        for chunk in json_chunks(ids)? {
            self.sql.execute(
                "DELETE FROM rejudge WHERE message_rowid IN (SELECT m.rowid FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value)",
                &[chunk],
            )?;
        }
        Ok(())
    }

    /// The role of each stored message among `ids`, by id.
    pub fn message_roles(&self, ids: &[&String]) -> Result<std::collections::HashMap<String, String>> {
        let mut roles = std::collections::HashMap::new();
        for chunk in json_chunks(ids)? {
            for row in self.sql.query("SELECT m.id, m.role FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value", &[chunk])? {
                match row.as_slice() {
                    [SqlValue::Text(id), SqlValue::Text(role)] => roles.insert(id.clone(), role.clone()),
                    _ => return Err(Error::storage("failed to read a message's id and role")),
                };
            }
        }
        Ok(roles)
    }

    /// The position a session's next message takes: one past its last
    /// (added here, not in SQL, which past i64::MAX answers a REAL).
    fn next_position(&self, session_id: &str) -> Result<i64> {
        match self.last_position(session_id)? {
            None => Ok(0),
            Some(p) => p.checked_add(1).ok_or_else(|| no_room(session_id)),
        }
    }

    /// A session's highest position; `None` for a session with no
    /// messages. A value that is not an integer is a storage error.
    fn last_position(&self, session_id: &str) -> Result<Option<i64>> {
        let last = self.sql.query("SELECT MAX(position) FROM messages WHERE session_id = ?", &[session_id.into()])?;
        match last.first().and_then(|r| r.first()) {
            Some(SqlValue::Null) => Ok(None),
            Some(SqlValue::Integer(p)) => Ok(Some(*p)),
            _ => Err(Error::storage("failed to read a session's next position")),
        }
    }

    /// Refuses (400) `count` new messages in a session whose positions
    /// would pass [`MAX_POSITION`] (only an import can bring a session
    /// near it): before anything of the call is written. A position that
    /// does not read is the store's error, not the caller's.
    pub fn check_room(&self, session_id: &str, count: usize) -> Result<()> {
        let next = self.last_position(session_id)?.map_or(Some(0), |p| p.checked_add(1));
        let last = next.zip(i64::try_from(count).ok()).and_then(|(next, n)| next.checked_add(n.saturating_sub(1)));
        match last {
            Some(p) if p <= MAX_POSITION => Ok(()),
            _ => Err(no_room(session_id)),
        }
    }

    /// Stores the messages of one call, all of session `session_id`, with
    /// `INSERT OR IGNORE`, as they are but for their positions, which
    /// continue the session's sequence. Returns the ones that were new, in
    /// rowid order: each one's rowid, its place in `messages`, and the
    /// position it was stored at. Nothing is copied from `messages` but
    /// one statement's rows at a time (a call may carry 16 MB of text).
    pub fn insert_messages(&self, session_id: &str, messages: &[Message]) -> Result<Vec<Inserted>> {
        let ids: Vec<String> = messages.iter().map(|m| m.id.clone()).collect();
        let existing = self.existing_message_ids(&ids)?;
        let base = self.next_position(session_id)?;
        let mut seen = std::collections::HashSet::new();
        let mut fresh: Vec<(usize, i64)> = Vec::new();
        for (index, m) in messages.iter().enumerate() {
            if m.session_id != session_id {
                return Err(Error::storage("a call's messages are of more than one session"));
            }
            if existing.contains(&m.id) || !seen.insert(m.id.as_str()) {
                continue;
            }
            let position =
                i64::try_from(fresh.len()).ok().and_then(|n| base.checked_add(n)).filter(|p| *p <= MAX_POSITION).ok_or_else(|| no_room(session_id))?;
            fresh.push((index, position));
        }
        let rows = fresh.iter().filter_map(|&(index, position)| Some((messages.get(index)?, position)));
        let written = self.put_rows(rows)?;
        let by_id: std::collections::HashMap<&str, (usize, i64)> =
            fresh.iter().filter_map(|&(index, position)| Some((messages.get(index)?.id.as_str(), (index, position)))).collect();
        Ok(written.into_iter().filter_map(|(rowid, id)| by_id.get(id.as_str()).map(|&(index, position)| Inserted { rowid, index, position })).collect())
    }

    /// Writes fully formed messages (import), ignoring ids already present.
    /// Returns the rows written: rowid and id, in rowid order.
    pub fn put_messages(&self, messages: &[Message]) -> Result<Vec<(i64, String)>> {
        self.put_rows(messages.iter().map(|m| (m, m.position)))
    }

    /// Writes messages, each at the position given with it, ignoring ids
    /// already present: one statement per [`MAX_JSON_PARAM`] bytes of
    /// messages, each statement's rows written as its parameter is made.
    /// Their full-text rows follow in a batch ([`TEXT_BATCH`]). Returns
    /// the rows written: rowid and id, in rowid order.
    fn put_rows<'m>(&self, messages: impl Iterator<Item = (&'m Message, i64)>) -> Result<Vec<(i64, String)>> {
        let bytes = std::cell::Cell::new(0usize);
        let rows = messages.map(|(m, position)| {
            bytes.set(bytes.get().saturating_add(m.content.len()));
            let metadata = if m.metadata.is_empty() { None } else { Some(json_text(&m.metadata)?) };
            Ok((&m.id, &m.session_id, &m.role, &m.content, &m.timestamp, position, &m.created_at, metadata))
        });
        let (table, columns) = json_table(8);
        let mut written = Vec::new();
        for chunk in json_chunks_of(rows) {
            written.extend(rowids_of(
                self.sql
                    .query(&format!("{table} INSERT OR IGNORE INTO messages ({MESSAGE_COLUMNS}) SELECT {columns} FROM r RETURNING rowid, id"), &[chunk?])?,
            )?);
        }
        written.sort_unstable();
        self.queue_text_index(FullText::Messages, bytes.get())?;
        Ok(written)
    }

    pub fn messages_by_ids(&self, ids: &[String]) -> Result<Vec<Message>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_SQL_PARAMS) {
            let sql = format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE id IN ({}) ORDER BY session_id, position, rowid", placeholders(chunk.len()));
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            for r in self.sql.query(&sql, &params)? {
                out.push(message_from_row(r)?);
            }
        }
        Ok(out)
    }

    /// The messages `ids` as [`Store::messages_by_ids`] orders them, at
    /// most [`PAGE_TEXT_BYTES`] of their texts (one always), and whether
    /// some were left out: a memory that consolidation made can cite
    /// hundreds of long messages.
    pub fn messages_within(&self, ids: &[String]) -> Result<(Vec<Message>, bool)> {
        // Id, then the order keys (session, position, rowid), then bytes.
        let mut sized: Vec<(String, (String, i64, i64), usize)> = Vec::new();
        for chunk in json_chunks(ids)? {
            let rows = self.sql.query(
                "SELECT g.id, g.session_id, g.position, g.rowid, length(CAST(g.content AS BLOB)) + ifnull(length(CAST(g.metadata AS BLOB)), 0) \
                 FROM json_each(?1) j CROSS JOIN messages g ON g.id = j.value",
                &[chunk],
            )?;
            for row in rows {
                let [id, session, position, rowid, bytes]: [SqlValue; 5] =
                    row.try_into().map_err(|_| Error::storage("a message size row that is not five columns"))?;
                let number = |v: SqlValue, what: &str| v.as_i64().ok_or_else(|| Error::storage(format!("a message's {what} that is not a number")));
                let bytes = usize::try_from(number(bytes, "size")?).unwrap_or(usize::MAX);
                sized.push((text(id, "a message id")?, (text(session, "a message's session")?, number(position, "position")?, number(rowid, "rowid")?), bytes));
            }
        }
        sized.sort_by(|a, b| a.1.cmp(&b.1));
        sized.dedup_by(|a, b| a.0 == b.0);
        let sized: Vec<(String, usize)> = sized.into_iter().map(|(id, _, bytes)| (id, bytes)).collect();
        let kept = super::memories::within_page(&sized, usize::MAX, PAGE_TEXT_BYTES);
        let ids: Vec<String> = sized.iter().take(kept).map(|(id, _)| id.clone()).collect();
        Ok((self.messages_by_ids(&ids)?, kept < sized.len()))
    }

    /// About how many texts full text scores against: the messages, or
    /// the memories in a profile without messages (remembered statements
    /// alone). One statement; each is the table's largest rowid, read from
    /// the end of its b-tree (a count would read all of it). Never below
    /// the count; deleted rows can leave it above, which recall reads
    /// through a logarithm (`recall::fuse::LexicalMatch`), where that is
    /// no matter. 0 when both are empty.
    pub fn texts_stored_about(&self) -> Result<u64> {
        let n = self.count("SELECT COALESCE((SELECT MAX(rowid) FROM messages), (SELECT MAX(rowid) FROM memories), 0)")?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The id of every message of a session, in order, with the bytes of
    /// its text and metadata: what deleting or judging a session again
    /// reads first, where the texts of a long session (each call adds up
    /// to 500 messages of 32 KB) would not fit in memory together.
    pub fn session_message_sizes(&self, session_id: &str) -> Result<Vec<(String, usize)>> {
        self.sql
            .query(
                "SELECT id, length(CAST(content AS BLOB)) + ifnull(length(CAST(metadata AS BLOB)), 0) FROM messages \
                 WHERE session_id = ? ORDER BY position, rowid",
                &[session_id.into()],
            )?
            .into_iter()
            .map(|r| match r.as_slice() {
                [SqlValue::Text(id), SqlValue::Integer(bytes)] => Ok((id.clone(), usize::try_from(*bytes).unwrap_or(usize::MAX))),
                _ => Err(Error::storage("failed to read a message's id and size")),
            })
            .collect()
    }

    /// Every message of a session, in order (all their texts at once:
    /// [`Store::session_message_sizes`] first where a session may be long).
    pub fn session_messages(&self, session_id: &str) -> Result<Vec<Message>> {
        self.sql
            .query(&format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY position, rowid"), &[session_id.into()])?
            .into_iter()
            .map(message_from_row)
            .collect()
    }

    /// Every message, by session then position.
    pub fn all_messages(&self) -> Result<Vec<Message>> {
        self.sql
            .query(&format!("SELECT {MESSAGE_COLUMNS} FROM messages ORDER BY session_id, position, rowid"), &[])?
            .into_iter()
            .map(message_from_row)
            .collect()
    }

    /// Up to `limit` messages after `after` (a session id, position and
    /// rowid), by session, position, then rowid, each with its rowid: the
    /// whole profile a page at a time (export), never all of it at once.
    /// The rowid makes the order total: two messages of a session may
    /// share a position (an import keeps the positions a file gives), and
    /// a page ending between them must not skip the second.
    pub fn messages_after(&self, after: Option<(&str, i64, i64)>, limit: usize) -> Result<Vec<(i64, Message)>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = match after {
            None => self.sql.query(&format!("SELECT rowid, {MESSAGE_COLUMNS} FROM messages ORDER BY session_id, position, rowid LIMIT ?"), &[limit.into()])?,
            Some((session, position, rowid)) => self.sql.query(
                &format!(
                    "SELECT rowid, {MESSAGE_COLUMNS} FROM messages WHERE (session_id, position, rowid) > (?, ?, ?) ORDER BY session_id, position, rowid LIMIT ?"
                ),
                &[session.into(), position.into(), rowid.into(), limit.into()],
            )?,
        };
        rows.into_iter()
            .map(|mut r| {
                let rowid = (!r.is_empty()).then(|| r.remove(0)).and_then(|v| v.as_i64()).ok_or_else(|| Error::storage("failed to read a message's rowid"))?;
                Ok((rowid, message_from_row(r)?))
            })
            .collect()
    }
}

/// The 400 of a session with no positions left.
fn no_room(session_id: &str) -> Error {
    Error::invalid(format!("session {session_id} has no positions left: its messages run to the largest position a message may have ({MAX_POSITION})"))
}
