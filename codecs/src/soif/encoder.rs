//! Canonical SOIF output.
//!
//! Canonical SOIF is what Harvest's own tools write:
//!
//! ```text
//! @FILE { http://example.com/
//! Title{7}:<TAB>Example
//! }
//! ```
//!
//! `@T { url\n`, then `Name{n}:\tvalue\n` per attribute, then `}\n`. Records that carry an
//! [`Action`] are wrapped in Harvest collector envelopes, one envelope per run of records
//! with the same action: `@UPDATE {\n` … `}\n`. Collapsed values (lists, parts) are
//! written back as `Name-N` / `Embed<N>-Name` (see [`Record::flattened`]).
//!
//! ```
//! use soif_codecs::{Record, soif::encode_record};
//! let mut out = Vec::new();
//! encode_record(&Record::new("FILE", "http://example.com/").with("Title", "Example"), &mut out);
//! assert_eq!(out, b"@FILE { http://example.com/\nTitle{7}:\tExample\n}\n");
//! ```

use crate::record::{Action, Record, Value};
use bytes::BytesMut;

/// Appends one record in canonical SOIF (no envelope) to `out`.
pub fn encode_record(record: &Record, out: &mut Vec<u8>) {
    let flat = record.flattened();
    out.push(b'@');
    out.extend_from_slice(&flat.template);
    out.extend_from_slice(b" { ");
    out.extend_from_slice(&flat.url);
    out.push(b'\n');
    let mut num = itoa_buf();
    for attr in &flat.attributes {
        if let Value::Bytes(v) = &attr.value {
            out.extend_from_slice(&attr.name);
            out.push(b'{');
            out.extend_from_slice(format_usize(&mut num, v.len()));
            out.extend_from_slice(b"}:\t");
            out.extend_from_slice(v);
            out.push(b'\n');
        }
    }
    out.extend_from_slice(b"}\n");
}

fn itoa_buf() -> [u8; 20] {
    [0u8; 20]
}

/// Formats without allocating; the encoder writes one number per attribute.
fn format_usize(buf: &mut [u8; 20], mut n: usize) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// A stateful encoder that also writes Harvest collector envelopes.
///
/// Feed records with [`SoifEncoder::encode`] and call [`SoifEncoder::finish`] at the end
/// to close an open envelope. It also implements [`tokio_util::codec::Encoder`] for use
/// with `FramedWrite` (call `finish` yourself before closing).
#[derive(Debug, Default)]
pub struct SoifEncoder {
    open: Option<Action>,
}

impl SoifEncoder {
    pub fn new() -> SoifEncoder {
        SoifEncoder::default()
    }

    /// Appends `record`, opening or closing envelopes as its action requires.
    pub fn encode(&mut self, record: &Record, out: &mut Vec<u8>) {
        if self.open != record.action {
            self.finish(out);
            if let Some(action) = record.action {
                out.push(b'@');
                out.extend_from_slice(action.envelope().as_bytes());
                out.extend_from_slice(b" {\n");
                self.open = Some(action);
            }
        }
        encode_record(record, out);
    }

    /// Closes the open envelope, if any.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if self.open.take().is_some() {
            out.extend_from_slice(b"}\n");
        }
    }
}

impl tokio_util::codec::Encoder<&Record> for SoifEncoder {
    type Error = std::io::Error;

    fn encode(&mut self, record: &Record, dst: &mut BytesMut) -> Result<(), Self::Error> {
        let mut buf = Vec::new();
        SoifEncoder::encode(self, record, &mut buf);
        dst.extend_from_slice(&buf);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let mut b = itoa_buf();
        assert_eq!(format_usize(&mut b, 0), b"0");
        assert_eq!(format_usize(&mut b, 1234567), b"1234567");
        assert_eq!(
            format_usize(&mut b, usize::MAX),
            usize::MAX.to_string().as_bytes()
        );
    }

    #[test]
    fn envelopes_group_runs_of_one_action() {
        let mut a = Record::new("FILE", "http://a/");
        a.action = Some(Action::Delete);
        let mut b = Record::new("FILE", "http://b/");
        b.action = Some(Action::Update);
        let c = Record::new("FILE", "http://c/");
        let mut enc = SoifEncoder::new();
        let mut out = Vec::new();
        for r in [&a, &b, &b, &c] {
            enc.encode(r, &mut out);
        }
        enc.finish(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "@DELETE {\n@FILE { http://a/\n}\n}\n@UPDATE {\n@FILE { http://b/\n}\n@FILE { http://b/\n}\n}\n@FILE { http://c/\n}\n"
        );
    }
}
