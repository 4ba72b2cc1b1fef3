//! The options of a read as the Python package and the Spark data sources hand them
//! over — a flat map of strings — parsed by the one option code of `soif-options`, so
//! that a size, a policy or a mistake means the same in every front end.
//!
//! - [`ReadOptions`]: `soif.read` and `soif.records`' keyword arguments.
//! - Spark's read options: [`soif_options::SparkOptions`], for both data sources.

use soif_options::{ErrorPolicy, OptionError, OptionMap, SourceOptions, TransformOptions};
use std::path::PathBuf;

/// Rows a batch holds at most unless told otherwise (a batch also ends at
/// [`BATCH_BYTES`](crate::BATCH_BYTES)).
pub const DEFAULT_BATCH_SIZE: usize = soif_options::spark::DEFAULT_BATCH_SIZE;

/// The options of `soif.read` / `soif.records`:
///
/// | keyword | meaning | default |
/// |---------|---------|---------|
/// | `lenient`, `max_record_size`, `format`, `mmap` | as the CLI's ([`SourceOptions`]) | off, 64 MiB, `auto`, on |
/// | `on_error`, `quarantine` | `fail`, `skip`, `quarantine` (with a file) or `column` ([`ErrorPolicy`]) | `fail` |
/// | `batch_size` | rows per batch, a positive whole number | 4096 |
/// | `source_column` | a `_source` column | off |
/// | `transforms` | the transform chain ([`TransformOptions`]: a JSON array of specs, or one) | none |
///
/// Names are matched as [`OptionMap`] matches them; an unknown one is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    pub source: SourceOptions,
    pub policy: ErrorPolicy,
    pub batch_size: usize,
    pub source_column: bool,
    pub transforms: TransformOptions,
}

impl ReadOptions {
    pub fn from_pairs<I, K, V>(pairs: I) -> Result<ReadOptions, OptionError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut map = OptionMap::new(pairs)?;
        let source = SourceOptions::from_map(&mut map)?;
        let on_error = map.string("on_error");
        let quarantine = map.string("quarantine").map(PathBuf::from);
        let policy = ErrorPolicy::from_name(on_error.as_deref(), quarantine)?;
        let batch_size = map
            .parse("batch_size", "a positive number of rows", |s| {
                s.trim().parse::<usize>().ok().filter(|&n| n > 0)
            })?
            .unwrap_or(DEFAULT_BATCH_SIZE);
        let source_column = map.bool("source_column")?.unwrap_or(false);
        let transforms = TransformOptions::from_map(&mut map)?;
        map.finish()?;
        Ok(ReadOptions {
            source,
            policy,
            batch_size,
            source_column,
            transforms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_arguments_as_strings() {
        let o = ReadOptions::from_pairs([
            ("lenient", "true"),
            ("max_record_size", "1kB"),
            ("on_error", "skip"),
            ("batch_size", "7"),
            ("source_column", "false"),
            ("transforms", "collapse"),
        ])
        .unwrap();
        assert!(o.source.lenient);
        assert_eq!(o.source.max_record_size.as_u64(), 1000);
        assert_eq!(o.source.decoder_options().max_record_size, 1000);
        assert_eq!(o.policy, ErrorPolicy::Skip);
        assert_eq!(o.batch_size, 7);
        assert!(!o.source_column);
        assert_eq!(o.transforms.specs, ["collapse"]);
        let none: [(&str, &str); 0] = [];
        let d = ReadOptions::from_pairs(none).unwrap();
        assert_eq!(d.policy, ErrorPolicy::Fail);
        assert_eq!(d.batch_size, 4096);
        assert_eq!(d.source.max_record_size.as_u64(), 64 << 20);
        let q = ReadOptions::from_pairs([("on_error", "quarantine"), ("quarantine", "q.soif")])
            .unwrap();
        assert_eq!(q.policy, ErrorPolicy::Quarantine("q.soif".into()));
    }

    #[test]
    fn mistakes_are_the_shared_errors() {
        let e = ReadOptions::from_pairs([("max_record_sise", "1")]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown option `max_record_sise`"),
            "{e}"
        );
        let e = ReadOptions::from_pairs([("max_record_size", "big")]).unwrap_err();
        assert!(e.to_string().contains("expected a size in bytes"), "{e}");
        let e = ReadOptions::from_pairs([("max_record_size", "0")]).unwrap_err();
        assert!(e.to_string().contains("positive"), "{e}");
        let e = ReadOptions::from_pairs([("batch_size", "0")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "option batch_size=`0`: expected a positive number of rows"
        );
        let e = ReadOptions::from_pairs([("on_error", "ignore")]).unwrap_err();
        assert!(e.to_string().contains("on_error"), "{e}");
        let e = ReadOptions::from_pairs([("on_error", "fail"), ("quarantine", "q")]).unwrap_err();
        assert!(e.to_string().contains("quarantine"), "{e}");
    }
}
