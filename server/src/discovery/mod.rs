//! The documents that let the web follow a catalog: `/robots.txt` and a sitemap per
//! catalog ([`sitemap`]), and ResourceSync (ANSI/NISO Z39.99-2017: [`resourcesync`]).
//!
//! | URL | document |
//! |---|---|
//! | `/robots.txt` | robots rules naming every catalog's sitemap |
//! | `/NAME/sitemap.xml` (`?part=K`) | the record pages, `lastmod` from their datestamps |
//! | `/.well-known/resourcesync` | the ResourceSync source description (every catalog) |
//! | `/NAME/.well-known/resourcesync` | the same for one catalog (what clients try first) |
//! | `/NAME/capabilitylist.xml` | the catalog's capabilities |
//! | `/NAME/resourcelist.xml` (`?part=K`) | every record, as `record.soif` |
//! | `/NAME/changelist.xml` | the latest changes: records changed, deletions |
//!
//! Lists come from the catalog's datestamps (`soif_store::datestamps`): when each record
//! last changed, and when each deletion happened. A sitemap or resource list holds at
//! most `--sitemap-size` URLs (default and most: 50,000, the sitemaps protocol's limit); a
//! longer one is a sitemap index of parts `?part=1`, `?part=2`, …, each found by its
//! position without reading the parts before it. A document streams from
//! the catalog 64 KiB at a time while one of the client's read slots is held
//! (`--max-reads-per-client`, `--max-reads`), as `rd-request`s and OAI-PMH lists do
//! (`stream`).
//!
//! ```text
//! $ curl http://127.0.0.1:8080/robots.txt
//! User-agent: *
//! Disallow: /rdm/
//! Sitemap: http://127.0.0.1:8080/catalog/sitemap.xml
//! ```

pub mod resourcesync;
pub mod sitemap;

use crate::catalog::Catalog;
use crate::config::MAX_SITEMAP_URLS;
use crate::error::RequestError;
use crate::state::{AppState, ClientAddr};
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt as _;
use soif_codecs::rules::text::escape_text;
use soif_store::datestamps::{listing_count, listing_page, nth_key, Entry, Listing};
use std::sync::Arc;

/// The longest URL the sitemaps schema allows in a `<loc>`: an entry whose URL is
/// longer is left out of the lists.
pub const MAX_LOC: usize = 2048;

/// The sitemaps namespace, and ResourceSync's.
pub const SITEMAP_NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";
pub const RS_NS: &str = "http://www.openarchives.org/rs/terms/";

/// Bytes gathered before they are sent.
const CHUNK: usize = 64 << 10;

/// Entries read from the catalog at a time.
const BATCH: usize = 1000;

/// The server's public root URL: `--public-url`, else `http://` and the request's `Host`.
pub(crate) fn public_root(state: &AppState, headers: &HeaderMap) -> String {
    match &state.config().oai.public_url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_graphic()))
                .unwrap_or("localhost");
            format!("http://{host}")
        }
    }
}

/// A plain-text reply (errors).
pub(crate) fn plain(status: StatusCode, message: String) -> Response {
    let mut r = (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message + "\n",
    )
        .into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    }
    r
}

/// Which part of a list a request asks for: `?part=K` (from 1), or the whole list.
pub(crate) fn part_of(query: Option<&str>) -> Result<Option<u64>, String> {
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if k == "part" {
            return match v.parse::<u64>() {
                Ok(n) if n >= 1 => Ok(Some(n)),
                _ => Err(format!("part must be a number from 1, not {v:?}")),
            };
        }
    }
    Ok(None)
}

/// Where a streamed document is written: text gathered into chunks for the client.
pub(crate) struct Sink {
    buf: String,
    send: Box<dyn FnMut(Chunk) -> bool + Send>,
}

impl Sink {
    /// Adds `s`; `Err` when the client went away or stopped reading.
    pub(crate) fn push(&mut self, s: &str) -> Result<(), DocError> {
        self.buf.push_str(s);
        if self.buf.len() >= CHUNK {
            let chunk = Bytes::from(std::mem::take(&mut self.buf));
            if !(self.send)(Chunk::More(chunk)) {
                return Err(DocError(
                    StatusCode::REQUEST_TIMEOUT,
                    "the client stopped reading".into(),
                ));
            }
        }
        Ok(())
    }
}

pub(crate) enum Chunk {
    More(Bytes),
    Last(Bytes),
    Failed(DocError),
}

/// Why a document could not be written: its status and message.
#[derive(Debug)]
pub(crate) struct DocError(pub(crate) StatusCode, pub(crate) String);

impl DocError {
    /// The error as a plain-text reply.
    pub(crate) fn reply(self) -> Response {
        plain(self.0, self.1)
    }
}

impl From<RequestError> for DocError {
    fn from(e: RequestError) -> DocError {
        DocError(e.status(), e.to_string())
    }
}

/// What a document is written from: the catalog, the root URL and the catalog's name.
pub(crate) struct Source {
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) root: String,
    pub(crate) name: String,
    /// URLs per list (`--sitemap-size`).
    pub(crate) size: u64,
}

impl Source {
    /// How many parts a listing is cut into (0 or 1: no index needed).
    pub(crate) fn parts(&self, listing: Listing) -> Result<u64, RequestError> {
        let n = self
            .catalog
            .read(|s| listing_count(s, listing))?
            .map_err(store_err)?;
        Ok(n.div_ceil(self.size))
    }

    /// Writes `item` for each entry of part `part` (from 1) of `listing`; how many
    /// entries `item` wrote something for.
    pub(crate) fn entries(
        &self,
        listing: Listing,
        part: u64,
        sink: &mut Sink,
        item: impl Fn(&Entry, &mut String),
    ) -> Result<u64, DocError> {
        let skip = (part - 1) * self.size;
        let mut after: Option<(Bytes, Bytes)> = None;
        if skip > 0 {
            after = self
                .catalog
                .read(|s| nth_key(s, listing, skip - 1))?
                .map_err(store_err)?;
            if after.is_none() {
                return Ok(0);
            }
        }
        let mut written = 0;
        let mut left = self.size;
        let mut line = String::new();
        while left > 0 {
            let n = usize::try_from(left).unwrap_or(BATCH).min(BATCH);
            let page = self
                .catalog
                .read(|s| {
                    let at = after.as_ref().map(|(t, u)| (t.as_ref(), u.as_ref()));
                    listing_page(s, listing, at, n)
                })?
                .map_err(store_err)?;
            let Some(last) = page.last() else {
                break;
            };
            after = Some((last.template.clone(), last.url.clone()));
            left = left.saturating_sub(page.len() as u64);
            for e in &page {
                line.clear();
                item(e, &mut line);
                if !line.is_empty() {
                    written += 1;
                    sink.push(&line)?;
                }
            }
        }
        Ok(written)
    }

    /// The absolute URL of a record's page (`suffix` "") or form (".soif"), escaped for
    /// XML; `None` when longer than the sitemaps schema allows.
    pub(crate) fn record_loc(&self, e: &Entry, suffix: &str) -> Option<String> {
        let href = crate::web::record_href(&self.name, &e.template, &e.url, suffix);
        let url = format!("{}{href}", self.root);
        (url.len() <= MAX_LOC).then(|| escape_text(&url))
    }

    /// The absolute URL of the catalog's own page (`/NAME`), escaped for XML.
    pub(crate) fn home(&self) -> String {
        escape_text(&format!(
            "{}/{}",
            self.root,
            crate::web::encode_component(self.name.as_bytes())
        ))
    }

    /// The absolute URL of one of the catalog's documents, escaped for XML.
    pub(crate) fn doc(&self, file: &str, part: Option<u64>) -> String {
        let mut url = format!(
            "{}/{}/{file}",
            self.root,
            crate::web::encode_component(self.name.as_bytes())
        );
        if let Some(k) = part {
            url.push_str(&format!("?part={k}"));
        }
        escape_text(&url)
    }
}

fn store_err(e: soif_store::StoreError) -> RequestError {
    RequestError::Internal(e.to_string())
}

/// Answers with a document written by `write` on a blocking thread while one of the
/// client's read slots is held, streamed 64 KiB at a time through a small channel (a
/// slow client slows the reading; one that stops reading for `--stall-timeout` is cut
/// off). A failure before the first chunk is an error reply; after it, the body is cut
/// off.
pub(crate) async fn stream(
    state: Arc<AppState>,
    client: Option<ClientAddr>,
    content_type: &'static str,
    write: impl FnOnce(&mut Sink) -> Result<(), DocError> + Send + 'static,
) -> Response {
    state.count_request();
    let slot = match state.acquire_read(client.map(|c| c.0)) {
        Ok(s) => s,
        Err(e) => {
            state.count_failure();
            return plain(e.status(), e.to_string());
        }
    };
    let stall = state.config().body_idle_timeout;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Chunk>(4);
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let tx2 = tx.clone();
        let rt2 = rt.clone();
        let send = move |chunk: Chunk| {
            rt2.block_on(tokio::time::timeout(stall, tx2.send(chunk)))
                .is_ok_and(|sent| sent.is_ok())
        };
        let mut sink = Sink {
            buf: String::new(),
            send: Box::new(send),
        };
        let last = match write(&mut sink) {
            Ok(()) => Chunk::Last(Bytes::from(std::mem::take(&mut sink.buf))),
            Err(e) => Chunk::Failed(e),
        };
        let _ = rt.block_on(tokio::time::timeout(stall, tx.send(last)));
    });
    let ok =
        |body: Body| (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response();
    match rx.recv().await {
        None => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the catalog reader stopped".into(),
        ),
        Some(Chunk::Failed(DocError(status, message))) => {
            if status.is_server_error() {
                state.count_failure();
            }
            plain(status, message)
        }
        Some(Chunk::Last(all)) => ok(Body::from(all)),
        Some(Chunk::More(first)) => {
            let rest = futures::stream::unfold((rx, false), |(mut rx, done)| async move {
                if done {
                    return None;
                }
                match rx.recv().await {
                    Some(Chunk::More(b)) => Some((Ok(b), (rx, false))),
                    Some(Chunk::Last(b)) => Some((Ok(b), (rx, true))),
                    Some(Chunk::Failed(e)) => Some((Err(std::io::Error::other(e.1)), (rx, true))),
                    None => Some((
                        Err(std::io::Error::other("the catalog reader stopped")),
                        (rx, true),
                    )),
                }
            });
            let body =
                futures::stream::once(async move { Ok::<_, std::io::Error>(first) }).chain(rest);
            ok(Body::from_stream(body))
        }
    }
}

/// The catalog a `/NAME/…` request names, with what its documents are written from.
pub(crate) fn source(
    state: &AppState,
    name: &str,
    headers: &HeaderMap,
) -> Result<Source, DocError> {
    let (_, catalog) = state.catalog_named(Some(name)).ok_or_else(|| {
        DocError(
            StatusCode::NOT_FOUND,
            format!("no catalog named {name:?} on this server"),
        )
    })?;
    Ok(Source {
        catalog,
        root: public_root(state, headers),
        name: name.to_string(),
        size: state.config().sitemap_size.clamp(1, MAX_SITEMAP_URLS) as u64,
    })
}

/// How a list of the live records is written: its file (`sitemap.xml`,
/// `resourcelist.xml`), the ResourceSync lines its root element starts with (`None` for
/// a plain sitemap), and which form of each record it lists (`""` the page, `".soif"`).
pub(crate) struct ListShape {
    pub(crate) file: &'static str,
    pub(crate) rs: Option<String>,
    pub(crate) suffix: &'static str,
}

/// Answers `GET /NAME/FILE` (`?part=K`): the catalog's live records as `shape` says, a
/// sitemap index of parts when there are more than `--sitemap-size`.
pub(crate) async fn live_list(
    state: Arc<AppState>,
    name: String,
    client: Option<ClientAddr>,
    query: Option<String>,
    headers: HeaderMap,
    shape: impl FnOnce(&Source) -> ListShape + Send + 'static,
) -> Response {
    let src = match source(&state, &name, &headers) {
        Ok(s) => s,
        Err(e) => return e.reply(),
    };
    let asked = match part_of(query.as_deref()) {
        Ok(p) => p,
        Err(m) => return plain(StatusCode::BAD_REQUEST, m),
    };
    stream(
        state,
        client,
        "application/xml; charset=utf-8",
        move |sink| {
            let parts = src.parts(Listing::Live)?;
            let part = checked_part(asked, parts)?;
            let shape = shape(&src);
            let ns = match shape.rs {
                Some(_) => format!(" xmlns:rs=\"{RS_NS}\""),
                None => String::new(),
            };
            let mut head = shape.rs.clone().unwrap_or_default();
            sink.push("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")?;
            if part.is_none() && parts > 1 {
                if parts > MAX_SITEMAP_URLS as u64 {
                    return Err(DocError(
                        StatusCode::INSUFFICIENT_STORAGE,
                        format!("the list needs {parts} parts: more than one index holds"),
                    ));
                }
                sink.push(&format!(
                    "<sitemapindex xmlns=\"{SITEMAP_NS}\"{ns}>\n{head}"
                ))?;
                for k in 1..=parts {
                    sink.push(&format!(
                        "<sitemap><loc>{}</loc></sitemap>\n",
                        src.doc(shape.file, Some(k))
                    ))?;
                }
                return sink.push("</sitemapindex>\n");
            }
            if shape.rs.is_some() && part.is_some() {
                head.push_str(&format!(
                    "<rs:ln rel=\"index\" href=\"{}\"/>\n",
                    src.doc(shape.file, None)
                ));
            }
            sink.push(&format!("<urlset xmlns=\"{SITEMAP_NS}\"{ns}>\n{head}"))?;
            let written = src.entries(Listing::Live, part.unwrap_or(1), sink, |e, out| {
                if let Some(loc) = src.record_loc(e, shape.suffix) {
                    let ds = &e.datestamp;
                    out.push_str(&format!(
                        "<url><loc>{loc}</loc><lastmod>{ds}</lastmod></url>\n"
                    ));
                }
            })?;
            if written == 0 && shape.rs.is_none() {
                // The sitemaps schema wants at least one <url>: a catalog without a
                // record page lists its own page (a resource list may be empty).
                sink.push(&format!("<url><loc>{}</loc></url>\n", src.home()))?;
            }
            sink.push("</urlset>\n")
        },
    )
    .await
}

/// The part a request asks for, checked against how many there are: `Ok(None)` for the
/// whole list when it needs no index.
pub(crate) fn checked_part(asked: Option<u64>, parts: u64) -> Result<Option<u64>, DocError> {
    match asked {
        Some(k) if k > parts.max(1) => Err(DocError(
            StatusCode::NOT_FOUND,
            format!("the list has {} part(s), not {k}", parts.max(1)),
        )),
        other => Ok(other),
    }
}
