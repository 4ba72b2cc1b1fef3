//! OAI-PMH repositories as inputs (`oai+http://…`), HTTP conditional requests and
//! incremental `x-catalog://` reads, end to end over loopback servers: `soif serve` (its
//! provider and its catalog) and tiny servers in this file that count what they are asked
//! and misbehave on purpose (503 with Retry-After, the same page again).

use futures::StreamExt;
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use soif_pipeline::source::{InputData, Source};
use soif_pipeline::{Checkpoint, Checkpoints};
use soif_sources::{expand, InputSettings, InputSource};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::common;
use common::{code, convert, stderr, summary, Serve};

const TOKEN: &str = "oai-token";

/// `n` FILE records numbered from `first`, with what must survive byte for byte: a CR,
/// bytes that are not UTF-8, repeated names, `<&>`.
fn records(first: usize, n: usize, edition: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for k in first..first + n {
        let mut attrs: Vec<(String, Vec<u8>)> = vec![
            (
                "Title".into(),
                format!("Document {k} <{edition}> & co").into_bytes(),
            ),
            ("Author-1".into(), b"A. Author".to_vec()),
            ("Author-2".into(), format!("B. Writer {k}").into_bytes()),
            ("Keywords".into(), b"line one\r\nline two".to_vec()),
            ("Last-Modification-Time".into(), b"774988159".to_vec()),
        ];
        if k % 3 == 0 {
            attrs.push(("Latin".into(), vec![b'c', 0xe9, b't', 0xe9, 0x00]));
        }
        out.extend_from_slice(format!("@FILE {{ http://example.org/doc/{k}\n").as_bytes());
        for (name, value) in attrs {
            out.extend_from_slice(format!("{name}{{{}}}:\t", value.len()).as_bytes());
            out.extend_from_slice(&value);
            out.push(b'\n');
        }
        out.extend_from_slice(b"}\n");
    }
    out
}

/// `haystack` with every `from` replaced by `to`.
fn replace(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

fn deletions(keys: &[usize]) -> Vec<u8> {
    let mut out = b"@DELETE {\n".to_vec();
    for k in keys {
        out.extend_from_slice(format!("@FILE {{ http://example.org/doc/{k}\n}}\n").as_bytes());
    }
    out.extend_from_slice(b"}\n");
    out
}

/// Submits SOIF to the served catalog.
fn submit(serve: &Serve, soif: &[u8]) {
    let csid = serve.csid();
    let out = convert(
        &["-", "--to", "rdm", "-o", &csid, "--token", TOKEN, "-q"],
        soif,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// Every record table of a catalog database, as `template → url → {column: value}`
/// (NULLs and the `soif_` bookkeeping columns left out): two databases loaded in
/// different orders compare equal when they hold the same records.
fn records_of(db: &Path) -> BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>> {
    let conn = Connection::open(db).unwrap();
    let tables: Vec<(String, String)> = conn
        .prepare("SELECT template, table_name FROM soif_tables")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = BTreeMap::new();
    for (template, table) in tables {
        let mut st = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let names: Vec<String> = st.column_names().iter().map(|s| s.to_string()).collect();
        let rows = st
            .query_map([], |r| {
                let mut row = BTreeMap::new();
                for (i, n) in names.iter().enumerate() {
                    if n.starts_with("soif_") {
                        continue;
                    }
                    let v = match r.get::<_, SqlValue>(i)? {
                        SqlValue::Null => continue,
                        SqlValue::Text(t) => format!("text:{t}"),
                        SqlValue::Blob(b) => format!("blob:{b:?}"),
                        SqlValue::Integer(x) => format!("int:{x}"),
                        SqlValue::Real(x) => format!("real:{x}"),
                    };
                    row.insert(n.clone(), v);
                }
                Ok(row)
            })
            .unwrap();
        let mut by_url = BTreeMap::new();
        for row in rows {
            let row = row.unwrap();
            by_url.insert(row.get("url").cloned().unwrap_or_default(), row);
        }
        if !by_url.is_empty() {
            out.insert(template, by_url);
        }
    }
    out
}

fn oai_url(serve: &Serve, query: &str) -> String {
    format!("oai+http://{}/oai/books?{query}", serve.addr)
}

/// Canonical SOIF records of a stream, as a set (the catalog and the provider list them
/// in different orders).
fn soif_set(bytes: &[u8]) -> BTreeSet<Vec<u8>> {
    let mut out = BTreeSet::new();
    let mut rest = bytes;
    while let Some(start) = rest.windows(6).position(|w| w == b"@FILE ") {
        let from = &rest[start..];
        let end = from
            .windows(3)
            .position(|w| w == b"\n}\n")
            .map_or(from.len(), |e| e + 3);
        out.insert(from[..end].to_vec());
        rest = &from[end..];
    }
    out
}

#[test]
fn a_full_harvest_in_the_soif_format_is_the_catalog_byte_for_byte() {
    let serve = Serve::start("books", TOKEN, &["--oai-page-size", "4"]);
    submit(&serve, &records(1, 23, "first"));
    // 23 items at 4 a page: six pages, five resumption tokens.
    let harvested = convert(
        &[&oai_url(&serve, "metadataPrefix=soif"), "--to", "soif"],
        b"",
    );
    assert_eq!(code(&harvested), 0, "{}", stderr(&harvested));
    assert_eq!(summary(&harvested).records_in, 23);
    let direct = convert(&[&serve.csid(), "--to", "soif", "-q"], b"");
    assert_eq!(code(&direct), 0, "{}", stderr(&direct));
    let (h, d) = (soif_set(&harvested.stdout), soif_set(&direct.stdout));
    assert_eq!(h.len(), 23);
    assert_eq!(h, d);

    // Into SQLite: the same rows as the served catalog.
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("mirror.db");
    let m = mirror.to_str().unwrap();
    let out = convert(
        &[
            &oai_url(&serve, "metadataPrefix=soif"),
            "--to",
            "sqlite",
            "-o",
            m,
            "-q",
        ],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(records_of(&mirror), records_of(&serve.db));
}

#[test]
fn oai_dc_items_become_dublin_core_records_named_by_their_identifiers() {
    let serve = Serve::start("books", TOKEN, &["--oai-page-size", "2"]);
    submit(&serve, &records(1, 5, "dc"));
    let out = convert(
        &[
            &oai_url(&serve, "metadataPrefix=oai_dc&set=FILE"),
            "--to",
            "jsonl",
        ],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    for l in &lines {
        assert_eq!(l["template"], "Dublin-Core");
        let url = l["url"].as_str().unwrap();
        assert!(
            url.starts_with("oai:") && url.contains(":FILE/http://example.org/doc/"),
            "{url}"
        );
        let a = &l["attributes"];
        assert!(a["TITLE"].as_str().unwrap().starts_with("Document "), "{l}");
        // Author-1, Author-2 → two dc:creator → CREATOR-1, CREATOR-2.
        assert_eq!(a["CREATOR-1"], "A. Author");
        assert!(a["CREATOR-2"].as_str().unwrap().starts_with("B. Writer"));
        assert_eq!(a["DATE"], "1994-07-23T18:29:19Z");
    }
    // A set with nothing in it: noRecordsMatch is an empty harvest, not an error.
    let out = convert(
        &[
            &oai_url(&serve, "metadataPrefix=oai_dc&set=DOCUMENT"),
            "--to",
            "jsonl",
        ],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    // Another OAI-PMH error is an error naming the page.
    let out = convert(
        &[
            &oai_url(&serve, "metadataPrefix=oai_dc&from=2026-13-45"),
            "--to",
            "jsonl",
        ],
        b"",
    );
    assert_eq!(code(&out), 1);
    let e = stderr(&out);
    assert!(e.contains("page 1") && e.contains("badArgument"), "{e}");
}

/// A UTC timestamp at second granularity, as OAI-PMH writes them.
fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Waits until the clock has passed into the next second: a load and the harvest after
/// it then never share a datestamp second (`from` is inclusive, so a shared second would
/// fetch the load's items again — harmless, but the counts below are exact).
fn next_second() {
    let start = now_utc();
    while now_utc() == start {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn an_incremental_mirror_with_explicit_from_stays_identical_across_additions_and_deletions() {
    let serve = Serve::start("books", TOKEN, &["--oai-page-size", "5"]);
    submit(&serve, &records(1, 12, "first"));
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("mirror.db");
    let m = mirror.to_str().unwrap();
    next_second();
    // Run 1: everything.
    let from1 = now_utc();
    let out = convert(
        &[
            &oai_url(&serve, "metadataPrefix=soif"),
            "--to",
            "sqlite",
            "-o",
            m,
        ],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(summary(&out).records_in, 12);
    assert_eq!(records_of(&mirror), records_of(&serve.db));

    // Run 2: three new, two changed, two deleted: seven items.
    submit(&serve, &records(13, 3, "first"));
    submit(&serve, &records(4, 2, "second"));
    submit(&serve, &deletions(&[7, 9]));
    next_second();
    let from2 = now_utc();
    let out = convert(
        &[
            &oai_url(&serve, &format!("metadataPrefix=soif&from={from1}")),
            "--to",
            "sqlite",
            "-o",
            m,
        ],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(summary(&out).records_in, 7);
    assert_eq!(records_of(&mirror), records_of(&serve.db));
    assert!(!records_of(&mirror)["FILE"].contains_key("text:http://example.org/doc/7"));

    // Run 3: one deleted that was added in run 2, one added back that was deleted.
    submit(&serve, &deletions(&[14]));
    submit(&serve, &records(9, 1, "back"));
    next_second();
    let out = convert(
        &[
            &oai_url(&serve, &format!("metadataPrefix=soif&from={from2}")),
            "--to",
            "sqlite",
            "-o",
            m,
        ],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(summary(&out).records_in, 2);
    assert_eq!(records_of(&mirror), records_of(&serve.db));
}

/// How many requests `soif serve` has answered (its status document's count, this
/// request included).
fn served(serve: &Serve) -> usize {
    let mut s = TcpStream::connect(&serve.addr).unwrap();
    write!(
        s,
        "GET /rdm/incoming?type=status-request HTTP/1.0\r\nHost: {}\r\n\r\n",
        serve.addr
    )
    .unwrap();
    let mut body = String::new();
    std::io::Read::read_to_string(&mut s, &mut body).unwrap();
    body.split("<DT>Requests<DD>")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no request count in {body}"))
}

/// One `--state` run of the mirror: (records in, requests the harvest made).
fn state_run(serve: &Serve, state: &str, mirror: &str) -> (u64, usize) {
    let before = served(serve);
    let out = convert(
        &[
            &oai_url(serve, "metadataPrefix=soif"),
            "--state",
            state,
            "--to",
            "sqlite",
            "-o",
            mirror,
        ],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let after = served(serve);
    let records_in = if stderr(&out).contains(" records in, ") {
        summary(&out).records_in
    } else {
        0
    };
    // Less the status request `after` itself.
    (records_in, after - before - 1)
}

#[test]
fn a_mirror_with_state_fetches_only_what_changed_over_three_runs() {
    let serve = Serve::start("books", TOKEN, &["--oai-page-size", "5"]);
    submit(&serve, &records(1, 12, "first"));
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("mirror.db");
    let state = dir.path().join("mirror.state");
    let (m, st) = (mirror.to_str().unwrap(), state.to_str().unwrap());
    next_second();
    // Run 1: everything: Identify (the granularity, once) and three pages of five.
    assert_eq!(state_run(&serve, st, m), (12, 4));
    assert_eq!(records_of(&mirror), records_of(&serve.db));

    // Run 2: three new, two changed, two deleted: seven items, two pages.
    submit(&serve, &records(13, 3, "first"));
    submit(&serve, &records(4, 2, "second"));
    submit(&serve, &deletions(&[7, 9]));
    next_second();
    assert_eq!(state_run(&serve, st, m), (7, 2));
    assert_eq!(records_of(&mirror), records_of(&serve.db));

    // Run 3: one added in run 2 deleted, one deleted in run 2 back: one page.
    submit(&serve, &deletions(&[14]));
    submit(&serve, &records(9, 1, "back"));
    next_second();
    assert_eq!(state_run(&serve, st, m), (2, 1));
    assert_eq!(records_of(&mirror), records_of(&serve.db));

    // Nothing changed: one request (noRecordsMatch), nothing read.
    next_second();
    assert_eq!(state_run(&serve, st, m), (0, 1));
    assert_eq!(records_of(&mirror), records_of(&serve.db));
}

/// A tiny HTTP server on 127.0.0.1: `answer` gets the request line and headers and
/// returns the whole reply; the number of requests is counted.
struct Tiny {
    addr: String,
    requests: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<String>>>,
}

type Answer = Arc<dyn Fn(usize, &str) -> Vec<u8> + Send + Sync>;

impl Tiny {
    fn start(answer: Answer) -> Tiny {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let requests = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (r, s) = (requests.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let (r, s, answer) = (r.clone(), s.clone(), answer.clone());
                std::thread::spawn(move || serve_one(stream, &r, &s, &answer));
            }
        });
        Tiny {
            addr,
            requests,
            seen,
        }
    }
}

fn serve_one(
    mut stream: TcpStream,
    count: &AtomicUsize,
    seen: &Mutex<Vec<String>>,
    answer: &Answer,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let n = count.fetch_add(1, Ordering::SeqCst);
        seen.lock().unwrap().push(head.clone());
        let reply = answer(n, &head);
        if stream.write_all(&reply).is_err() {
            return;
        }
    }
}

fn reply(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len()).into_bytes();
    for (k, v) in headers {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

fn dc_page(ids: &[&str], token: Option<&str>) -> Vec<u8> {
    let mut s = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\">\
         <responseDate>2026-11-24T10:00:00Z</responseDate><request verb=\"ListRecords\">http://x/oai</request><ListRecords>",
    );
    for id in ids {
        s.push_str(&format!(
            "<record><header><identifier>{id}</identifier><datestamp>2026-11-24</datestamp></header>\
             <metadata><oai_dc:dc xmlns:oai_dc=\"http://www.openarchives.org/OAI/2.0/oai_dc/\" \
             xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:title>Title of {id}</dc:title></oai_dc:dc></metadata></record>"
        ));
    }
    if let Some(t) = token {
        s.push_str(&format!("<resumptionToken>{t}</resumptionToken>"));
    }
    s.push_str("</ListRecords></OAI-PMH>");
    s.into_bytes()
}

#[test]
fn a_503_with_retry_after_is_asked_again_and_nothing_is_lost() {
    // Each page is refused once with 503 + Retry-After: 1, then served.
    let tiny = Tiny::start(Arc::new(|n, head: &str| {
        if n % 2 == 0 {
            return reply("503 Service Unavailable", &[("Retry-After", "1")], b"busy");
        }
        let page = if head.contains("resumptionToken=t2") {
            dc_page(&["oai:x:3"], None)
        } else {
            dc_page(&["oai:x:1", "oai:x:2"], Some("t2"))
        };
        reply("200 OK", &[("Content-Type", "text/xml")], &page)
    }));
    let url = format!("oai+http://{}/oai", tiny.addr);
    let out = convert(&[&url, "--to", "jsonl"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(summary(&out).records_in, 3);
    assert_eq!(tiny.requests.load(Ordering::SeqCst), 4);
    let e = stderr(&out);
    assert!(e.contains("HTTP 503") && e.contains("retry 1 of 6"), "{e}");
    assert!(e.contains("page 2"), "{e}");

    // A repository that never recovers: a clear error after the retries, naming the
    // URL and the page.
    let down = Tiny::start(Arc::new(|_, _: &str| {
        reply("503 Service Unavailable", &[("Retry-After", "0")], b"down")
    }));
    let url = format!("oai+http://{}/oai", down.addr);
    let out = convert(&[&url, "--to", "jsonl"], b"");
    assert_eq!(code(&out), 1);
    let e = stderr(&out);
    assert!(
        e.contains("page 1") && e.contains("giving up after 7 attempts") && e.contains(&down.addr),
        "{e}"
    );
    assert_eq!(down.requests.load(Ordering::SeqCst), 7);
}

#[test]
fn a_resumption_token_sent_twice_stops_the_harvest() {
    let tiny = Tiny::start(Arc::new(|_, _: &str| {
        reply("200 OK", &[], &dc_page(&["oai:x:1"], Some("same")))
    }));
    let url = format!("oai+http://{}/oai", tiny.addr);
    let out = convert(&[&url, "--to", "jsonl"], b"");
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("same resumption token"),
        "{}",
        stderr(&out)
    );
    assert_eq!(tiny.requests.load(Ordering::SeqCst), 2);
}

/// Reads every input of `source`: records (or, for SOIF bytes, the byte count).
async fn drain(mut source: InputSource) -> (usize, usize) {
    let (mut records, mut bytes) = (0, 0);
    while let Some(input) = source.next_input().await.unwrap() {
        match input.data {
            InputData::Records(mut s) => {
                while let Some(item) = s.next().await {
                    item.unwrap().unwrap();
                    records += 1;
                }
            }
            InputData::Soif(mut r) => {
                let mut buf = Vec::new();
                tokio::io::AsyncReadExt::read_to_end(&mut r, &mut buf)
                    .await
                    .unwrap();
                bytes += buf.len();
            }
            InputData::Held { data, .. } => bytes += data.len(),
        }
    }
    (records, bytes)
}

fn source(inputs: &[String], checkpoints: &Checkpoints) -> InputSource {
    let opts = InputSettings {
        checkpoints: Some(checkpoints.clone()),
        ..InputSettings::default()
    };
    InputSource::new(expand(inputs).unwrap(), opts)
}

/// A run's checkpoints: the previous run's staged ones (none the first time), starting now.
fn checkpoints(previous: &[(String, Checkpoint)]) -> Checkpoints {
    Checkpoints::new(previous.to_vec(), now_utc())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn an_http_source_answered_304_is_not_read_again() {
    let body = records(1, 3, "http");
    let served = Arc::new(AtomicUsize::new(0));
    let s = served.clone();
    let tiny = Tiny::start(Arc::new(move |_, head: &str| {
        if head.to_ascii_lowercase().contains("if-none-match: \"v1\"") {
            return reply("304 Not Modified", &[("ETag", "\"v1\"")], b"");
        }
        s.fetch_add(1, Ordering::SeqCst);
        reply(
            "200 OK",
            &[
                ("ETag", "\"v1\""),
                ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
            ],
            &body,
        )
    }));
    let inputs = vec![format!("http://{}/All-Templates.soif", tiny.addr)];
    let rt = runtime();
    let first = checkpoints(&[]);
    let (_, bytes) = rt.block_on(drain(source(&inputs, &first)));
    assert_eq!(bytes, records(1, 3, "http").len());
    let staged = first.staged();
    assert_eq!(staged.len(), 1);
    assert_eq!(staged[0].0, inputs[0]);
    assert_eq!(staged[0].1.kind, "http");
    assert!(staged[0].1.value.contains("v1"), "{:?}", staged[0]);

    let second = checkpoints(&staged);
    let (records_read, bytes) = rt.block_on(drain(source(&inputs, &second)));
    assert_eq!((records_read, bytes), (0, 0));
    // Unchanged: the same checkpoint again.
    assert_eq!(second.staged(), staged);
    assert_eq!(tiny.requests.load(Ordering::SeqCst), 2);
    assert_eq!(served.load(Ordering::SeqCst), 1, "the body was sent once");
    let seen = tiny.seen.lock().unwrap();
    assert!(
        seen[1]
            .to_ascii_lowercase()
            .contains("if-modified-since: sun, 06 nov 1994 08:49:37 gmt"),
        "{}",
        seen[1]
    );
}

#[test]
fn oai_checkpoints_resume_from_the_response_date() {
    let tiny = Tiny::start(Arc::new(|_, head: &str| {
        if head.contains("verb=Identify") {
            let body = "<OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\"><responseDate>2026-11-24T10:00:00Z</responseDate>\
                        <Identify><granularity>YYYY-MM-DD</granularity></Identify></OAI-PMH>";
            return reply("200 OK", &[], body.as_bytes());
        }
        if head.contains("from=2026-11-24") {
            return reply("200 OK", &[], &dc_page(&["oai:x:9"], None));
        }
        reply("200 OK", &[], &dc_page(&["oai:x:1", "oai:x:2"], None))
    }));
    let inputs = vec![format!("oai+http://{}/oai", tiny.addr)];
    let rt = runtime();
    let first = checkpoints(&[]);
    assert_eq!(rt.block_on(drain(source(&inputs, &first))).0, 2);
    let staged = first.staged();
    let cp = &staged[0].1;
    assert_eq!(cp.kind, "oai");
    // The day granularity of Identify: responseDate 2026-11-24T10:00:00Z → from=2026-11-24.
    assert!(cp.value.contains("\"from\":\"2026-11-24\""), "{cp:?}");
    let second = checkpoints(&staged);
    assert_eq!(rt.block_on(drain(source(&inputs, &second))).0, 1);
    // Identify once (the second run knows the granularity), then one list each.
    assert_eq!(tiny.requests.load(Ordering::SeqCst), 3);
}

#[test]
fn an_incremental_catalog_read_takes_deletions_and_changes_since_the_last_run() {
    let serve = Serve::start("books", TOKEN, &[]);
    submit(&serve, &dated_now(1, 6, "c"));
    // The scope is inclusive: RDs dated in the second the run starts come again next
    // time. Start in a later second, so that the counts below are exact.
    next_second();
    let inputs = vec![serve.csid()];
    let rt = runtime();
    let first = checkpoints(&[]);
    assert_eq!(rt.block_on(drain(source(&inputs, &first))).0, 6);
    let staged = first.staged();
    assert_eq!(staged[0].1.kind, "x-catalog");
    assert!(staged[0].1.value.contains("since"), "{staged:?}");

    // Later: two new, one deleted.
    submit(&serve, &dated_now(7, 2, "c"));
    submit(&serve, &deletions(&[3]));
    let second = checkpoints(&staged);
    let mut src = source(&inputs, &second);
    let items = rt.block_on(async {
        let mut out = Vec::new();
        while let Some(input) = src.next_input().await.unwrap() {
            if let InputData::Records(mut s) = input.data {
                while let Some(item) = s.next().await {
                    let r = item.unwrap().unwrap();
                    out.push((r.action, r.url_str().into_owned()));
                }
            }
        }
        out
    });
    assert_eq!(
        items,
        [
            (
                Some(soif_codecs::Action::Delete),
                "http://example.org/doc/3".to_string()
            ),
            (None, "http://example.org/doc/7".to_string()),
            (None, "http://example.org/doc/8".to_string()),
        ]
    );
}

#[test]
fn a_harvest_that_fails_midway_stages_no_checkpoint() {
    // Page 1 is served with a token; page 2 is a protocol error.
    let tiny = Tiny::start(Arc::new(|_, head: &str| {
        if head.contains("verb=Identify") {
            let body = "<OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\">\
                        <Identify><granularity>YYYY-MM-DDThh:mm:ssZ</granularity></Identify></OAI-PMH>";
            return reply("200 OK", &[], body.as_bytes());
        }
        if head.contains("resumptionToken") {
            let body = "<OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\">\
                        <error code=\"badResumptionToken\">expired</error></OAI-PMH>";
            return reply("200 OK", &[], body.as_bytes());
        }
        reply("200 OK", &[], &dc_page(&["oai:x:1"], Some("t2")))
    }));
    let inputs = vec![format!("oai+http://{}/oai", tiny.addr)];
    let rt = runtime();
    let cps = checkpoints(&[]);
    let mut src = source(&inputs, &cps);
    let (records, error) = rt.block_on(async {
        let mut n = 0;
        let input = src.next_input().await.unwrap().unwrap();
        let InputData::Records(mut s) = input.data else {
            panic!("records expected")
        };
        while let Some(item) = s.next().await {
            match item {
                Ok(_) => n += 1,
                Err(e) => return (n, e.to_string()),
            }
        }
        (n, String::new())
    });
    assert_eq!(records, 1);
    assert!(
        error.contains("page 2") && error.contains("badResumptionToken: expired"),
        "{error}"
    );
    assert!(cps.staged().is_empty(), "{:?}", cps.staged());
}

#[test]
fn with_state_an_http_source_answered_304_is_not_read_again() {
    let body = records(1, 3, "http");
    let served_bodies = Arc::new(AtomicUsize::new(0));
    let s = served_bodies.clone();
    let tiny = Tiny::start(Arc::new(move |_, head: &str| {
        if head.to_ascii_lowercase().contains("if-none-match: \"v1\"") {
            return reply("304 Not Modified", &[("ETag", "\"v1\"")], b"");
        }
        s.fetch_add(1, Ordering::SeqCst);
        reply("200 OK", &[("ETag", "\"v1\"")], &body)
    }));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("http.state");
    let db = dir.path().join("out.db");
    let url = format!("http://{}/All-Templates.soif", tiny.addr);
    let args = [
        url.as_str(),
        "--state",
        state.to_str().unwrap(),
        "--to",
        "sqlite",
        "-o",
        db.to_str().unwrap(),
    ];
    let first = convert(&args, b"");
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert_eq!(summary(&first).records_in, 3);
    let second = convert(&args, b"");
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert!(
        !stderr(&second).contains(" records in, ") || summary(&second).records_in == 0,
        "{}",
        stderr(&second)
    );
    assert_eq!(tiny.requests.load(Ordering::SeqCst), 2);
    assert_eq!(
        served_bodies.load(Ordering::SeqCst),
        1,
        "the body was sent once"
    );
}

#[test]
fn the_oai_mirror_config_mirrors_a_served_catalog() {
    let serve = Serve::start("books", TOKEN, &["--oai-page-size", "5"]);
    submit(&serve, &records(1, 7, "config"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("configs/oai-mirror.toml")).unwrap();
    assert!(text.contains("127.0.0.1:8080"));
    // Run as from the repository root, whose out/ the example writes into.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let config = dir.path().join("oai-mirror.toml");
    std::fs::write(&config, text.replace("127.0.0.1:8080", &serve.addr)).unwrap();
    next_second();
    let run = |n: usize| {
        let out = common::run_in(Some(dir.path()), &["run", config.to_str().unwrap()], b"");
        assert_eq!(code(&out), 0, "run {n}: {}", stderr(&out));
        assert_eq!(
            records_of(&dir.path().join("out/oai-mirror.db")),
            records_of(&serve.db),
            "run {n}"
        );
    };
    run(1);
    submit(&serve, &deletions(&[2]));
    submit(&serve, &records(8, 1, "config"));
    run(2);
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("out/oai-mirror-report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["status"], "ok", "{report}");
}

/// `n` records numbered from `first`, dated now (`Update-Time`): the gatherer scope
/// `since` goes by the records' own dates.
fn dated_now(first: usize, n: usize, edition: &str) -> Vec<u8> {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let update = format!("Update-Time{{{}}}:\t{t}\n", t.len());
    replace(
        &records(first, n, edition),
        b"Last-Modification-Time{9}:\t774988159\n",
        update.as_bytes(),
    )
}

#[test]
fn with_state_an_rdm_catalog_mirror_takes_deletions_and_changes_since_the_last_run() {
    let serve = Serve::start("books", TOKEN, &[]);
    submit(&serve, &dated_now(1, 8, "first"));
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("mirror.db");
    let state = dir.path().join("catalog.state");
    let csid = serve.csid();
    let args = [
        csid.as_str(),
        "--state",
        state.to_str().unwrap(),
        "--to",
        "sqlite",
        "-o",
        mirror.to_str().unwrap(),
    ];
    let run = || {
        let out = convert(&args, b"");
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        summary(&out).records_in
    };
    // `since` is inclusive: records dated in the second run 1 starts would come again.
    next_second();
    assert_eq!(run(), 8);
    assert_eq!(records_of(&mirror), records_of(&serve.db));

    // Two new, one changed, two deleted: five items (two deletions, then three RDs).
    submit(&serve, &dated_now(9, 2, "first"));
    submit(&serve, &dated_now(3, 1, "second"));
    submit(&serve, &deletions(&[5, 6]));
    next_second();
    assert_eq!(run(), 5);
    assert_eq!(records_of(&mirror), records_of(&serve.db));
    assert!(!records_of(&mirror)["FILE"].contains_key("text:http://example.org/doc/5"));

    // Nothing changed: nothing taken.
    next_second();
    assert_eq!(run(), 0);
    assert_eq!(records_of(&mirror), records_of(&serve.db));
}
