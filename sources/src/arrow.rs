//! Reading Arrow IPC written by soif's `arrow` sink back into records: the streaming
//! format (what the sink writes, `.arrows`) and the file format (`.arrow`, told apart by
//! its `ARROW1` magic), in soif's Arrow layout ([`soif_arrow`]); any other schema is
//! refused with an error naming the input. As for Parquet, `soif → arrow → soif` gives
//! back canonical SOIF byte for byte. Stdin and URLs are first copied to a temporary
//! file; batches are read on a blocking thread behind a bounded channel.

use soif_pipeline::source::InputData;
use soif_pipeline::Error;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

/// Opens an Arrow IPC stream or file in soif's layout as a stream of records.
pub fn open(
    path: &Path,
    name: Arc<str>,
    keep: Option<tempfile::TempPath>,
) -> Result<InputData, Error> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(name.to_string(), e))?;
    let mut magic = [0u8; 6];
    let n = file
        .read(&mut magic)
        .map_err(|e| Error::io(name.to_string(), e))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| Error::io(name.to_string(), e))?;
    let bad = |e: arrow_schema::ArrowError| {
        Error::Fatal(format!(
            "{name}: not a readable Arrow IPC stream or file: {e}"
        ))
    };
    let (schema, batches): (_, crate::parquet::Batches) = if n == 6 && &magic == b"ARROW1" {
        let r = arrow_ipc::reader::FileReader::try_new_buffered(file, None).map_err(bad)?;
        (
            r.schema(),
            Box::new(r.map(|b| b.map_err(|e| e.to_string()))),
        )
    } else {
        let r =
            arrow_ipc::reader::StreamReader::try_new(BufReader::new(file), None).map_err(bad)?;
        (
            r.schema(),
            Box::new(r.map(|b| b.map_err(|e| e.to_string()))),
        )
    };
    soif_arrow::check_schema(&schema)
        .map_err(|e| Error::Fatal(format!("{name}: cannot read this Arrow input: {e}")))?;
    Ok(crate::parquet::records(name, schema, batches, keep))
}
