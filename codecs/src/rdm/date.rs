//! [`RdmDate`]: the HTTP/1.0 dates RDM uses (`Last-Modified`, `SD-Expires`, `since …`).
//!
//! The note asks for "HTTP/1.0 date format" (RFC 1945 §3.3): RFC 1123
//! (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and
//! asctime (`Sun Nov  6 08:49:37 1994`). We do not use the `httpdate` crate's parser
//! because it rejects a date whose weekday is wrong, and the note's own server description
//! expires on "Thu, 01 Jan 1997", which was a Wednesday. Old data is full of such dates;
//! the weekday carries no information, so it is accepted and ignored. RFC 822 zones
//! (`EST`, `-0500`, …) are accepted too, since 1990s servers wrote them, and so is ISO 8601
//! (`1994-11-06T08:49:37Z`), which is what people type today for `since`.
//!
//! ```
//! use soif_codecs::rdm::RdmDate;
//! let d: RdmDate = "Thu, 01 Jan 1997 00:00:00 GMT".parse().unwrap();
//! assert_eq!(d.unix_seconds(), 852_076_800);
//! assert_eq!(d.to_http_string(), "Wed, 01 Jan 1997 00:00:00 GMT");
//! assert_eq!(d.to_string(), "Thu, 01 Jan 1997 00:00:00 GMT"); // as written
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time read from (or written as) an HTTP date.
///
/// Equality and order compare the instant only; [`Display`](fmt::Display) writes the text
/// exactly as it was parsed (so re-encoding an object does not change it), or the
/// canonical RFC 1123 form for dates made in code.
#[derive(Debug, Clone)]
pub struct RdmDate {
    secs: i64,
    original: Option<Box<str>>,
}

/// Why a date did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an HTTP date ({0}); expected e.g. \"Sun, 06 Nov 1994 08:49:37 GMT\"")]
pub struct DateError(&'static str);

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const MONTHS_FULL: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const WEEKDAYS_FULL: [&str; 7] = [
    "sunday",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
];
const WEEKDAY_NAMES: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTH_NAMES: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

impl RdmDate {
    /// The date `secs` seconds after 1970-01-01T00:00:00Z (negative: before).
    pub fn from_unix(secs: i64) -> RdmDate {
        RdmDate {
            secs,
            original: None,
        }
    }

    /// Seconds since the Unix epoch.
    pub fn unix_seconds(&self) -> i64 {
        self.secs
    }

    /// The instant as a [`SystemTime`].
    pub fn to_system_time(&self) -> SystemTime {
        if self.secs >= 0 {
            UNIX_EPOCH + Duration::from_secs(self.secs.unsigned_abs())
        } else {
            UNIX_EPOCH - Duration::from_secs(self.secs.unsigned_abs())
        }
    }

    /// A date from a [`SystemTime`] (sub-second precision is dropped: HTTP dates have none).
    pub fn from_system_time(t: SystemTime) -> RdmDate {
        let secs = match t.duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            Err(e) => i64::try_from(e.duration().as_secs())
                .map(|s| -s)
                .unwrap_or(i64::MIN),
        };
        RdmDate::from_unix(secs)
    }

    /// The current time.
    pub fn now() -> RdmDate {
        RdmDate::from_system_time(SystemTime::now())
    }

    /// The text as it was parsed, if this date was parsed.
    pub fn original(&self) -> Option<&str> {
        self.original.as_deref()
    }

    /// The canonical RFC 1123 form, `Sun, 06 Nov 1994 08:49:37 GMT`, with the right weekday.
    pub fn to_http_string(&self) -> String {
        let days = self.secs.div_euclid(86_400);
        let rem = self.secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        // 1970-01-01 was a Thursday (index 4 with Sunday = 0).
        let wd = (days + 4).rem_euclid(7) as usize;
        format!(
            "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
            WEEKDAY_NAMES[wd],
            d,
            MONTH_NAMES[(m - 1) as usize],
            y,
            rem / 3600,
            rem / 60 % 60,
            rem % 60
        )
    }

    /// Parses any of the three HTTP/1.0 date forms (see the module docs).
    pub fn parse(s: &str) -> Result<RdmDate, DateError> {
        let secs = parse_secs(s)?;
        Ok(RdmDate {
            secs,
            original: Some(s.trim().into()),
        })
    }
}

impl PartialEq for RdmDate {
    fn eq(&self, other: &Self) -> bool {
        self.secs == other.secs
    }
}
impl Eq for RdmDate {}
impl PartialOrd for RdmDate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for RdmDate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.secs.cmp(&other.secs)
    }
}
impl std::hash::Hash for RdmDate {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.secs.hash(state)
    }
}

impl FromStr for RdmDate {
    type Err = DateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RdmDate::parse(s)
    }
}

impl fmt::Display for RdmDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.original {
            Some(text) => f.write_str(text),
            None => f.write_str(&self.to_http_string()),
        }
    }
}

impl From<SystemTime> for RdmDate {
    fn from(t: SystemTime) -> Self {
        RdmDate::from_system_time(t)
    }
}

fn month(token: &str) -> Option<u32> {
    // "Nov" and "November" both name November; nothing else does.
    MONTHS
        .iter()
        .zip(MONTHS_FULL)
        .position(|(short, full)| {
            token.eq_ignore_ascii_case(short) || token.eq_ignore_ascii_case(full)
        })
        .map(|i| i as u32 + 1)
}

fn is_weekday(token: &str) -> bool {
    WEEKDAYS
        .iter()
        .zip(WEEKDAYS_FULL)
        .any(|(short, full)| token.eq_ignore_ascii_case(short) || token.eq_ignore_ascii_case(full))
}

fn number(token: &str, what: &'static str) -> Result<i64, DateError> {
    if token.is_empty() || token.len() > 4 || !token.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DateError(what));
    }
    token.parse::<i64>().map_err(|_| DateError(what))
}

fn year(token: &str) -> Result<i64, DateError> {
    let y = number(token, "bad year")?;
    Ok(match token.len() {
        // RFC 850 two-digit years, mapped as HTTP/1.1 §19.3 suggests for old data.
        2 if y < 70 => 2000 + y,
        2 => 1900 + y,
        // RFC 2822 §4.3: three-digit years count from 1900.
        3 => 1900 + y,
        _ => y,
    })
}

/// `hh:mm` or `hh:mm:ss` → seconds into the day.
fn time_of_day(token: &str) -> Result<i64, DateError> {
    let mut parts = token.split(':');
    let h = number(parts.next().unwrap_or(""), "bad time")?;
    let m = number(parts.next().ok_or(DateError("bad time"))?, "bad time")?;
    let s = match parts.next() {
        Some(s) => number(s, "bad time")?,
        None => 0,
    };
    if parts.next().is_some() || h > 23 || m > 59 || s > 60 {
        return Err(DateError("bad time"));
    }
    Ok(h * 3600 + m * 60 + s)
}

/// A zone's offset from GMT in seconds.
fn zone(token: &str) -> Result<i64, DateError> {
    let upper = token.to_ascii_uppercase();
    let hours = match upper.as_str() {
        "GMT" | "UT" | "UTC" | "Z" => 0,
        "EST" => -5,
        "EDT" => -4,
        "CST" => -6,
        "CDT" => -5,
        "MST" => -7,
        "MDT" => -6,
        "PST" => -8,
        "PDT" => -7,
        _ => {
            let (sign, digits) = match upper.as_bytes().first() {
                Some(b'+') => (1, &upper[1..]),
                Some(b'-') => (-1, &upper[1..]),
                _ => return Err(DateError("unknown time zone")),
            };
            if digits.len() != 4 {
                return Err(DateError("unknown time zone"));
            }
            let n = number(digits, "unknown time zone")?;
            let (h, m) = (n / 100, n % 100);
            if m > 59 {
                return Err(DateError("unknown time zone"));
            }
            return Ok(sign * (h * 3600 + m * 60));
        }
    };
    Ok(hours * 3600)
}

fn parse_secs(s: &str) -> Result<i64, DateError> {
    if let Some(secs) = parse_iso8601(s.trim())? {
        return Ok(secs);
    }
    let tokens: Vec<&str> = s
        .split(|c: char| c.is_ascii_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .collect();
    let mut rest = tokens.as_slice();
    if let Some(first) = rest.first() {
        if is_weekday(first) {
            rest = &rest[1..];
        }
    }
    let (y, m, d, secs, zone_token) = match rest {
        // asctime: Nov  6 08:49:37 1994
        [mon, day, time, yr] if month(mon).is_some() => (
            year(yr)?,
            month(mon).unwrap_or(1),
            number(day, "bad day")?,
            time_of_day(time)?,
            None,
        ),
        // RFC 850: 06-Nov-94 08:49:37 GMT
        [dmy, time, tail @ ..] if dmy.contains('-') && tail.len() <= 1 => {
            let mut parts = dmy.split('-');
            let day = number(parts.next().unwrap_or(""), "bad day")?;
            let mon = parts.next().and_then(month).ok_or(DateError("bad month"))?;
            let yr = year(parts.next().ok_or(DateError("bad year"))?)?;
            if parts.next().is_some() {
                return Err(DateError("bad day-month-year"));
            }
            (yr, mon, day, time_of_day(time)?, tail.first())
        }
        // RFC 1123 / 822: 06 Nov 1994 08:49:37 GMT
        [day, mon, yr, time, tail @ ..] if tail.len() <= 1 => (
            year(yr)?,
            month(mon).ok_or(DateError("bad month"))?,
            number(day, "bad day")?,
            time_of_day(time)?,
            tail.first(),
        ),
        _ => return Err(DateError("unrecognised date form")),
    };
    if d < 1 || d > days_in_month(y, m) {
        return Err(DateError("day out of range"));
    }
    let offset = match zone_token {
        Some(z) => zone(z)?,
        None => 0,
    };
    Ok(days_from_civil(y, m, d) * 86_400 + secs - offset)
}

/// ISO 8601 / RFC 3339 (`1994-11-06`, `1994-11-06T08:49:37Z`, `1994-11-06 08:49:37+01:00`):
/// what users type today for `since`. `Ok(None)` when `s` does not start like one.
fn parse_iso8601(s: &str) -> Result<Option<i64>, DateError> {
    let b = s.as_bytes();
    let looks_iso =
        b.len() >= 10 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[7] == b'-';
    if !looks_iso {
        return Ok(None);
    }
    let bad = DateError("bad ISO 8601 date");
    let y = number(&s[..4], "bad year")?;
    let m = number(s.get(5..7).ok_or(bad.clone())?, "bad month")?;
    let d = number(s.get(8..10).ok_or(bad.clone())?, "bad day")?;
    if !(1..=12).contains(&m) {
        return Err(DateError("month out of range"));
    }
    let m = m as u32;
    if d < 1 || d > days_in_month(y, m) {
        return Err(DateError("day out of range"));
    }
    let mut secs = days_from_civil(y, m, d) * 86_400;
    let rest = &s[10..];
    if rest.is_empty() {
        return Ok(Some(secs));
    }
    let rest = rest
        .strip_prefix(['T', 't', ' '])
        .ok_or(bad.clone())?
        .trim_start();
    // The time runs up to the zone: `Z`, `+hh:mm`, `-hhmm`, or nothing (taken as UTC).
    let zone_at = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
    let (time, zone_text) = rest.split_at(zone_at);
    // Fractions of a second are dropped: HTTP dates have none.
    let time = time.trim_end().split('.').next().unwrap_or("");
    secs += time_of_day(time)?;
    let offset = match zone_text {
        "" | "Z" | "z" => 0,
        z => zone(&z.replace(':', ""))?,
    };
    Ok(Some(secs - offset))
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: u32) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`]: (year, month, day).
fn civil_from_days(z: i64) -> (i64, u32, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m as u32, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_http_forms_agree() {
        // RFC 1945 §3.3's example, in its three forms (quoted in seed 000 as the `since` scope).
        let a = RdmDate::parse("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        let b = RdmDate::parse("Sunday, 06-Nov-94 08:49:37 GMT").unwrap();
        let c = RdmDate::parse("Sun Nov  6 08:49:37 1994").unwrap();
        assert_eq!(a.unix_seconds(), 784_111_777);
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(c.to_http_string(), "Sun, 06 Nov 1994 08:49:37 GMT");
    }

    #[test]
    fn wrong_weekday_is_ignored_but_kept_in_display() {
        // The note's SD-Expires: 1997-01-01 was a Wednesday.
        let d = RdmDate::parse("Thu, 01 Jan 1997 00:00:00 GMT").unwrap();
        assert_eq!(d.to_string(), "Thu, 01 Jan 1997 00:00:00 GMT");
        assert_eq!(d.to_http_string(), "Wed, 01 Jan 1997 00:00:00 GMT");
    }

    #[test]
    fn zones_and_missing_weekday() {
        let gmt = RdmDate::parse("16 May 1996 16:45:39 GMT").unwrap();
        let est = RdmDate::parse("Thu, 16 May 1996 11:45:39 EST").unwrap();
        let num = RdmDate::parse("Thu, 16 May 1996 11:45:39 -0500").unwrap();
        assert_eq!(gmt, est);
        assert_eq!(gmt, num);
    }

    #[test]
    fn iso_8601() {
        let http = RdmDate::parse("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        for iso in [
            "1994-11-06T08:49:37Z",
            "1994-11-06 08:49:37",
            "1994-11-06T09:49:37+01:00",
            "1994-11-06T03:49:37.250-0500",
        ] {
            assert_eq!(RdmDate::parse(iso).unwrap(), http, "{iso}");
        }
        assert_eq!(
            RdmDate::parse("1994-11-06").unwrap().unix_seconds(),
            784_080_000
        );
        for bad in [
            "1994-13-01",
            "1994-02-30",
            "1994-11-06T25:00",
            "1994-11-06X",
            "1994-11-06T08:49:37+1",
        ] {
            assert!(RdmDate::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn rejects_nonsense() {
        for bad in [
            "",
            "yesterday",
            "Thu, 31 Feb 1996 00:00:00 GMT",
            "Thu, 16 May 1996 24:00:00 GMT",
            "Thu, 16 Foo 1996 00:00:00 GMT",
            "Thu, 16 May 1996 00:00:00 XYZ",
            "Thu, 16 May 1996 00:00:00 GMT extra",
            "Thu, 16 May 99999 00:00:00 GMT",
        ] {
            assert!(RdmDate::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn civil_round_trip_over_four_centuries() {
        for days in (-200_000..200_000).step_by(37) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn made_in_code_formats_canonically() {
        let d = RdmDate::from_unix(0);
        assert_eq!(d.to_string(), "Thu, 01 Jan 1970 00:00:00 GMT");
        let before = RdmDate::from_unix(-86_400);
        assert_eq!(before.to_string(), "Wed, 31 Dec 1969 00:00:00 GMT");
        assert_eq!(RdmDate::from_system_time(before.to_system_time()), before);
    }
}
