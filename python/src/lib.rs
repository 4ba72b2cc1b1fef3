//! `soif._soif`, the native module of the `soif` Python package.
//!
//! The public API, its documentation and the `Record` class live in `soif/__init__.py`;
//! this module holds what must be fast or must run without the GIL:
//! - [`Reader`]: inputs → SOIF decoder → error policy → record batches in the Arrow
//!   layout of `soif-arrow`, pulled one batch at a time (the reading loop of
//!   `soif_reader`), handed out as Arrow PyCapsules ([`capsules`]) or as plain tuples
//!   for `soif.records`;
//! - [`Encoder`]: canonical SOIF (the project's encoder) from record tuples or from any
//!   Arrow stream in the layout ([`normalize`] takes the types Polars and DuckDB give).

mod capsules;
mod input;
mod normalize;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyFileNotFoundError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyCapsule, PyList, PyString, PyTuple};
use soif_arrow::{BatchView, LayoutError as ArrowLayoutError};
use soif_codecs::soif::split::RangeSpec;
use soif_codecs::soif::SoifEncoder;
use soif_codecs::{Action, Attribute, Record, Value};
use soif_options::ErrorPolicy;
use soif_pipeline::source::{Rejection, Source};
use soif_reader::{Batches, Core, Counts, Extras, Failure, ReadOptions, Row};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

create_exception!(
    _soif,
    SoifError,
    PyException,
    "Base class of soif's errors. Attributes: input, offset, record, url (None when unknown)."
);
create_exception!(
    _soif,
    DecodeError,
    SoifError,
    "A record could not be read (on_error=\"fail\"), or a rejection kept in Reader.errors."
);
create_exception!(
    _soif,
    LayoutError,
    SoifError,
    "Arrow data is not in soif's records layout (another layout or version, a missing column)."
);

/// Canonical SOIF is handed to the destination in pieces of about this size.
const WRITE_CHUNK: usize = 1 << 20;

fn with_position(
    py: Python<'_>,
    err: PyErr,
    input: Option<&str>,
    offset: Option<u64>,
    record: Option<u64>,
    url: Option<&str>,
) -> PyErr {
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail in practice; if it
    // did, the message still says everything.
    let _ = value.setattr("input", input);
    let _ = value.setattr("offset", offset);
    let _ = value.setattr("record", record);
    let _ = value.setattr("url", url);
    err
}

fn rejection_error(py: Python<'_>, r: &Rejection) -> PyErr {
    let p = &r.position;
    with_position(
        py,
        DecodeError::new_err(r.message.clone()),
        p.input.as_deref(),
        Some(p.offset),
        Some(p.record),
        p.url.as_deref(),
    )
}

fn failure_error(py: Python<'_>, f: Failure) -> PyErr {
    match f {
        Failure::Decode(r) => rejection_error(py, &r),
        Failure::Io { message } => {
            with_position(py, SoifError::new_err(message), None, None, None, None)
        }
        Failure::Config(message) => PyValueError::new_err(message),
    }
}

fn layout_error(py: Python<'_>, e: &ArrowLayoutError, first_record: u64) -> PyErr {
    let record = match e {
        ArrowLayoutError::Row { row, .. } => Some(first_record + *row as u64 + 1),
        _ => None,
    };
    with_position(
        py,
        LayoutError::new_err(e.to_string()),
        None,
        None,
        record,
        None,
    )
}

/// Runs `f` without the GIL when this thread holds it (a consumer may pull a stream with
/// or without it: pyarrow releases it, others may not).
fn without_gil<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    extern "C" {
        // In every CPython since 3.4 (the abi3 bindings leave it out).
        fn PyGILState_Check() -> std::os::raw::c_int;
    }
    // SAFETY: plain queries of the interpreter's state, valid from any thread.
    let held = unsafe { pyo3::ffi::Py_IsInitialized() != 0 && PyGILState_Check() == 1 };
    if held {
        Python::attach(|py| py.detach(f))
    } else {
        f()
    }
}

/// A reader's batches as an Arrow stream (what `__arrow_c_stream__` exports).
struct BatchStream(Batches, SchemaRef);

impl Iterator for BatchStream {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batches = &mut self.0;
        without_gil(move || match batches.next_batch() {
            Ok(None) => None,
            Ok(Some(b)) => Some(Ok(b)),
            Err(f) => {
                // What the consumer (pyarrow, Polars, DuckDB) reads with the stream's
                // `get_last_error` and raises as its own exception: the class that
                // iterating the reader raises, the input, byte offset, record number and
                // URL; the exception itself stays on the reader (`Reader.error`).
                let class = match f {
                    Failure::Decode(_) => "soif.DecodeError",
                    _ => "soif.SoifError",
                };
                let message = format!(
                    "{class}: {} (the reader's .error holds it as a {class})",
                    f.message()
                );
                batches.core.keep_failure(f);
                Some(Err(ArrowError::ExternalError(Box::new(
                    std::io::Error::other(message),
                ))))
            }
        })
    }
}

impl RecordBatchReader for BatchStream {
    fn schema(&self) -> SchemaRef {
        self.1.clone()
    }
}

/// The native reader behind `soif.read` and `soif.records` (see `soif.Reader`).
#[pyclass(module = "soif._soif", name = "_Reader")]
struct Reader {
    core: Mutex<Option<Batches>>,
    counts: Arc<Counts>,
    /// The layout's schema, then the columns asked for (`_corrupt_record`, `_source`).
    schema: SchemaRef,
}

impl Reader {
    fn lock(&self) -> MutexGuard<'_, Option<Batches>> {
        // A panic while the lock was held leaves the reader unusable, not the process.
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl Reader {
    /// `kind` is "paths" (a list of paths, globs, directories, URLs), "bytes" or "file".
    /// `range` (one plain file only): `(start, end, first_record, envelope, end_known)`,
    /// a split as `split` returns it.
    #[new]
    #[pyo3(signature = (kind, source, name, *, options, range=None))]
    fn new(
        kind: &str,
        source: &Bound<'_, PyAny>,
        name: String,
        options: Vec<(String, String)>,
        range: Option<(u64, u64, u64, Option<u64>, bool)>,
    ) -> PyResult<Reader> {
        let py = source.py();
        // The keyword arguments, as strings, through soif's one option code.
        let opts =
            ReadOptions::from_pairs(options).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let decoder = opts.source.decoder_options();
        let policy = opts.policy.clone();
        let batch_size = opts.batch_size;
        let extras = Extras {
            corrupt: policy == ErrorPolicy::Column,
            source: opts.source_column,
        };
        let src: Box<dyn Source> = match (kind, range) {
            ("paths", range) => {
                let paths: Vec<String> = source.extract()?;
                let spec = match range {
                    None => None,
                    Some(_) if paths.len() != 1 => {
                        return Err(PyValueError::new_err(
                            "range= reads one byte range of one file: give one path",
                        ))
                    }
                    Some((start, end, _, _, _)) if end < start => {
                        return Err(PyValueError::new_err(format!(
                            "range=({start}, {end}): the end is before the start"
                        )))
                    }
                    Some((start, end, first_record, envelope, end_known)) => Some(RangeSpec {
                        start,
                        end,
                        first_record,
                        envelope,
                        end_known,
                    }),
                };
                py.detach(|| soif_reader::path_source(&paths, spec, &opts.source))
                    .map_err(|f| failure_error(py, f))?
            }
            (_, Some(_)) => return Err(PyValueError::new_err(
                "range= reads a byte range of a file: give its path (not bytes or a file object)",
            )),
            ("bytes", None) => {
                let data: PyBackedBytes = source.extract()?;
                Box::new(soif_reader::BytesInput::new(
                    &name,
                    bytes::Bytes::from_owner(data),
                ))
            }
            ("file", None) => Box::new(input::FileInput::new(&name, source.clone().unbind())),
            (other, None) => {
                return Err(PyValueError::new_err(format!(
                    "unknown source kind {other:?}"
                )))
            }
        };
        let chain = py
            .detach(|| soif_reader::chain::build(&opts.transforms))
            .map_err(|f| failure_error(py, f))?;
        let counts = Arc::new(Counts::default());
        let core = Core::with_transforms(src, decoder, policy, counts.clone(), chain)
            .map_err(|f| failure_error(py, f))?;
        Ok(Reader {
            core: Mutex::new(Some(Batches::new(core, batch_size, extras))),
            counts,
            schema: extras.schema(),
        })
    }

    /// The reader's schema (the layout's, then the extra columns asked for) as an
    /// `arrow_schema` PyCapsule (reading nothing).
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        capsules::schema_capsule(py, &self.schema)
    }

    /// The batches as an `arrow_array_stream` PyCapsule. A reader is read once: the
    /// stream takes what is left of it.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The layout is the only schema on offer; a consumer that asked for another
        // casts it itself, as the interface allows.
        let _ = requested_schema;
        let core = self.lock().take().ok_or_else(|| {
            SoifError::new_err(
                "this soif reader was already read (a reader streams once): call soif.read() again",
            )
        })?;
        capsules::stream_capsule(py, Box::new(BatchStream(core, self.schema.clone())))
    }

    /// The next batch as an object with `__arrow_c_array__`, or None at the end.
    fn _next_batch(&self, py: Python<'_>) -> PyResult<Option<Batch>> {
        let mut guard = self.lock();
        let Some(core) = guard.as_mut() else {
            return Err(SoifError::new_err(
                "this soif reader was already read (a reader streams once): call soif.read() again",
            ));
        };
        let result = py.detach(move || core.next_batch());
        match result {
            Ok(batch) => Ok(batch.map(|b| Batch { batch: Some(b) })),
            Err(f) => {
                if let Some(core) = guard.as_mut() {
                    core.core.keep_failure(f.clone());
                }
                Err(failure_error(py, f))
            }
        }
    }

    /// Up to `n` records as `(template, url, action, [(name, value), …])` tuples of bytes
    /// (action a str or None); an empty list at the end.
    fn _next_records<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyList>> {
        let mut guard = self.lock();
        let Some(core) = guard.as_mut() else {
            return Err(SoifError::new_err(
                "this soif reader was already read (a reader streams once): call soif.records() again",
            ));
        };
        let core = &mut core.core;
        let result = py.detach(move || {
            let mut out = Vec::new();
            core.fill(n, soif_reader::BATCH_BYTES, |row| match row {
                Row::Record(r) => {
                    let size = soif_reader::batches::size(&r);
                    out.push(r);
                    size
                }
                // Not under the policies `soif.records` allows.
                Row::Corrupt(_) => 0,
            })
            .map(|_| out)
        });
        let records = result.map_err(|f| failure_error(py, f))?;
        let list = PyList::empty(py);
        for r in &records {
            list.append(record_tuple(py, r)?)?;
        }
        Ok(list)
    }

    /// Ends the read (closes the inputs); the counts stay.
    fn close(&self) {
        self.lock().take();
    }

    #[getter]
    fn records_in(&self) -> u64 {
        self.counts.records_in.load(Ordering::Relaxed)
    }
    #[getter]
    fn records_out(&self) -> u64 {
        self.counts.records_out.load(Ordering::Relaxed)
    }
    #[getter]
    fn rejected(&self) -> u64 {
        self.counts.rejected.load(Ordering::Relaxed)
    }
    /// Records the transforms dropped on purpose (`match`, `since`, `abort`…):
    /// `records_in + added - records_out - rejected`, as the CLI's summary counts them.
    #[getter]
    fn filtered(&self) -> u64 {
        let n = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        (n(&self.counts.records_in) + n(&self.counts.added))
            .saturating_sub(n(&self.counts.records_out) + n(&self.counts.rejected))
    }
    /// Records the transforms made beyond one per record read (a `remap` program whose
    /// result is an array).
    #[getter]
    fn added(&self) -> u64 {
        self.counts.added.load(Ordering::Relaxed)
    }
    /// The transforms' warnings (the first 1000).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.counts
            .warnings
            .lock()
            .map(|w| w.clone())
            .unwrap_or_default()
    }
    #[getter]
    fn repaired(&self) -> u64 {
        self.counts.repaired.load(Ordering::Relaxed)
    }
    #[getter]
    fn quarantined(&self) -> u64 {
        self.counts.quarantined.load(Ordering::Relaxed)
    }
    #[getter]
    fn not_quarantined(&self) -> u64 {
        self.counts.not_quarantined.load(Ordering::Relaxed)
    }
    #[getter]
    fn bytes_read(&self) -> u64 {
        self.counts.bytes.load(Ordering::Relaxed)
    }
    /// The failure that ended the read (a `DecodeError` under on_error="fail", a
    /// `SoifError` for an input that could not be read), None while there is none.
    #[getter]
    fn error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        let failure = self.counts.failure.lock().ok()?.clone()?;
        Some(failure_error(py, failure).into_value(py).into_any())
    }

    /// The rejections so far (the first 1000) as `DecodeError`s.
    #[getter]
    fn errors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let errors = self
            .counts
            .errors
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default();
        let list = PyList::empty(py);
        for r in &errors {
            list.append(rejection_error(py, r).into_value(py))?;
        }
        Ok(list)
    }
}

fn record_tuple<'py>(py: Python<'py>, r: &Record) -> PyResult<Bound<'py, PyTuple>> {
    // As the Arrow layout holds them: a collapsed list as repeated entries of its name.
    let attrs = PyList::empty(py);
    let mut result = Ok(());
    for a in &r.attributes {
        soif_arrow::layout_pairs(&a.name, &a.value, &mut |name, value| {
            if result.is_ok() {
                result = attrs.append((PyBytes::new(py, name), PyBytes::new(py, value)));
            }
        });
    }
    result?;
    let action = r.action.map(|a| PyString::new(py, a.as_str()));
    PyTuple::new(
        py,
        [
            PyBytes::new(py, &r.template).into_any(),
            PyBytes::new(py, &r.url).into_any(),
            action.map_or_else(|| py.None().into_bound(py), |a| a.into_any()),
            attrs.into_any(),
        ],
    )
}

/// One record batch, handed to pyarrow through `__arrow_c_array__`.
#[pyclass(module = "soif._soif", name = "_Batch")]
struct Batch {
    batch: Option<RecordBatch>,
}

#[pymethods]
impl Batch {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &mut self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema;
        let batch = self
            .batch
            .take()
            .ok_or_else(|| SoifError::new_err("this batch was already exported"))?;
        capsules::batch_capsules(py, batch)
    }
}

/// Canonical SOIF from records or from Arrow data in the layout (see `soif.write`).
#[pyclass(module = "soif._soif", name = "_Encoder")]
struct Encoder {
    encoder: SoifEncoder,
    buf: Vec<u8>,
    records: u64,
}

fn take_buf<'py>(py: Python<'py>, buf: &mut Vec<u8>) -> Bound<'py, PyBytes> {
    let out = PyBytes::new(py, buf);
    buf.clear();
    out
}

#[pymethods]
impl Encoder {
    #[new]
    fn new() -> Encoder {
        Encoder {
            encoder: SoifEncoder::new(),
            buf: Vec::new(),
            records: 0,
        }
    }

    /// Appends one record: template and url bytes, action (`delete`, `refresh`, `update`
    /// or None), attributes as `(name, value)` bytes pairs.
    fn push(
        &mut self,
        template: PyBackedBytes,
        url: PyBackedBytes,
        action: Option<&str>,
        attributes: Vec<(PyBackedBytes, PyBackedBytes)>,
    ) -> PyResult<()> {
        let action = match action {
            None => None,
            Some(a) => Some(Action::parse(a).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "unknown action {a:?} (delete, refresh, update or None)"
                ))
            })?),
        };
        let record = Record {
            template: bytes::Bytes::copy_from_slice(&template),
            url: bytes::Bytes::copy_from_slice(&url),
            attributes: attributes
                .iter()
                .map(|(n, v)| Attribute {
                    name: bytes::Bytes::copy_from_slice(n),
                    value: Value::Bytes(bytes::Bytes::copy_from_slice(v)),
                })
                .collect(),
            action,
            ..Record::default()
        };
        self.encoder.encode(&record, &mut self.buf);
        self.records += 1;
        Ok(())
    }

    /// Bytes encoded so far (pending, not yet taken).
    fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Takes the SOIF encoded so far.
    fn take<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        take_buf(py, &mut self.buf)
    }

    /// Closes an open envelope and takes what is left.
    fn finish<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.encoder.finish(&mut self.buf);
        take_buf(py, &mut self.buf)
    }

    /// Records encoded so far.
    #[getter]
    fn records(&self) -> u64 {
        self.records
    }

    /// Encodes every batch of `data`'s Arrow stream (`__arrow_c_stream__`), calling
    /// `write(bytes)` with about a megabyte at a time.
    fn push_arrow(&mut self, data: &Bound<'_, PyAny>, write: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = data.py();
        if !data.hasattr("__arrow_c_stream__")? {
            return Err(PyTypeError::new_err(
                "soif.write takes soif.Records or Arrow data (an object with __arrow_c_stream__)",
            ));
        }
        let mut reader = capsules::import_stream(data)?;
        enum Step {
            End,
            Batch,
            Arrow(ArrowError),
            Layout(ArrowLayoutError, u64),
        }
        loop {
            let Encoder {
                encoder,
                buf,
                records,
            } = self;
            let reader = &mut reader;
            let step = py.detach(move || {
                let batch = match reader.next() {
                    None => return Step::End,
                    Some(Err(e)) => return Step::Arrow(e),
                    Some(Ok(b)) => b,
                };
                let first = *records;
                let batch = match normalize::to_layout(&batch) {
                    Ok(b) => b,
                    Err(e) => return Step::Layout(e, first),
                };
                let view = match BatchView::new(&batch) {
                    Ok(v) => v,
                    Err(e) => return Step::Layout(e, first),
                };
                for i in 0..batch.num_rows() {
                    match view.record(i) {
                        Ok(r) => encoder.encode(&r, buf),
                        Err(e) => return Step::Layout(e, first),
                    }
                    *records += 1;
                }
                Step::Batch
            });
            match step {
                Step::End => return Ok(()),
                Step::Batch => {}
                Step::Arrow(e) => {
                    return Err(SoifError::new_err(format!("reading the Arrow stream: {e}")))
                }
                Step::Layout(e, first) => return Err(layout_error(py, &e, first)),
            }
            if self.buf.len() >= WRITE_CHUNK {
                write.call1((take_buf(py, &mut self.buf),))?;
            }
        }
    }
}

/// The splits of a plain SOIF file (see `soif.split`): `(start, end, first_record,
/// envelope, end_known)` tuples, found by the boundary pass with the GIL released.
#[pyfunction]
#[pyo3(signature = (path, *, size=None, parts=None, options=Vec::new()))]
#[allow(clippy::type_complexity)]
fn split(
    py: Python<'_>,
    path: PathBuf,
    size: Option<u64>,
    parts: Option<u64>,
    options: Vec<(String, String)>,
) -> PyResult<Vec<(u64, u64, u64, Option<u64>, bool)>> {
    use soif_sources::range::By;
    let by = match (size, parts) {
        (Some(0), _) => return Err(PyValueError::new_err("size must be positive")),
        (_, Some(0)) => return Err(PyValueError::new_err("parts must be positive")),
        (Some(s), None) => By::Size(s),
        (None, Some(p)) => By::Parts(p),
        (None, None) => By::Size(DEFAULT_SPLIT_SIZE),
        (Some(_), Some(_)) => return Err(PyValueError::new_err("give size= or parts=, not both")),
    };
    // `lenient` and `max_record_size`, as `soif.read` takes them.
    let source = soif_options::SourceOptions::from_pairs(options)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let opts = source.decoder_options();
    let result = py.detach(|| {
        soif_sources::range::splits(&path, opts, by).map(|splits| {
            splits
                .map(|s| {
                    (
                        s.start,
                        s.end,
                        s.first_record,
                        s.envelope.map(|e| e.offset),
                        s.end_known,
                    )
                })
                .collect::<Vec<_>>()
        })
    });
    result.map_err(|e| failure_error(py, e.into()))
}

/// The files local paths name (a path, a directory, a glob, a `file:` URI), by soif's
/// one set of path rules (`soif_sources::paths`): the CLI's (directories read
/// recursively), or with `spark` Spark's (names starting with `_` skipped too,
/// subdirectories only with `recursive`). A URI of another scheme is not found here.
#[pyfunction]
#[pyo3(signature = (paths, *, spark=false, recursive=true))]
fn expand_paths(
    py: Python<'_>,
    paths: Vec<String>,
    spark: bool,
    recursive: bool,
) -> PyResult<Vec<std::ffi::OsString>> {
    let rules = path_rules(spark, recursive);
    match py.detach(|| soif_sources::expand_paths(&paths, rules)) {
        Ok(files) => Ok(files.into_iter().map(PathBuf::into_os_string).collect()),
        Err(e) => Err(path_error(py, e)),
    }
}

/// The files a directory's listing gives (`entries`: `(path relative to the directory,
/// is a file)`), by the same rules and glob matcher as `expand_paths`
/// (`soif_sources::paths::select_listing`): `pattern` None for the directory's files, or
/// a glob relative to it. Indices into `entries`, sorted by path. The Spark data source
/// selects a remote filesystem's listing with it.
#[pyfunction]
#[pyo3(signature = (pattern, entries, *, spark=false, recursive=true))]
fn select_listing(
    py: Python<'_>,
    pattern: Option<&str>,
    entries: Vec<(String, bool)>,
    spark: bool,
    recursive: bool,
) -> PyResult<Vec<usize>> {
    let rules = path_rules(spark, recursive);
    soif_sources::paths::select_listing(pattern, &entries, rules).map_err(|e| path_error(py, e))
}

/// The entries of a listing a glob matches, files and directories
/// (`soif_sources::paths::match_listing`): which directories a listing one level deep
/// must list next.
#[pyfunction]
fn match_listing(
    py: Python<'_>,
    pattern: &str,
    entries: Vec<(String, bool)>,
) -> PyResult<Vec<usize>> {
    soif_sources::paths::match_listing(pattern, &entries).map_err(|e| path_error(py, e))
}

fn path_rules(spark: bool, recursive: bool) -> soif_sources::PathRules {
    use soif_sources::PathRules;
    if spark {
        PathRules::spark(recursive)
    } else {
        PathRules {
            recursive,
            ..PathRules::CLI
        }
    }
}

/// A path that is not there or a glob that matches nothing is FileNotFoundError, a
/// pattern that cannot be read ValueError.
fn path_error(py: Python<'_>, e: soif_sources::PathError) -> PyErr {
    use soif_sources::PathError;
    match e {
        e @ (PathError::NotFound(_) | PathError::NoMatch(_)) => {
            PyFileNotFoundError::new_err(e.to_string())
        }
        e @ PathError::Invalid { .. } => PyValueError::new_err(e.to_string()),
        PathError::Io(e) => failure_error(py, e.into()),
    }
}

/// The local path of a `file:` URI, the path itself when it is no URI, None for a URI
/// of another scheme (`soif_sources::paths::local_path`).
#[pyfunction]
fn local_path(path: &str) -> PyResult<Option<&str>> {
    soif_sources::paths::local_path(path).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Whether `path` names a file of another filesystem (`s3://`, `hdfs://`…), which the
/// Spark data sources read through that filesystem rather than expand here
/// (`soif_sources::PathRules::is_remote`, the JVM data source's rule too).
#[pyfunction]
fn is_remote(path: &str) -> bool {
    soif_sources::PathRules::is_remote(path)
}

/// The compression a local file starts with (`"gzip"`, `"bzip2"`, `"xz"`, `"zstd"`),
/// or None: soif's one test of the first bytes (`soif_sources::decompress`), which the
/// Spark data sources ask before splitting a file.
#[pyfunction]
fn compression(py: Python<'_>, path: PathBuf) -> PyResult<Option<&'static str>> {
    use soif_sources::decompress::Compression;
    match Compression::of_file(&path) {
        Ok(Compression::None) => Ok(None),
        Ok(c) => Ok(Some(c.as_str())),
        Err(e) => Err(failure_error(
            py,
            soif_pipeline::Error::io_path(&path, e).into(),
        )),
    }
}

/// Spark's read options (`(key, value)` pairs as given), parsed by soif's option code
/// (`soif_options::SparkOptions`, the JVM data source's too), as a dict: `on_error`
/// (`column`, `skip` or `fail`), `corrupt_column`, `lenient`, `max_record_size`,
/// `split_size`, `include_source`, `recursive`, `batch_size`, `paths`. An unknown or
/// malformed option is a ValueError with the shared message.
#[pyfunction]
fn spark_options<'py>(
    py: Python<'py>,
    options: Vec<(String, String)>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let o = soif_options::SparkOptions::from_pairs(options)
        .map_err(|e| PyValueError::new_err(format!("soif: {e}")))?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("on_error", o.policy.name())?;
    d.set_item("corrupt_column", o.corrupt_column)?;
    d.set_item("lenient", o.source.lenient)?;
    d.set_item("max_record_size", o.source.max_record_size.as_u64())?;
    d.set_item("split_size", o.split_size.as_u64())?;
    d.set_item("include_source", o.include_source)?;
    d.set_item("recursive", o.recursive)?;
    d.set_item("batch_size", o.batch_size)?;
    d.set_item("paths", o.paths)?;
    // The chain checked here, on the driver, with the files it reads, for the executors.
    let shipped = py
        .detach(|| soif_reader::chain::ship(&o.transforms))
        .map_err(|f| PyValueError::new_err(format!("soif: {}", f.message())))?;
    d.set_item(
        "transforms",
        (!shipped.is_empty()).then(|| shipped.to_text()),
    )?;
    Ok(d)
}

/// `soif.split`'s default split size: 128 MiB (Spark's own default for files).
const DEFAULT_SPLIT_SIZE: u64 = 128 << 20;

/// The layout's schema as an `arrow_schema` capsule (for `pyarrow.schema(...)`).
#[pyfunction]
fn layout_schema(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
    capsules::schema_capsule(py, &soif_arrow::schema())
}

#[pymodule]
fn _soif(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SoifError", py.get_type::<SoifError>())?;
    m.add("DecodeError", py.get_type::<DecodeError>())?;
    m.add("LayoutError", py.get_type::<LayoutError>())?;
    m.add("LAYOUT", soif_arrow::LAYOUT)?;
    m.add("LAYOUT_VERSION", soif_arrow::VERSION)?;
    m.add(
        "DEFAULT_MAX_RECORD_SIZE",
        soif_codecs::soif::DEFAULT_MAX_RECORD_SIZE,
    )?;
    m.add("DEFAULT_BATCH_SIZE", soif_reader::DEFAULT_BATCH_SIZE)?;
    m.add_class::<Reader>()?;
    m.add_class::<Batch>()?;
    m.add_class::<Encoder>()?;
    m.add("DEFAULT_SPLIT_SIZE", DEFAULT_SPLIT_SIZE)?;
    m.add_function(wrap_pyfunction!(layout_schema, m)?)?;
    m.add_function(wrap_pyfunction!(split, m)?)?;
    m.add_function(wrap_pyfunction!(expand_paths, m)?)?;
    m.add_function(wrap_pyfunction!(select_listing, m)?)?;
    m.add_function(wrap_pyfunction!(match_listing, m)?)?;
    m.add_function(wrap_pyfunction!(local_path, m)?)?;
    m.add_function(wrap_pyfunction!(is_remote, m)?)?;
    m.add_function(wrap_pyfunction!(compression, m)?)?;
    m.add_function(wrap_pyfunction!(spark_options, m)?)?;
    Ok(())
}
