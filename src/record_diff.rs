//! Records as `soif test` and `soif try` show them: in the JSON Lines shape
//! (docs/formats.md#jsonl), values printed readably, and the differences between two
//! records attribute by attribute.
//!
//! ```text
//! url: expected "http://example.org/a", actual "http://example.org/b"
//! attributes.Title: expected "Maps", actual "Map"
//! attributes.Year: missing (expected "1995")
//! attributes.Extra: not expected ("x")
//! ```
//!
//! A value that is not UTF-8 is shown escaped, `b"caf\xe9"`; a string is shown as a JSON
//! string (`"a\tb"`); a value of several lines on either side is shown as a line diff.
//! Attribute order is not compared.

use base64::Engine as _;
use serde_json::{Map, Value as Json};
use similar::{ChangeTag, TextDiff};
use soif_codecs::Record;
use soif_sinks::jsonl::encode_record;
use soif_sinks::Charset;

/// A record in the JSON Lines shape (`{"template", "url", "action"?, "attributes"}`), as
/// the `jsonl` sink writes it.
pub fn shape(record: &Record) -> Json {
    let mut line = Vec::new();
    encode_record(record, Charset::Utf8, &mut line);
    // The sink writes valid JSON; an object is what it writes.
    serde_json::from_slice(&line).unwrap_or_else(|e| Json::String(format!("(unreadable: {e})")))
}

/// Records written as JSON Lines, read as the `jsonl` source reads them and put in the
/// shape the sink writes (so `{"base64":"TWFwcw=="}` and `"Maps"`, or `1995` and
/// `"1995"`, are the same value). Blank lines are skipped. An error names the line.
pub fn parse_lines(text: &str) -> Result<Vec<Json>, String> {
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let json: Json = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let record = soif_sources::jsonl::record_from_json(json)
            .map_err(|e| format!("line {}: {e}", i + 1))?;
        records.push(shape(&record));
    }
    Ok(records)
}

/// One line of JSON: the record as it would be written.
pub fn line(record: &Json) -> String {
    record.to_string()
}

/// A value for a person to read: strings as JSON strings, values that are not UTF-8
/// (`{"base64": …}` in JSON Lines) as escaped bytes `b"…"`, lists and parts spelled out.
pub fn show(value: &Json) -> String {
    match value {
        Json::String(s) => Json::String(s.clone()).to_string(),
        Json::Object(o) => match binary(o) {
            Some(bytes) => escaped(&bytes),
            None => {
                let items: Vec<String> = o
                    .iter()
                    .map(|(k, v)| format!("{}: {}", Json::String(k.clone()), show(v)))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
        },
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(show).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// The bytes of `{"base64": "…"}`, the JSON Lines form of a value that is not UTF-8.
fn binary(o: &Map<String, Json>) -> Option<Vec<u8>> {
    match (o.len(), o.get("base64")) {
        (1, Some(Json::String(b64))) => base64::engine::general_purpose::STANDARD.decode(b64).ok(),
        _ => None,
    }
}

/// `b"caf\xe9"`: valid UTF-8 as text (control characters, quotes and backslashes
/// escaped), every other byte as `\xNN`.
pub fn escaped(bytes: &[u8]) -> String {
    let mut out = String::from("b\"");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => out.extend(c.escape_default()),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

/// One difference between two records: where (`url`, `attributes.Title`), and the value
/// on each side (`None`: absent on that side).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub path: String,
    pub left: Option<Json>,
    pub right: Option<Json>,
}

/// The differences from `left` to `right` (records in the JSON Lines shape): the
/// template, URL and action, then each attribute, in `left`'s order and then those only
/// `right` has. Empty when the records are the same (attribute order aside).
pub fn changes(left: &Json, right: &Json) -> Vec<Change> {
    let mut out = Vec::new();
    for key in ["template", "url", "action"] {
        let (l, r) = (left.get(key), right.get(key));
        if l != r {
            out.push(Change {
                path: key.to_string(),
                left: l.cloned(),
                right: r.cloned(),
            });
        }
    }
    let empty = Map::new();
    let attributes = |r: &'_ Json| -> Map<String, Json> {
        r.get("attributes")
            .and_then(Json::as_object)
            .unwrap_or(&empty)
            .clone()
    };
    let (l, r) = (attributes(left), attributes(right));
    for (name, lv) in &l {
        let rv = r.get(name);
        if rv != Some(lv) {
            out.push(Change {
                path: format!("attributes.{name}"),
                left: Some(lv.clone()),
                right: rv.cloned(),
            });
        }
    }
    for (name, rv) in &r {
        if !l.contains_key(name) {
            out.push(Change {
                path: format!("attributes.{name}"),
                left: None,
                right: Some(rv.clone()),
            });
        }
    }
    out
}

/// A change as `soif test` reports it, `left` being what was expected: one line, or for
/// values of several lines a line diff (`-` expected, `+` actual) below the path.
pub fn expected_actual(change: &Change, indent: &str) -> String {
    match (&change.left, &change.right) {
        (Some(l), Some(r)) => match (multiline(l), multiline(r)) {
            (Some(l), Some(r)) => format!(
                "{indent}{}: (- expected, + actual)\n{}",
                change.path,
                line_diff(l, r, &format!("{indent}  "))
            ),
            _ => format!(
                "{indent}{}: expected {}, actual {}",
                change.path,
                show(l),
                show(r)
            ),
        },
        (Some(l), None) => format!("{indent}{}: missing (expected {})", change.path, show(l)),
        (None, Some(r)) => format!("{indent}{}: not expected ({})", change.path, show(r)),
        (None, None) => String::new(),
    }
}

/// A change as `soif try --changes` shows it, `left` being the record before the chain:
/// `- name: old` (removed), `+ name: new` (added), `~ name: old -> new` (changed).
pub fn before_after(change: &Change, indent: &str) -> String {
    match (&change.left, &change.right) {
        (Some(l), Some(r)) => match (multiline(l), multiline(r)) {
            (Some(l), Some(r)) => format!(
                "{indent}~ {}:\n{}",
                change.path,
                line_diff(l, r, &format!("{indent}    "))
            ),
            _ => format!("{indent}~ {}: {} -> {}", change.path, show(l), show(r)),
        },
        (Some(l), None) => format!("{indent}- {}: {}", change.path, show(l)),
        (None, Some(r)) => format!("{indent}+ {}: {}", change.path, show(r)),
        (None, None) => String::new(),
    }
}

/// The text of a string value that spans several lines.
fn multiline(v: &Json) -> Option<&str> {
    v.as_str()
        .filter(|s| s.trim_end_matches('\n').contains('\n'))
}

/// A line diff of two texts: `-` lines only in `old`, `+` lines only in `new`, ` ` both.
fn line_diff(old: &str, new: &str, indent: &str) -> String {
    let diff = TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
            ChangeTag::Equal => ' ',
        };
        let text = change.value().trim_end_matches('\n');
        out.push(format!("{indent}{sign} {text}"));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn binary_values_are_shown_escaped() {
        let record = Record::new("FILE", "http://x/").with("Title", b"caf\xe9\t\"x\"".to_vec());
        let shaped = shape(&record);
        let title = &shaped["attributes"]["Title"];
        assert!(title.get("base64").is_some(), "{shaped}");
        assert_eq!(show(title), r#"b"caf\xe9\t\"x\"""#);
        assert_eq!(show(&json!("a\tb")), r#""a\tb""#);
        assert_eq!(
            show(&json!(["a", {"Type": "PS"}])),
            r#"["a", {"Type": "PS"}]"#
        );
    }

    #[test]
    fn expected_lines_are_read_as_the_jsonl_source_reads_them() {
        let lines = parse_lines(
            "\n{\"template\":\"FILE\",\"url\":\"http://x/\",\"attributes\":{\"T\":{\"base64\":\"TWFwcw==\"},\"Y\":1995}}\n",
        )
        .unwrap();
        assert_eq!(
            lines,
            vec![json!({"template":"FILE","url":"http://x/","attributes":{"T":"Maps","Y":"1995"}})]
        );
        let e = parse_lines("{\"template\":\"FILE\"}\n{\"url\":1}\n").unwrap_err();
        assert!(e.starts_with("line 2: "), "{e}");
        assert!(parse_lines("{oops").unwrap_err().starts_with("line 1: "));
    }

    #[test]
    fn changes_name_each_attribute() {
        let a = json!({"template":"FILE","url":"u","attributes":{"T":"Maps","Y":"1995","Z":"z"}});
        let b = json!({"template":"FILE","url":"v","attributes":{"Z":"z","T":"Map","X":"x"}});
        let c = changes(&a, &b);
        let text: Vec<String> = c.iter().map(|c| expected_actual(c, "")).collect();
        assert_eq!(
            text,
            vec![
                "url: expected \"u\", actual \"v\"",
                "attributes.T: expected \"Maps\", actual \"Map\"",
                "attributes.Y: missing (expected \"1995\")",
                "attributes.X: not expected (\"x\")",
            ]
        );
        assert!(changes(&a, &a).is_empty());
        let text: Vec<String> = c.iter().map(|c| before_after(c, "")).collect();
        assert_eq!(text[1], "~ attributes.T: \"Maps\" -> \"Map\"");
        assert_eq!(text[2], "- attributes.Y: \"1995\"");
        assert_eq!(text[3], "+ attributes.X: \"x\"");
    }

    #[test]
    fn values_of_several_lines_are_diffed_by_line() {
        let c = Change {
            path: "attributes.Description".into(),
            left: Some(json!("one\ntwo\nthree\n")),
            right: Some(json!("one\n2\nthree\n")),
        };
        assert_eq!(
            expected_actual(&c, ""),
            "attributes.Description: (- expected, + actual)\n    one\n  - two\n  + 2\n    three"
        );
    }
}
