//! Building memory records and storing them, with their supersessions and
//! outbox jobs, in one transaction.
//!
//! Storing does not judge content (verification did): it drops memories
//! whose meaning is already stored and active, folds in-call restatements
//! into the memory they restate, applies supersession by key, inserts, and
//! queues vector work (the store queues an embedding for every active
//! non-task memory and a removal for every superseded one).

use crate::core::api::{self, MAX_MESSAGE_BYTES};
use crate::core::background::truncated;
use crate::core::dates;
use crate::core::error::{Error, Result};
use crate::core::ids;
use crate::core::ingest::supersede;
use crate::core::model::{Memory, Message, Metadata, Status};
use crate::core::provider::{Candidate, Classification, Transcript};
use crate::core::recall::directory::TurnDirectory;
use crate::core::store::{KeyProbe, Store};
use crate::core::time::iso;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// A memory ready to store, with its fingerprint.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    pub memory: Memory,
    pub fingerprint: String,
    /// Weight of its speaker ([`supersede::authority`]): the heaviest role
    /// among its source messages; a person when it has none (`remember`).
    pub authority: u8,
}

/// Turns classified candidates into memory records that hold what
/// `remember` and import accept ([`crate::core::api::validate_content`]):
/// a candidate with no visible character states nothing and is left out,
/// and a content or summary longer than [`MAX_MESSAGE_BYTES`] (a sentence
/// of a message at the limit, with its speaker and its dates written out,
/// or a model's answer) is cut at a character's boundary. The messages
/// keep the whole text.
pub fn build(session_id: &str, messages: &[Message], items: Vec<(Candidate, Classification, Rc<Transcript>)>, metadata: &Metadata, now: i64) -> Vec<Pending> {
    items
        .into_iter()
        .enumerate()
        .filter(|(_, (c, _, _))| c.content.chars().any(|ch| !api::is_invisible(ch)))
        .map(|(seq, (mut c, mut cls, t))| {
            c.content = truncated(std::mem::take(&mut c.content), MAX_MESSAGE_BYTES);
            cls.summary = truncated(std::mem::take(&mut cls.summary), MAX_MESSAGE_BYTES);
            let mut lines = c.lines.clone();
            lines.sort_unstable();
            lines.dedup();
            let sources: Vec<&Message> = lines.iter().filter_map(|&i| messages.get(i)).collect();
            let authority = supersede::authority_of(sources.iter().map(|m| m.role.as_str()));
            let source_message_ids: Vec<String> = sources.iter().map(|m| m.id.clone()).collect();
            // When it happened: as the reasoner dated it, else the first
            // day its text names, else the day it was said.
            let said_on = lines.iter().find_map(|&i| t.lines.iter().find(|l| l.index == i)).and_then(|l| l.date.clone());
            let event_date =
                c.event_date.clone().or_else(|| dates::event_date(&c.content, said_on.as_deref().and_then(crate::core::time::date_of))).or(said_on);
            let fingerprint = ids::fingerprint(cls.kind.as_str(), &c.content, metadata);
            // Valid from when it was said: the earliest source message's
            // time, else when it is stored.
            let said = sources.iter().filter_map(|m| m.timestamp.as_deref().and_then(crate::core::time::parse_millis)).min();
            Pending {
                memory: Memory {
                    id: ids::memory_id(now, &fingerprint, seq as u64),
                    kind: cls.kind,
                    key: cls.key,
                    summary: cls.summary,
                    content: c.content.clone(),
                    session_id: session_id.to_string(),
                    source_message_ids,
                    search_queries: cls.search_queries,
                    status: Status::Active,
                    supersedes: None,
                    superseded_by: None,
                    event_date,
                    created_at: iso(now),
                    updated_at: iso(now),
                    expires_at: None,
                    metadata: metadata.clone(),
                    valid_from: Some(iso(said.unwrap_or(now))),
                    valid_to: None,
                },
                fingerprint,
                authority,
            }
        })
        .collect()
}

/// Reopens (undoes) each live fold holding a member that one of
/// `memories` would supersede: the same key and owner, within the
/// speaker's reach (an agent's statement reaches its own session's). A
/// fold holds no key, so a new value could not supersede the old one
/// folded away, whose words stayed active in the fold. The fold's members
/// come back, to be superseded as usual; the next run may fold the others
/// again.
fn reopen_folds(store: &Store<'_>, memories: &[Memory], authority: &[u8]) -> Result<()> {
    let keys: Vec<&str> = memories.iter().filter_map(|m| m.key.as_deref()).collect();
    if keys.is_empty() {
        return Ok(());
    }
    let folded = store.folds_holding(&keys)?;
    let reached = |f: &crate::core::store::FoldedMember| {
        memories.iter().zip(authority).any(|(m, &weight)| {
            m.key.as_deref() == Some(f.key.as_str())
                && crate::core::model::Owner::of(&m.metadata) == f.owner
                && supersede::Reach::of(weight)
                    .reaches(supersede::Said { session: &m.session_id, content: &m.content }, supersede::Said { session: &f.session_id, content: &f.content })
        })
    };
    let folds: Vec<i64> = folded.iter().filter(|f| reached(f)).map(|f| f.fold).collect();
    if !folds.is_empty() {
        store.open_folds(folds, &|m| reaches_any_session(store, m))?;
    }
    Ok(())
}

/// Whether memory `m`'s speaker reaches the holders of its key in any
/// session (a user's statement does; an agent's reaches its own
/// session's): a member a fold's undo puts back is weighed against those.
pub fn reaches_any_session(store: &Store<'_>, m: &Memory) -> Result<bool> {
    let roles = store.message_roles(&m.source_message_ids.iter().collect::<Vec<_>>())?;
    let weight = supersede::authority_of(m.source_message_ids.iter().filter_map(|s| roles.get(s).map(String::as_str)));
    Ok(supersede::Reach::of(weight) == supersede::Reach::AnySession)
}

/// What [`store`] did.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Outcome {
    pub stored: Vec<Memory>,
    /// Memories already present (same meaning, still active): ids.
    pub existing: Vec<String>,
    pub superseded: usize,
    /// New memories folded into another of the same call (restatements).
    pub restated: usize,
}

/// What a judging leaves for the alarm, written with its memories: the
/// messages a model fault touched, marked to be judged again (those a
/// retry judged cleared first), and the session's `extract` job. In one
/// transaction with the memories, a call cut between the two leaves no
/// memory whose message's other statements are never judged again.
#[derive(Debug, Default)]
pub struct Followup<'a> {
    pub cleared: &'a [String],
    pub marked: &'a [String],
    pub retry_session: Option<&'a str>,
}

/// Stores memories in one transaction: drops those whose meaning is
/// already stored and active, folds restatements, supersedes by key,
/// inserts, queues vectors, and records the [`Followup`].
///
/// The stored memories sharing a pending memory's fingerprint or topic key
/// are found by SQL (the columns' indexes); `turns`, when its owner keeps
/// it, takes the memories written instead of reading them back.
pub fn store(store: &Store<'_>, turns: Option<&TurnDirectory>, pending: Vec<Pending>, followup: &Followup<'_>) -> Result<Outcome> {
    let (outcome, written) = store.transaction(|| {
        let pending = still_cited(store, pending)?;
        let Sorted { mut fresh, repeats, existing } = set_apart_stored(store, pending)?;
        free_ids(store, &mut fresh)?;
        let Fresh { mut memories, authority, fingerprints } = Fresh::take_apart(fresh);
        reopen_folds(store, &memories, &authority)?;
        let (plan, lapsed) = plan_supersession(store, &mut memories, &authority, &repeats)?;
        let mut items: Vec<(Memory, String)> = memories.into_iter().zip(fingerprints).collect();
        fold_restatements(&mut items, &plan.restatements);
        let in_call = close_in_call(&mut items, &plan.replacements);
        let written = store.insert_memories(&items.iter().map(|(m, f)| (m, f.as_str())).collect::<Vec<_>>())?;
        // A new value replacing several (a person's after an agent's of
        // the call, which it reaches further than; or a held value and a
        // chain whose last value was forgotten) names the first: the
        // others' chains merge into its line, by when each was said.
        let named: HashMap<&str, &str> = items.iter().filter_map(|(m, _)| m.supersedes.as_deref().map(|s| (m.id.as_str(), s))).collect();
        let mut merges = crate::core::store::Merges::default();
        for r in plan.replacements.iter().filter(|r| !in_call.contains(r.old.as_str())) {
            if named.get(r.new.as_str()) == Some(&r.old.as_str()) || !merges.merge(store, &r.old, &r.new)? {
                merges.finish(store)?;
                store.supersede(&r.old, &r.new)?;
            }
        }
        merges.finish(store)?;
        // Then each replacement ends the versions before it still valid
        // past when its value was said (one this call said out of time
        // order too).
        let replaced: Vec<(&str, &str)> = plan.replacements.iter().map(|r| (r.old.as_str(), r.new.as_str())).collect();
        store.close_earlier_versions_all(&replaced)?;
        record_followup(store, followup)?;
        let stored = items.into_iter().map(|(m, _)| m).collect();
        Ok((
            Outcome { stored, existing, superseded: plan.replacements.iter().filter(|r| !lapsed.contains(&r.old)).count(), restated: plan.restatements.len() },
            written,
        ))
    })?;
    if let Some(turns) = turns {
        // The directory takes them as written instead of reading them back.
        let by_id: HashMap<&str, &Memory> = outcome.stored.iter().map(|m| (m.id.as_str(), m)).collect();
        let fed: Vec<(i64, &Memory)> = written.iter().filter_map(|(rowid, id)| by_id.get(id.as_str()).map(|&m| (*rowid, m))).collect();
        turns.feed_memories(&fed);
    }
    Ok(outcome)
}

/// Only what the messages still stored say: the judging stages awaited
/// the model, and a session or a message may have been deleted meanwhile.
/// A memory keeps the sources that remain, and one drawn from deleted
/// messages alone is not stored.
fn still_cited(store: &Store<'_>, pending: Vec<Pending>) -> Result<Vec<Pending>> {
    let cited: Vec<String> = pending.iter().flat_map(|p| p.memory.source_message_ids.iter().cloned()).collect();
    let remaining = store.existing_message_ids(&cited)?;
    Ok(pending
        .into_iter()
        .filter_map(|mut p| {
            let had = p.memory.source_message_ids.len();
            p.memory.source_message_ids.retain(|id| remaining.contains(id));
            (had == 0 || !p.memory.source_message_ids.is_empty()).then_some(p)
        })
        .collect())
}

/// The pending memories, sorted by whether an active memory already says
/// them ([`set_apart_stored`]).
struct Sorted {
    /// Not stored yet, in the call's order.
    fresh: Vec<Pending>,
    /// Stored keyed memories said again: each keeps its place among the
    /// call's statements of its key (`supersede::plan_with_repeats`).
    repeats: Vec<supersede::Repeat>,
    /// The ids of the stored memories said again.
    existing: Vec<String>,
}

/// Sets apart the pending memories an active memory already says (the
/// same fingerprint), recording their messages as restatements of it:
/// should the messages it cites be deleted, it moves to these.
fn set_apart_stored(store: &Store<'_>, pending: Vec<Pending>) -> Result<Sorted> {
    // At most all of them: a Vec grown by doubling held 7 MB and its
    // half at once for 16,000 (`make bench-heap HEAP_BIG_REALLOCS=1`).
    let mut sorted = Sorted { fresh: Vec::with_capacity(pending.len()), repeats: Vec::new(), existing: Vec::new() };
    let fingerprints: Vec<&str> = pending.iter().map(|p| p.fingerprint.as_str()).collect();
    let stored = store.active_by_fingerprints(&fingerprints)?;
    let mut restated: Vec<(String, String)> = Vec::new();
    for p in pending {
        let Some(id) = stored.get(&p.fingerprint) else {
            sorted.fresh.push(p);
            continue;
        };
        restated.extend(p.memory.source_message_ids.iter().map(|m| (id.clone(), m.clone())));
        if let Some(key) = &p.memory.key {
            let owner = crate::core::model::Owner::of(&p.memory.metadata);
            sorted.repeats.push(supersede::Repeat { at: sorted.fresh.len(), id: id.clone(), key: key.clone(), owner, weight: p.authority });
        }
        sorted.existing.push(id.clone());
    }
    store.record_restatements(&restated.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect::<Vec<_>>())?;
    Ok(sorted)
}

/// The fresh memories taken apart, not copied: a call may store tens of
/// thousands.
struct Fresh {
    memories: Vec<Memory>,
    authority: Vec<u8>,
    fingerprints: Vec<String>,
}

impl Fresh {
    fn take_apart(fresh: Vec<Pending>) -> Fresh {
        let mut out =
            Fresh { memories: Vec::with_capacity(fresh.len()), authority: Vec::with_capacity(fresh.len()), fingerprints: Vec::with_capacity(fresh.len()) };
        for p in fresh {
            out.memories.push(p.memory);
            out.authority.push(p.authority);
            out.fingerprints.push(p.fingerprint);
        }
        out
    }
}

/// Which stored memories the new ones supersede by key, and which new
/// ones only restate another of the call: only holders of the same owner
/// (another user's value of a key is not replaced by this one's), within
/// the speaker's reach; the newest lapsed end of its key within that reach
/// ([`Store::lapsed_ends`]: a chain whose last value was forgotten or
/// expired) goes before it too, and the lapsed ends' ids come back (they
/// held no value, so none is counted superseded).
fn plan_supersession(
    store: &Store<'_>,
    memories: &mut [Memory],
    authority: &[u8],
    repeats: &[supersede::Repeat],
) -> Result<(supersede::Plan, HashSet<String>)> {
    let probes: Vec<KeyProbe<'_>> = memories
        .iter()
        .zip(authority)
        .filter_map(|(m, &weight)| {
            let key = m.key.as_deref()?;
            let any_session = supersede::Reach::of(weight) == supersede::Reach::AnySession;
            Some(KeyProbe { key, session_id: &m.session_id, undated_digest: crate::core::ids::undated_digest(&m.content), any_session })
        })
        .collect();
    let holders = store.active_key_holders(&probes)?;
    // The chains of the keys whose last value was forgotten or expired:
    // the newest such end within reach goes before the new value too.
    let mut keys: Vec<&str> = probes.iter().map(|p| p.key).collect();
    keys.sort_unstable();
    keys.dedup();
    let lapsed = store.lapsed_ends(&keys)?;
    drop(probes);
    let lookup = |key: &str, metadata: &crate::core::model::Metadata, new: supersede::Said<'_>, reach: supersede::Reach| -> Vec<String> {
        let owned = (key.to_string(), crate::core::model::Owner::of(metadata));
        let reaching = reach.from(new);
        let within = |h: &&crate::core::store::KeyHolder| reaching.reaches(supersede::Said { session: &h.session_id, content: &h.content });
        let held = holders.get(&owned).into_iter().flatten().filter(within);
        let end = lapsed.get(&owned).into_iter().flatten().find(|e| within(e));
        held.chain(end).map(|h| h.id.clone()).collect()
    };
    let plan = supersede::plan_with_repeats(memories, authority, repeats, &lookup);
    let lapsed_ids: HashSet<String> = lapsed.into_values().flatten().map(|e| e.id).collect();
    Ok((plan, lapsed_ids))
}

/// Within one call, an earlier memory replaced by a later one is stored
/// already superseded: until its successor was said, never before it was;
/// one that a stored memory said again replaced held not at all (an empty
/// interval). The ids so closed.
fn close_in_call(items: &mut [(Memory, String)], replacements: &[supersede::Replacement]) -> HashSet<String> {
    let new_ids: HashSet<&str> = items.iter().map(|(m, _)| m.id.as_str()).collect();
    let in_call: HashMap<String, String> = replacements.iter().filter(|r| new_ids.contains(r.old.as_str())).map(|r| (r.old.clone(), r.new.clone())).collect();
    let valid_from: HashMap<String, Option<String>> = items.iter().map(|(m, _)| (m.id.clone(), m.valid_from.clone())).collect();
    for (m, _) in items.iter_mut() {
        if let Some(next) = in_call.get(&m.id) {
            m.status = Status::Superseded;
            m.superseded_by = Some(next.clone());
            let since = m.said_from().to_string();
            m.valid_to = Some(valid_from.get(next).cloned().flatten().map_or(since.clone(), |to| to.max(since)));
        }
    }
    in_call.into_keys().collect()
}

/// Records what the judging left for the alarm ([`Followup`]).
fn record_followup(store: &Store<'_>, followup: &Followup<'_>) -> Result<()> {
    store.clear_rejudge(followup.cleared)?;
    store.mark_rejudge(followup.marked)?;
    if let Some(session_id) = followup.retry_session {
        store.enqueue_unless_waiting(&crate::core::jobs::Work::Extract { session_id: session_id.to_string() })?;
    }
    Ok(())
}

/// Most other ids [`free_ids`] tries for one memory.
const ID_TRIES: u64 = 16;

/// Gives each pending memory whose id a stored memory already holds the
/// next free one. Ids come from the time and the fingerprint, so the same
/// statement said again within one millisecond, after the first left the
/// active ones (superseded, or its metadata changed), would otherwise meet
/// the first's id and its insert be ignored.
fn free_ids(store: &Store<'_>, fresh: &mut [Pending]) -> Result<()> {
    let ids: Vec<String> = fresh.iter().map(|p| p.memory.id.clone()).collect();
    let taken = store.memory_ids_among(&ids)?;
    if taken.is_empty() {
        return Ok(());
    }
    let mut used: HashSet<String> = taken.iter().cloned().chain(ids).collect();
    for (i, p) in (0u64..).zip(fresh.iter_mut()).filter(|(_, p)| taken.contains(&p.memory.id)) {
        let id = next_free_id(store, &p.fingerprint, i, &used)?;
        used.insert(id.clone());
        p.memory.id = id;
    }
    Ok(())
}

/// A memory id for `fingerprint` at the store's time that no stored
/// memory and none of `used` holds (the `i`-th of its batch).
pub fn next_free_id(store: &Store<'_>, fingerprint: &str, i: u64, used: &HashSet<String>) -> Result<String> {
    let candidates: Vec<String> = (1..=ID_TRIES).map(|k| ids::memory_id(store.now(), fingerprint, (k << 32) | i)).filter(|id| !used.contains(id)).collect();
    let stored = store.memory_ids_among(&candidates)?;
    candidates.into_iter().find(|id| !stored.contains(id)).ok_or_else(|| Error::storage("no free id for a new memory"))
}

/// Removes restating memories, adding their source messages to the
/// memory each restates.
fn fold_restatements(items: &mut Vec<(Memory, String)>, restatements: &[supersede::Restatement]) {
    if restatements.is_empty() {
        return;
    }
    let folded: HashMap<&str, &str> = restatements.iter().map(|r| (r.id.as_str(), r.kept.as_str())).collect();
    let mut extra: HashMap<String, Vec<String>> = HashMap::new();
    items.retain(|(m, _)| match folded.get(m.id.as_str()) {
        Some(kept) => {
            extra.entry(kept.to_string()).or_default().extend(m.source_message_ids.iter().cloned());
            false
        }
        None => true,
    });
    for (m, _) in items.iter_mut() {
        for id in extra.remove(&m.id).unwrap_or_default() {
            if !m.source_message_ids.contains(&id) {
                m.source_message_ids.push(id);
            }
        }
    }
}
