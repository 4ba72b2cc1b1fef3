//! [`Projection`]: a record as a target holds it. Each kind uses the sink's own rules —
//! the catalog store's [`row_values`] for SQLite, the JSON Lines sink's
//! [`encode_record`], the Arrow layout's [`layout_pairs`] for Parquet and Arrow, the
//! flattened record the SOIF encoder writes — so that a difference of representation a
//! target is documented to make is not a difference here.

use crate::entry::{Builder, Entry};
use bytes::Bytes;
use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use soif_codecs::oai::read::soif_identifier;
use soif_codecs::oai::write::dublin_core_values;
use soif_codecs::rules::dc::xml_element;
use soif_codecs::rules::names::base_name;
use soif_codecs::rules::text::{from_json, to_text, xml_chars, Charset};
use soif_codecs::{Action, Attribute, Record, Value};
use soif_sinks::jsonl::encode_record;
use soif_store::write::{check_key, row_values};

/// Kinds of value a target tells apart (an [`Entry`] digest's first byte).
pub mod kind {
    /// Text (SQLite TEXT, numbers read as their decimal text).
    pub const TEXT: u8 = b't';
    /// Bytes that are not text (SQLite BLOB).
    pub const BLOB: u8 = b'b';
    /// A JSON string's text.
    pub const JSON_STRING: u8 = b's';
    /// Any other JSON value, as compact JSON text.
    pub const JSON: u8 = b'j';
    /// A value's exact bytes (SOIF, Arrow).
    pub const BYTES: u8 = b'v';
}

/// How records are compared with a kind of target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projection {
    /// A SQLite catalog: one row per template and URL, the last write wins, `@DELETE`
    /// removes the row, `@REFRESH` merges.
    Sqlite(Charset),
    /// JSON Lines: one line per record, in order, the action kept.
    Jsonl(Charset),
    /// Canonical SOIF: the flattened record, the action kept.
    Soif,
    /// Parquet or Arrow in soif's layout: the attributes as the layout writes them.
    Columnar,
    /// A catalog a server serves from its SQLite store (RDM, OAI-PMH `soif`): the row
    /// as [`soif_store::TableInfo::record_from_row`] reads it back (JSON values as lists
    /// and parts again), flattened as SOIF carries it; keyed as [`Projection::Sqlite`].
    Served,
    /// A catalog a server serves over OAI-PMH in `oai_dc`: the Simple Dublin Core
    /// values the server writes for the row ([`dublin_core_values`] of the row as
    /// [`Projection::Served`] reads it back), each as its XML text carries it (invalid
    /// UTF-8 and characters XML forbids as U+FFFD), named `dc:ELEMENT`, in order;
    /// keyed as [`Projection::Sqlite`].
    OaiDc,
    /// An item of an `oai_dc` harvest as the OAI-PMH reader gives it (a `Dublin-Core`
    /// record named by its identifier): keyed by the template and URL of its identifier
    /// (`oai:REPOSITORY:TEMPLATE/URL`), its elements named `dc:ELEMENT` as
    /// [`Projection::OaiDc`] names them.
    OaiDcItem,
}

impl Projection {
    /// True for a catalog (keyed, the last record of a key wins, deletions applied);
    /// false for a file that holds every record written, in order.
    pub fn is_catalog(self) -> bool {
        matches!(
            self,
            Projection::Sqlite(_) | Projection::Served | Projection::OaiDc | Projection::OaiDcItem
        )
    }

    /// How the target's own records, read back, are compared: as the sources' are,
    /// except for an `oai_dc` repository, whose items are Dublin Core already.
    pub fn read_back(self) -> Projection {
        match self {
            Projection::OaiDc => Projection::OaiDcItem,
            other => other,
        }
    }

    /// The record as the target holds it, or why the sink would refuse it.
    pub fn entry(self, record: &Record) -> Result<Entry, String> {
        let mut b = Builder::default();
        self.project(record, &mut b)?;
        Ok(b.entry())
    }

    /// The record as the target holds it, made in `e` (finished), or why the sink would
    /// refuse it.
    pub fn project(self, record: &Record, e: &mut Builder) -> Result<(), String> {
        e.start(record.template.clone(), record.url.clone(), record.action);
        match self {
            Projection::Sqlite(charset) => {
                if !row_of(record, e)? {
                    return Ok(());
                }
                for (name, param) in row_values(record, charset) {
                    let (k, v) = cell(&param);
                    e.push(name, k, v);
                }
            }
            Projection::Jsonl(charset) => {
                let mut line = Vec::new();
                encode_record(record, charset, &mut line);
                let json: serde_json::Value = serde_json::from_slice(&line).map_err(|err| {
                    format!("{}: not JSON after encoding: {err}", record.location())
                })?;
                if let Some(attrs) = json.get("attributes").and_then(|a| a.as_object()) {
                    for (name, value) in attrs {
                        json_value(e, name.as_bytes(), value);
                    }
                }
            }
            Projection::Served => {
                if !row_of(record, e)? {
                    return Ok(());
                }
                for a in &served_row(record).flattened().attributes {
                    for leaf in a.value.leaves() {
                        e.push(&a.name, kind::BYTES, leaf);
                    }
                }
            }
            Projection::OaiDc => {
                if !row_of(record, e)? {
                    return Ok(());
                }
                let mut name = Vec::new();
                for (element, value) in dublin_core_values(&served_row(record)) {
                    dc_name(&mut name, element);
                    let text = to_text(&value, Charset::Utf8).0;
                    e.push(&name, kind::BYTES, xml_chars(&text).0.as_bytes());
                }
            }
            Projection::OaiDcItem => {
                if let Some((template, url)) = soif_identifier(&record.url_str()) {
                    e.set_key(Bytes::from(template), Bytes::from(url));
                }
                e.set_action(None);
                let mut name = Vec::new();
                for a in &record.attributes {
                    let (Some(element), Value::Bytes(v)) =
                        (xml_element(base_name(&a.name)), &a.value)
                    else {
                        continue;
                    };
                    dc_name(&mut name, element);
                    e.push(&name, kind::BYTES, v);
                }
            }
            Projection::Soif => {
                for a in &record.flattened().attributes {
                    for leaf in a.value.leaves() {
                        e.push(&a.name, kind::BYTES, leaf);
                    }
                }
            }
            Projection::Columnar => {
                for a in &record.attributes {
                    soif_arrow::layout_pairs(&a.name, &a.value, &mut |n, v| {
                        e.push(n, kind::BYTES, v)
                    });
                }
            }
        }
        e.finish();
        Ok(())
    }
}

/// A record bound for a catalog's row: false for a deletion (no row); the store's
/// refusal of a record it cannot key; `@REFRESH` kept (it merges), other actions dropped.
fn row_of(record: &Record, e: &mut Builder) -> Result<bool, String> {
    if record.action == Some(Action::Delete) {
        return Ok(false);
    }
    check_key(record).map_err(|err| format!("{}: {err}", record.location()))?;
    if record.action != Some(Action::Refresh) {
        e.set_action(None);
    }
    Ok(true)
}

/// The row a catalog holds for `record` as a server reads it back
/// ([`soif_store::TableInfo::record_from_row`]): what the store wrote as JSON (a list, a
/// part, a repeated name) is a list or a part again.
fn served_row(record: &Record) -> Record {
    let mut row = Record::new(record.template.clone(), record.url.clone());
    for (name, param) in row_values(record, Charset::Utf8) {
        let (_, v) = cell(&param);
        let json = matches!(param, ToSqlOutput::Owned(SqlValue::Text(_)));
        let value = match serde_json::from_slice::<serde_json::Value>(v) {
            Ok(j) if json && matches!(v.first(), Some(b'[' | b'{')) => from_json(&j),
            _ => Value::Bytes(Bytes::copy_from_slice(v)),
        };
        row.attributes.push(Attribute {
            name: name.clone(),
            value,
        });
    }
    row
}

/// `dc:ELEMENT`, the name an `oai_dc` value is compared under.
fn dc_name(name: &mut Vec<u8>, element: &str) {
    name.clear();
    name.extend_from_slice(b"dc:");
    name.extend_from_slice(element.as_bytes());
}

/// A JSON value of a line's `attributes`: a string's text, anything else compact JSON.
pub fn json_value(e: &mut Builder, name: &[u8], value: &serde_json::Value) {
    match value {
        serde_json::Value::String(s) => e.push(name, kind::JSON_STRING, s.as_bytes()),
        other => e.push(name, kind::JSON, other.to_string().as_bytes()),
    }
}

/// A SQLite value as compared: TEXT and numbers as text (a column typed INTEGER by a
/// schema stores `5` for the text `5`), BLOBs as bytes. NULL is no attribute.
pub fn sql_cell<'a>(v: ValueRef<'a>, scratch: &'a mut String) -> Option<(u8, &'a [u8])> {
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => {
            *scratch = i.to_string();
            Some((kind::TEXT, scratch.as_bytes()))
        }
        ValueRef::Real(f) => {
            *scratch = f.to_string();
            Some((kind::TEXT, scratch.as_bytes()))
        }
        ValueRef::Text(t) => Some((kind::TEXT, t)),
        ValueRef::Blob(b) => Some((kind::BLOB, b)),
    }
}

fn cell<'a>(param: &'a ToSqlOutput<'a>) -> (u8, &'a [u8]) {
    match param {
        ToSqlOutput::Borrowed(ValueRef::Text(t)) => (kind::TEXT, t),
        ToSqlOutput::Borrowed(ValueRef::Blob(b)) => (kind::BLOB, b),
        ToSqlOutput::Owned(SqlValue::Text(t)) => (kind::TEXT, t.as_bytes()),
        ToSqlOutput::Owned(SqlValue::Blob(b)) => (kind::BLOB, b),
        // The store binds only text and blobs for attribute values.
        _ => (kind::TEXT, b""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_rows_group_repeated_names_and_refuse_records_without_url() {
        let r = Record::new("FILE", "http://x/")
            .with("Author", "a")
            .with("Title", "T")
            .with("Author", "b");
        let e = Projection::Sqlite(Charset::Utf8).entry(&r).unwrap();
        assert_eq!(e.attrs.len(), 2);
        assert_eq!(&e.attrs[0].shown[..], br#"["a","b"]"#);
        let no_url = Record::new("FILE", "-");
        let err = Projection::Sqlite(Charset::Utf8)
            .entry(&no_url)
            .unwrap_err();
        assert!(err.contains("no URL"), "{err}");
    }

    #[test]
    fn attribute_order_does_not_count_but_values_do() {
        let a = Record::new("F", "u").with("A", "1").with("B", "2");
        let b = Record::new("F", "u").with("B", "2").with("A", "1");
        let c = Record::new("F", "u").with("B", "2").with("A", "3");
        for p in [
            Projection::Sqlite(Charset::Utf8),
            Projection::Jsonl(Charset::Utf8),
            Projection::Soif,
            Projection::Columnar,
            Projection::Served,
        ] {
            let d = |r: &Record| p.entry(r).unwrap().digest(true);
            assert_eq!(d(&a), d(&b), "{p:?}");
            assert_ne!(d(&a), d(&c), "{p:?}");
        }
    }

    /// A record's `oai_dc` as the server writes it, harvested by the OAI-PMH reader.
    fn harvested_dc(record: &Record) -> Record {
        use soif_codecs::oai::read::{parse_page, MetadataFormat, PageContext};
        let mut metadata = String::new();
        soif_codecs::oai::write::oai_dc(record, &mut metadata);
        let id = soif_codecs::rules::text::escape_text(&soif_codecs::oai::ids::identifier(
            "h",
            &record.template,
            &record.url,
        ));
        let xml = format!(
            "<OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\" \
             xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><ListRecords><record>\
             <header><identifier>{id}</identifier><datestamp>2026-11-26</datestamp></header>\
             <metadata>{metadata}</metadata></record></ListRecords></OAI-PMH>"
        );
        let ctx = PageContext {
            name: std::sync::Arc::from("oai+http://h/oai"),
            page: 1,
            url: "http://h/oai",
            offset: 0,
            records: 0,
        };
        let page = parse_page(xml.as_bytes(), MetadataFormat::OaiDc, &ctx).unwrap();
        page.items.into_iter().next().unwrap().unwrap()
    }

    #[test]
    fn oai_dc_items_compare_equal_to_the_records_they_were_written_from() {
        let mut awkward = Record::new("Dublin-Core", &b"http://x/\xe9 a&b"[..])
            .with("TITLE", "A & B <c>\r\nline two")
            .with("CREATOR-1", "X")
            .with("CREATOR-2", "Y")
            .with("Other", "not Dublin Core");
        awkward
            .attributes
            .push(Attribute::new("DESCRIPTION", &b"bad \xff \x01 bytes"[..]));
        let crosswalked = Record::new("FILE", "http://x/2")
            .with("Title", "Two")
            .with("Author", "Ann")
            .with("Author", "Bob");
        for record in [awkward, crosswalked] {
            let source = Projection::OaiDc.entry(&record).unwrap();
            let target = Projection::OaiDcItem.entry(&harvested_dc(&record)).unwrap();
            assert_eq!(
                (&target.template, &target.url),
                (&source.template, &source.url)
            );
            assert!(source.attrs.len() >= 2, "{source:?}");
            assert_eq!(
                source.digest(false),
                target.digest(false),
                "{source:?} {target:?}"
            );
            let mut changed = record.clone();
            changed.attributes[0].value = Value::Bytes(Bytes::from_static(b"Other title"));
            let changed = Projection::OaiDc.entry(&changed).unwrap();
            assert_ne!(changed.digest(false), target.digest(false));
            let d = crate::compare::first_difference(&changed, &target, false);
            assert_eq!(d.attribute, "dc:title");
        }
        // A value oai_dc does not carry is no difference there.
        let a = Record::new("FILE", "u")
            .with("Title", "T")
            .with("Size", "1");
        let b = Record::new("FILE", "u")
            .with("Title", "T")
            .with("Size", "2");
        let d = |r: &Record| Projection::OaiDc.entry(r).unwrap().digest(false);
        assert_eq!(d(&a), d(&b));
    }
}
