//! The [`Engine`]: the stages started, joined, and their counts summed up.

use super::batch::{Decoded, OutBatch};
use super::decode::decode_stage;
use super::options::{EngineOptions, CHANNEL_BATCHES};
use super::policy::Shared;
use super::sink_stage::sink_stage;
use super::summary::Summary;
use super::transform_stage::{self, transform_stage, Counts};
use crate::source::Source;
use crate::{Error, Sink, Transform};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// Runs pipelines (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct Engine {
    opts: EngineOptions,
}

impl Engine {
    pub fn new(opts: EngineOptions) -> Engine {
        Engine { opts }
    }

    /// Reads `source` to the end through `transforms` into every sink, and returns the
    /// counts. An `Err` is a failed run: an I/O error, a sink that cannot go on, or a
    /// rejected record under [`ErrorPolicy::Fail`](soif_options::ErrorPolicy::Fail). Sinks are finished (flushed) in any
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

        // Transforms: one blocking thread, and one more per copy of the chain beyond the
        // first (see `transform_stage`); one bounded channel per copy.
        let chains = transform_stage::copies(transforms, self.opts.transform_threads());
        let capacity = transform_stage::channel_batches(chains.len());
        let (decoded_txs, decoded_rxs): (Vec<_>, Vec<_>) = chains
            .iter()
            .map(|_| mpsc::channel::<Decoded>(capacity))
            .unzip();
        let transform_task = {
            let shared = shared.clone();
            tokio::task::spawn_blocking(move || {
                let mut counts = Counts::default();
                let result = transform_stage(chains, decoded_rxs, sink_txs, &shared, &mut counts);
                Ok((counts, result))
            })
        };

        // Decoding, here in the calling task.
        let (decoded, bytes) = decode_stage(&self.opts, source, decoded_txs).await;

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
