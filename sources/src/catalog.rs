//! RDM catalogs as inputs: `x-catalog://host:port/name` runs an `rd-request` against the
//! catalog server at `http://host:port/rdm/incoming` and streams the RDs of its reply.
//!
//! ```text
//! soif convert x-catalog://127.0.0.1:8080/books --to jsonl
//! soif convert 'x-catalog://127.0.0.1:8080/books?scope=since+Sun,+06+Nov+1994+08:49:37+GMT' --to jsonl
//! soif convert 'x-catalog://127.0.0.1:8080/books?ql=sample-keyword-ql&scope=netscape&view-hits=10' --to csv
//! soif convert 'x-catalog://127.0.0.1:8080/books?type=rd-request-deleted' --to sqlite -o mirror.db
//! ```
//!
//! Without a query part the request is the note's "send all RD's": `rd-request`, query
//! language `gatherer`, `Scope: all`, the default view. A query part takes the note's GET
//! form parameters (`type`, `ql`, `scope`, `view-attributes`, `view-order`, `view-hits`;
//! see [`soif_codecs::rdm::request_from_form`]) and is sent as a POSTed `@RDMHEADER` +
//! `@RDMQUERY` with `Catalog-Service-ID: x-catalog://host:port/name`.
//!
//! The reply is decoded as it arrives: its `@RDMHEADER` is checked (an `rd-response`; a
//! `status-response` with `RDM-Error-Message` ends the input with that message) and every
//! following object is passed on as a record, never buffered. The RDs of an
//! `rd-request-deleted` reply carry the action `delete`, so that, e.g., a `sqlite` sink
//! deletes them. An HTTP error ends the input with the server's `RDM-Error-Message`.
//!
//! **Incremental reads.** With a resume point (`--state`), the plain "send all RD's" request
//! of an input without a query part becomes two ([`open_since`]): the deletions since the
//! last successful run started (`rd-request-deleted`, `Scope: since DATE`), then the RDs
//! modified since then (the gatherer scope `since DATE`). The gatherer scope reads the RDs'
//! own `Last-Modification-Time`, `Last-Modified` or `Update-Time`: an RD without one is
//! never taken by an incremental run, and one submitted with an old date is missed (ask
//! `soif state` to forget the source to take everything again).
//!
//! A plain `http(s)://host:port/rdm/incoming?type=rd-request&ql=gatherer&scope=all` input
//! (the note's GET form) is read the same way once its reply shows it is RDM
//! ([`is_rdm_reply`], [`open_reply`]): the crate's HTTP input hands such a reply here.

use bytes::Bytes;
use futures::StreamExt;
use soif_codecs::rdm::message::reply_error_message;
use soif_codecs::rdm::{
    request_from_form, Csid, GathererScope, QueryLanguage, RdmDate, RdmHeader, RdmQuery, RdmType,
};
use soif_codecs::run_error::error_chain;
use soif_codecs::soif::{DecoderOptions, SoifDecoder};
use soif_codecs::Action;
use soif_pipeline::source::{InputData, RecordItem, Rejection};
use soif_pipeline::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio_util::codec::FramedRead;
use tokio_util::io::StreamReader;

/// The RDM content type.
pub const RDM_CONTENT_TYPE: &str = "application/x-rdm";

/// The largest record [`spool_to`] copies (the `--max-record-size` default): the decoder
/// reserves a declared value size up to this limit, so it must not trust the server more.
const SPOOL_MAX_RECORD: usize = 64 << 20;

/// How much of an error reply is read for its message.
const MAX_ERROR_REPLY: usize = 64 << 10;

/// True when `input` names a catalog (`x-catalog://…`).
pub fn is_catalog(input: &str) -> bool {
    Csid::is_csid(input)
}

/// A request to a catalog server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogRequest {
    /// `http://host:port/rdm/incoming`.
    pub endpoint: String,
    pub header: RdmHeader,
    pub query: Option<RdmQuery>,
}

impl CatalogRequest {
    /// From `x-catalog://host:port/name[?form parameters]` (see the module doc).
    pub fn parse(input: &str) -> Result<CatalogRequest, Error> {
        let (csid, form) = match input.split_once('?') {
            Some((c, f)) => (c, Some(f)),
            None => (input, None),
        };
        let csid = Csid::parse(csid).map_err(|e| Error::Config(format!("{input}: {e}")))?;
        let pairs: Vec<(String, String)> = form
            .map(|f| form_urlencoded::parse(f.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        let has_type = pairs
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("type") || k.eq_ignore_ascii_case("RDM-Type"));
        let mut all: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if !has_type {
            all.push(("type", "rd-request"));
        }
        let (mut header, query) =
            request_from_form(all).map_err(|e| Error::Config(format!("{input}: {e}")))?;
        if !matches!(
            header.rdm_type,
            RdmType::RdRequest | RdmType::RdRequestDeleted
        ) {
            return Err(Error::Config(format!(
                "{input}: an input runs rd-request or rd-request-deleted, not {} \
                 (use `soif rdm` for other requests)",
                header.rdm_type
            )));
        }
        if header.catalog.is_some() {
            return Err(Error::Config(format!(
                "{input}: the catalog is named by the x-catalog:// URL itself, not by csid="
            )));
        }
        header.catalog = Some(csid.clone());
        if header.query_language.is_none() {
            header.query_language = Some(QueryLanguage::Gatherer);
        }
        let query = Some(query.unwrap_or_else(|| RdmQuery::with_scope("all")));
        Ok(CatalogRequest {
            endpoint: csid.endpoint(),
            header,
            query,
        })
    }

    /// The message body: the `@RDMHEADER`, then the `@RDMQUERY` if any.
    pub fn message(&self) -> Vec<u8> {
        let mut out = Vec::new();
        soif_codecs::soif::encode_record(&self.header.to_record(), &mut out);
        if let Some(q) = &self.query {
            soif_codecs::soif::encode_record(&q.to_record(), &mut out);
        }
        out
    }
}

/// An HTTP client for catalog requests (what `soif rdm` uses).
pub fn client() -> Result<reqwest::Client, Error> {
    reqwest::Client::builder()
        .user_agent(concat!("soif/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Fatal(format!("HTTP client: {e}")))
}

/// Sends `request`; returns the reply if it is a success, else an error with the server's
/// `RDM-Error-Message` (or the HTTP status).
pub async fn send(
    client: &reqwest::Client,
    request: &CatalogRequest,
    name: &str,
) -> Result<reqwest::Response, Error> {
    let resp = client
        .post(&request.endpoint)
        .header(reqwest::header::CONTENT_TYPE, RDM_CONTENT_TYPE)
        .body(request.message())
        .send()
        .await
        .map_err(|e| Error::Fatal(format!("{name}: {}", error_chain(&e))))?;
    check_reply(resp, name).await
}

/// Passes a successful reply on; turns any other into an error with the server's
/// `RDM-Error-Message` (or, without one, the HTTP status alone).
pub async fn check_reply(resp: reqwest::Response, name: &str) -> Result<reqwest::Response, Error> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let mut resp = resp;
    let mut reply = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        reply.extend_from_slice(&chunk[..chunk.len().min(MAX_ERROR_REPLY - reply.len())]);
        if reply.len() >= MAX_ERROR_REPLY {
            break;
        }
    }
    let message = reply_error_message(&reply).unwrap_or_else(|| "(no RDM-Error-Message)".into());
    Err(Error::Fatal(format!(
        "{name}: the catalog server answered HTTP {status}: {message}"
    )))
}

/// True when an `http(s)://` input's reply is an RDM message, to be read like a catalog
/// input's (its `@RDMHEADER` checked and dropped, not passed on as a record): the reply is
/// `application/x-rdm`, or the URL is an RDM endpoint (`…/rdm/incoming`).
pub fn is_rdm_reply(resp: &reqwest::Response) -> bool {
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    is_rdm(content_type, resp.url().path())
}

fn is_rdm(content_type: Option<&str>, path: &str) -> bool {
    let rdm_type = content_type
        .and_then(|ct| ct.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(RDM_CONTENT_TYPE));
    rdm_type || path.trim_end_matches('/').ends_with("/rdm/incoming")
}

/// Reads the reply to a plain `http(s)://…/rdm/incoming?type=…` GET (see [`is_rdm_reply`])
/// as a catalog input's: an HTTP error ends the input with the server's
/// `RDM-Error-Message`; the `@RDMHEADER` is checked and dropped; the RDs of an
/// `rd-request-deleted` (the URL's `type`) or `rd-response-deleted` carry the action
/// `delete`.
pub async fn open_reply(
    resp: reqwest::Response,
    name: Arc<str>,
    max_record_size: usize,
    read: Option<Arc<AtomicU64>>,
) -> Result<InputData, Error> {
    let deleted = requests_deletions(resp.url().query().unwrap_or(""));
    let resp = check_reply(resp, &name).await?;
    Ok(reply_records(resp, name, max_record_size, read, deleted))
}

/// True when the form parameters `query` ask for `rd-request-deleted`.
fn requests_deletions(query: &str) -> bool {
    form_urlencoded::parse(query.as_bytes()).any(|(k, v)| {
        (k.eq_ignore_ascii_case("type") || k.eq_ignore_ascii_case("RDM-Type"))
            && v.trim().eq_ignore_ascii_case("rd-request-deleted")
    })
}

/// Runs the `rd-request` of `input` and returns its RDs as a record stream.
///
/// `read` counts the reply's bytes as they arrive (the progress bar and summary).
pub async fn open(
    client: &reqwest::Client,
    input: &str,
    name: Arc<str>,
    max_record_size: usize,
    read: Option<Arc<AtomicU64>>,
) -> Result<InputData, Error> {
    let request = CatalogRequest::parse(input)?;
    let deleted = request.header.rdm_type == RdmType::RdRequestDeleted;
    let resp = send(client, &request, &name).await?;
    Ok(reply_records(resp, name, max_record_size, read, deleted))
}

/// Whether `request` is the note's plain "send all RD's" (`rd-request`, the gatherer
/// language, `Scope: all`): the request an incremental run narrows to `since` the last
/// run (a request that names its own scope or asks for deletions is left as it is).
pub fn is_incremental(request: &CatalogRequest) -> bool {
    request.header.rdm_type == RdmType::RdRequest
        && request.header.query_language == Some(QueryLanguage::Gatherer)
        && request
            .query
            .as_ref()
            .is_some_and(|q| matches!(q.gatherer_scope(), Ok(Some(GathererScope::All))))
}

/// The resume point of an incremental catalog input: the time (Unix seconds) the last
/// successful read started, as `{"since":SECS}`.
pub fn checkpoint_json(since: i64) -> String {
    serde_json::json!({ "since": since }).to_string()
}

/// Reads [`checkpoint_json`]'s text.
pub fn checkpoint_from_json(text: &str) -> Option<i64> {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()?
        .get("since")?
        .as_i64()
}

/// The incremental read of `input` (an [`is_incremental`] request): first the
/// deletions `since` (an `rd-request-deleted`), then the RDs modified `since` (the
/// gatherer scope `since DATE`), as one record stream — deletions first, so that an RD
/// deleted and then submitted again since the last run is kept. Also returns the time
/// the catalog server's first reply gives in its `Date` header, if any (the caller
/// takes the earlier of it and its own start as the next resume point, so that neither
/// clock running ahead loses a change).
pub async fn open_since(
    client: &reqwest::Client,
    input: &str,
    name: Arc<str>,
    max_record_size: usize,
    read: Option<Arc<AtomicU64>>,
    since: i64,
) -> Result<(InputData, Option<i64>), Error> {
    let base = CatalogRequest::parse(input)?;
    let scope = format!("since {}", RdmDate::from_unix(since).to_http_string());
    let mut deleted = base.clone();
    deleted.header.rdm_type = RdmType::RdRequestDeleted;
    deleted.query = Some(RdmQuery::with_scope(scope.clone()));
    let mut changed = base;
    if let Some(q) = changed.query.as_mut() {
        q.scope = Some(scope);
    }
    let resp = send(client, &deleted, &name).await?;
    let server_date = resp
        .headers()
        .get(reqwest::header::DATE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_secs()).ok());
    let InputData::Records(deletions) =
        reply_records(resp, name.clone(), max_record_size, read.clone(), true)
    else {
        return Err(Error::Fatal("a catalog reply yields records".into()));
    };
    // The second request goes out only once the deletions have been read: one request
    // at a time, as a single catalog input always did.
    let client = client.clone();
    let rest = futures::stream::once(async move {
        match send(&client, &changed, &name).await {
            Ok(resp) => match reply_records(resp, name, max_record_size, read, false) {
                InputData::Records(s) => s,
                _ => futures::stream::empty().boxed(),
            },
            Err(e) => futures::stream::iter([Err(e)]).boxed(),
        }
    })
    .flatten();
    Ok((
        InputData::Records(deletions.chain(rest).boxed()),
        server_date,
    ))
}

/// The records of a successful reply: its `@RDMHEADER` checked and dropped, its RDs
/// decoded as they arrive (marked `delete` when `deleted` or the reply says
/// `rd-response-deleted`).
fn reply_records(
    resp: reqwest::Response,
    name: Arc<str>,
    max_record_size: usize,
    read: Option<Arc<AtomicU64>>,
    deleted: bool,
) -> InputData {
    let body = resp
        .bytes_stream()
        .map(move |r| {
            if let (Ok(b), Some(read)) = (&r, &read) {
                read.fetch_add(b.len() as u64, Ordering::Relaxed);
            }
            r.map_err(std::io::Error::other)
        })
        .boxed();
    let mut opts = DecoderOptions::with_max_record_size(max_record_size);
    opts.input = Some(name.clone());
    let frames =
        FramedRead::with_capacity(StreamReader::new(body), SoifDecoder::new(opts), 64 << 10);
    let state = Reply {
        frames,
        header_seen: false,
        done: false,
        deleted,
        name,
    };
    InputData::Records(Box::pin(futures::stream::unfold(
        state,
        |mut s| async move {
            let item = s.next_item().await?;
            Some((item, s))
        },
    )))
}

type Frames = FramedRead<
    StreamReader<futures::stream::BoxStream<'static, std::io::Result<Bytes>>, Bytes>,
    SoifDecoder,
>;

struct Reply {
    frames: Frames,
    header_seen: bool,
    done: bool,
    deleted: bool,
    name: Arc<str>,
}

impl Reply {
    async fn next_item(&mut self) -> Option<RecordItem> {
        if self.done {
            return None;
        }
        loop {
            let item = match self.frames.next().await {
                None => {
                    self.done = true;
                    if !self.header_seen {
                        return Some(Err(Error::Fatal(format!(
                            "{}: the catalog server's reply is empty (no @RDMHEADER)",
                            self.name
                        ))));
                    }
                    return None;
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(Error::io(self.name.to_string(), e)));
                }
                Some(Ok(item)) => item,
            };
            if !self.header_seen {
                self.header_seen = true;
                let record = match item {
                    Ok(r) => r,
                    Err(e) => {
                        self.done = true;
                        return Some(Err(Error::Fatal(format!(
                            "{}: the reply does not start with an @RDMHEADER: {e}",
                            self.name
                        ))));
                    }
                };
                match RdmHeader::from_record(&record) {
                    Ok(h)
                        if matches!(
                            h.rdm_type,
                            RdmType::RdResponse | RdmType::RdResponseDeleted
                        ) =>
                    {
                        if h.rdm_type == RdmType::RdResponseDeleted {
                            self.deleted = true;
                        }
                        continue;
                    }
                    Ok(h) => {
                        self.done = true;
                        return Some(Err(Error::Fatal(format!(
                            "{}: the server answered {}{}",
                            self.name,
                            h.rdm_type,
                            h.error_message
                                .map(|m| format!(": {m}"))
                                .unwrap_or_default()
                        ))));
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(Err(Error::Fatal(format!(
                            "{}: the reply does not start with an RDM header: {e}",
                            self.name
                        ))));
                    }
                }
            }
            return Some(Ok(match item {
                Ok(mut record) => {
                    if self.deleted {
                        record.action = Some(Action::Delete);
                    }
                    Ok(record)
                }
                Err(e) => Err(Rejection::from(e)),
            }));
        }
    }
}

/// Copies the RDs of `input`'s reply to `out` as canonical SOIF (deletions inside
/// `@DELETE { }`), for a second pass over a catalog input (the CSV column pass). Records
/// the server sent but that cannot be decoded are left to the second pass's reading of the
/// copy: they are written as their original bytes.
pub async fn spool_to(
    client: &reqwest::Client,
    input: &str,
    out: &mut (impl tokio::io::AsyncWrite + Unpin),
) -> Result<(), Error> {
    let data = open(client, input, Arc::from(input), SPOOL_MAX_RECORD, None).await?;
    spool_records(data, input, out).await
}

/// Copies the reply to a plain `http(s)://` RDM GET (see [`is_rdm_reply`]) to `out` as
/// [`spool_to`] does.
pub async fn spool_reply(
    resp: reqwest::Response,
    input: &str,
    out: &mut (impl tokio::io::AsyncWrite + Unpin),
) -> Result<(), Error> {
    let data = open_reply(resp, Arc::from(input), SPOOL_MAX_RECORD, None).await?;
    spool_records(data, input, out).await
}

pub(crate) async fn spool_records(
    data: InputData,
    input: &str,
    out: &mut (impl tokio::io::AsyncWrite + Unpin),
) -> Result<(), Error> {
    use tokio::io::AsyncWriteExt;
    let InputData::Records(mut stream) = data else {
        return Err(Error::Fatal("a catalog input yields records".into()));
    };
    let mut encoder = soif_codecs::soif::SoifEncoder::new();
    let mut buf = Vec::new();
    let write_err = |e| Error::io(format!("copying {input}"), e);
    while let Some(item) = stream.next().await {
        buf.clear();
        match item? {
            Ok(record) => encoder.encode(&record, &mut buf),
            Err(rejection) => {
                encoder.finish(&mut buf);
                if let Some(raw) = rejection.raw {
                    buf.extend_from_slice(&raw);
                }
            }
        }
        out.write_all(&buf).await.map_err(write_err)?;
    }
    buf.clear();
    encoder.finish(&mut buf);
    out.write_all(&buf).await.map_err(write_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use soif_codecs::rdm::{GathererScope, ViewHits};

    #[test]
    fn requests_from_catalog_urls() {
        let r = CatalogRequest::parse("x-catalog://127.0.0.1:8080/books").unwrap();
        assert_eq!(r.endpoint, "http://127.0.0.1:8080/rdm/incoming");
        assert_eq!(r.header.rdm_type, RdmType::RdRequest);
        assert_eq!(r.header.query_language, Some(QueryLanguage::Gatherer));
        assert_eq!(r.header.catalog.as_ref().unwrap().name, "books");
        let q = r.query.unwrap();
        assert_eq!(q.gatherer_scope().unwrap(), Some(GathererScope::All));

        let r = CatalogRequest::parse(
            "x-catalog://h:1/c?type=rd-request-deleted&scope=since+Sun,+06+Nov+1994+08:49:37+GMT&view-hits=11..20",
        )
        .unwrap();
        assert_eq!(r.header.rdm_type, RdmType::RdRequestDeleted);
        let q = r.query.unwrap();
        assert!(matches!(
            q.gatherer_scope().unwrap(),
            Some(GathererScope::Since(_))
        ));
        assert_eq!(
            q.view.hits,
            Some(ViewHits::Range {
                first: 11,
                last: 20
            })
        );

        for bad in [
            "x-catalog://h:1/c?type=status-request",
            "x-catalog://h:1/c?view-hits=ten",
            "x-catalog://h:1/c?csid=x-catalog://h:2/d",
            "x-catalog://h:x/c",
        ] {
            assert!(CatalogRequest::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rdm_replies_by_content_type_or_endpoint() {
        assert!(is_rdm(Some("application/x-rdm"), "/"));
        assert!(is_rdm(Some("Application/X-RDM; charset=us-ascii"), "/x"));
        assert!(is_rdm(None, "/rdm/incoming"));
        assert!(is_rdm(Some("text/plain"), "/a/rdm/incoming/"));
        assert!(!is_rdm(Some("text/plain"), "/All-Templates.gz"));
        assert!(!is_rdm(None, "/rdm/incoming.soif"));
        assert!(requests_deletions("type=rd-request-deleted&scope=all"));
        assert!(requests_deletions("RDM-Type=RD-Request-Deleted"));
        assert!(!requests_deletions(
            "type=rd-request&scope=rd-request-deleted"
        ));
    }

    #[test]
    fn the_message_is_header_then_query() {
        let r = CatalogRequest::parse("x-catalog://h:1/c").unwrap();
        let text = String::from_utf8(r.message()).unwrap();
        assert!(text.starts_with("@RDMHEADER { -\n"), "{text}");
        assert!(
            text.contains("Catalog-Service-ID{17}:\tx-catalog://h:1/c\n"),
            "{text}"
        );
        assert!(
            text.contains("@RDMQUERY { -\nScope{3}:\tall\n}\n"),
            "{text}"
        );
    }
}
