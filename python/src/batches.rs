//! Record batches from the reading loop, built on two threads.
//!
//! Decoding is the cheap part (values are slices of the input); building a batch — the
//! UTF-8 check of every value, the copy into Arrow buffers, faulting in their fresh
//! pages — is most of the cost. So when a second core is there, the calling thread
//! decodes two chunks of records, hands the first to a worker thread to build, builds the
//! second itself, and hands out both in order. Batches stay in input order; at most two
//! chunks and two batches are in flight, so memory stays bounded.

use crate::core::{Core, Failure};
use arrow_array::RecordBatch;
use soif_arrow::BatchBuilder;
use soif_codecs::{Record, Value};
use std::collections::VecDeque;
use std::sync::mpsc::{channel, Receiver, Sender};

/// Bytes of names and values a batch holds at most (plus one record).
pub const BATCH_BYTES: usize = 8 << 20;

/// A worker thread that builds batches from chunks of records.
struct Worker {
    chunks: Sender<Vec<Record>>,
    batches: Receiver<RecordBatch>,
}

impl Worker {
    fn start() -> Option<Worker> {
        let (chunk_tx, chunk_rx) = channel::<Vec<Record>>();
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

/// A batch of `chunk`, its buffers sized up front (growing them would copy each value
/// again and fault in pages twice).
fn build(chunk: &[Record]) -> RecordBatch {
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

/// About how many bytes a record adds to a batch.
fn size(r: &Record) -> usize {
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

/// The reading loop and what turns its records into batches.
pub struct Batches {
    pub core: Core,
    batch_size: usize,
    /// `None` on one core, or before the first batch.
    worker: Option<Worker>,
    started: bool,
    ready: VecDeque<RecordBatch>,
    /// A failure met after the batches in `ready`: handed out once they are.
    deferred: Option<Failure>,
}

impl Batches {
    pub fn new(core: Core, batch_size: usize) -> Batches {
        Batches {
            core,
            batch_size,
            worker: None,
            started: false,
            ready: VecDeque::new(),
            deferred: None,
        }
    }

    /// Up to `batch_size` records (fewer at the end or at [`BATCH_BYTES`]).
    fn chunk(&mut self) -> Result<Vec<Record>, Failure> {
        let mut out = Vec::new();
        self.core
            .fill(self.batch_size, BATCH_BYTES, |r| {
                let n = size(&r);
                out.push(r);
                n
            })
            .map(|_| out)
    }

    /// The next batch, `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, Failure> {
        if let Some(b) = self.ready.pop_front() {
            return Ok(Some(b));
        }
        if let Some(f) = self.deferred.take() {
            return Err(f);
        }
        if !self.started {
            self.started = true;
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            if cores > 1 {
                self.worker = Worker::start();
            }
        }
        let first = self.chunk()?;
        if first.is_empty() {
            return Ok(None);
        }
        if self.worker.is_none() {
            return Ok(Some(build(&first)));
        }
        let second = match self.chunk() {
            Ok(c) => c,
            Err(f) => {
                self.deferred = Some(f);
                Vec::new()
            }
        };
        if second.is_empty() {
            return Ok(Some(build(&first)));
        }
        let Some(worker) = self.worker.as_ref() else {
            return Ok(Some(build(&first)));
        };
        if let Err(unsent) = worker.chunks.send(first) {
            // The worker is gone (it does not panic on records, but be safe): build
            // both here from now on.
            self.worker = None;
            let first = build(&unsent.0);
            self.ready.push_back(build(&second));
            return Ok(Some(first));
        }
        let second = build(&second);
        let first = worker.batches.recv().map_err(|_| Failure::Io {
            message: "the batch-building thread stopped".into(),
        })?;
        self.ready.push_back(second);
        Ok(Some(first))
    }
}
