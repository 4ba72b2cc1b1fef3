//! The `dc` crosswalk on the seed examples (decoded from the canonical fixtures of
//! RFC 2655 §6 / App. C and the Harvest manual), and a user mapping file.

use soif_codecs::soif::{decode_all, DecoderOptions};
use soif_codecs::{Record, Value};
use soif_pipeline::transforms::dc::{crosswalk, Crosswalk};
use soif_pipeline::transforms::{build, TransformContext};
use soif_pipeline::Collect;

fn fixture(path: &str) -> Vec<Record> {
    let full = format!("{}/../tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    decode_all(&bytes, DecoderOptions::default())
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{full}: {e}")))
        .collect()
}

fn strs(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Bytes(b)) => vec![String::from_utf8_lossy(b).into_owned()],
        Some(Value::List(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

fn names(r: &Record) -> Vec<String> {
    r.attributes
        .iter()
        .map(|a| a.name_str().into_owned())
        .collect()
}

#[test]
fn harvest_file_record() {
    // Seed 004: Type Compressed, an embedded PostScript part with Keywords.
    let records = fixture("harvest/ecrc-93-10.soif");
    assert_eq!(records.len(), 1);
    let dc = crosswalk(&records[0]);
    assert_eq!(dc.template_str(), "Dublin-Core");
    assert_eq!(dc.url, records[0].url);
    assert_eq!(names(&dc), ["SUBJECT", "DATE", "FORMAT", "IDENTIFIER"]);
    assert_eq!(
        strs(dc.get("SUBJECT")),
        ["technical report ECRC{93{10 Polymorphic Sorts and Types for Concurrent Functional Programs Bent Thomsen"]
    );
    // Last-Modification-Time{9}: 774988159 (Unix seconds) as ISO 8601.
    assert_eq!(dc.get_str("DATE"), Some("1994-07-23T18:29:19Z"));
    // Harvest's "Compressed" (Unix compress, .Z) as a MIME type.
    assert_eq!(dc.get_str("FORMAT"), Some("application/x-compress"));
    assert_eq!(
        dc.get_str("IDENTIFIER"),
        Some("ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z")
    );
    // The envelope's action survives.
    assert_eq!(dc.action, records[0].action);
}

#[test]
fn rfc_2655_documents() {
    let records = fixture("rfc2655/documents.soif");
    assert_eq!(records.len(), 3);
    let ssl = crosswalk(&records[1]);
    assert_eq!(ssl.get_str("TITLE"), Some("SSL Protocol V. 3.0"));
    assert_eq!(
        strs(ssl.get("CREATOR")),
        ["Alan O. Freier", "Philip Karlton", "Paul C. Kocher"]
    );
    assert!(ssl
        .get_str("DESCRIPTION")
        .is_some_and(|d| d.starts_with("This document specifies Version 3.0")));
    assert_eq!(ssl.get_str("FORMAT"), Some("text/html"));
    assert_eq!(
        names(&ssl),
        ["TITLE", "CREATOR", "DESCRIPTION", "FORMAT", "IDENTIFIER"]
    );

    // "Last-Modified{31}: Tuesday, 11-Jun-96 19:18:44 GMT" (the RFC 850 form).
    let jpg = crosswalk(&records[2]);
    assert_eq!(jpg.get_str("DATE"), Some("1996-06-11T19:18:44Z"));
    assert_eq!(jpg.get_str("FORMAT"), Some("image/jpeg"));
}

#[test]
fn dublin_core_1_passes_through_collapsed() {
    let records = fixture("rfc2655/dublin-core.soif");
    let dc = crosswalk(&records[0]);
    assert_eq!(dc.template_str(), "Dublin-Core-1");
    assert_eq!(
        strs(dc.get("CREATOR")),
        ["S. Weibel", "J. Kunze", "C. Lagoze"]
    );
    let contributors = strs(dc.get("CONTRIBUTOR"));
    assert_eq!(contributors.len(), 10);
    assert_eq!(contributors[9], "Wick Nichols");
    // Values as they were.
    assert_eq!(dc.get_str("DATE"), Some("February 9, 1997"));
    assert_eq!(dc.get_str("FORMAT"), Some("Text"));
    assert_eq!(dc.flattened().into_owned(), records[0]);
}

#[test]
fn types_keywords_and_unknowns() {
    let r = Record::new("FILE", "http://x/a.ps")
        .with("Type", "PostScript")
        .with("Keywords", "wavelets\nimage processing\n\nSAR\n")
        .with("Last-Modified", "whenever")
        .with("Gatherer-Host", "bruno.cs.colorado.edu");
    let dc = crosswalk(&r);
    assert_eq!(dc.get_str("FORMAT"), Some("application/postscript"));
    assert_eq!(
        strs(dc.get("SUBJECT")),
        ["wavelets", "image processing", "SAR"]
    );
    // An unreadable date is kept, and counted as a warning by the transform.
    assert_eq!(dc.get_str("DATE"), Some("whenever"));
    assert!(dc.get("Gatherer-Host").is_none());
    // A readable Last-Modified wins over an unreadable Last-Modification-Time.
    let two = crosswalk(
        &Record::new("FILE", "-")
            .with("Last-Modification-Time", "n/a")
            .with("Last-Modified", "Thu, 16 May 1996 11:45:39 GMT"),
    );
    assert_eq!(two.get_str("DATE"), Some("1996-05-16T11:45:39Z"));
    let unknown = crosswalk(&Record::new("FILE", "-").with("Type", "WaisSource"));
    assert_eq!(unknown.get_str("FORMAT"), Some("WaisSource"));
    assert!(unknown.get("IDENTIFIER").is_none(), "`-` is no identifier");
    // Type and Content-Type giving the same MIME type: written once.
    let both = crosswalk(
        &Record::new("FILE", "-")
            .with("Type", "HTML")
            .with("Content-Type", "text/html"),
    );
    assert_eq!(both.get_str("FORMAT"), Some("text/html"));

    let mut t = build("dc", &TransformContext::default()).unwrap();
    let mut out = Collect::default();
    t.apply(r, &mut out).unwrap();
    t.finish(&mut out).unwrap();
    assert_eq!(out.records.len(), 1);
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.warnings[0].contains("DATE `whenever`"),
        "{}",
        out.warnings[0]
    );
}

#[test]
fn user_mapping_file_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mapping.toml");
    std::fs::write(
        &path,
        r#"
[[rule]]
element = "TITLE"
from = ["Headline"]

[[rule]]
element = "DATE"
from = ["Update-Time"]
convert = "date"

[[rule]]
element = "FORMAT"
from = ["Type"]
convert = "mime"
"#,
    )
    .unwrap();
    let ctx = TransformContext::default();
    let mut t = build(&format!("dc:{}", path.display()), &ctx).unwrap();
    let mut out = Collect::default();
    let r = Record::new("FILE", "http://x/")
        .with("Headline", "Hello")
        .with("Title", "ignored")
        .with("Update-Time", "19961203")
        .with("Type", "HTML");
    t.apply(r, &mut out).unwrap();
    let dc = &out.records[0];
    assert_eq!(names(dc), ["TITLE", "DATE", "FORMAT"]);
    assert_eq!(dc.get_str("TITLE"), Some("Hello"));
    assert_eq!(dc.get_str("DATE"), Some("1996-12-03"));
    // No [mime] table in the file: the default one is used.
    assert_eq!(dc.get_str("FORMAT"), Some("text/html"));

    let e = build("dc:/no/such/mapping.toml", &ctx).err();
    assert!(e.is_some_and(|e| e.is_config()));
    assert!(Crosswalk::from_toml("[[rule]]\nelement = 'X'\n", "x.toml").is_err());
}
