//! Each sink's typed configuration, from a pipeline file's `[[sink]]` or the command line.
//!
//! A `[[sink]]` table deserialises straight into [`SinkConfig`], tagged by `format`; each
//! format's `Config` (beside its sink: [`crate::jsonl::Config`], [`crate::csv::Config`]…)
//! denies unknown keys, so a key meant for another format is an error, not a silent
//! no-op. The command line's output flags are [`SinkArgs`] (flattened into `soif
//! convert`); [`SinkArgs::config`] makes the same `SinkConfig` from them, each format
//! taking the flags that concern it.

use crate::parquet::{Compression, Layout};
use crate::{arrow, csv, jsonl, null, parquet, rdf, rdm, soif, sqlite, Charset, Format};
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
            SinkConfig::Parquet($c) => Some($field),
            SinkConfig::Arrow($c) => Some($field),
            SinkConfig::Null(_) => None,
        }
    };
}

/// A table with a `format` key (any of [`Format::parse`]'s names) and the keys of that
/// format's `Config`.
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
        let v = Value::Object(table.clone());
        let config = match format {
            Format::Jsonl => typed(v).map(SinkConfig::Jsonl),
            Format::Soif => typed(v).map(SinkConfig::Soif),
            Format::Csv => typed(v).map(SinkConfig::Csv),
            Format::Rdfxml => typed(v).map(SinkConfig::Rdfxml),
            Format::Ntriples => typed(v).map(SinkConfig::Ntriples),
            Format::Turtle => typed(v).map(SinkConfig::Turtle),
            Format::Jsonld => typed(v).map(SinkConfig::Jsonld),
            Format::Sqlite => typed(v).map(SinkConfig::Sqlite),
            Format::Rdm => typed(v).map(SinkConfig::Rdm),
            Format::Parquet => typed(v).map(SinkConfig::Parquet),
            Format::Arrow => typed(v).map(SinkConfig::Arrow),
            Format::Null => typed(v).map(SinkConfig::Null),
        };
        // The key refused, with its value, as every front end reports a bad option.
        config.map_err(|e| {
            let key = e.path().to_string();
            let value = match table.get(&key) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let error = OptionError::from_serde(&key, &value, &e.inner().to_string());
            D::Error::custom(format!("a {} sink: {error}", format.as_str()))
        })
    }
}

/// A format's `Config` from a `[[sink]]` table's other keys; the error names the key.
fn typed<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    serde_path_to_error::deserialize(v)
}

impl SinkConfig {
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

/// `soif convert`'s output flags; [`SinkArgs::config`] turns them into the
/// [`SinkConfig`] of one format, which takes the flags that concern it.
#[derive(Debug, Clone, clap::Args)]
pub struct SinkArgs {
    /// Output format: jsonl, soif, csv, rdfxml, ntriples, turtle, jsonld, sqlite, rdm,
    /// parquet, arrow (an Arrow IPC stream), or null (parse and count only).
    #[arg(long, value_name = "FORMAT", value_parser = Format::ALL)]
    pub to: String,

    /// Output path (default stdout; sqlite needs one) or, for rdm, a catalog URL.
    #[arg(short, long, value_name = "OUTPUT")]
    pub output: Option<String>,

    /// How to write values that are not UTF-8 where text is needed: `utf8` (the default;
    /// JSON gets {"base64": …}, text formats a replacement) or `latin1` (read them as ISO
    /// 8859-1). For jsonl, csv, sqlite and parquet.
    #[arg(long, value_name = "CHARSET", value_parser = ["utf8", "latin1"])]
    pub charset: Option<String>,

    /// CSV (and wide Parquet) columns after template,url (default: from --schema, or a
    /// first pass over the input).
    #[arg(long, value_name = "A,B,…", value_delimiter = ',')]
    pub columns: Option<Vec<String>>,

    /// CSV (and wide Parquet): separator between the items of a list (default `|`).
    #[arg(long, value_name = "SEP")]
    pub list_separator: Option<String>,

    /// CSV: start with a UTF-8 byte-order mark, so that Excel reads the file as UTF-8.
    #[arg(long)]
    pub bom: bool,

    /// SQLite rows per transaction (default 10000, and at most 64 MiB of records);
    /// RDM records per POST (default 1000).
    #[arg(long, value_name = "N")]
    pub batch_size: Option<usize>,

    /// An RDM @SCHEMA file: CSV columns, SQLite column types, the `validate` transform.
    #[arg(long, value_name = "SCHEMA")]
    pub schema: Option<PathBuf>,

    /// Parquet compression (default `zstd`).
    #[arg(long, value_name = "CODEC", value_parser = Compression::ALL)]
    pub compression: Option<String>,

    /// Parquet layout: `records` (soif's Arrow layout: lossless, attributes as an ordered
    /// list of name/value) or `wide` (a column per attribute, chosen as for CSV; list
    /// columns for multi-values; typed columns from a --schema's Data-Type).
    /// Default `records`.
    #[arg(long, value_name = "LAYOUT", value_parser = Layout::ALL)]
    pub parquet_layout: Option<String>,

    /// Bearer token for an rdm output.
    #[arg(long, value_name = "TOKEN", env = "SOIF_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// RDM: gzip each POST (`Content-Encoding: gzip`, which the note allows and `soif
    /// serve` accepts; another catalog server may not).
    #[arg(long)]
    pub gzip_posts: bool,
}

/// The flags that concern only some formats, and those formats: another format refuses
/// them (`--to jsonl --bom` is a mistake, not a no-op), as a `[[sink]]` table refuses a
/// key of another format. (`--output`, `--schema`, which transforms use too, and
/// `--token`, which may come from the environment, are left out.)
const FORMAT_FLAGS: [(&str, &[Format]); 8] = [
    (
        "--charset",
        &[Format::Jsonl, Format::Csv, Format::Sqlite, Format::Parquet],
    ),
    ("--columns", &[Format::Csv, Format::Parquet]),
    ("--list-separator", &[Format::Csv, Format::Parquet]),
    ("--bom", &[Format::Csv]),
    ("--batch-size", &[Format::Sqlite, Format::Rdm]),
    ("--compression", &[Format::Parquet]),
    ("--parquet-layout", &[Format::Parquet]),
    ("--gzip-posts", &[Format::Rdm]),
];

impl SinkArgs {
    /// The configuration of the `--to` format; a flag of another format is an error
    /// naming the formats it belongs to.
    pub fn config(&self) -> Result<SinkConfig, Error> {
        let format = Format::parse(&self.to)
            .ok_or_else(|| Error::Config(format!("unknown output format `{}`", self.to)))?;
        self.check_flags(format)?;
        let charset = parse_charset(self.charset.as_deref().unwrap_or("utf8"))?;
        let output = self.output.clone();
        let list_separator = self
            .list_separator
            .clone()
            .unwrap_or_else(default_list_separator);
        Ok(match format {
            Format::Jsonl => SinkConfig::Jsonl(jsonl::Config { output, charset }),
            Format::Soif => SinkConfig::Soif(soif::Config { output }),
            Format::Csv => SinkConfig::Csv(csv::Config {
                output,
                columns: self.columns.clone(),
                list_separator,
                charset,
                bom: self.bom,
                schema: self.schema.clone(),
            }),
            Format::Rdfxml => SinkConfig::Rdfxml(rdf::Config { output }),
            Format::Ntriples => SinkConfig::Ntriples(rdf::Config { output }),
            Format::Turtle => SinkConfig::Turtle(rdf::Config { output }),
            Format::Jsonld => SinkConfig::Jsonld(rdf::Config { output }),
            Format::Sqlite => SinkConfig::Sqlite(sqlite::Config {
                output,
                schema: self.schema.clone(),
                charset,
                batch_size: self.batch_size,
            }),
            Format::Rdm => SinkConfig::Rdm(rdm::Config {
                output,
                token: self.token.clone(),
                batch_size: self.batch_size,
                gzip_posts: self.gzip_posts,
            }),
            Format::Parquet => SinkConfig::Parquet(parquet::Config {
                output,
                compression: match &self.compression {
                    Some(c) => parse_compression(c)?,
                    None => Compression::default(),
                },
                parquet_layout: match &self.parquet_layout {
                    Some(l) => parse_layout(l)?,
                    None => Layout::default(),
                },
                columns: self.columns.clone(),
                schema: self.schema.clone(),
                charset,
                list_separator,
            }),
            Format::Arrow => SinkConfig::Arrow(arrow::Config { output }),
            Format::Null => SinkConfig::Null(null::Config {}),
        })
    }

    /// Refuses a flag given that `format` does not take (see [`FORMAT_FLAGS`]).
    fn check_flags(&self, format: Format) -> Result<(), Error> {
        let given = |flag: &str| match flag {
            "--charset" => self.charset.is_some(),
            "--columns" => self.columns.is_some(),
            "--list-separator" => self.list_separator.is_some(),
            "--bom" => self.bom,
            "--batch-size" => self.batch_size.is_some(),
            "--compression" => self.compression.is_some(),
            "--parquet-layout" => self.parquet_layout.is_some(),
            "--gzip-posts" => self.gzip_posts,
            _ => false,
        };
        for (flag, formats) in FORMAT_FLAGS {
            if given(flag) && !formats.contains(&format) {
                let names: Vec<&str> = formats.iter().map(|f| f.as_str()).collect();
                return Err(OptionError::Other(format!(
                    "option {flag} is for --to {}, not --to {}",
                    soif_options::one_of(&names),
                    format.as_str()
                ))
                .into());
            }
        }
        Ok(())
    }
}

pub fn parse_charset(s: &str) -> Result<Charset, Error> {
    match s {
        "utf8" | "utf-8" => Ok(Charset::Utf8),
        "latin1" | "latin-1" | "iso-8859-1" => Ok(Charset::Latin1),
        other => Err(Error::Config(format!(
            "unknown charset `{other}` (utf8 or latin1)"
        ))),
    }
}

pub fn parse_compression(s: &str) -> Result<Compression, Error> {
    Compression::parse(s).ok_or_else(|| {
        Error::Config(format!(
            "unknown compression `{s}` ({})",
            Compression::ALL.join(", ")
        ))
    })
}

pub fn parse_layout(s: &str) -> Result<Layout, Error> {
    Layout::parse(s)
        .ok_or_else(|| Error::Config(format!("unknown parquet layout `{s}` (records or wide)")))
}

/// A string naming one of `names`, read by `parse`.
fn de_named<'de, D: Deserializer<'de>, T>(
    d: D,
    names: &[&str],
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<T, D::Error> {
    let s = String::deserialize(d)?;
    parse(&s).ok_or_else(|| {
        serde::de::Error::invalid_value(
            serde::de::Unexpected::Str(&s),
            &soif_options::one_of(names).as_str(),
        )
    })
}

/// `charset = "utf8" | "latin1"`.
pub(crate) fn de_charset<'de, D: Deserializer<'de>>(d: D) -> Result<Charset, D::Error> {
    de_named(d, &["utf8", "latin1"], |s| parse_charset(s).ok())
}

/// `compression = "zstd" | "snappy" | "gzip" | "none"`.
pub(crate) fn de_compression<'de, D: Deserializer<'de>>(d: D) -> Result<Compression, D::Error> {
    de_named(d, &Compression::ALL, Compression::parse)
}

/// `parquet_layout = "records" | "wide"`.
pub(crate) fn de_layout<'de, D: Deserializer<'de>>(d: D) -> Result<Layout, D::Error> {
    de_named(d, &Layout::ALL, Layout::parse)
}

pub(crate) fn default_list_separator() -> String {
    csv::DEFAULT_LIST_SEPARATOR.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
