//! The rdfxml sink on the seed examples and on hostile values, checked by parsing the
//! output with a real RDF/XML parser (oxrdfxml) and looking at the triples.

use crate::common;

use oxrdf::{NamedOrBlankNode, Term};
use soif_codecs::{Record, Value};
use soif_pipeline::Sink;
use soif_sinks::rdfxml::RdfXmlSink;
use soif_sinks::Charset;

const DC: &str = "http://purl.org/dc/elements/1.1/";
const DCTERMS: &str = "http://purl.org/dc/terms/";

/// (subject, predicate, literal) — subject `_:` for a blank node.
type T = (String, String, String);

fn write(records: &[Record], dcterms: bool, charset: Charset) -> (Vec<u8>, u64) {
    let mut out = Vec::new();
    let mut sink = RdfXmlSink::new(&mut out, dcterms, charset);
    for r in records {
        sink.write(r).unwrap();
    }
    sink.finish().unwrap();
    let w = sink.warnings();
    drop(sink);
    (out, w)
}

fn triples(xml: &[u8]) -> Vec<T> {
    oxrdfxml::RdfXmlParser::new()
        .for_slice(xml)
        .map(|t| {
            let t = t.unwrap_or_else(|e| {
                panic!("not valid RDF/XML: {e}\n{}", String::from_utf8_lossy(xml))
            });
            let s = match t.subject {
                NamedOrBlankNode::NamedNode(n) => n.into_string(),
                NamedOrBlankNode::BlankNode(_) => "_:".to_string(),
            };
            let o = match t.object {
                Term::Literal(l) => l.value().to_string(),
                other => panic!("unexpected non-literal object {other}"),
            };
            (s, t.predicate.into_string(), o)
        })
        .collect()
}

fn values<'a>(ts: &'a [T], subject: &str, element: &str) -> Vec<&'a str> {
    let p = match element.strip_prefix("dcterms:") {
        Some(term) => format!("{DCTERMS}{term}"),
        None => format!("{DC}{element}"),
    };
    ts.iter()
        .filter(|(s, pr, _)| s == subject && *pr == p)
        .map(|(_, _, o)| o.as_str())
        .collect()
}

#[test]
fn rfc2655_documents() {
    let (xml, warnings) = write(&common::documents(), false, Charset::Utf8);
    assert_eq!(warnings, 0);
    let ts = triples(&xml);
    let ssl = "http://home.netscape.com/eng/ssl3/ssl-toc.html";
    assert_eq!(values(&ts, ssl, "title"), ["SSL Protocol V. 3.0"]);
    // Author-1..3 → three dc:creator, in order.
    assert_eq!(
        values(&ts, ssl, "creator"),
        ["Alan O. Freier", "Philip Karlton", "Paul C. Kocher"]
    );
    assert_eq!(values(&ts, ssl, "format"), ["text/html"]);
    assert_eq!(values(&ts, ssl, "identifier"), [ssl]);
    // The abstract holds markup: it comes back as the same text.
    assert!(values(&ts, ssl, "description")[0].contains("<B>Secure Sockets Layer (SSL V3.0)</B>"));
    // Last-Modified (RFC 850 form) becomes an ISO 8601 dc:date.
    let jpg = "http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg";
    assert_eq!(values(&ts, jpg, "date"), ["1996-06-11T19:18:44Z"]);
    assert_eq!(
        values(&ts, "http://home.netscape.com:80/", "title"),
        ["Welcome to Netscape"]
    );
}

#[test]
fn rfc2655_dublin_core_template() {
    let (xml, _) = write(&[common::dublin_core()], false, Charset::Utf8);
    let ts = triples(&xml);
    let s = "ftp://ds.internic.net/internet-drafts/draft-kunze-dc-00.txt";
    assert_eq!(
        values(&ts, s, "title"),
        ["Dublin Core Metadata for Simple Resource Description"]
    );
    assert_eq!(
        values(&ts, s, "creator"),
        ["S. Weibel", "J. Kunze", "C. Lagoze"]
    );
    let contributors = values(&ts, s, "contributor");
    assert_eq!(contributors.len(), 10);
    assert_eq!(contributors[9], "Wick Nichols");
    // The record's own IDENTIFIER is kept, not replaced by the URL.
    assert_eq!(values(&ts, s, "identifier"), ["draft-kunze-dc-00.txt"]);
    assert_eq!(values(&ts, s, "date"), ["February 9, 1997"]);
    assert_eq!(values(&ts, s, "language"), ["eng"]);
    // All fifteen elements are there.
    let preds: std::collections::BTreeSet<_> = ts.iter().map(|t| t.1.clone()).collect();
    assert_eq!(preds.len(), 15, "{preds:?}");
}

#[test]
fn harvest_file_record_with_dcterms() {
    let (xml, _) = write(&[common::harvest_file()], true, Charset::Utf8);
    let ts = triples(&xml);
    let s = "ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z";
    // Harvest's Type, as a MIME type by the dc crosswalk.
    assert_eq!(values(&ts, s, "format"), ["application/x-compress"]);
    // Last-Modification-Time 774988159 (Unix seconds).
    assert_eq!(values(&ts, s, "date"), ["1994-07-23T18:29:19Z"]);
    assert_eq!(values(&ts, s, "dcterms:modified"), ["1994-07-23T18:29:19Z"]);
    assert_eq!(values(&ts, s, "dcterms:extent"), ["164373 bytes"]);
    // The keywords of the embedded PostScript file describe the resource.
    assert_eq!(
        values(&ts, s, "subject"),
        ["technical report ECRC{93{10 Polymorphic Sorts and Types for Concurrent Functional Programs Bent Thomsen"]
    );
    assert_eq!(values(&ts, s, "identifier"), [s]);
}

#[test]
fn collapsed_lists_become_repeated_elements() {
    let r = Record::new("DOCUMENT", "http://x/")
        .with("Author", Value::List(vec!["A".into(), "B".into()]));
    let (xml, _) = write(&[r], false, Charset::Utf8);
    assert_eq!(values(&triples(&xml), "http://x/", "creator"), ["A", "B"]);
}

#[test]
fn hostile_values_stay_well_formed_and_are_counted() {
    let r = Record::new("DOCUMENT", "http://x/a b?q=<1>&r=\"2\"")
        .with("Title", "a < b && c ]]> d </dc:title>")
        .with("Abstract", "bell\u{7} nul\0 esc\u{1b} tab\t cr\r\n end")
        .with("Keywords", Value::from(b"caf\xe9 \xff\xfe".to_vec()));
    let (xml, warnings) = write(std::slice::from_ref(&r), false, Charset::Utf8);
    let ts = triples(&xml);
    let s = "http://x/a%20b?q=%3C1%3E&r=%222%22";
    assert_eq!(values(&ts, s, "title"), ["a < b && c ]]> d </dc:title>"]);
    assert_eq!(
        values(&ts, s, "description"),
        ["bell\u{fffd} nul\u{fffd} esc\u{fffd} tab\t cr\r\n end"]
    );
    assert_eq!(values(&ts, s, "subject"), ["caf\u{fffd} \u{fffd}\u{fffd}"]);
    // Three control characters, one invalid UTF-8 value.
    assert_eq!(warnings, 4);
    // Latin-1: the same bytes read as ISO 8859-1, no warning for them.
    let (xml, warnings) = write(&[r], false, Charset::Latin1);
    assert_eq!(values(&triples(&xml), s, "subject"), ["café ÿþ"]);
    assert_eq!(warnings, 3);
}

#[test]
fn no_url_and_relative_url_are_blank_nodes() {
    let records = [
        Record::new("DOCUMENT", "-").with("Title", "none"),
        Record::new("DOCUMENT", "draft-kunze-dc-00.txt").with("Title", "relative"),
    ];
    let (xml, warnings) = write(&records, false, Charset::Utf8);
    let ts = triples(&xml);
    assert_eq!(values(&ts, "_:", "title"), ["none", "relative"]);
    assert_eq!(values(&ts, "_:", "identifier"), ["draft-kunze-dc-00.txt"]);
    assert_eq!(warnings, 1);
}

#[test]
fn empty_stream_is_an_empty_graph() {
    let (xml, _) = write(&[], true, Charset::Utf8);
    assert!(triples(&xml).is_empty());
    assert!(String::from_utf8(xml).unwrap().ends_with("</rdf:RDF>\n"));
}

mod arbitrary_bytes {
    use super::*;
    use proptest::prelude::*;

    /// URLs: arbitrary bytes, and URL-like strings with awkward characters.
    fn url() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..40),
            "[a-z]{1,5}:(//[^/?#]{0,12})?[ -~\u{80}-\u{3000}]{0,30}".prop_map(String::into_bytes),
            Just(b"-".to_vec()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Whatever the bytes, the output parses as RDF/XML and every title is there.
        #[test]
        fn output_always_parses(
            url in url(),
            titles in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..30), 1..4),
            latin1 in any::<bool>(),
        ) {
            let mut r = Record::new("DOCUMENT", url);
            for t in &titles {
                r.push("Title", Value::from(t.clone()));
            }
            let charset = if latin1 { Charset::Latin1 } else { Charset::Utf8 };
            let (xml, _) = write(&[r], true, charset);
            let ts = triples(&xml);
            // The crosswalk trims values and drops empty ones and repeats.
            let mut expected: Vec<&[u8]> = Vec::new();
            for t in &titles {
                let trimmed = t.trim_ascii();
                if !trimmed.is_empty() && !expected.contains(&trimmed) {
                    expected.push(trimmed);
                }
            }
            let n = ts.iter().filter(|t| t.1 == format!("{DC}title")).count();
            prop_assert_eq!(n, expected.len());
        }
    }
}
