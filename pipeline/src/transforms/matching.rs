//! `match:Attr=value`: keep the records that match, with RFC 2655 §4 semantics.
//!
//! - The attribute name matches case-insensitively, ignoring a hyphen-integer suffix:
//!   `author` matches `author`, `Author`, `AUTHOR` and `Author-1` (and a collapsed
//!   `Author` list). `URL` matches the record's URL.
//! - The value matches as a case-insensitive substring, the RFC's rule for string data:
//!   `Garcia` matches `Garcia`, `GARCIA` and `Jose Garcia y Montes`. Case folding is
//!   ASCII only, because values are bytes in unknown character sets.
//! - An empty value (`match:Abstract=`) keeps the records that have the attribute at all.
//!
//! Several `-t match:…` steps in a row all have to match (AND). Records that do not match
//! are dropped: that is the filter's purpose, not an error.

use crate::{Emit, Error, Transform};
use memchr::memmem::Finder;
use soif_codecs::rules::names::{ascii_lower, attribute_matches, is_url};
use soif_codecs::Record;

/// The `match` transform.
#[derive(Clone)]
pub struct Match {
    attribute: Vec<u8>,
    /// The lower-cased value to look for.
    needle: Finder<'static>,
}

impl Match {
    /// From the argument `Attr=value`.
    pub fn parse(arg: &str) -> Result<Match, Error> {
        let (attr, value) = arg.split_once('=').ok_or_else(|| {
            Error::Config(format!(
                "match: expected `Attr=value` (e.g. `match:Author=Garcia`), got `{arg}`"
            ))
        })?;
        let attr = attr.trim();
        if attr.is_empty() {
            return Err(Error::Config(format!(
                "match: the attribute name is empty in `{arg}`"
            )));
        }
        Ok(Match::new(attr.as_bytes(), value.as_bytes()))
    }

    /// Matches `value` (as a case-insensitive substring) in `attribute`.
    pub fn new(attribute: &[u8], value: &[u8]) -> Match {
        Match {
            attribute: attribute.to_vec(),
            needle: Finder::new(&ascii_lower(value)).into_owned(),
        }
    }

    /// True when the record has a matching attribute whose value contains the needle.
    pub fn matches(&self, record: &Record) -> bool {
        if is_url(&self.attribute) && self.hit(&record.url) {
            return true;
        }
        record
            .attributes
            .iter()
            .filter(|a| attribute_matches(&self.attribute, &a.name))
            .flat_map(|a| a.value.leaves())
            .any(|v| self.hit(v))
    }

    fn hit(&self, value: &[u8]) -> bool {
        if self.needle.needle().is_empty() {
            return true;
        }
        // Fold only when the value has upper-case letters: most don't, and folding copies.
        if value.iter().any(u8::is_ascii_uppercase) {
            self.needle.find(&ascii_lower(value)).is_some()
        } else {
            self.needle.find(value).is_some()
        }
    }
}

impl Transform for Match {
    fn name(&self) -> &str {
        "match"
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        if self.matches(&record) {
            out.emit(record)?;
        }
        Ok(())
    }
    fn fork(&self) -> Option<Box<dyn Transform>> {
        Some(Box::new(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use soif_codecs::Value;

    #[test]
    fn rfc_2655_garcia() {
        // §4: "the query VALUE "Garcia" should match the SOIF VALUEs "Garcia", "GARCIA",
        // and "Jose Garcia y Montes"".
        let m = Match::parse("AUTHOR=Garcia").unwrap();
        for v in ["Garcia", "GARCIA", "Jose Garcia y Montes"] {
            let r = Record::new("DOCUMENT", "-").with("Author", v);
            assert!(m.matches(&r), "{v}");
        }
        let r = Record::new("DOCUMENT", "-").with("Author", "Garcon");
        assert!(!m.matches(&r));
        let r = Record::new("DOCUMENT", "-").with("Title", "Garcia");
        assert!(!m.matches(&r));
    }

    #[test]
    fn suffix_list_url_and_presence() {
        let m = Match::parse("author=karlton").unwrap();
        let r = Record::new("DOCUMENT", "-")
            .with("Author-1", "Alan O. Freier")
            .with("Author-2", "Philip Karlton");
        assert!(m.matches(&r));
        let collapsed = Record::new("DOCUMENT", "-").with(
            "Author",
            Value::List(vec!["Alan O. Freier".into(), "Philip Karlton".into()]),
        );
        assert!(m.matches(&collapsed));
        let u = Match::parse("url=NETSCAPE.com").unwrap();
        assert!(u.matches(&Record::new("DOCUMENT", "http://home.netscape.com/")));
        let present = Match::parse("Abstract=").unwrap();
        assert!(!present.matches(&r));
        assert!(present.matches(&r.clone().with("Abstract", "x")));
        // Non-UTF-8 values are searched as bytes.
        let latin1 = Record::new("DOCUMENT", "-").with("Author", vec![b'J', 0xe9, b'R', b'O']);
        assert!(Match::new(b"author", b"\xe9ro").matches(&latin1));
    }

    #[test]
    fn bad_arguments() {
        assert!(Match::parse("Author").is_err());
        assert!(Match::parse("=x").is_err());
    }
}
