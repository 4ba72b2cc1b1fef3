//! `@SCHEMA`: a schema description ([`Schema`]), its per-attribute entries
//! ([`SchemaEntry`]) and column types ([`DataType`]).
//!
//! A schema is one SOIF object. Schema-wide attributes (`Schema-Definition-Language-Version`,
//! `Schema-Name`, `Last-Modified`, `Number-of-Entries`, `Maintainer`; the URL is the
//! object's URL) come first; then each entry's attributes carry the entry's number:
//! `SOIF-Attribute-2`, `Index-Attribute-2`, `Description-2`. [`Schema::from_record`] groups
//! them per number. The note writes the suffix as optional (`SOIF-Attribute[-#]`), so a
//! schema with one unnumbered entry is read too.
//!
//! Defaults are the note's: `Data-Type` varchar, `Content-Type` text/plain, not unique, not
//! indexed, surfaced to the user, not in a default view, not in the root table. An entry
//! keeps whether an attribute was written (`Option`), so writing it back reproduces the
//! object; the accessor methods ([`SchemaEntry::data_type`], …) apply the defaults.
//!
//! Two liberties, both because the note's own example needs them: `Schema-Name` and the
//! URL are listed as required but the example has neither (`@SCHEMA { - …`), so both are
//! optional here; `Schema-Definition-Language-Version` defaults to `1.0`.
//!
//! ```
//! use soif_codecs::rdm::{DataType, Schema};
//! use soif_codecs::Record;
//! let r = Record::new("SCHEMA", "-")
//!     .with("Schema-Definition-Language-Version", "1.0")
//!     .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
//!     .with("SOIF-Attribute-1", "Title")
//!     .with("SOIF-Attribute-2", "Abstract")
//!     .with("Data-Type-2", "blob");
//! let s = Schema::from_record(&r).unwrap();
//! assert_eq!(s.entry("title").unwrap().data_type(), DataType::Varchar);
//! assert_eq!(s.entry("Abstract").unwrap().data_type(), DataType::Blob);
//! ```

use super::fields::{
    check_template, keyword, new_record, parse_flag, parse_u32, plain, set_once, text, url_of,
};
use super::query::{SchemaScope, ViewAttributes};
use super::{RdmDate, RdmError};
use crate::record::{Attribute, Record};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// The template type of a schema description object.
pub const SCHEMA: &str = "SCHEMA";

/// A column's data type ("standard RDBMS data types like varchar, date, blob, int, serial").
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum DataType {
    /// `varchar`, the note's default.
    #[default]
    Varchar,
    /// `char`.
    Char,
    /// `text`.
    Text,
    /// `int` or `integer`.
    Int,
    /// `serial`.
    Serial,
    /// `float`, `real` or `double`.
    Float,
    /// `date`.
    Date,
    /// `datetime`.
    DateTime,
    /// `blob`.
    Blob,
    /// Anything else (e.g. `varchar(255)`, `money`), as written.
    Other(String),
}

impl DataType {
    /// Parses a type name ignoring ASCII case; unknown names become [`Other`](Self::Other).
    pub fn parse(s: &str) -> DataType {
        let t = s.trim();
        match t.to_ascii_lowercase().as_str() {
            "varchar" => DataType::Varchar,
            "char" => DataType::Char,
            "text" => DataType::Text,
            "int" | "integer" => DataType::Int,
            "serial" => DataType::Serial,
            "float" | "real" | "double" => DataType::Float,
            "date" => DataType::Date,
            "datetime" => DataType::DateTime,
            "blob" => DataType::Blob,
            _ => DataType::Other(t.to_string()),
        }
    }

    /// The canonical lower-case name (`int` for `integer`, `float` for `real`/`double`).
    pub fn as_str(&self) -> &str {
        match self {
            DataType::Varchar => "varchar",
            DataType::Char => "char",
            DataType::Text => "text",
            DataType::Int => "int",
            DataType::Serial => "serial",
            DataType::Float => "float",
            DataType::Date => "date",
            DataType::DateTime => "datetime",
            DataType::Blob => "blob",
            DataType::Other(s) => s,
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DataType {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(DataType::parse(s))
    }
}

/// One attribute's description in a schema (the `…-N` attributes of one number N).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SchemaEntry {
    /// `SOIF-Attribute`: the attribute's name in the SOIF stream (the lookup key).
    pub soif_attribute: String,
    /// `Description`.
    pub description: Option<String>,
    /// `Data-Type` (default varchar: see [`SchemaEntry::data_type`]).
    pub data_type: Option<DataType>,
    /// `Content-Type` (default text/plain).
    pub content_type: Option<String>,
    /// `Enforce-Uniqueness` (0/1; default not unique).
    pub enforce_uniqueness: Option<bool>,
    /// `Index-Attribute`: 0 = not indexed, 1 = first, 2 = second …
    pub index_attribute: Option<u32>,
    /// `Is-Internal` (0 = surface to user, 1 = internal use only).
    pub is_internal: Option<bool>,
    /// `Default-View-Order`: 0 = not present, else position in the default order.
    pub default_view_order: Option<u32>,
    /// `Default-View-Attribute`: 0 = not present, else position in the default view.
    pub default_view_attribute: Option<u32>,
    /// `Table-Name`.
    pub table_name: Option<String>,
    /// `Column-Name`.
    pub column_name: Option<String>,
    /// `System-Table-Name`.
    pub system_table_name: Option<String>,
    /// `System-Column-Name`.
    pub system_column_name: Option<String>,
    /// `Foreign-Key-System-Table-Name`.
    pub foreign_key_system_table_name: Option<String>,
    /// `Foreign-Key-System-Column-Name`.
    pub foreign_key_system_column_name: Option<String>,
    /// `In-Root-Table` (0/1; default not in root table).
    pub in_root_table: Option<bool>,
}

/// The per-entry attribute names, in the order [`Schema::to_record`] writes them (the
/// note's table order).
pub const ENTRY_ATTRIBUTES: [&str; 16] = [
    "SOIF-Attribute",
    "Description",
    "Data-Type",
    "Content-Type",
    "Enforce-Uniqueness",
    "Index-Attribute",
    "Is-Internal",
    "Default-View-Order",
    "Default-View-Attribute",
    "Table-Name",
    "Column-Name",
    "System-Table-Name",
    "System-Column-Name",
    "Foreign-Key-System-Table-Name",
    "Foreign-Key-System-Column-Name",
    "In-Root-Table",
];

/// An entry attribute's value, typed.
enum FieldValue {
    Text(String),
    Type(DataType),
    Flag(bool),
    Number(u32),
}

impl FieldValue {
    fn render(&self) -> String {
        match self {
            FieldValue::Text(s) => s.clone(),
            FieldValue::Type(t) => t.to_string(),
            FieldValue::Flag(b) => u8::from(*b).to_string(),
            FieldValue::Number(n) => n.to_string(),
        }
    }
}

impl SchemaEntry {
    /// An entry for this SOIF attribute, everything else default.
    pub fn new(soif_attribute: impl Into<String>) -> SchemaEntry {
        SchemaEntry {
            soif_attribute: soif_attribute.into(),
            ..SchemaEntry::default()
        }
    }

    /// The data type, varchar when not given.
    pub fn data_type(&self) -> DataType {
        self.data_type.clone().unwrap_or_default()
    }

    /// The content type, `text/plain` when not given.
    pub fn content_type(&self) -> &str {
        self.content_type.as_deref().unwrap_or("text/plain")
    }

    /// True when values must be unique.
    pub fn is_unique(&self) -> bool {
        self.enforce_uniqueness.unwrap_or(false)
    }

    /// The index priority (1 = first), `None` when not indexed.
    pub fn index_priority(&self) -> Option<u32> {
        self.index_attribute.filter(|&n| n > 0)
    }

    /// True when the attribute is for internal use only.
    pub fn internal(&self) -> bool {
        self.is_internal.unwrap_or(false)
    }

    /// Position in the default view's order, `None` when not part of it.
    pub fn default_order_position(&self) -> Option<u32> {
        self.default_view_order.filter(|&n| n > 0)
    }

    /// Position in the default view's attributes, `None` when not part of it.
    pub fn default_view_position(&self) -> Option<u32> {
        self.default_view_attribute.filter(|&n| n > 0)
    }

    /// True when the attribute lives in the root table.
    pub fn in_root(&self) -> bool {
        self.in_root_table.unwrap_or(false)
    }

    /// The entry's attributes that are set, in [`ENTRY_ATTRIBUTES`] order (unnumbered names).
    fn fields(&self) -> Vec<(&'static str, FieldValue)> {
        let text = |v: &Option<String>| v.clone().map(FieldValue::Text);
        let candidates = [
            Some(FieldValue::Text(self.soif_attribute.clone())),
            text(&self.description),
            self.data_type.clone().map(FieldValue::Type),
            text(&self.content_type),
            self.enforce_uniqueness.map(FieldValue::Flag),
            self.index_attribute.map(FieldValue::Number),
            self.is_internal.map(FieldValue::Flag),
            self.default_view_order.map(FieldValue::Number),
            self.default_view_attribute.map(FieldValue::Number),
            text(&self.table_name),
            text(&self.column_name),
            text(&self.system_table_name),
            text(&self.system_column_name),
            text(&self.foreign_key_system_table_name),
            text(&self.foreign_key_system_column_name),
            self.in_root_table.map(FieldValue::Flag),
        ];
        ENTRY_ATTRIBUTES
            .into_iter()
            .zip(candidates)
            .filter_map(|(name, v)| v.map(|v| (name, v)))
            .collect()
    }

    /// Whether the entry defines the schema attribute `name` (schema-basic's
    /// `defined NAME`). The position attributes (`Index-Attribute`, `Default-View-Order`,
    /// `Default-View-Attribute`) count as undefined at 0, the note's "not present".
    /// `None` when `name` is not a schema entry attribute.
    pub fn defines(&self, name: &str) -> Option<bool> {
        let idx = entry_attribute_index(name)?;
        let positive = |v: Option<u32>| v.is_some_and(|n| n > 0);
        Some(match idx {
            5 => positive(self.index_attribute),
            7 => positive(self.default_view_order),
            8 => positive(self.default_view_attribute),
            _ => self
                .fields()
                .iter()
                .any(|(n, _)| *n == ENTRY_ATTRIBUTES[idx]),
        })
    }

    /// Clears every attribute not in `view` (`SOIF-Attribute`, the entry's key, is kept
    /// always): schema-basic's `View-Attributes: soif-attribute,default-view-attribute`.
    pub fn project(&mut self, view: &ViewAttributes) {
        let keep = |name: &str| view.contains(name);
        macro_rules! keep_or_clear {
            ($($field:ident => $name:literal),* $(,)?) => {
                $(if !keep($name) { self.$field = None; })*
            };
        }
        keep_or_clear!(
            description => "Description",
            data_type => "Data-Type",
            content_type => "Content-Type",
            enforce_uniqueness => "Enforce-Uniqueness",
            index_attribute => "Index-Attribute",
            is_internal => "Is-Internal",
            default_view_order => "Default-View-Order",
            default_view_attribute => "Default-View-Attribute",
            table_name => "Table-Name",
            column_name => "Column-Name",
            system_table_name => "System-Table-Name",
            system_column_name => "System-Column-Name",
            foreign_key_system_table_name => "Foreign-Key-System-Table-Name",
            foreign_key_system_column_name => "Foreign-Key-System-Column-Name",
            in_root_table => "In-Root-Table",
        );
    }

    /// Sets one entry attribute from its text.
    fn set(&mut self, idx: usize, attr: &Attribute) -> Result<(), RdmError> {
        // The attribute's full name (with its number) goes into error messages.
        let name = attr.name_str().into_owned();
        let t = || text(attr);
        match idx {
            0 => {
                if !self.soif_attribute.is_empty() {
                    return Err(RdmError::Duplicate {
                        attribute: name,
                        position: None,
                    });
                }
                let v = keyword(attr)?;
                if v.is_empty() || v.contains(char::is_whitespace) {
                    return Err(RdmError::invalid(&name, v, "not an attribute name"));
                }
                self.soif_attribute = v.to_string();
                Ok(())
            }
            1 => set_once(&mut self.description, attr, t()?),
            2 => set_once(&mut self.data_type, attr, DataType::parse(keyword(attr)?)),
            3 => set_once(&mut self.content_type, attr, keyword(attr)?.to_string()),
            4 => set_once(
                &mut self.enforce_uniqueness,
                attr,
                parse_flag(&name, keyword(attr)?)?,
            ),
            5 => set_once(
                &mut self.index_attribute,
                attr,
                parse_u32(&name, keyword(attr)?)?,
            ),
            6 => set_once(
                &mut self.is_internal,
                attr,
                parse_flag(&name, keyword(attr)?)?,
            ),
            7 => set_once(
                &mut self.default_view_order,
                attr,
                parse_u32(&name, keyword(attr)?)?,
            ),
            8 => set_once(
                &mut self.default_view_attribute,
                attr,
                parse_u32(&name, keyword(attr)?)?,
            ),
            9 => set_once(&mut self.table_name, attr, keyword(attr)?.to_string()),
            10 => set_once(&mut self.column_name, attr, keyword(attr)?.to_string()),
            11 => set_once(
                &mut self.system_table_name,
                attr,
                keyword(attr)?.to_string(),
            ),
            12 => set_once(
                &mut self.system_column_name,
                attr,
                keyword(attr)?.to_string(),
            ),
            13 => set_once(
                &mut self.foreign_key_system_table_name,
                attr,
                keyword(attr)?.to_string(),
            ),
            14 => set_once(
                &mut self.foreign_key_system_column_name,
                attr,
                keyword(attr)?.to_string(),
            ),
            _ => set_once(
                &mut self.in_root_table,
                attr,
                parse_flag(&name, keyword(attr)?)?,
            ),
        }
    }
}

/// Index into [`ENTRY_ATTRIBUTES`] of an (unnumbered) name, ignoring ASCII case.
fn entry_attribute_index(name: &str) -> Option<usize> {
    ENTRY_ATTRIBUTES
        .iter()
        .position(|a| a.eq_ignore_ascii_case(name))
}

/// Splits `Data-Type-3` into (`Data-Type`, Some(3)); names without a numeric suffix are
/// returned whole with `None`.
fn split_number(name: &str) -> (&str, Option<u32>) {
    if let Some((base, digits)) = name.rsplit_once('-') {
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(n) = digits.parse::<u32>() {
                return (base, Some(n));
            }
        }
    }
    (name, None)
}

/// An `@SCHEMA` object: a schema description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// `Schema-Definition-Language-Version` as written (default `1.0`: see
    /// [`Schema::language_version`]).
    pub definition_language_version: Option<String>,
    /// `Schema-Name`: the template type of the RDs this schema describes (e.g. `DOCUMENT`).
    pub name: Option<String>,
    /// The object's URL: where the schema definition can be retrieved (`None` for `-`).
    pub url: Option<String>,
    /// `Last-Modified` (required).
    pub last_modified: RdmDate,
    /// `Number-of-Entries`; checked against the entries when reading.
    pub number_of_entries: Option<u32>,
    /// `Maintainer`: e-mail address.
    pub maintainer: Option<String>,
    /// The entries, in the order of their numbers.
    pub entries: Vec<SchemaEntry>,
    /// Attributes the note does not define, kept in order.
    pub extra: Vec<Attribute>,
}

impl Schema {
    /// An empty schema modified at `last_modified`.
    pub fn new(last_modified: RdmDate) -> Schema {
        Schema {
            definition_language_version: None,
            name: None,
            url: None,
            last_modified,
            number_of_entries: None,
            maintainer: None,
            entries: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// The schema definition language version, `1.0` when not given.
    pub fn language_version(&self) -> &str {
        self.definition_language_version.as_deref().unwrap_or("1.0")
    }

    /// The entry for a SOIF attribute name (ignoring ASCII case).
    pub fn entry(&self, soif_attribute: &str) -> Option<&SchemaEntry> {
        self.entries
            .iter()
            .find(|e| e.soif_attribute.eq_ignore_ascii_case(soif_attribute))
    }

    /// The entry that describes an attribute as it appears in a record: the exact name
    /// first, then — for RDM's multi-value convention (`title-1`, `title-2` are values of
    /// `title`) — the name without its `-N` suffix.
    pub fn entry_for(&self, record_attribute: &str) -> Option<&SchemaEntry> {
        self.entry(record_attribute)
            .or_else(|| match split_number(record_attribute) {
                (base, Some(_)) => self.entry(base),
                _ => None,
            })
    }

    /// The entries of the default view, in their `Default-View-Attribute` order.
    pub fn default_view(&self) -> Vec<&SchemaEntry> {
        let mut v: Vec<_> = self
            .entries
            .iter()
            .filter(|e| e.default_view_position().is_some())
            .collect();
        v.sort_by_key(|e| e.default_view_position());
        v
    }

    /// Schema-basic: the schema restricted to the entries that define `scope.defined`, with
    /// `Number-of-Entries` updated. An unknown attribute name is an error (it would
    /// silently select nothing).
    pub fn select(&self, scope: &SchemaScope) -> Result<Schema, RdmError> {
        if entry_attribute_index(&scope.defined).is_none() {
            return Err(RdmError::invalid(
                "Scope",
                &scope.to_string(),
                format!("{} is not a schema entry attribute", scope.defined),
            ));
        }
        let entries: Vec<SchemaEntry> = self
            .entries
            .iter()
            .filter(|e| e.defines(&scope.defined) == Some(true))
            .cloned()
            .collect();
        Ok(Schema {
            number_of_entries: Some(u32::try_from(entries.len()).unwrap_or(u32::MAX)),
            entries,
            ..self.clone()
        })
    }

    /// Applies a `View-Attributes` to every entry (see [`SchemaEntry::project`]).
    pub fn project(&mut self, view: &ViewAttributes) {
        self.entries.iter_mut().for_each(|e| e.project(view));
    }

    /// Reads an `@SCHEMA` object.
    pub fn from_record(record: &Record) -> Result<Schema, RdmError> {
        Self::read(record).map_err(|e| e.with_position(record.position.as_ref()))
    }

    fn read(record: &Record) -> Result<Schema, RdmError> {
        check_template(record, SCHEMA)?;
        let mut version = None;
        let mut name = None;
        let mut last_modified = None;
        let mut number_of_entries = None;
        let mut maintainer = None;
        let mut extra = Vec::new();
        // Entry number -> entry; unnumbered entry attributes are number 0. A BTreeMap
        // gives the numeric order, whatever order the attributes came in.
        let mut entries: BTreeMap<u32, SchemaEntry> = BTreeMap::new();
        for attr in &record.attributes {
            let full = attr.name_str();
            let (base, number) = split_number(&full);
            let lower = full.to_ascii_lowercase();
            match lower.as_str() {
                "schema-definition-language-version" => {
                    set_once(&mut version, attr, keyword(attr)?.to_string())?
                }
                "schema-name" => set_once(&mut name, attr, keyword(attr)?.to_string())?,
                "last-modified" => {
                    let v = keyword(attr)?;
                    let d = RdmDate::parse(v)
                        .map_err(|e| RdmError::invalid("Last-Modified", v, e.to_string()))?;
                    set_once(&mut last_modified, attr, d)?
                }
                "number-of-entries" => set_once(
                    &mut number_of_entries,
                    attr,
                    parse_u32("Number-of-Entries", keyword(attr)?)?,
                )?,
                "maintainer" => set_once(&mut maintainer, attr, text(attr)?)?,
                _ => match entry_attribute_index(base) {
                    Some(idx) => {
                        plain(attr)?;
                        entries
                            .entry(number.unwrap_or(0))
                            .or_default()
                            .set(idx, attr)?;
                    }
                    None => extra.push(attr.clone()),
                },
            }
        }
        let mut list = Vec::with_capacity(entries.len());
        for (n, entry) in entries {
            if entry.soif_attribute.is_empty() {
                let attribute = if n == 0 {
                    "SOIF-Attribute".to_string()
                } else {
                    format!("SOIF-Attribute-{n}")
                };
                return Err(RdmError::Missing {
                    template: SCHEMA,
                    attribute,
                    position: None,
                });
            }
            // "The SOIF-Attribute names must be unique within a single schema description."
            if list
                .iter()
                .any(|e: &SchemaEntry| e.soif_attribute.eq_ignore_ascii_case(&entry.soif_attribute))
            {
                return Err(RdmError::invalid(
                    &format!("SOIF-Attribute-{n}"),
                    &entry.soif_attribute,
                    "SOIF-Attribute names must be unique within a schema",
                ));
            }
            list.push(entry);
        }
        if let Some(declared) = number_of_entries {
            if declared as usize != list.len() {
                return Err(RdmError::invalid(
                    "Number-of-Entries",
                    &declared.to_string(),
                    format!("the schema has {} entries", list.len()),
                ));
            }
        }
        Ok(Schema {
            definition_language_version: version,
            name,
            url: url_of(record),
            last_modified: last_modified
                .ok_or_else(|| RdmError::missing(SCHEMA, "Last-Modified"))?,
            number_of_entries,
            maintainer,
            entries: list,
            extra,
        })
    }

    /// Writes the schema back: schema-wide attributes, then each entry numbered from 1 in
    /// [`ENTRY_ATTRIBUTES`] order, then the extra attributes.
    pub fn to_record(&self) -> Record {
        let mut r = new_record(SCHEMA, self.url.as_deref());
        if let Some(v) = &self.definition_language_version {
            r.push("Schema-Definition-Language-Version", v.as_str());
        }
        if let Some(v) = &self.name {
            r.push("Schema-Name", v.as_str());
        }
        r.push("Last-Modified", self.last_modified.to_string());
        if let Some(n) = self.number_of_entries {
            r.push("Number-of-Entries", n.to_string());
        }
        if let Some(v) = &self.maintainer {
            r.push("Maintainer", v.as_str());
        }
        for (i, entry) in self.entries.iter().enumerate() {
            for (name, value) in entry.fields() {
                r.push(&format!("{name}-{}", i + 1), value.render());
            }
        }
        r.attributes.extend(self.extra.iter().cloned());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note_schema() -> Record {
        // The note's "very simple schema description", attribute for attribute.
        Record::new("SCHEMA", "-")
            .with("Schema-Definition-Language-Version", "1.0")
            .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
            .with("Number-of-Entries", "3")
            .with("Maintainer", "dhardy@netscape.com")
            .with("SOIF-Attribute-1", "Title")
            .with("Description-1", "Contains the Title of the resource.")
            .with("SOIF-Attribute-2", "Author")
            .with("Index-Attribute-2", "1")
            .with("Description-2", "Full name of the resource authors.")
            .with("SOIF-Attribute-3", "Abstract")
            .with("Data-Type-3", "blob")
            .with("Description-3", "Brief description of the resource.")
    }

    #[test]
    fn groups_numbered_entries_with_defaults() {
        let s = Schema::from_record(&note_schema()).unwrap();
        assert_eq!(s.language_version(), "1.0");
        assert_eq!(s.entries.len(), 3);
        let author = s.entry("author").unwrap();
        assert_eq!(author.index_priority(), Some(1));
        assert_eq!(author.data_type(), DataType::Varchar);
        assert_eq!(author.content_type(), "text/plain");
        assert!(!author.is_unique() && !author.internal() && !author.in_root());
        assert_eq!(s.entry("Abstract").unwrap().data_type(), DataType::Blob);
        assert_eq!(s.entry("Title").unwrap().index_priority(), None);
        assert_eq!(
            s.entry_for("Author-2").map(|e| e.soif_attribute.as_str()),
            Some("Author")
        );
        assert!(s.entry("Keywords").is_none());
    }

    #[test]
    fn round_trip_all_entry_attributes() {
        let mut s = Schema::from_record(&note_schema()).unwrap();
        s.name = Some("DOCUMENT".into());
        s.url = Some("http://example.com/schema.soif".into());
        s.extra.push(Attribute::new("X-Local", "kept"));
        s.entries.push(SchemaEntry {
            soif_attribute: "Id".into(),
            description: Some("Key".into()),
            data_type: Some(DataType::Serial),
            content_type: Some("text/plain".into()),
            enforce_uniqueness: Some(true),
            index_attribute: Some(2),
            is_internal: Some(true),
            default_view_order: Some(1),
            default_view_attribute: Some(0),
            table_name: Some("docs".into()),
            column_name: Some("id".into()),
            system_table_name: Some("t_docs".into()),
            system_column_name: Some("c_id".into()),
            foreign_key_system_table_name: Some("t_root".into()),
            foreign_key_system_column_name: Some("c_root".into()),
            in_root_table: Some(false),
        });
        s.number_of_entries = Some(4);
        let r = s.to_record();
        assert_eq!(r.get_str("Enforce-Uniqueness-4"), Some("1"));
        assert_eq!(
            r.get_str("Foreign-Key-System-Column-Name-4"),
            Some("c_root")
        );
        assert_eq!(Schema::from_record(&r), Ok(s));
    }

    #[test]
    fn numbers_may_come_in_any_order_and_gaps_renumber() {
        let r = Record::new("SCHEMA", "-")
            .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
            .with("Data-Type-10", "int")
            .with("SOIF-Attribute-10", "Size")
            .with("SOIF-Attribute-2", "Title");
        let s = Schema::from_record(&r).unwrap();
        let names: Vec<_> = s
            .entries
            .iter()
            .map(|e| e.soif_attribute.as_str())
            .collect();
        assert_eq!(names, ["Title", "Size"]);
        assert_eq!(s.to_record().get_str("Data-Type-2"), Some("int"));
    }

    #[test]
    fn errors_name_the_attribute() {
        let cases: [(Record, &str); 6] = [
            (
                note_schema().with("Data-Type-4", "int"),
                "missing required attribute SOIF-Attribute-4",
            ),
            (
                note_schema().with("SOIF-Attribute-4", "title"),
                "SOIF-Attribute names must be unique",
            ),
            (
                {
                    let mut r = note_schema();
                    r.set("Number-of-Entries", "4");
                    r
                },
                "invalid Number-of-Entries \"4\": the schema has 3 entries",
            ),
            (
                note_schema().with("Is-Internal-1", "yes"),
                "invalid Is-Internal-1 \"yes\": expected 0 or 1",
            ),
            (
                note_schema().with("Data-Type-3", "int"),
                "Data-Type-3 is given more than once",
            ),
            (
                {
                    let mut r = note_schema();
                    r.remove("Last-Modified");
                    r
                },
                "missing required attribute Last-Modified",
            ),
        ];
        for (record, expected) in cases {
            let e = Schema::from_record(&record).unwrap_err();
            assert!(e.to_string().contains(expected), "{e} / {expected}");
        }
    }

    #[test]
    fn unnumbered_single_entry() {
        let r = Record::new("SCHEMA", "-")
            .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
            .with("SOIF-Attribute", "Title")
            .with("Data-Type", "text");
        let s = Schema::from_record(&r).unwrap();
        assert_eq!(s.entries.len(), 1);
        assert_eq!(s.entries[0].data_type(), DataType::Text);
    }

    #[test]
    fn data_types() {
        assert_eq!(DataType::parse("INTEGER"), DataType::Int);
        assert_eq!(DataType::parse("double"), DataType::Float);
        assert_eq!(DataType::parse("datetime"), DataType::DateTime);
        assert_eq!(
            DataType::parse("varchar(255)"),
            DataType::Other("varchar(255)".into())
        );
        assert_eq!(DataType::Other("money".into()).to_string(), "money");
    }

    #[test]
    fn schema_basic_select_and_project() {
        let mut r = note_schema();
        r.set("Number-of-Entries", "4");
        let r = r
            .with("SOIF-Attribute-4", "URL")
            .with("Default-View-Attribute-4", "1")
            .with("Default-View-Attribute-1", "0");
        let s = Schema::from_record(&r).unwrap();
        let all = s
            .select(&SchemaScope::parse("defined SOIF-Attribute").unwrap())
            .unwrap();
        assert_eq!(all.entries.len(), 4);
        let mut dv = s
            .select(&SchemaScope::parse("defined Default-View-Attribute").unwrap())
            .unwrap();
        assert_eq!(dv.entries.len(), 1);
        assert_eq!(dv.entries[0].soif_attribute, "URL");
        assert_eq!(dv.number_of_entries, Some(1));
        // "View-Attributes{x}: soif-attribute,default-view-attribute"
        let mut with_desc = dv.clone();
        with_desc.entries[0].description = Some("gone after projection".into());
        with_desc.project(&ViewAttributes::parse("soif-attribute,default-view-attribute").unwrap());
        dv.project(&ViewAttributes::parse("soif-attribute,default-view-attribute").unwrap());
        assert_eq!(with_desc, dv);
        assert_eq!(dv.entries[0].default_view_attribute, Some(1));
        let idx = s
            .select(&SchemaScope::parse("defined index-attribute").unwrap())
            .unwrap();
        assert_eq!(idx.entries[0].soif_attribute, "Author");
        assert!(s
            .select(&SchemaScope::parse("defined Colour").unwrap())
            .is_err());
        assert_eq!(s.default_view().len(), 1);
    }
}
