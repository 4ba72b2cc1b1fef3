//! The `parquet` sink: records as a Parquet file, in soif's Arrow layout
//! ([`soif_arrow`], the `records` layout: `template`, `url`, `action`, the attributes in
//! order as name/value pairs, exact bytes where a value is not UTF-8) or, with
//! `--parquet-layout wide`, a column per attribute ([`crate::wide`]).
//!
//! - Compression: zstd by default (`--compression zstd|snappy|gzip|none`).
//! - Memory: records are gathered into Arrow batches of at most [`BATCH_ROWS`] rows or
//!   [`BATCH_BYTES`] bytes (a larger record is a batch of its own), and the Parquet writer
//!   holds one row group, at most [`ROW_GROUP_ROWS`] rows or [`ROW_GROUP_BYTES`] bytes
//!   encoded, before writing it out. So memory is bounded by the largest record plus one
//!   row group, whatever the input's size.
//! - Key-value metadata: the layout's name and version (`soif:layout`,
//!   `soif:layout_version`, also inside the embedded Arrow schema), `soif:version` (the
//!   soif that wrote it) and `soif:inputs` (the run's inputs, a JSON array).
//! - A file output is written under a temporary name beside it
//!   (`.NAME.XXXXXX.part`) and renamed over `NAME` only once the footer is written: a
//!   failed run removes it, and a killed run never leaves a half-written `NAME` (only the
//!   hidden `.part` file).

use crate::wide::WideBuilder;
use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::{Compression as PqCompression, GzipLevel, ZstdLevel};
use ::parquet::file::metadata::KeyValue;
use ::parquet::file::properties::{EnabledStatistics, WriterProperties};
use ::parquet::schema::types::ColumnPath;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use soif_arrow::BatchBuilder;
use soif_codecs::Record;
use soif_pipeline::{Error, Sink, SinkError};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// `[[sink]] format = "parquet"` / `--to parquet`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// A path, or `-`/none for stdout.
    pub output: Option<String>,
    /// `zstd` (default), `snappy`, `gzip` or `none`.
    pub compression: Compression,
    /// `records` (default) or `wide`.
    pub parquet_layout: Layout,
    /// Wide layout: the columns after template,url; otherwise from `schema`, or a first
    /// pass.
    pub columns: Option<Vec<String>>,
    /// Wide layout: an RDM `@SCHEMA` file giving the columns and their types.
    pub schema: Option<std::path::PathBuf>,
    /// Wide layout: values that are not UTF-8.
    pub charset: crate::Charset,
    /// Wide layout: between the items of a list read from text.
    pub list_separator: String,
}

/// Rows per Arrow batch handed to the writer.
pub const BATCH_ROWS: usize = 4096;
/// Bytes of record data per Arrow batch (a larger record makes a batch of its own).
pub const BATCH_BYTES: usize = 2 << 20;
/// Rows per row group at most.
pub const ROW_GROUP_ROWS: usize = 1 << 20;
/// Encoded bytes per row group at most (the writer holds one row group in memory).
pub const ROW_GROUP_BYTES: usize = 8 << 20;

/// `--compression`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    Zstd,
    Snappy,
    Gzip,
    None,
}

impl Compression {
    pub const ALL: [&'static str; 4] = ["zstd", "snappy", "gzip", "none"];

    pub fn parse(s: &str) -> Option<Compression> {
        Some(match s {
            "zstd" => Compression::Zstd,
            "snappy" => Compression::Snappy,
            "gzip" => Compression::Gzip,
            "none" | "uncompressed" => Compression::None,
            _ => return None,
        })
    }

    fn parquet(self) -> PqCompression {
        match self {
            Compression::Zstd => PqCompression::ZSTD(ZstdLevel::default()),
            Compression::Snappy => PqCompression::SNAPPY,
            Compression::Gzip => PqCompression::GZIP(GzipLevel::default()),
            Compression::None => PqCompression::UNCOMPRESSED,
        }
    }
}

/// `--parquet-layout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// soif's Arrow layout: lossless, one row per record, attributes as a list.
    #[default]
    Records,
    /// A column per attribute, chosen as the CSV sink chooses its columns.
    Wide,
}

impl Layout {
    pub const ALL: [&'static str; 2] = ["records", "wide"];

    pub fn parse(s: &str) -> Option<Layout> {
        Some(match s {
            "records" => Layout::Records,
            "wide" => Layout::Wide,
            _ => return None,
        })
    }
}

/// An output file written under a temporary name and renamed at the end, or stdout.
pub enum Output {
    File {
        temp: BufWriter<tempfile::NamedTempFile>,
        path: PathBuf,
    },
    Stdout(BufWriter<std::io::Stdout>),
}

impl Output {
    /// `None` or `-`: stdout; otherwise a temporary file beside `path`.
    pub fn open(output: Option<&str>) -> Result<Output, Error> {
        match output {
            None | Some("-") => Ok(Output::Stdout(BufWriter::with_capacity(
                256 * 1024,
                std::io::stdout(),
            ))),
            Some(p) => {
                let path = PathBuf::from(p);
                let dir = match path.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .ok_or_else(|| Error::Config(format!("output {p} is not a file name")))?;
                let prefix = format!(".{name}.");
                let mut builder = tempfile::Builder::new();
                builder.prefix(&prefix).suffix(".part");
                // As any new file: 0666 less the umask (a temporary file would be 0600).
                #[cfg(unix)]
                builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
                let temp = builder
                    .tempfile_in(&dir)
                    .map_err(|e| Error::io(format!("cannot create output {p}"), e))?;
                Ok(Output::File {
                    temp: BufWriter::with_capacity(256 * 1024, temp),
                    path,
                })
            }
        }
    }

    /// Flushes, and renames a temporary file to its final name.
    pub fn commit(self) -> Result<(), Error> {
        match self {
            Output::Stdout(mut w) => w.flush().map_err(|e| Error::io("writing stdout", e)),
            Output::File { temp, path } => {
                let temp = temp.into_inner().map_err(|e| {
                    Error::io(format!("writing {}", path.display()), e.into_error())
                })?;
                temp.persist(&path)
                    .map_err(|e| Error::io(format!("renaming to {}", path.display()), e.error))?;
                Ok(())
            }
        }
    }

    /// The final path, for messages.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Output::File { path, .. } => Some(path),
            Output::Stdout(_) => None,
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Output::File { temp, .. } => temp.write(buf),
            Output::Stdout(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Output::File { temp, .. } => temp.write_all(buf),
            Output::Stdout(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::File { temp, .. } => temp.flush(),
            Output::Stdout(w) => w.flush(),
        }
    }
}

/// What the Parquet sink needs beyond the output.
#[derive(Debug, Clone, Default)]
pub struct ParquetOptions {
    pub compression: Compression,
    pub layout: Layout,
    /// The run's inputs, as given (`soif:inputs`).
    pub inputs: Vec<String>,
}

/// The writer's properties: compression, row-group bounds, soif's metadata, and no
/// dictionary or statistics for the columns of long values (dictionaries of `Full-Text`s
/// only cost time before the writer gives up on them).
pub fn writer_properties(
    compression: Compression,
    inputs: &[String],
    long_columns: &[ColumnPath],
) -> WriterProperties {
    let inputs = serde_json::Value::from(inputs.to_vec()).to_string();
    let mut b = WriterProperties::builder()
        .set_compression(compression.parquet())
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
        .set_statistics_truncate_length(Some(64))
        .set_created_by(format!("soif version {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(vec![
            KeyValue::new(
                "soif:version".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            ),
            KeyValue::new("soif:inputs".to_string(), inputs),
        ]));
    for c in long_columns {
        b = b
            .set_column_dictionary_enabled(c.clone(), false)
            .set_column_statistics_enabled(c.clone(), EnabledStatistics::None);
    }
    b.build()
}

/// The records layout's columns of long values.
fn records_long_columns() -> Vec<ColumnPath> {
    ["value", "bytes"]
        .iter()
        .map(|f| {
            ColumnPath::new(vec![
                "attributes".to_string(),
                "list".to_string(),
                "item".to_string(),
                f.to_string(),
            ])
        })
        .collect()
}

/// Either layout's batch builder.
enum Builder {
    Records(Box<BatchBuilder>),
    Wide(Box<WideBuilder>),
}

/// Writes records as Parquet.
pub struct ParquetSink {
    writer: Option<ArrowWriter<Output>>,
    builder: Builder,
    name: String,
}

fn pq_error(context: &str, e: parquet::errors::ParquetError) -> Error {
    Error::Fatal(format!("{context}: {e}"))
}

impl ParquetSink {
    /// The records layout, written to `output` (a path or stdout).
    pub fn records(output: Option<&str>, opts: &ParquetOptions) -> Result<ParquetSink, Error> {
        let props = writer_properties(opts.compression, &opts.inputs, &records_long_columns());
        ParquetSink::new(
            output,
            soif_arrow::schema(),
            props,
            Builder::Records(Box::new(BatchBuilder::new())),
        )
    }

    /// The wide layout: a column per attribute as `wide` says.
    pub fn wide(
        output: Option<&str>,
        opts: &ParquetOptions,
        wide: WideBuilder,
    ) -> Result<ParquetSink, Error> {
        let props = writer_properties(opts.compression, &opts.inputs, &wide.long_columns());
        let schema = wide.schema();
        ParquetSink::new(output, schema, props, Builder::Wide(Box::new(wide)))
    }

    fn new(
        output: Option<&str>,
        schema: SchemaRef,
        props: WriterProperties,
        builder: Builder,
    ) -> Result<ParquetSink, Error> {
        let out = Output::open(output)?;
        let name = out
            .path()
            .map_or_else(|| "stdout".to_string(), |p| p.display().to_string());
        let writer = ArrowWriter::try_new(out, schema, Some(props))
            .map_err(|e| pq_error(&format!("writing {name}"), e))?;
        Ok(ParquetSink {
            writer: Some(writer),
            builder,
            name,
        })
    }

    fn write_batch(&mut self, batch: RecordBatch) -> Result<(), Error> {
        let Some(w) = self.writer.as_mut() else {
            return Err(Error::Fatal(format!("{}: already finished", self.name)));
        };
        w.write(&batch)
            .map_err(|e| pq_error(&format!("writing {}", self.name), e))
    }

    fn full(&self) -> bool {
        match &self.builder {
            Builder::Records(b) => b.len() >= BATCH_ROWS || b.buffered_bytes() >= BATCH_BYTES,
            Builder::Wide(b) => b.len() >= BATCH_ROWS || b.buffered_bytes() >= BATCH_BYTES,
        }
    }

    fn take_batch(&mut self) -> Result<Option<RecordBatch>, Error> {
        Ok(match &mut self.builder {
            Builder::Records(b) if !b.is_empty() => Some(b.finish()),
            Builder::Wide(b) if !b.is_empty() => Some(b.finish()?),
            _ => None,
        })
    }
}

impl Sink for ParquetSink {
    fn name(&self) -> &str {
        "parquet"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        match &mut self.builder {
            Builder::Records(b) => b.push(record),
            Builder::Wide(b) => b.push(record).map_err(SinkError::Rejected)?,
        }
        if self.full() {
            if let Some(batch) = self.take_batch()? {
                self.write_batch(batch)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        if let Some(batch) = self.take_batch()? {
            self.write_batch(batch)?;
        }
        let Some(writer) = self.writer.take() else {
            return Ok(());
        };
        let out = writer
            .into_inner()
            .map_err(|e| pq_error(&format!("writing {}", self.name), e))?;
        out.commit()
    }

    fn warnings(&self) -> u64 {
        match &self.builder {
            Builder::Records(_) => 0,
            Builder::Wide(b) => b.warnings(),
        }
    }
}
