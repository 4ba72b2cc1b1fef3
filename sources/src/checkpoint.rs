//! What each incremental input keeps between runs, under the protocol of
//! [`soif_pipeline::checkpoint`]: a source reads the previous run's checkpoint under its
//! key (the input as the user gave it) and stages the new one once it has read the input
//! to its end; the state store commits the staged checkpoints only after every sink has
//! committed, so a failed or killed run reads the same changes again next time (the sinks'
//! upserts and deletions make that harmless).
//!
//! | input            | kind        | value                                          | next run reads                     |
//! |------------------|-------------|------------------------------------------------|------------------------------------|
//! | `oai+http(s)://` | `oai`       | `{"from":…,"granularity":…}` ([`crate::oai`])  | `ListRecords` `from` it            |
//! | `http(s)://`     | `http`      | `{"etag":…,"last_modified":…}` ([`crate::http`]) | nothing when the server says `304` (the same value is staged again) |
//! | `x-catalog://`   | `x-catalog` | `{"since":SECS}` ([`crate::catalog`])          | deletions and RDs `since` it       |
//!
//! ```
//! use soif_pipeline::{Checkpoint, Checkpoints};
//! use soif_sources::InputSettings;
//! let previous = [("oai+http://h/oai".to_string(), Checkpoint::new("oai",
//!     r#"{"from":"2026-11-24T10:00:00Z","granularity":"YYYY-MM-DDThh:mm:ssZ"}"#))];
//! let checkpoints = Checkpoints::new(previous, "2026-11-25T02:00:00Z");
//! let opts = InputSettings { checkpoints: Some(checkpoints.clone()), ..InputSettings::default() };
//! // … run the engine over InputSource::new(inputs, opts), let the sinks commit, then
//! // store checkpoints.staged().
//! ```

use futures::stream::BoxStream;
use futures::StreamExt;
use soif_pipeline::source::RecordItem;
use soif_pipeline::Checkpoints;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// The kind of an OAI-PMH harvest's checkpoint.
pub const KIND_OAI: &str = "oai";
/// The kind of an HTTP resource's checkpoint.
pub const KIND_HTTP: &str = "http";
/// The kind of an RDM catalog's checkpoint.
pub const KIND_CATALOG: &str = "x-catalog";

/// A checkpoint to stage once an input has been read to its end.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub checkpoints: Checkpoints,
    pub key: String,
    pub kind: &'static str,
    pub value: String,
}

impl Pending {
    pub fn stage(&self) {
        self.checkpoints
            .stage(&self.key, self.kind, self.value.clone());
    }

    /// `stream`, staging the checkpoint when it ends — not when it ends with an error or
    /// is dropped early: then the input was not read to its end.
    pub fn after_stream(
        self,
        stream: BoxStream<'static, RecordItem>,
    ) -> BoxStream<'static, RecordItem> {
        futures::stream::unfold(
            (stream, Some(self), false),
            |(mut s, mut pending, mut failed)| async move {
                match s.next().await {
                    Some(item) => {
                        failed |= item.is_err();
                        Some((item, (s, pending, failed)))
                    }
                    None => {
                        if let (false, Some(p)) = (failed, pending.take()) {
                            p.stage();
                        }
                        None
                    }
                }
            },
        )
        .boxed()
    }
}

/// A reader that stages a checkpoint when it reaches the end of its input.
pub(crate) struct StageAtEof<R> {
    pub inner: R,
    pub pending: Option<Pending>,
}

impl<R: AsyncRead + Unpin> AsyncRead for StageAtEof<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &r {
            if buf.filled().len() == before && buf.remaining() > 0 {
                if let Some(p) = self.pending.take() {
                    p.stage();
                }
            }
        }
        r
    }
}
