//! The soif engine: source → SOIF decoder → transforms → sinks.
//!
//! This crate holds the traits every part implements ([`Transform`], [`Sink`]), the
//! transforms themselves (one module each under [`transforms`]) and the engine that joins
//! the stages with bounded channels.

pub mod checkpoint;
pub mod engine;
pub mod error;
pub mod quarantine;
pub mod retry;
pub mod sink;
pub mod source;
pub mod transform;
pub mod transforms;

pub use checkpoint::{Checkpoint, Checkpoints};
pub use engine::{Engine, EngineOptions, ErrorPolicy, InputCounts, Observer, Summary};
pub use error::Error;
pub use sink::{Sink, SinkError};
pub use source::{Input, InputData, Rejection, Source};
pub use transform::{Chain, Collect, Emit, Transform};
