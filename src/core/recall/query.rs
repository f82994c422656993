//! What the full-text channels search for: a recall's query as its own
//! words, the analyzer's expansions and its stop words, the periods it
//! names, whether it asks when, and the profile's speakers it names
//! ([`TextQuery`]); and the FTS5 phrases each side is searched as.
//!
//! The words of a speaker the query names ([`TextQuery::speakers`]: all
//! of a role's words, as for the speaker correction) are left out of the
//! full-text statements, unless they are all the query has: the speaker
//! correction (`score::SPEAKER_BOOST`) already weighs who said a text,
//! while as a search word a name matches nearly everything that speaker
//! ever said (a message has its speaker in the `role` column, a memory's
//! content opens with its speaker's name). In a conversation of two that
//! is half the profile, each row scored for a word that ranks nothing
//! (LoCoMo recall@10 is the same with and without it, in each
//! conversation; the statements cost about half as much). That holds
//! where the speaker says much of the profile: one who said at most
//! [`NAME_SEARCH_SHARE`] of its messages keeps the name as a search word
//! ([`TextQuery::searching_names_of`]), since there it tells one
//! conversation from the others.
//!
//! Nothing here reads the store or scores a text: the channels read
//! (`recall::channels`) and the scoring weighs (`recall::score`).

use crate::core::recall::places::quoted;
use crate::core::recall::porter;
use crate::core::text;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

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
    /// The naming as the raw-messages channel reads it: a speaker named
    /// by the speaker's words, and no other.
    pub fn by_name_only(self) -> Naming {
        match self {
            Naming::ByName => Naming::ByName,
            Naming::FirstPerson | Naming::Unnamed => Naming::Unnamed,
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

/// Words by which a question refers to its asker (the `user` role).
const FIRST_PERSON: &[&str] = &["i", "me", "my", "mine", "myself"];

/// What the full-text channels search for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TextQuery {
    /// The query's own words: full weight.
    pub primary: Vec<String>,
    /// What the analyzer added (synonyms): weighed less (`score::EXPANSION_WEIGHT`).
    pub expansions: Vec<String>,
    /// The query's stop words ("now", "my", "how"): weighed less
    /// (`score::FUNCTION_WEIGHT`).
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
    /// Whether it names a speaker of the profile, by name or in the first
    /// person (the user): a minor one's name, searched again
    /// ([`TextQuery::searching_names_of`]), still counts.
    pub about_a_speaker: bool,
}

/// The word that reaches the other side of the Porter stemmer's `y`/`i`
/// split: the stemmer turns a final `y` into `i` ("deploy", "deployed" ->
/// `deploi`) but strips a derivational suffix after that step
/// ("deployment", "employer" -> `deploy`, `employ`), so the words of one
/// family are indexed under two stems: a question about "deployments"
/// missed texts that say "deployed", and one about what was "deployed"
/// missed a "deployment". Searched as an expansion: a form of the asker's
/// word, not the word.
///
/// - A derived word, its stem ending in such a `y`: that stem, a word
///   itself, which stems to the `i` form ("deployment" -> "deploy").
/// - A word whose stem ends in an `i` made of a `y`: that `y` form with
///   `-ment`, which the stemmer strips back to it ("deployed" ->
///   "deployment"), where it does (a stem of more than one syllable
///   after its first vowels, the stemmer's own condition for `-ment`,
///   `-er` and `-able`; "played", "city" and "key" have no such form).
///   A word made up this way that no text holds ("todayment") costs one
///   lookup of a term that is not there.
fn other_stem_form(word: &str) -> Option<String> {
    let stem = porter_stem(word)?;
    if let Some(base) = stem.strip_suffix('y') {
        return (porter_stem(&stem).as_deref() == Some(format!("{base}i").as_str())).then_some(stem);
    }
    let y_form = format!("{}y", stem.strip_suffix('i')?);
    let derived = format!("{y_form}ment");
    let from_y = porter_stem(&y_form).as_deref() == Some(stem.as_str());
    (from_y && porter_stem(&derived).as_deref() == Some(y_form.as_str())).then_some(derived)
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
            about_a_speaker: false,
        }
    }

    /// This query in a profile whose messages are spoken by `roles`: the
    /// words of the roles it names ("Maria", every word of "John Smith",
    /// "user" for a question in the first person) are kept apart.
    pub fn with_speakers(mut self, roles: &[String]) -> TextQuery {
        self.speakers = roles.iter().filter(|r| self.names_speaker(r)).flat_map(|r| text::tokens(r)).collect();
        self.about_a_speaker = !self.speakers.is_empty();
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
/// space (so no term can be read as FTS syntax), empty ones left out. A
/// term with Chinese or Japanese letters is searched as the words the
/// index holds of it ([`text::index_form`]), each a phrase of its own: a
/// run's pairs of letters, any one of them a match ("上海在哪里" finds a
/// text saying "上海").
pub fn phrases(terms: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in terms {
        let plain: String = t.chars().map(|c| if c.is_alphanumeric() { c } else { ' ' }).collect();
        let words: Vec<&str> = plain.split_whitespace().collect();
        if plain.chars().any(text::is_cjk_letter) {
            for w in text::index_form(&words.join(" ")).split_whitespace() {
                if !out.iter().any(|p| p == w) {
                    out.push(w.to_string());
                }
            }
        } else if !words.is_empty() {
            out.push(words.join(" "));
        }
    }
    out
}

/// An FTS5 MATCH expression OR-ing the [`phrases`], each quoted. `None`
/// when there is nothing to search for.
pub fn match_expr(terms: &[String]) -> Option<String> {
    quoted(&phrases(terms))
}

/// The [`phrases`] of one side of a [`TextQuery`] (its own words or its
/// expansions) without the words naming a speaker (see the module docs),
/// unless those are all the terms there are.
pub fn query_phrases(q: &TextQuery, terms: &[String]) -> Vec<String> {
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
    fn test_a_word_on_either_side_of_the_stemmers_y_split_also_searches_the_other() {
        let stem = |w: &str| porter_stem(w).unwrap();
        for (asked, said) in [("deployment", "deploy"), ("deployments", "deployed"), ("employer", "employ"), ("enjoyment", "enjoys")] {
            assert_ne!(stem(asked), stem(said), "the split this mends: {asked} / {said}");
            let other = other_stem_form(asked).unwrap_or_else(|| panic!("{asked} has another form"));
            assert_eq!(stem(&other), stem(said), "{asked} -> {other} reaches {said}");
        }
        for (asked, said) in [("deployed", "deployment"), ("deploy", "deployments"), ("enjoyed", "enjoyable"), ("employs", "employer")] {
            assert_ne!(stem(asked), stem(said), "the split this mends: {asked} / {said}");
            let other = other_stem_form(asked).unwrap_or_else(|| panic!("{asked} has another form"));
            assert_eq!(stem(&other), stem(said), "{asked} -> {other} reaches {said}");
        }
        for plain in ["manager", "key", "happy", "city", "played", "studies", "ymca", "i"] {
            assert_eq!(other_stem_form(plain), None, "{plain}: no other form is searched");
        }
        let q = TextQuery::new("Summarize recent deployment events", &[], day());
        assert!(q.expansions.contains(&"deploy".to_string()), "{:?}", q.expansions);
        assert!(!q.primary.contains(&"deploy".to_string()), "a form of the asker's word, weighed as an expansion");
        let q = TextQuery::new("When was the billing service deployed?", &[], day());
        assert!(q.expansions.contains(&"deployment".to_string()), "{:?}", q.expansions);
        let both = TextQuery::new("which deployment was deployed", &[], day());
        assert!(both.expansions.is_empty(), "its stem is searched already: {:?}", both.expansions);
    }

    #[test]
    fn test_a_query_naming_a_minor_speaker_is_still_about_a_speaker() {
        let roles = vec!["Maria".to_string(), "Will".to_string(), "user".to_string()];
        let q = TextQuery::new("What did Will say?", &[], day()).with_speakers(&roles);
        assert!(q.about_a_speaker && q.speakers.contains("will"));
        // Will said little: the name is searched as a word again (a stop
        // word here, so not searched at all), and the query is still about him.
        let q = q.searching_names_of(&roles, &["Will"]);
        assert!(q.speakers.is_empty() && q.about_a_speaker);
        assert!(!TextQuery::new("What is the capital of France?", &[], day()).with_speakers(&roles).about_a_speaker);
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
