//! Each sink's typed configuration, from a pipeline file's `[[sink]]` or the command line.
//!
//! Both give the [`SinkOptions`] (every sink option, defined once in [`crate::options`])
//! and a format; [`SinkConfig::new`] makes that format's typed `Config` (beside its sink:
//! [`crate::jsonl::Config`], [`crate::csv::Config`]…) from them, refusing an option of
//! another format — a mistake, not a silent no-op. A `[[sink]]` table deserialises
//! straight into [`SinkConfig`], tagged by `format`; the command line's [`SinkArgs`]
//! (`--to` and the options, flattened into `soif convert`) make the same `SinkConfig`
//! with [`SinkArgs::config`].

use crate::options::{self, Front, SinkOption, SinkOptions};
use crate::parquet::Layout;
use crate::{arrow, csv, jsonl, null, parquet, rdf, rdm, soif, sparql, sqlite, Format};
use serde::{Deserialize, Deserializer};
use soif_options::OptionError;
use soif_pipeline::Error;
use std::collections::HashSet;
use std::path::PathBuf;

/// One sink's configuration: a `[[sink]]` table of a pipeline file, or `--to FORMAT` and
/// its flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkConfig {
    Jsonl(jsonl::Config),
    Soif(soif::Config),
    Csv(csv::Config),
    Rdfxml(rdf::Config),
    Ntriples(rdf::Config),
    Turtle(rdf::Config),
    Jsonld(rdf::Config),
    Sqlite(sqlite::Config),
    Rdm(rdm::Config),
    Sparql(sparql::Config),
    Parquet(parquet::Config),
    Arrow(arrow::Config),
    Null(null::Config),
}

/// `Some(expr)` of the `Config` of every format that writes an output (all but `null`),
/// bound to `$c`: the one list behind [`SinkConfig::output`] and
/// [`SinkConfig::output_mut`].
macro_rules! output_field {
    ($config:expr, $c:ident => $field:expr) => {
        match $config {
            SinkConfig::Jsonl($c) => Some($field),
            SinkConfig::Soif($c) => Some($field),
            SinkConfig::Csv($c) => Some($field),
            SinkConfig::Rdfxml($c) => Some($field),
            SinkConfig::Ntriples($c) => Some($field),
            SinkConfig::Turtle($c) => Some($field),
            SinkConfig::Jsonld($c) => Some($field),
            SinkConfig::Sqlite($c) => Some($field),
            SinkConfig::Rdm($c) => Some($field),
            SinkConfig::Sparql($c) => Some($field),
            SinkConfig::Parquet($c) => Some($field),
            SinkConfig::Arrow($c) => Some($field),
            SinkConfig::Null(_) => None,
        }
    };
}

/// A table with a `format` key (any of [`Format::parse`]'s names) and the sink options
/// that format takes ([`options::keys`]).
impl<'de> Deserialize<'de> for SinkConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SinkConfig, D::Error> {
        use serde::de::Error as _;
        use serde_json::Value;
        let mut table = serde_json::Map::<String, Value>::deserialize(d)?;
        let name = match table.remove("format") {
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "format must be a string, not {other}"
                )))
            }
            None => return Err(D::Error::missing_field("format")),
        };
        let format = Format::parse(&name).ok_or_else(|| {
            D::Error::custom(format!(
                "unknown format `{name}` (one of {})",
                Format::ALL.join(", ")
            ))
        })?;
        let refused =
            |error: OptionError| D::Error::custom(format!("a {} sink: {error}", format.as_str()));
        // A key this format does not take (of another format, or none) is unknown here.
        let known = options::keys(format);
        let unknown = |key: &str| refused(OptionError::unknown(key, known.iter().copied()));
        if let Some(key) = table.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(unknown(key));
        }
        let options: SinkOptions = serde_path_to_error::deserialize(Value::Object(table.clone()))
            // The key refused, with its value, as every front end reports a bad option.
            .map_err(|e: serde_path_to_error::Error<serde_json::Error>| {
                let key = e.path().to_string();
                let value = match table.get(&key) {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                refused(OptionError::from_serde(
                    &key,
                    &value,
                    &e.inner().to_string(),
                ))
            })?;
        SinkConfig::new(format, &options, Front::PipelineFile).map_err(|o| unknown(o.name))
    }
}

impl SinkConfig {
    /// The `format`'s typed configuration, made from the options given; `Err` is the
    /// first option given that the format does not take (see [`SinkOptions::foreign`]).
    pub fn new(
        format: Format,
        options: &SinkOptions,
        front: Front,
    ) -> Result<SinkConfig, &'static SinkOption> {
        if let Some(option) = options.foreign(format, front) {
            return Err(option);
        }
        Ok(match format {
            Format::Jsonl => SinkConfig::Jsonl(options.into()),
            Format::Soif => SinkConfig::Soif(options.into()),
            Format::Csv => SinkConfig::Csv(options.into()),
            Format::Rdfxml => SinkConfig::Rdfxml(options.into()),
            Format::Ntriples => SinkConfig::Ntriples(options.into()),
            Format::Turtle => SinkConfig::Turtle(options.into()),
            Format::Jsonld => SinkConfig::Jsonld(options.into()),
            Format::Sqlite => SinkConfig::Sqlite(options.into()),
            Format::Rdm => SinkConfig::Rdm(options.into()),
            Format::Sparql => SinkConfig::Sparql(options.into()),
            Format::Parquet => SinkConfig::Parquet(options.into()),
            Format::Arrow => SinkConfig::Arrow(options.into()),
            Format::Null => SinkConfig::Null(options.into()),
        })
    }

    pub fn format(&self) -> Format {
        match self {
            SinkConfig::Jsonl(_) => Format::Jsonl,
            SinkConfig::Soif(_) => Format::Soif,
            SinkConfig::Csv(_) => Format::Csv,
            SinkConfig::Rdfxml(_) => Format::Rdfxml,
            SinkConfig::Ntriples(_) => Format::Ntriples,
            SinkConfig::Turtle(_) => Format::Turtle,
            SinkConfig::Jsonld(_) => Format::Jsonld,
            SinkConfig::Sqlite(_) => Format::Sqlite,
            SinkConfig::Rdm(_) => Format::Rdm,
            SinkConfig::Sparql(_) => Format::Sparql,
            SinkConfig::Parquet(_) => Format::Parquet,
            SinkConfig::Arrow(_) => Format::Arrow,
            SinkConfig::Null(_) => Format::Null,
        }
    }

    /// Where the sink writes: a path, `-`/`None` for stdout, or (`rdm`) a catalog URL;
    /// `None` for `null`, which writes nothing.
    pub fn output(&self) -> Option<&str> {
        output_field!(self, c => &c.output).and_then(|o| o.as_deref())
    }

    /// The output, to be changed (an incremental run writes under a temporary name).
    pub fn output_mut(&mut self) -> Option<&mut Option<String>> {
        output_field!(self, c => &mut c.output)
    }

    /// The `@SCHEMA` of a format that takes one (`csv`, `sqlite`, `parquet`), to be set
    /// from a pipeline file's top-level `schema` when the sink has none of its own.
    pub fn schema_mut(&mut self) -> Option<&mut Option<PathBuf>> {
        match self {
            SinkConfig::Csv(c) => Some(&mut c.schema),
            SinkConfig::Sqlite(c) => Some(&mut c.schema),
            SinkConfig::Parquet(c) => Some(&mut c.schema),
            _ => None,
        }
    }

    /// What the first pass over the inputs must find before this sink can start: CSV
    /// columns (neither `columns` nor `schema` given) or, for wide Parquet, which
    /// attributes hold several values (and the columns, when not given).
    pub fn first_pass(&self) -> FirstPass {
        match self {
            SinkConfig::Csv(c) if c.columns.is_none() && c.schema.is_none() => FirstPass::Columns,
            SinkConfig::Parquet(c) if c.parquet_layout == Layout::Wide => {
                if c.columns.is_none() && c.schema.is_none() {
                    FirstPass::ColumnsAndShape
                } else {
                    FirstPass::Shape
                }
            }
            _ => FirstPass::None,
        }
    }

    /// The columns a first pass found (see [`SinkConfig::first_pass`]).
    pub fn set_columns(&mut self, columns: Vec<String>) {
        match self {
            SinkConfig::Csv(c) => c.columns = Some(columns),
            SinkConfig::Parquet(c) => c.columns = Some(columns),
            _ => {}
        }
    }
}

/// See [`SinkConfig::first_pass`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstPass {
    None,
    Columns,
    Shape,
    ColumnsAndShape,
}

/// What a sink learns from the run rather than from its configuration.
#[derive(Debug, Clone, Default)]
pub struct RunContext {
    /// The inputs of this run, as given (SQLite's `soif_runs`, Parquet's `soif:inputs`).
    pub inputs: Vec<String>,
    /// Wide Parquet: the attributes that hold several values somewhere (from the first
    /// pass), which become list columns.
    pub multi_valued: Option<HashSet<String>>,
}

/// `soif convert`'s output: `--to FORMAT` and the [`SinkOptions`], flattened;
/// [`SinkArgs::config`] makes the [`SinkConfig`] of that format. Each flag's help ends
/// with the formats that take it ([`options::with_formats`]).
#[derive(Debug, Clone, clap::Args)]
#[command(mut_args(options::with_formats))]
pub struct SinkArgs {
    /// Output format (docs/formats.md); `null` only parses and counts.
    #[arg(long, value_name = "FORMAT", value_parser = Format::ALL)]
    pub to: String,

    #[command(flatten)]
    pub options: SinkOptions,
}

impl SinkArgs {
    /// The configuration of the `--to` format; a flag of another format is an error
    /// naming the formats it belongs to (`--to jsonl --bom` is a mistake, not a no-op).
    pub fn config(&self) -> Result<SinkConfig, Error> {
        let format = Format::parse(&self.to)
            .ok_or_else(|| Error::Config(format!("unknown output format `{}`", self.to)))?;
        SinkConfig::new(format, &self.options, Front::CommandLine).map_err(|option| {
            let names: Vec<&str> = option.formats.iter().map(|f| f.as_str()).collect();
            OptionError::Other(format!(
                "option {} is for --to {}, not --to {}",
                option.flag(),
                soif_options::one_of(&names),
                format.as_str()
            ))
            .into()
        })
    }
}

// Each format's `Config` from the options (those of other formats refused before).

/// The options of a `jsonl` sink.
impl From<&SinkOptions> for jsonl::Config {
    fn from(o: &SinkOptions) -> jsonl::Config {
        jsonl::Config {
            output: o.output.clone(),
            charset: o.charset(),
        }
    }
}

/// The options of a `soif` sink.
impl From<&SinkOptions> for soif::Config {
    fn from(o: &SinkOptions) -> soif::Config {
        soif::Config {
            output: o.output.clone(),
        }
    }
}

/// The options of a `csv` sink.
impl From<&SinkOptions> for csv::Config {
    fn from(o: &SinkOptions) -> csv::Config {
        csv::Config {
            output: o.output.clone(),
            columns: o.columns.clone(),
            list_separator: o.list_separator(),
            charset: o.charset(),
            bom: o.bom,
            schema: o.schema.clone(),
        }
    }
}

/// The options of an RDF sink (`rdfxml`, `ntriples`, `turtle`, `jsonld`).
impl From<&SinkOptions> for rdf::Config {
    fn from(o: &SinkOptions) -> rdf::Config {
        rdf::Config {
            output: o.output.clone(),
        }
    }
}

/// The options of a `sqlite` sink.
impl From<&SinkOptions> for sqlite::Config {
    fn from(o: &SinkOptions) -> sqlite::Config {
        sqlite::Config {
            output: o.output.clone(),
            schema: o.schema.clone(),
            charset: o.charset(),
            batch_size: o.batch_size,
        }
    }
}

/// The options of a `rdm` sink.
impl From<&SinkOptions> for rdm::Config {
    fn from(o: &SinkOptions) -> rdm::Config {
        rdm::Config {
            output: o.output.clone(),
            token: o.token.clone(),
            batch_size: o.batch_size,
            gzip_posts: o.gzip_posts,
        }
    }
}

/// The options of a `sparql` sink.
impl From<&SinkOptions> for sparql::Config {
    fn from(o: &SinkOptions) -> sparql::Config {
        sparql::Config {
            output: o.output.clone(),
            token: o.token.clone(),
            batch_size: o.batch_size,
            graph_store: o.graph_store.clone(),
        }
    }
}

/// The options of a `parquet` sink.
impl From<&SinkOptions> for parquet::Config {
    fn from(o: &SinkOptions) -> parquet::Config {
        parquet::Config {
            output: o.output.clone(),
            compression: o.compression.unwrap_or_default(),
            parquet_layout: o.parquet_layout.unwrap_or_default(),
            columns: o.columns.clone(),
            schema: o.schema.clone(),
            charset: o.charset(),
            list_separator: o.list_separator(),
        }
    }
}

/// The options of a `arrow` sink.
impl From<&SinkOptions> for arrow::Config {
    fn from(o: &SinkOptions) -> arrow::Config {
        arrow::Config {
            output: o.output.clone(),
        }
    }
}

/// The options of a `null` sink.
impl From<&SinkOptions> for null::Config {
    fn from(_o: &SinkOptions) -> null::Config {
        null::Config {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OPTIONS;

    fn sink(toml_text: &str) -> Result<SinkConfig, String> {
        toml::from_str(toml_text).map_err(|e| e.to_string())
    }

    #[test]
    fn every_format_has_a_config_under_its_name() {
        for name in Format::ALL {
            let c = sink(&format!("format = \"{name}\"\n")).unwrap();
            assert_eq!(c.format().as_str(), name);
        }
        assert_eq!(
            sink("format = \"ndjson\"\n").unwrap().format(),
            Format::Jsonl
        );
        assert_eq!(sink("format = \"rdf\"\n").unwrap().format(), Format::Rdfxml);
        let e = sink("format = \"xml\"\n").unwrap_err();
        assert!(e.contains("unknown format `xml` (one of jsonl, csv"), "{e}");
    }

    #[test]
    fn every_format_but_null_has_an_output_to_read_and_change() {
        for name in Format::ALL {
            let mut c = sink(&format!("format = \"{name}\"\n")).unwrap();
            assert_eq!(c.output(), None, "{name}");
            let Some(slot) = c.output_mut() else {
                assert_eq!(c.format(), Format::Null);
                continue;
            };
            *slot = Some("out.tmp".into());
            assert_eq!(c.output(), Some("out.tmp"), "{name}");
            let given = sink(&format!("format = \"{name}\"\noutput = \"out.tmp\"\n")).unwrap();
            assert_eq!(c, given, "{name}");
        }
    }

    #[test]
    fn a_key_of_another_format_is_an_error() {
        let e = sink("format = \"jsonl\"\noutput = \"a\"\nbom = true\n").unwrap_err();
        assert!(
            e.contains("a jsonl sink: unknown option `bom` (known: output, charset)"),
            "{e}"
        );
        let e = sink("format = \"csv\"\ngzip_posts = true\n").unwrap_err();
        assert!(e.contains("gzip_posts"), "{e}");
        let c = sink("format = \"csv\"\nbom = true\ncolumns = [\"Title\"]\n").unwrap();
        let SinkConfig::Csv(c) = c else {
            panic!("{c:?}")
        };
        assert!(c.bom);
        assert_eq!(c.list_separator, "|");
        let e = sink("format = \"parquet\"\ncompression = \"lz4\"\n").unwrap_err();
        assert!(
            e.contains(
                "a parquet sink: option compression=`lz4`: expected zstd, snappy, gzip or none"
            ),
            "{e}"
        );
        let e = sink("format = \"jsonl\"\ncharset = \"ebcdic\"\n").unwrap_err();
        assert!(
            e.contains("a jsonl sink: option charset=`ebcdic`: expected utf8 or latin1"),
            "{e}"
        );
    }

    #[test]
    fn the_command_line_makes_the_same_configs() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            sink: SinkArgs,
        }
        let from_cli = |args: &[&str]| {
            Cli::try_parse_from([&["soif"], args].concat())
                .unwrap()
                .sink
                .config()
                .unwrap()
        };
        assert_eq!(
            from_cli(&["--to", "csv", "-o", "a.csv", "--bom", "--columns", "A,B"]),
            sink("format = \"csv\"\noutput = \"a.csv\"\nbom = true\ncolumns = [\"A\", \"B\"]\n")
                .unwrap()
        );
        assert_eq!(
            from_cli(&[
                "--to",
                "parquet",
                "--compression",
                "none",
                "--parquet-layout",
                "wide"
            ]),
            sink("format = \"parquet\"\ncompression = \"none\"\nparquet_layout = \"wide\"\n")
                .unwrap()
        );
        assert_eq!(
            from_cli(&["--to", "jsonl", "--charset", "latin1"]),
            sink("format = \"jsonl\"\ncharset = \"latin1\"\n").unwrap()
        );
        // A flag of another format is a mistake, named with the formats it is for.
        let refused = |args: &[&str]| {
            Cli::try_parse_from([&["soif"], args].concat())
                .unwrap()
                .sink
                .config()
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused(&["--to", "jsonl", "--bom"]),
            "option --bom is for --to csv, not --to jsonl"
        );
        assert_eq!(
            refused(&["--to", "soif", "--columns", "A"]),
            "option --columns is for --to csv or parquet, not --to soif"
        );
        assert!(refused(&["--to", "arrow", "--charset", "latin1"]).contains("--charset"));
    }

    /// Each option as a flag and as a `[[sink]]` key, with the same value.
    fn sample(name: &str) -> (&'static [&'static str], &'static str) {
        match name {
            "output" => (&["-o", "out.x"], "output = \"out.x\""),
            "charset" => (&["--charset", "latin1"], "charset = \"latin1\""),
            "columns" => (&["--columns", "A,B"], "columns = [\"A\", \"B\"]"),
            "list_separator" => (&["--list-separator", ";"], "list_separator = \";\""),
            "bom" => (&["--bom"], "bom = true"),
            "batch_size" => (&["--batch-size", "7"], "batch_size = 7"),
            "schema" => (&["--schema", "s.schema"], "schema = \"s.schema\""),
            "compression" => (&["--compression", "gzip"], "compression = \"gzip\""),
            "parquet_layout" => (&["--parquet-layout", "wide"], "parquet_layout = \"wide\""),
            "token" => (&["--token", "secret"], "token = \"secret\""),
            "gzip_posts" => (&["--gzip-posts"], "gzip_posts = true"),
            "graph_store" => (
                &["--graph-store", "http://h/store"],
                "graph_store = \"http://h/store\"",
            ),
            other => panic!("no sample for the option {other}: add one"),
        }
    }

    /// Every option, for every format: the same `Config` from the command line and from
    /// a `[[sink]]` table, different from the format's default (the format reads it);
    /// refused by both for a format that does not take it (except the command line's
    /// shared options).
    #[test]
    fn every_option_means_the_same_on_the_command_line_and_in_a_sink_table() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            sink: SinkArgs,
        }
        let cli = |format: &str, args: &[&str]| {
            Cli::try_parse_from([&["soif", "--to", format], args].concat())
                .unwrap()
                .sink
                .config()
                .map_err(|e| e.to_string())
        };
        for name in Format::ALL {
            let format = Format::parse(name).unwrap();
            let default = sink(&format!("format = \"{name}\"\n")).unwrap();
            assert_eq!(cli(name, &[]).unwrap(), default, "{name}");
            for option in OPTIONS {
                let (args, key) = sample(option.name);
                let table = format!("format = \"{name}\"\n{key}\n");
                if option.takes(format) {
                    let from_file = sink(&table).unwrap();
                    assert_eq!(cli(name, args).unwrap(), from_file, "{name} {key}");
                    assert_ne!(from_file, default, "{name} ignores {key}");
                    continue;
                }
                let e = sink(&table).unwrap_err();
                assert!(
                    e.contains(&format!("a {name} sink: unknown option `{}`", option.name)),
                    "{e}"
                );
                match cli(name, args) {
                    Ok(config) => {
                        assert!(option.shared_on_cli, "{name} {args:?}");
                        assert_eq!(config, default, "{name} {args:?}");
                    }
                    Err(e) => assert!(
                        e.starts_with(&format!("option {} is for --to ", option.flag()))
                            && e.ends_with(&format!(", not --to {name}")),
                        "{e}"
                    ),
                }
            }
            // All of the format's options at once.
            let (mut args, mut table) = (Vec::new(), format!("format = \"{name}\"\n"));
            for option in OPTIONS.iter().filter(|o| o.takes(format)) {
                let (a, key) = sample(option.name);
                args.extend_from_slice(a);
                table.push_str(key);
                table.push('\n');
            }
            assert_eq!(cli(name, &args).unwrap(), sink(&table).unwrap(), "{name}");
        }
    }
}
