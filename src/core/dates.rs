//! Resolving relative dates ("yesterday", "last Tuesday", "3 days ago",
//! "next week", "in two weeks", "this morning") to absolute ones, relative
//! to an anchor date (the message's timestamp or the session date).
//!
//! Resolution rewrites the phrase in place, keeping the meaning:
//! "I deployed yesterday" becomes "I deployed on 2026-04-14". Phrases it
//! does not recognise are left as they are; it never guesses.

use crate::core::text::{case_folded, holds_any};
use chrono::{Datelike, Duration, Months, NaiveDate, Weekday};
use regex::{Captures, Regex};
use std::sync::OnceLock;

/// Month names and their abbreviations, as a regex alternation.
pub const MONTHS: &str =
    "january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec";
/// The three letters every one of [`MONTHS`] opens with: a text naming a
/// month holds one.
const MONTH_STEMS: &[&str] = &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// Whether a text ([`case_folded`]) may name a month: checked before a
/// pattern naming one is compiled or run.
pub fn may_name_a_month(folded: &str) -> bool {
    holds_any(folded, MONTH_STEMS)
}

/// Words one of which every phrase [`resolve`] rewrites holds (each
/// weekday's name, "yesterday" and "today" hold "day").
const RELATIVE_WORDS: &[&str] = &["day", "tomorrow", "tonight", "morning", "afternoon", "evening", "week", "month", "year"];

const WEEKDAYS: &str = "monday|tuesday|wednesday|thursday|friday|saturday|sunday";
const NUMBERS: &str = r"\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few";

fn pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    crate::core::text::built_regex(&RE, || {
        format!(
            r"(?i)(?-u:\b)(?:(?P<dby>the day before yesterday)|(?P<dat>the day after tomorrow)|(?P<yesterday>yesterday)|(?P<tomorrow>tomorrow)|(?P<tonight>tonight)|this (?P<part>morning|afternoon|evening)|(?P<today>today)|(?P<rel>last|next|this|on|this past|this coming) (?P<wd>{WEEKDAYS})|(?P<rel2>last|next|this) (?P<unit2>week|month|year|weekend)|(?P<n>{NUMBERS}) (?P<unit>days?|weeks?|months?|years?) (?P<ago>ago|later|from now)|in (?P<n3>{NUMBERS}) (?P<unit3>days?|weeks?|months?|years?))(?-u:\b)"
        )
    })
}

/// A count written in digits or in words ("a", "two", "a few").
pub fn number(s: &str) -> Option<i64> {
    Some(match s.to_lowercase().as_str() {
        "a" | "an" | "one" => 1,
        "two" | "a couple of" => 2,
        "three" | "a few" => 3,
        "four" => 4,
        "five" => 5,
        "six" => 6,
        "seven" => 7,
        "eight" => 8,
        "nine" => 9,
        "ten" => 10,
        "eleven" => 11,
        "twelve" => 12,
        other => other.parse().ok()?,
    })
}

fn weekday(s: &str) -> Option<Weekday> {
    s.to_lowercase().parse().ok()
}

fn fmt(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

/// Earliest and latest year a resolved phrase may name: the years an ISO
/// date writes with four digits (timestamps outside them are refused at
/// the door, see [`crate::core::time::parse_datetime`]). A phrase whose
/// date falls outside stays as it was written.
const MIN_YEAR: i32 = 0;
const MAX_YEAR: i32 = 9999;

/// `d`, if it is a date this module writes (years 0000-9999).
fn in_calendar(d: NaiveDate) -> Option<NaiveDate> {
    (MIN_YEAR..=MAX_YEAR).contains(&d.year()).then_some(d)
}

/// `anchor` moved by `days` (negative: back), or `None` off the calendar.
fn add_days(anchor: NaiveDate, days: i64) -> Option<NaiveDate> {
    in_calendar(anchor.checked_add_signed(Duration::try_days(days)?)?)
}

/// `anchor` moved by `n` units (day, week, month or year), or `None` when
/// the result falls off the calendar.
fn shift(anchor: NaiveDate, n: i64, unit: &str) -> Option<NaiveDate> {
    let unit = unit.to_lowercase();
    let months = |per: i64| -> Option<NaiveDate> {
        let count = Months::new(u32::try_from(n.checked_abs()?.checked_mul(per)?).ok()?);
        in_calendar(if n >= 0 { anchor.checked_add_months(count)? } else { anchor.checked_sub_months(count)? })
    };
    if unit.starts_with("day") {
        add_days(anchor, n)
    } else if unit.starts_with("week") {
        add_days(anchor, n.checked_mul(7)?)
    } else if unit.starts_with("month") {
        months(1)
    } else {
        months(12)
    }
}

fn monday_of(d: NaiveDate) -> Option<NaiveDate> {
    add_days(d, i64::from(d.weekday().num_days_from_monday()).checked_neg()?)
}

/// The date a weekday phrase names: "last Tuesday" is the most recent
/// Tuesday strictly before the anchor; "next Tuesday" the first strictly
/// after; "this/on Tuesday" the one in the anchor's week.
fn weekday_date(anchor: NaiveDate, rel: &str, wd: Weekday) -> Option<NaiveDate> {
    let rel = rel.to_lowercase();
    // Both in 0..=6, so neither difference can overflow.
    let target = i64::from(wd.num_days_from_monday());
    let from = i64::from(anchor.weekday().num_days_from_monday());
    match rel.as_str() {
        "last" | "this past" => {
            let back = from.checked_sub(target)?.rem_euclid(7);
            add_days(anchor, if back == 0 { -7 } else { back.checked_neg()? })
        }
        "next" | "this coming" => {
            let fwd = target.checked_sub(from)?.rem_euclid(7);
            add_days(anchor, if fwd == 0 { 7 } else { fwd })
        }
        _ => add_days(monday_of(anchor)?, target),
    }
}

fn replacement(c: &Captures, anchor: NaiveDate) -> Option<String> {
    if c.name("dby").is_some() {
        return Some(format!("on {}", fmt(add_days(anchor, -2)?)));
    }
    if c.name("dat").is_some() {
        return Some(format!("on {}", fmt(add_days(anchor, 2)?)));
    }
    if c.name("yesterday").is_some() {
        return Some(format!("on {}", fmt(add_days(anchor, -1)?)));
    }
    if c.name("tomorrow").is_some() {
        return Some(format!("on {}", fmt(add_days(anchor, 1)?)));
    }
    if c.name("tonight").is_some() {
        return Some(format!("on the night of {}", fmt(anchor)));
    }
    if let Some(part) = c.name("part") {
        return Some(format!("on the {} of {}", part.as_str().to_lowercase(), fmt(anchor)));
    }
    if c.name("today").is_some() {
        return Some(format!("on {}", fmt(anchor)));
    }
    if let (Some(rel), Some(wd)) = (c.name("rel"), c.name("wd")) {
        let d = weekday_date(anchor, rel.as_str(), weekday(wd.as_str())?)?;
        return Some(format!("on {} {}", wd.as_str(), fmt(d)));
    }
    if let (Some(rel), Some(unit)) = (c.name("rel2"), c.name("unit2")) {
        let step = match rel.as_str().to_lowercase().as_str() {
            "last" => -1,
            "next" => 1,
            _ => 0,
        };
        return Some(match unit.as_str().to_lowercase().as_str() {
            "week" => format!("the week of {}", fmt(shift(monday_of(anchor)?, step, "week")?)),
            "weekend" => {
                let sat = shift(add_days(monday_of(anchor)?, 5)?, step, "week")?;
                format!("the weekend of {}", fmt(sat))
            }
            "month" => {
                let d = shift(anchor.with_day(1)?, step, "month")?;
                format!("in {}", d.format("%B %Y"))
            }
            _ => format!("in {}", shift(anchor, step, "year")?.year()),
        });
    }
    if let (Some(n), Some(unit), Some(dir)) = (c.name("n"), c.name("unit"), c.name("ago")) {
        let n = number(n.as_str())?;
        let n = if dir.as_str().eq_ignore_ascii_case("ago") { n.checked_neg()? } else { n };
        let d = shift(anchor, n, unit.as_str())?;
        return Some(approx(unit.as_str(), d));
    }
    if let (Some(n), Some(unit)) = (c.name("n3"), c.name("unit3")) {
        let d = shift(anchor, number(n.as_str())?, unit.as_str())?;
        return Some(approx(unit.as_str(), d));
    }
    None
}

fn approx(unit: &str, d: NaiveDate) -> String {
    if unit.to_lowercase().starts_with("day") {
        format!("on {}", fmt(d))
    } else if unit.to_lowercase().starts_with("week") {
        format!("around {}", fmt(d))
    } else if unit.to_lowercase().starts_with("month") {
        format!("in {}", d.format("%B %Y"))
    } else {
        format!("in {}", d.year())
    }
}

/// Rewrites every relative date phrase in `text` against `anchor`. An
/// anchor off the calendar (outside 0000-9999) resolves nothing.
pub fn resolve(text: &str, anchor: NaiveDate) -> String {
    let Some(anchor) = in_calendar(anchor) else {
        return text.to_string();
    };
    if !holds_any(&case_folded(text), RELATIVE_WORDS) {
        return text.to_string();
    }
    pattern()
        .replace_all(text, |c: &Captures| replacement(c, anchor).unwrap_or_else(|| c.get(0).map_or_else(String::new, |m| m.as_str().to_string())))
        .into_owned()
}

/// [`resolve`], unless writing the dates out would take the text past
/// `limit` bytes: then the text as written. A date written out is longer
/// than its phrase ("tonight" becomes "on the night of 2026-04-16"), so a
/// message of thousands of them would triple; held within the limit it
/// was checked against, no text a call holds grows past what was sent.
pub fn resolve_within(text: &str, anchor: NaiveDate, limit: usize) -> String {
    Some(resolve(text, anchor)).filter(|r| r.len() <= limit).unwrap_or_else(|| text.to_string())
}

/// `text` with the absolute dates resolution writes (`YYYY-MM-DD`, "March
/// 2024") each set to `#`, and in lowercase: two statements equal so say
/// the same thing apart from when it was said ("remember details a few
/// weeks later", said on two days).
///
/// Keyed memories store a digest of this (`ids::undated_digest`): a
/// change here needs a migration that sets `memories.undated_digest` to
/// NULL (the last was version 25, word boundaries read as ASCII).
///
/// Every pattern here reads a word boundary as ASCII does (`(?-u:\b)`):
/// a Unicode boundary sends a text holding any non-ASCII letter to the
/// regex engine's slow path (writing the dates of 30 KB of accented text
/// out took 15 ms, 2 without). A date next to a non-ASCII letter
/// ("é2026-04-15") is then read as a date.
pub fn undated(text: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    if !text.contains('-') && !may_name_a_month(&case_folded(text)) {
        return text.to_lowercase();
    }
    let re = crate::core::text::built_regex(&RE, || format!(r"(?i)(?-u:\b)(?:\d{{4}}-\d{{2}}-\d{{2}}|(?:{MONTHS}) \d{{4}})(?-u:\b)"));
    re.replace_all(text, "#").to_lowercase()
}

/// Month names as a text names a day by them, full or abbreviated
/// ("April", "Apr", "Apr."), capitalized: read as written in stored
/// statements ([`MonthNames::Capitalized`]), in any case in questions.
const CAPITALIZED_MONTHS: &str =
    "January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec";

/// How a text's month names are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MonthNames {
    /// Capitalized only ("April 15", not "may 5"): what the service
    /// stores, where "may" and "march" are words too.
    Capitalized,
    /// In any case ("what did I do on march 3"): a question, typed as it
    /// comes.
    AnyCase,
}

/// The year a day named without one ("on April 15") falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YearOf {
    /// Not known: such a day is not read.
    Unknown,
    /// The year that puts the day nearest this date, the day the text
    /// was said on: a statement tells of plans as well as of the past.
    NearestTo(NaiveDate),
    /// The latest year that does not put the day after this date: a
    /// question asks after what has happened ("the April 10 incident",
    /// asked in March, was last year's).
    LatestBy(NaiveDate),
}

/// The pattern of a day a text names: an ISO date (`2026-04-15`, as
/// [`resolve`] leaves a relative phrase) or a month's name and a day
/// ("April 15, 2026", "15th of April", "Apr. 15"), the year optional.
fn day_pattern(months: MonthNames) -> &'static Regex {
    static CAPITALIZED: OnceLock<Regex> = OnceLock::new();
    static ANY_CASE: OnceLock<Regex> = OnceLock::new();
    let (cell, flags) = match months {
        MonthNames::Capitalized => (&CAPITALIZED, ""),
        MonthNames::AnyCase => (&ANY_CASE, "(?i)"),
    };
    crate::core::text::built_regex(cell, || {
        format!(
            r"{flags}(?-u:\b)(?:(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})(?-u:\b)|(?P<m1>{CAPITALIZED_MONTHS})\.? (?P<d1>\d{{1,2}})(?:st|nd|rd|th)?(?-u:\b)(?:,? (?P<y1>\d{{4}})(?-u:\b))?|(?P<d2>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<m2>{CAPITALIZED_MONTHS})(?-u:\b)\.?(?:,? (?P<y2>\d{{4}})(?-u:\b))?)"
        )
    })
}

/// Whether `text` may hold a match of [`day_pattern`]: checked before
/// the pattern runs.
fn may_name_a_day(text: &str) -> bool {
    text.contains('-') || may_name_a_month(&case_folded(text))
}

/// The days of the calendar `text` names, in order: ISO dates and days
/// named by their month, read as `months` says, a day without its year
/// given one as `year` says. A month alone ("in May") or a year alone
/// names no day. The one reader of days named in words: statements
/// ([`event_date`]), questions (`recall::temporal`) and the classifier's
/// test for a dated event all read through it.
pub fn days_in(text: &str, months: MonthNames, year: YearOf) -> impl Iterator<Item = NaiveDate> + '_ {
    may_name_a_day(text).then(|| day_pattern(months).captures_iter(text).filter_map(move |c| day_named(&c, year))).into_iter().flatten()
}

/// Whether `text` names a day by its month ("on April 15", "3 May"),
/// with or without a year, months read as `months` says.
pub fn names_a_month_day(text: &str, months: MonthNames) -> bool {
    may_name_a_month(&case_folded(text)) && day_pattern(months).captures_iter(text).any(|c| c.name("iso").is_none())
}

/// The day an event a text tells of happened on: the first day of the
/// calendar it names ([`days_in`], months capitalized). A day named
/// without its year ("on April 15") is the one nearest `anchor`, the date
/// the text was said on; without an anchor it is not read. `None` when
/// the text names no day ("in May", "last year" name none).
pub fn event_date(text: &str, anchor: Option<NaiveDate>) -> Option<String> {
    days_named(text, anchor).next()
}

/// Every day of the calendar `text` names, in order, as [`event_date`]
/// reads them (`YYYY-MM-DD`).
pub fn days_named(text: &str, anchor: Option<NaiveDate>) -> impl Iterator<Item = String> + '_ {
    days_in(text, MonthNames::Capitalized, anchor.map_or(YearOf::Unknown, YearOf::NearestTo)).map(fmt)
}

/// The number (1 to 12) of the month a name or abbreviation of
/// [`MONTHS`] names, in any case.
pub fn month_number(name: &str) -> Option<u32> {
    let name = name.to_lowercase();
    MONTH_STEMS.iter().zip(1u32..).find(|(stem, _)| name.starts_with(*stem)).map(|(_, n)| n)
}

/// The day one match of [`day_pattern`] names, if it is one of the
/// calendar.
fn day_named(c: &Captures, year: YearOf) -> Option<NaiveDate> {
    if let Some(iso) = c.name("iso") {
        return NaiveDate::parse_from_str(iso.as_str(), "%Y-%m-%d").ok().and_then(in_calendar);
    }
    let month = month_number(c.name("m1").or_else(|| c.name("m2"))?.as_str())?;
    let day: u32 = c.name("d1").or_else(|| c.name("d2"))?.as_str().parse().ok()?;
    if let Some(y) = c.name("y1").or_else(|| c.name("y2")) {
        return in_calendar(NaiveDate::from_ymd_opt(y.as_str().parse().ok()?, month, day)?);
    }
    let in_year = |of: NaiveDate, shift: i32| NaiveDate::from_ymd_opt(of.year().checked_add(shift)?, month, day);
    let day = match year {
        YearOf::Unknown => None,
        YearOf::NearestTo(said) => {
            [-1, 0, 1].into_iter().filter_map(|s| in_year(said, s)).min_by_key(|d| d.signed_duration_since(said).num_days().unsigned_abs())
        }
        // Back as far as the last February 29th.
        YearOf::LatestBy(asked) => (-8..=0).rev().filter_map(|s| in_year(asked, s)).find(|d| *d <= asked),
    };
    in_calendar(day?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn test_undated_sets_aside_the_dates_resolution_writes_and_nothing_else() {
        let a = resolve("Keep notes, it is hard to remember details a few weeks later.", d("2023-06-20"));
        let b = resolve("Keep notes, it is hard to remember details a few weeks later.", d("2023-09-02"));
        assert_ne!(a, b);
        assert_eq!(undated(&a), undated(&b));
        assert_eq!(undated("Planned for March 2024 and 2023-04-01."), "planned for # and #.");
        assert_ne!(undated("The refund reference is RF-286359."), undated("The refund reference is RF-152866."));
        assert_ne!(undated("Your card ending in 1258."), undated("Your card ending in 8821."));
    }

    #[test]
    fn test_dates_are_written_out_within_a_limit_or_not_at_all() {
        let said = d("2026-04-16");
        assert_eq!(resolve_within("I left tonight.", said, 64), "I left on the night of 2026-04-16.");
        let many = "tonight ".repeat(100);
        assert!(resolve(&many, said).len() > 3 * many.len());
        assert_eq!(resolve_within(&many, said, many.len() * 2), many, "past the limit: as written");
    }

    #[test]
    fn test_an_event_is_dated_by_the_first_day_its_text_names() {
        let said = Some(d("2026-04-16"));
        assert_eq!(event_date("I deployed billing API v2.3.0 to production on April 15, 2026.", None), Some("2026-04-15".into()));
        assert_eq!(event_date("Deployed on April 15.", said), Some("2026-04-15".into()), "the year of the day said");
        assert_eq!(event_date("We met on 3rd of March and again on 2026-04-01.", said), Some("2026-03-03".into()), "the first named");
        assert_eq!(event_date("The launch is on Dec. 30th.", Some(d("2027-01-02"))), Some("2026-12-30".into()), "the nearest year");
        assert_eq!(event_date("Her party was on 30 June.", Some(d("2026-11-02"))), Some("2026-06-30".into()));
        assert_eq!(event_date("Deployed on April 15.", None), None, "no year, nothing said when");
        assert_eq!(event_date("Paid on February 30, 2026, then on 2026-03-02.", None), Some("2026-03-02".into()), "not a day of the calendar");
        assert_eq!(event_date("Né2026-04-15 à Paris.", None), Some("2026-04-15".into()), "word boundaries read as ASCII");
        assert_eq!(event_date("Ticket 2026-04-1500 closed.", None), None, "a longer number is no date");
        for undated in ["We may 5x the budget.", "In May we moved.", "Planned for March 2024.", "I march 3 miles a day.", "Version 2026-beta"] {
            assert_eq!(event_date(undated, said), None, "{undated}");
        }
    }

    #[test]
    fn test_statements_and_questions_read_days_with_one_pattern_and_their_own_year() {
        let said = d("2026-03-01");
        let days = |text: &str, months, year| days_in(text, months, year).map(fmt).collect::<Vec<_>>();
        // A plan said in March names this May; a question asked then asks after last May.
        assert_eq!(days("Flying out on May 3.", MonthNames::Capitalized, YearOf::NearestTo(said)), ["2026-05-03"]);
        assert_eq!(days("What did I do on May 3?", MonthNames::AnyCase, YearOf::LatestBy(said)), ["2025-05-03"]);
        // In the past both readings agree.
        assert_eq!(days("On Feb 20th and 2026-01-02", MonthNames::Capitalized, YearOf::NearestTo(said)), ["2026-02-20", "2026-01-02"]);
        assert_eq!(days("on feb 20th and 2026-01-02", MonthNames::AnyCase, YearOf::LatestBy(said)), ["2026-02-20", "2026-01-02"]);
        assert!(days("on may 3", MonthNames::Capitalized, YearOf::NearestTo(said)).is_empty(), "lowercase months are words in statements");
        assert_eq!(days("the Feb 29 outage", MonthNames::AnyCase, YearOf::LatestBy(said)), ["2024-02-29"], "the last one there was");
        assert!(days("on May 3", MonthNames::Capitalized, YearOf::Unknown).is_empty());
        assert!(names_a_month_day("we shipped on 3rd of may", MonthNames::AnyCase));
        assert!(!names_a_month_day("we shipped on 2026-05-03 in may", MonthNames::AnyCase), "an ISO date is not a month's day");
    }

    #[test]
    fn test_the_first_date_is_the_first_day_of_the_calendar_a_text_names() {
        let first_date = |text: &str| event_date(text, None);
        assert_eq!(first_date("Dated 2023-02-30 by mistake, paid 2023-03-02."), Some("2023-03-02".into()));
        assert_eq!(first_date("Dated 2023-02-30 by mistake."), None);
        assert_eq!(first_date("On 2024-02-29 and 2024-03-01."), Some("2024-02-29".into()));
    }

    #[test]
    fn test_yesterday_resolves_against_the_message_date() {
        assert_eq!(resolve("I deployed yesterday.", d("2026-04-15")), "I deployed on 2026-04-14.");
    }

    #[test]
    fn test_last_and_next_weekdays_are_written_as_dates() {
        // 2026-04-15 is a Wednesday.
        assert_eq!(resolve("last Tuesday", d("2026-04-15")), "on Tuesday 2026-04-14");
        assert_eq!(resolve("next Tuesday", d("2026-04-15")), "on Tuesday 2026-04-21");
        assert_eq!(resolve("last Wednesday", d("2026-04-15")), "on Wednesday 2026-04-08");
    }

    #[test]
    fn test_counted_offsets_are_written_as_a_day_a_week_or_a_month() {
        assert_eq!(resolve("3 days ago", d("2026-04-15")), "on 2026-04-12");
        assert_eq!(resolve("in two weeks", d("2026-04-15")), "around 2026-04-29");
        assert_eq!(resolve("two months ago", d("2026-04-15")), "in February 2026");
    }

    #[test]
    fn test_named_periods_are_written_as_their_week_year_or_morning() {
        assert_eq!(resolve("next week", d("2026-04-15")), "the week of 2026-04-20");
        assert_eq!(resolve("last year", d("2026-04-15")), "in 2025");
        assert_eq!(resolve("this morning", d("2026-04-15")), "on the morning of 2026-04-15");
    }

    #[test]
    fn test_unrelated_text_is_untouched() {
        let s = "We use pnpm, not npm.";
        assert_eq!(resolve(s, d("2026-04-15")), s);
    }
}
