//! The ingest pipeline (SPEC.md section 3), as a list of calls. Each stage
//! lives in its own file, takes data and returns data.
//!
//! Raw messages are stored first and always kept. The judging stages
//! (extract, verify, classify) never fail the call: a reasoner error or an
//! unparseable model reply drops the affected chunk or candidates, and each
//! drop is listed in the report's `dropped` with its reason. Only storage
//! errors fail an ingest.

pub mod batch;
pub mod chunk;
pub mod classify;
pub mod extract;
pub mod identify;
pub mod persist;
pub mod supersede;
pub mod transcript;
pub mod verify;

use crate::core::api::IngestRequest;
use crate::core::context::Profile;
use crate::core::error::{Error, Result};
use crate::core::ids;
use crate::core::model::{Dropped, IngestReport, Message, MessageInput, Metadata};
use crate::core::provider::{Candidate, Transcript};
use crate::core::time::iso;
use std::collections::HashSet;
use std::rc::Rc;

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
    let id = ids::message_id("", "session", &joined);
    format!("s-{}", id.get(..16).unwrap_or(&id))
}

/// A call's session and its messages' ids ([`identify::identify`]), found
/// once: the caller weighs what is new before it runs the call.
pub struct Identified {
    pub session_id: String,
    pub ids: Vec<String>,
}

/// The session `req` lands in and the ids its messages take there.
pub fn identify_call(p: &Profile<'_>, req: &IngestRequest) -> Result<Identified> {
    let session_id = req.session_id.clone().unwrap_or_else(|| default_session_id(req));
    let ids = identify::identify(&p.store(), &session_id, &req.messages)?;
    Ok(Identified { session_id, ids })
}

/// Runs the whole pipeline for one call, its messages identified by
/// [`identify_call`] (no message written since).
pub async fn run(p: &Profile<'_>, req: IngestRequest, identified: Identified) -> Result<IngestReport> {
    let Identified { session_id, ids } = identified;
    // The texts are moved from the request, never copied whole: a call may
    // carry 16 MB of them, in a Wasm memory the profiles share.
    let IngestRequest { messages: sent, metadata, .. } = req;
    let mut messages = as_stored(sent, ids, &metadata, &session_id, p.now);
    let message_ids: Vec<String> = messages.iter().map(|m| m.id.clone()).collect();

    // 1. Raw messages first, in their own transaction: whatever happens to
    //    the model stages, what the caller sent is kept.
    let store = p.store();
    let fresh = store.transaction(|| store.insert_messages(&session_id, &messages))?;
    // The directory takes them as written instead of reading them back.
    if let Some(turns) = p.turns {
        turns.feed_messages(&fresh.iter().filter_map(|f| Some((f.rowid, f.position, messages.get(f.index)?))).collect::<Vec<_>>());
    }
    let mut report = IngestReport { session_id: session_id.clone(), message_ids, messages_stored: fresh.len(), ..IngestReport::default() };
    if fresh.is_empty() {
        return Ok(report); // nothing new: ingest is idempotent
    }
    let fresh_ids: HashSet<String> = fresh.iter().filter_map(|f| Some(messages.get(f.index)?.id.clone())).collect();

    // 2. The messages of this call as the judging stages read them: a
    //    message sent without a timestamp is dated now.
    for m in &mut messages {
        m.timestamp = m.timestamp.take().or_else(|| Some(iso(p.now)));
    }

    // 3-6. Judge and store (a model fault queues the session's retry).
    let judged = judge_and_store(p, &session_id, &messages, &fresh_ids, MetadataOf::Call(&metadata), Judging::First).await?;
    report.dropped = judged.dropped;
    report.memories_stored = judged.outcome.stored.len();
    report.memories_superseded = judged.outcome.superseded;
    report.memories = judged.outcome.stored;
    Ok(report)
}

/// What [`judge_and_store`] did.
pub struct Judged {
    pub outcome: persist::Outcome,
    /// Everything dropped, model faults included, with reasons.
    pub dropped: Vec<Dropped>,
    /// How many drops were model faults or memories with no room (a
    /// retry may do better).
    pub faults: usize,
    /// How many of those had no room in the profile.
    pub full: usize,
}

/// The metadata the memories of a judging take.
pub enum MetadataOf<'a> {
    /// The call's, for every memory (an ingest).
    Call(&'a crate::core::model::Metadata),
    /// Each memory the metadata of the first new message it cites was
    /// stored with (a re-extraction over several calls' messages).
    Messages,
}

/// Which judging of the messages this is.
pub enum Judging<'a> {
    /// An ingest's: a model fault marks the messages it touched and queues
    /// the session's `extract` job.
    First,
    /// The `extract` job's: `marked` are the marks it judges again (they
    /// are cleared, and set anew where a fault touches a message again),
    /// and what a message gave before, in whatever state it is now (a
    /// value superseded since, a memory forgotten), is not given again.
    Retry { marked: &'a [String] },
}

/// Extracts, verifies, classifies and stores memories from `messages`,
/// keeping only those resting on a message in `fresh_ids`. Model faults
/// are counted, not raised, and left for the alarm ([`Judging`]).
pub async fn judge_and_store(
    p: &Profile<'_>,
    session_id: &str,
    messages: &[Message],
    fresh_ids: &HashSet<String>,
    metadata: MetadataOf<'_>,
    judging: Judging<'_>,
) -> Result<Judged> {
    // 3-5. Extract, verify against the transcript, classify.
    let mut judgement = judge(p, session_id, messages, fresh_ids).await;
    // 6. Build memories, plan supersession, store in one transaction.
    let classified = std::mem::take(&mut judgement.classified);
    let memories = match metadata {
        MetadataOf::Call(m) => persist::build(session_id, messages, classified, m, p.now),
        MetadataOf::Messages => build_by_message(session_id, messages, fresh_ids, classified, p.now)?,
    };
    let memories = match judging {
        Judging::First => memories,
        Judging::Retry { .. } => not_given_before(&p.store(), memories, fresh_ids)?,
    };
    let (memories, over) = within_room(p, memories)?;
    let full = judgement.no_room(over, fresh_ids);
    let faulted: Vec<String> = judgement.faulted.into_iter().collect();
    let followup = match judging {
        Judging::First => persist::Followup { cleared: &[], marked: &faulted, retry_session: (judgement.faults > 0).then_some(session_id) },
        Judging::Retry { marked } => persist::Followup { cleared: marked, marked: &faulted, retry_session: None },
    };
    let outcome = persist::store(&p.store(), p.turns, memories, &followup)?;
    Ok(Judged { outcome, dropped: judgement.dropped, faults: judgement.faults, full })
}

/// What the judging stages made of a call's messages.
struct Judgement {
    /// The candidates kept, classified.
    classified: Vec<(Candidate, crate::core::provider::Classification, Rc<Transcript>)>,
    /// Everything dropped, model faults included, with reasons.
    dropped: Vec<Dropped>,
    /// How many drops were model faults or memories with no room.
    faults: usize,
    /// The new messages a fault touched: a retry judges them again, even
    /// those another of their candidates was stored from.
    faulted: HashSet<String>,
}

impl Judgement {
    /// Counts the memories with no room as faults: each is dropped, and
    /// its new messages marked to be judged again once there is room, as
    /// a fault's are. Returns how many there were.
    fn no_room(&mut self, over: Vec<NoRoom>, fresh_ids: &HashSet<String>) -> usize {
        let full = over.len();
        for (drop, sources) in over {
            self.faulted.extend(sources.into_iter().filter(|id| fresh_ids.contains(id)));
            self.dropped.push(drop);
        }
        self.faults = self.faults.saturating_add(full);
        full
    }
}

/// Steps 3-5: extract (full and detail passes, merged, at most
/// MAX_MEMORIES_PER_MESSAGE a message), keep what cites a new message,
/// verify against the transcript, classify (type, key, summary, search
/// queries).
async fn judge(p: &Profile<'_>, session_id: &str, messages: &[Message], fresh_ids: &HashSet<String>) -> Judgement {
    let extract::Extracted { found, failed: failed_extract, faulted, capped } = extract::run(p.reasoner, session_id, messages, fresh_ids).await;
    let mut dropped = capped;
    let (extracted, uncited) = cited_and_new(found, messages, fresh_ids);
    dropped.extend(uncited);
    let (verified, rejected, failed_verify) = verify::run(p.reasoner, extracted).await;
    dropped.extend(rejected);
    let (classified, failed_classify) = classify::run(p.reasoner, verified).await;
    let faults = failed_extract.len().saturating_add(failed_verify.dropped.len()).saturating_add(failed_classify.dropped.len());
    let faulted: HashSet<String> = faulted
        .into_iter()
        .chain(failed_verify.lines)
        .chain(failed_classify.lines)
        .filter_map(|i| messages.get(i).map(|m| m.id.clone()))
        .filter(|id| fresh_ids.contains(id))
        .collect();
    dropped.extend(failed_extract.into_iter().chain(failed_verify.dropped).chain(failed_classify.dropped));
    Judgement { classified, dropped, faults, faulted }
}

/// The memories a retry would store that the messages it judges did not
/// give before: a statement a message gave already (stored then, and
/// since superseded, forgotten or folded), in the same words or in others
/// saying the same thing ([`crate::core::text::Statement::says_the_same`]: a model
/// words a statement anew each time it is asked), is not stored again
/// from it, or a value the user changed since would come back as the
/// latest and a statement would be kept in two wordings. A memory stays
/// when one of its messages being judged (`fresh`) did not give it (one
/// message may say again what another gave: its own statement counts).
fn not_given_before(store: &crate::core::store::Store<'_>, memories: Vec<persist::Pending>, fresh: &HashSet<String>) -> Result<Vec<persist::Pending>> {
    let judged: Vec<String> = memories.iter().flat_map(|m| m.memory.source_message_ids.iter().filter(|id| fresh.contains(*id)).cloned()).collect();
    use crate::core::text::Statement;
    // Each statement read once, then weighed against the others.
    // A deleted memory's is known by its fingerprint alone.
    let given: std::collections::HashMap<String, Vec<(String, Option<Statement>)>> = store
        .given_by(&judged)?
        .into_iter()
        .map(|(message, g)| (message, g.into_iter().map(|(f, content)| (f, content.map(|c| Statement::of(&c)))).collect()))
        .collect();
    let gave = |message: &String, m: &persist::Pending, said: &Statement| {
        given.get(message).is_some_and(|g| g.iter().any(|(f, other)| *f == m.fingerprint || other.as_ref().is_some_and(|o| said.says_the_same(o))))
    };
    Ok(memories
        .into_iter()
        .filter(|m| {
            let said = Statement::of(&m.memory.content);
            m.memory.source_message_ids.iter().any(|id| fresh.contains(id) && !gave(id, m, &said))
        })
        .collect())
}

/// The memories that fit under the profile's limit (`MAX_MEMORIES`), in
/// order, and the rest as drops with the reason, beside the messages
/// they rest on. Counted right before they are stored, with nothing
/// awaited in between. A statement the profile holds active already
/// (stored as it is, it adds nothing) takes no room; one that turns out
/// to be stored otherwise (a version chain's) counts against the room:
/// the limit is never passed, at the cost of a rare drop that would
/// have fitted.
fn within_room(p: &Profile<'_>, memories: Vec<persist::Pending>) -> Result<(Vec<persist::Pending>, Vec<NoRoom>)> {
    let adding = i64::try_from(memories.len()).unwrap_or(i64::MAX);
    let Some((count, room)) = p.room(adding)? else {
        return Ok((memories, Vec::new()));
    };
    let limit = p.limits.max_memories;
    let held = p.store().active_by_fingerprints(&memories.iter().map(|m| m.fingerprint.as_str()).collect::<Vec<_>>())?;
    let mut room = usize::try_from(room.max(0)).unwrap_or(0);
    let (mut fit, mut over) = (Vec::new(), Vec::new());
    for m in memories {
        if held.contains_key(&m.fingerprint) {
            fit.push(m);
        } else if room > 0 {
            room = room.saturating_sub(1);
            fit.push(m);
        } else {
            over.push(m);
        }
    }
    let memories = fit;
    let reason = format!("{FULL}: it holds {count} memories and its limit is {limit}; judged again once there is room");
    Ok((memories, over.into_iter().map(|m| (Dropped { content: m.memory.content, reason: reason.clone() }, m.memory.source_message_ids)).collect()))
}

/// A memory with no room: its drop, and the messages it rests on.
type NoRoom = (Dropped, Vec<String>);

/// How a drop for want of room begins.
const FULL: &str = "the profile is full";

/// [`persist::build`] with each memory taking the metadata of the first
/// new message it cites (candidates grouped by it, built group by group).
fn build_by_message(
    session_id: &str,
    messages: &[Message],
    fresh_ids: &HashSet<String>,
    classified: Vec<(Candidate, crate::core::provider::Classification, Rc<Transcript>)>,
    now: i64,
) -> Result<Vec<persist::Pending>> {
    let mut groups: std::collections::BTreeMap<String, (crate::core::model::Metadata, Vec<_>)> = Default::default();
    for item in classified {
        let first_new = item.0.lines.iter().filter_map(|&i| messages.get(i)).find(|m| fresh_ids.contains(&m.id));
        let metadata = first_new.map(|m| m.metadata.clone()).unwrap_or_default();
        groups.entry(serde_json::to_string(&metadata)?).or_insert_with(|| (metadata, Vec::new())).1.push(item);
    }
    let mut built: Vec<persist::Pending> =
        groups.into_values().flat_map(|(metadata, items)| persist::build(session_id, messages, items, &metadata, now)).collect();
    // In the order they were said, as supersession reads them (the last
    // statement of a key wins), not grouped by their metadata's text.
    let at: std::collections::HashMap<&str, usize> = messages.iter().enumerate().map(|(i, m)| (m.id.as_str(), i)).collect();
    built.sort_by_key(|p| p.memory.source_message_ids.iter().filter_map(|id| at.get(id.as_str()).copied()).min().unwrap_or(usize::MAX));
    Ok(built)
}

/// Most bytes of text (and metadata) one window of a retry judges
/// together ([`retry_session`]); a message longer than this is judged
/// alone.
pub const RETRY_WINDOW_BYTES: usize = 4 << 20;

/// Re-runs the judging stages over a stored session, for the messages no
/// memory cites yet and those a model fault left partly judged (marked by
/// [`Store::mark_rejudge`]; what was stored from them already is found
/// stored and kept) (the `extract` job). Returns how many model faults
/// remain; zero means the job is done.
///
/// The session is read a window at a time, in order: at most a call's
/// messages ([`crate::core::api::MAX_MESSAGES_PER_INGEST`]) and
/// [`RETRY_WINDOW_BYTES`] of their texts, only windows holding a message
/// to judge. A session grows by a call's 16 MB at a time and has no
/// bound; read whole, a 64 MB one took the isolate's memory past 128 MB
/// on every try. A session within one window is judged whole, as before.
pub async fn retry_session(p: &Profile<'_>, session_id: &str) -> Result<usize> {
    let store = p.store();
    let sized = store.session_message_sizes(session_id)?;
    if sized.is_empty() {
        return Ok(0); // deleted meanwhile
    }
    let ids: Vec<String> = sized.iter().map(|(id, _)| id.clone()).collect();
    let cited = store.cited_messages(&ids)?;
    let marked = store.marked_rejudge(&ids)?;
    let fresh: HashSet<String> = ids.into_iter().filter(|id| !cited.contains(id) || marked.contains(id)).collect();
    if fresh.is_empty() {
        return Ok(0);
    }
    // A full profile waits for room before the model is asked (each try
    // would pay for judging what it cannot store).
    if let Some(count) = store.memory_count_near(p.limits.max_memories, 1)?.filter(|c| *c >= p.limits.max_memories) {
        return Err(Error::conflict(format!("{FULL}: it holds {count} memories and its limit is {}; the session waits for room", p.limits.max_memories)));
    }
    let mut faults = 0usize;
    for window in windows(&sized, crate::core::api::MAX_MESSAGES_PER_INGEST, RETRY_WINDOW_BYTES) {
        if window.iter().any(|id| fresh.contains(*id)) {
            faults = faults.saturating_add(retry_window(p, session_id, &window, &fresh, &marked).await?);
        }
    }
    Ok(faults)
}

/// The ids of `sized` in consecutive windows of at most `count` messages
/// and `bytes` of their texts (one message always), each cut as a page is
/// ([`crate::core::store::within_page`]).
fn windows(sized: &[(String, usize)], count: usize, bytes: usize) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    let mut rest = sized;
    while !rest.is_empty() {
        let (window, after) = rest.split_at(crate::core::store::within_page(rest, count, bytes).clamp(1, rest.len()));
        out.push(window.iter().map(|(id, _)| id.as_str()).collect());
        rest = after;
    }
    out
}

/// [`retry_session`]'s judging of one window of the session.
async fn retry_window(p: &Profile<'_>, session_id: &str, window: &[&str], fresh: &HashSet<String>, marked: &HashSet<String>) -> Result<usize> {
    let ids: Vec<String> = window.iter().map(|id| (*id).to_string()).collect();
    // Line indices are positions in this list, as on first ingest; a
    // message sent without a timestamp is dated when it was stored, as the
    // first ingest dated it (not when the retry runs).
    let messages: Vec<Message> = p
        .store()
        .messages_by_ids(&ids)?
        .into_iter()
        .enumerate()
        .map(|(i, mut m)| {
            m.position = i as i64;
            m.timestamp = m.timestamp.take().or_else(|| Some(m.created_at.clone()));
            m
        })
        .collect();
    if messages.is_empty() {
        return Ok(0); // deleted meanwhile
    }
    // The memories take the metadata their new messages were stored with
    // (calls of one session may have carried different metadata). Only
    // this window's marks are cleared once it is stored: a later window's
    // stay until it is judged.
    let marked: Vec<String> = ids.iter().filter(|id| marked.contains(*id)).cloned().collect();
    let judged = judge_and_store(p, session_id, &messages, fresh, MetadataOf::Messages, Judging::Retry { marked: &marked }).await?;
    // No room is the profile's state, not the model's: the job fails with
    // it (backs off, is parked and shown), its messages marked meanwhile.
    if judged.full > 0 {
        return Err(Error::conflict(format!(
            "{} memories wait for room: {}",
            judged.full,
            judged.dropped.iter().rev().find(|d| d.reason.starts_with(FULL)).map_or(FULL, |d| d.reason.as_str())
        )));
    }
    Ok(judged.faults)
}

/// Keeps candidates that cite a line of this conversation and rest on at
/// least one message this call added. Citations outside the conversation
/// are removed; a candidate left citing nothing is dropped with a record.
/// One resting only on messages stored by an earlier call is skipped
/// silently: it was extracted when those messages were new (chunks
/// overlap, and re-sent conversations repeat old messages).
pub fn cited_and_new(
    items: Vec<(Candidate, Rc<Transcript>)>,
    messages: &[Message],
    fresh_ids: &HashSet<String>,
) -> (Vec<(Candidate, Rc<Transcript>)>, Vec<Dropped>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (mut c, t) in items {
        c.lines.retain(|&i| i < messages.len());
        if c.lines.is_empty() {
            dropped.push(Dropped { content: c.content, reason: "cites no message of the conversation".into() });
        } else if c.lines.iter().any(|&i| messages.get(i).is_some_and(|m| fresh_ids.contains(&m.id))) {
            kept.push((c, t));
        }
    }
    (kept, dropped)
}

/// A call's messages as the store writes them: ids computed, line `i` at
/// position `i` (the store moves it to the session's next free position),
/// the timestamp as sent (none if none).
fn as_stored(messages: Vec<MessageInput>, ids: Vec<String>, metadata: &Metadata, session_id: &str, now: i64) -> Vec<Message> {
    let created_at = iso(now);
    messages
        .into_iter()
        .zip(ids)
        .enumerate()
        .map(|(i, (m, id))| Message {
            id,
            session_id: session_id.to_string(),
            role: m.role,
            content: m.content,
            timestamp: m.timestamp,
            position: i64::try_from(i).unwrap_or(i64::MAX),
            created_at: created_at.clone(),
            metadata: metadata.clone(),
        })
        .collect()
}
