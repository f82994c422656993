// Native SQLite behind the `Sql` trait, for tests and the LoCoMo harness.
// Mostly for tests: production runs on Durable Object SQL. Included with
// `include!` by a module that first names the core as `core_path`.

use core_path::error::{Error, Result};
use core_path::ports::{Row, Sql, SqlValue};
use rusqlite::types::{Value, ValueRef};
use std::cell::RefCell;

/// Statements kept prepared, as a Durable Object keeps its own (by SQL
/// text, up to 1 MiB: at a few hundred bytes a statement, thousands).
const STATEMENT_CACHE: usize = 1024;

/// An in-memory (or file) SQLite connection.
pub struct NativeSql {
    conn: RefCell<rusqlite::Connection>,
}

impl NativeSql {
    pub fn memory() -> NativeSql {
        let conn = rusqlite::Connection::open_in_memory().expect("open sqlite");
        // A Durable Object's `sql.exec` keeps the statements it prepared, up
        // to 1 MiB of SQL text, least recently used out first; rusqlite's
        // default of 16 statements re-prepared most of ingest's statements
        // for every batch (a fifth of ingest's time natively).
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // The Durable Object's SQLite refuses a LIKE or GLOB pattern over
        // 50 bytes ("pattern too complex").
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 50);
        NativeSql { conn: RefCell::new(conn) }
    }
}

/// With `SQL_SCAN_LOG=<file>` set (`SQL_SCAN_LOG=/tmp/scans cargo test`),
/// every statement whose plan scans a stored table whole
/// ([`whole_table_scans`]; a CTE's reads as a table's) is appended to the file, one line a step: where a cost may
/// grow with the profile. Statements that fail to plan are skipped.
fn log_scans(conn: &rusqlite::Connection, sql: &str, params: &[SqlValue], path: &std::ffi::OsStr) {
    use std::io::Write;
    let Ok(mut stmt) = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")) else { return };
    let values: Vec<Value> = params.iter().map(to_value).collect();
    let Ok(steps) = stmt.query_map(rusqlite::params_from_iter(values.iter()), |r| r.get::<_, String>(3)) else { return };
    let scans = whole_table_scans(steps.filter_map(|s| s.ok()).collect());
    if scans.is_empty() {
        return;
    }
    let shape: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        for s in scans {
            let _ = writeln!(f, "{s}\t{shape}");
        }
    }
}

/// The steps of a query plan (`EXPLAIN QUERY PLAN`'s last column) that
/// scan a stored table whole: `SCAN` steps but a virtual table's
/// (`json_each`), a `VALUES` list's and a subquery's (read as a co-routine
/// or materialized, or unnamed).
pub fn whole_table_scans(steps: Vec<String>) -> Vec<String> {
    let inner: Vec<String> =
        steps.iter().filter_map(|s| s.strip_prefix("CO-ROUTINE ").or_else(|| s.strip_prefix("MATERIALIZE "))).map(|n| format!("SCAN {n}")).collect();
    steps
        .into_iter()
        .filter(|s| {
            s.starts_with("SCAN ")
                && !s.contains("VIRTUAL TABLE")
                && !s.contains("CONSTANT ROW")
                && !s.contains("VALUES CLAUSE")
                && !s.starts_with("SCAN (subquery")
                && !inner.contains(s)
        })
        .collect()
}

fn to_value(v: &SqlValue) -> Value {
    match v {
        SqlValue::Null => Value::Null,
        SqlValue::Integer(i) => Value::Integer(*i),
        SqlValue::Real(f) => Value::Real(*f),
        SqlValue::Text(s) => Value::Text(s.clone()),
        SqlValue::Blob(b) => Value::Blob(b.clone()),
    }
}

impl Sql for NativeSql {
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>> {
        // The Durable Object's limits, so native tests catch what would fail there.
        assert!(params.len() <= 100, "more than 100 bound parameters: {sql}");
        assert!(sql.len() <= 100_000, "statement over 100 KB: {}...", &sql[..200]);
        for p in params {
            if let SqlValue::Text(t) = p {
                assert!(t.len() <= 2_000_000, "a bound value over 2 MB ({} bytes): {sql}", t.len());
            }
        }
        let conn = self.conn.borrow();
        if let Some(path) = std::env::var_os("SQL_SCAN_LOG") {
            log_scans(&conn, sql, params, &path);
        }
        let mut stmt = conn.prepare_cached(sql).map_err(|e| Error::storage(format!("failed to prepare {sql}: {e}")))?;
        let n = stmt.column_count();
        let values: Vec<Value> = params.iter().map(to_value).collect();
        let mut rows = stmt.query(rusqlite::params_from_iter(values.iter())).map_err(|e| Error::storage(format!("failed to run {sql}: {e}")))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| Error::storage(format!("failed to read rows: {e}")))? {
            let mut r = Vec::with_capacity(n);
            for i in 0..n {
                r.push(match row.get_ref(i).map_err(|e| Error::storage(e.to_string()))? {
                    ValueRef::Null => SqlValue::Null,
                    ValueRef::Integer(i) => SqlValue::Integer(i),
                    ValueRef::Real(f) => SqlValue::Real(f),
                    ValueRef::Text(t) => {
                        // Cloudflare documents 2 MB as the most a string may
                        // hold (local workerd returns more), so native tests
                        // catch what may fail there: a read that goes again
                        // in pages when its one text fails
                        // (`store::json_rows_paged`) gets the error SQLite
                        // gives a string over its length limit; any other
                        // read over it fails the test, as it did before the
                        // paged reads (a recall notes a failed channel and
                        // answers without it, which a test may not check).
                        if t.len() > 2_000_000 {
                            let retried_in_pages = sql.starts_with("SELECT '[' || group_concat(r, ',') || ']' FROM (SELECT");
                            assert!(retried_in_pages, "a result value over 2 MB ({} bytes): {sql}", t.len());
                            return Err(Error::storage(format!("string or blob too big: a result value of {} bytes: {sql}", t.len())));
                        }
                        SqlValue::Text(String::from_utf8_lossy(t).into_owned())
                    }
                    ValueRef::Blob(b) => SqlValue::Blob(b.to_vec()),
                });
            }
            out.push(r);
        }
        Ok(out)
    }

    fn transaction(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        self.conn.borrow().execute_batch("SAVEPOINT tx").map_err(|e| Error::storage(e.to_string()))?;
        match f() {
            Ok(()) => self.conn.borrow().execute_batch("RELEASE tx").map_err(|e| Error::storage(e.to_string())),
            Err(e) => {
                let _ = self.conn.borrow().execute_batch("ROLLBACK TO tx; RELEASE tx");
                Err(e)
            }
        }
    }

    fn database_size(&self) -> i64 {
        let conn = self.conn.borrow();
        let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap_or(0);
        let size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap_or(0);
        pages * size
    }
}
