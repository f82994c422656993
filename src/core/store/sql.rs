//! SQL helpers: lists as JSON parameters under the platform's caps, rows
//! read back as one JSON text, placeholders.

use super::*;

/// One bound parameter carrying a whole list, read in SQL as
/// `json_each(?)`: a list of any length in one statement, where
/// [`placeholders`] would need one statement per [`MAX_SQL_PARAMS`] items.
pub fn json_param<T: serde::Serialize + ?Sized>(items: &T) -> Result<SqlValue> {
    // An error, never a fallback: "[]" would make a `json_each` statement
    // select, update or delete nothing, silently.
    serde_json::to_string(items).map(SqlValue::Text).map_err(|e| Error::storage(format!("failed to write a list as a JSON parameter: {e}")))
}

/// Runs a statement that selects its rows as one JSON array
/// (`SELECT json_group_array(json_array(a, b, ...)) FROM ...`) and reads
/// them as `T` (a tuple, or a tuple struct, per row). On the Durable
/// Object every value of a result set crosses into Wasm on its own, which
/// costs more than building and reading the rows as one text; it is worth
/// it for reads of hundreds of rows. No blobs (JSON cannot hold them).
pub fn json_rows<T: serde::de::DeserializeOwned>(sql: &dyn Sql, statement: &str, params: &[SqlValue]) -> Result<Vec<T>> {
    let rows = sql.query(statement, params)?;
    match rows.first().and_then(|r| r.first()) {
        None | Some(SqlValue::Null) => Ok(Vec::new()),
        Some(cell) => rows_of(page_text(cell)?),
    }
}

/// The text of a cell holding a JSON array of rows; a storage error for
/// any other value, never read as no rows.
fn page_text(cell: &SqlValue) -> Result<&str> {
    cell.as_str().ok_or_else(|| Error::storage("rows read as one JSON text came back as another type"))
}

/// The rows of one JSON array text, each read as `T`.
fn rows_of<T: serde::de::DeserializeOwned>(text: &str) -> Result<Vec<T>> {
    serde_json::from_str(text).map_err(|e| Error::storage(format!("failed to read rows: {e}")))
}

/// How many bytes of rows one page of [`json_rows_paged`] holds before the
/// next page starts. A row longer than this is a page of its own; the
/// others share pages of less than twice this (a page's first row may
/// start just before a boundary), so no page of rows that each fit a
/// value reaches the cap.
pub const ROWS_PAGE_BYTES: i64 = 512 * 1024;

/// [`json_rows`] for a read whose rows can add up to more than one value
/// may hold: `rows` is a `SELECT` whose one column, named `r`, is each
/// row's `json_array(...)`. The rows are read as one JSON text, as
/// [`json_rows`] reads them; if that read fails (over the platform's 2 MB
/// cap on a value: many long texts, such as the first characters of
/// hundreds of long turns), they are read again as texts of about
/// [`ROWS_PAGE_BYTES`] each (a longer row alone), one result row a page,
/// so that no value the statement builds reaches the cap (a single row
/// over it still does). A
/// failure for any other reason fails the second read too, and that error
/// is returned. Pages cost more than one text (a running sum of the rows'
/// lengths, materialized: 7.6 against 3.9 ms for the places of 1,000
/// hits in a plain SQLite test, `docs/bench/value-cap-pages.txt`), so
/// they are the second read, not the first. The order of
/// the rows is not kept: a caller that needs one reads it from a column.
pub fn json_rows_paged<T: serde::de::DeserializeOwned>(sql: &dyn Sql, rows: &str, params: &[SqlValue]) -> Result<Vec<T>> {
    let pages = match sql.query(&format!("SELECT '[' || group_concat(r, ',') || ']' FROM ({rows})"), params) {
        Ok(one) => one,
        Err(e) if e.is_storage() => sql.query(
            &format!(
                "SELECT '[' || group_concat(r, ',') || ']' FROM ( \
                   SELECT r, CASE WHEN octet_length(r) > {ROWS_PAGE_BYTES} THEN -row_number() OVER () \
                     ELSE sum(octet_length(r)) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) / {ROWS_PAGE_BYTES} END AS page \
                   FROM ({rows})) GROUP BY page"
            ),
            params,
        )?,
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for cell in pages.iter().filter_map(|page| page.first()).filter(|cell| !matches!(cell, SqlValue::Null)) {
        out.extend(rows_of::<T>(page_text(cell)?)?);
    }
    Ok(out)
}

/// A column holding a JSON list of ids (a memory's source messages, its
/// search queries): empty for NULL or empty text, a storage error for
/// anything else that is not a list of strings, never read as empty.
pub fn json_ids(v: Option<&str>, what: &str) -> Result<Vec<String>> {
    match v {
        None | Some("") => Ok(Vec::new()),
        Some(t) => serde_json::from_str(t).map_err(|_| Error::storage(format!("a memory row has {what} that are not a JSON list of strings"))),
    }
}

/// A value's JSON text for a column, a storage error if it has none
/// (never an empty text that would read back as an empty value).
pub fn json_text<T: serde::Serialize + ?Sized>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::storage(format!("a value did not serialize as JSON: {e}")))
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
/// (a single larger row goes alone). A row that does not serialize is an
/// error, never left out.
pub fn json_chunks<T: serde::Serialize>(rows: &[T]) -> Result<Vec<SqlValue>> {
    json_chunks_of(rows.iter().map(Ok)).collect()
}

/// [`json_chunks`] made one parameter at a time, as the caller takes
/// them: no more than one statement's rows are ever written out at once.
pub fn json_chunks_of<T: serde::Serialize>(rows: impl Iterator<Item = Result<T>>) -> impl Iterator<Item = Result<SqlValue>> {
    let mut rows = rows;
    let mut carried: Option<String> = None;
    std::iter::from_fn(move || {
        let mut cur = String::from("[");
        if let Some(text) = carried.take() {
            cur.push_str(&text);
        }
        for row in rows.by_ref() {
            let text = match row.and_then(|r| json_text(&r)) {
                Ok(text) => text,
                Err(e) => return Some(Err(e)),
            };
            if cur.len() > 1 && cur.len().saturating_add(text.len()).saturating_add(2) > MAX_JSON_PARAM {
                carried = Some(text);
                cur.push(']');
                return Some(Ok(SqlValue::Text(cur)));
            }
            if cur.len() > 1 {
                cur.push(',');
            }
            cur.push_str(&text);
        }
        if cur.len() > 1 {
            cur.push(']');
            return Some(Ok(SqlValue::Text(cur)));
        }
        None
    })
}

/// `?, ?, ?` with `n` marks.
pub fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// `(rowid, id)` rows of a `RETURNING rowid, id` clause; a row that does
/// not read is an error (the row was written: it must not go unreported).
pub(super) fn rowids_of(rows: Vec<Vec<SqlValue>>) -> Result<Vec<(i64, String)>> {
    rows.into_iter()
        .map(|r| match r.as_slice() {
            [rowid, SqlValue::Text(id)] => rowid.as_i64().map(|n| (n, id.clone())).ok_or_else(|| Error::storage("a written row's rowid is not a number")),
            _ => Err(Error::storage("a written row did not return its rowid and id")),
        })
        .collect()
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
