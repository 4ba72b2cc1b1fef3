//! [`Manifest`]: what a sign-off checked, kept so that it can be checked again later —
//! the sources' content digests (BLAKE3 of each file's bytes), the transforms, and for
//! each target its location, format, record count and content digest (in the target's
//! terms, independent of the order of its records or of how SQLite lays out its pages).
//!
//! ```json
//! {
//!   "manifest": 1,
//!   "date": "2026-11-26T05:30:00Z",
//!   "sources": [{ "input": "archive/a.soif", "bytes": 1234, "blake3": "…" }],
//!   "transforms": ["collapse"],
//!   "targets": [{ "location": "catalog.db", "format": "sqlite", "charset": "utf8",
//!                 "records": 4, "digest": "…", "verdict": "match", "counts": { … } }]
//! }
//! ```
//!
//! [`recheck`] reads each target again and compares its count and digest with the
//! manifest's, and hashes again every source file still there.

use crate::compare::Counts;
use crate::spill::Partitions;
use crate::target::Target;
use soif_pipeline::{EngineOptions, Error};
use soif_sources::InputSettings;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The version of the manifest's layout.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub manifest: u32,
    /// When the sign-off ran (RFC 3339, UTC).
    pub date: String,
    pub sources: Vec<SourceDigest>,
    pub transforms: Vec<String>,
    pub targets: Vec<TargetDigest>,
}

/// One source as it was: a file's size and BLAKE3 digest (none for a URL or stdin).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourceDigest {
    pub input: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blake3: Option<String>,
}

/// One target as it was signed off.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TargetDigest {
    pub location: String,
    pub format: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charset: Option<String>,
    /// Records read back from the target.
    pub records: u64,
    /// Its content digest (hex).
    pub digest: String,
    /// `match` or `mismatch` at the sign-off.
    pub verdict: String,
    pub counts: Counts,
}

impl SourceDigest {
    /// A file's size and digest, read in 1 MiB pieces.
    pub fn of_file(input: &str, path: &Path) -> Result<SourceDigest, Error> {
        let (bytes, digest) = hash_file(path)?;
        Ok(SourceDigest {
            input: input.to_string(),
            bytes: Some(bytes),
            blake3: Some(digest),
        })
    }

    /// A source that is not a file (a URL, stdin): named only.
    pub fn named(input: &str) -> SourceDigest {
        SourceDigest {
            input: input.to_string(),
            bytes: None,
            blake3: None,
        }
    }
}

fn hash_file(path: &Path) -> Result<(u64, String), Error> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io_path(path, e))?;
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io_path(path, e))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        h.update(&buf[..n]);
    }
    Ok((total, h.finalize().to_hex().to_string()))
}

impl Manifest {
    pub fn read(path: &Path) -> Result<Manifest, Error> {
        let text = std::fs::read(path).map_err(|e| Error::io_path(path, e))?;
        let m: Manifest = serde_json::from_slice(&text).map_err(|e| {
            Error::Config(format!("{}: not a verify manifest: {e}", path.display()))
        })?;
        if m.manifest != VERSION {
            return Err(Error::Config(format!(
                "{}: manifest version {} (this soif reads {VERSION})",
                path.display(),
                m.manifest
            )));
        }
        Ok(m)
    }
}

/// What a re-check found: every difference from the manifest (none: the sign-off still
/// holds), and notes (sources no longer there to hash).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Recheck {
    pub differences: Vec<String>,
    pub notes: Vec<String>,
}

/// Reads each target of `manifest` again and hashes its sources again.
pub fn recheck(
    manifest: &Manifest,
    rt: &tokio::runtime::Runtime,
    temp_dir: Option<&Path>,
    settings: InputSettings,
) -> Result<Recheck, Error> {
    let mut out = Recheck::default();
    for s in &manifest.sources {
        let Some(expected) = &s.blake3 else { continue };
        let path = PathBuf::from(&s.input);
        if !path.is_file() {
            out.notes
                .push(format!("source {} is no longer there to hash", s.input));
            continue;
        }
        let (bytes, digest) = hash_file(&path)?;
        if &digest != expected {
            out.differences.push(format!(
                "source {} changed: {bytes} bytes, digest {digest} (signed off: {} bytes, {expected})",
                s.input,
                s.bytes.unwrap_or_default()
            ));
        }
    }
    for t in &manifest.targets {
        let target = Target::new(&t.location, Some(&t.format), t.charset.as_deref())?;
        let catalog = target.projection.is_catalog();
        let parts = Partitions::new(temp_dir, "recheck", !catalog, true)
            .map_err(|e| Error::io("creating verify's temporary files", e))?;
        let (spilled, counts) =
            rt.block_on(target.read(parts, EngineOptions::default(), settings.clone()))?;
        let digest = format!("{:032x}", spilled.content);
        if counts.rejected > 0 {
            out.differences.push(format!(
                "target {}: {} records unreadable now",
                t.location, counts.rejected
            ));
        }
        if spilled.entries != t.records || digest != t.digest {
            out.differences.push(format!(
                "target {} changed: {} records, digest {digest} (signed off: {} records, {})",
                t.location, spilled.entries, t.records, t.digest
            ));
        }
    }
    Ok(out)
}
