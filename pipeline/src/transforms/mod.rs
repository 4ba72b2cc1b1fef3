//! The transforms, one module each, built from `-t NAME[:ARGS]` specs.
