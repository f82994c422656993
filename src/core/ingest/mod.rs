//! The ingest pipeline (SPEC.md section 3), as a list of calls. Each stage
//! lives in its own file, takes data and returns data.

pub mod chunk;
pub mod classify;
pub mod dates;
pub mod extract;
pub mod persist;
pub mod supersede;
pub mod transcript;
pub mod verify;

use crate::core::api::IngestRequest;
use crate::core::error::Result;
use crate::core::ids;
use crate::core::model::{IngestReport, Message};
use crate::core::ops::Profile;
use crate::core::store::NewMessage;
use crate::core::time::iso;

/// Session id used when the caller gives none: derived from the content,
/// so re-sending the same conversation lands in the same session.
pub fn default_session_id(req: &IngestRequest) -> String {
    let mut joined = String::new();
    for m in &req.messages {
        joined.push_str(&m.role);
        joined.push('\n');
        joined.push_str(&m.content);
        joined.push('\n');
    }
    format!("s-{}", &ids::message_id("", "session", &joined)[..16])
}

/// Runs the whole pipeline for one call.
pub async fn run(p: &Profile<'_>, req: IngestRequest) -> Result<IngestReport> {
    let session_id = req.session_id.clone().unwrap_or_else(|| default_session_id(&req));
    let incoming: Vec<NewMessage> = req
        .messages
        .iter()
        .map(|m| NewMessage { id: ids::message_id(&session_id, &m.role, &m.content), input: m.clone() })
        .collect();
    let message_ids: Vec<String> = incoming.iter().map(|m| m.id.clone()).collect();

    // 1. Raw messages first, in their own transaction: whatever happens to
    //    the model stages, what the caller sent is kept.
    let store = p.store();
    let fresh = store.transaction(|| store.insert_messages(&session_id, &incoming))?;
    let mut report = IngestReport {
        session_id: session_id.clone(),
        message_ids,
        messages_stored: fresh.len(),
        ..IngestReport::default()
    };
    if fresh.is_empty() {
        return Ok(report); // nothing new: ingest is idempotent
    }
    let fresh_ids: std::collections::HashSet<String> = fresh.iter().map(|m| m.id.clone()).collect();

    // 2. The messages of this call, as stored (with timestamps).
    let messages: Vec<Message> = conversation(&req, &session_id, &incoming, p.now);

    // 3. Extract (full + detail passes), merged.
    let extracted = extract::run(p.reasoner, &session_id, &messages).await?;
    // Only what rests on a message this call added is new.
    let extracted: Vec<_> = extracted
        .into_iter()
        .filter(|(c, _)| c.lines.iter().any(|&i| messages.get(i).is_some_and(|m| fresh_ids.contains(&m.id))))
        .collect();

    // 4. Verify against the transcript.
    let (verified, dropped) = verify::run(p.reasoner, extracted).await?;
    report.dropped = dropped;

    // 5. Classify: type, key, summary, search queries.
    let classified = classify::run(p.reasoner, verified).await?;

    // 6. Build memories, plan supersession, store in one transaction.
    let memories = persist::build(&session_id, &messages, classified, p.now);
    let outcome = persist::store(&store, memories)?;
    report.memories_stored = outcome.stored.len();
    report.memories_superseded = outcome.superseded;
    report.memories = outcome.stored;
    Ok(report)
}

fn conversation(req: &IngestRequest, session_id: &str, incoming: &[NewMessage], now: i64) -> Vec<Message> {
    incoming
        .iter()
        .enumerate()
        .map(|(i, m)| Message {
            id: m.id.clone(),
            session_id: session_id.to_string(),
            role: m.input.role.clone(),
            content: m.input.content.clone(),
            timestamp: req.messages[i].timestamp.clone().or_else(|| Some(iso(now))),
            position: i as i64,
            created_at: iso(now),
        })
        .collect()
}
