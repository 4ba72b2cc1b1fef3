//! Incremental runs (`--state`, a pipeline's `[state]`) end to end, on real files:
//! three runs over a directory where files are added, changed, touched and still being
//! written; runs killed (SIGKILL) at several points then run again, to the same SQLite
//! database and the same Parquet rows as an uninterrupted run; two runs at once (one
//! refused with status 75, a killed run's lock taken over); `--dry-run`; `--report`;
//! `soif state` and its `--forget`; what `--state` refuses.
//!
//! File times are set with `filetime` instead of sleeping: "being written" is a time
//! within `--settle` (60 s by default) of now, "finished" an hour ago.

use crate::common;

use common::{code, one, soif, stderr, stdout};
use filetime::FileTime;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use soif_codecs::generate::Generator;
use soif_codecs::soif::encode_record;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// Sets `path`'s modification time `secs` seconds before now.
fn age(path: &Path, secs: i64) {
    let now = FileTime::now().unix_seconds();
    filetime::set_file_mtime(path, FileTime::from_unix_time(now - secs, 0)).unwrap();
}

/// `n` generated records from `seed`, as SOIF.
fn records(seed: u64, n: usize) -> Vec<u8> {
    let mut g = Generator::new(seed);
    let mut out = Vec::new();
    for _ in 0..n {
        encode_record(&g.record(), &mut out);
    }
    out
}

/// A SOIF record with this URL and title.
fn record(url: &str, title: &str) -> String {
    format!("@FILE {{ {url}\nTitle{{{}}}:\t{title}\n}}\n", title.len())
}

fn run(dir: &Path, args: &[&str]) -> Output {
    soif().current_dir(dir).args(args).output().unwrap()
}

fn ok(out: &Output) {
    assert!(
        matches!(code(out), 0 | 3),
        "soif failed ({}): {}",
        out.status,
        stderr(out)
    );
}

fn report(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The taken files' names (last path component), sorted.
fn taken(report: &Value) -> Vec<String> {
    let mut names: Vec<String> = report["sources"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["files"].as_array().unwrap().iter())
        .filter(|f| f["decision"] == "taken")
        .map(|f| {
            Path::new(f["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// A catalog's records and layout ([`common::dump`]), read without writing.
fn dump(db: &Path) -> Vec<Vec<SqlValue>> {
    common::dump(&Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap())
}

/// The published files in `dir` whose names end with `ext` (temporary ones start with a
/// dot), sorted.
fn published(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            !n.starts_with('.') && n.ends_with(ext)
        })
        .collect();
    v.sort();
    v
}

/// Every file in `dir`, hidden ones included.
fn all_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The rows of Parquet files, as JSON Lines (soif reads its own Parquet back), sorted.
fn parquet_rows(files: &[PathBuf]) -> Vec<String> {
    let mut rows = Vec::new();
    for f in files {
        let out = soif()
            .args(["convert", "--to", "jsonl"])
            .arg(f)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        rows.extend(stdout(&out).lines().map(str::to_string));
    }
    rows.sort();
    rows
}

#[test]
fn three_runs_take_new_changed_and_settled_files_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let dumps = dir.join("dumps");
    std::fs::create_dir(&dumps).unwrap();
    let write = |name: &str, body: &str, secs_ago: i64| {
        let p = dumps.join(name);
        std::fs::write(&p, body).unwrap();
        age(&p, secs_ago);
    };
    write("a.soif", &record("http://a/", "A"), 3600);
    write("b.soif", &record("http://b/", "B1"), 3600);
    let args = [
        "convert", "dumps", "--state", "s.db", "--to", "sqlite", "-o", "c.db", "--report",
        "r.json", "-q",
    ];

    // Run 1: both.
    ok(&run(dir, &args));
    let r = report(&dir.join("r.json"));
    assert_eq!(taken(&r), ["a.soif", "b.soif"]);
    assert_eq!(r["totals"]["records_in"], 2);

    // Run 2: b changed, c added, d still being written; a untouched.
    write("b.soif", &record("http://b/", "B2"), 1800);
    write("c.soif", &record("http://c/", "C"), 3600);
    write("d.soif", &record("http://d/", "D-partial"), 5);
    ok(&run(dir, &args));
    let r = report(&dir.join("r.json"));
    assert_eq!(taken(&r), ["b.soif", "c.soif"]);
    let src = &r["sources"][0];
    assert_eq!(
        (&src["taken"], &src["unchanged"], &src["settling"]),
        (&Value::from(2), &Value::from(1), &Value::from(1))
    );
    let files = src["files"].as_array().unwrap();
    let reason = |name: &str| {
        files
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(name))
            .map(|f| f["reason"].as_str().unwrap().to_string())
    };
    assert_eq!(reason("b.soif").as_deref(), Some("changed"));
    assert_eq!(reason("c.soif").as_deref(), Some("new"));
    assert_eq!(reason("d.soif").as_deref(), Some("settling"));
    assert_eq!(reason("a.soif"), None, "unchanged files are only counted");
    assert_eq!(
        one::<String>(
            &dir.join("c.db"),
            "SELECT Title FROM FILE WHERE url = 'http://b/'"
        ),
        "B2"
    );
    assert_eq!(
        one::<i64>(&dir.join("c.db"), "SELECT count(*) FROM FILE"),
        3
    );

    // Run 3: d finished; a touched (same bytes, new time): only d.
    write("d.soif", &record("http://d/", "D"), 600);
    age(&dumps.join("a.soif"), 60 * 10);
    ok(&run(dir, &args));
    let r = report(&dir.join("r.json"));
    assert_eq!(taken(&r), ["d.soif"]);
    assert_eq!(r["totals"]["files_unchanged"], 3);
    assert_eq!(reason_of(&r, "a.soif").as_deref(), Some("touched"));
    assert_eq!(
        one::<i64>(&dir.join("c.db"), "SELECT count(*) FROM FILE"),
        4
    );
    assert_eq!(
        one::<String>(
            &dir.join("c.db"),
            "SELECT Title FROM FILE WHERE url = 'http://d/'"
        ),
        "D"
    );

    // Run 4: nothing new; no sink is opened, the run is still on record.
    let out = run(dir, &args[..args.len() - 1]);
    ok(&out);
    assert!(
        stderr(&out).contains("run 4: 0 files taken, 4 unchanged, 0 settling"),
        "{}",
        stderr(&out)
    );
    let state = dir.join("s.db");
    assert_eq!(
        one::<i64>(&state, "SELECT count(*) FROM runs WHERE status = 'ok'"),
        4
    );
    // The touched file keeps the run that read it.
    assert_eq!(
        one::<i64>(&state, "SELECT run FROM files WHERE path LIKE '%/a.soif'"),
        1
    );
}

fn reason_of(r: &Value, name: &str) -> Option<String> {
    r["sources"]
        .as_array()?
        .iter()
        .flat_map(|s| s["files"].as_array().unwrap().iter())
        .find(|f| f["path"].as_str().unwrap().ends_with(name))
        .map(|f| f["reason"].as_str().unwrap().to_string())
}

#[test]
fn dry_run_lists_decisions_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    for (n, secs) in [("old.soif", 3600), ("new.soif", 3600), ("hot.soif", 2)] {
        let p = dir.join("in").join(n);
        std::fs::write(&p, record(&format!("http://{n}/"), n)).unwrap();
        age(&p, secs);
    }
    let base = [
        "convert",
        "in",
        "--state",
        "s.db",
        "--to",
        "parquet",
        "-o",
        "out.parquet",
    ];
    // Before any run: no state is created by a dry run.
    let out = run(dir, &[&base[..], &["--dry-run"]].concat());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!dir.join("s.db").exists());
    assert_eq!(
        stdout(&out).matches("take\tnew\t").count(),
        2,
        "{}",
        stdout(&out)
    );
    // Take old.soif only (a file input), then ask about the directory.
    ok(&run(
        dir,
        &[
            "convert",
            "in/old.soif",
            "--state",
            "s.db",
            "--to",
            "null",
            "-q",
        ],
    ));
    let before = std::fs::read(dir.join("s.db")).unwrap();
    let out = run(
        dir,
        &[&base[..], &["--dry-run", "--report", "dry.json"]].concat(),
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    // The age of the file being written depends on how long the test took to get here.
    let lines: BTreeSet<String> = text
        .lines()
        .map(|l| {
            let tail = l.rsplit_once('/').unwrap().1;
            match tail.strip_prefix("hot.soif (modified ") {
                Some(rest) if rest.ends_with(" s ago, --settle 60 s)") => "hot.soif".into(),
                _ => tail.to_string(),
            }
        })
        .collect();
    let size = |n: &str| std::fs::metadata(dir.join("in").join(n)).unwrap().len();
    assert_eq!(
        lines,
        BTreeSet::from([
            "hot.soif".to_string(),
            format!("new.soif ({} bytes)", size("new.soif")),
            format!("old.soif ({} bytes)", size("old.soif")),
        ]),
        "{text}"
    );
    assert!(text.contains("skip\tsettling\t"), "{text}");
    assert!(text.contains("skip\tunchanged\t"), "{text}");
    assert!(text.contains("take\tnew\t"), "{text}");
    assert_eq!(std::fs::read(dir.join("s.db")).unwrap(), before);
    assert!(published(dir, ".parquet").is_empty());
    let r = report(&dir.join("dry.json"));
    assert_eq!(r["status"], "dry-run");
    assert_eq!(taken(&r), ["new.soif"]);
    // --settle 0: nothing waits.
    let out = run(dir, &[&base[..], &["--dry-run", "--settle", "0"]].concat());
    assert_eq!(stdout(&out).matches("take\tnew\t").count(), 2);
}

#[test]
fn report_names_every_source_with_counts_errors_and_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    let good = dir.join("in/good.soif");
    std::fs::write(&good, record("http://g/", "G") + &record("http://h/", "H")).unwrap();
    let bad = dir.join("bad.soif");
    std::fs::write(
        &bad,
        record("http://x/", "X") + "@FILE { http://y/\nTitle{99}:\tshort\n}\n",
    )
    .unwrap();
    age(&good, 3600);
    age(&bad, 3600);
    let args = [
        "convert",
        "in",
        "bad.soif",
        "--state",
        "s.db",
        "--to",
        "jsonl",
        "-o",
        "out.jsonl",
        "--on-error",
        "quarantine",
        "--quarantine",
        "rejected.soif",
        "--report",
        "r.json",
    ];
    let out = run(dir, &args);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let r = report(&dir.join("r.json"));
    assert_eq!(
        (r["status"].as_str(), r["exit_status"].as_i64()),
        (Some("rejected"), Some(3))
    );
    assert_eq!(r["run"], 1);
    for key in [
        "scan_seconds",
        "convert_seconds",
        "commit_seconds",
        "total_seconds",
    ] {
        assert!(r["timings"][key].as_f64().unwrap() >= 0.0, "{key}");
    }
    let sources = r["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2);
    assert_eq!(
        (
            &sources[0]["input"],
            &sources[0]["kind"],
            &sources[0]["records_out"]
        ),
        (
            &Value::from("in"),
            &Value::from("directory"),
            &Value::from(2)
        )
    );
    let b = &sources[1];
    assert_eq!(
        (
            &b["kind"],
            &b["records_in"],
            &b["records_out"],
            &b["rejected"]
        ),
        (
            &Value::from("file"),
            &Value::from(2),
            &Value::from(1),
            &Value::from(1)
        )
    );
    let errors = b["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].as_str().unwrap().contains("bad.soif"),
        "{errors:?}"
    );
    // One new file per run, and the quarantine too, named by the run.
    let outputs = r["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 2);
    for o in outputs {
        assert_eq!(o["written"], true);
        let p = Path::new(o["path"].as_str().unwrap());
        assert!(p.exists(), "{p:?}");
        assert!(
            p.file_name().unwrap().to_string_lossy().contains("-r1."),
            "{p:?}"
        );
    }
    assert_eq!(published(dir, ".jsonl").len(), 1);
    assert_eq!(
        published(dir, ".soif").len(),
        2,
        "bad.soif and the run's quarantine"
    );
    assert!(!all_files(dir).iter().any(|n| n.ends_with(".pending")));
    // The quarantine holds the bad record byte for byte.
    let q = published(dir, ".soif")
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("rejected.")
        })
        .unwrap();
    assert!(std::fs::read_to_string(q)
        .unwrap()
        .contains("Title{99}:\tshort"));
    // Nothing new: no new output file, no empty quarantine.
    let out = run(dir, &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(published(dir, ".jsonl").len(), 1);
    assert_eq!(published(dir, ".soif").len(), 2);
    let r = report(&dir.join("r.json"));
    assert_eq!(r["outputs"][0]["written"], false);
}

#[test]
fn soif_state_shows_history_and_forgets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("in/sub")).unwrap();
    for n in ["in/a.soif", "in/sub/b.soif", "in/sub/c.soif"] {
        let p = dir.join(n);
        std::fs::write(&p, record(&format!("http://{n}/"), "t")).unwrap();
        age(&p, 3600);
    }
    let args = [
        "convert", "in", "--state", "s.db", "--to", "null", "--report", "r.json", "-q",
    ];
    ok(&run(dir, &args));
    let out = run(dir, &["state", "s.db", "--files"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let size = std::fs::metadata(dir.join("in/sub/b.soif")).unwrap().len();
    assert!(
        text.contains(&format!("in/sub/b.soif  {size} bytes, 1 records, run 1")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("1    ") && l.contains(" ok ")),
        "{text}"
    );
    let out = run(dir, &["state", "s.db", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["runs"][0]["taken"].as_i64(), v["files"].as_i64()),
        (Some(3), Some(3))
    );
    let out = run(dir, &["state", "s.db", "--run", "1", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["files"].as_array().unwrap().len(), 3);
    assert_eq!(v["report"]["run"], 1);

    // Forget a directory and a file: exactly those are taken again.
    let out = run(
        dir,
        &[
            "state",
            "s.db",
            "--forget",
            "in/sub",
            "--forget",
            "in/a.soif",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("forgot 2 entries"),
        "{}",
        stderr(&out)
    );
    let out = run(dir, &["state", "s.db", "--forget", "in/nothing.soif"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("nothing by the name"),
        "{}",
        stderr(&out)
    );
    let out = run(dir, &["state", "s.db", "--forget", "in/sub/"]);
    assert_eq!(code(&out), 1, "already forgotten");
    ok(&run(dir, &args));
    assert_eq!(
        taken(&report(&dir.join("r.json"))),
        ["a.soif", "b.soif", "c.soif"]
    );
    ok(&run(dir, &args));
    assert!(taken(&report(&dir.join("r.json"))).is_empty());
    let out = run(dir, &["state", "missing.db"]);
    assert_eq!(code(&out), 1);
}

#[test]
fn what_state_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.soif"), record("http://a/", "A")).unwrap();
    let out = run(dir, &["convert", "-", "--state", "s.db", "--to", "null"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("cannot track stdin"),
        "{}",
        stderr(&out)
    );
    let out = run(
        dir,
        &["convert", "a.soif", "--state", "s.db", "--to", "jsonl"],
    );
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("needs -o FILE"), "{}", stderr(&out));
    let out = run(dir, &["convert", "a.soif", "--to", "jsonl", "--dry-run"]);
    assert_eq!(code(&out), 2);
    // A catalog given as the state by mistake is left alone.
    ok(&run(
        dir,
        &["convert", "a.soif", "--to", "sqlite", "-o", "cat.db"],
    ));
    let out = run(
        dir,
        &["convert", "a.soif", "--state", "cat.db", "--to", "null"],
    );
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("not a soif state store"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        one::<i64>(&dir.join("cat.db"), "SELECT count(*) FROM FILE"),
        1
    );
}

/// A directory of generated dumps big enough that a run with a slow SQLite sink (small
/// transactions) lasts long enough to be killed mid-way.
fn big_input(dir: &Path) {
    std::fs::create_dir(dir.join("dumps")).unwrap();
    for i in 0..4u64 {
        let p = dir.join(format!("dumps/part{i}.soif"));
        std::fs::write(&p, records(100 + i, 1500)).unwrap();
        age(&p, 3600);
    }
}

const PIPELINE: &str = r#"
[source]
inputs = ["dumps"]

[[sink]]
format = "sqlite"
output = "catalog.db"
batch_size = 10

[[sink]]
format = "parquet"
output = "out/records.parquet"

[state]
path = "state.db"
"#;

/// The records the latest catalog run has committed, when it is run number `run`.
fn committed(db: &Path, run: i64) -> i64 {
    Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| {
            c.query_row("SELECT records FROM soif_runs WHERE id = ?1", [run], |r| {
                r.get::<_, Option<i64>>(0)
            })
        })
        .ok()
        .flatten()
        .unwrap_or(0)
}

/// Starts `soif run pipeline.toml` in `dir`.
fn start(dir: &Path) -> std::process::Child {
    soif()
        .current_dir(dir)
        .args(["run", "pipeline.toml", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until catalog run `run` has committed at least `n` records; false when the
/// process ended first.
fn wait_for(child: &mut std::process::Child, db: &Path, run: i64, n: i64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if committed(db, run) >= n {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        assert!(
            Instant::now() < deadline,
            "run {run} never committed {n} records"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn runs_killed_at_several_points_then_rerun_equal_an_uninterrupted_run() {
    let total = 6000;
    // The uninterrupted run.
    let clean = tempfile::tempdir().unwrap();
    big_input(clean.path());
    std::fs::create_dir(clean.path().join("out")).unwrap();
    std::fs::write(clean.path().join("pipeline.toml"), PIPELINE).unwrap();
    ok(&run(clean.path(), &["run", "pipeline.toml", "-q"]));
    let clean_db = clean.path().join("catalog.db");
    assert_eq!(one::<i64>(&clean_db, "SELECT count(*) FROM FILE"), total);
    let clean_rows = parquet_rows(&published(&clean.path().join("out"), ".parquet"));
    assert_eq!(clean_rows.len() as i64, total);

    // Killed early, mid-way and late, one run after the other.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    big_input(dir);
    std::fs::create_dir(dir.join("out")).unwrap();
    std::fs::write(dir.join("pipeline.toml"), PIPELINE).unwrap();
    let db = dir.join("catalog.db");
    let mut killed = 0;
    for (run_no, at) in [(1, 50), (2, total / 2), (3, total * 3 / 4)] {
        let mut child = start(dir);
        if wait_for(&mut child, &db, run_no, at) {
            child.kill().unwrap(); // SIGKILL
            killed += 1;
        }
        child.wait().unwrap();
        // Whatever the kill left: no published output, a consistent catalog.
        assert!(published(&dir.join("out"), ".parquet").is_empty());
        assert_eq!(one::<String>(&db, "PRAGMA integrity_check"), "ok");
    }
    assert!(killed >= 2, "the runs finished before they could be killed");
    // The last killed run left its outputs under temporary names only.
    let left = all_files(&dir.join("out"));
    assert!(
        !left.is_empty() && left.iter().all(|n| n.starts_with('.')),
        "{left:?}"
    );
    let state = dir.join("state.db");
    assert_eq!(
        one::<i64>(&state, "SELECT count(*) FROM files"),
        0,
        "a killed run recorded nothing as taken"
    );

    // The next run recovers (temporary files removed, killed runs marked) and takes all.
    let out = run(dir, &["run", "pipeline.toml", "--report", "r.json"]);
    ok(&out);
    assert!(
        stderr(&out).contains("was killed before its outputs were committed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        one::<i64>(
            &state,
            "SELECT count(*) FROM runs WHERE status = 'interrupted'"
        ),
        3
    );
    assert_eq!(taken(&report(&dir.join("r.json"))).len(), 4);
    assert_eq!(dump(&db), dump(&clean_db));
    let files = published(&dir.join("out"), ".parquet");
    assert_eq!(files.len(), 1, "one file per successful run");
    assert!(files[0].to_string_lossy().contains("-r4."), "{files:?}");
    let rows = parquet_rows(&files);
    assert_eq!(rows, clean_rows);
    let urls: BTreeSet<String> = rows
        .iter()
        .map(|r| serde_json::from_str::<Value>(r).unwrap()["url"].to_string())
        .collect();
    assert_eq!(urls.len(), rows.len(), "no record twice");
    // Only the published file and nothing temporary is left.
    assert_eq!(
        all_files(&dir.join("out")).len(),
        1,
        "{:?}",
        all_files(&dir.join("out"))
    );

    // And the run after that takes nothing.
    ok(&run(dir, &["run", "pipeline.toml", "-q"]));
    assert_eq!(published(&dir.join("out"), ".parquet").len(), 1);
    assert_eq!(dump(&db), dump(&clean_db));
}

#[test]
fn a_second_run_is_refused_at_once_and_a_killed_runs_lock_is_taken_over() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    big_input(dir);
    std::fs::create_dir(dir.join("out")).unwrap();
    std::fs::write(dir.join("pipeline.toml"), PIPELINE).unwrap();
    let mut first = start(dir);
    assert!(
        wait_for(&mut first, &dir.join("catalog.db"), 1, 20),
        "the first run ended early"
    );
    let out = run(dir, &["run", "pipeline.toml", "--report", "busy.json"]);
    assert_eq!(code(&out), 75, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("another soif run is using this state"),
        "{err}"
    );
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    let r = report(&dir.join("busy.json"));
    assert_eq!(
        (r["status"].as_str(), r["exit_status"].as_i64()),
        (Some("already-running"), Some(75))
    );
    // `soif state --forget` is refused too; reading is not.
    let out = run(dir, &["state", "state.db", "--forget", "dumps"]);
    assert_eq!(code(&out), 75, "{}", stderr(&out));
    assert_eq!(code(&run(dir, &["state", "state.db"])), 0);
    // Killed: its lock goes with it, and the next run proceeds.
    first.kill().unwrap();
    first.wait().unwrap();
    ok(&run(dir, &["run", "pipeline.toml", "-q"]));
    assert_eq!(
        one::<i64>(&dir.join("catalog.db"), "SELECT count(*) FROM FILE"),
        6000
    );
}

#[test]
fn a_run_killed_while_committing_is_completed_by_the_next_not_taken_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("in")).unwrap();
    for n in ["a.soif", "b.soif"] {
        let p = dir.join("in").join(n);
        std::fs::write(&p, record(&format!("http://{n}/"), n)).unwrap();
        age(&p, 3600);
    }
    let args = [
        "convert",
        "in",
        "--state",
        "s.db",
        "--to",
        "parquet",
        "-o",
        "r.parquet",
        "-q",
    ];
    ok(&run(dir, &args));
    let files = published(dir, ".parquet");
    assert_eq!(files.len(), 1);
    // Put the state back where a kill between staging and completing leaves it (step 4
    // of the protocol committed, step 5 not begun): the run `committing`, its output
    // ready under its temporary name, its progress staged but not applied.
    let state = dir.join("s.db");
    let temp: String = one(&state, "SELECT temp FROM run_outputs WHERE run = 1");
    std::fs::rename(&files[0], &temp).unwrap();
    Connection::open(&state)
        .unwrap()
        .execute_batch(
            "UPDATE runs SET status = 'committing', finished = NULL WHERE id = 1;
             UPDATE run_outputs SET state = 'ready' WHERE run = 1;
             DELETE FROM files;",
        )
        .unwrap();
    let out = run(
        dir,
        &[&args[..args.len() - 1], &["--report", "r.json"]].concat(),
    );
    ok(&out);
    assert!(
        stderr(&out).contains("run 1 was killed while committing; it is now complete"),
        "{}",
        stderr(&out)
    );
    // Published under its final name; the inputs were not taken again.
    assert_eq!(published(dir, ".parquet"), files);
    assert!(!Path::new(&temp).exists());
    assert!(taken(&report(&dir.join("r.json"))).is_empty());
    assert_eq!(
        one::<i64>(&state, "SELECT count(*) FROM files WHERE run = 1"),
        2
    );
    assert_eq!(
        one::<String>(&state, "SELECT status FROM runs WHERE id = 1"),
        "ok"
    );
    assert_eq!(parquet_rows(&files).len(), 2);
}
