//! The output formats, by the names `--to` and a pipeline file's `format` give them.

/// The output formats (`--to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Soif,
    Csv,
    Rdfxml,
    Ntriples,
    Turtle,
    Jsonld,
    Sqlite,
    Rdm,
    Sparql,
    Parquet,
    Arrow,
    Null,
}

impl Format {
    pub const ALL: [&'static str; 13] = [
        "jsonl", "csv", "rdfxml", "ntriples", "turtle", "jsonld", "sqlite", "soif", "rdm",
        "sparql", "parquet", "arrow", "null",
    ];

    pub fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "jsonl" | "json" | "ndjson" => Format::Jsonl,
            "soif" => Format::Soif,
            "csv" => Format::Csv,
            "rdfxml" | "rdf" => Format::Rdfxml,
            "ntriples" | "nt" => Format::Ntriples,
            "turtle" | "ttl" => Format::Turtle,
            "jsonld" | "json-ld" => Format::Jsonld,
            "sqlite" => Format::Sqlite,
            "rdm" => Format::Rdm,
            "sparql" => Format::Sparql,
            "parquet" => Format::Parquet,
            "arrow" | "arrows" | "ipc" => Format::Arrow,
            "null" => Format::Null,
            _ => return None,
        })
    }

    /// What the format writes, for help texts (`None` for `null`, which writes nothing).
    pub fn title(self) -> Option<&'static str> {
        Some(match self {
            Format::Jsonl => "JSON Lines",
            Format::Soif => "canonical SOIF",
            Format::Csv => "CSV",
            Format::Rdfxml => "RDF/XML",
            Format::Ntriples => "N-Triples",
            Format::Turtle => "Turtle",
            Format::Jsonld => "JSON-LD",
            Format::Sqlite => "SQLite",
            Format::Rdm => "RDM messages to a catalog server",
            Format::Sparql => "SPARQL Update requests to a triple store",
            Format::Parquet => "Parquet",
            Format::Arrow => "Arrow IPC streams",
            Format::Null => return None,
        })
    }

    /// The RDF serialisation of an RDF format.
    pub fn rdf_syntax(self) -> Option<crate::rdf::Syntax> {
        use crate::rdf::Syntax;
        Some(match self {
            Format::Rdfxml => Syntax::RdfXml,
            Format::Ntriples => Syntax::NTriples,
            Format::Turtle => Syntax::Turtle,
            Format::Jsonld => Syntax::JsonLd,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Soif => "soif",
            Format::Csv => "csv",
            Format::Rdfxml => "rdfxml",
            Format::Ntriples => "ntriples",
            Format::Turtle => "turtle",
            Format::Jsonld => "jsonld",
            Format::Sqlite => "sqlite",
            Format::Rdm => "rdm",
            Format::Sparql => "sparql",
            Format::Parquet => "parquet",
            Format::Arrow => "arrow",
            Format::Null => "null",
        }
    }
}
