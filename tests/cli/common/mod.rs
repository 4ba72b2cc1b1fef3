//! Helpers for the end-to-end tests: run the built `soif` binary, find fixtures, read the
//! summary line.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The `soif` binary cargo built for these tests.
pub fn soif() -> Command {
    Command::new(env!("CARGO_BIN_EXE_soif"))
}

/// A fixture under `tests/fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Runs `soif ARGS` with `stdin` as its standard input.
pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    run_in(None, args, stdin)
}

/// Runs `soif ARGS` in `dir`.
pub fn run_in(dir: Option<&Path>, args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = soif();
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let mut child = cmd.spawn().expect("the soif binary runs");
    let mut input = child.stdin.take().expect("stdin is piped");
    let data = stdin.to_vec();
    // Written from a thread so a large input cannot deadlock against a full stdout.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("soif finishes");
    let _ = writer.join();
    out
}

/// `soif convert ARGS` with `stdin`.
pub fn convert(args: &[&str], stdin: &[u8]) -> Output {
    let mut all = vec!["convert"];
    all.extend_from_slice(args);
    run(&all, stdin)
}

/// `soif convert ARGS`, which must succeed; its stdout.
pub fn convert_ok(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let out = convert(args, stdin);
    assert_eq!(code(&out), 0, "soif convert {args:?}: {}", stderr(&out));
    out.stdout
}

pub fn code(out: &Output) -> i32 {
    out.status.code().expect("soif exited normally")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The counts of the summary line:
/// `soif: 5 records in, 3 out, 2 rejected, 0 filtered, 0 repaired; …`.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Counts {
    pub records_in: u64,
    pub out: u64,
    pub rejected: u64,
    pub filtered: u64,
    pub repaired: u64,
}

pub fn summary(out: &Output) -> Counts {
    let err = stderr(out);
    let line = err
        .lines()
        .rev()
        .find(|l| l.contains(" records in, "))
        .unwrap_or_else(|| panic!("no summary line in {err:?}"));
    let n = |label: &str| -> u64 {
        let before = line
            .split(label)
            .next()
            .unwrap_or_else(|| panic!("no `{label}` in {line:?}"));
        before
            .rsplit([' ', ':'])
            .find(|w| !w.is_empty())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no count before `{label}` in {line:?}"))
    };
    Counts {
        records_in: n(" records in"),
        out: n(" out,"),
        rejected: n(" rejected"),
        filtered: n(" filtered"),
        repaired: n(" repaired"),
    }
}

/// The documents example of RFC 2655 §6 (canonical copy).
pub fn rfc_documents() -> Vec<u8> {
    std::fs::read(fixture("rfc2655/documents.soif")).expect("fixture")
}

/// Runs `python3 -c SCRIPT` with `input` on its stdin and parses each line it prints as
/// JSON; `None`, with a note that the `check` is skipped, when python3 is missing. A
/// failing script fails the test with `failure`, Python's stderr and the input.
pub fn python_json_lines<T: serde::de::DeserializeOwned>(
    script: &str,
    input: &str,
    check: &str,
    failure: &str,
) -> Option<Vec<T>> {
    let child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("note: python3 not found; skipping the {check} check");
        return None;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{failure}: {}\n{input}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

/// `soif serve` on 127.0.0.1 at a port the system picks, with one catalog named `name` in
/// a temporary directory; killed when dropped.
pub struct Serve {
    pub child: std::process::Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The catalog's database file.
    pub db: PathBuf,
    name: String,
    _dir: tempfile::TempDir,
}

impl Serve {
    /// Starts the server with submissions guarded by `token`, plus `extra` options.
    pub fn start(name: &str, token: &str, extra: &[&str]) -> Serve {
        use std::io::{BufRead, BufReader};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{name}.db"));
        let db = format!("{name}={}", path.display());
        let mut child = soif()
            .args([
                "serve",
                "--db",
                &db,
                "--listen",
                "127.0.0.1:0",
                "--token",
                token,
            ])
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "soif: serving http://127.0.0.1:PORT/rdm/incoming (catalogs: …)"
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|s| s.split('/').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Serve {
            child,
            addr,
            db: path,
            name: name.to_string(),
            _dir: dir,
        }
    }

    /// `x-catalog://127.0.0.1:PORT/NAME`.
    pub fn csid(&self) -> String {
        format!("x-catalog://{}/{}", self.addr, self.name)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first column of the first row of `sql` on the SQLite database `db`.
pub fn one<T: rusqlite::types::FromSql>(db: &Path, sql: &str) -> T {
    // Read-write: after a kill, reading a WAL database may first need to recover it.
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A catalog's records and layout (not its run log), every row, in a stable order, each
/// query's rows after a row holding the query. `soif_datestamp` and `soif_created` (when
/// a row last changed and was created: runs' times, not content) are left out, so that
/// two runs a second apart still compare equal.
pub fn dump(conn: &rusqlite::Connection) -> Vec<Vec<rusqlite::types::Value>> {
    use rusqlite::types::Value;
    let tables: Vec<String> = conn
        .prepare("SELECT table_name FROM soif_tables ORDER BY table_name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut queries = vec![
        "SELECT template, table_name FROM soif_tables ORDER BY table_name".to_string(),
        "SELECT * FROM soif_columns ORDER BY table_name, position".to_string(),
        "SELECT template, url FROM soif_deletions ORDER BY template, url".to_string(),
    ];
    queries.extend(
        tables
            .iter()
            .map(|t| format!("SELECT * FROM \"{t}\" ORDER BY url")),
    );
    let mut out = Vec::new();
    for q in queries {
        let mut st = conn.prepare(&q).unwrap();
        let keep: Vec<usize> = (0..st.column_count())
            .filter(|&i| {
                st.column_name(i)
                    .is_ok_and(|c| c != "soif_datestamp" && c != "soif_created")
            })
            .collect();
        out.push(vec![Value::Text(q.clone())]);
        let rows = st
            .query_map([], |r| keep.iter().map(|&i| r.get::<_, Value>(i)).collect())
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}
