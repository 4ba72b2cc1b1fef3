//! Canonical SOIF output (docs/formats.md#soif): `@T { url\n`, `Name{n}:\tvalue\n` per
//! attribute, `}\n`; records inside a Harvest envelope are wrapped in `@UPDATE {` … `}` (one
//! envelope per run of records with the same action). Collapsed values are written back
//! as `Name-N` / `Embed<N>-Name`. The encoding itself is the codec's
//! [`soif_codecs::soif::SoifEncoder`]; this module buffers it to the output.

use soif_codecs::soif::SoifEncoder;
use soif_codecs::Record;
use soif_pipeline::{Error, Sink, SinkError};
use std::io::Write;

/// `[[sink]] format = "soif"` / `--to soif`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// A path, or `-`/none for stdout.
    pub output: Option<String>,
}

const FLUSH_AT: usize = 256 * 1024;

/// The `soif` sink.
pub struct SoifSink {
    out: Box<dyn Write + Send>,
    buf: Vec<u8>,
    encoder: SoifEncoder,
}

impl SoifSink {
    pub fn new(out: Box<dyn Write + Send>) -> SoifSink {
        SoifSink {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 64 * 1024),
            encoder: SoifEncoder::new(),
        }
    }
}

impl Sink for SoifSink {
    fn name(&self) -> &str {
        "soif"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        self.encoder.encode(record, &mut self.buf);
        if self.buf.len() >= FLUSH_AT {
            self.out
                .write_all(&self.buf)
                .map_err(|e| Error::io("writing SOIF", e))?;
            self.buf.clear();
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.encoder.finish(&mut self.buf);
        self.out
            .write_all(&self.buf)
            .and_then(|()| self.out.flush())
            .map_err(|e| Error::io("writing SOIF", e))?;
        self.buf.clear();
        Ok(())
    }
}
