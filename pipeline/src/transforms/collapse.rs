//! `collapse` and `expand`: the transforms over the rules of
//! [`soif_codecs::rules::collapse`] (between SOIF's flat names and lists / nested parts).

use crate::{Emit, Error, Transform};
use soif_codecs::rules::collapse::{collapse_record, expand, number_repeats};
use soif_codecs::Record;

/// The `collapse` transform. Records that are not canonical
/// ([`is_canonical`](soif_codecs::rules::collapse::is_canonical)) are
/// collapsed all the same, but `expand` cannot give back their numbering: they are
/// counted and reported in one warning at the end.
#[derive(Debug, Default)]
pub struct Collapse {
    not_canonical: u64,
    example: Option<String>,
}

impl Transform for Collapse {
    fn name(&self) -> &str {
        "collapse"
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        let flat = record.is_flat();
        let (record, canonical) = collapse_record(record);
        if flat && !canonical {
            self.not_canonical += 1;
            if self.example.is_none() {
                self.example = Some(match &record.position {
                    Some(p) => p.to_string(),
                    None => record.url_str().into_owned(),
                });
            }
        }
        out.emit(record)
    }

    fn finish(&mut self, out: &mut dyn Emit) -> Result<(), Error> {
        if self.not_canonical > 0 {
            out.warn(format!(
                "collapse: {} record(s) had multi-value numbers with gaps or out of order, \
                 names repeated or apart, or a plain name beside numbered ones; expand \
                 writes them renumbered from 1 (first: {})",
                self.not_canonical,
                self.example.as_deref().unwrap_or("-")
            ));
        }
        Ok(())
    }
}

/// The `expand` transform.
#[derive(Debug, Default)]
pub struct Expand;

impl Transform for Expand {
    fn name(&self) -> &str {
        "expand"
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        if record.is_flat() {
            return out.emit(number_repeats(record));
        }
        out.emit(expand(&record))
    }
}
