//! How the full-text and key channels score what they read: plain
//! functions of what `recall::channels` read from the store, with no
//! reading of their own, unit-tested natively below.
//!
//! The two full-text channels share one scoring of the raw messages
//! ([`turn_scores`]) by SQLite's `bm25()` (Porter stemming is the index's
//! own tokenizer, so query words and stored words meet as the same stems),
//! corrected in general ways:
//!
//! * **expansions weigh less**: the query's own words score in full, the
//!   analyzer's additions (synonyms) at [`EXPANSION_WEIGHT`]. A synonym is
//!   evidence that the text is about the same thing, weaker than the word
//!   the asker chose;
//! * **stop words count a little**: a quarter of a content word in a turn
//!   scored in its conversation ([`FUNCTION_WEIGHT`]), half in a
//!   memory's own score ([`MEMORY_FUNCTION_WEIGHT`], read for the
//!   candidates only), in full in the raw-messages channel, as plain bm25
//!   over the question counts them (its idf already makes them count
//!   little);
//! * **the speaker the query names**: a question about a person ("What did
//!   Maria ...", "What does the user prefer?") is usually answered by that
//!   person's own words, so text spoken by a role the query names scores
//!   [`SPEAKER_BOOST`] times more. Roles are matched by their words, so
//!   "user" matches "the user". In the full-text channel "I"/"my" name the
//!   user too, a weaker sign ([`FIRST_PERSON_BOOST`]): the asker is the
//!   user, but may be asking what the assistant said. The raw-messages
//!   channel takes a speaker
//!   named by its words only: a question in the first person is as often
//!   about what the assistant told the user ("What was the refund code you
//!   gave me?"), and there the boost put the user's turns before the
//!   answer;
//! * **time**: a question asking when prefers turns that mention a time
//!   ([`TIME_BOOST`]); a question naming a date or month prefers what was
//!   said then ([`DATE_BOOST`]);
//! * **neighbouring turns** (full-text channel): in a conversation the
//!   words of a question and of its answer are spread over adjacent turns
//!   ("How is the pottery class going?" / "Great, I made a bowl!"). Each
//!   message passes a decaying share ([`NEIGHBOUR_SHARE`] per turn, up to
//!   [`NEIGHBOUR_WINDOW`] turns) of its own score to the turns around it,
//!   and a small share ([`SESSION_SHARE`]) to its whole session, so an
//!   answer turn is found by the words of the turn it answers.
//!
//! Memories are then ranked by their own words and, above all, by the
//! conversation they came from ([`rank_memories`]); the raw-message
//! channel keeps the messages' own scores only ([`messages_with`]): plain
//! bm25 over the question, with only the corrections whose signal the
//! question states outright (a synonym at half weight, a speaker it names,
//! a date, a question asking when). Each channel is checked against its
//! plain counterpart on data unlike LoCoMo's (README, "Beyond LoCoMo").
//! Both put one memory per source message first ([`diversify`]), so
//! sibling statements of one message do not crowd out other evidence.
//!
//! Not here: how a query is split into words ([`crate::core::recall::query`]),
//! and how the channels are fused ([`crate::core::recall::fuse`]).

use crate::core::error::{Error, Result};
use crate::core::recall::directory::MEMORY_WEIGHTS;
use crate::core::recall::fuse::{self, Channel, Explanation, Ranking};
use crate::core::recall::places::{Place, Places};
use crate::core::recall::query::{Naming, TextQuery};
use crate::core::recall::scope::RecallScope;
use crate::core::text;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Weight of an expansion term (synonym) relative to the query's own words.
pub const EXPANSION_WEIGHT: f64 = 0.5;
/// Weight of the query's stop words ("now", "how many", "my") relative to
/// its content words. Plain bm25 searches every word of a question and its
/// idf already makes the common ones count little; dropping them lost
/// answers that share only such words with the question ("I'm up to
/// eighteen houseplants *now*"). A quarter measured best over the six
/// development sets, and no set fell (`docs/bench/generalization/function-words.txt`).
pub const FUNCTION_WEIGHT: f64 = 0.25;
/// Weight of the query's stop words in a memory's own score. A memory is
/// one short statement, where a shared "these days" or "now" says more
/// than in a long turn: without them the full-text channel fell below
/// plain bm25 over the memories on knowledge updates (0.607 against
/// 0.679; 0.679 with them at a half, and no set fell:
/// `docs/bench/generalization/plain-channels.txt`). They are scored for the
/// channel's candidates only, found by the content words and the
/// conversation: ranking every memory by a stop word took recall's p50 at
/// 100k memories from 13 to 22 ms.
pub const MEMORY_FUNCTION_WEIGHT: f64 = 0.5;
/// Weight of the query's stop words in the raw-messages channel: in full,
/// as plain bm25 over the question counts them.
pub const MESSAGE_FUNCTION_WEIGHT: f64 = 1.0;
/// Score factor for text spoken by a role the query names.
pub const SPEAKER_BOOST: f64 = 1.5;
/// Score factor, in the full-text channel, for the user's text when the
/// query names the user only by speaking in the first person ("What
/// editor do I use?"). A weaker sign than a name: a question in the first
/// person asks as often what the assistant told the user ("What was the
/// refund code you gave me?"). At [`SPEAKER_BOOST`] the channel fell below
/// plain bm25 over the same memories on support chats (0.656 against
/// 0.688) and at 1.0 fusion lost long answers (0.938 to 0.875); 1.2 keeps
/// the channel above it (0.719) and every other set's figures, and lifts
/// fusion with MiniLM on support chats from 0.750 to 0.812 (with hashing it
/// costs it 0.844 to 0.812: docs/bench/generalization/first-person.txt).
pub const FIRST_PERSON_BOOST: f64 = 1.2;

/// Share of a message's score passed to the adjacent turns of its
/// session; a turn `d` places away gets this share to the power `d`.
pub const NEIGHBOUR_SHARE: f64 = 0.5;
/// How many turns away, each side, a message's score reaches.
pub const NEIGHBOUR_WINDOW: usize = 3;
/// Share of the best score in a session that every scored turn of the
/// session gets (a session keeps to a few topics).
pub const SESSION_SHARE: f64 = 0.2;
/// Score factor, for a question asking when, of a turn that mentions a
/// time ("yesterday", "last May", "2023"): the answer needs one.
pub const TIME_BOOST: f64 = 1.3;
/// Score factor of a message dated within a period the query names
/// ("What did she recommend on February 7, 2022?").
pub const DATE_BOOST: f64 = 1.5;
/// Weight of a memory's own words relative to its conversation (its
/// source turn and the turns around it).
pub const OWN_SHARE: f64 = 0.25;

/// The role of the person the service remembers for
/// (`text::is_user_role` knows its other names).
pub const USER_ROLE: &str = "user";

/// Column weights of `bm25()` over `messages_fts` (role, content): a word
/// of the speaker's name counts less than one of what was said.
pub const MESSAGE_WEIGHTS: [f64; 2] = [0.3, 1.0];

/// A message's full-text score in two parts: for the query's words and,
/// weighed by [`EXPANSION_WEIGHT`], its expansions; and for its stop
/// words, unweighed (each channel weighs them its own way).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Words {
    pub content: f64,
    pub function: f64,
}

/// How far the channels rank, and whether they explain: what the scoring
/// reads of a recall's [`RecallScope`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Depth {
    /// How many memories (or turns) a channel ranks
    /// ([`RecallScope::channel_depth`]).
    pub channel: usize,
    /// How many turns in context the full-text channel takes its
    /// candidates from ([`RecallScope::fts_pool`]).
    pub pool: usize,
    /// Whether each hit carries its [`Explanation`].
    pub explain: bool,
}

impl Depth {
    pub fn of(scope: &RecallScope) -> Depth {
        Depth { channel: scope.channel_depth(), pool: scope.fts_pool(), explain: scope.explain }
    }
}

impl Naming {
    /// The score factor of text said by a speaker named so.
    pub fn boost(self) -> f64 {
        match self {
            Naming::Unnamed => 1.0,
            Naming::FirstPerson => FIRST_PERSON_BOOST,
            Naming::ByName => SPEAKER_BOOST,
        }
    }

    /// The boost's explanation node, when there is one.
    fn explain(self, what: &str) -> Option<Explanation> {
        match self {
            Naming::Unnamed => None,
            Naming::FirstPerson => Some(Explanation::new(
                FIRST_PERSON_BOOST,
                format!("× FIRST_PERSON_BOOST {FIRST_PERSON_BOOST}: {what} the user, and the query speaks in the first person"),
            )),
            Naming::ByName => Some(Explanation::new(SPEAKER_BOOST, format!("× SPEAKER_BOOST {SPEAKER_BOOST}: {what} a speaker the query names"))),
        }
    }
}

/// A memory found by its own words, as the full-text channel reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FoundMemory {
    /// Where it is stored.
    pub rowid: i64,
    /// Its event date, as stored.
    pub event_date: Option<String>,
    /// Its source message ids.
    pub sources: Vec<String>,
    /// Its first characters, read when the query asks when (a memory with
    /// no source message is boosted when it mentions a time).
    pub content: Option<String>,
}

/// Sorts scored ids best first; ties go to the larger (more recent) id.
fn best_first(scores: HashMap<String, f64>) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = scores.into_iter().collect();
    sort_best_first(&mut v);
    v
}

fn sort_best_first(v: &mut [(String, f64)]) {
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
}

/// The full-text channel's ranking of its candidates (see
/// `channels::fts_with`, which reads what it is given): `own` each
/// candidate's own bm25, `found` the memories found by their own words,
/// `spoken` each candidate's stored source messages with their speakers (a
/// memory with none is scored on its own, as one said by the user).
pub fn rank_memories(
    q: &TextQuery,
    turns: &TurnScores,
    candidates: &HashSet<String>,
    own: &HashMap<String, f64>,
    found: &HashMap<String, FoundMemory>,
    spoken: &SpokenSources,
    depth: Depth,
) -> Ranking {
    // Whether the query names each role (a handful per recall).
    let roles: HashSet<&str> = spoken.values().flatten().map(|(_, role)| role.as_str()).collect();
    let named_roles = q.named_among(roles.into_iter().chain([USER_ROLE]));
    let scorer =
        MemoryScorer { q, turns, turn_score: turns.context.iter().map(|(id, s)| (id.as_str(), *s)).collect(), named: &named_roles, explain: depth.explain };
    let mut scores: HashMap<String, f64> = HashMap::default();
    let mut why: HashMap<String, Explanation> = HashMap::default();
    for id in candidates {
        let own = own.get(id).copied().unwrap_or(0.0);
        let (score, node) = match spoken.get(id) {
            Some(srcs) => scorer.in_context(own, srcs, found.get(id).and_then(|f| f.event_date.as_deref()).and_then(crate::core::time::date_of)),
            None => scorer.on_its_own(own, found.get(id)),
        };
        scores.insert(id.clone(), score);
        if let Some(node) = node {
            why.insert(id.clone(), node);
        }
    }
    let ranked = best_first(scores);
    let best_score = ranked.first().map(|(_, s)| *s);
    let ids: Vec<String> = diversify(ranked, spoken).into_iter().take(depth.channel).collect();
    let mut ranking = Ranking::new(Channel::Fts, ids).by_evidence(|id| spoken.get(id).map(|s| s.iter().map(|(m, _)| m.clone()).collect()));
    ranking.best_score = best_score;
    if depth.explain {
        ranking.why = ranking.ids.iter().filter_map(|id| why.remove(id).map(|w| (id.clone(), w))).collect();
    }
    ranking
}

/// Each memory's source message ids.
pub type Sources = HashMap<String, Vec<String>>;
/// Each memory's source messages that are stored, with their speakers.
pub type SpokenSources = HashMap<String, Vec<(String, String)>>;

/// The full-text channel's candidates with their source message ids: the
/// memories found by their own words, and those citing the best
/// [`Depth::pool`] turns in context.
pub fn candidates_of(found: &HashMap<String, FoundMemory>, turns: &TurnScores, cites: &Citations, depth: Depth) -> (HashSet<String>, Sources) {
    let mut sources: Sources = found.iter().filter(|(_, f)| !f.sources.is_empty()).map(|(id, f)| (id.clone(), f.sources.clone())).collect();
    let mut candidates: HashSet<String> = found.keys().cloned().collect();
    for (mid, _) in turns.context.iter().take(depth.pool) {
        for id in cites.by_message.get(mid).into_iter().flatten() {
            candidates.insert(id.clone());
            if let Some(m) = cites.memories.get(id) {
                sources.entry(id.clone()).or_insert_with(|| m.sources.clone());
            }
        }
    }
    (candidates, sources)
}

/// How the full-text channel scores one memory (see [`rank_memories`]).
struct MemoryScorer<'a> {
    q: &'a TextQuery,
    turns: &'a TurnScores,
    /// Each turn's score in its conversation.
    turn_score: HashMap<&'a str, f64>,
    /// How the query names each speaker.
    named: &'a HashMap<&'a str, Naming>,
    explain: bool,
}

impl MemoryScorer<'_> {
    fn named(&self, role: &str) -> Naming {
        self.named.get(role).copied().unwrap_or_default()
    }

    fn own_node(own: f64) -> Explanation {
        Explanation::new(
            own,
            format!(
                "the memory's own bm25 over memories_fts (MEMORY_WEIGHTS content {}, key {}, queries {}; expansions × EXPANSION_WEIGHT {EXPANSION_WEIGHT}, stop words × MEMORY_FUNCTION_WEIGHT {MEMORY_FUNCTION_WEIGHT})",
                MEMORY_WEIGHTS[0], MEMORY_WEIGHTS[1], MEMORY_WEIGHTS[2]
            ),
        )
    }

    /// A memory with source messages: its best source turn in context, plus
    /// [`OWN_SHARE`] of its own words (times the strongest [`Naming::boost`]
    /// of its sources' speakers, and [`DATE_BOOST`] when the memory
    /// is dated within a period the query names: "last week" matches no
    /// words, so its turns score nothing in context).
    fn in_context(&self, own: f64, srcs: &[(String, String)], date: Option<chrono::NaiveDate>) -> (f64, Option<Explanation>) {
        // The best source turn in context (the first among equals).
        let best =
            srcs.iter().filter_map(|(mid, _)| self.turn_score.get(mid.as_str()).map(|s| (mid, *s))).fold(None, |b: Option<(&String, f64)>, (m, s)| match b {
                Some((_, bs)) if bs >= s => b,
                _ => Some((m, s)),
            });
        let context = best.map_or(0.0, |(_, s)| s).max(0.0);
        let naming = srcs.iter().map(|(_, role)| self.named(role)).max_by(|a, b| a.boost().total_cmp(&b.boost())).unwrap_or_default();
        let speaker = naming.boost();
        let dated = Boosts::of(self.q, Naming::Unnamed, false, date);
        let score = context + OWN_SHARE * own * speaker * dated.factor();
        if !self.explain {
            return (score, None);
        }
        let mut own_part =
            Explanation::new(OWN_SHARE * own * speaker * dated.factor(), format!("OWN_SHARE {OWN_SHARE} × own × speaker × date")).with(Self::own_node(own));
        if let Some(node) = naming.explain("a source message was said by") {
            own_part = own_part.with(node);
        }
        own_part = own_part.with_all(dated.explain());
        let context_part = match best.and_then(|(m, _)| self.turns.parts.get(m.as_str()).map(|p| (m, p))) {
            Some((m, parts)) => parts.explain_in_context(m, context),
            None => Explanation::new(context, "no source message in context"),
        };
        (score, Some(Explanation::new(score, "its best source message in its conversation + OWN_SHARE × its own words").with(context_part).with(own_part)))
    }

    /// A memory without a source message (remembered, said by the user):
    /// its own words times the boosts.
    fn on_its_own(&self, own: f64, found: Option<&FoundMemory>) -> (f64, Option<Explanation>) {
        let content = found.and_then(|f| f.content.as_deref()).unwrap_or("");
        let date = found.and_then(|f| f.event_date.as_deref()).and_then(crate::core::time::date_of);
        let mentions_time = self.q.temporal && crate::core::recall::temporal::mentions_time(content);
        let boosts = Boosts::of(self.q, self.named(USER_ROLE), mentions_time, date);
        let score = own * boosts.factor();
        let node = self.explain.then(|| {
            Explanation::new(score, "no source message (remembered, said by the user): own × boosts").with(Self::own_node(own)).with_all(boosts.explain())
        });
        (score, node)
    }
}

/// The boosts the query's speaker, time and date give a text.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Boosts {
    /// How the query names its speaker ([`Naming::boost`]).
    pub speaker: Naming,
    /// The query asks when and the text mentions a time ([`TIME_BOOST`]).
    pub time: bool,
    /// Dated within a period the query names ([`DATE_BOOST`]).
    pub date: bool,
}

impl Boosts {
    /// The boosts of a text said by a speaker the query names (or not),
    /// that mentions a time (or not), dated `date`.
    fn of(q: &TextQuery, named: Naming, mentions_time: bool, date: Option<chrono::NaiveDate>) -> Boosts {
        Boosts { speaker: named, time: q.temporal && mentions_time, date: date.is_some_and(|d| q.periods.iter().any(|(a, b)| *a <= d && d <= *b)) }
    }

    /// Their product.
    pub fn factor(self) -> f64 {
        let mut f = self.speaker.boost();
        if self.time {
            f *= TIME_BOOST;
        }
        if self.date {
            f *= DATE_BOOST;
        }
        f
    }

    /// One node per boost that applies, naming its constant.
    pub fn explain(self) -> Vec<Explanation> {
        let mut out: Vec<Explanation> = self.speaker.explain("said by").into_iter().collect();
        if self.time {
            out.push(Explanation::new(TIME_BOOST, format!("× TIME_BOOST {TIME_BOOST}: the query asks when and the text mentions a time")));
        }
        if self.date {
            out.push(Explanation::new(DATE_BOOST, format!("× DATE_BOOST {DATE_BOOST}: dated within a period the query names")));
        }
        out
    }
}

/// What one turn's scores are made of: its own bm25, what its neighbours
/// passed it, its session's share, and its boosts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TurnParts {
    pub own: f64,
    /// Its own score as the raw-messages channel counts it (stop words in
    /// full), and that channel's boosts (a speaker named by name only).
    pub plain: f64,
    pub plain_boosts: Boosts,
    pub neighbours: f64,
    pub session: f64,
    pub boosts: Boosts,
}

impl TurnParts {
    fn own_node(&self) -> Explanation {
        Explanation::new(
            self.own,
            format!(
                "own bm25 over messages_fts (MESSAGE_WEIGHTS role {}, content {}; the analyzer's expansions × EXPANSION_WEIGHT {EXPANSION_WEIGHT}, stop words × FUNCTION_WEIGHT {FUNCTION_WEIGHT})",
                MESSAGE_WEIGHTS[0], MESSAGE_WEIGHTS[1]
            ),
        )
    }

    /// The turn `id` on its own: `own × boosts` (the messages channel).
    pub fn explain_plain(&self, id: &str) -> Explanation {
        Explanation::new(self.plain * self.plain_boosts.factor(), format!("message {id}: own × boosts"))
            .with(Explanation::new(
                self.plain,
                format!(
                    "own bm25 over messages_fts (MESSAGE_WEIGHTS role {}, content {}; expansions × EXPANSION_WEIGHT {EXPANSION_WEIGHT}, stop words × MESSAGE_FUNCTION_WEIGHT {MESSAGE_FUNCTION_WEIGHT})",
                    MESSAGE_WEIGHTS[0], MESSAGE_WEIGHTS[1]
                ),
            ))
            .with_all(self.plain_boosts.explain())
    }

    /// The turn `id` in its conversation: `(own + neighbours + session) ×
    /// boosts` (the full-text channel).
    pub fn explain_in_context(&self, id: &str, value: f64) -> Explanation {
        Explanation::new(value, format!("message {id} in its conversation: (own + neighbours + session) × boosts"))
            .with(self.own_node())
            .with(Explanation::new(
                self.neighbours,
                format!("neighbours: NEIGHBOUR_SHARE {NEIGHBOUR_SHARE}^d × the own score of each turn d ≤ NEIGHBOUR_WINDOW {NEIGHBOUR_WINDOW} places away in its session"),
            ))
            .with(Explanation::new(self.session, format!("session: SESSION_SHARE {SESSION_SHARE} × the best own score in its session")))
            .with_all(self.boosts.explain())
    }
}

/// Orders scored memories (best first) so that each source message is
/// represented once before any message is represented twice: a memory
/// whose source messages all stand in the ranking already waits until
/// every other memory has had its place. Sibling statements of one
/// message share their context; the first of them carries it, and the
/// places freed go to other evidence.
pub fn diversify(scored: Vec<(String, f64)>, sources: &HashMap<String, Vec<(String, String)>>) -> Vec<String> {
    let mut covered: HashSet<&str> = HashSet::default();
    let mut first = Vec::new();
    let mut later = Vec::new();
    for (id, _) in &scored {
        let srcs = sources.get(id).map(Vec::as_slice).unwrap_or(&[]);
        if srcs.is_empty() || srcs.iter().any(|(m, _)| !covered.contains(m.as_str())) {
            covered.extend(srcs.iter().map(|(m, _)| m.as_str()));
            first.push(id.clone());
        } else {
            later.push(id.clone());
        }
    }
    first.extend(later);
    first
}

/// A live memory citing one of the best turns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CitingMemory {
    /// Where it is stored.
    pub rowid: i64,
    /// Its source messages.
    pub sources: Vec<String>,
    /// Its content, read for memories citing one of the messages
    /// channel's turns (to order the memories of one message).
    pub content: Option<String>,
}

/// The live memories citing the best turns, read once per recall for both
/// full-text channels (`channels::citations`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Citations {
    /// Each cited message's citing memories, in id order.
    pub by_message: HashMap<String, Vec<String>>,
    pub memories: HashMap<String, CitingMemory>,
}

/// The key channel's ranking: `keys` in the order the analyzer ranked
/// them, `holders` each key's visible holders, newest first. Each of a
/// key's holders carries an equal share of the channel's weight
/// ([`fuse::key_share`]), so every holder is counted, but, as every
/// channel, it ranks at most [`Depth::channel`] of them, and a memory
/// holding two keys is ranked once, under the first. No evidence is set:
/// the channel reads the sources of the ranked holders only
/// (`channels::key`).
pub fn rank_key_holders(keys: &[&String], holders: &HashMap<String, Vec<String>>, depth: Depth) -> Ranking {
    let mut ranking = Ranking::new(Channel::Key, Vec::new());
    let mut ranked: HashSet<&str> = HashSet::default();
    for (n, k) in (1usize..).zip(keys) {
        let of_key = holders.get(k.as_str()).map(Vec::as_slice).unwrap_or_default();
        let (count, share) = (of_key.len(), fuse::key_share(of_key.len()));
        for id in of_key {
            if ranking.ids.len() >= depth.channel {
                break;
            }
            if !ranked.insert(id) {
                continue;
            }
            if depth.explain {
                let why = Explanation::new(
                    n as f64,
                    format!(
                        "holds the topic key \"{k}\", the analyzer's key {n} of {} (newest first within a key), one of {count} live holders sharing its weight",
                        keys.len()
                    ),
                );
                ranking.why.insert(id.clone(), why);
            }
            ranking.ids.push(id.clone());
            ranking.shares.push(share);
        }
    }
    ranking
}

/// Full-text scores of messages, best first, computed once per recall
/// for both full-text channels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnScores {
    /// The best [`RecallScope::channel_depth`] hits on their own, as the
    /// raw-messages channel scores them: each one's bm25 over every word of
    /// the question (expansions weighed less), boosted for a speaker named
    /// by name, a date or a time.
    pub plain: Vec<(String, f64)>,
    /// Each turn in its conversation: its own score, plus
    /// [`NEIGHBOUR_SHARE`]`^d` of the own score of each turn `d <=`
    /// [`NEIGHBOUR_WINDOW`] places away in the same session, plus
    /// [`SESSION_SHARE`] of the best own score in the session. The best
    /// [`RecallScope::fts_pool`] first, in order; every other turn in
    /// context after them, in no order (the full-text channel looks them
    /// up by id).
    pub context: Vec<(String, f64)>,
    /// What each turn in `context` is made of (with `explain` only).
    pub parts: HashMap<String, TurnParts>,
    /// The message rowid of each turn of `plain` and of `context`'s
    /// ordered head: `channels::citations` reads by it.
    pub rowids: HashMap<String, i64>,
    /// Whether a turn was hit by one of the query's words or their
    /// expansions, not by its stop words alone.
    pub worded: bool,
}

/// Scores messages by full text (see [`TurnScores`]). Both scores are
/// then multiplied by [`SPEAKER_BOOST`] when a speaker the query names
/// said the message (the turn in context by [`FIRST_PERSON_BOOST`] when
/// the query names the user by "I" alone), by [`TIME_BOOST`] when the query asks when and the
/// message mentions a time, and by [`DATE_BOOST`] when the message is
/// dated within a period the query names. `hits` are the messages'
/// own scores by rowid, `places` the hits' places and the turns within
/// [`NEIGHBOUR_WINDOW`] of them (`channels::score_turns` reads both).
pub fn turn_scores(q: &TextQuery, hits: HashMap<i64, Words>, places: &Places<'_>, depth: Depth) -> Result<TurnScores> {
    // Each hit with its own score, in rowid order (a hit that is not a
    // stored message has no place and is left out).
    let mut split: Vec<(u32, Words)> = hits.into_iter().filter_map(|(rowid, s)| places.by_rowid(rowid).map(|i| (i, s))).collect();
    split.sort_unstable_by_key(|&(i, _)| i);
    let worded = split.iter().any(|(_, w)| w.content > 0.0);
    let own: Vec<(u32, f64)> = split.iter().map(|&(i, w)| (i, w.content + FUNCTION_WEIGHT * w.function)).collect();
    let spread = Spread::of(&own, places)?;
    let (plain, plain_parts) = plain_scores(q, &split, places, depth.explain)?;
    let own_of: HashMap<u32, f64> = if depth.explain { own.into_iter().collect() } else { HashMap::default() };
    let (in_context, parts) = context_scores(q, spread, places, &own_of, &plain_parts, depth.explain)?;
    // Only the channels' depths are read in order, and only their turns
    // by rowid (`channels::citations`); every turn in context is looked up
    // by id.
    let mut rowids: HashMap<String, i64> = HashMap::default();
    let plain = Scored::best(plain, depth.channel, false, &mut rowids);
    let context = Scored::best(in_context, depth.pool, true, &mut rowids);
    Ok(TurnScores { plain, context, parts, rowids, worded })
}

/// The place `i` of `places`.
fn place_of<'p>(places: &'p Places<'_>, i: u32) -> Result<Place<'p>> {
    places.place(i).ok_or_else(|| Error::storage("a turn without its place"))
}

/// The hits' own scores passed on: each turn's own score plus what its
/// neighbours passed it ([`NEIGHBOUR_SHARE`]`^d`, up to
/// [`NEIGHBOUR_WINDOW`] places away), and each session's best own score.
struct Spread {
    context: HashMap<u32, f64>,
    session_best: HashMap<u32, f64>,
}

impl Spread {
    fn of(own: &[(u32, f64)], places: &Places<'_>) -> Result<Spread> {
        let mut context: HashMap<u32, f64> = HashMap::default();
        let mut session_best: HashMap<u32, f64> = HashMap::default();
        for &(i, score) in own {
            *context.entry(i).or_insert(0.0) += score;
            let t = place_of(places, i)?;
            let best = session_best.entry(t.session).or_insert(0.0);
            *best = best.max(score);
            for d in 1..=NEIGHBOUR_WINDOW as i64 {
                // A position past the ends of i64 names no turn.
                for position in [t.position.checked_sub(d), t.position.checked_add(d)].into_iter().flatten() {
                    if let Some(j) = places.at(t.session, position) {
                        *context.entry(j).or_insert(0.0) += NEIGHBOUR_SHARE.powi(d as i32) * score;
                    }
                }
            }
        }
        Ok(Spread { context, session_best })
    }
}

/// What a hit's plain score and boosts were (with `explain` only).
type PlainParts = HashMap<u32, (f64, Boosts)>;

/// The raw-messages channel's scores of the hits: stop words in full, a
/// speaker named by name only.
fn plain_scores<'p>(q: &TextQuery, split: &[(u32, Words)], places: &'p Places<'_>, explain: bool) -> Result<(Vec<Scored<'p>>, PlainParts)> {
    // Whether the query names each role met (a handful per recall).
    let mut by_name: HashMap<u32, Naming> = HashMap::default();
    let mut parts = PlainParts::default();
    let mut plain: Vec<Scored<'_>> = Vec::with_capacity(split.len());
    for &(i, w) in split {
        let t = place_of(places, i)?;
        let named = *by_name.entry(t.role).or_insert_with(|| q.naming(places.role_name(t.role)).by_name_only());
        let boosts = Boosts::of(q, named, t.mentions_time, t.date);
        let s = w.content + MESSAGE_FUNCTION_WEIGHT * w.function;
        plain.push(Scored { id: t.id, score: s * boosts.factor(), rowid: t.rowid });
        if explain {
            parts.insert(i, (s, boosts));
        }
    }
    Ok((plain, parts))
}

/// The full-text channel's scores of every turn in context: `(own +
/// neighbours + session) × boosts`, and with `explain` what each is made
/// of.
fn context_scores<'p>(
    q: &TextQuery,
    spread: Spread,
    places: &'p Places<'_>,
    own_of: &HashMap<u32, f64>,
    plain_parts: &PlainParts,
    explain: bool,
) -> Result<(Vec<Scored<'p>>, HashMap<String, TurnParts>)> {
    // Whether the query names each role met (a handful per recall).
    let mut named: HashMap<u32, Naming> = HashMap::default();
    let mut in_context: Vec<Scored<'_>> = Vec::with_capacity(spread.context.len());
    let mut parts: HashMap<String, TurnParts> = HashMap::default();
    for (i, c) in spread.context {
        let t = place_of(places, i)?;
        // Every turn in context shares a session with a hit, which set
        // the session's best.
        let session = SESSION_SHARE * spread.session_best.get(&t.session).copied().unwrap_or(0.0);
        let naming = *named.entry(t.role).or_insert_with(|| q.naming(places.role_name(t.role)));
        let boosts = Boosts::of(q, naming, t.mentions_time, t.date);
        in_context.push(Scored { id: t.id, score: (c + session) * boosts.factor(), rowid: t.rowid });
        if explain {
            let own = own_of.get(&i).copied().unwrap_or(0.0);
            let (plain, plain_boosts) = plain_parts.get(&i).copied().unwrap_or_default();
            parts.insert(t.id.to_string(), TurnParts { own, plain, plain_boosts, neighbours: c - own, session, boosts });
        }
    }
    Ok((in_context, parts))
}

/// A scored turn, its id borrowed from its place while the scores are
/// ranked (one id string is made for each turn kept, not one per turn
/// and per map).
struct Scored<'a> {
    id: &'a str,
    score: f64,
    rowid: i64,
}

impl Scored<'_> {
    /// The best `ordered` of `scored`, best first (ties by id, as
    /// [`sort_best_first`]), with their rowids put in `rowids`; then, with
    /// `rest`, the others in no order. In place of a full sort: a large
    /// profile's pools hold thousands of turns, of which the channels read
    /// about a hundred in order.
    fn best(mut scored: Vec<Scored<'_>>, ordered: usize, rest: bool, rowids: &mut HashMap<String, i64>) -> Vec<(String, f64)> {
        let cmp = |a: &Scored<'_>, b: &Scored<'_>| b.score.total_cmp(&a.score).then_with(|| b.id.cmp(a.id));
        let head = ordered.min(scored.len());
        if head < scored.len() {
            scored.select_nth_unstable_by(head, cmp);
        }
        let (first, _) = scored.split_at_mut(head);
        first.sort_unstable_by(cmp);
        for s in first.iter() {
            rowids.insert(s.id.to_string(), s.rowid);
        }
        let kept = if rest { scored.len() } else { head };
        scored.into_iter().take(kept).map(|s| (s.id.to_string(), s.score)).collect()
    }
}

/// 3. FTS5 over raw messages (the safety net for what extraction lost):
///    messages ranked by their own bm25 over every word of the question
///    (expansions weighed less, speakers named by name, dates and times
///    boosted), each of the best [`Depth::channel`] standing for
///    the memories that cite it, all at the message's rank: first the one
///    sharing most words with the query, the others after every message
///    has had its turn. Also returns the ranked message ids.
pub fn messages_with(q: &TextQuery, turns: &TurnScores, cites: &Citations, depth: Depth) -> (Ranking, Vec<String>) {
    let explain = depth.explain;
    let message_ids: Vec<String> = turns.plain.iter().take(depth.channel).map(|(id, _)| id.clone()).collect();
    let wanted = Overlap::new(&q.primary);
    let overlap = |id: &str| cites.memories.get(id).and_then(|m| m.content.as_deref()).map_or(0, |c| wanted.count(c));
    let mut ranking = Ranking::new(Channel::Messages, Vec::new());
    let mut seen = HashSet::default();
    let mut rest: Vec<(String, usize)> = Vec::new();
    for (rank, mid) in (1usize..).zip(message_ids.iter()) {
        let mut mine: Vec<&String> = cites.by_message.get(mid).into_iter().flatten().filter(|id| !seen.contains(*id)).collect();
        if mine.len() > 1 {
            mine.sort_by_cached_key(|id| (std::cmp::Reverse(overlap(id)), *id));
        }
        for (j, id) in mine.into_iter().enumerate() {
            seen.insert(id.clone());
            if explain {
                let parts = turns.parts.get(mid.as_str()).copied().unwrap_or_default();
                let place = if j == 0 { "first of its memories (most of the query's words)" } else { "after every message's first memory" };
                let node = Explanation::new(rank as f64, format!("cites message {mid}, ranked {rank} among messages by its own score; {place}"))
                    .with(parts.explain_plain(mid));
                ranking.why.insert(id.clone(), node);
            }
            if j == 0 {
                ranking.ids.push(id.clone());
                ranking.ranks.push(rank);
            } else {
                rest.push((id.clone(), rank));
            }
        }
    }
    let base = message_ids.len();
    for (id, rank) in rest {
        ranking.ids.push(id);
        ranking.ranks.push(base.saturating_add(rank));
    }
    (ranking, message_ids)
}

/// The first two bytes of a word, if it has two.
fn prefix(w: &str) -> Option<[u8; 2]> {
    match w.as_bytes() {
        [a, b, ..] => Some([*a, *b]),
        _ => None,
    }
}

/// Counts how many of the query's own words (by stem) a text has, both
/// read as the full-text indexes read them ([`text::index_form`]: a run of
/// Chinese, Japanese or Korean letters as its pairs of letters).
struct Overlap {
    wanted: HashSet<String>,
    /// The first two bytes of each wanted stem: [`text::stem`] keeps a
    /// word's first three letters, so a word starting otherwise cannot
    /// match and is not stemmed.
    prefixes: HashSet<[u8; 2]>,
}

impl Overlap {
    fn new(words: &[String]) -> Overlap {
        let wanted: HashSet<String> = words.iter().flat_map(|t| text::stems(&text::index_form(t))).collect();
        let prefixes = wanted.iter().filter_map(|w| prefix(w)).collect();
        Overlap { wanted, prefixes }
    }

    fn count(&self, content: &str) -> usize {
        let mut found: HashSet<&str> = HashSet::default();
        text::any_token(&text::index_form(content), |w| {
            // A word shorter than two bytes has no prefix and is stemmed.
            if text::is_stop(w) || prefix(w).is_some_and(|p| !self.prefixes.contains(&p)) {
                return false;
            }
            if let Some(hit) = self.wanted.get(&text::stem(w)) {
                found.insert(hit.as_str());
            }
            false
        });
        found.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::recall::places::{ReadMessage, ReadPlaces};

    fn day() -> chrono::NaiveDate {
        chrono::NaiveDate::from_ymd_opt(2026, 4, 20).unwrap()
    }

    /// A message of `session`, not dated.
    fn said(rowid: i64, id: &str, session: &'static str, position: i64, role: &'static str, mentions_time: bool) -> ReadMessage<'static> {
        ReadMessage { rowid, id: id.to_string(), session, position, role, date: None, mentions_time }
    }

    const DEPTH: Depth = Depth { channel: 10, pool: 10, explain: false };

    /// One session of turns `m0`..`m{n-1}` (rowids 1..=n), each said by
    /// `roles[i % roles.len()]`, and a turn `other` in a session of its own.
    fn session(n: i64, roles: &[&'static str]) -> ReadPlaces {
        let mut places = ReadPlaces::default();
        for i in 0..n {
            let role = roles[usize::try_from(i).unwrap() % roles.len()];
            places.push(said(i + 1, &format!("m{i}"), "s1", i, role, false));
        }
        places.push(said(n + 1, "other", "s2", 0, roles[0], false));
        places
    }

    fn hit(rowid: i64, content: f64, function: f64) -> HashMap<i64, Words> {
        [(rowid, Words { content, function })].into_iter().collect()
    }

    fn context_of(turns: &TurnScores) -> HashMap<&str, f64> {
        turns.context.iter().map(|(id, s)| (id.as_str(), *s)).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn test_a_hits_score_reaches_its_neighbours_by_distance_and_its_session_by_a_share() {
        let q = TextQuery::new("How is the pottery class going?", &[], day());
        let places = Places::Read(session(8, &["Ana"]));
        // m3 (rowid 4) is the only hit.
        let turns = turn_scores(&q, hit(4, 8.0, 0.0), &places, DEPTH).unwrap();
        let context = context_of(&turns);
        let session = SESSION_SHARE * 8.0;
        assert!(close(context["m3"], 8.0 + session), "{context:?}");
        for (d, (before, after)) in [(1, ("m2", "m4")), (2, ("m1", "m5")), (3, ("m0", "m6"))] {
            let expected = NEIGHBOUR_SHARE.powi(d) * 8.0 + session;
            assert!(close(context[before], expected) && close(context[after], expected), "{d} away: {context:?}");
        }
        assert!(!context.contains_key("m7"), "past NEIGHBOUR_WINDOW: {context:?}");
        assert!(!context.contains_key("other"), "another session: {context:?}");
        assert_eq!(turns.context[0].0, "m3", "the hit first");
        assert_eq!(turns.plain, vec![("m3".to_string(), 8.0)], "the raw-messages channel keeps the hit's own score only");
    }

    #[test]
    fn test_stop_words_count_a_share_in_context_and_in_full_on_their_own() {
        let q = TextQuery::new("What is my plan now?", &[], day());
        let places = Places::Read(session(1, &["Ana"]));
        let turns = turn_scores(&q, hit(1, 4.0, 2.0), &places, DEPTH).unwrap();
        let own = 4.0 + FUNCTION_WEIGHT * 2.0;
        assert!(close(context_of(&turns)["m0"], own * (1.0 + SESSION_SHARE)));
        assert!(close(turns.plain[0].1, 4.0 + MESSAGE_FUNCTION_WEIGHT * 2.0));
    }

    #[test]
    fn test_a_speaker_named_by_name_is_boosted_in_both_channels_and_the_first_person_in_context_only() {
        let q = TextQuery::new("What did I promise Maria?", &[], day());
        let mut places = ReadPlaces::default();
        places.push(said(1, "said-by-user", "s1", 0, "user", false));
        places.push(said(2, "said-by-maria", "s2", 0, "Maria", false));
        places.push(said(3, "said-by-ben", "s3", 0, "Ben", false));
        let hits = (1..=3).map(|rowid| (rowid, Words { content: 1.0, function: 0.0 })).collect();
        let turns = turn_scores(&q, hits, &Places::Read(places), DEPTH).unwrap();
        let context = context_of(&turns);
        let in_session = 1.0 + SESSION_SHARE;
        assert!(close(context["said-by-maria"], SPEAKER_BOOST * in_session), "{context:?}");
        assert!(close(context["said-by-user"], FIRST_PERSON_BOOST * in_session), "{context:?}");
        assert!(close(context["said-by-ben"], in_session), "{context:?}");
        let plain: HashMap<&str, f64> = turns.plain.iter().map(|(id, s)| (id.as_str(), *s)).collect();
        assert!(close(plain["said-by-maria"], SPEAKER_BOOST), "{plain:?}");
        assert!(close(plain["said-by-user"], 1.0), "the first person boosts no raw message: {plain:?}");
    }

    #[test]
    fn test_a_question_asking_when_boosts_a_turn_that_mentions_a_time() {
        let q = TextQuery::new("When did Ana finish the bowl?", &[], day());
        assert!(q.temporal);
        let mut places = ReadPlaces::default();
        places.push(said(1, "dated", "s1", 0, "Ben", true));
        places.push(said(2, "undated", "s2", 0, "Ben", false));
        let hits = (1..=2).map(|rowid| (rowid, Words { content: 1.0, function: 0.0 })).collect();
        let turns = turn_scores(&q, hits, &Places::Read(places), DEPTH).unwrap();
        let context = context_of(&turns);
        assert!(close(context["dated"], TIME_BOOST * context["undated"]), "{context:?}");
    }

    #[test]
    fn test_a_memory_scores_by_its_best_source_turn_plus_a_share_of_its_own_words() {
        let q = TextQuery::new("How is the pottery class going?", &[], day());
        let turns = turn_scores(&q, hit(4, 8.0, 0.0), &Places::Read(session(8, &["Ana"])), DEPTH).unwrap();
        let context = context_of(&turns);
        let cited = |m: &str| vec![(m.to_string(), "Ana".to_string())];
        // "near" cites the hit, "far" a turn three away with more of the
        // query's own words, "remembered" has no source message.
        let spoken: SpokenSources = [("near".to_string(), cited("m3")), ("far".to_string(), cited("m0"))].into_iter().collect();
        let own: HashMap<String, f64> = [("near", 2.0), ("far", 10.0), ("remembered", 6.0)].into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let candidates: HashSet<String> = own.keys().cloned().collect();
        let ranking = rank_memories(&q, &turns, &candidates, &own, &HashMap::default(), &spoken, DEPTH);
        assert_eq!(ranking.ids, vec!["near", "remembered", "far"]);
        assert!(close(ranking.best_score.unwrap(), context["m3"] + OWN_SHARE * 2.0));
        assert_eq!(rank_memories(&q, &turns, &candidates, &own, &HashMap::default(), &spoken, Depth { channel: 2, ..DEPTH }).ids.len(), 2);
    }

    #[test]
    fn test_key_holders_share_their_keys_weight_are_ranked_once_and_stop_at_the_depth() {
        let (a, b) = ("user.editor".to_string(), "user.home".to_string());
        let holders: HashMap<String, Vec<String>> = [(a.clone(), vec!["x1", "x2", "x3"]), (b.clone(), vec!["x2", "y1", "y2"])]
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().map(String::from).collect()))
            .collect();
        let ranking = rank_key_holders(&[&a, &b], &holders, Depth { channel: 4, ..DEPTH });
        assert_eq!(ranking.ids, vec!["x1", "x2", "x3", "y1"]);
        assert_eq!(ranking.shares, vec![fuse::key_share(3), fuse::key_share(3), fuse::key_share(3), fuse::key_share(3)]);
        let first_b = rank_key_holders(&[&b, &a], &holders, DEPTH);
        assert_eq!(first_b.ids, vec!["x2", "y1", "y2", "x1", "x3"]);
        assert_eq!(first_b.shares[3], fuse::key_share(3));
    }

    #[test]
    fn test_each_source_message_is_represented_once_before_any_twice() {
        let scored: Vec<(String, f64)> = [("a1", 9.0), ("a2", 8.0), ("b1", 7.0), ("r", 6.0), ("c1", 5.0)].iter().map(|(id, s)| (id.to_string(), *s)).collect();
        let src = |m: &str| vec![(m.to_string(), "Ana".to_string())];
        let sources: HashMap<String, Vec<(String, String)>> =
            [("a1", src("A")), ("a2", src("A")), ("b1", src("B")), ("c1", src("C"))].into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        assert_eq!(diversify(scored, &sources), vec!["a1", "b1", "r", "c1", "a2"]);
    }
}
