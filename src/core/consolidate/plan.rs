//! Finding what to consolidate in a window of active memories: groups of
//! memories that say the same thing, contradict each other, were said in
//! one breath long ago, or are tasks nobody will pick up again. Pure: the
//! reasoner then decides each group ([`crate::core::provider::Reasoner::consolidate`]).
//!
//! The groups, in the order they are looked for (a memory joins one):
//! * **duplicates**: memories of one type whose content words (numbers
//!   aside) overlap by at least [`DUPLICATE_SIMILARITY`] (Jaccard, over
//!   stems) and state one value: the same numbers, as many "not"s, the
//!   same "before"/"after"-like words ([`text::statement_value`]);
//! * **contradictions**: two such memories whose values differ, said on
//!   different days ("The limit is 100" / a week later "The limit is
//!   200"): the later replaces the earlier, which supersession by topic
//!   key missed. More than [`MAX_SIMILAR`] alike are a template ("Rack 3
//!   is in hall 3"), not one thing restated, and are left alone;
//! * **siblings**: memories of one type drawn from exactly the same
//!   messages, said more than [`FOLD_AGE_DAYS`] ago: the fine-grained
//!   statements of one utterance, folded into one;
//! * **events**: events of one session and one date, said more than
//!   [`FOLD_AGE_DAYS`] ago, at least [`EVENTS_TO_FOLD`] of them: folded
//!   into one dated summary;
//! * **stale tasks**: tasks said more than [`TASK_STALE_DAYS`] ago, or
//!   that say they are done.
//!
//! What it does *not* do: it never groups across types, never touches a
//! memory that is not active, and never looks beyond its window (a run
//! walks the profile window by window).

use crate::core::ingest::supersede::{Reach, Said, PERSON};
use crate::core::model::{Memory, MemoryType, Owner};
use crate::core::text;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

pub use crate::core::text::DUPLICATE_SIMILARITY;
/// Memories alike in a group at most: more are a template, not one thing
/// restated.
pub const MAX_SIMILAR: usize = 8;
/// A content word shared by more memories of the window than this does
/// not propose pairs (it still counts in the similarity).
pub const COMMON_WORD: usize = 200;
/// Days after which fine-grained memories are folded.
pub const FOLD_AGE_DAYS: i64 = 30;
/// Events of one session and date folded into a summary, at least.
pub const EVENTS_TO_FOLD: usize = 3;
/// Members of one fold at most (a larger group is folded in parts).
pub const MAX_FOLD: usize = 8;
/// Characters of a folded memory's content at most.
pub const MAX_FOLD_CHARS: usize = 2000;
/// Days after which an open task is retired.
pub const TASK_STALE_DAYS: i64 = 30;
/// Words by which a task says it is finished.
const DONE_WORDS: &[&str] = &["done", "finished", "completed", "shipped", "merged", "closed", "resolved"];

const DAY_MILLIS: i64 = 86_400_000;

pub use crate::core::provider::{Group, GroupKind};

fn stems(m: &Memory) -> HashSet<String> {
    text::statement_stems(&m.content)
}

/// Its numbers, negations and bearings ([`text::statement_value`]):
/// alike in stems, memories that differ in it contradict each other.
fn value(m: &Memory) -> text::StatementValue {
    text::statement_value(&m.content)
}

/// The weight of each memory's word, by id
/// ([`crate::core::ingest::supersede::authority_of`]); a memory missing
/// from it is a person's.
pub type Authorities = HashMap<String, u8>;

/// The groups of `window` (active memories) at `now`, each memory's word
/// weighed as `authority` says (see [`duplicates_or_contradiction`]).
pub fn groups(window: &[Memory], now: i64, authority: &Authorities) -> Vec<Group> {
    let mut taken: HashSet<usize> = HashSet::default();
    let mut out = similar(window, &mut taken, authority);
    out.extend(siblings(window, now, &mut taken));
    out.extend(events(window, now, &mut taken));
    out.extend(stale_tasks(window, now, &mut taken));
    for g in &mut out {
        g.members.sort_by(|a, b| a.said_at().cmp(&b.said_at()).then_with(|| a.id.cmp(&b.id)));
    }
    out
}

/// Duplicates and contradictions: clusters of one type joined by pairs at
/// or above [`DUPLICATE_SIMILARITY`].
fn similar(window: &[Memory], taken: &mut HashSet<usize>, authority: &Authorities) -> Vec<Group> {
    let mut out = Vec::new();
    for members in alike(window) {
        // Many alike is a template ("rack 3 is in hall 3"), not one thing
        // restated: left alone.
        if members.len() < 2 || members.len() > MAX_SIMILAR {
            continue;
        }
        let ms: Vec<Memory> = members.iter().filter_map(|&i| window.get(i).cloned()).collect();
        if let Some(group) = duplicates_or_contradiction(ms, authority) {
            taken.extend(members.iter().copied());
            out.push(group);
        }
    }
    out
}

/// The clusters of `window` (indexes, each cluster in order, clusters by
/// their first member's root) that pairs of one type, not tasks, of one
/// [`Owner`], with content words overlapping by at least
/// [`DUPLICATE_SIMILARITY`] join.
/// Words in more than [`COMMON_WORD`] memories pair nothing.
fn alike(window: &[Memory]) -> Vec<Vec<usize>> {
    let sets: Vec<HashSet<String>> = window.iter().map(stems).collect();
    let mut by_word: HashMap<&str, Vec<usize>> = HashMap::default();
    for (i, s) in sets.iter().enumerate() {
        for w in s {
            by_word.entry(w.as_str()).or_default().push(i);
        }
    }
    let mut parent: Vec<usize> = (0..window.len()).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while let Some(&p) = parent.get(x) {
            if p == x {
                break;
            }
            let gp = parent.get(p).copied().unwrap_or(p);
            if let Some(slot) = parent.get_mut(x) {
                *slot = gp;
            }
            x = gp;
        }
        x
    }
    for (i, s) in sets.iter().enumerate() {
        let mut seen: HashSet<usize> = HashSet::default();
        for w in s {
            let Some(list) = by_word.get(w.as_str()) else { continue };
            if list.len() > COMMON_WORD {
                continue;
            }
            for &j in list.iter().filter(|&&j| j > i) {
                if !seen.insert(j) {
                    continue;
                }
                let (Some(a), Some(b)) = (window.get(i), window.get(j)) else { continue };
                if a.kind == b.kind
                    && a.kind != MemoryType::Task
                    && Owner::of(&a.metadata) == Owner::of(&b.metadata)
                    && sets.get(j).is_some_and(|t| text::jaccard(s, t) >= DUPLICATE_SIMILARITY)
                {
                    let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
                    if let Some(slot) = parent.get_mut(rj) {
                        *slot = ri;
                    }
                }
            }
        }
    }
    let mut clusters: HashMap<usize, Vec<usize>> = HashMap::default();
    for i in 0..window.len() {
        let r = find(&mut parent, i);
        clusters.entry(r).or_default().push(i);
    }
    let mut roots: Vec<usize> = clusters.keys().copied().collect();
    roots.sort_unstable();
    roots.into_iter().filter_map(|r| clusters.remove(&r)).collect()
}

/// A cluster of alike memories as a group: duplicates when they hold the
/// same value ([`value`]) and the same metadata; a contradiction when two keyed memories said on
/// different days hold different ones; otherwise none. Not when the
/// earlier is out of the later's [`Reach`], as at ingest: an agent
/// speaks about its conversation's matter, and two support calls' refund
/// references are two refunds.
fn duplicates_or_contradiction(ms: Vec<Memory>, authority: &Authorities) -> Option<Group> {
    let first = ms.first().map(value).unwrap_or_default();
    if ms.iter().all(|m| value(m) == first) {
        // The survivor keeps its own metadata: wordings with other metadata
        // would leave a filter on theirs finding nothing.
        if ms.windows(2).any(|w| matches!(w, [a, b] if a.metadata != b.metadata)) {
            return None;
        }
        let why = format!("{} memories say the same thing (content words overlap by at least {DUPLICATE_SIMILARITY})", ms.len());
        return Some(Group { kind: GroupKind::Duplicates, why, members: ms });
    }
    let [a, b] = ms.as_slice() else { return None };
    // A value restated differently on a later day: the later holds.
    let days = a.said_at().abs_diff(b.said_at()).checked_div(DAY_MILLIS.unsigned_abs()).unwrap_or(0);
    if !a.kind.is_keyed() || days < 1 {
        return None;
    }
    let later = if b.said_at() >= a.said_at() { b } else { a };
    let earlier = if std::ptr::eq(later, a) { b } else { a };
    fn said(m: &Memory) -> Said<'_> {
        Said { session: &m.session_id, content: &m.content }
    }
    if !Reach::of(authority.get(&later.id).copied().unwrap_or(PERSON)).reaches(said(later), said(earlier)) {
        return None;
    }
    Some(Group { kind: GroupKind::Contradiction, why: format!("the same statement with a different value, {days} days later"), members: ms })
}

/// What siblings share: type, sources, metadata (as text) and expiry.
type SiblingKey = (MemoryType, Vec<String>, String, Option<String>);

/// Siblings: one type, exactly the same source messages, said long ago.
fn siblings(window: &[Memory], now: i64, taken: &mut HashSet<usize>) -> Vec<Group> {
    let old = now.saturating_sub(FOLD_AGE_DAYS.saturating_mul(DAY_MILLIS));
    // One type, one set of sources, one metadata (an update may have
    // changed a sibling's): the fold keeps the metadata, so a filter that
    // found a member finds it. One expiry: a fold expires as a whole, so
    // words meant to expire would live on in one that never does.
    let mut by_source: HashMap<SiblingKey, Vec<usize>> = HashMap::default();
    for (i, m) in window.iter().enumerate() {
        if taken.contains(&i) || m.kind == MemoryType::Task || m.source_message_ids.is_empty() || m.said_at() > old {
            continue;
        }
        let mut sources = m.source_message_ids.clone();
        sources.sort();
        by_source.entry((m.kind, sources, metadata_text(m), m.expires_at.clone())).or_default().push(i);
    }
    folds(window, by_source.into_values().collect(), 2, GroupKind::Siblings, taken, |n| {
        format!("{n} statements drawn from the same message, said more than {FOLD_AGE_DAYS} days ago")
    })
}

/// Events of one session and date, said long ago.
fn events(window: &[Memory], now: i64, taken: &mut HashSet<usize>) -> Vec<Group> {
    let old = now.saturating_sub(FOLD_AGE_DAYS.saturating_mul(DAY_MILLIS));
    // One session, one date, one metadata, one expiry.
    let mut by_day: HashMap<(String, String, String, Option<String>), Vec<usize>> = HashMap::default();
    for (i, m) in window.iter().enumerate() {
        if taken.contains(&i) || m.kind != MemoryType::Event || m.said_at() > old {
            continue;
        }
        if let Some(d) = &m.event_date {
            by_day.entry((m.session_id.clone(), d.clone(), metadata_text(m), m.expires_at.clone())).or_default().push(i);
        }
    }
    folds(window, by_day.into_values().collect(), EVENTS_TO_FOLD, GroupKind::Events, taken, |n| {
        format!("{n} events of one session and date, more than {FOLD_AGE_DAYS} days ago")
    })
}

/// A memory's metadata as text: keys in order, so equal metadata is equal
/// text.
fn metadata_text(m: &Memory) -> String {
    serde_json::to_string(&m.metadata).unwrap_or_default()
}

/// Groups of at least `least`, in parts of at most [`MAX_FOLD`] members
/// and [`MAX_FOLD_CHARS`] of content, in window order.
fn folds(
    window: &[Memory],
    mut lists: Vec<Vec<usize>>,
    least: usize,
    kind: GroupKind,
    taken: &mut HashSet<usize>,
    why: impl Fn(usize) -> String,
) -> Vec<Group> {
    lists.sort();
    let mut out = Vec::new();
    for list in lists {
        let mut part: Vec<usize> = Vec::new();
        let mut chars = 0usize;
        let flush = |part: &mut Vec<usize>, out: &mut Vec<Group>, taken: &mut HashSet<usize>| {
            if part.len() >= least {
                taken.extend(part.iter().copied());
                out.push(Group { kind, members: part.iter().filter_map(|&i| window.get(i).cloned()).collect(), why: why(part.len()) });
            }
            part.clear();
        };
        for i in list {
            let len = window.get(i).map_or(0, |m| m.content.chars().count());
            if part.len() >= MAX_FOLD || chars.saturating_add(len) > MAX_FOLD_CHARS {
                flush(&mut part, &mut out, taken);
                chars = 0;
            }
            part.push(i);
            chars = chars.saturating_add(len).saturating_add(1);
        }
        flush(&mut part, &mut out, taken);
    }
    out
}

/// Tasks said long ago, or that say they are done.
fn stale_tasks(window: &[Memory], now: i64, taken: &mut HashSet<usize>) -> Vec<Group> {
    let old = now.saturating_sub(TASK_STALE_DAYS.saturating_mul(DAY_MILLIS));
    let mut out = Vec::new();
    for (i, m) in window.iter().enumerate() {
        if taken.contains(&i) || m.kind != MemoryType::Task {
            continue;
        }
        let done = text::tokens(&m.content).iter().any(|t| DONE_WORDS.contains(&t.as_str()));
        if done || m.said_at() <= old {
            taken.insert(i);
            let why = if done { "the task says it is done".to_string() } else { format!("an open task said more than {TASK_STALE_DAYS} days ago") };
            out.push(Group { kind: GroupKind::StaleTask, members: vec![m.clone()], why });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ingest::supersede::AGENT;

    const NOW: i64 = 1_776_247_200_000;

    fn mem(id: &str, kind: MemoryType, content: &str, days_ago: i64, sources: &[&str]) -> Memory {
        let mut m = Memory::sample(id, content);
        m.kind = kind;
        m.valid_from = Some(crate::core::time::iso(NOW - days_ago * DAY_MILLIS));
        m.source_message_ids = sources.iter().map(|s| s.to_string()).collect();
        m
    }

    #[test]
    fn test_rewordings_group_as_duplicates_and_differing_values_as_contradictions() {
        let w = vec![
            mem("a", MemoryType::Fact, "The user prefers dark mode in the editor.", 1, &["m1"]),
            mem("b", MemoryType::Fact, "The user prefers the dark mode in their editor.", 1, &["m2"]),
            mem("c", MemoryType::Fact, "The API rate limit is 100 requests per second.", 9, &["m3"]),
            mem("d", MemoryType::Fact, "The API rate limit is 200 requests per second.", 1, &["m4"]),
            mem("e", MemoryType::Fact, "Something else entirely about gardening.", 1, &["m5"]),
        ];
        let g = groups(&w, NOW, &Default::default());
        let kinds: Vec<(GroupKind, Vec<&str>)> = g.iter().map(|g| (g.kind, g.members.iter().map(|m| m.id.as_str()).collect())).collect();
        assert!(kinds.contains(&(GroupKind::Duplicates, vec!["a", "b"])), "{kinds:?}");
        assert!(kinds.contains(&(GroupKind::Contradiction, vec!["c", "d"])), "{kinds:?}");
        assert_eq!(kinds.len(), 2);
        // The same values said the same day, or many alike: left alone.
        let racks: Vec<Memory> = (0..20).map(|i| mem(&format!("r{i}"), MemoryType::Fact, &format!("Rack {i} sits in hall {i}."), 5, &[])).collect();
        assert!(groups(&racks, NOW, &Default::default()).is_empty());
    }

    #[test]
    fn test_an_agents_value_from_another_session_contradicts_nothing() {
        let call = |id: &str, session: &str, reference: &str, days_ago| Memory {
            session_id: session.into(),
            ..mem(id, MemoryType::Fact, &format!("Assistant: The refund reference is {reference}, on your statement within 5 days."), days_ago, &[id])
        };
        let w = vec![call("lamp", "lamp-call", "RF-100001", 9), call("kettle", "kettle-call", "RF-200002", 1)];
        let agents: Authorities = [("lamp".to_string(), AGENT), ("kettle".to_string(), AGENT)].into_iter().collect();
        assert!(groups(&w, NOW, &agents).is_empty(), "two calls' refunds");
        // Said by a person, or by the agent in the same session: the later holds.
        assert_eq!(groups(&w, NOW, &Default::default()).first().map(|g| g.kind), Some(GroupKind::Contradiction));
        let same: Vec<Memory> = w.iter().map(|m| Memory { session_id: "one-call".into(), ..m.clone() }).collect();
        assert_eq!(groups(&same, NOW, &agents).first().map(|g| g.kind), Some(GroupKind::Contradiction));
        // The agent's same advice said again on another day, dated
        // otherwise: within its reach, so the later holds.
        let advice = |id: &str, session: &str, date: &str, days_ago| Memory {
            session_id: session.into(),
            ..mem(id, MemoryType::Fact, &format!("Assistant: Keep notes, details are hard to recall around {date}."), days_ago, &[id])
        };
        let again = vec![advice("lamp", "lamp-call", "2026-05-01", 9), advice("kettle", "kettle-call", "2026-05-09", 1)];
        assert_eq!(groups(&again, NOW, &agents).first().map(|g| g.kind), Some(GroupKind::Contradiction));
    }

    #[test]
    fn test_only_old_statements_of_one_message_fold() {
        let w = vec![
            mem("a", MemoryType::Fact, "Maria paints on weekends.", 90, &["m1"]),
            mem("b", MemoryType::Fact, "Maria sells prints at the market.", 90, &["m1"]),
            mem("c", MemoryType::Fact, "Jon runs every morning.", 2, &["m2"]),
            mem("d", MemoryType::Fact, "Jon swims on Fridays.", 2, &["m2"]),
        ];
        let g = groups(&w, NOW, &Default::default());
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(g[0].kind, GroupKind::Siblings);
    }

    #[test]
    fn test_done_and_stale_tasks_are_found_and_fresh_ones_kept() {
        let w = vec![
            mem("a", MemoryType::Task, "Migrate the billing service; done now.", 1, &[]),
            mem("b", MemoryType::Task, "Write the quarterly report.", 45, &[]),
            mem("c", MemoryType::Task, "Fix the login bug.", 3, &[]),
        ];
        let found = groups(&w, NOW, &Default::default());
        let ids: Vec<&str> = found.iter().flat_map(|g| g.members.iter().map(|m| m.id.as_str())).collect();
        assert_eq!(ids, vec!["a", "b"]);
    }
}
