//! The state store's error type.

use std::path::PathBuf;

/// Why the state store could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Another run holds the state's lock (`soif` exits with
    /// [`crate::EXIT_ALREADY_RUNNING`]).
    #[error("{}: another soif run is using this state ({holder}); not waiting for it", path.display())]
    AlreadyRunning { path: PathBuf, holder: String },
    /// The file exists but is not a soif state store.
    #[error("{}: not a soif state store ({reason})", path.display())]
    NotAState { path: PathBuf, reason: String },
    /// A state written by a newer soif.
    #[error("{}: state layout version {found} is newer than this soif understands (up to {supported})", path.display())]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    /// SQLite refused something.
    #[error("{}: {context}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        context: String,
        #[source]
        source: rusqlite::Error,
    },
    /// A file operation failed (reading an input, renaming an output).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A request that makes no sense (forgetting what was never taken, a bad name).
    #[error("{0}")]
    Invalid(String),
}

impl StateError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> StateError {
        StateError::Io {
            context: context.into(),
            source,
        }
    }

    /// True for [`StateError::AlreadyRunning`].
    pub fn is_already_running(&self) -> bool {
        matches!(self, StateError::AlreadyRunning { .. })
    }
}

impl From<StateError> for soif_pipeline::Error {
    fn from(e: StateError) -> soif_pipeline::Error {
        match e {
            StateError::Io { context, source } => soif_pipeline::Error::io(context, source),
            StateError::Invalid(m) => soif_pipeline::Error::Config(m),
            other => soif_pipeline::Error::Fatal(other.to_string()),
        }
    }
}
