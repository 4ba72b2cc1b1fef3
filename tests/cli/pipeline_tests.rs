//! `soif test PIPELINE.toml` (a pipeline file's `[[test]]` cases) and `soif try` (a chain
//! over the first records of an input), end to end: docs/testing.md.

use crate::common::{code, run_in, stderr, stdout};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `soif ARGS` from the repository root.
fn soif(args: &[&str]) -> std::process::Output {
    run_in(Some(root()), args, b"")
}

fn docs() -> String {
    std::fs::read_to_string(root().join("docs/testing.md")).unwrap()
}

/// The pipeline file of docs/testing.md (its ```toml block).
fn doc_pipeline() -> String {
    let docs = docs();
    let start = docs.find("```toml\n").unwrap() + "```toml\n".len();
    docs[start..][..docs[start..].find("```").unwrap()].to_string()
}

/// A pipeline file written into `dir` (the repository's fixtures are reached by absolute
/// paths when it runs elsewhere).
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const DUBLIN_CORE_PASSES: &str = "running 2 tests from configs/dublin-core.toml
test a Harvest FILE record becomes Dublin Core ... ok
test a record with nothing to map keeps its identifier ... ok

2 passed, 0 failed
";

#[test]
fn the_shipped_pipeline_passes_its_tests() {
    let out = soif(&["test", "configs/dublin-core.toml"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stdout(&out), DUBLIN_CORE_PASSES);
    assert!(docs().contains(DUBLIN_CORE_PASSES));
}

#[test]
fn every_shipped_pipeline_with_tests_passes_them() {
    let mut tested = 0;
    for entry in std::fs::read_dir(root().join("configs")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.contains("[[test]]") {
            continue;
        }
        let rel = format!("configs/{}", path.file_name().unwrap().to_string_lossy());
        let out = soif(&["test", &rel]);
        assert_eq!(code(&out), 0, "{rel}:\n{}{}", stdout(&out), stderr(&out));
        tested += 1;
    }
    assert!(tested >= 1);
}

#[test]
fn a_changed_expected_value_fails_with_a_readable_diff() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("configs")).unwrap();
    let text = std::fs::read_to_string(root().join("configs/dublin-core.toml")).unwrap();
    let changed = text.replace("\"TITLE\":\"Maps of Texas\"", "\"TITLE\":\"Maps of Utah\"");
    assert_ne!(changed, text);
    write(dir.path(), "configs/dublin-core.toml", &changed);
    let out = run_in(Some(dir.path()), &["test", "configs/dublin-core.toml"], b"");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let expected = "running 2 tests from configs/dublin-core.toml
test a Harvest FILE record becomes Dublin Core ... FAILED
test a record with nothing to map keeps its identifier ... ok

failures:

---- a Harvest FILE record becomes Dublin Core ----
  records out:
  record 1 (ftp://ftp.example.org/pub/maps.ps.Z):
    attributes.TITLE: expected \"Maps of Utah\", actual \"Maps of Texas\"

1 passed, 1 failed
";
    assert_eq!(stdout(&out), expected);
    assert!(
        docs().contains(expected),
        "docs/testing.md shows this report"
    );
}

#[test]
fn the_documented_pipeline_passes_and_fails_without_its_validation() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = write(dir.path(), "karlton.toml", &doc_pipeline());
    let out = soif(&["test", pipeline.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).ends_with("\n3 passed, 0 failed\n"),
        "{}",
        stdout(&out)
    );

    // The expected rejection: without `validate` the record goes through.
    let unvalidated = doc_pipeline().replace(
        "\"validate:tests/fixtures/transforms/typed.schema.soif,unknown=allow\",\n",
        "",
    );
    let pipeline = write(dir.path(), "unvalidated.toml", &unvalidated);
    let out = soif(&["test", pipeline.to_str().unwrap(), "not a number"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let report = stdout(&out);
    let section =
        &report[report.find("---- a length").unwrap()..report.find("\n\n0 passed").unwrap()];
    let shown = docs();
    let shown = &shown[shown.find("---- a length").unwrap()..];
    assert!(
        shown.starts_with(section),
        "docs/testing.md shows:\n{section}"
    );

    // Another reason than the one expected.
    let wrong = doc_pipeline().replace(
        "rejected = \"Content-Length: `5 KB` is not an integer\"",
        "rejected = \"is not a date\"",
    );
    let pipeline = write(dir.path(), "wrong.toml", &wrong);
    let out = soif(&["test", pipeline.to_str().unwrap(), "not a number"]);
    assert_eq!(code(&out), 1);
    assert!(
        stdout(&out).contains(
            "    rejection 1: expected a reason containing \"is not a date\", actual \"Content-Length: `5 KB` is not an integer (Data-Type int), at test \\\"a length that is not a number is rejected\\\": byte 0, record 1 (http://example.org/big)\""
        ),
        "{}",
        stdout(&out)
    );
}

/// A pipeline with the given transforms and cases, writing nowhere it would be run.
fn pipeline(transforms: &str, cases: &str) -> String {
    format!(
        "transforms = {transforms}\n\n[source]\ninputs = [\"-\"]\n\n[[sink]]\nformat = \"null\"\n\n{cases}"
    )
}

#[test]
fn an_input_file_with_records_the_decoder_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let cases = r#"
[[test]]
name = "bad records are rejections"
input_file = "tests/fixtures/pipeline/bad.soif"
output = '''
{"template":"DOCUMENT","url":"http://a/","attributes":{"Title":"A"}}
{"template":"DOCUMENT","url":"http://c/","attributes":{"Title":"C"}}
{"template":"DOCUMENT","url":"http://d/","attributes":{"Title":"D"}}
'''
rejected = ["non-numeric size {abc}", "not a SOIF object"]
"#;
    let path = write(dir.path(), "p.toml", &pipeline("[]", cases));
    let out = soif(&["test", path.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));

    // The same records through `hits:2`: `d` filtered, so one record missing.
    let cases = cases.replace("rejected =", "filtered = 2\nrejected =");
    let path = write(dir.path(), "p.toml", &pipeline("[\"hits:2\"]", &cases));
    let out = soif(&["test", path.to_str().unwrap()]);
    assert_eq!(code(&out), 1);
    let report = stdout(&out);
    assert!(report.contains("  records out: expected 3, actual 2\n  record 3 expected, not produced: {\"template\":\"DOCUMENT\",\"url\":\"http://d/\",\"attributes\":{\"Title\":\"D\"}}\n"), "{report}");
    assert!(
        report.contains("  filtered: expected 2, actual 1 (of 5 records read)"),
        "{report}"
    );
}

#[test]
fn filtered_true_means_every_record_and_binary_values_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let cases = r#"
[[test]]
name = "all dropped"
input = '''
{"template":"FILE","url":"http://a/","attributes":{"Title":"A"}}
{"template":"FILE","url":"http://b/","attributes":{"Title":"B"}}
'''
filtered = true

[[test]]
name = "binary"
format = "jsonl"
input = '''
{"template":"FILE","url":"http://a/","attributes":{"Title":{"base64":"Y2Fm6Q=="},"Author":"Garcia"}}
'''
output = '''
{"template":"FILE","url":"http://a/","attributes":{"Title":"cafe","Author":"Garcia"}}
'''
"#;
    let path = write(
        dir.path(),
        "p.toml",
        &pipeline("[\"match:Author=garcia\"]", cases),
    );
    let out = soif(&["test", path.to_str().unwrap()]);
    assert_eq!(code(&out), 1);
    let report = stdout(&out);
    assert!(report.contains("test all dropped ... ok\n"), "{report}");
    assert!(
        report.contains("    attributes.Title: expected \"cafe\", actual b\"caf\\xe9\"\n"),
        "{report}"
    );
}

#[test]
fn usage_errors_exit_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let case = "[[test]]\nname = \"t\"\ninput = \"@FILE { http://a/\\n}\\n\"\n";
    let cases: &[(&str, String, &str)] = &[
        ("no tests", pipeline("[]", ""), "no [[test]] to run"),
        ("bad toml", "transforms = [".to_string(), "bad.toml"),
        (
            "bad transform",
            pipeline("[\"frobnicate\"]", case),
            "unknown transform `frobnicate`",
        ),
        (
            "bad output",
            pipeline("[]", &format!("{case}output = \"{{oops\"\n")),
            "[[test]] 1 (\"t\"): output line 1: ",
        ),
        (
            "missing input file",
            pipeline(
                "[]",
                "[[test]]\nname = \"t\"\ninput_file = \"no/such/file.soif\"\n",
            ),
            "input_file no/such/file.soif: ",
        ),
        (
            "two inputs",
            pipeline("[]", &format!("{case}input_file = \"x\"\n")),
            "give `input` or `input_file`, not both",
        ),
        (
            "no input",
            pipeline("[]", "[[test]]\nname = \"t\"\n"),
            "no input",
        ),
        (
            "unknown key",
            pipeline("[]", &format!("{case}outptu = \"\"\n")),
            "outptu",
        ),
    ];
    for (what, text, message) in cases {
        let path = write(dir.path(), "bad.toml", text);
        let out = soif(&["test", path.to_str().unwrap()]);
        assert_eq!(code(&out), 2, "{what}: {}{}", stdout(&out), stderr(&out));
        assert!(stderr(&out).contains(message), "{what}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{what}: {}", stdout(&out));
    }
    let out = soif(&["test", "no/such/pipeline.toml"]);
    assert_eq!(code(&out), 2);
}

#[test]
fn try_shows_each_record_before_and_after() {
    let docs = docs();
    // The console examples of docs/testing.md, run as written.
    for block in docs.split("```console\n").skip(1) {
        let block = &block[..block.find("```").unwrap()];
        let (command, shown) = block.split_once('\n').unwrap();
        let Some(args) = command.strip_prefix("$ soif ") else {
            continue;
        };
        // As a shell runs it (quoted arguments).
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("\"$SOIF\" {args}"))
            .env("SOIF", env!("CARGO_BIN_EXE_soif"))
            .current_dir(root())
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{command}: {}", stderr(&out));
        assert_eq!(stdout(&out), shown, "{command}");
    }
}

#[test]
fn try_reads_stdin_and_shows_rejections_and_what_order_held_back() {
    let input = std::fs::read(root().join("tests/fixtures/pipeline/bad.soif")).unwrap();
    let out = run_in(
        Some(root()),
        &["try", "-t", "order:-Title", "-n", "0", "-"],
        &input,
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = stdout(&out);
    assert!(
        report.contains("record 2: not read: -: byte 65, record 2 (http://bad/): attribute `Title` has a non-numeric size {abc}"),
        "{report}"
    );
    assert!(
        report.contains("record 1 (-: byte 0, record 1): filtered (no record out)\n"),
        "{report}"
    );
    assert!(
        report.contains("\nend of input: the chain let go 3 records it held back\n> {\"template\":\"DOCUMENT\",\"url\":\"http://d/\",\"attributes\":{\"Title\":\"D\"}}\n"),
        "{report}"
    );
    assert!(
        report.ends_with("\n5 records read: 0 passed, 3 filtered, 2 rejected; 3 out\n"),
        "{report}"
    );

    let out = soif(&[
        "try",
        "-t",
        "validate:tests/fixtures/transforms/typed.schema.soif,unknown=allow",
        "tests/fixtures/transforms/invalid.soif",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("record 2 (tests/fixtures/transforms/invalid.soif: byte 99, record 2): rejected: Content-Length: `5 KB` is not an integer (Data-Type int); Last-Modified: `someday` is not a date (Data-Type date), at tests/fixtures/transforms/invalid.soif: byte 99, record 2 (http://example.org/big)\n"), "{}", stdout(&out));
}

#[test]
fn try_usage_errors_exit_with_status_2() {
    for args in [
        &[
            "try",
            "-t",
            "frobnicate",
            "tests/fixtures/rfc2655/documents.soif",
        ][..],
        &[
            "try",
            "--on-error",
            "skip",
            "tests/fixtures/rfc2655/documents.soif",
        ],
        &["try", "--pretty", "--changes", "-"],
    ] {
        let out = soif(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
    }
    // As for `soif convert`, an input that cannot be read ends the run (status 1).
    let out = soif(&["try", "-t", "collapse", "no/such/file.soif"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("no/such/file.soif: no such file"));
}

#[test]
fn a_case_recorded_by_try_passes_and_fails_when_the_chain_changes() {
    let chain = [
        "-t",
        "collapse",
        "-t",
        "validate:tests/fixtures/transforms/typed.schema.soif,unknown=allow",
        "-t",
        "match:Title=e",
    ];
    let mut args = vec!["try"];
    args.extend(chain);
    args.extend([
        "--as-test",
        "recorded",
        "-n",
        "0",
        "tests/fixtures/rfc2655/documents.soif",
        "tests/fixtures/transforms/invalid.soif",
        "tests/fixtures/pipeline/bad.soif",
    ]);
    let out = soif(&args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let case = stdout(&out);
    assert!(case.starts_with("# left out, not readable: tests/fixtures/pipeline/bad.soif: byte 65, record 2 (http://bad/): attribute `Title` has a non-numeric size {abc}"), "{case}");
    assert!(
        case.contains(
            "rejected = [\"Title: `Welcome to Netscape` is not unique (Enforce-Uniqueness)\", "
        ),
        "{case}"
    );
    assert!(case.contains("\nfiltered = 5\n"), "{case}");

    let dir = tempfile::tempdir().unwrap();
    let transforms = "[\"collapse\", \"validate:tests/fixtures/transforms/typed.schema.soif,unknown=allow\", \"match:Title=e\"]";
    let path = write(dir.path(), "p.toml", &pipeline(transforms, &case));
    let out = soif(&["test", path.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));

    // Without `validate`, the two records are no longer rejected.
    let path = write(
        dir.path(),
        "p.toml",
        &pipeline("[\"collapse\", \"match:Title=e\"]", &case),
    );
    let out = soif(&["test", path.to_str().unwrap()]);
    assert_eq!(code(&out), 1);
    assert!(
        stdout(&out).contains("  rejected: expected 2, actual 0\n"),
        "{}",
        stdout(&out)
    );
}

/// The pipeline file of docs/testing.md whose chain runs a `remap` program (its second
/// ```toml block).
fn doc_remap_pipeline() -> String {
    let docs = docs();
    let block = docs.split("```toml\n").nth(2).unwrap();
    block[..block.find("```").unwrap()].to_string()
}

#[test]
fn remap_outcomes_are_test_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let text = doc_remap_pipeline();
    assert!(text.contains("{ remap = '''") && text.contains("[tables]"));
    let path = write(dir.path(), "remap.toml", &text);
    let out = soif(&["test", path.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(
        stdout(&out)
            .lines()
            .filter(|l| l.ends_with(" ... ok"))
            .count(),
        4,
        "{}",
        stdout(&out)
    );

    // A looked-up value other than expected, an `abort` taken for a rejection, a failed
    // `assert!` with another message, and a fan-out counted wrong.
    let changed = text
        .replace(
            "\"mime\":\"application/x-compress\"",
            "\"mime\":\"application/gzip\"",
        )
        .replace(
            "filtered = 1\n\n[[test]]\nname = \"records without",
            "rejected = \"draft\"\n\n[[test]]\nname = \"records without",
        )
        .replace("rejected = \"no Title\"", "rejected = \"no Author\"")
        .replace(
            "\"Member\":\"b.ps\"}}\n'''\nfiltered = 1",
            "\"Member\":\"b.ps\"}}\n'''\nfiltered = 0",
        );
    let path = write(dir.path(), "changed.toml", &changed);
    let out = soif(&["test", path.to_str().unwrap()]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let report = stdout(&out);
    for expected in [
        "test the MIME type comes from the table ... FAILED\n",
        "    attributes.mime: expected \"application/gzip\", actual \"application/x-compress\"\n",
        "test drafts are dropped ... FAILED\n",
        "    rejection 1: expected a reason containing \"draft\", but none\n",
        "  filtered: expected 0, actual 1 (of 1 record read)\n",
        "    rejection 1: expected a reason containing \"no Author\", actual \"remap: no Title (",
        "test a bundle becomes one record per member ... FAILED\n",
        "  filtered: expected 0, actual 1 (of 2 records read)\n",
        "\n0 passed, 4 failed\n",
    ] {
        assert!(report.contains(expected), "{expected:?} not in:\n{report}");
    }
}

#[test]
fn try_shows_what_a_program_does_to_each_record() {
    let out = soif(&[
        "try",
        "-t",
        "collapse",
        "-t",
        "remap:tests/fixtures/transforms/remap/outcomes.vrl",
        "tests/fixtures/transforms/remap/records.soif",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let report = stdout(&out);
    let headers: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("record "))
        .collect();
    assert_eq!(headers.len(), 4, "{report}");
    assert!(headers[0].ends_with("): passed"), "{report}");
    assert!(
        headers[1].ends_with("): filtered (no record out)"),
        "{report}"
    );
    assert!(
        headers[2].contains(
            "): rejected: remap: no Title (tests/fixtures/transforms/remap/outcomes.vrl:"
        ),
        "{report}"
    );
    assert!(
        headers[3].ends_with("): fanned out into 2 records"),
        "{report}"
    );
    // A value that is not UTF-8 goes through untouched (and is shown as JSON Lines has it).
    assert!(
        report.contains("> {\"template\":\"FILE\",\"url\":\"ftp://ftp.example.org/pub/report-1.ps\",\"attributes\":{\"Title\":\"Sorts and Types\",\"Author\":{\"base64\":\"Sm9z6SBHYXJj7WE=\"}"),
        "{report}"
    );
    assert!(
        report.ends_with("\n4 records read: 2 passed, 1 filtered, 1 rejected; 3 out\n"),
        "{report}"
    );

    // --changes names what the program added, with values that are not UTF-8 escaped.
    let out = soif(&[
        "try",
        "--changes",
        "-n",
        "1",
        "-t",
        "remap:tests/fixtures/transforms/remap/outcomes.vrl",
        "tests/fixtures/transforms/remap/records.soif",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\n  + attributes.read_from: \"tests/fixtures/transforms/remap/records.soif record 1\"\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_program_that_does_not_compile_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = doc_remap_pipeline().replace(
        "if .attributes.Status == \"draft\" { abort }",
        "if .attributes.Status == \"draft\" { abort",
    );
    let path = write(dir.path(), "broken.toml", &text);
    let out = soif(&["test", path.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).is_empty());
    assert!(stderr(&out).contains("transforms[1]"), "{}", stderr(&out));
}
