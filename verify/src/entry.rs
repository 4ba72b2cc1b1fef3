//! [`Entry`]: one record as the comparison sees it — its key (template and URL), its
//! action, and each attribute's name with a digest of its value in the target's terms
//! and the value's first bytes (for the report) — and the compact form it takes in the
//! temporary files.
//!
//! ```text
//! entry = key_hash[16] u8(action) bytes(template) bytes(url) varint(n) attr*n
//! attr  = bytes(name) u64le(digest) bytes(shown)
//! ```
//!
//! Integers are varints and byte strings are length-prefixed as in
//! [`soif_codecs::packed`], whose framing (`write_entry` / `read_entry`) the files use.

use bytes::{Buf, Bytes};
use soif_codecs::packed::put_varint;
use soif_codecs::Action;
use std::io;

/// Bytes of a value kept for the report (the digest covers the whole value).
pub const SHOWN: usize = 48;

/// One attribute: its name, a digest of its value and the value's first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    pub name: Bytes,
    pub digest: u64,
    pub shown: Bytes,
}

/// One record in the target's terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    pub template: Bytes,
    pub url: Bytes,
    pub action: Option<Action>,
    /// Sorted by name (stable: the values of a repeated name keep their order).
    pub attrs: Vec<Attr>,
}

/// The hash of a key: where an entry goes and what it is looked up by.
pub type KeyHash = [u8; 16];

impl Entry {
    pub fn new(template: Bytes, url: Bytes, action: Option<Action>) -> Entry {
        Entry {
            template,
            url,
            action,
            attrs: Vec::new(),
        }
    }

    /// Adds an attribute whose value is `value`; `kind` tells apart values of the same
    /// bytes the target holds differently (TEXT and BLOB, a JSON string and a number).
    pub fn push(&mut self, name: &[u8], kind: u8, value: &[u8]) {
        let mut h = blake3::Hasher::new();
        h.update(&[kind]);
        h.update(value);
        let digest = u64::from_le_bytes(first_bytes(h.finalize().as_bytes()));
        let mut end = value.len().min(SHOWN);
        while end < value.len() && !value.is_char_boundary_at(end) {
            end -= 1;
        }
        self.attrs.push(Attr {
            name: Bytes::copy_from_slice(name),
            digest,
            shown: Bytes::copy_from_slice(&value[..end]),
        });
    }

    /// Sorts the attributes by name: attribute order is not compared.
    pub fn finish(mut self) -> Entry {
        self.attrs.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    pub fn key_hash(&self) -> KeyHash {
        key_hash(&self.template, &self.url)
    }

    /// The digest of the content: every attribute's name and value digest, and the
    /// action when `with_action` (files keep it; a catalog applies it).
    pub fn digest(&self, with_action: bool) -> [u8; 16] {
        let mut h = blake3::Hasher::new();
        if with_action {
            h.update(&[action_byte(self.action)]);
        }
        let mut buf = Vec::with_capacity(64);
        for a in &self.attrs {
            buf.clear();
            put_varint(&mut buf, a.name.len() as u64);
            buf.extend_from_slice(&a.name);
            buf.extend_from_slice(&a.digest.to_le_bytes());
            h.update(&buf);
        }
        first_bytes(h.finalize().as_bytes())
    }

    /// The entry in the temporary files' form (see the module doc).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key_hash());
        out.push(action_byte(self.action));
        put_bytes(out, &self.template);
        put_bytes(out, &self.url);
        put_varint(out, self.attrs.len() as u64);
        for a in &self.attrs {
            put_bytes(out, &a.name);
            out.extend_from_slice(&a.digest.to_le_bytes());
            put_bytes(out, &a.shown);
        }
    }

    /// An entry back from [`Entry::encode`], with its key hash.
    pub fn decode(mut buf: Bytes) -> io::Result<(KeyHash, Entry)> {
        if buf.len() < 17 {
            return Err(damaged("entry too short"));
        }
        let kh: KeyHash = first_bytes(&buf);
        buf.advance(16);
        let action = match buf.get_u8() {
            0 => None,
            1 => Some(Action::Delete),
            2 => Some(Action::Refresh),
            3 => Some(Action::Update),
            _ => return Err(damaged("unknown action")),
        };
        let template = get_bytes(&mut buf)?;
        let url = get_bytes(&mut buf)?;
        let n = get_varint(&mut buf)?;
        let mut attrs = Vec::with_capacity((n as usize).min(buf.len()));
        for _ in 0..n {
            let name = get_bytes(&mut buf)?;
            if buf.len() < 8 {
                return Err(damaged("attribute digest cut short"));
            }
            let digest = buf.get_u64_le();
            let shown = get_bytes(&mut buf)?;
            attrs.push(Attr {
                name,
                digest,
                shown,
            });
        }
        if !buf.is_empty() {
            return Err(damaged("trailing bytes"));
        }
        Ok((
            kh,
            Entry {
                template,
                url,
                action,
                attrs,
            },
        ))
    }
}

/// The hash of a (template, URL) key.
pub fn key_hash(template: &[u8], url: &[u8]) -> KeyHash {
    let mut h = blake3::Hasher::new();
    let mut len = Vec::with_capacity(10);
    put_varint(&mut len, template.len() as u64);
    h.update(&len);
    h.update(template);
    h.update(url);
    first_bytes(h.finalize().as_bytes())
}

fn action_byte(action: Option<Action>) -> u8 {
    match action {
        None => 0,
        Some(Action::Delete) => 1,
        Some(Action::Refresh) => 2,
        Some(Action::Update) => 3,
    }
}

fn first_bytes<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[..N]);
    out
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn get_varint(buf: &mut Bytes) -> io::Result<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        if buf.is_empty() {
            return Err(damaged("varint cut short"));
        }
        let b = buf.get_u8();
        n |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(n);
        }
    }
    Err(damaged("varint too long"))
}

fn get_bytes(buf: &mut Bytes) -> io::Result<Bytes> {
    let n = get_varint(buf)?;
    if n > buf.len() as u64 {
        return Err(damaged("byte string cut short"));
    }
    Ok(buf.split_to(n as usize))
}

fn damaged(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("damaged temporary file: {what}"),
    )
}

/// Where a UTF-8 character does not start in the middle (any byte of text that is not
/// UTF-8 is a boundary), so that a value cut for the report stays readable.
trait CharBoundary {
    fn is_char_boundary_at(&self, i: usize) -> bool;
}

impl CharBoundary for [u8] {
    fn is_char_boundary_at(&self, i: usize) -> bool {
        self.get(i).is_none_or(|b| (*b as i8) >= -0x40)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut e = Entry::new("FILE".into(), "http://x/".into(), Some(Action::Delete));
        e.push(b"Title", b't', "é".repeat(40).as_bytes());
        e.push(b"Author", b'b', &[0xff, 0]);
        let e = e.finish();
        assert_eq!(e.attrs[0].name, "Author");
        assert!(e.attrs[1].shown.len() <= SHOWN);
        assert!(std::str::from_utf8(&e.attrs[1].shown).is_ok());
        let mut buf = Vec::new();
        e.encode(&mut buf);
        let (kh, back) = Entry::decode(Bytes::from(buf.clone())).unwrap();
        assert_eq!(kh, e.key_hash());
        assert_eq!(back, e);
        assert!(Entry::decode(Bytes::from(buf[..buf.len() - 1].to_vec())).is_err());
    }

    #[test]
    fn digest_covers_values_kinds_and_action() {
        let one = |kind, v: &[u8], action| {
            let mut e = Entry::new("F".into(), "u".into(), action);
            e.push(b"A", kind, v);
            e.finish()
        };
        let base = one(b't', b"1", None);
        assert_eq!(base.digest(true), one(b't', b"1", None).digest(true));
        assert_ne!(base.digest(true), one(b't', b"2", None).digest(true));
        assert_ne!(base.digest(true), one(b'b', b"1", None).digest(true));
        let deleted = one(b't', b"1", Some(Action::Delete));
        assert_ne!(base.digest(true), deleted.digest(true));
        assert_eq!(base.digest(false), deleted.digest(false));
    }
}
