//! Memories: inserting them with their citations and jobs, reading,
//! listing and reading version chains, status changes (forget, expire; the
//! chains themselves are `versions.rs`), hard deletes and the inputs the
//! embedder reads.

use super::*;

/// Memories [`Store::newest_session`] reads at most.
pub const NEWEST_SESSION_SCAN: usize = 5000;

/// The active memories holding each key, by key and [`Owner`], newest
/// first: each one's id, session and words.
pub type KeyHolders = std::collections::HashMap<(String, crate::core::model::Owner), Vec<KeyHolder>>;

/// What [`Store::active_key_holders`] looks for: the holders of `key`
/// in any session (`any_session`), or else in session `session_id` and
/// those whose undated words have the digest `undated_digest`.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyProbe<'a> {
    pub key: &'a str,
    pub session_id: &'a str,
    pub undated_digest: String,
    pub any_session: bool,
}

/// An active memory holding a key.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyHolder {
    pub id: String,
    /// The session it was said in ("" for none).
    pub session_id: String,
    pub content: String,
}

/// [`Store::active_key_holders`]'s statement: `?1` is a JSON array of
/// probes `[key, session, undated digest, any session]`. Each of its four
/// parts reads one index of `memories` (schema version 14).
pub const KEY_HOLDERS_QUERY: &str = "WITH p AS MATERIALIZED (SELECT j.value ->> 0 AS key, j.value ->> 1 AS session_id, j.value ->> 2 AS digest, j.value ->> 3 AS anywhere FROM json_each(?1) j), \
     h AS (\
       SELECT m.rowid AS r FROM p CROSS JOIN memories m ON m.key = p.key WHERE p.anywhere AND m.status = 'active' \
       UNION SELECT m.rowid FROM p CROSS JOIN memories m ON m.key = p.key AND m.session_id = p.session_id WHERE m.status = 'active' AND m.key IS NOT NULL \
       UNION SELECT m.rowid FROM p CROSS JOIN memories m ON m.key = p.key AND m.undated_digest = p.digest WHERE m.status = 'active' AND m.key IS NOT NULL \
       UNION SELECT m.rowid FROM p CROSS JOIN memories m ON m.key = p.key AND m.undated_digest IS NULL WHERE m.status = 'active' AND m.key IS NOT NULL) \
     SELECT m.key, m.id, m.session_id, m.content, m.agent_id, m.user_id, m.undated_digest IS NULL FROM h CROSS JOIN memories m ON m.rowid = h.r";

impl<'a> Store<'a> {
    /// The number of memories, when `adding` more might pass `limit`;
    /// `None` when they surely fit. Rowids are distinct positive integers,
    /// so the largest bounds the count (one index step); only a profile
    /// that may be near its limit is counted (a scan of every memory).
    pub fn memory_count_near(&self, limit: i64, adding: i64) -> Result<Option<i64>> {
        if self.count("SELECT COALESCE(MAX(rowid), 0) FROM memories")?.saturating_add(adding) <= limit {
            return Ok(None);
        }
        self.count("SELECT COUNT(*) FROM memories").map(Some)
    }

    /// Inserts memories (each ignored if its id exists) and their sources,
    /// and queues an embedding for each that should be vectorized: an
    /// existence check, then a statement per [`MAX_JSON_PARAM`] bytes of
    /// memories, then the sources and the jobs. Their full-text rows follow
    /// in a batch ([`TEXT_BATCH`]). Returns the rows written: rowid and
    /// id, in rowid order. Call inside a transaction.
    pub fn insert_memories(&self, items: &[(&Memory, &str)]) -> Result<Vec<(i64, String)>> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = items.iter().map(|(m, _)| m.id.as_str()).collect();
        let existing = self.existing_memory_ids(&ids)?;
        let mut seen = std::collections::HashSet::new();
        let fresh: Vec<&(&Memory, &str)> = items.iter().filter(|(m, _)| !existing.contains(&m.id) && seen.insert(m.id.as_str())).collect();
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        // The stored columns in MEMORY_COLUMNS order, then the fingerprint
        // and, for a keyed memory, the digest of its words undated.
        // Made a statement's worth at a time, as the statements run: a
        // call may write tens of thousands of memories.
        let rows = fresh.iter().map(|(m, fingerprint)| -> Result<serde_json::Value> {
            Ok(serde_json::json!([
                m.id,
                m.kind.as_str(),
                m.key,
                m.summary,
                m.content,
                m.session_id,
                json_text(&m.source_message_ids)?,
                json_text(&m.search_queries)?,
                m.status.as_str(),
                m.supersedes,
                m.superseded_by,
                m.event_date,
                m.created_at,
                m.updated_at,
                m.expires_at,
                if m.metadata.is_empty() { None } else { Some(json_text(&m.metadata)?) },
                m.valid_from,
                m.valid_to,
                fingerprint,
                m.key.as_ref().map(|_| crate::core::ids::undated_digest(&m.content)),
            ]))
        });
        let (table, columns) = json_table(20);
        let mut written = Vec::new();
        for chunk in json_chunks_of(rows) {
            written.extend(rowids_of(self.sql.query(
                &format!("{table} INSERT OR IGNORE INTO memories ({MEMORY_COLUMNS}, fingerprint, undated_digest) SELECT {columns} FROM r RETURNING rowid, id"),
                &[chunk?],
            )?)?);
        }
        written.sort_unstable();
        let sources: Vec<(&String, &String)> = fresh.iter().flat_map(|(m, _)| m.source_message_ids.iter().map(move |mid| (&m.id, mid))).collect();
        for chunk in json_chunks(&sources)? {
            self.cite(chunk)?;
        }
        let embed: Vec<&str> = fresh.iter().filter(|(m, _)| m.status == Status::Active && m.kind != MemoryType::Task).map(|(m, _)| m.id.as_str()).collect();
        self.enqueue_many(JobKind::Embed, &embed)?;
        self.queue_text_index(FullText::Memories, fresh.iter().map(|(m, _)| m.content.len()).sum())?;
        Ok(written)
    }

    /// Records citations: `pairs` is a JSON array of `[memory id, message
    /// id]`; a stored message's go to `citations` (by its rowid), the
    /// others wait in `citations_waiting` for it.
    pub(super) fn cite(&self, pairs: SqlValue) -> Result<()> {
        self.sql.execute(
            "INSERT OR IGNORE INTO citations (memory_id, message_rowid) SELECT j.value ->> 0, m.rowid \
             FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value ->> 1",
            std::slice::from_ref(&pairs),
        )?;
        self.sql.execute(
            "INSERT OR IGNORE INTO citations_waiting (message_id, memory_id) SELECT j.value ->> 1, j.value ->> 0 \
             FROM json_each(?1) j WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = j.value ->> 1)",
            &[pairs],
        )
    }

    /// The ids of the active memories whose fingerprint is one of
    /// `fingerprints`, by fingerprint (when several, one that never
    /// expires before one that does, then the newest), through the
    /// fingerprint index (schema version 9).
    pub fn active_by_fingerprints(&self, fingerprints: &[&str]) -> Result<std::collections::HashMap<String, String>> {
        let mut out = std::collections::HashMap::new();
        let mut fingerprints = fingerprints.to_vec();
        fingerprints.sort_unstable();
        fingerprints.dedup();
        if fingerprints.is_empty() {
            return Ok(out);
        }
        // In statements of one bound value each (an import's may be many):
        // a fingerprint is in one of them only.
        for chunk in json_chunks(&fingerprints)? {
            for r in self.sql.query(
                // The last row of a fingerprint is kept: a holder that
                // never expires before one that does, then by id.
                "SELECT m.fingerprint, m.id FROM json_each(?1) j CROSS JOIN memories m \
                 ON m.fingerprint = j.value WHERE m.status = 'active' ORDER BY m.expires_at IS NULL, m.id",
                &[chunk],
            )? {
                let (f, id) = two_texts(&r, "a memory's fingerprint")?;
                out.insert(f, id);
            }
        }
        Ok(out)
    }

    /// The session of the newest active memory that has one, among the
    /// newest [`NEWEST_SESSION_SCAN`] memories (a bounded read).
    pub fn newest_session(&self) -> Result<Option<String>> {
        let rows = self.sql.query(
            &format!(
                "SELECT session_id FROM (SELECT session_id, status FROM memories ORDER BY id DESC LIMIT {NEWEST_SESSION_SCAN}) \
                 WHERE status = 'active' AND session_id <> '' LIMIT 1"
            ),
            &[],
        )?;
        match rows.first().map(Vec::as_slice) {
            None => Ok(None),
            Some([SqlValue::Text(s)]) => Ok(Some(s.clone())),
            Some(_) => Err(Error::storage("a memory's session id is not text")),
        }
    }

    /// Which of `ids` a stored memory holds, whatever its status.
    pub fn memory_ids_among(&self, ids: &[String]) -> Result<std::collections::HashSet<String>> {
        let mut out = std::collections::HashSet::new();
        for chunk in json_chunks(ids)? {
            for r in self.sql.query("SELECT m.id FROM json_each(?1) j CROSS JOIN memories m ON m.id = j.value", &[chunk])? {
                out.insert(id_of_row(&r)?);
            }
        }
        Ok(out)
    }

    /// The active memories holding each probe's key that it may reach,
    /// by key and [`Owner`](crate::core::model::Owner), newest first: for
    /// a probe reaching any session every holder; otherwise those said in
    /// its session and those whose words, dates aside, have its digest
    /// ([`crate::core::ids::undated_digest`]). Each is found by an index,
    /// so a key that hundreds of other sessions hold costs no more to ask
    /// about than one. The caller checks the words themselves.
    ///
    /// Holders stored before the digest existed (schema version 14) are
    /// read whatever their words, and get their digest written here, so
    /// each is read in full once. Call inside a transaction.
    pub fn active_key_holders(&self, probes: &[KeyProbe<'_>]) -> Result<KeyHolders> {
        let mut out = KeyHolders::default();
        if probes.is_empty() {
            return Ok(out);
        }
        let rows: Vec<serde_json::Value> = probes.iter().map(|p| serde_json::json!([p.key, p.session_id, p.undated_digest, p.any_session])).collect();
        let text = |v: &SqlValue| match v {
            SqlValue::Null => Ok(None),
            SqlValue::Text(t) => Ok(Some(t.clone())),
            _ => Err(Error::storage("a memory's agentId or userId is not text")),
        };
        let mut undigested = Vec::new();
        for chunk in json_chunks(&rows)? {
            for r in self.sql.query(KEY_HOLDERS_QUERY, &[chunk])? {
                let (k, holder, owner, missing) = match r.as_slice() {
                    [SqlValue::Text(k), SqlValue::Text(id), SqlValue::Text(session), SqlValue::Text(content), agent, user, SqlValue::Integer(missing)] => (
                        k.clone(),
                        KeyHolder { id: id.clone(), session_id: session.clone(), content: content.clone() },
                        crate::core::model::Owner { agent_id: text(agent)?, user_id: text(user)? },
                        *missing != 0,
                    ),
                    _ => return Err(Error::storage("failed to read a memory's key, id, session, content and owner")),
                };
                if missing {
                    undigested.push(serde_json::json!([holder.id, crate::core::ids::undated_digest(&holder.content)]));
                }
                out.entry((k, owner)).or_default().push(holder);
            }
        }
        // Newest first, each once (a holder two chunks' probes find).
        for held in out.values_mut() {
            held.sort_unstable_by(|a, b| b.id.cmp(&a.id));
            held.dedup_by(|a, b| a.id == b.id);
        }
        for chunk in json_chunks(&undigested)? {
            self.sql.execute("UPDATE memories SET undated_digest = j.value ->> 1 FROM json_each(?1) j WHERE memories.id = j.value ->> 0", &[chunk])?;
        }
        Ok(out)
    }

    /// Sets an active memory's expiry (none: it never expires).
    pub fn set_expiry(&self, id: &str, expires_at: Option<&str>) -> Result<()> {
        self.sql.execute(
            "UPDATE memories SET expires_at = ?1, updated_at = ?2 WHERE id = ?3 AND status = 'active'",
            &[expires_at.map_or(SqlValue::Null, SqlValue::from), iso(self.now).into(), id.into()],
        )
    }

    /// Which of `ids` are stored memories (in any state).
    pub fn existing_memory_ids<T: serde::Serialize>(&self, ids: &[T]) -> Result<std::collections::HashSet<String>> {
        let mut found = std::collections::HashSet::new();
        // In chunks: an import's ids alone can be over one value's 2 MB.
        for chunk in json_chunks(ids)? {
            for r in self.sql.query("SELECT m.id FROM json_each(?1) j CROSS JOIN memories m ON m.id = j.value", &[chunk])? {
                found.insert(id_of_row(&r)?);
            }
        }
        Ok(found)
    }

    pub fn get_memory(&self, id: &str) -> Result<Option<Memory>> {
        Ok(self.memories_where("id = ?", &[id.into()])?.into_iter().next())
    }

    pub fn memories_by_ids(&self, ids: &[String]) -> Result<Vec<Memory>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_SQL_PARAMS) {
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            out.extend(self.memories_where(&format!("id IN ({})", placeholders(chunk.len())), &params)?);
        }
        Ok(out)
    }

    /// Which of `ids` belong in the vector index now (active, not tasks:
    /// see `core::background::wants_vector`), reading nothing else.
    pub fn wanting_vectors(&self, ids: &[String]) -> Result<std::collections::HashSet<String>> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        json_rows::<(String, Option<String>)>(
            self.sql,
            &format!(
                "SELECT json_group_array(json_array(m.id, m.expires_at)) FROM json_each(?1) j CROSS JOIN memories m \
                 ON m.id = j.value WHERE {WANTS_VECTOR}"
            ),
            &[json_param(ids)?],
        )?
        .into_iter()
        .filter_map(|(id, at)| match expired(at.as_deref(), self.now) {
            Ok(true) => None,
            Ok(false) => Some(Ok(id)),
            Err(e) => Some(Err(e)),
        })
        .collect()
    }

    /// What the embedder needs of those of `ids` that belong in the vector
    /// index now ([`Store::wanting_vectors`]): `(id, search queries,
    /// content)`, in one statement reading only those columns.
    /// The bytes of text each of `ids` would send to the embedder (its
    /// content and search queries), read without the text itself.
    pub fn embedding_sizes(&self, ids: &[String]) -> Result<std::collections::HashMap<String, usize>> {
        if ids.is_empty() {
            return Ok(std::collections::HashMap::new());
        }
        Ok(json_rows::<(String, usize)>(
            self.sql,
            "SELECT json_group_array(json_array(m.id, length(CAST(m.content AS BLOB)) + length(CAST(m.search_queries AS BLOB)))) \
             FROM json_each(?1) j CROSS JOIN memories m ON m.id = j.value",
            &[json_param(ids)?],
        )?
        .into_iter()
        .collect())
    }

    /// What the vectors of `ids` are indexed with to be filtered by
    /// ([`crate::core::ports::VectorMeta`]): type, session and the scope
    /// keys present.
    pub fn vector_meta(&self, ids: &[String]) -> Result<std::collections::HashMap<String, crate::core::ports::VectorMeta>> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        // id, type, session, agentId, userId
        type MetaRow = (String, String, String, Option<String>, Option<String>);
        let rows: Vec<MetaRow> = json_rows(
            self.sql,
            "SELECT json_group_array(json_array(m.id, m.type, m.session_id, m.agent_id, m.user_id)) \
             FROM json_each(?1) j CROSS JOIN memories m ON m.id = j.value",
            &[json_param(ids)?],
        )?;
        Ok(rows
            .into_iter()
            .map(|(id, kind, session, agent, user)| {
                let mut m = crate::core::ports::VectorMeta::new();
                m.insert("type".into(), kind.into());
                m.insert("sessionId".into(), session.into());
                if let Some(a) = agent {
                    m.insert("agentId".into(), a.into());
                }
                if let Some(u) = user {
                    m.insert("userId".into(), u.into());
                }
                (id, m)
            })
            .collect())
    }

    pub fn embedding_inputs(&self, ids: &[String]) -> Result<Vec<(String, Vec<String>, String)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut seen = std::collections::HashSet::new();
        let ids: Vec<&String> = ids.iter().filter(|id| seen.insert(*id)).collect();
        json_rows::<(String, Option<String>, Option<String>, String)>(
            self.sql,
            &format!(
                "SELECT json_group_array(json_array(m.id, m.expires_at, m.search_queries, m.content)) \
                 FROM json_each(?1) j CROSS JOIN memories m ON m.id = j.value WHERE {WANTS_VECTOR}"
            ),
            &[json_param(&ids)?],
        )?
        .into_iter()
        // Search queries read as a memory's are ([`memory_from_row`]).
        .filter_map(|(id, at, queries, content)| match expired(at.as_deref(), self.now) {
            Ok(true) => None,
            Ok(false) => Some(json_ids(queries.as_deref(), "search queries").map(|q| (id, q, content))),
            Err(e) => Some(Err(e)),
        })
        .collect()
    }

    /// Writes every waiting full-text row of both tables now, and removes
    /// the index-text jobs that would have. Returns how many rowids
    /// it covered.
    pub fn write_waiting_text(&self) -> Result<usize> {
        let mut n = 0;
        for which in FullText::BOTH {
            n = which.catch_up(self.sql)?.saturating_add(n);
        }
        self.sql.execute("DELETE FROM outbox WHERE kind = ?1", &[JobKind::IndexText.as_str().into()])?;
        Ok(n)
    }

    pub(super) fn memories_where(&self, clause: &str, params: &[SqlValue]) -> Result<Vec<Memory>> {
        let rows = self.sql.query(&format!("SELECT {MEMORY_COLUMNS} FROM memories m WHERE {clause}"), params)?;
        rows.into_iter().map(|r| memory_from_row(r, self.now)).collect()
    }

    /// Marks a memory forgotten. Returns the updated memory.
    pub fn forget(&self, id: &str) -> Result<Memory> {
        let m = self.get_memory(id)?.ok_or_else(|| Error::not_found(format!("no memory with id {id}")))?;
        if m.status != Status::Forgotten {
            self.sql.execute("UPDATE memories SET status = 'forgotten', updated_at = ? WHERE id = ?", &[iso(self.now).into(), id.into()])?;
            self.enqueue(&Work::Unvector { memory_id: id.to_string() })?;
        }
        self.get_memory(id)?.ok_or_else(|| Error::not_found(format!("no memory with id {id}")))
    }

    /// Hard-deletes memories and every trace of them the store holds: rows,
    /// sources, FTS rows and pending jobs. Their vectors are the vector
    /// index's: an `unvector` job is queued in the same transaction (the
    /// operation also asks the index right away; the job retries it).
    pub fn delete_memories(&self, ids: &[String]) -> Result<()> {
        for chunk in ids.chunks(MAX_SQL_PARAMS) {
            let ph = placeholders(chunk.len());
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            self.sql.execute(&format!("DELETE FROM memories_fts WHERE rowid IN (SELECT rowid FROM memories WHERE id IN ({ph}))"), &params)?;
            self.sql.execute(&format!("DELETE FROM memories WHERE id IN ({ph})"), &params)?;
            self.sql.execute(&format!("DELETE FROM citations WHERE memory_id IN ({ph})"), &params)?;
            self.sql.execute(&format!("DELETE FROM citations_waiting WHERE memory_id IN ({ph})"), &params)?;
            self.sql.execute(&format!("DELETE FROM outbox WHERE memory_id IN ({ph})"), &params)?;
            // Pointers from other versions to a deleted memory go too.
            self.sql.execute(&format!("UPDATE memories SET supersedes = NULL WHERE supersedes IN ({ph})"), &params)?;
            self.sql.execute(&format!("UPDATE memories SET superseded_by = NULL WHERE superseded_by IN ({ph})"), &params)?;
        }
        for id in ids {
            self.enqueue(&Work::Unvector { memory_id: id.to_string() })?;
        }
        Ok(())
    }

    /// Queues the background job that writes `which`'s waiting full-text
    /// rows once a batch ([`TEXT_BATCH`]) waits, or after a write of
    /// [`TEXT_BATCH_BYTES`] of text (`bytes`), unless one is queued.
    pub(super) fn queue_text_index(&self, which: FullText, bytes: usize) -> Result<()> {
        if bytes < TEXT_BATCH_BYTES && which.waiting(self.sql)?.1 < TEXT_BATCH {
            return Ok(());
        }
        self.sql.execute(
            "INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) SELECT ?1, ?2, 0, ?3, ?4 \
             WHERE NOT EXISTS (SELECT 1 FROM outbox WHERE kind = ?1 AND memory_id = ?2)",
            &[JobKind::IndexText.as_str().into(), which.table().into(), SqlValue::Integer(self.now), iso(self.now).into()],
        )
    }

    /// Rewrites both full-text indexes without the rows deleted from them.
    /// FTS5 deletes only mark entries; the deleted terms stay readable in
    /// the index segments (`*_fts_data`) until a merge, so a hard delete
    /// that must reach every copy ends with this ('optimize' merges all
    /// segments into one). Its cost grows with the index; deletes are rare.
    pub fn purge_deleted_text(&self) -> Result<()> {
        self.sql.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')", &[])?;
        self.sql.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')", &[])
    }

    /// Hard-deletes messages and their FTS rows.
    pub fn delete_messages(&self, ids: &[String]) -> Result<()> {
        for chunk in ids.chunks(MAX_SQL_PARAMS) {
            let ph = placeholders(chunk.len());
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            self.sql.execute(&format!("DELETE FROM messages_fts WHERE rowid IN (SELECT rowid FROM messages WHERE id IN ({ph}))"), &params)?;
            self.sql.execute(&format!("DELETE FROM messages WHERE id IN ({ph})"), &params)?;
        }
        Ok(())
    }

    /// Ids of memories citing any of these messages.
    pub fn memories_citing(&self, message_ids: &[String]) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for chunk in message_ids.chunks(MAX_SQL_PARAMS) {
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            let rows = self.sql.query(
                &format!(
                    "SELECT c.memory_id FROM messages m CROSS JOIN citations c ON c.message_rowid = m.rowid WHERE m.id IN ({ph}) \
                     UNION SELECT memory_id FROM citations_waiting WHERE message_id IN ({ph})",
                    ph = numbered_placeholders(chunk.len())
                ),
                &params,
            )?;
            for r in &rows {
                out.push(id_of_row(r)?);
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Which of these messages gave something: some memory cites it, or
    /// it said again what a stored memory says (a restatement), or what a
    /// memory since deleted said ([`Store::withhold`]).
    pub fn cited_messages(&self, message_ids: &[String]) -> Result<std::collections::HashSet<String>> {
        let mut out = std::collections::HashSet::new();
        for chunk in message_ids.chunks(MAX_SQL_PARAMS) {
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            let rows = self.sql.query(
                &format!(
                    "SELECT m.id FROM messages m WHERE m.id IN ({ph}) \
                     AND (EXISTS (SELECT 1 FROM citations c WHERE c.message_rowid = m.rowid) \
                          OR EXISTS (SELECT 1 FROM restatements r WHERE r.message_rowid = m.rowid) \
                          OR EXISTS (SELECT 1 FROM withheld w WHERE w.message_rowid = m.rowid)) \
                     UNION SELECT message_id FROM citations_waiting WHERE message_id IN ({ph})",
                    ph = numbered_placeholders(chunk.len())
                ),
                &params,
            )?;
            for r in &rows {
                out.insert(id_of_row(r)?);
            }
        }
        Ok(out)
    }

    /// Drops the outbox jobs whose subject is a session (re-extraction):
    /// once the session is deleted there is nothing left for them to do.
    pub fn delete_session_jobs(&self, session_id: &str) -> Result<()> {
        self.sql.execute("DELETE FROM outbox WHERE kind = ? AND memory_id = ?", &[JobKind::Extract.as_str().into(), session_id.into()])
    }

    /// Memory ids of a session.
    pub fn session_memory_ids(&self, session_id: &str) -> Result<Vec<String>> {
        self.sql.query("SELECT id FROM memories WHERE session_id = ?", &[session_id.into()])?.iter().map(|r| id_of_row(r)).collect()
    }

    /// A page of memories, newest first.
    pub fn list(&self, f: &ListFilter) -> Result<ListPage> {
        let mut clauses = Vec::new();
        let mut params = Vec::new();
        if let Some(c) = &f.cursor {
            clauses.push("id < ?");
            params.push(SqlValue::from(c));
        }
        if let Some(s) = &f.session_id {
            clauses.push("session_id = ?");
            params.push(s.into());
        }
        if let Some(t) = f.kind {
            clauses.push("type = ?");
            params.push(t.as_str().into());
        }
        if let Some(k) = &f.key {
            clauses.push("key = ?");
            params.push(k.into());
        }
        let now = iso(self.now);
        match f.status {
            Some(Status::Expired) => {
                clauses.push("(status = 'expired' OR (status = 'active' AND expires_at IS NOT NULL AND expires_at <= ?))");
                params.push(now.into());
            }
            Some(Status::Active) => {
                clauses.push("status = 'active' AND (expires_at IS NULL OR expires_at > ?)");
                params.push(now.into());
            }
            Some(s) => {
                clauses.push("status = ?");
                params.push(s.as_str().into());
            }
            None => {}
        }
        let mut sql = "1 = 1".to_string();
        for c in clauses {
            sql.push_str(" AND ");
            sql.push_str(c);
        }
        // Numbered after every plain `?` above (which number themselves).
        if let Some(t) = &f.as_of {
            params.push(t.into());
            sql.push_str(&format!(" AND {}", crate::core::filter::valid_at(params.len())));
        }
        if let Some(filter) = &f.filter {
            params.push(SqlValue::Text(filter.param()));
            sql.push_str(&format!(" AND {}", filter.sql(params.len())));
        }
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", f.limit.saturating_add(1)));
        let (memories, more) = self.bounded_page(&sql, &params, f.limit)?;
        let cursor = if more { memories.last().map(|m| m.id.clone()) } else { None };
        Ok(ListPage { memories, cursor })
    }

    /// The memories `clause` (with its order, and a limit past `limit`)
    /// selects, in its order: at most `limit`, and at most
    /// [`PAGE_TEXT_BYTES`] of their texts (one always); and whether any
    /// selected was left for the next page.
    fn bounded_page(&self, clause: &str, params: &[SqlValue], limit: usize) -> Result<(Vec<Memory>, bool)> {
        let sized = self.sized_ids(clause, params)?;
        let kept = within_page(&sized, limit, PAGE_TEXT_BYTES);
        let more = kept < sized.len();
        let ids: Vec<String> = sized.into_iter().take(kept).map(|(id, _)| id).collect();
        Ok((self.memories_in_order(&ids)?, more))
    }

    /// The ids `clause` (with its order and limit) selects, in its order,
    /// each with the bytes of its memory's texts ([`PAGE_TEXT_BYTES`]).
    fn sized_ids(&self, clause: &str, params: &[SqlValue]) -> Result<Vec<(String, usize)>> {
        let rows = self.sql.query(
            &format!(
                "SELECT m.id, length(CAST(m.content AS BLOB)) + length(CAST(m.summary AS BLOB)) + length(CAST(m.source_message_ids AS BLOB)) \
                 + ifnull(length(CAST(m.search_queries AS BLOB)), 0) + ifnull(length(CAST(m.metadata AS BLOB)), 0) FROM memories m WHERE {clause}"
            ),
            params,
        )?;
        rows.into_iter()
            .map(|r| match r.as_slice() {
                [SqlValue::Text(id), SqlValue::Integer(bytes)] => Ok((id.clone(), usize::try_from(*bytes).unwrap_or(usize::MAX))),
                _ => Err(Error::storage("failed to read a memory's id and size")),
            })
            .collect()
    }

    /// The memories `ids`, in that order.
    fn memories_in_order(&self, ids: &[String]) -> Result<Vec<Memory>> {
        let mut by_id: std::collections::HashMap<String, Memory> = self.memories_by_ids(ids)?.into_iter().map(|m| (m.id.clone(), m)).collect();
        ids.iter().map(|id| by_id.remove(id).ok_or_else(|| Error::storage(format!("memory {id} went while its page was read")))).collect()
    }

    /// Every memory, oldest first (export).
    /// Up to `limit` memories with ids after `after`, in id order: every
    /// memory a page at a time (export).
    /// A page holds at most [`PAGE_TEXT_BYTES`] of their texts (one
    /// memory always).
    pub fn memories_after(&self, after: Option<&str>, limit: usize) -> Result<Vec<Memory>> {
        let n = i64::try_from(limit).unwrap_or(i64::MAX);
        let (page, _) = match after {
            None => self.bounded_page("1 = 1 ORDER BY id LIMIT ?", &[n.into()], limit)?,
            Some(id) => self.bounded_page("m.id > ? ORDER BY id LIMIT ?", &[id.into(), n.into()], limit)?,
        };
        Ok(page)
    }

    /// The id of every memory, in id order (no content read).
    pub fn all_memory_ids(&self) -> Result<Vec<String>> {
        self.sql
            .query("SELECT id FROM memories ORDER BY id", &[])?
            .into_iter()
            .map(|r| r.first().and_then(|v| v.opt_string()).ok_or_else(|| Error::storage("a memory row has no id")))
            .collect()
    }

    /// The version chain through `m`, oldest first, and whether some of it
    /// was left out: the versions nearest `m` (one older, one newer, in
    /// turn) up to [`MAX_VERSIONS`] beside it and [`PAGE_TEXT_BYTES`] of
    /// their texts. A chain of hundreds of 32 KB versions is tens of
    /// megabytes, held several times over in the Wasm memory the isolate's
    /// profiles share. `get` of the farthest version given reads on from
    /// there.
    pub fn version_chain(&self, m: &Memory) -> Result<(Vec<Memory>, bool)> {
        let mut seen = std::collections::HashSet::from([m.id.clone()]);
        let (mut versions, mut bytes) = (MAX_VERSIONS, PAGE_TEXT_BYTES);
        let mut cut = false;
        // Each side: the next id to read, and the ids read, nearest first.
        let mut older: (Option<String>, Vec<String>) = (m.supersedes.clone(), Vec::new());
        let mut newer: (Option<String>, Vec<String>) = (m.superseded_by.clone(), Vec::new());
        while older.0.is_some() || newer.0.is_some() {
            for (side, next) in [(&mut older, (|l: &Link| l.before.clone()) as fn(&Link) -> Option<String>), (&mut newer, |l: &Link| l.after.clone())] {
                let Some(id) = side.0.take() else { continue };
                // A loop, or a link to a memory not stored, ends the side.
                if !seen.insert(id.clone()) {
                    continue;
                }
                let Some(link) = self.version_link(&id)? else { continue };
                if versions == 0 || link.bytes > bytes {
                    cut = true;
                    continue;
                }
                versions = versions.saturating_sub(1);
                bytes = bytes.saturating_sub(link.bytes);
                side.0 = next(&link);
                side.1.push(id);
            }
        }
        older.1.reverse();
        let mut chain = self.memories_in_order(&older.1)?;
        chain.push(m.clone());
        chain.extend(self.memories_in_order(&newer.1)?);
        Ok((chain, cut))
    }

    /// A version's links and the bytes of its texts, without them.
    fn version_link(&self, id: &str) -> Result<Option<Link>> {
        let rows = self.sql.query(
            "SELECT m.supersedes, m.superseded_by, length(CAST(m.content AS BLOB)) + length(CAST(m.summary AS BLOB)) + length(CAST(m.source_message_ids AS BLOB)) \
             + ifnull(length(CAST(m.search_queries AS BLOB)), 0) + ifnull(length(CAST(m.metadata AS BLOB)), 0) FROM memories m WHERE m.id = ?",
            &[id.into()],
        )?;
        let Some(row) = rows.into_iter().next() else { return Ok(None) };
        let [before, after, bytes]: [SqlValue; 3] = row.try_into().map_err(|_| Error::storage("a version row that is not three columns"))?;
        let bytes = bytes.as_i64().and_then(|b| usize::try_from(b).ok()).ok_or_else(|| Error::storage("a version's size that is not a number"))?;
        Ok(Some(Link { before: opt_text(before, "a version's supersedes")?, after: opt_text(after, "a version's supersededBy")?, bytes }))
    }

    /// Marks active memories whose `expiresAt` has passed as expired and
    /// queues removal of their vectors. Returns how many.
    ///
    /// In three statements, whatever the number: a bulk import with one
    /// shared `expiresAt` expires all of it at once, and read id by id
    /// that took every id into memory and two statements each.
    pub fn expire_due(&self) -> Result<usize> {
        const DUE: &str = "FROM memories WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= ?1";
        let now = iso(self.now);
        let due = self.count_params(&format!("SELECT COUNT(*) {DUE}"), &[now.clone().into()])?;
        if due == 0 {
            return Ok(0);
        }
        self.sql.execute(
            &format!("INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) SELECT ?2, id, 0, ?3, ?1 {DUE}"),
            &[now.clone().into(), JobKind::Unvector.as_str().into(), SqlValue::Integer(self.now)],
        )?;
        self.sql.execute(&format!("UPDATE memories SET status = 'expired', updated_at = ?1 WHERE id IN (SELECT id {DUE})"), &[now.into()])?;
        Ok(usize::try_from(due).unwrap_or(0))
    }

    /// The earliest pending `expiresAt` of an active memory, in millis.
    pub fn next_expiry(&self) -> Result<Option<i64>> {
        let rows = self.sql.query("SELECT MIN(expires_at) FROM memories WHERE status = 'active' AND expires_at IS NOT NULL", &[])?;
        match rows.first().and_then(|r| r.first()) {
            None | Some(SqlValue::Null) => Ok(None),
            Some(v) => v
                .as_str()
                .and_then(crate::core::time::parse_millis)
                .map(Some)
                .ok_or_else(|| Error::storage(format!("a memory's expiry {v:?} does not read as a time"))),
        }
    }
}

/// Most bytes of memories' texts (content, summary, sources, search
/// queries, metadata) one page holds (a list page, an export's page, a
/// summary's section): a page of the published limit (1,000) of memories
/// at the 32 KB limit with their metadata is 36 MB, and a request holds
/// several copies of what it answers in the Wasm memory the isolate's
/// profiles share. A page cut short ends with a cursor, as one cut at its
/// limit; one memory is always on the page, however large.
pub const PAGE_TEXT_BYTES: usize = 1 << 20;

/// Most versions `get` gives beside the memory itself
/// ([`Store::version_chain`]).
pub const MAX_VERSIONS: usize = 100;

/// A version's links to the ones before and after it, and its texts' bytes.
struct Link {
    before: Option<String>,
    after: Option<String>,
    bytes: usize,
}

/// How many of `sized` (ids and their texts' bytes, in page order) a page
/// of at most `limit` memories and `budget` bytes holds: at least one
/// when there is one.
pub fn within_page(sized: &[(String, usize)], limit: usize, budget: usize) -> usize {
    let mut bytes = 0usize;
    let mut kept = 0usize;
    for (_, b) in sized.iter().take(limit) {
        if kept > 0 && bytes.saturating_add(*b) > budget {
            break;
        }
        bytes = bytes.saturating_add(*b);
        kept = kept.saturating_add(1);
    }
    kept
}
