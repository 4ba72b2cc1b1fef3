//! The `soif` command's integration tests, one binary (`cargo test --test cli`): one
//! module per topic, `common` their shared helpers (running the built `soif`, fixtures,
//! small servers). A new topic is a new file here and a `mod` line below.

mod arrow;
mod cli_transforms;
mod cli_validate;
mod common;
mod convert;
mod csv;
mod errors;
mod hostile_input;
mod http_source;
mod mmap;
mod oai_source;
mod parquet;
mod pipeline_tests;
mod rdf;
mod rdm_http_input;
mod rdm_loop;
mod remap;
mod run;
mod split;
mod sqlite;
mod state;
mod stats;
mod verify;
mod view_transforms;
