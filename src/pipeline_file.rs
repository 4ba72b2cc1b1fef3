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
//! `format`: its keys are the sink options that format takes, defined once with
//! `convert`'s output flags ([`soif_sinks::SinkOptions`]; docs/formats.md#options lists
//! them), and a key of another format is an error. An `rdm` sink without `token` uses
//! the `SOIF_TOKEN` environment variable. A top-level `schema` is what `--schema` is to
//! `convert` for the transforms; top-level
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
//!
//! A mistake is told as every front end tells it ([`OptionError`]), after the file, the
//! line and the table: `nightly.toml:9: [source] option max_record_size=`64XB`: expected
//! a size in bytes (e.g. 1048576, 512KiB, 64MB, 1GiB)`, `nightly.toml:7: [source] unknown
//! option `max_record_sise` (did you mean `max_record_size`?)`.

use serde::Deserialize;
use soif_options::{ByteSize, ErrorOptions, InputFormat, OptionError, SourceOptions};
use soif_pipeline::transforms::remap::tables::Tables;
use soif_pipeline::transforms::{Files, TransformContext, TransformSpec, DEFAULT_MEMORY_BUDGET};
use soif_pipeline::Error;
use soif_sinks::SinkConfig;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::de::{DeTable, DeValue};

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
    /// Reads and checks a pipeline file; errors name the file and line.
    pub fn load(path: &Path) -> Result<PipelineConfig, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io_path(path, e))?;
        let mut config = PipelineConfig::parse(&text).map_err(|e| {
            Error::Config(match e.line {
                Some(line) => format!("{}:{line}: {}", path.display(), e.message),
                None => format!("{}: {}", path.display(), e.message),
            })
        })?;
        // Inline programs are named by where the file holds them.
        for (i, t) in config.transforms.iter_mut().enumerate() {
            if let TransformSpec::Remap { origin, .. } = t {
                *origin = format!("{} transforms[{i}]", path.display());
            }
        }
        Ok(config)
    }

    /// Parses and checks the text of a pipeline file.
    pub fn parse(text: &str) -> Result<PipelineConfig, FileError> {
        let whole = |message: String| FileError {
            line: None,
            message,
        };
        let config: PipelineConfig = match toml::from_str(text) {
            Ok(config) => config,
            // Not TOML at all: the parser's own message says where.
            Err(e) if DeTable::parse(text).is_err() => return Err(whole(e.to_string())),
            Err(e) => return Err(describe(text, &e)),
        };
        if config.source.inputs.is_empty() {
            return Err(whole(
                "[source] inputs is empty (use [\"-\"] for stdin)".to_string(),
            ));
        }
        if config.sinks.is_empty() {
            return Err(whole(
                "no [[sink]]: a pipeline needs at least one".to_string(),
            ));
        }
        // A value serde took but the option refuses: at its key's line.
        let at_key = |table: &str, e: OptionError| {
            let line = match &e {
                OptionError::Invalid { name, .. } => key_line(text, table, name),
                _ => None,
            };
            FileError {
                line,
                message: format!("[{table}] {e}"),
            }
        };
        config.source.check().map_err(|e| at_key("source", e))?;
        config.errors.policy().map_err(|e| at_key("errors", e))?;
        for (i, t) in config.tests.iter().enumerate() {
            let at = || format!("[[test]] {} ({:?})", i + 1, t.name);
            match (&t.input, &t.input_file) {
                (Some(_), Some(_)) => {
                    return Err(whole(format!(
                        "{}: give `input` or `input_file`, not both",
                        at()
                    )))
                }
                (None, None) => {
                    return Err(whole(format!(
                        "{}: no input: give `input` (SOIF or JSON Lines text) or `input_file`",
                        at()
                    )))
                }
                _ => {}
            }
            if t.input.is_some()
                && !matches!(
                    t.format,
                    InputFormat::Auto | InputFormat::Soif | InputFormat::Jsonl
                )
            {
                return Err(whole(format!(
                    "{}: format = \"{}\" is read from a file: use `input_file`",
                    at(),
                    t.format
                )));
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

/// A mistake in a pipeline file: what is wrong, and the line when it is about one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    pub line: Option<usize>,
    pub message: String,
}

/// `LINE: MESSAGE`, or the message alone.
impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A deserialisation error at its line, as `[TABLE] ERROR`, the error an [`OptionError`]
/// when it is about one option (see the [module documentation](self)).
fn describe(text: &str, e: &toml::de::Error) -> FileError {
    let span = e.span().unwrap_or(0..0);
    let found = DeTable::parse(text)
        .ok()
        .and_then(|doc| find(text, doc.get_ref(), &span, String::new()));
    let Some(found) = found else {
        return FileError {
            line: Some(line_of(text, span.start)),
            message: e.message().to_string(),
        };
    };
    let error = OptionError::from_serde(&found.key, &found.value, e.message());
    let message = error.to_string();
    // The table, and the line of the key the message names (serde's span is the table's
    // for an unknown key, the array's for a [[sink]]'s mistake).
    let mentioned = |f: &Found| {
        f.keys
            .iter()
            .filter_map(|(k, &at)| {
                let named = message
                    .find(&format!("`{k}`"))
                    .or_else(|| message.find(&format!("option {k}=")))?;
                Some((named, at))
            })
            .min()
            .map(|(_, at)| at)
    };
    let (found, at) = std::iter::once(&found)
        .chain(&found.others)
        .find_map(|f| mentioned(f).map(|at| (f, at)))
        .unwrap_or((&found, found.at));
    let table = if found.table.is_empty() {
        String::new()
    } else {
        format!("{} ", found.table)
    };
    FileError {
        line: Some(line_of(text, at)),
        message: format!("{table}{message}"),
    }
}

/// Where in the file an error is: the innermost key whose key or value holds the error's
/// start, in `table` (`[source]`, `[[sink]] 2`, or nothing at the top level).
struct Found {
    table: String,
    key: String,
    value: String,
    at: usize,
    /// The keys of that table, with where each starts.
    keys: HashMap<String, usize>,
    /// In an array of tables, the other tables the error may be about.
    others: Vec<Found>,
}

fn find(text: &str, table: &DeTable<'_>, span: &Range<usize>, name: String) -> Option<Found> {
    let holds = |r: &Range<usize>| r.start <= span.start && span.start < r.end.max(r.start + 1);
    let mut found: Option<Found> = None;
    for (k, v) in table.iter() {
        let key = k.get_ref().to_string();
        match v.get_ref() {
            DeValue::Table(t) => {
                if let Some(f) = find(text, t, span, format!("[{key}]")) {
                    return Some(f);
                }
                if holds(&k.span()) || holds(&v.span()) {
                    found = Some(Found {
                        table: format!("[{key}]"),
                        key: key.clone(),
                        value: String::new(),
                        at: v.span().start,
                        keys: key_starts(t),
                        others: Vec::new(),
                    });
                }
            }
            DeValue::Array(items)
                if items
                    .iter()
                    .any(|i| matches!(i.get_ref(), DeValue::Table(_))) =>
            {
                let mut tables = Vec::new();
                let mut held = false;
                for (n, item) in items.iter().enumerate() {
                    let DeValue::Table(t) = item.get_ref() else {
                        continue;
                    };
                    let label = format!("[[{key}]] {},", n + 1);
                    if let Some(f) = find(text, t, span, label.clone()) {
                        return Some(f);
                    }
                    held |= holds(&item.span());
                    tables.push(Found {
                        table: label,
                        key: key.clone(),
                        value: String::new(),
                        at: item.span().start,
                        keys: key_starts(t),
                        others: Vec::new(),
                    });
                }
                // serde's span is then the array's: which table is meant is told by the
                // key the message names.
                if held && !tables.is_empty() {
                    let mut first = tables.remove(0);
                    first.others = tables;
                    found = Some(first);
                }
            }
            other if holds(&k.span()) || holds(&v.span()) => {
                let value = match other {
                    DeValue::String(s) => s.to_string(),
                    _ => text.get(v.span()).unwrap_or_default().to_string(),
                };
                return Some(Found {
                    table: name,
                    key,
                    value,
                    at: k.span().start,
                    keys: key_starts(table),
                    others: Vec::new(),
                });
            }
            _ => {}
        }
    }
    found
}

/// The line of `key` in the table `table`.
fn key_line(text: &str, table: &str, key: &str) -> Option<usize> {
    let doc = DeTable::parse(text).ok()?;
    let (_, t) = doc.get_ref().iter().find(|(k, _)| k.get_ref() == table)?;
    let DeValue::Table(t) = t.get_ref() else {
        return None;
    };
    let (k, _) = t.iter().find(|(k, _)| k.get_ref() == key)?;
    Some(line_of(text, k.span().start))
}

/// Where each key of a table starts.
fn key_starts(table: &DeTable<'_>) -> HashMap<String, usize> {
    table
        .iter()
        .map(|(k, _)| (k.get_ref().to_string(), k.span().start))
        .collect()
}

/// The line (from 1) of a byte offset of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
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

    /// The text of the error a pipeline file gets.
    fn error(text: &str) -> String {
        PipelineConfig::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn mistakes_are_reported() {
        let e = error("[source]\ninputs=[\"a\"]\n");
        assert!(e.contains("no [[sink]]"), "{e}");
        // A mistake about one option: its line, its table, and what every front end says.
        assert_eq!(
            error("[source]\ninputs=[\"a\"]\nmax_record_size=\"12 parsecs\"\n[[sink]]\nformat=\"null\"\n"),
            "3: [source] option max_record_size=`12 parsecs`: expected a size in bytes (e.g. 1048576, 512KiB, 64MB, 1GiB)"
        );
        assert_eq!(
            error("[source]\ninputs=[\"a\"]\n\nmax_record_sise = 1\n[[sink]]\nformat=\"null\"\n"),
            "4: [source] unknown option `max_record_sise` (did you mean `max_record_size`?)"
        );
        assert_eq!(
            error("[source]\ninputs=[\"a\"]\nlenient = \"yes\"\n[[sink]]\nformat=\"null\"\n"),
            "3: [source] option lenient=`yes`: expected true or false"
        );
        assert_eq!(
            error("memory_budjet = 1\n[source]\ninputs=[\"a\"]\n[[sink]]\nformat=\"null\"\n"),
            "1: unknown option `memory_budjet` (did you mean `memory_budget`?)"
        );
        assert_eq!(
            error("[source]\ninputs=[\"a\"]\n[errors]\non_error = \"explode\"\n[[sink]]\nformat=\"null\"\n"),
            "4: [errors] option on_error=`explode`: expected fail, skip or quarantine"
        );
        // A [[sink]]'s mistakes are reported at the sink.
        let e = error(
            "[source]\ninputs=[\"a\"]\n[[sink]]\nformat=\"null\"\n[[sink]]\nformat=\"jsonl\"\noutptu=\"x\"\n",
        );
        assert!(
            e == "7: [[sink]] 2, a jsonl sink: unknown option `outptu` (did you mean `output`?)",
            "{e}"
        );
        let e = error(
            "[source]\ninputs=[\"a\"]\n[[sink]]\nformat=\"null\"\n[[sink]]\nformat=\"parquet\"\ncompression=\"lz4\"\n",
        );
        assert_eq!(
            e,
            "7: [[sink]] 2, a parquet sink: option compression=`lz4`: expected zstd, snappy, gzip or none"
        );
        // A key of another format: an unknown option of this sink, at its line.
        let e = error("[source]\ninputs=[\"a\"]\n[[sink]]\nformat=\"jsonl\"\n\nbom=true\n");
        assert_eq!(
            e,
            "6: [[sink]] 1, a jsonl sink: unknown option `bom` (known: output, charset)"
        );
        // Not TOML: the parser's message, which has the line and column.
        let e = error("[source\n");
        assert!(e.contains("line 1"), "{e}");
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
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("[source] option max_record_size=`0`: expected a positive size"),
            "{e}"
        );
        let e = PipelineConfig::parse(
            "[source]\ninputs=[\"a\"]\n[errors]\non_error=\"quarantine\"\n[[sink]]\nformat=\"null\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("[errors] on_error=quarantine needs quarantine=FILE"),
            "{e}"
        );
    }
}
