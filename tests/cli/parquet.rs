//! `soif convert --to parquet` end to end: the records layout reads back to the same
//! canonical SOIF byte for byte (fixtures, and a property test with non-UTF-8 names and
//! values, empty values, repeated names and envelopes); compression, metadata, row
//! groups; the temporary name; the wide layout (columns, lists after `collapse`, typed
//! columns from a schema, a value that does not convert); another layout refused.

use crate::common;

use common::{code, convert as run, convert_ok as ok, fixture, stderr, summary};
use parquet::file::reader::{FileReader, SerializedFileReader};
use proptest::prelude::*;
use std::path::Path;

fn fx(rel: &str) -> String {
    fixture(rel).display().to_string()
}

fn canonical(inputs: &[&str]) -> Vec<u8> {
    let mut args = inputs.to_vec();
    args.extend(["--to", "soif", "-q"]);
    ok(&args, b"")
}

fn reader(path: &Path) -> SerializedFileReader<std::fs::File> {
    SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap()
}

fn kv(path: &Path, key: &str) -> Option<String> {
    reader(path)
        .metadata()
        .file_metadata()
        .key_value_metadata()?
        .iter()
        .find(|k| k.key == key)
        .and_then(|k| k.value.clone())
}

#[test]
fn fixtures_round_trip_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("all.parquet");
    let inputs = [
        fx("rfc2655/documents.soif"),
        fx("harvest/ecrc-93-10.soif"),
        fx("rfc2655/dublin-core.soif"),
        fx("rdm/schema.soif"),
    ];
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let mut args = inputs.clone();
    args.extend(["--to", "parquet", "-o", out.to_str().unwrap(), "-q"]);
    ok(&args, b"");
    let back = ok(&[out.to_str().unwrap(), "--to", "soif", "-q"], b"");
    assert_eq!(
        String::from_utf8_lossy(&back),
        String::from_utf8_lossy(&canonical(&inputs))
    );
    // The metadata: layout, soif's version, the inputs.
    assert_eq!(
        kv(&out, "soif:version").as_deref(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    let listed: Vec<String> = serde_json::from_str(&kv(&out, "soif:inputs").unwrap()).unwrap();
    assert_eq!(listed, inputs);
    let arrow_schema = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&out).unwrap(),
    )
    .unwrap()
    .schema()
    .clone();
    soif_arrow::check_schema(&arrow_schema).unwrap();
    // zstd by default; no temporary file left beside it.
    let meta = reader(&out).metadata().row_group(0).column(0).compression();
    assert!(
        matches!(meta, parquet::basic::Compression::ZSTD(_)),
        "{meta:?}"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["all.parquet"]);
}

#[test]
fn compression_options_and_stdin_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let input = std::fs::read(fixture("rfc2655/documents.soif")).unwrap();
    for (codec, want) in [
        ("snappy", "SNAPPY"),
        ("gzip", "GZIP"),
        ("none", "UNCOMPRESSED"),
    ] {
        let out = dir.path().join(format!("{codec}.parquet"));
        ok(
            &[
                "--to",
                "parquet",
                "--compression",
                codec,
                "-o",
                out.to_str().unwrap(),
                "-q",
            ],
            &input,
        );
        let c = reader(&out).metadata().row_group(0).column(0).compression();
        assert!(format!("{c:?}").starts_with(want), "{codec}: {c:?}");
        // Read back from stdin (copied to a temporary file: Parquet is read from its end).
        let back = ok(
            &["--from", "parquet", "--to", "soif", "-q"],
            &std::fs::read(&out).unwrap(),
        );
        assert_eq!(back, input);
    }
    // Parquet to stdout works too.
    let bytes = ok(&["--to", "parquet", "-q"], &input);
    assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    let back = ok(&["--to", "soif", "-q"], &bytes);
    assert_eq!(back, input, "detected by its magic bytes on stdin");
}

#[test]
fn row_groups_are_bounded_in_bytes() {
    // ~40 MB of records with 1 MB values: more than one row group of at most 8 MiB.
    let mut input = Vec::new();
    for i in 0..40 {
        // Incompressible (xorshift), so the row groups' encoded size is the data's.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1);
        let v: Vec<u8> = (0..1_000_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        input
            .extend_from_slice(format!("@FILE {{ http://x/{i}\nBlob{{{}}}:\t", v.len()).as_bytes());
        input.extend_from_slice(&v);
        input.extend_from_slice(b"\n}\n");
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("big.soif");
    std::fs::write(&src, &input).unwrap();
    let out = dir.path().join("big.parquet");
    ok(
        &[
            src.to_str().unwrap(),
            "--to",
            "parquet",
            "-o",
            out.to_str().unwrap(),
            "-q",
        ],
        b"",
    );
    let r = reader(&out);
    let groups = r.metadata().num_row_groups();
    assert!(groups >= 2, "{groups} row groups");
    for g in r.metadata().row_groups() {
        assert!(g.compressed_size() < 40 << 20, "{}", g.compressed_size());
    }
    let back = ok(&[out.to_str().unwrap(), "--to", "soif", "-q"], b"");
    assert!(back == input, "40 MB round trip");
}

#[test]
fn a_failed_run_keeps_what_came_before_in_a_complete_file() {
    // As with every sink, the records before a fatal error are converted; the file is
    // complete (its footer written) and no temporary file is left beside it.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.parquet");
    let o = run(
        &["--to", "parquet", "-o", out.to_str().unwrap(), "-q"],
        b"@FILE { u\nA{1}:\tx\n}\n@FILE { v\nA{x}:\tbad\n}\n",
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file"
    );
    let back = ok(&[out.to_str().unwrap(), "--to", "soif", "-q"], b"");
    assert_eq!(back, b"@FILE { u\nA{1}:\tx\n}\n");
}

#[test]
fn a_killed_run_leaves_no_half_file() {
    // Killed while writing: the output name does not exist yet (only a hidden `.part`).
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.parquet");
    let mut child = common::soif()
        .args([
            "convert",
            "--to",
            "parquet",
            "-o",
            out.to_str().unwrap(),
            "-q",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        for i in 0..2000 {
            stdin
                .write_all(format!("@FILE {{ http://x/{i}\nTitle{{5}}:\tHello\n}}\n").as_bytes())
                .unwrap();
        }
        stdin.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        child.kill().unwrap();
    }
    child.wait().unwrap();
    assert!(!out.exists(), "no half-written k.parquet");
}

#[test]
fn another_layout_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let wide = dir.path().join("wide.parquet");
    ok(
        &[
            &fx("rfc2655/documents.soif"),
            "--to",
            "parquet",
            "--parquet-layout",
            "wide",
            "-o",
            wide.to_str().unwrap(),
            "-q",
        ],
        b"",
    );
    let o = run(&[wide.to_str().unwrap(), "--to", "soif"], b"");
    assert_eq!(code(&o), 1);
    let e = stderr(&o);
    assert!(
        e.contains("wide.parquet") && e.contains("layout `wide`"),
        "{e}"
    );
    // Not Parquet at all, named .parquet.
    let junk = dir.path().join("junk.parquet");
    std::fs::write(&junk, b"PAR1 not really").unwrap();
    let o = run(&[junk.to_str().unwrap(), "--to", "soif"], b"");
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("junk.parquet"), "{}", stderr(&o));
}

#[test]
fn wide_layout_columns_lists_and_types() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.parquet");
    let o = run(
        &[
            &fx("rfc2655/documents.soif"),
            "-t",
            "collapse",
            "--to",
            "parquet",
            "--parquet-layout",
            "wide",
            "--schema",
            &fx("transforms/typed.schema.soif"),
            "-o",
            out.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let schema = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&out).unwrap(),
    )
    .unwrap()
    .schema()
    .clone();
    let types: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| format!("{}:{}", f.name(), f.data_type()))
        .collect();
    assert_eq!(
        types,
        [
            "template:Utf8",
            "url:Utf8",
            "action:Utf8",
            "Title:Utf8",
            "Author:List(Utf8)",
            "Abstract:Utf8",
            "Content-Length:Int64",
            "Last-Modified:Timestamp(ms, \"UTC\")",
        ]
        .map(String::from)
        .to_vec(),
        "{types:?}"
    );
    // A value that does not convert is a record error under --on-error.
    let bad = b"@DOCUMENT { http://x/\nContent-Length{4}:\tlots\n}\n@DOCUMENT { http://y/\nContent-Length{2}:\t12\n}\n";
    let o = run(
        &[
            "--to",
            "parquet",
            "--parquet-layout",
            "wide",
            "--schema",
            &fx("transforms/typed.schema.soif"),
            "--on-error",
            "skip",
            "-o",
            out.to_str().unwrap(),
        ],
        bad,
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`lots` is not an integer"),
        "{}",
        stderr(&o)
    );
    let c = summary(&o);
    assert_eq!((c.out, c.rejected), (1, 1));
    let o = run(
        &[
            "--to",
            "parquet",
            "--parquet-layout",
            "wide",
            "--schema",
            &fx("transforms/typed.schema.soif"),
            "-o",
            out.to_str().unwrap(),
        ],
        bad,
    );
    assert_eq!(code(&o), 1, "fail by default: {}", stderr(&o));
}

/// After `-t collapse`, the wide layout's multi-valued attributes are list columns read
/// back with their values in order: numbered names (`Author-1…N`, RFC 2655 §4) and a
/// name repeated; a single value is a list of one, an absent attribute null.
#[test]
fn wide_layout_multi_values_read_back_as_lists() {
    use arrow_array::{Array, ListArray, StringArray};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.parquet");
    let input = b"@FILE { http://a/\nTitle{1}:\tA\nAuthor-1{3}:\tAnn\nAuthor-2{3}:\tBob\nAuthor-3{3}:\tCid\nKeyword{1}:\tx\nKeyword{1}:\ty\n}\n\
@FILE { http://b/\nTitle{1}:\tB\nAuthor-1{3}:\tDee\n}\n\
@FILE { http://c/\nTitle{1}:\tC\n}\n";
    let o = run(
        &[
            "-t",
            "collapse",
            "--to",
            "parquet",
            "--parquet-layout",
            "wide",
            "-o",
            out.to_str().unwrap(),
        ],
        input,
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let batches: Vec<_> = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&out).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap();
    assert_eq!(batches.len(), 1, "a small file reads as one batch");
    let batch = &batches[0];
    let list = |name: &str| -> Vec<Option<Vec<String>>> {
        let col = batch
            .column_by_name(name)
            .unwrap_or_else(|| panic!("no column {name}"));
        let col = col
            .as_any()
            .downcast_ref::<ListArray>()
            .expect("a list column");
        (0..col.len())
            .map(|i| {
                col.is_valid(i).then(|| {
                    let v = col.value(i);
                    let s = v.as_any().downcast_ref::<StringArray>().unwrap();
                    s.iter().map(|x| x.unwrap().to_string()).collect()
                })
            })
            .collect()
    };
    let some = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
        list("Author"),
        [some(&["Ann", "Bob", "Cid"]), some(&["Dee"]), None]
    );
    assert_eq!(list("Keyword"), [some(&["x", "y"]), None, None]);
    let title = batch.column_by_name("Title").unwrap();
    assert_eq!(
        title.data_type().to_string(),
        "Utf8",
        "one value each: no list"
    );
}

/// Records with awkward bytes: non-UTF-8 names, values and URLs, empty values, repeated
/// names, braces and NULs in values, and envelopes.
fn soif_input() -> impl Strategy<Value = Vec<u8>> {
    let name = prop_oneof![
        "[A-Za-z][A-Za-z0-9-]{0,8}".prop_map(|s| s.into_bytes()),
        prop::collection::vec(prop_oneof![Just(b'N'), 0x80u8..=0xff], 1..5),
        Just(b"Author".to_vec()),
    ];
    let value = prop_oneof![
        Just(Vec::new()),
        "[ -~]{0,20}".prop_map(|s| s.into_bytes()),
        prop::collection::vec(any::<u8>(), 0..40),
        Just(b"}\n@FILE { x\n".to_vec()),
    ];
    let url = prop_oneof![
        "http://[a-z]{1,8}/[a-z0-9]{0,6}".prop_map(|s| s.into_bytes()),
        Just(b"-".to_vec()),
        Just(b"http://x/caf\xe9".to_vec()),
    ];
    let record = (
        "[A-Z]{1,8}",
        url,
        prop::collection::vec((name, value), 0..6),
    );
    let group = (0usize..4, prop::collection::vec(record, 1..4));
    prop::collection::vec(group, 1..4).prop_map(|groups| {
        let mut out = Vec::new();
        for (envelope, records) in groups {
            let env = ["", "DELETE", "REFRESH", "UPDATE"][envelope];
            if !env.is_empty() {
                out.extend_from_slice(format!("@{env} {{\n").as_bytes());
            }
            for (t, url, attrs) in records {
                out.extend_from_slice(format!("@{t} {{ ").as_bytes());
                out.extend_from_slice(&url);
                out.push(b'\n');
                for (n, v) in attrs {
                    out.extend_from_slice(&n);
                    out.extend_from_slice(format!("{{{}}}:\t", v.len()).as_bytes());
                    out.extend_from_slice(&v);
                    out.push(b'\n');
                }
                out.extend_from_slice(b"}\n");
            }
            if !env.is_empty() {
                out.extend_from_slice(b"}\n");
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn soif_parquet_soif_is_byte_for_byte(input in soif_input()) {
        let expected = ok(&["--to", "soif", "-q"], &input);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("p.parquet");
        ok(&["--to", "parquet", "-o", out.to_str().unwrap(), "-q"], &input);
        let back = ok(&[out.to_str().unwrap(), "--to", "soif", "-q"], b"");
        prop_assert_eq!(back, expected);
    }
}
