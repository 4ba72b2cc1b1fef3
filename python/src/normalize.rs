//! Batches that hold the layout's columns in other Arrow types, back to the layout.
//!
//! What soif writes is read back as it is. But a table that went through Polars comes
//! back with `string_view` and `large_list`, one that went through DuckDB or pandas may
//! have `large_string`, and both drop the schema's metadata. `soif.write` accepts those:
//! the columns are found by name and converted (a copy, on the write path only). A schema
//! whose metadata names *another* layout or version is refused, as is one without the
//! layout's columns.

use arrow_array::builder::{BinaryBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{
    new_null_array, Array, ArrayRef, BinaryArray, ListArray, RecordBatch, StringArray, StructArray,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};
use soif_arrow::{check_schema, column_list, LayoutError, LAYOUT_KEY};
use std::sync::Arc;

fn err(reason: impl Into<String>) -> LayoutError {
    LayoutError::Schema {
        reason: reason.into(),
    }
}

/// `batch` in the layout's exact schema (see the module documentation).
pub fn to_layout(batch: &RecordBatch) -> Result<RecordBatch, LayoutError> {
    let schema = batch.schema();
    if schema.metadata().contains_key(LAYOUT_KEY) {
        // It says what it is: refuse another layout or version outright.
        if check_schema(&schema).is_ok() {
            if schema.fields() == soif_arrow::schema().fields() {
                return Ok(batch.clone());
            }
        } else {
            check_schema(&schema)?;
        }
    }
    let layout = soif_arrow::schema();
    let rows = batch.num_rows();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(layout.fields().len());
    for field in layout.fields() {
        let name = field.name().as_str();
        let column = match batch.column_by_name(name) {
            Some(c) => c.clone(),
            None if matches!(name, "action" | "template_bytes" | "url_bytes") => {
                new_null_array(field.data_type(), rows)
            }
            None => {
                return Err(err(format!(
                    "column `{name}` is missing (columns: {})",
                    column_list(&schema)
                )))
            }
        };
        columns.push(match field.data_type() {
            DataType::Utf8 => Arc::new(utf8(&column, name)?),
            DataType::Binary => Arc::new(binary(&column, name)?),
            _ => Arc::new(attributes(&column, field)?),
        });
    }
    RecordBatch::try_new(layout, columns).map_err(|e| err(e.to_string()))
}

fn utf8(a: &ArrayRef, name: &str) -> Result<StringArray, LayoutError> {
    Ok(match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().clone(),
        DataType::LargeUtf8 => a.as_string::<i64>().iter().collect(),
        DataType::Utf8View => a.as_string_view().iter().collect(),
        DataType::Null => {
            let mut b = StringBuilder::new();
            (0..a.len()).for_each(|_| b.append_null());
            b.finish()
        }
        other => return Err(err(format!("column `{name}` is {other}, not text"))),
    })
}

fn binary(a: &ArrayRef, name: &str) -> Result<BinaryArray, LayoutError> {
    Ok(match a.data_type() {
        DataType::Binary => a.as_binary::<i32>().clone(),
        DataType::LargeBinary => a.as_binary::<i64>().iter().collect(),
        DataType::BinaryView => a.as_binary_view().iter().collect(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let s = utf8(a, name)?;
            let mut b = BinaryBuilder::new();
            s.iter().for_each(|v| b.append_option(v.map(str::as_bytes)));
            b.finish()
        }
        DataType::Null => {
            let mut b = BinaryBuilder::new();
            (0..a.len()).for_each(|_| b.append_null());
            b.finish()
        }
        other => return Err(err(format!("column `{name}` is {other}, not bytes"))),
    })
}

/// The `attributes` column: a list (or large list) of structs with the attribute fields.
fn attributes(a: &ArrayRef, field: &Field) -> Result<ListArray, LayoutError> {
    let DataType::List(item) = field.data_type() else {
        return Err(err("the layout's `attributes` is a list"));
    };
    let (offsets, values, nulls): (OffsetBuffer<i32>, &ArrayRef, _) = match a.data_type() {
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            (l.offsets().clone(), l.values(), l.nulls().cloned())
        }
        DataType::LargeList(_) => {
            let l = a.as_list::<i64>();
            let small = l
                .offsets()
                .iter()
                .map(|&o| i32::try_from(o))
                .collect::<Result<Vec<i32>, _>>()
                .map_err(|_| err("`attributes` holds more than 2^31 attributes in one batch"))?;
            (
                OffsetBuffer::new(ScalarBuffer::from(small)),
                l.values(),
                l.nulls().cloned(),
            )
        }
        other => {
            return Err(err(format!(
                "column `attributes` is {other}, not a list of attributes"
            )))
        }
    };
    let s = values
        .as_struct_opt()
        .ok_or_else(|| err("`attributes` items are not structs of name, value, bytes"))?;
    let n = s.len();
    let get = |name: &str| s.column_by_name(name).cloned();
    let names = match get("name") {
        Some(c) => utf8(&c, "attributes.name")?,
        None => return Err(err("`attributes` items have no `name` field")),
    };
    let text = match get("value") {
        Some(c) => utf8(&c, "attributes.value")?,
        None => utf8(&new_null_array(&DataType::Null, n), "")?,
    };
    let bytes = match get("bytes") {
        Some(c) => binary(&c, "attributes.bytes")?,
        None => binary(&new_null_array(&DataType::Null, n), "")?,
    };
    let name_bytes = match get("name_bytes") {
        Some(c) => binary(&c, "attributes.name_bytes")?,
        None => binary(&new_null_array(&DataType::Null, n), "")?,
    };
    let DataType::Struct(fields) = item.data_type() else {
        return Err(err("the layout's attribute is a struct"));
    };
    let items = StructArray::try_new(
        fields.clone(),
        vec![
            Arc::new(names),
            Arc::new(text),
            Arc::new(bytes),
            Arc::new(name_bytes),
        ],
        s.nulls().cloned(),
    )
    .map_err(|e| err(e.to_string()))?;
    ListArray::try_new(item.clone(), offsets, Arc::new(items), nulls)
        .map_err(|e| err(e.to_string()))
}
