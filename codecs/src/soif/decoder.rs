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
//! temporary file (the *spill*) as they passed; on an undo, the bytes read past them go
//! to the spill too, and the spill is read again (`Replay`) before any later input. A
//! skip undone while replaying pushes a spill of its own, read first. Memory stays
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

use super::error::{DecodeError, ErrorKind};
use crate::record::{Action, Attribute, Position, Record, Repair, Value};
use bytes::{Buf, Bytes, BytesMut};
use std::ops::Range;
use std::sync::Arc;

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

/// Options for [`SoifDecoder`].
#[derive(Debug, Clone)]
pub struct DecoderOptions {
    /// The largest object accepted, in bytes (default 64 MiB). Larger objects are
    /// rejected with [`ErrorKind::RecordTooLarge`] and skipped without being buffered.
    pub max_record_size: usize,
    /// Repair what legacy data is known to carry (see the module docs).
    pub lenient: bool,
    /// The input's name, for error positions.
    pub input: Option<Arc<str>>,
    /// The most attributes one record may hold; `None`: one per 64 bytes of
    /// `max_record_size`, at least 4096 (see [`DecoderOptions::attribute_limit`]).
    pub max_attributes: Option<usize>,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        DecoderOptions {
            max_record_size: DEFAULT_MAX_RECORD_SIZE,
            lenient: false,
            input: None,
            max_attributes: None,
        }
    }
}

impl DecoderOptions {
    /// Default options with this maximum record size.
    pub fn with_max_record_size(max_record_size: usize) -> DecoderOptions {
        DecoderOptions {
            max_record_size,
            ..DecoderOptions::default()
        }
    }

    /// The same options in lenient mode.
    pub fn lenient(mut self) -> DecoderOptions {
        self.lenient = true;
        self
    }

    /// The same options naming the input in error positions.
    pub fn named(mut self, input: impl Into<Arc<str>>) -> DecoderOptions {
        self.input = Some(input.into());
        self
    }

    /// The most attributes a record may hold before it is rejected with
    /// [`ErrorKind::TooManyAttributes`].
    ///
    /// Why a limit: each attribute costs about a hundred bytes of bookkeeping (its ranges
    /// while parsing, then its name and value handles in the [`Record`]), while the
    /// smallest attribute, `A{0}:<TAB>`, is six bytes of input. Without a cap, a 63 MB
    /// record of empty attributes takes about 1 GB. One attribute per 64 bytes of
    /// `max_record_size` keeps a record's memory within about three times
    /// `max_record_size` whatever its shape; real records hold tens to a few thousand.
    pub fn attribute_limit(&self) -> usize {
        self.max_attributes
            .unwrap_or_else(|| (self.max_record_size / 64).max(4096))
    }
}

enum State {
    /// Outside any object: whitespace, an object, an envelope's `}`.
    Between,
    /// Inside an object that starts at `src[0]`.
    Object,
    /// Stepping over a value whose declared size takes the object over
    /// `max_record_size`, as its bytes arrive, then checking what follows them (see
    /// "Undoing a skip"). `remaining` counts down the declared bytes; `skipped` is what
    /// has been stepped over since the value's delimiter (the bytes an undo gives back).
    /// `prefix` is the object up to that point, `err` the error to report either way.
    Skip {
        remaining: u64,
        skipped: u64,
        err: Box<DecodeError>,
        prefix: Bytes,
        name: String,
        size: u64,
    },
    /// Looking for the next object start after an error. `err` is emitted, with the
    /// skipped bytes as its `raw`, once the start is found (it is `None` when the error
    /// was already emitted). `lost` counts bytes discarded because the region outgrew
    /// `max_record_size`.
    ///
    /// `owned` is how many `}` of the skipped bytes' trailing run belong to what is being
    /// skipped (1 for an object, 0 for stray bytes); `braces` is that run's count of `}`
    /// in the bytes already discarded (see "Errors inside envelopes").
    Resync {
        err: Option<DecodeError>,
        scan_from: usize,
        lost: u64,
        owned: u32,
        braces: u32,
        /// The bad object's bytes before the skipped region, after an undone skip: they
        /// go in front of the region in the error's `raw`.
        prefix: Option<Bytes>,
    },
}

/// A value whose bytes have not all arrived.
#[derive(Clone)]
struct Pending {
    name: Range<usize>,
    start: usize,
    /// `None` for a lenient `{x}`.
    size: Option<u64>,
    /// For `{x}`: where the end-of-value scan resumes.
    scan_from: usize,
}

/// The object being parsed. Ranges are relative to `src[0]` (the object's `@`), which
/// does not move until the object is complete.
#[derive(Default)]
struct Obj {
    template: Range<usize>,
    url: Range<usize>,
    url_joined: Option<Vec<u8>>,
    header_done: bool,
    cursor: usize,
    attrs: Vec<(Range<usize>, Range<usize>)>,
    pending: Option<Pending>,
    repairs: Vec<Repair>,
    /// Start of the last value, where resynchronisation starts after an error: a value
    /// whose count ran too long may have swallowed the next object's start.
    last_value_start: usize,
}

impl Obj {
    fn reset(&mut self) {
        self.template = 0..0;
        self.url = 0..0;
        self.url_joined = None;
        self.header_done = false;
        self.cursor = 0;
        self.attrs.clear();
        // A record of a million attributes must not keep its 32 MB of ranges forever.
        if self.attrs.capacity() > 4096 {
            self.attrs.shrink_to(4096);
        }
        self.pending = None;
        self.repairs = Vec::new();
        self.last_value_start = 1;
    }
}

enum Progress {
    /// More bytes are needed.
    NeedMore,
    /// An object ends at this offset (exclusive).
    Complete(usize),
    /// An envelope header (or an empty envelope) ends at this offset.
    Envelope(usize),
    /// A bad object: resynchronise from this offset.
    Error(DecodeError, usize),
    /// A value's declared size takes the object over `max_record_size`: the value starts
    /// at `start` (relative to the object) and declares `size` bytes for attribute `name`.
    TooLarge {
        err: DecodeError,
        start: usize,
        size: u64,
        name: String,
    },
    /// What was parsed of the object (up to `cursor`) is already over
    /// `max_record_size`, and how far it goes is not known.
    Oversized,
}

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
    spill: Option<Spill>,
    /// Stream path: undone skips whose bytes are read again before any later input,
    /// innermost last.
    replay: Vec<Replay>,
    /// Stream path: the buffer the parser reads while replaying.
    rbuf: BytesMut,
    /// A spill file that could not be written or read: the stream's fatal error.
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

/// Where the last object finished in place lies: `start` (absolute) and its length
/// `end`, and its record number.
#[derive(Default, Clone, Copy)]
struct HeldObject {
    start: u64,
    end: usize,
    record: u64,
}

/// What the parser makes of a complete object: a [`Record`] of shared slices (every
/// path), or nothing but its ranges, left in the decoder for the caller to read in place
/// ([`DecodeBytes::next_in_place`]). A type parameter, so that the parser is compiled
/// once for each and the common path pays nothing for the other.
trait Take {
    type Out;
    fn take<B: Buffer>(decoder: &mut SoifDecoder, src: &mut B, end: usize) -> Self::Out;
}

/// Objects become [`Record`]s.
struct AsRecord;

impl Take for AsRecord {
    type Out = Record;
    fn take<B: Buffer>(decoder: &mut SoifDecoder, src: &mut B, end: usize) -> Record {
        decoder.take_record(src, end)
    }
}

/// Objects stay ranges of the input held whole.
struct InPlace;

impl Take for InPlace {
    type Out = ();
    fn take<B: Buffer>(decoder: &mut SoifDecoder, src: &mut B, end: usize) {
        decoder.keep_in_place(src, end)
    }
}

/// The bytes of a skip in progress, on disk (stream path only; a file held whole can
/// simply be read again).
struct Spill {
    file: std::fs::File,
    len: u64,
}

/// An undone skip's bytes, being read again.
struct Replay {
    file: std::fs::File,
    left: u64,
}

/// How much of a replayed spill is read at a time.
const REPLAY_CHUNK: usize = 256 << 10;

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
            spill: None,
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

    fn advance<B: Buffer>(&mut self, src: &mut B, n: usize) {
        src.consume(n);
        self.base += n as u64;
    }

    fn decode_inner<B: Buffer, T: Take>(
        &mut self,
        src: &mut B,
        eof: bool,
    ) -> Option<Result<T::Out, DecodeError>> {
        loop {
            match &mut self.state {
                State::Between => {
                    let n = src.iter().position(|b| !is_ws(*b)).unwrap_or(src.len());
                    self.advance(src, n);
                    if src.is_empty() {
                        if eof {
                            if let Some(action) = self.envelope.take() {
                                // Every record since the envelope's `@` was read with its
                                // action; the file probably did not mean that. Said
                                // loudly, at the end, with where the envelope began.
                                let kind = ErrorKind::UnclosedEnvelope {
                                    envelope: action.envelope().to_string(),
                                    opened_at: self.envelope_at,
                                };
                                let pos = Position::new(self.envelope_at, self.records + 1)
                                    .with_input(self.opts.input.clone());
                                let mut err = DecodeError::new(kind, pos);
                                err.set_envelope(Some(action), false);
                                return Some(Err(err));
                            }
                        }
                        return None;
                    }
                    match src[0] {
                        b'@' => {
                            // An object boundary: everything before it has been handed
                            // out, and only `carried()` goes on to what follows.
                            if self.stop_at.is_some_and(|s| self.base >= s) {
                                self.stopped = true;
                                return None;
                            }
                            self.obj.reset();
                            self.state = State::Object;
                        }
                        b'}' if self.envelope.is_some() => {
                            self.advance(src, 1);
                            self.envelope = None;
                        }
                        _ => {
                            let err = DecodeError::new(
                                ErrorKind::Garbage { len: 0 },
                                Position::new(self.base, self.records + 1)
                                    .with_input(self.opts.input.clone()),
                            );
                            self.state = State::Resync {
                                err: Some(err),
                                scan_from: 0,
                                lost: 0,
                                owned: 0,
                                braces: 0,
                                prefix: None,
                            };
                        }
                    }
                }
                State::Object => {
                    // The parser is shown at most `limit` bytes of an object: the object
                    // itself (at most max_record_size) plus the lenient search window
                    // past its last value. Needing more means the object is too large;
                    // and since the parser never sees beyond, what it decides does not
                    // depend on how much had arrived when it looked (a mapped file and
                    // a stream read in any sizes give the same items).
                    let max = self.opts.max_record_size;
                    let limit = max.saturating_add(max / 8).saturating_add(2 * LOOKAHEAD);
                    let view = src.len().min(limit);
                    match self.parse_object(&src[..view], eof && src.len() <= limit) {
                        // Over the limit only once a byte past it has arrived: with
                        // exactly `limit` bytes the input may end there, and a mapped
                        // file, which knows its end, would call that truncated (found by
                        // fuzzing: the two paths disagreed).
                        Progress::NeedMore if src.len() > limit => {
                            return Some(Err(self.oversized(src, view)));
                        }
                        Progress::NeedMore if view >= limit => return None,
                        // Known only to be over: where exactly the parser stood depends
                        // on how much whitespace had arrived.
                        Progress::Oversized => {
                            return Some(Err(self.oversized(src, max.saturating_add(1))));
                        }
                        Progress::NeedMore => {
                            // A value whose size is known (and within max_record_size)
                            // gets its whole buffer now: a 100 MB value then costs one
                            // allocation instead of a doubling series with its copies.
                            src.make_room(self.want);
                            return None;
                        }
                        Progress::Complete(end) if end > self.opts.max_record_size => {
                            let name = self.current_name(src);
                            let mut err = DecodeError::new(
                                ErrorKind::RecordTooLarge {
                                    name,
                                    declared: end as u64,
                                    max: self.opts.max_record_size,
                                },
                                self.position_in(src, 0),
                            );
                            err.set_raw(src.take(end));
                            err.set_envelope(self.envelope, false);
                            self.base += end as u64;
                            self.records += 1;
                            self.state = State::Between;
                            return Some(Err(err));
                        }
                        Progress::Complete(end) => {
                            let out = T::take(self, src, end);
                            self.state = State::Between;
                            return Some(Ok(out));
                        }
                        Progress::Envelope(end) => {
                            self.advance(src, end);
                            self.state = State::Between;
                        }
                        Progress::Error(err, from) => {
                            self.records += 1;
                            self.state = State::Resync {
                                err: Some(err),
                                scan_from: from.max(1),
                                lost: 0,
                                owned: 1,
                                braces: 0,
                                prefix: None,
                            };
                        }
                        Progress::TooLarge {
                            mut err,
                            start,
                            size,
                            name,
                        } => {
                            err.set_envelope(self.envelope, false);
                            self.records += 1;
                            // The skip starts at the delimiter's last byte, so that an
                            // object starting right at the value's first byte is found
                            // if the skip is undone (resynchronisation never takes the
                            // first byte of what it scans).
                            let head = start - 1;
                            let prefix = src.take(head);
                            self.base += head as u64;
                            self.spill = None;
                            self.state = State::Skip {
                                remaining: size.saturating_add(1),
                                skipped: 0,
                                err: Box::new(err),
                                prefix,
                                name,
                                size,
                            };
                        }
                    }
                }
                State::Skip {
                    remaining, skipped, ..
                } => {
                    // Step over the declared bytes as they arrive (in the stream path
                    // keeping them on disk), then over whitespace, and look at what
                    // follows: another attribute or the object's `}` confirms the size.
                    let mut n = (*remaining).min(src.len() as u64) as usize;
                    *remaining -= n as u64;
                    if *remaining == 0 {
                        n += src[n..].iter().take_while(|&&b| is_ws(b)).count();
                    }
                    *skipped += n as u64;
                    let in_value = *remaining > 0;
                    if !B::HELD_WHOLE {
                        spill_write(&mut self.spill, &mut self.io_error, &src[..n]);
                    }
                    src.consume(n);
                    self.base += n as u64;
                    let verdict = if in_value {
                        if eof {
                            Some(false)
                        } else {
                            return None;
                        }
                    } else {
                        boundary_at(src, 0, eof, 0, MAX_NAME)
                    };
                    match verdict {
                        None => return None,
                        Some(true) => {
                            // The size was right: the object really is too large. The
                            // rest of it (attributes after the value, its `}`) is
                            // discarded up to the next object start.
                            self.spill = None;
                            let State::Skip { err, .. } = std::mem::replace(
                                &mut self.state,
                                State::Resync {
                                    err: None,
                                    scan_from: 0,
                                    lost: 0,
                                    owned: 1,
                                    braces: 0,
                                    prefix: None,
                                },
                            ) else {
                                unreachable!("in the Skip state")
                            };
                            return Some(Err(*err));
                        }
                        Some(false) => {
                            if !self.undo_skip(src, in_value) {
                                return None;
                            }
                        }
                    }
                }
                State::Resync {
                    err,
                    scan_from,
                    lost,
                    owned,
                    braces,
                    prefix,
                } => {
                    let mut found = None;
                    // Everything before `undecided` is known not to start an object; an
                    // `@` there needs more bytes to tell.
                    let mut undecided = src.len();
                    let mut from = *scan_from;
                    while let Some(i) = memchr::memchr(b'@', &src[from.min(src.len())..]) {
                        let p = from + i;
                        match is_object_start(src, p, eof) {
                            Some(true) => {
                                found = Some(p);
                                break;
                            }
                            Some(false) => from = p + 1,
                            None => {
                                undecided = p;
                                break;
                            }
                        }
                    }
                    let end = match found {
                        Some(p) => p,
                        None if eof => src.len(),
                        None => {
                            // Keep at most one record's worth of skipped bytes for the
                            // quarantine; beyond that they are counted, not kept. What is
                            // dropped is only what is decided: a possible object start
                            // at the end stays, with the byte before it, which tells
                            // whether the `@` follows whitespace. (The undecided rest is
                            // short: a template name and a bounded gap before `{`.)
                            let n = undecided.saturating_sub(1);
                            if undecided > self.opts.max_record_size {
                                *braces = trailing_braces(*braces, &src[..n]);
                                *lost += n as u64;
                                src.consume(n);
                                self.base += n as u64;
                                *scan_from = undecided - n;
                            } else {
                                *scan_from = undecided;
                            }
                            return None;
                        }
                    };
                    let lost = *lost;
                    let err = err.take();
                    let prefix = prefix.take();
                    // Did the skipped bytes hold the envelope's `}`? (See "Errors inside
                    // envelopes".) Decided on the bytes alone, however they arrived.
                    let envelope = self.envelope;
                    let closes =
                        envelope.is_some() && trailing_braces(*braces, &src[..end]) > *owned;
                    if closes {
                        self.envelope = None;
                    }
                    let raw = src.take(end);
                    self.base += end as u64;
                    self.state = State::Between;
                    if let Some(mut e) = err {
                        e.set_envelope(envelope, closes);
                        if let ErrorKind::Garbage { len } = e.kind_mut() {
                            *len = lost + end as u64;
                        }
                        // The same rule however the input arrived: a region longer than
                        // one record is counted, not kept (`lost` is only the part that
                        // was already dropped while waiting for its end).
                        let head = prefix.as_ref().map_or(0, |p| p.len() as u64);
                        let whole = head + lost + end as u64;
                        if whole <= self.opts.max_record_size as u64 && whole > 0 {
                            e.set_raw(match prefix {
                                Some(p) if !p.is_empty() => {
                                    let mut joined = BytesMut::with_capacity(whole as usize);
                                    joined.extend_from_slice(&p);
                                    joined.extend_from_slice(&raw);
                                    joined.freeze()
                                }
                                _ => raw,
                            });
                        }
                        return Some(Err(e));
                    }
                }
            }
        }
    }

    /// The object being parsed is over `max_record_size` and how far it goes is not
    /// known: it is rejected (`declared` is what is known of its size) and its bytes are
    /// skipped up to the next object start, counted but not kept.
    fn oversized(&mut self, src: &[u8], declared: usize) -> DecodeError {
        let mut err = DecodeError::new(
            ErrorKind::RecordTooLarge {
                name: self.current_name(src),
                declared: declared as u64,
                max: self.opts.max_record_size,
            },
            self.position_in(src, 0),
        );
        err.set_envelope(self.envelope, false);
        self.records += 1;
        self.state = State::Resync {
            err: None,
            scan_from: self.obj.cursor.max(1),
            lost: 0,
            owned: 1,
            braces: 0,
            prefix: None,
        };
        err
    }

    /// The bytes after a skipped value do not continue the object, so its declared size
    /// was wrong: give the skipped bytes back and resynchronise from just after the
    /// value's header, so that the objects inside them are read (see "Undoing a skip").
    /// `truncated`: the input ended inside the declared value. Returns whether the bytes
    /// are back in `src` (held whole); otherwise they are queued for replay and the
    /// caller returns to be fed them.
    fn undo_skip<B: Buffer>(&mut self, src: &mut B, truncated: bool) -> bool {
        let State::Skip {
            skipped,
            err,
            prefix,
            name,
            size,
            ..
        } = std::mem::replace(&mut self.state, State::Between)
        else {
            unreachable!("undo_skip outside the Skip state")
        };
        let mut err = *err;
        *err.kind_mut() = if truncated {
            ErrorKind::Truncated {
                context: format!(
                    "the value of `{name}` declares {size} bytes, {} remain",
                    skipped.saturating_sub(1)
                ),
            }
        } else {
            ErrorKind::BadValueSize {
                name,
                declared: size,
            }
        };
        if truncated {
            self.input_end = Some(self.base);
        }
        let back = B::HELD_WHOLE;
        if back {
            // `skipped` bytes were consumed from this very window: they fit in usize.
            src.rewind(usize::try_from(skipped).unwrap_or(usize::MAX));
        } else {
            // What has been read past the skipped bytes goes after them in the spill, and
            // the whole is read again before any later input.
            spill_write(&mut self.spill, &mut self.io_error, &src[..]);
            let rest = src.len();
            src.consume(rest);
            if let Some(spill) = self.spill.take() {
                match spill.into_replay() {
                    Ok(r) => self.replay.push(r),
                    Err(e) => self.io_error = Some(e),
                }
            }
        }
        self.base -= skipped;
        self.state = State::Resync {
            err: Some(err),
            scan_from: 1,
            lost: 0,
            owned: 1,
            braces: 0,
            prefix: Some(prefix),
        };
        back
    }

    /// The position of `src[rel]` in the object being parsed, with its URL once read.
    fn position_in(&self, src: &[u8], rel: usize) -> Position {
        let url = match (&self.obj.url_joined, self.obj.header_done) {
            (Some(u), _) => Some(lossy(u)),
            (None, true) => src.get(self.obj.url.clone()).map(lossy),
            (None, false) => None,
        };
        Position::new(self.base + rel as u64, self.records + 1)
            .with_input(self.opts.input.clone())
            .with_url(url)
    }

    fn current_name(&self, src: &[u8]) -> String {
        let range = self
            .obj
            .pending
            .as_ref()
            .map(|p| p.name.clone())
            .or_else(|| self.obj.attrs.last().map(|a| a.0.clone()));
        match range.and_then(|r| src.get(r)) {
            Some(n) => String::from_utf8_lossy(n).into_owned(),
            None => String::new(),
        }
    }

    fn take_record<B: Buffer>(&mut self, src: &mut B, end: usize) -> Record {
        if self.skim {
            // The boundary pass: the object is parsed (that decides where it ends) but
            // nothing of it is kept.
            src.consume(end);
            self.base += end as u64;
            self.records += 1;
            return Record::default();
        }
        let raw = src.take(end);
        let o = &mut self.obj;
        let attributes = o
            .attrs
            .iter()
            .map(|(n, v)| Attribute {
                name: raw.slice(n.clone()),
                value: Value::Bytes(raw.slice(v.clone())),
            })
            .collect();
        let url = match o.url_joined.take() {
            Some(u) => Bytes::from(u),
            None => raw.slice(o.url.clone()),
        };
        let repairs = std::mem::take(&mut o.repairs);
        let record = Record {
            template: raw.slice(o.template.clone()),
            url,
            attributes,
            action: self.envelope,
            position: Some(
                Position::new(self.base, self.records + 1).with_input(self.opts.input.clone()),
            ),
            raw: Some(raw),
            repairs,
        };
        self.base += end as u64;
        self.records += 1;
        record
    }

    /// Finishes a complete object without building a [`Record`]: its ranges stay in
    /// `self.obj` (until the next object starts) for [`DecodeBytes::next_in_place`].
    fn keep_in_place<B: Buffer>(&mut self, src: &mut B, end: usize) {
        self.held = HeldObject {
            start: self.base,
            end,
            record: self.records + 1,
        };
        src.consume(end);
        self.base += end as u64;
        self.records += 1;
    }

    fn repair(&mut self, rel: usize, message: String) {
        self.obj.repairs.push(Repair {
            offset: self.base + rel as u64,
            message,
        });
    }

    fn error(&self, src: &[u8], kind: ErrorKind, rel: usize) -> DecodeError {
        DecodeError::new(kind, self.position_in(src, rel))
    }

    /// Parses the object at `src[0]` from where it stopped last time.
    fn parse_object(&mut self, src: &[u8], eof: bool) -> Progress {
        let buf = src;
        let len = buf.len();
        if !self.obj.header_done {
            match self.parse_header(src, eof) {
                Ok(None) => {}
                Ok(Some(progress)) => return progress,
                Err((kind, at)) => return Progress::Error(self.error(src, kind, at), 1),
            }
        }
        let lenient = self.opts.lenient;
        let max = self.opts.max_record_size;
        loop {
            if let Some(p) = self.obj.pending.take() {
                match self.finish_value(src, p, eof) {
                    Ok(true) => continue,
                    Ok(false) => return self.need_more(src, eof),
                    Err(progress) => return progress,
                }
            }
            let c = skip_ws(buf, self.obj.cursor);
            self.obj.cursor = c;
            // Before every attribute name or `}`: a long URL, a value of unknown size or
            // whitespace can take the object past the limit without any declared size
            // saying so. (Checked here, at a point every way of reading reaches, so the
            // outcome does not depend on where reads ended.)
            if c > max {
                return Progress::Oversized;
            }
            if c >= len {
                return self.need_more(src, eof);
            }
            if buf[c] == b'}' {
                return Progress::Complete(c + 1);
            }
            // The attribute name: up to `{`.
            let limit = len.min(c + MAX_NAME + 1);
            // Names exclude braces: `a}b{1}:` is not an attribute.
            let stop = buf[c..limit]
                .iter()
                .position(|&b| b == b'{' || b == b'}' || is_ws(b))
                .map(|i| c + i);
            let n = match stop {
                None if limit == len => return self.need_more(src, eof),
                None => {
                    return Progress::Error(
                        self.error(src, ErrorKind::NameTooLong { max: MAX_NAME }, c),
                        self.obj.last_value_start,
                    )
                }
                Some(n) => n,
            };
            if buf[n] != b'{' || n == c {
                // Whitespace before any `{`: not an attribute.
                if lenient && self.obj.attrs.is_empty() && n > c && is_ws(buf[n]) {
                    // `@T { ftp://host/dir/ file.txt\n`: a URL broken by a line wrap.
                    let mut url = self
                        .obj
                        .url_joined
                        .take()
                        .unwrap_or_else(|| buf[self.obj.url.clone()].to_vec());
                    url.extend_from_slice(&buf[c..n]);
                    self.obj.url_joined = Some(url);
                    self.repair(
                        c,
                        format!(
                            "URL continued after whitespace: joined `{}`",
                            lossy(&buf[c..n])
                        ),
                    );
                    self.obj.cursor = n;
                    continue;
                }
                match is_object_start(buf, c, eof) {
                    // `@FILE {` where an attribute or `}` was expected: this object was
                    // never closed. It is rejected and the next one decodes normally.
                    Some(true) => {
                        let kind = ErrorKind::Unclosed;
                        return Progress::Error(self.error(src, kind, c), c);
                    }
                    // `@FILE ` with its `{` not read yet: which error this is depends on
                    // bytes still to come (found by fuzzing with one-byte reads).
                    None => return self.need_more(src, eof),
                    Some(false) => {}
                }
                let kind = match self.obj.attrs.last() {
                    Some((name, value)) => ErrorKind::BadValueSize {
                        name: lossy(&buf[name.clone()]),
                        declared: value.len() as u64,
                    },
                    None if n == c => ErrorKind::BadHeader {
                        reason: "expected an attribute name or `}` after the URL".into(),
                    },
                    None => ErrorKind::MissingSize {
                        name: lossy(&buf[c..n]),
                    },
                };
                return Progress::Error(self.error(src, kind, c), self.obj.last_value_start);
            }
            let mut name = c..n;
            // The size: `{DIGITS}`.
            let limit = len.min(n + 1 + MAX_SIZE_TEXT);
            let close = match memchr::memchr(b'}', &buf[n + 1..limit]) {
                Some(i) => n + 1 + i,
                None if limit == len && !eof => return Progress::NeedMore,
                None => {
                    let kind = ErrorKind::MissingSize {
                        name: lossy(&buf[name.clone()]),
                    };
                    return Progress::Error(self.error(src, kind, n), self.obj.last_value_start);
                }
            };
            let size_text = &buf[n + 1..close];
            let size = match parse_size(size_text) {
                SizeText::Number(s) => Some(s),
                SizeText::Overflow => {
                    let kind = ErrorKind::SizeOverflow {
                        name: lossy(&buf[name.clone()]),
                        size: lossy(size_text),
                    };
                    return Progress::Error(self.error(src, kind, n), self.obj.last_value_start);
                }
                SizeText::NotNumber if lenient => None,
                SizeText::NotNumber => {
                    let kind = ErrorKind::BadSize {
                        name: lossy(&buf[name.clone()]),
                        size: lossy(size_text),
                    };
                    return Progress::Error(self.error(src, kind, n), self.obj.last_value_start);
                }
            };
            // The delimiter: `:<TAB>`.
            let d = close + 1;
            if len < d + 2 && !eof {
                return Progress::NeedMore;
            }
            let b0 = buf.get(d).copied();
            let b1 = buf.get(d + 1).copied();
            let start = match (b0, b1) {
                (Some(b':'), Some(b'\t')) => d + 2,
                // `IDENTIFIER:{21} draft-kunze-dc-00.txt` (RFC 2655 App. C as printed).
                (Some(b' ' | b'\t'), _) if lenient && n - c > 1 && buf[n - 1] == b':' => {
                    name = c..n - 1;
                    self.repair(
                        c,
                        format!(
                            "attribute `{}`: `NAME:{{n}}` read as `NAME{{n}}:`",
                            lossy(&buf[name.clone()])
                        ),
                    );
                    d + 1
                }
                (Some(b':'), Some(b' ')) if lenient => {
                    self.repair(
                        d,
                        format!(
                            "attribute `{}`: `: ` instead of `:<TAB>`",
                            lossy(&buf[name.clone()])
                        ),
                    );
                    d + 2
                }
                (Some(b':'), _) if lenient => {
                    self.repair(
                        d,
                        format!(
                            "attribute `{}`: no TAB after `:`",
                            lossy(&buf[name.clone()])
                        ),
                    );
                    d + 1
                }
                (Some(b' ' | b'\t'), _) if lenient => {
                    self.repair(
                        d,
                        format!(
                            "attribute `{}`: no `:` after the size",
                            lossy(&buf[name.clone()])
                        ),
                    );
                    d + 1
                }
                _ => {
                    let kind = ErrorKind::MissingDelimiter {
                        name: lossy(&buf[name.clone()]),
                    };
                    return Progress::Error(self.error(src, kind, d), self.obj.last_value_start);
                }
            };
            if let Some(s) = size {
                // Checked before anything is buffered for the value. The size is the
                // input's word: `start + s` may not even fit in a u64.
                let end = (start as u64).checked_add(s);
                let at = self.base + start as u64;
                if let Some(input_end) = self.input_end.filter(|&e| at.saturating_add(s) > e) {
                    // Known to run past the end of the input (see "Undoing a skip").
                    let kind = ErrorKind::Truncated {
                        context: format!(
                            "the value of `{}` declares {s} bytes, {} remain",
                            lossy(&buf[name.clone()]),
                            input_end.saturating_sub(at)
                        ),
                    };
                    return Progress::Error(self.error(src, kind, n), start);
                }
                if end.is_none_or(|end| end > max as u64) {
                    let kind = ErrorKind::RecordTooLarge {
                        name: lossy(&buf[name.clone()]),
                        declared: end.unwrap_or(u64::MAX),
                        max,
                    };
                    return Progress::TooLarge {
                        err: self.error(src, kind, n),
                        start,
                        size: s,
                        name: lossy(&buf[name.clone()]),
                    };
                }
            } else {
                self.repair(n, format!("attribute `{}`: size {{{}}} is not a number; value read to the end of the line", lossy(&buf[name.clone()]), lossy(size_text)));
            }
            self.obj.last_value_start = start;
            self.obj.cursor = start;
            self.obj.pending = Some(Pending {
                name,
                start,
                size,
                scan_from: start,
            });
        }
    }

    fn need_more(&mut self, src: &[u8], eof: bool) -> Progress {
        if !eof {
            return Progress::NeedMore;
        }
        let context = match &self.obj.pending {
            Some(p) => match p.size {
                Some(s) => format!(
                    "the value of `{}` declares {} bytes, {} remain",
                    lossy(&src[p.name.clone()]),
                    s,
                    src.len().saturating_sub(p.start)
                ),
                None => format!("in the value of `{}`", lossy(&src[p.name.clone()])),
            },
            None if !self.obj.header_done => "in the object header".to_string(),
            None => "no closing `}`".to_string(),
        };
        let at = src.len();
        Progress::Error(
            self.error(src, ErrorKind::Truncated { context }, at),
            self.obj.last_value_start,
        )
    }

    /// `@TEMPLATE { URL`. Returns `Ok(None)` when the header is done and attributes follow.
    #[allow(clippy::type_complexity)]
    fn parse_header(
        &mut self,
        src: &[u8],
        eof: bool,
    ) -> Result<Option<Progress>, (ErrorKind, usize)> {
        let buf = src;
        let len = buf.len();
        let need = |at: usize| -> Result<Option<Progress>, (ErrorKind, usize)> {
            if eof {
                Err((
                    ErrorKind::Truncated {
                        context: "in the object header".into(),
                    },
                    at,
                ))
            } else {
                Ok(Some(Progress::NeedMore))
            }
        };
        let mut i = 1;
        while i < len && i <= MAX_TEMPLATE && !is_ws(buf[i]) && buf[i] != b'{' {
            i += 1;
        }
        if i >= len {
            return need(len);
        }
        if i > MAX_TEMPLATE {
            return Err((
                ErrorKind::BadHeader {
                    reason: format!("template name longer than {MAX_TEMPLATE} bytes"),
                },
                0,
            ));
        }
        if i == 1 {
            return Err((
                ErrorKind::BadHeader {
                    reason: "`@` not followed by a template name".into(),
                },
                0,
            ));
        }
        let template = 1..i;
        let j = skip_ws(buf, i);
        if j >= len {
            return need(len);
        }
        if buf[j] != b'{' {
            return Err((
                ErrorKind::BadHeader {
                    reason: format!("expected `{{` after `@{}`", lossy(&buf[template])),
                },
                j,
            ));
        }
        let k = skip_ws(buf, j + 1);
        if k >= len {
            return need(len);
        }
        if let Some(action) = std::str::from_utf8(&buf[template.clone()])
            .ok()
            .and_then(Action::parse)
        {
            match buf[k] {
                // `@UPDATE {` followed by objects. A new envelope implicitly closes an
                // open one: Harvest never nests them, and a broken record before an
                // envelope's `}` must not turn every later envelope into an error.
                b'@' => {
                    self.envelope = Some(action);
                    self.envelope_at = self.base;
                    return Ok(Some(Progress::Envelope(k)));
                }
                // `@DELETE { }`: an empty section.
                b'}' => return Ok(Some(Progress::Envelope(k + 1))),
                _ => {}
            }
        }
        let limit = len.min(k + MAX_URL + 1);
        let e = match buf[k..limit].iter().position(|&b| is_ws(b)) {
            Some(p) => k + p,
            None if limit == len => return need(len),
            None => {
                return Err((
                    ErrorKind::BadHeader {
                        reason: format!("URL longer than {MAX_URL} bytes"),
                    },
                    k,
                ))
            }
        };
        self.obj.template = template;
        self.obj.url = k..e;
        self.obj.header_done = true;
        self.obj.cursor = e;
        Ok(None)
    }

    /// Completes a pending value. `Ok(true)`: done; `Ok(false)`: more bytes needed.
    // The error is a `Progress` by value: this runs once per attribute, and boxing it
    // would allocate on the error path only, which is not worth the indirection.
    #[allow(clippy::result_large_err)]
    fn finish_value(&mut self, src: &[u8], p: Pending, eof: bool) -> Result<bool, Progress> {
        let buf = src;
        let len = buf.len();
        let lenient = self.opts.lenient;
        let end = match p.size {
            Some(size) => {
                // Fits in usize: checked against max_record_size when the size was read.
                let end = p.start + size as usize;
                if !lenient {
                    if len < end {
                        self.want = end;
                        self.obj.pending = Some(p);
                        return Ok(false);
                    }
                    end
                } else {
                    if len < end + LOOKAHEAD && !eof {
                        self.want = end + LOOKAHEAD;
                        self.obj.pending = Some(p);
                        return Ok(false);
                    }
                    // The declared end is taken when it is a clean boundary: an attribute
                    // or `}` after whitespace, or whitespace before it (a name glued to
                    // the value's last byte means the count cut that name in two).
                    let at_end = if len >= end {
                        let clean = end == len
                            || is_ws(buf[end])
                            || buf[end] == b'}'
                            || is_ws(buf[end - 1]);
                        // Only whitespace then the end of the input is no boundary here:
                        // the object's `}` would be missing (it may be inside the value).
                        let at_eof = eof && skip_ws(buf, end) >= len;
                        boundary_at(buf, end, eof, 0, MAX_NAME).map(|b| b && clean && !at_eof)
                    } else {
                        Some(false)
                    };
                    if at_end.is_none() && !eof {
                        // A long run of whitespace after the value: wait to see what follows.
                        self.obj.pending = Some(p);
                        return Ok(false);
                    }
                    // Even a clean end is checked for lines the value would swallow (see
                    // `line_boundary`), so the window past it must be there too.
                    let window = 256 + size as usize / 8;
                    if len < end + window && !eof {
                        self.want = end + window;
                        self.obj.pending = Some(p);
                        return Ok(false);
                    }
                    // What the repair may look at: the same bytes however the input
                    // arrived (never more than `end + window`), and never past the next
                    // object's start, so that a repair cannot merge two objects.
                    let wide_end = len.min(end + window);
                    let wide = &buf[..wide_end];
                    let wide_eof = eof && wide_end == len;
                    let hi = object_start_in(wide, p.start, wide_eof).unwrap_or(wide_end);
                    let view = &buf[..hi];
                    let view_eof = eof && hi == len;
                    // ... but never across an object boundary (a `}` line, then the next
                    // object): in lenient mode a count that would merge two objects is
                    // taken as wrong, even when it happens to land on a boundary.
                    let exact = at_end == Some(true) && !crosses_object(buf, p.start, end, eof);
                    // A count that lands on a clean boundary is believed, whatever the
                    // value holds (a value may quote SOIF). Otherwise the first line that
                    // reads as the next attribute or the object's end wins over the
                    // boundary nearest the count (see `line_boundary`).
                    let chosen = if exact {
                        None
                    } else {
                        line_boundary(wide, p.start, wide_eof)
                            .filter(|&(q, _)| q < hi)
                            .or_else(|| {
                                search_boundary(view, p.start, end, view.len(), view_eof)
                                    .map(|q| (q, "the next attribute on the same line"))
                            })
                    };
                    match chosen {
                        None if exact => end,
                        Some((q, what)) => {
                            let got = (q - p.start) as u64;
                            self.repair(
                                p.start,
                                format!(
                                    "attribute `{}` declares {} bytes; read {} ({} {}), up to {}",
                                    lossy(&buf[p.name.clone()]),
                                    size,
                                    got,
                                    size.abs_diff(got),
                                    if got < size { "fewer" } else { "more" },
                                    what
                                ),
                            );
                            q
                        }
                        None if len < end => {
                            self.obj.pending = Some(p);
                            return Err(self.need_more(src, true));
                        }
                        None => {
                            let kind = ErrorKind::BadValueSize {
                                name: lossy(&buf[p.name.clone()]),
                                declared: size,
                            };
                            return Err(Progress::Error(self.error(src, kind, end), p.start));
                        }
                    }
                }
            }
            None => {
                // `{x}`: to the end of the line, or to the next boundary when the object
                // was flattened onto one line.
                let mut i = p.scan_from;
                let mut found = None;
                while i < len {
                    let b = buf[i];
                    if b == b'\n' {
                        found = Some(i);
                        break;
                    }
                    if is_ws(b) {
                        match boundary_at(buf, i, eof, 1, SEARCH_NAME) {
                            Some(true) => {
                                found = Some(i);
                                break;
                            }
                            Some(false) => {}
                            None => break,
                        }
                    }
                    i += 1;
                }
                match found {
                    Some(mut e) => {
                        if e > p.start && buf[e - 1] == b'\r' {
                            e -= 1;
                        }
                        e
                    }
                    None if eof => len,
                    None => {
                        self.obj.pending = Some(Pending { scan_from: i, ..p });
                        return Ok(false);
                    }
                }
            }
        };
        if self.obj.attrs.len() >= self.max_attributes {
            let kind = ErrorKind::TooManyAttributes {
                max: self.max_attributes,
            };
            return Err(Progress::Error(self.error(src, kind, p.name.start), end));
        }
        self.obj.attrs.push((p.name, p.start..end));
        self.obj.cursor = end;
        Ok(true)
    }
}

/// Whether a valid boundary starts at `at`: at least `min_ws` whitespace bytes, then `}`
/// (followed by whitespace, `@` or the end) or `NAME{SIZE}` followed by `:` or
/// whitespace. `None`: more bytes are needed to tell.
fn boundary_at(buf: &[u8], at: usize, eof: bool, min_ws: usize, max_name: usize) -> Option<bool> {
    let len = buf.len();
    let i = skip_ws(buf, at);
    if i - at < min_ws {
        return Some(false);
    }
    if i >= len {
        return if eof { Some(true) } else { None };
    }
    if buf[i] == b'}' {
        return match buf.get(i + 1) {
            None if eof => Some(true),
            None => None,
            Some(&b) => Some(is_ws(b) || b == b'@'),
        };
    }
    let limit = len.min(i + max_name + 1);
    let brace = match buf[i..limit]
        .iter()
        .position(|&b| b == b'{' || is_ws(b) || b == b'}')
    {
        Some(k) if buf[i + k] == b'{' && k > 0 => i + k,
        Some(_) => return Some(false),
        None if limit == len && !eof => return None,
        None => return Some(false),
    };
    let limit = len.min(brace + 1 + 25);
    let close = match buf[brace + 1..limit]
        .iter()
        .position(|&b| b == b'}' || is_ws(b) || b == b'{')
    {
        Some(k) if buf[brace + 1 + k] == b'}' => brace + 1 + k,
        Some(_) => return Some(false),
        None if limit == len && !eof => return None,
        None => return Some(false),
    };
    match buf.get(close + 1) {
        None if eof => Some(true),
        None => None,
        Some(&b) => Some(b == b':' || is_ws(b)),
    }
}

/// The first place in `buf[start..]` where a value can end at a line break: a newline
/// (the value stops before it, and before a `\r` ahead of it) followed by a line that reads
/// as an attribute header (`Name{n}:` then a tab or space, indented or not) or as the
/// object's end (`}` lines, then the next object or the end of the input). Returns the
/// value's end and what follows it, for the repair message.
///
/// Why lines: every writer of SOIF puts an attribute on a line of its own, so when a
/// byte count is wrong, the next line that parses as an attribute is the best evidence
/// of where the value ended, better than whichever boundary lies nearest the count. A
/// value's own text rarely has such a line (its `}` lines, as in program code, are not
/// followed by an object).
fn line_boundary(buf: &[u8], start: usize, eof: bool) -> Option<(usize, &'static str)> {
    for i in memchr::memchr_iter(b'\n', &buf[start.min(buf.len())..]).map(|i| start + i) {
        let what = if attr_line_at(buf, i + 1) {
            "the next attribute line"
        } else if close_line_at(buf, i + 1, eof) {
            "the object's `}` line"
        } else {
            continue;
        };
        let q = if i > start && buf[i - 1] == b'\r' {
            i - 1
        } else {
            i
        };
        return Some((q, what));
    }
    None
}

/// Whether `buf[j..]` starts with an attribute header: spaces or tabs, `NAME{DIGITS}:`
/// then a tab or a space (or `NAME:{DIGITS}` then one, as RFC 2655 prints it).
fn attr_line_at(buf: &[u8], mut j: usize) -> bool {
    while j < buf.len() && (buf[j] == b' ' || buf[j] == b'\t') {
        j += 1;
    }
    let name = j;
    while j < buf.len() && !is_ws(buf[j]) && buf[j] != b'{' && buf[j] != b'}' {
        j += 1;
        if j - name > SEARCH_NAME {
            return false;
        }
    }
    if j == name || buf.get(j) != Some(&b'{') {
        return false;
    }
    let colon_before = buf[j - 1] == b':' && j - name > 1;
    j += 1;
    let digits = j;
    while j < buf.len() && buf[j].is_ascii_digit() {
        j += 1;
    }
    if j == digits || j - digits > 20 || buf.get(j) != Some(&b'}') {
        return false;
    }
    match (buf.get(j + 1), buf.get(j + 2)) {
        (Some(b':'), Some(b'\t' | b' ')) => true,
        (Some(b'\t' | b' '), _) => colon_before,
        _ => false,
    }
}

/// Whether `buf[j..]` starts with the object's closing `}` line: spaces or tabs, `}`, then
/// only whitespace and `}` (an envelope's) up to the next object or the end of the input.
fn close_line_at(buf: &[u8], mut j: usize, eof: bool) -> bool {
    while j < buf.len() && (buf[j] == b' ' || buf[j] == b'\t') {
        j += 1;
    }
    if buf.get(j) != Some(&b'}') {
        return false;
    }
    loop {
        j += 1;
        j = skip_ws(buf, j);
        match buf.get(j) {
            None => return eof,
            Some(b'}') => {}
            Some(b'@') => return is_object_start(buf, j, eof) == Some(true),
            Some(_) => return false,
        }
    }
}

/// Whether `buf[start..end]` holds an object boundary: a `}` at the value's start or at
/// a line's start, then only whitespace and `}`, then an object start before `end`.
fn crosses_object(buf: &[u8], start: usize, end: usize, eof: bool) -> bool {
    let starts = std::iter::once(start)
        .chain(memchr::memchr_iter(b'\n', &buf[start..end]).map(|i| start + i + 1));
    for mut j in starts {
        while j < end && (buf[j] == b' ' || buf[j] == b'\t') {
            j += 1;
        }
        if j >= end || buf[j] != b'}' {
            continue;
        }
        while j < end && (buf[j] == b'}' || is_ws(buf[j])) {
            j += 1;
        }
        if j < end && buf[j] == b'@' && is_object_start(buf, j, eof) == Some(true) {
            return true;
        }
    }
    false
}

/// The first object start (`@TEMPLATE {`) at or after `from`, if one is decided within
/// `buf`.
fn object_start_in(buf: &[u8], from: usize, eof: bool) -> Option<usize> {
    let mut at = from.max(1);
    while at < buf.len() {
        let p = at + memchr::memchr(b'@', &buf[at..])?;
        if is_object_start(buf, p, eof) == Some(true) {
            return Some(p);
        }
        at = p + 1;
    }
    None
}

/// The boundary nearest to `end`, searching back to `start` and forward `window` bytes.
fn search_boundary(
    buf: &[u8],
    start: usize,
    end: usize,
    window: usize,
    eof: bool,
) -> Option<usize> {
    let len = buf.len();
    let hi = len.min(end.saturating_add(window));
    let mut d = 1;
    loop {
        let back = end.checked_sub(d).filter(|&q| q >= start && q < len);
        let fwd = Some(end + d).filter(|&q| q < hi);
        if back.is_none() && fwd.is_none() && (end < d || end - d < start) && end + d >= hi {
            return None;
        }
        for q in [back, fwd].into_iter().flatten() {
            if is_ws(buf[q]) && boundary_at(buf, q, eof, 1, SEARCH_NAME) == Some(true) {
                return Some(q);
            }
        }
        d += 1;
    }
}

/// Whether an object starts at `p` (`@`, a template name, whitespace of
/// at most [`MAX_HEADER_GAP`] bytes, `{`). `None`: more bytes are needed to tell. The
/// answer depends only on the bytes, never on where a read ended, so resynchronising
/// finds the same objects however the input arrives. `p == 0` is never a start: it is the
/// first byte of the region being skipped (or a byte already looked at).
fn is_object_start(buf: &[u8], p: usize, eof: bool) -> Option<bool> {
    // Anywhere, not only after whitespace: Harvest's own parser finds `@FILE {` after
    // garbage on the same line, and so must resynchronisation, or that object is lost.
    if p == 0 || buf.get(p) != Some(&b'@') {
        return Some(false);
    }
    let len = buf.len();
    let mut i = p + 1;
    while i < len
        && i - p <= MAX_TEMPLATE
        && !is_ws(buf[i])
        && buf[i] != b'{'
        && buf[i] != b'@'
        && buf[i] != b'}'
    {
        i += 1;
    }
    if i >= len {
        return if eof { Some(false) } else { None };
    }
    if i == p + 1 || i - p > MAX_TEMPLATE || buf[i] == b'@' || buf[i] == b'}' {
        return Some(false);
    }
    let gap_end = len.min(i + MAX_HEADER_GAP + 1);
    let j = i + buf[i..gap_end].iter().take_while(|&&b| is_ws(b)).count();
    if j - i > MAX_HEADER_GAP {
        return Some(false);
    }
    if j >= len {
        return if eof { Some(false) } else { None };
    }
    Some(buf[j] == b'{')
}

enum SizeText {
    Number(u64),
    Overflow,
    NotNumber,
}

fn parse_size(text: &[u8]) -> SizeText {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return SizeText::NotNumber;
    }
    let mut n: u64 = 0;
    for &b in text {
        n = match n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
        {
            Some(n) => n,
            None => return SizeText::Overflow,
        };
    }
    SizeText::Number(n)
}

/// The number of `}` in the longest suffix of `bytes` made only of `}` and whitespace,
/// plus `before` (the same count for the bytes that came before) when that suffix is all
/// of `bytes`. Folding it over consecutive pieces gives the count for the whole.
fn trailing_braces(before: u32, bytes: &[u8]) -> u32 {
    let mut n = 0u32;
    for &b in bytes.iter().rev() {
        if b == b'}' {
            n = n.saturating_add(1);
        } else if !is_ws(b) {
            return n;
        }
    }
    before.saturating_add(n)
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

#[inline]
fn skip_ws(buf: &[u8], mut i: usize) -> usize {
    while i < buf.len() && is_ws(buf[i]) {
        i += 1;
    }
    i
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Appends skipped bytes to the spill, creating it on first use. A failure is kept in
/// `io_error` (the stream's fatal error) and later bytes are not written.
fn spill_write(spill: &mut Option<Spill>, io_error: &mut Option<std::io::Error>, bytes: &[u8]) {
    use std::io::Write;
    if bytes.is_empty() || io_error.is_some() {
        return;
    }
    if spill.is_none() {
        match tempfile::tempfile() {
            Ok(file) => *spill = Some(Spill { file, len: 0 }),
            Err(e) => {
                *io_error = Some(e);
                return;
            }
        }
    }
    if let Some(s) = spill {
        match s.file.write_all(bytes) {
            Ok(()) => s.len += bytes.len() as u64,
            Err(e) => *io_error = Some(e),
        }
    }
}

impl Spill {
    fn into_replay(mut self) -> std::io::Result<Replay> {
        use std::io::Seek;
        self.file.seek(std::io::SeekFrom::Start(0))?;
        Ok(Replay {
            file: self.file,
            left: self.len,
        })
    }
}

impl SoifDecoder {
    /// The stream path: decodes from `src`, but first from the bytes of undone skips
    /// (see "Undoing a skip"), which go before anything in `src`.
    fn decode_stream(
        &mut self,
        src: &mut BytesMut,
        eof: bool,
    ) -> std::io::Result<Option<Result<Record, DecodeError>>> {
        use std::io::Read;
        loop {
            if let Some(e) = self.io_error.take() {
                return Err(e);
            }
            if self.replay.is_empty() {
                if !self.rbuf.is_empty() {
                    // The replay is over: what is left of it comes before the live bytes.
                    let mut r = std::mem::take(&mut self.rbuf);
                    r.extend_from_slice(src);
                    *src = r;
                }
                let item = self.decode_inner::<_, AsRecord>(src, eof);
                if item.is_none() && (!self.replay.is_empty() || self.io_error.is_some()) {
                    // A skip was undone: its bytes (and `src`'s) wait in the replay.
                    continue;
                }
                return Ok(item);
            }
            let mut r = std::mem::take(&mut self.rbuf);
            let item = self.decode_inner::<_, AsRecord>(&mut r, false);
            self.rbuf = r;
            if item.is_some() {
                if let Some(e) = self.io_error.take() {
                    return Err(e);
                }
                return Ok(item);
            }
            if self.io_error.is_some() {
                continue;
            }
            // More bytes: from the innermost undone skip (a skip undone while replaying
            // pushed its own bytes, which come first).
            let Some(top) = self.replay.last_mut() else {
                continue;
            };
            let want = self.want.saturating_sub(self.rbuf.len()).max(REPLAY_CHUNK);
            let n = usize::try_from(top.left).unwrap_or(usize::MAX).min(want);
            if n > 0 {
                let at = self.rbuf.len();
                self.rbuf.resize(at + n, 0);
                top.file.read_exact(&mut self.rbuf[at..])?;
                top.left -= n as u64;
            }
            if top.left == 0 {
                self.replay.pop();
            }
        }
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

/// What the parser reads from: the bytes from the start of the current object (or
/// whatever comes next) to the end of what has arrived.
///
/// Two implementations share the one parser: the streaming read buffer (`BytesMut`, which
/// `FramedRead` or the engine fills) and a [`Window`] over an input already held whole (a
/// memory-mapped file). The parser only ever looks at the bytes, drops bytes from the
/// front, and splits a finished object off the front, so those are the whole interface.
trait Buffer: std::ops::Deref<Target = [u8]> {
    /// Whether every byte of the input stays reachable, so that a skip is undone by
    /// [`rewind`](Buffer::rewind) rather than from a spill file.
    const HELD_WHOLE: bool;
    /// Gives back the last `n` consumed bytes (held whole only).
    fn rewind(&mut self, n: usize);
    /// Drops `n` bytes from the front.
    fn consume(&mut self, n: usize);
    /// Splits the first `n` bytes off the front, as a shared slice.
    fn take(&mut self, n: usize) -> Bytes;
    /// The pending value needs the buffer to hold `want` bytes (0: nothing known).
    fn make_room(&mut self, want: usize);
}

impl Buffer for BytesMut {
    const HELD_WHOLE: bool = false;

    fn rewind(&mut self, _n: usize) {
        // Never called: the stream path undoes a skip from its spill.
    }

    fn consume(&mut self, n: usize) {
        self.advance(n);
    }

    fn take(&mut self, n: usize) -> Bytes {
        self.split_to(n).freeze()
    }

    fn make_room(&mut self, want: usize) {
        // A value whose size is known (and within max_record_size) gets its whole
        // buffer now: a 100 MB value then costs one allocation instead of a doubling
        // series with its copies.
        if want > self.capacity() && want - self.len() > BIG_VALUE {
            self.reserve(want - self.len());
        }
    }
}

/// The part of an input held whole that the parser has been shown so far: `data[start..end]`.
///
/// The window grows as a read buffer would fill (see [`DecodeBytes`]), so the parser sees
/// the same sequence of states as when streaming, and a record is a slice of `data`.
struct Window {
    data: Bytes,
    start: usize,
    end: usize,
}

impl std::ops::Deref for Window {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }
}

impl Buffer for Window {
    const HELD_WHOLE: bool = true;

    fn rewind(&mut self, n: usize) {
        self.start = self.start.saturating_sub(n);
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
    }

    fn take(&mut self, n: usize) -> Bytes {
        let out = self.data.slice(self.start..self.start + n);
        self.start += n;
        out
    }

    fn make_room(&mut self, _want: usize) {}
}

/// How far the window over an input held whole grows when the parser needs more bytes
/// and nothing tells it how many: the same order as a streaming read.
const WINDOW_STEP: usize = 1 << 20;

/// Decodes an input held whole in memory, such as a memory-mapped file: an iterator of
/// records whose values are slices of the input, so nothing is copied at all.
///
/// Made by [`SoifDecoder::decode_bytes`]. It runs the same parser as the streaming
/// decoder and yields the same items as feeding the input through `FramedRead` would,
/// errors and repairs included. A value whose size is declared is stepped over in one
/// move instead of being read through, which is why one huge record costs no more than
/// its header.
///
/// ```
/// use bytes::Bytes;
/// use soif_codecs::soif::SoifDecoder;
/// let input = Bytes::from_static(b"@FILE { http://a/\nTitle{2}:\tHi\n}\n@FILE { http://b/\n}\n");
/// let urls: Vec<_> = SoifDecoder::default()
///     .decode_bytes(input)
///     .map(|r| r.unwrap().url_str().into_owned())
///     .collect();
/// assert_eq!(urls, ["http://a/", "http://b/"]);
/// ```
pub struct DecodeBytes {
    pub(crate) decoder: SoifDecoder,
    window: Window,
    done: bool,
}

impl DecodeBytes {
    /// Bytes of the input consumed so far (the offset of the next object or gap).
    pub fn offset(&self) -> u64 {
        self.decoder.offset()
    }

    /// The decoder, for its counters.
    pub fn decoder(&self) -> &SoifDecoder {
        &self.decoder
    }
}

impl Iterator for DecodeBytes {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_with::<AsRecord>()
    }
}

impl DecodeBytes {
    fn next_with<T: Take>(&mut self) -> Option<Result<T::Out, DecodeError>> {
        while !self.done {
            let len = self.window.data.len();
            let eof = self.window.end == len;
            if let Some(item) = self.decoder.decode_inner::<_, T>(&mut self.window, eof) {
                return Some(item);
            }
            if self.decoder.stopped {
                // At the range's end (see `split`): not the end of the input, and going
                // on from here is possible once the stop is moved.
                return None;
            }
            if eof {
                self.done = true;
                break;
            }
            // Show the parser more: to the end of a pending value of known size when
            // there is one (it is then checked once, not read through), else one step.
            let w = &mut self.window;
            let want = w.start + self.decoder.pending_end().unwrap_or(0);
            w.end = (w.end + WINDOW_STEP).max(want).min(len);
        }
        None
    }

    /// The next item as [`next`](Iterator::next) gives it, except that a good object is
    /// not made into a [`Record`]: it is handed out as the ranges of its parts in the
    /// input ([`ObjectSpans`]), valid until the next call. Rejections are the same
    /// [`DecodeError`]s, with their raw bytes.
    ///
    /// Why: a record costs a [`Bytes`] handle per name and value (two atomic reference
    /// count updates each, and a vector to hold them), which is most of the decoding
    /// cost of small attributes. A caller that copies the bytes out anyway (the Arrow
    /// batch builder) reads them straight from the input instead.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use soif_codecs::soif::SoifDecoder;
    /// let input = Bytes::from_static(b"@FILE { http://a/\nTitle{2}:\tHi\n}\n");
    /// let mut objects = SoifDecoder::default().decode_bytes(input);
    /// let object = objects.next_in_place().unwrap().unwrap();
    /// assert_eq!(object.url(), b"http://a/");
    /// assert_eq!(object.attributes().collect::<Vec<_>>(), [(&b"Title"[..], &b"Hi"[..])]);
    /// assert_eq!(object.to_record().get_str("Title"), Some("Hi"));
    /// ```
    pub fn next_in_place(&mut self) -> Option<Result<ObjectSpans<'_>, DecodeError>> {
        match self.next_with::<InPlace>()? {
            Err(e) => Some(Err(e)),
            Ok(()) => {
                let d = &self.decoder;
                let h = d.held;
                // The object lies in the window's data (the decoder's `base` is the
                // window's start, moved in step), so the offset fits in usize.
                let start = usize::try_from(h.start).unwrap_or(usize::MAX);
                Some(Ok(ObjectSpans {
                    input: &self.window.data,
                    object: &self.window.data[start..start + h.end],
                    start,
                    template: d.obj.template.clone(),
                    url: d.obj.url.clone(),
                    joined_url: d.obj.url_joined.as_deref(),
                    attrs: &d.obj.attrs,
                    action: d.envelope,
                    repairs: &d.obj.repairs,
                    record: h.record,
                    name: d.opts.input.as_ref(),
                }))
            }
        }
    }
}

/// A good object decoded in place by [`DecodeBytes::next_in_place`]: its parts as
/// ranges of the input, which it borrows.
#[derive(Clone)]
pub struct ObjectSpans<'a> {
    input: &'a Bytes,
    object: &'a [u8],
    start: usize,
    template: Range<usize>,
    url: Range<usize>,
    joined_url: Option<&'a [u8]>,
    attrs: &'a [(Range<usize>, Range<usize>)],
    action: Option<Action>,
    repairs: &'a [Repair],
    record: u64,
    name: Option<&'a Arc<str>>,
}

impl<'a> ObjectSpans<'a> {
    /// The whole input the object was read from.
    pub fn input(&self) -> &'a Bytes {
        self.input
    }

    /// The object's bytes, exactly as read (`@` to `}`).
    pub fn bytes(&self) -> &'a [u8] {
        self.object
    }

    /// Where the object starts in the input.
    pub fn offset(&self) -> usize {
        self.start
    }

    /// The template, as a range of the input.
    pub fn template_range(&self) -> Range<usize> {
        self.template.start + self.start..self.template.end + self.start
    }

    /// The template.
    pub fn template(&self) -> &'a [u8] {
        &self.object[self.template.clone()]
    }

    /// The URL as a range of the input; `None` when a lenient repair joined it from
    /// pieces (then [`url`](Self::url) has the joined bytes).
    pub fn url_range(&self) -> Option<Range<usize>> {
        match self.joined_url {
            Some(_) => None,
            None => Some(self.url.start + self.start..self.url.end + self.start),
        }
    }

    /// The URL.
    pub fn url(&self) -> &'a [u8] {
        self.joined_url.unwrap_or(&self.object[self.url.clone()])
    }

    /// How many attributes the object has.
    pub fn attribute_count(&self) -> usize {
        self.attrs.len()
    }

    /// The attributes' names and values as ranges of the input, in order.
    pub fn attribute_ranges(
        &self,
    ) -> impl ExactSizeIterator<Item = (Range<usize>, Range<usize>)> + 'a {
        let s = self.start;
        self.attrs
            .iter()
            .map(move |(n, v)| (n.start + s..n.end + s, v.start + s..v.end + s))
    }

    /// The attributes' names and values, in order.
    pub fn attributes(&self) -> impl ExactSizeIterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let o = self.object;
        self.attrs
            .iter()
            .map(move |(n, v)| (&o[n.clone()], &o[v.clone()]))
    }

    /// The envelope's action, when the object is inside one.
    pub fn action(&self) -> Option<Action> {
        self.action
    }

    /// The lenient repairs made to the object.
    pub fn repairs(&self) -> &'a [Repair] {
        self.repairs
    }

    /// The object's position (offset of its `@`, record number, input name).
    pub fn position(&self) -> Position {
        Position::new(self.start as u64, self.record).with_input(self.name.cloned())
    }

    /// The [`Record`] that [`DecodeBytes`]'s iterator would have handed out for it
    /// (its values are slices of the input, nothing is copied).
    pub fn to_record(&self) -> Record {
        let raw = self.input.slice(self.start..self.start + self.object.len());
        Record {
            template: raw.slice(self.template.clone()),
            url: match self.joined_url {
                Some(u) => Bytes::copy_from_slice(u),
                None => raw.slice(self.url.clone()),
            },
            attributes: self
                .attrs
                .iter()
                .map(|(n, v)| Attribute {
                    name: raw.slice(n.clone()),
                    value: Value::Bytes(raw.slice(v.clone())),
                })
                .collect(),
            action: self.action,
            position: Some(self.position()),
            raw: Some(raw),
            repairs: self.repairs.to_vec(),
        }
    }
}

impl SoifDecoder {
    /// Decodes `input`, held whole, without copying it: see [`DecodeBytes`].
    pub fn decode_bytes(self, input: Bytes) -> DecodeBytes {
        self.decode_bytes_from(input, 0)
    }

    /// Decodes `input`, held whole, from byte `from` on, the decoder standing there (its
    /// offset is `from`: see `resumed`).
    pub(crate) fn decode_bytes_from(self, input: Bytes, from: usize) -> DecodeBytes {
        let from = from.min(input.len());
        DecodeBytes {
            decoder: self,
            window: Window {
                data: input,
                start: from,
                end: from,
            },
            done: false,
        }
    }

    /// Where the pending value of the object being parsed ends (with the lenient
    /// look-ahead), relative to the object's start; `None` when no value of known size is
    /// pending.
    fn pending_end(&self) -> Option<usize> {
        if let State::Skip { remaining, .. } = self.state {
            // Step over a skipped value in one move, with room to see what follows it.
            let r = usize::try_from(remaining).ok()?;
            return Some(r.saturating_add(2 * LOOKAHEAD + MAX_NAME));
        }
        if !matches!(self.state, State::Object) {
            return None;
        }
        let p = self.obj.pending.as_ref()?;
        let end = p.start.checked_add(usize::try_from(p.size?).ok()?)?;
        Some(if self.opts.lenient {
            end.saturating_add(LOOKAHEAD)
        } else {
            end
        })
    }
}

/// Decodes a complete in-memory input (tests, small inputs such as RDM messages).
///
/// It runs the stream path (the input as one read). Should the spill file of an undone
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
