//! The temporal engine: deterministic date arithmetic for temporal
//! questions. Dates are computed here, never guessed by a model; the
//! results enter the synthesis prompt as precomputed facts.
//!
//! It recognises: how long ago / how many days (weeks, months, years)
//! ago or since, how many ... between two dates, when did, what weekday,
//! which came first, before/after. Dates come from the question itself
//! ("April 10", "2026-04-10", "10 April 2026") or, failing that, from the
//! dates of the best matching memories.

use crate::core::dates::{self, may_name_a_month, MonthNames, YearOf, MONTHS};
use crate::core::text::{case_folded, holds_any};
use chrono::{Datelike, NaiveDate};
use regex::Regex;
use std::sync::OnceLock;

/// What kind of temporal question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    /// "how long ago", "how many days ago", "how many weeks since".
    Ago(Unit),
    /// "how many days between X and Y".
    Between(Unit),
    /// "when did", "when was", "what date".
    When,
    /// "what day of the week", "which weekday".
    Weekday,
    /// "which came first", "before or after".
    Order,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Days,
    Weeks,
    Months,
    Years,
}

fn re(cell: &'static OnceLock<Regex>, p: &str) -> &'static Regex {
    crate::core::text::constant_regex(cell, p)
}

/// The text of capture group `i`, or "" when the group did not take part.
fn group<'t>(c: &regex::Captures<'t>, i: usize) -> &'t str {
    c.get(i).map_or("", |m| m.as_str())
}

fn unit_of(s: &str) -> Unit {
    match s.to_lowercase().trim_end_matches('s') {
        "week" => Unit::Weeks,
        "month" => Unit::Months,
        "year" => Unit::Years,
        _ => Unit::Days,
    }
}

/// Classifies a question, if it is temporal. Each pattern is tried only
/// when the question holds a word every match of it holds.
pub fn detect(q: &str) -> Option<Question> {
    static BETWEEN: OnceLock<Regex> = OnceLock::new();
    static AGO: OnceLock<Regex> = OnceLock::new();
    static LONG_AGO: OnceLock<Regex> = OnceLock::new();
    static WEEKDAY: OnceLock<Regex> = OnceLock::new();
    static ORDER: OnceLock<Regex> = OnceLock::new();
    static LAST_PERIOD: OnceLock<Regex> = OnceLock::new();
    static WHEN: OnceLock<Regex> = OnceLock::new();
    let folded = case_folded(q);
    let how_many = holds_any(&folded, &["how many"]);
    if let Some(c) = how_many.then(|| re(&BETWEEN, r"(?i)how many (days?|weeks?|months?|years?)\b.*\b(between|from)\b").captures(q)).flatten() {
        return Some(Question::Between(unit_of(group(&c, 1))));
    }
    if let Some(c) =
        how_many.then(|| re(&AGO, r"(?i)how many (days?|weeks?|months?|years?)\b.*\b(ago|since|before|until|till|left|passed|elapsed)\b").captures(q)).flatten()
    {
        return Some(Question::Ago(unit_of(group(&c, 1))));
    }
    if holds_any(&folded, &["how long"]) && re(&LONG_AGO, r"(?i)\bhow long (ago|since|has it been)\b").is_match(q) {
        return Some(Question::Ago(Unit::Days));
    }
    if holds_any(&folded, &["week"]) && re(&WEEKDAY, r"(?i)\b(what|which) (day of the week|weekday)\b").is_match(q) {
        return Some(Question::Weekday);
    }
    // "What happened last week?" names a period, not an order.
    let names_a_period =
        holds_any(&folded, &["last"]) && re(&LAST_PERIOD, r"(?i)\b(came|happened|was) last (week|weekend|month|year|night|time)\b").is_match(q);
    if !names_a_period
        && holds_any(&folded, &["came", "happened", "was", "before or after"])
        && re(&ORDER, r"(?i)\b(which|what) (came|happened|was) (first|earlier|later|last)\b|\bbefore or after\b").is_match(q)
    {
        return Some(Question::Order);
    }
    if holds_any(&folded, &["when", "what"]) && re(&WHEN, r"(?i)^\s*(when|what (date|day|year|month|time))\b|\bon what date\b|\bwhat year\b").is_match(q) {
        return Some(Question::When);
    }
    None
}

/// Dates named in a question, in order ([`dates::days_in`], months in
/// any case). A date without a year is the latest such day not after the
/// reference date.
pub fn dates_in(text: &str, reference: NaiveDate) -> Vec<NaiveDate> {
    dates::days_in(text, MonthNames::AnyCase, YearOf::LatestBy(reference)).collect()
}

/// Days either side of a date a question names within which a message
/// counts as "on" that date (conversations report a day loosely).
pub const DATE_SLACK_DAYS: i64 = 3;

/// The periods a text names, as inclusive date ranges: a date ("on
/// February 7, 2022", "2026-04-10") widened by [`DATE_SLACK_DAYS`], or a
/// month of a year ("in August 2023"). Dates without a year resolve as in
/// [`dates_in`].
pub fn periods_in(text: &str, reference: NaiveDate) -> Vec<(NaiveDate, NaiveDate)> {
    static MONTH_YEAR: OnceLock<Regex> = OnceLock::new();
    let slack = chrono::Duration::days(DATE_SLACK_DAYS);
    // A date at the edge of the calendar has no range: it is left out.
    let mut out: Vec<(NaiveDate, NaiveDate)> =
        dates_in(text, reference).into_iter().filter_map(|d| Some((d.checked_sub_signed(slack)?, d.checked_add_signed(slack)?))).collect();
    let months = if may_name_a_month(&case_folded(text)) {
        Some(crate::core::text::built_regex(&MONTH_YEAR, || format!(r"(?i)\b({MONTHS})\.?,? (\d{{4}})\b")))
    } else {
        None
    };
    for c in months.into_iter().flat_map(|my| my.captures_iter(text)) {
        let (Some(m), Ok(y)) = (dates::month_number(group(&c, 1)), group(&c, 2).parse::<i32>()) else { continue };
        let Some(first) = NaiveDate::from_ymd_opt(y, m, 1) else { continue };
        let next = if m == 12 {
            y.checked_add(1).and_then(|y| NaiveDate::from_ymd_opt(y, 1, 1))
        } else {
            m.checked_add(1).and_then(|m| NaiveDate::from_ymd_opt(y, m, 1))
        };
        if let Some(next) = next {
            out.push((first, next.pred_opt().unwrap_or(next)));
        }
    }
    out.extend(relative_periods(text, reference));
    out
}

/// The periods a text names relative to `reference` ("today" of the
/// question: a recall's `referenceDate`, else now): "today", "yesterday",
/// "this week" and "last week" (weeks run Monday to Sunday), "this month",
/// "last month", "this year", "last year", "last weekend", "the past week"
/// (the seven days up to `reference`), "3 days ago" (widened by
/// [`DATE_SLACK_DAYS`]) and "the past 2 weeks" (up to `reference`). A
/// period that would leave the calendar is left out.
pub fn relative_periods(text: &str, reference: NaiveDate) -> Vec<(NaiveDate, NaiveDate)> {
    static RELATIVE: OnceLock<Regex> = OnceLock::new();
    // Every period it reads holds one of these words.
    if !holds_any(&case_folded(text), &["yesterday", "today", "last", "this", "past", "ago"]) {
        return Vec::new();
    }
    let n = r"\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few";
    let rx = re(
        &RELATIVE,
        &format!(
            r"(?i)\b(?:(?P<day>the day before yesterday|yesterday|today)|(?P<rel>last|this|past) (?P<unit>week|month|year|weekend)|(?P<n>{n}) (?P<agounit>days?|weeks?|months?) ago|(?:the )?(?:last|past) (?P<m>{n}) (?P<spanunit>days|weeks|months))\b"
        ),
    );
    let mut out = Vec::new();
    for c in rx.captures_iter(text) {
        // "1,000 days ago" is no "000 days ago".
        let before = text.get(..c.get(0).map_or(0, |m| m.start())).unwrap_or("");
        if before.ends_with([',', '.']) && before.trim_end_matches([',', '.']).ends_with(|ch: char| ch.is_ascii_digit()) {
            continue;
        }
        let lower = |i: &str| c.name(i).map_or(String::new(), |m| m.as_str().to_ascii_lowercase());
        let number = |i: &str| c.name(i).and_then(|m| crate::core::dates::number(m.as_str()));
        let period = if c.name("day").is_some() {
            named_day(reference, &lower("day"))
        } else if c.name("rel").is_some() {
            calendar_unit(reference, &lower("rel"), &lower("unit"))
        } else if let Some(k) = number("n") {
            units_ago(reference, k, &lower("agounit"))
        } else if let Some(k) = number("m") {
            units_back(reference, k, &lower("spanunit")).map(|from| (from, reference))
        } else {
            None
        };
        out.extend(period);
    }
    out
}

/// `reference` moved back `k` days.
fn days_back(reference: NaiveDate, k: i64) -> Option<NaiveDate> {
    reference.checked_sub_signed(chrono::Duration::days(k))
}

/// "today", "yesterday", "the day before yesterday".
fn named_day(reference: NaiveDate, day: &str) -> Option<(NaiveDate, NaiveDate)> {
    let back = match day {
        "today" => 0,
        "yesterday" => 1,
        _ => 2,
    };
    days_back(reference, back).map(|d| (d, d))
}

/// "last/this/past week|month|year|weekend" (weeks run Monday to Sunday;
/// "the past week" is the seven days up to `reference`).
fn calendar_unit(reference: NaiveDate, rel: &str, unit: &str) -> Option<(NaiveDate, NaiveDate)> {
    let (this, past) = (rel == "this", rel == "past");
    let monday = days_back(reference, i64::from(reference.weekday().num_days_from_monday()));
    let month_end = |first: NaiveDate| first.checked_add_months(chrono::Months::new(1)).and_then(|d| d.pred_opt());
    match unit {
        "week" if past => days_back(reference, 7).map(|d| (d, reference)),
        "month" if past => reference.checked_sub_months(chrono::Months::new(1)).map(|d| (d, reference)),
        "year" if past => reference.checked_sub_months(chrono::Months::new(12)).map(|d| (d, reference)),
        "week" if this => monday.map(|m| (m, reference)),
        "week" => monday.and_then(|m| Some((m.checked_sub_signed(chrono::Duration::days(7))?, m.pred_opt()?))),
        // This week's Saturday and Sunday.
        "weekend" if this => monday.and_then(|m| Some((m.checked_add_signed(chrono::Duration::days(5))?, m.checked_add_signed(chrono::Duration::days(6))?))),
        "weekend" => monday.and_then(|m| Some((m.checked_sub_signed(chrono::Duration::days(2))?, m.pred_opt()?))),
        "month" if this => reference.with_day(1).map(|f| (f, reference)),
        "month" => reference.with_day(1).and_then(|d| d.checked_sub_months(chrono::Months::new(1))).and_then(|f| Some((f, month_end(f)?))),
        "year" if this => reference.with_ordinal(1).map(|f| (f, reference)),
        _ => reference.year().checked_sub(1).and_then(|y| Some((NaiveDate::from_ymd_opt(y, 1, 1)?, NaiveDate::from_ymd_opt(y, 12, 31)?))),
    }
}

/// "3 days ago": the day `k` units back, widened by [`DATE_SLACK_DAYS`].
fn units_ago(reference: NaiveDate, k: i64, unit: &str) -> Option<(NaiveDate, NaiveDate)> {
    let slack = chrono::Duration::days(DATE_SLACK_DAYS);
    let at = units_back(reference, k, unit)?;
    Some((at.checked_sub_signed(slack)?, at.checked_add_signed(slack)?))
}

/// `reference` moved back `k` days, weeks or months (`unit`, singular or
/// plural).
fn units_back(reference: NaiveDate, k: i64, unit: &str) -> Option<NaiveDate> {
    match unit.trim_end_matches('s') {
        "day" => days_back(reference, k),
        "week" => days_back(reference, k.checked_mul(7)?),
        _ => reference.checked_sub_months(chrono::Months::new(u32::try_from(k).ok()?)),
    }
}

/// Words that place a statement in time.
const TIME_WORDS: &[&str] = &[
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "ago",
    "morning",
    "afternoon",
    "evening",
    "weekend",
    "weekends",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Whether a text mentions a time: a time word ("yesterday", "last week",
/// "two months ago", a weekday, a month named in full), a year, or "May"
/// or "March" (also verbs) next to a number. Token checks only: this runs
/// on every candidate message of a temporal question.
pub fn mentions_time(text: &str) -> bool {
    let number = |t: &str| !t.is_empty() && t.len() <= 4 && t.bytes().all(|c| c.is_ascii_digit());
    // Read in one pass: whether the token before was a number, and whether
    // it was "may" or "march" (waiting for a number after it).
    let (mut after_number, mut after_month) = (false, false);
    crate::core::text::any_token(text, |t| {
        let is_number = number(t);
        let month = matches!(t, "may" | "march");
        let found = TIME_WORDS.contains(&t)
            || (t.len() == 4 && (t.starts_with("19") || t.starts_with("20")) && is_number)
            || (month && after_number)
            || (after_month && is_number);
        (after_number, after_month) = (is_number, month);
        found
    })
}

/// Whole units from `a` to `b` (positive when `b` is later); `None` when
/// it cannot be computed.
pub fn difference(a: NaiveDate, b: NaiveDate, unit: Unit) -> Option<i64> {
    let days = b.signed_duration_since(a).num_days();
    let years = i64::from(b.year()).checked_sub(i64::from(a.year()))?;
    Some(match unit {
        Unit::Days => days,
        Unit::Weeks => days / 7,
        Unit::Months => {
            let m = years.checked_mul(12)?.checked_add(i64::from(b.month()))?.checked_sub(i64::from(a.month()))?;
            if m > 0 && b.day() < a.day() {
                m.checked_sub(1)?
            } else if m < 0 && b.day() > a.day() {
                m.checked_add(1)?
            } else {
                m
            }
        }
        Unit::Years => {
            if years > 0 && (b.month(), b.day()) < (a.month(), a.day()) {
                years.checked_sub(1)?
            } else {
                years
            }
        }
    })
}

fn unit_name(u: Unit, n: u64) -> &'static str {
    match (u, n == 1) {
        (Unit::Days, true) => "day",
        (Unit::Days, false) => "days",
        (Unit::Weeks, true) => "week",
        (Unit::Weeks, false) => "weeks",
        (Unit::Months, true) => "month",
        (Unit::Months, false) => "months",
        (Unit::Years, true) => "year",
        (Unit::Years, false) => "years",
    }
}

/// A dated thing the engine can reason about: a memory or message with
/// its date and a short label.
#[derive(Clone, Debug, PartialEq)]
pub struct Dated {
    pub label: String,
    pub date: NaiveDate,
}

/// The engine's output: facts for the prompt, and a direct answer when
/// the arithmetic alone answers the question.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Computed {
    pub facts: Vec<String>,
    pub answer: Option<String>,
}

/// Computes what a temporal question needs. `evidence` is the best
/// matching dated memories, best first.
pub fn compute(query: &str, reference: NaiveDate, evidence: &[Dated]) -> Computed {
    let Some(kind) = detect(query) else { return Computed::default() };
    let named = dates_in(query, reference);
    let mut out = Computed::default();
    let fmt = |d: NaiveDate| format!("{} ({})", d.format("%Y-%m-%d"), d.format("%A"));
    match kind {
        Question::Ago(unit) => {
            let target = named.first().copied().or_else(|| evidence.first().map(|e| e.date));
            if let Some((d, n)) = target.and_then(|d| Some((d, difference(d, reference, unit)?))) {
                let about = evidence.first().filter(|_| named.is_empty()).map(|e| format!(" ({})", e.label)).unwrap_or_default();
                let count = n.unsigned_abs();
                if n >= 0 {
                    out.facts.push(format!("{}{about} was {count} {} before the reference date {}.", fmt(d), unit_name(unit, count), fmt(reference)));
                    out.answer = Some(format!("{count} {} ago ({})", unit_name(unit, count), d.format("%Y-%m-%d")));
                } else {
                    out.facts.push(format!("{}{about} is {count} {} after the reference date {}.", fmt(d), unit_name(unit, count), fmt(reference)));
                    out.answer = Some(format!("in {count} {} ({})", unit_name(unit, count), d.format("%Y-%m-%d")));
                }
            }
        }
        Question::Between(unit) => {
            let mut ds: Vec<NaiveDate> = named.clone();
            ds.extend(evidence.iter().map(|e| e.date));
            if let [a, b, ..] = ds[..] {
                if let Some(n) = difference(a, b, unit).map(i64::unsigned_abs) {
                    out.facts.push(format!("Between {} and {} there are {n} {}.", fmt(a), fmt(b), unit_name(unit, n)));
                    out.answer = Some(format!("{n} {}", unit_name(unit, n)));
                }
            }
        }
        Question::When => {
            if let Some((e, n)) = evidence.first().and_then(|e| Some((e, difference(e.date, reference, Unit::Days)?))) {
                out.facts.push(format!("{} is dated {}, {n} days before the reference date {}.", e.label, fmt(e.date), fmt(reference)));
                out.answer = Some(format!("{}", e.date.format("%-d %B %Y")));
            }
        }
        Question::Weekday => {
            if let Some(d) = named.first().copied().or_else(|| evidence.first().map(|e| e.date)) {
                out.facts.push(format!("{} was a {}.", d.format("%Y-%m-%d"), d.format("%A")));
                out.answer = Some(d.format("%A").to_string());
            }
        }
        Question::Order => {
            let mut es: Vec<&Dated> = evidence.iter().take(4).collect();
            es.sort_by_key(|e| e.date);
            for (a, b) in es.iter().zip(es.iter().skip(1)) {
                out.facts.push(format!("{} ({}) came before {} ({}).", a.label, a.date, b.label, b.date));
            }
            if let Some(first) = es.first() {
                out.answer = Some(format!("{} came first ({})", first.label, first.date));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    /// The words checked before a pattern is tried are looked for as the
    /// pattern's case-insensitive literals match: in any case, and with
    /// the characters Unicode folds to an ASCII letter (the long s, the
    /// Kelvin sign) taken for it.
    #[test]
    fn test_a_pattern_is_tried_whenever_its_case_insensitive_words_are_there() {
        let r = d("2026-04-20");
        assert_eq!(detect("HOW MANY DAYS AGO did we ship?"), Some(Question::Ago(Unit::Days)));
        assert_eq!(detect("How long \u{17F}ince the move?"), Some(Question::Ago(Unit::Days)));
        assert_eq!(detect("Which came fir\u{17F}t, the trip or the move?"), Some(Question::Order));
        assert_eq!(detect("What wa\u{17F} fir\u{17F}t?"), Some(Question::Order));
        assert_eq!(detect("WHAT DAY OF THE WEE\u{212A} was it?"), Some(Question::Weekday));
        assert_eq!(detect("What did she paint?"), None);
        assert_eq!(dates_in("On MARCH 3 and on Augu\u{17F}t 4", r), vec![d("2026-03-03"), d("2025-08-04")]);
        assert_eq!(periods_in("in SEPT 2025", r), vec![(d("2025-09-01"), d("2025-09-30"))]);
        assert_eq!(relative_periods("LA\u{17F}T WEEK", r), vec![(d("2026-04-13"), d("2026-04-19"))]);
        assert_eq!(crate::core::dates::resolve("I left YESTERDAY", r), "I left on 2026-04-19");
        assert_eq!(crate::core::dates::resolve("Wait a wee\u{212A}", r), "Wait a wee\u{212A}");
    }

    #[test]
    fn test_days_ago_of_a_named_date_is_computed() {
        let c = compute("How many days ago was the April 10 incident?", d("2026-04-20"), &[]);
        assert_eq!(c.answer.as_deref(), Some("10 days ago (2026-04-10)"));
        assert!(c.facts[0].contains("10 days before"));
    }

    #[test]
    fn test_undated_question_uses_best_evidence() {
        let ev = [Dated { label: "the deploy".into(), date: d("2026-04-01") }];
        let c = compute("How long ago was the deploy?", d("2026-04-08"), &ev);
        assert_eq!(c.answer.as_deref(), Some("7 days ago (2026-04-01)"));
    }

    #[test]
    fn test_the_weekday_of_a_date_and_the_weeks_between_two_are_computed() {
        assert_eq!(compute("What day of the week was 2026-04-15?", d("2026-05-01"), &[]).answer.as_deref(), Some("Wednesday"));
        let c = compute("How many weeks between March 1, 2026 and March 29, 2026?", d("2026-05-01"), &[]);
        assert_eq!(c.answer.as_deref(), Some("4 weeks"));
    }

    #[test]
    fn test_month_without_year_never_lands_after_reference() {
        assert_eq!(dates_in("the December 24 party", d("2026-04-20")), vec![d("2025-12-24")]);
    }

    #[test]
    fn test_what_happened_last_week_names_a_period_not_an_order() {
        assert_eq!(detect("What happened last week?"), None);
        assert_eq!(detect("Which happened last, the launch or the migration?"), Some(Question::Order));
        assert_eq!(detect("What came first?"), Some(Question::Order));
    }

    #[test]
    fn test_relative_periods_are_ranges_around_the_reference_date() {
        // 2026-04-14 is a Tuesday.
        let r = d("2026-04-14");
        let one = |text: &str| relative_periods(text, r);
        assert_eq!(one("What happened last week?"), vec![(d("2026-04-06"), d("2026-04-12"))]);
        assert_eq!(one("What happened this week?"), vec![(d("2026-04-13"), r)]);
        assert_eq!(one("What did we do last weekend?"), vec![(d("2026-04-11"), d("2026-04-12"))]);
        assert_eq!(one("What shipped last month?"), vec![(d("2026-03-01"), d("2026-03-31"))]);
        assert_eq!(one("And yesterday?"), vec![(d("2026-04-13"), d("2026-04-13"))]);
        assert_eq!(one("What broke two weeks ago?"), vec![(d("2026-03-28"), d("2026-04-03"))]);
        assert_eq!(one("What changed in the past 3 days?"), vec![(d("2026-04-11"), r)]);
        assert_eq!(one("Last year was busy"), vec![(d("2025-01-01"), d("2025-12-31"))]);
        assert_eq!(one("What changed in the past week?"), vec![(d("2026-04-07"), r)]);
        assert_eq!(relative_periods("What did we do this weekend?", d("2026-04-18")), vec![(d("2026-04-18"), d("2026-04-19"))]);
        assert!(one("It was 1,000 days ago").is_empty(), "no period of a number cut at its comma");
        assert!(one("What is the weekly report about?").is_empty());
        assert!(relative_periods("last week", NaiveDate::MIN).is_empty(), "off the calendar: left out");
        // The same phrase with another reference names another week.
        assert_eq!(relative_periods("What happened last week?", d("2026-04-27")), vec![(d("2026-04-20"), d("2026-04-26"))]);
    }

    #[test]
    fn test_named_periods_are_date_ranges() {
        let p = periods_in("What did she say on February 7, 2022 and in August 2023?", d("2024-01-01"));
        assert_eq!(p, vec![(d("2022-02-04"), d("2022-02-10")), (d("2023-08-01"), d("2023-08-31"))]);
        assert!(periods_in("What did she paint?", d("2024-01-01")).is_empty());
    }

    #[test]
    fn test_time_mentions_are_recognised() {
        assert!(mentions_time("I went there yesterday."));
        assert!(mentions_time("Back in 2019 we moved."));
        assert!(mentions_time("See you on Friday"));
        assert!(!mentions_time("The painting is lovely."));
        assert!(mentions_time("We met on May 7."));
        assert!(!mentions_time("I may go hiking."));
    }

    #[test]
    fn test_time_mentions_read_in_one_pass_agree_with_the_token_list() {
        // The rule over the whole token list, as written before the
        // one-pass reading.
        fn by_list(text: &str) -> bool {
            let tokens = crate::core::text::tokens(text);
            let number = |t: Option<&String>| t.is_some_and(|t| !t.is_empty() && t.len() <= 4 && t.chars().all(|c| c.is_ascii_digit()));
            tokens.iter().enumerate().any(|(i, t)| {
                TIME_WORDS.contains(&t.as_str())
                    || (t.len() == 4 && (t.starts_with("19") || t.starts_with("20")) && t.chars().all(|c| c.is_ascii_digit()))
                    || (matches!(t.as_str(), "may" | "march") && (number(tokens.get(i + 1)) || (i > 0 && number(tokens.get(i - 1)))))
            })
        }
        let words = ["may", "March", "7", "2019", "12345", "1899", "we", "Friday's", "don't", "naïve", "MAY", "3rd", "", "20", "2020s"];
        let mut texts = Vec::new();
        for a in words {
            for b in words {
                for c in ["may", "7", "go", "Ünïcode", "marché"] {
                    texts.push(format!("{a} {b}, {c}."));
                    texts.push(format!("{c}-{a}'{b}"));
                }
            }
        }
        for t in &texts {
            assert_eq!(mentions_time(t), by_list(t), "{t:?}");
        }
        assert!(texts.iter().any(|t| mentions_time(t)) && texts.iter().any(|t| !mentions_time(t)));
    }

    #[test]
    fn test_dates_at_the_edge_of_the_calendar_do_not_panic() {
        let (min, max) = (NaiveDate::MIN, NaiveDate::MAX);
        assert_eq!(difference(min, max, Unit::Months).map(i64::is_positive), Some(true));
        assert_eq!(difference(max, min, Unit::Years).map(i64::is_negative), Some(true));
        assert!(periods_in(&format!("on {max}"), max).is_empty());
        let ev = [Dated { label: "a".into(), date: min }, Dated { label: "b".into(), date: max }];
        for q in ["How many days ago was it?", "How many months between them?", "When did it happen?", "Which came first?"] {
            assert!(compute(q, max, &ev).answer.is_some(), "{q}");
        }
    }

    #[test]
    fn test_non_temporal_question_computes_nothing() {
        assert_eq!(compute("What package manager does the user prefer?", d("2026-04-20"), &[]), Computed::default());
    }
}
