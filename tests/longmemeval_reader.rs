//! The harness's LongMemEval reader (tests/bench/longmemeval.rs): format
//! detection, parsing, evidence ids, the session-level recall_any /
//! recall_all arithmetic on hand-computed cases, the whole pipeline on
//! tests/fixtures/longmemeval-mini.json, and the OpenAI-compatible
//! embedder (tests/support/openai_embed.rs) against a stub server.

#[path = "bench/harness.rs"]
mod harness;
#[path = "bench/longmemeval.rs"]
mod longmemeval;
mod support;

use harness::Embedding;
use longmemeval::{
    detect, harness_sessions, holds, parse, parse_date, recall_all, recall_any, run, session_of, stated_answer, top_sessions, turn_id, Format, Options, Scores,
};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use support::openai_embed::{OpenAiEmbedder, MAX_BATCH};

fn mini() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/longmemeval-mini.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("mini fixture")).expect("mini fixture is JSON")
}

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

// ---- the reader -----------------------------------------------------------

#[test]
fn test_detects_the_format_from_content() {
    assert_eq!(detect(&mini()), Format::LongMemEval);
    let locomo = json!([{ "sample_id": "conv-1", "conversation": { "speaker_a": "A", "session_1": [] }, "qa": [] }]);
    assert_eq!(detect(&locomo), Format::LoCoMo);
    assert_eq!(detect(&json!([])), Format::LoCoMo);
    assert_eq!(detect(&json!([{ "question_id": "x" }])), Format::LongMemEval);
}

#[test]
fn test_parses_the_mini_fixture() {
    let qs = parse(&mini()).expect("parses");
    assert_eq!(qs.len(), 4);
    let q = &qs[0];
    assert_eq!(q.id, "mini_user_1");
    assert_eq!(q.question_type, "single-session-user");
    assert_eq!(q.question, "What breed is the dog I adopted?");
    assert_eq!(q.date, "2023/04/02 (Sun) 10:00");
    assert_eq!(q.millis, 1_680_429_600_000);
    assert_eq!(q.sessions.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["mini_s_cooking", "answer_mini_dog", "mini_s_travel"]);
    assert!(q.sessions.windows(2).all(|w| w[0].millis < w[1].millis), "dates read in order");
    let dog = &q.sessions[1];
    assert_eq!(dog.turns.len(), 4);
    assert_eq!(dog.turns[1].id, "answer_mini_dog:1");
    assert_eq!(dog.turns[1].role, "assistant");
    assert!(dog.turns[0].has_answer && !dog.turns[1].has_answer);
    assert_eq!(q.answer_session_ids, strings(&["answer_mini_dog"]));
    assert_eq!(q.answer, "A border collie");
    assert!(q.scored() && !q.is_abstention());
}

#[test]
fn test_evidence_is_the_has_answer_turns() {
    let qs = parse(&mini()).unwrap();
    assert_eq!(qs[0].evidence(), strings(&["answer_mini_dog:0"]));
    // A knowledge update: the old fact and the new one are both evidence.
    assert_eq!(qs[1].question_type, "knowledge-update");
    assert_eq!(qs[1].evidence(), strings(&["answer_mini_job_old:0", "answer_mini_job_new:0"]));
    assert_eq!(qs[1].answer_session_ids, strings(&["answer_mini_job_old", "answer_mini_job_new"]));
    // What the assistant said: the evidence is an assistant turn.
    assert_eq!(qs[2].evidence(), strings(&["answer_mini_tahoe:1"]));
    assert_eq!(qs[2].sessions[1].turns[1].role, "assistant");
    // Abstention: nothing to find, not scored.
    assert!(qs[3].is_abstention() && !qs[3].scored());
}

#[test]
fn test_turn_ids_name_their_session() {
    assert_eq!(turn_id("answer_4be1b6b4_2", 7), "answer_4be1b6b4_2:7");
    assert_eq!(session_of("answer_4be1b6b4_2:7"), "answer_4be1b6b4_2");
    // A session id holding a colon keeps it.
    assert_eq!(session_of(&turn_id("a:b", 0)), "a:b");
}

#[test]
fn test_reads_longmemeval_dates() {
    let at = |s: &str| parse_date(s).map(agent_memory::core::time::iso);
    assert_eq!(at("2023/05/20 (Sat) 02:21").as_deref(), Some("2023-05-20T02:21:00.000Z"));
    assert_eq!(at("2023/05/20 02:21").as_deref(), Some("2023-05-20T02:21:00.000Z"));
    assert_eq!(at("2023/05/20").as_deref(), Some("2023-05-20T00:00:00.000Z"));
    assert_eq!(at("2023-05-20T02:21:00Z").as_deref(), Some("2023-05-20T02:21:00.000Z"));
    assert_eq!(at("someday"), None);
}

#[test]
fn test_rejects_inconsistent_questions() {
    let base = json!({
        "question_id": "q", "question_type": "t", "question": "?", "question_date": "2023/01/02 (Mon) 10:00",
        "haystack_session_ids": ["s1", "s2"], "haystack_dates": ["2023/01/01 (Sun) 10:00"],
        "haystack_sessions": [[], []], "answer_session_ids": [], "answer": "x"
    });
    let err = parse(&json!([base.clone()])).unwrap_err();
    assert!(err.contains("1 haystack_dates for 2 haystack_sessions"), "{err}");
    let mut bad_date = base.clone();
    bad_date["haystack_dates"] = json!(["2023/01/01", "yesterday"]);
    assert!(parse(&json!([bad_date])).unwrap_err().contains("unreadable date"));
    // Without session ids or question date: generated ids, the last date.
    let mut bare = base;
    bare.as_object_mut().unwrap().remove("haystack_session_ids");
    bare.as_object_mut().unwrap().remove("question_date");
    bare["haystack_dates"] = json!(["2023/01/01", "2023/01/03"]);
    bare["answer"] = json!(3);
    let q = &parse(&json!([bare])).unwrap()[0];
    assert_eq!(q.sessions[1].id, "session_1");
    assert_eq!(q.date, "2023/01/03");
    assert_eq!(q.answer, "3");
}

#[test]
fn test_harness_sessions_keep_turn_ids_and_fit_the_service_limits() {
    let long = "word ".repeat(8000); // 40,000 bytes: past the 32 KB message limit
    let turns: Vec<Value> = (0..503)
        .map(|i| match i {
            1 => json!({ "role": "assistant", "content": "  " }),
            2 => json!({ "role": "assistant", "content": long, "has_answer": true }),
            _ => json!({ "role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("turn {i}") }),
        })
        .collect();
    let q = json!([{
        "question_id": "big", "question_type": "t", "question": "?", "question_date": "2023/01/02",
        "haystack_session_ids": ["s"], "haystack_dates": ["2023/01/01"], "haystack_sessions": [turns],
        "answer_session_ids": ["s"], "answer": "x"
    }]);
    let q = &parse(&q).unwrap()[0];
    assert_eq!(q.evidence(), strings(&["s:2"]));
    let parts = harness_sessions(q);
    // 502 non-empty turns: two ingests of the same session.
    assert_eq!(parts.iter().map(|(id, s)| (id.as_str(), s.turns.len())).collect::<Vec<_>>(), [("s", 500), ("s", 2)]);
    let first = &parts[0].1;
    assert_eq!(first.turns[0].dia_id, "s:0");
    assert_eq!(first.turns[1].dia_id, "s:2", "the empty turn is left out, the indices kept");
    assert_eq!(first.turns[1].content.len(), agent_memory::core::api::MAX_MESSAGE_BYTES);
    assert_eq!(first.turns[1].speaker, "assistant");
    assert_eq!(parts[1].1.turns.last().unwrap().dia_id, "s:502");
}

#[test]
fn test_reads_the_dev_style_fixtures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dev-styles");
    let mut total = 0;
    for style in ["coding-agent", "support-chat", "long-answers", "knowledge-updates"] {
        let raw = std::fs::read_to_string(dir.join(format!("{style}.json"))).expect("generated by generate.py");
        let data: Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(detect(&data), Format::LongMemEval, "{style}");
        let qs = parse(&data).unwrap_or_else(|e| panic!("{style}: {e}"));
        for q in &qs {
            assert!(q.scored() && (10..=32).contains(&q.sessions.len()), "{style} {}", q.id);
            let evidence = q.evidence();
            assert!(!evidence.is_empty(), "{style} {}", q.id);
            let mut with_evidence: Vec<String> = evidence.iter().map(|t| session_of(t).to_string()).collect();
            with_evidence.dedup();
            assert_eq!(with_evidence, q.answer_session_ids, "{style} {}: evidence in the answer sessions, in order", q.id);
            assert!(q.sessions.windows(2).all(|w| w[0].millis < w[1].millis) && q.millis > q.sessions.last().unwrap().millis);
        }
        total += qs.len();
    }
    assert!((40..=80).contains(&total), "{total} questions");
}

/// Runs the style generator into a fresh directory with `args`.
fn generate(name: &str, args: &[&str]) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("agent-memory-draw-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let status = std::process::Command::new("python3")
        .arg(root.join("tests/fixtures/dev-styles/generate.py"))
        .args(args)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs (scripts/setup.sh needs it too)");
    assert!(status.success(), "generate.py {args:?} failed");
    out
}

#[test]
fn test_the_generator_rewrites_the_committed_fixtures_and_draws_others_by_seed() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dev-styles");
    let again = generate("default", &[]);
    let other = generate("seed7", &["--seed", "7"]);
    for style in ["coding-agent", "support-chat", "long-answers", "knowledge-updates"] {
        let file = format!("{style}.json");
        let read = |dir: &std::path::Path| std::fs::read_to_string(dir.join(&file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(read(&committed) == read(&again), "{style}: the default seed no longer gives the committed file");
        let drawn = read(&other);
        assert!(drawn != read(&committed), "{style}: seed 7 drew the committed file");
        let data: Value = serde_json::from_str(&drawn).unwrap();
        assert_eq!(detect(&data), Format::LongMemEval, "{style}");
        let qs = parse(&data).unwrap_or_else(|e| panic!("{style} (seed 7): {e}"));
        assert!(!qs.is_empty() && qs.iter().all(|q| q.scored() && !q.evidence().is_empty()), "{style} (seed 7)");
    }
    for dir in [again, other] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn test_the_answer_counts_only_where_evidence_states_it_and_only_in_the_first_k() {
    let data = json!([
        {"question_id": "q1", "question_type": "t", "question": "What code?", "answer": "RF-42",
         "haystack_session_ids": ["s"], "haystack_dates": ["2023/01/01"],
         "haystack_sessions": [[{"role": "user", "content": "Refund?"}, {"role": "assistant", "content": "Your code is rf-42.", "has_answer": true}]],
         "answer_session_ids": ["s"]},
        {"question_id": "q2", "question_type": "t", "question": "How many?", "answer": "three",
         "haystack_session_ids": ["s"], "haystack_dates": ["2023/01/01"],
         "haystack_sessions": [[{"role": "user", "content": "I have 3 cats.", "has_answer": true}, {"role": "assistant", "content": "three is plenty"}]],
         "answer_session_ids": ["s"]}
    ]);
    let qs = parse(&data).unwrap();
    assert_eq!(stated_answer(&qs[0]).as_deref(), Some("rf-42"), "case aside");
    assert_eq!(stated_answer(&qs[1]), None, "only a turn without has_answer says 'three'");
    let answer = stated_answer(&qs[0]).unwrap();
    let mut texts: Vec<String> = (0..12).map(|i| format!("memory {i}")).collect();
    assert_eq!(holds(&texts, &answer), [0, 0]);
    texts[7] = "Assistant: the refund code is RF-42.".into();
    assert_eq!(holds(&texts, &answer), [0, 1], "8th: in the first 10, not the first 5");
    texts[2] = "rf-42".into();
    assert_eq!(holds(&texts, &answer), [1, 1]);
    texts.truncate(2);
    assert_eq!(holds(&texts, &answer), [0, 0], "fewer texts than k");
}

// ---- the session-level metrics ---------------------------------------------

#[test]
fn test_recall_any_and_all_at_5_by_hand() {
    // Sessions in rank order: a, b, c, d, e | f.
    let ranked = strings(&["a:0", "b:1", "a:2", "c:0", "d:0", "e:0", "f:0"]);
    assert_eq!(top_sessions(&ranked, 5), strings(&["a", "b", "c", "d", "e"]));
    assert_eq!(recall_any(&ranked, &strings(&["f", "a"]), 5), 1.0);
    assert_eq!(recall_all(&ranked, &strings(&["f", "a"]), 5), 0.0, "f is the 6th session");
    assert_eq!(recall_all(&ranked, &strings(&["c", "a"]), 5), 1.0);
    assert_eq!(recall_any(&ranked, &strings(&["f"]), 5), 0.0);
    assert_eq!(recall_any(&ranked, &strings(&["f"]), 6), 1.0);
    // Many turns of one session: the cut-off widens to 5 distinct sessions
    // (LongMemEval's turn-to-session evaluation), so b still counts.
    let one = strings(&["a:0", "a:1", "a:2", "a:3", "a:4", "a:5", "b:0"]);
    assert_eq!(top_sessions(&one, 5), strings(&["a", "b"]));
    assert_eq!(recall_all(&one, &strings(&["a", "b"]), 5), 1.0);
    // Nothing retrieved; no answer sessions (Python's any / all).
    assert_eq!(recall_any(&[], &strings(&["a"]), 5), 0.0);
    assert_eq!(recall_any(&ranked, &[], 5), 0.0);
    assert_eq!(recall_all(&ranked, &[], 5), 1.0);
}

#[test]
fn test_scores_average_over_questions() {
    let qs = parse(&mini()).unwrap();
    let (dog, job) = (&qs[0], &qs[1]);
    let mut s = Scores::default();
    // Dog: the evidence turn 6th of the turns, its session 2nd: r5 = 0,
    // r10 = r20 = 1, any = all = 1.
    s.add(&strings(&["mini_s_cooking:0", "mini_s_cooking:1", "answer_mini_dog:1", "mini_s_travel:0", "mini_s_travel:1", "answer_mini_dog:0"]), dog);
    // Job: the new fact first, the old one never: r@k = 0.5, any = 1,
    // all = 0.
    s.add(&strings(&["answer_mini_job_new:0", "mini_s_garden:0"]), job);
    assert_eq!(s.turns.n, 2);
    assert_eq!(s.sessions, 2);
    assert!((s.recall(0) - 0.25).abs() < 1e-9, "{}", s.recall(0));
    assert!((s.recall(1) - 0.75).abs() < 1e-9);
    assert!((s.recall(2) - 0.75).abs() < 1e-9);
    assert!((s.any() - 1.0).abs() < 1e-9);
    assert!((s.all() - 0.5).abs() < 1e-9);
    let mut merged = Scores::default();
    merged.merge(&s);
    merged.merge(&s);
    assert_eq!((merged.turns.n, merged.sessions), (4, 4));
    assert!((merged.all() - 0.5).abs() < 1e-9);
}

// ---- end to end --------------------------------------------------------------

fn in_unit(x: f64) -> bool {
    (0.0..=1.0).contains(&x)
}

fn check_report(r: &longmemeval::Report) {
    assert_eq!((r.questions, r.skipped), (4, 1));
    let (p, b) = r.overall();
    assert_eq!((p.turns.n, b.turns.n), (3, 3));
    for s in [&p, &b].into_iter().chain(r.channels.values()) {
        for x in [s.recall(0), s.recall(1), s.recall(2), s.any(), s.all()] {
            assert!(in_unit(x), "score {x} out of [0, 1]");
        }
    }
    // The obvious answers: bm25 over the raw turns finds the dog, the
    // workplace and the trail within its first five turns.
    for t in ["single-session-user", "knowledge-update", "single-session-assistant"] {
        let (_, bm25) = &r.by_type[t];
        assert_eq!(bm25.turns.n, 1, "{t}");
        assert!(bm25.recall(0) > 0.0 && bm25.any() == 1.0, "{t}: bm25 r@5 {} any@5 {}", bm25.recall(0), bm25.any());
    }
    assert_eq!(r.by_type["single-session-user"].1.recall(0), 1.0);
    assert_eq!(r.sessions, 9);
    assert_eq!(r.ingested, 28);
}

#[test]
fn test_the_pipeline_runs_on_the_mini_fixture() {
    let qs = parse(&mini()).unwrap();
    let opts = Options { per_channel: true, ..Options::native() };
    let r = run(&qs, &opts);
    check_report(&r);
    assert!(r.channels.contains_key("fts") && r.channels.contains_key("vector"), "{:?}", r.channels.keys().collect::<Vec<_>>());
    assert!(!r.statuses.is_empty());
    longmemeval::print(&r, &opts);
}

// ---- the OpenAI-compatible embedder against a stub --------------------------

#[derive(Clone, Debug)]
struct Seen {
    path: String,
    auth: Option<String>,
    model: String,
    inputs: Vec<String>,
}

/// A tiny OpenAI-compatible `/v1/embeddings` server on loopback: 64-dim
/// hashed bag-of-words vectors, the data in reverse order (each with its
/// `index`), 500 for model `broken`. Returns its base URL and what it saw.
fn stub() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            serve(stream, &log);
        }
    });
    (url, seen)
}

fn serve(mut stream: TcpStream, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let (mut length, mut auth) = (0usize, None);
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).unwrap();
        if h.trim().is_empty() {
            break;
        }
        let (name, value) = h.split_once(':').unwrap();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap(),
            "authorization" => auth = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = req["model"].as_str().unwrap_or("").to_string();
    let inputs: Vec<String> = req["input"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect();
    log.lock().unwrap().push(Seen { path: path.clone(), auth, model: model.clone(), inputs: inputs.clone() });
    let (status, reply) = if path != "/v1/embeddings" {
        ("404 Not Found", json!({ "error": "no such route" }))
    } else if model == "broken" {
        ("500 Internal Server Error", json!({ "error": { "message": "model failed to load" } }))
    } else {
        let data: Vec<Value> =
            inputs.iter().enumerate().rev().map(|(i, t)| json!({ "object": "embedding", "index": i, "embedding": stub_vector(t) })).collect();
        ("200 OK", json!({ "object": "list", "model": model, "data": data }))
    };
    let reply = reply.to_string();
    let _ = write!(stream, "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}", reply.len());
}

fn stub_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 64];
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let h = w.to_lowercase().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        v[(h % 64) as usize] += 1.0;
    }
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n == 0.0 {
        v[0] = 1.0;
    } else {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

#[test]
fn test_openai_embedder_batches_and_keeps_order() {
    let (url, seen) = stub();
    let e = OpenAiEmbedder::new(&format!("{url}/"), "stub-model").with_api_key("k1");
    let texts: Vec<String> = (0..150).map(|i| format!("text number {i} about topic {}", i % 7)).collect();
    let vectors = e.embed_blocking(&texts).expect("embeds");
    assert_eq!(vectors.len(), 150);
    for (t, v) in texts.iter().zip(&vectors) {
        assert_eq!(v, &stub_vector(t), "vectors come back in the texts' order");
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.iter().map(|s| s.inputs.len()).collect::<Vec<_>>(), [64, 64, 22]);
    assert!(seen.iter().all(|s| s.path == "/v1/embeddings" && s.model == "stub-model" && s.auth.as_deref() == Some("Bearer k1")));
    assert_eq!(seen.iter().flat_map(|s| s.inputs.clone()).collect::<Vec<_>>(), texts);
    assert_eq!((e.requests(), e.texts(), e.dims()), (3, 150, 64));
    assert!(e.embed_blocking(&[]).unwrap().is_empty());
    assert_eq!(e.requests(), 3, "nothing to embed, nothing sent");
}

#[test]
fn test_openai_embedder_cache_answers_repeats_without_a_request() {
    let (url, seen) = stub();
    let path = std::env::temp_dir().join(format!("embed-cache-{}-{:?}.jsonl", std::process::id(), std::thread::current().id()));
    let _ = std::fs::remove_file(&path);
    let texts: Vec<String> = (0..70).map(|i| format!("cached text {i}")).collect();
    let first = OpenAiEmbedder::new(&url, "stub-model").with_cache(&path).unwrap();
    assert_eq!(first.embed_blocking(&texts).unwrap(), texts.iter().map(|t| stub_vector(t)).collect::<Vec<_>>());
    assert_eq!(first.requests(), 2);
    // A new embedder reading the same file asks only for what is new,
    // and a model of another name misses.
    let again = OpenAiEmbedder::new(&url, "stub-model").with_cache(&path).unwrap();
    let more: Vec<String> = texts.iter().cloned().chain(["a new one".to_string()]).collect();
    assert_eq!(again.embed_blocking(&more).unwrap(), more.iter().map(|t| stub_vector(t)).collect::<Vec<_>>());
    assert_eq!((again.requests(), again.texts(), again.cached(), again.dims()), (1, 1, 70, 64));
    let other = OpenAiEmbedder::new(&url, "other-model").with_cache(&path).unwrap();
    other.embed_blocking(&texts[..3]).unwrap();
    assert_eq!(other.texts(), 3);
    assert_eq!(seen.lock().unwrap().iter().map(|s| s.inputs.len()).sum::<usize>(), 70 + 1 + 3);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn test_openai_embedder_reports_failures() {
    let (url, _) = stub();
    let err = OpenAiEmbedder::new(&url, "broken").embed_blocking(&strings(&["x"])).unwrap_err();
    assert!(err.is_provider() && err.message().contains("500") && err.message().contains("model failed to load"), "{err}");
    let err = OpenAiEmbedder::new(&format!("{url}/nowhere"), "m").embed_blocking(&strings(&["x"])).unwrap_err();
    assert!(err.message().contains("404"), "{err}");
    // Nothing listening.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let err = OpenAiEmbedder::new(&format!("http://{closed}/v1"), "m").embed_blocking(&strings(&["x"])).unwrap_err();
    assert!(err.is_provider(), "{err}");
}

#[test]
fn test_the_pipeline_embeds_through_the_openai_embedder() {
    let (url, seen) = stub();
    let embedder = Rc::new(OpenAiEmbedder::new(&url, "stub-model"));
    let opts = Options { embedding: Embedding::OpenAi(embedder.clone()), per_channel: true, ..Options::native() };
    let r = run(&parse(&mini()).unwrap(), &opts);
    check_report(&r);
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|s| !s.inputs.is_empty() && s.inputs.len() <= MAX_BATCH));
    // Memories embedded at ingest, then the query and its HyDE text at
    // each of the 3 recalls (twice: fused and per channel).
    assert!(embedder.texts() > 6, "{}", embedder.texts());
    assert!(seen.iter().any(|s| s.inputs.iter().any(|t| t == "Where do I work now?")));
    assert_eq!(embedder.dims(), 64);
    let v = r.channels.get("vector").expect("the vector channel ran");
    assert!(v.turns.n == 3 && v.recall(2) > 0.0, "the stub's vectors find something: {v:?}");
}
