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
//!
//! The harvest loop is here; reading the protocol's XML (pages, records, `Identify`) is
//! [`soif_codecs::oai::read`]'s, beside the provider's writer.

use crate::Notices;
use bytes::Bytes;
use soif_codecs::oai::read::{
    identify_granularity, parse_page, Granularity, MetadataFormat, PageContext,
};
use soif_codecs::run_error::error_chain;
use soif_codecs::Record;
use soif_pipeline::retry::retry_after;
use soif_pipeline::source::{InputData, RecordItem, Rejection};
use soif_pipeline::Error;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
        self.items
            .extend(page.items.into_iter().map(|i| i.map_err(Rejection::from)));
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

#[cfg(test)]
mod tests {
    use super::*;
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
    fn a_checkpoint_round_trips_through_its_json() {
        let c = OaiCheckpoint {
            from: "2026-11-24".into(),
            granularity: Granularity::Day,
        };
        assert_eq!(OaiCheckpoint::from_json(&c.to_json()), Some(c));
    }
}
