//! The model seam: what the pipelines ask of a "reasoner", whether rules
//! or a language model.
//!
//! [`Reasoner`] has one method per pipeline stage that needs judgement.
//! Two implementations exist: [`crate::core::rules::Rules`] (the local
//! default: deterministic, no network) and [`crate::core::llm::LlmReasoner`]
//! (prompts a [`crate::core::ports::ChatModel`], parses its JSON).

use crate::core::error::Result;
use crate::core::model::ResponseLength;
use crate::core::model::{Memory, MemoryType};
use crate::core::ports::LocalBoxFuture;
use serde::{Deserialize, Serialize};

/// One line of a rendered transcript.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Index within the transcript; memories cite lines by it.
    pub index: usize,
    pub message_id: String,
    pub role: String,
    /// The message's calendar date (`YYYY-MM-DD`), from its timestamp or
    /// the session date.
    pub date: Option<String>,
    /// The content with relative dates resolved to absolute ones, shared
    /// by the transcripts the line is in.
    pub text: std::rc::Rc<str>,
}

/// A chunk of conversation, ready for a reasoner.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Transcript {
    pub session_id: String,
    pub lines: Vec<Line>,
}

impl Transcript {
    /// The text form given to language models:
    /// `[3] 2026-04-15 user: Use pnpm.`
    pub fn render(&self) -> String {
        let mut out = String::new();
        for l in &self.lines {
            out.push_str(&format!("[{}] {} {}: {}\n", l.index, l.date.as_deref().unwrap_or("-"), l.role, l.text));
        }
        out
    }
}

/// Which extraction pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Broad extraction of everything durable.
    Full,
    /// Focused on concrete values: names, prices, versions, attributes.
    Detail,
}

/// An extracted, not yet verified memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub content: String,
    /// Transcript line indices it rests on.
    pub lines: Vec<usize>,
    /// When what it says happened, if it is dated (`YYYY-MM-DD`).
    #[serde(default)]
    pub event_date: Option<String>,
}

/// The outcome of verifying one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Correct { content: String, reason: String },
    Drop { reason: String },
}

/// What classification adds to a verified candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    #[serde(rename = "type")]
    pub kind: MemoryType,
    /// Normalized topic key (`subject.attribute`), facts and instructions.
    #[serde(default)]
    pub key: Option<String>,
    pub summary: String,
    /// At most [`MAX_CLASSIFIED_QUERIES`].
    pub search_queries: Vec<String>,
}

/// Most search queries classification gives a memory (it asks for 3-5);
/// a stored memory (an import's) may carry up to
/// [`crate::core::api::MAX_SEARCH_QUERIES`].
pub const MAX_CLASSIFIED_QUERIES: usize = 5;

/// What query analysis produces.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QueryAnalysis {
    /// Candidate topic keys, best first.
    pub keys: Vec<String>,
    /// Full-text terms, synonyms included.
    pub terms: Vec<String>,
    /// A declarative sentence phrased as if it answered the query.
    pub hyde: String,
}

/// The material for an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct SynthesisInput {
    pub query: String,
    /// Best first.
    pub memories: Vec<Memory>,
    /// Facts computed by the temporal engine, stated as sentences.
    pub temporal_facts: Vec<String>,
    pub reference_date: String,
    pub length: ResponseLength,
    /// The temporal engine's direct answer, when arithmetic alone answers.
    pub computed_answer: Option<String>,
}

/// What a group of memories is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum GroupKind {
    Duplicates,
    Contradiction,
    Siblings,
    Events,
    StaleTask,
}

/// Memories that may be consolidated together, oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub kind: GroupKind,
    pub members: Vec<Memory>,
    /// Why they were grouped, in words.
    pub why: String,
}

/// What the reasoner decides for a group of memories
/// ([`Reasoner::consolidate`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "lowercase")]
pub enum Consolidation {
    /// Keep the member `survivor` (its id), with every member's sources;
    /// the others are retired into it.
    Merge { survivor: String, reason: String },
    /// The newest member replaces the older ones (a version chain).
    Supersede { reason: String },
    /// One new memory with this content replaces every member.
    Fold { content: String, reason: String },
    /// The member (a task) is retired.
    Retire { reason: String },
    /// Nothing changes.
    Keep { reason: String },
}

/// One method per judging stage. Each returns data; none writes.
pub trait Reasoner {
    fn extract<'a>(&'a self, t: &'a Transcript, pass: Pass) -> LocalBoxFuture<'a, Result<Vec<Candidate>>>;
    /// One verdict per candidate, in order.
    fn verify<'a>(&'a self, t: &'a Transcript, c: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Verdict>>>;
    /// One classification per candidate, in order.
    fn classify<'a>(&'a self, t: &'a Transcript, c: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Classification>>>;
    fn analyze<'a>(&'a self, query: &'a str) -> LocalBoxFuture<'a, Result<QueryAnalysis>>;
    fn synthesize<'a>(&'a self, input: &'a SynthesisInput) -> LocalBoxFuture<'a, Result<String>>;
    /// One decision per group, in order (consolidation).
    fn consolidate<'a>(&'a self, groups: &'a [Group]) -> LocalBoxFuture<'a, Result<Vec<Consolidation>>>;
}
