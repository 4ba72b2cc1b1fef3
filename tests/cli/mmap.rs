//! Plain files are mapped into memory and decoded in place; `--no-mmap` and stdin read
//! them as streams. Both paths run the one parser, so everything a user sees must be
//! identical: output, rejections and their messages, the quarantine file, the summary.

use crate::common;
use common::*;
use std::path::Path;

/// Runs `convert` on `path` three ways (mapped, `--no-mmap`, stdin) with `args` and
/// checks they agree; returns the mapped run's output.
fn same_three_ways(path: &Path, args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let p = path.to_str().unwrap();
    let mut outs = Vec::new();
    for (i, how) in ["mapped", "no-mmap", "stdin"].iter().enumerate() {
        let q = dir.path().join(format!("q{i}.soif"));
        let mut argv = vec!["convert"];
        match *how {
            "mapped" => argv.push(p),
            "no-mmap" => argv.extend([p, "--no-mmap"]),
            _ => {}
        }
        argv.extend(args);
        argv.extend(["--quarantine", q.to_str().unwrap()]);
        let stdin = if *how == "stdin" {
            std::fs::read(path).unwrap()
        } else {
            Vec::new()
        };
        let out = run(&argv, &stdin);
        let quarantined = std::fs::read(&q).unwrap_or_default();
        outs.push((*how, out, quarantined));
    }
    let (_, mapped, mq) = &outs[0];
    for (how, out, q) in &outs[1..] {
        assert_eq!(code(out), code(mapped), "{how}: exit status");
        assert!(out.stdout == mapped.stdout, "{how}: output differs");
        assert_eq!(q, mq, "{how}: quarantine differs");
        assert_eq!(summary(out), summary(mapped), "{how}: summary");
        // The messages name the input, which differs for stdin (`-`).
        let name = if *how == "stdin" {
            "-"
        } else {
            path.to_str().unwrap()
        };
        let rejected = |o: &std::process::Output, n: &str| -> Vec<String> {
            stderr(o)
                .lines()
                .filter(|l| l.starts_with("soif: rejected"))
                .map(|l| l.replace(&format!("{n}: byte"), "INPUT: byte"))
                .collect()
        };
        assert_eq!(
            rejected(out, name),
            rejected(mapped, path.to_str().unwrap()),
            "{how}"
        );
    }
    // The summary's byte count is the file's size, however it was read.
    let size = std::fs::metadata(path).unwrap().len();
    let err = stderr(mapped);
    let mb = format!("{:.1} MB in", size as f64 / 1e6);
    assert!(
        err.contains(&mb) || err.contains(&format!("{size} bytes in")),
        "{err}"
    );
    mapped.clone()
}

#[test]
fn bad_records_are_rejected_and_quarantined_alike() {
    let out = same_three_ways(&fixture("pipeline/bad.soif"), &["--to", "soif"]);
    assert_eq!(code(&out), 3);
    assert_eq!(summary(&out).rejected, 2);
}

#[test]
fn the_harvest_example_as_printed_decodes_alike_lenient() {
    // The seed document itself: prose around a one-line, miscounted, cut-off SOIF object.
    let out = same_three_ways(
        &fixture("seeds/004_af61608947d503a1.txt"),
        &["--to", "jsonl", "--lenient"],
    );
    assert!(stdout(&out).contains("\"template\":\"FILE\""));
}

#[test]
fn generated_data_and_a_large_value_decode_alike() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gen.soif");
    let mut data = Vec::new();
    soif_codecs::generate::Generator::new(7)
        .write_bytes(&mut data, 3_000_000)
        .unwrap();
    // One value over the window the mapped path steps in (1 MiB), then more records.
    soif_codecs::generate::write_huge_record(&mut data, 5 << 20).unwrap();
    soif_codecs::generate::Generator::new(8)
        .write_bytes(&mut data, 300_000)
        .unwrap();
    std::fs::write(&path, &data).unwrap();
    let out = same_three_ways(&path, &["--to", "soif", "--max-record-size", "16MiB"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        out.stdout == data,
        "canonical input comes out byte for byte"
    );
}

#[test]
fn jsonl_files_are_not_mapped_as_soif() {
    let soif = fixture("rfc2655/documents.soif");
    let jsonl = run(
        &["convert", soif.to_str().unwrap(), "--to", "jsonl", "-q"],
        b"",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.txt");
    std::fs::write(&path, &jsonl.stdout).unwrap();
    // Recognised by content (`{`), whatever the name, on the mapped path too.
    let back = run(
        &["convert", path.to_str().unwrap(), "--to", "soif", "-q"],
        b"",
    );
    assert_eq!(code(&back), 0, "{}", stderr(&back));
    assert_eq!(back.stdout, std::fs::read(&soif).unwrap());
}
