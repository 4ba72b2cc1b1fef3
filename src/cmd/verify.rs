//! `soif verify`: check that a target holds what converting the sources writes — every
//! record, with its values, and none of those deleted (docs/verify.md). The reading and
//! the comparison are the `soif_verify` crate's; this module turns the flags into a
//! [`Verification`] and prints the [`Report`].

use crate::input::InputArgs;
use crate::terminal::{fail, runtime, Reporter, EXIT_OK, EXIT_REJECTED};
use clap::Args;
use serde::Deserialize;
use soif_pipeline::transforms::TransformSpec;
use soif_pipeline::Error;
use soif_sinks::SinkConfig;
use soif_sources::InputSource;
use soif_verify::compare::Finding;
use soif_verify::report::Report;
use soif_verify::target::Target;
use soif_verify::Verification;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Check that a catalog or files hold what converting the sources writes.
///
/// Reads the sources as the conversion did (same options, same -t transforms) and the
/// target back, and compares them record by record: missing, extra, changed, deletions
/// not applied.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  soif convert archive/ -t collapse --to sqlite -o catalog.db
  soif verify archive/ -t collapse --against catalog.db
  soif verify dumps/ --against records.parquet --report verify.json
  soif verify archive/ --against out.jsonl --list > differences.tsv

The sources are read with the same options and transforms (-t) as the conversion; the
target's format comes from its name (.db, .sqlite, .jsonl, .soif, .parquet, .arrow, a
directory of such files) or --to.

--list prints one line per record that does not match, on stdout:
  CLASS<TAB>TEMPLATE<TAB>URL[<TAB>ATTRIBUTE]
with CLASS missing, extra, changed or deletion_not_applied.

Exit status: 0 the target matches, 1 failed, 2 usage or configuration error,
3 the target does not match (records missing, extra, changed, deletions not applied, or
records of the target unreadable).")]
pub struct VerifyArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// A transform NAME[:ARGS] of the conversion; repeat in the conversion's order.
    #[arg(short = 't', long = "transform", value_name = "TRANSFORM")]
    pub transforms: Vec<String>,

    /// The target: a SQLite catalog, a JSON Lines, SOIF, Parquet or Arrow file, or a
    /// directory of per-run files.
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
}

pub fn run(args: VerifyArgs) -> ExitCode {
    match verify(&args) {
        Ok(report) => {
            if !args.input.quiet {
                eprint!("{report}");
            }
            if report.matches() {
                ExitCode::from(EXIT_OK)
            } else {
                ExitCode::from(EXIT_REJECTED)
            }
        }
        Err(e) => fail(&e),
    }
}

fn verify(args: &VerifyArgs) -> Result<Report, Error> {
    let against = args
        .against
        .as_deref()
        .ok_or_else(|| Error::Config("soif verify needs --against TARGET".into()))?;
    let sink = target_sink(against, args.to.as_deref(), args.charset.as_deref())?;
    let target = Target::of_sink(&sink)?;
    let specs = args.input.specs()?;
    let transforms: Vec<TransformSpec> =
        args.transforms.iter().map(|t| t.as_str().into()).collect();
    let context = args.input.transform_context(None)?;
    let built = transforms
        .iter()
        .map(|t| t.build(&context))
        .collect::<Result<Vec<_>, _>>()?;
    let reporter = Reporter::new(args.input.quiet);
    let v = Verification {
        sources: Box::new(InputSource::new(specs, args.input.input_settings())),
        transforms: built,
        target,
        engine: args.input.engine_options(&reporter)?,
        settings: args.input.input_settings(),
        temp_dir: args.input.temp_dir.clone(),
        observer: Some(reporter.clone()),
    };
    let rt = runtime()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let list = args.list;
    let report = soif_verify::verify(v, &rt, &mut |f: &Finding| {
        if list {
            list_line(&mut out, f)
        } else {
            Ok(())
        }
    });
    rt.shutdown_background();
    reporter.abandon();
    out.flush().map_err(|e| Error::io("writing the list", e))?;
    let report = report?;
    if let Some(path) = &args.report {
        let json = serde_json::to_value(&report)
            .map_err(|e| Error::Fatal(format!("the report as JSON: {e}")))?;
        crate::job::incremental::write_report(path, &json)?;
    }
    Ok(report)
}

/// The sink configuration a conversion to `target` had: its format (given, or from the
/// name) and charset, read as a pipeline's `[[sink]]` table is.
fn target_sink(target: &str, to: Option<&str>, charset: Option<&str>) -> Result<SinkConfig, Error> {
    let format = match to {
        Some(f) => f.to_string(),
        None => Target::guess_format(target)
            .ok_or_else(|| {
                Error::Config(format!(
                    "cannot tell the format of the target {target} from its name: give --to"
                ))
            })?
            .as_str()
            .to_string(),
    };
    let mut table = serde_json::json!({ "format": format, "output": target });
    if let Some(c) = charset {
        table["charset"] = c.into();
    }
    SinkConfig::deserialize(table).map_err(|e| Error::Config(e.to_string()))
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
