//! `validate` against the RDM note's example schema (seed 000, "Example Schema
//! Description") and a typed schema for Harvest FILE records; `order` with schema types.

use soif_codecs::soif::{decode_all, encode_record, DecoderOptions};
use soif_codecs::Record;
use soif_pipeline::transforms::{build, TransformContext};
use soif_pipeline::{Collect, Transform};
use std::path::{Path, PathBuf};

/// The note's schema, from its canonical copy `tests/fixtures/rdm/schema.soif`, decoded
/// strictly.
fn note_schema() -> Record {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/rdm/schema.soif"
    );
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut records = decode_all(&bytes, DecoderOptions::default());
    assert_eq!(records.len(), 1, "{path}: one schema record");
    records
        .remove(0)
        .unwrap_or_else(|e| panic!("{path} does not decode: {e}"))
}

/// A schema for seed 004's Harvest FILE records.
fn file_schema() -> Record {
    Record::new("SCHEMA", "http://example.com/harvest-file.schema")
        .with("Schema-Name", "FILE")
        .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
        .with("Number-of-Entries", "4")
        .with("SOIF-Attribute-1", "File-Size")
        .with("Data-Type-1", "int")
        .with("SOIF-Attribute-2", "Last-Modification-Time")
        .with("Data-Type-2", "date")
        .with("SOIF-Attribute-3", "MD5")
        .with("Data-Type-3", "varchar(32)")
        .with("Enforce-Uniqueness-3", "1")
        .with("SOIF-Attribute-4", "Type")
}

fn write_schema(dir: &Path, name: &str, schema: &Record) -> PathBuf {
    let mut bytes = Vec::new();
    encode_record(schema, &mut bytes);
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn ssl_document() -> Record {
    Record::new("DOCUMENT", "http://home.netscape.com/eng/ssl3/ssl-toc.html")
        .with("Title", "SSL Protocol V. 3.0")
        .with("Content-Type", "text/html")
        .with("Content-Length", "5870")
        .with("Author-1", "Alan O. Freier")
        .with("Author-2", "Philip Karlton")
        .with("Author-3", "Paul C. Kocher")
        .with("Abstract", "This document specifies Version 3.0 of the <B>Secure Sockets Layer (SSL V3.0)</B> protocol.")
}

fn harvest_file(url: &str, md5: &str, size: &str) -> Record {
    Record::new("FILE", url.to_string())
        .with("Last-Modification-Time", "774988159")
        .with("Type", "Compressed")
        .with("File-Size", size)
        .with("MD5", md5)
}

fn run(t: &mut dyn Transform, records: Vec<Record>) -> Collect {
    Collect::run(t, records).unwrap()
}

#[test]
fn note_schema_and_unknown_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let schema = write_schema(dir.path(), "note.soif", &note_schema());
    let ctx = TransformContext::default();

    // Default: unknown attributes (Content-Type, Content-Length) pass with warnings.
    let mut t = build(&format!("validate:{}", schema.display()), &ctx).unwrap();
    let out = run(t.as_mut(), vec![ssl_document(), ssl_document()]);
    assert_eq!(out.records.len(), 2);
    assert!(out.rejected.is_empty());
    // One warning per unknown name, then a summary.
    assert_eq!(out.warnings.len(), 3, "{:?}", out.warnings);
    assert!(out.warnings[0].contains("Content-Type is not in the schema"));
    assert!(
        out.warnings[2].contains("4 value(s)"),
        "{}",
        out.warnings[2]
    );

    let mut t = build(
        &format!("validate:{},unknown=reject", schema.display()),
        &ctx,
    )
    .unwrap();
    let out = run(t.as_mut(), vec![ssl_document()]);
    assert!(out.records.is_empty());
    let reason = &out.rejected[0].1;
    assert!(
        reason.contains("Content-Type: not an attribute of the schema"),
        "{reason}"
    );
    assert!(reason.contains("Content-Length"), "{reason}");

    // `--schema` from the context, unknown=allow: silent.
    let ctx_schema = TransformContext {
        schema: Some(schema),
        ..TransformContext::default()
    };
    let mut t = build("validate:unknown=allow", &ctx_schema).unwrap();
    let out = run(t.as_mut(), vec![ssl_document()]);
    assert_eq!(out.records.len(), 1);
    assert!(out.warnings.is_empty());
}

#[test]
fn data_types_uniqueness_and_template() {
    let dir = tempfile::tempdir().unwrap();
    let schema = write_schema(dir.path(), "file.soif", &file_schema());
    let mut t = build(
        &format!("validate:{},unknown=reject", schema.display()),
        &TransformContext::default(),
    )
    .unwrap();
    let good = harvest_file(
        "ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z",
        "43193942d4d53f5a8e4a7b4bcff7a415",
        "164373",
    );
    let same_md5 = harvest_file(
        "ftp://mirror/ECRC-93-10.ps.Z",
        "43193942d4d53f5a8e4a7b4bcff7a415",
        "164373",
    );
    let bad_size = harvest_file(
        "ftp://cml.rice.edu/pub/reports/9404.ps.Z",
        "1712ce5a973cfbb0508b405d6fef1669",
        "12 KB",
    );
    // Its MD5 was not remembered (the record failed), so this one is fine.
    let fixed = harvest_file(
        "ftp://cml.rice.edu/pub/reports/9404.ps.Z",
        "1712ce5a973cfbb0508b405d6fef1669",
        "240015",
    );
    let document = Record::new("DOCUMENT", "http://x/").with("Type", "HTML");
    let long_md5 = harvest_file("ftp://y/", &"0".repeat(33), "1");
    let out = run(
        t.as_mut(),
        vec![
            good.clone(),
            same_md5,
            bad_size,
            fixed.clone(),
            document,
            long_md5,
        ],
    );
    assert_eq!(out.records, vec![good, fixed]);
    let reasons: Vec<&str> = out.rejected.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(reasons.len(), 4);
    assert!(
        reasons[0].contains("MD5: `43193942d4d53f5a8e4a7b4bcff7a415` is not unique"),
        "{}",
        reasons[0]
    );
    assert!(
        reasons[1].contains("File-Size: `12 KB` is not an integer (Data-Type int)"),
        "{}",
        reasons[1]
    );
    assert!(
        reasons[2].contains("template `DOCUMENT` is not the schema's `FILE`"),
        "{}",
        reasons[2]
    );
    assert!(
        reasons[3].contains("MD5:") && reasons[3].contains("longer than 32"),
        "{}",
        reasons[3]
    );
    // The rejected records are handed back whole, for --on-error quarantine.
    assert_eq!(out.rejected[0].0.url_str(), "ftp://mirror/ECRC-93-10.ps.Z");
}

#[test]
fn uniqueness_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let schema = write_schema(dir.path(), "file.soif", &file_schema());
    let ctx = TransformContext {
        memory_budget: 512, // a handful of fingerprints: the rest spill to disk
        temp_dir: Some(dir.path().join("tmp")),
        ..TransformContext::default()
    };
    std::fs::create_dir(dir.path().join("tmp")).unwrap();
    let mut t = build(&format!("validate:{}", schema.display()), &ctx).unwrap();
    let records: Vec<_> = (0..400)
        .chain(0..10)
        .map(|i| harvest_file(&format!("ftp://h/{i}"), &format!("{i:032x}"), "1"))
        .collect();
    let out = run(t.as_mut(), records);
    assert_eq!(out.records.len(), 400);
    assert_eq!(out.rejected.len(), 10);
    assert!(out
        .rejected
        .iter()
        .all(|(_, r)| r.contains("is not unique")));
}

#[test]
fn multi_values_and_within_record_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Record::new("SCHEMA", "-")
        .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
        .with("SOIF-Attribute-1", "Serial")
        .with("Data-Type-1", "int")
        .with("Enforce-Uniqueness-1", "1");
    let schema = write_schema(dir.path(), "s.soif", &schema);
    let mut t = build(
        &format!("validate:{}", schema.display()),
        &TransformContext::default(),
    )
    .unwrap();
    let twice = Record::new("X", "-")
        .with("Serial-1", "5")
        .with("Serial-2", "5");
    let bad_second = Record::new("X", "-")
        .with("Serial-1", "6")
        .with("Serial-2", "seven");
    let ok = Record::new("X", "-")
        .with("Serial-1", "6")
        .with("Serial-2", "7");
    let out = run(t.as_mut(), vec![twice, bad_second, ok.clone()]);
    assert_eq!(out.records, vec![ok]);
    assert!(
        out.rejected[0].1.contains("within this record"),
        "{}",
        out.rejected[0].1
    );
    assert!(
        out.rejected[1]
            .1
            .contains("Serial-2: `seven` is not an integer"),
        "{}",
        out.rejected[1].1
    );
}

#[test]
fn hand_written_schema_with_x_sizes() {
    // The note writes sizes as `{x}`; lenient loading reads each value to the end of line.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.soif");
    std::fs::write(
        &path,
        "@SCHEMA { -\nLast-Modified{x}:\tThu, 16 May 1996 00:00:00 GMT\nSOIF-Attribute-1{x}:\tScore\nData-Type-1{x}:\tint\n}\n",
    )
    .unwrap();
    let ctx = TransformContext {
        schema: Some(path),
        ..TransformContext::default()
    };
    let mut t = build("validate", &ctx).unwrap();
    let out = run(
        t.as_mut(),
        vec![
            Record::new("D", "-").with("Score", "x9"),
            Record::new("D", "-").with("Score", "9"),
        ],
    );
    assert_eq!(out.records.len(), 1);
    assert_eq!(out.rejected.len(), 1);

    // `order` reads the same schema: Score is an int, so 10 sorts after 9.
    let mut o = build("order:Score", &ctx).unwrap();
    let out = run(
        o.as_mut(),
        vec![
            Record::new("D", "10").with("Score", "10"),
            Record::new("D", "9").with("Score", "9"),
        ],
    );
    let urls: Vec<_> = out
        .records
        .iter()
        .map(|r| r.url_str().into_owned())
        .collect();
    assert_eq!(urls, ["9", "10"]);
}

#[test]
fn configuration_errors() {
    let ctx = TransformContext::default();
    let dir = tempfile::tempdir().unwrap();
    let not_schema = write_schema(dir.path(), "doc.soif", &ssl_document());
    for spec in [
        "validate".to_string(),
        "validate:/no/such/schema.soif".to_string(),
        format!("validate:{},unknown=maybe", not_schema.display()),
        format!("validate:{}", not_schema.display()),
        format!("validate:{},{}", not_schema.display(), not_schema.display()),
    ] {
        let e = build(&spec, &ctx).err();
        assert!(e.as_ref().is_some_and(|e| e.is_config()), "{spec}: {e:?}");
    }
}
