//! Schema mapping: what the catalog (and the csv sink) take from an RDM `@SCHEMA` description (W3C RDM note,
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
//! Last-Modified{29}: Thu, 16 May 1996 00:00:00 GMT
//! }
//! ```
//!
//! The schema is read by the shared RDM parser ([`soif_codecs::rdm::Schema`], through
//! [`load_schema`], the same as the `validate` transform's), so `--schema` accepts and rejects the same
//! files for the csv and sqlite sinks as for `-t validate`. Entries come in the order of
//! their number.
//!
//! ```
//! use soif_codecs::Record;
//! use soif_store::schema::SchemaColumns;
//! let schema = Record::new("SCHEMA", "-")
//!     .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
//!     .with("SOIF-Attribute-2", "Author")
//!     .with("SOIF-Attribute-1", "Title")
//!     .with("Data-Type-2", "varchar");
//! let s = SchemaColumns::from_record(&schema).unwrap();
//! assert_eq!(s.attributes().collect::<Vec<_>>(), ["Title", "Author"]);
//! ```

use soif_codecs::rdm::{RdmError, Schema};
use soif_codecs::rules::schema::load_schema;
use soif_codecs::run_error::Error;
use soif_codecs::Record;
use std::path::Path;

/// One `SOIF-Attribute-N` entry of a schema.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SchemaColumn {
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
    pub entries: Vec<SchemaColumn>,
}

impl SchemaColumns {
    /// The column-relevant part of a parsed schema.
    pub fn from_schema(schema: &Schema) -> SchemaColumns {
        SchemaColumns {
            schema_name: schema.name.clone(),
            entries: schema
                .entries
                .iter()
                .map(|e| SchemaColumn {
                    attribute: e.soif_attribute.clone(),
                    data_type: e.data_type.as_ref().map(|d| d.as_str().to_string()),
                    table_name: e.table_name.clone(),
                    column_name: e.column_name.clone(),
                })
                .collect(),
        }
    }

    /// Reads a decoded `@SCHEMA` record.
    pub fn from_record(record: &Record) -> Result<SchemaColumns, RdmError> {
        Schema::from_record(record).map(|s| SchemaColumns::from_schema(&s))
    }

    /// Reads an RDM schema file (the first `@SCHEMA` object in it).
    pub fn load(path: &Path) -> Result<SchemaColumns, Error> {
        load_schema(path).map(|s| SchemaColumns::from_schema(&s))
    }

    /// The attribute names in order.
    pub fn attributes(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.attribute.as_str())
    }

    /// The entry for an attribute (exact name, then ignoring ASCII case).
    pub fn entry(&self, attribute: &[u8]) -> Option<&SchemaColumn> {
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

/// The declared SQLite type for an RDM `Data-Type`.
pub fn sql_type_for(data_type: Option<&str>) -> &'static str {
    let Some(t) = data_type else {
        return "TEXT";
    };
    let t = t.trim().to_ascii_lowercase();
    let base = t
        .split(|c: char| c == '(' || c.is_whitespace())
        .next()
        .unwrap_or("");
    match base {
        "int" | "integer" | "serial" | "bigint" | "smallint" | "tinyint" | "bigserial" => "INTEGER",
        "float" | "real" | "double" => "REAL",
        "numeric" | "decimal" | "number" => "NUMERIC",
        "blob" | "binary" | "varbinary" | "bytea" => "BLOB",
        _ => "TEXT",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example schema of the RDM note ("Example Schema Description"), from its
    /// canonical copy `tests/fixtures/rdm/schema.soif`, decoded strictly.
    fn note_example() -> Record {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/rdm/schema.soif"
        );
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut records =
            soif_codecs::soif::decode_all(&bytes, soif_codecs::soif::DecoderOptions::default());
        assert_eq!(records.len(), 1, "{path}: one schema record");
        records
            .remove(0)
            .unwrap_or_else(|e| panic!("{path} does not decode: {e}"))
    }

    #[test]
    fn reads_the_note_example() {
        let s = SchemaColumns::from_record(&note_example()).unwrap();
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
            .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
            .with("SOIF-Attribute-10", "Z")
            .with("SOIF-Attribute-2", "B")
            .with("Column-Name-2", "bee")
            .with("Table-Name-2", "docs");
        let s = SchemaColumns::from_record(&r).unwrap();
        assert_eq!(s.attributes().collect::<Vec<_>>(), ["B", "Z"]);
        assert_eq!(s.entries[0].column_name.as_deref(), Some("bee"));
        assert_eq!(s.table_name_for(b"document"), Some("docs"));
        assert_eq!(s.table_name_for(b"FILE"), None);
    }

    #[test]
    fn loads_a_schema_file_and_names_bad_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("schema.soif");
        std::fs::write(
            &path,
            "@SCHEMA { -\nSchema-Name{8}:\tDOCUMENT\n\
             Last-Modified{29}:\tThu, 16 May 1996 00:00:00 GMT\n\
             SOIF-Attribute-1{5}:\tTitle\n\
             SOIF-Attribute-2{8}:\tAbstract\nData-Type-2{4}:\tblob\n}\n",
        )
        .unwrap();
        let s = SchemaColumns::load(&path).unwrap();
        assert_eq!(s.schema_name.as_deref(), Some("DOCUMENT"));
        assert_eq!(s.attributes().collect::<Vec<_>>(), ["Title", "Abstract"]);
        std::fs::write(&path, "@FILE { u\n}\n").unwrap();
        let e = SchemaColumns::load(&path).unwrap_err();
        assert!(e.is_config(), "{e}");
        assert!(e.to_string().contains("schema.soif"), "{e}");
    }
}
