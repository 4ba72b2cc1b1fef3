//! RDM (W3C NOTE-rdm-960724, *Resource Description Messages*) objects as typed structs.
//!
//! An RDM message is a SOIF stream: an `@RDMHEADER`, then a body whose content depends on
//! the header's RDM-Type. This module reads each RDM object from a decoded
//! [`Record`](crate::Record) and writes it back:
//!
//! | object            | struct                  | module       |
//! |-------------------|-------------------------|--------------|
//! | `@RDMHEADER`      | [`RdmHeader`] ([`RdmType`], [`QueryLanguage`]) | [`header`] |
//! | `@RDMQUERY`       | [`RdmQuery`] ([`View`], [`GathererScope`], [`SchemaScope`]) | [`query`] |
//! | `@RDMSERVER`      | [`ServerDescription`]   | [`server`]   |
//! | `@SCHEMA`         | [`Schema`], [`SchemaEntry`], [`DataType`] | [`schema`] |
//! | `@TAXONOMY`, `@CLASSIFICATION` | [`TaxonomyInfo`], [`Classification`], [`Taxonomy`], [`TaxonomyScope`] | [`taxonomy`] |
//!
//! plus [`Csid`] (`x-catalog://host:port/name`), [`RdmDate`] (HTTP/1.0 dates) and
//! [`MessageReader`], which checks a whole message record by record without buffering it,
//! and [`request_from_form`] for the note's GET form parameters.
//!
//! Every struct has `from_record(&Record) -> Result<Self, RdmError>` and
//! `to_record(&self) -> Record`; `from_record(&x.to_record()) == Ok(x)`. Attribute names
//! are matched ignoring ASCII case; attributes the note does not define are kept in an
//! `extra` list so nothing is dropped. Keywords, numbers, dates and ids must be UTF-8;
//! free text (descriptions, error messages) is decoded lossily. Values are read with their
//! surrounding whitespace trimmed (lenient decoding of one-line examples leaves some).
//!
//! ```
//! use soif_codecs::rdm::{GathererScope, MessageItem, MessageReader};
//! use soif_codecs::Record;
//! let mut msg = MessageReader::new();
//! msg.push(
//!     Record::new("RDMHEADER", "-")
//!         .with("RDM-Version", "1.0")
//!         .with("RDM-Type", "rd-request")
//!         .with("RDM-Query-Language", "gatherer"),
//! )
//! .unwrap();
//! let query = match msg.push(Record::new("RDMQUERY", "-").with("Scope", "all")).unwrap() {
//!     MessageItem::Query(q) => q,
//!     other => panic!("{other:?}"),
//! };
//! assert_eq!(query.gatherer_scope().unwrap(), Some(GathererScope::All));
//! ```

pub mod csid;
pub mod date;
pub mod error;
mod fields;
pub mod form;
pub mod header;
pub mod message;
pub mod query;
pub mod schema;
pub mod server;
pub mod taxonomy;

pub use csid::Csid;
pub use date::{DateError, RdmDate};
pub use error::RdmError;
pub use form::{request_from_form, request_to_form};
pub use header::{BodyKind, QueryLanguage, RdmHeader, RdmType};
pub use message::{read_header, MessageItem, MessageReader};
pub use query::{
    Direction, GathererScope, OrderKey, RdmQuery, SchemaScope, View, ViewAttributes, ViewHits,
    ViewOrder,
};
pub use schema::{DataType, Schema, SchemaEntry};
pub use server::ServerDescription;
pub use taxonomy::{Classification, Taxonomy, TaxonomyInfo, TaxonomyNode, TaxonomyScope};

#[cfg(test)]
mod props;
