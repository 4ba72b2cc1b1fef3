//! The error policy (docs/bad-input.md) end to end: `--on-error fail|skip|quarantine`,
//! exit statuses, the summary counts (records in = out + rejected + filtered) and the
//! quarantine file holding exactly the rejected records' bytes.

use crate::common;
use common::*;

const GOOD_A: &[u8] = b"@DOCUMENT { http://a/\nTitle{1}:\tA\n}\n";
/// RFC 2655 §3.4: `VALUE-SIZE ::= NUMERIC-STRING` — `{abc}` is not one.
const BAD_SIZE: &[u8] = b"@DOCUMENT { http://bad/\nTitle{abc}:\tbroken\n}\n";
const GOOD_C: &[u8] = b"@DOCUMENT { http://c/\nTitle{1}:\tC\n}\n";
const GARBAGE: &[u8] = b"this is not soif\n";
const GOOD_D: &[u8] = b"@DOCUMENT { http://d/\nTitle{1}:\tD\n}\n";

fn bad_input() -> Vec<u8> {
    [GOOD_A, BAD_SIZE, GOOD_C, GARBAGE, GOOD_D].concat()
}

#[test]
fn the_fixture_is_the_input_used_here() {
    assert_eq!(
        std::fs::read(fixture("pipeline/bad.soif")).unwrap(),
        bad_input()
    );
}

#[test]
fn fail_stops_at_the_first_bad_record_with_status_1() {
    let out = run(&["convert", "--to", "soif"], &bad_input());
    assert_eq!(code(&out), 1);
    // What came before the bad record was written.
    assert_eq!(out.stdout, GOOD_A);
    let err = stderr(&out);
    // The error says what and where: input, byte offset, record number, URL.
    assert!(err.contains("non-numeric size {abc}"), "{err}");
    assert!(err.contains("-: byte 65, record 2 (http://bad/)"), "{err}");
}

#[test]
fn skip_converts_the_rest_and_exits_3() {
    let out = run(
        &["convert", "--to", "soif", "--on-error", "skip"],
        &bad_input(),
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(out.stdout, [GOOD_A, GOOD_C, GOOD_D].concat());
    let c = summary(&out);
    assert_eq!((c.records_in, c.out, c.rejected), (5, 3, 2));
    assert_eq!(c.records_in, c.out + c.rejected + c.filtered);
    let err = stderr(&out);
    assert_eq!(err.matches("soif: rejected: ").count(), 2, "{err}");
}

#[test]
fn quarantine_holds_exactly_the_rejected_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("rejected.soif");
    let out = run(
        &[
            "convert",
            "--to",
            "jsonl",
            "--on-error",
            "quarantine",
            "--quarantine",
            q.to_str().unwrap(),
        ],
        &bad_input(),
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 3);
    let c = summary(&out);
    assert_eq!(c.records_in, c.out + c.rejected + c.filtered);
    assert_eq!(c.rejected, 2);
    assert_eq!(std::fs::read(&q).unwrap(), [BAD_SIZE, GARBAGE].concat());
    // Converted + quarantined = every byte of the input.
    let converted = run(
        &["convert", "--from", "jsonl", "--to", "soif", "-q"],
        &out.stdout,
    );
    assert_eq!(
        converted.stdout.len() + std::fs::read(&q).unwrap().len(),
        bad_input().len()
    );

    // --quarantine alone implies the policy.
    let out = run(
        &[
            "convert",
            "--to",
            "null",
            "--quarantine",
            q.to_str().unwrap(),
        ],
        &bad_input(),
    );
    assert_eq!(code(&out), 3);
    assert_eq!(std::fs::read(&q).unwrap(), [BAD_SIZE, GARBAGE].concat());
}

#[test]
fn lenient_repairs_and_counts() {
    // RFC 2655's DELIMITER is ":<TAB>"; legacy data has a space (docs/contract.md#bad-input).
    let input = b"@DOCUMENT { http://a/\nTitle{1}: A\n}\n";
    let strict = run(&["convert", "--to", "soif"], input);
    assert_eq!(code(&strict), 1);
    let out = run(&["convert", "--to", "soif", "--lenient"], input);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, b"@DOCUMENT { http://a/\nTitle{1}:\tA\n}\n");
    assert_eq!(summary(&out).repaired, 1);
    assert!(
        stderr(&out).contains("warning: repaired"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn max_record_size_takes_suffixes_and_rejects_without_reading() {
    let big = format!(
        "@FILE {{ http://big/\nText{{2048}}:\t{}\n}}\n",
        "x".repeat(2048)
    );
    let input = [GOOD_A, big.as_bytes(), GOOD_C].concat();
    let out = run(
        &[
            "convert",
            "--to",
            "soif",
            "--max-record-size",
            "1KiB",
            "--on-error",
            "skip",
        ],
        &input,
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(out.stdout, [GOOD_A, GOOD_C].concat());
    let c = summary(&out);
    assert_eq!((c.records_in, c.out, c.rejected), (3, 2, 1));
    let out = run(
        &["convert", "--to", "soif", "--max-record-size", "1 parsec"],
        &input,
    );
    assert_eq!(code(&out), 2);
}

#[test]
fn usage_errors_exit_2() {
    let out = run(
        &["convert", "--to", "soif", "--on-error", "quarantine"],
        GOOD_A,
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("--quarantine FILE"),
        "{}",
        stderr(&out)
    );
    let out = run(&["convert", "--to", "soif", "-t", "frobnicate"], GOOD_A);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("unknown transform"),
        "{}",
        stderr(&out)
    );
    let out = run(&["frobnicate"], b"");
    assert_eq!(code(&out), 2);
}

#[test]
fn filtered_records_are_counted_apart() {
    let out = run(
        &[
            "convert",
            "--to",
            "soif",
            "--on-error",
            "skip",
            "-t",
            "match:Title=c",
        ],
        &bad_input(),
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(out.stdout, GOOD_C);
    let c = summary(&out);
    assert_eq!((c.records_in, c.out, c.rejected, c.filtered), (5, 1, 2, 2));
}

#[test]
fn bad_json_lines_are_rejected_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.jsonl");
    let input = b"{\"template\":\"A\",\"url\":\"-\",\"attributes\":{}}\n{oops\n{\"template\":\"B\",\"url\":\"-\",\"attributes\":{}}\n";
    let out = run(
        &[
            "convert",
            "--from",
            "jsonl",
            "--to",
            "soif",
            "--quarantine",
            q.to_str().unwrap(),
        ],
        input,
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(stdout(&out), "@A { -\n}\n@B { -\n}\n");
    assert!(
        stderr(&out).contains("-: byte 43, record 2"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&q).unwrap(), b"{oops\n");
}

/// `soif convert --to sqlite -o DB --quarantine Q` over `input` on stdin.
fn to_sqlite_quarantined(
    db: &std::path::Path,
    q: &std::path::Path,
    input: &[u8],
) -> std::process::Output {
    run(
        &[
            "convert",
            "--to",
            "sqlite",
            "-o",
            db.to_str().unwrap(),
            "--quarantine",
            q.to_str().unwrap(),
        ],
        input,
    )
}

/// A record refused inside a Harvest envelope goes to the quarantine inside the same
/// envelope, so that the repaired file, fed back, deletes what the original deleted
/// instead of storing it.
#[test]
fn a_record_refused_inside_an_envelope_is_quarantined_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.soif");
    let db = dir.path().join("c.db");
    // The sqlite sink refuses records without a URL (`-`): it keys rows on url.
    let deleted = b"@FILE { -\n}\n";
    let plain = b"@FILE { -\nTitle{1}:\tA\n}\n";
    let input = [
        b"@DELETE {\n".as_slice(),
        deleted,
        b"@FILE { http://gone/\n}\n}\n",
        plain,
    ]
    .concat();
    let out = to_sqlite_quarantined(&db, &q, &input);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(summary(&out).rejected, 2);
    let quarantined = std::fs::read(&q).unwrap();
    assert_eq!(
        quarantined,
        [b"@DELETE {\n".as_slice(), deleted, b"}\n", plain].concat()
    );
    // Read back, the first is a deletion again, the second a plain record.
    let back = run(
        &["convert", q.to_str().unwrap(), "--to", "jsonl", "-q"],
        b"",
    );
    assert_eq!(code(&back), 0, "{}", stderr(&back));
    let lines: Vec<serde_json::Value> = stdout(&back)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["action"], "delete");
    assert!(lines[1].get("action").is_none(), "{}", lines[1]);
}

/// A record the decoder rejects inside `@DELETE { … }` is quarantined inside the same
/// envelope too. Here the rejected bytes also hold the envelope's `}`: the record after
/// the envelope stays a plain record (it used to be read as deleted), and the quarantine
/// is one balanced envelope that, once repaired, deletes again.
#[test]
fn a_bad_object_ending_an_envelope_is_quarantined_inside_it_and_closes_it() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("q.soif");
    let db = dir.path().join("c.db");
    let broken = b"@FILE { http://x/2\nTitle{9}:\tab\n}\n}\n";
    let input = [
        b"@FILE { http://x/2\nTitle{2}:\tab\n}\n".as_slice(),
        b"@DELETE {\n@FILE { http://x/1\n}\n",
        broken,
        b"@FILE { http://x/3\nTitle{3}:\tdef\n}\n",
    ]
    .concat();
    let out = to_sqlite_quarantined(&db, &q, &input);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(summary(&out).rejected, 1);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let urls: Vec<String> = conn
        .prepare("SELECT url FROM FILE ORDER BY url")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        urls,
        ["http://x/2", "http://x/3"],
        "x/3 stored, not deleted"
    );
    let quarantined = std::fs::read(&q).unwrap();
    assert_eq!(quarantined, [b"@DELETE {\n".as_slice(), broken].concat());
    // Repaired (the byte count) and fed back, it deletes http://x/2.
    let repaired = String::from_utf8(quarantined)
        .unwrap()
        .replace("Title{9}", "Title{2}");
    std::fs::write(&q, repaired).unwrap();
    let back = run(
        &[
            "convert",
            q.to_str().unwrap(),
            "--to",
            "sqlite",
            "-o",
            db.to_str().unwrap(),
            "-q",
        ],
        b"",
    );
    assert_eq!(code(&back), 0, "{}", stderr(&back));
    let left: i64 = conn
        .query_row(
            "SELECT count(*) FROM FILE WHERE url = 'http://x/2'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
}

// --- fatal errors name the input and the position, and the summary is printed ---------

/// `fixtures/compressed/two.soif` (two records, 72 bytes) and its gzip and zstd forms.
fn compressed(name: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("compressed/{name}"))).unwrap()
}

/// Runs `soif convert FILE --to jsonl` on `data` written to a file named `name`.
fn convert_file(name: &str, data: &[u8]) -> (std::process::Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, data).unwrap();
    let p = path.to_str().unwrap().to_string();
    (run(&["convert", &p, "--to", "jsonl"], b""), p)
}

#[test]
fn a_truncated_gzip_names_the_input_and_the_offset_and_prints_the_summary() {
    let gz = compressed("two.soif.gz");
    let cut = gz.len() - 10;
    let (out, path) = convert_file("cut.gz", &gz[..cut]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("soif: error: {path}: reading stopped after")),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "gzip data truncated: the input ends at compressed byte {cut} inside a gzip stream"
        )),
        "{err}"
    );
    assert!(err.contains("bytes decompressed"), "{err}");
    assert!(err.contains("soif: stopped: "), "{err}");
    let c = summary(&out);
    assert_eq!(c.records_in, c.out + c.rejected + c.filtered);
    // `-q` silences the summary, not the error.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.gz");
    std::fs::write(&p, &gz[..cut]).unwrap();
    let quiet = run(&["convert", p.to_str().unwrap(), "--to", "null", "-q"], b"");
    assert_eq!(code(&quiet), 1);
    let err = stderr(&quiet);
    assert!(
        err.contains("gzip data truncated") && !err.contains("records in"),
        "{err}"
    );
}

#[test]
fn trailing_garbage_after_a_gzip_member_is_an_error_at_its_offset() {
    let gz = compressed("two.soif.gz");
    let data = [&gz[..], b"\0\0garbage\n"].concat();
    let (out, path) = convert_file("garbage.gz", &data);
    assert_eq!(code(&out), 1);
    // The member's records are converted before the error.
    assert_eq!(stdout(&out).lines().count(), 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{path}: reading stopped after 72 bytes of SOIF and 2 records: trailing garbage \
             after the gzip data at compressed byte {}, after 72 bytes decompressed",
            gz.len()
        )),
        "{err}"
    );
    let c = summary(&out);
    assert_eq!((c.records_in, c.out), (2, 2), "{err}");
}

#[test]
fn gzip_members_concatenate_but_another_format_after_one_is_an_error() {
    let gz = compressed("two.soif.gz");
    // `cat a.gz b.gz` is one gzip stream (RFC 1952 §2.2) and reads on.
    let (out, _) = convert_file("two.gz", &[&gz[..], &gz[..]].concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(summary(&out).out, 4);
    // `cat a.gz b.zst` is not.
    let zst = compressed("two.soif.zst");
    let (out, _) = convert_file("mixed.gz", &[&gz[..], &zst[..]].concat());
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "a zstd stream follows the gzip data at compressed byte {}",
            gz.len()
        )),
        "{err}"
    );
    assert_eq!(summary(&out).out, 2, "{err}");
    // And zstd frames concatenate too.
    let (out, _) = convert_file("two.zst", &[&zst[..], &zst[..]].concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(summary(&out).out, 4);
}

#[test]
fn a_sink_write_error_prints_the_summary_of_what_was_written() {
    // /dev/full: every write fails with "No space left on device".
    if !std::path::Path::new("/dev/full").exists() {
        eprintln!("note: no /dev/full; skipped");
        return;
    }
    let input = compressed("two.soif");
    let out = run(&["convert", "--to", "jsonl", "-o", "/dev/full"], &input);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(err.contains("soif: error: "), "{err}");
    assert!(err.contains("soif: stopped: 2 records in, "), "{err}");
}

#[test]
fn a_rejected_record_under_fail_is_counted_in_the_summary() {
    let out = run(&["convert", "--to", "soif"], &bad_input());
    assert_eq!(code(&out), 1);
    let c = summary(&out);
    assert_eq!(
        (c.records_in, c.out, c.rejected),
        (2, 1, 1),
        "{}",
        stderr(&out)
    );
}

/// A record of 1,010 bytes: over `1kB` (1,000 bytes), within `1KiB` (1,024).
fn record_of_1010_bytes() -> Vec<u8> {
    let mut r = b"@DOCUMENT { http://big/\nTitle{971}:\t".to_vec();
    r.extend(std::iter::repeat_n(b'x', 971));
    r.extend_from_slice(b"\n}\n");
    assert_eq!(r.len(), 1010);
    r
}

/// A size means one thing on the command line and in a pipeline file: `kB`, `MB` are
/// powers of ten, `KiB`, `MiB` powers of two, a bare number is bytes.
#[test]
fn a_size_means_the_same_on_the_command_line_and_in_a_pipeline_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = [GOOD_A, &record_of_1010_bytes(), GOOD_C].concat();
    let path = dir.path().join("in.soif");
    std::fs::write(&path, &input).unwrap();
    for (size, rejected) in [
        ("1kB", true),
        ("1KB", true),
        ("1000", true),
        ("1KiB", false),
        ("1024", false),
        ("1MB", false),
    ] {
        let (status, kept) = if rejected {
            (3, [GOOD_A, GOOD_C].concat())
        } else {
            (0, input.clone())
        };
        let out = run(
            &[
                "convert",
                "--to",
                "soif",
                "--on-error",
                "skip",
                "--max-record-size",
                size,
            ],
            &input,
        );
        assert_eq!(
            code(&out),
            status,
            "--max-record-size {size}: {}",
            stderr(&out)
        );
        assert_eq!(out.stdout, kept, "--max-record-size {size}");

        let output = dir.path().join("out.soif");
        let pipeline = dir.path().join("p.toml");
        std::fs::write(
            &pipeline,
            format!(
                "[source]\ninputs = [{:?}]\nmax_record_size = \"{size}\"\n\n[errors]\non_error = \"skip\"\n\n[[sink]]\nformat = \"soif\"\noutput = {:?}\n",
                path.to_str().unwrap(),
                output.to_str().unwrap(),
            ),
        )
        .unwrap();
        let out = run(&["run", pipeline.to_str().unwrap()], b"");
        assert_eq!(
            code(&out),
            status,
            "max_record_size = {size}: {}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read(&output).unwrap(),
            kept,
            "max_record_size = {size}"
        );
    }
    let out = run(&["convert", "--to", "null", "--max-record-size", "0"], b"");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("option --max-record-size=`0`: expected a positive size"),
        "{}",
        stderr(&out)
    );
}

/// Under `--lenient` a byte count no boundary repairs is still an error, which does not
/// suggest the `--lenient` already given.
#[test]
fn a_lenient_run_does_not_suggest_lenient() {
    let input = b"@FILE { u\nTitle{3}:\tabcdef\n@FILE { v\nT{1}:\tx\n}\n";
    let out = convert(&["-", "--to", "jsonl"], input);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("try --lenient"), "{}", stderr(&out));
    let out = convert(
        &["-", "--to", "jsonl", "--lenient", "--on-error", "skip"],
        input,
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("record 1 (u)"), "{err}");
    assert!(err.contains("declares 3 bytes"), "{err}");
    assert!(!err.contains("try --lenient"), "{err}");
}
