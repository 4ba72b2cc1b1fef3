//! [`Files`]: how transforms read the files their specs name — `dc`'s mapping,
//! `validate`'s schema (and the run's `--schema`) — so that a chain built on one machine
//! can be built again on another that has no copy of them.
//!
//! On the command line every read goes to the disk. A Spark driver builds the chain once
//! with [`Files::recording`] (checking every spec before a task starts), takes what was
//! read ([`Files::recorded`]) and ships it with the specs; each executor builds the
//! chain with [`Files::shipped`], whose reads are answered from those bytes, so the
//! executors need no shared filesystem (docs/spark.md#transforms).
//!
//! ```
//! use soif_pipeline::transforms::Files;
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("map.toml");
//! std::fs::write(&path, "template = \"DC\"\n").unwrap();
//! let driver = Files::recording();
//! driver.read(&path, "mapping", 1 << 20).unwrap();
//! let shipped = driver.recorded();
//! std::fs::remove_file(&path).unwrap();
//! let executor = Files::shipped(shipped);
//! assert_eq!(&executor.read(&path, "mapping", 1 << 20).unwrap()[..], b"template = \"DC\"\n");
//! ```

use crate::Error;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The files a chain read, by their paths as the specs give them.
pub type FileMap = BTreeMap<String, Bytes>;

/// Where transforms read their files from; see the [module documentation](self).
#[derive(Debug, Clone, Default)]
pub struct Files {
    mode: Mode,
}

#[derive(Debug, Clone, Default)]
enum Mode {
    /// From the disk.
    #[default]
    Disk,
    /// From the disk, keeping a copy of each file read.
    Recording(Arc<Mutex<FileMap>>),
    /// From files read elsewhere (the disk for any other).
    Shipped(Arc<FileMap>),
}

impl Files {
    /// Reads from the disk and remembers what it read (see [`recorded`](Self::recorded)).
    pub fn recording() -> Files {
        Files {
            mode: Mode::Recording(Arc::default()),
        }
    }

    /// Answers reads from `files` (a [`recorded`](Self::recorded) map), and from the disk
    /// for a path not in it.
    pub fn shipped(files: FileMap) -> Files {
        Files {
            mode: Mode::Shipped(Arc::new(files)),
        }
    }

    /// What a [`recording`](Self::recording) read so far (empty for the others).
    pub fn recorded(&self) -> FileMap {
        match &self.mode {
            Mode::Recording(m) => m.lock().map(|m| m.clone()).unwrap_or_default(),
            _ => FileMap::new(),
        }
    }

    /// The contents of the file `path` (a `what`, for messages), at most `max` bytes: a
    /// larger file, or one that cannot be read, is an [`Error::Config`] naming it.
    pub fn read(&self, path: &Path, what: &str, max: u64) -> Result<Bytes, Error> {
        let key = path.to_string_lossy();
        if let Mode::Shipped(files) = &self.mode {
            if let Some(b) = files.get(key.as_ref()) {
                return Ok(b.clone());
            }
        }
        let bytes = Bytes::from(soif_codecs::rules::file::read_bounded(path, what, max)?);
        if let Mode::Recording(m) = &self.mode {
            if let Ok(mut m) = m.lock() {
                m.insert(key.into_owned(), bytes.clone());
            }
        }
        Ok(bytes)
    }

    /// The first `@SCHEMA` object of the file `path`.
    pub fn schema(&self, path: &Path) -> Result<soif_codecs::rdm::Schema, Error> {
        use soif_codecs::rules::schema::{parse_schema, MAX_SCHEMA_FILE};
        parse_schema(path, &self.read(path, "schema", MAX_SCHEMA_FILE)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_large_file_is_a_config_error_naming_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let missing = dir.path().join("none.toml");
        let e = Files::default()
            .read(&missing, "mapping", 10)
            .expect_err("no such file");
        assert!(e.is_config() && e.to_string().contains("none.toml"), "{e}");
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'x'; 11]).expect("a file");
        let e = Files::default()
            .read(&big, "mapping", 10)
            .expect_err("too large");
        assert!(e.to_string().contains("larger than"), "{e}");
        assert_eq!(
            Files::default()
                .read(&big, "mapping", 11)
                .expect("fits")
                .len(),
            11
        );
    }

    #[test]
    fn shipped_files_answer_before_the_disk() {
        let files = Files::shipped(FileMap::from([(
            "/nowhere/map.toml".to_string(),
            Bytes::from_static(b"shipped"),
        )]));
        let got = files
            .read(Path::new("/nowhere/map.toml"), "mapping", 100)
            .expect("shipped");
        assert_eq!(&got[..], b"shipped");
        assert!(files.recorded().is_empty());
    }
}
