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
}

/// A chain of transforms run one record at a time outside the engine (the reading loop
/// of the Python package and the Spark sources): what the engine's transform stage does
/// between the decoder and the sinks, with the same order of calls.
pub struct Chain {
    transforms: Vec<Box<dyn Transform>>,
}

impl Chain {
    pub fn new(transforms: Vec<Box<dyn Transform>>) -> Chain {
        Chain { transforms }
    }

    /// Whether the chain has no transform.
    pub fn is_empty(&self) -> bool {
        self.transforms.is_empty()
    }

    /// Passes `record` through every transform; what comes out of the last goes to `out`.
    pub fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        Link {
            rest: &mut self.transforms,
            out,
        }
        .emit(record)
    }

    /// The end of the stream: each transform's [`Transform::finish`], in chain order, so
    /// that what one lets go (`order`'s records) passes through the ones after it.
    pub fn finish(&mut self, out: &mut dyn Emit) -> Result<(), Error> {
        for i in 0..self.transforms.len() {
            let (head, rest) = self.transforms.split_at_mut(i + 1);
            head[i].finish(&mut Link { rest, out })?;
        }
        Ok(())
    }
}

/// The [`Emit`] after one transform: into the next, or out after the last.
struct Link<'a> {
    rest: &'a mut [Box<dyn Transform>],
    out: &'a mut dyn Emit,
}

impl Emit for Link<'_> {
    fn emit(&mut self, record: Record) -> Result<(), Error> {
        match self.rest.split_first_mut() {
            None => self.out.emit(record),
            Some((first, rest)) => first.apply(
                record,
                &mut Link {
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
        self.out.warn(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::{build, TransformContext};

    #[test]
    fn a_chain_runs_each_record_through_every_transform_then_finishes_in_order() {
        let ctx = TransformContext::default();
        let specs = ["order:+Title", "hits:2", "select:Title"];
        let mut chain = Chain::new(specs.iter().map(|s| build(s, &ctx).unwrap()).collect());
        let mut out = Collect::default();
        for t in ["c", "a", "b"] {
            chain
                .apply(
                    Record::new("FILE", t).with("Title", t).with("X", "1"),
                    &mut out,
                )
                .unwrap();
        }
        assert!(out.records.is_empty(), "order holds records until the end");
        chain.finish(&mut out).unwrap();
        let titles: Vec<_> = out.records.iter().map(|r| r.get_str("Title")).collect();
        assert_eq!(titles, [Some("a"), Some("b")]);
        assert!(out.records.iter().all(|r| r.get("X").is_none()));
    }
}
