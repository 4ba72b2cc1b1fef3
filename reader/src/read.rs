//! The reading loop: inputs → SOIF decoder → error policy → records, pulled one batch
//! at a time by the caller.
//!
//! It is the engine's decode stage (`soif_pipeline::engine`) without the threads: the
//! caller asks for the next batch, and the loop reads, decodes and applies the policy on
//! the caller's thread until the batch is full. Memory is one batch plus what the decoder
//! holds (one record and its read buffer), whatever the input's size. The loop is plain
//! Rust (no Python or Java objects), so the Python module runs it with the GIL released.
//!
//! For a batch, [`Core::fill_chunk`] gathers a batch's worth: objects of an input held
//! whole stay ranges of it ([`Placed`], the fast path, also with the `_corrupt_record`
//! and `_source` columns), other inputs' records and ([`ErrorPolicy::Column`]) bad records
//! are [`Row`]s; a chunk holds one kind, and an item of the other kind read at its end
//! is carried over to start the next. `soif.records` takes rows only ([`Core::fill`]).

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use soif_arrow::Spans;
use soif_codecs::soif::split::{decode_range, RangeSpec};
use soif_codecs::soif::{DecodeBytes, DecodeError, DecoderOptions, ObjectSpans, SoifDecoder};
use soif_codecs::Record;
use soif_options::ErrorPolicy;
// A stream's read buffer grows as the engine's does.
use soif_pipeline::engine::{READ_CAPACITY, READ_SPARE};
use soif_pipeline::quarantine::QuarantineFile;
use soif_pipeline::source::{InputData, Rejection, Source};
use soif_pipeline::Error;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncReadExt;
use tokio_util::codec::Decoder;

/// Rejections kept for `Reader.errors` (the counts go on past it).
pub const MAX_ERRORS: usize = 1000;

/// A record that could not be read, as a row (`on_error="column"`).
#[derive(Debug, Clone)]
pub struct Corrupt {
    pub rejection: Rejection,
    /// Its bytes exactly as in the input (for a quarantine, bytes from inside an envelope
    /// are wrapped back into it; these are not); `None` when the decoder did not keep
    /// them (an object over `max_record_size`).
    pub bytes: Option<Bytes>,
}

impl From<DecodeError> for Corrupt {
    fn from(e: DecodeError) -> Corrupt {
        Corrupt {
            bytes: e.raw().cloned(),
            rejection: Rejection::from(e),
        }
    }
}

impl From<Rejection> for Corrupt {
    fn from(rejection: Rejection) -> Corrupt {
        Corrupt {
            bytes: rejection.raw.clone(),
            rejection,
        }
    }
}

/// What a read hands out: a record, or (`on_error="column"`) a record that could not be
/// read.
#[derive(Debug)]
pub enum Row {
    Record(Record),
    Corrupt(Box<Corrupt>),
}

/// Why reading stopped, for the front ends' exceptions.
#[derive(Debug, Clone)]
pub enum Failure {
    /// A record was rejected under `on_error="fail"`.
    Decode(Rejection),
    /// An input could not be opened or read, or the quarantine could not be written.
    Io { message: String },
    /// A bad argument (a glob that matches nothing…).
    Config(String),
}

impl Failure {
    pub fn message(&self) -> String {
        match self {
            Failure::Decode(r) => r.message.clone(),
            Failure::Io { message } | Failure::Config(message) => message.clone(),
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e {
            Error::Config(m) => Failure::Config(m),
            other => Failure::Io {
                message: other.to_string(),
            },
        }
    }
}

/// The counts of a read, shared with the front end's object (the Python reader keeps
/// them readable once the reader itself has been handed to pyarrow, Polars or DuckDB).
#[derive(Debug, Default)]
pub struct Counts {
    pub records_in: AtomicU64,
    pub records_out: AtomicU64,
    pub rejected: AtomicU64,
    pub repaired: AtomicU64,
    pub quarantined: AtomicU64,
    pub not_quarantined: AtomicU64,
    /// Records the transforms made beyond one per record read (`remap`'s fan-out):
    /// `records_in + added = records_out + rejected + filtered`.
    pub added: AtomicU64,
    pub bytes: AtomicU64,
    /// The first [`MAX_ERRORS`] rejections under `skip` and `quarantine`.
    pub errors: Mutex<Vec<Rejection>>,
    /// The failure that ended the read, kept for `Reader.error`: through the Arrow C
    /// stream a consumer sees only its message.
    pub failure: Mutex<Option<Failure>>,
    /// The transforms' warnings (`dc`'s values it could not convert…), the first
    /// [`MAX_ERRORS`].
    pub warnings: Mutex<Vec<String>>,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// The input being read.
enum Feed {
    Stream {
        name: Arc<str>,
        reader: soif_sources::decompress::Reader,
        decoder: SoifDecoder,
        buf: BytesMut,
        read: u64,
        records: u64,
        eof: bool,
    },
    Held {
        items: DecodeBytes,
        consumed: Box<dyn FnMut(u64) + Send>,
    },
    Records {
        stream: futures::stream::BoxStream<'static, soif_pipeline::source::RecordItem>,
        records: u64,
    },
}

/// The next row of a reader fed from elsewhere (`None` at the end).
pub(crate) type RowFeed = Box<dyn FnMut() -> Result<Option<Row>, Failure> + Send>;

/// No input: the source of a reader whose rows come from elsewhere (its chain).
struct NoInput;

impl Source for NoInput {
    fn next_input(
        &mut self,
    ) -> futures::future::BoxFuture<'_, Result<Option<soif_pipeline::Input>, Error>> {
        Box::pin(async { Ok(None) })
    }
    fn bytes_read(&self) -> u64 {
        0
    }
    fn total_bytes(&self) -> Option<u64> {
        Some(0)
    }
}

/// The source of files read by path, for both front ends (`soif.read` and the JVM
/// reader): a byte range of one plain file, starting in the decoder state `range` gives,
/// or the files `paths` name (globs and directories expanded, compressed files inflated).
pub fn path_source(
    paths: &[String],
    range: Option<RangeSpec>,
    options: &soif_options::SourceOptions,
) -> Result<Box<dyn Source>, Failure> {
    if let (Some(spec), [path]) = (range, paths) {
        return Ok(Box::new(soif_sources::range::RangeSource::new(
            PathBuf::from(path),
            spec,
        )));
    }
    if range.is_some() {
        return Err(Failure::Config(
            "a byte range is read from one file: give one path".into(),
        ));
    }
    let specs = soif_sources::expand(paths)?;
    Ok(Box::new(soif_sources::InputSource::new(
        specs,
        soif_sources::InputSettings::from(options),
    )))
}

/// See the module documentation.
pub struct Core {
    rt: tokio::runtime::Runtime,
    source: Box<dyn Source>,
    feed: Option<Feed>,
    decoder: DecoderOptions,
    policy: ErrorPolicy,
    quarantine: Option<QuarantineFile>,
    counts: Arc<Counts>,
    /// A failure met while a batch was being filled: the batch is handed out first.
    pending: Option<Failure>,
    /// The start of the next chunk: an item [`chunk_step`](Self::chunk_step) read but
    /// could not add to the chunk it was filling (a bad record after good objects in
    /// place, or the other way round).
    carry: Option<Chunk>,
    done: bool,
    /// A failure was handed out: the read is over.
    failed: bool,
    /// Where the rows come from when not from `source`: the transform chain, reading
    /// another `Core` on its own thread (see [`crate::chain`]).
    rows: Option<RowFeed>,
}

impl Core {
    pub fn new(
        source: Box<dyn Source>,
        decoder: DecoderOptions,
        policy: ErrorPolicy,
        counts: Arc<Counts>,
    ) -> Result<Core, Failure> {
        // One thread: the caller's. `enable_all` for the HTTP client's timers and sockets.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::Io {
                message: format!("starting the I/O runtime: {e}"),
            })?;
        let quarantine = match &policy {
            // Created by the first rejected record, as the CLI's: a read that rejects
            // nothing leaves no file (and removes an earlier read's).
            ErrorPolicy::Quarantine(path) => {
                Some(QuarantineFile::open(path).map_err(|e| Failure::Io {
                    message: format!("quarantine {}: {e}", path.display()),
                })?)
            }
            _ => None,
        };
        Ok(Core {
            rt,
            source,
            feed: None,
            decoder,
            policy,
            quarantine,
            counts,
            pending: None,
            carry: None,
            done: false,
            failed: false,
            rows: None,
        })
    }

    /// A reader that reads nothing itself: its rows are `rows`' (the transform chain's,
    /// see [`Core::with_transforms`]), under `policy`; no input, no quarantine of its own.
    pub(crate) fn from_rows(
        rows: RowFeed,
        decoder: DecoderOptions,
        policy: ErrorPolicy,
        counts: Arc<Counts>,
    ) -> Result<Core, Failure> {
        let mut core = Core::new(Box::new(NoInput), decoder, ErrorPolicy::Skip, counts)?;
        core.policy = policy;
        core.rows = Some(rows);
        Ok(core)
    }

    /// Opens the next input as the feed; false at the end of the inputs.
    fn open_next(&mut self) -> Result<bool, Failure> {
        if self.done {
            return Ok(false);
        }
        let input = self.rt.block_on(self.source.next_input());
        self.counts
            .bytes
            .store(self.source.bytes_read(), Ordering::Relaxed);
        let Some(input) = input? else {
            self.done = true;
            return Ok(false);
        };
        let opts = self.decoder.clone().named(input.name.clone());
        self.feed = Some(match input.data {
            InputData::Soif(reader) => Feed::Stream {
                name: input.name,
                reader,
                decoder: SoifDecoder::new(opts),
                buf: BytesMut::with_capacity(READ_CAPACITY),
                read: 0,
                records: 0,
                eof: false,
            },
            InputData::Held {
                data,
                consumed,
                range,
            } => Feed::Held {
                items: match range {
                    None => SoifDecoder::new(opts).decode_bytes(data),
                    Some(split) => decode_range(data, opts, &split)
                        .map_err(|e| Failure::Config(format!("{}: {e}", input.name)))?,
                },
                consumed,
            },
            InputData::Records(stream) => Feed::Records { stream, records: 0 },
        });
        Ok(true)
    }

    /// The next record or rejection of the inputs, `None` at the end.
    fn next_item(&mut self) -> Result<Option<Result<Record, Box<Corrupt>>>, Failure> {
        loop {
            let Some(feed) = self.feed.as_mut() else {
                if !self.open_next()? {
                    return Ok(None);
                }
                continue;
            };
            let item = match feed {
                Feed::Stream {
                    name,
                    reader,
                    decoder,
                    buf,
                    read,
                    records,
                    eof,
                } => loop {
                    let stopped = |e: std::io::Error, read: u64, records: u64| {
                        Failure::Io {
                        message: format!(
                            "{name}: reading stopped after {read} bytes of SOIF and {records} record{}: {e}",
                            if records == 1 { "" } else { "s" }
                        ),
                    }
                    };
                    let item = if *eof {
                        decoder.decode_eof(buf)
                    } else {
                        decoder.decode(buf)
                    }
                    .map_err(|e| stopped(e, *read, *records))?;
                    if let Some(item) = item {
                        *records += 1;
                        break Some(item.map_err(|e| Box::new(Corrupt::from(e))));
                    }
                    if *eof {
                        break None;
                    }
                    if buf.capacity() - buf.len() < READ_SPARE {
                        buf.reserve(READ_CAPACITY);
                    }
                    let n = self
                        .rt
                        .block_on(reader.read_buf(buf))
                        .map_err(|e| stopped(e, *read, *records))?;
                    *read += n as u64;
                    if n == 0 {
                        *eof = true;
                    }
                },
                Feed::Held { items, consumed } => {
                    let item = items.next();
                    consumed(items.offset());
                    item.map(|i| i.map_err(|e| Box::new(Corrupt::from(e))))
                }
                Feed::Records { stream, records } => match self.rt.block_on(stream.next()) {
                    None => None,
                    Some(Ok(item)) => {
                        *records += 1;
                        Some(item.map_err(|e| Box::new(Corrupt::from(e))))
                    }
                    Some(Err(e)) => {
                        let n = *records;
                        return Err(Failure::Io {
                            message: format!(
                                "{}: reading stopped after {n} record{}",
                                soif_codecs::run_error::error_chain(&e),
                                if n == 1 { "" } else { "s" }
                            ),
                        });
                    }
                },
            };
            if item.is_none() {
                self.feed = None;
                self.counts
                    .bytes
                    .store(self.source.bytes_read(), Ordering::Relaxed);
                continue;
            }
            return Ok(item);
        }
    }

    /// The next row handed out: out of the transform chain when there is one.
    fn next_record(&mut self) -> Result<Option<Row>, Failure> {
        match self.rows.as_mut() {
            Some(rows) => rows(),
            None => self.next_row(),
        }
    }

    /// The next good record (or, under [`ErrorPolicy::Column`], bad one) of the inputs, with
    /// the error policy applied to bad ones.
    pub(crate) fn next_row(&mut self) -> Result<Option<Row>, Failure> {
        loop {
            let Some(item) = self.next_item()? else {
                if let Some(q) = self.quarantine.as_mut() {
                    q.flush().map_err(|e| Failure::Io {
                        message: format!("writing the quarantine: {e}"),
                    })?;
                }
                return Ok(None);
            };
            bump(&self.counts.records_in);
            match item {
                Ok(record) => {
                    if !record.repairs.is_empty() {
                        bump(&self.counts.repaired);
                    }
                    return Ok(Some(Row::Record(record)));
                }
                Err(corrupt) if self.policy == ErrorPolicy::Column => {
                    return Ok(Some(self.corrupt_row(corrupt)));
                }
                Err(corrupt) => self.reject(corrupt.rejection)?,
            }
        }
    }

    /// A bad record as a row (`on_error="column"`), counted as rejected (and in
    /// `records_in` already) and kept for `Reader.errors`.
    fn corrupt_row(&mut self, corrupt: Box<Corrupt>) -> Row {
        bump(&self.counts.rejected);
        if let Ok(mut errors) = self.counts.errors.lock() {
            if errors.len() < MAX_ERRORS {
                errors.push(corrupt.rejection.clone());
            }
        }
        Row::Corrupt(corrupt)
    }

    /// A record a transform rejected (counted in `records_in` already), under the error
    /// policy: a row of its own under [`ErrorPolicy::Column`], else `None`.
    pub(crate) fn reject_row(&mut self, corrupt: Box<Corrupt>) -> Result<Option<Row>, Failure> {
        if self.policy == ErrorPolicy::Column {
            return Ok(Some(self.corrupt_row(corrupt)));
        }
        self.reject(corrupt.rejection)?;
        Ok(None)
    }

    /// Writes out what the quarantine holds.
    pub(crate) fn flush_quarantine(&mut self) -> Result<(), Failure> {
        match self.quarantine.as_mut() {
            Some(q) => q.flush().map_err(|e| Failure::Io {
                message: format!("writing the quarantine: {e}"),
            }),
            None => Ok(()),
        }
    }

    /// Counts records a transform made beyond the one it received (`remap`'s fan-out).
    pub(crate) fn added(&self, n: u64) {
        self.counts.added.fetch_add(n, Ordering::Relaxed);
    }

    /// Keeps a transform's warning for `Reader.warnings`.
    pub(crate) fn warn(&self, message: String) {
        if let Ok(mut w) = self.counts.warnings.lock() {
            if w.len() < MAX_ERRORS {
                w.push(message);
            }
        }
    }

    /// Keeps the failure that ended the read for `Reader.error`.
    pub fn keep_failure(&self, f: Failure) {
        if let Ok(mut kept) = self.counts.failure.lock() {
            *kept = Some(f);
        }
    }

    /// The error policy applied to a rejected record (counted in `records_in` already).
    fn reject(&mut self, rejection: Rejection) -> Result<(), Failure> {
        bump(&self.counts.rejected);
        match &self.policy {
            ErrorPolicy::Fail => return Err(Failure::Decode(rejection)),
            // Column rows are made by `next_record`; nothing else to do here.
            ErrorPolicy::Skip | ErrorPolicy::Column => {}
            ErrorPolicy::Quarantine(_) => match (&rejection.raw, self.quarantine.as_mut()) {
                (Some(raw), Some(q)) => {
                    q.write(raw).map_err(|e| Failure::Io {
                        message: format!("writing the quarantine: {e}"),
                    })?;
                    bump(&self.counts.quarantined);
                }
                _ => bump(&self.counts.not_quarantined),
            },
        }
        if let Ok(mut errors) = self.counts.errors.lock() {
            if errors.len() < MAX_ERRORS {
                errors.push(rejection);
            }
        }
        Ok(())
    }

    /// Up to `max` records (fewer at the end, or when they hold `max_bytes` of names and
    /// values), calling `take` for each; the number taken. A failure after some records
    /// is kept for the next call, so what came before it is handed out first.
    pub fn fill(
        &mut self,
        max: usize,
        max_bytes: usize,
        mut take: impl FnMut(Row) -> usize,
    ) -> Result<usize, Failure> {
        self.fill_with(max, max_bytes, (0, 0), |s| {
            Ok(s.next_record()?.map(|row| {
                if matches!(row, Row::Record(_)) {
                    bump(&s.counts.records_out);
                }
                take(row)
            }))
        })
    }

    /// The loop of [`fill`](Self::fill) and [`fill_chunk`](Self::fill_chunk): calls
    /// `step` (one item: its bytes, `None` at the end) until `max` items (at least one)
    /// or `max_bytes` bytes, counting the `taken` items of `taken_bytes` already in the
    /// chunk (carried over from the last call); the number of items. A failure after
    /// some items is kept in `pending` for the next call, so that what came before it is
    /// handed out first; once it is handed out, the reader is done and gives nothing
    /// more.
    fn fill_with(
        &mut self,
        max: usize,
        max_bytes: usize,
        (taken, taken_bytes): (usize, usize),
        mut step: impl FnMut(&mut Self) -> Result<Option<usize>, Failure>,
    ) -> Result<usize, Failure> {
        if let Some(f) = self.pending.take() {
            self.failed = true;
            return Err(f);
        }
        if self.failed {
            return Ok(0);
        }
        let (mut n, mut bytes) = (taken, taken_bytes);
        while n < max.max(1) && bytes < max_bytes {
            match step(self) {
                Ok(Some(b)) => {
                    bytes += b;
                    n += 1;
                }
                Ok(None) => break,
                Err(f) if n == 0 => {
                    self.failed = true;
                    return Err(f);
                }
                Err(f) => {
                    self.pending = Some(f);
                    break;
                }
            }
        }
        Ok(n)
    }

    /// Like [`fill`](Self::fill), but objects of an input held whole (a mapped file, a
    /// `bytes` object) are not made into records: they are gathered in place as ranges
    /// of the input ([`Placed`]), and the batch is built from those (the fast path of
    /// `soif_arrow::spans`). A chunk holds one kind, so it ends where a mapped file and
    /// an input read as a stream (compressed, a URL) follow each other, and, under
    /// [`ErrorPolicy::Column`], where a bad record follows good objects or a good object bad
    /// records: the bad records are rows ([`Row::Corrupt`]) of a chunk of their own, in
    /// their place in the sequence, so the rows and their values are those of the record
    /// path and only the batches' boundaries differ. `sources`: keep each object's input
    /// and offset for the `_source` column. `None` at the end.
    pub fn fill_chunk(
        &mut self,
        max: usize,
        max_bytes: usize,
        sources: bool,
        size: impl Fn(&Row) -> usize,
    ) -> Result<Option<Chunk>, Failure> {
        // What the last call read but could not add (the other kind): the start of this
        // chunk. Once the reader has failed, there is none, and the chunk stays `None`.
        let mut chunk: Option<Chunk> = self.carry.take();
        let carried = match &chunk {
            Some(Chunk::Rows(rows)) => (rows.len(), rows.iter().map(&size).sum()),
            Some(Chunk::Spans(placed)) => (placed.spans.len(), placed.spans.object_bytes()),
            None => (0, 0),
        };
        self.fill_with(max, max_bytes, carried, |s| {
            Ok(s.chunk_step(&mut chunk, sources)?.map(|b| {
                b.unwrap_or_else(|| match &chunk {
                    Some(Chunk::Rows(r)) => r.last().map_or(0, &size),
                    _ => 0,
                })
            }))
        })?;
        Ok(chunk)
    }

    /// Adds the next good record or object (or, under [`ErrorPolicy::Column`], bad record) to
    /// `chunk`: `Some(Some(bytes))` for an object in place, `Some(None)` for a row; `None`
    /// at the end, or where the chunk must end because the next item is of the other
    /// kind (an input read as a stream is not looked at yet; an item already read is
    /// kept in `carry` for the next chunk).
    fn chunk_step(
        &mut self,
        chunk: &mut Option<Chunk>,
        sources: bool,
    ) -> Result<Option<Option<usize>>, Failure> {
        if self.rows.is_some() {
            // Transformed records are rows.
            return self.next_record_into(chunk);
        }
        loop {
            if self.feed.is_none() && !self.open_next()? {
                // The end: what is left to do there (the quarantine's flush).
                return self.next_record_into(chunk);
            }
            let Some(Feed::Held { items, consumed }) = self.feed.as_mut() else {
                if matches!(chunk, Some(Chunk::Spans(_))) {
                    return Ok(None);
                }
                return self.next_record_into(chunk);
            };
            match items.next_in_place() {
                None => {
                    consumed(items.offset());
                    self.feed = None;
                    self.counts
                        .bytes
                        .store(self.source.bytes_read(), Ordering::Relaxed);
                    continue;
                }
                Some(Ok(object)) => {
                    bump(&self.counts.records_in);
                    bump(&self.counts.records_out);
                    if !object.repairs().is_empty() {
                        bump(&self.counts.repaired);
                    }
                    let len = object.bytes().len();
                    let offset = (object.offset() + len) as u64;
                    let ended = match chunk {
                        Some(Chunk::Spans(placed)) => {
                            placed.push(&object);
                            false
                        }
                        Some(Chunk::Rows(_)) => {
                            self.carry = Some(Chunk::Spans(Placed::new(&object, sources)));
                            true
                        }
                        None => {
                            *chunk = Some(Chunk::Spans(Placed::new(&object, sources)));
                            false
                        }
                    };
                    // The batch is built later, on a worker thread, from the mapped
                    // pages: the source may let go of pages only well behind them.
                    consumed(offset.saturating_sub(IN_PLACE_LAG));
                    return Ok((!ended).then_some(Some(len)));
                }
                Some(Err(e)) => {
                    consumed(items.offset().saturating_sub(IN_PLACE_LAG));
                    bump(&self.counts.records_in);
                    if self.policy != ErrorPolicy::Column {
                        self.reject(Rejection::from(e))?;
                        continue;
                    }
                    let row = self.corrupt_row(Box::new(Corrupt::from(e)));
                    match chunk {
                        Some(Chunk::Rows(rows)) => rows.push(row),
                        Some(Chunk::Spans(_)) => {
                            self.carry = Some(Chunk::Rows(vec![row]));
                            return Ok(None);
                        }
                        None => *chunk = Some(Chunk::Rows(vec![row])),
                    }
                    return Ok(Some(None));
                }
            }
        }
    }

    /// The next good record (or, under [`ErrorPolicy::Column`], bad one) into a chunk of rows
    /// (`None` at the end).
    fn next_record_into(
        &mut self,
        chunk: &mut Option<Chunk>,
    ) -> Result<Option<Option<usize>>, Failure> {
        let Some(row) = self.next_record()? else {
            return Ok(None);
        };
        if matches!(row, Row::Record(_)) {
            bump(&self.counts.records_out);
        }
        match chunk {
            Some(Chunk::Rows(r)) => r.push(row),
            _ => *chunk = Some(Chunk::Rows(vec![row])),
        }
        Ok(Some(None))
    }
}

/// What one batch is built from: rows (records, and bad records under
/// `on_error="column"`), or objects decoded in place from inputs held whole.
pub enum Chunk {
    Rows(Vec<Row>),
    Spans(Placed),
}

/// Objects decoded in place for one batch: their ranges ([`Spans`], the layout's
/// columns), and, for the `_source` column, each one's input and byte offset (kept here
/// rather than in `soif_arrow`, which builds the layout only).
pub struct Placed {
    pub spans: Spans,
    /// The input's name and the offset of the object's `@` (in the whole input, also
    /// for a `range=` read), one per object; `None` when `_source` was not asked for.
    pub sources: Option<Vec<(Option<Arc<str>>, u64)>>,
}

impl Placed {
    /// A chunk of one object.
    fn new(object: &ObjectSpans<'_>, sources: bool) -> Placed {
        let mut placed = Placed {
            spans: Spans::new(),
            sources: sources.then(Vec::new),
        };
        placed.push(object);
        placed
    }

    fn push(&mut self, object: &ObjectSpans<'_>) {
        self.spans.push(object);
        if let Some(sources) = self.sources.as_mut() {
            let p = object.position();
            sources.push((p.input, p.offset));
        }
    }
}

/// How far behind the decoder an input held whole may let go of its pages while the
/// reader builds batches from them on worker threads: the batches in flight (at most
/// three chunks of about 8 MB) and some room.
const IN_PLACE_LAG: u64 = 32 << 20;

#[cfg(test)]
mod tests;
