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
///
/// A transform whose output for a record depends on that record alone (`collapse`,
/// `dc`, `select`, `match`, `since`, `remap`) says so by giving copies of itself
/// ([`Transform::fork`]): when every transform of a chain does, the engine runs the chain
/// on several threads, one copy each, and gives the copies back ([`Transform::join`])
/// before [`Transform::finish`] (docs/performance.md#the-transform-stage).
pub trait Transform: Send + std::any::Any {
    /// The name used on the command line (`collapse`, `dc`, …), for messages.
    fn name(&self) -> &str;

    /// Processes one record.
    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error>;

    /// Called once at the end of the stream; transforms that hold records back
    /// (`order`) emit them here.
    fn finish(&mut self, _out: &mut dyn Emit) -> Result<(), Error> {
        Ok(())
    }

    /// A copy of this transform for another thread, as it was built (nothing seen yet),
    /// when records can go through the copies in any division: what it emits, rejects
    /// and warns about for a record depends on that record alone, and it holds nothing
    /// back. `None` (the default) for a transform that needs the stream in order
    /// (`order`, `hits`, `dedupe`, `validate`'s uniqueness checks and warnings once per
    /// name).
    fn fork(&self) -> Option<Box<dyn Transform>> {
        None
    }

    /// Takes back a copy made by [`Transform::fork`] once the stream has ended, before
    /// [`Transform::finish`]: adds what the copy counted for the report `finish` gives
    /// (records noted, the first of them), so that the report is the one a single copy
    /// would give.
    fn join(&mut self, _fork: Box<dyn Transform>) {}
}

/// The first record a transform noted, for the report it gives at the end of the stream
/// (`… (first: INPUT: byte N, record M)`), kept so that copies of the transform
/// ([`Transform::fork`]) can be joined: of two, the one earlier in the same input wins.
#[derive(Debug, Default, Clone)]
pub struct FirstNoted {
    first: Option<(Option<soif_codecs::Position>, String)>,
}

impl FirstNoted {
    /// Notes `record` unless one was noted before; `text` says what about it (called
    /// only for the first).
    pub fn note(&mut self, record: &Record, text: impl FnOnce(&Record) -> String) {
        if self.first.is_none() {
            self.first = Some((record.position.clone(), text(record)));
        }
    }

    /// Notes `record` by where it is: its position, or its URL when it has none.
    pub fn note_where(&mut self, record: &Record) {
        self.note(record, |r| match &r.position {
            Some(p) => p.to_string(),
            None => r.url_str().into_owned(),
        });
    }

    /// What was noted about the first record.
    pub fn text(&self) -> Option<&str> {
        self.first.as_ref().map(|(_, t)| t.as_str())
    }

    /// Keeps the earlier of `self` and `other`: by byte offset within one input, else
    /// `self` (a run's inputs are read one after the other; the copies cannot tell
    /// which of two inputs came first).
    pub fn join(&mut self, other: FirstNoted) {
        let Some((theirs, text)) = other.first else {
            return;
        };
        let earlier = match &self.first {
            None => true,
            Some((ours, _)) => match (ours, &theirs) {
                (Some(a), Some(b)) => a.input == b.input && b.offset < a.offset,
                _ => false,
            },
        };
        if earlier {
            self.first = Some((theirs, text));
        }
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
