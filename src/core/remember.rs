//! `remember`: store one thing explicitly, now. Runs classification (no
//! verification: the caller is the source) and supersession.

use crate::core::api::RememberRequest;
use crate::core::error::{Error, Result};
use crate::core::ingest::{classify, dates, persist};
use crate::core::model::Memory;
use crate::core::ops::Profile;
use crate::core::provider::{Candidate, Line, Transcript};
use crate::core::time::{iso, parse_millis};

/// Session id of memories remembered without one.
pub const DEFAULT_SESSION: &str = "default";

pub async fn run(p: &Profile<'_>, req: RememberRequest) -> Result<Memory> {
    let session_id = req.session_id.clone().unwrap_or_else(|| DEFAULT_SESSION.to_string());
    let today = chrono::DateTime::from_timestamp_millis(p.now).unwrap_or_default().date_naive();
    let content = dates::resolve(req.content.trim(), today);
    let transcript = Transcript {
        session_id: session_id.clone(),
        lines: vec![Line {
            index: 0,
            message_id: String::new(),
            role: "user".into(),
            date: Some(today.format("%Y-%m-%d").to_string()),
            text: content.clone(),
        }],
    };
    let candidate = Candidate { content: content.clone(), lines: vec![], event_date: dates::first_date(&content) };
    let mut cls = p
        .reasoner
        .classify(&transcript, std::slice::from_ref(&candidate))
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| Error::provider("failed to classify the memory"))?;
    if let Some(kind) = req.kind {
        cls.kind = kind;
    }
    if let Some(key) = &req.key {
        cls.key = Some(key.clone());
    }
    let cls = classify::normalize(cls);
    let mut pending = persist::build(&session_id, &[], vec![(candidate, cls, transcript)], p.now);
    let expires_at = match (&req.expires_at, req.ttl_seconds) {
        (Some(e), _) => Some(iso(parse_millis(e).unwrap_or(p.now))),
        (None, Some(ttl)) => Some(iso(p.now.saturating_add((ttl as i64).saturating_mul(1000)))),
        _ => None,
    };
    pending[0].memory.expires_at = expires_at;
    let store = p.store();
    let outcome = persist::store(&store, pending)?;
    match (outcome.stored.into_iter().next(), outcome.existing.first()) {
        (Some(m), _) => Ok(m),
        (None, Some(id)) => store.get_memory(id)?.ok_or_else(|| Error::storage("failed to read the stored memory")),
        _ => Err(Error::storage("failed to store the memory")),
    }
}
