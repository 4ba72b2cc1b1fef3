//! What a store keeps between writes: per table, its columns by attribute and its upsert
//! statements ([`Table`]); per write, reused buffers ([`Scratch`]) and the datestamp of
//! the current second ([`Clock`]).

use crate::tables::{quote_ident, FastMap, TableInfo, CREATED_COLUMN, DATESTAMP_COLUMN};
use bytes::Bytes;
use std::collections::{HashMap, HashSet};

/// A table as the writer sees it: its columns by attribute, and its upsert statements.
pub(crate) struct Table {
    pub(crate) info: TableInfo,
    pub(crate) by_attr: FastMap<Bytes, usize>,
    /// Column names in lower case, `url` included, for collision checks.
    pub(crate) used: HashSet<String>,
    /// The replacing upsert (every column), built once per column set.
    pub(crate) upsert_sql: String,
    /// Merging upserts (`@REFRESH`) by the columns they name, built once per set rather
    /// than per record. Bounded: cleared when full, since odd streams could give every
    /// record its own set.
    pub(crate) merge_sql: HashMap<Vec<usize>, String>,
}

/// Merge statements kept per table (see [`Table::merge_sql`]).
pub(crate) const MAX_MERGE_SQL: usize = 64;

impl Table {
    pub(crate) fn new(info: TableInfo) -> Table {
        let mut t = Table {
            by_attr: FastMap::default(),
            used: HashSet::from([
                "url".to_string(),
                DATESTAMP_COLUMN.to_string(),
                CREATED_COLUMN.to_string(),
            ]),
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
    pub(crate) fn merge_sql(&mut self, columns: &[usize]) -> &str {
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
pub(crate) fn upsert_sql(info: &TableInfo) -> String {
    upsert_sql_for(&info.table, info.columns.iter().map(|c| c.column.as_str()))
}

/// The upsert of `url` and `columns` (bound as `?1`, `?2`, … in that order, then the
/// datestamp); columns not named keep their values.
///
/// The row's `soif_datestamp` (see [`crate::datestamps`]) becomes the bound time only when
/// a named column changes: loading the same record again leaves it as it was, so that an
/// OAI-PMH harvester asking for what changed since its last visit is not sent every
/// record of a re-run. The comparison is one row value (`(a, b) IS (excluded.a, …)`),
/// evaluated by SQLite against the row as it was. A new row's `soif_created` is the
/// same time (the same parameter); an update leaves it.
pub(crate) fn upsert_sql_for<'a>(table: &str, columns: impl Iterator<Item = &'a str>) -> String {
    let mut cols = String::from("\"url\"");
    let mut vals = String::from("?1");
    let mut set = String::new();
    let mut old = String::new();
    let mut new = String::new();
    let mut n = 0;
    for (i, c) in columns.enumerate() {
        let q = quote_ident(c);
        cols.push_str(", ");
        cols.push_str(&q);
        vals.push_str(&format!(", ?{}", i + 2));
        if !set.is_empty() {
            set.push_str(", ");
            old.push_str(", ");
            new.push_str(", ");
        }
        set.push_str(&format!("{q} = excluded.{q}"));
        old.push_str(&q);
        new.push_str(&format!("excluded.{q}"));
        n = i + 1;
    }
    cols.push_str(&format!(
        ", {}, {}",
        quote_ident(DATESTAMP_COLUMN),
        quote_ident(CREATED_COLUMN)
    ));
    vals.push_str(&format!(", ?{0}, ?{0}", n + 2));
    let action = if set.is_empty() {
        "NOTHING".to_string()
    } else {
        let ds = quote_ident(DATESTAMP_COLUMN);
        format!(
            "UPDATE SET {set}, {ds} = CASE WHEN ({old}) IS ({new}) THEN {ds} ELSE excluded.{ds} END"
        )
    };
    format!(
        "INSERT INTO {} ({cols}) VALUES ({vals}) ON CONFLICT(\"url\") DO {action}",
        quote_ident(table)
    )
}

#[derive(Default)]
pub(crate) struct Scratch {
    /// Each attribute's column.
    pub(crate) col_of: Vec<Option<usize>>,
    /// Each column's first attribute.
    pub(crate) first: Vec<Option<usize>>,
    /// The columns the record has a value for.
    pub(crate) present: Vec<usize>,
    /// Columns that get their first JSON value with this record.
    pub(crate) newly_json: Vec<usize>,
    /// The time written as the row's datestamp.
    pub(crate) clock: Clock,
}

/// The current second as a datestamp, formatted once per second (every upsert binds it).
#[derive(Default)]
pub(crate) struct Clock {
    second: i64,
    text: String,
}

impl Clock {
    pub(crate) fn now(&mut self) -> &str {
        let now = chrono::Utc::now();
        let second = now.timestamp();
        if second != self.second || self.text.is_empty() {
            self.second = second;
            self.text = now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        }
        &self.text
    }
}
