//! The HTTP side: `GET` and `POST /rdm/incoming` (axum), dispatching on the RDM type.
//!
//! | request (`RDM-Type`)            | reply                                              |
//! |---------------------------------|----------------------------------------------------|
//! | `rd-request`                    | `rd-response`: the RDs (gatherer `all` / `since DATE`, or `sample-keyword-ql` with `Score`), through the view |
//! | `rd-request-deleted`            | `rd-response`: one RD per remembered deletion (`Last-Modified` = when) |
//! | `server-description-request`    | `server-description-response`: one `@RDMSERVER`    |
//! | `schema-description-request`    | `schema-description-response`: `@SCHEMA` (schema-basic `defined ATTR`) |
//! | `taxonomy-description-request`  | `taxonomy-description-response`: `@TAXONOMY` + `@CLASSIFICATION`s (taxonomy-basic) |
//! | `status-request`                | `status-response`: an HTML 2.0 document            |
//! | `rd-response` (POST, token)     | `status-response`: the RDs were stored             |
//! | `rd-response-deleted` (POST, token) | `status-response`: the RDs were deleted        |
//!
//! Every reply is `Content-Type: application/x-rdm` with an `Expires` header. Replies of
//! known size have a `Content-Length`; an `rd-response` larger than one chunk (64 KiB) is
//! streamed with chunked transfer encoding as the catalog is read, never held whole. A
//! failure is a `status-response` whose `@RDMHEADER` has `RDM-Error-Message`, with the
//! HTTP status of [`RequestError::status`].
//!
//! POST bodies are decoded while they arrive (the SOIF decoder over the body stream), are
//! limited to [`ServerConfig::max_body`] bytes (sent, and inflated when the body is
//! `Content-Encoding: gzip`) and [`ServerConfig::max_record_size`] per object, and may also
//! be `application/x-www-form-urlencoded` (the GET parameters).
//! A submission is written in one transaction once its whole body has been read (and
//! spooled, see [`crate::spool`]): a body that breaks off or holds a bad object writes
//! nothing, and a slow client never holds the catalog's write lock.
//!
//! The bearer token is looked at before any of a body is read: without it a body may only
//! be a small request ([`ServerConfig::max_open_body`], its header within
//! [`OPEN_HEADER_LIMIT`]) and a submission is refused once its `@RDMHEADER` is read. What
//! a client can hold is bounded by the other limits of [`ServerConfig`] (keyword terms,
//! `View-Order` keys and rows, reads in flight per client address and in all, the wait for
//! a read connection, the request-head and stall timeouts, connections); every limit, its
//! default and what exceeding it gets are listed in the crate's README ("Limits").

use crate::catalog::{keyword_query, Catalog, CatalogOptions, Flow, Query, Scope, Submission};
use crate::error::RequestError;
use crate::spool::Spool;
use crate::status::{self, CatalogStatus, ServerStatus};
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::Extension;
use axum::Router;
use bytes::Bytes;
use futures::StreamExt;
use hyper::body::Incoming;
use soif_codecs::rdm::{
    Csid, GathererScope, MessageItem, MessageReader, QueryLanguage, RdmDate, RdmHeader, RdmQuery,
    RdmType, Schema, SchemaScope, ServerDescription, Taxonomy, TaxonomyScope,
};
use soif_codecs::soif::{decode_all, encode_record, DecoderOptions, SoifDecoder};
use soif_codecs::Record;
use std::collections::HashMap;
use std::io::Read;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::io::AsyncRead;
use tokio_util::codec::FramedRead;
use tokio_util::io::StreamReader;

/// The RDM content type.
pub const RDM_CONTENT_TYPE: &str = "application/x-rdm";

/// Where RDM messages go (the note's Request-URI).
pub const RDM_PATH: &str = "/rdm/incoming";

/// Size of the chunks an `rd-response` is streamed in.
const CHUNK: usize = 64 << 10;

/// Largest schema or taxonomy file read at start.
const MAX_DESCRIPTION_FILE: u64 = 64 << 20;

/// Largest form-encoded POST body.
const MAX_FORM_BODY: usize = 64 << 10;

/// How many sample RDs the server description carries.
const SAMPLES: usize = 3;

/// How long descriptions may be cached (`SD-Expires`, `Expires`).
const DESCRIPTION_TTL: Duration = Duration::from_secs(3600);

/// How the server is set up (from `soif serve`'s options).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `(name, database)`; the first is the default catalog.
    pub catalogs: Vec<(String, PathBuf)>,
    /// The bearer token submissions need; `None` disables submissions.
    pub token: Option<String>,
    /// The schema served by schema-description requests (else derived from the tables).
    pub schema: Option<Schema>,
    /// The taxonomy served by taxonomy-description requests.
    pub taxonomy: Option<Taxonomy>,
    /// Largest request body, in bytes.
    pub max_body: u64,
    /// Largest SOIF object in a request body.
    pub max_record_size: usize,
    /// `Description` of the server description.
    pub description: Option<String>,
    /// `Maintainer` of the server description.
    pub maintainer: Option<String>,
    /// A request body that sends nothing for this long is abandoned (nothing is written);
    /// a client that reads nothing of a reply for this long is cut off (`--stall-timeout`).
    pub body_idle_timeout: Duration,
    /// Largest body of a POST without the right token (a query; `--max-open-body`). Its
    /// first object, the `@RDMHEADER`, must also fit in [`OPEN_HEADER_LIMIT`]; a
    /// submission is refused as soon as that header has been read.
    pub max_open_body: u64,
    /// Time a connection has to send a complete request head, counted from when it
    /// starts waiting for one — so also the idle time of a kept-alive connection
    /// (`--header-timeout`).
    pub header_timeout: Duration,
    /// Words (and `OR`s) in a `sample-keyword-ql` scope (`--max-query-terms`).
    pub max_query_terms: usize,
    /// Keys in a `View-Order` (`--max-order-keys`).
    pub max_order_keys: usize,
    /// Rows a `View-Order` may sort (`--max-sorted-rows`); more is an error reply.
    pub max_sorted_rows: u64,
    /// Hits a keyword query ranks (`--max-keyword-hits`): the best this many are served.
    pub max_keyword_hits: u64,
    /// Reads in flight per client address: `rd-request` replies, and server or derived
    /// schema descriptions while they read (`--max-reads-per-client`).
    pub max_reads_per_client: usize,
    /// Reads in flight in all, counted the same way (`--max-reads`).
    pub max_reads: usize,
    /// How long a read waits for one of a catalog's read connections (`--read-wait`).
    pub read_wait: Duration,
    /// Open connections per client address (`--max-connections-per-client`).
    pub max_connections_per_client: usize,
    /// Open connections in all (`--max-connections`).
    pub max_connections: usize,
    /// Serve every catalog read-only (`--read-only`); a catalog whose database or file
    /// system is not writable is served read-only anyway.
    pub read_only: bool,
    /// The OAI-PMH provider's settings.
    pub oai: crate::oai::OaiConfig,
}

/// The `@RDMHEADER` of a POST without the right token must arrive within this many bytes.
pub const OPEN_HEADER_LIMIT: usize = 64 << 10;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            catalogs: Vec::new(),
            token: None,
            schema: None,
            taxonomy: None,
            max_body: 1 << 30,
            max_record_size: 64 << 20,
            description: None,
            maintainer: None,
            body_idle_timeout: Duration::from_secs(30),
            max_open_body: 1 << 20,
            header_timeout: Duration::from_secs(10),
            max_query_terms: 32,
            max_order_keys: 4,
            max_sorted_rows: 1_000_000,
            max_keyword_hits: 10_000,
            max_reads_per_client: 8,
            max_reads: 64,
            read_wait: Duration::from_secs(5),
            max_connections_per_client: 256,
            max_connections: 4096,
            read_only: false,
            oai: crate::oai::OaiConfig::default(),
        }
    }
}

/// Parses a `--db` value: `NAME=PATH`, or a path whose file stem names the catalog.
pub fn parse_db_spec(spec: &str) -> Result<(String, PathBuf), String> {
    if let Some((name, path)) = spec.split_once('=') {
        let name = name.trim();
        if name.is_empty() || name.contains(['/', '?', '#', ' ']) || path.is_empty() {
            return Err(format!(
                "--db {spec:?}: expected NAME=PATH with a NAME without '/', '?', '#' or spaces"
            ));
        }
        return Ok((name.to_string(), PathBuf::from(path)));
    }
    let path = PathBuf::from(spec);
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("--db {spec:?}: cannot name a catalog after this path"))?;
    Ok((name, path))
}

fn read_bounded(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open the {what} {shown}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_DESCRIPTION_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the {what} {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_DESCRIPTION_FILE {
        return Err(format!(
            "the {what} {shown} is larger than {} MiB",
            MAX_DESCRIPTION_FILE >> 20
        ));
    }
    Ok(bytes)
}

/// Reads a taxonomy file: one `@TAXONOMY`, then `@CLASSIFICATION`s (the note's `{x}` sizes
/// are read leniently, as written by hand).
pub fn load_taxonomy(path: &Path) -> Result<Taxonomy, String> {
    let bytes = read_bounded(path, "taxonomy")?;
    let shown = path.display().to_string();
    let opts = DecoderOptions::default().lenient().named(shown.clone());
    let records = decode_all(&bytes, opts)
        .into_iter()
        .collect::<Result<Vec<Record>, _>>()
        .map_err(|e| format!("the taxonomy {shown} is not valid SOIF: {e}"))?;
    Taxonomy::from_records(&records).map_err(|e| format!("the taxonomy {shown}: {e}"))
}

/// Shared by all requests.
pub struct AppState {
    catalogs: Vec<Arc<Catalog>>,
    by_name: HashMap<String, usize>,
    config: ServerConfig,
    started: SystemTime,
    requests: AtomicU64,
    failed: AtomicU64,
    submitted: AtomicU64,
    deleted: AtomicU64,
    reads: Arc<ReadSlots>,
}

/// The address a request came from, put in the request's extensions by [`serve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// The `rd-request` replies in flight, per client address and in all.
#[derive(Debug, Default)]
struct ReadSlots {
    in_flight: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// One reply in flight; released when dropped (the reply ended, or was cut off).
struct ReadSlot {
    slots: Arc<ReadSlots>,
    client: Option<IpAddr>,
}

impl ReadSlots {
    fn acquire(
        self: &Arc<Self>,
        client: Option<IpAddr>,
        config: &ServerConfig,
    ) -> Result<ReadSlot, RequestError> {
        let mut guard = self
            .in_flight
            .lock()
            .map_err(|_| RequestError::Internal("the read counter failed earlier".into()))?;
        let (total, per_client) = &mut *guard;
        if *total >= config.max_reads {
            return Err(RequestError::Busy(format!(
                "{} reads are in flight (this server's limit); retry later",
                config.max_reads
            )));
        }
        if let Some(ip) = client {
            let n = per_client.entry(ip).or_insert(0);
            if *n >= config.max_reads_per_client {
                return Err(RequestError::TooManyRequests(format!(
                    "{ip} already has {} reads in flight (this server's limit per \
                     client); read them first",
                    config.max_reads_per_client
                )));
            }
            *n += 1;
        }
        *total += 1;
        Ok(ReadSlot {
            slots: self.clone(),
            client,
        })
    }
}

impl Drop for ReadSlot {
    fn drop(&mut self) {
        if let Ok(mut guard) = self.slots.in_flight.lock() {
            let (total, per_client) = &mut *guard;
            *total = total.saturating_sub(1);
            if let Some(ip) = self.client {
                if let Some(n) = per_client.get_mut(&ip) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        per_client.remove(&ip);
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("catalogs", &self.catalogs)
            .finish()
    }
}

impl AppState {
    /// Opens every catalog (blocking: call before serving, or on a blocking thread).
    pub fn open(config: ServerConfig) -> Result<Arc<AppState>, String> {
        if config.catalogs.is_empty() {
            return Err("no catalog: give at least one --db".into());
        }
        let mut catalogs = Vec::new();
        let mut by_name = HashMap::new();
        for (name, path) in &config.catalogs {
            if by_name.insert(name.clone(), catalogs.len()).is_some() {
                return Err(format!("two catalogs are named {name:?}"));
            }
            let opts = CatalogOptions {
                read_only: config.read_only,
                read_wait: config.read_wait,
            };
            let c = Catalog::open_with(name, path, &opts)
                .map_err(|e| format!("catalog {name} ({}): {e}", path.display()))?;
            catalogs.push(Arc::new(c));
        }
        Ok(Arc::new(AppState {
            catalogs,
            by_name,
            config,
            started: SystemTime::now(),
            requests: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            submitted: AtomicU64::new(0),
            deleted: AtomicU64::new(0),
            reads: Arc::new(ReadSlots::default()),
        }))
    }

    /// The catalogs, in `--db` order.
    pub fn catalogs(&self) -> &[Arc<Catalog>] {
        &self.catalogs
    }

    /// The settings the server runs with.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The catalog named `name` (the default one for `None`) and its index.
    pub(crate) fn catalog_named(&self, name: Option<&str>) -> Option<(usize, Arc<Catalog>)> {
        let i = match name {
            None => 0,
            Some(n) => *self.by_name.get(n)?,
        };
        Some((i, self.catalogs.get(i)?.clone()))
    }

    /// One of the client's read slots (`--max-reads-per-client`, `--max-reads`), held
    /// until the returned guard is dropped.
    pub(crate) fn acquire_read(
        &self,
        client: Option<IpAddr>,
    ) -> Result<impl Send + 'static, RequestError> {
        self.reads.acquire(client, &self.config)
    }

    pub(crate) fn count_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_failure(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    fn catalog(&self, header: &RdmHeader) -> Result<Arc<Catalog>, RequestError> {
        match &header.catalog {
            None => Ok(self.catalogs[0].clone()),
            Some(csid) => self
                .by_name
                .get(&csid.name)
                .map(|&i| self.catalogs[i].clone())
                .ok_or_else(|| RequestError::UnknownCatalog(csid.name.clone())),
        }
    }
}

/// The router: `GET` and `POST` on [`RDM_PATH`]; OAI-PMH on `/oai` and `/oai/NAME`
/// (see [`crate::oai`]) and the `soif` format's schema at `/oai/soif.xsd`; the browse
/// and search pages on `/` and below (see [`crate::web`]).
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route(RDM_PATH, get(get_incoming).post(post_incoming))
        .route(
            "/oai",
            get(crate::oai::get_default).post(crate::oai::post_default),
        )
        .route("/oai/soif.xsd", get(crate::oai::soif_xsd))
        .route(
            "/oai/{name}",
            get(crate::oai::get_named).post(crate::oai::post_named),
        )
        // The browse and search pages (read-only: GET only; see crate::web).
        .route("/", get(crate::web::home))
        .route("/.json", get(crate::web::home_json))
        .route("/-/style.css", get(crate::web::stylesheet))
        .route("/{name}", get(crate::web::catalog_page))
        .route("/{name}/-/{page}", get(crate::web::search_page))
        .route("/{name}/{template}", get(crate::web::list_page))
        .route("/{name}/{template}/{leaf}", get(crate::web::record_page))
        // The body is limited while it streams (ServerConfig::max_body), not buffered.
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

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
    // Bring the keyword indexes up to date while already answering (a large catalog
    // loaded while the server was down takes a while); keyword queries that come first
    // wait for it, and retry it if it failed.
    for c in &state.catalogs {
        let c = c.clone();
        tokio::task::spawn_blocking(move || {
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
            let _guard = guard;
            let ip = peer.ip();
            let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
                req.extensions_mut().insert(ClientAddr(ip));
                tower::ServiceExt::oneshot(app.clone(), req)
            });
            let io = hyper_util::rt::TokioIo::new(WriteStall::new(stream, write_stall));
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
struct ConnectionCount {
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

struct ConnectionGuard {
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
struct WriteStall<S> {
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

// --- responses ---------------------------------------------------------------------------

fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

fn rdm_response(
    status: StatusCode,
    body: Body,
    expires: SystemTime,
    length: Option<usize>,
) -> Response {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(RDM_CONTENT_TYPE),
    );
    if let Ok(v) = HeaderValue::from_str(&http_date(expires)) {
        h.insert(header::EXPIRES, v);
    }
    if let Some(n) = length {
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    r
}

/// A complete message: a header then body objects (or raw body bytes).
fn message(status: StatusCode, head: &RdmHeader, body: &[u8], expires: SystemTime) -> Response {
    let mut out = Vec::with_capacity(256 + body.len());
    encode_record(&head.to_record(), &mut out);
    out.extend_from_slice(body);
    let n = out.len();
    rdm_response(status, Body::from(out), expires, Some(n))
}

fn error_response(state: &AppState, e: &RequestError) -> Response {
    state.failed.fetch_add(1, Ordering::Relaxed);
    let head = RdmHeader::new(RdmType::StatusResponse).with_error(e.to_string());
    let doc = status::message_document("RDM request failed", &e.to_string());
    let mut r = message(e.status(), &head, doc.as_bytes(), SystemTime::now());
    if matches!(e, RequestError::Unauthorized(_)) {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"rdm\""),
        );
    }
    r
}

fn host_of(headers: &HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or("localhost")
        .to_string()
}

fn csid_for(host: &str, name: &str) -> Csid {
    Csid::parse(&format!("x-catalog://{host}/{name}"))
        .unwrap_or_else(|_| Csid::new("localhost", None, name))
}

// --- GET ---------------------------------------------------------------------------------

async fn get_incoming(
    State(state): State<Arc<AppState>>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let client = client.map(|Extension(ClientAddr(ip))| ip);
    state.requests.fetch_add(1, Ordering::Relaxed);
    let result = async {
        let query = query.ok_or_else(|| {
            RequestError::Malformed(
                "GET /rdm/incoming needs form parameters, e.g. ?type=status-request".into(),
            )
        })?;
        let (head, q) = parse_form(query.as_bytes())?;
        if !head.rdm_type.is_request() {
            return Err(RequestError::Malformed(format!(
                "{} is not a request; submissions are POSTed as application/x-rdm",
                head.rdm_type
            )));
        }
        answer(&state, head, q, &host_of(&headers), client).await
    }
    .await;
    result.unwrap_or_else(|e| error_response(&state, &e))
}

fn parse_form(bytes: &[u8]) -> Result<(RdmHeader, Option<RdmQuery>), RequestError> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(bytes).into_owned().collect();
    Ok(soif_codecs::rdm::request_from_form(
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )?)
}

// --- POST --------------------------------------------------------------------------------

/// The marker of a body over the limit, carried inside an `io::Error`.
#[derive(Debug)]
struct BodyTooLarge;
impl std::fmt::Display for BodyTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("request body too large")
    }
}
impl std::error::Error for BodyTooLarge {}

type BodyFrames = FramedRead<Box<dyn AsyncRead + Send + Unpin>, SoifDecoder>;

/// Ends a reader with [`BodyTooLarge`] once it has given more than `left` bytes (applied
/// to the body as sent and, for a gzip body, to what it inflates to), and with a timeout
/// when no byte arrives for `idle` (a stalled client must not hold the catalog's write
/// lock: a submission holds it while its body arrives).
struct Limited<R> {
    inner: R,
    left: u64,
    idle: Option<(Duration, std::pin::Pin<Box<tokio::time::Sleep>>)>,
}

impl<R> Limited<R> {
    fn new(inner: R, left: u64, idle: Option<Duration>) -> Limited<R> {
        Limited {
            inner,
            left,
            idle: idle.map(|d| (d, Box::pin(tokio::time::sleep(d)))),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Limited<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if r.is_pending() {
            if let Some((d, sleep)) = &mut self.idle {
                if std::future::Future::poll(sleep.as_mut(), cx).is_ready() {
                    return Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no data for {d:?}"),
                    )));
                }
            }
            return r;
        }
        if let Some((d, sleep)) = &mut self.idle {
            let next = tokio::time::Instant::now() + *d;
            sleep.as_mut().reset(next);
        }
        let n = (buf.filled().len() - before) as u64;
        if n > self.left {
            return Poll::Ready(Err(std::io::Error::other(BodyTooLarge)));
        }
        self.left -= n;
        r
    }
}

/// The request's `Content-Encoding`: none/identity, or gzip (the note: "Content-encoding
/// optional").
fn gzipped(headers: &HeaderMap) -> Result<bool, RequestError> {
    let Some(enc) = headers.get(header::CONTENT_ENCODING) else {
        return Ok(false);
    };
    let enc = enc.to_str().unwrap_or("").trim().to_ascii_lowercase();
    match enc.as_str() {
        "" | "identity" => Ok(false),
        "gzip" | "x-gzip" => Ok(true),
        other => Err(RequestError::Unsupported(format!(
            "Content-Encoding {other:?} is not supported (send identity or gzip)"
        ))),
    }
}

async fn post_incoming(
    State(state): State<Arc<AppState>>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    state.requests.fetch_add(1, Ordering::Relaxed);
    let client = client.map(|Extension(ClientAddr(ip))| ip);
    post(&state, &headers, body, client)
        .await
        .unwrap_or_else(|e| error_response(&state, &e))
}

async fn post(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    client: Option<IpAddr>,
) -> Result<Response, RequestError> {
    // The token is in the HTTP header: looked at before any of the body is read. Without
    // it the body may only be a small request, and a submission is refused as soon as its
    // @RDMHEADER has been read.
    let auth = check_token(state, headers);
    let wrong_token = auth.is_err() && headers.contains_key(header::AUTHORIZATION);
    let limits = if auth.is_ok() {
        BodyLimits {
            body: state.config.max_body,
            record: state.config.max_record_size,
        }
    } else {
        BodyLimits {
            body: state.config.max_open_body.min(state.config.max_body),
            record: OPEN_HEADER_LIMIT,
        }
    };
    let gzip = gzipped(headers)?;
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > limits.body {
            // A wrong token is reported as such (the client's mistake to fix); without a
            // token only small requests are read.
            return Err(match auth {
                Err(e) if wrong_token => e,
                _ => RequestError::TooLarge { limit: limits.body },
            });
        }
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    let host = host_of(headers);
    if content_type.as_deref() == Some("application/x-www-form-urlencoded") {
        let bytes = axum::body::to_bytes(body, MAX_FORM_BODY)
            .await
            .map_err(|e| RequestError::Malformed(format!("reading the form body: {e}")))?;
        let (head, q) = parse_form(&bytes)?;
        if !head.rdm_type.is_request() {
            return Err(RequestError::Malformed(format!(
                "{} cannot be sent as a form; POST it as application/x-rdm",
                head.rdm_type
            )));
        }
        return answer(state, head, q, &host, client).await;
    }
    if let Some(ct) = content_type.as_deref() {
        if ct != RDM_CONTENT_TYPE {
            return Err(RequestError::Malformed(format!(
                "Content-Type {ct:?}: RDM messages are {RDM_CONTENT_TYPE}"
            )));
        }
    }
    let stream = body
        .into_data_stream()
        .map(|chunk| chunk.map_err(std::io::Error::other));
    let reader = body_reader(
        StreamReader::new(stream),
        gzip,
        limits,
        state.config.body_idle_timeout,
    );
    let mut body = RdmBody::new(reader, limits);
    let head = body.header().await?;
    match head.rdm_type {
        RdmType::RdResponse | RdmType::RdResponseDeleted => {
            // Refused on the header alone: nothing after the @RDMHEADER is read.
            auth?;
            submit(state, headers, head, body).await
        }
        t if t.is_request() => {
            let query = body.query().await?;
            answer(state, head, query, &host, client).await
        }
        other => Err(RequestError::Unsupported(format!(
            "this server does not accept {other} messages (it takes requests, rd-response \
             and rd-response-deleted)"
        ))),
    }
}

/// Limits on one POST body: its size (as sent, and inflated) and that of each object.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    pub body: u64,
    pub record: usize,
}

/// The body as bytes: limited, with an idle timeout, inflated when gzip'd.
fn body_reader<R: AsyncRead + Send + Unpin + 'static>(
    sent: R,
    gzip: bool,
    limits: BodyLimits,
    idle: Duration,
) -> Box<dyn AsyncRead + Send + Unpin> {
    let sent = Limited::new(sent, limits.body, Some(idle));
    if gzip {
        let inflated =
            async_compression::tokio::bufread::GzipDecoder::new(tokio::io::BufReader::new(sent));
        Box::new(Limited::new(inflated, limits.body, None))
    } else {
        Box::new(sent)
    }
}

/// An `application/x-rdm` POST body, decoded object by object as it arrives.
pub struct RdmBody {
    frames: BodyFrames,
    reader: MessageReader,
    limit: u64,
}

impl RdmBody {
    /// Decodes `reader` (the body's bytes) within `limits`.
    pub fn new(reader: Box<dyn AsyncRead + Send + Unpin>, limits: BodyLimits) -> RdmBody {
        let mut opts = DecoderOptions::with_max_record_size(limits.record);
        opts.input = Some(Arc::from("request body"));
        // The first read is at most one object's limit: a refused submission's body is
        // not read much beyond its header.
        let capacity = limits.record.clamp(1, 64 << 10);
        RdmBody {
            frames: FramedRead::with_capacity(reader, SoifDecoder::new(opts), capacity),
            reader: MessageReader::new(),
            limit: limits.body,
        }
    }

    /// The message's `@RDMHEADER` (its first object).
    pub async fn header(&mut self) -> Result<RdmHeader, RequestError> {
        let first = self.next().await?.ok_or_else(|| {
            RequestError::Malformed(
                "the body is empty: an RDM message starts with @RDMHEADER".into(),
            )
        })?;
        match self.reader.push(first)? {
            MessageItem::Header(h) => Ok(h),
            _ => Err(RequestError::Internal(
                "the first object was not read as a header".into(),
            )),
        }
    }

    /// The rest of a request: its `@RDMQUERY`, if any.
    pub async fn query(&mut self) -> Result<Option<RdmQuery>, RequestError> {
        let mut query = None;
        while let Some(record) = self.next().await? {
            if let MessageItem::Query(q) = self.reader.push(record)? {
                query = Some(q);
            }
        }
        self.reader.finish()?;
        Ok(query)
    }

    /// The next RD of a submission (a leading `@SCHEMA` is skipped); `None` at the end.
    pub async fn next_rd(&mut self) -> Result<Option<Record>, RequestError> {
        loop {
            match self.next().await? {
                None => {
                    self.reader.finish()?;
                    return Ok(None);
                }
                Some(record) => match self.reader.push(record)? {
                    MessageItem::Rd(rd) => return Ok(Some(rd)),
                    // "Schema Description (optional)": accepted; the layout keeps its own.
                    _ => continue,
                },
            }
        }
    }

    async fn next(&mut self) -> Result<Option<Record>, RequestError> {
        next_record(&mut self.frames, self.limit).await
    }
}

async fn next_record(frames: &mut BodyFrames, limit: u64) -> Result<Option<Record>, RequestError> {
    match frames.next().await {
        None => Ok(None),
        Some(Ok(Ok(record))) => Ok(Some(record)),
        Some(Ok(Err(e))) => Err(RequestError::Malformed(e.to_string())),
        Some(Err(e)) => {
            if e.get_ref().is_some_and(|x| x.is::<BodyTooLarge>()) {
                Err(RequestError::TooLarge { limit })
            } else {
                Err(RequestError::Malformed(format!(
                    "reading the request body: {e}"
                )))
            }
        }
    }
}

fn check_token(state: &AppState, headers: &HeaderMap) -> Result<(), RequestError> {
    let Some(expected) = &state.config.token else {
        return Err(RequestError::SubmissionsDisabled);
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| {
            RequestError::Unauthorized(
                "submissions need an Authorization: Bearer <token> header".into(),
            )
        })?
        .as_bytes();
    let token = bearer_token(given).ok_or_else(|| {
        RequestError::Unauthorized("the Authorization header is not `Bearer <token>`".into())
    })?;
    // Compared in time independent of where the first difference is.
    let expected = expected.as_bytes();
    let mut diff = u8::from(token.len() != expected.len());
    for (i, &b) in expected.iter().enumerate() {
        diff |= b ^ token.get(i).copied().unwrap_or(0);
    }
    if diff != 0 {
        return Err(RequestError::Unauthorized("wrong token".into()));
    }
    Ok(())
}

/// The credentials of an `Authorization: Bearer TOKEN` header: the scheme is matched
/// without regard to case (RFC 7235: `BEARER` is `Bearer`), one or more spaces follow it.
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let value = value.trim_ascii();
    let split = value.iter().position(|&b| b == b' ' || b == b'\t')?;
    let (scheme, rest) = value.split_at(split);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    Some(rest.trim_ascii_start()).filter(|t| !t.is_empty())
}

enum Msg {
    Rd(Record),
    Fail(RequestError),
    End,
}

async fn submit(
    state: &AppState,
    headers: &HeaderMap,
    head: RdmHeader,
    mut body: RdmBody,
) -> Result<Response, RequestError> {
    // Before reading any RD: a refused submission reads and writes nothing more.
    check_token(state, headers)?;
    check_version(&head)?;
    let catalog = state.catalog(&head)?;
    if catalog.read_only() {
        return Err(RequestError::ReadOnly(catalog.name().to_string()));
    }
    let kind = if head.rdm_type == RdmType::RdResponseDeleted {
        Submission::Delete
    } else {
        Submission::Upsert
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Msg>(64);
    let writer = {
        let catalog = catalog.clone();
        tokio::task::spawn_blocking(move || {
            // The whole body first (see `spool`): the catalog's write lock is held only
            // while a complete submission is applied, never while a client sends.
            let mut spool = Spool::new();
            loop {
                match rx.blocking_recv() {
                    Some(Msg::Rd(r)) => spool.push(&r)?,
                    Some(Msg::Fail(e)) => return Err(e),
                    Some(Msg::End) => break,
                    // The request went away before its end: write nothing.
                    None => {
                        return Err(RequestError::Malformed(
                            "the request body ended early".into(),
                        ))
                    }
                }
            }
            let mut records = spool.reader()?;
            catalog.submit(kind, &mut || records.next_record())
        })
    };
    loop {
        let msg = match body.next_rd().await {
            Ok(None) => Msg::End,
            Ok(Some(rd)) => Msg::Rd(rd),
            Err(e) => Msg::Fail(e),
        };
        let last = !matches!(msg, Msg::Rd(_));
        // A closed channel means the writer stopped on an error, which it returns below.
        if tx.send(msg).await.is_err() || last {
            break;
        }
    }
    drop(tx);
    let counts = writer
        .await
        .map_err(|e| RequestError::Internal(format!("the catalog writer failed: {e}")))??;
    state
        .submitted
        .fetch_add(counts.upserted, Ordering::Relaxed);
    state.deleted.fetch_add(counts.deleted, Ordering::Relaxed);
    let text = match (kind, counts.deleted) {
        (Submission::Upsert, 0) => format!("{} RDs stored in {}", counts.upserted, catalog.name()),
        // An rd-response may carry @DELETE { } envelopes.
        (Submission::Upsert, d) => format!(
            "{} RDs stored in {}, {d} deleted",
            counts.upserted,
            catalog.name()
        ),
        (Submission::Delete, d) => format!("{d} RDs deleted from {}", catalog.name()),
    };
    let mut reply = RdmHeader::new(RdmType::StatusResponse);
    reply.catalog = Some(csid_for(&host_of(headers), catalog.name()));
    reply.response_interpret = Some(text.clone());
    let doc = status::message_document("RDM submission accepted", &text);
    Ok(message(
        StatusCode::OK,
        &reply,
        doc.as_bytes(),
        SystemTime::now(),
    ))
}

// --- requests ----------------------------------------------------------------------------

/// The checks of a request that need no catalog: its RDM version, its query language,
/// and for an `rd-request` / `rd-request-deleted` its scope and view within this server's
/// limits, giving the read to run. (Schema and taxonomy scopes are checked too.)
pub fn check_request(
    config: &ServerConfig,
    head: &RdmHeader,
    query: Option<&RdmQuery>,
) -> Result<Option<Query>, RequestError> {
    check_version(head)?;
    if let (Some(ql), Some(expected)) = (&head.query_language, head.rdm_type.query_language()) {
        let keyword_ok = matches!(
            head.rdm_type,
            RdmType::RdRequest | RdmType::RdRequestDeleted
        ) && *ql == QueryLanguage::SampleKeyword;
        if *ql != expected && !keyword_ok {
            return Err(RequestError::Unsupported(format!(
                "query language {ql} for {} (this server accepts {expected}{})",
                head.rdm_type,
                if head.rdm_type == RdmType::RdRequest {
                    " or sample-keyword-ql"
                } else {
                    ""
                }
            )));
        }
    }
    let scope = query.and_then(|q| q.scope.as_deref());
    match head.rdm_type {
        RdmType::SchemaDescriptionRequest => {
            SchemaScope::parse(scope.unwrap_or("defined SOIF-Attribute"))?;
            Ok(None)
        }
        RdmType::TaxonomyDescriptionRequest => {
            TaxonomyScope::parse(scope.unwrap_or("descendant ROOT"))?;
            Ok(None)
        }
        RdmType::RdRequest | RdmType::RdRequestDeleted => {
            let q = query.cloned().unwrap_or_default();
            let keyword = head.query_language == Some(QueryLanguage::SampleKeyword);
            let scope = match (&q.scope, keyword) {
                (Some(s), true) => Scope::Keywords(keyword_query(s, config.max_query_terms)?),
                (None, true) => {
                    return Err(RequestError::Malformed(
                        "sample-keyword-ql needs a Scope (the words to look for)".into(),
                    ))
                }
                (None, false) => Scope::All,
                (Some(s), false) => match GathererScope::parse(s)? {
                    GathererScope::All => Scope::All,
                    GathererScope::Since(d) => Scope::Since(d.unix_seconds()),
                },
            };
            let deleted = head.rdm_type == RdmType::RdRequestDeleted;
            if deleted && keyword {
                return Err(RequestError::Unsupported(
                    "rd-request-deleted takes the gatherer query language (all, since DATE)".into(),
                ));
            }
            let max_keys = config.max_order_keys;
            if q.view.order.as_ref().is_some_and(|o| o.0.len() > max_keys) {
                return Err(RequestError::OverLimit(format!(
                    "View-Order has more than {max_keys} keys (this server's limit)"
                )));
            }
            Ok(Some(Query {
                scope,
                deleted,
                view: q.view,
                max_sorted_rows: config.max_sorted_rows,
                max_keyword_hits: config.max_keyword_hits,
            }))
        }
        _ => Ok(None),
    }
}

/// RDM 1.x is what the note defines.
fn check_version(head: &RdmHeader) -> Result<(), RequestError> {
    if head.version.starts_with("1.") || head.version == "1" {
        return Ok(());
    }
    Err(RequestError::Unsupported(format!(
        "RDM-Version {} (this server speaks 1.0)",
        head.version
    )))
}

async fn answer(
    state: &AppState,
    head: RdmHeader,
    query: Option<RdmQuery>,
    host: &str,
    client: Option<IpAddr>,
) -> Result<Response, RequestError> {
    // Everything that needs no catalog first (the fuzz target drives this part too).
    let read = check_request(&state.config, &head, query.as_ref())?;
    let catalog = state.catalog(&head)?;
    let csid = csid_for(host, catalog.name());
    let scope = query.as_ref().and_then(|q| q.scope.clone());
    let later = SystemTime::now() + DESCRIPTION_TTL;
    match head.rdm_type {
        RdmType::StatusRequest => {
            let doc = status::status_document(&server_status(state, host).await?);
            let mut reply = RdmHeader::new(RdmType::StatusResponse);
            reply.catalog = Some(csid);
            Ok(message(
                StatusCode::OK,
                &reply,
                doc.as_bytes(),
                SystemTime::now(),
            ))
        }
        RdmType::ServerDescriptionRequest => {
            // It reads samples through the read connections: counted like a read.
            let _slot = state.reads.acquire(client, &state.config)?;
            let sd = server_description(state, &catalog, host).await?;
            let mut body = Vec::new();
            encode_record(&sd.to_record(), &mut body);
            let reply = RdmHeader::new(RdmType::ServerDescriptionResponse).with_catalog(csid);
            Ok(message(StatusCode::OK, &reply, &body, later))
        }
        RdmType::SchemaDescriptionRequest => {
            let scope = SchemaScope::parse(scope.as_deref().unwrap_or("defined SOIF-Attribute"))?;
            let schema = match &state.config.schema {
                Some(s) => s.clone(),
                None => {
                    let _slot = state.reads.acquire(client, &state.config)?;
                    let c = catalog.clone();
                    let started = RdmDate::from_system_time(state.started);
                    blocking(move || c.layout_schema(started)).await?
                }
            };
            let mut selected = schema.select(&scope)?;
            if let Some(v) = query.as_ref().and_then(|q| q.view.attributes.as_ref()) {
                selected.project(v);
            }
            let mut body = Vec::new();
            encode_record(&selected.to_record(), &mut body);
            let reply = RdmHeader::new(RdmType::SchemaDescriptionResponse).with_catalog(csid);
            Ok(message(StatusCode::OK, &reply, &body, later))
        }
        RdmType::TaxonomyDescriptionRequest => {
            let taxonomy = state.config.taxonomy.as_ref().ok_or_else(|| {
                RequestError::Unsupported(
                    "this server has no taxonomy (start it with --taxonomy FILE)".into(),
                )
            })?;
            let scope = TaxonomyScope::parse(scope.as_deref().unwrap_or("descendant ROOT"))?;
            let picked = taxonomy.select(&scope)?;
            let mut body = Vec::new();
            encode_record(&taxonomy.info().to_record(), &mut body);
            for c in picked {
                encode_record(&c.to_record(), &mut body);
            }
            let reply = RdmHeader::new(RdmType::TaxonomyDescriptionResponse).with_catalog(csid);
            Ok(message(StatusCode::OK, &reply, &body, later))
        }
        RdmType::RdRequest | RdmType::RdRequestDeleted => {
            let query = read.ok_or_else(|| {
                RequestError::Internal("an rd-request without its read plan".into())
            })?;
            let slot = state.reads.acquire(client, &state.config)?;
            let reply = RdmHeader::new(RdmType::RdResponse).with_catalog(csid);
            stream_rds(catalog, query, reply, state.config.body_idle_timeout, slot).await
        }
        other => Err(RequestError::Malformed(format!(
            "{other} is not a request this server answers"
        ))),
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RequestError> + Send + 'static,
) -> Result<T, RequestError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RequestError::Internal(format!("a catalog task failed: {e}")))?
}

enum Chunk {
    More(Bytes),
    Last(Bytes),
    Failed(RequestError),
}

/// Streams an `rd-response`: a blocking task reads the catalog and sends 64 KiB chunks
/// through a small channel (so a slow client slows the reading, nothing piles up). A
/// failure before the first chunk is an ordinary error reply; after it, the chunked body
/// is cut off, which the client sees as an incomplete response.
async fn stream_rds(
    catalog: Arc<Catalog>,
    query: Query,
    reply: RdmHeader,
    stall: Duration,
    slot: ReadSlot,
) -> Result<Response, RequestError> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Chunk>(4);
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        // Held while the catalog is read for this reply (the last chunks wait in the
        // channel and the socket).
        let _slot = slot;
        // A client that stops reading would hold one of the catalog's read connections
        // for good: after `stall` without progress the reply is cut off.
        let send = |chunk: Chunk| {
            rt.block_on(tokio::time::timeout(stall, tx.send(chunk)))
                .is_ok_and(|sent| sent.is_ok())
        };
        let mut buf = Vec::with_capacity(CHUNK + 4096);
        encode_record(&reply.to_record(), &mut buf);
        let header_len = buf.len();
        let result = catalog.query(&query, &mut |record| {
            encode_record(&record, &mut buf);
            if buf.len() >= CHUNK {
                let chunk = Bytes::from(std::mem::replace(
                    &mut buf,
                    Vec::with_capacity(CHUNK + 4096),
                ));
                if !send(Chunk::More(chunk)) {
                    // The client went away or stopped reading.
                    return Ok(Flow::Stop);
                }
            }
            Ok(Flow::Continue)
        });
        let last = match result {
            // The note's own example: "RDM-Type{11}: rd-response RDM-Error-Message{9}: 0
            // results". (Nothing was sent yet: the header is still alone in the buffer.)
            Ok(0) if buf.len() == header_len => {
                let mut head = Vec::new();
                encode_record(&reply.with_error("0 results").to_record(), &mut head);
                Chunk::Last(Bytes::from(head))
            }
            Ok(_) => Chunk::Last(Bytes::from(buf)),
            Err(e) => Chunk::Failed(e),
        };
        send(last);
    });
    let expires = SystemTime::now();
    match rx.recv().await {
        None => Err(RequestError::Internal("the catalog reader stopped".into())),
        Some(Chunk::Failed(e)) => Err(e),
        Some(Chunk::Last(all)) => {
            let n = all.len();
            Ok(rdm_response(
                StatusCode::OK,
                Body::from(all),
                expires,
                Some(n),
            ))
        }
        Some(Chunk::More(first)) => {
            let rest = futures::stream::unfold((rx, false), |(mut rx, done)| async move {
                if done {
                    return None;
                }
                match rx.recv().await {
                    Some(Chunk::More(b)) => Some((Ok(b), (rx, false))),
                    Some(Chunk::Last(b)) => Some((Ok(b), (rx, true))),
                    Some(Chunk::Failed(e)) => Some((Err(std::io::Error::other(e)), (rx, true))),
                    None => Some((
                        Err(std::io::Error::other("the catalog reader stopped")),
                        (rx, true),
                    )),
                }
            });
            let body =
                futures::stream::once(async move { Ok::<_, std::io::Error>(first) }).chain(rest);
            Ok(rdm_response(
                StatusCode::OK,
                Body::from_stream(body),
                expires,
                None,
            ))
        }
    }
}

async fn server_status(state: &AppState, host: &str) -> Result<ServerStatus, RequestError> {
    let mut catalogs = Vec::new();
    for (i, c) in state.catalogs.iter().enumerate() {
        let cat = c.clone();
        let overview = blocking(move || cat.overview()).await?;
        catalogs.push(CatalogStatus {
            csid: csid_for(host, c.name()).to_string(),
            default: i == 0,
            templates: overview
                .tables
                .into_iter()
                .map(|(t, rows)| {
                    (
                        String::from_utf8_lossy(&t.template).into_owned(),
                        t.table,
                        rows,
                    )
                })
                .collect(),
            last_run: overview.last_run,
        });
    }
    Ok(ServerStatus {
        version: env!("CARGO_PKG_VERSION"),
        started: http_date(state.started),
        uptime_seconds: state.started.elapsed().map(|d| d.as_secs()).unwrap_or(0),
        requests: state.requests.load(Ordering::Relaxed),
        failed_requests: state.failed.load(Ordering::Relaxed),
        records_submitted: state.submitted.load(Ordering::Relaxed),
        records_deleted: state.deleted.load(Ordering::Relaxed),
        catalogs,
        schema: state.config.schema.is_some(),
        taxonomy: state.config.taxonomy.as_ref().map(|t| t.info().id.clone()),
    })
}

/// The types this server answers or accepts.
/// (Submissions only when the server has a token; the taxonomy request only with one.)
pub fn supported_types(has_taxonomy: bool, submissions: bool) -> Vec<RdmType> {
    let mut v = vec![RdmType::RdRequest, RdmType::RdRequestDeleted];
    if submissions {
        v.extend([RdmType::RdResponse, RdmType::RdResponseDeleted]);
    }
    v.extend([
        RdmType::ServerDescriptionRequest,
        RdmType::SchemaDescriptionRequest,
    ]);
    if has_taxonomy {
        v.push(RdmType::TaxonomyDescriptionRequest);
    }
    v.push(RdmType::StatusRequest);
    v
}

async fn server_description(
    state: &AppState,
    catalog: &Arc<Catalog>,
    host: &str,
) -> Result<ServerDescription, RequestError> {
    let has_taxonomy = state.config.taxonomy.is_some();
    let mut languages = vec![
        QueryLanguage::Gatherer,
        QueryLanguage::SampleKeyword,
        QueryLanguage::SchemaBasic,
    ];
    if has_taxonomy {
        languages.push(QueryLanguage::TaxonomyBasic);
    }
    let mut sd = ServerDescription::new(
        supported_types(has_taxonomy, state.config.token.is_some()),
        languages,
        RdmDate::from_system_time(state.started),
        RdmDate::from_system_time(SystemTime::now() + DESCRIPTION_TTL),
    );
    sd.url = Some(csid_for(host, catalog.name()).to_string());
    sd.supported_catalogs = state
        .catalogs
        .iter()
        .map(|c| csid_for(host, c.name()))
        .collect();
    sd.description = Some(state.config.description.clone().unwrap_or_else(|| {
        format!(
            "soif catalog {} (Harvest/RDM resource descriptions)",
            catalog.name()
        )
    }));
    sd.maintainer = state.config.maintainer.clone();
    let c = catalog.clone();
    let samples = blocking(move || c.samples(SAMPLES)).await?;
    for (i, rd) in samples.iter().enumerate() {
        let mut soif = Vec::new();
        encode_record(rd, &mut soif);
        sd.samples.push(soif_codecs::Attribute::new(
            format!("RD-Sample-{}", i + 1),
            Bytes::from(soif),
        ));
    }
    Ok(sd)
}

// --- decoding without a network (the fuzz target) ----------------------------------------

thread_local! {
    static DECODE_RUNTIME: Option<tokio::runtime::Runtime> =
        tokio::runtime::Builder::new_current_thread().enable_time().build().ok();
}

/// Runs the server's request decoding over `data` without a network or a catalog: the
/// fuzz target `server_request` (see `fuzz/`). `data[0]` picks the path: bits 0–1 a GET
/// query string (0), a form-encoded POST (1) or an `application/x-rdm` POST (2, 3); bit 2
/// whether the POST carries the right token; bit 3 whether its body is gzip'd; bits 4–7
/// the size of the pieces the body arrives in. The rest is the query string or body.
/// Request bodies go through the same reader, limits, decoder and message reader as
/// `POST /rdm/incoming`, requests through [`check_request`]; a submission's RDs are read
/// to the end (or refused after its header without the token).
pub fn decode_request(data: &[u8]) -> Result<Option<Query>, RequestError> {
    let Some((&flags, rest)) = data.split_first() else {
        return Err(RequestError::Malformed("empty".into()));
    };
    let config = ServerConfig {
        // Small limits, so that the limit paths are reached too.
        max_body: 256 << 10,
        max_record_size: 64 << 10,
        max_open_body: 32 << 10,
        ..ServerConfig::default()
    };
    match flags & 3 {
        0 | 1 => {
            let (head, q) = parse_form(rest)?;
            if !head.rdm_type.is_request() {
                return Err(RequestError::Malformed("not a request".into()));
            }
            check_request(&config, &head, q.as_ref())
        }
        _ => {
            let authorized = flags & 4 != 0;
            let gzip = flags & 8 != 0;
            let piece = 1 + usize::from(flags >> 4) * 97;
            DECODE_RUNTIME.with(|rt| {
                let rt = rt
                    .as_ref()
                    .ok_or_else(|| RequestError::Internal("no runtime".into()))?;
                rt.block_on(decode_rdm_body(&config, rest, authorized, gzip, piece))
            })
        }
    }
}

async fn decode_rdm_body(
    config: &ServerConfig,
    data: &[u8],
    authorized: bool,
    gzip: bool,
    piece: usize,
) -> Result<Option<Query>, RequestError> {
    use tokio::io::AsyncReadExt;
    let bytes = if gzip {
        let mut out = Vec::new();
        async_compression::tokio::bufread::GzipEncoder::new(data)
            .read_to_end(&mut out)
            .await
            .map_err(|e| RequestError::Internal(e.to_string()))?;
        out
    } else {
        data.to_vec()
    };
    let limits = if authorized {
        BodyLimits {
            body: config.max_body,
            record: config.max_record_size,
        }
    } else {
        BodyLimits {
            body: config.max_open_body,
            record: OPEN_HEADER_LIMIT,
        }
    };
    let chunks: Vec<std::io::Result<Bytes>> = bytes
        .chunks(piece.max(1))
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let reader = body_reader(
        StreamReader::new(futures::stream::iter(chunks)),
        gzip,
        limits,
        config.body_idle_timeout,
    );
    let mut body = RdmBody::new(reader, limits);
    let head = body.header().await?;
    match head.rdm_type {
        RdmType::RdResponse | RdmType::RdResponseDeleted => {
            if !authorized {
                return Err(RequestError::Unauthorized("no token".into()));
            }
            check_version(&head)?;
            while body.next_rd().await?.is_some() {}
            Ok(None)
        }
        t if t.is_request() => {
            let query = body.query().await?;
            check_request(config, &head, query.as_ref())
        }
        other => Err(RequestError::Unsupported(other.to_string())),
    }
}
