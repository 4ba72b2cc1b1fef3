//! The sink stage: one blocking thread per sink, writing each batch in order.

use super::batch::OutBatch;
use super::policy::Shared;
use crate::{Error, Sink, SinkError};
use std::sync::Arc;
use tokio::sync::mpsc;

/// One sink's thread: writes each batch, reports refused records, finishes. Returns how
/// many records the sink took (see [`Sink::stored`]) with the outcome.
pub(super) fn sink_stage(
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
