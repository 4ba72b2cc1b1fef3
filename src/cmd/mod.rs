//! The subcommands, one module each. To add one: a module here, a variant in
//! [`crate::Command`] and an arm in `main`'s dispatch.
//!
//! This module holds what the record-reading commands share: the input options
//! ([`InputArgs`]), turning them into a source and engine options, the terminal
//! [`Reporter`] (progress bar, warnings, the summary line) and exit statuses.

pub mod convert;
pub mod incremental;
pub mod rdm;
pub mod run;
pub mod serve;
pub mod split;
pub mod state;
pub mod stats;
pub mod validate;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use soif_codecs::soif::DecoderOptions;
use soif_options::{ByteSize, ErrorPolicy, InputFormat};
use soif_pipeline::engine::{Observer, Progress};
use soif_pipeline::transforms::TransformContext;
use soif_pipeline::{EngineOptions, Error, Summary};
use soif_sources::{InputSource, InputSpec, SourceOptions};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Exit status: every record converted.
pub const EXIT_OK: u8 = 0;
/// Exit status: the run failed (message on stderr).
pub const EXIT_FAILED: u8 = 1;
/// Exit status: usage or configuration error.
pub const EXIT_USAGE: u8 = 2;
/// Exit status: finished, but records were skipped or quarantined.
pub const EXIT_REJECTED: u8 = 3;

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

    /// No progress bar, no summary line, no warnings: only errors.
    #[arg(short, long)]
    pub quiet: bool,
}

impl InputArgs {
    pub fn policy(&self) -> Result<ErrorPolicy, Error> {
        Ok(ErrorPolicy::from_options(
            ("--on-error", self.on_error.as_deref()),
            ("--quarantine", self.quarantine.clone()),
        )?)
    }

    /// The options as the other front ends give them (checked as they are).
    pub fn options(&self) -> Result<soif_options::SourceOptions, Error> {
        let o = soif_options::SourceOptions {
            inputs: self.inputs.clone(),
            format: self.from,
            lenient: self.lenient,
            max_record_size: self.max_record_size,
            mmap: !self.no_mmap,
        };
        o.check().map_err(|_| {
            Error::Config(format!(
                "--max-record-size {}: must be positive",
                self.max_record_size
            ))
        })?;
        Ok(o)
    }

    pub fn source_options(&self) -> SourceOptions {
        SourceOptions {
            format: self.from,
            max_record_size: self.max_record_size.as_usize(),
            mmap: !self.no_mmap,
            ..SourceOptions::default()
        }
    }

    pub fn engine_options(&self, reporter: &Arc<Reporter>) -> Result<EngineOptions, Error> {
        self.options()?;
        let mut decoder = DecoderOptions::with_max_record_size(self.max_record_size.as_usize());
        decoder.lenient = self.lenient;
        Ok(EngineOptions {
            policy: self.policy()?,
            decoder,
            observer: Some(reporter.clone()),
            ..EngineOptions::default()
        })
    }

    /// What the `-t` transforms get: --memory-budget, --temp-dir and a schema.
    pub fn transform_context(&self, schema: Option<PathBuf>) -> TransformContext {
        TransformContext {
            temp_dir: self.temp_dir.clone(),
            memory_budget: self.memory_budget.as_usize(),
            schema,
        }
    }

    pub fn specs(&self) -> Result<Vec<InputSpec>, Error> {
        soif_sources::expand(&self.inputs)
    }

    pub fn source(&self, specs: Vec<InputSpec>) -> InputSource {
        InputSource::new(specs, self.source_options())
    }
}

/// Prints to stderr: the progress bar (a terminal only), warnings and rejected records
/// (at most [`Reporter::MAX_MESSAGES`] of each, then a count), and the summary line.
pub struct Reporter {
    quiet: bool,
    bar: Option<ProgressBar>,
    start: Instant,
    warnings: AtomicU64,
    rejections: AtomicU64,
}

impl Reporter {
    pub const MAX_MESSAGES: u64 = 100;

    pub fn new(quiet: bool) -> Arc<Reporter> {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}) {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        Arc::new(Reporter {
            quiet,
            bar,
            start: Instant::now(),
            warnings: AtomicU64::new(0),
            rejections: AtomicU64::new(0),
        })
    }

    /// A reporter that prints nothing (first passes).
    pub fn silent() -> Arc<Reporter> {
        Reporter::new(true)
    }

    fn print(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn limited(&self, counter: &AtomicU64, line: &str) {
        if self.quiet {
            return;
        }
        let n = counter.fetch_add(1, Ordering::Relaxed);
        if n < Self::MAX_MESSAGES {
            self.print(line);
        } else if n == Self::MAX_MESSAGES {
            self.print("soif: further messages of this kind are not shown (see the summary)");
        }
    }

    /// Clears the bar and prints the summary line (unless quiet).
    pub fn summary(&self, summary: &Summary) {
        self.summary_line(summary, "");
    }

    /// A failed run: prints the error, then (unless quiet) the summary of how far the run
    /// got, `soif: stopped: N records in, …`; returns the exit status. Usage and
    /// configuration errors (nothing ran) and a closed stdout (`| head`, which ends the
    /// run quietly) print no summary.
    pub fn failed(&self, summary: &Summary, e: &Error) -> ExitCode {
        self.abandon();
        let code = fail(e);
        if !e.is_config() && !is_broken_pipe(e) {
            self.summary_line(summary, "stopped: ");
        }
        code
    }

    fn summary_line(&self, summary: &Summary, prefix: &str) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if self.quiet {
            return;
        }
        let mut line = format!("soif: {prefix}{summary}");
        if summary.warnings > 0 {
            line.push_str(&format!(", {} warnings", summary.warnings));
        }
        if summary.not_quarantined > 0 {
            line.push_str(&format!(
                ", {} rejected records too large to quarantine",
                summary.not_quarantined
            ));
        }
        eprintln!("{line}");
    }

    /// Clears the bar before an error message.
    pub fn abandon(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Observer for Reporter {
    fn progress(&self, p: &Progress) {
        if let Some(bar) = &self.bar {
            if let Some(total) = p.total_bytes {
                bar.set_length(total);
            }
            bar.set_position(p.bytes);
            let secs = self.start.elapsed().as_secs_f64().max(1e-3);
            bar.set_message(format!(
                "{} records ({:.0}/s)",
                p.records,
                p.records as f64 / secs
            ));
        }
    }

    fn warning(&self, message: &str) {
        self.limited(&self.warnings, &format!("soif: warning: {message}"));
    }

    fn rejected(&self, message: &str) {
        self.limited(&self.rejections, &format!("soif: rejected: {message}"));
    }
}

/// The exit status for a finished run.
pub fn exit_for(summary: &Summary) -> ExitCode {
    if summary.rejected > 0 {
        ExitCode::from(EXIT_REJECTED)
    } else {
        ExitCode::from(EXIT_OK)
    }
}

/// Prints an error and returns its exit status (2 for usage/config, else 1).
pub fn fail(e: &Error) -> ExitCode {
    // `soif convert … | head`: the reader has all it wants. Like other Unix filters, stop
    // quietly instead of reporting an error.
    if is_broken_pipe(e) {
        return ExitCode::from(EXIT_OK);
    }
    eprintln!("soif: error: {e}");
    if e.is_config() {
        ExitCode::from(EXIT_USAGE)
    } else {
        ExitCode::from(EXIT_FAILED)
    }
}

/// `soif convert … | head`: the reader closed the pipe.
fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// A tokio runtime for a command.
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("starting the runtime", e))
}
