//! `since:DATE`: the RDM gatherer scope `since <HTTP date>` (seed `000_…txt`,
//! "RDM-Query-Language: Gatherer": "send any RD which has been modified since a given
//! date").
//!
//! DATE is any form [`soif_codecs::rules::dates`] reads: `since:Sun, 06 Nov 1994 08:49:37 GMT`,
//! `since:1994-11-06`, `since:784111777`. A record is kept when its modification time is
//! **at or after** DATE. Its modification time is the latest of the values of
//! `Last-Modification-Time`, `Last-Modified` and `Update-Time` (names matched as in
//! RFC 2655 §4; Unix seconds or HTTP dates, as Harvest and RDM wrote them): the record
//! rule [`soif_codecs::rules::modified`], which the server's searches and the catalog's
//! `year` facet share.
//!
//! A record without any of those dates, or whose dates cannot be read, cannot be shown to
//! be modified since DATE and is left out; how many were, and one example, is reported
//! as a warning at the end so that nothing disappears silently.

use crate::{Emit, Error, FirstNoted, Transform};
use soif_codecs::rules::dates::{self, When};
use soif_codecs::rules::modified::{modified, Undated, DATE_ATTRIBUTES};
use soif_codecs::Record;

/// The `since` transform.
#[derive(Debug)]
pub struct Since {
    since: When,
    undated: u64,
    unreadable: u64,
    example: FirstNoted,
}

impl Since {
    /// From the argument, a date in any form [`dates::parse`] accepts.
    pub fn parse(arg: &str) -> Result<Since, Error> {
        let since = dates::parse(arg.trim().as_bytes()).ok_or_else(|| {
            Error::Config(format!(
                "since: cannot read the date `{arg}` (use an HTTP date such as \
                 `Sun, 06 Nov 1994 08:49:37 GMT`, an ISO date such as `1994-11-06`, \
                 or Unix seconds)"
            ))
        })?;
        Ok(Since::new(since))
    }

    /// Keeps records modified at or after `since`.
    pub fn new(since: When) -> Since {
        Since {
            since,
            undated: 0,
            unreadable: 0,
            example: FirstNoted::default(),
        }
    }
}

impl Transform for Since {
    fn name(&self) -> &str {
        "since"
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        match modified(&record) {
            Ok(t) if t >= self.since.unix() => out.emit(record),
            Ok(_) => Ok(()),
            Err(why) => {
                match why {
                    Undated::Unreadable => self.unreadable += 1,
                    Undated::Missing => self.undated += 1,
                }
                self.example.note_where(&record);
                Ok(())
            }
        }
    }

    fn finish(&mut self, out: &mut dyn Emit) -> Result<(), Error> {
        if self.undated + self.unreadable > 0 {
            out.warn(format!(
                "since: left out {} record(s) without {} and {} whose dates could not be \
                 read (first: {})",
                self.undated,
                DATE_ATTRIBUTES.join(" / "),
                self.unreadable,
                self.example.text().unwrap_or("-"),
            ));
        }
        Ok(())
    }

    fn fork(&self) -> Option<Box<dyn Transform>> {
        Some(Box::new(Since::new(self.since)))
    }

    fn join(&mut self, fork: Box<dyn Transform>) {
        if let Ok(fork) = (fork as Box<dyn std::any::Any>).downcast::<Since>() {
            self.undated += fork.undated;
            self.unreadable += fork.unreadable;
            self.example.join(fork.example);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Collect;

    #[test]
    fn gatherer_scope_example() {
        // Seed 000: "Scope{34}: since Sun, 06 Nov 1994 08:49:37 GMT".
        let mut t = Since::parse("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        // Seed 004's records: Last-Modification-Time 774988159 (July 1994) - too old.
        let old = Record::new("FILE", "ftp://ecrc.de/x.ps.Z")
            .with("Last-Modification-Time", "774988159")
            .with("Update-Time", "774988159");
        // RFC 2655 §6: "Last-Modified{31}: Tuesday, 11-Jun-96 19:18:44 GMT".
        let new = Record::new(
            "DOCUMENT",
            "http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg",
        )
        .with("Last-Modified", "Tuesday, 11-Jun-96 19:18:44 GMT");
        let exact = Record::new("DOCUMENT", "http://e/")
            .with("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT");
        let undated = Record::new("DOCUMENT", "http://home.netscape.com:80/");
        let bad = Record::new("DOCUMENT", "http://b/").with("Update-Time", "yesterday");
        let out = Collect::run(&mut t, [old, new.clone(), exact.clone(), undated, bad]).unwrap();
        assert_eq!(out.records, vec![new, exact]);
        assert_eq!(out.warnings.len(), 1);
        assert!(
            out.warnings[0].contains("1 record(s) without"),
            "{}",
            out.warnings[0]
        );
        assert!(
            out.warnings[0].contains("and 1 whose"),
            "{}",
            out.warnings[0]
        );
        assert!(out.warnings[0].contains("http://home.netscape.com:80/"));
    }

    #[test]
    fn latest_date_counts_and_iso_argument() {
        let mut t = Since::parse("1995-01-01").unwrap();
        let mut out = Collect::default();
        let r = Record::new("FILE", "-")
            .with("Last-Modification-Time", "774988159")
            .with("Update-Time", "820454400"); // 1996-01-01
        t.apply(r.clone(), &mut out).unwrap();
        assert_eq!(out.records, vec![r]);
        assert!(Since::parse("someday").is_err_and(|e| e.is_config()));
    }
}
