//! The Arrow layout of SOIF records: one schema that the Parquet and Arrow IPC sinks
//! write, their sources read back, the Python package streams and the Spark data source
//! returns, so a file written by any of them is read by all.
//!
//! # The layout (`soif:layout` = `records`, version 1)
//!
//! | column | Arrow type | holds |
//! |---|---|---|
//! | `template` | `Utf8` | the template (`FILE`); null only when not UTF-8 (then `template_bytes`) |
//! | `url` | `Utf8` | the URL (`-` when none); null only when not UTF-8 (then `url_bytes`) |
//! | `action` | `Utf8` | `delete`, `refresh`, `update` inside a Harvest envelope, else null |
//! | `attributes` | `List<Struct>` | the attributes in order, repeated names kept |
//! | `template_bytes` | `Binary` | the template's bytes when they are not UTF-8, else null |
//! | `url_bytes` | `Binary` | the URL's bytes when they are not UTF-8, else null |
//!
//! Each attribute is a struct of four fields, exactly one of each pair set:
//!
//! | field | Arrow type | holds |
//! |---|---|---|
//! | `name` | `Utf8` | the name, when UTF-8 |
//! | `value` | `Utf8` | the value, when UTF-8 (the common case: a query needs no cast) |
//! | `bytes` | `Binary` | the value's exact bytes, when they are not UTF-8 |
//! | `name_bytes` | `Binary` | the name's bytes, when they are not UTF-8 |
//!
//! Why text *or* bytes rather than both: the text of a UTF-8 value *is* its exact bytes,
//! so storing both would double every `Full-Text` for nothing; a reader that wants bytes
//! takes `bytes`, else the UTF-8 of `value`. Nothing is lost, so `soif → parquet → soif`
//! is byte for byte.
//!
//! After the `collapse` transform a multi-valued attribute is a list: it is written as
//! repeated entries of its collapsed name (`Author-1…N` → `Author`, `Author`, …, in
//! order), so "all authors" is one filter on `name`; nested parts (`Embed<n>-X`) are
//! written back under their SOIF names.
//!
//! Every field is nullable and the string types are plain `Utf8`/`Binary` (not the large
//! or view variants): Spark's Python data sources compare the first batch's types
//! strictly with the declared schema, and Spark's own types are nullable. The schema's
//! metadata carries the layout name and version ([`LAYOUT_KEY`], [`VERSION_KEY`]); a
//! reader refuses another layout with a clear error ([`check_schema`]).
//!
//! ```
//! use soif_arrow::{BatchBuilder, records};
//! use soif_codecs::soif::{decode_all, DecoderOptions};
//! let input = b"@FILE { http://a/\nTitle{5}:\tHello\nAuthor-1{3}:\tAnn\n}\n";
//! let mut builder = BatchBuilder::new();
//! for r in decode_all(input, DecoderOptions::default()) {
//!     builder.push(&r.unwrap());
//! }
//! let batch = builder.finish();
//! assert_eq!(batch.num_rows(), 1);
//! let back = records(&batch).unwrap();
//! assert_eq!(back[0].get_str("Title"), Some("Hello"));
//! ```

mod layout;
mod spans;
pub use layout::{
    attribute_fields, check_schema, column_list, schema, LayoutError, LAYOUT, LAYOUT_KEY, VERSION,
    VERSION_KEY,
};
pub use spans::{Spans, HUGE_MIN, POOL_BYTES, POOL_DECAY};

use layout::item_field;

use arrow_array::builder::{ArrayBuilder, BinaryBuilder, StringBuilder};
use arrow_array::{Array, BinaryArray, ListArray, RecordBatch, StringArray, StructArray};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use bytes::Bytes;
use soif_codecs::{Action, Attribute, Record, Value};
use std::sync::Arc;

/// Builds record batches in the layout, one record at a time.
///
/// The caller decides when a batch is full ([`len`](Self::len), and
/// [`buffered_bytes`](Self::buffered_bytes) for a bound in bytes) and calls
/// [`finish`](Self::finish); the builder is then empty and can go on.
pub struct BatchBuilder {
    template: StringBuilder,
    url: StringBuilder,
    action: StringBuilder,
    /// The `attributes` list: its offsets and the four fields of its items, kept as
    /// concrete builders (a `StructBuilder` would downcast each field per attribute).
    offsets: Vec<i32>,
    /// Which rows of `attributes` are null (only [`push_null`](BatchBuilder::push_null)'s).
    list_nulls: NullBufferBuilder,
    names: StringBuilder,
    values: StringBuilder,
    value_bytes: BinaryBuilder,
    name_bytes: BinaryBuilder,
    template_bytes: BinaryBuilder,
    url_bytes: BinaryBuilder,
    rows: usize,
    bytes: usize,
}

impl Default for BatchBuilder {
    fn default() -> Self {
        BatchBuilder::new()
    }
}

impl BatchBuilder {
    /// An empty builder.
    pub fn new() -> BatchBuilder {
        BatchBuilder {
            template: StringBuilder::new(),
            url: StringBuilder::new(),
            action: StringBuilder::new(),
            offsets: vec![0],
            list_nulls: NullBufferBuilder::new(0),
            names: StringBuilder::new(),
            values: StringBuilder::new(),
            value_bytes: BinaryBuilder::new(),
            name_bytes: BinaryBuilder::new(),
            template_bytes: BinaryBuilder::new(),
            url_bytes: BinaryBuilder::new(),
            rows: 0,
            bytes: 0,
        }
    }

    /// An empty builder with room for `rows` records holding `attributes` attributes,
    /// `name_bytes` bytes of names and `value_bytes` bytes of values in all, so that a
    /// batch of known size is built without growing (and copying) its buffers. Text and
    /// bytes each get the whole room, as which values are UTF-8 is not known yet (room
    /// never written is never touched, so a large allocation costs no memory for it).
    /// The room is for the first batch; after [`finish`](Self::finish) the builder grows
    /// as [`new`](Self::new)'s does.
    pub fn with_capacity(
        rows: usize,
        attributes: usize,
        name_bytes: usize,
        value_bytes: usize,
    ) -> BatchBuilder {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        BatchBuilder {
            template: StringBuilder::with_capacity(rows, rows * 8),
            url: StringBuilder::with_capacity(rows, rows * 64),
            action: StringBuilder::with_capacity(rows, 0),
            offsets,
            list_nulls: NullBufferBuilder::new(rows),
            names: StringBuilder::with_capacity(attributes, name_bytes),
            values: StringBuilder::with_capacity(attributes, value_bytes),
            value_bytes: BinaryBuilder::with_capacity(attributes, value_bytes),
            name_bytes: BinaryBuilder::new(),
            template_bytes: BinaryBuilder::new(),
            url_bytes: BinaryBuilder::new(),
            rows: 0,
            bytes: 0,
        }
    }

    /// Rows added since the last [`finish`](Self::finish).
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row was added since the last [`finish`](Self::finish).
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// About how many bytes of names and values the pending rows hold.
    pub fn buffered_bytes(&self) -> usize {
        self.bytes
    }

    /// Adds one record (collapsed values are written as described in the crate docs).
    pub fn push(&mut self, record: &Record) {
        text_or_bytes(
            &record.template,
            &mut self.template,
            &mut self.template_bytes,
        );
        text_or_bytes(&record.url, &mut self.url, &mut self.url_bytes);
        match record.action {
            Some(a) => self.action.append_value(a.as_str()),
            None => self.action.append_null(),
        }
        self.bytes += record.template.len() + record.url.len() + 16;
        for attr in &record.attributes {
            self.push_attribute(&attr.name, &attr.value);
        }
        // More than 2^31 attributes in one batch: arrow's own ListBuilder panics alike.
        let end = i32::try_from(self.names.len())
            .unwrap_or_else(|_| panic!("more than 2^31 attributes in one batch"));
        self.offsets.push(end);
        self.list_nulls.append_non_null();
        self.rows += 1;
    }

    /// Adds a row whose every column is null: where a reader that keeps bad records as
    /// rows (the Python package's `on_error="column"`, Spark's PERMISSIVE mode) puts one,
    /// its bytes and error going in a column of its own.
    pub fn push_null(&mut self) {
        self.template.append_null();
        self.url.append_null();
        self.action.append_null();
        self.template_bytes.append_null();
        self.url_bytes.append_null();
        let end = self.offsets.last().copied().unwrap_or(0);
        self.offsets.push(end);
        self.list_nulls.append_null();
        self.rows += 1;
    }

    fn push_attribute(&mut self, name: &Bytes, value: &Value) {
        layout_pairs(name, value, &mut |name, value| {
            self.bytes += name.len() + value.len() + 16;
            text_or_bytes(name, &mut self.names, &mut self.name_bytes);
            text_or_bytes(value, &mut self.values, &mut self.value_bytes);
        });
    }

    /// The `attributes` column of the rows added so far; its builders are empty again.
    fn finish_attributes(&mut self) -> ListArray {
        let items = StructArray::new(
            attribute_fields(),
            vec![
                Arc::new(self.names.finish()),
                Arc::new(self.values.finish()),
                Arc::new(self.value_bytes.finish()),
                Arc::new(self.name_bytes.finish()),
            ],
            None,
        );
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        ListArray::new(
            item_field(),
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Arc::new(items),
            self.list_nulls.finish(),
        )
    }

    /// The rows added so far as one batch; the builder is empty again.
    pub fn finish(&mut self) -> RecordBatch {
        self.rows = 0;
        self.bytes = 0;
        let columns: Vec<Arc<dyn Array>> = vec![
            Arc::new(self.template.finish()),
            Arc::new(self.url.finish()),
            Arc::new(self.action.finish()),
            Arc::new(self.finish_attributes()),
            Arc::new(self.template_bytes.finish()),
            Arc::new(self.url_bytes.finish()),
        ];
        // The columns are built to the schema above, so this cannot fail; were it ever
        // to, an empty batch would hide the bug, so the message says where to look.
        RecordBatch::try_new(schema(), columns)
            .unwrap_or_else(|e| panic!("soif-arrow builds batches to its own schema: {e}"))
    }
}

/// The (name, value) pairs an attribute is written as in the layout (see the crate
/// docs): a value as it is, a list's items under the list's own name in order, parts
/// (and anything nested deeper) under their SOIF names. `soif.records` hands a record's
/// attributes out the same way.
pub fn layout_pairs(name: &Bytes, value: &Value, f: &mut impl FnMut(&Bytes, &Bytes)) {
    match value {
        Value::Bytes(b) => f(name, b),
        Value::List(items) if items.iter().all(|i| matches!(i, Value::Bytes(_))) => {
            for item in items {
                layout_pairs(name, item, f);
            }
        }
        _ => {
            let one = Record {
                attributes: vec![Attribute {
                    name: name.clone(),
                    value: value.clone(),
                }],
                ..Record::default()
            };
            for a in one.flattened().attributes.iter() {
                layout_pairs(&a.name, &a.value, f);
            }
        }
    }
}

fn text_or_bytes(b: &[u8], text: &mut StringBuilder, bytes: &mut BinaryBuilder) {
    match std::str::from_utf8(b) {
        Ok(s) => {
            text.append_value(s);
            bytes.append_null();
        }
        Err(_) => {
            text.append_null();
            bytes.append_value(b);
        }
    }
}

/// The records of a batch in the layout (checked with [`check_schema`] first).
pub fn records(batch: &RecordBatch) -> Result<Vec<Record>, LayoutError> {
    let view = BatchView::new(batch)?;
    (0..batch.num_rows()).map(|i| view.record(i)).collect()
}

/// Typed access to the columns of a batch in the layout, for reading rows one by one.
pub struct BatchView<'a> {
    template: &'a StringArray,
    url: &'a StringArray,
    action: &'a StringArray,
    attributes: &'a ListArray,
    names: &'a StringArray,
    values: &'a StringArray,
    bytes: &'a BinaryArray,
    name_bytes: &'a BinaryArray,
    template_bytes: &'a BinaryArray,
    url_bytes: &'a BinaryArray,
}

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T, LayoutError> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| LayoutError::Schema {
            reason: format!("column `{name}` is missing or of another type"),
        })
}

fn struct_field<'a, T: 'static>(s: &'a StructArray, name: &str) -> Result<&'a T, LayoutError> {
    s.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| LayoutError::Schema {
            reason: format!("attribute field `{name}` is missing or of another type"),
        })
}

impl<'a> BatchView<'a> {
    /// Checks the batch's schema and takes its columns.
    pub fn new(batch: &'a RecordBatch) -> Result<BatchView<'a>, LayoutError> {
        check_schema(&batch.schema())?;
        let attributes: &ListArray = column(batch, "attributes")?;
        let items = attributes
            .values()
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(|| LayoutError::Schema {
                reason: "`attributes` items are not structs".into(),
            })?;
        Ok(BatchView {
            template: column(batch, "template")?,
            url: column(batch, "url")?,
            action: column(batch, "action")?,
            attributes,
            names: struct_field(items, "name")?,
            values: struct_field(items, "value")?,
            bytes: struct_field(items, "bytes")?,
            name_bytes: struct_field(items, "name_bytes")?,
            template_bytes: column(batch, "template_bytes")?,
            url_bytes: column(batch, "url_bytes")?,
        })
    }

    /// Row `i` as a record (no position, no raw bytes).
    pub fn record(&self, i: usize) -> Result<Record, LayoutError> {
        let err = |reason: String| LayoutError::Row { row: i, reason };
        let template = pick(self.template, self.template_bytes, i)
            .ok_or_else(|| err("neither `template` nor `template_bytes`".into()))?;
        let url = pick(self.url, self.url_bytes, i)
            .ok_or_else(|| err("neither `url` nor `url_bytes`".into()))?;
        let action = if self.action.is_null(i) {
            None
        } else {
            let a = self.action.value(i);
            Some(Action::parse(a).ok_or_else(|| err(format!("unknown action `{a}`")))?)
        };
        let mut attributes = Vec::new();
        if !self.attributes.is_null(i) {
            let offsets = self.attributes.value_offsets();
            let (from, to) = (offsets[i] as usize, offsets[i + 1] as usize);
            attributes.reserve(to - from);
            for j in from..to {
                let name = pick(self.names, self.name_bytes, j)
                    .ok_or_else(|| err(format!("attribute {}: no name", j - from + 1)))?;
                let value = pick(self.values, self.bytes, j).unwrap_or_default();
                attributes.push(Attribute {
                    name,
                    value: Value::Bytes(value),
                });
            }
        }
        Ok(Record {
            template,
            url,
            attributes,
            action,
            ..Record::default()
        })
    }
}

/// The text column's value as bytes, else the bytes column's.
fn pick(text: &StringArray, bytes: &BinaryArray, i: usize) -> Option<Bytes> {
    if text.is_valid(i) {
        Some(Bytes::copy_from_slice(text.value(i).as_bytes()))
    } else if bytes.is_valid(i) {
        Some(Bytes::copy_from_slice(bytes.value(i)))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field, Schema};

    fn rec(attrs: &[(&[u8], &[u8])]) -> Record {
        let mut r = Record::new(&b"FILE"[..], &b"http://a/"[..]);
        for (n, v) in attrs {
            r.attributes.push(Attribute {
                name: Bytes::copy_from_slice(n),
                value: Value::Bytes(Bytes::copy_from_slice(v)),
            });
        }
        r
    }

    #[test]
    fn text_and_bytes_are_exclusive_and_lossless() {
        let r = rec(&[
            (b"Title", b"Hello"),
            (b"Thumb", b"\xff\xd8\x00"),
            (b"N\xe9", b""),
        ]);
        let mut b = BatchBuilder::new();
        b.push(&r);
        let batch = b.finish();
        let back = records(&batch).unwrap();
        assert_eq!(back[0].attributes, r.attributes);
        let view = BatchView::new(&batch).unwrap();
        assert!(view.values.is_valid(0) && view.bytes.is_null(0));
        assert!(view.values.is_null(1) && view.bytes.is_valid(1));
        assert!(view.names.is_null(2) && view.name_bytes.is_valid(2));
        assert_eq!(view.values.value(2), "", "an empty value is text, not null");
    }

    #[test]
    fn with_capacity_builds_the_same_batch() {
        let r = rec(&[(b"Title", b"Hello"), (b"Thumb", b"\xff\xd8\x00")]);
        let (mut a, mut b) = (
            BatchBuilder::new(),
            BatchBuilder::with_capacity(2, 4, 20, 20),
        );
        for _ in 0..2 {
            a.push(&r);
            b.push(&r);
        }
        assert_eq!(a.finish(), b.finish());
        b.push(&r);
        assert_eq!(records(&b.finish()).unwrap()[0].attributes, r.attributes);
    }

    #[test]
    fn collapsed_lists_are_repeated_names() {
        let mut r = Record::new(&b"FILE"[..], &b"-"[..]);
        r.attributes.push(Attribute {
            name: Bytes::from_static(b"Author"),
            value: Value::List(vec![
                Value::Bytes(Bytes::from_static(b"Ann")),
                Value::Bytes(Bytes::from_static(b"Bob")),
            ]),
        });
        let mut b = BatchBuilder::new();
        b.push(&r);
        let back = records(&b.finish()).unwrap();
        let names: Vec<_> = back[0]
            .attributes
            .iter()
            .map(|a| a.name_str().into_owned())
            .collect();
        assert_eq!(names, ["Author", "Author"]);
    }

    #[test]
    fn another_layout_is_refused_clearly() {
        let other = Schema::new(vec![Field::new("x", DataType::Int64, true)]);
        let e = check_schema(&other).unwrap_err().to_string();
        assert!(
            e.contains("no `soif:layout` metadata") && e.contains("x"),
            "{e}"
        );
        let mut meta = schema().metadata().clone();
        meta.insert(VERSION_KEY.to_string(), "9".to_string());
        let newer = Schema::new_with_metadata(schema().fields().clone(), meta);
        assert!(check_schema(&newer)
            .unwrap_err()
            .to_string()
            .contains("version 9"));
    }

    #[test]
    fn a_null_row_is_null_in_every_column() {
        let mut b = BatchBuilder::new();
        b.push(&Record::new("FILE", "http://a/").with("Title", "x"));
        b.push_null();
        b.push(&Record::new("FILE", "http://b/").with("Title", "y"));
        let batch = b.finish();
        assert_eq!(batch.num_rows(), 3);
        for column in batch.columns() {
            assert!(column.is_null(1), "{:?}", column.data_type());
        }
        let list = batch
            .column(3)
            .as_any()
            .downcast_ref::<ListArray>()
            .unwrap();
        assert_eq!(
            list.value_length(2),
            1,
            "offsets stay right after the null row"
        );
        assert!(!batch.column(1).is_null(2));
    }

    #[test]
    fn every_field_is_nullable_and_plain() {
        fn walk(f: &Field) {
            assert!(f.is_nullable(), "{} is nullable", f.name());
            match f.data_type() {
                DataType::Utf8 | DataType::Binary => {}
                DataType::List(item) => walk(item),
                DataType::Struct(fields) => fields.iter().for_each(|f| walk(f)),
                other => panic!("{}: {other} is not a plain type", f.name()),
            }
        }
        schema().fields().iter().for_each(|f| walk(f));
    }
}
