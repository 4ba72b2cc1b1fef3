//! Tables the server derives from the records — the keyword index ([`crate::fts`]) and
//! the facet tables ([`crate::facets`]) — and their rebuild after a loader wrote.
//!
//! Loaders do not know about them; every load is recorded in `soif_runs`, so each keeps
//! in `soif_meta` the summary of `soif_runs` ([`runs_summary`]) as of its last full build,
//! and is rebuilt when that summary has changed.

use crate::runs::runs_summary;
use crate::store::{SqliteStore, StoreError};
use crate::tables::{key_param, TableInfo};
use bytes::Bytes;
use rusqlite::{params, Connection, OptionalExtension};
use soif_codecs::Record;

/// One derived structure: how it is cleared, what it reads of each table, how a record
/// is added to it.
pub(crate) struct Derived {
    /// Its `soif_meta` key (the `soif_runs` summary of its last full build).
    pub(crate) meta_key: &'static str,
    /// What it is, for error messages ("the keyword index").
    pub(crate) what: &'static str,
    /// SQL that empties it.
    pub(crate) clear: &'static str,
    /// Records per transaction while rebuilding.
    pub(crate) chunk: usize,
    /// The columns of a table it reads.
    pub(crate) columns: fn(&TableInfo) -> TableInfo,
    /// Takes a record out (by template and URL), then adds one: another process serving
    /// the same catalog may have added a record between two chunks.
    pub(crate) remove: fn(&Connection, &[u8], &[u8]) -> rusqlite::Result<()>,
    pub(crate) add: fn(&Connection, &Record) -> rusqlite::Result<()>,
}

/// The `soif_runs` summary stored under `key` at the last full build.
pub(crate) fn built_summary(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT value FROM soif_meta WHERE key = ?1", [key], |r| {
        r.get(0)
    })
    .optional()
}

/// Rebuilds `d` in transactions of `d.chunk` records, so that a loader waiting for
/// SQLite's write lock gets it between them (it waits 30 s at most). The summary stored
/// at the end is the one read at the start: whatever a loader writes meanwhile makes the
/// next check rebuild again. A rebuild deletes the summary first and writes it last, so
/// an interrupted rebuild is redone (and readers can tell a complete build).
pub(crate) fn rebuild(writer: &mut SqliteStore, d: &Derived) -> Result<(), StoreError> {
    writer.begin()?;
    let conn = writer.connection();
    let summary = runs_summary(conn).map_err(|e| writer.err("reading soif_runs", e))?;
    if built_summary(conn, d.meta_key)
        .map_err(|e| writer.err("reading soif_meta", e))?
        .as_deref()
        == Some(&summary)
    {
        return writer.commit();
    }
    conn.execute_batch(d.clear)
        .map_err(|e| writer.err(&format!("clearing {}", d.what), e))?;
    conn.execute("DELETE FROM soif_meta WHERE key = ?1", [d.meta_key])
        .map_err(|e| writer.err("writing soif_meta", e))?;
    let tables = writer.tables();
    writer.commit()?;
    for table in tables {
        let table = (d.columns)(&table);
        // The url (the primary key, so an index walk) is the cursor from one chunk to
        // the next.
        let first = format!("{} ORDER BY \"url\" LIMIT {}", table.select_sql(), d.chunk);
        let next = format!(
            "{} WHERE \"url\" > ?1 ORDER BY \"url\" LIMIT {}",
            table.select_sql(),
            d.chunk
        );
        let mut after: Option<Bytes> = None;
        loop {
            writer.begin()?;
            let n = chunk(writer.connection(), d, &table, &first, &next, &mut after)
                .map_err(|e| writer.err(&format!("rebuilding {}", d.what), e))?;
            writer.commit()?;
            if n < d.chunk {
                break;
            }
        }
    }
    writer.begin()?;
    writer
        .connection()
        .execute(
            "INSERT OR REPLACE INTO soif_meta (key, value) VALUES (?1, ?2)",
            params![d.meta_key, summary],
        )
        .map_err(|e| writer.err("writing soif_meta", e))?;
    writer.commit()
}

/// Adds the next chunk of `table` after the URL `after` (updated); returns how many.
fn chunk(
    conn: &Connection,
    d: &Derived,
    table: &TableInfo,
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
        (d.remove)(conn, &record.template, &record.url)?;
        (d.add)(conn, &record)?;
        *after = Some(record.url);
        n += 1;
    }
    Ok(n)
}
