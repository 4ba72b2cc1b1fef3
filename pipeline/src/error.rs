//! The engine's error type.

use std::path::PathBuf;

/// An error that ends a run (as opposed to a rejected record, which the `--on-error`
/// policy handles).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A bad option, transform argument, pipeline file or schema (exit status 2).
    #[error("{0}")]
    Config(String),
    /// A record was rejected under `--on-error fail`.
    #[error("{0}")]
    Rejected(String),
    /// Anything else that stops the run (exit status 1).
    #[error("{0}")]
    Fatal(String),
}

impl Error {
    /// An I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// An I/O error on a path.
    pub fn io_path(path: &std::path::Path, source: std::io::Error) -> Error {
        Error::io(PathBuf::from(path).display().to_string(), source)
    }

    /// True when this is a usage or configuration error (exit status 2).
    pub fn is_config(&self) -> bool {
        matches!(self, Error::Config(_))
    }
}
