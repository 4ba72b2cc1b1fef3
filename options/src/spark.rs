//! [`SparkOptions`]: the options of `spark.read.format("soif")`, for both Spark data
//! sources (the Python one in `soif.spark` and the JVM one), parsed here once.
//!
//! | option | meaning | default |
//! |--------|---------|---------|
//! | `mode` | `PERMISSIVE`, `DROPMALFORMED` or `FAILFAST` (see [`ErrorPolicy`]) | `PERMISSIVE` |
//! | `columnNameOfCorruptRecord` | the corrupt-record column's name | `_corrupt_record` |
//! | `lenient`, `maxRecordSize` (and `format`, `mmap`) | [`SourceOptions`] | |
//! | `splitSize` | the size of a plain local file's byte ranges | 128 MiB |
//! | `includeSource` | a `_source` column (file, byte offset) | `false` |
//! | `recursiveFileLookup` | read directories recursively | `false` |
//! | `batchSize` | rows per Arrow batch | 4096 |
//! | `transforms` | the transform chain ([`TransformOptions`]: a JSON array of specs) | none |
//! | `path`, `paths` | what `load` was given (`paths`: a JSON array) | |
//!
//! Names are matched case-insensitively, as Spark's own are (see [`OptionMap`]); an
//! unknown option is an error that suggests the option meant, in the spelling above.
//! Spark's Python data source is handed the names in lower case (`maxrecordsize`), so
//! its errors name a mistyped option that way: `unknown option `maxrecordsise` (did you
//! mean `maxRecordSize`?)`.

use crate::map::OptionMap;
use crate::policy::ErrorPolicy;
use crate::size::ByteSize;
use crate::source::SourceOptions;
use crate::transforms::TransformOptions;
use crate::OptionError;

/// The corrupt-record column's name unless `columnNameOfCorruptRecord` says otherwise.
pub const DEFAULT_CORRUPT_COLUMN: &str = "_corrupt_record";
/// A plain local file's byte ranges unless `splitSize` says otherwise: 128 MiB.
pub const DEFAULT_SPLIT_SIZE: ByteSize = ByteSize::mib(128);
/// Rows per Arrow batch unless `batchSize` says otherwise.
pub const DEFAULT_BATCH_SIZE: usize = 4096;

/// The options of a Spark read (see the [module documentation](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparkOptions {
    /// `path` and `paths`, in that order of precedence: `paths` first, then `path`.
    pub paths: Vec<String>,
    pub source: SourceOptions,
    /// From `mode`.
    pub policy: ErrorPolicy,
    pub corrupt_column: String,
    pub split_size: ByteSize,
    pub include_source: bool,
    pub recursive: bool,
    pub batch_size: usize,
    pub transforms: TransformOptions,
}

impl SparkOptions {
    /// Parses Spark's option map; `paths` may be empty (a write, or a caller that
    /// checks itself).
    pub fn from_pairs<I, K, V>(pairs: I) -> Result<SparkOptions, OptionError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut map = OptionMap::spark(pairs)?;
        let policy = match map.string("mode") {
            Some(m) => ErrorPolicy::from_spark_mode(&m)?,
            None => ErrorPolicy::Column,
        };
        let corrupt_column = map
            .string("columnNameOfCorruptRecord")
            .unwrap_or_else(|| DEFAULT_CORRUPT_COLUMN.to_string());
        let source = SourceOptions::from_map(&mut map)?;
        let split_size = map
            .positive_size("splitSize")?
            .unwrap_or(DEFAULT_SPLIT_SIZE);
        let include_source = map.bool("includeSource")?.unwrap_or(false);
        let recursive = map.bool("recursiveFileLookup")?.unwrap_or(false);
        let batch_size = match map.take("batchSize") {
            None => DEFAULT_BATCH_SIZE,
            // Read as a size (`4k` is 4000 rows), as both Spark sources always have.
            Some((key, value)) => match value.parse::<ByteSize>().map(ByteSize::as_u64) {
                Ok(n) if n > 0 && n <= i32::MAX as u64 => n as usize,
                _ => {
                    return Err(OptionError::invalid(
                        key,
                        value,
                        "a positive number of rows",
                    ))
                }
            },
        };
        let transforms = TransformOptions::from_map(&mut map)?;
        let mut paths = Vec::new();
        if let Some(v) = map.string("paths").filter(|v| !v.is_empty()) {
            match serde_json::from_str::<serde_json::Value>(&v) {
                Ok(serde_json::Value::Array(items)) => {
                    paths.extend(items.into_iter().map(|i| match i {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    }))
                }
                Ok(serde_json::Value::String(s)) => paths.push(s),
                _ => paths.push(v),
            }
        }
        if let Some(v) = map.string("path").filter(|v| !v.is_empty()) {
            paths.push(v);
        }
        map.finish()?;
        Ok(SparkOptions {
            paths,
            source,
            policy,
            corrupt_column,
            split_size,
            include_source,
            recursive,
            batch_size,
            transforms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let none: [(&str, &str); 0] = [];
        let o = SparkOptions::from_pairs(none).unwrap();
        assert_eq!(o.policy, ErrorPolicy::Column);
        assert_eq!(o.corrupt_column, "_corrupt_record");
        assert_eq!(o.source, SourceOptions::default());
        assert_eq!(o.split_size.as_u64(), 128 << 20);
        assert_eq!(o.batch_size, 4096);
        assert!(!o.include_source && !o.recursive && o.paths.is_empty());
    }

    #[test]
    fn every_option() {
        let o = SparkOptions::from_pairs([
            ("MODE", "dropmalformed"),
            ("columnNameOfCorruptRecord", "_bad"),
            ("lenient", "true"),
            ("maxrecordsize", "64MB"),
            ("splitSize", "1KB"),
            ("includeSource", "TRUE"),
            ("recursiveFileLookup", "1"),
            ("batchSize", "100"),
            ("transforms", "[\"collapse\", \"select:URL,Title\"]"),
            ("paths", "[\"a.soif\", \"b/\"]"),
            ("path", "c.soif"),
        ])
        .unwrap();
        assert_eq!(o.policy, ErrorPolicy::Skip);
        assert_eq!(o.corrupt_column, "_bad");
        assert!(o.source.lenient);
        assert_eq!(o.source.max_record_size.as_u64(), 64_000_000);
        assert_eq!(o.split_size.as_u64(), 1000);
        assert!(o.include_source && o.recursive);
        assert_eq!(o.batch_size, 100);
        assert_eq!(o.transforms.specs, ["collapse", "select:URL,Title"]);
        assert_eq!(o.paths, ["a.soif", "b/", "c.soif"]);
    }

    #[test]
    fn mistakes() {
        let e = SparkOptions::from_pairs([("mode", "LENIENTLY")]).unwrap_err();
        assert!(
            e.to_string()
                .contains("expected PERMISSIVE, DROPMALFORMED or FAILFAST"),
            "{e}"
        );
        let e = SparkOptions::from_pairs([("splitSize", "big")]).unwrap_err();
        assert!(e.to_string().contains("expected a size in bytes"), "{e}");
        let e = SparkOptions::from_pairs([("batchSize", "0")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "option batchSize=`0`: expected a positive number of rows"
        );
        let e = SparkOptions::from_pairs([("maxRecordSise", "1")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown option `maxRecordSise` (did you mean `maxRecordSize`?)"
        );
        // Spark's Python data source is handed the names in lower case.
        let e = SparkOptions::from_pairs([("maxrecordsise", "1")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown option `maxrecordsise` (did you mean `maxRecordSize`?)"
        );
        let e = SparkOptions::from_pairs([("colour", "1")]).unwrap_err();
        assert!(e.to_string().starts_with("unknown option `colour` (known: mode, columnNameOfCorruptRecord, format, lenient, maxRecordSize, mmap, splitSize"), "{e}");
    }
}
