//! `soif`: move Harvest/Netscape SOIF and RDM metadata into today's systems.
//!
//! One subcommand per module in [`cmd`]; each has complete `--help`.

mod cmd;
mod pipeline_file;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Convert, inspect and serve SOIF (RFC 2655, Harvest) and RDM metadata.
#[derive(Debug, Parser)]
#[command(
    name = "soif",
    version,
    about,
    long_about = "Convert, inspect and serve SOIF (RFC 2655 / Harvest Summary Object \
Interchange Format) and RDM (W3C Resource Description Messages) metadata.

Reads plain or compressed (gzip, bzip2, xz, zstd) SOIF streams from files, directories, \
globs, stdin or http(s) URLs, in bounded memory whatever their size, and writes JSON \
Lines, CSV, RDF/XML, SQLite, canonical SOIF or RDM messages.",
    after_help = "Exit status: 0 success, 1 failed, 2 usage or configuration error, \
3 finished but records were skipped or quarantined, 75 another run holds the --state."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands. To add one: a variant here (its doc comment is the one-line help),
/// a module in `src/cmd/`, and an arm in `main`.
#[derive(Debug, Subcommand)]
enum Command {
    /// Convert SOIF or JSON Lines records to another format.
    Convert(cmd::convert::ConvertArgs),
    /// Run a pipeline file: a source, transforms and several sinks in one pass.
    Run(cmd::run::RunArgs),
    /// Report templates, attribute frequencies and value sizes; write a CIP-HINT.
    Stats(cmd::stats::StatsArgs),
    /// Check records against an RDM @SCHEMA; exit 3 when some fail.
    Validate(cmd::validate::ValidateArgs),
    /// Send one RDM request to a catalog server and print the reply.
    Rdm(cmd::rdm::RdmArgs),
    /// Show what incremental runs (--state) took; forget files or sources.
    State(cmd::state::StateArgs),
    /// Serve SQLite catalogs over RDM (GET/POST /rdm/incoming).
    Serve(cmd::serve::ServeArgs),
    /// Print byte ranges of a plain SOIF file at object boundaries, for `convert --range`.
    Split(cmd::split::SplitArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Convert(args) => cmd::convert::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Stats(args) => cmd::stats::run(args),
        Command::Validate(args) => cmd::validate::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Rdm(args) => cmd::rdm::run(args),
        Command::Split(args) => cmd::split::run(args),
        Command::State(args) => cmd::state::run(args),
    }
}
