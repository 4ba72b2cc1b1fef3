//! Dates as 1990s metadata wrote them, read into one type and written as ISO 8601.
//!
//! Accepted forms (surrounding whitespace ignored):
//!
//! | input                                   | meaning                              |
//! |-----------------------------------------|--------------------------------------|
//! | `774988159`                             | Unix seconds (Harvest's `Last-Modification-Time`, `Update-Time`) |
//! | `19961203`                              | `YYYYMMDD` (ANSI X3.30, RFC 2655 App. C `DATE`) when it is a valid calendar date |
//! | `Sun, 06 Nov 1994 08:49:37 GMT`         | HTTP IMF-fixdate                     |
//! | `Sunday, 06-Nov-94 08:49:37 GMT`        | HTTP RFC 850 form                    |
//! | `Sun Nov  6 08:49:37 1994`              | HTTP asctime form                    |
//! | `Thu, 16 May 1996 11:45:39 +0200`       | RFC 2822 with a numeric zone         |
//! | `February 9, 1997`, `Feb 9, 1997`, `9 February 1997` | a calendar date          |
//! | `1997-02-09`, `1997-02-09T10:00:00Z`, `1997-02-09 10:00:00` | ISO 8601 / RFC 3339 (no zone = UTC) |
//!
//! An eight-digit number is read as `YYYYMMDD` first, because Unix times of eight digits
//! fall before March 1973, earlier than any web metadata. HTTP dates whose weekday
//! disagrees with the date (common in hand-written data) are still read, from the date.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};

/// A parsed date: a calendar day, or an instant to the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// A day without a time (`February 9, 1997`, `19970209`).
    Day(NaiveDate),
    /// An instant, in Unix seconds (UTC).
    Instant(i64),
}

impl When {
    /// Unix seconds; a day counts from its midnight UTC.
    pub fn unix(&self) -> i64 {
        match self {
            When::Day(d) => d.and_time(NaiveTime::MIN).and_utc().timestamp(),
            When::Instant(s) => *s,
        }
    }

    /// ISO 8601: `1997-02-09` for a day, `1994-07-23T18:29:19Z` for an instant.
    pub fn to_iso(&self) -> String {
        match self {
            When::Day(d) => d.format("%Y-%m-%d").to_string(),
            When::Instant(s) => match DateTime::<Utc>::from_timestamp(*s, 0) {
                Some(t) => t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                // Out of chrono's range (±262,000 years): keep the number itself.
                None => s.to_string(),
            },
        }
    }
}

/// Parses one of the forms in the module docs; `None` when the value is none of them.
pub fn parse(value: &[u8]) -> Option<When> {
    let s = std::str::from_utf8(value).ok()?.trim();
    if s.is_empty() || s.len() > 64 {
        return None;
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return parse_number(s);
    }
    if let Some(d) = s
        .strip_prefix('-')
        .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
    {
        return d.parse::<i64>().ok().map(|n| When::Instant(-n));
    }
    if let Ok(t) = httpdate::parse_http_date(s) {
        let secs = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
        return i64::try_from(secs).ok().map(When::Instant);
    }
    parse_iso(s)
        .or_else(|| parse_rfc2822(s))
        .or_else(|| parse_calendar(s))
}

fn parse_number(s: &str) -> Option<When> {
    if s.len() == 8 {
        if let Ok(d) = NaiveDate::parse_from_str(s, "%Y%m%d") {
            return Some(When::Day(d));
        }
    }
    // Up to 12 digits: Unix seconds through the year 33658; longer is not a date.
    if s.len() <= 12 {
        return s.parse::<i64>().ok().map(When::Instant);
    }
    None
}

fn parse_iso(s: &str) -> Option<When> {
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some(When::Day(d));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(When::Instant(t.timestamp()));
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(When::Instant(t.and_utc().timestamp()));
        }
    }
    None
}

fn parse_rfc2822(s: &str) -> Option<When> {
    if let Ok(t) = DateTime::parse_from_rfc2822(s) {
        return Some(When::Instant(t.timestamp()));
    }
    // A weekday that does not fit the date makes both parsers above refuse the value:
    // drop the weekday and read the date itself.
    let rest = s.split_once(',').map(|(_, r)| r.trim())?;
    let rest = rest
        .strip_suffix("GMT")
        .or_else(|| rest.strip_suffix("UTC"))
        .unwrap_or(rest)
        .trim();
    for fmt in [
        "%d %b %Y %H:%M:%S",
        "%d-%b-%y %H:%M:%S",
        "%d-%b-%Y %H:%M:%S",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(rest, fmt) {
            return Some(When::Instant(t.and_utc().timestamp()));
        }
    }
    None
}

fn parse_calendar(s: &str) -> Option<When> {
    for fmt in ["%B %d, %Y", "%B %d %Y", "%d %B %Y", "%d %B, %Y"] {
        if let Ok(d) = NaiveDate::parse_from_str(s, fmt) {
            return Some(When::Day(d));
        }
    }
    None
}

/// Parses and writes ISO 8601 in one step; `None` when the value is not a known form.
pub fn to_iso(value: &[u8]) -> Option<String> {
    parse(value).map(|w| w.to_iso())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(s: &str) -> Option<String> {
        to_iso(s.as_bytes())
    }

    #[test]
    fn harvest_epoch_seconds() {
        // Seed 004: "Last-Modification-Time{9}: 774988159".
        assert_eq!(iso("774988159").as_deref(), Some("1994-07-23T18:29:19Z"));
        assert_eq!(iso(" 772872313\n").as_deref(), Some("1994-06-29T06:45:13Z"));
    }

    #[test]
    fn the_three_http_forms() {
        let want = Some("1994-11-06T08:49:37Z".to_string());
        assert_eq!(iso("Sun, 06 Nov 1994 08:49:37 GMT"), want);
        assert_eq!(iso("Sunday, 06-Nov-94 08:49:37 GMT"), want);
        assert_eq!(iso("Sun Nov  6 08:49:37 1994"), want);
        // RFC 2655 §6: "Last-Modified{31}: Tuesday, 11-Jun-96 19:18:44 GMT".
        assert_eq!(
            iso("Tuesday, 11-Jun-96 19:18:44 GMT").as_deref(),
            Some("1996-06-11T19:18:44Z")
        );
    }

    #[test]
    fn wrong_weekday_and_numeric_zone() {
        assert_eq!(
            iso("Mon, 06 Nov 1994 08:49:37 GMT").as_deref(),
            Some("1994-11-06T08:49:37Z")
        );
        assert_eq!(
            iso("Thu, 16 May 1996 11:45:39 +0200").as_deref(),
            Some("1996-05-16T09:45:39Z")
        );
    }

    #[test]
    fn calendar_forms() {
        // RFC 2655 App. C: "DATE{16}: February 9, 1997" and "19961203".
        assert_eq!(iso("February 9, 1997").as_deref(), Some("1997-02-09"));
        assert_eq!(iso("Feb 9, 1997").as_deref(), Some("1997-02-09"));
        assert_eq!(iso("9 February 1997").as_deref(), Some("1997-02-09"));
        assert_eq!(iso("19961203").as_deref(), Some("1996-12-03"));
        assert_eq!(iso("1997-02-09").as_deref(), Some("1997-02-09"));
        assert_eq!(
            iso("1997-02-09T10:00:00+01:00").as_deref(),
            Some("1997-02-09T09:00:00Z")
        );
    }

    #[test]
    fn not_dates() {
        for s in [
            "",
            "soon",
            "Expires August 8, 1997 maybe",
            "1234567890123",
            "19961341x",
        ] {
            assert_eq!(iso(s), None, "{s}");
        }
        assert_eq!(parse(b"\xff\xfe"), None);
        // Eight digits that are no calendar date are Unix seconds.
        assert_eq!(parse(b"99999999"), Some(When::Instant(99_999_999)));
    }

    #[test]
    fn ordering_via_unix() {
        let day = parse(b"1994-11-06").map(|w| w.unix());
        let later = parse(b"Sun, 06 Nov 1994 08:49:37 GMT").map(|w| w.unix());
        assert!(day < later);
    }
}
