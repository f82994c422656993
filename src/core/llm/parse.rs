//! Reading each stage's model reply into the reasoner's records.
//!
//! Lenient in form (fences, prose around the JSON, extra fields, a few
//! field spellings, 1-based indices), strict in substance: a reply must
//! carry the stage's list, with one verdict or classification for every
//! candidate; a type or verdict it does not know makes the whole reply
//! unparseable, so the caller retries rather than guessing.

use crate::core::error::{Error, Result};
use crate::core::llm::json;
use crate::core::model::MemoryType;
use crate::core::provider::{Candidate, Classification, QueryAnalysis, Verdict};
use crate::core::text::normalize_key;
use serde_json::Value;

fn unparseable(what: &str) -> Error {
    Error::provider(format!("unparseable model reply: {what}"))
}

fn reply_json(reply: &str) -> Result<Value> {
    json::first_json(reply).ok_or_else(|| unparseable("no JSON object in it"))
}

/// An ISO date (`YYYY-MM-DD`) from a date or date-time text: a
/// date-time's own day, where it was said (not the UTC day).
fn iso_date(s: &str) -> Option<String> {
    crate::core::time::local_date_of(s).map(|d| d.format("%Y-%m-%d").to_string())
}

/// Extracted candidates. Items without content are skipped; items without
/// cited lines are kept (ingest drops them with a record). The reply is
/// read without its reasoning, else whole ([`json::readings`]). Its list
/// is the value, a field of one of the usual names, or the object's only
/// array unless the object is itself a statement; a list holding an item
/// that is neither a statement nor an object is no list of statements. A
/// reply cut off mid-list (read from its first complete item, whose cited
/// lines would pass for the list) or a line number quoted in the reasoning
/// is unparseable then, not "nothing to remember", which would lose the
/// reply's statements without a record.
pub fn candidates(reply: &str) -> Result<Vec<Candidate>> {
    let mut last = unparseable("no JSON object in it");
    for text in json::readings(reply) {
        match json::first_json_in(text).ok_or_else(|| unparseable("no JSON object in it")).and_then(|v| candidates_of(&v)) {
            Ok(found) => return Ok(found),
            Err(e) => last = e,
        }
    }
    Err(last)
}

const CONTENT_FIELDS: [&str; 5] = ["content", "text", "memory", "fact", "statement"];

fn candidates_of(v: &Value) -> Result<Vec<Candidate>> {
    let named = json::named_list(v, &["memories", "items", "candidates", "facts", "statements"]);
    let is_a_statement = CONTENT_FIELDS.iter().any(|f| v.get(*f).is_some());
    let items = named.or_else(|| if is_a_statement { None } else { json::list(v, &[]) }).ok_or_else(|| unparseable("no memories list"))?;
    if items.iter().any(|item| !item.is_string() && !item.is_object()) {
        return Err(unparseable("the memories list holds an item that is no statement"));
    }
    Ok(items
        .iter()
        .filter_map(|item| {
            if let Value::String(s) = item {
                return (!s.trim().is_empty()).then(|| Candidate { content: s.trim().into(), lines: vec![], event_date: None });
            }
            let content = json::text(item, &CONTENT_FIELDS)?;
            let lines = json::field(item, &["lines", "line", "sourceLines", "source_lines", "sources", "indices"]).map(json::indices).unwrap_or_default();
            let event_date = json::text(item, &["eventDate", "event_date", "date"]).and_then(|d| iso_date(&d));
            Some(Candidate { content, lines, event_date })
        })
        .collect())
}

/// Places items by their `index` field (or position), shifting 1-based
/// numbering down; fails unless each of `n` slots is filled.
fn by_index<T>(items: &[Value], n: usize, read: impl Fn(&Value) -> Result<T>) -> Result<Vec<T>> {
    let mut indexed: Vec<(usize, &Value)> = items
        .iter()
        .enumerate()
        .map(|(pos, item)| {
            let i = json::field(item, &["index", "id", "i", "candidate"]).map(json::indices).and_then(|v| v.first().copied());
            (i.unwrap_or(pos), item)
        })
        .collect();
    let (min, max) = indexed.iter().fold((usize::MAX, 0), |(lo, hi), (i, _)| (lo.min(*i), hi.max(*i)));
    if n > 0 && min == 1 && max == n {
        indexed.iter_mut().for_each(|(i, _)| *i = i.saturating_sub(1));
    }
    let mut slots: Vec<Option<T>> = (0..n).map(|_| None).collect();
    for (i, item) in indexed {
        if let Some(slot) = slots.get_mut(i) {
            if slot.is_none() {
                *slot = Some(read(item)?);
            }
        }
    }
    let filled = slots.iter().filter(|s| s.is_some()).count();
    if filled < n {
        return Err(unparseable(&format!("it answers {filled} of {n} candidates")));
    }
    Ok(slots.into_iter().flatten().collect())
}

/// One consolidation decision per group, in order. A merge naming no
/// member, or a fold without content, keeps the group.
pub fn consolidations(reply: &str, groups: &[crate::core::provider::Group]) -> Result<Vec<crate::core::provider::Consolidation>> {
    use crate::core::provider::Consolidation;
    let v = reply_json(reply)?;
    let items = json::list(&v, &["decisions", "items", "results"]).ok_or_else(|| unparseable("no decisions list"))?;
    by_index(items, groups.len(), |item| {
        let word = json::text(item, &["decision", "action", "verdict"]).ok_or_else(|| unparseable("a decision is missing"))?.to_lowercase();
        let reason = json::text(item, &["reason", "why"]).unwrap_or_default();
        Ok(match word.as_str() {
            "merge" => match json::text(item, &["survivor", "keep", "id"]) {
                Some(survivor) => Consolidation::Merge { survivor, reason },
                None => Consolidation::Keep { reason: format!("a merge naming no survivor ({reason})") },
            },
            "supersede" | "contradiction" => Consolidation::Supersede { reason },
            "fold" | "summarize" => match json::text(item, &["content", "summary", "text"]) {
                Some(content) if !content.trim().is_empty() => Consolidation::Fold { content, reason },
                _ => Consolidation::Keep { reason: format!("a fold without content ({reason})") },
            },
            "retire" => Consolidation::Retire { reason },
            "keep" | "none" | "skip" => Consolidation::Keep { reason },
            other => return Err(unparseable(&format!("unknown decision {other:?}"))),
        })
    })
}

/// One verdict per candidate, in order.
pub fn verdicts(reply: &str, n: usize) -> Result<Vec<Verdict>> {
    let v = reply_json(reply)?;
    let items = json::list(&v, &["verdicts", "items", "results"]).ok_or_else(|| unparseable("no verdicts list"))?;
    by_index(items, n, verdict)
}

fn verdict(item: &Value) -> Result<Verdict> {
    let word = json::text(item, &["verdict", "status", "decision", "result", "action"]).ok_or_else(|| unparseable("a verdict is missing"))?.to_lowercase();
    let reason = json::text(item, &["reason", "explanation", "why"]).unwrap_or_default();
    Ok(match word.as_str() {
        "pass" | "passed" | "keep" | "ok" | "valid" | "accept" | "accepted" | "supported" => Verdict::Pass,
        "correct" | "corrected" | "fix" | "fixed" | "revise" | "revised" | "edit" => {
            match json::text(item, &["content", "corrected", "correction", "revised", "text"]) {
                Some(content) => Verdict::Correct { content, reason },
                // A malformed reply (retried), not a judgement on the memory.
                None => return Err(unparseable("a correction without its content")),
            }
        }
        "drop" | "dropped" | "reject" | "rejected" | "remove" | "fail" | "failed" | "invalid" | "unsupported" => {
            Verdict::Drop { reason: if reason.is_empty() { "dropped by the verifier".into() } else { reason } }
        }
        other => return Err(unparseable(&format!("unknown verdict {other:?}"))),
    })
}

fn memory_type(word: &str) -> Option<MemoryType> {
    let w = word.trim().to_lowercase();
    MemoryType::parse(&w).or(match w.as_str() {
        "preference" | "attribute" | "profile" => Some(MemoryType::Fact),
        "procedure" | "rule" | "workflow" | "runbook" => Some(MemoryType::Instruction),
        "todo" | "in_progress" => Some(MemoryType::Task),
        _ => None,
    })
}

/// One classification per candidate, in order. A missing summary is the
/// candidate's content.
pub fn classifications(reply: &str, cs: &[Candidate]) -> Result<Vec<Classification>> {
    let v = reply_json(reply)?;
    let items = json::list(&v, &["items", "classifications", "memories", "results"]).ok_or_else(|| unparseable("no classification list"))?;
    let mut out = by_index(items, cs.len(), |item| {
        let word = json::text(item, &["type", "kind", "category"]).ok_or_else(|| unparseable("a type is missing"))?;
        let kind = memory_type(&word).ok_or_else(|| unparseable(&format!("unknown type {word:?}")))?;
        Ok(Classification {
            kind,
            key: json::text(item, &["key", "topicKey", "topic_key", "topic"]),
            summary: json::text(item, &["summary"]).unwrap_or_default(),
            search_queries: json::texts(item, &["searchQueries", "search_queries", "queries"]),
        })
    })?;
    for (cls, c) in out.iter_mut().zip(cs) {
        if cls.summary.is_empty() {
            cls.summary = c.content.clone();
        }
    }
    Ok(out)
}

/// Query analysis; keys normalized.
pub fn analysis(reply: &str) -> Result<QueryAnalysis> {
    let v = reply_json(reply)?;
    if !v.is_object() {
        return Err(unparseable("query analysis is not an object"));
    }
    let keys: Vec<String> = json::texts(&v, &["keys", "topicKeys", "topic_keys"]).iter().filter_map(|k| normalize_key(k)).collect();
    let terms = json::texts(&v, &["terms", "searchTerms", "search_terms", "keywords"]);
    let hyde = json::text(&v, &["hyde", "statement", "hypothetical", "answer"]).unwrap_or_default();
    if keys.is_empty() && terms.is_empty() && hyde.is_empty() {
        return Err(unparseable("query analysis has no keys, terms or hyde"));
    }
    Ok(QueryAnalysis { keys, terms, hyde })
}

/// A synthesized answer: the reply's text without its reasoning
/// ([`json::without_reasoning`]: what follows the last `</think>`); empty,
/// or a reasoning block never closed (the reply ran out mid-thought), is
/// unparseable.
pub fn answer(reply: &str) -> Result<String> {
    let text = json::without_reasoning(reply).ok_or_else(|| unparseable("the reply is reasoning cut off before an answer"))?;
    let text = text.trim();
    if text.is_empty() {
        return Err(unparseable("the answer is empty"));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Candidate {
        Candidate { content: s.into(), lines: vec![0], event_date: None }
    }

    #[test]
    fn test_candidates_tolerate_fences_extra_fields_and_spellings() {
        let r = "```json\n{\"memories\": [{\"content\": \"The user prefers pnpm.\", \"lines\": [\"2\"], \"confidence\": 0.9, \"event_date\": \"2026-04-14T10:00:00Z\"}, {\"text\": \"Dark mode.\", \"line\": 2}, {\"lines\": [1]}]}\n```";
        let cs = candidates(r).unwrap();
        assert_eq!(cs.len(), 2);
        assert_eq!(cs[0].lines, vec![2]);
        assert_eq!(cs[0].event_date.as_deref(), Some("2026-04-14"));
        assert_eq!(cs[1].content, "Dark mode.");
    }

    #[test]
    fn test_garbage_is_unparseable() {
        assert!(candidates("I'm sorry, I can't help with that.").unwrap_err().is_provider());
        assert!(candidates("{\"answer\": 42}").is_err());
        assert!(answer("  ").is_err());
    }

    #[test]
    fn test_verdicts_need_one_per_candidate() {
        let r = "Verdicts: {\"verdicts\": [{\"index\": 1, \"verdict\": \"drop\", \"reason\": \"not said\"}, {\"index\": 0, \"verdict\": \"PASS\"}]}";
        assert_eq!(verdicts(r, 2).unwrap(), vec![Verdict::Pass, Verdict::Drop { reason: "not said".into() }]);
        assert!(verdicts(r, 3).is_err());
        assert!(verdicts("{\"verdicts\": [{\"verdict\": \"maybe\"}]}", 1).is_err());
        let one_based = "[{\"index\": 1, \"verdict\": \"correct\", \"content\": \"Fixed.\"}]";
        assert_eq!(verdicts(one_based, 1).unwrap(), vec![Verdict::Correct { content: "Fixed.".into(), reason: String::new() }]);
    }

    #[test]
    fn test_a_correction_without_its_content_is_a_malformed_reply_not_a_drop() {
        let e = verdicts("{\"verdicts\": [{\"verdict\": \"correct\", \"reason\": \"wrong date\"}]}", 1).unwrap_err();
        assert!(e.is_provider() && e.message().contains("a correction without its content"), "{e}");
    }

    #[test]
    fn test_classifications_fill_defaults_and_reject_unknown_types() {
        let r = "{\"items\": [{\"index\": 0, \"type\": \"Instruction\", \"key\": \"User.Package Manager\", \"queries\": \"Which package manager?\"}]}";
        let cls = classifications(r, &[c("Use pnpm.")]).unwrap();
        assert_eq!(cls[0].kind, MemoryType::Instruction);
        assert_eq!(cls[0].summary, "Use pnpm.");
        assert_eq!(cls[0].search_queries, vec!["Which package manager?"]);
        assert!(classifications("{\"items\": [{\"type\": \"opinion\"}]}", &[c("x")]).is_err());
    }

    #[test]
    fn test_analysis_keys_are_normalized_and_answers_lose_their_thinking() {
        let a = analysis("{\"keys\": [\"User.Package_Manager\"], \"terms\": [\"pnpm\"], \"hyde\": \"The user prefers pnpm.\", \"x\": 1}").unwrap();
        assert_eq!(a.keys, vec!["user.package_manager"]);
        assert_eq!(a.hyde, "The user prefers pnpm.");
        assert!(analysis("{}").is_err());
        assert_eq!(answer("<think>hmm</think>\n The user prefers pnpm. ").unwrap(), "The user prefers pnpm.");
    }
}
