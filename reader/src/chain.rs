//! The transform chain of a read (`soif.read(…, transforms=[…])`, Spark's
//! `.option("transforms", …)`): the CLI's `-t` transforms, built by
//! `soif_pipeline::transforms::build` from the same specs, run between the decoder and
//! the batches, with their rejections under the read's error policy exactly as the
//! engine applies it (docs/contract.md#bad-input).
//!
//! - [`build`]: the chain of a [`TransformOptions`], with its lookup tables for `remap`
//!   programs (the files it names — programs, tables, mappings, schemas — read from the
//!   disk, or from the bytes it carries).
//! - [`ship`]: what a Spark driver hands its executors: the specs, checked by building
//!   the chain once, with the bytes of every file they read, so that the executors need
//!   no copy of them (docs/spark.md#transforms).
//! - [`Chained`]: the chain running beside the reading loop. Records are decoded and
//!   transformed on a thread of their own and handed over through a bounded channel, so
//!   that a transform that lets go of many records at the end (`order`, a sorted stream
//!   spilled to disk) is read batch by batch, never held whole.

use crate::read::{Core, Corrupt, Counts, Failure, Row};
use soif_codecs::soif::DecoderOptions;
use soif_codecs::Record;
use soif_options::ErrorPolicy;
use soif_options::TransformOptions;
use soif_pipeline::engine::rejection_of;
use soif_pipeline::transforms::remap::tables::Tables;
use soif_pipeline::transforms::{self, FileMap, Files, TransformContext};
use soif_pipeline::Source;
use soif_pipeline::{finish_chain, Chain, Emit, Error, Transform};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

/// The transforms of a chain, in order.
pub type Transforms = Vec<Box<dyn Transform>>;

/// Rows the chain's thread may have handed over ahead of the reader.
const AHEAD: usize = 1024;

/// The chain of `opts`, its files read from the disk or, when it carries them (a chain
/// shipped by a Spark driver), from those bytes.
pub fn build(opts: &TransformOptions) -> Result<Transforms, Failure> {
    let files = if opts.files.is_empty() {
        Files::default()
    } else {
        Files::shipped(
            opts.files
                .iter()
                .map(|(p, b)| (p.clone(), bytes::Bytes::from(b.clone())))
                .collect(),
        )
    };
    build_with(opts, files)
}

fn build_with(opts: &TransformOptions, files: Files) -> Result<Transforms, Failure> {
    let tables = Tables::load(
        opts.tables
            .iter()
            .map(|(name, path)| (name.as_str(), Path::new(path))),
        &files,
    )
    .map_err(|e| Failure::Config(format!("tables: {e}")))?;
    let ctx = TransformContext {
        files,
        tables,
        ..TransformContext::default()
    };
    opts.specs
        .iter()
        .map(|spec| transforms::build(spec, &ctx))
        .collect::<Result<Vec<_>, Error>>()
        .map_err(|e| Failure::Config(format!("transforms: {e}")))
}

/// The chain as a Spark driver ships it to its executors: built once here (so that a bad
/// spec or a missing file is an error before any task starts), with the bytes of every
/// file it read. Transforms that need the whole stream ([`transforms::WHOLE_STREAM`]:
/// `order`, `hits`, `dedupe`) are refused, as Spark reads each partition on its own.
pub fn ship(opts: &TransformOptions) -> Result<TransformOptions, Failure> {
    if let Some(spec) = opts
        .specs
        .iter()
        .find(|s| transforms::WHOLE_STREAM.contains(&transforms::spec_name(s).as_str()))
    {
        return Err(Failure::Config(format!(
            "transforms: `{spec}` needs the whole stream of records, and Spark reads each \
             partition on its own: use the DataFrame's own orderBy, limit or \
             dropDuplicates after loading, or soif convert (docs/spark.md#transforms)"
        )));
    }
    let files = Files::recording();
    build_with(opts, files.clone())?;
    let recorded: FileMap = files.recorded();
    let mut shipped = opts.clone();
    shipped
        .files
        .extend(recorded.into_iter().map(|(p, b)| (p, b.to_vec())));
    Ok(shipped)
}

impl Core {
    /// A reader whose records go through `chain` (the `transforms` option) before they
    /// are handed out: the decoder and the chain run on a thread of their own
    /// ([`Chained`]); rejections by a transform go to `policy` as the decoder's do.
    pub fn with_transforms(
        source: Box<dyn Source>,
        decoder: DecoderOptions,
        policy: ErrorPolicy,
        counts: Arc<Counts>,
        chain: Transforms,
    ) -> Result<Core, Failure> {
        if chain.is_empty() {
            return Core::new(source, decoder, policy, counts);
        }
        let inner = Core::new(source, decoder.clone(), policy.clone(), counts.clone())?;
        let mut chained = Chained::start(inner, chain)?;
        Core::from_rows(
            Box::new(move || chained.next_row()),
            decoder,
            policy,
            counts,
        )
    }
}

/// A chain running beside the reading loop; see the [module documentation](self).
pub struct Chained {
    rows: Receiver<Result<Row, Failure>>,
    done: bool,
}

impl Chained {
    /// Reads `core` through `chain` on a thread of its own.
    pub fn start(core: Core, chain: Transforms) -> Result<Chained, Failure> {
        let (tx, rx) = sync_channel(AHEAD);
        std::thread::Builder::new()
            .name("soif-transforms".into())
            .spawn(move || run(core, chain, tx))
            .map_err(|e| Failure::Io {
                message: format!("starting the transforms' thread: {e}"),
            })?;
        Ok(Chained {
            rows: rx,
            done: false,
        })
    }

    /// The next row out of the chain, `None` at the end.
    pub fn next_row(&mut self) -> Result<Option<Row>, Failure> {
        if self.done {
            return Ok(None);
        }
        match self.rows.recv() {
            Ok(Ok(row)) => Ok(Some(row)),
            Ok(Err(f)) => {
                self.done = true;
                Err(f)
            }
            // The thread ends by dropping its sender: the end of the rows.
            Err(_) => {
                self.done = true;
                Ok(None)
            }
        }
    }
}

/// The chain's thread: every row of `core` through `chain`, into `tx`.
fn run(mut core: Core, mut chain: Transforms, tx: SyncSender<Result<Row, Failure>>) {
    let mut out = Out {
        core: &mut core,
        tx: &tx,
        failure: None,
    };
    let result = loop {
        match out.core.next_row() {
            Err(f) => break Err(f),
            Ok(None) => break finish_chain(&mut chain, &mut out).map_err(|e| out.failed(e)),
            Ok(Some(Row::Record(record))) => {
                if let Err(e) = Chain::new(&mut chain, &mut out).emit(record) {
                    break Err(out.failed(e));
                }
            }
            Ok(Some(corrupt)) => {
                if tx.send(Ok(corrupt)).is_err() {
                    return;
                }
            }
        }
    };
    // What the transforms rejected while finishing goes to the quarantine too.
    let result = result.and_then(|()| core.flush_quarantine());
    if let Err(f) = result {
        let _ = tx.send(Err(f));
    }
}

/// Where the chain's output goes: records and (`on_error="column"`) rejected records
/// to the reader, other rejections to the read's error policy.
struct Out<'a> {
    core: &'a mut Core,
    tx: &'a SyncSender<Result<Row, Failure>>,
    /// Why the chain was stopped (a rejection under `fail`, the quarantine's error).
    failure: Option<Failure>,
}

impl Out<'_> {
    /// The failure that stopped the chain with `e`.
    fn failed(&mut self, e: Error) -> Failure {
        self.failure.take().unwrap_or_else(|| Failure::from(e))
    }

    fn send(&mut self, row: Row) -> Result<(), Error> {
        self.tx
            .send(Ok(row))
            .map_err(|_| Error::Fatal("the reader was closed".into()))
    }
}

impl Emit for Out<'_> {
    fn emit(&mut self, record: Record) -> Result<(), Error> {
        self.send(Row::Record(record))
    }

    fn reject(&mut self, record: Record, reason: String) -> Result<(), Error> {
        let mut rejection = rejection_of(&record, &reason);
        if rejection.position.url.is_none() && !record.url.is_empty() {
            // For the front ends' errors (`DecodeError.url`).
            rejection.position = rejection
                .position
                .with_url(Some(record.url_str().into_owned()));
        }
        match self.core.reject_row(Box::new(Corrupt::from(rejection))) {
            Ok(Some(row)) => self.send(row),
            Ok(None) => Ok(()),
            Err(f) => {
                let message = f.message();
                self.failure = Some(f);
                Err(Error::Fatal(message))
            }
        }
    }

    fn warn(&mut self, message: String) {
        self.core.warn(message);
    }

    fn added(&mut self, _from: &Record, n: u64) {
        self.core.added(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ship_refuses_whole_stream_transforms_and_carries_the_files_read() {
        let opts = TransformOptions::parse(r#"["collapse", "Order:-Score"]"#).unwrap();
        let e = ship(&opts).expect_err("order is refused");
        assert!(
            e.message()
                .contains("`Order:-Score` needs the whole stream"),
            "{}",
            e.message()
        );

        let dir = tempfile::tempdir().expect("a temporary directory");
        let map = dir.path().join("map.toml");
        std::fs::write(&map, "[[rule]]\nelement = \"TITLE\"\nfrom = [\"Title\"]\n")
            .expect("a mapping");
        let spec = format!("dc:{}", map.display());
        let shipped = ship(&TransformOptions {
            specs: vec![spec.clone()],
            ..TransformOptions::default()
        })
        .expect("a chain to ship");
        assert_eq!(shipped.files.len(), 1, "{:?}", shipped.files.keys());
        std::fs::remove_file(&map).expect("removed");
        // The executor builds it from the bytes it carries.
        let back = TransformOptions::parse(&shipped.to_text()).expect("the shipped text");
        assert!(build(&back).is_ok());
        let missing = TransformOptions {
            specs: vec![spec],
            ..TransformOptions::default()
        };
        assert!(build(&missing).is_err());
    }
}
