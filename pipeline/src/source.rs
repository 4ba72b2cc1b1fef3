//! The [`Source`] trait: where the engine's bytes or records come from.
//!
//! A source is a sequence of inputs (files, stdin, HTTP bodies, RDM catalogs) read one
//! after the other as one stream. Each input is either SOIF bytes, which the engine runs
//! through the SOIF decoder, or ready-made records (JSON Lines, a catalog query).
//! Implementations live in the `soif_sources` crate; the trait lives here so the engine
//! does not depend on them.
//!
//! Inputs are opened lazily by [`Source::next_input`], so a thousand files never hold a
//! thousand open descriptors, and an error names the input it came from.

use crate::Error;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use soif_codecs::soif::split::Split;
use soif_codecs::{Action, Position, Record};
use std::fmt;
use std::sync::Arc;
use tokio::io::AsyncRead;

/// A record that could not be read or was refused, with the reason and where it was.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// What was wrong, with its position (`"bad size {x}, at a.soif: byte 7, record 1"`).
    pub message: String,
    /// Where the record was.
    pub position: Position,
    /// The record's original bytes, for `--quarantine`; `None` when they were not kept
    /// (e.g. a record over `--max-record-size`, skipped without buffering).
    pub raw: Option<Bytes>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<soif_codecs::soif::DecodeError> for Rejection {
    fn from(e: soif_codecs::soif::DecodeError) -> Rejection {
        // Bytes rejected inside `@DELETE { … }` (or `@REFRESH`, `@UPDATE`) go to the
        // quarantine inside the same envelope, as records refused later do (the engine's
        // `rejection_of`): fed back once repaired, they still delete (or refresh). When
        // the rejected bytes hold the envelope's own `}`, only the opening is added.
        let raw = match (e.raw(), e.envelope()) {
            (Some(raw), Some(action)) => Some(in_envelope(action, raw, e.closes_envelope())),
            (raw, _) => raw.cloned(),
        };
        Rejection {
            message: e.to_string(),
            position: e.position().clone(),
            raw,
        }
    }
}

/// An OAI-PMH item that could not be read: rejected with the reader's message, position
/// and `<record>` bytes.
impl From<soif_codecs::oai::read::BadItem> for Rejection {
    fn from(b: soif_codecs::oai::read::BadItem) -> Rejection {
        Rejection {
            message: b.message,
            position: b.position,
            raw: b.raw,
        }
    }
}

/// Rejected bytes from inside a Harvest envelope, put back inside it for the quarantine:
/// `@DELETE {` (or `@REFRESH`, `@UPDATE`), the bytes, and unless they already hold it
/// (`closed`), the envelope's `}` on a line of its own.
pub(crate) fn in_envelope(action: Action, bytes: &[u8], closed: bool) -> Bytes {
    let mut buf = Vec::with_capacity(bytes.len() + 24);
    buf.extend_from_slice(format!("@{} {{\n", action.envelope()).as_bytes());
    buf.extend_from_slice(bytes);
    if !closed {
        if !bytes.ends_with(b"\n") {
            buf.push(b'\n');
        }
        buf.extend_from_slice(b"}\n");
    }
    buf.into()
}

/// One item of a record stream: a record, a rejected record (the stream goes on), or an
/// I/O error that ends the input.
pub type RecordItem = Result<Result<Record, Rejection>, Error>;

/// What an input holds.
pub enum InputData {
    /// SOIF bytes (already decompressed): the engine decodes them.
    Soif(Box<dyn AsyncRead + Send + Unpin>),
    /// SOIF bytes held whole, a memory-mapped file: the engine decodes them in place
    /// (`SoifDecoder::decode_bytes`), so records are slices of the file, and calls
    /// `consumed` with the offset it has reached as it goes (the source counts the bytes
    /// for progress and lets go of what lies well behind).
    ///
    /// With `range`, only that split of the file is decoded
    /// (`soif_codecs::soif::split::decode_range`: the objects between two boundaries the
    /// boundary pass found, numbered and positioned as in a decode of the whole file).
    Held {
        data: Bytes,
        consumed: Box<dyn FnMut(u64) + Send>,
        range: Option<Split>,
    },
    /// Records decoded by the source itself (JSON Lines, RDM catalogs).
    Records(BoxStream<'static, RecordItem>),
}

impl fmt::Debug for InputData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputData::Soif(_) => f.write_str("InputData::Soif"),
            InputData::Held { data, range, .. } => match range {
                None => write!(f, "InputData::Held({} bytes)", data.len()),
                Some(r) => write!(f, "InputData::Held({} bytes, range {r})", data.len()),
            },
            InputData::Records(_) => f.write_str("InputData::Records"),
        }
    }
}

/// An opened input.
#[derive(Debug)]
pub struct Input {
    /// The name as the user gave it (path, `-`, URL): every error about it starts with it.
    pub name: Arc<str>,
    pub data: InputData,
}

/// A sequence of inputs read as one stream.
pub trait Source: Send {
    /// Opens the next input; `Ok(None)` after the last one.
    fn next_input(&mut self) -> BoxFuture<'_, Result<Option<Input>, Error>>;

    /// Bytes read so far from the inputs as stored (before decompression).
    fn bytes_read(&self) -> u64;

    /// The total size of all inputs as stored, when known up front (files), for progress.
    fn total_bytes(&self) -> Option<u64> {
        None
    }
}

/// A source over records already in memory (tests, small in-process uses such as the RDM
/// server feeding a submission through the engine).
pub struct RecordsSource {
    name: Arc<str>,
    records: Option<Vec<Record>>,
}

impl RecordsSource {
    pub fn new(name: &str, records: Vec<Record>) -> RecordsSource {
        RecordsSource {
            name: Arc::from(name),
            records: Some(records),
        }
    }
}

impl Source for RecordsSource {
    fn next_input(&mut self) -> BoxFuture<'_, Result<Option<Input>, Error>> {
        let records = self.records.take();
        let name = self.name.clone();
        Box::pin(async move {
            Ok(records.map(|records| Input {
                name,
                data: InputData::Records(Box::pin(futures::stream::iter(
                    records.into_iter().map(|r| Ok(Ok(r))),
                ))),
            }))
        })
    }

    fn bytes_read(&self) -> u64 {
        0
    }
}

/// A source over SOIF bytes in memory.
pub struct BytesSource {
    name: Arc<str>,
    bytes: Option<Bytes>,
    len: u64,
}

impl BytesSource {
    pub fn new(name: &str, bytes: impl Into<Bytes>) -> BytesSource {
        let bytes = bytes.into();
        BytesSource {
            name: Arc::from(name),
            len: bytes.len() as u64,
            bytes: Some(bytes),
        }
    }
}

impl Source for BytesSource {
    fn next_input(&mut self) -> BoxFuture<'_, Result<Option<Input>, Error>> {
        let bytes = self.bytes.take();
        let name = self.name.clone();
        Box::pin(async move {
            Ok(bytes.map(|b| Input {
                name,
                data: InputData::Soif(Box::new(std::io::Cursor::new(b))),
            }))
        })
    }

    fn bytes_read(&self) -> u64 {
        if self.bytes.is_some() {
            0
        } else {
            self.len
        }
    }

    fn total_bytes(&self) -> Option<u64> {
        Some(self.len)
    }
}
