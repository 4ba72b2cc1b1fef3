//! Decoder throughput: `cargo bench -p soif-codecs --bench decode`.
//!
//! Two inputs, both generated in memory by `soif_codecs::generate`:
//! - `harvest_mixed`: 64 MB of Harvest-like FILE records (~20 attributes, a quarter with a
//!   5–50 KB multi-line Full-Text, one in ten with a binary Thumbnail);
//! - `single_huge_record`: one 100 MB record (one 100 MB Full-Text value);
//! - `floor_copy_100MB_fresh`: no decoding at all, only the 100 MB copied into a fresh
//!   buffer in the same reads — the cost of holding one record whole, which the huge
//!   record cannot go below (the kernel faults in and zeroes every new page).
//!
//! Each input is decoded two ways, by the one parser:
//! - `decode/…`: fed to the decoder in 256 KiB reads, as `FramedRead` would (stdin, pipes,
//!   decompressed and HTTP inputs), so the incremental path (records split across reads)
//!   is what is measured;
//! - `held_whole/…`: the input held whole in memory and decoded in place with
//!   `SoifDecoder::decode_bytes`, which is what `soif` does with a plain file (it maps
//!   it): values are slices of the input, nothing is copied.
//!
//! Records are counted and dropped: this is the decoder's cost, not a sink's.

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use soif_codecs::generate::{write_huge_record, Generator};
use soif_codecs::soif::{DecoderOptions, SoifDecoder};
use std::hint::black_box;
use tokio_util::codec::Decoder;

const READ: usize = 256 * 1024;

fn decode(input: &[u8], opts: &DecoderOptions) -> (u64, u64) {
    let mut decoder = SoifDecoder::new(opts.clone());
    let mut buf = BytesMut::with_capacity(READ * 2);
    let (mut ok, mut bad) = (0u64, 0u64);
    for chunk in input.chunks(READ) {
        buf.extend_from_slice(chunk);
        while let Some(item) = decoder.decode(&mut buf).expect("in-memory input") {
            match item {
                Ok(r) => {
                    black_box(&r);
                    ok += 1
                }
                Err(_) => bad += 1,
            }
        }
    }
    while let Some(item) = decoder.decode_eof(&mut buf).expect("in-memory input") {
        match item {
            Ok(_) => ok += 1,
            Err(_) => bad += 1,
        }
    }
    (ok, bad)
}

fn decode_held(input: &Bytes, opts: &DecoderOptions) -> (u64, u64) {
    let (mut ok, mut bad) = (0u64, 0u64);
    for item in SoifDecoder::new(opts.clone()).decode_bytes(input.clone()) {
        match item {
            Ok(r) => {
                black_box(&r);
                ok += 1
            }
            Err(_) => bad += 1,
        }
    }
    (ok, bad)
}

fn benches(c: &mut Criterion) {
    let mut mixed = Vec::new();
    Generator::new(1)
        .write_bytes(&mut mixed, 64 << 20)
        .expect("in memory");
    let mut huge = Vec::new();
    write_huge_record(&mut huge, 100 << 20).expect("in memory");

    let mut group = c.benchmark_group("decode");
    group.sample_size(10);
    group.warm_up_time(std::time::Duration::from_secs(1));
    group.measurement_time(std::time::Duration::from_secs(8));
    let strict = DecoderOptions::default();
    let lenient = DecoderOptions::default().lenient();
    let big = DecoderOptions::with_max_record_size(128 << 20);

    group.throughput(Throughput::Bytes(mixed.len() as u64));
    group.bench_function("harvest_mixed/strict", |b| {
        b.iter(|| {
            let (ok, bad) = decode(&mixed, &strict);
            assert_eq!(bad, 0);
            ok
        })
    });
    group.bench_function("harvest_mixed/lenient", |b| {
        b.iter(|| {
            let (ok, bad) = decode(&mixed, &lenient);
            assert_eq!(bad, 0);
            ok
        })
    });
    group.throughput(Throughput::Bytes(huge.len() as u64));
    group.bench_function("floor_copy_100MB_fresh", |b| {
        b.iter(|| {
            let mut buf = BytesMut::new();
            buf.reserve(huge.len());
            for chunk in huge.chunks(READ) {
                buf.extend_from_slice(chunk);
            }
            black_box(buf.len())
        })
    });
    group.bench_function("single_huge_record_100MB", |b| {
        b.iter(|| {
            let (ok, bad) = decode(&huge, &big);
            assert_eq!((ok, bad), (1, 0));
        })
    });
    group.finish();

    let mixed = Bytes::from(mixed);
    let huge = Bytes::from(huge);
    let mut group = c.benchmark_group("held_whole");
    group.sample_size(10);
    group.warm_up_time(std::time::Duration::from_secs(1));
    group.measurement_time(std::time::Duration::from_secs(8));
    group.throughput(Throughput::Bytes(mixed.len() as u64));
    group.bench_function("harvest_mixed/strict", |b| {
        b.iter(|| {
            let (ok, bad) = decode_held(&mixed, &strict);
            assert_eq!(bad, 0);
            ok
        })
    });
    group.bench_function("harvest_mixed/lenient", |b| {
        b.iter(|| {
            let (ok, bad) = decode_held(&mixed, &lenient);
            assert_eq!(bad, 0);
            ok
        })
    });
    group.throughput(Throughput::Bytes(huge.len() as u64));
    group.bench_function("single_huge_record_100MB", |b| {
        b.iter(|| {
            let (ok, bad) = decode_held(&huge, &big);
            assert_eq!((ok, bad), (1, 0));
        })
    });
    group.bench_function("single_huge_record_100MB/lenient", |b| {
        let big_lenient = big.clone().lenient();
        b.iter(|| {
            let (ok, bad) = decode_held(&huge, &big_lenient);
            assert_eq!((ok, bad), (1, 0));
        })
    });
    group.finish();
}

criterion_group!(decode_benches, benches);
criterion_main!(decode_benches);
