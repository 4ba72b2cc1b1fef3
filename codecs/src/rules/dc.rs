//! The crosswalk to the RFC 2655 Appendix C `Dublin-Core` template (the `dc` transform's
//! rules, which the RDF/XML sink and the OAI-PMH provider and harvester share), and the
//! Dublin Core element table.
//!
//! The fifteen elements — TITLE, CREATOR, SUBJECT, DESCRIPTION, PUBLISHER, CONTRIBUTOR,
//! DATE, TYPE, FORMAT, IDENTIFIER, SOURCE, LANGUAGE, RELATION, COVERAGE, RIGHTS — are
//! filled by a table of rules kept as data: the default, `dc_default.toml` (shipped
//! inside the crate; read it for the exact rules), or a user's file with `-t
//! dc:mapping.toml`, which replaces the rules (and the Harvest-type table, if it has
//! one). In short, the default takes
//!
//! | element     | from                                                         |
//! |-------------|--------------------------------------------------------------|
//! | TITLE       | Title                                                        |
//! | CREATOR     | Author (all of `Author-1…N`), Creator                        |
//! | SUBJECT     | Keywords (also inside `Embed<n>-` parts), one value per line |
//! | DESCRIPTION | Abstract, Description                                        |
//! | DATE        | Last-Modification-Time, else Last-Modified, else Date — as ISO 8601 |
//! | FORMAT      | Content-Type, and Harvest's Type as a MIME type (PostScript → application/postscript; unknown names kept) |
//! | IDENTIFIER  | the record's URL                                             |
//! | RELATION    | URL-References, one per line                                 |
//!
//! and PUBLISHER, CONTRIBUTOR, TYPE, SOURCE, LANGUAGE, COVERAGE, RIGHTS from attributes
//! of (about) those names. Attributes no rule takes are left out. The output keeps the
//! record's URL, action and position; the elements come in the order above (Appendix C's
//! order), and an element with several values is a [`Value::List`] — the collapsed form,
//! which the JSON, SQLite and RDF/XML sinks write as arrays or repeated elements, and
//! [`Record::flattened`] writes as `CREATOR-1`, `CREATOR-2` in SOIF.
//!
//! A record that is already Dublin Core (template `Dublin-Core`, or `Dublin-Core-1` as in
//! the RFC's example) passes through with its `-N` names collapsed and its values as they
//! were.
//!
//! The RDF/XML sink calls [`crosswalk`] directly.
//!
//! ```
//! use soif_codecs::{Record, Value};
//! use soif_codecs::rules::dc::crosswalk;
//! let r = Record::new("FILE", "ftp://ecrc.de/pub/ECRC-93-10.ps.Z")
//!     .with("Type", "PostScript")
//!     .with("Last-Modification-Time", "774988159");
//! let dc = crosswalk(&r);
//! assert_eq!(dc.template_str(), "Dublin-Core");
//! assert_eq!(dc.get_str("FORMAT"), Some("application/postscript"));
//! assert_eq!(dc.get_str("DATE"), Some("1994-07-23T18:29:19Z"));
//! assert_eq!(dc.get_str("IDENTIFIER"), Some("ftp://ecrc.de/pub/ECRC-93-10.ps.Z"));
//! ```

use super::collapse::collapse;
use super::dates;
use super::names::{base_name, is_url, split_embed, split_suffix};
use crate::run_error::Error;
use crate::{Attribute, Record, Value};
use bytes::Bytes;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::OnceLock;

/// The default mapping (see the module docs).
pub const DEFAULT_MAPPING: &str = include_str!("dc_default.toml");

/// The Appendix C elements, in the appendix's order.
pub const ELEMENTS: [&str; 15] = [
    "TITLE",
    "CREATOR",
    "SUBJECT",
    "DESCRIPTION",
    "PUBLISHER",
    "CONTRIBUTOR",
    "DATE",
    "TYPE",
    "FORMAT",
    "IDENTIFIER",
    "SOURCE",
    "LANGUAGE",
    "RELATION",
    "COVERAGE",
    "RIGHTS",
];

/// The fifteen Simple Dublin Core elements as XML names (`dc:title`), in [`ELEMENTS`]' order.
pub const XML_ELEMENTS: [&str; 15] = [
    "title",
    "creator",
    "subject",
    "description",
    "publisher",
    "contributor",
    "date",
    "type",
    "format",
    "identifier",
    "source",
    "language",
    "relation",
    "coverage",
    "rights",
];

/// The Dublin Core element for an attribute of a `Dublin-Core` record, by its name
/// without a `-N` suffix (`TITLE` → `title`), ignoring ASCII case.
pub fn xml_element(base: &[u8]) -> Option<&'static str> {
    XML_ELEMENTS
        .iter()
        .find(|e| e.as_bytes().eq_ignore_ascii_case(base))
        .copied()
}

/// The template the crosswalk writes.
pub const TEMPLATE: &str = "Dublin-Core";

/// True for templates that already hold Dublin Core: `Dublin-Core`, `Dublin-Core-1`, …
/// (any case).
pub fn is_dublin_core(template: &[u8]) -> bool {
    base_name(template).eq_ignore_ascii_case(TEMPLATE.as_bytes())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MappingFile {
    template: Option<String>,
    #[serde(default)]
    rule: Vec<RuleFile>,
    mime: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    element: String,
    from: Vec<String>,
    #[serde(default)]
    embedded: bool,
    #[serde(default)]
    first: bool,
    split: Option<ValueSplit>,
    convert: Option<Convert>,
}

/// How a source value is cut into several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ValueSplit {
    /// One value per non-empty line (Harvest's Keywords, URL-References).
    Lines,
}

/// How a source value is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Convert {
    /// To ISO 8601 ([`dates`]).
    Date,
    /// A Harvest type name to a MIME type (the `[mime]` table).
    Mime,
}

/// One rule of a mapping: where an element's values come from.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The Dublin Core element filled.
    pub element: String,
    /// The source attributes (RFC 2655 §4 names; `URL` = the record's URL).
    pub from: Vec<String>,
    /// Also look inside `Embed<n>-` parts.
    pub embedded: bool,
    /// Only the first source in `from` that has values.
    pub first: bool,
    /// Cut values.
    pub split: Option<ValueSplit>,
    /// Rewrite values.
    pub convert: Option<Convert>,
}

/// A loaded crosswalk table.
#[derive(Debug, Clone)]
pub struct Crosswalk {
    template: Bytes,
    rules: Vec<Rule>,
    /// The elements in output order: Appendix C's, then others in rule order.
    elements: Vec<String>,
    /// The same names as attribute names (shared, not copied per record).
    element_names: Vec<Bytes>,
    /// For each rule, the index of its element in `elements`.
    slots: Vec<usize>,
    /// The sources that are attribute names, by the length of the name: `by_len[n]`
    /// holds each (rule, source) pair whose name is `n` bytes long, so that each
    /// attribute of a record is compared with the few sources of its length only.
    by_len: Vec<Vec<(usize, usize)>>,
    /// Lower-case Harvest type → MIME type.
    mime: HashMap<String, String>,
}

/// What the crosswalk could not convert, for warnings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The element.
    pub element: String,
    /// The value kept as it was.
    pub value: String,
    /// Why.
    pub reason: &'static str,
}

impl Crosswalk {
    /// Reads a mapping from TOML text (the shape of `dc_default.toml`). `origin` names it
    /// in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Crosswalk, Error> {
        let file: MappingFile = toml::from_str(text)
            .map_err(|e| Error::Config(format!("dc: mapping {origin}: {e}")))?;
        let mime_table = match file.mime {
            Some(m) => m,
            None if origin != "(default)" => Crosswalk::default_table()
                .mime
                .clone()
                .into_iter()
                .collect(),
            None => BTreeMap::new(),
        };
        let mut rules = Vec::with_capacity(file.rule.len());
        for r in file.rule {
            let element = r.element.trim().to_string();
            if element.is_empty()
                || element
                    .bytes()
                    .any(|b| b.is_ascii_whitespace() || b == b'{' || b == b'}')
            {
                return Err(Error::Config(format!(
                    "dc: mapping {origin}: `{}` is not a usable element name",
                    r.element
                )));
            }
            if r.from.iter().all(|f| f.trim().is_empty()) {
                return Err(Error::Config(format!(
                    "dc: mapping {origin}: the rule for {element} has an empty `from`"
                )));
            }
            rules.push(Rule {
                element,
                from: r.from.into_iter().map(|f| f.trim().to_string()).collect(),
                embedded: r.embedded,
                first: r.first,
                split: r.split,
                convert: r.convert,
            });
        }
        let mut elements: Vec<String> = ELEMENTS
            .iter()
            .filter(|e| rules.iter().any(|r| r.element.eq_ignore_ascii_case(e)))
            .map(|e| e.to_string())
            .collect();
        for r in &rules {
            if !elements.iter().any(|e| e.eq_ignore_ascii_case(&r.element)) {
                elements.push(r.element.clone());
            }
        }
        let element_names = elements
            .iter()
            .map(|e| match ELEMENTS.iter().find(|d| *d == e) {
                Some(d) => Bytes::from_static(d.as_bytes()),
                None => Bytes::copy_from_slice(e.as_bytes()),
            })
            .collect();
        let slots = rules
            .iter()
            .map(|r| {
                elements
                    .iter()
                    .position(|e| e.eq_ignore_ascii_case(&r.element))
                    .unwrap_or_default()
            })
            .collect();
        let mut by_len: Vec<Vec<(usize, usize)>> = Vec::new();
        for (ri, rule) in rules.iter().enumerate() {
            for (si, src) in rule.from.iter().enumerate() {
                if src.is_empty() || is_url(src.as_bytes()) {
                    continue;
                }
                if by_len.len() <= src.len() {
                    by_len.resize(src.len() + 1, Vec::new());
                }
                by_len[src.len()].push((ri, si));
            }
        }
        Ok(Crosswalk {
            template: Bytes::from(file.template.unwrap_or_else(|| TEMPLATE.to_string())),
            rules,
            elements,
            element_names,
            slots,
            by_len,
            mime: mime_table
                .into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect(),
        })
    }

    /// Reads a mapping file.
    pub fn from_file(path: &Path) -> Result<Crosswalk, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Config(format!(
                "dc: cannot read the mapping file {}: {e}",
                path.display()
            ))
        })?;
        Crosswalk::from_toml(&text, &path.display().to_string())
    }

    /// The default table (parsed once).
    pub fn default_table() -> &'static Crosswalk {
        static DEFAULT: OnceLock<Crosswalk> = OnceLock::new();
        DEFAULT.get_or_init(|| {
            // The text is part of the crate and a unit test parses it, so this cannot fail
            // at run time.
            Crosswalk::from_toml(DEFAULT_MAPPING, "(default)")
                .expect("the built-in dc_default.toml is valid (tested)")
        })
    }

    /// The rules, in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The MIME type for a Harvest type name, if the table has one.
    pub fn mime_type(&self, harvest_type: &str) -> Option<&str> {
        self.mime
            .get(&harvest_type.trim().to_ascii_lowercase())
            .map(String::as_str)
    }

    /// Maps one record; notes say which values could not be converted (they are kept).
    pub fn apply(&self, record: &Record) -> (Record, Vec<Note>) {
        if is_dublin_core(&record.template) {
            return (collapse(record), Vec::new());
        }
        let flat = record.flattened();
        let hits = self.hits(&flat.attributes);
        let mut notes = Vec::new();
        let mut values: Vec<Vec<Bytes>> = vec![Vec::new(); self.elements.len()];
        for (ri, rule) in self.rules.iter().enumerate() {
            let start = hits.partition_point(|h| h.0 < ri);
            let end = hits.partition_point(|h| h.0 <= ri);
            let slot = &mut values[self.slots[ri]];
            for v in self.source_values(rule, &flat, &hits[start..end]) {
                for piece in split(&v, rule.split) {
                    let converted = self.convert(piece, rule, &mut notes);
                    if !slot.contains(&converted) {
                        slot.push(converted);
                    }
                }
            }
        }
        let mut out = record.clone_header();
        out.template = self.template.clone();
        out.attributes.reserve(self.elements.len());
        for (element, mut vals) in self.element_names.iter().zip(values) {
            let value = match vals.len() {
                0 => continue,
                1 => Value::Bytes(vals.remove(0)),
                _ => Value::List(vals.into_iter().map(Value::Bytes).collect()),
            };
            out.attributes.push(Attribute {
                name: element.clone(),
                value,
            });
        }
        (out, notes)
    }

    /// Which attributes each rule's sources match (RFC 2655 §4: the name or the name
    /// before its `-N`, ignoring case; for `embedded` rules also the name inside an
    /// `Embed<n>-` part): (rule, source, attribute) triples, sorted.
    fn hits(&self, attrs: &[Attribute]) -> Vec<(usize, usize, usize)> {
        let mut hits = Vec::new();
        for (ai, a) in attrs.iter().enumerate() {
            let mut add = |name: &[u8], embedded: bool| {
                let Some(candidates) = self.by_len.get(name.len()) else {
                    return;
                };
                for &(ri, si) in candidates {
                    if (!embedded || self.rules[ri].embedded)
                        && name.eq_ignore_ascii_case(self.rules[ri].from[si].as_bytes())
                    {
                        hits.push((ri, si, ai));
                    }
                }
            };
            add(&a.name, false);
            if let Some((base, _)) = split_suffix(&a.name) {
                add(base, false);
            }
            if let Some((_, _, rest)) = split_embed(&a.name) {
                add(rest, true);
                if let Some((base, _)) = split_suffix(rest) {
                    add(base, true);
                }
            }
        }
        hits.sort_unstable();
        hits.dedup();
        hits
    }

    /// The values a rule takes, given the attributes its sources match (`hits`, sorted by
    /// source then attribute). With `first`, the first source that has values wins —
    /// for dates, the first whose values read as dates (an unreadable
    /// Last-Modification-Time does not hide a good Last-Modified); when none reads, the
    /// first source with values is used as it is.
    fn source_values(
        &self,
        rule: &Rule,
        record: &Record,
        hits: &[(usize, usize, usize)],
    ) -> Vec<Bytes> {
        let mut got = Vec::new();
        let mut fallback: Option<Vec<Bytes>> = None;
        for (si, src) in rule.from.iter().enumerate() {
            let mut these = Vec::new();
            if is_url(src.as_bytes()) {
                if !record.has_no_url() && !record.url.is_empty() {
                    these.push(record.url.clone());
                }
            } else {
                for &(_, _, ai) in hits.iter().filter(|h| h.1 == si) {
                    match &record.attributes[ai].value {
                        Value::Bytes(b) => these.push(b.clone()),
                        other => these.extend(other.leaves().into_iter().cloned()),
                    }
                }
            }
            if !rule.first {
                got.extend(these);
                continue;
            }
            if these.is_empty() {
                continue;
            }
            let readable = rule.convert != Some(Convert::Date)
                || these.iter().any(|v| dates::parse(v).is_some());
            if readable {
                return these;
            }
            fallback.get_or_insert(these);
        }
        if rule.first {
            return fallback.unwrap_or_default();
        }
        got
    }

    fn convert(&self, value: Bytes, rule: &Rule, notes: &mut Vec<Note>) -> Bytes {
        match rule.convert {
            None => value,
            Some(Convert::Date) => match dates::to_iso(&value) {
                Some(iso) => Bytes::from(iso),
                None => {
                    notes.push(Note {
                        element: rule.element.clone(),
                        value: String::from_utf8_lossy(&value).into_owned(),
                        reason: "not a date this crosswalk reads",
                    });
                    value
                }
            },
            Some(Convert::Mime) => {
                let Ok(text) = std::str::from_utf8(&value) else {
                    return value;
                };
                if text.contains('/') {
                    return value; // Already a media type (Content-Type).
                }
                match self.mime_type(text) {
                    Some(m) => Bytes::copy_from_slice(m.as_bytes()),
                    None => value,
                }
            }
        }
    }
}

/// Cuts a value; pieces are trimmed of ASCII whitespace and empty ones dropped.
fn split(value: &Bytes, how: Option<ValueSplit>) -> impl Iterator<Item = Bytes> + '_ {
    let lines = how == Some(ValueSplit::Lines);
    value
        .split(move |&b| lines && (b == b'\n' || b == b'\r'))
        .filter_map(|b| {
            let start = b.iter().position(|c| !c.is_ascii_whitespace())?;
            let end = b.iter().rposition(|c| !c.is_ascii_whitespace())? + 1;
            Some(value.slice_ref(&b[start..end]))
        })
}

/// The default crosswalk of one record (for the RDF/XML sink and other callers).
pub fn crosswalk(record: &Record) -> Record {
    Crosswalk::default_table().apply(record).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_names_are_the_elements_in_lower_case() {
        let lower: Vec<String> = ELEMENTS.iter().map(|e| e.to_ascii_lowercase()).collect();
        assert_eq!(lower, XML_ELEMENTS);
        assert_eq!(xml_element(b"CREATOR"), Some("creator"));
        assert_eq!(xml_element(b"Author"), None);
    }

    #[test]
    fn default_table_parses_and_covers_the_elements() {
        let t = Crosswalk::from_toml(DEFAULT_MAPPING, "(default)").unwrap();
        assert_eq!(t.elements, ELEMENTS);
        assert_eq!(t.mime_type("postscript"), Some("application/postscript"));
        assert_eq!(t.mime_type("HTML"), Some("text/html"));
        assert_eq!(t.mime_type("Archive"), None);
    }

    #[test]
    fn split_lines_trims() {
        let v = Bytes::from_static(b" a \r\n\n b\nc ");
        assert_eq!(
            split(&v, Some(ValueSplit::Lines)).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert_eq!(split(&Bytes::from_static(b"  "), None).count(), 0);
        assert_eq!(split(&v, None).collect::<Vec<_>>(), ["a \r\n\n b\nc"]);
    }

    #[test]
    fn bad_mappings_are_config_errors() {
        for text in [
            "rule = 3",
            "[[rule]]\nelement = \"TITLE\"\nfrom = []",
            "[[rule]]\nelement = \"A B\"\nfrom = [\"x\"]",
            "[[rule]]\nelement = \"TITLE\"\nfrom = [\"x\"]\nconvert = \"upper\"",
            "colour = \"blue\"",
        ] {
            let e = Crosswalk::from_toml(text, "m.toml").err();
            assert!(e.as_ref().is_some_and(|e| e.is_config()), "{text}: {e:?}");
        }
        assert!(
            Crosswalk::from_file(std::path::Path::new("/nonexistent/mapping.toml"))
                .is_err_and(|e| e.is_config())
        );
    }

    /// A mapping whose sources overlap on purpose: names in two cases, with and without
    /// a `-N`, inside and outside parts, the URL.
    const OVERLAPPING: &str = r#"
        [[rule]]
        element = "CREATOR"
        from = ["author", "Creator", "AUTHOR-2"]
        [[rule]]
        element = "SUBJECT"
        from = ["Keywords"]
        embedded = true
        split = "lines"
        [[rule]]
        element = "DATE"
        from = ["Date", "Last-Modified", "URL"]
        first = true
        convert = "date"
        [[rule]]
        element = "CREATOR"
        from = ["Creator", "Type"]
        embedded = true
    "#;

    /// What a rule takes, by its definition: for each source in order, every attribute
    /// in order that RFC 2655 §4 matches it (or, for `embedded` rules, whose name inside
    /// a part does).
    fn by_definition(rule: &Rule, record: &Record) -> Vec<Vec<Bytes>> {
        use super::super::names::attribute_matches;
        rule.from
            .iter()
            .map(|src| {
                if is_url(src.as_bytes()) {
                    return vec![record.url.clone()];
                }
                record
                    .attributes
                    .iter()
                    .filter(|a| {
                        attribute_matches(src.as_bytes(), &a.name)
                            || (rule.embedded
                                && split_embed(&a.name).is_some_and(|(_, _, rest)| {
                                    attribute_matches(src.as_bytes(), rest)
                                }))
                    })
                    .filter_map(|a| a.value.as_bytes().cloned())
                    .collect()
            })
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn sources_match_as_rfc_2655_section_4_says(
            names in proptest::collection::vec(
                proptest::sample::select(vec![
                    "Author", "author-1", "AUTHOR-2", "Author-3", "Creator", "creator-02",
                    "Keywords", "Embed<1>-Keywords", "Embed<2>-keywords-1", "Embed<1>-Creator",
                    "Type", "Embed<1>-Type", "Date", "Last-Modified", "Title", "Co-Author",
                ]),
                0..12,
            )
        ) {
            let table = Crosswalk::from_toml(OVERLAPPING, "t.toml").unwrap();
            let mut record = Record::new("FILE", "http://x/");
            for (i, n) in names.iter().enumerate() {
                record.push(n, format!("v{i}"));
            }
            let hits = table.hits(&record.attributes);
            for (ri, rule) in table.rules.iter().enumerate() {
                let expected = by_definition(rule, &record);
                for (si, want) in expected.iter().enumerate() {
                    if is_url(rule.from[si].as_bytes()) {
                        continue;
                    }
                    let got: Vec<Bytes> = hits
                        .iter()
                        .filter(|h| h.0 == ri && h.1 == si)
                        .filter_map(|h| record.attributes[h.2].value.as_bytes().cloned())
                        .collect();
                    proptest::prop_assert_eq!(&got, want, "rule {} source {}", ri, si);
                }
                if !rule.first {
                    let all: Vec<Bytes> = expected.concat();
                    let got = table.source_values(rule, &record, &hits
                        [hits.partition_point(|h| h.0 < ri)..hits.partition_point(|h| h.0 <= ri)]);
                    proptest::prop_assert_eq!(got, all);
                }
            }
        }
    }
}
