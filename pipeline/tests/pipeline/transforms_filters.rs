//! `match`, `since` and `dedupe` built from their specs, on the seed records.

use soif_codecs::soif::{decode_all, DecoderOptions};
use soif_codecs::Record;
use soif_pipeline::transforms::{build, TransformContext, NAMES};
use soif_pipeline::Collect;

fn fixture(path: &str) -> Vec<Record> {
    let full = format!("{}/../tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&full).unwrap();
    decode_all(&bytes, DecoderOptions::default())
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

fn urls_after(spec: &str, records: Vec<Record>) -> (Vec<String>, Collect) {
    let mut t = build(spec, &TransformContext::default()).unwrap();
    let out = Collect::run(t.as_mut(), records).unwrap();
    let urls = out
        .records
        .iter()
        .map(|r| r.url_str().into_owned())
        .collect();
    (urls, out)
}

#[test]
fn match_rfc_2655_section_4() {
    let docs = fixture("rfc2655/documents.soif");
    // "author" matches Author-1..3 of the SSL document; the value is a substring.
    let (urls, _) = urls_after("match:author=KARLTON", docs.clone());
    assert_eq!(urls, ["http://home.netscape.com/eng/ssl3/ssl-toc.html"]);
    let (urls, _) = urls_after("match:Content-Type=text/", docs.clone());
    assert_eq!(urls.len(), 2);
    let (urls, _) = urls_after("match:url=nissanmotors", docs);
    assert_eq!(
        urls,
        ["http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg"]
    );
    // The RFC's own example.
    let garcia = Record::new("DOCUMENT", "-").with("Author-1", "Jose Garcia y Montes");
    let (urls, _) = urls_after("match:AUTHOR=Garcia", vec![garcia]);
    assert_eq!(urls, ["-"]);
}

#[test]
fn since_on_rfc_and_harvest_dates() {
    let mut records = fixture("rfc2655/documents.soif");
    records.extend(fixture("harvest/ecrc-93-10.soif"));
    // Seed 000's gatherer scope: the 1994 Harvest record (Last-Modification-Time
    // 774988159, July 1994) is older; the 1996 JPEG is newer; two documents are undated.
    let (urls, out) = urls_after("since:Sun, 06 Nov 1994 08:49:37 GMT", records.clone());
    assert_eq!(
        urls,
        ["http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg"]
    );
    assert_eq!(out.warnings.len(), 1);
    assert!(
        out.warnings[0].contains("2 record(s) without"),
        "{}",
        out.warnings[0]
    );
    let (urls, _) = urls_after("since:1994-07-01", records);
    assert_eq!(urls.len(), 2);
    assert!(build("since:", &TransformContext::default()).is_err());
}

#[test]
fn dedupe_by_url_and_attribute() {
    let mut docs = fixture("rfc2655/documents.soif");
    docs.extend(fixture("rfc2655/documents.soif"));
    let (urls, out) = urls_after("dedupe:url", docs.clone());
    assert_eq!(urls.len(), 3);
    assert!(out.warnings[0].contains("dropped 3 duplicate"));
    // Without an argument: by URL.
    let (urls, _) = urls_after("dedupe", docs.clone());
    assert_eq!(urls.len(), 3);
    // By Content-Type: the two text/html documents are one; the JPEG stays.
    let (urls, _) = urls_after("dedupe:Content-Type", docs);
    assert_eq!(
        urls,
        [
            "http://home.netscape.com:80/",
            "http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg"
        ]
    );
}

#[test]
fn every_listed_name_builds() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("s.soif");
    std::fs::write(
        &schema,
        "@SCHEMA { -\nLast-Modified{29}:\tThu, 16 May 1996 00:00:00 GMT\nSOIF-Attribute{5}:\tTitle\n}\n",
    )
    .unwrap();
    let program = dir.path().join("p.vrl");
    std::fs::write(&program, ".attributes.x = 1\n").unwrap();
    let program = program.display().to_string();
    let ctx = TransformContext {
        schema: Some(schema),
        ..TransformContext::default()
    };
    let args = |name: &str| match name {
        "remap" => program.as_str(),
        "select" => "Title",
        "order" => "-Score",
        "hits" => "10",
        "since" => "1996-01-01",
        "match" => "Title=x",
        "dedupe" => "MD5",
        _ => "",
    };
    assert_eq!(NAMES.len(), 11);
    for (name, help) in NAMES {
        assert!(!help.is_empty());
        let spec = match args(name) {
            "" => name.to_string(),
            a => format!("{name}:{a}"),
        };
        let t = build(&spec, &ctx).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!(t.name(), *name);
    }
}
