//! Time formatting and parsing shared by the store and the pipelines.

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, SecondsFormat, Utc};

/// The years a date this service accepts or writes may have: those ISO
/// writes with four digits, so stored dates order correctly as text and
/// date arithmetic stays far from the calendar's end.
pub const YEARS: std::ops::RangeInclusive<i32> = 0..=9999;

/// ISO-8601 UTC with milliseconds, e.g. `2026-04-15T09:30:00.000Z`.
pub fn iso(millis: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(millis).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses an ISO-8601 date-time or plain date (`2026-04-15`), and a few
/// common human formats, into a UTC date-time. A date outside [`YEARS`]
/// (`+262142-12-31`, `-0001-01-01`) is not one: `None`.
pub fn parse_datetime(s: &str) -> Option<DateTime<Utc>> {
    parse_any(s).filter(|d| YEARS.contains(&d.year()))
}

/// ISO-8601 date-times with an offset (`Z` read as `+0000`) beyond RFC
/// 3339's: minutes without seconds, an offset without its colon or its
/// minutes, the basic format.
const WITH_OFFSET: [&str; 4] = ["%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M%#z", "%Y%m%dT%H%M%S%.f%#z", "%Y%m%dT%H%M%#z"];

/// The same without an offset (read as UTC), and with a space for the `T`.
const WITHOUT_OFFSET: [&str; 5] = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S%.f", "%Y%m%dT%H%M%S%.f", "%Y%m%dT%H%M"];

/// An ISO-8601 date-time with its offset: RFC 3339, or a [`WITH_OFFSET`]
/// form (a lowercase `t` or `z` as RFC 3339 allows them).
fn parse_with_offset(s: &str) -> Option<DateTime<FixedOffset>> {
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return Some(dt);
    }
    // The formats' parser passes over white space: none is in these forms.
    if !s.is_ascii() || s.contains(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let upper = s.to_ascii_uppercase();
    let zulu = upper.strip_suffix('Z').map(|b| format!("{b}+0000"));
    let s = zulu.as_deref().unwrap_or(&upper);
    WITH_OFFSET.iter().find_map(|f| DateTime::parse_from_str(s, f).ok())
}

fn parse_any(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Some(dt) = parse_with_offset(s) {
        return Some(dt.with_timezone(&Utc));
    }
    let upper = s.to_ascii_uppercase();
    if let Some(ndt) = WITHOUT_OFFSET.iter().find_map(|f| chrono::NaiveDateTime::parse_from_str(&upper, f).ok()) {
        return Some(ndt.and_utc());
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return d.and_hms_opt(0, 0, 0).map(|n| n.and_utc());
    }
    // LoCoMo style: "1:56 pm on 8 May, 2023"
    for fmt in ["%I:%M %P on %d %B, %Y", "%H:%M on %d %B, %Y"] {
        if let Ok(ndt) = chrono::NaiveDateTime::parse_from_str(s, fmt) {
            return Some(ndt.and_utc());
        }
    }
    for fmt in ["%d %B, %Y", "%d %B %Y", "%B %d, %Y"] {
        if let Ok(d) = NaiveDate::parse_from_str(s, fmt) {
            return d.and_hms_opt(0, 0, 0).map(|n| n.and_utc());
        }
    }
    None
}

/// Parses a date-time into epoch milliseconds.
pub fn parse_millis(s: &str) -> Option<i64> {
    parse_datetime(s).map(|d| d.timestamp_millis())
}

/// The calendar date part of an ISO string, if it parses.
pub fn date_of(s: &str) -> Option<NaiveDate> {
    parse_datetime(s).map(|d| d.date_naive())
}

/// The day a date-time was in where it was said: the date of its own
/// offset (`2026-04-14T21:00:00-05:00` is April 14, where [`date_of`] gives
/// the UTC date, April 15), or [`date_of`] for one without an offset. What
/// "yesterday" said at that time means is reckoned from this day.
pub fn local_date_of(s: &str) -> Option<NaiveDate> {
    match parse_with_offset(s.trim()) {
        Some(d) => parse_datetime(s).map(|_| d.date_naive()),
        None => date_of(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_iso_8601_date_times_beyond_rfc_3339_are_read() {
        let at = |s: &str| parse_datetime(s).map(|d| d.to_rfc3339_opts(SecondsFormat::Millis, true));
        let noon = Some("2026-04-21T12:00:00.000Z".to_string());
        for s in [
            "2026-04-21T12:00:00Z",
            "2026-04-21T12:00:00.000Z",
            "2026-04-21t12:00:00z",
            "2026-04-21T12:00:00",
            "2026-04-21T12:00:00.000",
            "2026-04-21T12:00Z",
            "2026-04-21T12:00",
            "2026-04-21T14:00:00+0200",
            "2026-04-21T14:00:00+02",
            "2026-04-21T14:00+02:00",
            "2026-04-21 12:00:00",
            "20260421T120000Z",
            "20260421T1200Z",
            "20260421T140000+0200",
        ] {
            assert_eq!(at(s), noon, "{s}");
        }
        assert_eq!(at("2026-04-21T12:00:00.123456").as_deref(), Some("2026-04-21T12:00:00.123Z"));
        for s in ["2026-04-21T25:00", "2026-04-21T12", "21/04/2026", "2026-04-21T12:00:00+2", "2026-04-21T12:00:00 Z"] {
            assert_eq!(at(s), None, "{s}");
        }
        assert_eq!(local_date_of("2026-04-21T23:30:00-0500"), NaiveDate::from_ymd_opt(2026, 4, 21));
    }

    #[test]
    fn test_the_local_date_is_the_date_of_the_timestamps_own_offset() {
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        assert_eq!(local_date_of("2026-04-14T21:00:00-05:00"), Some(d("2026-04-14")));
        assert_eq!(date_of("2026-04-14T21:00:00-05:00"), Some(d("2026-04-15")));
        assert_eq!(local_date_of("2026-04-15T01:00:00+09:00"), Some(d("2026-04-15")));
        assert_eq!(local_date_of("2026-04-14T21:00:00Z"), Some(d("2026-04-14")));
        assert_eq!(local_date_of("2026-04-14"), Some(d("2026-04-14")));
        assert_eq!(local_date_of("not a date"), None);
    }

    #[test]
    fn test_iso_round_trips() {
        let ms = 1_776_245_400_000;
        assert_eq!(parse_millis(&iso(ms)), Some(ms));
    }

    #[test]
    fn test_parses_locomo_session_dates() {
        let d = parse_datetime("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(d.to_rfc3339(), "2023-05-08T13:56:00+00:00");
    }
}
