//! Deterministic Harvest-like SOIF, for benchmarks and tests.
//!
//! Real Harvest archives are not redistributable, so the benchmarks run on data shaped
//! like them: `FILE` records of about twenty attributes as a Harvest gatherer wrote them
//! (RFC 2655 App. A), a quarter of them with a 5–50 KB multi-line `Full-Text`, one in ten
//! with a binary `Thumbnail`, some with `Author-N` multi-values and `Embed<1>-` parts, all
//! from a fixed seed so every run sees the same bytes.
//!
//! ```
//! use soif_codecs::generate::Generator;
//! let mut out = Vec::new();
//! let records = Generator::new(1).write_bytes(&mut out, 100_000).unwrap();
//! assert!(records > 0 && out.len() >= 100_000);
//! ```

use crate::record::Record;
use crate::soif::encode_record;
use std::io::{self, Write};

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "a",
    "to",
    "in",
    "is",
    "for",
    "that",
    "with",
    "on",
    "as",
    "by",
    "this",
    "are",
    "from",
    "be",
    "or",
    "an",
    "which",
    "system",
    "information",
    "discovery",
    "index",
    "broker",
    "gatherer",
    "resource",
    "summary",
    "object",
    "network",
    "protocol",
    "server",
    "client",
    "query",
    "metadata",
    "library",
    "catalog",
    "search",
    "document",
    "research",
    "technical",
    "report",
    "university",
    "computer",
    "science",
    "distributed",
    "wavelet",
    "processing",
    "image",
    "functional",
    "programs",
    "concurrent",
    "types",
    "Harvest",
    "SOIF",
    "Internet",
    "WWW",
    "archive",
    "compressed",
    "PostScript",
];

const TYPES: &[&str] = &[
    "HTML",
    "PostScript",
    "Text",
    "Compressed",
    "Tar",
    "Dvi",
    "Image",
    "README",
    "FAQ",
    "RFC",
    "Tex",
    "ManPage",
    "C",
    "Makefile",
    "Mail",
    "Directory",
];

const HOSTS: &[&str] = &[
    "bruno.cs.colorado.edu",
    "powell.cs.colorado.edu",
    "ftp.ecrc.de",
    "cml.rice.edu",
    "harvest.transarc.com",
    "nic.nasa.gov",
    "www.netscape.com",
];

/// A deterministic generator of Harvest-like records.
#[derive(Debug, Clone)]
pub struct Generator {
    state: u64,
    count: u64,
    bodies: bool,
}

impl Generator {
    /// A generator; the same seed gives the same records.
    pub fn new(seed: u64) -> Generator {
        Generator {
            state: seed ^ 0x9e37_79b9_7f4a_7c15,
            count: 0,
            bodies: true,
        }
    }

    /// Summary objects only: the same records without the `Full-Text` and `Thumbnail`
    /// bodies (about 1.2 KB each instead of about 8 KB), as a gatherer configured not to
    /// keep full text wrote them. For per-record costs that large values would hide.
    pub fn summaries_only(mut self) -> Generator {
        self.bodies = false;
        self
    }

    /// SplitMix64: tiny, fast, good enough for test data.
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    /// `len` bytes or a little more of text, in lines of about 70 characters.
    fn text(&mut self, len: usize) -> String {
        let mut out = String::with_capacity(len + 16);
        let mut line = 0;
        while out.len() < len {
            let w = self.pick(WORDS);
            out.push_str(w);
            line += w.len() + 1;
            if line > 70 {
                out.push('\n');
                line = 0;
            } else {
                out.push(' ');
            }
        }
        out
    }

    fn hex(&mut self, bytes: usize) -> String {
        let mut s = String::with_capacity(bytes * 2);
        for _ in 0..bytes.div_ceil(8) {
            s.push_str(&format!("{:016x}", self.next()));
        }
        s.truncate(bytes * 2);
        s
    }

    /// The next record.
    pub fn record(&mut self) -> Record {
        self.count += 1;
        let n = self.count;
        let host = self.pick(HOSTS);
        let ty = self.pick(TYPES);
        let url = format!("http://{host}/pub/reports/{n}/{}.html", self.hex(4));
        let mtime = 760_000_000 + self.below(100_000_000);
        let mut r = Record::new("FILE", url)
            .with("Time-to-Live", "9676800")
            .with("Last-Modification-Time", mtime.to_string())
            .with("Refresh-Rate", "2419200")
            .with(
                "Gatherer-Name",
                "Computer Science Technical Reports - Selected Text",
            )
            .with("Gatherer-Host", host)
            .with("Gatherer-Version", "1.0")
            .with("Type", ty)
            .with("Update-Time", (mtime + 86_400).to_string())
            .with("File-Size", self.below(1_000_000).to_string())
            .with("MD5", self.hex(16));
        let title_len = 20 + self.below(60) as usize;
        r.push("Title", self.text(title_len).replace('\n', " "));
        for i in 1..=self.below(4) {
            let name = format!("{} {}", self.pick(WORDS), self.pick(WORDS));
            r.push(&format!("Author-{i}"), name);
        }
        let kw_len = 40 + self.below(200) as usize;
        r.push("Keywords", self.text(kw_len));
        let desc_len = 100 + self.below(400) as usize;
        r.push("Description", self.text(desc_len));
        r.push(
            "URL-References",
            format!(
                "http://{}/\nhttp://{}/index.html",
                self.pick(HOSTS),
                self.pick(HOSTS)
            ),
        );
        if self.below(3) == 0 {
            r.push("Embed<1>-Nested-Filename", format!("{n}.ps"));
            r.push("Embed<1>-Type", "PostScript");
            r.push("Embed<1>-File-Size", self.below(500_000).to_string());
        }
        // The bodies are drawn even when left out, so that `summaries_only` gives the
        // same records, only without them.
        if self.below(4) == 0 {
            let len = 5_000 + self.below(45_000) as usize;
            let text = self.text(len);
            if self.bodies {
                r.push("Full-Text", text);
            }
        }
        if self.below(10) == 0 {
            let len = 1_000 + self.below(3_000) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| self.next() as u8).collect();
            if self.bodies {
                r.push("Thumbnail", bytes);
            }
        }
        r
    }

    /// Writes canonical SOIF records until at least `bytes` bytes are written; returns
    /// the number of records.
    pub fn write_bytes(&mut self, out: &mut impl Write, bytes: u64) -> io::Result<u64> {
        let mut written = 0u64;
        let mut records = 0u64;
        let mut buf = Vec::with_capacity(64 * 1024);
        while written < bytes {
            buf.clear();
            encode_record(&self.record(), &mut buf);
            out.write_all(&buf)?;
            written += buf.len() as u64;
            records += 1;
        }
        Ok(records)
    }
}

/// Writes one `FILE` record whose `Full-Text` value is `value_len` bytes of text, without
/// holding it in memory (the single-huge-record benchmark and memory tests).
pub fn write_huge_record(out: &mut impl Write, value_len: u64) -> io::Result<()> {
    write!(
        out,
        "@FILE {{ http://harvest.transarc.com/huge\nTitle{{10}}:\tHuge value\nFull-Text{{{value_len}}}:\t"
    )?;
    let mut g = Generator::new(7);
    let chunk = g.text(64 * 1024);
    let chunk = chunk.as_bytes();
    let mut left = value_len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        out.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    out.write_all(b"\nType{4}:\tText\n}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soif::{decode_all, DecoderOptions};

    #[test]
    fn deterministic_and_decodable() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        let n = Generator::new(42).write_bytes(&mut a, 300_000).unwrap();
        Generator::new(42).write_bytes(&mut b, 300_000).unwrap();
        assert_eq!(a, b);
        let decoded = decode_all(&a, DecoderOptions::default());
        assert_eq!(decoded.len() as u64, n);
        assert!(decoded.iter().all(|r| r.is_ok()));
        let attrs: usize = decoded
            .iter()
            .map(|r| r.as_ref().unwrap().attributes.len())
            .sum();
        let avg = attrs as f64 / n as f64;
        assert!(
            (15.0..25.0).contains(&avg),
            "about twenty attributes, got {avg}"
        );
    }

    #[test]
    fn summaries_only_are_the_same_records_without_bodies() {
        let mut full = Generator::new(5);
        let mut lean = Generator::new(5).summaries_only();
        let mut bodies = 0;
        for _ in 0..200 {
            let (a, b) = (full.record(), lean.record());
            assert_eq!(a.url, b.url, "same sequence of records");
            assert!(b.get("Full-Text").is_none() && b.get("Thumbnail").is_none());
            let without: Vec<_> = a
                .attributes
                .iter()
                .filter(|x| &x.name[..] != b"Full-Text" && &x.name[..] != b"Thumbnail")
                .collect();
            assert_eq!(without, b.attributes.iter().collect::<Vec<_>>());
            bodies += a.attributes.len() - b.attributes.len();
        }
        assert!(bodies > 50, "the full records do carry bodies");
    }

    #[test]
    fn huge_record_has_the_declared_size() {
        let mut out = Vec::new();
        write_huge_record(&mut out, 200_000).unwrap();
        let r = decode_all(&out, DecoderOptions::default())
            .remove(0)
            .unwrap();
        assert_eq!(
            r.get("Full-Text")
                .and_then(|v| v.as_bytes())
                .map(|b| b.len()),
            Some(200_000)
        );
        assert_eq!(r.get_str("Type"), Some("Text"));
    }
}
