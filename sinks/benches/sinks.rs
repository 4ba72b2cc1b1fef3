//! Sink throughput in records/s: `cargo bench -p soif-sinks --bench sinks`.
//!
//! The records are Harvest-like FILE records from `soif_codecs::generate` (about twenty
//! attributes, a quarter with a 5–50 KB Full-Text, one in ten with a binary Thumbnail),
//! made once in memory, so only the sink's cost is measured:
//! - `sqlite`: into a fresh database file (WAL, 1000 rows per transaction), new tables and
//!   columns included;
//! - `sqlite_rerun`: the same records again into the filled database (every row an
//!   upsert that replaces);
//! - `csv`, `ntriples` and `rdfxml`: into `std::io::sink()`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use soif_codecs::generate::Generator;
use soif_codecs::Record;
use soif_pipeline::Sink;
use soif_sinks::csv::{ColumnCollector, CsvSink};
use soif_sinks::rdf::{RdfSink, Syntax};
use soif_sinks::sqlite::SqliteSink;
use soif_sinks::Charset;
use soif_store::StoreOptions;

const RECORDS: usize = 20_000;

fn records() -> Vec<Record> {
    let mut g = Generator::new(1);
    (0..RECORDS).map(|_| g.record()).collect()
}

fn load(db: &std::path::Path, records: &[Record]) {
    let mut sink = SqliteSink::open(db, StoreOptions::default(), 1000, &[]).expect("open");
    for r in records {
        sink.write(r).expect("write");
    }
    sink.finish().expect("finish");
}

fn sinks(c: &mut Criterion) {
    let records = records();
    let mut group = c.benchmark_group("sinks");
    group.throughput(Throughput::Elements(RECORDS as u64));
    group.sample_size(10);

    group.bench_function("sqlite", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("tempdir"),
            |dir| {
                load(&dir.path().join("bench.db"), &records);
                // Returned, so that deleting the files is not timed.
                dir
            },
            BatchSize::PerIteration,
        )
    });

    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("rerun.db");
    load(&db, &records);
    group.bench_function("sqlite_rerun", |b| b.iter(|| load(&db, &records)));

    let mut collector = ColumnCollector::default();
    records.iter().for_each(|r| collector.observe(r));
    let columns = collector.into_columns();
    group.bench_function("csv", |b| {
        b.iter(|| {
            let mut sink = CsvSink::new(std::io::sink(), Some(columns.clone()), "|", Charset::Utf8);
            for r in &records {
                sink.write(r).expect("write");
            }
            sink.finish().expect("finish");
        })
    });

    for syntax in [Syntax::NTriples, Syntax::RdfXml] {
        group.bench_function(syntax.name(), |b| {
            b.iter(|| {
                let mut sink = RdfSink::new(std::io::sink(), syntax);
                for r in &records {
                    sink.write(r).expect("write");
                }
                sink.finish().expect("finish");
            })
        });
    }
    group.finish();
}

criterion_group!(benches, sinks);
criterion_main!(benches);
