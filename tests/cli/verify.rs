//! `soif verify`: a clean migration verifies (exit 0); a target damaged in each way — a
//! record deleted, a value changed, a record added, a deletion not applied, the file
//! truncated — is reported with exactly those records (exit 3). docs/verify.md.

use crate::common::{code, run, stderr, stdout};
use std::path::{Path, PathBuf};

/// Five records, then a Harvest `@DELETE` of the fifth.
const RECORDS: &str = "@FILE { http://x/1\nTitle{3}:\tOne\n}\n\
@FILE { http://x/2\nTitle{3}:\tTwo\nAuthor{3}:\tAnn\n}\n\
@FILE { http://x/3\nTitle{5}:\tThree\n}\n\
@DOCUMENT { http://x/4\nTitle{4}:\tFour\n}\n\
@FILE { http://x/5\nTitle{4}:\tFive\n}\n";
const DELETIONS: &str = "@DELETE {\n@FILE { http://x/5\n}\n}\n";

/// What `--list` shows of the damage every test does: http://x/1 removed, http://x/2's
/// Title changed, http://x/9 added, the deletion of http://x/5 not applied.
const DAMAGE: [&str; 4] = [
    "changed\tFILE\thttp://x/2\tTitle",
    "deletion_not_applied\tFILE\thttp://x/5",
    "extra\tDOCUMENT\thttp://x/9",
    "missing\tFILE\thttp://x/1",
];

/// The sources in `dir`, as arguments.
fn sources(dir: &Path) -> Vec<String> {
    let a = dir.join("a.soif");
    let b = dir.join("b.soif");
    std::fs::write(&a, RECORDS).unwrap();
    std::fs::write(&b, DELETIONS).unwrap();
    vec![a.display().to_string(), b.display().to_string()]
}

fn convert(dir: &Path, to: &str, name: &str) -> PathBuf {
    let out = dir.join(name);
    let mut args = vec!["convert".to_string()];
    args.extend(sources(dir));
    args.extend(["--to", to, "-o", out.to_str().unwrap(), "-q"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run(&args, b"");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    out
}

fn verify(dir: &Path, target: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["verify".to_string()];
    args.extend(sources(dir));
    args.extend(["--against".to_string(), target.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&args, b"")
}

/// The `--list` lines, sorted.
fn listed(out: &std::process::Output) -> Vec<String> {
    let mut lines: Vec<String> = stdout(out).lines().map(String::from).collect();
    lines.sort();
    lines
}

#[test]
fn a_clean_migration_verifies() {
    let dir = tempfile::tempdir().unwrap();
    for (to, name, summary) in [
        ("sqlite", "c.db", "4 matched, 0 missing, 0 extra, 0 changed, 0 deletions not applied, 1 deletions applied"),
        ("jsonl", "c.jsonl", "6 matched, 0 missing, 0 extra, 0 changed, 0 deletions not applied"),
    ] {
        let target = convert(dir.path(), to, name);
        let out = verify(dir.path(), &target, &["--list"]);
        assert_eq!(code(&out), 0, "{to}: {}", stderr(&out));
        assert!(stderr(&out).contains(summary), "{to}: {}", stderr(&out));
        assert!(stderr(&out).contains("soif verify: match"), "{}", stderr(&out));
        assert_eq!(stdout(&out), "", "{to}: nothing listed");
    }
}

/// The damage of [`DAMAGE`], done with SQL as a user would (new rows with a datestamp, as
/// the OAI-PMH provider needs one).
fn damage_catalog(db: &Path) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(
        "DELETE FROM \"FILE\" WHERE url = 'http://x/1';
         UPDATE \"FILE\" SET \"Title\" = 'Deux' WHERE url = 'http://x/2';
         INSERT INTO \"DOCUMENT\"(url, soif_datestamp, \"Title\") VALUES ('http://x/9', '2026-11-26T00:00:00Z', 'Nine');
         INSERT INTO \"FILE\"(url, soif_datestamp, \"Title\") VALUES ('http://x/5', '2026-11-26T00:00:00Z', 'Five');",
    )
    .unwrap();
}

#[test]
fn a_damaged_catalog_shows_exactly_its_damage() {
    let dir = tempfile::tempdir().unwrap();
    let db = convert(dir.path(), "sqlite", "c.db");
    damage_catalog(&db);
    let report = dir.path().join("report.json");
    let out = verify(
        dir.path(),
        &db,
        &["--list", "--report", report.to_str().unwrap()],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(listed(&out), DAMAGE);
    assert!(
        stderr(&out).contains("FILE http://x/2: Title: \"Two\" -> \"Deux\""),
        "{}",
        stderr(&out)
    );
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(json["verdict"], "mismatch");
    let t = &json["targets"][0];
    assert_eq!(t["verdict"], "mismatch");
    assert_eq!(t["counts"]["matched"], 2);
    assert_eq!(t["counts"]["missing"], 1);
    assert_eq!(t["counts"]["extra"], 1);
    assert_eq!(t["counts"]["changed"], 1);
    assert_eq!(t["counts"]["deletion_not_applied"], 1);
    assert_eq!(t["examples"]["changed"][0]["change"]["target"], "Deux");
}

#[test]
fn a_damaged_json_lines_file_shows_exactly_its_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = convert(dir.path(), "jsonl", "c.jsonl");
    damage_lines(&path);
    let out = verify(dir.path(), &path, &["--list"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(listed(&out), DAMAGE);
}

/// Cuts a target `after` bytes into its fourth record (http://x/4): that record and what
/// follows are reported lost, and the record cut short unreadable.
fn truncated_in_the_fourth_record(to: &str, name: &str, after: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = convert(dir.path(), to, name);
    let bytes = std::fs::read(&path).unwrap();
    let fourth = bytes.windows(10).position(|w| w == b"http://x/4").unwrap();
    std::fs::write(&path, &bytes[..fourth + after]).unwrap();
    let out = verify(dir.path(), &path, &["--list"]);
    assert_eq!(code(&out), 3, "{to}: {}", stderr(&out));
    assert_eq!(
        listed(&out),
        [
            "deletion_not_applied\tFILE\thttp://x/5",
            "missing\tDOCUMENT\thttp://x/4",
            "missing\tFILE\thttp://x/5",
        ],
        "{to}"
    );
    assert!(
        stderr(&out).contains("1 unreadable"),
        "{to}: {}",
        stderr(&out)
    );
}

#[test]
fn a_truncated_json_lines_file_shows_the_records_lost() {
    truncated_in_the_fourth_record("jsonl", "c.jsonl", 0);
}

#[test]
fn a_truncated_catalog_fails() {
    let dir = tempfile::tempdir().unwrap();
    let db = convert(dir.path(), "sqlite", "c.db");
    let bytes = std::fs::read(&db).unwrap();
    std::fs::write(&db, &bytes[..bytes.len() / 2]).unwrap();
    let out = verify(dir.path(), &db, &[]);
    assert_ne!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("c.db"), "{}", stderr(&out));
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("target.xyz");
    std::fs::write(&odd, "").unwrap();
    let out = verify(dir.path(), &odd, &[]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("give --to"), "{}", stderr(&out));
    let out = verify(dir.path(), &odd, &["--to", "csv"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = run(&["verify", "x.soif"], b"");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

/// Damages a JSON Lines file: http://x/1 dropped, http://x/2's Title changed, the
/// deletion of http://x/5 dropped, http://x/9 added.
fn damage_lines(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.contains("http://x/1\"") && !l.contains("\"delete\""))
        .map(|l| l.replace("\"Two\"", "\"Deux\""))
        .collect();
    lines
        .push(r#"{"template":"DOCUMENT","url":"http://x/9","attributes":{"Title":"Nine"}}"#.into());
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// Rewrites a target through JSON Lines with the same damage as above: http://x/1
/// dropped, http://x/2's Title changed, the deletion of http://x/5 dropped, http://x/9
/// added (soif itself writes the damaged file back in the target's format).
fn damage(dir: &Path, target: &Path, to: &str) {
    let plain = dir.join("damaged.jsonl");
    let o = run(
        &[
            "convert",
            target.to_str().unwrap(),
            "--to",
            "jsonl",
            "-o",
            plain.to_str().unwrap(),
            "-q",
        ],
        b"",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    damage_lines(&plain);
    let o = run(
        &[
            "convert",
            plain.to_str().unwrap(),
            "--to",
            to,
            "-o",
            target.to_str().unwrap(),
            "-q",
        ],
        b"",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn parquet_arrow_and_soif_targets_verify_and_show_their_damage() {
    for (to, name) in [
        ("parquet", "c.parquet"),
        ("arrow", "c.arrow"),
        ("soif", "c.soif"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let target = convert(dir.path(), to, name);
        let out = verify(dir.path(), &target, &["--list"]);
        assert_eq!(code(&out), 0, "{to}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("6 matched, 0 missing"),
            "{to}: {}",
            stderr(&out)
        );
        damage(dir.path(), &target, to);
        let out = verify(dir.path(), &target, &["--list"]);
        assert_eq!(code(&out), 3, "{to}: {}", stderr(&out));
        assert_eq!(listed(&out), DAMAGE, "{to}");
    }
}

#[test]
fn truncated_files_do_not_verify() {
    for (to, name) in [
        ("parquet", "c.parquet"),
        ("arrow", "c.arrow"),
        ("soif", "c.soif"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let target = convert(dir.path(), to, name);
        let bytes = std::fs::read(&target).unwrap();
        std::fs::write(&target, &bytes[..bytes.len() * 2 / 3]).unwrap();
        let out = verify(dir.path(), &target, &["--list"]);
        assert_ne!(code(&out), 0, "{to}: {}", stderr(&out));
        assert!(stderr(&out).contains(name), "{to}: {}", stderr(&out));
    }
    // SOIF cut inside the fourth object.
    truncated_in_the_fourth_record("soif", "c.soif", 12);
}

#[test]
fn a_directory_of_per_run_files_is_one_target() {
    let dir = tempfile::tempdir().unwrap();
    let srcs = sources(dir.path());
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    for (i, s) in srcs.iter().enumerate() {
        let out = runs.join(format!("run-{i}.parquet"));
        let o = run(
            &[
                "convert",
                s,
                "--to",
                "parquet",
                "-o",
                out.to_str().unwrap(),
                "-q",
            ],
            b"",
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let out = verify(dir.path(), &runs, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("6 matched"), "{}", stderr(&out));
    std::fs::remove_file(runs.join("run-1.parquet")).unwrap();
    let out = verify(dir.path(), &runs, &["--list"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(listed(&out), ["deletion_not_applied\tFILE\thttp://x/5"]);
}

#[test]
fn a_pipeline_file_verifies_each_of_its_sinks() {
    let dir = tempfile::tempdir().unwrap();
    let srcs = sources(dir.path());
    let toml = format!(
        "[source]\ninputs = [{:?}, {:?}]\n\n[[sink]]\nformat = \"sqlite\"\noutput = \"c.db\"\n\n\
         [[sink]]\nformat = \"jsonl\"\noutput = \"c.jsonl\"\n\n[[sink]]\nformat = \"csv\"\noutput = \"c.csv\"\n",
        srcs[0], srcs[1]
    );
    std::fs::write(dir.path().join("p.toml"), toml).unwrap();
    let o = crate::common::run_in(Some(dir.path()), &["run", "p.toml", "-q"], b"");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = crate::common::run_in(Some(dir.path()), &["verify", "p.toml"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("match: c.db (sqlite)"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("match: c.jsonl (jsonl)"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("not checked"), "{}", stderr(&out));
    let conn = rusqlite::Connection::open(dir.path().join("c.db")).unwrap();
    conn.execute("DELETE FROM \"FILE\" WHERE url = 'http://x/3'", [])
        .unwrap();
    drop(conn);
    let out = crate::common::run_in(Some(dir.path()), &["verify", "p.toml", "--list"], b"");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "# c.db\nmissing\tFILE\thttp://x/3\n# c.jsonl\n"
    );
}

#[test]
fn a_manifest_checked_again_fails_once_the_target_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let db = convert(dir.path(), "sqlite", "c.db");
    let manifest = dir.path().join("signoff.json");
    let out = verify(dir.path(), &db, &["--manifest", manifest.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    assert_eq!(m["targets"][0]["records"], 4);
    assert_eq!(m["sources"].as_array().unwrap().len(), 2);
    assert_eq!(m["sources"][0]["blake3"].as_str().unwrap().len(), 64);
    let check = || {
        run(
            &["verify", "--check-manifest", manifest.to_str().unwrap()],
            b"",
        )
    };
    let out = check();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("still holds"), "{}", stderr(&out));
    // Rewriting the same content (another page layout) still holds.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("VACUUM").unwrap();
    let out = check();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    conn.execute(
        "UPDATE \"FILE\" SET \"Title\" = 'Uno' WHERE url = 'http://x/1'",
        [],
    )
    .unwrap();
    drop(conn);
    let out = check();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("no longer holds"), "{}", stderr(&out));
    assert!(stderr(&out).contains("target"), "{}", stderr(&out));
    // A source changed since the sign-off is told too.
    std::fs::write(dir.path().join("a.soif"), "@FILE { http://x/1\n}\n").unwrap();
    let out = check();
    assert!(stderr(&out).contains("source"), "{}", stderr(&out));
}

#[test]
fn served_catalogs_verify_over_rdm_and_oai_pmh() {
    let serve = crate::common::Serve::start("books", "secret", &[]);
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["convert".to_string()];
    args.extend(sources(dir.path()));
    args.extend(["--to", "sqlite", "-o", serve.db.to_str().unwrap(), "-q"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run(&args, b"");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rdm = serve.csid();
    let oai = |prefix: &str| {
        format!(
            "oai+http://{}/oai/books?metadataPrefix={prefix}",
            serve.addr
        )
    };
    let (soif, dc) = (oai("soif"), oai("oai_dc"));
    for target in [&rdm, &soif, &dc] {
        let out = verify(dir.path(), Path::new(target), &["--list"]);
        assert_eq!(code(&out), 0, "{target}: {}", stderr(&out));
        assert!(stderr(&out).contains("4 matched"), "{}", stderr(&out));
    }
    damage_catalog(&serve.db);
    for target in [&rdm, &soif] {
        let out = verify(dir.path(), Path::new(target), &["--list"]);
        assert_eq!(code(&out), 3, "{target}: {}", stderr(&out));
        assert_eq!(listed(&out), DAMAGE, "{target}");
    }
    // In oai_dc the records are their Dublin Core values: the Title changed is dc:title.
    let report = dir.path().join("dc.json");
    let out = verify(
        dir.path(),
        Path::new(&dc),
        &["--list", "--report", report.to_str().unwrap()],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let mut expected = DAMAGE.map(String::from);
    expected[0] = "changed\tFILE\thttp://x/2\tdc:title".into();
    assert_eq!(listed(&out), expected);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let change = &json["targets"][0]["examples"]["changed"][0]["change"];
    assert_eq!(
        (&change["source"], &change["target"]),
        (&"Two".into(), &"Deux".into())
    );
    assert_eq!(json["targets"][0]["counts"]["matched"], 2);
    // Only part of a repository cannot be compared with all the sources.
    let out = verify(dir.path(), Path::new(&format!("{dc}&set=FILE")), &[]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no set, from or until"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn with_the_state_only_the_files_taken_are_expected() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    std::fs::create_dir(&dumps).unwrap();
    std::fs::write(dumps.join("a.soif"), RECORDS).unwrap();
    let state = dir.path().join("s.state");
    let db = dir.path().join("c.db");
    let (d, s, o) = (
        dumps.to_str().unwrap(),
        state.to_str().unwrap(),
        db.to_str().unwrap(),
    );
    let out = run(
        &[
            "convert", d, "--settle", "0s", "--state", s, "--to", "sqlite", "-o", o, "-q",
        ],
        b"",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // A dump that arrived after the run: not in the catalog yet, and not expected.
    std::fs::write(
        dumps.join("b.soif"),
        "@FILE { http://x/8\nTitle{5}:\tEight\n}\n",
    )
    .unwrap();
    let out = run(&["verify", d, "--against", o, "--state", s], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("1 input files not taken"),
        "{}",
        stderr(&out)
    );
    let out = run(&["verify", d, "--against", o, "--list"], b"");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(stdout(&out), "missing\tFILE\thttp://x/8\n");
}

/// A record the decoder refuses (no `:` after the size) and one without a URL, which
/// the SQLite sink refuses.
const REFUSED: &str = "@FILE { http://x/6\nTitle{3}\tSix\n}\n@FILE { -\nTitle{1}:\tX\n}\n";

#[test]
fn the_conversions_error_policy_says_what_the_target_holds() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).display().to_string();
    std::fs::write(d("a.soif"), format!("{RECORDS}{REFUSED}")).unwrap();
    std::fs::write(d("b.soif"), DELETIONS).unwrap();
    let (a, b, db, q) = (d("a.soif"), d("b.soif"), d("c.db"), d("q.soif"));
    let o = run(
        &[
            "convert",
            &a,
            &b,
            "--to",
            "sqlite",
            "-o",
            &db,
            "--quarantine",
            &q,
            "-q",
        ],
        b"",
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let quarantined = std::fs::read(&q).unwrap();
    let verify = |extra: &[&str]| {
        let mut args = vec!["verify", &a, &b, "--against", &db];
        args.extend(extra);
        run(&args, b"")
    };
    // Under fail (the default) the conversion stops at the first: the target cannot
    // be what it writes.
    let out = verify(&[]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    says(&out, "2 records would be rejected by the conversion (under --on-error fail it stops at the first)");
    // Under skip they are not expected in the target, and reported with their reasons.
    let out = verify(&["--on-error", "skip"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    says(&out, "4 matched");
    says(&out, "record has no URL");
    says(&out, "expected `:<TAB>`");
    // Under quarantine its file must hold them, byte for byte; verify leaves it as it is.
    let report = d("r.json");
    let out = verify(&["--quarantine", &q, "--report", &report]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    says(&out, "holds the rejected records byte for byte");
    assert_eq!(std::fs::read(&q).unwrap(), quarantined);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(json["targets"][0]["policy"], "quarantine");
    assert_eq!(json["targets"][0]["quarantine"]["holds"], true);
    assert_eq!(json["targets"][0]["sources"]["rejected"], 2);
    // A quarantine that lost a record, or is gone, does not hold.
    let first = quarantined.windows(2).position(|w| w == b"}\n").unwrap() + 2;
    std::fs::write(&q, &quarantined[first..]).unwrap();
    let out = verify(&["--quarantine", &q]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    says(&out, "does not hold");
    std::fs::remove_file(&q).unwrap();
    let out = verify(&["--quarantine", &q]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    // A pipeline's [errors] is the conversion's policy too.
    let toml = format!(
        "[source]\ninputs = [{a:?}, {b:?}]\n\n[errors]\non_error = \"skip\"\n\n\
         [[sink]]\nformat = \"sqlite\"\noutput = {db:?}\n"
    );
    std::fs::write(d("p.toml"), &toml).unwrap();
    let out = run(&["verify", &d("p.toml")], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    std::fs::write(d("p.toml"), toml.replace("skip", "fail")).unwrap();
    let out = run(&["verify", &d("p.toml")], b"");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    // A policy without its file is a usage error.
    let out = verify(&["--on-error", "quarantine"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

/// Asserts that the summary (stderr) says `text`.
fn says(out: &std::process::Output, text: &str) {
    assert!(stderr(out).contains(text), "{}", stderr(out));
}
