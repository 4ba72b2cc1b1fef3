//! The quarantine file of `--on-error quarantine`: rejected records' original bytes, one
//! after the other.
//!
//! It exists only when something was rejected. Opening it removes the file an earlier
//! run left (a regular file only: a symlink, a FIFO or a device such as `/dev/stderr` is
//! left alone), and the first rejected record creates it; so after a run the file holds
//! exactly that run's rejected records, or does not exist. Writes are buffered, so memory
//! stays bounded whatever is rejected.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A quarantine file, created by its first write.
#[derive(Debug)]
pub struct QuarantineFile {
    path: PathBuf,
    file: Option<BufWriter<std::fs::File>>,
}

impl QuarantineFile {
    /// Prepares the quarantine at `path`, removing the regular file an earlier run left
    /// there. (Errors are the system's; the caller names the path.)
    pub fn open(path: &Path) -> std::io::Result<QuarantineFile> {
        if let Ok(m) = std::fs::symlink_metadata(path) {
            if m.file_type().is_file() {
                std::fs::remove_file(path)?;
            }
        }
        Ok(QuarantineFile {
            path: path.to_path_buf(),
            file: None,
        })
    }

    /// Where the records go.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one rejected record's bytes, creating the file first if this is the first.
    pub fn write(&mut self, raw: &[u8]) -> std::io::Result<()> {
        let file = match self.file.as_mut() {
            Some(f) => f,
            None => {
                let created = std::fs::File::create(&self.path)?;
                self.file.insert(BufWriter::new(created))
            }
        };
        file.write_all(raw)
    }

    /// Writes out what is buffered (nothing to do when nothing was rejected).
    pub fn flush(&mut self) -> std::io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_by_the_first_record_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.soif");
        let mut q = QuarantineFile::open(&path).unwrap();
        q.flush().unwrap();
        assert!(!path.exists());
        q.write(b"@FILE { a\n}\n").unwrap();
        q.write(b"@FILE { b\n}\n").unwrap();
        q.flush().unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"@FILE { a\n}\n@FILE { b\n}\n"
        );
    }

    #[test]
    fn an_earlier_runs_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.soif");
        std::fs::write(&path, "@FILE { stale\n}\n").unwrap();
        let mut q = QuarantineFile::open(&path).unwrap();
        assert!(!path.exists());
        q.flush().unwrap();
        assert!(!path.exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_left_alone_and_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.soif");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("q.soif");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut q = QuarantineFile::open(&link).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        q.write(b"@FILE { a\n}\n").unwrap();
        q.flush().unwrap();
        assert!(link.is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"@FILE { a\n}\n");
    }

    #[test]
    fn an_unwritable_place_fails_at_the_first_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/q.soif");
        let mut q = QuarantineFile::open(&path).unwrap();
        q.flush().unwrap();
        let e = q.write(b"@FILE { a\n}\n").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
    }
}
