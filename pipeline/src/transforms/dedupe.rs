//! `dedupe` (= `dedupe:url`) or `dedupe:ATTR`: pass the first record with each key, drop the rest.
//!
//! The key is the record's URL (`url`, any case), or every value of the attributes that
//! match ATTR as in RFC 2655 §4 (`dedupe:MD5`; `dedupe:author` takes `Author-1…N`
//! together, so two records are duplicates when their whole author lists are equal).
//! Records without the attribute have no key and always pass. Keys are compared byte
//! for byte.
//!
//! Memory is bounded by the run's memory budget: keys are kept as 128-bit fingerprints
//! that spill to disk (see [`super::seen`] for the method and its exactness). How many
//! duplicates were dropped is reported as a warning at the end.

use super::seen::SeenSet;
use crate::{Emit, Error, Transform};
use soif_codecs::rules::names::{is_url, values_matching};
use soif_codecs::Record;
use std::path::PathBuf;

/// The `dedupe` transform.
pub struct Dedupe {
    attribute: String,
    seen: SeenSet,
    dropped: u64,
    first_dropped: Option<String>,
}

impl Dedupe {
    /// Deduplicates on `attribute` (`url` for the record's URL).
    pub fn new(attribute: &str, budget: usize, temp_dir: Option<PathBuf>) -> Result<Dedupe, Error> {
        let attribute = attribute.trim();
        if attribute.is_empty() {
            return Err(Error::Config(
                "dedupe: expected `url` or an attribute name, e.g. `dedupe:MD5`".into(),
            ));
        }
        Ok(Dedupe {
            attribute: attribute.to_string(),
            seen: SeenSet::new(format!("dedupe:{attribute}"), budget, temp_dir),
            dropped: 0,
            first_dropped: None,
        })
    }

    /// The record's key: its URL, or its values of the attribute, each length-prefixed
    /// so that `["ab", "c"]` and `["a", "bc"]` differ. `None` when it has no such value.
    fn key(&self, record: &Record) -> Option<Vec<u8>> {
        if is_url(self.attribute.as_bytes()) {
            return Some(record.url.to_vec());
        }
        let values = values_matching(record, self.attribute.as_bytes());
        if values.is_empty() {
            return None;
        }
        let mut key = Vec::new();
        for v in values {
            key.extend_from_slice(&(v.len() as u64).to_le_bytes());
            key.extend_from_slice(v);
        }
        Some(key)
    }
}

impl Transform for Dedupe {
    fn name(&self) -> &str {
        "dedupe"
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        match self.key(&record) {
            Some(key) if !self.seen.insert(&key)? => {
                self.dropped += 1;
                if self.first_dropped.is_none() {
                    self.first_dropped = Some(match &record.position {
                        Some(p) => p.to_string(),
                        None => record.url_str().into_owned(),
                    });
                }
                Ok(())
            }
            _ => out.emit(record),
        }
    }

    fn finish(&mut self, out: &mut dyn Emit) -> Result<(), Error> {
        if self.dropped > 0 {
            out.warn(format!(
                "dedupe:{}: dropped {} duplicate record(s) (first: {})",
                self.attribute,
                self.dropped,
                self.first_dropped.as_deref().unwrap_or("-")
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Collect;

    fn run(t: &mut Dedupe, records: Vec<Record>) -> Collect {
        Collect::run(t, records).unwrap()
    }

    #[test]
    fn by_url_first_wins() {
        let mut d = Dedupe::new("URL", 1 << 20, None).unwrap();
        let a = Record::new("FILE", "http://x/").with("Title", "first");
        let b = Record::new("FILE", "http://x/").with("Title", "second");
        let c = Record::new("FILE", "http://y/");
        let out = run(&mut d, vec![a.clone(), b, c.clone()]);
        assert_eq!(out.records, vec![a, c]);
        assert_eq!(out.warnings.len(), 1);
        assert!(out.warnings[0].contains("dropped 1 duplicate"));
    }

    #[test]
    fn by_attribute_lists_and_missing() {
        // Seed 004: two Harvest records can describe the same file (same MD5).
        let mut d = Dedupe::new("md5", 1 << 20, None).unwrap();
        let a = Record::new("FILE", "ftp://a/").with("MD5", "43193942d4d53f5a8e4a7b4bcff7a415");
        let b = Record::new("FILE", "ftp://b/").with("MD5", "43193942d4d53f5a8e4a7b4bcff7a415");
        let none1 = Record::new("FILE", "ftp://c/");
        let none2 = Record::new("FILE", "ftp://d/");
        let out = run(&mut d, vec![a.clone(), b, none1.clone(), none2.clone()]);
        assert_eq!(out.records, vec![a, none1, none2]);

        let mut d = Dedupe::new("author", 1 << 20, None).unwrap();
        let x = Record::new("D", "1")
            .with("Author-1", "ab")
            .with("Author-2", "c");
        let y = Record::new("D", "2")
            .with("Author-1", "a")
            .with("Author-2", "bc");
        let z = Record::new("D", "3")
            .with("Author-1", "ab")
            .with("Author-2", "c");
        let out = run(&mut d, vec![x.clone(), y.clone(), z]);
        assert_eq!(out.records, vec![x, y]);
        assert!(Dedupe::new(" ", 1, None).is_err());
    }

    #[test]
    fn bounded_memory_stays_exact() {
        // A budget of a few fingerprints: most keys live on disk.
        let mut d = Dedupe::new("url", 200, None).unwrap();
        let records: Vec<_> = (0..300)
            .chain(0..300)
            .map(|i| Record::new("FILE", format!("http://h/{i}")))
            .collect();
        let out = run(&mut d, records);
        assert_eq!(out.records.len(), 300);
        assert!(d.seen.runs_on_disk() >= 1);
    }
}
