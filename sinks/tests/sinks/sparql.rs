//! The `sparql` sink's sending, against a stub endpoint (a loopback HTTP/1.1 server that
//! answers each request only when the test lets it): a batch is filled while the one
//! before is in flight, one request at a time, in the records' order, and a record counts
//! as stored only once its batch is answered. tests/python/test_sparql.py runs the sink
//! against a real store.

use soif_codecs::Record;
use soif_pipeline::Sink;
use soif_sinks::sparql::SparqlSink;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A stub endpoint: each request is recorded (`path`, body), then answered with the
/// status the test sends on `answers` (one per request, in order; `Connection: close`).
struct Stub {
    url: String,
    requests: Arc<Mutex<Vec<(String, String)>>>,
    /// The most requests ever open at once.
    most_open: Arc<AtomicUsize>,
    answers: mpsc::Sender<u16>,
}

impl Stub {
    fn start() -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let most_open = Arc::new(AtomicUsize::new(0));
        let open = Arc::new(AtomicUsize::new(0));
        let (tx, answers) = mpsc::channel::<u16>();
        let answers = Arc::new(Mutex::new(answers));
        let (seen, most) = (requests.clone(), most_open.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let (seen, most, open, answers) =
                    (seen.clone(), most.clone(), open.clone(), answers.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    let path = line.split(' ').nth(1).unwrap_or_default().to_string();
                    let mut length = 0;
                    loop {
                        line.clear();
                        reader.read_line(&mut line).unwrap();
                        if line.trim().is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':') {
                            if name.eq_ignore_ascii_case("content-length") {
                                length = value.trim().parse().unwrap();
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let now = open.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    seen.lock()
                        .unwrap()
                        .push((path, String::from_utf8(body).unwrap()));
                    // Unanswered for long (a sink waiting for this reply before it goes on): refused.
                    let status = answers
                        .lock()
                        .unwrap()
                        .recv_timeout(Duration::from_secs(20))
                        .unwrap_or(401);
                    open.fetch_sub(1, Ordering::SeqCst);
                    let mut conn = conn;
                    let _ = write!(
                        conn,
                        "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    );
                });
            }
        });
        Stub {
            url,
            requests,
            most_open,
            answers: tx,
        }
    }

    /// Waits until the stub has received `n` requests.
    fn received(&self, n: usize) -> Vec<(String, String)> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let seen = self.requests.lock().unwrap().clone();
            if seen.len() >= n {
                return seen;
            }
            assert!(Instant::now() < deadline, "only {} requests", seen.len());
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn record(n: u32) -> Record {
    Record::new("FILE", format!("http://h/{n}")).with("Title", format!("T{n}").as_str())
}

#[test]
fn the_next_batch_is_filled_while_one_is_in_flight() {
    let stub = Stub::start();
    let mut sink = SparqlSink::new(&format!("{}/update", stub.url), None, 2).unwrap();
    sink.write(&record(1)).unwrap();
    sink.write(&record(2)).unwrap();
    // The first batch is sent, and not answered yet: the sink goes on with the next.
    let seen = stub.received(1);
    assert!(
        seen[0].1.contains("DROP SILENT GRAPH <http://h/1>"),
        "{seen:?}"
    );
    sink.write(&record(3)).unwrap();
    assert_eq!(sink.stored(), Some(0), "nothing is stored before its reply");
    stub.answers.send(204).unwrap();
    // Full again: waits for the first batch's reply, then sends the second.
    sink.write(&record(4)).unwrap();
    assert_eq!(sink.stored(), Some(2));
    let seen = stub.received(2);
    assert!(seen[1].1.contains("<http://h/3>") && seen[1].1.contains("<http://h/4>"));
    assert!(!seen[1].1.contains("<http://h/2>"));
    stub.answers.send(204).unwrap();
    sink.write(&record(5)).unwrap();
    stub.answers.send(200).unwrap();
    sink.finish().unwrap();
    assert_eq!(sink.stored(), Some(5));
    assert_eq!(
        stub.most_open.load(Ordering::SeqCst),
        1,
        "one request at a time"
    );
    assert_eq!(stub.requests.lock().unwrap().len(), 3);
}

#[test]
fn a_graph_store_load_follows_its_drops_then_the_next_batch_goes() {
    let stub = Stub::start();
    let mut sink = SparqlSink::new(&format!("{}/update", stub.url), None, 2)
        .unwrap()
        .with_graph_store(&format!("{}/store", stub.url))
        .unwrap();
    for n in 1..=3 {
        sink.write(&record(n)).unwrap();
    }
    for _ in 0..4 {
        stub.answers.send(204).unwrap();
    }
    sink.finish().unwrap();
    assert_eq!(sink.stored(), Some(3));
    let seen = stub.requests.lock().unwrap().clone();
    let paths: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["/update", "/store", "/update", "/store"]);
    assert!(seen[1].1.contains(" <http://h/2> .\n") && !seen[1].1.contains("h/3"));
    assert!(seen[3].1.contains(" <http://h/3> .\n"));
    assert_eq!(stub.most_open.load(Ordering::SeqCst), 1);
}

#[test]
fn a_batch_refused_in_flight_stops_the_run_at_the_next_send() {
    let stub = Stub::start();
    let mut sink = SparqlSink::new(&format!("{}/update", stub.url), None, 2).unwrap();
    for status in [204, 401] {
        stub.answers.send(status).unwrap();
    }
    for n in 1..=4 {
        sink.write(&record(n)).unwrap();
    }
    sink.write(&record(5)).unwrap();
    // The second batch's refusal comes with the next send, here at the end.
    let e = sink.finish().unwrap_err().to_string();
    assert!(
        e.contains("the endpoint refused 2 records: HTTP 401"),
        "{e}"
    );
    assert!(e.ends_with("(2 records stored before this)"), "{e}");
    assert_eq!(sink.stored(), Some(2));
    assert_eq!(
        stub.requests.lock().unwrap().len(),
        2,
        "nothing sent after it"
    );
}

#[test]
fn records_refused_in_flight_are_handed_back_later() {
    let stub = Stub::start();
    let mut sink = SparqlSink::new(&format!("{}/update", stub.url), None, 2).unwrap();
    // The batch of 1 and 2 refused, then each half alone: 1 stored, 2 refused.
    for status in [400, 204, 400, 204] {
        stub.answers.send(status).unwrap();
    }
    for n in 1..=3 {
        sink.write(&record(n)).unwrap();
    }
    sink.finish().unwrap();
    let refused = sink.take_refused();
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].record.url, "http://h/2");
    assert!(
        refused[0].reason.contains("HTTP 400"),
        "{}",
        refused[0].reason
    );
    assert_eq!(sink.stored(), Some(2));
}
