//! Restatements: later messages that said again, word for word, what a
//! stored memory says. Ingest stores such a statement once, citing where
//! it was first said (so recall scores it as before); the later messages
//! are recorded here, and a memory whose cited messages are deleted moves
//! to them instead of going with the rest ([`Store::rehome`]).
//!
//! Rows leave with their memory or their message (triggers, schema
//! version 17). An export carries them as `restatement` records, which
//! import writes back.

use super::*;

impl<'a> Store<'a> {
    /// Records that these messages said again what a stored memory says:
    /// pairs of (memory id, message id). A message the memory cites is no
    /// restatement of it, and an unstored message is left out.
    pub fn record_restatements(&self, pairs: &[(&str, &str)]) -> Result<()> {
        for chunk in json_chunks(pairs)? {
            self.sql.execute(
                "INSERT OR IGNORE INTO restatements (memory_id, message_rowid) SELECT j.value ->> 0, m.rowid \
                 FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value ->> 1 \
                 WHERE NOT EXISTS (SELECT 1 FROM citations c WHERE c.memory_id = j.value ->> 0 AND c.message_rowid = m.rowid)",
                &[chunk],
            )?;
        }
        Ok(())
    }

    /// Keeps, for each remaining message that gave one of these memories
    /// or said it again, the memory's fingerprint (no text): called after
    /// a deletion by id removed the messages it deletes and before it
    /// removes these memories, so that a retry of such a message's session
    /// does not store the deleted statement anew ([`Store::given_by`]).
    pub fn withhold(&self, memory_ids: &[String]) -> Result<()> {
        for chunk in json_chunks(memory_ids)? {
            self.sql.execute(
                "INSERT OR IGNORE INTO withheld (message_rowid, fingerprint) SELECT r.message_rowid, m.fingerprint \
                 FROM json_each(?1) j CROSS JOIN restatements r ON r.memory_id = j.value CROSS JOIN memories m ON m.id = j.value \
                 UNION SELECT c.message_rowid, m.fingerprint \
                 FROM json_each(?1) j CROSS JOIN citations c ON c.memory_id = j.value CROSS JOIN memories m ON m.id = j.value",
                &[chunk],
            )?;
        }
        Ok(())
    }

    /// Writes back what messages said of memories since deleted (an
    /// import's `withheld` records): pairs of (message id, fingerprint). An
    /// unstored message is left out.
    pub fn record_withheld(&self, pairs: &[(&str, &str)]) -> Result<()> {
        for chunk in json_chunks(pairs)? {
            self.sql.execute(
                "INSERT OR IGNORE INTO withheld (message_rowid, fingerprint) SELECT m.rowid, j.value ->> 1 \
                 FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value ->> 0",
                &[chunk],
            )?;
        }
        Ok(())
    }

    /// A page of withheld fingerprints in (message rowid, fingerprint)
    /// order, after `after`: each one's message rowid and id, and the
    /// fingerprint.
    pub fn withheld_after(&self, after: Option<(i64, &str)>, limit: usize) -> Result<Vec<(i64, String, String)>> {
        let (rowid, fingerprint) = after.unwrap_or((-1, ""));
        let rows = self.sql.query(
            "SELECT w.message_rowid, g.id, w.fingerprint FROM withheld w CROSS JOIN messages g ON g.rowid = w.message_rowid \
             WHERE (w.message_rowid, w.fingerprint) > (?1, ?2) ORDER BY w.message_rowid, w.fingerprint LIMIT ?3",
            &[SqlValue::Integer(rowid), fingerprint.into(), SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX))],
        )?;
        rows.into_iter()
            .map(|row| {
                let [rowid, message, fingerprint]: [SqlValue; 3] = row.try_into().map_err(|_| Error::storage("a withheld row that is not three columns"))?;
                let rowid = rowid.as_i64().ok_or_else(|| Error::storage("a withheld row's message rowid that is not a number"))?;
                Ok((rowid, text(message, "a withheld row's message id")?, text(fingerprint, "a withheld row's fingerprint")?))
            })
            .collect()
    }

    /// A page of restatements in (memory id, message rowid) order, after
    /// `after`: each one's memory id, its message's rowid and id.
    pub fn restatements_after(&self, after: Option<(&str, i64)>, limit: usize) -> Result<Vec<(String, i64, String)>> {
        // Before every row: a rowid is never negative, and a bound
        // integer beyond 2^53 would not cross to JavaScript exactly.
        let (memory, rowid) = after.unwrap_or(("", -1));
        let rows = self.sql.query(
            "SELECT r.memory_id, r.message_rowid, g.id FROM restatements r CROSS JOIN messages g ON g.rowid = r.message_rowid \
             WHERE (r.memory_id, r.message_rowid) > (?1, ?2) ORDER BY r.memory_id, r.message_rowid LIMIT ?3",
            &[memory.into(), SqlValue::Integer(rowid), SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX))],
        )?;
        rows.into_iter()
            .map(|row| {
                let [memory, rowid, message]: [SqlValue; 3] = row.try_into().map_err(|_| Error::storage("a restatement row that is not three columns"))?;
                let rowid = rowid.as_i64().ok_or_else(|| Error::storage("a restatement's message rowid that is not a number"))?;
                Ok((text(memory, "a restatement's memory id")?, rowid, text(message, "a restatement's message id")?))
            })
            .collect()
    }

    /// Moves each of the memories `ids` that a stored message said again to
    /// the first such message (the one said first): it becomes its source
    /// (its citations of the messages it cited go), its session is that
    /// message's, it is valid from when that was said (until no earlier
    /// than that), and an event date its words do not name is that day. The
    /// other messages that said it again stay restatements of it, so that a
    /// later deletion of the new source moves it on to the next, whatever
    /// the order sessions are deleted in. Called after the messages a
    /// deletion removes are gone, on the memories that would go with them;
    /// returns the ids moved, which stay.
    ///
    /// An active memory's vector is written again (its metadata names the
    /// session).
    pub fn rehome(&self, ids: &[String]) -> Result<Vec<String>> {
        // memory id, message id, session, when said (timestamp, else stored)
        type Said = (String, String, String, Option<String>, String);
        let mut moved: Vec<(String, Vec<Said>)> = Vec::new();
        for chunk in json_chunks(ids)? {
            let rows = self.sql.query(
                "SELECT r.memory_id, g.id, g.session_id, g.timestamp, g.created_at FROM json_each(?1) j \
                 CROSS JOIN restatements r ON r.memory_id = j.value CROSS JOIN messages g ON g.rowid = r.message_rowid \
                 ORDER BY r.memory_id, g.rowid",
                &[chunk],
            )?;
            for row in rows {
                let [memory, message, session, timestamp, stored]: [SqlValue; 5] =
                    row.try_into().map_err(|_| Error::storage("a restatement row that is not five columns"))?;
                let said: Said = (
                    text(memory, "a restatement's memory id")?,
                    text(message, "a restatement's message id")?,
                    text(session, "a restatement's session")?,
                    opt_text(timestamp, "a restatement's timestamp")?,
                    text(stored, "a restatement's stored time")?,
                );
                match moved.last_mut() {
                    Some((id, all)) if *id == said.0 => all.push(said),
                    _ => moved.push((said.0.clone(), vec![said])),
                }
            }
        }
        let mut vectors: Vec<&str> = Vec::new();
        for (id, said) in &moved {
            // The one said first (by its timestamp, else when stored; the
            // first stored of those said at one time).
            let when_said = |s: &&Said| crate::core::time::parse_millis(s.3.as_deref().unwrap_or(&s.4)).unwrap_or(i64::MAX);
            let (_, message, session, timestamp, stored) =
                said.iter().min_by_key(when_said).ok_or_else(|| Error::storage("a restated memory with no message"))?;
            let when = timestamp.as_deref().unwrap_or(stored);
            let when = crate::core::time::parse_millis(when).unwrap_or(self.now);
            // A memory whose words name no date took its event date from
            // when its message was said: now this one's.
            let memory = self.get_memory(id)?.ok_or_else(|| Error::storage("a restated memory that is not stored"))?;
            let said_day = crate::core::time::local_date_of(timestamp.as_deref().unwrap_or(stored));
            let event_date = match crate::core::dates::event_date(&memory.content, said_day) {
                Some(named) => Some(named),
                None => memory.event_date.and(said_day.map(|d| d.format("%Y-%m-%d").to_string())),
            };
            self.set_sources(id, std::slice::from_ref(message))?;
            let from = iso(when);
            self.sql.execute(
                "UPDATE memories SET session_id = ?1, valid_from = ?2, valid_to = CASE WHEN valid_to IS NULL THEN NULL ELSE MAX(valid_to, ?2) END, \
                 updated_at = ?3, event_date = ?4 WHERE id = ?5",
                &[session.as_str().into(), from.as_str().into(), iso(self.now).into(), event_date.map_or(SqlValue::Null, SqlValue::from), id.as_str().into()],
            )?;
            // The new source is no restatement; the others stay.
            self.sql.execute(
                "DELETE FROM restatements WHERE memory_id = ?1 AND message_rowid = (SELECT rowid FROM messages WHERE id = ?2)",
                &[id.as_str().into(), message.as_str().into()],
            )?;
            vectors.push(id);
        }
        let ids: Vec<String> = moved.iter().map(|(id, _)| id.clone()).collect();
        let wanting = self.wanting_vectors(&ids)?;
        vectors.retain(|id| wanting.contains(*id));
        self.enqueue_many(JobKind::Embed, &vectors)?;
        Ok(ids)
    }
}
