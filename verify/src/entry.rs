//! [`Entry`]: one record as the comparison sees it — its key (template and URL), its
//! action, and each attribute's name with a digest of its value in the target's terms
//! and the value's first bytes (for the report) — and the compact form it takes in the
//! temporary files. A [`Builder`] makes entries one after another without allocating
//! for each: the sides are read a record at a time into one builder each.
//!
//! ```text
//! entry = key_hash[16] digest[16] u8(action) bytes(template) bytes(url) varint(n) attr*n
//! attr  = bytes(name) u64le(digest) bytes(shown)
//! ```
//!
//! The entry's `digest` is that of its content as compared ([`Entry::digest`]), so the
//! comparison reads an entry's [`Head`] and decodes its attributes only for the report.
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

/// One record in the target's terms, as read back from the temporary files.
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

/// The digest of an entry's content ([`Entry::digest`]).
pub type Digest = [u8; 16];

/// What the comparison reads of every entry: its key hash, content digest and action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub key: KeyHash,
    pub digest: Digest,
    pub action: Option<Action>,
}

/// Bytes of an encoded entry before its template.
const HEAD: usize = 16 + 16 + 1;

impl Head {
    /// The head of an encoded entry.
    pub fn read(payload: &[u8]) -> io::Result<Head> {
        if payload.len() < HEAD {
            return Err(damaged("entry too short"));
        }
        Ok(Head {
            key: first_bytes(payload),
            digest: first_bytes(&payload[16..]),
            action: action_of(payload[32])?,
        })
    }
}

impl Entry {
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
    pub fn digest(&self, with_action: bool) -> Digest {
        let attrs = self.attrs.iter().map(|a| (&a.name[..], a.digest));
        content_digest(with_action.then_some(self.action), attrs, &mut Vec::new())
    }

    /// An entry back from [`Builder::encode`] (its [`Head`] aside).
    pub fn decode(mut buf: Bytes) -> io::Result<Entry> {
        let action = Head::read(&buf)?.action;
        buf.advance(HEAD);
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
        Ok(Entry {
            template,
            url,
            action,
            attrs,
        })
    }
}

/// Where one attribute of a [`Builder`] lies in its bytes: the name at
/// `start..name_end`, the shown value at `name_end..end`.
#[derive(Debug, Clone, Copy)]
struct Span {
    /// The name's first 8 bytes, big-endian (zero-padded): sorts as the name does, ties
    /// aside.
    order: u64,
    start: usize,
    name_end: usize,
    end: usize,
    digest: u64,
}

/// Makes entries one after another in the same buffers: [`Builder::start`] a record,
/// [`Builder::push`] its values, [`Builder::finish`], then read its digest
/// ([`Builder::digest`]) and write it ([`Builder::encode`]).
#[derive(Debug, Default)]
pub struct Builder {
    template: Bytes,
    url: Bytes,
    action: Option<Action>,
    /// The attributes' names and shown values, one after another.
    bytes: Vec<u8>,
    attrs: Vec<Span>,
    /// A value with its kind, being hashed.
    scratch: Vec<u8>,
}

impl Builder {
    /// Starts the entry of a record: no attributes yet.
    pub fn start(&mut self, template: Bytes, url: Bytes, action: Option<Action>) {
        self.template = template;
        self.url = url;
        self.action = action;
        self.bytes.clear();
        self.attrs.clear();
    }

    /// Keys the entry by another template and URL.
    pub fn set_key(&mut self, template: Bytes, url: Bytes) {
        self.template = template;
        self.url = url;
    }

    pub fn action(&self) -> Option<Action> {
        self.action
    }

    pub fn set_action(&mut self, action: Option<Action>) {
        self.action = action;
    }

    /// Adds an attribute whose value is `value`; `kind` tells apart values of the same
    /// bytes the target holds differently (TEXT and BLOB, a JSON string and a number).
    pub fn push(&mut self, name: &[u8], kind: u8, value: &[u8]) {
        let hash = if value.len() < blake3::CHUNK_LEN {
            // Within one BLAKE3 chunk, one call on a copy is the cheaper way.
            self.scratch.clear();
            self.scratch.push(kind);
            self.scratch.extend_from_slice(value);
            blake3::hash(&self.scratch)
        } else {
            let mut h = blake3::Hasher::new();
            h.update(&[kind]);
            h.update(value);
            h.finalize()
        };
        let digest = u64::from_le_bytes(first_bytes(hash.as_bytes()));
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name);
        let name_end = self.bytes.len();
        self.bytes.extend_from_slice(&value[..shown_len(value)]);
        let mut first = [0u8; 8];
        let n = name.len().min(8);
        first[..n].copy_from_slice(&name[..n]);
        self.attrs.push(Span {
            order: u64::from_be_bytes(first),
            start,
            name_end,
            end: self.bytes.len(),
            digest,
        });
    }

    /// Sorts the attributes by name (attribute order is not compared; the values of a
    /// repeated name keep their order).
    pub fn finish(&mut self) {
        let bytes = &self.bytes;
        // Spans start in the order they were pushed: that order breaks ties.
        self.attrs.sort_unstable_by(|a, b| {
            a.order.cmp(&b.order).then_with(|| {
                (&bytes[a.start..a.name_end], a.start).cmp(&(&bytes[b.start..b.name_end], b.start))
            })
        });
    }

    pub fn key_hash(&self) -> KeyHash {
        key_hash(&self.template, &self.url)
    }

    fn attrs(&self) -> impl Iterator<Item = (&[u8], u64, &[u8])> {
        self.attrs.iter().map(|s| {
            (
                &self.bytes[s.start..s.name_end],
                s.digest,
                &self.bytes[s.name_end..s.end],
            )
        })
    }

    /// [`Entry::digest`] of the finished entry; `scratch` is a buffer to use.
    pub fn digest(&self, with_action: bool, scratch: &mut Vec<u8>) -> Digest {
        let attrs = self.attrs().map(|(name, digest, _)| (name, digest));
        content_digest(with_action.then_some(self.action), attrs, scratch)
    }

    /// The finished entry in the temporary files' form (see the module doc), with its
    /// key hash and content digest, appended to `out`.
    pub fn encode(&self, key: &KeyHash, digest: &Digest, out: &mut Vec<u8>) {
        out.extend_from_slice(key);
        out.extend_from_slice(digest);
        out.push(action_byte(self.action));
        put_bytes(out, &self.template);
        put_bytes(out, &self.url);
        put_varint(out, self.attrs.len() as u64);
        for (name, digest, shown) in self.attrs() {
            put_bytes(out, name);
            out.extend_from_slice(&digest.to_le_bytes());
            put_bytes(out, shown);
        }
    }

    /// The finished entry.
    pub fn entry(&self) -> Entry {
        Entry {
            template: self.template.clone(),
            url: self.url.clone(),
            action: self.action,
            attrs: self
                .attrs()
                .map(|(name, digest, shown)| Attr {
                    name: Bytes::copy_from_slice(name),
                    digest,
                    shown: Bytes::copy_from_slice(shown),
                })
                .collect(),
        }
    }
}

/// The length of a value's first bytes kept for the report: at most [`SHOWN`], not
/// cutting a UTF-8 character.
fn shown_len(value: &[u8]) -> usize {
    let mut end = value.len().min(SHOWN);
    while end < value.len() && !value.is_char_boundary_at(end) {
        end -= 1;
    }
    end
}

/// BLAKE3 of the action (when given) and each attribute's name and value digest.
fn content_digest<'a>(
    action: Option<Option<Action>>,
    attrs: impl Iterator<Item = (&'a [u8], u64)>,
    buf: &mut Vec<u8>,
) -> Digest {
    buf.clear();
    if let Some(action) = action {
        buf.push(action_byte(action));
    }
    for (name, digest) in attrs {
        put_varint(buf, name.len() as u64);
        buf.extend_from_slice(name);
        buf.extend_from_slice(&digest.to_le_bytes());
    }
    first_bytes(blake3::hash(buf).as_bytes())
}

/// The hash of a (template, URL) key.
pub fn key_hash(template: &[u8], url: &[u8]) -> KeyHash {
    let mut h = blake3::Hasher::new();
    let mut len = [0u8; 10];
    let (mut n, mut i) = (template.len(), 0);
    while n >= 0x80 {
        len[i] = (n as u8) | 0x80;
        n >>= 7;
        i += 1;
    }
    len[i] = n as u8;
    h.update(&len[..=i]);
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

fn action_of(byte: u8) -> io::Result<Option<Action>> {
    Ok(match byte {
        0 => None,
        1 => Some(Action::Delete),
        2 => Some(Action::Refresh),
        3 => Some(Action::Update),
        _ => return Err(damaged("unknown action")),
    })
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

    fn built(b: &mut Builder) -> Entry {
        b.finish();
        b.entry()
    }

    #[test]
    fn round_trip() {
        let mut b = Builder::default();
        b.start("FILE".into(), "http://x/".into(), Some(Action::Delete));
        b.push(b"Title", b't', "é".repeat(40).as_bytes());
        b.push(b"Author", b'b', &[0xff, 0]);
        b.push(b"Author", b't', b"second");
        let e = built(&mut b);
        assert_eq!(e.attrs[0].name, "Author");
        assert_eq!(
            e.attrs[1].shown, "second",
            "a repeated name keeps its order"
        );
        assert!(e.attrs[2].shown.len() <= SHOWN);
        assert!(std::str::from_utf8(&e.attrs[2].shown).is_ok());
        let (kh, digest) = (b.key_hash(), b.digest(true, &mut Vec::new()));
        assert_eq!(kh, e.key_hash());
        assert_eq!(digest, e.digest(true));
        let mut buf = Vec::new();
        b.encode(&kh, &digest, &mut buf);
        let head = Head::read(&buf).unwrap();
        assert_eq!((head.key, head.digest, head.action), (kh, digest, e.action));
        assert_eq!(Entry::decode(Bytes::from(buf.clone())).unwrap(), e);
        assert!(Entry::decode(Bytes::from(buf[..buf.len() - 1].to_vec())).is_err());
        // The builder starts afresh.
        b.start("F".into(), "u".into(), None);
        assert!(built(&mut b).attrs.is_empty());
    }

    #[test]
    fn attributes_sort_by_whole_name() {
        let names: [&[u8]; 8] = [
            b"Last-Modified",
            b"Last-Modification-Time",
            b"AB\0",
            b"AB",
            b"Author-2",
            b"Author-1",
            b"Author-10",
            b"",
        ];
        let mut b = Builder::default();
        b.start("F".into(), "u".into(), None);
        for (i, name) in names.iter().enumerate() {
            b.push(name, b't', i.to_string().as_bytes());
        }
        b.push(b"AB", b't', b"again");
        let got: Vec<(Vec<u8>, Vec<u8>)> = built(&mut b)
            .attrs
            .iter()
            .map(|a| (a.name.to_vec(), a.shown.to_vec()))
            .collect();
        let mut want: Vec<(Vec<u8>, Vec<u8>)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_vec(), i.to_string().into_bytes()))
            .collect();
        want.push((b"AB".to_vec(), b"again".to_vec()));
        want.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(got, want);
    }

    #[test]
    fn digest_covers_values_kinds_and_action() {
        let one = |kind, v: &[u8], action| {
            let mut b = Builder::default();
            b.start("F".into(), "u".into(), action);
            b.push(b"A", kind, v);
            built(&mut b)
        };
        let base = one(b't', b"1", None);
        assert_eq!(base.digest(true), one(b't', b"1", None).digest(true));
        assert_ne!(base.digest(true), one(b't', b"2", None).digest(true));
        assert_ne!(base.digest(true), one(b'b', b"1", None).digest(true));
        let deleted = one(b't', b"1", Some(Action::Delete));
        assert_ne!(base.digest(true), deleted.digest(true));
        assert_eq!(base.digest(false), deleted.digest(false));
    }

    #[test]
    fn digests_are_blake3_of_the_documented_bytes() {
        // A value: BLAKE3 of its kind and bytes; the content: of each name and value
        // digest (a target's digest in a manifest stays comparable across versions).
        let long = "x".repeat(5000);
        let mut b = Builder::default();
        b.start("F".into(), "u".into(), None);
        b.push(b"Big", b't', long.as_bytes());
        let e = built(&mut b);
        let mut h = blake3::Hasher::new();
        h.update(b"t");
        h.update(long.as_bytes());
        let value = u64::from_le_bytes(first_bytes(h.finalize().as_bytes()));
        assert_eq!(e.attrs[0].digest, value);
        let mut h = blake3::Hasher::new();
        h.update(&[0, 3]);
        h.update(b"Big");
        h.update(&value.to_le_bytes());
        assert_eq!(e.digest(true), first_bytes::<16>(h.finalize().as_bytes()));
    }
}
