//! `-t remap:FILE.vrl` end to end (docs/transforms.md#remap): each outcome of a program
//! on real files — passed on, filtered, rejected and quarantined byte for byte, fanned
//! out in order —, binary values untouched, metadata, compile errors, lookup tables from
//! `--table` and from a pipeline file's `[tables]`, inline programs.

use crate::common::{code, fixture, run, run_in, stderr, stdout, summary};
use std::path::Path;

fn path(rel: &str) -> String {
    fixture(rel).to_string_lossy().into_owned()
}

/// The `N added` count of the summary line (0 when it is not shown).
fn added(err: &str) -> u64 {
    err.lines()
        .rev()
        .find(|l| l.contains(" records in, "))
        .and_then(|l| l.split(" added").next().filter(|b| b.len() < l.len()))
        .and_then(|b| b.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The records of `records.soif` exactly as they are in the file, by number (1-based).
fn raw_record(n: usize) -> Vec<u8> {
    let bytes = std::fs::read(fixture("transforms/remap/records.soif")).unwrap();
    let starts: Vec<usize> = (0..bytes.len())
        .filter(|&i| bytes[i..].starts_with(b"@FILE {") && (i == 0 || bytes[i - 1] == b'\n'))
        .collect();
    let end = starts.get(n).copied().unwrap_or(bytes.len());
    bytes[starts[n - 1]..end].to_vec()
}

#[test]
fn every_outcome_of_a_program_on_a_real_file() {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("rejected.soif");
    let input = path("transforms/remap/records.soif");
    let program = format!("remap:{}", path("transforms/remap/outcomes.vrl"));
    let out = run(
        &[
            "convert",
            &input,
            "-t",
            &program,
            "--to",
            "jsonl",
            "--quarantine",
            q.to_str().unwrap(),
        ],
        b"",
    );
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Passed on, with the metadata the program read; then the bundle fanned out in order.
    let urls: Vec<&str> = lines.iter().map(|l| l["url"].as_str().unwrap()).collect();
    assert_eq!(
        urls,
        [
            "ftp://ftp.example.org/pub/report-1.ps",
            "ftp://ftp.example.org/pub/bundle.tar#a.ps",
            "ftp://ftp.example.org/pub/bundle.tar#b.ps",
        ]
    );
    assert_eq!(
        lines[0]["attributes"]["read_from"],
        format!("{input} record 1")
    );
    assert_eq!(lines[2]["attributes"]["Member"], "b.ps");
    // The draft was filtered, the untitled record rejected with the program's message and
    // its position, and the counts add up with the record the fan-out added.
    let c = summary(&out);
    assert_eq!((c.records_in, c.out, c.rejected, c.filtered), (4, 3, 1, 1));
    assert_eq!(added(&err), 1, "{err}");
    assert_eq!(c.records_in + added(&err), c.out + c.rejected + c.filtered);
    assert!(
        err.contains("remap: no Title (")
            && err.contains("outcomes.vrl:6:1, assert), at ")
            && err.contains("record 3 (ftp://ftp.example.org/pub/untitled.ps)"),
        "{err}"
    );
    // Quarantined byte for byte, exactly as read.
    assert_eq!(std::fs::read(&q).unwrap(), raw_record(3));
}

#[test]
fn values_a_program_does_not_touch_pass_byte_for_byte() {
    // Latin-1 text and a binary thumbnail, through a program that adds an attribute,
    // written back as SOIF: the same bytes as without the program.
    let input = path("transforms/remap/records.soif");
    let plain = run(
        &["convert", &input, "--to", "soif", "-q", "-t", "hits:1"],
        b"",
    );
    let program = "remap:".to_string() + &path("transforms/remap/outcomes.vrl");
    let remapped = run(
        &[
            "convert", &input, "--to", "soif", "-q", "-t", "hits:1", "-t", &program,
        ],
        b"",
    );
    assert_eq!(code(&remapped), 0, "{}", stderr(&remapped));
    let without_new = |out: &[u8]| -> Vec<u8> {
        let text = out.to_vec();
        let at = text
            .windows(9)
            .position(|w| w == b"read_from")
            .unwrap_or(text.len());
        let end = text[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |e| at + e + 1);
        [&text[..at], &text[end..]].concat()
    };
    assert!(remapped.stdout.windows(9).any(|w| w == b"read_from"));
    assert_eq!(without_new(&remapped.stdout), plain.stdout);
    assert!(plain.stdout.windows(4).any(|w| w == b"\x89PNG"));
}

#[test]
fn a_compile_error_stops_before_reading_with_vrls_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("bad.vrl");
    std::fs::write(
        &program,
        "# a title\n.attributes.title = upcase(.attributes.Title)\n",
    )
    .unwrap();
    let out_file = dir.path().join("out.jsonl");
    let spec = format!("remap:{}", program.display());
    let out = run(
        &[
            "convert",
            &path("transforms/remap/records.soif"),
            "-t",
            &spec,
            "--to",
            "jsonl",
            "-o",
            out_file.to_str().unwrap(),
        ],
        b"",
    );
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("error[E103]: unhandled fallible assignment"),
        "{err}"
    );
    assert!(
        err.contains(&format!("┌─ {}:2:21", program.display())),
        "{err}"
    );
    assert!(err.contains("^^^^"), "the caret: {err}");
    assert!(
        err.contains("upcase!(.attributes.Title)"),
        "the hint: {err}"
    );
    assert!(!err.contains("records in"), "nothing was read: {err}");
    assert!(!out_file.exists());
    // Not colour-coded when standard error is not a terminal.
    assert!(!err.contains('\u{1b}'));
}

#[test]
fn a_lookup_through_a_table() {
    let table = format!("types={}", path("transforms/remap/types.csv"));
    let program = format!("remap:{}", path("transforms/remap/mime.vrl"));
    let out = run(
        &[
            "convert",
            &path("harvest/ecrc-93-10.soif"),
            "-q",
            "-t",
            "collapse",
            "--table",
            &table,
            "-t",
            &program,
            "--to",
            "jsonl",
        ],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(line["attributes"]["mime"], "application/x-compress");
    assert_eq!(
        line["attributes"]["Embed"][0]["mime"],
        "application/postscript"
    );
}

#[test]
fn a_missing_or_bad_table_is_a_usage_error_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "convert",
            &path("transforms/remap/records.soif"),
            "--table",
            "types=/nonexistent/types.csv",
            "--to",
            "jsonl",
        ],
        b"",
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot open the table `types` /nonexistent/types.csv"));
    let ragged = dir.path().join("ragged.csv");
    std::fs::write(&ragged, "a,b\n1,2\n3\n").unwrap();
    let spec = format!("t={}", ragged.display());
    let out = run(
        &[
            "convert",
            &path("transforms/remap/records.soif"),
            "--table",
            &spec,
            "--to",
            "jsonl",
        ],
        b"",
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("table `t`: bad CSV"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("records in"));
}

/// A pipeline file in `dir` with `body` and a jsonl sink to `out.jsonl`.
fn pipeline(dir: &Path, body: &str) -> std::path::PathBuf {
    let p = dir.join("pipeline.toml");
    let text = format!(
        "{body}\n[source]\ninputs = [{:?}]\n\n[[sink]]\nformat = \"jsonl\"\noutput = {:?}\n",
        path("harvest/ecrc-93-10.soif"),
        dir.join("out.jsonl").display().to_string()
    );
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_pipeline_file_holds_the_program_inline_and_names_its_tables() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "transforms = [\"collapse\", {{ remap = '''\n.attributes = {{\"mime\": get_enrichment_table_record!(\"types\", {{\"harvest_type\": .attributes.Type}}).mime, \"record\": %soif.record}}\n''' }}]\n\n[tables]\ntypes = {:?}\n",
        path("transforms/remap/types.csv")
    );
    let p = pipeline(dir.path(), &body);
    let out = run_in(Some(dir.path()), &["run", p.to_str().unwrap(), "-q"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let written = std::fs::read_to_string(dir.path().join("out.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(written.trim()).unwrap();
    assert_eq!(
        line["attributes"],
        serde_json::json!({"mime": "application/x-compress", "record": "1"})
    );
}

#[test]
fn an_inline_program_that_does_not_compile_is_named_by_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = pipeline(
        dir.path(),
        "transforms = [\"collapse\", { remap = \"\\n.x = upcase(.nope)\" }]\n",
    );
    let out = run_in(Some(dir.path()), &["run", p.to_str().unwrap()], b"");
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("pipeline.toml transforms[1] does not compile"),
        "{err}"
    );
    assert!(err.contains("pipeline.toml transforms[1]:2:"), "{err}");
    assert!(!dir.path().join("out.jsonl").exists());
}

#[test]
fn a_table_file_from_a_pipeline_that_is_missing_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = pipeline(
        dir.path(),
        "transforms = [\"collapse\"]\n\n[tables]\ntypes = \"missing.csv\"\n",
    );
    let out = run_in(Some(dir.path()), &["run", p.to_str().unwrap()], b"");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("missing.csv"), "{}", stderr(&out));
}
