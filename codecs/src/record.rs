//! The record: what every source produces and every sink consumes.
//!
//! A record is a SOIF object (RFC 2655 §3): a template type such as `FILE`, a URL (`-` when
//! there is none) and an ordered list of attributes. Inside a Harvest collector envelope
//! (`@DELETE { … }`, `@REFRESH { … }`, `@UPDATE { … }`) it also carries an [`Action`].
//!
//! Values are bytes, never assumed to be UTF-8: 1990s archives hold Latin-1, binary
//! thumbnails and worse. The decoder hands out [`Bytes`] slices of its read buffer, so a
//! value costs no copy. After the `collapse` transform a value can also be a list
//! (`Author-1…Author-N` → `Author: [..]`) or a nested object (`Embed<1>-Type` →
//! `Embed: [{Type: ..}]`); sinks that only understand flat SOIF call
//! [`Record::flattened`] first.

use bytes::Bytes;
use std::fmt;
use std::sync::Arc;

/// What a Harvest collector envelope asks the receiver to do with the records inside it
/// (Harvest manual, seed `004_…txt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Inside `@DELETE { … }`: the receiver removes these records.
    Delete,
    /// Inside `@REFRESH { … }`: the records are still valid; refresh their time-to-live.
    Refresh,
    /// Inside `@UPDATE { … }`: new or changed records.
    Update,
}

impl Action {
    /// The lower-case name used in JSON Lines (`"action":"delete"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Delete => "delete",
            Action::Refresh => "refresh",
            Action::Update => "update",
        }
    }

    /// The envelope keyword as written in SOIF (`DELETE`, `REFRESH`, `UPDATE`).
    pub fn envelope(self) -> &'static str {
        match self {
            Action::Delete => "DELETE",
            Action::Refresh => "REFRESH",
            Action::Update => "UPDATE",
        }
    }

    /// Parses `delete` / `DELETE` / `Delete` and so on.
    pub fn parse(s: &str) -> Option<Action> {
        if s.eq_ignore_ascii_case("delete") {
            Some(Action::Delete)
        } else if s.eq_ignore_ascii_case("refresh") {
            Some(Action::Refresh)
        } else if s.eq_ignore_ascii_case("update") {
            Some(Action::Update)
        } else {
            None
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An attribute value.
///
/// Decoded SOIF only ever holds [`Value::Bytes`]; the other two shapes are made by the
/// `collapse` transform (and by the JSON Lines source reading collapsed output back).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// Raw bytes, exactly VALUE-SIZE of them.
    Bytes(Bytes),
    /// A multi-valued attribute (`Author-1`, `Author-2` … collapsed), in numeric order.
    List(Vec<Value>),
    /// A nested part (one `Embed<n>-` group), its attributes with the prefix removed.
    Object(Vec<Attribute>),
}

impl Value {
    /// The bytes of a plain value; `None` for lists and objects.
    pub fn as_bytes(&self) -> Option<&Bytes> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The value as UTF-8 text, if it is plain bytes and valid UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        self.as_bytes().and_then(|b| std::str::from_utf8(b).ok())
    }

    /// Every plain value in this value, depth first (a list's items; an object's values).
    pub fn leaves(&self) -> Vec<&Bytes> {
        let mut out = Vec::new();
        self.collect_leaves(&mut out);
        out
    }

    fn collect_leaves<'a>(&'a self, out: &mut Vec<&'a Bytes>) {
        match self {
            Value::Bytes(b) => out.push(b),
            Value::List(items) => items.iter().for_each(|v| v.collect_leaves(out)),
            Value::Object(attrs) => attrs.iter().for_each(|a| a.value.collect_leaves(out)),
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Bytes(Bytes::copy_from_slice(s.as_bytes()))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Bytes(Bytes::from(s))
    }
}

impl From<Bytes> for Value {
    fn from(b: Bytes) -> Self {
        Value::Bytes(b)
    }
}

impl From<Vec<u8>> for Value {
    fn from(b: Vec<u8>) -> Self {
        Value::Bytes(Bytes::from(b))
    }
}

/// One `NAME{SIZE}:\tVALUE` pair.
///
/// Names are bytes because real data is not the RFC's `[A-Za-z0-9_-]`: Harvest wrote
/// `Embed<1>-Type`, CIP hints carry `Weightlist-[IMAGE:Subject]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Attribute {
    pub name: Bytes,
    pub value: Value,
}

impl Attribute {
    /// A plain attribute from a name and bytes.
    pub fn new(name: impl Into<Bytes>, value: impl Into<Bytes>) -> Attribute {
        Attribute {
            name: name.into(),
            value: Value::Bytes(value.into()),
        }
    }

    /// The name as text (names are ASCII in practice; invalid UTF-8 is replaced).
    pub fn name_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.name)
    }
}

/// Where a record (or an error) was found. Every error message carries one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Position {
    /// The input's name as the user gave it (a path, `-` for stdin, a URL).
    pub input: Option<Arc<str>>,
    /// Byte offset of the object's `@` (or of the error) in the decompressed input.
    pub offset: u64,
    /// 1-based number of the record in its input.
    pub record: u64,
    /// The record's URL, when it was read before the error.
    pub url: Option<String>,
}

impl Position {
    pub fn new(offset: u64, record: u64) -> Position {
        Position {
            input: None,
            offset,
            record,
            url: None,
        }
    }

    pub fn with_input(mut self, input: Option<Arc<str>>) -> Position {
        self.input = input;
        self
    }

    pub fn with_url(mut self, url: Option<String>) -> Position {
        self.url = url;
        self
    }
}

impl fmt::Display for Position {
    /// `input.soif: byte 1234, record 7 (http://example.com/)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(input) = &self.input {
            write!(f, "{input}: ")?;
        }
        write!(f, "byte {}, record {}", self.offset, self.record)?;
        if let Some(url) = &self.url {
            write!(f, " ({url})")?;
        }
        Ok(())
    }
}

/// A repair made in `--lenient` mode, reported as a warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    /// Byte offset in the input where the repair was made.
    pub offset: u64,
    /// What was wrong and what was done, e.g. `"size {x} of View-Hits: value taken to end of line"`.
    pub message: String,
}

/// A SOIF object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    /// The template type, e.g. `FILE`, `DOCUMENT`, `Dublin-Core`.
    pub template: Bytes,
    /// The URL, `-` when the object has none.
    pub url: Bytes,
    /// The attributes in input order.
    pub attributes: Vec<Attribute>,
    /// Set inside a Harvest collector envelope.
    pub action: Option<Action>,
    /// Where the record came from (absent for records built in code).
    pub position: Option<Position>,
    /// The record's original bytes, exactly as read (for `--quarantine`); absent for
    /// records built in code or read from JSON Lines.
    pub raw: Option<Bytes>,
    /// Repairs made while decoding in lenient mode.
    pub repairs: Vec<Repair>,
}

impl Record {
    /// A record with no attributes.
    pub fn new(template: impl Into<Bytes>, url: impl Into<Bytes>) -> Record {
        Record {
            template: template.into(),
            url: url.into(),
            ..Record::default()
        }
    }

    /// Adds a plain attribute (builder style, for tests and transforms).
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Record {
        self.push(name, value);
        self
    }

    /// Appends an attribute.
    pub fn push(&mut self, name: &str, value: impl Into<Value>) {
        self.attributes.push(Attribute {
            name: Bytes::copy_from_slice(name.as_bytes()),
            value: value.into(),
        });
    }

    /// The template as text (invalid UTF-8 replaced).
    pub fn template_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.template)
    }

    /// Where the record came from, for messages: its position with its URL
    /// (`a.soif: byte 65, record 2 (http://bad/)`), or the URL alone for a record made in
    /// memory.
    pub fn location(&self) -> String {
        match &self.position {
            Some(p) if p.url.is_some() => p.to_string(),
            Some(p) => format!("{p} ({})", self.url_str()),
            None => self.url_str().into_owned(),
        }
    }

    /// The URL as text (invalid UTF-8 replaced).
    pub fn url_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.url)
    }

    /// True when the URL is the RFC's "no URL" hyphen.
    pub fn has_no_url(&self) -> bool {
        self.url.as_ref() == b"-"
    }

    /// The first attribute with exactly this name (case-sensitive).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.attributes
            .iter()
            .find(|a| a.name.as_ref() == name.as_bytes())
            .map(|a| &a.value)
    }

    /// The first attribute whose name equals `name` ignoring ASCII case.
    pub fn get_ignore_case(&self, name: &str) -> Option<&Value> {
        self.attributes
            .iter()
            .find(|a| a.name.eq_ignore_ascii_case(name.as_bytes()))
            .map(|a| &a.value)
    }

    /// The first plain value with this name, as UTF-8 text.
    pub fn get_str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }

    /// Removes every attribute with this name; returns how many were removed.
    pub fn remove(&mut self, name: &str) -> usize {
        let before = self.attributes.len();
        self.attributes
            .retain(|a| a.name.as_ref() != name.as_bytes());
        before - self.attributes.len()
    }

    /// Sets an attribute: replaces the first one with this name, or appends.
    pub fn set(&mut self, name: &str, value: impl Into<Value>) {
        let value = value.into();
        match self
            .attributes
            .iter_mut()
            .find(|a| a.name.as_ref() == name.as_bytes())
        {
            Some(a) => a.value = value,
            None => self.push(name, value),
        }
    }

    /// True when every value is plain bytes (nothing collapsed).
    pub fn is_flat(&self) -> bool {
        self.attributes
            .iter()
            .all(|a| matches!(a.value, Value::Bytes(_)))
    }

    /// The record with lists and objects written back as SOIF names: a list `Author: [a, b]`
    /// becomes `Author-1`, `Author-2`; an object list `Embed: [{Type: x}]` becomes
    /// `Embed<1>-Type`. Plain records are returned unchanged. This is the `expand`
    /// transform's rule, kept here so every flat sink writes collapsed records the same way.
    pub fn flattened(&self) -> std::borrow::Cow<'_, Record> {
        if self.is_flat() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut out = Record {
            attributes: Vec::with_capacity(self.attributes.len()),
            ..self.clone_header()
        };
        for attr in &self.attributes {
            flatten_into(&attr.name, &attr.value, &mut out.attributes);
        }
        std::borrow::Cow::Owned(out)
    }

    /// A copy of everything but the attributes.
    pub fn clone_header(&self) -> Record {
        Record {
            template: self.template.clone(),
            url: self.url.clone(),
            attributes: Vec::new(),
            action: self.action,
            position: self.position.clone(),
            raw: self.raw.clone(),
            repairs: self.repairs.clone(),
        }
    }
}

fn flatten_into(name: &Bytes, value: &Value, out: &mut Vec<Attribute>) {
    match value {
        Value::Bytes(b) => out.push(Attribute {
            name: name.clone(),
            value: Value::Bytes(b.clone()),
        }),
        Value::List(items) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    // A list of parts: Embed: [{Type: x}] -> Embed<1>-Type.
                    Value::Object(attrs) => {
                        for a in attrs {
                            let mut n = Vec::with_capacity(name.len() + a.name.len() + 8);
                            n.extend_from_slice(name);
                            n.extend_from_slice(format!("<{}>-", i + 1).as_bytes());
                            n.extend_from_slice(&a.name);
                            flatten_into(&Bytes::from(n), &a.value, out);
                        }
                    }
                    other => {
                        let mut n = Vec::with_capacity(name.len() + 8);
                        n.extend_from_slice(name);
                        n.extend_from_slice(format!("-{}", i + 1).as_bytes());
                        flatten_into(&Bytes::from(n), other, out);
                    }
                }
            }
        }
        Value::Object(attrs) => {
            for a in attrs {
                let mut n = Vec::with_capacity(name.len() + a.name.len() + 1);
                n.extend_from_slice(name);
                n.push(b'-');
                n.extend_from_slice(&a.name);
                flatten_into(&Bytes::from(n), &a.value, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flatten_lists_and_embeds() {
        let r = Record::new("FILE", "-")
            .with("Title", "t")
            .with(
                "Author",
                Value::List(vec!["Alan O. Freier".into(), "Philip Karlton".into()]),
            )
            .with(
                "Embed",
                Value::List(vec![Value::Object(vec![Attribute::new(
                    "Type",
                    "PostScript",
                )])]),
            );
        let flat = r.flattened();
        let names: Vec<_> = flat.attributes.iter().map(|a| a.name_str()).collect();
        assert_eq!(names, ["Title", "Author-1", "Author-2", "Embed<1>-Type"]);
    }

    #[test]
    fn get_and_set() {
        let mut r = Record::new("FILE", "http://x/").with("Title", "a");
        r.set("Title", "b");
        r.set("Type", "HTML");
        assert_eq!(r.get_str("Title"), Some("b"));
        assert_eq!(
            r.get_ignore_case("type").and_then(Value::as_str),
            Some("HTML")
        );
        assert_eq!(r.remove("Title"), 1);
        assert!(r.get("Title").is_none());
    }
}
