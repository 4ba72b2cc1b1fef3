//! [`TransformOptions`]: the `transforms` option of the Python package (`soif.read(…,
//! transforms=[…])`) and of both Spark data sources (`.option("transforms", …)`): the
//! chain of transform specs the CLI takes as `-t SPEC` and pipeline files as
//! `transforms = [SPEC, …]` (docs/transforms.md).
//!
//! A spec's arguments hold commas and colons (`select:URL,Title`), so a chain is given
//! as a JSON array of specs; one spec alone may be given as it is:
//!
//! | option text | chain |
//! |---|---|
//! | `["collapse", "select:URL,Title"]` | `-t collapse -t select:URL,Title` |
//! | `dc` | `-t dc` |
//! | `[]`, empty | none |
//! | `{"specs": […], "tables": {…}, "files": {PATH: BASE64, …}}` | the specs and tables with the files they read, as a Spark driver ships them to its executors (docs/spark.md#transforms) |
//!
//! The `tables` option names the lookup tables `remap` programs search, as `--table
//! NAME=FILE.csv` and a pipeline file's `[tables]` do: a JSON object `{"NAME":
//! "FILE.csv", …}`.
//! ```
//! use soif_options::{OptionMap, TransformOptions};
//! let mut map = OptionMap::new([("transforms", r#"["collapse", "select:URL,Title"]"#)]).unwrap();
//! let t = TransformOptions::from_map(&mut map).unwrap();
//! assert_eq!(t.specs, ["collapse", "select:URL,Title"]);
//! assert_eq!(TransformOptions::parse(&t.to_text()).unwrap(), t);
//! ```

use crate::map::OptionMap;
use crate::OptionError;
use base64::Engine as _;
use std::collections::BTreeMap;

/// What the option's value must be, for its error message.
const EXPECTED: &str = "a JSON array of transform specs (`[\"collapse\", \"select:URL,Title\"]`) or one spec (`collapse`)";

/// The `transforms` option; see the [module documentation](self).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransformOptions {
    /// The specs, in chain order.
    pub specs: Vec<String>,
    /// The lookup tables: name → CSV file (`tables`).
    pub tables: BTreeMap<String, String>,
    /// The files the specs and tables read (by their paths as given), when the chain was
    /// built on another machine first; empty otherwise.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// What the `tables` option must be, for its error message.
const TABLES_EXPECTED: &str =
    "a JSON object of table names and CSV files (`{\"codes\": \"codes.csv\"}`)";

impl TransformOptions {
    /// Takes `transforms` and `tables` from `map`.
    pub fn from_map(map: &mut OptionMap) -> Result<TransformOptions, OptionError> {
        let mut opts = match map.take("transforms") {
            None => TransformOptions::default(),
            Some((key, value)) => TransformOptions::parse(&value)
                .map_err(|why| OptionError::invalid(key, value, format!("{EXPECTED}: {why}")))?,
        };
        if let Some((key, value)) = map.take("tables") {
            let tables = match value.trim() {
                "" => BTreeMap::new(),
                text => serde_json::from_str::<BTreeMap<String, String>>(text).map_err(|e| {
                    OptionError::invalid(
                        key.clone(),
                        value.clone(),
                        format!("{TABLES_EXPECTED}: {e}"),
                    )
                })?,
            };
            if !opts.tables.is_empty() && !tables.is_empty() {
                return Err(OptionError::Other(format!(
                    "option `{key}` and the tables inside `transforms`: give them once"
                )));
            }
            opts.tables.extend(tables);
        }
        Ok(opts)
    }

    /// Reads the option's text (see the [module documentation](self)); the error says
    /// what is wrong with it.
    pub fn parse(text: &str) -> Result<TransformOptions, String> {
        let text = text.trim();
        let (specs, tables, files) = match text.as_bytes().first() {
            None => return Ok(TransformOptions::default()),
            Some(b'[') => (json_specs(text)?, BTreeMap::new(), BTreeMap::new()),
            Some(b'{') => {
                let shipped: Shipped =
                    serde_json::from_str(text).map_err(|e| format!("not a chain: {e}"))?;
                let mut files = BTreeMap::new();
                for (path, b64) in shipped.files {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(b64.as_bytes())
                        .map_err(|e| format!("file {path}: {e}"))?;
                    files.insert(path, bytes);
                }
                (shipped.specs, shipped.tables, files)
            }
            Some(_) => (vec![text.to_string()], BTreeMap::new(), BTreeMap::new()),
        };
        if let Some(blank) = specs.iter().position(|s| s.trim().is_empty()) {
            return Err(format!("spec {} is empty", blank + 1));
        }
        Ok(TransformOptions {
            specs,
            tables,
            files,
        })
    }

    /// The option's text: a JSON array of the specs, or the specs with their tables and
    /// files.
    pub fn to_text(&self) -> String {
        if self.files.is_empty() && self.tables.is_empty() {
            return serde_json::Value::from(self.specs.clone()).to_string();
        }
        let files: serde_json::Map<String, serde_json::Value> = self
            .files
            .iter()
            .map(|(p, b)| {
                let b64 = base64::engine::general_purpose::STANDARD.encode(b);
                (p.clone(), serde_json::Value::from(b64))
            })
            .collect();
        serde_json::json!({ "specs": self.specs, "tables": self.tables, "files": files })
            .to_string()
    }

    /// Whether there is no transform.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }
}

/// The chain as a Spark driver ships it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Shipped {
    specs: Vec<String>,
    #[serde(default)]
    tables: BTreeMap<String, String>,
    #[serde(default)]
    files: BTreeMap<String, String>,
}

fn json_specs(text: &str) -> Result<Vec<String>, String> {
    serde_json::from_str::<Vec<String>>(text).map_err(|e| format!("not an array of strings: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_array_one_spec_or_nothing() {
        let t = TransformOptions::parse(r#"["collapse", "select:URL,Title", "match:Title=a:b"]"#)
            .unwrap();
        assert_eq!(t.specs, ["collapse", "select:URL,Title", "match:Title=a:b"]);
        assert!(t.files.is_empty());
        assert_eq!(
            TransformOptions::parse(" select:URL,Title ").unwrap().specs,
            ["select:URL,Title"]
        );
        assert!(TransformOptions::parse("").unwrap().is_empty());
        assert!(TransformOptions::parse("[]").unwrap().is_empty());
    }

    #[test]
    fn the_shipped_form_keeps_the_files_bytes() {
        let t = TransformOptions {
            specs: vec!["dc:map.toml".into()],
            tables: BTreeMap::from([("codes".to_string(), "codes.csv".to_string())]),
            files: BTreeMap::from([("map.toml".to_string(), vec![0, 159, b'x', b'\n'])]),
        };
        let text = t.to_text();
        assert!(text.starts_with('{'), "{text}");
        assert_eq!(TransformOptions::parse(&text).unwrap(), t);
        let plain = TransformOptions {
            specs: vec!["collapse".into()],
            ..TransformOptions::default()
        };
        assert_eq!(plain.to_text(), r#"["collapse"]"#);
    }

    #[test]
    fn mistakes_name_the_option_and_say_what_is_expected() {
        let mut map = OptionMap::new([("Transforms", r#"["collapse", 3]"#)]).unwrap();
        let e = TransformOptions::from_map(&mut map)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                r#"option Transforms=`["collapse", 3]`: expected a JSON array of transform specs"#
            ),
            "{e}"
        );
        assert!(e.contains("not an array of strings"), "{e}");
        let e = TransformOptions::parse(r#"["collapse", " "]"#).unwrap_err();
        assert_eq!(e, "spec 2 is empty");
        let mut map = OptionMap::new([("tables", r#"["codes.csv"]"#)]).unwrap();
        let e = TransformOptions::from_map(&mut map)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("option tables=`[\"codes.csv\"]`: expected a JSON object"),
            "{e}"
        );
    }

    #[test]
    fn tables_are_a_json_object_of_names_and_files() {
        let mut map = OptionMap::new([
            ("transforms", "remap:map.vrl"),
            (
                "tables",
                r#"{"codes": "codes.csv", "types": "t/types.csv"}"#,
            ),
        ])
        .unwrap();
        let t = TransformOptions::from_map(&mut map).unwrap();
        assert_eq!(t.tables["codes"], "codes.csv");
        assert_eq!(t.tables["types"], "t/types.csv");
        assert_eq!(TransformOptions::parse(&t.to_text()).unwrap(), t);
    }
}
