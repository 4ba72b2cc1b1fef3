//! The transforms, one module each, built from `-t NAME[:ARGS]` specs.
//!
//! [`build`] turns a spec as written on the command line (or in a pipeline file's
//! `transforms` list) into a boxed [`Transform`]; [`NAMES`] lists them for `--help`.
//! The user's guide, with an example of each, is `docs/transforms.md`.
//!
//! ```
//! use soif_pipeline::transforms::{build, TransformContext};
//! use soif_pipeline::{Collect, Transform};
//! use soif_codecs::Record;
//!
//! let mut t = build("match:author=garcia", &TransformContext::default()).unwrap();
//! let mut out = Collect::default();
//! t.apply(Record::new("DOCUMENT", "-").with("Author-1", "Jose Garcia y Montes"), &mut out).unwrap();
//! t.finish(&mut out).unwrap();
//! assert_eq!(out.records.len(), 1);
//! ```
//!
//! | spec                               | module         | what                                  |
//! |------------------------------------|----------------|---------------------------------------|
//! | `collapse`, `expand`               | [`collapse`]   | `Author-N` ⇄ lists, `Embed<n>-X` ⇄ parts |
//! | `dc[:MAPPING.toml]`                | [`dc`]         | RFC 2655 App. C Dublin-Core crosswalk |
//! | `validate[:SCHEMA][,unknown=…]`    | [`validate`]   | RDM `@SCHEMA` checks                  |
//! | `select:A,B`, `order:-K,+K`, `hits:N` / `hits:M..N` | [`view`] | the RDM view            |
//! | `since:DATE`                       | [`scope`]      | the RDM gatherer scope                |
//! | `match:Attr=value`                 | [`matching`]   | RFC 2655 §4 matching                  |
//! | `dedupe[:url\|ATTR]`               | [`dedupe`]     | first record per key                  |
//! | `remap:FILE.vrl`                   | [`remap`]      | a program in VRL (Vector Remap Language) |
//!
//! Shared helper: [`seen`] (a bounded set of fingerprints). The record rules the
//! transforms apply — attribute names, dates, collapsing, the Dublin Core crosswalk,
//! `@SCHEMA` files — live below the engine, in [`soif_codecs::rules`], where the sinks,
//! sources and server use the same ones; `order` keeps its runs as
//! [`soif_codecs::packed`] records.
//!
//! The transforms never hold an unbounded number of records: `order` spills sorted runs
//! to temporary files, `dedupe` and `validate`'s uniqueness check keep 128-bit
//! fingerprints and spill those (see [`seen`]). Both use [`TransformContext::memory_budget`]
//! and [`TransformContext::temp_dir`].

pub mod collapse;
pub mod dc;
pub mod dedupe;
pub mod files;
pub mod matching;
pub mod remap;
pub mod scope;
pub mod seen;
pub mod validate;
pub mod view;

pub use files::{FileMap, Files};

use crate::{Error, Transform};
use std::collections::HashMap;
use std::path::PathBuf;

/// What the transforms may need from the run's configuration (the error policy stays
/// with the engine: transforms only [`crate::Emit::reject`]).
#[derive(Debug, Clone)]
pub struct TransformContext {
    /// Where `order` and `dedupe` put their temporary files (default: the system's).
    pub temp_dir: Option<PathBuf>,
    /// Bytes of memory `order` (records held before a sorted run is spilled) and
    /// `dedupe` / uniqueness (fingerprints held before they are spilled) may each use.
    pub memory_budget: usize,
    /// The RDM `@SCHEMA` file (`--schema`): used by `validate` when its argument names no
    /// schema, and by `order` to compare `int` attributes numerically.
    pub schema: Option<PathBuf>,
    /// The lookup tables (`--table NAME=FILE.csv`, a pipeline file's `[tables]`) that
    /// `remap` programs search; loaded once, shared by every clone.
    pub tables: remap::tables::Tables,
    /// How the transforms read the files their specs name (the disk, unless the chain
    /// was built elsewhere first: see [`Files`]).
    pub files: Files,
}

/// The default memory budget per transform: 64 MiB.
pub const DEFAULT_MEMORY_BUDGET: usize = 64 << 20;

impl Default for TransformContext {
    fn default() -> Self {
        TransformContext {
            temp_dir: None,
            memory_budget: DEFAULT_MEMORY_BUDGET,
            schema: None,
            tables: remap::tables::Tables::default(),
            files: Files::default(),
        }
    }
}

/// Every transform: name and one line of help, in the order of docs/transforms.md.
pub const NAMES: &[(&str, &str)] = &[
    (
        "collapse",
        "Author-1..N -> Author: [..], Embed<n>-X -> Embed: [{X: ..}]",
    ),
    (
        "expand",
        "the inverse of collapse: lists and parts back to -N / <n>- names",
    ),
    (
        "dc",
        "dc[:MAPPING.toml]  crosswalk to the RFC 2655 App. C Dublin-Core template",
    ),
    (
        "validate",
        "validate[:SCHEMA.soif][,unknown=allow|warn|reject]  check against an RDM @SCHEMA",
    ),
    (
        "select",
        "select:URL,Title,...  keep these attributes (RDM View-Attributes)",
    ),
    (
        "order",
        "order:-Score,+Title  stable sort, spills to disk beyond the memory budget (RDM View-Order)",
    ),
    (
        "hits",
        "hits:10 | hits:11..20  keep a range of records (RDM View-Hits)",
    ),
    (
        "since",
        "since:DATE  records modified at or after DATE (RDM gatherer scope)",
    ),
    (
        "match",
        "match:Attr=value  case-insensitive substring match, Author matches Author-1 (RFC 2655 4)",
    ),
    (
        "dedupe",
        "dedupe[:url|ATTR]  drop later records with the same URL (default) or attribute",
    ),
    (
        "remap",
        "remap:FILE.vrl  run a VRL program on each record (--table NAME=FILE.csv for lookups)",
    ),
];

/// A transform as a pipeline file (or another front end) gives it: a spec as on the
/// command line, or a `remap` program held inline.
///
/// In TOML, `transforms = ["collapse", { remap = '''.attributes.x = "y"''' }]`: a string
/// is a spec, a table with the one key `remap` a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransformSpec {
    /// `NAME[:ARGS]`, as after `-t`.
    Spec(String),
    /// A VRL program; `origin` names it in messages (where the pipeline file holds it).
    Remap { source: String, origin: String },
}

impl TransformSpec {
    /// Builds the transform (see [`build`]).
    pub fn build(&self, ctx: &TransformContext) -> Result<Box<dyn Transform>, Error> {
        match self {
            TransformSpec::Spec(spec) => build(spec, ctx),
            TransformSpec::Remap { source, origin } => {
                Ok(Box::new(remap::Remap::new(source, origin, &ctx.tables)?))
            }
        }
    }
}

impl From<String> for TransformSpec {
    fn from(spec: String) -> Self {
        TransformSpec::Spec(spec)
    }
}

impl From<&str> for TransformSpec {
    fn from(spec: &str) -> Self {
        TransformSpec::Spec(spec.to_string())
    }
}

impl std::fmt::Display for TransformSpec {
    /// The spec, or `remap` and where the program is.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransformSpec::Spec(spec) => f.write_str(spec),
            TransformSpec::Remap { origin, .. } => write!(f, "remap ({origin})"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for TransformSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Form {
            Spec(String),
            Inline(Inline),
        }
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Inline {
            remap: String,
        }
        match Form::deserialize(d) {
            Ok(Form::Spec(spec)) => Ok(TransformSpec::Spec(spec)),
            Ok(Form::Inline(Inline { remap })) => Ok(TransformSpec::Remap {
                source: remap,
                origin: "an inline program".to_string(),
            }),
            Err(_) => Err(serde::de::Error::custom(
                "a transform is a spec such as \"collapse\" or \"remap:map.vrl\", or an inline program { remap = \"...\" }",
            )),
        }
    }
}

/// The transforms whose output depends on every record before it in the whole stream
/// (`order` sorts it, `hits` counts it, `dedupe` remembers it): a reader that runs the
/// chain over parts of the input separately (Spark's partitions) would not give the
/// command line's records, so it refuses them (docs/spark.md#transforms).
pub const WHOLE_STREAM: &[&str] = &["order", "hits", "dedupe"];

/// The transform's name in a spec `NAME[:ARGS]`, in lower case (`Select:URL` → `select`).
pub fn spec_name(spec: &str) -> String {
    spec.split_once(':')
        .map_or(spec, |(n, _)| n)
        .trim()
        .to_ascii_lowercase()
}

/// Builds a transform from a spec `NAME[:ARGS]` (`collapse`, `match:Author=Garcia`, …).
/// A bad name or argument is an [`Error::Config`] saying what was expected.
pub fn build(spec: &str, ctx: &TransformContext) -> Result<Box<dyn Transform>, Error> {
    let (name, args) = match spec.split_once(':') {
        Some((n, a)) => (n.trim(), Some(a)),
        None => (spec.trim(), None),
    };
    let no_args = |t: Box<dyn Transform>| -> Result<Box<dyn Transform>, Error> {
        match args {
            Some(a) if !a.trim().is_empty() => Err(Error::Config(format!(
                "transform `{name}` takes no arguments (got `{a}`)"
            ))),
            _ => Ok(t),
        }
    };
    match name.to_ascii_lowercase().as_str() {
        "collapse" => no_args(Box::<collapse::Collapse>::default()),
        "expand" => no_args(Box::new(collapse::Expand)),
        "dc" => Ok(Box::new(dc::Dc::new(args, &ctx.files)?)),
        "validate" => Ok(Box::new(validate::Validate::parse(
            args,
            ctx.schema.as_deref(),
            ctx.memory_budget,
            ctx.temp_dir.clone(),
            &ctx.files,
        )?)),
        "select" => Ok(Box::new(view::Select::parse(required(
            name,
            args,
            "URL,Title",
        )?)?)),
        "order" => Ok(Box::new(view::Order::parse(
            required(name, args, "-Score,+Title")?,
            &schema_key_types(ctx)?,
            ctx.memory_budget,
            ctx.temp_dir.clone(),
        )?)),
        "hits" => Ok(Box::new(view::Hits::parse(required(name, args, "10")?)?)),
        "since" => Ok(Box::new(scope::Since::parse(required(
            name,
            args,
            "Sun, 06 Nov 1994 08:49:37 GMT",
        )?)?)),
        "match" => Ok(Box::new(matching::Match::parse(required(
            name,
            args,
            "Author=Garcia",
        )?)?)),
        "dedupe" => Ok(Box::new(dedupe::Dedupe::new(
            args.map(str::trim)
                .filter(|a| !a.is_empty())
                .unwrap_or("url"),
            ctx.memory_budget,
            ctx.temp_dir.clone(),
        )?)),
        "remap" => Ok(Box::new(remap::Remap::from_file(
            std::path::Path::new(required(name, args, "FILE.vrl")?),
            &ctx.files,
            &ctx.tables,
        )?)),
        _ => Err(Error::Config(format!(
            "unknown transform `{name}` in `-t {spec}` (known: {})",
            NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// The sort-key types the schema (`ctx.schema`) gives, by lower-case attribute name.
fn schema_key_types(ctx: &TransformContext) -> Result<HashMap<String, view::KeyType>, Error> {
    match &ctx.schema {
        Some(path) => Ok(validate::key_types(&ctx.files.schema(path)?)),
        None => Ok(HashMap::new()),
    }
}

/// The argument of a transform that needs one, or a config error naming the form.
fn required<'a>(name: &str, args: Option<&'a str>, form: &str) -> Result<&'a str, Error> {
    match args.map(str::trim) {
        Some(a) if !a.is_empty() => Ok(a),
        _ => Err(Error::Config(format!(
            "transform `{name}` needs an argument: `-t {name}:{form}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transform_is_a_spec_or_an_inline_program() {
        #[derive(serde::Deserialize)]
        struct File {
            transforms: Vec<TransformSpec>,
        }
        let parsed: Result<File, _> =
            toml::from_str("transforms = [\"collapse\", { remap = '.x = 1' }]");
        let specs = parsed.map(|f| f.transforms).ok();
        assert_eq!(
            specs,
            Some(vec![
                TransformSpec::from("collapse"),
                TransformSpec::Remap {
                    source: ".x = 1".into(),
                    origin: "an inline program".into()
                }
            ])
        );
        let bad: Result<File, _> = toml::from_str("transforms = [{ remapp = '.' }]");
        assert!(bad.is_err_and(|e| e.to_string().contains("an inline program { remap")));
        let built = TransformSpec::Remap {
            source: ".attributes.x = 1".into(),
            origin: "t".into(),
        }
        .build(&TransformContext::default());
        assert!(built.is_ok_and(|t| t.name() == "remap"));
    }

    #[test]
    fn unknown_and_bad_specs_are_config_errors() {
        let ctx = TransformContext::default();
        let e = build("frobnicate", &ctx).err().map(|e| e.to_string());
        assert!(e
            .as_deref()
            .is_some_and(|m| m.contains("unknown transform `frobnicate`")));
        let e = build("collapse:x", &ctx).err();
        assert!(e.is_some_and(|e| e.is_config()));
        assert!(build("collapse", &ctx).is_ok());
        assert!(build("expand:", &ctx).is_ok());
    }
}
