//! How the engine runs: its options, the observer it reports to, and the sizes that bound
//! its batches and the memory in flight.

use super::summary::Progress;
use soif_codecs::soif::DecoderOptions;
use soif_options::ErrorPolicy;
use std::fmt;
use std::sync::Arc;

/// A batch is sent on when it holds this many bytes of records.
pub const BATCH_BYTES: usize = 1 << 20;
/// Batches a channel holds before its sender waits.
pub const CHANNEL_BATCHES: usize = 4;
/// Bytes of records in flight between the decoder and the sinks, all stages together.
pub const IN_FLIGHT_BYTES: usize = 16 << 20;
/// The unit of that budget (a semaphore permit).
pub(super) const PERMIT_BYTES: usize = 1024;
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
    /// Threads that run the transform chain when every transform in it handles each
    /// record on its own ([`crate::Transform::fork`]); a chain that needs the stream in
    /// order runs on one. `0` (the default): the environment variable
    /// [`TRANSFORM_THREADS_VAR`] when it holds a number from 1, else as many as the
    /// machine has cores ([`std::thread::available_parallelism`]).
    pub transform_threads: usize,
    pub observer: Option<Arc<dyn Observer>>,
}

/// The environment variable that sets [`EngineOptions::transform_threads`] when it is 0
/// (docs/performance.md#the-transform-stage).
pub const TRANSFORM_THREADS_VAR: &str = "SOIF_TRANSFORM_THREADS";

impl EngineOptions {
    /// [`EngineOptions::transform_threads`] as the run uses it: at least 1.
    pub fn transform_threads(&self) -> usize {
        if self.transform_threads > 0 {
            return self.transform_threads;
        }
        std::env::var(TRANSFORM_THREADS_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            policy: ErrorPolicy::Fail,
            decoder: DecoderOptions::default(),
            batch_records: 256,
            transform_threads: 0,
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
            .field("transform_threads", &self.transform_threads)
            .finish_non_exhaustive()
    }
}
