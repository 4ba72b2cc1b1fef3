//! [`SqliteStore`]: one connection to a catalog, with the map of its templates and
//! columns kept in step with other connections (a loader, the server), transactions, and
//! the creation of tables and columns as records need them.

use crate::schema::{sql_type_for, SchemaColumns};
use crate::table_cache::{Scratch, Table};
use crate::tables::{
    ident_text, key_param, now, quote_ident, unique_name, upgrade, value_bytes, ColumnInfo,
    FastMap, TableInfo, CREATED_COLUMN, CREATE_META, DATESTAMP_COLUMN, MAX_COLUMNS, MAX_TABLES,
    SQLITE_MAX_COLUMN, TABLES_VERSION,
};
use crate::upsert_stmt;
use bytes::Bytes;
use rusqlite::{params, Connection, ErrorCode, OptionalExtension};
use soif_codecs::rules::text::Charset;
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite said no.
    #[error("sqlite {path}: {context}: {source}")]
    Sqlite {
        path: String,
        context: String,
        #[source]
        source: rusqlite::Error,
    },
    /// This record cannot be stored (no URL, too many columns, …); the store is fine.
    #[error("{0}")]
    Rejected(String),
    /// SQLite rolled the open transaction back on its own (disk full, I/O error): the
    /// writes since `BEGIN` are gone.
    #[error("sqlite {path}: the transaction was rolled back by SQLite before COMMIT")]
    RolledBack { path: String },
    /// The database holds tables of a version this soif does not know.
    #[error("sqlite {path}: {message}")]
    Version { path: String, message: String },
}

impl StoreError {
    /// True when only this record failed and the store can go on.
    pub fn is_record_error(&self) -> bool {
        match self {
            StoreError::Rejected(_) => true,
            StoreError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(ErrorCode::ConstraintViolation | ErrorCode::TooBig | ErrorCode::TypeMismatch)
            ),
            StoreError::Version { .. } | StoreError::RolledBack { .. } => false,
        }
    }
}

/// Options for [`SqliteStore::open_with`].
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// An RDM schema: column types (`Data-Type`) and names (`Table-Name`, `Column-Name`).
    pub schema: Option<SchemaColumns>,
    /// How values that are not UTF-8 are stored: BLOBs ([`Charset::Utf8`]) or Latin-1 text.
    pub charset: Charset,
    /// Load a database nobody else has open yet, fast (see "Loading a new database" in
    /// the module doc): a rollback journal and no syncs until the sink's last commit.
    /// [`SqliteSink::open`] sets it when it creates the database file.
    pub bulk: bool,
}

/// of templates and columns.
pub struct SqliteStore {
    /// The replacing upsert last used. Declared before `conn`: it must be finalized
    /// before the connection closes (see [`upsert_stmt`]).
    pub(crate) upsert: Option<upsert_stmt::UpsertStmt>,
    pub(crate) conn: Connection,
    pub(crate) path: String,
    pub(crate) tables: FastMap<Bytes, Table>,
    /// Table names in lower case (every table in the database), for collision checks.
    pub(crate) used_tables: HashSet<String>,
    pub(crate) schema: Option<SchemaColumns>,
    pub(crate) charset: Charset,
    /// Whether `soif_deletions` may hold rows (if not, upserts skip clearing it).
    pub(crate) deletions_exist: bool,
    /// `PRAGMA schema_version` as of the last layout read or own commit: when another
    /// process (a loader, the server) adds tables or columns, it changes, and the map is
    /// read again.
    pub(crate) schema_version: i64,
    pub(crate) scratch: Scratch,
    /// Opened with [`StoreOptions::bulk`].
    pub(crate) bulk: bool,
    /// `soif_meta.layout_version` as of the last layout read.
    pub(crate) tables_version: i64,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("tables", &self.tables.len())
            .finish()
    }
}

impl SqliteStore {
    /// Opens (or creates) the database at `path` with default options.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        SqliteStore::open_with(path, StoreOptions::default())
    }

    /// Opens (or creates) the database at `path`.
    pub fn open_with(path: &Path, opts: StoreOptions) -> Result<SqliteStore, StoreError> {
        let name = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| StoreError::Sqlite {
            path: name.clone(),
            context: "cannot open".into(),
            source,
        })?;
        SqliteStore::init(conn, name, opts)
    }

    /// Opens an existing database for reading only: nothing is created or changed, so it
    /// works on a read-only file, directory or file system (a WAL database whose `-shm`
    /// file cannot be created is opened `immutable`). Writes fail with SQLite's
    /// `SQLITE_READONLY`. (The RDM server serves such catalogs read-only.)
    pub fn open_read_only(path: &Path) -> Result<SqliteStore, StoreError> {
        use rusqlite::OpenFlags;
        let name = path.display().to_string();
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let open = |immutable: bool| -> rusqlite::Result<Connection> {
            let conn = if immutable {
                let mut uri = String::from("file:");
                for &b in path.to_string_lossy().as_bytes() {
                    if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
                        uri.push(char::from(b));
                    } else {
                        uri.push_str(&format!("%{b:02X}"));
                    }
                }
                uri.push_str("?immutable=1");
                Connection::open_with_flags(uri, flags)?
            } else {
                Connection::open_with_flags(path, flags)?
            };
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })?;
            Ok(conn)
        };
        let conn = open(false)
            .or_else(|_| open(true))
            .map_err(|source| StoreError::Sqlite {
                path: name.clone(),
                context: "cannot open read-only".into(),
                source,
            })?;
        let mut store = SqliteStore::new(conn, name, StoreOptions::default());
        store
            .conn
            .busy_timeout(Duration::from_secs(30))
            .map_err(|e| store.err("setting busy timeout", e))?;
        store.reload()?;
        Ok(store)
    }

    /// The store's state over an open connection, before its layout is read.
    fn new(conn: Connection, path: String, opts: StoreOptions) -> SqliteStore {
        SqliteStore {
            upsert: None,
            conn,
            path,
            tables: FastMap::default(),
            used_tables: HashSet::new(),
            schema: opts.schema,
            charset: opts.charset,
            deletions_exist: true,
            schema_version: 0,
            scratch: Scratch::default(),
            bulk: opts.bulk,
            tables_version: TABLES_VERSION,
        }
    }

    /// A store in memory (tests, scratch work).
    pub fn open_in_memory(opts: StoreOptions) -> Result<SqliteStore, StoreError> {
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Sqlite {
            path: ":memory:".into(),
            context: "cannot open".into(),
            source,
        })?;
        SqliteStore::init(conn, ":memory:".into(), opts)
    }

    pub(crate) fn init(
        conn: Connection,
        path: String,
        opts: StoreOptions,
    ) -> Result<SqliteStore, StoreError> {
        let mut store = SqliteStore::new(conn, path, opts);
        // Another writer (the server) may hold the lock for a moment.
        store
            .conn
            .busy_timeout(Duration::from_secs(30))
            .map_err(|e| store.err("setting busy timeout", e))?;
        // 16 KiB pages for a new database (an existing one keeps its page size: it cannot
        // change once in WAL mode). Harvest records are kilobytes, a Full-Text tens of
        // them: larger pages mean a quarter of the WAL frames, overflow pages and write
        // calls of 4 KiB pages, which made bulk loads about a third faster for about 6 %
        // more file (see docs/sqlite-layout.md, Speed).
        //
        // WAL: readers (the server) do not block the loader, and a killed writer leaves
        // only committed transactions. `synchronous = NORMAL` syncs the WAL only at
        // checkpoints, not at every commit: a commit survives the process being killed,
        // but on power loss or an OS crash the last commits before it may be lost (the
        // database stays consistent either way). A 16 MiB page cache (default 2 MiB)
        // keeps more of the url index in memory during big loads.
        //
        // A bulk load into a new database uses a rollback journal and no syncs instead:
        // see "Loading a new database" in the module doc.
        let (journal, sync) = if store.bulk {
            ("TRUNCATE", "OFF")
        } else {
            ("WAL", "NORMAL")
        };
        store
            .conn
            .execute_batch("PRAGMA page_size = 16384; PRAGMA cache_size = -16384;")
            .map_err(|e| store.err("reading the database header (page size)", e))?;
        match store
            .conn
            .execute_batch(&format!("PRAGMA journal_mode = {journal};"))
        {
            Ok(()) => {}
            // Another process is bulk-loading this new database (its rollback journal
            // holds the lock, and switching to WAL needs the database to itself): work
            // in its journal mode; it switches the database to WAL when its load ends,
            // and this connection follows by itself. (The server opening a catalog that
            // a first `soif convert --to sqlite` is still filling.)
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) && !store.bulk => {}
            Err(e) => return Err(store.err("setting journal mode", e)),
        }
        store
            .conn
            .execute_batch(&format!("PRAGMA synchronous = {sync};"))
            .map_err(|e| store.err("setting synchronous", e))?;
        store
            .conn
            .execute_batch(&format!("BEGIN IMMEDIATE; {CREATE_META} COMMIT;"))
            .map_err(|e| store.err("creating the soif_* tables", e))?;
        // Checkpoint every 16 MiB of WAL (SQLite's default is 1000 pages, 4 MiB of 4 KiB
        // pages): fewer checkpoints and fsyncs, and a WAL bounded whatever the page size.
        let page_size: i64 = store
            .conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .map_err(|e| store.err("reading the page size", e))?;
        store
            .conn
            .execute_batch(&format!(
                "PRAGMA wal_autocheckpoint = {};",
                (16 << 20) / page_size.max(512)
            ))
            .map_err(|e| store.err("setting the checkpoint interval", e))?;
        // Statements are cached per table and column set (see `Table`); the default
        // cache of 16 would evict them with a few templates.
        store.conn.set_prepared_statement_cache_capacity(256);
        let version: Option<String> = store
            .conn
            .query_row(
                "SELECT value FROM soif_meta WHERE key = 'layout_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| store.err("reading soif_meta", e))?;
        match version.as_deref() {
            Some(v) if v == TABLES_VERSION.to_string() => {}
            // Databases written by earlier versions are upgraded in place, in one
            // transaction (see `tables::upgrade`).
            Some(v @ ("1" | "2")) => {
                let from: i64 = if v == "1" { 1 } else { 2 };
                let context = format!("upgrading the layout to version {TABLES_VERSION}");
                store
                    .conn
                    .execute_batch("BEGIN IMMEDIATE")
                    .map_err(|e| store.err("BEGIN", e))?;
                match upgrade(&store.conn, from) {
                    Ok(()) => store
                        .conn
                        .execute_batch("COMMIT")
                        .map_err(|e| store.err(&context, e))?,
                    Err(e) => {
                        let _ = store.conn.execute_batch("ROLLBACK");
                        return Err(store.err(&context, e));
                    }
                }
            }
            other => {
                return Err(StoreError::Version {
                    path: store.path.clone(),
                    message: format!(
                        "layout_version {} is not supported (this soif writes version {TABLES_VERSION})",
                        other.unwrap_or("(none)")
                    ),
                })
            }
        }
        store.reload()?;
        Ok(store)
    }

    pub fn err(&self, context: &str, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            context: context.to_string(),
            source,
        }
    }

    /// Re-reads the template and column map from the database (after a rollback, or when
    /// another process may have added tables).
    pub fn reload(&mut self) -> Result<(), StoreError> {
        let (tables, used, deletions) = self
            .read_tables()
            .map_err(|e| self.err("reading the layout tables", e))?;
        self.tables = tables;
        self.used_tables = used;
        self.deletions_exist = deletions;
        self.schema_version = self.read_schema_version()?;
        self.tables_version = self
            .conn
            .query_row(
                "SELECT value FROM soif_meta WHERE key = 'layout_version'",
                [],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map_err(|e| self.err("reading soif_meta", e))?
            .and_then(|v| v.parse().ok())
            .unwrap_or(TABLES_VERSION);
        Ok(())
    }

    pub(crate) fn read_schema_version(&self) -> Result<i64, StoreError> {
        self.conn
            .query_row("PRAGMA schema_version", [], |r| r.get(0))
            .map_err(|e| self.err("reading the schema version", e))
    }

    /// Re-reads the layout if another connection changed it (new tables or columns) since
    /// this store last looked; returns whether it did. Writes do this by themselves at
    /// [`SqliteStore::begin`]; readers (the server) call it before listing tables.
    pub fn refresh(&mut self) -> Result<bool, StoreError> {
        if self.read_schema_version()? == self.schema_version {
            return Ok(false);
        }
        self.reload()?;
        Ok(true)
    }

    #[allow(clippy::type_complexity)]
    pub(crate) fn read_tables(
        &self,
    ) -> rusqlite::Result<(FastMap<Bytes, Table>, HashSet<String>, bool)> {
        let mut used = HashSet::new();
        let mut st = self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")?;
        for name in st.query_map([], |r| r.get::<_, String>(0))? {
            used.insert(name?.to_ascii_lowercase());
        }
        let mut infos: Vec<TableInfo> = Vec::new();
        let mut st = self
            .conn
            .prepare("SELECT template, table_name FROM soif_tables ORDER BY rowid")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            infos.push(TableInfo {
                template: value_bytes(r.get_ref(0)?),
                table: r.get(1)?,
                columns: Vec::new(),
            });
        }
        let mut st = self.conn.prepare(
            "SELECT attribute, column_name, sql_type, data_type, json FROM soif_columns
             WHERE table_name = ?1 ORDER BY position",
        )?;
        for info in &mut infos {
            let mut rows = st.query([&info.table])?;
            while let Some(r) = rows.next()? {
                info.columns.push(ColumnInfo {
                    attribute: value_bytes(r.get_ref(0)?),
                    column: r.get(1)?,
                    sql_type: r.get(2)?,
                    data_type: r.get(3)?,
                    json: r.get(4)?,
                });
            }
        }
        let deletions: bool =
            self.conn
                .query_row("SELECT EXISTS (SELECT 1 FROM soif_deletions)", [], |r| {
                    r.get(0)
                })?;
        let tables = infos
            .into_iter()
            .map(|i| (i.template.clone(), Table::new(i)))
            .collect();
        Ok((tables, used, deletions))
    }

    /// The database connection, for queries (the RDM server) and tests.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The database's layout version (older ones are upgraded when opened for writing;
    /// one opened read-only keeps its own).
    pub fn tables_version(&self) -> i64 {
        self.tables_version
    }

    /// The path given to [`SqliteStore::open`].
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Every template's table, sorted by table name.
    pub fn tables(&self) -> Vec<TableInfo> {
        let mut v: Vec<&Table> = self.tables.values().collect();
        v.sort_by(|a, b| a.info.table.cmp(&b.info.table));
        v.into_iter().map(|t| t.info.clone()).collect()
    }

    /// The table of one template, if it has one.
    pub fn table(&self, template: &[u8]) -> Option<&TableInfo> {
        self.tables.get(template).map(|t| &t.info)
    }

    /// True while a transaction opened by [`SqliteStore::begin`] is open.
    pub fn in_transaction(&self) -> bool {
        !self.conn.is_autocommit()
    }

    /// Opens a write transaction; until [`SqliteStore::commit`], writes are not visible
    /// to others and a crash discards them all.
    pub fn begin(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.err("BEGIN", e))?;
        // Holding the write lock now, so the layout cannot change under us until COMMIT;
        // pick up what other writers added since our last transaction.
        if let Err(e) = self.refresh() {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(e);
        }
        Ok(())
    }

    /// Ends a bulk load ([`StoreOptions::bulk`]): from the next commit on, commits are
    /// synced (the first one makes everything loaded so far durable). Call it outside a
    /// transaction, then commit, then [`SqliteStore::enter_wal`].
    pub(crate) fn end_bulk(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("PRAGMA synchronous = FULL;")
            .map_err(|e| self.err("ending the bulk load", e))
    }

    /// After the durable commit that follows [`SqliteStore::end_bulk`]: WAL mode, as
    /// every other soif database is, so the server can read it while loaders write.
    pub(crate) fn enter_wal(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
            .map_err(|e| self.err("setting journal mode", e))
    }

    /// Commits the open transaction.
    pub fn commit(&mut self) -> Result<(), StoreError> {
        if self.conn.is_autocommit() {
            // SQLite rolled the transaction back on its own (disk full, I/O error): what
            // this batch wrote is gone, so say so rather than pretend it committed.
            self.reload()?;
            return Err(StoreError::RolledBack {
                path: self.path.clone(),
            });
        }
        // Our own DDL in this transaction is already in the map.
        let version = self.read_schema_version()?;
        self.conn
            .execute_batch("COMMIT")
            .map_err(|e| self.err("COMMIT", e))?;
        self.schema_version = version;
        Ok(())
    }

    /// Rolls the open transaction back (and re-reads the column map, which may have
    /// gained columns inside it).
    pub fn rollback(&mut self) -> Result<(), StoreError> {
        if !self.conn.is_autocommit() {
            self.conn
                .execute_batch("ROLLBACK")
                .map_err(|e| self.err("ROLLBACK", e))?;
        }
        self.reload()
    }

    /// Runs `f` in the open transaction, or in one of its own.
    pub(crate) fn in_write<T>(
        &mut self,
        f: impl FnOnce(&mut SqliteStore) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.in_transaction() {
            return f(self);
        }
        self.begin()?;
        match f(self) {
            Ok(v) => {
                self.commit()?;
                Ok(v)
            }
            Err(e) => {
                // The record's error is what matters; a failing rollback reloads anyway.
                let _ = self.rollback();
                Err(e)
            }
        }
    }

    /// Runs DDL and layout bookkeeping atomically inside the current transaction.
    pub(crate) fn savepoint<T>(
        &mut self,
        context: &str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.conn
            .execute_batch("SAVEPOINT soif_layout")
            .map_err(|e| self.err(context, e))?;
        match f(&self.conn) {
            Ok(v) => {
                self.conn
                    .execute_batch("RELEASE soif_layout")
                    .map_err(|e| self.err(context, e))?;
                Ok(v)
            }
            Err(e) => {
                let _ = self
                    .conn
                    .execute_batch("ROLLBACK TO soif_layout; RELEASE soif_layout");
                Err(self.err(context, e))
            }
        }
    }

    /// Creates the table for `template` if there is none.
    pub(crate) fn ensure_table(&mut self, template: &Bytes) -> Result<(), StoreError> {
        if self.tables.contains_key(template) {
            return Ok(());
        }
        if self.tables.len() >= MAX_TABLES {
            return Err(StoreError::Rejected(format!(
                "template {}: the store already has {MAX_TABLES} tables",
                String::from_utf8_lossy(template)
            )));
        }
        let base = match self
            .schema
            .as_ref()
            .and_then(|s| s.table_name_for(template))
        {
            Some(n) => ident_text(n.as_bytes()),
            None => ident_text(template),
        };
        let lower = base.to_ascii_lowercase();
        let base = if lower.starts_with("sqlite_") || lower.starts_with("soif_") {
            format!("t_{base}")
        } else {
            base
        };
        let name = unique_name(&base, &self.used_tables);
        let sql = format!(
            "CREATE TABLE {} (\"url\" TEXT PRIMARY KEY, {} TEXT, {} TEXT)",
            quote_ident(&name),
            quote_ident(DATESTAMP_COLUMN),
            quote_ident(CREATED_COLUMN)
        );
        let context = format!("creating table {name}");
        self.savepoint(&context, |c| {
            c.execute_batch(&sql)?;
            c.execute(
                "INSERT INTO soif_tables (template, table_name, created) VALUES (?1, ?2, ?3)",
                params![key_param(template), name, now()],
            )
        })?;
        self.used_tables.insert(name.to_ascii_lowercase());
        let info = TableInfo {
            template: template.clone(),
            table: name,
            columns: Vec::new(),
        };
        self.tables.insert(template.clone(), Table::new(info));
        Ok(())
    }

    /// Adds columns for `names` (attributes the table does not have yet, in order).
    pub(crate) fn add_columns(
        &mut self,
        template: &Bytes,
        names: &[Bytes],
    ) -> Result<(), StoreError> {
        let Some(table) = self.tables.get(template) else {
            return Ok(());
        };
        if table.info.columns.len() + names.len() > MAX_COLUMNS {
            return Err(StoreError::Rejected(format!(
                "table {} would need {} columns for attribute {}; SQLite allows {}",
                table.info.table,
                table.info.columns.len() + names.len() + SQLITE_MAX_COLUMN - MAX_COLUMNS,
                String::from_utf8_lossy(&names[names.len() - 1]),
                SQLITE_MAX_COLUMN
            )));
        }
        let mut used = table.used.clone();
        let mut added = Vec::with_capacity(names.len());
        for attr in names {
            let entry = self.schema.as_ref().and_then(|s| s.entry(attr));
            let base = match entry.and_then(|e| e.column_name.as_deref()) {
                Some(n) => ident_text(n.as_bytes()),
                None => ident_text(attr),
            };
            let column = unique_name(&base, &used);
            used.insert(column.to_ascii_lowercase());
            let data_type = entry.and_then(|e| e.data_type.clone());
            added.push(ColumnInfo {
                attribute: attr.clone(),
                column,
                sql_type: sql_type_for(data_type.as_deref()).to_string(),
                data_type,
                json: false,
            });
        }
        let table_name = table.info.table.clone();
        let first_position = table.info.columns.len() + 1;
        let context = format!("adding columns to {table_name}");
        self.savepoint(&context, |c| {
            for (i, col) in added.iter().enumerate() {
                c.execute_batch(&format!(
                    "ALTER TABLE {} ADD COLUMN {} {}",
                    quote_ident(&table_name),
                    quote_ident(&col.column),
                    col.sql_type
                ))?;
                c.execute(
                    "INSERT INTO soif_columns
                     (table_name, position, attribute, column_name, sql_type, data_type)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        table_name,
                        (first_position + i) as i64,
                        key_param(&col.attribute),
                        col.column,
                        col.sql_type,
                        col.data_type
                    ],
                )?;
            }
            Ok(())
        })?;
        if let Some(t) = self.tables.get_mut(template) {
            let mut info = t.info.clone();
            info.columns.extend(added);
            *t = Table::new(info);
        }
        Ok(())
    }
}
