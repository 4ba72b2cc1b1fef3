//! What the server refuses: submissions without the right token (nothing written),
//! malformed bodies and requests (an RDM status-response with RDM-Error-Message and a
//! fitting HTTP status, never a crash), bodies over the limit, bodies that break off.

use crate::common;

use common::*;
use soif_codecs::rdm::RdmType;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn count(server: &Server) -> usize {
    let r = get(server, "type=rd-request&ql=gatherer&scope=all").await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.objects().len()
}

fn assert_refusal(r: &Reply, status: u16, needle: &str) {
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(r.content_type(), "application/x-rdm");
    let h = r.header();
    assert_eq!(h.rdm_type, RdmType::StatusResponse);
    let m = h.error_message.expect("RDM-Error-Message");
    assert!(m.contains(needle), "{m:?} does not contain {needle:?}");
    assert!(r
        .text()
        .contains("<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">"));
}

/// Sends a POST of `content_type` (and `content_encoding`, and a bearer token, when
/// given): for the requests `post` does not make (other types and encodings, streams).
async fn post_as(
    server: &Server,
    token: Option<&str>,
    content_type: &str,
    content_encoding: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> reqwest::StatusCode {
    let mut req = reqwest::Client::new()
        .post(&server.endpoint)
        .header("content-type", content_type);
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    if let Some(encoding) = content_encoding {
        req = req.header("content-encoding", encoding);
    }
    req.body(body).send().await.unwrap().status()
}

/// The head of an authorised RDM submission announcing `len` body bytes, for tests that
/// write the body to the socket themselves.
fn submission_head(host: &str, len: usize) -> String {
    format!(
        "POST /rdm/incoming HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-rdm\r\n\
         Authorization: Bearer {TOKEN}\r\nContent-Length: {len}\r\n\r\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn submissions_need_the_token_and_nothing_is_written_without_it() {
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    let docs = fixture("rfc2655/documents.soif");
    for kind in ["rd-response", "rd-response-deleted"] {
        let body = message(&[("RDM-Type", kind)], &docs);
        let r = post(&server, body.clone(), None).await;
        assert_refusal(&r, 401, "Authorization: Bearer");
        assert!(r.headers.contains_key("www-authenticate"));
        let r = post(&server, body.clone(), Some("wrong")).await;
        assert_refusal(&r, 401, "wrong token");
        let r = post(&server, body.clone(), Some(&TOKEN[..TOKEN.len() - 1])).await;
        assert_refusal(&r, 401, "wrong token");
        let r = post(&server, body.clone(), Some(&format!("{TOKEN}x"))).await;
        assert_refusal(&r, 401, "wrong token");
        // Basic auth is not a bearer token.
        let resp = reqwest::Client::new()
            .post(&server.endpoint)
            .basic_auth("user", Some(TOKEN))
            .header("content-type", "application/x-rdm")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401);
    }
    assert_eq!(count(&server).await, 0);
    let r = get(&server, "type=rd-request-deleted&scope=all").await;
    assert!(r.objects().is_empty(), "no deletion was remembered");
    // Reads are open, and the right token works.
    let r = submit(&server, None, &docs).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(count(&server).await, 3);
    server.stop().await;

    // Without a configured token submissions are refused altogether.
    let server = Server::start(&["catalog"], None).await;
    let r = submit(&server, None, &docs).await;
    assert_refusal(&r, 403, "without --token");
    assert_eq!(count(&server).await, 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_bodies_get_status_responses() {
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    let docs = fixture("rfc2655/documents.soif");
    let status_request = message(&[("RDM-Type", "status-request")], b"");
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (Vec::new(), 400, "the body is empty"),
        (b"hello, world".to_vec(), 400, "request body"),
        (
            docs.clone(),
            400,
            "expected an @RDMHEADER object, found @DOCUMENT",
        ),
        (
            b"@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{99}:\tstatus-request\n}\n".to_vec(),
            400,
            "request body",
        ),
        (
            message(&[("RDM-Type", "rd-fetch")], b""),
            400,
            "invalid RDM-Type \"rd-fetch\"",
        ),
        (
            b"@RDMHEADER { -\nRDM-Type{14}:\tstatus-request\n}\n".to_vec(),
            400,
            "RDM-Version",
        ),
        (
            message(&[("RDM-Type", "status-request")], &docs),
            400,
            "empty body",
        ),
        (
            message(
                &[("RDM-Type", "rd-request")],
                b"@RDMQUERY { -\nScope{3}:\tall\n}\n@RDMQUERY { -\nScope{3}:\tall\n}\n",
            ),
            400,
            "at most one @RDMQUERY",
        ),
        (
            message(
                &[("RDM-Type", "rd-request")],
                b"@RDMQUERY { -\nView-Hits{4}:\tlots\n}\n",
            ),
            400,
            "View-Hits",
        ),
        (
            message(
                &[
                    ("RDM-Type", "rd-request"),
                    ("RDM-Query-Language", "gatherer"),
                ],
                b"@RDMQUERY { -\nScope{9}:\tyesterday\n}\n",
            ),
            400,
            "the gatherer query language accepts",
        ),
        (
            message(
                &[("RDM-Type", "rd-request"), ("RDM-Query-Language", "sql")],
                b"@RDMQUERY { -\nScope{3}:\tall\n}\n",
            ),
            501,
            "query language sql",
        ),
        (
            message(
                &[
                    ("RDM-Type", "rd-request-deleted"),
                    ("RDM-Query-Language", "sample-keyword-ql"),
                ],
                b"@RDMQUERY { -\nScope{3}:\tall\n}\n",
            ),
            501,
            "rd-request-deleted",
        ),
        (
            message(
                &[("RDM-Type", "status-request"), ("RDM-Version", "2.0")],
                b"",
            ),
            400,
            "RDM-Version is given more than once",
        ),
        (
            b"@RDMHEADER { -\nRDM-Version{3}:\t2.0\nRDM-Type{11}:\trd-response\n}\n".to_vec(),
            501,
            "RDM-Version 2.0",
        ),
        (
            b"@RDMHEADER { -\nRDM-Version{3}:\t2.0\nRDM-Type{14}:\tstatus-request\n}\n".to_vec(),
            501,
            "RDM-Version 2.0",
        ),
        (
            message(&[("RDM-Type", "server-description-response")], b""),
            501,
            "does not accept server-description-response",
        ),
        (
            message(
                &[
                    ("RDM-Type", "status-request"),
                    ("Catalog-Service-ID", "http://x/"),
                ],
                b"",
            ),
            400,
            "Catalog-Service-ID",
        ),
        (
            message(
                &[("RDM-Type", "rd-response")],
                b"@FILE { -\nTitle{1}:\tx\n}\n",
            ),
            400,
            "RD 1 (-)",
        ),
        (
            message(
                &[("RDM-Type", "rd-response")],
                b"@FILE { http://a/\nTitle{9}:\tx\n}\n",
            ),
            400,
            "request body",
        ),
    ];
    for (body, status, needle) in cases {
        let shown = String::from_utf8_lossy(&body).into_owned();
        let r = post(&server, body, Some(TOKEN)).await;
        assert_eq!(r.status, status, "{shown:?}: {}", r.text());
        assert_refusal(&r, status, needle);
    }
    // A bad RD late in a submission: nothing of it is written.
    let mut body = docs.clone();
    body.extend_from_slice(b"@FILE { http://late/\nTitle{99}:\ttoo short\n}\n");
    let r = post(
        &server,
        message(&[("RDM-Type", "rd-response")], &body),
        Some(TOKEN),
    )
    .await;
    assert_refusal(&r, 400, "record 5 (http://late/)");
    assert_eq!(count(&server).await, 0);
    // Wrong content type and encodings.
    let status = post_as(&server, None, "text/plain", None, status_request.clone()).await;
    assert_eq!(status, 400);
    let status = post_as(
        &server,
        None,
        "application/x-rdm",
        Some("br"),
        status_request.clone(),
    )
    .await;
    assert_eq!(status, 501);
    // "Content-encoding: optional": gzip is inflated as it arrives; a body that is not gzip
    // is refused as such.
    let mut gz = async_compression::tokio::write::GzipEncoder::new(Vec::new());
    gz.write_all(&status_request).await.unwrap();
    gz.shutdown().await.unwrap();
    let status = post_as(
        &server,
        None,
        "application/x-rdm",
        Some("gzip"),
        gz.into_inner(),
    )
    .await;
    assert_eq!(status, 200);
    let status = post_as(
        &server,
        None,
        "application/x-rdm",
        Some("gzip"),
        status_request.clone(),
    )
    .await;
    assert_eq!(status, 400);
    // The form encoding of a POST works like GET.
    let status = post_as(
        &server,
        None,
        "application/x-www-form-urlencoded",
        None,
        "type=status-request",
    )
    .await;
    assert_eq!(status, 200);
    // Bad GETs.
    for (query, status, needle) in [
        ("", 400, "RDM-Type"),
        ("type=rd-response", 400, "not a request"),
        ("type=status-request&scope=all", 400, "takes no scope"),
        ("type=rd-request&ql=sample-keyword-ql", 400, "needs a Scope"),
        (
            "type=rd-request&ql=sample-keyword-ql&scope=+++",
            400,
            "needs a Scope",
        ),
        ("type=rd-request&bogus=1", 400, "bogus"),
        ("type=rd-request&view-order=%2B", 400, "View-Order"),
        (
            "type=taxonomy-description-request&scope=sideways+ROOT",
            400,
            "taxonomy-basic",
        ),
        (
            "type=schema-description-request&scope=defined+Nonsense",
            400,
            "Nonsense",
        ),
        ("type=rd-request&scope=%FF%FE", 400, "Scope"),
    ] {
        let r = get(&server, query).await;
        assert_refusal(&r, status, needle);
    }
    let resp = reqwest::get(&server.endpoint).await.unwrap();
    assert_eq!(resp.status(), 400);
    // Still serving.
    let r = get(&server, "type=status-request").await;
    assert_eq!(r.status, 200);
    assert!(r.text().contains("failed)"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_over_the_limit_are_refused_while_streaming() {
    let server = Server::start_with(&["catalog"], Some(TOKEN), |c| {
        c.max_body = 4096;
        c.max_record_size = 1024;
    })
    .await;
    // A declared Content-Length over the limit.
    let big = message(&[("RDM-Type", "rd-response")], &vec![b' '; 5000]);
    let r = post(&server, big, Some(TOKEN)).await;
    assert_refusal(&r, 413, "larger than 4096 bytes");
    // A chunked body (no length) that grows past the limit.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        std::iter::once(Ok(message(&[("RDM-Type", "rd-response")], b"")))
            .chain((0..300).map(|i| {
                let mut rd = Vec::new();
                soif_codecs::soif::encode_record(
                    &soif_codecs::Record::new("FILE", format!("http://x/{i}")).with("Title", "t"),
                    &mut rd,
                );
                Ok(rd)
            }))
            .collect();
    let status = post_as(
        &server,
        Some(TOKEN),
        "application/x-rdm",
        None,
        reqwest::Body::wrap_stream(futures::stream::iter(chunks)),
    )
    .await;
    assert_eq!(status, 413);
    // A small gzip body that inflates past the limit.
    let mut gz = async_compression::tokio::write::GzipEncoder::new(Vec::new());
    gz.write_all(&message(
        &[("RDM-Type", "rd-response")],
        &vec![b' '; 100_000],
    ))
    .await
    .unwrap();
    gz.shutdown().await.unwrap();
    let zipped = gz.into_inner();
    assert!(zipped.len() < 4096);
    let status = post_as(
        &server,
        Some(TOKEN),
        "application/x-rdm",
        Some("gzip"),
        zipped,
    )
    .await;
    assert_eq!(status, 413);
    // One object over --max-record-size.
    let mut rd = b"@FILE { http://x/\nTitle{2000}:\t".to_vec();
    rd.extend(std::iter::repeat_n(b'a', 2000));
    rd.extend_from_slice(b"\n}\n");
    let r = post(
        &server,
        message(&[("RDM-Type", "rd-response")], &rd),
        Some(TOKEN),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(count(&server).await, 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_submission_that_breaks_off_writes_nothing() {
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    let body = message(
        &[("RDM-Type", "rd-response")],
        &fixture("rfc2655/documents.soif"),
    );
    // Announce the whole body, send half of it, and hang up.
    let mut stream = tokio::net::TcpStream::connect(&server.host).await.unwrap();
    let head = submission_head(&server.host, body.len());
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body[..body.len() / 2]).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply).await;
    drop(stream);
    assert_eq!(count(&server).await, 0);
    // A client that stops sending mid-body is timed out; nothing is written, and the
    // catalog's write lock is free again for the next submission.
    let server2 = Server::start_with(&["catalog"], Some(TOKEN), |c| {
        c.body_idle_timeout = std::time::Duration::from_millis(200);
    })
    .await;
    let mut stalled = tokio::net::TcpStream::connect(&server2.host).await.unwrap();
    let head = submission_head(&server2.host, body.len());
    stalled.write_all(head.as_bytes()).await.unwrap();
    stalled.write_all(&body[..body.len() / 2]).await.unwrap();
    let mut reply = vec![0u8; 4096];
    let n = stalled.read(&mut reply).await.unwrap();
    let reply = String::from_utf8_lossy(&reply[..n]).into_owned();
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    assert!(reply.contains("no data for"), "{reply}");
    assert_eq!(count(&server2).await, 0);
    let r = submit(&server2, None, &fixture("rfc2655/documents.soif")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    drop(stalled);
    server2.stop().await;
    // Garbage on the wire does not bring the server down either.
    let mut stream = tokio::net::TcpStream::connect(&server.host).await.unwrap();
    stream.write_all(b"\x00\x01GARBAGE\r\n\r\n").await.unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply).await;
    let r = get(&server, "type=status-request").await;
    assert_eq!(r.status, 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn clients_that_stop_reading_do_not_starve_the_catalog() {
    let server = Server::start_with(&["catalog"], Some(TOKEN), |c| {
        c.body_idle_timeout = std::time::Duration::from_millis(300);
        // All from one address: the per-client bound (hostile.rs) is not the point
        // here, the cut-off is.
        c.max_reads_per_client = 64;
        c.read_wait = std::time::Duration::from_secs(10);
    })
    .await;
    // About 24 MB of RDs: far more than socket buffers hold.
    let filler = "x".repeat(4000);
    let mut body = Vec::new();
    for i in 0..6000 {
        soif_codecs::soif::encode_record(
            &soif_codecs::Record::new("FILE", format!("http://x/{i}"))
                .with("Title", filler.as_str()),
            &mut body,
        );
    }
    let r = submit(&server, None, &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    // More stalled readers than the catalog has read connections.
    let mut stalled = Vec::new();
    for _ in 0..soif_server::catalog::READERS + 4 {
        let mut s = tokio::net::TcpStream::connect(&server.host).await.unwrap();
        let req = format!(
            "GET /rdm/incoming?type=rd-request&scope=all HTTP/1.1\r\nHost: {}\r\n\r\n",
            server.host
        );
        s.write_all(req.as_bytes()).await.unwrap();
        stalled.push(s);
    }
    // They are cut off; everyone else is served.
    let r = get(&server, "type=rd-request&scope=all&view-hits=3").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.objects().len(), 3);
    let r = get(&server, "type=rd-request&scope=all").await;
    assert_eq!(r.objects().len(), 6000);
    drop(stalled);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_submission_does_not_hold_up_others() {
    // The stalled client would keep the catalog's write lock for an hour if submissions
    // wrote while their body arrives; they are spooled first instead.
    let server = Server::start_with(&["catalog"], Some(TOKEN), |c| {
        c.body_idle_timeout = std::time::Duration::from_secs(3600);
    })
    .await;
    let body = message(
        &[("RDM-Type", "rd-response")],
        &fixture("rfc2655/documents.soif"),
    );
    let mut slow = tokio::net::TcpStream::connect(&server.host).await.unwrap();
    let head = submission_head(&server.host, body.len());
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&body[..body.len() - 10]).await.unwrap();
    // Another submission and a loader-style write go through meanwhile.
    let r = submit(&server, None, b"@FILE { http://other/\nTitle{1}:\tx\n}\n").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(count(&server).await, 1);
    // The slow one completes: now its RDs are there too.
    slow.write_all(&body[body.len() - 10..]).await.unwrap();
    let mut reply = vec![0u8; 4096];
    let n = slow.read(&mut reply).await.unwrap();
    assert!(String::from_utf8_lossy(&reply[..n]).starts_with("HTTP/1.1 200"));
    assert_eq!(count(&server).await, 4);
    drop(slow);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mangled_messages_always_get_an_rdm_reply() {
    // Valid messages of every kind, cut and corrupted at pseudo-random places: each gets a
    // well-formed RDM reply (never a dropped connection, which is what a panic would give).
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    let docs = fixture("rfc2655/documents.soif");
    let seeds: Vec<Vec<u8>> = vec![
        message(&[("RDM-Type", "rd-response")], &docs),
        message(&[("RDM-Type", "rd-response-deleted")], &docs),
        message(
            &[
                ("RDM-Type", "rd-request"),
                ("RDM-Query-Language", "gatherer"),
            ],
            &fixture("rdm/view-score.soif"),
        ),
        fixture("rdm/schema-basic-view.soif"),
        fixture("rdm/taxonomy-basic-descendant.soif"),
        message(&[("RDM-Type", "server-description-request")], b""),
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n.max(1) as u64) as usize
    };
    for round in 0..240 {
        let mut body = seeds[round % seeds.len()].clone();
        match rand(4) {
            0 => body.truncate(rand(body.len())),
            1 => {
                for _ in 0..1 + rand(4) {
                    let i = rand(body.len());
                    body[i] = rand(256) as u8;
                }
            }
            2 => {
                let i = rand(body.len());
                let junk: Vec<u8> = (0..1 + rand(40)).map(|_| rand(256) as u8).collect();
                body.splice(i..i, junk);
            }
            _ => {
                let i = rand(body.len());
                let j = i + rand(body.len() - i);
                body.drain(i..j);
            }
        }
        let r = post(&server, body.clone(), Some(TOKEN)).await;
        assert_eq!(r.content_type(), "application/x-rdm", "{body:?}");
        let h = r.header();
        if r.status == 200 {
            let m = h.error_message;
            assert!(m.is_none() || m.as_deref() == Some("0 results"), "{m:?}");
        } else {
            assert!(h.error_message.is_some(), "{body:?}");
        }
    }
    let r = get(&server, "type=status-request").await;
    assert_eq!(r.status, 200);
    server.stop().await;
}

/// Writes `head` and `body` whole before reading anything, as Python's `urllib` and
/// `requests` do, then reads the reply to its end: an early refusal must still reach such
/// a client (the server lingers before closing) instead of a broken pipe.
fn send_all_then_read(host: &str, head: &str, body: &[u8]) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(host)?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))?;
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut reply = Vec::new();
    s.read_to_end(&mut reply)?;
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

/// An RDM submission body of about `len` bytes: its header, then one large RD.
fn large_submission(len: usize) -> Vec<u8> {
    let value = "x".repeat(len);
    let rd = format!(
        "@DOCUMENT {{ http://example.org/big\nBody{{{}}}:\t{value}\n}}\n",
        value.len()
    );
    message(&[("RDM-Type", "rd-response")], rd.as_bytes())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_early_refusal_reaches_a_client_that_sends_its_whole_body_first() {
    // Bodies larger than what the two sockets' buffers hold, so that the server must
    // read what follows its reply for the client to get to reading it.
    let size = 6 << 20;
    type Setup = fn(&mut soif_server::config::ServerConfig);
    let no_change: Setup = |_| {};
    let open_body: Setup = |c| c.max_open_body = 64 << 20;
    let small_body: Setup = |c| c.max_body = 64 << 10;
    let cases: [(&str, Setup, Option<&str>, &str, &str); 3] = [
        // A wrong token: refused on the request head, the body unread.
        (
            "wrong token",
            no_change,
            Some("not-the-token"),
            "HTTP/1.1 401 Unauthorized\r\n",
            "RDM-Error-Message{11}:\twrong token",
        ),
        // No token, and a body within --max-open-body: refused once its @RDMHEADER is read.
        (
            "no token",
            open_body,
            None,
            "HTTP/1.1 401 Unauthorized\r\n",
            "submissions need an Authorization: Bearer <token> header",
        ),
        // Over --max-body, told by Content-Length: refused before any of the body is read.
        (
            "over --max-body",
            small_body,
            Some(TOKEN),
            "HTTP/1.1 413 Payload Too Large\r\n",
            "the request body is larger than 65536 bytes",
        ),
    ];
    for (case, setup, token, status, message) in cases {
        let server = Server::start_with(&["books"], Some(TOKEN), setup).await;
        let host = server.host.clone();
        let body = large_submission(size);
        let authorization = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "POST /rdm/incoming HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-rdm\r\n\
             {authorization}Content-Length: {}\r\n\r\n",
            body.len()
        );
        let reply = tokio::task::spawn_blocking(move || send_all_then_read(&host, &head, &body))
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{case}: the client reads the refusal, not {e}"));
        assert!(reply.starts_with(status), "{case}: {reply:.300}");
        assert!(reply.contains(message), "{case}: {reply:.600}");
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_never_stops_sending_is_cut_off() {
    // The linger after an early refusal is bounded in bytes and time: a client that
    // sends without end is disconnected, not read for ever.
    let server = Server::start_with(&["books"], Some(TOKEN), |c| c.max_body = 64 << 10).await;
    let host = server.host.clone();
    let (sent, took) = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut s = std::net::TcpStream::connect(&host).unwrap();
        s.write_all(submission_head(&host, 1 << 40).as_bytes())
            .unwrap();
        let chunk = vec![b'x'; 64 << 10];
        let started = std::time::Instant::now();
        let mut sent = 0u64;
        while started.elapsed() < std::time::Duration::from_secs(60) {
            match s.write(&chunk) {
                Ok(n) => sent += n as u64,
                Err(_) => break,
            }
        }
        (sent, started.elapsed())
    })
    .await
    .unwrap();
    assert!(
        took < std::time::Duration::from_secs(20),
        "still sending after {took:?}"
    );
    // What the server drained (at most its linger bound) plus what the two sockets'
    // buffers held.
    assert!(sent < 64 << 20, "{sent} bytes were accepted");
    server.stop().await;
}
