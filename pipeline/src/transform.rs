//! The [`Transform`] trait: one stage of the record stream between decoder and sinks.
//!
//! A transform takes records one at a time and passes zero or more on through an
//! [`Emit`]. Most are one-in-one-out (`dc`, `collapse`); some drop records (`match`,
//! `since`, `dedupe`, `hits`), and `order` holds them back until [`Transform::finish`].
//! A transform never holds an unbounded number of records in memory: `order` spills
//! sorted runs to disk, `dedupe` keeps fixed-size fingerprints.
//!
//! A record that breaks a rule (a schema type, a uniqueness constraint) is not an error of
//! the run: the transform hands it to [`Emit::reject`] with a reason, and the engine applies
//! the user's `--on-error` policy (fail, skip, quarantine its original bytes).

use crate::Error;
use soif_codecs::Record;

/// Where a transform sends its output.
pub trait Emit {
    /// Passes a record on to the next stage.
    fn emit(&mut self, record: Record) -> Result<(), Error>;
    /// Rejects a record: `reason` names the attribute and value at fault. The engine
    /// counts it and applies `--on-error` (with `fail`, this returns an error that ends
    /// the run).
    fn reject(&mut self, record: Record, reason: String) -> Result<(), Error>;
    /// Reports a warning (counted in the summary, printed unless `-q`).
    fn warn(&mut self, message: String);
    /// Tells that `n` records emitted were made from `from` beyond the one a record
    /// received stands for (a `remap` program whose result is an array), so that the
    /// run's counts add up: `records_in + added = records_out + rejected + filtered`.
    fn added(&mut self, _from: &Record, _n: u64) {}
}

/// One step of the transform chain (`-t NAME[:ARGS]`).
pub trait Transform: Send {
    /// The name used on the command line (`collapse`, `dc`, …), for messages.
    fn name(&self) -> &str;

    /// Processes one record.
    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error>;

    /// Called once at the end of the stream; transforms that hold records back
    /// (`order`) emit them here.
    fn finish(&mut self, _out: &mut dyn Emit) -> Result<(), Error> {
        Ok(())
    }
}

/// A simple [`Emit`] that collects into vectors: for tests and for small, bounded uses.
#[derive(Debug, Default)]
pub struct Collect {
    pub records: Vec<Record>,
    pub rejected: Vec<(Record, String)>,
    pub warnings: Vec<String>,
    /// Records added beyond one per record in ([`Emit::added`]).
    pub added: u64,
}

impl Collect {
    /// Runs `records` through `transform`, then its `finish`, and collects everything it
    /// emits, rejects and warns about.
    pub fn run(
        transform: &mut dyn Transform,
        records: impl IntoIterator<Item = Record>,
    ) -> Result<Collect, Error> {
        let mut out = Collect::default();
        for r in records {
            transform.apply(r, &mut out)?;
        }
        transform.finish(&mut out)?;
        Ok(out)
    }
}

impl Emit for Collect {
    fn emit(&mut self, record: Record) -> Result<(), Error> {
        self.records.push(record);
        Ok(())
    }
    fn reject(&mut self, record: Record, reason: String) -> Result<(), Error> {
        self.rejected.push((record, reason));
        Ok(())
    }
    fn warn(&mut self, message: String) {
        self.warnings.push(message);
    }
    fn added(&mut self, _from: &Record, n: u64) {
        self.added += n;
    }
}
