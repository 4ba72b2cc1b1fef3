//! The options of incremental runs: `--state`, `--settle`, `--dry-run`, `--report`, and
//! a pipeline file's `[state]`.

use crate::pipeline_file::{self, StateConfig};
use clap::Args;
use soif_pipeline::Error;
use soif_state::scan;
use std::path::PathBuf;
use std::time::Duration;

/// The options of incremental runs, shared by `convert` and `run`.
#[derive(Debug, Clone, Default, Args)]
pub struct IncrementalArgs {
    /// Make the run incremental: remember in this SQLite file what was taken, and take
    /// only what is new or changed since the last successful run (files by size, time
    /// and content hash; URLs by their checkpoints). Exactly once even after a crash;
    /// one run at a time (another exits with status 75). File outputs get a new file per
    /// run, named by the run (-o out/records.parquet → out/records.<RUN>.parquet).
    #[arg(long, value_name = "STATE.db")]
    pub state: Option<PathBuf>,

    /// With --state: leave files modified less than this long ago (still being written)
    /// for the next run. Seconds, or 90s, 5m, 1h. [default: 60]
    #[arg(long, value_name = "DURATION", value_parser = scan::parse_duration)]
    pub settle: Option<Duration>,

    /// With --state: list what the run would take, and why the rest is skipped
    /// (unchanged, settling); change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Write the run's summary as JSON to this file (per source: files taken and
    /// skipped, records in / out / rejected, errors; timings; outputs), replaced
    /// atomically after each run.
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,
}

/// An incremental run's settings, from [`IncrementalArgs`] and a pipeline's `[state]`.
#[derive(Debug, Clone)]
pub struct IncrementalOptions {
    pub path: PathBuf,
    pub settle: Duration,
    pub dry_run: bool,
}

impl IncrementalArgs {
    /// The run's state options: the command line first, then the pipeline's `[state]`.
    pub fn options(
        &self,
        config: Option<&StateConfig>,
    ) -> Result<Option<IncrementalOptions>, Error> {
        let path = self
            .state
            .clone()
            .or_else(|| config.map(|c| c.path.clone()));
        let Some(path) = path else {
            if self.dry_run {
                return Err(Error::Config("--dry-run needs --state STATE.db".into()));
            }
            if self.settle.is_some() {
                return Err(Error::Config("--settle needs --state STATE.db".into()));
            }
            return Ok(None);
        };
        let settle = match (self.settle, config.and_then(|c| c.settle.as_ref())) {
            (Some(s), _) => s,
            (None, Some(pipeline_file::Duration::Seconds(n))) => Duration::from_secs(*n),
            (None, Some(pipeline_file::Duration::Text(t))) => scan::parse_duration(t)
                .map_err(|e| Error::Config(format!("[state] settle: {e}")))?,
            (None, None) => soif_state::DEFAULT_SETTLE,
        };
        Ok(Some(IncrementalOptions {
            path,
            settle,
            dry_run: self.dry_run,
        }))
    }

    /// `--report`, or the pipeline's `[state] report`.
    pub fn report(&self, config: Option<&StateConfig>) -> Option<PathBuf> {
        self.report
            .clone()
            .or_else(|| config.and_then(|c| c.report.clone()))
    }
}
