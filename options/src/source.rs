//! [`SourceOptions`]: how records are read, whichever front end asks.
//!
//! | option | CLI | pipeline `[source]` | Python | Spark |
//! |--------|-----|---------------------|--------|-------|
//! | the inputs | `INPUT…` | `inputs` | `source` | `load(PATH)` |
//! | [`format`](SourceOptions::format) | `--from` | `format` | — | — |
//! | [`lenient`](SourceOptions::lenient) | `--lenient` | `lenient` | `lenient=` | `lenient` |
//! | [`max_record_size`](SourceOptions::max_record_size) | `--max-record-size` | `max_record_size` | `max_record_size=` | `maxRecordSize` |
//! | [`mmap`](SourceOptions::mmap) | `--no-mmap` | `mmap` | — | — |
//!
//! A pipeline file's `[source]` table deserialises into it; Python's keyword arguments
//! and Spark's options, as strings, go through [`SourceOptions::from_map`].

use crate::map::OptionMap;
use crate::size::ByteSize;
use crate::OptionError;
use serde::Deserialize;
use std::fmt;
use std::str::FromStr;

/// The input formats (`--from`, `[source] format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum InputFormat {
    /// Parquet / Arrow IPC when named .parquet / .arrow / .arrows or by their magic
    /// bytes, JSON Lines when named .jsonl / .ndjson or starting with `{`, else SOIF.
    #[default]
    Auto,
    /// SOIF (RFC 2655, Harvest).
    Soif,
    /// JSON Lines, one record a line, as the `jsonl` sink writes them.
    #[cfg_attr(feature = "clap", value(alias = "ndjson", alias = "json"))]
    Jsonl,
    /// soif's Arrow layout in a Parquet file.
    Parquet,
    /// soif's Arrow layout as an Arrow IPC stream or file.
    #[cfg_attr(feature = "clap", value(alias = "arrows", alias = "ipc"))]
    Arrow,
}

impl InputFormat {
    /// The names, in the order help texts list them.
    pub const NAMES: [&'static str; 5] = ["auto", "soif", "jsonl", "parquet", "arrow"];

    /// A name or alias (`ndjson`, `json`, `arrows`, `ipc`).
    pub fn parse(s: &str) -> Option<InputFormat> {
        Some(match s {
            "auto" => InputFormat::Auto,
            "soif" => InputFormat::Soif,
            "jsonl" | "ndjson" | "json" => InputFormat::Jsonl,
            "parquet" => InputFormat::Parquet,
            "arrow" | "arrows" | "ipc" => InputFormat::Arrow,
            _ => return None,
        })
    }

    /// What the format is, for help texts (`None` for `auto`).
    pub fn title(self) -> Option<&'static str> {
        Some(match self {
            InputFormat::Auto => return None,
            InputFormat::Soif => "SOIF",
            InputFormat::Jsonl => "JSON Lines",
            InputFormat::Parquet => "Parquet",
            InputFormat::Arrow => "Arrow IPC",
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            InputFormat::Auto => "auto",
            InputFormat::Soif => "soif",
            InputFormat::Jsonl => "jsonl",
            InputFormat::Parquet => "parquet",
            InputFormat::Arrow => "arrow",
        }
    }

    fn expected() -> String {
        crate::error::one_of(&InputFormat::NAMES)
    }
}

impl fmt::Display for InputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for InputFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<InputFormat, String> {
        InputFormat::parse(s).ok_or_else(|| {
            format!(
                "unknown input format `{s}` (one of {})",
                InputFormat::expected()
            )
        })
    }
}

impl<'de> Deserialize<'de> for InputFormat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<InputFormat, D::Error> {
        let s = String::deserialize(d)?;
        InputFormat::parse(&s).ok_or_else(|| {
            serde::de::Error::invalid_value(
                serde::de::Unexpected::Str(&s),
                &InputFormat::expected().as_str(),
            )
        })
    }
}

/// The largest record accepted unless told otherwise: 64 MiB.
pub const DEFAULT_MAX_RECORD_SIZE: ByteSize =
    ByteSize::b(soif_codecs::soif::DEFAULT_MAX_RECORD_SIZE as u64);

/// How records are read (see the [module documentation](self) for each front end's
/// names). A pipeline file's `[source]` table is this struct; unknown keys are errors.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceOptions {
    /// Files, directories, globs, `-` for stdin, URLs (a pipeline file's `inputs`; the
    /// other front ends give their inputs apart from the options).
    #[serde(default)]
    pub inputs: Vec<String>,
    /// The input format (default `auto`).
    #[serde(default)]
    pub format: InputFormat,
    /// Repair what legacy data is known to carry; each repair is counted and reported.
    #[serde(default)]
    pub lenient: bool,
    /// The largest record accepted (default 64 MiB); larger ones are rejected without
    /// being read into memory. Must be positive.
    #[serde(default = "default_max_record_size")]
    pub max_record_size: ByteSize,
    /// Map plain files into memory and decode them in place (the default); `false`
    /// reads every input as a stream.
    #[serde(default = "yes")]
    pub mmap: bool,
}

fn default_max_record_size() -> ByteSize {
    DEFAULT_MAX_RECORD_SIZE
}

fn yes() -> bool {
    true
}

impl Default for SourceOptions {
    fn default() -> SourceOptions {
        SourceOptions {
            inputs: Vec::new(),
            format: InputFormat::Auto,
            lenient: false,
            max_record_size: DEFAULT_MAX_RECORD_SIZE,
            mmap: true,
        }
    }
}

impl SourceOptions {
    /// The options from a flat string map: `format`, `lenient`, `max_record_size`
    /// (`maxRecordSize`), `mmap`; what is absent keeps its default. The options it takes
    /// are removed from the map, for the caller to take its own and then
    /// [`finish`](OptionMap::finish) it.
    pub fn from_map(map: &mut OptionMap) -> Result<SourceOptions, OptionError> {
        let mut o = SourceOptions::default();
        if let Some(f) = map.parse("format", &InputFormat::expected(), InputFormat::parse)? {
            o.format = f;
        }
        if let Some(l) = map.bool("lenient")? {
            o.lenient = l;
        }
        if let Some(s) = map.positive_size("max_record_size")? {
            o.max_record_size = s;
        }
        if let Some(m) = map.bool("mmap")? {
            o.mmap = m;
        }
        Ok(o)
    }

    /// The options from (key, value) pairs alone: any other key is an error.
    pub fn from_pairs<I, K, V>(pairs: I) -> Result<SourceOptions, OptionError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut map = OptionMap::new(pairs)?;
        let o = SourceOptions::from_map(&mut map)?;
        map.finish()?;
        Ok(o)
    }

    /// The SOIF decoder's options: the largest record and lenient repairs.
    pub fn decoder_options(&self) -> soif_codecs::soif::DecoderOptions {
        let mut decoder = soif_codecs::soif::DecoderOptions::with_max_record_size(
            self.max_record_size.as_usize(),
        );
        decoder.lenient = self.lenient;
        decoder
    }

    /// Checks what deserialisation cannot: a positive `max_record_size`.
    pub fn check(&self) -> Result<(), OptionError> {
        if self.max_record_size.as_u64() == 0 {
            return Err(OptionError::invalid(
                "max_record_size",
                "0",
                "a positive size",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_a_string_map() {
        let o = SourceOptions::from_pairs([
            ("format", "jsonl"),
            ("LENIENT", "true"),
            ("maxRecordSize", "1kB"),
            ("mmap", "no"),
        ])
        .unwrap();
        assert_eq!(o.format, InputFormat::Jsonl);
        assert!(o.lenient);
        assert_eq!(o.max_record_size.as_u64(), 1000);
        assert!(!o.mmap);
        let none: [(&str, &str); 0] = [];
        assert_eq!(
            SourceOptions::from_pairs(none).unwrap(),
            SourceOptions::default()
        );
        let o = SourceOptions::from_pairs([("max_record_size", "1KiB")]).unwrap();
        assert_eq!(o.max_record_size.as_u64(), 1024);
    }

    #[test]
    fn string_map_mistakes() {
        let e = SourceOptions::from_pairs([("maxRecordSize", "12 parsecs")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "option maxRecordSize=`12 parsecs`: expected a size in bytes (e.g. 1048576, 512KiB, 64MB, 1GiB)"
        );
        let e = SourceOptions::from_pairs([("max_record_size", "0")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "option max_record_size=`0`: expected a positive size"
        );
        let e = SourceOptions::from_pairs([("format", "xml")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "option format=`xml`: expected auto, soif, jsonl, parquet or arrow"
        );
        let e =
            SourceOptions::from_pairs([("lenient", "true"), ("maxRecrdSize", "1")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown option `maxRecrdSize` (did you mean `max_record_size`?)"
        );
        let e = SourceOptions::from_pairs([("colour", "red")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown option `colour` (known: format, lenient, max_record_size, mmap)"
        );
    }

    #[test]
    fn from_toml() {
        let o: SourceOptions = toml::from_str(
            "inputs = [\"a.soif\"]\nformat = \"soif\"\nlenient = true\nmax_record_size = \"64MB\"\nmmap = false\n",
        )
        .unwrap();
        assert_eq!(o.inputs, ["a.soif"]);
        assert_eq!(o.format, InputFormat::Soif);
        assert_eq!(o.max_record_size.as_u64(), 64_000_000);
        assert!(o.lenient && !o.mmap);
        let o: SourceOptions = toml::from_str("max_record_size = 1010\n").unwrap();
        assert_eq!(o.max_record_size.as_u64(), 1010);
        let o: SourceOptions = toml::from_str("").unwrap();
        assert_eq!(o, SourceOptions::default());
        assert_eq!(o.max_record_size.as_u64(), 64 << 20);
        let e = toml::from_str::<SourceOptions>("max_recod_size = 1\n").unwrap_err();
        assert!(e.to_string().contains("max_recod_size"), "{e}");
        let e = toml::from_str::<SourceOptions>("format = \"xml\"\n").unwrap_err();
        assert!(
            e.to_string().contains(
                "invalid value: string \"xml\", expected auto, soif, jsonl, parquet or arrow"
            ),
            "{e}"
        );
        let o: SourceOptions = toml::from_str("max_record_size = 0\n").unwrap();
        assert!(o.check().is_err());
    }
}
