//! Rule-based query analysis: topic keys, full-text terms with synonyms
//! and stems, and a HyDE sentence from templates.

use crate::core::provider::QueryAnalysis;
use crate::core::rules::lexicon;
use crate::core::text;

pub fn analyze(query: &str) -> QueryAnalysis {
    let words = text::content_words(query);
    let mut terms: Vec<String> = Vec::new();
    let push = |t: String, terms: &mut Vec<String>| {
        if !t.is_empty() && !terms.contains(&t) {
            terms.push(t);
        }
    };
    for w in &words {
        push(w.clone(), &mut terms);
        for s in lexicon::synonyms(w) {
            push(s.to_string(), &mut terms);
        }
    }
    // Keys: subject candidates x attribute candidates.
    let lower = query.to_lowercase();
    let mut subjects: Vec<String> = Vec::new();
    if lower.contains("user") || lower.contains(" i ") || lower.starts_with("i ") || lower.contains(" my ") || lower.contains(" me ") {
        subjects.push("user".into());
    }
    for name in names(query) {
        if let Some(k) = crate::core::ingest::classify::normalize_key(&name) {
            subjects.push(k);
        }
    }
    subjects.push("user".into());
    subjects.push("project".into());
    subjects.dedup();
    let mut attrs: Vec<String> = Vec::new();
    if let Some(a) = lexicon::attribute_named(query).or_else(|| lexicon::category_of(query)) {
        attrs.push(a.to_string());
    }
    let nouns: Vec<&String> = words.iter().filter(|w| !lexicon::synonyms(w).contains(&"use")).collect();
    if nouns.len() >= 2 {
        attrs.push(format!("{}_{}", nouns[0], nouns[1]));
    }
    if let Some(n) = nouns.first() {
        attrs.push((*n).clone());
    }
    let mut keys = Vec::new();
    for a in &attrs {
        for s in &subjects {
            let k = format!("{s}.{a}");
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    QueryAnalysis { keys, terms, hyde: hyde(query, &words) }
}

/// Capitalized words that are not sentence-initial question words: names.
pub fn names(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .enumerate()
        .filter(|(i, w)| *i > 0 && w.chars().next().is_some_and(char::is_uppercase) && w.len() > 1)
        .map(|(_, w)| w.trim_end_matches("'s").to_string())
        .filter(|w| !text::is_stop(&w.to_lowercase()))
        .collect()
}

/// A declarative sentence shaped like the answer.
pub fn hyde(query: &str, words: &[String]) -> String {
    let topic = words.join(" ");
    let lower = query.trim().to_lowercase();
    if lower.starts_with("when") {
        format!("{topic} happened on the date")
    } else if lower.starts_with("where") {
        format!("{topic} is located in the place")
    } else if lower.starts_with("who") {
        format!("the person {topic} is")
    } else if lower.starts_with("how many") || lower.starts_with("how much") {
        format!("the number of {topic} is")
    } else {
        format!("the {topic} is")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_package_manager_question_ranks_the_user_key_first() {
        let a = analyze("What package manager does the user prefer?");
        assert_eq!(a.keys.first().map(String::as_str), Some("user.package_manager"));
        assert!(a.terms.contains(&"package".to_string()));
    }
}
