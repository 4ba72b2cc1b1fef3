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

/// The [`Emit`] in front of a chain of transforms, for running a chain outside the engine
/// (`soif test`, `soif try`): a record emitted goes through each transform in turn, and
/// what the last one emits, rejects or warns about goes to `out`. The engine's transform
/// stage does the same with its counts and batches.
///
/// ```
/// use soif_pipeline::transforms::{build, TransformContext};
/// use soif_pipeline::{finish_chain, Chain, Collect, Emit};
/// use soif_codecs::Record;
///
/// let ctx = TransformContext::default();
/// let mut chain = vec![build("collapse", &ctx).unwrap(), build("select:Author", &ctx).unwrap()];
/// let mut out = Collect::default();
/// let record = Record::new("FILE", "http://x/").with("Author-1", "a").with("Title", "T");
/// Chain::new(&mut chain, &mut out).emit(record).unwrap();
/// finish_chain(&mut chain, &mut out).unwrap();
/// assert_eq!(out.records[0].attributes[0].name_str(), "Author");
/// ```
pub struct Chain<'a> {
    rest: &'a mut [Box<dyn Transform>],
    out: &'a mut dyn Emit,
}

impl<'a> Chain<'a> {
    pub fn new(transforms: &'a mut [Box<dyn Transform>], out: &'a mut dyn Emit) -> Chain<'a> {
        Chain {
            rest: transforms,
            out,
        }
    }
}

impl Emit for Chain<'_> {
    fn emit(&mut self, record: Record) -> Result<(), Error> {
        match self.rest.split_first_mut() {
            None => self.out.emit(record),
            Some((first, rest)) => first.apply(
                record,
                &mut Chain {
                    rest,
                    out: &mut *self.out,
                },
            ),
        }
    }

    fn reject(&mut self, record: Record, reason: String) -> Result<(), Error> {
        self.out.reject(record, reason)
    }

    fn warn(&mut self, message: String) {
        self.out.warn(message);
    }

    fn added(&mut self, from: &Record, n: u64) {
        self.out.added(from, n);
    }
}

/// The end of the stream for a chain: each transform's [`Transform::finish`], in chain
/// order, so what one lets go (`order`) still passes through the ones after it.
pub fn finish_chain(
    transforms: &mut [Box<dyn Transform>],
    out: &mut dyn Emit,
) -> Result<(), Error> {
    for i in 0..transforms.len() {
        let (head, rest) = transforms.split_at_mut(i + 1);
        head[i].finish(&mut Chain {
            rest,
            out: &mut *out,
        })?;
    }
    Ok(())
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
