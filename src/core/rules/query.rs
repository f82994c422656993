//! Rule-based query analysis: topic keys, full-text terms with synonyms
//! and stems, and a HyDE sentence from templates.

use crate::core::provider::QueryAnalysis;
use crate::core::rules::lexicon;
use crate::core::text;

pub fn analyze(query: &str) -> QueryAnalysis {
    let words = text::content_words(query);
    let named: Vec<String> = names(query).iter().filter_map(|n| crate::core::text::normalize_key(n)).collect();
    let subjects = subjects(query, &named);
    let mut keys = Vec::new();
    for a in &attributes(query, &words, &named) {
        for s in &subjects {
            let k = format!("{s}.{a}");
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    QueryAnalysis { keys, terms: terms(&words), hyde: hyde(query, &words) }
}

/// The query's own words first, then their synonyms: recall weighs the
/// additions less than the words the asker chose.
fn terms(words: &[String]) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for w in words {
        if !terms.contains(w) {
            terms.push(w.clone());
        }
    }
    for w in words {
        // By the word and its base forms ("kids" finds the group of "kid").
        let forms = base_forms(w);
        for s in forms.iter().flat_map(|f| lexicon::synonyms(f)) {
            if !terms.iter().any(|t| t == s) && !forms.iter().any(|f| f == s) {
                terms.push(s.to_string());
            }
        }
    }
    terms
}

/// The subjects of the keys a query may ask for: the user when it speaks
/// of the user or in the first person, the people it names, then the
/// defaults (the user, the project).
fn subjects(query: &str, named: &[String]) -> Vec<String> {
    let tokens = text::tokens(query);
    let mut subjects: Vec<String> = Vec::new();
    let first_person = tokens.iter().any(|t| matches!(t.as_str(), "user" | "i" | "me" | "my" | "mine" | "myself"));
    if first_person {
        subjects.push("user".into());
    }
    subjects.extend(named.iter().cloned());
    subjects.push("user".into());
    subjects.push("project".into());
    let mut seen = std::collections::HashSet::new();
    subjects.retain(|s| seen.insert(s.clone()));
    subjects
}

/// The attributes of the keys a query may ask for: a known category,
/// else the first content words that are not names nor the verb of
/// preference. (Stored keys take a statement's first two content words,
/// which may include the preference word: "My favorite dessert" is
/// `favorite_dessert`; both spellings are tried.)
fn attributes(query: &str, words: &[String], named: &[String]) -> Vec<String> {
    let mut attrs: Vec<String> = Vec::new();
    if let Some(a) = lexicon::attribute_named(query).or_else(|| lexicon::category_of(query)) {
        attrs.push(a.to_string());
    }
    let all: Vec<&String> = words.iter().filter(|w| !named.contains(w) && w.as_str() != "user").collect();
    let nouns: Vec<&String> = all.iter().copied().filter(|w| !lexicon::synonyms(w).contains(&"use")).collect();
    for pick in [&nouns, &all] {
        if let [first, second, ..] = pick.as_slice() {
            attrs.push(format!("{first}_{second}"));
        }
    }
    if let Some(n) = nouns.first() {
        attrs.push((*n).clone());
    }
    let mut seen = std::collections::HashSet::new();
    attrs.retain(|a| seen.insert(a.clone()));
    attrs
}

/// A word and the forms it may be listed under: its stem and its singular
/// ("movies" -> "movie", "stories" -> "story", "classes" -> "class").
fn base_forms(w: &str) -> Vec<String> {
    let mut out = vec![w.to_string(), text::stem(w)];
    if let Some(b) = w.strip_suffix("ies") {
        out.push(format!("{b}y"));
    }
    for suffix in ["es", "s"] {
        if let Some(b) = w.strip_suffix(suffix).filter(|b| b.len() >= 3) {
            out.push(b.to_string());
        }
    }
    out.dedup();
    out
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

    #[test]
    fn test_own_words_come_before_their_synonyms() {
        let a = analyze("Which movies did the kids prefer?");
        let own = a.terms.iter().position(|t| t == "prefer").unwrap();
        let synonym = a.terms.iter().position(|t| t == "film").unwrap();
        assert!(own < synonym, "{:?}", a.terms);
        assert!(a.terms.contains(&"children".to_string()), "by stem: {:?}", a.terms);
    }

    #[test]
    fn test_a_named_person_is_a_subject_not_an_attribute() {
        let a = analyze("What is Maria's favorite dessert?");
        assert_eq!(a.keys.first().map(String::as_str), Some("maria.favorite_dessert"), "{:?}", a.keys);
        assert!(a.keys.iter().all(|k| !k.contains(".maria")), "{:?}", a.keys);
    }
}
