//! The [`Sink`] trait: where records end up (a file, a database, a catalog server).
//!
//! Sinks are synchronous: the engine runs each on its own blocking thread behind a
//! bounded channel, so a slow sink applies backpressure instead of growing a queue.

use crate::Error;
use soif_codecs::Record;

pub use soif_codecs::run_error::SinkError;

/// A destination for records.
pub trait Sink: Send {
    /// The format name (`jsonl`, `sqlite`, …), for messages.
    fn name(&self) -> &str;

    /// Writes one record.
    fn write(&mut self, record: &Record) -> Result<(), SinkError>;

    /// Flushes and closes; called once after the last record.
    fn finish(&mut self) -> Result<(), Error>;

    /// Warnings so far (values repaired or replaced to fit the format).
    fn warnings(&self) -> u64 {
        0
    }

    /// Records the destination has confirmed storing, when that can differ from the
    /// records written: a sink that sends batches to a server counts a batch only once
    /// the server acknowledged it. `None` (the default): every record written counts.
    /// The engine reports this as the run's `out` when the run fails.
    fn stored(&self) -> Option<u64> {
        None
    }

    /// Messages about the sink's work worth telling the user (a retried request), taken
    /// once: the engine passes them on as warnings after each record and at the end.
    fn take_notices(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// Records written earlier that the destination has refused since, each with its
    /// reason, taken once: a sink that sends batches learns that a record is refused only
    /// when its batch is answered (the `sparql` sink splits a refused batch until it
    /// finds the records refused). The engine asks after each write and after
    /// [`Sink::finish`], and rejects each as if `write` had refused it (`--on-error`).
    fn take_refused(&mut self) -> Vec<Refused> {
        Vec::new()
    }
}

/// A record a sink took that its destination refused later ([`Sink::take_refused`]).
#[derive(Debug, Clone)]
pub struct Refused {
    pub record: Record,
    /// The destination's reason.
    pub reason: String,
}
