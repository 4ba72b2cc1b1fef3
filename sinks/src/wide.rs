//! The wide layout of the `parquet` sink (`--parquet-layout wide`): `template`, `url`,
//! `action`, then one column per attribute.
//!
//! The columns are chosen as the CSV sink chooses its own (`--columns`, an RDM
//! `--schema`'s `SOIF-Attribute-N`, or a first pass over the inputs), and the first pass
//! also tells which attributes hold several values (a list after `-t collapse`, or a name
//! repeated within a record): those columns are lists (`List<Utf8>`). A schema's
//! `Data-Type-N` gives typed columns: `int`/`serial` → `Int64`, `float` → `Float64`,
//! `date`/`datetime` → `Timestamp(ms, UTC)` (Parquet has no timestamps in seconds) (read from Unix seconds, as Harvest writes
//! `Last-Modification-Time`, or an HTTP or ISO 8601 date); anything else is `Utf8`.
//!
//! A value that does not convert to its column's type is a record error (`--on-error`
//! applies): the record is not written at all. Text columns take values as the CSV sink
//! does: not UTF-8 → Latin-1 with `--charset latin1`, else U+FFFD and a warning; a nested
//! part is its JSON text; several values in a single-valued column are joined with the
//! list separator. An attribute without a column is not written and counts a warning.
//!
//! Column names are the attribute names; a name that equals an earlier one ignoring case
//! (or `template`, `url`, `action`) gets `_2`, `_3`, … because DuckDB and Spark resolve
//! column names ignoring case. The schema's metadata says `soif:layout` = `wide`, so soif
//! does not take the file for the lossless records layout when reading it back.

use crate::csv::ColumnCollector;
use crate::Charset;
use arrow_array::builder::{
    make_builder, ArrayBuilder, Float64Builder, Int64Builder, ListBuilder, StringBuilder,
    TimestampMillisecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use soif_codecs::rdm::RdmDate;
use soif_codecs::rules::text::{text_counted, to_json};
use soif_codecs::{Record, Value};
use soif_pipeline::Error;
use soif_store::SchemaColumns;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The wide layout's name in the schema metadata (`soif:layout`).
pub const WIDE_LAYOUT: &str = "wide";

/// A column's value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColumnType {
    #[default]
    Text,
    Int,
    Float,
    Timestamp,
}

impl ColumnType {
    /// From an RDM `Data-Type` (`int`, `float`, `date`, …; others are text).
    pub fn from_data_type(t: &str) -> ColumnType {
        match t.trim().to_ascii_lowercase().as_str() {
            "int" | "integer" | "serial" => ColumnType::Int,
            "float" | "real" | "double" => ColumnType::Float,
            "date" | "datetime" => ColumnType::Timestamp,
            _ => ColumnType::Text,
        }
    }

    fn arrow(self) -> DataType {
        match self {
            ColumnType::Text => DataType::Utf8,
            ColumnType::Int => DataType::Int64,
            ColumnType::Float => DataType::Float64,
            ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        }
    }

    fn name(self) -> &'static str {
        match self {
            ColumnType::Text => "text",
            ColumnType::Int => "int64",
            ColumnType::Float => "double",
            ColumnType::Timestamp => "timestamp",
        }
    }
}

/// One attribute column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WideColumn {
    /// The attribute it holds.
    pub attribute: String,
    pub ty: ColumnType,
    /// A list of values (the attribute had several values in some record).
    pub list: bool,
}

/// What the first pass learns for the wide layout: the attribute names in first-seen order
/// (as for CSV) and which of them hold several values somewhere.
#[derive(Debug, Default)]
pub struct ShapeCollector {
    pub names: ColumnCollector,
    pub multi: HashSet<String>,
}

impl ShapeCollector {
    /// Notes one record.
    pub fn observe(&mut self, record: &Record) {
        self.names.observe(record);
        let mut seen: HashSet<&[u8]> = HashSet::new();
        for a in &record.attributes {
            if matches!(a.value, Value::List(_)) || !seen.insert(&a.name) {
                self.multi.insert(a.name_str().into_owned());
            }
        }
    }
}

/// The columns for the given attribute names: types from the schema, lists where the
/// first pass saw several values.
pub fn plan_columns(
    names: &[String],
    schema: Option<&SchemaColumns>,
    multi: &HashSet<String>,
) -> Vec<WideColumn> {
    names
        .iter()
        .map(|n| WideColumn {
            attribute: n.clone(),
            ty: schema
                .and_then(|s| s.entry(n.as_bytes()))
                .and_then(|e| e.data_type.as_deref())
                .map(ColumnType::from_data_type)
                .unwrap_or_default(),
            list: multi.contains(n),
        })
        .collect()
}

/// One converted value.
enum Cell {
    Text(String),
    Int(i64),
    Float(f64),
    Ts(i64),
}

/// Builds record batches in the wide layout.
pub struct WideBuilder {
    columns: Vec<WideColumn>,
    schema: SchemaRef,
    index: HashMap<String, usize>,
    template: StringBuilder,
    url: StringBuilder,
    action: StringBuilder,
    builders: Vec<Box<dyn ArrayBuilder>>,
    charset: Charset,
    separator: String,
    rows: usize,
    bytes: usize,
    warnings: u64,
    /// Per column, the current record's values (reused).
    cells: Vec<Vec<Cell>>,
}

impl WideBuilder {
    pub fn new(columns: Vec<WideColumn>, charset: Charset, list_separator: &str) -> WideBuilder {
        let mut taken: HashSet<String> = ["template", "url", "action"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut fields = vec![
            Field::new("template", DataType::Utf8, true),
            Field::new("url", DataType::Utf8, true),
            Field::new("action", DataType::Utf8, true),
        ];
        let mut index = HashMap::new();
        for (i, c) in columns.iter().enumerate() {
            index.entry(c.attribute.clone()).or_insert(i);
            let mut name = c.attribute.clone();
            let mut n = 2;
            while !taken.insert(name.to_lowercase()) {
                name = format!("{}_{n}", c.attribute);
                n += 1;
            }
            let ty = if c.list {
                DataType::List(Arc::new(Field::new("item", c.ty.arrow(), true)))
            } else {
                c.ty.arrow()
            };
            fields.push(Field::new(name, ty, true));
        }
        let metadata = HashMap::from([
            (soif_arrow::LAYOUT_KEY.to_string(), WIDE_LAYOUT.to_string()),
            (soif_arrow::VERSION_KEY.to_string(), "1".to_string()),
        ]);
        let schema = Arc::new(Schema::new_with_metadata(fields, metadata));
        let builders = schema.fields()[3..]
            .iter()
            .map(|f| make_builder(f.data_type(), 0))
            .collect();
        WideBuilder {
            cells: columns.iter().map(|_| Vec::new()).collect(),
            columns,
            schema,
            index,
            template: StringBuilder::new(),
            url: StringBuilder::new(),
            action: StringBuilder::new(),
            builders,
            charset,
            separator: list_separator.to_string(),
            rows: 0,
            bytes: 0,
            warnings: 0,
        }
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Columns whose values are long text (none known up front: the writer's dictionary
    /// gives up on its own where values are long).
    pub fn long_columns(&self) -> Vec<::parquet::schema::types::ColumnPath> {
        Vec::new()
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    pub fn buffered_bytes(&self) -> usize {
        self.bytes
    }

    pub fn warnings(&self) -> u64 {
        self.warnings
    }

    fn convert(&mut self, col: usize, value: &Value, out: &mut Vec<Cell>) -> Result<(), String> {
        match value {
            Value::List(items) => {
                for item in items {
                    self.convert(col, item, out)?;
                }
                Ok(())
            }
            Value::Object(_) => {
                let text = to_json(value, self.charset).to_string();
                self.typed(col, text, out)
            }
            Value::Bytes(b) => {
                self.bytes += b.len() + 8;
                let text = text_counted(b, self.charset, &mut self.warnings).into_owned();
                self.typed(col, text, out)
            }
        }
    }

    fn typed(&self, col: usize, text: String, out: &mut Vec<Cell>) -> Result<(), String> {
        let c = &self.columns[col];
        let bad = |why: &str| {
            let mut shown: String = text.chars().take(40).collect();
            if shown.len() < text.len() {
                shown.push('…');
            }
            format!(
                "attribute `{}`: `{shown}` is not {why} (its column is {}, from the schema's Data-Type)",
                c.attribute,
                c.ty.name()
            )
        };
        let t = text.trim();
        out.push(match c.ty {
            ColumnType::Text => Cell::Text(text),
            ColumnType::Int => Cell::Int(t.parse().map_err(|_| bad("an integer"))?),
            ColumnType::Float => Cell::Float(t.parse().map_err(|_| bad("a number"))?),
            ColumnType::Timestamp => Cell::Ts(parse_time(t).ok_or_else(|| bad("a date"))?),
        });
        Ok(())
    }

    /// Adds one record; a value that does not convert rejects the whole record (nothing
    /// of it is added).
    pub fn push(&mut self, record: &Record) -> Result<(), String> {
        let mut cells = std::mem::take(&mut self.cells);
        cells.iter_mut().for_each(Vec::clear);
        let mut result = Ok(());
        for attr in &record.attributes {
            let Some(&col) = self.index.get(attr.name_str().as_ref()) else {
                self.warnings += 1;
                continue;
            };
            if let Err(e) = self.convert(col, &attr.value, &mut cells[col]) {
                result = Err(e);
                break;
            }
        }
        // A single-valued column given several values: text is joined, a number cannot be.
        if result.is_ok() {
            for (i, c) in self.columns.iter().enumerate() {
                if !c.list && cells[i].len() > 1 {
                    if c.ty != ColumnType::Text {
                        result = Err(format!(
                            "attribute `{}` has {} values; its column holds one {}",
                            c.attribute,
                            cells[i].len(),
                            c.ty.name()
                        ));
                        break;
                    }
                    let joined = cells[i]
                        .iter()
                        .filter_map(|c| match c {
                            Cell::Text(t) => Some(t.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join(&self.separator);
                    cells[i] = vec![Cell::Text(joined)];
                }
            }
        }
        if let Err(e) = result {
            self.cells = cells;
            return Err(e);
        }
        let mut w = 0;
        let template = text_counted(&record.template, self.charset, &mut w);
        let url = text_counted(&record.url, self.charset, &mut w);
        self.template.append_value(template);
        self.url.append_value(url);
        self.warnings += w;
        match record.action {
            Some(a) => self.action.append_value(a.as_str()),
            None => self.action.append_null(),
        }
        self.bytes += record.template.len() + record.url.len() + 16;
        for (i, c) in self.columns.iter().enumerate() {
            let b = &mut self.builders[i];
            if c.list {
                let Some(list) = b
                    .as_any_mut()
                    .downcast_mut::<ListBuilder<Box<dyn ArrayBuilder>>>()
                else {
                    continue;
                };
                if cells[i].is_empty() {
                    list.append(false);
                    continue;
                }
                for cell in &cells[i] {
                    append(list.values().as_mut(), Some(cell));
                }
                list.append(true);
            } else {
                append(b.as_mut(), cells[i].first());
            }
        }
        self.cells = cells;
        self.rows += 1;
        Ok(())
    }

    /// The rows so far as one batch; the builder is empty again.
    pub fn finish(&mut self) -> Result<RecordBatch, Error> {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.template.finish()),
            Arc::new(self.url.finish()),
            Arc::new(self.action.finish()),
        ];
        columns.extend(self.builders.iter_mut().map(|b| b.finish()));
        self.rows = 0;
        self.bytes = 0;
        RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| Error::Fatal(format!("wide layout: {e}")))
    }
}

/// Appends one cell (or a null) to a builder of the cell's type.
fn append(b: &mut dyn ArrayBuilder, cell: Option<&Cell>) {
    let any = b.as_any_mut();
    if let Some(s) = any.downcast_mut::<StringBuilder>() {
        match cell {
            Some(Cell::Text(t)) => s.append_value(t),
            _ => s.append_null(),
        }
    } else if let Some(i) = any.downcast_mut::<Int64Builder>() {
        match cell {
            Some(Cell::Int(v)) => i.append_value(*v),
            _ => i.append_null(),
        }
    } else if let Some(f) = any.downcast_mut::<Float64Builder>() {
        match cell {
            Some(Cell::Float(v)) => f.append_value(*v),
            _ => f.append_null(),
        }
    } else if let Some(t) = any.downcast_mut::<TimestampMillisecondBuilder>() {
        match cell {
            Some(Cell::Ts(v)) => t.append_value(v.saturating_mul(1000)),
            _ => t.append_null(),
        }
    }
}

/// Unix seconds (Harvest's `Last-Modification-Time`) or an HTTP / ISO 8601 date.
fn parse_time(t: &str) -> Option<i64> {
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().ok();
    }
    RdmDate::parse(t).ok().map(|d| d.unix_seconds())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Int64Array, ListArray, StringArray, TimestampMillisecondArray};

    #[test]
    fn typed_lists_and_errors() {
        let cols = vec![
            WideColumn {
                attribute: "Title".into(),
                ty: ColumnType::Text,
                list: false,
            },
            WideColumn {
                attribute: "Author".into(),
                ty: ColumnType::Text,
                list: true,
            },
            WideColumn {
                attribute: "Size".into(),
                ty: ColumnType::Int,
                list: false,
            },
            WideColumn {
                attribute: "title".into(),
                ty: ColumnType::Timestamp,
                list: false,
            },
        ];
        let mut b = WideBuilder::new(cols, Charset::Utf8, "|");
        let names: Vec<_> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(
            names,
            ["template", "url", "action", "Title", "Author", "Size", "title_2"]
        );
        b.push(
            &Record::new("FILE", "u")
                .with("Title", "T")
                .with("Author", Value::List(vec!["A".into(), "B".into()]))
                .with("Size", " 42 ")
                .with("title", "774988159"),
        )
        .unwrap();
        let e = b
            .push(&Record::new("FILE", "v").with("Size", "many"))
            .unwrap_err();
        assert!(e.contains("`Size`") && e.contains("many"), "{e}");
        b.push(&Record::new("FILE", "w").with("title", "Sun, 06 Nov 1994 08:49:37 GMT"))
            .unwrap();
        let batch = b.finish().unwrap();
        assert_eq!(batch.num_rows(), 2, "the rejected record added nothing");
        let size = batch
            .column(5)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(size.value(0), 42);
        assert!(size.is_null(1));
        let authors = batch
            .column(4)
            .as_any()
            .downcast_ref::<ListArray>()
            .unwrap();
        let first = authors.value(0);
        let first = first.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((first.value(0), first.value(1)), ("A", "B"));
        assert!(authors.is_null(1));
        let ts = batch
            .column(6)
            .as_any()
            .downcast_ref::<TimestampMillisecondArray>()
            .unwrap();
        assert_eq!(
            (ts.value(0), ts.value(1)),
            (774_988_159_000, 784_111_777_000)
        );
    }
}
