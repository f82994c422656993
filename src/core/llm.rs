//! The language-model reasoner: every judging stage done by prompting a
//! [`ChatModel`] (Workers AI or an OpenAI-compatible endpoint) and parsing
//! its JSON reply.
//!
//! * `prompts`: the prompts, as named constants, and the data messages;
//! * `json`: lenient reading of replies (fences, prose, extra fields);
//! * `parse`: each stage's reply into the reasoner's records;
//! * `protocol`: request/response shapes of the HTTP protocols, for the
//!   wasm glue.
//!
//! A reply that cannot be parsed is asked for once more, with a note
//! saying so; a second failure is an [`Error::provider`] for the caller
//! (ingest records it and goes on). Transport errors from the model are
//! not retried here: the model adapter owns its own retry policy.
//! The reasoner never writes anything.

pub mod json;
pub mod parse;
pub mod prompts;
pub mod protocol;

pub use protocol::{
    openai_chat_request, openai_embed_request, parse_openai_chat_response, parse_openai_embed_response, parse_workers_ai_embed_response,
    parse_workers_ai_response, workers_ai_embed_request, workers_ai_request,
};

use crate::core::error::{Error, Result};
use crate::core::ports::{ChatModel, ChatRequest, LocalBoxFuture, ModelRole};
use crate::core::provider::{Candidate, Classification, Pass, QueryAnalysis, Reasoner, SynthesisInput, Transcript, Verdict};

/// Reply budgets, in tokens.
pub const EXTRACT_TOKENS: u32 = 4096;
pub const JUDGE_TOKENS: u32 = 4096;
/// Groups of memories one consolidation prompt decides at most.
pub const CONSOLIDATE_BATCH: usize = 20;
pub const ANALYZE_TOKENS: u32 = 512;
pub const SYNTHESIS_TOKENS: u32 = 1024;

/// The [`Reasoner`] over a chat model (owned, or borrowed as `&dyn ChatModel`).
pub struct LlmReasoner<M> {
    pub model: M,
}

impl<M: ChatModel> LlmReasoner<M> {
    /// Sends one request and parses the reply; on an unparseable reply
    /// asks once more, then gives up with a provider error.
    async fn ask<T>(&self, mut req: ChatRequest, parse: impl Fn(&str) -> Result<T>) -> Result<T> {
        let first = parse(&self.model.complete(&req).await?);
        let Err(e) = first else { return first };
        req.user.push_str(prompts::RETRY_NOTE);
        parse(&self.model.complete(&req).await?).map_err(|e2| Error::provider(format!("the model's reply could not be used twice: {e}; then: {e2}")))
    }

    fn instruct(system: &str, user: String, max_tokens: u32) -> ChatRequest {
        ChatRequest { role: ModelRole::Instruct, system: system.to_string(), user, json: true, max_tokens }
    }
}

impl<M: ChatModel> Reasoner for LlmReasoner<M> {
    fn extract<'a>(&'a self, t: &'a Transcript, pass: Pass) -> LocalBoxFuture<'a, Result<Vec<Candidate>>> {
        Box::pin(async move {
            if t.lines.is_empty() {
                return Ok(Vec::new());
            }
            let system = match pass {
                Pass::Full => prompts::EXTRACT_FULL,
                Pass::Detail => prompts::EXTRACT_DETAIL,
            };
            self.ask(Self::instruct(system, prompts::extract_user(t), EXTRACT_TOKENS), parse::candidates).await
        })
    }

    fn verify<'a>(&'a self, t: &'a Transcript, c: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Verdict>>> {
        Box::pin(async move {
            if c.is_empty() {
                return Ok(Vec::new());
            }
            let req = Self::instruct(prompts::VERIFY, prompts::verify_user(t, c), JUDGE_TOKENS);
            self.ask(req, |r| parse::verdicts(r, c.len())).await
        })
    }

    fn classify<'a>(&'a self, t: &'a Transcript, c: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Classification>>> {
        Box::pin(async move {
            if c.is_empty() {
                return Ok(Vec::new());
            }
            let req = Self::instruct(prompts::CLASSIFY, prompts::classify_user(t, c), JUDGE_TOKENS);
            self.ask(req, |r| parse::classifications(r, c)).await
        })
    }

    fn analyze<'a>(&'a self, query: &'a str) -> LocalBoxFuture<'a, Result<QueryAnalysis>> {
        Box::pin(async move { self.ask(Self::instruct(prompts::ANALYZE, prompts::analyze_user(query), ANALYZE_TOKENS), parse::analysis).await })
    }

    fn synthesize<'a>(&'a self, input: &'a SynthesisInput) -> LocalBoxFuture<'a, Result<String>> {
        Box::pin(async move {
            let (system, user) = crate::core::synthesis::prompt(input);
            let req = ChatRequest { role: ModelRole::Synthesis, system, user, json: false, max_tokens: SYNTHESIS_TOKENS };
            self.ask(req, parse::answer).await
        })
    }

    fn consolidate<'a>(&'a self, groups: &'a [crate::core::provider::Group]) -> LocalBoxFuture<'a, Result<Vec<crate::core::provider::Consolidation>>> {
        Box::pin(async move {
            // A window can hold hundreds of groups: asked a batch at a
            // time, so each reply fits its token budget.
            let mut out = Vec::with_capacity(groups.len());
            for batch in groups.chunks(CONSOLIDATE_BATCH) {
                let req = Self::instruct(prompts::CONSOLIDATE, prompts::consolidate_user(batch), JUDGE_TOKENS);
                out.extend(self.ask(req, |r| parse::consolidations(r, batch)).await?);
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Replies from a list, in order; records requests.
    struct Script {
        replies: RefCell<Vec<Result<String>>>,
        seen: RefCell<Vec<ChatRequest>>,
    }

    impl Script {
        fn new(replies: Vec<Result<&str>>) -> Script {
            Script { replies: RefCell::new(replies.into_iter().rev().map(|r| r.map(str::to_string)).collect()), seen: RefCell::new(Vec::new()) }
        }
    }

    impl ChatModel for Script {
        fn complete<'a>(&'a self, req: &'a ChatRequest) -> LocalBoxFuture<'a, Result<String>> {
            self.seen.borrow_mut().push(req.clone());
            let next = self.replies.borrow_mut().pop().unwrap_or_else(|| Err(Error::provider("script ran out")));
            Box::pin(async move { next })
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        futures::executor::block_on(f)
    }

    #[test]
    fn test_query_analysis_retries_once_after_garbage() {
        let model = Script::new(vec![Ok("no idea"), Ok("```json\n{\"keys\": [\"user.package_manager\"], \"terms\": [], \"hyde\": \"x\"}\n```")]);
        let a = block_on(LlmReasoner { model: &model }.analyze("What package manager?")).unwrap();
        assert_eq!(a.keys, vec!["user.package_manager"]);
        let seen = model.seen.borrow();
        assert_eq!(seen.len(), 2);
        assert!(seen[0].json && seen[0].system == prompts::ANALYZE);
        assert!(seen[1].user.ends_with(prompts::RETRY_NOTE));
    }

    #[test]
    fn test_two_garbage_replies_are_a_provider_error() {
        let model = Script::new(vec![Ok("nope"), Ok("{\"broken\": ")]);
        let err = block_on(LlmReasoner { model: &model }.analyze("q")).unwrap_err();
        assert!(err.is_provider());
        assert_eq!(model.seen.borrow().len(), 2);
    }

    #[test]
    fn test_transport_errors_are_not_retried() {
        let model = Script::new(vec![Err(Error::provider("503")), Ok("{\"keys\": [\"a.b\"]}")]);
        assert!(block_on(LlmReasoner { model: &model }.analyze("q")).is_err());
        assert_eq!(model.seen.borrow().len(), 1);
    }

    #[test]
    fn test_consolidation_asks_the_model_per_group_and_reads_its_decisions() {
        use crate::core::provider::{Consolidation, Group, GroupKind};
        let model = Script::new(vec![Ok("{\"decisions\": [{\"index\": 1, \"decision\": \"keep\", \"reason\": \"they differ\"}, \
             {\"index\": 0, \"decision\": \"fold\", \"content\": \"Maria paints and sells prints.\", \"reason\": \"one message\"}]}")]);
        let m = |id: &str, c: &str| crate::core::model::Memory::sample(id, c);
        let groups = vec![
            Group { kind: GroupKind::Siblings, members: vec![m("a", "Maria paints."), m("b", "Maria sells prints.")], why: String::new() },
            Group { kind: GroupKind::Duplicates, members: vec![m("c", "x"), m("d", "y")], why: String::new() },
        ];
        let got = block_on(LlmReasoner { model: &model }.consolidate(&groups)).unwrap();
        assert_eq!(got[0], Consolidation::Fold { content: "Maria paints and sells prints.".into(), reason: "one message".into() });
        assert!(matches!(got[1], Consolidation::Keep { .. }));
        let seen = model.seen.borrow();
        assert!(seen[0].json && seen[0].system == prompts::CONSOLIDATE);
        assert!(seen[0].user.contains("id=a") && seen[0].user.contains("[0] \"siblings\""), "{}", seen[0].user);
    }

    #[test]
    fn test_synthesis_uses_the_synthesis_model_and_its_prompt() {
        let model = Script::new(vec![Ok("The user prefers pnpm.")]);
        let input = SynthesisInput {
            query: "What package manager?".into(),
            memories: vec![],
            temporal_facts: vec![],
            reference_date: "2026-04-20".into(),
            length: Default::default(),
            computed_answer: None,
        };
        assert_eq!(block_on(LlmReasoner { model: &model }.synthesize(&input)).unwrap(), "The user prefers pnpm.");
        let seen = model.seen.borrow();
        assert_eq!(seen[0].role, ModelRole::Synthesis);
        assert!(!seen[0].json);
        assert_eq!((seen[0].system.clone(), seen[0].user.clone()), crate::core::synthesis::prompt(&input));
    }
}
