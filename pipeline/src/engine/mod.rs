//! The engine: source → SOIF decoder → transforms → sinks, as stages joined by bounded
//! channels.
//!
//! ```text
//!  Source ──bytes──▶ decode (the calling task: SoifDecoder over each input)
//!                      │  batches of records and rejections, channel of CHANNEL_BATCHES
//!                      ▼
//!                    transforms (blocking thread): counts, error policy, -t chain
//!                      │  Arc'd batches, one bounded channel per sink (broadcast)
//!                      ▼
//!                    sink 1 … sink N (a blocking thread each)
//! ```
//!
//! Every channel is bounded, so a slow sink slows the decoder down instead of growing a
//! queue. A batch is at most [`EngineOptions::batch_records`] records or [`BATCH_BYTES`]
//! bytes (plus one record), and the batches in flight between the decoder and the last
//! sink hold at most [`IN_FLIGHT_BYTES`] together: the decoder takes a share of that
//! budget for each batch and the last sink to drop the batch gives it back. A batch larger
//! than the whole budget (one huge record) waits until it is alone in flight, so memory
//! stays bounded by the budget or the largest record, whichever is larger.
//! Decoding and encoding run on different threads, so they overlap on two cores; each
//! stage handles records in order, so the output order is the input order.
//!
//! ```
//! use soif_pipeline::engine::{Engine, EngineOptions};
//! use soif_pipeline::source::BytesSource;
//! # let rt = tokio::runtime::Runtime::new().unwrap();
//! # rt.block_on(async {
//! let source = BytesSource::new("mem", &b"@FILE { http://x/\nTitle{1}:\tT\n}\n"[..]);
//! let summary = Engine::new(EngineOptions::default())
//!     .run(Box::new(source), Vec::new(), Vec::new())
//!     .await
//!     .unwrap();
//! assert_eq!((summary.records_in, summary.records_out), (1, 1));
//! # });
//! ```
//!
//! ## Counting
//! `records_in + added = records_out + rejected + filtered`, where
//! - `records_in`: records the decoder (or a record source) produced, good or bad;
//! - `added`: records a transform made beyond one per record it received (a `remap`
//!   program whose result is an array of records: one in, three out adds two);
//! - `rejected`: records refused by the decoder, a transform (`validate`) or a sink, each
//!   counted once even if several sinks refuse it;
//! - `filtered`: records the transforms dropped on purpose (`match`, `since`, `hits`,
//!   `dedupe`, a `remap` program's `abort`);
//! - `records_out`: records every sink accepted.
//!
//! With `--on-error quarantine` the quarantine file receives, for each rejected record,
//! its original bytes ([`QuarantineFile`](crate::quarantine::QuarantineFile): created by
//! the first one, so a run that rejects nothing leaves none) ([`Rejection::raw`]); a record whose bytes were not kept (one over
//! `--max-record-size`, skipped unbuffered) is counted in [`Summary::not_quarantined`].
//! Records built in code or by a transform that have no original bytes are written as
//! canonical SOIF.

mod summary;

use summary::PerInput;
pub use summary::{InputCounts, Progress, Summary, INPUT_MESSAGES};

use crate::quarantine::QuarantineFile;
use crate::source::{InputData, Rejection, Source};
use crate::{Emit, Error, Sink, SinkError, Transform};
use bytes::BytesMut;
use futures::{FutureExt, StreamExt};
use soif_codecs::soif::split::decode_range;
use soif_codecs::soif::{DecoderOptions, SoifDecoder};
use soif_codecs::Record;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::codec::Decoder;

/// A batch is sent on when it holds this many bytes of records.
pub const BATCH_BYTES: usize = 1 << 20;
/// Batches a channel holds before its sender waits.
pub const CHANNEL_BATCHES: usize = 4;
/// Bytes of records in flight between the decoder and the sinks, all stages together.
pub const IN_FLIGHT_BYTES: usize = 16 << 20;
/// The unit of that budget (a semaphore permit).
const PERMIT_BYTES: usize = 1024;
/// Read buffer of the decoder: allocated in steps of this size… (the reader behind
/// Python and Spark, `soif_reader`, grows its buffer by the same two constants.)
pub const READ_CAPACITY: usize = 1 << 20;
/// …whenever less than this is free for the next read.
pub const READ_SPARE: usize = 256 * 1024;

use soif_options::ErrorPolicy;

/// Where the engine reports progress, warnings and rejected records (the CLI prints
/// them; a server may log them). Every method has a silent default.
pub trait Observer: Send + Sync {
    /// Called after every batch read, from the decoding task: keep it cheap.
    fn progress(&self, _progress: &Progress) {}
    /// A repair made in lenient mode, a transform's or a sink's warning.
    fn warning(&self, _message: &str) {}
    /// A record rejected under `skip` or `quarantine`, with the reason and position.
    fn rejected(&self, _message: &str) {}
}

/// How the engine runs.
#[derive(Clone)]
pub struct EngineOptions {
    /// What happens to a record that cannot be converted: the one type of every front end
    /// ([`soif_options::ErrorPolicy`]). The engine refuses [`ErrorPolicy::Column`]: its
    /// sinks have no corrupt-record column.
    pub policy: ErrorPolicy,
    /// `max_record_size` and `lenient`; `input` is set per input by the engine.
    pub decoder: DecoderOptions,
    /// Records per batch between stages.
    pub batch_records: usize,
    pub observer: Option<Arc<dyn Observer>>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            policy: ErrorPolicy::Fail,
            decoder: DecoderOptions::default(),
            batch_records: 256,
            observer: None,
        }
    }
}

impl fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineOptions")
            .field("policy", &self.policy)
            .field("decoder", &self.decoder)
            .field("batch_records", &self.batch_records)
            .finish_non_exhaustive()
    }
}

/// Runs pipelines (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct Engine {
    opts: EngineOptions,
}

/// What the decoder hands the transform stage.
enum Item {
    Record(Record),
    Rejected(Rejection),
}

/// Records on their way to the sinks, numbered so a record refused by several sinks is
/// counted once.
struct OutBatch {
    first_seq: u64,
    records: Vec<Record>,
    /// The batch's share of [`IN_FLIGHT_BYTES`], given back when the last sink drops it.
    _budget: Option<OwnedSemaphorePermit>,
}

/// A batch from the decoder, with its share of [`IN_FLIGHT_BYTES`].
struct Decoded {
    items: Vec<Item>,
    budget: OwnedSemaphorePermit,
}

impl Engine {
    pub fn new(opts: EngineOptions) -> Engine {
        Engine { opts }
    }

    /// Reads `source` to the end through `transforms` into every sink, and returns the
    /// counts. An `Err` is a failed run: an I/O error, a sink that cannot go on, or a
    /// rejected record under [`ErrorPolicy::Fail`]. Sinks are finished (flushed) in any
    /// case unless they failed themselves. [`Engine::run_counted`] also gives the counts
    /// of a failed run.
    pub async fn run(
        &self,
        source: Box<dyn Source>,
        transforms: Vec<Box<dyn Transform>>,
        sinks: Vec<Box<dyn Sink>>,
    ) -> Result<Summary, Error> {
        let (summary, result) = self.run_counted(source, transforms, sinks).await;
        result.map(|()| summary)
    }

    /// As [`Engine::run`], but the counts come back whether or not the run failed: on a
    /// failure they say how far it got. `records_out` is then what every sink took, and
    /// for a sink that confirms storage ([`Sink::stored`], the `rdm` sink) only what the
    /// destination confirmed.
    pub async fn run_counted(
        &self,
        source: Box<dyn Source>,
        transforms: Vec<Box<dyn Transform>>,
        sinks: Vec<Box<dyn Sink>>,
    ) -> (Summary, Result<(), Error>) {
        let start = Instant::now();
        let shared = match Shared::new(&self.opts, sinks.len()) {
            Ok(s) => Arc::new(s),
            Err(e) => {
                let summary = Summary {
                    elapsed: start.elapsed(),
                    ..Summary::default()
                };
                return (summary, Err(e));
            }
        };

        // Sinks: one blocking thread and one bounded channel each.
        let mut sink_txs = Vec::with_capacity(sinks.len());
        let mut sink_tasks = Vec::with_capacity(sinks.len());
        for (index, sink) in sinks.into_iter().enumerate() {
            let (tx, rx) = mpsc::channel::<Arc<OutBatch>>(CHANNEL_BATCHES);
            sink_txs.push(tx);
            let shared = shared.clone();
            sink_tasks.push(tokio::task::spawn_blocking(move || {
                sink_stage(index, sink, rx, &shared)
            }));
        }

        // Transforms: one blocking thread.
        let (decoded_tx, decoded_rx) = mpsc::channel::<Decoded>(CHANNEL_BATCHES);
        let transform_task = {
            let shared = shared.clone();
            tokio::task::spawn_blocking(move || {
                let mut counts = Counts::default();
                let result =
                    transform_stage(transforms, decoded_rx, sink_txs, &shared, &mut counts);
                Ok((counts, result))
            })
        };

        // Decoding, here in the calling task.
        let (decoded, bytes) = self.decode_stage(source, decoded_tx).await;

        let (counts, transformed) = match join(transform_task).await {
            Ok(pair) => pair,
            Err(e) => (Counts::default(), Err(e)),
        };
        let mut sink_results = Vec::with_capacity(sink_tasks.len());
        let mut accepted: Option<u64> = None;
        for task in sink_tasks {
            let (took, result) = join(task).await.unwrap_or_else(|e| (0, Err(e)));
            accepted = Some(accepted.map_or(took, |a| a.min(took)));
            sink_results.push(result);
        }
        // The first failure in pipeline order is the cause; the other stages stopped
        // quietly because their neighbour went away.
        let result = decoded
            .and(transformed)
            .and_then(|()| sink_results.into_iter().collect::<Result<(), Error>>())
            .and_then(|()| shared.finish_quarantine());

        let rejects = shared.rejects();
        let mut records_out = counts
            .emitted
            .saturating_sub(rejects.sink_rejected_distinct);
        if result.is_err() {
            // Only what the sinks took (or their destination confirmed) is out.
            records_out = records_out.min(accepted.unwrap_or(records_out));
        }
        let summary = Summary {
            records_in: counts.records_in,
            records_out,
            rejected: rejects.rejected,
            filtered: (counts.records_in + counts.added)
                .saturating_sub(counts.emitted + counts.rejected_before_sinks),
            added: counts.added,
            repaired: counts.repaired,
            warnings: counts.warnings + shared.sink_warnings(),
            quarantined: rejects.quarantined,
            not_quarantined: rejects.not_quarantined,
            bytes,
            elapsed: start.elapsed(),
            inputs: counts.per_input.finish(&rejects.per_input),
        };
        (summary, result)
    }

    /// Source → decoder: reads every input in turn and sends batches of records and
    /// rejections down `tx`. Returns the bytes read.
    async fn decode_stage(
        &self,
        mut source: Box<dyn Source>,
        tx: mpsc::Sender<Decoded>,
    ) -> (Result<(), Error>, u64) {
        let budget = Arc::new(Semaphore::new(IN_FLIGHT_BYTES / PERMIT_BYTES));
        let mut batch = Batcher::new(self.opts.batch_records, tx, budget, &self.opts.observer);
        let result = async {
            while let Some(input) = source.next_input().await? {
                match input.data {
                    InputData::Soif(mut reader) => {
                        let opts = self.opts.decoder.clone().named(input.name.clone());
                        let mut decoder = SoifDecoder::new(opts);
                        // A failed read names where it stopped: the SOIF bytes read and
                        // the records decoded from this input (a decompressor adds its
                        // compressed offset to the message).
                        let (mut read, mut records) = (0u64, 0u64);
                        let stopped = |e, read, records| stopped_at(&input.name, read, records, e);
                        // The read loop FramedRead would run, but reading into at least
                        // READ_SPARE bytes each time: records split off the buffer's front
                        // leave little room at its end, and small reads of a file cost a
                        // thread hop each.
                        let mut buf = BytesMut::with_capacity(READ_CAPACITY);
                        loop {
                            while let Some(item) = decoder
                                .decode(&mut buf)
                                .map_err(|e| stopped(e, read, records))?
                            {
                                records += 1;
                                if !batch.push(decoded(item), &*source).await {
                                    return Ok(());
                                }
                            }
                            if buf.capacity() - buf.len() < READ_SPARE {
                                buf.reserve(READ_CAPACITY);
                            }
                            // Pass on what we have before waiting for more input, so a
                            // slow pipe's records are not held back until a batch fills.
                            if !batch.flush(&*source).await {
                                return Ok(());
                            }
                            let n = reader
                                .read_buf(&mut buf)
                                .await
                                .map_err(|e| stopped(e, read, records))?;
                            read += n as u64;
                            if n == 0 {
                                while let Some(item) = decoder
                                    .decode_eof(&mut buf)
                                    .map_err(|e| stopped(e, read, records))?
                                {
                                    records += 1;
                                    if !batch.push(decoded(item), &*source).await {
                                        return Ok(());
                                    }
                                }
                                break;
                            }
                        }
                    }
                    InputData::Held {
                        data,
                        mut consumed,
                        range,
                    } => {
                        let opts = self.opts.decoder.clone().named(input.name.clone());
                        let mut items = match range {
                            None => SoifDecoder::new(opts).decode_bytes(data),
                            Some(split) => decode_range(data, opts, &split)
                                .map_err(|e| Error::Config(format!("{}: {e}", input.name)))?,
                        };
                        while let Some(item) = items.next() {
                            consumed(items.offset());
                            if !batch.push(decoded(item), &*source).await {
                                return Ok(());
                            }
                        }
                        consumed(items.offset());
                    }
                    InputData::Records(mut stream) => {
                        let mut records = 0u64;
                        loop {
                            let next = match stream.next().now_or_never() {
                                Some(next) => next,
                                None => {
                                    if !batch.flush(&*source).await {
                                        return Ok(());
                                    }
                                    stream.next().await
                                }
                            };
                            let item = match next {
                                None => break,
                                Some(Ok(Ok(record))) => Item::Record(record),
                                Some(Ok(Err(rejection))) => Item::Rejected(rejection),
                                Some(Err(e)) => return Err(records_stopped(e, records)),
                            };
                            records += 1;
                            if !batch.push(item, &*source).await {
                                return Ok(());
                            }
                        }
                    }
                }
            }
            batch.flush(&*source).await;
            Ok(())
        }
        .await;
        (result, source.bytes_read())
    }
}

/// A read error on input `name`, with how far the input got.
fn stopped_at(name: &str, read: u64, records: u64, e: std::io::Error) -> Error {
    Error::io(
        format!(
            "{name}: reading stopped after {read} bytes of SOIF and {records} record{}",
            if records == 1 { "" } else { "s" }
        ),
        e,
    )
}

/// A record source's error, with the records it gave before.
fn records_stopped(e: Error, records: u64) -> Error {
    let plural = if records == 1 { "" } else { "s" };
    match e {
        Error::Io { context, source } => Error::io(
            format!("{context}: reading stopped after {records} record{plural}"),
            source,
        ),
        Error::Fatal(m) => Error::Fatal(format!(
            "{m} (reading stopped after {records} record{plural})"
        )),
        other => other,
    }
}

fn decoded(item: Result<Record, soif_codecs::soif::DecodeError>) -> Item {
    match item {
        Ok(record) => Item::Record(record),
        Err(e) => Item::Rejected(e.into()),
    }
}

async fn join<T>(task: tokio::task::JoinHandle<Result<T, Error>>) -> Result<T, Error> {
    match task.await {
        Ok(r) => r,
        Err(e) => Err(Error::Fatal(format!("a pipeline stage panicked: {e}"))),
    }
}

/// Collects decoded items into batches bounded in count and bytes.
struct Batcher<'a> {
    items: Vec<Item>,
    bytes: usize,
    max: usize,
    records: u64,
    tx: mpsc::Sender<Decoded>,
    budget: Arc<Semaphore>,
    observer: &'a Option<Arc<dyn Observer>>,
}

impl<'a> Batcher<'a> {
    fn new(
        max: usize,
        tx: mpsc::Sender<Decoded>,
        budget: Arc<Semaphore>,
        observer: &'a Option<Arc<dyn Observer>>,
    ) -> Self {
        Batcher {
            items: Vec::with_capacity(max.max(1)),
            bytes: 0,
            max: max.max(1),
            records: 0,
            tx,
            budget,
            observer,
        }
    }

    /// Adds an item, sending the batch when full; false when downstream has gone.
    async fn push(&mut self, item: Item, source: &dyn Source) -> bool {
        self.bytes += match &item {
            Item::Record(r) => record_size(r),
            Item::Rejected(r) => r.raw.as_ref().map_or(0, |b| b.len()),
        };
        self.items.push(item);
        self.records += 1;
        if self.items.len() >= self.max || self.bytes >= BATCH_BYTES {
            self.flush(source).await
        } else {
            true
        }
    }

    async fn flush(&mut self, source: &dyn Source) -> bool {
        if self.items.is_empty() {
            return true;
        }
        let items = std::mem::replace(&mut self.items, Vec::with_capacity(self.max));
        // Wait for room in the in-flight budget; a batch above the whole budget takes all
        // of it, i.e. waits until it is alone.
        let share = self
            .bytes
            .div_ceil(PERMIT_BYTES)
            .clamp(1, IN_FLIGHT_BYTES / PERMIT_BYTES) as u32;
        self.bytes = 0;
        let Ok(budget) = self.budget.clone().acquire_many_owned(share).await else {
            return false;
        };
        let ok = self.tx.send(Decoded { items, budget }).await.is_ok();
        if let Some(o) = self.observer {
            o.progress(&Progress {
                bytes: source.bytes_read(),
                total_bytes: source.total_bytes(),
                records: self.records,
            });
        }
        ok
    }
}

/// Bytes a record holds, to bound batches.
fn record_size(r: &Record) -> usize {
    match &r.raw {
        Some(raw) => raw.len(),
        None => r
            .attributes
            .iter()
            .map(|a| a.name.len() + a.value.leaves().iter().map(|b| b.len()).sum::<usize>())
            .sum(),
    }
}

/// What the transform stage counted.
#[derive(Debug, Default)]
struct Counts {
    records_in: u64,
    emitted: u64,
    /// Rejected by the decoder or a transform.
    rejected_before_sinks: u64,
    /// Made by transforms beyond one per record ([`Emit::added`]).
    added: u64,
    repaired: u64,
    warnings: u64,
    /// Records in and emitted, per input.
    per_input: PerInput,
}

/// Decoded items → error policy → transform chain → every sink.
fn transform_stage(
    mut transforms: Vec<Box<dyn Transform>>,
    mut rx: mpsc::Receiver<Decoded>,
    sinks: Vec<mpsc::Sender<Arc<OutBatch>>>,
    shared: &Shared,
    counts: &mut Counts,
) -> Result<(), Error> {
    let mut out = Vec::new();
    let mut seq = 0u64;
    // Sends `out` to every sink; false when a sink has gone (it failed and says why).
    let send = |out: &mut Vec<Record>,
                seq: &mut u64,
                counts: &mut Counts,
                budget: Option<OwnedSemaphorePermit>|
     -> bool {
        if out.is_empty() {
            return true;
        }
        let records = std::mem::take(out);
        counts.emitted += records.len() as u64;
        for r in &records {
            if let Some(t) = counts.per_input.tally(r.position.as_ref()) {
                t.emitted += 1;
            }
        }
        let batch = Arc::new(OutBatch {
            first_seq: *seq,
            records,
            _budget: budget,
        });
        *seq += batch.records.len() as u64;
        sinks
            .iter()
            .all(|tx| tx.blocking_send(batch.clone()).is_ok())
    };
    while let Some(Decoded { items, budget }) = rx.blocking_recv() {
        let result = items.into_iter().try_for_each(|item| {
            counts.records_in += 1;
            let position = match &item {
                Item::Record(r) => r.position.as_ref(),
                Item::Rejected(r) => Some(&r.position),
            };
            if let Some(t) = counts.per_input.tally(position) {
                t.records_in += 1;
            }
            match item {
                Item::Rejected(rejection) => {
                    counts.rejected_before_sinks += 1;
                    shared.reject(rejection)
                }
                Item::Record(record) => {
                    if !record.repairs.is_empty() {
                        counts.repaired += 1;
                        for repair in &record.repairs {
                            counts.warnings += 1;
                            shared.warn(&repair_message(&record, repair));
                        }
                    }
                    Chain {
                        rest: &mut transforms,
                        out: &mut out,
                        shared,
                        counts: &mut *counts,
                        flush: None,
                    }
                    .emit(record)
                }
            }
        });
        if let Err(e) = result {
            // Under `fail`, what came before the bad record is still written.
            send(&mut out, &mut seq, counts, Some(budget));
            return Err(e);
        }
        if !send(&mut out, &mut seq, counts, Some(budget)) {
            return Ok(());
        }
    }
    // End of stream: transforms that held records back (`order`) let them go, in chain
    // order so each one's output still passes through the ones after it. What they let
    // go is sent on batch by batch as it is emitted (`flush`), never gathered first:
    // `order` lets a whole spilled stream go here.
    let gone = std::cell::Cell::new(false);
    // Bytes of the records in `out` (bounded like the decoder's batches).
    let mut pending = out.iter().map(record_size).sum::<usize>();
    for i in 0..transforms.len() {
        let (head, rest) = transforms.split_at_mut(i + 1);
        let mut flush = |out: &mut Vec<Record>, counts: &mut Counts| {
            pending += out.last().map_or(0, record_size);
            if out.len() < FINISH_BATCH_RECORDS && pending < BATCH_BYTES {
                return true;
            }
            pending = 0;
            let ok = send(out, &mut seq, counts, None);
            gone.set(!ok);
            ok
        };
        let mut chain = Chain {
            rest,
            out: &mut out,
            shared,
            counts: &mut *counts,
            flush: Some(&mut flush),
        };
        let finished = head[i].finish(&mut chain);
        if gone.get() {
            // A sink stopped (it reports why); the error `flush` made us return is moot.
            return Ok(());
        }
        finished?;
    }
    send(&mut out, &mut seq, counts, None);
    Ok(())
}

fn repair_message(record: &Record, repair: &soif_codecs::Repair) -> String {
    let input = record
        .position
        .as_ref()
        .and_then(|p| p.input.as_deref())
        .unwrap_or("-");
    format!(
        "repaired at {input}: byte {}: {}",
        repair.offset, repair.message
    )
}

/// The [`Emit`] between transform `i` and `i + 1`: a record emitted goes through the
/// rest of the chain, and after the last transform into the batch for the sinks.
struct Chain<'a> {
    rest: &'a mut [Box<dyn Transform>],
    out: &'a mut Vec<Record>,
    shared: &'a Shared,
    counts: &'a mut Counts,
    /// While transforms finish: told of each record added to `out`, sends `out` on once
    /// it holds [`FINISH_BATCH_RECORDS`] or [`BATCH_BYTES`]; false when a sink has gone.
    flush: Option<&'a mut Flush<'a>>,
}

/// Sends a batch of records on to the sinks; false when a sink has gone.
type Flush<'a> = dyn FnMut(&mut Vec<Record>, &mut Counts) -> bool + 'a;

/// Records per batch sent on while transforms finish.
const FINISH_BATCH_RECORDS: usize = 256;

impl Emit for Chain<'_> {
    fn emit(&mut self, record: Record) -> Result<(), Error> {
        match self.rest.split_first_mut() {
            None => {
                self.out.push(record);
                if let Some(flush) = self.flush.as_mut() {
                    if !flush(self.out, self.counts) {
                        return Err(Error::Fatal("the output has stopped".to_string()));
                    }
                }
                Ok(())
            }
            Some((first, rest)) => first.apply(
                record,
                &mut Chain {
                    rest,
                    out: &mut *self.out,
                    shared: self.shared,
                    counts: &mut *self.counts,
                    flush: self.flush.as_mut().map(|f| &mut **f as _),
                },
            ),
        }
    }

    fn reject(&mut self, record: Record, reason: String) -> Result<(), Error> {
        self.counts.rejected_before_sinks += 1;
        self.shared.reject(rejection_of(&record, &reason))
    }

    fn warn(&mut self, message: String) {
        self.counts.warnings += 1;
        self.shared.warn(&message);
    }

    fn added(&mut self, from: &Record, n: u64) {
        self.counts.added += n;
        if let Some(t) = self.counts.per_input.tally(from.position.as_ref()) {
            t.added += n;
        }
    }
}

/// A rejection for a decoded record refused later (by a transform or a sink): the reason,
/// then the input, byte offset, record number and URL.
pub fn rejection_of(record: &Record, reason: &str) -> Rejection {
    let position = record.position.clone().unwrap_or_default();
    // Input, byte offset, record number and URL, as the decoder's own errors give them.
    let message = match &record.position {
        Some(p) if p.url.is_none() && !record.url.is_empty() => {
            let p = p.clone().with_url(Some(record.url_str().into_owned()));
            format!("{reason}, at {p}")
        }
        Some(p) => format!("{reason}, at {p}"),
        None => format!("{reason}, record {}", record.url_str()),
    };
    // `Record::raw` ends at `}`: add the newline that followed it, so quarantined records
    // stay one per line (`}\n@FILE {`), as the decoder's rejected bytes do.
    let raw = match (&record.raw, record.action) {
        (Some(raw), None) if raw.ends_with(b"\n") => raw.clone(),
        (raw, action) => {
            let mut buf = Vec::with_capacity(raw.as_ref().map_or(0, |r| r.len()) + 1);
            match raw {
                Some(raw) => {
                    buf.extend_from_slice(raw);
                    if !raw.ends_with(b"\n") {
                        buf.push(b'\n');
                    }
                }
                None => soif_codecs::soif::encode_record(record, &mut buf),
            }
            // A record from inside `@DELETE { … }` (or `@REFRESH`, `@UPDATE`) goes to the
            // quarantine inside its own envelope: its bytes are exact, and feeding the
            // repaired file back deletes (or refreshes) it as the original would have,
            // instead of storing a deleted record.
            match action {
                Some(action) => crate::source::in_envelope(action, &buf, false),
                None => buf.into(),
            }
        }
    };
    Rejection {
        message,
        position,
        raw: Some(raw),
    }
}

/// One sink's thread: writes each batch, reports refused records, finishes. Returns how
/// many records the sink took (see [`Sink::stored`]) with the outcome.
fn sink_stage(
    index: usize,
    mut sink: Box<dyn Sink>,
    rx: mpsc::Receiver<Arc<OutBatch>>,
    shared: &Shared,
) -> Result<(u64, Result<(), Error>), Error> {
    let mut took = 0u64;
    let result = sink_loop(index, &mut *sink, rx, shared, &mut took);
    for notice in sink.take_notices() {
        shared.sink_notice(sink.name(), &notice);
    }
    Ok((sink.stored().unwrap_or(took), result))
}

fn sink_loop(
    index: usize,
    sink: &mut dyn Sink,
    mut rx: mpsc::Receiver<Arc<OutBatch>>,
    shared: &Shared,
    took: &mut u64,
) -> Result<(), Error> {
    let mut result = Ok(());
    // The sink's warning count after the last record: when a write raises it, say which
    // record it was (the count alone would not tell the user where to look).
    let mut warned = sink.warnings();
    'batches: while let Some(batch) = rx.blocking_recv() {
        for (i, record) in batch.records.iter().enumerate() {
            let written = sink.write(record);
            for notice in sink.take_notices() {
                shared.sink_notice(sink.name(), &notice);
            }
            match written {
                Ok(()) => {
                    *took += 1;
                    let now = sink.warnings();
                    if now > warned {
                        shared.warn(&format!(
                            "{} output changed {} value(s) or name(s) to fit the format \
                             (invalid UTF-8, see --charset, or characters it cannot hold), \
                             at {}",
                            sink.name(),
                            now - warned,
                            record.location()
                        ));
                        warned = now;
                    }
                }
                Err(SinkError::Rejected(reason)) => {
                    let reason = format!("{} output refused the record: {reason}", sink.name());
                    let seq = batch.first_seq + i as u64;
                    if let Err(e) = shared.sink_reject(Some(seq), record, &reason) {
                        result = Err(e);
                        break 'batches;
                    }
                }
                Err(SinkError::Fatal(e)) => return Err(e),
            }
            if let Err(e) = reject_refused(sink, shared) {
                result = Err(e);
                break 'batches;
            }
        }
        shared.sink_done(index, batch.first_seq + batch.records.len() as u64);
    }
    // Closing the channel tells the transform stage we are gone (if we stopped early).
    drop(rx);
    let finished = sink.finish();
    result = result.and(reject_refused(sink, shared));
    finished?;
    shared.add_sink_warnings(sink.warnings());
    result
}

/// Rejects the records `sink` took earlier and its destination refused since
/// ([`Sink::take_refused`]).
fn reject_refused(sink: &mut dyn Sink, shared: &Shared) -> Result<(), Error> {
    for refused in sink.take_refused() {
        let reason = format!(
            "{} output refused the record: {}",
            sink.name(),
            refused.reason
        );
        shared.sink_reject(None, &refused.record, &reason)?;
    }
    Ok(())
}

/// State shared by the stages: the error policy and its counts.
struct Shared {
    policy: ErrorPolicy,
    observer: Option<Arc<dyn Observer>>,
    rejects: Mutex<Rejects>,
    /// Locked only while `rejects` is held (one lock order, no deadlock).
    quarantine: Mutex<Option<QuarantineFile>>,
    sink_warnings: Mutex<u64>,
}

#[derive(Debug, Default, Clone)]
struct Rejects {
    rejected: u64,
    quarantined: u64,
    not_quarantined: u64,
    sink_rejected_distinct: u64,
    /// Sequence numbers refused by some sink that not every sink has reached yet;
    /// pruned as the sinks advance, so it holds at most a few batches.
    pending: BTreeSet<u64>,
    /// Per sink: every sequence number below this has been written or refused.
    watermarks: Vec<u64>,
    /// Rejections per input.
    per_input: PerInput,
}

impl Shared {
    fn new(opts: &EngineOptions, sinks: usize) -> Result<Shared, Error> {
        let quarantine = match &opts.policy {
            ErrorPolicy::Quarantine(path) => Some(QuarantineFile::open(path).map_err(|e| {
                Error::io(
                    format!("cannot replace quarantine file {}", path.display()),
                    e,
                )
            })?),
            ErrorPolicy::Column => {
                return Err(Error::Config(
                    "on_error=column is for the Python and Spark readers, whose rows have a corrupt-record column; the engine's sinks have none (use fail, skip or quarantine)".to_string(),
                ))
            }
            ErrorPolicy::Fail | ErrorPolicy::Skip => None,
        };
        Ok(Shared {
            policy: opts.policy.clone(),
            observer: opts.observer.clone(),
            rejects: Mutex::new(Rejects {
                watermarks: vec![0; sinks],
                ..Rejects::default()
            }),
            quarantine: Mutex::new(quarantine),
            sink_warnings: Mutex::new(0),
        })
    }

    fn rejects(&self) -> Rejects {
        self.rejects.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn warn(&self, message: &str) {
        if let Some(o) = &self.observer {
            o.warning(message);
        }
    }

    /// A sink's notice (see [`Sink::take_notices`]): a warning, counted as one.
    fn sink_notice(&self, sink: &str, notice: &str) {
        self.add_sink_warnings(1);
        self.warn(&format!("{sink} output: {notice}"));
    }

    fn add_sink_warnings(&self, n: u64) {
        if let Ok(mut w) = self.sink_warnings.lock() {
            *w += n;
        }
    }

    fn sink_warnings(&self) -> u64 {
        self.sink_warnings.lock().map(|w| *w).unwrap_or(0)
    }

    /// Applies the policy to a rejected record.
    fn reject(&self, rejection: Rejection) -> Result<(), Error> {
        let mut rejects = self
            .rejects
            .lock()
            .map_err(|_| Error::Fatal("a pipeline stage panicked".to_string()))?;
        self.reject_locked(&mut rejects, rejection)
    }

    fn reject_locked(&self, rejects: &mut Rejects, rejection: Rejection) -> Result<(), Error> {
        if let Some(t) = rejects.per_input.tally(Some(&rejection.position)) {
            t.rejected += 1;
            if t.messages.len() < INPUT_MESSAGES {
                t.messages.push(rejection.message.clone());
            }
        }
        match &self.policy {
            ErrorPolicy::Fail => {
                // Counted, so that the summary of the failed run adds up.
                rejects.rejected += 1;
                return Err(Error::Rejected(rejection.message));
            }
            // `Column` is refused when the run starts ([`Shared::new`]).
            ErrorPolicy::Skip | ErrorPolicy::Column => {}
            ErrorPolicy::Quarantine(path) => match &rejection.raw {
                Some(raw) => {
                    let mut file = self
                        .quarantine
                        .lock()
                        .map_err(|_| Error::Fatal("a pipeline stage panicked".to_string()))?;
                    // Created by the first record it receives (see `QuarantineFile`).
                    if let Some(f) = file.as_mut() {
                        f.write(raw).map_err(|e| {
                            Error::io(format!("quarantine file {}", path.display()), e)
                        })?;
                    }
                    rejects.quarantined += 1;
                }
                None => {
                    rejects.not_quarantined += 1;
                    self.warn(&format!(
                        "record not quarantined (its bytes were not kept): {}",
                        rejection.message
                    ));
                }
            },
        }
        rejects.rejected += 1;
        if let Some(o) = &self.observer {
            o.rejected(&rejection.message);
        }
        Ok(())
    }

    /// A sink refused record `seq`: counted once however many sinks refuse it.
    /// A record a sink refused: `seq` is its sequence number when the sink refused it as
    /// it was written (then a record refused by several sinks counts once), `None` for
    /// one refused later ([`Sink::take_refused`]).
    fn sink_reject(&self, seq: Option<u64>, record: &Record, reason: &str) -> Result<(), Error> {
        let mut rejects = self
            .rejects
            .lock()
            .map_err(|_| Error::Fatal("a pipeline stage panicked".to_string()))?;
        if seq.is_none_or(|seq| rejects.pending.insert(seq)) {
            rejects.sink_rejected_distinct += 1;
            if let Some(t) = rejects.per_input.tally(record.position.as_ref()) {
                t.sink_rejected += 1;
            }
            self.reject_locked(&mut rejects, rejection_of(record, reason))
        } else {
            // Another sink refused it too: report the reason, count it once.
            if let Some(o) = &self.observer {
                o.rejected(&rejection_of(record, reason).message);
            }
            Ok(())
        }
    }

    /// Sink `index` has handled every record below `seq`.
    fn sink_done(&self, index: usize, seq: u64) {
        if let Ok(mut rejects) = self.rejects.lock() {
            if let Some(w) = rejects.watermarks.get_mut(index) {
                *w = seq;
            }
            let low = rejects.watermarks.iter().copied().min().unwrap_or(seq);
            rejects.pending = rejects.pending.split_off(&low);
        }
    }

    fn finish_quarantine(&self) -> Result<(), Error> {
        if let ErrorPolicy::Quarantine(path) = &self.policy {
            let mut file = self
                .quarantine
                .lock()
                .map_err(|_| Error::Fatal("a pipeline stage panicked".to_string()))?;
            if let Some(f) = file.as_mut() {
                f.flush()
                    .map_err(|e| Error::io(format!("quarantine file {}", path.display()), e))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
