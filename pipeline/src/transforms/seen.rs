//! [`SeenSet`]: "have I seen this key before?" over a stream of any length, in bounded
//! memory. Used by `dedupe` and by `validate`'s `Enforce-Uniqueness` check.
//!
//! **Method.** Each key is reduced to a 128-bit fingerprint (two SipHash-1-3 hashes of
//! the key under different prefixes). Fingerprints go into an in-memory hash set until it
//! holds as many as the memory budget allows; then the set is sorted and written to an
//! anonymous temporary file (a *run*: 16-byte big-endian entries), and the set starts
//! again. Runs of similar size are merged (like a log-structured merge tree), so there
//! are only about log₂(n / capacity) of them, and each lookup that misses the in-memory
//! set does a binary search in each run (reading 16 bytes per probe; the operating
//! system's page cache keeps the hot probes in memory).
//!
//! **Exactness.** The answer is exact up to fingerprint collisions: two *different* keys
//! are taken for the same one with probability about n² / 2¹²⁹ — for a billion keys,
//! about 10⁻²¹. Nothing is ever forgotten, whatever the input size; memory stays within
//! the budget, and the disk holds 16 bytes per distinct key.

use crate::Error;
use std::collections::HashSet;
use std::fs::File;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// Bytes per fingerprint in memory, counting the hash set's overhead and the sorted copy
/// made when it is spilled.
const BYTES_PER_ENTRY: usize = 48;

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

/// A sorted run of fingerprints on disk.
struct Run {
    file: File,
    len: u64,
}

impl Run {
    fn get(&mut self, i: u64) -> std::io::Result<u128> {
        let mut buf = [0u8; 16];
        self.file.seek(SeekFrom::Start(i * 16))?;
        self.file.read_exact(&mut buf)?;
        Ok(u128::from_be_bytes(buf))
    }

    fn contains(&mut self, fp: u128) -> std::io::Result<bool> {
        let (mut lo, mut hi) = (0u64, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid)?.cmp(&fp) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(true),
            }
        }
        Ok(false)
    }
}

/// A set of keys seen so far, bounded in memory (see the module docs).
pub struct SeenSet {
    what: String,
    memory: HashSet<u128>,
    capacity: usize,
    runs: Vec<Run>,
    temp_dir: Option<PathBuf>,
}

impl SeenSet {
    /// A set that keeps at most `budget` bytes of fingerprints in memory and spills the
    /// rest to `temp_dir` (or the system's). `what` names the user (`dedupe:url`) in
    /// I/O error messages.
    pub fn new(what: impl Into<String>, budget: usize, temp_dir: Option<PathBuf>) -> SeenSet {
        SeenSet {
            what: what.into(),
            memory: HashSet::new(),
            capacity: (budget / BYTES_PER_ENTRY).max(1),
            runs: Vec::new(),
            temp_dir,
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
                .contains(fp)
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

    fn temp_file(&self) -> Result<File, Error> {
        match &self.temp_dir {
            Some(dir) => tempfile::tempfile_in(dir),
            None => tempfile::tempfile(),
        }
        .map_err(|e| Error::io(format!("{}: creating a temporary file", self.what), e))
    }

    fn spill(&mut self) -> Result<(), Error> {
        let mut sorted: Vec<u128> = self.memory.drain().collect();
        sorted.sort_unstable();
        let io_err = |what: &str, e| {
            Error::io(
                format!("{what}: writing fingerprints to a temporary file"),
                e,
            )
        };
        let mut w = BufWriter::new(self.temp_file()?);
        for fp in &sorted {
            w.write_all(&fp.to_be_bytes())
                .map_err(|e| io_err(&self.what, e))?;
        }
        let file = w
            .into_inner()
            .map_err(|e| io_err(&self.what, e.into_error()))?;
        self.runs.push(Run {
            file,
            len: sorted.len() as u64,
        });
        drop(sorted);
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
        let io_err = |e| Error::io(format!("{}: merging spilled fingerprints", self.what), e);
        let mut out = BufWriter::new(self.temp_file()?);
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
        let mut len = 0u64;
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
            out.write_all(&fp.to_be_bytes()).map_err(io_err)?;
            len += 1;
        }
        let file = out.into_inner().map_err(|e| io_err(e.into_error()))?;
        Ok(Run { file, len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_across_spills() {
        // Room for 4 fingerprints in memory: 1000 keys make many runs and merges.
        let mut s = SeenSet::new("test", 4 * BYTES_PER_ENTRY, None);
        for i in 0..1000u32 {
            assert!(s.insert(&i.to_be_bytes()).unwrap(), "{i} new");
        }
        assert!(s.runs_on_disk() >= 1);
        assert!(s.runs_on_disk() <= 12, "{} runs", s.runs_on_disk());
        for i in 0..1000u32 {
            assert!(!s.insert(&i.to_be_bytes()).unwrap(), "{i} seen");
        }
        assert!(s.contains(&7u32.to_be_bytes()).unwrap());
        assert!(!s.contains(b"something else").unwrap());
        assert!(s.insert(b"something else").unwrap());
    }

    #[test]
    fn fingerprints_differ() {
        assert_ne!(fingerprint(b"a"), fingerprint(b"b"));
        assert_ne!(fingerprint(b""), fingerprint(b"\0"));
        assert_eq!(fingerprint(b"http://x/"), fingerprint(b"http://x/"));
    }
}
