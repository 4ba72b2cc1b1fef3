//! `http://` and `https://` inputs, streamed: the body is read as it arrives and never
//! held whole, so a multi-gigabyte `All-Templates.gz` costs only the read buffers.
//!
//! A reply that is an RDM message (`application/x-rdm`, or from a `…/rdm/incoming` URL)
//! is not read here but as a catalog input's ([`crate::catalog::open_reply`]), so that its
//! `@RDMHEADER` is checked and dropped rather than passed on as a record.
//!
//! **Conditional requests.** A URL's resume point (`--state`) is its [`Validators`], the
//! `ETag` and `Last-Modified` of the last reply read whole. The next run sends them back
//! as `If-None-Match` and `If-Modified-Since` ([`get_conditional`]); a server that answers
//! `304 Not Modified` has nothing new, and the input is left unread (no records).

use crate::decompress::Reader;
use futures::TryStreamExt;
use soif_codecs::run_error::error_chain;
use soif_pipeline::Error;
use tokio_util::io::StreamReader;

/// Starts a GET and returns the body as a byte stream, with its length when the server
/// sent one. A status other than 2xx is an error naming the URL.
pub async fn open(client: &reqwest::Client, url: &str) -> Result<(Reader, Option<u64>), Error> {
    body(get(client, url).await?, url)
}

/// Starts a GET and returns the response, whatever its status: the caller looks at its
/// headers first (an RDM reply is read by [`crate::catalog::open_reply`]), then calls
/// [`body`].
pub async fn get(client: &reqwest::Client, url: &str) -> Result<reqwest::Response, Error> {
    client
        .get(url)
        .send()
        .await
        .map_err(|e| Error::Fatal(format!("{url}: {}", error_chain(&e))))
}

/// The body of `response` as a byte stream, with its length when the server sent one. A
/// status other than 2xx is an error naming the URL.
pub fn body(response: reqwest::Response, url: &str) -> Result<(Reader, Option<u64>), Error> {
    let status = response.status();
    if !status.is_success() {
        return Err(Error::Fatal(format!("{url}: HTTP {status}")));
    }
    let len = response.content_length();
    let body = response.bytes_stream().map_err(std::io::Error::other);
    Ok((Box::new(StreamReader::new(body)), len))
}

/// What identifies a version of an HTTP resource: its `ETag` and `Last-Modified`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

impl Validators {
    /// The validators of a reply, or `None` when it has neither header.
    pub fn of(response: &reqwest::Response) -> Option<Validators> {
        let header = |h| {
            response
                .headers()
                .get(h)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let v = Validators {
            etag: header(reqwest::header::ETAG),
            last_modified: header(reqwest::header::LAST_MODIFIED),
        };
        (v.etag.is_some() || v.last_modified.is_some()).then_some(v)
    }

    /// As stored by `--state`: `{"etag":"…","last_modified":"…"}`.
    pub fn to_json(&self) -> String {
        serde_json::json!({"etag": self.etag, "last_modified": self.last_modified}).to_string()
    }

    /// Reads [`Validators::to_json`]'s text.
    pub fn from_json(text: &str) -> Option<Validators> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let field = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
        Some(Validators {
            etag: field("etag"),
            last_modified: field("last_modified"),
        })
    }
}

/// Starts a GET that, given the validators of the copy already read, asks only for a
/// newer one (`If-None-Match`, `If-Modified-Since`): a reply of `304 Not Modified` means
/// the resource is unchanged. Returns the response whatever its status, like [`get`].
pub async fn get_conditional(
    client: &reqwest::Client,
    url: &str,
    previous: Option<&Validators>,
) -> Result<reqwest::Response, Error> {
    let mut request = client.get(url);
    if let Some(v) = previous {
        if let Some(etag) = &v.etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        if let Some(lm) = &v.last_modified {
            request = request.header(reqwest::header::IF_MODIFIED_SINCE, lm);
        }
    }
    request
        .send()
        .await
        .map_err(|e| Error::Fatal(format!("{url}: {}", error_chain(&e))))
}
