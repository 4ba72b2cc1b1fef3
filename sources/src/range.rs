//! Byte ranges of a plain SOIF file: finding them (`soif split`, `soif.split()`) and
//! reading one (`soif convert --range`, `soif.read(range=…)`).
//!
//! The splitting itself — the boundary pass, and why a range decode gives exactly the
//! items of one sequential decode — is `soif_codecs::soif::split`. This module opens the
//! file the way those need it: a plain (uncompressed) regular file, mapped into memory,
//! so that the pass steps over values without reading them and a range decode can read
//! on past its end to the file's real end. A compressed file has no byte ranges to split
//! at (a gzip stream cannot be entered in the middle), stdin cannot be read twice: both
//! are refused with an error that says so.
//!
//! ```no_run
//! use soif_codecs::soif::DecoderOptions;
//! use soif_sources::range::{splits, By};
//! # fn f() -> Result<(), soif_pipeline::Error> {
//! for split in splits("archive.soif".as_ref(), DecoderOptions::default(), By::Parts(8))? {
//!     println!("{split}"); // 0..1048576, 1048576..2097152,record=5210, …
//! }
//! # Ok(()) }
//! ```

use crate::decompress::{Compression, MAGIC_LEN};
use crate::file;
use bytes::Bytes;
use futures::future::BoxFuture;
use soif_codecs::soif::split::{RangeSpec, Split, Splitter};
use soif_codecs::soif::DecoderOptions;
use soif_pipeline::source::{Input, InputData, Source};
use soif_pipeline::Error;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Where the split points fall (see `soif_codecs::soif::split::Splitter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// About this many bytes each.
    Size(u64),
    /// At most this many splits.
    Parts(u64),
}

/// The file mapped, after checking it can be split: `None` when it is empty.
///
/// `what` names the operation in errors (`"split"`, `"read a range of"`).
pub fn open_plain(path: &Path, what: &str) -> Result<Option<file::Mapped>, Error> {
    let name = path.display();
    let meta = std::fs::metadata(path).map_err(|e| Error::io_path(path, e))?;
    if !meta.is_file() {
        return Err(Error::Config(format!(
            "{name}: not a regular file; only a plain file can {what} byte ranges (stdin, pipes and devices are read whole)"
        )));
    }
    if meta.len() == 0 {
        return Ok(None);
    }
    let mut head = [0u8; MAGIC_LEN];
    let mut f = std::fs::File::open(path).map_err(|e| Error::io_path(path, e))?;
    let n = read_head(&mut f, &mut head).map_err(|e| Error::io_path(path, e))?;
    let compression = Compression::detect(&head[..n]);
    if compression != Compression::None {
        return Err(Error::Config(format!(
            "{name}: {} compressed inputs are not split: a compressed stream cannot be entered in the middle; read it whole (or decompress it first)",
            compression.as_str()
        )));
    }
    match file::map(path)? {
        Some(m) => Ok(Some(m)),
        None => Err(Error::Config(format!(
            "{name}: the file cannot be mapped into memory here, which byte ranges need"
        ))),
    }
}

fn read_head(f: &mut std::fs::File, head: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The splits of a plain file, found by the boundary pass with `opts` (the options the
/// ranges will be decoded with). An iterator: each split comes as soon as the pass has
/// found its end. An empty file has none.
pub fn splits(
    path: &Path,
    opts: DecoderOptions,
    by: By,
) -> Result<Box<dyn Iterator<Item = Split> + Send>, Error> {
    let Some(mapped) = open_plain(path, "be split into")? else {
        return Ok(Box::new(std::iter::empty()));
    };
    let data = mapped.data.clone();
    let splitter = match by {
        By::Size(size) => Splitter::by_size(data, opts, size),
        By::Parts(parts) => Splitter::by_parts(data, opts, parts),
    };
    // The mapping's pages behind the pass are handed back as it goes, as when decoding,
    // so that a pass over a large file does not hold it resident.
    let mut mapped = mapped;
    Ok(Box::new(
        splitter.with_progress(move |offset| mapped.consumed(offset)),
    ))
}

/// One byte range of a plain file as the engine's [`Source`]: its objects, decoded as a
/// decode of the whole file would (`InputData::Held` with a `range`).
pub struct RangeSource {
    path: PathBuf,
    spec: RangeSpec,
    opened: bool,
    read: Arc<AtomicU64>,
}

impl RangeSource {
    pub fn new(path: PathBuf, spec: RangeSpec) -> RangeSource {
        RangeSource {
            path,
            spec,
            opened: false,
            read: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The file mapped and the range checked against it (`None`: an empty file, whose
    /// only range is `0..0`).
    pub fn open(path: &Path, spec: &RangeSpec) -> Result<Option<(file::Mapped, Split)>, Error> {
        let name = path.display();
        let bad = |e: soif_codecs::soif::split::SplitError| Error::Config(format!("{name}: {e}"));
        let Some(mapped) = open_plain(path, "read")? else {
            if spec.start == 0 && spec.end == 0 {
                return Ok(None);
            }
            return Err(Error::Config(format!(
                "{name}: range {}..{} is not inside the input (0 bytes)",
                spec.start, spec.end
            )));
        };
        let split = spec.resolve(&mapped.data).map_err(bad)?;
        split.check(&mapped.data).map_err(bad)?;
        Ok(Some((mapped, split)))
    }
}

impl Source for RangeSource {
    fn next_input(&mut self) -> BoxFuture<'_, Result<Option<Input>, Error>> {
        Box::pin(async move {
            if self.opened {
                return Ok(None);
            }
            self.opened = true;
            let Some((mut mapped, split)) = RangeSource::open(&self.path, &self.spec)? else {
                return Ok(None);
            };
            let data: Bytes = mapped.data.clone();
            let read = self.read.clone();
            let start = split.start;
            let mut counted = start;
            let consumed = Box::new(move |offset: u64| {
                read.fetch_add(offset.saturating_sub(counted), Ordering::Relaxed);
                counted = counted.max(offset);
                mapped.consumed(offset);
            });
            Ok(Some(Input {
                name: Arc::from(self.path.display().to_string()),
                data: InputData::Held {
                    data,
                    consumed,
                    range: Some(split),
                },
            }))
        })
    }

    fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    fn total_bytes(&self) -> Option<u64> {
        Some(self.spec.end.saturating_sub(self.spec.start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_and_odd_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("a.soif.gz");
        std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0]).unwrap();
        let e = splits(&gz, DecoderOptions::default(), By::Parts(2))
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .contains("gzip compressed inputs are not split"),
            "{e}"
        );
        let e = splits(dir.path(), DecoderOptions::default(), By::Parts(2))
            .err()
            .unwrap();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let empty = dir.path().join("empty.soif");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(
            splits(&empty, DecoderOptions::default(), By::Size(1))
                .unwrap()
                .count(),
            0
        );
        let plain = dir.path().join("a.soif");
        std::fs::write(&plain, b"@FILE { a\n}\n@FILE { b\n}\n").unwrap();
        let got: Vec<String> = splits(&plain, DecoderOptions::default(), By::Size(1))
            .unwrap()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(got, ["0..12", "12..24,record=1"]);
        let spec: RangeSpec = "3..24".parse().unwrap();
        let e = RangeSource::open(&plain, &spec).err().unwrap();
        assert!(e.to_string().contains("not an object boundary"), "{e}");
    }
}
