//! Every SOIF example in the seed documents, read two ways:
//! - exactly as printed (one line, spaces for tabs, counts off, `{x}`), with `lenient`;
//! - as a corrected, canonical copy (`tests/fixtures/{rfc2655,harvest}/`), strictly,
//!   which must also re-encode byte for byte.

use soif_codecs::soif::{
    decode_all, encode_record, DecodeError, DecoderOptions, ErrorKind, SoifEncoder,
};
use soif_codecs::{Action, Record};

fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/../tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// The bytes of a seed between the first `start` marker and the `end` marker after it.
fn excerpt(seed: &str, start: &str, end: &str) -> Vec<u8> {
    let text = fixture(&format!("seeds/{seed}"));
    let s = find(&text, start.as_bytes(), 0).unwrap_or_else(|| panic!("{start} not in {seed}"));
    let e = find(&text, end.as_bytes(), s).unwrap_or_else(|| panic!("{end} not in {seed}"));
    text[s..e].to_vec()
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn ok(items: Vec<Result<Record, DecodeError>>) -> Vec<Record> {
    items
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("unexpected error: {e}")))
        .collect()
}

fn strict() -> DecoderOptions {
    DecoderOptions::default()
}

fn lenient() -> DecoderOptions {
    DecoderOptions::default().lenient()
}

/// Decoding the canonical copy strictly gives the same records (names, values, URL,
/// action) as decoding the printed text leniently, and re-encodes to the same bytes.
fn check_canonical(canonical: &[u8], printed: &[Record]) {
    let strict_records = ok(decode_all(canonical, strict()));
    assert_eq!(strict_records.len(), printed.len());
    for (a, b) in strict_records.iter().zip(printed) {
        assert_eq!(a.template, b.template);
        assert_eq!(a.url, b.url);
        assert_eq!(a.attributes, b.attributes);
        assert_eq!(a.action, b.action);
        assert!(a.repairs.is_empty(), "canonical input needs no repair");
    }
    let mut enc = SoifEncoder::new();
    let mut out = Vec::new();
    for r in &strict_records {
        enc.encode(r, &mut out);
    }
    enc.finish(&mut out);
    assert_eq!(
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(canonical)
    );
}

// Harvest manual (seed 004): "When you do, you'll see output like this: @DELETE { }
// @REFRESH { } @UPDATE { @FILE { ftp://ecrc.de/... [...rest deleted...]"
#[test]
fn harvest_example_as_printed_lenient() {
    let seed = fixture("seeds/004_af61608947d503a1.txt");
    let start = find(&seed, b"@DELETE { }", 0).unwrap();
    let items = decode_all(&seed[start..], lenient());
    assert_eq!(
        items.len(),
        3,
        "one complete record, the cut-off one, and the unclosed envelope"
    );
    let record = items[0].as_ref().expect("first @FILE decodes");
    assert_eq!(record.template_str(), "FILE");
    assert_eq!(
        record.url_str(),
        "ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z"
    );
    assert_eq!(record.action, Some(Action::Update));
    assert_eq!(record.attributes.len(), 15);
    let names: Vec<_> = record
        .attributes
        .iter()
        .map(|a| a.name_str().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "Time-to-Live",
            "Last-Modification-Time",
            "Refresh-Rate",
            "Gatherer-Name",
            "Gatherer-Host",
            "Gatherer-Version",
            "Type",
            "Update-Time",
            "File-Size",
            "MD5",
            "Embed<1>-Nested-Filename",
            "Embed<1>-Type",
            "Embed<1>-File-Size",
            "Embed<1>-MD5",
            "Embed<1>-Keywords"
        ]
    );
    assert_eq!(
        record.get_str("Gatherer-Name"),
        Some("Computer Science Technical Reports - Selected Text")
    );
    assert_eq!(record.get_str("Embed<1>-Type"), Some("PostScript"));
    assert_eq!(
        record.get_str("Embed<1>-Keywords"),
        Some("technical report ECRC{93{10 Polymorphic Sorts and Types for Concurrent Functional Programs Bent Thomsen")
    );
    // 15 `: ` delimiters and one byte count (105 declared, newlines collapsed away).
    assert_eq!(record.repairs.len(), 16);
    assert!(record
        .repairs
        .iter()
        .any(|r| r.message.contains("declares 105 bytes")));

    let err = items[1]
        .as_ref()
        .expect_err("the cut-off record is an error");
    assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("record 2"), "{msg}");
    assert!(
        msg.contains("ftp://cml.rice.edu/pub/reports/9404.ps.Z"),
        "{msg}"
    );
    assert!(
        msg.contains("Embed<1>-Keywords") && msg.contains("5135"),
        "{msg}"
    );
    // Nothing lost: the error keeps every byte from the second `@FILE` to the end.
    let second = find(&seed, b"@FILE { ftp://cml.rice.edu", 0).unwrap();
    assert_eq!(err.raw().map(|r| r.as_ref()), Some(&seed[second..]));
    // "[...rest deleted...]" also cut off the `@UPDATE {` envelope's `}`: said at the
    // end, with where the envelope was opened.
    let unclosed = items[2].as_ref().expect_err("the envelope is never closed");
    let at = find(&seed, b"@UPDATE {", start).unwrap() - start;
    assert_eq!(
        unclosed.kind(),
        &ErrorKind::UnclosedEnvelope {
            envelope: "UPDATE".into(),
            opened_at: at as u64
        }
    );
}

#[test]
fn harvest_example_strict_on_printed_text_fails_cleanly() {
    let seed = fixture("seeds/004_af61608947d503a1.txt");
    let start = find(&seed, b"@DELETE { }", 0).unwrap();
    let items = decode_all(&seed[start..], strict());
    assert!(!items.is_empty());
    assert!(
        items.iter().all(|i| i.is_err()),
        "spaces for tabs are errors in strict mode"
    );
    let first = items[0].as_ref().unwrap_err();
    assert!(
        matches!(first.kind(), ErrorKind::MissingDelimiter { .. }),
        "{first}"
    );
    assert!(first.to_string().contains("Time-to-Live"));
}

#[test]
fn harvest_example_canonical_strict() {
    let seed = fixture("seeds/004_af61608947d503a1.txt");
    let start = find(&seed, b"@DELETE { }", 0).unwrap();
    let printed: Vec<Record> = decode_all(&seed[start..], lenient())
        .into_iter()
        .filter_map(Result::ok)
        .collect();
    check_canonical(&fixture("harvest/ecrc-93-10.soif"), &printed);
}

// RFC 2655 §6: "The following are some example summary objects using the generic
// "DOCUMENT" SOIF template-type".
#[test]
fn rfc2655_documents() {
    let printed = excerpt(
        "003_59cbc8f77c8acf7f.txt",
        "@DOCUMENT { http://home.netscape.com:80/",
        " 7. Security",
    );
    let records = ok(decode_all(&printed, lenient()));
    assert_eq!(records.len(), 3);
    assert_eq!(records[0].url_str(), "http://home.netscape.com:80/");
    assert_eq!(records[0].get_str("Title"), Some("Welcome to Netscape"));
    assert_eq!(records[0].get_str("Content-Length"), Some("33262"));
    let ssl = &records[1];
    assert_eq!(ssl.get_str("Title"), Some("SSL Protocol V. 3.0"));
    assert_eq!(ssl.get_str("Author-1"), Some("Alan O. Freier"));
    assert_eq!(ssl.get_str("Author-2"), Some("Philip Karlton"));
    assert_eq!(ssl.get_str("Author-3"), Some("Paul C. Kocher"));
    let abs = ssl.get_str("Abstract").unwrap();
    assert!(abs.starts_with("This document specifies Version 3.0 of the <B>Secure Sockets Layer"));
    assert!(abs.ends_with("tampering, or message forgery."), "{abs}");
    let jpg = &records[2];
    assert_eq!(
        jpg.get_str("Last-Modified"),
        Some("Tuesday, 11-Jun-96 19:18:44 GMT")
    );
    // `Thumbnail{259}: ..................`: the binary thumbnail was elided when printed.
    assert_eq!(jpg.get_str("Thumbnail"), Some(".................."));
    check_canonical(&fixture("rfc2655/documents.soif"), &records);
}

// RFC 2655 Appendix B: the CIP-HINT example.
#[test]
fn rfc2655_cip_hint() {
    let printed = excerpt("003_59cbc8f77c8acf7f.txt", "@CIP-HINT{", " Appendix C.");
    let records = ok(decode_all(&printed, lenient()));
    assert_eq!(records.len(), 1);
    let hint = &records[0];
    assert_eq!(hint.template_str(), "CIP-HINT");
    assert_eq!(
        hint.url_str(),
        "http://nic.nasa.gov:80/Harvest/brokers/NASA/"
    );
    assert_eq!(
        hint.get_str("Attribute-Identifier-list"),
        Some("DOCUMENT:Author, DOCUMENT:Keywords, IMAGE:Subject")
    );
    assert_eq!(
        hint.get_str("Weightlist-[IMAGE:Subject]"),
        Some("Shuttle;100, Planet;227, Moon;15, Sun;33")
    );
    assert_eq!(hint.get_str("Threshold-[DOCMENT:Author]"), Some("5"));
    assert_eq!(hint.get_str("Date"), Some("Sun, 05 Jan 1997 08:33:33 GMT"));
    assert_eq!(hint.attributes.len(), 11);
    check_canonical(&fixture("rfc2655/cip-hint.soif"), &records);
}

// RFC 2655 Appendix C: the Dublin-Core example, with its line-wrapped URL and
// `IDENTIFIER:{21} draft-kunze-dc-00.txt`.
#[test]
fn rfc2655_dublin_core() {
    let printed = excerpt(
        "003_59cbc8f77c8acf7f.txt",
        "@Dublin-Core-1 {",
        " Hardie, et al. Experimental [Page 16]",
    );
    let records = ok(decode_all(&printed, lenient()));
    assert_eq!(records.len(), 1);
    let dc = &records[0];
    assert_eq!(dc.template_str(), "Dublin-Core-1");
    assert_eq!(
        dc.url_str(),
        "ftp://ds.internic.net/internet-drafts/draft-kunze-dc-00.txt"
    );
    assert_eq!(dc.attributes.len(), 26);
    assert_eq!(
        dc.get_str("TITLE"),
        Some("Dublin Core Metadata for Simple Resource Description")
    );
    assert_eq!(dc.get_str("CONTRIBUTOR-10"), Some("Wick Nichols"));
    assert_eq!(dc.get_str("IDENTIFIER"), Some("draft-kunze-dc-00.txt"));
    assert_eq!(dc.get_str("DATE"), Some("February 9, 1997"));
    assert_eq!(
        dc.get_str("RIGHTS"),
        Some("Unlimited Distribution; readers must not cite as standard.")
    );
    check_canonical(&fixture("rfc2655/dublin-core.soif"), &records);
}

// RDM note: "An example SOIF object: @DOCUMENT { https://www.netscape.com:80/ ..." and
// the example RDM headers. (The typed RDM objects are tested in rdm_seed.rs.)
#[test]
fn rdm_note_plain_examples() {
    let doc = excerpt(
        "000_778b65f732668269.txt",
        "@DOCUMENT { https://www.netscape.com:80/",
        "\nNumber of SOIF",
    );
    let records = ok(decode_all(&doc, lenient()));
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].get_str("Title"), Some("Welcome to Netscape!"));
    assert_eq!(
        records[0].get_str("Last-Modified"),
        Some("Thu, 16 May 1996 11:45:39 GMT")
    );

    let headers = excerpt(
        "000_778b65f732668269.txt",
        "@RDMHEADER { - RDM-Version{3}",
        "\nRDM Body",
    );
    let records = ok(decode_all(&headers, lenient()));
    assert_eq!(records.len(), 3);
    assert_eq!(
        records[1].get_str("Catalog-Service-ID"),
        Some("x-catalog://www.netscape.com:80/techpubs")
    );
    assert_eq!(records[2].get_str("RDM-Error-Message"), Some("0 results"));
    // The note miscounts two values of the second header (`RDM-Type{9}: rd-request` is
    // 10 bytes, the CSID 40 not 39); lenient mode finds the boundary and says so.
    assert_eq!(records[1].get_str("RDM-Type"), Some("rd-request"));
    let count_repairs: Vec<_> = records
        .iter()
        .flat_map(|r| &r.repairs)
        .filter(|p| !p.message.contains("instead of `:<TAB>`"))
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(
        count_repairs,
        [
            "attribute `RDM-Type` declares 9 bytes; read 10 (1 more), up to the next attribute on the same line",
            "attribute `Catalog-Service-ID` declares 39 bytes; read 40 (1 more), up to the next attribute on the same line"
        ]
    );
}

#[test]
fn canonical_fixtures_reencode_byte_for_byte() {
    for path in [
        "harvest/ecrc-93-10.soif",
        "rfc2655/documents.soif",
        "rfc2655/cip-hint.soif",
        "rfc2655/dublin-core.soif",
    ] {
        let input = fixture(path);
        let mut out = Vec::new();
        let mut enc = SoifEncoder::new();
        for r in ok(decode_all(&input, strict())) {
            enc.encode(&r, &mut out);
        }
        enc.finish(&mut out);
        assert_eq!(out, input, "{path}");
    }
    let mut one = Vec::new();
    encode_record(&Record::new("DOCUMENT", "-").with("Title", "x"), &mut one);
    assert_eq!(one, b"@DOCUMENT { -\nTitle{1}:\tx\n}\n");
}
