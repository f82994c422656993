//! Rule-based extraction: one candidate per stating sentence.
//!
//! A sentence is kept when it states something: at least three content
//! words, not a question, not a pleasantry. The full pass keeps sentences
//! of every speaker; the detail pass keeps only sentences carrying a
//! concrete value (a number, a date, a capitalized name, a version).

use crate::core::ingest::dates;
use crate::core::provider::{Candidate, Pass, Transcript};
use crate::core::text;

/// Fewest content words a kept sentence has.
pub const MIN_CONTENT_WORDS: usize = 3;

const PLEASANTRIES: &[&str] = &["thanks", "thank you", "got it", "sounds good", "great", "ok", "okay", "sure", "cool", "nice", "awesome", "lol", "haha", "bye", "hello", "hi"];

/// Whether a sentence is worth keeping.
pub fn states_something(s: &str) -> bool {
    let t = s.trim();
    if t.ends_with('?') {
        return false;
    }
    let lower = t.to_lowercase();
    let bare = lower.trim_matches(|c: char| !c.is_alphanumeric());
    if PLEASANTRIES.contains(&bare) {
        return false;
    }
    text::content_words(t).len() >= MIN_CONTENT_WORDS
}

/// Whether a sentence carries a concrete value.
pub fn has_concrete_value(s: &str) -> bool {
    let words: Vec<&str> = s.split_whitespace().collect();
    s.chars().any(|c| c.is_ascii_digit())
        || words.iter().skip(1).any(|w| w.chars().next().is_some_and(char::is_uppercase) && w.len() > 1)
        || s.contains('$')
        || s.contains('€')
}

/// Candidates of a transcript. Content is `"{role}: {sentence}"` with the
/// role capitalized, so a memory says who said it.
pub fn extract(t: &Transcript, pass: Pass) -> Vec<Candidate> {
    let mut out = Vec::new();
    for line in &t.lines {
        for s in text::sentences(&line.text) {
            if !states_something(&s) {
                continue;
            }
            if pass == Pass::Detail && !has_concrete_value(&s) {
                continue;
            }
            out.push(Candidate {
                content: format!("{}: {}", speaker(&line.role), s.trim()),
                lines: vec![line.index],
                event_date: dates::first_date(&s),
            });
        }
    }
    out
}

/// `"user"` -> `"User"`; names are kept as they are.
pub fn speaker(role: &str) -> String {
    let mut c = role.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
