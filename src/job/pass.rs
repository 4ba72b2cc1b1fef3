//! One pass of the engine over a [`Job`]: the CSV / wide Parquet first pass when a sink
//! needs it, then the transforms and sinks.

use crate::terminal::{runtime, Reporter};
use soif_codecs::soif::split::RangeSpec;
use soif_codecs::Record;
use soif_options::ErrorPolicy;
use soif_pipeline::transforms::{TransformContext, TransformSpec};
use soif_pipeline::Source;
use soif_pipeline::{Engine, EngineOptions, Error, Sink, SinkError, Summary};
use soif_sinks::wide::ShapeCollector;
use soif_sinks::{FirstPass, RunContext, SinkConfig};
use soif_sources::range::RangeSource;
use soif_sources::{InputSettings, InputSource, InputSpec};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Everything one pass of the engine needs, from the command line or a pipeline file.
pub struct Job {
    pub specs: Vec<InputSpec>,
    /// `--range`: one byte range of one plain file instead of `specs`.
    pub range: Option<(PathBuf, RangeSpec)>,
    pub source: InputSettings,
    /// The observer is set by [`execute`].
    pub engine: EngineOptions,
    pub transforms: Vec<TransformSpec>,
    pub context: TransformContext,
    pub sinks: Vec<SinkConfig>,
    pub quiet: bool,
    /// `--state` (or a pipeline's `[state]`): an incremental run.
    pub state: Option<super::state::IncrementalOptions>,
    /// `--report FILE.json`.
    pub report: Option<PathBuf>,
    /// The inputs as given (the report's sources).
    pub inputs: Vec<String>,
    /// Wide Parquet: the attributes that hold several values (found by the first pass).
    pub multi_valued: Option<std::collections::HashSet<String>>,
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
            let run = RunContext {
                inputs: job.inputs.clone(),
                multi_valued: job.multi_valued.clone(),
            };
            let sinks = job
                .sinks
                .iter()
                .map(|s| soif_sinks::build(s, &run))
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
        .map(|spec| spec.build(&job.context))
        .collect()
}

/// CSV needs its columns before the first row. When a csv sink has neither --columns nor
/// --schema, read the input once through the same transforms and collect the attribute
/// names. A wide Parquet sink always needs the pass: besides the names (unless given), it
/// learns which attributes hold several values (list columns). Inputs that cannot be read
/// twice (stdin, URLs) are first copied to temporary files, which are returned so they
/// live until the second pass is done.
async fn first_pass(job: &mut Job) -> Result<Vec<soif_sources::TempPath>, Error> {
    if job.sinks.iter().all(|s| s.first_pass() == FirstPass::None) {
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
        match s.first_pass() {
            FirstPass::Columns | FirstPass::ColumnsAndShape => s.set_columns(columns.clone()),
            FirstPass::Shape | FirstPass::None => {}
        }
    }
    if job.sinks.iter().any(|s| {
        matches!(
            s.first_pass(),
            FirstPass::Shape | FirstPass::ColumnsAndShape
        )
    }) {
        job.multi_valued = Some(multi);
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
