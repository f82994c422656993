//! The recall pipeline (SPEC.md section 4), as a list of calls:
//! analyze and embed concurrently, run the five channels, fuse, compute
//! temporal facts, synthesize.

pub mod channels;
pub mod crowding;
pub mod directory;
pub mod fuse;
pub mod parts;
pub mod places;
pub mod porter;
pub mod query;
pub mod scope;
pub mod score;
pub mod temporal;
pub mod text_index;
pub mod unicode61;

use crate::core::api::RecallRequest;
use crate::core::context::Profile;
use crate::core::error::Result;
use crate::core::model::{Memory, MemoryType};
use crate::core::provider::{QueryAnalysis, SynthesisInput};
use crate::core::recall::places::Source;
pub use crate::core::recall::scope::{Narrowing, RecallScope};
use crate::core::time::date_of;
use fuse::{Channel, Contribution, Explanation, Ranking};
use serde::{Deserialize, Serialize};

/// A ranked memory in a recall response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecallCandidate {
    #[schemars(with = "crate::core::wire::Id")]
    pub id: String,
    #[serde(rename = "type")]
    pub kind: MemoryType,
    pub summary: String,
    /// `null` for a memory remembered without a session.
    #[serde(with = "crate::core::wire::nullable_session")]
    #[schemars(with = "Option<crate::core::wire::SessionId>")]
    pub session_id: String,
    pub score: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_date: Option<String>,
    #[schemars(with = "Vec<crate::core::wire::Id>")]
    pub source_message_ids: Vec<String>,
    /// What the caller attached to the memory.
    #[serde(default, skip_serializing_if = "crate::core::filter::is_empty")]
    pub metadata: crate::core::model::Metadata,
    /// Present with `explain: true`: each channel's RRF contribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<Contribution>>,
    /// Present with `explain: true`: the score as a tree down to the
    /// formula (the fused score, each channel's contribution, what put the
    /// memory at its rank there and every boost, named by its constant),
    /// flattened in pre-order with each node's depth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Vec<fuse::ExplanationNode>>,
}

/// What `recall` returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "RecallResult")]
#[serde(rename_all = "camelCase")]
pub struct RecallResponse {
    pub result: String,
    /// Same as `result`; both names are in use.
    pub answer: String,
    pub count: usize,
    pub candidates: Vec<RecallCandidate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explain>,
    /// Notes on degraded channels or stages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<String>,
}

/// The explanation tree of a recall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Explain {
    pub analysis: QueryAnalysis,
    /// Every channel, with the ids it ranked (best first).
    pub channels: Vec<ChannelReport>,
    /// The RRF constant the channels were fused with (`fuse::Weights::k`).
    pub k: f64,
    pub temporal_facts: Vec<String>,
    pub reference_date: String,
    /// With a filter or `asOf`: how the channels learned which memories
    /// pass (walking their rankings, or reading every passing memory
    /// ahead) and the sample of the profile that chose it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narrowing: Option<scope::NarrowingReport>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelReport {
    pub channel: Channel,
    pub weight: f64,
    #[schemars(with = "Vec<crate::core::wire::Id>")]
    pub ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Cosine at or above which the HyDE embedding counts as the query's own.
pub const HYDE_SAME_AS_QUERY: f32 = 0.99;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let n = norm(a) * norm(b);
    if n == 0.0 {
        0.0
    } else {
        dot / n
    }
}

/// What the full-text channels search for: the query's words and the
/// analyzer's `terms`, in a profile whose speakers `src` knows (the names
/// of those it names who said little of the profile searched too:
/// [`query::NAME_SEARCH_SHARE`]). The user is a speaker of every
/// profile: a remembered memory is the user's ("The user lives in
/// Berlin"), so "the user" in a question names a speaker even where no
/// message was said, and is no search word that every such memory holds.
/// A profile with no messages has no speaker who said little of it.
pub fn text_query(sql: &dyn crate::core::ports::Sql, src: Source<'_>, query: &str, terms: &[String], reference: chrono::NaiveDate) -> Result<query::TextQuery> {
    let mut roles = src.speakers(sql)?;
    if !roles.iter().any(|r| crate::core::text::is_user_role(r)) {
        roles.to_mut().push(score::USER_ROLE.to_string());
    }
    let q = query::TextQuery::new(query, terms, reference).with_speakers(&roles);
    let named: Vec<&str> = roles.iter().map(String::as_str).filter(|r| q.names_speaker_by_name(r)).collect();
    if named.is_empty() {
        return Ok(q);
    }
    let (said, all) = src.said(sql, &named)?;
    let minor: Vec<&str> = named.into_iter().zip(said).filter(|(_, n)| all > 0 && *n as f64 <= query::NAME_SEARCH_SHARE * all as f64).map(|(r, _)| r).collect();
    Ok(if minor.is_empty() { q } else { q.searching_names_of(&roles, &minor) })
}

/// The channels' rankings and what each reported, with the notes of
/// whatever degraded on the way.
struct Gathered {
    rankings: Vec<Ranking>,
    reports: Vec<ChannelReport>,
    notes: Vec<String>,
    /// The weights the channels are fused with (reported beside them).
    weights: fuse::Weights,
}

impl Gathered {
    /// Records a channel's outcome: a failing channel is reported, not
    /// fatal.
    fn record(&mut self, channel: Channel, r: Result<Ranking>) {
        match r {
            Ok(r) => {
                self.reports.push(ChannelReport { channel, weight: self.weights.of(channel), ids: r.ids.clone(), error: None });
                self.rankings.push(r);
            }
            Err(e) => {
                self.notes.push(format!("channel {} failed: {e}", channel.name()));
                self.reports.push(ChannelReport { channel, weight: self.weights.of(channel), ids: vec![], error: Some(e.to_string()) });
            }
        }
    }
}

/// The recall pipeline (SPEC.md section 4): analyze, embed, the five
/// channels, fuse, temporal facts, synthesis.
pub async fn run(p: &Profile<'_>, req: RecallRequest) -> Result<RecallResponse> {
    run_in(p, RecallScope::new(&req, p.now)?.narrow(p.sql, Narrowing::Sampled)?).await
}

/// [`run`] in a scope already decided (a test's, to hold each way of
/// narrowing to the same answer).
pub async fn run_in(p: &Profile<'_>, scope: RecallScope) -> Result<RecallResponse> {
    let scope = scope.sized(p.store().texts_stored_about()?);
    let mut got = Gathered { rankings: Vec::new(), reports: Vec::new(), notes: Vec::new(), weights: fuse::Weights::new(p.embedder.kind()) };
    let analysis = analyze(p, &scope, &mut got.notes).await;
    let embeddings = embed(p, &scope, &analysis, &mut got.notes).await;
    let key = channels::key(p.sql, &analysis.keys, &scope);
    got.record(Channel::Key, key);
    text_channels(p, &scope, &analysis, &mut got);
    got.weights = got.weights.with_lexical_match(lexical_match(p, &scope, &got.rankings));
    vector_channels(p, &scope, embeddings.as_ref(), &mut got).await;
    let ranked = match fuse::shows_a_match(&got.rankings, p.embedder.match_floor()) {
        true => fuse_and_load(p, &scope, &got.rankings, got.weights)?,
        // Nothing matches by words or meaning: only memories dated in a
        // period the question names ("What did we do last week?"), else
        // no candidates and an empty answer (the published interface's
        // "an empty answer rather than hallucinating a response").
        false => dated_in_named_periods(fuse_and_load(p, &scope, &got.rankings, got.weights)?, &scope),
    };
    let computed = temporal_facts(&scope, &ranked);
    let answer = synthesize(p, &scope, &ranked, &computed, &mut got.notes).await;
    Ok(respond(scope, analysis, answer, ranked, computed, got))
}

/// 1. The reasoner's analysis of the query (terms, keys, HyDE); the raw
///    query's words when it fails.
async fn analyze(p: &Profile<'_>, scope: &RecallScope, notes: &mut Vec<String>) -> QueryAnalysis {
    match p.reasoner.analyze(&scope.query).await {
        Ok(a) => a,
        Err(e) => {
            notes.push(format!("query analysis failed, using the raw query: {e}"));
            QueryAnalysis { terms: crate::core::text::content_words(&scope.query), ..QueryAnalysis::default() }
        }
    }
}

/// 2. The query's and the HyDE statement's embeddings, in one batch;
///    `None` (the vector channels skipped) when the embedder fails.
async fn embed(p: &Profile<'_>, scope: &RecallScope, analysis: &QueryAnalysis, notes: &mut Vec<String>) -> Option<[Vec<f32>; 2]> {
    let hyde = if analysis.hyde.is_empty() { scope.query.clone() } else { analysis.hyde.clone() };
    match p.embedder.embed(&[scope.query.clone(), hyde]).await.map(<[Vec<f32>; 2]>::try_from) {
        Ok(Ok(v)) => Some(v),
        Ok(Err(_)) => {
            notes.push("embedder returned the wrong number of vectors; vector channels skipped".into());
            None
        }
        Err(e) => {
            notes.push(format!("embedder failed; vector channels skipped: {e}"));
            None
        }
    }
}

/// 3. The two full-text channels: one scoring of the messages and the
///    memories citing the best of them, from the directory when the
///    profile keeps one, else from SQLite (the same answers). The
///    directory is lent out only here: nothing awaits while it is.
fn text_channels(p: &Profile<'_>, scope: &RecallScope, analysis: &QueryAnalysis, got: &mut Gathered) {
    let text = places::with_source(p.sql, p.turns, |src| {
        let q = text_query(p.sql, src, &scope.query, &analysis.terms, scope.reference)?;
        let turns = channels::score_turns(p.sql, src, &q, scope)?;
        let cites = channels::citations(p.sql, &turns, scope)?;
        let fts = channels::fts_with(p.sql, src, &q, &turns, &cites, scope);
        let messages = score::messages_with(&q, &turns, &cites, score::Depth::of(scope)).0;
        // The words found nothing, on the turns or on the memories.
        let stop_words_only = fts.as_ref().map_or(!turns.worded && !q.about_a_speaker, |r| r.stop_words_only);
        Ok((fts, Ranking { stop_words_only, ..messages }))
    });
    match text {
        Ok((fts, messages)) => {
            got.record(Channel::Fts, fts);
            got.record(Channel::Messages, Ok(messages));
        }
        Err(e) => {
            got.record(Channel::Fts, Err(e.clone()));
            got.record(Channel::Messages, Err(e));
        }
    }
}

/// How well full text matched the query (`fuse::LexicalMatch`), which
/// the vector channels' weights lean by with a semantic embedder; `None`
/// when the full-text channel failed, and with a lexical embedder, whose
/// weights never lean. The profile's size is the scope's
/// ([`RecallScope::sized`]), read once per recall.
pub fn lexical_match(p: &Profile<'_>, scope: &RecallScope, rankings: &[Ranking]) -> Option<fuse::LexicalMatch> {
    if p.embedder.kind() == crate::core::ports::EmbeddingKind::Lexical {
        return None;
    }
    let fts = rankings.iter().find(|r| r.channel == Channel::Fts)?;
    Some(fuse::LexicalMatch { best: fts.best_score.unwrap_or(0.0), documents: scope.profile_texts })
}

/// 4. The two vector channels, in one call to the index. A HyDE statement
///    that embeds like the query itself would only repeat the direct
///    channel and count its evidence twice: the HyDE channel then reports
///    no hits. (The rule-based analyzer's "the {topic} is" embeds like the
///    topic words.)
async fn vector_channels(p: &Profile<'_>, scope: &RecallScope, embeddings: Option<&[Vec<f32>; 2]>, got: &mut Gathered) {
    let Some([direct, hyde]) = embeddings else {
        for channel in [Channel::Vector, Channel::Hyde] {
            got.record(channel, Err(crate::core::error::Error::provider("no query embedding")));
        }
        return;
    };
    // A HyDE vector as good as the query's, or weighed nothing, is not
    // searched.
    let hyde_repeats = got.weights.of(Channel::Hyde) == 0.0 || cosine(direct, hyde) >= HYDE_SAME_AS_QUERY;
    let mut asked = vec![(Channel::Vector, direct.clone())];
    if !hyde_repeats {
        asked.push((Channel::Hyde, hyde.clone()));
    }
    match channels::vectors(p.sql, p.index, &asked, scope).await {
        Ok(rankings) => {
            // One ranking per channel asked, in order.
            let mut rankings = rankings.into_iter();
            let missing = || crate::core::error::Error::provider("the vector index returned too few rankings");
            got.record(Channel::Vector, rankings.next().ok_or_else(missing));
            let hyde = if hyde_repeats { Ok(Ranking::new(Channel::Hyde, vec![])) } else { rankings.next().ok_or_else(missing) };
            got.record(Channel::Hyde, hyde);
        }
        Err(e) => {
            got.record(Channel::Vector, Err(e.clone()));
            got.record(Channel::Hyde, Err(e));
        }
    }
}

/// The fused candidates dated within a period the question names (none
/// when it names none).
fn dated_in_named_periods(ranked: Vec<(Memory, fuse::Fused, Option<Explanation>)>, scope: &RecallScope) -> Vec<(Memory, fuse::Fused, Option<Explanation>)> {
    let periods = temporal::periods_in(&scope.query, scope.reference);
    let within = |m: &Memory| m.event_date.as_deref().and_then(date_of).is_some_and(|d| periods.iter().any(|(a, b)| *a <= d && d <= *b));
    ranked.into_iter().filter(|(m, _, _)| within(m)).collect()
}

/// At most how many batches of `limit` fused hits are read: the first
/// always, the next ones only while crowding ([`crowding`]) has passed
/// memories over and places are left.
const MAX_BATCHES: usize = 4;

/// 5. Fusion of the rankings, the best `limit` read from the store with no
///    one message crowding out the rest, each with its explanation when
///    asked.
fn fuse_and_load(
    p: &Profile<'_>,
    scope: &RecallScope,
    rankings: &[Ranking],
    weights: fuse::Weights,
) -> Result<Vec<(Memory, fuse::Fused, Option<Explanation>)>> {
    let fused = fuse::fuse(rankings, weights);
    let store = p.store();
    let mut crowding = crowding::Crowding::default();
    let mut out = Vec::with_capacity(scope.limit);
    for batch in fused.chunks(scope.limit.max(1)).take(MAX_BATCHES) {
        let ids: Vec<String> = batch.iter().map(|f| f.id.clone()).collect();
        let mut by_id: std::collections::HashMap<String, Memory> = store.memories_by_ids(&ids)?.into_iter().map(|m| (m.id.clone(), m)).collect();
        for f in batch {
            if out.len() >= scope.limit {
                break;
            }
            if let Some(m) = by_id.remove(&f.id).filter(|m| crowding.admits(m)) {
                let why = scope.explain.then(|| fuse::explain(f, rankings, weights));
                out.push((m, f.clone(), why));
            }
        }
        if out.len() >= scope.limit {
            break;
        }
    }
    Ok(out)
}

/// 6. Date arithmetic over the dated candidates (never left to a model).
fn temporal_facts(scope: &RecallScope, ranked: &[(Memory, fuse::Fused, Option<Explanation>)]) -> temporal::Computed {
    let evidence: Vec<temporal::Dated> =
        ranked.iter().filter_map(|(m, _, _)| Some(temporal::Dated { label: m.summary.clone(), date: m.event_date.as_deref().and_then(date_of)? })).collect();
    temporal::compute(&scope.query, scope.reference, &evidence)
}

/// 7. The answer: the reasoner's synthesis, or the extractive answer when
///    it fails; empty when nothing was found.
async fn synthesize(
    p: &Profile<'_>,
    scope: &RecallScope,
    ranked: &[(Memory, fuse::Fused, Option<Explanation>)],
    computed: &temporal::Computed,
    notes: &mut Vec<String>,
) -> String {
    if ranked.is_empty() && computed.answer.is_none() {
        return String::new();
    }
    let input = SynthesisInput {
        query: scope.query.clone(),
        memories: ranked.iter().map(|(m, _, _)| m.clone()).collect(),
        temporal_facts: computed.facts.clone(),
        reference_date: scope.reference.format("%Y-%m-%d").to_string(),
        length: scope.length,
        computed_answer: computed.answer.clone(),
    };
    match p.reasoner.synthesize(&input).await {
        Ok(s) => s,
        Err(e) => {
            notes.push(format!("synthesis failed, answering extractively: {e}"));
            crate::core::synthesis::extractive(&input)
        }
    }
}

/// 8. The response record.
fn respond(
    scope: RecallScope,
    analysis: QueryAnalysis,
    answer: String,
    ranked: Vec<(Memory, fuse::Fused, Option<Explanation>)>,
    computed: temporal::Computed,
    got: Gathered,
) -> RecallResponse {
    let candidates: Vec<RecallCandidate> = ranked
        .into_iter()
        .map(|(m, f, explanation)| RecallCandidate {
            id: m.id,
            kind: m.kind,
            summary: m.summary,
            session_id: m.session_id,
            score: f.score,
            event_date: m.event_date,
            source_message_ids: m.source_message_ids,
            metadata: m.metadata,
            trace: scope.explain.then_some(f.trace),
            explanation: explanation.map(|e| e.flatten()),
        })
        .collect();
    RecallResponse {
        answer: answer.clone(),
        result: answer,
        count: candidates.len(),
        candidates,
        explain: scope.explain.then(|| Explain {
            analysis,
            channels: got.reports,
            k: got.weights.k(),
            temporal_facts: computed.facts,
            reference_date: scope.reference.format("%Y-%m-%d").to_string(),
            narrowing: scope.narrowing_report(),
        }),
        messages: got.notes,
    }
}
