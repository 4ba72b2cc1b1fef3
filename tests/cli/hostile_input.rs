//! Hostile and damaged archives through the CLI: every reading path
//! (a mapped file, `--no-mmap`, stdin, a gzip'd file) gives the same records, the same
//! rejections and the same quarantine bytes; nothing good is lost next to something bad;
//! and the summary adds up: records in = out + rejected + filtered.

use crate::common;

use common::*;
use std::io::Write;

fn good(n: usize) -> String {
    format!("@FILE {{ http://good/{n}\nTitle{{4}}:\tgood\n}}\n")
}

/// A damaged archive with one of each: a count far over --max-record-size that swallows
/// good records, a size that overflows u64, garbage glued to an object, and an envelope
/// never closed.
fn damaged() -> (Vec<u8>, Vec<String>, Vec<&'static str>) {
    let mut s = String::new();
    let mut bad = Vec::new();
    s.push_str(&good(1));
    let swallow = "@FILE { http://bad/count\nTitle{100000}:\tshort\n}\n";
    s.push_str(swallow);
    bad.push(swallow);
    s.push_str(&good(2));
    s.push_str(&good(3));
    let overflow = "@FILE { http://bad/overflow\nA{18446744073709551615}:\tx\n}\n";
    s.push_str(overflow);
    bad.push(overflow);
    s.push_str(&good(4));
    s.push_str("<html>junk</html>");
    bad.push("<html>junk</html>");
    s.push_str(&good(5));
    s.push_str("@DELETE {\n");
    s.push_str(&good(6));
    let urls = (1..=6).map(|n| format!("http://good/{n}")).collect();
    (s.into_bytes(), urls, bad)
}

fn urls_of(jsonl: &str) -> Vec<String> {
    jsonl
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            v["url"].as_str().expect("url").to_string()
        })
        .collect()
}

#[test]
fn every_path_reads_a_damaged_archive_alike_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (input, want, bad) = damaged();
    let plain = dir.path().join("damaged.soif");
    std::fs::write(&plain, &input).unwrap();
    let gz = dir.path().join("damaged.soif.gz");
    let enc = flate2_free_gzip(&input);
    std::fs::File::create(&gz).unwrap().write_all(&enc).unwrap();

    let mut outputs = Vec::new();
    let runs: Vec<(&str, Vec<String>, Vec<u8>)> = vec![
        ("mapped", vec![plain.display().to_string()], Vec::new()),
        (
            "no-mmap",
            vec![plain.display().to_string(), "--no-mmap".into()],
            Vec::new(),
        ),
        ("stdin", vec!["-".into()], input.clone()),
        ("gzip", vec![gz.display().to_string()], Vec::new()),
    ];
    for (label, inputs, stdin) in runs {
        let q = dir.path().join(format!("{label}.quarantine.soif"));
        let mut args: Vec<String> = vec!["convert".into()];
        args.extend(inputs);
        args.extend(
            [
                "--to",
                "jsonl",
                "--max-record-size",
                "1KiB",
                "--on-error",
                "quarantine",
                "--quarantine",
            ]
            .map(String::from),
        );
        args.push(q.display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args, &stdin);
        assert_eq!(code(&out), 3, "{label}: {}", stderr(&out));
        let got = urls_of(&stdout(&out));
        assert_eq!(got, want, "{label}: every good record");
        let counts = summary(&out);
        assert_eq!(
            counts.records_in,
            counts.out + counts.rejected + counts.filtered,
            "{label}: {counts:?}"
        );
        assert_eq!(counts.out, 6, "{label}");
        // Three bad objects and the unclosed envelope.
        assert_eq!(counts.rejected, 4, "{label}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("18446744073709551615"), "{label}: {err}");
        assert!(err.contains("`@DELETE {` envelope"), "{label}: {err}");
        let quarantined = std::fs::read(&q).unwrap();
        for b in &bad {
            assert!(
                quarantined.windows(b.len()).any(|w| w == b.as_bytes()),
                "{label}: {b:?} quarantined byte for byte"
            );
        }
        outputs.push((label, stdout(&out), quarantined, counts));
    }
    for w in outputs.windows(2) {
        assert_eq!(w[0].1, w[1].1, "{} and {} differ", w[0].0, w[1].0);
        assert_eq!(w[0].2, w[1].2, "{} and {} quarantine", w[0].0, w[1].0);
        assert_eq!(w[0].3, w[1].3, "{} and {} counts", w[0].0, w[1].0);
    }
}

#[test]
fn an_overflowing_size_under_fail_stops_with_its_position() {
    let input = format!(
        "{}@FILE {{ http://bad/\nA{{18446744073709551615}}:\tx\n}}\n{}",
        good(1),
        good(2)
    );
    let out = run(&["convert", "-", "--to", "jsonl"], input.as_bytes());
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("record 2"), "{err}");
    assert!(err.contains("18446744073709551615"), "{err}");
}

#[test]
fn an_unclosed_envelope_is_not_silent() {
    let input = format!("@DELETE {{\n{}{}", good(1), good(2));
    let out = run(
        &["convert", "-", "--to", "jsonl", "--on-error", "skip"],
        input.as_bytes(),
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("byte 0"), "{}", stderr(&out));
    assert_eq!(urls_of(&stdout(&out)).len(), 2);
    let strict = run(&["convert", "-", "--to", "jsonl"], input.as_bytes());
    assert_ne!(code(&strict), 0);
}

/// gzip without a compression library in the tests: stored (uncompressed) deflate blocks.
fn flate2_free_gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
    let chunks: Vec<&[u8]> = data.chunks(65535).collect();
    for (i, c) in chunks.iter().enumerate() {
        out.push(u8::from(i + 1 == chunks.len()));
        let n = c.len() as u16;
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&(!n).to_le_bytes());
        out.extend_from_slice(c);
    }
    if chunks.is_empty() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
