//! `soif convert`: read records, apply transforms, write one format.
//!
//! The flags become a [`Job`], which [`crate::job`] runs (as it runs `soif run`'s).

use crate::input::InputArgs;
use crate::job::{execute, Job};
use crate::terminal::{fail, Reporter};
use clap::Args;
use soif_codecs::soif::split::RangeSpec;
use soif_options::InputFormat;
use soif_pipeline::Error;
use soif_sinks::SinkArgs;
use soif_sources::InputSpec;
use std::path::PathBuf;
use std::process::ExitCode;

/// Convert records (SOIF, JSON Lines, Parquet or Arrow) into another format.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  soif convert All-Templates.gz --to jsonl -o records.jsonl
  soif convert archive/ --to csv --columns Title,Author -o titles.csv
  curl -s http://host/All-Templates.gz | soif convert --to soif -t collapse -t expand
  soif convert All-Templates.gz --to parquet -o records.parquet
  soif convert records.parquet --to soif          # back to canonical SOIF, byte for byte
  soif convert archive/ -t collapse --to parquet --parquet-layout wide -o wide.parquet
  soif convert broken.soif --to jsonl --on-error quarantine --quarantine bad.soif --lenient
  soif split --parts 8 big.soif | parallel -k soif convert big.soif --range {} --to jsonl -q
  soif convert dumps/ --state dumps.state --to sqlite -o catalog.db   # nightly: only new files
  soif convert dumps/ --state dumps.state --to parquet -o out/records.parquet --dry-run
  soif convert 'oai+https://repo.example.org/oai?metadataPrefix=oai_dc' --state oai.state \\
      --to sqlite -o mirror.db                        # an OAI-PMH mirror: only what changed

Transforms (-t, applied in order):
  collapse, expand, dc, validate[:SCHEMA], select:A,B, order:-Score,+Title,
  hits:10 | hits:11..20, since:DATE, match:Attr=value, dedupe[:url|ATTR],
  remap:FILE.vrl (a VRL program; --table NAME=FILE.csv for its lookups)

Exit status: 0 all records converted, 1 failed, 2 usage or configuration error,
3 finished but records were skipped or quarantined, 75 another run holds --state.")]
pub struct ConvertArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// The output: --to FORMAT and the flags of each format.
    #[command(flatten)]
    pub sink: SinkArgs,

    /// A transform NAME[:ARGS]; repeat to chain them in order (see below).
    #[arg(short = 't', long = "transform", value_name = "TRANSFORM")]
    pub transforms: Vec<String>,

    #[command(flatten)]
    pub state: crate::job::IncrementalArgs,

    /// Convert only this byte range of one plain SOIF file, as `soif split` prints it:
    /// START..END, then the decoder's state at START (`,record=N`, `,envelope=OFFSET`,
    /// `,end-known`). The records are those of a run over the whole file whose objects
    /// start in the range, with the same offsets, record numbers and errors (the last one
    /// is read on past END). Give the --lenient and --max-record-size `soif split` had.
    #[arg(long, value_name = "RANGE", value_parser = parse_range)]
    pub range: Option<RangeSpec>,
}

fn parse_range(s: &str) -> Result<RangeSpec, String> {
    s.parse()
        .map_err(|e: soif_codecs::soif::split::SplitError| e.to_string())
}

pub fn run(args: ConvertArgs) -> ExitCode {
    let job = match job(&args) {
        Ok(job) => job,
        Err(e) => return fail(&e),
    };
    execute(job)
}

fn job(args: &ConvertArgs) -> Result<Job, Error> {
    let sink = args.sink.config()?;
    let mut engine = args.input.engine_options(&Reporter::silent())?;
    engine.observer = None;
    let incremental = args.state.state.is_some();
    if incremental && args.range.is_some() {
        return Err(Error::Config(
            "--range and --state do not go together: a range is one part of one file, and the state remembers whole inputs".into(),
        ));
    }
    // With --state the inputs are expanded per input by the incremental run (stdin is
    // refused there).
    let specs = if incremental {
        Vec::new()
    } else {
        args.input.specs()?
    };
    let range = match &args.range {
        None => None,
        Some(spec) => Some(range_input(&args.input, &specs, *spec)?),
    };
    Ok(Job {
        specs,
        range,
        source: args.input.input_settings(),
        engine,
        transforms: args.transforms.iter().map(|t| t.as_str().into()).collect(),
        context: args
            .input
            .transform_context(args.sink.options.schema.clone())?,
        sinks: vec![sink],
        quiet: args.input.quiet,
        state: args.state.options(None)?,
        report: args.state.report.clone(),
        inputs: args.input.inputs.clone(),
        multi_valued: None,
    })
}

/// `--range` reads one plain file: refused for anything else, with what to do instead.
fn range_input(
    input: &InputArgs,
    specs: &[InputSpec],
    spec: RangeSpec,
) -> Result<(PathBuf, RangeSpec), Error> {
    let path = match specs {
        [InputSpec::File(path)] => path.clone(),
        [InputSpec::Stdin] => {
            return Err(Error::Config(
                "--range reads a byte range of a plain file; stdin cannot be entered in the middle (save it to a file first)".into(),
            ))
        }
        [InputSpec::Url(_)] => {
            return Err(Error::Config(
                "--range reads a byte range of a local plain file, not a URL".into(),
            ))
        }
        _ => {
            return Err(Error::Config(format!(
                "--range reads a byte range of one file; {} inputs were given",
                specs.len()
            )))
        }
    };
    if input.no_mmap {
        return Err(Error::Config(
            "--range reads the file mapped into memory; it cannot go with --no-mmap".into(),
        ));
    }
    if !matches!(input.from, InputFormat::Auto | InputFormat::Soif) {
        return Err(Error::Config(format!(
            "--range reads SOIF, not --from {}",
            input.from
        )));
    }
    Ok((path, spec))
}
