//! The sinks' integration tests, one binary (`cargo test -p soif-sinks --test sinks`): one
//! module per format, `common` their shared helpers. A new topic is a new file here and a
//! `mod` line below.

mod common;
mod csv;
mod rdf;
mod sparql;
mod sqlite;
