//! The namespace catalog (core::catalog) against real SQLite: creation and
//! its 409, pages, deletion and the purges it records, implicit creation by
//! a profile's first write, and the retry and parking of failed purges.

mod support;

use agent_memory::core::catalog::{Catalog, CatalogCall, NamespaceOrder, Visible, MAX_PURGE_ATTEMPTS};
use agent_memory::core::schema::migrate_set;
use support::database;

const T0: i64 = 1_776_729_600_000;

fn catalog(sql: &support::NativeSql, now: i64) -> Catalog<'_> {
    migrate_set(sql, agent_memory::core::catalog::MIGRATION_LOG, agent_memory::core::catalog::MIGRATIONS).unwrap();
    Catalog { sql, now }
}

#[test]
fn test_a_namespace_cursor_the_service_never_returned_is_refused_and_an_empty_one_is_the_first_page() {
    let sql = database();
    let c = catalog(&sql, T0);
    for name in ["a", "b"] {
        c.create("1", name).unwrap();
    }
    for bad in ["\0junk", "not a name", "..", &"x".repeat(33)] {
        let e = c.list("1", None, Some(bad), &Visible::All).unwrap_err();
        assert!(e.is_invalid() && e.message().contains("cursor"), "{bad:?}: {e}");
    }
    let first = c.list("1", Some(1), Some(""), &Visible::All).unwrap();
    assert_eq!(first, c.list("1", Some(1), None, &Visible::All).unwrap(), "the empty cursor is the first page");
    assert_eq!(first.namespaces[0].name, "a");
    assert_eq!(c.list("1", Some(1), Some(&first.cursor), &Visible::All).unwrap().namespaces[0].name, "b");
}

#[test]
fn test_create_then_get_gives_the_published_fields_and_a_second_create_is_409_10008() {
    let sql = database();
    let c = catalog(&sql, T0);
    let made = c.create("1234", "support-agent").unwrap();
    assert_eq!((made.name.as_str(), made.account_id.as_str()), ("support-agent", "1234"));
    assert_eq!(made.created_at, "2026-04-21T00:00:00.000Z");
    assert_eq!(made.updated_at, made.created_at);
    assert!(!made.id.is_empty());
    assert_eq!(c.get("1234", "support-agent").unwrap(), made);
    let taken = c.create("1234", "support-agent").unwrap_err();
    assert_eq!((taken.status(), taken.code()), (409, 10008));
    assert_eq!(taken.message(), "Namespace name already exists");
    assert!(c.get("1234", "nobody").unwrap_err().is_not_found());
    for bad in ["", "Not Valid!", &"x".repeat(33)] {
        assert!(c.create("1234", bad).unwrap_err().is_invalid(), "{bad:?}");
    }
}

#[test]
fn test_list_pages_by_name_and_the_last_page_has_an_empty_cursor() {
    let sql = database();
    let c = catalog(&sql, T0);
    for name in ["c", "a", "b"] {
        c.create("1", name).unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = c.list("1", Some(2), cursor.as_deref(), &Visible::All).unwrap();
        assert_eq!(page.per_page, 2);
        seen.extend(page.namespaces.iter().map(|n| n.name.clone()));
        if page.cursor.is_empty() {
            break;
        }
        cursor = Some(page.cursor);
    }
    assert_eq!(seen, ["a", "b", "c"]);
    assert_eq!(c.list("1", None, None, &Visible::All).unwrap().per_page, 20, "the published default");
    assert!(c.list("1", Some(0), None, &Visible::All).unwrap_err().is_invalid());
    assert!(c.list("1", Some(1001), None, &Visible::All).unwrap_err().is_invalid());
}

/// Every page of `visible` at `per_page`, as (names, cursor).
fn pages(c: &Catalog<'_>, per_page: usize, visible: &Visible) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = c.list("1", Some(per_page), Some(&cursor), visible).unwrap();
        assert!(out.len() < 20, "paging ends");
        cursor = page.cursor.clone();
        out.push((page.namespaces.into_iter().map(|n| n.name).collect(), page.cursor));
        if cursor.is_empty() {
            return out;
        }
    }
}

#[test]
fn test_a_list_limited_to_a_grant_pages_through_its_namespaces_alone_and_no_cursor_names_another() {
    let sql = database();
    let c = catalog(&sql, T0);
    for name in ["alpha", "beta", "gamma", "team", "zulu"] {
        c.create("1", name).unwrap();
    }
    let only = |names: &[&str]| Visible::Only(names.iter().map(|n| n.to_string()).collect());
    // One visible namespace among five: one full page, and no cursor.
    assert_eq!(pages(&c, 1, &only(&["team"])), [(vec!["team".to_string()], String::new())]);
    // Two visible, a page at a time: each once, each page full, each
    // cursor a visible name (or empty on the last page).
    let two = pages(&c, 1, &only(&["beta", "team", "nobody"]));
    assert_eq!(two, [(vec!["beta".to_string()], "beta".to_string()), (vec!["team".to_string()], String::new())]);
    assert_eq!(pages(&c, 5, &only(&["zulu", "beta"])), [(vec!["beta".to_string(), "zulu".to_string()], String::new())]);
    // A cursor naming a namespace the grant does not hold starts after
    // that name, among the visible ones only.
    assert_eq!(c.list("1", Some(1), Some("gamma"), &only(&["beta", "team"])).unwrap().namespaces[0].name, "team");
    // Nothing granted shows nothing; `*` shows every one.
    assert_eq!(pages(&c, 1, &only(&[])), [(Vec::<String>::new(), String::new())]);
    assert_eq!(pages(&c, 5, &Visible::All)[0].0, ["alpha", "beta", "gamma", "team", "zulu"]);
}

#[test]
fn test_a_first_write_creates_a_namespace_nobody_created_and_deletion_records_a_purge_per_profile() {
    let sql = database();
    let c = catalog(&sql, T0);
    assert!(!c.register("implicit", "alice").unwrap().purge_first);
    assert!(!c.register("implicit", "bob").unwrap().purge_first);
    assert!(!c.register("implicit", "alice").unwrap().purge_first, "registering again changes nothing");
    assert_eq!(c.get("1", "implicit").unwrap().name, "implicit");
    let profiles = c.delete("implicit").unwrap();
    assert_eq!(profiles, ["alice", "bob"]);
    assert!(c.get("1", "implicit").unwrap_err().is_not_found(), "gone at once");
    assert!(c.delete("implicit").unwrap_err().is_not_found());
    // The name can be made again while the purges wait.
    c.create("1", "implicit").unwrap();
    assert_eq!(c.pending_purges().unwrap().len(), 2);
    // A profile written again before its purge ran is told to purge first.
    assert!(c.register("implicit", "alice").unwrap().purge_first);
    assert!(!c.register("implicit", "alice").unwrap().purge_first);
    c.purged("implicit", "bob", None).unwrap();
    assert!(c.pending_purges().unwrap().is_empty());
}

#[test]
fn test_asking_whether_a_purge_is_pending_registers_nothing() {
    let sql = database();
    let c = catalog(&sql, T0);
    assert!(!c.purge_pending("ns", "p").unwrap().purge_first);
    assert!(c.get("1", "ns").unwrap_err().is_not_found(), "asking created no namespace");
    c.register("ns", "p").unwrap();
    c.delete("ns").unwrap();
    for _ in 0..2 {
        assert!(c.purge_pending("ns", "p").unwrap().purge_first);
    }
    assert!(c.get("1", "ns").unwrap_err().is_not_found(), "asking brought no deleted namespace back");
    assert_eq!(c.pending_purges().unwrap().len(), 1, "asking kept the purge");
    let asked = c.execute(CatalogCall::PurgePending { namespace: "ns".into(), profile: "p".into() }).unwrap();
    assert_eq!(asked, r#"{"purgeFirst":true}"#);
    assert!(c.register("ns", "p").unwrap().purge_first, "registering is what takes the purge");
    assert!(!c.purge_pending("ns", "p").unwrap().purge_first);
}

#[test]
fn test_a_failing_purge_is_retried_with_a_backoff_then_parked_and_visible() {
    let sql = database();
    let c = catalog(&sql, T0);
    c.register("ns", "p").unwrap();
    c.delete("ns").unwrap();
    let mut now = T0;
    for attempt in 1..=MAX_PURGE_ATTEMPTS {
        let c = catalog(&sql, now);
        let (due, _) = c.due_purges().unwrap();
        assert_eq!(due, [("ns".to_string(), "p".to_string())], "attempt {attempt}");
        c.purged("ns", "p", Some("the profile did not answer")).unwrap();
        let (due, next) = c.due_purges().unwrap();
        assert!(due.is_empty(), "not due again at once");
        match next {
            Some(at) => now = at,
            None => assert_eq!(attempt, MAX_PURGE_ATTEMPTS, "only a parked purge has no next time"),
        }
    }
    let pending = catalog(&sql, now).pending_purges().unwrap();
    assert_eq!(pending.len(), 1);
    assert!(pending[0].parked && pending[0].attempts == MAX_PURGE_ATTEMPTS);
    assert_eq!(pending[0].last_error.as_deref(), Some("the profile did not answer"));
    assert!(catalog(&sql, now + 86_400_000).due_purges().unwrap().0.is_empty(), "a parked purge never spins");
}

#[test]
fn test_calls_read_as_the_worker_sends_them() {
    let call: CatalogCall = serde_json::from_str(r#"{"op":"list","account":"1","perPage":5,"cursor":null,"visible":{"only":["team"]}}"#).unwrap();
    let order = NamespaceOrder::default();
    assert_eq!(call, CatalogCall::List { account: "1".into(), per_page: Some(5), cursor: None, visible: Visible::Only(vec!["team".into()]), order });
    let all: CatalogCall = serde_json::from_str(r#"{"op":"list","account":"1","perPage":5,"cursor":null,"visible":"all"}"#).unwrap();
    assert!(matches!(all, CatalogCall::List { visible: Visible::All, .. }));
    assert!(serde_json::from_str::<CatalogCall>(r#"{"op":"list","account":"1"}"#).is_err(), "a list says what it may show");
    let sql = database();
    let c = catalog(&sql, T0);
    let text = c.execute(CatalogCall::Create { account: "1".into(), name: "n".into() }).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["name"], "n");
    assert!(serde_json::from_str::<CatalogCall>(r#"{"op":"drop","name":"n"}"#).is_err());
}

/// A namespace is created (explicitly, or by a profile's first write) only
/// under the API reference's rule, `^[a-z0-9]([a-z0-9-]*[a-z0-9])?$` and 32
/// characters; one taken before under this service's wider rule keeps
/// working (its profiles register, it is read and listed).
#[test]
fn test_a_new_namespace_takes_the_documented_name_rule_and_one_taken_before_keeps_working() {
    let sql = database();
    let c = catalog(&sql, T0);
    for bad in ["-abc-", "abc-", "Support-Agent", "a.b", "a_b", "UPPER"] {
        let e = c.create("1", bad).unwrap_err();
        assert!(e.is_invalid() && e.message().contains("[a-z0-9]"), "{bad:?}: {e}");
        assert!(c.register(bad, "p").unwrap_err().is_invalid(), "{bad:?}: created by a first write");
        assert!(c.get("1", bad).unwrap_err().is_not_found(), "{bad:?}: nothing was created");
    }
    for good in ["a", "0", "support-agent", "a-b-c", &"x".repeat(32)] {
        c.create("1", good).unwrap();
    }
    // Taken before, under the wider rule.
    agent_memory::core::ports::Sql::execute(
        &sql,
        "INSERT INTO namespaces (name, id, created_at, updated_at) VALUES ('Old.Team_1', 'old-id', ?, ?)",
        &[T0.into(), T0.into()],
    )
    .unwrap();
    assert!(!c.register("Old.Team_1", "alice").unwrap().purge_first);
    assert_eq!(c.get("1", "Old.Team_1").unwrap().name, "Old.Team_1");
    let listed = c.list("1", Some(100), None, &Visible::All).unwrap();
    assert!(listed.namespaces.iter().any(|n| n.name == "Old.Team_1"));
}

/// `order` (id or name) and `direction` (asc or desc), as the API
/// reference's list takes them: every page in that order, each namespace
/// once, the cursor the last page's last name or id; other values are
/// refused.
#[test]
fn test_namespaces_page_in_the_order_and_direction_asked_for() {
    let sql = database();
    for (i, name) in ["m", "z", "a", "q"].iter().enumerate() {
        catalog(&sql, T0 + i as i64 * 1000).create("1", name).unwrap();
    }
    let c = catalog(&sql, T0 + 10_000);
    let all = |order: NamespaceOrder| -> Vec<String> {
        let (mut seen, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let page = c.list_ordered("1", Some(1), cursor.as_deref(), &Visible::All, order).unwrap();
            seen.extend(page.namespaces.into_iter().map(|n| n.name));
            if page.cursor.is_empty() {
                return seen;
            }
            cursor = Some(page.cursor);
        }
    };
    let by = |o: Option<&str>, d: Option<&str>| all(NamespaceOrder::parse(o, d).unwrap());
    assert_eq!(by(None, None), ["a", "m", "q", "z"]);
    assert_eq!(by(Some("name"), Some("desc")), ["z", "q", "m", "a"]);
    assert_eq!(by(Some("id"), Some("asc")), ["m", "z", "a", "q"], "by id: the order they were created in");
    assert_eq!(by(Some("id"), Some("desc")), ["q", "a", "z", "m"]);
    assert!(NamespaceOrder::parse(Some("created"), None).unwrap_err().is_invalid());
    assert!(NamespaceOrder::parse(None, Some("down")).unwrap_err().is_invalid());
    // A name is no cursor of the list by id: it sorts after every id, so
    // read as one it answered an empty last page and skipped them all.
    for d in ["asc", "desc"] {
        let by_id = NamespaceOrder::parse(Some("id"), Some(d)).unwrap();
        let e = c.list_ordered("1", Some(1), Some("hz"), &Visible::All, by_id).unwrap_err();
        assert!(e.is_invalid() && e.message().contains("by id"), "{d}: {e}");
    }
}

#[test]
fn test_a_namespace_lists_its_profiles_by_name_with_when_each_was_first_recorded() {
    let sql = database();
    let c = catalog(&sql, T0);
    for (i, p) in ["zed", "amy", "bob.smith@example.com"].into_iter().enumerate() {
        Catalog { sql: &sql, now: T0 + i as i64 * 1000 }.register("team", p).unwrap();
    }
    // Registered again (each write asks until it is recorded): the first
    // time stands.
    Catalog { sql: &sql, now: T0 + 60_000 }.register("team", "zed").unwrap();
    let page = c.list_profiles("team", None, None).unwrap();
    let listed: Vec<(&str, &str)> = page.profiles.iter().map(|p| (p.name.as_str(), p.created_at.as_str())).collect();
    assert_eq!(listed, [("amy", "2026-04-21T00:00:01.000Z"), ("bob.smith@example.com", "2026-04-21T00:00:02.000Z"), ("zed", "2026-04-21T00:00:00.000Z")]);
    assert_eq!((page.cursor, page.per_page), (None, 20), "one page: no cursor");
    assert!(c.list_profiles("nobody", None, None).unwrap_err().is_not_found(), "an unknown namespace is 404");
    c.create("1", "empty").unwrap();
    assert!(c.list_profiles("empty", None, None).unwrap().profiles.is_empty());
}

#[test]
fn test_profile_pages_follow_their_cursor_and_a_cursor_the_service_never_returned_is_refused() {
    let sql = database();
    let c = catalog(&sql, T0);
    let names = ["a", "a.b", "b+c", "z@x"];
    for p in names {
        c.register("team", p).unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let page = c.list_profiles("team", Some(1), cursor.as_deref()).unwrap();
        seen.extend(page.profiles.iter().map(|p| p.name.clone()));
        let Some(next) = page.cursor else { break };
        assert!(next.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{next}: the API schema's cursor pattern");
        cursor = Some(next);
    }
    assert_eq!(seen, names);
    assert_eq!(c.list_profiles("team", Some(3), Some("")).unwrap(), c.list_profiles("team", Some(3), None).unwrap(), "empty: the first page");
    for bad in ["zz", "abc", "2", "20", &"61".repeat(101), "c0"] {
        let e = c.list_profiles("team", None, Some(bad)).unwrap_err();
        assert!(e.is_invalid() && e.message().contains("cursor"), "{bad:?}: {e}");
    }
    for size in [0, agent_memory::core::catalog::MAX_PAGE + 1] {
        assert!(c.list_profiles("team", Some(size), None).unwrap_err().is_invalid(), "per_page {size}");
    }
}

#[test]
fn test_an_unregistered_profile_leaves_the_list_and_a_new_registration_brings_it_back_with_a_new_time() {
    let sql = database();
    let c = catalog(&sql, T0);
    for p in ["amy", "zed"] {
        c.register("team", p).unwrap();
    }
    c.unregister("team", "zed").unwrap();
    c.unregister("team", "never-registered").unwrap();
    let names = |c: &Catalog<'_>| c.list_profiles("team", None, None).unwrap().profiles.into_iter().map(|p| p.name).collect::<Vec<_>>();
    assert_eq!(names(&c), ["amy"]);
    let later = Catalog { sql: &sql, now: T0 + 5_000 };
    later.register("team", "zed").unwrap();
    assert_eq!(names(&later), ["amy", "zed"]);
    assert_eq!(later.list_profiles("team", None, None).unwrap().profiles[1].created_at, "2026-04-21T00:00:05.000Z", "written anew: a new profile");
    // Restored, a profile keeps the time it was first recorded.
    c.unregister("team", "amy").unwrap();
    Catalog { sql: &sql, now: T0 + 9_000 }.register_as("team", "amy", true).unwrap();
    assert_eq!(later.list_profiles("team", None, None).unwrap().profiles[0].created_at, "2026-04-21T00:00:00.000Z", "restored: the same profile");
    // Unlisted, a profile is still among those its namespace's deletion
    // purges (a restore could bring it back otherwise).
    c.unregister("team", "amy").unwrap();
    assert_eq!(names(&c), ["zed"]);
    assert_eq!(c.delete("team").unwrap(), ["amy", "zed"]);
}

#[test]
fn test_profiles_recorded_before_their_creation_time_was_kept_take_their_namespaces() {
    let sql = database();
    // The catalog as version 1 left it: a namespace and a profile without
    // a creation time.
    migrate_set(&sql, agent_memory::core::catalog::MIGRATION_LOG, &agent_memory::core::catalog::MIGRATIONS[..1]).unwrap();
    let old = Catalog { sql: &sql, now: T0 };
    old.create("1", "team").unwrap();
    agent_memory::core::ports::Sql::execute(&sql, "INSERT INTO profiles (namespace, profile) VALUES ('team', 'old-one')", &[]).unwrap();
    let c = catalog(&sql, T0 + 86_400_000);
    let page = c.list_profiles("team", None, None).unwrap();
    assert_eq!(page.profiles.len(), 1);
    assert_eq!((page.profiles[0].name.as_str(), page.profiles[0].created_at.as_str()), ("old-one", "2026-04-21T00:00:00.000Z"));
}

#[test]
fn test_a_purge_time_that_does_not_read_is_a_storage_error_not_nothing_due() {
    let sql = database();
    let c = catalog(&sql, T0);
    c.register("ns", "p").unwrap();
    c.delete("ns").unwrap();
    agent_memory::core::ports::Sql::execute(&sql, "UPDATE purges SET due_at = 'soon'", &[]).unwrap();
    let err = catalog(&sql, T0).due_purges().unwrap_err();
    assert!(err.is_storage(), "{err:?}");
}
