//! The local vector index: vectors in the profile's own SQLite (`vectors`
//! table), searched by brute-force cosine over float32.
//!
//! Each row keeps the float32 vector and a sign-bit code (one bit per
//! dimension), so a later first pass can rank by Hamming distance and
//! rescore only the best few exactly.

use crate::core::error::Result;
use crate::core::ports::{LocalBoxFuture, Sql, SqlValue, VectorIndex};

pub struct SqlVectorIndex<'a> {
    pub sql: &'a dyn Sql,
}

pub fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn decode(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// One bit per dimension: set where the component is positive.
pub fn sign_code(v: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; v.len().div_ceil(8)];
    for (i, x) in v.iter().enumerate() {
        if *x > 0.0 {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

impl SqlVectorIndex<'_> {
    fn upsert_now(&self, items: &[(String, Vec<f32>)]) -> Result<()> {
        for (id, v) in items {
            self.sql.execute(
                "INSERT OR REPLACE INTO vectors (memory_id, vector, code) VALUES (?, ?, ?)",
                &[id.into(), SqlValue::Blob(encode(v)), SqlValue::Blob(sign_code(v))],
            )?;
        }
        Ok(())
    }

    fn delete_now(&self, ids: &[String]) -> Result<()> {
        for chunk in ids.chunks(crate::core::ports::MAX_SQL_PARAMS) {
            let params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
            self.sql.execute(
                &format!("DELETE FROM vectors WHERE memory_id IN ({})", crate::core::store::placeholders(chunk.len())),
                &params,
            )?;
        }
        Ok(())
    }

    fn query_now(&self, q: &[f32], top_k: usize) -> Result<Vec<(String, f32)>> {
        let mut scored: Vec<(String, f32)> = self
            .sql
            .query("SELECT memory_id, vector FROM vectors", &[])?
            .into_iter()
            .filter_map(|r| {
                let id = r[0].opt_string()?;
                let v = decode(r[1].as_blob()?);
                Some((id, cosine(q, &v)))
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        scored.truncate(top_k);
        Ok(scored)
    }
}

impl VectorIndex for SqlVectorIndex<'_> {
    fn upsert<'a>(&'a self, items: &'a [(String, Vec<f32>)]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move { self.upsert_now(items) })
    }
    fn delete<'a>(&'a self, ids: &'a [String]) -> LocalBoxFuture<'a, Result<()>> {
        Box::pin(async move { self.delete_now(ids) })
    }
    fn query<'a>(&'a self, vector: &'a [f32], top_k: usize) -> LocalBoxFuture<'a, Result<Vec<(String, f32)>>> {
        Box::pin(async move { self.query_now(vector, top_k) })
    }
}
