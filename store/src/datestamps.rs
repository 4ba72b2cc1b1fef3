//! Datestamps: when each record last changed in the catalog, for OAI-PMH harvesters
//! (layout version 2), and whether that change was its creation, for ResourceSync's
//! change lists (version 3).
//!
//! Every record table has a `soif_datestamp` column (`YYYY-MM-DDThh:mm:ssZ`, UTC, the
//! same text as the layout's other times, so that text order is time order). An upsert
//! sets it to the time of the write when the row is new or one of its values changed,
//! and leaves it otherwise (loading the same input again changes no datestamp). A
//! deletion's time is `soif_deletions.deleted`; a record deleted and loaded again leaves
//! `soif_deletions` and is live again, with the time of that load. `soif_created` is the
//! time of the write that inserted the row (the same parameter as the datestamp), left
//! by later writes: a row whose two times are equal was new at its datestamp
//! ([`latest`]'s [`Change::created`]).
//!
//! The listing here is what the OAI-PMH list verbs need, and holds one page at a time:
//! records and deletions of a template come in URL order (live rows and deletions merged:
//! a URL is in one or the other), templates in byte order, and [`page`] starts after a
//! position `(template, url)`. That order does not depend on the datestamps, so a
//! harvest that resumes from a position while a load runs skips no record that existed
//! throughout (one that changed may come twice).
//!
//! ```
//! use soif_store::datestamps::{page, Window};
//! use soif_store::SqliteStore;
//! use soif_codecs::Record;
//! let mut store = SqliteStore::open_in_memory(Default::default()).unwrap();
//! store.upsert(&Record::new("FILE", "http://a/").with("Title", "A")).unwrap();
//! store.delete(Some(b"FILE"), b"http://b/").unwrap();
//! let entries = page(&store, None, &Window::default(), None, 10, true).unwrap();
//! assert_eq!(entries.len(), 2);
//! assert!(!entries[0].deleted && entries[1].deleted);
//! assert_eq!(entries[0].datestamp.len(), "2026-11-24T08:00:00Z".len());
//! ```

use crate::store::{SqliteStore, StoreError};
use crate::tables::{key_param, quote_ident, quote_literal, value_bytes, TableInfo};
use bytes::Bytes;
use rusqlite::types::ToSqlOutput;
use rusqlite::OptionalExtension;
use soif_codecs::Record;

use crate::tables::{CREATED_COLUMN, DATESTAMP_COLUMN};

/// Inclusive bounds on datestamps (`YYYY-MM-DDThh:mm:ssZ`); `None` is open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    pub from: Option<String>,
    pub until: Option<String>,
}

/// One record or deletion, as a harvester sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub template: Bytes,
    pub url: Bytes,
    pub datestamp: String,
    pub deleted: bool,
    /// The record, when asked for and not deleted.
    pub record: Option<Record>,
}

/// The SQL expression of a table's datestamp: the column, or, in a database of layout
/// version 1 served read-only (not upgraded), the table's creation time.
fn datestamp_expr(store: &SqliteStore, table: &TableInfo) -> String {
    if store.tables_version() >= 2 {
        quote_ident(DATESTAMP_COLUMN)
    } else {
        format!(
            "(SELECT created FROM soif_tables WHERE table_name = {})",
            quote_literal(&table.table)
        )
    }
}

/// Every template with records or deletions, in byte order (the sets of OAI-PMH).
pub fn templates(store: &SqliteStore) -> Result<Vec<Bytes>, StoreError> {
    let mut out: Vec<Bytes> = store.tables().into_iter().map(|t| t.template).collect();
    let conn = store.connection();
    let mut st = conn
        .prepare("SELECT DISTINCT template FROM soif_deletions")
        .map_err(|e| store.err("reading soif_deletions", e))?;
    let mut rows = st
        .query([])
        .map_err(|e| store.err("reading soif_deletions", e))?;
    while let Some(r) = rows
        .next()
        .map_err(|e| store.err("reading soif_deletions", e))?
    {
        let t = value_bytes(
            r.get_ref(0)
                .map_err(|e| store.err("reading soif_deletions", e))?,
        );
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out.sort();
    Ok(out)
}

/// The `WHERE` conditions on a datestamp expression for a window, binding `?2` / `?3`.
fn window_sql(expr: &str) -> String {
    format!("(?2 IS NULL OR {expr} >= ?2) AND (?3 IS NULL OR {expr} <= ?3)")
}

/// Up to `n` entries after `after` (a `(template, url)` position; `None` from the start),
/// in `set` (a template) or all, within `window`; with `records`, each live entry carries
/// its record.
pub fn page(
    store: &SqliteStore,
    set: Option<&[u8]>,
    window: &Window,
    after: Option<(&[u8], &[u8])>,
    n: usize,
    records: bool,
) -> Result<Vec<Entry>, StoreError> {
    let mut out = Vec::new();
    for template in templates(store)? {
        if out.len() >= n {
            break;
        }
        if set.is_some_and(|s| s != template.as_ref()) {
            continue;
        }
        let cursor = match after {
            Some((t, _)) if template.as_ref() < t => continue,
            Some((t, u)) if template.as_ref() == t => Some(u),
            _ => None,
        };
        page_of(
            store,
            &template,
            window,
            cursor,
            n - out.len(),
            records,
            &mut out,
        )?;
    }
    Ok(out)
}

fn page_of(
    store: &SqliteStore,
    template: &Bytes,
    window: &Window,
    after: Option<&[u8]>,
    n: usize,
    records: bool,
    out: &mut Vec<Entry>,
) -> Result<(), StoreError> {
    let table = store.table(template);
    let after_sql = if after.is_some() {
        "url > ?1 AND "
    } else {
        "?1 IS NULL AND "
    };
    let mut sql = String::new();
    if let Some(t) = table {
        let expr = datestamp_expr(store, t);
        sql.push_str(&format!(
            "SELECT url, {expr}, 0 FROM {} WHERE {after_sql}{} UNION ALL ",
            quote_ident(&t.table),
            window_sql(&expr)
        ));
    }
    sql.push_str(&format!(
        "SELECT url, deleted, 1 FROM soif_deletions WHERE template = ?4 AND {after_sql}{} \
         ORDER BY 1 LIMIT ?5",
        window_sql("deleted")
    ));
    let context = "listing records by datestamp";
    let conn = store.connection();
    let mut st = conn
        .prepare_cached(&sql)
        .map_err(|e| store.err(context, e))?;
    let limit = i64::try_from(n).unwrap_or(i64::MAX);
    let cursor: ToSqlOutput<'_> = match after {
        Some(u) => key_param(u),
        None => ToSqlOutput::Owned(rusqlite::types::Value::Null),
    };
    let mut rows = st
        .query(rusqlite::params![
            cursor,
            window.from,
            window.until,
            key_param(template),
            limit
        ])
        .map_err(|e| store.err(context, e))?;
    let mut keys = Vec::new();
    while let Some(r) = rows.next().map_err(|e| store.err(context, e))? {
        let url = value_bytes(r.get_ref(0).map_err(|e| store.err(context, e))?);
        let datestamp: String = r.get(1).map_err(|e| store.err(context, e))?;
        let deleted: bool = r.get(2).map_err(|e| store.err(context, e))?;
        keys.push((url, datestamp, deleted));
    }
    drop(rows);
    for (url, datestamp, deleted) in keys {
        let record = if records && !deleted {
            store.get(template, &url)?
        } else {
            None
        };
        out.push(Entry {
            template: template.clone(),
            url,
            datestamp,
            deleted,
            record,
        });
    }
    Ok(())
}

/// How many entries [`page`] would give in all for `set` and `window` (a scan of each
/// table: call it once per list, not per page).
pub fn count(store: &SqliteStore, set: Option<&[u8]>, window: &Window) -> Result<u64, StoreError> {
    let conn = store.connection();
    let mut total = 0i64;
    for template in templates(store)? {
        if set.is_some_and(|s| s != template.as_ref()) {
            continue;
        }
        let mut sql = String::from("SELECT ");
        if let Some(t) = store.table(&template) {
            let expr = datestamp_expr(store, t);
            sql.push_str(&format!(
                "(SELECT count(*) FROM {} WHERE ?1 IS NULL AND {}) + ",
                quote_ident(&t.table),
                window_sql(&expr)
            ));
        }
        sql.push_str(&format!(
            "(SELECT count(*) FROM soif_deletions WHERE template = ?4 AND ?1 IS NULL AND {})",
            window_sql("deleted")
        ));
        let n: i64 = conn
            .query_row(
                &sql,
                rusqlite::params![
                    rusqlite::types::Value::Null,
                    window.from,
                    window.until,
                    key_param(&template)
                ],
                |r| r.get(0),
            )
            .map_err(|e| store.err("counting records", e))?;
        total += n;
    }
    Ok(u64::try_from(total).unwrap_or(0))
}

/// One record or deletion by template and URL.
pub fn entry(
    store: &SqliteStore,
    template: &[u8],
    url: &[u8],
) -> Result<Option<Entry>, StoreError> {
    let conn = store.connection();
    if let Some(t) = store.table(template) {
        let sql = format!(
            "SELECT {} FROM {} WHERE url = ?1",
            datestamp_expr(store, t),
            quote_ident(&t.table)
        );
        let stamp: Option<String> = conn
            .query_row(&sql, [key_param(url)], |r| r.get(0))
            .optional()
            .map_err(|e| store.err("reading a datestamp", e))?;
        if let Some(datestamp) = stamp {
            return Ok(Some(Entry {
                template: Bytes::copy_from_slice(template),
                url: Bytes::copy_from_slice(url),
                datestamp,
                deleted: false,
                record: store.get(template, url)?,
            }));
        }
    }
    let deleted: Option<String> = conn
        .query_row(
            "SELECT deleted FROM soif_deletions WHERE template = ?1 AND url = ?2",
            [key_param(template), key_param(url)],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| store.err("reading soif_deletions", e))?;
    Ok(deleted.map(|datestamp| Entry {
        template: Bytes::copy_from_slice(template),
        url: Bytes::copy_from_slice(url),
        datestamp,
        deleted: true,
        record: None,
    }))
}

/// A lower bound of every datestamp in the catalog (OAI-PMH's `earliestDatestamp`): the
/// earliest table creation or deletion (a row's datestamp is never before its table's
/// creation), or `None` for an empty catalog. Cheap: no table is scanned.
pub fn earliest(store: &SqliteStore) -> Result<Option<String>, StoreError> {
    store
        .connection()
        .query_row(
            "SELECT min(t) FROM (SELECT min(created) AS t FROM soif_tables
                                UNION ALL SELECT min(deleted) FROM soif_deletions)",
            [],
            |r| r.get(0),
        )
        .map_err(|e| store.err("reading the earliest datestamp", e))
}

/// What a discovery listing (a sitemap, a ResourceSync resource or change list) holds:
/// the live records, or the live records and the deletions. Both come in the order of
/// [`page`] (templates in byte order, URLs in order within each), so a listing can be cut
/// into numbered parts: part `k` starts after the entry [`nth_key`] gives for `k × size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    Live,
    WithDeletions,
}

/// How many entries `listing` holds (a count of each table: once per request).
pub fn listing_count(store: &SqliteStore, listing: Listing) -> Result<u64, StoreError> {
    if listing == Listing::WithDeletions {
        return count(store, None, &Window::default());
    }
    let mut total = 0u64;
    for t in store.tables() {
        total += table_count(store, &t.table)?;
    }
    Ok(total)
}

/// `SELECT count(*) …` as a number.
fn count_of(store: &SqliteStore, sql: &str, template: &[u8]) -> Result<u64, StoreError> {
    let n: i64 = store
        .connection()
        .query_row(sql, [key_param(template)], |r| r.get(0))
        .map_err(|e| store.err("counting records", e))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The live records of a table.
fn table_count(store: &SqliteStore, table: &str) -> Result<u64, StoreError> {
    let sql = format!(
        "SELECT count(*) FROM {} WHERE ?1 IS NOT NULL",
        quote_ident(table)
    );
    count_of(store, &sql, b"")
}

/// The deletions of a template.
fn deletions_count(store: &SqliteStore, template: &[u8]) -> Result<u64, StoreError> {
    count_of(
        store,
        "SELECT count(*) FROM soif_deletions WHERE template = ?1",
        template,
    )
}

/// The `(template, url)` of the entry at position `n` (from 0) of `listing`, or `None`
/// past its end. Reading starts after the key of position `n - 1`: this is how a part of
/// a listing is found without reading the parts before it (SQLite steps over the URL
/// index, reading no record).
pub fn nth_key(
    store: &SqliteStore,
    listing: Listing,
    mut n: u64,
) -> Result<Option<(Bytes, Bytes)>, StoreError> {
    let context = "finding a listing's part";
    for template in templates(store)? {
        let table = store.table(&template);
        let live = match table {
            Some(t) => table_count(store, &t.table)?,
            None => 0,
        };
        let deleted = match listing {
            Listing::Live => 0,
            Listing::WithDeletions => deletions_count(store, &template)?,
        };
        if n >= live + deleted {
            n -= live + deleted;
            continue;
        }
        let mut sql = String::from("SELECT url FROM (");
        if let Some(t) = table {
            sql.push_str(&format!("SELECT url FROM {}", quote_ident(&t.table)));
            if listing == Listing::WithDeletions {
                sql.push_str(" UNION ALL ");
            }
        }
        if listing == Listing::WithDeletions {
            sql.push_str("SELECT url FROM soif_deletions WHERE template = ?2");
        } else {
            sql.push_str(" WHERE ?2 IS NOT NULL");
        }
        sql.push_str(") ORDER BY 1 LIMIT 1 OFFSET ?1");
        let offset = i64::try_from(n).unwrap_or(i64::MAX);
        let url = store
            .connection()
            .query_row(&sql, rusqlite::params![offset, key_param(&template)], |r| {
                Ok(value_bytes(r.get_ref(0)?))
            })
            .optional()
            .map_err(|e| store.err(context, e))?;
        return Ok(url.map(|u| (template, u)));
    }
    Ok(None)
}

/// Up to `n` entries of `listing` after `after` (a `(template, url)` position; `None`
/// from the start), without their records.
pub fn listing_page(
    store: &SqliteStore,
    listing: Listing,
    after: Option<(&[u8], &[u8])>,
    n: usize,
) -> Result<Vec<Entry>, StoreError> {
    if listing == Listing::WithDeletions {
        return page(store, None, &Window::default(), after, n, false);
    }
    let context = "listing records";
    let mut out = Vec::new();
    for template in templates(store)? {
        if out.len() >= n {
            break;
        }
        let Some(table) = store.table(&template) else {
            continue;
        };
        let cursor = match after {
            Some((t, _)) if template.as_ref() < t => continue,
            Some((t, u)) if template.as_ref() == t => Some(u),
            _ => None,
        };
        let sql = format!(
            "SELECT url, {} FROM {} {} ORDER BY url LIMIT ?2",
            datestamp_expr(store, table),
            quote_ident(&table.table),
            if cursor.is_some() {
                "WHERE url > ?1"
            } else {
                "WHERE ?1 IS NULL"
            }
        );
        let conn = store.connection();
        let mut st = conn
            .prepare_cached(&sql)
            .map_err(|e| store.err(context, e))?;
        let param: ToSqlOutput<'_> = match cursor {
            Some(u) => key_param(u),
            None => ToSqlOutput::Owned(rusqlite::types::Value::Null),
        };
        let limit = i64::try_from(n - out.len()).unwrap_or(i64::MAX);
        let mut rows = st
            .query(rusqlite::params![param, limit])
            .map_err(|e| store.err(context, e))?;
        while let Some(r) = rows.next().map_err(|e| store.err(context, e))? {
            out.push(Entry {
                template: template.clone(),
                url: value_bytes(r.get_ref(0).map_err(|e| store.err(context, e))?),
                datestamp: r.get(1).map_err(|e| store.err(context, e))?,
                deleted: false,
                record: None,
            });
        }
    }
    Ok(out)
}

/// One of the latest changes: a record or deletion, and whether the record's latest
/// change was its creation (the row was new then: created at its datestamp).
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub entry: Entry,
    pub created: bool,
}

/// The SQL expression, for a table, of whether each row was created at its datestamp:
/// `soif_created` (layout version 3) equal to the datestamp; false in a database of an
/// earlier version served read-only (not upgraded), and for rows the upgrade found
/// (`NULL`: when they were created is unknown).
fn created_expr(store: &SqliteStore) -> String {
    if store.tables_version() >= 3 {
        format!(
            "coalesce({} = {}, 0)",
            quote_ident(CREATED_COLUMN),
            quote_ident(DATESTAMP_COLUMN)
        )
    } else {
        "0".to_string()
    }
}

/// The latest `n` changes of the catalog — records by the time they last changed,
/// deletions by the time they were deleted — newest first (ties in template and URL
/// order), without their records. One read of every table, sorted by SQLite keeping
/// only the `n` newest.
pub fn latest(store: &SqliteStore, n: usize) -> Result<Vec<Change>, StoreError> {
    let context = "listing the latest changes";
    let tables = store.tables();
    let mut sql = String::new();
    for (i, t) in tables.iter().enumerate() {
        sql.push_str(&format!(
            "SELECT ?{} AS template, url, {} AS stamp, 0 AS deleted, {} AS created FROM {} \
             UNION ALL ",
            i + 2,
            datestamp_expr(store, t),
            created_expr(store),
            quote_ident(&t.table)
        ));
    }
    sql.push_str(
        "SELECT template, url, deleted AS stamp, 1 AS deleted, 0 AS created FROM soif_deletions \
         ORDER BY stamp DESC, template, url LIMIT ?1",
    );
    let conn = store.connection();
    let mut st = conn.prepare(&sql).map_err(|e| store.err(context, e))?;
    let limit = i64::try_from(n).unwrap_or(i64::MAX);
    let mut params: Vec<ToSqlOutput<'_>> = vec![ToSqlOutput::Owned(limit.into())];
    params.extend(tables.iter().map(|t| key_param(&t.template)));
    let mut rows = st
        .query(rusqlite::params_from_iter(params))
        .map_err(|e| store.err(context, e))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(|e| store.err(context, e))? {
        let get = |i| r.get_ref(i).map_err(|e| store.err(context, e));
        out.push(Change {
            entry: Entry {
                template: value_bytes(get(0)?),
                url: value_bytes(get(1)?),
                datestamp: r.get(2).map_err(|e| store.err(context, e))?,
                deleted: r.get(3).map_err(|e| store.err(context, e))?,
                record: None,
            },
            created: r.get(4).map_err(|e| store.err(context, e))?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{StoreOptions, TABLES_VERSION};

    /// FILE http://a/ and http://c/, DOC http://b/.
    fn three_records() -> SqliteStore {
        let mut store = SqliteStore::open_in_memory(StoreOptions::default()).unwrap();
        for (t, u) in [
            ("FILE", "http://a/"),
            ("FILE", "http://c/"),
            ("DOC", "http://b/"),
        ] {
            store.upsert(&Record::new(t, u).with("Title", "T")).unwrap();
        }
        store
    }

    #[test]
    fn listings_are_cut_into_parts_at_any_position() {
        let mut store = three_records();
        store.delete(Some(b"FILE"), b"http://b/").unwrap();
        store.delete(Some(b"GONE"), b"http://z/").unwrap();
        let keys = |l: Listing| -> Vec<(String, String)> {
            listing_page(&store, l, None, 100)
                .unwrap()
                .into_iter()
                .map(|e| {
                    assert!(e.record.is_none());
                    let s = |b: &Bytes| String::from_utf8(b.to_vec()).unwrap();
                    (s(&e.template), s(&e.url))
                })
                .collect()
        };
        let live = keys(Listing::Live);
        let all = keys(Listing::WithDeletions);
        assert_eq!(live.len(), 3);
        assert_eq!(all.len(), 5);
        assert_eq!(listing_count(&store, Listing::Live).unwrap(), 3);
        assert_eq!(listing_count(&store, Listing::WithDeletions).unwrap(), 5);
        for (listing, want) in [(Listing::Live, &live), (Listing::WithDeletions, &all)] {
            for (i, key) in want.iter().enumerate() {
                let (t, u) = nth_key(&store, listing, i as u64).unwrap().unwrap();
                assert_eq!(
                    (t.as_ref(), u.as_ref()),
                    (key.0.as_bytes(), key.1.as_bytes())
                );
                // The part after position i holds the rest, in order.
                let rest: Vec<_> = listing_page(&store, listing, Some((&t, &u)), 100)
                    .unwrap()
                    .into_iter()
                    .map(|e| e.url)
                    .collect();
                let expected: Vec<_> = want[i + 1..].iter().map(|k| k.1.clone()).collect();
                assert_eq!(rest, expected);
            }
            assert!(nth_key(&store, listing, want.len() as u64)
                .unwrap()
                .is_none());
        }
        assert!(live.iter().all(|k| k.1 != "http://b/" || k.0 == "DOC"));
    }

    #[test]
    fn the_latest_changes_come_newest_first() {
        let mut store = three_records();
        store.delete(Some(b"FILE"), b"http://c/").unwrap();
        set_stamp(&store, "FILE", "http://a/", "2001-01-01T00:00:00Z");
        set_stamp(&store, "DOC", "http://b/", "2003-01-01T00:00:00Z");
        store
            .connection()
            .execute(
                "UPDATE soif_deletions SET deleted = '2002-01-01T00:00:00Z'",
                [],
            )
            .unwrap();
        let all: Vec<Entry> = latest(&store, 10)
            .unwrap()
            .into_iter()
            .map(|c| c.entry)
            .collect();
        let got: Vec<_> = all
            .iter()
            .map(|e| (e.url.as_ref(), e.datestamp.as_str(), e.deleted))
            .collect();
        assert_eq!(
            got,
            [
                (&b"http://b/"[..], "2003-01-01T00:00:00Z", false),
                (b"http://c/", "2002-01-01T00:00:00Z", true),
                (b"http://a/", "2001-01-01T00:00:00Z", false),
            ]
        );
        assert_eq!(all[0].template.as_ref(), b"DOC");
        assert_eq!(latest(&store, 2).unwrap().len(), 2);
    }

    /// Each latest change's URL and whether it was a creation or a deletion.
    fn kinds(store: &SqliteStore) -> Vec<(String, &'static str)> {
        let mut out: Vec<_> = latest(store, 100)
            .unwrap()
            .into_iter()
            .map(|c| {
                let kind = match (c.entry.deleted, c.created) {
                    (true, _) => "deleted",
                    (false, true) => "created",
                    (false, false) => "updated",
                };
                (String::from_utf8(c.entry.url.to_vec()).unwrap(), kind)
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_change_is_a_creation_when_the_row_was_new_at_its_datestamp() {
        let mut store = three_records();
        let created = |u: &str| (u.to_string(), "created");
        assert_eq!(
            kinds(&store),
            [
                created("http://a/"),
                created("http://b/"),
                created("http://c/")
            ]
        );
        // Created in an earlier second, then changed: updated. Loaded again unchanged:
        // as it was.
        store
            .connection()
            .execute("UPDATE FILE SET soif_created = '2000-01-01T00:00:00Z'", [])
            .unwrap();
        store
            .upsert(&Record::new("FILE", "http://a/").with("Title", "changed"))
            .unwrap();
        store
            .upsert(&Record::new("FILE", "http://c/").with("Title", "T"))
            .unwrap();
        let created_c: String = store
            .connection()
            .query_row(
                "SELECT soif_created FROM FILE WHERE url = 'http://c/'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(created_c, "2000-01-01T00:00:00Z");
        // Deleted; deleted and loaded again: created again.
        store.delete(Some(b"DOC"), b"http://b/").unwrap();
        store.delete(Some(b"FILE"), b"http://c/").unwrap();
        store
            .upsert(&Record::new("FILE", "http://c/").with("Title", "back"))
            .unwrap();
        assert_eq!(
            kinds(&store),
            [
                ("http://a/".to_string(), "updated"),
                ("http://b/".to_string(), "deleted"),
                created("http://c/"),
            ]
        );
    }

    #[test]
    fn a_version_2_database_gets_creation_times_for_new_rows() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("v2.db");
        let mut s = SqliteStore::open(&db).unwrap();
        s.upsert(&Record::new("FILE", "http://old/").with("soif_created", "an attribute"))
            .unwrap();
        drop(s);
        // As version 2 wrote it: no soif_created column, an attribute of that name.
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "ALTER TABLE FILE DROP COLUMN soif_created;
             ALTER TABLE FILE RENAME COLUMN soif_created_2 TO soif_created;
             UPDATE soif_columns SET column_name = 'soif_created' WHERE column_name = 'soif_created_2';
             UPDATE soif_meta SET value = '2' WHERE key = 'layout_version';",
        )
        .unwrap();
        drop(conn);
        let read_only = SqliteStore::open_read_only(&db).unwrap();
        assert_eq!(read_only.tables_version(), 2);
        assert_eq!(kinds(&read_only), [("http://old/".to_string(), "updated")]);
        drop(read_only);
        let mut s = SqliteStore::open(&db).unwrap();
        assert_eq!(s.tables_version(), TABLES_VERSION);
        // The attribute kept its value under its new column name.
        let old = s.get(b"FILE", b"http://old/").unwrap().unwrap();
        assert_eq!(old.get_str("soif_created"), Some("an attribute"));
        s.upsert(&Record::new("FILE", "http://new/").with("Title", "new"))
            .unwrap();
        assert_eq!(
            kinds(&s),
            [
                ("http://new/".to_string(), "created"),
                ("http://old/".to_string(), "updated"),
            ]
        );
    }

    fn stamp_of(store: &SqliteStore, template: &[u8], url: &[u8]) -> Option<(String, bool)> {
        entry(store, template, url)
            .unwrap()
            .map(|e| (e.datestamp, e.deleted))
    }

    fn set_stamp(store: &SqliteStore, table: &str, url: &str, stamp: &str) {
        store
            .connection()
            .execute(
                &format!(
                    "UPDATE {} SET soif_datestamp = ?1 WHERE url = ?2",
                    quote_ident(table)
                ),
                [stamp, url],
            )
            .unwrap();
    }

    #[test]
    fn a_datestamp_changes_only_when_the_record_does() {
        let mut s = SqliteStore::open_in_memory(StoreOptions::default()).unwrap();
        let r = Record::new("FILE", "http://a/").with("Title", "A");
        s.upsert(&r).unwrap();
        let (first, deleted) = stamp_of(&s, b"FILE", b"http://a/").unwrap();
        assert!(!deleted);
        assert!(
            chrono::DateTime::parse_from_rfc3339(&first).is_ok(),
            "{first}"
        );
        // Pretend it was written long ago, then load the same record again: unchanged.
        set_stamp(&s, "FILE", "http://a/", "2001-01-01T00:00:00Z");
        s.upsert(&r).unwrap();
        assert_eq!(
            stamp_of(&s, b"FILE", b"http://a/").unwrap().0,
            "2001-01-01T00:00:00Z"
        );
        // A refresh carrying the same values: unchanged too; a new value: now.
        let mut refresh = Record::new("FILE", "http://a/").with("Title", "A");
        refresh.action = Some(soif_codecs::Action::Refresh);
        s.upsert(&refresh).unwrap();
        assert_eq!(
            stamp_of(&s, b"FILE", b"http://a/").unwrap().0,
            "2001-01-01T00:00:00Z"
        );
        s.upsert(&r.clone().with("Author", "B")).unwrap();
        let changed = stamp_of(&s, b"FILE", b"http://a/").unwrap().0;
        assert!(changed.as_str() > "2001-01-01T00:00:00Z", "{changed}");
        // An attribute named like the column gets a column of its own.
        s.upsert(&Record::new("FILE", "http://b/").with("soif_datestamp", "x"))
            .unwrap();
        let cols: Vec<String> = s
            .table(b"FILE")
            .unwrap()
            .columns
            .iter()
            .map(|c| c.column.clone())
            .collect();
        assert!(cols.contains(&"soif_datestamp_2".to_string()), "{cols:?}");
    }

    #[test]
    fn deleted_then_loaded_again_is_live_again() {
        let mut s = SqliteStore::open_in_memory(StoreOptions::default()).unwrap();
        let r = Record::new("DOCUMENT", "http://a/").with("Title", "A");
        s.upsert(&r).unwrap();
        s.delete(Some(b"DOCUMENT"), b"http://a/").unwrap();
        assert!(stamp_of(&s, b"DOCUMENT", b"http://a/").unwrap().1);
        let all = page(&s, None, &Window::default(), None, 10, true).unwrap();
        assert_eq!(all.len(), 1);
        assert!(all[0].deleted && all[0].record.is_none());
        s.upsert(&r).unwrap();
        let e = entry(&s, b"DOCUMENT", b"http://a/").unwrap().unwrap();
        assert!(!e.deleted);
        assert_eq!(e.record.unwrap().get_str("Title"), Some("A"));
        assert_eq!(count(&s, None, &Window::default()).unwrap(), 1);
    }

    #[test]
    fn pages_windows_sets_and_positions() {
        let mut s = SqliteStore::open_in_memory(StoreOptions::default()).unwrap();
        for i in 0..5 {
            s.upsert(&Record::new("FILE", format!("http://f/{i}")).with("T", "x"))
                .unwrap();
            s.upsert(&Record::new("DOCUMENT", format!("http://d/{i}")).with("T", "y"))
                .unwrap();
        }
        s.delete(Some(b"FILE"), b"http://f/2").unwrap();
        s.delete(Some(b"GONE"), b"http://g/").unwrap();
        for i in 0..5 {
            set_stamp(
                &s,
                "DOCUMENT",
                &format!("http://d/{i}"),
                &format!("2000-01-0{}T00:00:00Z", i + 1),
            );
        }
        assert_eq!(templates(&s).unwrap(), ["DOCUMENT", "FILE", "GONE"]);
        // Three pages of 4, in (template, url) order.
        let mut seen = Vec::new();
        let mut after: Option<(Bytes, Bytes)> = None;
        loop {
            let p = page(
                &s,
                None,
                &Window::default(),
                after.as_ref().map(|(t, u)| (t.as_ref(), u.as_ref())),
                4,
                false,
            )
            .unwrap();
            if p.is_empty() {
                break;
            }
            after = p.last().map(|e| (e.template.clone(), e.url.clone()));
            seen.extend(p.into_iter().map(|e| (e.template, e.url, e.deleted)));
        }
        assert_eq!(seen.len(), 11);
        assert_eq!(count(&s, None, &Window::default()).unwrap(), 11);
        assert!(seen
            .iter()
            .any(|(t, u, d)| t == "FILE" && u == "http://f/2" && *d));
        // A window (inclusive both ends) and a set.
        let w = Window {
            from: Some("2000-01-02T00:00:00Z".into()),
            until: Some("2000-01-04T00:00:00Z".into()),
        };
        let p = page(&s, Some(b"DOCUMENT"), &w, None, 10, true).unwrap();
        let urls: Vec<&[u8]> = p.iter().map(|e| e.url.as_ref()).collect();
        assert_eq!(urls, [&b"http://d/1"[..], b"http://d/2", b"http://d/3"]);
        assert_eq!(count(&s, Some(b"DOCUMENT"), &w).unwrap(), 3);
        assert_eq!(p[0].record.as_ref().unwrap().get_str("T"), Some("y"));
        assert!(earliest(&s).unwrap().is_some());
    }

    /// `tests/fixtures/catalog/layout-v1.db` was written by the `soif` of the release
    /// before layout version 2 (see the README there).
    fn v1_copy() -> (tempfile::TempDir, std::path::PathBuf) {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/catalog/layout-v1.db");
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("old.db");
        std::fs::copy(fixture, &db).unwrap();
        (dir, db)
    }

    #[test]
    fn a_version_1_database_is_upgraded_when_opened() {
        let (_dir, db) = v1_copy();
        let mut s = SqliteStore::open(&db).unwrap();
        assert_eq!(s.tables_version(), TABLES_VERSION);
        let version: String = s
            .connection()
            .query_row(
                "SELECT value FROM soif_meta WHERE key = 'layout_version'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(version, TABLES_VERSION.to_string());
        // Every row got the time of the latest load; records read back as before.
        let all = page(&s, None, &Window::default(), None, 100, true).unwrap();
        assert_eq!(all.len(), 6, "{all:?}");
        let last_run: String = s
            .connection()
            .query_row("SELECT max(finished) FROM soif_runs", [], |r| r.get(0))
            .unwrap();
        for e in all.iter().filter(|e| !e.deleted) {
            assert_eq!(e.datestamp, last_run);
            assert!(e.record.is_some());
        }
        let gone = all.iter().find(|e| e.deleted).unwrap();
        assert_eq!(gone.url, "http://gone.example/old.txt");
        let bin = s.get(b"FILE", b"ftp://x.example/bin").unwrap().unwrap();
        assert_eq!(
            bin.get("Blob")
                .and_then(|v| v.as_bytes())
                .map(|b| b.to_vec()),
            Some(vec![0xe9, 0xff, 0, 1])
        );
        // It is written as any database of this version, and opened again as one.
        s.upsert(&Record::new("FILE", "ftp://x.example/new").with("Title", "new"))
            .unwrap();
        drop(s);
        let s = SqliteStore::open(&db).unwrap();
        assert_eq!(
            page(&s, None, &Window::default(), None, 100, false)
                .unwrap()
                .len(),
            7
        );
    }

    #[test]
    fn a_version_1_database_served_read_only_has_table_times() {
        let (_dir, db) = v1_copy();
        let s = SqliteStore::open_read_only(&db).unwrap();
        assert_eq!(s.tables_version(), 1);
        let all = page(&s, None, &Window::default(), None, 100, true).unwrap();
        assert_eq!(all.len(), 6);
        assert!(all.iter().all(|e| e.datestamp.ends_with('Z')));
        assert_eq!(count(&s, Some(b"DOCUMENT"), &Window::default()).unwrap(), 3);
    }
}
