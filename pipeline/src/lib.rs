//! The soif engine: source → SOIF decoder → transforms → sinks.
//!
//! This crate holds the traits every part implements ([`Transform`], [`Sink`]), the
//! transforms themselves (one module each under [`transforms`]) and the engine that joins
//! the stages with bounded channels.

pub mod checkpoint;
pub mod engine;
pub mod quarantine;
pub mod retry;
pub mod sink;
pub mod source;
pub mod transform;
pub mod transforms;

pub use checkpoint::{Checkpoint, Checkpoints};
pub use engine::{Engine, EngineOptions, InputCounts, Observer, Summary};
pub use sink::{Refused, Sink, SinkError};
/// The engine's error, defined at the bottom of the crate graph
/// ([`soif_codecs::run_error`]) so that the catalog store, which does not depend on the
/// engine, returns the same errors.
pub use soif_codecs::run_error::Error;
pub use source::{Input, InputData, Rejection, Source};
pub use transform::{finish_chain, Chain, Collect, Emit, FirstNoted, Transform};
