//! Reading Parquet files written by soif's `parquet` sink back into records.
//!
//! Only soif's Arrow layout ([`soif_arrow`], the `records` layout) is read: its schema
//! metadata names it, and every row holds the exact bytes of the template, URL, names and
//! values, so `soif → parquet → soif` gives back canonical SOIF byte for byte. A Parquet
//! file of another layout (another program's, or soif's own `wide` layout, which is not
//! lossless) is refused with an error naming the file and what it holds.
//!
//! Parquet is read from its footer, so the input must be a file; stdin and URLs are first
//! copied to a temporary file. Rows are read in batches of [`BATCH_ROWS`] on a blocking
//! thread and handed to the engine through a bounded channel, so memory stays bounded by
//! a row group's pages and a batch of records. A row that breaks the layout's rules is a
//! rejected record (`--on-error` applies), numbered by its row.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::StreamExt;
use soif_arrow::BatchView;
use soif_codecs::Position;
use soif_pipeline::source::{InputData, RecordItem, Rejection};
use soif_pipeline::Error;
use std::path::Path;
use std::sync::Arc;

/// Rows per batch read.
pub const BATCH_ROWS: usize = 1024;

/// Opens a Parquet file in soif's layout as a stream of records. `keep` is dropped when
/// reading ends (a spooled copy's temporary path).
pub fn open(
    path: &Path,
    name: Arc<str>,
    keep: Option<tempfile::TempPath>,
) -> Result<InputData, Error> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(name.to_string(), e))?;
    let builder = ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::Fatal(format!("{name}: not a readable Parquet file: {e}")))?;
    soif_arrow::check_schema(builder.schema())
        .map_err(|e| Error::Fatal(format!("{name}: cannot read this Parquet file: {e}")))?;
    let schema = builder.schema().clone();
    let reader = builder
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| Error::Fatal(format!("{name}: {e}")))?;
    let batches = reader.map(|b| b.map_err(|e| e.to_string()));
    Ok(records(name, schema, Box::new(batches), keep))
}

/// Record batches from a reader: each `Err` is a read error that ends the input.
pub(crate) type Batches = Box<dyn Iterator<Item = Result<RecordBatch, String>> + Send>;

/// Turns batches in soif's layout into the engine's record stream, reading them on a
/// blocking thread ahead of the engine by a bounded channel.
/// `schema` is the input's checked schema: the reader's batches may come without its
/// metadata, so each batch is taken under it.
pub(crate) fn records(
    name: Arc<str>,
    schema: SchemaRef,
    batches: Batches,
    keep: Option<tempfile::TempPath>,
) -> InputData {
    let (tx, rx) = tokio::sync::mpsc::channel::<RecordItem>(BATCH_ROWS);
    let input = name.clone();
    std::thread::spawn(move || {
        let _keep = keep;
        let mut row: u64 = 0;
        for batch in batches {
            let batch = match batch
                .and_then(|b| b.with_schema(schema.clone()).map_err(|e| e.to_string()))
            {
                Ok(b) => b,
                Err(e) => {
                    let _ = tx.blocking_send(Err(Error::Fatal(format!(
                        "{input}: reading stopped after {row} rows: {e}"
                    ))));
                    return;
                }
            };
            let view = match BatchView::new(&batch) {
                Ok(v) => v,
                Err(e) => {
                    let _ = tx.blocking_send(Err(Error::Fatal(format!("{input}: {e}"))));
                    return;
                }
            };
            for i in 0..batch.num_rows() {
                row += 1;
                let position = Position::new(0, row).with_input(Some(input.clone()));
                let item = match view.record(i) {
                    Ok(mut r) => {
                        r.position = Some(position.with_url(Some(r.url_str().into_owned())));
                        Ok(r)
                    }
                    Err(e) => Err(Rejection {
                        message: format!("{input}: row {row}: {e}"),
                        position,
                        raw: None,
                    }),
                };
                if tx.blocking_send(Ok(item)).is_err() {
                    return; // the engine stopped reading
                }
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    InputData::Records(stream.boxed())
}
