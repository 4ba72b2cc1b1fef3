//! Local inputs: files, directories, globs and stdin.
//!
//! [`expand`] turns what the user typed into the list of inputs to read, in a stable
//! order: `-` is stdin; `http://`, `https://`, `x-catalog://` (an RDM catalog, see
//! [`crate::catalog`]) and `oai+http(s)://` (an OAI-PMH repository, see [`crate::oai`])
//! are URLs; everything else is a local file, directory or glob, expanded by the rules
//! of [`crate::paths`] (directories read recursively, hidden names left out:
//! [`PathRules::CLI`]). No inputs at all means stdin.

use crate::decompress::{Compression, MAGIC_LEN};
use crate::input::InputSpec;
use crate::paths::{expand_one, PathRules};
use soif_pipeline::Error;
use std::path::Path;
use std::sync::Arc;

/// Expands inputs as typed into concrete inputs (see the module doc).
pub fn expand(inputs: &[String]) -> Result<Vec<InputSpec>, Error> {
    if inputs.is_empty() {
        return Ok(vec![InputSpec::Stdin]);
    }
    let mut out = Vec::new();
    for input in inputs {
        if input == "-" {
            out.push(InputSpec::Stdin);
        } else if input.starts_with("http://")
            || input.starts_with("https://")
            || crate::catalog::is_catalog(input)
            || crate::oai::is_oai(input)
        {
            out.push(InputSpec::Url(input.clone()));
        } else {
            let mut files = Vec::new();
            expand_one(input, PathRules::CLI, &mut files)?;
            out.extend(files.into_iter().map(InputSpec::File));
        }
    }
    Ok(out)
}

/// A plain file mapped into memory: the bytes to decode in place, and what to tell as
/// the decoder moves through them. Made by [`map`].
pub struct Mapped {
    /// The whole file; records are slices of it.
    pub data: bytes::Bytes,
    /// Hands the pages behind the decoder back to the kernel (see [`Mapped::consumed`]).
    map: Arc<memmap2::Mmap>,
    released: usize,
}

/// Pages this far behind the decoder stay mapped: records in flight through transforms
/// and sinks (at most `IN_FLIGHT_BYTES`, 16 MiB) are still read from them.
const RELEASE_LAG: usize = 16 << 20;
/// Pages are handed back this many bytes at a time.
const RELEASE_STEP: usize = 4 << 20;

impl Mapped {
    /// The decoder has consumed the file up to `offset`. Pages well behind it are dropped
    /// from this process (they stay in the page cache), so a 2 GB file does not show as
    /// 2 GB of resident memory: peak RSS stays near `RELEASE_LAG` plus the pipeline's own.
    /// A record still holding a slice of a dropped page reads it again from the page
    /// cache, transparently.
    pub fn consumed(&mut self, offset: u64) {
        let upto = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.map.len())
            .saturating_sub(RELEASE_LAG);
        if upto < self.released + RELEASE_STEP {
            return;
        }
        #[cfg(unix)]
        // SAFETY: the mapping is a read-only, private mapping of a file, never written:
        // MADV_DONTNEED drops our page table entries, and the next access faults the
        // same bytes back in from the file (it zero-fills only anonymous or written
        // private pages, which this mapping has none of). The range is inside the map.
        unsafe {
            let _ = self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                self.released,
                upto - self.released,
            );
        }
        self.released = upto;
    }
}

/// Lets `Bytes` own a share of the mapping.
struct SharedMap(Arc<memmap2::Mmap>);

impl AsRef<[u8]> for SharedMap {
    fn as_ref(&self) -> &[u8] {
        &self.0[..]
    }
}

/// Maps a plain, uncompressed file into memory so the decoder can read it in place
/// ([`soif_codecs::soif::SoifDecoder::decode_bytes`]): no read calls, no copy into a
/// read buffer, and a value of known size is stepped over rather than read through.
///
/// `Ok(None)` when the file is better read as a stream: not a regular file (a FIFO, a
/// device), empty, compressed (the decompressor reads it), or not mappable here (some
/// network and virtual filesystems). Only failing to open the file is an error.
///
/// Why this is worth its one risk: reading a file costs a copy from the page cache into
/// the read buffer, and a record longer than the buffer costs fresh memory for the whole
/// record (page faults on every new page), which made a 100 MB record decode at a quarter
/// of the rate of small ones. Mapped, both costs are gone. The risk, as for every program
/// that maps files (ripgrep documents the same): if another process truncates the file
/// while soif reads it, the kernel kills soif with SIGBUS. `--no-mmap` reads files as
/// streams instead, for files that may be rewritten while they are read.
pub fn map(path: &Path) -> Result<Option<Mapped>, Error> {
    let file = std::fs::File::open(path).map_err(|e| Error::io_path(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io_path(path, e))?;
    if !meta.is_file() || meta.len() == 0 {
        return Ok(None);
    }
    // SAFETY: the mapping is read-only and private to this process; the only hazard is
    // another process truncating the file while it is mapped (SIGBUS), which is
    // documented above and avoided with `--no-mmap`.
    let map = match unsafe { memmap2::Mmap::map(&file) } {
        Ok(map) => map,
        Err(_) => return Ok(None),
    };
    let head = &map[..map.len().min(MAGIC_LEN)];
    if Compression::detect(head) != Compression::None {
        return Ok(None);
    }
    // Decoding reads front to back: ask the kernel to read ahead further (an advice:
    // ignoring a failure costs only speed).
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    let map = Arc::new(map);
    Ok(Some(Mapped {
        data: bytes::Bytes::from_owner(SharedMap(map.clone())),
        map,
        released: 0,
    }))
}

/// The size of a file input, for the progress bar.
pub fn size(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_and_globs_are_sorted() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.soif", "a.soif", ".hidden", "sub/c.soif"] {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let got = expand(&[dir.path().display().to_string()]).unwrap();
        let names: Vec<_> = got.iter().map(|s| s.name()).collect();
        let d = dir.path().display();
        assert_eq!(
            names,
            [
                format!("{d}/a.soif"),
                format!("{d}/b.soif"),
                format!("{d}/sub/c.soif")
            ]
        );
        let got = expand(&[format!("{d}/*.soif")]).unwrap();
        assert_eq!(got.len(), 2);
        assert!(expand(&[format!("{d}/*.none")]).unwrap_err().is_config());
        assert!(expand(&[format!("{d}/missing.soif")]).is_err());
        assert!(matches!(expand(&[]).unwrap()[..], [InputSpec::Stdin]));
    }

    #[test]
    fn only_plain_nonempty_files_are_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.soif");
        std::fs::write(&plain, b"@FILE { http://a/\n}\n").unwrap();
        let mut mapped = map(&plain).unwrap().expect("a plain file is mapped");
        assert_eq!(&mapped.data[..], b"@FILE { http://a/\n}\n");
        mapped.consumed(u64::MAX);
        assert_eq!(&mapped.data[..], b"@FILE { http://a/\n}\n");
        let empty = dir.path().join("empty.soif");
        std::fs::write(&empty, b"").unwrap();
        assert!(map(&empty).unwrap().is_none());
        let gz = dir.path().join("a.soif.gz");
        std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0]).unwrap();
        assert!(map(&gz).unwrap().is_none(), "compressed files are streamed");
        assert!(map(dir.path()).map(|m| m.is_none()).unwrap_or(true));
        assert!(map(&dir.path().join("missing")).is_err());
    }
}
