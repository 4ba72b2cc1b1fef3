//! An `application/x-rdm` POST body: read within its limits (as sent and inflated), with
//! an idle timeout, and decoded object by object as it arrives ([`RdmBody`]).

use crate::error::RequestError;
use axum::http::{header, HeaderMap};
use futures::StreamExt;
use soif_codecs::rdm::{MessageItem, MessageReader, RdmHeader, RdmQuery};
use soif_codecs::soif::{DecoderOptions, SoifDecoder};
use soif_codecs::Record;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncRead;
use tokio_util::codec::FramedRead;

/// The marker of a body over the limit, carried inside an `io::Error`.
#[derive(Debug)]
pub(crate) struct BodyTooLarge;
impl std::fmt::Display for BodyTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("request body too large")
    }
}
impl std::error::Error for BodyTooLarge {}

pub(crate) type BodyFrames = FramedRead<Box<dyn AsyncRead + Send + Unpin>, SoifDecoder>;

/// Ends a reader with [`BodyTooLarge`] once it has given more than `left` bytes (applied
/// to the body as sent and, for a gzip body, to what it inflates to), and with a timeout
/// when no byte arrives for `idle` (a stalled client must not hold the catalog's write
/// lock: a submission holds it while its body arrives).
pub(crate) struct Limited<R> {
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
pub(crate) fn gzipped(headers: &HeaderMap) -> Result<bool, RequestError> {
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

/// Limits on one POST body: its size (as sent, and inflated) and that of each object.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    pub body: u64,
    pub record: usize,
}

/// The body as bytes: limited, with an idle timeout, inflated when gzip'd.
pub(crate) fn body_reader<R: AsyncRead + Send + Unpin + 'static>(
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

pub(crate) async fn next_record(
    frames: &mut BodyFrames,
    limit: u64,
) -> Result<Option<Record>, RequestError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use soif_codecs::rdm::RdmType;
    use tokio::io::AsyncReadExt;

    const LIMITS: BodyLimits = BodyLimits {
        body: 10,
        record: 64 << 10,
    };

    #[test]
    fn content_encodings() {
        let mut h = HeaderMap::new();
        assert!(!gzipped(&h).unwrap());
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("GZIP"));
        assert!(gzipped(&h).unwrap());
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("br"));
        assert!(matches!(gzipped(&h), Err(RequestError::Unsupported(_))));
    }

    #[tokio::test]
    async fn a_body_over_its_limit_ends_with_too_large() {
        let idle = Duration::from_secs(5);
        let mut buf = [0u8; 64];
        let mut r = body_reader(&b"0123456789"[..], false, LIMITS, idle);
        assert_eq!(r.read(&mut buf).await.unwrap(), 10);
        assert_eq!(r.read(&mut buf).await.unwrap(), 0);
        let mut r = body_reader(&b"0123456789a"[..], false, LIMITS, idle);
        let e = r.read(&mut buf).await.unwrap_err();
        assert!(e.get_ref().is_some_and(|x| x.is::<BodyTooLarge>()), "{e}");
    }

    #[tokio::test]
    async fn a_request_body_is_its_header_then_its_query() {
        let body: &[u8] = b"@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{10}:\trd-request\n}\n";
        let limits = BodyLimits {
            body: 1 << 20,
            record: 64 << 10,
        };
        let reader = body_reader(body, false, limits, Duration::from_secs(5));
        let mut b = RdmBody::new(reader, limits);
        assert_eq!(b.header().await.unwrap().rdm_type, RdmType::RdRequest);
        assert!(b.query().await.unwrap().is_none());
        // An empty body has no header.
        let reader = body_reader(&b""[..], false, limits, Duration::from_secs(5));
        let e = RdmBody::new(reader, limits).header().await.unwrap_err();
        assert!(matches!(e, RequestError::Malformed(m) if m.contains("the body is empty")));
    }
}
