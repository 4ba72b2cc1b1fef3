//! The engine: source → SOIF decoder → transforms → sinks, as stages joined by bounded
//! channels.
//!
//! ```text
//!  Source ──bytes──▶ decode (the calling task: SoifDecoder over each input)
//!                      │  batches of records and rejections, dealt in turn to
//!                      ▼  W bounded channels (W = 1 unless the chain can be copied)
//!                    -t chain × W (a blocking thread each; one copy of the chain each)
//!                      │  taken back in the same turn
//!                      ▼
//!                    collector (a blocking thread): counts, error policy, in input order
//!                      │  Arc'd batches, one bounded channel per sink (broadcast)
//!                      ▼
//!                    sink 1 … sink N (a blocking thread each)
//! ```
//!
//! With W = 1 (a chain that needs the stream in order: `order`, `hits`, `dedupe`,
//! `validate`; or [`EngineOptions::transform_threads`] 1) the chain runs on the
//! collector's thread. How the copies keep the order, the counts and the error policy
//! of one thread: `transform_stage.rs`.
//!
//! One file per stage: `decode.rs` (the decode stage and its batches), `transform_stage.rs`,
//! `sink_stage.rs`; `run.rs` starts them and sums up their counts ([`Engine`]). What they
//! share: `options.rs` ([`EngineOptions`], [`Observer`], the sizes), `batch.rs` (what passes
//! between them), `policy.rs` (the error policy, rejections counted once, the quarantine
//! file) and `summary.rs` (the counts a run reports).
//!
//! Every channel is bounded, so a slow sink slows the decoder down instead of growing a
//! queue. A batch is at most [`EngineOptions::batch_records`] records or [`BATCH_BYTES`]
//! bytes (plus one record), and the batches in flight between the decoder and the last
//! sink hold at most [`IN_FLIGHT_BYTES`] together: the decoder takes a share of that
//! budget for each batch and the last sink to drop the batch gives it back. A batch larger
//! than the whole budget (one huge record) waits until it is alone in flight, so memory
//! stays bounded by the budget or the largest record, whichever is larger.
//! Decoding, the transform chain and encoding run on different threads, so they overlap
//! on two cores; each stage hands records on in order, so the output order is the input
//! order.
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
//! the first one, so a run that rejects nothing leaves none) ([`Rejection::raw`](crate::source::Rejection::raw)); a record whose bytes were not kept (one over
//! `--max-record-size`, skipped unbuffered) is counted in [`Summary::not_quarantined`].
//! Records built in code or by a transform that have no original bytes are written as
//! canonical SOIF.

mod batch;
mod decode;
mod options;
mod policy;
mod run;
mod sink_stage;
mod summary;
mod transform_stage;

pub use options::{
    EngineOptions, Observer, BATCH_BYTES, CHANNEL_BATCHES, IN_FLIGHT_BYTES, READ_CAPACITY,
    READ_SPARE, TRANSFORM_THREADS_VAR,
};
pub use policy::rejection_of;
pub use run::Engine;
pub use summary::{InputCounts, Progress, Summary, INPUT_MESSAGES};

#[cfg(test)]
mod tests;
