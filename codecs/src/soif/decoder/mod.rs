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
//! - `shared`: [`SoifDecoder`]'s data (its limits and state), which the other parts work on.
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
mod shared;
mod state;

pub use in_place::{DecodeBytes, ObjectSpans};
pub use options::{DecoderOptions, DEFAULT_MAX_RECORD_SIZE};
pub use shared::SoifDecoder;

use super::error::{DecodeError, ErrorKind};
use crate::record::{Position, Record};
use bytes::BytesMut;

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
