//! A record as the pages show it (attributes grouped as `collapse` groups them), as JSON,
//! and as RDF/XML (the RDF sinks' mapping); which values may be links.

use serde::Serialize;
use soif_codecs::rules::collapse::collapse;
use soif_codecs::{Attribute, Record, Value};
use std::collections::HashMap;

/// Values longer than this (characters), or of more lines, are folded.
pub const FOLD_CHARS: usize = 400;
pub const FOLD_LINES: usize = 8;

/// The URL schemes a value may be a link with.
pub const LINK_SCHEMES: [&str; 6] = [
    "http://",
    "https://",
    "ftp://",
    "gopher://",
    "news:",
    "mailto:",
];

/// `value` as an `href` when it is an `http`, `https`, `ftp`, `gopher`, `news` or `mailto`
/// URL (no spaces or control characters, valid UTF-8); else `None`: it is shown as text.
pub fn safe_href(value: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(value).ok()?.trim();
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let lower = s.get(..10.min(s.len()))?.to_ascii_lowercase();
    LINK_SCHEMES
        .iter()
        .any(|p| lower.starts_with(p) && s.len() > p.len())
        .then(|| s.to_string())
}

/// The bytes as text: UTF-8, with anything else replaced (U+FFFD).
pub fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// At most `n` characters of `s`.
pub fn shorten(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// True for a value shown as binary: not UTF-8, or holding control characters other
/// than tab, CR and LF.
pub fn is_binary(bytes: &[u8]) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(s) => s
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')),
        Err(_) => true,
    }
}

/// One value on the record page.
#[derive(Debug, Serialize)]
pub struct Leaf {
    pub text: String,
    pub preview: String,
    pub size: usize,
    pub binary: bool,
    pub long: bool,
    pub href: Option<String>,
    pub download: Option<String>,
}

/// One attribute on the record page: its values (several for a list), or its parts.
#[derive(Debug, Serialize)]
pub struct Field {
    pub name: String,
    pub list: bool,
    pub values: Vec<Leaf>,
    pub parts: Vec<Part>,
}

/// One `Embed<n>-` part.
#[derive(Debug, Serialize)]
pub struct Part {
    pub n: usize,
    pub fields: Vec<Field>,
}

struct Builder<'a> {
    /// A value's bytes (by address and length) → its index in the flattened record.
    index: HashMap<(usize, usize), usize>,
    value_href: &'a str,
}

impl Builder<'_> {
    fn leaf(&self, b: &bytes::Bytes) -> Leaf {
        let binary = is_binary(b);
        let text = if binary { String::new() } else { text_of(b) };
        let long =
            !binary && (text.chars().count() > FOLD_CHARS || text.lines().count() > FOLD_LINES);
        let preview = if long {
            shorten(text.lines().next().unwrap_or(""), 120)
        } else {
            String::new()
        };
        let download = if binary {
            self.index
                .get(&(b.as_ptr() as usize, b.len()))
                .map(|i| format!("{}&i={i}", self.value_href))
        } else {
            None
        };
        Leaf {
            href: if binary || long { None } else { safe_href(b) },
            size: b.len(),
            text,
            preview,
            binary,
            long,
            download,
        }
    }

    fn field(&self, a: &Attribute) -> Field {
        let mut f = Field {
            name: text_of(&a.name),
            list: false,
            values: Vec::new(),
            parts: Vec::new(),
        };
        match &a.value {
            Value::Bytes(b) => f.values.push(self.leaf(b)),
            Value::List(items) => {
                f.list = true;
                for (n, v) in items.iter().enumerate() {
                    match v {
                        Value::Object(attrs) => f.parts.push(Part {
                            n: n + 1,
                            fields: attrs.iter().map(|a| self.field(a)).collect(),
                        }),
                        other => f
                            .values
                            .extend(other.leaves().into_iter().map(|b| self.leaf(b))),
                    }
                }
                if !f.parts.is_empty() {
                    f.list = false;
                }
            }
            Value::Object(attrs) => f.parts.push(Part {
                n: 1,
                fields: attrs.iter().map(|a| self.field(a)).collect(),
            }),
        }
        f
    }
}

/// The record's attributes in order, `Author-1…N` and `Embed<n>-` grouped as `collapse`
/// groups them; binary values link to `value_href&i=N` (N: the index in the flattened
/// record). Also the number of values.
pub fn fields(record: &Record, value_href: &str) -> (Vec<Field>, usize) {
    let flat = record.flattened();
    let index = flat
        .attributes
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            a.value
                .as_bytes()
                .map(|b| ((b.as_ptr() as usize, b.len()), i))
        })
        .collect();
    let grouped = collapse(&flat);
    let b = Builder { index, value_href };
    (
        grouped.attributes.iter().map(|a| b.field(a)).collect(),
        flat.attributes.len(),
    )
}

fn value_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => serde_json::Value::String(s.to_string()),
            Err(_) => {
                use base64::Engine as _;
                serde_json::json!({ "base64": base64::engine::general_purpose::STANDARD.encode(b) })
            }
        },
        Value::List(items) => serde_json::Value::Array(items.iter().map(value_json).collect()),
        Value::Object(attrs) => attributes_json(attrs),
    }
}

fn attributes_json(attrs: &[Attribute]) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for a in attrs {
        let name = text_of(&a.name);
        let v = value_json(&a.value);
        match map.get_mut(&name) {
            // A name repeated within the record becomes an array: nothing is dropped.
            Some(serde_json::Value::Array(list)) if matches!(a.value, Value::Bytes(_)) => {
                list.push(v)
            }
            Some(old) => {
                let prev = old.take();
                *old = serde_json::Value::Array(vec![prev, v]);
            }
            None => {
                map.insert(name, v);
            }
        }
    }
    serde_json::Value::Object(map)
}

/// The record as the `jsonl` format writes it after `collapse`:
/// `{"template", "url", "attributes"}`, a value that is not UTF-8 as `{"base64": …}`.
pub fn record_json(record: &Record) -> serde_json::Value {
    let grouped = collapse(&record.flattened());
    serde_json::json!({
        "template": value_json(&Value::Bytes(grouped.template.clone())),
        "url": value_json(&Value::Bytes(grouped.url.clone())),
        "attributes": attributes_json(&grouped.attributes),
    })
}

/// The record as RDF/XML: the one record-to-RDF mapping ([`soif_sinks::rdf::mapping`],
/// docs/linked-data.md#the-mapping) through the `rdfxml` sink, so the page and
/// `soif convert --to rdfxml` give the same graph.
pub fn rdf_xml(record: &Record) -> Result<Vec<u8>, String> {
    use soif_pipeline::Sink;
    let mut out = Vec::new();
    let mut sink = soif_sinks::rdf::RdfSink::new(&mut out, soif_sinks::rdf::Syntax::RdfXml);
    sink.write(record).map_err(|e| e.to_string())?;
    sink.finish().map_err(|e| e.to_string())?;
    drop(sink);
    Ok(out)
}
