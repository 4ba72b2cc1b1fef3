//! `soif verify`: check that a target holds what converting the sources writes — every
//! record, with its values, and none of those deleted (docs/verify.md). The reading and
//! the comparison are the `soif_verify` crate's; this module turns the flags (or a
//! pipeline file) into [`Verification`]s, prints the [`Report`]s, and writes or re-checks
//! the sign-off's [`Manifest`].

use crate::input::InputArgs;
use crate::pipeline_file::PipelineConfig;
use crate::terminal::{fail, runtime, Reporter, EXIT_OK, EXIT_REJECTED};
use clap::Args;
use soif_options::ErrorPolicy;
use soif_pipeline::transforms::{TransformContext, TransformSpec};
use soif_pipeline::{EngineOptions, Error};
use soif_sinks::SinkConfig;
use soif_sources::{InputSettings, InputSource, InputSpec};
use soif_verify::compare::Finding;
use soif_verify::manifest::{recheck, Manifest, SourceDigest, TargetDigest, VERSION};
use soif_verify::report::Report;
use soif_verify::target::Target;
use soif_verify::Verification;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Check that a catalog or files hold what converting the sources writes.
///
/// Reads the sources as the conversion did (same options, same -t transforms) and the
/// target back, and compares them record by record: missing, extra, changed, deletions
/// not applied.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  soif convert archive/ -t collapse --to sqlite -o catalog.db
  soif verify archive/ -t collapse --against catalog.db --manifest signoff.json
  soif verify --check-manifest signoff.json          # weeks later: still the same?
  soif verify dumps/ --against records.parquet --report verify.json
  soif verify archive/ --against out.jsonl --list > differences.tsv
  soif verify pipeline.toml                          # every sink of a pipeline file

The sources are read with the same options, transforms (-t) and --on-error as the
conversion (under fail, a record it would reject makes the target not match; under skip
it is not expected there; under quarantine --quarantine FILE must hold it). The
target's format comes from its name (.db, .sqlite, .jsonl, .soif, .parquet, .arrow, a
directory of such files) or --to. A pipeline file (one INPUT ending in .toml, no
--against) gives the sources, transforms and targets: each [[sink]] that can be read back.

--list prints one line per record that does not match, on stdout:
  CLASS<TAB>TEMPLATE<TAB>URL[<TAB>ATTRIBUTE]
with CLASS missing, extra, changed or deletion_not_applied.

Exit status: 0 the target matches (or the manifest still holds), 1 failed, 2 usage or
configuration error, 3 the target does not match (records missing, extra, changed,
deletions not applied, records of the target unreadable, records the conversion would
reject under --on-error fail, a quarantine that does not hold those it rejects; or the
manifest no longer holds).")]
pub struct VerifyArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// A transform NAME[:ARGS] of the conversion; repeat in the conversion's order.
    #[arg(short = 't', long = "transform", value_name = "TRANSFORM")]
    pub transforms: Vec<String>,

    /// The target: a SQLite catalog, a JSON Lines, SOIF, Parquet or Arrow file, a
    /// directory of per-run files, or a served catalog: x-catalog://host:port/name or
    /// oai+http(s)://host/path?metadataPrefix=soif|oai_dc (oai_dc: the records' Dublin
    /// Core values are compared).
    #[arg(long, value_name = "TARGET")]
    pub against: Option<String>,

    /// The target's format when its name does not tell: sqlite, jsonl, soif, parquet
    /// or arrow.
    #[arg(long, value_name = "FORMAT", value_parser = ["sqlite", "jsonl", "soif", "parquet", "arrow"])]
    pub to: Option<String>,

    /// The --charset the conversion wrote with (jsonl, sqlite): `utf8` or `latin1`.
    #[arg(long, value_name = "CHARSET", value_parser = ["utf8", "latin1"])]
    pub charset: Option<String>,

    /// Also write the report as JSON to this file (for monitoring).
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,

    /// Print every record that does not match on stdout (see below).
    #[arg(long)]
    pub list: bool,

    /// Write the sign-off's manifest to this file: the sources' digests, the
    /// transforms, each target's record count and content digest, the date.
    #[arg(long, value_name = "FILE.json")]
    pub manifest: Option<PathBuf>,

    /// The state of the incremental runs that made the target (`--state` of `soif
    /// convert`): only the input files it has taken are read; files not taken yet
    /// (new, still settling) are not expected in the target and are named on stderr.
    #[arg(long, value_name = "STATE.db")]
    pub state: Option<PathBuf>,

    /// Check a manifest again instead: read its targets and hash its sources anew, and
    /// report what changed since the sign-off.
    #[arg(long, value_name = "FILE.json", conflicts_with_all = ["against", "manifest", "transforms", "list"])]
    pub check_manifest: Option<PathBuf>,
}

pub fn run(args: VerifyArgs) -> ExitCode {
    let result = match &args.check_manifest {
        Some(path) => check_manifest(&args, path),
        None => verify(&args),
    };
    match result {
        Ok(true) => ExitCode::from(EXIT_OK),
        Ok(false) => ExitCode::from(EXIT_REJECTED),
        Err(e) => fail(&e),
    }
}

/// What to verify: the sources as the conversion read them, and its targets.
struct Plan {
    specs: Vec<InputSpec>,
    settings: InputSettings,
    engine: EngineOptions,
    transforms: Vec<TransformSpec>,
    context: TransformContext,
    targets: Vec<Target>,
    temp_dir: Option<PathBuf>,
    /// The conversion's sinks (each refuses records of its own into one quarantine).
    sinks: usize,
}

impl Plan {
    /// From the flags: the INPUTs, -t and --against.
    fn of_flags(args: &VerifyArgs, reporter: &std::sync::Arc<Reporter>) -> Result<Plan, Error> {
        let against = args.against.as_deref().ok_or_else(|| {
            Error::Config(
                "soif verify needs --against TARGET (or a pipeline file as its one input)".into(),
            )
        })?;

        Ok(Plan {
            specs: args.input.specs()?,
            settings: args.input.input_settings(),
            engine: args.input.engine_options(reporter)?,
            transforms: args.transforms.iter().map(|t| t.as_str().into()).collect(),
            context: args.input.transform_context(None)?,
            targets: vec![Target::new(
                against,
                args.to.as_deref(),
                args.charset.as_deref(),
            )?],
            temp_dir: args.input.temp_dir.clone(),
            sinks: 1,
        })
    }

    /// From a pipeline file: its `[source]`, transforms and every `[[sink]]` that can
    /// be read back (the others are named on stderr).
    fn of_pipeline(path: &Path, args: &VerifyArgs) -> Result<Plan, Error> {
        if args.against.is_some() || !args.transforms.is_empty() || args.to.is_some() {
            return Err(Error::Config(
                "a pipeline file gives the transforms and targets: no -t, --against or --to with it"
                    .into(),
            ));
        }
        let config = PipelineConfig::load(path)?;
        let incremental = config.state.is_some();
        let mut targets = Vec::new();
        for sink in &config.sinks {
            match sink {
                SinkConfig::Null(_) => {}
                s => match Target::of_sink(s) {
                    Ok(t) if incremental => targets.push(t.per_run()),
                    Ok(t) => targets.push(t),
                    Err(e) if !args.input.quiet => eprintln!("soif verify: not checked: {e}"),
                    Err(_) => {}
                },
            }
        }
        if targets.is_empty() {
            return Err(Error::Config(format!(
                "{}: no [[sink]] that soif verify can read back (sqlite, jsonl, soif, parquet, arrow)",
                path.display()
            )));
        }
        Ok(Plan {
            specs: soif_sources::expand(&config.source.inputs)?,
            settings: InputSettings::from(&config.source),
            engine: EngineOptions {
                decoder: config.source.decoder_options(),
                policy: config.errors.policy()?,
                ..EngineOptions::default()
            },
            sinks: config.sinks.len(),
            transforms: config.transforms.clone(),
            context: config.transform_context()?,
            targets,
            temp_dir: config.temp_dir.clone(),
        })
    }
}

/// One pipeline file as the only input, and no --against: verify the pipeline.
fn pipeline_path(args: &VerifyArgs) -> Option<PathBuf> {
    match &args.input.inputs[..] {
        [one] if args.against.is_none() && one.ends_with(".toml") => Some(PathBuf::from(one)),
        _ => None,
    }
}

fn verify(args: &VerifyArgs) -> Result<bool, Error> {
    let reporter = Reporter::new(args.input.quiet);
    let (mut plan, state) = match pipeline_path(args) {
        Some(path) => {
            let plan = Plan::of_pipeline(&path, args)?;
            let config_state = PipelineConfig::load(&path)?.state.map(|s| s.path);
            (plan, args.state.clone().or(config_state))
        }
        None => (Plan::of_flags(args, &reporter)?, args.state.clone()),
    };
    if let Some(state) = &state {
        taken_only(&mut plan.specs, state, args.input.quiet)?;
    }
    if let ErrorPolicy::Quarantine(file) = &plan.engine.policy {
        let why = if state.is_some() {
            Some("each incremental run replaces it with the records it rejects")
        } else if plan.sinks > 1 {
            Some("it holds what every [[sink]] refuses")
        } else {
            None
        };
        if let Some(why) = why {
            if !args.input.quiet {
                eprintln!(
                    "soif verify: the quarantine {} is not checked: {why}",
                    file.display()
                );
            }
            plan.engine.policy = ErrorPolicy::Skip;
        }
    }
    if plan.targets.len() > 1 && plan.specs.iter().any(|s| matches!(s, InputSpec::Stdin)) {
        return Err(Error::Config(
            "stdin can be read once: verify one target at a time, or save the input to a file"
                .into(),
        ));
    }
    // The manifest's sources are hashed before reading: what was verified is what is
    // recorded.
    let sources = match &args.manifest {
        Some(_) => source_digests(&plan.specs)?,
        None => Vec::new(),
    };
    let rt = runtime()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let several = plan.targets.len() > 1;
    let mut reports = Vec::new();
    for target in &plan.targets {
        if args.list && several {
            writeln!(out, "# {}", target.location).map_err(|e| Error::io("writing the list", e))?;
        }
        let transforms = plan
            .transforms
            .iter()
            .map(|t| t.build(&plan.context))
            .collect::<Result<Vec<_>, _>>()?;
        let mut engine = plan.engine.clone();
        engine.observer = Some(reporter.clone());
        let v = Verification {
            sources: Box::new(InputSource::new(plan.specs.clone(), plan.settings.clone())),
            transforms,
            target: target.clone(),
            engine,
            settings: plan.settings.clone(),
            temp_dir: plan.temp_dir.clone(),
            observer: Some(reporter.clone()),
        };
        let list = args.list;
        let report = soif_verify::verify(
            v,
            &rt,
            &mut |f: &Finding| {
                if list {
                    list_line(&mut out, f)
                } else {
                    Ok(())
                }
            },
            &mut |done, total| reporter.steps("partitions compared", done as u64, total as u64),
        );
        reporter.abandon();
        let report = report?;
        if !args.input.quiet {
            eprint!("{report}");
        }
        reports.push(report);
    }
    rt.shutdown_background();
    out.flush().map_err(|e| Error::io("writing the list", e))?;
    let all_match = reports.iter().all(Report::matches);
    if let Some(path) = &args.report {
        let json = serde_json::json!({
            "verdict": if all_match { "match" } else { "mismatch" },
            "targets": reports,
        });
        crate::job::incremental::write_report(path, &json)?;
    }
    if let Some(path) = &args.manifest {
        let manifest = Manifest {
            manifest: VERSION,
            date: soif_state::now_rfc3339(),
            sources,
            transforms: plan.transforms.iter().map(describe_transform).collect(),
            targets: plan
                .targets
                .iter()
                .zip(&reports)
                .map(|(t, r)| TargetDigest {
                    location: t.location.clone(),
                    format: t.format.to_string(),
                    charset: t.charset().map(String::from),
                    records: r.target_side.entries,
                    digest: r.target_digest.clone(),
                    verdict: r.verdict.to_string(),
                    counts: r.counts.clone(),
                })
                .collect(),
        };
        let json = serde_json::to_value(&manifest)
            .map_err(|e| Error::Fatal(format!("the manifest as JSON: {e}")))?;
        crate::job::incremental::write_report(path, &json)?;
    }
    Ok(all_match)
}

/// `soif verify --check-manifest FILE`.
fn check_manifest(args: &VerifyArgs, path: &Path) -> Result<bool, Error> {
    let manifest = Manifest::read(path)?;
    let rt = runtime()?;
    let found = recheck(
        &manifest,
        &rt,
        args.input.temp_dir.as_deref(),
        args.input.input_settings(),
    )?;
    rt.shutdown_background();
    if !args.input.quiet {
        let verdict = if found.differences.is_empty() {
            "still holds"
        } else {
            "no longer holds"
        };
        eprintln!(
            "soif verify: the sign-off of {} ({}) {verdict}",
            manifest.date,
            path.display()
        );
        for d in &found.differences {
            eprintln!("  {d}");
        }
        for n in &found.notes {
            eprintln!("  note: {n}");
        }
    }
    if let Some(report) = &args.report {
        let json = serde_json::to_value(&found)
            .map_err(|e| Error::Fatal(format!("the report as JSON: {e}")))?;
        crate::job::incremental::write_report(report, &json)?;
    }
    Ok(found.differences.is_empty())
}

/// Keeps the input files the state at `state` has taken (URLs stay: their sources read
/// what is new by themselves); the others are named on stderr.
fn taken_only(specs: &mut Vec<InputSpec>, state: &Path, quiet: bool) -> Result<(), Error> {
    let store = soif_state::StateStore::open_read_only(state)
        .map_err(|e| Error::Config(format!("{}: {e}", state.display())))?
        .ok_or_else(|| Error::Config(format!("{}: no such state", state.display())))?;
    let taken: std::collections::HashSet<String> = store
        .files(None)
        .map_err(|e| Error::Config(format!("{}: {e}", state.display())))?
        .into_iter()
        .map(|f| f.path)
        .collect();
    let mut left = Vec::new();
    specs.retain(|s| match s {
        InputSpec::File(p) => {
            let key = soif_state::scan::canonical(p).unwrap_or_default();
            let keep = taken.contains(&key);
            if !keep {
                left.push(p.display().to_string());
            }
            keep
        }
        _ => true,
    });
    if !quiet && !left.is_empty() {
        eprintln!(
            "soif verify: {} input files not taken by {} yet (not expected in the target): {}",
            left.len(),
            state.display(),
            left.join(", ")
        );
    }
    Ok(())
}

/// Each input's digest (files) or name (URLs, stdin).
fn source_digests(specs: &[InputSpec]) -> Result<Vec<SourceDigest>, Error> {
    specs
        .iter()
        .map(|s| match s {
            InputSpec::File(p) => SourceDigest::of_file(&s.name(), p),
            other => Ok(SourceDigest::named(&other.name())),
        })
        .collect()
}

/// A transform as the manifest records it: its spec, or an inline program's origin.
fn describe_transform(t: &TransformSpec) -> String {
    match t {
        TransformSpec::Spec(s) => s.clone(),
        TransformSpec::Remap { origin, .. } => format!("remap ({origin})"),
    }
}

/// `CLASS<TAB>TEMPLATE<TAB>URL[<TAB>ATTRIBUTE]`.
fn list_line(out: &mut impl Write, f: &Finding) -> std::io::Result<()> {
    write!(
        out,
        "{}\t{}\t{}",
        f.class.as_str(),
        String::from_utf8_lossy(&f.template),
        String::from_utf8_lossy(&f.url)
    )?;
    if let Some(c) = &f.change {
        write!(out, "\t{}", c.attribute)?;
    }
    writeln!(out)
}
