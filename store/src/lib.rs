//! soif catalog: the SQLite catalog store that the `sqlite` sink writes and `soif serve`
//! reads and writes (RDM, OAI-PMH).
//!
//! One database per catalog, in the layout below (`docs/sqlite-layout.md` says the same
//! with examples and the reasons). The crate is split by concern:
//!
//! - [`tables`]: the `soif_*` tables, the layout version and the upgrades of older
//!   databases, table and column naming, [`TableInfo`] (rows back into records);
//! - [`schema`]: what an RDM `@SCHEMA` gives the layout (column types and names);
//! - [`store`]: [`SqliteStore`] — opening, transactions, the template/column map kept in
//!   step with other connections;
//! - [`write`]: upserts (replace or merge) and deletions, one record at a time;
//! - [`load`]: [`Loader`], a whole load in batched transactions (a new database in bulk),
//!   what the `sqlite` sink is;
//! - [`read`]: reading records back, and scanning in key order page by page;
//! - [`fts`]: the keyword index (FTS5) the RDM server's keyword language uses;
//! - [`facets`]: counts by template, `Type`, year and host, and the narrowed lists, for
//!   the server's browse and search pages;
//! - [`runs`]: `soif_runs`, one row per load;
//! - [`datestamps`]: when each record last changed (or was deleted), for OAI-PMH;
//!
//! Values become text, JSON and XML under the record rules of
//! [`soif_codecs::rules::text`], the policy every text output shares.
//!
//! # Layout (version 3)
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
//! rejected, since they cannot be keyed), `soif_datestamp` (when the row last changed,
//! see [`datestamps`]), `soif_created` (when it was created: its first datestamp), then
//! one column per attribute name, added with
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
//! - `soif_meta(key TEXT PRIMARY KEY, value TEXT)`: `layout_version` = `2` (a database
//!   of version 1 is upgraded when opened for writing, see [`tables`]).
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
//!   finds the run still `running` with no loader alive, see [`load::LoaderLock`]); the counts
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
//! It then writes with a rollback journal and `synchronous = OFF` ([`StoreOptions::bulk`](store::StoreOptions::bulk))
//! and, at the end, makes one synced commit (the one that marks the run `ok`) and switches
//! the database to WAL mode for everything after.
//!
//! Why: in WAL mode every page is written twice, once to the WAL and once more when it is
//! checkpointed into the database; appending to a new database with a rollback journal
//! writes each new page once (the journal only keeps the few pages that existed before
//! the transaction). On generated Harvest data (8 KB records) this loads about twice as
//! fast (docs/performance.md).
//!
//! During a bulk load a helper thread syncs the file after each commit (see [`load`]),
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
//! use soif_store::SqliteStore;
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

pub mod datestamps;
mod derived;
pub mod facets;
pub mod fts;
pub mod load;
pub mod read;
pub mod runs;
pub mod schema;
pub mod store;
mod table_cache;
pub mod tables;
mod upsert_stmt;
pub mod write;

pub use load::{Loader, LoaderLock, DEFAULT_BATCH_ROWS, MAX_BATCH_BYTES};
pub use runs::{RunCounts, RunSummary};
pub use schema::{sql_type_for, SchemaColumns};
pub use store::{SqliteStore, StoreError, StoreOptions};
pub use tables::{quote_ident, ColumnInfo, TableInfo, TABLES_VERSION};
pub use write::UpsertMode;

#[cfg(test)]
mod tests;
