//! Incremental runs: `soif convert … --state STATE.db` and a pipeline file's `[state]`.
//!
//! ```text
//! soif convert /var/harvest/dumps --state /var/lib/soif/dumps.state \
//!     --to sqlite -o /var/lib/soif/catalog.db --report /var/log/soif/last.json
//! ```
//!
//! A run with a state:
//! 1. takes the state's run lock, or exits at once with status 75
//!    ([`soif_state::EXIT_ALREADY_RUNNING`]) when another run holds it;
//! 2. finishes what a killed run left ([`StateStore::recover`]);
//! 3. expands each input and decides about each file ([`soif_state::scan`]): new and
//!    changed files are taken, unchanged (and touched) ones skipped, files modified within
//!    `--settle` left for the next run. Other sources (URLs) are always opened, with the
//!    checkpoints of the last successful run ([`soif_pipeline::Checkpoints`]) so they can
//!    ask for what is new only;
//! 4. gives each file output a new name for this run, written under a temporary name
//!    ([`soif_state::outputs`]), the quarantine file too;
//! 5. runs the engine over what is taken (not at all when nothing is);
//! 6. commits: [`StateStore::stage`] once every sink has finished, then
//!    [`StateStore::complete`] publishes the outputs and records the progress. The
//!    `soif_state` crate doc explains why this is exactly-once after a crash.
//!
//! `--dry-run` does step 3 on the state as it is (read-only, no lock) and lists the
//! decisions; `--report FILE.json` writes the run's summary for monitoring (also without
//! `--state`). Stdin cannot be tracked, and a file output must be a file (`-o`): both are
//! refused with `--state`.

use super::pass::{run_job, Job};
use super::state::IncrementalOptions;
use crate::terminal::{fail, Reporter, EXIT_FAILED, EXIT_OK, EXIT_REJECTED, EXIT_USAGE};
use serde_json::{json, Value};
use soif_options::ErrorPolicy;
use soif_pipeline::{Checkpoints, Error, InputCounts, Summary};
use soif_sinks::Format;
use soif_sources::InputSpec;
use soif_state::outputs::{plan, PlannedOutput};
use soif_state::scan::{self, FileDecision, Reason};
use soif_state::{
    Counts, RunStatus, SourceProgress, Staged, StateStore, TakenFile, EXIT_ALREADY_RUNNING,
};
use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

/// What one input (as given) expands to, and the decision for each of its files.
#[derive(Debug)]
struct SourcePlan {
    input: String,
    kind: &'static str,
    files: Vec<FileDecision>,
    /// A URL source: always opened, with its checkpoint.
    url: Option<String>,
}

/// Expands the inputs and decides about each file against the state.
fn scan_inputs(
    inputs: &[String],
    store: Option<&StateStore>,
    settle: Duration,
) -> Result<Vec<SourcePlan>, Error> {
    let now = SystemTime::now();
    let mut plans = Vec::with_capacity(inputs.len());
    if inputs.is_empty() || inputs.iter().any(|i| i == "-") {
        return Err(Error::Config(
            "--state cannot track stdin: give files, directories, globs or URLs".into(),
        ));
    }
    for input in inputs {
        let specs = soif_sources::expand(std::slice::from_ref(input))?;
        let kind = if Path::new(input).is_dir() {
            "directory"
        } else if input.contains(['*', '?', '[']) && !Path::new(input).exists() {
            "glob"
        } else {
            "file"
        };
        let mut plan = SourcePlan {
            input: input.clone(),
            kind,
            files: Vec::new(),
            url: None,
        };
        for spec in specs {
            match spec {
                InputSpec::File(path) => {
                    let key = scan::canonical(&path)?;
                    let known = match store {
                        Some(s) => s.file(&key)?,
                        None => None,
                    };
                    plan.files
                        .push(scan::decide_keyed(&path, key, known.as_ref(), now, settle)?);
                }
                InputSpec::Url(url) => {
                    plan.kind = "url";
                    plan.url = Some(url);
                }
                other => {
                    return Err(Error::Config(format!(
                        "--state cannot track {}",
                        other.name()
                    )))
                }
            }
        }
        plans.push(plan);
    }
    Ok(plans)
}

/// A conversion's counts and outcome, and the checkpoints its sources staged.
type Converted = (Summary, Result<(), Error>, Option<Checkpoints>);

/// True for the formats written to a file (one new file per run under `--state`).
fn is_file_format(f: Format) -> bool {
    !matches!(
        f,
        Format::Sqlite | Format::Rdm | Format::Sparql | Format::Null
    )
}

/// Runs an incremental job (see the module doc) and returns its exit status.
pub fn execute(mut job: Job) -> ExitCode {
    let Some(opts) = job.state.clone() else {
        return fail(&Error::Fatal("not an incremental run".into()));
    };
    let started = soif_state::now_rfc3339();
    let clock = Instant::now();
    for s in &job.sinks {
        if is_file_format(s.format()) && matches!(s.output(), None | Some("-")) {
            return fail(&Error::Config(format!(
                "--state: the {} output needs -o FILE (each run writes a new file named by \
                 the run; what went to stdout cannot be taken back after a crash)",
                s.format().as_str()
            )));
        }
    }
    if opts.dry_run {
        return dry_run(&job, &opts);
    }
    let reporter = Reporter::new(job.quiet);
    let mut report = RunReport::new(&job, &opts, started);

    let mut store = match StateStore::open(&opts.path) {
        Ok(s) => s,
        Err(e) => {
            let code = if e.is_already_running() {
                EXIT_ALREADY_RUNNING
            } else {
                EXIT_FAILED
            };
            eprintln!("soif: error: {e}");
            report.status = if e.is_already_running() {
                "already-running"
            } else {
                "failed"
            };
            report.error = Some(e.to_string());
            report.exit_status = code;
            report.finish(&clock);
            return write_or_fail(&job, &report.to_json(), ExitCode::from(code));
        }
    };
    let recovery = match store.recover() {
        Ok(r) => r,
        Err(e) => return fail(&e.into()),
    };
    if !job.quiet {
        for id in &recovery.interrupted {
            eprintln!(
                "soif: warning: state: run {id} was killed before its outputs were committed; \
                 its temporary files are removed and its inputs taken again"
            );
        }
        for id in &recovery.completed {
            eprintln!(
                "soif: warning: state: run {id} was killed while committing; it is now complete"
            );
        }
        for note in &recovery.notes {
            eprintln!("soif: warning: state: {note}");
        }
    }
    report.recovery = json!({"interrupted": recovery.interrupted, "completed": recovery.completed});

    let scan_clock = Instant::now();
    let plans = match scan_inputs(&job.inputs, Some(&store), opts.settle) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    report.timings.scan = scan_clock.elapsed();

    let argv: Vec<String> = std::env::args().collect();
    let run = match store.begin_run(&argv, &job.inputs) {
        Ok(r) => r,
        Err(e) => return fail(&e.into()),
    };
    report.run = Some(run.id);
    report.started = run.started.clone();

    // From here on, a failure ends the run through `store.fail` (its temporary outputs
    // removed, nothing recorded as taken).
    let mut planned: Vec<(String, PlannedOutput)> = Vec::new();
    let outcome = (|| -> Result<Converted, Error> {
        for s in job.sinks.iter_mut() {
            let format = s.format();
            if let (true, Some(slot)) = (is_file_format(format), s.output_mut()) {
                let Some(out) = slot.clone() else { continue };
                let abs = std::path::absolute(&out).map_err(|e| Error::io(out.clone(), e))?;
                let p = plan(&abs, &run.label);
                *slot = Some(p.temp.to_string_lossy().into_owned());
                planned.push((format.as_str().to_string(), p));
            }
        }
        if let ErrorPolicy::Quarantine(q) = &job.engine.policy {
            let abs = std::path::absolute(q).map_err(|e| Error::io_path(q, e))?;
            let p = plan(&abs, &run.label);
            job.engine.policy = ErrorPolicy::Quarantine(p.temp.clone());
            planned.push(("quarantine".to_string(), p));
        }
        let outputs: Vec<PlannedOutput> = planned.iter().map(|(_, p)| p.clone()).collect();
        store.plan_outputs(run.id, &outputs)?;

        job.specs = plans
            .iter()
            .flat_map(|p| {
                p.files
                    .iter()
                    .filter(|f| f.reason.is_taken())
                    .map(|f| InputSpec::File(f.given.clone()))
                    .chain(p.url.iter().map(|u| InputSpec::Url(u.clone())))
            })
            .collect();
        if job.specs.is_empty() {
            // Nothing new: no sink is even opened.
            return Ok((Summary::default(), Ok(()), None));
        }
        let checkpoints = Checkpoints::new(store.checkpoints()?, run.started.clone());
        job.source.checkpoints = Some(checkpoints.clone());
        let (summary, result) = run_job(&mut job, &reporter)?;
        Ok((summary, result, Some(checkpoints)))
    })();
    let convert_clock = Instant::now();
    report.timings.convert = scan_clock.elapsed().saturating_sub(report.timings.scan);

    let (summary, result, checkpoints) = match outcome {
        Ok(o) => o,
        Err(e) => (Summary::default(), Err(e), None),
    };
    report.set_counts(&plans, &summary, checkpoints.as_ref());
    if let Err(e) = result {
        let code = if e.is_config() {
            EXIT_USAGE
        } else {
            EXIT_FAILED
        };
        report.status = "failed";
        report.error = Some(e.to_string());
        report.exit_status = code;
        report.finish(&clock);
        let exit = reporter.failed(&summary, &e);
        if let Err(se) = store.fail(
            run.id,
            &e.to_string(),
            i32::from(code),
            &report.to_json().to_string(),
        ) {
            eprintln!("soif: error: {se}");
        }
        return write_or_fail(&job, &report.to_json(), exit);
    }

    // Every sink has finished: stage, publish, apply.
    let by_name = counts_by_name(&summary);
    let mut progress = Staged {
        totals: Counts {
            records_in: summary.records_in,
            records_out: summary.records_out,
            rejected: summary.rejected,
        },
        ..Staged::default()
    };
    for p in &plans {
        for f in &p.files {
            match f.reason {
                Reason::Unchanged => progress.unchanged += 1,
                Reason::Settling => progress.settling += 1,
                Reason::Touched | Reason::New | Reason::Changed => {
                    let Some(hash) = f.hash.clone() else { continue };
                    if f.reason == Reason::Touched {
                        progress.unchanged += 1;
                    }
                    progress.files.push(TakenFile {
                        path: f.key.clone(),
                        size: f.size,
                        mtime_ns: f.mtime_ns,
                        hash,
                        reason: f.reason,
                        counts: by_name
                            .get(f.given.display().to_string().as_str())
                            .map(|c| counts(c))
                            .unwrap_or_default(),
                    });
                }
            }
        }
    }
    if let Some(cps) = &checkpoints {
        for (key, checkpoint) in cps.staged() {
            let counts = by_name
                .get(key.as_str())
                .map(|c| counts(c))
                .unwrap_or_default();
            progress.sources.push(SourceProgress {
                key,
                checkpoint,
                counts,
            });
        }
    }
    for (what, p) in &planned {
        let written = if what == "quarantine" {
            summary.quarantined > 0
        } else {
            summary.records_in > 0
        };
        progress
            .outputs
            .push((p.temp.clone(), written && p.temp.exists()));
    }
    let status = if summary.rejected > 0 {
        RunStatus::Rejected
    } else {
        RunStatus::Ok
    };
    let code = if summary.rejected > 0 {
        EXIT_REJECTED
    } else {
        EXIT_OK
    };
    progress.exit_status = i32::from(code);
    report.status = status.as_str();
    report.exit_status = code;
    report.outputs = planned
        .iter()
        .zip(&progress.outputs)
        .map(|((what, p), (_, keep))| {
            json!({
                "output": what,
                "path": p.final_path.display().to_string(),
                "written": keep,
            })
        })
        .collect();
    report.timings.commit = convert_clock.elapsed();
    report.finish(&clock);
    let committed = store
        .stage(run.id, &progress, status, &report.to_json().to_string())
        .and_then(|()| store.complete(run.id));
    let notes = match committed {
        Ok(notes) => notes,
        Err(e) => {
            // Staged but not complete: the next run finishes it (its recovery).
            reporter.abandon();
            eprintln!("soif: error: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    report.timings.commit = convert_clock.elapsed();
    report.finish(&clock);
    reporter.summary(&summary);
    if !job.quiet {
        for n in notes {
            eprintln!("soif: warning: state: {n}");
        }
        let taken = progress
            .files
            .iter()
            .filter(|f| f.reason.is_taken())
            .count();
        let mut line = format!(
            "soif: state: run {}: {taken} file{} taken, {} unchanged, {} settling",
            run.id,
            if taken == 1 { "" } else { "s" },
            progress.unchanged,
            progress.settling
        );
        if !progress.sources.is_empty() {
            line.push_str(&format!(", {} checkpoint(s) moved", progress.sources.len()));
        }
        for ((_, p), (_, keep)) in planned.iter().zip(&progress.outputs) {
            if *keep {
                line.push_str(&format!("; wrote {}", p.final_path.display()));
            }
        }
        eprintln!("{line}");
    }
    write_or_fail(&job, &report.to_json(), ExitCode::from(code))
}

fn counts(c: &InputCounts) -> Counts {
    Counts {
        records_in: c.records_in,
        records_out: c.records_out,
        rejected: c.rejected,
    }
}

fn counts_by_name(summary: &Summary) -> HashMap<&str, &InputCounts> {
    summary
        .inputs
        .iter()
        .map(|c| (c.name.as_str(), c))
        .collect()
}

/// `--dry-run`: the decisions, on stdout, one per line; nothing changes.
fn dry_run(job: &Job, opts: &IncrementalOptions) -> ExitCode {
    let store = match StateStore::open_read_only(&opts.path) {
        Ok(s) => s,
        Err(e) => return fail(&e.into()),
    };
    let plans = match scan_inputs(&job.inputs, store.as_ref(), opts.settle) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let checkpoints: HashMap<String, String> = match store.as_ref().map(|s| s.checkpoints()) {
        Some(Ok(c)) => c.into_iter().map(|(k, v)| (k, v.value)).collect(),
        Some(Err(e)) => return fail(&e.into()),
        None => HashMap::new(),
    };
    let mut out = String::new();
    let (mut take, mut skip) = (0u64, 0u64);
    for p in &plans {
        for f in &p.files {
            let what = if f.reason.is_taken() {
                take += 1;
                "take"
            } else {
                skip += 1;
                "skip"
            };
            let detail = match f.reason {
                Reason::Settling => format!(
                    " (modified {} s ago, --settle {} s)",
                    f.age.as_secs(),
                    opts.settle.as_secs()
                ),
                Reason::Touched => " (same content, new time)".to_string(),
                _ => format!(" ({} bytes)", f.size),
            };
            out.push_str(&format!(
                "{what}\t{}\t{}{detail}\n",
                f.reason.as_str(),
                f.key
            ));
        }
        if let Some(url) = &p.url {
            take += 1;
            let detail = match checkpoints.get(url) {
                Some(c) => format!(" (checkpoint {c})"),
                None => " (no checkpoint: everything)".to_string(),
            };
            out.push_str(&format!("take\tsource\t{url}{detail}\n"));
        }
    }
    print!("{out}");
    if !job.quiet {
        eprintln!(
            "soif: dry run: {take} would be taken, {skip} skipped ({}); nothing changed",
            opts.path.display()
        );
    }
    let report = json!({
        "report_version": 1,
        "soif_version": env!("CARGO_PKG_VERSION"),
        "state": opts.path.display().to_string(),
        "dry_run": true,
        "status": "dry-run",
        "exit_status": 0,
        "sources": plans.iter().map(|p| source_json(p, None)).collect::<Vec<_>>(),
    });
    write_or_fail(job, &report, ExitCode::from(EXIT_OK))
}

/// Writes the report, if asked; a failure to write it is the run's failure.
fn write_or_fail(job: &Job, report: &Value, code: ExitCode) -> ExitCode {
    match &job.report {
        Some(path) => match write_report(path, report) {
            Ok(()) => code,
            Err(e) => fail(&e),
        },
        None => code,
    }
}

/// Writes `report` to `path` atomically (a temporary file beside it, renamed), so a
/// monitor never reads half a report.
pub fn write_report(path: &Path, report: &Value) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".soif-report.")
        .tempfile_in(dir)
        .map_err(|e| Error::io(format!("writing the report {}", path.display()), e))?;
    serde_json::to_writer_pretty(&mut temp, report)
        .map_err(|e| Error::io(format!("writing the report {}", path.display()), e.into()))?;
    std::io::Write::write_all(&mut temp, b"\n")
        .map_err(|e| Error::io(format!("writing the report {}", path.display()), e))?;
    temp.persist(path)
        .map_err(|e| Error::io(format!("writing the report {}", path.display()), e.error))?;
    Ok(())
}

/// Phases of a run, for the report.
#[derive(Debug, Default)]
struct Timings {
    scan: Duration,
    convert: Duration,
    commit: Duration,
    total: Duration,
}

/// The report of an incremental run, filled as the run goes.
struct RunReport {
    state: String,
    run: Option<i64>,
    started: String,
    finished: String,
    status: &'static str,
    exit_status: u8,
    error: Option<String>,
    recovery: Value,
    timings: Timings,
    totals: Value,
    sources: Vec<Value>,
    outputs: Vec<Value>,
}

impl RunReport {
    fn new(_job: &Job, opts: &IncrementalOptions, started: String) -> RunReport {
        RunReport {
            state: opts.path.display().to_string(),
            run: None,
            started,
            finished: String::new(),
            status: "running",
            exit_status: 0,
            error: None,
            recovery: Value::Null,
            timings: Timings::default(),
            totals: Value::Null,
            sources: Vec::new(),
            outputs: Vec::new(),
        }
    }

    fn set_counts(
        &mut self,
        plans: &[SourcePlan],
        summary: &Summary,
        checkpoints: Option<&Checkpoints>,
    ) {
        let by_name = counts_by_name(summary);
        let count = |r: Reason| {
            plans
                .iter()
                .flat_map(|p| &p.files)
                .filter(|f| f.reason == r)
                .count()
        };
        let mut totals = summary_json(summary);
        totals["files_taken"] = json!(count(Reason::New) + count(Reason::Changed));
        totals["files_unchanged"] = json!(count(Reason::Unchanged) + count(Reason::Touched));
        totals["files_settling"] = json!(count(Reason::Settling));
        self.totals = totals;
        let staged: HashMap<String, String> = checkpoints
            .map(|c| c.staged().into_iter().map(|(k, v)| (k, v.value)).collect())
            .unwrap_or_default();
        self.sources = plans
            .iter()
            .map(|p| {
                let mut v = source_json(p, Some(&by_name));
                if let Some(url) = &p.url {
                    v["checkpoint"] = staged.get(url).map_or(Value::Null, |c| json!(c));
                }
                v
            })
            .collect();
    }

    fn finish(&mut self, clock: &Instant) {
        self.timings.total = clock.elapsed();
        self.finished = soif_state::now_rfc3339();
    }

    fn to_json(&self) -> Value {
        json!({
            "report_version": 1,
            "soif_version": env!("CARGO_PKG_VERSION"),
            "state": self.state,
            "run": self.run,
            "dry_run": false,
            "status": self.status,
            "exit_status": self.exit_status,
            "error": self.error,
            "started": self.started,
            "finished": self.finished,
            "recovered": self.recovery,
            "timings": {
                "scan_seconds": self.timings.scan.as_secs_f64(),
                "convert_seconds": self.timings.convert.as_secs_f64(),
                "commit_seconds": self.timings.commit.as_secs_f64(),
                "total_seconds": self.timings.total.as_secs_f64(),
            },
            "totals": self.totals,
            "sources": self.sources,
            "outputs": self.outputs,
        })
    }
}

fn summary_json(s: &Summary) -> Value {
    json!({
        "records_in": s.records_in,
        "records_out": s.records_out,
        "rejected": s.rejected,
        "filtered": s.filtered,
        "added": s.added,
        "repaired": s.repaired,
        "warnings": s.warnings,
        "quarantined": s.quarantined,
        "bytes": s.bytes,
    })
}

fn input_json(c: Option<&&InputCounts>) -> Value {
    match c {
        Some(c) => json!({
            "records_in": c.records_in,
            "records_out": c.records_out,
            "rejected": c.rejected,
            "filtered": c.filtered,
            "added": c.added,
            "errors": c.rejections,
        }),
        None => {
            json!({"records_in": 0, "records_out": 0, "rejected": 0, "filtered": 0, "added": 0, "errors": []})
        }
    }
}

/// One input as given: its files' decisions (taken, touched and settling ones listed;
/// unchanged ones counted), and the records of what was read.
fn source_json(p: &SourcePlan, by_name: Option<&HashMap<&str, &InputCounts>>) -> Value {
    let count = |r: Reason| p.files.iter().filter(|f| f.reason == r).count();
    let mut files = Vec::new();
    let (mut rin, mut rout, mut rej, mut filt, mut add) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut errors: Vec<Value> = Vec::new();
    for f in &p.files {
        if f.reason == Reason::Unchanged {
            continue;
        }
        let mut v = json!({
            "path": f.key,
            "decision": if f.reason.is_taken() { "taken" } else { "skipped" },
            "reason": f.reason.as_str(),
            "size": f.size,
        });
        if f.reason == Reason::Settling {
            v["modified_seconds_ago"] = json!(f.age.as_secs());
        }
        if let (true, Some(by_name)) = (f.reason.is_taken(), by_name) {
            let c = by_name.get(f.given.display().to_string().as_str());
            if let Some(c) = c {
                rin += c.records_in;
                rout += c.records_out;
                rej += c.rejected;
                filt += c.filtered;
                add += c.added;
                errors.extend(c.rejections.iter().map(|m| json!(m)));
            }
            let counts = input_json(c);
            if let (Some(obj), Value::Object(extra)) = (v.as_object_mut(), counts) {
                obj.extend(extra);
            }
        }
        files.push(v);
    }
    if let (Some(url), Some(by_name)) = (&p.url, by_name) {
        if let Some(c) = by_name.get(url.as_str()) {
            rin += c.records_in;
            rout += c.records_out;
            rej += c.rejected;
            filt += c.filtered;
            add += c.added;
            errors.extend(c.rejections.iter().map(|m| json!(m)));
        }
    }
    json!({
        "input": p.input,
        "kind": p.kind,
        "taken": count(Reason::New) + count(Reason::Changed) + usize::from(p.url.is_some()),
        "unchanged": count(Reason::Unchanged) + count(Reason::Touched),
        "settling": count(Reason::Settling),
        "records_in": rin,
        "records_out": rout,
        "rejected": rej,
        "filtered": filt,
        "added": add,
        "errors": errors,
        "files": files,
    })
}

/// The report of a run without `--state`: the same shape, one source per input.
pub fn plain_report(
    job: &Job,
    started: &str,
    summary: &Summary,
    result: &Result<(), Error>,
) -> Value {
    let sources: Vec<Value> = summary
        .inputs
        .iter()
        .map(|c| {
            let mut v = input_json(Some(&c));
            v["input"] = json!(c.name);
            v
        })
        .collect();
    json!({
        "report_version": 1,
        "soif_version": env!("CARGO_PKG_VERSION"),
        "state": Value::Null,
        "run": Value::Null,
        "dry_run": false,
        "status": match result {
            Ok(()) if summary.rejected > 0 => "rejected",
            Ok(()) => "ok",
            Err(_) => "failed",
        },
        "exit_status": match result {
            Ok(()) if summary.rejected > 0 => EXIT_REJECTED,
            Ok(()) => EXIT_OK,
            Err(e) if e.is_config() => EXIT_USAGE,
            Err(_) => EXIT_FAILED,
        },
        "error": result.as_ref().err().map(|e| e.to_string()),
        "started": started,
        "finished": soif_state::now_rfc3339(),
        "inputs": job.inputs,
        "timings": {"total_seconds": summary.elapsed.as_secs_f64()},
        "totals": summary_json(summary),
        "sources": sources,
    })
}
