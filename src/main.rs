//! `soif`: move Harvest/Netscape SOIF and RDM metadata into today's systems.
//!
//! One subcommand per module in [`cmd`]; each has complete `--help`. What they share:
//! [`input`] (reading records), [`job`] (running conversions), [`terminal`] (progress,
//! messages, exit statuses), [`pipeline_file`] (`soif run`'s TOML), [`trial`] and
//! [`record_diff`] (a chain over a few records, for `soif test` and `soif try`).

mod cmd;
mod input;
mod job;
mod pipeline_file;
mod record_diff;
mod terminal;
mod trial;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// Convert, inspect and serve SOIF (RFC 2655, Harvest) and RDM metadata.
#[derive(Debug, Parser)]
#[command(
    name = "soif",
    version,
    about,
    long_about = long_about(),
    after_help = "Exit status: 0 success, 1 failed, 2 usage or configuration error, \
3 finished but records were skipped or quarantined, 75 another run holds the --state."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `soif --help`'s description: what is read and written, from the formats' own lists.
fn long_about() -> String {
    let inputs: Vec<&str> = soif_options::InputFormat::NAMES
        .iter()
        .filter_map(|n| soif_options::InputFormat::parse(n))
        .filter_map(|f| f.title())
        .collect();
    let outputs: Vec<&str> = soif_sinks::Format::ALL
        .iter()
        .filter_map(|n| soif_sinks::Format::parse(n))
        .filter_map(|f| f.title())
        .collect();
    format!(
        "Convert, inspect and serve SOIF (RFC 2655 / Harvest Summary Object Interchange \
Format) and RDM (W3C Resource Description Messages) metadata.

Reads {} — plain or compressed (gzip, bzip2, xz, zstd) — from files, directories, \
globs, stdin, http(s) URLs, RDM catalogs or OAI-PMH repositories, in bounded memory \
whatever their size, and writes {}.",
        or_list(&inputs),
        or_list(&outputs)
    )
}

/// `a, b or c`.
fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// The subcommands. To add one: a variant here, a module in `src/cmd/` whose `Args`
/// struct's doc comment is the one-line help (shown by `soif --help` and `soif CMD
/// --help` alike), and an arm in `main`.
#[derive(Debug, Subcommand)]
enum Command {
    Convert(cmd::convert::ConvertArgs),
    Run(cmd::run::RunArgs),
    Stats(cmd::stats::StatsArgs),
    Validate(cmd::validate::ValidateArgs),
    Rdm(cmd::rdm::RdmArgs),
    State(cmd::state::StateArgs),
    Serve(cmd::serve::ServeArgs),
    Split(cmd::split::SplitArgs),
    Test(cmd::test::TestArgs),
    Try(cmd::r#try::TryArgs),
    Verify(cmd::verify::VerifyArgs),
}

fn main() -> ExitCode {
    let cli = Cli::try_parse().unwrap_or_else(|e| terminal::usage_error(e, Cli::command()));
    match cli.command {
        Command::Convert(args) => cmd::convert::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Stats(args) => cmd::stats::run(args),
        Command::Validate(args) => cmd::validate::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Rdm(args) => cmd::rdm::run(args),
        Command::Split(args) => cmd::split::run(args),
        Command::State(args) => cmd::state::run(args),
        Command::Test(args) => cmd::test::run(args),
        Command::Try(args) => cmd::r#try::run(args),
        Command::Verify(args) => cmd::verify::run(args),
    }
}
