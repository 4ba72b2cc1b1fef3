//! [`Target`]: what is checked, from a sink's configuration (`--against` and `--to`, or a
//! pipeline's `[[sink]]`), and how it is read back.

use crate::project::Projection;
use crate::read::{read_records, read_sqlite, SideCounts};
use crate::spill::{Partitions, Spilled};
use soif_codecs::oai::read::MetadataFormat;
use soif_options::InputFormat;
use soif_pipeline::{EngineOptions, Error};
use soif_sinks::parquet::Layout;
use soif_sinks::{Format, SinkConfig};
use soif_sources::{InputSettings, InputSource};
use std::path::PathBuf;

/// A target to read back.
#[derive(Debug, Clone)]
pub struct Target {
    /// As given (a path or URL), for messages and the report.
    pub location: String,
    /// The format's name: a sink's (`sqlite`, `jsonl`, …), or [`RDM_CATALOG`] /
    /// [`OAI_PMH`] for a served catalog.
    pub format: &'static str,
    pub projection: Projection,
    read: Read,
}

/// The format name of an `x-catalog://` target.
pub const RDM_CATALOG: &str = "rdm-catalog";
/// The format name of an `oai+http(s)://` target.
pub const OAI_PMH: &str = "oai-pmh";

#[derive(Debug, Clone)]
enum Read {
    /// A SQLite catalog file.
    Sqlite(PathBuf),
    /// Files (one, or a directory of per-run files) in one of soif's input formats.
    Files(InputFormat),
}

impl Target {
    /// The target at `location`: a served catalog (`x-catalog://…`, `oai+http(s)://…`
    /// with `metadataPrefix=soif` or `oai_dc`), or the output of a sink of `format` (given, or from
    /// the name) written with `charset`, as a pipeline's `[[sink]]` table gives it.
    pub fn new(
        location: &str,
        format: Option<&str>,
        charset: Option<&str>,
    ) -> Result<Target, Error> {
        if let Some(t) = Target::served(location)? {
            return Ok(t);
        }
        let format = match format {
            Some(f) => f.to_string(),
            None => Target::guess_format(location)
                .ok_or_else(|| {
                    Error::Config(format!(
                        "cannot tell the format of the target {location} from its name: give --to"
                    ))
                })?
                .as_str()
                .to_string(),
        };
        let mut table = serde_json::json!({ "format": format, "output": location });
        if let Some(c) = charset {
            table["charset"] = c.into();
        }
        let sink: SinkConfig = serde::Deserialize::deserialize(table)
            .map_err(|e: serde_json::Error| Error::Config(e.to_string()))?;
        Target::of_sink(&sink)
    }

    /// A catalog served by a server (`soif serve`): read back as RDM records, or as
    /// OAI-PMH records in the `soif` format (the whole record) or `oai_dc` (its Dublin
    /// Core values, compared as such). `None` when `location` is not such a URL.
    pub fn served(location: &str) -> Result<Option<Target>, Error> {
        let lower = location.to_ascii_lowercase();
        let (format, projection) = if lower.starts_with("x-catalog://") {
            (RDM_CATALOG, Projection::Served)
        } else if soif_sources::oai::is_oai(location) {
            let request = soif_sources::oai::OaiRequest::parse(location)?;
            if request.set.is_some() || request.from.is_some() || request.until.is_some() {
                return Err(Error::Config(format!(
                    "{location}: soif verify compares the whole repository with the sources: no set, from or until"
                )));
            }
            match request.format {
                MetadataFormat::Soif => (OAI_PMH, Projection::Served),
                _ => (OAI_PMH, Projection::OaiDc),
            }
        } else {
            return Ok(None);
        };
        Ok(Some(Target {
            location: location.to_string(),
            format,
            projection,
            read: Read::Files(InputFormat::Auto),
        }))
    }

    /// The target a sink writes. Formats that cannot be read back record by record
    /// (CSV, RDF/XML, wide Parquet, null) are refused.
    pub fn of_sink(sink: &SinkConfig) -> Result<Target, Error> {
        let location = sink
            .output()
            .filter(|o| *o != "-")
            .ok_or_else(|| {
                Error::Config(format!(
                    "a {} sink writing to stdout cannot be verified: give its output file",
                    sink.format().as_str()
                ))
            })?
            .to_string();
        let (projection, read) = match sink {
            SinkConfig::Sqlite(c) => (
                Projection::Sqlite(c.charset),
                Read::Sqlite(PathBuf::from(&location)),
            ),
            SinkConfig::Jsonl(c) => (
                Projection::Jsonl(c.charset),
                Read::Files(InputFormat::Jsonl),
            ),
            SinkConfig::Soif(_) => (Projection::Soif, Read::Files(InputFormat::Soif)),
            SinkConfig::Parquet(c) if c.parquet_layout == Layout::Records => {
                (Projection::Columnar, Read::Files(InputFormat::Parquet))
            }
            SinkConfig::Arrow(_) => (Projection::Columnar, Read::Files(InputFormat::Arrow)),
            other => {
                return Err(Error::Config(format!(
                    "soif verify reads back sqlite, jsonl, soif, parquet (records layout) and arrow targets, not {}",
                    describe(other)
                )))
            }
        };
        Ok(Target {
            location,
            format: sink.format().as_str(),
            projection,
            read,
        })
    }

    /// The format a target's name suggests: `.db`, `.sqlite`, `.sqlite3` (SQLite),
    /// `.jsonl`, `.ndjson`, `.soif`, `.parquet`, `.arrow`, `.arrows` (a compression
    /// suffix such as `.gz` aside), or for a directory that of the first such file in it.
    pub fn guess_format(location: &str) -> Option<Format> {
        let path = std::path::Path::new(location);
        if path.is_dir() {
            let mut names: Vec<PathBuf> = std::fs::read_dir(path)
                .ok()?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            names.sort();
            return names
                .iter()
                .filter_map(|p| p.to_str().and_then(format_of_name))
                .next();
        }
        format_of_name(location)
    }

    /// The files an incremental run (`--state`, a pipeline's `[state]`) writes in place
    /// of a file output: one per run, `NAME.RUN.EXT` beside `NAME.EXT`
    /// (docs/nightly-runs.md). A catalog is updated in place and stays as it is.
    pub fn per_run(mut self) -> Target {
        if let Read::Files(_) = self.read {
            let path = std::path::Path::new(&self.location);
            if let (Some(stem), Some(ext)) = (path.file_stem(), path.extension()) {
                let name = format!("{}.*.{}", stem.to_string_lossy(), ext.to_string_lossy());
                self.location = path.with_file_name(name).display().to_string();
            }
        }
        self
    }

    /// The `charset` the target was written with, for the formats that take one.
    pub fn charset(&self) -> Option<&'static str> {
        match self.projection {
            Projection::Sqlite(c) | Projection::Jsonl(c) => Some(match c {
                soif_codecs::rules::text::Charset::Utf8 => "utf8",
                soif_codecs::rules::text::Charset::Latin1 => "latin1",
            }),
            _ => None,
        }
    }

    /// Reads the target into partitions of its entries.
    pub async fn read(
        &self,
        parts: Partitions,
        engine: EngineOptions,
        settings: InputSettings,
    ) -> Result<(Spilled, SideCounts), Error> {
        match &self.read {
            Read::Sqlite(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || read_sqlite(&path, parts))
                    .await
                    .map_err(|e| Error::Fatal(format!("verify: reading the catalog: {e}")))?
            }
            Read::Files(format) => {
                let specs = soif_sources::expand(std::slice::from_ref(&self.location))?;
                let settings = InputSettings {
                    format: *format,
                    ..settings
                };
                let source = Box::new(InputSource::new(specs, settings));
                // What the target holds is read, never quarantined.
                let engine = EngineOptions {
                    policy: soif_options::ErrorPolicy::Skip,
                    ..engine
                };
                // A served catalog's deletions (OAI-PMH `deleted` headers) are absences.
                let tombstones = !self.projection.is_catalog();
                read_records(
                    source,
                    Vec::new(),
                    self.projection.read_back(),
                    parts,
                    engine,
                    None,
                    tombstones,
                )
                .await
            }
        }
    }
}

fn format_of_name(name: &str) -> Option<Format> {
    let lower = name.to_ascii_lowercase();
    let base = [".gz", ".bz2", ".xz", ".zst"]
        .iter()
        .find_map(|c| lower.strip_suffix(c))
        .unwrap_or(&lower);
    let ext = base.rsplit_once('.').map(|(_, e)| e)?;
    Some(match ext {
        "db" | "sqlite" | "sqlite3" => Format::Sqlite,
        "jsonl" | "ndjson" => Format::Jsonl,
        "soif" => Format::Soif,
        "parquet" => Format::Parquet,
        "arrow" | "arrows" => Format::Arrow,
        _ => return None,
    })
}

fn describe(sink: &SinkConfig) -> String {
    match sink {
        SinkConfig::Parquet(_) => {
            "wide parquet (its rows are shaped by a first pass over the input, not one record each)"
                .into()
        }
        other => other.format().as_str().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_give_formats() {
        assert_eq!(format_of_name("catalog.db"), Some(Format::Sqlite));
        assert_eq!(format_of_name("x/records.jsonl.gz"), Some(Format::Jsonl));
        assert_eq!(format_of_name("r.PARQUET"), Some(Format::Parquet));
        assert_eq!(format_of_name("r.arrows"), Some(Format::Arrow));
        assert_eq!(format_of_name("r.csv"), None);
        assert_eq!(format_of_name("noext"), None);
    }

    #[test]
    fn per_run_files_are_a_glob_beside_the_output() {
        let sink = |format: &str, output: &str| -> SinkConfig {
            serde::Deserialize::deserialize(serde_json::json!({"format": format, "output": output}))
                .unwrap()
        };
        let t = Target::of_sink(&sink("parquet", "out/nightly.parquet"))
            .unwrap()
            .per_run();
        assert_eq!(t.location, "out/nightly.*.parquet");
        let t = Target::of_sink(&sink("sqlite", "out/c.db"))
            .unwrap()
            .per_run();
        assert_eq!(t.location, "out/c.db");
    }
}
