//! Record batches from the reading loop, built on worker threads.
//!
//! Decoding is the cheaper part (values are slices of the input); building a batch —
//! the UTF-8 check of every value, the copy into Arrow buffers, faulting in their fresh
//! pages — is most of the cost. So when there is more than one core, the calling thread
//! only decodes: it cuts the records into chunks and hands them in turn to two worker
//! threads, which build the batches while it decodes the next chunk; the batches are
//! taken back in input order. At most [`IN_FLIGHT`] chunks are out at a time, so memory
//! stays bounded (a few batches), whatever the input's size.
//!
//! A chunk is one of two kinds ([`Chunk`]). Objects of an input held whole (a mapped
//! file, a `bytes` object) are ranges of it ([`Placed`]), built by `soif_arrow::Spans`
//! (the fast path); everything else is rows ([`Row`]: records of a stream, and the bad
//! records of `on_error="column"`), built by [`BatchBuilder`]. The extra columns do not
//! leave the fast path: for a chunk of objects in place `_corrupt_record` is one null
//! struct of the chunk's length (they are all good records) and `_source` comes from
//! each object's input and offset, kept beside the ranges; a bad record met in place
//! ends the chunk and starts one of rows. So with Spark's PERMISSIVE mode, where bad
//! records are rare, nearly every batch is built the fast way, and the rows, in order,
//! are those of the record path (only the batches' boundaries move):
//!
//! ```text
//! good good good BAD BAD good good    (objects of a mapped file, on_error="column")
//! [Spans: 3 rows][Rows: 2][Spans: 2]  (three batches; read as a stream: one batch)
//! ```

use crate::read::{Chunk, Core, Corrupt, Failure, Placed, Row};
use arrow_array::builder::{BinaryBuilder, Int64Builder, StringBuilder};
use arrow_array::{Array, RecordBatch, StructArray};
use arrow_buffer::NullBufferBuilder;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use soif_arrow::BatchBuilder;
use soif_codecs::{Position, Record, Value};
use std::collections::VecDeque;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

/// The columns a read adds after the layout's: `_corrupt_record` (`on_error="column"`)
/// and `_source` (`source_column=True`), in that order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extras {
    pub corrupt: bool,
    pub source: bool,
}

/// `_corrupt_record`'s fields: the bad record's bytes exactly as read, their text when
/// UTF-8, the error message, its byte offset and record number.
fn corrupt_fields() -> Fields {
    Fields::from(vec![
        Field::new("bytes", DataType::Binary, true),
        Field::new("text", DataType::Utf8, true),
        Field::new("error", DataType::Utf8, true),
        Field::new("offset", DataType::Int64, true),
        Field::new("record", DataType::Int64, true),
    ])
}

/// `_source`'s fields: the input's name and the record's byte offset in it.
fn source_fields() -> Fields {
    Fields::from(vec![
        Field::new("file", DataType::Utf8, true),
        Field::new("offset", DataType::Int64, true),
    ])
}

impl Extras {
    /// The layout's schema (with its metadata), then the extra columns.
    pub fn schema(self) -> SchemaRef {
        let layout = soif_arrow::schema();
        if self == Extras::default() {
            return layout;
        }
        let mut fields: Vec<Arc<Field>> = layout.fields().iter().cloned().collect();
        if self.corrupt {
            fields.push(Arc::new(Field::new(
                "_corrupt_record",
                DataType::Struct(corrupt_fields()),
                true,
            )));
        }
        if self.source {
            fields.push(Arc::new(Field::new(
                "_source",
                DataType::Struct(source_fields()),
                true,
            )));
        }
        Arc::new(Schema::new_with_metadata(fields, layout.metadata().clone()))
    }
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Bytes of names and values a batch holds at most (plus one record).
pub const BATCH_BYTES: usize = 8 << 20;

/// A worker thread that builds batches from chunks of records.
struct Worker {
    chunks: Sender<Chunk>,
    batches: Receiver<RecordBatch>,
}

impl Worker {
    fn start(extras: Extras) -> Option<Worker> {
        let (chunk_tx, chunk_rx) = channel::<Chunk>();
        let (batch_tx, batch_rx) = channel();
        std::thread::Builder::new()
            .name("soif-batches".into())
            .spawn(move || {
                for chunk in chunk_rx {
                    if batch_tx.send(build(&chunk, extras)).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Worker {
            chunks: chunk_tx,
            batches: batch_rx,
        })
    }
}

/// The batch of a chunk: objects in place go the fast way (`soif_arrow::Spans`).
fn build(chunk: &Chunk, extras: Extras) -> RecordBatch {
    match chunk {
        Chunk::Rows(rows) => build_rows(rows, extras),
        Chunk::Spans(placed) => build_placed(placed, extras),
    }
}

/// The batch of objects decoded in place: the layout's columns from their ranges, then
/// the extra columns. Every object is a good record, so `_corrupt_record` is all null
/// (one null struct, no per-row work); `_source` is their inputs and offsets.
fn build_placed(placed: &Placed, extras: Extras) -> RecordBatch {
    with_extras(
        placed.spans.build(),
        extras,
        |n| Arc::new(StructArray::new_null(corrupt_fields(), n)),
        |n| match &placed.sources {
            Some(sources) => source_column(sources.iter().map(|(i, at)| (i.as_deref(), Some(*at)))),
            // Kept whenever `_source` is asked for (see `Batches::chunk`); were it not,
            // nulls of the right length keep the batch well formed.
            None => source_column(std::iter::repeat_n((None, None), n)),
        },
    )
}

/// `layout` (a batch of the layout's columns), then the extra columns `extras` asks for,
/// made by `corrupt` and `source` from the number of rows.
fn with_extras(
    layout: RecordBatch,
    extras: Extras,
    corrupt: impl FnOnce(usize) -> Arc<dyn Array>,
    source: impl FnOnce(usize) -> Arc<dyn Array>,
) -> RecordBatch {
    if extras == Extras::default() {
        return layout;
    }
    let n = layout.num_rows();
    let mut columns = layout.columns().to_vec();
    if extras.corrupt {
        columns.push(corrupt(n));
    }
    if extras.source {
        columns.push(source(n));
    }
    // Built to the schema, so this cannot fail; were it ever to, an empty batch would
    // hide the bug.
    RecordBatch::try_new(extras.schema(), columns)
        .unwrap_or_else(|e| panic!("soif builds its batches to its own schema: {e}"))
}

/// A batch of `chunk`, its buffers sized up front (growing them would copy each value
/// again and fault in pages twice).
fn build_rows(chunk: &[Row], extras: Extras) -> RecordBatch {
    let (mut attributes, mut names, mut values) = (0, 0, 0);
    for row in chunk {
        if let Row::Record(r) = row {
            for a in &r.attributes {
                attributes += 1;
                names += a.name.len();
                values += a.value.as_bytes().map_or(0, |b| b.len());
            }
        }
    }
    let mut builder = BatchBuilder::with_capacity(chunk.len(), attributes, names, values);
    for row in chunk {
        match row {
            Row::Record(r) => builder.push(r),
            Row::Corrupt(_) => builder.push_null(),
        }
    }
    with_extras(
        builder.finish(),
        extras,
        |_| corrupt_column(chunk),
        |_| {
            // A record's position, or for a bad record where its error is.
            source_column(chunk.iter().map(|row| {
                let position: Option<&Position> = match row {
                    Row::Record(r) => r.position.as_ref(),
                    Row::Corrupt(c) => Some(&c.rejection.position),
                };
                position.map_or((None, None), |p| (p.input.as_deref(), Some(p.offset)))
            }))
        },
    )
}

/// `_corrupt_record`: set on the rows of bad records, null on the others.
fn corrupt_column(chunk: &[Row]) -> Arc<dyn Array> {
    let n = chunk.len();
    let mut bytes = BinaryBuilder::new();
    let mut text = StringBuilder::new();
    let mut error = StringBuilder::new();
    let mut offset = Int64Builder::with_capacity(n);
    let mut record = Int64Builder::with_capacity(n);
    let mut valid = NullBufferBuilder::new(n);
    for row in chunk {
        match row {
            Row::Record(_) => {
                bytes.append_null();
                text.append_null();
                error.append_null();
                offset.append_null();
                record.append_null();
                valid.append_null();
            }
            Row::Corrupt(c) => {
                let Corrupt {
                    rejection,
                    bytes: raw,
                } = &**c;
                match raw {
                    Some(b) => {
                        bytes.append_value(b);
                        text.append_option(std::str::from_utf8(b).ok());
                    }
                    None => {
                        bytes.append_null();
                        text.append_null();
                    }
                }
                error.append_value(&rejection.message);
                offset.append_value(to_i64(rejection.position.offset));
                record.append_value(to_i64(rejection.position.record));
                valid.append_non_null();
            }
        }
    }
    Arc::new(StructArray::new(
        corrupt_fields(),
        vec![
            Arc::new(bytes.finish()),
            Arc::new(text.finish()),
            Arc::new(error.finish()),
            Arc::new(offset.finish()),
            Arc::new(record.finish()),
        ],
        valid.finish(),
    ))
}

/// `_source`: the input and byte offset of every row.
fn source_column<'a>(
    rows: impl ExactSizeIterator<Item = (Option<&'a str>, Option<u64>)>,
) -> Arc<dyn Array> {
    let mut file = StringBuilder::new();
    let mut offset = Int64Builder::with_capacity(rows.len());
    for (input, at) in rows {
        file.append_option(input);
        offset.append_option(at.map(to_i64));
    }
    Arc::new(StructArray::new(
        source_fields(),
        vec![Arc::new(file.finish()), Arc::new(offset.finish())],
        None,
    ))
}

/// About how many bytes a row adds to a batch.
fn row_size(row: &Row) -> usize {
    match row {
        Row::Record(r) => size(r),
        Row::Corrupt(c) => c.bytes.as_ref().map_or(0, |b| b.len()) + c.rejection.message.len(),
    }
}

/// About how many bytes a record adds to a batch: its original bytes when the decoder
/// kept them (it does for every object it reads), else the sum of its parts.
pub fn size(r: &Record) -> usize {
    if let Some(raw) = &r.raw {
        return raw.len();
    }
    fn value(v: &Value) -> usize {
        match v {
            Value::Bytes(b) => b.len(),
            Value::List(items) => items.iter().map(value).sum(),
            Value::Object(attrs) => attrs
                .iter()
                .map(|a| a.name.len() + value(&a.value) + 16)
                .sum(),
        }
    }
    r.template.len()
        + r.url.len()
        + 16
        + r.attributes
            .iter()
            .map(|a| a.name.len() + value(&a.value) + 16)
            .sum::<usize>()
}

/// Bytes of the first chunk cut (doubled for each of the next until [`BATCH_BYTES`]).
const FIRST_CHUNK_BYTES: usize = 1 << 20;

/// Chunks handed to the workers and not yet taken back.
const IN_FLIGHT: usize = 4;

/// The reading loop and what turns its records into batches.
pub struct Batches {
    pub core: Core,
    batch_size: usize,
    extras: Extras,
    /// Empty on one core (batches are then built on the calling thread), and until the
    /// first batch is asked for.
    workers: Vec<Worker>,
    started: bool,
    /// The byte bound of the next chunk: [`FIRST_CHUNK_BYTES`], doubled after each
    /// chunk up to [`BATCH_BYTES`].
    chunk_bytes: usize,
    /// The worker of each chunk in flight, oldest first.
    in_flight: VecDeque<usize>,
    next_worker: usize,
    /// No more chunks to cut: the end, or a failure kept in `deferred`.
    exhausted: bool,
    /// A failure met after the chunks in flight: handed out once they are.
    deferred: Option<Failure>,
}

impl Batches {
    pub fn new(core: Core, batch_size: usize, extras: Extras) -> Batches {
        Batches {
            core,
            batch_size,
            extras,
            workers: Vec::new(),
            started: false,
            chunk_bytes: FIRST_CHUNK_BYTES,
            in_flight: VecDeque::new(),
            next_worker: 0,
            exhausted: false,
            deferred: None,
        }
    }

    /// Up to `batch_size` records (fewer at the end or at [`BATCH_BYTES`]); `None` at the
    /// end or on a failure (then kept in `deferred`).
    fn chunk(&mut self) -> Option<Chunk> {
        // The first chunks are small (1, 2, 4 MB, then BATCH_BYTES): the workers start
        // on the first sooner, and the consumer has its first batch sooner.
        let bytes = self.chunk_bytes;
        self.chunk_bytes = (bytes * 2).min(BATCH_BYTES);
        match self
            .core
            .fill_chunk(self.batch_size, bytes, self.extras.source, row_size)
        {
            Ok(Some(chunk)) => Some(chunk),
            Ok(None) => {
                self.exhausted = true;
                None
            }
            Err(f) => {
                self.exhausted = true;
                self.deferred = Some(f);
                None
            }
        }
    }

    /// The next batch, `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, Failure> {
        if !self.started {
            self.started = true;
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            if cores > 1 {
                let extras = self.extras;
                self.workers = (0..2).map_while(|_| Worker::start(extras)).collect();
            }
        }
        if self.workers.is_empty() {
            if !self.exhausted {
                if let Some(chunk) = self.chunk() {
                    return Ok(Some(build(&chunk, self.extras)));
                }
            }
            return self.deferred.take().map_or(Ok(None), Err);
        }
        while self.in_flight.len() < IN_FLIGHT && !self.exhausted {
            let Some(chunk) = self.chunk() else {
                break;
            };
            let w = self.next_worker % self.workers.len();
            self.next_worker = self.next_worker.wrapping_add(1);
            if self.workers[w].chunks.send(chunk).is_err() {
                return Err(stopped());
            }
            self.in_flight.push_back(w);
        }
        let Some(w) = self.in_flight.pop_front() else {
            return self.deferred.take().map_or(Ok(None), Err);
        };
        self.workers[w]
            .batches
            .recv()
            .map(Some)
            .map_err(|_| stopped())
    }
}

/// A worker thread is gone: only a bug in building a batch (a panic) does that.
fn stopped() -> Failure {
    Failure::Io {
        message: "a batch-building thread stopped (a bug: please report it)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::BytesInput;
    use crate::read::Counts;
    use arrow_array::cast::AsArray;
    use soif_codecs::soif::DecoderOptions;
    use soif_options::ErrorPolicy;

    /// `n` records, the one at `bad` (0-based) with a value size past its value.
    fn soif(n: usize, bad: Option<usize>) -> bytes::Bytes {
        let mut out = String::new();
        for i in 0..n {
            let size = if Some(i) == bad { 999 } else { 1 };
            out.push_str(&format!(
                "@FILE {{ http://r/{i}\nTitle{{{size}}}:\tx\n}}\n\n"
            ));
        }
        bytes::Bytes::from(out)
    }

    fn batches(
        data: bytes::Bytes,
        policy: ErrorPolicy,
        batch_size: usize,
        extras: Extras,
    ) -> Batches {
        let source = Box::new(BytesInput::new("t.soif", data));
        let core = Core::new(
            source,
            DecoderOptions::default(),
            policy,
            Arc::new(Counts::default()),
        )
        .expect("a reader of bytes");
        Batches::new(core, batch_size, extras)
    }

    fn all(mut b: Batches) -> Vec<RecordBatch> {
        let mut out = Vec::new();
        while let Some(batch) = b.next_batch().expect("no failure") {
            out.push(batch);
        }
        out
    }

    fn urls(batches: &[RecordBatch]) -> Vec<String> {
        let mut out = Vec::new();
        for b in batches {
            let view = soif_arrow::BatchView::new(b).expect("the layout");
            for i in 0..b.num_rows() {
                match view.record(i) {
                    Ok(r) => out.push(String::from_utf8_lossy(&r.url).into_owned()),
                    Err(_) => out.push(String::new()),
                }
            }
        }
        out
    }

    #[test]
    fn a_batch_holds_at_most_batch_size_rows() {
        let got = all(batches(
            soif(10, None),
            ErrorPolicy::Fail,
            3,
            Extras::default(),
        ));
        let sizes: Vec<usize> = got.iter().map(|b| b.num_rows()).collect();
        assert_eq!(sizes, [3, 3, 3, 1]);
        let expected: Vec<String> = (0..10).map(|i| format!("http://r/{i}")).collect();
        assert_eq!(urls(&got), expected);
        assert_eq!(got[0].schema(), Extras::default().schema());
    }

    #[test]
    fn the_column_policy_adds_corrupt_rows_in_their_place() {
        let extras = Extras {
            corrupt: true,
            source: true,
        };
        let got = all(batches(soif(5, Some(2)), ErrorPolicy::Column, 100, extras));
        let rows: usize = got.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 5);
        // In order: the good records in place, the bad one as a row, the rest in place.
        let mut corrupt = Vec::new();
        let mut offsets = Vec::new();
        for b in &got {
            assert_eq!(b.schema(), extras.schema());
            let c = b.column_by_name("_corrupt_record").expect("the column");
            let c = c.as_struct();
            let s = b.column_by_name("_source").expect("the column").as_struct();
            let at = s.column(1).as_primitive::<arrow_array::types::Int64Type>();
            for i in 0..b.num_rows() {
                corrupt.push(c.is_valid(i));
                offsets.push(at.value(i));
            }
        }
        assert_eq!(corrupt, [false, false, true, false, false]);
        // Good records at their `@`, the bad one where its error is (past its start).
        let good = [offsets[0], offsets[1], offsets[3], offsets[4]];
        assert_eq!(good[0], 0);
        assert!(good.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
        assert!(offsets[2] > offsets[1], "{offsets:?}");
    }

    #[test]
    fn a_failure_comes_after_the_batches_before_it() {
        let mut b = batches(soif(6, Some(4)), ErrorPolicy::Fail, 2, Extras::default());
        let mut rows = 0;
        let failure = loop {
            match b.next_batch() {
                Ok(Some(batch)) => rows += batch.num_rows(),
                Ok(None) => panic!("the read ended without its failure"),
                Err(f) => break f,
            }
        };
        assert_eq!(rows, 4);
        assert!(matches!(failure, Failure::Decode(_)), "{failure:?}");
        assert!(b.next_batch().expect("nothing more").is_none());
    }

    #[test]
    fn size_is_the_record_s_bytes_when_kept() {
        let mut r = Record {
            url: bytes::Bytes::from_static(b"http://x/"),
            ..Record::default()
        };
        let parts = size(&r);
        assert!(parts >= 9);
        r.raw = Some(bytes::Bytes::from_static(b"0123456789"));
        assert_eq!(size(&r), 10);
    }
}
