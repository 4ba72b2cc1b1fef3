//! Pipeline files for `soif run`: one source (several inputs), a transform chain, an
//! error policy, and one or more sinks written in one pass.
//!
//! ```toml
//! # Nightly: every gatherer dump of the day to JSON Lines and a SQLite catalog.
//! # (Top-level keys come before the first [table], as TOML requires.)
//! transforms = ["collapse", "select:Title,Author,Keywords"]
//!
//! [source]
//! inputs = ["/var/harvest/dumps/*.soif.gz"]   # files, directories, globs, -, URLs
//! format = "auto"                             # auto | soif | jsonl | parquet | arrow
//! lenient = true
//! max_record_size = "64MiB"                   # or 64MB (10^6 bytes each), or a number
//! mmap = true                                 # false: read files as streams (--no-mmap)
//!
//! [errors]
//! on_error = "quarantine"                     # fail | skip | quarantine
//! quarantine = "/var/harvest/rejected.soif"
//!
//! [[sink]]
//! format = "jsonl"
//! output = "/var/harvest/out/records.jsonl"
//!
//! [[sink]]
//! format = "sqlite"
//! output = "/var/harvest/catalog.db"
//! batch_size = 500
//! ```
//!
//! A `[[sink]]` is one format's configuration, [`soif_sinks::SinkConfig`], tagged by
//! `format`: its keys mirror the `convert` options that concern that format (`output`,
//! `columns`, `list_separator`, `charset`, `bom`, `dcterms`, `batch_size`, `schema`,
//! `token` — for `rdm`; the `SOIF_TOKEN` environment variable is used when absent —,
//! `gzip_posts`, `compression`, `parquet_layout`), and a key of another format is an
//! error. A top-level `schema` is what `--schema` is to `convert` for the transforms; top-level
//! `memory_budget` (a size, as [`ByteSize`] reads it) and `temp_dir` are `--memory-budget`
//! and `--temp-dir` (what `order`, `dedupe` and uniqueness may hold before spilling, and
//! where). A `[state]` table (`path`, `settle`, `report`) makes the pipeline incremental,
//! as `convert --state` (see the `soif-state` crate and `configs/nightly.toml`).
//! Relative paths are relative to the directory `soif run` is started in. Unknown
//! keys are errors, so a typo does not silently change a nightly job.
//!
//! A transform is a spec as after `-t` (`"remap:map.vrl"` runs a program from a file),
//! or a program held inline, `{ remap = '''…''' }` ([`TransformSpec`]); a `[tables]`
//! table names the lookup tables those programs search, `NAME = "FILE.csv"` each (what
//! `--table NAME=FILE.csv` is to `convert`):
//!
//! ```toml
//! transforms = ["collapse", { remap = '''
//!   .attributes.mime = get_enrichment_table_record!("types", {"harvest_type": .attributes.Type}).mime
//! ''' }]
//!
//! [tables]
//! types = "configs/types.csv"
//! ```

use serde::Deserialize;
use soif_options::InputFormat;
pub use soif_options::{ByteSize, ErrorOptions, SourceOptions};
use soif_pipeline::transforms::remap::tables::Tables;
use soif_pipeline::transforms::{Files, TransformContext, TransformSpec, DEFAULT_MEMORY_BUDGET};
use soif_pipeline::Error;
use soif_sinks::SinkConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A parsed pipeline file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// `[source]`: the inputs and how to read them.
    pub source: SourceOptions,
    /// The transform chain: specs (`"collapse"`, `"remap:map.vrl"`) and inline programs
    /// (`{ remap = "…" }`).
    #[serde(default)]
    pub transforms: Vec<TransformSpec>,
    /// `[tables]`: lookup tables for `remap` programs, `NAME = "FILE.csv"`.
    #[serde(default)]
    pub tables: BTreeMap<String, PathBuf>,
    /// `[errors]`: the error policy.
    #[serde(default)]
    pub errors: ErrorOptions,
    /// `[[sink]]` tables, at least one.
    #[serde(rename = "sink", default)]
    pub sinks: Vec<SinkConfig>,
    /// An RDM `@SCHEMA` for the transforms (`validate`, `order`).
    pub schema: Option<PathBuf>,
    /// Memory each of `order`, `dedupe` and uniqueness may use before spilling to disk
    /// (`--memory-budget`; default 64 MiB).
    pub memory_budget: Option<ByteSize>,
    /// Where they spill (`--temp-dir`; default the system's temporary directory).
    pub temp_dir: Option<PathBuf>,
    /// `[state]`: make the pipeline incremental (`--state`).
    pub state: Option<StateConfig>,
    /// `[[test]]` tables: cases `soif test` runs through the transform chain (see
    /// [`TestCase`]); `soif run` ignores them.
    #[serde(rename = "test", default)]
    pub tests: Vec<TestCase>,
}

/// One `[[test]]` of a pipeline file (docs/testing.md): records in, and what the
/// transform chain must make of them. Every outcome is checked: records out (`output`,
/// none when absent), records rejected (`rejected`, none when absent) and records
/// filtered (`filtered`, 0 when absent).
///
/// ```toml
/// [[test]]
/// name = "titles survive"
/// input = '''
/// {"template":"FILE","url":"http://example.org/a.html","attributes":{"Title":"Maps"}}
/// '''
/// output = '''
/// {"template":"FILE","url":"http://example.org/a.html","attributes":{"Title":"Maps"}}
/// '''
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCase {
    /// Shown in the report.
    pub name: String,
    /// The input records: SOIF or JSON Lines text.
    pub input: Option<String>,
    /// …or a file of them (relative to the directory `soif test` is started in).
    pub input_file: Option<PathBuf>,
    /// How to read the input: `auto` (the default: by content, or by the file's name),
    /// `soif`, `jsonl`, or for a file also `parquet` or `arrow`.
    #[serde(default)]
    pub format: soif_options::InputFormat,
    /// The records expected out of the chain, in order, as JSON Lines
    /// (docs/formats.md#jsonl).
    pub output: Option<String>,
    /// The rejections expected, in order: for each, its reason or a part of it.
    #[serde(default)]
    pub rejected: Expected<String>,
    /// How many records the chain drops on purpose, or `true`: every record read.
    pub filtered: Option<Filtered>,
}

/// One item or a list of them (`rejected = "reason"` or `rejected = ["a", "b"]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Expected<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> Default for Expected<T> {
    fn default() -> Self {
        Expected::Many(Vec::new())
    }
}

impl<T> Expected<T> {
    /// The items, in order.
    pub fn items(&self) -> &[T] {
        match self {
            Expected::One(one) => std::slice::from_ref(one),
            Expected::Many(many) => many,
        }
    }
}

/// `filtered = 2`, or `filtered = true` (every record read).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub enum Filtered {
    All(bool),
    Count(u64),
}

/// `[state]`: an incremental pipeline (what `convert --state` does).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateConfig {
    /// The state database (`--state STATE.db`).
    pub path: PathBuf,
    /// `--settle`: seconds (a number) or `"90s"`, `"5m"`, `"1h"`; default 60 s.
    pub settle: Option<Duration>,
    /// `--report FILE.json`: the run's summary, written after every run.
    pub report: Option<PathBuf>,
}

/// A duration: a number of seconds or a string such as `"5m"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Duration {
    Seconds(u64),
    Text(String),
}

impl PipelineConfig {
    /// Reads and checks a pipeline file; errors name the file (and line, for syntax).
    pub fn load(path: &Path) -> Result<PipelineConfig, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io_path(path, e))?;
        let mut config = PipelineConfig::parse(&text)
            .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
        // Inline programs are named by where the file holds them.
        for (i, t) in config.transforms.iter_mut().enumerate() {
            if let TransformSpec::Remap { origin, .. } = t {
                *origin = format!("{} transforms[{i}]", path.display());
            }
        }
        Ok(config)
    }

    /// Parses and checks the text of a pipeline file.
    pub fn parse(text: &str) -> Result<PipelineConfig, String> {
        let config: PipelineConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        if config.source.inputs.is_empty() {
            return Err("[source] inputs is empty (use [\"-\"] for stdin)".to_string());
        }
        if config.sinks.is_empty() {
            return Err("no [[sink]]: a pipeline needs at least one".to_string());
        }
        config.source.check().map_err(|e| format!("[source] {e}"))?;
        config
            .errors
            .policy()
            .map_err(|e| format!("[errors] {e}"))?;
        for (i, t) in config.tests.iter().enumerate() {
            let at = || format!("[[test]] {} ({:?})", i + 1, t.name);
            match (&t.input, &t.input_file) {
                (Some(_), Some(_)) => {
                    return Err(format!("{}: give `input` or `input_file`, not both", at()))
                }
                (None, None) => {
                    return Err(format!(
                        "{}: no input: give `input` (SOIF or JSON Lines text) or `input_file`",
                        at()
                    ))
                }
                _ => {}
            }
            if t.input.is_some()
                && !matches!(
                    t.format,
                    InputFormat::Auto | InputFormat::Soif | InputFormat::Jsonl
                )
            {
                return Err(format!(
                    "{}: format = \"{}\" is read from a file: use `input_file`",
                    at(),
                    t.format
                ));
            }
        }
        Ok(config)
    }

    /// What the transforms get from the pipeline: its `schema`, `memory_budget`,
    /// `temp_dir` and `[tables]` (loaded here: a missing or bad table is a usage error).
    /// `soif run` and `soif test` build their chains with it.
    pub fn transform_context(&self) -> Result<TransformContext, Error> {
        Ok(TransformContext {
            schema: self.schema.clone(),
            temp_dir: self.temp_dir.clone(),
            memory_budget: self
                .memory_budget
                .map_or(DEFAULT_MEMORY_BUDGET, ByteSize::as_usize),
            tables: Tables::load(
                self.tables
                    .iter()
                    .map(|(name, path)| (name.as_str(), path.as_path())),
                &Files::default(),
            )?,
            ..TransformContext::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("pipeline_file.rs");
        let example: String = doc
            .lines()
            .skip_while(|l| !l.starts_with("//! ```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| format!("{}\n", l.trim_start_matches("//!").trim_start()))
            .collect();
        let c = PipelineConfig::parse(&example).unwrap();
        assert_eq!(c.sinks.len(), 2);
        assert_eq!(c.transforms.len(), 2);
        assert_eq!(c.source.max_record_size.as_u64(), 64 << 20);
        assert_eq!(c.errors.on_error.as_deref(), Some("quarantine"));
    }

    #[test]
    fn mistakes_are_reported() {
        let e = PipelineConfig::parse("[source]\ninputs=[\"a\"]\n").unwrap_err();
        assert!(e.contains("no [[sink]]"), "{e}");
        let e = PipelineConfig::parse(
            "[source]\ninputs=[\"a\"]\n[[sink]]\nformat=\"jsonl\"\noutptu=\"x\"\n",
        )
        .unwrap_err();
        assert!(e.contains("outptu"), "{e}");
        let e = PipelineConfig::parse(
            "[source]\ninputs=[\"a\"]\nmax_record_size=\"12 parsecs\"\n[[sink]]\nformat=\"null\"\n",
        )
        .unwrap_err();
        assert!(e.contains("max_record_size"), "{e}");
    }

    #[test]
    fn sizes_mean_what_they_mean_everywhere() {
        let c = PipelineConfig::parse(
            "memory_budget = \"1kB\"\n[source]\ninputs=[\"a\"]\nmax_record_size=\"64MB\"\n[[sink]]\nformat=\"null\"\n",
        )
        .unwrap();
        assert_eq!(c.source.max_record_size.as_u64(), 64_000_000);
        assert_eq!(c.memory_budget.map(ByteSize::as_u64), Some(1000));
        let e = PipelineConfig::parse(
            "[source]\ninputs=[\"a\"]\nmax_record_size=0\n[[sink]]\nformat=\"null\"\n",
        )
        .unwrap_err();
        assert!(
            e.contains("[source] option max_record_size=`0`: expected a positive size"),
            "{e}"
        );
        let e = PipelineConfig::parse(
            "[source]\ninputs=[\"a\"]\n[errors]\non_error=\"quarantine\"\n[[sink]]\nformat=\"null\"\n",
        )
        .unwrap_err();
        assert!(
            e.contains("[errors] on_error=quarantine needs quarantine=FILE"),
            "{e}"
        );
    }
}
