//! [`SeenSet`]: "have I seen this key before?" over a stream of any length, in bounded
//! memory. Used by `dedupe` and by `validate`'s `Enforce-Uniqueness` check.
//!
//! **Method.** Each key is reduced to a 128-bit fingerprint (two SipHash-1-3 hashes of
//! the key under different prefixes). Fingerprints go into an in-memory hash set until it
//! holds as many as three quarters of the memory budget allow; then the set is sorted
//! and written to an anonymous temporary file (a *run*: 16-byte big-endian entries), and
//! the set starts again. Runs of similar size are merged (like a log-structured merge
//! tree), so there are only about log₂(n / capacity) of them. Each run keeps a sparse
//! index in memory — the first fingerprint of every block of `stride` entries — so a
//! lookup that misses the in-memory set reads one block (4 KiB at first) per run. The
//! stride grows with the number of keys so that all indexes together stay within the
//! last quarter of the budget.
//!
//! **Exactness.** The answer is exact up to fingerprint collisions: two *different* keys
//! are taken for the same one with probability about n² / 2¹²⁹ — for a billion keys,
//! about 10⁻²¹. Nothing is ever forgotten, whatever the input size; the disk holds 16
//! bytes per distinct key.

use crate::Error;
use std::collections::HashSet;
use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// Bytes per fingerprint in memory, counting the hash set's overhead and the sorted copy
/// made when it is spilled.
const BYTES_PER_ENTRY: usize = 48;

/// Entries per index block at the least (4 KiB of run file).
const MIN_STRIDE: u64 = 256;

/// Bytes of one fingerprint on disk and in an index.
const ENTRY: u64 = 16;

/// The 128-bit fingerprint of a key.
pub fn fingerprint(key: &[u8]) -> u128 {
    let half = |domain: u8| {
        let mut h = DefaultHasher::new();
        domain.hash(&mut h);
        key.hash(&mut h);
        h.finish()
    };
    (u128::from(half(1)) << 64) | u128::from(half(2))
}

/// A sorted run of fingerprints on disk, with its sparse index.
struct Run {
    file: File,
    len: u64,
    stride: u64,
    /// The first fingerprint of each block of `stride` entries.
    index: Vec<u128>,
}

impl Run {
    fn contains(&mut self, fp: u128, buf: &mut Vec<u8>) -> std::io::Result<bool> {
        let block = self.index.partition_point(|&k| k <= fp);
        if block == 0 {
            return Ok(false); // Smaller than everything in the run.
        }
        let start = (block as u64 - 1) * self.stride;
        let end = (start + self.stride).min(self.len);
        let n = (end - start) as usize;
        buf.resize(n * ENTRY as usize, 0);
        self.file.seek(SeekFrom::Start(start * ENTRY))?;
        self.file.read_exact(buf)?;
        let at = |i: usize| {
            let mut b = [0u8; 16];
            b.copy_from_slice(&buf[i * 16..i * 16 + 16]);
            u128::from_be_bytes(b)
        };
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match at(mid).cmp(&fp) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(true),
            }
        }
        Ok(false)
    }
}

/// Writes a run in sorted order, building its index.
struct RunWriter {
    out: BufWriter<File>,
    len: u64,
    stride: u64,
    index: Vec<u128>,
}

impl RunWriter {
    fn push(&mut self, fp: u128) -> std::io::Result<()> {
        if self.len.is_multiple_of(self.stride) {
            self.index.push(fp);
        }
        self.len += 1;
        self.out.write_all(&fp.to_be_bytes())
    }

    fn finish(self) -> std::io::Result<Run> {
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        Ok(Run {
            file,
            len: self.len,
            stride: self.stride,
            index: self.index,
        })
    }
}

/// A set of keys seen so far, bounded in memory (see the module docs).
pub struct SeenSet {
    what: String,
    memory: HashSet<u128>,
    capacity: usize,
    /// Bytes the run indexes may take together.
    index_budget: u64,
    runs: Vec<Run>,
    temp_dir: Option<PathBuf>,
    block: Vec<u8>,
}

impl SeenSet {
    /// A set that keeps at most about `budget` bytes in memory and spills the rest to
    /// `temp_dir` (or the system's). `what` names the user (`dedupe:url`) in I/O error
    /// messages.
    pub fn new(what: impl Into<String>, budget: usize, temp_dir: Option<PathBuf>) -> SeenSet {
        SeenSet {
            what: what.into(),
            memory: HashSet::new(),
            capacity: (budget / 4 * 3 / BYTES_PER_ENTRY).max(1),
            index_budget: (budget as u64 / 4).max(ENTRY),
            runs: Vec::new(),
            temp_dir,
            block: Vec::new(),
        }
    }

    /// How many runs are on disk (for tests).
    pub fn runs_on_disk(&self) -> usize {
        self.runs.len()
    }

    /// True when `key` has been inserted before.
    pub fn contains(&mut self, key: &[u8]) -> Result<bool, Error> {
        self.contains_fingerprint(fingerprint(key))
    }

    fn contains_fingerprint(&mut self, fp: u128) -> Result<bool, Error> {
        if self.memory.contains(&fp) {
            return Ok(true);
        }
        for run in &mut self.runs {
            if run
                .contains(fp, &mut self.block)
                .map_err(|e| Error::io(format!("{}: reading spilled fingerprints", self.what), e))?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Records `key`; true when it had not been seen before.
    pub fn insert(&mut self, key: &[u8]) -> Result<bool, Error> {
        let fp = fingerprint(key);
        if self.contains_fingerprint(fp)? {
            return Ok(false);
        }
        self.memory.insert(fp);
        if self.memory.len() >= self.capacity {
            self.spill()?;
        }
        Ok(true)
    }

    /// A writer for a new run, its stride chosen so that indexes over `total` keys fit
    /// the index budget.
    fn writer(&self, total: u64) -> Result<RunWriter, Error> {
        let file = match &self.temp_dir {
            Some(dir) => tempfile::tempfile_in(dir),
            None => tempfile::tempfile(),
        }
        .map_err(|e| {
            Error::io(
                format!(
                    "{}: creating a temporary file in {}",
                    self.what,
                    temp_dir_name(&self.temp_dir)
                ),
                e,
            )
        })?;
        let wanted = (total.saturating_mul(ENTRY) / self.index_budget).max(MIN_STRIDE);
        Ok(RunWriter {
            out: BufWriter::new(file),
            len: 0,
            stride: wanted.next_power_of_two(),
            index: Vec::new(),
        })
    }

    fn io_err(&self, e: std::io::Error) -> Error {
        Error::io(
            format!("{}: writing fingerprints to a temporary file", self.what),
            e,
        )
    }

    fn total(&self) -> u64 {
        self.runs.iter().map(|r| r.len).sum::<u64>() + self.memory.len() as u64
    }

    fn spill(&mut self) -> Result<(), Error> {
        let mut w = self.writer(self.total())?;
        let mut sorted: Vec<u128> = self.memory.drain().collect();
        sorted.sort_unstable();
        for fp in sorted {
            w.push(fp).map_err(|e| self.io_err(e))?;
        }
        let run = w.finish().map_err(|e| self.io_err(e))?;
        self.runs.push(run);
        // Keep run sizes geometric: merge while the newest is at least half the one before.
        while self.runs.len() >= 2 {
            let n = self.runs.len();
            if self.runs[n - 1].len * 2 < self.runs[n - 2].len {
                break;
            }
            let (Some(b), Some(a)) = (self.runs.pop(), self.runs.pop()) else {
                break;
            };
            let merged = self.merge(a, b)?;
            self.runs.push(merged);
        }
        Ok(())
    }

    fn merge(&self, a: Run, b: Run) -> Result<Run, Error> {
        let total = self.total() + a.len + b.len;
        let mut w = self.writer(total)?;
        let io_err = |e| Error::io(format!("{}: merging spilled fingerprints", self.what), e);
        let open = |r: Run| -> std::io::Result<(BufReader<File>, u64)> {
            let mut file = r.file;
            file.seek(SeekFrom::Start(0))?;
            Ok((BufReader::new(file), r.len))
        };
        let mut sa = open(a).map_err(io_err)?;
        let mut sb = open(b).map_err(io_err)?;
        let next = |s: &mut (BufReader<File>, u64)| -> std::io::Result<Option<u128>> {
            if s.1 == 0 {
                return Ok(None);
            }
            s.1 -= 1;
            let mut buf = [0u8; 16];
            s.0.read_exact(&mut buf)?;
            Ok(Some(u128::from_be_bytes(buf)))
        };
        let mut x = next(&mut sa).map_err(io_err)?;
        let mut y = next(&mut sb).map_err(io_err)?;
        loop {
            let fp = match (x, y) {
                (None, None) => break,
                (Some(p), None) => {
                    x = next(&mut sa).map_err(io_err)?;
                    p
                }
                (None, Some(q)) => {
                    y = next(&mut sb).map_err(io_err)?;
                    q
                }
                (Some(p), Some(q)) if p <= q => {
                    x = next(&mut sa).map_err(io_err)?;
                    p
                }
                (Some(_), Some(q)) => {
                    y = next(&mut sb).map_err(io_err)?;
                    q
                }
            };
            w.push(fp).map_err(io_err)?;
        }
        w.finish().map_err(io_err)
    }
}

/// The directory temporary files go to, for messages.
pub(crate) fn temp_dir_name(dir: &Option<std::path::PathBuf>) -> String {
    match dir {
        Some(d) => d.display().to_string(),
        None => std::env::temp_dir().display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_across_spills() {
        // Room for a few fingerprints in memory: 3000 keys make many runs and merges,
        // with several index blocks per run.
        let mut s = SeenSet::new("test", 8 * BYTES_PER_ENTRY, None);
        for i in 0..3000u32 {
            assert!(s.insert(&i.to_be_bytes()).unwrap(), "{i} new");
        }
        assert!(s.runs_on_disk() >= 1);
        assert!(s.runs_on_disk() <= 12, "{} runs", s.runs_on_disk());
        for i in 0..3000u32 {
            assert!(!s.insert(&i.to_be_bytes()).unwrap(), "{i} seen");
        }
        assert!(s.contains(&7u32.to_be_bytes()).unwrap());
        assert!(!s.contains(b"something else").unwrap());
        assert!(s.insert(b"something else").unwrap());
    }

    #[test]
    fn index_stays_within_its_budget() {
        let budget = 4096;
        let mut s = SeenSet::new("test", budget, None);
        for i in 0..20_000u32 {
            s.insert(&i.to_le_bytes()).unwrap();
        }
        let index_bytes: usize = s.runs.iter().map(|r| r.index.len() * 16).sum();
        // A run written early may keep a finer index until it is merged: allow 2x.
        assert!(index_bytes <= budget / 2, "{index_bytes} bytes of index");
        assert!(s.runs.iter().all(|r| r.stride >= MIN_STRIDE));
    }

    #[test]
    fn fingerprints_differ() {
        assert_ne!(fingerprint(b"a"), fingerprint(b"b"));
        assert_ne!(fingerprint(b""), fingerprint(b"\0"));
        assert_eq!(fingerprint(b"http://x/"), fingerprint(b"http://x/"));
    }
}
