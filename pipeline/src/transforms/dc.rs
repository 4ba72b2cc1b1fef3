//! `dc`: the crosswalk to the RFC 2655 Appendix C `Dublin-Core` template, as a
//! transform. The mapping, its default table and the element table are record rules:
//! [`soif_codecs::rules::dc`] (read it for the rules).

use super::files::Files;
use crate::{Emit, Error, FirstNoted, Transform};
use soif_codecs::rules::dc::Crosswalk;
use soif_codecs::Record;
use std::path::Path;

/// A mapping file is configuration, not data: refuse anything larger than this.
const MAX_MAPPING_FILE: u64 = 16 << 20;

/// The `dc` transform.
pub struct Dc {
    table: Crosswalk,
    unconverted: u64,
    example: FirstNoted,
}

impl Dc {
    /// With the default table, or the mapping file named by the argument (read through
    /// `files`).
    pub fn new(mapping: Option<&str>, files: &Files) -> Result<Dc, Error> {
        let table = match mapping.map(str::trim).filter(|m| !m.is_empty()) {
            Some(path) => {
                let bytes = files.read(Path::new(path), "dc mapping file", MAX_MAPPING_FILE)?;
                let text = std::str::from_utf8(&bytes).map_err(|e| {
                    Error::Config(format!("dc: the mapping file {path} is not UTF-8: {e}"))
                })?;
                Crosswalk::from_toml(text, path)?
            }
            None => Crosswalk::default_table().clone(),
        };
        Ok(Dc {
            table,
            unconverted: 0,
            example: FirstNoted::default(),
        })
    }
}

impl Transform for Dc {
    fn name(&self) -> &str {
        "dc"
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        let (mapped, notes) = self.table.apply(&record);
        if let Some(n) = notes.first() {
            self.unconverted += notes.len() as u64;
            self.example.note(&record, |record| {
                let at = match &record.position {
                    Some(p) => p.to_string(),
                    None => record.url_str().into_owned(),
                };
                format!("{} `{}` at {at}: {}", n.element, n.value, n.reason)
            });
        }
        out.emit(mapped)
    }

    fn finish(&mut self, out: &mut dyn Emit) -> Result<(), Error> {
        if self.unconverted > 0 {
            out.warn(format!(
                "dc: {} value(s) could not be converted and were kept as they were (first: {})",
                self.unconverted,
                self.example.text().unwrap_or("-")
            ));
        }
        Ok(())
    }

    fn fork(&self) -> Option<Box<dyn Transform>> {
        Some(Box::new(Dc {
            table: self.table.clone(),
            unconverted: 0,
            example: FirstNoted::default(),
        }))
    }

    fn join(&mut self, fork: Box<dyn Transform>) {
        if let Ok(fork) = (fork as Box<dyn std::any::Any>).downcast::<Dc>() {
            self.unconverted += fork.unconverted;
            self.example.join(fork.example);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_mapping_file_is_a_config_error() {
        assert!(
            Dc::new(Some("/nonexistent/mapping.toml"), &Files::default())
                .is_err_and(|e| e.is_config())
        );
    }
}
