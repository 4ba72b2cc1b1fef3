//! The one error of a bad option, the same in every front end.

/// An option that is unknown, malformed, given twice or at odds with another. The text
/// names the option as it was given and the bad value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("unknown option `{name}` (known: {known})")]
    Unknown { name: String, known: String },
    #[error("option {name}=`{value}`: expected {expected}")]
    Invalid {
        name: String,
        value: String,
        expected: String,
    },
    #[error("option `{second}` is given twice (also as `{first}`)")]
    Duplicate { first: String, second: String },
    /// Options that do not go together.
    #[error("{0}")]
    Other(String),
}

impl OptionError {
    pub fn invalid(
        name: impl Into<String>,
        value: impl Into<String>,
        expected: impl Into<String>,
    ) -> OptionError {
        OptionError::Invalid {
            name: name.into(),
            value: value.into(),
            expected: expected.into(),
        }
    }
}

/// A bad option (unknown, malformed, at odds with another) is a configuration error of
/// the run (exit status 2).
impl From<OptionError> for soif_codecs::run_error::Error {
    fn from(e: OptionError) -> Self {
        Self::Config(e.to_string())
    }
}
