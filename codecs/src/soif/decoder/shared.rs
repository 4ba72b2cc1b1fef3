//! The decoder's data, which every other part works on: its limits, [`SoifDecoder`] with
//! its state between calls (the state machine's [`State`], the object being parsed, the
//! skip file and replays of the stream path, the object last finished in place), and
//! what the parser makes of a finished object ([`Take`]). It imports no other part but
//! the options and the buffer interface, so that each part can use it without
//! importing back.

use super::buffer::Buffer;
use super::options::DecoderOptions;
use crate::record::{Action, Record, Repair};
use crate::soif::error::DecodeError;
use bytes::{Bytes, BytesMut};
use std::ops::Range;

/// Longest template and attribute names accepted (record rules: the `remap` transform
/// checks what a program makes against the same limits).
pub(super) use crate::rules::names::{MAX_NAME, MAX_TEMPLATE};

/// Longest text between `{` and `}` of a size.
pub(super) const MAX_SIZE_TEXT: usize = 64;

/// Longest URL accepted.
pub(super) const MAX_URL: usize = 64 * 1024;

/// Longest name a lenient search recognises as the start of the next attribute (the
/// check at the declared end accepts any name up to `MAX_NAME`).
pub(super) const SEARCH_NAME: usize = 256;

/// How far past a value the lenient boundary check looks: whitespace, a name, a size.
pub(super) const LOOKAHEAD: usize = 512;

/// Most whitespace between a template name and its `{` that resynchronisation accepts
/// as an object start (real data has one space).
pub(super) const MAX_HEADER_GAP: usize = 4096;

/// The SOIF decoder. See the module documentation.
pub struct SoifDecoder {
    pub(super) opts: DecoderOptions,
    pub(super) state: State,
    /// Absolute offset of `src[0]` in the input.
    pub(super) base: u64,
    /// Objects finished so far (records and rejected objects).
    pub(super) records: u64,
    pub(super) envelope: Option<Action>,
    /// Where the open envelope started, for the error when it is never closed.
    pub(super) envelope_at: u64,
    pub(super) obj: Obj,
    /// How many bytes the buffer must hold before the pending value is complete.
    pub(super) want: usize,
    /// `opts.attribute_limit()`, computed once.
    pub(super) max_attributes: usize,
    /// Stream path: the bytes stepped over by the current skip, kept on disk until the
    /// skip is confirmed (see "Undoing a skip").
    pub(super) skip_file: Option<SkipFile>,
    /// Stream path: undone skips whose bytes are read again before any later input,
    /// innermost last.
    pub(super) replay: Vec<Replay>,
    /// Stream path: the buffer the parser reads while replaying.
    pub(super) rbuf: BytesMut,
    /// A skip file that could not be written or read: the stream's fatal error.
    pub(super) io_error: Option<std::io::Error>,
    /// The input's length, once a skip has run into its end.
    pub(super) input_end: Option<u64>,
    /// Stop at the first object boundary at or past this offset (a range decode's end, the
    /// boundary pass's next split point; see [`crate::soif::split`]).
    pub(crate) stop_at: Option<u64>,
    /// The decoder stopped at `stop_at`: it stands at an object boundary, in the state a
    /// decode of the whole input is in there.
    pub(crate) stopped: bool,
    /// Records are counted, not built (the boundary pass needs only where they end).
    pub(crate) skim: bool,
    /// The last object finished in place ([`DecodeBytes::next_in_place`]).
    pub(super) held: HeldObject,
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
    /// found by the boundary pass (see [`crate::soif::split`]): `offset` consumed, `records`
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
    /// input's end is known. See [`crate::soif::split`].
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

pub(super) enum State {
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

/// What the parser makes of a complete object: a [`Record`] of shared slices (every
/// path), or nothing but its ranges, left in the decoder for the caller to read in place
/// ([`DecodeBytes::next_in_place`]). A type parameter, so that the parser is compiled
/// once for each and the common path pays nothing for the other.
pub(super) trait Take {
    type Out;
    fn take<B: Buffer>(decoder: &mut SoifDecoder, src: &mut B, end: usize) -> Self::Out;
}

/// Objects become [`Record`]s.
pub(super) struct AsRecord;

impl Take for AsRecord {
    type Out = Record;
    fn take<B: Buffer>(decoder: &mut SoifDecoder, src: &mut B, end: usize) -> Record {
        decoder.take_record(src, end)
    }
}

/// A value whose bytes have not all arrived.
#[derive(Clone)]
pub(super) struct Pending {
    pub(super) name: Range<usize>,
    pub(super) start: usize,
    /// `None` for a lenient `{x}`.
    pub(super) size: Option<u64>,
    /// For `{x}`: where the end-of-value scan resumes.
    pub(super) scan_from: usize,
}

/// The object being parsed. Ranges are relative to `src[0]` (the object's `@`), which
/// does not move until the object is complete.
#[derive(Default)]
pub(super) struct Obj {
    pub(super) template: Range<usize>,
    pub(super) url: Range<usize>,
    pub(super) url_joined: Option<Vec<u8>>,
    pub(super) header_done: bool,
    pub(super) cursor: usize,
    pub(super) attrs: Vec<(Range<usize>, Range<usize>)>,
    pub(super) pending: Option<Pending>,
    pub(super) repairs: Vec<Repair>,
    /// Start of the last value, where resynchronisation starts after an error: a value
    /// whose count ran too long may have swallowed the next object's start.
    pub(super) last_value_start: usize,
}

impl Obj {
    pub(super) fn reset(&mut self) {
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

/// The bytes of a skip in progress, on disk (stream path only; a file held whole can
/// simply be read again).
pub(super) struct SkipFile {
    pub(super) file: std::fs::File,
    pub(super) len: u64,
}

/// An undone skip's bytes, being read again.
pub(super) struct Replay {
    pub(super) file: std::fs::File,
    pub(super) left: u64,
}

/// Where the last object finished in place lies: `start` (absolute) and its length
/// `end`, and its record number.
#[derive(Default, Clone, Copy)]
pub(super) struct HeldObject {
    pub(super) start: u64,
    pub(super) end: usize,
    pub(super) record: u64,
}

/// Objects stay ranges of the input held whole.
pub(super) struct InPlace;

impl Take for InPlace {
    type Out = ();
    fn take<B: Buffer>(decoder: &mut SoifDecoder, src: &mut B, end: usize) {
        decoder.keep_in_place(src, end)
    }
}
