//! The one mapping of a record to RDF triples, shared by every RDF sink (`ntriples`,
//! `turtle`, `jsonld`, `rdfxml`) and the SPARQL store sink; docs/linked-data.md#the-mapping
//! is its reference.
//!
//! ```
//! use soif_codecs::Record;
//! use soif_sinks::rdf::mapping::Mapping;
//! let record = Record::new("FILE", "http://example.org/a b.ps")
//!     .with("Title", "Report")
//!     .with("Type", "PostScript");
//! let mut mapping = Mapping::new();
//! let mut lines = Vec::new();
//! let subject = mapping
//!     .record(&record, |t| {
//!         lines.push(t.to_string());
//!         Ok::<(), std::convert::Infallible>(())
//!     })
//!     .unwrap();
//! assert_eq!(subject.to_string(), "<http://example.org/a%20b.ps>");
//! assert!(lines.contains(
//!     &"<http://example.org/a%20b.ps> <http://purl.org/dc/terms/title> \"Report\"".to_string()
//! ));
//! assert!(lines.contains(
//!     &"<http://example.org/a%20b.ps> <http://purl.org/dc/terms/format> \"application/postscript\"".to_string()
//! ));
//! assert!(lines.contains(
//!     &"<http://example.org/a%20b.ps> <urn:x-soif:record:1#Type> \"PostScript\"".to_string()
//! ));
//! ```
//!
//! **Subject.** The record's URL made an IRI ([`to_iri`]: what an IRI may not hold is
//! percent-encoded; bytes that are not UTF-8 become `%HH`). A URL that is `-`, has no
//! scheme, or is still no valid IRI gives a blank node (`_:r1`, `_:r2`, … in the order of
//! the records). Whenever the subject is not the URL exactly, `soif:url` keeps the URL.
//!
//! **Predicates and objects**, in this order:
//! - `soif:url` (see above), `soif:template` (`FILE`, `DOCUMENT`, …) and, inside a Harvest
//!   envelope, `soif:action` (`delete`, `refresh`, `update`);
//! - `dcterms:title`, `dcterms:creator`, … — the fifteen Dublin Core elements as the `dc`
//!   transform's default crosswalk fills them ([`soif_codecs::rules::dc`]: dates as ISO
//!   8601, Harvest types as MIME types, keywords one per line, the URL as identifier); a
//!   `Dublin-Core` record's own elements as they are;
//! - `soif:NAME` for every attribute of the record, the crosswalk's sources included, with
//!   its value exactly as it was (a collapsed record is flattened first: `Author-1`,
//!   `Author-2`). So `soif:` holds the whole record and `dcterms:` the crosswalk's view.
//!
//! **Names.** `soif:` is `urn:x-soif:record:1#`; an attribute name becomes a local name by
//! writing each byte that is not an ASCII letter, digit, `-` or `.` — and a first byte that
//! is not a letter — as `_` and two upper-case hex digits: `Embed<1>-Type` is
//! `soif:Embed_3C1_3E-Type`, `_id` is `soif:_5Fid`. The local name is thus a valid XML
//! name, so every serialisation can write it.
//!
//! **Literals.** A value that is UTF-8 text XML can carry is a plain literal (`xsd:string`).
//! Any other — bytes that are not UTF-8, a control character other than tab and line feed
//! (a carriage return included, which XML parsers turn into a line feed), U+FFFE, U+FFFF —
//! is an `xsd:base64Binary` literal of its exact bytes. No value is dropped or changed, and
//! every serialisation carries the same triples.

use base64::Engine as _;
use oxrdf::vocab::xsd;
use oxrdf::{BlankNode, LiteralRef, NamedNode, NamedNodeRef, NamedOrBlankNode, TripleRef};
use soif_codecs::rules::dc::{is_dublin_core, xml_element, Crosswalk};
use soif_codecs::rules::names;
use soif_codecs::{Record, Value};
use std::borrow::Cow;

/// The soif namespace: the record's own attributes, template, URL and action.
pub const SOIF: &str = "urn:x-soif:record:1#";
/// DCMI Metadata Terms.
pub const DCTERMS: &str = "http://purl.org/dc/terms/";

/// The prefixes the serialisations declare.
pub const PREFIXES: [(&str, &str); 3] = [
    ("dcterms", DCTERMS),
    ("soif", SOIF),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
];

/// `dcterms:` IRIs of the fifteen elements, in [`soif_codecs::rules::dc::XML_ELEMENTS`]' order.
const DC_TERMS: [&str; 15] = [
    "http://purl.org/dc/terms/title",
    "http://purl.org/dc/terms/creator",
    "http://purl.org/dc/terms/subject",
    "http://purl.org/dc/terms/description",
    "http://purl.org/dc/terms/publisher",
    "http://purl.org/dc/terms/contributor",
    "http://purl.org/dc/terms/date",
    "http://purl.org/dc/terms/type",
    "http://purl.org/dc/terms/format",
    "http://purl.org/dc/terms/identifier",
    "http://purl.org/dc/terms/source",
    "http://purl.org/dc/terms/language",
    "http://purl.org/dc/terms/relation",
    "http://purl.org/dc/terms/coverage",
    "http://purl.org/dc/terms/rights",
];

const SOIF_URL: NamedNodeRef<'static> = NamedNodeRef::new_unchecked("urn:x-soif:record:1#url");
const SOIF_TEMPLATE: NamedNodeRef<'static> =
    NamedNodeRef::new_unchecked("urn:x-soif:record:1#template");
const SOIF_ACTION: NamedNodeRef<'static> =
    NamedNodeRef::new_unchecked("urn:x-soif:record:1#action");

/// Maps records to triples, one record at a time (nothing is kept from one record to the
/// next but the count of blank subjects).
#[derive(Debug, Default)]
pub struct Mapping {
    /// Blank subjects made so far (`_:r1`, `_:r2`, …).
    blanks: u64,
    /// Values the crosswalk could not convert (kept as they were) and URLs that name no
    /// IRI, for [`Mapping::warnings`].
    warnings: u64,
    /// One predicate IRI, reused.
    predicate: String,
    /// One base64 value, reused.
    base64: String,
    /// Messages for the warnings counted since the last [`Mapping::take_notices`].
    notices: Vec<String>,
}

impl Mapping {
    /// A mapping whose first blank subject is `_:r1`.
    pub fn new() -> Mapping {
        Mapping::default()
    }

    /// How many values the crosswalk kept unconverted plus how many URLs named no IRI.
    pub fn warnings(&self) -> u64 {
        self.warnings
    }

    /// The subject of `record`: [`subject_iri`] of its URL, else the next blank node
    /// (this counts it, so call it once per record — [`Mapping::record`] does).
    pub fn subject(&mut self, record: &Record) -> NamedOrBlankNode {
        if !record.has_no_url() {
            if let Some(node) = subject_iri(&record.url) {
                return node.into();
            }
            self.warnings += 1;
            self.notices.push(format!(
                "URL `{}` names no IRI: the subject is a blank node, the URL soif:url",
                String::from_utf8_lossy(&record.url)
            ));
        }
        self.blanks += 1;
        BlankNode::new_unchecked(format!("r{}", self.blanks)).into()
    }

    /// What the last records' warnings were about (a URL that names no IRI, a value the
    /// crosswalk could not convert), taken once.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// Calls `emit` with each triple of `record`, in the order the module docs give;
    /// returns the subject. An error from `emit` stops the record there.
    pub fn record<E>(
        &mut self,
        record: &Record,
        mut emit: impl FnMut(TripleRef<'_>) -> Result<(), E>,
    ) -> Result<NamedOrBlankNode, E> {
        let subject = self.subject(record);
        let s = subject.as_ref();
        let exact = matches!(&subject, NamedOrBlankNode::NamedNode(n)
            if n.as_str().as_bytes() == record.url.as_ref());
        if !exact && !record.has_no_url() {
            let o = literal(&record.url, &mut self.base64);
            emit(TripleRef::new(s, SOIF_URL, o))?;
        }
        let o = literal(&record.template, &mut self.base64);
        emit(TripleRef::new(s, SOIF_TEMPLATE, o))?;
        if let Some(action) = record.action {
            let o = LiteralRef::new_simple_literal(action.as_str());
            emit(TripleRef::new(s, SOIF_ACTION, o))?;
        }
        // Dublin Core: a `Dublin-Core` record's own elements, else the crosswalk's.
        let mapped = if is_dublin_core(&record.template) {
            Cow::Borrowed(record)
        } else {
            let (r, notes) = Crosswalk::default_table().apply(record);
            self.warnings += notes.len() as u64;
            for n in notes {
                self.notices.push(format!(
                    "dcterms:{}: `{}` kept as it was ({})",
                    n.element.to_ascii_lowercase(),
                    n.value,
                    n.reason
                ));
            }
            Cow::Owned(r)
        };
        for attr in &mapped.flattened().attributes {
            let Value::Bytes(value) = &attr.value else {
                continue;
            };
            let Some(i) = xml_element(names::base_name(&attr.name)).and_then(|e| {
                soif_codecs::rules::dc::XML_ELEMENTS
                    .iter()
                    .position(|x| *x == e)
            }) else {
                continue;
            };
            let p = NamedNodeRef::new_unchecked(DC_TERMS[i]);
            let o = literal(value, &mut self.base64);
            emit(TripleRef::new(s, p, o))?;
        }
        // The record itself.
        for attr in &record.flattened().attributes {
            let Value::Bytes(value) = &attr.value else {
                continue;
            };
            self.predicate.clear();
            self.predicate.push_str(SOIF);
            push_local_name(&attr.name, &mut self.predicate);
            let p = NamedNodeRef::new_unchecked(&self.predicate);
            let o = literal(value, &mut self.base64);
            emit(TripleRef::new(s, p, o))?;
        }
        Ok(subject)
    }

    /// The triples of `record` as owned values (for callers that batch them), with its
    /// subject.
    pub fn triples(&mut self, record: &Record) -> (NamedOrBlankNode, Vec<oxrdf::Triple>) {
        let mut out = Vec::new();
        let subject = self
            .record(record, |t| {
                out.push(t.into_owned());
                Ok::<(), std::convert::Infallible>(())
            })
            .unwrap_or_else(|never| match never {});
        (subject, out)
    }
}

/// The record URL `url` as a subject IRI ([`to_iri`] of it, bytes that are not UTF-8 as
/// `%HH`), when it is an absolute URL that makes a valid IRI; `None` for `-` and others.
pub fn subject_iri(url: &[u8]) -> Option<NamedNode> {
    if url == b"-" {
        return None;
    }
    NamedNode::new(to_iri(&url_text(url))?).ok()
}

/// The literal for a value: plain text when it is UTF-8 that XML can carry, else
/// `xsd:base64Binary` of its bytes (written into `buf`).
pub fn literal<'a>(bytes: &'a [u8], buf: &'a mut String) -> LiteralRef<'a> {
    match std::str::from_utf8(bytes) {
        Ok(text) if xml_can_carry(text) => LiteralRef::new_simple_literal(text),
        _ => {
            buf.clear();
            base64::engine::general_purpose::STANDARD.encode_string(bytes, buf);
            LiteralRef::new_typed_literal(buf, xsd::BASE_64_BINARY)
        }
    }
}

/// Whether XML carries `text` unchanged: no C0 control but tab and line feed (a carriage
/// return comes back as a line feed), no U+FFFE or U+FFFF. Those are the bytes below
/// 0x20 but tab and line feed, and `EF BF BE`/`EF BF BF`; the bytes are scanned in
/// blocks for either kind of first byte (a loop the compiler vectorises), and only a
/// block holding one is looked at character by character.
fn xml_can_carry(text: &str) -> bool {
    // Bitwise operators, not `&&`/`||`: no branch per byte, so the loop vectorises.
    fn suspect(b: u8) -> bool {
        ((b < 0x20) & (b != b'\t') & (b != b'\n')) | (b == 0xEF)
    }
    const BLOCK: usize = 32;
    let bytes = text.as_bytes();
    let clean = |block: &[u8]| {
        block
            .iter()
            .fold(0u8, |seen, &b| seen | u8::from(suspect(b)))
            == 0
    };
    let mut blocks = bytes.chunks_exact(BLOCK);
    if blocks.all(clean) && clean(blocks.remainder()) {
        return true;
    }
    !text
        .chars()
        .any(|c| (c < ' ' && c != '\t' && c != '\n') || c == '\u{FFFE}' || c == '\u{FFFF}')
}

/// Appends the local name of an attribute name (see the module docs).
pub fn push_local_name(name: &[u8], out: &mut String) {
    if name.is_empty() {
        out.push('_');
        return;
    }
    for (i, &b) in name.iter().enumerate() {
        let plain = if i == 0 {
            b.is_ascii_alphabetic()
        } else {
            b.is_ascii_alphanumeric() || b == b'-' || b == b'.'
        };
        if plain {
            out.push(b as char);
        } else {
            out.push('_');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
}

/// The attribute name a local name stands for (the inverse of [`push_local_name`]);
/// `None` when it is not one.
pub fn attribute_name(local: &str) -> Option<Vec<u8>> {
    if local == "_" {
        return Some(Vec::new());
    }
    let bytes = local.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'_' {
            let hex = local.get(i + 1..i + 3)?;
            if !hex
                .bytes()
                .all(|h| h.is_ascii_digit() || (b'A'..=b'F').contains(&h))
            {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// The URL as text: UTF-8 as it is, each byte of an invalid sequence as `%HH` (the form
/// a URI gives bytes).
fn url_text(url: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(url) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(url.len() + 8);
    for chunk in url.utf8_chunks() {
        out.push_str(chunk.valid());
        for &b in chunk.invalid() {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
    Cow::Owned(out)
}

/// The URL as an absolute IRI (RFC 3987), percent-encoding what may not appear; `None`
/// when it has no scheme.
pub fn to_iri(url: &str) -> Option<String> {
    let url = url.trim();
    let colon = url.find(':')?;
    let scheme = &url[..colon];
    let mut chars = scheme.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let rest = &url[colon + 1..];
    let mut out = String::with_capacity(url.len() + 16);
    out.push_str(scheme);
    out.push(':');
    // The authority, when there is one, has its own rules for `@`, `:`, `[`, `]`.
    let path_start = if let Some(after) = rest.strip_prefix("//") {
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        out.push_str("//");
        push_authority(&after[..end], &mut out);
        2 + end
    } else {
        0
    };
    let mut seen_hash = false;
    let bytes = rest.as_bytes();
    for (i, c) in rest[path_start..].char_indices() {
        let at = path_start + i;
        match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' => out.push(c),
            '-' | '.' | '_' | '~' | '!' | '$' | '&' | '\'' | '(' | ')' | '*' | '+' | ',' | ';'
            | '=' | ':' | '@' | '/' | '?' => out.push(c),
            '#' if !seen_hash => {
                seen_hash = true;
                out.push(c);
            }
            '%' if bytes.len() > at + 2
                && bytes[at + 1].is_ascii_hexdigit()
                && bytes[at + 2].is_ascii_hexdigit() =>
            {
                out.push(c)
            }
            other => percent_encode_char(other, &mut out),
        }
    }
    Some(out)
}

fn push_authority(auth: &str, out: &mut String) {
    // userinfo@host:port — only the last `@` separates; a port must be digits.
    let (userinfo, hostport) = match auth.rfind('@') {
        Some(at) => (Some(&auth[..at]), &auth[at + 1..]),
        None => (None, auth),
    };
    if let Some(u) = userinfo {
        for c in u.chars() {
            push_plain(c, ":", out);
        }
        out.push('@');
    }
    // An IP literal is kept only when it is a valid IPv6 address; anything else in
    // brackets is encoded like a registered name.
    let literal = hostport
        .strip_prefix('[')
        .and_then(|rest| {
            rest.find(']')
                .map(|close| (&rest[..close], &rest[close + 1..]))
        })
        .filter(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().is_ok());
    let (host, port) = match literal {
        Some((ip, port)) => {
            out.push('[');
            out.push_str(ip);
            out.push(']');
            ("", port)
        }
        None => match hostport.rfind(':') {
            Some(i) => (&hostport[..i], &hostport[i..]),
            None => (hostport, ""),
        },
    };
    for c in host.chars() {
        push_plain(c, "", out);
    }
    // A port is digits; anything else after the last `:` is part of the name.
    match port.strip_prefix(':') {
        Some(digits) if digits.bytes().all(|b| b.is_ascii_digit()) => {
            out.push(':');
            out.push_str(digits);
        }
        _ => port.chars().for_each(|c| push_plain(c, "", out)),
    }
}

/// Unreserved and sub-delimiter characters (plus `extra`) as they are, the rest
/// percent-encoded.
fn push_plain(c: char, extra: &str, out: &mut String) {
    if c.is_ascii_alphanumeric()
        || matches!(
            c,
            '-' | '.'
                | '_'
                | '~'
                | '!'
                | '$'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | '+'
                | ','
                | ';'
                | '='
        )
        || extra.contains(c)
    {
        out.push(c);
    } else {
        percent_encode_char(c, out);
    }
}

fn percent_encode_char(c: char, out: &mut String) {
    let mut buf = [0u8; 4];
    for &b in c.encode_utf8(&mut buf).as_bytes() {
        out.push('%');
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::{Literal, Triple};
    use proptest::prelude::*;
    use soif_codecs::Action;

    fn lines(record: &Record) -> Vec<String> {
        let (_, triples) = Mapping::new().triples(record);
        triples.iter().map(Triple::to_string).collect()
    }

    #[test]
    fn iri_rules() {
        assert_eq!(
            to_iri("http://home.netscape.com:80/").as_deref(),
            Some("http://home.netscape.com:80/")
        );
        assert_eq!(
            to_iri("ftp://ds.internic.net/internet-drafts/ draft-kunze-dc-00.txt").as_deref(),
            Some("ftp://ds.internic.net/internet-drafts/%20draft-kunze-dc-00.txt")
        );
        assert_eq!(
            to_iri("http://x/a b<c>\"{|}^`\\é%zz%41#f#g[1]").as_deref(),
            Some("http://x/a%20b%3Cc%3E%22%7B%7C%7D%5E%60%5C%C3%A9%25zz%41#f%23g%5B1%5D")
        );
        assert_eq!(
            to_iri("http://a@b@host:x/").as_deref(),
            Some("http://a%40b@host%3Ax/")
        );
        assert_eq!(
            to_iri("http://[::1]:8080/p").as_deref(),
            Some("http://[::1]:8080/p")
        );
        assert_eq!(to_iri("draft-kunze-dc-00.txt"), None);
        assert_eq!(to_iri("1http://x"), None);
        assert_eq!(to_iri("mailto:a b@x").as_deref(), Some("mailto:a%20b@x"));
    }

    #[test]
    fn a_harvest_record() {
        let r = Record::new("FILE", "ftp://ecrc.de/pub/ECRC-93-10.ps.Z")
            .with("Type", "PostScript")
            .with("Last-Modification-Time", "774988159")
            .with("Author-1", "A. Author")
            .with("Embed<1>-Keywords", "rdf\nsoif");
        let s = "<ftp://ecrc.de/pub/ECRC-93-10.ps.Z>";
        let d = "http://purl.org/dc/terms/";
        let x = "urn:x-soif:record:1#";
        assert_eq!(
            lines(&r),
            [
                format!("{s} <{x}template> \"FILE\""),
                format!("{s} <{d}creator> \"A. Author\""),
                format!("{s} <{d}subject> \"rdf\""),
                format!("{s} <{d}subject> \"soif\""),
                format!("{s} <{d}date> \"1994-07-23T18:29:19Z\""),
                format!("{s} <{d}format> \"application/postscript\""),
                format!("{s} <{d}identifier> \"ftp://ecrc.de/pub/ECRC-93-10.ps.Z\""),
                format!("{s} <{x}Type> \"PostScript\""),
                format!("{s} <{x}Last-Modification-Time> \"774988159\""),
                format!("{s} <{x}Author-1> \"A. Author\""),
                format!("{s} <{x}Embed_3C1_3E-Keywords> \"rdf\\nsoif\""),
            ]
        );
    }

    #[test]
    fn dublin_core_records_keep_their_elements() {
        let r = Record::new("Dublin-Core-1", "http://x/")
            .with("TITLE", "T")
            .with("CREATOR-2", "B");
        let l = lines(&r);
        assert!(l.contains(&"<http://x/> <http://purl.org/dc/terms/title> \"T\"".into()));
        assert!(l.contains(&"<http://x/> <http://purl.org/dc/terms/creator> \"B\"".into()));
        assert!(l.contains(&"<http://x/> <urn:x-soif:record:1#CREATOR-2> \"B\"".into()));
    }

    #[test]
    fn urls_that_name_no_iri_give_blank_subjects_and_are_kept() {
        let mut m = Mapping::new();
        let (s, t) = m.triples(&Record::new("FILE", "-").with("Title", "x"));
        assert_eq!(s.to_string(), "_:r1");
        assert!(t
            .iter()
            .all(|t| t.predicate.as_str() != "urn:x-soif:record:1#url"));
        let (s, t) = m.triples(&Record::new("FILE", "draft.txt"));
        assert_eq!(s.to_string(), "_:r2");
        assert_eq!(
            t[0].to_string(),
            "_:r2 <urn:x-soif:record:1#url> \"draft.txt\""
        );
        assert_eq!(m.warnings(), 1);
        assert_eq!(
            m.take_notices(),
            ["URL `draft.txt` names no IRI: the subject is a blank node, the URL soif:url"]
        );
        assert!(m.take_notices().is_empty());
        assert_eq!(subject_iri(b"-"), None);
        assert_eq!(subject_iri(b"x y").map(NamedNode::into_string), None);
        assert_eq!(
            subject_iri(b"http://x/a b")
                .map(NamedNode::into_string)
                .as_deref(),
            Some("http://x/a%20b")
        );
        // Percent-encoded subject: the URL as it was in soif:url.
        let (s, t) = m.triples(&Record::new("FILE", "http://x/a b"));
        assert_eq!(s.to_string(), "<http://x/a%20b>");
        assert_eq!(
            t[0].to_string(),
            "<http://x/a%20b> <urn:x-soif:record:1#url> \"http://x/a b\""
        );
        // Bytes that are not UTF-8: %HH in the IRI, base64 in soif:url.
        let (s, t) = m.triples(&Record::new("FILE", &b"http://x/caf\xe9"[..]));
        assert_eq!(s.to_string(), "<http://x/caf%E9>");
        assert_eq!(
            t[0].object,
            Literal::new_typed_literal("aHR0cDovL3gvY2Fm6Q==", xsd::BASE_64_BINARY).into()
        );
    }

    #[test]
    fn values_xml_cannot_carry_are_base64() {
        let r = Record::new("FILE", "http://x/")
            .with("A", b"caf\xe9".to_vec())
            .with("B", "line\r\nend")
            .with("C", "bell\u{7}")
            .with("D", "tab\tand\nnewline é");
        let (_, t) = Mapping::new().triples(&r);
        let obj = |name: &str| {
            t.iter()
                .find(|t| t.predicate.as_str() == format!("{SOIF}{name}"))
                .map(|t| t.object.to_string())
        };
        assert_eq!(
            obj("A").as_deref(),
            Some("\"Y2Fm6Q==\"^^<http://www.w3.org/2001/XMLSchema#base64Binary>")
        );
        assert_eq!(
            obj("B").as_deref(),
            Some("\"bGluZQ0KZW5k\"^^<http://www.w3.org/2001/XMLSchema#base64Binary>")
        );
        assert!(obj("C").is_some_and(|o| o.ends_with("base64Binary>")));
        assert_eq!(obj("D").as_deref(), Some("\"tab\\tand\\nnewline é\""));
    }

    #[test]
    fn action_and_collapsed_values() {
        let mut r = Record::new("FILE", "http://x/");
        r.action = Some(Action::Delete);
        r.push(
            "Author",
            Value::List(vec![Value::from("a"), Value::from("b")]),
        );
        let l = lines(&r);
        assert!(l.contains(&"<http://x/> <urn:x-soif:record:1#action> \"delete\"".into()));
        assert!(l.contains(&"<http://x/> <urn:x-soif:record:1#Author-2> \"b\"".into()));
        assert!(l.contains(&"<http://x/> <http://purl.org/dc/terms/creator> \"a\"".into()));
    }

    #[test]
    fn local_names() {
        let name = |n: &[u8]| {
            let mut s = String::new();
            push_local_name(n, &mut s);
            s
        };
        assert_eq!(name(b"Title"), "Title");
        assert_eq!(name(b"Embed<1>-Type"), "Embed_3C1_3E-Type");
        assert_eq!(name(b"_id"), "_5Fid");
        assert_eq!(name(b"1st"), "_31st");
        assert_eq!(name(b""), "_");
        assert_eq!(
            name(b"Weightlist-[IMAGE:Subject]"),
            "Weightlist-_5BIMAGE_3ASubject_5D"
        );
    }

    proptest! {
        #[test]
        fn local_names_round_trip_and_are_xml_names(name in proptest::collection::vec(any::<u8>(), 0..12)) {
            let mut s = String::new();
            push_local_name(&name, &mut s);
            prop_assert_eq!(attribute_name(&s), Some(name));
            let mut chars = s.chars();
            prop_assert!(chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_'));
            prop_assert!(chars.all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)));
            let iri = format!("{SOIF}{s}");
            prop_assert!(NamedNode::new(iri).is_ok());
        }

        #[test]
        fn xml_can_carry_what_xml_keeps(text in "[a-zé\\t\\n ]{0,70}[\\x00-\\x1F\\x{FFFE}\\x{FFFF}\\x{EFFF}\\x{FEFF}]?\\PC{0,40}") {
            let expected = !text.chars().any(|c| {
                (c < ' ' && c != '\t' && c != '\n') || c == '\u{FFFE}' || c == '\u{FFFF}'
            });
            prop_assert_eq!(xml_can_carry(&text), expected);
        }

        #[test]
        fn every_value_comes_back(value in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut buf = String::new();
            let lit = literal(&value, &mut buf);
            let back = if lit.datatype() == xsd::BASE_64_BINARY {
                base64::engine::general_purpose::STANDARD.decode(lit.value()).unwrap()
            } else {
                lit.value().as_bytes().to_vec()
            };
            prop_assert_eq!(back, value);
        }
    }
}
