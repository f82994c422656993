//! The five retrieval channels. Each returns memory ids, best first.

use crate::core::error::Result;
use crate::core::ports::{Sql, SqlValue, VectorIndex};
use crate::core::recall::fuse::{Channel, Ranking};
use crate::core::store::placeholders;

/// Hits each channel returns at most.
pub const CHANNEL_DEPTH: usize = 50;

/// An FTS5 MATCH expression OR-ing the terms, each quoted (so no term can
/// be read as FTS syntax). `None` when there is nothing to search for.
pub fn match_expr(terms: &[String]) -> Option<String> {
    let quoted: Vec<String> = terms
        .iter()
        .map(|t| t.chars().filter(|c| c.is_alphanumeric() || *c == ' ').collect::<String>())
        .filter(|t| !t.trim().is_empty())
        .map(|t| format!("\"{}\"", t.trim()))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

/// The status condition for recall: active and unexpired, unless asked.
fn live(include_inactive: bool, now_iso: &str) -> (String, Vec<SqlValue>) {
    if include_inactive {
        ("1 = 1".into(), vec![])
    } else {
        ("m.status = 'active' AND (m.expires_at IS NULL OR m.expires_at > ?)".into(), vec![now_iso.into()])
    }
}

/// 1. FTS5 over memories, ranked by bm25 (content weighs most).
pub fn fts(sql: &dyn Sql, terms: &[String], include_inactive: bool, now_iso: &str) -> Result<Ranking> {
    let Some(expr) = match_expr(terms) else { return Ok(Ranking { channel: Channel::Fts, ids: vec![] }) };
    let (cond, extra) = live(include_inactive, now_iso);
    let mut params = vec![SqlValue::Text(expr)];
    params.extend(extra);
    params.push(SqlValue::Integer(CHANNEL_DEPTH as i64));
    let rows = sql.query(
        &format!(
            "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid \
             WHERE memories_fts MATCH ? AND {cond} ORDER BY bm25(memories_fts, 1.0, 2.0, 0.6) LIMIT ?"
        ),
        &params,
    )?;
    Ok(Ranking { channel: Channel::Fts, ids: rows.into_iter().filter_map(|r| r[0].opt_string()).collect() })
}

/// 2. Exact topic-key lookup, in the order the analyzer ranked the keys.
pub fn key(sql: &dyn Sql, keys: &[String], include_inactive: bool, now_iso: &str) -> Result<Ranking> {
    let mut ids = Vec::new();
    let (cond, extra) = live(include_inactive, now_iso);
    for k in keys.iter().take(20) {
        let mut params = vec![SqlValue::from(k)];
        params.extend(extra.clone());
        for r in sql.query(&format!("SELECT m.id FROM memories m WHERE m.key = ? AND {cond} ORDER BY m.id DESC"), &params)? {
            if let Some(id) = r[0].opt_string() {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
    }
    Ok(Ranking { channel: Channel::Key, ids })
}

/// 3. FTS5 over raw messages; each message hit becomes the memories that
///    cite it, in message rank order.
pub fn messages(sql: &dyn Sql, terms: &[String], include_inactive: bool, now_iso: &str) -> Result<(Ranking, Vec<String>)> {
    let Some(expr) = match_expr(terms) else { return Ok((Ranking { channel: Channel::Messages, ids: vec![] }, vec![])) };
    let rows = sql.query(
        "SELECT m.id FROM messages_fts f JOIN messages m ON m.rowid = f.rowid \
         WHERE messages_fts MATCH ? ORDER BY bm25(messages_fts, 0.3, 1.0) LIMIT ?",
        &[SqlValue::Text(expr), SqlValue::Integer(CHANNEL_DEPTH as i64)],
    )?;
    let message_ids: Vec<String> = rows.into_iter().filter_map(|r| r[0].opt_string()).collect();
    let mut ids = Vec::new();
    let (cond, extra) = live(include_inactive, now_iso);
    for chunk in message_ids.chunks(50) {
        let mut params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
        params.extend(extra.clone());
        let cites = sql.query(
            &format!(
                "SELECT s.message_id, m.id FROM memory_sources s JOIN memories m ON m.id = s.memory_id \
                 WHERE s.message_id IN ({}) AND {cond}",
                placeholders(chunk.len())
            ),
            &params,
        )?;
        for mid in chunk {
            for r in &cites {
                if r[0].as_str() == Some(mid.as_str()) {
                    if let Some(id) = r[1].opt_string() {
                        if !ids.contains(&id) {
                            ids.push(id);
                        }
                    }
                }
            }
        }
    }
    Ok((Ranking { channel: Channel::Messages, ids }, message_ids))
}

/// 4 and 5. Vector search (direct or HyDE), filtered to live memories.
pub async fn vector(
    channel: Channel,
    sql: &dyn Sql,
    index: &dyn VectorIndex,
    embedding: &[f32],
    include_inactive: bool,
    now_iso: &str,
) -> Result<Ranking> {
    let hits = index.query(embedding, CHANNEL_DEPTH).await?;
    let ids: Vec<String> = hits.into_iter().map(|(id, _)| id).collect();
    Ok(Ranking { channel, ids: keep_live(sql, ids, include_inactive, now_iso)? })
}

/// Keeps the ids of live memories, in order (an index may lag behind a
/// forget until its job drains; recall must not).
pub fn keep_live(sql: &dyn Sql, ids: Vec<String>, include_inactive: bool, now_iso: &str) -> Result<Vec<String>> {
    if ids.is_empty() {
        return Ok(ids);
    }
    let (cond, extra) = live(include_inactive, now_iso);
    let mut ok = std::collections::HashSet::new();
    for chunk in ids.chunks(50) {
        let mut params: Vec<SqlValue> = chunk.iter().map(SqlValue::from).collect();
        params.extend(extra.clone());
        for r in sql.query(&format!("SELECT m.id FROM memories m WHERE m.id IN ({}) AND {cond}", placeholders(chunk.len())), &params)? {
            if let Some(id) = r[0].opt_string() {
                ok.insert(id);
            }
        }
    }
    Ok(ids.into_iter().filter(|id| ok.contains(id)).collect())
}
