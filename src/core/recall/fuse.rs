//! Weighted Reciprocal Rank Fusion, pure.
//!
//! `score(d) = Σ_c w_c / (K + rank_c(d))` over the channels `c` that
//! ranked `d` (ranks start at 1; a rank counts evidence, so the memories
//! of one source message share theirs: [`Ranking::by_evidence`]). Ties go
//! to the more recent memory (the larger id, since memory ids sort by
//! time). Every fused hit carries its trace: which channel ranked it
//! where and what that contributed, so the fused score is exactly the sum
//! of the trace's contributions. With `explain`, [`explain`] turns the
//! trace into an [`Explanation`] tree (as tantivy explains a hit): the
//! fused score, each channel's contribution by its formula, and under it
//! what put the memory at its rank in that channel, down to each boost
//! and its named constant.

use crate::core::ports::EmbeddingKind;
use serde::{Deserialize, Serialize};

/// The RRF constant with a lexical embedder: larger flattens the curve
/// between ranks.
///
/// 10, not the customary 60. K = 60 was chosen for fusing dozens of runs
/// of similar quality; with it, rank 1 is worth only 1.6 times rank 40
/// (61 vs 100), so three weak channels agreeing on a mediocre memory
/// outweigh the strongest channel's best hit. Here a few channels of
/// unequal strength are fused and the first hits of each are what
/// matter: with K = 10, rank 1 is worth twice rank 12 and five times
/// rank 45, while a memory found by several channels still gains.
pub const K: f64 = 10.0;

/// The RRF constant with a semantic embedder: steeper, so each channel's
/// first hits reach the first places. Full text and a sentence model's
/// vectors then find different evidence (full text is best on LoCoMo,
/// the query's vector on long-turn chats), and at K = 10 full text's
/// tenth hit (1 / 20) still outweighs the vector channel's first
/// (0.5 / 11), so a paraphrase that full text misses never reached the
/// first ten. At K = 3 the vector's first hit (0.5 / 4) weighs full
/// text's fifth (1 / 8). Swept with all-MiniLM-L6-v2
/// (docs/bench/generalization/rrf-k-sweep.txt; recall@10): K = 3 lifts
/// knowledge updates from 0.786 to 0.893, the vector channel's own, and
/// LoCoMo from 0.783 to 0.788, and changes no other style; K = 1 and 2
/// are no better, K = 20 worse. With the hashing embedder the channels
/// re-find the same evidence and the steeper curve costs LoCoMo 0.003,
/// so [`K`] stays there.
pub const SEMANTIC_K: f64 = 3.0;

/// The five channels, with their weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Channel {
    /// Exact topic-key lookup: the strongest signal.
    Key,
    /// FTS5 over memories (Porter), each in its conversation.
    Fts,
    /// Vector search with the HyDE statement's embedding.
    Hyde,
    /// Vector search with the query's embedding.
    Vector,
    /// FTS5 over raw messages alone: the safety net, weighted least.
    Messages,
}

impl Channel {
    pub const ALL: [Channel; 5] = [Channel::Key, Channel::Fts, Channel::Hyde, Channel::Vector, Channel::Messages];

    pub fn name(self) -> &'static str {
        match self {
            Channel::Key => "key",
            Channel::Fts => "fts",
            Channel::Hyde => "hyde",
            Channel::Vector => "vector",
            Channel::Messages => "messages",
        }
    }
}

// Weights, by signal strength (SPEC.md section 4: key matches most, raw
// messages least).

/// An exact topic-key match names the very attribute asked about.
pub const WEIGHT_KEY: f64 = 2.0;
/// Full text over memories in their conversation (see
/// [`crate::core::recall::channels::fts`]): the reference signal.
pub const WEIGHT_FTS: f64 = 1.0;
/// The vector channels with the local default embedder, which hashes
/// words and trigrams: it re-finds lexically what full text finds, with
/// less precision, and mainly helps with inflections and typos. The
/// query's vector weighs a quarter of full text. HyDE's weighs nothing:
/// its statement is the query rephrased by rules, so hashed it carries the
/// query's words again and no signal of its own (weighed 0.25, it cost
/// LoCoMo 0.004 and support chats 0.062 of recall@10, and changed nothing
/// elsewhere: docs/bench/generalization/lexical-weights.txt); its search
/// is then not run.
pub const WEIGHT_HYDE: f64 = 0.0;
pub const WEIGHT_VECTOR: f64 = 0.25;
/// Raw messages alone, without their conversation: the safety net for
/// what extraction lost, weighted least, with either embedder. The channel
/// is plain bm25 over the turns, the same scores the full-text channel
/// reads in context, so it adds little of its own: at 0.05 fusion is at
/// or above 0.1's on all five development sets with the lexical embedder
/// (docs/bench/generalization/plain-channels.txt), and at or above 0.2's
/// with all-MiniLM-L6-v2 once ranks count evidence ([`Ranking::by_evidence`];
/// docs/bench/generalization/evidence-ranks.txt).
pub const WEIGHT_MESSAGES: f64 = 0.05;
/// The vector channels' weights with a semantic embedder (a sentence
/// model: Workers AI's, or any OpenAI-compatible one). Chosen with
/// all-MiniLM-L6-v2 over LoCoMo and the four development styles
/// (docs/bench/generalization/semantic-weights-sweep.txt): the query's
/// vector weighs half of full text, where it finds paraphrases full text
/// cannot (knowledge updates: 0.643 at 0.25, 0.714 at 0.5), while at a
/// full 1.0 it crowds out full text's exact hits (LoCoMo 0.769 -> 0.736,
/// coding sessions 0.938 -> 0.875). HyDE stays at 0.25: its statement is
/// the query rephrased by rules, so its vector is close to the query's.
pub const SEMANTIC_WEIGHT_HYDE: f64 = 0.25;
pub const SEMANTIC_WEIGHT_VECTOR: f64 = 0.5;

/// How well full text matched one query: the full-text channel's best
/// score in units of a rare word's idf, so that it reads the same in a
/// profile of a hundred messages and of a hundred thousand. BM25 gives a
/// word found in few of `N` texts an idf near `ln N`, so the best
/// memory's score divided by `ln N` counts, roughly, the query's
/// distinctive words it (and its conversation) share: near 0 when the
/// question paraphrases everything it could match. `N` is the profile's
/// messages, whose words score a memory in its conversation; in a
/// profile of remembered statements alone (no messages) its memories,
/// which then score on their own words.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LexicalMatch {
    /// The full-text channel's best score (0 when it found nothing).
    pub best: f64,
    /// The texts the score's idf counted (the `N` above).
    pub documents: u64,
}

/// Fewest documents [`LexicalMatch::strength`] divides by the log of:
/// ln 3 > 1, so a profile of one or two texts neither divides by zero nor
/// multiplies the score.
pub const MIN_STRENGTH_DOCUMENTS: u64 = 3;

impl LexicalMatch {
    /// `best / ln(documents)`, the documents counted as at least
    /// [`MIN_STRENGTH_DOCUMENTS`].
    pub fn strength(self) -> f64 {
        self.best / (self.counted_documents() as f64).ln()
    }

    /// The documents [`LexicalMatch::strength`] counts.
    pub fn counted_documents(self) -> u64 {
        self.documents.max(MIN_STRENGTH_DOCUMENTS)
    }
}

/// The strength of a full-text match ([`LexicalMatch::strength`]) from
/// which a semantic embedder's vector channels weigh as measured
/// ([`SEMANTIC_WEIGHT_VECTOR`], [`SEMANTIC_WEIGHT_HYDE`]); below it they
/// lean in ([`SEMANTIC_LEAN`]).
pub const LEXICAL_MATCH_FULL: f64 = 3.0;
/// How far a semantic embedder's vector channels lean in when full text
/// matched nothing: their weights times `1 + SEMANTIC_LEAN x max(0, 1 -
/// strength / LEXICAL_MATCH_FULL)`, so up to 7 times at no match and not
/// at all from [`LEXICAL_MATCH_FULL`] up.
///
/// Why: with a sentence model the vector channel is the best alone where
/// questions paraphrase their answers (knowledge updates 0.928 against
/// fusion's 0.891, long answers 0.950 against 0.934, over sixteen draws),
/// and full text is best where they share words (LoCoMo). A fixed weight
/// serves one or the other (the weight sweeps in
/// docs/bench/generalization/semantic-weights-sweep.txt and
/// draws-experiments.txt); how well the query's own words matched tells
/// the two apart per query. Chosen with all-MiniLM-L6-v2 over the sixteen
/// draws, checked on draws held out from the choice
/// (docs/bench/generalization/semantic-lean.txt). With the lexical
/// embedder the vectors re-find what full text found and never lean.
pub const SEMANTIC_LEAN: f64 = 6.0;

/// Each channel's weight, by what the profile's embedder captures: the
/// vector channels weigh what their vectors are worth beside full text,
/// and with a semantic embedder more when full text matched little.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Weights {
    pub embedding: EmbeddingKind,
    /// How well full text matched this query, once the text channels ran.
    pub lexical: Option<LexicalMatch>,
}

impl Weights {
    pub fn new(embedding: EmbeddingKind) -> Weights {
        Weights { embedding, lexical: None }
    }

    /// These weights for a query full text matched as `lexical` says.
    pub fn with_lexical_match(self, lexical: Option<LexicalMatch>) -> Weights {
        Weights { lexical, ..self }
    }

    /// The RRF constant: [`K`] or [`SEMANTIC_K`].
    pub fn k(self) -> f64 {
        match self.embedding {
            EmbeddingKind::Lexical => K,
            EmbeddingKind::Semantic => SEMANTIC_K,
        }
    }

    /// The constant the RRF constant is named by.
    fn k_name(self) -> &'static str {
        match self.embedding {
            EmbeddingKind::Lexical => "K",
            EmbeddingKind::Semantic => "SEMANTIC_K",
        }
    }

    /// The factor the vector channels' weights take for this query
    /// ([`SEMANTIC_LEAN`]): 1 with the lexical embedder or before the
    /// full-text channel ran.
    pub fn lean(self) -> f64 {
        match (self.embedding, self.lexical) {
            (EmbeddingKind::Semantic, Some(m)) => 1.0 + SEMANTIC_LEAN * (1.0 - m.strength() / LEXICAL_MATCH_FULL).max(0.0),
            _ => 1.0,
        }
    }

    /// The weight of `channel`.
    pub fn of(self, channel: Channel) -> f64 {
        self.base(channel) * if is_vector(channel) { self.lean() } else { 1.0 }
    }

    /// The weight of `channel` before the lean: its constant.
    fn base(self, channel: Channel) -> f64 {
        match (channel, self.embedding) {
            (Channel::Key, _) => WEIGHT_KEY,
            (Channel::Fts, _) => WEIGHT_FTS,
            (Channel::Hyde, EmbeddingKind::Lexical) => WEIGHT_HYDE,
            (Channel::Vector, EmbeddingKind::Lexical) => WEIGHT_VECTOR,
            (Channel::Hyde, EmbeddingKind::Semantic) => SEMANTIC_WEIGHT_HYDE,
            (Channel::Vector, EmbeddingKind::Semantic) => SEMANTIC_WEIGHT_VECTOR,
            (Channel::Messages, _) => WEIGHT_MESSAGES,
        }
    }

    /// The constant the weight of `channel` is named by.
    fn name(self, channel: Channel) -> &'static str {
        match (channel, self.embedding) {
            (Channel::Key, _) => "WEIGHT_KEY",
            (Channel::Fts, _) => "WEIGHT_FTS",
            (Channel::Hyde, EmbeddingKind::Lexical) => "WEIGHT_HYDE",
            (Channel::Vector, EmbeddingKind::Lexical) => "WEIGHT_VECTOR",
            (Channel::Hyde, EmbeddingKind::Semantic) => "SEMANTIC_WEIGHT_HYDE",
            (Channel::Vector, EmbeddingKind::Semantic) => "SEMANTIC_WEIGHT_VECTOR",
            (Channel::Messages, _) => "WEIGHT_MESSAGES",
        }
    }

    /// Why the vector channels lean as they do for this query, down to
    /// the full-text match; `None` when they do not lean.
    fn explain_lean(self) -> Option<Explanation> {
        let lean = self.lean();
        let m = self.lexical.filter(|_| lean != 1.0)?;
        Some(
            Explanation::new(
                lean,
                format!("lean: 1 + SEMANTIC_LEAN {SEMANTIC_LEAN} x max(0, 1 - full-text match {:.3} / LEXICAL_MATCH_FULL {LEXICAL_MATCH_FULL})", m.strength()),
            )
            .with(Explanation::new(
                m.strength(),
                format!("full-text match: the full-text channel's best score {:.3} / ln({} documents)", m.best, m.counted_documents()),
            )),
        )
    }
}

/// Whether `channel` searches vectors (and leans with [`Weights::lean`]).
fn is_vector(channel: Channel) -> bool {
    matches!(channel, Channel::Vector | Channel::Hyde)
}

/// Why a score is what it is: a value, the formula or fact that gives it
/// (naming its constants), and the values it is computed from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub value: f64,
    pub description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Explanation>,
}

impl Explanation {
    pub fn new(value: f64, description: impl Into<String>) -> Explanation {
        Explanation { value, description: description.into(), details: Vec::new() }
    }

    pub fn with(mut self, detail: Explanation) -> Explanation {
        self.details.push(detail);
        self
    }

    pub fn with_all(mut self, details: impl IntoIterator<Item = Explanation>) -> Explanation {
        self.details.extend(details);
        self
    }

    /// The tree as a list in pre-order, each node with its depth (the root
    /// at 0): how the response carries it (WIT has no recursive types).
    pub fn flatten(&self) -> Vec<ExplanationNode> {
        fn walk(e: &Explanation, depth: u32, out: &mut Vec<ExplanationNode>) {
            out.push(ExplanationNode { depth, value: e.value, description: e.description.clone() });
            for d in &e.details {
                walk(d, depth.saturating_add(1), out);
            }
        }
        let mut out = Vec::new();
        walk(self, 0, &mut out);
        out
    }
}

/// One node of a flattened [`Explanation`]: its children follow it, one
/// level deeper, before its next sibling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExplanationNode {
    pub depth: u32,
    pub value: f64,
    pub description: String,
}

/// One channel's ranking: ids best first.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranking {
    pub channel: Channel,
    pub ids: Vec<String>,
    /// The rank of each id (1-based), when a channel ranks groups rather
    /// than single memories: the messages channel ranks messages, and every
    /// memory citing a message shares that message's rank. Empty: the rank
    /// is the position in `ids`.
    pub ranks: Vec<usize>,
    /// The share of the channel's weight each id carries, when a channel
    /// splits one signal among several memories: a topic key held by `h`
    /// live memories gives each `1 / h` ([`key_share`]). Empty: every id
    /// carries the whole weight.
    pub shares: Vec<f64>,
    /// With `explain`: why each id holds its place in this channel.
    pub why: rustc_hash::FxHashMap<String, Explanation>,
    /// A vector channel's best cosine similarity (its first id's), which
    /// [`shows_a_match`] weighs; `None` for the other channels.
    pub best_similarity: Option<f32>,
    /// The full-text channel's best score (its first id's), which
    /// [`LexicalMatch`] reads; `None` for the other channels.
    pub best_score: Option<f64>,
    /// A full-text channel whose hits share only stop words with the
    /// query ("the", "is") of a query that names no speaker: no text in
    /// scope holds one of its words or their expansions, and it asks
    /// about no one who said something. Ranked all the same, but no match
    /// for [`shows_a_match`].
    pub stop_words_only: bool,
}

impl Ranking {
    /// A ranking by position.
    pub fn new(channel: Channel, ids: Vec<String>) -> Ranking {
        Ranking {
            channel,
            ids,
            ranks: Vec::new(),
            shares: Vec::new(),
            why: Default::default(),
            best_similarity: None,
            best_score: None,
            stop_words_only: false,
        }
    }

    /// Ranks by evidence: memories drawn from the same source messages
    /// share one rank, and a rank counts the distinct sets of source
    /// messages ranked before it. One long turn that extraction split into
    /// ten statements is one piece of evidence: ranked by position, its ten
    /// memories would push a channel's next piece of evidence to rank 11
    /// and fusion would weigh that evidence by how finely its neighbour was
    /// split. A memory without source messages (`sources` gives `None` or
    /// none) is evidence of its own.
    pub fn by_evidence(mut self, sources: impl Fn(&str) -> Option<Vec<String>>) -> Ranking {
        let mut groups: rustc_hash::FxHashMap<Vec<String>, usize> = Default::default();
        let mut next = 0usize;
        self.ranks = self
            .ids
            .iter()
            .map(|id| {
                let mut key = sources(id).filter(|s| !s.is_empty()).unwrap_or_else(|| vec![format!("memory {id}")]);
                key.sort_unstable();
                key.dedup();
                *groups.entry(key).or_insert_with(|| {
                    next = next.saturating_add(1);
                    next
                })
            })
            .collect();
        self
    }

    /// The rank of the id at `index`.
    pub fn rank_at(&self, index: usize) -> usize {
        self.ranks.get(index).copied().unwrap_or(index.saturating_add(1))
    }

    /// The share of the channel's weight the id at `index` carries.
    pub fn share_at(&self, index: usize) -> f64 {
        self.shares.get(index).copied().unwrap_or(1.0)
    }
}

/// The share of the key channel's weight each of a topic key's `holders`
/// live memories carries: `1 / holders`, one key's vote split among them.
///
/// A key is the strongest signal when it names one attribute of one
/// thing, so that one memory holds it ([`WEIGHT_KEY`]). Several live
/// holders mean it names a kind of statement instead: an agent's
/// statements of one key in different sessions all stay live
/// (`ingest::supersede`), so "which languages does each traced module
/// use" may be held by one memory per coding session. Undivided, every
/// one of them outranked full text's best hit (at `K` 10, `WEIGHT_KEY`'s
/// tenth rank, 2 / 20, is above `WEIGHT_FTS`'s first, 1 / 11), and the
/// evidence full text found first fell past place 10. Split, a key one
/// memory holds weighs as before. Measured over thirty-two draws
/// (docs/bench/generalization/key-holders.txt): coding sessions 0.925 ->
/// 0.930 against full text's 0.928, nothing else moved.
pub fn key_share(holders: usize) -> f64 {
    1.0 / holders.max(1) as f64
}

/// all-MiniLM-L6-v2's match floor. Measured on the LoCoMo development
/// split (`docs/bench/generalization/match-floor.txt`): a question's best
/// cosine to a turn of its own conversation is below 0.35 for 1.6% of the
/// questions, while an unrelated question's best is at or above it for 18%
/// of them (against 0.40: 4.9% and 10%). The gate only matters when no
/// lexical channel found anything, so the real questions it costs are
/// fewer still.
pub const MINILM_MATCH_FLOOR: f32 = 0.35;

/// The match floor of a semantic embedding model, by its name: measured
/// ones have theirs; any other (Workers AI's models included: they cannot
/// be run offline here, so none was measured) has 0.0, so its nearest
/// vectors always count, as before there was a floor.
pub fn semantic_match_floor(model: &str) -> f32 {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    match name.as_str() {
        "all-minilm-l6-v2" => MINILM_MATCH_FLOOR,
        _ => 0.0,
    }
}

/// Whether the channels found anything that matches the query, so that
/// a recall with nothing to go on answers empty rather than with the
/// nearest vectors of unrelated memories (a vector index always has
/// nearest neighbours). A hit of a lexical channel (key, full text,
/// messages) shares words with the query and counts, unless the
/// question's own words and their expansions found nothing in scope, it
/// names no speaker, and the channel's hits share only its stop words
/// ([`Ranking::stop_words_only`]: "What is the capital of France?" beside
/// a turn that says "the"; "Which company am I with at the moment?"
/// still matches the user's turns by "I"). A vector
/// channel's hits count when its best cosine reaches `floor`, the
/// embedder's [`crate::core::ports::Embedder::match_floor`]; with none
/// (the local hashing embedder, whose vectors re-find lexically what full
/// text finds) they never count alone. This only decides between some
/// candidates and none: it never reorders or drops one hit.
pub fn shows_a_match(rankings: &[Ranking], floor: Option<f32>) -> bool {
    rankings.iter().any(|r| match r.channel {
        Channel::Vector | Channel::Hyde => match (floor, r.best_similarity) {
            (Some(floor), Some(best)) => best >= floor,
            _ => false,
        },
        _ => !r.ids.is_empty() && !r.stop_words_only,
    })
}

/// One channel's part in a fused score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Contribution {
    pub channel: Channel,
    pub rank: usize,
    pub weight: f64,
    pub contribution: f64,
}

/// A fused hit with its explanation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fused {
    pub id: String,
    pub score: f64,
    pub trace: Vec<Contribution>,
}

/// The explanation of a fused hit: its score, the sum of one RRF
/// contribution per channel that ranked it, each with what put the hit at
/// its rank there (from `rankings`, when the channel explained it).
pub fn explain(hit: &Fused, rankings: &[Ranking], weights: Weights) -> Explanation {
    let leaned = weights.explain_lean();
    let parts = hit.trace.iter().map(|c| {
        let lean = leaned.clone().filter(|_| is_vector(c.channel));
        let share =
            rankings.iter().filter(|r| r.channel == c.channel).find_map(|r| r.ids.iter().position(|id| *id == hit.id).map(|i| r.share_at(i))).unwrap_or(1.0);
        let weight = match (lean.is_some(), share == 1.0) {
            (true, _) => format!("{} {} x lean {:.3}", weights.name(c.channel), weights.base(c.channel), weights.lean()),
            (false, true) => format!("{} {}", weights.name(c.channel), c.weight),
            (false, false) => format!("{} {} x share {share:.3}", weights.name(c.channel), weights.base(c.channel)),
        };
        let node = Explanation::new(
            c.contribution,
            format!("{} channel: {weight} / ({} {} + rank {} by evidence)", c.channel.name(), weights.k_name(), weights.k(), c.rank),
        )
        .with_all(lean);
        let why = rankings.iter().filter(|r| r.channel == c.channel).find_map(|r| r.why.get(&hit.id));
        match why {
            Some(why) => node.with(why.clone()),
            None => node,
        }
    });
    Explanation::new(hit.score, format!("fused score: the sum of each channel's weight / ({} + rank)", weights.k_name())).with_all(parts)
}

/// Fuses rankings. An id ranked by a channel more than once counts at its
/// best rank.
pub fn fuse(rankings: &[Ranking], weights: Weights) -> Vec<Fused> {
    let mut by_id: rustc_hash::FxHashMap<&str, Fused> = Default::default();
    for r in rankings {
        let mut seen = rustc_hash::FxHashSet::default();
        for (i, id) in r.ids.iter().enumerate() {
            if !seen.insert(id.as_str()) {
                continue;
            }
            let rank = r.rank_at(i);
            let weight = weights.of(r.channel) * r.share_at(i);
            let contribution = weight / (weights.k() + rank as f64);
            let f = by_id.entry(id.as_str()).or_insert_with(|| Fused { id: id.clone(), score: 0.0, trace: Vec::new() });
            f.trace.push(Contribution { channel: r.channel, rank, weight, contribution });
        }
    }
    let mut out: Vec<Fused> = by_id
        .into_values()
        .map(|mut f| {
            f.trace.sort_by_key(|c| c.channel);
            f.score = f.trace.iter().map(|c| c.contribution).sum();
            f
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.id.cmp(&a.id)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(channel: Channel, ids: &[&str]) -> Ranking {
        Ranking::new(channel, ids.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn test_fused_score_is_sum_of_contributions() {
        let out = fuse(&[r(Channel::Fts, &["a", "b"]), r(Channel::Key, &["b"]), r(Channel::Messages, &["c", "a"])], Weights::default());
        for f in &out {
            let sum: f64 = f.trace.iter().map(|c| c.contribution).sum();
            assert!((f.score - sum).abs() < 1e-12);
        }
        assert_eq!(out[0].id, "b", "key match outweighs");
    }

    #[test]
    fn test_an_explanation_sums_its_channels_and_names_their_weights() {
        let mut fts = r(Channel::Fts, &["a", "b"]);
        fts.why.insert("b".into(), Explanation::new(3.5, "bm25"));
        let rankings = [fts, r(Channel::Key, &["b"])];
        let b = fuse(&rankings, Weights::default()).into_iter().find(|f| f.id == "b").unwrap();
        let e = explain(&b, &rankings, Weights::default());
        assert_eq!(e.value, b.score);
        assert!((e.details.iter().map(|d| d.value).sum::<f64>() - e.value).abs() < 1e-12);
        assert!(e.details.iter().any(|d| d.description.contains("WEIGHT_KEY 2 / (K 10 + rank 1 by evidence)")), "{e:?}");
        let fts = e.details.iter().find(|d| d.description.starts_with("fts")).unwrap();
        assert_eq!(fts.details, vec![Explanation::new(3.5, "bm25")]);
    }

    #[test]
    fn test_a_key_many_memories_hold_does_not_outrank_full_texts_first_hit() {
        // One memory holds the first key, nine hold the second: a kind of
        // statement said in nine sessions, not one attribute.
        let mut key = r(Channel::Key, &["exact", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"]);
        key.shares = std::iter::once(key_share(1)).chain(std::iter::repeat(key_share(9)).take(9)).collect();
        let rankings = [key, r(Channel::Fts, &["found", "exact"])];
        let out = fuse(&rankings, Weights::default());
        let ids: Vec<&str> = out.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(&ids[..2], ["exact", "found"], "{ids:?}");
        let k9 = out.iter().find(|f| f.id == "k9").unwrap();
        assert_eq!(k9.score, WEIGHT_KEY / 9.0 / (K + 10.0));
        let e = explain(k9, &rankings, Weights::default());
        assert!(e.details[0].description.contains("WEIGHT_KEY 2 x share 0.111"), "{e:?}");
        // Undivided, the ninth holder would outweigh full text's first hit.
        assert!(WEIGHT_KEY / (K + 10.0) > WEIGHT_FTS / (K + 1.0));
    }

    #[test]
    fn test_single_channel_hit_can_win() {
        let out = fuse(&[r(Channel::Key, &["only"]), r(Channel::Messages, &["x"])], Weights::default());
        assert_eq!(out[0].id, "only");
    }

    #[test]
    fn test_grouped_ranks_share_a_contribution() {
        let grouped = Ranking {
            channel: Channel::Messages,
            ids: vec!["a".into(), "b".into(), "c".into()],
            ranks: vec![1, 1, 2],
            shares: Vec::new(),
            why: Default::default(),
            best_similarity: None,
            best_score: None,
            stop_words_only: false,
        };
        let out = fuse(&[grouped], Weights::default());
        let score = |id: &str| out.iter().find(|f| f.id == id).unwrap().score;
        assert_eq!(score("a"), score("b"));
        assert!(score("b") > score("c"));
    }

    #[test]
    fn test_memories_of_one_message_share_its_evidence_rank() {
        let sources = |id: &str| match id {
            "a1" | "a2" | "a3" => Some(vec!["long".to_string()]),
            "b" => Some(vec!["short".to_string()]),
            "ab" => Some(vec!["short".to_string(), "long".to_string()]),
            "ba" => Some(vec!["long".to_string(), "short".to_string()]),
            _ => None,
        };
        let ranking = r(Channel::Vector, &["a1", "a2", "a3", "b", "remembered", "ab", "ba", "other"]).by_evidence(sources);
        assert_eq!(ranking.ranks, [1, 1, 1, 2, 3, 4, 4, 5]);
        let fused = fuse(&[ranking], Weights::default());
        let score = |id: &str| fused.iter().find(|f| f.id == id).unwrap().score;
        assert_eq!(score("b"), WEIGHT_VECTOR / (K + 2.0), "one long message's statements count once before the next message");
        assert_eq!(score("a3"), score("a1"));
    }

    #[test]
    fn test_ties_go_to_the_more_recent_id() {
        let out = fuse(&[r(Channel::Fts, &["0001"]), r(Channel::Fts, &[]), Ranking::new(Channel::Vector, vec![])], Weights::default());
        assert_eq!(out.len(), 1);
        let tie = fuse(&[r(Channel::Hyde, &["0001"]), r(Channel::Vector, &["0002"])], Weights::default());
        assert_eq!(tie[0].id, "0002");
    }

    #[test]
    fn test_a_semantic_embedder_weighs_its_channels_by_their_own_constants() {
        let semantic = Weights::new(EmbeddingKind::Semantic);
        assert_eq!(semantic.of(Channel::Vector), SEMANTIC_WEIGHT_VECTOR);
        assert_eq!(semantic.of(Channel::Fts), WEIGHT_FTS);
        let rankings = [r(Channel::Vector, &["a"])];
        let hit = fuse(&rankings, semantic).remove(0);
        assert!(explain(&hit, &rankings, semantic).details[0].description.contains("SEMANTIC_WEIGHT_VECTOR"));
    }

    #[test]
    fn test_a_semantic_embedder_fuses_with_the_steeper_constant() {
        // The vector's first hit against full text's hits, the vector
        // weighed the same under both constants: at K 10, 0.5 / 11 = 0.045
        // is below full text's ninth (1 / 19 = 0.053); at SEMANTIC_K 3,
        // 0.5 / 4 = 0.125 is above its sixth (1 / 9 = 0.111), below its
        // fourth (1 / 7 = 0.143) and ties its fifth (1 / 8), which the
        // ids leave first ("f5" > "a1").
        let semantic = Weights::new(EmbeddingKind::Semantic);
        let rankings = [r(Channel::Fts, &["f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9"]), r(Channel::Vector, &["a1"])];
        let place = |w: Weights| fuse(&rankings, w).iter().position(|f| f.id == "a1").unwrap();
        let lexical_k_semantic_weights = |w: Weights| {
            let mut out: Vec<(f64, &str)> =
                rankings.iter().flat_map(|r| r.ids.iter().enumerate().map(move |(i, id)| (w.of(r.channel) / (K + (i + 1) as f64), id.as_str()))).collect();
            out.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(a.1)));
            out.iter().position(|(_, id)| *id == "a1").unwrap()
        };
        assert_eq!(lexical_k_semantic_weights(semantic), 9, "at K 10 the vector's first hit follows all nine of full text's");
        assert_eq!(place(semantic), 5, "at SEMANTIC_K 3 it comes after full text's fifth");
        let hit = fuse(&rankings, semantic).into_iter().find(|f| f.id == "a1").unwrap();
        assert_eq!(hit.score, SEMANTIC_WEIGHT_VECTOR / (SEMANTIC_K + 1.0));
        let e = explain(&hit, &rankings, semantic);
        assert!(e.details[0].description.contains("(SEMANTIC_K 3 + rank 1"), "{e:?}");
        assert!(e.description.contains("(SEMANTIC_K + rank)"), "{e:?}");
    }

    #[test]
    fn test_semantic_vectors_lean_in_as_full_text_matches_less() {
        let messages = 100u64;
        let with = |best: f64| Weights::new(EmbeddingKind::Semantic).with_lexical_match(Some(LexicalMatch { best, documents: messages }));
        let full = LEXICAL_MATCH_FULL * (messages as f64).ln();
        assert_eq!(with(0.0).of(Channel::Vector), SEMANTIC_WEIGHT_VECTOR * (1.0 + SEMANTIC_LEAN), "no match: the whole lean");
        assert_eq!(with(0.0).of(Channel::Hyde), SEMANTIC_WEIGHT_HYDE * (1.0 + SEMANTIC_LEAN));
        assert!((with(full / 2.0).lean() - (1.0 + SEMANTIC_LEAN / 2.0)).abs() < 1e-12, "half the match: half the lean");
        assert_eq!(with(full).of(Channel::Vector), SEMANTIC_WEIGHT_VECTOR, "a full match: the measured weight");
        assert_eq!(with(10.0 * full).of(Channel::Vector), SEMANTIC_WEIGHT_VECTOR, "never below it");
        for channel in [Channel::Key, Channel::Fts, Channel::Messages] {
            assert_eq!(with(0.0).of(channel), Weights::new(EmbeddingKind::Semantic).of(channel), "{channel:?} does not lean");
        }
    }

    #[test]
    fn test_a_match_reads_the_same_at_any_profile_size() {
        // The same words matched (a score in proportion to ln N) lean the
        // same in a small profile and a large one.
        let strength = |messages: u64| LexicalMatch { best: 1.5 * (messages as f64).ln(), documents: messages }.strength();
        assert!((strength(50) - 1.5).abs() < 1e-12 && (strength(100_000) - 1.5).abs() < 1e-12);
        assert!(LexicalMatch { best: 1.0, documents: 0 }.strength().is_finite(), "an empty profile counts as 3 documents");
    }

    #[test]
    fn test_the_lexical_embedder_and_an_unmeasured_query_never_lean() {
        let nothing = Some(LexicalMatch { best: 0.0, documents: 1_000 });
        assert_eq!(Weights::new(EmbeddingKind::Lexical).with_lexical_match(nothing).of(Channel::Vector), WEIGHT_VECTOR);
        assert_eq!(Weights::new(EmbeddingKind::Semantic).with_lexical_match(None).of(Channel::Vector), SEMANTIC_WEIGHT_VECTOR);
    }

    #[test]
    fn test_a_lean_is_explained_down_to_the_full_text_match() {
        let weights = Weights::new(EmbeddingKind::Semantic).with_lexical_match(Some(LexicalMatch { best: 0.0, documents: 20 }));
        let rankings = [r(Channel::Fts, &["f1", "f2"]), r(Channel::Vector, &["v1"])];
        let out = fuse(&rankings, weights);
        assert_eq!(out[0].id, "v1", "full text matched nothing: the vector's first hit leads");
        let e = explain(&out[0], &rankings, weights);
        assert!((e.details.iter().map(|d| d.value).sum::<f64>() - e.value).abs() < 1e-12);
        let vector = &e.details[0];
        assert!(vector.description.contains("SEMANTIC_WEIGHT_VECTOR 0.5 x lean 7.000"), "{vector:?}");
        let lean = &vector.details[0];
        assert_eq!(lean.value, 1.0 + SEMANTIC_LEAN);
        assert!(lean.description.contains("SEMANTIC_LEAN 6") && lean.description.contains("LEXICAL_MATCH_FULL 3"), "{lean:?}");
        assert!(lean.details[0].description.contains("best score 0.000 / ln(20 documents)"), "{lean:?}");
        let unleaned = explain(&fuse(&rankings, Weights::new(EmbeddingKind::Semantic))[0], &rankings, Weights::new(EmbeddingKind::Semantic));
        assert!(unleaned.details.iter().all(|d| !d.description.contains("lean")), "{unleaned:?}");
    }

    #[test]
    fn test_a_match_needs_a_lexical_hit_or_a_vector_as_close_as_the_floor() {
        let mut vector = r(Channel::Vector, &["a"]);
        vector.best_similarity = Some(0.3);
        assert!(!shows_a_match(&[vector.clone(), r(Channel::Fts, &[])], None), "lexical vectors never match alone");
        assert!(!shows_a_match(&[vector.clone()], Some(MINILM_MATCH_FLOOR)), "below the floor");
        assert!(shows_a_match(&[vector.clone()], Some(0.3)), "at the floor");
        assert!(shows_a_match(&[vector.clone(), r(Channel::Messages, &["b"])], None), "a lexical hit matches");
        let by_stop_words = Ranking { stop_words_only: true, ..r(Channel::Messages, &["b"]) };
        assert!(!shows_a_match(&[vector, by_stop_words], None), "unless it shares only stop words with a question about no one");
        assert_eq!(semantic_match_floor("@cf/sentence-transformers/all-MiniLM-L6-v2"), MINILM_MATCH_FLOOR);
        assert_eq!(semantic_match_floor("@cf/baai/bge-base-en-v1.5"), 0.0, "unmeasured models keep every neighbour");
    }
}
