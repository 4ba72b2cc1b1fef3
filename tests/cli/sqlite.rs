//! `soif convert --to sqlite` end to end: the seed examples, an `@DELETE` envelope, an
//! idempotent re-run, a record without URL under `--on-error skip`, and a process killed
//! (SIGKILL) mid-load, then re-run to the same content as a clean run.

use crate::common;

use common::one;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags};
use soif_codecs::generate::Generator;
use soif_codecs::soif::encode_record;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn soif() -> Command {
    Command::new(env!("CARGO_BIN_EXE_soif"))
}

fn fixture(path: &str) -> String {
    format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

fn convert(inputs: &[&str], db: &Path, extra: &[&str]) -> std::process::Output {
    soif()
        .arg("convert")
        .args(inputs)
        .args(["--to", "sqlite", "-o"])
        .arg(db)
        .args(extra)
        .output()
        .unwrap()
}

fn ok(out: std::process::Output) {
    assert!(
        out.status.success(),
        "soif failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The records and layout (not the run log), in a stable order.
fn dump(db: &Path) -> Vec<Vec<SqlValue>> {
    common::dump(&Connection::open(db).unwrap())
}

#[test]
fn seeds_delete_envelope_and_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    let docs = fixture("rfc2655/documents.soif");
    let dc = fixture("rfc2655/dublin-core.soif");
    let harvest = fixture("harvest/ecrc-93-10.soif");
    ok(convert(&[&docs, &dc, &harvest], &db, &["-q"]));
    assert_eq!(
        one::<String>(
            &db,
            "SELECT \"Author-1\" || '; ' || \"Author-2\" || '; ' || \"Author-3\" FROM DOCUMENT
             WHERE url = 'http://home.netscape.com/eng/ssl3/ssl-toc.html'"
        ),
        "Alan O. Freier; Philip Karlton; Paul C. Kocher"
    );
    assert_eq!(
        one::<String>(&db, "SELECT \"Embed<1>-Type\" FROM FILE"),
        "PostScript"
    );
    assert_eq!(
        one::<String>(&db, "SELECT LANGUAGE FROM \"Dublin-Core-1\""),
        "eng"
    );
    let first = dump(&db);

    // The same input again: same content, a second run on record.
    ok(convert(
        &[&docs, &dc, &harvest],
        &db,
        &["-q", "--batch-size", "1"],
    ));
    assert_eq!(dump(&db), first);
    assert_eq!(
        one::<i64>(&db, "SELECT count(*) FROM soif_runs WHERE status = 'ok'"),
        2
    );

    // A Harvest collector envelope deleting the FILE record.
    let envelope = dir.path().join("delete.soif");
    std::fs::write(
        &envelope,
        "@DELETE {\n@FILE { ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z\n}\n}\n\
         @REFRESH {\n}\n@UPDATE {\n}\n",
    )
    .unwrap();
    ok(convert(&[envelope.to_str().unwrap()], &db, &["-q"]));
    assert_eq!(one::<i64>(&db, "SELECT count(*) FROM FILE"), 0);
    assert_eq!(one::<i64>(&db, "SELECT count(*) FROM soif_deletions"), 1);
    assert_eq!(
        one::<i64>(&db, "SELECT deleted FROM soif_runs WHERE id = 3"),
        1
    );
}

#[test]
fn record_without_url_is_rejected_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.soif");
    std::fs::write(
        &input,
        "@SCHEMA { -\nSOIF-Attribute-1{5}:\tTitle\n}\n@DOCUMENT { http://x/\nTitle{1}:\tx\n}\n",
    )
    .unwrap();
    let db = dir.path().join("r.db");
    let out = convert(&[input.to_str().unwrap()], &db, &["--on-error", "skip"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no URL"));
    assert_eq!(one::<i64>(&db, "SELECT count(*) FROM DOCUMENT"), 1);
}

/// Waits until the run has committed at least `n` records (the database is read while
/// the loader writes it: WAL mode). Panics after a generous deadline.
fn wait_for_commits(db: &Path, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let got = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| c.query_row("SELECT max(records) FROM soif_runs", [], |r| r.get(0)))
            .ok()
            .flatten()
            .unwrap_or(0i64);
        if got >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the loader never committed {n} records"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn killed_mid_load_then_rerun_converges() {
    let dir = tempfile::tempdir().unwrap();
    let mut generator = Generator::new(7);
    let (mut head, mut tail) = (Vec::new(), Vec::new());
    for i in 0..600 {
        encode_record(
            &generator.record(),
            if i < 300 { &mut head } else { &mut tail },
        );
    }
    let input = dir.path().join("input.soif");
    std::fs::write(&input, [head.as_slice(), tail.as_slice()].concat()).unwrap();
    let input = input.to_str().unwrap().to_string();

    let clean = dir.path().join("clean.db");
    ok(convert(&[&input], &clean, &["-q", "--batch-size", "25"]));
    assert_eq!(one::<i64>(&clean, "SELECT count(*) FROM FILE"), 600);

    // The loader reads stdin; it gets the first half and the pipe stays open, so it is
    // certainly mid-run when it is killed.
    let crash = dir.path().join("crash.db");
    let (mut child, stdin) = live_loader(&crash, &head, 25);
    wait_for_commits(&crash, 100);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    drop(stdin);

    // Consistent: whole batches only, matching the run's own committed count.
    assert_eq!(one::<String>(&crash, "PRAGMA integrity_check"), "ok");
    assert_eq!(
        one::<String>(&crash, "SELECT status FROM soif_runs"),
        "running"
    );
    let rows: i64 = one(&crash, "SELECT count(*) FROM FILE");
    assert_eq!(rows, one::<i64>(&crash, "SELECT upserted FROM soif_runs"));
    assert!((100..=300).contains(&rows) && rows % 25 == 0, "{rows} rows");

    // Re-running the whole input converges to the clean run's content.
    ok(convert(&[&input], &crash, &["-q", "--batch-size", "25"]));
    assert_eq!(dump(&crash), dump(&clean));
    assert_eq!(
        one::<String>(&crash, "SELECT status FROM soif_runs WHERE id = 2"),
        "ok"
    );
    // The next run found the killed one still `running` with no loader alive.
    assert_eq!(
        one::<String>(&crash, "SELECT status FROM soif_runs WHERE id = 1"),
        "interrupted"
    );
}

/// A loader reading stdin in batches of `batch` records, fed `head` with the pipe left
/// open, so it stays mid-run into `db` until it is killed.
fn live_loader(
    db: &Path,
    head: &[u8],
    batch: u32,
) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = soif()
        .args([
            "convert",
            "-",
            "--to",
            "sqlite",
            "-q",
            "--batch-size",
            &batch.to_string(),
            "-o",
        ])
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(head).unwrap();
    stdin.flush().unwrap();
    (child, stdin)
}

#[test]
fn a_killed_load_is_marked_interrupted_by_the_next_but_a_live_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let docs = fixture("rfc2655/documents.soif");
    ok(convert(&[&docs], &db, &["-q"]));
    let mut generator = Generator::new(3);
    let mut head = Vec::new();
    for _ in 0..50 {
        encode_record(&generator.record(), &mut head);
    }
    let status = |id: i64| {
        one::<String>(
            &db,
            &format!("SELECT status FROM soif_runs WHERE id = {id}"),
        )
    };

    // Run 2 is alive (waiting on its stdin) while run 3 loads: run 2 stays `running`.
    let (mut child, stdin) = live_loader(&db, &head, 10);
    wait_for_commits(&db, 40);
    ok(convert(
        &[&fixture("harvest/ecrc-93-10.soif")],
        &db,
        &["-q"],
    ));
    assert_eq!(status(2), "running");
    assert_eq!(status(3), "ok");

    // Killed: the next run marks it, says so, and keeps what it committed.
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    drop(stdin);
    let out = convert(&[&docs], &db, &[]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    ok(out);
    assert!(
        err.contains("soif: warning: sqlite output: 1 earlier run(s) left `running` in soif_runs by a killed load marked `interrupted`"),
        "{err}"
    );
    assert_eq!(status(2), "interrupted");
    assert_eq!(status(4), "ok");
    assert!(one::<i64>(&db, "SELECT upserted FROM soif_runs WHERE id = 2") >= 40);
    // The lock file that tells live loads from killed ones stays beside the database.
    assert!(dir.path().join("c.db.soif-lock").exists());
}

#[test]
fn collapsed_records_store_json_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let docs = fixture("rfc2655/documents.soif");
    let harvest = fixture("harvest/ecrc-93-10.soif");
    ok(convert(&[&docs, &harvest], &db, &["-q", "-t", "collapse"]));
    assert_eq!(
        one::<String>(
            &db,
            "SELECT Author FROM DOCUMENT WHERE url = 'http://home.netscape.com/eng/ssl3/ssl-toc.html'"
        ),
        r#"["Alan O. Freier","Philip Karlton","Paul C. Kocher"]"#
    );
    assert_eq!(
        one::<String>(&db, "SELECT json_extract(Embed, '$[0].Type') FROM FILE"),
        "PostScript"
    );
    assert_eq!(
        one::<i64>(&db, "SELECT count(*) FROM soif_columns WHERE json = 1"),
        2
    );
}

/// A file that is not a database is refused with what it is, before anything is written.
#[test]
fn a_file_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.db");
    std::fs::write(&db, "these are my notes, not a database\n").unwrap();
    let docs = fixture("rfc2655/documents.soif");
    let out = convert(&[&docs], &db, &["-q"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("notes.db") && err.contains("file is not a database"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&db).unwrap(),
        "these are my notes, not a database\n",
        "left as it was"
    );
}
