//! The five retrieval channels. Each returns memory ids, best first.
//!
//! The two full-text channels share one scoring of the raw messages
//! ([`score_turns`]) with SQLite's `bm25()` (Porter stemming is the index's
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
//! The words of a speaker the query names ([`TextQuery::speakers`]: all
//! of a role's words, as for the speaker correction) are left out of the
//! full-text statements, unless they are all the query has: the speaker
//! correction above already
//! weighs who said a text, while as a search word a name matches nearly
//! everything that speaker ever said (a message has its speaker in the
//! `role` column, a memory's content opens with its speaker's name). In a
//! conversation of two that is half the profile, each row scored for a
//! word that ranks nothing (LoCoMo recall@10 is the same with and without
//! it, in each conversation; the statements cost about half as much).
//! That holds where the speaker says much of the profile: one who said at
//! most [`NAME_SEARCH_SHARE`] of its messages keeps the name as a search
//! word ([`TextQuery::searching_names_of`]), since there it tells one
//! conversation from the others.
//!
//! Memories are then ranked by their own words and, above all, by the
//! conversation they came from ([`fts_with`]); the raw-message channel keeps
//! the messages' own scores only ([`messages_with`]): plain bm25 over the
//! question, with only the corrections whose signal the question states
//! outright (a synonym at half weight, a speaker it names, a date, a
//! question asking when). Each channel is checked against its plain
//! counterpart on data unlike LoCoMo's (README, "Beyond LoCoMo"). Both put one memory per
//! source message first, so sibling statements of one message do not
//! crowd out other evidence.

use crate::core::error::{Error, Result};
use crate::core::ports::{Sql, SqlValue, VectorIndex};
use crate::core::recall::directory::MEMORY_WEIGHTS;
use crate::core::recall::fuse::{self, Channel, Explanation, Ranking};
use crate::core::recall::places::{quoted, Narrowed, Source};
use crate::core::recall::porter;
use crate::core::recall::scope::RecallScope;
use crate::core::store::{json_ids, json_param, json_rows, json_rows_paged};
use crate::core::text;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The channels' depths at the default thinking level (a recall's own are
/// its [`RecallScope`]'s).
pub use crate::core::recall::scope::{CHANNEL_DEPTH, FTS_POOL};
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

/// How a query names a speaker: by the speaker's words ("Maria", "the
/// user"), only by speaking in the first person (the user), or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Naming {
    #[default]
    Unnamed,
    FirstPerson,
    ByName,
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

    /// The naming as the raw-messages channel reads it: a speaker named
    /// by the speaker's words, and no other.
    pub fn by_name_only(self) -> Naming {
        match self {
            Naming::ByName => Naming::ByName,
            Naming::FirstPerson | Naming::Unnamed => Naming::Unnamed,
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
/// Most share of a profile's messages a speaker the query names by name
/// may have said for the name to be searched as a word (see the module
/// docs). In a profile of many conversations a name picks its own out:
/// with LoCoMo's five conversations in one profile, recall@10 rose from
/// 0.734 to 0.745, and beside 45,000 turns of other chats from 0.703 to
/// 0.719, each conversation alone unchanged (0.778). Where the speaker said
/// half the profile the name ranks nothing and costs much: at 100,000
/// memories of two speakers, recall's p50 went from 11 to 15 ms warm and
/// from 50 to 82 ms on SQLite alone (`docs/bench/generalization/names.txt`).
pub const NAME_SEARCH_SHARE: f64 = 0.25;

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

/// How much of a text recall reads when it needs the words (defined with
/// the directory, which reads as much of each message).
pub use crate::core::recall::directory::TEXT_READ_CHARS;

/// Words by which a question refers to its asker (the `user` role).
const FIRST_PERSON: &[&str] = &["i", "me", "my", "mine", "myself"];
/// The role of the person the service remembers for
/// (`text::is_user_role` knows its other names).
const USER_ROLE: &str = "user";

/// Most of the analyzer's keys the key channel looks up.
const MAX_KEYS_SEARCHED: usize = 20;

/// What the full-text channels search for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TextQuery {
    /// The query's own words: full weight.
    pub primary: Vec<String>,
    /// What the analyzer added (synonyms): [`EXPANSION_WEIGHT`].
    pub expansions: Vec<String>,
    /// The query's stop words ("now", "my", "how"): [`FUNCTION_WEIGHT`].
    pub function: Vec<String>,
    /// Every token of the query, stop words included (to match speakers).
    pub tokens: HashSet<String>,
    /// The query asks when something happened (or how long ago).
    pub temporal: bool,
    /// Periods the query names ("on May 7, 2023", "in August 2023").
    pub periods: Vec<(chrono::NaiveDate, chrono::NaiveDate)>,
    /// The words (lowercase tokens) of the profile's speakers this query
    /// names ([`TextQuery::names_speaker`]): not searched (see the module
    /// docs).
    pub speakers: HashSet<String>,
}

/// The word that reaches the other side of the Porter stemmer's `y`/`i`
/// split from a derived word: the stemmer turns a final `y` into `i`
/// ("deploy", "deployed" -> `deploi`) but strips a derivational suffix
/// after that step ("deployment", "employer" -> `deploy`, `employ`), so
/// the words of one family are indexed under two stems, and a question
/// about "deployments" missed texts that say "deployed". For a word whose
/// stem ends in such a `y`, that stem (a word itself, which stems to the
/// `i` form). Searched as an expansion: a form of the asker's word, not
/// the word.
///
/// Not done: the other way round ("deployed" finding "deployment"), which
/// would have to make up a derived word for every word ending in `y`
/// ("today", "key") and search it in vain.
fn other_stem_form(word: &str) -> Option<String> {
    let stem = porter_stem(word)?;
    let base = stem.strip_suffix('y')?;
    (porter_stem(&stem).as_deref() == Some(format!("{base}i").as_str())).then_some(stem)
}

/// `word` as the full-text index's Porter stemmer stems it.
fn porter_stem(word: &str) -> Option<String> {
    let mut b = word.as_bytes().to_vec();
    porter::stem(&mut b);
    String::from_utf8(b).ok()
}

impl TextQuery {
    /// Splits the analyzer's terms into the query's own words and
    /// expansions (by stem, so "preferences" counts as "preference").
    /// When the query has no content words, the analyzer's terms stand in.
    pub fn new(query: &str, terms: &[String], reference: chrono::NaiveDate) -> TextQuery {
        let own: HashSet<String> = text::content_words(query).iter().map(|w| text::stem(w)).collect();
        let mut primary: Vec<String> = Vec::new();
        let mut expansions: Vec<String> = Vec::new();
        for w in text::content_words(query) {
            if !primary.contains(&w) {
                primary.push(w);
            }
        }
        for t in terms {
            let t = t.trim().to_lowercase();
            if t.is_empty() || primary.contains(&t) || expansions.contains(&t) {
                continue;
            }
            let stems: Vec<String> = text::tokens(&t).iter().map(|w| text::stem(w)).collect();
            if !stems.is_empty() && stems.iter().all(|s| own.contains(s)) {
                continue; // an inflection of a word already searched
            }
            expansions.push(t);
        }
        let searched: HashSet<String> = primary.iter().chain(&expansions).filter_map(|w| porter_stem(w)).collect();
        for w in &primary {
            // Not one whose stem is searched already ("deployment deployed").
            if let Some(other) = other_stem_form(w).filter(|o| porter_stem(o).is_some_and(|s| !searched.contains(&s)) && !expansions.contains(o)) {
                expansions.push(other);
            }
        }
        if primary.is_empty() {
            primary = std::mem::take(&mut expansions);
        }
        let mut function: Vec<String> = Vec::new();
        for w in text::tokens(query) {
            if text::is_stop(&w) && !function.contains(&w) {
                function.push(w);
            }
        }
        TextQuery {
            primary,
            expansions,
            function,
            tokens: text::tokens(query).into_iter().collect(),
            temporal: crate::core::recall::temporal::detect(query).is_some(),
            periods: crate::core::recall::temporal::periods_in(query, reference),
            speakers: HashSet::default(),
        }
    }

    /// This query in a profile whose messages are spoken by `roles`: the
    /// words of the roles it names ("Maria", every word of "John Smith",
    /// "user" for a question in the first person) are kept apart.
    pub fn with_speakers(mut self, roles: &[String]) -> TextQuery {
        self.speakers = roles.iter().filter(|r| self.names_speaker(r)).flat_map(|r| text::tokens(r)).collect();
        self
    }

    /// This query with the names of `minor` (roles it names, each of
    /// whom said at most [`NAME_SEARCH_SHARE`] of the profile) searched
    /// as words again: only the words of the other speakers it names are
    /// left out.
    pub fn searching_names_of(mut self, roles: &[String], minor: &[&str]) -> TextQuery {
        self.speakers = roles.iter().filter(|r| self.names_speaker(r) && !minor.contains(&r.as_str())).flat_map(|r| text::tokens(r)).collect();
        self
    }

    /// Whether `term` is one word of a speaker the query names.
    fn names_a_speaker(&self, term: &str) -> bool {
        self.speakers.contains(term.trim())
    }

    /// [`TextQuery::naming`] of each distinct role of `roles`.
    pub fn named_among<'r>(&self, roles: impl Iterator<Item = &'r str>) -> HashMap<&'r str, Naming> {
        let mut out = HashMap::default();
        for r in roles {
            if !out.contains_key(r) {
                out.insert(r, self.naming(r));
            }
        }
        out
    }

    /// How the query names the speaker `role` ([`TextQuery::names_speaker`],
    /// told apart by how).
    pub fn naming(&self, role: &str) -> Naming {
        if self.names_speaker_by_name(role) {
            Naming::ByName
        } else if self.names_speaker(role) {
            Naming::FirstPerson
        } else {
            Naming::Unnamed
        }
    }

    /// Whether the query names the speaker `role`: every word of the role
    /// is in the query ("Maria", "the user"), or the role is the user and
    /// the query speaks in the first person.
    pub fn names_speaker(&self, role: &str) -> bool {
        self.names_speaker_by_name(role) || (crate::core::text::is_user_role(role) && FIRST_PERSON.iter().any(|p| self.tokens.contains(*p)))
    }

    /// Whether every word of the speaker `role` is in the query ("Maria",
    /// "the user"): the first person does not count.
    pub fn names_speaker_by_name(&self, role: &str) -> bool {
        let words = text::tokens(role);
        !words.is_empty() && words.iter().all(|w| self.tokens.contains(w))
    }
}

/// The terms as FTS5 phrases: letters and digits, words separated by one
/// space (so no term can be read as FTS syntax), empty ones left out.
pub fn phrases(terms: &[String]) -> Vec<String> {
    terms
        .iter()
        .map(|t| t.chars().map(|c| if c.is_alphanumeric() { c } else { ' ' }).collect::<String>())
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|t| !t.is_empty())
        .collect()
}

/// An FTS5 MATCH expression OR-ing the [`phrases`], each quoted. `None`
/// when there is nothing to search for.
pub fn match_expr(terms: &[String]) -> Option<String> {
    quoted(&phrases(terms))
}

/// The [`phrases`] of one side of a [`TextQuery`] (its own words or its
/// expansions) without the words naming a speaker (see the module docs),
/// unless those are all the terms there are.
fn query_phrases(q: &TextQuery, terms: &[String]) -> Vec<String> {
    let other: Vec<String> = terms.iter().filter(|t| !q.names_a_speaker(t)).cloned().collect();
    let p = phrases(&other);
    if p.is_empty() {
        phrases(terms)
    } else {
        p
    }
}

/// [`query_phrases`] as a MATCH expression.
#[cfg(test)]
fn query_expr(q: &TextQuery, terms: &[String]) -> Option<String> {
    quoted(&query_phrases(q, terms))
}

/// A memory found by full text: id, bm25, event date, source message ids
/// (JSON), content (when the query asks when), rowid.
struct MemoryHit(String, f64, Option<String>, Option<String>, Option<String>, i64);

/// Sorts scored ids best first; ties go to the larger (more recent) id.
fn best_first(scores: HashMap<String, f64>) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = scores.into_iter().collect();
    sort_best_first(&mut v);
    v
}

fn sort_best_first(v: &mut [(String, f64)]) {
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
}

/// A stored JSON list of ids (`memories.source_message_ids`).
fn id_list(v: Option<&str>) -> Result<Vec<String>> {
    json_ids(v, "source message ids")
}

/// A memory's row as [`memory_hits`] reads it: id, place in the best
/// list, event date, source message ids, content.
type PlacedRow = (String, usize, Option<String>, Option<String>, Option<String>);

/// The memories' own full-text scores for the query's words and, weighed
/// less, its expansions, summed per memory, with their columns: for each,
/// the best `2 x` [`FTS_POOL`] matches of any status by bm25, the live
/// ones among them kept, up to [`FTS_POOL`]. The best come from the
/// [`Source`] (the directory's memory index or SQLite's FTS5) and one
/// statement reads the memories' rows (their place in its list standing
/// for their score).
fn memory_hits(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, scope: &RecallScope) -> Result<(HashMap<String, f64>, HashMap<String, MemoryHit>)> {
    let (cond, mut extra) = scope.visible(4);
    extra.insert(0, SqlValue::Integer(q.temporal as i64));
    let mut scores: HashMap<String, f64> = HashMap::default();
    let mut rows: HashMap<String, MemoryHit> = HashMap::default();
    // The stop words count in the messages' scores only: in the memories'
    // own, at 100k memories, they cost most of a recall (their postings run
    // as long as the profile) for 0.002 of LoCoMo's recall@10.
    for (terms, weight) in [(&q.primary, 1.0), (&q.expansions, EXPANSION_WEIGHT)] {
        let phrases = query_phrases(q, terms);
        if phrases.is_empty() {
            continue;
        }
        let tested = |rowids: &[i64]| scope.passing_rowids(sql, rowids);
        let narrowed = match scope.ahead() {
            Some(ahead) => Some(Narrowed::Ahead(&ahead.rowids)),
            None => scope.narrowed().then_some(Narrowed::Tested(&tested)),
        };
        let best = src.memory_hits(sql, &phrases, MEMORY_WEIGHTS, scope.fts_pool().saturating_mul(2), narrowed)?;
        // The live rows among them, best first (their place in the list
        // stands for their score).
        let rowids: Vec<i64> = best.iter().map(|&(rowid, _)| rowid).collect();
        let mut params = vec![json_param(&rowids), SqlValue::Integer(scope.fts_pool() as i64)];
        params.extend(extra.iter().cloned());
        let placed: Vec<PlacedRow> = json_rows_paged(
            sql,
            &format!(
                "SELECT json_array(id, place, event_date, source_message_ids, content) AS r FROM ( \
                 SELECT m.id AS id, j.key AS place, m.event_date AS event_date, m.source_message_ids AS source_message_ids, \
                        CASE WHEN ?3 THEN substr(m.content, 1, {TEXT_READ_CHARS}) END AS content \
                 FROM json_each(?1) j CROSS JOIN memories m ON m.rowid = j.value WHERE {cond} ORDER BY j.key LIMIT ?2)"
            ),
            &params,
        )?;
        let hits = placed
            .into_iter()
            .filter_map(|(id, place, date, sources, content)| best.get(place).map(|&(rowid, s)| MemoryHit(id, s, date, sources, content, rowid)));
        for hit in hits {
            // bm25() is negative, lower is better.
            *scores.entry(hit.0.clone()).or_insert(0.0) += -hit.1 * weight;
            rows.entry(hit.0.clone()).or_insert(hit);
        }
    }
    Ok((scores, rows))
}

/// 1. FTS5 over memories, in their conversation. A memory scores by the
///    conversation it came from, its source message in context (see
///    [`score_turns`]), plus [`OWN_SHARE`] of its own bm25 (content weighs
///    most, then the key, then the search queries). A memory is one
///    statement; the turns around it say what it is about ("Yes, I
///    finished it last week!" answers "Did you finish the painting?"),
///    and its own words then tell it from its siblings. A memory without
///    a source message (remembered) is its own conversation, spoken by the
///    user: its own score counts in full, with the speaker, time and date
///    corrections applied to it. Ranked with one memory per source message
///    first (see [`diversify`]).
///
///    The memory's own bm25 ranks the best `2 x` [`FTS_POOL`] matches of
///    any status and keeps the live ones among them, up to [`FTS_POOL`]:
///    joining every match to its memory row before ranking would cost a
///    lookup per match.
pub fn fts_with(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, turns: &TurnScores, cites: &Citations, scope: &RecallScope) -> Result<Ranking> {
    let (mut own, columns) = memory_hits(sql, src, q, scope)?;
    let (candidates, sources) = candidates_of(&own, &columns, turns, cites, scope)?;
    add_function_words(sql, src, q, &candidates, &columns, cites, &mut own)?;
    let (sources, roles) = spoken(sql, src, sources)?;
    // Whether the query names each role (a handful per recall).
    let named_roles = q.named_among(roles.iter().map(String::as_str).chain([USER_ROLE]));
    let scorer =
        MemoryScorer { q, turns, turn_score: turns.context.iter().map(|(id, s)| (id.as_str(), *s)).collect(), named: &named_roles, explain: scope.explain };
    let mut scores: HashMap<String, f64> = HashMap::default();
    let mut why: HashMap<String, Explanation> = HashMap::default();
    for id in &candidates {
        let own = own.get(id).copied().unwrap_or(0.0);
        let (score, node) = match sources.get(id) {
            Some(srcs) => scorer.in_context(own, srcs, columns.get(id).and_then(|c| c.2.as_deref()).and_then(crate::core::time::date_of)),
            None => scorer.on_its_own(own, columns.get(id)),
        };
        scores.insert(id.clone(), score);
        if let Some(node) = node {
            why.insert(id.clone(), node);
        }
    }
    let ranked = best_first(scores);
    let best_score = ranked.first().map(|(_, s)| *s);
    let ids: Vec<String> = diversify(ranked, &sources).into_iter().take(scope.channel_depth()).collect();
    let mut ranking = Ranking::new(Channel::Fts, ids).by_evidence(|id| sources.get(id).map(|s| s.iter().map(|(m, _)| m.clone()).collect()));
    ranking.best_score = best_score;
    if scope.explain {
        ranking.why = ranking.ids.iter().filter_map(|id| why.remove(id).map(|w| (id.clone(), w))).collect();
    }
    Ok(ranking)
}

/// Each memory's source message ids.
type Sources = HashMap<String, Vec<String>>;
/// Each memory's source messages that are stored, with their speakers.
type SpokenSources = HashMap<String, Vec<(String, String)>>;

/// The full-text channel's candidates with their source message ids: the
/// memories found by their own words, and those citing the best
/// [`RecallScope::fts_pool`] turns in context.
fn candidates_of(
    own: &HashMap<String, f64>,
    columns: &HashMap<String, MemoryHit>,
    turns: &TurnScores,
    cites: &Citations,
    scope: &RecallScope,
) -> Result<(HashSet<String>, Sources)> {
    let mut sources: Sources = HashMap::default();
    for (id, c) in columns {
        let ids = id_list(c.3.as_deref())?;
        if !ids.is_empty() {
            sources.insert(id.clone(), ids);
        }
    }
    let mut candidates: HashSet<String> = own.keys().cloned().collect();
    for (mid, _) in turns.context.iter().take(scope.fts_pool()) {
        for id in cites.by_message.get(mid).into_iter().flatten() {
            candidates.insert(id.clone());
            if let Some(m) = cites.memories.get(id) {
                sources.entry(id.clone()).or_insert_with(|| m.sources.clone());
            }
        }
    }
    Ok((candidates, sources))
}

/// Each memory's sources that are stored messages, with their speakers
/// (a memory left with none is dropped), and the speakers met.
fn spoken(sql: &dyn Sql, src: Source<'_>, sources: Sources) -> Result<(SpokenSources, HashSet<String>)> {
    let roles = src.roles_of(sql, &sources.values().flatten().collect::<Vec<_>>())?;
    let spoken = sources
        .into_iter()
        .map(|(id, srcs)| (id, srcs.into_iter().filter_map(|m| roles.get(&m).map(|r| (m, r.clone()))).collect::<Vec<_>>()))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    Ok((spoken, roles.into_values().collect()))
}

/// How the full-text channel scores one memory (see [`fts_with`]).
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
    fn on_its_own(&self, own: f64, columns: Option<&MemoryHit>) -> (f64, Option<Explanation>) {
        let content = columns.and_then(|c| c.4.as_deref()).unwrap_or("");
        let date = columns.and_then(|c| c.2.as_deref()).and_then(crate::core::time::date_of);
        let mentions_time = self.q.temporal && crate::core::recall::temporal::mentions_time(content);
        let boosts = Boosts::of(self.q, self.named(USER_ROLE), mentions_time, date);
        let score = own * boosts.factor();
        let node = self.explain.then(|| {
            Explanation::new(score, "no source message (remembered, said by the user): own × boosts").with(Self::own_node(own)).with_all(boosts.explain())
        });
        (score, node)
    }
}

/// Adds to each candidate's own score its bm25 for the query's stop words
/// times [`MEMORY_FUNCTION_WEIGHT`], read for the candidates only (see
/// there).
fn add_function_words(
    sql: &dyn Sql,
    src: Source<'_>,
    q: &TextQuery,
    candidates: &HashSet<String>,
    columns: &HashMap<String, MemoryHit>,
    cites: &Citations,
    own: &mut HashMap<String, f64>,
) -> Result<()> {
    let phrases = phrases(&q.function);
    if phrases.is_empty() {
        return Ok(());
    }
    let mut ids: HashMap<i64, &String> = HashMap::default();
    for id in candidates {
        if let Some(rowid) = columns.get(id).map(|c| c.5).or_else(|| cites.memories.get(id).map(|m| m.rowid)) {
            ids.insert(rowid, id);
        }
    }
    let rowids: HashSet<i64> = ids.keys().copied().collect();
    for (rowid, bm25) in src.memory_scores(sql, &phrases, MEMORY_WEIGHTS, &rowids)? {
        if let Some(id) = ids.get(&rowid) {
            // bm25() is negative, lower is better.
            *own.entry((*id).clone()).or_insert(0.0) += -bm25 * MEMORY_FUNCTION_WEIGHT;
        }
    }
    Ok(())
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
/// full-text channels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Citations {
    /// Each cited message's citing memories, in id order.
    pub by_message: HashMap<String, Vec<String>>,
    pub memories: HashMap<String, CitingMemory>,
}

/// A citation as [`citations`] reads it: the message's place in the list
/// asked for, memory id, memory rowid, its source message ids (JSON), its
/// first characters.
type CitationRow = (usize, String, i64, Option<String>, Option<String>);

/// Reads the live memories citing the best [`CHANNEL_DEPTH`] turns on their
/// own (the messages channel) and the best [`FTS_POOL`] turns in context
/// (the full-text channel), in one statement, by the turns' rowids (the
/// messages' id index is not read). (`CROSS JOIN` keeps SQLite from
/// scanning every live memory by the status index: the few sources lead.)
pub fn citations(sql: &dyn Sql, turns: &TurnScores, scope: &RecallScope) -> Result<Citations> {
    // The messages channel's turns come first in the list, so `j.key`
    // (the place in it) tells whose content is needed for the overlap.
    let mut ids: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::default();
    for (id, _) in turns.plain.iter().take(scope.channel_depth()) {
        if seen.insert(id) {
            ids.push(id);
        }
    }
    let plain = ids.len();
    for (id, _) in turns.context.iter().take(scope.fts_pool()) {
        if seen.insert(id) {
            ids.push(id);
        }
    }
    let mut out = Citations::default();
    if ids.is_empty() {
        return Ok(out);
    }
    let rowids = ids
        .iter()
        .map(|id| turns.rowids.get(*id).copied().ok_or_else(|| crate::core::error::Error::storage(format!("scored turn {id} has no rowid"))))
        .collect::<Result<Vec<i64>>>()?;
    let (cond, extra) = scope.visible(3);
    let mut params = vec![json_param(&rowids), SqlValue::Integer(plain as i64)];
    params.extend(extra);
    let rows: Vec<CitationRow> = json_rows_paged(
        sql,
        &format!(
            "SELECT json_array(j.key, m.id, m.rowid, m.source_message_ids, \
                    CASE WHEN j.key < ?2 THEN substr(m.content, 1, {TEXT_READ_CHARS}) END) AS r \
             FROM json_each(?1) j CROSS JOIN citations s ON s.message_rowid = j.value \
             CROSS JOIN memories m ON m.id = s.memory_id WHERE {cond}"
        ),
        &params,
    )?;
    for (place, id, rowid, sources, content) in rows {
        let mid = ids.get(place).ok_or_else(|| crate::core::error::Error::storage("a citation of a turn not asked for"))?;
        let m = match out.memories.entry(id.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(CitingMemory { rowid, sources: id_list(sources.as_deref())?, content: None }),
        };
        if m.content.is_none() {
            m.content = content;
        }
        out.by_message.entry(mid.to_string()).or_default().push(id);
    }
    for ids in out.by_message.values_mut() {
        ids.sort();
    }
    Ok(out)
}

/// Channel 1 on its own (a stage alone): scores the messages itself.
pub fn fts(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, scope: &RecallScope) -> Result<Ranking> {
    let turns = score_turns(sql, src, q, scope)?;
    let cites = citations(sql, &turns, scope)?;
    fts_with(sql, src, q, &turns, &cites, scope)
}

/// Channel 3 on its own (see [`fts`]).
pub fn messages(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, scope: &RecallScope) -> Result<(Ranking, Vec<String>)> {
    let turns = score_turns(sql, src, q, scope)?;
    let cites = citations(sql, &turns, scope)?;
    Ok(messages_with(q, &turns, &cites, scope))
}

/// 2. Exact topic-key lookup, in the order the analyzer ranked the keys,
///    through the key index; live memories only unless asked. Each of a
///    key's visible holders carries an equal share of the channel's weight
///    ([`fuse::key_share`]), so every holder is counted, but, as every
///    channel, it ranks at most [`RecallScope::channel_depth`] of them
///    (newest first within a key) and reads only those ones' sources: an
///    agent's key said in two thousand sessions is counted, not ranked.
pub fn key(sql: &dyn Sql, keys: &[String], scope: &RecallScope) -> Result<Ranking> {
    let keys: Vec<&String> = keys.iter().take(MAX_KEYS_SEARCHED).collect();
    if keys.is_empty() {
        return Ok(Ranking::new(Channel::Key, vec![]));
    }
    let mut wanted = keys.clone();
    wanted.sort_unstable();
    wanted.dedup();
    let (cond, extra) = scope.visible_status(2);
    let mut params = vec![json_param(&wanted)];
    params.extend(extra);
    // Each key's visible holders, newest first, with their sources unread.
    let mut by_key: HashMap<String, Vec<(String, Option<String>)>> = HashMap::default();
    for r in sql.query(
        &format!(
            "SELECT m.key, m.id, m.source_message_ids FROM json_each(?1) j CROSS JOIN memories m ON m.key = j.value \
             WHERE {cond} ORDER BY m.id DESC"
        ),
        &params,
    )? {
        let (key, id, sources) = match r.as_slice() {
            [SqlValue::Text(k), SqlValue::Text(id), SqlValue::Text(sources)] => (k, id, Some(sources.clone())),
            [SqlValue::Text(k), SqlValue::Text(id), SqlValue::Null] => (k, id, None),
            _ => return Err(Error::storage("failed to read a key holder's key, id and sources")),
        };
        by_key.entry(key.clone()).or_default().push((id.clone(), sources));
    }
    if scope.filter.is_some() {
        // The filter is tested apart, over the holders: in the statement
        // above, an indexed filter field would draw the planner to the
        // wrong index.
        let holders: Vec<String> = by_key.values().flatten().map(|(id, _)| id.clone()).collect();
        let passing = scope.passing_ids(sql, &holders)?;
        by_key.values_mut().for_each(|h| h.retain(|(id, _)| passing.contains(id)));
    }
    let depth = scope.channel_depth();
    let mut ranking = Ranking::new(Channel::Key, Vec::new());
    let mut sources: HashMap<String, Vec<String>> = HashMap::default();
    for (n, k) in (1usize..).zip(&keys) {
        let holders = by_key.remove(k.as_str()).unwrap_or_default();
        let (count, share) = (holders.len(), fuse::key_share(holders.len()));
        for (id, source_ids) in holders {
            if ranking.ids.len() >= depth {
                break;
            }
            if sources.contains_key(&id) {
                continue;
            }
            sources.insert(id.clone(), id_list(source_ids.as_deref())?);
            if scope.explain {
                let why = Explanation::new(
                    n as f64,
                    format!(
                        "holds the topic key \"{k}\", the analyzer's key {n} of {} (newest first within a key), one of {count} live holders sharing its weight",
                        keys.len()
                    ),
                );
                ranking.why.insert(id.clone(), why);
            }
            ranking.ids.push(id);
            ranking.shares.push(share);
        }
    }
    Ok(ranking.by_evidence(|id| sources.get(id).cloned()))
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
    /// ordered head: [`citations`] reads by it.
    pub rowids: HashMap<String, i64>,
}

/// Scores messages by full text (see [`TurnScores`]). Both scores are
/// then multiplied by [`SPEAKER_BOOST`] when a speaker the query names
/// said the message (the turn in context by [`FIRST_PERSON_BOOST`] when
/// the query names the user by "I" alone), by [`TIME_BOOST`] when the query asks when and the
/// message mentions a time, and by [`DATE_BOOST`] when the message is
/// dated within a period the query names. The hits and the turns around
/// them come from `src` (the directory or SQLite: the same places).
pub fn score_turns(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, scope: &RecallScope) -> Result<TurnScores> {
    let explain = scope.explain;
    let hits = turn_hits(sql, src, q, scope)?;
    let rowids: Vec<i64> = hits.keys().copied().collect();
    // A turn's mention of a time counts for a question about one only
    // ([`Boosts::of`]).
    let places = src.places(sql, &rowids, NEIGHBOUR_WINDOW, q.temporal)?;
    // Each hit with its own score, in rowid order (a hit that is not a
    // stored message has no place and is left out).
    let mut split: Vec<(u32, Words)> = hits.into_iter().filter_map(|(rowid, s)| places.by_rowid(rowid).map(|i| (i, s))).collect();
    split.sort_unstable_by_key(|&(i, _)| i);
    let own: Vec<(u32, f64)> = split.iter().map(|&(i, w)| (i, w.content + FUNCTION_WEIGHT * w.function)).collect();
    let place = |i: u32| places.place(i).ok_or_else(|| crate::core::error::Error::storage("a turn without its place"));
    let mut context: HashMap<u32, f64> = HashMap::default();
    let mut session_best: HashMap<u32, f64> = HashMap::default();
    for &(i, score) in &own {
        *context.entry(i).or_insert(0.0) += score;
        let t = place(i)?;
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
    // Whether the query names each role met (a handful per recall).
    let mut named: HashMap<u32, Naming> = HashMap::default();
    let mut boosts_of = |t: &crate::core::recall::places::Place<'_>| {
        let named = *named.entry(t.role).or_insert_with(|| q.naming(places.role_name(t.role)));
        Boosts::of(q, named, t.mentions_time, t.date)
    };
    let own_of: HashMap<u32, f64> = if explain { own.iter().copied().collect() } else { HashMap::default() };
    // The raw-messages channel: stop words in full, a speaker named by
    // name only.
    let mut by_name: HashMap<u32, Naming> = HashMap::default();
    let mut plain_parts: HashMap<u32, (f64, Boosts)> = HashMap::default();
    let mut plain: Vec<Scored<'_>> = Vec::with_capacity(split.len());
    for &(i, w) in &split {
        let t = place(i)?;
        let named = *by_name.entry(t.role).or_insert_with(|| q.naming(places.role_name(t.role)).by_name_only());
        let boosts = Boosts::of(q, named, t.mentions_time, t.date);
        let s = w.content + MESSAGE_FUNCTION_WEIGHT * w.function;
        plain.push(Scored { id: t.id, score: s * boosts.factor(), rowid: t.rowid });
        if explain {
            plain_parts.insert(i, (s, boosts));
        }
    }
    let mut in_context: Vec<Scored<'_>> = Vec::with_capacity(context.len());
    let mut parts: HashMap<String, TurnParts> = HashMap::default();
    for (i, c) in context {
        let t = place(i)?;
        // Every turn in context shares a session with a hit, which set
        // the session's best.
        let session = SESSION_SHARE * session_best.get(&t.session).copied().unwrap_or(0.0);
        let boosts = boosts_of(&t);
        in_context.push(Scored { id: t.id, score: (c + session) * boosts.factor(), rowid: t.rowid });
        if explain {
            let own = own_of.get(&i).copied().unwrap_or(0.0);
            let (plain, plain_boosts) = plain_parts.get(&i).copied().unwrap_or_default();
            parts.insert(t.id.to_string(), TurnParts { own, plain, plain_boosts, neighbours: c - own, session, boosts });
        }
    }
    // Only the channels' depths are read in order, and only their turns
    // by rowid ([`citations`]); every turn in context is looked up by id.
    let mut rowids: HashMap<String, i64> = HashMap::default();
    let plain = Scored::best(plain, scope.channel_depth(), false, &mut rowids);
    let context = Scored::best(in_context, scope.fts_pool(), true, &mut rowids);
    Ok(TurnScores { plain, context, parts, rowids })
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

/// Column weights of `bm25()` over `messages_fts` (role, content): a word
/// of the speaker's name counts less than one of what was said.
const MESSAGE_WEIGHTS: [f64; 2] = [0.3, 1.0];

/// A message's full-text score in two parts: for the query's words and,
/// weighed by [`EXPANSION_WEIGHT`], its expansions; and for its stop
/// words, unweighed (each channel weighs them its own way).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Words {
    content: f64,
    function: f64,
}

/// The messages' full-text scores ([`Words`]): bm25 of the best
/// [`RecallScope::message_pool`] messages for the query's words, for its
/// expansions and for its stop words, summed per message (by rowid).
fn turn_hits(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, scope: &RecallScope) -> Result<HashMap<i64, Words>> {
    let mut scores: HashMap<i64, Words> = HashMap::default();
    // (terms, weight, whether they are the stop words)
    for (terms, weight, function) in [(&q.primary, 1.0, false), (&q.expansions, EXPANSION_WEIGHT, false), (&q.function, 1.0, true)] {
        let phrases = query_phrases(q, terms);
        if phrases.is_empty() {
            continue;
        }
        for (rowid, bm25) in src.message_hits(sql, &phrases, MESSAGE_WEIGHTS, scope.message_pool())? {
            // bm25() is negative, lower is better.
            let words = scores.entry(rowid).or_default();
            let part = if function { &mut words.function } else { &mut words.content };
            *part += -bm25 * weight;
        }
    }
    Ok(scores)
}

/// 3. FTS5 over raw messages (the safety net for what extraction lost):
///    messages ranked by their own bm25 over every word of the question
///    (expansions weighed less, speakers named by name, dates and times
///    boosted), each of the best [`CHANNEL_DEPTH`] standing for
///    the memories that cite it, all at the message's rank: first the one
///    sharing most words with the query, the others after every message
///    has had its turn. Also returns the ranked message ids.
pub fn messages_with(q: &TextQuery, turns: &TurnScores, cites: &Citations, scope: &RecallScope) -> (Ranking, Vec<String>) {
    let explain = scope.explain;
    let message_ids: Vec<String> = turns.plain.iter().take(scope.channel_depth()).map(|(id, _)| id.clone()).collect();
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

/// Counts how many of the query's own words (by stem) a text has.
struct Overlap {
    wanted: HashSet<String>,
    /// The first two bytes of each wanted stem: [`text::stem`] keeps a
    /// word's first three letters, so a word starting otherwise cannot
    /// match and is not stemmed.
    prefixes: HashSet<[u8; 2]>,
}

impl Overlap {
    fn new(words: &[String]) -> Overlap {
        let wanted: HashSet<String> = words.iter().flat_map(|t| text::stems(t)).collect();
        let prefixes = wanted.iter().filter_map(|w| prefix(w)).collect();
        Overlap { wanted, prefixes }
    }

    fn count(&self, content: &str) -> usize {
        let mut found: HashSet<&str> = HashSet::default();
        text::any_token(content, |w| {
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

/// 4 and 5. Vector search (direct or HyDE), filtered to live memories.
pub async fn vector(channel: Channel, sql: &dyn Sql, index: &dyn VectorIndex, embedding: &[f32], scope: &RecallScope) -> Result<Ranking> {
    let hits = index.query(embedding, scope.channel_depth()).await?;
    let ids: Vec<String> = hits.into_iter().map(|(id, _)| id).collect();
    Ok(Ranking::new(channel, keep_live(sql, ids, scope)?))
}

/// Channels 4 and 5 together: one call to the index for both embeddings
/// (the local index answers them in one pass), one filter to live
/// memories. A failure fails every channel asked.
pub async fn vectors(sql: &dyn Sql, index: &dyn VectorIndex, asked: &[(Channel, Vec<f32>)], scope: &RecallScope) -> Result<Vec<Ranking>> {
    let explain = scope.explain;
    let embeddings: Vec<Vec<f32>> = asked.iter().map(|(_, e)| e.clone()).collect();
    let hits = match scope.narrowed() {
        // Narrowed: the index ranks the passing memories only.
        true => {
            let passing = |ids: &[String]| scope.passing_ids(sql, ids);
            let only = crate::core::ports::IndexFilter { passing: &passing, ahead: scope.ahead().map(|p| &p.ids), filter: scope.filter.as_ref() };
            index.query_many_in(&embeddings, scope.channel_depth(), &only).await?
        }
        false => index.query_many(&embeddings, scope.channel_depth()).await?,
    };
    let all: Vec<String> = hits.iter().flatten().map(|(id, _)| id.clone()).collect::<HashSet<_>>().into_iter().collect();
    let live = live_sources(sql, &all, scope)?;
    Ok(asked
        .iter()
        .zip(hits)
        .map(|((channel, _), hits)| {
            let mut ranking = Ranking::new(*channel, Vec::new());
            for (id, cosine) in hits.into_iter().filter(|(id, _)| live.contains_key(id)) {
                // Best first: the first live hit's is the best.
                ranking.best_similarity.get_or_insert(cosine);
                if explain {
                    let what = if *channel == Channel::Hyde { "the analyzer's hypothetical answer (HyDE)" } else { "the query" };
                    ranking.why.insert(id.clone(), Explanation::new(f64::from(cosine), format!("cosine similarity to the embedding of {what}")));
                }
                ranking.ids.push(id);
            }
            ranking.by_evidence(|id| live.get(id).cloned())
        })
        .collect())
}

/// The live memories among `ids`, each with its source message ids (an
/// index may lag behind a forget until its job drains; recall must not).
pub fn live_sources(sql: &dyn Sql, ids: &[String], scope: &RecallScope) -> Result<HashMap<String, Vec<String>>> {
    if ids.is_empty() {
        return Ok(HashMap::default());
    }
    let (cond, extra) = scope.visible(2);
    let mut params = vec![json_param(ids)];
    params.extend(extra);
    let rows: Vec<(String, Option<String>)> = json_rows(
        sql,
        &format!(
            "SELECT json_group_array(json_array(m.id, m.source_message_ids)) FROM json_each(?1) j \
             CROSS JOIN memories m ON m.id = j.value WHERE {cond}"
        ),
        &params,
    )?;
    rows.into_iter().map(|(id, sources)| Ok((id, id_list(sources.as_deref())?))).collect()
}

/// Keeps the ids of live memories, in order (an index may lag behind a
/// forget until its job drains; recall must not).
pub fn keep_live(sql: &dyn Sql, ids: Vec<String>, scope: &RecallScope) -> Result<Vec<String>> {
    let live = live_sources(sql, &ids, scope)?;
    Ok(ids.into_iter().filter(|id| live.contains_key(id)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day() -> chrono::NaiveDate {
        chrono::NaiveDate::from_ymd_opt(2026, 4, 20).unwrap()
    }

    #[test]
    fn test_query_words_and_expansions_are_told_apart() {
        let terms: Vec<String> = ["package", "manager", "dependency", "prefer", "like", "managers"].iter().map(|s| s.to_string()).collect();
        let q = TextQuery::new("What package manager does the user prefer?", &terms, day());
        assert_eq!(q.primary, vec!["package", "manager", "user", "prefer"]);
        assert_eq!(q.expansions, vec!["dependency", "like"]);
    }

    #[test]
    fn test_a_derived_word_on_one_side_of_the_stemmers_y_split_also_searches_the_other() {
        let stem = |w: &str| porter_stem(w).unwrap();
        for (asked, said) in [("deployment", "deploy"), ("deployments", "deployed"), ("employer", "employ"), ("enjoyment", "enjoys")] {
            assert_ne!(stem(asked), stem(said), "the split this mends: {asked} / {said}");
            let other = other_stem_form(asked).unwrap_or_else(|| panic!("{asked} has another form"));
            assert_eq!(stem(&other), stem(said), "{asked} -> {other} reaches {said}");
        }
        for plain in ["manager", "deploy", "deployed", "today", "key", "happy", "city", "money", "ymca"] {
            assert_eq!(other_stem_form(plain), None, "{plain}: no made-up word is searched");
        }
        let q = TextQuery::new("Summarize recent deployment events", &[], day());
        assert!(q.expansions.contains(&"deploy".to_string()), "{:?}", q.expansions);
        assert!(!q.primary.contains(&"deploy".to_string()), "a form of the asker's word, weighed as an expansion");
        let both = TextQuery::new("which deployment was deployed", &[], day());
        assert!(both.expansions.is_empty(), "its stem is searched already: {:?}", both.expansions);
    }

    #[test]
    fn test_speakers_are_named_by_their_words_or_the_first_person() {
        let q = TextQuery::new("What did Maria's sister bake?", &[], day());
        assert!(q.names_speaker("Maria"));
        assert!(!q.names_speaker("John"));
        assert!(TextQuery::new("What editor do I use?", &[], day()).names_speaker("user"));
        assert!(TextQuery::new("What does the user prefer?", &[], day()).names_speaker("user"));
        assert!(!TextQuery::new("What does the team prefer?", &[], day()).names_speaker("user"));
    }

    #[test]
    fn test_each_source_message_is_represented_once_before_any_twice() {
        let scored: Vec<(String, f64)> = [("a1", 9.0), ("a2", 8.0), ("b1", 7.0), ("r", 6.0), ("c1", 5.0)].iter().map(|(id, s)| (id.to_string(), *s)).collect();
        let src = |m: &str| vec![(m.to_string(), "Ana".to_string())];
        let sources: HashMap<String, Vec<(String, String)>> =
            [("a1", src("A")), ("a2", src("A")), ("b1", src("B")), ("c1", src("C"))].into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        assert_eq!(diversify(scored, &sources), vec!["a1", "b1", "r", "c1", "a2"]);
    }

    #[test]
    fn test_a_speaker_name_is_searched_only_when_it_is_all_the_query_has() {
        let speakers = vec!["Maria".to_string(), "John Smith".to_string()];
        let q = TextQuery::new("What did Maria bake for John?", &[], day()).with_speakers(&speakers);
        assert_eq!(q.primary, vec!["maria", "bake", "john"]);
        // "John" alone does not name "John Smith": it stays a search word.
        assert_eq!(query_expr(&q, &q.primary).as_deref(), Some("\"bake\" OR \"john\""));
        let full = TextQuery::new("What did John Smith buy?", &[], day()).with_speakers(&speakers);
        assert_eq!(query_expr(&full, &full.primary).as_deref(), Some("\"buy\""));
        // Terms that clean up to nothing do not leave the side empty.
        let odd = TextQuery::new("What about Maria?", &[], day()).with_speakers(&speakers);
        assert_eq!(query_expr(&odd, &["maria".to_string(), "++".to_string()]).as_deref(), Some("\"maria\""));
        let alone = TextQuery::new("What about Maria?", &[], day()).with_speakers(&speakers);
        assert_eq!(query_expr(&alone, &alone.primary).as_deref(), Some("\"maria\""));
        // Without speakers (or for a name nobody speaks under) every word counts.
        let none = TextQuery::new("What did Maria bake for John?", &[], day());
        assert_eq!(query_expr(&none, &none.primary).as_deref(), Some("\"maria\" OR \"bake\" OR \"john\""));
    }

    #[test]
    fn test_a_minor_speakers_name_is_searched_again() {
        let speakers = vec!["Maria".to_string(), "Ben".to_string()];
        let q = TextQuery::new("What did Maria bake for Ben?", &[], day()).with_speakers(&speakers).searching_names_of(&speakers, &["Maria"]);
        assert_eq!(query_expr(&q, &q.primary).as_deref(), Some("\"maria\" OR \"bake\""));
    }

    #[test]
    fn test_match_expr_quotes_every_term() {
        assert_eq!(match_expr(&["a-b".into(), "c\"d".into(), " ".into()]).as_deref(), Some("\"a b\" OR \"c d\""));
    }
}
