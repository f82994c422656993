//! The full-text tables: what `memories_fts` indexes of a memory, and the
//! rows written in batches behind their tables.

use super::*;

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
    pub(super) fn waiting(self, sql: &dyn Sql) -> Result<(i64, usize)> {
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
        sql.execute(&format!("INSERT INTO {fts} (rowid, {indexed}) SELECT m.rowid, {columns} FROM {table} m WHERE m.rowid > ?1"), &[SqlValue::Integer(since)])?;
        Ok(waiting)
    }
}
