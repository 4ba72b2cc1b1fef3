//! The `sqlite` sink: a thin adapter from the [`Sink`] trait to the catalog store's
//! [`Loader`] (crate `soif_store`, where the layout, its upgrades, the batching and the
//! bulk load of a new database live and are documented; see also
//! `docs/sqlite-layout.md`).
//!
//! ```
//! use soif_codecs::Record;
//! use soif_pipeline::Sink;
//! use soif_sinks::sqlite::SqliteSink;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let db = dir.path().join("catalog.db");
//! let mut sink = SqliteSink::open(&db, Default::default(), 1000, &["x.soif".into()]).unwrap();
//! sink.write(&Record::new("DOCUMENT", "http://home.netscape.com:80/")
//!     .with("Title", "Welcome to Netscape")).unwrap();
//! sink.finish().unwrap();
//! let back = sink.store().get(b"DOCUMENT", b"http://home.netscape.com:80/").unwrap().unwrap();
//! assert_eq!(back.get_str("Title"), Some("Welcome to Netscape"));
//! ```

use soif_codecs::Record;
use soif_pipeline::{Error, Sink, SinkError};
use soif_store::{Loader, RunCounts, SqliteStore, StoreOptions};
use std::path::Path;

/// `[[sink]] format = "sqlite"` / `--to sqlite`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The database's path (required).
    pub output: Option<String>,
    /// An RDM `@SCHEMA` file: column types and names.
    pub schema: Option<std::path::PathBuf>,
    /// Values that are not UTF-8: BLOBs (`utf8`) or read as ISO 8859-1.
    pub charset: crate::Charset,
    /// Rows per transaction (default [`soif_store::DEFAULT_BATCH_ROWS`]).
    pub batch_size: Option<usize>,
}

/// The `sqlite` sink: every record goes to the run's [`Loader`].
pub struct SqliteSink {
    loader: Loader,
}

impl SqliteSink {
    /// Opens the database (created, and bulk-loaded, when it does not exist or is empty)
    /// and records the start of a run in `soif_runs`.
    pub fn open(
        path: &Path,
        opts: StoreOptions,
        batch_size: usize,
        inputs: &[String],
    ) -> Result<SqliteSink, Error> {
        Ok(SqliteSink {
            loader: Loader::open(path, opts, batch_size, inputs)?,
        })
    }

    /// A sink writing through an open store.
    pub fn new(
        store: SqliteStore,
        batch_size: usize,
        inputs: &[String],
    ) -> Result<SqliteSink, Error> {
        Ok(SqliteSink {
            loader: Loader::new(store, batch_size, inputs)?,
        })
    }

    /// The store (for tests and for callers that want to query after `finish`).
    pub fn store(&self) -> &SqliteStore {
        self.loader.store()
    }

    /// This run's id in `soif_runs`.
    pub fn run_id(&self) -> i64 {
        self.loader.run_id()
    }

    /// The counts so far.
    pub fn counts(&self) -> RunCounts {
        self.loader.counts()
    }
}

impl Sink for SqliteSink {
    fn name(&self) -> &str {
        "sqlite"
    }

    fn take_notices(&mut self) -> Vec<String> {
        self.loader.take_notices()
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        self.loader.write(record)
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.loader.finish()
    }
}
