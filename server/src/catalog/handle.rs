//! A catalog's handle: its database's connections (one writer, a pool of readers, one
//! for status requests), how it is opened (read-only when it must be), the key of its
//! OAI-PMH resumption tokens, and its overview.

use crate::error::RequestError;
use rusqlite::OptionalExtension;
use soif_store::{facets, fts, runs, RunSummary, SqliteStore, StoreError, TableInfo};

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

/// SQLite page cache of one read connection, in KiB.
pub(crate) const READER_CACHE_KIB: u32 = 2048;

/// Read connections per catalog, opened at start: at most this many reads of one catalog
/// run at once (more wait for a free connection). Opening a store takes SQLite's write lock
/// (it creates the `soif_*` tables if missing), which a long submission holds; so reads
/// never open connections while serving.
pub const READERS: usize = 16;

/// How a catalog is opened ([`Catalog::open_with`]).
#[derive(Debug, Clone)]
pub struct CatalogOptions {
    /// Serve it read-only (also chosen by itself when the database cannot be written).
    pub read_only: bool,
    /// How long a read waits for a free read connection before [`RequestError::Busy`].
    pub read_wait: std::time::Duration,
}

impl Default for CatalogOptions {
    fn default() -> Self {
        CatalogOptions {
            read_only: false,
            read_wait: std::time::Duration::from_secs(5),
        }
    }
}

/// A catalog: its name (the last part of its `x-catalog://host:port/name`) and database.
pub struct Catalog {
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    /// `None` when the catalog is served read-only.
    pub(crate) writer: Option<Mutex<SqliteStore>>,
    pub(crate) readers: Mutex<Vec<SqliteStore>>,
    pub(crate) reader_freed: Condvar,
    /// A connection of its own for status requests, so that they never wait for the
    /// read connections (which slow or stalled clients may hold).
    pub(crate) status: Mutex<SqliteStore>,
    pub(crate) read_wait: std::time::Duration,
    /// The `soif_runs` summary last seen while a loader was running, and since when.
    pub(crate) loader_seen: Mutex<Option<(String, std::time::Instant)>>,
    /// The key that authenticates OAI-PMH resumption tokens (see [`Catalog::oai_key`]).
    pub(crate) oai_key: [u8; 32],
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("name", &self.name)
            .field("path", &self.path)
            .finish()
    }
}

/// Whether a write failed because the database cannot be written (a read-only file,
/// directory or file system), not because it is broken.
pub(crate) fn is_read_only(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied)
    )
}

pub(crate) fn store_err(e: StoreError) -> RequestError {
    RequestError::Internal(e.to_string())
}

pub(crate) fn sql_err<'a>(
    path: &'a Path,
    context: &str,
) -> impl Fn(rusqlite::Error) -> RequestError + 'a {
    let context = context.to_string();
    move |e| RequestError::Internal(format!("sqlite {}: {context}: {e}", path.display()))
}

/// The `soif_meta` key of the OAI-PMH token key.
pub(crate) const OAI_KEY: &str = "oai_token_key";

pub(crate) fn random_key() -> Result<[u8; 32], RequestError> {
    use ring::rand::SecureRandom;
    let mut key = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut key)
        .map_err(|_| RequestError::Internal("no randomness for the OAI-PMH token key".into()))?;
    Ok(key)
}

/// Reads (or, with the writer, makes and stores) the OAI-PMH token key.
pub(crate) fn oai_key(
    writer: Option<&SqliteStore>,
    reader: &SqliteStore,
) -> Result<[u8; 32], RequestError> {
    let read = |store: &SqliteStore| -> Result<Option<[u8; 32]>, RequestError> {
        let hex: Option<String> = store
            .connection()
            .query_row(
                "SELECT value FROM soif_meta WHERE key = ?1",
                [OAI_KEY],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| RequestError::Internal(format!("reading soif_meta: {e}")))?;
        Ok(hex.and_then(|h| {
            let mut key = [0u8; 32];
            if h.len() != 64 {
                return None;
            }
            for (i, k) in key.iter_mut().enumerate() {
                *k = u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok()?;
            }
            Some(key)
        }))
    };
    if let Some(k) = read(reader)? {
        return Ok(k);
    }
    let key = random_key()?;
    if let Some(w) = writer {
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        // INSERT OR IGNORE: another server opening the catalog at once keeps its key,
        // and both read the one stored.
        w.connection()
            .execute(
                "INSERT OR IGNORE INTO soif_meta (key, value) VALUES (?1, ?2)",
                [OAI_KEY, hex.as_str()],
            )
            .map_err(|e| RequestError::Internal(format!("writing soif_meta: {e}")))?;
        if let Some(k) = read(w)? {
            return Ok(k);
        }
    }
    Ok(key)
}

/// A catalog's tables with their row counts, and its latest load ([`Catalog::overview`]).
#[derive(Debug, Clone)]
pub struct Overview {
    pub tables: Vec<(TableInfo, u64)>,
    pub last_run: Option<RunSummary>,
}

/// A read connection borrowed from the pool, in a read transaction; returned on drop.
pub(crate) struct Reader<'a> {
    pub(crate) catalog: &'a Catalog,
    pub(crate) store: Option<SqliteStore>,
}

impl Reader<'_> {
    pub(crate) fn store(&self) -> &SqliteStore {
        // Only `drop` takes the store out.
        self.store
            .as_ref()
            .expect("reader store present until drop")
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(store) = self.store.take() {
            // Ends the snapshot; a failing COMMIT of a read transaction leaves nothing to undo.
            if !store.connection().is_autocommit() {
                let _ = store.connection().execute_batch("COMMIT");
            }
            if let Ok(mut idle) = self.catalog.readers.lock() {
                idle.push(store);
                self.catalog.reader_freed.notify_one();
            }
        }
    }
}

impl Catalog {
    /// Opens (or creates) the catalog's database, its [`READERS`] read connections and the
    /// keyword index's tables. The index is brought up to date by [`Catalog::ensure_index`]
    /// (the server starts that in the background, and every keyword query calls it).
    pub fn open(name: &str, path: &Path) -> Result<Catalog, RequestError> {
        Catalog::open_with(name, path, &CatalogOptions::default())
    }

    /// [`Catalog::open`] with options. A database that cannot be opened for writing (a
    /// read-only file, directory or file system) is opened read-only: served for reads,
    /// submissions refused with [`RequestError::ReadOnly`].
    pub fn open_with(
        name: &str,
        path: &Path,
        opts: &CatalogOptions,
    ) -> Result<Catalog, RequestError> {
        let writer = if opts.read_only {
            None
        } else {
            match Catalog::open_writer(path) {
                Ok(w) => Some(w),
                // `soif serve` says which catalogs are served read-only.
                Err((_, read_only)) if read_only && path.exists() => None,
                Err((e, _)) => return Err(e),
            }
        };
        let read_only = writer.is_none();
        let open_reader = || -> Result<SqliteStore, RequestError> {
            let s = if read_only {
                SqliteStore::open_read_only(path).map_err(store_err)?
            } else {
                SqliteStore::open(path).map_err(store_err)?
            };
            // Reads stream through the tables once: a small page cache per reader keeps
            // memory at READERS × READER_CACHE_KIB, whatever the catalog's size (the
            // store's default is sized for bulk loading).
            s.connection()
                .execute_batch(&format!("PRAGMA cache_size = -{READER_CACHE_KIB};"))
                .map_err(sql_err(path, "setting the reader's cache size"))?;
            Ok(s)
        };
        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            readers.push(open_reader()?);
        }
        let status = open_reader()?;
        let oai_key = oai_key(writer.as_ref(), &status)?;
        Ok(Catalog {
            name: name.to_string(),
            path: path.to_path_buf(),
            writer: writer.map(Mutex::new),
            readers: Mutex::new(readers),
            reader_freed: Condvar::new(),
            status: Mutex::new(status),
            read_wait: opts.read_wait,
            loader_seen: Mutex::new(None),
            oai_key,
        })
    }

    /// The key of this catalog's OAI-PMH resumption tokens: 32 random bytes kept in
    /// `soif_meta` (key `oai_token_key`, hex), made the first time the server opens the
    /// catalog for writing, so that tokens outlive a restart. A read-only catalog
    /// without one gets a key for this process only (its tokens end with it).
    pub fn oai_key(&self) -> [u8; 32] {
        self.oai_key
    }

    /// Runs `f` on one of the read connections, in a read transaction (one snapshot),
    /// waiting for a free connection at most [`CatalogOptions::read_wait`].
    pub fn read<T>(&self, f: impl FnOnce(&SqliteStore) -> T) -> Result<T, RequestError> {
        let reader = self.reader()?;
        Ok(f(reader.store()))
    }

    /// The writer; on failure, also whether the database is just not writable.
    pub(crate) fn open_writer(path: &Path) -> Result<SqliteStore, (RequestError, bool)> {
        let writer = SqliteStore::open(path).map_err(|e| {
            let read_only = matches!(&e, StoreError::Sqlite { source, .. } if is_read_only(source));
            (store_err(e), read_only)
        })?;
        writer
            .connection()
            .execute_batch(&format!(
                "BEGIN IMMEDIATE; {} {} COMMIT;",
                fts::CREATE_FTS,
                facets::CREATE_FACETS
            ))
            .map_err(|e| {
                let read_only = is_read_only(&e);
                (
                    sql_err(path, "creating the keyword index and facet tables")(e),
                    read_only,
                )
            })?;
        Ok(writer)
    }

    /// Whether the catalog is served read-only (no submissions, no keyword index upkeep).
    pub fn read_only(&self) -> bool {
        self.writer.is_none()
    }

    /// The catalog's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The database path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Borrows a read connection, waiting while all [`READERS`] are in use — at most
    /// [`CatalogOptions::read_wait`], then [`RequestError::Busy`].
    pub(crate) fn reader(&self) -> Result<Reader<'_>, RequestError> {
        let poisoned = || RequestError::Internal("the catalog's reader pool failed earlier".into());
        let deadline = std::time::Instant::now() + self.read_wait;
        let mut idle = self.readers.lock().map_err(|_| poisoned())?;
        let mut store = loop {
            if let Some(s) = idle.pop() {
                break s;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(RequestError::Busy(format!(
                    "all {READERS} read connections of catalog {} are busy; retry later",
                    self.name
                )));
            }
            idle = self
                .reader_freed
                .wait_timeout(idle, left)
                .map_err(|_| poisoned())?
                .0;
        };
        drop(idle);
        let begun = store.refresh().map_err(store_err).and_then(|_| {
            store
                .connection()
                .execute_batch("BEGIN")
                .map_err(sql_err(&self.path, "BEGIN"))
        });
        // Built before checking `begun`, so that the connection goes back to the pool.
        let reader = Reader {
            catalog: self,
            store: Some(store),
        };
        begun.map(|_| reader)
    }

    pub(crate) fn writer(&self) -> Result<std::sync::MutexGuard<'_, SqliteStore>, RequestError> {
        self.writer
            .as_ref()
            .ok_or_else(|| RequestError::ReadOnly(self.name.clone()))?
            .lock()
            .map_err(|_| RequestError::Internal("the catalog writer failed earlier".into()))
    }

    /// The templates with a table, and their tables, in table-name order.
    pub fn tables(&self) -> Result<Vec<TableInfo>, RequestError> {
        Ok(self.reader()?.store().tables())
    }

    /// What the status document shows of this catalog, read in one transaction: each
    /// table with its row count, and the latest load (`soif_runs`).
    ///
    /// The counts are `count(*)`, a scan of each table's smallest index: exact, at the
    /// cost of reading that index (milliseconds for a million rows); status requests are
    /// rare enough for that.
    pub fn overview(&self) -> Result<Overview, RequestError> {
        // Its own connection, not one of the pool: a status request never waits for reads.
        let mut store = self
            .status
            .lock()
            .map_err(|_| RequestError::Internal("the status connection failed earlier".into()))?;
        store.refresh().map_err(store_err)?;
        let conn = store.connection();
        conn.execute_batch("BEGIN")
            .map_err(sql_err(&self.path, "BEGIN"))?;
        let result = Catalog::overview_in(&self.path, &store);
        let _ = conn.execute_batch("COMMIT");
        result
    }

    pub(crate) fn overview_in(path: &Path, store: &SqliteStore) -> Result<Overview, RequestError> {
        let conn = store.connection();
        let mut tables = Vec::new();
        for t in store.tables() {
            let sql = format!("SELECT count(*) FROM {}", soif_store::quote_ident(&t.table));
            let rows: i64 = conn
                .query_row(&sql, [], |r| r.get(0))
                .map_err(sql_err(path, "counting rows"))?;
            tables.push((t, rows.max(0) as u64));
        }
        let last_run = runs::latest_run(conn).map_err(sql_err(path, "reading soif_runs"))?;
        Ok(Overview { tables, last_run })
    }
}
