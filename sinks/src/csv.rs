//! The `csv` sink: RFC 4180 CSV, one row per record.
//!
//! The header is `template,url,<columns>`. A CSV header must be written before the first
//! row, so the columns have to be known up front, and never by holding all records in
//! memory. They come, in order of preference, from:
//! 1. `--columns` ([`SinkOptions::columns`](crate::SinkOptions::columns));
//! 2. an RDM schema (`--schema`): its `SOIF-Attribute-N` values, see [`columns_from_schema`];
//! 3. a first pass over re-readable inputs by the engine, feeding every record (after the
//!    same transforms) to a [`ColumnCollector`], which keeps attribute names in first-seen
//!    order, bounded in number;
//! 4. failing all of these, the first record's attributes.
//!
//! Values are written as UTF-8. A value that is not UTF-8 is read as Latin-1 with
//! `--charset latin1`, otherwise its bad bytes are replaced with U+FFFD and a warning is
//! counted. NUL bytes become U+FFFD too (spreadsheets and older Python `csv` modules
//! reject them), also counted. Multi-line values are quoted as RFC 4180 says. A list (after
//! `collapse`) is joined with the list separator (not escaped: pick one that the values do
//! not contain, or use `jsonl` for exact lists); a nested part is written as JSON; an
//! attribute name repeated within one record is joined like a list. An attribute that has
//! no column is not written and is counted as a warning, so nothing disappears unnoticed.
//!
//! ```
//! use soif_codecs::Record;
//! use soif_pipeline::Sink;
//! use soif_sinks::csv::CsvSink;
//! use soif_sinks::Charset;
//!
//! let mut out = Vec::new();
//! let mut sink = CsvSink::new(&mut out, Some(vec!["Title".into()]), "|", Charset::Utf8);
//! sink.write(&Record::new("DOCUMENT", "http://home.netscape.com:80/")
//!     .with("Title", "Welcome to Netscape")).unwrap();
//! sink.finish().unwrap();
//! drop(sink);
//! assert_eq!(out, b"template,url,Title\r\nDOCUMENT,http://home.netscape.com:80/,Welcome to Netscape\r\n");
//! ```

use crate::Charset;
use soif_codecs::rules::text::{text_counted, to_json};
use soif_codecs::{Record, Value};
use soif_pipeline::{Error, Sink, SinkError};
use soif_store::SchemaColumns;
use std::collections::{HashMap, HashSet};
use std::io::Write;

/// The separator between the items of a list unless `list_separator` says otherwise.
pub const DEFAULT_LIST_SEPARATOR: &str = "|";

/// `[[sink]] format = "csv"` / `--to csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// A path, or `-`/none for stdout.
    pub output: Option<String>,
    /// The columns after template,url; otherwise from `schema`, or a first pass.
    pub columns: Option<Vec<String>>,
    /// Between the items of a list (default `|`).
    pub list_separator: String,
    /// Values that are not UTF-8: replaced (`utf8`) or read as ISO 8859-1.
    pub charset: Charset,
    /// Start with a UTF-8 byte-order mark, for Excel.
    pub bom: bool,
    /// An RDM `@SCHEMA` file giving the columns.
    pub schema: Option<std::path::PathBuf>,
}

/// Accumulates attribute names in first-seen order, for the engine's first pass over
/// re-readable inputs. Memory is bounded: past `limit` distinct names, new names are only
/// counted ([`ColumnCollector::overflow`]).
#[derive(Debug, Clone)]
pub struct ColumnCollector {
    names: Vec<String>,
    seen: HashSet<String>,
    limit: usize,
    overflow: u64,
}

impl Default for ColumnCollector {
    fn default() -> Self {
        ColumnCollector::new(ColumnCollector::DEFAULT_LIMIT)
    }
}

impl ColumnCollector {
    /// The default bound on distinct columns (spreadsheets stop at 16384).
    pub const DEFAULT_LIMIT: usize = 10_000;

    /// A collector keeping at most `limit` distinct names.
    pub fn new(limit: usize) -> ColumnCollector {
        ColumnCollector {
            names: Vec::new(),
            seen: HashSet::new(),
            limit,
            overflow: 0,
        }
    }

    /// Notes the attribute names of one record.
    pub fn observe(&mut self, record: &Record) {
        for attr in &record.attributes {
            let name = attr.name_str();
            if self.seen.contains(name.as_ref()) {
                continue;
            }
            if self.names.len() >= self.limit {
                self.overflow += 1;
                continue;
            }
            self.seen.insert(name.to_string());
            self.names.push(name.into_owned());
        }
    }

    /// The names so far, in first-seen order.
    pub fn columns(&self) -> &[String] {
        &self.names
    }

    /// How many attribute occurrences were not kept because the limit was reached.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// The names, in first-seen order.
    pub fn into_columns(self) -> Vec<String> {
        self.names
    }
}

/// The columns an RDM schema declares: its `SOIF-Attribute-N` values in numeric order.
pub fn columns_from_schema(schema: &SchemaColumns) -> Vec<String> {
    schema.attributes().map(str::to_string).collect()
}

/// Writes records as CSV rows.
pub struct CsvSink<W: Write + Send> {
    out: csv::Writer<W>,
    /// `None` until known (taken from the first record when not given).
    columns: Option<Columns>,
    header_written: bool,
    separator: String,
    charset: Charset,
    warnings: u64,
    /// One cell per column, reused from row to row.
    row: Vec<String>,
    /// Which cells of the current row have a value (an empty value counts).
    filled: Vec<bool>,
    /// Start the output with a UTF-8 byte-order mark ([`CsvSink::with_bom`]).
    bom: bool,
}

struct Columns {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Columns {
    fn new(names: Vec<String>) -> Columns {
        let mut index = HashMap::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            // A column named twice is written twice; values go to the first.
            index.entry(n.clone()).or_insert(i);
        }
        Columns { names, index }
    }
}

impl<W: Write + Send> CsvSink<W> {
    /// A sink writing to `out`. With `columns: None`, the first record's attribute names
    /// become the columns.
    pub fn new(
        out: W,
        columns: Option<Vec<String>>,
        list_separator: &str,
        charset: Charset,
    ) -> CsvSink<W> {
        let out = csv::WriterBuilder::new()
            .terminator(csv::Terminator::CRLF)
            .quote_style(csv::QuoteStyle::Necessary)
            .from_writer(out);
        CsvSink {
            out,
            columns: columns.map(Columns::new),
            header_written: false,
            separator: list_separator.to_string(),
            charset,
            warnings: 0,
            row: Vec::new(),
            filled: Vec::new(),
            bom: false,
        }
    }

    /// Starts the output with a UTF-8 byte-order mark (`--bom`). Excel reads a CSV file
    /// without one in the system's legacy code page, so every non-ASCII character comes
    /// out wrong; with it, Excel reads UTF-8. Off by default: to most other readers the
    /// mark is part of the first column's name (Python reads it away only with
    /// `encoding="utf-8-sig"`).
    pub fn with_bom(mut self, bom: bool) -> CsvSink<W> {
        self.bom = bom;
        self
    }

    fn write_header(&mut self) -> Result<(), Error> {
        if self.header_written {
            return Ok(());
        }
        let names: &[String] = self.columns.as_ref().map_or(&[], |c| &c.names);
        self.out
            .write_record(
                // The mark goes before the header's first field: the file's first bytes.
                [
                    if self.bom {
                        "\u{feff}template"
                    } else {
                        "template"
                    },
                    "url",
                ]
                .into_iter()
                .chain(names.iter().map(String::as_str)),
            )
            .map_err(csv_error)?;
        self.header_written = true;
        Ok(())
    }

    /// Appends `value` as text to `cell`.
    fn render(&mut self, value: &Value, cell: &mut String) {
        match value {
            Value::Bytes(b) => {
                let text = text_counted(b, self.charset, &mut self.warnings);
                if text.contains('\0') {
                    self.warnings += 1;
                    cell.push_str(&text.replace('\0', "\u{fffd}"));
                } else {
                    cell.push_str(&text);
                }
            }
            Value::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        cell.push_str(&self.separator);
                    }
                    self.render(item, cell);
                }
            }
            // JSON escapes control characters (a NUL is `\u0000`), so no raw NUL gets in.
            Value::Object(_) => cell.push_str(&to_json(value, self.charset).to_string()),
        }
    }
}

fn csv_error(e: csv::Error) -> Error {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => Error::io("writing csv", io),
        other => Error::Fatal(format!("writing csv: {other:?}")),
    }
}

impl<W: Write + Send> Sink for CsvSink<W> {
    fn name(&self) -> &str {
        "csv"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        if self.columns.is_none() {
            let mut c = ColumnCollector::default();
            c.observe(record);
            self.columns = Some(Columns::new(c.into_columns()));
        }
        self.write_header()?;
        let ncols = self.columns.as_ref().map_or(0, |c| c.names.len());
        let mut row = std::mem::take(&mut self.row);
        row.iter_mut().for_each(String::clear);
        row.resize(ncols, String::new());
        let mut filled = std::mem::take(&mut self.filled);
        filled.clear();
        filled.resize(ncols, false);
        for attr in &record.attributes {
            let name = attr.name_str();
            let slot = self
                .columns
                .as_ref()
                .and_then(|c| c.index.get(name.as_ref()).copied());
            let Some(i) = slot else {
                // No column for it: not written, but counted.
                self.warnings += 1;
                continue;
            };
            let mut cell = std::mem::take(&mut row[i]);
            if filled[i] {
                // The same name twice in one record: joined like a list.
                cell.push_str(&self.separator);
            }
            filled[i] = true;
            self.render(&attr.value, &mut cell);
            row[i] = cell;
        }
        self.filled = filled;
        let template = text_counted(&record.template, self.charset, &mut self.warnings);
        let url = text_counted(&record.url, self.charset, &mut self.warnings);
        let result = self.out.write_record(
            [template.as_ref(), url.as_ref()]
                .into_iter()
                .chain(row.iter().map(String::as_str)),
        );
        self.row = row;
        result.map_err(|e| SinkError::Fatal(csv_error(e)))
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.write_header()?;
        self.out
            .flush()
            .map_err(|e| Error::io("flushing csv output", e))
    }

    fn warnings(&self) -> u64 {
        self.warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(columns: Option<Vec<String>>, records: &[Record], charset: Charset) -> (String, u64) {
        let mut out = Vec::new();
        let mut sink = CsvSink::new(&mut out, columns, "|", charset);
        for r in records {
            sink.write(r).unwrap();
        }
        sink.finish().unwrap();
        let w = sink.warnings();
        drop(sink);
        (String::from_utf8(out).unwrap(), w)
    }

    #[test]
    fn collector_keeps_first_seen_order_and_bound() {
        let mut c = ColumnCollector::new(3);
        c.observe(&Record::new("A", "-").with("B", "").with("A", ""));
        c.observe(
            &Record::new("A", "-")
                .with("A", "")
                .with("C", "")
                .with("D", ""),
        );
        assert_eq!(c.columns(), ["B", "A", "C"]);
        assert_eq!(c.overflow(), 1);
    }

    #[test]
    fn quoting_lists_repeats_and_missing_columns() {
        let r = Record::new("DOCUMENT", "http://x/a b")
            .with("Title", "a, \"quoted\"\nsecond line")
            .with("Author", Value::List(vec!["A".into(), "B".into()]))
            .with("Keywords", "k1")
            .with("Keywords", "k2")
            .with("Unlisted", "x");
        let cols = ["Title", "Author", "Keywords", "Empty"]
            .map(String::from)
            .to_vec();
        let (out, warnings) = run(Some(cols), &[r], Charset::Utf8);
        assert_eq!(
            out,
            "template,url,Title,Author,Keywords,Empty\r\n\
             DOCUMENT,http://x/a b,\"a, \"\"quoted\"\"\nsecond line\",A|B,k1|k2,\r\n"
        );
        assert_eq!(warnings, 1, "the attribute without a column is counted");
    }

    #[test]
    fn non_utf8_and_nul() {
        let r = Record::new("FILE", "-")
            .with("T", Value::from(b"caf\xe9".to_vec()))
            .with("N", "a\0b");
        let cols = Some(vec!["T".to_string(), "N".to_string()]);
        let (out, w) = run(cols.clone(), std::slice::from_ref(&r), Charset::Latin1);
        assert!(out.ends_with("FILE,-,café,a\u{fffd}b\r\n"), "{out}");
        assert_eq!(w, 1);
        let (out, w) = run(cols, &[r], Charset::Utf8);
        assert!(out.ends_with("FILE,-,caf\u{fffd},a\u{fffd}b\r\n"), "{out}");
        assert_eq!(w, 2);
    }

    #[test]
    fn columns_from_first_record_and_empty_output() {
        let (out, _) = run(None, &[], Charset::Utf8);
        assert_eq!(out, "template,url\r\n");
        let (out, w) = run(
            None,
            &[
                Record::new("A", "u1").with("X", "1"),
                Record::new("A", "u2").with("Y", "2"),
            ],
            Charset::Utf8,
        );
        assert_eq!(out, "template,url,X\r\nA,u1,1\r\nA,u2,\r\n");
        assert_eq!(w, 1);
    }

    #[test]
    fn repeated_name_with_an_empty_first_value_keeps_its_place() {
        let r = Record::new("A", "u").with("K", "").with("K", "x");
        let (out, _) = run(Some(vec!["K".into()]), &[r], Charset::Utf8);
        assert!(out.ends_with("A,u,|x\r\n"), "{out}");
    }

    #[test]
    fn nested_parts_are_json() {
        let r = Record::new("FILE", "u").with(
            "Embed",
            Value::List(vec![Value::Object(vec![soif_codecs::Attribute::new(
                "Type",
                "PostScript",
            )])]),
        );
        let (out, _) = run(Some(vec!["Embed".into()]), &[r], Charset::Utf8);
        assert!(
            out.ends_with("FILE,u,\"{\"\"Type\"\":\"\"PostScript\"\"}\"\r\n"),
            "{out}"
        );
    }
}
