//! JSON Lines: one object per record (docs/formats.md#jsonl).
//!
//! ```text
//! {"template":"FILE","url":"http://x/","attributes":{"Title":"T","Author-1":"a"}}
//! {"template":"FILE","url":"http://y/","action":"delete","attributes":{}}
//! ```
//!
//! - a value that is valid UTF-8 is a string; any other value is `{"base64":"…"}`
//!   (standard alphabet, padded), or with `--charset latin1` a string read as ISO 8859-1;
//! - a name repeated within a record becomes one array, at its first occurrence, holding
//!   every value in order (nothing is dropped); `Author-1`, `Author-2` are different names
//!   and stay separate keys in input order;
//! - after `collapse`, a list is an array and an embedded part a nested object;
//! - `"action"` is present only inside a Harvest envelope;
//! - a name that is not UTF-8 (RFC 2655 names are ASCII) is written as Latin-1 text and
//!   counted as a warning.
//!
//! Reading these lines back (`soif_sources::jsonl`) undoes each rule, so
//! `soif → jsonl → soif` reproduces canonical SOIF byte for byte (with `--charset utf8`,
//! and as long as a repeated name's occurrences are adjacent — RFC 2655 §3.3 has no
//! repeated names at all).
//!
//! The writer escapes by hand into one reused buffer: serialising through `serde_json`
//! values would allocate per attribute.

use crate::Charset;
use base64::Engine as _;
use soif_codecs::{Attribute, Record, Value};
use soif_pipeline::{Error, Sink, SinkError};
use std::collections::HashMap;
use std::io::Write;

/// `[[sink]] format = "jsonl"` / `--to jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// A path, or `-`/none for stdout.
    pub output: Option<String>,
    /// Values that are not UTF-8: `{"base64": …}` (`utf8`) or read as ISO 8859-1.
    pub charset: Charset,
}

/// Bytes buffered before a write to the output.
const FLUSH_AT: usize = 256 * 1024;

/// The `jsonl` sink.
pub struct JsonlSink {
    out: Box<dyn Write + Send>,
    buf: Vec<u8>,
    charset: Charset,
    warnings: u64,
}

impl JsonlSink {
    pub fn new(out: Box<dyn Write + Send>, charset: Charset) -> JsonlSink {
        JsonlSink {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 64 * 1024),
            charset,
            warnings: 0,
        }
    }
}

impl Sink for JsonlSink {
    fn name(&self) -> &str {
        "jsonl"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        self.warnings += encode_record(record, self.charset, &mut self.buf);
        if self.buf.len() >= FLUSH_AT {
            self.out
                .write_all(&self.buf)
                .map_err(|e| Error::io("writing JSON Lines", e))?;
            self.buf.clear();
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.out
            .write_all(&self.buf)
            .and_then(|()| self.out.flush())
            .map_err(|e| Error::io("writing JSON Lines", e))?;
        self.buf.clear();
        Ok(())
    }

    fn warnings(&self) -> u64 {
        self.warnings
    }
}

/// Appends one record as a JSON line to `out`. Returns the number of warnings (names
/// that were not UTF-8 and were read as Latin-1).
pub fn encode_record(record: &Record, charset: Charset, out: &mut Vec<u8>) -> u64 {
    let mut warnings = 0;
    out.extend_from_slice(b"{\"template\":");
    write_bytes(&record.template, charset, out);
    out.extend_from_slice(b",\"url\":");
    write_bytes(&record.url, charset, out);
    if let Some(action) = record.action {
        out.extend_from_slice(b",\"action\":\"");
        out.extend_from_slice(action.as_str().as_bytes());
        out.push(b'"');
    }
    out.extend_from_slice(b",\"attributes\":");
    write_attributes(&record.attributes, charset, out, &mut warnings);
    out.extend_from_slice(b"}\n");
    warnings
}

fn write_attributes(attrs: &[Attribute], charset: Charset, out: &mut Vec<u8>, warnings: &mut u64) {
    out.push(b'{');
    if !has_repeats(attrs) {
        for (i, a) in attrs.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_key(&a.name, out, warnings);
            write_value(&a.value, charset, out, warnings);
        }
    } else {
        // Group by name in order of first occurrence.
        let mut groups: Vec<(&[u8], Vec<&Value>)> = Vec::new();
        let mut index: HashMap<&[u8], usize> = HashMap::new();
        for a in attrs {
            match index.get(a.name.as_ref()) {
                Some(&g) => groups[g].1.push(&a.value),
                None => {
                    index.insert(a.name.as_ref(), groups.len());
                    groups.push((a.name.as_ref(), vec![&a.value]));
                }
            }
        }
        for (i, (name, values)) in groups.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_key(name, out, warnings);
            if let [one] = values[..] {
                write_value(one, charset, out, warnings);
            } else {
                out.push(b'[');
                for (j, v) in values.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    write_value(v, charset, out, warnings);
                }
                out.push(b']');
            }
        }
    }
    out.push(b'}');
}

/// True when a name occurs twice. Quadratic on the small records that are the rule
/// (cheaper than hashing), hashed beyond that.
fn has_repeats(attrs: &[Attribute]) -> bool {
    if attrs.len() <= 32 {
        for (i, a) in attrs.iter().enumerate() {
            if attrs[i + 1..].iter().any(|b| b.name == a.name) {
                return true;
            }
        }
        false
    } else {
        let mut seen = std::collections::HashSet::with_capacity(attrs.len());
        !attrs.iter().all(|a| seen.insert(a.name.as_ref()))
    }
}

fn write_key(name: &[u8], out: &mut Vec<u8>, warnings: &mut u64) {
    match std::str::from_utf8(name) {
        Ok(s) => write_str(s, out),
        Err(_) => {
            *warnings += 1;
            write_latin1(name, out);
        }
    }
    out.push(b':');
}

fn write_value(v: &Value, charset: Charset, out: &mut Vec<u8>, warnings: &mut u64) {
    match v {
        Value::Bytes(b) => write_bytes(b, charset, out),
        Value::List(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, charset, out, warnings);
            }
            out.push(b']');
        }
        Value::Object(attrs) => write_attributes(attrs, charset, out, warnings),
    }
}

/// A plain value: a string when UTF-8 (or under Latin-1), else a base64 object.
fn write_bytes(b: &[u8], charset: Charset, out: &mut Vec<u8>) {
    if write_text(b, out) {
        return;
    }
    match charset {
        Charset::Latin1 => write_latin1(b, out),
        Charset::Utf8 => {
            out.extend_from_slice(b"{\"base64\":\"");
            let start = out.len();
            let len = base64::encoded_len(b.len(), true).unwrap_or(0);
            out.resize(start + len, 0);
            let written = base64::engine::general_purpose::STANDARD
                .encode_slice(b, &mut out[start..])
                .unwrap_or(0);
            out.truncate(start + written);
            out.extend_from_slice(b"\"}");
        }
    }
}

/// For each byte: 0 = copy, otherwise the escape letter (`u` for `\u00XX`).
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t[0x08] = b'b';
    t[0x0c] = b'f';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// Flags (bit 7 of each byte) the bytes of `w` that need escaping: below 0x20, `"` or
/// `\`. These are the classic "has a byte less than n" / "has a zero byte" bit tricks:
/// borrows can flag a byte after a true hit, but never before, so the lowest flag is
/// exactly the first byte to escape.
#[inline]
fn escape_mask(w: u64) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let control = w.wrapping_sub(LO * 0x20) & !w & HI;
    let q = w ^ (LO * b'"' as u64);
    let quote = q.wrapping_sub(LO) & !q & HI;
    let b = w ^ (LO * b'\\' as u64);
    let backslash = b.wrapping_sub(LO) & !b & HI;
    control | quote | backslash
}

/// A JSON string, escaping only what JSON requires.
fn write_str(s: &str, out: &mut Vec<u8>) {
    // Already valid UTF-8: the scan below cannot fail.
    write_text(s.as_bytes(), out);
}

/// Writes `bytes` as a JSON string if they are valid UTF-8 and returns true; otherwise
/// writes nothing and returns false. One pass for the common case: the text is scanned
/// eight bytes at a time for the first byte to escape or the first non-ASCII byte; UTF-8
/// is validated (once, from there to the end) only when a non-ASCII byte shows up.
fn write_text(bytes: &[u8], out: &mut Vec<u8>) -> bool {
    const HI: u64 = 0x8080_8080_8080_8080;
    let mark = out.len();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let n = bytes.len();
    let mut start = 0;
    let mut i = 0;
    // Non-ASCII bytes still to be checked; 0 once the rest is known to be UTF-8.
    let mut unchecked = HI;
    while let Some(c) = bytes.get(i..i + 8) {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let m = escape_mask(w) | (w & unchecked);
        if m == 0 {
            i += 8;
            continue;
        }
        let at = i + (m.trailing_zeros() / 8) as usize;
        let b = bytes[at];
        if b >= 0x80 {
            // Everything before `at` was ASCII, so `at` is a character boundary.
            if std::str::from_utf8(&bytes[at..]).is_err() {
                out.truncate(mark);
                return false;
            }
            unchecked = 0;
            i = at;
            continue;
        }
        out.extend_from_slice(&bytes[start..at]);
        escape_byte(b, ESCAPE[b as usize], out);
        start = at + 1;
        i = at + 1;
    }
    if unchecked != 0 && !bytes[i..].is_ascii() && std::str::from_utf8(&bytes[i..]).is_err() {
        out.truncate(mark);
        return false;
    }
    while i < n {
        let b = bytes[i];
        let esc = ESCAPE[b as usize];
        if esc != 0 {
            out.extend_from_slice(&bytes[start..i]);
            escape_byte(b, esc, out);
            start = i + 1;
        }
        i += 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
    true
}

fn escape_byte(b: u8, esc: u8, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    if esc == b'u' {
        out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[(b >> 4) as usize],
            HEX[(b & 15) as usize],
        ]);
    } else {
        out.extend_from_slice(&[b'\\', esc]);
    }
}

/// Bytes read as ISO 8859-1: each byte is the code point of the same number.
fn write_latin1(b: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in b {
        if c >= 0x80 {
            out.extend_from_slice(&[0xc0 | (c >> 6), 0x80 | (c & 0x3f)]);
        } else {
            let esc = ESCAPE[c as usize];
            if esc == 0 {
                out.push(c);
            } else {
                escape_byte(c, esc, out);
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use soif_codecs::Action;

    fn line(r: &Record, charset: Charset) -> String {
        let mut out = Vec::new();
        encode_record(r, charset, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn plain_record() {
        let r = Record::new("FILE", "http://x/")
            .with("Title", "a \"quoted\"\n\ttitle\\ \u{1}")
            .with("Author-1", "é");
        assert_eq!(
            line(&r, Charset::Utf8),
            "{\"template\":\"FILE\",\"url\":\"http://x/\",\"attributes\":{\"Title\":\"a \\\"quoted\\\"\\n\\ttitle\\\\ \\u0001\",\"Author-1\":\"é\"}}\n"
        );
        // Whatever serde_json makes of it is the same text.
        let v: serde_json::Value = serde_json::from_str(&line(&r, Charset::Utf8)).unwrap();
        assert_eq!(v["attributes"]["Title"], "a \"quoted\"\n\ttitle\\ \u{1}");
    }

    #[test]
    fn binary_latin1_repeats_action_and_collapsed() {
        let mut r = Record::new("FILE", "-")
            .with("Bin", vec![0xffu8, 0, 1])
            .with("K", "a")
            .with("Name", vec![b'c', b'a', b'f', 0xe9])
            .with("K", "b")
            .with("Author", Value::List(vec!["x".into(), "y".into()]))
            .with(
                "Embed",
                Value::List(vec![Value::Object(vec![Attribute::new("Type", "PS")])]),
            );
        r.action = Some(Action::Delete);
        assert_eq!(
            line(&r, Charset::Utf8),
            "{\"template\":\"FILE\",\"url\":\"-\",\"action\":\"delete\",\"attributes\":{\"Bin\":{\"base64\":\"/wAB\"},\"K\":[\"a\",\"b\"],\"Name\":{\"base64\":\"Y2Fm6Q==\"},\"Author\":[\"x\",\"y\"],\"Embed\":[{\"Type\":\"PS\"}]}}\n"
        );
        let l = line(&r, Charset::Latin1);
        assert!(l.contains("\"Name\":\"café\""), "{l}");
        assert!(l.contains("\"Bin\":\"ÿ\\u0000\\u0001\""), "{l}");
    }

    #[test]
    fn escaping_agrees_with_serde_json_at_every_offset() {
        let specials = ['"', '\\', '\n', '\u{1}', '\u{1f}', ' ', 'é', '\u{7f}', 'x'];
        for len in 0..24 {
            for (k, c) in specials.iter().enumerate() {
                for at in 0..len {
                    let text: String = (0..len)
                        .map(|i| if i == at { *c } else { specials[(i + k) % 9] })
                        .collect();
                    let mut out = Vec::new();
                    write_str(&text, &mut out);
                    let back: String = serde_json::from_slice(&out).unwrap();
                    assert_eq!(back, text);
                    assert_eq!(out, serde_json::to_vec(&text).unwrap(), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn random_mixtures_agree_with_serde_json() {
        let alphabet: Vec<char> = "ab \"\\\n\t\u{0}\u{1f}é€😀\u{7f}z".chars().collect();
        let mut seed = 12345u64;
        for _ in 0..3000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = (seed >> 33) as usize % 40;
            let text: String = (0..len)
                .map(|i| alphabet[((seed >> (i % 50)) as usize + i * 7) % alphabet.len()])
                .collect();
            let mut out = Vec::new();
            assert!(write_text(text.as_bytes(), &mut out));
            assert_eq!(out, serde_json::to_vec(&text).unwrap(), "{text:?}");
            // Cut inside a multi-byte character: not UTF-8 any more, nothing written.
            if let Some(p) = text.char_indices().find(|(_, c)| c.len_utf8() > 1) {
                let cut = &text.as_bytes()[..p.0 + 1];
                let mut out = vec![b'x'];
                assert!(!write_text(cut, &mut out));
                assert_eq!(out, b"x");
            }
        }
    }

    #[test]
    fn invalid_utf8_anywhere_is_base64() {
        for len in 1..20 {
            for at in 0..len {
                let mut v = vec![b'a'; len];
                v[at] = 0xff;
                let mut out = Vec::new();
                write_bytes(&v, Charset::Utf8, &mut out);
                let j: serde_json::Value = serde_json::from_slice(&out).unwrap();
                let b64 = j["base64"].as_str().unwrap();
                assert_eq!(
                    base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .unwrap(),
                    v
                );
                // A valid multi-byte character at the same place stays text.
                let mut t = vec![b'a'; len];
                t.splice(at..at + 1, "é".bytes());
                let mut out = Vec::new();
                write_bytes(&t, Charset::Utf8, &mut out);
                assert_eq!(
                    out,
                    serde_json::to_vec(std::str::from_utf8(&t).unwrap()).unwrap()
                );
            }
        }
    }

    #[test]
    fn many_attributes_with_repeats() {
        let mut r = Record::new("T", "-");
        for i in 0..40 {
            r.push(&format!("A{}", i % 35), format!("{i}"));
        }
        let v: serde_json::Value = serde_json::from_str(&line(&r, Charset::Utf8)).unwrap();
        assert_eq!(v["attributes"]["A0"], serde_json::json!(["0", "35"]));
        assert_eq!(v["attributes"].as_object().unwrap().len(), 35);
    }
}
