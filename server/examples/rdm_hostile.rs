//! Hostile clients against a `soif serve` on loopback, for a bounded time, while a prober
//! measures status requests: the figures of docs/performance.md, "Hostile clients".
//!
//! ```text
//! cargo run --release -p soif-server --example rdm_hostile -- 127.0.0.1:8080 20 \
//!     [--token T --submit data.soif]
//! ```
//!
//! For SECONDS, at once:
//! - stalled readers: 100 connections (4 from each of 25 loopback addresses, 127.0.1.x)
//!   that ask for the whole catalog and never read; reopened when the server cuts them;
//! - slowloris: 100 connections sending one header line a second, never ending the head;
//! - unauthenticated submissions: 8 loops POSTing an `rd-response` without a token, chunked
//!   (the client sends the head and 64 KiB, then waits for the refusal) and with a
//!   `Content-Length` of 100 MB (refused on the HTTP header);
//! - with `--submit FILE`: one authenticated `rd-response` whose body is FILE, streamed;
//! - the prober: a status request every 100 ms on a new connection from 127.0.0.1.
//!
//! Prints the status latencies (max, p50, p99), how the refusals went and what the
//! submission got. Only loopback addresses are accepted; every socket is closed at the end.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Default)]
struct Counts {
    stalled_opened: AtomicU64,
    stalled_refused: AtomicU64,
    slowloris_opened: AtomicU64,
    slowloris_closed: AtomicU64,
    open_posts: AtomicU64,
    open_posts_refused: AtomicU64,
    /// Largest body a refused chunked POST had sent when its refusal arrived.
    open_post_max_sent: AtomicU64,
    /// Slowest refusal of an unauthenticated POST, in microseconds.
    open_post_max_us: AtomicU64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: rdm_hostile HOST:PORT SECONDS [--token T --submit FILE]");
        std::process::exit(2);
    }
    let addr: SocketAddr = args[0].parse()?;
    if !addr.ip().is_loopback() {
        eprintln!("rdm_hostile only targets loopback addresses");
        std::process::exit(2);
    }
    let seconds: u64 = args[1].parse::<u64>()?.clamp(1, 600);
    let mut token = None;
    let mut submit = None;
    let mut rest = args[2..].iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--token" => token = rest.next().cloned(),
            "--submit" => submit = rest.next().cloned(),
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(run(addr, Duration::from_secs(seconds), token, submit))
}

async fn connect_from(ip: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(ip, 0))?;
    socket.connect(to).await
}

async fn run(
    addr: SocketAddr,
    duration: Duration,
    token: Option<String>,
    submit: Option<String>,
) -> Result<(), Box<dyn std::error::Error>> {
    let deadline = Instant::now() + duration;
    let counts = Arc::new(Counts::default());
    let mut tasks = tokio::task::JoinSet::new();

    // Stalled whole-catalog readers.
    for i in 0..100u32 {
        let counts = counts.clone();
        let ip = IpAddr::from([127, 0, 1, 1 + (i / 4) as u8]);
        tasks.spawn(async move {
            while Instant::now() < deadline {
                let Ok(mut s) = connect_from(ip, addr).await else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                let req = format!(
                    "GET /rdm/incoming?type=rd-request&ql=gatherer&scope=all HTTP/1.1\r\n\
                     Host: {addr}\r\n\r\n"
                );
                if s.write_all(req.as_bytes()).await.is_err() {
                    continue;
                }
                counts.stalled_opened.fetch_add(1, Ordering::Relaxed);
                // Peek at the status line only (the first bytes), then read no more. (A
                // read that waits for a read connection and then gets 503 answers after
                // --read-wait, later than this looks: it counts as held.)
                let mut head = [0u8; 12];
                if let Ok(Ok(n)) =
                    tokio::time::timeout(Duration::from_secs(2), s.read(&mut head)).await
                {
                    if n >= 12 && &head[9..12] != b"200" {
                        counts.stalled_refused.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                }
                // Hold the connection, reading nothing more, to the end of the run.
                tokio::time::sleep(deadline.saturating_duration_since(Instant::now())).await;
                drop(s);
            }
        });
    }

    // Slowloris.
    for i in 0..100u32 {
        let counts = counts.clone();
        let ip = IpAddr::from([127, 0, 2, 1 + (i / 4) as u8]);
        tasks.spawn(async move {
            while Instant::now() < deadline {
                let Ok(mut s) = connect_from(ip, addr).await else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                counts.slowloris_opened.fetch_add(1, Ordering::Relaxed);
                let _ = s
                    .write_all(b"GET /rdm/incoming?type=status-request HTTP/1.1\r\n")
                    .await;
                let mut n = 0;
                while Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    n += 1;
                    let mut b = [0u8; 64];
                    let closed = match s.try_read(&mut b) {
                        Ok(_) => true,
                        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
                    };
                    if closed
                        || s.write_all(format!("X-{n}: a\r\n").as_bytes())
                            .await
                            .is_err()
                    {
                        counts.slowloris_closed.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                }
            }
        });
    }

    // Unauthenticated submissions.
    for i in 0..8u32 {
        let counts = counts.clone();
        let ip = IpAddr::from([127, 0, 3, 1 + i as u8]);
        tasks.spawn(async move {
            let mut head_and_first = Vec::new();
            head_and_first.extend_from_slice(
                b"@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{11}:\trd-response\n}\n\
                  @FILE { http://x/1\nTitle{100000000}:\t",
            );
            head_and_first.resize(64 << 10, b'a');
            let mut round = 0u64;
            while Instant::now() < deadline {
                round += 1;
                let Ok(mut s) = connect_from(ip, addr).await else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let t = Instant::now();
                counts.open_posts.fetch_add(1, Ordering::Relaxed);
                let chunked = round.is_multiple_of(2);
                let head = if chunked {
                    format!(
                        "POST /rdm/incoming HTTP/1.1\r\nHost: {addr}\r\n\
                         Content-Type: application/x-rdm\r\nTransfer-Encoding: chunked\r\n\r\n\
                         {:x}\r\n",
                        head_and_first.len()
                    )
                } else {
                    format!(
                        "POST /rdm/incoming HTTP/1.1\r\nHost: {addr}\r\n\
                         Content-Type: application/x-rdm\r\nContent-Length: 100000000\r\n\r\n"
                    )
                };
                let mut sent = 0u64;
                if s.write_all(head.as_bytes()).await.is_err() {
                    continue;
                }
                if chunked {
                    if s.write_all(&head_and_first).await.is_err() {
                        continue;
                    }
                    sent = head_and_first.len() as u64;
                }
                let mut reply = [0u8; 12];
                match tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut reply)).await {
                    Ok(Ok(_)) if &reply[9..12] == b"401" || &reply[9..12] == b"413" => {
                        counts.open_posts_refused.fetch_add(1, Ordering::Relaxed);
                        counts.open_post_max_sent.fetch_max(sent, Ordering::Relaxed);
                        counts
                            .open_post_max_us
                            .fetch_max(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                    }
                    _ => {}
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
    }

    // One large authenticated submission.
    let submission = submit.map(|path| {
        let token = token.clone().unwrap_or_default();
        tokio::spawn(async move {
            let t = Instant::now();
            let file = match tokio::fs::File::open(&path).await {
                Ok(f) => f,
                Err(e) => return format!("cannot open {path}: {e}"),
            };
            let size = file.metadata().await.map(|m| m.len()).unwrap_or(0);
            let head = bytes::Bytes::from_static(
                b"@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{11}:\trd-response\n}\n",
            );
            let body = futures::StreamExt::chain(
                futures::stream::once(async move { Ok::<_, std::io::Error>(head) }),
                tokio_util::io::ReaderStream::with_capacity(file, 256 << 10),
            );
            let resp = reqwest::Client::new()
                .post(format!("http://{addr}/rdm/incoming"))
                .header("content-type", "application/x-rdm")
                .bearer_auth(token)
                .body(reqwest::Body::wrap_stream(body))
                .timeout(Duration::from_secs(300))
                .send()
                .await;
            match resp {
                Ok(r) => {
                    let status = r.status();
                    let text = r.text().await.unwrap_or_default();
                    let said = text
                        .lines()
                        .find(|l| l.starts_with("RDM-Response-Interpret"))
                        .unwrap_or("")
                        .to_string();
                    format!(
                        "{:.0} MB submission: {status} in {:.1} s ({said})",
                        size as f64 / 1e6,
                        t.elapsed().as_secs_f64()
                    )
                }
                Err(e) => format!("submission failed: {e}"),
            }
        })
    });

    // The prober.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let mut latencies = Vec::new();
    let mut failures = 0u64;
    while Instant::now() < deadline {
        let t = Instant::now();
        let ok = match client
            .get(format!("http://{addr}/rdm/incoming?type=status-request"))
            .timeout(Duration::from_secs(10))
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => r.bytes().await.is_ok(),
            _ => false,
        };
        if ok {
            latencies.push(t.elapsed());
        } else {
            failures += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * p).round() as usize)
            .map(|d| d.as_secs_f64() * 1e3)
            .unwrap_or(f64::NAN)
    };
    println!(
        "status requests: {} ok, {failures} failed; latency ms p50 {:.1}, p99 {:.1}, max {:.1}",
        latencies.len(),
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
    let c = &counts;
    println!(
        "stalled whole-catalog readers: {} requests, {} refused (429/503) within 2 s",
        c.stalled_opened.load(Ordering::Relaxed),
        c.stalled_refused.load(Ordering::Relaxed)
    );
    println!(
        "slowloris connections: {} opened, {} closed by the server",
        c.slowloris_opened.load(Ordering::Relaxed),
        c.slowloris_closed.load(Ordering::Relaxed)
    );
    println!(
        "unauthenticated submissions: {} sent, {} refused; at most {} body bytes sent before \
         the refusal, slowest refusal {:.1} ms",
        c.open_posts.load(Ordering::Relaxed),
        c.open_posts_refused.load(Ordering::Relaxed),
        c.open_post_max_sent.load(Ordering::Relaxed),
        c.open_post_max_us.load(Ordering::Relaxed) as f64 / 1e3
    );
    if let Some(s) = submission {
        println!("{}", s.await.unwrap_or_else(|e| e.to_string()));
    }
    Ok(())
}
