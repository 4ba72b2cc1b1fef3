//! End to end over real HTTP with the built binary: `soif serve`, the `rdm` sink, the
//! `x-catalog://` source and `soif rdm`.
//!
//! The loop — Harvest file → `--to rdm` → server → `x-catalog://` input → jsonl — must give
//! what a direct `--to jsonl` conversion gives (as a set: the catalog returns records table
//! by table; and without the `@UPDATE` envelope's action, which a catalog stores as the
//! upsert it is). A flaky network between sink and server (a POST cut off midway, a reply
//! lost after the server stored the batch, a 503) loses nothing and doubles nothing.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common;
use common::Serve;

const SOIF: &str = env!("CARGO_BIN_EXE_soif");
const TOKEN: &str = "loop-token";

fn fixture(path: &str) -> String {
    format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

fn soif(args: &[&str]) -> std::process::Output {
    Command::new(SOIF)
        .args(args)
        .env_remove("SOIF_TOKEN")
        .output()
        .unwrap()
}

/// Runs `soif ARGS` and asserts that it succeeded, showing its stderr when not.
fn soif_ok(args: &[&str]) -> std::process::Output {
    let out = soif(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The arguments of `soif convert INPUT --to rdm -o CSID --token TOKEN EXTRA…`.
fn to_catalog<'a>(input: &'a str, csid: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "convert", input, "--to", "rdm", "-o", csid, "--token", TOKEN,
    ];
    args.extend_from_slice(extra);
    args
}

/// JSON lines as a set, without the `update`/`refresh` envelope actions.
fn json_set(stdout: &[u8]) -> BTreeSet<String> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            if matches!(
                o.get("action").and_then(|a| a.as_str()),
                Some("update" | "refresh")
            ) {
                o.remove("action");
            }
            v.to_string()
        })
        .collect()
}

fn catalog_jsonl(csid: &str) -> BTreeSet<String> {
    let out = soif_ok(&["convert", csid, "--to", "jsonl", "-q"]);
    json_set(&out.stdout)
}

#[test]
fn harvest_file_through_the_catalog_equals_the_direct_conversion() {
    let server = Serve::start("loop", TOKEN, &[]);
    let inputs = [
        fixture("rfc2655/documents.soif"),
        fixture("harvest/ecrc-93-10.soif"),
        fixture("rfc2655/dublin-core.soif"),
    ];
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let direct = soif(&[&["convert"], &inputs[..], &["--to", "jsonl", "-q"]].concat());
    assert!(direct.status.success());
    let direct = json_set(&direct.stdout);
    assert!(direct.len() >= 5);

    let csid = server.csid();
    let sent = Command::new(SOIF)
        .args(["convert"])
        .args(&inputs)
        .args(["--to", "rdm", "-o", &csid, "--batch-size", "2"])
        .env("SOIF_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    assert_eq!(catalog_jsonl(&csid), direct);

    // Sending the same records again is harmless (upserts).
    let again = soif(
        &[
            &["convert"],
            &inputs[..],
            &["--to", "rdm", "-o", &csid, "--token", TOKEN, "-q"],
        ]
        .concat(),
    );
    assert!(again.status.success());
    assert_eq!(catalog_jsonl(&csid), direct);

    // An http:// URL reaches the default catalog.
    let default = format!("http://{}/", server.addr);
    soif_ok(&[
        "convert",
        &fixture("rfc2655/cip-hint.soif"),
        "--to",
        "rdm",
        "-o",
        &default,
        "--token",
        TOKEN,
        "-q",
    ]);
    assert!(catalog_jsonl(&csid).len() > direct.len());
}

#[test]
fn a_missing_or_wrong_token_is_refused_and_nothing_is_written() {
    let server = Serve::start("loop", TOKEN, &[]);
    let csid = server.csid();
    let doc = fixture("rfc2655/documents.soif");
    let none = soif(&["convert", &doc, "--to", "rdm", "-o", &csid]);
    assert_eq!(none.status.code(), Some(1));
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(err.contains("Authorization: Bearer"), "{err}");
    let wrong = soif(&[
        "convert", &doc, "--to", "rdm", "-o", &csid, "--token", "nope",
    ]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("wrong token"));
    assert!(catalog_jsonl(&csid).is_empty());
}

#[test]
fn a_loader_writing_the_served_database_is_seen_by_reads_and_keyword_queries() {
    let server = Serve::start("loop", TOKEN, &[]);
    let csid = server.csid();
    let db = server.db.to_str().unwrap().to_string();
    // A submission through the server and a load straight into its database.
    soif_ok(&to_catalog(&fixture("rfc2655/documents.soif"), &csid, &[]));
    soif_ok(&[
        "convert",
        &fixture("harvest/ecrc-93-10.soif"),
        "--to",
        "sqlite",
        "-o",
        &db,
    ]);
    assert_eq!(catalog_jsonl(&csid).len(), 4);
    // The loader did not update the keyword index; the server rebuilds it (soif_runs changed).
    let q = format!("{csid}?ql=sample-keyword-ql&scope=polymorphic");
    let out = soif_ok(&["convert", &q, "--to", "jsonl", "-q"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ECRC-93-10.ps.Z"), "{text}");
    // Submissions after the rebuild are indexed too.
    let q = format!("{csid}?ql=sample-keyword-ql&scope=welcome");
    let out = soif(&["convert", &q, "--to", "jsonl", "-q"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}

#[test]
fn records_without_url_are_rejected_under_on_error() {
    let server = Serve::start("loop", TOKEN, &[]);
    let csid = server.csid();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("mixed.soif");
    std::fs::write(
        &input,
        "@FILE { http://a/\nTitle{1}:\ta\n}\n@FILE { -\nTitle{4}:\tnone\n}\n@FILE { http://b/\n}\n",
    )
    .unwrap();
    let input = input.to_str().unwrap();
    let out = soif(&to_catalog(input, &csid, &[]));
    assert_eq!(out.status.code(), Some(1), "--on-error fail stops");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no URL"));
    let out = soif(&to_catalog(input, &csid, &["--on-error", "skip"]));
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(catalog_jsonl(&csid).len(), 2);
}

#[test]
fn deletions_travel_as_rd_response_deleted_and_come_back_as_deletions() {
    let server = Serve::start("loop", TOKEN, &[]);
    let csid = server.csid();
    let docs = fixture("rfc2655/documents.soif");
    soif_ok(&to_catalog(&docs, &csid, &[]));
    let dir = tempfile::tempdir().unwrap();
    let del = dir.path().join("del.soif");
    std::fs::write(
        &del,
        "@DELETE {\n@DOCUMENT { http://home.netscape.com:80/\n}\n}\n",
    )
    .unwrap();
    soif_ok(&to_catalog(del.to_str().unwrap(), &csid, &[]));
    assert_eq!(catalog_jsonl(&csid).len(), 2);
    // rd-request-deleted as an input: the RDs carry the action `delete`.
    let deleted = format!("{csid}?type=rd-request-deleted&scope=all");
    let out = soif_ok(&["convert", &deleted, "--to", "jsonl", "-q"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("\"action\":\"delete\""), "{text}");
    assert!(text.contains("http://home.netscape.com:80/"), "{text}");
    // …so mirroring them into SQLite deletes there too.
    let mirror = dir.path().join("mirror.db");
    let m = mirror.to_str().unwrap();
    soif_ok(&["convert", &docs, "--to", "sqlite", "-o", m, "-q"]);
    soif_ok(&["convert", &deleted, "--to", "sqlite", "-o", m, "-q"]);
    let conn = rusqlite::Connection::open(&mirror).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM DOCUMENT", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
}

#[test]
fn catalog_inputs_take_the_note_form_parameters() {
    let server = Serve::start("loop", TOKEN, &[]);
    let csid = server.csid();
    soif_ok(&to_catalog(&fixture("rfc2655/documents.soif"), &csid, &[]));
    let q = format!(
        "{csid}?ql=sample-keyword-ql&scope=netscape&view-hits=10&view-attributes=url,title,score"
    );
    let out = soif_ok(&["convert", &q, "--to", "jsonl", "-q"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.lines().next().unwrap().contains("\"Score\":\"1000\""),
        "{text}"
    );
    // A bad scope is the server's 400, with its message.
    let bad = format!("{csid}?scope=whenever");
    let out = soif(&["convert", &bad, "--to", "jsonl"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HTTP 400") && err.contains("gatherer query language"),
        "{err}"
    );
    // CSV needs a first pass: the catalog input is copied once for it.
    let out = soif_ok(&["convert", &csid, "--to", "csv", "-q"]);
    let csv = String::from_utf8_lossy(&out.stdout);
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(
        csv.lines().next().unwrap().starts_with("template,url,"),
        "{csv}"
    );
}

#[test]
fn soif_rdm_sends_one_request() {
    let server = Serve::start(
        "loop",
        TOKEN,
        &["--taxonomy", &fixture("rdm/taxonomy.soif")],
    );
    let csid = server.csid();
    let out = soif_ok(&["rdm", &csid, "--type", "status-request"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("@RDMHEADER { -\n"), "{text}");
    assert!(text.contains("<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">"));
    let out = soif_ok(&[
        "rdm",
        &csid,
        "--type",
        "taxonomy-description-request",
        "--scope",
        "anklebiter ROOT",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("@TAXONOMY { -\n") && text.contains("Id{18}:\tEducation/Training\n"));
    assert_eq!(text.matches("@CLASSIFICATION").count(), 1, "{text}");
    let other = format!("x-catalog://{}/elsewhere", server.addr);
    let out = soif(&["rdm", &other, "--type", "server-description-request"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no catalog named \"elsewhere\""));
    let out = soif(&["rdm", &csid, "--type", "rd-response"]);
    assert_eq!(out.status.code(), Some(2));
    let out = soif(&["rdm", &csid, "--type", "status-request", "--scope", "all"]);
    assert_eq!(out.status.code(), Some(2));
}

/// What the proxy does with its n-th connection.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Reads part of the request, then hangs up (a POST cut off midway).
    CutRequest,
    /// Passes the request on, then hangs up instead of passing the reply back (the server
    /// stored the batch; the client does not know).
    LoseReply,
    /// Answers 503 with an RDM status-response.
    Unavailable,
    /// Answers this status (429, 503) with `Retry-After: 1` and an RDM status-response.
    Busy(u16),
    /// Answers `200 OK` with an HTML page, as a captive portal or a misconfigured proxy
    /// does.
    Portal,
    /// Passes everything on.
    Forward,
}

/// What [`flaky_proxy`] hands back: its address, how many connections it took, and a
/// copy of every request byte it passed on to the server.
struct Proxy {
    addr: String,
    connections: Arc<AtomicUsize>,
    requests: Arc<std::sync::Mutex<Vec<u8>>>,
}

/// A TCP proxy in front of the server whose first connections fail as `faults` says.
fn flaky_proxy(server: String, faults: Vec<Fault>) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = requests.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut client) = conn else { break };
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let fault = faults.get(n).copied().unwrap_or(Fault::Forward);
            let server = server.clone();
            let log = log.clone();
            std::thread::spawn(move || match fault {
                Fault::CutRequest => {
                    let mut buf = [0u8; 300];
                    let _ = client.read(&mut buf);
                    let _ = client.shutdown(Shutdown::Both);
                }
                Fault::Unavailable => {
                    let mut buf = [0u8; 65536];
                    let _ = client.read(&mut buf);
                    let body = "@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{15}:\tstatus-response\nRDM-Error-Message{11}:\tbusy, later\n}\n";
                    let _ = write!(
                        client,
                        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/x-rdm\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = client.shutdown(Shutdown::Both);
                }
                Fault::Busy(status) => {
                    let mut buf = [0u8; 65536];
                    let _ = client.read(&mut buf);
                    let body = "@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{15}:\tstatus-response\nRDM-Error-Message{9}:\tslow down\n}\n";
                    let _ = write!(
                        client,
                        "HTTP/1.1 {status} Busy\r\nRetry-After: 1\r\nContent-Type: application/x-rdm\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = client.shutdown(Shutdown::Both);
                }
                Fault::Portal => {
                    let mut buf = [0u8; 65536];
                    let _ = client.read(&mut buf);
                    let body = "<html><body>Please log in to use this network.</body></html>";
                    let _ = write!(
                        client,
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = client.shutdown(Shutdown::Both);
                }
                Fault::LoseReply | Fault::Forward => {
                    let Ok(mut upstream) = TcpStream::connect(&server) else {
                        return;
                    };
                    let mut c2 = client.try_clone().unwrap();
                    let mut u2 = upstream.try_clone().unwrap();
                    let up = std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        while let Ok(n @ 1..) = c2.read(&mut buf) {
                            log.lock().unwrap().extend_from_slice(&buf[..n]);
                            if u2.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = u2.shutdown(Shutdown::Write);
                    });
                    if matches!(fault, Fault::LoseReply) {
                        // Wait for the reply to start (the server has committed), drop it.
                        let mut buf = [0u8; 1];
                        let _ = upstream.read(&mut buf);
                        let _ = client.shutdown(Shutdown::Both);
                        let _ = upstream.shutdown(Shutdown::Both);
                    } else {
                        let _ = std::io::copy(&mut upstream, &mut client);
                        let _ = client.shutdown(Shutdown::Write);
                    }
                    let _ = up.join();
                }
            });
        }
    });
    Proxy {
        addr,
        connections: seen,
        requests,
    }
}

#[test]
fn a_flaky_connection_loses_nothing_and_doubles_nothing() {
    let server = Serve::start("loop", TOKEN, &[]);
    let faults = vec![
        Fault::CutRequest,
        Fault::Unavailable,
        Fault::LoseReply,
        Fault::CutRequest,
    ];
    let Proxy {
        addr: proxy,
        connections,
        ..
    } = flaky_proxy(server.addr.clone(), faults);
    let inputs = [
        fixture("rfc2655/documents.soif"),
        fixture("harvest/ecrc-93-10.soif"),
        fixture("rfc2655/dublin-core.soif"),
    ];
    let through_proxy = format!("x-catalog://{proxy}/loop");
    let out = Command::new(SOIF)
        .arg("convert")
        .args(&inputs)
        .args([
            "--to",
            "rdm",
            "-o",
            &through_proxy,
            "--token",
            TOKEN,
            "--batch-size",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        connections.load(Ordering::SeqCst) >= 5,
        "every fault was met"
    );
    let direct = soif(
        &[
            &["convert"],
            &inputs.iter().map(String::as_str).collect::<Vec<_>>()[..],
            &["--to", "jsonl", "-q"],
        ]
        .concat(),
    );
    // Nothing lost, nothing doubled: exactly the input's records.
    assert_eq!(catalog_jsonl(&server.csid()), json_set(&direct.stdout));

    // A 4xx is not retried: the run stops with the server's message.
    let refused = Command::new(SOIF)
        .arg("convert")
        .args(&inputs)
        .args(["--to", "rdm", "-o", &through_proxy, "--token", "wrong"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("wrong token"));
}

#[test]
fn serve_refuses_bad_configurations() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let db = db.to_str().unwrap();
    for (args, code, needle) in [
        (vec!["serve", "--db", "=x.db"], 2, "NAME=PATH"),
        (
            vec![
                "serve",
                "--db",
                db,
                "--taxonomy",
                "/nonexistent/taxonomy.soif",
            ],
            2,
            "cannot open the taxonomy",
        ),
        (
            vec!["serve", "--db", db, "--schema", "/nonexistent/schema.soif"],
            2,
            "schema",
        ),
        (
            vec![
                "serve",
                "--db",
                &format!("a={db}"),
                "--db",
                &format!("a={db}"),
            ],
            2,
            "two catalogs are named \"a\"",
        ),
        (
            vec!["serve", "--db", db, "--listen", "not-an-address"],
            1,
            "listening on",
        ),
    ] {
        let out = soif(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // A taxonomy that is not a tree.
    let bad = dir.path().join("bad-taxonomy.soif");
    std::fs::write(
        &bad,
        "@TAXONOMY { -\nId{1}:\tT\n}\n@CLASSIFICATION { -\nId{1}:\tA\nParent-Id{1}:\tB\nTaxonomy-Id{1}:\tT\n}\n",
    )
    .unwrap();
    let out = soif(&["serve", "--db", db, "--taxonomy", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown parent"));
}

#[test]
fn upserts_and_deletions_keep_their_order_across_batches() {
    let server = Serve::start("loop", TOKEN, &[]);
    let csid = server.csid();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("order.soif");
    // A stored, deleted, stored again with a new title; B stored then deleted.
    std::fs::write(
        &input,
        "@FILE { http://a/\nTitle{3}:\told\n}\n@FILE { http://b/\nTitle{1}:\tb\n}\n\
         @DELETE {\n@FILE { http://a/\n}\n@FILE { http://b/\n}\n}\n\
         @FILE { http://a/\nTitle{3}:\tnew\n}\n",
    )
    .unwrap();
    soif_ok(&to_catalog(
        input.to_str().unwrap(),
        &csid,
        &["--batch-size", "10"],
    ));
    let now = catalog_jsonl(&csid);
    assert_eq!(now.len(), 1, "{now:?}");
    assert!(
        now.iter().next().unwrap().contains("\"Title\":\"new\""),
        "{now:?}"
    );
    let deleted = soif(&[
        "convert",
        &format!("{csid}?type=rd-request-deleted"),
        "--to",
        "jsonl",
        "-q",
    ]);
    let text = String::from_utf8_lossy(&deleted.stdout);
    assert_eq!(text.lines().count(), 1, "only b is still deleted: {text}");
    assert!(text.contains("http://b/"), "{text}");
}

/// The status document counts each template's RDs and tells of the latest load.
#[test]
fn status_counts_rds_and_tells_of_the_last_load() {
    let server = Serve::start("counted", TOKEN, &[]);
    let csid = server.csid();
    // Loaded behind the server's back, as a nightly job would.
    soif_ok(&[
        "convert",
        &fixture("rfc2655/documents.soif"),
        &fixture("harvest/ecrc-93-10.soif"),
        "--to",
        "sqlite",
        "-o",
        server.db.to_str().unwrap(),
        "-q",
    ]);
    let out = soif_ok(&["rdm", &csid, "--type", "status-request"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("<CODE>@DOCUMENT</CODE> 3 RDs, <CODE>@FILE</CODE> 1 RD"),
        "{text}"
    );
    assert!(text.contains("Last load: run 1, ok, started "), "{text}");
    assert!(
        text.contains("; 4 records: 4 stored, 0 deleted, 0 rejected"),
        "{text}"
    );
}

/// `--gzip-posts`: the POSTs say `Content-Encoding: gzip` and carry no SOIF in the clear,
/// and the catalog ends up with the same records as without it.
#[test]
fn gzip_posts_arrive_compressed_and_whole() {
    let input = fixture("rfc2655/documents.soif");
    let direct = json_set(&soif_ok(&["convert", &input, "--to", "jsonl", "-q"]).stdout);
    for gzip in [false, true] {
        let server = Serve::start("loop", TOKEN, &[]);
        let proxy = flaky_proxy(server.addr.clone(), Vec::new());
        let through_proxy = format!("x-catalog://{}/loop", proxy.addr);
        let mut extra = vec!["--batch-size", "2"];
        if gzip {
            extra.push("--gzip-posts");
        }
        soif_ok(&to_catalog(&input, &through_proxy, &extra));
        let sent = String::from_utf8_lossy(&proxy.requests.lock().unwrap()).to_ascii_lowercase();
        assert_eq!(
            sent.matches("content-encoding: gzip").count(),
            if gzip { 2 } else { 0 },
            "{gzip}: one header per POST of two records"
        );
        assert_eq!(sent.contains("rdm-type{11}:\trd-response"), !gzip);
        assert_eq!(catalog_jsonl(&server.csid()), direct, "{gzip}");
    }
}

/// `soif convert INPUTS --to rdm -o CSID --token TOKEN --batch-size 2`.
fn send_through(csid: &str, inputs: &[String]) -> std::process::Output {
    Command::new(SOIF)
        .arg("convert")
        .args(inputs)
        .args([
            "--to",
            "rdm",
            "-o",
            csid,
            "--token",
            TOKEN,
            "--batch-size",
            "2",
        ])
        .env_remove("SOIF_TOKEN")
        .output()
        .unwrap()
}

/// The `out` count of the summary line on stderr.
fn summary_out(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains(" records in, "))
        .unwrap_or_else(|| panic!("no summary line in {stderr}"));
    line.split(" records in, ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no out count in {line}"))
}

#[test]
fn a_200_html_page_stores_nothing_and_fails_with_the_summary() {
    let server = Serve::start("loop", TOKEN, &[]);
    let Proxy {
        addr: proxy,
        connections,
        ..
    } = flaky_proxy(server.addr.clone(), vec![Fault::Portal]);
    let out = send_through(
        &format!("x-catalog://{proxy}/loop"),
        &[fixture("rfc2655/documents.soif")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(connections.load(Ordering::SeqCst), 1, "not retried");
    assert!(
        err.contains("HTTP 200 OK with a text/html reply, not an RDM status-response"),
        "{err}"
    );
    assert!(
        err.contains("0 records stored in the catalog before this"),
        "{err}"
    );
    assert!(err.contains("soif: stopped: 3 records in, 0 out"), "{err}");
    assert_eq!(summary_out(&err), 0);
    assert!(catalog_jsonl(&server.csid()).is_empty());
}

#[test]
fn a_429_and_a_503_are_retried_after_retry_after() {
    let server = Serve::start("loop", TOKEN, &[]);
    let Proxy {
        addr: proxy,
        connections,
        ..
    } = flaky_proxy(
        server.addr.clone(),
        vec![Fault::Busy(429), Fault::Busy(503)],
    );
    let inputs = [fixture("rfc2655/documents.soif")];
    let started = std::time::Instant::now();
    let out = send_through(&format!("x-catalog://{proxy}/loop"), &inputs);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Retry-After: 1, twice (the backoff alone would have waited 0.25 s + 0.5 s).
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "{err}"
    );
    assert!(connections.load(Ordering::SeqCst) >= 3);
    // Each retry is reported as a warning and counted.
    assert!(err.contains("soif: warning: rdm output: HTTP 429 Too Many Requests: slow down; sending the batch of 2 records again in 1.0 s (retry 1 of 6)"), "{err}");
    assert!(
        err.contains("HTTP 503 Service Unavailable: slow down"),
        "{err}"
    );
    assert!(err.contains(", 2 warnings"), "{err}");
    assert_eq!(summary_out(&err), 3);
    let direct = soif(&["convert", &inputs[0], "--to", "jsonl", "-q"]);
    assert_eq!(catalog_jsonl(&server.csid()), json_set(&direct.stdout));
}

#[test]
fn a_refusal_mid_run_reports_what_reached_the_catalog() {
    // Bodies over 8 KiB are refused (413): the second batch holds a 20 KB record.
    let server = Serve::start("loop", TOKEN, &["--max-body", "8KiB"]);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.soif");
    let big = "x".repeat(20_000);
    std::fs::write(
        &input,
        format!(
            "@FILE {{ http://a/\nTitle{{1}}:\ta\n}}\n@FILE {{ http://b/\nTitle{{1}}:\tb\n}}\n\
             @FILE {{ http://c/\nTitle{{1}}:\tc\n}}\n@FILE {{ http://d/\nTitle{{{}}}:\t{big}\n}}\n",
            big.len()
        ),
    )
    .unwrap();
    let out = send_through(&server.csid(), &[input.to_str().unwrap().to_string()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("HTTP 413"), "{err}");
    assert!(
        err.contains("2 records stored in the catalog before this"),
        "{err}"
    );
    assert!(err.contains("soif: stopped: 4 records in, 2 out"), "{err}");
    assert_eq!(catalog_jsonl(&server.csid()).len(), 2);
}
