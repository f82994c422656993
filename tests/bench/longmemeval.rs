//! LongMemEval's format for the evidence-recall harness
//! (`cargo bench --bench locomo`, `make locomo LOCOMO=file`).
//!
//! The file is a JSON list of questions, each carrying its own haystack:
//! `question_id`, `question_type`, `question`, `question_date`,
//! `haystack_session_ids`, `haystack_dates`, `haystack_sessions` (each a
//! list of turns `{role, content, has_answer?}`), `answer_session_ids` and
//! `answer`. [`detect`] tells it from LoCoMo's list of
//! `{conversation, qa}` by its content.
//!
//! Each question gets a fresh profile: its haystack sessions ingested in
//! the file's order, each at its date (message timestamps and `now`), the
//! outbox drained; then one recall with the question's date as reference
//! date and `now`. A turn's id is its session id and its index in the
//! session (`"<session id>:<index>"`, [`turn_id`]); the evidence of a
//! question is its turns with `has_answer: true`.
//!
//! Reported, overall and per `question_type`, for the pipeline and for the
//! harness's FTS5 bm25 baseline over the same raw turns:
//! - turn-level evidence recall@5/10/20, as for LoCoMo (the share of
//!   evidence turns among the first k distinct turns the candidates cite);
//! - LongMemEval's session-level `recall_any@5` / `recall_all@5`: whether
//!   any / all of `answer_session_ids` are among the first 5 distinct
//!   sessions of the ranked turns (LongMemEval's turn-to-session
//!   evaluation widens the cut-off until it holds 5 distinct sessions).
//!
//! Abstention questions (`question_id` ending in `_abs`) have nothing to
//! find and are skipped, as LongMemEval's retrieval evaluation skips them.
//! The last line printed is `recall@10 pipeline=<x> bm25=<y>`, turn level.

#![allow(dead_code)]

use crate::harness::{recall_at, turns_of, Baseline, Embedding, Memory, Native, Remote, Session, Tally, Turn};
use agent_memory::core::api::{MAX_MESSAGES_PER_INGEST, MAX_MESSAGE_BYTES};
use agent_memory::core::time::{iso, parse_millis};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// The session-level cut-off (`recall_any@5`, `recall_all@5`).
pub const SESSION_K: usize = 5;

// ---- the format -----------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A list of `{conversation, qa}` (or anything that is not LongMemEval).
    LoCoMo,
    /// A list of questions, each with `haystack_sessions`.
    LongMemEval,
}

/// The format of a parsed file, from its content: a list whose first item
/// has `haystack_sessions` or `question_id` is LongMemEval's.
pub fn detect(data: &Value) -> Format {
    let first = data.as_array().and_then(|a| a.first());
    match first {
        Some(q) if q.get("haystack_sessions").is_some() || q.get("question_id").is_some() => Format::LongMemEval,
        _ => Format::LoCoMo,
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct LmeTurn {
    /// [`turn_id`] of the session and the turn's index in it.
    pub id: String,
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
    pub has_answer: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LmeSession {
    pub id: String,
    /// As written in the file, e.g. `2023/05/20 (Sat) 02:21`.
    pub date: String,
    pub millis: i64,
    pub turns: Vec<LmeTurn>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LmeQuestion {
    pub id: String,
    pub question_type: String,
    pub question: String,
    /// As written (the last session's date when the file gives none).
    pub date: String,
    pub millis: i64,
    pub sessions: Vec<LmeSession>,
    pub answer_session_ids: Vec<String>,
    pub answer: String,
}

impl LmeQuestion {
    /// The evidence: ids of the turns with `has_answer`, in haystack order.
    pub fn evidence(&self) -> Vec<String> {
        self.sessions.iter().flat_map(|s| s.turns.iter()).filter(|t| t.has_answer && !t.content.trim().is_empty()).map(|t| t.id.clone()).collect()
    }

    /// Abstention questions have nothing to retrieve.
    pub fn is_abstention(&self) -> bool {
        self.id.ends_with("_abs")
    }

    /// Whether the question is scored at all: not an abstention, and with
    /// evidence turns or answer sessions.
    pub fn scored(&self) -> bool {
        !self.is_abstention() && (!self.evidence().is_empty() || !self.answer_session_ids.is_empty())
    }
}

/// A turn's id: its session's id and its index in the session.
pub fn turn_id(session_id: &str, index: usize) -> String {
    format!("{session_id}:{index}")
}

/// The session id of a [`turn_id`].
pub fn session_of(turn_id: &str) -> &str {
    turn_id.rsplit_once(':').map_or(turn_id, |(s, _)| s)
}

/// LongMemEval's dates (`2023/05/20 (Sat) 02:21`, the weekday optional,
/// the time optional), else any date the service reads.
pub fn parse_date(s: &str) -> Option<i64> {
    let cleaned: String = {
        let mut out = String::new();
        let mut depth = 0;
        for c in s.chars() {
            match c {
                '(' => depth += 1,
                ')' if depth > 0 => depth -= 1,
                _ if depth == 0 => out.push(c),
                _ => {}
            }
        }
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    for fmt in ["%Y/%m/%d %H:%M", "%Y/%m/%d %H:%M:%S"] {
        if let Ok(d) = chrono::NaiveDateTime::parse_from_str(&cleaned, fmt) {
            return Some(d.and_utc().timestamp_millis());
        }
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(&cleaned, "%Y/%m/%d") {
        return d.and_hms_opt(0, 0, 0).map(|n| n.and_utc().timestamp_millis());
    }
    parse_millis(s)
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(|x| text(Some(x))).collect()
}

/// Reads a LongMemEval-format file (already parsed).
pub fn parse(data: &Value) -> Result<Vec<LmeQuestion>, String> {
    let items = data.as_array().ok_or("a LongMemEval file is a JSON list of questions")?;
    let mut out = Vec::with_capacity(items.len());
    for (qi, q) in items.iter().enumerate() {
        let id = text(q.get("question_id")).unwrap_or_else(|| format!("q{qi}"));
        let raw_sessions = q.get("haystack_sessions").and_then(Value::as_array).ok_or_else(|| format!("{id}: no haystack_sessions list"))?;
        let dates = strings(q.get("haystack_dates"));
        if dates.len() != raw_sessions.len() {
            return Err(format!("{id}: {} haystack_dates for {} haystack_sessions", dates.len(), raw_sessions.len()));
        }
        let mut ids = strings(q.get("haystack_session_ids"));
        if ids.is_empty() {
            ids = (0..raw_sessions.len()).map(|i| format!("session_{i}")).collect();
        } else if ids.len() != raw_sessions.len() {
            return Err(format!("{id}: {} haystack_session_ids for {} haystack_sessions", ids.len(), raw_sessions.len()));
        }
        let mut sessions = Vec::with_capacity(raw_sessions.len());
        for ((sid, date), turns) in ids.iter().zip(&dates).zip(raw_sessions) {
            let millis = parse_date(date).ok_or_else(|| format!("{id} session {sid}: unreadable date {date:?}"))?;
            let turns = turns.as_array().ok_or_else(|| format!("{id} session {sid}: not a list of turns"))?;
            sessions.push(LmeSession {
                id: sid.clone(),
                date: date.clone(),
                millis,
                turns: turns
                    .iter()
                    .enumerate()
                    .map(|(i, t)| LmeTurn {
                        id: turn_id(sid, i),
                        role: text(t.get("role")).unwrap_or_else(|| "user".into()),
                        content: text(t.get("content")).unwrap_or_default(),
                        has_answer: t.get("has_answer").and_then(Value::as_bool).unwrap_or(false),
                    })
                    .collect(),
            });
        }
        let (date, millis) = match text(q.get("question_date")) {
            Some(d) => {
                let m = parse_date(&d).ok_or_else(|| format!("{id}: unreadable question_date {d:?}"))?;
                (d, m)
            }
            None => sessions.last().map(|s| (s.date.clone(), s.millis)).ok_or_else(|| format!("{id}: neither question_date nor sessions"))?,
        };
        out.push(LmeQuestion {
            id: id.clone(),
            question_type: text(q.get("question_type")).unwrap_or_else(|| "unknown".into()),
            question: text(q.get("question")).ok_or_else(|| format!("{id}: no question"))?,
            date,
            millis,
            sessions,
            answer_session_ids: strings(q.get("answer_session_ids")),
            answer: text(q.get("answer")).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// The harness sessions a profile ingests for `q`, each with the id it is
/// ingested under: empty turns left out (their indices kept in the ids),
/// a turn past the service's message size cut at a character boundary,
/// and a session past the per-request message count sent in parts.
pub fn harness_sessions(q: &LmeQuestion) -> Vec<(String, Session)> {
    let mut out = Vec::new();
    for (n, s) in q.sessions.iter().enumerate() {
        let turns: Vec<&LmeTurn> = s.turns.iter().filter(|t| !t.content.trim().is_empty()).collect();
        for part in turns.chunks(MAX_MESSAGES_PER_INGEST) {
            out.push((
                s.id.clone(),
                Session {
                    number: n + 1,
                    timestamp: iso(s.millis),
                    millis: s.millis,
                    turns: part
                        .iter()
                        .map(|t| Turn { dia_id: t.id.clone(), speaker: t.role.clone(), content: truncate(&t.content, MAX_MESSAGE_BYTES) })
                        .collect(),
                },
            ));
        }
    }
    out
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

// ---- the session-level metrics ---------------------------------------------

/// The first `k` distinct sessions of `ranked` turns, in rank order.
pub fn top_sessions(ranked: &[String], k: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in ranked {
        if out.len() == k {
            break;
        }
        let s = session_of(t);
        if !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    }
    out
}

/// 1 if any of `answer_sessions` is among the first `k` sessions of
/// `ranked` turns, else 0 (0 without answer sessions).
pub fn recall_any(ranked: &[String], answer_sessions: &[String], k: usize) -> f64 {
    let top = top_sessions(ranked, k);
    f64::from(u8::from(answer_sessions.iter().any(|a| top.contains(a))))
}

/// 1 if all of `answer_sessions` are among the first `k` sessions of
/// `ranked` turns, else 0 (1 without answer sessions, as Python's `all`).
pub fn recall_all(ranked: &[String], answer_sessions: &[String], k: usize) -> f64 {
    let top = top_sessions(ranked, k);
    f64::from(u8::from(answer_sessions.iter().all(|a| top.contains(a))))
}

/// Turn-level recall@5/10/20 and session-level any/all@5 over questions.
#[derive(Clone, Debug, Default)]
pub struct Scores {
    /// Over questions with evidence turns.
    pub turns: Tally,
    /// Questions with answer sessions, and their any@5 / all@5 sums.
    pub sessions: usize,
    pub any_sum: f64,
    pub all_sum: f64,
}

impl Scores {
    /// Scores one question's ranked turns.
    pub fn add(&mut self, ranked: &[String], q: &LmeQuestion) {
        let evidence = q.evidence();
        if !evidence.is_empty() {
            self.turns.add(ranked, &evidence);
        }
        if !q.answer_session_ids.is_empty() {
            self.sessions += 1;
            self.any_sum += recall_any(ranked, &q.answer_session_ids, SESSION_K);
            self.all_sum += recall_all(ranked, &q.answer_session_ids, SESSION_K);
        }
    }

    /// Turn-level recall at `KS[i]` (5, 10, 20).
    pub fn recall(&self, i: usize) -> f64 {
        self.turns.mean(i)
    }

    pub fn any(&self) -> f64 {
        if self.sessions == 0 {
            0.0
        } else {
            self.any_sum / self.sessions as f64
        }
    }

    pub fn all(&self) -> f64 {
        if self.sessions == 0 {
            0.0
        } else {
            self.all_sum / self.sessions as f64
        }
    }

    pub fn merge(&mut self, o: &Scores) {
        self.turns.n += o.turns.n;
        for i in 0..3 {
            self.turns.sums[i] += o.turns.sums[i];
        }
        self.sessions += o.sessions;
        self.any_sum += o.any_sum;
        self.all_sum += o.all_sum;
    }
}

// ---- the run ------------------------------------------------------------------

pub struct Options {
    /// A live Worker's base URL (`MEMORY_URL`), else native profiles.
    pub live: Option<String>,
    /// The native profiles' embedder.
    pub embedding: Embedding,
    /// Each channel's own ranking scored too (`LOCOMO_CHANNELS=1`).
    pub per_channel: bool,
    /// One line per question (`LOCOMO_VERBOSE=1`).
    pub verbose: bool,
    /// Every question's haystack in one profile (`LOCOMO_ONE_PROFILE=1`),
    /// each session once, oldest first, each question asked of all of it:
    /// recall's latency at the size of the whole set.
    pub one_profile: bool,
}

impl Options {
    /// Native profiles with the local embedder, no channels, quiet.
    pub fn native() -> Options {
        Options { live: None, embedding: Embedding::Local, per_channel: false, verbose: false, one_profile: false }
    }
}

#[derive(Default)]
pub struct Report {
    /// Per question type: (pipeline, bm25).
    pub by_type: BTreeMap<String, (Scores, Scores)>,
    /// Each channel alone (with `per_channel`).
    pub channels: BTreeMap<String, Scores>,
    pub questions: usize,
    pub skipped: usize,
    /// Scored questions without a `has_answer` turn (session level only).
    pub without_evidence: usize,
    pub sessions: usize,
    pub ingested: usize,
    pub ingest_time: Duration,
    pub latencies: Vec<Duration>,
    /// Recall times from SQLite alone (one profile only).
    pub cold_latencies: Vec<Duration>,
    /// Each scored question's candidates (their source messages), in the
    /// order asked, to hold the answers from SQLite alone to them.
    pub warm_candidates: Vec<Vec<Vec<String>>>,
    /// Questions whose candidates from SQLite alone were not the warm ones.
    pub cold_differs: Vec<String>,
    pub statuses: BTreeMap<String, i64>,
    /// Bytes of the active memories' content (native).
    pub active_bytes: i64,
    /// Share of evidence turns some active memory cites (native).
    pub ceiling: Tally,
    /// Whether the answer itself was returned ([`Answers`]).
    pub answers: Answers,
}

/// Whether the answer itself is in what recall returns: over the
/// questions whose answer is stated word for word in an evidence turn,
/// the share whose answer (case aside) is in one of the first 5 and 10
/// memories' summaries, and for the baseline in one of its first 5 and
/// 10 turns. A turn is a whole message, a memory one statement, so the
/// two are not the same test: the memories' figure says whether the
/// statement holding the answer, not only its turn, came back.
#[derive(Clone, Debug, Default)]
pub struct Answers {
    pub n: usize,
    /// Questions whose answer some active memory holds (native).
    pub stored: Option<usize>,
    pub pipeline: [usize; 2],
    pub bm25: [usize; 2],
}

/// Whether the first 5 and the first 10 of `texts` hold `answer`
/// (lowercase), case aside.
pub fn holds(texts: &[String], answer: &str) -> [usize; 2] {
    let first = texts.iter().position(|t| t.to_lowercase().contains(answer));
    [5, 10].map(|k| usize::from(first.is_some_and(|i| i < k)))
}

/// `q`'s answer, lowercase, when one of its evidence turns states it word
/// for word (case aside); `None` otherwise.
pub fn stated_answer(q: &LmeQuestion) -> Option<String> {
    let answer = q.answer.trim().to_lowercase();
    let stated = !answer.is_empty() && q.sessions.iter().flat_map(|s| s.turns.iter()).any(|t| t.has_answer && t.content.to_lowercase().contains(&answer));
    stated.then_some(answer)
}

impl Answers {
    /// Tallies one question; whether its answer was in the first 10
    /// memories (`None`: not stated word for word in its evidence).
    fn add(&mut self, q: &LmeQuestion, memory: &dyn Memory, bm25: &[String], baseline: &Baseline) -> Option<bool> {
        let answer = stated_answer(q)?;
        self.n += 1;
        if let Some(stored) = memory.stores(&answer) {
            *self.stored.get_or_insert(0) += usize::from(stored);
        }
        let memories = memory.texts();
        let turns: Vec<String> = bm25.iter().take(10).filter_map(|id| baseline.text(id)).collect();
        let mine = holds(memories, &answer);
        for (sum, hit) in [(&mut self.pipeline, mine), (&mut self.bm25, holds(&turns, &answer))] {
            sum[0] += hit[0];
            sum[1] += hit[1];
        }
        Some(mine[1] == 1)
    }

    fn share(&self, hits: usize) -> f64 {
        hits as f64 / self.n.max(1) as f64
    }
}

impl Report {
    /// (pipeline, bm25) over every scored question.
    pub fn overall(&self) -> (Scores, Scores) {
        let (mut p, mut b) = (Scores::default(), Scores::default());
        for (tp, tb) in self.by_type.values() {
            p.merge(tp);
            b.merge(tb);
        }
        (p, b)
    }
}

/// A profile name the REST routes accept.
fn profile_name(id: &str) -> String {
    let safe: String = id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    format!("lme-{safe}")
}

/// Ingests each question's haystack into a fresh profile and recalls it,
/// beside the bm25 baseline over the same turns.
pub fn run(questions: &[LmeQuestion], opts: &Options) -> Report {
    let mut r = Report::default();
    if opts.one_profile {
        return run_in_one_profile(questions, opts, r);
    }
    for q in questions {
        r.questions += 1;
        if !q.scored() {
            r.skipped += 1;
            continue;
        }
        let evidence = q.evidence();
        if evidence.is_empty() {
            r.without_evidence += 1;
        }
        let mut memory = fresh_memory(opts, &profile_name(&q.id));
        let sessions = harness_sessions(q);
        let turn_of = ingest_sessions(memory.as_mut(), &sessions, &mut r);
        r.sessions += q.sessions.len();
        if opts.live.is_some() {
            let settle = std::env::var("LOCOMO_SETTLE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
            std::thread::sleep(Duration::from_millis(settle));
        }
        for (status, n) in memory.statuses() {
            *r.statuses.entry(status).or_insert(0) += n;
        }
        r.active_bytes += memory.active().map_or(0, |(_, b)| b);
        if let (Ok(dir), Some(text)) = (std::env::var("LOCOMO_DUMP"), memory.export()) {
            let _ = std::fs::write(format!("{dir}/{}.ndjson", q.id), text);
        }
        let baseline = Baseline::new(sessions.iter().map(|(_, s)| s));
        ask(q, memory.as_mut(), &baseline, &turn_of, opts, &mut r);
    }
    r
}

/// An empty profile: a native one, or the live Worker's `name` wiped.
fn fresh_memory(opts: &Options, name: &str) -> Box<dyn Memory> {
    match &opts.live {
        Some(url) => {
            let m = Remote::new(url, name);
            let _ = m.call("DELETE", "", None);
            Box::new(m)
        }
        None => Box::new(Native::new(&opts.embedding)),
    }
}

/// Ingests `sessions` in order, timed into `r`; each message id's turn.
fn ingest_sessions(memory: &mut dyn Memory, sessions: &[(String, Session)], r: &mut Report) -> HashMap<String, String> {
    let mut turn_of: HashMap<String, String> = HashMap::new();
    let started = Instant::now();
    for (sid, s) in sessions {
        let ids = memory.ingest(s, sid);
        for (id, t) in ids.into_iter().zip(&s.turns) {
            turn_of.entry(id).or_insert_with(|| t.dia_id.clone());
        }
        r.ingested += s.turns.len();
    }
    r.ingest_time += started.elapsed();
    turn_of
}

/// Every question's sessions, each once, oldest first, into one profile;
/// then every question asked of it (see [`Options::one_profile`]).
fn run_in_one_profile(questions: &[LmeQuestion], opts: &Options, mut r: Report) -> Report {
    let mut memory = fresh_memory(opts, "lme-one-profile");
    let mut seen: HashSet<String> = HashSet::new();
    let mut sessions: Vec<(String, Session)> = Vec::new();
    for q in questions {
        for (sid, s) in harness_sessions(q) {
            if seen.insert(format!("{sid}#{}", s.turns.first().map_or("", |t| t.dia_id.as_str()))) {
                sessions.push((sid, s));
            }
        }
    }
    sessions.sort_by_key(|(_, s)| s.millis);
    let turn_of = ingest_sessions(memory.as_mut(), &sessions, &mut r);
    r.sessions = seen.len();
    for (status, n) in memory.statuses() {
        *r.statuses.entry(status).or_insert(0) += n;
    }
    r.active_bytes += memory.active().map_or(0, |(_, b)| b);
    let baseline = Baseline::new(sessions.iter().map(|(_, s)| s));
    for q in questions {
        r.questions += 1;
        if !q.scored() {
            r.skipped += 1;
            continue;
        }
        if q.evidence().is_empty() {
            r.without_evidence += 1;
        }
        ask(q, memory.as_mut(), &baseline, &turn_of, opts, &mut r);
    }
    // The same questions once more with the state let go, as an evicted
    // profile answers them (a full-text query that re-ran per row made
    // these 2-10 times slower unseen: README, make bench-multi).
    // Its answers must be the warm ones: what the state holds is a cache
    // over SQLite (tests/resident.rs holds that on a scripted profile; this
    // holds it on the benchmark's).
    if memory.go_cold() {
        let warm = std::mem::take(&mut r.warm_candidates);
        for (q, warm) in questions.iter().filter(|q| q.scored()).zip(warm) {
            let reference = Session { number: 0, timestamp: iso(q.millis), millis: q.millis, turns: vec![] };
            let t0 = Instant::now();
            let cold = memory.recall(&q.question, &reference);
            r.cold_latencies.push(t0.elapsed());
            if cold != warm {
                r.cold_differs.push(q.id.clone());
            }
        }
    }
    r
}

/// Asks `q` of a filled profile, beside the bm25 baseline, and tallies it.
fn ask(q: &LmeQuestion, memory: &mut dyn Memory, baseline: &Baseline, turn_of: &HashMap<String, String>, opts: &Options, r: &mut Report) {
    let evidence = q.evidence();
    if let Some(cited) = memory.cited() {
        if !evidence.is_empty() {
            let cited: HashSet<&String> = cited.iter().filter_map(|id| turn_of.get(id)).collect();
            let reachable: Vec<String> = evidence.iter().filter(|e| cited.contains(e)).cloned().collect();
            r.ceiling.add(&reachable, &evidence);
            if opts.verbose && reachable.len() < evidence.len() {
                let uncited: Vec<&String> = evidence.iter().filter(|e| !cited.contains(e)).collect();
                println!("  [{}] evidence no live memory cites: {uncited:?}", q.id);
            }
        }
    }
    let reference = Session { number: 0, timestamp: iso(q.millis), millis: q.millis, turns: vec![] };
    let t0 = Instant::now();
    let candidates = memory.recall(&q.question, &reference);
    r.latencies.push(t0.elapsed());
    r.warm_candidates.push(candidates.clone());
    let ranked = turns_of(&candidates, turn_of);
    let bm25 = baseline.search(&q.question);
    let answered = r.answers.add(q, &*memory, &bm25, baseline);
    if opts.per_channel {
        for (name, lists) in memory.channels(&q.question, &reference) {
            let turns = turns_of(&lists, turn_of);
            if opts.verbose && !evidence.is_empty() {
                let places: Vec<String> = evidence.iter().map(|e| turns.iter().position(|t| t == e).map_or("-".into(), |p| (p + 1).to_string())).collect();
                println!("    [{}] {name} r10={:.2} evidence at {}", q.id, recall_at(&turns, &evidence, 10), places.join(","));
            }
            r.channels.entry(name).or_default().add(&turns, q);
        }
    }
    let entry = r.by_type.entry(q.question_type.clone()).or_default();
    entry.0.add(&ranked, q);
    entry.1.add(&bm25, q);
    if opts.verbose {
        let k = 10;
        println!(
            "  [{}] {} r10={} b10={} any5={}/{} answer10={} {:?} ev={:?} got={:?}",
            q.id,
            q.question_type,
            if evidence.is_empty() { "-".to_string() } else { format!("{:.2}", recall_at(&ranked, &evidence, k)) },
            if evidence.is_empty() { "-".to_string() } else { format!("{:.2}", recall_at(&bm25, &evidence, k)) },
            recall_any(&ranked, &q.answer_session_ids, SESSION_K),
            recall_any(&bm25, &q.answer_session_ids, SESSION_K),
            answered.map_or("-", |a| if a { "1" } else { "0" }),
            q.question,
            evidence,
            ranked.iter().take(k).collect::<Vec<_>>()
        );
    }
}

/// Prints the report; the last line is `recall@10 pipeline=<x> bm25=<y>`.
pub fn print(r: &Report, opts: &Options) {
    println!();
    println!(
        "{:<26} {:>4}   {:>7} {:>7} {:>7} {:>6} {:>6}   {:>7} {:>7} {:>7} {:>6} {:>6}",
        "question_type", "n", "pipe@5", "pipe@10", "pipe@20", "any@5", "all@5", "bm25@5", "bm25@10", "bm25@20", "any@5", "all@5"
    );
    let row = |label: &str, p: &Scores, b: &Scores| {
        println!(
            "{:<26} {:>4}   {:>7.3} {:>7.3} {:>7.3} {:>6.3} {:>6.3}   {:>7.3} {:>7.3} {:>7.3} {:>6.3} {:>6.3}",
            label,
            p.turns.n.max(p.sessions),
            p.recall(0),
            p.recall(1),
            p.recall(2),
            p.any(),
            p.all(),
            b.recall(0),
            b.recall(1),
            b.recall(2),
            b.any(),
            b.all()
        );
    };
    for (t, (p, b)) in &r.by_type {
        row(t, p, b);
    }
    let (all_p, all_b) = r.overall();
    row("overall", &all_p, &all_b);
    if opts.per_channel {
        let line = |label: &str, s: &Scores| {
            println!("{label:<26} recall@5={:.3} @10={:.3} @20={:.3} any@5={:.3} all@5={:.3}", s.recall(0), s.recall(1), s.recall(2), s.any(), s.all());
        };
        for (name, s) in &r.channels {
            line(&format!("channel {name} alone:"), s);
        }
        line("bm25 baseline:", &all_b);
        line("pipeline (fused):", &all_p);
    }
    if r.answers.n > 0 {
        let a = &r.answers;
        println!(
            "answer returned: in the first 5 / 10 memories {:.3} / {:.3}; bm25's first 5 / 10 turns {:.3} / {:.3} ({} questions whose answer an evidence turn states word for word{})",
            a.share(a.pipeline[0]),
            a.share(a.pipeline[1]),
            a.share(a.bm25[0]),
            a.share(a.bm25[1]),
            a.n,
            a.stored.map_or(String::new(), |s| format!("; an active memory holds it for {:.3}", a.share(s)))
        );
    }
    if !r.statuses.is_empty() {
        let all: Vec<String> = r.statuses.iter().map(|(s, n)| format!("{n} {s}")).collect();
        println!(
            "memories: {} ({:.1} per message; active content {:.0} bytes per message)",
            all.join(", "),
            r.statuses.values().sum::<i64>() as f64 / r.ingested.max(1) as f64,
            r.active_bytes as f64 / r.ingested.max(1) as f64
        );
    }
    if r.ceiling.n > 0 {
        println!("extraction ceiling: {:.3} of evidence turns are cited by some active memory", r.ceiling.mean(2));
    }
    if r.skipped > 0 {
        println!("({} abstention questions or questions without evidence skipped)", r.skipped);
    }
    if r.without_evidence > 0 {
        println!("({} questions without has_answer turns scored at session level only)", r.without_evidence);
    }
    let mut latencies = r.latencies.clone();
    latencies.sort();
    let pct = |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
    println!(
        "timing: ingest {} msgs ({} sessions) in {:.1} s ({:.0} msgs/s, drain included); recall p50 {:.1} ms, p95 {:.1} ms over {} queries",
        r.ingested,
        r.sessions,
        r.ingest_time.as_secs_f64(),
        r.ingested as f64 / r.ingest_time.as_secs_f64().max(1e-9),
        pct(0.5).as_secs_f64() * 1000.0,
        pct(0.95).as_secs_f64() * 1000.0,
        latencies.len()
    );
    if !r.cold_latencies.is_empty() {
        print_cold(&mut r.cold_latencies.clone(), &r.cold_differs);
    }
    if let Some((requests, texts, cached)) = opts.embedding.usage() {
        println!("embeddings: {texts} texts in {requests} requests, {cached} from the cache file");
    }
    println!("recall@10 pipeline={:.3} bm25={:.3}", all_p.recall(1), all_b.recall(1));
}

/// The timing line of the questions asked again from SQLite alone, and
/// which of them were answered otherwise than warm (`differ`).
pub fn print_cold(latencies: &mut [Duration], differ: &[String]) {
    latencies.sort();
    let at = |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default().as_secs_f64() * 1000.0;
    println!(
        "timing: recall from SQLite alone (the state let go, as when evicted) p50 {:.1} ms, p95 {:.1} ms over {} queries; {} answered otherwise than warm{}",
        at(0.5),
        at(0.95),
        latencies.len(),
        differ.len(),
        if differ.is_empty() { String::new() } else { format!(" ({})", differ.join(", ")) }
    );
}
