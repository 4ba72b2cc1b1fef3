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
use std::io::{BufWriter, Write};

/// Generate deterministic Harvest-like SOIF test data.
#[derive(Debug, Parser)]
#[command(name = "soif-gen", version)]
struct Args {
    /// Approximate output size (e.g. 200MB, 1GiB, 500000).
    #[arg(long, default_value = "10MB", value_parser = parse_size)]
    size: u64,

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

fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is not a size"))?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => return Err(format!("unknown unit in `{s}`")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is too large"))
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
        write_huge_record(&mut w, args.size)
    } else {
        let generator = Generator::new(args.seed);
        let mut generator = if args.summaries_only {
            generator.summaries_only()
        } else {
            generator
        };
        generator.write_bytes(&mut w, args.size).map(|_| ())
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
