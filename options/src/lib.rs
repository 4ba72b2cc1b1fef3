//! soif's options, defined once for every front end: the CLI's flags, pipeline files,
//! the Python package's keyword arguments and both Spark data sources' options.
//!
//! - [`ByteSize`]: every size option (`64MB` = 64,000,000 bytes, `64MiB` = 2^26; see
//!   [`size`] for the whole grammar).
//! - [`ErrorPolicy`]: what happens to a bad record (`fail`, `skip`, `quarantine`,
//!   `column`; Spark's `FAILFAST`, `DROPMALFORMED`, `PERMISSIVE`), and [`ErrorOptions`],
//!   a pipeline file's `[errors]`.
//! - [`SourceOptions`]: how records are read (format, lenient repairs, the largest
//!   record, memory mapping), a pipeline file's `[source]`.
//! - [`SparkOptions`]: a Spark read's options.
//! - [`TransformOptions`]: the `transforms` option of Python and Spark (the chain the
//!   CLI takes as `-t`).
//!
//! Typed options deserialise from a pipeline file (serde) and parse from a flat string
//! map ([`OptionMap`]: what Python and Spark hand over), so each front end reads an option
//! with the same code, and a mistake is the same [`OptionError`] everywhere.

mod error;
pub mod map;
pub mod policy;
pub mod size;
pub mod source;
pub mod spark;
pub mod transforms;

pub use error::{one_of, OptionError};
pub use map::OptionMap;
pub use policy::{ErrorOptions, ErrorPolicy};
pub use size::{ByteSize, SizeError};
pub use source::{InputFormat, SourceOptions, DEFAULT_MAX_RECORD_SIZE};
pub use spark::SparkOptions;
pub use transforms::TransformOptions;
