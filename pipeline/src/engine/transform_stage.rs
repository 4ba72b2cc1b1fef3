//! The transform stage: the error policy for the decoder's rejections, the `-t` chain
//! over each record, and the batches it emits sent to every sink.

use super::batch::{Decoded, Item, OutBatch};
use super::decode::record_size;
use super::options::BATCH_BYTES;
use super::policy::{rejection_of, Shared};
use super::summary::PerInput;
use crate::{Emit, Error, Transform};
use soif_codecs::Record;
use std::sync::Arc;
use tokio::sync::{mpsc, OwnedSemaphorePermit};

/// What the transform stage counted.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) records_in: u64,
    pub(super) emitted: u64,
    /// Rejected by the decoder or a transform.
    pub(super) rejected_before_sinks: u64,
    /// Made by transforms beyond one per record ([`Emit::added`]).
    pub(super) added: u64,
    pub(super) repaired: u64,
    pub(super) warnings: u64,
    /// Records in and emitted, per input.
    pub(super) per_input: PerInput,
}

/// Decoded items → error policy → transform chain → every sink.
pub(super) fn transform_stage(
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
