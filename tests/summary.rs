//! `getSummary` in the sections Cloudflare documents, in its order: the
//! whole profile's key facts and recent events (the newest first), the
//! active session's tasks, the last session (the one asked for, or the
//! most recent), and instructions; empty sections left out.

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

/// The section of `summary` under `heading`, to the next heading.
fn section<'a>(summary: &'a str, heading: &str) -> Option<&'a str> {
    summary.split(&format!("## {heading}\n")).nth(1).and_then(|rest| rest.split("\n## ").next())
}

#[test]
fn test_an_empty_profile_says_so_in_one_line_without_sections() {
    let sql = database();
    assert_eq!(summary(&sql, None), agent_memory::core::summary::EMPTY, "sections with no content are left out");
    assert!(agent_memory::core::summary::EMPTY.contains("profile"), "wrangler's end-to-end check looks for the word");
}

#[test]
fn test_sections_come_in_the_documented_order_with_the_newest_events_first() {
    let sql = database();
    let req = |content: &str, kind: &str| -> RememberRequest {
        serde_json::from_value(serde_json::json!({ "content": content, "type": kind, "sessionId": "s1" })).unwrap()
    };
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.remember(req("Always use conventional commits.", "instruction"))).unwrap();
        block_on(p.remember(req("The user prefers dark mode.", "fact"))).unwrap();
        block_on(p.remember(req("On 2026-04-10 the team finished the GraphQL migration.", "event"))).unwrap();
        block_on(p.remember(req("On 2026-04-14 the billing API v2.3.0 went to production.", "event"))).unwrap();
        block_on(p.remember(req("Update the README after the refactor.", "task"))).unwrap();
    });
    let s = summary(&sql, None);
    let at = |heading: &str| s.find(&format!("## {heading}\n")).unwrap_or_else(|| panic!("no {heading}: {s}"));
    let order = ["Key Facts", "Recent Events", "Active Tasks", "Last Session", "Instructions"].map(at);
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{s}");
    assert!(s.starts_with("## Key Facts\n- "), "{s}");
    let events = section(&s, "Recent Events").unwrap();
    assert!(events.find("billing").unwrap() < events.find("GraphQL").unwrap(), "the newest first: {events}");
    assert!(events.contains("(2026-04-14)"), "{events}");
}

#[test]
fn test_tasks_of_an_ended_session_leave_active_tasks() {
    let sql = database();
    let task = |content: &str, session: Option<&str>| -> RememberRequest {
        serde_json::from_value(serde_json::json!({ "content": content, "type": "task", "sessionId": session })).unwrap()
    };
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.remember(task("Investigate the 500 errors on the users endpoint.", Some("old")))).unwrap();
        block_on(p.remember(task("Renew the TLS certificate before May.", None))).unwrap();
    });
    let before = summary(&sql, None);
    assert!(section(&before, "Active Tasks").is_some_and(|t| t.contains("500 errors") && t.contains("TLS")), "{before}");
    with_profile(&sql, APRIL_15 + 1_000, |p| {
        block_on(p.remember(task("Write the release notes for v2.4.", Some("new")))).unwrap();
    });
    let after = summary(&sql, None);
    let tasks = section(&after, "Active Tasks").unwrap();
    assert!(tasks.contains("release notes") && tasks.contains("TLS"), "the active session's, and those of none: {tasks}");
    assert!(!tasks.contains("500 errors"), "a task is set aside once its session ends: {tasks}");
    // Still stored, and still in its own session's section when asked for.
    let old = summary(&sql, Some("old"));
    assert!(section(&old, "Last Session").is_some_and(|l| l.contains("500 errors")), "{old}");
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
    assert!(newest.contains("## Last Session\nSession: s2\n"), "the most recent session without one: {newest}");
    let first = summary(&sql, Some("s1"));
    assert!(first.contains("## Last Session\nSession: s1\n"), "{first}");
    for s in [&newest, &first] {
        // The other sections cover the whole profile whatever the session.
        assert!(s.contains("Helix") && s.contains("Biscuit") && s.contains("British English"), "{s}");
    }
    let last = section(&first, "Last Session").unwrap();
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
    let facts = section(&s, "Key Facts").unwrap();
    assert_eq!(facts.lines().filter(|l| l.starts_with("- ") && !l.contains("and more")).count(), agent_memory::core::summary::MAX_PER_SECTION);
    assert!(facts.contains("…and more"), "{facts}");
    assert!(s.contains("## Last Session\nSession: ops\n"), "{s}");
}
