//! The engine's error type. It is defined at the bottom of the crate graph
//! ([`soif_codecs::run_error`]), so that the catalog store, which does not depend on the
//! engine, returns the same errors.

pub use soif_codecs::run_error::{error_chain, Error};
