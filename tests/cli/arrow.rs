//! `soif convert --to arrow` end to end: an Arrow IPC stream in soif's layout, to stdout or
//! a file, read back (`--from arrow`, by name, by magic bytes on stdin) to the same
//! canonical SOIF byte for byte; another schema refused naming the input.

use crate::common;

use common::{code, convert as run, convert_ok as ok, fixture, stderr};

#[test]
fn stream_round_trips_byte_for_byte() {
    let docs = fixture("rfc2655/documents.soif").display().to_string();
    let ecrc = fixture("harvest/ecrc-93-10.soif").display().to_string();
    let expected = ok(&[&docs, &ecrc, "--to", "soif", "-q"], b"");
    // To stdout, back from stdin: found by the stream's first bytes, or with --from arrow.
    let stream = ok(&[&docs, &ecrc, "--to", "arrow", "-q"], b"");
    assert!(stream.starts_with(&[0xff; 4]), "an IPC stream");
    assert_eq!(ok(&["--to", "soif", "-q"], &stream), expected);
    assert_eq!(
        ok(&["--from", "arrow", "--to", "soif", "-q"], &stream),
        expected
    );
    // To a file, read by its name.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.arrows");
    ok(
        &[
            &docs,
            &ecrc,
            "--to",
            "arrow",
            "-o",
            out.to_str().unwrap(),
            "-q",
        ],
        b"",
    );
    assert_eq!(std::fs::read(&out).unwrap(), stream);
    assert_eq!(
        ok(&[out.to_str().unwrap(), "--to", "soif", "-q"], b""),
        expected
    );
    // The same records as the Parquet sink writes.
    let pq = dir.path().join("r.parquet");
    ok(
        &[
            out.to_str().unwrap(),
            "--to",
            "parquet",
            "-o",
            pq.to_str().unwrap(),
            "-q",
        ],
        b"",
    );
    assert_eq!(
        ok(&[pq.to_str().unwrap(), "--to", "soif", "-q"], b""),
        expected
    );
}

#[test]
fn non_utf8_and_envelopes_survive() {
    let input: &[u8] = b"@DELETE {\n@FILE { http://x/caf\xe9\nN\xe9{3}:\t\xff\x00}\nEmpty{0}:\t\nA{1}:\ta\nA{1}:\tb\n}\n}\n";
    let expected = ok(&["--to", "soif", "-q"], input);
    let stream = ok(&["--to", "arrow", "-q"], input);
    assert_eq!(ok(&["--to", "soif", "-q"], &stream), expected);
}

#[test]
fn another_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("other.arrow");
    std::fs::write(&bad, b"ARROW1\0\0garbage").unwrap();
    let o = run(&[bad.to_str().unwrap(), "--to", "soif"], b"");
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("other.arrow"), "{}", stderr(&o));
}
