//! `validate`: check records against an RDM `@SCHEMA` (seed `000_…txt`, "Schema
//! Description").
//!
//! `-t validate:SCHEMA.soif[,unknown=allow|warn|reject]`; `-t validate` alone uses the
//! run's `--schema`. A record that breaks a rule goes to [`Emit::reject`] — the engine
//! applies `--on-error` — with a reason that names the attribute and the value, e.g.
//! ``File-Size: `12 KB` is not an int (Data-Type int)``. Several problems in one
//! record are reported together.
//!
//! What is checked:
//!
//! - **Template.** When the schema has a `Schema-Name`, records of another template
//!   are rejected (`Schema-Name` is "used in the SOIF TEMPLATE-TYPE field").
//! - **Data-Type**, for every value of every attribute the schema describes (`Author-2`
//!   is a value of `Author`, the note's multi-value convention): `int`/`integer`/
//!   `serial` (and `bigint`, `smallint`, `int(11)`…) a whole number, `float`/`real`/
//!   `double`/`decimal`/`numeric` a number, `date`/`datetime`/`timestamp` a date in any
//!   form [`soif_codecs::rules::dates`] reads, `varchar(N)`/`char(N)` at most N bytes, `boolean` one
//!   of `0 1 true false yes no`. `varchar`, `char`, `text` and `blob` take any bytes.
//!   An unknown type is not checked (one warning).
//! - **Enforce-Uniqueness: 1**: no value of the attribute may repeat, across records or
//!   within one. Values are remembered as 128-bit fingerprints in bounded memory that
//!   spill to temporary files ([`super::seen`] explains the method: exact up to a
//!   collision chance of about n²/2¹²⁹). A rejected record's values are not remembered,
//!   so a record that fails for another reason does not make a later one a duplicate.
//! - **Unknown attributes** (not in the schema): `allow`, `warn` (the default: one
//!   warning per attribute name, with where it was first seen, and a count at the end)
//!   or `reject`.

use super::seen::SeenSet;
use crate::{Emit, Error, Transform};
use soif_codecs::rdm::{DataType, Schema, SchemaEntry};
use soif_codecs::rules::dates;
use soif_codecs::rules::names::split_suffix;
use soif_codecs::Record;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// How many distinct unknown attribute names get their own warning.
const MAX_UNKNOWN_WARNINGS: usize = 100;

/// How many problems of one record are spelled out in its reason.
const MAX_PROBLEMS: usize = 5;

/// What to do with attributes the schema does not describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unknown {
    /// Accept them silently.
    Allow,
    /// Accept them, with a warning per attribute name.
    Warn,
    /// Reject the record.
    Reject,
}

/// A value check derived from a `Data-Type`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Check {
    Any,
    Integer,
    Number,
    Date,
    Boolean,
    MaxLen(usize),
    Unknown(String),
}

impl Check {
    fn of(t: &DataType) -> Check {
        match t {
            DataType::Varchar | DataType::Char | DataType::Text | DataType::Blob => Check::Any,
            DataType::Int | DataType::Serial => Check::Integer,
            DataType::Float => Check::Number,
            DataType::Date | DataType::DateTime => Check::Date,
            DataType::Other(s) => Check::other(s),
        }
    }

    fn other(s: &str) -> Check {
        let t = s.trim().to_ascii_lowercase();
        let (base, arg) = match t.split_once('(') {
            Some((b, rest)) => (
                b.trim(),
                rest.trim_end_matches(')').trim().parse::<usize>().ok(),
            ),
            None => (t.as_str(), None),
        };
        match base {
            "varchar" | "char" | "character" | "nvarchar" | "nchar" => {
                arg.map_or(Check::Any, Check::MaxLen)
            }
            "text" | "blob" | "longtext" | "mediumtext" | "clob" | "binary" | "varbinary" => {
                Check::Any
            }
            "int" | "integer" | "bigint" | "smallint" | "tinyint" | "mediumint" | "serial"
            | "bigserial" => Check::Integer,
            "float" | "real" | "double" | "decimal" | "numeric" | "number" => Check::Number,
            "date" | "datetime" | "timestamp" | "time" => Check::Date,
            "bool" | "boolean" => Check::Boolean,
            _ => Check::Unknown(s.trim().to_string()),
        }
    }

    /// `None` when the value passes; otherwise what it is not.
    fn problem(&self, v: &[u8]) -> Option<String> {
        let text = || std::str::from_utf8(v).ok().map(str::trim);
        match self {
            Check::Any | Check::Unknown(_) => None,
            Check::Integer => match text().map(|t| t.strip_prefix('+').unwrap_or(t).parse::<i64>())
            {
                Some(Ok(_)) => None,
                _ => Some("is not an integer".into()),
            },
            Check::Number => match text().map(str::parse::<f64>) {
                Some(Ok(f)) if f.is_finite() => None,
                _ => Some("is not a number".into()),
            },
            Check::Date => match dates::parse(v) {
                Some(_) => None,
                None => Some("is not a date".into()),
            },
            Check::Boolean => match text().map(str::to_ascii_lowercase).as_deref() {
                Some("0" | "1" | "true" | "false" | "yes" | "no") => None,
                _ => Some("is not a boolean".into()),
            },
            Check::MaxLen(n) if v.len() > *n => {
                Some(format!("is {} bytes, longer than {n}", v.len()))
            }
            Check::MaxLen(_) => None,
        }
    }
}

/// A value as it appears in a reason: lossy text, at most 60 characters.
fn shown(v: &[u8]) -> String {
    let s = String::from_utf8_lossy(v);
    let mut out: String = s
        .chars()
        .take(60)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().count() > 60 {
        out.push('…');
    }
    out
}

struct Column {
    entry: SchemaEntry,
    check: Check,
    unique: Option<SeenSet>,
}

/// The `validate` transform.
pub struct Validate {
    template: Option<String>,
    columns: Vec<Column>,
    unknown: Unknown,
    warned_types: HashSet<String>,
    unknown_names: HashMap<String, u64>,
    unknown_total: u64,
}

impl Validate {
    /// Parses `SCHEMA.soif[,unknown=allow|warn|reject]`; without a path, `default_schema`
    /// (the run's `--schema`) is used.
    pub fn parse(
        arg: Option<&str>,
        default_schema: Option<&Path>,
        budget: usize,
        temp_dir: Option<PathBuf>,
        files: &super::files::Files,
    ) -> Result<Validate, Error> {
        let mut path: Option<PathBuf> = None;
        let mut unknown = Unknown::Warn;
        for item in arg
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            if let Some(v) = item.strip_prefix("unknown=") {
                unknown = match v.trim() {
                    "allow" => Unknown::Allow,
                    "warn" => Unknown::Warn,
                    "reject" => Unknown::Reject,
                    other => {
                        return Err(Error::Config(format!(
                            "validate: unknown={other}: expected allow, warn or reject"
                        )))
                    }
                };
            } else if path.is_some() {
                return Err(Error::Config(format!(
                    "validate: `{item}`: one schema only (options: unknown=allow|warn|reject)"
                )));
            } else {
                path = Some(PathBuf::from(item));
            }
        }
        let path = path
            .or_else(|| default_schema.map(Path::to_path_buf))
            .ok_or_else(|| {
                Error::Config(
                    "validate needs a schema: `-t validate:SCHEMA.soif` or `--schema SCHEMA.soif`"
                        .into(),
                )
            })?;
        let schema = files.schema(&path)?;
        Ok(Validate::new(&schema, unknown, budget, temp_dir))
    }

    /// Checks against `schema`; uniqueness checks share `budget` bytes of memory.
    pub fn new(
        schema: &Schema,
        unknown: Unknown,
        budget: usize,
        temp_dir: Option<PathBuf>,
    ) -> Validate {
        let unique_count = schema
            .entries
            .iter()
            .filter(|e| e.is_unique())
            .count()
            .max(1);
        let columns = schema
            .entries
            .iter()
            .map(|e| Column {
                check: Check::of(&e.data_type()),
                unique: e.is_unique().then(|| {
                    SeenSet::new(
                        format!("validate: Enforce-Uniqueness of {}", e.soif_attribute),
                        budget / unique_count,
                        temp_dir.clone(),
                    )
                }),
                entry: e.clone(),
            })
            .collect();
        Validate {
            template: schema.name.clone(),
            columns,
            unknown,
            warned_types: HashSet::new(),
            unknown_names: HashMap::new(),
            unknown_total: 0,
        }
    }

    /// The column describing a record attribute: the exact name, else the name without a
    /// `-N` suffix (ignoring case, as [`Schema::entry_for`]).
    fn column(&self, name: &[u8]) -> Option<usize> {
        let find = |n: &[u8]| {
            self.columns
                .iter()
                .position(|c| c.entry.soif_attribute.as_bytes().eq_ignore_ascii_case(n))
        };
        find(name).or_else(|| split_suffix(name).and_then(|(base, _)| find(base)))
    }

    fn where_(record: &Record) -> String {
        match &record.position {
            Some(p) => p.to_string(),
            None => record.url_str().into_owned(),
        }
    }
}

impl Transform for Validate {
    fn name(&self) -> &str {
        "validate"
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        let mut problems: Vec<String> = Vec::new();
        if let Some(t) = &self.template {
            if !record.template.eq_ignore_ascii_case(t.as_bytes()) {
                problems.push(format!(
                    "template `{}` is not the schema's `{t}` (Schema-Name)",
                    record.template_str()
                ));
            }
        }
        let flat = record.flattened();
        // (column, value) pairs to check for uniqueness once everything else passed.
        let mut unique_values = Vec::new();
        for attr in &flat.attributes {
            let name = attr.name_str();
            let Some(col) = self.column(&attr.name) else {
                self.unknown_total += 1;
                match self.unknown {
                    Unknown::Allow => {}
                    Unknown::Reject => {
                        problems.push(format!("{name}: not an attribute of the schema"))
                    }
                    Unknown::Warn => {
                        let seen = self.unknown_names.len();
                        if let Some(n) = self.unknown_names.get_mut(name.as_ref()) {
                            *n += 1;
                        } else if seen < MAX_UNKNOWN_WARNINGS {
                            self.unknown_names.insert(name.to_string(), 1);
                            out.warn(format!(
                                "validate: attribute {name} is not in the schema (first at {})",
                                Validate::where_(&record)
                            ));
                        }
                    }
                }
                continue;
            };
            let column = &self.columns[col];
            for v in attr.value.leaves() {
                if let Check::Unknown(t) = &column.check {
                    if self.warned_types.insert(t.clone()) {
                        out.warn(format!(
                            "validate: Data-Type `{t}` of {} is not one this check knows; its values are not checked",
                            column.entry.soif_attribute
                        ));
                    }
                }
                if let Some(p) = column.check.problem(v) {
                    problems.push(format!(
                        "{name}: `{}` {p} (Data-Type {})",
                        shown(v),
                        column.entry.data_type()
                    ));
                }
                if column.unique.is_some() {
                    unique_values.push((col, name.clone().into_owned(), v.clone()));
                }
            }
        }
        if problems.is_empty() && !unique_values.is_empty() {
            let mut within = HashSet::new();
            for (col, name, v) in &unique_values {
                let dup_here = !within.insert((*col, v.clone()));
                let seen_before = match self.columns[*col].unique.as_mut() {
                    Some(set) => set.contains(v)?,
                    None => false,
                };
                if dup_here || seen_before {
                    problems.push(format!(
                        "{name}: `{}` is not unique (Enforce-Uniqueness){}",
                        shown(v),
                        if dup_here { " within this record" } else { "" }
                    ));
                }
            }
            if problems.is_empty() {
                for (col, _, v) in unique_values {
                    if let Some(set) = self.columns[col].unique.as_mut() {
                        set.insert(&v)?;
                    }
                }
            }
        }
        drop(flat);
        if problems.is_empty() {
            return out.emit(record);
        }
        let more = problems.len().saturating_sub(MAX_PROBLEMS);
        problems.truncate(MAX_PROBLEMS);
        let mut reason = problems.join("; ");
        if more > 0 {
            reason.push_str(&format!("; and {more} more"));
        }
        out.reject(record, reason)
    }

    fn finish(&mut self, out: &mut dyn Emit) -> Result<(), Error> {
        if self.unknown == Unknown::Warn && self.unknown_total > 0 {
            let mut names: Vec<_> = self.unknown_names.iter().collect();
            names.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let list: Vec<String> = names
                .iter()
                .take(10)
                .map(|(n, c)| format!("{n} ({c})"))
                .collect();
            out.warn(format!(
                "validate: {} value(s) of attributes not in the schema: {}",
                self.unknown_total,
                list.join(", ")
            ));
        }
        Ok(())
    }
}

/// The sort-key types a schema gives (`order` compares `int` columns numerically), by
/// lower-case attribute name.
pub fn key_types(schema: &Schema) -> HashMap<String, super::view::KeyType> {
    schema
        .entries
        .iter()
        .filter(|e| e.data_type.is_some())
        .map(|e| {
            (
                e.soif_attribute.to_ascii_lowercase(),
                super::view::KeyType::from_data_type(e.data_type().as_str()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks() {
        assert_eq!(Check::of(&DataType::parse("int")).problem(b" 42 "), None);
        assert!(Check::of(&DataType::parse("int"))
            .problem(b"12 KB")
            .is_some());
        assert_eq!(Check::of(&DataType::parse("serial")).problem(b"+7"), None);
        assert!(Check::of(&DataType::parse("float"))
            .problem(b"NaN")
            .is_some());
        assert_eq!(
            Check::of(&DataType::parse("date")).problem(b"774988159"),
            None
        );
        assert!(Check::of(&DataType::parse("date"))
            .problem(b"soon")
            .is_some());
        assert_eq!(Check::of(&DataType::parse("blob")).problem(b"\0\xff"), None);
        assert_eq!(
            Check::of(&DataType::parse("varchar(3)")).problem(b"abc"),
            None
        );
        assert!(Check::of(&DataType::parse("varchar(3)"))
            .problem(b"abcd")
            .is_some());
        assert!(Check::of(&DataType::parse("bigint"))
            .problem(b"x")
            .is_some());
        assert!(Check::of(&DataType::parse("boolean"))
            .problem(b"maybe")
            .is_some());
        assert_eq!(
            Check::of(&DataType::parse("money")),
            Check::Unknown("money".into())
        );
    }

    #[test]
    fn shown_values_are_short_and_printable() {
        assert_eq!(shown(b"a\nb"), "a b");
        assert_eq!(shown(&[b'x'; 100]).chars().count(), 61);
    }
}
