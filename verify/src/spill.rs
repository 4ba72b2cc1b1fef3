//! [`Partitions`]: the entries of one side, spread over temporary files by the hash of
//! their key, so that the comparison holds one partition of keys at a time whatever the
//! number of records (as `order` and `dedupe` spill to disk rather than grow).
//!
//! Each file is a sequence of entries framed by [`soif_codecs::packed::write_entry`];
//! the frame's sequence number is the entry's offset in its file, so an entry can be read
//! again by offset when the report needs its attributes.

use crate::entry::{Builder, Digest, Entry, Head, KeyHash};
use bytes::Bytes;
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
    /// An entry being encoded, its frame, and the digest's buffer.
    payload: Vec<u8>,
    frame: Vec<u8>,
    scratch: Vec<u8>,
    /// Entries written.
    pub entries: u64,
    /// Whether the entries' digests count their action (a file's) or not (a catalog's).
    with_action: bool,
    /// Whether to sum the content digest.
    sum: bool,
    content: u128,
}

impl Partitions {
    /// Files in a new temporary directory under `temp_dir` (the system's by default).
    /// `with_action`: the entries' digests count their action (a file keeps it) or not
    /// (a catalog applies it); `content`: sum the side's content digest
    /// ([`Spilled::content`]).
    pub fn new(
        temp_dir: Option<&Path>,
        side: &str,
        with_action: bool,
        content: bool,
    ) -> io::Result<Partitions> {
        let dir = temp_dir_in(temp_dir, &format!("soif-verify-{side}-"))?;
        Ok(Partitions {
            dir,
            files: (0..PARTS).map(|_| None).collect(),
            payload: Vec::with_capacity(4096),
            frame: Vec::with_capacity(4096),
            scratch: Vec::with_capacity(1024),
            entries: 0,
            with_action,
            sum: content,
            content: 0,
        })
    }

    /// Appends a finished entry to its key's partition.
    pub fn push(&mut self, entry: &Builder) -> io::Result<()> {
        let kh = entry.key_hash();
        let digest = entry.digest(self.with_action, &mut self.scratch);
        if self.sum {
            self.content = self.content.wrapping_add(content_hash(&kh, &digest));
        }
        self.payload.clear();
        entry.encode(&kh, &digest, &mut self.payload);
        let part = partition_of(&kh);
        let slot = &mut self.files[part];
        if slot.is_none() {
            let f = File::create(part_path(self.dir.path(), part))?;
            *slot = Some((BufWriter::with_capacity(WRITE_BUFFER, f), 0));
        }
        if let Some((w, offset)) = slot {
            self.frame.clear();
            write_entry(&mut self.frame, *offset, &self.payload)?;
            w.write_all(&self.frame)?;
            *offset += self.frame.len() as u64;
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
    /// The next entry: its offset, its head and its bytes (for [`Entry::decode`]);
    /// `None` at the end.
    pub fn next_entry(&mut self) -> io::Result<Option<(u64, Head, Bytes)>> {
        let Some(r) = &mut self.reader else {
            return Ok(None);
        };
        match read_entry(r, MAX_ENTRY)? {
            None => Ok(None),
            Some((offset, payload)) => Ok(Some((offset, Head::read(&payload)?, payload))),
        }
    }

    /// The entry at `offset` (read through a handle of its own).
    pub fn at(&self, offset: u64) -> io::Result<Entry> {
        let mut f = BufReader::new(File::open(&self.path)?);
        f.seek(SeekFrom::Start(offset))?;
        match read_entry(&mut f, MAX_ENTRY)? {
            Some((_, payload)) => Entry::decode(payload),
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "damaged temporary file: no entry at offset",
            )),
        }
    }
}

fn content_hash(kh: &KeyHash, digest: &Digest) -> u128 {
    let mut both = [0u8; 32];
    both[..16].copy_from_slice(kh);
    both[16..].copy_from_slice(digest);
    let mut b = [0u8; 16];
    b.copy_from_slice(&blake3::hash(&both).as_bytes()[..16]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_back_in_order_and_by_offset() {
        let mut p = Partitions::new(None, "test", true, true).unwrap();
        let mut all = Vec::new();
        let mut b = Builder::default();
        for i in 0..500 {
            b.start("F".into(), format!("http://x/{i}").into(), None);
            b.push(b"N", b't', i.to_string().as_bytes());
            b.finish();
            p.push(&b).unwrap();
            all.push(b.entry());
        }
        let s = p.finish().unwrap();
        assert_eq!(s.entries, 500);
        let mut seen = 0;
        for part in 0..PARTS {
            let mut r = s.read(part).unwrap();
            let mut last = None;
            while let Some((offset, head, payload)) = r.next_entry().unwrap() {
                let e = Entry::decode(payload).unwrap();
                assert_eq!(partition_of(&head.key), part);
                assert_eq!(head.key, e.key_hash());
                assert_eq!(head.digest, e.digest(true));
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
