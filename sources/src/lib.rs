//! soif sources
