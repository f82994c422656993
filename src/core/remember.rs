//! `remember`: store one thing explicitly, now. Runs classification (no
//! verification: the caller is the source) and supersession.

use crate::core::api::{RememberRequest, MAX_EXPIRY_MILLIS, MIN_EXPIRY_MILLIS};
use crate::core::context::Profile;
use crate::core::dates;
use crate::core::error::{Error, Result};
use crate::core::ingest::{classify, persist};
use crate::core::model::Memory;
use crate::core::provider::{Candidate, Line, Reasoner, Transcript};
use crate::core::time::{iso, parse_millis};

/// Session id stored for a memory remembered without one: empty, which
/// no caller can give, and which reads back as `null`
/// (`wire::nullable_session`).
pub const NO_SESSION: &str = "";

pub async fn run(p: &Profile<'_>, req: RememberRequest) -> Result<Memory> {
    let session_id = req.session_id.clone().unwrap_or_else(|| NO_SESSION.to_string());
    let today = chrono::DateTime::from_timestamp_millis(p.now).unwrap_or_default().date_naive();
    // Its relative dates written out, unless that would take it past the
    // limit it was checked against: then as sent (import, and an export's
    // round trip, hold every memory to that limit).
    let sent = req.content.trim();
    let content = dates::resolve_within(sent, today, crate::core::api::MAX_MESSAGE_BYTES);
    let transcript = Transcript {
        session_id: session_id.clone(),
        lines: vec![Line {
            index: 0,
            message_id: String::new(),
            role: "user".into(),
            date: Some(today.format("%Y-%m-%d").to_string()),
            text: content.as_str().into(),
        }],
    };
    let candidate = Candidate { content: content.clone(), lines: vec![], event_date: dates::event_date(&content, Some(today)) };
    // The caller is the source, so a model outage must not refuse the
    // write: when the configured classifier fails (or answers nothing),
    // the rule-based one classifies instead.
    let candidates = std::slice::from_ref(&candidate);
    let classified = match p.reasoner.classify(&transcript, candidates).await {
        Ok(v) if !v.is_empty() => v,
        _ => crate::core::rules::Rules.classify(&transcript, candidates).await?,
    };
    let mut cls = classified.into_iter().next().ok_or_else(|| Error::provider("failed to classify the memory"))?;
    if let Some(kind) = req.kind {
        cls.kind = kind;
    }
    if let Some(key) = &req.key {
        cls.key = Some(key.clone());
        // A key the caller gives makes the memory one keys supersede: left
        // to the classifier, an event or a task would lose it.
        if req.kind.is_none() && !cls.kind.is_keyed() {
            cls.kind = crate::core::model::MemoryType::Fact;
        }
    }
    let cls = classify::normalize(cls);
    let mut pending = persist::build(&session_id, &[], vec![(candidate, cls, std::rc::Rc::new(transcript))], &req.metadata, p.now);
    let expires_at = expiry(p.now, req.expires_at.as_deref(), req.ttl_seconds)?;
    if let Some(first) = pending.first_mut() {
        first.memory.expires_at = expires_at.clone();
    }
    let store = p.store();
    room_unless_repeated(p, &store, &pending)?;
    let outcome = persist::store(&store, p.turns, pending, &Default::default())?;
    // Read back what was stored, as a read shows it.
    let id = match (outcome.stored.first(), outcome.existing.first()) {
        (Some(m), _) => m.id.clone(),
        (None, Some(id)) => {
            refuse_other_claims(&store, id, req.key.as_deref(), req.session_id.as_deref())?;
            extend_expiry(&store, id, expires_at.as_deref())?;
            id.clone()
        }
        _ => return Err(Error::storage("failed to store the memory")),
    };
    store.get_memory(&id)?.ok_or_else(|| Error::storage("failed to read the stored memory"))
}

/// A remember that adds a memory needs room for it (409 when the profile
/// is full); one that repeats an active memory adds nothing, so a re-sent
/// remember is answered with its memory even in a full profile.
fn room_unless_repeated(p: &Profile<'_>, store: &crate::core::store::Store<'_>, pending: &[persist::Pending]) -> Result<()> {
    let fingerprints: Vec<&str> = pending.iter().map(|m| m.fingerprint.as_str()).collect();
    if store.active_by_fingerprints(&fingerprints)?.len() == fingerprints.len() {
        return Ok(());
    }
    p.check_capacity(1)
}

/// A statement remembered again with a key, or in a session, other than
/// the one it is stored under is refused (409) rather than answered with
/// the stored memory and the caller's key or session dropped (the memory
/// would not be found by that key, listed in that session, or deleted
/// with it). The check runs before any write.
fn refuse_other_claims(store: &crate::core::store::Store<'_>, id: &str, key: Option<&str>, session: Option<&str>) -> Result<()> {
    if key.is_none() && session.is_none() {
        return Ok(());
    }
    let stored = store.get_memory(id)?.ok_or_else(|| Error::storage("failed to read the stored memory"))?;
    if let Some(asked) = key {
        if stored.key.as_deref() != Some(asked) {
            let held = stored.key.as_deref().map_or_else(|| "no key".to_string(), |k| format!("the key {}", crate::core::api::quoted(k)));
            return Err(Error::conflict(format!("this statement is already stored as memory {id} under {held}; forget it or remember it without a key")));
        }
    }
    if let Some(asked) = session {
        if stored.session_id != asked {
            let held = match stored.session_id.as_str() {
                NO_SESSION => "no session".to_string(),
                s => format!("the session {}", crate::core::api::quoted(s)),
            };
            return Err(Error::conflict(format!("this statement is already stored as memory {id} in {held}; forget it or remember it without a sessionId")));
        }
    }
    Ok(())
}

/// A statement remembered again (same type, words and metadata) holds as
/// long as either assertion does: the stored memory's expiry becomes the
/// later of the two, none being never.
fn extend_expiry(store: &crate::core::store::Store<'_>, id: &str, asked: Option<&str>) -> Result<()> {
    store.transaction(|| {
        let m = store.get_memory(id)?.ok_or_else(|| Error::storage("failed to read the stored memory"))?;
        // Stored expiries are ISO-8601 UTC of one width: they compare as text.
        let later = match (m.expires_at.as_deref(), asked) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        if later != m.expires_at.as_deref() {
            store.set_expiry(id, later)?;
        }
        Ok(())
    })
}

/// The stored `expiresAt` of a remember call: an explicit instant, or now
/// plus the TTL, later than now (400 otherwise). One outside the years 0000-9999 (which expiries compare
/// in) is refused; validation bounds both, so only a clock past the year
/// 9600 could reach that.
pub fn expiry(now: i64, expires_at: Option<&str>, ttl_seconds: Option<u64>) -> Result<Option<String>> {
    let millis = match (expires_at, ttl_seconds) {
        (Some(e), _) => parse_millis(e).ok_or_else(|| Error::invalid("expiresAt must be an ISO-8601 date or date-time"))?,
        (None, Some(ttl)) => i64::try_from(ttl).ok().and_then(|t| t.checked_mul(1000)).and_then(|t| now.checked_add(t)).unwrap_or(i64::MAX),
        _ => return Ok(None),
    };
    if !(MIN_EXPIRY_MILLIS..=MAX_EXPIRY_MILLIS).contains(&millis) {
        return Err(Error::invalid("the expiry falls outside the years 0000-9999"));
    }
    // A memory expired on arrival would still supersede the current value
    // of its key, which no active memory would then hold.
    if millis <= now {
        let what = if expires_at.is_some() { "expiresAt must be later than now" } else { "ttlSeconds must be at least 1" };
        return Err(Error::invalid(format!("{what}: a memory remembered already expired would end the value its key holds now; to end a memory, forget it")));
    }
    Ok(Some(iso(millis)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_expiries_past_the_four_digit_years_are_refused_not_clamped() {
        let now = 1_776_245_400_000;
        assert!(expiry(now, None, Some(u64::MAX)).unwrap_err().is_invalid());
        assert!(expiry(now, None, Some(10u64.pow(13))).unwrap_err().is_invalid());
        assert_eq!(expiry(now, None, Some(crate::core::api::MAX_TTL_SECONDS)).unwrap().as_deref(), Some("2343-03-06T03:16:40.000Z"));
        assert_eq!(expiry(now, None, Some(60)).unwrap().as_deref(), Some("2026-04-15T09:31:00.000Z"));
        assert_eq!(expiry(now, Some("2030-01-01T05:00:00+05:00"), None).unwrap().as_deref(), Some("2030-01-01T00:00:00.000Z"));
        assert!(expiry(now, Some("9999-12-31T23:00:00-05:00"), None).unwrap_err().is_invalid());
        assert_eq!(expiry(now, None, None).unwrap(), None);
        assert!(expiry(now, None, Some(0)).unwrap_err().is_invalid());
        assert!(expiry(now, Some("2001-01-01T00:00:00Z"), None).unwrap_err().is_invalid());
        assert!(expiry(now, Some(&iso(now)), None).unwrap_err().is_invalid());
    }
}
