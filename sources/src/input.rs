//! One concrete input, as [`expand`](crate::expand) gives it.

use std::path::PathBuf;

/// One concrete input, after [`expand`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputSpec {
    Stdin,
    File(PathBuf),
    Url(String),
    /// A local copy of stdin or a URL (see [`spool`](crate::spool)), still named as the original.
    Spooled {
        path: PathBuf,
        name: String,
    },
}

impl InputSpec {
    /// The name used in messages: the path, `-` for stdin, the URL.
    pub fn name(&self) -> String {
        match self {
            InputSpec::Stdin => "-".to_string(),
            InputSpec::File(p) => p.display().to_string(),
            InputSpec::Url(u) => u.clone(),
            InputSpec::Spooled { name, .. } => name.clone(),
        }
    }

    /// True when the input can be read a second time (a CSV first pass).
    pub fn is_rereadable(&self) -> bool {
        matches!(self, InputSpec::File(_) | InputSpec::Spooled { .. })
    }
}
