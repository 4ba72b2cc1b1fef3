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
//! into typed structs. [`oai_ids`] is the OAI-PMH identifier scheme of `soif serve`'s
//! provider, which its OAI-PMH source reads back; [`packed`] is a compact binary form of a
//! whole record for temporary files.

pub mod generate;
pub mod oai_ids;
pub mod packed;
pub mod rdm;
pub mod record;
pub mod soif;

pub use record::{Action, Attribute, Position, Record, Repair, Value};
