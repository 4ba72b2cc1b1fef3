//! `soif validate` end to end: the report, the JSON report and the exit statuses.

use std::path::Path;
use std::process::Command;

const SOIF: &str = env!("CARGO_BIN_EXE_soif");

fn fixture(path: &str) -> String {
    format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// A schema for RFC 2655 §6's DOCUMENTs: Content-Length an int, Title unique.
fn write_schema(dir: &Path) -> String {
    let path = dir.join("document.schema.soif");
    std::fs::write(
        &path,
        "@SCHEMA { -\n\
         Schema-Name{8}:\tDOCUMENT\n\
         Last-Modified{29}:\tThu, 16 May 1996 00:00:00 GMT\n\
         SOIF-Attribute-1{5}:\tTitle\n\
         Enforce-Uniqueness-1{1}:\t1\n\
         SOIF-Attribute-2{14}:\tContent-Length\n\
         Data-Type-2{3}:\tint\n\
         SOIF-Attribute-3{12}:\tContent-Type\n\
         SOIF-Attribute-4{6}:\tAuthor\n\
         SOIF-Attribute-5{8}:\tAbstract\n\
         Data-Type-5{4}:\tblob\n\
         SOIF-Attribute-6{13}:\tLast-Modified\n\
         Data-Type-6{4}:\tdate\n\
         SOIF-Attribute-7{9}:\tThumbnail\n\
         Data-Type-7{4}:\tblob\n\
         }\n",
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn valid_input_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let schema = write_schema(dir.path());
    let out = Command::new(SOIF)
        .args(["validate", "-q", "--schema", &schema])
        .arg(fixture("rfc2655/documents.soif"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        report.contains("records: 3 checked, 3 valid, 0 failed"),
        "{report}"
    );
    assert!(report.trim_end().ends_with("ok"), "{report}");
}

#[test]
fn failing_records_are_listed_and_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let schema = write_schema(dir.path());
    let input = dir.path().join("bad.soif");
    // The second Title repeats the first; the third has a Content-Length that is no int.
    std::fs::write(
        &input,
        "@DOCUMENT { http://home.netscape.com:80/\nTitle{19}:\tWelcome to Netscape\n}\n\
         @DOCUMENT { http://mirror.example/\nTitle{19}:\tWelcome to Netscape\n}\n\
         @DOCUMENT { http://x/\nContent-Length{4}:\t5 KB\n}\n",
    )
    .unwrap();
    let out = Command::new(SOIF)
        .args(["validate", "-q", "--schema", &schema])
        .arg(&input)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{report}");
    assert!(
        report.contains("records: 3 checked, 1 valid, 2 failed"),
        "{report}"
    );
    assert!(
        report.contains("Title: `Welcome to Netscape` is not unique"),
        "{report}"
    );
    assert!(
        report.contains("Content-Length: `5 KB` is not an integer"),
        "{report}"
    );
    assert!(report.contains("record 3"), "{report}");

    let out = Command::new(SOIF)
        .args(["validate", "-q", "--json", "--schema", &schema])
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["failed"], 2);
    assert_eq!(v["valid"], 1);
    assert_eq!(v["schema_name"], "DOCUMENT");
    assert_eq!(v["failures"].as_array().map(Vec::len), Some(2));
}

/// Each failure names its record as every other error does: input, byte offset, record
/// number and URL.
#[test]
fn failures_name_the_record_by_url() {
    let dir = tempfile::tempdir().unwrap();
    let schema = write_schema(dir.path());
    let input = dir.path().join("bad.soif");
    std::fs::write(
        &input,
        "@DOCUMENT { http://home.netscape.com:80/\nTitle{19}:\tWelcome to Netscape\n}\n\
         @DOCUMENT { http://mirror.example/\nTitle{19}:\tWelcome to Netscape\n}\n\
         @DOCUMENT { http://x/\nContent-Length{4}:\t5 KB\n}\n",
    )
    .unwrap();
    let out = Command::new(SOIF)
        .args(["validate", "-q", "--schema", &schema])
        .arg(&input)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{report}");
    let input = input.display();
    assert!(
        report.contains(&format!(
            "is not unique (Enforce-Uniqueness), at {input}: byte 74, record 2 (http://mirror.example/)"
        )),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "is not an integer (Data-Type int), at {input}: byte 142, record 3 (http://x/)"
        )),
        "{report}"
    );
}

#[test]
fn missing_schema_is_a_usage_error() {
    let out = Command::new(SOIF)
        .args(["validate", "--schema", "/no/such/schema.soif"])
        .arg(fixture("rfc2655/documents.soif"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/schema.soif"));
}
