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

/// Bytes of text a write of fewer than [`TEXT_BATCH`] rows may hold and
/// leave its full-text rows to the next reader: past them the write
/// queues the job as a batch would. A first recall after an ingest of 500
/// messages of 32 KB wrote their rows itself, 1.3 s natively (5.1 s for
/// Chinese text, written in its index form).
pub const TEXT_BATCH_BYTES: usize = 1 << 20;

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
    /// highest rowid: those holding Chinese, Japanese or Korean letters in their
    /// index form ([`FullText::write_index_forms`]), the others in one
    /// statement, all in one transaction (the index's highest rowid says
    /// which rows it holds, so it holds each row below it or none above).
    /// Returns how many rowids it covered (0: none waited).
    pub fn catch_up(self, sql: &dyn Sql) -> Result<usize> {
        let (table, fts, indexed, columns) = self.tables();
        let (since, waiting) = self.waiting(sql)?;
        if waiting == 0 {
            return Ok(0);
        }
        sql.transaction(&mut || {
            sql.execute(
                &format!(
                    "INSERT INTO {fts} (rowid, {indexed}) SELECT m.rowid, {columns} FROM {table} m WHERE m.rowid > ?1 AND NOT COALESCE({}, 0)",
                    self.wants_index_form(2)
                ),
                &[SqlValue::Integer(since), crate::core::text::cjk_glob().into()],
            )?;
            // A page at a time: a text of 32 KB is about 75 KB in its
            // index form, and a batch may hold a thousand.
            let mut after = since;
            while let Some(last) = self.write_index_forms(sql, after, i64::MAX, INDEX_FORM_PAGE)? {
                after = last;
            }
            Ok(())
        })?;
        Ok(waiting)
    }

    /// What a row's indexed texts hold together, over `m`.
    fn held(self) -> &'static str {
        match self {
            FullText::Messages => "(m.role || m.content)",
            FullText::Memories => "(m.content || COALESCE(m.key, '') || COALESCE(m.search_queries, ''))",
        }
    }

    /// Whether a row `m` is written in its index form, with the
    /// [`crate::core::text::cjk_glob`] as parameter `?{glob}`: its texts
    /// hold a Chinese, Japanese or Korean letter, or a NUL (`GLOB` reads a
    /// text only up to its first: the row's index form, written in Rust,
    /// reads all of it, and is the text itself when it holds no such
    /// letter). NULL for a row whose texts are NULL.
    fn wants_index_form(self, glob: usize) -> String {
        let held = self.held();
        format!("({held} GLOB ?{glob} OR instr(CAST({held} AS BLOB), x'00') > 0)")
    }

    /// Writes, in their [`crate::core::text::index_form`], the full-text
    /// rows of the rows above rowid `since` and up to `through` whose texts
    /// hold a Chinese, Japanese or Korean letter (a run of them is read in pairs),
    /// at most `limit` of them, in rowid order; a row indexed already is
    /// written again. Returns the last rowid written, if any.
    pub(crate) fn write_index_forms(self, sql: &dyn Sql, since: i64, through: i64, limit: usize) -> Result<Option<i64>> {
        let (table, fts, indexed, columns) = self.tables();
        let rows = sql.query(
            &format!(
                "SELECT m.rowid, {columns} FROM {table} m WHERE m.rowid > ?1 AND m.rowid <= ?2 AND COALESCE({}, 0) \
                 ORDER BY m.rowid LIMIT ?4",
                self.wants_index_form(3)
            ),
            &[
                SqlValue::Integer(since),
                SqlValue::Integer(through),
                crate::core::text::cjk_glob().into(),
                SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)),
            ],
        )?;
        let mut last = None;
        for row in &rows {
            let Some((rowid, texts)) = row.split_first() else { continue };
            let rowid = rowid.as_i64().ok_or_else(|| Error::storage(format!("a {table} rowid that is not an integer")))?;
            let mut params = vec![SqlValue::Integer(rowid)];
            for text in texts {
                let text = text.as_str().ok_or_else(|| Error::storage(format!("an indexed text of {table} that is not text")))?;
                params.push(crate::core::text::index_form(text).into_owned().into());
            }
            let marks = vec!["?"; texts.len()].join(", ");
            sql.execute(&format!("DELETE FROM {fts} WHERE rowid = ?1"), &[SqlValue::Integer(rowid)])?;
            sql.execute(&format!("INSERT INTO {fts} (rowid, {indexed}) VALUES (?, {marks})"), &params)?;
            last = Some(rowid);
        }
        Ok(last)
    }

    /// The `meta` key of how far [`Store::write_index_forms_once`] has
    /// written this table's rows again.
    fn rewritten_through(self) -> &'static str {
        match self {
            FullText::Messages => "index_forms_messages_through",
            FullText::Memories => "index_forms_memories_through",
        }
    }
}

/// The `meta` key set to [`INDEX_FORMS_VERSION`] once every full-text row
/// written before this build's index forms
/// ([`crate::core::text::index_form`]) is in its index form.
pub const META_INDEX_FORMS: &str = "index_forms_written";

/// Which index forms [`META_INDEX_FORMS`] says are written: 1, Chinese and
/// Japanese letters in pairs; 2, Korean letters too. A profile written by
/// an earlier version has its rows holding such letters written again
/// (those already in pairs come out the same).
pub const INDEX_FORMS_VERSION: &str = "2";

/// Rows read at once to be written in their index forms: their texts (up
/// to 32 KB each) and those forms (about 2.3 times as many bytes for
/// Chinese or Japanese text) are what the isolate's shared memory holds
/// meanwhile, about 3.5 MB at most.
const INDEX_FORM_PAGE: usize = 32;

impl Store<'_> {
    /// Writes again in their index forms the full-text rows of the rows
    /// holding Chinese, Japanese or Korean letters written before this
    /// build's index forms ([`INDEX_FORMS_VERSION`]), a page of
    /// [`INDEX_FORM_PAGE`] rows a transaction, how far it got kept in
    /// `meta` (a start cut short goes on from there); then
    /// marks it done, so a later start reads `meta` alone. A profile with
    /// none reads each table once by a `GLOB`. The directory's snapshot of
    /// a profile it rewrote a row of goes (its words were the old ones):
    /// the directory is built again from the rows. The object runs it
    /// after the migrations.
    ///
    /// Not done: a build before index forms run after this one (a
    /// rollback) writes its rows as before, and they are not written
    /// again when this build returns.
    pub fn write_index_forms_once(&self) -> Result<()> {
        if self.meta_get(META_INDEX_FORMS)?.as_deref() == Some(INDEX_FORMS_VERSION) {
            return Ok(());
        }
        for f in FullText::BOTH {
            let (_, fts, _, _) = f.tables();
            let through = self.count(&format!("SELECT COALESCE(MAX(rowid), 0) FROM {fts}"))?;
            loop {
                // "<version>:<rowid>"; another version's progress (or
                // the first's bare rowid) counts for nothing.
                let since = self.meta_get(f.rewritten_through())?;
                let since = since.as_deref().and_then(|v| v.strip_prefix(INDEX_FORMS_VERSION)?.strip_prefix(':')?.parse::<i64>().ok()).unwrap_or(0);
                let done = self.transaction(|| {
                    let Some(last) = f.write_index_forms(self.sql, since, through, INDEX_FORM_PAGE)? else { return Ok(true) };
                    self.sql.execute("DELETE FROM directory_snapshot", &[])?;
                    self.meta_set(f.rewritten_through(), &format!("{INDEX_FORMS_VERSION}:{last}"))?;
                    Ok(false)
                })?;
                if done {
                    break;
                }
            }
        }
        self.meta_set(META_INDEX_FORMS, INDEX_FORMS_VERSION)
    }
}

/// Brings a profile's database up to this build: the schema's migrations
/// ([`crate::core::schema::migrate`]), then the full-text rows written
/// before index forms ([`Store::write_index_forms_once`]). What the
/// object runs when it starts, and a native profile before its first call.
pub fn migrate(sql: &dyn Sql) -> Result<()> {
    crate::core::schema::migrate(sql)?;
    // The time is not read: no row is dated by it.
    Store::new(sql, 0).write_index_forms_once()
}
