//! `soif convert --to csv` end to end: columns from the first pass (files and stdin),
//! from `--columns`, from `--schema`; lists after `collapse`; Latin-1; and the output read
//! back by Python's csv module (skipped, with a note, when python3 is missing).

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

fn soif() -> Command {
    Command::new(env!("CARGO_BIN_EXE_soif"))
}

fn fixture(path: &str) -> String {
    format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str], stdin: Option<&[u8]>) -> String {
    let mut child = soif()
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(bytes).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "soif {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("csv output is UTF-8")
}

fn header(csv: &str) -> &str {
    csv.split("\r\n").next().unwrap()
}

/// Rows as Python's csv module reads them, or `None` without python3.
fn python_rows(csv: &str) -> Option<Vec<Vec<String>>> {
    let script = "import csv, json, sys\n\
                  for row in csv.reader(sys.stdin, strict=True): print(json.dumps(row))";
    common::python_json_lines(script, csv, "Python csv", "python csv")
}

#[test]
fn seeds_with_columns_from_a_first_pass() {
    let (docs, dc, harvest) = (
        fixture("rfc2655/documents.soif"),
        fixture("rfc2655/dublin-core.soif"),
        fixture("harvest/ecrc-93-10.soif"),
    );
    let csv = run(
        &["convert", &docs, &dc, &harvest, "--to", "csv", "-q"],
        None,
    );
    let h = header(&csv);
    assert!(h.starts_with("template,url,Title,Content-Type,Content-Length,Author-1,"));
    assert!(h.contains(",CONTRIBUTOR-10,"));
    assert!(h.ends_with(",Embed<1>-Keywords"));
    let Some(rows) = python_rows(&csv) else {
        return;
    };
    assert_eq!(rows.len(), 6);
    let col = |name: &str| rows[0].iter().position(|c| c == name).unwrap();
    assert_eq!(rows[2][col("Author-3")], "Paul C. Kocher");
    assert_eq!(rows[4][col("CREATOR-2")], "J. Kunze");
    assert_eq!(rows[5][col("Embed<1>-Type")], "PostScript");
    assert!(rows.iter().all(|r| r.len() == rows[0].len()));

    // From stdin (spooled for the first pass), the same bytes.
    let all: Vec<u8> = [&docs, &dc, &harvest]
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    assert_eq!(run(&["convert", "--to", "csv", "-q"], Some(&all)), csv);
}

#[test]
fn given_columns_collapse_and_list_separator() {
    let docs = fixture("rfc2655/documents.soif");
    let csv = run(
        &[
            "convert",
            &docs,
            "--to",
            "csv",
            "-q",
            "-t",
            "collapse",
            "--columns",
            "Title,Author",
            "--list-separator",
            "; ",
        ],
        None,
    );
    let lines: Vec<&str> = csv.split("\r\n").collect();
    assert_eq!(lines[0], "template,url,Title,Author");
    assert_eq!(
        lines[2],
        "DOCUMENT,http://home.netscape.com/eng/ssl3/ssl-toc.html,SSL Protocol V. 3.0,\
         Alan O. Freier; Philip Karlton; Paul C. Kocher"
    );
}

#[test]
fn schema_columns_latin1_and_awkward_values() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.soif");
    std::fs::write(
        &schema,
        "@SCHEMA { -\nLast-Modified{29}:\tThu, 16 May 1996 00:00:00 GMT\nSOIF-Attribute-2{8}:\tAbstract\nSOIF-Attribute-1{5}:\tTitle\n}\n",
    )
    .unwrap();
    let mut input = Vec::new();
    input.extend_from_slice(b"@DOCUMENT { http://x/1\nTitle{5}:\tcaf\xe9s\nAbstract{20}:\tline one,\r\n\"two\"\nend\n}\n");
    let path = dir.path().join("in.soif");
    std::fs::write(&path, &input).unwrap();
    let csv = run(
        &[
            "convert",
            path.to_str().unwrap(),
            "--to",
            "csv",
            "-q",
            "--charset",
            "latin1",
            "--schema",
            schema.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(header(&csv), "template,url,Title,Abstract");
    if let Some(rows) = python_rows(&csv) {
        assert_eq!(
            rows[1],
            [
                "DOCUMENT",
                "http://x/1",
                "cafés",
                "line one,\r\n\"two\"\nend"
            ]
        );
    }
}

/// `--bom`: the file starts with a UTF-8 byte-order mark (what Excel needs to read it as
/// UTF-8), and is otherwise the same: a reader that knows the mark
/// (`encoding="utf-8-sig"`) gets the same rows as from the file without it.
#[test]
fn bom_marks_the_file_as_utf8_and_changes_nothing_else() {
    let docs = fixture("rfc2655/documents.soif");
    let plain = run(&["convert", &docs, "--to", "csv", "-q"], None);
    let marked = run(&["convert", &docs, "--to", "csv", "-q", "--bom"], None);
    assert!(!plain.starts_with('\u{feff}'));
    assert_eq!(marked.strip_prefix('\u{feff}'), Some(plain.as_str()));
    let script = "import csv, io, json, sys\n\
                  text = io.TextIOWrapper(sys.stdin.buffer, encoding='utf-8-sig', newline='')\n\
                  for row in csv.reader(text, strict=True): print(json.dumps(row))";
    let sig: Option<Vec<Vec<String>>> =
        common::python_json_lines(script, &marked, "Python utf-8-sig", "python csv, utf-8-sig");
    if let (Some(sig), Some(rows)) = (sig, python_rows(&plain)) {
        assert_eq!(sig, rows);
        assert_eq!(sig[0][0], "template");
    }
    // An empty input still gets its header, and the mark.
    let empty = run(
        &[
            "convert",
            "--to",
            "csv",
            "--columns",
            "Title",
            "--bom",
            "-q",
        ],
        Some(b""),
    );
    assert_eq!(empty, "\u{feff}template,url,Title\r\n");
}
