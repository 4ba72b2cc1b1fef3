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

use crate::runs::runs_summary;
use crate::store::{SqliteStore, StoreError};
use crate::tables::{key_param, value_bytes};
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
    conn.query_row(
        "SELECT value FROM soif_meta WHERE key = ?1",
        [FTS_RUNS_KEY],
        |r| r.get(0),
    )
    .optional()
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
    writer.begin()?;
    let conn = writer.connection();
    let summary = runs_summary(conn).map_err(|e| writer.err("reading soif_runs", e))?;
    if indexed_summary(conn)
        .map_err(|e| writer.err("reading soif_meta", e))?
        .as_deref()
        == Some(&summary)
    {
        return writer.commit();
    }
    conn.execute_batch("DELETE FROM soif_fts; DELETE FROM soif_fts_keys;")
        .map_err(|e| writer.err("clearing the keyword index", e))?;
    conn.execute("DELETE FROM soif_meta WHERE key = ?1", [FTS_RUNS_KEY])
        .map_err(|e| writer.err("writing soif_meta", e))?;
    let tables = writer.tables();
    writer.commit()?;
    for table in tables {
        // The url (the primary key, so an index walk) is the cursor from one chunk to
        // the next.
        let first = format!(
            "{} ORDER BY \"url\" LIMIT {INDEX_CHUNK}",
            table.select_sql()
        );
        let next = format!(
            "{} WHERE \"url\" > ?1 ORDER BY \"url\" LIMIT {INDEX_CHUNK}",
            table.select_sql()
        );
        let mut after: Option<Bytes> = None;
        loop {
            writer.begin()?;
            let n = index_chunk(writer.connection(), &table, &first, &next, &mut after)
                .map_err(|e| writer.err("rebuilding the keyword index", e))?;
            writer.commit()?;
            if n < INDEX_CHUNK {
                break;
            }
        }
    }
    writer.begin()?;
    writer
        .connection()
        .execute(
            "INSERT OR REPLACE INTO soif_meta (key, value) VALUES (?1, ?2)",
            params![FTS_RUNS_KEY, summary],
        )
        .map_err(|e| writer.err("writing soif_meta", e))?;
    writer.commit()
}

/// Indexes the next chunk of `table` after the URL `after` (updated); returns how many.
fn index_chunk(
    conn: &Connection,
    table: &crate::TableInfo,
    first: &str,
    next: &str,
    after: &mut Option<Bytes>,
) -> rusqlite::Result<usize> {
    let mut st = conn.prepare(if after.is_some() { next } else { first })?;
    let mut rows = match after.as_deref() {
        Some(url) => st.query([key_param(url)])?,
        None => st.query([])?,
    };
    let mut n = 0;
    while let Some(row) = rows.next()? {
        let record = table.record_from_row(row)?;
        remove(conn, &record.template, &record.url)?;
        insert(conn, &record)?;
        *after = Some(record.url);
        n += 1;
    }
    Ok(n)
}

/// A hit's template and URL from a [`SEARCH_SQL`] row.
pub fn hit_key(row: &rusqlite::Row<'_>) -> rusqlite::Result<(Bytes, Bytes, f64)> {
    Ok((
        value_bytes(row.get_ref(0)?),
        value_bytes(row.get_ref(1)?),
        row.get(2)?,
    ))
}
