//! `soif run PIPELINE.toml`: a pipeline file (see [`crate::pipeline_file`]) run in one
//! pass — every sink receives every record as it is read.

use crate::job::{execute, Job};
use crate::pipeline_file::PipelineConfig;
use crate::terminal::fail;
use clap::Args;
use soif_pipeline::{EngineOptions, Error};
use soif_sinks::SinkConfig;
use soif_sources::InputSettings;
use std::path::PathBuf;
use std::process::ExitCode;

/// Run a pipeline file: a source, transforms and one or more sinks in one pass.
#[derive(Debug, Args)]
#[command(after_help = "A pipeline file (TOML):

  transforms = [\"collapse\"]            # optional, applied in order; a remap program
                                       # inline: { remap = '''...''' }
  memory_budget = \"64MiB\"              # optional: order/dedupe spill beyond this
  temp_dir = \"/var/tmp\"                # optional: where they spill

  [source]
  inputs = [\"dumps/*.soif.gz\"]         # files, directories, globs, -, URLs
  format = \"auto\"                      # auto | soif | jsonl | parquet | arrow
  lenient = false
  max_record_size = \"64MiB\"              # or 64MB (10^6 bytes each), or bytes

  [errors]
  on_error = \"quarantine\"              # fail | skip | quarantine
  quarantine = \"rejected.soif\"

  [[sink]]
  format = \"jsonl\"
  output = \"records.jsonl\"

  [[sink]]
  format = \"sqlite\"
  output = \"catalog.db\"

  [tables]                             # optional: lookup tables for remap programs
  types = \"types.csv\"

  [state]                              # optional: incremental runs (see --state)
  path = \"dumps.state\"
  settle = \"60s\"                       # files modified more recently wait
  report = \"last-run.json\"

Each [[sink]] takes the keys of the convert flags that concern its format (output,
columns, list_separator, charset, bom, batch_size, schema, token, gzip_posts,
compression, parquet_layout); a key of another format is an error. Examples are in configs/.

Exit status: 0 all records converted, 1 failed, 2 usage or configuration error,
3 finished but records were skipped or quarantined, 75 another run holds the state.")]
pub struct RunArgs {
    /// The pipeline file.
    #[arg(value_name = "PIPELINE.toml")]
    pub pipeline: PathBuf,

    /// No progress bar, no summary line, no warnings: only errors.
    #[arg(short, long)]
    pub quiet: bool,

    /// --state, --settle and --report override the pipeline's [state] table.
    #[command(flatten)]
    pub state: crate::job::IncrementalArgs,
}

pub fn run(args: RunArgs) -> ExitCode {
    match job(&args) {
        Ok(job) => execute(job),
        Err(e) => fail(&e),
    }
}

fn job(args: &RunArgs) -> Result<Job, Error> {
    let config = PipelineConfig::load(&args.pipeline)?;
    let at = |what: String| Error::Config(format!("{}: {what}", args.pipeline.display()));
    let policy = config
        .errors
        .policy()
        .map_err(|e| at(format!("[errors] {e}")))?;
    let decoder = config.source.decoder_options();

    let mut sinks = config.sinks.clone();
    for s in sinks.iter_mut() {
        // The pipeline's `schema` serves the sinks that take one and have none.
        if let Some(slot) = s.schema_mut() {
            if slot.is_none() {
                slot.clone_from(&config.schema);
            }
        }
        let token = match s {
            SinkConfig::Rdm(c) => Some(&mut c.token),
            SinkConfig::Sparql(c) => Some(&mut c.token),
            _ => None,
        };
        if let Some(token) = token.filter(|t| t.is_none()) {
            *token = std::env::var("SOIF_TOKEN").ok();
        }
    }
    Ok(Job {
        specs: if config.state.is_some() || args.state.state.is_some() {
            // Expanded per input by the incremental run.
            Vec::new()
        } else {
            soif_sources::expand(&config.source.inputs)?
        },
        range: None,
        source: InputSettings::from(&config.source),
        engine: EngineOptions {
            policy,
            decoder,
            ..EngineOptions::default()
        },
        transforms: config.transforms.clone(),
        context: config.transform_context().map_err(|e| at(e.to_string()))?,
        sinks,
        quiet: args.quiet,
        state: args.state.options(config.state.as_ref())?,
        report: args.state.report(config.state.as_ref()),
        inputs: config.source.inputs.clone(),
        multi_valued: None,
    })
}
