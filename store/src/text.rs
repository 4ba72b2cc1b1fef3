//! Values as text, JSON and XML: the one policy shared by the sinks (csv, jsonl, rdfxml,
//! sqlite), the catalog and the server's OAI-PMH provider.
//!
//! Values are bytes. Where a format needs text, a value that is valid UTF-8 is used as is;
//! otherwise [`Charset::Latin1`] reads it as ISO 8859-1 (what 1990s Harvest data usually
//! is), and [`Charset::Utf8`] replaces the bad sequences with U+FFFD and tells the caller,
//! who counts a warning.
//!
//! ```
//! use soif_store::text::{to_text, Charset};
//! let (text, replaced) = to_text(b"caf\xe9", Charset::Latin1);
//! assert_eq!((text.as_ref(), replaced), ("café", false));
//! let (text, replaced) = to_text(b"caf\xe9", Charset::Utf8);
//! assert_eq!((text.as_ref(), replaced), ("caf\u{fffd}", true));
//! ```

use base64::Engine as _;
use bytes::Bytes;
use soif_codecs::{Attribute, Value};
use std::borrow::Cow;

/// How values that are not UTF-8 are turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Charset {
    /// Values must be UTF-8; others are written as `{"base64": …}` (JSON), BLOBs (SQLite)
    /// or replaced with a warning (XML, CSV).
    #[default]
    Utf8,
    /// Values that are not UTF-8 are read as ISO 8859-1 (1990s Harvest data).
    Latin1,
}

/// The bytes as text: `(text, replaced)`, where `replaced` is true when invalid UTF-8 had
/// to be replaced (only with [`Charset::Utf8`]).
pub fn to_text(bytes: &[u8], charset: Charset) -> (Cow<'_, str>, bool) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (Cow::Borrowed(s), false),
        Err(_) => match charset {
            Charset::Latin1 => (Cow::Owned(latin1(bytes)), false),
            Charset::Utf8 => (String::from_utf8_lossy(bytes), true),
        },
    }
}

/// [`to_text`] for a sink that counts repairs: adds one to `warnings` when invalid UTF-8
/// was replaced.
pub fn text_counted<'a>(bytes: &'a [u8], charset: Charset, warnings: &mut u64) -> Cow<'a, str> {
    let (text, replaced) = to_text(bytes, charset);
    *warnings += u64::from(replaced);
    text
}

/// The bytes read as ISO 8859-1: every byte is the code point of the same number.
pub fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// A value as JSON, the way the `jsonl` sink writes it: text stays text, bytes that are
/// not UTF-8 become `{"base64": "…"}` (or Latin-1 text with [`Charset::Latin1`]), lists
/// become arrays and parts objects (a name repeated inside a part becomes an array).
pub fn to_json(value: &Value, charset: Charset) -> serde_json::Value {
    match value {
        Value::Bytes(b) => bytes_to_json(b, charset),
        Value::List(items) => {
            serde_json::Value::Array(items.iter().map(|v| to_json(v, charset)).collect())
        }
        Value::Object(attrs) => object_to_json(attrs, charset),
    }
}

fn bytes_to_json(b: &[u8], charset: Charset) -> serde_json::Value {
    match (std::str::from_utf8(b), charset) {
        (Ok(s), _) => serde_json::Value::String(s.to_string()),
        (Err(_), Charset::Latin1) => serde_json::Value::String(latin1(b)),
        (Err(_), Charset::Utf8) => {
            let mut m = serde_json::Map::new();
            m.insert(
                "base64".to_string(),
                serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
            );
            serde_json::Value::Object(m)
        }
    }
}

fn object_to_json(attrs: &[Attribute], charset: Charset) -> serde_json::Value {
    // Group by name in first-seen order: a repeated name becomes an array rather than
    // overwriting the first value.
    let mut index: std::collections::HashMap<Cow<'_, str>, usize> = Default::default();
    let mut groups: Vec<(Cow<'_, str>, Vec<&Value>)> = Vec::new();
    for a in attrs {
        let name = a.name_str();
        match index.get(&name) {
            Some(&i) => groups[i].1.push(&a.value),
            None => {
                index.insert(name.clone(), groups.len());
                groups.push((name, vec![&a.value]));
            }
        }
    }
    let mut m = serde_json::Map::new();
    for (name, values) in groups {
        let v = match values.as_slice() {
            [one] => to_json(one, charset),
            many => serde_json::Value::Array(many.iter().map(|v| to_json(v, charset)).collect()),
        };
        m.insert(name.into_owned(), v);
    }
    serde_json::Value::Object(m)
}

/// The inverse of [`to_json`] (with [`Charset::Utf8`]): strings are their bytes,
/// `{"base64": …}` the bytes it encodes, arrays lists, other objects parts (an array under
/// a name stays a list). Numbers, booleans and `null`, which [`to_json`] never writes, are
/// their JSON text.
pub fn from_json(j: &serde_json::Value) -> Value {
    match j {
        serde_json::Value::String(s) => Value::Bytes(Bytes::copy_from_slice(s.as_bytes())),
        serde_json::Value::Array(items) => Value::List(items.iter().map(from_json).collect()),
        serde_json::Value::Object(m) => {
            if let (1, Some(serde_json::Value::String(b64))) = (m.len(), m.get("base64")) {
                if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(b64) {
                    return Value::Bytes(Bytes::from(bytes));
                }
            }
            Value::Object(
                m.iter()
                    .map(|(k, v)| Attribute {
                        name: Bytes::copy_from_slice(k.as_bytes()),
                        value: from_json(v),
                    })
                    .collect(),
            )
        }
        other => Value::Bytes(Bytes::from(other.to_string())),
    }
}

/// The fifteen Simple Dublin Core elements, in RFC 2655 Appendix C's order.
pub const DC_ELEMENTS: [&str; 15] = [
    "title",
    "creator",
    "subject",
    "description",
    "publisher",
    "contributor",
    "date",
    "type",
    "format",
    "identifier",
    "source",
    "language",
    "relation",
    "coverage",
    "rights",
];

/// The Dublin Core element for an attribute of a `Dublin-Core` record, by its name
/// without a `-N` suffix (`TITLE` → `title`), ignoring ASCII case.
pub fn dc_element(base: &[u8]) -> Option<&'static str> {
    DC_ELEMENTS
        .iter()
        .find(|e| e.as_bytes().eq_ignore_ascii_case(base))
        .copied()
}

/// Whether XML 1.0 forbids the character (C0 controls other than tab, LF and CR; U+FFFE,
/// U+FFFF).
pub fn xml_forbidden(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{B}' | '\u{C}' | '\u{E}'..='\u{1F}' | '\u{FFFE}' | '\u{FFFF}')
}

/// Replaces characters XML 1.0 does not allow with U+FFFD; returns how many.
pub fn xml_chars(text: &str) -> (Cow<'_, str>, u64) {
    if !text.chars().any(xml_forbidden) {
        return (Cow::Borrowed(text), 0);
    }
    let mut n = 0;
    let s = text
        .chars()
        .map(|c| {
            if xml_forbidden(c) {
                n += 1;
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect();
    (Cow::Owned(s), n)
}

/// Escapes text content (or an attribute value): `<`, `>`, `&`, quotes, and CR as
/// `&#13;` (a raw CR would be normalised to LF by every XML parser).
pub fn escape_text(text: &str) -> String {
    let escaped = quick_xml::escape::escape(text);
    if escaped.contains('\r') {
        escaped.replace('\r', "&#13;")
    } else {
        escaped.into_owned()
    }
}

/// Bytes as XML text content under the RDF/XML sink's policy: decoded under `charset`
/// (invalid UTF-8 replaced, or read as Latin-1), forbidden characters replaced with
/// U+FFFD, then escaped. Adds the repairs made to `warnings`.
pub fn xml_text(bytes: &[u8], charset: Charset, warnings: &mut u64) -> String {
    let text = text_counted(bytes, charset, warnings);
    let (clean, fixed) = xml_chars(&text);
    *warnings += fixed;
    escape_text(&clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_is_safe_whatever_the_bytes() {
        let mut w = 0;
        assert_eq!(
            xml_text(b"a<b\x01\r&\xff", Charset::Utf8, &mut w),
            "a&lt;b\u{fffd}&#13;&amp;\u{fffd}"
        );
        assert_eq!(w, 2);
        assert_eq!(dc_element(b"TITLE"), Some("title"));
    }

    #[test]
    fn text_utf8_latin1_and_lossy() {
        assert_eq!(
            to_text(b"plain", Charset::Utf8),
            (Cow::Borrowed("plain"), false)
        );
        assert_eq!(to_text(b"\xe9t\xe9", Charset::Latin1).0, "été");
        let (t, replaced) = to_text(b"a\xffb", Charset::Utf8);
        assert!(replaced);
        assert_eq!(t, "a\u{fffd}b");
    }

    #[test]
    fn latin1_and_counted_text() {
        assert_eq!(latin1(b"\xe9t\xe9 \xff"), "été ÿ");
        let mut warnings = 0;
        assert_eq!(text_counted(b"ok", Charset::Utf8, &mut warnings), "ok");
        assert_eq!(warnings, 0);
        assert_eq!(
            text_counted(b"\xe9", Charset::Utf8, &mut warnings),
            "\u{fffd}"
        );
        assert_eq!(text_counted(b"\xe9", Charset::Latin1, &mut warnings), "é");
        assert_eq!(warnings, 1);
    }

    #[test]
    fn from_json_reverses_to_json() {
        let v = Value::List(vec![
            "a".into(),
            Value::from(vec![0xffu8, 0]),
            Value::Object(vec![
                Attribute::new("Type", "PostScript"),
                Attribute::new("base64", "not alone"),
            ]),
        ]);
        assert_eq!(from_json(&to_json(&v, Charset::Utf8)), v);
        // What to_json never writes comes back as its JSON text.
        assert_eq!(from_json(&serde_json::json!(12)), Value::from("12"));
    }

    #[test]
    fn json_shapes() {
        let v = Value::List(vec!["a".into(), Value::from(vec![0xffu8])]);
        assert_eq!(
            to_json(&v, Charset::Utf8).to_string(),
            r#"["a",{"base64":"/w=="}]"#
        );
        let o = Value::Object(vec![
            Attribute::new("Type", "PostScript"),
            Attribute::new("K", "1"),
            Attribute::new("K", "2"),
            Attribute::new("K", "3"),
        ]);
        assert_eq!(
            to_json(&o, Charset::Utf8).to_string(),
            r#"{"Type":"PostScript","K":["1","2","3"]}"#
        );
    }

    #[test]
    fn json_repeated_name_holding_an_array_value() {
        // Two values, the first itself a list: the result is [[..], ..], not a merge.
        let o = Value::Object(vec![
            Attribute {
                name: "A".into(),
                value: Value::List(vec!["x".into()]),
            },
            Attribute::new("A", "y"),
        ]);
        assert_eq!(
            to_json(&o, Charset::Utf8).to_string(),
            r#"{"A":[["x"],"y"]}"#
        );
    }
}
