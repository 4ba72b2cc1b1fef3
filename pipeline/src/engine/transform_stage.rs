//! The transform stage: the `-t` chain over each record, then the counts and the error
//! policy in input order, and the batches sent on to every sink.
//!
//! ```text
//!  decoded batches ─┬─▶ chain (thread 1) ─┐ one Done per batch:     collector: counts,
//!   (dealt in turn) ├─▶ chain (thread 2) ─┼─ records + events ──▶  error policy, warnings,
//!                   └─▶ …                 ┘  taken back in turn      batches to the sinks
//! ```
//!
//! A chain runs a batch without touching the run's counts or the error policy: it writes
//! what happened, in order, into a [`Done`] — each item counted in, each warning, each
//! rejection with how many records had been emitted before it — and the collector applies
//! that in input order. So the counts, the quarantine file, the warnings and the first
//! rejection that stops a run under `--on-error fail` are the same however many threads
//! ran the chain.
//!
//! When every transform of the chain can be copied ([`Transform::fork`]: its output for
//! a record depends on that record alone) and [`EngineOptions::transform_threads`] allows
//! it, each thread runs its own copy of the chain, the decode stage deals batch `n` to
//! thread `n mod W` and the collector takes them back in the same turn, so the output
//! keeps the input order without a reorder buffer: a thread that is ahead waits on its
//! bounded channel, and every batch still holds its share of the in-flight budget. At the
//! end the copies are joined into the first chain ([`Transform::join`]), whose
//! [`Transform::finish`] runs last. Otherwise (`order`, `hits`, `dedupe`, `validate`: they
//! need the stream in order) one chain runs on the collector's own thread.
//!
//! [`EngineOptions::transform_threads`]: super::options::EngineOptions::transform_threads

use super::batch::{Decoded, Item, OutBatch};
use super::decode::record_size;
use super::options::{BATCH_BYTES, CHANNEL_BATCHES};
use super::policy::{rejection_of, Shared};
use super::summary::PerInput;
use crate::source::Rejection;
use crate::{Emit, Error, Transform};
use soif_codecs::Record;
use std::sync::Arc;
use tokio::sync::{mpsc, OwnedSemaphorePermit};

/// One copy of the transform chain.
pub(super) type Transforms = Vec<Box<dyn Transform>>;

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

/// The copies of `transforms` the stage runs: `threads` of them when every transform can
/// be copied ([`Transform::fork`]), else the chain alone. The first is `transforms`
/// itself. An empty chain is never copied (there is nothing to share out).
pub(super) fn copies(transforms: Transforms, threads: usize) -> Vec<Transforms> {
    if threads <= 1 || transforms.is_empty() {
        return vec![transforms];
    }
    let mut copies = Vec::with_capacity(threads);
    for _ in 1..threads {
        match transforms.iter().map(|t| t.fork()).collect::<Option<_>>() {
            Some(copy) => copies.push(copy),
            None => return vec![transforms],
        }
    }
    copies.insert(0, transforms);
    copies
}

/// Batches each transform thread may have waiting for it, and done for the collector.
pub(super) fn channel_batches(threads: usize) -> usize {
    CHANNEL_BATCHES.div_ceil(threads.max(1))
}

/// Decoded items → transform chain(s) → counts and error policy, in input order → every
/// sink. `chains` are the copies of the chain ([`copies`]) and `rxs` their decoded
/// batches, one channel each.
pub(super) fn transform_stage(
    mut chains: Vec<Transforms>,
    mut rxs: Vec<mpsc::Receiver<Decoded>>,
    sinks: Vec<mpsc::Sender<Arc<OutBatch>>>,
    shared: &Shared,
    counts: &mut Counts,
) -> Result<(), Error> {
    let fail = matches!(shared.policy, soif_options::ErrorPolicy::Fail);
    let mut collector = Collector {
        sinks,
        shared,
        counts,
        seq: 0,
    };
    if chains.len() > 1 {
        parallel(chains, rxs, &mut collector, fail)
    } else {
        let (Some(mut chain), Some(mut rx)) = (chains.pop(), rxs.pop()) else {
            return Ok(());
        };
        while let Some(Decoded { items, budget }) = rx.blocking_recv() {
            let done = run_batch(&mut chain, items, budget, fail);
            if !collector.take(done)? {
                return Ok(());
            }
        }
        finish(&mut chain, &mut collector, fail)
    }
}

/// Each chain on a thread of its own; the collector here takes their batches back in
/// the turn the decode stage dealt them in.
fn parallel(
    chains: Vec<Transforms>,
    rxs: Vec<mpsc::Receiver<Decoded>>,
    collector: &mut Collector<'_>,
    fail: bool,
) -> Result<(), Error> {
    let threads = chains.len();
    let mut joined: Vec<Transforms> = Vec::with_capacity(threads);
    let outcome = std::thread::scope(|scope| {
        let mut dones = Vec::with_capacity(threads);
        let mut handles = Vec::with_capacity(threads);
        for (chain, rx) in chains.into_iter().zip(rxs) {
            let (tx, done_rx) = mpsc::channel::<Done>(channel_batches(threads));
            dones.push(done_rx);
            handles.push(scope.spawn(move || chain_thread(chain, rx, tx, fail)));
        }
        let mut next = 0usize;
        while let Some(done) = dones
            .get_mut(next % threads)
            .and_then(|rx| rx.blocking_recv())
        {
            // `?` and `return` leave the scope, dropping `dones`: the threads' next send
            // fails and they stop.
            if !collector.take(done)? {
                return Ok(false);
            }
            next += 1;
        }
        // The input has ended (batch `next` was never dealt), so every thread has ended
        // or is about to; or one panicked, which its handle tells.
        drop(dones);
        for handle in handles {
            match handle.join() {
                Ok(chain) => joined.push(chain),
                Err(_) => {
                    return Err(Error::Fatal(
                        "a pipeline stage panicked: a transform thread".to_string(),
                    ))
                }
            }
        }
        Ok(true)
    })?;
    if !outcome {
        return Ok(());
    }
    let mut chains = joined.into_iter();
    let Some(mut first) = chains.next() else {
        return Ok(());
    };
    for copy in chains {
        for (t, copy) in first.iter_mut().zip(copy) {
            t.join(copy);
        }
    }
    finish(&mut first, collector, fail)
}

/// One transform thread: its copy of the chain over each batch dealt to it. Gives the
/// chain back for [`Transform::join`].
fn chain_thread(
    mut chain: Transforms,
    mut rx: mpsc::Receiver<Decoded>,
    tx: mpsc::Sender<Done>,
    fail: bool,
) -> Transforms {
    while let Some(Decoded { items, budget }) = rx.blocking_recv() {
        let done = run_batch(&mut chain, items, budget, fail);
        let stopped = done.stopped;
        if tx.blocking_send(done).is_err() || stopped {
            break;
        }
    }
    chain
}

/// What a chain did with a batch (or, at the end, with what it let go), in input order.
struct Done {
    records: Vec<Record>,
    events: Vec<Event>,
    /// The batch's share of the in-flight budget, passed on with its records.
    budget: Option<OwnedSemaphorePermit>,
    /// The chain stopped in this batch (an error, or a rejection under `fail`).
    stopped: bool,
}

impl Done {
    fn new(budget: Option<OwnedSemaphorePermit>) -> Done {
        Done {
            records: Vec::new(),
            events: Vec::new(),
            budget,
            stopped: false,
        }
    }
}

/// Something that happened while a chain ran, for the collector to count and apply.
enum Event {
    /// An item of the decoder's counted in (a record or a rejection), by its input.
    In(Option<Arc<str>>),
    /// A record that needed lenient repairs, with a warning for each.
    Repaired(Vec<String>),
    Warn(String),
    /// A record rejected after the first `emitted` records of the [`Done`].
    Reject {
        emitted: usize,
        rejection: Box<Rejection>,
    },
    /// Records a transform added ([`Emit::added`]), by the input of the one they came from.
    Added {
        input: Option<Arc<str>>,
        n: u64,
    },
    /// The chain stopped with this error, after every record emitted so far.
    Stopped(Error),
}

/// Runs `chain` over a batch of decoded items.
fn run_batch(
    chain: &mut [Box<dyn Transform>],
    items: Vec<Item>,
    budget: OwnedSemaphorePermit,
    fail: bool,
) -> Done {
    let mut done = Done::new(Some(budget));
    done.events.reserve(items.len());
    for item in items {
        match item {
            Item::Rejected(rejection) => {
                done.events
                    .push(Event::In(rejection.position.input.clone()));
                done.events.push(Event::Reject {
                    emitted: done.records.len(),
                    rejection: Box::new(rejection),
                });
                if fail {
                    done.stopped = true;
                    return done;
                }
            }
            Item::Record(record) => {
                let input = record.position.as_ref().and_then(|p| p.input.clone());
                done.events.push(Event::In(input));
                if !record.repairs.is_empty() {
                    let messages = record
                        .repairs
                        .iter()
                        .map(|repair| repair_message(&record, repair))
                        .collect();
                    done.events.push(Event::Repaired(messages));
                }
                let result = Run {
                    rest: chain,
                    done: &mut done,
                    fail,
                    flush: None,
                }
                .emit(record);
                if let Err(e) = result {
                    done.events.push(Event::Stopped(e));
                    done.stopped = true;
                    return done;
                }
            }
        }
    }
    done
}

/// Records per batch sent on while transforms finish.
const FINISH_BATCH_RECORDS: usize = 256;

/// The end of the stream: each transform's [`Transform::finish`], in chain order, so
/// that what one lets go (`order`) still passes through the ones after it. What they let
/// go is sent on batch by batch as it is emitted, never gathered first: `order` lets a
/// whole spilled stream go here.
fn finish(
    chain: &mut [Box<dyn Transform>],
    collector: &mut Collector<'_>,
    fail: bool,
) -> Result<(), Error> {
    let mut done = Done::new(None);
    // Bytes of the records in `done` (bounded like the decoder's batches).
    let mut pending = 0usize;
    for i in 0..chain.len() {
        let (head, rest) = chain.split_at_mut(i + 1);
        // Set when sending a batch on ended the stage: a sink has gone (Ok) or the error
        // policy stopped the run.
        let mut ended: Option<Result<(), Error>> = None;
        let finished = {
            let mut flush = |done: &mut Done| {
                pending += done.records.last().map_or(0, record_size);
                if done.records.len() < FINISH_BATCH_RECORDS && pending < BATCH_BYTES {
                    return true;
                }
                pending = 0;
                match collector.take(std::mem::replace(done, Done::new(None))) {
                    Ok(true) => true,
                    Ok(false) => {
                        ended = Some(Ok(()));
                        false
                    }
                    Err(e) => {
                        ended = Some(Err(e));
                        false
                    }
                }
            };
            head[i].finish(&mut Run {
                rest,
                done: &mut done,
                fail,
                flush: Some(&mut flush),
            })
        };
        if let Some(ended) = ended {
            // The error `flush` made the transform return is moot.
            return ended;
        }
        if let Err(e) = finished {
            done.events.push(Event::Stopped(e));
            break;
        }
    }
    collector.take(done).map(|_| ())
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
/// rest of the chain, and after the last transform into the [`Done`].
struct Run<'a> {
    rest: &'a mut [Box<dyn Transform>],
    done: &'a mut Done,
    /// `--on-error fail`: a rejection ends the run, so the chain stops there.
    fail: bool,
    /// While transforms finish: told of each record added to the [`Done`], sends it on
    /// once it is full; false when the stage has ended.
    flush: Option<&'a mut Flush<'a>>,
}

/// Sends a [`Done`] on while transforms finish; false when the stage has ended.
type Flush<'a> = dyn FnMut(&mut Done) -> bool + 'a;

impl Emit for Run<'_> {
    fn emit(&mut self, record: Record) -> Result<(), Error> {
        match self.rest.split_first_mut() {
            None => {
                self.done.records.push(record);
                if let Some(flush) = self.flush.as_mut() {
                    if !flush(self.done) {
                        return Err(Error::Fatal("the output has stopped".to_string()));
                    }
                }
                Ok(())
            }
            Some((first, rest)) => first.apply(
                record,
                &mut Run {
                    rest,
                    done: &mut *self.done,
                    fail: self.fail,
                    flush: self.flush.as_mut().map(|f| &mut **f as _),
                },
            ),
        }
    }

    fn reject(&mut self, record: Record, reason: String) -> Result<(), Error> {
        let rejection = rejection_of(&record, &reason);
        // Under `fail` the collector stops the run at this rejection with the error the
        // policy gives; this one only stops the chain.
        let stop = self
            .fail
            .then(|| Error::Rejected(rejection.message.clone()));
        self.done.events.push(Event::Reject {
            emitted: self.done.records.len(),
            rejection: Box::new(rejection),
        });
        stop.map_or(Ok(()), Err)
    }

    fn warn(&mut self, message: String) {
        self.done.events.push(Event::Warn(message));
    }

    fn added(&mut self, from: &Record, n: u64) {
        let input = from.position.as_ref().and_then(|p| p.input.clone());
        self.done.events.push(Event::Added { input, n });
    }
}

/// Counts what the chains did and applies the error policy, in input order, and sends
/// their records on to every sink.
struct Collector<'a> {
    sinks: Vec<mpsc::Sender<Arc<OutBatch>>>,
    shared: &'a Shared,
    counts: &'a mut Counts,
    /// The sequence number of the next record sent.
    seq: u64,
}

impl Collector<'_> {
    /// Takes a [`Done`]: its events in order, then its records to the sinks. `Ok(false)`
    /// when a sink has gone (it failed and says why); an error stops the run, after the
    /// records emitted before it are sent on.
    fn take(&mut self, done: Done) -> Result<bool, Error> {
        let Done {
            mut records,
            events,
            budget,
            ..
        } = done;
        for event in events {
            let stop = match event {
                Event::In(input) => {
                    self.counts.records_in += 1;
                    if let Some(t) = self.counts.per_input.tally_of(input.as_ref()) {
                        t.records_in += 1;
                    }
                    None
                }
                Event::Repaired(messages) => {
                    self.counts.repaired += 1;
                    for message in messages {
                        self.counts.warnings += 1;
                        self.shared.warn(&message);
                    }
                    None
                }
                Event::Warn(message) => {
                    self.counts.warnings += 1;
                    self.shared.warn(&message);
                    None
                }
                Event::Reject { emitted, rejection } => {
                    self.counts.rejected_before_sinks += 1;
                    self.shared.reject(*rejection).err().map(|e| (emitted, e))
                }
                Event::Added { input, n } => {
                    self.counts.added += n;
                    if let Some(t) = self.counts.per_input.tally_of(input.as_ref()) {
                        t.added += n;
                    }
                    None
                }
                Event::Stopped(e) => Some((records.len(), e)),
            };
            if let Some((emitted, e)) = stop {
                // Under `fail`, what came before the bad record is still written.
                records.truncate(emitted);
                self.send(records, budget);
                return Err(e);
            }
        }
        Ok(self.send(records, budget))
    }

    /// Sends `records` to every sink; false when a sink has gone.
    fn send(&mut self, records: Vec<Record>, budget: Option<OwnedSemaphorePermit>) -> bool {
        if records.is_empty() {
            return true;
        }
        self.counts.emitted += records.len() as u64;
        for r in &records {
            if let Some(t) = self.counts.per_input.tally(r.position.as_ref()) {
                t.emitted += 1;
            }
        }
        let batch = Arc::new(OutBatch {
            first_seq: self.seq,
            records,
            _budget: budget,
        });
        self.seq += batch.records.len() as u64;
        self.sinks
            .iter()
            .all(|tx| tx.blocking_send(batch.clone()).is_ok())
    }
}
