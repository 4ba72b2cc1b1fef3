//! RDF: the mapping of a record to triples ([`mapping`]), which every RDF sink writes.

pub mod mapping;
