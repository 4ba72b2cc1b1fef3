//! `libsoif_spark`, the native half of soif's JVM data source for Spark
//! (`spark/java/org/soif/spark`): the project's Rust decoder, called over JNI by the
//! executors' task threads, hands each Arrow record batch to the JVM without a copy.
//!
//! The Python data source (`soif.spark`) decodes in the executors' Python workers and
//! ships every batch to the JVM over a socket as Arrow IPC; the JVM copies it in and the
//! task thread waits while the worker decodes. Here the decoding runs on the task thread
//! itself (and the batch-building threads of the reading loop), and a batch crosses as
//! addresses: [`next`](Java_org_soif_spark_Native_next) writes, in the order of Arrow's
//! IPC format (each column depth-first: its node, then its buffers), the length and null
//! count of every array and the address and size of every buffer, and the Java side's
//! column vectors (`NativeColumn`) read the values there. The batch stays alive in
//! the handle until the next call, which is what Spark's `PartitionReader` contract asks
//! of a reader: a batch is used before `next()` is called again.
//!
//! The reading loop is the Python module's (`soif_reader`): the same sources, decoder
//! options, error policies, fast path and batches.
//!
//! ```text
//! Native.open(path, range…, options) -> handle
//! Native.next(handle, descriptors)   -> rows (-1 at the end), descriptors filled
//! Native.close(handle)
//! Native.split(path, splitSize, …)   -> [start, end, first_record, envelope, end_known]*
//! Native.expand(paths, recursive)     -> the files, by soif's path rules (Spark's variant)
//! Native.options(keys, values)        -> Spark's options parsed by soif's option code
//! Native.remote(path)                 -> whether a path is another filesystem's (s3://…)
//! Native.compressed(path)             -> whether a local file is gzip, bzip2, xz or zstd
//! ```

use arrow_array::{Array, RecordBatch};
use arrow_data::ArrayData;
use jni::objects::{JClass, JLongArray, JObject, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong, jlongArray, jobjectArray, JNI_TRUE};
use jni::JNIEnv;
use soif_codecs::soif::split::RangeSpec;
use soif_options::ErrorPolicy;
use soif_reader::{path_source, Batches, Core, Counts, Extras, Failure};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A read in progress: the reading loop and the batch last handed out.
struct Handle {
    batches: Batches,
    current: Option<RecordBatch>,
}

/// An error for the Java side: the exception class and its message.
struct Thrown(&'static str, String);

impl From<Failure> for Thrown {
    fn from(f: Failure) -> Thrown {
        match f {
            Failure::Decode(r) => Thrown("org/soif/spark/SoifDecodeException", r.message),
            Failure::Io { message } => Thrown("java/io/IOException", message),
            Failure::Config(message) => Thrown("java/lang/IllegalArgumentException", message),
        }
    }
}

/// Runs `f`, turning an error or a panic into a Java exception (a panic must not unwind
/// into the JVM) and returning `default` then.
fn guard<T>(
    env: &mut JNIEnv<'_>,
    default: T,
    f: impl FnOnce(&mut JNIEnv<'_>) -> Result<T, Thrown>,
) -> T {
    let result = catch_unwind(AssertUnwindSafe(|| f(env)));
    let thrown = match result {
        Ok(Ok(v)) => return v,
        Ok(Err(t)) => t,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Thrown(
                "java/lang/IllegalStateException",
                format!("soif: a bug in the native reader ({what}): please report it"),
            )
        }
    };
    // A Java exception already pending (from a JNI call) is kept.
    if !env.exception_check().unwrap_or(true) {
        let _ = env.throw_new(thrown.0, thrown.1);
    }
    default
}

fn string(env: &mut JNIEnv<'_>, s: &JString<'_>) -> Result<String, Thrown> {
    env.get_string(s)
        .map(Into::into)
        .map_err(|e| Thrown("java/lang/IllegalArgumentException", e.to_string()))
}

fn size(v: jlong, what: &str) -> Result<u64, Thrown> {
    u64::try_from(v).map_err(|_| {
        Thrown(
            "java/lang/IllegalArgumentException",
            format!("{what} must not be negative, got {v}"),
        )
    })
}

/// The source options Java hands over (as the shared option code parsed them).
fn source_options(
    lenient: jboolean,
    max_record_size: jlong,
) -> Result<soif_options::SourceOptions, Thrown> {
    let max = size(max_record_size, "maxRecordSize")?;
    if max == 0 {
        return Err(Thrown(
            "java/lang/IllegalArgumentException",
            "maxRecordSize must be positive".into(),
        ));
    }
    Ok(soif_options::SourceOptions {
        lenient: lenient == JNI_TRUE,
        max_record_size: soif_options::ByteSize::b(max),
        ..soif_options::SourceOptions::default()
    })
}

/// Opens a read of `path`: a byte range of a plain file when `ranged` (the split's
/// `start`, `end`, `first_record`, `envelope` (-1: none) and `end_known`), else the whole
/// file (compressed files inflated). `mode`: 0 FAILFAST, 1 DROPMALFORMED, 2 PERMISSIVE
/// (the `_corrupt_record` column). `transforms`: the chain as `options` gave it (empty:
/// none). Returns the handle, 0 when an exception was thrown.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_org_soif_spark_Native_open<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
    ranged: jboolean,
    start: jlong,
    end: jlong,
    first_record: jlong,
    envelope: jlong,
    end_known: jboolean,
    lenient: jboolean,
    max_record_size: jlong,
    mode: jint,
    source_column: jboolean,
    batch_size: jint,
    transforms: JString<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let path = string(env, &path)?;
        // The chain as the driver shipped it (`Native.options`), with its files.
        let transforms = soif_options::TransformOptions::parse(&string(env, &transforms)?)
            .map_err(|e| {
                Thrown(
                    "java/lang/IllegalArgumentException",
                    format!("soif: transforms: {e}"),
                )
            })?;
        let chain = soif_reader::chain::build(&transforms)?;
        let source_options = source_options(lenient, max_record_size)?;
        let decoder = source_options.decoder_options();
        let policy = match mode {
            0 => ErrorPolicy::Fail,
            1 => ErrorPolicy::Skip,
            2 => ErrorPolicy::Column,
            other => {
                return Err(Thrown(
                    "java/lang/IllegalArgumentException",
                    format!("unknown mode {other}"),
                ))
            }
        };
        let batch_size = usize::try_from(batch_size)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                Thrown(
                    "java/lang/IllegalArgumentException",
                    format!("batchSize must be positive, got {batch_size}"),
                )
            })?;
        let range = if ranged == JNI_TRUE {
            Some(RangeSpec {
                start: size(start, "start")?,
                end: size(end, "end")?,
                first_record: size(first_record, "first_record")?,
                envelope: (envelope >= 0).then_some(envelope as u64),
                end_known: end_known == JNI_TRUE,
            })
        } else {
            None
        };
        let source = path_source(&[path], range, &source_options)?;
        let extras = Extras {
            corrupt: policy == ErrorPolicy::Column,
            source: source_column == JNI_TRUE,
        };
        let core =
            Core::with_transforms(source, decoder, policy, Arc::new(Counts::default()), chain)?;
        let handle = Box::new(Handle {
            batches: Batches::new(core, batch_size, extras),
            current: None,
        });
        Ok(Box::into_raw(handle) as jlong)
    })
}

/// The next batch of the read: its rows (-1 at the end), with `descriptors` filled as
/// `[nodes, (length, null_count) × nodes, buffers, (address, size) × buffers]` in the
/// order of Arrow's IPC format. The previous batch is released.
#[no_mangle]
pub extern "system" fn Java_org_soif_spark_Native_next<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    descriptors: JLongArray<'l>,
) -> jint {
    guard(&mut env, -1, |env| {
        // SAFETY: `handle` comes from `open` and is used by one thread until `close`
        // (the Java reader is a task's, and guards against use after close).
        let h = unsafe { &mut *(handle as *mut Handle) };
        h.current = None;
        let Some(batch) = h.batches.next_batch()? else {
            return Ok(-1);
        };
        let mut nodes = Vec::with_capacity(32);
        let mut buffers = Vec::with_capacity(64);
        for column in batch.columns() {
            flatten(&column.to_data(), &mut nodes, &mut buffers)?;
        }
        let mut out = Vec::with_capacity(2 + nodes.len() + buffers.len());
        out.push((nodes.len() / 2) as jlong);
        out.extend_from_slice(&nodes);
        out.push((buffers.len() / 2) as jlong);
        out.extend_from_slice(&buffers);
        let room = env
            .get_array_length(&descriptors)
            .map_err(|e| Thrown("java/lang/IllegalStateException", e.to_string()))?;
        if out.len() > room as usize {
            return Err(Thrown(
                "java/lang/IllegalStateException",
                format!(
                    "the descriptors array holds {room}, the batch needs {}",
                    out.len()
                ),
            ));
        }
        env.set_long_array_region(&descriptors, 0, &out)
            .map_err(|e| Thrown("java/lang/IllegalStateException", e.to_string()))?;
        let rows = batch.num_rows() as jint;
        h.current = Some(batch);
        Ok(rows)
    })
}

/// One array's node and buffers, then its children's (Arrow's IPC order): validity
/// (address 0 and size 0 when there are no nulls), then the type's buffers (offsets,
/// values).
fn flatten(
    data: &ArrayData,
    nodes: &mut Vec<jlong>,
    buffers: &mut Vec<jlong>,
) -> Result<(), Thrown> {
    // The batches are built whole, never sliced: an offset would be a bug here, and the
    // JVM's vectors cannot take one.
    if data.offset() != 0 || data.nulls().is_some_and(|n| n.offset() != 0) {
        return Err(Thrown(
            "java/lang/IllegalStateException",
            "soif: a sliced Arrow array reached the JVM reader (a bug: please report it)".into(),
        ));
    }
    nodes.push(data.len() as jlong);
    nodes.push(data.null_count() as jlong);
    match data.nulls() {
        Some(n) => {
            buffers.push(n.buffer().as_ptr() as jlong);
            buffers.push(n.buffer().len() as jlong);
        }
        None => buffers.extend([0, 0]),
    }
    for b in data.buffers() {
        buffers.push(b.as_ptr() as jlong);
        buffers.push(b.len() as jlong);
    }
    for child in data.child_data() {
        flatten(child, nodes, buffers)?;
    }
    Ok(())
}

/// Ends a read and frees its handle (0 is ignored).
#[no_mangle]
pub extern "system" fn Java_org_soif_spark_Native_close<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    guard(&mut env, (), |_| {
        if handle != 0 {
            // SAFETY: from `open`, closed once (the Java side forgets it first).
            drop(unsafe { Box::from_raw(handle as *mut Handle) });
        }
        Ok(())
    })
}

/// The splits of a plain file at true object boundaries (`soif split --parts`): flat
/// `[start, end, first_record, envelope (-1: none), end_known (0/1)]` per split.
#[no_mangle]
pub extern "system" fn Java_org_soif_spark_Native_split<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
    parts: jlong,
    lenient: jboolean,
    max_record_size: jlong,
) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let path = string(env, &path)?;
        let opts = source_options(lenient, max_record_size)?.decoder_options();
        let by = match size(parts, "parts")? {
            0 => {
                return Err(Thrown(
                    "java/lang/IllegalArgumentException",
                    "parts must be positive".into(),
                ))
            }
            n => soif_sources::range::By::Parts(n),
        };
        let splits = soif_sources::range::splits(std::path::Path::new(&path), opts, by)
            .map_err(|e| Thrown::from(Failure::from(e)))?;
        let mut flat: Vec<jlong> = Vec::new();
        for s in splits {
            flat.extend([
                s.start as jlong,
                s.end as jlong,
                s.first_record as jlong,
                s.envelope.map_or(-1, |e| e.offset as jlong),
                s.end_known as jlong,
            ]);
        }
        let array = env
            .new_long_array(flat.len() as i32)
            .map_err(|e| Thrown("java/lang/OutOfMemoryError", e.to_string()))?;
        env.set_long_array_region(&array, 0, &flat)
            .map_err(|e| Thrown("java/lang/IllegalStateException", e.to_string()))?;
        Ok(array.into_raw())
    })
}

/// The files `paths` name, by soif's path rules with Spark's variant (names starting
/// with `.` or `_` skipped in directories, subdirectories only when `recursive`): the
/// same code as the Python data source's and the CLI's (`soif_sources::paths`). A path
/// not found, or a glob that matches nothing, throws `java.io.FileNotFoundException`.
#[no_mangle]
pub extern "system" fn Java_org_soif_spark_Native_expand<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    paths: JObjectArray<'l>,
    recursive: jboolean,
) -> jobjectArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let given = strings(env, &paths)?;
        let rules = soif_sources::PathRules::spark(recursive == JNI_TRUE);
        let files = soif_sources::expand_paths(&given, rules).map_err(|e| match e {
            soif_sources::PathError::NotFound(_) | soif_sources::PathError::NoMatch(_) => {
                Thrown("java/io/FileNotFoundException", format!("soif: {e}"))
            }
            soif_sources::PathError::Invalid { .. } => {
                Thrown("java/lang/IllegalArgumentException", format!("soif: {e}"))
            }
            soif_sources::PathError::Io(e) => Thrown("java/io/IOException", e.to_string()),
        })?;
        let names: Vec<String> = files
            .iter()
            .map(|f| f.to_string_lossy().into_owned())
            .collect();
        string_array(env, names.iter().map(String::as_str))
    })
}

/// Spark's read options, `keys[i]` = `values[i]` as given, parsed by soif's option code
/// (`soif_options::SparkOptions`, the Python data source's too): `[mode (0 FAILFAST,
/// 1 DROPMALFORMED, 2 PERMISSIVE), corrupt column, lenient, maxRecordSize, splitSize,
/// includeSource, recursiveFileLookup, batchSize, transforms]` as strings (transforms:
/// the chain as the executors build it, with the bytes of the files it reads — read
/// here, on the driver —, empty for none). An unknown or malformed
/// option throws `IllegalArgumentException` with the shared message.
#[no_mangle]
pub extern "system" fn Java_org_soif_spark_Native_options<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    keys: JObjectArray<'l>,
    values: JObjectArray<'l>,
) -> jobjectArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let keys = strings(env, &keys)?;
        let values = strings(env, &values)?;
        let o = soif_options::SparkOptions::from_pairs(keys.into_iter().zip(values))
            .map_err(|e| Thrown("java/lang/IllegalArgumentException", format!("soif: {e}")))?;
        let mode = match o.policy {
            ErrorPolicy::Fail => 0,
            ErrorPolicy::Skip => 1,
            ErrorPolicy::Column => 2,
            // Not one of Spark's modes: `from_pairs` never gives it.
            ErrorPolicy::Quarantine(_) => {
                return Err(Thrown(
                    "java/lang/IllegalArgumentException",
                    "soif: Spark has no quarantine mode".into(),
                ))
            }
        };
        let out = [
            mode.to_string(),
            o.corrupt_column,
            o.source.lenient.to_string(),
            o.source.max_record_size.as_u64().to_string(),
            o.split_size.as_u64().to_string(),
            o.include_source.to_string(),
            o.recursive.to_string(),
            o.batch_size.to_string(),
            // Checked here, on the driver, with the files it reads, for the executors.
            match soif_reader::chain::ship(&o.transforms) {
                Ok(t) if t.is_empty() => String::new(),
                Ok(t) => t.to_text(),
                Err(f) => {
                    return Err(Thrown(
                        "java/lang/IllegalArgumentException",
                        format!("soif: {}", f.message()),
                    ))
                }
            },
        ];
        string_array(env, out.iter().map(String::as_str))
    })
}

/// Whether `path` names a file of another filesystem (`s3://`, `hdfs://`…), which is
/// handed to the Python data source: `soif_sources::PathRules::is_remote`, the Python
/// data source's rule too.
#[no_mangle]
pub extern "system" fn Java_org_soif_spark_Native_remote<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
) -> jboolean {
    guard(&mut env, 0, |env| {
        let path = string(env, &path)?;
        Ok(jboolean::from(soif_sources::PathRules::is_remote(&path)))
    })
}

/// Whether a local file starts as a gzip, bzip2, xz or zstd stream (read whole, never
/// split): soif's one test of the first bytes (`soif_sources::decompress`).
#[no_mangle]
pub extern "system" fn Java_org_soif_spark_Native_compressed<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
) -> jboolean {
    use soif_sources::decompress::Compression;
    guard(&mut env, 0, |env| {
        let path = string(env, &path)?;
        let c = Compression::of_file(std::path::Path::new(&path))
            .map_err(|e| Thrown("java/io/IOException", format!("soif: {path}: {e}")))?;
        Ok(jboolean::from(c != Compression::None))
    })
}

/// A Java `String[]`'s strings.
fn strings(env: &mut JNIEnv<'_>, array: &JObjectArray<'_>) -> Result<Vec<String>, Thrown> {
    let n = env.get_array_length(array).map_err(jvm_error)?;
    let mut out = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    for i in 0..n {
        let s = JString::from(env.get_object_array_element(array, i).map_err(jvm_error)?);
        out.push(string(env, &s)?);
    }
    Ok(out)
}

/// A Java `String[]` of `items`.
fn string_array<'a>(
    env: &mut JNIEnv<'_>,
    items: impl ExactSizeIterator<Item = &'a str>,
) -> Result<jobjectArray, Thrown> {
    let len = i32::try_from(items.len()).map_err(|_| {
        Thrown(
            "java/lang/IllegalStateException",
            "soif: too many strings for a Java array".into(),
        )
    })?;
    let out = env
        .new_object_array(len, "java/lang/String", JObject::null())
        .map_err(jvm_error)?;
    for (i, item) in items.enumerate() {
        let s = env.new_string(item).map_err(jvm_error)?;
        env.set_object_array_element(&out, i as i32, s)
            .map_err(jvm_error)?;
    }
    Ok(out.into_raw())
}

/// A failed JNI call.
fn jvm_error(e: jni::errors::Error) -> Thrown {
    Thrown("java/lang/IllegalStateException", e.to_string())
}
