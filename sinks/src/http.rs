//! Sending batches over HTTP, retried: what the sinks that POST to a server share (the
//! `rdm` sink to a catalog server, the `sparql` sink to a SPARQL Update endpoint).
//!
//! A [`Poster`] owns the HTTP client and sends one request body again and again until the
//! server stores it, refuses it, or [`RETRIES`] retries have failed (or a short sequence
//! of requests, [`Poster::post_all`], sent again from its first whenever one fails):
//! - a connection error, a broken-off exchange or an HTTP 5xx is retried with exponential
//!   backoff (0.25 s, 0.5 s, 1 s, … capped at [`MAX_BACKOFF`]);
//! - a `429 Too Many Requests` or `503 Service Unavailable` is retried after the reply's
//!   `Retry-After` (seconds or an HTTP date) when it gives one, waiting at most
//!   [`MAX_RETRY_AFTER`];
//! - any other status is judged by the sink (what counts as "stored" differs: an RDM
//!   `status-response`, any 2xx for SPARQL Update), through [`Reply`] and [`Attempt`].
//!
//! Each retry becomes a notice (a warning in the run's summary, see
//! [`soif_pipeline::Sink::take_notices`]).
//!
//! **Threads.** Sinks are synchronous and the engine calls them on a blocking thread, so
//! a `Poster` drives the async `reqwest` client with `Handle::block_on` on the runtime it
//! was built in (or on a small runtime of its own when built outside one). This keeps
//! one HTTP stack (`reqwest` without its `blocking` feature) for the sinks, the catalog
//! source and the server's tests. Do not call it from inside an async task.
//!
//! ```no_run
//! use soif_sinks::http::{Attempt, Poster};
//! let mut poster = Poster::new("sparql", false).unwrap();
//! let body = bytes::Bytes::from_static(b"DROP SILENT GRAPH <http://example.org/g>");
//! let done = poster.post(
//!     "the batch of 1 record",
//!     |client| {
//!         client
//!             .post("http://127.0.0.1:7878/update")
//!             .header("Content-Type", "application/sparql-update")
//!             .body(body.clone())
//!     },
//!     |reply| match reply.status.is_success() {
//!         true => Attempt::Done,
//!         false => reply.failure(String::from_utf8_lossy(&reply.body).into_owned()),
//!     },
//! );
//! assert!(done.is_ok());
//! ```

use soif_codecs::run_error::error_chain;
use soif_pipeline::retry::retry_after;
use soif_pipeline::Error;
use std::time::Duration;

/// Whether `url` names an http or https URL (the scheme in any case): what the sinks
/// that POST accept as their endpoints.
pub fn is_http(url: &str) -> bool {
    let scheme = |s: &str| {
        url.get(..s.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(s))
    };
    scheme("http://") || scheme("https://")
}

/// How many times a request is retried after a connection error, a 5xx or a 429.
pub const RETRIES: u32 = 6;

/// The longest wait a `Retry-After` header gets (a longer one is cut to this).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The longest one request (send the body, read the reply) may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest wait between two attempts when the server gives no `Retry-After`.
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// How much of a reply is read (for its message).
const MAX_REPLY: usize = 64 << 10;

/// What one attempt to send a request came to.
#[derive(Debug, PartialEq)]
pub enum Attempt {
    /// The server stored it.
    Done,
    /// Worth another try (connection trouble, 5xx, 429), after the server's
    /// `Retry-After` if it gave one.
    Retry(String, Option<Duration>),
    /// The server refused, or the reply does not say the request was stored: stop.
    Refused(String),
}

/// A server's reply, for a sink to judge.
#[derive(Debug)]
pub struct Reply {
    /// The URL the request went to.
    pub url: String,
    pub status: reqwest::StatusCode,
    /// The `Content-Type` header, as text.
    pub content_type: Option<String>,
    /// The body's first 64 KiB.
    pub body: Vec<u8>,
    /// The `Retry-After` header's wait.
    pub retry_after: Option<Duration>,
    /// The `Location` header (where a 3xx points).
    pub location: Option<String>,
}

impl Reply {
    /// What a reply that is not a success comes to, `message` saying why: a 429 or 503
    /// is retried after `Retry-After`, another 5xx after the backoff, anything else
    /// (a 3xx, a 4xx) refuses the request. The text is `HTTP STATUS: message`.
    pub fn failure(&self, message: String) -> Attempt {
        let text = format!("HTTP {}: {message}", self.status);
        if self.status == reqwest::StatusCode::TOO_MANY_REQUESTS
            || self.status == reqwest::StatusCode::SERVICE_UNAVAILABLE
        {
            Attempt::Retry(text, self.retry_after)
        } else if self.status.is_server_error() {
            Attempt::Retry(text, None)
        } else {
            Attempt::Refused(text)
        }
    }

    /// Whether the reply's media type (without parameters) is `media_type`.
    pub fn is_type(&self, media_type: &str) -> bool {
        self.content_type.as_deref().is_some_and(|t| {
            t.split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(media_type))
        })
    }
}

/// A bearer token (`Authorization: Bearer …`), kept out of `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct Bearer(String);

impl Bearer {
    /// The token, unless there is none or it is empty.
    pub fn new(token: Option<String>) -> Option<Bearer> {
        token.filter(|t| !t.is_empty()).map(Bearer)
    }

    /// `request` with the token, when there is one.
    pub fn authorize(
        token: Option<&Bearer>,
        request: reqwest::RequestBuilder,
    ) -> reqwest::RequestBuilder {
        match token {
            Some(Bearer(t)) => request.bearer_auth(t),
            None => request,
        }
    }
}

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(…)")
    }
}

/// Why a request was not stored.
#[derive(Debug, PartialEq)]
pub enum Failure {
    /// The server refused it (or its reply does not say it was stored).
    Refused(String),
    /// Every attempt failed; the last one's message.
    GaveUp { attempts: u32, last: String },
}

enum Runtime {
    Shared(tokio::runtime::Handle),
    Owned(tokio::runtime::Runtime),
}

impl Runtime {
    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        match self {
            Runtime::Shared(h) => h.block_on(f),
            Runtime::Owned(rt) => rt.block_on(f),
        }
    }
}

/// An HTTP client that sends a request until it is stored (see the module doc).
pub struct Poster {
    client: reqwest::Client,
    rt: Runtime,
    base_backoff: Duration,
    retried: u64,
    notices: Vec<String>,
    /// The status of the last reply, if the last attempt had one.
    last_status: Option<reqwest::StatusCode>,
}

impl std::fmt::Debug for Poster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poster")
            .field("retried", &self.retried)
            .finish()
    }
}

impl Poster {
    /// A client for the sink `name` (for messages). `follow_redirects`: whether a 3xx
    /// is followed (a redirected POST may become a GET, which a sink may not want: it
    /// then sees the 3xx and refuses).
    pub fn new(name: &str, follow_redirects: bool) -> Result<Poster, Error> {
        let rt = match tokio::runtime::Handle::try_current() {
            Ok(h) => Runtime::Shared(h),
            Err(_) => Runtime::Owned(
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::io(format!("starting the {name} sink's runtime"), e))?,
            ),
        };
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("soif/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(30))
            // A hung exchange counts as a connection error: retried, then given up.
            .timeout(REQUEST_TIMEOUT);
        if !follow_redirects {
            builder = builder.redirect(reqwest::redirect::Policy::none());
        }
        let client = builder
            .build()
            .map_err(|e| Error::Fatal(format!("{name}: HTTP client: {e}")))?;
        Ok(Poster {
            client,
            rt,
            base_backoff: Duration::from_millis(250),
            retried: 0,
            notices: Vec::new(),
            last_status: None,
        })
    }

    /// Sets the first retry's wait (tests use a short one).
    pub fn with_backoff(mut self, base: Duration) -> Poster {
        self.base_backoff = base;
        self
    }

    /// Failed attempts that were retried.
    pub fn retried(&self) -> u64 {
        self.retried
    }

    /// The HTTP status of the last reply [`Poster::post`] received (`None` when its
    /// last attempt had none: a connection error): what a sink reads to tell a refused
    /// request from a refusing endpoint.
    pub fn last_status(&self) -> Option<reqwest::StatusCode> {
        self.last_status
    }

    /// The retries not yet reported, taken once.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// Sends the request `request` builds (once per attempt) until `judge` says its reply
    /// is [`Attempt::Done`], retrying as the module doc says. `what` names the request in
    /// notices ("the batch of 2 records").
    pub fn post(
        &mut self,
        what: &str,
        request: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
        judge: impl Fn(&Reply) -> Attempt,
    ) -> Result<(), Failure> {
        self.post_all(what, &[&request], judge)
    }

    /// Sends the requests `steps` build, in order, each once `judge` has said the one
    /// before is [`Attempt::Done`]. An attempt that must be retried sends the whole
    /// sequence again from its first request (so a step that undoes what a half-done
    /// later step may have left, such as dropping graphs before loading them, is redone
    /// too); a refusal stops it.
    pub fn post_all(
        &mut self,
        what: &str,
        steps: &[&dyn Fn(&reqwest::Client) -> reqwest::RequestBuilder],
        judge: impl Fn(&Reply) -> Attempt,
    ) -> Result<(), Failure> {
        let mut attempt = 0u32;
        loop {
            let mut outcome = Attempt::Done;
            for step in steps {
                let (status, judged) = self.rt.block_on(send(step(&self.client), &judge));
                (self.last_status, outcome) = (status, judged);
                if outcome != Attempt::Done {
                    break;
                }
            }
            match outcome {
                Attempt::Done => return Ok(()),
                Attempt::Refused(m) => return Err(Failure::Refused(m)),
                Attempt::Retry(m, retry_after) => {
                    if attempt >= RETRIES {
                        return Err(Failure::GaveUp {
                            attempts: attempt + 1,
                            last: m,
                        });
                    }
                    self.retried += 1;
                    let wait = self.wait(attempt, retry_after);
                    self.notices.push(format!(
                        "{m}; sending {what} again in {:.1} s (retry {} of {RETRIES})",
                        wait.as_secs_f64(),
                        attempt + 1
                    ));
                    std::thread::sleep(wait);
                    attempt += 1;
                }
            }
        }
    }

    /// The wait before retry `attempt + 1`: the server's `Retry-After` (capped), else
    /// the exponential backoff.
    fn wait(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        match retry_after {
            Some(w) => w.min(MAX_RETRY_AFTER),
            None => self
                .base_backoff
                .saturating_mul(1u32 << attempt.min(16))
                .min(MAX_BACKOFF),
        }
    }
}

/// One attempt: sends, reads (a bounded part of) the reply, judges it; with the reply's
/// status, if there was a reply.
async fn send(
    request: reqwest::RequestBuilder,
    judge: impl Fn(&Reply) -> Attempt,
) -> (Option<reqwest::StatusCode>, Attempt) {
    let mut resp = match request.send().await {
        Ok(r) => r,
        Err(e) if e.is_builder() => return (None, Attempt::Refused(e.to_string())),
        Err(e) => return (None, Attempt::Retry(error_chain(&e), None)),
    };
    let status = resp.status();
    let url = resp.url().to_string();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(retry_after);
    let header = |name| {
        resp.headers()
            .get(name)
            .map(|v: &reqwest::header::HeaderValue| {
                String::from_utf8_lossy(v.as_bytes()).into_owned()
            })
    };
    let content_type = header(reqwest::header::CONTENT_TYPE);
    let location = header(reqwest::header::LOCATION);
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => {
                let room = MAX_REPLY.saturating_sub(body.len());
                body.extend_from_slice(&c[..c.len().min(room)]);
                if room < c.len() {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) if status.is_success() => {
                // The reply broke off: whether the request was stored is unknown, so send
                // it again (the sinks' requests are idempotent).
                let why = format!("reading the reply: {}", error_chain(&e));
                return (Some(status), Attempt::Retry(why, None));
            }
            Err(_) => break,
        }
    }
    let judged = judge(&Reply {
        url,
        status,
        content_type,
        body,
        retry_after,
        location,
    });
    (Some(status), judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::StatusCode;

    #[test]
    fn endpoints_are_http_or_https_in_any_case() {
        for url in ["http://h/", "HTTPS://h/update", "Http://h"] {
            assert!(is_http(url), "{url}");
        }
        for url in [
            "ftp://h/",
            "x-catalog://h:1/c",
            "http:/h",
            "https",
            "",
            "é://h",
        ] {
            assert!(!is_http(url), "{url}");
        }
    }

    fn reply(status: StatusCode, retry_after: Option<Duration>) -> Reply {
        Reply {
            url: "http://127.0.0.1/".into(),
            status,
            content_type: None,
            body: Vec::new(),
            retry_after,
            location: None,
        }
    }

    #[test]
    fn busy_servers_are_retried_after_retry_after_others_refuse() {
        let wait = Some(Duration::from_secs(2));
        for status in [
            StatusCode::TOO_MANY_REQUESTS,
            StatusCode::SERVICE_UNAVAILABLE,
        ] {
            assert_eq!(
                reply(status, wait).failure("busy".into()),
                Attempt::Retry(format!("HTTP {status}: busy"), wait)
            );
        }
        assert_eq!(
            reply(StatusCode::BAD_GATEWAY, wait).failure("x".into()),
            Attempt::Retry("HTTP 502 Bad Gateway: x".into(), None)
        );
        for status in [
            StatusCode::BAD_REQUEST,
            StatusCode::UNAUTHORIZED,
            StatusCode::MOVED_PERMANENTLY,
        ] {
            assert!(matches!(
                reply(status, wait).failure("x".into()),
                Attempt::Refused(_)
            ));
        }
    }

    #[test]
    fn waits_back_off_and_honour_retry_after_up_to_a_cap() {
        let p = Poster::new("test", true).unwrap();
        let ms = |n| Duration::from_millis(n);
        assert_eq!(p.wait(0, None), ms(250));
        assert_eq!(p.wait(2, None), ms(1000));
        assert_eq!(p.wait(10, None), MAX_BACKOFF);
        assert_eq!(p.wait(0, Some(ms(3000))), ms(3000));
        assert_eq!(p.wait(0, Some(Duration::from_secs(3600))), MAX_RETRY_AFTER);
    }

    #[test]
    fn a_token_is_not_shown() {
        let t = Bearer::new(Some("secret".into()));
        assert!(!format!("{t:?}").contains("secret"));
        assert_eq!(Bearer::new(Some(String::new())), None);
    }

    #[test]
    fn media_types_compare_without_parameters_or_case() {
        let mut r = reply(StatusCode::OK, None);
        assert!(!r.is_type("application/x-rdm"));
        r.content_type = Some("Application/X-RDM; charset=utf-8".into());
        assert!(r.is_type("application/x-rdm"));
        assert!(!r.is_type("text/html"));
    }
}
