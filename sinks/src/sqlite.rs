//! The `sqlite` sink and the [`SqliteStore`] it writes through (the RDM server reads and
//! writes the same store).
//!
//! # Layout (version 1)
//!
//! This layout is a contract: `soif serve` and users' SQL rely on it. It is also described
//! in `docs/sqlite-layout.md`.
//!
//! **One table per template type.** The table name is the template as text (`FILE`,
//! `DOCUMENT`, `Dublin-Core`), or the schema's `Table-Name` (below). A name that starts
//! with `sqlite_` or `soif_` (any case) gets a `t_` prefix; NUL becomes `_`; a name that
//! equals, ignoring ASCII case, a table that already exists for another template gets
//! `_2`, `_3`, … appended. The mapping is stored in `soif_tables`, so always look a
//! template up there rather than guessing its table.
//!
//! **Columns.** `url TEXT PRIMARY KEY` (the record's URL; records without one, `-`, are
//! rejected, since they cannot be keyed), then one column per attribute name, added with
//! `ALTER TABLE … ADD COLUMN` the first time the name appears. The column name is the
//! attribute name as text, or the schema's `Column-Name`; NUL becomes `_`; a name equal,
//! ignoring ASCII case, to `url` or to an existing column of the table gets `_2`, `_3`, …
//! appended. Attribute order is kept in `soif_columns.position`. The declared type is
//! `TEXT` unless an RDM schema gives a `Data-Type` (`int`, `integer`, `serial`, `bigint`,
//! `smallint` → `INTEGER`; `float`, `real`, `double` → `REAL`; `numeric`, `decimal` →
//! `NUMERIC`; `blob`, `binary` → `BLOB`; anything else, e.g. `varchar`, `date` → `TEXT`).
//!
//! **Values.** UTF-8 values are TEXT. A value that is not UTF-8 is a BLOB of the exact bytes
//! (with `--charset latin1`, TEXT decoded from ISO 8859-1). A list or a nested part (after
//! `collapse`) and an attribute name that occurs more than once in a record are JSON text:
//! an array, an object, `{"base64": "…"}` for non-UTF-8 leaves. A record *replaces* its
//! row: columns for attributes it does not carry are NULL, since a SOIF object is the
//! whole description of its URL. Inside `@REFRESH { … }` a record *merges* instead: only
//! its attributes are written, other columns keep their values (Harvest refreshes objects
//! that did not change and may send only some attributes). `NULL` means "attribute
//! absent".
//!
//! **Actions.** A record inside `@DELETE { … }` deletes the row with its URL from its
//! template's table and is remembered in `soif_deletions`; any other record upserts on
//! `url` (replacing, or merging inside `@REFRESH`) and is removed from `soif_deletions`.
//!
//! **Metadata tables.**
//! - `soif_meta(key TEXT PRIMARY KEY, value TEXT)`: `layout_version` = `1`.
//! - `soif_tables(template TEXT PRIMARY KEY, table_name TEXT UNIQUE, created TEXT)`;
//!   `template` is a BLOB when the template is not UTF-8.
//! - `soif_columns(table_name, position, attribute, column_name, sql_type, data_type,
//!   json)`, primary key `(table_name, position)`; `position` counts from 1 in order of
//!   first appearance; `attribute` is TEXT (BLOB when not UTF-8); `data_type` is the
//!   schema's `Data-Type` or NULL; `json` is 1 once the column has held a JSON value (a
//!   list, a part, a repeated name), telling readers to parse JSON arrays and objects in
//!   it.
//! - `soif_deletions(template TEXT, url TEXT, deleted TEXT, run_id INTEGER)`, primary key
//!   `(template, url)`.
//! - `soif_runs(id INTEGER PRIMARY KEY AUTOINCREMENT, inputs TEXT, started TEXT, finished
//!   TEXT, status TEXT, records INTEGER, upserted INTEGER, deleted INTEGER, rejected
//!   INTEGER)`: `inputs` is a JSON array of the inputs as given; times are RFC 3339 UTC;
//!   `status` is `running`, `ok` (every record the sink was given is committed; records
//!   rejected before the sink, e.g. by the decoder, show in the command's exit status,
//!   not here), `failed` (the sink stopped on an error; its open batch was rolled back),
//!   or `interrupted` (the process was killed: the next load that opens the database
//!   finds the run still `running` with no loader alive, see [`LoaderLock`]); the counts
//!   are those of the committed batches, updated at every commit.
//!
//! Times are RFC 3339 in UTC (`2026-11-22T08:00:00Z`).
//!
//! # Several connections
//!
//! A loader and the server may write the same database. Every write transaction starts
//! with `BEGIN IMMEDIATE` (SQLite's single writer lock, waited for up to 30 s) and
//! re-reads `soif_tables` / `soif_columns` when `PRAGMA schema_version` shows that another
//! connection changed the layout; readers call [`SqliteStore::refresh`].
//!
//! # Transactions
//!
//! The sink writes `batch_size` records per transaction (`BEGIN IMMEDIATE … COMMIT`) in
//! WAL mode. A process killed mid-run loses at most the open batch and leaves the database
//! consistent; running the same input again converges to the same content, because every
//! write is an upsert or delete keyed on `url`.
//!
//! # Loading a new database
//!
//! When the sink creates the database (the file does not exist or is empty), nobody can
//! be reading it yet, and the first load is usually the big one (a whole Harvest archive).
//! It then writes with a rollback journal and `synchronous = OFF` ([`StoreOptions::bulk`])
//! and, at the end, makes one synced commit (the one that marks the run `ok`) and switches
//! the database to WAL mode for everything after.
//!
//! Why: in WAL mode every page is written twice, once to the WAL and once more when it is
//! checkpointed into the database; appending to a new database with a rollback journal
//! writes each new page once (the journal only keeps the few pages that existed before
//! the transaction). On generated Harvest data (8 KB records) this loads about twice as
//! fast (README, Performance).
//!
//! During a bulk load a helper thread syncs the file after each commit (`Writeback`),
//! so that the final sync has little left to write (about 15 % off the load above).
//!
//! What it costs: a killed process (`kill -9`, a crash) still leaves a consistent
//! database, because the journal is on disk for the next open to roll back; the batches
//! work as above. But a power failure or OS crash *during* this first load can leave the
//! new database damaged, since nothing is synced until the end: check `soif_runs`
//! (`status` still `running`) or `PRAGMA integrity_check`, delete the file and load
//! again. A concurrent reader waits for each commit instead of reading beside it; a store
//! opened meanwhile (the server) works in the loader's journal mode until the load
//! switches the database to WAL. Loads into an existing database are always in WAL mode.
//!
//! # Example
//!
//! ```
//! use soif_codecs::Record;
//! use soif_sinks::sqlite::SqliteStore;
//!
//! let mut store = SqliteStore::open_in_memory(Default::default()).unwrap();
//! store
//!     .upsert(&Record::new("DOCUMENT", "http://home.netscape.com:80/")
//!         .with("Title", "Welcome to Netscape"))
//!     .unwrap();
//! let back = store.get(b"DOCUMENT", b"http://home.netscape.com:80/").unwrap().unwrap();
//! assert_eq!(back.get_str("Title"), Some("Welcome to Netscape"));
//! assert_eq!(store.tables()[0].table, "DOCUMENT");
//! ```

use crate::schema_columns::SchemaColumns;
use crate::value_text::{from_json, latin1, to_json};
use crate::Charset;
use bytes::Bytes;
use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension};
use soif_codecs::{Action, Attribute, Record, Value};
use soif_pipeline::{Error, Sink, SinkError};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

/// Maps looked up for every attribute of every record (attribute → column, template →
/// table): foldhash rather than SipHash took 6 % off the instructions of a load of
/// summary records (callgrind). Their size is bounded (columns per table, tables per
/// store), so foldhash's weaker flooding resistance cannot make them grow without bound.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The layout version stored in `soif_meta`.
pub const LAYOUT_VERSION: i64 = 1;

/// Columns per table besides `url` (SQLite's default `SQLITE_MAX_COLUMN` is 2000).
const MAX_COLUMNS: usize = 1999;

/// Distinct templates (tables) one store will create; beyond that a record is rejected
/// rather than letting a stream of made-up templates grow the schema without bound.
const MAX_TABLES: usize = 10_000;

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
    /// The database holds a layout this version does not know.
    #[error("sqlite {path}: {message}")]
    Layout { path: String, message: String },
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
            StoreError::Layout { .. } | StoreError::RolledBack { .. } => false,
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

/// One attribute's column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnInfo {
    /// The attribute name as in the records.
    pub attribute: Bytes,
    /// The column name in the table.
    pub column: String,
    /// The declared SQLite type (`TEXT`, `INTEGER`, …).
    pub sql_type: String,
    /// The schema's `Data-Type`, when a schema gave one.
    pub data_type: Option<String>,
    /// True once a list, a nested part or a repeated name has been stored in this column
    /// as JSON text; [`TableInfo::record_from_row`] then reads JSON arrays and objects
    /// back as lists and parts.
    pub json: bool,
}

/// One template's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// The template type as in the records.
    pub template: Bytes,
    /// The table name.
    pub table: String,
    /// The attribute columns in order of first appearance (`url` not included).
    pub columns: Vec<ColumnInfo>,
}

impl TableInfo {
    /// `SELECT "url", <columns in order> FROM "table"`: rows in the shape
    /// [`TableInfo::record_from_row`] reads. Add a `WHERE` or `ORDER BY` as needed.
    pub fn select_sql(&self) -> String {
        let mut sql = String::from("SELECT \"url\"");
        for c in &self.columns {
            sql.push_str(", ");
            sql.push_str(&quote_ident(&c.column));
        }
        sql.push_str(" FROM ");
        sql.push_str(&quote_ident(&self.table));
        sql
    }

    /// A record from a row selected by [`TableInfo::select_sql`]: NULL columns are absent
    /// attributes; TEXT and BLOB give their bytes; numbers their decimal text. In a
    /// [`ColumnInfo::json`] column, a JSON array or object becomes a [`Value::List`] or
    /// [`Value::Object`] again ([`from_json`]; `{"base64": …}` the bytes it holds), so
    /// [`Record::flattened`] writes it as `Author-1`, `Author-2`, `Embed<1>-Type` in SOIF.
    pub fn record_from_row(&self, row: &rusqlite::Row<'_>) -> rusqlite::Result<Record> {
        let mut record = Record::new(self.template.clone(), value_bytes(row.get_ref(0)?));
        for (i, c) in self.columns.iter().enumerate() {
            let v = row.get_ref(i + 1)?;
            if v == ValueRef::Null {
                continue;
            }
            let value = match v {
                ValueRef::Text(t) if c.json && matches!(t.first(), Some(b'[' | b'{')) => {
                    match serde_json::from_slice::<serde_json::Value>(t) {
                        Ok(j) => from_json(&j),
                        Err(_) => Value::Bytes(Bytes::copy_from_slice(t)),
                    }
                }
                other => Value::Bytes(value_bytes(other)),
            };
            record.attributes.push(Attribute {
                name: c.attribute.clone(),
                value,
            });
        }
        Ok(record)
    }
}

fn value_bytes(v: ValueRef<'_>) -> Bytes {
    match v {
        ValueRef::Null => Bytes::new(),
        ValueRef::Integer(i) => Bytes::from(i.to_string()),
        ValueRef::Real(f) => Bytes::from(f.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Bytes::copy_from_slice(t),
    }
}

/// Counts for one run, stored in `soif_runs`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunCounts {
    /// Records handed to the sink.
    pub records: u64,
    pub upserted: u64,
    pub deleted: u64,
    /// Records the store refused.
    pub rejected: u64,
}

/// How [`SqliteStore::upsert_with`] treats a row that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpsertMode {
    /// The row becomes exactly the record: columns it has no attribute for become NULL.
    /// What a full SOIF object (`@UPDATE`, no envelope) means.
    Replace,
    /// Only the record's attributes are written; other columns keep their values
    /// (sqlite-utils' `upsert`). What `@REFRESH` means: Harvest refreshes objects that did
    /// not change, possibly sending only some attributes (e.g. `Time-to-Live`).
    Merge,
}

struct Table {
    info: TableInfo,
    by_attr: FastMap<Bytes, usize>,
    /// Column names in lower case, `url` included, for collision checks.
    used: HashSet<String>,
    /// The replacing upsert (every column), built once per column set.
    upsert_sql: String,
    /// Merging upserts (`@REFRESH`) by the columns they name, built once per set rather
    /// than per record. Bounded: cleared when full, since odd streams could give every
    /// record its own set.
    merge_sql: HashMap<Vec<usize>, String>,
}

/// Merge statements kept per table (see [`Table::merge_sql`]).
const MAX_MERGE_SQL: usize = 64;

impl Table {
    fn new(info: TableInfo) -> Table {
        let mut t = Table {
            by_attr: FastMap::default(),
            used: HashSet::from(["url".to_string()]),
            upsert_sql: String::new(),
            merge_sql: HashMap::new(),
            info,
        };
        for (i, c) in t.info.columns.iter().enumerate() {
            t.by_attr.entry(c.attribute.clone()).or_insert(i);
            t.used.insert(c.column.to_ascii_lowercase());
        }
        t.upsert_sql = upsert_sql(&t.info);
        t
    }

    /// The merging upsert naming exactly `columns` (indices into the table's columns,
    /// ascending).
    fn merge_sql(&mut self, columns: &[usize]) -> &str {
        if !self.merge_sql.contains_key(columns) {
            if self.merge_sql.len() >= MAX_MERGE_SQL {
                self.merge_sql.clear();
            }
            let names = columns
                .iter()
                .map(|&c| self.info.columns[c].column.as_str());
            let sql = upsert_sql_for(&self.info.table, names);
            self.merge_sql.insert(columns.to_vec(), sql);
        }
        self.merge_sql.get(columns).map_or("", String::as_str)
    }
}

/// `INSERT … ON CONFLICT("url") DO UPDATE SET` every column: the row becomes exactly the
/// record (absent attributes NULL), keeping its rowid.
fn upsert_sql(info: &TableInfo) -> String {
    upsert_sql_for(&info.table, info.columns.iter().map(|c| c.column.as_str()))
}

/// The upsert of `url` and `columns` (bound as `?1`, `?2`, … in that order); columns not
/// named keep their values.
fn upsert_sql_for<'a>(table: &str, columns: impl Iterator<Item = &'a str>) -> String {
    let mut cols = String::from("\"url\"");
    let mut vals = String::from("?1");
    let mut set = String::new();
    for (i, c) in columns.enumerate() {
        let q = quote_ident(c);
        cols.push_str(", ");
        cols.push_str(&q);
        vals.push_str(&format!(", ?{}", i + 2));
        if !set.is_empty() {
            set.push_str(", ");
        }
        set.push_str(&format!("{q} = excluded.{q}"));
    }
    let action = if set.is_empty() {
        "NOTHING".to_string()
    } else {
        format!("UPDATE SET {set}")
    };
    format!(
        "INSERT INTO {} ({cols}) VALUES ({vals}) ON CONFLICT(\"url\") DO {action}",
        quote_ident(table)
    )
}

/// An SQL identifier in double quotes (`"` doubled), safe for any name.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A name from bytes: lossy UTF-8, NUL (which SQLite identifiers cannot hold) as `_`.
fn ident_text(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes).replace('\0', "_");
    if s.is_empty() {
        "_".to_string()
    } else {
        s
    }
}

/// `base`, or `base_2`, `base_3`, … — the first whose lower case is not in `used`.
fn unique_name(base: &str, used: &HashSet<String>) -> String {
    if !used.contains(&base.to_ascii_lowercase()) {
        return base.to_string();
    }
    (2u64..)
        .map(|n| format!("{base}_{n}"))
        .find(|c| !used.contains(&c.to_ascii_lowercase()))
        .unwrap_or_else(|| base.to_string())
}

/// The declared SQLite type for an RDM `Data-Type`.
pub fn sql_type_for(data_type: Option<&str>) -> &'static str {
    let Some(t) = data_type else {
        return "TEXT";
    };
    let t = t.trim().to_ascii_lowercase();
    let base = t
        .split(|c: char| c == '(' || c.is_whitespace())
        .next()
        .unwrap_or("");
    match base {
        "int" | "integer" | "serial" | "bigint" | "smallint" | "tinyint" | "bigserial" => "INTEGER",
        "float" | "real" | "double" => "REAL",
        "numeric" | "decimal" | "number" => "NUMERIC",
        "blob" | "binary" | "varbinary" | "bytea" => "BLOB",
        _ => "TEXT",
    }
}

/// A value as an SQL parameter: UTF-8 as TEXT, other bytes as a BLOB (or Latin-1 TEXT),
/// lists and parts as JSON text.
fn value_param(value: &Value, charset: Charset) -> ToSqlOutput<'_> {
    match value {
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Err(_) => match charset {
                Charset::Latin1 => ToSqlOutput::Owned(SqlValue::Text(latin1(b))),
                Charset::Utf8 => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            },
        },
        other => ToSqlOutput::Owned(SqlValue::Text(to_json(other, charset).to_string())),
    }
}

/// A key (template, attribute, url) as an SQL value: TEXT when UTF-8, else BLOB.
fn key_param(b: &[u8]) -> ToSqlOutput<'_> {
    match std::str::from_utf8(b) {
        Ok(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        Err(_) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Buffers [`SqliteStore::upsert_row`] reuses from record to record.
#[derive(Default)]
struct Scratch {
    /// Each attribute's column.
    col_of: Vec<Option<usize>>,
    /// Each column's first attribute.
    first: Vec<Option<usize>>,
    /// The columns the record has a value for.
    present: Vec<usize>,
    /// Columns that get their first JSON value with this record.
    newly_json: Vec<usize>,
}

/// The replacing upsert, prepared once and kept, bound without copies.
///
/// Why not rusqlite's `prepare_cached`: it looks the statement up by its SQL, which for
/// an upsert naming every column is a kilobyte hashed twice per record, about a tenth of
/// the loader's thread on summary objects; and rusqlite binds every value with
/// `SQLITE_TRANSIENT`, so SQLite copies each one before copying it again into the row.
/// A rusqlite `Statement` cannot be kept instead: it borrows the connection and is not
/// `Send`. So this holds the raw statement, the one place the sink uses SQLite's C API.
///
/// Safety rests on three rules, each kept in this module or by its one owner:
/// - it is finalized before its connection closes (the field holding it is declared
///   before the connection in [`SqliteStore`], so it is dropped first, and it is
///   dropped whenever the store re-reads its layout);
/// - values bound without a copy (`SQLITE_STATIC`) outlive the statement's use of them:
///   [`UpsertStmt::run`] binds, steps and resets with the record borrowed, and clears
///   the bindings before it returns, whatever happens;
/// - it is used by one thread at a time, with its connection (`SqliteStore` is `Send`,
///   not `Sync`).
mod upsert_stmt {
    use rusqlite::ffi;
    use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
    use rusqlite::Connection;
    use std::ffi::{c_int, CStr};
    use std::ptr::NonNull;

    pub(super) struct UpsertStmt {
        stmt: NonNull<ffi::sqlite3_stmt>,
        db: *mut ffi::sqlite3,
        /// The SQL it was prepared from (the store's `Table::upsert_sql`).
        sql: String,
    }

    // SAFETY: SQLite connections (and their statements) may move between threads when
    // used by one at a time (SQLite's default serialized mode); `SqliteStore`, which owns
    // both, is not `Sync`.
    unsafe impl Send for UpsertStmt {}

    impl Drop for UpsertStmt {
        fn drop(&mut self) {
            // SAFETY: the statement is valid until this, its only finalization.
            unsafe {
                ffi::sqlite3_finalize(self.stmt.as_ptr());
            }
        }
    }

    fn error(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
        // SAFETY: `db` is the statement's open connection; errmsg returns a valid
        // NUL-terminated string owned by SQLite, copied here at once.
        let message = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(db)) }
            .to_string_lossy()
            .into_owned();
        rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(message))
    }

    impl UpsertStmt {
        /// Prepares `sql` on `conn`.
        pub(super) fn prepare(conn: &Connection, sql: &str) -> rusqlite::Result<UpsertStmt> {
            // SAFETY: the handle is used only while `conn` is borrowed, to prepare; the
            // statement is finalized before the connection closes (see the module doc).
            let db = unsafe { conn.handle() };
            let mut stmt = std::ptr::null_mut();
            let len = c_int::try_from(sql.len()).map_err(|_| {
                rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_TOOBIG), None)
            })?;
            // SAFETY: `sql` is valid for `len` bytes; `stmt` receives the statement.
            let rc = unsafe {
                ffi::sqlite3_prepare_v3(
                    db,
                    sql.as_ptr().cast(),
                    len,
                    ffi::SQLITE_PREPARE_PERSISTENT as _,
                    &mut stmt,
                    std::ptr::null_mut(),
                )
            };
            if rc != ffi::SQLITE_OK {
                return Err(error(db, rc));
            }
            let stmt = NonNull::new(stmt).ok_or_else(|| {
                rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_MISUSE), None)
            })?;
            Ok(UpsertStmt {
                stmt,
                db,
                sql: sql.to_string(),
            })
        }

        /// Whether this is the statement for `sql`.
        pub(super) fn is_for(&self, sql: &str) -> bool {
            self.sql == sql
        }

        /// Binds `params` (as `?1`, `?2`, …), runs the statement once, and leaves it
        /// reset with no bindings.
        pub(super) fn run(&mut self, params: &[ToSqlOutput<'_>]) -> rusqlite::Result<()> {
            let result = self.bind_and_step(params);
            // SAFETY: a valid statement; after these, no binding refers to `params`.
            unsafe {
                ffi::sqlite3_reset(self.stmt.as_ptr());
                ffi::sqlite3_clear_bindings(self.stmt.as_ptr());
            }
            result
        }

        fn bind_and_step(&mut self, params: &[ToSqlOutput<'_>]) -> rusqlite::Result<()> {
            let st = self.stmt.as_ptr();
            for (i, p) in params.iter().enumerate() {
                let index = c_int::try_from(i + 1).unwrap_or(c_int::MAX);
                // Borrowed bytes are bound as they are (SQLITE_STATIC); owned text is
                // copied (SQLITE_TRANSIENT), since it is dropped first.
                let (bytes, text, destructor) = match p {
                    ToSqlOutput::Borrowed(ValueRef::Null) | ToSqlOutput::Owned(SqlValue::Null) => {
                        (None, false, ffi::SQLITE_STATIC())
                    }
                    ToSqlOutput::Borrowed(ValueRef::Text(b)) => {
                        (Some(*b), true, ffi::SQLITE_STATIC())
                    }
                    ToSqlOutput::Borrowed(ValueRef::Blob(b)) => {
                        (Some(*b), false, ffi::SQLITE_STATIC())
                    }
                    ToSqlOutput::Owned(SqlValue::Text(t)) => {
                        (Some(t.as_bytes()), true, ffi::SQLITE_TRANSIENT())
                    }
                    _ => {
                        return Err(rusqlite::Error::ToSqlConversionFailure(
                            "unexpected parameter kind for the upsert".into(),
                        ))
                    }
                };
                // SAFETY: `st` is valid; borrowed bytes stay alive until `run` resets and
                // clears the bindings.
                let rc = unsafe {
                    match bytes {
                        None => ffi::sqlite3_bind_null(st, index),
                        Some(b) if text => ffi::sqlite3_bind_text64(
                            st,
                            index,
                            b.as_ptr().cast(),
                            b.len() as u64,
                            destructor,
                            ffi::SQLITE_UTF8 as _,
                        ),
                        Some(b) => ffi::sqlite3_bind_blob64(
                            st,
                            index,
                            b.as_ptr().cast(),
                            b.len() as u64,
                            destructor,
                        ),
                    }
                };
                if rc != ffi::SQLITE_OK {
                    return Err(error(self.db, rc));
                }
            }
            // SAFETY: a valid statement with every parameter bound.
            match unsafe { ffi::sqlite3_step(st) } {
                ffi::SQLITE_DONE => Ok(()),
                ffi::SQLITE_ROW => Ok(()),
                // The step's error (on a prepare_v3 statement, the real one).
                rc => Err(error(self.db, rc)),
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn db() -> Connection {
            let conn = Connection::open_in_memory().unwrap();
            conn.execute_batch("CREATE TABLE t (url TEXT PRIMARY KEY, a NOT NULL, b)")
                .unwrap();
            conn
        }

        #[test]
        fn binds_text_blobs_nulls_and_owned_text_and_runs_again() {
            let conn = db();
            let mut st = UpsertStmt::prepare(&conn, "INSERT INTO t VALUES (?1, ?2, ?3)").unwrap();
            assert!(st.is_for("INSERT INTO t VALUES (?1, ?2, ?3)"));
            for i in 0..3 {
                // Fresh buffers each time, gone once `run` returns.
                let url = format!("http://x/{i}");
                let blob = vec![0xff, 0xfe, i as u8];
                st.run(&[
                    ToSqlOutput::Borrowed(ValueRef::Text(url.as_bytes())),
                    ToSqlOutput::Borrowed(ValueRef::Blob(&blob)),
                    if i == 1 {
                        ToSqlOutput::Owned(SqlValue::Null)
                    } else {
                        ToSqlOutput::Owned(SqlValue::Text(format!("owned {i}")))
                    },
                ])
                .unwrap();
            }
            let rows: Vec<(String, Vec<u8>, Option<String>)> = conn
                .prepare("SELECT url, a, b FROM t ORDER BY url")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            assert_eq!(
                rows,
                [
                    (
                        "http://x/0".into(),
                        vec![0xff, 0xfe, 0],
                        Some("owned 0".into())
                    ),
                    ("http://x/1".into(), vec![0xff, 0xfe, 1], None),
                    (
                        "http://x/2".into(),
                        vec![0xff, 0xfe, 2],
                        Some("owned 2".into())
                    ),
                ]
            );
        }

        #[test]
        fn errors_say_what_and_leave_it_usable() {
            let conn = db();
            assert!(UpsertStmt::prepare(&conn, "INSERT INTO nowhere VALUES (?1)").is_err());
            let mut st = UpsertStmt::prepare(&conn, "INSERT INTO t VALUES (?1, ?2, ?3)").unwrap();
            let e = st
                .run(&[
                    ToSqlOutput::Borrowed(ValueRef::Text(b"u")),
                    ToSqlOutput::Owned(SqlValue::Null),
                    ToSqlOutput::Owned(SqlValue::Null),
                ])
                .unwrap_err();
            assert!(e.to_string().contains("NOT NULL constraint failed"), "{e}");
            // The code the store sorts errors by (a constraint: the record's fault).
            assert_eq!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::ConstraintViolation)
            );
            // Reset and cleared: the next run binds afresh and succeeds.
            st.run(&[
                ToSqlOutput::Borrowed(ValueRef::Text(b"u")),
                ToSqlOutput::Borrowed(ValueRef::Text(b"a")),
                ToSqlOutput::Owned(SqlValue::Null),
            ])
            .unwrap();
            let n: i64 = conn
                .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 1);
            // A kind it does not bind is an error, not a silent NULL.
            let e = st
                .run(&[ToSqlOutput::Owned(SqlValue::Integer(1))])
                .unwrap_err();
            assert!(e.to_string().contains("unexpected parameter kind"), "{e}");
            // Dropped before the connection: finalized, so the connection closes cleanly.
            drop(st);
            conn.close().map_err(|(_, e)| e).unwrap();
        }
    }
}

/// The SQLite store: the tables of the layout above, kept in step with an in-memory map
/// of templates and columns.
pub struct SqliteStore {
    /// The replacing upsert last used. Declared before `conn`: it must be finalized
    /// before the connection closes (see [`upsert_stmt`]).
    upsert: Option<upsert_stmt::UpsertStmt>,
    conn: Connection,
    path: String,
    tables: FastMap<Bytes, Table>,
    /// Table names in lower case (every table in the database), for collision checks.
    used_tables: HashSet<String>,
    schema: Option<SchemaColumns>,
    charset: Charset,
    /// Whether `soif_deletions` may hold rows (if not, upserts skip clearing it).
    deletions_exist: bool,
    /// `PRAGMA schema_version` as of the last layout read or own commit: when another
    /// process (a loader, the server) adds tables or columns, it changes, and the map is
    /// read again.
    schema_version: i64,
    scratch: Scratch,
    /// Opened with [`StoreOptions::bulk`].
    bulk: bool,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("tables", &self.tables.len())
            .finish()
    }
}

const CREATE_META: &str = "
CREATE TABLE IF NOT EXISTS soif_meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS soif_tables (
    template TEXT PRIMARY KEY,
    table_name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS soif_columns (
    table_name TEXT NOT NULL,
    position INTEGER NOT NULL,
    attribute TEXT NOT NULL,
    column_name TEXT NOT NULL,
    sql_type TEXT NOT NULL,
    data_type TEXT,
    json INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (table_name, position)
);
CREATE TABLE IF NOT EXISTS soif_deletions (
    template TEXT NOT NULL,
    url TEXT NOT NULL,
    deleted TEXT NOT NULL,
    run_id INTEGER,
    PRIMARY KEY (template, url)
);
CREATE TABLE IF NOT EXISTS soif_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    inputs TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,
    records INTEGER NOT NULL DEFAULT 0,
    upserted INTEGER NOT NULL DEFAULT 0,
    deleted INTEGER NOT NULL DEFAULT 0,
    rejected INTEGER NOT NULL DEFAULT 0
);
INSERT OR IGNORE INTO soif_meta (key, value) VALUES ('layout_version', '1');
";

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
        let opts = StoreOptions::default();
        let mut store = SqliteStore {
            upsert: None,
            conn,
            path: name,
            tables: FastMap::default(),
            used_tables: HashSet::new(),
            schema: opts.schema,
            charset: opts.charset,
            deletions_exist: true,
            schema_version: 0,
            scratch: Scratch::default(),
            bulk: false,
        };
        store
            .conn
            .busy_timeout(Duration::from_secs(30))
            .map_err(|e| store.err("setting busy timeout", e))?;
        store.reload()?;
        Ok(store)
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

    fn init(conn: Connection, path: String, opts: StoreOptions) -> Result<SqliteStore, StoreError> {
        let mut store = SqliteStore {
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
        };
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
        let (journal, sync) = if opts.bulk {
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
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) && !opts.bulk => {}
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
        if version.as_deref() != Some("1") {
            return Err(StoreError::Layout {
                path: store.path.clone(),
                message: format!(
                    "layout_version {} is not supported (this soif writes version {LAYOUT_VERSION})",
                    version.as_deref().unwrap_or("(none)")
                ),
            });
        }
        store.reload()?;
        Ok(store)
    }

    fn err(&self, context: &str, source: rusqlite::Error) -> StoreError {
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
            .read_layout()
            .map_err(|e| self.err("reading the layout tables", e))?;
        self.tables = tables;
        self.used_tables = used;
        self.deletions_exist = deletions;
        self.schema_version = self.read_schema_version()?;
        Ok(())
    }

    fn read_schema_version(&self) -> Result<i64, StoreError> {
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
    fn read_layout(&self) -> rusqlite::Result<(FastMap<Bytes, Table>, HashSet<String>, bool)> {
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
    fn end_bulk(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("PRAGMA synchronous = FULL;")
            .map_err(|e| self.err("ending the bulk load", e))
    }

    /// After the durable commit that follows [`SqliteStore::end_bulk`]: WAL mode, as
    /// every other soif database is, so the server can read it while loaders write.
    fn enter_wal(&mut self) -> Result<(), StoreError> {
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
    fn in_write<T>(
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
    fn savepoint<T>(
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
    fn ensure_table(&mut self, template: &Bytes) -> Result<(), StoreError> {
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
            "CREATE TABLE {} (\"url\" TEXT PRIMARY KEY)",
            quote_ident(&name)
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
    fn add_columns(&mut self, template: &Bytes, names: &[Bytes]) -> Result<(), StoreError> {
        let Some(table) = self.tables.get(template) else {
            return Ok(());
        };
        if table.info.columns.len() + names.len() > MAX_COLUMNS {
            return Err(StoreError::Rejected(format!(
                "table {} would need {} columns for attribute {}; SQLite allows {}",
                table.info.table,
                table.info.columns.len() + names.len() + 1,
                String::from_utf8_lossy(&names[names.len() - 1]),
                MAX_COLUMNS + 1
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

    /// Stores a record in its template's table (creating the table and columns as
    /// needed): [`UpsertMode::Merge`] for a record inside `@REFRESH { … }`,
    /// [`UpsertMode::Replace`] otherwise. Records without a URL are rejected.
    pub fn upsert(&mut self, record: &Record) -> Result<(), StoreError> {
        let mode = match record.action {
            Some(Action::Refresh) => UpsertMode::Merge,
            _ => UpsertMode::Replace,
        };
        self.upsert_with(record, mode)
    }

    /// Stores a record with an explicit [`UpsertMode`].
    pub fn upsert_with(&mut self, record: &Record, mode: UpsertMode) -> Result<(), StoreError> {
        if record.has_no_url() || record.url.is_empty() {
            return Err(StoreError::Rejected(
                "record has no URL (`-`); sqlite tables are keyed on url".into(),
            ));
        }
        self.in_write(|s| s.upsert_in_tx(record, mode))
    }

    fn upsert_in_tx(&mut self, record: &Record, mode: UpsertMode) -> Result<(), StoreError> {
        self.ensure_table(&record.template)?;
        // Reused buffers: the hot path allocates nothing per record for a table whose
        // columns are known (values are bound borrowed; only JSON values are built).
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.upsert_row(record, mode, &mut scratch);
        self.scratch = scratch;
        result
    }

    /// Fills `col_of` with each attribute's column; false when some have none yet.
    fn lookup_columns(&self, record: &Record, col_of: &mut Vec<Option<usize>>) -> bool {
        col_of.clear();
        let by_attr = self.tables.get(&record.template).map(|t| &t.by_attr);
        let mut all = true;
        for a in &record.attributes {
            let c = by_attr.and_then(|m| m.get(&a.name).copied());
            all &= c.is_some();
            col_of.push(c);
        }
        all
    }

    fn upsert_row(
        &mut self,
        record: &Record,
        mode: UpsertMode,
        sc: &mut Scratch,
    ) -> Result<(), StoreError> {
        // Each attribute's column, looked up once; new names first get their columns.
        if !self.lookup_columns(record, &mut sc.col_of) {
            let mut missing: Vec<Bytes> = Vec::new();
            for (a, c) in record.attributes.iter().zip(&sc.col_of) {
                if c.is_none() && !missing.contains(&a.name) {
                    missing.push(a.name.clone());
                }
            }
            self.add_columns(&record.template, &missing)?;
            self.lookup_columns(record, &mut sc.col_of);
        }
        let charset = self.charset;
        let Some(table) = self.tables.get_mut(&record.template) else {
            return Ok(());
        };
        let ncols = table.info.columns.len();
        // Which attribute goes to each column (usually exactly one or none).
        sc.first.clear();
        sc.first.resize(ncols, None);
        let mut repeated = false;
        for (i, c) in sc.col_of.iter().enumerate() {
            if let Some(c) = *c {
                if sc.first[c].is_some() {
                    repeated = true;
                } else {
                    sc.first[c] = Some(i);
                }
            }
        }
        // How many attributes go to column `c` (more than one only for repeated names).
        let col_of = &sc.col_of;
        let count = |c: usize| {
            if repeated {
                col_of.iter().filter(|&&x| x == Some(c)).count()
            } else {
                1
            }
        };
        // The columns this record has, in table order; those getting their first JSON
        // value now are marked in soif_columns after the row is written.
        sc.present.clear();
        sc.newly_json.clear();
        for (c, slot) in sc.first.iter().enumerate() {
            let Some(i) = *slot else { continue };
            sc.present.push(c);
            let is_json = !matches!(record.attributes[i].value, Value::Bytes(_)) || count(c) > 1;
            if is_json && !table.info.columns[c].json {
                sc.newly_json.push(c);
            }
        }
        let merge = mode == UpsertMode::Merge;
        // The parameters: url, then replace binds every column (NULL where the record
        // has no value); merge only the present ones, which its statement names.
        let mut params: Vec<ToSqlOutput<'_>> = Vec::with_capacity(sc.first.len() + 1);
        params.push(key_param(&record.url));
        for (c, slot) in sc.first.iter().enumerate() {
            match *slot {
                None if merge => continue,
                None => params.push(ToSqlOutput::Owned(SqlValue::Null)),
                Some(_) if count(c) > 1 => {
                    // The same name several times in one record: a JSON array, nothing
                    // dropped.
                    let items: Vec<serde_json::Value> = record
                        .attributes
                        .iter()
                        .zip(col_of)
                        .filter(|(_, x)| **x == Some(c))
                        .map(|(a, _)| to_json(&a.value, charset))
                        .collect();
                    params.push(ToSqlOutput::Owned(SqlValue::Text(
                        serde_json::Value::Array(items).to_string(),
                    )));
                }
                Some(i) => params.push(value_param(&record.attributes[i].value, charset)),
            }
        }
        let written = if merge {
            // `@REFRESH` merges: a statement per column set, from rusqlite's cache.
            let sql = table.merge_sql(&sc.present);
            self.conn.prepare_cached(sql).and_then(|mut st| {
                for (i, p) in params.iter().enumerate() {
                    st.raw_bind_parameter(i + 1, p)?;
                }
                st.raw_execute().map(|_| ())
            })
        } else {
            // Everything else replaces, through the one kept statement.
            let sql = &table.upsert_sql;
            let slot = &mut self.upsert;
            let prepared = match slot {
                Some(st) if st.is_for(sql) => Ok(()),
                _ => {
                    *slot = None;
                    upsert_stmt::UpsertStmt::prepare(&self.conn, sql).map(|st| *slot = Some(st))
                }
            };
            prepared.and_then(|()| slot.as_mut().map_or(Ok(()), |st| st.run(&params)))
        };
        if let Err(e) = written {
            let name = self
                .tables
                .get(&record.template)
                .map(|t| t.info.table.as_str());
            return Err(self.err(&format!("upserting into {}", name.unwrap_or("?")), e));
        }
        if !sc.newly_json.is_empty() {
            self.mark_json(&record.template, &sc.newly_json)?;
        }
        if self.deletions_exist {
            self.conn
                .prepare_cached("DELETE FROM soif_deletions WHERE template = ?1 AND url = ?2")
                .and_then(|mut st| {
                    st.execute(params![key_param(&record.template), key_param(&record.url)])
                })
                .map_err(|e| self.err("clearing soif_deletions", e))?;
        }
        Ok(())
    }

    /// Records that these columns now hold JSON (same transaction as the row).
    fn mark_json(&mut self, template: &Bytes, columns: &[usize]) -> Result<(), StoreError> {
        let Some(table) = self.tables.get(template) else {
            return Ok(());
        };
        let name = table.info.table.clone();
        for &c in columns {
            self.conn
                .execute(
                    "UPDATE soif_columns SET json = 1 WHERE table_name = ?1 AND position = ?2",
                    params![name, (c + 1) as i64],
                )
                .map_err(|e| self.err("marking a JSON column in soif_columns", e))?;
        }
        if let Some(t) = self.tables.get_mut(template) {
            for &c in columns {
                t.info.columns[c].json = true;
            }
        }
        Ok(())
    }

    /// Deletes the row for `url` from `template`'s table (from every table when
    /// `template` is `None`) and remembers the deletion in `soif_deletions` (under every
    /// known template when `None`). Returns the number of rows deleted.
    pub fn delete(&mut self, template: Option<&[u8]>, url: &[u8]) -> Result<usize, StoreError> {
        self.delete_in_run(template, url, None)
    }

    fn delete_in_run(
        &mut self,
        template: Option<&[u8]>,
        url: &[u8],
        run_id: Option<i64>,
    ) -> Result<usize, StoreError> {
        if url == b"-" || url.is_empty() {
            return Err(StoreError::Rejected(
                "deletion without a URL (`-`); sqlite rows are keyed on url".into(),
            ));
        }
        self.in_write(|s| {
            let targets: Vec<(Bytes, Option<String>)> = match template {
                Some(t) => vec![(
                    Bytes::copy_from_slice(t),
                    s.tables.get(t).map(|x| x.info.table.clone()),
                )],
                None => s
                    .tables
                    .values()
                    .map(|x| (x.info.template.clone(), Some(x.info.table.clone())))
                    .collect(),
            };
            let mut deleted = 0;
            let when = now();
            for (tmpl, table) in targets {
                if let Some(table) = table {
                    let sql = format!("DELETE FROM {} WHERE \"url\" = ?1", quote_ident(&table));
                    deleted += s
                        .conn
                        .prepare_cached(&sql)
                        .and_then(|mut st| st.execute([key_param(url)]))
                        .map_err(|e| s.err(&format!("deleting from {table}"), e))?;
                }
                s.conn
                    .prepare_cached(
                        "INSERT OR REPLACE INTO soif_deletions (template, url, deleted, run_id)
                         VALUES (?1, ?2, ?3, ?4)",
                    )
                    .and_then(|mut st| {
                        st.execute(params![key_param(&tmpl), key_param(url), when, run_id])
                    })
                    .map_err(|e| s.err("recording the deletion", e))?;
                s.deletions_exist = true;
            }
            Ok(deleted)
        })
    }

    /// The stored record for `url` in `template`'s table (see
    /// [`TableInfo::record_from_row`] for how values come back).
    pub fn get(&self, template: &[u8], url: &[u8]) -> Result<Option<Record>, StoreError> {
        let Some(t) = self.tables.get(template) else {
            return Ok(None);
        };
        let sql = format!("{} WHERE \"url\" = ?1", t.info.select_sql());
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut st| {
                st.query_row([key_param(url)], |row| t.info.record_from_row(row))
                    .optional()
            })
            .map_err(|e| self.err(&format!("reading {}", t.info.table), e))
    }

    /// Starts a run: a `soif_runs` row with status `running`, committed at once so that
    /// even a killed run is on record. Returns its id.
    pub fn begin_run(&mut self, inputs: &[String]) -> Result<i64, StoreError> {
        let inputs = serde_json::to_string(inputs).unwrap_or_else(|_| "[]".to_string());
        self.in_write(|s| {
            s.conn
                .execute(
                    "INSERT INTO soif_runs (inputs, started, status) VALUES (?1, ?2, 'running')",
                    params![inputs, now()],
                )
                .map_err(|e| s.err("recording the run", e))?;
            Ok(s.conn.last_insert_rowid())
        })
    }

    /// Marks every run still `running` as `interrupted` and returns how many there were.
    /// Call it only when no loader is alive ([`LoaderLock`]): their runs were killed.
    pub fn interrupt_stale_runs(&mut self) -> Result<usize, StoreError> {
        self.in_write(|s| {
            s.conn
                .execute(
                    "UPDATE soif_runs SET status = 'interrupted' WHERE status = 'running'",
                    [],
                )
                .map_err(|e| s.err("marking killed runs interrupted", e))
        })
    }

    /// Updates a run's counts; with `status` (`ok`, `failed`) also marks it finished.
    pub fn update_run(
        &mut self,
        id: i64,
        counts: RunCounts,
        status: Option<&str>,
    ) -> Result<(), StoreError> {
        let finished = status.map(|_| now());
        self.in_write(|s| {
            s.conn
                .prepare_cached(
                    "UPDATE soif_runs SET records = ?2, upserted = ?3, deleted = ?4,
                     rejected = ?5, finished = COALESCE(?6, finished),
                     status = COALESCE(?7, status) WHERE id = ?1",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        id,
                        counts.records as i64,
                        counts.upserted as i64,
                        counts.deleted as i64,
                        counts.rejected as i64,
                        finished,
                        status
                    ])
                })
                .map_err(|e| s.err("updating soif_runs", e))?;
            Ok(())
        })
    }
}

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

/// The `sqlite` sink: writes each record through a [`SqliteStore`], `batch_size` records
/// (or [`MAX_BATCH_BYTES`]) per transaction, and keeps the run's `soif_runs` row up to
/// date.
pub struct SqliteSink {
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
    writeback: Option<Writeback>,
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
struct Writeback {
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

impl SqliteSink {
    /// Opens the database and records the start of a run. A database that does not
    /// exist yet (or is an empty file) is created and bulk-loaded ([`StoreOptions::bulk`]).
    pub fn open(
        path: &Path,
        mut opts: StoreOptions,
        batch_size: usize,
        inputs: &[String],
    ) -> Result<SqliteSink, Error> {
        opts.bulk = std::fs::metadata(path).map_or(true, |m| m.len() == 0);
        let bulk = opts.bulk;
        let (loader, alone) = LoaderLock::acquire(path)?;
        let mut store = SqliteStore::open_with(path, opts).map_err(store_fatal)?;
        let interrupted = if alone && !bulk {
            store.interrupt_stale_runs().map_err(store_fatal)?
        } else {
            0
        };
        let mut sink = SqliteSink::new(store, batch_size, inputs)?;
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
    ) -> Result<SqliteSink, Error> {
        let run_id = store.begin_run(inputs).map_err(store_fatal)?;
        let bulk = store.bulk;
        Ok(SqliteSink {
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

impl Drop for SqliteSink {
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
fn record_bytes(record: &Record) -> usize {
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

impl Sink for SqliteSink {
    fn name(&self) -> &str {
        "sqlite"
    }

    fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
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

    fn finish(&mut self) -> Result<(), Error> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn mem() -> SqliteStore {
        SqliteStore::open_in_memory(StoreOptions::default()).unwrap()
    }

    fn count(store: &SqliteStore, sql: &str) -> i64 {
        store.connection().query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn quoting_and_names() {
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        let used = HashSet::from(["url".to_string(), "title".to_string(), "title_2".into()]);
        assert_eq!(unique_name("Title", &used), "Title_3");
        assert_eq!(unique_name("URL", &used), "URL_2");
        assert_eq!(unique_name("Type", &used), "Type");
        assert_eq!(ident_text(b"a\0b"), "a_b");
        assert_eq!(sql_type_for(Some("varchar")), "TEXT");
        assert_eq!(sql_type_for(Some("INT")), "INTEGER");
        assert_eq!(sql_type_for(Some("decimal(10,2)")), "NUMERIC");
        assert_eq!(sql_type_for(Some("blob")), "BLOB");
        assert_eq!(sql_type_for(None), "TEXT");
    }

    #[test]
    fn columns_added_as_attributes_appear_and_rows_replaced() {
        let mut s = mem();
        s.upsert(&Record::new("FILE", "u1").with("Title", "a"))
            .unwrap();
        s.upsert(
            &Record::new("FILE", "u2")
                .with("Type", "HTML")
                .with("Title", "b"),
        )
        .unwrap();
        // u1 again without Title: the row becomes exactly the record.
        s.upsert(&Record::new("FILE", "u1").with("Type", "Text"))
            .unwrap();
        let t = s.table(b"FILE").unwrap();
        let cols: Vec<_> = t.columns.iter().map(|c| c.column.as_str()).collect();
        assert_eq!(cols, ["Title", "Type"]);
        let back = s.get(b"FILE", b"u1").unwrap().unwrap();
        assert_eq!(back.get_str("Type"), Some("Text"));
        assert!(back.get("Title").is_none());
        assert_eq!(count(&s, "SELECT count(*) FROM FILE"), 2);
    }

    #[test]
    fn refresh_merges_update_replaces() {
        let mut s = mem();
        s.upsert(
            &Record::new("FILE", "u")
                .with("Title", "t")
                .with("Time-to-Live", "1"),
        )
        .unwrap();
        let mut refresh = Record::new("FILE", "u").with("Time-to-Live", "2");
        refresh.action = Some(Action::Refresh);
        s.upsert(&refresh).unwrap();
        let back = s.get(b"FILE", b"u").unwrap().unwrap();
        assert_eq!(
            back.get_str("Title"),
            Some("t"),
            "refresh keeps other columns"
        );
        assert_eq!(back.get_str("Time-to-Live"), Some("2"));
        // A refresh of an unknown URL inserts it.
        refresh.url = "v".into();
        s.upsert(&refresh).unwrap();
        assert_eq!(count(&s, "SELECT count(*) FROM FILE"), 2);
        let mut update = Record::new("FILE", "u").with("Time-to-Live", "3");
        update.action = Some(Action::Update);
        s.upsert(&update).unwrap();
        let back = s.get(b"FILE", b"u").unwrap().unwrap();
        assert!(back.get("Title").is_none(), "update replaces the row");
    }

    #[test]
    fn hostile_names_and_case_collisions() {
        let mut s = mem();
        let r = Record::new("soif_runs", "u")
            .with("url", "x")
            .with("Title", "1")
            .with("TITLE", "2")
            .with("a\"; DROP TABLE x; --", "3");
        s.upsert(&r).unwrap();
        let t = s.table(b"soif_runs").unwrap().clone();
        assert_eq!(t.table, "t_soif_runs");
        let cols: Vec<_> = t.columns.iter().map(|c| c.column.as_str()).collect();
        assert_eq!(cols, ["url_2", "Title", "TITLE_2", "a\"; DROP TABLE x; --"]);
        let back = s.get(b"soif_runs", b"u").unwrap().unwrap();
        assert_eq!(back.attributes, r.attributes);
        // Templates differing only in case get their own tables.
        s.upsert(&Record::new("file", "u")).unwrap();
        s.upsert(&Record::new("FILE", "u")).unwrap();
        assert_eq!(s.table(b"FILE").unwrap().table, "FILE_2");
    }

    #[test]
    fn blobs_lists_and_repeats() {
        let mut s = mem();
        let r = Record::new("FILE", "u")
            .with("Bin", Value::from(vec![0xff, 0x00, 0x41]))
            .with("Author", Value::List(vec!["A".into(), "B".into()]))
            .with("K", "1")
            .with("K", "2");
        s.upsert(&r).unwrap();
        let (bin, typ): (Vec<u8>, String) = s
            .connection()
            .query_row("SELECT Bin, typeof(Bin) FROM FILE", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(
            (bin.as_slice(), typ.as_str()),
            (&[0xff, 0x00, 0x41][..], "blob")
        );
        let (a, k): (String, String) = s
            .connection()
            .query_row("SELECT Author, K FROM FILE", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(a, r#"["A","B"]"#);
        assert_eq!(k, r#"["1","2"]"#);
    }

    #[test]
    fn collapsed_values_come_back_as_lists_and_parts() {
        let mut s = mem();
        let r = Record::new("FILE", "u")
            .with("Title", "[not json")
            .with(
                "Author",
                Value::List(vec!["Alan O. Freier".into(), Value::from(vec![0xe9u8])]),
            )
            .with(
                "Embed",
                Value::List(vec![Value::Object(vec![
                    Attribute::new("Type", "PostScript"),
                    Attribute::new("File-Size", "428233"),
                ])]),
            );
        s.upsert(&r).unwrap();
        let t = s.table(b"FILE").unwrap();
        let json: Vec<bool> = t.columns.iter().map(|c| c.json).collect();
        assert_eq!(json, [false, true, true]);
        let back = s.get(b"FILE", b"u").unwrap().unwrap();
        assert_eq!(back.attributes, r.attributes);
        let flat: Vec<_> = back
            .flattened()
            .attributes
            .iter()
            .map(|a| a.name_str().into_owned())
            .collect();
        assert_eq!(
            flat,
            [
                "Title",
                "Author-1",
                "Author-2",
                "Embed<1>-Type",
                "Embed<1>-File-Size"
            ]
        );
        // The flag is in the database, for other readers.
        assert_eq!(
            count(
                &s,
                "SELECT sum(json) FROM soif_columns WHERE table_name = 'FILE'"
            ),
            2
        );
        s.reload().unwrap();
        assert_eq!(
            s.get(b"FILE", b"u").unwrap().unwrap().attributes,
            r.attributes
        );
    }

    #[test]
    fn no_url_is_rejected() {
        let mut s = mem();
        let e = s.upsert(&Record::new("SCHEMA", "-")).unwrap_err();
        assert!(e.is_record_error());
        assert!(e.to_string().contains("no URL"), "{e}");
    }

    #[test]
    fn delete_and_remember() {
        let mut s = mem();
        s.upsert(&Record::new("FILE", "u").with("T", "x")).unwrap();
        assert_eq!(s.delete(Some(b"FILE"), b"u").unwrap(), 1);
        assert_eq!(s.delete(Some(b"FILE"), b"u").unwrap(), 0);
        assert_eq!(count(&s, "SELECT count(*) FROM soif_deletions"), 1);
        s.upsert(&Record::new("FILE", "u").with("T", "y")).unwrap();
        assert_eq!(count(&s, "SELECT count(*) FROM soif_deletions"), 0);
        assert_eq!(s.delete(None, b"u").unwrap(), 1);
        assert!(s.delete(Some(b"FILE"), b"-").unwrap_err().is_record_error());
    }

    #[test]
    fn schema_types_and_names() {
        let schema = SchemaColumns::from_record(
            &Record::new("SCHEMA", "-")
                .with("Schema-Name", "FILE")
                .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
                .with("SOIF-Attribute-1", "File-Size")
                .with("Data-Type-1", "int")
                .with("Column-Name-1", "size")
                .with("Table-Name-1", "files"),
        )
        .unwrap();
        let mut s = SqliteStore::open_in_memory(StoreOptions {
            schema: Some(schema),
            charset: Charset::Utf8,
            ..Default::default()
        })
        .unwrap();
        s.upsert(&Record::new("FILE", "u").with("File-Size", "164373"))
            .unwrap();
        let (v, t): (i64, String) = s
            .connection()
            .query_row("SELECT size, typeof(size) FROM files", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((v, t.as_str()), (164373, "integer"));
        let back = s.get(b"FILE", b"u").unwrap().unwrap();
        assert_eq!(back.get_str("File-Size"), Some("164373"));
    }

    #[test]
    fn two_stores_on_one_database_see_each_others_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        let mut a = SqliteStore::open(&path).unwrap();
        let mut b = SqliteStore::open(&path).unwrap();
        a.upsert(&Record::new("FILE", "u1").with("Title", "a"))
            .unwrap();
        // b has never seen FILE or Title: it must not try to create them again.
        b.upsert(
            &Record::new("FILE", "u2")
                .with("Title", "b")
                .with("Type", "T"),
        )
        .unwrap();
        a.upsert(&Record::new("FILE", "u3").with("Type", "c"))
            .unwrap();
        assert_eq!(a.table(b"FILE").unwrap().columns.len(), 2);
        assert_eq!(
            count(&a, "SELECT count(*) FROM FILE WHERE Type IS NOT NULL"),
            2
        );
        // A reader refreshes before listing.
        let mut c = SqliteStore::open(&path).unwrap();
        b.upsert(&Record::new("DOCUMENT", "d")).unwrap();
        assert!(c.table(b"DOCUMENT").is_none());
        assert!(c.refresh().unwrap());
        assert!(c.table(b"DOCUMENT").is_some());
        assert!(!c.refresh().unwrap());
    }

    #[test]
    fn new_databases_get_16k_pages_existing_ones_keep_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let pragma = |s: &SqliteStore, p: &str| -> i64 {
            s.connection()
                .query_row(&format!("PRAGMA {p}"), [], |r| r.get(0))
                .unwrap()
        };
        let s = SqliteStore::open(&dir.path().join("new.db")).unwrap();
        assert_eq!(pragma(&s, "page_size"), 16384);
        assert_eq!(pragma(&s, "wal_autocheckpoint"), 1024, "16 MiB of WAL");
        // A database made elsewhere with 4 KiB pages stays as it is.
        let old = dir.path().join("old.db");
        Connection::open(&old)
            .unwrap()
            .execute_batch("PRAGMA page_size = 4096; CREATE TABLE other (a)")
            .unwrap();
        let mut s = SqliteStore::open(&old).unwrap();
        assert_eq!(pragma(&s, "page_size"), 4096);
        assert_eq!(pragma(&s, "wal_autocheckpoint"), 4096);
        s.upsert(&Record::new("FILE", "u").with("T", "x")).unwrap();
        assert_eq!(count(&s, "SELECT count(*) FROM other"), 0);
    }

    #[test]
    fn a_batch_is_committed_at_its_row_count_or_its_size() {
        let mut sink = SqliteSink::new(mem(), 3, &[]).unwrap();
        let small = Record::new("FILE", "u1").with("T", "x");
        sink.write(&small).unwrap();
        sink.write(&small).unwrap();
        assert!(sink.store().in_transaction(), "2 of 3 rows: still open");
        sink.write(&small).unwrap();
        assert!(!sink.store().in_transaction(), "3 rows: committed");
        // One record of MAX_BATCH_BYTES ends its transaction however few rows it has.
        let mut big = Record::new("FILE", "u2").with("T", "x");
        big.raw = Some(Bytes::from(vec![b' '; MAX_BATCH_BYTES]));
        sink.write(&big).unwrap();
        assert!(!sink.store().in_transaction(), "the size committed it");
        sink.write(&small).unwrap();
        assert!(sink.store().in_transaction());
        // Without its bytes as read, a record is measured by its values.
        let mut parsed = Record::new("FILE", "u3");
        parsed.push("Full-Text", Bytes::from(vec![b'y'; MAX_BATCH_BYTES]));
        assert!(record_bytes(&parsed) > MAX_BATCH_BYTES);
        sink.write(&parsed).unwrap();
        assert!(!sink.store().in_transaction());
        sink.finish().unwrap();
        assert_eq!(count(sink.store(), "SELECT count(*) FROM FILE"), 3);
    }

    /// Space reserved ahead of a bulk load's file is given back at its end: the file
    /// takes no more disk than its size (where `fallocate` works, it took 64 MiB more
    /// while loading).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_bulk_load_gives_back_the_space_it_reserved() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        let mut sink = SqliteSink::open(&path, StoreOptions::default(), 100, &[]).unwrap();
        for i in 0..300 {
            sink.write(&Record::new("FILE", format!("u{i}")).with("T", "x".repeat(2000)))
                .unwrap();
        }
        let during = std::fs::metadata(&path).unwrap();
        eprintln!(
            "while loading: {} bytes, {} on disk",
            during.len(),
            during.blocks() * 512
        );
        sink.finish().unwrap();
        let after = std::fs::metadata(&path).unwrap();
        assert!(after.len() > 600_000, "{}", after.len());
        assert!(
            after.blocks() * 512 <= after.len() + (64 << 10),
            "{} bytes on disk for a file of {}",
            after.blocks() * 512,
            after.len()
        );
        assert_eq!(count(sink.store(), "SELECT count(*) FROM FILE"), 300);
        assert_eq!(
            sink.store()
                .connection()
                .query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
                .unwrap(),
            "ok"
        );
    }

    /// The writeback helper's descriptor of the database file stays open until the sink
    /// is dropped (after its connection): closing it while SQLite holds the write lock
    /// would drop that lock (see `Writeback::finish`).
    #[cfg(target_os = "linux")]
    #[test]
    fn the_writeback_descriptor_outlives_the_last_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        let descriptors = || {
            std::fs::read_dir("/proc/self/fd")
                .unwrap()
                .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|target| *target == path)
                .count()
        };
        let mut sink = SqliteSink::open(&path, StoreOptions::default(), 100, &[]).unwrap();
        sink.write(&Record::new("FILE", "u").with("T", "x"))
            .unwrap();
        let loading = descriptors();
        assert!(loading >= 2, "SQLite's and the helper's: {loading}");
        sink.finish().unwrap();
        assert_eq!(descriptors(), loading, "none closed by finish");
        drop(sink);
        assert_eq!(descriptors(), 0);
    }

    #[test]
    fn a_new_database_is_bulk_loaded_then_left_in_wal_mode() {
        let dir = tempfile::tempdir().unwrap();
        let text = |s: &SqliteStore, sql: &str| -> String {
            s.connection().query_row(sql, [], |r| r.get(0)).unwrap()
        };
        let num = |s: &SqliteStore, sql: &str| -> i64 {
            s.connection().query_row(sql, [], |r| r.get(0)).unwrap()
        };
        let path = dir.path().join("new.db");
        let mut sink = SqliteSink::open(&path, StoreOptions::default(), 2, &[]).unwrap();
        // While loading: a rollback journal, no syncs.
        assert_eq!(text(sink.store(), "PRAGMA journal_mode"), "truncate");
        assert_eq!(num(sink.store(), "PRAGMA synchronous"), 0);
        assert!(
            sink.writeback.is_some(),
            "committed pages are written out meanwhile"
        );
        for i in 0..5 {
            sink.write(&Record::new("FILE", format!("u{i}")).with("T", "x"))
                .unwrap();
        }
        sink.finish().unwrap();

        // Afterwards: durable, and in WAL mode like every other soif database.
        assert_eq!(text(sink.store(), "PRAGMA journal_mode"), "wal");
        assert_eq!(num(sink.store(), "PRAGMA synchronous"), 1);
        assert_eq!(num(sink.store(), "SELECT count(*) FROM FILE"), 5);
        assert_eq!(text(sink.store(), "SELECT status FROM soif_runs"), "ok");
        drop(sink);

        // An existing database (someone may be reading it) is written in WAL mode.
        let sink = SqliteSink::open(&path, StoreOptions::default(), 2, &[]).unwrap();
        assert_eq!(text(sink.store(), "PRAGMA journal_mode"), "wal");
        assert_eq!(num(sink.store(), "PRAGMA synchronous"), 1);
        assert!(sink.writeback.is_none());
    }

    #[test]
    fn a_database_being_bulk_loaded_can_be_opened_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        let mut sink = SqliteSink::open(&path, StoreOptions::default(), 1000, &[]).unwrap();
        // The loader is mid-batch: its transaction holds the write lock.
        sink.write(&Record::new("FILE", "u0").with("T", "x"))
            .unwrap();
        assert!(sink.store().in_transaction());
        let opener = {
            let path = path.clone();
            std::thread::spawn(move || SqliteStore::open(&path).map(|s| s.path().to_string()))
        };
        // The other process (the server) waits for the batch, then opens the database in
        // the loader's journal mode instead of failing to switch it to WAL.
        std::thread::sleep(Duration::from_millis(300));
        sink.finish().unwrap();
        let opened = opener.join().unwrap();
        assert!(opened.is_ok(), "{opened:?}");
        let s = SqliteStore::open(&path).unwrap();
        assert_eq!(count(&s, "SELECT count(*) FROM FILE"), 1);
    }

    #[test]
    fn merge_statements_follow_the_columns_present() {
        let mut s = mem();
        let refresh = |url: &'static str, attrs: &[(&str, &str)]| {
            let mut r = Record::new("FILE", url);
            for (n, v) in attrs {
                r.push(n, *v);
            }
            r.action = Some(Action::Refresh);
            r
        };
        s.upsert(
            &Record::new("FILE", "u")
                .with("A", "1")
                .with("B", "2")
                .with("C", "3"),
        )
        .unwrap();
        // Different column sets, each its own statement; a repeated set reuses one.
        for (attrs, want) in [
            (&[("B", "b")][..], ["1", "b", "3"]),
            (&[("A", "a"), ("C", "c")][..], ["a", "b", "c"]),
            (&[("B", "x"), ("B", "y")][..], ["a", r#"["x","y"]"#, "c"]),
            (&[("B", "z")][..], ["a", "z", "c"]),
        ] {
            s.upsert(&refresh("u", attrs)).unwrap();
            let got: (String, String, String) = s
                .connection()
                .query_row("SELECT A, B, C FROM FILE WHERE url = 'u'", [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .unwrap();
            assert_eq!([got.0, got.1, got.2], want.map(String::from));
        }
        // Only the URL: the row is left as it is.
        s.upsert(&refresh("u", &[])).unwrap();
        assert_eq!(
            s.get(b"FILE", b"u").unwrap().unwrap().get_str("A"),
            Some("a")
        );
        // More sets than the cache holds still write correctly.
        for i in 0..(MAX_MERGE_SQL + 5) {
            let mut r = refresh("v", &[("A", "1")]);
            r.push(&format!("N{i}"), "x");
            s.upsert(&r).unwrap();
        }
        let n = format!("N{}", MAX_MERGE_SQL + 4);
        assert_eq!(
            s.get(b"FILE", b"v").unwrap().unwrap().get_str(&n),
            Some("x")
        );
    }

    #[test]
    fn too_many_columns_is_a_record_error() {
        let mut s = mem();
        let mut r = Record::new("FILE", "u");
        for i in 0..=MAX_COLUMNS {
            r.push(&format!("A{i}"), "x");
        }
        let e = s.upsert(&r).unwrap_err();
        assert!(e.is_record_error(), "{e}");
        // The store goes on, and nothing of the rejected record was added.
        s.upsert(&Record::new("FILE", "v").with("B", "y")).unwrap();
        assert_eq!(s.table(b"FILE").unwrap().columns.len(), 1);
    }
}
