//! `soif split` and `soif convert --range`: the outputs of converting
//! every range `soif split` prints, concatenated in order, are one run's output — JSON
//! Lines and canonical SOIF, the rejected records' messages (offsets and record numbers)
//! and their quarantined bytes — on an archive whose values hold fake objects, inside an
//! envelope, with damaged objects; and what cannot be split is refused clearly.

use crate::common;

use common::*;
use std::path::Path;

fn good(n: usize) -> String {
    format!(
        "@FILE {{ http://good/{n}\nTitle{{6}}:\tgood {}\n}}\n",
        n % 10
    )
}

/// An archive with the hazards: a value quoting a whole object, an `@UPDATE` envelope
/// around most of it (with `envelope`), a count that is wrong, a missing delimiter, a
/// value over the record limit, garbage, and non-UTF-8 bytes.
fn archive(envelope: bool) -> Vec<u8> {
    let mut s = String::new();
    if envelope {
        s.push_str("@DELETE { }\n@UPDATE {\n");
    }
    for n in 0..120 {
        s.push_str(&good(n));
        match n % 20 {
            3 => s.push_str(
                "@FILE { http://quoting/\nNote{39}:\t@FILE { http://fake/\nTitle{4}:\tfake\n}\n\n}\n",
            ),
            7 => s.push_str("@FILE { http://bad/count\nTitle{9}:\tshort\n}\n"),
            11 => s.push_str("@FILE { http://bad/delim\nTitle{4}\tnone\n}\n"),
            13 => {
                s.push_str("@FILE { http://big/\nBody{3000}:\t");
                s.push_str(&"b".repeat(3000));
                s.push_str("\n}\n");
            }
            17 => s.push_str("<html>junk</html>\n"),
            _ => {}
        }
    }
    if envelope {
        s.push_str("}\n");
    }
    let mut bytes = s.into_bytes();
    bytes.extend_from_slice(b"@FILE { http://latin/\nT{2}:\t\xe9\xe9\n}\n");
    bytes
}

fn lines(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The `soif: rejected: …` messages of a run.
fn rejected(err: &str) -> Vec<String> {
    err.lines()
        .filter(|l| l.starts_with("soif: rejected: "))
        .map(str::to_string)
        .collect()
}

/// One run over the whole file and the ranges' runs concatenated: (stdout, rejected
/// messages, quarantine bytes) of each, and the exit statuses. `exact`: the outputs are
/// equal byte for byte; else they read back (as JSON Lines) to the same records — SOIF
/// output inside a Harvest envelope, where each range's output is a whole SOIF file that
/// closes the envelope it opened, and the next one opens it again.
fn compare(path: &Path, split_args: &[&str], convert_args: &[&str], exact: bool) -> usize {
    let dir = path.parent().unwrap();
    let p = path.to_str().unwrap();
    let mut args = vec!["split", p];
    args.extend_from_slice(split_args);
    let out = run(&args, b"");
    assert_eq!(code(&out), 0, "soif split: {}", stderr(&out));
    let ranges = lines(&out.stdout);
    assert!(!ranges.is_empty());

    let q_whole = dir.join("whole.quarantine");
    let mut whole_args = vec!["convert", p, "--quarantine", q_whole.to_str().unwrap()];
    whole_args.extend_from_slice(convert_args);
    let whole = run(&whole_args, b"");
    let whole_code = code(&whole);
    assert!(whole_code == 0 || whole_code == 3, "{}", stderr(&whole));

    let (mut outs, mut msgs, mut quarantine) = (Vec::new(), Vec::new(), Vec::new());
    let mut worst = 0;
    for (i, range) in ranges.iter().enumerate() {
        let q = dir.join(format!("part{i}.quarantine"));
        let mut args = vec![
            "convert",
            p,
            "--range",
            range,
            "--quarantine",
            q.to_str().unwrap(),
        ];
        args.extend_from_slice(convert_args);
        let part = run(&args, b"");
        let c = code(&part);
        assert!(c == 0 || c == 3, "--range {range}: {}", stderr(&part));
        worst = worst.max(c);
        outs.extend_from_slice(&part.stdout);
        msgs.extend(rejected(&stderr(&part)));
        quarantine.extend(std::fs::read(&q).unwrap_or_default());
    }
    let (outs, want) = if exact {
        (outs, whole.stdout.clone())
    } else {
        (
            convert_ok(&["-", "--to", "jsonl"], &outs),
            convert_ok(&["-", "--to", "jsonl"], &whole.stdout),
        )
    };
    assert_eq!(
        String::from_utf8_lossy(&outs),
        String::from_utf8_lossy(&want),
        "{split_args:?} {convert_args:?}: the ranges' outputs, concatenated, are one run's ({ranges:?})"
    );
    assert_eq!(
        msgs,
        rejected(&stderr(&whole)),
        "{split_args:?}: the same rejections"
    );
    assert_eq!(
        quarantine,
        std::fs::read(&q_whole).unwrap_or_default(),
        "{split_args:?}: the same quarantine"
    );
    assert_eq!(
        worst, whole_code,
        "exit status 3 when records were rejected"
    );
    ranges.len()
}

#[test]
fn ranges_converted_and_concatenated_equal_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("archive.soif");
    std::fs::write(&path, archive(true)).unwrap();
    let flat = dir.path().join("flat.soif");
    std::fs::write(&flat, archive(false)).unwrap();
    for lenient in [false, true] {
        let mut convert = vec!["--to", "jsonl", "--max-record-size", "2KiB"];
        let mut split_base = vec!["--max-record-size", "2KiB"];
        if lenient {
            convert.push("--lenient");
            split_base.push("--lenient");
        }
        for by in [
            ["--parts", "1"],
            ["--parts", "4"],
            ["--parts", "13"],
            ["--size", "1"],
            ["--size", "1KiB"],
        ] {
            let mut split_args = split_base.clone();
            split_args.extend_from_slice(&by);
            let n = compare(&path, &split_args, &convert, true);
            if by == ["--parts", "4"] {
                assert_eq!(n, 4);
            }
        }
        let mut soif_out = convert.clone();
        soif_out[1] = "soif";
        let mut split_args = split_base.clone();
        split_args.extend_from_slice(&["--parts", "5"]);
        compare(&path, &split_args, &soif_out, false);
        compare(&flat, &split_args, &soif_out, true);
        compare(&flat, &split_args, &convert, true);
    }
}

#[test]
fn split_prints_ranges_with_the_decoders_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.soif");
    let mut s = String::from("@UPDATE {\n");
    for n in 0..10 {
        s.push_str(&good(n));
    }
    std::fs::write(&path, &s).unwrap();
    let out = run(&["split", path.to_str().unwrap(), "--size", "1"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let ranges = lines(&out.stdout);
    assert_eq!(ranges.len(), 10, "{ranges:?}");
    assert!(ranges[0].starts_with("0.."));
    assert!(ranges[1].ends_with(",record=1,envelope=0"), "{ranges:?}");
    let last = ranges[9].clone();
    assert!(last.contains(&format!("..{},record=9", s.len())), "{last}");
    // The last range reports the envelope never closed, at its offset, as one run does.
    let part = convert(
        &[path.to_str().unwrap(), "--range", &last, "--to", "jsonl"],
        b"",
    );
    assert_eq!(code(&part), 1);
    assert!(
        stderr(&part).contains("byte 0, record 11"),
        "{}",
        stderr(&part)
    );
    let line = String::from_utf8_lossy(&part.stdout);
    assert!(line.contains("\"action\":\"update\""), "{line}");
}

#[test]
fn what_cannot_be_split_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let gz = fixture("compressed/two.soif.gz");
    let gz = gz.to_str().unwrap();
    let out = run(&["split", gz, "--parts", "2"], b"");
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("compressed inputs are not split"),
        "{}",
        stderr(&out)
    );
    let out = convert(&[gz, "--range", "0..10", "--to", "jsonl"], b"");
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("compressed"), "{}", stderr(&out));
    let out = convert(
        &["-", "--range", "0..10", "--to", "jsonl"],
        b"@FILE { a\n}\n",
    );
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("stdin"), "{}", stderr(&out));
    let plain = fixture("compressed/two.soif");
    let plain = plain.to_str().unwrap();
    let out = convert(&[plain, "--range", "3..10", "--to", "jsonl"], b"");
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("not an object boundary"),
        "{}",
        stderr(&out)
    );
    let out = convert(&[plain, "--range", "10..3", "--to", "jsonl"], b"");
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("END is before START"),
        "{}",
        stderr(&out)
    );
    let out = convert(&[plain, plain, "--range", "0..10", "--to", "jsonl"], b"");
    assert_eq!(code(&out), 2);
    let out = run(
        &["split", dir.path().to_str().unwrap(), "--parts", "2"],
        b"",
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
    let out = run(&["split", plain], b"");
    assert_eq!(code(&out), 2, "--parts or --size is required");
}

#[test]
fn help_explains_the_ranges() {
    let out = run(&["split", "--help"], b"");
    let help = stdout(&out);
    for want in [
        "--parts",
        "--size",
        "--range",
        "record=",
        "envelope=",
        "parallel",
    ] {
        assert!(help.contains(want), "{want} in {help}");
    }
    let help = stdout(&run(&["convert", "--help"], b""));
    assert!(help.contains("--range <RANGE>"), "{help}");
}
