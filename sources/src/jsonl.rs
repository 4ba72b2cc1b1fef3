//! Reading JSON Lines as written by the `jsonl` sink back into records.
//!
//! Each line is one object (docs/formats.md#jsonl):
//!
//! ```text
//! {"template":"FILE","url":"http://x/","attributes":{"Title":"T","Author":["a","b"]}}
//! ```
//!
//! The rules, chosen so that `soif → jsonl → soif` gives back canonical SOIF byte for byte:
//! - a string is the value's UTF-8 bytes; `{"base64":"…"}` is a value that was not UTF-8;
//! - an array of plain values (strings, base64 objects) is a name that was **repeated** in
//!   the record: each element becomes one attribute of that name, in array order, at the
//!   place of the key. (The sink writes all values of a repeated name at its first
//!   occurrence, so repeats that were not adjacent come back grouped there — RFC 2655 §3.3
//!   has no repeated names at all; `Author-1`, `Author-2` are separate keys and keep their
//!   order.)
//! - an array holding objects or arrays is a collapsed list (`Value::List`), e.g.
//!   `"Embed":[{"Type":"PostScript"}]`; any other object is a nested part (`Value::Object`);
//! - numbers and booleans from other producers are taken as their JSON text; `null` is
//!   refused.
//! - `"url"` defaults to `-`; `"action"` is `delete`, `refresh` or `update`.
//!
//! A line that is not such an object is rejected with its line number and byte offset, and
//! reading goes on; a line longer than the maximum record size is skipped without being
//! buffered.

use base64::Engine as _;
use bytes::{Buf, Bytes, BytesMut};
use soif_codecs::{Action, Attribute, Position, Record, Value};
use soif_pipeline::source::Rejection;
use std::sync::Arc;
use tokio_util::codec::Decoder;

type Json = serde_json::Value;

/// A [`Decoder`] from JSON Lines bytes to records. Bad lines are items
/// (`Err(Rejection)`), so the stream goes on after them.
#[derive(Debug)]
pub struct JsonlDecoder {
    input: Option<Arc<str>>,
    max_len: usize,
    /// Bytes of the buffer already searched for a newline.
    scanned: usize,
    /// Offset of the buffer's first byte in the input.
    offset: u64,
    line: u64,
    /// Inside an over-long line: its start and how much was dropped so far.
    discarding: Option<(u64, u64)>,
}

impl JsonlDecoder {
    pub fn new(input: Option<Arc<str>>, max_len: usize) -> JsonlDecoder {
        JsonlDecoder {
            input,
            max_len,
            scanned: 0,
            offset: 0,
            line: 0,
            discarding: None,
        }
    }

    fn position(&self, offset: u64) -> Position {
        Position::new(offset, self.line).with_input(self.input.clone())
    }

    /// Takes one complete line of `len` bytes (plus `nl` newline bytes) off the buffer.
    fn line_item(
        &mut self,
        buf: &mut BytesMut,
        len: usize,
        nl: usize,
    ) -> Option<Result<Record, Rejection>> {
        let start = self.offset;
        let line = buf.split_to(len).freeze();
        buf.advance(nl);
        self.offset += (len + nl) as u64;
        self.scanned = 0;
        self.line += 1;
        let trimmed = trim(&line);
        if trimmed.is_empty() {
            return None;
        }
        let pos = self.position(start);
        Some(parse_line(&line, pos))
    }
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

fn parse_line(line: &Bytes, pos: Position) -> Result<Record, Rejection> {
    let reject = |message: String, pos: Position| Rejection {
        message: format!("{message}, at {pos}"),
        position: pos,
        raw: Some(line_with_newline(line)),
    };
    let json: Json = match serde_json::from_slice(line) {
        Ok(j) => j,
        Err(e) => return Err(reject(format!("invalid JSON ({e})"), pos)),
    };
    match record_from_json(json) {
        Ok(mut record) => {
            let pos = pos.with_url(Some(record.url_str().into_owned()));
            record.position = Some(pos);
            record.raw = Some(line_with_newline(line));
            Ok(record)
        }
        Err(message) => Err(reject(message, pos)),
    }
}

fn line_with_newline(line: &Bytes) -> Bytes {
    let mut v = Vec::with_capacity(line.len() + 1);
    v.extend_from_slice(line);
    v.push(b'\n');
    Bytes::from(v)
}

impl Decoder for JsonlDecoder {
    type Item = Result<Record, Rejection>;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        loop {
            if let Some((start, dropped)) = self.discarding {
                match memchr::memchr(b'\n', buf) {
                    Some(i) => {
                        buf.advance(i + 1);
                        self.offset += (i + 1) as u64;
                        self.line += 1;
                        self.discarding = None;
                        let total = dropped + i as u64;
                        let pos = self.position(start);
                        return Ok(Some(Err(Rejection {
                            message: format!(
                                "line of {total} bytes is longer than the maximum record size {}, at {pos}",
                                self.max_len
                            ),
                            position: pos,
                            raw: None,
                        })));
                    }
                    None => {
                        let n = buf.len();
                        buf.advance(n);
                        self.offset += n as u64;
                        self.discarding = Some((start, dropped + n as u64));
                        return Ok(None);
                    }
                }
            }
            match memchr::memchr(b'\n', &buf[self.scanned..]) {
                Some(i) => {
                    let len = self.scanned + i;
                    if len > self.max_len {
                        // Account for the line as if it were being discarded, then finish.
                        self.discarding = Some((self.offset, 0));
                        self.scanned = 0;
                        continue;
                    }
                    let nl_len = 1;
                    let len = if len > 0 && buf[len - 1] == b'\r' {
                        len - 1
                    } else {
                        len
                    };
                    let nl = nl_len + (self.scanned + i - len);
                    match self.line_item(buf, len, nl) {
                        Some(item) => return Ok(Some(item)),
                        None => continue,
                    }
                }
                None => {
                    if buf.len() > self.max_len {
                        self.discarding = Some((self.offset, 0));
                        self.scanned = 0;
                        continue;
                    }
                    self.scanned = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        if let Some(item) = self.decode(buf)? {
            return Ok(Some(item));
        }
        if let Some((start, dropped)) = self.discarding.take() {
            let pos = self.position(start);
            return Ok(Some(Err(Rejection {
                message: format!(
                    "line of {dropped} bytes is longer than the maximum record size {}, at {pos}",
                    self.max_len
                ),
                position: pos,
                raw: None,
            })));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        // The last line has no newline.
        let len = buf.len();
        Ok(self.line_item(buf, len, 0))
    }
}

/// Converts one parsed JSON object into a record (the rules in the module doc).
pub fn record_from_json(json: Json) -> Result<Record, String> {
    let Json::Object(mut obj) = json else {
        return Err("a JSON Lines record must be an object".to_string());
    };
    let template = match obj.shift_remove("template") {
        Some(v) => plain_bytes(&v).ok_or("\"template\" must be a string")?,
        None => return Err("missing \"template\"".to_string()),
    };
    let url = match obj.shift_remove("url") {
        Some(v) => plain_bytes(&v).ok_or("\"url\" must be a string")?,
        None => Bytes::from_static(b"-"),
    };
    let mut record = Record::new(template, url);
    if let Some(a) = obj.shift_remove("action") {
        let text = a.as_str().ok_or("\"action\" must be a string")?;
        record.action =
            Some(Action::parse(text).ok_or_else(|| format!("unknown action {text:?}"))?);
    }
    match obj.shift_remove("attributes") {
        Some(Json::Object(attrs)) => push_attributes(attrs, &mut record.attributes)?,
        Some(_) => return Err("\"attributes\" must be an object".to_string()),
        None => {}
    }
    if let Some((k, _)) = obj.iter().next() {
        return Err(format!("unknown key {k:?}"));
    }
    Ok(record)
}

fn push_attributes(
    attrs: serde_json::Map<String, Json>,
    out: &mut Vec<Attribute>,
) -> Result<(), String> {
    for (name, v) in attrs {
        let name_bytes = Bytes::from(name.clone().into_bytes());
        match v {
            // Two or more plain values: a name repeated in the record (the jsonl sink
            // writes one array at the first occurrence). A one-item array can only come
            // from a collapsed list (`Author-1` alone), so it stays a list.
            Json::Array(items)
                if items.len() > 1 && items.iter().all(|i| plain_bytes(i).is_some()) =>
            {
                for item in &items {
                    // `all` above checked every item.
                    if let Some(b) = plain_bytes(item) {
                        out.push(Attribute {
                            name: name_bytes.clone(),
                            value: Value::Bytes(b),
                        });
                    }
                }
            }
            other => out.push(Attribute {
                name: name_bytes,
                value: value_from_json(other).map_err(|e| format!("attribute {name:?}: {e}"))?,
            }),
        }
    }
    Ok(())
}

fn value_from_json(v: Json) -> Result<Value, String> {
    if let Some(b) = plain_bytes(&v) {
        return Ok(Value::Bytes(b));
    }
    match v {
        Json::Array(items) => Ok(Value::List(
            items
                .into_iter()
                .map(value_from_json)
                .collect::<Result<_, _>>()?,
        )),
        Json::Object(map) => {
            let mut attrs = Vec::with_capacity(map.len());
            push_attributes(map, &mut attrs)?;
            Ok(Value::Object(attrs))
        }
        Json::Null => Err("null is not a value".to_string()),
        _ => Err("unsupported JSON value".to_string()),
    }
}

/// A plain value: a string, a number or boolean (as its text), or `{"base64": "…"}`.
fn plain_bytes(v: &Json) -> Option<Bytes> {
    match v {
        Json::String(s) => Some(Bytes::copy_from_slice(s.as_bytes())),
        Json::Number(n) => Some(Bytes::from(n.to_string())),
        Json::Bool(b) => Some(Bytes::from_static(if *b { b"true" } else { b"false" })),
        Json::Object(m) if m.len() == 1 => {
            let s = m.get("base64")?.as_str()?;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .ok()
                .map(Bytes::from)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8], max: usize) -> Vec<Result<Record, Rejection>> {
        let mut d = JsonlDecoder::new(Some(Arc::from("t.jsonl")), max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        // Feed one byte at a time: every split point must give the same result.
        for b in input {
            buf.extend_from_slice(&[*b]);
            while let Some(item) = d.decode(&mut buf).unwrap() {
                out.push(item);
            }
        }
        while let Some(item) = d.decode_eof(&mut buf).unwrap() {
            out.push(item);
        }
        out
    }

    #[test]
    fn reads_the_sink_format() {
        let line = br#"{"template":"FILE","url":"http://x/","action":"delete","attributes":{"Title":"T","Author":["a","b"],"Bin":{"base64":"/w=="},"Embed":[{"Type":"PS"}]}}"#;
        let out = decode_all(line, 1 << 20);
        assert_eq!(out.len(), 1);
        let r = out[0].as_ref().unwrap();
        assert_eq!(r.template.as_ref(), b"FILE");
        assert_eq!(r.action, Some(Action::Delete));
        let names: Vec<_> = r
            .attributes
            .iter()
            .map(|a| a.name_str().into_owned())
            .collect();
        assert_eq!(names, ["Title", "Author", "Author", "Bin", "Embed"]);
        assert_eq!(
            r.attributes[3].value,
            Value::Bytes(Bytes::from_static(&[0xff]))
        );
        assert_eq!(
            r.attributes[4].value,
            Value::List(vec![Value::Object(vec![Attribute::new("Type", "PS")])])
        );
        assert_eq!(r.flattened().attributes[4].name_str(), "Embed<1>-Type");
    }

    #[test]
    fn bad_lines_are_rejected_and_reading_goes_on() {
        let input = b"{\"template\":\"A\"}\nnot json\n\n{\"url\":\"x\"}\r\n{\"template\":\"B\"}";
        let out = decode_all(input, 1 << 20);
        assert_eq!(out.len(), 4);
        assert!(out[0].is_ok());
        let e = out[1].as_ref().unwrap_err();
        assert!(e.message.contains("invalid JSON"), "{}", e.message);
        assert!(
            e.message.contains("t.jsonl: byte 17, record 2"),
            "{}",
            e.message
        );
        assert_eq!(e.raw.as_deref(), Some(&b"not json\n"[..]));
        let e = out[2].as_ref().unwrap_err();
        assert!(e.message.contains("missing \"template\""), "{}", e.message);
        assert_eq!(out[3].as_ref().unwrap().template.as_ref(), b"B");
    }

    #[test]
    fn overlong_lines_are_skipped() {
        let input = b"{\"template\":\"A\",\"url\":\"0123456789012345678901234567890\"}\n{\"template\":\"B\"}\n";
        let out = decode_all(input, 30);
        assert_eq!(out.len(), 2);
        assert!(out[0].as_ref().unwrap_err().message.contains("longer than"));
        assert_eq!(out[1].as_ref().unwrap().template.as_ref(), b"B");
    }
}
