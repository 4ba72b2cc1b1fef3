//! [`Projection`]: a record as a target holds it. Each kind uses the sink's own rules —
//! the catalog store's [`row_values`] for SQLite, the JSON Lines sink's
//! [`encode_record`], the Arrow layout's [`layout_pairs`] for Parquet and Arrow, the
//! flattened record the SOIF encoder writes — so that a difference of representation a
//! target is documented to make is not a difference here.

use crate::entry::Entry;
use bytes::Bytes;
use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use soif_codecs::rules::text::{from_json, Charset};
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
}

impl Projection {
    /// True for a catalog (keyed, the last record of a key wins, deletions applied);
    /// false for a file that holds every record written, in order.
    pub fn is_catalog(self) -> bool {
        matches!(self, Projection::Sqlite(_) | Projection::Served)
    }

    /// The record as the target holds it, or why the sink would refuse it.
    pub fn entry(self, record: &Record) -> Result<Entry, String> {
        let mut e = Entry::new(record.template.clone(), record.url.clone(), record.action);
        match self {
            Projection::Sqlite(charset) => {
                if !row_of(record, &mut e)? {
                    return Ok(e);
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
                        json_value(&mut e, name.as_bytes(), value);
                    }
                }
            }
            Projection::Served => {
                if !row_of(record, &mut e)? {
                    return Ok(e);
                }
                let mut row = Record::new(record.template.clone(), record.url.clone());
                for (name, param) in row_values(record, Charset::Utf8) {
                    let (_, v) = cell(&param);
                    // What the store wrote as JSON (a list, a part, a repeated name) is
                    // read back as a list or a part.
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
                for a in &row.flattened().attributes {
                    for leaf in a.value.leaves() {
                        e.push(&a.name, kind::BYTES, leaf);
                    }
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
        Ok(e.finish())
    }
}

/// A record bound for a catalog's row: false for a deletion (no row); the store's
/// refusal of a record it cannot key; `@REFRESH` kept (it merges), other actions dropped.
fn row_of(record: &Record, e: &mut Entry) -> Result<bool, String> {
    if record.action == Some(Action::Delete) {
        return Ok(false);
    }
    check_key(record).map_err(|err| format!("{}: {err}", record.location()))?;
    if record.action != Some(Action::Refresh) {
        e.action = None;
    }
    Ok(true)
}

/// A JSON value of a line's `attributes`: a string's text, anything else compact JSON.
pub fn json_value(e: &mut Entry, name: &[u8], value: &serde_json::Value) {
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
}
