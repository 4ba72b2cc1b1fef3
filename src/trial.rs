//! Running a transform chain over a few records outside the engine, one record at a
//! time, to see what it makes of each: `soif test` (a pipeline file's `[[test]]` cases)
//! and `soif try` (the first records of an input, before and after).
//!
//! ```text
//! Source ─ Core (decoder, bad records as rows) ─ Records ─▶ Trial::apply ─▶ Outcome
//! ```
//!
//! The chain is the one a run builds ([`TransformSpec::build`] with the same
//! context); records go through it as through the engine's transform stage
//! ([`soif_pipeline::Chain`]), and a rejection carries the message a run prints. Nothing
//! is written: no sink, no quarantine, no state.

use soif_codecs::soif::DecoderOptions;
use soif_codecs::Record;
use soif_options::ErrorPolicy as Policy;
use soif_pipeline::engine::rejection_of;
use soif_pipeline::source::Rejection;
use soif_pipeline::transforms::{TransformContext, TransformSpec};
use soif_pipeline::{finish_chain, Chain, Collect, Emit, Error, Source, Transform};
use soif_reader::{Core, Counts, Failure, Row};
use std::sync::Arc;

/// What the chain made of one record (or, at the end, of what it held back).
#[derive(Debug, Default)]
pub struct Outcome {
    /// The records passed on, in order (several: fanned out; none: filtered).
    pub records: Vec<Record>,
    /// The records refused, with the message a run prints (reason, input, offset,
    /// record number, URL).
    pub rejected: Vec<Rejection>,
    /// The reason of each rejection alone, as the transform gave it.
    pub reasons: Vec<String>,
    /// Records made beyond one per record in (a `remap` program's array result), as a
    /// run counts them: `records in + added = out + rejected + filtered`.
    pub added: u64,
    pub warnings: Vec<String>,
}

impl Outcome {
    fn from_collect(out: Collect) -> Outcome {
        Outcome {
            records: out.records,
            rejected: out
                .rejected
                .iter()
                .map(|(record, reason)| rejection_of(record, reason))
                .collect(),
            reasons: out.rejected.into_iter().map(|(_, reason)| reason).collect(),
            added: out.added,
            warnings: out.warnings,
        }
    }
}

/// A transform chain built from `-t` specs.
pub struct Trial {
    transforms: Vec<Box<dyn Transform>>,
}

impl Trial {
    /// Builds the chain as a run does; a bad spec is a usage error.
    pub fn build(specs: &[TransformSpec], ctx: &TransformContext) -> Result<Trial, Error> {
        Ok(Trial {
            transforms: specs
                .iter()
                .map(|spec| spec.build(ctx))
                .collect::<Result<_, _>>()?,
        })
    }

    /// One record through the chain.
    pub fn apply(&mut self, record: Record) -> Result<Outcome, Error> {
        let mut out = Collect::default();
        Chain::new(&mut self.transforms, &mut out).emit(record)?;
        Ok(Outcome::from_collect(out))
    }

    /// The end of the input: what the chain held back (`order`) and lets go now.
    pub fn finish(&mut self) -> Result<Outcome, Error> {
        let mut out = Collect::default();
        finish_chain(&mut self.transforms, &mut out)?;
        Ok(Outcome::from_collect(out))
    }
}

/// What reading gives: a record, or one that could not be read.
pub enum Read {
    Record(Record),
    Rejected(Rejection),
}

/// The records of a source, read as a run reads them (the decoder's options, every
/// input in turn), bad ones included as [`Read::Rejected`].
pub struct Records {
    core: Core,
}

impl Records {
    pub fn new(source: Box<dyn Source>, decoder: DecoderOptions) -> Result<Records, Error> {
        let core = Core::new(source, decoder, Policy::Column, Arc::new(Counts::default()))
            .map_err(failure)?;
        Ok(Records { core })
    }

    /// The next record; `None` at the end. An input that cannot be opened or read is an
    /// error.
    pub fn next_read(&mut self) -> Result<Option<Read>, Error> {
        let mut next = None;
        self.core
            .fill(1, usize::MAX, |row| {
                next = Some(match row {
                    Row::Record(r) => Read::Record(r),
                    Row::Corrupt(c) => Read::Rejected(c.rejection),
                });
                0
            })
            .map_err(failure)?;
        Ok(next)
    }
}

fn failure(f: Failure) -> Error {
    match f {
        Failure::Config(m) => Error::Config(m),
        other => Error::Fatal(other.message()),
    }
}
