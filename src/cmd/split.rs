//! `soif split`: byte ranges of a plain SOIF file that decode independently, for any
//! scheduler (GNU parallel, Slurm array jobs, Kubernetes jobs) to run
//! `soif convert INPUT --range RANGE` on, the outputs concatenated in order being one
//! run's output.
//!
//! It prints one range a line, in the text form `soif convert --range` reads:
//! `START..END`, then the decoder's state at START where it is not the file start's
//! (`,record=N`: objects before START, so that record numbers in messages go on from it;
//! `,envelope=OFFSET`: the Harvest envelope open there; `,end-known`). How the ranges are
//! found, and why decoding them gives exactly one run's records and errors, is
//! `soif_codecs::soif::split`.
//!
//! ```text
//! $ soif split --parts 3 archive.soif
//! 0..349525
//! 349525..699063,record=1204
//! 699063..1048576,record=2417
//! ```

use crate::terminal::fail;
use clap::Args;
use soif_codecs::soif::DecoderOptions;
use soif_options::ByteSize;
use soif_pipeline::Error;
use soif_sources::range::{splits, By};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Print byte ranges of a plain SOIF file at object boundaries, one a line.
#[derive(Debug, Args)]
#[command(
    after_help = "Each line is a range for `soif convert INPUT --range RANGE`: START..END, \
then where needed the decoder's state at START (`,record=N` objects before it, so record numbers \
in messages match one run; `,envelope=OFFSET` the Harvest envelope open there; `,end-known`). \
Converting every range and concatenating the outputs in order gives one run's output. \
Give `soif convert` the same --lenient and --max-record-size: they decide where objects end.

Values may hold anything, `@FILE {` lines and whole fake objects included, so the ranges come \
from one pass of the decoder over the file (it steps over values without building records), \
never from looking for lines that resemble an object. Compressed files cannot be entered in the \
middle and are not split; stdin cannot be read twice.

Examples:
  soif split --parts 8 archive.soif
  soif split --size 128MiB archive.soif > ranges.txt
  soif split --parts 8 archive.soif | parallel -k soif convert archive.soif --range {} --to jsonl -q > all.jsonl
  # Slurm: one array task per line of ranges.txt
  soif convert archive.soif --range \"$(sed -n \"${SLURM_ARRAY_TASK_ID}p\" ranges.txt)\" --to parquet -o part-$SLURM_ARRAY_TASK_ID.parquet

Exit status: 0 ranges printed, 1 failed, 2 usage error (a compressed input, not a regular file)."
)]
pub struct SplitArgs {
    /// A plain (uncompressed) SOIF file.
    #[arg(value_name = "INPUT")]
    pub input: PathBuf,

    /// At most N ranges of about equal size.
    #[arg(long, value_name = "N", conflicts_with = "size", required_unless_present = "size", value_parser = clap::value_parser!(u64).range(1..))]
    pub parts: Option<u64>,

    /// Ranges of about BYTES each (e.g. 134217728, 128MiB, 1GB): a range ends at the first
    /// object boundary at or after each multiple of BYTES.
    #[arg(long, value_name = "BYTES")]
    pub size: Option<ByteSize>,

    /// Find the objects as `soif convert --lenient` reads them (its repairs can move where
    /// an object ends).
    #[arg(long)]
    pub lenient: bool,

    /// The --max-record-size the ranges will be converted with (e.g. 64MiB).
    #[arg(long, value_name = "BYTES", default_value = "64MiB")]
    pub max_record_size: ByteSize,
}

pub fn run(args: SplitArgs) -> ExitCode {
    match print(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn print(args: &SplitArgs) -> Result<(), Error> {
    let by = match (args.parts, args.size.map(ByteSize::as_u64)) {
        (Some(n), _) => By::Parts(n),
        (None, Some(0)) => return Err(Error::Config("--size must be positive".into())),
        (None, Some(s)) => By::Size(s),
        (None, None) => return Err(Error::Config("give --parts or --size".into())),
    };
    if args.max_record_size.as_u64() == 0 {
        return Err(Error::Config("--max-record-size must be positive".into()));
    }
    let mut opts = DecoderOptions::with_max_record_size(args.max_record_size.as_usize());
    opts.lenient = args.lenient;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let write = |e| Error::io("writing the ranges", e);
    for split in splits(&args.input, opts, by)? {
        writeln!(out, "{split}").map_err(write)?;
    }
    out.flush().map_err(write)
}
