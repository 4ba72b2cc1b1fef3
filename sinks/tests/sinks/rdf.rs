//! The RDF sinks on the seed examples and on hostile values, each output parsed back by
//! the Oxigraph parsers (`oxrdfio`) and compared with what the mapping says; a property
//! test that N-Triples of arbitrary records re-parses to exactly the mapping's triples.

use crate::common;

use base64::Engine as _;
use oxrdf::{NamedOrBlankNode, Term, Triple};
use oxrdfio::RdfParser;
use soif_codecs::{Record, Value};
use soif_pipeline::Sink;
use soif_sinks::rdf::mapping::{Mapping, DCTERMS, SOIF};
use soif_sinks::rdf::{RdfSink, Syntax};
use std::collections::BTreeSet;

const ALL: [Syntax; 4] = [
    Syntax::NTriples,
    Syntax::Turtle,
    Syntax::JsonLd,
    Syntax::RdfXml,
];

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

fn parse(syntax: Syntax, bytes: &[u8]) -> Vec<Triple> {
    RdfParser::from_format(syntax.rdf_format())
        .for_slice(bytes)
        .map(|q| {
            let q = q.unwrap_or_else(|e| {
                panic!(
                    "{syntax:?} does not parse: {e}\n{}",
                    String::from_utf8_lossy(bytes)
                )
            });
            Triple::new(q.subject, q.predicate, q.object)
        })
        .collect()
}

/// The graph with its blank nodes renamed `_:` + the blank subject's order of appearance,
/// so that graphs from different parsers compare (every blank node here is a subject).
fn canonical(triples: &[Triple]) -> BTreeSet<String> {
    let mut blanks: Vec<&NamedOrBlankNode> = Vec::new();
    for t in triples {
        if t.subject.is_blank_node() && !blanks.contains(&&t.subject) {
            blanks.push(&t.subject);
        }
    }
    triples
        .iter()
        .map(|t| {
            let s = match blanks.iter().position(|b| **b == t.subject) {
                Some(i) => format!("_:b{i}"),
                None => t.subject.to_string(),
            };
            format!("{s} {} {}", t.predicate, t.object)
        })
        .collect()
}

fn mapped(records: &[Record]) -> Vec<Triple> {
    let mut m = Mapping::new();
    records.iter().flat_map(|r| m.triples(r).1).collect()
}

/// The literal values of `subject`'s `predicate` (base64 ones decoded), in order.
fn values(ts: &[Triple], subject: &str, predicate: &str) -> Vec<Vec<u8>> {
    ts.iter()
        .filter(|t| t.subject.to_string() == subject && t.predicate.as_str() == predicate)
        .map(|t| match &t.object {
            Term::Literal(l) if l.datatype().as_str().ends_with("#base64Binary") => {
                base64::engine::general_purpose::STANDARD
                    .decode(l.value())
                    .unwrap()
            }
            Term::Literal(l) => l.value().as_bytes().to_vec(),
            other => panic!("not a literal: {other}"),
        })
        .collect()
}

fn dc(term: &str) -> String {
    format!("{DCTERMS}{term}")
}

fn soif(name: &str) -> String {
    format!("{SOIF}{name}")
}

#[test]
fn the_seeds_give_the_same_graph_in_every_syntax() {
    let records = common::all_seed_records();
    let expected = canonical(&mapped(&records));
    assert!(expected.len() > 100, "{}", expected.len());
    for syntax in ALL {
        let out = write(syntax, &records);
        assert_eq!(canonical(&parse(syntax, &out)), expected, "{syntax:?}");
    }
}

#[test]
fn rfc2655_documents() {
    let ts = parse(Syntax::RdfXml, &write(Syntax::RdfXml, &common::documents()));
    let ssl = "<http://home.netscape.com/eng/ssl3/ssl-toc.html>";
    let text = |v: Vec<Vec<u8>>| -> Vec<String> {
        v.into_iter()
            .map(|b| String::from_utf8(b).unwrap())
            .collect()
    };
    assert_eq!(
        text(values(&ts, ssl, &dc("title"))),
        ["SSL Protocol V. 3.0"]
    );
    let mut creators = text(values(&ts, ssl, &dc("creator")));
    creators.sort();
    assert_eq!(
        creators,
        ["Alan O. Freier", "Paul C. Kocher", "Philip Karlton"]
    );
    // The record itself, attribute by attribute, order kept in the names.
    assert_eq!(
        text(values(&ts, ssl, &soif("Author-2"))),
        ["Philip Karlton"]
    );
    assert_eq!(text(values(&ts, ssl, &soif("template"))), ["DOCUMENT"]);
    assert!(text(values(&ts, ssl, &dc("description")))[0]
        .contains("<B>Secure Sockets Layer (SSL V3.0)</B>"));
    let jpg = "<http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg>";
    assert_eq!(
        text(values(&ts, jpg, &dc("date"))),
        ["1996-06-11T19:18:44Z"]
    );
}

#[test]
fn the_dublin_core_template_keeps_its_own_elements() {
    let ts = parse(
        Syntax::Turtle,
        &write(Syntax::Turtle, &[common::dublin_core()]),
    );
    let s = "<ftp://ds.internic.net/internet-drafts/draft-kunze-dc-00.txt>";
    assert_eq!(
        values(&ts, s, &dc("identifier")),
        [b"draft-kunze-dc-00.txt"]
    );
    assert_eq!(values(&ts, s, &dc("date")), [b"February 9, 1997"]);
    assert_eq!(values(&ts, s, &dc("contributor")).len(), 10);
    let dcterms: BTreeSet<_> = ts
        .iter()
        .filter(|t| t.predicate.as_str().starts_with(DCTERMS))
        .map(|t| t.predicate.as_str())
        .collect();
    assert_eq!(dcterms.len(), 15, "{dcterms:?}");
}

#[test]
fn hostile_values_come_back_byte_for_byte() {
    let title: &[u8] = b"a < b && c ]]> d </dc:title>";
    let abstract_: &[u8] = b"bell\x07 nul\0 esc\x1b tab\t cr\r\n end";
    let keywords: &[u8] = b"caf\xe9 \xff\xfe";
    let r = Record::new("DOCUMENT", "http://x/a b?q=<1>&r=\"2\"")
        .with("Title", title.to_vec())
        .with("Abstract", abstract_.to_vec())
        .with("Keywords", keywords.to_vec())
        .with("Embed<1>-Type", "PostScript")
        .with("Weird\u{1}Name", "v");
    let s = "<http://x/a%20b?q=%3C1%3E&r=%222%22>";
    for syntax in ALL {
        let ts = parse(syntax, &write(syntax, std::slice::from_ref(&r)));
        assert_eq!(values(&ts, s, &soif("Title")), [title], "{syntax:?}");
        assert_eq!(values(&ts, s, &dc("title")), [title], "{syntax:?}");
        assert_eq!(values(&ts, s, &soif("Abstract")), [abstract_], "{syntax:?}");
        assert_eq!(values(&ts, s, &soif("Keywords")), [keywords], "{syntax:?}");
        assert_eq!(values(&ts, s, &soif("Embed_3C1_3E-Type")), [b"PostScript"]);
        assert_eq!(values(&ts, s, &soif("Weird_01Name")), [b"v"]);
        assert_eq!(
            values(&ts, s, &soif("url")),
            [b"http://x/a b?q=<1>&r=\"2\""],
            "{syntax:?}"
        );
    }
}

#[test]
fn blank_subjects_keep_their_urls() {
    let records = [
        Record::new("DOCUMENT", "-").with("Title", "none"),
        Record::new("DOCUMENT", "draft-kunze-dc-00.txt").with("Title", "relative"),
    ];
    let mut sink = RdfSink::new(Vec::new(), Syntax::NTriples);
    let mut notices = Vec::new();
    for r in &records {
        sink.write(r).unwrap();
        notices.extend(sink.take_notices());
    }
    assert_eq!(notices.len(), 1, "{notices:?}");
    for syntax in ALL {
        let ts = parse(syntax, &write(syntax, &records));
        let subjects: BTreeSet<String> = ts.iter().map(|t| t.subject.to_string()).collect();
        assert_eq!(subjects.len(), 2, "{syntax:?}");
        assert!(subjects.iter().all(|s| s.starts_with("_:")));
        assert!(ts.iter().any(|t| t.predicate.as_str() == soif("url")
            && t.object.to_string() == "\"draft-kunze-dc-00.txt\""));
    }
}

#[test]
fn collapsed_records_are_flattened() {
    let r = Record::new("DOCUMENT", "http://x/")
        .with("Author", Value::List(vec!["A".into(), "B".into()]));
    let ts = parse(Syntax::JsonLd, &write(Syntax::JsonLd, &[r]));
    assert_eq!(values(&ts, "<http://x/>", &soif("Author-1")), [b"A"]);
    assert_eq!(values(&ts, "<http://x/>", &dc("creator")).len(), 2);
}

mod arbitrary_records {
    use super::*;
    use proptest::prelude::*;

    fn url() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..40),
            "[a-z]{1,5}:(//[^/?#]{0,12})?[ -~\u{80}-\u{3000}]{0,30}".prop_map(String::into_bytes),
            Just(b"-".to_vec()),
        ]
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..30),
            "[ -~\t\n\r\u{80}-\u{3000}]{0,30}".prop_map(String::into_bytes),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Whatever the bytes, N-Triples re-parses to exactly the mapping's triples, and
        /// so does every other syntax.
        #[test]
        fn output_reparses_to_the_mapping(
            url in url(),
            attrs in proptest::collection::vec((bytes(), bytes()), 0..5),
        ) {
            let mut r = Record::new("DOCUMENT", url);
            for (name, value) in attrs {
                r.attributes.push(soif_codecs::Attribute {
                    name: name.into(),
                    value: Value::Bytes(value.into()),
                });
            }
            let records = [r];
            let expected = canonical(&mapped(&records));
            for syntax in ALL {
                let out = write(syntax, &records);
                prop_assert_eq!(&canonical(&parse(syntax, &out)), &expected, "{:?}", syntax);
            }
        }
    }
}
