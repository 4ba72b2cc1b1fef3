//! The RDF sinks — `ntriples`, `turtle`, `jsonld` and `rdfxml` — and the one mapping of a
//! record to triples they all write ([`mapping`]; docs/linked-data.md is the reference).
//!
//! ```
//! use soif_codecs::Record;
//! use soif_pipeline::Sink;
//! use soif_sinks::rdf::{RdfSink, Syntax};
//! let mut out = Vec::new();
//! let mut sink = RdfSink::new(&mut out, Syntax::NTriples);
//! sink.write(&Record::new("FILE", "http://example.org/").with("Title", "Home")).unwrap();
//! sink.finish().unwrap();
//! drop(sink);
//! let text = String::from_utf8(out).unwrap();
//! assert!(text.contains("<http://example.org/> <http://purl.org/dc/terms/title> \"Home\" .\n"));
//! ```
//!
//! The serialisers are the Oxigraph project's (through `oxrdfio`: `oxttl` for Turtle,
//! `oxrdfxml`, `oxjsonld`); N-Triples lines are `oxrdf`'s syntax of a triple, with the
//! text of literals copied in runs ([`ntriples`]: the same bytes, faster). Each record's triples are written as the record
//! comes, one after the other, so a record is one `rdf:Description` in RDF/XML, one
//! subject block in Turtle and one node object in JSON-LD; nothing is held from one
//! record to the next, and memory stays flat whatever the input's size. Values are never
//! changed: what a format could not carry is a base64 literal (see [`mapping`]), so the
//! four formats hold the same triples.

pub mod mapping;
pub mod ntriples;

use mapping::{Mapping, PREFIXES};
use oxrdfio::{RdfFormat, RdfSerializer, WriterQuadSerializer};
use soif_codecs::Record;
use soif_pipeline::{Error, Sink, SinkError};
use std::io::Write;

/// An RDF serialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// N-Triples: one triple per line.
    NTriples,
    /// Turtle, with the `dcterms:`, `soif:` and `xsd:` prefixes.
    Turtle,
    /// JSON-LD: a streaming document, one node object per record, full IRIs as keys (the
    /// serialiser, `oxjsonld` 0.2, compacts no IRI, so no `@context` is written).
    JsonLd,
    /// RDF/XML.
    RdfXml,
}

impl Syntax {
    /// The format's name on the command line (`--to ntriples`).
    pub fn name(self) -> &'static str {
        match self {
            Syntax::NTriples => "ntriples",
            Syntax::Turtle => "turtle",
            Syntax::JsonLd => "jsonld",
            Syntax::RdfXml => "rdfxml",
        }
    }

    /// The format's `oxrdfio` name (to parse an output back, as the tests do).
    pub fn rdf_format(self) -> RdfFormat {
        match self {
            Syntax::NTriples => RdfFormat::NTriples,
            Syntax::Turtle => RdfFormat::Turtle,
            Syntax::JsonLd => RdfFormat::JsonLd {
                profile: oxjsonld::JsonLdProfile::Streaming.into(),
            },
            Syntax::RdfXml => RdfFormat::RdfXml,
        }
    }
}

/// Writes records as RDF in one [`Syntax`].
pub struct RdfSink<W: Write + Send> {
    /// `None` once finished.
    out: Option<Output<W>>,
    syntax: Syntax,
    mapping: Mapping,
}

impl<W: Write + Send> RdfSink<W> {
    /// A sink writing `syntax` to `out`.
    pub fn new(out: W, syntax: Syntax) -> RdfSink<W> {
        let mut serializer = RdfSerializer::from_format(syntax.rdf_format());
        if syntax != Syntax::NTriples {
            for (name, iri) in PREFIXES {
                serializer = serializer
                    .with_prefix(name, iri)
                    .unwrap_or_else(|_| unreachable!("the prefixes are valid IRIs"));
            }
        }
        let out = if syntax == Syntax::NTriples {
            Output::Lines {
                out,
                lines: String::new(),
            }
        } else {
            Output::Serializer(Box::new(serializer.for_writer(out)))
        };
        RdfSink {
            out: Some(out),
            syntax,
            mapping: Mapping::new(),
        }
    }

    fn io_error(&self, e: std::io::Error) -> Error {
        Error::io(format!("writing {}", self.syntax.name()), e)
    }
}

impl<W: Write + Send> Sink for RdfSink<W> {
    fn name(&self) -> &str {
        self.syntax.name()
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        let Some(out) = self.out.as_mut() else {
            return Err(SinkError::Fatal(Error::Fatal(format!(
                "{} output written after it was finished",
                self.syntax.name()
            ))));
        };
        let written = match out {
            Output::Serializer(out) => self
                .mapping
                .record(record, |t| out.serialize_triple(t))
                .map(drop),
            Output::Lines { out, lines } => {
                lines.clear();
                self.mapping
                    .record(record, |t| {
                        ntriples::push_line(t, lines);
                        Ok::<(), std::convert::Infallible>(())
                    })
                    .unwrap_or_else(|never| match never {});
                out.write_all(lines.as_bytes())
            }
        };
        written.map_err(|e| SinkError::Fatal(self.io_error(e)))
    }

    fn finish(&mut self) -> Result<(), Error> {
        let Some(out) = self.out.take() else {
            return Ok(());
        };
        let syntax = self.syntax;
        let out = match out {
            Output::Serializer(out) => out.finish(),
            Output::Lines { out, .. } => Ok(out),
        };
        out.and_then(|mut w| {
            // JSON-LD and RDF/XML end with their closing bracket or tag: end the line.
            if matches!(syntax, Syntax::JsonLd | Syntax::RdfXml) {
                w.write_all(b"\n")?;
            }
            w.flush()
        })
        .map_err(|e| self.io_error(e))
    }

    /// The mapping's notices: a URL that names no IRI, a value the crosswalk kept
    /// unconverted. No value is ever changed to fit a format.
    fn take_notices(&mut self) -> Vec<String> {
        self.mapping.take_notices()
    }
}

/// Where the triples go.
enum Output<W: Write + Send> {
    /// `oxrdfio`'s serialiser (Turtle, JSON-LD, RDF/XML: they group a record's triples).
    Serializer(Box<WriterQuadSerializer<W>>),
    /// N-Triples: each record's lines ([`ntriples::push_line`]: what `oxttl`'s serialiser
    /// writes, byte for byte), made in one reused buffer and written at once.
    Lines { out: W, lines: String },
}

/// `[[sink]] format = "ntriples" | "turtle" | "jsonld" | "rdfxml"` / `--to …`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// A path, or `-`/none for stdout.
    pub output: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::Triple;
    use oxrdfio::RdfParser;
    use soif_codecs::Value;
    use std::collections::BTreeSet;

    const ALL: [Syntax; 4] = [
        Syntax::NTriples,
        Syntax::Turtle,
        Syntax::JsonLd,
        Syntax::RdfXml,
    ];

    fn records() -> Vec<Record> {
        vec![
            Record::new("FILE", "http://x/a b")
                .with("Title", "a <b> & ]]> \"q\" é")
                .with("Embed<1>-Keywords", "k1\nk2")
                .with("Bad", b"\xff\x00\r\n".to_vec())
                .with("Last-Modification-Time", "774988159"),
            Record::new("DOCUMENT", "-").with("Title", "none"),
            Record::new("Dublin-Core", "draft.txt")
                .with("TITLE", "t")
                .with("CREATOR", Value::List(vec!["x".into(), "y".into()])),
        ]
    }

    fn write(syntax: Syntax, records: &[Record]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut sink = RdfSink::new(&mut out, syntax);
        for r in records {
            sink.write(r).unwrap();
        }
        sink.finish().unwrap();
        drop(sink);
        out
    }

    /// The triples, blank nodes named by their subject's `soif:template` so that graphs
    /// from different parsers compare (each record has at most one blank subject here).
    fn parse(syntax: Syntax, bytes: &[u8]) -> BTreeSet<String> {
        let triples: Vec<Triple> = RdfParser::from_format(syntax.rdf_format())
            .for_slice(bytes)
            .map(|q| {
                let q = q.unwrap_or_else(|e| {
                    panic!("{syntax:?}: {e}\n{}", String::from_utf8_lossy(bytes))
                });
                Triple::new(q.subject, q.predicate, q.object)
            })
            .collect();
        triples
            .iter()
            .map(|t| {
                let s = if t.subject.is_blank_node() {
                    let template = triples
                        .iter()
                        .find(|u| {
                            u.subject == t.subject
                                && u.predicate.as_str() == "urn:x-soif:record:1#template"
                        })
                        .map(|u| u.object.to_string())
                        .unwrap_or_default();
                    format!("_:{template}")
                } else {
                    t.subject.to_string()
                };
                format!("{s} {} {}", t.predicate, t.object)
            })
            .collect()
    }

    #[test]
    fn every_syntax_holds_the_same_triples() {
        let records = records();
        let expected: BTreeSet<String> = {
            let mut m = Mapping::new();
            let mut all = Vec::new();
            for r in &records {
                all.extend(m.triples(r).1);
            }
            let text: String = all.iter().map(|t| format!("{t} .\n")).collect();
            parse(Syntax::NTriples, text.as_bytes())
        };
        assert!(expected.len() > 15, "{expected:#?}");
        for syntax in ALL {
            let out = write(syntax, &records);
            assert_eq!(parse(syntax, &out), expected, "{syntax:?}");
        }
    }

    #[test]
    fn an_empty_stream_is_an_empty_document() {
        for syntax in ALL {
            let out = write(syntax, &[]);
            assert!(parse(syntax, &out).is_empty(), "{syntax:?}");
        }
        assert!(write(Syntax::NTriples, &[]).is_empty());
    }

    #[test]
    fn notices_name_what_the_mapping_could_not_do() {
        let mut out = Vec::new();
        let mut sink = RdfSink::new(&mut out, Syntax::Turtle);
        sink.write(&Record::new("FILE", "draft.txt").with("Date", "soon"))
            .unwrap();
        let notices = sink.take_notices();
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(
            notices[1].starts_with("dcterms:date: `soon` kept as it was"),
            "{notices:?}"
        );
        assert_eq!(sink.warnings(), 0);
    }
}
