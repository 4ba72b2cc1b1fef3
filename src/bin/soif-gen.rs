//! `soif-gen`: deterministic Harvest-like SOIF test data, sized in megabytes.
//!
//! ```text
//! soif-gen --size 200MB -o bench.soif            # ~200 MB of FILE records
//! soif-gen --size 100MB --huge -o huge.soif      # one record with a 100 MB Full-Text
//! soif-gen --size 50MB --summaries-only          # no Full-Text or Thumbnail values
//! soif-gen --size 1MB --seed 7 | soif stats
//! ```
//!
//! The records come from [`soif_codecs::generate`]: `@FILE` objects of about twenty
//! attributes as a Harvest Gatherer wrote them, some with a multi-line 5–50 KB
//! `Full-Text`, some with a binary `Thumbnail`, `Author-N` multi-values and `Embed<1>-`
//! parts. The same seed and size always give the same bytes. Output is streamed: memory
//! stays small whatever the size.

use clap::Parser;
use soif_codecs::generate::{write_huge_record, Generator};
use soif_options::ByteSize;
use std::io::{BufWriter, Write};

/// Generate deterministic Harvest-like SOIF test data.
#[derive(Debug, Parser)]
#[command(name = "soif-gen", version)]
struct Args {
    /// Approximate output size (e.g. 200MB, 1GiB, 500000; MB = 10^6 bytes, MiB = 2^20).
    #[arg(long, default_value = "10MB")]
    size: ByteSize,

    /// Seed of the pseudo-random generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Write a single record whose Full-Text value is --size bytes.
    #[arg(long)]
    huge: bool,

    /// Summary objects only: no Full-Text or binary Thumbnail values (about 1.2 KB per
    /// record instead of about 8 KB).
    #[arg(long, conflicts_with = "huge")]
    summaries_only: bool,

    /// Output file (default stdout).
    #[arg(short, long)]
    output: Option<String>,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let sink: Box<dyn Write> = match &args.output {
        Some(p) => match std::fs::File::create(p) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("soif-gen: cannot create {p}: {e}");
                return std::process::ExitCode::from(1);
            }
        },
        None => Box::new(std::io::stdout()),
    };
    let mut w = BufWriter::with_capacity(1 << 20, sink);
    let result = if args.huge {
        write_huge_record(&mut w, args.size.as_u64())
    } else {
        let generator = Generator::new(args.seed);
        let mut generator = if args.summaries_only {
            generator.summaries_only()
        } else {
            generator
        };
        generator
            .write_bytes(&mut w, args.size.as_u64())
            .map(|_| ())
    };
    match result.and_then(|()| w.flush()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("soif-gen: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
