//! A small load generator for the RDM server: `C` concurrent clients send the same GET
//! request for `S` seconds over keep-alive connections; prints requests/s, latency
//! percentiles and bytes received. Used for the figures of docs/performance.md, "The RDM server".
//!
//! ```text
//! cargo run --release -p soif-server --example rdm_load -- \
//!     'http://127.0.0.1:8080/rdm/incoming?type=status-request' 32 10
//! ```
//!
//! Every reply must be `200` and end completely; failures are counted and reported.

use futures::StreamExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, clients, seconds) = match args.as_slice() {
        [u, c, s] => (u.clone(), c.parse::<usize>()?, s.parse::<u64>()?),
        _ => {
            eprintln!("usage: rdm_load URL CLIENTS SECONDS");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(
        url,
        clients.max(1),
        Duration::from_secs(seconds.max(1)),
    ))
}

async fn run(
    url: String,
    clients: usize,
    duration: Duration,
) -> Result<(), Box<dyn std::error::Error>> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()?;
    let bytes = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + duration;
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, url, bytes, failures) =
            (client.clone(), url.clone(), bytes.clone(), failures.clone());
        tasks.push(tokio::spawn(async move {
            // Latencies in microseconds; bounded by the run's length.
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let t = Instant::now();
                let ok = match client.get(&url).send().await {
                    Ok(resp) if resp.status().is_success() => {
                        let mut body = resp.bytes_stream();
                        let mut ok = true;
                        while let Some(chunk) = body.next().await {
                            match chunk {
                                Ok(c) => {
                                    bytes.fetch_add(c.len() as u64, Ordering::Relaxed);
                                }
                                Err(_) => {
                                    ok = false;
                                    break;
                                }
                            }
                        }
                        ok
                    }
                    _ => false,
                };
                if ok {
                    latencies.push(t.elapsed().as_micros() as u64);
                } else {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await?);
    }
    let secs = start.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .map_or(0.0, |&us| us as f64 / 1000.0)
    };
    println!(
        "{} clients, {:.1} s: {} requests ({:.0}/s), {} failed, {:.1} MB received; \
         latency ms p50 {:.2} p90 {:.2} p99 {:.2}",
        clients,
        secs,
        all.len(),
        all.len() as f64 / secs,
        failures.load(Ordering::Relaxed),
        bytes.load(Ordering::Relaxed) as f64 / 1e6,
        pct(0.50),
        pct(0.90),
        pct(0.99)
    );
    Ok(())
}
