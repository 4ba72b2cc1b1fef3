//! Opening a sink's output: a file, or stdout.
//!
//! ```no_run
//! use std::io::Write;
//! let mut out = soif_sinks::output::open_output(Some("records.jsonl"))?;
//! out.write_all(b"{}\n")?;
//! out.flush()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use soif_pipeline::Error;
use std::io::Write;

/// Opens the output: `None` or `-` is stdout, anything else a file (created or
/// truncated). Buffered; the caller flushes.
pub fn open_output(output: Option<&str>) -> Result<Box<dyn Write + Send>, Error> {
    match output {
        None | Some("-") => Ok(Box::new(std::io::BufWriter::with_capacity(
            64 * 1024,
            std::io::stdout(),
        ))),
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| Error::io(format!("cannot create output {path}"), e))?;
            Ok(Box::new(std::io::BufWriter::with_capacity(64 * 1024, file)))
        }
    }
}
