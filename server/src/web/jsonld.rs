//! A record's description as schema.org JSON-LD, embedded in its page as a
//! `<script type="application/ld+json">` for search engines and other readers of
//! structured data.
//!
//! The record is described through its Simple Dublin Core elements (the `dc` crosswalk,
//! as for `oai_dc` and the RDF/XML download: [`soif_codecs::oai::write::dublin_core_values`]),
//! each element mapped to one schema.org property of a `CreativeWork` whose `@id` and
//! `url` are the record's URL:
//!
//! | Dublin Core | schema.org |
//! |---|---|
//! | `title` | `name` |
//! | `creator` | `creator` |
//! | `subject` | `keywords` |
//! | `description` | `description` |
//! | `publisher` | `publisher` |
//! | `contributor` | `contributor` |
//! | `date` | `dateCreated` |
//! | `type` | `genre` |
//! | `format` | `encodingFormat` |
//! | `identifier` | `identifier` |
//! | `source` | `isBasedOn` |
//! | `language` | `inLanguage` |
//! | `relation` | `citation` |
//! | `coverage` | `spatialCoverage` |
//! | `rights` | `license` |
//!
//! Values are text (bytes that are not UTF-8 become U+FFFD: the exact bytes are in
//! `record.json` and `record.soif`); an element with several values gives an array. The
//! context is inline (`{"@vocab": "https://schema.org/"}`), so a JSON-LD processor
//! expands the description without fetching anything. The record's URL is the `@id` only
//! when it is a link ([`safe_href`]); otherwise the description is a blank node.
//!
//! ```
//! use soif_codecs::Record;
//! let r = Record::new("DOCUMENT", "http://example.org/a").with("Title", "A");
//! let ld = soif_server::web::jsonld::description(&r);
//! assert_eq!(ld["name"], "A");
//! assert_eq!(ld["@id"], "http://example.org/a");
//! ```

use super::view::{safe_href, text_of};
use soif_codecs::oai::write::dublin_core_values;
use soif_codecs::Record;

/// The schema.org vocabulary the descriptions use.
pub const SCHEMA_ORG: &str = "https://schema.org/";

/// Each Dublin Core element (as `dublin_core_values` names it) and its schema.org
/// property.
pub const MAPPING: [(&str, &str); 15] = [
    ("title", "name"),
    ("creator", "creator"),
    ("subject", "keywords"),
    ("description", "description"),
    ("publisher", "publisher"),
    ("contributor", "contributor"),
    ("date", "dateCreated"),
    ("type", "genre"),
    ("format", "encodingFormat"),
    ("identifier", "identifier"),
    ("source", "isBasedOn"),
    ("language", "inLanguage"),
    ("relation", "citation"),
    ("coverage", "spatialCoverage"),
    ("rights", "license"),
];

/// The schema.org property of a Dublin Core element.
pub fn property(element: &str) -> Option<&'static str> {
    MAPPING
        .iter()
        .find(|(dc, _)| *dc == element)
        .map(|(_, p)| *p)
}

/// The record's description as a JSON-LD object.
pub fn description(record: &Record) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    map.insert(
        "@context".into(),
        serde_json::json!({ "@vocab": SCHEMA_ORG }),
    );
    map.insert("@type".into(), "CreativeWork".into());
    if let Some(url) = safe_href(&record.url) {
        map.insert("@id".into(), url.clone().into());
        map.insert("url".into(), url.into());
    }
    for (element, value) in dublin_core_values(record) {
        let Some(prop) = property(element) else {
            continue;
        };
        let v = serde_json::Value::String(text_of(&value));
        match map.get_mut(prop) {
            Some(serde_json::Value::Array(list)) => list.push(v),
            Some(old) => {
                let first = old.take();
                *old = serde_json::Value::Array(vec![first, v]);
            }
            None => {
                map.insert(prop.into(), v);
            }
        }
    }
    serde_json::Value::Object(map)
}

/// The description as the text of a `<script>` element: JSON in which `<`, `>` and `&`
/// are written `\u003c`, `\u003e` and `\u0026` (they occur only inside strings), so no
/// value can end the element or open a comment.
pub fn script_text(record: &Record) -> String {
    let json = serde_json::to_string_pretty(&description(record)).unwrap_or_else(|_| "{}".into());
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dublin_core_element_has_a_property() {
        for e in soif_codecs::rules::dc::XML_ELEMENTS {
            assert!(property(e).is_some(), "{e}");
        }
    }

    #[test]
    fn repeated_elements_become_arrays_and_markup_cannot_escape() {
        let r = Record::new("DOCUMENT", "http://example.org/a")
            .with("Title", "</script><script>alert(1)</script>")
            .with("Keywords", "a")
            .with("Keywords", "b & c");
        let ld = description(&r);
        assert_eq!(ld["@type"], "CreativeWork");
        let text = script_text(&r);
        assert!(!text.contains('<') && !text.contains('&'), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ld);
        assert_eq!(back["name"], "</script><script>alert(1)</script>");
    }

    #[test]
    fn a_url_that_is_no_link_gives_a_blank_node() {
        let r = Record::new("FILE", "not a link").with("Title", "T");
        let ld = description(&r);
        assert!(ld.get("@id").is_none() && ld.get("url").is_none());
        assert_eq!(ld["name"], "T");
    }
}
