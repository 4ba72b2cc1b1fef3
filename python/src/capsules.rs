//! Arrow across the boundary: the Arrow C data and stream interfaces in hand-written
//! PyCapsules, as the Arrow PyCapsule Interface names them (`arrow_schema`,
//! `arrow_array`, `arrow_array_stream`). Nothing here knows pyarrow: any consumer of the
//! interface (pyarrow, Polars, DuckDB, nanoarrow…) takes them.

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{Array, RecordBatch, RecordBatchReader, StructArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::ffi::CStr;

pub const SCHEMA: &CStr = c"arrow_schema";
pub const ARRAY: &CStr = c"arrow_array";
pub const STREAM: &CStr = c"arrow_array_stream";

/// A schema as an `arrow_schema` capsule.
pub fn schema_capsule<'py>(
    py: Python<'py>,
    schema: &arrow_schema::Schema,
) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema)
        .map_err(|e| PyValueError::new_err(format!("exporting the schema: {e}")))?;
    PyCapsule::new_with_value(py, ffi, SCHEMA)
}

/// A record batch as the `(arrow_schema, arrow_array)` capsule pair of
/// `__arrow_c_array__` (a struct array whose fields are the columns).
pub fn batch_capsules<'py>(
    py: Python<'py>,
    batch: RecordBatch,
) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    let schema = batch.schema();
    let data = StructArray::from(batch).into_data();
    let array = FFI_ArrowArray::new(&data);
    // The struct's own field carries the schema's metadata, so the layout's version
    // travels with every batch.
    let ffi_schema = FFI_ArrowSchema::try_from(schema.as_ref())
        .map_err(|e| PyValueError::new_err(format!("exporting the schema: {e}")))?;
    Ok((
        PyCapsule::new_with_value(py, ffi_schema, SCHEMA)?,
        PyCapsule::new_with_value(py, array, ARRAY)?,
    ))
}

/// A reader of batches as an `arrow_array_stream` capsule; the consumer pulls it from
/// whatever thread it likes.
pub fn stream_capsule<'py>(
    py: Python<'py>,
    reader: Box<dyn RecordBatchReader + Send>,
) -> PyResult<Bound<'py, PyCapsule>> {
    PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(reader), STREAM)
}

/// The stream of any object that implements `__arrow_c_stream__` (a pyarrow table or
/// reader, a Polars DataFrame, a DuckDB relation, a soif reader).
pub fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| PyValueError::new_err("__arrow_c_stream__ did not return a PyCapsule"))?;
    let ptr = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: the capsule is named `arrow_array_stream`, so by the interface's contract
    // it points at an `ArrowArrayStream`; `from_raw` moves it out and leaves a released
    // (empty) stream behind, which the capsule's destructor then ignores.
    unsafe { RecordBatchStreamReader::from_raw(ptr.as_ptr().cast::<FFI_ArrowArrayStream>()) }
        .map_err(|e| PyValueError::new_err(format!("importing the Arrow stream: {e}")))
}
