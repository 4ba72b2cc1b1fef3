//! The `rdfxml` sink: Simple Dublin Core in RDF/XML, after the DCMI recommendation
//! "Expressing Simple Dublin Core in RDF/XML" (2002).
//!
//! ```xml
//! <?xml version="1.0" encoding="UTF-8"?>
//! <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
//!          xmlns:dc="http://purl.org/dc/elements/1.1/">
//!   <rdf:Description rdf:about="http://home.netscape.com/eng/ssl3/ssl-toc.html">
//!     <dc:title>SSL Protocol V. 3.0</dc:title>
//!     <dc:creator>Alan O. Freier</dc:creator>
//!     <dc:creator>Philip Karlton</dc:creator>
//!   </rdf:Description>
//! </rdf:RDF>
//! ```
//!
//! Records are written one by one as they arrive (nothing is held back); the document is
//! closed by [`Sink::finish`].
//!
//! **Which elements.** A record of the RFC 2655 App. C `Dublin-Core` template (also
//! `Dublin-Core-1` …) maps each attribute whose name, without a `-N` suffix, is one of the
//! fifteen elements (`TITLE`, `CREATOR-2`, …) to that `dc:` element. Any other record is
//! first mapped by the `dc` transform's default crosswalk
//! ([`soif_codecs::rules::dc::Crosswalk`], the single definition of the mapping:
//! `Title`→TITLE, `Author-N`→CREATOR, `Keywords`→SUBJECT, the URL→IDENTIFIER, dates as ISO
//! 8601, Harvest types as MIME types, …); a value it cannot convert is kept and counted as
//! a warning. Attributes without a Dublin Core counterpart are not written: Simple Dublin
//! Core has nowhere to put them. Multi-values (`Author-1` …, or lists after `collapse`)
//! become repeated elements. Use `-t dc:mapping.toml` before this sink for another
//! mapping: its output is a `Dublin-Core` record and passes straight through.
//!
//! **`--dcterms`** adds `dcterms:modified` (from `Last-Modification-Time`,
//! `Last-Modified` or `Update-Time`, as ISO 8601) and `dcterms:extent` (from `File-Size` or
//! `Content-Length`, as `N bytes`).
//!
//! **Always well-formed.** `<`, `>`, `&` and quotes are escaped (so `]]>` cannot occur), a
//! carriage return is written as `&#13;` so that it survives parsing. Characters XML 1.0
//! forbids (C0 controls other than tab, LF, CR; U+FFFE, U+FFFF) become U+FFFD, and invalid
//! UTF-8 is replaced (or, with `--charset latin1`, read as ISO 8859-1); each such repair
//! counts as a warning ([`Sink::warnings`]).
//!
//! **Subjects.** `rdf:about` is the record's URL made a valid IRI: spaces, controls,
//! `"`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|`, `}`, non-ASCII characters (as UTF-8), a `%`
//! not followed by two hex digits and misplaced `#`, `[`, `]`, `@`, `:` are
//! percent-encoded. A record whose URL is `-`, or not
//! an absolute URL (no scheme), becomes a blank node (an `rdf:Description` without
//! `rdf:about`); a URL that is not absolute is still written as `dc:identifier` and counted
//! as a warning.

use crate::rdf::mapping::to_iri;
use crate::Charset;
use soif_codecs::rules::dc::Crosswalk;
use soif_codecs::rules::text::text_counted;
use soif_codecs::rules::text::{escape_text, xml_chars};
use soif_codecs::rules::{dates, names};
use soif_codecs::{Record, Value};
use soif_pipeline::{Error, Sink, SinkError};
use std::borrow::Cow;
use std::io::Write;

const RDF_NS: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
const DC_NS: &str = "http://purl.org/dc/elements/1.1/";
const DCTERMS_NS: &str = "http://purl.org/dc/terms/";

use soif_codecs::rules::dc::xml_element;

/// Writes records as Simple Dublin Core in RDF/XML.
pub struct RdfXmlSink<W: Write + Send> {
    out: W,
    dcterms: bool,
    charset: Charset,
    warnings: u64,
    started: bool,
    /// One record's XML, reused from record to record.
    buf: Vec<u8>,
}

impl<W: Write + Send> RdfXmlSink<W> {
    /// A sink writing to `out`; `dcterms` adds `dcterms:modified` and `dcterms:extent`.
    pub fn new(out: W, dcterms: bool, charset: Charset) -> RdfXmlSink<W> {
        RdfXmlSink {
            out,
            dcterms,
            charset,
            warnings: 0,
            started: false,
            buf: Vec::with_capacity(4096),
        }
    }

    fn start(&mut self) -> Result<(), Error> {
        if self.started {
            return Ok(());
        }
        let mut head = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rdf:RDF xmlns:rdf=\"{RDF_NS}\" xmlns:dc=\"{DC_NS}\""
        );
        if self.dcterms {
            head.push_str(&format!(" xmlns:dcterms=\"{DCTERMS_NS}\""));
        }
        head.push_str(">\n");
        self.out
            .write_all(head.as_bytes())
            .map_err(|e| Error::io("writing rdf/xml", e))?;
        self.started = true;
        Ok(())
    }

    /// XML-safe, escaped text for a value; counts repairs.
    fn text(&mut self, bytes: &[u8]) -> String {
        let text = text_counted(bytes, self.charset, &mut self.warnings);
        let (clean, fixed) = xml_chars(&text);
        self.warnings += fixed;
        escape_text(&clean)
    }

    fn element(&mut self, qname: &str, bytes: &[u8]) {
        let text = self.text(bytes);
        self.buf.extend_from_slice(b"    <");
        self.buf.extend_from_slice(qname.as_bytes());
        self.buf.push(b'>');
        self.buf.extend_from_slice(text.as_bytes());
        self.buf.extend_from_slice(b"</");
        self.buf.extend_from_slice(qname.as_bytes());
        self.buf.extend_from_slice(b">\n");
    }

    fn render(&mut self, record: &Record) {
        self.buf.clear();
        let about = if record.has_no_url() {
            None
        } else {
            let url = text_counted(&record.url, self.charset, &mut self.warnings);
            let iri = to_iri(&url);
            if iri.is_none() {
                // Not absolute: the resource has no IRI we can name; keep the URL as text.
                self.warnings += 1;
            }
            iri
        };
        match &about {
            Some(iri) => {
                let attr = quick_xml::escape::escape(iri.as_str());
                self.buf
                    .extend_from_slice(b"  <rdf:Description rdf:about=\"");
                self.buf.extend_from_slice(attr.as_bytes());
                self.buf.extend_from_slice(b"\">\n");
            }
            None => self.buf.extend_from_slice(b"  <rdf:Description>\n"),
        }
        // Dublin Core records pass through; others go through the `dc` transform's
        // crosswalk (the one definition of the mapping), whose unconvertible values (a
        // date it cannot read) are kept as they were and counted.
        let mapped = if is_dublin_core(&record.template) {
            Cow::Borrowed(record)
        } else {
            let (r, notes) = Crosswalk::default_table().apply(record);
            self.warnings += notes.len() as u64;
            Cow::Owned(r)
        };
        let flat = mapped.flattened();
        let mut has_identifier = false;
        for attr in &flat.attributes {
            let Value::Bytes(value) = &attr.value else {
                continue;
            };
            let Some(element) = xml_element(names::base_name(&attr.name)) else {
                continue;
            };
            has_identifier |= element == "identifier";
            self.element(&format!("dc:{element}"), value);
        }
        if about.is_none() && !record.has_no_url() && !has_identifier {
            // The URL names no IRI (not absolute): keep it as the identifier.
            let url = record.url.clone();
            self.element("dc:identifier", &url);
        }
        if self.dcterms {
            let flat = record.flattened();
            let modified = ["Last-Modification-Time", "Last-Modified", "Update-Time"]
                .iter()
                .find_map(|n| flat.get_ignore_case(n).and_then(Value::as_bytes).cloned());
            if let Some(m) = modified {
                let v = dates::to_iso(&m).map_or(m.to_vec(), String::into_bytes);
                self.element("dcterms:modified", &v);
            }
            let extent = ["File-Size", "Content-Length"]
                .iter()
                .find_map(|n| flat.get_ignore_case(n).and_then(Value::as_bytes).cloned());
            if let Some(x) = extent {
                let t = String::from_utf8_lossy(&x).trim().to_string();
                if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                    self.element("dcterms:extent", format!("{t} bytes").as_bytes());
                } else {
                    self.element("dcterms:extent", &x);
                }
            }
        }
        self.buf.extend_from_slice(b"  </rdf:Description>\n");
    }
}

impl<W: Write + Send> Sink for RdfXmlSink<W> {
    fn name(&self) -> &str {
        "rdfxml"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        self.start()?;
        self.render(record);
        self.out
            .write_all(&self.buf)
            .map_err(|e| SinkError::Fatal(Error::io("writing rdf/xml", e)))
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.start()?;
        self.out
            .write_all(b"</rdf:RDF>\n")
            .and_then(|()| self.out.flush())
            .map_err(|e| Error::io("writing rdf/xml", e))
    }

    fn warnings(&self) -> u64 {
        self.warnings
    }
}

use soif_codecs::rules::dc::is_dublin_core;

/// `[[sink]] format = "rdfxml"` / `--to rdfxml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// A path, or `-`/none for stdout.
    pub output: Option<String>,
    /// Also write qualified DCMI terms.
    pub dcterms: bool,
    /// Values that are not UTF-8: replaced (`utf8`) or read as ISO 8859-1.
    pub charset: Charset,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_made_xml_safe() {
        let (t, n) = xml_chars("a\u{1}b\tc\u{FFFF}");
        assert_eq!((t.as_ref(), n), ("a\u{FFFD}b\tc\u{FFFD}", 2));
        assert_eq!(escape_text("<a> & ]]> \r"), "&lt;a&gt; &amp; ]]&gt; &#13;");
    }

    #[test]
    fn element_tables() {
        assert!(is_dublin_core(b"Dublin-Core"));
        assert!(is_dublin_core(b"dublin-core-1"));
        assert!(!is_dublin_core(b"DOCUMENT"));
        assert_eq!(xml_element(b"CREATOR"), Some("creator"));
        assert_eq!(xml_element(b"Author"), None);
    }
}
