//! What the csv and sqlite sinks take from an RDM `@SCHEMA` description: the catalog
//! store's schema mapping ([`soif_store::schema`]), kept under this name.

pub use soif_store::schema::*;
