//! `getSummary` in the sections Cloudflare documents: the whole profile's
//! key facts, instructions, recent events and active tasks, and the last
//! session (the one asked for, or the most recent).

mod support;

use agent_memory::core::api::{RememberRequest, SummaryRequest};
use support::{block_on, database, with_profile};

const APRIL_15: i64 = 1_776_245_400_000;

fn remember(content: &str, session: &str) -> RememberRequest {
    serde_json::from_value(serde_json::json!({ "content": content, "sessionId": session })).unwrap()
}

fn summary(sql: &support::NativeSql, session: Option<&str>) -> String {
    with_profile(sql, APRIL_15, |p| p.summary(SummaryRequest { session_id: session.map(str::to_string) }).unwrap().summary)
}

#[test]
fn test_an_empty_profile_says_so_and_names_the_profile() {
    let sql = database();
    let s = summary(&sql, None);
    assert!(s.contains("No memories in this profile yet."), "{s}");
    assert!(!s.contains("## "), "no empty sections: {s}");
}

#[test]
fn test_the_sessions_choose_the_last_session_section_only() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.remember(remember("The user's favourite editor is Helix.", "s1"))).unwrap();
        block_on(p.remember(remember("Always answer in British English.", "s1"))).unwrap();
    });
    with_profile(&sql, APRIL_15 + 1_000, |p| {
        block_on(p.remember(remember("The user's dog is called Biscuit.", "s2"))).unwrap();
    });
    let newest = summary(&sql, None);
    assert!(newest.contains("## Last Session (s2)"), "the most recent session without one: {newest}");
    let first = summary(&sql, Some("s1"));
    assert!(first.contains("## Last Session (s1)"), "{first}");
    for s in [&newest, &first] {
        // The other sections cover the whole profile whatever the session.
        assert!(s.contains("Helix") && s.contains("Biscuit") && s.contains("British English"), "{s}");
    }
    let last = first.split("## Last Session (s1)").nth(1).unwrap();
    assert!(last.contains("Helix") && !last.contains("Biscuit"), "only s1 in its section: {last}");
}

/// A section with more memories than it lists says so, and the last
/// session is found past any number of memories remembered without one.
#[test]
fn test_a_long_section_says_it_left_some_out_and_the_last_session_is_found_past_sessionless_memories() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.remember(remember("The deploy window is Tuesday morning.", "ops"))).unwrap();
    });
    for i in 0..60 {
        with_profile(&sql, APRIL_15 + 1_000 * (i + 1), |p| {
            let req: RememberRequest = serde_json::from_value(
                serde_json::json!({ "content": format!("Server n{i:02}x stores ledger l{i:02}y."), "key": format!("ledger.k{i}"), "type": "fact" }),
            )
            .unwrap();
            block_on(p.remember(req)).unwrap();
        });
    }
    let s = summary(&sql, None);
    let facts = s.split("## Key Facts").nth(1).and_then(|rest| rest.split("\n## ").next()).unwrap();
    assert_eq!(facts.lines().filter(|l| l.starts_with("- ") && !l.contains("and more")).count(), agent_memory::core::summary::MAX_PER_SECTION);
    assert!(facts.contains("…and more"), "{facts}");
    assert!(s.contains("## Last Session (ops)"), "{s}");
}
