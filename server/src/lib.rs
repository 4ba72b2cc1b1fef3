//! soif server
