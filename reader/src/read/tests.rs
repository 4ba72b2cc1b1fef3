//! Unit tests of the reading loop (`read.rs`).

use super::*;
use crate::input::BytesInput;
use std::io::Write;

/// Three records, the second with a value size past its value.
const WITH_BAD: &[u8] = b"@FILE { http://a/\nTitle{1}:\tA\n}\n\n\
@FILE { http://b/\nTitle{99}:\tB\n}\n\n\
@FILE { http://c/\nTitle{1}:\tC\n}\n";

fn core(data: &'static [u8], policy: ErrorPolicy) -> (Core, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let source = Box::new(BytesInput::new("t.soif", Bytes::from_static(data)));
    let core = Core::new(source, DecoderOptions::default(), policy, counts.clone())
        .expect("a reader of bytes");
    (core, counts)
}

/// Every row of the read, `fill` one call after another (`max` rows each).
fn rows(core: &mut Core, max: usize) -> (Vec<String>, Option<Failure>) {
    let mut out = Vec::new();
    loop {
        let mut got = Vec::new();
        match core.fill(max, usize::MAX, |row| {
            got.push(match row {
                Row::Record(r) => String::from_utf8_lossy(&r.url).into_owned(),
                Row::Corrupt(c) => format!("corrupt: {}", c.rejection.message),
            });
            1
        }) {
            Ok(0) => return (out, None),
            Ok(n) => {
                assert!(n <= max.max(1), "{n} rows for at most {max}");
                out.extend(got);
            }
            Err(f) => {
                out.extend(got);
                return (out, Some(f));
            }
        }
    }
}

#[test]
fn skip_drops_the_bad_record_and_counts_it() {
    let (mut core, counts) = core(WITH_BAD, ErrorPolicy::Skip);
    let (urls, failure) = rows(&mut core, 10);
    assert_eq!(urls, ["http://a/", "http://c/"]);
    assert!(failure.is_none());
    assert_eq!(counts.records_in.load(Ordering::Relaxed), 3);
    assert_eq!(counts.records_out.load(Ordering::Relaxed), 2);
    assert_eq!(counts.rejected.load(Ordering::Relaxed), 1);
    let errors = counts.errors.lock().expect("errors");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].position.record, 2, "{}", errors[0].message);
}

#[test]
fn fail_hands_out_what_came_before_then_the_rejection() {
    let (mut core, counts) = core(WITH_BAD, ErrorPolicy::Fail);
    let (urls, failure) = rows(&mut core, 10);
    assert_eq!(urls, ["http://a/"]);
    match failure {
        Some(Failure::Decode(r)) => {
            assert_eq!(r.position.record, 2);
            assert!(r.message.contains("t.soif"), "{}", r.message);
        }
        other => panic!("expected a decode failure, got {other:?}"),
    }
    // The read is over: nothing more, and no second failure.
    assert_eq!(core.fill(10, usize::MAX, |_| 1).ok(), Some(0));
    assert_eq!(counts.rejected.load(Ordering::Relaxed), 1);
}

#[test]
fn column_keeps_the_bad_record_as_a_row_in_its_place() {
    let (mut core, counts) = core(WITH_BAD, ErrorPolicy::Column);
    let (rows, failure) = rows(&mut core, 10);
    assert!(failure.is_none());
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0], "http://a/");
    assert!(rows[1].starts_with("corrupt: "), "{}", rows[1]);
    assert_eq!(rows[2], "http://c/");
    assert_eq!(counts.rejected.load(Ordering::Relaxed), 1);
    assert_eq!(counts.records_out.load(Ordering::Relaxed), 2);
}

#[test]
fn quarantine_writes_the_bad_record_s_bytes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("bad.soif");
    let (mut core, counts) = core(WITH_BAD, ErrorPolicy::Quarantine(path.clone()));
    let (urls, failure) = rows(&mut core, 10);
    assert_eq!(urls, ["http://a/", "http://c/"]);
    assert!(failure.is_none());
    assert_eq!(counts.quarantined.load(Ordering::Relaxed), 1);
    let kept = std::fs::read(&path).expect("the quarantine file");
    assert!(
        kept.starts_with(b"@FILE { http://b/"),
        "{}",
        String::from_utf8_lossy(&kept)
    );
    assert!(!kept.windows(9).any(|w| w == b"http://a/"));
    // Nothing rejected: no file (an earlier read's is removed).
    let (mut core, _) = self::core(
        b"@FILE { http://a/\n}\n",
        ErrorPolicy::Quarantine(path.clone()),
    );
    let (urls, _) = rows(&mut core, 10);
    assert_eq!(urls, ["http://a/"]);
    assert!(!path.exists());
}

/// A reader of `data` through the chain `specs` (with `schema.soif` in `dir`: `Size`
/// an int).
fn chained(
    data: &'static [u8],
    specs: &[&str],
    dir: &std::path::Path,
    policy: ErrorPolicy,
) -> (Core, Arc<Counts>) {
    std::fs::write(
        dir.join("schema.soif"),
        "@SCHEMA { -\nSchema-Name{4}:\tFILE\nLast-Modified{29}:\tThu, 16 May 1996 00:00:00 GMT\n\
             SOIF-Attribute-1{4}:\tSize\nData-Type-1{3}:\tint\n}\n",
    )
    .expect("a schema");
    let specs: Vec<String> = specs
        .iter()
        .map(|s| s.replace("SCHEMA", &dir.join("schema.soif").display().to_string()))
        .collect();
    let opts = soif_options::TransformOptions {
        specs,
        ..Default::default()
    };
    let chain = crate::chain::build(&opts).expect("a chain");
    let counts = Arc::new(Counts::default());
    let source = Box::new(BytesInput::new("t.soif", Bytes::from_static(data)));
    let core = Core::with_transforms(
        source,
        DecoderOptions::default(),
        policy,
        counts.clone(),
        chain,
    )
    .expect("a reader of bytes");
    (core, counts)
}

/// Three records, the second with a `Size` that is not a number.
const SIZES: &[u8] = b"@FILE { http://a/\nSize{1}:\t1\nAuthor-1{1}:\tx\nAuthor-2{1}:\ty\n}\n\
@FILE { http://b/\nSize{3}:\tbig\n}\n\
@FILE { http://c/\nSize{1}:\t3\n}\n";

#[test]
fn transforms_run_between_the_decoder_and_the_rows() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (mut core, counts) = chained(
        SIZES,
        &["collapse", "match:Size=1"],
        dir.path(),
        ErrorPolicy::Fail,
    );
    let mut got = Vec::new();
    while core
        .fill(10, usize::MAX, |row| {
            if let Row::Record(r) = row {
                got.push(r);
            }
            1
        })
        .expect("no failure")
        > 0
    {}
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].url_str(), "http://a/");
    assert!(matches!(got[0].get("Author"), Some(soif_codecs::Value::List(l)) if l.len() == 2));
    assert_eq!(counts.records_in.load(Ordering::Relaxed), 3);
    assert_eq!(counts.records_out.load(Ordering::Relaxed), 1);
}

#[test]
fn a_transform_s_rejection_follows_the_error_policy() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // skip: counted and kept in `errors`.
    let (mut core, counts) = chained(SIZES, &["validate:SCHEMA"], dir.path(), ErrorPolicy::Skip);
    let (urls, failure) = rows(&mut core, 10);
    assert_eq!(urls, ["http://a/", "http://c/"]);
    assert!(failure.is_none());
    assert_eq!(counts.rejected.load(Ordering::Relaxed), 1);
    let errors = counts.errors.lock().expect("errors").clone();
    assert!(
        errors[0].message.contains("record 2 (http://b/)"),
        "{}",
        errors[0].message
    );
    // fail: the records before it, then the rejection.
    let (mut core, _) = chained(SIZES, &["validate:SCHEMA"], dir.path(), ErrorPolicy::Fail);
    let (urls, failure) = rows(&mut core, 10);
    assert_eq!(urls, ["http://a/"]);
    assert!(
        matches!(&failure, Some(Failure::Decode(r)) if r.position.record == 2),
        "{failure:?}"
    );
    // column: a row of its own, in its place.
    let (mut core, _) = chained(SIZES, &["validate:SCHEMA"], dir.path(), ErrorPolicy::Column);
    let (rows, _) = rows(&mut core, 10);
    assert_eq!(rows.len(), 3);
    assert!(rows[1].starts_with("corrupt: "), "{}", rows[1]);
    // quarantine: its bytes exactly as read.
    let q = dir.path().join("q.soif");
    let (mut core, counts) = chained(
        SIZES,
        &["validate:SCHEMA"],
        dir.path(),
        ErrorPolicy::Quarantine(q.clone()),
    );
    let (urls, _) = self::rows(&mut core, 10);
    assert_eq!(urls, ["http://a/", "http://c/"]);
    assert_eq!(counts.quarantined.load(Ordering::Relaxed), 1);
    assert_eq!(
        std::fs::read(&q).expect("the quarantine"),
        b"@FILE { http://b/\nSize{3}:\tbig\n}\n"
    );
}

#[test]
fn fill_stops_at_its_row_and_byte_bounds() {
    let (mut core, _) = core(WITH_BAD, ErrorPolicy::Skip);
    // One row per call, whatever `max` says, once the bytes are reached.
    let mut calls = 0;
    loop {
        let n = core.fill(10, 1, |_| 1).expect("no failure under skip");
        if n == 0 {
            break;
        }
        assert_eq!(n, 1);
        calls += 1;
    }
    assert_eq!(calls, 2);
    let (mut core, _) = self::core(WITH_BAD, ErrorPolicy::Skip);
    let (urls, _) = rows(&mut core, 1);
    assert_eq!(urls.len(), 2);
}

#[test]
fn a_range_is_read_from_one_path_only() {
    let spec = RangeSpec {
        start: 0,
        end: 1,
        first_record: 0,
        envelope: None,
        end_known: false,
    };
    let err = path_source(
        &["a".into(), "b".into()],
        Some(spec),
        &soif_options::SourceOptions::default(),
    )
    .err()
    .expect("two paths and a range");
    assert!(
        matches!(&err, Failure::Config(m) if m.contains("one path")),
        "{err:?}"
    );
}

/// Many records in a file, split in parts at object boundaries: each part read by
/// its range, in order, gives the records of the whole file, each once, numbered as
/// in the whole file.
#[test]
fn the_ranges_of_a_file_s_splits_read_its_records_once() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("many.soif");
    let mut data = Vec::new();
    for i in 0..200 {
        if i == 150 {
            data.extend_from_slice(b"@FILE { http://bad/\nTitle{999}:\tx\n}\n\n");
        }
        write!(
            data,
            "@FILE {{ http://r/{i}\nTitle{{{}}}:\tRecord {i}\n}}\n\n",
            format!("Record {i}").len()
        )
        .expect("writing to a Vec");
    }
    std::fs::write(&path, &data).expect("the input file");
    let opts = DecoderOptions::default();
    let splits: Vec<_> =
        soif_sources::range::splits(&path, opts.clone(), soif_sources::range::By::Parts(4))
            .expect("splits")
            .collect();
    assert!(splits.len() > 1, "{} splits", splits.len());
    let name = path.to_string_lossy().into_owned();
    let mut urls = Vec::new();
    let mut rejected = Vec::new();
    for s in &splits {
        let spec = RangeSpec {
            start: s.start,
            end: s.end,
            first_record: s.first_record,
            envelope: s.envelope.as_ref().map(|e| e.offset),
            end_known: s.end_known,
        };
        let source = path_source(
            std::slice::from_ref(&name),
            Some(spec),
            &soif_options::SourceOptions::default(),
        )
        .expect("a range source");
        let counts = Arc::new(Counts::default());
        let mut core =
            Core::new(source, opts.clone(), ErrorPolicy::Skip, counts.clone()).expect("a reader");
        let (got, failure) = rows(&mut core, 64);
        assert!(failure.is_none(), "{failure:?}");
        urls.extend(got);
        rejected.extend(counts.errors.lock().expect("errors").iter().cloned());
    }
    let expected: Vec<String> = (0..200).map(|i| format!("http://r/{i}")).collect();
    assert_eq!(urls, expected);
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].position.record, 151, "{}", rejected[0].message);
}
