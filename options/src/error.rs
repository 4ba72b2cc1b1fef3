//! The one error of a bad option, the same in every front end.
//!
//! Each front end gives the option as its user wrote it (`--max-record-sise` on the
//! command line, `max_record_sise` in a pipeline file or a Python call, `maxRecordSise`
//! in Spark) and adds where it was (the CLI its usage line, a pipeline file its file,
//! line and table); the words are these:
//!
//! ```text
//! unknown option `maxRecordSise` (did you mean `maxRecordSize`?)
//! unknown option `colour` (known: mode, columnNameOfCorruptRecord, format, …)
//! option max_record_size=`64XB`: expected a size in bytes (e.g. 1048576, 512KiB, 64MB, 1GiB)
//! option on_error=`explode`: expected fail, skip or quarantine
//! ```

use std::fmt;

/// An option that is unknown, malformed, given twice or at odds with another. The text
/// names the option as it was given and the bad value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// An option no parser took; `known` are the options that exist, spelled as the front
    /// end spells them. The message suggests the one meant when one is close enough,
    /// else lists them.
    #[error("unknown option `{name}` ({})", UnknownHint { name, known })]
    Unknown { name: String, known: Vec<String> },
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

    pub fn unknown<S: Into<String>>(
        name: impl Into<String>,
        known: impl IntoIterator<Item = S>,
    ) -> OptionError {
        OptionError::Unknown {
            name: name.into(),
            known: known.into_iter().map(Into::into).collect(),
        }
    }

    /// The known option `name` most likely meant, if one is close enough: names are
    /// compared without case, `_` and `-` (as [`OptionMap`](crate::OptionMap) matches
    /// them), by Jaro similarity, as clap suggests flags.
    pub fn suggestion<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
        let name = normalise(name);
        known
            .iter()
            .map(|k| (strsim::jaro(&name, &normalise(k)), k))
            .filter(|(score, _)| *score > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, k)| k.as_str())
    }

    /// The option error that a serde deserialiser's `message` describes, for the option
    /// `key` whose value was written `value` (a pipeline file's key and value): serde's
    /// `unknown field` becomes [`Unknown`](Self::Unknown), `invalid type` / `invalid
    /// value` / `unknown variant` become [`Invalid`](Self::Invalid) with what was
    /// expected; any other message is kept as it is.
    pub fn from_serde(key: &str, value: &str, message: &str) -> OptionError {
        if let Some(rest) = message.strip_prefix("unknown field `") {
            if let Some((name, known)) = rest.split_once('`') {
                return OptionError::unknown(name, backticked(known));
            }
        }
        if let Some(rest) = message.strip_prefix("unknown variant `") {
            if let Some((_, known)) = rest.split_once('`') {
                let names = backticked(known);
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                return OptionError::invalid(key, value, one_of(&names));
            }
        }
        for prefix in ["invalid type: ", "invalid value: ", "invalid length "] {
            if let Some(rest) = message.strip_prefix(prefix) {
                if let Some((_, expected)) = rest.split_once(", expected ") {
                    // As OptionMap says it for Python and Spark.
                    let expected = match expected {
                        "a boolean" => "true or false",
                        other => other,
                    };
                    return OptionError::invalid(key, value, expected);
                }
            }
        }
        OptionError::Other(message.to_string())
    }
}

/// `(did you mean `x`?)` or `(known: a, b, c)`.
struct UnknownHint<'a> {
    name: &'a str,
    known: &'a [String],
}

impl fmt::Display for UnknownHint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match OptionError::suggestion(self.name, self.known) {
            Some(s) => write!(f, "did you mean `{s}`?"),
            None if self.known.is_empty() => f.write_str("there are none"),
            None => write!(f, "known: {}", self.known.join(", ")),
        }
    }
}

/// The names between backticks in `text` (serde's lists of fields and variants).
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// A name as options are matched: lowercase, without `_` and `-`.
pub(crate) fn normalise(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// `a, b or c`: the values an option takes, as every error message lists them.
pub fn one_of(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// A bad option (unknown, malformed, at odds with another) is a configuration error of
/// the run (exit status 2).
impl From<OptionError> for soif_codecs::run_error::Error {
    fn from(e: OptionError) -> Self {
        Self::Config(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_unknown_option_suggests_the_one_meant() {
        let k = known(&["lenient", "max_record_size", "mmap"]);
        for (given, meant) in [
            ("max_record_sise", "max_record_size"),
            ("maxrecordsize_", "max_record_size"),
            ("--max-record-sise", "max_record_size"),
            ("lenent", "lenient"),
        ] {
            assert_eq!(OptionError::suggestion(given, &k), Some(meant), "{given}");
        }
        assert_eq!(
            OptionError::unknown("max_record_sise", k.clone()).to_string(),
            "unknown option `max_record_sise` (did you mean `max_record_size`?)"
        );
        assert_eq!(
            OptionError::unknown("colour", k).to_string(),
            "unknown option `colour` (known: lenient, max_record_size, mmap)"
        );
        assert_eq!(
            OptionError::unknown("x", Vec::<String>::new()).to_string(),
            "unknown option `x` (there are none)"
        );
    }

    #[test]
    fn serde_messages_become_option_errors() {
        let e = OptionError::from_serde(
            "max_record_sise",
            "1",
            "unknown field `max_record_sise`, expected one of `inputs`, `max_record_size`",
        );
        assert_eq!(
            e,
            OptionError::unknown("max_record_sise", ["inputs", "max_record_size"])
        );
        let e = OptionError::from_serde("bom", "true", "unknown field `bom`, there are no fields");
        assert_eq!(e, OptionError::unknown("bom", Vec::<String>::new()));
        let e = OptionError::from_serde(
            "lenient",
            "yes",
            "invalid type: string \"yes\", expected a boolean",
        );
        assert_eq!(
            e.to_string(),
            "option lenient=`yes`: expected true or false"
        );
        let e = OptionError::from_serde(
            "max_record_size",
            "64XB",
            "invalid value: string \"64XB\", expected a size in bytes (e.g. 1048576, 512KiB, 64MB, 1GiB)",
        );
        assert_eq!(
            e.to_string(),
            "option max_record_size=`64XB`: expected a size in bytes (e.g. 1048576, 512KiB, 64MB, 1GiB)"
        );
        let e = OptionError::from_serde(
            "mode",
            "x",
            "unknown variant `x`, expected one of `a`, `b`, `c`",
        );
        assert_eq!(e.to_string(), "option mode=`x`: expected a, b or c");
        let e = OptionError::from_serde("format", "", "missing field `format`");
        assert_eq!(e.to_string(), "missing field `format`");
    }

    #[test]
    fn lists() {
        assert_eq!(one_of(&["a"]), "a");
        assert_eq!(one_of(&["a", "b"]), "a or b");
        assert_eq!(one_of(&["a", "b", "c"]), "a, b or c");
    }
}
