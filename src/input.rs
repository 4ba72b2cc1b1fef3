//! [`InputArgs`]: the options for reading records that `convert`, `stats` and `validate`
//! share, and how they become a source, the engine's options and the transforms' context.

use crate::terminal::Reporter;
use clap::Args;
use soif_options::{ByteSize, ErrorPolicy, InputFormat, OptionError};
use soif_pipeline::transforms::remap::tables::Tables;
use soif_pipeline::transforms::{Files, TransformContext};
use soif_pipeline::{EngineOptions, Error};
use soif_sources::{InputSettings, InputSource, InputSpec};
use std::path::PathBuf;
use std::sync::Arc;

/// Options for reading records, shared by `convert` and `stats`.
#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// Inputs: files, directories (read recursively, sorted), globs, `-` for stdin,
    /// http(s):// URLs, RDM catalogs (x-catalog://host:port/name[?scope=…&view-hits=…], an
    /// rd-request), OAI-PMH repositories (oai+http(s)://host/path?metadataPrefix=oai_dc|soif
    /// [&set=…&from=…&until=…], a ListRecords harvest). None: stdin. gzip, bzip2, xz and
    /// zstd are detected by magic bytes.
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<String>,

    /// Input format: `auto` (Parquet / Arrow IPC when named .parquet / .arrow / .arrows or
    /// by their magic bytes, JSON Lines when named .jsonl/.ndjson or starting with `{`,
    /// else SOIF), `soif`, `jsonl`, `parquet` or `arrow` (files written by soif's sinks).
    #[arg(
        long,
        value_name = "FORMAT",
        default_value = "auto",
        hide_possible_values = true
    )]
    pub from: InputFormat,

    /// What to do with a record that cannot be read or converted: stop (`fail`), count and
    /// report it (`skip`), or also write its original bytes to --quarantine
    /// (`quarantine`). Default `fail`; --quarantine alone implies `quarantine`.
    #[arg(long, value_name = "POLICY", value_parser = ErrorPolicy::ENGINE_NAMES)]
    pub on_error: Option<String>,

    /// File that receives the original bytes of every rejected record.
    #[arg(long, value_name = "FILE")]
    pub quarantine: Option<PathBuf>,

    /// Repair what legacy data is known to carry (a space instead of the tab after `:`,
    /// byte counts broken by CRLF conversion or collapsed whitespace, sizes like `{x}`);
    /// each repair is counted and reported.
    #[arg(long)]
    pub lenient: bool,

    /// Largest record accepted; larger ones are rejected without being read into memory.
    /// A size is a number of bytes or a number with a unit: kB, MB, GB (10^3, 10^6, 10^9
    /// bytes), KiB, MiB, GiB (2^10, 2^20, 2^30), e.g. 1048576, 512KiB, 64MB, 1GiB.
    #[arg(long, value_name = "BYTES", default_value = "64MiB")]
    pub max_record_size: ByteSize,

    /// Read files as streams instead of mapping them into memory. Mapped (the default),
    /// a plain file is decoded in place: faster, and a huge record costs no extra memory.
    /// Use this for files another process may truncate while soif reads them (the kernel
    /// would stop soif with SIGBUS).
    #[arg(long)]
    pub no_mmap: bool,

    /// Memory each of `order`, `dedupe` and `validate`'s uniqueness check may use
    /// (e.g. 64MiB, 512KiB) before spilling to temporary files.
    #[arg(long, value_name = "BYTES", default_value = "64MiB")]
    pub memory_budget: ByteSize,

    /// Directory for those temporary files (default: the system's, e.g. $TMPDIR).
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,

    /// A lookup table for `remap` programs: a CSV file with a header row, loaded before
    /// any record is read and searched with get_enrichment_table_record /
    /// find_enrichment_table_records("NAME", …). Repeat for several.
    #[arg(long = "table", value_name = "NAME=FILE.csv")]
    pub tables: Vec<String>,

    /// No progress bar, no summary line, no warnings: only errors.
    #[arg(short, long)]
    pub quiet: bool,
}

impl InputArgs {
    pub fn policy(&self) -> Result<ErrorPolicy, Error> {
        Ok(ErrorPolicy::engine_from_options(
            ("--on-error", self.on_error.as_deref()),
            ("--quarantine", self.quarantine.clone()),
        )?)
    }

    /// The options as the other front ends give them (not checked).
    fn unchecked(&self) -> soif_options::SourceOptions {
        soif_options::SourceOptions {
            inputs: self.inputs.clone(),
            format: self.from,
            lenient: self.lenient,
            max_record_size: self.max_record_size,
            mmap: !self.no_mmap,
        }
    }

    /// The options as the other front ends give them (checked as they are).
    pub fn options(&self) -> Result<soif_options::SourceOptions, Error> {
        let o = self.unchecked();
        if o.check().is_err() {
            let e = OptionError::invalid("--max-record-size", "0", "a positive size");
            return Err(e.into());
        }
        Ok(o)
    }

    pub fn input_settings(&self) -> InputSettings {
        InputSettings::from(&self.unchecked())
    }

    pub fn engine_options(&self, reporter: &Arc<Reporter>) -> Result<EngineOptions, Error> {
        let decoder = self.options()?.decoder_options();
        Ok(EngineOptions {
            policy: self.policy()?,
            decoder,
            observer: Some(reporter.clone()),
            ..EngineOptions::default()
        })
    }

    /// What the `-t` transforms get: --memory-budget, --temp-dir, a schema and the
    /// --table lookup tables (loaded here: a missing or bad table is a usage error).
    pub fn transform_context(&self, schema: Option<PathBuf>) -> Result<TransformContext, Error> {
        let specs = self
            .tables
            .iter()
            .map(|t| Tables::parse_spec(t))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TransformContext {
            temp_dir: self.temp_dir.clone(),
            memory_budget: self.memory_budget.as_usize(),
            schema,
            tables: Tables::load(
                specs.iter().map(|(n, p)| (n.as_str(), p.as_path())),
                &Files::default(),
            )?,
            ..TransformContext::default()
        })
    }

    pub fn specs(&self) -> Result<Vec<InputSpec>, Error> {
        soif_sources::expand(&self.inputs)
    }

    pub fn source(&self, specs: Vec<InputSpec>) -> InputSource {
        InputSource::new(specs, self.input_settings())
    }
}
