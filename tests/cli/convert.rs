//! `soif convert` end to end: inputs (files, compressed files, directories, globs, stdin),
//! JSON Lines exactly as docs/formats.md#jsonl says, and the `soif → jsonl → soif` round trip.

use crate::common;
use common::*;

/// RFC 2655 §6: "The following are some example summary objects using the generic
/// "DOCUMENT" SOIF template-type" — the first of them, as JSON Lines.
const FIRST_DOCUMENT_JSONL: &str = r#"{"template":"DOCUMENT","url":"http://home.netscape.com:80/","attributes":{"Title":"Welcome to Netscape","Content-Type":"text/html","Content-Length":"33262"}}"#;

#[test]
fn file_to_jsonl_is_exactly_the_spec_shape() {
    let path = fixture("rfc2655/documents.soif");
    let out = run(&["convert", path.to_str().unwrap(), "--to", "jsonl"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], FIRST_DOCUMENT_JSONL);
    let second: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    // "Author-1", "Author-2", … stay separate keys in input order (RFC 2655 §3.3).
    let keys: Vec<&String> = second["attributes"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "Title",
            "Content-Type",
            "Content-Length",
            "Author-1",
            "Author-2",
            "Author-3",
            "Abstract"
        ]
    );
    // The value is exactly the counted bytes, trailing space included.
    assert_eq!(second["attributes"]["Content-Length"], "5870 ");
    let c = summary(&out);
    assert_eq!((c.records_in, c.out, c.rejected), (3, 3, 0));
}

#[test]
fn every_compression_is_detected_by_magic_bytes() {
    let want = run(
        &[
            "convert",
            fixture("rfc2655/documents.soif").to_str().unwrap(),
            "--to",
            "soif",
        ],
        b"",
    );
    assert_eq!(want.stdout, rfc_documents());
    for ext in ["gz", "bz2", "xz", "zst"] {
        let path = fixture(&format!("pipeline/documents.soif.{ext}"));
        let out = run(&["convert", path.to_str().unwrap(), "--to", "soif"], b"");
        assert_eq!(code(&out), 0, "{ext}: {}", stderr(&out));
        assert_eq!(out.stdout, want.stdout, "{ext}");
        // The same bytes through stdin, whatever they are called.
        let bytes = std::fs::read(&path).unwrap();
        let out = run(&["convert", "--to", "soif", "-q"], &bytes);
        assert_eq!(out.stdout, want.stdout, "{ext} on stdin");
    }
}

#[test]
fn stdin_to_stdout_with_dash_and_without_inputs() {
    let input = rfc_documents();
    for args in [
        &["convert", "--to", "soif"][..],
        &["convert", "-", "--to", "soif"][..],
    ] {
        let out = run(args, &input);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(out.stdout, input);
    }
}

#[test]
fn directories_and_globs_are_read_sorted_as_one_stream() {
    let dir = tempfile::tempdir().unwrap();
    let one = b"@FILE { http://1/\nTitle{1}:\t1\n}\n";
    let two = b"@FILE { http://2/\nTitle{1}:\t2\n}\n";
    let three = b"@FILE { http://3/\nTitle{1}:\t3\n}\n";
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("b.soif"), two).unwrap();
    std::fs::write(dir.path().join("a.soif"), one).unwrap();
    std::fs::write(dir.path().join("sub/c.soif"), three).unwrap();
    let out = run(
        &["convert", dir.path().to_str().unwrap(), "--to", "soif"],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(out.stdout, [&one[..], two, three].concat());

    let glob = format!("{}/*.soif", dir.path().display());
    let out = run(&["convert", &glob, "--to", "soif"], b"");
    assert_eq!(out.stdout, [&one[..], two].concat());

    let nothing = format!("{}/*.none", dir.path().display());
    let out = run(&["convert", &nothing, "--to", "soif"], b"");
    assert_eq!(
        code(&out),
        2,
        "a glob that matches nothing is a usage error"
    );
    assert!(stderr(&out).contains(&format!("no file matches the pattern {nothing}")));
}

#[test]
fn output_file_and_missing_input() {
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("out.jsonl");
    let out = run(
        &[
            "convert",
            fixture("rfc2655/documents.soif").to_str().unwrap(),
            "--to",
            "jsonl",
            "-o",
            dest.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(code(&out), 0);
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&dest).unwrap().lines().count(), 3);

    let out = run(&["convert", "/no/such/file.soif", "--to", "jsonl"], b"");
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("/no/such/file.soif"),
        "{}",
        stderr(&out)
    );
}

/// SOIF → JSON Lines → SOIF gives back canonical input byte for byte: the RFC's
/// documents, the Harvest envelope example, and records with binary values, empty values,
/// values holding `}\n@FILE {`, and a repeated name.
#[test]
fn jsonl_round_trip_is_byte_identical() {
    let mut tricky = Vec::new();
    tricky.extend_from_slice(b"@FILE { -\nBin{4}:\t\xff\x00\x01}\nEmpty{0}:\t\nTrap{10}:\t}\n@FILE {\n\nK{1}:\ta\nK{1}:\tb\nL{2}:\tx\xe9\n}\n");
    tricky.extend_from_slice(
        b"@DELETE {\n@FILE { http://gone/\n}\n}\n@UPDATE {\n@FILE { http://new/\nT{1}:\tt\n}\n}\n",
    );
    let inputs = [
        rfc_documents(),
        std::fs::read(fixture("harvest/ecrc-93-10.soif")).unwrap(),
        tricky,
    ];
    for input in inputs {
        let jsonl = run(&["convert", "--to", "jsonl", "-q"], &input);
        assert_eq!(code(&jsonl), 0, "{}", stderr(&jsonl));
        for line in String::from_utf8(jsonl.stdout.clone()).unwrap().lines() {
            serde_json::from_str::<serde_json::Value>(line).expect("each line is JSON");
        }
        let back = run(
            &["convert", "--from", "jsonl", "--to", "soif", "-q"],
            &jsonl.stdout,
        );
        assert_eq!(code(&back), 0, "{}", stderr(&back));
        assert_eq!(
            String::from_utf8_lossy(&back.stdout),
            String::from_utf8_lossy(&input)
        );
        assert_eq!(back.stdout, input);
    }
}

#[test]
fn jsonl_shapes_for_binary_repeats_and_envelopes() {
    let input = b"@DELETE {\n@FILE { http://x/\nBin{2}:\t\xff\xfe\nK{1}:\ta\nK{1}:\tb\n}\n}\n";
    let out = run(&["convert", "--to", "jsonl"], input);
    assert_eq!(
        stdout(&out),
        "{\"template\":\"FILE\",\"url\":\"http://x/\",\"action\":\"delete\",\"attributes\":{\"Bin\":{\"base64\":\"//4=\"},\"K\":[\"a\",\"b\"]}}\n"
    );
    // 1990s Latin-1 as text.
    let out = run(
        &["convert", "--to", "jsonl", "--charset", "latin1"],
        b"@FILE { -\nTitle{4}:\tcaf\xe9\n}\n",
    );
    assert!(
        stdout(&out).contains("\"Title\":\"café\""),
        "{}",
        stdout(&out)
    );
}

#[test]
fn jsonl_is_detected_by_name_and_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("records.jsonl");
    std::fs::write(&path, format!("{FIRST_DOCUMENT_JSONL}\n")).unwrap();
    let out = run(&["convert", path.to_str().unwrap(), "--to", "soif"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("@DOCUMENT { http://home.netscape.com:80/\nTitle{19}:"));
    // On stdin, by its first byte.
    let out = run(
        &["convert", "--to", "soif"],
        FIRST_DOCUMENT_JSONL.as_bytes(),
    );
    assert!(stdout(&out).starts_with("@DOCUMENT {"), "{}", stderr(&out));
}

#[test]
fn collapse_then_jsonl_gives_arrays_and_nested_objects() {
    let harvest = fixture("harvest/ecrc-93-10.soif");
    let out = run(
        &[
            "convert",
            harvest.to_str().unwrap(),
            "--to",
            "jsonl",
            "-t",
            "collapse",
        ],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    assert_eq!(v["action"], "update");
    assert_eq!(v["attributes"]["Embed"][0]["Type"], "PostScript");
    // And back: the collapsed parts become Embed<1>- names again.
    let back = run(&["convert", "--to", "soif", "-q"], &out.stdout);
    assert!(
        stdout(&back).contains("Embed<1>-Type{10}:\tPostScript\n"),
        "{}",
        stdout(&back)
    );
}

#[test]
fn null_counts_and_help_is_complete() {
    let out = run(
        &[
            "convert",
            fixture("rfc2655/documents.soif").to_str().unwrap(),
            "--to",
            "null",
        ],
        b"",
    );
    assert_eq!(code(&out), 0);
    assert!(out.stdout.is_empty());
    assert_eq!(summary(&out).records_in, 3);
    let out = run(&["convert", "--help"], b"");
    let help = stdout(&out);
    for flag in [
        "--to",
        "--output",
        "--transform",
        "--on-error",
        "--quarantine",
        "--lenient",
        "--max-record-size",
        "--charset",
        "--columns",
        "--list-separator",
        "--batch-size",
        "--schema",
        "--token",
        "--quiet",
        "--from",
        "Exit status",
    ] {
        assert!(help.contains(flag), "convert --help lacks {flag}");
    }
    let out = run(&["convert", "x", "--to", "yaml"], b"");
    assert_eq!(code(&out), 2);
}

#[test]
fn quiet_silences_the_summary() {
    let out = run(&["convert", "--to", "null", "-q"], &rfc_documents());
    assert_eq!(code(&out), 0);
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

/// The round trip on generated Harvest-like data: binary thumbnails, multi-line
/// Full-Text, `Author-N`, `Embed<1>-` parts, values holding `}` and `@FILE {`.
#[test]
fn jsonl_round_trip_on_generated_data() {
    let mut input = Vec::new();
    soif_codecs::generate::Generator::new(3)
        .write_bytes(&mut input, 400_000)
        .unwrap();
    let jsonl = run(&["convert", "--to", "jsonl", "-q"], &input);
    assert_eq!(code(&jsonl), 0, "{}", stderr(&jsonl));
    assert!(
        stdout(&jsonl).contains("{\"base64\":"),
        "binary values are present"
    );
    let back = run(&["convert", "--to", "soif", "-q"], &jsonl.stdout);
    assert_eq!(code(&back), 0, "{}", stderr(&back));
    assert!(back.stdout == input, "soif -> jsonl -> soif differs");
}

#[test]
fn csv_columns_come_from_a_first_pass_also_on_stdin() {
    let out = run(&["convert", "--to", "csv"], &rfc_documents());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let csv = stdout(&out);
    // Every attribute of every record has a column, in first-seen order.
    assert!(
        csv.starts_with("template,url,Title,Content-Type,Content-Length,Author-1,Author-2,Author-3,Abstract,Last-Modified,Thumbnail\r\n"),
        "{csv}"
    );
    assert_eq!(summary(&out).out, 3);
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    let out = run(&["convert", "--to", "null"], &rfc_documents());
    let err = stderr(&out);
    assert!(!err.contains('\r') && !err.contains('\u{1b}'), "{err:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    // `soif convert big.soif --to jsonl | head -1`: once the reader has gone, soif stops
    // with status 0 and says nothing, as Unix filters do.
    use std::io::Read;
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("big.soif");
    let mut bytes = Vec::new();
    soif_codecs::generate::Generator::new(3)
        .write_bytes(&mut bytes, 8 << 20)
        .unwrap();
    std::fs::write(&data, bytes).unwrap();
    let mut child = soif()
        .args(["convert", data.to_str().unwrap(), "--to", "jsonl", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The read end is dropped here.
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(first.starts_with(b"{\"template\":\"FILE\""));
}

#[test]
fn a_lone_numbered_value_survives_collapse_jsonl_expand() {
    // `Author-1` alone collapses to a one-item list; JSON Lines keeps it a list, so
    // expand gives `Author-1` back (not `Author`).
    let input = b"@FILE { http://x/\nAuthor-1{1}:\ta\n}\n";
    let jsonl = run(
        &["convert", "-", "-t", "collapse", "--to", "jsonl", "-q"],
        input,
    );
    assert_eq!(
        stdout(&jsonl).trim(),
        r#"{"template":"FILE","url":"http://x/","attributes":{"Author":["a"]}}"#
    );
    let back = run(
        &[
            "convert", "-", "--from", "jsonl", "-t", "expand", "--to", "soif", "-q",
        ],
        jsonl.stdout.as_slice(),
    );
    assert_eq!(back.stdout, input);
}

/// `soif --help` is made from the same definitions as the subcommands: it names what every
/// output format `--to` accepts writes, and gives each subcommand's own one-line help.
#[test]
fn soif_help_lists_every_output_format_and_every_subcommand() {
    let help = stdout(&run(&["--help"], b""));
    // Help is wrapped to the terminal's width: compare words.
    let words = help.split_whitespace().collect::<Vec<_>>().join(" ");
    // The formats `--to` accepts, as the error for a wrong one lists them.
    let out = run(&["convert", "--to", "frobnicate"], b"");
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    let listed = err
        .split("option --to=`frobnicate`: expected ")
        .nth(1)
        .and_then(|s| s.lines().next())
        .unwrap_or_else(|| panic!("no possible values in {err}"));
    let formats: Vec<&str> = listed
        .split([',', ' '])
        .filter(|w| !w.is_empty() && *w != "or")
        .collect();
    assert!(
        formats.contains(&"parquet") && formats.contains(&"arrow"),
        "{listed}"
    );
    for name in formats {
        let format = soif_sinks::Format::parse(name).unwrap();
        if let Some(title) = format.title() {
            assert!(
                words.contains(title),
                "{name} ({title}) missing from soif --help:\n{help}"
            );
        }
    }
    // Every subcommand: its line in `soif --help` is the first line of its own help.
    let commands: Vec<(&str, &str)> = help
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.trim().split_once(' '))
        .map(|(name, about)| (name, about.trim()))
        .filter(|(name, _)| *name != "help")
        .collect();
    for name in [
        "convert", "run", "stats", "validate", "rdm", "state", "serve", "split",
    ] {
        assert!(commands.iter().any(|(n, _)| *n == name), "{name}: {help}");
    }
    for (name, about) in commands {
        let own = stdout(&run(&[name, "--help"], b""));
        let first = own.lines().next().unwrap_or_default();
        assert_eq!(first.trim_end_matches('.'), about, "soif {name} --help");
    }
    assert!(words.contains("OAI-PMH"), "{help}");
}
