//! SOIF and RDM codecs.
//!
//! SOIF, the Summary Object Interchange Format (RFC 2655, Harvest), is a stream of objects:
//!
//! ```text
//! @FILE { http://example.com/
//! Title{7}:<TAB>Example
//! }
//! ```
//!
//! This crate decodes such streams incrementally and in bounded memory, encodes them back
//! canonically, and parses the Resource Description Messages objects (W3C NOTE-rdm-960724)
//! into typed structs. [`oai`] is OAI-PMH's part: the identifier scheme, a record as
//! `oai_dc` or `soif` metadata, and a `ListRecords` page read back into records — what
//! `soif serve`'s provider writes and the OAI-PMH source reads; [`packed`] is a compact
//! binary form of a whole record for temporary files.
//!
//! Below the engine as well: the record rules ([`rules`]: value text, dates, attribute
//! names, Dublin Core, `@SCHEMA` files) and the errors every crate above shares
//! ([`run_error`]).

pub mod generate;
pub mod oai;
pub mod packed;
pub mod rdm;
pub mod record;
pub mod rules;
pub mod run_error;
pub mod soif;

pub use record::{Action, Attribute, Position, Record, Repair, Value};
