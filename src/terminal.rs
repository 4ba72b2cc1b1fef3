//! What the commands print and how they end: the [`Reporter`] (progress bar, warnings,
//! the summary line), the exit statuses, [`fail`] for an error, [`usage_error`] for a
//! command line clap refused, and the runtime.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use soif_options::OptionError;
use soif_pipeline::engine::{Observer, Progress};
use soif_pipeline::{Error, Summary};
use std::io::IsTerminal;
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

    /// A later phase of a command, counted in steps (`soif verify`'s partitions compared
    /// after reading): the bar (a terminal only) shows `done/total` and `what`.
    pub fn steps(&self, what: &str, done: u64, total: u64) {
        if let Some(bar) = &self.bar {
            if bar.length() != Some(total) || bar.message() != what {
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar.set_length(total);
                bar.set_message(what.to_string());
                bar.set_position(done);
                // Shown at once: the new phase may end before the next redraw is due.
                bar.force_draw();
            }
            bar.set_position(done);
        }
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

/// A command line clap refused. An unknown option or a malformed value is told in the
/// words every front end uses ([`OptionError`]: `unknown option `--max-record-sise` (did
/// you mean `--max-record-size`?)`, `option --on-error=`explode`: expected fail, skip or
/// quarantine`), followed by the subcommand's usage line; anything else (help, a missing
/// argument…) as clap tells it. Exits with status 2 (0 for `--help` and `--version`).
pub fn usage_error(e: clap::Error, mut cli: clap::Command) -> ! {
    cli.build();
    let args = std::env::args_os().skip(1);
    let path = subcommand_path(&cli, args.map(|a| a.to_string_lossy().into_owned()));
    let mut cmd = cli;
    for name in &path {
        match cmd.find_subcommand(name) {
            Some(sub) => cmd = sub.clone(),
            None => break,
        }
    }
    let Some(message) = option_error(&e, &cmd) else {
        e.exit()
    };
    clap::Error::raw(e.kind(), message).format(&mut cmd).exit()
}

/// The [`OptionError`] a clap error is, if it is one; `cmd` is the subcommand refused.
fn option_error(e: &clap::Error, cmd: &clap::Command) -> Option<OptionError> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let given = text(ContextKind::InvalidArg)?;
            if !given.starts_with('-') {
                return None;
            }
            let name = given.split('=').next().unwrap_or(&given).to_string();
            let known = cmd
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long())
                .map(|l| format!("--{l}"));
            Some(OptionError::unknown(name, known))
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            // `--max-record-size <BYTES>`: the flag as written, without its value name.
            let arg = text(ContextKind::InvalidArg)?;
            let flag = arg.split(' ').next().unwrap_or(&arg).to_string();
            if !flag.starts_with('-') {
                return None;
            }
            let value = text(ContextKind::InvalidValue)?;
            let expected = match e.get(ContextKind::ValidValue) {
                Some(ContextValue::Strings(values)) => {
                    let values: Vec<&str> = values.iter().map(String::as_str).collect();
                    soif_options::one_of(&values)
                }
                _ => {
                    let source = std::error::Error::source(e)?;
                    match source.downcast_ref::<soif_options::SizeError>() {
                        Some(size) => size.expected().to_string(),
                        None => source.to_string(),
                    }
                }
            };
            Some(OptionError::invalid(flag, value, expected))
        }
        _ => None,
    }
}

/// The subcommands `args` name, outermost first (`["rdm", "get"]`).
fn subcommand_path(cli: &clap::Command, args: impl Iterator<Item = String>) -> Vec<String> {
    let mut path = Vec::new();
    let mut cmd = cli;
    for arg in args {
        if arg.starts_with('-') {
            continue;
        }
        match cmd.find_subcommand(&arg) {
            Some(sub) => {
                path.push(sub.get_name().to_string());
                cmd = sub;
            }
            None if path.is_empty() => continue,
            None => break,
        }
    }
    path
}
