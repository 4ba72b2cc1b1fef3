//! `soif-reader`: the reading loop behind soif's Python package (`soif.read`,
//! `soif.records`) and both of its Spark data sources (the Python one through that
//! package, the JVM one through `spark/native`).
//!
//! ```text
//! Source (paths, a byte range, bytes)        read::path_source, input::BytesInput
//!    └─ Core: decoder → error policy          read::Core, soif_options::ErrorPolicy
//!         └─ chunks (rows, or objects in place) → Batches → Arrow RecordBatch
//!                                              batches::Batches, batches::Extras
//! ```
//!
//! - [`read`]: the loop itself, pulled one batch at a time on the caller's thread, with
//!   its counts ([`Counts`]) and why it stopped ([`Failure`]);
//! - [`batches`]: the record batches of the loop in the Arrow layout of `soif-arrow`
//!   (with the `_corrupt_record` and `_source` columns when asked for), built on worker
//!   threads;
//! - [`chain`]: the transform chain of a read (`transforms`), and the form a Spark
//!   driver ships it in;
//! - [`input`]: bytes held in memory as an input;
//! - [`options`]: the options of a read as the front ends hand them over (a flat map of
//!   strings), parsed by `soif-options`.
//!
//! It holds no Python or Java types: the front ends wrap it (`python/src/lib.rs`,
//! `spark/native/src/lib.rs`).

pub mod batches;
pub mod chain;
pub mod input;
pub mod options;
pub mod read;

pub use batches::{Batches, Extras, BATCH_BYTES};
pub use input::BytesInput;
pub use options::{ReadOptions, DEFAULT_BATCH_SIZE};
pub use read::{path_source, Core, Corrupt, Counts, Failure, Row, MAX_ERRORS};
