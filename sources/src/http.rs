//! `http://` and `https://` inputs, streamed: the body is read as it arrives and never
//! held whole, so a multi-gigabyte `All-Templates.gz` costs only the read buffers.
//!
//! A reply that is an RDM message (`application/x-rdm`, or from a `…/rdm/incoming` URL)
//! is not read here but as a catalog input's ([`crate::catalog::open_reply`]), so that its
//! `@RDMHEADER` is checked and dropped rather than passed on as a record.

use crate::decompress::Reader;
use futures::TryStreamExt;
use soif_pipeline::error::error_chain;
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
