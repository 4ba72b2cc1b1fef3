//! soif verify: proof that a target holds what converting the sources writes — every
//! record, with the values it had, and none of those deleted.
//!
//! The sources are read through the same transforms and options a conversion applies
//! and each record is *projected* to what the target holds for it, by the sink's own
//! rules ([`project`]); the target is read back ([`target`]). Both sides become
//! [`entry::Entry`]s — a key (template and URL), a digest per attribute, the values'
//! first bytes — spread by key over temporary files ([`spill`]), and compared one
//! partition at a time ([`compare`]), so memory stays bounded whatever the archive. The
//! [`report::Report`] counts the records matched, missing, extra, changed (with the first
//! differing attribute), deletions not applied, and records the conversion would reject.
//!
//! ```
//! use soif_codecs::Record;
//! use soif_pipeline::Sink;
//! use soif_sinks::{jsonl, SinkConfig};
//! use soif_sources::{InputSettings, InputSource, InputSpec};
//! use soif_verify::{target::Target, Verification};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let source = dir.path().join("in.soif");
//! std::fs::write(&source, "@FILE { http://a/\nTitle{1}:\tA\n}\n@FILE { http://b/\nTitle{1}:\tB\n}\n").unwrap();
//! // A target that lost http://b/.
//! let out = dir.path().join("out.jsonl");
//! std::fs::write(&out, "{\"template\":\"FILE\",\"url\":\"http://a/\",\"attributes\":{\"Title\":\"A\"}}\n").unwrap();
//!
//! let sink = SinkConfig::Jsonl(jsonl::Config { output: Some(out.display().to_string()), ..Default::default() });
//! let v = Verification {
//!     sources: Box::new(InputSource::new(vec![InputSpec::File(source)], InputSettings::default())),
//!     transforms: Vec::new(),
//!     target: Target::of_sink(&sink).unwrap(),
//!     engine: Default::default(),
//!     settings: InputSettings::default(),
//!     temp_dir: None,
//!     observer: None,
//! };
//! let rt = tokio::runtime::Runtime::new().unwrap();
//! let report = soif_verify::verify(v, &rt, &mut |_| Ok(()), &mut |_, _| {}).unwrap();
//! assert_eq!((report.counts.matched, report.counts.missing), (1, 1));
//! assert!(!report.matches());
//! assert_eq!(report.examples.0["missing"][0].url, "http://b/");
//! ```

pub mod compare;
pub mod entry;
pub mod manifest;
pub mod project;
pub mod quarantine;
pub mod read;
pub mod report;
pub mod spill;
pub mod target;

use compare::{compare, Finding};
use report::{Examples, Report};
use soif_options::ErrorPolicy;
use soif_pipeline::engine::Observer;
use soif_pipeline::{EngineOptions, Error, Source, Transform};
use soif_sources::InputSettings;
use spill::Partitions;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use target::Target;

/// One verification: the sources as a conversion reads them, and the target.
pub struct Verification {
    pub sources: Box<dyn Source>,
    /// The conversion's transforms, built.
    pub transforms: Vec<Box<dyn Transform>>,
    pub target: Target,
    /// The conversion's engine options. Its policy says what becomes of the records the
    /// conversion rejects: under `fail` the conversion stops at the first, so any makes
    /// the target not match; under `skip` and `quarantine` they are not expected in the
    /// target, and under `quarantine` its file must hold them ([`quarantine::check`]).
    /// Either way they are reported, and nothing is written but temporary files.
    pub engine: EngineOptions,
    /// How a target made of files is read (the largest record, mmap).
    pub settings: InputSettings,
    /// Where the temporary files go (the system's temporary directory by default).
    pub temp_dir: Option<PathBuf>,
    /// Gets the sources' reading progress.
    pub observer: Option<Arc<dyn Observer>>,
}

/// Reads both sides (at the same time) and compares them. `finding` gets every record
/// that does not match as the comparison finds it (`--list`); `compared` the partitions
/// compared so far and their number, as the comparison goes.
pub fn verify(
    v: Verification,
    rt: &tokio::runtime::Runtime,
    finding: &mut dyn FnMut(&Finding) -> std::io::Result<()>,
    compared: &mut dyn FnMut(usize, usize),
) -> Result<Report, Error> {
    let start = Instant::now();
    let policy = v.engine.policy.clone();
    // Under `quarantine`, the sources' rejections go to a file of our own.
    let ours = match &policy {
        ErrorPolicy::Quarantine(_) => Some(
            spill::temp_dir_in(v.temp_dir.as_deref(), "soif-verify-quarantine-")
                .map_err(|e| Error::io("creating verify's temporary files", e))?,
        ),
        _ => None,
    };
    let our_quarantine = ours.as_ref().map(|d| d.path().join("quarantine"));
    let projection = v.target.projection;
    // A file's entries are compared with their action; a catalog's without.
    let temp = |side, content| {
        Partitions::new(
            v.temp_dir.as_deref(),
            side,
            !projection.is_catalog(),
            content,
        )
        .map_err(|e| Error::io("creating verify's temporary files", e))
    };
    let source_parts = temp("sources", false)?;
    let target_parts = temp("target", true)?;
    let target = v.target.clone();
    let (sources, targets) = rt.block_on(async {
        let engine = EngineOptions {
            policy: match &our_quarantine {
                Some(path) => ErrorPolicy::Quarantine(path.clone()),
                None => ErrorPolicy::Skip,
            },
            ..v.engine.clone()
        };
        let s = read::read_records(
            v.sources,
            v.transforms,
            projection,
            source_parts,
            engine,
            v.observer,
            true,
        );
        let t = target.read(target_parts, v.engine.clone(), v.settings);
        tokio::join!(s, t)
    });
    let (source_spill, source_counts) = sources?;
    let (target_spill, target_counts) = targets?;
    let mut examples = Examples::default();
    let counts = compare(
        &source_spill,
        &target_spill,
        projection.is_catalog(),
        &mut |f| {
            examples.keep(f);
            finding(f)
        },
        &mut |done| compared(done, spill::PARTS),
    )
    .map_err(|e| Error::io("reading verify's temporary files", e))?;
    let quarantine = match (&policy, &our_quarantine) {
        (ErrorPolicy::Quarantine(file), Some(ours)) => Some(quarantine::check(file, ours)?),
        _ => None,
    };
    let mut report = Report {
        target: v.target.location.clone(),
        format: v.target.format.to_string(),
        verdict: "match",
        policy: policy.name(),
        quarantine,
        counts,
        sources: source_counts,
        target_side: target_counts,
        target_digest: format!("{:032x}", target_spill.content),
        examples,
        elapsed_seconds: start.elapsed().as_secs_f64(),
    };
    if !report.matches() {
        report.verdict = "mismatch";
    }
    Ok(report)
}
