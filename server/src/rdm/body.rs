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
