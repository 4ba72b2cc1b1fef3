//! `collapse` and `expand`: the transforms over the rules of
//! [`soif_codecs::rules::collapse`] (between SOIF's flat names and lists / nested parts).

use crate::{Emit, Error, FirstNoted, Transform};
use soif_codecs::rules::collapse::{collapse_record, expand, number_repeats};
use soif_codecs::Record;

/// The `collapse` transform. Records that are not canonical
/// ([`is_canonical`](soif_codecs::rules::collapse::is_canonical)) are
/// collapsed all the same, but `expand` cannot give back their numbering: they are
/// counted and reported in one warning at the end.
#[derive(Debug, Default)]
pub struct Collapse {
    not_canonical: u64,
    example: FirstNoted,
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
            self.example.note_where(&record);
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
                self.example.text().unwrap_or("-")
            ));
        }
        Ok(())
    }

    fn fork(&self) -> Option<Box<dyn Transform>> {
        Some(Box::<Collapse>::default())
    }

    fn join(&mut self, fork: Box<dyn Transform>) {
        if let Ok(fork) = (fork as Box<dyn std::any::Any>).downcast::<Collapse>() {
            self.not_canonical += fork.not_canonical;
            self.example.join(fork.example);
        }
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

    fn fork(&self) -> Option<Box<dyn Transform>> {
        Some(Box::new(Expand))
    }
}
