//! Resolving relative dates ("yesterday", "last Tuesday", "3 days ago",
//! "next week", "in two weeks", "this morning") to absolute ones, relative
//! to an anchor date (the message's timestamp or the session date).
//!
//! Resolution rewrites the phrase in place, keeping the meaning:
//! "I deployed yesterday" becomes "I deployed on 2026-04-14". Phrases it
//! does not recognise are left as they are; it never guesses.

use chrono::{Datelike, Duration, Months, NaiveDate, Weekday};
use regex::{Captures, Regex};
use std::sync::OnceLock;

const WEEKDAYS: &str = "monday|tuesday|wednesday|thursday|friday|saturday|sunday";
const NUMBERS: &str = r"\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few";

fn pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let p = format!(
            r"(?i)\b(?:(?P<dby>the day before yesterday)|(?P<dat>the day after tomorrow)|(?P<yesterday>yesterday)|(?P<tomorrow>tomorrow)|(?P<tonight>tonight)|this (?P<part>morning|afternoon|evening)|(?P<today>today)|(?P<rel>last|next|this|on|this past|this coming) (?P<wd>{WEEKDAYS})|(?P<rel2>last|next|this) (?P<unit2>week|month|year|weekend)|(?P<n>{NUMBERS}) (?P<unit>days?|weeks?|months?|years?) (?P<ago>ago|later|from now)|in (?P<n3>{NUMBERS}) (?P<unit3>days?|weeks?|months?|years?))\b"
        );
        Regex::new(&p).expect("valid date regex")
    })
}

fn number(s: &str) -> Option<i64> {
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

fn shift(anchor: NaiveDate, n: i64, unit: &str) -> Option<NaiveDate> {
    let unit = unit.to_lowercase();
    if unit.starts_with("day") {
        anchor.checked_add_signed(Duration::days(n))
    } else if unit.starts_with("week") {
        anchor.checked_add_signed(Duration::weeks(n))
    } else if unit.starts_with("month") {
        if n >= 0 {
            anchor.checked_add_months(Months::new(n as u32))
        } else {
            anchor.checked_sub_months(Months::new((-n) as u32))
        }
    } else if n >= 0 {
        anchor.checked_add_months(Months::new(12 * n as u32))
    } else {
        anchor.checked_sub_months(Months::new(12 * (-n) as u32))
    }
}

fn monday_of(d: NaiveDate) -> NaiveDate {
    d - Duration::days(d.weekday().num_days_from_monday() as i64)
}

/// The date a weekday phrase names: "last Tuesday" is the most recent
/// Tuesday strictly before the anchor; "next Tuesday" the first strictly
/// after; "this/on Tuesday" the one in the anchor's week.
fn weekday_date(anchor: NaiveDate, rel: &str, wd: Weekday) -> NaiveDate {
    let rel = rel.to_lowercase();
    let diff = wd.num_days_from_monday() as i64 - anchor.weekday().num_days_from_monday() as i64;
    match rel.as_str() {
        "last" | "this past" => {
            let back = (anchor.weekday().num_days_from_monday() as i64 - wd.num_days_from_monday() as i64).rem_euclid(7);
            anchor - Duration::days(if back == 0 { 7 } else { back })
        }
        "next" | "this coming" => {
            let fwd = diff.rem_euclid(7);
            anchor + Duration::days(if fwd == 0 { 7 } else { fwd })
        }
        _ => monday_of(anchor) + Duration::days(wd.num_days_from_monday() as i64),
    }
}

fn replacement(c: &Captures, anchor: NaiveDate) -> Option<String> {
    if c.name("dby").is_some() {
        return Some(format!("on {}", fmt(anchor - Duration::days(2))));
    }
    if c.name("dat").is_some() {
        return Some(format!("on {}", fmt(anchor + Duration::days(2))));
    }
    if c.name("yesterday").is_some() {
        return Some(format!("on {}", fmt(anchor - Duration::days(1))));
    }
    if c.name("tomorrow").is_some() {
        return Some(format!("on {}", fmt(anchor + Duration::days(1))));
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
        let d = weekday_date(anchor, rel.as_str(), weekday(wd.as_str())?);
        return Some(format!("on {} {}", wd.as_str(), fmt(d)));
    }
    if let (Some(rel), Some(unit)) = (c.name("rel2"), c.name("unit2")) {
        let step = match rel.as_str().to_lowercase().as_str() {
            "last" => -1,
            "next" => 1,
            _ => 0,
        };
        return Some(match unit.as_str().to_lowercase().as_str() {
            "week" => format!("the week of {}", fmt(monday_of(anchor) + Duration::weeks(step))),
            "weekend" => {
                let sat = monday_of(anchor) + Duration::days(5) + Duration::weeks(step);
                format!("the weekend of {}", fmt(sat))
            }
            "month" => {
                let d = shift(anchor.with_day(1)?, step, "month")?;
                format!("in {}", d.format("%B %Y"))
            }
            _ => format!("in {}", anchor.year() + step as i32),
        });
    }
    if let (Some(n), Some(unit), Some(dir)) = (c.name("n"), c.name("unit"), c.name("ago")) {
        let n = number(n.as_str())?;
        let n = if dir.as_str().eq_ignore_ascii_case("ago") { -n } else { n };
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

/// Rewrites every relative date phrase in `text` against `anchor`.
pub fn resolve(text: &str, anchor: NaiveDate) -> String {
    pattern()
        .replace_all(text, |c: &Captures| replacement(c, anchor).unwrap_or_else(|| c[0].to_string()))
        .into_owned()
}

/// The first absolute date a resolved text names, if any (`YYYY-MM-DD`).
pub fn first_date(text: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"\b(\d{4}-\d{2}-\d{2})\b").expect("valid regex"));
    re.captures(text).map(|c| c[1].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn test_yesterday_resolves_against_the_message_date() {
        assert_eq!(resolve("I deployed yesterday.", d("2026-04-15")), "I deployed on 2026-04-14.");
    }

    #[test]
    fn test_weekday_phrases() {
        // 2026-04-15 is a Wednesday.
        assert_eq!(resolve("last Tuesday", d("2026-04-15")), "on Tuesday 2026-04-14");
        assert_eq!(resolve("next Tuesday", d("2026-04-15")), "on Tuesday 2026-04-21");
        assert_eq!(resolve("last Wednesday", d("2026-04-15")), "on Wednesday 2026-04-08");
    }

    #[test]
    fn test_counted_offsets() {
        assert_eq!(resolve("3 days ago", d("2026-04-15")), "on 2026-04-12");
        assert_eq!(resolve("in two weeks", d("2026-04-15")), "around 2026-04-29");
        assert_eq!(resolve("two months ago", d("2026-04-15")), "in February 2026");
    }

    #[test]
    fn test_named_periods() {
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
