//! Native tests of the ingest pipeline: the SPEC.md example conversation,
//! idempotency, supersession chains, date resolution, background
//! vectorization with failures, and the language-model reasoner surviving
//! malformed replies.

mod support;

use agent_memory::core::api::{IngestRequest, ListRequest, ListStatus};
use agent_memory::core::error::{Error, Result};
use agent_memory::core::llm::{prompts, LlmReasoner};
use agent_memory::core::local::embed::HashEmbedder;
use agent_memory::core::model::{IngestReport, Memory, MemoryType, MessageInput, Status};
use agent_memory::core::ops::{Limits, Profile};
use agent_memory::core::ports::{ChatModel, ChatRequest, Embedder, LocalBoxFuture, Sql};
use agent_memory::core::provider::Reasoner;
use agent_memory::core::recall::directory::TurnDirectory;
use agent_memory::core::rules::Rules;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use support::{block_on, database, msg, spec_conversation, with_profile, NativeSql, APRIL_15, DAY};

fn switch_to_npm() -> IngestRequest {
    IngestRequest { messages: vec![msg("user", "Actually, switch to npm for this project.")], session_id: Some("later".into()), metadata: Default::default() }
}

fn all_memories(p: &Profile<'_>) -> Vec<Memory> {
    p.list(ListRequest { limit: Some(1000), ..ListRequest::default() }).unwrap().memories
}

/// Every memory, whatever its state.
fn every_memory(p: &Profile<'_>) -> Vec<Memory> {
    let req = ListRequest { limit: Some(1000), status: Some(agent_memory::core::api::ListStatus::All), ..ListRequest::default() };
    p.list(req).unwrap().memories
}

fn active(p: &Profile<'_>) -> Vec<Memory> {
    all_memories(p).into_iter().filter(|m| m.status == Status::Active).collect()
}

fn vector_ids(sql: &NativeSql) -> Vec<String> {
    sql.query("SELECT memory_id FROM vectors", &[]).unwrap().into_iter().filter_map(|r| r[0].opt_string()).collect()
}

/// Runs `f` with a profile using the given reasoner and embedder.
fn with_parts<T>(sql: &NativeSql, now: i64, reasoner: &dyn Reasoner, embedder: &dyn Embedder, f: impl FnOnce(&Profile<'_>) -> T) -> T {
    support::with_parts(sql, now, &TurnDirectory::new(), Limits::default(), support::Parts { reasoner, embedder, ..Default::default() }, f)
}

fn pnpm_memory(p: &Profile<'_>) -> Memory {
    active(p).into_iter().find(|m| m.content.contains("pnpm")).expect("an active pnpm memory")
}

// ---- the example conversation, with the rule-based reasoner -----------

#[test]
fn test_spec_conversation_yields_keyed_pnpm_and_dark_mode_memories() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(spec_conversation())).unwrap();
        let memories = active(p);
        let keyed = |m: &&Memory| matches!(m.kind, MemoryType::Fact | MemoryType::Instruction) && m.key.is_some();
        let pnpm: Vec<&Memory> = memories.iter().filter(keyed).filter(|m| m.content.contains("pnpm")).collect();
        assert_eq!(pnpm.len(), 1, "one pnpm memory: {memories:#?}");
        assert_eq!(pnpm[0].key.as_deref(), Some("user.package_manager"));
        let dark: Vec<&Memory> = memories.iter().filter(keyed).filter(|m| m.content.to_lowercase().contains("dark mode")).collect();
        assert_eq!(dark.len(), 1, "one dark-mode memory: {memories:#?}");
        assert_eq!(dark[0].key.as_deref(), Some("user.theme"));
    });
}

/// The published ingest page: Agent Memory "identifies facts, events,
/// instructions, and tasks automatically", in no language named. Chinese,
/// Japanese and Thai write a sentence without spaces, one token of many
/// words; each sentence they state is kept, as one in English would be,
/// and a question or a pleasantry is not.
#[test]
fn test_statements_in_scripts_written_without_spaces_are_remembered() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let said = [
            ("zh", "我喜欢简洁的回答。"),
            ("zh2", "我住在上海，我是一名软件工程师。我每天骑自行车上班。"),
            ("ja", "私は東京に住んでいます。"),
            ("th", "ฉันชอบกาแฟดำตอนเช้า"),
        ];
        for (session, content) in said {
            let req = IngestRequest {
                messages: vec![msg("user", content), msg("assistant", "好的。")],
                session_id: Some(session.into()),
                metadata: Default::default(),
            };
            block_on(p.ingest(req)).unwrap();
        }
        let memories = active(p);
        for (session, _) in said {
            assert!(memories.iter().any(|m| m.session_id == session), "{session}: nothing kept of it: {memories:#?}");
        }
        let two: Vec<&Memory> = memories.iter().filter(|m| m.session_id == "zh2").collect();
        assert_eq!(two.len(), 2, "two sentences, two memories (a full stop ends one whatever follows it): {two:#?}");
        assert!(memories.iter().all(|m| !m.content.contains("好的")), "an acknowledgement is no memory");
        let asked = IngestRequest { messages: vec![msg("user", "你住在哪里？")], session_id: Some("q".into()), metadata: Default::default() };
        block_on(p.ingest(asked)).unwrap();
        assert!(active(p).iter().all(|m| m.session_id != "q"), "a question is no memory");
    });
}

#[test]
fn test_every_memory_cites_stored_source_messages() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(spec_conversation())).unwrap();
        let memories = all_memories(p);
        assert!(!memories.is_empty());
        for m in memories {
            assert!(!m.source_message_ids.is_empty(), "{} cites nothing", m.content);
            let detail = p.get(&m.id).unwrap();
            let found: Vec<&str> = detail.source_messages.iter().map(|s| s.id.as_str()).collect();
            assert_eq!(found.len(), m.source_message_ids.len(), "{} cites a missing message", m.content);
        }
    });
}

#[test]
fn test_assistant_acknowledgement_neither_duplicates_nor_supersedes_the_user() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let r = block_on(p.ingest(spec_conversation())).unwrap();
        assert_eq!(r.memories_superseded, 0);
        assert!(all_memories(p).iter().all(|m| !m.content.contains("Got it")), "the echo was stored");
        assert!(pnpm_memory(p).content.starts_with("User:"));
    });
}

#[test]
fn test_reingesting_the_same_conversation_adds_no_message_and_no_memory() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| block_on(p.ingest(spec_conversation())).unwrap());
    let before = with_profile(&sql, APRIL_15, |p| p.stats().unwrap());
    let again = with_profile(&sql, APRIL_15 + DAY, |p| block_on(p.ingest(spec_conversation())).unwrap());
    assert_eq!((again.messages_stored, again.memories_stored), (0, 0));
    let after = with_profile(&sql, APRIL_15 + DAY, |p| p.stats().unwrap());
    assert_eq!((after.messages, after.memories), (before.messages, before.memories));
}

#[test]
fn test_later_session_switching_to_npm_supersedes_the_pnpm_memory() {
    let sql = database();
    let old = with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(spec_conversation())).unwrap();
        pnpm_memory(p)
    });
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let r = block_on(p.ingest(switch_to_npm())).unwrap();
        assert_eq!(r.memories_superseded, 1);
        let new = r.memories.iter().find(|m| m.content.contains("npm")).expect("an npm memory").clone();
        assert_eq!(new.key.as_deref(), Some("user.package_manager"));
        assert_eq!(new.supersedes.as_deref(), Some(old.id.as_str()));
        let old_now = p.get(&old.id).unwrap().memory;
        assert_eq!(old_now.status, Status::Superseded);
        assert_eq!(old_now.superseded_by.as_deref(), Some(new.id.as_str()));
        let chain: Vec<String> = p.get(&new.id).unwrap().versions.into_iter().map(|m| m.id).collect();
        assert_eq!(chain, vec![old.id.clone(), new.id.clone()], "versions, oldest first");
        let from_old: Vec<String> = p.get(&old.id).unwrap().versions.into_iter().map(|m| m.id).collect();
        assert_eq!(from_old, chain);
    });
}

#[test]
fn test_one_projects_port_or_limit_does_not_supersede_anothers() {
    let sql = database();
    let said = |session: &str, text: &str| IngestRequest { messages: vec![msg("user", text)], session_id: Some(session.into()), metadata: Default::default() };
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(said("a", "By the way, the staging Postgres for basalt listens on port 6432, not the default."))).unwrap();
        block_on(p.ingest(said("b", "Our plan with the maps vendor used by tidewater allows 600 requests per minute, so keep batch jobs below that.")))
            .unwrap();
    });
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let r = block_on(p.ingest(said("c", "By the way, the staging Postgres for juniper-etl listens on port 5499, not the default."))).unwrap();
        assert_eq!(r.memories_superseded, 0, "another project's port");
        let r = block_on(p.ingest(said("d", "Our plan with the maps vendor used by pantry allows 900 requests per minute, so keep batch jobs below that.")))
            .unwrap();
        assert_eq!(r.memories_superseded, 0, "another project's limit");
        assert_eq!(active(p).len(), 4);
        // The same project's statement said again with a new value still replaces it.
        let r = block_on(p.ingest(said("e", "By the way, the staging Postgres for basalt listens on port 7000, not the default."))).unwrap();
        assert_eq!(r.memories_superseded, 1);
        assert!(active(p).iter().all(|m| !m.content.contains("6432")));
    });
}

#[test]
fn test_an_agents_statement_supersedes_only_within_its_own_session() {
    let sql = database();
    let call = |session: &str, said: &[(&str, &str)]| IngestRequest {
        messages: said.iter().map(|(role, text)| msg(role, text)).collect(),
        session_id: Some(session.into()),
        metadata: Default::default(),
    };
    let holding = |p: &Profile<'_>, key: &str| -> Vec<String> {
        let mut v: Vec<String> = active(p).into_iter().filter(|m| m.key.as_deref() == Some(key)).map(|m| m.content).collect();
        v.sort();
        v
    };
    with_profile(&sql, APRIL_15, |p| {
        let said = [
            ("user", "The kettle arrived broken and I sent it back."),
            ("assistant", "The refund reference is RF-100001, and it should reach your card within five days."),
        ];
        block_on(p.ingest(call("kettle-call", &said))).unwrap();
    });
    with_profile(&sql, APRIL_15 + DAY, |p| {
        // Another call, another order: both refunds stay findable.
        let said = [
            ("user", "I was charged twice for my lamp order."),
            ("assistant", "The refund reference is RF-200002, and it should reach your card within five days."),
        ];
        let r = block_on(p.ingest(call("lamp-call", &said))).unwrap();
        assert_eq!(r.memories_superseded, 0, "another call's refund");
        let refs = holding(p, "project.refund_reference");
        assert_eq!(refs.len(), 2, "{refs:?}");
        assert!(refs[0].contains("RF-100001") && refs[1].contains("RF-200002"), "{refs:?}");
        // The same call, continued later: its agent's correction replaces
        // its own earlier statement, not the other call's.
        let said = [("assistant", "The refund reference is RF-100009, and it should reach your card within five days.")];
        let r = block_on(p.ingest(call("kettle-call", &said))).unwrap();
        assert_eq!(r.memories_superseded, 1);
        let refs = holding(p, "project.refund_reference");
        assert!(refs.iter().any(|c| c.contains("RF-100009")) && refs.iter().any(|c| c.contains("RF-200002")), "{refs:?}");
        assert!(refs.iter().all(|c| !c.contains("RF-100001")), "{refs:?}");
    });
    // An agent's advice said again in another call, a week later: one
    // current copy (its date, resolved from "a few weeks later", differs).
    let advice = [("assistant", "Keep notes as you go, since it is surprisingly hard to remember details a few weeks later.")];
    let first = with_profile(&sql, APRIL_15 + DAY, |p| block_on(p.ingest(call("tea-chat", &advice))).unwrap());
    let again = with_profile(&sql, APRIL_15 + 8 * DAY, |p| block_on(p.ingest(call("bread-chat", &advice))).unwrap());
    let (first, again) = (&first.memories[0], &again.memories[0]);
    assert_ne!(first.content, again.content, "dated differently");
    assert_eq!(again.supersedes.as_deref(), Some(first.id.as_str()));
}

#[test]
fn test_yesterday_is_stored_as_the_absolute_date() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let req = IngestRequest {
            messages: vec![MessageInput {
                role: "user".into(),
                content: "I deployed the billing service yesterday.".into(),
                timestamp: Some("2026-04-15T09:00:00Z".into()),
            }],
            session_id: Some("deploys".into()),
            metadata: Default::default(),
        };
        let r = block_on(p.ingest(req)).unwrap();
        let m = r.memories.first().expect("a memory");
        assert!(m.content.contains("2026-04-14"), "{}", m.content);
        assert!(!m.content.contains("yesterday"));
        assert_eq!(m.event_date.as_deref(), Some("2026-04-14"));
    });
}

// ---- background vectorization -----------------------------------------

#[test]
fn test_tasks_never_reach_the_vector_index() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let req = IngestRequest {
            messages: vec![msg("user", "I'm working on the billing page redesign."), msg("user", "The staging database runs Postgres sixteen.")],
            session_id: Some("work".into()),
            metadata: Default::default(),
        };
        let r = block_on(p.ingest(req)).unwrap();
        let task = r.memories.iter().find(|m| m.kind == MemoryType::Task).expect("a task");
        let fact = r.memories.iter().find(|m| m.kind != MemoryType::Task).expect("a non-task");
        block_on(p.drain()).unwrap();
        let vectors = vector_ids(&sql);
        assert!(!vectors.contains(&task.id));
        assert!(vectors.contains(&fact.id));
        assert_eq!(p.stats().unwrap().pending_jobs, 0);
    });
}

#[test]
fn test_superseded_memories_leave_the_vector_index_and_the_outbox_drains() {
    let sql = database();
    let old = with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(spec_conversation())).unwrap();
        block_on(p.drain()).unwrap();
        pnpm_memory(p)
    });
    assert!(vector_ids(&sql).contains(&old.id));
    with_profile(&sql, APRIL_15 + DAY, |p| {
        block_on(p.ingest(switch_to_npm())).unwrap();
        let report = block_on(p.drain()).unwrap();
        assert_eq!(report.removed, 1);
        assert_eq!(report.pending, 0);
        let vectors = vector_ids(&sql);
        assert!(!vectors.contains(&old.id));
        let mut want: Vec<String> = active(p).into_iter().filter(|m| m.kind != MemoryType::Task).map(|m| m.id).collect();
        let mut got = vectors;
        want.sort();
        got.sort();
        assert_eq!(got, want, "exactly the active non-task memories have vectors");
    });
}

/// Fails its first `fails` calls, then embeds like the local embedder.
struct FlakyEmbedder {
    fails: Cell<usize>,
    calls: Cell<usize>,
}

impl Embedder for FlakyEmbedder {
    fn embed<'a>(&'a self, texts: &'a [String]) -> LocalBoxFuture<'a, Result<Vec<Vec<f32>>>> {
        self.calls.set(self.calls.get() + 1);
        if self.fails.get() > 0 {
            self.fails.set(self.fails.get() - 1);
            return Box::pin(async { Err(Error::provider("embedding service unavailable")) });
        }
        HashEmbedder.embed(texts)
    }
}

#[test]
fn test_failed_embeddings_are_retried_after_backoff_and_nothing_is_lost() {
    let sql = database();
    let flaky = FlakyEmbedder { fails: Cell::new(2), calls: Cell::new(0) };
    let t0 = APRIL_15;
    let stored = with_parts(&sql, t0, &Rules, &flaky, |p| {
        let r = block_on(p.ingest(spec_conversation())).unwrap();
        let first = block_on(p.drain()).unwrap();
        assert!(first.failed > 0 && first.embedded == 0);
        assert!(first.pending > 0);
        assert!(first.next_at.unwrap() > t0, "the retry waits for its backoff");
        r.memories.iter().filter(|m| m.kind != MemoryType::Task).count()
    });
    assert!(vector_ids(&sql).is_empty());
    // Before the backoff passes, nothing is tried.
    with_parts(&sql, t0 + 500, &Rules, &flaky, |p| {
        let r = block_on(p.drain()).unwrap();
        assert_eq!((r.embedded, r.failed), (0, 0));
    });
    assert_eq!(flaky.calls.get(), 1);
    // Jobs that failed before run alone, a request each: the first of
    // the second attempts fails again (its backoff doubles), the others
    // are embedded. A poisoned job can only ever fail by itself.
    let next = with_parts(&sql, t0 + 1_000, &Rules, &flaky, |p| block_on(p.drain()).unwrap());
    assert_eq!((next.failed, next.embedded), (1, stored - 1));
    assert!(next.next_at.unwrap() >= t0 + 3_000);
    // Its third attempt succeeds: every memory has its vector, the outbox
    // is empty.
    let done = with_parts(&sql, t0 + 3_000, &Rules, &flaky, |p| block_on(p.drain()).unwrap());
    assert_eq!(done.embedded, 1);
    assert_eq!(done.pending, 0);
    assert_eq!(vector_ids(&sql).len(), stored);
    assert_eq!(flaky.calls.get(), 1 + stored + 1);
}

/// Embeds like the local embedder and records each request's size.
#[derive(Default)]
struct CountingEmbedder {
    requests: RefCell<Vec<usize>>,
}

impl Embedder for CountingEmbedder {
    fn embed<'a>(&'a self, texts: &'a [String]) -> LocalBoxFuture<'a, Result<Vec<Vec<f32>>>> {
        self.requests.borrow_mut().push(texts.len());
        HashEmbedder.embed(texts)
    }
}

#[test]
fn test_a_drain_embeds_a_burst_in_requests_of_at_most_embed_batch_texts() {
    use agent_memory::core::background::EMBED_BATCH;
    let sql = database();
    let counting = CountingEmbedder::default();
    let stored = with_parts(&sql, APRIL_15, &Rules, &counting, |p| {
        // Several calls' work waits for one drain, as after a burst.
        // Made-up names, so no statement restates or supersedes another.
        const SYLLABLES: [&str; 12] = ["ka", "lo", "mi", "ru", "te", "zo", "vi", "ne", "sa", "po", "fu", "ge"];
        for k in 0..12 {
            let say = |i: usize| format!("We reviewed the {}{}dor proposal with the committee.", SYLLABLES[k], SYLLABLES[i]);
            block_on(p.ingest(IngestRequest {
                messages: (0..8).map(|i| msg("user", &say(i))).collect(),
                session_id: Some(format!("s{k}")),
                metadata: Default::default(),
            }))
            .unwrap();
        }
        let stored = active(p).into_iter().filter(|m| m.kind != MemoryType::Task).count();
        let report = block_on(p.drain()).unwrap();
        assert_eq!((report.embedded, report.failed, report.pending), (stored, 0, 0));
        stored
    });
    assert!(stored > EMBED_BATCH, "the burst needs more than one request ({stored} memories)");
    let requests = counting.requests.borrow();
    assert_eq!(requests.iter().sum::<usize>(), stored);
    assert_eq!(requests.len(), stored.div_ceil(EMBED_BATCH), "{requests:?}");
    assert!(requests.iter().all(|&n| n <= EMBED_BATCH), "{requests:?}");
    assert_eq!(vector_ids(&sql).len(), stored);
}

#[test]
fn test_a_drain_rejudges_at_most_extract_batch_sessions_and_leaves_the_rest_due() {
    use agent_memory::core::background::EXTRACT_BATCH;
    use agent_memory::core::jobs::Work;
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        // Sessions gone meanwhile: each job is done once looked at.
        let queued = 2 * EXTRACT_BATCH + 3;
        for k in 0..queued {
            p.store().enqueue(&Work::Extract { session_id: format!("gone-{k}") }).unwrap();
        }
        let first = block_on(p.drain()).unwrap();
        assert_eq!((first.extracted, first.pending), (EXTRACT_BATCH, (queued - EXTRACT_BATCH) as i64));
        assert_eq!(first.next_at, Some(APRIL_15), "the rest is due at once");
        let second = block_on(p.drain()).unwrap();
        assert_eq!(second.extracted, EXTRACT_BATCH);
        let third = block_on(p.drain()).unwrap();
        assert_eq!((third.extracted, third.pending, third.next_at), (3, 0, None));
    });
}

#[test]
fn test_a_write_sets_the_alarm_a_drain_delay_later_and_a_burst_shares_it() {
    use agent_memory::core::background::{next_alarm, DRAIN_DELAY_MILLIS as D};
    let now = APRIL_15;
    // Work due now waits the delay; no alarm yet: one is set.
    assert_eq!(next_alarm(now, now, None), Some(now + D));
    // The next writes of the burst keep the alarm already set.
    assert_eq!(next_alarm(now + 10, now + 10, Some(now + D)), None);
    assert_eq!(next_alarm(now + D, now + D, Some(now + D)), None);
    // Work due later (a retry's backoff) is not brought forward...
    assert_eq!(next_alarm(now + 5_000, now, None), Some(now + 5_000));
    // ...and an alarm set for later than this write needs is moved sooner.
    assert_eq!(next_alarm(now, now, Some(now + 5_000)), Some(now + D));
    // An overdue alarm (not yet run) stays: it drains this write's work too.
    assert_eq!(next_alarm(now, now, Some(now - 1)), None);
}

// ---- the language-model reasoner --------------------------------------

/// A chat model that answers each stage (told apart by its system prompt)
/// from its own queue of canned replies, and counts the calls.
#[derive(Default)]
struct Scripted {
    replies: RefCell<HashMap<&'static str, VecDeque<String>>>,
    calls: RefCell<Vec<&'static str>>,
}

impl Scripted {
    fn on(self, stage: &'static str, replies: &[&str]) -> Scripted {
        self.replies.borrow_mut().entry(stage).or_default().extend(replies.iter().map(|s| s.to_string()));
        self
    }

    fn stage(req: &ChatRequest) -> &'static str {
        [
            ("extract", prompts::EXTRACT_FULL),
            ("detail", prompts::EXTRACT_DETAIL),
            ("verify", prompts::VERIFY),
            ("classify", prompts::CLASSIFY),
            ("analyze", prompts::ANALYZE),
        ]
        .into_iter()
        .find(|(_, p)| req.system == *p)
        .map_or("synthesize", |(name, _)| name)
    }

    fn calls_to(&self, stage: &str) -> usize {
        self.calls.borrow().iter().filter(|s| **s == stage).count()
    }
}

impl ChatModel for Scripted {
    fn complete<'a>(&'a self, req: &'a ChatRequest) -> LocalBoxFuture<'a, Result<String>> {
        let stage = Scripted::stage(req);
        self.calls.borrow_mut().push(stage);
        let reply = self.replies.borrow_mut().get_mut(stage).and_then(VecDeque::pop_front);
        Box::pin(async move { reply.ok_or_else(|| Error::provider(format!("no scripted reply for {stage}"))) })
    }
}

const EXTRACTED: &str = "Here are the memories:\n```json\n{\"memories\": [\
{\"content\": \"The user wants the project set up with React and TypeScript.\", \"lines\": [0], \"confidence\": 0.9},\
{\"content\": \"The user prefers pnpm over npm.\", \"lines\": [\"2\"], \"eventDate\": null},\
{\"content\": \"The user wants dark mode by default.\", \"lines\": [2]},\
{\"content\": \"The assistant confirmed pnpm and dark mode as defaults.\", \"lines\": [3]}]}\n```";

const VERIFIED: &str = "{\"verdicts\": [{\"index\": 0, \"verdict\": \"pass\"}, {\"index\": 1, \"verdict\": \"pass\"},\
{\"index\": 2, \"verdict\": \"pass\"}, {\"index\": 3, \"verdict\": \"pass\", \"note\": \"echo\"}]}";

const CLASSIFIED: &str = "{\"items\": [\
{\"index\": 0, \"type\": \"instruction\", \"key\": \"project.stack\", \"summary\": \"React + TypeScript\", \"searchQueries\": [\"What stack?\", \"Which framework?\", \"Which language?\"]},\
{\"index\": 1, \"type\": \"fact\", \"key\": \"User.Package Manager\", \"summary\": \"Prefers pnpm\", \"searchQueries\": [\"What package manager does the user prefer?\", \"pnpm or npm?\", \"Which installer?\"]},\
{\"index\": 2, \"type\": \"instruction\", \"key\": \"user.theme\", \"summary\": \"Dark mode\", \"searchQueries\": [\"Which theme?\", \"Dark or light mode?\", \"Default theme?\"]},\
{\"index\": 3, \"type\": \"fact\", \"key\": \"user.package_manager\", \"summary\": \"Confirmed pnpm\", \"searchQueries\": [\"pnpm?\", \"package manager?\", \"confirmed?\"]}]}";

fn ingest_with(sql: &NativeSql, model: &Scripted, req: IngestRequest) -> IngestReport {
    let reasoner = LlmReasoner { model };
    with_parts(sql, APRIL_15, &reasoner, &HashEmbedder, |p| block_on(p.ingest(req)).unwrap())
}

#[test]
fn test_llm_reasoner_ingests_through_a_garbage_reply_by_retrying() {
    let sql = database();
    let model = Scripted::default()
        .on("extract", &["I'm sorry, here is a summary instead of JSON.", EXTRACTED])
        .on("verify", &[VERIFIED])
        .on("classify", &[CLASSIFIED]);
    let r = ingest_with(&sql, &model, spec_conversation());
    assert_eq!(model.calls_to("extract"), 2, "one retry after the garbage reply");
    assert!(r.dropped.is_empty(), "{:?}", r.dropped);
    let pnpm = r.memories.iter().find(|m| m.content.contains("pnpm over npm")).expect("the user's pnpm memory");
    assert_eq!(pnpm.key.as_deref(), Some("user.package_manager"));
    assert_eq!(pnpm.status, Status::Active);
    assert_eq!(pnpm.search_queries.len(), 3);
    assert!(r.memories.iter().any(|m| m.key.as_deref() == Some("user.theme")));
}

#[test]
fn test_llm_assistant_restating_a_user_key_in_the_same_call_does_not_win() {
    let sql = database();
    let model = Scripted::default().on("extract", &[EXTRACTED]).on("verify", &[VERIFIED]).on("classify", &[CLASSIFIED]);
    let r = ingest_with(&sql, &model, spec_conversation());
    assert_eq!(r.memories_superseded, 0);
    let holders: Vec<&Memory> = r.memories.iter().filter(|m| m.key.as_deref() == Some("user.package_manager")).collect();
    assert_eq!(holders.len(), 1, "the echo is folded into the user's memory: {holders:#?}");
    assert!(holders[0].content.contains("The user prefers pnpm"));
    assert_eq!(holders[0].status, Status::Active);
    assert_eq!(holders[0].supersedes, None);
    // The acknowledgement is kept as provenance of the user's memory.
    assert_eq!(holders[0].source_message_ids, vec![r.message_ids[2].clone(), r.message_ids[3].clone()]);
}

#[test]
fn test_unparseable_extraction_is_dropped_with_a_record_and_messages_are_kept() {
    let sql = database();
    let model = Scripted::default().on("extract", &["not json", "{\"memories\": [ {\"content\": "]);
    let r = ingest_with(&sql, &model, spec_conversation());
    assert_eq!(model.calls_to("extract"), 2);
    assert_eq!((r.messages_stored, r.memories_stored), (4, 0));
    assert_eq!(r.dropped.len(), 1);
    assert!(r.dropped[0].reason.starts_with("extraction failed"), "{:?}", r.dropped);
    assert!(r.dropped[0].content.contains("messages 0-3"));
    with_parts(&sql, APRIL_15, &Rules, &HashEmbedder, |p| assert_eq!(p.stats().unwrap().messages, 4));
}

#[test]
fn test_unparseable_verification_drops_its_candidates_with_a_record() {
    let sql = database();
    let incomplete = "{\"verdicts\": [{\"index\": 0, \"verdict\": \"pass\"}]}";
    let model = Scripted::default().on("extract", &[EXTRACTED]).on("verify", &["```\nnope\n```", incomplete]);
    let r = ingest_with(&sql, &model, spec_conversation());
    assert_eq!(model.calls_to("verify"), 2);
    assert_eq!(model.calls_to("classify"), 0);
    assert_eq!(r.memories_stored, 0);
    assert_eq!(r.dropped.len(), 4);
    assert!(r.dropped.iter().all(|d| d.reason.starts_with("verification failed")));
}

#[test]
fn test_llm_verdicts_correct_and_drop_candidates() {
    let sql = database();
    let verdicts = "{\"verdicts\": [{\"index\": 0, \"verdict\": \"drop\", \"reason\": \"inferred\"},\
{\"index\": 1, \"verdict\": \"correct\", \"content\": \"The user prefers pnpm, not npm.\"},\
{\"index\": 2, \"verdict\": \"pass\"}, {\"index\": 3, \"verdict\": \"drop\", \"reason\": \"echo\"}]}";
    let classes = "{\"items\": [{\"index\": 0, \"type\": \"fact\", \"key\": \"user.package_manager\", \"searchQueries\": [\"a\", \"b\", \"c\"]},\
{\"index\": 1, \"type\": \"instruction\", \"key\": \"user.theme\", \"searchQueries\": [\"d\", \"e\", \"f\"]}]}";
    let model = Scripted::default().on("extract", &[EXTRACTED]).on("verify", &[verdicts]).on("classify", &[classes]);
    let r = ingest_with(&sql, &model, spec_conversation());
    let contents: Vec<&str> = r.memories.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, vec!["The user prefers pnpm, not npm.", "The user wants dark mode by default."]);
    let reasons: Vec<&str> = r.dropped.iter().map(|d| d.reason.as_str()).collect();
    assert_eq!(reasons, vec!["inferred", "echo"]);
}

/// The rule-based reasoner, except that extraction fails while `down`;
/// `meanwhile` runs on its first extraction (another request of the
/// object, served while the model call awaits); with `one_subject` it keys
/// a project's topic as the user's, as a model may key an agent's
/// statement of it ("project.x" is "user.x").
#[derive(Default)]
struct Outage<'s> {
    down: Cell<bool>,
    meanwhile: Cell<Option<Box<dyn FnOnce() + 's>>>,
    one_subject: bool,
}

impl Reasoner for Outage<'_> {
    fn extract<'a>(
        &'a self,
        t: &'a agent_memory::core::provider::Transcript,
        pass: agent_memory::core::provider::Pass,
    ) -> LocalBoxFuture<'a, Result<Vec<agent_memory::core::provider::Candidate>>> {
        if let Some(f) = self.meanwhile.take() {
            f();
        }
        if self.down.get() {
            return Box::pin(async { Err(Error::provider("model unavailable")) });
        }
        Rules.extract(t, pass)
    }
    fn verify<'a>(
        &'a self,
        t: &'a agent_memory::core::provider::Transcript,
        c: &'a [agent_memory::core::provider::Candidate],
    ) -> LocalBoxFuture<'a, Result<Vec<agent_memory::core::provider::Verdict>>> {
        Rules.verify(t, c)
    }
    fn classify<'a>(
        &'a self,
        t: &'a agent_memory::core::provider::Transcript,
        c: &'a [agent_memory::core::provider::Candidate],
    ) -> LocalBoxFuture<'a, Result<Vec<agent_memory::core::provider::Classification>>> {
        Box::pin(async move {
            let mut out = Rules.classify(t, c).await?;
            if self.one_subject {
                support::keyed_as_the_users(&mut out);
            }
            Ok(out)
        })
    }
    fn analyze<'a>(&'a self, q: &'a str) -> LocalBoxFuture<'a, Result<agent_memory::core::provider::QueryAnalysis>> {
        Rules.analyze(q)
    }
    fn synthesize<'a>(&'a self, i: &'a agent_memory::core::provider::SynthesisInput) -> LocalBoxFuture<'a, Result<String>> {
        Rules.synthesize(i)
    }
    fn consolidate<'a>(&'a self, g: &'a [agent_memory::core::provider::Group]) -> LocalBoxFuture<'a, Result<Vec<agent_memory::core::provider::Consolidation>>> {
        Rules.consolidate(g)
    }
}

fn outage_profile<T>(sql: &NativeSql, reasoner: &Outage<'_>, now: i64, f: impl FnOnce(&Profile<'_>) -> T) -> T {
    with_parts(sql, now, reasoner, &HashEmbedder, f)
}

#[test]
fn test_failed_extraction_is_queued_and_the_alarm_retries_it_until_it_succeeds() {
    let sql = database();
    let model = Outage { down: Cell::new(true), ..Default::default() };
    let report = outage_profile(&sql, &model, APRIL_15, |p| block_on(p.ingest(spec_conversation())).unwrap());
    assert_eq!(report.messages_stored, 4, "raw messages are kept whatever the model does");
    assert_eq!(report.memories_stored, 0);
    assert!(report.dropped.iter().any(|d| d.reason.contains("extraction failed")));
    // Still down at the first retry: the job stays, with backoff.
    outage_profile(&sql, &model, APRIL_15 + 1, |p| {
        let r = block_on(p.drain()).unwrap();
        assert_eq!(r.failed, 1);
        assert_eq!(p.stats().unwrap().memories, 0);
    });
    model.down.set(false);
    outage_profile(&sql, &model, APRIL_15 + 60_000, |p| {
        let r = block_on(p.drain()).unwrap();
        assert_eq!(r.extracted, 1);
        assert!(active(p).iter().any(|m| m.content.contains("pnpm")), "the retry extracted the memories");
        // Their embeddings drain too, and then nothing is left.
        block_on(p.drain()).unwrap();
        assert_eq!(p.stats().unwrap().pending_jobs, 0);
        // Ingesting again still adds nothing.
        let again = block_on(p.ingest(spec_conversation())).unwrap();
        assert_eq!((again.messages_stored, again.memories_stored), (0, 0));
    });
}

/// A session's retry waits while an ingest of the same session runs (its
/// guard job queued, the call judging what it stored): the two would judge
/// the same messages, twice the model's cost and a reworded duplicate.
/// Once the ingest has ended (its guard removed), the retry runs.
#[test]
fn test_a_sessions_retry_waits_while_an_ingest_of_that_session_runs() {
    use agent_memory::core::jobs::Work;
    let sql = database();
    let model = Outage { down: Cell::new(true), ..Default::default() };
    outage_profile(&sql, &model, APRIL_15, |p| block_on(p.ingest(spec_conversation())).unwrap());
    model.down.set(false);
    // An ingest of the same session in progress: its guard, as `ingest` queues it.
    let at = APRIL_15 + 60_000;
    let store = agent_memory::core::store::Store::new(&sql, at);
    let guard = store.enqueue_at(&Work::Extract { session_id: "setup".into() }, at + 15 * 60_000).unwrap();
    outage_profile(&sql, &model, at, |p| {
        let r = block_on(p.drain()).unwrap();
        assert_eq!((r.extracted, r.waiting, r.failed), (0, 1, 0), "{r:?}");
        assert_eq!(p.stats().unwrap().memories, 0, "nothing judged twice");
    });
    let put_off = sql.query("SELECT attempts, next_attempt_at FROM outbox WHERE id <> ? AND kind = 'extract'", &[guard.into()]).unwrap();
    assert_eq!((put_off[0][0].as_i64(), put_off[0][1].as_i64()), (Some(0), Some(at + 15 * 60_000)), "not an attempt; retried once the guard would fall due");
    // The ingest ended: its guard is removed, and the retry runs when due.
    store.finish_jobs(&[guard]).unwrap();
    outage_profile(&sql, &model, at + 15 * 60_000, |p| {
        let r = block_on(p.drain()).unwrap();
        assert_eq!(r.extracted, 1, "{r:?}");
        assert!(active(p).iter().any(|m| m.content.contains("pnpm")));
    });
}

/// `text` ingested into `session` at `at`, with `model` deciding.
fn outage_ingest(sql: &NativeSql, model: &Outage<'_>, at: i64, session: &str, text: &str) -> IngestReport {
    let req = IngestRequest { messages: vec![msg("user", text)], session_id: Some(session.into()), metadata: Default::default() };
    outage_profile(sql, model, at, |p| block_on(p.ingest(req)).unwrap())
}

/// A later call in `session` meets a model fault (the session's extract
/// job is queued), then the model is back and the alarm drains.
fn fault_then_retry(sql: &NativeSql, model: &Outage<'_>, at: i64, session: &str) {
    model.down.set(true);
    let r = outage_ingest(sql, model, at, session, "The build server is in Frankfurt.");
    assert!(r.dropped.iter().any(|d| d.reason.contains("extraction failed")), "{r:?}");
    model.down.set(false);
    for h in 1..4 {
        outage_profile(sql, model, at + h * 3_600_000, |p| block_on(p.drain()).unwrap());
    }
    outage_profile(sql, model, at + 4 * 3_600_000, |p| {
        assert!(active(p).iter().any(|m| m.content.contains("Frankfurt")), "the retry judged the faulted message")
    });
}

/// A statement stored from session s1 and said again in s2 (a
/// restatement), then `removed` (its memory id given) as `what`; a later
/// call in s2 meets a model fault and the alarm retries the session: the
/// statement stays out of the active memories.
fn retry_leaves_out_what_was_removed(what: &str, removed: impl FnOnce(&Profile<'_>, &str)) {
    let sql = database();
    let model = Outage::default();
    let said = "My favourite editor is Helix.";
    let first = outage_ingest(&sql, &model, APRIL_15, "s1", said);
    assert_eq!(outage_ingest(&sql, &model, APRIL_15 + 1_000, "s2", said).memories_stored, 0, "said again: recorded as a restatement");
    outage_profile(&sql, &model, APRIL_15 + 2_000, |p| removed(p, &first.memories[0].id));
    fault_then_retry(&sql, &model, APRIL_15 + 3_000, "s2");
    outage_profile(&sql, &model, APRIL_15 + 5 * 3_600_000, |p| {
        let back: Vec<String> = active(p).into_iter().filter(|m| m.content.contains("Helix")).map(|m| m.content).collect();
        assert!(back.is_empty(), "the {what} statement is active again: {back:?}");
    });
}

#[test]
fn test_a_retry_does_not_bring_back_a_forgotten_statement_a_later_session_said_again() {
    retry_leaves_out_what_was_removed("forgotten", |p, id| drop(p.forget(id).unwrap()));
}

#[test]
fn test_a_retry_does_not_bring_back_a_deleted_statement_a_later_session_said_again() {
    retry_leaves_out_what_was_removed("deleted", |p, id| drop(p.delete(id).unwrap()));
}

#[test]
fn test_a_retry_does_not_bring_back_an_old_value_a_later_session_said_again() {
    let sql = database();
    let model = Outage::default();
    outage_ingest(&sql, &model, APRIL_15, "s1", "Use pnpm, not npm.");
    assert_eq!(outage_ingest(&sql, &model, APRIL_15 + 1_000, "s2", "Use pnpm, not npm.").memories_stored, 0);
    let changed = outage_ingest(&sql, &model, APRIL_15 + 2_000, "s3", "Actually, switch to npm for this project.");
    assert_eq!(changed.memories_superseded, 1, "{changed:?}");
    fault_then_retry(&sql, &model, APRIL_15 + 3_000, "s2");
    outage_profile(&sql, &model, APRIL_15 + 5 * 3_600_000, |p| {
        assert_eq!(p.get(&changed.memories[0].id).unwrap().memory.status, Status::Active, "the current value holds");
        let old: Vec<String> = active(p).into_iter().filter(|m| m.content.contains("pnpm")).map(|m| m.content).collect();
        assert!(old.is_empty(), "the old value is active again: {old:?}");
    });
}

/// A turn that said nothing (the published chat example ingests
/// `assistantMessage || ""`) is a turn of the conversation: stored as sent,
/// nothing extracted from it, and the rest of the call is not lost.
#[test]
fn test_a_turn_that_said_nothing_is_stored_with_its_conversation() {
    let sql = support::database();
    support::with_profile(&sql, support::APRIL_15, |p| {
        let call = || agent_memory::core::api::IngestRequest {
            messages: vec![support::msg("user", "I prefer TypeScript over JavaScript."), support::msg("assistant", ""), support::msg("assistant", "   ")],
            session_id: Some("chat".into()),
            metadata: Default::default(),
        };
        let report = support::block_on(p.ingest(call())).unwrap();
        assert_eq!(report.messages_stored, 3, "{report:?}");
        assert!(report.memories_stored >= 1, "the user's turn is extracted: {report:?}");
        let again = support::block_on(p.ingest(call())).unwrap();
        assert_eq!(again.messages_stored, 0, "re-ingesting is idempotent: {again:?}");
        assert_eq!(p.stats().unwrap().messages, 3);
        let blank = agent_memory::core::api::IngestRequest {
            messages: vec![support::msg("user", ""), support::msg("assistant", " \n")],
            session_id: None,
            metadata: Default::default(),
        };
        let e = support::block_on(p.ingest(blank)).unwrap_err();
        assert!(e.is_invalid(), "a call in which no turn says anything is refused: {e}");
        assert_eq!(p.stats().unwrap().messages, 3);
    });
}

#[test]
fn test_an_ingest_whose_caller_reads_no_result_answers_null_and_stores_the_same() {
    use agent_memory::core::op::{Call, Op};
    let (a, b) = (database(), database());
    let read = with_profile(&a, APRIL_15, |p| {
        let prepared = p.prepare_as(Call::Ingest(spec_conversation()), false).unwrap();
        block_on(p.execute_prepared(prepared)).unwrap()
    });
    let unread = with_profile(&b, APRIL_15, |p| {
        let prepared = p.prepare_as(Call::Ingest(spec_conversation()), false).unwrap().unread();
        block_on(p.execute_prepared(prepared)).unwrap()
    });
    assert!(read.contains("\"memoriesStored\""), "{read}");
    assert_eq!(unread, "null");
    assert!(Op::Ingest.publishes_no_result() && !Op::Recall.publishes_no_result());
    let contents = |sql: &support::NativeSql| {
        with_profile(sql, APRIL_15, |p| {
            let mut c: Vec<String> = p.list(Default::default()).unwrap().memories.into_iter().map(|m| m.content).collect();
            c.sort();
            c
        })
    };
    let stored = contents(&a);
    assert!(!stored.is_empty());
    assert_eq!(contents(&b), stored, "the same memories are stored either way");
}

// ---- bounds ------------------------------------------------------------

/// A message of `n` distinct statements (the rule-based extractor makes a
/// memory of each).
fn prose(n: usize, topic: &str) -> String {
    (0..n).map(|i| format!("On day {i} of the {topic} trip we hiked trail {} by the lake.", 4000 + i)).collect::<Vec<_>>().join(" ")
}

#[test]
fn test_a_message_gives_at_most_its_cap_of_memories_and_the_report_says_how_many_more() {
    use agent_memory::core::ingest::extract::MAX_MEMORIES_PER_MESSAGE;
    let sql = database();
    let n = MAX_MEMORIES_PER_MESSAGE * 3;
    let req = IngestRequest {
        messages: vec![msg("user", &prose(n, "staging")), msg("user", &prose(4, "billing")), msg("assistant", &prose(n, "search"))],
        session_id: Some("prose".into()),
        metadata: Default::default(),
    };
    let report = with_profile(&sql, APRIL_15, |p| block_on(p.ingest(req)).unwrap());
    let memories = with_profile(&sql, APRIL_15, |p| {
        p.list(ListRequest { limit: Some(1000), status: Some(agent_memory::core::api::ListStatus::All), ..ListRequest::default() }).unwrap().memories
    });
    let citing = |id: &str| memories.iter().filter(|m| m.source_message_ids.first().map(String::as_str) == Some(id)).count();
    let [long, short, answer] = [0, 1, 2].map(|i| report.message_ids[i].clone());
    assert_eq!(citing(&long), MAX_MEMORIES_PER_MESSAGE, "{} memories of the long message", citing(&long));
    assert_eq!(citing(&answer), MAX_MEMORIES_PER_MESSAGE);
    assert_eq!(citing(&short), 4, "a message under the cap keeps every statement");
    // Each capped message is said once, with how many were not kept.
    let capped: Vec<&str> = report.dropped.iter().filter(|d| d.reason.contains("at most")).map(|d| d.content.as_str()).collect();
    assert_eq!(capped.len(), 2, "{:#?}", report.dropped);
    assert!(capped.contains(&format!("{} more statements of message {long}", n - MAX_MEMORIES_PER_MESSAGE).as_str()), "{capped:?}");
    assert!(capped.iter().any(|c| c.ends_with(&format!(" more statements of message {answer}"))), "{capped:?}");
    // The messages themselves are stored whole: the last statement, past
    // the cap, is in the source a kept memory shows.
    assert_eq!(with_profile(&sql, APRIL_15, |p| p.stats().unwrap()).messages, 3);
    let last = format!("trail {} by the lake.", 4000 + n - 1);
    let kept = memories.iter().find(|m| m.source_message_ids.first() == Some(&long)).unwrap();
    let detail = with_profile(&sql, APRIL_15, |p| p.get(&kept.id).unwrap());
    assert!(detail.source_messages.iter().any(|s| s.id == long && s.content.ends_with(&last)), "{:#?}", detail.source_messages);
}

#[test]
fn test_the_cap_counts_each_statement_once_across_overlapping_chunks_and_only_for_new_messages() {
    use agent_memory::core::ingest::extract::MAX_MEMORIES_PER_MESSAGE;
    let sql = database();
    let n = MAX_MEMORIES_PER_MESSAGE * 3;
    // Ten long messages: overlapping chunks and the detail pass find the
    // same statements again.
    let topics = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"];
    let messages: Vec<_> = topics.iter().map(|t| msg("user", &prose(n, t))).collect();
    let req = |messages| IngestRequest { messages, session_id: Some("long".into()), metadata: Default::default() };
    let first = with_profile(&sql, APRIL_15, |p| block_on(p.ingest(req(messages.clone()))).unwrap());
    let capped = |r: &IngestReport| r.dropped.iter().filter(|d| d.reason.contains("at most")).map(|d| d.content.clone()).collect::<Vec<_>>();
    let expected: Vec<String> = first.message_ids.iter().map(|id| format!("{} more statements of message {id}", n - MAX_MEMORIES_PER_MESSAGE)).collect();
    let mut said = capped(&first);
    said.sort();
    let mut want = expected.clone();
    want.sort();
    assert_eq!(said, want, "each message once, each statement counted once");
    // The conversation sent again with one more long message: only the
    // new one is capped and said; the stored ones' statements are not
    // counted against it.
    let mut more = messages;
    more.push(msg("user", &prose(n, "kilo")));
    let again = with_profile(&sql, APRIL_15, |p| block_on(p.ingest(req(more))).unwrap());
    let new_id = again.message_ids.last().unwrap().clone();
    assert_eq!(capped(&again), vec![format!("{} more statements of message {new_id}", n - MAX_MEMORIES_PER_MESSAGE)]);
    let memories = with_profile(&sql, APRIL_15, |p| {
        p.list(ListRequest { limit: Some(1000), status: Some(agent_memory::core::api::ListStatus::All), ..ListRequest::default() }).unwrap().memories
    });
    assert_eq!(memories.iter().filter(|m| m.source_message_ids.contains(&new_id)).count(), MAX_MEMORIES_PER_MESSAGE);
}

// ---------------------------------------------------------------------------
// What happens while the judging stages await the model.

fn one_message(session: &str, content: &str) -> IngestRequest {
    IngestRequest { messages: vec![msg("user", content)], session_id: Some(session.into()), metadata: Default::default() }
}

#[test]
fn test_a_session_deleted_while_its_ingest_awaits_the_model_leaves_no_memory_of_it() {
    let sql = database();
    let model = Outage::default();
    let other = &sql;
    model.meanwhile.set(Some(Box::new(move || {
        with_profile(other, APRIL_15 + 1, |p| p.delete_session("s").unwrap());
    })));
    outage_profile(&sql, &model, APRIL_15, |p| {
        let report = block_on(p.ingest(one_message("s", "Use pnpm, not npm."))).unwrap();
        assert_eq!(report.memories_stored, 0, "{report:?}");
        let stats = p.stats().unwrap();
        assert_eq!((stats.messages, stats.memories), (0, 0));
    });
}

#[test]
fn test_a_message_sent_without_a_timestamp_is_dated_when_it_was_stored_when_the_alarm_judges_it_again() {
    let sql = database();
    let model = Outage { down: Cell::new(true), ..Default::default() };
    outage_profile(&sql, &model, APRIL_15, |p| block_on(p.ingest(one_message("deploys", "I deployed the billing service yesterday."))).unwrap());
    model.down.set(false);
    let retried = outage_profile(&sql, &model, APRIL_15 + 3 * DAY, |p| {
        for _ in 0..3 {
            block_on(p.drain()).unwrap();
        }
        p.list(ListRequest::default()).unwrap().memories
    });
    let control =
        with_profile(&database(), APRIL_15, |p| block_on(p.ingest(one_message("deploys", "I deployed the billing service yesterday."))).unwrap().memories);
    assert_eq!(retried.len(), 1);
    let dated = |m: &Memory| (m.content.clone(), m.event_date.clone(), m.valid_from.clone());
    assert_eq!(dated(&retried[0]), dated(&control[0]));
}

/// A session's two calls, with metadata of their own, both met a model
/// fault; the alarm judges them together, and the later statement of the
/// key holds (not the one whose metadata sorts last).
#[test]
fn test_the_alarms_retry_of_two_calls_keeps_the_later_statement_of_a_key() {
    let sql = database();
    let model = Outage { down: Cell::new(true), ..Default::default() };
    let said = |content: &str, at: &str, tag: &str| IngestRequest {
        messages: vec![MessageInput { role: "user".into(), content: content.into(), timestamp: Some(at.into()) }],
        session_id: Some("s".into()),
        metadata: serde_json::from_value(serde_json::json!({ "tag": tag })).unwrap(),
    };
    outage_profile(&sql, &model, APRIL_15, |p| block_on(p.ingest(said("Use pnpm, not npm.", "2026-04-15T09:00:00Z", "z"))).unwrap());
    outage_profile(&sql, &model, APRIL_15 + 1000, |p| {
        block_on(p.ingest(said("Actually, switch to npm for this project.", "2026-04-15T09:30:00Z", "a"))).unwrap()
    });
    model.down.set(false);
    outage_profile(&sql, &model, APRIL_15 + DAY, |p| {
        for _ in 0..4 {
            block_on(p.drain()).unwrap();
        }
        let active: Vec<String> = p.list(ListRequest::default()).unwrap().memories.into_iter().filter(|m| m.key.is_some()).map(|m| m.content).collect();
        assert_eq!(active, ["User: Actually, switch to npm for this project."]);
    });
}

/// Two owners' values of one key, each said in a call of session "s"
/// that met a model fault: judged together by the alarm, both hold, as
/// when each call is judged on its own.
#[test]
fn test_the_alarms_retry_of_two_owners_calls_supersedes_neither() {
    let sql = database();
    let model = Outage { down: Cell::new(true), ..Default::default() };
    let said = |content: &str, owner: &str| IngestRequest {
        messages: vec![msg("user", content)],
        session_id: Some("s".into()),
        metadata: serde_json::from_value(serde_json::json!({ "userId": owner })).unwrap(),
    };
    outage_profile(&sql, &model, APRIL_15, |p| block_on(p.ingest(said("Use pnpm, not npm.", "alice"))).unwrap());
    outage_profile(&sql, &model, APRIL_15 + 1000, |p| block_on(p.ingest(said("Actually, switch to npm for this project.", "bob"))).unwrap());
    model.down.set(false);
    outage_profile(&sql, &model, APRIL_15 + DAY, |p| {
        for _ in 0..4 {
            block_on(p.drain()).unwrap();
        }
        let keyed = p.list(ListRequest::default()).unwrap().memories.into_iter().filter(|m| m.key.is_some()).count();
        assert_eq!(keyed, 2, "one owner's value superseded the other's");
    });
}

/// "Yesterday" said at 21:00 in UTC-5 on April 14 is April 13 there,
/// whatever the date in UTC.
#[test]
fn test_a_relative_date_is_reckoned_from_the_day_where_it_was_said() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let said = MessageInput {
            role: "user".into(),
            content: "I deployed the billing service yesterday.".into(),
            timestamp: Some("2026-04-14T21:00:00-05:00".into()),
        };
        let report = block_on(p.ingest(IngestRequest { messages: vec![said], session_id: Some("s".into()), metadata: Default::default() })).unwrap();
        let m = &report.memories[0];
        assert_eq!(m.event_date.as_deref(), Some("2026-04-13"), "{m:?}");
        assert!(m.content.contains("2026-04-13"), "{}", m.content);
    });
}

/// A call that states a new value of a key and then, later in the same
/// call, the stored value again word for word: the last word holds. The
/// stored memory stays active and the call's new value is stored
/// superseded by it; a value said after the repeat replaces it as usual.
#[test]
fn test_the_stored_value_said_again_after_a_new_one_in_a_call_holds() {
    const NPM: &str = "Actually, switch to npm for this project.";
    const PNPM: &str = "Use pnpm, not npm.";
    let sql = database();
    let keyed = |p: &Profile<'_>| -> Vec<(String, Status)> {
        let mut v: Vec<(String, Status)> = p
            .list(ListRequest { status: Some(agent_memory::core::api::ListStatus::All), ..Default::default() })
            .unwrap()
            .memories
            .into_iter()
            .filter(|m| m.key.is_some())
            .map(|m| (m.content, m.status))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    with_profile(&sql, APRIL_15, |p| block_on(p.ingest(one_message("one", NPM))).unwrap());
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let call = IngestRequest {
            messages: vec![msg("user", PNPM), msg("assistant", "OK."), msg("user", NPM)],
            session_id: Some("two".into()),
            metadata: Default::default(),
        };
        block_on(p.ingest(call)).unwrap();
        assert_eq!(keyed(p), [(format!("User: {NPM}"), Status::Active), (format!("User: {PNPM}"), Status::Superseded)]);
        let npm = p.list(ListRequest::default()).unwrap().memories.into_iter().find(|m| m.key.is_some()).unwrap();
        let pnpm = p.list(ListRequest { status: Some(agent_memory::core::api::ListStatus::Superseded), ..Default::default() }).unwrap().memories;
        assert_eq!(p.get(&pnpm[0].id).unwrap().memory.superseded_by.as_deref(), Some(npm.id.as_str()));
    });
    // Said after the repeat, a new value replaces the stored one.
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        let call = IngestRequest {
            messages: vec![msg("user", NPM), msg("user", "Switch to yarn for this project.")],
            session_id: Some("three".into()),
            metadata: Default::default(),
        };
        block_on(p.ingest(call)).unwrap();
        let active: Vec<(String, Status)> = keyed(p).into_iter().filter(|(_, s)| *s == Status::Active).collect();
        assert_eq!(active, [("User: Switch to yarn for this project.".to_string(), Status::Active)]);
    });
}

/// An agent's statement of a key, then the user's, in one call: the
/// user's replaces the holder from another session too (the agent's
/// reaches its own session only), as it does said alone.
#[test]
fn test_a_person_after_an_agent_in_one_call_replaces_the_holder_from_another_session() {
    let sql = database();
    let model = Outage { one_subject: true, ..Default::default() };
    outage_profile(&sql, &model, APRIL_15, |p| block_on(p.ingest(one_message("one", "Actually, switch to npm for this project."))).unwrap());
    outage_profile(&sql, &model, APRIL_15 + DAY, |p| {
        let call = IngestRequest {
            messages: vec![msg("assistant", "I set the monorepo up with yarn workspaces."), msg("user", "Use pnpm, not npm.")],
            session_id: Some("two".into()),
            metadata: Default::default(),
        };
        block_on(p.ingest(call)).unwrap();
        let keys: Vec<String> = p.list(ListRequest::default()).unwrap().memories.into_iter().filter_map(|m| m.key).collect();
        let mut seen = std::collections::HashSet::new();
        assert!(keys.iter().all(|k| seen.insert(k)), "two active holders of one key: {keys:?}");
        let active: Vec<String> = p.list(ListRequest::default()).unwrap().memories.into_iter().map(|m| m.content).collect();
        assert!(active.iter().any(|c| c.contains("pnpm")), "{active:?}");
        assert!(!active.iter().any(|c| c.contains("switch to npm")), "{active:?}");
    });
}

/// A memory moved by `update` to an owner that holds its key already is
/// refused (409) and left as it was; to an owner that does not, it moves.
#[test]
fn test_update_does_not_give_an_owner_a_second_holder_of_a_key() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let city = |content: &str, user: &str| -> Memory {
            block_on(p.remember(serde_json::from_value(serde_json::json!({ "content": content, "key": "user.city", "metadata": { "userId": user } })).unwrap()))
                .unwrap()
        };
        city("I live in Lisbon.", "ana");
        let ben = city("I live in Porto.", "ben");
        let to = |user: &str| p.update(serde_json::from_value(serde_json::json!({ "id": ben.id, "metadata": { "userId": user } })).unwrap());
        let e = to("ana").unwrap_err();
        assert_eq!(e.status(), 409, "{e}");
        assert_eq!(p.get(&ben.id).unwrap().memory.metadata, ben.metadata, "the refused update changed it");
        assert!(to("carl").is_ok());
        // Its own owner again, or other metadata beside the same owner: no conflict.
        assert!(p.update(serde_json::from_value(serde_json::json!({ "id": ben.id, "metadata": { "userId": "carl", "label": "x" } })).unwrap()).is_ok());
    });
}

fn said_in(session: &str, content: &str) -> IngestRequest {
    IngestRequest { messages: vec![msg("user", content)], session_id: Some(session.into()), metadata: Default::default() }
}

/// Deleting the session that replaced a value puts the value back: the
/// replacement was drawn from the deleted messages, so nothing of it
/// stays, its supersession included. The older memory is active again,
/// valid with no end, and wants its vector back.
#[test]
fn test_deleting_the_session_that_replaced_a_value_makes_the_old_value_active_again() {
    let sql = database();
    let old = with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(spec_conversation())).unwrap();
        pnpm_memory(p)
    });
    with_profile(&sql, APRIL_15 + DAY, |p| {
        block_on(p.ingest(switch_to_npm())).unwrap();
        assert_eq!(p.get(&old.id).unwrap().memory.status, Status::Superseded);
        block_on(p.drain()).unwrap();
        assert!(!vector_ids(&sql).contains(&old.id), "a superseded memory has no vector");
        p.delete_session("later").unwrap();
        let back = p.get(&old.id).unwrap().memory;
        assert_eq!(back.status, Status::Active, "its replacement is gone: it holds again");
        assert_eq!(back.superseded_by, None);
        assert_eq!(back.valid_to, None);
        assert_eq!(pnpm_memory(p).id, old.id);
        block_on(p.drain()).unwrap();
        assert!(vector_ids(&sql).contains(&old.id), "and is found by meaning again");
    });
}

/// A deleted version in the middle of a chain is spliced out: the one
/// before it is superseded by the one after it, which supersedes it.
#[test]
fn test_deleting_a_middle_version_links_its_neighbours() {
    let sql = database();
    let ids = with_profile(&sql, APRIL_15, |p| {
        let mut ids = Vec::new();
        for (s, tool) in [("one", "pnpm"), ("two", "npm"), ("three", "yarn")] {
            let r = block_on(p.ingest(said_in(s, &format!("I use {tool} as the package manager for this project.")))).unwrap();
            ids.push(r.memories.iter().find(|m| m.content.contains(tool)).expect("a memory of it").id.clone());
        }
        ids
    });
    with_profile(&sql, APRIL_15 + DAY, |p| {
        assert_eq!(p.get(&ids[1]).unwrap().memory.superseded_by.as_deref(), Some(ids[2].as_str()), "each replaces the one before");
        p.delete_session("two").unwrap();
        let first = p.get(&ids[0]).unwrap().memory;
        let last = p.get(&ids[2]).unwrap().memory;
        assert_eq!(first.status, Status::Superseded);
        assert_eq!(first.superseded_by.as_deref(), Some(ids[2].as_str()));
        assert_eq!(first.valid_to, last.valid_from, "valid until the next remaining version");
        assert_eq!(last.supersedes.as_deref(), Some(ids[0].as_str()));
        assert_eq!(last.status, Status::Active);
        let chain: Vec<String> = p.get(&ids[2]).unwrap().versions.into_iter().map(|m| m.id).collect();
        assert_eq!(chain, vec![ids[0].clone(), ids[2].clone()]);
    });
}

/// A forgotten replacement no longer holds its key, so a later value is
/// stored without superseding anything; hard-deleting the forgotten
/// replacement's session leaves the oldest value superseded by that later
/// one, not active beside it.
#[test]
fn test_deleting_a_forgotten_replacement_leaves_the_old_value_replaced_by_the_current_one() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let said = |s: &str, tool: &str| {
            let r = block_on(p.ingest(said_in(s, &format!("I use {tool} as the package manager for this project.")))).unwrap();
            r.memories.iter().find(|m| m.content.contains(tool)).expect("a memory of it").clone()
        };
        let pnpm = said("one", "pnpm");
        let npm = said("two", "npm");
        assert_eq!(p.get(&pnpm.id).unwrap().memory.superseded_by.as_deref(), Some(npm.id.as_str()));
        p.forget(&npm.id).unwrap();
        let yarn = said("three", "yarn");
        assert_eq!(p.get(&yarn.id).unwrap().memory.status, Status::Active);
        p.delete_session("two").unwrap();
        let holders: Vec<Memory> = active(p).into_iter().filter(|m| m.key.as_deref() == Some("user.package_manager")).collect();
        assert_eq!(holders.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), vec![yarn.id.as_str()], "one active holder of the key: yarn");
        let old = p.get(&pnpm.id).unwrap().memory;
        assert_eq!((old.status, old.superseded_by.as_deref()), (Status::Superseded, Some(yarn.id.as_str())));
        assert_eq!(old.valid_to, p.get(&yarn.id).unwrap().memory.valid_from, "valid until the current value was said");
    });
}

// ---- model replies that must not read as "nothing to remember" ----

#[test]
fn test_a_cut_off_extraction_reply_is_a_fault_not_an_empty_answer() {
    let sql = database();
    // The reply hit its token budget mid-list: not one well-formed
    // `{"memories": [...]}` in it, only its first item.
    let cut = "{\"memories\": [{\"content\": \"The user wants the project set up with React and TypeScript.\", \"lines\": [0]}, \
{\"content\": \"The user prefers pnpm over npm.\", \"lines\": [2]}, {\"content\": \"The user wants dark mo";
    let model = Scripted::default().on("extract", &[cut, cut]);
    let r = ingest_with(&sql, &model, spec_conversation());
    assert_eq!(r.messages_stored, 4);
    assert!(
        r.dropped.iter().any(|d| d.reason.starts_with("extraction failed")),
        "a cut-off reply must be recorded as a failed extraction (and retried by the alarm); report: memories {} dropped {:?}, extract calls {}",
        r.memories_stored,
        r.dropped,
        model.calls_to("extract")
    );
}

#[test]
fn test_a_bracketed_line_number_before_the_json_does_not_empty_the_extraction() {
    let sql = database();
    // A reasoning model's reply: its thinking, then the JSON (unfenced).
    let json = EXTRACTED.split("```json\n").nth(1).unwrap().split("\n```").next().unwrap();
    let reply = format!("<think>Line [0] asks for React; line [2] states a preference.</think>\n{json}");
    let model = Scripted::default().on("extract", &[reply.as_str()]).on("verify", &[VERIFIED]).on("classify", &[CLASSIFIED]);
    let r = ingest_with(&sql, &model, spec_conversation());
    assert!(
        r.memories_stored > 0,
        "the reply's memories after its reasoning were not stored: memories {} dropped {:?}, extract calls {}",
        r.memories_stored,
        r.dropped,
        model.calls_to("extract")
    );
}

/// The example conversation ingested by the rules, then a recall of the
/// package manager whose synthesis replies `replies` in turn; the answer,
/// and the model (to count its calls).
fn recalled_with_synthesis(replies: &[&str]) -> (agent_memory::core::recall::RecallResponse, Scripted) {
    let sql = database();
    with_parts(&sql, APRIL_15, &Rules, &HashEmbedder, |p| block_on(p.ingest(spec_conversation())).unwrap());
    let model = Scripted::default()
        .on("analyze", &["{\"keys\": [\"user.package_manager\"], \"terms\": [\"pnpm\"], \"hyde\": \"The user prefers pnpm.\"}"])
        .on("synthesize", replies);
    let reasoner = LlmReasoner { model: &model };
    let r = with_parts(&sql, APRIL_15, &reasoner, &HashEmbedder, |p| {
        block_on(p.recall(agent_memory::core::api::RecallRequest { query: "Which package manager does the user prefer?".into(), options: Default::default() }))
            .unwrap()
    });
    (r, model)
}

#[test]
fn test_a_reasoning_models_thoughts_are_not_the_recall_answer() {
    // A reasoning model whose chat template opens the thinking block in the
    // prompt: its reply carries only the closing tag.
    let thoughts = "Okay, the memories list the user's setup; one says pnpm over npm, the assistant confirmed it. So the answer is pnpm.\n</think>\n\nThe user prefers pnpm.";
    let (r, model) = recalled_with_synthesis(&[thoughts]);
    assert_eq!(model.calls_to("synthesize"), 1);
    assert!(!r.answer.contains("</think>") && !r.answer.contains("Okay, the memories"), "the answer carries the model's reasoning: {:?}", r.answer);
}

#[test]
fn test_a_thinking_block_cut_off_by_the_token_budget_is_not_the_recall_answer() {
    // SYNTHESIS_TOKENS ran out while the model was still thinking.
    let cut = "<think>The user asks which package manager. Memory 1 says the user prefers pnpm over npm; memory 2 says";
    let (r, model) = recalled_with_synthesis(&[cut, cut]);
    assert!(
        !r.answer.contains("<think>"),
        "the answer is the model's unfinished reasoning: {:?} (synthesize calls {})",
        r.answer,
        model.calls_to("synthesize")
    );
}

/// The feature-hashing embedder, except that a text about dark mode gets
/// a vector of 8 dimensions (a ragged reply: `{"shape": [n, 256]}` is
/// checked against the first row only).
struct RaggedEmbedder;

impl Embedder for RaggedEmbedder {
    fn embed<'a>(&'a self, texts: &'a [String]) -> LocalBoxFuture<'a, Result<Vec<Vec<f32>>>> {
        let out = texts.iter().map(|t| if t.contains("dark mode") { vec![0.5; 8] } else { agent_memory::core::local::embed::embed_one(t) }).collect();
        Box::pin(async move { Ok(out) })
    }
}

#[test]
fn test_a_ragged_workers_ai_embedding_reply_is_refused() {
    use agent_memory::core::llm::parse_workers_ai_embed_response;
    let reply = serde_json::json!({"shape": [2, 3], "data": [[0.1, 0.2, 0.3], [0.4]]});
    assert!(parse_workers_ai_embed_response(&reply).is_err(), "a row of 1 dimension in a [2, 3] reply was accepted");
}

#[test]
fn test_a_vector_of_another_dimension_does_not_finish_its_embedding_job() {
    let sql = database();
    with_parts(&sql, APRIL_15, &Rules, &RaggedEmbedder, |p| {
        block_on(p.ingest(spec_conversation())).unwrap();
        let r = block_on(p.drain()).unwrap();
        let dims: Vec<(String, i64)> = sql
            .query("SELECT m.content, length(v.vector) FROM vectors v JOIN memories m ON m.id = v.memory_id", &[])
            .unwrap()
            .into_iter()
            .map(|row| (row[0].opt_string().unwrap_or_default(), row[1].as_i64().unwrap_or(0)))
            .collect();
        let odd: Vec<&(String, i64)> = dims.iter().filter(|(c, _)| c.to_lowercase().contains("dark mode")).collect();
        assert!(
            odd.is_empty() || r.failed > 0,
            "a vector whose dimension differs from its batch's was written and its job finished (failed {}): {:?}",
            r.failed,
            dims
        );
    });
}

/// Dark mode's verification batch fails (`Flaky`) while the other batch
/// of its message is stored: the message is cited, yet the alarm's retry
/// judges it again (it is marked), stores dark mode, and stores nothing
/// twice.
#[test]
fn test_a_statement_whose_verification_failed_is_retried_even_when_its_message_gave_other_memories() {
    let sql = database();
    let model = Flaky { down: Cell::new(true), ..Default::default() };
    let r = flaky_ingest(&sql, &model, APRIL_15, "Lots of project settings, and I want dark mode by default.");
    assert_eq!(r.memories_stored, 16);
    assert!(r.dropped.iter().any(|d| d.content.contains("dark mode") && d.reason.starts_with("verification failed")), "{:?}", r.dropped);
    // The model is back: the alarm's re-extraction job runs.
    model.down.set(false);
    with_parts(&sql, APRIL_15 + 60_000, &model, &HashEmbedder, |p| {
        for _ in 0..3 {
            block_on(p.drain()).unwrap();
        }
        let stats = p.stats().unwrap();
        let dark = active(p).into_iter().any(|m| m.content.contains("dark mode"));
        assert!(dark, "the statement whose verification failed was never retried: pending jobs {}, parked {}", stats.pending_jobs, stats.parked_jobs);
        assert_eq!(active(p).len(), 17, "the sixteen stored first are found stored, not stored twice");
        assert_eq!(sql.query("SELECT COUNT(*) FROM rejudge", &[]).unwrap()[0][0].as_i64(), Some(0), "judged without a fault: no mark left");
        assert_eq!(stats.pending_jobs, 0);
    });
}

/// A retry judges a marked message whole, and a model words its
/// statements anew each time: what the message gave before, in other words
/// saying the same thing, is not stored a second time.
#[test]
fn test_a_retry_stores_no_rewording_of_what_the_message_gave() {
    let sql = database();
    let model = Flaky { down: Cell::new(true), ..Default::default() };
    let r = flaky_ingest(&sql, &model, APRIL_15, "Lots of project settings, and I want dark mode by default.");
    assert_eq!(r.memories_stored, 16);
    model.reworded.set(true);
    let active = after_the_retry(&sql, &model);
    assert!(active.iter().any(|m| m.content.contains("dark mode")), "dark mode retried");
    let settings: Vec<&str> = active.iter().map(|m| m.content.as_str()).filter(|c| c.contains("setting number")).collect();
    assert_eq!(settings.len(), 15, "each setting once: {settings:#?}");
    assert!(settings.iter().all(|c| c.ends_with("for the project.")), "the first wordings stay: {settings:#?}");
}

/// What a message gave is weighed by meaning, not by its content words
/// alone: "after work" is not a rewording of "before work" (both stop
/// words), so a retry stores it when only the other was stored.
#[test]
fn test_a_retry_stores_a_statement_that_differs_from_what_the_message_gave_in_a_stop_word() {
    let sql = database();
    let model = Flaky { down: Cell::new(true), ..Default::default() };
    let r = flaky_ingest(&sql, &model, APRIL_15, "I walk the dog before work and again after work; also settings and dark mode.");
    assert_eq!(r.memories_stored, 16, "{:?}", r.dropped);
    let active = after_the_retry(&sql, &model);
    assert!(active.iter().any(|m| m.content.contains("dark mode")), "dark mode retried");
    assert!(active.iter().any(|m| m.content.contains("after work")), "a statement the message never gave was dropped");
    assert_eq!(active.len(), 18);
}

/// The retry of a marked message judges all of it again, but a statement
/// the message gave before is not stored again, whatever its state now:
/// one stored and since superseded by a later value stays superseded,
/// rather than coming back as the newest value.
#[test]
fn test_a_retry_of_a_marked_message_does_not_revive_a_value_superseded_since() {
    let (sql, model) = blue_then_green();
    let active = after_the_retry(&sql, &model);
    assert!(active.iter().any(|m| m.content.contains("dark mode")), "dark mode retried");
    let colors = favorite_colors(&active);
    assert_eq!(colors.len(), 1, "{colors:?}");
    assert!(colors[0].contains("green"), "the retry revived the value the user changed since: active {colors:?}");
}

/// Blue said with settings and dark mode while dark mode's verification
/// fails (the message marked), then green before the alarm's retry: the
/// user changes the value.
fn blue_then_green() -> (NativeSql, Flaky) {
    let sql = database();
    let model = Flaky { down: Cell::new(true), ..Default::default() };
    let r = flaky_ingest(&sql, &model, APRIL_15, "Lots of project settings; my favorite color is blue; dark mode please.");
    assert_eq!(r.memories_stored, 16, "{:?}", r.dropped);
    let r = flaky_ingest(&sql, &model, APRIL_15 + 1_000, "My favorite color is green now.");
    assert_eq!(r.memories_superseded, 1);
    (sql, model)
}

/// The model back up, the alarm's drains a minute later: what is active
/// then.
fn after_the_retry(sql: &NativeSql, model: &Flaky) -> Vec<Memory> {
    model.down.set(false);
    with_parts(sql, APRIL_15 + 60_000, model, &HashEmbedder, |p| {
        for _ in 0..3 {
            block_on(p.drain()).unwrap();
        }
        active(p)
    })
}

/// `text` ingested into session "s" at `at` with `model` deciding.
fn flaky_ingest(sql: &NativeSql, model: &Flaky, at: i64, text: &str) -> IngestReport {
    let req = IngestRequest { messages: vec![msg("user", text)], session_id: Some("s".into()), metadata: Default::default() };
    with_parts(sql, at, model, &HashEmbedder, |p| block_on(p.ingest(req)).unwrap())
}

fn favorite_colors(active: &[Memory]) -> Vec<String> {
    active.iter().filter(|m| m.key.as_deref() == Some("user.favorite_color")).map(|m| m.content.clone()).collect()
}

/// A model that names its list otherwise than the prompt asked
/// (`{"results": [...]}`, the reply's only list) still gave statements,
/// and they are read (an object's only array, unless the object is itself
/// a statement).
#[test]
fn test_an_extraction_list_under_another_name_is_read() {
    let sql = database();
    let results = EXTRACTED.replace("{\"memories\":", "{\"results\":");
    let model = Scripted::default().on("extract", &[&results, &results]).on("verify", &[VERIFIED]).on("classify", &[CLASSIFIED]);
    let r = ingest_with(&sql, &model, spec_conversation());
    assert!(r.memories_stored > 0, "a reply of four statements stored nothing: {:?}", r.dropped);
}

/// A conversation about reasoning models' tags: the statement quotes
/// `</think>`. Read from after the tag, the reply's JSON is cut in two;
/// read whole, it holds the statement, which is stored.
#[test]
fn test_a_statement_quoting_a_closing_think_tag_is_read() {
    let sql = database();
    let reply = "{\"memories\": [{\"content\": \"The user's proxy strips everything before </think> from model replies.\", \"lines\": [0]}]}";
    let model = Scripted::default()
        .on("extract", &[reply, reply])
        .on("verify", &["{\"verdicts\": [{\"index\": 0, \"verdict\": \"pass\"}]}"])
        .on("classify", &["{\"items\": [{\"index\": 0, \"type\": \"fact\", \"key\": \"project.proxy\", \"summary\": \"Proxy strips reasoning\", \"searchQueries\": [\"proxy?\"]}]}"]);
    let req = IngestRequest {
        messages: vec![msg("user", "My proxy strips everything before </think> from model replies.")],
        session_id: Some("s".into()),
        metadata: Default::default(),
    };
    let r = ingest_with(&sql, &model, req);
    assert_eq!(r.memories_stored, 1, "{:?}", r.dropped);
}

/// The marks are written in the memories' transaction: an ingest cut
/// while writing them (the object restarted or evicted; here the mark's
/// statement fails) stores none of the call's memories, and the guard
/// job's retry judges the message whole, dark mode with the rest. Written
/// after the memories, the marks were lost with the cut, and the message,
/// cited by the sixteen stored, was never judged again.
#[test]
fn test_an_ingest_cut_before_its_marks_loses_no_statement() {
    let sql = database();
    let model = Flaky { down: Cell::new(true), ..Default::default() };
    let req = IngestRequest {
        messages: vec![msg("user", "Lots of project settings, and I want dark mode by default.")],
        session_id: Some("s".into()),
        metadata: Default::default(),
    };
    let cut = support::FailingAt { inner: &sql, pattern: "INTO rejudge", n: Cell::new(1) };
    let parts = support::Parts { reasoner: &model, ..Default::default() };
    support::with_nothing_resident(&cut, APRIL_15, parts, |p| assert!(block_on(p.ingest(req)).is_err(), "the cut call answers 500"));
    model.down.set(false);
    with_parts(&sql, APRIL_15 + agent_memory::core::ops::INGEST_GUARD_MILLIS + 60_000, &model, &HashEmbedder, |p| {
        for _ in 0..3 {
            block_on(p.drain()).unwrap();
        }
        // The cut undid the call's memories with its marks (one
        // transaction): the guard's retry judged the message whole.
        assert_eq!(active(p).len(), 17, "every statement stored once");
        assert!(active(p).iter().any(|m| m.content.contains("dark mode")), "the statement whose verification failed is lost");
    });
}

/// A model whose verifier fails while `down` for the batches holding dark
/// mode or the flaky verifier. Line "Lots": the favorite color (blue), 15
/// fillers, then dark mode (17 statements: verification takes two
/// batches, and the first is stored, so the message is cited). Line
/// "green": green. Line "Back": blue again, and the flaky verifier.
#[derive(Default)]
struct Flaky {
    down: Cell<bool>,
    /// Words the project settings otherwise (a model asked again).
    reworded: Cell<bool>,
}

impl Reasoner for Flaky {
    fn extract<'a>(
        &'a self,
        t: &'a agent_memory::core::provider::Transcript,
        _pass: agent_memory::core::provider::Pass,
    ) -> LocalBoxFuture<'a, Result<Vec<agent_memory::core::provider::Candidate>>> {
        let c = |s: String, i: usize| agent_memory::core::provider::Candidate { content: s, lines: vec![i], event_date: None };
        let mut out = Vec::new();
        for l in &t.lines {
            if l.text.contains("Lots") {
                out.push(c("The user's favorite color is blue.".into(), l.index));
                let setting = |i| match self.reworded.get() {
                    false => format!("The user mentioned setting number {i} for the project."),
                    true => format!("The user mentioned the setting number {i} for this project."),
                };
                out.extend((0..15).map(|i| c(setting(i), l.index)));
                out.push(c("The user wants dark mode by default.".into(), l.index));
            } else if l.text.contains("walk") {
                out.extend((0..15).map(|i| c(format!("The user mentioned setting number {i} for the project."), l.index)));
                out.push(c("The user walks the dog before work.".into(), l.index));
                out.push(c("The user walks the dog after work.".into(), l.index));
                out.push(c("The user wants dark mode by default.".into(), l.index));
            } else if l.text.contains("green") {
                out.push(c("The user's favorite color is green.".into(), l.index));
            } else if l.text.contains("Back") {
                out.push(c("The user's favorite color is blue.".into(), l.index));
                out.push(c("The user wants a flaky verifier.".into(), l.index));
            }
        }
        Box::pin(async move { Ok(out) })
    }
    fn verify<'a>(
        &'a self,
        _t: &'a agent_memory::core::provider::Transcript,
        c: &'a [agent_memory::core::provider::Candidate],
    ) -> LocalBoxFuture<'a, Result<Vec<agent_memory::core::provider::Verdict>>> {
        let fail = self.down.get() && c.iter().any(|c| c.content.contains("dark mode") || c.content.contains("flaky"));
        Box::pin(async move {
            if fail {
                return Err(Error::provider("model unavailable"));
            }
            Ok(c.iter().map(|_| agent_memory::core::provider::Verdict::Pass).collect())
        })
    }
    fn classify<'a>(
        &'a self,
        _t: &'a agent_memory::core::provider::Transcript,
        c: &'a [agent_memory::core::provider::Candidate],
    ) -> LocalBoxFuture<'a, Result<Vec<agent_memory::core::provider::Classification>>> {
        let out = c
            .iter()
            .map(|c| agent_memory::core::provider::Classification {
                kind: MemoryType::Fact,
                key: c.content.contains("favorite color").then(|| "user.favorite_color".to_string()),
                summary: c.content.clone(),
                search_queries: vec![],
            })
            .collect();
        Box::pin(async move { Ok(out) })
    }
    fn analyze<'a>(&'a self, q: &'a str) -> LocalBoxFuture<'a, Result<agent_memory::core::provider::QueryAnalysis>> {
        Rules.analyze(q)
    }
    fn synthesize<'a>(&'a self, i: &'a agent_memory::core::provider::SynthesisInput) -> LocalBoxFuture<'a, Result<String>> {
        Rules.synthesize(i)
    }
    fn consolidate<'a>(&'a self, g: &'a [agent_memory::core::provider::Group]) -> LocalBoxFuture<'a, Result<Vec<agent_memory::core::provider::Consolidation>>> {
        Rules.consolidate(g)
    }
}

/// blue (message 1, marked: its dark mode batch failed), green (message 2),
/// blue again (message 3, never stored: its batch failed, marked). The
/// retry judges messages 1 and 3; message 3's "blue" was never given by
/// message 3, and is the user's latest value.
#[test]
fn test_a_retry_keeps_a_statement_another_marked_message_gave_before() {
    let (sql, model) = blue_then_green();
    let r = flaky_ingest(&sql, &model, APRIL_15 + 2_000, "Back to blue as my favorite color, and a flaky verifier.");
    assert_eq!(r.memories_stored, 0, "the batch holding blue failed: {:?}", r.dropped);
    let active = after_the_retry(&sql, &model);
    assert!(active.iter().any(|m| m.content.contains("flaky")), "message 3 retried");
    let colors = favorite_colors(&active);
    assert_eq!(colors.len(), 1, "{colors:?}");
    assert!(colors[0].contains("blue"), "the user's latest value (blue, said after green) was dropped by the retry: active {colors:?}");
}

/// A reasoning model's reply cut off by its token budget gave no answer,
/// whether mid-thought (its `<think>` never closed) or after it, mid-list:
/// the extraction failed, with a record and a retry. The draft its
/// reasoning mentions (the empty list it would give were there nothing to
/// remember) is no answer.
#[test]
fn test_a_reasoning_reply_cut_off_is_a_fault_not_its_draft() {
    let mid_thought = "<think>The user sets up a project. Were nothing worth keeping I would answer {\"memories\": []}. \
                       But line 2 says the user prefers pnpm over npm, and line 2 also asks for dark mode, so the list";
    let mid_list = "<think>An empty reply would be {\"memories\": []}; here there is plenty.</think>\n\
                    {\"memories\": [{\"content\": \"The user prefers pnpm over npm.\", \"lines\": [2]}, {\"content\": \"The user wants dark";
    for cut in [mid_thought, mid_list] {
        let sql = database();
        let model = Scripted::default().on("extract", &[cut, cut]);
        let r = ingest_with(&sql, &model, spec_conversation());
        assert_eq!(r.memories_stored, 0);
        assert!(r.dropped.iter().any(|d| d.reason.starts_with("extraction failed")), "a cut-off reply was read as nothing to remember: {:?}", r.dropped);
    }
}

/// A model without reasoning blocks answers a question about one: the
/// answer mentions the tags, and is read whole.
#[test]
fn test_an_answer_mentioning_the_reasoning_tags_is_read_whole() {
    use agent_memory::core::llm::parse::answer;
    let a = "Your proxy drops everything before </think>, so the reasoning never reaches the UI.";
    assert_eq!(answer(a).ok().as_deref(), Some(a), "read as {:?}", answer(a));
    let b = "Your model opens its reasoning with <think> and your proxy strips it.";
    assert_eq!(answer(b).ok().as_deref(), Some(b), "read as {:?}", answer(b).map_err(|e| e.to_string()));
}

/// A model whose chat template opened the reasoning in the prompt (the
/// reply holds only its end, `</think>` on a line of its own): its answer
/// cut off mid-list is a fault, not the draft in its reasoning; and an
/// answer quoting `<think>` is still read without the reasoning before it.
#[test]
fn test_a_template_opened_reasoning_is_no_answer_however_the_answer_reads() {
    let cut = "An empty reply would be {\"memories\": []}; here there is plenty.\n</think>\n\
               {\"memories\": [{\"content\": \"The user prefers pnpm over npm.\", \"lines\": [2]}, {\"content\": \"The user wants dark";
    let sql = database();
    let model = Scripted::default().on("extract", &[cut, cut]);
    let r = ingest_with(&sql, &model, spec_conversation());
    assert!(
        r.dropped.iter().any(|d| d.reason.starts_with("extraction failed")),
        "a template-opened reply's draft was read as nothing to remember: {:?}",
        r.dropped
    );
    let quoting = "An empty reply would be {\"memories\": []}, but line 2 has a statement.\n</think>\n\
                   {\"memories\": [{\"content\": \"The user's proxy strips <think> blocks.\", \"lines\": [2]}]}";
    let cs = agent_memory::core::llm::parse::candidates(quoting).map_err(|e| e.to_string());
    assert_eq!(cs.as_ref().map(|c| c.len()), Ok(1), "read as {cs:?}");
}

/// Short facts a person states of themselves are stored, each its own
/// memory, and a question about one finds it.
#[test]
fn test_short_facts_about_the_user_are_each_stored_and_recalled() {
    let sql = database();
    let req = IngestRequest {
        messages: vec![msg("user", "My cat is named Tom. I deploy on Fridays. My editor is Vim.")],
        session_id: Some("s".into()),
        metadata: Default::default(),
    };
    with_profile(&sql, APRIL_15, |p| {
        let report = block_on(p.ingest(req)).unwrap();
        assert_eq!(report.memories_stored, 3, "{:?}", report.memories.iter().map(|m| &m.content).collect::<Vec<_>>());
        let query: agent_memory::core::api::RecallRequest = serde_json::from_value(serde_json::json!({ "query": "What editor do I use?" })).unwrap();
        let r = block_on(p.recall(query)).unwrap();
        assert!(r.candidates.first().is_some_and(|c| c.summary.contains("Vim")), "{:?}", r.candidates.iter().map(|c| &c.summary).collect::<Vec<_>>());
    });
}

/// A user's message in its own session, said at `at`.
fn said_at(session: &str, content: &str, at: &str) -> IngestRequest {
    IngestRequest {
        messages: vec![MessageInput { role: "user".into(), content: content.into(), timestamp: Some(at.into()) }],
        session_id: Some(session.into()),
        metadata: Default::default(),
    }
}

/// The words of the memories `list` finds valid at `instant`.
fn as_of(p: &Profile<'_>, instant: &str) -> Vec<String> {
    let req: ListRequest = serde_json::from_value(serde_json::json!({ "asOf": instant })).unwrap();
    p.list(req).unwrap().memories.into_iter().map(|m| m.content).collect()
}

/// A backdated conversation ingested after newer ones: its value, said
/// between two held versions of a key, is the current one (the last to
/// arrive), and no earlier version stays valid past when it was said, so
/// `asOf` finds one value at any instant.
#[test]
fn test_a_backdated_value_ends_the_versions_before_it_so_as_of_finds_one_value() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(said_at("x1", "My favorite fruit is apple.", "2024-01-01T10:00:00Z"))).unwrap();
        block_on(p.ingest(said_at("x2", "My favorite fruit is cherry.", "2024-01-10T10:00:00Z"))).unwrap();
        block_on(p.ingest(said_at("y1", "My favorite fruit is banana.", "2024-01-05T10:00:00Z"))).unwrap();
        let at = |instant: &str| as_of(p, instant);
        assert_eq!(active(p).iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["User: My favorite fruit is banana."], "the last to arrive");
        assert_eq!(at("2024-01-03T00:00:00Z"), ["User: My favorite fruit is apple."]);
        assert_eq!(at("2024-01-07T00:00:00Z"), ["User: My favorite fruit is banana."], "one value, not apple beside banana");
        // Another, said earlier still: the walk back reaches past a
        // version that ends after it.
        block_on(p.ingest(said_at("z1", "My favorite fruit is grape.", "2024-01-03T10:00:00Z"))).unwrap();
        assert_eq!(at("2024-01-02T00:00:00Z"), ["User: My favorite fruit is apple."]);
        for instant in ["2024-01-04T00:00:00Z", "2024-01-07T00:00:00Z", "2024-01-12T00:00:00Z"] {
            assert_eq!(at(instant), ["User: My favorite fruit is grape."], "{instant}");
        }
        for m in every_memory(p) {
            assert!(m.valid_to.as_deref().is_none_or(|to| Some(to) >= m.valid_from.as_deref()), "{} never ends before it begins", m.content);
        }
    });
}

/// The key's active value forgotten, then a value said before it (a
/// backdated conversation): no active memory holds the key, and the new
/// value goes after the forgotten one in its chain, which keeps its status
/// and counts as no value superseded; the version before it ends when the
/// new one was said, so `asOf` finds one value at any instant.
#[test]
fn test_a_value_said_after_the_active_one_was_forgotten_goes_after_it_in_its_chain() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(said_at("x1", "My favorite fruit is apple.", "2024-01-01T10:00:00Z"))).unwrap();
        block_on(p.ingest(said_at("x2", "My favorite fruit is cherry.", "2024-01-10T10:00:00Z"))).unwrap();
        let cherry = active(p).into_iter().next().unwrap();
        p.forget(&cherry.id).unwrap();
        let report = block_on(p.ingest(said_at("y1", "My favorite fruit is banana.", "2024-01-05T10:00:00Z"))).unwrap();
        assert_eq!(report.memories_superseded, 0, "a forgotten value held nothing to supersede");
        let banana = active(p).into_iter().next().unwrap();
        assert_eq!(banana.supersedes.as_deref(), Some(cherry.id.as_str()));
        let cherry = p.get(&cherry.id).unwrap().memory;
        assert_eq!((cherry.status, cherry.superseded_by.as_deref()), (Status::Forgotten, Some(banana.id.as_str())));
        let at = |instant: &str| as_of(p, instant);
        assert_eq!(at("2024-01-03T00:00:00Z"), ["User: My favorite fruit is apple."]);
        assert_eq!(at("2024-01-07T00:00:00Z"), ["User: My favorite fruit is banana."], "one value, not apple beside banana");
    });
}

/// The values the fruit property tests say, in order (then "kiwi").
const FRUITS: [&str; 12] = ["apple", "banana", "cherry", "grape", "mango", "peach", "plum", "lemon", "melon", "guava", "papaya", "lime"];

/// The user saying the `fruit`-th of [`FRUITS`] is their favorite, on
/// January `day`.
fn fruit_said(fruit: usize, day: u8) -> MessageInput {
    let fruit = FRUITS.get(fruit).copied().unwrap_or("kiwi");
    MessageInput { role: "user".into(), content: format!("My favorite fruit is {fruit}."), timestamp: Some(format!("2024-01-{day:02}T10:00:00Z")) }
}

/// Call `n` of a fruit property test: its own session, `s{n}`.
fn fruit_call(n: usize, messages: Vec<MessageInput>) -> IngestRequest {
    IngestRequest { messages, session_id: Some(format!("s{n}")), metadata: Default::default() }
}

/// Values of one key said in any order of time, each in its own session
/// (backdated conversations ingested after newer ones), then some of those
/// sessions deleted: the versions stay one line (each superseded by at
/// most one other, named back), one value is active, none ends before it
/// begins, and `asOf` at any instant finds at most one.
mod ingested_chains_stay_one_line {
    use super::*;
    use proptest::prelude::*;

    fn check(p: &Profile<'_>) -> std::result::Result<(), TestCaseError> {
        support::one_line_of(p, "favorite fruit", 1..=20).map_err(TestCaseError::fail)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]
        #[test]
        fn test_values_said_in_any_order_and_sessions_deleted_stay_one_line(
            calls in proptest::collection::vec(proptest::collection::vec(1u8..=20, 1..3), 1..6),
            deleted in proptest::collection::vec(0usize..6, 0..4),
        ) {
            let sql = database();
            with_profile(&sql, APRIL_15, |p| {
                let mut said = 0;
                for (n, days) in calls.iter().enumerate() {
                    // A call may say two values, in any order of time.
                    let mut messages = Vec::new();
                    for day in days {
                        messages.push(fruit_said(said, *day));
                        said += 1;
                    }
                    block_on(p.ingest(fruit_call(n, messages))).unwrap();
                    check(p)?;
                }
                for n in &deleted {
                    p.delete_session(&format!("s{n}")).unwrap();
                    check(p)?;
                }
                Ok::<_, TestCaseError>(())
            })?;
        }
    }
}

/// As [`ingested_chains_stay_one_line`], with the active value or another
/// version forgotten after some calls: a forgotten version leaves `asOf` and recall but
/// stays in its chain, and a value said later (or backdated), or a
/// session deleted, keeps the versions one line.
mod forgotten_chains_stay_one_line {
    use super::*;
    use proptest::prelude::*;

    /// One line, and every version forgotten still forgotten.
    fn check(p: &Profile<'_>, forgotten: &[String]) -> std::result::Result<(), TestCaseError> {
        support::one_line_of(p, "favorite fruit", 1..=20).map_err(TestCaseError::fail)?;
        for id in forgotten {
            if let Ok(m) = p.get(id).map(|d| d.memory) {
                prop_assert_eq!(m.status, Status::Forgotten, "{} was forgotten", m.content);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        #[test]
        fn test_values_forgotten_then_said_in_any_order_stay_one_line(
            calls in proptest::collection::vec((proptest::collection::vec(1u8..=20, 1..3), proptest::option::of(0usize..8)), 1..6),
            deleted in proptest::collection::vec(0usize..6, 0..4),
        ) {
            let sql = database();
            with_profile(&sql, APRIL_15, |p| {
                let mut said = 0;
                let mut forgotten: Vec<String> = Vec::new();
                for (n, (days, forget)) in calls.iter().enumerate() {
                    let mut messages = Vec::new();
                    for day in days {
                        messages.push(fruit_said(said, *day));
                        said += 1;
                    }
                    block_on(p.ingest(fruit_call(n, messages))).unwrap();
                    check(p, &forgotten)?;
                    // The active value (0), or another version, forgotten.
                    if let Some(which) = forget {
                        let every = ListRequest { limit: Some(1000), status: Some(ListStatus::All), ..ListRequest::default() };
                        let mut versions: Vec<Memory> = p.list(every).unwrap().memories.into_iter().filter(|m| m.content.contains("favorite fruit")).collect();
                        versions.sort_by_key(|m| m.status != Status::Active);
                        if let Some(m) = versions.get(which % versions.len().max(1)) {
                            p.forget(&m.id).unwrap();
                            forgotten.push(m.id.clone());
                        }
                        check(p, &forgotten)?;
                    }
                }
                for n in &deleted {
                    p.delete_session(&format!("s{n}")).unwrap();
                    check(p, &forgotten)?;
                }
                Ok::<_, TestCaseError>(())
            })?;
        }
    }
}

/// Values of one key said in any order of time, each call its own
/// session, then sessions deleted: what remains is as if the deleted
/// sessions had never been said. The same calls but those, ingested into
/// another profile, leave each remaining value with the same status and
/// validity (a backdated value deleted leaves no gap where it held).
mod deleting_sessions_is_as_if_never_said {
    use super::*;
    use proptest::prelude::*;

    /// Each value's words, status and validity, by its words.
    fn versions(p: &Profile<'_>) -> std::collections::BTreeMap<String, (Status, Option<String>, Option<String>)> {
        let every = ListRequest { limit: Some(1000), status: Some(ListStatus::All), ..ListRequest::default() };
        p.list(every).unwrap().memories.into_iter().map(|m| (m.content, (m.status, m.valid_from, m.valid_to))).collect()
    }

    fn ingest(p: &Profile<'_>, n: usize, values: &[(usize, u8)]) {
        block_on(p.ingest(fruit_call(n, values.iter().map(|(fruit, day)| fruit_said(*fruit, *day)).collect()))).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]
        #[test]
        fn test_deleting_sessions_leaves_the_versions_as_if_never_said(
            calls in proptest::collection::vec(proptest::collection::vec(1u8..=20, 1..3), 1..6),
            deleted in proptest::collection::btree_set(0usize..6, 0..4),
        ) {
            // Each value its own fruit, in the order said.
            let mut said = 0;
            let calls: Vec<Vec<(usize, u8)>> = calls.iter().map(|days| days.iter().map(|d| { said += 1; (said - 1, *d) }).collect()).collect();
            let (all, some) = (database(), database());
            let after_deletion = with_profile(&all, APRIL_15, |p| {
                for (n, values) in calls.iter().enumerate() {
                    ingest(p, n, values);
                }
                for n in &deleted {
                    p.delete_session(&format!("s{n}")).unwrap();
                }
                versions(p)
            });
            let never_said = with_profile(&some, APRIL_15, |p| {
                for (n, values) in calls.iter().enumerate().filter(|(n, _)| !deleted.contains(n)) {
                    ingest(p, n, values);
                }
                versions(p)
            });
            prop_assert_eq!(after_deletion, never_said);
        }
    }
}
