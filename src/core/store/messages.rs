//! Messages: storing a call's messages (content-addressed, positioned in
//! their session), reading them back by id, session or rowid, deleting them.

use super::*;

impl<'a> Store<'a> {
    /// Which of `ids` are already stored.
    pub fn existing_message_ids(&self, ids: &[String]) -> Result<std::collections::HashSet<String>> {
        let mut found = std::collections::HashSet::new();
        if ids.is_empty() {
            return Ok(found);
        }
        // In chunks: an import's ids alone can be over one value's 2 MB.
        for chunk in json_chunks(ids) {
            for row in self.sql.query("SELECT m.id FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value", &[chunk])? {
                found.insert(id_of_row(&row)?);
            }
        }
        Ok(found)
    }

    /// The role of each stored message among `ids`, by id.
    pub fn message_roles(&self, ids: &[&String]) -> Result<std::collections::HashMap<String, String>> {
        let mut roles = std::collections::HashMap::new();
        for chunk in json_chunks(ids) {
            for row in self.sql.query("SELECT m.id, m.role FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value", &[chunk])? {
                match row.as_slice() {
                    [SqlValue::Text(id), SqlValue::Text(role)] => roles.insert(id.clone(), role.clone()),
                    _ => return Err(Error::storage("failed to read a message's id and role")),
                };
            }
        }
        Ok(roles)
    }

    /// Stores messages of one session with `INSERT OR IGNORE`; returns the
    /// ones that were new, each with its rowid, in rowid order. Positions
    /// continue the session's sequence.
    pub fn insert_messages(&self, session_id: &str, messages: &[NewMessage]) -> Result<Vec<(i64, Message)>> {
        let ids: Vec<String> = messages.iter().map(|m| m.id.clone()).collect();
        let existing = self.existing_message_ids(&ids)?;
        let base = self
            .sql
            .query("SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session_id = ?", &[session_id.into()])?
            .first()
            .and_then(|r| r.first())
            .and_then(SqlValue::as_i64)
            .ok_or_else(|| Error::storage("failed to read a session's next position"))?;
        let created_at = iso(self.now);
        let mut seen = std::collections::HashSet::new();
        let mut fresh = Vec::new();
        for m in messages {
            if existing.contains(&m.id) || !seen.insert(m.id.clone()) {
                continue;
            }
            let position =
                i64::try_from(fresh.len()).ok().and_then(|n| base.checked_add(n)).ok_or_else(|| Error::storage("a session's positions are out of range"))?;
            fresh.push(Message {
                id: m.id.clone(),
                session_id: session_id.to_string(),
                role: m.input.role.clone(),
                content: m.input.content.clone(),
                timestamp: m.input.timestamp.clone(),
                position,
                created_at: created_at.clone(),
                metadata: m.metadata.clone(),
            });
        }
        let written = self.put_messages(&fresh)?;
        let mut by_id: std::collections::HashMap<String, Message> = fresh.into_iter().map(|m| (m.id.clone(), m)).collect();
        Ok(written.into_iter().filter_map(|(rowid, id)| Some((rowid, by_id.remove(&id)?))).collect())
    }

    /// Writes fully formed messages (ingest and import), ignoring ids
    /// already present: one statement per [`MAX_JSON_PARAM`] bytes of
    /// messages. Their full-text rows follow in a batch ([`TEXT_BATCH`]).
    /// Returns the rows written: rowid and id, in rowid order.
    pub fn put_messages(&self, messages: &[Message]) -> Result<Vec<(i64, String)>> {
        let rows: Vec<_> = messages
            .iter()
            .map(|m| {
                let metadata = if m.metadata.is_empty() { None } else { Some(json_text(&m.metadata)?) };
                Ok((&m.id, &m.session_id, &m.role, &m.content, &m.timestamp, m.position, &m.created_at, metadata))
            })
            .collect::<Result<_>>()?;
        let (table, columns) = json_table(8);
        let mut written = Vec::new();
        for chunk in json_chunks(&rows) {
            written.extend(rowids_of(
                self.sql.query(&format!("{table} INSERT OR IGNORE INTO messages ({MESSAGE_COLUMNS}) SELECT {columns} FROM r RETURNING rowid, id"), &[chunk])?,
            )?);
        }
        written.sort_unstable();
        self.queue_text_index(FullText::Messages)?;
        Ok(written)
    }

    pub fn messages_by_ids(&self, ids: &[String]) -> Result<Vec<Message>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_SQL_PARAMS) {
            let sql = format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE id IN ({}) ORDER BY session_id, position", placeholders(chunk.len()));
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            for r in self.sql.query(&sql, &params)? {
                out.push(message_from_row(r)?);
            }
        }
        Ok(out)
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

    /// Every message of a session, in order.
    pub fn session_messages(&self, session_id: &str) -> Result<Vec<Message>> {
        self.sql
            .query(&format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY position"), &[session_id.into()])?
            .into_iter()
            .map(message_from_row)
            .collect()
    }

    /// Every message, by session then position (export).
    pub fn all_messages(&self) -> Result<Vec<Message>> {
        self.sql.query(&format!("SELECT {MESSAGE_COLUMNS} FROM messages ORDER BY session_id, position"), &[])?.into_iter().map(message_from_row).collect()
    }
}
