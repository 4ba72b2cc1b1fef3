//! Every sink option, defined once: its name, type, help text, default and the formats
//! that take it.
//!
//! [`SinkOptions`] is one flat struct of every option. It derives both `clap::Args`
//! (flattened into `soif convert`, as `--list-separator`) and `serde::Deserialize` (a
//! pipeline file's `[[sink]]` keys, as `list_separator`); its doc comments are the help
//! text of both. [`OPTIONS`] says which formats take each option, and each format's
//! typed `Config` is made from the options ([`SinkConfig::new`](crate::SinkConfig::new)),
//! an option of another format refused:
//!
//! ```
//! use soif_sinks::{Format, SinkConfig, SinkOptions};
//!
//! let mut options = SinkOptions::default();
//! options.bom = true;
//! assert!(SinkConfig::new(Format::Csv, &options, soif_sinks::Front::PipelineFile).is_ok());
//! let refused = SinkConfig::new(Format::Jsonl, &options, soif_sinks::Front::PipelineFile);
//! assert_eq!(refused.unwrap_err().name, "bom");
//! ```
//!
//! To add an option: a field in the `sink_options!` list below (doc comment, `#[arg]`,
//! `#[serde]`, the formats after `=>`), then read it in the `From<&SinkOptions>` (in
//! [`crate::config`]) of each format's `Config` that takes it.

use crate::parquet::{Compression, Layout};
use crate::{Charset, Format};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use serde::{Deserialize, Deserializer};
use std::path::PathBuf;

/// One sink option: its key in a `[[sink]]` table (its flag is `--` and the key with
/// `-` for `_`), and the formats that take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkOption {
    /// The key, as in a pipeline file (`list_separator`).
    pub name: &'static str,
    /// The formats that take it.
    pub formats: &'static [Format],
    /// On the command line, given to every format without complaint: `--schema` also
    /// serves the transforms, `--token` may come from the environment.
    pub shared_on_cli: bool,
}

impl SinkOption {
    /// The option as a flag (`--list-separator`).
    pub fn flag(&self) -> String {
        format!("--{}", self.name.replace('_', "-"))
    }

    /// The one format that does not take it, if every other does (`output`: `null`).
    pub fn formats_but(&self) -> Option<&'static str> {
        let all = Format::ALL.iter().filter_map(|n| Format::parse(n));
        let others: Vec<Format> = all.filter(|f| !self.takes(*f)).collect();
        match others[..] {
            [one] => Some(one.as_str()),
            _ => None,
        }
    }

    /// Whether `format` takes it.
    pub fn takes(&self, format: Format) -> bool {
        self.formats.contains(&format)
    }
}

/// Where options were given: an option of another format is an error in both, but the
/// command line lets the [shared](SinkOption::shared_on_cli) ones through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    CommandLine,
    PipelineFile,
}

/// Whether an option's field holds a value given (a flag set, a key present).
trait Given {
    fn given(&self) -> bool;
}

impl<T> Given for Option<T> {
    fn given(&self) -> bool {
        self.is_some()
    }
}

impl Given for bool {
    fn given(&self) -> bool {
        *self
    }
}

/// The struct [`SinkOptions`], the table [`OPTIONS`] and [`SinkOptions::given`], from
/// one list of fields: `doc, #[arg], #[serde] NAME: TYPE => [FORMATS] (shared)?;`.
macro_rules! sink_options {
    ($(
        $(#[$meta:meta])*
        $name:ident : $ty:ty => [$($format:ident),* $(,)?] $($shared:ident)?;
    )*) => {
        /// Every sink option (see the [module documentation](self)): `soif convert`'s
        /// output flags and a `[[sink]]` table's keys.
        #[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct SinkOptions {
            $( $(#[$meta])* pub $name: $ty, )*
        }

        /// Which formats take each option of [`SinkOptions`], in the order of its fields.
        pub const OPTIONS: &[SinkOption] = &[$(
            SinkOption {
                name: stringify!($name),
                formats: &[$(Format::$format),*],
                shared_on_cli: sink_options!(@shared $($shared)?),
            },
        )*];

        impl SinkOptions {
            /// The options given (flags set, keys present), in [`OPTIONS`] order.
            pub fn given(&self) -> impl Iterator<Item = &'static SinkOption> {
                let given = [$( Given::given(&self.$name) ),*];
                OPTIONS.iter().zip(given).filter(|(_, g)| *g).map(|(o, _)| o)
            }
        }
    };
    (@shared) => { false };
    (@shared shared) => { true };
}

sink_options! {
    /// Output path (default stdout; sqlite needs one) or, for rdm, a catalog URL; for
    /// sparql, the URL of a SPARQL Update endpoint.
    #[arg(short, long, value_name = "OUTPUT")]
    output: Option<String> => [
        Jsonl, Soif, Csv, Rdfxml, Ntriples, Turtle, Jsonld, Sqlite, Rdm, Sparql, Parquet, Arrow
    ];

    /// How to write values that are not UTF-8 where text is needed: `utf8` (the default;
    /// JSON gets {"base64": …}, text formats a replacement) or `latin1` (read them as ISO
    /// 8859-1).
    #[arg(long, value_name = "CHARSET", value_parser = named(&CHARSETS, charset))]
    #[serde(default, deserialize_with = "de_charset")]
    charset: Option<Charset> => [Jsonl, Csv, Sqlite, Parquet];

    /// CSV (and wide Parquet) columns after template,url (default: from --schema, or a
    /// first pass over the input).
    #[arg(long, value_name = "A,B,…", value_delimiter = ',')]
    columns: Option<Vec<String>> => [Csv, Parquet];

    /// CSV (and wide Parquet): separator between the items of a list (default `|`).
    #[arg(long, value_name = "SEP")]
    list_separator: Option<String> => [Csv, Parquet];

    /// CSV: start with a UTF-8 byte-order mark, so that Excel reads the file as UTF-8.
    #[arg(long)]
    #[serde(default)]
    bom: bool => [Csv];

    /// SQLite rows per transaction (default 10000, and at most 64 MiB of records);
    /// RDM and SPARQL records per POST (default 1000; SPARQL with --graph-store 10000,
    /// and at most 64 MiB).
    #[arg(long, value_name = "N")]
    batch_size: Option<usize> => [Sqlite, Rdm, Sparql];

    /// An RDM @SCHEMA file: CSV columns, SQLite column types, wide Parquet column types
    /// (on the command line also the `validate` transform's).
    #[arg(long, value_name = "SCHEMA")]
    schema: Option<PathBuf> => [Csv, Sqlite, Parquet] shared;

    /// Parquet compression: zstd (the default), snappy, gzip or none.
    #[arg(long, value_name = "CODEC", value_parser = named(&Compression::ALL, Compression::parse))]
    #[serde(default, deserialize_with = "de_compression")]
    compression: Option<Compression> => [Parquet];

    /// Parquet layout: `records` (soif's Arrow layout: lossless, attributes as an ordered
    /// list of name/value) or `wide` (a column per attribute, chosen as for CSV; list
    /// columns for multi-values; typed columns from a schema's Data-Type).
    /// Default `records`.
    #[arg(long, value_name = "LAYOUT", value_parser = named(&Layout::ALL, Layout::parse))]
    #[serde(default, deserialize_with = "de_layout")]
    parquet_layout: Option<Layout> => [Parquet];

    /// Bearer token for an rdm or sparql output (default: the SOIF_TOKEN environment
    /// variable).
    #[arg(long, value_name = "TOKEN", env = "SOIF_TOKEN", hide_env_values = true)]
    token: Option<String> => [Rdm, Sparql] shared;

    /// RDM: gzip each POST (`Content-Encoding: gzip`, which the note allows and `soif
    /// serve` accepts; another catalog server may not).
    #[arg(long)]
    #[serde(default)]
    gzip_posts: bool => [Rdm];

    /// SPARQL: load the triples by POSTing them as N-Quads, each record's in its own
    /// graph, to this endpoint of the store (Oxigraph: http://HOST:7878/store, or
    /// …/store?no_transaction for its bulk loader); the Update endpoint (-o) then only
    /// drops the graphs replaced. Much faster than the update's INSERT DATA.
    #[arg(long, value_name = "URL")]
    graph_store: Option<String> => [Sparql];
}

/// The keys a `format`'s `[[sink]]` takes (besides `format`), in [`OPTIONS`] order.
pub fn keys(format: Format) -> Vec<&'static str> {
    OPTIONS
        .iter()
        .filter(|o| o.takes(format))
        .map(|o| o.name)
        .collect()
}

/// `arg` (one of [`SinkOptions`]' flags) with the formats that take it after its help,
/// from [`OPTIONS`]: `soif convert --help` says `[for --to csv or parquet]`.
pub fn with_formats(arg: clap::Arg) -> clap::Arg {
    let Some(option) = option(arg.get_id().as_str()) else {
        return arg;
    };
    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    let formats = match option.formats_but() {
        Some(but) => format!("every --to but {but}"),
        None => {
            let names: Vec<&str> = option.formats.iter().map(|f| f.as_str()).collect();
            format!("--to {}", soif_options::one_of(&names))
        }
    };
    arg.help(format!("{help} [for {formats}]"))
}

/// The option named `name` (a key, `list_separator`).
pub fn option(name: &str) -> Option<&'static SinkOption> {
    OPTIONS.iter().find(|o| o.name == name)
}

impl SinkOptions {
    /// The first option given that `format` does not take (from the command line, one
    /// that is not [shared](SinkOption::shared_on_cli)).
    pub fn foreign(&self, format: Format, front: Front) -> Option<&'static SinkOption> {
        self.given()
            .find(|o| !(o.takes(format) || front == Front::CommandLine && o.shared_on_cli))
    }

    /// `charset`, or its default.
    pub fn charset(&self) -> Charset {
        self.charset.unwrap_or_default()
    }

    /// `list_separator`, or its default `|`.
    pub fn list_separator(&self) -> String {
        self.list_separator
            .clone()
            .unwrap_or_else(|| crate::csv::DEFAULT_LIST_SEPARATOR.to_string())
    }
}

/// The names `charset` takes; `utf-8`, `latin-1` and `iso-8859-1` are read too.
pub const CHARSETS: [&str; 2] = ["utf8", "latin1"];

/// A charset by name (see [`CHARSETS`]).
pub fn charset(s: &str) -> Option<Charset> {
    match s {
        "utf8" | "utf-8" => Some(Charset::Utf8),
        "latin1" | "latin-1" | "iso-8859-1" => Some(Charset::Latin1),
        _ => None,
    }
}

/// A flag's value among `names`, read by `parse` (which may take other spellings too);
/// refused as clap refuses a value outside its possible values, which the CLI reports
/// as every front end reports a bad option.
#[derive(Clone)]
struct Named<T> {
    names: &'static [&'static str],
    parse: fn(&str) -> Option<T>,
}

fn named<T>(names: &'static [&'static str], parse: fn(&str) -> Option<T>) -> Named<T> {
    Named { names, parse }
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Named<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        if let Some(v) = value.to_str().and_then(self.parse) {
            return Ok(v);
        }
        // Not among the names (else `parse` took it): clap's error, with the names.
        PossibleValuesParser::new(self.names)
            .parse_ref(cmd, arg, value)
            .and_then(|_| Err(clap::Error::new(clap::error::ErrorKind::InvalidValue)))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.names.iter().map(PossibleValue::new)))
    }
}

/// A string naming one of `names`, read by `parse`.
fn de_named<'de, D: Deserializer<'de>, T>(
    d: D,
    names: &[&str],
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<Option<T>, D::Error> {
    let s = String::deserialize(d)?;
    match parse(&s) {
        Some(v) => Ok(Some(v)),
        None => Err(serde::de::Error::invalid_value(
            serde::de::Unexpected::Str(&s),
            &soif_options::one_of(names).as_str(),
        )),
    }
}

/// `charset = "utf8" | "latin1"`.
fn de_charset<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Charset>, D::Error> {
    de_named(d, &CHARSETS, charset)
}

/// `compression = "zstd" | "snappy" | "gzip" | "none"`.
fn de_compression<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Compression>, D::Error> {
    de_named(d, &Compression::ALL, Compression::parse)
}

/// `parquet_layout = "records" | "wide"`.
fn de_layout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Layout>, D::Error> {
    de_named(d, &Layout::ALL, Layout::parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_follows_the_fields() {
        let options = SinkOptions {
            output: Some("o".into()),
            bom: true,
            token: Some("t".into()),
            ..SinkOptions::default()
        };
        let given: Vec<&str> = options.given().map(|o| o.name).collect();
        assert_eq!(given, ["output", "bom", "token"]);
        assert_eq!(
            options
                .foreign(Format::Jsonl, Front::CommandLine)
                .map(|o| o.name),
            Some("bom")
        );
        assert_eq!(option("list_separator").unwrap().flag(), "--list-separator");
        // Every field is in the table, and every flag is the key spelt as a flag.
        let cmd = <SinkOptions as clap::Args>::augment_args(clap::Command::new("t"));
        let flags: Vec<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long())
            .map(|l| format!("--{l}"))
            .collect();
        let table: Vec<String> = OPTIONS.iter().map(SinkOption::flag).collect();
        assert_eq!(flags, table);
        assert_eq!(keys(Format::Jsonl), ["output", "charset"]);
        assert!(keys(Format::Null).is_empty());
    }

    const TABLE_START: &str = "<!-- The table is made from sinks/src/options.rs";
    const TABLE_END: &str = "<!-- end of the options table -->";

    /// docs/formats.md#options's table, from [`OPTIONS`] and the help texts.
    fn docs_table() -> String {
        let cmd = <SinkOptions as clap::Args>::augment_args(clap::Command::new("soif"));
        let mut table = String::from(
            "| flag | `[[sink]]` key | formats | meaning |\n|------|------|------|------|\n",
        );
        for (arg, option) in cmd.get_arguments().zip(OPTIONS) {
            let flag = match arg.get_short() {
                Some(short) => format!("`-{short}`, `{}`", option.flag()),
                None => format!("`{}`", option.flag()),
            };
            let formats = if let Some(but) = option.formats_but() {
                format!("all but `{but}`")
            } else {
                let names: Vec<String> = option
                    .formats
                    .iter()
                    .map(|f| format!("`{}`", f.as_str()))
                    .collect();
                names.join(", ")
            };
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            let help = help.replace('|', "\\|");
            table.push_str(&format!(
                "| {flag} | `{}` | {formats} | {help} |\n",
                option.name
            ));
        }
        table
    }

    #[test]
    fn the_docs_list_every_option_as_defined() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/formats.md");
        let page = std::fs::read_to_string(path).unwrap();
        let expected = docs_table();
        let table = page
            .split_once(TABLE_START)
            .and_then(|(_, rest)| rest.split_once("-->\n"))
            .and_then(|(_, rest)| rest.split_once(TABLE_END))
            .map(|(table, _)| table);
        assert_eq!(
            table,
            Some(expected.as_str()),
            "docs/formats.md#options: the table between {TABLE_START:?} and {TABLE_END:?} should be\n{expected}"
        );
    }
}
