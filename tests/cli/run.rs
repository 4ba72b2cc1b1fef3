//! `soif run PIPELINE.toml` end to end: several inputs, a transform chain, two sinks in
//! one pass, the error policy from the file, and every example in `configs/`.

use crate::common;
use common::*;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn two_sinks_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pipeline = write(
        d,
        "p.toml",
        &format!(
            r#"
transforms = ["collapse"]

[source]
inputs = ["{docs}", "{gz}"]

[errors]
on_error = "quarantine"
quarantine = "rejected.soif"

[[sink]]
format = "jsonl"
output = "out.jsonl"

[[sink]]
format = "soif"
output = "out.soif"
"#,
            docs = fixture("pipeline/bad.soif").display(),
            gz = fixture("pipeline/documents.soif.gz").display(),
        ),
    );
    let out = run_in(Some(d), &["run", &pipeline], b"");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let c = summary(&out);
    assert_eq!((c.records_in, c.out, c.rejected), (8, 6, 2));
    let jsonl = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    assert_eq!(jsonl.lines().count(), 6);
    // collapse ran before both sinks: a list in JSON, numbered names again in SOIF.
    assert!(
        jsonl.contains(r#""Author":["Alan O. Freier","Philip Karlton","Paul C. Kocher"]"#),
        "{jsonl}"
    );
    let soif = std::fs::read_to_string(d.join("out.soif")).unwrap();
    assert!(soif.contains("Author-3{14}:\tPaul C. Kocher\n"), "{soif}");
    assert_eq!(soif.matches("@DOCUMENT {").count(), 6);
    assert_eq!(
        std::fs::read(d.join("rejected.soif")).unwrap(),
        b"@DOCUMENT { http://bad/\nTitle{abc}:\tbroken\n}\nthis is not soif\n"
    );
}

/// Columnar sinks from a pipeline file: Parquet (records layout, zstd by default),
/// Parquet in the wide layout after `collapse`, and an Arrow IPC file, all in one pass;
/// each reads back (`--from` by extension) to the inputs' canonical SOIF.
#[test]
fn parquet_and_arrow_sinks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = fixture("rfc2655/documents.soif");
    let ecrc = fixture("harvest/ecrc-93-10.soif");
    let pipeline = write(
        d,
        "p.toml",
        &format!(
            r#"
[source]
inputs = ["{docs}", "{ecrc}"]

[[sink]]
format = "parquet"
output = "out.parquet"

[[sink]]
format = "parquet"
output = "small.parquet"
compression = "none"

[[sink]]
format = "arrow"
output = "out.arrow"
"#,
            docs = docs.display(),
            ecrc = ecrc.display(),
        ),
    );
    let out = run_in(Some(d), &["run", &pipeline], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let want = convert_ok(
        &[
            docs.to_str().unwrap(),
            ecrc.to_str().unwrap(),
            "--to",
            "soif",
            "-q",
        ],
        b"",
    );
    assert!(!want.is_empty());
    for name in ["out.parquet", "small.parquet", "out.arrow"] {
        let path = d.join(name);
        let back = convert_ok(&[path.to_str().unwrap(), "--to", "soif", "-q"], b"");
        assert_eq!(
            String::from_utf8_lossy(&back),
            String::from_utf8_lossy(&want),
            "{name}"
        );
    }
    assert_ne!(
        std::fs::metadata(d.join("out.parquet")).unwrap().len(),
        std::fs::metadata(d.join("small.parquet")).unwrap().len(),
        "compression from the sink's table"
    );

    // The wide layout after collapse: a list column for the multi-valued `Author`.
    let wide = write(
        d,
        "wide.toml",
        &format!(
            r#"
transforms = ["collapse"]

[source]
inputs = ["{docs}"]

[[sink]]
format = "parquet"
output = "wide.parquet"
parquet_layout = "wide"
"#,
            docs = docs.display(),
        ),
    );
    let out = run_in(Some(d), &["run", &wide], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let schema = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(d.join("wide.parquet")).unwrap(),
    )
    .unwrap()
    .schema()
    .clone();
    let author = schema.field_with_name("Author").unwrap();
    assert_eq!(author.data_type().to_string(), "List(Utf8)");
    assert_eq!(
        schema.metadata().get("soif:layout").map(String::as_str),
        Some("wide")
    );
}

#[test]
fn config_mistakes_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        ("[source]\ninputs = [\"-\"]\n", "no [[sink]]"),
        ("[source]\ninputs = [\"-\"]\n[[sink]]\nformat = \"yaml\"\n", "unknown format `yaml`"),
        ("[source]\ninputs = [\"-\"]\n[[sink]]\nformat = \"jsonl\"\noutptu = \"x\"\n", "outptu"),
        ("[source]\ninputs = [\"-\"]\n[errors]\non_error = \"quarantine\"\n[[sink]]\nformat = \"null\"\n", "quarantine"),
        ("transforms = [\"frobnicate\"]\n[source]\ninputs = [\"-\"]\n[[sink]]\nformat = \"null\"\n", "unknown transform"),
    ];
    for (text, want) in cases {
        let p = write(d, "bad.toml", text);
        let out = run(&["run", &p], b"");
        assert_eq!(code(&out), 2, "{text}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{text}: {}", stderr(&out));
    }
    let out = run(&["run", "/no/such/pipeline.toml"], b"");
    assert_eq!(code(&out), 1);
}

/// Every example pipeline in `configs/` runs, from a directory that holds `examples/` and
/// the `out/` they write into.
#[test]
fn the_bundled_configs_work() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for entry in std::fs::read_dir(root.join("configs")).unwrap() {
        let config = entry.unwrap().path();
        if config.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        // It harvests a server: tests/cli/oai_source.rs runs it against `soif serve`.
        if config.file_name().is_some_and(|n| n == "oai-mirror.toml") {
            continue;
        }
        seen += 1;
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(root.join("examples"), dir.path().join("examples")).unwrap();
        // Programs and tables a config names (configs/crosswalk.vrl).
        std::os::unix::fs::symlink(root.join("configs"), dir.path().join("configs")).unwrap();
        std::fs::create_dir(dir.path().join("out")).unwrap();
        let stdin = std::fs::read(fixture("rfc2655/documents.soif")).unwrap();
        let out = run_in(Some(dir.path()), &["run", config.to_str().unwrap()], &stdin);
        assert_eq!(code(&out), 0, "{}: {}", config.display(), stderr(&out));
        let c = summary(&out);
        assert!(c.out > 0, "{}: {}", config.display(), stderr(&out));
    }
    assert!(seen >= 3);
}

/// Every example pipeline in `configs/`, run as the README says (`soif run
/// configs/X.toml` from the repository root) in a fresh copy of the files the repository
/// ships, writes only under `out/`, which git ignores: `git status` stays clean. No run
/// rejects anything, so none leaves a quarantine file.
#[test]
fn the_bundled_configs_leave_a_fresh_clone_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let clone = tempfile::tempdir().unwrap();
    let c = clone.path();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=soif", "-c", "user.email=soif@example.org"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(c)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The shipped files the examples use: the repository's .gitignore, out/, configs/
    // and the data in examples/.
    let tracked = std::process::Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--",
            ".gitignore",
            "out",
            "configs",
            "examples",
        ])
        .current_dir(root)
        .output()
        .expect("git runs");
    assert!(tracked.status.success(), "{}", stderr(&tracked));
    let mut copied = 0;
    for rel in tracked.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let rel = Path::new(std::str::from_utf8(rel).unwrap());
        std::fs::create_dir_all(c.join(rel).parent().unwrap()).unwrap();
        std::fs::copy(root.join(rel), c.join(rel)).unwrap();
        copied += 1;
    }
    assert!(c.join("out/.gitignore").exists(), "out/ is shipped");
    // The OAI-PMH mirror harvests `soif serve` at 127.0.0.1:8080: here, one on a free port.
    let serve = Serve::start("books", "token", &[]);
    let posted = convert(
        &[
            fixture("rfc2655/documents.soif").to_str().unwrap(),
            "--to",
            "rdm",
            "-o",
            &serve.csid(),
            "--token",
            "token",
            "-q",
        ],
        b"",
    );
    assert_eq!(code(&posted), 0, "{}", stderr(&posted));
    let mirror = c.join("configs/oai-mirror.toml");
    let text = std::fs::read_to_string(&mirror).unwrap();
    assert!(text.contains("127.0.0.1:8080"));
    std::fs::write(&mirror, text.replace("127.0.0.1:8080", &serve.addr)).unwrap();
    // The dumps as a clone an hour old has them: `nightly-dumps` leaves files younger
    // than its `settle` time for the next run.
    let hour_ago = filetime::FileTime::from_system_time(
        std::time::SystemTime::now() - std::time::Duration::from_secs(3600),
    );
    for entry in std::fs::read_dir(c.join("examples/data/nightly")).unwrap() {
        filetime::set_file_mtime(entry.unwrap().path(), hour_ago).unwrap();
    }
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "shipped"]);
    assert!(copied > 5, "{copied} files");

    let stdin = std::fs::read(fixture("rfc2655/documents.soif")).unwrap();
    let mut configs: Vec<String> = std::fs::read_dir(c.join("configs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    configs.sort();
    assert!(configs.len() >= 5, "{configs:?}");
    for name in &configs {
        let config = format!("configs/{name}");
        let out = run_in(Some(c), &["run", &config], &stdin);
        assert_eq!(code(&out), 0, "{config}: {}", stderr(&out));
        assert!(summary(&out).out > 0, "{config}: {}", stderr(&out));
        let status = git(&["status", "--porcelain", "--untracked-files=all"]);
        assert_eq!(status, "", "{config} wrote outside out/");
    }
    let written: Vec<String> = std::fs::read_dir(c.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        written.iter().any(|n| n.starts_with("nightly.")),
        "{written:?}"
    );
    assert!(
        !written.iter().any(|n| n.contains("rejected")),
        "a quarantine file though nothing was rejected: {written:?}"
    );
}

#[test]
fn run_help_documents_the_file() {
    let help = stdout(&run(&["run", "--help"], b""));
    for key in [
        "[source]",
        "inputs",
        "[errors]",
        "on_error",
        "[[sink]]",
        "format",
        "Exit status",
    ] {
        assert!(help.contains(key), "run --help lacks {key}");
    }
}
