//! The float32 rows of the `vectors` table: written and deleted with the
//! warm copy kept in step, read by id for the exact pass, or scanned
//! whole ([`exact_scan`]).

use super::code::{code_dims, cosine, decode, Code, BODY_AT};
use crate::core::error::{Error, Result};
use crate::core::ports::{Hits, Sql, SqlValue};
use rustc_hash::FxHashMap;

/// Rows per page when loading codes or scanning vectors.
pub(super) const PAGE: i64 = 2000;

/// No single SQL statement takes more bound parameters than this.
pub(super) const IN_CHUNK: usize = crate::core::ports::MAX_SQL_PARAMS;

/// The float vectors of these ids, in one statement.
pub(super) fn read_vectors(sql: &dyn Sql, ids: &[String]) -> Result<Vec<(String, Vec<f32>)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows =
        sql.query("SELECT v.memory_id, v.vector FROM json_each(?1) j CROSS JOIN vectors v ON v.memory_id = j.value", &[crate::core::store::json_param(ids)?])?;
    rows.into_iter()
        .map(|r| match r.as_slice() {
            [SqlValue::Text(id), SqlValue::Blob(b)] => Ok((id.clone(), decode(b))),
            _ => Err(crate::core::error::Error::storage("a stored vector row does not read (memory id and vector)")),
        })
        .collect()
}

/// A rowid below every row of `vectors` (SQLite assigns them from 1).
/// Not `i64::MIN`: that does not survive the trip through a JavaScript
/// number on Durable Object SQL.
pub const BEFORE_FIRST_ROWID: i64 = 0;

/// Exact cosine over every stored vector, paged (the reference the
/// index is measured against, and the fallback for odd dimensions).
pub fn exact_scan(sql: &dyn Sql, q: &[f32], top_k: usize) -> Result<Vec<(String, f32)>> {
    let mut best: Vec<(String, f32)> = Vec::new();
    let mut after = BEFORE_FIRST_ROWID;
    loop {
        let rows = sql.query(
            "SELECT rowid, memory_id, vector FROM vectors WHERE rowid > ? ORDER BY rowid LIMIT ?",
            &[SqlValue::Integer(after), SqlValue::Integer(PAGE)],
        )?;
        let Some(last) = rows.last() else { break };
        after = rowid_of(last)?;
        let full = rows.len() as i64 == PAGE;
        for r in rows {
            match (r.get(1).and_then(SqlValue::opt_string), r.get(2).and_then(SqlValue::as_blob)) {
                (Some(id), Some(b)) => best.push((id, cosine(q, &decode(b)))),
                _ => return Err(Error::storage("failed to read a stored vector's memory id and bytes")),
            }
        }
        sort_hits(&mut best);
        best.truncate(top_k);
        if !full {
            break;
        }
    }
    Ok(best)
}

/// A `vectors` row's rowid (its first column).
pub(super) fn rowid_of(r: &[SqlValue]) -> Result<i64> {
    r.first().and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("a stored vector's rowid is not an integer"))
}

/// Best first; equal scores by id, descending (as the brute-force index did).
pub(super) fn sort_hits(hits: &mut [(String, f32)]) {
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
}

/// Pass 3 for several queries at once: each of `qs` scored by cosine
/// against the vectors of its shortlist, read for all of them in one
/// statement; best first, `top_k` at most. The flag says whether every
/// shortlisted vector was found (one missing is left out).
pub(super) fn rescore_exactly(sql: &dyn Sql, qs: &[Vec<f32>], shortlists: &[Vec<String>], top_k: usize) -> Result<(Vec<Hits>, bool)> {
    let mut union: Vec<String> = shortlists.concat();
    union.sort_unstable();
    union.dedup();
    let vectors: FxHashMap<String, Vec<f32>> = read_vectors(sql, &union)?.into_iter().collect();
    let whole = vectors.len() == union.len();
    let hits = qs
        .iter()
        .zip(shortlists)
        .map(|(q, ids)| {
            let mut hits: Vec<(String, f32)> = ids.iter().filter_map(|id| vectors.get(id).map(|v| (id.clone(), cosine(q, v)))).collect();
            sort_hits(&mut hits);
            hits.truncate(top_k);
            hits
        })
        .collect();
    Ok((hits, whole))
}

/// 64 bits of a key, for the set of keys a stream has seen. Both halves
/// folded: a memory id's first half is mostly its creation time.
pub(super) fn fingerprint(key: u128) -> u64 {
    (key as u64) ^ ((key >> 64) as u64)
}

/// One row's code as the lean path reads it.
pub(super) struct CodeRow {
    pub(super) id: String,
    pub(super) dims: usize,
    /// The `code` column, in this version's format.
    pub(super) code: Vec<u8>,
}

impl CodeRow {
    pub(super) fn body(&self) -> &[u8] {
        &self.code[BODY_AT..]
    }
}

/// The codes of up to `limit` rows of `vectors` after rowid `after`, in
/// rowid order; with the last rowid read (`None` past the end) and
/// whether `limit` rows were read. A row whose code is in an older
/// format is recoded from its vector and rewritten, as `load` does, and
/// keeps its place (where a load after the rewrite puts it). A row
/// without a text id is a storage error, as in `load`.
pub(super) fn code_page(sql: &dyn Sql, after: i64, limit: i64) -> Result<(Vec<CodeRow>, Option<i64>, bool)> {
    let rows =
        sql.query("SELECT rowid, memory_id, code FROM vectors WHERE rowid > ? ORDER BY rowid LIMIT ?", &[SqlValue::Integer(after), SqlValue::Integer(limit)])?;
    let last = rows.last().map(|r| rowid_of(r)).transpose()?;
    let full = rows.len() as i64 == limit;
    let mut out = Vec::with_capacity(rows.len());
    let mut stale: Vec<usize> = Vec::new();
    for row in rows {
        let mut values = row.into_iter().skip(1);
        let (Some(SqlValue::Text(id)), code) = (values.next(), values.next()) else {
            return Err(Error::storage("a stored vector's memory id is not text"));
        };
        let code = match code {
            Some(SqlValue::Blob(code)) => code,
            _ => Vec::new(),
        };
        let dims = code_dims(&code);
        if dims.is_none() {
            stale.push(out.len());
        }
        out.push(CodeRow { id, dims: dims.unwrap_or(0), code });
    }
    for chunk in stale.chunks(IN_CHUNK) {
        let ids: Vec<String> = chunk.iter().map(|&i| out[i].id.clone()).collect();
        let vectors: FxHashMap<String, Vec<f32>> = read_vectors(sql, &ids)?.into_iter().collect();
        for &i in chunk {
            let row = &mut out[i];
            row.code.clear(); // left out unless its vector is read
            if let Some(v) = vectors.get(&row.id) {
                let code = Code::of(v);
                row.code = code.to_bytes();
                row.dims = code.dims;
                sql.execute("UPDATE vectors SET code = ? WHERE memory_id = ?", &[SqlValue::Blob(row.code.clone()), row.id.as_str().into()])?;
            }
        }
    }
    out.retain(|r| !r.code.is_empty());
    Ok((out, last, full))
}
