//! What the csv and sqlite sinks take from an RDM `@SCHEMA` description (W3C RDM note,
//! "Schema Description"): the attributes in order, their `Data-Type`, and the optional
//! user-level `Table-Name` / `Column-Name`.
//!
//! The note numbers the entries with a `-#` suffix:
//!
//! ```text
//! @SCHEMA { -
//! SOIF-Attribute-1{5}: Title
//! SOIF-Attribute-3{8}: Abstract
//! Data-Type-3{4}: blob
//! }
//! ```
//!
//! Entries are kept in the order of their number (an entry without a number comes first);
//! an entry with no `SOIF-Attribute` is ignored, since nothing in a record can match it.
//!
//! ```
//! use soif_codecs::Record;
//! use soif_sinks::schema_columns::SchemaColumns;
//! let schema = Record::new("SCHEMA", "-")
//!     .with("SOIF-Attribute-2", "Author")
//!     .with("SOIF-Attribute-1", "Title")
//!     .with("Data-Type-2", "varchar");
//! let s = SchemaColumns::from_record(&schema);
//! assert_eq!(s.attributes().collect::<Vec<_>>(), ["Title", "Author"]);
//! ```

use soif_codecs::{Record, Value};
use soif_pipeline::Error;
use std::collections::BTreeMap;
use std::path::Path;

/// One `SOIF-Attribute-N` entry of a schema.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SchemaEntry {
    /// The attribute name used in SOIF records (`SOIF-Attribute-N`).
    pub attribute: String,
    /// `Data-Type-N` as written (`varchar`, `int`, `blob`, …); the note's default is varchar.
    pub data_type: Option<String>,
    /// `Table-Name-N`: the user-level table name.
    pub table_name: Option<String>,
    /// `Column-Name-N`: the user-level column name.
    pub column_name: Option<String>,
}

/// The column-relevant part of an RDM schema description.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SchemaColumns {
    /// `Schema-Name`: the SOIF template type the schema describes, when given.
    pub schema_name: Option<String>,
    /// The entries in numeric order.
    pub entries: Vec<SchemaEntry>,
}

impl SchemaColumns {
    /// Reads the entries of a decoded `@SCHEMA` record.
    pub fn from_record(record: &Record) -> SchemaColumns {
        // Keyed by entry number; `None` (no suffix) sorts first.
        let mut entries: BTreeMap<Option<u64>, SchemaEntry> = BTreeMap::new();
        let mut schema_name = None;
        for attr in &record.attributes {
            let Value::Bytes(v) = &attr.value else {
                continue;
            };
            let value = String::from_utf8_lossy(v).trim().to_string();
            let name = attr.name_str();
            if name.eq_ignore_ascii_case("Schema-Name") {
                schema_name = Some(value);
                continue;
            }
            let (base, n) = split_number(&name);
            let field = if base.eq_ignore_ascii_case("SOIF-Attribute") {
                0
            } else if base.eq_ignore_ascii_case("Data-Type") {
                1
            } else if base.eq_ignore_ascii_case("Table-Name") {
                2
            } else if base.eq_ignore_ascii_case("Column-Name") {
                3
            } else {
                continue;
            };
            let e = entries.entry(n).or_default();
            let v = (!value.is_empty()).then_some(value);
            match field {
                0 => e.attribute = v.unwrap_or_default(),
                1 => e.data_type = v,
                2 => e.table_name = v,
                _ => e.column_name = v,
            }
        }
        SchemaColumns {
            schema_name,
            entries: entries
                .into_values()
                .filter(|e| !e.attribute.is_empty())
                .collect(),
        }
    }

    /// Reads an RDM schema file (SOIF text holding one `@SCHEMA` object; the first one is
    /// used).
    pub fn load(path: &Path) -> Result<SchemaColumns, Error> {
        // A schema description is a few kilobytes; a file of more than 16 MiB is not one.
        const MAX: u64 = 16 << 20;
        let meta = std::fs::metadata(path).map_err(|e| Error::io_path(path, e))?;
        if meta.len() > MAX {
            return Err(Error::Config(format!(
                "{}: {} bytes is too large for an RDM schema description",
                path.display(),
                meta.len()
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| Error::io_path(path, e))?;
        let opts = soif_codecs::soif::DecoderOptions {
            input: Some(path.display().to_string().into()),
            ..Default::default()
        };
        for item in soif_codecs::soif::decode_all(&bytes, opts) {
            let record = item.map_err(|e| Error::Config(format!("schema: {e}")))?;
            if record.template.eq_ignore_ascii_case(b"SCHEMA") {
                return Ok(SchemaColumns::from_record(&record));
            }
        }
        Err(Error::Config(format!(
            "{}: no @SCHEMA object found",
            path.display()
        )))
    }

    /// The attribute names in order.
    pub fn attributes(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.attribute.as_str())
    }

    /// The entry for an attribute (exact name, then ignoring ASCII case).
    pub fn entry(&self, attribute: &[u8]) -> Option<&SchemaEntry> {
        self.entries
            .iter()
            .find(|e| e.attribute.as_bytes() == attribute)
            .or_else(|| {
                self.entries
                    .iter()
                    .find(|e| e.attribute.as_bytes().eq_ignore_ascii_case(attribute))
            })
    }

    /// The user-level table name for records of `template`: the first `Table-Name-N`,
    /// applied only when `Schema-Name` names this template (the note's schema describes
    /// one template type).
    pub fn table_name_for(&self, template: &[u8]) -> Option<&str> {
        let name = self.schema_name.as_deref()?;
        if !name.as_bytes().eq_ignore_ascii_case(template) {
            return None;
        }
        self.entries.iter().find_map(|e| e.table_name.as_deref())
    }
}

/// `Author-12` → (`Author`, Some(12)); `Title` → (`Title`, None).
pub(crate) fn split_number(name: &str) -> (&str, Option<u64>) {
    if let Some((base, digits)) = name.rsplit_once('-') {
        if !base.is_empty() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(n) = digits.parse() {
                return (base, Some(n));
            }
        }
    }
    (name, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example schema of the RDM note ("Example Schema Description").
    fn note_example() -> Record {
        Record::new("SCHEMA", "-")
            .with("Schema-Definition-Language-Version", "1.0")
            .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
            .with("Number-of-Entries", "3")
            .with("Maintainer", "dhardy@netscape.com")
            .with("SOIF-Attribute-1", "Title")
            .with("Description-1", "Contains the Title of the resource.")
            .with("SOIF-Attribute-2", "Author")
            .with("Index-Attribute-2", "1")
            .with("Description-2", "Full name of the resource authors.")
            .with("SOIF-Attribute-3", "Abstract")
            .with("Data-Type-3", "blob")
            .with("Description-3", "Brief description of the resource.")
    }

    #[test]
    fn reads_the_note_example() {
        let s = SchemaColumns::from_record(&note_example());
        assert_eq!(
            s.attributes().collect::<Vec<_>>(),
            ["Title", "Author", "Abstract"]
        );
        assert_eq!(
            s.entry(b"Abstract").unwrap().data_type.as_deref(),
            Some("blob")
        );
        assert_eq!(s.entry(b"title").unwrap().attribute, "Title");
        assert!(s.table_name_for(b"DOCUMENT").is_none());
    }

    #[test]
    fn numeric_order_names_and_table() {
        let r = Record::new("SCHEMA", "-")
            .with("Schema-Name", "DOCUMENT")
            .with("SOIF-Attribute-10", "Z")
            .with("SOIF-Attribute-2", "B")
            .with("Column-Name-2", "bee")
            .with("Table-Name-2", "docs")
            .with("Data-Type-7", "int"); // no SOIF-Attribute-7: ignored
        let s = SchemaColumns::from_record(&r);
        assert_eq!(s.attributes().collect::<Vec<_>>(), ["B", "Z"]);
        assert_eq!(s.entries[0].column_name.as_deref(), Some("bee"));
        assert_eq!(s.table_name_for(b"document"), Some("docs"));
        assert_eq!(s.table_name_for(b"FILE"), None);
    }

    #[test]
    fn loads_a_schema_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("schema.soif");
        std::fs::write(
            &path,
            "@SCHEMA { -\nSchema-Name{8}:\tDOCUMENT\nSOIF-Attribute-1{5}:\tTitle\n\
             SOIF-Attribute-2{8}:\tAbstract\nData-Type-2{4}:\tblob\n}\n",
        )
        .unwrap();
        let s = SchemaColumns::load(&path).unwrap();
        assert_eq!(s.schema_name.as_deref(), Some("DOCUMENT"));
        assert_eq!(s.attributes().collect::<Vec<_>>(), ["Title", "Abstract"]);
        std::fs::write(&path, "@FILE { u\n}\n").unwrap();
        let e = SchemaColumns::load(&path).unwrap_err();
        assert!(e.to_string().contains("no @SCHEMA"), "{e}");
    }

    #[test]
    fn split() {
        assert_eq!(split_number("Author-12"), ("Author", Some(12)));
        assert_eq!(split_number("Content-Type"), ("Content-Type", None));
        assert_eq!(split_number("-1"), ("-1", None));
        assert_eq!(split_number("Embed<1>-Type"), ("Embed<1>-Type", None));
    }
}
