//! Facets: how many records a catalog holds by template, by Harvest `Type`, by year and
//! by host, and which records those are — for the browse and search pages of
//! `soif serve` (`docs/server.md#facets`).
//!
//! ```
//! use soif_codecs::Record;
//! use soif_store::facets::{self, Facet, FacetKey};
//! let r = Record::new("FILE", "http://Harvest.cs.colorado.edu:80/a.txt")
//!     .with("Type", "Text")
//!     .with("Last-Modification-Time", "805226393");
//! let key = FacetKey::of(&r);
//! assert_eq!(key.year, Some(1995));
//! assert_eq!(key.value(Facet::Host).as_deref(), Some(&b"harvest.cs.colorado.edu"[..]));
//! # let _ = facets::CREATE_FACETS;
//! ```
//!
//! # What each facet counts
//!
//! | facet | value |
//! |---|---|
//! | `template` | the template type (`FILE`, `DOCUMENT`, …) |
//! | `type` | the first value of the `Type` attribute (names matched as RFC 2655 §4 matches them: `Type`, `TYPE`, `Type-1`); absent when the record has none or it is empty |
//! | `year` | the UTC year of the record's modification time — the latest readable date among `Last-Modification-Time`, `Last-Modified` and `Update-Time`, the date `since` and the search form's `since` compare; absent when there is none |
//! | `host` | the host of the record's URL, lower case, without port (`http://Harvest.cs.colorado.edu:80/` → `harvest.cs.colorado.edu`); absent when the URL has none (`mailto:`, `news:`) |
//!
//! Why the URL's host rather than the `Gatherer-Host` attribute: every record has a
//! URL (it is the key), while `Gatherer-Host` is only in records a Harvest gatherer wrote
//! (not in those submitted over RDM or harvested over OAI-PMH), and it names the machine
//! that ran the gatherer — one or two per catalog — rather than the sites the objects
//! came from. Why the modification time rather than `soif_datestamp`: the datestamp is
//! when the row changed in this catalog (the day of the load, for nearly every record),
//! which says nothing about the objects.
//!
//! # Tables (owned by the server, like the keyword index)
//!
//! `soif_facet_keys(template, url, type, year, host)`, one row per record, with an index
//! per facet, and `soif_facet_counts(template, type, year, host, records)`, one row per
//! combination of values that occurs, with how many records have it. An absent value is
//! stored as `''` (`0` for the year) so that it is one group. Submissions update both in
//! the transaction that writes the records ([`remove`], [`insert`]); loaders do not know
//! about them, so they are rebuilt ([`rebuild`]) when `soif_runs` has changed since the
//! last build (`soif_meta` key [`FACET_RUNS_KEY`]), as the keyword index is.
//!
//! Why a count table rather than `GROUP BY` over the records on each request: a count
//! over the records reads every row of every table (millions, in a large catalog) for
//! each page shown, and computing a year or a host needs the row's values, so no SQLite
//! index can answer it. `soif_facet_counts` has one row per combination that occurs —
//! hosts × types × years, far fewer than records in gathered data — so a page's counts,
//! narrowed by any facet values, read only those rows ([`counts`]). The narrowed list of
//! records reads `soif_facet_keys` through the index of one narrowing facet, in
//! `(template, url)` order, and stops at the page it shows ([`page`]).

use crate::derived::{self, Derived};
use crate::store::{SqliteStore, StoreError};
use crate::tables::{key_param, value_bytes, ColumnInfo, TableInfo};
use bytes::Bytes;
use rusqlite::types::{ToSqlOutput, Value as SqlValue};
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use soif_codecs::rules::modified::{modified, DATE_ATTRIBUTES};
use soif_codecs::rules::names::attribute_matches;
use soif_codecs::Record;

/// Records whose keys are computed per transaction when the facet tables are rebuilt.
pub const FACET_CHUNK: usize = 5000;

/// The `soif_meta` key holding the `soif_runs` summary of the last facet build.
pub const FACET_RUNS_KEY: &str = "facet_runs";

/// The facet tables (created by the server when it opens a catalog for writing).
pub const CREATE_FACETS: &str = "
CREATE TABLE IF NOT EXISTS soif_facet_keys (
    template TEXT NOT NULL,
    url TEXT NOT NULL,
    type TEXT NOT NULL,
    year INTEGER NOT NULL,
    host TEXT NOT NULL,
    PRIMARY KEY (template, url)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS soif_facet_keys_type ON soif_facet_keys (type, template, url);
CREATE INDEX IF NOT EXISTS soif_facet_keys_year ON soif_facet_keys (year, template, url);
CREATE INDEX IF NOT EXISTS soif_facet_keys_host ON soif_facet_keys (host, template, url);
CREATE TABLE IF NOT EXISTS soif_facet_counts (
    template TEXT NOT NULL,
    type TEXT NOT NULL,
    year INTEGER NOT NULL,
    host TEXT NOT NULL,
    records INTEGER NOT NULL,
    PRIMARY KEY (template, type, year, host)
) WITHOUT ROWID;
";

/// One facet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Facet {
    Template,
    Type,
    Year,
    Host,
}

impl Facet {
    /// Every facet, in the order the pages show them.
    pub const ALL: [Facet; 4] = [Facet::Template, Facet::Type, Facet::Year, Facet::Host];

    /// Its name in URLs, JSON and CSV (also its column in the facet tables).
    pub fn name(self) -> &'static str {
        match self {
            Facet::Template => "template",
            Facet::Type => "type",
            Facet::Year => "year",
            Facet::Host => "host",
        }
    }

    /// The facet called `name`.
    pub fn from_name(name: &str) -> Option<Facet> {
        Facet::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// A record's facet values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FacetKey {
    pub template: Bytes,
    /// The first value of `Type`; `None` when absent or empty.
    pub type_: Option<Bytes>,
    /// The UTC year of the modification time.
    pub year: Option<i64>,
    /// The URL's host, lower case.
    pub host: Option<String>,
}

impl FacetKey {
    /// The facet values of `record` (see the table in the module's documentation).
    pub fn of(record: &Record) -> FacetKey {
        let type_ = record
            .attributes
            .iter()
            .filter(|a| attribute_matches(b"type", &a.name))
            .flat_map(|a| a.value.leaves())
            .next()
            .filter(|v| !v.is_empty())
            .cloned();
        let year = modified(record).ok().and_then(year_of);
        FacetKey {
            template: record.template.clone(),
            type_,
            year,
            host: host_of(&record.url),
        }
    }

    /// The value of one facet as bytes (the year as decimal digits); `None` when absent.
    pub fn value(&self, facet: Facet) -> Option<Bytes> {
        match facet {
            Facet::Template => Some(self.template.clone()),
            Facet::Type => self.type_.clone(),
            Facet::Year => self.year.map(|y| Bytes::from(y.to_string())),
            Facet::Host => self.host.clone().map(Bytes::from),
        }
    }

    fn sql(&self) -> [SqlValue; 4] {
        [
            sql_bytes(&self.template),
            sql_bytes(self.type_.as_deref().unwrap_or_default()),
            SqlValue::Integer(self.year.unwrap_or(0)),
            SqlValue::Text(self.host.clone().unwrap_or_default()),
        ]
    }
}

/// TEXT when UTF-8, else BLOB, as every key column of the catalog stores it.
fn sql_bytes(b: &[u8]) -> SqlValue {
    match key_param(b) {
        ToSqlOutput::Borrowed(v) => v.into(),
        ToSqlOutput::Owned(v) => v,
        _ => SqlValue::Blob(b.to_vec()),
    }
}

/// The UTC year of a Unix time.
fn year_of(unix: i64) -> Option<i64> {
    use chrono::Datelike;
    chrono::DateTime::from_timestamp(unix, 0).map(|d| i64::from(d.year()))
}

/// The host of a URL, lower case, without port or user; `None` when it has none.
pub fn host_of(url: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(url).ok()?;
    let parsed = url::Url::parse(text.trim()).ok()?;
    let host = parsed
        .host_str()?
        .trim_end_matches('.')
        .to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

/// Which records a page shows: for each narrowed facet, the value wanted (`None`: the
/// records without one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Narrowing(pub Vec<(Facet, Option<Bytes>)>);

impl Narrowing {
    /// The value a facet is narrowed to, if it is.
    pub fn get(&self, facet: Facet) -> Option<&Option<Bytes>> {
        self.0.iter().find(|(f, _)| *f == facet).map(|(_, v)| v)
    }

    /// The same narrowing, `facet` left out.
    pub fn without(&self, facet: Facet) -> Narrowing {
        Narrowing(
            self.0
                .iter()
                .filter(|(f, _)| *f != facet)
                .cloned()
                .collect(),
        )
    }

    /// True when nothing is narrowed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a record with these facet values is in the narrowed set.
    pub fn matches(&self, key: &FacetKey) -> bool {
        self.0
            .iter()
            .all(|(f, want)| key.value(*f).as_deref() == want.as_deref())
    }

    /// ` WHERE …` over the facet tables' columns, and its parameters.
    fn sql(&self) -> (String, Vec<SqlValue>) {
        let mut clauses = Vec::new();
        let mut values = Vec::new();
        for (facet, want) in &self.0 {
            clauses.push(format!("{} = ?{}", facet.name(), values.len() + 1));
            values.push(match (facet, want) {
                (Facet::Year, Some(y)) => std::str::from_utf8(y)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    // No year is written as anything but digits: a year that is not one
                    // matches nothing.
                    .map_or(SqlValue::Integer(-1), SqlValue::Integer),
                (Facet::Year, None) => SqlValue::Integer(0),
                (_, Some(b)) => sql_bytes(b),
                (_, None) => SqlValue::Text(String::new()),
            });
        }
        if clauses.is_empty() {
            (String::new(), values)
        } else {
            (format!(" WHERE {}", clauses.join(" AND ")), values)
        }
    }
}

/// One facet's counts over a narrowed set: the values with most records first (ties in
/// value order), at most the number asked for, and what the others add up to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FacetCounts {
    pub facet: Option<Facet>,
    /// `(value, records)`; `None` is "no value".
    pub values: Vec<(Option<Bytes>, u64)>,
    /// How many further values there are, and their records.
    pub other_values: u64,
    pub other_records: u64,
    /// Records in the narrowed set.
    pub total: u64,
}

/// A value as read back from a facet column: `''` and year `0` are "no value".
fn read_value(facet: Facet, v: rusqlite::types::ValueRef<'_>) -> Option<Bytes> {
    match (facet, v) {
        (Facet::Year, rusqlite::types::ValueRef::Integer(0)) => None,
        (_, v) => Some(value_bytes(v)).filter(|b| !b.is_empty()),
    }
}

/// The counts of `facet` over the records `narrowing` selects, its `top` values with
/// the most records, from `soif_facet_counts` (see the module's documentation for why).
pub fn counts(
    conn: &Connection,
    facet: Facet,
    narrowing: &Narrowing,
    top: usize,
) -> rusqlite::Result<FacetCounts> {
    let (filter, values) = narrowing.sql();
    let col = facet.name();
    let (total, distinct): (i64, i64) = conn.query_row(
        &format!(
            "SELECT coalesce(sum(n), 0), count(*) FROM \
             (SELECT sum(records) AS n FROM soif_facet_counts{filter} GROUP BY {col})"
        ),
        params_from_iter(values.iter()),
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let mut out = FacetCounts {
        facet: Some(facet),
        total: total.max(0) as u64,
        ..FacetCounts::default()
    };
    let limit = i64::try_from(top).unwrap_or(i64::MAX);
    let mut st = conn.prepare(&format!(
        "SELECT {col}, sum(records) AS n FROM soif_facet_counts{filter} \
         GROUP BY {col} ORDER BY n DESC, {col} LIMIT {limit}"
    ))?;
    let mut rows = st.query(params_from_iter(values.iter()))?;
    let mut shown = 0u64;
    while let Some(row) = rows.next()? {
        let n = row.get::<_, i64>(1)?.max(0) as u64;
        shown += n;
        out.values.push((read_value(facet, row.get_ref(0)?), n));
    }
    out.other_values = (distinct.max(0) as u64).saturating_sub(out.values.len() as u64);
    out.other_records = out.total.saturating_sub(shown);
    Ok(out)
}

/// The `(template, url)` of the narrowed records from `offset` on, at most `limit`, in
/// `(template, url)` order (an index walk: each facet's index ends in those columns).
pub fn page(
    conn: &Connection,
    narrowing: &Narrowing,
    offset: u64,
    limit: u64,
) -> rusqlite::Result<Vec<(Bytes, Bytes)>> {
    let (filter, mut values) = narrowing.sql();
    let n = values.len();
    values.push(SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    values.push(SqlValue::Integer(i64::try_from(offset).unwrap_or(i64::MAX)));
    let mut st = conn.prepare(&format!(
        "SELECT template, url FROM soif_facet_keys{filter} ORDER BY template, url \
         LIMIT ?{} OFFSET ?{}",
        n + 1,
        n + 2
    ))?;
    let mut rows = st.query(params_from_iter(values.iter()))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push((value_bytes(row.get_ref(0)?), value_bytes(row.get_ref(1)?)));
    }
    Ok(out)
}

/// Adds `delta` records to a combination's count (a count that reaches 0 is removed).
fn add_count(conn: &Connection, key: &[SqlValue; 4], delta: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO soif_facet_counts (template, type, year, host, records) \
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (template, type, year, host) \
         DO UPDATE SET records = records + excluded.records",
    )?
    .execute(params![key[0], key[1], key[2], key[3], delta])?;
    if delta < 0 {
        conn.prepare_cached(
            "DELETE FROM soif_facet_counts WHERE template = ?1 AND type = ?2 AND year = ?3 \
             AND host = ?4 AND records <= 0",
        )?
        .execute(params![key[0], key[1], key[2], key[3]])?;
    }
    Ok(())
}

/// Takes a record out of the facet tables (nothing when it is not in them).
pub fn remove(conn: &Connection, template: &[u8], url: &[u8]) -> rusqlite::Result<()> {
    let old: Option<[SqlValue; 4]> = conn
        .prepare_cached(
            "SELECT template, type, year, host FROM soif_facet_keys \
             WHERE template = ?1 AND url = ?2",
        )?
        .query_row(params![key_param(template), key_param(url)], |r| {
            Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?])
        })
        .optional()?;
    if let Some(old) = old {
        conn.prepare_cached("DELETE FROM soif_facet_keys WHERE template = ?1 AND url = ?2")?
            .execute(params![key_param(template), key_param(url)])?;
        add_count(conn, &old, -1)?;
    }
    Ok(())
}

/// Adds a record to the facet tables (call [`remove`] first if it may be there).
pub fn insert(conn: &Connection, record: &Record) -> rusqlite::Result<()> {
    let key = FacetKey::of(record).sql();
    conn.prepare_cached(
        "INSERT INTO soif_facet_keys (template, url, type, year, host) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        key[0],
        key_param(&record.url),
        key[1],
        key[2],
        key[3]
    ])?;
    add_count(conn, &key, 1)
}

/// The `soif_runs` summary the facet tables were last fully built at.
pub fn indexed_summary(conn: &Connection) -> rusqlite::Result<Option<String>> {
    derived::built_summary(conn, FACET_RUNS_KEY)
}

/// Whether the database has the facet tables.
pub fn has_index(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'soif_facet_counts')",
        [],
        |r| r.get(0),
    )
}

/// The columns a record's facet values come from: `Type` and the dates.
fn facet_columns(table: &TableInfo) -> TableInfo {
    let wanted = |c: &ColumnInfo| {
        attribute_matches(b"type", &c.attribute)
            || DATE_ATTRIBUTES
                .iter()
                .any(|d| attribute_matches(d.as_bytes(), &c.attribute))
    };
    TableInfo {
        template: table.template.clone(),
        table: table.table.clone(),
        columns: table
            .columns
            .iter()
            .filter(|c| wanted(c))
            .cloned()
            .collect(),
    }
}

/// Rebuilds the facet tables in transactions of [`FACET_CHUNK`] records, reading only
/// the columns the facets need, as the keyword index is rebuilt ([`crate::fts::rebuild`]).
pub fn rebuild(writer: &mut SqliteStore) -> Result<(), StoreError> {
    derived::rebuild(
        writer,
        &Derived {
            meta_key: FACET_RUNS_KEY,
            what: "the facet tables",
            clear: "DELETE FROM soif_facet_keys; DELETE FROM soif_facet_counts;",
            chunk: FACET_CHUNK,
            columns: facet_columns,
            remove,
            add: insert,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreOptions;

    fn store_with(records: &[Record]) -> SqliteStore {
        let mut s = SqliteStore::open_in_memory(StoreOptions::default()).unwrap();
        s.connection().execute_batch(CREATE_FACETS).unwrap();
        s.begin().unwrap();
        for r in records {
            s.upsert(r).unwrap();
        }
        s.commit().unwrap();
        s
    }

    fn records() -> Vec<Record> {
        vec![
            Record::new("FILE", "http://a.example/1")
                .with("Type", "Text")
                .with("Last-Modification-Time", "805226393"),
            Record::new("FILE", "http://A.example:8080/2")
                .with("Type", "Text")
                .with("Last-Modified", "Thu, 16 May 1996 11:45:39 GMT"),
            Record::new("FILE", "http://b.example/3").with("TYPE", "HTML"),
            Record::new("DOCUMENT", "mailto:someone@example.org").with("Type-1", ""),
        ]
    }

    #[test]
    fn keys_follow_the_documented_rules() {
        let k: Vec<FacetKey> = records().iter().map(FacetKey::of).collect();
        assert_eq!(k[0].year, Some(1995));
        assert_eq!(k[1].year, Some(1996));
        assert_eq!(k[1].host.as_deref(), Some("a.example"));
        assert_eq!(k[2].type_.as_deref(), Some(&b"HTML"[..]));
        assert_eq!(k[2].year, None);
        assert_eq!(k[3].type_, None, "an empty Type is no Type");
        assert_eq!(k[3].host, None, "mailto: has no host");
        assert_eq!(host_of(b"not a url"), None);
        assert_eq!(
            host_of(b"ftp://FTP.Example.COM./x"),
            Some("ftp.example.com".into())
        );
    }

    #[test]
    fn rebuild_counts_and_narrows() {
        let mut s = store_with(&records());
        rebuild(&mut s).unwrap();
        let c = s.connection();
        let all = counts(c, Facet::Host, &Narrowing::default(), 1).unwrap();
        assert_eq!(all.total, 4);
        assert_eq!(all.values, vec![(Some(Bytes::from("a.example")), 2)]);
        assert_eq!((all.other_values, all.other_records), (2, 2));
        let text = Narrowing(vec![(Facet::Type, Some(Bytes::from("Text")))]);
        let years = counts(c, Facet::Year, &text, 10).unwrap();
        assert_eq!(
            years.values,
            vec![
                (Some(Bytes::from("1995")), 1),
                (Some(Bytes::from("1996")), 1)
            ]
        );
        let untyped = Narrowing(vec![(Facet::Type, None)]);
        let p = page(c, &untyped, 0, 10).unwrap();
        assert_eq!(
            p,
            vec![(
                Bytes::from("DOCUMENT"),
                Bytes::from("mailto:someone@example.org")
            )]
        );
        let no_year = Narrowing(vec![
            (Facet::Year, None),
            (Facet::Template, Some("FILE".into())),
        ]);
        assert_eq!(page(c, &no_year, 0, 10).unwrap().len(), 1);
        assert!(no_year.matches(&FacetKey::of(&records()[2])));
        assert!(!no_year.matches(&FacetKey::of(&records()[0])));
        // Paging: offset and limit in (template, url) order.
        let files = Narrowing(vec![(Facet::Template, Some("FILE".into()))]);
        let second = page(c, &files, 1, 1).unwrap();
        assert_eq!(second[0].1, Bytes::from("http://a.example/1"));
    }

    #[test]
    fn remove_and_insert_keep_the_counts() {
        let mut s = store_with(&records());
        rebuild(&mut s).unwrap();
        let c = s.connection();
        // The record changes its Type: one count moves.
        remove(c, b"FILE", b"http://a.example/1").unwrap();
        insert(
            c,
            &Record::new("FILE", "http://a.example/1").with("Type", "HTML"),
        )
        .unwrap();
        let types = counts(c, Facet::Type, &Narrowing::default(), 10).unwrap();
        assert_eq!(
            types.values,
            vec![
                (Some(Bytes::from("HTML")), 2),
                (None, 1),
                (Some(Bytes::from("Text")), 1)
            ]
        );
        remove(c, b"DOCUMENT", b"mailto:someone@example.org").unwrap();
        remove(c, b"DOCUMENT", b"mailto:someone@example.org").unwrap();
        let n: i64 = c
            .query_row(
                "SELECT count(*) FROM soif_facet_counts WHERE template = 'DOCUMENT'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 0, "a combination with no records left is gone");
        assert_eq!(
            counts(c, Facet::Template, &Narrowing::default(), 10)
                .unwrap()
                .total,
            3
        );
    }
}
