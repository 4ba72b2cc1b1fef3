//! Hostile and careless clients: what each costs the server, and the limits
//! that bound it. Every server listens on 127.0.0.1 on a port chosen at run time; some
//! clients connect from other loopback addresses (127.0.0.2…) to be other clients.

use crate::common;

use common::*;
use soif_codecs::rdm::RdmType;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn assert_refusal(r: &Reply, status: u16, needle: &str) {
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(r.content_type(), "application/x-rdm");
    let h = r.header();
    assert_eq!(h.rdm_type, RdmType::StatusResponse);
    let m = h.error_message.expect("RDM-Error-Message");
    assert!(m.contains(needle), "{m:?} does not contain {needle:?}");
}

/// Reads an HTTP/1.1 reply head and what follows of its body, until `deadline`.
async fn read_reply(s: &mut TcpStream, within: Duration) -> String {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 16 << 10];
    let end = Instant::now() + within;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Err(_) | Ok(Err(_)) => break,
            Ok(Ok(n)) => {
                out.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&out);
                if text.contains("RDM-Error-Message") && text.contains("</HTML>") {
                    break;
                }
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A connection from another loopback address (another client, as far as the server
/// can tell).
async fn connect_from(ip: [u8; 4], host: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(std::net::SocketAddr::from((ip, 0)))
        .expect("binding a loopback address");
    socket.connect(host.parse().unwrap()).await.unwrap()
}

/// About 24 MB of RDs (more than socket buffers hold), submitted.
async fn fill(server: &Server, n: usize) {
    let filler = "x".repeat(4000);
    let mut body = Vec::new();
    for i in 0..n {
        soif_codecs::soif::encode_record(
            &soif_codecs::Record::new("FILE", format!("http://x/{i}"))
                .with("Title", format!("word{} {filler}", i % 7).as_str()),
            &mut body,
        );
    }
    let r = submit(server, None, &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

fn rd_response_head() -> Vec<u8> {
    message(&[("RDM-Type", "rd-response")], b"")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_submission_without_the_token_is_refused_on_its_header() {
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    // Chunked, announcing nothing of its size: the server must answer after the
    // @RDMHEADER and one partial RD, while the client still holds the rest back.
    for auth in ["", "Authorization: Bearer wrong\r\n"] {
        let mut s = TcpStream::connect(&server.host).await.unwrap();
        let head = format!(
            "POST /rdm/incoming HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-rdm\r\n\
             {auth}Transfer-Encoding: chunked\r\n\r\n",
            server.host
        );
        s.write_all(head.as_bytes()).await.unwrap();
        let mut first = rd_response_head();
        first.extend_from_slice(b"@FILE { http://x/1\nTitle{100000000}:\t");
        first.extend_from_slice(&vec![b'a'; 4096]);
        s.write_all(format!("{:x}\r\n", first.len()).as_bytes())
            .await
            .unwrap();
        s.write_all(&first).await.unwrap();
        s.write_all(b"\r\n").await.unwrap();
        let reply = read_reply(&mut s, Duration::from_secs(5)).await;
        assert!(reply.starts_with("HTTP/1.1 401"), "{auth:?}: {reply}");
        assert!(reply.contains("RDM-Error-Message"), "{reply}");
        assert!(
            reply
                .to_ascii_lowercase()
                .contains("www-authenticate: bearer"),
            "{reply}"
        );
    }
    // A wrong token with a large Content-Length: refused on the HTTP header alone.
    let mut s = TcpStream::connect(&server.host).await.unwrap();
    let head = format!(
        "POST /rdm/incoming HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-rdm\r\n\
         Authorization: Bearer wrong\r\nContent-Length: 100000000\r\n\r\n",
        server.host
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let reply = read_reply(&mut s, Duration::from_secs(5)).await;
    assert!(reply.starts_with("HTTP/1.1 401"), "{reply}");
    assert!(reply.contains("wrong token"), "{reply}");
    // No token and a large Content-Length: 413 at once (only small queries are open).
    let mut s = TcpStream::connect(&server.host).await.unwrap();
    let head = format!(
        "POST /rdm/incoming HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-rdm\r\n\
         Content-Length: 100000000\r\n\r\n",
        server.host
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let reply = read_reply(&mut s, Duration::from_secs(5)).await;
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    // Nothing was written.
    let r = get(&server, "type=rd-request&scope=all").await;
    assert_eq!(r.header().error_message.as_deref(), Some("0 results"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_query_body_is_small_and_its_header_first() {
    let server = Server::start_with(&["catalog"], Some(TOKEN), |c| {
        c.max_open_body = 16 << 10;
    })
    .await;
    // A query without a token, over --max-open-body: 413 (streamed, no Content-Length).
    let mut body = message(
        &[
            ("RDM-Type", "rd-request"),
            ("RDM-Query-Language", "gatherer"),
        ],
        b"",
    );
    body.extend_from_slice(b"@RDMQUERY { -\nScope{3}:\tall\n");
    for i in 0..3000 {
        body.extend_from_slice(format!("X-{i}{{5}}:\tfill\n").as_bytes());
    }
    body.extend_from_slice(b"}\n");
    assert!(body.len() > 32 << 10 && body.len() < 60 << 10);
    let stream = futures::stream::iter(
        body.chunks(8192)
            .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
            .collect::<Vec<_>>(),
    );
    let resp = reqwest::Client::new()
        .post(&server.endpoint)
        .header("content-type", "application/x-rdm")
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    server.stop().await;
    // An @RDMHEADER over 64 KiB without a token: refused (the body is under 1 MiB).
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    let big = "h".repeat(70 << 10);
    let r = post(
        &server,
        message(&[("RDM-Type", "rd-request"), ("X-Pad", big.as_str())], b""),
        None,
    )
    .await;
    assert_refusal(&r, 400, "");
    // With the token both limits are the authenticated ones.
    let r = post(
        &server,
        message(
            &[("RDM-Type", "status-request"), ("X-Pad", big.as_str())],
            b"",
        ),
        Some(TOKEN),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // Small open queries are fine.
    let r = post(
        &server,
        message(&[("RDM-Type", "status-request")], b""),
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bearer_scheme_is_case_insensitive() {
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    for (i, scheme) in ["BEARER", "bearer", "BeArEr", "Bearer "].iter().enumerate() {
        let body = message(
            &[("RDM-Type", "rd-response")],
            format!("@FILE {{ http://x/{i}\nTitle{{1}}:\tt\n}}\n").as_bytes(),
        );
        let resp = reqwest::Client::new()
            .post(&server.endpoint)
            .header("content-type", "application/x-rdm")
            .header("authorization", format!("{scheme} {TOKEN}"))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(
            resp.status(),
            200,
            "{scheme}: {}",
            resp.text().await.unwrap()
        );
    }
    let r = get(&server, "type=rd-request&scope=all").await;
    assert_eq!(r.objects().len(), 4);
    // Another scheme is not a bearer token.
    let resp = reqwest::Client::new()
        .post(&server.endpoint)
        .header("content-type", "application/x-rdm")
        .header("authorization", format!("Basic {TOKEN}"))
        .body(message(&[("RDM-Type", "rd-response")], b""))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn query_shapes_have_limits() {
    let server = Server::start_with(&["catalog"], Some(TOKEN), |c| {
        c.max_sorted_rows = 50;
        c.max_keyword_hits = 20;
    })
    .await;
    fill(&server, 100).await;
    // Terms per keyword query.
    let words = vec!["a"; 33].join("+OR+");
    let r = get(
        &server,
        &format!("type=rd-request&ql=sample-keyword-ql&scope={words}"),
    )
    .await;
    assert_refusal(&r, 400, "more than 32 words");
    let words = vec!["word1"; 16].join("+OR+");
    let r = get(
        &server,
        &format!("type=rd-request&ql=sample-keyword-ql&scope={words}"),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // Keys per View-Order.
    let r = get(&server, "type=rd-request&scope=all&view-order=a,b,c,d,e").await;
    assert_refusal(&r, 400, "more than 4 keys");
    // Rows a View-Order sorts: 100 > 50, refused before any RD.
    let r = get(&server, "type=rd-request&scope=all&view-order=-Title").await;
    assert_refusal(&r, 400, "more than 50 RDs");
    let r = get(
        &server,
        "type=rd-request&scope=all&view-order=-Title&view-hits=3",
    )
    .await;
    assert_refusal(&r, 400, "more than 50 RDs");
    // Keyword hits: the best 20 of the 100.
    let r = get(&server, "type=rd-request&ql=sample-keyword-ql&scope=xxxx").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let words = "word1+OR+word2+OR+word3+OR+word4+OR+word5+OR+word6+OR+word0";
    let r = get(
        &server,
        &format!("type=rd-request&ql=sample-keyword-ql&scope={words}"),
    )
    .await;
    assert_eq!(r.objects().len(), 20);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stalled_readers_neither_delay_status_nor_hold_every_connection() {
    let server = Server::start_with(&["catalog"], Some(TOKEN), |c| {
        // Stalled readers hold their connections for a minute: the bounds below are far
        // under that, and far over what a loaded CI machine needs, so they tell "did not
        // wait for the stalled readers" apart without timing anything finely (the
        // figures are measured by server/scripts/adversarial.sh, docs/performance.md).
        c.body_idle_timeout = Duration::from_secs(60);
        c.read_wait = Duration::from_millis(500);
    })
    .await;
    fill(&server, 6000).await;
    // Whole-catalog readers that never read: 8 from each of 4 other addresses (32, twice
    // the catalog's read connections); once they are in, 4 more from one of them.
    let request = format!(
        "GET /rdm/incoming?type=rd-request&scope=all HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.host
    );
    let mut stalled = Vec::new();
    for client in 2..6u8 {
        for _ in 0..8 {
            let mut s = connect_from([127, 0, 0, client], &server.host).await;
            s.write_all(request.as_bytes()).await.unwrap();
            stalled.push(s);
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut refused = Vec::new();
    for _ in 0..4 {
        let mut s = connect_from([127, 0, 0, 2], &server.host).await;
        s.write_all(request.as_bytes()).await.unwrap();
        refused.push(s);
    }
    // More than --max-reads-per-client from one address: 429 at once.
    for s in &mut refused {
        let reply = read_reply(s, Duration::from_secs(15)).await;
        assert!(reply.starts_with("HTTP/1.1 429"), "{reply}");
        assert!(reply.contains("RDM-Error-Message"), "{reply}");
    }
    // Descriptions read through the read connections too: counted like reads.
    let mut s = connect_from([127, 0, 0, 2], &server.host).await;
    let req = format!(
        "GET /rdm/incoming?type=server-description-request HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.host
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let reply = read_reply(&mut s, Duration::from_secs(15)).await;
    assert!(reply.starts_with("HTTP/1.1 429"), "{reply}");
    // A status request does not wait for the read connections.
    for _ in 0..5 {
        let t = Instant::now();
        let r = get(&server, "type=status-request").await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "status took {:?}",
            t.elapsed()
        );
    }
    // A read while every read connection is held: 503 after --read-wait, not a hang.
    let t = Instant::now();
    let r = get(&server, "type=rd-request&scope=all&view-hits=1").await;
    assert_refusal(&r, 503, "busy");
    assert!(t.elapsed() < Duration::from_secs(20));
    // Once they are gone, reads are served again.
    drop(stalled);
    let mut served = false;
    for _ in 0..50 {
        let r = get(&server, "type=rd-request&scope=all&view-hits=2").await;
        if r.status == 200 {
            assert_eq!(r.objects().len(), 2);
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_headers_and_idle_connections_are_closed() {
    let server = Server::start_with(&["catalog"], Some(TOKEN), |c| {
        c.header_timeout = Duration::from_millis(500);
    })
    .await;
    // Slowloris: a header line now and then, never the end of the head.
    let mut slow = TcpStream::connect(&server.host).await.unwrap();
    let t = Instant::now();
    slow.write_all(b"GET /rdm/incoming?type=status-request HTTP/1.1\r\n")
        .await
        .unwrap();
    let mut closed = false;
    // Bounds generous for a loaded CI machine: without the timeout these connections
    // would stay open for good, so any bound tells the two apart.
    for i in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if slow
            .write_all(format!("X-Slow-{i}: a\r\n").as_bytes())
            .await
            .is_err()
        {
            closed = true;
            break;
        }
        let mut b = [0u8; 256];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(1), slow.read(&mut b)).await {
            // Closed (0), or hyper's 408 before closing.
            let _ = n;
            closed = true;
            break;
        }
    }
    assert!(closed, "a slow head was not cut off");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // Idle keep-alive: one request, then nothing: closed after the timeout.
    let mut idle = TcpStream::connect(&server.host).await.unwrap();
    let req = format!(
        "GET /rdm/incoming?type=status-request HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.host
    );
    idle.write_all(req.as_bytes()).await.unwrap();
    let t = Instant::now();
    let mut all = Vec::new();
    let mut b = vec![0u8; 64 << 10];
    loop {
        match tokio::time::timeout(Duration::from_secs(15), idle.read(&mut b)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => all.extend_from_slice(&b[..n]),
            Err(_) => panic!("an idle connection was kept open"),
        }
    }
    assert!(String::from_utf8_lossy(&all).starts_with("HTTP/1.1 200"));
    assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_per_client_are_bounded() {
    let server = Server::start_with(&["catalog"], None, |c| {
        c.max_connections_per_client = 4;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(connect_from([127, 0, 0, 7], &server.host).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The fifth from that address is closed at once; another address is served.
    let mut fifth = connect_from([127, 0, 0, 7], &server.host).await;
    let mut b = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(2), fifth.read(&mut b))
        .await
        .expect("closed at once")
        .unwrap_or(0);
    assert_eq!(n, 0);
    let r = get(&server, "type=status-request").await;
    assert_eq!(r.status, 200);
    drop(held);
    server.stop().await;
}

#[test]
fn the_open_file_limit_is_raised_to_the_hard_limit() {
    let n = soif_server::connection::raise_open_file_limit().unwrap();
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct passed.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    assert_eq!(lim.rlim_cur, lim.rlim_max);
    assert_eq!(n, lim.rlim_cur);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_catalog_is_served_and_refuses_submissions() {
    // Written first, then served with --read-only.
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    fill(&server, 10).await;
    let db = server.dir.path().join("catalog.db");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("catalog.db");
    // VACUUM INTO: a self-contained copy (no -wal), as a read-only medium would hold.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("VACUUM INTO ?1", [copy.to_string_lossy().as_ref()])
        .unwrap();
    drop(conn);
    server.stop().await;
    let ro = Server::start_with(&["catalog"], Some(TOKEN), |c| {
        c.catalogs = vec![("catalog".into(), copy.clone())];
        c.read_only = true;
    })
    .await;
    let r = get(&ro, "type=rd-request&scope=all").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.objects().len(), 10);
    let r = get(&ro, "type=rd-request&ql=sample-keyword-ql&scope=word1").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = get(&ro, "type=status-request").await;
    assert_eq!(r.status, 200);
    let r = submit(&ro, None, b"@FILE { http://y/\nTitle{1}:\tt\n}\n").await;
    assert_refusal(&r, 403, "read-only");
    ro.stop().await;
    // A file (and directory) that cannot be written is served read-only by itself. Root
    // writes whatever the permissions say, so this part needs another user.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o444)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
        let ro = Server::start_with(&["catalog"], Some(TOKEN), |c| {
            c.catalogs = vec![("catalog".into(), copy.clone())];
        })
        .await;
        let r = get(&ro, "type=rd-request&scope=all").await;
        assert_eq!(r.objects().len(), 10);
        let r = submit(&ro, None, b"@FILE { http://y/\nTitle{1}:\tt\n}\n").await;
        assert_refusal(&r, 403, "read-only");
        ro.stop().await;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn request_decoding_runs_without_a_network() {
    use soif_server::rdm::decode_request;
    use soif_server::RequestError;
    // GET / form: a keyword read with its view.
    let q = decode_request(b"\x00type=rd-request&ql=sample-keyword-ql&scope=a+OR+b&view-hits=3")
        .unwrap()
        .expect("a read");
    assert!(matches!(q.scope, soif_server::catalog::Scope::Keywords(_)));
    let words = vec!["w"; 40].join("+");
    let e = decode_request(
        format!("\x01type=rd-request&ql=sample-keyword-ql&scope={words}").as_bytes(),
    );
    assert!(matches!(e, Err(RequestError::OverLimit(_))));
    // An x-rdm submission: refused after its header without the token (the RD is cut
    // short, and never read), read to its end with it, plain or gzip'd, in any pieces.
    let mut cut = vec![2u8];
    cut.extend(message(
        &[("RDM-Type", "rd-response")],
        b"@FILE { http://x/\nT{999}:\t",
    ));
    assert!(matches!(
        decode_request(&cut),
        Err(RequestError::Unauthorized(_))
    ));
    let body = message(
        &[("RDM-Type", "rd-response")],
        b"@FILE { http://x/\nTitle{1}:\tt\n}\n",
    );
    for flags in [2u8 | 4, 3 | 4 | 8, 2 | 4 | 0xf0, 2 | 4 | 8 | 0x10] {
        let mut input = vec![flags];
        input.extend_from_slice(&body);
        assert!(
            decode_request(&input).unwrap().is_none(),
            "flags {flags:#x}"
        );
    }
    assert!(decode_request(b"").is_err());
    assert!(decode_request(b"\x02").is_err());
}
