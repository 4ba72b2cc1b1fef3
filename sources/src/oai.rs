//! OAI-PMH repositories as inputs: `oai+http://HOST/PATH?metadataPrefix=oai_dc` (or
//! `oai+https://…`) harvests the repository at `http(s)://HOST/PATH` with `ListRecords`.
//!
//! ```text
//! soif convert 'oai+http://127.0.0.1:8080/oai?metadataPrefix=soif' --to sqlite -o mirror.db
//! soif convert 'oai+https://example.org/oai?metadataPrefix=oai_dc&set=physics&from=2026-01-01' --to jsonl
//! ```
//!
//! The query part takes the harvest's arguments: `metadataPrefix` (`oai_dc`, the default,
//! or `soif`), `set`, `from` and `until`, as the protocol spells them (dates in the
//! repository's granularity); anything else is a usage error.
//!
//! **Records.** Every item of the list becomes one record:
//! - `oai_dc`: a `Dublin-Core` record (RFC 2655 Appendix C) whose URL is the item's OAI
//!   identifier (what a later deletion names) and whose attributes are the `dc:` elements
//!   in document order, named by the appendix — `dc:title` is `TITLE`: the `dc` crosswalk's
//!   element table ([`soif_codecs::rules::dc::ELEMENTS`]) read backwards. An
//!   element given several times is numbered as in the appendix's example (`CREATOR-1`,
//!   `CREATOR-2`); once, it is plain (`TITLE`). Elements outside Dublin Core's namespace
//!   are left out.
//! - `soif` (the format of `soif serve`'s provider, `soif.xsd`): the original record,
//!   byte for byte — template, URL and every attribute in order, base64 values decoded.
//! - a header with `status="deleted"`: a deletion (the action of a record inside
//!   `@DELETE { … }`), which the `sqlite` sink applies as a `DELETE` and the `rdm` sink
//!   sends as `rd-response-deleted`. Under `oai_dc` it names `Dublin-Core` and the
//!   identifier; under `soif` the identifier is read back into its template and URL
//!   (`oai:REPOSITORY:TEMPLATE/URL`, as the provider writes it).
//!
//! An item whose metadata cannot be read (bad base64, no metadata) is rejected with the
//! page, byte and identifier, under `--on-error` like any bad record, its XML as the
//! quarantined bytes; a page that is not well-formed XML ends the input.
//!
//! **Pages.** `ListRecords` is followed through its resumption tokens one page at a time:
//! a page is read whole (at most [`MAX_PAGE_BYTES`]), parsed, and its records handed on
//! before the next page is asked for, so memory is bounded by one page whatever the size
//! of the repository. A token seen twice in a row ends the input with an error rather than
//! looping. `noRecordsMatch` is an empty harvest, not an error; any other OAI-PMH error
//! ends the input with its code and message, naming the page's URL.
//!
//! **Retries.** A connection error, a broken-off reply, a timeout or an HTTP 5xx is
//! retried [`RETRIES`] times with exponential backoff (1 s, 2 s, 4 s, … at most 30 s); a
//! `503` or `429` with `Retry-After` (seconds or an HTTP date) is retried after that
//! long, at most [`MAX_RETRY_AFTER`], as the protocol's flow control asks of harvesters.
//! Each retry is reported as a warning; the final error names the URL, the page number and
//! the last failure.
//!
//! **Incremental harvests.** The harvest's resume point is the `responseDate` of its
//! first page, in the repository's granularity (from `Identify`): the next harvest asks
//! `from` it. `from` is inclusive, so the items of that second (or day) come again, and,
//! being upserts keyed on their URL, do no harm. [`OaiCheckpoint`] holds it; the caller
//! hands it back as the next run's resume point (`--state` does). A harvest with `until`
//! has no resume point (its window is fixed). Deletions reach the mirror only when the
//! repository keeps them (`deletedRecord` `persistent`, or `transient` within its
//! retention).

use crate::notices::Notices;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::{Namespace, ResolveResult};
use quick_xml::NsReader;
use soif_codecs::rules::dc::{ELEMENTS, TEMPLATE as DC_TEMPLATE};
use soif_codecs::{Action, Position, Record};
use soif_pipeline::error::error_chain;
use soif_pipeline::retry::retry_after;
use soif_pipeline::source::{InputData, RecordItem, Rejection};
use soif_pipeline::Error;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The OAI-PMH 2.0 namespace.
pub const OAI_NS: &str = "http://www.openarchives.org/OAI/2.0/";
/// Dublin Core's element namespace (the `dc:` of `oai_dc`).
pub const DC_NS: &str = "http://purl.org/dc/elements/1.1/";
/// The `soif` metadata format's namespace (`soif serve`'s `soif.xsd`).
pub const SOIF_NS: &str = "urn:x-soif:record:1";

/// Retries of one request after the first attempt.
pub const RETRIES: u32 = 6;
/// The longest wait a `Retry-After` gets (a longer one is cut to this).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);
/// The largest page accepted.
pub const MAX_PAGE_BYTES: usize = 256 << 20;
/// The longest one request (send, read the whole page) may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// The first backoff wait; it doubles with each retry up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// True when `input` names an OAI-PMH repository (`oai+http://…`, `oai+https://…`).
pub fn is_oai(input: &str) -> bool {
    let lower = input.get(..12).unwrap_or(input).to_ascii_lowercase();
    lower.starts_with("oai+http://") || lower.starts_with("oai+https://")
}

/// The metadata formats this source reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetadataFormat {
    /// Simple Dublin Core: `Dublin-Core` records.
    OaiDc,
    /// soif's own format: the original records.
    Soif,
}

impl MetadataFormat {
    pub fn prefix(self) -> &'static str {
        match self {
            MetadataFormat::OaiDc => "oai_dc",
            MetadataFormat::Soif => "soif",
        }
    }
}

/// A repository's datestamp granularity (`Identify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Granularity {
    /// `YYYY-MM-DD`.
    Day,
    /// `YYYY-MM-DDThh:mm:ssZ`.
    Second,
}

impl Granularity {
    /// A `responseDate` (`YYYY-MM-DDThh:mm:ssZ`, sometimes with fractions) in this
    /// granularity, or `None` when it is not a date.
    pub fn format(self, response_date: &str) -> Option<String> {
        let d = response_date.trim();
        let b = d.as_bytes();
        let digits =
            |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
        let date_ok = digits(0..4)
            && b.get(4) == Some(&b'-')
            && digits(5..7)
            && b.get(7) == Some(&b'-')
            && digits(8..10);
        if !date_ok {
            return None;
        }
        match self {
            Granularity::Day => Some(d[..10].to_string()),
            Granularity::Second => {
                let time_ok = b.get(10) == Some(&b'T')
                    && digits(11..13)
                    && b.get(13) == Some(&b':')
                    && digits(14..16)
                    && b.get(16) == Some(&b':')
                    && digits(17..19)
                    && d.ends_with('Z');
                time_ok.then(|| format!("{}Z", &d[..19]))
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Granularity::Day => "YYYY-MM-DD",
            Granularity::Second => "YYYY-MM-DDThh:mm:ssZ",
        }
    }

    fn parse(s: &str) -> Option<Granularity> {
        match s.trim() {
            "YYYY-MM-DD" => Some(Granularity::Day),
            "YYYY-MM-DDThh:mm:ssZ" => Some(Granularity::Second),
            _ => None,
        }
    }
}

/// Where the next harvest starts: `from` (already in the repository's granularity) and
/// the granularity (so that the next run need not ask `Identify` again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OaiCheckpoint {
    pub from: String,
    pub granularity: Granularity,
}

impl OaiCheckpoint {
    /// As stored by `--state`: `{"from":"…","granularity":"…"}`.
    pub fn to_json(&self) -> String {
        serde_json::json!({"from": self.from, "granularity": self.granularity.name()}).to_string()
    }

    /// Reads [`OaiCheckpoint::to_json`]'s text.
    pub fn from_json(text: &str) -> Option<OaiCheckpoint> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        Some(OaiCheckpoint {
            from: v.get("from")?.as_str()?.to_string(),
            granularity: Granularity::parse(v.get("granularity")?.as_str()?)?,
        })
    }
}

/// A harvest: the repository and the arguments of its first `ListRecords`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OaiRequest {
    /// `http(s)://HOST/PATH`, the repository's base URL.
    pub base_url: String,
    pub format: MetadataFormat,
    pub set: Option<String>,
    pub from: Option<String>,
    pub until: Option<String>,
}

impl OaiRequest {
    /// From `oai+http(s)://HOST/PATH[?metadataPrefix=…&set=…&from=…&until=…]`.
    pub fn parse(input: &str) -> Result<OaiRequest, Error> {
        if !is_oai(input) {
            return Err(Error::Config(format!(
                "{input}: an OAI-PMH input starts with oai+http:// or oai+https://"
            )));
        }
        let rest = &input[4..];
        let (base, query) = match rest.split_once('?') {
            Some((b, q)) => (b, q),
            None => (rest, ""),
        };
        let host = base.split("://").nth(1).unwrap_or("");
        if host.is_empty() || host.starts_with('/') {
            return Err(Error::Config(format!("{input}: no host")));
        }
        let mut req = OaiRequest {
            base_url: base.to_string(),
            format: MetadataFormat::OaiDc,
            set: None,
            from: None,
            until: None,
        };
        let mut seen: Vec<String> = Vec::new();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            if seen.iter().any(|s| *s == k) {
                return Err(Error::Config(format!("{input}: {k} is given twice")));
            }
            seen.push(k.to_string());
            match k.as_ref() {
                "metadataPrefix" => {
                    req.format = match v.as_ref() {
                        "oai_dc" => MetadataFormat::OaiDc,
                        "soif" => MetadataFormat::Soif,
                        other => {
                            return Err(Error::Config(format!(
                                "{input}: metadataPrefix {other:?}: this source reads oai_dc \
                                 (as Dublin-Core records) and soif (soif serve's own format)"
                            )))
                        }
                    }
                }
                "set" => req.set = Some(v.into_owned()),
                "from" => req.from = Some(v.into_owned()),
                "until" => req.until = Some(v.into_owned()),
                other => {
                    return Err(Error::Config(format!(
                        "{input}: unknown argument {other:?} (metadataPrefix, set, from, until)"
                    )))
                }
            }
        }
        Ok(req)
    }

    /// The first `ListRecords` URL, starting at `from` (the resume point, else the
    /// input's own `from`).
    pub fn first_url(&self, from: Option<&str>) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        q.append_pair("verb", "ListRecords");
        q.append_pair("metadataPrefix", self.format.prefix());
        if let Some(f) = from.or(self.from.as_deref()) {
            q.append_pair("from", f);
        }
        if let Some(u) = &self.until {
            q.append_pair("until", u);
        }
        if let Some(s) = &self.set {
            q.append_pair("set", s);
        }
        format!("{}?{}", self.base_url, q.finish())
    }

    /// The URL that resumes a list with `token`.
    pub fn token_url(&self, token: &str) -> String {
        let q = form_urlencoded::Serializer::new(String::new())
            .append_pair("verb", "ListRecords")
            .append_pair("resumptionToken", token)
            .finish();
        format!("{}?{q}", self.base_url)
    }

    fn identify_url(&self) -> String {
        format!("{}?verb=Identify", self.base_url)
    }
}

/// What [`open`] needs besides the input.
#[derive(Clone)]
pub struct HarvestOptions {
    /// The previous harvest's checkpoint: this one asks `from` it.
    pub resume: Option<OaiCheckpoint>,
    /// Called with the new checkpoint once the whole list has been read.
    pub done: Option<Arc<dyn Fn(OaiCheckpoint) + Send + Sync>>,
    /// Counts the bytes of the pages as they arrive (progress, summary).
    pub read: Option<Arc<AtomicU64>>,
    pub notices: Option<Notices>,
    /// The first backoff wait (1 s); it doubles with each retry, up to 30 s.
    pub first_backoff: Duration,
}

impl Default for HarvestOptions {
    fn default() -> Self {
        HarvestOptions {
            resume: None,
            done: None,
            read: None,
            notices: None,
            first_backoff: FIRST_BACKOFF,
        }
    }
}

/// Starts the harvest of `input` and returns its items as a record stream (see the
/// module doc). The first page is fetched here, so that a repository that cannot be
/// reached fails the input at once.
pub async fn open(
    client: &reqwest::Client,
    input: &str,
    name: Arc<str>,
    opts: HarvestOptions,
) -> Result<InputData, Error> {
    let request = OaiRequest::parse(input)?;
    let mut harvest = Harvest {
        client: client.clone(),
        next: None,
        page_no: 0,
        items: VecDeque::new(),
        last_token: None,
        records: 0,
        offset: 0,
        granularity: opts.resume.as_ref().map(|c| c.granularity),
        first_date: None,
        finished: false,
        name,
        opts,
        request,
    };
    // The granularity is needed only for a resume point, and only the first time.
    let wants_checkpoint = harvest.opts.done.is_some() && harvest.request.until.is_none();
    if harvest.granularity.is_none() && wants_checkpoint {
        harvest.granularity = harvest.identify().await;
    }
    let from = harvest.opts.resume.as_ref().map(|c| c.from.clone());
    harvest.next = Some(harvest.request.first_url(from.as_deref()));
    harvest.fetch_next().await?;
    Ok(InputData::Records(Box::pin(futures::stream::unfold(
        harvest,
        |mut h| async move {
            let item = h.next_item().await?;
            Some((item, h))
        },
    ))))
}

struct Harvest {
    client: reqwest::Client,
    request: OaiRequest,
    name: Arc<str>,
    opts: HarvestOptions,
    /// The URL of the next page, if any.
    next: Option<String>,
    page_no: u64,
    items: VecDeque<Result<Record, Rejection>>,
    last_token: Option<String>,
    /// Items so far (record numbers in positions).
    records: u64,
    /// Bytes of the pages before the current one (byte offsets in positions).
    offset: u64,
    granularity: Option<Granularity>,
    first_date: Option<String>,
    finished: bool,
}

impl Harvest {
    fn notice(&self, message: &str) {
        if let Some(n) = &self.opts.notices {
            (n.0)(message);
        }
    }

    /// The repository's granularity, or `None` (with a warning: the harvest goes on
    /// without a resume point) when `Identify` does not say.
    async fn identify(&mut self) -> Option<Granularity> {
        let url = self.request.identify_url();
        let body = match self.fetch(&url, "Identify").await {
            Ok(b) => b,
            Err(e) => {
                self.notice(&format!("{e}; the harvest goes on without a resume point"));
                return None;
            }
        };
        let g = identify_granularity(&body);
        if g.is_none() {
            self.notice(&format!(
                "{}: {url}: Identify gives no granularity; the harvest goes on without a \
                 resume point",
                self.name
            ));
        }
        g
    }

    async fn next_item(&mut self) -> Option<RecordItem> {
        loop {
            if let Some(item) = self.items.pop_front() {
                return Some(Ok(item));
            }
            if self.next.is_none() {
                self.finish();
                return None;
            }
            if let Err(e) = self.fetch_next().await {
                self.next = None;
                self.finished = true;
                return Some(Err(e));
            }
        }
    }

    /// The list is complete: the checkpoint is handed on.
    fn finish(&mut self) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let (Some(done), Some(g), Some(date), None) = (
            &self.opts.done,
            self.granularity,
            &self.first_date,
            &self.request.until,
        ) else {
            return;
        };
        match g.format(date) {
            Some(from) => done(OaiCheckpoint {
                from,
                granularity: g,
            }),
            None => self.notice(&format!(
                "{}: the responseDate {date:?} is not a UTC date: no resume point",
                self.name
            )),
        }
    }

    async fn fetch_next(&mut self) -> Result<(), Error> {
        let Some(url) = self.next.take() else {
            return Ok(());
        };
        self.page_no += 1;
        let page_no = self.page_no;
        let what = format!("page {page_no}");
        let body = self.fetch(&url, &what).await?;
        let ctx = PageContext {
            name: self.name.clone(),
            page: page_no,
            url: &url,
            offset: self.offset,
            records: self.records,
        };
        let page = parse_page(&body, self.request.format, &ctx)
            .map_err(|m| Error::Fatal(format!("{}: page {page_no} ({url}): {m}", self.name)))?;
        self.offset += body.len() as u64;
        if self.first_date.is_none() {
            self.first_date = page.response_date.clone();
        }
        if let Some((code, _)) = page.errors.first() {
            if code == "noRecordsMatch" && page_no == 1 {
                return Ok(());
            }
            let all: Vec<String> = page
                .errors
                .iter()
                .map(|(c, m)| format!("{c}: {}", m.trim()))
                .collect();
            return Err(Error::Fatal(format!(
                "{}: page {page_no} ({url}): the repository answered {}",
                self.name,
                all.join("; ")
            )));
        }
        self.records += page.items.len() as u64;
        self.items.extend(page.items);
        if let Some(token) = page.token {
            if self.last_token.as_deref() == Some(token.as_str()) {
                return Err(Error::Fatal(format!(
                    "{}: page {page_no} ({url}): the repository sent the same resumption \
                     token again; stopping rather than looping",
                    self.name
                )));
            }
            self.next = Some(self.request.token_url(&token));
            self.last_token = Some(token);
        }
        Ok(())
    }

    /// GETs `url` with retries (see the module doc); the whole body.
    async fn fetch(&self, url: &str, what: &str) -> Result<Bytes, Error> {
        let mut attempt = 0u32;
        loop {
            let failure = match self.try_fetch(url).await {
                Ok(body) => return Ok(body),
                Err(f) => f,
            };
            let (message, retry_after) = match failure {
                Failure::Final(m) => {
                    return Err(Error::Fatal(format!("{}: {what} ({url}): {m}", self.name)))
                }
                Failure::Retry(m, after) => (m, after),
            };
            if attempt >= RETRIES {
                return Err(Error::Fatal(format!(
                    "{}: {what} ({url}): giving up after {} attempts: {message}",
                    self.name,
                    attempt + 1
                )));
            }
            let wait = match retry_after {
                Some(w) => w.min(MAX_RETRY_AFTER),
                None => self
                    .opts
                    .first_backoff
                    .saturating_mul(1u32 << attempt.min(16))
                    .min(MAX_BACKOFF),
            };
            self.notice(&format!(
                "{}: {what} ({url}): {message}; asking again in {:.1} s (retry {} of {RETRIES})",
                self.name,
                wait.as_secs_f64(),
                attempt + 1
            ));
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn try_fetch(&self, url: &str) -> Result<Bytes, Failure> {
        let resp = self
            .client
            .get(url)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(|e| Failure::Retry(error_chain(&e), None))?;
        let status = resp.status();
        if !status.is_success() {
            let after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(retry_after);
            let m = format!("HTTP {status}");
            return Err(match status.as_u16() {
                429 | 503 => Failure::Retry(m, after),
                500..=599 => Failure::Retry(m, None),
                _ => Failure::Final(m),
            });
        }
        let mut resp = resp;
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if let Some(read) = &self.opts.read {
                        read.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                    }
                    if body.len() + chunk.len() > MAX_PAGE_BYTES {
                        return Err(Failure::Final(format!(
                            "the page is larger than {MAX_PAGE_BYTES} bytes"
                        )));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok(Bytes::from(body)),
                Err(e) => {
                    return Err(Failure::Retry(
                        format!("the reply broke off: {}", error_chain(&e)),
                        None,
                    ))
                }
            }
        }
    }
}

enum Failure {
    Retry(String, Option<Duration>),
    Final(String),
}

/// What a page held.
#[derive(Debug, Default)]
struct Page {
    response_date: Option<String>,
    /// `(code, message)` of each `<error>`.
    errors: Vec<(String, String)>,
    items: Vec<Result<Record, Rejection>>,
    /// A non-empty resumption token.
    token: Option<String>,
}

struct PageContext<'a> {
    name: Arc<str>,
    page: u64,
    url: &'a str,
    /// Bytes of the earlier pages.
    offset: u64,
    /// Items of the earlier pages.
    records: u64,
}

type XmlResult<T> = Result<T, quick_xml::Error>;

fn in_ns(ns: &ResolveResult<'_>, uri: &str) -> bool {
    matches!(ns, ResolveResult::Bound(Namespace(n)) if *n == uri.as_bytes())
}

/// The error for a document that ends inside an element.
fn unclosed() -> quick_xml::Error {
    quick_xml::Error::Syntax(quick_xml::errors::SyntaxError::UnclosedTag)
}

/// Keeps `depth`, the nesting below the element a loop reads, across an event the loop
/// does not handle itself: `Ok(true)` at the end of that element, `Err` when the
/// document ends first. One place for what `text`, `record`, `oai_dc` and `soif` all do
/// with the elements they skip.
fn nest(depth: &mut u32, event: &Event<'_>) -> XmlResult<bool> {
    match event {
        Event::Start(_) => *depth += 1,
        Event::End(_) if *depth == 0 => return Ok(true),
        Event::End(_) => *depth -= 1,
        Event::Eof => return Err(unclosed()),
        _ => {}
    }
    Ok(false)
}

/// Reads a page of `ListRecords` (or an error reply). `Err` when it is not well-formed
/// XML or not an OAI-PMH reply.
fn parse_page(body: &[u8], format: MetadataFormat, ctx: &PageContext<'_>) -> Result<Page, String> {
    let mut r = NsReader::from_reader(body);
    r.config_mut().expand_empty_elements = true;
    let mut page = Page::default();
    let mut root = false;
    let xml_err = |r: &NsReader<&[u8]>, e: quick_xml::Error| {
        format!("not well-formed XML at byte {}: {e}", r.error_position())
    };
    loop {
        let start = r.buffer_position();
        let (ns, event) = match r.read_resolved_event() {
            Ok((ns, ev)) => (in_ns(&ns, OAI_NS), ev),
            Err(e) => return Err(xml_err(&r, e)),
        };
        match event {
            Event::Start(e) if ns => match e.local_name().as_ref() {
                b"OAI-PMH" => root = true,
                b"responseDate" => {
                    page.response_date = Some(text(&mut r).map_err(|e| xml_err(&r, e))?)
                }
                b"error" => {
                    let code = attr(&r, &e, b"code").unwrap_or_default();
                    let message = text(&mut r).map_err(|e| xml_err(&r, e))?;
                    page.errors.push((code, message));
                }
                b"record" => {
                    let n = ctx.records + page.items.len() as u64 + 1;
                    let item = record(&mut r, format).map_err(|e| xml_err(&r, e))?;
                    let end = r.buffer_position();
                    let mut position = Position::new(ctx.offset + start, n);
                    position.input = Some(ctx.name.clone());
                    page.items.push(match item {
                        Ok(mut rec) => {
                            rec.position = Some(position);
                            Ok(rec)
                        }
                        Err((id, why)) => {
                            position.url = id.clone();
                            let raw = usize::try_from(start)
                                .ok()
                                .zip(usize::try_from(end).ok())
                                .and_then(|(s, e)| body.get(s..e))
                                .map(Bytes::copy_from_slice);
                            Err(Rejection {
                                message: format!(
                                    "{why}, at {position}, page {} ({})",
                                    ctx.page, ctx.url
                                ),
                                position,
                                raw,
                            })
                        }
                    });
                }
                b"resumptionToken" => {
                    let t = text(&mut r).map_err(|e| xml_err(&r, e))?;
                    let t = t.trim();
                    if !t.is_empty() {
                        page.token = Some(t.to_string());
                    }
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    if !root {
        return Err("not an OAI-PMH reply (no OAI-PMH element)".into());
    }
    Ok(page)
}

/// The granularity an `Identify` reply gives.
fn identify_granularity(body: &[u8]) -> Option<Granularity> {
    let mut r = NsReader::from_reader(body);
    r.config_mut().expand_empty_elements = true;
    loop {
        let (ns, event) = r.read_resolved_event().ok()?;
        let ns = in_ns(&ns, OAI_NS);
        match event {
            Event::Start(e) if ns && e.local_name().as_ref() == b"granularity" => {
                return Granularity::parse(&text(&mut r).ok()?)
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

/// The value of the unqualified attribute `name`.
fn attr(r: &NsReader<&[u8]>, e: &BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == name)
        .and_then(|a| a.decode_and_unescape_value(r.decoder()).ok())
        .map(|v| v.into_owned())
}

/// The text of the element just started, up to its end (text of nested elements
/// included): character and predefined entity references resolved, line ends
/// normalised as XML 1.0 says (a CR that matters is sent as `&#13;`).
fn text(r: &mut NsReader<&[u8]>) -> XmlResult<String> {
    let mut out = String::new();
    let mut depth = 0u32;
    loop {
        match r.read_event()? {
            Event::Text(t) => out.push_str(&t.xml10_content()?),
            Event::CData(c) => out.push_str(&c.xml10_content()?),
            Event::GeneralRef(g) => match g.resolve_char_ref()? {
                Some(c) => out.push(c),
                None => {
                    let name = g.decode()?;
                    match quick_xml::escape::resolve_predefined_entity(&name) {
                        Some(s) => out.push_str(s),
                        None => {
                            return Err(quick_xml::Error::Escape(
                                quick_xml::escape::EscapeError::UnrecognizedEntity(
                                    0..name.len(),
                                    name.into_owned(),
                                ),
                            ))
                        }
                    }
                }
            },
            other => {
                if nest(&mut depth, &other)? {
                    return Ok(out);
                }
            }
        }
    }
}

/// One `<record>` (just started): the record, or `(identifier, why)` when its metadata
/// cannot be read. `Err` only for XML that is not well formed.
type ItemResult = Result<Record, (Option<String>, String)>;

fn record(r: &mut NsReader<&[u8]>, format: MetadataFormat) -> XmlResult<ItemResult> {
    let mut identifier: Option<String> = None;
    let mut deleted = false;
    let mut built: Option<Result<Record, String>> = None;
    let mut depth = 0u32;
    loop {
        let (ns, event) = r.read_resolved_event()?;
        let oai = in_ns(&ns, OAI_NS);
        match event {
            Event::Start(e) if oai && depth == 0 => match e.local_name().as_ref() {
                b"header" => {
                    deleted = attr(r, &e, b"status").as_deref() == Some("deleted");
                    let (id, _) = header(r)?;
                    identifier = id;
                }
                b"metadata" => {
                    built = Some(
                        match format {
                            MetadataFormat::OaiDc => oai_dc(r)?.map(|attrs| (attrs, None)),
                            MetadataFormat::Soif => soif(r)?.map(|(attrs, key)| (attrs, Some(key))),
                        }
                        .map(|(attrs, key)| {
                            let (template, url) = key.unwrap_or_else(|| {
                                (
                                    Bytes::from_static(DC_TEMPLATE.as_bytes()),
                                    Bytes::from(identifier.clone().unwrap_or_default()),
                                )
                            });
                            let mut rec = Record::new(template, url);
                            rec.attributes = attrs;
                            rec
                        }),
                    );
                }
                _ => {
                    r.read_to_end(e.name())?;
                }
            },
            other => {
                if nest(&mut depth, &other)? {
                    break;
                }
            }
        }
    }
    let Some(id) = identifier.clone().filter(|i| !i.trim().is_empty()) else {
        return Ok(Err((None, "an item without an identifier".into())));
    };
    if deleted {
        let (template, url) = match format {
            MetadataFormat::OaiDc => (DC_TEMPLATE.as_bytes().to_vec(), id.clone().into_bytes()),
            MetadataFormat::Soif => match soif_identifier(&id) {
                Some(k) => k,
                None => {
                    return Ok(Err((
                        Some(id.clone()),
                        format!(
                            "the deleted item {id} has no identifier of the form \
                             oai:REPOSITORY:TEMPLATE/URL, so its record is unknown"
                        ),
                    )))
                }
            },
        };
        let mut rec = Record::new(template, url);
        rec.action = Some(Action::Delete);
        return Ok(Ok(rec));
    }
    match built {
        Some(Ok(rec)) => Ok(Ok(rec)),
        Some(Err(why)) => Ok(Err((Some(id), why))),
        None => Ok(Err((Some(id), "an item without metadata".into()))),
    }
}

/// A `<header>` (just started): its identifier and datestamp.
fn header(r: &mut NsReader<&[u8]>) -> XmlResult<(Option<String>, Option<String>)> {
    let mut id = None;
    let mut date = None;
    loop {
        let (ns, event) = r.read_resolved_event()?;
        let oai = in_ns(&ns, OAI_NS);
        match event {
            Event::Start(e) if oai && e.local_name().as_ref() == b"identifier" => {
                id = Some(text(r)?.trim().to_string())
            }
            Event::Start(e) if oai && e.local_name().as_ref() == b"datestamp" => {
                date = Some(text(r)?.trim().to_string())
            }
            Event::Start(e) => {
                r.read_to_end(e.name())?;
            }
            Event::End(_) => return Ok((id, date)),
            Event::Eof => return Err(unclosed()),
            _ => {}
        }
    }
}

/// The Appendix C name of a `dc:` element's local name (`title` → `TITLE`).
fn dc_name(local: &[u8]) -> Option<&'static str> {
    ELEMENTS
        .iter()
        .find(|e| e.as_bytes().eq_ignore_ascii_case(local))
        .copied()
}

/// `<metadata>` in `oai_dc` (just started): the attributes, in document order, numbered
/// where an element repeats.
fn oai_dc(r: &mut NsReader<&[u8]>) -> XmlResult<Result<Vec<soif_codecs::Attribute>, String>> {
    let mut values: Vec<(&'static str, String)> = Vec::new();
    let mut depth = 0u32;
    loop {
        let (ns, event) = r.read_resolved_event()?;
        let dc = in_ns(&ns, DC_NS);
        match event {
            Event::Start(e) if dc => match dc_name(e.local_name().as_ref()) {
                Some(name) => values.push((name, text(r)?)),
                None => {
                    r.read_to_end(e.name())?;
                }
            },
            other => {
                if nest(&mut depth, &other)? {
                    break;
                }
            }
        }
    }
    Ok(Ok(number_dc(values)))
}

/// `CREATOR` once stays `CREATOR`; several become `CREATOR-1`, `CREATOR-2`, … in order.
fn number_dc(values: Vec<(&'static str, String)>) -> Vec<soif_codecs::Attribute> {
    let count = |n: &str| values.iter().filter(|(m, _)| *m == n).count();
    let totals: Vec<usize> = values.iter().map(|(n, _)| count(n)).collect();
    let mut seen: Vec<(&'static str, usize)> = Vec::new();
    values
        .into_iter()
        .zip(totals)
        .map(|((name, value), total)| {
            let attr_name = if total > 1 {
                let k = match seen.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, k)) => {
                        *k += 1;
                        *k
                    }
                    None => {
                        seen.push((name, 1));
                        1
                    }
                };
                format!("{name}-{k}")
            } else {
                name.to_string()
            };
            soif_codecs::Attribute::new(attr_name, value.into_bytes())
        })
        .collect()
}

/// `<metadata>` in `soif` (just started): the attributes and `(template, url)`.
#[allow(clippy::type_complexity)]
fn soif(
    r: &mut NsReader<&[u8]>,
) -> XmlResult<Result<(Vec<soif_codecs::Attribute>, (Bytes, Bytes)), String>> {
    let mut attrs = Vec::new();
    let mut key: Option<(Bytes, Bytes)> = None;
    let mut problem: Option<String> = None;
    let mut depth = 0u32;
    loop {
        let (ns, event) = r.read_resolved_event()?;
        let s = in_ns(&ns, SOIF_NS);
        match event {
            Event::Start(e) if s && e.local_name().as_ref() == b"record" => {
                depth += 1;
                let template = exact_attr(r, &e, "template");
                let url = exact_attr(r, &e, "url");
                match (template, url) {
                    (Ok(t), Ok(u)) => key = Some((t, u)),
                    (Err(m), _) | (_, Err(m)) => problem = Some(m),
                }
            }
            Event::Start(e) if s && e.local_name().as_ref() == b"attribute" => {
                let name = exact_attr(r, &e, "name");
                let base64 = attr(r, &e, b"encoding").as_deref() == Some("base64");
                let text = text(r)?;
                let value = if base64 {
                    let clean: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                    STANDARD
                        .decode(clean)
                        .map_err(|e| format!("a base64 value that does not decode: {e}"))
                } else {
                    Ok(text.into_bytes())
                };
                match (name, value) {
                    (Ok(n), Ok(v)) => attrs.push(soif_codecs::Attribute::new(n, v)),
                    (Err(m), _) | (_, Err(m)) => {
                        problem.get_or_insert(m);
                    }
                }
            }
            other => {
                if nest(&mut depth, &other)? {
                    break;
                }
            }
        }
    }
    if let Some(p) = problem {
        return Ok(Err(p));
    }
    Ok(match key {
        Some(k) => Ok((attrs, k)),
        None => Err("no soif:record in the metadata".into()),
    })
}

/// `NAME="…"` or `NAME-base64="…"` of a `soif` element.
fn exact_attr(r: &NsReader<&[u8]>, e: &BytesStart<'_>, name: &str) -> Result<Bytes, String> {
    if let Some(v) = attr(r, e, name.as_bytes()) {
        return Ok(Bytes::from(v));
    }
    let b64 = format!("{name}-base64");
    match attr(r, e, b64.as_bytes()) {
        Some(v) => STANDARD
            .decode(v.trim())
            .map(Bytes::from)
            .map_err(|e| format!("{b64} does not decode: {e}")),
        None => Err(format!("no {name} (or {b64})")),
    }
}

/// The template and URL of an identifier `oai:REPOSITORY:TEMPLATE/URL` as `soif serve`
/// writes them (`soif_codecs::oai_ids`: `%XX` escapes, the template's `/` escaped).
pub fn soif_identifier(id: &str) -> Option<(Vec<u8>, Vec<u8>)> {
    soif_codecs::oai_ids::split_identifier(id).map(|(_repo, template, url)| (template, url))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> PageContext<'static> {
        PageContext {
            name: Arc::from("oai+http://h/oai"),
            page: 1,
            url: "http://h/oai?verb=ListRecords",
            offset: 0,
            records: 0,
        }
    }

    #[test]
    fn inputs_parse() {
        let r = OaiRequest::parse(
            "oai+https://h.example/oai?metadataPrefix=soif&set=FILE&from=2026-01-01",
        )
        .unwrap();
        assert_eq!(r.base_url, "https://h.example/oai");
        assert_eq!(r.format, MetadataFormat::Soif);
        assert_eq!(r.set.as_deref(), Some("FILE"));
        assert_eq!(
            r.first_url(None),
            "https://h.example/oai?verb=ListRecords&metadataPrefix=soif&from=2026-01-01&set=FILE"
        );
        assert_eq!(
            r.token_url("a b&c"),
            "https://h.example/oai?verb=ListRecords&resumptionToken=a+b%26c"
        );
        let r = OaiRequest::parse("oai+http://h:8080/oai").unwrap();
        assert_eq!(r.format, MetadataFormat::OaiDc);
        for bad in [
            "oai+http://h/oai?metadataPrefix=marc21",
            "oai+http://h/oai?verb=Identify",
            "oai+http://h/oai?set=a&set=b",
            "oai+http:///oai",
        ] {
            assert!(OaiRequest::parse(bad).is_err(), "{bad}");
        }
        assert!(is_oai("OAI+HTTPS://x/"));
        assert!(!is_oai("http://x/"));
    }

    #[test]
    fn granularity_formats_response_dates() {
        assert_eq!(
            Granularity::Second
                .format("2026-11-24T10:30:26Z")
                .as_deref(),
            Some("2026-11-24T10:30:26Z")
        );
        assert_eq!(
            Granularity::Second
                .format("2026-11-24T10:30:26.123Z")
                .as_deref(),
            Some("2026-11-24T10:30:26Z")
        );
        assert_eq!(
            Granularity::Day.format("2026-11-24T10:30:26Z").as_deref(),
            Some("2026-11-24")
        );
        assert_eq!(Granularity::Second.format("yesterday"), None);
        let c = OaiCheckpoint {
            from: "2026-11-24".into(),
            granularity: Granularity::Day,
        };
        assert_eq!(OaiCheckpoint::from_json(&c.to_json()), Some(c));
    }

    const DC_PAGE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">
<responseDate>2026-11-24T10:00:00Z</responseDate>
<request verb="ListRecords">http://h/oai</request>
<ListRecords>
<record><header><identifier>oai:h:1</identifier><datestamp>2026-01-01</datestamp><setSpec>a</setSpec></header>
<metadata><oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:title>A &amp; B&#13;</dc:title><dc:creator>X</dc:creator><dc:creator><![CDATA[Y <z>]]></dc:creator><other xmlns="urn:o">skip</other></oai_dc:dc></metadata>
<about><x>y</x></about></record>
<record><header status="deleted"><identifier>oai:h:2</identifier><datestamp>2026-01-02</datestamp></header></record>
<record><header><identifier>oai:h:3</identifier><datestamp>2026-01-02</datestamp></header></record>
<resumptionToken cursor="0" completeListSize="9">tok 1</resumptionToken>
</ListRecords></OAI-PMH>"#;

    #[test]
    fn oai_dc_pages_become_dublin_core_records_and_deletions() {
        let page = parse_page(DC_PAGE.as_bytes(), MetadataFormat::OaiDc, &ctx()).unwrap();
        assert_eq!(page.response_date.as_deref(), Some("2026-11-24T10:00:00Z"));
        assert_eq!(page.token.as_deref(), Some("tok 1"));
        assert_eq!(page.items.len(), 3);
        let r = page.items[0].as_ref().unwrap();
        assert_eq!(r.template_str(), "Dublin-Core");
        assert_eq!(&r.url[..], b"oai:h:1");
        let names: Vec<_> = r
            .attributes
            .iter()
            .map(|a| String::from_utf8_lossy(&a.name).into_owned())
            .collect();
        assert_eq!(names, ["TITLE", "CREATOR-1", "CREATOR-2"]);
        assert_eq!(r.get_str("TITLE"), Some("A & B\r"));
        assert_eq!(r.get_str("CREATOR-2"), Some("Y <z>"));
        let d = page.items[1].as_ref().unwrap();
        assert_eq!(d.action, Some(Action::Delete));
        assert_eq!(&d.url[..], b"oai:h:2");
        let bad = page.items[2].as_ref().unwrap_err();
        assert!(bad.message.contains("without metadata"), "{}", bad.message);
        assert!(bad.message.contains("oai:h:3"), "{}", bad.message);
        assert!(bad.raw.as_ref().unwrap().starts_with(b"<record>"));
    }

    #[test]
    fn soif_pages_give_the_records_back() {
        let page = r#"<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-11-24T10:00:00Z</responseDate>
<ListRecords><record><header><identifier>oai:r.example:FILE/http://x/%C3%A9</identifier><datestamp>2026-01-01T00:00:00Z</datestamp></header>
<metadata><soif:record xmlns:soif="urn:x-soif:record:1" template="FILE" url-base64="aHR0cDovL3gvw6k=">
<soif:attribute name="Title">T&#13;
x</soif:attribute><soif:attribute name-base64="QQ==" encoding="base64">AP8=</soif:attribute></soif:record></metadata></record>
<record><header status="deleted"><identifier>oai:r.example:DOC%2FX/u%20v</identifier><datestamp>2026-01-01T00:00:00Z</datestamp></header></record>
<record><header status="deleted"><identifier>urn:other</identifier><datestamp>2026-01-01T00:00:00Z</datestamp></header></record>
<resumptionToken/></ListRecords></OAI-PMH>"#;
        let page = parse_page(page.as_bytes(), MetadataFormat::Soif, &ctx()).unwrap();
        assert_eq!(page.token, None);
        let r = page.items[0].as_ref().unwrap();
        assert_eq!(&r.url[..], "http://x/é".as_bytes());
        assert_eq!(r.get_str("Title"), Some("T\r\nx"));
        assert_eq!(&r.attributes[1].name[..], b"A");
        assert_eq!(r.attributes[1].value.leaves()[0].as_ref(), &[0u8, 0xff][..]);
        let d = page.items[1].as_ref().unwrap();
        assert_eq!((&d.template[..], &d.url[..]), (&b"DOC/X"[..], &b"u v"[..]));
        assert!(page.items[2].is_err());
    }

    #[test]
    fn errors_and_bad_pages() {
        let p = r#"<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-11-24T10:00:00Z</responseDate><error code="noRecordsMatch">none</error></OAI-PMH>"#;
        let page = parse_page(p.as_bytes(), MetadataFormat::OaiDc, &ctx()).unwrap();
        assert_eq!(
            page.errors,
            [("noRecordsMatch".to_string(), "none".to_string())]
        );
        assert!(parse_page(b"<html>no</html>", MetadataFormat::OaiDc, &ctx()).is_err());
        assert!(parse_page(
            b"<OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\"><ListRecords><record>",
            MetadataFormat::OaiDc,
            &ctx()
        )
        .is_err());
        let id = r#"<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><Identify><granularity>YYYY-MM-DD</granularity></Identify></OAI-PMH>"#;
        assert_eq!(identify_granularity(id.as_bytes()), Some(Granularity::Day));
    }
}
