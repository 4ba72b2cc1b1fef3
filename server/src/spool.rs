//! A submission's RDs, held between reading the request body and writing the catalog.
//!
//! A submission is applied in one SQLite transaction, and SQLite has one writer at a time:
//! writing while the body arrives would hold the lock for as long as the slowest client
//! takes to send, and a loader waiting for it gives up after 30 s. So the RDs are decoded
//! and checked as they arrive and kept here — in memory up to [`MEMORY`] bytes, then in an
//! anonymous temporary file (removed by the system when closed, even after a crash) — and
//! the transaction only starts once the body is complete. Records are kept in their packed
//! binary form ([`soif_codecs::packed`]), which keeps everything (action, values, lists).

use crate::error::RequestError;
use soif_codecs::{packed, Record};
use std::io::{BufRead, BufReader, Cursor, Seek, Write};

/// Bytes kept in memory before the spool moves to a temporary file.
pub const MEMORY: usize = 8 << 20;

fn io_err(what: &str) -> impl Fn(std::io::Error) -> RequestError + '_ {
    move |e| RequestError::Internal(format!("spooling the submission ({what}): {e}"))
}

/// Records pushed one at a time, read back in order by [`Spool::reader`].
#[derive(Default)]
pub struct Spool {
    memory: Vec<u8>,
    file: Option<std::io::BufWriter<std::fs::File>>,
    scratch: Vec<u8>,
    longest: usize,
    count: u64,
}

impl Spool {
    pub fn new() -> Spool {
        Spool::default()
    }

    /// Records pushed so far.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// True when nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn push(&mut self, record: &Record) -> Result<(), RequestError> {
        self.scratch.clear();
        packed::encode(record, &mut self.scratch);
        self.longest = self.longest.max(self.scratch.len());
        if self.file.is_none() && self.memory.len() + self.scratch.len() > MEMORY {
            let mut file =
                std::io::BufWriter::new(tempfile::tempfile().map_err(io_err("creating"))?);
            file.write_all(&self.memory).map_err(io_err("writing"))?;
            self.memory = Vec::new();
            self.file = Some(file);
        }
        match &mut self.file {
            Some(f) => packed::write_entry(f, self.count, &self.scratch),
            None => packed::write_entry(&mut self.memory, self.count, &self.scratch),
        }
        .map_err(io_err("writing"))?;
        self.count += 1;
        Ok(())
    }

    /// The records in the order they were pushed.
    pub fn reader(self) -> Result<SpoolReader, RequestError> {
        let input: Box<dyn BufRead + Send> = match self.file {
            Some(f) => {
                let mut file = f
                    .into_inner()
                    .map_err(|e| io_err("writing")(e.into_error()))?;
                file.rewind().map_err(io_err("reading"))?;
                Box::new(BufReader::with_capacity(64 << 10, file))
            }
            None => Box::new(Cursor::new(self.memory)),
        };
        Ok(SpoolReader {
            input,
            longest: self.longest,
        })
    }
}

/// Reads a [`Spool`] back.
pub struct SpoolReader {
    input: Box<dyn BufRead + Send>,
    longest: usize,
}

impl SpoolReader {
    /// The next record; `None` after the last.
    pub fn next_record(&mut self) -> Option<Result<Record, RequestError>> {
        let entry = match packed::read_entry(&mut self.input, self.longest) {
            Ok(Some((_, payload))) => payload,
            Ok(None) => return None,
            Err(e) => return Some(Err(io_err("reading")(e))),
        };
        Some(
            packed::decode(entry).map_err(|e| {
                RequestError::Internal(format!("spooling the submission (reading): {e}"))
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use soif_codecs::Action;

    #[test]
    fn records_come_back_in_order_from_memory_and_from_disk() {
        for (n, size) in [(3usize, 10usize), (40, 400_000)] {
            let mut spool = Spool::new();
            let big = "v".repeat(size);
            for i in 0..n {
                let mut r =
                    Record::new("FILE", format!("http://x/{i}")).with("Title", big.as_str());
                if i % 2 == 1 {
                    r.action = Some(Action::Delete);
                }
                spool.push(&r).unwrap();
            }
            assert_eq!(spool.len(), n as u64);
            assert_eq!(spool.file.is_some(), n * size > MEMORY);
            let mut back = spool.reader().unwrap();
            for i in 0..n {
                let r = back.next_record().unwrap().unwrap();
                assert_eq!(r.url_str(), format!("http://x/{i}"));
                assert_eq!(r.get_str("Title").map(str::len), Some(size));
                assert_eq!(r.action.is_some(), i % 2 == 1);
            }
            assert!(back.next_record().is_none());
        }
    }
}
