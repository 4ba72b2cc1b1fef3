//! [`Partitions`]: the entries of one side, spread over temporary files by the hash of
//! their key, so that the comparison holds one partition of keys at a time whatever the
//! number of records (as `order` and `dedupe` spill to disk rather than grow).
//!
//! Each file is a sequence of entries framed by [`soif_codecs::packed::write_entry`];
//! the frame's sequence number is the entry's offset in its file, so an entry can be read
//! again by offset when the report needs its attributes.

use crate::entry::{Entry, KeyHash};
use soif_codecs::packed::{read_entry, write_entry};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Partitions per side: with the key digests of 10 million records, one partition is
/// under 30 MiB in memory.
pub const PARTS: usize = 64;

/// Buffer of each partition file being written.
const WRITE_BUFFER: usize = 32 * 1024;

/// The largest entry read back: a record's names and shortened values.
const MAX_ENTRY: usize = 256 << 20;

/// The temporary files of one side, being written.
pub struct Partitions {
    dir: tempfile::TempDir,
    files: Vec<Option<(BufWriter<File>, u64)>>,
    scratch: Vec<u8>,
    /// Entries written.
    pub entries: u64,
    /// Whether to sum the content digest, and with the action or not.
    content_with_action: Option<bool>,
    content: u128,
}

impl Partitions {
    /// Files in a new temporary directory under `temp_dir` (the system's by default).
    /// `content`: sum the side's content digest ([`Spilled::content`]), counting each
    /// entry's action (`Some(true)`, a file) or not (`Some(false)`, a catalog).
    pub fn new(
        temp_dir: Option<&Path>,
        side: &str,
        content: Option<bool>,
    ) -> io::Result<Partitions> {
        let dir = temp_dir_in(temp_dir, &format!("soif-verify-{side}-"))?;
        Ok(Partitions {
            dir,
            files: (0..PARTS).map(|_| None).collect(),
            scratch: Vec::with_capacity(4096),
            entries: 0,
            content_with_action: content,
            content: 0,
        })
    }

    /// Appends an entry to its key's partition.
    pub fn push(&mut self, entry: &Entry) -> io::Result<()> {
        self.scratch.clear();
        entry.encode(&mut self.scratch);
        let kh = entry.key_hash();
        if let Some(with_action) = self.content_with_action {
            self.content = self
                .content
                .wrapping_add(content_hash(&kh, &entry.digest(with_action)));
        }
        let part = partition_of(&kh);
        let slot = &mut self.files[part];
        if slot.is_none() {
            let f = File::create(part_path(self.dir.path(), part))?;
            *slot = Some((BufWriter::with_capacity(WRITE_BUFFER, f), 0));
        }
        if let Some((w, offset)) = slot {
            let mut counter = Counter(0);
            write_entry(&mut counter, *offset, &self.scratch)?;
            write_entry(w, *offset, &self.scratch)?;
            *offset += counter.0;
        }
        self.entries += 1;
        Ok(())
    }

    /// Flushes every file: the partitions can be read.
    pub fn finish(mut self) -> io::Result<Spilled> {
        for (w, _) in self.files.iter_mut().flatten() {
            w.flush()?;
        }
        Ok(Spilled {
            dir: self.dir,
            entries: self.entries,
            content: self.content,
        })
    }
}

/// A new temporary directory under `dir` (the system's by default).
pub fn temp_dir_in(
    dir: Option<&std::path::Path>,
    prefix: &str,
) -> std::io::Result<tempfile::TempDir> {
    let mut b = tempfile::Builder::new();
    b.prefix(prefix);
    match dir {
        Some(d) => b.tempdir_in(d),
        None => b.tempdir(),
    }
}

/// The temporary files of one side, written.
pub struct Spilled {
    dir: tempfile::TempDir,
    pub entries: u64,
    /// The side's content digest: the sum of a hash of each entry's key and digest, so
    /// independent of the order of the records (0 when not asked for).
    pub content: u128,
}

impl Spilled {
    /// Partition `part`'s entries in the order they were written.
    pub fn read(&self, part: usize) -> io::Result<PartReader> {
        let path = part_path(self.dir.path(), part);
        let reader = match File::open(&path) {
            Ok(f) => Some(BufReader::with_capacity(64 * 1024, f)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(PartReader { reader, path })
    }
}

/// Reads one partition, in order or by offset.
pub struct PartReader {
    reader: Option<BufReader<File>>,
    path: PathBuf,
}

impl PartReader {
    /// The next entry with its offset, its key hash; `None` at the end.
    pub fn next_entry(&mut self) -> io::Result<Option<(u64, KeyHash, Entry)>> {
        let Some(r) = &mut self.reader else {
            return Ok(None);
        };
        match read_entry(r, MAX_ENTRY)? {
            None => Ok(None),
            Some((offset, payload)) => {
                let (kh, e) = Entry::decode(payload)?;
                Ok(Some((offset, kh, e)))
            }
        }
    }

    /// The entry at `offset` (read through a handle of its own).
    pub fn at(&self, offset: u64) -> io::Result<Entry> {
        let mut f = BufReader::new(File::open(&self.path)?);
        f.seek(SeekFrom::Start(offset))?;
        match read_entry(&mut f, MAX_ENTRY)? {
            Some((_, payload)) => Ok(Entry::decode(payload)?.1),
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "damaged temporary file: no entry at offset",
            )),
        }
    }
}

fn content_hash(kh: &KeyHash, digest: &[u8; 16]) -> u128 {
    let mut h = blake3::Hasher::new();
    h.update(kh);
    h.update(digest);
    let mut b = [0u8; 16];
    b.copy_from_slice(&h.finalize().as_bytes()[..16]);
    u128::from_le_bytes(b)
}

/// The partition of a key hash.
pub fn partition_of(kh: &KeyHash) -> usize {
    (u64::from_le_bytes([kh[0], kh[1], kh[2], kh[3], kh[4], kh[5], kh[6], kh[7]]) % PARTS as u64)
        as usize
}

fn part_path(dir: &Path, part: usize) -> PathBuf {
    dir.join(format!("{part:03}"))
}

/// Counts the bytes a frame takes.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_back_in_order_and_by_offset() {
        let mut p = Partitions::new(None, "test", Some(true)).unwrap();
        let mut all = Vec::new();
        for i in 0..500 {
            let mut e = Entry::new("F".into(), format!("http://x/{i}").into(), None);
            e.push(b"N", b't', i.to_string().as_bytes());
            let e = e.finish();
            p.push(&e).unwrap();
            all.push(e);
        }
        let s = p.finish().unwrap();
        assert_eq!(s.entries, 500);
        let mut seen = 0;
        for part in 0..PARTS {
            let mut r = s.read(part).unwrap();
            let mut last = None;
            while let Some((offset, kh, e)) = r.next_entry().unwrap() {
                assert_eq!(partition_of(&kh), part);
                assert_eq!(r.at(offset).unwrap(), e);
                let i: usize = std::str::from_utf8(&e.url[9..]).unwrap().parse().unwrap();
                assert!(last < Some(i), "in order");
                last = Some(i);
                assert_eq!(all[i], e);
                seen += 1;
            }
        }
        assert_eq!(seen, 500);
    }
}
