//! Record batches from the reading loop, built on worker threads.
//!
//! Decoding is the cheaper part (values are slices of the input); building a batch —
//! the UTF-8 check of every value, the copy into Arrow buffers, faulting in their fresh
//! pages — is most of the cost. So when there is more than one core, the calling thread
//! only decodes: it cuts the records into chunks and hands them in turn to two worker
//! threads, which build the batches while it decodes the next chunk; the batches are
//! taken back in input order. At most [`IN_FLIGHT`] chunks are out at a time, so memory
//! stays bounded (a few batches), whatever the input's size.

use crate::core::{Chunk, Core, Failure};
use arrow_array::RecordBatch;
use soif_arrow::BatchBuilder;
use soif_codecs::{Record, Value};
use std::collections::VecDeque;
use std::sync::mpsc::{channel, Receiver, Sender};

/// Bytes of names and values a batch holds at most (plus one record).
pub const BATCH_BYTES: usize = 8 << 20;

/// A worker thread that builds batches from chunks of records.
struct Worker {
    chunks: Sender<Chunk>,
    batches: Receiver<RecordBatch>,
}

impl Worker {
    fn start() -> Option<Worker> {
        let (chunk_tx, chunk_rx) = channel::<Chunk>();
        let (batch_tx, batch_rx) = channel();
        std::thread::Builder::new()
            .name("soif-batches".into())
            .spawn(move || {
                for chunk in chunk_rx {
                    if batch_tx.send(build(&chunk)).is_err() {
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
fn build(chunk: &Chunk) -> RecordBatch {
    match chunk {
        Chunk::Records(records) => build_records(records),
        Chunk::Spans(spans) => spans.build(),
    }
}

/// A batch of `chunk`, its buffers sized up front (growing them would copy each value
/// again and fault in pages twice).
fn build_records(chunk: &[Record]) -> RecordBatch {
    let (mut attributes, mut names, mut values) = (0, 0, 0);
    for r in chunk {
        for a in &r.attributes {
            attributes += 1;
            names += a.name.len();
            values += a.value.as_bytes().map_or(0, |b| b.len());
        }
    }
    let mut builder = BatchBuilder::with_capacity(chunk.len(), attributes, names, values);
    for r in chunk {
        builder.push(r);
    }
    builder.finish()
}

/// About how many bytes a record adds to a batch: its original bytes when the decoder
/// kept them (it does for every object it reads), else the sum of its parts.
fn size(r: &Record) -> usize {
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

/// Chunks handed to the workers and not yet taken back.
const IN_FLIGHT: usize = 3;

/// The reading loop and what turns its records into batches.
pub struct Batches {
    pub core: Core,
    batch_size: usize,
    /// Empty on one core (batches are then built on the calling thread), and until the
    /// first batch is asked for.
    workers: Vec<Worker>,
    started: bool,
    /// The worker of each chunk in flight, oldest first.
    in_flight: VecDeque<usize>,
    next_worker: usize,
    /// No more chunks to cut: the end, or a failure kept in `deferred`.
    exhausted: bool,
    /// A failure met after the chunks in flight: handed out once they are.
    deferred: Option<Failure>,
}

impl Batches {
    pub fn new(core: Core, batch_size: usize) -> Batches {
        Batches {
            core,
            batch_size,
            workers: Vec::new(),
            started: false,
            in_flight: VecDeque::new(),
            next_worker: 0,
            exhausted: false,
            deferred: None,
        }
    }

    /// Up to `batch_size` records (fewer at the end or at [`BATCH_BYTES`]); `None` at the
    /// end or on a failure (then kept in `deferred`).
    fn chunk(&mut self) -> Option<Chunk> {
        match self.core.fill_chunk(self.batch_size, BATCH_BYTES, size) {
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
                self.workers = (0..2).map_while(|_| Worker::start()).collect();
            }
        }
        if self.workers.is_empty() {
            if !self.exhausted {
                if let Some(chunk) = self.chunk() {
                    return Ok(Some(build(&chunk)));
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
