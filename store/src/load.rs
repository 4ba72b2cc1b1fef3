//! [`Loader`]: a whole load — what the `sqlite` sink does — in batched transactions,
//! recorded in `soif_runs`; a new database is loaded in bulk (see the crate doc, "Loading
//! a new database").

use crate::runs::RunCounts;
use crate::store::{SqliteStore, StoreError, StoreOptions};
use soif_codecs::{Action, Record};
use soif_pipeline::{Error, SinkError};
use std::path::Path;
use std::time::Duration;

/// Rows per transaction unless `--batch-size` says otherwise.
///
/// Why this many: every commit writes out (and, under the rollback journal of a bulk
/// load, first journals) each page the transaction touched, and with URLs in no
/// particular order that is a good part of the `url` index every time. Loading 183,552
/// summary objects wrote 31,341 pages in batches of 1,000 and 15,090 in batches of
/// 5,000, for a 10,235-page database: about 10 % less CPU and half the system time.
/// Larger batches only mean more to redo after a `kill -9`.
pub const DEFAULT_BATCH_ROWS: usize = 10_000;

/// A transaction is committed early once its records hold this many bytes, so that the
/// WAL (or journal) and the pages SQLite spills stay bounded whatever the record sizes.
pub const MAX_BATCH_BYTES: usize = 64 << 20;

/// A load (what the `sqlite` sink does): writes each record through a [`SqliteStore`],
/// `batch_size` records (or [`MAX_BATCH_BYTES`]) per transaction, and keeps the run's
/// `soif_runs` row up to date.
pub struct Loader {
    store: SqliteStore,
    run_id: i64,
    batch_size: usize,
    pending: usize,
    /// The open transaction's records' size in bytes (see [`record_bytes`]).
    pending_bytes: usize,
    counts: RunCounts,
    /// The counts as of the last commit (what the database holds).
    committed: RunCounts,
    finished: bool,
    /// Loading a database this sink created ([`StoreOptions::bulk`]).
    bulk: bool,
    /// In a bulk load: asks a helper thread to write committed pages out while loading
    /// goes on (see [`Writeback`]). Declared after `store`, so that its descriptor of
    /// the database file is closed after the connection (see [`Writeback::finish`]).
    pub(crate) writeback: Option<Writeback>,
    /// Held while the run lasts: tells later loads that this one is alive.
    _loader: Option<LoaderLock>,
    notices: Vec<String>,
}

/// How a load tells a run killed mid-way (`kill -9`, a crash, which leave their
/// `soif_runs` row `running`) from one still going: every load holds a shared lock on
/// `DATABASE.soif-lock` (a file beside the database, created once and left there) while
/// it runs. The operating system drops the lock when the process dies, however it dies.
/// A load that opens the database first tries to take that lock exclusively: when it can,
/// no other load is alive, so every run still `running` was killed and is marked
/// `interrupted`; then it takes its shared lock like everyone else. While another load
/// runs, the rows are left as they are (the next load alone marks them).
#[derive(Debug)]
pub struct LoaderLock {
    _file: std::fs::File,
}

impl LoaderLock {
    /// The lock file of the database at `db`.
    pub fn path(db: &Path) -> std::path::PathBuf {
        let mut name = db.as_os_str().to_os_string();
        name.push(".soif-lock");
        std::path::PathBuf::from(name)
    }

    /// Takes the shared lock; `true` with it when no other load was alive.
    pub fn acquire(db: &Path) -> Result<(LoaderLock, bool), Error> {
        let path = LoaderLock::path(db);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io_path(&path, e))?;
        let alone = match file.try_lock() {
            Ok(()) => {
                file.unlock().map_err(|e| Error::io_path(&path, e))?;
                true
            }
            Err(std::fs::TryLockError::WouldBlock) => false,
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io_path(&path, e)),
        };
        // Between the exclusive try and this, another load may have found itself alone:
        // harmless, this run has no row yet.
        file.lock_shared().map_err(|e| Error::io_path(&path, e))?;
        Ok((LoaderLock { _file: file }, alone))
    }
}

/// Writes a bulk-loaded database's committed pages to disk in the background, and keeps
/// disk space reserved ahead of its end.
///
/// Why the writes: a bulk load does not sync until its last commit, so that final sync
/// used to write the whole new file at once (about a fifth of the load time, 200 MB on
/// the development VM), with the loader waiting. A helper thread that syncs the file
/// after each commit (coalesced: one sync at a time, a request while one runs is
/// remembered once) spreads that work over the load, on the other core, and leaves the
/// final sync little to do. It changes nothing about durability or consistency: the
/// journal still protects each transaction, and the final commit is still synced by
/// SQLite itself.
///
/// Why the reservation (Linux): every page SQLite appends made ext4 reserve a block for
/// it inside `pwrite`, on the loader's thread (about a tenth of that thread on the
/// 8 KB records). The helper keeps [`PREALLOCATE_AHEAD`] reserved past the file's end
/// (`fallocate` with `FALLOC_FL_KEEP_SIZE`: the file's size, all SQLite sees, does not
/// change), so appending finds its blocks there: 0.470 s → 0.406 s for the 200 MB load,
/// eight interleaved pairs of runs. What is left unused is given back when the load ends
/// ([`Writeback::finish`]); a load killed mid-way leaves at most that much reserved past
/// the end of the file (`du` counts it; `VACUUM`, or copying the file, frees it).
/// Filesystems without `fallocate` simply do without.
pub(crate) struct Writeback {
    tx: Option<std::sync::mpsc::SyncSender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    file: std::sync::Arc<std::fs::File>,
}

/// How much disk space a bulk load keeps reserved past the end of the database file.
const PREALLOCATE_AHEAD: u64 = 64 << 20;

/// How often the helper tops the reservation up between commits (a batch can hold
/// 64 MiB, and SQLite writes pages out during it).
const PREALLOCATE_EVERY: Duration = Duration::from_millis(50);

/// Reserves `PREALLOCATE_AHEAD` bytes past the file's end, without changing its size.
/// Best effort: nothing happens where `fallocate` is not supported.
fn preallocate(file: &std::fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let Ok(len) = file.metadata().map(|m| m.len()) else {
            return;
        };
        let (Ok(offset), Ok(ahead)) = (
            libc::off_t::try_from(len),
            libc::off_t::try_from(PREALLOCATE_AHEAD),
        ) else {
            return;
        };
        // SAFETY: a plain system call on an open descriptor this struct owns.
        unsafe {
            libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, ahead);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

impl Writeback {
    fn start(path: &Path) -> Option<Writeback> {
        let file = std::sync::Arc::new(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .ok()?,
        );
        preallocate(&file);
        let (tx, rx) = std::sync::mpsc::sync_channel::<()>(1);
        let helper = file.clone();
        let thread = std::thread::Builder::new()
            .name("sqlite-writeback".into())
            .spawn(move || loop {
                match rx.recv_timeout(PREALLOCATE_EVERY) {
                    Ok(()) => {
                        preallocate(&helper);
                        // Best effort: a failure here only means the final sync does more.
                        let _ = helper.sync_data();
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => preallocate(&helper),
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                }
            })
            .ok()?;
        Some(Writeback {
            tx: Some(tx),
            thread: Some(thread),
            file,
        })
    }

    /// Asks for a sync unless one is already waiting.
    fn poke(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.try_send(());
        }
    }

    /// Stops the helper and gives back the space reserved past the file's end. Call it
    /// holding the database's write lock, with nothing of SQLite's left to write but the
    /// open transaction: then nobody else can be extending the file (a bulk load uses a
    /// rollback journal, where only the lock holder writes the database file), and
    /// setting the file to its own length only drops the blocks beyond it.
    ///
    /// The file stays open (this struct keeps it) until the sink is dropped, after its
    /// store: closing *any* descriptor of a file drops every POSIX lock the process
    /// holds on it, SQLite's included ("How To Corrupt An SQLite Database File", 2.2).
    /// Closed here, inside the last transaction, it would free the write lock SQLite
    /// believes it holds; closed after the connection, there is no lock left to lose.
    fn finish(&mut self) {
        self.stop();
        if let Ok(len) = self.file.metadata().map(|m| m.len()) {
            let _ = self.file.set_len(len);
        }
    }

    fn stop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Writeback {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Loader {
    /// Opens the database and records the start of a run. A database that does not
    /// exist yet (or is an empty file) is created and bulk-loaded ([`StoreOptions::bulk`]).
    pub fn open(
        path: &Path,
        mut opts: StoreOptions,
        batch_size: usize,
        inputs: &[String],
    ) -> Result<Loader, Error> {
        opts.bulk = std::fs::metadata(path).map_or(true, |m| m.len() == 0);
        let bulk = opts.bulk;
        let (loader, alone) = LoaderLock::acquire(path)?;
        let mut store = SqliteStore::open_with(path, opts).map_err(store_fatal)?;
        let interrupted = if alone && !bulk {
            store.interrupt_stale_runs().map_err(store_fatal)?
        } else {
            0
        };
        let mut sink = Loader::new(store, batch_size, inputs)?;
        sink._loader = Some(loader);
        if interrupted > 0 {
            sink.notices.push(format!(
                "{interrupted} earlier run(s) left `running` in soif_runs by a killed load \
                 marked `interrupted` (its committed batches are kept; load its input again \
                 to complete it)"
            ));
        }
        if bulk {
            sink.writeback = Writeback::start(path);
        }
        Ok(sink)
    }

    /// A sink writing through an open store.
    pub fn new(
        mut store: SqliteStore,
        batch_size: usize,
        inputs: &[String],
    ) -> Result<Loader, Error> {
        let run_id = store.begin_run(inputs).map_err(store_fatal)?;
        let bulk = store.bulk;
        Ok(Loader {
            store,
            run_id,
            batch_size: batch_size.max(1),
            pending: 0,
            pending_bytes: 0,
            counts: RunCounts::default(),
            committed: RunCounts::default(),
            finished: false,
            bulk,
            writeback: None,
            _loader: None,
            notices: Vec::new(),
        })
    }

    /// The store (for tests and for callers that want to query after `finish`).
    pub fn store(&self) -> &SqliteStore {
        &self.store
    }

    /// This run's id in `soif_runs`.
    pub fn run_id(&self) -> i64 {
        self.run_id
    }

    /// The counts so far.
    pub fn counts(&self) -> RunCounts {
        self.counts
    }

    fn commit_batch(&mut self, status: Option<&str>) -> Result<(), Error> {
        if !self.store.in_transaction() {
            self.store.begin().map_err(store_fatal)?;
        }
        self.store
            .update_run(self.run_id, self.counts, status)
            .map_err(store_fatal)?;
        self.store.commit().map_err(store_fatal)?;
        self.pending = 0;
        self.pending_bytes = 0;
        self.committed = self.counts;
        if let Some(w) = &self.writeback {
            w.poke();
        }
        Ok(())
    }
}

impl Drop for Loader {
    /// Dropped without [`Sink::finish`] (the run failed): the open batch is rolled back
    /// and the run marked `failed` with the counts of what was committed. (A killed
    /// process never gets here; its run stays `running` until the next load marks it
    /// `interrupted`, see [`LoaderLock`].)
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let _ = self.store.rollback();
        let _ = self
            .store
            .update_run(self.run_id, self.committed, Some("failed"));
    }
}

/// A record's size for [`MAX_BATCH_BYTES`]: its SOIF bytes as read, or for a record
/// from elsewhere (JSON Lines, a catalog), its values' bytes.
pub(crate) fn record_bytes(record: &Record) -> usize {
    match &record.raw {
        Some(raw) => raw.len(),
        None => record
            .attributes
            .iter()
            .map(|a| a.name.len() + a.value.leaves().iter().map(|b| b.len()).sum::<usize>())
            .sum(),
    }
}

fn store_fatal(e: StoreError) -> Error {
    Error::Fatal(e.to_string())
}

impl Loader {
    /// Warnings for the user since the last call (a killed run marked `interrupted`).
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// Writes one record (an upsert, or a deletion inside `@DELETE { }`), committing the
    /// batch when it is full. A record the store refuses is [`SinkError::Rejected`] and
    /// counted; anything else stops the load.
    pub fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        if !self.store.in_transaction() {
            self.store
                .begin()
                .map_err(|e| SinkError::Fatal(store_fatal(e)))?;
        }
        self.counts.records += 1;
        let result = match record.action {
            Some(Action::Delete) => self
                .store
                .delete_in_run(Some(&record.template), &record.url, Some(self.run_id))
                .map(|_| self.counts.deleted += 1),
            _ => self
                .store
                .upsert(record)
                .map(|()| self.counts.upserted += 1),
        };
        if let Err(e) = result {
            if e.is_record_error() {
                self.counts.rejected += 1;
                return Err(SinkError::Rejected(format!("{}: {e}", record.location())));
            }
            return Err(SinkError::Fatal(Error::Fatal(format!(
                "{}: {e}",
                record.location()
            ))));
        }
        self.pending += 1;
        self.pending_bytes = self.pending_bytes.saturating_add(record_bytes(record));
        if self.pending >= self.batch_size || self.pending_bytes >= MAX_BATCH_BYTES {
            self.commit_batch(None)?;
        }
        Ok(())
    }

    /// Commits what is left and marks the run `ok` (a bulk load: one synced commit, then
    /// WAL mode).
    pub fn finish(&mut self) -> Result<(), Error> {
        if self.bulk {
            // Everything is written; now make it durable with one synced commit (the
            // one that marks the run `ok`), then go over to WAL.
            if self.store.in_transaction() {
                self.commit_batch(None)?;
            }
            self.store.end_bulk().map_err(store_fatal)?;
            // The space reserved ahead is given back inside that last transaction,
            // under the write lock (see `Writeback::finish`).
            self.store.begin().map_err(store_fatal)?;
            if let Some(w) = &mut self.writeback {
                w.finish();
            }
        }
        self.commit_batch(Some("ok"))?;
        if self.bulk {
            self.store.enter_wal().map_err(store_fatal)?;
        }
        self.finished = true;
        Ok(())
    }
}
