//! Profile storage: every read and write of a profile's database, over the
//! [`Sql`] trait. Nothing here knows about HTTP, models or Cloudflare.
//!
//! The store keeps three invariants:
//! * a memory's FTS row (rowid = the memory's rowid) exists only while the
//!   memory row exists, and every memory up to the highest rowid in
//!   `memories_fts` has its row; likewise for messages. Rows above it are
//!   indexed in the background once [`TEXT_BATCH`] of them wait, and
//!   before any read of the full-text table ([`FullText::catch_up`]);
//! * a memory with status other than `active` has no vector, or has an
//!   `unvector` job pending in the outbox;
//! * multi-row writes stay under the platform's limits: lists travel as
//!   JSON parameters of at most [`MAX_JSON_PARAM`] bytes ([`json_chunks`]),
//!   placeholders stay under [`MAX_SQL_PARAMS`].

use crate::core::error::{Error, Result};
use crate::core::jobs::{Job, JobKind, Work};
use crate::core::model::{ListPage, Memory, MemoryType, Message, MessageInput, Stats, Status};
use crate::core::ports::{Row, Sql, SqlValue, MAX_SQL_PARAMS};
use crate::core::time::iso;

/// The memories (`m`) that belong in the vector index, but for expiry
/// (read as `expired` once past): `core::background::wants_vector` in SQL.
const WANTS_VECTOR: &str = "m.status = 'active' AND m.type <> 'task'";

/// Columns of `memories`, in the order [`memory_from_row`] reads them.
const MEMORY_COLUMNS: &str = "id, type, key, summary, content, session_id, source_message_ids, \
     search_queries, status, supersedes, superseded_by, event_date, created_at, updated_at, expires_at";

const MESSAGE_COLUMNS: &str = "id, session_id, role, content, timestamp, position, created_at";

/// The `meta` key holding the profile's `{namespace}/{profile}` name.
pub const META_NAME: &str = "name";
/// The `meta` key holding when the profile was marked for deletion.
pub const META_DELETED_AT: &str = "deleted_at";


/// A borrowed view of one profile's database at one instant.
pub struct Store<'a> {
    sql: &'a dyn Sql,
    now: i64,
}

/// Filters for [`Store::list`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListFilter {
    pub limit: usize,
    pub cursor: Option<String>,
    pub session_id: Option<String>,
    pub kind: Option<MemoryType>,
    pub status: Option<Status>,
    pub key: Option<String>,
    /// With `key`: the rowids of the memories that may hold it
    /// ([`crate::core::recall::directory::MemoryWords::rowids_with_key`]).
    pub key_rowids: Vec<i64>,
}

/// A message about to be stored, with its id computed.
#[derive(Clone, Debug, PartialEq)]
pub struct NewMessage {
    pub id: String,
    pub input: MessageInput,
}

/// An outbox row (`id, kind, memory_id, attempts`) as a job; a row that
/// does not read as one is a storage error, never a job of made-up values.
fn job_from_row(r: &[SqlValue]) -> Result<Job> {
    let bad = || Error::storage("an outbox row is not a job");
    match r {
        [id, kind, subject, attempts] => Job::from_columns(
            id.as_i64().ok_or_else(bad)?,
            kind.as_str().ok_or_else(bad)?,
            subject.opt_string().ok_or_else(bad)?,
            attempts.as_i64().ok_or_else(bad)?,
        ),
        _ => Err(bad()),
    }
}

/// Every job kind this version runs, as a JSON list parameter.
fn known_kinds() -> SqlValue {
    json_param(&JobKind::ALL.map(JobKind::as_str))
}

impl<'a> Store<'a> {
    pub fn new(sql: &'a dyn Sql, now_millis: i64) -> Store<'a> {
        Store { sql, now: now_millis }
    }

    pub fn sql(&self) -> &'a dyn Sql {
        self.sql
    }

    pub fn now(&self) -> i64 {
        self.now
    }

    /// Runs `f` in one transaction.
    pub fn transaction<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let mut f = Some(f);
        let mut out = None;
        self.sql.transaction(&mut || {
            let f = f.take().ok_or_else(|| Error::storage("a transaction body ran twice"))?;
            out = Some(f()?);
            Ok(())
        })?;
        out.ok_or_else(|| Error::storage("a transaction body did not run"))
    }

    // ---- messages -------------------------------------------------------

    /// Which of `ids` are already stored.
    pub fn existing_message_ids(&self, ids: &[String]) -> Result<std::collections::HashSet<String>> {
        let mut found = std::collections::HashSet::new();
        if ids.is_empty() {
            return Ok(found);
        }
        for row in self.sql.query("SELECT m.id FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value", &[json_param(ids)])? {
            found.insert(id_of_row(&row)?);
        }
        Ok(found)
    }

    /// Stores messages of one session with `INSERT OR IGNORE`; returns the
    /// ones that were new, each with its rowid, in rowid order. Positions
    /// continue the session's sequence.
    pub fn insert_messages(&self, session_id: &str, messages: &[NewMessage]) -> Result<Vec<(i64, Message)>> {
        let ids: Vec<String> = messages.iter().map(|m| m.id.clone()).collect();
        let existing = self.existing_message_ids(&ids)?;
        let base = self
            .sql
            .query(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE session_id = ?",
                &[session_id.into()],
            )?
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
            let position = i64::try_from(fresh.len())
                .ok()
                .and_then(|n| base.checked_add(n))
                .ok_or_else(|| Error::storage("a session's positions are out of range"))?;
            fresh.push(Message {
                id: m.id.clone(),
                session_id: session_id.to_string(),
                role: m.input.role.clone(),
                content: m.input.content.clone(),
                timestamp: m.input.timestamp.clone(),
                position,
                created_at: created_at.clone(),
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
        let rows: Vec<_> =
            messages.iter().map(|m| (&m.id, &m.session_id, &m.role, &m.content, &m.timestamp, m.position, &m.created_at)).collect();
        let (table, columns) = json_table(7);
        let mut written = Vec::new();
        for chunk in json_chunks(&rows) {
            written.extend(rowids_of(self.sql.query(
                &format!("{table} INSERT OR IGNORE INTO messages ({MESSAGE_COLUMNS}) SELECT {columns} FROM r RETURNING rowid, id"),
                &[chunk],
            )?));
        }
        written.sort_unstable();
        self.queue_text_index(FullText::Messages)?;
        Ok(written)
    }

    pub fn messages_by_ids(&self, ids: &[String]) -> Result<Vec<Message>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_SQL_PARAMS) {
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE id IN ({}) ORDER BY session_id, position",
                placeholders(chunk.len())
            );
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            for r in self.sql.query(&sql, &params)? {
                out.push(message_from_row(r)?);
            }
        }
        Ok(out)
    }

    /// Every message of a session, in order.
    pub fn session_messages(&self, session_id: &str) -> Result<Vec<Message>> {
        self.sql
            .query(
                &format!("SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ? ORDER BY position"),
                &[session_id.into()],
            )?
            .into_iter()
            .map(message_from_row)
            .collect()
    }

    /// Every message, by session then position (export).
    pub fn all_messages(&self) -> Result<Vec<Message>> {
        self.sql
            .query(&format!("SELECT {MESSAGE_COLUMNS} FROM messages ORDER BY session_id, position"), &[])?
            .into_iter()
            .map(message_from_row)
            .collect()
    }

    // ---- memories -------------------------------------------------------

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
        let existing: std::collections::HashSet<String> = self
            .sql
            .query("SELECT m.id FROM json_each(?1) j CROSS JOIN memories m ON m.id = j.value", &[json_param(&ids)])?
            .iter()
            .map(|r| id_of_row(r))
            .collect::<Result<_>>()?;
        let mut seen = std::collections::HashSet::new();
        let fresh: Vec<&(&Memory, &str)> =
            items.iter().filter(|(m, _)| !existing.contains(&m.id) && seen.insert(m.id.as_str())).collect();
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        // The stored columns in MEMORY_COLUMNS order, then the fingerprint.
        let rows: Vec<_> = fresh
            .iter()
            .map(|(m, fingerprint)| {
                (
                    &m.id,
                    m.kind.as_str(),
                    &m.key,
                    &m.summary,
                    &m.content,
                    &m.session_id,
                    serde_json::to_string(&m.source_message_ids).unwrap_or_default(),
                    serde_json::to_string(&m.search_queries).unwrap_or_default(),
                    m.status.as_str(),
                    &m.supersedes,
                    &m.superseded_by,
                    &m.event_date,
                    &m.created_at,
                    &m.updated_at,
                    &m.expires_at,
                    fingerprint,
                )
            })
            .collect();
        let (table, columns) = json_table(16);
        let mut written = Vec::new();
        for chunk in json_chunks(&rows) {
            written.extend(rowids_of(self.sql.query(
                &format!(
                    "{table} INSERT OR IGNORE INTO memories ({MEMORY_COLUMNS}, fingerprint) SELECT {columns} FROM r RETURNING rowid, id"
                ),
                &[chunk],
            )?));
        }
        written.sort_unstable();
        let sources: Vec<(&String, &String)> =
            fresh.iter().flat_map(|(m, _)| m.source_message_ids.iter().map(move |mid| (&m.id, mid))).collect();
        for chunk in json_chunks(&sources) {
            self.sql.execute(
                "INSERT OR IGNORE INTO citations (memory_id, message_rowid) SELECT j.value ->> 0, m.rowid \
                 FROM json_each(?1) j CROSS JOIN messages m ON m.id = j.value ->> 1",
                std::slice::from_ref(&chunk),
            )?;
            self.sql.execute(
                "INSERT OR IGNORE INTO citations_waiting (message_id, memory_id) SELECT j.value ->> 1, j.value ->> 0 \
                 FROM json_each(?1) j WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = j.value ->> 1)",
                &[chunk],
            )?;
        }
        let embed: Vec<&str> = fresh
            .iter()
            .filter(|(m, _)| m.status == Status::Active && m.kind != MemoryType::Task)
            .map(|(m, _)| m.id.as_str())
            .collect();
        self.enqueue_many(JobKind::Embed, &embed)?;
        self.queue_text_index(FullText::Memories)?;
        Ok(written)
    }

    /// The ids of the active memories among those at `rowids` whose
    /// fingerprint is one of `fingerprints`, by fingerprint (the newest
    /// when several). The turn directory names the rowids
    /// ([`crate::core::recall::directory::MemoryWords::rowids_with_fingerprints`]):
    /// the column has no index.
    pub fn active_by_fingerprints(
        &self,
        rowids: &[i64],
        fingerprints: &[&str],
    ) -> Result<std::collections::HashMap<String, String>> {
        if rowids.is_empty() {
            return Ok(Default::default());
        }
        let wanted: std::collections::HashSet<&str> = fingerprints.iter().copied().collect();
        let mut out = std::collections::HashMap::new();
        for r in self.sql.query(
            "SELECT m.fingerprint, m.id FROM json_each(?1) j CROSS JOIN memories m \
             ON m.rowid = j.value WHERE m.status = 'active' ORDER BY m.id",
            &[json_param(rowids)],
        )? {
            let (f, id) = two_texts(&r, "a memory's fingerprint")?;
            if wanted.contains(f.as_str()) {
                out.insert(f, id);
            }
        }
        Ok(out)
    }

    /// The ids of the active memories among those at `rowids` holding
    /// each of `keys`, newest first. The turn directory names the rowids
    /// ([`crate::core::recall::directory::MemoryWords::rowids_with_keys`]):
    /// the column has no index.
    pub fn active_ids_by_keys(&self, rowids: &[i64], keys: &[&str]) -> Result<std::collections::HashMap<String, Vec<String>>> {
        let mut out: std::collections::HashMap<String, Vec<String>> = Default::default();
        if rowids.is_empty() || keys.is_empty() {
            return Ok(out);
        }
        for r in self.sql.query(
            "SELECT m.key, m.id FROM json_each(?1) j CROSS JOIN memories m ON m.rowid = j.value \
             WHERE m.key IN (SELECT value FROM json_each(?2)) AND m.status = 'active' ORDER BY m.id DESC",
            &[json_param(rowids), json_param(keys)],
        )? {
            let (k, id) = two_texts(&r, "a memory's key")?;
            out.entry(k).or_default().push(id);
        }
        Ok(out)
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
        Ok(json_rows::<(String, Option<String>)>(
            self.sql,
            &format!(
                "SELECT json_group_array(json_array(m.id, m.expires_at)) FROM json_each(?1) j CROSS JOIN memories m \
                 ON m.id = j.value WHERE {WANTS_VECTOR}"
            ),
            &[json_param(ids)],
        )?
        .into_iter()
        .filter(|(_, at)| !expired(at.as_deref(), self.now))
        .map(|(id, _)| id)
        .collect())
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
            &[json_param(ids)],
        )?
        .into_iter()
        .collect())
    }

    pub fn embedding_inputs(&self, ids: &[String]) -> Result<Vec<(String, Vec<String>, String)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut seen = std::collections::HashSet::new();
        let ids: Vec<&String> = ids.iter().filter(|id| seen.insert(*id)).collect();
        Ok(json_rows::<(String, Option<String>, String, String)>(
            self.sql,
            &format!(
                "SELECT json_group_array(json_array(m.id, m.expires_at, m.search_queries, m.content)) \
                 FROM json_each(?1) j CROSS JOIN memories m ON m.id = j.value WHERE {WANTS_VECTOR}"
            ),
            &[json_param(&ids)],
        )?
        .into_iter()
        .filter(|(_, at, _, _)| !expired(at.as_deref(), self.now))
        // Search queries read as a memory's are ([`memory_from_row`]).
        .map(|(id, _, queries, content)| (id, json_list(&SqlValue::Text(queries)), content))
        .collect())
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

    fn memories_where(&self, clause: &str, params: &[SqlValue]) -> Result<Vec<Memory>> {
        let rows = self.sql.query(&format!("SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause}"), params)?;
        rows.into_iter().map(|r| memory_from_row(r, self.now)).collect()
    }

    /// Marks `old` superseded by `new` (both ids), queueing removal of the
    /// old vector.
    pub fn supersede(&self, old: &str, new: &str) -> Result<()> {
        self.sql.execute(
            "UPDATE memories SET status = 'superseded', superseded_by = ?, updated_at = ? WHERE id = ?",
            &[new.into(), iso(self.now).into(), old.into()],
        )?;
        self.enqueue(&Work::Unvector { memory_id: old.to_string() })
    }

    /// Marks a memory forgotten. Returns the updated memory.
    pub fn forget(&self, id: &str) -> Result<Memory> {
        let m = self.get_memory(id)?.ok_or_else(|| Error::not_found(format!("no memory with id {id}")))?;
        if m.status != Status::Forgotten {
            self.sql.execute(
                "UPDATE memories SET status = 'forgotten', updated_at = ? WHERE id = ?",
                &[iso(self.now).into(), id.into()],
            )?;
            self.enqueue(&Work::Unvector { memory_id: id.to_string() })?;
        }
        self.get_memory(id)?.ok_or_else(|| Error::not_found(format!("no memory with id {id}")))
    }

    /// Hard-deletes memories and every trace of them: rows, sources, FTS
    /// rows, local vectors and pending jobs. A Vectorize delete is queued.
    pub fn delete_memories(&self, ids: &[String]) -> Result<()> {
        for chunk in ids.chunks(MAX_SQL_PARAMS) {
            let ph = placeholders(chunk.len());
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            self.sql.execute(
                &format!("DELETE FROM memories_fts WHERE rowid IN (SELECT rowid FROM memories WHERE id IN ({ph}))"),
                &params,
            )?;
            self.sql.execute(&format!("DELETE FROM memories WHERE id IN ({ph})"), &params)?;
            self.sql.execute(&format!("DELETE FROM citations WHERE memory_id IN ({ph})"), &params)?;
            self.sql.execute(&format!("DELETE FROM citations_waiting WHERE memory_id IN ({ph})"), &params)?;
            self.sql.execute(&format!("DELETE FROM outbox WHERE memory_id IN ({ph})"), &params)?;
            // The local index lives here: its rows go in this transaction,
            // and its snapshot (which may hold their codes) with them.
            self.sql.execute(&format!("DELETE FROM vectors WHERE memory_id IN ({ph})"), &params)?;
            self.sql.execute("DELETE FROM vector_snapshot", &[])?;
            // Pointers from other versions to a deleted memory go too.
            self.sql.execute(&format!("UPDATE memories SET supersedes = NULL WHERE supersedes IN ({ph})"), &params)?;
            self.sql.execute(
                &format!("UPDATE memories SET superseded_by = NULL WHERE superseded_by IN ({ph})"),
                &params,
            )?;
        }
        for id in ids {
            self.enqueue(&Work::Unvector { memory_id: id.to_string() })?;
        }
        Ok(())
    }

    /// Queues the background job that writes `which`'s waiting full-text
    /// rows once a batch ([`TEXT_BATCH`]) waits, unless one is queued.
    fn queue_text_index(&self, which: FullText) -> Result<()> {
        if which.waiting(self.sql)?.1 < TEXT_BATCH {
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
            self.sql.execute(
                &format!("DELETE FROM messages_fts WHERE rowid IN (SELECT rowid FROM messages WHERE id IN ({ph}))"),
                &params,
            )?;
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

    /// Which of these messages some memory cites.
    pub fn cited_messages(&self, message_ids: &[String]) -> Result<std::collections::HashSet<String>> {
        let mut out = std::collections::HashSet::new();
        for chunk in message_ids.chunks(MAX_SQL_PARAMS) {
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            let rows = self.sql.query(
                &format!(
                    "SELECT m.id FROM messages m WHERE m.id IN ({ph}) \
                     AND EXISTS (SELECT 1 FROM citations c WHERE c.message_rowid = m.rowid) \
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
            // The column has no index: the directory named the memories
            // that may hold it.
            clauses.push("key = ? AND rowid IN (SELECT value FROM json_each(?))");
            params.push(k.into());
            params.push(json_param(&f.key_rowids));
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
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", f.limit.saturating_add(1)));
        let mut memories = self.memories_where(&sql, &params)?;
        let cursor = if memories.len() > f.limit {
            memories.truncate(f.limit);
            memories.last().map(|m| m.id.clone())
        } else {
            None
        };
        Ok(ListPage { memories, cursor })
    }

    /// Every memory, oldest first (export).
    pub fn all_memories(&self) -> Result<Vec<Memory>> {
        self.memories_where("1 = 1 ORDER BY id", &[])
    }

    /// The id of every memory, in id order (no content read).
    pub fn all_memory_ids(&self) -> Result<Vec<String>> {
        self.sql
            .query("SELECT id FROM memories ORDER BY id", &[])?
            .into_iter()
            .map(|r| r.first().and_then(|v| v.opt_string()).ok_or_else(|| Error::storage("a memory row has no id")))
            .collect()
    }

    /// The version chain through `m`, oldest first.
    pub fn version_chain(&self, m: &Memory) -> Result<Vec<Memory>> {
        let mut back = Vec::new();
        let mut seen = std::collections::HashSet::from([m.id.clone()]);
        let mut cur = m.supersedes.clone();
        while let Some(id) = cur {
            if !seen.insert(id.clone()) {
                break;
            }
            match self.get_memory(&id)? {
                Some(prev) => {
                    cur = prev.supersedes.clone();
                    back.push(prev);
                }
                None => break,
            }
        }
        back.reverse();
        back.push(m.clone());
        let mut cur = m.superseded_by.clone();
        while let Some(id) = cur {
            if !seen.insert(id.clone()) {
                break;
            }
            match self.get_memory(&id)? {
                Some(next) => {
                    cur = next.superseded_by.clone();
                    back.push(next);
                }
                None => break,
            }
        }
        Ok(back)
    }

    /// Marks active memories whose `expiresAt` has passed as expired and
    /// queues removal of their vectors. Returns how many.
    pub fn expire_due(&self) -> Result<usize> {
        let now = iso(self.now);
        let ids: Vec<String> = self
            .sql
            .query(
                "SELECT id FROM memories WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= ?",
                &[now.clone().into()],
            )?
            .iter()
            .map(|r| id_of_row(r))
            .collect::<Result<_>>()?;
        for id in &ids {
            self.sql.execute(
                "UPDATE memories SET status = 'expired', updated_at = ? WHERE id = ?",
                &[now.clone().into(), id.into()],
            )?;
            self.enqueue(&Work::Unvector { memory_id: id.to_string() })?;
        }
        Ok(ids.len())
    }

    /// The earliest pending `expiresAt` of an active memory, in millis.
    pub fn next_expiry(&self) -> Result<Option<i64>> {
        Ok(self
            .sql
            .query("SELECT MIN(expires_at) FROM memories WHERE status = 'active' AND expires_at IS NOT NULL", &[])?
            .first()
            .and_then(|r| r.first())
            .and_then(SqlValue::opt_string)
            .and_then(|s| crate::core::time::parse_millis(&s)))
    }

    // ---- outbox ---------------------------------------------------------

    pub fn enqueue(&self, work: &Work) -> Result<()> {
        self.enqueue_at(work, self.now).map(|_| ())
    }

    /// Queues a job of `kind` for each of `memory_ids`, due now, in one
    /// statement.
    pub fn enqueue_many(&self, kind: JobKind, memory_ids: &[&str]) -> Result<()> {
        if memory_ids.is_empty() {
            return Ok(());
        }
        self.sql.execute(
            "INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) \
             SELECT ?1, j.value, 0, ?2, ?3 FROM json_each(?4) j ORDER BY j.key",
            &[kind.as_str().into(), SqlValue::Integer(self.now), iso(self.now).into(), json_param(memory_ids)],
        )
    }

    /// Queues a job due at `due` (epoch millis); returns its id.
    pub fn enqueue_at(&self, work: &Work, due: i64) -> Result<i64> {
        let rows = self.sql.query(
            "INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) VALUES (?, ?, 0, ?, ?) RETURNING id",
            &[work.kind().as_str().into(), work.subject().into(), SqlValue::Integer(due), iso(self.now).into()],
        )?;
        rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("failed to queue a job"))
    }

    /// Jobs due now, not parked and of a kind this version runs, oldest
    /// first.
    pub fn due_jobs(&self, limit: usize) -> Result<Vec<Job>> {
        self.sql
            .query(
                "SELECT id, kind, memory_id, attempts FROM outbox \
                 WHERE parked = 0 AND next_attempt_at <= ?1 AND kind IN (SELECT value FROM json_each(?3)) ORDER BY id LIMIT ?2",
                &[SqlValue::Integer(self.now), SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)), known_kinds()],
            )?
            .into_iter()
            .map(|r| job_from_row(&r))
            .collect()
    }

    /// Records an attempt of each of `ids` before it runs, and moves it
    /// out of reach until its backoff has passed: `retry_base` millis
    /// after the first attempt, doubling with each one (capped at ten
    /// minutes). A run that dies (a trap, an out-of-memory) has counted
    /// its attempt, so a job that kills every run reaches its cap and is
    /// parked instead of killing the next one.
    pub fn claim_jobs(&self, ids: &[i64], retry_base: i64) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.sql.execute(
            "UPDATE outbox SET attempts = attempts + 1, \
             next_attempt_at = ?1 + min(600000, ?2 * (1 << min(attempts, 12))) \
             WHERE id IN (SELECT value FROM json_each(?3))",
            &[SqlValue::Integer(self.now), SqlValue::Integer(retry_base.max(1)), json_param(ids)],
        )
    }

    /// Parks every job that has used `max_attempts` attempts, and every
    /// job of a kind this version does not run, with the reason; how many.
    /// A parked job is never due again; it stays visible
    /// (`stats().parked_jobs`).
    pub fn park_jobs(&self, max_attempts: i64) -> Result<i64> {
        let over = self.sql.query(
            "UPDATE outbox SET parked = 1, \
             last_error = 'parked after ' || attempts || ' attempts: ' || COALESCE(last_error, 'no error was recorded') \
             WHERE parked = 0 AND attempts >= ?1 RETURNING id",
            &[SqlValue::Integer(max_attempts)],
        )?;
        let unknown = self.sql.query(
            "UPDATE outbox SET parked = 1, last_error = 'parked: this version knows no job of kind ' || quote(kind) \
             WHERE parked = 0 AND kind NOT IN (SELECT value FROM json_each(?1)) RETURNING id",
            &[known_kinds()],
        )?;
        Ok(i64::try_from(over.len().saturating_add(unknown.len())).unwrap_or(i64::MAX))
    }

    pub fn finish_jobs(&self, ids: &[i64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.sql.execute("DELETE FROM outbox WHERE id IN (SELECT value FROM json_each(?1))", &[json_param(ids)])
    }

    /// Records why a claimed job failed ([`Store::claim_jobs`] counted the
    /// attempt and set the retry).
    pub fn record_failure(&self, id: i64, error: &str) -> Result<()> {
        let error: String = error.chars().take(1000).collect();
        self.sql.execute("UPDATE outbox SET last_error = ? WHERE id = ?", &[error.into(), SqlValue::Integer(id)])
    }

    /// Jobs in the outbox that are not parked (cheap: the drain asks after
    /// every batch).
    pub fn pending_jobs(&self) -> Result<i64> {
        self.count("SELECT COUNT(*) FROM outbox WHERE parked = 0")
    }

    /// The earliest time a job that is not parked is due, in millis.
    pub fn next_job_at(&self) -> Result<Option<i64>> {
        Ok(self
            .sql
            .query("SELECT MIN(next_attempt_at) FROM outbox WHERE parked = 0", &[])?
            .first()
            .and_then(|r| r.first())
            .and_then(SqlValue::as_i64))
    }

    /// The one number a `SELECT COUNT(*) …` statement answers.
    fn count(&self, statement: &str) -> Result<i64> {
        self.sql
            .query(statement, &[])?
            .first()
            .and_then(|r| r.first())
            .and_then(SqlValue::as_i64)
            .ok_or_else(|| Error::storage("a count returned no number"))
    }

    /// When background work is next due (epoch millis): the earliest
    /// pending job or expiry, if any.
    pub fn next_due(&self) -> Result<Option<i64>> {
        Ok(match (self.next_job_at()?, self.next_expiry()?) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    // ---- local vectors --------------------------------------------------

    /// Profile statistics.
    pub fn stats(&self) -> Result<Stats> {
        let one = |sql: &str| self.count(sql);
        let mut stats = Stats {
            messages: one("SELECT COUNT(*) FROM messages")?,
            sessions: one("SELECT COUNT(DISTINCT session_id) FROM messages")?,
            memories: one("SELECT COUNT(*) FROM memories")?,
            pending_jobs: one("SELECT COUNT(*) FROM outbox WHERE parked = 0")?,
            failed_jobs: one("SELECT COUNT(*) FROM outbox WHERE parked = 0 AND attempts > 0")?,
            parked_jobs: one("SELECT COUNT(*) FROM outbox WHERE parked = 1")?,
            vectors: one("SELECT COUNT(*) FROM vectors")?,
            storage_bytes: self.sql.database_size(),
            ..Stats::default()
        };
        for t in MemoryType::ALL {
            stats.by_type.insert(t.as_str().into(), 0);
        }
        for s in Status::ALL {
            stats.by_status.insert(s.as_str().into(), 0);
        }
        for r in self.sql.query("SELECT type, COUNT(*) FROM memories GROUP BY type", &[])? {
            let (t, n) = text_and_count(&r)?;
            stats.by_type.insert(t, n);
        }
        for r in self.sql.query("SELECT status, COUNT(*) FROM memories GROUP BY status", &[])? {
            let (s, n) = text_and_count(&r)?;
            stats.by_status.insert(s, n);
        }
        Ok(stats)
    }

    /// Removes everything in the profile but its name (which the alarm
    /// needs to reach the profile's vectors) and the schema.
    pub fn wipe(&self) -> Result<()> {
        // Citations first: a deleted message's trigger would move them aside.
        for t in ["citations", "citations_waiting", "messages", "messages_fts", "memories", "memories_fts", "vectors", "vector_snapshot", "directory_snapshot", "outbox"] {
            self.sql.execute(&format!("DELETE FROM {t}"), &[])?;
        }
        self.sql.execute("DELETE FROM meta WHERE key <> ?", &[META_NAME.into()])?;
        self.purge_deleted_text()
    }

    /// When the profile was marked for deletion (epoch millis), if it is.
    pub fn deletion_mark(&self) -> Result<Option<i64>> {
        match self.meta_get(META_DELETED_AT)? {
            None => Ok(None),
            Some(at) => at.parse().map(Some).map_err(|_| Error::storage(format!("meta {META_DELETED_AT} is not a time"))),
        }
    }

    /// Marks the profile for deletion at `at` (epoch millis).
    pub fn mark_for_deletion(&self, at: i64) -> Result<()> {
        self.meta_set(META_DELETED_AT, &at.to_string())
    }

    /// Takes the deletion mark away (a restore).
    pub fn clear_deletion_mark(&self) -> Result<()> {
        self.sql.execute("DELETE FROM meta WHERE key = ?", &[META_DELETED_AT.into()])
    }

    pub fn meta_get(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .sql
            .query("SELECT value FROM meta WHERE key = ?", &[key.into()])?
            .first()
            .and_then(|r| r.first())
            .and_then(SqlValue::opt_string))
    }

    pub fn meta_set(&self, key: &str, value: &str) -> Result<()> {
        self.sql.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", &[key.into(), value.into()])
    }
}

/// What `memories_fts` indexes of a memory `m`: its content, its topic
/// key with the dots and underscores as spaces, its search queries one
/// per line. Also read by recall's turn directory, which indexes the same
/// text in memory.
pub const MEMORY_FTS_COLUMNS: &str = "m.content, COALESCE(replace(replace(m.key, '.', ' '), '_', ' '), ''), \
     COALESCE((SELECT group_concat(q.value, ' \n') FROM json_each(m.search_queries) q), '')";

/// [`MEMORY_FTS_COLUMNS`] of a memory in hand, the same three texts
/// (tests/text_index.rs holds the two to each other).
pub fn memory_fts_texts(m: &Memory) -> [String; 3] {
    let key = m.key.as_deref().map_or(String::new(), |k| k.replace(['.', '_'], " "));
    [m.content.clone(), key, m.search_queries.join(" \n")]
}

/// How many rows of a table may wait for their full-text rows before a
/// write queues the background job that indexes them all, in one
/// statement (an index-text job). A reader of a full-text table indexes
/// what waits first ([`FullText::catch_up`]): usually fewer than this,
/// more only while the job waits for the alarm (or its retry). FTS5 writes one segment per transaction and merges segments as
/// they pile up: natively, a memory's row written with 19 others (one
/// ingest) costs 23 µs, with 199 others 10 µs, with 1,023 others 7 µs
/// (docs/bench/text-batch.txt).
pub const TEXT_BATCH: usize = 1024;

/// The two full-text tables, each indexing one table's rows under the
/// same rowids (see the module's invariants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FullText {
    /// `messages_fts` (role, content) over `messages`.
    Messages,
    /// `memories_fts` (content, key, queries) over `memories`.
    Memories,
}

impl FullText {
    pub const BOTH: [FullText; 2] = [FullText::Messages, FullText::Memories];

    /// The table, its full-text table, that table's columns, and the
    /// expressions (over `m`, a row of the table) of what they index.
    fn tables(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            FullText::Messages => ("messages", "messages_fts", "role, content", "m.role, m.content"),
            FullText::Memories => ("memories", "memories_fts", "content, key, queries", MEMORY_FTS_COLUMNS),
        }
    }

    /// The full-text table's name.
    pub fn table(self) -> &'static str {
        self.tables().1
    }

    /// The full-text table named `table`.
    pub fn named(table: &str) -> Option<FullText> {
        FullText::BOTH.into_iter().find(|f| f.table() == table)
    }

    /// The index's highest rowid and how many rows may wait above it,
    /// from the highest rowids (no count of the rows: every write asks).
    /// Deleted rows leave gaps, so it may overstate: a batch may come
    /// early, never late.
    fn waiting(self, sql: &dyn Sql) -> Result<(i64, usize)> {
        let (table, fts, _, _) = self.tables();
        let row = sql.query(
            &format!(
                "SELECT COALESCE((SELECT rowid FROM {fts} ORDER BY rowid DESC LIMIT 1), 0), \
                 COALESCE((SELECT MAX(rowid) FROM {table}), 0)"
            ),
            &[],
        )?;
        match row.first().map(Vec::as_slice) {
            Some([since, last]) => match (since.as_i64(), last.as_i64()) {
                (Some(since), Some(last)) => Ok((since, last.saturating_sub(since).max(0) as usize)),
                _ => Err(Error::storage(format!("failed to read what {fts} lacks"))),
            },
            _ => Err(Error::storage(format!("failed to read what {fts} lacks"))),
        }
    }

    /// Indexes for full-text search the rows of the table above its index's
    /// highest rowid, in one statement. Returns how many rowids it covered
    /// (0: none waited).
    pub fn catch_up(self, sql: &dyn Sql) -> Result<usize> {
        let (table, fts, indexed, columns) = self.tables();
        let (since, waiting) = self.waiting(sql)?;
        if waiting == 0 {
            return Ok(0);
        }
        sql.execute(
            &format!("INSERT INTO {fts} (rowid, {indexed}) SELECT m.rowid, {columns} FROM {table} m WHERE m.rowid > ?1"),
            &[SqlValue::Integer(since)],
        )?;
        Ok(waiting)
    }
}

/// One bound parameter carrying a whole list, read in SQL as
/// `json_each(?)`: a list of any length in one statement, where
/// [`placeholders`] would need one statement per [`MAX_SQL_PARAMS`] items.
pub fn json_param<T: serde::Serialize + ?Sized>(items: &T) -> SqlValue {
    SqlValue::Text(serde_json::to_string(items).unwrap_or_else(|_| "[]".into()))
}

/// Runs a statement that selects its rows as one JSON array
/// (`SELECT json_group_array(json_array(a, b, ...)) FROM ...`) and reads
/// them as `T` (a tuple, or a tuple struct, per row). On the Durable
/// Object every value of a result set crosses into Wasm on its own, which
/// costs more than building and reading the rows as one text; it is worth
/// it for reads of hundreds of rows. No blobs (JSON cannot hold them).
pub fn json_rows<T: serde::de::DeserializeOwned>(sql: &dyn Sql, statement: &str, params: &[SqlValue]) -> Result<Vec<T>> {
    let rows = sql.query(statement, params)?;
    match rows.first().and_then(|r| r.first()).and_then(SqlValue::as_str) {
        Some(text) => serde_json::from_str(text).map_err(|e| Error::storage(format!("failed to read rows: {e}"))),
        None => Ok(Vec::new()),
    }
}

/// Largest JSON parameter a write sends in one statement: well under the
/// platform's 2 MB cap on a value.
pub const MAX_JSON_PARAM: usize = 512 * 1024;

/// The rows of a [`json_chunks`] parameter `?1` as the table `r(v)` of a
/// statement's `WITH` clause, each row parsed once (into JSONB), and its
/// first `n` columns (`r.v ->> 0, ...`) to select from it. (`->>` on a
/// row's JSON text parses the whole row again for every column read.)
pub fn json_table(n: usize) -> (&'static str, String) {
    let columns: Vec<String> = (0..n).map(|i| format!("r.v ->> {i}")).collect();
    ("WITH r AS MATERIALIZED (SELECT jsonb(j.value) AS v FROM json_each(?1) j)", columns.join(", "))
}

/// `rows` as JSON array parameters of at most [`MAX_JSON_PARAM`] bytes each
/// (a single larger row goes alone).
pub fn json_chunks<T: serde::Serialize>(rows: &[T]) -> Vec<SqlValue> {
    let mut out = Vec::new();
    let mut cur = String::from("[");
    for r in rows {
        let text = serde_json::to_string(r).unwrap_or_else(|_| "null".into());
        if cur.len() > 1 && cur.len().saturating_add(text.len()).saturating_add(2) > MAX_JSON_PARAM {
            cur.push(']');
            out.push(SqlValue::Text(std::mem::replace(&mut cur, String::from("["))));
        }
        if cur.len() > 1 {
            cur.push(',');
        }
        cur.push_str(&text);
    }
    if cur.len() > 1 {
        cur.push(']');
        out.push(SqlValue::Text(cur));
    }
    out
}

/// `?, ?, ?` with `n` marks.
pub fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// `(rowid, id)` rows of a `RETURNING rowid, id` clause.
fn rowids_of(rows: Vec<Vec<SqlValue>>) -> impl Iterator<Item = (i64, String)> {
    rows.into_iter().filter_map(|r| Some((r.first()?.as_i64()?, r.get(1)?.opt_string()?)))
}

/// `?1, ?2, ?3` for `n` values: a list a statement can name twice.
pub fn numbered_placeholders(n: usize) -> String {
    (1..=n).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ")
}

/// `(?, ?), (?, ?)` for `rows` rows of `cols` columns.
pub fn rows_placeholders(rows: usize, cols: usize) -> String {
    let one = format!("({})", placeholders(cols));
    vec![one; rows].join(", ")
}

/// The id in the first column of a row of ids (a `SELECT id ...`): a row
/// without one is a storage error, never skipped.
fn id_of_row(r: &[SqlValue]) -> Result<String> {
    r.first().and_then(SqlValue::opt_string).ok_or_else(|| Error::storage("a row has no id"))
}

/// The two texts of a two-column row (`what` names the first, for the
/// error).
fn two_texts(r: &[SqlValue], what: &str) -> Result<(String, String)> {
    match r {
        [a, b] => match (a.opt_string(), b.opt_string()) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(Error::storage(format!("failed to read {what} and id"))),
        },
        _ => Err(Error::storage(format!("failed to read {what} and id"))),
    }
}

/// A `(text, COUNT(*))` row of a `GROUP BY`.
fn text_and_count(r: &[SqlValue]) -> Result<(String, i64)> {
    match r {
        [t, n] => Ok((t.opt_string().unwrap_or_default(), n.as_i64().ok_or_else(|| Error::storage("a count returned no number"))?)),
        _ => Err(Error::storage("a count returned no number")),
    }
}

/// A text value, or empty for NULL.
fn text(v: SqlValue) -> String {
    match v {
        SqlValue::Text(s) => s,
        _ => String::new(),
    }
}

/// A text value, or `None` for NULL.
fn opt_text(v: SqlValue) -> Option<String> {
    match v {
        SqlValue::Text(s) => Some(s),
        _ => None,
    }
}

fn json_list(v: &SqlValue) -> Vec<String> {
    v.as_str().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default()
}

/// Whether a memory expiring at `expires_at` has expired at `now`.
fn expired(expires_at: Option<&str>, now: i64) -> bool {
    expires_at.and_then(crate::core::time::parse_millis).is_some_and(|t| t <= now)
}

/// Builds a memory from a row of [`MEMORY_COLUMNS`]. An active memory whose
/// expiry has passed reads as `expired` even before the alarm marks it.
/// A row of other columns, without an id, or with a status or type this
/// version does not know is a storage error: a corrupt row is never read
/// as an active fact.
pub fn memory_from_row(r: Row, now: i64) -> Result<Memory> {
    let bad = || Error::storage("failed to read a memory row");
    let [id, kind, key, summary, content, session_id, sources, queries, status, supersedes, superseded_by, event_date, created_at, updated_at, expires_at] =
        <[SqlValue; 15]>::try_from(r).map_err(|_| bad())?;
    let expires_at = opt_text(expires_at);
    let known = |what: &str, v: &SqlValue| Error::storage(format!("a memory row has {what} {}", crate::core::api::quoted(v.as_str().unwrap_or("(not text)"))));
    let mut status = status.as_str().and_then(Status::parse).ok_or_else(|| known("the status", &status))?;
    if status == Status::Active && expired(expires_at.as_deref(), now) {
        status = Status::Expired;
    }
    Ok(Memory {
        id: opt_text(id).ok_or_else(bad)?,
        kind: kind.as_str().and_then(MemoryType::parse).ok_or_else(|| known("the type", &kind))?,
        key: opt_text(key),
        summary: text(summary),
        content: text(content),
        session_id: text(session_id),
        source_message_ids: json_list(&sources),
        search_queries: json_list(&queries),
        status,
        supersedes: opt_text(supersedes),
        superseded_by: opt_text(superseded_by),
        event_date: opt_text(event_date),
        created_at: text(created_at),
        updated_at: text(updated_at),
        expires_at,
    })
}

/// Builds a message from a row of [`MESSAGE_COLUMNS`]. A row of other
/// columns, or without an id or a position, is a storage error.
pub fn message_from_row(r: Row) -> Result<Message> {
    let bad = || Error::storage("failed to read a message row");
    let [id, session_id, role, content, timestamp, position, created_at] = <[SqlValue; 7]>::try_from(r).map_err(|_| bad())?;
    Ok(Message {
        id: opt_text(id).ok_or_else(bad)?,
        session_id: text(session_id),
        role: text(role),
        content: text(content),
        timestamp: opt_text(timestamp),
        position: position.as_i64().ok_or_else(bad)?,
        created_at: text(created_at),
    })
}
