//! Splits that are never wrong: whatever the split size, down to one
//! byte, the range decodes of a file's splits, concatenated, are exactly one sequential
//! decode of it — every record once with its offset and record number, none invented from
//! inside a value, the same errors with the same positions and raw bytes, the same lenient
//! repairs — on adversarial data: values holding `@FILE {` lines and whole fake objects,
//! envelopes (open across split points, unclosed, empty), damaged objects, wrong counts,
//! values over `max_record_size`, counts running past the end of the input.

use bytes::Bytes;
use proptest::prelude::*;
use soif_codecs::soif::split::{decode_range, RangeSpec, Split, Splitter};
use soif_codecs::soif::{DecodeError, DecoderOptions, SoifDecoder};
use soif_codecs::Record;

type Items = Vec<Result<Record, DecodeError>>;

fn whole(data: &Bytes, opts: &DecoderOptions) -> Items {
    SoifDecoder::new(opts.clone())
        .decode_bytes(data.clone())
        .collect()
}

/// Checks that `splits` tile `data` and start at boundaries, and returns the items of
/// their range decodes, concatenated.
fn by_ranges(data: &Bytes, opts: &DecoderOptions, splits: &[Split]) -> Items {
    let mut at = 0;
    let mut out = Vec::new();
    for s in splits {
        assert_eq!(s.start, at, "splits are contiguous: {splits:?}");
        assert!(s.end > s.start, "no empty split: {splits:?}");
        assert!(
            s.start == 0 || data[s.start as usize] == b'@',
            "a split starts at an object: {s:?}"
        );
        // Through the text form, as `soif split` prints it and `--range` reads it.
        let spec: RangeSpec = s.to_string().parse().expect("the text form parses");
        assert_eq!(spec.resolve(data).expect("resolves"), *s);
        out.extend(decode_range(data.clone(), opts.clone(), s).expect("a valid split"));
        at = s.end;
    }
    assert_eq!(at, data.len() as u64, "the splits cover the file");
    out
}

/// Asserts that the splits of `data` by `size` (and into `parts`) decode to `want`.
fn check(data: &Bytes, opts: &DecoderOptions, want: &Items, size: u64, parts: u64) {
    let splits: Vec<Split> = Splitter::by_size(data.clone(), opts.clone(), size).collect();
    let got = by_ranges(data, opts, &splits);
    assert_same(&got, want, &format!("size {size}: {splits:?}"));
    let splits: Vec<Split> = Splitter::by_parts(data.clone(), opts.clone(), parts).collect();
    assert!(splits.len() as u64 <= parts.max(1));
    let got = by_ranges(data, opts, &splits);
    assert_same(&got, want, &format!("{parts} parts: {splits:?}"));
}

fn assert_same(got: &Items, want: &Items, what: &str) {
    if got != want {
        let n = got.iter().zip(want).take_while(|(a, b)| a == b).count();
        panic!(
            "{what}: the range decodes differ from one decode at item {n} (of {} vs {}):\n  got  {:?}\n  want {:?}",
            got.len(),
            want.len(),
            got.get(n),
            want.get(n)
        );
    }
}

// --- Adversarial data ----------------------------------------------------------------

/// A value to put in an attribute: text that looks like SOIF.
fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        "[a-z ]{0,12}".prop_map(String::into_bytes),
        Just(b"@FILE { http://fake/\nTitle{4}:\tfake\n}\n".to_vec()),
        Just(b"\n@FILE {\n".to_vec()),
        Just(b"}\n@UPDATE {\n@FILE { http://fake/in-envelope\n}\n}\n".to_vec()),
        Just(b"}\n}\n".to_vec()),
        Just(b"x\n}\n@FILE { http://fake/after-brace\nA{1}:\tz\n".to_vec()),
        Just(b"Name{3}:\tabc\n".to_vec()),
        Just(b"\0\xff\xfe{}".to_vec()),
        Just(vec![b'v'; 300]),
    ]
}

/// How an attribute's header is written: right, or damaged in one of the ways real data is.
#[derive(Debug, Clone, Copy)]
enum Count {
    Exact,
    /// Off by this many bytes (a count broken by CRLF conversion).
    Off(i8),
    /// Far larger than the value (past `max_record_size`, or past the end).
    Huge(u64),
    /// `{x}`: not a number.
    NotNumber,
    /// `: ` instead of `:<TAB>`.
    SpaceDelimiter,
}

fn count() -> impl Strategy<Value = Count> {
    prop_oneof![
        6 => Just(Count::Exact),
        2 => (-3i8..4).prop_map(Count::Off),
        1 => prop_oneof![Just(600u64), Just(5000), Just(1 << 30)].prop_map(Count::Huge),
        1 => Just(Count::NotNumber),
        1 => Just(Count::SpaceDelimiter),
    ]
}

fn attribute(name: &str, value: &[u8], count: Count) -> Vec<u8> {
    let mut out = Vec::new();
    let n = value.len() as i64;
    match count {
        Count::Exact => out.extend(format!("{name}{{{n}}}:\t").bytes()),
        Count::Off(d) => out.extend(format!("{name}{{{}}}:\t", (n + i64::from(d)).max(0)).bytes()),
        Count::Huge(h) => out.extend(format!("{name}{{{h}}}:\t").bytes()),
        Count::NotNumber => out.extend(format!("{name}{{x}}:\t").bytes()),
        Count::SpaceDelimiter => out.extend(format!("{name}{{{n}}}: ").bytes()),
    }
    out.extend_from_slice(value);
    out.push(b'\n');
    out
}

/// One piece of a file.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    let object = (
        0u32..1000,
        prop::collection::vec((value(), count()), 0..4),
        prop::bool::weighted(0.9),
    )
        .prop_map(|(n, attrs, closed)| {
            let mut out = format!("@FILE {{ http://x/{n}\n").into_bytes();
            for (i, (v, c)) in attrs.iter().enumerate() {
                out.extend(attribute(&format!("A{i}"), v, *c));
            }
            if closed {
                out.extend_from_slice(b"}\n");
            }
            out
        });
    prop_oneof![
        8 => object,
        1 => Just(b"@UPDATE {\n".to_vec()),
        1 => Just(b"@DELETE {\n".to_vec()),
        1 => Just(b"}\n".to_vec()),
        1 => Just(b"@REFRESH { }\n".to_vec()),
        1 => Just(b"<html>garbage @ here</html>\n".to_vec()),
        1 => Just(b"@FILE { http://broken/\nTitle{4}\tnone\n}\n".to_vec()),
        1 => Just(b"@ {\n".to_vec()),
        1 => Just(b"   \n\t".to_vec()),
        1 => Just(b"@FILE{http://tight/\nA{1}:\tq}".to_vec()),
    ]
}

fn file() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(piece(), 0..14).prop_map(|ps| ps.concat())
}

fn options(lenient: bool) -> DecoderOptions {
    // A small limit, so that the too-large paths (a skip, a skip undone, a skip into
    // the end of the input) are taken.
    let o = DecoderOptions::with_max_record_size(512);
    if lenient {
        o.lenient()
    } else {
        o
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn range_decodes_equal_one_decode(
        data in file(),
        lenient in any::<bool>(),
        size in 1u64..200,
        parts in 1u64..12,
    ) {
        let data = Bytes::from(data);
        let opts = options(lenient).named("in.soif");
        let want = whole(&data, &opts);
        check(&data, &opts, &want, size, parts);
    }
}

/// Every split size from one byte to the whole file, on a file with one of each hazard.
#[test]
fn every_split_size_on_a_file_of_hazards() {
    let mut s = Vec::new();
    s.extend_from_slice(b"junk before\n");
    s.extend_from_slice(b"@UPDATE {\n");
    s.extend(attribute_object(
        1,
        b"@FILE { http://fake/\nTitle{4}:\tfake\n}\n",
        Count::Exact,
    ));
    s.extend(attribute_object(2, b"short", Count::Huge(5000)));
    s.extend(attribute_object(
        3,
        b"abc\n}\n@FILE { http://fake/x\n",
        Count::Off(2),
    ));
    s.extend_from_slice(b"}\n@DELETE {\n");
    s.extend(attribute_object(4, &[b'v'; 700], Count::Exact));
    s.extend(attribute_object(5, b"x", Count::Huge(1 << 30)));
    s.extend(attribute_object(6, b"tail", Count::NotNumber));
    s.extend(attribute_object(7, b"tail", Count::Huge(40)));
    let data = Bytes::from(s);
    for lenient in [false, true] {
        let opts = options(lenient).named("hazards.soif");
        let want = whole(&data, &opts);
        assert!(want.iter().any(|i| i.is_err()), "the file has errors");
        assert!(want.iter().any(|i| i.is_ok()), "and records");
        for size in 1..=data.len() as u64 + 1 {
            check(&data, &opts, &want, size, size.min(40));
        }
    }
}

fn attribute_object(n: u32, value: &[u8], count: Count) -> Vec<u8> {
    let mut out = format!("@FILE {{ http://x/{n}\n").into_bytes();
    out.extend(attribute("Note", value, count));
    out.extend_from_slice(b"}\n");
    out
}

/// The project's fixtures and the seed documents (RFC text full of SOIF examples inside
/// prose), split at several sizes.
#[test]
fn fixtures_and_seeds_split_alike() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");
    let mut files = Vec::new();
    for dir in [
        "rfc2655",
        "harvest",
        "transforms",
        "rdm",
        "pipeline",
        "seeds",
        "compressed",
    ] {
        let Ok(entries) = std::fs::read_dir(format!("{root}/{dir}")) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = p.to_string_lossy();
            if name.ends_with(".soif") || name.ends_with(".txt") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 10, "fixtures found: {files:?}");
    for path in files {
        let data = Bytes::from(std::fs::read(&path).unwrap());
        for lenient in [false, true] {
            let mut opts = DecoderOptions::default().named(path.to_string_lossy().as_ref());
            opts.lenient = lenient;
            let want = whole(&data, &opts);
            for size in [1, 13, 100, 1000, 4096] {
                check(&data, &opts, &want, size, 7);
            }
        }
    }
}

/// A Harvest gatherer's dump is one `@UPDATE { … }` around every object: split inside
/// it, every record keeps its action, and an envelope never closed is reported once, by
/// the last split, at the envelope's offset.
#[test]
fn splits_inside_an_envelope_keep_its_action() {
    let mut s = b"@DELETE { }\n@UPDATE {\n".to_vec();
    for n in 0..50 {
        s.extend(attribute_object(n, b"value", Count::Exact));
    }
    let data = Bytes::from(s);
    let opts = DecoderOptions::default();
    let want = whole(&data, &opts);
    assert_eq!(want.len(), 51);
    assert!(want[..50]
        .iter()
        .all(|r| r.as_ref().unwrap().action.is_some()));
    let splits: Vec<Split> = Splitter::by_parts(data.clone(), opts.clone(), 5).collect();
    assert_eq!(splits.len(), 5);
    assert!(splits[1..]
        .iter()
        .all(|s| s.envelope.is_some_and(|e| e.offset == 12)));
    assert_same(&by_ranges(&data, &opts, &splits), &want, "5 parts");
}

/// The pass stops at the boundary after the last split point: the last split is not read.
#[test]
fn the_pass_does_not_read_past_the_last_point() {
    let mut s = Vec::new();
    for n in 0..1000 {
        s.extend(attribute_object(n, b"value", Count::Exact));
    }
    let data = Bytes::from(s);
    let mut splitter = Splitter::by_parts(data.clone(), DecoderOptions::default(), 2);
    let first = splitter.next().unwrap();
    assert!(first.end >= data.len() as u64 / 2);
    let second = splitter.next().unwrap();
    assert_eq!(second.end, data.len() as u64);
    assert!(splitter.next().is_none());
    assert!(splitter.offset() < data.len() as u64 * 3 / 4);
}

/// Larger than the decoder's 1 MiB window steps, so that range decodes and the whole
/// decode see the input through windows that end in different places: generated Harvest
/// records with a hazard after every few, split at sizes around and below the window.
#[test]
fn a_file_larger_than_the_window_splits_alike() {
    use soif_codecs::generate::Generator;
    let mut gen = Generator::new(7);
    let mut s = Vec::new();
    let mut n = 0;
    while s.len() < 5 << 20 {
        gen.write_bytes(&mut s, 200_000).unwrap();
        n += 1;
        s.extend(match n % 4 {
            0 => attribute_object(
                n,
                b"@FILE { http://fake/\nTitle{4}:\tfake\n}\n",
                Count::Exact,
            ),
            1 => b"@UPDATE {\n".to_vec(),
            2 => attribute_object(n, &vec![b'x'; 3 << 20], Count::Off(-2)),
            _ => b"}\n".to_vec(),
        });
    }
    let data = Bytes::from(s);
    for lenient in [false, true] {
        let mut opts = DecoderOptions::with_max_record_size(1 << 20);
        opts.lenient = lenient;
        let want = whole(&data, &opts);
        assert!(want.len() > 100);
        for size in [300_000, 1 << 20, 3 << 20] {
            check(&data, &opts, &want, size, 5);
        }
    }
}
