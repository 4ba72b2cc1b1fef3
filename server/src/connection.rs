//! Connection handling: the accept loop, the connection limits (per client address and
//! in all), the request-head and write-stall timeouts, the lingering close that lets a
//! client read an early reply, and the open-file limit.

use crate::config::ServerConfig;
use crate::routes::router;
use crate::state::{AppState, ClientAddr};
use hyper::body::Incoming;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncRead;

/// How much a closing connection reads and discards of what the client still sends
/// (see [`Lingering`]): enough for a body a few times `--max-open-body` (1 MiB by
/// default) sent whole after an early refusal.
pub const LINGER_BYTES: u64 = 8 << 20;

/// How long a closing connection goes on reading what the client still sends.
pub const LINGER_TIME: Duration = Duration::from_secs(5);

/// Serves until `shutdown` completes, then finishes the requests in flight.
///
/// Each connection is HTTP/1.1 (hyper) with the limits of [`ServerConfig`]: a complete
/// request head within [`ServerConfig::header_timeout`] (also the idle time of a
/// kept-alive connection), replies that the client stops reading cut off after
/// [`ServerConfig::body_idle_timeout`], at most [`ServerConfig::max_connections`]
/// connections and [`ServerConfig::max_connections_per_client`] per address (more are
/// closed at once). Each request carries its [`ClientAddr`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Bring the keyword indexes and facet tables up to date while already answering (a large catalog
    // loaded while the server was down takes a while); keyword queries that come first
    // wait for it, and retry it if it failed.
    for c in &state.catalogs {
        let c = c.clone();
        tokio::task::spawn_blocking(move || {
            // Facets first: every browse page shows them, and they build faster.
            if let Err(e) = c.ensure_facets() {
                log!("soif: catalog {}: facet tables: {e}", c.name());
            }
            if let Err(e) = c.ensure_index() {
                log!("soif: catalog {}: keyword index: {e}", c.name());
            }
        });
    }
    let config = state.config.clone();
    let app = router(state);
    let conns = Arc::new(ConnectionCount::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: pause, do not spin.
                    log!("soif: accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // Reap finished connections so that the set stays small.
        while tasks.try_join_next().is_some() {}
        let Some(guard) = conns.enter(peer.ip(), &config) else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let mut stop = stop_rx.clone();
        let header_timeout = config.header_timeout;
        let write_stall = config.body_idle_timeout;
        tasks.spawn(async move {
            let ip = peer.ip();
            let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
                req.extensions_mut().insert(ClientAddr(ip));
                tower::ServiceExt::oneshot(app.clone(), req)
            });
            let io = hyper_util::rt::TokioIo::new(WriteStall::new(
                Lingering::new(stream, guard),
                write_stall,
            ));
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .keep_alive(true);
            let conn = builder.serve_connection(io, service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.as_mut().await;
                }
            }
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Open connections, per client address and in all.
#[derive(Debug, Default)]
pub(crate) struct ConnectionCount {
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

pub(crate) struct ConnectionGuard {
    count: Arc<ConnectionCount>,
    ip: IpAddr,
}

impl ConnectionCount {
    fn enter(self: &Arc<Self>, ip: IpAddr, config: &ServerConfig) -> Option<ConnectionGuard> {
        let mut guard = self.open.lock().ok()?;
        let (total, per_client) = &mut *guard;
        let n = per_client.get(&ip).copied().unwrap_or(0);
        if *total >= config.max_connections || n >= config.max_connections_per_client {
            return None;
        }
        *total += 1;
        per_client.insert(ip, n + 1);
        Some(ConnectionGuard {
            count: self.clone(),
            ip,
        })
    }
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        if let Ok(mut guard) = self.count.open.lock() {
            let (total, per_client) = &mut *guard;
            *total = total.saturating_sub(1);
            if let Some(n) = per_client.get_mut(&self.ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    per_client.remove(&self.ip);
                }
            }
        }
    }
}

/// A connection whose writes fail once the client has accepted nothing for a while: a
/// client that stops reading a reply (of any size) cannot hold its connection forever.
pub(crate) struct WriteStall<S> {
    inner: S,
    limit: Duration,
    stalled: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteStall<S> {
    fn new(inner: S, limit: Duration) -> WriteStall<S> {
        WriteStall {
            inner,
            limit,
            stalled: None,
        }
    }

    /// `Pending` from the socket: starts (or checks) the stall timer.
    fn check_stall<T>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        r: std::task::Poll<std::io::Result<T>>,
    ) -> std::task::Poll<std::io::Result<T>> {
        use std::task::Poll;
        if r.is_ready() {
            self.stalled = None;
            return r;
        }
        let limit = self.limit;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if std::future::Future::poll(sleep.as_mut(), cx).is_ready() {
            self.stalled = None;
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client read nothing for {limit:?}"),
            )));
        }
        Poll::Pending
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteStall<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for WriteStall<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.check_stall(cx, r)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.check_stall(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_flush(cx);
        self.check_stall(cx, r)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_shutdown(cx);
        self.check_stall(cx, r)
    }
}

/// Raises the soft limit on open files to the hard limit (a server holds one descriptor
/// per connection; the usual soft limit of 1024 is reached long before the hard one).
/// Returns the limit now in force.
#[cfg(unix)]
pub fn raise_open_file_limit() -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            lim = raised;
        }
    }
    Ok(lim.rlim_cur)
}

/// Elsewhere there is nothing to raise.
#[cfg(not(unix))]
pub fn raise_open_file_limit() -> std::io::Result<u64> {
    Ok(0)
}

/// A connection's socket that closes gracefully (RFC 9112 §9.6, "tear-down"): when the
/// connection ends, its write side is shut (the client sees the end of the reply), and
/// what the client still sends is read and discarded until it closes its side, for at
/// most [`LINGER_BYTES`] and [`LINGER_TIME`], before the socket is closed.
///
/// Why: a reply can come before its request's body has been read (a refused token, a
/// body over the limit). Closing a socket with unread bytes makes the kernel reset the
/// connection, and a client that sends its whole body before reading (Python's
/// `urllib` and `requests`) then sees a broken pipe instead of the reply and its reason.
/// The connection keeps its place among the connection limits while it lingers.
pub(crate) struct Lingering {
    stream: Option<tokio::net::TcpStream>,
    guard: Option<ConnectionGuard>,
}

impl Lingering {
    fn new(stream: tokio::net::TcpStream, guard: ConnectionGuard) -> Lingering {
        Lingering {
            stream: Some(stream),
            guard: Some(guard),
        }
    }

    fn stream(&mut self) -> std::io::Result<std::pin::Pin<&mut tokio::net::TcpStream>> {
        match self.stream.as_mut() {
            Some(s) => Ok(std::pin::Pin::new(s)),
            None => Err(std::io::Error::from(std::io::ErrorKind::NotConnected)),
        }
    }
}

impl Drop for Lingering {
    fn drop(&mut self) {
        let (Some(stream), guard) = (self.stream.take(), self.guard.take()) else {
            return;
        };
        // Outside a runtime (it is shutting down) the socket simply closes.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                linger(stream, LINGER_BYTES, LINGER_TIME).await;
                drop(guard);
            });
        }
    }
}

/// Shuts the write side of `stream`, then reads and discards what arrives until the
/// client closes its side, `max_bytes` have been read or `max_time` has passed.
async fn linger(mut stream: tokio::net::TcpStream, max_bytes: u64, max_time: Duration) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let drain = async {
        let _ = stream.shutdown().await;
        let mut buf = vec![0u8; 64 << 10];
        let mut left = max_bytes;
        while left > 0 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n as u64),
            }
        }
    };
    let _ = tokio::time::timeout(max_time, drain).await;
}

impl AsyncRead for Lingering {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.stream() {
            Ok(s) => s.poll_read(cx, buf),
            Err(e) => std::task::Poll::Ready(Err(e)),
        }
    }
}

impl tokio::io::AsyncWrite for Lingering {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.stream() {
            Ok(s) => s.poll_write(cx, buf),
            Err(e) => std::task::Poll::Ready(Err(e)),
        }
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.stream() {
            Ok(s) => s.poll_write_vectored(cx, bufs),
            Err(e) => std::task::Poll::Ready(Err(e)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.is_write_vectored())
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.stream() {
            Ok(s) => s.poll_flush(cx),
            Err(e) => std::task::Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.stream() {
            Ok(s) => s.poll_shutdown(cx),
            Err(e) => std::task::Poll::Ready(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A connected pair: the server's end (tokio) and the client's (std, blocking).
    async fn pair() -> (tokio::net::TcpStream, std::net::TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = std::net::TcpStream::connect(addr).unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (server, client)
    }

    #[tokio::test]
    async fn lingering_reads_until_the_client_closes() {
        let (server, mut client) = pair().await;
        let reader = std::thread::spawn(move || {
            client.write_all(&[b'x'; 100_000]).unwrap();
            client.shutdown(std::net::Shutdown::Write).unwrap();
            let mut rest = Vec::new();
            // The server's FIN: the end of its (empty) reply, not a reset.
            client.read_to_end(&mut rest).map(|_| rest.len())
        });
        let started = std::time::Instant::now();
        linger(server, 1 << 20, Duration::from_secs(10)).await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(reader.join().unwrap().unwrap(), 0);
    }

    #[tokio::test]
    async fn lingering_stops_at_its_time_bound() {
        let (server, client) = pair().await;
        let started = std::time::Instant::now();
        // The client neither sends nor closes.
        linger(server, 1 << 20, Duration::from_millis(300)).await;
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(5));
        drop(client);
    }

    #[tokio::test]
    async fn lingering_stops_at_its_byte_bound() {
        let (server, mut client) = pair().await;
        let writer = std::thread::spawn(move || {
            let chunk = [b'x'; 64 << 10];
            let mut sent = 0u64;
            while client.write_all(&chunk).is_ok() {
                sent += chunk.len() as u64;
                if sent > 1 << 30 {
                    break;
                }
            }
            sent
        });
        let started = std::time::Instant::now();
        linger(server, 1 << 20, Duration::from_secs(30)).await;
        assert!(started.elapsed() < Duration::from_secs(10));
        // Closed after the bound: the client's writes fail long before 1 GiB.
        assert!(writer.join().unwrap() < 1 << 30);
    }
}
