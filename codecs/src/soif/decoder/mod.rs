//! The incremental SOIF decoder.
//!
//! [`SoifDecoder`] is a [`tokio_util::codec::Decoder`]: give it to `FramedRead` over any
//! `AsyncRead` and it yields one item per object. Its `Item` is
//! `Result<Record, DecodeError>` rather than `Record`, and its `Error` is only
//! `std::io::Error`, because `FramedRead` ends the stream after the first `Err`: a bad
//! record must not end a 4 GB archive conversion. After a bad object the decoder
//! resynchronises at the next object start and goes on.
//!
//! # How it reads
//!
//! The grammar (RFC 2655 §3.4) as real data has it:
//!
//! ```text
//! OBJECT    ::= "@" TEMPLATE ws* "{" ws* URL ws ATTRIBUTE* ws* "}"
//! ATTRIBUTE ::= ws* NAME "{" DIGITS "}" ":" TAB VALUE    -- VALUE is exactly DIGITS bytes
//! ENVELOPE  ::= "@" ("DELETE" | "REFRESH" | "UPDATE") ws* "{" ws* OBJECT* ws* "}"
//! ```
//!
//! NAME is any run of bytes other than whitespace and `{` (Harvest wrote `Embed<1>-Type`,
//! CIP hints `Weightlist-[IMAGE:Subject]`), and whitespace between a value and the next
//! name or `}` is ignored (§3.3).
//!
//! # Errors inside envelopes
//!
//! A bad object inside `@DELETE { … }` is skipped up to the next object start, and that
//! stretch may hold the envelope's own `}`. The decoder must tell, or every record after
//! the envelope would be read as deleted. The rule looks only at the end of the skipped
//! bytes: the `}`s in their trailing run of `}` and whitespace, beyond the one the bad
//! object owns (none for a stray run of bytes), close the envelope. So `}` `}` then the
//! next object closes it; a single `}` does not. A bad object whose own `}` is missing,
//! directly followed by the envelope's `}`, is the case it reads wrongly (the envelope
//! stays open until the next envelope or the end of the input). The error says which
//! envelope its bytes were in ([`DecodeError::envelope`]) and whether they closed it, so
//! a quarantine can wrap them back into it.
//!
//! # Memory and cost
//!
//! The decoder never copies a value: once an object's closing `}` is in the buffer it
//! splits the object off the read buffer and hands out [`Bytes`] slices of it. While an
//! object is incomplete it remembers where it stopped (the attribute ranges found so far,
//! and for a value whose size is known, just the size), so a record split across many
//! reads is scanned once: a 1 GB value costs one length comparison per read. At most one
//! object (bounded by `max_record_size`) plus the read buffer is held. A declared size
//! that would take the object over `max_record_size` is rejected *before* anything is
//! buffered for it, and its bytes are skipped as they arrive.
//!
//! # Undoing a skip
//!
//! A value whose declared size takes the object over `max_record_size` is stepped over as
//! its bytes arrive, never buffered. Where it ends, the bytes decide: whitespace then
//! another attribute (`NAME{n}`) or `}` confirm the size, and the object is rejected as
//! too large. Anything else (or the end of the input inside the declared bytes) means the
//! count was wrong, and the good objects it spans must not be lost: the skip is undone,
//! and resynchronisation starts again from just after the value's header. Held whole, the
//! decoder simply moves back. Streaming, the stepped-over bytes were written to a
//! temporary file (the *skip file*) as they passed; on an undo, the bytes read past them go
//! to the skip file too, and the skip file is read again (`Replay`) before any later input. A
//! skip undone while replaying pushes a skip file of its own, read first. Memory stays
//! bounded by one object plus fixed buffers; the disk holds at most the skipped bytes.
//! Once a skip has run into the end of the input, that end is known, and a later value
//! declared past it is rejected at once without stepping over anything again: otherwise
//! many objects declaring sizes past the end would each re-read the rest of the input.
//!
//! # Lenient mode
//!
//! Legacy data was mangled by mail gateways, editors and web pages: tabs became spaces,
//! CRLF conversion or whitespace collapsing broke byte counts, documents printed `{x}`
//! instead of a size. With [`DecoderOptions::lenient`] the decoder repairs what it can and
//! records each repair on the record ([`Record::repairs`]):
//! - `: ` (or `:` alone, or a bare space) instead of `:<TAB>`, and `NAME:{n}` for `NAME{n}:`;
//! - a non-numeric size: the value runs to the end of the line, or to the next
//!   `NAME{…}:` / `}` when the object was flattened onto one line;
//! - a byte count that does not land on a clean boundary (whitespace then `NAME{n}` or
//!   `}`; a name glued to the value's last byte is a count that cut it): the value ends
//!   at the first line from its start that reads as the next attribute or the object's
//!   `}` line (`line_boundary`), else at the nearest boundary on the same line, looking
//!   back to the value's start and forward `256 + n/8` bytes, and never past the next
//!   object's start. In lenient mode even a count that lands cleanly is not believed
//!   when the value would span an object boundary (`}` line, then `@TEMPLATE {`);
//! - a URL broken by a line wrap (`ftp://host/dir/ file.txt`) is joined.
//!
//! ```
//! use soif_codecs::soif::{decode_all, DecoderOptions};
//! let input = b"@FILE { http://example.com/\nTitle{7}:\tExample\n}\n";
//! let records = decode_all(input, DecoderOptions::default());
//! let record = records[0].as_ref().unwrap();
//! assert_eq!(record.get_str("Title"), Some("Example"));
//! ```
//! # Parts
//!
//! - `options`: [`DecoderOptions`].
//! - `state`: the state machine (between objects, in one, skipping, resynchronising).
//! - `object`: the object parser, resumed where it stopped.
//! - `lenient`: where a value ends when its byte count is wrong.
//! - `scan`: byte-level tests every part shares (object starts, sizes, whitespace).
//! - `replay`: the stream path's skip file and the replay of undone skips.
//! - `buffer`: the two kinds of bytes the parser reads (a read buffer, a window).
//! - `in_place`: decoding an input held whole, as records or as spans in place.

mod buffer;
mod in_place;
mod lenient;
mod object;
mod options;
mod replay;
mod scan;
mod state;

pub use in_place::{DecodeBytes, ObjectSpans};
pub use options::DecoderOptions;

use super::error::{DecodeError, ErrorKind};
use crate::record::{Action, Position, Record};
use bytes::BytesMut;
use in_place::HeldObject;
use object::Obj;
use replay::{Replay, SkipFile};
use state::State;

/// Default `max_record_size`: 64 MiB.
pub const DEFAULT_MAX_RECORD_SIZE: usize = 64 << 20;

/// Longest template name accepted.
const MAX_TEMPLATE: usize = 256;
/// Longest attribute name accepted.
const MAX_NAME: usize = 4096;
/// Longest text between `{` and `}` of a size.
const MAX_SIZE_TEXT: usize = 64;
/// Longest URL accepted.
const MAX_URL: usize = 64 * 1024;
/// Longest name a lenient search recognises as the start of the next attribute (the
/// check at the declared end accepts any name up to `MAX_NAME`).
const SEARCH_NAME: usize = 256;
/// Values larger than this get their buffer reserved in one step once their size is known.
const BIG_VALUE: usize = 1 << 20;
/// How far past a value the lenient boundary check looks: whitespace, a name, a size.
const LOOKAHEAD: usize = 512;
/// Most whitespace between a template name and its `{` that resynchronisation accepts
/// as an object start (real data has one space).
const MAX_HEADER_GAP: usize = 4096;

/// The SOIF decoder. See the module documentation.
pub struct SoifDecoder {
    opts: DecoderOptions,
    state: State,
    /// Absolute offset of `src[0]` in the input.
    base: u64,
    /// Objects finished so far (records and rejected objects).
    records: u64,
    envelope: Option<Action>,
    /// Where the open envelope started, for the error when it is never closed.
    envelope_at: u64,
    obj: Obj,
    /// How many bytes the buffer must hold before the pending value is complete.
    want: usize,
    /// `opts.attribute_limit()`, computed once.
    max_attributes: usize,
    /// Stream path: the bytes stepped over by the current skip, kept on disk until the
    /// skip is confirmed (see "Undoing a skip").
    skip_file: Option<SkipFile>,
    /// Stream path: undone skips whose bytes are read again before any later input,
    /// innermost last.
    replay: Vec<Replay>,
    /// Stream path: the buffer the parser reads while replaying.
    rbuf: BytesMut,
    /// A skip file that could not be written or read: the stream's fatal error.
    io_error: Option<std::io::Error>,
    /// The input's length, once a skip has run into its end.
    input_end: Option<u64>,
    /// Stop at the first object boundary at or past this offset (a range decode's end, the
    /// boundary pass's next split point; see [`super::split`]).
    pub(crate) stop_at: Option<u64>,
    /// The decoder stopped at `stop_at`: it stands at an object boundary, in the state a
    /// decode of the whole input is in there.
    pub(crate) stopped: bool,
    /// Records are counted, not built (the boundary pass needs only where they end).
    pub(crate) skim: bool,
    /// The last object finished in place ([`DecodeBytes::next_in_place`]).
    held: HeldObject,
}

impl Default for SoifDecoder {
    fn default() -> Self {
        SoifDecoder::new(DecoderOptions::default())
    }
}

impl SoifDecoder {
    /// A decoder with these options.
    pub fn new(opts: DecoderOptions) -> SoifDecoder {
        SoifDecoder {
            state: State::Between,
            base: 0,
            records: 0,
            envelope: None,
            envelope_at: 0,
            obj: Obj::default(),
            want: 0,
            max_attributes: opts.attribute_limit(),
            skip_file: None,
            replay: Vec::new(),
            rbuf: BytesMut::new(),
            io_error: None,
            input_end: None,
            stop_at: None,
            stopped: false,
            skim: false,
            held: HeldObject::default(),
            opts,
        }
    }

    /// A decoder in the state a decode of the whole input is in at an object boundary
    /// found by the boundary pass (see [`super::split`]): `offset` consumed, `records`
    /// objects finished, `envelope` open, and the input's end known when `input_end`.
    pub(crate) fn resumed(
        opts: DecoderOptions,
        offset: u64,
        records: u64,
        envelope: Option<(Action, u64)>,
        input_end: Option<u64>,
    ) -> SoifDecoder {
        let mut d = SoifDecoder::new(opts);
        d.base = offset;
        d.records = records;
        if let Some((action, at)) = envelope {
            d.envelope = Some(action);
            d.envelope_at = at;
        }
        d.input_end = input_end;
        d
    }

    /// The state that carries from one object to the next, at an object boundary:
    /// objects finished, the open envelope (its action and where it began), whether the
    /// input's end is known. See [`super::split`].
    pub(crate) fn carried(&self) -> (u64, Option<(Action, u64)>, bool) {
        (
            self.records,
            self.envelope.map(|a| (a, self.envelope_at)),
            self.input_end.is_some(),
        )
    }

    /// A strict decoder that rejects objects over `max_record_size` bytes.
    pub fn new_with_max_record_size(max_record_size: usize) -> SoifDecoder {
        SoifDecoder::new(DecoderOptions::with_max_record_size(max_record_size))
    }

    /// The options in use.
    pub fn options(&self) -> &DecoderOptions {
        &self.opts
    }

    /// Bytes consumed so far (the absolute offset of the next unread byte of the buffer).
    pub fn offset(&self) -> u64 {
        self.base
    }

    /// Objects finished so far, good and bad.
    pub fn objects(&self) -> u64 {
        self.records
    }
}

impl tokio_util::codec::Decoder for SoifDecoder {
    type Item = Result<Record, DecodeError>;
    type Error = std::io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        self.decode_stream(src, false)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        self.decode_stream(src, true)
    }
}

/// Decodes a complete in-memory input (tests, small inputs such as RDM messages).
///
/// It runs the stream path (the input as one read). Should the skip file of an undone
/// skip fail (no temporary directory), decoding stops there with an
/// [`ErrorKind::Spill`] error as the last item.
pub fn decode_all(input: &[u8], opts: DecoderOptions) -> Vec<Result<Record, DecodeError>> {
    let mut decoder = SoifDecoder::new(opts);
    let mut src = BytesMut::from(input);
    let mut out = Vec::new();
    loop {
        match decoder.decode_stream(&mut src, true) {
            Ok(Some(item)) => out.push(item),
            Ok(None) => break,
            Err(e) => {
                let pos = Position::new(decoder.base, decoder.records + 1)
                    .with_input(decoder.opts.input.clone());
                out.push(Err(DecodeError::new(
                    ErrorKind::Spill {
                        message: e.to_string(),
                    },
                    pos,
                )));
                break;
            }
        }
    }
    out
}
