//! `soif convert`: read records, apply transforms, write one format.
//!
//! Also home of [`execute`], which `soif run` shares: it builds the source, the
//! transforms and the sinks, makes the CSV first pass when columns are needed, runs the
//! engine and turns the outcome into an exit status.

use super::{fail, runtime, InputArgs, Reporter};
use clap::Args;
use soif_codecs::soif::split::RangeSpec;
use soif_codecs::Record;
use soif_pipeline::engine::ErrorPolicy;
use soif_pipeline::transforms::{self, TransformContext};
use soif_pipeline::Source;
use soif_pipeline::{Engine, EngineOptions, Error, Sink, SinkError, Summary};
use soif_sinks::wide::ShapeCollector;
use soif_sinks::{Charset, Format, SinkOptions};
use soif_sources::range::RangeSource;
use soif_sources::{InputFormat, InputSource, InputSpec, SourceOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// Convert SOIF (or JSON Lines) into another format.
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
  hits:10 | hits:11..20, since:DATE, match:Attr=value, dedupe[:url|ATTR]

Exit status: 0 all records converted, 1 failed, 2 usage or configuration error,
3 finished but records were skipped or quarantined, 75 another run holds --state.")]
pub struct ConvertArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// Output format: jsonl, soif, csv, rdfxml, sqlite, rdm, parquet, arrow (an Arrow IPC
    /// stream), or null (parse and count only).
    #[arg(long, value_name = "FORMAT", value_parser = Format::ALL)]
    pub to: String,

    /// Output path (default stdout; sqlite needs one) or, for rdm, a catalog URL.
    #[arg(short, long, value_name = "OUTPUT")]
    pub output: Option<String>,

    /// A transform NAME[:ARGS]; repeat to chain them in order (see below).
    #[arg(short = 't', long = "transform", value_name = "TRANSFORM")]
    pub transforms: Vec<String>,

    /// How to write values that are not UTF-8 where text is needed: `utf8` (JSON gets
    /// {"base64": …}, text formats a replacement) or `latin1` (read them as ISO 8859-1).
    #[arg(long, value_name = "CHARSET", default_value = "utf8", value_parser = ["utf8", "latin1"])]
    pub charset: String,

    /// CSV (and wide Parquet) columns after template,url (default: from --schema, or a
    /// first pass over the input).
    #[arg(long, value_name = "A,B,…", value_delimiter = ',')]
    pub columns: Option<Vec<String>>,

    /// CSV: separator between the items of a list.
    #[arg(long, value_name = "SEP", default_value = "|")]
    pub list_separator: String,

    /// CSV: start with a UTF-8 byte-order mark, so that Excel reads the file as UTF-8.
    #[arg(long)]
    pub bom: bool,

    /// RDF/XML: also write qualified DCMI terms.
    #[arg(long)]
    pub dcterms: bool,

    /// SQLite rows per transaction (default 10000, and at most 64 MiB of records);
    /// RDM records per POST (default 1000).
    #[arg(long, value_name = "N")]
    pub batch_size: Option<usize>,

    /// An RDM @SCHEMA file: CSV columns, SQLite column types, the `validate` transform.
    #[arg(long, value_name = "SCHEMA")]
    pub schema: Option<PathBuf>,

    /// Parquet compression.
    #[arg(long, value_name = "CODEC", default_value = "zstd", value_parser = soif_sinks::parquet::Compression::ALL)]
    pub compression: String,

    /// Parquet layout: `records` (soif's Arrow layout: lossless, attributes as an ordered
    /// list of name/value) or `wide` (a column per attribute, chosen as for CSV; list
    /// columns for multi-values; typed columns from a --schema's Data-Type).
    #[arg(long, value_name = "LAYOUT", default_value = "records", value_parser = soif_sinks::parquet::Layout::ALL)]
    pub parquet_layout: String,

    #[command(flatten)]
    pub state: super::incremental::StateArgs,

    /// Bearer token for an rdm output.
    #[arg(long, value_name = "TOKEN", env = "SOIF_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// RDM: gzip each POST (`Content-Encoding: gzip`, which the note allows and `soif
    /// serve` accepts; another catalog server may not).
    #[arg(long)]
    pub gzip_posts: bool,

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
    let format = Format::parse(&args.to)
        .ok_or_else(|| Error::Config(format!("unknown output format `{}`", args.to)))?;
    let mut sink = SinkOptions::new(format);
    sink.output = args.output.clone();
    sink.columns = args.columns.clone();
    sink.list_separator = args.list_separator.clone();
    sink.charset = parse_charset(&args.charset)?;
    sink.dcterms = args.dcterms;
    sink.bom = args.bom;
    sink.batch_size = args.batch_size.map(|b| b.max(1));
    sink.schema = args.schema.clone();
    sink.token = args.token.clone();
    sink.gzip_posts = args.gzip_posts;
    sink.inputs = args.input.inputs.clone();
    sink.compression = parse_compression(&args.compression)?;
    sink.parquet_layout = parse_parquet_layout(&args.parquet_layout)?;
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
        source: args.input.source_options(),
        engine,
        transforms: args.transforms.clone(),
        context: args.input.transform_context(args.schema.clone()),
        sinks: vec![sink],
        quiet: args.input.quiet,
        state: args.state.options(None)?,
        report: args.state.report.clone(),
        inputs: args.input.inputs.clone(),
    })
}

/// `--range` reads one plain file: refused for anything else, with what to do instead.
fn range_input(
    input: &super::InputArgs,
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

pub fn parse_charset(s: &str) -> Result<Charset, Error> {
    match s {
        "utf8" | "utf-8" => Ok(Charset::Utf8),
        "latin1" | "latin-1" | "iso-8859-1" => Ok(Charset::Latin1),
        other => Err(Error::Config(format!(
            "unknown charset `{other}` (utf8 or latin1)"
        ))),
    }
}

pub fn parse_compression(s: &str) -> Result<soif_sinks::parquet::Compression, Error> {
    soif_sinks::parquet::Compression::parse(s).ok_or_else(|| {
        Error::Config(format!(
            "unknown compression `{s}` ({})",
            soif_sinks::parquet::Compression::ALL.join(", ")
        ))
    })
}

pub fn parse_parquet_layout(s: &str) -> Result<soif_sinks::parquet::Layout, Error> {
    soif_sinks::parquet::Layout::parse(s)
        .ok_or_else(|| Error::Config(format!("unknown parquet layout `{s}` (records or wide)")))
}

/// Everything one pass of the engine needs, from the command line or a pipeline file.
pub struct Job {
    pub specs: Vec<InputSpec>,
    /// `--range`: one byte range of one plain file instead of `specs`.
    pub range: Option<(PathBuf, RangeSpec)>,
    pub source: SourceOptions,
    /// The observer is set by [`execute`].
    pub engine: EngineOptions,
    pub transforms: Vec<String>,
    pub context: TransformContext,
    pub sinks: Vec<SinkOptions>,
    pub quiet: bool,
    /// `--state` (or a pipeline's `[state]`): an incremental run.
    pub state: Option<super::incremental::StateOptions>,
    /// `--report FILE.json`.
    pub report: Option<PathBuf>,
    /// The inputs as given (the report's sources).
    pub inputs: Vec<String>,
}

impl Job {
    /// The records' source: the inputs, or the one range of one file.
    fn source(&self) -> Box<dyn Source> {
        match &self.range {
            Some((path, spec)) => Box::new(RangeSource::new(path.clone(), *spec)),
            None => Box::new(InputSource::new(self.specs.clone(), self.source.clone())),
        }
    }
}

/// Runs a job and returns the exit status (printing the summary or the error). With
/// `--state`, [`super::incremental`] decides what to take and commits it.
pub fn execute(mut job: Job) -> ExitCode {
    if job.state.is_some() {
        return super::incremental::execute(job);
    }
    let reporter = Reporter::new(job.quiet);
    let started = soif_state::now_rfc3339();
    let (summary, result) = match run_job(&mut job, &reporter) {
        Ok(pair) => pair,
        Err(e) => return fail(&e),
    };
    let code = match &result {
        Ok(()) => {
            reporter.summary(&summary);
            super::exit_for(&summary)
        }
        Err(e) => reporter.failed(&summary, e),
    };
    if let Some(path) = &job.report {
        let report = super::incremental::plain_report(&job, &started, &summary, &result);
        if let Err(e) = super::incremental::write_report(path, &report) {
            return fail(&e);
        }
    }
    code
}

/// Runs the engine over the job's inputs into its sinks (after the CSV / wide Parquet
/// first pass when one is needed) and returns the counts and the outcome. `Err` only
/// when no runtime could be started.
pub fn run_job(
    job: &mut Job,
    reporter: &Arc<Reporter>,
) -> Result<(Summary, Result<(), Error>), Error> {
    // Sources' notices (an OAI-PMH page asked again after a 503) are warnings.
    let r = reporter.clone();
    job.source.notices = Some(soif_sources::Notices(Arc::new(move |m: &str| {
        soif_pipeline::engine::Observer::warning(&*r, m)
    })));
    let rt = runtime()?;
    let start = std::time::Instant::now();
    let pair = rt.block_on(async {
        let prepared = async {
            // Kept alive until the run ends: spooled copies of stdin / URLs.
            let spooled = first_pass(job).await?;
            let transforms = build_transforms(job)?;
            let sinks = job
                .sinks
                .iter()
                .map(soif_sinks::build)
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, Error>((spooled, transforms, sinks))
        };
        match prepared.await {
            Ok((_spooled, transforms, sinks)) => {
                let mut opts = job.engine.clone();
                opts.observer = Some(reporter.clone());
                Engine::new(opts)
                    .run_counted(job.source(), transforms, sinks)
                    .await
            }
            // Nothing was converted yet (the CSV first pass, opening the output).
            Err(e) => (
                Summary {
                    elapsed: start.elapsed(),
                    ..Summary::default()
                },
                Err(e),
            ),
        }
    });
    // Don't wait for a blocked stdin read (an early failure with stdin still open).
    rt.shutdown_background();
    Ok(pair)
}

fn build_transforms(job: &Job) -> Result<Vec<Box<dyn soif_pipeline::Transform>>, Error> {
    job.transforms
        .iter()
        .map(|spec| transforms::build(spec, &job.context))
        .collect()
}

/// CSV needs its columns before the first row. When a csv sink has neither --columns nor
/// --schema, read the input once through the same transforms and collect the attribute
/// names. A wide Parquet sink always needs the pass: besides the names (unless given), it
/// learns which attributes hold several values (list columns). Inputs that cannot be read
/// twice (stdin, URLs) are first copied to temporary files, which are returned so they
/// live until the second pass is done.
async fn first_pass(job: &mut Job) -> Result<Vec<soif_sources::TempPath>, Error> {
    let csv =
        |s: &SinkOptions| s.format == Format::Csv && s.columns.is_none() && s.schema.is_none();
    let wide = |s: &SinkOptions| {
        s.format == Format::Parquet && s.parquet_layout == soif_sinks::parquet::Layout::Wide
    };
    let needs = |s: &SinkOptions| csv(s) || wide(s);
    if !job.sinks.iter().any(needs) {
        return Ok(Vec::new());
    }
    let mut spooled = Vec::new();
    for spec in &mut job.specs {
        if !spec.is_rereadable() {
            let name = spec.name();
            let path = soif_sources::spool_with(spec, &job.source).await?;
            *spec = InputSpec::Spooled {
                path: path.to_path_buf(),
                name,
            };
            spooled.push(path);
        }
    }
    let collector = Arc::new(Mutex::new(ShapeCollector::default()));
    let source = job.source();
    let mut opts = job.engine.clone();
    // Bad records are the second pass's business: here they are only skipped.
    opts.policy = ErrorPolicy::Skip;
    opts.observer = None;
    let sink = CollectorSink(collector.clone());
    Engine::new(opts)
        .run(source, build_transforms(job)?, vec![Box::new(sink)])
        .await?;
    let (columns, multi) = collector
        .lock()
        .map(|c| (c.names.columns().to_vec(), c.multi.clone()))
        .map_err(|_| Error::Fatal("the column collector panicked".to_string()))?;
    for s in job.sinks.iter_mut() {
        if csv(s) || (wide(s) && s.columns.is_none() && s.schema.is_none()) {
            s.columns = Some(columns.clone());
        }
        if wide(s) {
            s.multi_valued = Some(multi.clone());
        }
    }
    Ok(spooled)
}

/// Feeds the first pass into the column collector.
struct CollectorSink(Arc<Mutex<ShapeCollector>>);

impl Sink for CollectorSink {
    fn name(&self) -> &str {
        "csv columns"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        if let Ok(mut c) = self.0.lock() {
            c.observe(record);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}
