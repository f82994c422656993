//! Export and import: a profile as NDJSON, one record per line.
//!
//! ```text
//! {"kind":"header","format":"agent-memory-export","version":1,"profile":"ns/p","exportedAt":"..."}
//! {"kind":"message", ...Message}
//! {"kind":"memory", ...Memory}
//! ```
//! Import validates the whole file before writing anything, then writes
//! everything in one transaction; records already present are left as
//! they are (`INSERT OR IGNORE`).

use crate::core::error::{Error, Result};
use crate::core::ids;
use crate::core::model::{Memory, Message};
use crate::core::store::Store;
use crate::core::time::iso;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const FORMAT: &str = "agent-memory-export";
pub const VERSION: i64 = 1;

pub fn export(store: &Store<'_>, profile: &str) -> Result<String> {
    let mut out = String::new();
    out.push_str(&json!({"kind": "header", "format": FORMAT, "version": VERSION, "profile": profile, "exportedAt": iso(store.now())}).to_string());
    out.push('\n');
    for m in store.all_messages()? {
        out.push_str(&tagged("message", &m)?);
    }
    for m in store.all_memories()? {
        out.push_str(&tagged("memory", &m)?);
    }
    Ok(out)
}

fn tagged<T: Serialize>(kind: &str, v: &T) -> Result<String> {
    let mut obj = serde_json::to_value(v)?;
    if let Value::Object(map) = &mut obj {
        map.insert("kind".into(), Value::String(kind.into()));
    }
    Ok(format!("{obj}\n"))
}

/// A parsed, validated export file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    pub messages: Vec<Message>,
    pub memories: Vec<Memory>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    pub messages: usize,
    pub memories: usize,
}

/// Parses and validates every line; the first bad line fails the import.
pub fn parse(ndjson: &str) -> Result<Parsed> {
    let mut parsed = Parsed::default();
    let mut saw_header = false;
    for (n, line) in ndjson.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = |what: String| Error::invalid(format!("import line {}: {what}", n + 1));
        let mut v: Value = serde_json::from_str(line).map_err(|e| bad(format!("invalid json: {e}")))?;
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
        if let Value::Object(map) = &mut v {
            map.remove("kind");
        }
        match kind.as_str() {
            "header" => {
                if v.get("format").and_then(Value::as_str) != Some(FORMAT) {
                    return Err(bad("not an agent-memory export".into()));
                }
                if v.get("version").and_then(Value::as_i64) != Some(VERSION) {
                    return Err(bad("unsupported export version".into()));
                }
                saw_header = true;
            }
            "message" => {
                let m: Message = serde_json::from_value(v).map_err(|e| bad(format!("invalid message: {e}")))?;
                if m.id != ids::message_id(&m.session_id, &m.role, &m.content) {
                    return Err(bad("message id does not match its content".into()));
                }
                crate::core::api::validate_session_id(&m.session_id).map_err(|e| bad(e.to_string()))?;
                if m.content.len() > crate::core::api::MAX_MESSAGE_BYTES {
                    return Err(bad(format!("message content over {} bytes", crate::core::api::MAX_MESSAGE_BYTES)));
                }
                parsed.messages.push(m);
            }
            "memory" => {
                let mut m: Memory = serde_json::from_value(v).map_err(|e| bad(format!("invalid memory: {e}")))?;
                if !ids::is_id(&m.id) {
                    return Err(bad("memory id is not 32 lowercase hex characters".into()));
                }
                crate::core::api::validate_session_id(&m.session_id).map_err(|e| bad(e.to_string()))?;
                // Expiries are compared as ISO strings: store them in the
                // one format that orders correctly, or refuse the line.
                if let Some(e) = &m.expires_at {
                    let millis = crate::core::time::parse_millis(e)
                        .ok_or_else(|| bad("expiresAt is not an ISO-8601 date-time".into()))?;
                    m.expires_at = Some(iso(millis.clamp(0, crate::core::api::MAX_EXPIRY_MILLIS)));
                }
                parsed.memories.push(m);
            }
            other => return Err(bad(format!("unknown record kind {other:?}"))),
        }
    }
    if !saw_header {
        return Err(Error::invalid("import: the file has no header line"));
    }
    Ok(parsed)
}

/// Writes a parsed file. Call inside a transaction.
pub fn import(store: &Store<'_>, p: &Parsed) -> Result<ImportReport> {
    let before = store.existing_message_ids(&p.messages.iter().map(|m| m.id.clone()).collect::<Vec<_>>())?;
    store.put_messages(&p.messages)?;
    let fingerprints: Vec<String> = p.memories.iter().map(|m| ids::fingerprint(m.kind.as_str(), &m.content)).collect();
    // insert_memories queues an embedding for active, non-task memories.
    let memories = store.insert_memories(&p.memories.iter().zip(&fingerprints).map(|(m, f)| (m, f.as_str())).collect::<Vec<_>>())?;
    Ok(ImportReport { messages: p.messages.len() - before.len(), memories: memories.len() })
}
