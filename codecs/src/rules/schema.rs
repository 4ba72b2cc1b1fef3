//! `@SCHEMA` files: the RDM schema description (W3C RDM note, "Schema Description") that
//! `-t validate`, the csv and sqlite sinks' `--schema` and `soif serve --schema` read, so
//! that all of them accept and refuse the same files.

use crate::rdm::Schema;
use crate::run_error::Error;
use crate::soif::{decode_all, DecoderOptions};
use std::path::Path;

/// A schema file is configuration, not data: refuse anything larger than this.
pub const MAX_SCHEMA_FILE: u64 = 16 << 20;

/// Reads the first `@SCHEMA` object of a SOIF file.
pub fn load_schema(path: &Path) -> Result<Schema, Error> {
    let bytes = super::file::read_bounded(path, "schema", MAX_SCHEMA_FILE)?;
    parse_schema(path, &bytes)
}

/// The first `@SCHEMA` object of `bytes`, the contents of the file `path` (read by the
/// caller: [`load_schema`] reads it from the disk).
pub fn parse_schema(path: &Path, bytes: &[u8]) -> Result<Schema, Error> {
    let shown = path.display();
    // Lenient: hand-written schemas carry the note's `{x}` sizes and miscounted values.
    let opts = DecoderOptions::default().lenient().named(shown.to_string());
    for item in decode_all(bytes, opts) {
        let record =
            item.map_err(|e| Error::Config(format!("the schema {shown} is not valid SOIF: {e}")))?;
        if record.template.eq_ignore_ascii_case(b"SCHEMA") {
            return Schema::from_record(&record)
                .map_err(|e| Error::Config(format!("the schema {shown}: {e}")));
        }
    }
    Err(Error::Config(format!("{shown} holds no @SCHEMA object")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_the_first_schema_and_names_the_file_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("s.soif");
        std::fs::File::create(&good)
            .unwrap()
            .write_all(
                b"@FILE { http://a/\nTitle{1}:\tx\n}\n@SCHEMA { -\nSchema-Name{8}:\tDOCUMENT\nSOIF-Attribute-1{5}:\tTitle\nLast-Modified{29}:\tThu, 16 May 1996 00:00:00 GMT\n}\n",
            )
            .unwrap();
        let schema = load_schema(&good).unwrap();
        assert_eq!(schema.entries.len(), 1);

        let none = dir.path().join("none.soif");
        std::fs::write(&none, b"@FILE { http://a/\nTitle{1}:\tx\n}\n").unwrap();
        let e = load_schema(&none).unwrap_err();
        assert!(
            e.is_config() && e.to_string().contains("holds no @SCHEMA object"),
            "{e}"
        );

        let missing = dir.path().join("missing.soif");
        let e = load_schema(&missing).unwrap_err();
        assert!(
            e.is_config() && e.to_string().contains("missing.soif"),
            "{e}"
        );
    }
}
