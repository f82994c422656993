//! Rule-based extraction: one candidate per stating sentence.
//!
//! A sentence is kept when it states something: not a question, not a
//! pleasantry, and at least three content words, or two when it speaks of
//! its speaker and carries a concrete value ("My editor is Vim.", "I live
//! in Lisbon."; not "Thanks, Caroline!") or a liking ("I like tea.", "We
//! hate merge commits."; not "I love it."). The full pass keeps sentences
//! of every speaker; the detail pass keeps only sentences carrying a
//! concrete value (a number, a date, a capitalized name, a version).
//!
//! An agent's echo is not kept: a sentence of an assistant (or other agent
//! role) whose content words are nearly all in the statements of the
//! person it answers ("Got it -- pnpm and dark mode as default.") adds
//! nothing the person's own statement does not, and storing it would
//! duplicate, and could later outrank, the person's words. A person
//! repeating an agent is kept: that is usually a confirmation.
//!
//! A speaker's sentence of two verb phrases, the second a liking, a use,
//! a want or where one lives or works ("I am working on the billing API
//! and prefer TypeScript.", "I work at Acme and live in Berlin."), is two
//! statements, each its own memory: the second would otherwise be kept
//! only inside the first's, typed and keyed as the first.
//!
//! What it does not do: split other compound statements, resolve
//! pronouns, or notice a restatement that uses other words.

use crate::core::dates;
use crate::core::provider::{Candidate, Line, Pass, Transcript};
use crate::core::text;
use crate::core::text::is_agent_role;
use rustc_hash::FxHashSet as HashSet;

/// Fewest content words a kept sentence has.
pub const MIN_CONTENT_WORDS: usize = 3;

/// Share of an agent sentence's content words found in the answered
/// person's statements at or above which the sentence is an echo.
pub const ECHO_SHARE: f64 = 0.8;

/// Shortest stem that finds a longer word of its family in an echo
/// ([`is_echo`]): the light stemmer leaves derivations apart ("prefer" /
/// "preferences", "deploy" / "deployment"), and an agent restating a
/// person often says the noun for the verb. Below five letters a prefix
/// says too little ("plan" / "planet").
pub const ECHO_PREFIX_MIN: usize = 5;

/// Longest start of a stem, in letters, that [`is_echo`]'s word families
/// compare: a stem is kept whole and by its starts of [`ECHO_PREFIX_MIN`]
/// to this many letters. No word family needs more, and a "word" of
/// 32,000 letters (a hex dump, a run of CJK text without spaces) kept by
/// each of its starts held half a gigabyte.
pub const ECHO_PREFIX_MAX: usize = 32;

const PLEASANTRIES: &[&str] =
    &["thanks", "thank you", "got it", "sounds good", "great", "ok", "okay", "sure", "cool", "nice", "awesome", "lol", "haha", "bye", "hello", "hi"];

/// Words of acknowledgement that carry no content of their own.
const ACKNOWLEDGEMENTS: &[&str] = &[
    "got",
    "noted",
    "understood",
    "sure",
    "okay",
    "ok",
    "alright",
    "done",
    "will",
    "perfect",
    "great",
    "absolutely",
    "certainly",
    "confirmed",
    "gotcha",
    "right",
    "thanks",
    "thank",
];

/// Leading words that tie a sentence to the previous one and carry
/// nothing on their own ("And dark mode by default.").
const CONNECTIVES: &[&str] = &["and", "also", "plus", "but", "so", "oh", "well", "anyway", "then"];

/// Whether a sentence is worth keeping.
pub fn states_something(s: &str) -> bool {
    let t = s.trim();
    if t.ends_with(['?', '？']) {
        return false;
    }
    let lower = t.to_lowercase();
    let bare = lower.trim_matches(|c: char| !c.is_alphanumeric());
    if PLEASANTRIES.contains(&bare) {
        return false;
    }
    let words = text::content_words(t);
    // A run of Chinese, Japanese or Thai text is one token of many words.
    let n: usize = words.iter().map(|w| text::words_in_token(w)).sum();
    n >= MIN_CONTENT_WORDS
        || (n >= MIN_CONTENT_WORDS - 1 && (has_concrete_value(t) || words.iter().any(|w| LIKINGS.contains(&w.as_str()))) && speaks_of_itself(t))
}

/// Verbs of liking: a speaker's short sentence with one says what they
/// like or do not ("I like tea."), where one without a concrete value
/// otherwise says too little to keep.
const LIKINGS: &[&str] = &["like", "likes", "love", "loves", "prefer", "prefers", "enjoy", "enjoys", "hate", "hates", "dislike", "dislikes", "adore", "adores"];

/// Words by which a speaker speaks of itself (or its group).
const FIRST_PERSON: &[&str] = &["i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine", "we", "we're", "we've", "our", "us"];

/// Whether a sentence speaks of its speaker ("My editor is Vim.", "I
/// live in Lisbon.", "Our standup is at 9."): a short one doing so with a
/// concrete value is a fact about them, where one without ("Thanks,
/// Caroline!") is not.
pub fn speaks_of_itself(s: &str) -> bool {
    s.split_whitespace().any(is_first_person)
}

/// Whether a sentence carries a concrete value: a digit, an amount, or a
/// capitalized word past the first that is not the speaker ("I'm", "I'll"
/// name nobody).
pub fn has_concrete_value(s: &str) -> bool {
    let words: Vec<&str> = s.split_whitespace().collect();
    let names = |w: &&str| w.chars().next().is_some_and(char::is_uppercase) && w.len() > 1 && !is_first_person(w);
    s.chars().any(|c| c.is_ascii_digit()) || words.iter().skip(1).any(names) || s.contains('$') || s.contains('€')
}

/// Whether `word` (with its punctuation) is one of [`FIRST_PERSON`].
fn is_first_person(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}')).to_lowercase().replace('\u{2019}', "'");
    FIRST_PERSON.contains(&w.as_str())
}

/// The sentence without a leading connective, recapitalized.
pub fn without_connective(s: &str) -> String {
    let t = s.trim();
    let Some((first, rest)) = t.split_once(char::is_whitespace) else { return t.to_string() };
    let word = first.trim_end_matches(',').to_lowercase();
    let rest = rest.trim_start();
    if !CONNECTIVES.contains(&word.as_str()) || rest.is_empty() {
        return t.to_string();
    }
    let mut c = rest.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => t.to_string(),
    }
}

/// What a line states (its non-question, non-pleasantry sentences), as
/// an echo of it is told ([`is_echo`]).
#[derive(Debug, Default)]
pub struct Stated {
    /// Its stems.
    stems: HashSet<String>,
    /// Every start of [`ECHO_PREFIX_MIN`] to [`ECHO_PREFIX_MAX`] letters
    /// of each stem (the whole stem too, when no longer): a longer word of
    /// one's family is found by its starts, a shorter one by this set,
    /// each a lookup, not a pass over every stem.
    starts: HashSet<String>,
}

impl Stated {
    fn of(line: &Line) -> Stated {
        let stems: HashSet<String> = text::sentences(&line.text).iter().filter(|s| states_something(s)).flat_map(|s| text::stems(s)).collect();
        let starts = stems.iter().flat_map(|s| starts_of(s).map(str::to_string)).collect();
        Stated { stems, starts }
    }

    /// Whether `word` (a stem) is stated, or of one word family with a
    /// stated stem: one starts with the other, of at least
    /// [`ECHO_PREFIX_MIN`] letters ("prefer" / "preference").
    fn holds(&self, word: &str) -> bool {
        self.stems.contains(word) || self.starts.contains(word) || starts_of(word).any(|start| self.stems.contains(start))
    }
}

/// The starts of `stem` of [`ECHO_PREFIX_MIN`] to [`ECHO_PREFIX_MAX`]
/// letters, itself last when no longer: at most that many, whatever the
/// stem's length.
fn starts_of(stem: &str) -> impl Iterator<Item = &str> {
    let letters = stem.chars().take(ECHO_PREFIX_MAX.saturating_add(1)).count();
    let whole = (ECHO_PREFIX_MIN..=ECHO_PREFIX_MAX).contains(&letters).then_some(stem.len());
    let shorter = ECHO_PREFIX_MAX.saturating_add(1).saturating_sub(ECHO_PREFIX_MIN);
    stem.char_indices().map(|(i, _)| i).skip(ECHO_PREFIX_MIN).take(shorter).chain(whole).filter_map(|end| stem.get(..end))
}

/// What the lines an extraction has looked up state, by their place in
/// its transcript: each answered line is read once, however many
/// sentences answer it (a long answer has hundreds).
pub type SaidCache = rustc_hash::FxHashMap<usize, Stated>;

/// Whether sentence `s` of `t.lines[pos]` is an agent echoing the person
/// it answers: the nearest earlier line of another, non-agent speaker.
pub fn is_echo(t: &Transcript, pos: usize, s: &str, said: &mut SaidCache) -> bool {
    let Some((line, before)) = t.lines.get(..=pos).and_then(<[Line]>::split_last) else { return false };
    if !is_agent_role(&line.role) {
        return false;
    }
    let Some(at) = before.iter().rposition(|l| l.role != line.role && !is_agent_role(&l.role)) else {
        return false;
    };
    let Some(answered) = before.get(at) else { return false };
    let said = said.entry(at).or_insert_with(|| Stated::of(answered));
    // Acknowledgements are left out as said ("Noted", not its stem).
    let words: Vec<String> = text::content_words(s).iter().filter(|w| !ACKNOWLEDGEMENTS.contains(&w.as_str())).map(|w| text::stem(w)).collect();
    if words.is_empty() || said.stems.is_empty() {
        return false;
    }
    let found = words.iter().filter(|w| said.holds(w)).count();
    found as f64 / words.len() as f64 >= ECHO_SHARE
}

/// Candidates of a transcript. Content is `"{role}: {sentence}"` with the
/// role capitalized, so a memory says who said it.
pub fn extract(t: &Transcript, pass: Pass) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut said = SaidCache::default();
    for (pos, line) in t.lines.iter().enumerate() {
        let said_on = line.date.as_deref().and_then(crate::core::time::date_of);
        for s in text::sentences(&line.text).iter().flat_map(|s| clauses(s)) {
            if !states_something(&s) || is_echo(t, pos, &s, &mut said) {
                continue;
            }
            if pass == Pass::Detail && !has_concrete_value(&s) {
                continue;
            }
            out.push(Candidate { content: labelled(&line.role, &without_connective(&s)), lines: vec![line.index], event_date: dates::event_date(&s, said_on) });
        }
    }
    out
}

/// Verbs that open a speaker's second statement in one sentence
/// ([`clauses`]): likings, uses, wants and needs, and the exclusive
/// relations' verbs, as "I" or "we" say them.
const SECOND_VERBS: &[&str] = &["prefer", "like", "love", "enjoy", "hate", "dislike", "use", "want", "need", "live", "work"];

/// Words that may stand between "and" and [`SECOND_VERBS`]' verb ("and
/// also prefer", "and I now live").
const SECOND_FILLERS: &[&str] = &["also", "now", "still", "really", "mostly", "usually", "i", "we"];

/// Words before the "and" that make what follows it not a statement of
/// its own: an infinitive or a modal the second verb continues ("I want
/// *to* learn Rust and use it at work", "I *will* update it and use
/// pnpm"), or a negation it may share ("I *don't* smoke and like it").
const NO_SECOND_AFTER: &[&str] = &[
    "to", "will", "would", "can", "could", "should", "might", "must", "shall", "may", "i'll", "we'll", "i'd", "we'd", "won't", "don't", "didn't", "doesn't",
    "never", "not", "can't", "cannot",
];

/// A sentence as the statements it makes: a speaker's sentence opening
/// with "I" or "we" whose later "and" opens a verb of [`SECOND_VERBS`]
/// (after at most two of [`SECOND_FILLERS`]) is two, the second said
/// with the first's subject ("I am working on the billing API and prefer
/// TypeScript." is "I am working on the billing API." and "I prefer
/// TypeScript."); split again where the second holds another. Any other
/// sentence is itself.
pub fn clauses(s: &str) -> Vec<String> {
    let tokens: Vec<&str> = s.split_whitespace().collect();
    let bare = |t: &str| t.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '\u{2019}').to_lowercase().replace('\u{2019}', "'");
    let subject = match tokens.first().map(|t| bare(t)).as_deref() {
        Some("i" | "i'm") => "I",
        Some("we" | "we're") => "We",
        _ => return vec![s.to_string()],
    };
    let second = (2..tokens.len()).find(|&at| {
        let word = |i: usize| tokens.get(i).map_or(String::new(), |t| bare(t));
        if word(at) != "and" || tokens.get(at.saturating_sub(1)).is_some_and(|t| t.ends_with([',', ';', ':'])) {
            return false;
        }
        if (0..at).any(|i| NO_SECOND_AFTER.contains(&word(i).as_str())) {
            return false;
        }
        let verb_at = (at.saturating_add(1)..at.saturating_add(4)).find(|&i| !SECOND_FILLERS.contains(&word(i).as_str())).unwrap_or(at);
        verb_at <= at.saturating_add(3) && SECOND_VERBS.contains(&word(verb_at).as_str()) && tokens.get(verb_at.saturating_add(1)).is_some()
    });
    let Some(at) = second else { return vec![s.to_string()] };
    let first = tokens.get(..at).unwrap_or_default().join(" ");
    let rest: Vec<&str> =
        tokens.get(at.saturating_add(1)..).unwrap_or_default().iter().copied().skip_while(|t| matches!(bare(t).as_str(), "i" | "we")).collect();
    let end = if s.trim_end().ends_with(['.', '!']) { "" } else { "." };
    let mut out = vec![format!("{}.", first.trim_end_matches([',', ';', ':']))];
    out.extend(clauses(&format!("{subject} {}{end}", rest.join(" "))));
    out
}

/// A statement as [`extract`] writes it: its speaker's label, then its
/// words ("User: I live in Lisbon").
pub fn labelled(role: &str, statement: &str) -> String {
    format!("{}: {statement}", speaker(role))
}

/// The longest speaker label [`label_of`] reads, in bytes.
const MAX_LABEL_BYTES: usize = 64;

/// The label and the words of a statement [`labelled`] wrote, whoever
/// spoke (consolidation, folding statements, knows no role): `None` when
/// it opens with nothing a speaker's label could be (a sentence before
/// the colon, a name over [`MAX_LABEL_BYTES`]). Knowing the role,
/// [`statement_body`] reads the label that role's statements carry.
pub fn label_of(content: &str) -> Option<(&str, &str)> {
    content.split_once(": ").filter(|(label, _)| !label.is_empty() && label.len() <= MAX_LABEL_BYTES && !label.contains(['.', '!', '?']))
}

/// The words of a statement after the label [`extract`] writes for its
/// speaker `role` ("User: I live in Lisbon" -> "I live in Lisbon"):
/// `content` whole when it opens with no such label (a colon in a
/// sentence is no speaker's: "Deploy steps: run make").
pub fn statement_body<'c>(content: &'c str, role: &str) -> &'c str {
    content.split_once(": ").filter(|(label, _)| label.eq_ignore_ascii_case(role) || *label == speaker(role)).map_or(content, |(_, body)| body)
}

/// `"user"` -> `"User"`; names are kept as they are.
pub fn speaker(role: &str) -> String {
    let mut c = role.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_a_statements_body_follows_its_speakers_label_only() {
        assert_eq!(statement_body("User: I live in Lisbon.", "user"), "I live in Lisbon.");
        assert_eq!(statement_body("Caroline: I paint on weekends.", "Caroline"), "I paint on weekends.");
        assert_eq!(statement_body("Deploy steps: run make, then wrangler deploy.", "user"), "Deploy steps: run make, then wrangler deploy.");
        assert_eq!(statement_body("Assistant: Note: the cache is warm.", "assistant"), "Note: the cache is warm.");
    }

    fn transcript(lines: &[(&str, &str)]) -> Transcript {
        Transcript {
            session_id: "s".into(),
            lines: lines
                .iter()
                .enumerate()
                .map(|(i, (role, text))| Line { index: i, message_id: format!("m{i}"), role: role.to_string(), date: None, text: (*text).into() })
                .collect(),
        }
    }

    fn contents(t: &Transcript) -> Vec<String> {
        extract(t, Pass::Full).into_iter().map(|c| c.content).collect()
    }

    #[test]
    fn test_assistant_echo_of_the_user_is_not_extracted() {
        let t = transcript(&[("user", "Use pnpm, not npm. And dark mode by default."), ("assistant", "Got it -- pnpm and dark mode as default.")]);
        assert_eq!(contents(&t), vec!["User: Use pnpm, not npm.", "User: Dark mode by default."]);
    }

    #[test]
    fn test_an_echo_saying_the_noun_for_the_verb_is_not_extracted() {
        // The ingest page's basic example.
        let t = transcript(&[("user", "I prefer dark mode and use VS Code."), ("assistant", "Noted your preferences for dark mode and VS Code.")]);
        assert_eq!(contents(&t), vec!["User: I prefer dark mode.", "User: I use VS Code."]);
        let t =
            transcript(&[("user", "We deploy the billing service on Fridays."), ("assistant", "Understood: billing service deployments happen on Fridays.")]);
        assert_eq!(contents(&t), vec!["User: We deploy the billing service on Fridays."]);
        let stated = |text: &str| Stated::of(&Line { index: 0, message_id: "m".into(), role: "user".into(), date: None, text: text.into() });
        assert!(!stated("We plan the trip together.").holds("planet"), "a short stem finds no family");
        assert!(stated("I prefer dark mode.").holds("preference"), "a longer word of the family");
        assert!(stated("My preferences are dark mode.").holds("prefer"), "a shorter one");
        assert!(!stated("I prefer dark mode.").holds("prefix"), "five letters in common are not a family: one must start with the other");
        assert_eq!(starts_of("preference").collect::<Vec<_>>(), ["prefe", "prefer", "prefere", "preferen", "preferenc", "preference"]);
        assert_eq!(starts_of("plan").count(), 0);
        assert_eq!(starts_of("été").count(), 0, "letters, not bytes");
        let long = "a".repeat(32_000);
        let starts: Vec<&str> = starts_of(&long).collect();
        assert_eq!(starts.len(), ECHO_PREFIX_MAX + 1 - ECHO_PREFIX_MIN, "at most that many, whatever the length");
        assert_eq!(starts.last().map(|s| s.len()), Some(ECHO_PREFIX_MAX));
        let exactly = "b".repeat(ECHO_PREFIX_MAX);
        assert_eq!(starts_of(&exactly).last(), Some(exactly.as_str()), "a stem no longer than the limit is kept whole");
    }

    #[test]
    fn test_assistant_adding_new_content_is_kept() {
        let t =
            transcript(&[("user", "Set up the project with React and TypeScript."), ("assistant", "Done. Scaffolded a React + TS project targeting Workers.")]);
        assert!(contents(&t).contains(&"Assistant: Scaffolded a React + TS project targeting Workers.".to_string()));
    }

    #[test]
    fn test_answer_to_a_question_is_not_an_echo() {
        let t = transcript(&[("user", "Do we deploy staging from the main branch?"), ("assistant", "We deploy staging from the main branch.")]);
        assert_eq!(contents(&t), vec!["Assistant: We deploy staging from the main branch."]);
    }

    #[test]
    fn test_person_repeating_is_kept() {
        let t = transcript(&[("assistant", "The staging cluster runs Debian twelve."), ("user", "Right, staging cluster runs Debian twelve.")]);
        assert_eq!(contents(&t).len(), 2);
    }

    #[test]
    fn test_a_short_fact_about_the_speaker_is_kept_and_a_short_greeting_is_not() {
        let t = transcript(&[("user", "My cat is named Tom. I deploy on Fridays. My editor is Vim."), ("assistant", "Thanks, Caroline! Great job.")]);
        assert_eq!(contents(&t), vec!["User: My cat is named Tom.", "User: I deploy on Fridays.", "User: My editor is Vim."]);
        assert!(states_something("Our standup is at 9."));
        assert!(!states_something("Editor is Vim."), "two content words, but not of the speaker");
        assert!(!states_something("I love it."), "of the speaker, but nothing concrete");
        assert!(states_something("I like tea."), "a liking of the speaker's");
        assert!(!states_something("Cats love."), "a liking, but not of the speaker's");
        for filler in ["Sure, I'm ready.", "Wait, I'm confused.", "Ok I'm back.", "Sounds good, I'm in."] {
            assert!(!states_something(filler), "the speaker's own 'I'm' is no value: {filler}");
        }
        assert!(states_something("I'm moving to Lisbon."), "a name beside it is");
    }

    #[test]
    fn test_a_speakers_second_liking_use_or_relation_is_a_statement_of_its_own() {
        assert_eq!(clauses("I am working on the billing API and prefer TypeScript."), vec!["I am working on the billing API.", "I prefer TypeScript."]);
        assert_eq!(clauses("I work at Acme and I now live in Berlin."), vec!["I work at Acme.", "I now live in Berlin."]);
        assert_eq!(clauses("We use Postgres and also like Redis and want Kafka"), vec!["We use Postgres.", "We also like Redis.", "We want Kafka."]);
        // Anything else stays whole: another verb, a list, another subject.
        for whole in [
            "I want to learn Rust and use it at work.",
            "I will update the config and use pnpm.",
            "I don't smoke and like it that way.",
            "I used to live in Paris and work at Renault.",
            "I like hiking and biking.",
            "I went home and cooked dinner.",
            "My sister lives in Rome and works at Fiat.",
            "I like tea, and coffee.",
            "I like it and",
        ] {
            assert_eq!(clauses(whole), vec![whole], "{whole}");
        }
    }

    #[test]
    fn test_the_chat_agent_examples_message_gives_a_task_and_a_preference() {
        let t = transcript(&[("user", "I am working on the billing API and prefer TypeScript.")]);
        assert_eq!(contents(&t), vec!["User: I am working on the billing API.", "User: I prefer TypeScript."]);
    }

    #[test]
    fn test_leading_connective_is_dropped() {
        assert_eq!(without_connective("And dark mode by default."), "Dark mode by default.");
        assert_eq!(without_connective("Android builds are slow."), "Android builds are slow.");
        assert_eq!(without_connective("So,"), "So,");
    }
}
