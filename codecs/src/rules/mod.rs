//! Record rules: what a record's values and names mean, shared by the engine's
//! transforms, the sources, the sinks, the catalog store and the server, so that each rule
//! has one home below all of them.
//!
//! - [`text`]: values as text, JSON and XML (invalid UTF-8, `--charset latin1`, XML's
//!   forbidden characters) — the policy every text output shares;
//! - [`dates`]: every date form the data uses, to ISO 8601;
//! - [`modified`]: a record's modification date (the `since` transform, `since` searches
//!   and the catalog's `year` facet);
//! - [`names`]: attribute names — the `-N` multi-value suffix, `Embed<n>-` parts, matching;
//! - [`collapse`]: between flat names (`Author-1`, `Author-2`) and lists / nested parts;
//! - [`dc`]: the Dublin Core element table and the crosswalk to the `Dublin-Core` template;
//! - [`schema`]: reading an RDM `@SCHEMA` file;
//! - [`file`]: reading such a file whole, within a bound.

pub mod collapse;
pub mod dates;
pub mod dc;
pub mod file;
pub mod modified;
pub mod names;
pub mod schema;
pub mod text;
