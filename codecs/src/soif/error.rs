//! Decoding errors.
//!
//! A [`DecodeError`] is about one object (or one run of bytes between objects), never
//! about the stream: the decoder reports it as an item (`Some(Err(e))`) and then
//! resynchronises at the next object start, so a bad record costs that record only.
//! Each error carries the [`Position`] where it happened and, where the decoder could keep
//! them within `max_record_size`, the offending bytes exactly as read ([`DecodeError::raw`])
//! so that `--on-error quarantine` loses nothing.

use crate::record::{Action, Position};
use bytes::Bytes;
use std::fmt;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bytes that are neither whitespace nor an object between two objects (for example
    /// an HTML page, or text after a truncated stream).
    Garbage { len: u64 },
    /// `@` not followed by `TEMPLATE {`.
    BadHeader { reason: String },
    /// An attribute name not followed by `{SIZE}`.
    MissingSize { name: String },
    /// A VALUE-SIZE that is not a number (`{x}`); `--lenient` reads such values to the end
    /// of the line.
    BadSize { name: String, size: String },
    /// A VALUE-SIZE larger than any file could be (more than 20 digits or above `u64`).
    SizeOverflow { name: String, size: String },
    /// `{SIZE}` not followed by the `:<TAB>` delimiter.
    MissingDelimiter { name: String },
    /// The object (or one declared value) is larger than `max_record_size`; its bytes
    /// were skipped without being buffered. `declared` is the size a declared value
    /// brings it to, or the bytes seen when the object ran past the limit without one
    /// (at least `max + 1`).
    RecordTooLarge {
        name: String,
        declared: u64,
        max: usize,
    },
    /// After a value of the declared size there is neither another attribute nor `}`:
    /// the count is wrong (`--lenient` looks for the nearest valid boundary).
    BadValueSize { name: String, declared: u64 },
    /// A new object (`@TEMPLATE {`) starts where an attribute or the closing `}` was
    /// expected.
    Unclosed,
    /// The input ended inside an object.
    Truncated { context: String },
    /// An attribute name longer than the decoder accepts (no `{` found).
    NameTooLong { max: usize },
    /// The object holds more attributes than the decoder accepts
    /// ([`DecoderOptions::attribute_limit`](super::DecoderOptions::attribute_limit)).
    TooManyAttributes { max: usize },
    /// The input ended inside a Harvest envelope (`@DELETE {`, `@REFRESH {`,
    /// `@UPDATE {`) that was never closed; `opened_at` is the envelope's byte offset. The
    /// records read inside it carry its action, which may not be what the file meant.
    UnclosedEnvelope { envelope: String, opened_at: u64 },
    /// The temporary file that keeps a skipped value's bytes (in case its declared size
    /// proves wrong) could not be written or read. Only [`decode_all`](super::decode_all)
    /// reports it as an item; the stream decoder returns it as its I/O error.
    Spill { message: String },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.describe(f, false)
    }
}

impl ErrorKind {
    /// The message; `lenient`: the decoder that met the error was already lenient, so
    /// the message suggests no `--lenient`.
    fn describe(&self, f: &mut fmt::Formatter<'_>, lenient: bool) -> fmt::Result {
        match self {
            ErrorKind::BadSize { name, size } if lenient => {
                write!(f, "attribute `{name}` has a non-numeric size {{{size}}}")
            }
            ErrorKind::MissingDelimiter { name } if lenient => {
                write!(f, "attribute `{name}`: expected `:<TAB>` after the size")
            }
            ErrorKind::BadValueSize { name, declared } if lenient => write!(
                f,
                "attribute `{name}` declares {declared} bytes, but no attribute or `}}` follows them, and lenient decoding found no other end for the value within the object"
            ),
            ErrorKind::Garbage { len } => {
                write!(f, "{len} bytes that are not a SOIF object (expected `@TEMPLATE {{`)")
            }
            ErrorKind::BadHeader { reason } => write!(f, "malformed object header: {reason}"),
            ErrorKind::MissingSize { name } => {
                write!(f, "attribute `{name}` is not followed by {{VALUE-SIZE}}")
            }
            ErrorKind::BadSize { name, size } => write!(
                f,
                "attribute `{name}` has a non-numeric size {{{size}}} (use --lenient to read it to the end of the line)"
            ),
            ErrorKind::SizeOverflow { name, size } => {
                write!(f, "attribute `{name}` has an impossible size {{{size}}}")
            }
            ErrorKind::MissingDelimiter { name } => write!(
                f,
                "attribute `{name}`: expected `:<TAB>` after the size (use --lenient to accept `: `)"
            ),
            ErrorKind::RecordTooLarge {
                name,
                declared,
                max,
            } => write!(
                f,
                "record too large: attribute `{name}` brings it to {declared} bytes, over --max-record-size {max}; skipped"
            ),
            ErrorKind::BadValueSize { name, declared } => write!(
                f,
                "attribute `{name}` declares {declared} bytes, but no attribute or `}}` follows them (wrong byte count? try --lenient)"
            ),
            ErrorKind::Unclosed => {
                write!(f, "object not closed: `}}` missing before the next `@TEMPLATE {{`")
            }
            ErrorKind::Truncated { context } => write!(f, "input ended inside an object: {context}"),
            ErrorKind::NameTooLong { max } => {
                write!(f, "attribute name longer than {max} bytes (no `{{` found)")
            }
            ErrorKind::TooManyAttributes { max } => write!(
                f,
                "object has more than {max} attributes (one per 64 bytes of --max-record-size); skipped"
            ),
            ErrorKind::UnclosedEnvelope {
                envelope,
                opened_at,
            } => write!(
                f,
                "input ended inside the `@{envelope} {{` envelope opened at byte {opened_at}: its closing `}}` is missing, so every record after it was read as `{}`",
                envelope.to_ascii_lowercase()
            ),
            ErrorKind::Spill { message } => {
                write!(f, "could not keep skipped bytes in a temporary file: {message}")
            }
        }
    }
}

/// A bad object or run of bytes, with where it was and (when kept) its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    kind: ErrorKind,
    pos: Position,
    raw: Option<Bytes>,
    envelope: Option<Action>,
    closes_envelope: bool,
    /// Met by a lenient decoder: the message suggests no `--lenient`.
    lenient: bool,
}

impl DecodeError {
    pub(crate) fn new(kind: ErrorKind, pos: Position) -> DecodeError {
        DecodeError {
            kind,
            pos,
            raw: None,
            envelope: None,
            closes_envelope: false,
            lenient: false,
        }
    }

    pub(crate) fn set_lenient(&mut self, lenient: bool) {
        self.lenient = lenient;
    }

    pub(crate) fn set_envelope(&mut self, envelope: Option<Action>, closes: bool) {
        self.envelope = envelope;
        self.closes_envelope = closes && envelope.is_some();
    }

    /// The Harvest envelope (`@DELETE { … }`, `@REFRESH`, `@UPDATE`) the rejected bytes
    /// were in, if any: a quarantine writes them back inside it, so that a repaired file
    /// still deletes (or refreshes) what the original would have.
    pub fn envelope(&self) -> Option<Action> {
        self.envelope
    }

    /// Whether [`raw`](Self::raw) ends with that envelope's closing `}` (the decoder
    /// judged the envelope to end within the rejected bytes; see the decoder's "Errors
    /// inside envelopes").
    pub fn closes_envelope(&self) -> bool {
        self.closes_envelope
    }

    pub(crate) fn kind_mut(&mut self) -> &mut ErrorKind {
        &mut self.kind
    }

    pub(crate) fn set_raw(&mut self, raw: Bytes) {
        self.raw = Some(raw);
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Where: input, byte offset, record number, URL when known.
    pub fn position(&self) -> &Position {
        &self.pos
    }

    /// The rejected bytes exactly as read, from the object's `@` (or the first stray byte)
    /// up to where the decoder resynchronised. `None` when they were too large to keep
    /// (see [`ErrorKind::RecordTooLarge`]) or nothing was consumed.
    pub fn raw(&self) -> Option<&Bytes> {
        self.raw.as_ref()
    }

    /// Whether decoding goes on after this error. Every current kind is recoverable: the
    /// decoder resynchronises at the next object. The method exists so callers need not
    /// change if an unrecoverable kind is added.
    pub fn is_recoverable(&self) -> bool {
        true
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.pos)?;
        self.kind.describe(f, self.lenient)
    }
}

impl std::error::Error for DecodeError {}

#[cfg(test)]
mod tests {
    use crate::soif::{decode_all, DecoderOptions};

    /// A wrong byte count no boundary repairs: the strict decoder suggests `--lenient`,
    /// the lenient one (which has just tried) does not.
    #[test]
    fn only_a_strict_decoder_suggests_lenient() {
        let input: &[u8] = b"@FILE { u\nTitle{3}:\tabcdef\n@FILE { v\nT{1}:\tx\n}\n";
        let strict = decode_all(input, DecoderOptions::default());
        let e = strict[0].as_ref().unwrap_err().to_string();
        assert!(e.contains("try --lenient"), "{e}");
        let lenient = decode_all(input, DecoderOptions::default().lenient());
        let e = lenient[0].as_ref().unwrap_err().to_string();
        assert!(e.contains("declares 3 bytes"), "{e}");
        assert!(!e.contains("--lenient"), "{e}");
        assert!(e.contains("lenient decoding found no other end"), "{e}");
        assert_eq!(lenient[1].as_ref().unwrap().url_str(), "v");
    }
}
