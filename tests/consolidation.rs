//! Consolidation, natively: merges, folds, supersessions and retirements
//! recorded and reversible; dry runs that change nothing; runs cut short
//! that resume and repeat nothing.

#[path = "support/mod.rs"]
mod support;

use agent_memory::core::api::{ConsolidateRequest, ListRequest, RememberRequest};
use agent_memory::core::consolidate::{DEFAULT_WINDOWS, WINDOW};
use agent_memory::core::error::Result;
use agent_memory::core::local::embed::HashEmbedder;
use agent_memory::core::local::vector::SqlVectorIndex;
use agent_memory::core::model::{MemoryType, Status};
use agent_memory::core::ops::Profile;
use agent_memory::core::ports::LocalBoxFuture;
use agent_memory::core::provider::{self, Reasoner};
use agent_memory::core::recall::directory::TurnDirectory;
use agent_memory::core::rules::Rules;
use serde_json::json;
use support::{block_on, database, with_profile, with_profile_limits, with_reasoner, with_room, FailingAt, APRIL_15, DAY};

fn remember(p: &Profile<'_>, content: &str, key: &str, kind: MemoryType) -> agent_memory::core::model::Memory {
    remember_with(p, content, key, kind, "s1", None)
}

/// [`remember`] in `session`, with a TTL in seconds when given.
fn remember_with(p: &Profile<'_>, content: &str, key: &str, kind: MemoryType, session: &str, ttl_seconds: Option<u64>) -> agent_memory::core::model::Memory {
    block_on(p.remember(RememberRequest {
        content: content.into(),
        session_id: Some(session.into()),
        kind: Some(kind),
        // Tasks and events take no key.
        key: kind.is_keyed().then(|| key.into()),
        expires_at: None,
        ttl_seconds,
        sensitive: None,
        metadata: Default::default(),
    }))
    .unwrap()
}

/// The export without its header (which carries the time of export).
fn export_body(p: &Profile<'_>) -> Vec<String> {
    p.export(Default::default()).unwrap().lines().skip(1).map(str::to_string).collect()
}

fn active(p: &Profile<'_>) -> Vec<agent_memory::core::model::Memory> {
    p.list(ListRequest { status: Some(agent_memory::core::api::ListStatus::Active), limit: Some(1000), ..Default::default() }).unwrap().memories
}

/// The alarm begins a run every three memories.
fn every_three() -> agent_memory::core::ops::Limits {
    agent_memory::core::ops::Limits { consolidate_every: Some(3), ..Default::default() }
}

fn consolidate(p: &Profile<'_>, body: serde_json::Value) -> agent_memory::core::model::ConsolidationReport {
    block_on(p.consolidate(serde_json::from_value::<ConsolidateRequest>(body).unwrap())).unwrap()
}

#[test]
fn test_a_merge_of_two_wordings_undoes_to_the_exact_originals() {
    let sql = database();
    let a = with_profile(&sql, APRIL_15, |p| remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact));
    let (b, before) = with_profile(&sql, APRIL_15 + 3_600_000, |p| {
        (remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact), export_body(p))
    });
    assert_ne!(a.id, b.id);
    let report = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
    assert!(report.done);
    assert_eq!((report.active_before, report.active_after), (2, 1), "{report:#?}");
    let merge = report.actions.iter().find(|r| r.action == "merge").expect("a merge");
    assert_eq!(merge.target, b.id, "the newest wording survives");
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let detail = p.get(&b.id).unwrap();
        assert_eq!(detail.consolidations.len(), 1);
        assert_eq!(detail.consolidations[0].members, vec![a.id.clone(), b.id.clone()]);
        let merged = p.get(&a.id).unwrap();
        assert_eq!(merged.memory.status, Status::Superseded);
        assert_eq!(merged.memory.superseded_by.as_deref(), Some(b.id.as_str()));
        assert_eq!(merged.consolidations[0].id, merge.id, "the merged memory shows where it went");
        assert_eq!(active(p).len(), 1);
    });
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        let undone = p.undo_consolidation(merge.id).unwrap();
        assert!(undone.undone_at.is_some());
        // An undone record is history an export leaves out.
        assert_eq!(export_body(p), before, "the export after the undo is the export before the merge");
        let again = p.undo_consolidation(merge.id).unwrap_err();
        assert_eq!(again.status(), 400);
    });
}

#[test]
fn test_undo_of_a_record_made_before_schema_13_restores_no_validity_ending_before_it_begins() {
    let sql = database();
    let a = with_profile(&sql, APRIL_15, |p| remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact));
    with_profile(&sql, APRIL_15 + 3_600_000, |p| remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact));
    let report = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
    let merge = report.actions.iter().find(|r| r.action == "merge").expect("a merge");
    // The record as a writer before schema 13 could leave it: the merged
    // memory valid until a day before it began.
    let early = agent_memory::core::time::iso(APRIL_15 - DAY);
    let edit = format!("UPDATE consolidations SET before = (SELECT json_group_array(CASE WHEN json_extract(j.value, '$.id') = '{}' THEN json_set(j.value, '$.validTo', '{early}') ELSE json(j.value) END) FROM json_each(before) j) WHERE id = {}", a.id, merge.id);
    agent_memory::core::ports::Sql::execute(&sql, &edit, &[]).unwrap();
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        p.undo_consolidation(merge.id).unwrap();
        let back = p.get(&a.id).unwrap().memory;
        let from = back.valid_from.clone().unwrap_or_else(|| back.created_at.clone());
        let to = back.valid_to.expect("the recorded end is kept");
        assert!(to >= from, "restored valid {from} .. {to}");
        assert_eq!(to, from, "it ends where it begins");
    });
}

#[test]
fn test_a_dry_run_reports_and_changes_nothing() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact);
        remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact);
    });
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let before = export_body(p);
        let report = consolidate(p, json!({"dryRun": true}));
        assert!(report.dry_run);
        assert_eq!(report.actions.len(), 1);
        assert_eq!((report.active_before, report.active_after), (2, 1));
        assert_eq!(export_body(p), before);
        assert_eq!(p.stats().unwrap().pending_jobs, before_jobs(p));
    });
}

fn before_jobs(p: &Profile<'_>) -> i64 {
    p.stats().unwrap().pending_jobs
}

/// The rule-based reasoner, counting its consolidation calls: one a
/// window, each a model call when a model decides. With `meanwhile`, a
/// call of the profile runs while one of its own is awaited (a model call
/// awaits; the object serves other requests).
#[derive(Default)]
struct Counting<'s> {
    calls: std::cell::Cell<usize>,
    meanwhile: Option<Meanwhile<'s>>,
    classified: std::cell::Cell<bool>,
    /// While set, every consolidation decision fails (the model is down).
    down: std::cell::Cell<bool>,
    /// The rooms and turns held in a shared working memory
    /// ([`Shared`]), as each consolidation call saw them.
    rooms_seen: Option<(&'s std::cell::Cell<usize>, &'s std::cell::Cell<usize>)>,
    seen: std::cell::RefCell<Vec<(usize, usize)>>,
}

/// What [`Counting`] lets run while it is awaited.
#[derive(Clone, Copy)]
enum Meanwhile<'s> {
    /// A `consolidate` call running a whole run, during its first
    /// `consolidate`.
    WholeRun(&'s support::NativeSql),
    /// A `consolidate` call at `at`, during its first `classify` (a
    /// `remember` or an ingest awaiting its classifier).
    ConsolidateWhileClassifying(&'s support::NativeSql, i64),
}

impl Reasoner for Counting<'_> {
    fn extract<'a>(&'a self, t: &'a provider::Transcript, pass: provider::Pass) -> LocalBoxFuture<'a, Result<Vec<provider::Candidate>>> {
        Rules.extract(t, pass)
    }
    fn verify<'a>(&'a self, t: &'a provider::Transcript, c: &'a [provider::Candidate]) -> LocalBoxFuture<'a, Result<Vec<provider::Verdict>>> {
        Rules.verify(t, c)
    }
    fn classify<'a>(&'a self, t: &'a provider::Transcript, c: &'a [provider::Candidate]) -> LocalBoxFuture<'a, Result<Vec<provider::Classification>>> {
        Box::pin(async move {
            if let Some(Meanwhile::ConsolidateWhileClassifying(sql, at)) = self.meanwhile.filter(|_| !self.classified.replace(true)) {
                let report = consolidated_at(sql, at, json!({})).await;
                assert!(report.actions.iter().any(|a| a.action == "merge"), "{report:?}");
            }
            Rules.classify(t, c).await
        })
    }
    fn analyze<'a>(&'a self, q: &'a str) -> LocalBoxFuture<'a, Result<provider::QueryAnalysis>> {
        Rules.analyze(q)
    }
    fn synthesize<'a>(&'a self, i: &'a provider::SynthesisInput) -> LocalBoxFuture<'a, Result<String>> {
        Rules.synthesize(i)
    }
    fn consolidate<'a>(&'a self, g: &'a [provider::Group]) -> LocalBoxFuture<'a, Result<Vec<provider::Consolidation>>> {
        self.calls.set(self.calls.get() + 1);
        if let Some((rooms, turns)) = self.rooms_seen {
            self.seen.borrow_mut().push((rooms.get(), turns.get()));
        }
        if self.down.get() {
            return Box::pin(async { Err(agent_memory::core::error::Error::provider("model unavailable")) });
        }
        Box::pin(async move {
            if let Some(Meanwhile::WholeRun(sql)) = self.meanwhile.filter(|_| self.calls.get() == 1) {
                let report = consolidated_at(sql, APRIL_15 + 2, json!({ "maxWindows": 100 })).await;
                assert!(report.done, "{report:?}");
            }
            Rules.consolidate(g).await
        })
    }
}

/// A `consolidate` call of `body` at `now` with the rules, awaited (within
/// a reasoner's own await).
async fn consolidated_at(sql: &support::NativeSql, now: i64, body: serde_json::Value) -> agent_memory::core::model::ConsolidationReport {
    let index = SqlVectorIndex { sql };
    let turns = TurnDirectory::new();
    let p = Profile {
        name: "test/p",
        sql,
        reasoner: &Rules,
        embedder: &HashEmbedder,
        index: &index,
        turns: Some(&turns),
        now,
        limits: Default::default(),
        memory: Default::default(),
        room: &agent_memory::core::ports::Unshared,
    };
    p.consolidate(serde_json::from_value(body).unwrap()).await.unwrap()
}

/// `body`'s report and how many reasoner calls it made, over a profile of
/// `memories` active facts (imported, their ids in order).
fn counted(memories: usize, body: serde_json::Value) -> (agent_memory::core::model::ConsolidationReport, usize) {
    let sql = database();
    imported(&sql, memories);
    let model = Counting::default();
    let report = with_reasoner(&sql, APRIL_15, Default::default(), &model, |p| consolidate(p, body));
    (report, model.calls.get())
}

/// A dry run honours `maxWindows`: it previews the first windows, one
/// reasoner call each, and says it stopped early (`done: false`) as a run
/// does; with every window inside the limit it is done.
#[test]
fn test_a_dry_run_goes_through_at_most_max_windows_and_says_it_stopped_early() {
    let (report, calls) = counted(3 * WINDOW + 1, json!({"dryRun": true, "maxWindows": 2}));
    assert_eq!(calls, 2, "one reasoner call per window, two windows");
    assert_eq!(report.examined, 2 * WINDOW);
    assert!(report.dry_run);
    assert!(!report.done, "windows are left");
    let (report, calls) = counted(2 * WINDOW, json!({"dryRun": true, "maxWindows": 2}));
    assert_eq!((calls, report.examined), (2, 2 * WINDOW));
    assert!(report.done, "the two windows were the whole profile");
}

/// Without `maxWindows` no call goes through more than
/// `DEFAULT_WINDOWS` windows (one reasoner call each, a model call with
/// Workers AI), dry or not; the run says so and the alarm goes on.
#[test]
fn test_without_max_windows_a_call_goes_through_the_default_number_of_windows_only() {
    let memories = usize::try_from(DEFAULT_WINDOWS).unwrap() * WINDOW + 1;
    for body in [json!({}), json!({"dryRun": true})] {
        let (report, calls) = counted(memories, body.clone());
        assert_eq!(calls, usize::try_from(DEFAULT_WINDOWS).unwrap(), "{body}");
        assert_eq!(report.examined, memories - 1, "{body}");
        assert!(!report.done, "{body}: a window is left");
    }
}

#[test]
fn test_contradictions_supersede_and_stale_tasks_retire_and_forgotten_memories_stay_gone() {
    let sql = database();
    let (old, new, task, forgotten) = with_profile(&sql, APRIL_15 - 60 * DAY, |p| {
        let old = remember(p, "The API rate limit is 100 requests per second.", "api.limit_a", MemoryType::Fact);
        let task = remember(p, "Write the quarterly report for the board.", "task.report", MemoryType::Task);
        let f1 = remember(p, "The staging database lives in Frankfurt.", "staging.region_a", MemoryType::Fact);
        p.forget(&f1.id).unwrap();
        (old, None::<()>, task, f1)
    });
    let _ = new;
    let new = with_profile(&sql, APRIL_15 - 50 * DAY, |p| {
        remember(p, "The staging database lives in Frankfurt now.", "staging.region_b", MemoryType::Fact);
        remember(p, "The API rate limit is 200 requests per second.", "api.limit_b", MemoryType::Fact)
    });
    with_profile(&sql, APRIL_15, |p| {
        let report = consolidate(p, json!({}));
        let actions: Vec<(&str, &str)> = report.actions.iter().map(|r| (r.action.as_str(), r.target.as_str())).collect();
        assert!(actions.contains(&("supersede", new.id.as_str())), "{actions:?}");
        assert!(actions.contains(&("retire", task.id.as_str())), "{actions:?}");
        let old_now = p.get(&old.id).unwrap().memory;
        assert_eq!(old_now.status, Status::Superseded);
        assert!(old_now.valid_to.is_some());
        assert_eq!(p.get(&new.id).unwrap().memory.supersedes.as_deref(), Some(old.id.as_str()));
        assert_eq!(p.get(&task.id).unwrap().memory.status, Status::Expired);
        // The forgotten memory was not merged with its rewording: still forgotten, in no record.
        let f = p.get(&forgotten.id).unwrap();
        assert_eq!(f.memory.status, Status::Forgotten);
        assert!(f.consolidations.is_empty());
    });
}

/// Old statements of one message fold into one memory that keeps every
/// source; recall finds the fold by any of its parts.
#[test]
fn test_old_sibling_statements_fold_into_one_memory_that_keeps_every_source() {
    let sql = database();
    with_profile(&sql, APRIL_15 - 90 * DAY, |p| {
        block_on(p.ingest(agent_memory::core::api::IngestRequest {
            messages: vec![support::msg("user", "My favorite color is blue. I live in Edinburgh. I work at Acme as a designer.")],
            session_id: Some("s1".into()),
            metadata: serde_json::from_value(json!({"agentId": "chat"})).unwrap(),
        }))
        .unwrap();
        block_on(p.drain()).unwrap();
    });
    with_profile(&sql, APRIL_15, |p| {
        let before = active(p);
        assert!(before.len() >= 2, "{before:#?}");
        let report = consolidate(p, json!({}));
        let fold = report.actions.iter().find(|r| r.action == "fold").expect("a fold");
        let after = active(p);
        assert!(after.len() < before.len());
        let folded = p.get(&fold.target).unwrap().memory;
        assert_eq!(folded.metadata.get("agentId"), before[0].metadata.get("agentId"));
        let sources: std::collections::BTreeSet<&String> = before.iter().flat_map(|m| &m.source_message_ids).collect();
        assert!(sources.iter().all(|s| folded.source_message_ids.contains(s)));
        for m in &before {
            assert!(
                folded.content.contains(m.content.split(": ").last().unwrap_or(&m.content).trim_end_matches('.')),
                "{} lost from {}",
                m.content,
                folded.content
            );
        }
        while block_on(p.drain()).unwrap().embedded > 0 {}
        let r = block_on(p.recall(agent_memory::core::api::RecallRequest { query: "Where is my studio?".into(), options: Default::default() })).unwrap();
        assert_eq!(r.candidates.first().map(|c| c.id.as_str()), Some(fold.target.as_str()));
    });
}

/// A run cut short after one window goes on in the background (the
/// outbox job) and ends where an uninterrupted run ends, repeating
/// nothing.
#[test]
fn test_a_run_cut_short_resumes_from_its_cursor_and_repeats_nothing() {
    // 650 facts, each said twice in other words, a minute apart; names of
    // letters only (a number would be one token they all share).
    let fill = |sql: &support::NativeSql| {
        let name =
            |i: usize, salt: usize| -> String { (0..3u32).map(|k| char::from(b'a' + ((i / 26usize.pow(k) + salt * (k as usize + 1)) % 26) as u8)).collect() };
        for i in 0..650 {
            with_profile(sql, APRIL_15 - 90 * DAY + i as i64 * 60_000, |p| {
                let (server, ledger, team) = (name(i, 1), name(i, 7), name(i, 13));
                remember(p, &format!("Server {server}x stores the {ledger}y ledger for team {team}z."), &format!("ledger.a{i}"), MemoryType::Fact);
                remember(p, &format!("For team {team}z, server {server}x stores the {ledger}y ledger."), &format!("ledger.b{i}"), MemoryType::Fact);
            });
        }
    };
    let whole = database();
    let cut = database();
    fill(&whole);
    fill(&cut);
    let full = with_profile(&whole, APRIL_15, |p| consolidate(p, json!({})));
    assert!(full.done);
    assert!(full.actions.len() >= 600, "{} merges", full.actions.len());
    let first = with_profile(&cut, APRIL_15, |p| consolidate(p, json!({"maxWindows": 1})));
    assert!(!first.done, "one window of 1,000 leaves the rest");
    with_profile(&cut, APRIL_15, |p| {
        // A second call while the run is in progress continues it; here the
        // alarm does: drains until the job is gone.
        for _ in 0..20 {
            block_on(p.drain()).unwrap();
        }
        assert_eq!(p.stats().unwrap().pending_jobs, 0);
    });
    with_profile(&whole, APRIL_15, |p| while block_on(p.drain()).unwrap().embedded > 0 {});
    let state = |sql: &support::NativeSql| with_profile(sql, APRIL_15, |p| export_body(p));
    assert_eq!(state(&cut), state(&whole), "the resumed run ends as the uninterrupted one");
}

/// With `CONSOLIDATE_EVERY`, the alarm begins a run on its own once the
/// profile has grown by that many memories, and not again until it grows
/// by as many more.
#[test]
fn test_the_alarm_begins_a_run_once_the_profile_has_grown_enough() {
    let sql = database();
    let turns = Default::default();
    let with = |now: i64, f: &mut dyn FnMut(&Profile<'_>)| with_profile_limits(&sql, now, &turns, every_three(), |p| f(p));
    with(APRIL_15, &mut |p| {
        remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact);
        block_on(p.drain()).unwrap();
        assert!(active(p).len() == 1, "one memory: below the threshold, nothing runs");
    });
    with(APRIL_15 + 3_600_000, &mut |p| {
        remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact);
        remember(p, "The deploy window is Tuesday morning.", "team.deploy_window", MemoryType::Fact);
        for _ in 0..3 {
            block_on(p.drain()).unwrap();
        }
        assert_eq!(active(p).len(), 2, "three memories: the alarm ran one and merged the rewordings");
        assert_eq!(p.stats().unwrap().pending_jobs, 0);
    });
}

/// A run record that does not read is never taken for "no run": the
/// alarm's schedule reports it on every drain while the other work goes
/// on, the run's job fails until it is parked, no memory changes, and an
/// explicit `consolidate` replaces the record and says so.
#[test]
fn test_an_unreadable_run_record_stops_background_runs_until_a_consolidate_call_replaces_it() {
    use agent_memory::core::store::META_CONSOLIDATION;
    let sql = database();
    let turns = Default::default();
    let with = |now: i64, f: &mut dyn FnMut(&Profile<'_>)| with_profile_limits(&sql, now, &turns, every_three(), |p| f(p));
    let broken = r#"{"id":"c-1","cursor":"#;
    with(APRIL_15, &mut |p| {
        remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact);
        remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact);
        remember(p, "The deploy window is Tuesday morning.", "team.deploy_window", MemoryType::Fact);
        let report = block_on(p.drain()).unwrap();
        assert_eq!(report.consolidation_error, None);
        assert!(agent_memory::core::consolidate::current(p).unwrap().is_some(), "the schedule began a run");
        p.store().meta_set(META_CONSOLIDATION, broken).unwrap();
        let err = agent_memory::core::consolidate::current(p).unwrap_err();
        assert!(err.is_storage() && err.message().contains("does not read"), "{err}");
    });
    for day in 1..=12 {
        with(APRIL_15 + day * DAY, &mut |p| {
            let report = block_on(p.drain()).unwrap();
            let why = report.consolidation_error.as_deref().unwrap_or_default();
            assert!(why.contains("does not read"), "day {day}: {report:?}");
            assert_eq!(active(p).len(), 3, "day {day}: nothing consolidated");
            let shown = p.stats().unwrap().drain_error.unwrap_or_default();
            assert!(shown.contains("the consolidation schedule: ") && shown.contains("does not read"), "day {day}: shown {shown:?}");
        });
    }
    with(APRIL_15 + 13 * DAY, &mut |p| {
        let stats = p.stats().unwrap();
        assert_eq!((stats.pending_jobs, stats.parked_jobs), (0, 1), "the run's job failed until it was parked");
        let report = consolidate(p, json!({}));
        assert_eq!(report.replaced_run.as_deref(), Some(broken));
        assert!(report.done);
        assert_eq!(active(p).len(), 2, "the new run merged the rewordings");
        assert_eq!(block_on(p.drain()).unwrap().consolidation_error, None);
        assert_eq!(p.stats().unwrap().drain_error, None, "no longer shown once a drain runs clean");
        assert_eq!(consolidate(p, json!({})).replaced_run, None, "replaced once");
    });
}

/// A window whose transaction stops halfway (after some of its groups'
/// changes and records are written) leaves nothing of it behind: the
/// memories, the records and the run's cursor are as before, and the run
/// then goes on to end where an uninterrupted one ends.
#[test]
fn test_a_window_cut_inside_its_transaction_leaves_nothing_and_the_run_ends_as_an_uninterrupted_one() {
    let fill = |sql: &support::NativeSql| {
        for i in 0..12 {
            with_profile(sql, APRIL_15 - 30 * DAY + i * 60_000, |p| {
                let (a, b) = (format!("alpha{}", char::from(b'a' + i as u8)), format!("beta{}", char::from(b'a' + i as u8)));
                remember(p, &format!("Server {a} stores the {b} ledger for the finance team."), &format!("ledger.a{i}"), MemoryType::Fact);
                remember(p, &format!("For the finance team, server {a} stores the {b} ledger."), &format!("ledger.b{i}"), MemoryType::Fact);
            });
        }
    };
    let (whole, cut) = (database(), database());
    fill(&whole);
    fill(&cut);
    let full = with_profile(&whole, APRIL_15, |p| consolidate(p, json!({})));
    assert!(full.actions.len() >= 10, "{} merges", full.actions.len());
    let before = with_profile(&cut, APRIL_15, export_body);
    let failing = FailingAt { inner: &cut, pattern: "INSERT INTO consolidations", n: std::cell::Cell::new(5) };
    let run = with_reasoner(&failing, APRIL_15, Default::default(), &Rules, |p| {
        let e = block_on(p.consolidate(ConsolidateRequest::default())).unwrap_err();
        assert!(e.message().contains("injected failure"), "{e}");
        agent_memory::core::consolidate::current(p).unwrap().expect("the run begun before the window")
    });
    assert_eq!(run.cursor, "", "the cursor did not move");
    assert_eq!(with_profile(&cut, APRIL_15, export_body), before, "no memory or record of the window was kept");
    let resumed = with_profile(&cut, APRIL_15, |p| consolidate(p, json!({})));
    assert_eq!(resumed.run_id, run.id, "the same run goes on");
    assert!(resumed.done);
    with_profile(&whole, APRIL_15, |p| while block_on(p.drain()).unwrap().embedded > 0 {});
    with_profile(&cut, APRIL_15, |p| while block_on(p.drain()).unwrap().embedded > 0 {});
    assert_eq!(with_profile(&cut, APRIL_15, export_body), with_profile(&whole, APRIL_15, export_body));
}

/// Consolidation keeps owners apart: two wordings of one statement by two
/// users (different metadata) are not merged; the same two by one user are.
#[test]
fn test_rewordings_of_two_owners_are_not_merged_but_of_one_owner_are() {
    let sql = database();
    let say = |p: &Profile<'_>, content: &str, key: &str, user: &str| {
        block_on(p.remember(
            serde_json::from_value::<RememberRequest>(json!({"content": content, "key": key, "type": "fact", "metadata": {"userId": user}})).unwrap(),
        ))
        .unwrap()
    };
    with_profile(&sql, APRIL_15, |p| {
        say(p, "The user prefers dark mode in the code editor.", "editor.theme_a", "ana");
        say(p, "In the code editor, the user prefers the dark mode.", "editor.theme_b", "ben");
    });
    let apart = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
    assert!(apart.actions.is_empty(), "{:?}", apart.actions);
    with_profile(&sql, APRIL_15 + DAY, |p| say(p, "In the code editor, the user prefers the dark mode!", "editor.theme_c", "ana"));
    let merged = with_profile(&sql, APRIL_15 + 2 * DAY, |p| consolidate(p, json!({})));
    assert_eq!(merged.actions.len(), 1, "{:?}", merged.actions);
    assert_eq!(merged.actions[0].action, "merge");
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        let owners: Vec<String> = active(p).iter().map(|m| serde_json::to_value(&m.metadata).unwrap()["userId"].as_str().unwrap().to_string()).collect();
        let mut owners = owners;
        owners.sort();
        assert_eq!(owners, ["ana", "ben"], "one memory each");
    });
}

/// "Likes" and "does not like" share every stem ("not" is a stop word),
/// yet they are two values, not two wordings of one: never merged. Said
/// the same day both stay; a day apart, the later replaces the earlier as
/// a contradiction.
#[test]
fn test_a_statement_and_its_negation_are_a_contradiction_not_a_duplicate() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        remember(p, "The user likes spicy food.", "user.spicy_food", MemoryType::Fact);
        remember(p, "The user does not like spicy food.", "user.food_spice", MemoryType::Fact);
        remember(p, "The user likes jazz music.", "user.jazz", MemoryType::Fact);
    });
    let later = with_profile(&sql, APRIL_15 + DAY, |p| remember(p, "The user does not like jazz music.", "user.music_jazz", MemoryType::Fact));
    let report = with_profile(&sql, APRIL_15 + 2 * DAY, |p| consolidate(p, json!({})));
    let actions: Vec<(&str, &str)> = report.actions.iter().map(|a| (a.action.as_str(), a.target.as_str())).collect();
    assert_eq!(actions, [("supersede", later.id.as_str())], "{:#?}", report.actions);
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        let mut left: Vec<String> = active(p).into_iter().map(|m| m.content).collect();
        left.sort();
        assert_eq!(left, ["The user does not like jazz music.", "The user does not like spicy food.", "The user likes spicy food."]);
    });
}

/// Two statements whose stems match but whose stop words say different
/// things (each clause negated, "before" / "after") are never merged as
/// wordings of one.
#[test]
fn test_statements_differing_in_negated_clauses_or_bearing_words_are_not_merged() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        remember(p, "The user has cats and dogs at home.", "user.pets", MemoryType::Fact);
        remember(p, "The user has no cats and no dogs at home.", "user.animals", MemoryType::Fact);
        remember(p, "The user walks the dog before work.", "user.walk_time", MemoryType::Fact);
        remember(p, "The user walks the dog after work.", "user.walks", MemoryType::Fact);
    });
    let report = with_profile(&sql, APRIL_15 + DAY / 2, |p| consolidate(p, json!({})));
    assert!(report.actions.is_empty(), "{:#?}", report.actions);
    with_profile(&sql, APRIL_15 + DAY / 2, |p| assert_eq!(active(p).len(), 4));
}

/// An undo never overwrites what happened after the consolidation: with
/// the surviving memory forgotten it is refused (409) and changes nothing;
/// with a merged one deleted the record went with it (404).
#[test]
fn test_undo_is_refused_when_a_memory_changed_after_the_consolidation() {
    for later in ["forget the survivor", "delete the merged one"] {
        let sql = database();
        let a = with_profile(&sql, APRIL_15, |p| remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact));
        let b =
            with_profile(&sql, APRIL_15 + 3_600_000, |p| remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact));
        let report = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
        let merge = report.actions.iter().find(|r| r.action == "merge").expect("a merge");
        assert_eq!(merge.target, b.id);
        let after = with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
            match later {
                "forget the survivor" => drop(p.forget(&b.id).unwrap()),
                _ => drop(p.delete(&a.id).unwrap()),
            }
            export_body(p)
        });
        with_profile(&sql, APRIL_15 + 3 * DAY, |p| {
            let e = p.undo_consolidation(merge.id).unwrap_err();
            match later {
                // The record went with the deleted memory (it copied it).
                "delete the merged one" => assert_eq!(e.status(), 404, "{later}: {e}"),
                _ => {
                    assert_eq!(e.status(), 409, "{later}: {e}");
                    assert!(e.message().contains("after consolidation"), "{e}");
                }
            }
            assert_eq!(export_body(p), after, "{later}: nothing changed");
        });
    }
}

/// A hard delete leaves no copy of what it deleted: the consolidation
/// records holding the memory as it was go with it (and the undo with
/// them); a purge of the profile empties the records too.
#[test]
fn test_a_hard_delete_erases_the_consolidation_records_that_copy_the_memory() {
    use agent_memory::core::ports::Sql;
    let sql = database();
    let a = with_profile(&sql, APRIL_15, |p| remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact));
    let b = with_profile(&sql, APRIL_15 + 3_600_000, |p| remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact));
    let merge = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({}))).actions.into_iter().find(|r| r.action == "merge").expect("a merge");
    let copies = |words: &str| -> i64 {
        let rows = sql.query("SELECT COUNT(*) FROM consolidations WHERE before LIKE ?1", &[format!("%{words}%").into()]).unwrap();
        rows[0][0].as_i64().unwrap()
    };
    assert_eq!(copies("dark mode in the code editor"), 1, "the record copies the merged memory");
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        p.delete(&a.id).unwrap();
        assert_eq!(copies("dark mode in the code editor"), 0, "no copy of the deleted memory is left");
        assert!(p.get(&b.id).unwrap().consolidations.is_empty());
        assert_eq!(p.undo_consolidation(merge.id).unwrap_err().status(), 404);
    });
}

#[test]
fn test_two_support_calls_refund_references_are_not_a_contradiction() {
    // Ingest keeps both (an agent's statement reaches only its own
    // session's holder); consolidation must not supersede one either.
    let sql = database();
    let call = |session: &str, reference: &str| agent_memory::core::api::IngestRequest {
        messages: vec![
            support::msg("user", "I returned the item two weeks ago and still have not seen the money back."),
            support::msg("assistant", &format!("The refund reference is {reference}, and it should show on your statement within five days.")),
        ],
        session_id: Some(session.into()),
        metadata: Default::default(),
    };
    with_profile(&sql, APRIL_15, |p| block_on(p.ingest(call("lamp-call", "RF-100001"))).unwrap());
    with_profile(&sql, APRIL_15 + 9 * DAY, |p| {
        block_on(p.ingest(call("kettle-call", "RF-200002"))).unwrap();
        let refs = |p: &Profile<'_>| active(p).into_iter().filter(|m| m.content.contains("refund reference")).count();
        assert_eq!(refs(p), 2);
        let report = consolidate(p, json!({}));
        assert!(report.actions.iter().all(|a| a.action != "supersede"), "{:?}", report.actions);
        assert_eq!(refs(p), 2, "both refunds stay findable");
    });
}

/// A profile of `memories` active facts imported into `sql` (their ids in
/// order), their embeddings done.
fn imported(sql: &support::NativeSql, memories: usize) {
    imported_as(sql, memories, |i| format!("Shelf {i} in the archive holds ledgers."), |i| format!("{i:032x}"));
}

fn run_record(sql: &support::NativeSql) -> String {
    use agent_memory::core::ports::Sql;
    sql.query("SELECT value FROM meta WHERE key = 'consolidation_run'", &[]).unwrap().first().and_then(|r| r[0].opt_string()).unwrap_or_default()
}

fn consolidate_jobs(sql: &support::NativeSql, parked: bool) -> i64 {
    use agent_memory::core::ports::Sql;
    sql.query("SELECT COUNT(*) FROM outbox WHERE kind = 'consolidate' AND parked = ?", &[i64::from(parked).into()]).unwrap()[0][0].as_i64().unwrap()
}

/// The alarm's job awaits the reasoner while a `consolidate` call runs the
/// same run to its end: the job's window is not carried out, the run
/// stays ended (its record is not written back), and the schedule begins
/// the next run when the profile has grown again.
#[test]
fn test_a_run_another_call_ended_while_the_job_awaited_stays_ended() {
    let sql = database();
    imported(&sql, 5 * WINDOW + 1);
    let limits = agent_memory::core::ops::Limits { consolidate_every: Some(1), ..Default::default() };
    let drain = |now: i64, reasoner: &dyn Reasoner| with_reasoner(&sql, now, limits.clone(), reasoner, |p| block_on(p.drain()).unwrap());
    // The schedule begins a run (its job is due next).
    drain(APRIL_15 + 1, &Rules);
    assert!(!run_record(&sql).is_empty());
    let model = Counting { meanwhile: Some(Meanwhile::WholeRun(&sql)), ..Counting::default() };
    let report = drain(APRIL_15 + 2, &model);
    assert!(model.calls.get() >= 1);
    assert_eq!(report.failed, 0, "{report:?}");
    // Ended by the call: no record, no job, whatever the job's stale
    // window held.
    assert_eq!((run_record(&sql), consolidate_jobs(&sql, false), consolidate_jobs(&sql, true)), (String::new(), 0, 0));
    // The next run begins once the profile grew by `consolidate_every`.
    with_profile(&sql, APRIL_15 + 3, |p| remember(p, "The archive opens at nine.", "archive.hours", MemoryType::Fact));
    drain(APRIL_15 + 4, &Rules);
    assert!(!run_record(&sql).is_empty() || consolidate_jobs(&sql, false) == 0, "a run record with no job behind it");
}

/// A run whose job was parked (its reasoner kept failing) is taken up by
/// a `consolidate` call; one that stops before the end makes the job due
/// again, as its report says the alarm does the rest.
#[test]
fn test_a_consolidate_call_that_stops_early_revives_its_parked_job() {
    use agent_memory::core::ports::Sql;
    let sql = database();
    imported(&sql, 3 * WINDOW + 1);
    let first = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({ "maxWindows": 1 })));
    assert!(!first.done);
    sql.execute("UPDATE outbox SET parked = 1, attempts = 8, last_error = 'parked after 8 attempts: the model is down' WHERE kind = 'consolidate'", &[])
        .unwrap();
    let second = with_profile(&sql, APRIL_15 + 1, |p| consolidate(p, json!({ "maxWindows": 1 })));
    assert!(!second.done);
    assert_eq!(second.run_id, first.run_id);
    assert_eq!((consolidate_jobs(&sql, false), consolidate_jobs(&sql, true)), (1, 0));
    with_profile(&sql, APRIL_15 + 2, |p| {
        for _ in 0..5 {
            block_on(p.drain()).unwrap();
        }
    });
    assert_eq!((run_record(&sql), consolidate_jobs(&sql, false)), (String::new(), 0), "the alarm ended the run");
}

/// A fold whose content no memory may hold (members near the limit
/// joined past it, or nothing visible) keeps the group: nothing is
/// stored that `remember` or import would refuse.
#[test]
fn test_a_fold_past_the_content_limit_keeps_its_group() {
    use agent_memory::core::consolidate::apply::{apply, Current, Run};
    use agent_memory::core::provider::{Consolidation, Group, GroupKind};
    let sql = database();
    let long = |c: char| format!("{} happened.", c.to_string().repeat(20_000));
    let members = with_profile(&sql, APRIL_15, |p| vec![remember(p, &long('a'), "", MemoryType::Event), remember(p, &long('b'), "", MemoryType::Event)]);
    let group = Group { kind: GroupKind::Events, members: members.clone(), why: "one day".into() };
    let store = agent_memory::core::store::Store::new(&sql, APRIL_15);
    let ids: Vec<String> = members.iter().map(|m| m.id.clone()).collect();
    let current = Current::read(&store, &ids).unwrap();
    for content in [agent_memory::core::rules::consolidate::folded(&group), "\u{200B} ".to_string()] {
        let fold = Consolidation::Fold { content, reason: "same day".into() };
        let run = Run { id: "c-test", max_memories: i64::MAX };
        assert_eq!(apply(&store, &run, &group, &fold, 0, &current).unwrap(), None);
    }
    with_profile(&sql, APRIL_15, |p| assert_eq!(active(p).len(), 2, "the group was kept"));
}

// ---- expiries, undo against later writes, deletion, validity ----

/// A permanent fact and a reworded copy said with a one-day TTL merge
/// into the fuller (TTL'd) wording: the survivor holds as long as any of
/// its wordings did, here for ever, so the permanent fact is not lost when
/// the TTL passes.
#[test]
fn test_a_merge_keeps_the_latest_expiry_of_its_wordings_none_being_never() {
    let sql = database();
    let a = with_profile(&sql, APRIL_15, |p| remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact));
    let b = with_profile(&sql, APRIL_15 + 3_600_000, |p| {
        remember_with(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact, "s1", Some(86_400))
    });
    assert!(a.expires_at.is_none() && b.expires_at.is_some());
    let report = with_profile(&sql, APRIL_15 + 2 * 3_600_000, |p| consolidate(p, json!({})));
    let merge = report.actions.iter().find(|r| r.action == "merge").expect("a merge");
    assert_eq!(merge.target, b.id, "the TTL'd wording survives");
    with_profile(&sql, APRIL_15 + 3 * DAY, |p| {
        block_on(p.drain()).unwrap();
        let left = active(p);
        assert!(
            left.iter().any(|m| m.content.contains("dark mode")),
            "the permanent statement (memory {}, no expiry) was lost: survivor expired at {:?}; active now: {:?}",
            a.id,
            p.get(&b.id).unwrap().memory.expires_at,
            left.iter().map(|m| &m.content).collect::<Vec<_>>()
        );
    });
}

/// Events remembered with a TTL (50 days) fold, 40 days later, into one
/// memory that expires when the last of them would have: their words do
/// not outlive their TTL in the fold.
#[test]
fn test_a_fold_expires_when_the_last_of_its_members_would() {
    let sql = database();
    let ttl = Some(50 * 86_400);
    let events = with_profile(&sql, APRIL_15 - 40 * DAY, |p| {
        [
            "On 2026-03-01 the user moved the servers to Oslo.",
            "On 2026-03-01 the user renewed the TLS certificates.",
            "On 2026-03-01 the user rotated the API keys.",
        ]
        .iter()
        .map(|c| remember_with(p, c, "", MemoryType::Event, "s1", ttl))
        .collect::<Vec<_>>()
    });
    assert!(events.iter().all(|m| m.expires_at.is_some()));
    let report = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({})));
    let fold = report.actions.iter().find(|r| r.action == "fold").expect("a fold");
    with_profile(&sql, APRIL_15 + 20 * DAY, |p| {
        block_on(p.drain()).unwrap();
        let folded = p.get(&fold.target).unwrap().memory;
        assert!(
            !(folded.status == Status::Active && folded.content.contains("Oslo")),
            "every member expired on {:?}, yet their words are active in fold {} (expiresAt {:?}): {:?}",
            events[0].expires_at,
            folded.id,
            folded.expires_at,
            folded.content
        );
    });
}

/// A `remember` that began before a consolidation (it awaited its
/// classifier while the merge ran) supersedes the merge's survivor by key
/// after it. Its change is stamped with the remember's own time, before
/// the record's: the undo sees the change all the same (a memory counts
/// as unchanged only when it is as the consolidation left it) and is
/// refused, rather than putting the superseded survivor back active
/// beside its successor.
#[test]
fn test_an_undo_refuses_a_supersession_by_a_call_begun_before_the_consolidation() {
    let sql = database();
    let _a = with_profile(&sql, APRIL_15, |p| remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact));
    let b = with_profile(&sql, APRIL_15 + 3_600_000, |p| remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact));
    // The remember starts at +1 day; the consolidation runs at +1 day + 1 s
    // while the remember awaits its classifier.
    let model = Counting { meanwhile: Some(Meanwhile::ConsolidateWhileClassifying(&sql, APRIL_15 + DAY + 1_000)), ..Counting::default() };
    let light = with_reasoner(&sql, APRIL_15 + DAY, Default::default(), &model, |p| {
        remember_with(p, "The user now prefers the light theme in the code editor.", "user.theme", MemoryType::Fact, "s1", None)
    });
    let merge_id = with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        let survivor = p.get(&b.id).unwrap();
        assert_eq!(survivor.memory.status, Status::Superseded, "the remember superseded the merge's survivor");
        assert_eq!(survivor.memory.superseded_by.as_deref(), Some(light.id.as_str()));
        survivor.consolidations.iter().find(|c| c.action == "merge").expect("the merge").id
    });
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        let undone = p.undo_consolidation(merge_id);
        let holders: Vec<String> = active(p).into_iter().filter(|m| m.key.as_deref() == Some("user.theme")).map(|m| m.content).collect();
        assert!(
            undone.is_err(),
            "the undo overwrote the later supersession: {} active holders of user.theme: {holders:?}; {} supersededBy {:?}",
            holders.len(),
            b.id,
            p.get(&b.id).unwrap().memory.superseded_by
        );
    });
}

/// A merged memory's key gets a new value while the memory is retired
/// (no active holder, so nothing is superseded); the merge's undo is then
/// refused (409), since it would put the old value back active beside the
/// new one: two active holders of one key for one owner.
#[test]
fn test_an_undo_refuses_to_revive_a_key_value_said_again_since() {
    let sql = database();
    let a = with_profile(&sql, APRIL_15, |p| remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact));
    with_profile(&sql, APRIL_15 + 3_600_000, |p| remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact));
    let report = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
    let merge = report.actions.iter().find(|r| r.action == "merge").expect("a merge");
    assert!(merge.members.contains(&a.id) && merge.target != a.id);
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| remember(p, "The user switched to the light theme in the editor.", "user.editor_theme", MemoryType::Fact));
    with_profile(&sql, APRIL_15 + 3 * DAY, |p| {
        let undone = p.undo_consolidation(merge.id);
        let holders: Vec<String> = active(p).into_iter().filter(|m| m.key.as_deref() == Some("user.editor_theme")).map(|m| m.content).collect();
        assert!(
            undone.is_err() || holders.len() == 1,
            "undo {:?} left {} active holders of user.editor_theme: {holders:?}",
            undone.map(|r| r.id),
            holders.len()
        );
    });
}

/// A fact said in session s2 merges into its rewording from session s1.
/// Deleting session s1 deletes the survivor (and erases the record, so
/// no undo); s2's memory, superseded by nothing that remains, is active
/// again (Store::splice_out), as it would be without the consolidation.
#[test]
fn test_deleting_the_survivors_session_makes_a_merged_fact_of_another_session_active_again() {
    let sql = database();
    let a =
        with_profile(&sql, APRIL_15, |p| remember_with(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact, "s2", None));
    let b = with_profile(&sql, APRIL_15 + 3_600_000, |p| {
        remember_with(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact, "s1", None)
    });
    let report = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
    assert!(report.actions.iter().any(|r| r.action == "merge" && r.target == b.id), "{report:?}");
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        p.delete_session("s1").unwrap();
        let left = p.get(&a.id).unwrap().memory;
        assert_eq!(
            left.status,
            Status::Active,
            "session s2's memory {} is {:?}, superseded by {:?}, after only session s1 was deleted; active: {:?}",
            a.id,
            left.status,
            left.superseded_by,
            active(p).iter().map(|m| &m.content).collect::<Vec<_>>()
        );
    });
}

/// The profile's memory limit counts every stored memory, and a fold adds
/// one while its members stay (superseded): in a full profile the group
/// is kept as it is; with room for one more it folds.
#[test]
fn test_a_full_profile_keeps_a_group_it_has_no_room_to_fold() {
    let events = [
        "On 2026-03-01 the user moved the servers to Oslo.",
        "On 2026-03-01 the user renewed the TLS certificates.",
        "On 2026-03-01 the user rotated the API keys.",
    ];
    for (max, folds) in [(3, false), (4, true)] {
        let sql = database();
        let limits = agent_memory::core::ops::Limits { max_memories: max, ..Default::default() };
        let turns = TurnDirectory::new();
        with_profile_limits(&sql, APRIL_15 - 40 * DAY, &turns, limits.clone(), |p| {
            for c in events {
                remember(p, c, "", MemoryType::Event);
            }
        });
        with_profile_limits(&sql, APRIL_15, &turns, limits, |p| {
            let report = consolidate(p, json!({}));
            assert_eq!(report.actions.iter().any(|r| r.action == "fold"), folds, "limit {max}");
            let stats = p.stats().unwrap();
            assert!(stats.memories <= max, "the limit is {max} memories; stored after consolidating: {} ({:?})", stats.memories, stats.by_status);
            assert_eq!(active(p).len(), if folds { 1 } else { 3 });
        });
    }
}

/// A merge whose survivor is the older wording retires the later one
/// valid at no instant (an empty interval, as ingest gives a repeat), so
/// no `asOf` read lists the merged copy beside its survivor.
#[test]
fn test_a_merged_later_wording_is_valid_at_no_instant() {
    let sql = database();
    let a = with_profile(&sql, APRIL_15, |p| remember(p, "The user prefers dark mode in the code editor at night.", "user.editor_theme", MemoryType::Fact));
    let b = with_profile(&sql, APRIL_15 + 3_600_000, |p| remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact));
    let report = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
    let merge = report.actions.iter().find(|r| r.action == "merge").expect("a merge");
    assert_eq!(merge.target, a.id, "the fuller, older wording survives");
    with_profile(&sql, APRIL_15 + 30 * DAY, |p| {
        let merged = p.get(&b.id).unwrap().memory;
        let as_of = agent_memory::core::time::iso(APRIL_15 + 20 * DAY);
        let listed: Vec<String> =
            p.list(ListRequest { as_of: Some(as_of.clone()), limit: Some(100), ..Default::default() }).unwrap().memories.into_iter().map(|m| m.id).collect();
        assert!(
            !listed.contains(&b.id),
            "asOf {as_of} lists the merged copy {} (status {:?}, validTo {:?}) beside its survivor: {listed:?}",
            b.id,
            merged.status,
            merged.valid_to
        );
    });
}

/// A merged memory that superseded a value of another session; that
/// session is deleted (the version spliced out of the chain, a change of
/// the memory), then the merge's undo is refused (409) rather than putting
/// back a link to the deleted memory, and the profile's export imports.
#[test]
fn test_an_undo_after_a_splice_is_refused_and_puts_back_no_link_to_a_deleted_memory() {
    let sql = database();
    let old = with_profile(&sql, APRIL_15, |p| {
        remember_with(p, "The user prefers light mode in the code editor.", "user.editor_theme", MemoryType::Fact, "s1", None)
    });
    let mid = with_profile(&sql, APRIL_15 + 3_600_000, |p| {
        remember_with(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact, "s2", None)
    });
    with_profile(&sql, APRIL_15 + 7_200_000, |p| {
        remember_with(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact, "s3", None)
    });
    let merge = with_profile(&sql, APRIL_15 + DAY, |p| {
        assert_eq!(p.get(&mid.id).unwrap().memory.supersedes.as_deref(), Some(old.id.as_str()));
        consolidate(p, json!({}))
    })
    .actions
    .into_iter()
    .find(|r| r.action == "merge")
    .expect("a merge");
    let file = with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        p.delete_session("s1").unwrap();
        assert_eq!(p.get(&mid.id).unwrap().memory.supersedes, None, "spliced out");
        let undone = p.undo_consolidation(merge.id).unwrap_err();
        assert!(undone.is_conflict(), "the splice changed a memory the merge copied: {undone}");
        let back = p.get(&mid.id).unwrap().memory;
        let dangling = back.supersedes.clone().filter(|id| p.get(id).is_err());
        (p.export(Default::default()).unwrap(), dangling)
    });
    let fresh = database();
    with_profile(&fresh, APRIL_15 + 3 * DAY, |p| {
        let imported = p.import(&file.0);
        assert!(imported.is_ok() && file.1.is_none(), "supersedes a deleted memory: {:?}; import into a fresh profile: {:?}", file.1, imported.err());
    });
}

/// Two sessions said one thing in two wordings; consolidation merged them
/// (the survivor cites both messages). Deleting the merged wording's
/// session leaves the survivor, which its own session said, citing what
/// remains (Store::keep_merged).
#[test]
fn test_deleting_the_merged_wordings_session_keeps_what_the_survivors_session_said() {
    let sql = database();
    let said = |s: &str, content: &str| agent_memory::core::api::IngestRequest {
        messages: vec![support::msg("user", content)],
        session_id: Some(s.into()),
        metadata: Default::default(),
    };
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(said("s1", "The office coffee machine stands on the third floor beside the lifts at the back."))).unwrap()
    });
    with_profile(&sql, APRIL_15 + 3_600_000, |p| {
        block_on(p.ingest(said("s2", "Beside the lifts on the third floor stands the office coffee machine."))).unwrap()
    });
    let report = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
    let merge = report.actions.iter().find(|r| r.action == "merge").expect("a merge");
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        let survivor = p.get(&merge.target).unwrap().memory;
        let other = if survivor.session_id == "s1" { "s2" } else { "s1" };
        let kept_session = survivor.session_id.clone();
        p.delete_session(other).unwrap();
        let left: Vec<_> = active(p).into_iter().filter(|m| m.content.contains("coffee")).collect();
        assert_eq!(p.store().session_messages(&kept_session).unwrap().len(), 1, "session {kept_session} still says it");
        assert_eq!(left.len(), 1, "session {kept_session}'s statement is gone with session {other}: {left:#?}");
    });
}

/// The merged wording's key is said again with a new value while it is
/// merged away (the new value supersedes nothing); deleting the survivor's
/// session leaves the merged wording superseded by the new value, not
/// active beside it (undo refuses that state too, 409).
#[test]
fn test_deleting_the_survivors_session_does_not_revive_a_value_said_again_since() {
    let sql = database();
    let a =
        with_profile(&sql, APRIL_15, |p| remember_with(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact, "s2", None));
    with_profile(&sql, APRIL_15 + 3_600_000, |p| {
        remember_with(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact, "s1", None)
    });
    let report = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
    assert!(report.actions.iter().any(|r| r.action == "merge"), "{report:?}");
    let c = with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        remember_with(p, "The user now prefers light mode in the code editor.", "user.editor_theme", MemoryType::Fact, "s3", None)
    });
    with_profile(&sql, APRIL_15 + 3 * DAY, |p| {
        assert_eq!(p.get(&c.id).unwrap().memory.status, Status::Active);
        p.delete_session("s1").unwrap();
        let holders: Vec<(String, String)> =
            active(p).into_iter().filter(|m| m.key.as_deref() == Some("user.editor_theme")).map(|m| (m.id, m.content)).collect();
        assert_eq!(holders.len(), 1, "two active holders of user.editor_theme ({} revived): {holders:#?}", a.id);
    });
}

/// Keyed siblings fold (a fold holds no key). A later value of one of
/// their keys reopens the fold (its undo), so it supersedes the old value
/// as it would have without the fold, and the other members come back
/// active (the next run may fold them again).
#[test]
fn test_a_later_value_of_a_folded_members_key_reopens_the_fold_and_supersedes_it() {
    let sql = database();
    let ingest = |p: &Profile<'_>, text: &str| {
        let messages = vec![support::msg("user", text)];
        block_on(p.ingest(agent_memory::core::api::IngestRequest { messages, session_id: Some("s1".into()), metadata: Default::default() })).unwrap()
    };
    let fold = three_statements_folded(&sql);
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let r = ingest(p, "My favorite color is green now.");
        assert_eq!(r.memories_superseded, 1, "the folded value is superseded");
        let active = active(p);
        let still: Vec<&str> = active.iter().filter(|m| m.content.contains("blue")).map(|m| m.content.as_str()).collect();
        assert!(still.is_empty(), "the old favorite color is still active beside the new one: {still:?}");
        assert!(active.iter().any(|m| m.content.contains("Acme")), "the fold's other member is back");
        assert!(p.get(&fold.target).is_err(), "the fold is undone");
    });
}

/// An agent's statement reaches only its own session's holder of a key
/// (two support calls' refund references are two refunds), so a new
/// call's refund reference supersedes nothing in another session: it must
/// not undo that session's fold either.
#[test]
fn test_an_agents_value_in_another_session_does_not_reopen_a_fold() {
    let sql = database();
    let call = |session: &str, text: &str| agent_memory::core::api::IngestRequest {
        messages: vec![support::msg("user", "I returned the item two weeks ago and still have not seen the money back."), support::msg("assistant", text)],
        session_id: Some(session.into()),
        metadata: Default::default(),
    };
    with_profile(&sql, APRIL_15 - 90 * DAY, |p| {
        block_on(p.ingest(call("lamp-call", "The refund reference is RF-100001. Your order number is 55512."))).unwrap()
    });
    let fold = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({}))).actions.into_iter().find(|r| r.action == "fold").expect("a fold");
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let r = block_on(p.ingest(call("kettle-call", "The refund reference is RF-200002."))).unwrap();
        assert_eq!(r.memories_superseded, 0, "another call's refund is not replaced");
        assert!(p.get(&fold.target).is_ok(), "the lamp call's fold was undone by a statement that supersedes none of its members");
    });
}

/// Many support calls, each one's statements folded: one more call's
/// refund reference (an agent's, reaching only its own session) tries to
/// undo none of the folds holding the key, so its ingest costs a handful
/// of statements, not several for each fold, on every later statement of
/// the key.
#[test]
fn test_a_keyed_statement_does_not_cost_a_statement_per_fold_of_its_key() {
    const CALLS: usize = 300;
    let sql = database();
    let call = |session: String, text: String| agent_memory::core::api::IngestRequest {
        messages: vec![support::msg("assistant", &text)],
        session_id: Some(session),
        metadata: Default::default(),
    };
    with_profile(&sql, APRIL_15 - 90 * DAY, |p| {
        for i in 0..CALLS {
            block_on(p.ingest(call(format!("call-{i}"), format!("The refund reference is RF-{}. Your order number is {}.", 100_000 + i, 50_000 + i)))).unwrap();
        }
    });
    let folds = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({"maxWindows": 10}))).actions.iter().filter(|r| r.action == "fold").count();
    assert!(folds >= CALLS, "{folds} folds");
    let mut seen = Vec::new();
    for (n, at) in [(1, APRIL_15 + DAY), (2, APRIL_15 + 2 * DAY)] {
        let recorded = support::Recorded::new(&sql, |_| true);
        let started = std::time::Instant::now();
        with_profile(&recorded, at, |p| block_on(p.ingest(call(format!("new-call-{n}"), format!("The refund reference is RF-99999{n}.")))).unwrap());
        let statements = recorded.seen.borrow().len();
        let undo_reads = recorded.seen.borrow().iter().filter(|(s, _)| s.contains("FROM consolidations WHERE id = ?")).count();
        println!("ingest {n}: {statements} statements, {undo_reads} folds tried, {:?}", started.elapsed());
        seen.push((n, statements, undo_reads));
    }
    assert!(
        seen.iter().all(|&(_, statements, undo_reads)| undo_reads <= 1 && statements < 100),
        "ingests of one statement (n, statements, folds tried): {seen:?}"
    );
}

/// Two support calls' refund references are both active (an agent's key
/// reaches its own session). A new refund reference in the first call
/// reopens that call's fold and supersedes its old reference: the
/// other call's reference is no value of this call's key.
#[test]
fn test_an_agents_new_value_reopens_its_own_sessions_fold_while_another_session_holds_the_key() {
    let sql = database();
    let call = |session: &str, user: &str, text: &str| agent_memory::core::api::IngestRequest {
        messages: vec![support::msg("user", user), support::msg("assistant", text)],
        session_id: Some(session.into()),
        metadata: Default::default(),
    };
    let user = "I returned the item two weeks ago and still have not seen the money back.";
    with_profile(&sql, APRIL_15 - 90 * DAY, |p| {
        block_on(p.ingest(call("lamp-call", user, "The refund reference is RF-100001. Your order number is 55512."))).unwrap()
    });
    let fold = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({}))).actions.into_iter().find(|r| r.action == "fold").expect("a fold");
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let r = block_on(p.ingest(call("kettle-call", user, "The refund reference is RF-200002."))).unwrap();
        assert_eq!(r.memories_superseded, 0, "another call's refund is not replaced");
    });
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        let r = block_on(p.ingest(call("lamp-call", "Was the refund reissued?", "The refund reference is RF-100009."))).unwrap();
        let refunds: Vec<(String, String)> = active(p).into_iter().filter(|m| m.content.contains("RF-")).map(|m| (m.session_id, m.content)).collect();
        assert!(
            p.get(&fold.target).is_err() && r.memories_superseded == 1,
            "the lamp call's fold stayed, its old RF-100001 active in it beside RF-100009 (superseded {}): {refunds:#?}",
            r.memories_superseded
        );
    });
}

/// The alarm's scheduled run, its job parked while the model was down, is
/// tried once more a day later and ends: the schedule is not stopped for
/// good (a run in progress holds it).
#[test]
fn test_a_scheduled_run_parked_while_the_model_was_down_ends_a_day_later() {
    const HOUR: i64 = 3_600_000;
    let sql = database();
    let model = Counting::default();
    model.down.set(true);
    let drain = |at: i64| with_reasoner(&sql, at, every_three(), &model, |p| block_on(p.drain()).unwrap());
    with_reasoner(&sql, APRIL_15, every_three(), &model, |p| {
        remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact);
        remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact);
        remember(p, "The deploy window is Tuesday morning.", "team.deploy_window", MemoryType::Fact);
    });
    for h in 0..12 {
        drain(APRIL_15 + h * HOUR);
    }
    let stats = with_reasoner(&sql, APRIL_15 + 12 * HOUR, every_three(), &model, |p| p.stats().unwrap());
    assert_eq!(stats.parked_jobs, 1, "the run's job is parked: {stats:?}");
    assert_eq!(stats.parked[0].kind, "consolidate");
    assert!(stats.parked[0].error.contains("model unavailable"), "{:?}", stats.parked);
    model.down.set(false);
    let consolidated: usize = (13..40).map(|h| drain(APRIL_15 + h * HOUR).consolidated).sum();
    assert!(consolidated > 0, "the run ended once its job was tried again");
    let after = with_reasoner(&sql, APRIL_15 + 40 * HOUR, every_three(), &model, |p| (p.stats().unwrap(), active(p).len()));
    assert_eq!((after.0.parked_jobs, after.1), (0, 2), "the rewordings merged: {:?}", after.0);
}

/// Two sessions' messages, each giving the same event in the same words;
/// the first also gives a fact of its own. Imported 40 and 20 days before
/// APRIL_15 (ids 0x301, 0x302 and 0x303, the fact).
fn merge_fixture(sql: &support::NativeSql) -> (String, String) {
    let iso = |days: i64| agent_memory::core::time::iso(APRIL_15 - days * DAY);
    let cake = "The team celebrated the dashboard launch with a big chocolate cake.";
    let office = "The design office moved to the third floor.";
    let mut lines = vec![json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "profile": "ns/p" })];
    let mut ids = Vec::new();
    for (n, days, session) in [(1, 40, "sx"), (2, 20, "sy")] {
        let said = if n == 1 { format!("{cake} {office}") } else { cake.to_string() };
        let message = agent_memory::core::ids::message_id(session, "user", &said);
        lines.push(json!({ "kind": "message", "id": message, "sessionId": session, "role": "user", "content": said, "timestamp": iso(days), "position": 0, "createdAt": iso(days) }));
        let mut memories = vec![(0x300 + n, cake)];
        if n == 1 {
            memories.push((0x303, office));
        }
        for (id, content) in memories {
            lines.push(json!({
                "kind": "memory", "id": format!("{id:032x}"), "type": "event", "summary": content, "content": content, "sessionId": session,
                "sourceMessageIds": [message], "searchQueries": [], "status": "active",
                "createdAt": iso(days), "updatedAt": iso(days), "validFrom": iso(days), "metadata": { "agentId": "a1" }
            }));
        }
        ids.push(message);
    }
    let file: String = lines.iter().map(|l| format!("{l}\n")).collect();
    with_profile(sql, APRIL_15, |p| p.import(&file).unwrap());
    (ids[0].clone(), ids[1].clone())
}

/// Deleting a merge's survivor by id deletes the messages it was drawn
/// from, not those it took from the wordings merged into it: the merged
/// wordings go with it (they said what it says), and another session's
/// message, with the other memories it gave, stays.
#[test]
fn test_deleting_a_merge_survivor_keeps_the_messages_its_merged_wordings_came_from() {
    let sql = database();
    let (first, second) = merge_fixture(&sql);
    let [member, survivor, fact] = [0x301, 0x302, 0x303].map(|n: i32| format!("{n:032x}"));
    with_profile(&sql, APRIL_15, |p| {
        let report = consolidate(p, json!({}));
        assert!(report.actions.iter().any(|r| r.action == "merge" && r.target == survivor), "{report:?}");
        let deleted = p.delete(&survivor).unwrap();
        assert_eq!(deleted.deleted_messages, vec![second.clone()]);
        let mut gone = deleted.deleted_memories.clone();
        gone.sort();
        assert_eq!(gone, vec![member.clone(), survivor.clone()], "the merged wording goes with the survivor");
        assert_eq!(p.get(&fact).unwrap().memory.status, Status::Active, "the other session's message gave it, and stays");
        let kept: Vec<String> = p.export(Default::default()).unwrap().lines().filter(|l| l.contains("\"kind\":\"message\"")).map(String::from).collect();
        assert!(kept.len() == 1 && kept[0].contains(&first), "{kept:?}");
        assert!(active(p).iter().all(|m| !m.content.contains("chocolate cake")), "the deleted statement is gone");
        let export = p.export(Default::default()).unwrap();
        assert!(export.lines().any(|l| l.contains("\"kind\":\"withheld\"") && l.contains(&first)), "the message keeps what it gave, by fingerprint: {export}");
    });
}

/// A fold was drawn from no message of its own: deleting it by id takes
/// its members (their words are its words) and leaves the message they
/// came from, keeping their fingerprints.
#[test]
fn test_deleting_a_fold_takes_its_members_and_leaves_their_message() {
    let sql = database();
    old_siblings(&sql);
    with_profile(&sql, APRIL_15, |p| {
        let before = active(p);
        let fold = consolidate(p, json!({})).actions.into_iter().find(|r| r.action == "fold").expect("a fold");
        let deleted = p.delete(&fold.target).unwrap();
        assert!(deleted.deleted_messages.is_empty(), "{deleted:?}");
        assert!(before.iter().all(|m| deleted.deleted_memories.contains(&m.id)), "its members go with it: {deleted:?}");
        assert!(active(p).is_empty());
        let stats = p.stats().unwrap();
        assert_eq!((stats.messages, stats.memories), (1, 0));
    });
}

/// Forgetting a memory folded away puts it back first (the fold undone):
/// its words leave the profile's active memories with it, and the fold's
/// other members are active again. Before, they stayed active in the
/// fold, which no undo could open any more.
#[test]
fn test_forgetting_a_folded_member_takes_its_words_out_of_the_fold() {
    let sql = database();
    old_siblings(&sql);
    with_profile(&sql, APRIL_15, |p| {
        let before = active(p);
        let fold = consolidate(p, json!({})).actions.into_iter().find(|r| r.action == "fold").expect("a fold");
        let edinburgh = before.iter().find(|m| m.content.contains("Edinburgh")).expect("the Edinburgh statement");
        assert!(fold.members.contains(&edinburgh.id), "{fold:?}");
        assert_eq!(p.forget(&edinburgh.id).unwrap().status, Status::Forgotten);
        let now: Vec<String> = active(p).into_iter().map(|m| m.content).collect();
        assert!(now.iter().all(|c| !c.contains("Edinburgh")), "its words are active still: {now:?}");
        let others = before.iter().filter(|m| m.id != edinburgh.id).count();
        assert_eq!(now.len(), others, "the fold's other members are back: {now:?}");
    });
}

/// A fold that cannot be undone (its metadata updated since) makes
/// forgetting one of its members a 409 that changes nothing.
#[test]
fn test_forgetting_a_member_of_a_fold_that_cannot_be_undone_is_refused() {
    let sql = database();
    old_siblings(&sql);
    let fold = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({})).actions.into_iter().find(|r| r.action == "fold").expect("a fold"));
    with_profile(&sql, APRIL_15 + DAY, |p| {
        p.update(serde_json::from_value(json!({"id": fold.target, "metadata": {"agentId": "chat", "pinned": true}})).unwrap()).unwrap();
        let before = export_body(p);
        let e = p.forget(&fold.members[0]).unwrap_err();
        assert_eq!(e.status(), 409, "{e}");
        assert!(e.message().contains(&fold.target) || e.message().contains("consolidation"), "{e}");
        assert_eq!(export_body(p), before, "nothing changed");
    });
}

/// Rewordings with different metadata are not merged: the survivor keeps
/// its own metadata, so a filter on the other's would find nothing the
/// profile still says.
#[test]
fn test_rewordings_with_different_metadata_are_not_merged() {
    let sql = database();
    let say = |p: &Profile<'_>, content: &str, priority: i64| {
        block_on(
            p.remember(serde_json::from_value(json!({ "content": content, "type": "event", "metadata": { "agentId": "a1", "priority": priority } })).unwrap()),
        )
        .unwrap()
    };
    with_profile(&sql, APRIL_15 - 40 * DAY, |p| say(p, "The team celebrated the dashboard launch with a big chocolate cake.", 1));
    with_profile(&sql, APRIL_15 - 20 * DAY, |p| say(p, "The team celebrated the launch of the dashboard with a big chocolate cake.", 2));
    with_profile(&sql, APRIL_15, |p| {
        let report = consolidate(p, json!({}));
        assert!(report.actions.iter().all(|r| r.action != "merge"), "{report:?}");
        for priority in [1, 2] {
            let filter = serde_json::from_value(json!({ "priority": priority })).unwrap();
            let found = p.list(ListRequest { filter: Some(filter), ..Default::default() }).unwrap().memories;
            assert_eq!(found.len(), 1, "priority {priority}");
        }
    });
}

/// Only statements with the same metadata fold: one whose metadata an
/// update changed stays out of its siblings' fold, active, and a filter
/// on its metadata finds it.
#[test]
fn test_a_sibling_with_other_metadata_stays_out_of_the_fold() {
    let sql = database();
    old_siblings(&sql);
    let marked = with_profile(&sql, APRIL_15 - 80 * DAY, |p| {
        let edinburgh = active(p).into_iter().find(|m| m.content.contains("Edinburgh")).expect("the Edinburgh statement");
        p.update(serde_json::from_value(json!({"id": edinburgh.id, "metadata": {"agentId": "chat", "team": "x"}})).unwrap()).unwrap().id
    });
    with_profile(&sql, APRIL_15, |p| {
        let fold = consolidate(p, json!({})).actions.into_iter().find(|r| r.action == "fold").expect("the others fold");
        assert!(!fold.members.contains(&marked), "{fold:?}");
        let filter = serde_json::from_value(json!({ "team": "x" })).unwrap();
        let found: Vec<String> = p.list(ListRequest { filter: Some(filter), ..Default::default() }).unwrap().memories.into_iter().map(|m| m.id).collect();
        assert_eq!(found, vec![marked.clone()]);
    });
}

/// Three statements of one message of session s1, said 90 days before
/// APRIL_15 (a consolidation then folds them).
fn old_siblings(sql: &support::NativeSql) {
    with_profile(sql, APRIL_15 - 90 * DAY, |p| {
        block_on(p.ingest(agent_memory::core::api::IngestRequest {
            messages: vec![support::msg("user", "My favorite color is blue. I live in Edinburgh. I work at Acme as a designer.")],
            session_id: Some("s1".into()),
            metadata: serde_json::from_value(json!({"agentId": "chat"})).unwrap(),
        }))
        .unwrap();
    });
}

/// An export carries the consolidations (with the memories as they were
/// before each), and an import writes them back: in the copy a later
/// value of a folded member's key reopens the fold as in the original,
/// and the fold can be undone. Before, the copy kept the fold's old value
/// active beside the new one, and no undo.
#[test]
fn test_consolidations_travel_through_export_and_import() {
    let sql = database();
    old_siblings(&sql);
    let (fold, export) = with_profile(&sql, APRIL_15, |p| {
        let fold = consolidate(p, json!({})).actions.into_iter().find(|r| r.action == "fold").expect("a fold");
        (fold, p.export(Default::default()).unwrap())
    });
    assert_eq!(export.lines().filter(|l| l.contains("\"kind\":\"consolidation\"")).count(), 1, "{export}");
    let copy = database();
    with_profile(&copy, APRIL_15 + DAY, |p| {
        p.import(&export).unwrap();
        assert_eq!(p.export(Default::default()).unwrap().lines().skip(1).collect::<Vec<_>>(), export.lines().skip(1).collect::<Vec<_>>());
        assert_eq!(p.get(&fold.target).unwrap().consolidations.len(), 1);
        block_on(p.ingest(agent_memory::core::api::IngestRequest {
            messages: vec![support::msg("user", "My favorite color is green now.")],
            session_id: Some("s1".into()),
            metadata: serde_json::from_value(json!({"agentId": "chat"})).unwrap(),
        }))
        .unwrap();
        let now: Vec<String> = active(p).into_iter().map(|m| m.content).collect();
        assert!(now.iter().all(|c| !c.contains("blue")), "the fold's old value is active beside the new one: {now:?}");
        assert!(now.iter().any(|c| c.contains("Acme")), "the fold's other member is back: {now:?}");
    });
    let again = database();
    with_profile(&again, APRIL_15 + DAY, |p| {
        p.import(&export).unwrap();
        p.undo_consolidation(fold.id).unwrap();
        assert_eq!(active(p).len(), fold.members.len(), "the members are back");
    });
}

fn third_wording_as(sql: &support::NativeSql, cake: &str) -> String {
    let iso = |days: i64| agent_memory::core::time::iso(APRIL_15 - days * DAY);
    let message = agent_memory::core::ids::message_id("sz", "user", cake);
    let lines = [
        json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "profile": "ns/p" }),
        json!({ "kind": "message", "id": message, "sessionId": "sz", "role": "user", "content": cake, "timestamp": iso(10), "position": 0, "createdAt": iso(10) }),
        json!({
            "kind": "memory", "id": format!("{:032x}", 0x304), "type": "event", "summary": cake, "content": cake, "sessionId": "sz",
            "sourceMessageIds": [message], "searchQueries": [], "status": "active",
            "createdAt": iso(10), "updatedAt": iso(10), "validFrom": iso(10), "metadata": { "agentId": "a1" }
        }),
    ];
    let file: String = lines.iter().map(|l| format!("{l}\n")).collect();
    with_profile(sql, APRIL_15, |p| p.import(&file).unwrap());
    message
}

/// A profile whose consolidation ids are 1 and 3 (2 erased, as a
/// delete by id erases records): two retired tasks.
fn profile_with_a_gap_in_consolidation_ids(sql: &support::NativeSql) {
    let iso = |days: i64| agent_memory::core::time::iso(APRIL_15 - days * DAY);
    let mut lines = vec![json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "profile": "ns/q" })];
    for (n, id) in [(0x501, 1), (0x502, 3)] {
        let task = json!({
            "id": format!("{n:032x}"), "type": "task", "summary": "Call the plumber about the leak.", "content": format!("Call the plumber about leak {n}."), "sessionId": "q1",
            "sourceMessageIds": [], "searchQueries": [], "status": "active",
            "createdAt": iso(60), "updatedAt": iso(60), "validFrom": iso(60), "metadata": {}
        });
        let mut retired = task.clone();
        retired["status"] = json!("expired");
        retired["expiresAt"] = json!(iso(30));
        retired["updatedAt"] = json!(iso(30));
        retired["kind"] = json!("memory");
        lines.push(retired);
        lines.push(json!({
            "kind": "consolidation", "id": id, "runId": "q-run", "action": "retire", "target": format!("{n:032x}"), "members": [format!("{n:032x}")], "created": [],
            "reason": "stale task", "at": iso(30), "before": [task]
        }));
    }
    let file: String = lines.iter().map(|l| format!("{l}\n")).collect();
    with_profile(sql, APRIL_15, |p| p.import(&file).unwrap());
}

/// A copy whose consolidation ids have a gap (a delete by id erases
/// records) takes an export's records in the order they were made, which
/// delete and undo read them by: deleting the survivor of two merges takes
/// only its own message, and both merges undo, the later first.
#[test]
fn test_imported_consolidations_keep_the_order_they_were_made_in() {
    let sql = database();
    let (first, _) = merge_fixture(&sql);
    let survivor = format!("{:032x}", 0x302);
    with_profile(&sql, APRIL_15, |p| consolidate(p, json!({})));
    third_wording_as(&sql, "The team celebrated the dashboard launch with a chocolate cake.");
    with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
    let export = with_profile(&sql, APRIL_15 + DAY, |p| p.export(Default::default()).unwrap());
    assert_eq!(export.lines().filter(|l| l.contains("\"kind\":\"consolidation\"")).count(), 2, "{export}");
    let copy = database();
    profile_with_a_gap_in_consolidation_ids(&copy);
    with_profile(&copy, APRIL_15 + 2 * DAY, |p| {
        p.import(&export).unwrap();
        let ids: Vec<i64> = p.get(&survivor).unwrap().consolidations.iter().map(|r| r.id).collect();
        assert!(ids.len() == 2 && ids[0] < ids[1] && ids[0] > 3, "after the copy's own, in order: {ids:?}");
        let deleted = p.delete(&survivor).unwrap();
        assert!(!deleted.deleted_messages.contains(&first), "took {:?}", deleted.deleted_messages);
        assert_eq!(p.get(&format!("{:032x}", 0x303)).unwrap().memory.status, Status::Active, "the other session's fact stays");
    });
    let again = database();
    profile_with_a_gap_in_consolidation_ids(&again);
    with_profile(&again, APRIL_15 + 2 * DAY, |p| {
        p.import(&export).unwrap();
        let ids: Vec<i64> = p.get(&survivor).unwrap().consolidations.iter().map(|r| r.id).collect();
        for id in ids.iter().rev() {
            p.undo_consolidation(*id).unwrap();
        }
    });
}

/// An export made after a fold was undone (here by forgetting one of its
/// members) imports: the undone record, whose creation is gone, is left
/// out of the file.
#[test]
fn test_an_export_made_after_a_fold_was_undone_imports() {
    let sql = database();
    old_siblings(&sql);
    let export = with_profile(&sql, APRIL_15, |p| {
        let fold = consolidate(p, json!({})).actions.into_iter().find(|r| r.action == "fold").expect("a fold");
        p.forget(&fold.members[0]).unwrap();
        p.export(Default::default()).unwrap()
    });
    assert!(!export.contains("\"kind\":\"consolidation\""), "{export}");
    with_profile(&database(), APRIL_15 + DAY, |p| p.import(&export).unwrap());
}

/// A profile of active facts imported into `sql`, `content(i)` each, with
/// the ids `id(i)`, made `created` (their embeddings done).
fn imported_as(sql: &support::NativeSql, memories: usize, content: impl Fn(usize) -> String, id: impl Fn(usize) -> String) {
    let file = facts_file(memories, content, id);
    with_profile(sql, APRIL_15, |p| {
        p.import(&file).unwrap();
        while p.stats().unwrap().pending_jobs > 0 {
            block_on(p.drain()).unwrap();
        }
    });
}

/// An export file of `memories` active facts.
fn facts_file(memories: usize, content: impl Fn(usize) -> String, id: impl Fn(usize) -> String) -> String {
    let header = json!({ "kind": "header", "format": "agent-memory-export", "version": 1, "profile": "ns/p", "exportedAt": "2026-01-01T00:00:00.000Z" });
    let lines = (0..memories).map(|i| {
        let content = content(i);
        json!({
            "kind": "memory", "id": id(i), "type": "fact", "summary": content.chars().take(100).collect::<String>(), "content": content, "sessionId": null,
            "sourceMessageIds": [], "searchQueries": [], "status": "active",
            "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z"
        })
    });
    std::iter::once(header).chain(lines).map(|l| format!("{l}\n")).collect()
}

/// A window reads at most `WINDOW_BYTES` of memories' content (and the
/// one that crosses it): planning holds every memory's stems and pairs
/// them, and a thousand memories of 30 KB took a window to 235 MiB of the
/// Wasm memory the isolate's profiles share. The run goes on with the
/// rest, and the windows together read every memory once.
#[test]
fn test_a_window_reads_at_most_its_bytes_of_memories() {
    use agent_memory::core::consolidate::WINDOW_BYTES;
    let sql = database();
    let size = 30 * 1024;
    // Words of their own in every memory (letters only).
    let word = |i: usize, j: usize| -> String { (0..4u32).map(|k| char::from(b'a' + ((i * 7919 + j * 104_729) / 26usize.pow(k) % 26) as u8)).collect() };
    let content = |i: usize| {
        let mut s = String::new();
        let mut j = 0;
        while s.len() < size {
            s.push_str(&word(i, j));
            s.push_str(if j % 12 == 11 { ". " } else { " " });
            j += 1;
        }
        s
    };
    let n = 40;
    imported_as(&sql, n, content, |i| format!("{i:032x}"));
    let per_window = WINDOW_BYTES / size + 1;
    let first = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({"maxWindows": 1})));
    assert_eq!(first.examined, per_window, "{size}-byte memories, {WINDOW_BYTES} bytes a window");
    assert!(!first.done);
    let rest = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({"maxWindows": 10})));
    assert_eq!(first.examined + rest.examined, n, "every memory read once");
    assert!(rest.done);
}

/// A call whose windows went through every memory says the run is done
/// (and ends it), though it could have gone through more.
#[test]
fn test_a_run_whose_windows_read_everything_is_done() {
    let sql = database();
    imported(&sql, 200);
    let report = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({"maxWindows": 1})));
    assert_eq!(report.examined, 200);
    assert!(report.done, "{report:?}");
    assert_eq!(run_record(&sql), "", "the run ended");
    assert_eq!(consolidate_jobs(&sql, false) + consolidate_jobs(&sql, true), 0, "and its job with it");
}

/// A run reads the memories written before it began, whatever their ids:
/// an import keeps ids that sort after every id the service makes, and
/// with one of them the newest id no longer marks where the run stops.
/// Memories written while it goes are left to the next run, and count
/// toward beginning it.
#[test]
fn test_a_run_reads_only_memories_written_before_it_began_and_the_others_count_toward_the_next() {
    let sql = database();
    let turns = Default::default();
    let limits = || agent_memory::core::ops::Limits { consolidate_every: Some(10), ..Default::default() };
    // Ten facts, one of them with an id past every ULID.
    imported_as(&sql, 10, |i| format!("Shelf {i} in the archive holds ledgers."), |i| if i == 9 { format!("f{:031x}", 1) } else { format!("{i:032x}") });
    with_profile_limits(&sql, APRIL_15, &turns, limits(), |p| {
        assert!(agent_memory::core::consolidate::schedule(p, 10).unwrap(), "ten written: a run begins");
    });
    // Twelve more while the run goes.
    with_profile_limits(&sql, APRIL_15 + 60_000, &turns, limits(), |p| {
        for i in 0..12 {
            remember(p, &format!("Cabinet {i} in the hall holds maps of the coast."), &format!("hall.cabinet_{i}"), MemoryType::Fact);
        }
    });
    let report = with_profile_limits(&sql, APRIL_15 + 120_000, &turns, limits(), |p| consolidate(p, json!({})));
    assert!(report.done);
    assert_eq!(report.examined, 10, "the run reads what was written before it began: {report:?}");
    with_profile_limits(&sql, APRIL_15 + 180_000, &turns, limits(), |p| {
        assert!(agent_memory::core::consolidate::schedule(p, 10).unwrap(), "twelve written since the last run began: the next begins");
    });
}

/// A fold holds from when its last member was said: before, a read at an
/// instant shows each member as it was then, and nothing said later.
#[test]
fn test_a_fold_shows_in_point_in_time_reads_only_once_its_last_member_was_said() {
    let sql = database();
    let said = [APRIL_15 - 60 * DAY, APRIL_15 - 50 * DAY, APRIL_15 - 40 * DAY];
    let texts =
        ["On 2026-02-01 the team chose project Falcon.", "On 2026-02-01 the team hired two designers.", "On 2026-02-01 the team cancelled project Falcon."];
    let events: Vec<_> = said.iter().zip(texts).map(|(&at, c)| with_profile(&sql, at, |p| remember_with(p, c, "", MemoryType::Event, "s1", None))).collect();
    let report = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({})));
    let fold = report.actions.iter().find(|r| r.action == "fold").expect("a fold");
    let at = |instant: i64| -> Vec<String> {
        with_profile(&sql, APRIL_15, |p| {
            let mut ids: Vec<String> = p
                .list(ListRequest { as_of: Some(agent_memory::core::time::iso(instant)), limit: Some(100), ..Default::default() })
                .unwrap()
                .memories
                .into_iter()
                .map(|m| m.id)
                .collect();
            ids.sort();
            ids
        })
    };
    assert_eq!(at(APRIL_15 - 55 * DAY), vec![events[0].id.clone()], "55 days ago only the first was said");
    let mut two = vec![events[0].id.clone(), events[1].id.clone()];
    two.sort();
    assert_eq!(at(APRIL_15 - 45 * DAY), two);
    assert_eq!(at(APRIL_15 - 30 * DAY), vec![fold.target.clone()], "once all were said, the fold");
}

/// Statements of one message fold only with those that expire when they
/// do: a fold expires as a whole, so a statement meant to expire would
/// live on in a fold with one that never does.
#[test]
fn test_a_statement_that_expires_is_not_folded_with_one_that_does_not() {
    let sql = database();
    let ttl = Some(50 * 86_400);
    let (temporary, _) = with_profile(&sql, APRIL_15 - 40 * DAY, |p| {
        let temporary = remember_with(p, "On 2026-03-01 the temporary door code was 4711.", "", MemoryType::Event, "s1", ttl);
        let lasting = [
            "On 2026-03-01 the user moved the servers to Oslo.",
            "On 2026-03-01 the user renewed the TLS certificates.",
            "On 2026-03-01 the user rotated the API keys.",
        ]
        .iter()
        .map(|c| remember_with(p, c, "", MemoryType::Event, "s1", None).id)
        .collect::<Vec<_>>();
        (temporary, lasting)
    });
    let report = with_profile(&sql, APRIL_15, |p| consolidate(p, json!({})));
    let fold = report.actions.iter().find(|r| r.action == "fold").expect("the lasting ones fold");
    assert!(!fold.members.contains(&temporary.id), "{fold:?}");
    with_profile(&sql, APRIL_15 + 20 * DAY, |p| {
        block_on(p.drain()).unwrap();
        let listed = p.list(ListRequest { limit: Some(100), ..Default::default() }).unwrap().memories;
        assert!(listed.iter().all(|m| !m.content.contains("4711")), "the door code expired with its memory: {listed:#?}");
    });
}

/// A grouping a person took back stays undone: a later run finds the same
/// wordings alike again and leaves them as they are (it made them again,
/// run after run).
#[test]
fn test_a_later_run_does_not_make_an_undone_merge_again() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| remember(p, "The user prefers dark mode in the code editor.", "user.editor_theme", MemoryType::Fact));
    with_profile(&sql, APRIL_15 + 3_600_000, |p| remember(p, "In the code editor, the user prefers the dark mode.", "user.theme", MemoryType::Fact));
    let report = with_profile(&sql, APRIL_15 + DAY, |p| consolidate(p, json!({})));
    let merge = report.actions.iter().find(|r| r.action == "merge").expect("a merge");
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| p.undo_consolidation(merge.id).unwrap());
    let again = with_profile(&sql, APRIL_15 + 3 * DAY, |p| consolidate(p, json!({})));
    assert!(again.actions.is_empty(), "{again:#?}");
    assert_eq!(with_profile(&sql, APRIL_15 + 3 * DAY, |p| active(p).len()), 2);
}

/// A working memory shared with other profiles, as a Worker's isolate is:
/// it grants `grants` takes, then has no room for more (busy). It records
/// each take's size and counts the rooms and turns held. With
/// `meanwhile`, another call goes on with the run while its first take
/// waits.
struct Shared<'s> {
    grants: std::cell::Cell<usize>,
    taken: std::cell::RefCell<Vec<usize>>,
    held: std::rc::Rc<std::cell::Cell<usize>>,
    turns: std::rc::Rc<std::cell::Cell<usize>>,
    /// A call going through this many windows of the run, while the
    /// first take waits.
    meanwhile: Option<(&'s support::NativeSql, u64)>,
    /// The owner's clock, as a take that waited for room ends.
    clock: std::cell::Cell<Option<i64>>,
}

impl Shared<'_> {
    fn granting(grants: usize) -> Shared<'static> {
        Shared {
            grants: std::cell::Cell::new(grants),
            taken: Default::default(),
            held: Default::default(),
            turns: Default::default(),
            meanwhile: None,
            clock: Default::default(),
        }
    }
}

/// A room or a turn held in [`Shared`], given back when dropped.
struct Release(std::rc::Rc<std::cell::Cell<usize>>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

impl agent_memory::core::ports::WorkingRoom for Shared<'_> {
    fn take<'a>(&'a self, bytes: usize, what: &'a str) -> LocalBoxFuture<'a, Result<agent_memory::core::ports::Held>> {
        Box::pin(async move {
            if let Some((sql, windows)) = self.meanwhile.filter(|_| self.taken.borrow().is_empty()) {
                let report = consolidated_at(sql, APRIL_15 + 2, json!({ "maxWindows": windows })).await;
                assert!(report.done || report.examined == windows as usize * WINDOW, "{report:?}");
            }
            self.taken.borrow_mut().push(bytes);
            if self.grants.get() == 0 {
                return Err(agent_memory::core::error::Error::busy(format!("no room for {what}")));
            }
            self.grants.set(self.grants.get() - 1);
            self.held.set(self.held.get() + 1);
            self.turns.set(self.turns.get() + 1);
            Ok(agent_memory::core::ports::Held::by(Release(self.held.clone()), Release(self.turns.clone())))
        })
    }

    fn now_millis(&self) -> Option<i64> {
        self.clock.get()
    }
}

fn outbox_job(sql: &support::NativeSql) -> (i64, i64, i64) {
    use agent_memory::core::ports::Sql;
    let r = &sql.query("SELECT attempts, parked, next_attempt_at FROM outbox WHERE kind = 'consolidate'", &[]).unwrap()[0];
    (r[0].as_i64().unwrap(), r[1].as_i64().unwrap(), r[2].as_i64().unwrap())
}

/// Profiles of one isolate share its memory: each window takes its room
/// there (`WINDOW_ROOM_BYTES`) before it is read and holds it while the
/// reasoner decides (a model's call, when other profiles run), so those
/// waiting on a model together hold no more than the room there is. It is
/// given back after each window. The isolate's background turn, taken
/// with it, is given back before the reasoner is asked: others compute
/// while a model decides.
#[test]
fn test_each_window_holds_its_room_in_the_shared_memory_while_the_reasoner_decides() {
    use agent_memory::core::consolidate::WINDOW_ROOM_BYTES;
    let sql = database();
    imported(&sql, 2 * WINDOW + 1);
    let room = Shared::granting(100);
    let model = Counting { rooms_seen: Some((&room.held, &room.turns)), ..Counting::default() };
    let report = with_room(&sql, APRIL_15, Default::default(), &model, &room, |p| consolidate(p, json!({ "maxWindows": 5 })));
    assert!(report.done, "{report:?}");
    assert_eq!(model.seen.into_inner(), vec![(1, 0); 3], "one room and no turn held at each of the three windows' reasoner calls");
    assert_eq!(room.taken.into_inner(), vec![WINDOW_ROOM_BYTES; 4], "the three windows', and the one that found none left");
    assert_eq!((room.held.get(), room.turns.get()), (0, 0), "every room and turn given back");
}

/// A `consolidate` call that finds no room for its first window in time
/// is refused as busy (503) and leaves the profile as it was: the run it
/// would have begun, and its job, are not there.
#[test]
fn test_a_call_with_no_room_for_its_first_window_is_busy_and_begins_no_run() {
    let sql = database();
    imported(&sql, WINDOW + 1);
    let before = with_profile(&sql, APRIL_15, |p| (export_body(p), p.stats().unwrap().pending_jobs));
    let model = Counting::default();
    let err = with_room(&sql, APRIL_15 + 1, Default::default(), &model, &Shared::granting(0), |p| {
        block_on(p.consolidate(serde_json::from_value(json!({})).unwrap())).unwrap_err()
    });
    assert!(err.is_busy(), "{err}");
    assert_eq!(model.calls.get(), 0);
    assert_eq!((run_record(&sql), consolidate_jobs(&sql, false)), (String::new(), 0), "no run begun");
    assert_eq!(with_profile(&sql, APRIL_15 + 2, |p| (export_body(p), p.stats().unwrap().pending_jobs)), before);
}

/// A call that got room for some windows and not for the next keeps what
/// it did and says the run is not done; the alarm does the rest.
#[test]
fn test_a_call_refused_room_after_a_window_keeps_it_and_leaves_the_rest_to_the_alarm() {
    let sql = database();
    imported(&sql, 3 * WINDOW + 1);
    let room = Shared::granting(1);
    let report = with_room(&sql, APRIL_15, Default::default(), &Rules, &room, |p| consolidate(p, json!({ "maxWindows": 3 })));
    assert!(!report.done);
    assert_eq!(report.examined, WINDOW);
    assert_eq!(consolidate_jobs(&sql, false), 1, "the rest is the alarm's");
    with_profile(&sql, APRIL_15 + 1, |p| {
        for _ in 0..3 {
            block_on(p.drain()).unwrap();
        }
    });
    assert_eq!((run_record(&sql), consolidate_jobs(&sql, false)), (String::new(), 0), "the alarm ended the run");
}

/// The alarm's run that finds no room (other profiles hold it) waits and
/// asks again later, counted from its refusal (it waited for room before
/// it was refused): not an attempt, so it is never parked for it,
/// however long the isolate stays busy; once room is made it goes on.
#[test]
fn test_a_background_run_refused_room_waits_without_an_attempt_and_is_never_parked() {
    use agent_memory::core::background::BUSY_RETRY_MILLIS;
    let sql = database();
    imported(&sql, WINDOW + 1);
    let limits = agent_memory::core::ops::Limits { consolidate_every: Some(1), ..Default::default() };
    // The schedule begins a run; its job is due next.
    with_reasoner(&sql, APRIL_15, limits, &Rules, |p| block_on(p.drain()).unwrap());
    let busy = Shared::granting(0);
    let mut at = APRIL_15 + 1;
    for _ in 0..20 {
        // Refused after waiting 30 s for room: due again from then.
        let refused = at + 30_000;
        busy.clock.set(Some(refused));
        let report = with_room(&sql, at, limits, &Rules, &busy, |p| block_on(p.drain()).unwrap());
        assert_eq!((report.waiting, report.failed, report.parked), (1, 0, 0), "{report:?}");
        assert_eq!(outbox_job(&sql), (0, 0, refused + BUSY_RETRY_MILLIS), "no attempt counted, due again later");
        at = refused + BUSY_RETRY_MILLIS;
    }
    let report = with_room(&sql, at, limits, &Rules, &Shared::granting(100), |p| block_on(p.drain()).unwrap());
    assert_eq!((report.consolidated, report.waiting), (1, 0), "{report:?}");
    assert_eq!(run_record(&sql), String::new());
}

/// A window that waited for room while another call ended the run reads
/// nothing and asks the reasoner nothing (a model call wasted, before).
#[test]
fn test_a_window_that_waited_for_room_while_another_call_ended_the_run_asks_no_reasoner() {
    let sql = database();
    imported(&sql, 2 * WINDOW + 1);
    assert!(!with_profile(&sql, APRIL_15, |p| consolidate(p, json!({ "maxWindows": 1 }))).done);
    let room = Shared { meanwhile: Some((&sql, 100)), ..Shared::granting(100) };
    let model = Counting::default();
    let report = with_room(&sql, APRIL_15 + 3, Default::default(), &model, &room, |p| consolidate(p, json!({ "maxWindows": 2 })));
    assert!(report.done, "the other call ended the run: {report:?}");
    assert_eq!((model.calls.get(), report.examined), (0, 0));
}

/// A room that grants its first take; on the second, another call ends
/// the run, more memories come, and a third call begins a new run it does
/// not finish; then it has no room.
struct EndsAndBegins<'s> {
    takes: std::cell::Cell<usize>,
    sql: &'s support::NativeSql,
}

impl agent_memory::core::ports::WorkingRoom for EndsAndBegins<'_> {
    fn take<'a>(&'a self, _bytes: usize, what: &'a str) -> LocalBoxFuture<'a, Result<agent_memory::core::ports::Held>> {
        Box::pin(async move {
            self.takes.set(self.takes.get() + 1);
            if self.takes.get() == 1 {
                return Ok(agent_memory::core::ports::Held::nothing());
            }
            assert!(consolidated_at(self.sql, APRIL_15 + 2, json!({})).await.done);
            let file = facts_file(2 * WINDOW + 1, |i| format!("Drawer {i} keeps maps."), |i| format!("f{i:031x}"));
            with_profile(self.sql, APRIL_15 + 3, |p| p.import(&file).unwrap());
            assert!(!consolidated_at(self.sql, APRIL_15 + 4, json!({ "maxWindows": 1 })).await.done);
            Err(agent_memory::core::error::Error::busy(format!("no room for {what}")))
        })
    }
}

/// A call that went through a window, then waited for room while the run
/// was ended by another and a new one begun, leaves the new run as it is
/// (it ended "its" run by the new one's record, which its job then found
/// gone).
#[test]
fn test_a_call_refused_room_after_its_run_was_ended_leaves_the_next_run_alone() {
    let sql = database();
    imported(&sql, WINDOW);
    let room = EndsAndBegins { takes: std::cell::Cell::new(0), sql: &sql };
    let report = with_room(&sql, APRIL_15 + 1, Default::default(), &Rules, &room, |p| consolidate(p, json!({ "maxWindows": 3 })));
    assert!(report.done, "its run was ended: {report:?}");
    let record = run_record(&sql);
    assert!(!record.is_empty() && !record.contains(&report.run_id), "the new run's record stays: {record}");
    assert_eq!(consolidate_jobs(&sql, false), 1, "the new run's job, and only it");
}

/// A call whose run another call moved on while it waited for room, and
/// that then finds no room, did nothing: busy (503), not "not done".
#[test]
fn test_a_call_that_only_saw_another_go_on_and_then_found_no_room_is_busy() {
    let sql = database();
    imported(&sql, 3 * WINDOW + 1);
    assert!(!with_profile(&sql, APRIL_15, |p| consolidate(p, json!({ "maxWindows": 1 }))).done);
    let room = Shared { meanwhile: Some((&sql, 1)), ..Shared::granting(1) };
    let model = Counting::default();
    let err = with_room(&sql, APRIL_15 + 3, Default::default(), &model, &room, |p| {
        block_on(p.consolidate(serde_json::from_value(json!({ "maxWindows": 3 })).unwrap())).unwrap_err()
    });
    assert!(err.is_busy(), "{err}");
    assert_eq!(model.calls.get(), 0);
}

/// A room that, while its first take waits, lets the alarm claim the
/// run's job (its window is being decided), then has no room.
struct ClaimedMeanwhile<'s>(&'s support::NativeSql);

impl agent_memory::core::ports::WorkingRoom for ClaimedMeanwhile<'_> {
    fn take<'a>(&'a self, _bytes: usize, what: &'a str) -> LocalBoxFuture<'a, Result<agent_memory::core::ports::Held>> {
        Box::pin(async move {
            use agent_memory::core::ports::Sql;
            self.0.execute("UPDATE outbox SET attempts = attempts + 1 WHERE kind = 'consolidate'", &[]).unwrap();
            Err(agent_memory::core::error::Error::busy(format!("no room for {what}")))
        })
    }
}

/// A call refused room for the first window of a run it began leaves the
/// run when the alarm took it up meanwhile (the alarm may be deciding its
/// first window): it is busy, and the run goes on.
#[test]
fn test_a_call_refused_room_leaves_a_run_it_began_that_the_alarm_took_up() {
    let sql = database();
    imported(&sql, WINDOW + 1);
    let err = with_room(&sql, APRIL_15 + 1, Default::default(), &Rules, &ClaimedMeanwhile(&sql), |p| {
        block_on(p.consolidate(serde_json::from_value(json!({})).unwrap())).unwrap_err()
    });
    assert!(err.is_busy(), "{err}");
    assert!(!run_record(&sql).is_empty(), "the run stays");
    assert_eq!(consolidate_jobs(&sql, false), 1, "with its job");
}

/// The reads of consolidation memberships that run on every keyed ingest
/// (the live folds holding a key), on every window of a run (the
/// groupings a person undid) and on every deletion of consolidated
/// memories (what a memory was consolidated from, the records to erase)
/// find their rows through an index: none scans every membership or
/// every record of the profile, which grow with every fold.
#[test]
fn test_membership_reads_of_ingest_runs_and_deletions_use_an_index() {
    let sql = database();
    let fold = three_statements_folded(&sql);
    let recorded = support::Recorded::new(&sql, |s| s.contains("consolidation_members"));
    let store = agent_memory::core::store::Store::new(&recorded, APRIL_15 + DAY);
    let keys: Vec<String> = fold.members.iter().filter_map(|id| store.get_memory(id).unwrap()).filter_map(|m| m.key).collect();
    assert!(!keys.is_empty(), "a folded member holds a key");
    assert_eq!(store.folds_holding(&keys.iter().map(String::as_str).collect::<Vec<_>>()).unwrap().len(), keys.len());
    assert_eq!(store.consolidated_into(&fold.target, &[]).unwrap().0.len(), fold.members.len());
    store.undone_groupings(&fold.members).unwrap();
    store.erase_consolidations_of(&fold.members).unwrap();
    let seen = recorded.seen.borrow().clone();
    assert!(seen.len() >= 4, "{seen:?}");
    for (statement, params) in seen {
        assert_eq!(support::table_scans(&sql, &statement, &params), Vec::<String>::new(), "{statement}");
    }
}

/// One message's three statements, said 90 days before [`APRIL_15`] (one
/// of them keyed: the favorite color), folded by a run at it: the fold.
fn three_statements_folded(sql: &support::NativeSql) -> agent_memory::core::model::ConsolidationRecord {
    with_profile(sql, APRIL_15 - 90 * DAY, |p| {
        let messages = vec![support::msg("user", "My favorite color is blue. I live in Edinburgh. I work at Acme as a designer.")];
        block_on(p.ingest(agent_memory::core::api::IngestRequest { messages, session_id: Some("s1".into()), metadata: Default::default() })).unwrap()
    });
    with_profile(sql, APRIL_15, |p| consolidate(p, json!({}))).actions.into_iter().find(|r| r.action == "fold").expect("a fold")
}
