//! The records layout's schema: its columns and types, the metadata that names it, and
//! the check that a schema is this layout (the crate's overview describes the layout).

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Schema metadata key naming the layout (`records`).
pub const LAYOUT_KEY: &str = "soif:layout";
/// Schema metadata key giving the layout's version.
pub const VERSION_KEY: &str = "soif:layout_version";
/// This layout's name.
pub const LAYOUT: &str = "records";
/// This layout's version.
pub const VERSION: &str = "1";

/// What can be wrong with a batch that claims to hold records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// The schema is not soif's records layout (another file, or another version).
    #[error("not soif's records layout: {reason}")]
    Schema { reason: String },
    /// A row breaks the layout's rules.
    #[error("row {row}: {reason}")]
    Row { row: usize, reason: String },
}

/// The attribute struct's fields.
pub fn attribute_fields() -> Fields {
    Fields::from(vec![
        Field::new("name", DataType::Utf8, true),
        Field::new("value", DataType::Utf8, true),
        Field::new("bytes", DataType::Binary, true),
        Field::new("name_bytes", DataType::Binary, true),
    ])
}

/// The `attributes` column's item field.
pub(crate) fn item_field() -> Arc<Field> {
    Arc::new(Field::new(
        "item",
        DataType::Struct(attribute_fields()),
        true,
    ))
}

/// The layout's schema, with its metadata.
pub fn schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let metadata = HashMap::from([
                (LAYOUT_KEY.to_string(), LAYOUT.to_string()),
                (VERSION_KEY.to_string(), VERSION.to_string()),
            ]);
            Arc::new(Schema::new_with_metadata(
                vec![
                    Field::new("template", DataType::Utf8, true),
                    Field::new("url", DataType::Utf8, true),
                    Field::new("action", DataType::Utf8, true),
                    Field::new("attributes", DataType::List(item_field()), true),
                    Field::new("template_bytes", DataType::Binary, true),
                    Field::new("url_bytes", DataType::Binary, true),
                ],
                metadata,
            ))
        })
        .clone()
}

/// The names of `schema`'s columns, comma-separated: what an error about a schema that
/// is not this layout shows, here and in the Python package.
pub fn column_list(schema: &Schema) -> String {
    schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks that `schema` is this layout: its metadata names it (with this version) and its
/// columns have the layout's names and types. Extra metadata is fine (a Parquet file
/// also carries its inputs and soif's version), and so is another name for the list's
/// item field (pyarrow, like the Parquet format, calls it `element`).
pub fn check_schema(schema: &Schema) -> Result<(), LayoutError> {
    let meta = schema.metadata();
    match (meta.get(LAYOUT_KEY), meta.get(VERSION_KEY)) {
        (Some(l), Some(v)) if l == LAYOUT && v == VERSION => {}
        (Some(l), Some(v)) => {
            return Err(LayoutError::Schema {
                reason: format!(
                    "layout `{l}` version {v}; this soif reads `{LAYOUT}` version {VERSION}"
                ),
            })
        }
        _ => {
            return Err(LayoutError::Schema {
                reason: format!(
                    "no `{LAYOUT_KEY}` metadata: written by another program (soif writes it), columns: {}",
                    column_list(schema)
                ),
            })
        }
    }
    let want = self::schema();
    for f in want.fields() {
        let got = schema
            .field_with_name(f.name())
            .map_err(|_| LayoutError::Schema {
                reason: format!("column `{}` is missing", f.name()),
            })?;
        if !got.data_type().equals_datatype(f.data_type()) {
            return Err(LayoutError::Schema {
                reason: format!(
                    "column `{}` is {}, the layout has {}",
                    f.name(),
                    got.data_type(),
                    f.data_type()
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_item_may_have_another_name_but_not_another_type() {
        let with_item = |item: Field| {
            let fields: Vec<Field> = schema()
                .fields()
                .iter()
                .map(|f| match f.name().as_str() {
                    "attributes" => {
                        Field::new("attributes", DataType::List(Arc::new(item.clone())), true)
                    }
                    _ => f.as_ref().clone(),
                })
                .collect();
            Schema::new_with_metadata(fields, schema().metadata().clone())
        };
        let element = Field::new("element", DataType::Struct(attribute_fields()), true);
        assert!(check_schema(&with_item(element)).is_ok());
        let other = Field::new("element", DataType::Utf8, true);
        let err = check_schema(&with_item(other)).unwrap_err().to_string();
        assert!(err.contains("column `attributes`"), "{err}");
    }
}
