//! A plain `http://host:port/rdm/incoming?type=rd-request&ql=gatherer&scope=all` input —
//! the W3C RDM note's GET form of "send all RD's" — is read like the `x-catalog://` input
//! that runs the same request: the reply's `@RDMHEADER` is the message's header, not a
//! record, and an error reply ends the input with the server's `RDM-Error-Message`.
//!
//! The note (seed 000): "The RDM-Type of the message is specified in the RDMHEADER" and
//! "GET requests are encoded as form data (application/x-www-form-urlencoded)".

use std::process::{Command, Output};

use crate::common;
use common::Serve;

const SOIF: &str = env!("CARGO_BIN_EXE_soif");
const TOKEN: &str = "http-input-token";

fn fixture(path: &str) -> String {
    format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

fn soif(args: &[&str]) -> Output {
    Command::new(SOIF)
        .args(args)
        .env_remove("SOIF_TOKEN")
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The server holding the RFC 2655 documents fixture.
fn loaded() -> Serve {
    let server = Serve::start("docs", TOKEN, &[]);
    let csid = format!("x-catalog://{}/docs", server.addr);
    submit(&fixture("rfc2655/documents.soif"), &csid);
    server
}

/// `soif convert INPUT --to rdm -o CSID` with the server's token.
fn submit(input: &str, csid: &str) -> String {
    ok(soif(&[
        "convert", input, "--to", "rdm", "-o", csid, "--token", TOKEN, "-q",
    ]))
}

#[test]
fn a_plain_http_rd_request_gives_the_records_of_the_catalog_input() {
    let server = loaded();
    let csid = format!("x-catalog://{}/docs", server.addr);
    let url = format!(
        "http://{}/rdm/incoming?type=rd-request&ql=gatherer&scope=all",
        server.addr
    );

    let from_catalog = ok(soif(&["convert", &csid, "--to", "jsonl", "-q"]));
    let from_url = ok(soif(&["convert", &url, "--to", "jsonl", "-q"]));
    let direct = ok(soif(&[
        "convert",
        &fixture("rfc2655/documents.soif"),
        "--to",
        "jsonl",
        "-q",
    ]));
    assert_eq!(from_catalog.lines().count(), direct.lines().count());
    assert_eq!(from_url, from_catalog);
    for line in from_url.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_ne!(v["template"], "RDMHEADER", "{line}");
        assert_ne!(v["template"], "rdmheader", "{line}");
        assert!(!line.contains("RDM-Type"), "{line}");
    }

    // A second pass over the input (the CSV sink's column pass) copies the RDs, not the
    // header, too.
    let csv_catalog = ok(soif(&["convert", &csid, "--to", "csv", "-q"]));
    let csv_url = ok(soif(&["convert", &url, "--to", "csv", "-q"]));
    assert_eq!(csv_url, csv_catalog);
    assert!(!csv_url.contains("RDM-Type"), "{csv_url}");
}

#[test]
fn a_plain_http_rd_request_deleted_marks_its_rds_deleted() {
    let server = loaded();
    let csid = format!("x-catalog://{}/docs", server.addr);
    let urls = ok(soif(&["convert", &csid, "--to", "jsonl", "-q"]));
    let first: serde_json::Value = serde_json::from_str(urls.lines().next().unwrap()).unwrap();
    let gone = first["url"].as_str().unwrap().to_string();
    let template = first["template"].as_str().unwrap();
    let deletion = format!("@DELETE {{\n@{template} {{ {gone}\n}}\n}}\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("delete.soif");
    std::fs::write(&file, deletion).unwrap();
    submit(file.to_str().unwrap(), &csid);

    let url = format!(
        "http://{}/rdm/incoming?type=rd-request-deleted&ql=gatherer&scope=all",
        server.addr
    );
    let from_url = ok(soif(&["convert", &url, "--to", "jsonl", "-q"]));
    let from_catalog = ok(soif(&[
        "convert",
        &format!("{csid}?type=rd-request-deleted"),
        "--to",
        "jsonl",
        "-q",
    ]));
    assert_eq!(from_url, from_catalog);
    let lines: Vec<serde_json::Value> = from_url
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{from_url}");
    assert_eq!(lines[0]["url"], gone.as_str());
    assert_eq!(lines[0]["action"], "delete");
}

#[test]
fn an_rdm_error_reply_to_a_plain_url_ends_the_input_with_its_message() {
    let server = loaded();
    let url = format!(
        "http://{}/rdm/incoming?type=rd-request&ql=gatherer&scope=everything",
        server.addr
    );
    let out = soif(&["convert", &url, "--to", "jsonl", "-q"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the catalog server answered HTTP 400"),
        "{err}"
    );
    assert!(!err.contains("(no RDM-Error-Message)"), "{err}");
}
