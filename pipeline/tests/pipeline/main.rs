//! The engine's integration tests, one binary (`cargo test -p soif-pipeline --test
//! pipeline`): one module per topic. A new topic is a new file here and a `mod` line
//! below.

mod engine_order_streaming;
mod transforms_collapse;
mod transforms_dc;
mod transforms_filters;
mod transforms_validate;
mod transforms_view;
