//! Helpers shared by the text-producing sinks (csv, rdfxml, sqlite): values as text or
//! JSON under a [`Charset`] and back from JSON (the catalog store's [`soif_store::text`],
//! re-exported here), and opening the output file or stdout.
//!
//! Values are bytes. Where a format needs text, a value that is valid UTF-8 is used as is;
//! otherwise [`Charset::Latin1`] reads it as ISO 8859-1 (what 1990s Harvest data usually
//! is), and [`Charset::Utf8`] replaces the bad sequences with U+FFFD and tells the caller,
//! who counts a warning.
//!
//! ```
//! use soif_sinks::value_text::to_text;
//! use soif_sinks::Charset;
//! let (text, replaced) = to_text(b"caf\xe9", Charset::Latin1);
//! assert_eq!((text.as_ref(), replaced), ("café", false));
//! let (text, replaced) = to_text(b"caf\xe9", Charset::Utf8);
//! assert_eq!((text.as_ref(), replaced), ("caf\u{fffd}", true));
//! ```

use soif_pipeline::Error;
pub use soif_store::text::{from_json, latin1, text_counted, to_json, to_text};
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
