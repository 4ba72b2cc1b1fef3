//! The `null` sink: takes every record and writes nothing. `--to null` parses, transforms
//! and counts, which is how to validate an archive or measure the decoder alone.

use soif_codecs::Record;
use soif_pipeline::{Error, Sink, SinkError};

/// `[[sink]] format = "null"` / `--to null`: nothing to configure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {}

/// The `null` sink.
#[derive(Debug, Default)]
pub struct NullSink;

impl Sink for NullSink {
    fn name(&self) -> &str {
        "null"
    }

    fn write(&mut self, _record: &Record) -> Result<(), SinkError> {
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}
