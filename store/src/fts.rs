//! The keyword index: SQLite FTS5 in the catalog, for the RDM keyword language of
//! `soif serve`.
//!
//! Two tables the server owns (the `soif_` prefix keeps them apart from record tables):
//! `soif_fts_keys(id INTEGER PRIMARY KEY, template, url, UNIQUE(template, url))` and the
//! FTS5 table `soif_fts(body)` whose rowid is `soif_fts_keys.id`; `body` is the record's
//! URL and every value, one per line, decoded as UTF-8 (lossily). Submissions update it
//! in the transaction that writes the records ([`remove`], [`insert`]). Loaders do not
//! know about it; every load is recorded in `soif_runs`, so the index keeps a summary of
//! `soif_runs` as of its last full build in `soif_meta` (key [`FTS_RUNS_KEY`]) and is
//! rebuilt ([`rebuild`]) when the summary has changed, in transactions of
//! [`INDEX_CHUNK`] records so that loaders are not locked out.

use crate::derived::{self, Derived};
use crate::store::{SqliteStore, StoreError};
use crate::tables::{key_param, value_bytes, TableInfo};
use bytes::Bytes;
use rusqlite::{params, Connection, OptionalExtension};
use soif_codecs::Record;

/// Records indexed per transaction when the keyword index is rebuilt.
pub const INDEX_CHUNK: usize = 2000;

/// The `soif_meta` key holding the `soif_runs` summary of the last index build.
pub const FTS_RUNS_KEY: &str = "fts_runs";

/// The index's tables (created by the server when it opens a catalog for writing).
pub const CREATE_FTS: &str = "
CREATE TABLE IF NOT EXISTS soif_fts_keys (
    id INTEGER PRIMARY KEY,
    template TEXT NOT NULL,
    url TEXT NOT NULL,
    UNIQUE (template, url)
);
CREATE VIRTUAL TABLE IF NOT EXISTS soif_fts USING fts5(body, tokenize = 'unicode61');
";

/// The hits of an FTS5 query `?1`, best first, at most `?2`: `template, url, rank` (bm25,
/// negative, more negative is better). FTS5 ranks with a bounded heap under the `LIMIT`.
pub const SEARCH_SQL: &str = "SELECT k.template, k.url, f.rank FROM
   (SELECT rowid, rank FROM soif_fts WHERE soif_fts MATCH ?1
    ORDER BY rank LIMIT ?2) f
 JOIN soif_fts_keys k ON k.id = f.rowid ORDER BY f.rank";

/// The text indexed for a record: its URL and every value, lossily decoded.
pub fn index_body(record: &Record) -> String {
    let mut body = String::from_utf8_lossy(&record.url).into_owned();
    for a in &record.attributes {
        for leaf in a.value.leaves() {
            body.push('\n');
            body.push_str(&String::from_utf8_lossy(leaf));
        }
    }
    body
}

/// Takes a record out of the index (nothing when it is not in it).
pub fn remove(conn: &Connection, template: &[u8], url: &[u8]) -> rusqlite::Result<()> {
    let id: Option<i64> = conn
        .prepare_cached("SELECT id FROM soif_fts_keys WHERE template = ?1 AND url = ?2")?
        .query_row(params![key_param(template), key_param(url)], |r| r.get(0))
        .optional()?;
    if let Some(id) = id {
        conn.prepare_cached("DELETE FROM soif_fts WHERE rowid = ?1")?
            .execute([id])?;
        conn.prepare_cached("DELETE FROM soif_fts_keys WHERE id = ?1")?
            .execute([id])?;
    }
    Ok(())
}

/// Adds a record to the index (call [`remove`] first if it may be there).
pub fn insert(conn: &Connection, record: &Record) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO soif_fts_keys (template, url) VALUES (?1, ?2)")?
        .execute(params![key_param(&record.template), key_param(&record.url)])?;
    let id = conn.last_insert_rowid();
    conn.prepare_cached("INSERT INTO soif_fts (rowid, body) VALUES (?1, ?2)")?
        .execute(params![id, index_body(record)])?;
    Ok(())
}

/// The `soif_runs` summary the index was last fully built at.
pub fn indexed_summary(conn: &Connection) -> rusqlite::Result<Option<String>> {
    derived::built_summary(conn, FTS_RUNS_KEY)
}

/// Whether the database has the index's tables.
pub fn has_index(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'soif_fts')",
        [],
        |r| r.get(0),
    )
}

/// Rebuilds the index in transactions of [`INDEX_CHUNK`] records, so that a loader
/// waiting for SQLite's write lock gets it between them (it waits 30 s at most). The
/// summary stored at the end is the one read at the start: whatever a loader writes
/// meanwhile makes the next check rebuild again. A rebuild deletes the summary first and
/// writes it last, so an interrupted rebuild is redone.
pub fn rebuild(writer: &mut SqliteStore) -> Result<(), StoreError> {
    derived::rebuild(
        writer,
        &Derived {
            meta_key: FTS_RUNS_KEY,
            what: "the keyword index",
            clear: "DELETE FROM soif_fts; DELETE FROM soif_fts_keys;",
            chunk: INDEX_CHUNK,
            columns: TableInfo::clone,
            remove,
            add: insert,
        },
    )
}

/// A hit's template and URL from a [`SEARCH_SQL`] row.
pub fn hit_key(row: &rusqlite::Row<'_>) -> rusqlite::Result<(Bytes, Bytes, f64)> {
    Ok((
        value_bytes(row.get_ref(0)?),
        value_bytes(row.get_ref(1)?),
        row.get(2)?,
    ))
}
