//! `soif convert --to rdfxml` end to end. The triples themselves are checked with a real
//! RDF/XML parser in `sinks/tests/sinks/rdfxml.rs`; here: the seeds through the CLI, the same
//! output with and without `-t dc` (one crosswalk), and hostile bytes read by the decoder
//! still giving well-formed XML (checked with Python's XML parser when python3 exists).

use crate::common;

use std::process::{Command, Output};

fn soif(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_soif"))
        .args(args)
        .output()
        .unwrap()
}

fn fixture(path: &str) -> String {
    format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "soif failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("RDF/XML output is UTF-8")
}

/// `(about, element, text)` for every property, parsed by Python's XML parser; `None`
/// without python3.
fn python_properties(xml: &str) -> Option<Vec<(String, String, String)>> {
    let script = r#"
import json, sys
import xml.etree.ElementTree as ET
RDF = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}"
root = ET.fromstring(sys.stdin.buffer.read())
assert root.tag == RDF + "RDF", root.tag
for d in root:
    assert d.tag == RDF + "Description", d.tag
    about = d.get(RDF + "about", "_:")
    for p in d:
        print(json.dumps([about, p.tag, p.text or ""]))
"#;
    common::python_json_lines(script, xml, "XML parser", "not well-formed XML")
}

const DC: &str = "{http://purl.org/dc/elements/1.1/}";

#[test]
fn seeds_and_the_dc_transform_agree() {
    let docs = fixture("rfc2655/documents.soif");
    let dc = fixture("rfc2655/dublin-core.soif");
    let harvest = fixture("harvest/ecrc-93-10.soif");
    let direct = ok(soif(&[
        "convert", &docs, &dc, &harvest, "--to", "rdfxml", "-q",
    ]));
    let via_dc = ok(soif(&[
        "convert", &docs, &dc, &harvest, "-t", "dc", "--to", "rdfxml", "-q",
    ]));
    assert_eq!(
        direct, via_dc,
        "the sink applies the same crosswalk as -t dc"
    );
    let Some(props) = python_properties(&direct) else {
        return;
    };
    let creators: Vec<&str> = props
        .iter()
        .filter(|(s, p, _)| {
            s == "http://home.netscape.com/eng/ssl3/ssl-toc.html" && *p == format!("{DC}creator")
        })
        .map(|(_, _, o)| o.as_str())
        .collect();
    assert_eq!(
        creators,
        ["Alan O. Freier", "Philip Karlton", "Paul C. Kocher"]
    );
    let contributors = props
        .iter()
        .filter(|(_, p, _)| *p == format!("{DC}contributor"))
        .count();
    assert_eq!(contributors, 10);
}

#[test]
fn hostile_bytes_stay_well_formed_with_dcterms() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.soif");
    let mut soif_text = Vec::new();
    let title: &[u8] = b"a <b> & ]]> \x01\x1b \xff\xfe end";
    soif_text.extend_from_slice("@DOCUMENT { http://x/a\"<>|^é\n".as_bytes());
    soif_text.extend_from_slice(format!("Title{{{}}}:\t", title.len()).as_bytes());
    soif_text.extend_from_slice(title);
    soif_text.extend_from_slice(b"\nFile-Size{3}:\t123\n}\n@DOCUMENT { -\nTitle{4}:\tnone\n}\n");
    std::fs::write(&input, &soif_text).unwrap();
    let xml = ok(soif(&[
        "convert",
        input.to_str().unwrap(),
        "--to",
        "rdfxml",
        "--dcterms",
        "-q",
    ]));
    assert!(
        xml.contains("rdf:about=\"http://x/a%22%3C%3E%7C%5E%C3%A9\""),
        "{xml}"
    );
    let Some(props) = python_properties(&xml) else {
        return;
    };
    let title_of = |s: &str| {
        props
            .iter()
            .find(|(a, p, _)| a == s && *p == format!("{DC}title"))
            .map(|(_, _, o)| o.clone())
    };
    assert_eq!(
        title_of("http://x/a%22%3C%3E%7C%5E%C3%A9").as_deref(),
        Some("a <b> & ]]> \u{fffd}\u{fffd} \u{fffd}\u{fffd} end")
    );
    assert_eq!(title_of("_:").as_deref(), Some("none"));
    assert!(props
        .iter()
        .any(|(_, p, o)| p == "{http://purl.org/dc/terms/}extent" && o == "123 bytes"));
}

/// What the sink had to change is reported with the record it was in, not only counted.
#[test]
fn changed_values_are_reported_with_their_record() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.soif");
    std::fs::write(
        &input,
        b"@DOCUMENT { http://x/ok\nTitle{2}:\tok\n}\n@DOCUMENT { http://x/bad\nTitle{3}:\ta\xffb\n}\n",
    )
    .unwrap();
    let out = soif(&["convert", input.to_str().unwrap(), "--to", "rdfxml"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("soif: warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("rdfxml output changed 1 value(s)")
            && warnings[0].contains(&format!(
                "{}: byte 39, record 2 (http://x/bad)",
                input.display()
            )),
        "{err}"
    );
    assert!(err.contains(", 1 warnings"), "{err}");
}
