//! A record's modification date: the latest readable date among the attributes RDM and
//! Harvest wrote it in (`Last-Modification-Time`, `Last-Modified`, `Update-Time`; names
//! matched as in RFC 2655 §4; values in any form [`dates`] reads).
//!
//! The `since:DATE` transform keeps the records modified at or after DATE by this rule,
//! the server's `since` searches filter by it, and the catalog store's `year` facet is
//! the year it gives — so the three agree on what "modified" means.
//!
//! ```
//! use soif_codecs::rules::modified::{modified, Undated};
//! use soif_codecs::Record;
//!
//! let r = Record::new("FILE", "ftp://x/a")
//!     .with("Last-Modification-Time", "774988159")
//!     .with("Update-Time", "820454400");
//! assert_eq!(modified(&r), Ok(820454400)); // the latest: 1996-01-01
//! assert_eq!(modified(&Record::new("FILE", "ftp://x/b")), Err(Undated::Missing));
//! ```

use super::dates;
use super::names::values_matching;
use crate::Record;

/// The attributes that carry a record's modification time, in RDM and Harvest data.
pub const DATE_ATTRIBUTES: &[&str] = &["Last-Modification-Time", "Last-Modified", "Update-Time"];

/// Why a record has no modification date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undated {
    /// None of [`DATE_ATTRIBUTES`] is present.
    Missing,
    /// Some are present, but no value could be read as a date.
    Unreadable,
}

/// The record's modification time in Unix seconds: the latest readable date among
/// [`DATE_ATTRIBUTES`].
pub fn modified(record: &Record) -> Result<i64, Undated> {
    let mut latest: Option<i64> = None;
    let mut seen = false;
    for name in DATE_ATTRIBUTES {
        for v in values_matching(record, name.as_bytes()) {
            seen = true;
            if let Some(t) = dates::parse(v) {
                latest = Some(latest.map_or(t.unix(), |l| l.max(t.unix())));
            }
        }
    }
    latest.ok_or(if seen {
        Undated::Unreadable
    } else {
        Undated::Missing
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_readable_date_wins_in_any_form_and_name_case() {
        let r = Record::new("DOCUMENT", "http://e/")
            .with("last-modified", "Sun, 06 Nov 1994 08:49:37 GMT")
            .with("Update-Time", "yesterday")
            .with("Last-Modification-Time", "774988159");
        assert_eq!(modified(&r), Ok(784111777));
    }

    #[test]
    fn missing_and_unreadable_dates_are_told_apart() {
        let none = Record::new("DOCUMENT", "http://e/").with("Title", "1999-01-01");
        assert_eq!(modified(&none), Err(Undated::Missing));
        let bad = Record::new("DOCUMENT", "http://e/").with("Update-Time", "yesterday");
        assert_eq!(modified(&bad), Err(Undated::Unreadable));
    }
}
