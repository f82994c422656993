//! Import: a parsed file written in one transaction, records already held
//! left as they are, and the file's versions joined to the profile's.

use super::parse::check_links;
use super::{ConsolidationEntry, ImportReport, Parsed};
use crate::core::error::{Error, Result};
use crate::core::ids;
use crate::core::model::Memory;
use crate::core::store::Store;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Names back, in the profile, each written version the file records as
/// superseded by a memory the profile held already (an export imported
/// back after that version was deleted here): its chain and the held
/// one's merge into one line in the order they were said
/// ([`Store::merge_versions`]), not a version superseded by one that
/// supersedes another. One whose chain shares a version with the held
/// one's is left as the file has it; one naming a held memory of another
/// owner is refused (400), the import writing nothing.
fn join_held_successors(store: &Store<'_>, file: &[Memory], written: &HashSet<&str>) -> Result<()> {
    let mut joins: Vec<(&str, &str)> = Vec::new();
    for m in file.iter().filter(|m| written.contains(m.id.as_str())) {
        let Some(next) = m.superseded_by.as_deref().filter(|n| !written.contains(n)) else { continue };
        let Some(held) = store.get_memory(next)? else { continue };
        if held.supersedes.as_deref() == Some(m.id.as_str()) {
            continue;
        }
        // A chain is one owner's values (as `update` keeps it).
        if crate::core::model::Owner::of(&held.metadata) != crate::core::model::Owner::of(&m.metadata) {
            return Err(Error::invalid(format!(
                "import: memory {}'s supersededBy names memory {next}, which the profile holds under another owner (agentId, userId): a version chain is one owner's values",
                m.id
            )));
        }
        joins.push((&m.id, next));
    }
    // Those naming one held memory are merged into its line together
    // (each line written once, however many join it).
    joins.sort_by_key(|&(_, next)| next);
    let mut merges = crate::core::store::Merges::default();
    for (id, next) in joins {
        merges.release(store, id)?;
        store.unlink_successor(id)?;
        if !merges.merge(store, id, next)? {
            merges.finish(store)?;
            store.link_successor(id, next)?;
        }
    }
    merges.finish(store)
}

/// Leaves one active value of each key per owner, as far as its speaker
/// reaches, where the file's active memories meet the profile's by key
/// rather than by a version link (two the file records active are left
/// so, whether this import or an earlier one wrote them: an export's are
/// as ingest left them, by the order they arrived in): the one said later
/// supersedes the other, when its speaker reaches it (a person's word
/// any session's, an agent's its own session's or its own words said
/// again, dates aside: [`crate::core::ingest::supersede::Reach`]), as
/// ingest would have left them had the two been said to this profile in
/// that order. At the same instant the profile's own stays. `written`:
/// the file's memories this import wrote; the others were present already
/// and are left as they are.
///
/// With no active holder, the key's lapsed end ([`Store::lapsed_ends`])
/// the profile held is weighed in its place: a value said before it goes
/// before it, one said after it after it, one line either way.
///
/// A key's holders are read once for all the file's values of it, and
/// each value is weighed against the holders its reach or theirs can
/// join (found by session and by words), not against every holder: an
/// agent's key said in each of thousands of support calls has as many
/// active holders.
fn settle_keys(store: &Store<'_>, file: &[Memory], written: &HashSet<&str>) -> Result<()> {
    use crate::core::model::{Owner, Status};
    let mut groups: std::collections::BTreeMap<(&str, Owner), Vec<&str>> = Default::default();
    for m in file.iter().filter(|m| m.status == Status::Active && written.contains(m.id.as_str())) {
        if let Some(key) = m.key.as_deref() {
            groups.entry((key, Owner::of(&m.metadata))).or_default().push(&m.id);
        }
    }
    let recorded: HashSet<&str> = file.iter().filter(|m| m.status == Status::Active).map(|m| m.id.as_str()).collect();
    for ((key, owner), arriving) in groups {
        let probe = crate::core::store::KeyProbe { key, session_id: "", undated_digest: String::new(), any_session: true };
        let mut held: Vec<String> =
            store.active_key_holders(&[probe])?.remove(&(key.to_string(), owner.clone())).unwrap_or_default().into_iter().map(|h| h.id).collect();
        if held.iter().all(|id| written.contains(id.as_str())) {
            // No active value but the file's: the chain's lapsed end
            // (forgotten or expired) is weighed as a holder, as ingest
            // weighs it.
            let lapsed = store.lapsed_ends(&[key])?.remove(&(key.to_string(), owner)).unwrap_or_default();
            held.extend(lapsed.into_iter().map(|e| e.id).find(|id| !written.contains(id.as_str())));
        }
        let mut versions = Versions::read(store, store.memories_by_ids(&held)?, written, &recorded)?;
        let mut arriving: Vec<usize> = arriving.iter().filter_map(|id| versions.at.get(*id).copied()).collect();
        arriving.sort_by_key(|&i| versions.rank(i));
        // Each line the key's values join is written once, whatever
        // joins it ([`crate::core::store::Merges`]).
        let mut merges = crate::core::store::Merges::default();
        for m in arriving {
            versions.settle(store, &mut merges, m)?;
        }
        merges.finish(store)?;
    }
    Ok(())
}

/// The active holders of one key and owner, as [`settle_keys`] weighs
/// them: who said each (a person reaches any session), and where to find
/// those an agent's word reaches (its session, its words undated).
///
/// Those a file's value is weighed against are kept in the order they
/// were said, each set by who may reach them, and leave every set once
/// superseded: a value visits only those it supersedes, and then the
/// first later one that reaches it. (Visiting every holder for every
/// arriving value cost 21 s for a file of 31,500 values of one key beside
/// 27,900 held.)
struct Versions {
    memories: Vec<Memory>,
    person: Vec<bool>,
    undated: Vec<String>,
    active: Vec<bool>,
    at: HashMap<String, usize>,
    /// Each one's place in the order they were said ([`Versions::read`]).
    ranks: Vec<usize>,
    /// Those a file's value is weighed against, still active, by (rank,
    /// index): all but the ones the file records active (two of those
    /// are as its profile left them); and the same by session, by words
    /// undated, and the persons' alone.
    live: Live,
}

/// Values by the order they were said: (rank, index).
type Ranked = BTreeSet<(usize, usize)>;

/// The weighed values still active, as [`Versions`] finds them.
#[derive(Default)]
struct Live {
    all: Ranked,
    persons: Ranked,
    by_session: HashMap<String, Ranked>,
    by_words: HashMap<String, Ranked>,
}

impl Versions {
    fn read(store: &Store<'_>, memories: Vec<Memory>, written: &HashSet<&str>, recorded: &HashSet<&str>) -> Result<Versions> {
        use crate::core::ingest::supersede::{authority_of, Reach};
        let sources: Vec<&String> = memories.iter().flat_map(|m| &m.source_message_ids).collect();
        let roles = store.message_roles(&sources)?;
        let person: Vec<bool> = memories
            .iter()
            .map(|m| Reach::of(authority_of(m.source_message_ids.iter().filter_map(|s| roles.get(s).map(String::as_str)))) == Reach::AnySession)
            .collect();
        let undated: Vec<String> = memories.iter().map(|m| ids::undated_digest(&m.content)).collect();
        // Said later, or at the same instant the profile's own (one this
        // import did not write); then by id.
        let said: Vec<(i64, bool, &str)> = memories.iter().map(|m| (m.said_at(), !written.contains(m.id.as_str()), m.id.as_str())).collect();
        let mut ordered: Vec<usize> = (0..memories.len()).collect();
        ordered.sort_by(|&a, &b| said.get(a).cmp(&said.get(b)));
        let mut ranks = vec![0; memories.len()];
        for (rank, &i) in ordered.iter().enumerate() {
            if let Some(r) = ranks.get_mut(i) {
                *r = rank;
            }
        }
        let mut live = Live::default();
        for (i, (m, words)) in memories.iter().zip(&undated).enumerate().filter(|(_, (m, _))| !recorded.contains(m.id.as_str())) {
            let at = (ranks.get(i).copied().unwrap_or(0), i);
            live.all.insert(at);
            if person.get(i) == Some(&true) {
                live.persons.insert(at);
            }
            live.by_session.entry(m.session_id.clone()).or_default().insert(at);
            live.by_words.entry(words.clone()).or_default().insert(at);
        }
        Ok(Versions {
            at: memories.iter().enumerate().map(|(i, m)| (m.id.clone(), i)).collect(),
            active: vec![true; memories.len()],
            memories,
            person,
            undated,
            ranks,
            live,
        })
    }

    /// Its place in the order they were said.
    fn rank(&self, i: usize) -> usize {
        self.ranks.get(i).copied().unwrap_or(0)
    }

    fn is_person(&self, i: usize) -> bool {
        self.person.get(i).copied().unwrap_or(true)
    }

    /// The sets of weighed values a word of `m`'s speaker reaches, or
    /// that reach it (by session and by words undated).
    fn near(&self, m: usize) -> [Option<&Ranked>; 2] {
        let (Some(memory), Some(words)) = (self.memories.get(m), self.undated.get(m)) else { return [None, None] };
        [self.live.by_session.get(&memory.session_id), self.live.by_words.get(words)]
    }

    /// Weighs the file's value `m` against the holders either may reach,
    /// oldest first, as they would have been said: it supersedes the older
    /// ones it reaches (a person's word any, an agent's those of its
    /// session or its words), then the first newer one that reaches it (a
    /// person's, or one of its session or its words) supersedes it.
    fn settle(&mut self, store: &Store<'_>, merges: &mut crate::core::store::Merges, m: usize) -> Result<()> {
        if !self.active.get(m).copied().unwrap_or(false) {
            return Ok(());
        }
        let here = (self.rank(m), m);
        let mut older: Vec<(usize, usize)> = if self.is_person(m) {
            self.live.all.range(..here).copied().collect()
        } else {
            self.near(m).into_iter().flatten().flat_map(|set| set.range(..here).copied()).collect()
        };
        older.sort_unstable();
        older.dedup();
        for (_, o) in older {
            if o != m {
                self.supersede(store, merges, o, m)?;
            }
        }
        // The newer ones that reach it, in the order they were said, until
        // one supersedes it.
        let mut after = here;
        while self.active.get(m).copied().unwrap_or(false) {
            let [session, words] = self.near(m);
            let next = [Some(&self.live.persons), session, words]
                .into_iter()
                .flatten()
                .filter_map(|set| set.range((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded)).next().copied())
                .min();
            let Some(next) = next else { break };
            after = next;
            if next.1 != m {
                self.supersede(store, merges, m, next.1)?;
            }
        }
        Ok(())
    }

    /// `newer` supersedes `older`: the older one's chain and the newer
    /// one's made one line by when each version was said, not left beside
    /// a version the newer one replaced (either may carry a history).
    fn supersede(&mut self, store: &Store<'_>, merges: &mut crate::core::store::Merges, older: usize, newer: usize) -> Result<()> {
        let (Some(n), Some(o)) = (self.memories.get(newer), self.memories.get(older)) else { return Ok(()) };
        let inserted = merges.merge(store, &o.id, &n.id)?;
        if inserted || {
            merges.finish(store)?;
            store.supersede_if_active(&o.id, &n.id)?
        } {
            if !inserted {
                store.link_versions(&o.id, &n.id)?;
            }
            self.retire(older);
        }
        Ok(())
    }

    /// `i` superseded: no longer weighed.
    fn retire(&mut self, i: usize) {
        if let Some(a) = self.active.get_mut(i) {
            *a = false;
        }
        let at = (self.rank(i), i);
        let (Some(memory), Some(words)) = (self.memories.get(i), self.undated.get(i)) else { return };
        self.live.all.remove(&at);
        self.live.persons.remove(&at);
        if let Some(set) = self.live.by_session.get_mut(&memory.session_id) {
            set.remove(&at);
        }
        if let Some(set) = self.live.by_words.get_mut(words) {
            set.remove(&at);
        }
    }
}

/// The file's memories with their fingerprints, but for an active one
/// whose statement the profile holds active already under another id
/// (both profiles were given the same conversation): it is not written
/// twice, as ingest does not store a statement said again, and the
/// messages it cites are recorded as restating the held memory. One that
/// another record of the file names (a version, a restatement, a
/// consolidation), or that carries what the holder does not (a version
/// link, an expiry, a key it lacks; a holder that expires) is written as
/// it is.
#[allow(clippy::type_complexity)] // the pairs insert_memories takes, and the restatements
fn not_held_already<'p>(store: &Store<'_>, p: &'p Parsed, fingerprints: &'p [String]) -> Result<(Vec<(&'p Memory, &'p str)>, Vec<(String, &'p str)>)> {
    let in_file: HashSet<&str> = p.memories.iter().map(|m| m.id.as_str()).collect();
    let named: HashSet<&str> = p
        .memories
        .iter()
        .flat_map(|m| m.supersedes.iter().chain(&m.superseded_by))
        .chain(p.restatements.iter().map(|r| &r.memory_id))
        .chain(p.consolidations.iter().flat_map(ConsolidationEntry::involved))
        .map(String::as_str)
        .collect();
    let held = store.active_by_fingerprints(&fingerprints.iter().map(String::as_str).collect::<Vec<_>>())?;
    let (mut fresh, mut restated) = (Vec::new(), Vec::new());
    for (m, f) in p.memories.iter().zip(fingerprints) {
        // Only a plain statement: one with a version link, an expiry or a
        // key the holder lacks carries what the holder does not say.
        let plain = m.status == crate::core::model::Status::Active
            && !named.contains(m.id.as_str())
            && m.supersedes.is_none()
            && m.superseded_by.is_none()
            && m.expires_at.is_none();
        let holder = match held.get(f).filter(|h| plain && !in_file.contains(h.as_str())) {
            Some(h) => store.get_memory(h)?.filter(|held| (m.key.is_none() || held.key == m.key) && held.expires_at.is_none()).map(|held| held.id),
            None => None,
        };
        match holder {
            Some(h) => restated.extend(m.source_message_ids.iter().map(|s| (h.clone(), s.as_str()))),
            None => fresh.push((m, f.as_str())),
        }
    }
    Ok((fresh, restated))
}

/// How many of a parsed file's memories an import would write now: those
/// the profile holds neither by id nor, active, by statement
/// ([`not_held_already`]).
pub fn adds(store: &Store<'_>, p: &Parsed) -> Result<usize> {
    let fingerprints: Vec<String> = p.memories.iter().map(|m| ids::fingerprint(m.kind.as_str(), &m.content, &m.metadata)).collect();
    let (fresh, _) = not_held_already(store, p, &fingerprints)?;
    let held = store.existing_memory_ids(&fresh.iter().map(|(m, _)| m.id.as_str()).collect::<Vec<_>>())?;
    Ok(fresh.iter().filter(|(m, _)| !held.contains(m.id.as_str())).count())
}

/// Writes a parsed file, its links checked against the profile as it is
/// now. Call inside a transaction.
pub fn import(store: &Store<'_>, p: &Parsed) -> Result<ImportReport> {
    check_links(Some(store), p)?;
    let before = store.existing_message_ids(&p.messages.iter().map(|m| m.id.clone()).collect::<Vec<_>>())?;
    store.put_messages(&p.messages)?;
    let fingerprints: Vec<String> = p.memories.iter().map(|m| ids::fingerprint(m.kind.as_str(), &m.content, &m.metadata)).collect();
    let (fresh, restated_held) = not_held_already(store, p, &fingerprints)?;
    // insert_memories queues an embedding for active, non-task memories.
    let memories = store.insert_memories(&fresh)?;
    // A new active version of a memory the profile holds active (the file
    // a later export of a profile this one was copied from): the held one
    // is superseded by it, as ingest would have left them, not two active
    // versions of one thing. The file's own record of the held one was
    // skipped with the rest already present.
    let written: HashSet<&str> = memories.iter().map(|(_, id)| id.as_str()).collect();
    for m in p.memories.iter().filter(|m| m.status == crate::core::model::Status::Active && written.contains(m.id.as_str())) {
        if let Some(old) = m.supersedes.as_deref().filter(|old| !written.contains(old)) {
            // Said before the versions it now follows, it ends them when
            // it was said, as ingest would have.
            if store.supersede_if_active(old, &m.id)? {
                store.close_earlier_versions(old, &m.id)?;
            }
        }
    }
    join_held_successors(store, &p.memories, &written)?;
    settle_keys(store, &p.memories, &written)?;
    let restated: Vec<(&str, &str)> =
        p.restatements.iter().map(|r| (r.memory_id.as_str(), r.message_id.as_str())).chain(restated_held.iter().map(|(h, s)| (h.as_str(), *s))).collect();
    store.record_restatements(&restated)?;
    let withheld: Vec<(&str, &str)> = p.withheld.iter().map(|w| (w.message_id.as_str(), w.fingerprint.as_str())).collect();
    store.record_withheld(&withheld)?;
    // A record is written back with the memories it involves: one touching
    // a memory the profile held already (left as it is, so perhaps not as
    // the record's copies have it) is left out, or an undo would write the
    // file's copy over the profile's memory.
    let mut standing: Vec<&ConsolidationEntry> = p.consolidations.iter().filter(|c| c.involved().all(|id| written.contains(id.as_str()))).collect();
    standing.sort_by_key(|c| c.id);
    let mut consolidations_left_out = p.consolidations.len().saturating_sub(standing.len());
    for c in standing {
        if !store.put_consolidation(&c.record(), &c.before, &c.created)? {
            consolidations_left_out = consolidations_left_out.saturating_add(1);
        }
    }
    Ok(ImportReport { messages: p.messages.len().saturating_sub(before.len()), memories: memories.len(), consolidations_left_out })
}
