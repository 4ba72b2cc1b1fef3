//! The engine passes on what `order` emits at the end of the stream batch by batch, as
//! it is emitted — a sorted stream larger than memory is never gathered in one `Vec`
//! before the sinks see it.
//!
//! The check is deterministic, not a timing: a probe transform after `order` notes how
//! many records the sink has written when the last sorted record goes by. The channel to
//! a sink holds [`CHANNEL_BATCHES`] batches, and a sink takes batch `k + 1` only after
//! writing batch `k`; so once `b` full batches have been sent, the sink has written at
//! least `b - CHANNEL_BATCHES - 1` of them. Gathering everything first would show 0.

use soif_codecs::Record;
use soif_pipeline::engine::{Engine, EngineOptions, CHANNEL_BATCHES};
use soif_pipeline::source::BytesSource;
use soif_pipeline::transforms::{build, TransformContext};
use soif_pipeline::{Emit, Error, Sink, SinkError, Transform};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Records per batch the engine sends on while transforms finish…
const BATCH: u64 = 256;
/// …or fewer, when they reach this many bytes (`engine::BATCH_BYTES`).
const BATCH_BYTES: u64 = 1 << 20;

/// `records` FILE records whose `N` counts down, each with `pad` bytes of padding.
fn input(records: u64, pad: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let pad = "x".repeat(pad);
    for i in 0..records {
        let n = (records - i).to_string();
        out.extend_from_slice(
            format!(
                "@FILE {{ http://example.org/{i}\nN{{{}}}:\t{n}\nPad{{{}}}:\t{pad}\n}}\n",
                n.len(),
                pad.len()
            )
            .as_bytes(),
        );
    }
    out
}

/// Checks the order as records arrive and counts them (keeps nothing else).
struct CheckingSink {
    written: Arc<AtomicU64>,
    last: u64,
    out_of_order: u64,
}

impl Sink for CheckingSink {
    fn name(&self) -> &str {
        "checking"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        let n: u64 = record
            .get_str("N")
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| SinkError::Rejected("no N".to_string()))?;
        if n != self.last + 1 {
            self.out_of_order += 1;
        }
        self.last = n;
        self.written.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        if self.out_of_order > 0 {
            return Err(Error::Fatal(format!(
                "{} records out of order",
                self.out_of_order
            )));
        }
        Ok(())
    }
}

/// Passes records on; when the last one goes by, notes what the sink has written.
struct Probe {
    records: u64,
    seen: u64,
    written: Arc<AtomicU64>,
    written_at_last: Arc<AtomicU64>,
}

impl Transform for Probe {
    fn name(&self) -> &str {
        "probe"
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        self.seen += 1;
        if self.seen == self.records {
            self.written_at_last
                .store(self.written.load(Ordering::SeqCst), Ordering::SeqCst);
        }
        out.emit(record)
    }
}

/// Sorts `records` records of `pad` padding bytes through `order:+N` into a checking
/// sink; returns how many the sink had written when the last sorted record was emitted.
fn sort(records: u64, pad: usize, budget: usize) -> u64 {
    let temp = tempfile::tempdir().unwrap();
    let ctx = TransformContext {
        temp_dir: Some(temp.path().to_path_buf()),
        memory_budget: budget,
        ..TransformContext::default()
    };
    let written = Arc::new(AtomicU64::new(0));
    let written_at_last = Arc::new(AtomicU64::new(u64::MAX));
    let transforms: Vec<Box<dyn Transform>> = vec![
        build("order:+N", &ctx).unwrap(),
        Box::new(Probe {
            records,
            seen: 0,
            written: written.clone(),
            written_at_last: written_at_last.clone(),
        }),
    ];
    let sink = CheckingSink {
        written: written.clone(),
        last: 0,
        out_of_order: 0,
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let summary = rt
        .block_on(Engine::new(EngineOptions::default()).run(
            Box::new(BytesSource::new("countdown", input(records, pad))),
            transforms,
            vec![Box::new(sink)],
        ))
        .unwrap();
    assert_eq!(summary.records_in, records);
    assert_eq!(summary.records_out, records);
    assert_eq!(written.load(Ordering::SeqCst), records);
    // The sorted runs were removed.
    assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
    written_at_last.load(Ordering::SeqCst)
}

#[test]
fn order_output_reaches_the_sink_while_order_is_still_emitting() {
    // About 140 bytes a record through 16 KiB: some forty runs of ~120 records.
    const RECORDS: u64 = 6000;
    let at_last = sort(RECORDS, 100, 16 << 10);
    // Full batches sent before the last record reached the probe.
    let sent = (RECORDS - 1) / BATCH;
    let floor = (sent - CHANNEL_BATCHES as u64 - 1) * BATCH;
    assert!(
        at_last >= floor,
        "the sink had written {at_last} records when order emitted its last; at least {floor} expected"
    );
}

#[test]
fn batches_of_large_records_are_bounded_in_bytes_too() {
    // 64 KiB records: a batch is full at 16 of them (1 MiB), long before 256.
    const RECORDS: u64 = 160;
    const PAD: u64 = 64 << 10;
    let per_batch = BATCH_BYTES.div_ceil(PAD);
    let at_last = sort(RECORDS, PAD as usize, 256 << 10);
    let sent = (RECORDS - 1) / per_batch;
    let floor = (sent - CHANNEL_BATCHES as u64 - 1) * per_batch;
    assert!(floor > 0);
    assert!(
        at_last >= floor,
        "the sink had written {at_last} records when order emitted its last; at least {floor} expected"
    );
}
