//! soif sinks: where records go. One module per format.
//!
//! | format   | module      | writes |
//! |----------|-------------|--------|
//! | `jsonl`  | [`jsonl`]   | one JSON object per record |
//! | `soif`   | [`soif`]    | canonical SOIF |
//! | `csv`    | [`csv`]     | RFC 4180 CSV |
//! | `ntriples`, `turtle`, `jsonld`, `rdfxml` | [`rdf`] | RDF: Dublin Core terms and the whole record as triples |
//! | `sqlite` | [`sqlite`]  | a table per template |
//! | `rdm`    | [`rdm`]     | RDM `rd-response` POSTs to a catalog server |
//! | `sparql` | [`sparql`]  | SPARQL 1.1 Update POSTs, a named graph per record |
//! | `parquet`| [`parquet`] | a Parquet file in soif's Arrow layout, or a column per attribute ([`wide`]) |
//! | `arrow`  | [`arrow`]   | an Arrow IPC stream in soif's Arrow layout |
//! | `null`   | [`null`]    | nothing (parse and count) |
//!
//! Every sink option is defined once, in [`options`] ([`SinkOptions`]: the flags of
//! `soif convert` and the keys of a pipeline file's `[[sink]]`, with the formats that
//! take each). Each module has its sink's typed `Config`, made from those options;
//! [`SinkConfig`] is one of them, tagged by the format, deserialised from a `[[sink]]`
//! or made from the command line's [`SinkArgs`] (see [`config`]). [`build`] turns it
//! into a boxed [`Sink`].

pub mod arrow;
pub mod config;
pub mod csv;
mod format;
pub mod http;
pub mod jsonl;
pub mod null;
pub mod options;
pub mod output;
pub mod parquet;
pub mod rdf;
pub mod rdm;
pub mod soif;
pub mod sparql;
pub mod sqlite;
pub mod wide;

pub use config::{FirstPass, RunContext, SinkArgs, SinkConfig};
pub use format::Format;
pub use options::{Front, SinkOption, SinkOptions, OPTIONS};
use soif_pipeline::{Error, Sink};
use soif_store::SchemaColumns;

/// How to turn values that are not UTF-8 into text where a format needs text.
pub use soif_codecs::rules::text::Charset;

/// Builds the sink a configuration describes.
pub fn build(config: &SinkConfig, run: &RunContext) -> Result<Box<dyn Sink>, Error> {
    match config {
        SinkConfig::Jsonl(c) => Ok(Box::new(jsonl::JsonlSink::new(
            output::open_output(c.output.as_deref())?,
            c.charset,
        ))),
        SinkConfig::Soif(c) => Ok(Box::new(soif::SoifSink::new(output::open_output(
            c.output.as_deref(),
        )?))),
        SinkConfig::Null(_) => Ok(Box::new(null::NullSink)),
        SinkConfig::Arrow(c) => Ok(Box::new(arrow::ArrowSink::open(c.output.as_deref())?)),
        SinkConfig::Parquet(c) => {
            let popts = parquet::ParquetOptions {
                compression: c.compression,
                layout: c.parquet_layout,
                inputs: run.inputs.clone(),
            };
            match c.parquet_layout {
                parquet::Layout::Records => Ok(Box::new(parquet::ParquetSink::records(
                    c.output.as_deref(),
                    &popts,
                )?)),
                parquet::Layout::Wide => {
                    let schema = match &c.schema {
                        Some(p) => Some(SchemaColumns::load(p)?),
                        None => None,
                    };
                    let names = match (&c.columns, &schema) {
                        (Some(c), _) => c.clone(),
                        (None, Some(s)) => csv::columns_from_schema(s),
                        (None, None) => {
                            return Err(Error::Config(
                                "parquet wide layout: no columns (--columns, --schema, or a first pass over the inputs)".into(),
                            ))
                        }
                    };
                    let multi = run.multi_valued.clone().unwrap_or_default();
                    let columns = wide::plan_columns(&names, schema.as_ref(), &multi);
                    let builder = wide::WideBuilder::new(columns, c.charset, &c.list_separator);
                    Ok(Box::new(parquet::ParquetSink::wide(
                        c.output.as_deref(),
                        &popts,
                        builder,
                    )?))
                }
            }
        }
        SinkConfig::Csv(c) => {
            let columns = match (&c.columns, &c.schema) {
                (Some(c), _) => Some(c.clone()),
                (None, Some(path)) => Some(csv::columns_from_schema(&SchemaColumns::load(path)?)),
                (None, None) => None,
            };
            let out = output::open_output(c.output.as_deref())?;
            Ok(Box::new(
                csv::CsvSink::new(out, columns, &c.list_separator, c.charset).with_bom(c.bom),
            ))
        }
        SinkConfig::Rdfxml(c)
        | SinkConfig::Ntriples(c)
        | SinkConfig::Turtle(c)
        | SinkConfig::Jsonld(c) => {
            let out = output::open_output(c.output.as_deref())?;
            let syntax = config
                .format()
                .rdf_syntax()
                .unwrap_or_else(|| unreachable!("an RDF format"));
            Ok(Box::new(rdf::RdfSink::new(out, syntax)))
        }
        SinkConfig::Sqlite(c) => {
            let path = match c.output.as_deref() {
                None | Some("-") => {
                    return Err(Error::Config(
                        "sqlite output needs a database path (-o FILE.db)".into(),
                    ))
                }
                Some(p) => std::path::Path::new(p),
            };
            let schema = match &c.schema {
                Some(p) => Some(SchemaColumns::load(p)?),
                None => None,
            };
            let store = soif_store::StoreOptions {
                schema,
                charset: c.charset,
                ..Default::default()
            };
            Ok(Box::new(sqlite::SqliteSink::open(
                path,
                store,
                c.batch_size
                    .map_or(soif_store::DEFAULT_BATCH_ROWS, |b| b.max(1)),
                &run.inputs,
            )?))
        }
        SinkConfig::Rdm(c) => {
            let output = c.output.as_deref().filter(|o| *o != "-").ok_or_else(|| {
                Error::Config(
                    "rdm output needs a catalog (-o x-catalog://host:port/name or an http URL)"
                        .into(),
                )
            })?;
            Ok(Box::new(
                rdm::RdmSink::new(
                    output,
                    c.token.clone(),
                    c.batch_size
                        .map_or(rdm::DEFAULT_BATCH_RECORDS, |b| b.max(1)),
                )?
                .with_gzip(c.gzip_posts),
            ))
        }
        SinkConfig::Sparql(c) => {
            let output = c.output.as_deref().filter(|o| *o != "-").ok_or_else(|| {
                Error::Config(
                    "sparql output needs a SPARQL Update endpoint (-o http://host:port/update)"
                        .into(),
                )
            })?;
            let default = match c.graph_store {
                Some(_) => sparql::DEFAULT_LOAD_RECORDS,
                None => sparql::DEFAULT_BATCH_RECORDS,
            };
            let batch = c.batch_size.map_or(default, |b| b.max(1));
            let sink = sparql::SparqlSink::new(output, c.token.clone(), batch)?;
            Ok(Box::new(match &c.graph_store {
                Some(url) => sink.with_graph_store(url)?,
                None => sink,
            }))
        }
    }
}
