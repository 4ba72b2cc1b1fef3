//! The quarantine file of a conversion under `--on-error quarantine`, checked: it must
//! hold the original bytes of exactly the records the conversion rejects. The
//! verification quarantines into a temporary file of its own, and the two are compared.
//!
//! Rejections reach a quarantine in the order the engine's stages meet them, and a
//! sink's refusals interleave with the decoder's and the transforms' as the threads run;
//! each rejected record's bytes end with a newline. So the files are compared as
//! multisets of lines — the number of bytes, of lines and an order-independent sum of
//! each line's hash — read in blocks, whatever their size.
//!
//! ```
//! use soif_verify::quarantine::check;
//! let dir = tempfile::tempdir().unwrap();
//! let (theirs, ours) = (dir.path().join("q.soif"), dir.path().join("ours.soif"));
//! std::fs::write(&ours, "@FILE { a\n}\n@FILE { b\n}\n").unwrap();
//! std::fs::write(&theirs, "@FILE { b\n}\n@FILE { a\n}\n").unwrap();
//! assert!(check(&theirs, &ours).unwrap().holds);
//! std::fs::write(&theirs, "@FILE { b\n}\n").unwrap();
//! assert!(!check(&theirs, &ours).unwrap().holds);
//! ```

use soif_pipeline::Error;
use std::io::{self, Read};
use std::path::Path;

/// What the quarantine file holds, against what the conversion would put there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct QuarantineCheck {
    /// The quarantine file (`--quarantine`, a pipeline's `quarantine`).
    pub file: String,
    /// Bytes the conversion would write there.
    pub expected_bytes: u64,
    /// Bytes the file holds (0 when there is none: a run that rejects nothing leaves none).
    pub found_bytes: u64,
    /// Whether it holds the same records, byte for byte (in any order).
    pub holds: bool,
}

/// A file's lines as a multiset: bytes, lines, the sum of each line's hash.
#[derive(Debug, Default, PartialEq, Eq)]
struct Lines {
    bytes: u64,
    lines: u64,
    sum: u128,
}

/// [`Lines`] of the file at `path` (empty when there is none).
fn lines(path: &Path) -> io::Result<Lines> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Lines::default()),
        Err(e) => return Err(e),
    };
    let mut out = Lines::default();
    let mut line = blake3::Hasher::new();
    let mut open = false;
    let mut buf = vec![0u8; 64 * 1024];
    let end = |h: &mut blake3::Hasher, out: &mut Lines| {
        let digest = h.finalize();
        let mut first = [0u8; 16];
        first.copy_from_slice(&digest.as_bytes()[..16]);
        out.sum = out.sum.wrapping_add(u128::from_le_bytes(first));
        out.lines += 1;
        h.reset();
    };
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        out.bytes += n as u64;
        let mut rest = &buf[..n];
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            line.update(&rest[..=i]);
            end(&mut line, &mut out);
            open = false;
            rest = &rest[i + 1..];
        }
        if !rest.is_empty() {
            line.update(rest);
            open = true;
        }
    }
    if open {
        end(&mut line, &mut out);
    }
    Ok(out)
}

/// Compares the quarantine at `file` with the one the verification wrote at `ours`.
pub fn check(file: &Path, ours: &Path) -> Result<QuarantineCheck, Error> {
    let theirs = lines(file).map_err(|e| Error::io_path(file, e))?;
    let ours = lines(ours).map_err(|e| Error::io("reading verify's temporary files", e))?;
    Ok(QuarantineCheck {
        file: file.display().to_string(),
        expected_bytes: ours.bytes,
        found_bytes: theirs.bytes,
        holds: theirs == ours,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_across_blocks_and_without_a_last_newline() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let long = "x".repeat(200_000);
        std::fs::write(&a, format!("{long}\nshort\ntail")).unwrap();
        std::fs::write(&b, format!("tail\nshort\n{long}\n")).unwrap();
        let (la, lb) = (lines(&a).unwrap(), lines(&b).unwrap());
        assert_eq!(la.lines, 3);
        // The same lines, but one without its newline: not the same bytes.
        assert_ne!(la, lb);
        std::fs::write(&a, format!("short\ntail\n{long}\n")).unwrap();
        assert_eq!(lines(&a).unwrap(), lb);
        assert_eq!(lines(&dir.path().join("none")).unwrap(), Lines::default());
    }
}
