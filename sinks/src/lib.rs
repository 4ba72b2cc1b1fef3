//! soif sinks: where records go. One module per format.
//!
//! | format   | module      | writes |
//! |----------|-------------|--------|
//! | `jsonl`  | [`jsonl`]   | one JSON object per record |
//! | `soif`   | [`soif`]    | canonical SOIF |
//! | `csv`    | [`csv`]     | RFC 4180 CSV |
//! | `rdfxml` | [`rdfxml`]  | Simple Dublin Core in RDF/XML |
//! | `sqlite` | [`sqlite`]  | a table per template |
//! | `rdm`    | [`rdm`]     | RDM `rd-response` POSTs to a catalog server |
//! | `parquet`| [`parquet`] | a Parquet file in soif's Arrow layout, or a column per attribute ([`wide`]) |
//! | `arrow`  | [`arrow`]   | an Arrow IPC stream in soif's Arrow layout |
//! | `null`   | [`null`]    | nothing (parse and count) |
//!
//! [`build`] turns [`SinkOptions`] (filled from the command line or a pipeline file) into
//! a boxed [`Sink`].

pub mod arrow;
pub mod csv;
pub mod jsonl;
pub mod null;
pub mod parquet;
pub mod rdfxml;
pub mod rdm;
pub mod schema_columns;
pub mod soif;
pub mod sqlite;
pub mod value_text;
pub mod wide;

use soif_pipeline::{Error, Sink};
use std::path::PathBuf;

/// The output formats (`--to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Soif,
    Csv,
    Rdfxml,
    Sqlite,
    Rdm,
    Parquet,
    Arrow,
    Null,
}

impl Format {
    pub const ALL: [&'static str; 9] = [
        "jsonl", "csv", "rdfxml", "sqlite", "soif", "rdm", "parquet", "arrow", "null",
    ];

    pub fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "jsonl" | "json" | "ndjson" => Format::Jsonl,
            "soif" => Format::Soif,
            "csv" => Format::Csv,
            "rdfxml" | "rdf" => Format::Rdfxml,
            "sqlite" => Format::Sqlite,
            "rdm" => Format::Rdm,
            "parquet" => Format::Parquet,
            "arrow" | "arrows" | "ipc" => Format::Arrow,
            "null" => Format::Null,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Soif => "soif",
            Format::Csv => "csv",
            Format::Rdfxml => "rdfxml",
            Format::Sqlite => "sqlite",
            Format::Rdm => "rdm",
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
            Format::Null => "null",
        }
    }
}

/// How to turn values that are not UTF-8 into text where a format needs text.
pub use soif_store::text::Charset;

/// Everything a sink may need, filled from the command line or a pipeline file.
#[derive(Debug, Clone)]
pub struct SinkOptions {
    pub format: Format,
    /// A path, `-`/`None` for stdout, or (for `rdm`) a catalog URL.
    pub output: Option<String>,
    /// CSV columns (`--columns`), otherwise found by a first pass or from a schema.
    pub columns: Option<Vec<String>>,
    /// CSV list separator (`--list-separator`, default `|`).
    pub list_separator: String,
    pub charset: Charset,
    /// CSV: start with a UTF-8 byte-order mark, for Excel (`--bom`).
    pub bom: bool,
    /// RDF/XML: add qualified DCMI terms (`--dcterms`).
    pub dcterms: bool,
    /// SQLite rows per transaction, RDM records per POST (`--batch-size`); `None` for
    /// each sink's default ([`sqlite::DEFAULT_BATCH_ROWS`], [`rdm::DEFAULT_BATCH_RECORDS`]).
    pub batch_size: Option<usize>,
    /// An RDM `@SCHEMA` file: CSV columns, SQLite column types and names.
    pub schema: Option<PathBuf>,
    /// Bearer token for the `rdm` sink (`--token` or `SOIF_TOKEN`).
    pub token: Option<String>,
    /// `rdm`: gzip each POST's body (`--gzip-posts`).
    pub gzip_posts: bool,
    /// The inputs of this run, as given (recorded in SQLite's `soif_runs` and Parquet's
    /// `soif:inputs`).
    pub inputs: Vec<String>,
    /// Parquet: `--compression` (zstd by default).
    pub compression: parquet::Compression,
    /// Parquet: `--parquet-layout` (records by default, or wide).
    pub parquet_layout: parquet::Layout,
    /// Parquet wide layout: the attributes that hold several values somewhere (from the
    /// first pass), which become list columns.
    pub multi_valued: Option<std::collections::HashSet<String>>,
}

impl SinkOptions {
    pub fn new(format: Format) -> SinkOptions {
        SinkOptions {
            format,
            output: None,
            columns: None,
            list_separator: "|".to_string(),
            charset: Charset::Utf8,
            bom: false,
            dcterms: false,
            batch_size: None,
            schema: None,
            token: None,
            gzip_posts: false,
            inputs: Vec::new(),
            compression: parquet::Compression::default(),
            parquet_layout: parquet::Layout::default(),
            multi_valued: None,
        }
    }
}

/// Builds the sink for these options.
pub fn build(opts: &SinkOptions) -> Result<Box<dyn Sink>, Error> {
    match opts.format {
        Format::Jsonl => Ok(Box::new(jsonl::JsonlSink::new(
            value_text::open_output(opts.output.as_deref())?,
            opts.charset,
        ))),
        Format::Soif => Ok(Box::new(soif::SoifSink::new(value_text::open_output(
            opts.output.as_deref(),
        )?))),
        Format::Null => Ok(Box::new(null::NullSink)),
        Format::Arrow => Ok(Box::new(arrow::ArrowSink::open(opts.output.as_deref())?)),
        Format::Parquet => {
            let popts = parquet::ParquetOptions {
                compression: opts.compression,
                layout: opts.parquet_layout,
                inputs: opts.inputs.clone(),
            };
            match opts.parquet_layout {
                parquet::Layout::Records => Ok(Box::new(parquet::ParquetSink::records(
                    opts.output.as_deref(),
                    &popts,
                )?)),
                parquet::Layout::Wide => {
                    let schema = match &opts.schema {
                        Some(p) => Some(schema_columns::SchemaColumns::load(p)?),
                        None => None,
                    };
                    let names = match (&opts.columns, &schema) {
                        (Some(c), _) => c.clone(),
                        (None, Some(s)) => csv::columns_from_schema(s),
                        (None, None) => {
                            return Err(Error::Config(
                                "parquet wide layout: no columns (--columns, --schema, or a first pass over the inputs)".into(),
                            ))
                        }
                    };
                    let multi = opts.multi_valued.clone().unwrap_or_default();
                    let columns = wide::plan_columns(&names, schema.as_ref(), &multi);
                    let builder =
                        wide::WideBuilder::new(columns, opts.charset, &opts.list_separator);
                    Ok(Box::new(parquet::ParquetSink::wide(
                        opts.output.as_deref(),
                        &popts,
                        builder,
                    )?))
                }
            }
        }
        Format::Csv => {
            let columns = match (&opts.columns, &opts.schema) {
                (Some(c), _) => Some(c.clone()),
                (None, Some(path)) => Some(csv::columns_from_schema(
                    &schema_columns::SchemaColumns::load(path)?,
                )),
                (None, None) => None,
            };
            let out = value_text::open_output(opts.output.as_deref())?;
            Ok(Box::new(
                csv::CsvSink::new(out, columns, &opts.list_separator, opts.charset)
                    .with_bom(opts.bom),
            ))
        }
        Format::Rdfxml => {
            let out = value_text::open_output(opts.output.as_deref())?;
            Ok(Box::new(rdfxml::RdfXmlSink::new(
                out,
                opts.dcterms,
                opts.charset,
            )))
        }
        Format::Sqlite => {
            let path = match opts.output.as_deref() {
                None | Some("-") => {
                    return Err(Error::Config(
                        "sqlite output needs a database path (-o FILE.db)".into(),
                    ))
                }
                Some(p) => std::path::Path::new(p),
            };
            let schema = match &opts.schema {
                Some(p) => Some(schema_columns::SchemaColumns::load(p)?),
                None => None,
            };
            let store = sqlite::StoreOptions {
                schema,
                charset: opts.charset,
                ..Default::default()
            };
            Ok(Box::new(sqlite::SqliteSink::open(
                path,
                store,
                opts.batch_size.unwrap_or(sqlite::DEFAULT_BATCH_ROWS),
                &opts.inputs,
            )?))
        }
        Format::Rdm => {
            let output = opts
                .output
                .as_deref()
                .filter(|o| *o != "-")
                .ok_or_else(|| {
                    Error::Config(
                        "rdm output needs a catalog (-o x-catalog://host:port/name or an http URL)"
                            .into(),
                    )
                })?;
            Ok(Box::new(
                rdm::RdmSink::new(
                    output,
                    opts.token.clone(),
                    opts.batch_size.unwrap_or(rdm::DEFAULT_BATCH_RECORDS),
                )?
                .with_gzip(opts.gzip_posts),
            ))
        }
    }
}
