//! Rule-based classification: type, topic key, summary, search queries.
//!
//! Types, first rule that matches:
//! * task: "working on", "TODO", "next I will", "need to", "going to",
//!   "in progress", "currently", or a note that opens with work under way
//!   or still to do and no one doing it ("Investigating the 500 errors",
//!   "Need to update the README");
//! * instruction: starts with an imperative verb, or says "always",
//!   "never", "make sure", "to do X, run Y", "use X (not Y)", states a
//!   policy ("requires approval", "is not allowed") or a preference about
//!   how to answer ("prefers concise answers");
//! * event: past-tense action with a date or a past time marker;
//! * fact: everything else (stable preferences and properties).
//!
//! Keys: `subject.attribute`, lowercased. The subject is the speaker
//! (roles "user"/"assistant" map to `user`/`project`). The attribute is,
//! first rule that applies:
//! * the category of a known thing the sentence names (`package_manager`
//!   for pnpm), so "use pnpm" and "switch to npm" share a key;
//! * the subject phrase of "my/our/the X Y is ..." when it has two or
//!   three content words (`favorite_color`, `api_rate_limit`);
//! * else the sentence's first three content words: a narrow key, so that
//!   two different statements rarely collide. Without a model, a missed
//!   supersession (both versions stay active) is the safer error than a
//!   false one (a true memory leaves recall).

use crate::core::model::MemoryType;
use crate::core::provider::{Candidate, Classification, Transcript};
use crate::core::rules::{extract, lexicon};
use crate::core::text;
use regex::Regex;
use std::sync::OnceLock;

const IMPERATIVES: &[&str] = &[
    "use",
    "always",
    "never",
    "run",
    "make",
    "set",
    "add",
    "remove",
    "keep",
    "avoid",
    "prefer",
    "switch",
    "don't",
    "do",
    "install",
    "deploy",
    "call",
    "write",
    "put",
    "store",
    "ensure",
    "check",
    "follow",
    "enable",
    "disable",
    "configure",
];

/// The longest subject a copula statement's key is made from.
const COPULA_SUBJECT_MAX_CHARS: usize = 60;

fn re(cell: &'static OnceLock<Regex>, p: &str) -> &'static Regex {
    crate::core::text::constant_regex(cell, p)
}

/// Verbs of work under way that open a note of it with no one named
/// doing it ("Investigating intermittent 500 errors", "Refactoring the
/// billing module"): a task.
const WORK_UNDER_WAY: &[&str] =
    &["investigating", "debugging", "fixing", "refactoring", "migrating", "implementing", "reviewing", "troubleshooting", "drafting"];

/// Verbs that make a statement of what opens it ("Debugging *is* my
/// favorite part", "Migrating *took* two weeks"): a note of work under
/// way has none ([`WORK_UNDER_WAY`]).
const FINITE_VERBS: &[&str] =
    &["is", "are", "was", "were", "has", "have", "had", "took", "takes", "made", "makes", "became", "seems", "seemed", "will", "would", "can", "could"];

/// A team's rule stated as such: something requires approval, review or
/// sign-off, or is not allowed ("Database migrations require approval
/// before execution"): an instruction.
const POLICY_PATTERN: &str = r"(?-u:\b)(requires? (approval|review|sign-off|permission)|(is|are) not allowed|(is|are) (forbidden|prohibited))(?-u:\b)";

/// Leading words skipped when looking for an imperative verb.
const LEAD_INS: &[&str] = &["and", "but", "so", "also", "please", "then", "actually", "now", "ok", "okay", "well", "oh", "hey", "instead"];

pub fn kind_of(body: &str, dated: bool) -> MemoryType {
    let lower = body.to_lowercase();
    let tokens = text::tokens(&lower);
    if is_task(&lower, &tokens) {
        MemoryType::Task
    } else if is_instruction(&lower, &tokens) {
        MemoryType::Instruction
    } else if (is_event(&lower, dated) || tells_a_completed_action(&tokens)) && relation(body).is_none() {
        // A present relation said beside the action ("I just moved, I
        // live in Lisbon now") is what stays true: a fact, keyed as one.
        MemoryType::Event
    } else {
        MemoryType::Fact
    }
}

/// The words of a text ([`text::tokens`]) after its lead-ins.
fn opening(tokens: &[String]) -> impl Iterator<Item = &str> {
    tokens.iter().map(String::as_str).skip_while(|w| LEAD_INS.contains(w))
}

/// Work under way or still to do.
fn is_task(lower: &str, tokens: &[String]) -> bool {
    static TASK: OnceLock<Regex> = OnceLock::new();
    static DOING: OnceLock<Regex> = OnceLock::new();
    let mut opening = opening(tokens);
    let first = opening.next();
    // A note of work under way or still to do, with no one named doing it
    // ("Investigating the 500 errors", "Need to update the README"): a
    // clause of its own, with no verb after the opening one ("Debugging
    // is my favorite part", "Migrating took two weeks" say something of
    // the work, not that it is under way).
    let a_note = !tokens.iter().any(|w| FINITE_VERBS.contains(&w.as_str()));
    if a_note && (first.is_some_and(|w| WORK_UNDER_WAY.contains(&w)) || (first == Some("need") && opening.next() == Some("to"))) {
        return true;
    }
    // The speaker's own work under way ("I'm investigating the 500
    // errors", "We are still debugging the login flow").
    if text::holds_any(lower, WORK_UNDER_WAY)
        && text::built_regex(&DOING, || format!(r"(?-u:\b)(i['’]m|i am|we['’]re|we are)( still| currently| now)? ({})(?-u:\b)", WORK_UNDER_WAY.join("|")))
            .is_match(lower)
    {
        return true;
    }
    // Each pattern is tried only when the text holds a word every match
    // of it holds (text::holds_any): most statements compile none.
    let task = ["working on", "todo", "to-do", "next i", "need to", "going to", "in progress", "currently"];
    text::holds_any(lower, &task)
        && re(&TASK, r"(?-u:\b)(working on|todo|to-do|next i will|next i'll|i need to|we need to|i'm going to|we're going to|in progress|currently (building|fixing|working|writing))(?-u:\b)")
            .is_match(lower)
}

/// How to work: an imperative, a team's rule, a standing instruction, or
/// a preference about how to answer (guidance for the assistant).
fn is_instruction(lower: &str, tokens: &[String]) -> bool {
    static INSTR: OnceLock<Regex> = OnceLock::new();
    static HOW_TO_ANSWER: OnceLock<Regex> = OnceLock::new();
    static POLICY: OnceLock<Regex> = OnceLock::new();
    let instruction = ["always", "never", "make sure", "by default", ", run", "must", "from now on", "going forward"];
    // A policy stated of the speaker's own things is a fact about them
    // ("My visa requires approval", "Dogs are not allowed in my building").
    let policy = || {
        text::holds_any(lower, &["require", "allowed", "forbidden", "prohibited"])
            && !tokens.iter().any(|w| matches!(w.as_str(), "i" | "my" | "me" | "mine"))
            && re(&POLICY, POLICY_PATTERN).is_match(lower)
    };
    opening(tokens).next().is_some_and(|w| IMPERATIVES.contains(&w))
        || policy()
        || (text::holds_any(lower, &instruction)
            && re(&INSTR, r"(?-u:\b)(always|never|make sure|by default|to \w+.*, run|should always|must|from now on|going forward)(?-u:\b)").is_match(lower))
        || (text::holds_any(lower, &["prefer", "want", "like", "ask"])
            && re(
                &HOW_TO_ANSWER,
                r"(?-u:\b)(prefers?|wants?|likes?|asks? for)(?-u:\b)[^.!?]*(?-u:\b)(answers?|responses?|replies|explanations?|tone|formatting|bullet points|code examples?)(?-u:\b)",
            )
            .is_match(lower))
}

/// Something that happened at a time: said in the past, with a date or a
/// phrase of time.
fn is_event(lower: &str, dated: bool) -> bool {
    static PAST: OnceLock<Regex> = OnceLock::new();
    (dated || lower.contains(" ago") || lower.contains("last ") || crate::core::dates::names_a_month_day(lower, crate::core::dates::MonthNames::AnyCase))
        && re(&PAST, r"(?-u:\b)(\w+ed|went|got|had|was|were|made|took|gave|saw|met|began|won|lost|bought|ran|came|left|did)(?-u:\b)").is_match(lower)
}

/// Who or what a completed action is told of, before its verb: a
/// pronoun alone, or one of these and a noun ("the team", "our CI").
const DOERS: &[&str] = &["i", "we", "they", "he", "she", "you", "it"];
/// Words that may stand between the doer and the verb of a completed
/// action ("we finally shipped").
const ACTION_ADVERBS: &[&str] = &["just", "finally", "already", "successfully", "recently", "also", "then", "eventually", "officially"];
/// Verbs in the past tense that tell a completed action without "-ed".
const IRREGULAR_ACTIONS: &[&str] = &[
    "went", "got", "made", "took", "gave", "met", "began", "won", "lost", "bought", "ran", "came", "left", "built", "wrote", "sent", "sold", "found", "broke",
    "paid", "set", "brought", "drove", "flew", "spent", "caught", "chose", "did", "forgot", "held", "hid", "kept", "led", "quit", "rode", "rose", "sang",
    "shot", "shut", "split", "spoke", "stole", "swam", "taught", "threw", "told", "wore", "saw",
];
/// Verbs that close a piece of work, which open a note of it with no one
/// named doing it ("Completed migration from REST to GraphQL").
const WORK_DONE: &[&str] = &[
    "deployed",
    "completed",
    "finished",
    "shipped",
    "released",
    "launched",
    "merged",
    "fixed",
    "resolved",
    "migrated",
    "upgraded",
    "installed",
    "published",
    "closed",
    "delivered",
    "rolled",
    "reverted",
    "implemented",
    "refactored",
    "submitted",
    "signed",
    "approved",
    "decided",
];
/// Past forms that tell a state, a liking or a habit rather than an
/// action ("I liked it", "I used to"), or read as adjectives.
const NOT_ACTIONS: &[&str] = &[
    "liked",
    "loved",
    "hated",
    "preferred",
    "wanted",
    "needed",
    "wished",
    "hoped",
    "believed",
    "seemed",
    "used",
    "owned",
    "lived",
    "enjoyed",
    "interested",
    "excited",
    "based",
    "supposed",
    "tired",
    "married",
    "related",
    "allowed",
    "required",
    "expected",
    "planned",
    "scheduled",
    "tried",
    "considered",
    "wondered",
    "appreciated",
    "assumed",
    "imagined",
    "feared",
    "worried",
    "bored",
    "confused",
    "surprised",
    "pleased",
];

/// A completed action told in the past tense with no date ("Deployed
/// v2.3.0 to production", "We decided to use PostgreSQL", "The team
/// finished the audit"): the published interface's events are "completed
/// actions anchored to a point in time", and a statement is anchored to
/// when it was said (its event date, unless its text names another). The
/// verb opens the statement, or follows its doer (a pronoun, or a
/// determiner and a noun) and at most one adverb; a verb of liking, of a
/// state or of a habit is no action ([`NOT_ACTIONS`]), nor is "was" or
/// "had".
fn tells_a_completed_action(tokens: &[String]) -> bool {
    let words: Vec<&str> = opening(tokens).take(4).collect();
    let (told_of, after_doer) = match words.as_slice() {
        [first, rest @ ..] if DOERS.contains(first) => (true, rest),
        [first, _, rest @ ..] if DETERMINERS.contains(first) => (true, rest),
        all => (false, all),
    };
    let verb = match after_doer {
        [adverb, verb, ..] if ACTION_ADVERBS.contains(adverb) => *verb,
        [verb, ..] => *verb,
        [] => return false,
    };
    if !told_of {
        // A note with no doer ("Deployed v2.3.0 to production"): one of
        // the verbs that close a piece of work, and no other verb after
        // it ("Scheduled maintenance is on Friday" opens with an adjective).
        return WORK_DONE.contains(&verb) && !tokens.iter().any(|w| FINITE_VERBS.contains(&w.as_str()));
    }
    let regular = verb.len() >= 5 && verb.ends_with("ed") && !verb.ends_with("eed");
    (regular || IRREGULAR_ACTIONS.contains(&verb)) && !NOT_ACTIONS.contains(&verb)
}

/// Words that open a sentence without naming who it is about.
const NOT_NAMES: &[&str] = &[
    "i",
    "we",
    "you",
    "he",
    "she",
    "they",
    "it",
    "my",
    "our",
    "your",
    "his",
    "her",
    "their",
    "its",
    "the",
    "a",
    "an",
    "this",
    "that",
    "these",
    "those",
    "user",
    "users",
    "assistant",
    "there",
    "here",
];

/// What a statement names as its subject when that is not the speaker: a
/// run of two or more capitalized words opening it ("Project Alpha uses
/// PostgreSQL"), none of them a pronoun or a known thing (in "Postgres
/// Pro is our database" the subject is the value). One capitalized word
/// is only a sentence's first ("Use pnpm"), so it names nothing.
fn named_subject(body: &str) -> Option<String> {
    let mut words = Vec::new();
    let mut tokens = body.split_whitespace().skip_while(|t| LEAD_INS.contains(&t.trim_end_matches(',').to_lowercase().as_str()));
    // The word after the run: a subject is followed by its verb, in
    // lowercase; a greeting ("Hi Claude, …", "Good Morning! …") is
    // followed by punctuation, and names nothing the statement is about.
    let verb = loop {
        let token = tokens.next()?;
        let word = token.trim_matches(|c: char| !c.is_alphanumeric());
        if !word.chars().next().is_some_and(char::is_uppercase) || NOT_NAMES.contains(&word.to_lowercase().as_str()) {
            break token;
        }
        if token.ends_with([',', '.', ':', ';', '!', '?']) {
            return None;
        }
        words.push(word);
    };
    let phrase = words.join(" ");
    if words.len() < 2 || !verb.chars().next().is_some_and(char::is_lowercase) || lexicon::category_of(&phrase).is_some() {
        return None;
    }
    let words = key_words(&phrase);
    (!words.is_empty()).then(|| words.into_iter().take(3).collect::<Vec<_>>().join("_"))
}

/// Most identifiers a key keeps, and their longest.
const MAX_KEY_IDENTIFIERS: usize = 3;
const MAX_IDENTIFIER_CHARS: usize = 20;

/// Words after which a number names a thing in any case when they open
/// the statement's subject, as its first or second word ("Project number
/// 3 uses …", "ticket 4512 is …"): later in a statement such a number is
/// its value ("the meeting is in room 12", "my phone number 5550100"), as
/// is a number after another word in lower case ("port 8080").
const NAMING_WORDS: &[&str] = &["number", "no", "id", "ticket", "issue", "case", "room"];

/// How many words may come before a naming word ([`NAMING_WORDS`]) that
/// names its subject.
const NAMING_WORD_MAX_AT: usize = 1;

/// Numbers that name a thing rather than count it: a number after a
/// capitalized word ("Order 1234", "Room 12") or after a naming word
/// ([`NAMING_WORDS`]: "project number 3") with at most `naming_at` words
/// before it (the whole of a copula's subject; the opening of any other
/// statement), one written `#42`, or a
/// version ("v2.3.0"). Kept in a key built from a statement's words, so
/// two orders or two releases are two topics; counts ("2 cats", "150
/// miles") stay out, so an updated count supersedes the old one.
fn identifiers(body: &str, naming_at: usize) -> Vec<String> {
    static ID: OnceLock<Regex> = OnceLock::new();
    let mut out: Vec<String> = Vec::new();
    // The Wasm build's regex has no Unicode classes beyond `\w`, `\d`
    // and `\s` (Cargo.toml), so "capitalized" is checked on the capture;
    // after a word that is not, the search resumes at the space before
    // its number, which may itself be a version.
    // Every match holds a digit (`\d` is a numeric character).
    if !body.chars().any(char::is_numeric) {
        return out;
    }
    let pattern = re(&ID, r"(?:^|[^\w.])(?:(#\d+)|(v\d+(?:\.\d+)+|\d+(?:\.\d+){2,})|(\w+) (\d+))\b");
    let mut at = 0;
    while let Some(c) = pattern.captures_at(body, at).filter(|_| out.len() < MAX_KEY_IDENTIFIERS) {
        let whole = c.get(0).map_or(body.len(), |w| w.end());
        let found = match (c.get(1).or_else(|| c.get(2)), c.get(3), c.get(4)) {
            (Some(m), _, _) => Some(m),
            (None, Some(word), Some(number))
                if word.as_str().chars().next().is_some_and(char::is_uppercase)
                    || (NAMING_WORDS.contains(&word.as_str().to_lowercase().as_str())
                        && body.get(..word.start()).is_some_and(|before| before.split_whitespace().count() <= naming_at)) =>
            {
                Some(number)
            }
            _ => None,
        };
        at = match (found, c.get(4)) {
            (None, Some(number)) => number.start().saturating_sub(1),
            _ => whole,
        };
        let Some(m) = found else {
            continue;
        };
        let id = m.as_str().trim_start_matches('#').to_lowercase().replace('.', "_");
        if id.len() <= MAX_IDENTIFIER_CHARS && !out.contains(&id) && out.len() < MAX_KEY_IDENTIFIERS {
            out.push(id);
        }
    }
    out
}

/// Whose a statement is, as a key's first part: the user's, the
/// project's (what the assistant, an agent or the system said), or a
/// named speaker's. Not every role `text::is_agent_role` knows: a `bot`,
/// `model`, `tool`, `function` or `developer` speaker's keys have been
/// stored under its own name, and a later value must find them there.
fn subject(role: &str) -> String {
    if text::is_user_role(role) {
        return "user".into();
    }
    match role.to_lowercase().as_str() {
        "assistant" | "ai" | "system" | "agent" => "project".into(),
        other => text::normalize_key(other).unwrap_or_else(|| "user".into()),
    }
}

/// Content words usable in a key: no imperative verbs, no bare numbers.
fn key_words(s: &str) -> Vec<String> {
    text::content_words(s)
        .into_iter()
        .filter(|w| !IMPERATIVES.contains(&w.as_str()) && !LEAD_INS.contains(&w.as_str()) && !w.chars().all(|c| c.is_ascii_digit()))
        .collect()
}

/// The attribute phrase of "my/our/the X Y is ...", when it is two or
/// three content words.
/// Words that open a copula subject ("my favorite color is ...").
const DETERMINERS: &[&str] = &["my", "our", "the", "his", "her", "their", "your"];

fn copula_subject(body: &str) -> Option<String> {
    // The pattern is anchored on one of these words: most statements open
    // otherwise and need not run it (it is the costliest of the rules).
    let first = body.trim_start().split(char::is_whitespace).next().unwrap_or("");
    if !DETERMINERS.iter().any(|d| first.eq_ignore_ascii_case(d)) {
        return None;
    }
    static COPULA: OnceLock<Regex> = OnceLock::new();
    // The subject is 3 to 60 characters, its upper bound checked here: as
    // `{3,60}?` the pattern compiled to an automaton of ~2 MB, kept for the
    // isolate's life and built in the middle of its first ingest, where it
    // splits the Wasm memory's free space. The match is the same: the
    // shortest subject of at least 3 characters, refused past 60 (a
    // longer one means no shorter one followed by the verb).
    let c = re(&COPULA, r"(?i)^\s*(?:my|our|the|his|her|their|your)\s+([\w' -]{3,}?)\s+(?:is|are|was|were|has been|have been)\b").captures(body)?;
    if c[1].chars().count() > COPULA_SUBJECT_MAX_CHARS {
        return None;
    }
    let mut words = key_words(&c[1]);
    if !(2..=3).contains(&words.len()) {
        return None;
    }
    // A number naming the subject ("the fix for ticket 4512 is …") keeps
    // two subjects apart; the predicate's numbers are its value.
    words.extend(identifiers(&c[1], usize::MAX));
    words.extend(scope_of_number(body.get(c.get(0).map_or(0, |m| m.end())..).unwrap_or("")));
    Some(words.join("_"))
}

/// Prepositions that open what a value holds for ([`scope_of_number`]).
const SCOPE_PREPOSITIONS: &[&str] = &["on", "for", "in"];

/// Most words of a scope phrase kept in a key.
const MAX_SCOPE_WORDS: usize = 3;

/// What a copula's number holds for, when its predicate says so with a
/// preposition and a determiner ("is 100 requests per minute *on the
/// free plan*", "is 30 seconds *in our staging cluster*"): the phrase's
/// content words, up to the clause's end. Two plans' limits, two
/// environments' timeouts are two topics, so one does not replace the
/// other; a value said again for the same scope still does. Only after a
/// number: a word value's phrase is its own ("my favorite restaurant is
/// the one in the village"). A later value said without the scope keeps a
/// topic of its own, a missed supersession (the safer error without a
/// model, see the module docs).
fn scope_of_number(predicate: &str) -> Vec<String> {
    let tokens: Vec<&str> = predicate.split_whitespace().collect();
    let Some(number_at) = tokens.iter().position(|t| t.chars().any(|c| c.is_ascii_digit())) else {
        return Vec::new();
    };
    let bare = |t: &str| t.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    let rest = tokens.get(number_at..).unwrap_or_default();
    let Some(at) = rest.windows(3).position(|w| match w {
        [preposition, determiner, _] => {
            !preposition.ends_with([',', '.', ';', ':', '!', '?'])
                && SCOPE_PREPOSITIONS.contains(&bare(preposition).as_str())
                && DETERMINERS.contains(&bare(determiner).as_str())
                && !determiner.ends_with([',', '.', ';', ':', '!', '?'])
        }
        _ => false,
    }) else {
        return Vec::new();
    };
    let mut phrase = Vec::new();
    for token in rest.get(at.saturating_add(2)..).unwrap_or_default() {
        phrase.push(*token);
        if token.ends_with([',', '.', ';', ':', '!', '?']) {
            break;
        }
    }
    key_words(&phrase.join(" ")).into_iter().take(MAX_SCOPE_WORDS).collect()
}

/// Relations a person holds to one named thing at a time, as a key's
/// attribute: where they live, whom they work for. Each is a verb as
/// written (present tense: "I worked at Google" is a past job, not a
/// change of the present one), its preposition and the attribute. A
/// closed list, as the category lexicon is: most relations to a name are
/// held to several at once ("I volunteer at the Food Bank", "I'm fluent
/// in French", "I work with Sarah"), and without a model a missed
/// supersession is the safer error (see the module docs).
const EXCLUSIVE_RELATIONS: &[(&str, &str, &str)] = &[
    ("live", "in", "home"),
    ("lives", "in", "home"),
    ("living", "in", "home"),
    ("reside", "in", "home"),
    ("resides", "in", "home"),
    ("residing", "in", "home"),
    ("based", "in", "home"),
    ("work", "at", "employer"),
    ("works", "at", "employer"),
    ("working", "at", "employer"),
    ("work", "for", "employer"),
    ("works", "for", "employer"),
    ("working", "for", "employer"),
];

/// Words between the speaker and a relation's verb that leave the
/// relation as it is ("I now live in", "I'm currently based in").
const RELATION_FILLERS: &[&str] = &["now", "currently", "still", "just", "actually", "mostly", "usually", "recently", "really", "am", "are"];

/// Words saying a relation is one more, not a change ("I also work at
/// Globex", "I work at Globex too").
const ANOTHER: &[&str] = &["also", "too", "both", "additionally"];

/// The attribute of a person's statement of an exclusive relation to a
/// named thing ([`EXCLUSIVE_RELATIONS`]: "I live in Lisbon", "We now work
/// at Globex", "I'm based in the Netherlands"): `home`, `employer`. The
/// speaker says "I" or "we" first; the value is a capitalized word after
/// the preposition (after "the" too; or a word in a script with no case,
/// "東京"), not a month or a day of the week ("in May" is a when). A later
/// statement of the relation to another name supersedes it, as a
/// copula's does ("my city is ..."). Not one saying it is another
/// ([`ANOTHER`]): it keeps a key of its own words.
fn relation(body: &str) -> Option<String> {
    // Most statements hold none of the relations' verbs: nothing more is
    // read of them.
    let folded_body = body.to_lowercase();
    if !EXCLUSIVE_RELATIONS.iter().any(|(verb, _, _)| folded_body.contains(verb)) {
        return None;
    }
    let mut words: Vec<String> = Vec::new();
    // Where each clause opens: the first word, and each after a comma or
    // a semicolon ("I just moved, I live in Lisbon now").
    let mut clauses = vec![0];
    for t in body.split_whitespace() {
        let w = t.replace('\u{2019}', "'").trim_matches(|c: char| !c.is_alphanumeric() && c != '\'').to_string();
        if !w.is_empty() {
            words.push(w);
        }
        if t.ends_with([',', ';']) {
            clauses.push(words.len());
        }
    }
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    if lower.iter().any(|w| ANOTHER.contains(&w.as_str())) {
        return None;
    }
    clauses.dedup();
    clauses.into_iter().find_map(|opens| relation_at(&words, &lower, opens))
}

/// [`relation`] in the clause opening at word `opens`.
fn relation_at(words: &[String], lower: &[String], opens: usize) -> Option<String> {
    let word = |i: usize| lower.get(i).map_or("", String::as_str);
    let mut at = opens.saturating_add(lower.iter().skip(opens).take_while(|w| LEAD_INS.contains(&w.as_str())).count());
    if !matches!(word(at), "i" | "we" | "i'm" | "we're") {
        return None;
    }
    at = at.saturating_add(1);
    while RELATION_FILLERS.contains(&word(at)) {
        at = at.saturating_add(1);
    }
    let (verb, preposition) = (word(at), word(at.saturating_add(1)));
    let (_, _, attribute) = EXCLUSIVE_RELATIONS.iter().find(|(v, p, _)| *v == verb && *p == preposition)?;
    let after = at.saturating_add(2);
    let value_at = after.saturating_add(usize::from(word(after) == "the"));
    let value = words.get(value_at)?;
    let folded = word(value_at);
    let bare = folded.strip_suffix('s').unwrap_or(folded);
    let a_when = crate::core::dates::MONTHS.split('|').chain(WEEKDAYS.iter().copied()).any(|w| w == folded || w == bare);
    // A name: capitalized, or in a script with no case (東京).
    let named = value.chars().next().is_some_and(|c| c.is_uppercase() || (c.is_alphabetic() && !c.is_lowercase()));
    if !named || folded == "i" || a_when {
        return None;
    }
    Some((*attribute).to_string())
}

/// The days of the week, as a value they are a when ([`relation`]).
const WEEKDAYS: &[&str] = &["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/// Whether a statement naming a category member also states a value of
/// something else: a number named by a word of its own ("the staging
/// Postgres listens on *port 6432*", "the Redis cache *holds 500* MB").
/// Such a statement is about that other thing, not about which member is
/// used, so it does not take the category's key: two projects' database
/// ports are not one topic, and neither replaces the choice of database.
/// A version written after the member ("PostgreSQL 16") is part of its
/// name, and a number after a stop word ("moved to 3.11") may be the
/// member's own version.
fn names_another_value(body: &str) -> bool {
    let rest = lexicon::without_members(body);
    let words: Vec<&str> = rest.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric())).filter(|w| !w.is_empty()).collect();
    words.windows(2).any(|pair| match pair {
        [word, value] => value.chars().any(|c| c.is_ascii_digit()) && !word.chars().any(|c| c.is_ascii_digit()) && !text::is_stop(word),
        _ => false,
    })
}

/// The topic key of a keyed memory.
/// Most words in a key built from a statement's own words.
pub const FALLBACK_KEY_WORDS: usize = 8;

pub fn key_of(role: &str, body: &str) -> Option<String> {
    let category = lexicon::category_of(body).filter(|_| !names_another_value(body)).map(|c| match named_subject(body) {
        // Two projects' databases are two topics.
        Some(named) => format!("{named}_{c}"),
        None => c.to_string(),
    });
    let attr = category.or_else(|| copula_subject(body)).or_else(|| relation(body)).or_else(|| {
        // No known attribute: key by the statement's own words (stemmed,
        // sorted, up to FALLBACK_KEY_WORDS), so only a restatement of the
        // same thing supersedes it. A key from a sentence's first words
        // made unrelated statements replace each other ("cooked dinner:
        // lasagna" vs "cooked dinner: curry").
        let mut words: Vec<String> = key_words(body).iter().map(|w| text::stem(w)).collect();
        words.sort();
        words.dedup();
        if words.len() > FALLBACK_KEY_WORDS {
            // Past the cap the key keeps its first words and a digest of
            // all of them: two statements that differ only in a word late
            // in the alphabet (another project's name) stay two topics.
            let digest = crate::core::ids::digest(&words.join(" "));
            words.truncate(FALLBACK_KEY_WORDS - 1);
            words.push(digest);
        }
        words.extend(identifiers(body, NAMING_WORD_MAX_AT));
        (!words.is_empty()).then(|| words.join("_"))
    })?;
    crate::core::text::normalize_key(&format!("{}.{attr}", subject(role)))
}

/// Search queries from templates over the key and content words.
pub fn queries(kind: MemoryType, key: Option<&str>, body: &str, speaker: &str) -> Vec<String> {
    let words = text::content_words(body);
    let topic = words.iter().take(4).cloned().collect::<Vec<_>>().join(" ");
    let mut q = Vec::new();
    if let Some(k) = key {
        let attr = k.rsplit('.').next().unwrap_or(k).replace('_', " ");
        q.push(format!("What {attr} does {} use?", speaker.to_lowercase()));
        q.push(format!("What is the {attr} preference?"));
    }
    match kind {
        MemoryType::Event => {
            q.push(format!("When did {speaker} {topic}?"));
            q.push(format!("What happened with {topic}?"));
        }
        MemoryType::Instruction => {
            q.push(format!("How should I handle {topic}?"));
            q.push(format!("What are the rules for {topic}?"));
        }
        MemoryType::Task => q.push(format!("What is being worked on about {topic}?")),
        MemoryType::Fact => {
            q.push(format!("What does {speaker} say about {topic}?"));
            q.push(format!("What is known about {topic}?"));
        }
    }
    if q.len() < 3 {
        q.push(format!("{speaker} {topic}"));
    }
    q.truncate(crate::core::provider::MAX_CLASSIFIED_QUERIES);
    q
}

/// Who said a candidate and what, as classified: the role of the line it
/// cites, and its words after that speaker's label ("User: I live in
/// Lisbon", as the extractor writes a statement). A candidate citing no
/// line (what `remember` is given) is the caller's own words, whole: a
/// colon in them is no speaker's label ("Use conventional commits: type:
/// description" is a rule, not "type: description" said by someone).
fn speaker_and_body<'c>(t: &Transcript, c: &'c Candidate) -> (String, &'c str) {
    match t.lines.iter().find(|l| c.lines.contains(&l.index)) {
        Some(line) => (line.role.clone(), extract::statement_body(&c.content, &line.role)),
        None => ("user".into(), c.content.as_str()),
    }
}

/// Adverbs that may stand between "the user" and the verb of a statement
/// about the user ("The user always uses pnpm").
const USER_ADVERBS: &[&str] = &["always", "usually", "often", "never", "now", "currently", "also", "still", "really", "mostly", "generally"];

/// A statement about the user in the third person ("The user prefers
/// concise answers", "User lives in Berlin", "The user's editor is Vim")
/// as the user would say it ("I prefer concise answers", "I live in
/// Berlin", "My editor is Vim"), for its key: what an agent remembers of
/// the user and what the user said keep one topic key, and the later
/// supersedes the earlier. `None` when it does not open so.
fn in_first_person(body: &str) -> Option<String> {
    let trimmed = body.trim_start();
    let lower = trimmed.to_lowercase();
    let rest_at = ["the user's ", "user's ", "the user\u{2019}s "].iter().find(|o| lower.starts_with(**o)).map(|o| o.len());
    if let Some(at) = rest_at {
        return Some(format!("My {}", trimmed.get(at..)?));
    }
    let at = ["the user ", "user "].iter().find(|o| lower.starts_with(**o)).map(|o| o.len())?;
    let rest = trimmed.get(at..)?;
    let mut words = rest.splitn(3, ' ');
    let first = words.next()?;
    let (adverb, verb, tail) = if USER_ADVERBS.contains(&first.to_lowercase().as_str()) {
        (Some(first), words.next()?, words.next().unwrap_or(""))
    } else {
        let tail = rest.get(first.len()..).unwrap_or("").trim_start();
        (None, first, tail)
    };
    let lower_verb = verb.to_lowercase();
    let said = match lower_verb.as_str() {
        "is" => "am".to_string(),
        "has" => "have".to_string(),
        "does" => "do".to_string(),
        "doesn't" | "doesn\u{2019}t" => "don't".to_string(),
        "was" => "was".to_string(),
        v => third_person_to_first(v)?,
    };
    Some(match adverb {
        Some(a) => format!("I {a} {said} {tail}"),
        None => format!("I {said} {tail}"),
    })
}

/// A verb of the third person singular as the first person says it
/// ("prefers" -> "prefer", "studies" -> "study", "watches" -> "watch");
/// `None` for a word that is not one.
fn third_person_to_first(v: &str) -> Option<String> {
    if let Some(stem) = v.strip_suffix("ies").filter(|s| s.len() > 1) {
        return Some(format!("{stem}y"));
    }
    if ["sses", "shes", "ches", "xes", "zes", "oes"].iter().any(|e| v.ends_with(e)) {
        return v.strip_suffix("es").map(str::to_string);
    }
    v.strip_suffix('s').filter(|s| s.len() > 1 && !s.ends_with('s')).map(str::to_string)
}

pub fn classify(t: &Transcript, c: &Candidate) -> Classification {
    let (role, body) = speaker_and_body(t, c);
    let kind = kind_of(body, c.event_date.is_some());
    let said_by_user = text::is_user_role(&role).then(|| in_first_person(body)).flatten();
    let key = kind.is_keyed().then(|| key_of(&role, said_by_user.as_deref().unwrap_or(body))).flatten();
    let speaker = extract::speaker(&role);
    // A statement the extractor drew is its own summary; a note given
    // whole (`remember`) is summed up by its lead.
    let summary = if c.lines.is_empty() { text::lead(&c.content, text::SUMMARY_CHARS) } else { c.content.clone() };
    Classification { kind, search_queries: queries(kind, key.as_deref(), body, &speaker), key, summary }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_a_keys_subject_is_the_user_the_project_or_the_speakers_own_name() {
        assert_eq!(subject("Human"), "user");
        assert_eq!(subject("assistant"), "project");
        assert_eq!(subject("tool"), "tool", "as keys were stored before");
        assert_eq!(subject("Caroline"), "caroline");
    }

    /// The published getSummary page's example lists these under Active
    /// Tasks and Instructions.
    #[test]
    fn test_the_published_summary_examples_tasks_and_instructions_are_so_typed() {
        let c = |content: &str| {
            let t = Transcript { session_id: "s".into(), lines: vec![] };
            classify(&t, &Candidate { content: content.into(), lines: vec![], event_date: None }).kind
        };
        assert_eq!(c("Investigating intermittent 500 errors on /users endpoint"), MemoryType::Task);
        assert_eq!(c("Need to update README after refactoring"), MemoryType::Task);
        assert_eq!(c("Use conventional commits: type: description"), MemoryType::Instruction);
        assert_eq!(c("Database migrations require approval before execution"), MemoryType::Instruction);
        // Not every opening "-ing" or "need" is work to do, nor every
        // "requires" or "not allowed" a team's rule.
        assert_eq!(c("Running is my favorite hobby."), MemoryType::Fact);
        assert_eq!(c("Needless to say, the trip was fun."), MemoryType::Fact);
        assert_eq!(c("The recipe requires two eggs."), MemoryType::Fact);
        assert_eq!(c("Debugging is my favorite part of the job."), MemoryType::Fact);
        assert_eq!(c("Reviewing books is my side hustle."), MemoryType::Fact);
        assert_eq!(kind_of("Migrating to Postgres took two weeks in March 2023.", true), MemoryType::Event);
        assert_eq!(c("Dogs are not allowed in my building."), MemoryType::Fact);
        assert_eq!(c("My visa requires approval from the embassy."), MemoryType::Fact);
    }

    /// How-it-works lists "active investigations and follow-ups" as
    /// tasks: one the speaker says is under way is one, however said.
    #[test]
    fn test_the_speakers_own_work_under_way_is_a_task() {
        assert_eq!(kind_of("I'm investigating intermittent 500 errors on the /users endpoint.", false), MemoryType::Task);
        assert_eq!(kind_of("We are still debugging the login flow.", false), MemoryType::Task);
        assert_eq!(kind_of("I’m migrating the billing tables this week.", false), MemoryType::Task);
        assert_eq!(kind_of("I investigated the 500 errors last week and fixed them.", true), MemoryType::Event, "done, not under way");
        assert_eq!(kind_of("She is debugging the login flow.", false), MemoryType::Fact, "someone else's work");
    }

    /// The HTTP reference's examples: ingest of "I prefer concise
    /// answers." and remember of "The user prefers concise answers." are
    /// one topic; an agent remembers the user in the third person.
    #[test]
    fn test_a_statement_about_the_user_in_the_third_person_keys_as_the_user_says_it() {
        // A remembered note: the user's.
        let key = |content: &str| {
            let t = Transcript { session_id: "s".into(), lines: vec![] };
            classify(&t, &Candidate { content: content.into(), lines: vec![], event_date: None }).key
        };
        for (third, first) in [
            ("The user prefers concise answers.", "I prefer concise answers."),
            ("The user lives in Berlin.", "I live in Berlin."),
            ("User prefers dark mode.", "I prefer dark mode."),
            ("The user's editor is Vim.", "My editor is Vim."),
            ("The user always uses pnpm for installs.", "I always use pnpm for installs."),
        ] {
            assert_eq!(key(third), key(first), "{third}");
            assert!(key(third).is_some(), "{third}");
        }
        assert_eq!(in_first_person("The user studies French."), Some("I study French.".into()));
        assert_eq!(in_first_person("The user watches films."), Some("I watch films.".into()));
        assert_eq!(in_first_person("The user interface is slow."), None, "not a statement of the user's");
        assert_eq!(in_first_person("Users prefer dark mode."), None);
    }

    /// How-it-works: "Events — Completed actions anchored to a point in
    /// time. Deployments, decisions, milestones." A statement is anchored
    /// to when it was said, so one telling a completed action is an event
    /// without a date in its words (the ingest and getSummary pages'
    /// examples).
    #[test]
    fn test_a_completed_action_is_an_event_without_a_date_in_its_words() {
        for done in [
            "Deployed v2.3.0 to production successfully.",
            "Completed migration from REST to GraphQL.",
            "I deployed billing API v2.3.0 to production.",
            "We decided to use PostgreSQL for the new service.",
            "We shipped the new onboarding flow.",
            "The team finished the Q3 security audit.",
            "We finally migrated the billing tables.",
            "I went to the climbing gym with my sister.",
        ] {
            assert_eq!(kind_of(done, false), MemoryType::Event, "{done}");
        }
        for not_done in [
            "I liked the movie a lot.",
            "I used to live in Paris.",
            "I prefer tabs over spaces.",
            "Scheduled maintenance is on Friday.",
            "Remembered fact 0 about the deployment pipeline",
            "Deployed services are listed in the catalog.",
            "Automated tests run nightly.",
            "I was tired after the trip.",
            "I'm interested in Rust.",
        ] {
            assert_ne!(kind_of(not_done, false), MemoryType::Event, "{not_done}");
        }
    }

    #[test]
    fn test_a_remembered_notes_summary_is_its_lead_and_a_drawn_statement_its_own() {
        let note = format!("The user lives in Lisbon. {}", "They like long walks by the river and old bookshops. ".repeat(5));
        let t = Transcript { session_id: "s".into(), lines: vec![] };
        let cls = classify(&t, &Candidate { content: note.clone(), lines: vec![], event_date: None });
        assert_eq!(cls.summary, text::lead(&note, text::SUMMARY_CHARS));
        assert!(cls.summary.len() < note.len());
        let line = crate::core::provider::Line { index: 0, message_id: "m".into(), role: "user".into(), date: None, text: note.as_str().into() };
        let t = Transcript { session_id: "s".into(), lines: vec![line] };
        let drawn = format!("User: {note}");
        let cls = classify(&t, &Candidate { content: drawn.clone(), lines: vec![0], event_date: None });
        assert_eq!(cls.summary, drawn);
    }

    #[test]
    fn test_a_remembered_statement_with_a_colon_is_classified_whole() {
        let t = Transcript { session_id: "s".into(), lines: vec![] };
        let cls = classify(&t, &Candidate { content: "Note: the staging database is Postgres.".into(), lines: vec![], event_date: None });
        assert!(cls.key.as_deref().is_some_and(|k| k.starts_with("user.")), "{:?}", cls.key);
    }

    #[test]
    fn test_types_follow_surface_rules() {
        assert_eq!(kind_of("Use pnpm, not npm.", false), MemoryType::Instruction);
        assert_eq!(kind_of("I'm working on the billing page.", false), MemoryType::Task);
        assert_eq!(kind_of("We deployed the API on 2026-04-14.", true), MemoryType::Event);
        assert_eq!(kind_of("The project uses GraphQL.", false), MemoryType::Fact);
        assert_eq!(kind_of("Actually, switch to npm for this project.", false), MemoryType::Instruction);
        assert_eq!(kind_of("From now on, deploys happen on Fridays.", false), MemoryType::Instruction);
    }

    #[test]
    fn test_a_past_action_on_a_named_day_is_an_event() {
        assert_eq!(kind_of("Deployed billing API v2.3.0 to production on April 15.", false), MemoryType::Event);
        assert_eq!(kind_of("We shipped the release on 3 May.", false), MemoryType::Event);
        assert_eq!(kind_of("The user prefers May for holidays.", false), MemoryType::Fact);
        assert_eq!(kind_of("The user prefers concise answers.", false), MemoryType::Instruction);
        assert_eq!(kind_of("The user prefers dark mode in the editor.", false), MemoryType::Fact);
    }

    #[test]
    fn test_an_exclusive_relation_to_a_named_thing_is_one_key_whatever_the_name() {
        for (a, b, key) in [
            ("I live in Lisbon.", "I live in Berlin now.", "user.home"),
            ("I'm based in Berlin.", "I\u{2019}m currently based in the Netherlands.", "user.home"),
            ("I work at Acme.", "I now work at Globex.", "user.employer"),
            ("We work for Initech.", "Actually, we now work for Hooli.", "user.employer"),
            ("I live in 東京.", "I live in Paris now.", "user.home"),
            ("I live in Paris.", "I just moved, I live in Lisbon now.", "user.home"),
            ("My sister lives in Rome; I work at Acme.", "So, after the layoffs, we work for Hooli.", "user.employer"),
        ] {
            assert_eq!(key_of("user", a).as_deref(), Some(key), "{a}");
            assert_eq!(key_of("user", b).as_deref(), Some(key), "{b}");
        }
        // Held to several at once, past, one more, or a when: keys of
        // their own words, as before.
        for (a, b) in [
            ("I work with Sarah.", "I work with John."),
            ("I live near the Park.", "I live near the River."),
            ("Coffee in Lisbon is cheap.", "Coffee in Porto is cheap."),
            ("I work in January.", "I work in March."),
            ("I work at Acme.", "I also work at Globex."),
            ("I work at Acme.", "I work at Globex too."),
            ("I work at Acme.", "I worked at Google."),
            ("I'm fluent in Spanish.", "I'm fluent in French."),
            ("I volunteer at the Animal Shelter.", "I volunteer at the Food Bank."),
            ("I work in Sales.", "I work in Berlin."),
            ("Always reply in English.", "Always reply in Markdown."),
            ("I live in a flat.", "I live in a house."),
            ("I live in Oslo.", "When I lived in Paris, I worked at Renault."),
            ("I live in Oslo.", "My sister lives in Rome, she works at Fiat."),
        ] {
            assert_ne!(key_of("user", a), key_of("user", b), "{a} / {b}");
        }
    }

    #[test]
    fn test_a_present_relation_said_beside_an_action_is_a_fact() {
        assert_eq!(kind_of("I just moved, I live in Lisbon now.", false), MemoryType::Fact);
        assert_eq!(kind_of("We finally moved last week; we live in Porto now.", true), MemoryType::Fact);
        assert_eq!(kind_of("I just moved to Lisbon.", false), MemoryType::Event, "the action alone");
        assert_eq!(kind_of("When I lived in Paris, I worked at Renault.", true), MemoryType::Event, "a past relation");
    }

    #[test]
    fn test_statements_about_two_named_things_never_share_a_key() {
        let alpha = key_of("user", "Project Alpha uses PostgreSQL.");
        let beta = key_of("user", "Project Beta uses MySQL.");
        assert_ne!(alpha, beta);
        assert_eq!(alpha, key_of("user", "Project Alpha uses MySQL now."), "one project's database is one topic");
        // One capitalized word opens any sentence: it names nothing.
        assert_eq!(key_of("user", "Use pnpm, not npm."), key_of("user", "Actually, switch to npm for this project."));
        assert_ne!(key_of("user", "Order 1234 shipped on the 3rd."), key_of("user", "Order 5678 shipped on the 3rd."));
        assert_ne!(
            key_of("user", "Project number 1 uses Rust version 1.71."),
            key_of("user", "Project number 2 uses Rust version 1.72."),
            "a naming word's number names"
        );
        assert_eq!(
            key_of("user", "Project number 1 uses Rust version 1.71."),
            key_of("user", "Project number 1 uses Rust version 1.80."),
            "its value is updated"
        );
        assert_ne!(key_of("user", "The fix for ticket 4512 is merged."), key_of("user", "The fix for ticket 4513 is merged."));
        for (a, b) in [
            ("The meeting is in room 12.", "The meeting is in room 14."),
            ("My seat is no 5 on the bus.", "My seat is no 9 on the bus."),
            ("I am number 4 in the queue.", "I am number 7 in the queue."),
            ("I changed my phone number 5550100 today.", "I changed my phone number 5550199 today."),
        ] {
            assert_eq!(key_of("user", a), key_of("user", b), "a naming word's number later in a statement is its value: {a}");
        }
        assert_eq!(
            key_of("user", "The build server is Ubuntu 22.04."),
            key_of("user", "The build server is Ubuntu 24.04."),
            "the predicate's number is its value"
        );
        assert_ne!(key_of("user", "Release v2.3.0 is in staging."), key_of("user", "Release v2.4.0 is in staging."));
        assert_eq!(key_of("user", "I have 2 cats at home."), key_of("user", "I have 3 cats at home."), "a count is updated, not a new topic");
        assert_eq!(key_of("user", "I run 150 miles a month."), key_of("user", "I run 200 miles a month."), "so is a count of three digits");
        assert!(key_of("user", &"Order 1234 ".repeat(2000)).is_some(), "many ids make a key of a few");
        // A greeting or the name of whoever is addressed is no subject.
        assert_eq!(key_of("user", "Hi Claude, I prefer Python."), key_of("user", "I prefer Rust."));
        assert_eq!(key_of("user", "Thanks Bob, we use PostgreSQL."), key_of("user", "We use MySQL now."));
    }

    #[test]
    fn test_a_value_of_something_else_keeps_a_statement_off_the_category_key() {
        let orchard = key_of("user", "By the way, the staging Postgres for orchard-web listens on port 6432, not the default.");
        let basalt = key_of("user", "By the way, the staging Postgres for basalt listens on port 5499, not the default.");
        assert_ne!(orchard, basalt, "two projects' ports are two topics");
        assert_ne!(orchard.as_deref(), Some("user.database"), "a port is not the choice of database");
        // The member's own version, or a number after a stop word, leaves the category key.
        assert_eq!(key_of("user", "orchard-web keeps its data in MySQL 5.7 for now.").as_deref(), Some("user.database"));
        assert_eq!(key_of("user", "We migrated the data store to PostgreSQL 16 over the weekend.").as_deref(), Some("user.database"));
        assert_eq!(key_of("user", "We raised the minimum Python version to 3.11.").as_deref(), Some("user.programming_language"));
        assert_eq!(key_of("user", "Use pnpm, not npm.").as_deref(), Some("user.package_manager"));
    }

    #[test]
    fn test_long_statements_differing_late_in_the_alphabet_keep_apart() {
        let a = key_of("user", "Our plan with the maps vendor used by tidewater allows 600 requests per minute, so keep batch jobs below that.");
        let b = key_of("user", "Our plan with the maps vendor used by pantry allows 900 requests per minute, so keep batch jobs below that.");
        assert_ne!(a, b);
        let again = key_of("user", "Our plan with the maps vendor used by tidewater allows 600 requests per minute, so keep batch jobs below that.");
        assert_eq!(a, again, "a restatement shares its key");
        assert!(a.is_some_and(|k| k.chars().count() <= crate::core::api::MAX_KEY_CHARS));
    }

    #[test]
    fn test_an_identifier_follows_a_capitalized_word_in_any_script() {
        assert_eq!(identifiers("Zimmer 12 und Ärztin 7, dann raum 9.", NAMING_WORD_MAX_AT), vec!["12", "7"]);
        assert_eq!(identifiers("Ticket #42 about v2.3.0 and 1.2.3", NAMING_WORD_MAX_AT), vec!["42", "v2_3_0", "1_2_3"]);
        assert!(identifiers("I have 2 cats and ran 150 miles", NAMING_WORD_MAX_AT).is_empty());
    }

    #[test]
    fn test_copula_subjects_need_an_opening_determiner() {
        assert_eq!(copula_subject("  Our   main database is Postgres.").as_deref(), Some("main_database"));
        assert_eq!(copula_subject("THEIR youngest dog was sick").as_deref(), Some("youngest_dog"));
        assert_eq!(copula_subject("Mythical creatures are fun"), None);
        assert_eq!(copula_subject("Therefore the plan is fine"), None);
        assert_eq!(copula_subject("my, the plan is fine"), None);
    }

    #[test]
    fn test_attribute_phrases_name_the_key() {
        assert_eq!(key_of("user", "My favorite color is blue.").as_deref(), Some("user.favorite_color"));
        assert_eq!(key_of("user", "My favorite color is green now.").as_deref(), Some("user.favorite_color"));
        assert_eq!(key_of("user", "The API rate limit is 10,000 req/s.").as_deref(), Some("user.api_rate_limit"));
    }

    #[test]
    fn test_a_numbers_scope_keeps_two_plans_limits_apart() {
        let free = key_of("user", "The API rate limit is 100 requests per minute on the free plan.");
        let pro = key_of("user", "The API rate limit is 1000 requests per minute on the pro plan.");
        assert_eq!(free.as_deref(), Some("user.api_rate_limit_free_plan"));
        assert_eq!(pro.as_deref(), Some("user.api_rate_limit_pro_plan"));
        assert_eq!(key_of("user", "The API rate limit is now 250 requests per minute on the free plan!"), free, "the same plan's new value");
        assert_eq!(
            key_of("user", "Our request timeout is 30 seconds in the staging cluster, and longer elsewhere.").as_deref(),
            Some("user.request_timeout_staging_cluster")
        );
        // A word value's phrase, a phrase before the number, or one without
        // a determiner is the value's own.
        assert_eq!(key_of("user", "My favorite restaurant is the one in the village.").as_deref(), Some("user.favorite_restaurant"));
        assert_eq!(key_of("user", "My daily commute is 30 minutes in traffic.").as_deref(), Some("user.daily_commute"));
        assert_eq!(key_of("user", "My build time is in the end 12 minutes.").as_deref(), Some("user.build_time"));
    }

    #[test]
    fn test_unrecognised_statements_get_narrow_keys() {
        let a = key_of("user", "I love painting landscapes.");
        let b = key_of("user", "I love painting portraits.");
        assert_ne!(a, b, "different statements must not share a guessed key");
        assert_ne!(key_of("user", "My sister is a nurse."), key_of("user", "My sister is visiting in May."));
    }

    #[test]
    fn test_keys_name_subject_and_category() {
        assert_eq!(key_of("user", "Use pnpm, not npm.").as_deref(), Some("user.package_manager"));
        assert_eq!(key_of("user", "Actually, switch to npm.").as_deref(), Some("user.package_manager"));
        assert_eq!(key_of("user", "And dark mode by default.").as_deref(), Some("user.theme"));
    }
}
