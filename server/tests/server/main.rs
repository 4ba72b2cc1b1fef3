//! The server's integration tests, one binary (`cargo test -p soif-server --test server`):
//! one module per topic, `common` their shared helpers. A new topic is a new file here
//! and a `mod` line below.

mod common;
mod discovery;
mod facets;
mod hostile;
mod oai;
mod rdm_types;
mod refusals;
mod web;
