//! `soif state STATE.db`: what incremental runs did (runs, sources, files), and
//! forgetting a file, a directory or a source so that the next run takes it again.
//!
//! ```text
//! soif state dumps.state                    # the last runs, the sources, a file count
//! soif state dumps.state --files            # every file taken, when and by which run
//! soif state dumps.state --run 7            # what run 7 took, and its report
//! soif state dumps.state --forget dumps/2026-11-23.soif.gz --forget oai+http://h/oai?…
//! soif state dumps.state --json             # the same, for scripts
//! ```
//!
//! Reading needs no lock (SQLite's WAL lets it read while a run writes); forgetting takes
//! the run lock, so it is refused (exit status 75) while a run is going, which would
//! otherwise record the file again when it commits.

use crate::terminal::{EXIT_FAILED, EXIT_OK};
use clap::Args;
use serde_json::{json, Value};
use soif_state::{StateError, StateStore, EXIT_ALREADY_RUNNING};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Show the history of incremental runs; forget files or sources.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  soif state dumps.state
  soif state dumps.state --files
  soif state dumps.state --run 7
  soif state dumps.state --forget dumps/2026-11-23.soif.gz   # taken again next run
  soif state dumps.state --forget dumps/                     # every file under it
  soif state dumps.state --forget 'oai+https://repo.example/oai?metadataPrefix=oai_dc'

Exit status: 0 done, 1 failed (no such state, nothing to forget by that name),
75 a run holds the state (--forget only).")]
pub struct StateArgs {
    /// The state database (`--state` of `soif convert`, `[state] path` of a pipeline).
    #[arg(value_name = "STATE.db")]
    pub state: PathBuf,

    /// Runs to show, newest first.
    #[arg(long, value_name = "N", default_value = "20")]
    pub limit: usize,

    /// List every file taken (path, size, records, run).
    #[arg(long)]
    pub files: bool,

    /// Show one run: the files it took and its report.
    #[arg(long, value_name = "ID")]
    pub run: Option<i64>,

    /// Forget a file, every file under a directory, or a source (its URL), so that the
    /// next run takes it again from scratch. Repeatable.
    #[arg(long, value_name = "PATH|URL")]
    pub forget: Vec<String>,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: StateArgs) -> ExitCode {
    match execute(&args) {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(e) => {
            eprintln!("soif: error: {e}");
            ExitCode::from(if e.is_already_running() {
                EXIT_ALREADY_RUNNING
            } else {
                EXIT_FAILED
            })
        }
    }
}

fn execute(args: &StateArgs) -> Result<(), StateError> {
    if !args.forget.is_empty() {
        if !args.state.exists() {
            return Err(StateError::Invalid(format!(
                "{}: no such state",
                args.state.display()
            )));
        }
        let mut store = StateStore::open(&args.state)?;
        for name in &args.forget {
            let key = forget_key(name);
            let n = store.forget(&key)?;
            if n == 0 {
                return Err(StateError::Invalid(format!(
                    "{}: nothing by the name {key} (see `soif state {} --files`)",
                    args.state.display(),
                    args.state.display()
                )));
            }
            eprintln!(
                "soif: forgot {n} entr{} for {key}: taken again by the next run",
                if n == 1 { "y" } else { "ies" }
            );
        }
        return Ok(());
    }
    let store = StateStore::open_read_only(&args.state)?
        .ok_or_else(|| StateError::Invalid(format!("{}: no such state", args.state.display())))?;
    if let Some(id) = args.run {
        return show_run(&store, id, args.json);
    }
    let runs = store.runs(args.limit)?;
    let sources = store.sources()?;
    let files = if args.files {
        store.files(None)?
    } else {
        Vec::new()
    };
    let file_count = store.file_count()?;
    if args.json {
        let v = json!({
            "state": args.state.display().to_string(),
            "layout_version": soif_state::tables::TABLES_VERSION,
            "runs": runs.iter().map(|r| json!({
                "id": r.id, "started": r.started, "finished": r.finished,
                "status": r.status, "taken": r.taken, "unchanged": r.unchanged,
                "settling": r.settling, "records_in": r.records_in,
                "records_out": r.records_out, "rejected": r.rejected,
                "exit_status": r.exit_status, "error": r.error, "outputs": r.outputs,
            })).collect::<Vec<_>>(),
            "sources": sources.iter().map(|s| json!({
                "key": s.key, "kind": s.checkpoint.kind,
                "checkpoint": serde_json::from_str::<Value>(&s.checkpoint.value)
                    .unwrap_or_else(|_| json!(s.checkpoint.value)),
                "run": s.run, "updated": s.updated,
            })).collect::<Vec<_>>(),
            "files": if args.files {
                json!(files.iter().map(|f| json!({
                    "path": f.path, "size": f.size, "mtime_ns": f.mtime_ns, "hash": f.hash,
                    "run": f.run, "taken": f.taken, "records": f.records,
                })).collect::<Vec<_>>())
            } else {
                json!(file_count)
            },
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    let mut out = format!("state {}\n", args.state.display());
    out.push_str("runs, newest first:\n");
    out.push_str("  run  started               status        taken  unchanged  settling  records in  out  rejected\n");
    for r in &runs {
        let n = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        out.push_str(&format!(
            "  {:<4} {:<21} {:<13} {:>5}  {:>9}  {:>8}  {:>10}  {:>3}  {:>8}\n",
            r.id,
            r.started,
            r.status,
            n(r.taken),
            n(r.unchanged),
            n(r.settling),
            n(r.records_in),
            n(r.records_out),
            n(r.rejected)
        ));
        if let Some(e) = &r.error {
            out.push_str(&format!("       error: {e}\n"));
        }
        for o in &r.outputs {
            out.push_str(&format!("       wrote {o}\n"));
        }
    }
    if !sources.is_empty() {
        out.push_str("sources:\n");
        for s in &sources {
            out.push_str(&format!(
                "  {} ({}, run {}, {}): {}\n",
                s.key, s.checkpoint.kind, s.run, s.updated, s.checkpoint.value
            ));
        }
    }
    if args.files {
        out.push_str("files:\n");
        for f in &files {
            out.push_str(&format!(
                "  {}  {} bytes, {} records, run {} ({})\n",
                f.path,
                f.size,
                f.records.map_or("-".to_string(), |r| r.to_string()),
                f.run,
                f.taken
            ));
        }
    } else {
        out.push_str(&format!(
            "files: {file_count} taken (--files lists them)
"
        ));
    }
    print!("{out}");
    Ok(())
}

fn show_run(store: &StateStore, id: i64, json_out: bool) -> Result<(), StateError> {
    let taken = store.run_files(id)?;
    let report = store.report(id)?;
    if json_out {
        let v = json!({
            "run": id,
            "files": taken.iter().map(|(p, reason, c)| json!({
                "path": p, "reason": reason, "records_in": c.records_in,
                "records_out": c.records_out, "rejected": c.rejected,
            })).collect::<Vec<_>>(),
            "report": report.as_deref().and_then(|r| serde_json::from_str::<Value>(r).ok()),
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    let mut out = format!("run {id}: {} file(s) recorded\n", taken.len());
    for (p, reason, c) in &taken {
        out.push_str(&format!(
            "  {reason:<8} {p}  {} in, {} out, {} rejected\n",
            c.records_in, c.records_out, c.rejected
        ));
    }
    match report {
        Some(r) => out.push_str(&format!("report:\n{r}\n")),
        None => out.push_str("no report (the run did not finish)\n"),
    }
    print!("{out}");
    Ok(())
}

/// The state's key for what the user typed: an existing file's canonical path, an
/// existing directory's with a trailing `/` (every file under it), a URL as is, and
/// any other path made absolute (a file since deleted).
fn forget_key(name: &str) -> String {
    if name.contains("://") {
        return name.to_string();
    }
    let path = Path::new(name);
    match std::fs::canonicalize(path) {
        Ok(abs) if abs.is_dir() => {
            let mut s = abs.to_string_lossy().into_owned();
            if !s.ends_with('/') {
                s.push('/');
            }
            s
        }
        Ok(abs) => abs.to_string_lossy().into_owned(),
        Err(_) => std::path::absolute(path)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| name.to_string()),
    }
}
