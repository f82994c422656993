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
