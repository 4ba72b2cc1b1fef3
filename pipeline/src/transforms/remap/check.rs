//! The program's result back into records, checked.
//!
//! The event (`.`) after the program is the record passed on; an array of objects is
//! several records, in order. It must be what a record can be (the shape of
//! [`super::value`]):
//! - `.template`: a non-empty template name ([`names::template_fault`]);
//! - `.url`: text without a line break (`-` when absent);
//! - `.action`: absent or null, `"update"`, `"delete"` or `"refresh"`;
//! - `.attributes`: an object whose names are SOIF names ([`names::name_fault`]) and
//!   whose values are bytes, arrays (lists) or objects (parts) of them. Integers, floats,
//!   booleans and timestamps become their text as VRL's `to_string` writes it
//!   (timestamps in RFC 3339, UTC); `null` is refused (`del(.attributes.X)` removes an
//!   attribute);
//! - nothing else at the top (`.title = …` is a mistake for `.attributes.title = …`).
//!
//! Anything else is a [`Fault`] that names the place (`.attributes.Date: …`); the
//! transform rejects the record with it.
//!
//! Attributes keep the input record's order: names that were there come first, in the
//! order they had, the program's new names after them in alphabetical order (VRL's
//! objects are sorted). An array of plain values under a name the input repeated is
//! written back as that name repeated, one value at each place it had (values beyond
//! their number at the last), so a record the program does not touch passes through
//! unchanged.

use super::value::{key, TOP};
use bytes::Bytes;
use soif_codecs::rules::names;
use soif_codecs::{Action, Attribute, Record, Value as SoifValue};
use std::fmt;
use vrl::value::{KeyString, ObjectMap, Value};

/// Why a result cannot be a record: where (a VRL path) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Path segments, innermost first (built on the way out of the recursion).
    path: Vec<String>,
    reason: String,
}

impl Fault {
    fn new(reason: impl Into<String>) -> Fault {
        Fault {
            path: Vec::new(),
            reason: reason.into(),
        }
    }

    fn at(mut self, segment: String) -> Fault {
        self.path.push(segment);
        self
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            for segment in self.path.iter().rev() {
                f.write_str(segment)?;
            }
            f.write_str(": ")?;
        }
        f.write_str(&self.reason)
    }
}

/// A field segment as VRL writes it: `.Title`, `."Content-Type"`.
fn field(name: &str) -> String {
    if !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'@')
    {
        format!(".{name}")
    } else {
        format!(".{name:?}")
    }
}

/// The records the program's result `result` stands for, into `out` (in order). `input`
/// is the record the program was given: its attributes' order and repeated names guide
/// the result's (see the module doc); position, original bytes and repairs are the
/// caller's to copy.
///
/// The values are taken out of `result`, its keys left (with null values) for
/// [`super::value::Events::recycle`]: under `.attributes`, only the names of `input`
/// the result kept.
pub fn records(result: &mut Value, input: &Record, out: &mut Vec<Record>) -> Result<(), Fault> {
    match result {
        Value::Object(map) => {
            out.push(record(map, input)?);
            Ok(())
        }
        Value::Array(items) => {
            let n = items.len();
            for (i, item) in items.iter_mut().enumerate() {
                let map = match item {
                    Value::Object(map) => map,
                    other => {
                        return Err(Fault::new(format!(
                        "item {} of {n} of the program's result is {}, not a record (an object)",
                        i + 1,
                        kind_name(other)
                    )))
                    }
                };
                out.push(record(map, input).map_err(|f| f.at(format!("[{i}]")))?);
            }
            Ok(())
        }
        other => Err(Fault::new(format!(
            "the program's result is {}, not a record (an object) or an array of records",
            kind_name(other)
        ))),
    }
}

/// The value of `name` taken out of `map` (its key left); `None` when absent or null.
fn take(map: &mut ObjectMap, name: &str) -> Option<Value> {
    map.get_mut(name)
        .map(|v| std::mem::replace(v, Value::Null))
        .filter(|v| !v.is_null())
}

fn record(map: &mut ObjectMap, input: &Record) -> Result<Record, Fault> {
    let template = match take(map, "template") {
        None => {
            return Err(Fault::new(
                "no .template: a record needs a template name (such as \"FILE\")",
            ))
        }
        Some(v) => {
            let t = text(v).map_err(|f| f.at(".template".into()))?;
            if let Some(why) = names::template_fault(&t) {
                return Err(Fault::new(why).at(".template".into()));
            }
            t
        }
    };
    let url = match take(map, "url") {
        None => Bytes::from_static(b"-"),
        Some(v @ (Value::Bytes(_) | Value::String(_))) => {
            let u = text(v).map_err(|f| f.at(".url".into()))?;
            if u.is_empty() {
                return Err(Fault::new("a URL cannot be empty (`-` means none)").at(".url".into()));
            }
            if u.iter().any(|&b| b == b'\n' || b == b'\r') {
                return Err(Fault::new("a URL cannot hold a line break").at(".url".into()));
            }
            u
        }
        Some(other) => {
            return Err(
                Fault::new(format!("is {}, not a string", kind_name(&other))).at(".url".into()),
            )
        }
    };
    let action = match take(map, "action") {
        None => None,
        Some(v) => {
            let t = text(v).map_err(|f| f.at(".action".into()))?;
            let parsed = std::str::from_utf8(&t).ok().and_then(Action::parse);
            match parsed {
                Some(a) => Some(a),
                None => {
                    return Err(Fault::new(format!(
                        "`{}` is not an action (update, delete or refresh)",
                        String::from_utf8_lossy(&t)
                    ))
                    .at(".action".into()))
                }
            }
        }
    };
    let attributes = match map.get_mut("attributes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(attrs)) => {
            attributes(attrs, &input.attributes).map_err(|f| f.at(".attributes".into()))?
        }
        Some(other) => {
            return Err(
                Fault::new(format!("is {}, not an object", kind_name(other)))
                    .at(".attributes".into()),
            )
        }
    };
    if let Some(k) = map.keys().find(|k| !TOP.contains(&k.as_str())) {
        return Err(Fault::new(
            "a record has only .template, .url, .action and .attributes (attributes go under .attributes)",
        )
        .at(field(k)));
    }
    Ok(Record {
        template,
        url,
        attributes,
        action,
        position: None,
        raw: None,
        repairs: Vec::new(),
    })
}

/// An object's entries as attributes: `hint`'s names first, in `hint`'s order, then
/// the rest in key order. The values are taken out of `map`; the names of `hint` stay
/// (with null values), the others are removed.
fn attributes(map: &mut ObjectMap, hint: &[Attribute]) -> Result<Vec<Attribute>, Fault> {
    let mut out = Vec::with_capacity(map.len());
    // The values still to place of a name the input repeated (see `repeat`).
    let mut pending: Vec<(Bytes, std::vec::IntoIter<Value>)> = Vec::new();
    // How many of the map's values were taken (each leaves a null).
    let mut taken = 0;
    for (i, h) in hint.iter().enumerate() {
        let latin1;
        let name = match std::str::from_utf8(&h.name) {
            Ok(name) => name,
            Err(_) => {
                latin1 = key(&h.name);
                latin1.as_str()
            }
        };
        let later = || hint[i + 1..].iter().any(|l| l.name == h.name);
        // A null is the value of an earlier occurrence, taken, or the program's (a
        // fault, below).
        let found = match map.get_mut(name) {
            Some(v) if !v.is_null() || !hint[..i].iter().any(|e| e.name == h.name) => {
                taken += 1;
                Some(std::mem::replace(v, Value::Null))
            }
            _ => None,
        };
        let Some(v) = found else {
            // A later occurrence of a repeated name: its next value (all that are left
            // at the last one).
            if let Some((_, rest)) = pending.iter_mut().find(|(n, _)| *n == h.name) {
                let take = if later() { 1 } else { usize::MAX };
                for item in rest.by_ref().take(take) {
                    out.push(repeat(&h.name, item).map_err(|f| f.at(field(name)))?);
                }
            }
            continue;
        };
        match v {
            Value::Array(items) if items.iter().all(is_plain) && later() => {
                let mut items = items.into_iter();
                if let Some(first) = items.next() {
                    out.push(repeat(&h.name, first).map_err(|f| f.at(field(name)))?);
                }
                pending.push((h.name.clone(), items));
            }
            v => out.push(Attribute {
                name: h.name.clone(),
                value: value(v, Some(&h.value)).map_err(|f| f.at(field(name)))?,
            }),
        }
    }
    // The rest: the names the program added, in key order. A null among them is the
    // program's (there are more nulls than values taken): find the first fault as the
    // entries come.
    if map.values().filter(|v| v.is_null()).count() > taken {
        let hinted = |k: &str| hint.iter().any(|h| key(&h.name).as_str() == k);
        for (k, v) in map.iter_mut() {
            if v.is_null() && hinted(k) {
                continue;
            }
            added(k.clone(), std::mem::replace(v, Value::Null))?;
        }
    }
    if taken == 0 {
        // No key to keep: the map is consumed whole, the cheaper way.
        for (k, v) in std::mem::take(map) {
            out.push(added(k, v)?);
        }
    } else {
        for (k, v) in map.extract_if(.., |_, v| !v.is_null()) {
            out.push(added(k, v)?);
        }
    }
    Ok(out)
}

/// An attribute the program added: its name checked.
fn added(k: KeyString, v: Value) -> Result<Attribute, Fault> {
    if let Some(why) = names::name_fault(k.as_bytes()) {
        return Err(Fault::new(why).at(field(&k)));
    }
    let value = value(v, None).map_err(|f| f.at(field(&k)))?;
    Ok(Attribute {
        name: Bytes::from(String::from(k)),
        value,
    })
}

/// One occurrence of a name the input repeated: the program left the name an array of
/// plain values, each goes back to one occurrence, in order.
fn repeat(name: &Bytes, item: Value) -> Result<Attribute, Fault> {
    Ok(Attribute {
        name: name.clone(),
        value: SoifValue::Bytes(plain(item)?),
    })
}

/// A value: bytes (or the text of a scalar), a list, a part.
fn value(v: Value, hint: Option<&SoifValue>) -> Result<SoifValue, Fault> {
    match v {
        Value::Array(items) => {
            let hints = match hint {
                Some(SoifValue::List(h)) => h.as_slice(),
                _ => &[],
            };
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| value(item, hints.get(i)).map_err(|f| f.at(format!("[{i}]"))))
                .collect::<Result<Vec<_>, _>>()
                .map(SoifValue::List)
        }
        Value::Object(mut map) => {
            let hints = match hint {
                Some(SoifValue::Object(h)) => h.as_slice(),
                _ => &[],
            };
            attributes(&mut map, hints).map(SoifValue::Object)
        }
        other => plain(other).map(SoifValue::Bytes),
    }
}

fn is_plain(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_) | Value::Null)
}

/// The bytes of a plain value: bytes as they are, scalars as their text.
fn plain(v: Value) -> Result<Bytes, Fault> {
    scalar_text(v).map_err(|v| match v {
        Value::Null => Fault::new("is null, not a value (del() removes an attribute)"),
        other => Fault::new(format!("is {}, not a value", kind_name(&other))),
    })
}

/// The bytes of a scalar: bytes as they are, integers, floats, booleans, timestamps
/// (RFC 3339, UTC) and regular expressions as their text, as VRL's `to_string` writes
/// them. Null, arrays and objects come back as they were.
pub fn scalar_text(v: Value) -> Result<Bytes, Value> {
    Ok(match v {
        Value::Bytes(b) => b,
        Value::String(s) => s.as_bytes().clone(),
        Value::Integer(i) => Bytes::from(i.to_string()),
        Value::Float(f) => Bytes::from(f.to_string()),
        Value::Boolean(b) => Bytes::from_static(if b { b"true" } else { b"false" }),
        Value::Timestamp(t) => Bytes::from(t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
        Value::Regex(r) => Bytes::from(r.to_string()),
        other @ (Value::Null | Value::Array(_) | Value::Object(_)) => return Err(other),
    })
}

/// The bytes of a template, URL or action.
fn text(v: Value) -> Result<Bytes, Fault> {
    match v {
        Value::Bytes(b) => Ok(b),
        Value::String(s) => Ok(s.as_bytes().clone()),
        other => Err(Fault::new(format!(
            "is {}, not a string",
            kind_name(&other)
        ))),
    }
}

/// "an integer", "an object", … for messages.
fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Bytes(_) | Value::String(_) => "a string",
        Value::Regex(_) => "a regular expression",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Timestamp(_) => "a timestamp",
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::Null => "null",
    }
}

#[cfg(test)]
mod tests {
    use super::super::value::event;
    use super::*;
    use chrono::TimeZone as _;

    fn one(mut result: Value, input: &Record) -> Result<Record, Fault> {
        let mut out = Vec::new();
        records(&mut result, input, &mut out)?;
        assert_eq!(out.len(), 1);
        Ok(out.remove(0))
    }

    fn sample() -> Record {
        Record::new("FILE", "ftp://x/a")
            .with("Title", "T")
            .with("Keywords", "k1")
            .with("Author", SoifValue::List(vec!["a".into(), "b".into()]))
            .with(
                "Embed",
                SoifValue::List(vec![SoifValue::Object(vec![
                    Attribute::new("Type", "PS"),
                    Attribute::new("File-Size", "9"),
                ])]),
            )
            .with("Keywords", "k2")
            .with("Binary", Bytes::from_static(b"\xff\x00\xfe"))
    }

    #[test]
    fn an_untouched_record_comes_back_unchanged() {
        let input = sample();
        let got = one(event(&input), &input);
        assert_eq!(got, Ok(input));
    }

    #[test]
    fn new_names_follow_the_old_ones_in_key_order() {
        let input = Record::new("T", "-").with("Z", "1").with("A", "2");
        let mut ev = event(&input);
        ev.insert(vrl::path!("attributes", "new-b"), Value::from("3"));
        ev.insert(vrl::path!("attributes", "new-a"), Value::from("4"));
        let got = one(ev, &input).map(|r| {
            r.attributes
                .iter()
                .map(|a| a.name_str().into_owned())
                .collect::<Vec<_>>()
        });
        assert_eq!(
            got,
            Ok(vec!["Z".into(), "A".into(), "new-a".into(), "new-b".into()])
        );
    }

    #[test]
    fn scalars_become_their_text() {
        let input = Record::new("T", "-");
        let mut ev = event(&input);
        let t = chrono::Utc.timestamp_opt(774_988_159, 0).single();
        for (name, v) in [
            ("i", Value::Integer(-3)),
            ("f", Value::from_f64_or_zero(1.5)),
            ("b", Value::Boolean(true)),
            ("t", t.map_or(Value::Null, Value::Timestamp)),
        ] {
            ev.insert(vrl::path!("attributes", name), v);
        }
        let r = one(ev, &input);
        let text = |n: &str| {
            r.as_ref()
                .ok()
                .and_then(|r| r.get_str(n))
                .map(str::to_owned)
        };
        assert_eq!(text("i").as_deref(), Some("-3"));
        assert_eq!(text("f").as_deref(), Some("1.5"));
        assert_eq!(text("b").as_deref(), Some("true"));
        assert_eq!(text("t").as_deref(), Some("1994-07-23T18:29:19Z"));
    }

    #[test]
    fn what_cannot_be_a_record_is_a_fault_naming_the_place() {
        let input = Record::new("T", "-");
        let fault = |ev: Value| {
            one(ev, &input)
                .err()
                .map(|f| f.to_string())
                .unwrap_or_default()
        };
        let mut ev = event(&input);
        ev.insert(vrl::path!("attributes", "Bad Name"), Value::from("x"));
        assert!(
            fault(ev).starts_with(".attributes.\"Bad Name\": "),
            "names the attribute"
        );
        let mut ev = event(&input);
        ev.insert(vrl::path!("attributes", "Date"), Value::Null);
        assert!(fault(ev).starts_with(".attributes.Date: is null"));
        let mut ev = event(&input);
        ev.insert(vrl::path!("title"), Value::from("x"));
        assert!(fault(ev).starts_with(".title: a record has only"));
        let mut ev = event(&input);
        ev.insert(vrl::path!("template"), Value::from(""));
        assert!(fault(ev).starts_with(".template: "));
        let mut ev = event(&input);
        ev.remove(vrl::path!("template"), false);
        assert!(fault(ev).starts_with("no .template"));
        let mut ev = event(&input);
        ev.insert(vrl::path!("action"), Value::from("remove"));
        assert!(fault(ev).contains("not an action"));
        assert!(fault(Value::Integer(1)).contains("is an integer, not a record"));
    }

    #[test]
    fn an_array_of_objects_is_several_records_in_order() {
        let input = Record::new("T", "-");
        let mut a = event(&input);
        a.insert(vrl::path!("url"), Value::from("u1"));
        let mut b = event(&input);
        b.insert(vrl::path!("url"), Value::from("u2"));
        let mut out = Vec::new();
        assert_eq!(
            records(&mut Value::Array(vec![a, b]), &input, &mut out),
            Ok(())
        );
        let urls: Vec<_> = out.iter().map(|r| r.url_str().into_owned()).collect();
        assert_eq!(urls, ["u1", "u2"]);
        let mut out = Vec::new();
        let err = records(
            &mut Value::Array(vec![event(&input), Value::Integer(2)]),
            &input,
            &mut out,
        );
        assert!(err.is_err_and(|f| f.to_string().starts_with("item 2 of 2")));
    }
}
