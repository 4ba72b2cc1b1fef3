//! Packed records: a compact binary form of a whole [`Record`], for temporary files
//! written and read back by the same process (the `order` transform's sorted runs, the
//! server's spool of submitted records).
//!
//! SOIF itself would lose what the engine still needs after a sort (the action, the
//! position for error messages, the original bytes for `--quarantine`, lenient-mode
//! repairs, collapsed lists), so these files use this private, length-prefixed
//! form. Integers are LEB128 varints; a byte string is its length then its bytes.
//!
//! ```text
//! record   = bytes(template) bytes(url) u8(action) position raw repairs attrs
//! action   = 0 none | 1 delete | 2 refresh | 3 update
//! position = 0 | 1 optbytes(input) varint(offset) varint(record) optbytes(url)
//! raw      = 0 | 1 bytes
//! repairs  = varint(n) { varint(offset) bytes(message) }*n
//! attrs    = varint(n) { bytes(name) value }*n
//! value    = 0 bytes | 1 varint(n) value*n | 2 attrs
//! ```
//!
//! The files are written and read back by the same process, but decoding still checks
//! every length against the bytes at hand, so a damaged file is an error, not a panic or a
//! huge allocation.

use crate::{Action, Attribute, Position, Record, Repair, Value};
use bytes::{Buf, Bytes};
use std::io::{self, BufRead, Write};
use std::sync::Arc;

/// Appends a varint.
pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_opt(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => out.push(0),
        Some(b) => {
            out.push(1);
            put_bytes(out, b);
        }
    }
}

/// Serializes a record (appending to `out`).
pub fn encode(record: &Record, out: &mut Vec<u8>) {
    put_bytes(out, &record.template);
    put_bytes(out, &record.url);
    out.push(match record.action {
        None => 0,
        Some(Action::Delete) => 1,
        Some(Action::Refresh) => 2,
        Some(Action::Update) => 3,
    });
    match &record.position {
        None => out.push(0),
        Some(p) => {
            out.push(1);
            put_opt(out, p.input.as_deref().map(str::as_bytes));
            put_varint(out, p.offset);
            put_varint(out, p.record);
            put_opt(out, p.url.as_deref().map(str::as_bytes));
        }
    }
    put_opt(out, record.raw.as_deref());
    put_varint(out, record.repairs.len() as u64);
    for r in &record.repairs {
        put_varint(out, r.offset);
        put_bytes(out, r.message.as_bytes());
    }
    put_attrs(out, &record.attributes);
}

fn put_attrs(out: &mut Vec<u8>, attrs: &[Attribute]) {
    put_varint(out, attrs.len() as u64);
    for a in attrs {
        put_bytes(out, &a.name);
        put_value(out, &a.value);
    }
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Bytes(b) => {
            out.push(0);
            put_bytes(out, b);
        }
        Value::List(items) => {
            out.push(1);
            put_varint(out, items.len() as u64);
            items.iter().for_each(|i| put_value(out, i));
        }
        Value::Object(attrs) => {
            out.push(2);
            put_attrs(out, attrs);
        }
    }
}

/// Why a packed record could not be read back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PackedError {
    /// The buffer ended inside a field.
    #[error("packed record truncated")]
    Truncated,
    /// A tag or a number that this format never writes.
    #[error("packed record damaged: {0}")]
    Damaged(&'static str),
}

struct Reader {
    buf: Bytes,
}

impl Reader {
    fn u8(&mut self) -> Result<u8, PackedError> {
        if self.buf.is_empty() {
            return Err(PackedError::Truncated);
        }
        Ok(self.buf.get_u8())
    }

    fn varint(&mut self) -> Result<u64, PackedError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(PackedError::Damaged("varint too long"))
    }

    /// A count of items that each take at least one byte: never more than remain.
    fn count(&mut self) -> Result<usize, PackedError> {
        let n = self.varint()?;
        if n > self.buf.len() as u64 {
            return Err(PackedError::Truncated);
        }
        Ok(n as usize)
    }

    fn bytes(&mut self) -> Result<Bytes, PackedError> {
        let n = self.varint()?;
        if n > self.buf.len() as u64 {
            return Err(PackedError::Truncated);
        }
        Ok(self.buf.split_to(n as usize))
    }

    fn opt(&mut self) -> Result<Option<Bytes>, PackedError> {
        match self.u8()? {
            0 => Ok(None),
            1 => self.bytes().map(Some),
            _ => Err(PackedError::Damaged("bad option tag")),
        }
    }

    fn text(&mut self) -> Result<String, PackedError> {
        String::from_utf8(self.bytes()?.to_vec())
            .map_err(|_| PackedError::Damaged("text not UTF-8"))
    }

    fn opt_text(&mut self) -> Result<Option<String>, PackedError> {
        self.opt()?
            .map(|b| {
                String::from_utf8(b.to_vec()).map_err(|_| PackedError::Damaged("text not UTF-8"))
            })
            .transpose()
    }

    fn attrs(&mut self, depth: u32) -> Result<Vec<Attribute>, PackedError> {
        let n = self.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let name = self.bytes()?;
            let value = self.value(depth)?;
            out.push(Attribute { name, value });
        }
        Ok(out)
    }

    fn value(&mut self, depth: u32) -> Result<Value, PackedError> {
        // Collapsed records nest two or three levels; far deeper means a damaged file.
        if depth > 64 {
            return Err(PackedError::Damaged("values nested too deeply"));
        }
        match self.u8()? {
            0 => self.bytes().map(Value::Bytes),
            1 => {
                let n = self.count()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                Ok(Value::List(items))
            }
            2 => self.attrs(depth + 1).map(Value::Object),
            _ => Err(PackedError::Damaged("bad value tag")),
        }
    }
}

/// Reads back a record written by [`encode`]; the values share `buf`'s memory.
pub fn decode(buf: Bytes) -> Result<Record, PackedError> {
    let mut r = Reader { buf };
    let template = r.bytes()?;
    let url = r.bytes()?;
    let action = match r.u8()? {
        0 => None,
        1 => Some(Action::Delete),
        2 => Some(Action::Refresh),
        3 => Some(Action::Update),
        _ => return Err(PackedError::Damaged("bad action")),
    };
    let position = match r.u8()? {
        0 => None,
        1 => {
            let input: Option<Arc<str>> = r.opt_text()?.map(Arc::from);
            let offset = r.varint()?;
            let record = r.varint()?;
            let url = r.opt_text()?;
            Some(
                Position::new(offset, record)
                    .with_input(input)
                    .with_url(url),
            )
        }
        _ => return Err(PackedError::Damaged("bad position tag")),
    };
    let raw = r.opt()?;
    let n = r.count()?;
    let mut repairs = Vec::with_capacity(n);
    for _ in 0..n {
        let offset = r.varint()?;
        let message = r.text()?;
        repairs.push(Repair { offset, message });
    }
    let attributes = r.attrs(0)?;
    if !r.buf.is_empty() {
        return Err(PackedError::Damaged("trailing bytes"));
    }
    Ok(Record {
        template,
        url,
        attributes,
        action,
        position,
        raw,
        repairs,
    })
}

/// Writes one framed entry: `varint(seq) varint(len) payload`.
pub fn write_entry(w: &mut impl Write, seq: u64, payload: &[u8]) -> io::Result<()> {
    let mut head = Vec::with_capacity(20);
    put_varint(&mut head, seq);
    put_varint(&mut head, payload.len() as u64);
    w.write_all(&head)?;
    w.write_all(payload)
}

fn read_varint(r: &mut impl BufRead) -> io::Result<Option<u64>> {
    let mut n = 0u64;
    for (i, shift) in (0..64).step_by(7).enumerate() {
        let mut b = [0u8; 1];
        if r.read(&mut b)? == 0 {
            if i == 0 {
                return Ok(None);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "truncated varint",
            ));
        }
        n |= u64::from(b[0] & 0x7f) << shift;
        if b[0] & 0x80 == 0 {
            return Ok(Some(n));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "varint too long",
    ))
}

/// Reads one framed entry; `None` at a clean end of file. `max_len` bounds the
/// allocation (the largest payload this process wrote).
pub fn read_entry(r: &mut impl BufRead, max_len: usize) -> io::Result<Option<(u64, Bytes)>> {
    let Some(seq) = read_varint(r)? else {
        return Ok(None);
    };
    let len = read_varint(r)?
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "entry without length"))?;
    if len > max_len as u64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("entry of {len} bytes, larger than any written"),
        ));
    }
    let mut payload = vec![0u8; len as usize];
    r.read_exact(&mut payload)?;
    Ok(Some((seq, Bytes::from(payload))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_everything() {
        let mut r = Record::new("FILE", "http://x/")
            .with("Title", vec![0u8, 0xff, b'{'])
            .with(
                "Embed",
                Value::List(vec![Value::Object(vec![Attribute::new("Type", "HTML")])]),
            );
        r.action = Some(Action::Delete);
        r.position = Some(
            Position::new(1234, 7)
                .with_input(Some(Arc::from("in.soif")))
                .with_url(Some("http://x/".into())),
        );
        r.raw = Some(Bytes::from_static(b"@FILE { http://x/\n}\n"));
        r.repairs.push(Repair {
            offset: 9,
            message: "space after colon".into(),
        });
        let mut buf = Vec::new();
        encode(&r, &mut buf);
        assert_eq!(decode(Bytes::from(buf.clone())).unwrap(), r);
        for cut in 0..buf.len() {
            assert!(decode(Bytes::copy_from_slice(&buf[..cut])).is_err());
        }
    }

    #[test]
    fn framed_entries() {
        let mut file = Vec::new();
        write_entry(&mut file, 300, b"abc").unwrap();
        write_entry(&mut file, 0, b"").unwrap();
        let mut rd = &file[..];
        assert_eq!(
            read_entry(&mut rd, 3).unwrap(),
            Some((300, Bytes::from_static(b"abc")))
        );
        assert_eq!(read_entry(&mut rd, 3).unwrap(), Some((0, Bytes::new())));
        assert_eq!(read_entry(&mut rd, 3).unwrap(), None);
        let mut rd = &file[..];
        assert!(read_entry(&mut rd, 2).is_err());
    }
}
