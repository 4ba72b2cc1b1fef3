//! One catalog: a SQLite database in the layout of the `sqlite` sink
//! (`docs/sqlite-layout.md`), read for `rd-request` / `rd-request-deleted` and written for
//! submissions.
//!
//! Everything here is blocking (rusqlite); the HTTP handlers call it on blocking threads.
//!
//! # Reading
//!
//! [`Catalog::query`] produces the result set of a request record by record, without
//! holding it: a scan of every template's table for the gatherer scopes `all` and `since
//! DATE`, a full-text search for the keyword language, or `soif_deletions` for
//! `rd-request-deleted`. Each candidate then goes through the view: `View-Order` sorts with
//! the `order` transform (which spills to disk beyond [`ORDER_BUDGET`]), `View-Hits` skips
//! and counts (and ends the scan early when there is no order), `View-Attributes` keeps the
//! named attributes (`URL` keeps the URL, as the `select` transform does). A read runs in
//! one SQLite read transaction, so it sees one consistent snapshot even while a loader or
//! a submission writes.
//!
//! `since DATE` compares the latest of `Last-Modification-Time`, `Last-Modified` and
//! `Update-Time` (Unix seconds or HTTP dates, as Harvest and RDM wrote them) with DATE; a
//! record is returned when it was modified at or after DATE. Records without a readable
//! date are left out. For `rd-request-deleted` the date is the time of the deletion.
//!
//! # The keyword language and its index
//!
//! The note's "toy sample-keyword-ql" is served by SQLite FTS5: the scope is a list of
//! words, every one of which must occur in the record (its URL or any value); `OR` between
//! two words accepts either. Each word is matched as an FTS5 string (prefix-free, case-
//! and diacritic-insensitive `unicode61` tokens), so no input is FTS5 syntax. Hits come in
//! the order of FTS5's `bm25` rank, best first, each with a `Score` attribute: 1000 for the
//! best hit and the others in proportion to their rank (so `View-Order: -Score` is the
//! default order, and `Score` can be selected and sorted like any attribute).
//!
//! The index lives in the same database, in two tables the server owns (the `soif_` prefix
//! keeps them apart from record tables): `soif_fts_keys(id INTEGER PRIMARY KEY, template,
//! url, UNIQUE(template, url))` and the FTS5 table `soif_fts(body)` whose rowid is
//! `soif_fts_keys.id`. Submissions update it in the transaction that writes the records.
//! Loaders (`soif convert --to sqlite`) do not know about it; every loader run is recorded
//! in `soif_runs`, so the server keeps a summary of `soif_runs` as of its last full index
//! build in `soif_meta` (key `fts_runs`) and rebuilds the index before a keyword query when
//! the summary has changed — once the loader's run has finished (see
//! [`Catalog::ensure_index`]), in transactions of [`INDEX_CHUNK`] records so that loaders
//! are not locked out. Runs loaded while the server was down are thus picked up at start
//! (in the background) or by the first keyword query.
//!
//! # Writing
//!
//! [`Catalog::submit`] applies one `rd-response` (upserts) or `rd-response-deleted`
//! (deletions) through [`SqliteStore`] exactly as the `sqlite` sink does — a record
//! replaces its row, a deletion is remembered in `soif_deletions` with its time — in one
//! transaction: a submission is applied whole or not at all.

use crate::error::RequestError;
use rusqlite::{params, OptionalExtension};
use soif_codecs::rdm::{DataType, RdmDate, Schema, SchemaEntry, View};
use soif_codecs::{Action, Record};
use soif_pipeline::transforms::scope::Since;
use soif_pipeline::transforms::view::{Order, Select};
use soif_pipeline::{Emit, Transform};
use soif_store::tables::{key_param, value_bytes as bytes_of};
use soif_store::{fts, runs, SqliteStore, StoreError, TableInfo};

pub use soif_store::fts::INDEX_CHUNK;
pub use soif_store::RunSummary;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

/// Memory a `View-Order` may use per request before it sorts on disk.
pub const ORDER_BUDGET: usize = 16 << 20;

/// SQLite page cache of one read connection, in KiB.
const READER_CACHE_KIB: u32 = 2048;

/// Read connections per catalog, opened at start: at most this many reads of one catalog
/// run at once (more wait for a free connection). Opening a store takes SQLite's write lock
/// (it creates the `soif_*` tables if missing), which a long submission holds; so reads
/// never open connections while serving.
pub const READERS: usize = 16;

/// How long a `running` loader's counts must stand still before the index is rebuilt
/// anyway (see [`Catalog::ensure_index`]).
pub const LOADER_IDLE: std::time::Duration = std::time::Duration::from_secs(60);

/// What a request selects, before the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Gatherer `all`.
    All,
    /// Gatherer `since DATE`, in Unix seconds: modified at or after.
    Since(i64),
    /// The keyword language: the FTS5 query built by [`keyword_query`].
    Keywords(String),
}

/// One read request.
#[derive(Debug, Clone)]
pub struct Query {
    pub scope: Scope,
    /// `rd-request-deleted`: read the remembered deletions instead of the records.
    pub deleted: bool,
    pub view: View,
    /// Most rows a `View-Order` sorts: beyond, the read fails with
    /// [`RequestError::OverLimit`] (before anything of the reply was produced).
    pub max_sorted_rows: u64,
    /// Most hits a keyword query ranks: the best this many are served.
    pub max_keyword_hits: u64,
}

impl Default for Query {
    /// Gatherer `all`, no view, the default limits.
    fn default() -> Query {
        Query::new(Scope::All, false, View::default())
    }
}

impl Query {
    /// A read with the default limits.
    pub fn new(scope: Scope, deleted: bool, view: View) -> Query {
        Query {
            scope,
            deleted,
            view,
            max_sorted_rows: 1_000_000,
            max_keyword_hits: 10_000,
        }
    }
}

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

/// Whether the consumer of [`Catalog::query`] wants more records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// Which kind of submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submission {
    /// `rd-response`: each RD replaces its row (an RD inside `@DELETE { }` deletes).
    Upsert,
    /// `rd-response-deleted`: each RD's row is deleted and the deletion remembered.
    Delete,
}

/// What a submission did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubmitCounts {
    pub upserted: u64,
    pub deleted: u64,
}

/// Turns the keyword scope (`netscape`, `harvest OR gatherer`) into an FTS5 query in which
/// every word is a quoted string, so that nothing a client sends is FTS5 syntax. A scope of
/// more than `max_terms` words (`OR`s included) is [`RequestError::OverLimit`]: FTS5's cost
/// grows faster than the number of `OR`ed words.
pub fn keyword_query(scope: &str, max_terms: usize) -> Result<String, RequestError> {
    let words: Vec<&str> = scope
        .split_whitespace()
        .take(max_terms.saturating_add(1))
        .collect();
    if words.len() > max_terms {
        return Err(RequestError::OverLimit(format!(
            "the keyword scope has more than {max_terms} words (this server's limit)"
        )));
    }
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if *w == "OR" && i > 0 && i + 1 < words.len() && words[i - 1] != "OR" {
            out.push_str(" OR ");
            continue;
        }
        if !out.is_empty() && !out.ends_with(" OR ") {
            out.push(' ');
        }
        out.push('"');
        out.push_str(&w.replace('"', "\"\""));
        out.push('"');
    }
    if out.is_empty() {
        return Err(RequestError::Malformed(
            "the sample-keyword-ql scope has no words (expected e.g. `Scope: netscape`)".into(),
        ));
    }
    Ok(out)
}

/// A catalog: its name (the last part of its `x-catalog://host:port/name`) and database.
pub struct Catalog {
    name: String,
    path: PathBuf,
    /// `None` when the catalog is served read-only.
    writer: Option<Mutex<SqliteStore>>,
    readers: Mutex<Vec<SqliteStore>>,
    reader_freed: Condvar,
    /// A connection of its own for status requests, so that they never wait for the
    /// read connections (which slow or stalled clients may hold).
    status: Mutex<SqliteStore>,
    read_wait: std::time::Duration,
    /// The `soif_runs` summary last seen while a loader was running, and since when.
    loader_seen: Mutex<Option<(String, std::time::Instant)>>,
    /// The key that authenticates OAI-PMH resumption tokens (see [`Catalog::oai_key`]).
    oai_key: [u8; 32],
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
fn is_read_only(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied)
    )
}

fn store_err(e: StoreError) -> RequestError {
    RequestError::Internal(e.to_string())
}

fn sql_err<'a>(path: &'a Path, context: &str) -> impl Fn(rusqlite::Error) -> RequestError + 'a {
    let context = context.to_string();
    move |e| RequestError::Internal(format!("sqlite {}: {context}: {e}", path.display()))
}

/// The `soif_meta` key of the OAI-PMH token key.
const OAI_KEY: &str = "oai_token_key";

fn random_key() -> Result<[u8; 32], RequestError> {
    use ring::rand::SecureRandom;
    let mut key = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut key)
        .map_err(|_| RequestError::Internal("no randomness for the OAI-PMH token key".into()))?;
    Ok(key)
}

/// Reads (or, with the writer, makes and stores) the OAI-PMH token key.
fn oai_key(writer: Option<&SqliteStore>, reader: &SqliteStore) -> Result<[u8; 32], RequestError> {
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
struct Reader<'a> {
    catalog: &'a Catalog,
    store: Option<SqliteStore>,
}

impl Reader<'_> {
    fn store(&self) -> &SqliteStore {
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

/// Sends records through `View-Hits` and `View-Attributes` to the consumer; also the
/// [`Emit`] the `order` transform writes its sorted output into.
struct Tail<'a> {
    skip: u64,
    take: Option<u64>,
    seen: u64,
    select: Option<Select>,
    out: &'a mut dyn FnMut(Record) -> Result<Flow, RequestError>,
    emitted: u64,
    stopped: bool,
    error: Option<RequestError>,
}

impl Tail<'_> {
    fn push(&mut self, record: Record) -> Result<Flow, RequestError> {
        if self.stopped {
            return Ok(Flow::Stop);
        }
        self.seen += 1;
        if self.seen <= self.skip {
            return Ok(Flow::Continue);
        }
        if self.take.is_some_and(|t| self.emitted >= t) {
            self.stopped = true;
            return Ok(Flow::Stop);
        }
        let record = match &self.select {
            Some(s) => s.select(record),
            None => record,
        };
        self.emitted += 1;
        let flow = (self.out)(record)?;
        if flow == Flow::Stop || self.take.is_some_and(|t| self.emitted >= t) {
            self.stopped = true;
            return Ok(Flow::Stop);
        }
        Ok(Flow::Continue)
    }
}

impl Emit for Tail<'_> {
    fn emit(&mut self, record: Record) -> Result<(), soif_pipeline::Error> {
        match self.push(record) {
            Ok(Flow::Continue) => Ok(()),
            // Ends the order transform's merge: nothing more is wanted.
            Ok(Flow::Stop) => Err(soif_pipeline::Error::Fatal("enough hits".into())),
            Err(e) => {
                let message = e.to_string();
                self.error = Some(e);
                Err(soif_pipeline::Error::Fatal(message))
            }
        }
    }
    fn reject(&mut self, _record: Record, _reason: String) -> Result<(), soif_pipeline::Error> {
        Ok(())
    }
    fn warn(&mut self, _message: String) {}
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
    fn open_writer(path: &Path) -> Result<SqliteStore, (RequestError, bool)> {
        let writer = SqliteStore::open(path).map_err(|e| {
            let read_only = matches!(&e, StoreError::Sqlite { source, .. } if is_read_only(source));
            (store_err(e), read_only)
        })?;
        writer
            .connection()
            .execute_batch(&format!("BEGIN IMMEDIATE; {} COMMIT;", fts::CREATE_FTS))
            .map_err(|e| {
                let read_only = is_read_only(&e);
                (
                    sql_err(path, "creating the keyword index tables")(e),
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
    fn reader(&self) -> Result<Reader<'_>, RequestError> {
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

    fn writer(&self) -> Result<std::sync::MutexGuard<'_, SqliteStore>, RequestError> {
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

    fn overview_in(path: &Path, store: &SqliteStore) -> Result<Overview, RequestError> {
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

    /// Rebuilds the keyword index when a loader has written since it was last built.
    ///
    /// While a loader's run is in progress (`soif_runs.status = 'running'`) the current
    /// index is used as it is: rebuilding after every one of its batches would be wasted,
    /// and hits whose rows have changed are read as they are now (rows since deleted are
    /// skipped). The rebuild happens once the run has finished, or once its counts have
    /// not moved for [`LOADER_IDLE`] (a loader that was killed leaves its run `running`).
    pub fn ensure_index(&self) -> Result<(), RequestError> {
        if self.read_only() {
            // Whatever index the database has is used as it is.
            let reader = self.reader()?;
            let has_index = fts::has_index(reader.store().connection())
                .map_err(sql_err(&self.path, "reading sqlite_master"))?;
            if !has_index {
                return Err(RequestError::Unsupported(format!(
                    "catalog {} is served read-only and has no keyword index",
                    self.name
                )));
            }
            return Ok(());
        }
        let (now, running) = {
            let reader = self.reader()?;
            let conn = reader.store().connection();
            let now = runs::runs_summary(conn).map_err(sql_err(&self.path, "reading soif_runs"))?;
            let built =
                fts::indexed_summary(conn).map_err(sql_err(&self.path, "reading soif_meta"))?;
            if built.as_deref() == Some(now.as_str()) {
                return Ok(());
            }
            let running =
                runs::any_running(conn).map_err(sql_err(&self.path, "reading soif_runs"))?;
            (now, running)
        };
        if running && !self.loader_idle(&now) {
            return Ok(());
        }
        let mut writer = self.writer()?;
        let result = self.rebuild_index(&mut writer);
        if result.is_err() && writer.in_transaction() {
            let _ = writer.rollback();
        }
        result
    }

    /// True when the `soif_runs` summary has been `summary` for [`LOADER_IDLE`].
    fn loader_idle(&self, summary: &str) -> bool {
        let Ok(mut seen) = self.loader_seen.lock() else {
            return true;
        };
        match &*seen {
            Some((s, since)) if s == summary => since.elapsed() >= LOADER_IDLE,
            _ => {
                *seen = Some((summary.to_string(), std::time::Instant::now()));
                false
            }
        }
    }

    /// Rebuilds the index in transactions of [`INDEX_CHUNK`] records, so that a loader
    /// waiting for SQLite's write lock gets it between them (it waits 30 s at most). The
    /// summary stored at the end is the one read at the start: whatever a loader writes
    /// meanwhile makes the next keyword query rebuild again. In-process keyword queries
    /// and submissions wait for the whole rebuild (the writer's mutex).
    fn rebuild_index(&self, writer: &mut SqliteStore) -> Result<(), RequestError> {
        fts::rebuild(writer).map_err(store_err)
    }

    /// Runs a read request: every record of the result set, after the view, goes to `out`
    /// (which returns [`Flow::Stop`] when it wants no more, e.g. the client went away).
    /// Returns how many records were passed on.
    pub fn query(
        &self,
        q: &Query,
        out: &mut dyn FnMut(Record) -> Result<Flow, RequestError>,
    ) -> Result<u64, RequestError> {
        if matches!(q.scope, Scope::Keywords(_)) {
            self.ensure_index()?;
        }
        let (skip, take) = match q.view.hits {
            Some(h) => (h.skip(), Some(h.take())),
            None => (0, None),
        };
        let select = q.view.attributes.as_ref().map(|a| {
            let names: Vec<&str> = a.names().iter().map(String::as_str).collect();
            Select::new(&names)
        });
        let mut order = match &q.view.order {
            Some(o) => Some(
                Order::parse(&o.to_string(), &HashMap::new(), ORDER_BUDGET, None)
                    .map_err(|e| RequestError::Malformed(format!("View-Order: {e}")))?,
            ),
            None => None,
        };
        let mut tail = Tail {
            skip,
            take,
            seen: 0,
            select,
            out,
            emitted: 0,
            stopped: take == Some(0),
            error: None,
        };
        let reader = self.reader()?;
        let scan = !(order.is_none() && take == Some(0));
        {
            let mut sorted = 0u64;
            let max_sorted = q.max_sorted_rows;
            let mut feed = |record: Record| -> Result<Flow, RequestError> {
                match &mut order {
                    Some(o) => {
                        sorted += 1;
                        if sorted > max_sorted {
                            return Err(RequestError::OverLimit(format!(
                                "View-Order would sort more than {max_sorted} RDs (this \
                                 server's limit); narrow the scope or leave out View-Order"
                            )));
                        }
                        o.apply(record, &mut tail).map_err(|e| {
                            RequestError::Internal(format!("sorting for View-Order: {e}"))
                        })?;
                        Ok(Flow::Continue)
                    }
                    None => tail.push(record),
                }
            };
            if scan {
                self.candidates(&reader, q, &mut feed)?;
            }
        }
        if let Some(mut o) = order {
            if let Err(e) = o.finish(&mut tail) {
                if let Some(err) = tail.error.take() {
                    return Err(err);
                }
                if !tail.stopped {
                    return Err(RequestError::Internal(format!(
                        "sorting for View-Order: {e}"
                    )));
                }
            }
        }
        Ok(tail.emitted)
    }

    /// Produces the result set before the view.
    fn candidates(
        &self,
        reader: &Reader<'_>,
        q: &Query,
        feed: &mut dyn FnMut(Record) -> Result<Flow, RequestError>,
    ) -> Result<(), RequestError> {
        let store = reader.store();
        let conn = store.connection();
        let err = |c: &str| sql_err(&self.path, c);
        let since = match q.scope {
            Scope::Since(t) => Some(t),
            _ => None,
        };
        if q.deleted {
            if let Scope::Keywords(_) = q.scope {
                return Err(RequestError::Unsupported(
                    "rd-request-deleted takes the gatherer query language (all, since DATE)".into(),
                ));
            }
            let mut st = conn
                .prepare(
                    "SELECT template, url, deleted FROM soif_deletions ORDER BY deleted, rowid",
                )
                .map_err(err("reading soif_deletions"))?;
            let mut rows = st.query([]).map_err(err("reading soif_deletions"))?;
            while let Some(row) = rows.next().map_err(err("reading soif_deletions"))? {
                let template = bytes_of(row.get_ref(0).map_err(err("reading soif_deletions"))?);
                let url = bytes_of(row.get_ref(1).map_err(err("reading soif_deletions"))?);
                let when: String = row.get(2).map_err(err("reading soif_deletions"))?;
                let secs = chrono::DateTime::parse_from_rfc3339(&when)
                    .map(|d| d.timestamp())
                    .map_err(|e| {
                        RequestError::Internal(format!(
                            "soif_deletions holds an unreadable time {when:?}: {e}"
                        ))
                    })?;
                if since.is_some_and(|s| secs < s) {
                    continue;
                }
                let mut record = Record::new(template, url)
                    .with("Last-Modified", RdmDate::from_unix(secs).to_http_string());
                record.action = Some(Action::Delete);
                if feed(record)? == Flow::Stop {
                    break;
                }
            }
            return Ok(());
        }
        match &q.scope {
            Scope::All | Scope::Since(_) => {
                for table in store.tables() {
                    let mut st = conn
                        .prepare(&table.select_sql())
                        .map_err(err(&format!("reading {}", table.table)))?;
                    let mut rows = st
                        .query([])
                        .map_err(err(&format!("reading {}", table.table)))?;
                    while let Some(row) = rows
                        .next()
                        .map_err(err(&format!("reading {}", table.table)))?
                    {
                        let record = table
                            .record_from_row(row)
                            .map_err(err(&format!("reading {}", table.table)))?;
                        if let Some(s) = since {
                            match Since::modified(&record) {
                                Ok(t) if t >= s => {}
                                _ => continue,
                            }
                        }
                        if feed(record)? == Flow::Stop {
                            return Ok(());
                        }
                    }
                }
                Ok(())
            }
            Scope::Keywords(fts) => {
                // Without a View-Order only the first skip + take hits can be returned:
                // FTS5 then ranks with a bounded heap instead of sorting every match.
                // Never more than max_keyword_hits: FTS5 ranks those with a bounded heap.
                let wanted = match (&q.view.order, q.view.hits) {
                    (None, Some(h)) => h.skip().saturating_add(h.take()),
                    _ => u64::MAX,
                };
                let limit = i64::try_from(wanted.min(q.max_keyword_hits)).unwrap_or(i64::MAX);
                let mut st = conn.prepare(fts::SEARCH_SQL).map_err(err("searching"))?;
                let mut rows = st
                    .query(params![fts, limit])
                    .map_err(|e| RequestError::Malformed(format!("keyword query: {e}")))?;
                let mut best: Option<f64> = None;
                while let Some(row) = rows
                    .next()
                    .map_err(|e| RequestError::Malformed(format!("keyword query {fts}: {e}")))?
                {
                    let (template, url, rank) = fts::hit_key(row).map_err(err("searching"))?;
                    // bm25 is negative, more negative is better; the first hit is the best.
                    let strength = -rank;
                    let best = *best.get_or_insert(strength);
                    let score = if best > 0.0 {
                        ((strength / best) * 1000.0).round().clamp(0.0, 1000.0) as i64
                    } else {
                        1000
                    };
                    let Some(table) = store.table(&template) else {
                        continue;
                    };
                    let sql = format!("{} WHERE \"url\" = ?1", table.select_sql());
                    let record = conn
                        .prepare_cached(&sql)
                        .and_then(|mut st| {
                            st.query_row([key_param(&url)], |r| table.record_from_row(r))
                                .optional()
                        })
                        .map_err(err(&format!("reading {}", table.table)))?;
                    // The index may name a row a loader deleted since; it is simply gone.
                    let Some(record) = record else { continue };
                    let record = record.with("Score", score.to_string());
                    if feed(record)? == Flow::Stop {
                        return Ok(());
                    }
                }
                Ok(())
            }
        }
    }

    /// Up to `n` records, for the server description's samples.
    pub fn samples(&self, n: usize) -> Result<Vec<Record>, RequestError> {
        let mut out = Vec::new();
        if n == 0 {
            return Ok(out);
        }
        let q = Query::new(Scope::All, false, View::default());
        self.query(&q, &mut |r| {
            out.push(r);
            Ok(if out.len() >= n {
                Flow::Stop
            } else {
                Flow::Continue
            })
        })?;
        Ok(out)
    }

    /// A schema description of what the catalog holds: one entry per attribute name
    /// (the first table that has it gives its `Table-Name`, `Column-Name` and, when a
    /// schema named one at load time, `Data-Type`).
    pub fn layout_schema(&self, last_modified: RdmDate) -> Result<Schema, RequestError> {
        let mut schema = Schema::new(last_modified);
        schema.name = Some(self.name.clone());
        let mut seen = std::collections::HashSet::new();
        for table in self.tables()? {
            for c in &table.columns {
                let name = String::from_utf8_lossy(&c.attribute).into_owned();
                if !seen.insert(name.to_ascii_lowercase()) {
                    continue;
                }
                let mut entry = SchemaEntry::new(name);
                entry.data_type = c.data_type.as_deref().map(DataType::parse);
                entry.table_name = Some(table.table.clone());
                entry.column_name = Some(c.column.clone());
                schema.entries.push(entry);
            }
        }
        schema.number_of_entries = Some(u32::try_from(schema.entries.len()).unwrap_or(u32::MAX));
        Ok(schema)
    }

    /// Applies one submission in one transaction. `next` yields the RDs as the body is
    /// decoded; `None` means the body ended normally, an error aborts (and nothing of
    /// this submission is written).
    pub fn submit(
        &self,
        kind: Submission,
        next: &mut dyn FnMut() -> Option<Result<Record, RequestError>>,
    ) -> Result<SubmitCounts, RequestError> {
        let mut writer = self.writer()?;
        writer.begin().map_err(store_err)?;
        match self.submit_in_tx(&mut writer, kind, next) {
            Ok(counts) => {
                writer.commit().map_err(store_err)?;
                Ok(counts)
            }
            Err(e) => {
                let _ = writer.rollback();
                Err(e)
            }
        }
    }

    fn submit_in_tx(
        &self,
        writer: &mut SqliteStore,
        kind: Submission,
        next: &mut dyn FnMut() -> Option<Result<Record, RequestError>>,
    ) -> Result<SubmitCounts, RequestError> {
        let mut counts = SubmitCounts::default();
        let mut n = 0u64;
        while let Some(item) = next() {
            let record = item?;
            n += 1;
            let at = || format!("RD {n} ({})", record.url_str());
            let delete = kind == Submission::Delete || record.action == Some(Action::Delete);
            if delete {
                writer
                    .delete(Some(&record.template), &record.url)
                    .map_err(|e| match e {
                        StoreError::Rejected(m) => {
                            RequestError::Malformed(format!("{}: {m}", at()))
                        }
                        other => store_err(other),
                    })?;
                fts::remove(writer.connection(), &record.template, &record.url)
                    .map_err(sql_err(&self.path, "updating the keyword index"))?;
                counts.deleted += 1;
            } else {
                writer.upsert(&record).map_err(|e| {
                    if e.is_record_error() {
                        RequestError::Malformed(format!("{}: {e}", at()))
                    } else {
                        store_err(e)
                    }
                })?;
                let conn = writer.connection();
                fts::remove(conn, &record.template, &record.url)
                    .and_then(|_| fts::insert(conn, &record))
                    .map_err(sql_err(&self.path, "updating the keyword index"))?;
                counts.upserted += 1;
            }
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use soif_codecs::rdm::{ViewAttributes, ViewHits, ViewOrder};

    fn catalog() -> (tempfile::TempDir, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let c = Catalog::open("test", &dir.path().join("c.db")).unwrap();
        (dir, c)
    }

    fn submit(c: &Catalog, kind: Submission, records: Vec<Record>) -> SubmitCounts {
        let mut it = records.into_iter();
        c.submit(kind, &mut || it.next().map(Ok)).unwrap()
    }

    fn run(c: &Catalog, q: &Query) -> Vec<Record> {
        let mut out = Vec::new();
        c.query(q, &mut |r| {
            out.push(r);
            Ok(Flow::Continue)
        })
        .unwrap();
        out
    }

    fn docs() -> Vec<Record> {
        vec![
            Record::new("DOCUMENT", "http://www.netscape.com:80/")
                .with("Title", "Welcome to Netscape!")
                .with("Last-Modified", "Thu, 16 May 1996 11:45:39 GMT"),
            Record::new("DOCUMENT", "http://harvest.cs.colorado.edu/")
                .with("Title", "Harvest: netscape netscape gatherer")
                .with("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
            Record::new("FILE", "http://x/y.txt").with("Last-Modification-Time", "805226393"),
        ]
    }

    #[test]
    fn keyword_queries_quote_every_word() {
        assert_eq!(keyword_query("netscape", 32).unwrap(), "\"netscape\"");
        assert_eq!(keyword_query(" a  OR b ", 32).unwrap(), "\"a\" OR \"b\"");
        assert_eq!(keyword_query("OR a", 32).unwrap(), "\"OR\" \"a\"");
        assert_eq!(
            keyword_query("x\"y NEAR(", 32).unwrap(),
            "\"x\"\"y\" \"NEAR(\""
        );
        assert!(keyword_query("  ", 32).is_err());
    }

    #[test]
    fn gatherer_scopes_views_and_keywords() {
        let (_d, c) = catalog();
        assert_eq!(submit(&c, Submission::Upsert, docs()).upserted, 3);
        let all = Query {
            scope: Scope::All,
            deleted: false,
            view: View::default(),
            ..Query::default()
        };
        assert_eq!(run(&c, &all).len(), 3);
        // since 1995-01-01: the Netscape page (1996) and the FILE (805226393 = 1995-07-06).
        let since = Query {
            scope: Scope::Since(788918400),
            ..all.clone()
        };
        let urls: Vec<String> = run(&c, &since).iter().map(|r| r.url_str().into()).collect();
        assert_eq!(urls, ["http://www.netscape.com:80/", "http://x/y.txt"]);
        // View: title order, first hit only, URL and Title.
        let view = Query {
            view: View {
                attributes: Some(ViewAttributes::parse("URL,Title").unwrap()),
                order: Some(ViewOrder::parse("+Title").unwrap()),
                hits: Some(ViewHits::First(1)),
            },
            ..all.clone()
        };
        let got = run(&c, &view);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].get_str("Title"),
            Some("Harvest: netscape netscape gatherer")
        );
        assert!(got[0].get("Last-Modified").is_none());
        // Keywords: both documents mention netscape; the denser one ranks first.
        let kw = Query {
            scope: Scope::Keywords(keyword_query("netscape", 32).unwrap()),
            ..all.clone()
        };
        let hits = run(&c, &kw);
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].get_str("Score"), Some("1000"));
        let second: i64 = hits[1].get_str("Score").unwrap().parse().unwrap();
        assert!(second <= 1000);
    }

    #[test]
    fn deletions_are_remembered_and_unindexed() {
        let (_d, c) = catalog();
        submit(&c, Submission::Upsert, docs());
        let gone = vec![Record::new("DOCUMENT", "http://www.netscape.com:80/")];
        assert_eq!(submit(&c, Submission::Delete, gone).deleted, 1);
        let deleted = Query {
            scope: Scope::All,
            deleted: true,
            view: View::default(),
            ..Query::default()
        };
        let d = run(&c, &deleted);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].action, Some(Action::Delete));
        assert!(d[0].get_str("Last-Modified").unwrap().ends_with("GMT"));
        let kw = Query {
            scope: Scope::Keywords(keyword_query("welcome", 32).unwrap()),
            deleted: false,
            view: View::default(),
            ..Query::default()
        };
        assert!(run(&c, &kw).is_empty());
    }

    #[test]
    fn a_failed_submission_writes_nothing() {
        let (_d, c) = catalog();
        let mut items = vec![
            Ok(Record::new("DOCUMENT", "http://a/")),
            Err(RequestError::Malformed("bad".into())),
        ]
        .into_iter();
        assert!(c.submit(Submission::Upsert, &mut || items.next()).is_err());
        let mut items = vec![
            Ok(Record::new("DOCUMENT", "http://a/")),
            Ok(Record::new("DOCUMENT", "-")),
        ]
        .into_iter();
        let e = c
            .submit(Submission::Upsert, &mut || items.next())
            .unwrap_err();
        assert!(e.to_string().contains("RD 2"), "{e}");
        let all = Query {
            scope: Scope::All,
            deleted: false,
            view: View::default(),
            ..Query::default()
        };
        assert!(run(&c, &all).is_empty());
    }

    #[test]
    fn the_index_waits_for_a_running_loader_and_is_rebuilt_in_chunks() {
        let (d, c) = catalog();
        let path = d.path().join("c.db");
        let mut sink = soif_store::Loader::open(&path, Default::default(), 500, &[]).unwrap();
        // More than one rebuild chunk, committed in batches while the run is `running`.
        for i in 0..INDEX_CHUNK + 700 {
            sink.write(
                &Record::new("FILE", format!("http://loaded/{i:05}")).with("Title", "okapi"),
            )
            .unwrap();
        }
        let kw = Query {
            scope: Scope::Keywords(keyword_query("okapi", 32).unwrap()),
            deleted: false,
            view: View::default(),
            ..Query::default()
        };
        // While the loader runs, the index is left as it is (and nothing waits for it).
        assert!(run(&c, &kw).is_empty());
        sink.finish().unwrap();
        let hits = run(&c, &kw);
        assert_eq!(hits.len(), INDEX_CHUNK + 700);
        let mut urls: Vec<String> = hits.iter().map(|r| r.url_str().into_owned()).collect();
        urls.sort();
        urls.dedup();
        assert_eq!(urls.len(), INDEX_CHUNK + 700, "each record indexed once");
    }

    #[test]
    fn loader_writes_are_indexed_before_a_keyword_query() {
        let (d, c) = catalog();
        // A loader (the sqlite sink) writes behind the server's back.
        let path = d.path().join("c.db");
        let mut sink = soif_store::Loader::open(&path, Default::default(), 10, &[]).unwrap();
        sink.write(&Record::new("FILE", "http://loaded/").with("Title", "zebra"))
            .unwrap();
        sink.finish().unwrap();
        let kw = Query {
            scope: Scope::Keywords(keyword_query("zebra", 32).unwrap()),
            deleted: false,
            view: View::default(),
            ..Query::default()
        };
        assert_eq!(run(&c, &kw).len(), 1);
    }
}
