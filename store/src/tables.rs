//! The tables: the `soif_*` tables, their version and the upgrades of databases
//! written by older versions, how templates and attributes are named as tables and
//! columns, and [`TableInfo`], which turns a table's rows back into records.

use bytes::Bytes;
use rusqlite::types::{ToSqlOutput, ValueRef};
use soif_codecs::rules::text::from_json;
use soif_codecs::{Attribute, Record, Value};
use std::collections::{HashMap, HashSet};

/// Maps looked up for every attribute of every record (attribute → column, template →
/// table): foldhash rather than SipHash took 6 % off the instructions of a load of
/// summary records (callgrind). Their size is bounded (columns per table, tables per
/// store), so foldhash's weaker flooding resistance cannot make them grow without bound.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The version of the tables, stored in `soif_meta` as `layout_version`.
pub const TABLES_VERSION: i64 = 3;

/// The column of every record table that holds the row's datestamp. Attribute columns
/// never take this name (an attribute of that name gets `soif_datestamp_2`).
pub const DATESTAMP_COLUMN: &str = "soif_datestamp";

/// The column of every record table that holds when the row was created (its first
/// datestamp; layout version 3). Attribute columns never take this name either.
pub const CREATED_COLUMN: &str = "soif_created";

/// SQLite's default `SQLITE_MAX_COLUMN`: columns per table.
pub(crate) const SQLITE_MAX_COLUMN: usize = 2000;

/// Attribute columns per table: SQLite's limit less `url`, the datestamp and the
/// creation time.
pub(crate) const MAX_COLUMNS: usize = SQLITE_MAX_COLUMN - 3;

/// Distinct templates (tables) one store will create; beyond that a record is rejected
/// rather than letting a stream of made-up templates grow the schema without bound.
pub(crate) const MAX_TABLES: usize = 10_000;

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

pub fn value_bytes(v: ValueRef<'_>) -> Bytes {
    match v {
        ValueRef::Null => Bytes::new(),
        ValueRef::Integer(i) => Bytes::from(i.to_string()),
        ValueRef::Real(f) => Bytes::from(f.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Bytes::copy_from_slice(t),
    }
}

/// An SQL identifier in double quotes (`"` doubled), safe for any name.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A name from bytes: lossy UTF-8, NUL (which SQLite identifiers cannot hold) as `_`.
pub(crate) fn ident_text(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes).replace('\0', "_");
    if s.is_empty() {
        "_".to_string()
    } else {
        s
    }
}

/// `base`, or `base_2`, `base_3`, … — the first whose lower case is not in `used`.
pub(crate) fn unique_name(base: &str, used: &HashSet<String>) -> String {
    if !used.contains(&base.to_ascii_lowercase()) {
        return base.to_string();
    }
    (2u64..)
        .map(|n| format!("{base}_{n}"))
        .find(|c| !used.contains(&c.to_ascii_lowercase()))
        .unwrap_or_else(|| base.to_string())
}

/// A key (template, attribute, url) as an SQL value: TEXT when UTF-8, else BLOB.
pub fn key_param(b: &[u8]) -> ToSqlOutput<'_> {
    match std::str::from_utf8(b) {
        Ok(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        Err(_) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
    }
}

pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub(crate) const CREATE_META: &str = "
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
INSERT OR IGNORE INTO soif_meta (key, value) VALUES ('layout_version', '3');
";

/// Upgrades a database of layout version `from` to [`TABLES_VERSION`], inside the open
/// write transaction.
///
/// 1 → 2: every record table gets the `soif_datestamp` column (see
/// [`crate::datestamps`]). What the rows held before is unknown, so each row's datestamp
/// is the latest time the database itself records for its table: the end (or start) of
/// the latest load, or the table's creation when no load is recorded (tables made by RDM
/// submissions). Later writes set it exactly. An attribute column that already bears the
/// name (made by a version that did not reserve it) is renamed `soif_datestamp_2`,
/// `_3`, … first, in the table and in `soif_columns`.
///
/// 2 → 3: every record table gets the `soif_created` column, `NULL` in the rows there
/// are (when they were created is unknown); rows created later have it. An attribute
/// column of that name is renamed first, as above.
pub(crate) fn upgrade(conn: &rusqlite::Connection, from: i64) -> rusqlite::Result<()> {
    if from < 2 {
        let tables: Vec<(String, String)> = conn
            .prepare("SELECT table_name, created FROM soif_tables ORDER BY rowid")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let latest_run: Option<String> = conn.query_row(
            "SELECT max(coalesce(finished, started)) FROM soif_runs",
            [],
            |r| r.get(0),
        )?;
        for (table, created) in tables {
            let t = quote_ident(&table);
            add_reserved_column(conn, &table, DATESTAMP_COLUMN)?;
            let stamp = match &latest_run {
                Some(run) if *run > created => run.clone(),
                _ => created,
            };
            conn.execute(
                &format!("UPDATE {t} SET {} = ?1", quote_ident(DATESTAMP_COLUMN)),
                [stamp],
            )?;
        }
    }
    if from < 3 {
        let tables: Vec<String> = conn
            .prepare("SELECT table_name FROM soif_tables ORDER BY rowid")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for table in tables {
            add_reserved_column(conn, &table, CREATED_COLUMN)?;
        }
    }
    conn.execute(
        "UPDATE soif_meta SET value = ?1 WHERE key = 'layout_version'",
        [TABLES_VERSION.to_string()],
    )?;
    Ok(())
}

/// Adds the `TEXT` column `name` to `table`, renaming an attribute column that bears the
/// name first (`NAME_2`, `_3`, …, in the table and in `soif_columns`).
fn add_reserved_column(
    conn: &rusqlite::Connection,
    table: &str,
    name: &str,
) -> rusqlite::Result<()> {
    let t = quote_ident(table);
    let mut used = HashSet::new();
    for column in conn
        .prepare(&format!(
            "SELECT name FROM pragma_table_info({})",
            quote_literal(table)
        ))?
        .query_map([], |r| r.get::<_, String>(0))?
    {
        used.insert(column?.to_ascii_lowercase());
    }
    if used.contains(name) {
        let renamed = unique_name(name, &used);
        conn.execute_batch(&format!(
            "ALTER TABLE {t} RENAME COLUMN {} TO {}",
            quote_ident(name),
            quote_ident(&renamed)
        ))?;
        conn.execute(
            "UPDATE soif_columns SET column_name = ?2 WHERE table_name = ?1 AND lower(column_name) = ?3",
            rusqlite::params![table, renamed, name],
        )?;
    }
    conn.execute_batch(&format!(
        "ALTER TABLE {t} ADD COLUMN {} TEXT",
        quote_ident(name)
    ))
}

/// An SQL string literal (`'` doubled).
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}
