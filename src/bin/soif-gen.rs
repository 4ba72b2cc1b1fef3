//! `soif-gen`: deterministic Harvest-like SOIF test data, sized in megabytes.
//!
//! ```text
//! soif-gen --size 200MB -o bench.soif            # ~200 MB of FILE records
//! soif-gen --size 100MB --huge -o huge.soif      # one record with a 100 MB Full-Text
//! soif-gen --size 1MB --seed 7 | soif stats
//! ```
//!
//! Records look like what a Harvest Gatherer wrote: `@FILE` objects of about twenty
//! attributes (Time-to-Live, Gatherer-*, Type, File-Size, MD5, Title, Author-1…N,
//! Keywords, URL-References, Embed<1>-…), one in five with a multi-line `Full-Text` of
//! 5–50 KB, one in ten with a binary `Thumbnail`. The same seed and size always give the
//! same bytes. Output is streamed: memory stays small whatever the size.

use clap::Parser;
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
    n.checked_mul(mult).ok_or_else(|| format!("`{s}` is too large"))
}

/// SplitMix64: tiny, fast, and the same on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "network", "resource", "discovery", "gatherer", "broker", "index", "summary", "object",
    "protocol", "archive", "technical", "report", "wavelet", "processing", "image",
    "concurrent", "functional", "programs", "types", "distributed", "systems", "cache",
    "replication", "query", "retrieval", "metadata", "harvest", "internet", "search",
    "compression", "the", "of", "and", "a", "in", "for", "is", "on", "with", "we", "this",
    "that", "by", "an", "are", "to", "results", "analysis", "performance", "university",
];

const HOSTS: &[&str] = &[
    "bruno.cs.colorado.edu",
    "powell.cs.colorado.edu",
    "ftp.ecrc.de",
    "cml.rice.edu",
    "nic.nasa.gov",
    "techreports.larc.nasa.gov",
];

const TYPES: &[&str] = &["PostScript", "HTML", "Text", "Compressed", "Tar", "Java"];

const AUTHORS: &[&str] = &[
    "Alan O. Freier",
    "Philip Karlton",
    "Paul C. Kocher",
    "Jan Erik Odegard",
    "Bent Thomsen",
    "C. Mic Bowman",
    "Peter B. Danzig",
    "Darren R. Hardy",
];

fn words(rng: &mut Rng, n: u64, out: &mut Vec<u8>) {
    for i in 0..n {
        if i > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(rng.pick(WORDS).as_bytes());
    }
}

/// Multi-line text of about `len` bytes (lines of ~70 characters).
fn text(rng: &mut Rng, len: usize, out: &mut Vec<u8>) {
    let start = out.len();
    let mut line = 0;
    while out.len() - start < len {
        let w = rng.pick(WORDS).as_bytes();
        out.extend_from_slice(w);
        line += w.len() + 1;
        if line > 70 {
            out.push(b'\n');
            line = 0;
        } else {
            out.push(b' ');
        }
    }
    out.truncate(start + len);
}

fn attr(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(format!("{{{}}}:\t", value.len()).as_bytes());
    out.extend_from_slice(value);
    out.push(b'\n');
}

fn record(rng: &mut Rng, n: u64, out: &mut Vec<u8>) {
    let host = rng.pick(HOSTS);
    let ty = rng.pick(TYPES);
    let url = format!("ftp://{host}/pub/reports/{n:08}.ps.Z");
    out.extend_from_slice(format!("@FILE {{ {url}\n").as_bytes());
    let t = 770_000_000 + rng.below(60_000_000);
    attr(out, "Time-to-Live", b"9676800");
    attr(out, "Last-Modification-Time", t.to_string().as_bytes());
    attr(out, "Refresh-Rate", b"2419200");
    attr(
        out,
        "Gatherer-Name",
        b"Computer Science Technical Reports - Selected Text",
    );
    attr(out, "Gatherer-Host", host.as_bytes());
    attr(out, "Gatherer-Version", b"0.3");
    attr(out, "Type", ty.as_bytes());
    attr(out, "Update-Time", t.to_string().as_bytes());
    attr(out, "File-Size", rng.range(1_000, 900_000).to_string().as_bytes());
    attr(out, "MD5", format!("{:016x}{:016x}", rng.next(), rng.next()).as_bytes());
    let mut v = Vec::new();
    let n = rng.range(3, 10);
    words(rng, n, &mut v);
    attr(out, "Title", &v);
    for i in 1..=rng.range(1, 3) {
        attr(out, &format!("Author-{i}"), rng.pick(AUTHORS).as_bytes());
    }
    v.clear();
    let n = rng.range(5, 25);
    words(rng, n, &mut v);
    attr(out, "Keywords", &v);
    v.clear();
    let n = rng.range(20, 60);
    words(rng, n, &mut v);
    attr(out, "Description", &v);
    attr(
        out,
        "URL-References",
        format!("http://{}/~user{}/index.html", rng.pick(HOSTS), rng.below(1000)).as_bytes(),
    );
    attr(out, "Embed<1>-Nested-Filename", format!("{n:08}.ps").as_bytes());
    attr(out, "Embed<1>-Type", b"PostScript");
    attr(out, "Embed<1>-File-Size", rng.range(1_000, 2_000_000).to_string().as_bytes());
    if rng.below(5) == 0 {
        v.clear();
        let len = rng.range(5_000, 50_000) as usize;
        text(rng, len, &mut v);
        attr(out, "Full-Text", &v);
    }
    if rng.below(10) == 0 {
        // A binary thumbnail: any byte, braces and "@FILE {" included.
        v.clear();
        for _ in 0..rng.range(200, 2_000) / 8 {
            v.extend_from_slice(&rng.next().to_le_bytes());
        }
        v.extend_from_slice(b"}\n@FILE { x");
        attr(out, "Thumbnail", &v);
    }
    out.extend_from_slice(b"}\n");
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
    let mut rng = Rng(args.seed);
    let result = if args.huge {
        huge(&mut rng, args.size, &mut w)
    } else {
        let mut buf = Vec::with_capacity(128 * 1024);
        let mut written = 0u64;
        let mut n = 0u64;
        let mut r = Ok(());
        while written < args.size {
            buf.clear();
            n += 1;
            record(&mut rng, n, &mut buf);
            written += buf.len() as u64;
            if let Err(e) = w.write_all(&buf) {
                r = Err(e);
                break;
            }
        }
        r
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

/// One record whose Full-Text is `size` bytes, written in chunks.
fn huge(rng: &mut Rng, size: u64, w: &mut impl Write) -> std::io::Result<()> {
    w.write_all(b"@FILE { ftp://huge.example/one-record\nTitle{14}:\tone big record\n")?;
    w.write_all(format!("Full-Text{{{size}}}:\t").as_bytes())?;
    let mut left = size;
    let mut chunk = Vec::with_capacity(1 << 20);
    while left > 0 {
        chunk.clear();
        let n = left.min(1 << 20) as usize;
        text(rng, n, &mut chunk);
        w.write_all(&chunk)?;
        left -= n as u64;
    }
    w.write_all(b"\n}\n")
}
