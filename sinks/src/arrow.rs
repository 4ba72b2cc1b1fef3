//! The `arrow` sink: records as an Arrow IPC stream (the "streaming format", what
//! `pyarrow.ipc.open_stream`, `polars.read_ipc_stream` and DuckDB's `arrow` extension read),
//! in soif's Arrow layout ([`soif_arrow`]) — the same batches the `parquet` sink writes.
//!
//! Batches hold at most [`BATCH_ROWS`](crate::parquet::BATCH_ROWS) rows or
//! [`BATCH_BYTES`](crate::parquet::BATCH_BYTES) bytes of records (a larger record is a
//! batch of its own) and are written as they fill, so memory is bounded by the largest
//! record plus one batch. To stdout, or to a file written under a temporary name and
//! renamed at the end (as for Parquet).

use crate::parquet::{Output, BATCH_BYTES, BATCH_ROWS};
use arrow_ipc::writer::StreamWriter;
use soif_arrow::BatchBuilder;
use soif_codecs::Record;
use soif_pipeline::{Error, Sink, SinkError};

/// `[[sink]] format = "arrow"` / `--to arrow`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// A path, or `-`/none for stdout.
    pub output: Option<String>,
}

/// Writes records as an Arrow IPC stream.
pub struct ArrowSink {
    writer: Option<StreamWriter<Output>>,
    builder: BatchBuilder,
    name: String,
}

fn ipc_error(name: &str, e: arrow_schema::ArrowError) -> Error {
    Error::Fatal(format!("writing {name}: {e}"))
}

impl ArrowSink {
    /// A sink writing to `output` (a path, or `None`/`-` for stdout).
    pub fn open(output: Option<&str>) -> Result<ArrowSink, Error> {
        let out = Output::open(output)?;
        let name = out
            .path()
            .map_or_else(|| "stdout".to_string(), |p| p.display().to_string());
        let writer =
            StreamWriter::try_new(out, &soif_arrow::schema()).map_err(|e| ipc_error(&name, e))?;
        Ok(ArrowSink {
            writer: Some(writer),
            builder: BatchBuilder::new(),
            name,
        })
    }

    fn flush_batch(&mut self) -> Result<(), Error> {
        if self.builder.is_empty() {
            return Ok(());
        }
        let batch = self.builder.finish();
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::Fatal(format!("{}: already finished", self.name)))?;
        w.write(&batch).map_err(|e| ipc_error(&self.name, e))
    }
}

impl Sink for ArrowSink {
    fn name(&self) -> &str {
        "arrow"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        self.builder.push(record);
        if self.builder.len() >= BATCH_ROWS || self.builder.buffered_bytes() >= BATCH_BYTES {
            self.flush_batch()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.flush_batch()?;
        let Some(mut writer) = self.writer.take() else {
            return Ok(());
        };
        writer.finish().map_err(|e| ipc_error(&self.name, e))?;
        let out = writer.into_inner().map_err(|e| ipc_error(&self.name, e))?;
        out.commit()
    }
}
