//! Version chains around values forgotten, expired or said by an agent:
//! inputs a review found breaking one line of versions per key and owner
//! (each superseded by at most one other, named back; `asOf` finding at
//! most one value at any instant; a deletion as if never said).

mod support;

use agent_memory::core::api::{IngestRequest, ListRequest, ListStatus};
use agent_memory::core::model::{Memory, MessageInput, Status};
use agent_memory::core::ops::Profile;
use support::{block_on, database, with_profile, APRIL_15, DAY};

fn say_as(p: &Profile<'_>, role: &str, session: &str, user: Option<&str>, content: &str, at: &str) -> Memory {
    let metadata = match user {
        Some(u) => serde_json::from_value(serde_json::json!({ "userId": u })).unwrap(),
        None => Default::default(),
    };
    let r = block_on(p.ingest(IngestRequest {
        messages: vec![MessageInput { role: role.into(), content: content.into(), timestamp: Some(at.into()) }],
        session_id: Some(session.into()),
        metadata,
    }))
    .unwrap();
    r.memories.into_iter().next().unwrap_or_else(|| panic!("a memory of {content}"))
}

fn every(p: &Profile<'_>) -> Vec<Memory> {
    p.list(ListRequest { limit: Some(1000), status: Some(ListStatus::All), ..ListRequest::default() }).unwrap().memories
}

fn as_of(p: &Profile<'_>, instant: &str, marker: &str) -> Vec<String> {
    let req: ListRequest = serde_json::from_value(serde_json::json!({ "asOf": instant, "limit": 1000 })).unwrap();
    p.list(req).unwrap().memories.into_iter().filter(|m| m.content.contains(marker)).map(|m| m.content).collect()
}

/// A person's backdated value with no active holder of ITS owner, while
/// another owner holds the key: it should go after its own lapsed end.
#[test]
fn test_a_value_goes_after_its_owners_forgotten_end_when_another_owner_holds_the_key() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        say_as(p, "user", "a1", Some("u1"), "My favorite fruit is apple.", "2024-01-01T10:00:00Z");
        let cherry = say_as(p, "user", "a2", Some("u1"), "My favorite fruit is cherry.", "2024-01-10T10:00:00Z");
        p.forget(&cherry.id).unwrap();
        say_as(p, "user", "b1", Some("u2"), "My favorite fruit is kiwi.", "2024-01-02T10:00:00Z");
        let banana = say_as(p, "user", "a3", Some("u1"), "My favorite fruit is banana.", "2024-01-05T10:00:00Z");
        let banana = p.get(&banana.id).unwrap().memory;
        let u1: Vec<String> = as_of(p, "2024-01-07T12:00:00Z", "fruit").into_iter().filter(|c| !c.contains("kiwi")).collect();
        assert_eq!(banana.supersedes.as_deref(), Some(cherry.id.as_str()), "goes after u1's lapsed end");
        assert_eq!(u1.len(), 1, "one u1 value at 01-07: {u1:?}");
    });
}

/// An expired value superseded by a backdated value whose session is
/// then deleted: as if never said, the expired value is valid again
/// until it expired.
#[test]
fn test_deleting_the_successor_of_an_expired_value_gives_it_back_its_time() {
    let sql = database();
    let apple = with_profile(&sql, APRIL_15, |p| {
        let req = serde_json::from_value(serde_json::json!({
            "content": "My favorite fruit is apple.", "key": "user.favorite_fruit", "ttlSeconds": 10 * 86_400
        }))
        .unwrap();
        block_on(p.remember(req)).unwrap()
    });
    with_profile(&sql, APRIL_15 + 20 * DAY, |p| {
        block_on(p.drain()).unwrap();
        let a = p.get(&apple.id).unwrap().memory;
        assert_eq!(a.status, Status::Expired);
        assert_eq!(as_of(p, "2026-04-20T12:00:00Z", "fruit"), vec!["My favorite fruit is apple.".to_string()], "before: apple held 04-20");
        let banana = say_as(p, "user", "late", None, "My favorite fruit is banana.", "2026-04-18T10:00:00Z");
        assert_eq!(p.get(&banana.id).unwrap().memory.supersedes.as_deref(), Some(apple.id.as_str()));
        p.delete_session("late").unwrap();
        let a = p.get(&apple.id).unwrap().memory;
        let held = as_of(p, "2026-04-20T12:00:00Z", "fruit");
        assert_eq!(a.valid_to, None, "as if banana was never said");
        assert_eq!(held.len(), 1, "apple held on 04-20 as before");
    });
}

/// An agent's values in ONE session: the latest forgotten, then a
/// backdated one in the same session. With the latest active it would
/// supersede it and end the earlier one; forgotten, it starts a chain of
/// its own and asOf finds two values of the key.
#[test]
fn test_an_agents_value_goes_after_its_sessions_forgotten_value() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let line = |n: &str| format!("The refund reference is RF-{n}, and it should reach your card within five days.");
        let first = say_as(p, "assistant", "call", None, &line("100001"), "2024-01-01T10:00:00Z");
        let second = say_as(p, "assistant", "call", None, &line("100009"), "2024-01-10T10:00:00Z");
        assert_eq!(p.get(&first.id).unwrap().memory.superseded_by.as_deref(), Some(second.id.as_str()), "same session: superseded");
        p.forget(&second.id).unwrap();
        say_as(p, "assistant", "call", None, &line("100005"), "2024-01-05T10:00:00Z");
        let at = as_of(p, "2024-01-07T12:00:00Z", "refund reference");
        assert!(at.len() <= 1, "two values of one key in one session at 01-07: {at:?}");
    });
}

/// Forgotten middle version, then the session of the version after it
/// deleted: the forgotten one keeps the end its deleted successor gave it.
#[test]
fn test_a_forgotten_version_loses_the_end_its_deleted_successor_gave_it() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        say_as(p, "user", "s0", None, "My favorite fruit is apple.", "2024-01-01T10:00:00Z");
        let b = say_as(p, "user", "s1", None, "My favorite fruit is banana.", "2024-01-05T10:00:00Z");
        say_as(p, "user", "s2", None, "My favorite fruit is cherry.", "2024-01-10T10:00:00Z");
        p.forget(&b.id).unwrap();
        p.delete_session("s2").unwrap();
        let b = p.get(&b.id).unwrap().memory;
        assert_eq!(b.valid_to, None, "as if cherry was never said");
    });
}

/// An import whose (edited) record names as the version after it a held
/// memory of another owner is refused (400) and writes nothing: a chain
/// is one owner's values, as `update` keeps it.
#[test]
fn test_an_import_joining_a_version_to_another_owners_chain_is_refused() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let apple = say_as(p, "user", "s0", Some("u1"), "My favorite fruit is apple.", "2024-01-01T10:00:00Z");
        let cherry = say_as(p, "user", "s1", Some("u1"), "My favorite fruit is cherry.", "2024-01-10T10:00:00Z");
        let kiwi = say_as(p, "user", "s2", Some("u2"), "My favorite fruit is kiwi.", "2024-01-03T10:00:00Z");
        let export = p.export(Default::default()).unwrap();
        p.delete_session("s0").unwrap();
        let before = every(p);
        let edited: String = export
            .lines()
            .map(|l| if l.contains(&format!("\"id\":\"{}\"", apple.id)) { l.replace(&cherry.id, &kiwi.id) } else { l.to_string() })
            .collect::<Vec<_>>()
            .join("\n");
        assert_ne!(edited, export, "the edit took");
        let e = p.import(&edited).unwrap_err();
        assert_eq!(e.status(), 400, "{e}");
        assert!(e.message().contains("another owner"), "{e}");
        assert_eq!(every(p), before, "nothing written");
    });
}

// ---- an agent's statement keyed as the user's (as a model may key it) ----

fn one_subject<T>(sql: &support::NativeSql, f: impl FnOnce(&Profile<'_>) -> T) -> T {
    use agent_memory::core::local::embed::HashEmbedder;
    use agent_memory::core::ops::Limits;
    use agent_memory::core::recall::directory::TurnDirectory;
    support::with_parts(
        sql,
        APRIL_15,
        &TurnDirectory::new(),
        Limits::default(),
        support::Parts { reasoner: &support::OneSubject, embedder: &HashEmbedder, ..Default::default() },
        f,
    )
}

/// An agent's value then a person's in one call, the key's chain lapsed
/// (its last value forgotten): the person's value replaces the agent's AND
/// the lapsed end, so two versions are superseded by one (the lapsed end
/// not named back).
#[test]
fn test_a_person_after_an_agent_in_one_call_keeps_the_versions_one_line() {
    let sql = database();
    one_subject(&sql, |p| {
        let r = block_on(p.ingest(IngestRequest {
            messages: vec![support::msg("user", "Actually, switch to npm for this project.")],
            session_id: Some("one".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        let npm = r.memories[0].clone();
        p.forget(&npm.id).unwrap();
        let call = IngestRequest {
            messages: vec![support::msg("assistant", "I set the monorepo up with yarn workspaces."), support::msg("user", "Use pnpm, not npm.")],
            session_id: Some("two".into()),
            metadata: Default::default(),
        };
        block_on(p.ingest(call)).unwrap();
        let all = every(p);
        let mut by: std::collections::HashMap<&str, usize> = Default::default();
        for m in &all {
            if let Some(n) = m.superseded_by.as_deref() {
                *by.entry(n).or_default() += 1;
            }
        }
        assert!(!by.is_empty(), "something was superseded");
        assert!(by.values().all(|&n| n == 1), "two versions superseded by one: {by:?}");
        for m in &all {
            if let Some(n) = m.superseded_by.as_deref() {
                let back = all.iter().find(|x| x.id == n).and_then(|x| x.supersedes.clone());
                assert_eq!(back.as_deref(), Some(m.id.as_str()), "{} not named back", m.content);
            }
        }
    });
}

/// A person's chain lapsed (last value forgotten), then an agent's value
/// of the key (its own chain), then a person's backdated value: it
/// replaces the agent's, not the lapsed end, and the person's values
/// overlap in asOf.
#[test]
fn test_an_agents_value_does_not_split_a_persons_chain_whose_end_was_forgotten() {
    let sql = database();
    one_subject(&sql, |p| {
        say_as(p, "user", "s1", None, "My favorite fruit is apple.", "2024-01-01T10:00:00Z");
        let cherry = say_as(p, "user", "s2", None, "My favorite fruit is cherry.", "2024-01-10T10:00:00Z");
        p.forget(&cherry.id).unwrap();
        say_as(p, "assistant", "s3", None, "My favorite fruit is mango.", "2024-01-20T10:00:00Z");
        say_as(p, "user", "s4", None, "My favorite fruit is banana.", "2024-01-05T10:00:00Z");
        let at = as_of(p, "2024-01-07T12:00:00Z", "fruit");
        assert!(at.len() <= 1, "asOf 01-07: {at:?}");
    });
}

// ---------------------------------------------------------------------------
// Many versions joining one chain: each line written once
// (`agent_memory::core::store::Merges`), so an import or a deletion joining
// thousands of versions to one chain costs about as many statements, not
// their square. Natively, 2,000 versions naming one held successor took
// 5.5 s one at a time (16,000 would take some six minutes by the square);
// gathered, 16,000 take under 1 s.

fn header() -> String {
    serde_json::json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "profile": "ns/p", "exportedAt": "2024-02-01T00:00:00.000Z" })
        .to_string()
}

/// A memory record `i` saying `content` at `at`, with `extra` fields.
fn record(i: usize, content: &str, at: &str, extra: serde_json::Value) -> String {
    let mut m = serde_json::json!({
        "kind": "memory", "id": format!("{:032x}", i + 1), "type": "fact", "summary": content, "content": content, "sessionId": null,
        "sourceMessageIds": [], "searchQueries": [], "status": "active", "createdAt": at, "validFrom": at, "updatedAt": at
    });
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    m.to_string()
}

/// Noon of one of January 2024's days and minutes, for value `i`.
fn said(i: usize) -> String {
    format!("2024-01-{:02}T{:02}:{:02}:00.000Z", 1 + i % 27, i % 24, (i * 7) % 60)
}

/// Imports `lines` after a header; the statements it ran.
fn statements_of_import(sql: &support::NativeSql, lines: Vec<String>) -> usize {
    let recorded = support::Recorded::new(sql, |_| true);
    let text: String = std::iter::once(header()).chain(lines).map(|l| format!("{l}\n")).collect();
    with_profile(&recorded, APRIL_15, |p| p.import(&text).unwrap());
    let n = recorded.seen.borrow().len();
    n
}

const JOINING: usize = 400;

#[test]
fn test_an_import_joining_hundreds_of_versions_to_one_held_chain_runs_statements_in_proportion() {
    let sql = database();
    let held = format!("{:032x}", 1);
    with_profile(&sql, APRIL_15, |p| {
        p.import(&format!("{}\n{}\n", header(), record(0, "Alpha lives in Rome.", "2024-01-28T00:00:00.000Z", serde_json::json!({})))).unwrap()
    });
    let lines = (1..=JOINING)
        .map(|i| record(i, &format!("Alpha lives in town {i}."), &said(i), serde_json::json!({ "status": "superseded", "supersededBy": held })))
        .collect();
    let statements = statements_of_import(&sql, lines);
    // Merged one at a time, each read the held chain whole: 400 versions
    // ran 84,605 statements (2,817 gathered).
    assert!(statements < 30 * JOINING, "{statements} statements for {JOINING} versions");
    with_profile(&sql, APRIL_15, |p| support::one_line_of(p, "Alpha lives", 1..=28)).unwrap();
}

#[test]
fn test_an_import_of_hundreds_of_active_values_of_a_held_key_runs_statements_in_proportion() {
    let sql = database();
    let key = serde_json::json!({ "key": "alpha.city" });
    with_profile(&sql, APRIL_15, |p| {
        p.import(&format!("{}\n{}\n", header(), record(0, "Alpha lives in Rome.", "2024-01-28T00:00:00.000Z", key.clone()))).unwrap()
    });
    let lines = (1..=JOINING).map(|i| record(i, &format!("Alpha lives in town {i}."), &said(i), key.clone())).collect();
    let statements = statements_of_import(&sql, lines);
    assert!(statements < 30 * JOINING, "{statements} statements for {JOINING} values");
    with_profile(&sql, APRIL_15, |p| {
        support::one_line_of(p, "Alpha lives", 1..=28).unwrap();
        let active: Vec<String> = every(p).into_iter().filter(|m| m.status == Status::Active).map(|m| m.content).collect();
        assert_eq!(active, ["Alpha lives in Rome."], "the later held value stays");
    });
}

mod gathered_merges {
    use super::*;
    use agent_memory::core::ports::Sql;
    use agent_memory::core::store::{Merges, Store};
    use proptest::prelude::*;

    /// Versions, links and validity of every memory, by id.
    fn lines(sql: &support::NativeSql) -> Vec<agent_memory::core::ports::Row> {
        sql.query("SELECT id, status, supersedes, superseded_by, valid_from, valid_to FROM memories ORDER BY id", &[]).unwrap()
    }

    /// Chains of versions said on the days given (a chain's versions in
    /// order), imported with no key: their ends, and the last chain's
    /// versions (the one receiving the others), oldest first.
    fn chains(days: &[Vec<u8>]) -> (support::NativeSql, Vec<String>, Vec<String>) {
        let sql = database();
        let (mut lines, mut ends, mut i, mut last) = (Vec::new(), Vec::new(), 0usize, Vec::new());
        for chain in days {
            let mut sorted = chain.clone();
            sorted.sort_unstable();
            let ids: Vec<String> = (0..sorted.len()).map(|k| format!("{:032x}", i + k + 1)).collect();
            for (k, day) in sorted.iter().enumerate() {
                let at = format!("2024-01-{day:02}T12:00:00.000Z");
                let mut extra = serde_json::json!({});
                if k > 0 {
                    extra["supersedes"] = ids[k - 1].clone().into();
                }
                if let Some(next) = ids.get(k + 1) {
                    extra["supersededBy"] = next.clone().into();
                    extra["status"] = "superseded".into();
                    extra["validTo"] = format!("2024-01-{:02}T12:00:00.000Z", sorted[k + 1]).into();
                }
                lines.push(record(i + k, &format!("Value {} of chain {}.", k, ends.len()), &at, extra));
            }
            i += sorted.len();
            ends.push(ids.last().unwrap().clone());
            last = ids;
        }
        let text: String = std::iter::once(header()).chain(lines).map(|l| format!("{l}\n")).collect();
        with_profile(&sql, APRIL_15, |p| p.import(&text).unwrap());
        (sql, ends, last)
    }

    /// The chain through `id` as `supersedes` links lead back from it,
    /// oldest first.
    fn back_from(sql: &support::NativeSql, id: &str) -> Vec<String> {
        let mut out = vec![id.to_string()];
        while out.len() < 100 {
            let r = sql.query("SELECT supersedes FROM memories WHERE id = ?1", &[out.last().unwrap().as_str().into()]).unwrap();
            match r[0][0].opt_string() {
                Some(t) => out.push(t),
                None => break,
            }
        }
        out.reverse();
        out
    }

    /// `pairs` merged in turn and gathered (`finish` only at the end, a
    /// refused merge's line left as it was): whether each merged, and
    /// the two databases after.
    fn both_ways(
        days: &[Vec<u8>],
        pairs: &[(String, String)],
        before: impl Fn(&support::NativeSql),
    ) -> (Vec<bool>, Vec<bool>, support::NativeSql, support::NativeSql) {
        let (one_by_one, _, _) = chains(days);
        let (gathered, _, _) = chains(days);
        before(&one_by_one);
        before(&gathered);
        let store = Store::new(&one_by_one, APRIL_15 + DAY);
        let in_turn: Vec<bool> = pairs.iter().map(|(o, n)| store.merge_versions(o, n).unwrap()).collect();
        let store = Store::new(&gathered, APRIL_15 + DAY);
        let mut merges = Merges::default();
        let at_once: Vec<bool> = pairs.iter().map(|(o, n)| merges.merge(&store, o, n).unwrap()).collect();
        merges.finish(&store).unwrap();
        (in_turn, at_once, one_by_one, gathered)
    }

    fn id(i: usize) -> String {
        format!("{i:032x}")
    }

    /// A review's input: a merge refused (the chains share a version)
    /// left its receiving version's line open, unregistered, and a later
    /// merge into it wrote the lines in another order.
    #[test]
    fn test_a_refused_merge_leaves_no_line_open() {
        let days = vec![vec![1], vec![1, 1, 1], vec![1, 1], vec![16], vec![2]];
        let pairs = [(id(6), id(2)), (id(4), id(2)), (id(7), id(5)), (id(8), id(2))];
        let (in_turn, at_once, a, b) = both_ways(&days, &pairs, |_| {});
        assert_eq!(in_turn, at_once);
        assert_eq!(back_from(&a, &id(4)), back_from(&b, &id(4)), "the line through 2, oldest first");
        assert_eq!(lines(&a), lines(&b));
    }

    /// A review's input: a lone receiving version takes the first chain
    /// as `merge_versions` gives it one, ending the versions its back
    /// links reach (one that does not link back included), then the rest.
    #[test]
    fn test_gathered_merges_into_a_lone_version_end_what_the_first_merge_ends() {
        let days = vec![vec![1, 20], vec![5], vec![6], vec![10]];
        let pairs = [(id(3), id(5)), (id(4), id(5))];
        let one_way = |sql: &support::NativeSql| {
            sql.query("UPDATE memories SET supersedes = ?1 WHERE id = ?2", &[id(1).as_str().into(), id(3).as_str().into()]).unwrap();
        };
        let (in_turn, at_once, a, b) = both_ways(&days, &pairs, one_way);
        assert_eq!(in_turn, at_once);
        assert_eq!(lines(&a), lines(&b));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        /// Merging many chain ends into one chain (at its newest version
        /// or one before) at once leaves what merging each in turn leaves;
        /// an end named twice, or the receiving version itself, is not
        /// merged either way.
        #[test]
        fn merges_gathered_leave_what_merges_in_turn_leave(
            days in proptest::collection::vec(proptest::collection::vec(1u8..=28, 1..4), 2..7),
            at in 0usize..3,
            again in any::<bool>(),
        ) {
            let (one_by_one, ends, last) = chains(&days);
            let (gathered, _, _) = chains(&days);
            let newer = last[at.min(last.len() - 1)].clone();
            let mut olders = ends[..ends.len() - 1].to_vec();
            if again {
                olders.push(olders[0].clone());
                olders.push(newer.clone());
            }
            let store = Store::new(&one_by_one, APRIL_15 + DAY);
            let in_turn: Vec<bool> = olders.iter().map(|o| store.merge_versions(o, &newer).unwrap()).collect();
            let store = Store::new(&gathered, APRIL_15 + DAY);
            let mut merges = Merges::default();
            let at_once: Vec<bool> = olders.iter().map(|o| merges.merge(&store, o, &newer).unwrap()).collect();
            merges.finish(&store).unwrap();
            prop_assert_eq!(in_turn, at_once);
            prop_assert_eq!(lines(&one_by_one), lines(&gathered));
        }

        /// Any merges, into any version (a chain's end or middle, one
        /// merged into another line, one refused), gathered, leave what
        /// the same merges in turn leave.
        #[test]
        fn any_merges_gathered_leave_what_they_leave_in_turn(
            days in proptest::collection::vec(proptest::collection::vec(1u8..=28, 1..4), 2..6),
            picks in proptest::collection::vec((0usize..16, 0usize..16), 1..8),
        ) {
            let total: usize = days.iter().map(Vec::len).sum();
            let pairs: Vec<(String, String)> = picks.iter().map(|(o, n)| (id(o % total + 1), id(n % total + 1))).collect();
            let (in_turn, at_once, a, b) = both_ways(&days, &pairs, |_| {});
            prop_assert_eq!(in_turn, at_once);
            prop_assert_eq!(lines(&a), lines(&b));
        }
    }
}

/// Versions said out of time order in one call (a conversation ingested
/// newest first, then one said in between): each version is valid until
/// the earliest of those after it in its chain was said, never ending
/// before it begins, and `asOf` finds one value at every instant. The
/// replacements' walks back share what they read (one walk each read the
/// whole chain again, quadratic in the chain).
#[test]
fn test_versions_said_out_of_order_in_one_call_end_when_the_earliest_after_them_was_said() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let at = |minute: usize| format!("2026-04-10T{:02}:{:02}:00.000Z", minute / 60, minute % 60);
        for batch in [(0..40).map(|i| (i * 17) % 40 * 10).collect::<Vec<_>>(), (0..40).rev().map(|i| i * 10 + 5).collect()] {
            let messages =
                batch.iter().map(|&m| MessageInput { role: "user".into(), content: format!("My favorite color is hue{m}."), timestamp: Some(at(m)) }).collect();
            block_on(p.ingest(IngestRequest { messages, session_id: Some("s".into()), metadata: Default::default() })).unwrap();
        }
        let all = every(p);
        assert_eq!(all.len(), 80);
        each_valid_until_the_earliest_after_it(&all);
        for minute in (0..400).step_by(5) {
            assert_eq!(as_of(p, &at(minute), "hue").len(), 1, "one value at {}", at(minute));
        }
    });
}

/// Each of `all` (the versions of one chain) is valid until the earliest
/// of those after it was said, never ending before it begins; the last
/// has no end.
fn each_valid_until_the_earliest_after_it(all: &[Memory]) {
    let by_id: std::collections::HashMap<&str, &Memory> = all.iter().map(|m| (m.id.as_str(), m)).collect();
    for m in all {
        let mut after = m.superseded_by.as_deref().and_then(|id| by_id.get(id));
        let mut earliest: Option<&str> = None;
        while let Some(v) = after {
            earliest = Some(earliest.map_or(v.said_from(), |e| e.min(v.said_from())));
            after = v.superseded_by.as_deref().and_then(|id| by_id.get(id));
        }
        let expected = earliest.map(|e| e.max(m.said_from()).to_string());
        assert_eq!(m.valid_to, expected, "{}", m.content);
    }
}

/// A session whose versions are scattered through one long chain (every
/// seventh value of a key said in it) is deleted as if never said: the
/// chain closes over each gap, each version valid until the earliest
/// remaining one after it was said. The relinks share what they read of
/// the chain (each walked it to its end: quadratic in the chain).
#[test]
fn test_deleting_a_session_scattered_through_a_chain_closes_each_gap() {
    let sql = database();
    for i in 0..140 {
        with_profile(&sql, APRIL_15 + i * 1000, |p| {
            let body = serde_json::json!({ "content": format!("The favourite colour is hue{i}."), "key": "user.colour", "sessionId": format!("s{}", i % 7) });
            block_on(p.remember(serde_json::from_value(body).unwrap())).unwrap();
        });
    }
    with_profile(&sql, APRIL_15 + 200_000, |p| {
        let report = p.delete_session("s3").unwrap();
        assert_eq!(report.deleted_memories, 20);
        let all = every(p);
        assert_eq!(all.len(), 120);
        each_valid_until_the_earliest_after_it(&all);
        let active: Vec<&Memory> = all.iter().filter(|m| m.status == Status::Active).collect();
        assert_eq!(active.len(), 1);
        assert!(active[0].content.contains("hue139"), "{}", active[0].content);
        let mut line = 0;
        let mut at = all.iter().find(|m| m.supersedes.is_none());
        while let Some(m) = at {
            line += 1;
            at = m.superseded_by.as_deref().and_then(|id| all.iter().find(|n| n.id == id));
        }
        assert_eq!(line, 120, "one line of every remaining version");
    });
}
