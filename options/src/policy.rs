//! [`ErrorPolicy`]: what happens to a record that cannot be read or converted.
//!
//! | policy | CLI `--on-error`, pipeline `on_error` | Python `on_error=` | Spark `mode` |
//! |--------|------------------------|--------------------|--------------|
//! | stop at the first bad record | `fail` (default) | `"fail"` (default) | `FAILFAST` |
//! | count and report it, go on | `skip` | `"skip"` | `DROPMALFORMED` |
//! | as `skip`, and append its bytes to a file | `quarantine` + `--quarantine FILE` | `"quarantine"` + `quarantine=PATH` | — |
//! | a row of its own in a corrupt-record column | — | `"column"` | `PERMISSIVE` (default) |
//!
//! The engine (CLI and pipeline files) writes records to sinks, which have no
//! corrupt-record column: it refuses [`ErrorPolicy::Column`].

use crate::error::one_of;
use crate::OptionError;
use std::path::PathBuf;

/// What happens to a record that cannot be read or converted (see the
/// [module documentation](self) for its names in each front end).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ErrorPolicy {
    /// Stop at the first bad record (the CLI exits with status 1).
    #[default]
    Fail,
    /// Count it, report it, go on (the CLI exits with status 3 at the end).
    Skip,
    /// As `Skip`, and append its original bytes to this file.
    Quarantine(PathBuf),
    /// A bad record becomes a row of its own, in a corrupt-record column (the Python
    /// reader's `on_error="column"`, Spark's `PERMISSIVE` mode).
    Column,
}

impl ErrorPolicy {
    /// The `on_error` names, in the order help texts list them.
    pub const NAMES: [&'static str; 4] = ["fail", "skip", "quarantine", "column"];
    /// The names the engine (CLI, pipeline files) accepts.
    pub const ENGINE_NAMES: [&'static str; 3] = ["fail", "skip", "quarantine"];
    /// Spark's `mode` names, in the order its documentation lists them.
    pub const SPARK_MODES: [&'static str; 3] = ["PERMISSIVE", "DROPMALFORMED", "FAILFAST"];

    /// The policy from an `on_error` name and a quarantine file: the file goes with
    /// `quarantine` and only with it; no name means `quarantine` when a file is given,
    /// else `fail`. Errors name the option as `on_error` / `quarantine`; front ends with
    /// other spellings use [`ErrorPolicy::from_options`].
    pub fn from_name(
        on_error: Option<&str>,
        quarantine: Option<PathBuf>,
    ) -> Result<ErrorPolicy, OptionError> {
        ErrorPolicy::from_options(("on_error", on_error), ("quarantine", quarantine))
    }

    /// As [`from_name`](Self::from_name), with each option's name as the front end
    /// spells it (`--on-error`, `on_error`) for the error messages.
    pub fn from_options(
        on_error: (&str, Option<&str>),
        quarantine: (&str, Option<PathBuf>),
    ) -> Result<ErrorPolicy, OptionError> {
        ErrorPolicy::from_names_in(&ErrorPolicy::NAMES, on_error, quarantine)
    }

    /// As [`from_options`](Self::from_options), for the engine (the CLI, pipeline files),
    /// which takes only [`ENGINE_NAMES`](Self::ENGINE_NAMES).
    pub fn engine_from_options(
        on_error: (&str, Option<&str>),
        quarantine: (&str, Option<PathBuf>),
    ) -> Result<ErrorPolicy, OptionError> {
        ErrorPolicy::from_names_in(&ErrorPolicy::ENGINE_NAMES, on_error, quarantine)
    }

    fn from_names_in(
        names: &[&str],
        (on_error_key, on_error): (&str, Option<&str>),
        (quarantine_key, quarantine): (&str, Option<PathBuf>),
    ) -> Result<ErrorPolicy, OptionError> {
        let name = on_error.map(str::trim);
        if let Some(n) = name.filter(|n| !names.contains(n)) {
            return Err(OptionError::invalid(on_error_key, n, one_of(names)));
        }
        match (name, quarantine) {
            (None | Some("quarantine"), Some(p)) => Ok(ErrorPolicy::Quarantine(p)),
            (None | Some("fail"), None) => Ok(ErrorPolicy::Fail),
            (Some("skip"), None) => Ok(ErrorPolicy::Skip),
            (Some("column"), None) => Ok(ErrorPolicy::Column),
            // `quarantine`, the one name left.
            (Some(_), None) => Err(OptionError::Other(format!(
                "{} needs {}",
                setting(on_error_key, "quarantine"),
                setting(quarantine_key, "FILE")
            ))),
            (Some(n), Some(_)) => Err(OptionError::Other(format!(
                "{} goes with {}, not {}",
                setting(quarantine_key, "FILE"),
                setting(on_error_key, "quarantine"),
                setting(on_error_key, n)
            ))),
        }
    }

    /// The policy from Spark's `mode` (case-insensitive): `PERMISSIVE` is
    /// [`Column`](Self::Column), `DROPMALFORMED` [`Skip`](Self::Skip), `FAILFAST`
    /// [`Fail`](Self::Fail).
    pub fn from_spark_mode(mode: &str) -> Result<ErrorPolicy, OptionError> {
        match mode.trim().to_ascii_uppercase().as_str() {
            "PERMISSIVE" => Ok(ErrorPolicy::Column),
            "DROPMALFORMED" => Ok(ErrorPolicy::Skip),
            "FAILFAST" => Ok(ErrorPolicy::Fail),
            _ => Err(OptionError::invalid(
                "mode",
                mode,
                one_of(&ErrorPolicy::SPARK_MODES),
            )),
        }
    }

    /// The policy's `on_error` name.
    pub fn name(&self) -> &'static str {
        match self {
            ErrorPolicy::Fail => "fail",
            ErrorPolicy::Skip => "skip",
            ErrorPolicy::Quarantine(_) => "quarantine",
            ErrorPolicy::Column => "column",
        }
    }

    /// The policy's Spark `mode`, when Spark has one.
    pub fn spark_mode(&self) -> Option<&'static str> {
        match self {
            ErrorPolicy::Fail => Some("FAILFAST"),
            ErrorPolicy::Skip => Some("DROPMALFORMED"),
            ErrorPolicy::Column => Some("PERMISSIVE"),
            ErrorPolicy::Quarantine(_) => None,
        }
    }
}

/// `key=value`, or `--flag value` for a command-line flag.
fn setting(key: &str, value: &str) -> String {
    if key.starts_with("--") {
        format!("{key} {value}")
    } else {
        format!("{key}={value}")
    }
}

/// The `[errors]` table of a pipeline file (`on_error`, `quarantine`), which the CLI's
/// `--on-error` and `--quarantine` mirror.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorOptions {
    /// `fail`, `skip` or `quarantine` (default `fail`, or `quarantine` when a
    /// quarantine file is given).
    pub on_error: Option<String>,
    /// The file that receives the original bytes of every rejected record.
    pub quarantine: Option<PathBuf>,
}

impl ErrorOptions {
    /// The policy these options name (see [`ErrorPolicy::from_name`]; the engine's
    /// names only).
    pub fn policy(&self) -> Result<ErrorPolicy, OptionError> {
        ErrorPolicy::engine_from_options(
            ("on_error", self.on_error.as_deref()),
            ("quarantine", self.quarantine.clone()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let q = || Some(PathBuf::from("bad.soif"));
        assert_eq!(ErrorPolicy::from_name(None, None), Ok(ErrorPolicy::Fail));
        assert_eq!(
            ErrorPolicy::from_name(Some("fail"), None),
            Ok(ErrorPolicy::Fail)
        );
        assert_eq!(
            ErrorPolicy::from_name(Some("skip"), None),
            Ok(ErrorPolicy::Skip)
        );
        assert_eq!(
            ErrorPolicy::from_name(Some("column"), None),
            Ok(ErrorPolicy::Column)
        );
        assert_eq!(
            ErrorPolicy::from_name(Some("quarantine"), q()),
            Ok(ErrorPolicy::Quarantine("bad.soif".into()))
        );
        assert_eq!(
            ErrorPolicy::from_name(None, q()),
            Ok(ErrorPolicy::Quarantine("bad.soif".into()))
        );
        for name in ErrorPolicy::NAMES {
            let file = (name == "quarantine").then(|| PathBuf::from("q"));
            assert_eq!(
                ErrorPolicy::from_name(Some(name), file).unwrap().name(),
                name
            );
        }
    }

    #[test]
    fn mistakes() {
        let e = ErrorPolicy::from_name(Some("quarantine"), None).unwrap_err();
        assert_eq!(e.to_string(), "on_error=quarantine needs quarantine=FILE");
        let e = ErrorPolicy::from_name(Some("skip"), Some("q".into())).unwrap_err();
        assert_eq!(
            e.to_string(),
            "quarantine=FILE goes with on_error=quarantine, not on_error=skip"
        );
        let e = ErrorPolicy::from_name(Some("ignore"), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "option on_error=`ignore`: expected fail, skip, quarantine or column"
        );
        let e =
            ErrorPolicy::from_options(("--on-error", Some("quarantine")), ("--quarantine", None))
                .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--on-error quarantine needs --quarantine FILE"
        );
    }

    #[test]
    fn spark_modes() {
        assert_eq!(
            ErrorPolicy::from_spark_mode("PERMISSIVE"),
            Ok(ErrorPolicy::Column)
        );
        assert_eq!(
            ErrorPolicy::from_spark_mode("dropMalformed"),
            Ok(ErrorPolicy::Skip)
        );
        assert_eq!(
            ErrorPolicy::from_spark_mode(" failfast "),
            Ok(ErrorPolicy::Fail)
        );
        for mode in ErrorPolicy::SPARK_MODES {
            let p = ErrorPolicy::from_spark_mode(mode).unwrap();
            assert_eq!(p.spark_mode(), Some(mode));
        }
        let e = ErrorPolicy::from_spark_mode("LAX").unwrap_err();
        assert_eq!(
            e.to_string(),
            "option mode=`LAX`: expected PERMISSIVE, DROPMALFORMED or FAILFAST"
        );
    }

    #[test]
    fn the_errors_table() {
        let t: ErrorOptions =
            toml::from_str("on_error = \"quarantine\"\nquarantine = \"q.soif\"\n").unwrap();
        assert_eq!(t.policy(), Ok(ErrorPolicy::Quarantine("q.soif".into())));
        assert!(toml::from_str::<ErrorOptions>("on_eror = \"skip\"\n").is_err());
        let t: ErrorOptions = toml::from_str("on_error = \"column\"\n").unwrap();
        assert_eq!(
            t.policy().unwrap_err().to_string(),
            "option on_error=`column`: expected fail, skip or quarantine"
        );
    }
}
