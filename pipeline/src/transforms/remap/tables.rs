//! Lookup tables: CSV files loaded once, before any record is read, for the
//! enrichment-table functions of [`super::enrichment`].
//!
//! ```
//! use soif_pipeline::transforms::remap::tables::{Case, Condition, Table};
//!
//! let csv = "harvest_type,mime\nPostScript,application/postscript\nHTML,text/html\n";
//! let table = Table::from_reader("types", csv.as_bytes()).unwrap();
//! let mime = table.column("mime").unwrap();
//! let cond = [Condition::Equals { column: table.column("harvest_type").unwrap(), value: "html".into() }];
//! let rows: Vec<usize> = table.rows_matching(&cond, Case::Insensitive, None, None).collect();
//! assert_eq!(table.cell(rows[0], mime), Some(&b"text/html"[..]));
//! ```
//!
//! A table is a CSV file with a header row: the header names the columns, every other
//! row is one record of the table, its cells bytes as they are in the file. Memory is
//! that of the table (its cells, and one hash index per set of columns a program's
//! conditions name); nothing grows with the records converted. A missing file, a row
//! whose length differs from the header's, a header that is not UTF-8 or names a column
//! twice is an error (a usage error: the run stops before it reads a record).
//!
//! [`Tables`] is the set a run loads (`--table NAME=FILE.csv`, a pipeline file's
//! `[tables]`), cheap to clone and shared by every program of the run.

use super::super::files::Files;
use crate::Error;
use bytes::Bytes;
use chrono::{DateTime, NaiveDate, Utc};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The largest table file read: 1 GiB.
pub const MAX_TABLE_FILE: u64 = 1 << 30;

/// The lookup tables of a run, by name. Cloning shares them.
#[derive(Debug, Clone, Default)]
pub struct Tables(Arc<BTreeMap<String, Arc<Table>>>);

impl Tables {
    /// Loads every `(name, file)`, read through `files` (the disk, or the bytes a Spark
    /// driver shipped); the first file that cannot be loaded is an [`Error::Config`]
    /// naming the table, the file and (for bad CSV) the line.
    pub fn load<'a>(
        specs: impl IntoIterator<Item = (&'a str, &'a Path)>,
        files: &Files,
    ) -> Result<Tables, Error> {
        let mut map = BTreeMap::new();
        for (name, path) in specs {
            check_name(name)?;
            if map.contains_key(name) {
                return Err(Error::Config(format!("table `{name}` is given twice")));
            }
            map.insert(
                name.to_string(),
                Arc::new(Table::from_path(name, path, files)?),
            );
        }
        Ok(Tables(Arc::new(map)))
    }

    /// Parses a `--table` argument, `NAME=FILE.csv`.
    pub fn parse_spec(spec: &str) -> Result<(String, PathBuf), Error> {
        match spec.split_once('=') {
            Some((name, file)) if !name.trim().is_empty() && !file.is_empty() => {
                check_name(name.trim())?;
                Ok((name.trim().to_string(), PathBuf::from(file)))
            }
            _ => Err(Error::Config(format!(
                "--table {spec}: expected NAME=FILE.csv (e.g. --table types=configs/types.csv)"
            ))),
        }
    }

    /// The table called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Table>> {
        self.0.get(name)
    }

    /// The tables' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A table name: letters, digits, `_` and `-` (a VRL string, and a TOML key).
fn check_name(name: &str) -> Result<(), Error> {
    if !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(())
    } else {
        Err(Error::Config(format!(
            "table name `{name}`: use letters, digits, `_` and `-`"
        )))
    }
}

/// One loaded CSV file.
#[derive(Debug)]
pub struct Table {
    name: String,
    columns: Vec<String>,
    rows: Vec<Box<[Bytes]>>,
}

/// How text is compared: exactly, or ignoring case (Unicode lower case for UTF-8 text,
/// the bytes as they are otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Case {
    Sensitive,
    Insensitive,
}

/// One condition of a search; all of a search's conditions must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The cell equals the value (as [`Case`] says).
    Equals { column: usize, value: Bytes },
    /// The cell, read as a date (RFC 3339, or `YYYY-MM-DD` at midnight UTC), is at or
    /// after `from` and at or before `to` (either may be open).
    Dates {
        column: usize,
        from: Option<DateTime<Utc>>,
        to: Option<DateTime<Utc>>,
    },
}

/// A hash index of a table on some columns, for exact-match conditions on them.
#[derive(Debug)]
pub struct Index {
    columns: Vec<usize>,
    case: Case,
    rows: HashMap<Vec<Bytes>, Vec<usize>>,
}

impl Table {
    /// Loads the CSV file `path` (read through `files`) as table `name`.
    pub fn from_path(name: &str, path: &Path, files: &Files) -> Result<Table, Error> {
        let bytes = files.read(path, &format!("table `{name}`"), MAX_TABLE_FILE)?;
        Table::from_reader(name, &bytes[..]).map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("{m} (in {})", path.display())),
            other => other,
        })
    }

    /// Reads a table from CSV bytes (a header row, then the rows).
    pub fn from_reader(name: &str, reader: impl std::io::Read) -> Result<Table, Error> {
        let bad = |m: String| Error::Config(format!("table `{name}`: {m}"));
        let mut csv = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_reader(reader);
        let header = csv
            .byte_headers()
            .map_err(|e| bad(format!("bad CSV: {e}")))?
            .clone();
        if header.is_empty() {
            return Err(bad("the file is empty: a table needs a header row".into()));
        }
        let mut columns = Vec::with_capacity(header.len());
        for h in header.iter() {
            let col = std::str::from_utf8(h)
                .map_err(|_| bad("the header row is not UTF-8".into()))?
                .to_string();
            if col.is_empty() || columns.contains(&col) {
                return Err(bad(format!(
                    "column name {col:?} is empty or repeated in the header row"
                )));
            }
            columns.push(col);
        }
        let mut rows = Vec::new();
        let mut record = csv::ByteRecord::new();
        loop {
            match csv.read_byte_record(&mut record) {
                Ok(false) => break,
                Ok(true) => rows.push(
                    record
                        .iter()
                        .map(Bytes::copy_from_slice)
                        .collect::<Vec<_>>()
                        .into_boxed_slice(),
                ),
                Err(e) => return Err(bad(format!("bad CSV: {e}"))),
            }
        }
        Ok(Table {
            name: name.to_string(),
            columns,
            rows,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The column names, in the file's order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The index of the column called `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The cell at `row`, `column`.
    pub fn cell(&self, row: usize, column: usize) -> Option<&[u8]> {
        self.rows.get(row)?.get(column).map(|b| &b[..])
    }

    /// The cells of `row`, shared (no copy).
    pub fn row(&self, row: usize) -> Option<&[Bytes]> {
        self.rows.get(row).map(|r| &r[..])
    }

    /// An index on `columns` for exact matches compared as `case` says.
    pub fn index(&self, columns: Vec<usize>, case: Case) -> Index {
        let mut rows: HashMap<Vec<Bytes>, Vec<usize>> = HashMap::new();
        for (i, row) in self.rows.iter().enumerate() {
            let key = columns
                .iter()
                .map(|&c| row.get(c).map_or_else(Bytes::new, |b| fold(b, case)))
                .collect();
            rows.entry(key).or_default().push(i);
        }
        Index {
            columns,
            case,
            rows,
        }
    }

    /// The rows (their numbers, in file order) where every condition holds. A cell
    /// equal to `wildcard` matches any value of an exact-match condition. `index`, when
    /// it covers exactly the exact-match columns (and there is no wildcard), finds the
    /// candidates without a scan.
    pub fn rows_matching<'a>(
        &'a self,
        conditions: &'a [Condition],
        case: Case,
        wildcard: Option<&'a [u8]>,
        index: Option<&'a Index>,
    ) -> Box<dyn Iterator<Item = usize> + 'a> {
        let holds = move |&row: &usize| {
            conditions
                .iter()
                .all(|c| self.holds(row, c, case, wildcard))
        };
        if let (Some(index), None) = (index, wildcard) {
            if index.case == case {
                if let Some(key) = index.key(conditions) {
                    let rows = index.rows.get(&key).map_or(&[][..], Vec::as_slice);
                    return Box::new(rows.iter().copied().filter(holds));
                }
            }
        }
        Box::new((0..self.rows.len()).filter(holds))
    }

    fn holds(
        &self,
        row: usize,
        condition: &Condition,
        case: Case,
        wildcard: Option<&[u8]>,
    ) -> bool {
        match condition {
            Condition::Equals { column, value } => self.cell(row, *column).is_some_and(|cell| {
                equal(cell, value, case) || wildcard.is_some_and(|w| equal(cell, w, case))
            }),
            Condition::Dates { column, from, to } => self
                .cell(row, *column)
                .and_then(parse_date)
                .is_some_and(|d| from.is_none_or(|f| f <= d) && to.is_none_or(|t| d <= t)),
        }
    }
}

impl Index {
    /// The key of `conditions` in this index: their exact-match values in the index's
    /// column order, when the exact-match columns are exactly the index's.
    fn key(&self, conditions: &[Condition]) -> Option<Vec<Bytes>> {
        let mut key = Vec::with_capacity(self.columns.len());
        for &col in &self.columns {
            let value = conditions.iter().find_map(|c| match c {
                Condition::Equals { column, value } if *column == col => Some(value),
                _ => None,
            })?;
            key.push(fold(value, self.case));
        }
        let exact = conditions
            .iter()
            .filter(|c| matches!(c, Condition::Equals { .. }))
            .count();
        (exact == self.columns.len()).then_some(key)
    }
}

/// Text as compared: as it is, or lower-cased (UTF-8 text only).
fn fold(b: &[u8], case: Case) -> Bytes {
    match (case, std::str::from_utf8(b)) {
        (Case::Insensitive, Ok(s)) => Bytes::from(s.to_lowercase()),
        _ => Bytes::copy_from_slice(b),
    }
}

fn equal(a: &[u8], b: &[u8], case: Case) -> bool {
    match case {
        Case::Sensitive => a == b,
        Case::Insensitive => match (std::str::from_utf8(a), std::str::from_utf8(b)) {
            (Ok(x), Ok(y)) => x == y || x.to_lowercase() == y.to_lowercase(),
            (Err(_), Err(_)) => a == b,
            _ => false,
        },
    }
}

/// A cell as a date: RFC 3339, or `YYYY-MM-DD` (midnight UTC).
fn parse_date(cell: &[u8]) -> Option<DateTime<Utc>> {
    let s = std::str::from_utf8(cell).ok()?.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone as _;

    const CSV: &str = "code,label,since\nPS,PostScript,1990-05-01\nps,lower,2001-01-01T00:00:00Z\nHTML,Web page,1993-06-01\n*,anything,\n";

    fn table() -> Table {
        match Table::from_reader("t", CSV.as_bytes()) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    fn eq(column: usize, value: &str) -> Condition {
        Condition::Equals {
            column,
            value: Bytes::copy_from_slice(value.as_bytes()),
        }
    }

    #[test]
    fn exact_and_case_insensitive_matches() {
        let t = table();
        let rows = |c: &[Condition], case| t.rows_matching(c, case, None, None).collect::<Vec<_>>();
        assert_eq!(rows(&[eq(0, "PS")], Case::Sensitive), [0]);
        assert_eq!(rows(&[eq(0, "PS")], Case::Insensitive), [0, 1]);
        assert_eq!(rows(&[eq(0, "ps"), eq(1, "lower")], Case::Sensitive), [1]);
        assert!(rows(&[eq(0, "gif")], Case::Sensitive).is_empty());
    }

    #[test]
    fn an_index_finds_what_a_scan_finds() {
        let t = table();
        for case in [Case::Sensitive, Case::Insensitive] {
            let index = t.index(vec![0], case);
            for v in ["PS", "ps", "HTML", "none"] {
                let c = [eq(0, v)];
                let scanned: Vec<_> = t.rows_matching(&c, case, None, None).collect();
                let indexed: Vec<_> = t.rows_matching(&c, case, None, Some(&index)).collect();
                assert_eq!(scanned, indexed, "{v} {case:?}");
            }
        }
    }

    #[test]
    fn a_wildcard_cell_matches_any_value() {
        let t = table();
        let rows: Vec<_> = t
            .rows_matching(&[eq(0, "gif")], Case::Sensitive, Some(b"*"), None)
            .collect();
        assert_eq!(rows, [3]);
    }

    #[test]
    fn date_ranges_read_cells_as_dates() {
        let t = table();
        let at = |y, m, d| Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).single();
        let c = [Condition::Dates {
            column: 2,
            from: at(1990, 1, 1),
            to: at(1999, 12, 31),
        }];
        let rows: Vec<_> = t.rows_matching(&c, Case::Sensitive, None, None).collect();
        assert_eq!(rows, [0, 2]);
        let c = [Condition::Dates {
            column: 2,
            from: at(2000, 1, 1),
            to: None,
        }];
        let rows: Vec<_> = t.rows_matching(&c, Case::Sensitive, None, None).collect();
        assert_eq!(rows, [1]);
    }

    #[test]
    fn bad_tables_are_config_errors() {
        let ragged = Table::from_reader("t", "a,b\n1,2\n3\n".as_bytes());
        assert!(ragged.is_err_and(|e| e.is_config() && e.to_string().contains("bad CSV")));
        let empty = Table::from_reader("t", "".as_bytes());
        assert!(empty.is_err_and(|e| e.is_config()));
        let twice = Table::from_reader("t", "a,a\n1,2\n".as_bytes());
        assert!(twice.is_err_and(|e| e.to_string().contains("repeated")));
        let missing = Tables::load([("t", Path::new("/nonexistent/t.csv"))], &Files::default());
        assert!(
            missing.is_err_and(|e| e.is_config() && e.to_string().contains("/nonexistent/t.csv"))
        );
    }

    #[test]
    fn table_specs() {
        let spec = Tables::parse_spec("types=configs/types.csv").ok();
        assert_eq!(
            spec,
            Some(("types".to_string(), PathBuf::from("configs/types.csv")))
        );
        assert!(Tables::parse_spec("types").is_err());
        assert!(Tables::parse_spec("a b=x.csv").is_err());
    }
}
