//! The decode stage, in the calling task: every input of the source in turn through a
//! [`SoifDecoder`] (or a record source's records as they come), into batches bounded in
//! records and bytes, each holding its share of the in-flight budget.

use super::batch::{Decoded, Item};
use super::options::{EngineOptions, Observer};
use super::options::{BATCH_BYTES, IN_FLIGHT_BYTES, PERMIT_BYTES, READ_CAPACITY, READ_SPARE};
use super::summary::Progress;
use crate::source::{InputData, Source};
use crate::Error;
use bytes::BytesMut;
use futures::{FutureExt, StreamExt};
use soif_codecs::soif::split::decode_range;
use soif_codecs::soif::SoifDecoder;
use soif_codecs::Record;
use std::sync::Arc;
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, Semaphore};
use tokio_util::codec::Decoder;

/// Source → decoder: reads every input in turn and sends batches of records and
/// rejections to the transform stage, dealt to `txs` in turn (the transform
/// threads, see [`super::transform_stage`]). Returns the bytes read.
pub(super) async fn decode_stage(
    opts: &EngineOptions,
    mut source: Box<dyn Source>,
    txs: Vec<mpsc::Sender<Decoded>>,
) -> (Result<(), Error>, u64) {
    let budget = Arc::new(Semaphore::new(IN_FLIGHT_BYTES / PERMIT_BYTES));
    let mut batch = Batcher::new(opts.batch_records, txs, budget, &opts.observer);
    let result = async {
        while let Some(input) = source.next_input().await? {
            match input.data {
                InputData::Soif(mut reader) => {
                    let opts = opts.decoder.clone().named(input.name.clone());
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
                    let opts = opts.decoder.clone().named(input.name.clone());
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

/// Collects decoded items into batches bounded in count and bytes.
pub(super) struct Batcher<'a> {
    items: Vec<Item>,
    bytes: usize,
    max: usize,
    records: u64,
    /// Batch `n` goes to `txs[n % txs.len()]`.
    txs: Vec<mpsc::Sender<Decoded>>,
    next: usize,
    budget: Arc<Semaphore>,
    observer: &'a Option<Arc<dyn Observer>>,
}

impl<'a> Batcher<'a> {
    fn new(
        max: usize,
        txs: Vec<mpsc::Sender<Decoded>>,
        budget: Arc<Semaphore>,
        observer: &'a Option<Arc<dyn Observer>>,
    ) -> Self {
        Batcher {
            items: Vec::with_capacity(max.max(1)),
            bytes: 0,
            max: max.max(1),
            records: 0,
            txs,
            next: 0,
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
        let Some(tx) = self.txs.get(self.next % self.txs.len().max(1)) else {
            return false;
        };
        self.next += 1;
        let ok = tx.send(Decoded { items, budget }).await.is_ok();
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
pub(super) fn record_size(r: &Record) -> usize {
    match &r.raw {
        Some(raw) => raw.len(),
        None => r
            .attributes
            .iter()
            .map(|a| a.name.len() + a.value.leaves().iter().map(|b| b.len()).sum::<usize>())
            .sum(),
    }
}
