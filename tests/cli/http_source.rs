//! `http(s)://` inputs, served by a small HTTP/1.1 server started in the test on
//! 127.0.0.1 (port chosen at run time). The body is sent in pieces with pauses between
//! them, so the input is read as a stream, never as one download.

use crate::common;
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

/// Serves each request once: `/documents.soif.gz` (gzip, Content-Length), `/chunked.soif`
/// (chunked transfer encoding), anything else 404.
fn serve(requests: usize) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        for _ in 0..requests {
            let (stream, _) = match listener.accept() {
                Ok(s) => s,
                Err(_) => return,
            };
            handle(stream);
        }
    });
    (base, handle)
}

fn handle(mut stream: TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_string();
    match path.as_str() {
        "/documents.soif.gz" => {
            let body = std::fs::read(fixture("pipeline/documents.soif.gz")).unwrap();
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .unwrap();
            for piece in body.chunks(100) {
                stream.write_all(piece).unwrap();
                stream.flush().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        "/chunked.soif" => {
            let body = rfc_documents();
            stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                )
                .unwrap();
            for piece in body.chunks(77) {
                write!(stream, "{:x}\r\n", piece.len()).unwrap();
                stream.write_all(piece).unwrap();
                stream.write_all(b"\r\n").unwrap();
                stream.flush().unwrap();
            }
            stream.write_all(b"0\r\n\r\n").unwrap();
        }
        "/broken-off.soif" => {
            // Promises the whole file, sends the first record and a half, hangs up.
            let body = rfc_documents();
            let first = body.windows(2).position(|w| w == b"}\n").unwrap() + 2;
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .unwrap();
            stream.write_all(&body[..first + 40]).unwrap();
            stream.flush().unwrap();
        }
        _ => {
            stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .unwrap();
        }
    }
}

#[test]
fn gzip_body_with_length_and_chunked_body() {
    let (base, server) = serve(2);
    let gz = format!("{base}/documents.soif.gz");
    let chunked = format!("{base}/chunked.soif");
    let out = run(&["convert", &gz, &chunked, "--to", "soif"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, [rfc_documents(), rfc_documents()].concat());
    assert_eq!(summary(&out).records_in, 6);
    server.join().unwrap();
}

#[test]
fn http_errors_name_the_url() {
    let (base, server) = serve(1);
    let url = format!("{base}/missing.soif");
    let out = run(&["convert", &url, "--to", "soif"], b"");
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(err.contains(&url) && err.contains("404"), "{err}");
    server.join().unwrap();
}

#[test]
fn a_url_can_feed_a_csv_first_pass() {
    // CSV needs its columns before the first row; a URL cannot be read twice, so it is
    // spooled to a temporary file (one request only).
    let (base, server) = serve(1);
    let url = format!("{base}/documents.soif.gz");
    let out = run(&["convert", &url, "--to", "csv"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let csv = stdout(&out);
    let header = csv.lines().next().unwrap();
    assert!(
        header.starts_with("template,url,Title,Content-Type,Content-Length"),
        "{header}"
    );
    assert_eq!(
        csv.lines().filter(|l| l.starts_with("DOCUMENT,")).count(),
        3,
        "{csv}"
    );
    server.join().unwrap();
}

#[test]
fn a_body_that_breaks_off_names_the_position_and_prints_the_summary() {
    let (base, server) = serve(1);
    let url = format!("{base}/broken-off.soif");
    let out = run(&["convert", &url, "--to", "jsonl"], b"");
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("soif: error: {url}: reading stopped after ")),
        "{err}"
    );
    assert!(err.contains(" bytes of SOIF and 1 record: "), "{err}");
    let c = summary(&out);
    assert_eq!((c.records_in, c.out), (1, 1), "{err}");
    assert_eq!(stdout(&out).lines().count(), 1);
    server.join().unwrap();
}
