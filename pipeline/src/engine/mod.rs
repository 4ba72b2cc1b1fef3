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
//! One file per stage: `decode.rs` (the decode stage and its batches), `transform_stage.rs`,
//! `sink_stage.rs`; `policy.rs` holds what they share (the error policy, rejections counted
//! once, the quarantine file) and `summary.rs` the counts a run reports.
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

mod decode;
mod policy;
mod sink_stage;
mod summary;
mod transform_stage;

pub use policy::rejection_of;
pub use summary::{InputCounts, Progress, Summary, INPUT_MESSAGES};

use crate::source::{Rejection, Source};
use crate::{Error, Sink, Transform};
use policy::Shared;
use sink_stage::sink_stage;
use soif_codecs::soif::DecoderOptions;
use soif_codecs::Record;
use soif_options::ErrorPolicy;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use transform_stage::{transform_stage, Counts};

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
}

async fn join<T>(task: tokio::task::JoinHandle<Result<T, Error>>) -> Result<T, Error> {
    match task.await {
        Ok(r) => r,
        Err(e) => Err(Error::Fatal(format!("a pipeline stage panicked: {e}"))),
    }
}

#[cfg(test)]
mod tests;
