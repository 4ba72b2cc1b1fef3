//! Waiting before a retry: what an HTTP server's `Retry-After` header asks for.
//!
//! Both the OAI-PMH source and the RDM sink retry a `429` or `503` after the wait the
//! server gives; the header's value is parsed here once so that the two read it the same
//! way. The cap on a wait, and the backoff when there is no header, stay with each
//! caller: they differ.
//!
//! ```
//! use soif_pipeline::retry::retry_after;
//! use std::time::Duration;
//!
//! assert_eq!(retry_after("120"), Some(Duration::from_secs(120)));
//! // A date already past: retry at once.
//! assert_eq!(retry_after("Sun, 06 Nov 1994 08:49:37 GMT"), Some(Duration::ZERO));
//! assert_eq!(retry_after("soon"), None);
//! ```

use std::time::{Duration, SystemTime};

/// A `Retry-After` value: delta-seconds or an HTTP date (RFC 9110 §10.2.3), as the wait
/// from now (zero for a date already past); `None` when it is neither.
pub fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        assert_eq!(retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(Duration::ZERO)
        );
        let soon = SystemTime::now() + Duration::from_secs(30);
        let w = retry_after(&httpdate::fmt_http_date(soon)).unwrap();
        assert!(
            w > Duration::from_secs(25) && w <= Duration::from_secs(30),
            "{w:?}"
        );
        assert_eq!(retry_after("soon"), None);
    }
}
