//! The rule-based reasoner: every judging stage done with rules, no model,
//! no network. The local default.
//!
//! What it does: segments messages into sentences and keeps the ones that
//! state something (drops questions, greetings, acknowledgements); grounds
//! each candidate by token overlap with its cited lines; types it with
//! surface rules; derives topic keys from a subject (the speaker) and an
//! attribute (a known category of the thing named, or the head noun);
//! writes search queries from templates; answers extractively.
//!
//! What it does not do: understand paraphrase, resolve pronouns across
//! sentences, merge facts spread over several messages, or infer anything
//! not said. Those need a language model (Workers AI or an
//! OpenAI-compatible endpoint).

pub mod classify;
pub mod consolidate;
pub mod extract;
pub mod lexicon;
pub mod query;
pub mod verify;

use crate::core::error::Result;
use crate::core::ports::LocalBoxFuture;
use crate::core::provider::{Candidate, Classification, Consolidation, Group, Pass, QueryAnalysis, Reasoner, SynthesisInput, Transcript, Verdict};

/// The rule-based [`Reasoner`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Rules;

impl Reasoner for Rules {
    fn extract<'a>(&'a self, t: &'a Transcript, pass: Pass) -> LocalBoxFuture<'a, Result<Vec<Candidate>>> {
        Box::pin(async move { Ok(extract::extract(t, pass)) })
    }
    fn verify<'a>(&'a self, t: &'a Transcript, c: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Verdict>>> {
        Box::pin(async move { Ok(verify::verify_all(t, c)) })
    }
    fn classify<'a>(&'a self, t: &'a Transcript, c: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Classification>>> {
        Box::pin(async move { Ok(c.iter().map(|c| classify::classify(t, c)).collect()) })
    }
    fn analyze<'a>(&'a self, query: &'a str) -> LocalBoxFuture<'a, Result<QueryAnalysis>> {
        Box::pin(async move { Ok(query::analyze(query)) })
    }
    fn synthesize<'a>(&'a self, input: &'a SynthesisInput) -> LocalBoxFuture<'a, Result<String>> {
        Box::pin(async move { Ok(crate::core::synthesis::extractive(input)) })
    }
    fn consolidate<'a>(&'a self, groups: &'a [Group]) -> LocalBoxFuture<'a, Result<Vec<Consolidation>>> {
        Box::pin(async move { Ok(groups.iter().map(consolidate::decide).collect()) })
    }
}
