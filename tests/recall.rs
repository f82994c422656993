//! Native tests of the recall pipeline: the SPEC.md example, the explain
//! trace, temporal arithmetic, what stays out of recall, the empty case,
//! and the conversational corrections of the full-text channels.

mod support;

use agent_memory::core::api::{IngestRequest, RecallRequest, RememberRequest};
use agent_memory::core::model::MessageInput;
use agent_memory::core::ops::Profile;
use agent_memory::core::recall::fuse::Channel;
use agent_memory::core::recall::RecallResponse;
use serde_json::{json, Value};
use support::{block_on, database, msg, spec_conversation, with_profile, APRIL_15, DAY};

const RATE_LIMIT: &str = "API rate limit was increased to 10,000 req/s per zone after the April 10 incident.";

fn remember(p: &Profile<'_>, body: Value) -> agent_memory::core::model::Memory {
    block_on(p.remember(serde_json::from_value::<RememberRequest>(body).unwrap())).unwrap()
}

fn recall(p: &Profile<'_>, body: Value) -> RecallResponse {
    block_on(p.recall(serde_json::from_value::<RecallRequest>(body).unwrap())).unwrap()
}

fn summaries(r: &RecallResponse) -> Vec<String> {
    r.candidates.iter().map(|c| c.summary.clone()).collect()
}

#[test]
fn test_package_manager_question_names_pnpm_with_the_pnpm_memory_first() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(spec_conversation())).unwrap();
        remember(p, json!({ "content": RATE_LIMIT }));
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "What package manager does the user prefer?" }));
        assert!(r.result.contains("pnpm"), "result: {}", r.result);
        assert_eq!(r.answer, r.result);
        assert!(r.candidates[0].summary.contains("pnpm"), "first: {:?}", summaries(&r));
        assert_eq!(r.count, r.candidates.len());
    });
}

#[test]
fn test_explain_names_all_five_channels_and_scores_sum_their_traces() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(spec_conversation())).unwrap();
        remember(p, json!({ "content": RATE_LIMIT }));
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "What package manager does the user prefer?", "explain": true }));
        let explain = r.explain.as_ref().expect("explain requested");
        let mut named: Vec<Channel> = explain.channels.iter().map(|c| c.channel).collect();
        named.sort();
        let mut all = Channel::ALL.to_vec();
        all.sort();
        assert_eq!(named, all);
        assert!(!r.candidates.is_empty());
        for c in &r.candidates {
            let trace = c.trace.as_ref().expect("a trace per candidate");
            assert!(!trace.is_empty());
            let sum: f64 = trace.iter().map(|t| t.contribution).sum();
            assert!((c.score - sum).abs() < 1e-12, "{} != {sum}", c.score);
            for t in trace {
                assert!((t.contribution - t.weight / (explain.k + t.rank as f64)).abs() < 1e-12);
            }
        }
        // Without explain, no trace and no tree.
        let plain = recall(p, json!({ "query": "What package manager does the user prefer?" }));
        assert!(plain.explain.is_none() && plain.candidates.iter().all(|c| c.trace.is_none() && c.explanation.is_none()));
    });
}

#[test]
fn test_explanation_trees_sum_to_the_fused_score_and_name_every_boost() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(chat(
            &[
                ("Ana", "How is the pottery class going these days?"),
                ("Ben", "It is going great, yesterday I finally made a tall blue vase in pottery class!"),
                ("Ana", "I spent the weekend hiking near the lake with my sister."),
                ("Ben", "The weather was perfect for walking by the water this weekend."),
            ],
            "2026-04-15",
        )))
        .unwrap();
        remember(p, json!({ "content": "The user's pottery teacher is called Mira." }));
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "When did Ben make the vase in pottery class?", "explain": true, "limit": 10 }));
        assert!(!r.candidates.is_empty());
        let mut said = String::new();
        for c in &r.candidates {
            let tree = c.explanation.as_ref().expect("a tree per candidate");
            assert_eq!(tree[0].depth, 0);
            assert_eq!(tree[0].value, c.score, "the root is the fused score");
            let channels: Vec<_> = tree.iter().filter(|n| n.depth == 1).collect();
            assert_eq!(channels.len(), c.trace.as_ref().unwrap().len(), "one node per channel that ranked it");
            let sum: f64 = channels.iter().map(|n| n.value).sum();
            assert!((sum - c.score).abs() < 1e-12, "{sum} != {}", c.score);
            assert!(tree.windows(2).all(|w| w[1].depth <= w[0].depth + 1), "pre-order: a child follows its parent");
            for n in tree {
                said.push_str(&n.description);
                said.push('\n');
            }
        }
        // The formula all the way down, each constant named.
        for name in [
            "WEIGHT_FTS",
            "WEIGHT_MESSAGES",
            "WEIGHT_VECTOR",
            "K 10",
            "own bm25",
            "NEIGHBOUR_SHARE",
            "NEIGHBOUR_WINDOW",
            "SESSION_SHARE",
            "OWN_SHARE",
            "SPEAKER_BOOST",
            "TIME_BOOST",
            "EXPANSION_WEIGHT",
            "MEMORY_WEIGHTS",
            "MESSAGE_WEIGHTS",
            "cosine",
            "FUNCTION_WEIGHT",
            "MESSAGE_FUNCTION_WEIGHT",
        ] {
            assert!(said.contains(name), "{name} is not in the explanations:\n{said}");
        }
        // The full-text channel's node carries the score that ranked the memory there.
        let top = &r.candidates[0];
        let tree = top.explanation.as_ref().unwrap();
        let fts = tree.iter().position(|n| n.depth == 1 && n.description.starts_with("fts")).expect("the fts channel ranked the top hit");
        let why = &tree[fts + 1];
        assert_eq!(why.depth, 2);
        let parts: f64 = tree[fts + 2..].iter().take_while(|n| n.depth > 2).filter(|n| n.depth == 3).map(|n| n.value).sum();
        assert!((parts - why.value).abs() < 1e-9, "the channel score is its context plus its own share: {parts} vs {}", why.value);
    });
}

#[test]
fn test_days_ago_question_is_computed_from_the_reference_date() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        remember(p, json!({ "content": RATE_LIMIT }));
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "How many days ago was the April 10 incident?", "referenceDate": "2026-04-20" }));
        assert!(r.result.contains("10 days"), "result: {}", r.result);
        assert!(r.candidates[0].summary.contains("April 10 incident"));
        let explain =
            recall(p, json!({ "query": "How many days ago was the April 10 incident?", "referenceDate": "2026-04-20", "explain": true })).explain.unwrap();
        assert!(explain.temporal_facts.iter().any(|f| f.contains("10 days before")), "{:?}", explain.temporal_facts);
    });
}

#[test]
fn test_forgotten_superseded_and_expired_memories_stay_out_unless_asked() {
    let sql = database();
    let (forgotten, expiring) = with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(spec_conversation())).unwrap();
        let f = remember(p, json!({ "content": "The staging database lives in the eu-west region." }));
        p.forget(&f.id).unwrap();
        let e = remember(p, json!({ "content": "The deploy freeze for the staging database lasts until Friday.", "ttlSeconds": 3600 }));
        block_on(p.drain()).unwrap();
        (f.id, e.id)
    });
    with_profile(&sql, APRIL_15 + DAY, |p| {
        block_on(p.ingest(IngestRequest {
            messages: vec![msg("user", "Actually, switch to npm for this project.")],
            session_id: Some("later".into()),
            metadata: Default::default(),
        }))
        .unwrap();
        block_on(p.drain()).unwrap();
    });
    with_profile(&sql, APRIL_15 + 2 * DAY, |p| {
        let ids = |r: &RecallResponse| r.candidates.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
        let staging = recall(p, json!({ "query": "Where does the staging database live?", "limit": 20 }));
        assert!(!ids(&staging).contains(&forgotten), "forgotten memory recalled");
        assert!(!ids(&staging).contains(&expiring), "expired memory recalled");
        let pm = recall(p, json!({ "query": "What package manager does the user prefer?", "limit": 20 }));
        assert!(pm.candidates[0].summary.contains("npm") && !pm.candidates[0].summary.contains("pnpm"), "{:?}", summaries(&pm));
        assert!(summaries(&pm).iter().all(|s| !s.contains("pnpm")), "superseded memory recalled: {:?}", summaries(&pm));

        let staging_all = recall(p, json!({ "query": "Where does the staging database live?", "limit": 20, "includeInactive": true }));
        assert!(ids(&staging_all).contains(&forgotten));
        assert!(ids(&staging_all).contains(&expiring));
        let pm_all = recall(p, json!({ "query": "What package manager does the user prefer?", "limit": 20, "includeInactive": true }));
        assert!(summaries(&pm_all).iter().any(|s| s.contains("pnpm")));
    });
}

#[test]
fn test_empty_profile_recall_gives_an_empty_result_not_an_error() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let r = recall(p, json!({ "query": "What package manager does the user prefer?", "explain": true }));
        assert_eq!(r.result, "");
        assert_eq!(r.answer, "");
        assert_eq!(r.count, 0);
        assert!(r.candidates.is_empty());
    });
}

/// A two-person conversation, one message per turn, dated.
fn chat(turns: &[(&str, &str)], date: &str) -> IngestRequest {
    session_of(turns.iter().map(|(role, content)| (role.to_string(), content.to_string())), &format!("s-{date}"), date)
}

/// One session of `turns`, all said on `date`.
fn session_of(turns: impl Iterator<Item = (String, String)>, session: &str, date: &str) -> IngestRequest {
    IngestRequest {
        messages: turns.map(|(role, content)| MessageInput { role, content, timestamp: Some(date.into()) }).collect(),
        session_id: Some(session.into()),
        metadata: Default::default(),
    }
}

#[test]
fn test_an_answer_turn_is_found_by_the_words_of_the_question_it_answers() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(chat(
            &[
                ("Ana", "How is the pottery class going these days?"),
                ("Ben", "It is going great, I finally made a tall blue vase with a narrow neck!"),
                ("Ana", "I spent the weekend hiking near the lake with my sister."),
                ("Ben", "The weather was perfect for walking by the water this weekend."),
            ],
            "2026-04-15",
        )))
        .unwrap();
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "What did Ben make in pottery class?", "limit": 3 }));
        assert!(r.candidates[0].summary.contains("vase"), "{:?}", summaries(&r));
    });
}

#[test]
fn test_the_speaker_a_question_names_comes_first() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(chat(
            &[
                ("Ana", "My favorite band is playing downtown tonight, the concert starts at eight."),
                ("Ben", "My favorite band broke up years ago, sadly, after their last concert tour."),
            ],
            "2026-04-15",
        )))
        .unwrap();
        block_on(p.drain()).unwrap();
        for (who, expected) in [("Ana", "Ana:"), ("Ben", "Ben:")] {
            let r = recall(p, json!({ "query": format!("What did {who} say about her favorite band's concert?"), "limit": 2 }));
            assert!(r.candidates[0].summary.starts_with(expected), "{who}: {:?}", summaries(&r));
        }
    });
}

#[test]
fn test_a_name_finds_its_speakers_conversation_among_many() {
    // Four conversations about one picnic. The answer is said to Ben, not
    // by him: no speaker boost reaches it. Ben said one message of eight,
    // so his name is searched as a word and picks his conversation out.
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for (date, turns) in [
            ("2026-04-01", [("Ana", "Ben, your sourdough at the picnic was the best bread there."), ("Ben", "Thanks! It took two days to rise.")]),
            ("2026-04-02", [("Cleo", "The bread at the picnic went fast, everyone loved the bread."), ("Dan", "I only got the last slice.")]),
            ("2026-04-03", [("Eva", "Who baked the bread for the picnic? The bread was still warm."), ("Finn", "No idea, I brought the lemonade.")]),
            ("2026-04-04", [("Gus", "We ran out of bread at the picnic, more bread next time."), ("Hal", "I will bake two loaves.")]),
        ] {
            block_on(p.ingest(chat(&turns, date))).unwrap();
        }
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "What bread did Ben bake for the picnic?", "limit": 3 }));
        let said = summaries(&r);
        assert!(said[0].starts_with("Ben:") || said[0].starts_with("Ana:"), "{said:?}");
        assert!(said.iter().any(|s| s.contains("sourdough")), "{said:?}");
    });
}

#[test]
fn test_a_name_is_searched_by_its_speakers_share_alike_warm_and_cold() {
    use agent_memory::core::recall::directory::TurnDirectory;
    use agent_memory::core::recall::places::with_source;
    use agent_memory::core::recall::text_query;
    // Ben said two of eight messages (a quarter), Ana four (half): Ben's
    // name is searched, Ana's is left out, with the directory resident or
    // on SQLite alone.
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let said =
            [("Ana", "Hi"), ("Ben", "Hello"), ("Ana", "The lake?"), ("Cleo", "Cold"), ("Ana", "Swim?"), ("Ben", "No"), ("Ana", "Skate?"), ("Dan", "Yes")];
        block_on(p.ingest(chat(&said, "2026-04-01"))).unwrap();
        let day = chrono::NaiveDate::from_ymd_opt(2026, 4, 15).unwrap();
        let resident = TurnDirectory::new();
        for turns in [Some(&resident), None] {
            let q = with_source(&sql, turns, |src| text_query(&sql, src, "What did Ana tell Ben about the lake?", &[], day)).unwrap();
            assert!(q.speakers.contains("ana") && !q.speakers.contains("ben"), "resident: {}: {:?}", turns.is_some(), q.speakers);
        }
    });
}

#[test]
fn test_a_turn_the_speaker_correction_lifts_is_found_in_a_large_profile() {
    // 2,008 messages. Ben says "lantern" in 250 short turns, each better
    // by plain bm25 than Ana's one longer turn about it; Ana says most of
    // the profile, so her name is not searched and the question naming
    // her reaches her turn through the speaker correction alone. That
    // correction re-ranks the pool plain bm25 drew: the best hundred (a
    // small profile's) leave her turn out, a pool grown with the profile
    // holds it.
    use agent_memory::core::recall::scope::{FTS_POOL, POOL_PROFILE_MESSAGES};
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let filler = |s: usize, i: usize| ("Ana".to_string(), format!("We chatted about errand number {s} {i} before lunch."));
        for s in 0..250 {
            let turns = (0..8).map(|i| if i == 4 { ("Ben".to_string(), format!("The lantern again, time {s}.")) } else { filler(s, i) });
            block_on(p.ingest(session_of(turns, &format!("s{s}"), "2026-04-01"))).unwrap();
        }
        let said = "After the long trip I put the old lantern away in the garden shed, on the top shelf by the door.";
        let turns = (0..8).map(|i| if i == 3 { ("Ana".to_string(), said.to_string()) } else { filler(999, i) });
        block_on(p.ingest(session_of(turns, "evidence", "2026-04-01"))).unwrap();
        block_on(p.drain()).unwrap();
        assert!(2008 / (POOL_PROFILE_MESSAGES / FTS_POOL as u64) > 251, "the pool must grow past Ben's turns");
        let r = recall(p, json!({ "query": "What did Ana say about the lantern?", "limit": 5 }));
        let said = summaries(&r);
        assert!(said.first().is_some_and(|s| s.contains("garden shed")), "{said:?}");
    });
}

#[test]
fn test_a_question_naming_a_date_prefers_what_was_said_then() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for (date, said) in [
            ("2026-03-02", "Friends came over and I cooked dinner: lasagna with spinach."),
            ("2026-04-10", "My sister visited, so I cooked dinner for her: curry with lentils."),
        ] {
            block_on(p.ingest(chat(&[("Ana", said)], date))).unwrap();
        }
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "What dinner did Ana cook on March 2, 2026?", "limit": 2 }));
        assert!(r.candidates[0].summary.contains("lasagna"), "{:?}", summaries(&r));
        let r = recall(p, json!({ "query": "What dinner did Ana cook on April 10, 2026?", "limit": 2 }));
        assert!(r.candidates[0].summary.contains("curry"), "{:?}", summaries(&r));
    });
}

#[test]
fn test_dense_hits_in_long_turns_are_read_in_bounded_statements() {
    // Every seventh turn of a long session mentions the hike, so the
    // windows around the hits join into one run of hundreds of turns, each
    // of 1,000 three-byte characters: read whole for a question asking
    // when, that run alone would exceed the 2 MB cap on a value.
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let filler = "我们在山里走了很久".repeat(120);
        let messages: Vec<agent_memory::core::model::Message> = (0..800)
            .map(|i| agent_memory::core::model::Message {
                id: format!("m{i:04}"),
                session_id: "trail".into(),
                role: "user".into(),
                content: if i % 7 == 0 { format!("{filler} hiking {i}") } else { format!("{filler} {i}") },
                timestamp: Some("2026-04-10T10:00:00Z".into()),
                position: i,
                created_at: "2026-04-10T10:00:00Z".into(),
                metadata: Default::default(),
            })
            .collect();
        p.store().put_messages(&messages).unwrap();
        // A memory for every hiking turn, citing it: the channels rank them
        // by those turns' words, so a recall that skipped the long turns
        // would find none of them.
        let hikes: Vec<agent_memory::core::model::Memory> = messages
            .iter()
            .filter(|m| m.content.contains("hiking"))
            .map(|m| agent_memory::core::model::Memory {
                id: agent_memory::core::ids::memory_id(APRIL_15, &m.id, 0),
                kind: agent_memory::core::model::MemoryType::Event,
                key: None,
                summary: format!("A hike ({})", m.id),
                content: format!("We walked in the mountains ({}).", m.id),
                session_id: "trail".into(),
                source_message_ids: vec![m.id.clone()],
                search_queries: vec![],
                status: agent_memory::core::model::Status::Active,
                supersedes: None,
                superseded_by: None,
                event_date: Some("2026-04-10".into()),
                created_at: "2026-04-10T10:00:00.000Z".into(),
                updated_at: "2026-04-10T10:00:00.000Z".into(),
                expires_at: None,
                metadata: Default::default(),
                valid_from: Some("2026-04-10T10:00:00.000Z".into()),
                valid_to: None,
            })
            .collect();
        let store = p.store();
        store.transaction(|| store.insert_memories(&hikes.iter().map(|m| (m, m.id.as_str())).collect::<Vec<_>>())).unwrap();
        let r = recall(p, json!({ "query": "When did we go hiking?", "explain": true }));
        assert!(r.messages.is_empty(), "degraded: {:?}", r.messages);
        let channels = &r.explain.as_ref().unwrap().channels;
        assert!(channels.iter().all(|c| c.error.is_none()), "{channels:?}");
        let hike_ids: std::collections::HashSet<&str> = hikes.iter().map(|m| m.id.as_str()).collect();
        for c in channels.iter().filter(|c| matches!(c.channel, Channel::Fts | Channel::Messages)) {
            assert!(!c.ids.is_empty() && c.ids.iter().all(|id| hike_ids.contains(id.as_str())), "{c:?}");
        }
        assert!(!r.candidates.is_empty());
    });
}

#[test]
fn test_long_messages_keep_every_channel_working_for_a_question_asking_when() {
    // Hundreds of long turns (logs, code): the text recall reads for a
    // question asking when must stay under the platform's 2 MB cap on a
    // value (the native SQL refuses more, as the Durable Object does).
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit ".repeat(450);
        for s in 0..4 {
            let messages: Vec<MessageInput> =
                (0..50).map(|i| msg("user", &format!("Yesterday I deployed the billing service {s}-{i} to production. {filler}"))).collect();
            block_on(p.ingest(IngestRequest { messages, session_id: Some(format!("logs-{s}")), metadata: Default::default() })).unwrap();
        }
        let r = recall(p, json!({ "query": "When did I deploy the billing service to production?", "explain": true }));
        assert!(r.messages.is_empty(), "degraded: {:?}", r.messages);
        assert!(!r.candidates.is_empty());
        let channels = &r.explain.as_ref().unwrap().channels;
        for c in channels.iter().filter(|c| matches!(c.channel, Channel::Fts | Channel::Messages)) {
            assert!(c.error.is_none() && !c.ids.is_empty(), "{:?}", c);
        }
    });
}

#[test]
fn test_key_channel_ranks_the_live_holders_of_each_key_newest_first_in_key_order() {
    use agent_memory::core::recall::channels;
    let sql = database();
    let keyed = |content: &str, key: &str| json!({ "content": content, "key": key });
    let ids: Vec<String> = [
        keyed("The team uses npm for packages.", "tooling.package_manager"),
        keyed("Deploys go out on Tuesdays.", "process.deploy_day"),
        keyed("The team uses pnpm for packages.", "tooling.package_manager"),
        keyed("The staging database is Postgres 16.", "infra.staging_db"),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, body)| with_profile(&sql, APRIL_15 + i as i64 * 1000, |p| remember(p, body).id))
    .collect();
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let keys = |k: &[&str], inactive: bool| -> Vec<String> {
            let keys: Vec<String> = k.iter().map(|s| s.to_string()).collect();
            channels::key(
                p.sql,
                &keys,
                &agent_memory::core::recall::RecallScope { include_inactive: inactive, ..agent_memory::core::recall::RecallScope::live_at(APRIL_15 + DAY) },
            )
            .unwrap()
            .ids
        };
        // The superseded npm memory is not live; key order is kept.
        assert_eq!(keys(&["process.deploy_day", "tooling.package_manager"], false), vec![ids[1].clone(), ids[2].clone()]);
        assert_eq!(keys(&["tooling.package_manager"], true), vec![ids[2].clone(), ids[0].clone()]);
        assert!(keys(&["tooling.package"], false).is_empty(), "a key is matched whole");
        assert!(keys(&[], false).is_empty());
    });
}

#[test]
fn test_a_key_splits_its_weight_among_the_memories_holding_it() {
    use agent_memory::core::recall::{channels, fuse, RecallScope};
    let sql = database();
    let keyed = |content: &str, key: &str| json!({ "content": content, "key": key });
    for (i, body) in [
        keyed("The team uses npm for packages.", "tooling.package_manager"),
        keyed("Deploys go out on Tuesdays.", "process.deploy_day"),
        keyed("The team uses pnpm for packages.", "tooling.package_manager"),
        keyed("The team uses yarn for packages.", "tooling.package_manager"),
    ]
    .into_iter()
    .enumerate()
    {
        with_profile(&sql, APRIL_15 + i as i64 * 1000, |p| remember(p, body).id);
    }
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let keys: Vec<String> = ["process.deploy_day", "tooling.package_manager"].iter().map(|s| s.to_string()).collect();
        let share = |inactive: bool| -> Vec<f64> {
            let scope = RecallScope { include_inactive: inactive, ..RecallScope::live_at(APRIL_15 + DAY) };
            let ranking = channels::key(p.sql, &keys, &scope).unwrap();
            assert_eq!(ranking.shares.len(), ranking.ids.len());
            ranking.shares
        };
        // Live, each key has one holder: each carries the whole weight.
        assert_eq!(share(false), vec![1.0, 1.0]);
        // With the superseded package managers, three memories hold the
        // key and split its weight; the deploy day keeps all of its own.
        assert_eq!(share(true), vec![1.0, fuse::key_share(3), fuse::key_share(3), fuse::key_share(3)]);
        assert_eq!(fuse::key_share(3), 1.0 / 3.0);
    });
}

#[test]
fn test_the_key_channel_counts_every_holder_but_ranks_at_most_its_depth() {
    use agent_memory::core::recall::{channels, fuse, scope::CHANNEL_DEPTH, RecallScope};
    let sql = database();
    let n = CHANNEL_DEPTH + 10;
    for i in 0..n {
        let body = json!({ "content": format!("The build cache lives on volume {i}."), "key": "infra.build_cache" });
        with_profile(&sql, APRIL_15 + i as i64 * 1000, |p| remember(p, body).id);
    }
    with_profile(&sql, APRIL_15 + DAY, |p| {
        let scope = RecallScope { include_inactive: true, ..RecallScope::live_at(APRIL_15 + DAY) };
        let ranking = channels::key(p.sql, &["infra.build_cache".to_string()], &scope).unwrap();
        assert_eq!(ranking.ids.len(), scope.channel_depth());
        assert!(ranking.shares.iter().all(|s| *s == fuse::key_share(n)), "every holder counted: {:?}", &ranking.shares[..3]);
        let live = channels::key(p.sql, &["infra.build_cache".to_string()], &RecallScope::live_at(APRIL_15 + DAY)).unwrap();
        assert_eq!((live.ids.len(), live.shares.clone()), (1, vec![1.0]), "the one live holder");
        assert_eq!(ranking.ids.first(), live.ids.first(), "newest first");
    });
}

/// Every description in the subtree of each candidate's channel node
/// whose description starts with `channel`.
fn said_under(r: &RecallResponse, channel: &str) -> String {
    let mut said = String::new();
    for c in &r.candidates {
        let tree = c.explanation.as_ref().expect("a tree per candidate");
        let mut inside = false;
        for n in tree {
            if n.depth == 1 {
                inside = n.description.starts_with(channel);
            }
            if inside {
                said.push_str(&n.description);
                said.push('\n');
            }
        }
    }
    said
}

#[test]
fn test_a_first_person_question_boosts_the_users_turns_in_context_weakly_and_not_among_raw_messages() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(chat(
            &[
                ("user", "My streaming bill doubled this month and I want a refund for the outage."),
                ("assistant", "Done: your refund for the outage is on its way, and the refund code is RF-2231."),
            ],
            "2026-04-15",
        )))
        .unwrap();
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "What refund code did I get for the outage?", "explain": true, "limit": 10 }));
        let fts = said_under(&r, "fts");
        let messages = said_under(&r, "messages");
        assert!(fts.contains("FIRST_PERSON_BOOST"), "the full-text channel reads \"I\" as the user:\n{fts}");
        assert!(!fts.contains("× SPEAKER_BOOST"), "by a weaker boost than a name's:\n{fts}");
        assert!(messages.contains("MESSAGE_FUNCTION_WEIGHT"), "the messages channel ranked something:\n{messages}");
        assert!(
            !messages.contains("SPEAKER_BOOST") && !messages.contains("FIRST_PERSON_BOOST"),
            "the raw-messages channel takes a speaker named by name only:\n{messages}"
        );
        // Named by name, the user's turns get the full boost.
        let r = recall(p, json!({ "query": "What refund code did the user get for the outage?", "explain": true, "limit": 10 }));
        let fts = said_under(&r, "fts");
        assert!(fts.contains("× SPEAKER_BOOST") && !fts.contains("FIRST_PERSON_BOOST"), "\"the user\" names the user:\n{fts}");
    });
}

#[test]
fn test_a_stop_word_the_question_shares_ranks_its_memory_first_in_full_text() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        // Other facts, so that a word in one memory of the profile has an
        // idf to speak of.
        for (i, fact) in ["Ana rides a red bike", "Bruno plays the cello", "Chen bakes sourdough bread", "Dara runs the marathon", "Emil collects old maps"]
            .iter()
            .enumerate()
        {
            for place in ["at work", "on weekends", "every morning", "with friends"] {
                remember(p, json!({ "content": format!("{fact} {place}, said note {i}.") }));
            }
        }
        // The same content words, in a longer memory: without the stop
        // word the shorter one would rank first.
        let now = remember(p, json!({ "content": "Right now the whole flat holds eighteen houseplants." }));
        let then = remember(p, json!({ "content": "Last spring the flat held seven houseplants." }));
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "How many houseplants are in the flat now?", "explain": true }));
        let explain = r.explain.as_ref().expect("explain requested");
        let fts = explain.channels.iter().find(|c| c.channel == Channel::Fts).expect("the full-text channel ran");
        assert_eq!(fts.ids, vec![now.id, then.id]);
    });
}

#[test]
fn test_memories_of_one_message_share_a_rank_in_every_memory_channel() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(chat(
            &[
                ("user", "How should I care for the new fiddle leaf fig?"),
                (
                    "assistant",
                    "Water the fiddle leaf fig once a week. Keep the fig in bright indirect light. Wipe the fig's leaves with a damp cloth monthly. \
                     Feed the fig with liquid fertilizer every spring. Turn the fig pot a quarter turn each week.",
                ),
                ("user", "My other fig, the weeping fig, drops leaves in winter."),
                ("assistant", "A weeping fig drops leaves when moved; keep it away from drafts."),
            ],
            "2026-04-15",
        )))
        .unwrap();
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "How do I look after my fig?", "explain": true, "limit": 20 }));
        let mut grouped = 0;
        for channel in [Channel::Fts, Channel::Vector] {
            let mut rank_of: std::collections::HashMap<Vec<String>, usize> = Default::default();
            for c in &r.candidates {
                let Some(t) = c.trace.as_ref().unwrap().iter().find(|t| t.channel == channel) else { continue };
                let mut sources = c.source_message_ids.clone();
                sources.sort();
                match rank_of.get(&sources) {
                    Some(&rank) => {
                        assert_eq!(rank, t.rank, "{channel:?}: the memories of {sources:?} share one rank: {:?}", summaries(&r));
                        grouped += 1;
                    }
                    None => {
                        rank_of.insert(sources, t.rank);
                    }
                }
            }
            let mut ranks: Vec<usize> = rank_of.values().copied().collect();
            ranks.sort_unstable();
            assert!(ranks.windows(2).all(|w| w[0] < w[1]), "{channel:?}: one rank per message: {ranks:?}");
        }
        assert!(grouped >= 2, "the long turn's statements were ranked together: {:?}", summaries(&r));
    });
}

/// `sessionId` on recall narrows it to that session's memories, with or
/// without a filter beside it (both must hold); without it, every session
/// answers.
#[test]
fn test_recall_with_a_session_id_returns_only_that_sessions_memories() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        remember(p, json!({"content": "The staging database lives in the Frankfurt region.", "sessionId": "ops"}));
        remember(p, json!({"content": "The production database lives in the Frankfurt region too.", "sessionId": "ops", "metadata": {"agentId": "dba"}}));
        remember(p, json!({"content": "The analytics database lives in the Frankfurt region.", "sessionId": "data", "metadata": {"agentId": "dba"}}));
        block_on(p.drain()).unwrap();
        let sessions = |r: &RecallResponse| {
            let mut s: Vec<String> = r.candidates.iter().map(|c| c.session_id.clone()).collect();
            s.sort();
            s.dedup();
            s
        };
        let q = "Which database lives in the Frankfurt region?";
        assert_eq!(sessions(&recall(p, json!({"query": q}))), ["data", "ops"]);
        let ops = recall(p, json!({"query": q, "sessionId": "ops"}));
        assert_eq!((ops.candidates.len(), sessions(&ops)), (2, vec!["ops".to_string()]));
        let both = recall(p, json!({"query": q, "sessionId": "ops", "filter": {"agentId": "dba"}}));
        assert_eq!(both.candidates.len(), 1, "{:?}", summaries(&both));
        assert!(both.candidates[0].summary.contains("production"), "{:?}", summaries(&both));
        assert!(recall(p, json!({"query": q, "sessionId": "nobody"})).candidates.is_empty());
    });
}

/// `includeInactive` and `asOf` both choose which memories count: the two
/// together are refused (400), not one silently ignored.
#[test]
fn test_include_inactive_with_as_of_is_refused() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let req: RecallRequest = serde_json::from_value(json!({"query": "x", "includeInactive": true, "asOf": "2026-04-01"})).unwrap();
        let e = block_on(p.recall(req)).unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(e.message().contains("includeInactive cannot be combined with asOf"), "{e}");
    });
}

/// The published interface: "If no memories match the query, recall()
/// returns an empty answer rather than hallucinating a response." The
/// vector index always has nearest neighbours; with the local embedder they
/// never make a match alone.
#[test]
fn test_a_question_nothing_matches_gets_an_empty_answer_though_the_vector_index_has_neighbours() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        remember(p, json!({ "content": "The user prefers concise answers.", "sessionId": "chat-2026-04-21" }));
        block_on(p.ingest(chat(&[("user", "I prefer dark mode and use VS Code.")], "2026-04-14"))).unwrap();
        block_on(p.dispatch("drain", json!({}))).unwrap();
        for query in ["xylophone zeppelin quasar", "Who won the 1998 World Cup?", "How tall is Mount Everest?"] {
            let r = recall(p, json!({ "query": query, "explain": true }));
            let vector = r.explain.as_ref().unwrap().channels.iter().find(|c| c.channel == Channel::Vector).unwrap();
            assert!(!vector.ids.is_empty(), "{query}: the index has neighbours");
            assert_eq!((r.answer.as_str(), r.count), ("", 0), "{query}: {:?}", summaries(&r));
        }
        let r = recall(p, json!({ "query": "Which editor theme does the user prefer?" }));
        assert!(r.count > 0 && r.answer.contains("dark mode"), "a question that matches is answered: {}", r.answer);
    });
}

/// The same promise in a profile of remembered memories: each is the
/// user's ("The user lives in Berlin"), so a question about "the user"
/// shares that word with every one of them, and it is no match: the
/// speaker a question names is weighed, not searched.
#[test]
fn test_a_question_sharing_only_the_word_user_with_remembered_memories_gets_an_empty_answer() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for content in ["The user prefers concise answers.", "The user lives in Berlin."] {
            remember(p, json!({ "content": content }));
        }
        block_on(p.dispatch("drain", json!({}))).unwrap();
        for query in ["What does the user drive?", "Which football club does the user support?"] {
            let r = recall(p, json!({ "query": query }));
            assert_eq!((r.answer.as_str(), r.count), ("", 0), "{query}: {:?}", summaries(&r));
        }
        for (query, answer) in
            [("Where does the user live?", "Berlin"), ("What kind of answers does the user prefer?", "concise"), ("Where do I live?", "Berlin")]
        {
            let r = recall(p, json!({ "query": query }));
            assert!(r.count > 0 && r.answer.contains(answer), "{query} is answered: {}", r.answer);
        }
    });
}

/// The published pages: "If no memories match the query, `recall`
/// returns an empty answer." A question about no one that shares only
/// stop words with the stored turns ("the", "is") matches none of them;
/// one about the user still finds what the user said, though only its
/// stop words reach it ("Which company am I with at the moment?" after
/// "I work as an analyst at Ostara Foods.").
#[test]
fn test_a_question_sharing_only_stop_words_with_the_turns_gets_an_empty_answer_unless_it_asks_about_a_speaker() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        block_on(p.ingest(spec_conversation())).unwrap();
        block_on(p.ingest(chat(&[("user", "I work as an analyst at Ostara Foods."), ("assistant", "Noted, thanks.")], "2026-04-10T09:00:00Z"))).unwrap();
        block_on(p.dispatch("drain", json!({}))).unwrap();
        for query in ["What is the capital of France?", "Who won the 1998 World Cup?", "the zebra"] {
            let r = recall(p, json!({ "query": query }));
            assert_eq!((r.answer.as_str(), r.count), ("", 0), "{query}: {:?}", summaries(&r));
        }
        let r = recall(p, json!({ "query": "Which company am I with at the moment?" }));
        assert!(summaries(&r).iter().any(|s| s.contains("Ostara")), "a question about the user: {:?}", summaries(&r));
        let r = recall(p, json!({ "query": "Which package manager should the project use?" }));
        assert!(r.count > 0 && r.answer.contains("pnpm"), "a question sharing content words: {}", r.answer);
    });
}

/// Chinese and Japanese write a sentence without spaces: the tokenizer
/// reads a run of their letters as one word, and a question's word found
/// only that whole run. Indexed in pairs of letters, "上海" finds "我住在
/// 上海" (tests/text_index.rs holds the index in memory to SQLite's on
/// such texts).
#[test]
fn test_a_chinese_or_japanese_word_finds_the_sentence_that_holds_it() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for (session, content) in
            [("zh", "我住在上海，我是一名软件工程师。"), ("ja", "私は東京に住んでいます。"), ("en", "I prefer dark mode and use VS Code.")]
        {
            let req = IngestRequest { messages: vec![msg("user", content)], session_id: Some(session.into()), metadata: Default::default() };
            block_on(p.ingest(req)).unwrap();
        }
        block_on(p.dispatch("drain", json!({}))).unwrap();
        for (query, said) in [("上海", "上海"), ("我住在哪里？", "上海"), ("软件工程师", "工程师"), ("東京", "東京"), ("dark mode", "dark mode")]
        {
            let r = recall(p, json!({ "query": query }));
            let first = summaries(&r).into_iter().next().unwrap_or_default();
            assert!(first.contains(said), "{query}: {:?}", summaries(&r));
        }
        let r = recall(p, json!({ "query": "北京" }));
        assert_eq!(r.count, 0, "a city no one named: {:?}", summaries(&r));
    });
}

/// Korean is written with spaces, but a word carries its particles: "서울에"
/// ("in Seoul") is one token, and "서울" found nothing. Its letters are
/// indexed in pairs as Chinese and Japanese are, so a word finds the word
/// with its particles.
#[test]
fn test_a_korean_word_finds_the_word_with_its_particles() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for (session, content) in [("ko", "저는 서울에 살고 있습니다. 소프트웨어 엔지니어로 일해요."), ("en", "I prefer dark mode and use VS Code.")]
        {
            let req = IngestRequest { messages: vec![msg("user", content)], session_id: Some(session.into()), metadata: Default::default() };
            block_on(p.ingest(req)).unwrap();
        }
        block_on(p.dispatch("drain", json!({}))).unwrap();
        for (query, said) in [("서울", "서울에"), ("서울에서 살아요?", "서울에"), ("엔지니어", "엔지니어로"), ("dark mode", "dark mode")]
        {
            let r = recall(p, json!({ "query": query }));
            let first = summaries(&r).into_iter().next().unwrap_or_default();
            assert!(first.contains(said), "{query}: {:?}", summaries(&r));
        }
        let r = recall(p, json!({ "query": "부산" }));
        assert_eq!(r.count, 0, "a city no one named: {:?}", summaries(&r));
    });
}

/// The published types: `referenceDate` "is used as 'today' for resolving
/// relative time references ('how many days ago', 'last week')". The same
/// question names another week with another reference date, and what was
/// said in that week comes first.
#[test]
fn test_the_reference_date_decides_which_week_last_week_is() {
    let sql = database();
    with_profile(&sql, APRIL_15 + 20 * DAY, |p| {
        for (session, content, at) in [
            ("x1", "We migrated the billing database to PostgreSQL today.", "2026-04-08T10:00:00Z"),
            ("x2", "We launched the new onboarding flow today.", "2026-04-20T10:00:00Z"),
        ] {
            let said = MessageInput { role: "user".into(), content: content.into(), timestamp: Some(at.into()) };
            block_on(p.ingest(IngestRequest { messages: vec![said], session_id: Some(session.into()), metadata: Default::default() })).unwrap();
        }
        block_on(p.dispatch("drain", json!({}))).unwrap();
        for (reference, first) in [("2026-04-14", "PostgreSQL"), ("2026-04-27", "onboarding")] {
            let r = recall(p, json!({ "query": "What happened last week?", "referenceDate": reference }));
            assert!(r.candidates.first().is_some_and(|c| c.summary.contains(first)), "{reference}: {:?}", summaries(&r));
            assert!(r.answer.starts_with(&format!("User: We {}", if first == "PostgreSQL" { "migrated" } else { "launched" })), "{reference}: {}", r.answer);
        }
    });
}

/// A question that names only a period ("What did we do last week?") has
/// no words to match: what it matches is what is dated in that period,
/// and nothing else.
#[test]
fn test_a_question_naming_only_a_period_finds_what_is_dated_in_it() {
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for (content, at) in [("We deployed the billing service.", "2026-04-08T10:00:00Z"), ("Alice visited Paris.", "2026-03-02T10:00:00Z")] {
            let said = MessageInput { role: "user".into(), content: content.into(), timestamp: Some(at.into()) };
            block_on(p.ingest(IngestRequest { messages: vec![said], session_id: None, metadata: Default::default() })).unwrap();
        }
        block_on(p.dispatch("drain", json!({}))).unwrap();
        // Its stop words find both turns; the one dated last week comes first.
        let r = recall(p, json!({ "query": "What did we do last week?", "referenceDate": "2026-04-14" }));
        assert!(summaries(&r).first().is_some_and(|s| s.contains("billing")), "{:?}", summaries(&r));
        // No word at all: only what is dated in the period.
        let r = recall(p, json!({ "query": "Anything from last week?", "referenceDate": "2026-04-14" }));
        assert_eq!(summaries(&r).len(), 1, "{:?}", summaries(&r));
        assert!(summaries(&r)[0].contains("billing"), "{:?}", summaries(&r));
        let r = recall(p, json!({ "query": "Anything from last year?", "referenceDate": "2026-04-14" }));
        assert_eq!((r.count, r.answer.as_str()), (0, ""), "nothing is dated in 2025: {:?}", summaries(&r));
    });
}

/// The hashing embedder declared semantic: a stand-in for a sentence model
/// (no model runs in the native tests), so that recall fuses with the
/// semantic kind's weights and leans as it does with Workers AI.
struct SemanticStandIn;

impl agent_memory::core::ports::Embedder for SemanticStandIn {
    fn embed<'a>(&'a self, texts: &'a [String]) -> agent_memory::core::ports::LocalBoxFuture<'a, agent_memory::core::error::Result<Vec<Vec<f32>>>> {
        agent_memory::core::local::embed::HashEmbedder.embed(texts)
    }

    fn kind(&self) -> agent_memory::core::ports::EmbeddingKind {
        agent_memory::core::ports::EmbeddingKind::Semantic
    }
}

fn vector_weight(r: &RecallResponse) -> f64 {
    r.explain.as_ref().expect("explain requested").channels.iter().find(|c| c.channel == Channel::Vector).expect("a vector channel report").weight
}

/// Runs `f` with a profile over `sql` that embeds with [`SemanticStandIn`].
fn with_semantic_stand_in<T>(sql: &support::NativeSql, f: impl FnOnce(&Profile<'_>) -> T) -> T {
    let turns = agent_memory::core::recall::directory::TurnDirectory::new();
    support::with_profile_embedding(sql, APRIL_15, &turns, Default::default(), &SemanticStandIn, f)
}

#[test]
fn test_semantic_vectors_lean_in_when_the_query_words_match_nothing_stand_in_embedder() {
    use agent_memory::core::recall::fuse::{SEMANTIC_LEAN, SEMANTIC_WEIGHT_VECTOR, WEIGHT_VECTOR};
    let sql = database();
    let ask = |p: &Profile<'_>, query: &str| recall(p, json!({ "query": query, "explain": true }));
    with_semantic_stand_in(&sql, |semantic| {
        block_on(semantic.ingest(spec_conversation())).unwrap();
        block_on(semantic.drain()).unwrap();

        // No word of the question is in the profile: the whole lean.
        let paraphrase = ask(semantic, "Quartz xylophone zebras?");
        assert_eq!(vector_weight(&paraphrase), SEMANTIC_WEIGHT_VECTOR * (1.0 + SEMANTIC_LEAN));
        // Its words found: less of it, never below the measured weight.
        let worded = ask(semantic, "What package manager does the user prefer?");
        let w = vector_weight(&worded);
        // (Four messages: the best full-text score over ln 4 stays below LEXICAL_MATCH_FULL.)
        assert!(w > SEMANTIC_WEIGHT_VECTOR && w < SEMANTIC_WEIGHT_VECTOR * (1.0 + SEMANTIC_LEAN), "{w}");
        // The tree says why, under each vector contribution, down to the
        // profile's four messages.
        let nodes: Vec<_> = worded.candidates.iter().flat_map(|c| c.explanation.iter().flatten()).collect();
        assert!(nodes.iter().any(|n| n.description.starts_with("lean:") && n.description.contains("SEMANTIC_LEAN 6")), "{nodes:?}");
        assert!(nodes.iter().any(|n| n.description.contains("/ ln(4 documents)")), "{nodes:?}");
        for c in &worded.candidates {
            let sum: f64 = c.trace.as_ref().unwrap().iter().map(|t| t.contribution).sum();
            assert!((c.score - sum).abs() < 1e-12);
        }
    });

    // The local (lexical) embedder never leans.
    with_profile(&sql, APRIL_15, |p| {
        assert_eq!(vector_weight(&ask(p, "Quartz xylophone zebras?")), WEIGHT_VECTOR);
    });
}

#[test]
fn test_a_profile_of_remembered_statements_measures_the_match_by_its_memories_stand_in_embedder() {
    let sql = database();
    with_semantic_stand_in(&sql, |p| {
        for content in [
            "The user prefers pnpm over npm.",
            "Dark mode is the default theme.",
            "The API rate limit is 10,000 req/s.",
            "Deploys go out on Tuesdays.",
            "The staging database is Postgres 16.",
        ] {
            remember(p, json!({ "content": content }));
        }
        block_on(p.drain()).unwrap();
        let r = recall(p, json!({ "query": "Which package manager?", "explain": true }));
        let nodes: Vec<_> = r.candidates.iter().flat_map(|c| c.explanation.iter().flatten()).collect();
        assert!(nodes.iter().any(|n| n.description.contains("/ ln(5 documents)")), "no messages: N is the five memories: {nodes:?}");
    });
}

#[test]
fn test_a_recall_on_sqlite_alone_over_many_long_turns_reads_them_under_the_value_cap() {
    // 1,200 turns of ~1,000 characters of three bytes each, one in seven
    // naming the ferry: a question about a time reads the first characters
    // of every full-text hit and of the turns around it, over 2 MB as one
    // value (the most Cloudflare documents a string may hold, which the
    // native stand-in holds to). The read goes again in pages.
    use agent_memory::core::ports::Sql;
    let sql = database();
    let filler: String = (0..330).map(|i| if i % 10 == 9 { ' ' } else { char::from_u32(0x6771 + (i % 7)).unwrap_or('東') }).collect();
    for session in 0..60 {
        for position in 0..20 {
            let said = if position % 7 == 3 { "The ferry left the harbor at dawn" } else { "A note on the weather" };
            let content = format!("{said}, turn {position} of {session}. {filler}{filler}{filler}");
            sql.execute(
                "INSERT INTO messages (id, session_id, role, content, timestamp, position, created_at) VALUES (?, ?, 'user', ?, '2026-04-01T09:00:00Z', ?, 'then')",
                &[format!("m{session}x{position}").into(), format!("s{session}").into(), content.into(), (position as i64).into()],
            )
            .unwrap();
        }
    }
    with_profile(&sql, APRIL_15, |p| remember(p, json!({ "content": "The ferry leaves the harbor at dawn." })));
    let r = support::with_nothing_resident(&sql, APRIL_15, Default::default(), |p| recall(p, json!({ "query": "When did the ferry leave the harbor?" })));
    // A channel that fails is noted and left out (the full-text channels
    // fail together): none may be.
    assert_eq!(r.messages, Vec::<String>::new(), "no channel degraded");
    assert!(r.candidates.iter().any(|c| c.summary.contains("ferry")), "{:?}", summaries(&r));
}
