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

/// A bad option (unknown, malformed, at odds with another) is a configuration error.
impl From<soif_options::OptionError> for Error {
    fn from(e: soif_options::OptionError) -> Error {
        Error::Config(e.to_string())
    }
}

/// An error and its causes on one line, `outer: inner: innermost` (reqwest's and hyper's
/// top-level messages alone say little, e.g. "error sending request").
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(inner) = cur {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        cur = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_lists_every_cause() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("error sending request")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = Outer(std::io::Error::other("connection refused"));
        assert_eq!(error_chain(&e), "error sending request: connection refused");
    }
}
