//! `soif convert --to ntriples|turtle|jsonld|rdfxml` end to end on real files: every
//! serialisation parsed back (the Oxigraph parsers) to the same graph; quirky bytes
//! (not UTF-8, control characters, carriage returns) back byte for byte; envelopes;
//! pipeline files. tests/python/test_rdf.py compares the same outputs with rdflib.

use crate::common::{self, code, convert, convert_ok, fixture, stderr};

use base64::Engine as _;
use oxrdf::{Term, Triple};
use oxrdfio::RdfParser;
use std::collections::BTreeSet;
use std::path::Path;

const FORMATS: [&str; 4] = ["ntriples", "turtle", "jsonld", "rdfxml"];

fn parse(name: &str, bytes: &[u8]) -> Vec<Triple> {
    let syntax = soif_sinks::Format::parse(name)
        .and_then(soif_sinks::Format::rdf_syntax)
        .expect("an RDF format");
    RdfParser::from_format(syntax.rdf_format())
        .for_slice(bytes)
        .map(|q| {
            let q = q.unwrap_or_else(|e| {
                panic!(
                    "--to {name} does not parse: {e}\n{}",
                    String::from_utf8_lossy(bytes)
                )
            });
            Triple::new(q.subject, q.predicate, q.object)
        })
        .collect()
}

/// The graph, blank nodes named by order of appearance (they are subjects only).
fn canonical(triples: &[Triple]) -> BTreeSet<String> {
    let mut blanks: Vec<String> = Vec::new();
    triples
        .iter()
        .map(|t| {
            let s = t.subject.to_string();
            let s = if t.subject.is_blank_node() {
                let i = blanks.iter().position(|b| *b == s).unwrap_or_else(|| {
                    blanks.push(s.clone());
                    blanks.len() - 1
                });
                format!("_:b{i}")
            } else {
                s
            };
            format!("{s} {} {}", t.predicate, t.object)
        })
        .collect()
}

/// Each format's output for `inputs`; asserts they hold one graph, returns it.
fn one_graph(inputs: &[&str]) -> Vec<Triple> {
    let mut first: Option<(Vec<Triple>, BTreeSet<String>)> = None;
    for name in FORMATS {
        let mut args = inputs.to_vec();
        args.extend(["--to", name, "-q"]);
        let out = convert_ok(&args, b"");
        assert!(out.ends_with(b"\n"), "--to {name} ends its last line");
        let triples = parse(name, &out);
        let graph = canonical(&triples);
        match &first {
            None => first = Some((triples, graph)),
            Some((_, g)) => assert_eq!(&graph, g, "--to {name} differs from --to ntriples"),
        }
    }
    first.map(|(t, _)| t).unwrap_or_default()
}

/// The literal values of `predicate` on subjects whose N-Triples form is `subject`.
fn values(ts: &[Triple], subject: &str, predicate: &str) -> Vec<Vec<u8>> {
    ts.iter()
        .filter(|t| t.subject.to_string() == subject && t.predicate.as_str() == predicate)
        .map(|t| match &t.object {
            Term::Literal(l) if l.datatype().as_str().ends_with("#base64Binary") => {
                base64::engine::general_purpose::STANDARD
                    .decode(l.value())
                    .expect("base64")
            }
            Term::Literal(l) => l.value().as_bytes().to_vec(),
            other => panic!("not a literal: {other}"),
        })
        .collect()
}

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/data")
        .join(name)
        .display()
        .to_string()
}

const SOIF: &str = "urn:x-soif:record:1#";
const DCTERMS: &str = "http://purl.org/dc/terms/";

#[test]
fn every_format_holds_the_same_graph_of_the_seeds_and_examples() {
    let inputs: Vec<String> = [
        fixture("rfc2655/documents.soif").display().to_string(),
        fixture("rfc2655/dublin-core.soif").display().to_string(),
        fixture("harvest/ecrc-93-10.soif").display().to_string(),
    ]
    .into_iter()
    .chain(
        [
            "edge.soif",
            "envelopes.soif",
            "latin.soif",
            "harvest-files.soif",
            "dublin-core.soif",
        ]
        .map(example),
    )
    .collect();
    let args: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let ts = one_graph(&args);
    let ssl = "<http://home.netscape.com/eng/ssl3/ssl-toc.html>";
    assert_eq!(
        values(&ts, ssl, &format!("{SOIF}Author-3")),
        [b"Paul C. Kocher"]
    );
    assert_eq!(
        values(&ts, ssl, &format!("{DCTERMS}title")),
        [b"SSL Protocol V. 3.0"]
    );
    // @DELETE and @REFRESH envelopes: the action is a triple of its own.
    let jpg = "<http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg>";
    assert!(values(&ts, jpg, &format!("{SOIF}action")).contains(&b"delete".to_vec()));
}

#[test]
fn quirky_bytes_come_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("quirky.soif");
    let title: &[u8] = b"a <b> & ]]> \x01\x1b \xff\xfe end\r\nnext";
    let author: &[u8] = b"Jos\xe9 Mart\xednez";
    let mut soif = Vec::new();
    soif.extend_from_slice("@DOCUMENT { http://x/a\"<>|^é\n".as_bytes());
    soif.extend_from_slice(format!("Title{{{}}}:\t", title.len()).as_bytes());
    soif.extend_from_slice(title);
    soif.extend_from_slice(format!("\nAuthor{{{}}}:\t", author.len()).as_bytes());
    soif.extend_from_slice(author);
    soif.extend_from_slice(
        b"\nEmbed<1>-Type{10}:\tPostScript\n}\n@DOCUMENT { -\nTitle{4}:\tnone\n}\n",
    );
    std::fs::write(&input, &soif).unwrap();
    let ts = one_graph(&[input.to_str().unwrap()]);
    let s = "<http://x/a%22%3C%3E%7C%5E%C3%A9>";
    assert_eq!(values(&ts, s, &format!("{SOIF}Title")), [title]);
    assert_eq!(values(&ts, s, &format!("{DCTERMS}title")), [title]);
    assert_eq!(values(&ts, s, &format!("{SOIF}Author")), [author]);
    assert_eq!(
        values(&ts, s, &format!("{SOIF}Embed_3C1_3E-Type")),
        [b"PostScript"]
    );
    assert_eq!(
        values(&ts, s, &format!("{SOIF}url")),
        ["http://x/a\"<>|^é".as_bytes()]
    );
    // The record without a URL: a blank node, nothing of it lost.
    assert!(ts
        .iter()
        .any(|t| t.subject.is_blank_node() && t.object.to_string() == "\"none\""));
    // Nothing was changed, so nothing is counted as changed.
    let out = convert(&[input.to_str().unwrap(), "--to", "turtle"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

#[test]
fn a_url_that_names_no_iri_is_a_warning_with_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("relative.soif");
    std::fs::write(
        &input,
        b"@DOCUMENT { http://x/ok\nTitle{2}:\tok\n}\n@DOCUMENT { draft.txt\nTitle{1}:\tt\n}\n",
    )
    .unwrap();
    let out = convert(&[input.to_str().unwrap(), "--to", "ntriples"], b"");
    let err = stderr(&out);
    assert_eq!(code(&out), 0, "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("soif: warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("ntriples output: URL `draft.txt` names no IRI"),
        "{err}"
    );
    assert!(err.contains(", 1 warnings"), "{err}");
}

#[test]
fn pipeline_files_take_the_rdf_formats() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("rdf.toml");
    let input = fixture("rfc2655/documents.soif");
    let ttl = dir.path().join("out.ttl");
    let nt = dir.path().join("out.nt");
    std::fs::write(
        &pipeline,
        format!(
            "[source]\ninputs = [{input:?}]\n\n[[sink]]\nformat = \"turtle\"\noutput = {ttl:?}\n\n\
             [[sink]]\nformat = \"ntriples\"\noutput = {nt:?}\n"
        ),
    )
    .unwrap();
    let out = common::run(&["run", pipeline.to_str().unwrap(), "-q"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let turtle = canonical(&parse("turtle", &std::fs::read(&ttl).unwrap()));
    let ntriples = canonical(&parse("ntriples", &std::fs::read(&nt).unwrap()));
    assert_eq!(turtle, ntriples);
    assert!(turtle.len() > 20);
    // The RDF/XML sink's old Simple Dublin Core options are gone: a clear error.
    std::fs::write(
        &pipeline,
        format!("[source]\ninputs = [{input:?}]\n[[sink]]\nformat = \"rdfxml\"\ndcterms = true\n"),
    )
    .unwrap();
    let out = common::run(&["run", pipeline.to_str().unwrap()], b"");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("dcterms"), "{}", stderr(&out));
}
