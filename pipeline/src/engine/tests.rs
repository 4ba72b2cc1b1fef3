use super::*;
use crate::source::Source;
use crate::source::{BytesSource, RecordsSource};
use crate::Refused;
use crate::{Emit, Error, Sink, SinkError, Transform};
use soif_codecs::Record;
use soif_options::ErrorPolicy;
use std::sync::{Arc, Mutex};

/// Collects URLs; refuses records whose URL contains `refuse`.
struct TestSink {
    refuse: &'static str,
    urls: Arc<Mutex<Vec<String>>>,
}

impl Sink for TestSink {
    fn name(&self) -> &str {
        "test"
    }
    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        let url = record.url_str().into_owned();
        if !self.refuse.is_empty() && url.contains(self.refuse) {
            return Err(SinkError::Rejected(format!("refused {url}")));
        }
        self.urls.lock().unwrap().push(url);
        Ok(())
    }
    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

fn sink(refuse: &'static str) -> (Box<dyn Sink>, Arc<Mutex<Vec<String>>>) {
    let urls = Arc::new(Mutex::new(Vec::new()));
    (
        Box::new(TestSink {
            refuse,
            urls: urls.clone(),
        }),
        urls,
    )
}

/// Drops records whose URL ends in an odd digit; rejects those ending in `9`.
struct OddFilter;

impl Transform for OddFilter {
    fn name(&self) -> &str {
        "odd"
    }
    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        match record.url.last() {
            Some(b'9') => out.reject(record, "nine".to_string()),
            Some(d) if (d - b'0') % 2 == 1 => Ok(()),
            _ => out.emit(record),
        }
    }
}

fn records(n: usize) -> Vec<Record> {
    (0..n)
        .map(|i| Record::new("T", format!("u{i}")).with("N", format!("{i}")))
        .collect()
}

fn run(
    opts: EngineOptions,
    source: Box<dyn Source>,
    transforms: Vec<Box<dyn Transform>>,
    sinks: Vec<Box<dyn Sink>>,
) -> Result<Summary, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
        .block_on(Engine::new(opts).run(source, transforms, sinks))
}

#[test]
fn order_is_kept_across_small_batches_and_sinks() {
    let (a, urls_a) = sink("");
    let (b, urls_b) = sink("");
    let opts = EngineOptions {
        batch_records: 3,
        ..EngineOptions::default()
    };
    let s = run(
        opts,
        Box::new(RecordsSource::new("mem", records(1000))),
        Vec::new(),
        vec![a, b],
    )
    .unwrap();
    assert_eq!((s.records_in, s.records_out), (1000, 1000));
    let want: Vec<String> = (0..1000).map(|i| format!("u{i}")).collect();
    assert_eq!(*urls_a.lock().unwrap(), want);
    assert_eq!(*urls_b.lock().unwrap(), want);
}

#[test]
fn counts_add_up_with_filters_and_rejections_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.soif");
    // Both sinks refuse u10..u19 (even ones reach them): counted once each.
    let (a, urls_a) = sink("u1");
    let (b, _) = sink("u1");
    let opts = EngineOptions {
        policy: ErrorPolicy::Quarantine(q.clone()),
        batch_records: 7,
        ..EngineOptions::default()
    };
    let s = run(
        opts,
        Box::new(RecordsSource::new("mem", records(30))),
        vec![Box::new(OddFilter)],
        vec![a, b],
    )
    .unwrap();
    // 30 in: u9, u19, u29 rejected by the transform; the other 12 odd ones filtered;
    // of the 15 even ones, u10..u18 (5) refused by the sinks.
    assert_eq!(s.records_in, 30);
    assert_eq!(s.filtered, 12);
    assert_eq!(s.rejected, 3 + 5);
    assert_eq!(s.records_out, 10);
    assert_eq!(s.records_in, s.records_out + s.rejected + s.filtered);
    assert_eq!(urls_a.lock().unwrap().len(), 10);
    // No original bytes for records built in code: canonical SOIF, in input order
    // for each stage.
    let quarantined = std::fs::read_to_string(&q).unwrap();
    assert_eq!(quarantined.matches("@T {").count(), 8, "{quarantined}");
    assert_eq!(s.quarantined, 8);
}

#[test]
fn the_quarantine_file_exists_only_when_something_was_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.soif");
    // An earlier run's quarantine: replaced by this run's, which rejects nothing.
    std::fs::write(&q, "@T { stale\n}\n").unwrap();
    let quarantine = || EngineOptions {
        policy: ErrorPolicy::Quarantine(q.clone()),
        ..EngineOptions::default()
    };
    let (a, _) = sink("none");
    let s = run(
        quarantine(),
        Box::new(RecordsSource::new("mem", records(5))),
        Vec::new(),
        vec![a],
    )
    .unwrap();
    assert_eq!((s.records_out, s.rejected), (5, 0));
    assert!(!q.exists(), "no rejection, yet {} exists", q.display());
    // The first rejection creates it.
    let (a, _) = sink("u3");
    let s = run(
        quarantine(),
        Box::new(RecordsSource::new("mem", records(5))),
        Vec::new(),
        vec![a],
    )
    .unwrap();
    assert_eq!((s.rejected, s.quarantined), (1, 1));
    let quarantined = std::fs::read_to_string(&q).unwrap();
    assert_eq!(quarantined.matches("@T {").count(), 1, "{quarantined}");
}

#[test]
fn counts_per_input_add_up() {
    let (a, _) = sink("u1");
    let (inp_a, inp_b): (Arc<str>, Arc<str>) = (Arc::from("a.soif"), Arc::from("b.soif"));
    let records: Vec<Record> = records(30)
        .into_iter()
        .enumerate()
        .map(|(i, mut r)| {
            let mut p = soif_codecs::Position::new(0, i as u64 + 1);
            p.input = Some(if i < 20 { inp_a.clone() } else { inp_b.clone() });
            r.position = Some(p);
            r
        })
        .collect();
    let opts = EngineOptions {
        policy: ErrorPolicy::Skip,
        batch_records: 7,
        ..EngineOptions::default()
    };
    let s = run(
        opts,
        Box::new(RecordsSource::new("mem", records)),
        vec![Box::new(OddFilter)],
        vec![a],
    )
    .unwrap();
    let names: Vec<&str> = s.inputs.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["a.soif", "b.soif"]);
    let (a, b) = (&s.inputs[0], &s.inputs[1]);
    // a: u0..u19: u9, u19 rejected by the transform, u10..u18 even (5) by the sink,
    // 8 other odd ones filtered, u0..u8 even (5) out.
    assert_eq!(
        (a.records_in, a.records_out, a.rejected, a.filtered),
        (20, 5, 7, 8)
    );
    assert_eq!(a.rejections.len(), 7);
    // b: u20..u29: u29 rejected, 4 odd filtered, 5 even out.
    assert_eq!(
        (b.records_in, b.records_out, b.rejected, b.filtered),
        (10, 5, 1, 4)
    );
    assert_eq!(a.records_out + b.records_out, s.records_out);
}

#[test]
fn fail_stops_with_the_reason() {
    let (a, urls) = sink("");
    let e = run(
        EngineOptions::default(),
        Box::new(BytesSource::new(
            "in.soif",
            &b"@T { a\n}\n@T { b\nX{z}:\t\n}\n@T { c\n}\n"[..],
        )),
        Vec::new(),
        vec![a],
    )
    .unwrap_err();
    assert!(matches!(e, Error::Rejected(_)));
    assert!(e.to_string().contains("in.soif: byte"), "{e}");
    assert_eq!(*urls.lock().unwrap(), ["a"]);
}

#[test]
fn batches_above_the_in_flight_budget_pass_one_at_a_time() {
    // One shared 20 MiB value: each record counts as larger than the whole budget.
    let big = bytes::Bytes::from(vec![b'x'; IN_FLIGHT_BYTES + (4 << 20)]);
    let records: Vec<Record> = (0..6)
        .map(|i| Record::new("T", format!("u{i}")).with("V", big.clone()))
        .collect();
    let (a, urls_a) = sink("");
    let (b, _) = sink("");
    let s = run(
        EngineOptions::default(),
        Box::new(RecordsSource::new("mem", records)),
        Vec::new(),
        vec![a, b],
    )
    .unwrap();
    assert_eq!(s.records_out, 6);
    assert_eq!(urls_a.lock().unwrap().len(), 6);
}

#[test]
fn the_column_policy_is_refused() {
    let (a, urls) = sink("u1");
    let opts = EngineOptions {
        policy: ErrorPolicy::Column,
        ..EngineOptions::default()
    };
    let e = run(
        opts,
        Box::new(RecordsSource::new("mem", records(3))),
        vec![],
        vec![a],
    )
    .unwrap_err();
    assert!(
        e.is_config() && e.to_string().contains("on_error=column"),
        "{e}"
    );
    assert!(urls.lock().unwrap().is_empty());
}

/// Takes records in batches of `batch`; when a batch is "sent" (full, or at the end),
/// hands back those whose URL contains `refuse` as refused (`Sink::take_refused`).
struct BatchingSink {
    batch: usize,
    refuse: &'static str,
    pending: Vec<Record>,
    refused: Vec<Refused>,
}

impl BatchingSink {
    fn send(&mut self) {
        for record in self.pending.drain(..) {
            if record.url_str().contains(self.refuse) {
                self.refused.push(Refused {
                    reason: format!("the store refused {}", record.url_str()),
                    record,
                });
            }
        }
    }
}

impl Sink for BatchingSink {
    fn name(&self) -> &str {
        "batching"
    }
    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        self.pending.push(record.clone());
        if self.pending.len() >= self.batch {
            self.send();
        }
        Ok(())
    }
    fn finish(&mut self) -> Result<(), Error> {
        self.send();
        Ok(())
    }
    fn take_refused(&mut self) -> Vec<Refused> {
        std::mem::take(&mut self.refused)
    }
}

#[test]
fn records_a_sink_refuses_after_taking_them_are_rejected_under_the_policy() {
    let batching = |refuse| {
        Box::new(BatchingSink {
            batch: 4,
            refuse,
            pending: Vec::new(),
            refused: Vec::new(),
        }) as Box<dyn Sink>
    };
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.soif");
    let opts = EngineOptions {
        policy: ErrorPolicy::Quarantine(q.clone()),
        batch_records: 3,
        ..EngineOptions::default()
    };
    // u1, u10..u19: refused when their batch is sent, the last ones at finish.
    let s = run(
        opts,
        Box::new(RecordsSource::new("mem", records(21))),
        Vec::new(),
        vec![batching("u1")],
    )
    .unwrap();
    assert_eq!((s.records_in, s.rejected, s.records_out), (21, 11, 10));
    assert_eq!(s.quarantined, 11);
    let quarantined = std::fs::read(&q).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&quarantined)
            .matches("@T {")
            .count(),
        11
    );
    // Under `fail`, the first refusal stops the run with the sink's reason.
    let e = run(
        EngineOptions::default(),
        Box::new(RecordsSource::new("mem", records(6))),
        Vec::new(),
        vec![batching("u5")],
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("batching output refused the record: the store refused u5"),
        "{e}"
    );
}

// --- the transform stage on several threads ----------------------------------------------

/// A per-record transform ([`Transform::fork`]) whose cost varies wildly between records:
/// records whose number is a multiple of 7 take a millisecond. Rejects `reject`, drops
/// `drop`, emits the others with a mark of which copy ran them.
#[derive(Clone)]
struct Uneven {
    reject: fn(u64) -> bool,
    drop: fn(u64) -> bool,
}

impl Transform for Uneven {
    fn name(&self) -> &str {
        "uneven"
    }
    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        let n: u64 = record
            .get_str("N")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if n.is_multiple_of(7) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if (self.reject)(n) {
            out.reject(record, format!("uneven refuses {n}"))
        } else if (self.drop)(n) {
            Ok(())
        } else {
            out.warn(format!("saw {n}"));
            out.emit(record)
        }
    }
    fn fork(&self) -> Option<Box<dyn Transform>> {
        Some(Box::new(self.clone()))
    }
}

fn uneven(reject: fn(u64) -> bool, drop: fn(u64) -> bool) -> Box<dyn Transform> {
    Box::new(Uneven { reject, drop })
}

/// Collects warnings and rejections as the engine reports them.
#[derive(Default)]
struct Heard {
    warnings: Mutex<Vec<String>>,
    rejected: Mutex<Vec<String>>,
}

impl Observer for Heard {
    fn warning(&self, message: &str) {
        self.warnings.lock().unwrap().push(message.to_string());
    }
    fn rejected(&self, message: &str) {
        self.rejected.lock().unwrap().push(message.to_string());
    }
}

/// What a run gave: its summary (or error), the sink's URLs, the warnings and
/// rejections heard, and the quarantine file.
struct Outcome {
    summary: Summary,
    result: Result<(), String>,
    urls: Vec<String>,
    warnings: Vec<String>,
    rejected: Vec<String>,
    quarantine: Vec<u8>,
}

fn outcome(
    threads: usize,
    policy: fn(std::path::PathBuf) -> ErrorPolicy,
    records: Vec<Record>,
    transforms: Vec<Box<dyn Transform>>,
) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.soif");
    let heard = Arc::new(Heard::default());
    let (a, urls) = sink("");
    let opts = EngineOptions {
        policy: policy(q.clone()),
        batch_records: 5,
        transform_threads: threads,
        observer: Some(heard.clone()),
        ..EngineOptions::default()
    };
    let (summary, result) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
        .block_on(Engine::new(opts).run_counted(
            Box::new(RecordsSource::new("mem", records)),
            transforms,
            vec![a],
        ));
    let summary = Summary {
        elapsed: std::time::Duration::ZERO,
        ..summary
    };
    let urls = urls.lock().unwrap().clone();
    let warnings = heard.warnings.lock().unwrap().clone();
    let rejected = heard.rejected.lock().unwrap().clone();
    Outcome {
        summary,
        result: result.map_err(|e| e.to_string()),
        urls,
        warnings,
        rejected,
        quarantine: std::fs::read(&q).unwrap_or_default(),
    }
}

fn positioned(n: usize) -> Vec<Record> {
    let input: Arc<str> = Arc::from("in.soif");
    records(n)
        .into_iter()
        .enumerate()
        .map(|(i, mut r)| {
            let mut p = soif_codecs::Position::new(100 * i as u64, i as u64 + 1);
            p.input = Some(input.clone());
            r.position = Some(p);
            r
        })
        .collect()
}

#[test]
fn a_chain_of_per_record_transforms_runs_on_several_threads_in_input_order() {
    let chain = || vec![uneven(|n| n % 10 == 3, |n| n % 10 == 5)];
    let quarantine = |q| ErrorPolicy::Quarantine(q);
    let one = outcome(1, quarantine, positioned(300), chain());
    let four = outcome(4, quarantine, positioned(300), chain());
    // 300 in: 30 rejected (…3), 30 dropped (…5), 240 out, in input order.
    let s = &four.summary;
    assert_eq!(
        (
            s.records_in,
            s.records_out,
            s.rejected,
            s.filtered,
            s.quarantined
        ),
        (300, 240, 30, 30, 30)
    );
    let want: Vec<String> = (0..300)
        .filter(|n| n % 10 != 3 && n % 10 != 5)
        .map(|n| format!("u{n}"))
        .collect();
    assert_eq!(four.urls, want);
    assert_eq!(four.warnings.len(), 240);
    assert_eq!(four.warnings[..2], ["saw 0", "saw 1"]);
    // Everything the same as on one thread: counts per input, warnings and
    // rejections in order, the quarantine file byte for byte.
    assert_eq!(four.summary, one.summary);
    assert_eq!(four.urls, one.urls);
    assert_eq!(four.warnings, one.warnings);
    assert_eq!(four.rejected, one.rejected);
    assert!(four.rejected[0].starts_with("uneven refuses 3, at in.soif"));
    assert_eq!(four.quarantine, one.quarantine);
    let quarantined = String::from_utf8_lossy(&four.quarantine).into_owned();
    let urls: Vec<&str> = quarantined
        .lines()
        .filter_map(|l| l.strip_prefix("@T { "))
        .collect();
    let want: Vec<String> = (0..30).map(|i| format!("u{}", i * 10 + 3)).collect();
    assert_eq!(urls, want);
}

#[test]
fn fail_stops_at_the_first_bad_record_in_input_order_on_several_threads() {
    // u49 is rejected, and u280 after it; u49's batch (u45..u49) is slow (u49 is a
    // multiple of 7), so the copy with u280 gets there first.
    let chain = || vec![uneven(|n| n == 49 || n == 280, |_| false)];
    for threads in [1, 3] {
        let o = outcome(threads, |_| ErrorPolicy::Fail, positioned(400), chain());
        let e = o.result.unwrap_err();
        assert!(
            e.contains("uneven refuses 49, at in.soif"),
            "{threads}: {e}"
        );
        // What came before it is written, nothing after.
        let want: Vec<String> = (0..49).map(|n| format!("u{n}")).collect();
        assert_eq!(o.urls, want, "{threads}");
        let s = &o.summary;
        assert_eq!(
            (s.records_in, s.records_out, s.rejected, s.filtered),
            (50, 49, 1, 0),
            "{threads}"
        );
        assert_eq!(o.warnings.len(), 49, "{threads}");
    }
}

#[test]
fn remap_fan_out_and_abort_count_the_same_on_several_threads() {
    let program = r#"
        n = to_int!(string!(.attributes.N))
        if mod(n, 5) == 0 { abort }
        if mod(n, 3) == 0 { . = [., merge(., {"url": "copy"})] }
    "#;
    let chain = || {
        vec![
            Box::<crate::transforms::collapse::Collapse>::default() as Box<dyn Transform>,
            Box::new(
                crate::transforms::remap::Remap::new(
                    program,
                    "t.vrl",
                    &crate::transforms::remap::tables::Tables::default(),
                )
                .unwrap(),
            ),
        ]
    };
    let one = outcome(1, |_| ErrorPolicy::Skip, positioned(200), chain());
    let three = outcome(3, |_| ErrorPolicy::Skip, positioned(200), chain());
    // 200 in: 40 aborted (multiples of 5); of the other 160, 53 multiples of 3 make two.
    let s = &three.summary;
    assert_eq!(
        (s.records_in, s.added, s.filtered, s.records_out),
        (200, 53, 40, 213)
    );
    assert_eq!(
        s.records_in + s.added,
        s.records_out + s.rejected + s.filtered
    );
    assert_eq!(s.inputs[0].added, 53);
    assert_eq!(three.summary, one.summary);
    assert_eq!(three.urls, one.urls);
    assert_eq!(three.urls[..5], ["u1", "u2", "u3", "copy", "u4"]);
}

#[test]
fn a_transform_that_needs_the_stream_keeps_the_chain_on_one_thread() {
    let ctx = crate::transforms::TransformContext::default();
    let build = |specs: &[&str]| -> Vec<Box<dyn Transform>> {
        specs
            .iter()
            .map(|s| crate::transforms::build(s, &ctx).unwrap())
            .collect()
    };
    let copies = |specs: &[&str]| transform_stage::copies(build(specs), 3).len();
    assert_eq!(copies(&["collapse", "dc", "select:Title", "match:N=1"]), 3);
    assert_eq!(copies(&["since:1994-11-06", "expand"]), 3);
    let validate = concat!(
        "validate:",
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/rdm/schema.soif"
    );
    for stream in ["hits:5", "order:+N", "dedupe", validate] {
        assert_eq!(copies(&["collapse", stream]), 1, "{stream}");
    }
    assert_eq!(copies(&[]), 1);
    // `hits:5` gives the first five records of the stream, not five per thread.
    let o = outcome(
        4,
        |_| ErrorPolicy::Fail,
        positioned(100),
        build(&["collapse", "hits:5"]),
    );
    assert_eq!(o.urls, ["u0", "u1", "u2", "u3", "u4"]);
    assert_eq!(o.summary.filtered, 95);
}

#[test]
fn the_copies_report_once_at_the_end_as_one_would() {
    // `collapse` reports records it could not collapse canonically: one warning with
    // the count of all the copies and the first record in the input.
    let odd: Vec<Record> = positioned(120)
        .into_iter()
        .map(|r| {
            if r.url_str().ends_with('7') {
                r.with("A-2", "x")
            } else {
                r
            }
        })
        .collect();
    let chain =
        || vec![Box::<crate::transforms::collapse::Collapse>::default() as Box<dyn Transform>];
    let one = outcome(1, |_| ErrorPolicy::Fail, odd.clone(), chain());
    let four = outcome(4, |_| ErrorPolicy::Fail, odd, chain());
    assert_eq!(four.warnings.len(), 1, "{:?}", four.warnings);
    assert!(
        four.warnings[0].contains("collapse: 12 record(s)"),
        "{}",
        four.warnings[0]
    );
    assert!(
        four.warnings[0].contains("(first: in.soif"),
        "{}",
        four.warnings[0]
    );
    assert_eq!(four.warnings, one.warnings);
    assert_eq!(four.summary, one.summary);
}

#[test]
fn batches_above_the_in_flight_budget_pass_one_at_a_time_on_several_threads() {
    // Each record larger than the whole budget: one batch in flight at a time, however
    // many threads run the chain, and still in order.
    let big = bytes::Bytes::from(vec![b'x'; IN_FLIGHT_BYTES + (1 << 20)]);
    let records: Vec<Record> = (0..8)
        .map(|i| {
            Record::new("T", format!("u{i}"))
                .with("N", format!("{i}"))
                .with("V", big.clone())
        })
        .collect();
    let o = outcome(
        3,
        |_| ErrorPolicy::Fail,
        records,
        vec![uneven(|_| false, |_| false)],
    );
    assert_eq!(o.result, Ok(()));
    let want: Vec<String> = (0..8).map(|i| format!("u{i}")).collect();
    assert_eq!(o.urls, want);
    assert_eq!(o.summary.records_out, 8);
}
