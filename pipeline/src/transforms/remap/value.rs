//! A record as a VRL program sees it: the JSON Lines shape (docs/formats.md#jsonl).
//!
//! ```text
//! { "template": "FILE", "url": "ftp://…", "action": "update",
//!   "attributes": { "Title": "…", "Author": ["…", "…"], "Embed": [{ "Type": "…" }] } }
//! ```
//!
//! - `.template` and `.url` are bytes; `.action` is there only inside a Harvest envelope
//!   (`"update"`, `"delete"`, `"refresh"`);
//! - `.attributes` is an object: a plain value is VRL bytes — the record's own bytes,
//!   shared, never copied and never decoded, so a Latin-1 or binary value a program does
//!   not touch leaves exactly as it came —, a collapsed list an array, an embedded part an
//!   object;
//! - a name repeated within the record becomes one array at its first occurrence, holding
//!   every value in order (the JSON Lines rule); [`super::check`] writes it back as the
//!   repeated name when the program leaves it an array of plain values;
//! - a name that is not UTF-8 (SOIF names are ASCII in practice) is read as Latin-1.
//!
//! Where the record came from is metadata: `%soif.input` (the input's name as given),
//! `%soif.offset` (the byte offset of its `@`) and `%soif.record` (its 1-based number in
//! the input); `""`, `0` and `0` for a record built in code, which has no position.
//!
//! [`event_kind`] and [`metadata_kind`] tell the compiler these shapes, so that, say,
//! `upcase(.url)` needs no error handling while `upcase(.attributes.Title)` (which may be
//! missing, or a list) does.

use soif_codecs::{Attribute, Record, Value as SoifValue};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use vrl::value::kind::Collection;
use vrl::value::{KeyString, Kind, ObjectMap, Value};

/// The record as the program's event (`.`).
pub fn event(record: &Record) -> Value {
    Events::default().event(record)
}

/// The top-level names of an event.
pub const TOP: [&str; 4] = ["action", "attributes", "template", "url"];

/// Makes events, reusing the keys of the one before: the records of an input mostly
/// share their attribute names, so a name the last event had (and the program kept,
/// see [`super::check`]) costs no allocation.
#[derive(Debug, Default)]
pub struct Events {
    /// The top level of the last event, every value null.
    top: ObjectMap,
    /// Its `.attributes` as [`super::check`] left them: the names the program kept,
    /// every value null.
    attributes: ObjectMap,
}

impl Events {
    /// The record as the program's event (`.`).
    pub fn event(&mut self, record: &Record) -> Value {
        let mut top = std::mem::take(&mut self.top);
        let mut attributes = std::mem::take(&mut self.attributes);
        fill(&mut attributes, &record.attributes);
        set(&mut top, "template", Value::Bytes(record.template.clone()));
        set(&mut top, "url", Value::Bytes(record.url.clone()));
        match record.action {
            Some(action) => set(&mut top, "action", Value::from(action.as_str())),
            None => {
                top.remove("action");
            }
        }
        set(&mut top, "attributes", Value::Object(attributes));
        Value::Object(top)
    }

    /// Takes back an event after [`super::check`]: its keys are kept for the next one
    /// (any value left is dropped).
    pub fn recycle(&mut self, event: Value) {
        let Value::Object(mut top) = event else {
            return;
        };
        if let Some(Value::Object(mut attributes)) = top
            .get_mut("attributes")
            .map(|v| std::mem::replace(v, Value::Null))
        {
            attributes.values_mut().for_each(|v| *v = Value::Null);
            self.attributes = attributes;
        }
        top.retain(|k, _| TOP.contains(&k.as_str()));
        top.values_mut().for_each(|v| *v = Value::Null);
        self.top = top;
    }
}

/// Sets `name` in `map`, reusing its key when there.
fn set(map: &mut ObjectMap, name: &str, value: Value) {
    match map.get_mut(name) {
        Some(slot) => *slot = value,
        None => {
            map.insert(name.into(), value);
        }
    }
}

/// Attributes as an object: a repeated name becomes one array at its first occurrence.
pub fn object(attributes: &[Attribute]) -> ObjectMap {
    let mut map = ObjectMap::new();
    fill(&mut map, attributes);
    map
}

/// [`object`] into `map`, whose values are all null: its keys are reused, those the
/// attributes do not name removed.
fn fill(map: &mut ObjectMap, attributes: &[Attribute]) {
    // Looking a name up before adding it pays only when there are keys to reuse.
    let reuse = !map.is_empty();
    // Names seen more than once so far: their entry is the array of every value.
    let mut repeated: Vec<&[u8]> = Vec::new();
    for attr in attributes {
        let value = value(&attr.value);
        let latin1;
        let name = match std::str::from_utf8(&attr.name) {
            Ok(name) => name,
            Err(_) => {
                latin1 = key(&attr.name);
                latin1.as_str()
            }
        };
        let slot = match reuse.then(|| map.get_mut(name)).flatten() {
            Some(slot) => slot,
            None => match map.entry(name.into()) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                    continue;
                }
                Entry::Occupied(slot) => slot.into_mut(),
            },
        };
        if slot.is_null() {
            *slot = value;
        } else if repeated.contains(&&attr.name[..]) {
            if let Value::Array(items) = slot {
                items.push(value);
            }
        } else {
            repeated.push(&attr.name);
            let first = std::mem::replace(slot, Value::Null);
            *slot = Value::Array(vec![first, value]);
        }
    }
    if reuse {
        map.retain(|_, v| !v.is_null());
    }
}

/// A value: bytes as they are (shared), lists as arrays, parts as objects.
pub fn value(value: &SoifValue) -> Value {
    match value {
        SoifValue::Bytes(b) => Value::Bytes(b.clone()),
        SoifValue::List(items) => Value::Array(items.iter().map(self::value).collect()),
        SoifValue::Object(attrs) => Value::Object(object(attrs)),
    }
}

/// An attribute name as an object key: its text, or Latin-1 when it is not UTF-8.
pub fn key(name: &[u8]) -> KeyString {
    match std::str::from_utf8(name) {
        Ok(s) => KeyString::from(s),
        Err(_) => KeyString::from(name.iter().map(|&b| char::from(b)).collect::<String>()),
    }
}

/// The metadata (`%`): where the record came from, under `soif`.
pub fn metadata(record: &Record) -> Value {
    let (input, offset, record) = match &record.position {
        Some(p) => (p.input.as_deref().unwrap_or_default(), p.offset, p.record),
        None => ("", 0, 0),
    };
    let soif = ObjectMap::from([
        ("input".into(), Value::from(input)),
        ("offset".into(), Value::Integer(saturating_i64(offset))),
        ("record".into(), Value::Integer(saturating_i64(record))),
    ]);
    Value::Object(ObjectMap::from([("soif".into(), Value::Object(soif))]))
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The type of [`event`], for the compiler.
pub fn event_kind() -> Kind {
    let plain_list_or_part = Kind::bytes()
        .or_array(Collection::any())
        .or_object(Collection::any());
    Kind::object(BTreeMap::from([
        ("template".into(), Kind::bytes()),
        ("url".into(), Kind::bytes()),
        ("action".into(), Kind::bytes().or_undefined()),
        (
            "attributes".into(),
            Kind::object(Collection::from_unknown(plain_list_or_part)),
        ),
    ]))
}

/// The type of [`metadata`], for the compiler.
pub fn metadata_kind() -> Kind {
    Kind::object(BTreeMap::from([(
        "soif".into(),
        Kind::object(BTreeMap::from([
            ("input".into(), Kind::bytes()),
            ("offset".into(), Kind::integer()),
            ("record".into(), Kind::integer()),
        ])),
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use soif_codecs::{Action, Position};
    use std::sync::Arc;
    use vrl::path;

    #[test]
    fn a_record_is_its_json_lines_shape() {
        let mut r = Record::new("FILE", "ftp://x/a")
            .with("Title", "T")
            .with("Author", SoifValue::List(vec!["a".into(), "b".into()]))
            .with(
                "Embed",
                SoifValue::List(vec![SoifValue::Object(vec![Attribute::new("Type", "PS")])]),
            );
        r.action = Some(Action::Update);
        let v = event(&r);
        let o = v.as_object().map(|o| o.len());
        assert_eq!(o, Some(4));
        assert_eq!(v.get(path!("template")), Some(&Value::from("FILE")));
        assert_eq!(v.get(path!("action")), Some(&Value::from("update")));
        assert_eq!(
            v.get(path!("attributes", "Author", 1)),
            Some(&Value::from("b"))
        );
        assert_eq!(
            v.get(path!("attributes", "Embed", 0, "Type")),
            Some(&Value::from("PS"))
        );
    }

    #[test]
    fn bytes_are_shared_not_copied_and_not_decoded() {
        let latin1 = Bytes::from_static(b"Jos\xe9");
        let r = Record::new("FILE", "-").with("Author", latin1.clone());
        let v = event(&r);
        let got = v
            .get(path!("attributes", "Author"))
            .and_then(Value::as_bytes);
        assert_eq!(got.map(|b| b.as_ptr()), Some(latin1.as_ptr()));
    }

    #[test]
    fn a_repeated_name_is_one_array_at_its_first_occurrence() {
        let r = Record::new("T", "-")
            .with("K", "1")
            .with("X", "x")
            .with("K", "2")
            .with("K", "3");
        let map = object(&r.attributes);
        assert_eq!(
            map.get("K"),
            Some(&Value::Array(vec!["1".into(), "2".into(), "3".into()]))
        );
        assert_eq!(map.len(), 2);
    }

    #[test]
    fn a_name_that_is_not_utf8_is_read_as_latin1() {
        assert_eq!(key(b"Ann\xe9e").as_str(), "Année");
    }

    #[test]
    fn metadata_holds_the_position() {
        let mut r = Record::new("T", "-");
        r.position = Some(Position::new(120, 7).with_input(Some(Arc::from("in.soif"))));
        let m = metadata(&r);
        assert_eq!(m.get(path!("soif", "record")), Some(&Value::Integer(7)));
        assert_eq!(m.get(path!("soif", "offset")), Some(&Value::Integer(120)));
        assert_eq!(m.get(path!("soif", "input")), Some(&Value::from("in.soif")));
        let none = metadata(&Record::new("T", "-"));
        assert_eq!(none.get(path!("soif", "record")), Some(&Value::Integer(0)));
    }
}
