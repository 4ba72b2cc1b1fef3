//! The metadata formats: `oai_dc` (the project's `dc` crosswalk, written as the RDF/XML
//! sink writes Dublin Core) and `soif` (the whole record, in the project's own schema,
//! `soif.xsd`, which the server serves).
//!
//! Whatever bytes a record holds, the XML is well formed and valid. `oai_dc` follows the
//! RDF/XML sink's policy (`soif_store::text::xml_text`): invalid UTF-8 and the
//! characters XML 1.0 forbids become U+FFFD, a CR is written `&#13;`. `soif` keeps every
//! byte: a value that is UTF-8 without forbidden characters is text, any other is
//! base64 with `encoding="base64"`; a template, URL or attribute name that could not
//! survive as an XML attribute (forbidden characters, invalid UTF-8, or tab, CR, LF,
//! which attribute normalisation would turn into spaces) goes in `template-base64`,
//! `url-base64`, `name-base64` instead.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use soif_codecs::{Record, Value};
use soif_pipeline::transforms::dc::{is_dublin_core, Crosswalk};
use soif_pipeline::transforms::names::base_name;
use soif_store::text::{dc_element, escape_text, xml_forbidden, xml_text, Charset};
use std::borrow::Cow;

/// The `soif` format's namespace.
pub const SOIF_NS: &str = "urn:x-soif:record:1";

/// The project's schema for the `soif` format (served at `/oai/soif.xsd`).
pub const SOIF_XSD: &str = include_str!("soif.xsd");

pub const OAI_DC_NS: &str = "http://www.openarchives.org/OAI/2.0/oai_dc/";
pub const OAI_DC_XSD: &str = "http://www.openarchives.org/OAI/2.0/oai_dc.xsd";

/// Writes a record as `oai_dc`.
pub fn oai_dc(record: &Record, out: &mut String) {
    out.push_str(
        "<oai_dc:dc xmlns:oai_dc=\"http://www.openarchives.org/OAI/2.0/oai_dc/\" \
         xmlns:dc=\"http://purl.org/dc/elements/1.1/\" \
         xsi:schemaLocation=\"http://www.openarchives.org/OAI/2.0/oai_dc/ \
         http://www.openarchives.org/OAI/2.0/oai_dc.xsd\">",
    );
    for (element, text) in dublin_core(record) {
        out.push_str(&format!("<dc:{element}>{text}</dc:{element}>"));
    }
    out.push_str("</oai_dc:dc>");
}

/// The record's Simple Dublin Core elements in order, each with its escaped text: the
/// `dc` crosswalk unless the record is Dublin Core already, then every plain value whose
/// name (without a `-N` suffix) is a DC element. Shared by `oai_dc` and the browse
/// pages' RDF/XML download, so the two always say the same.
pub fn dublin_core(record: &Record) -> Vec<(&'static str, String)> {
    let mapped = if is_dublin_core(&record.template) {
        Cow::Borrowed(record)
    } else {
        Cow::Owned(Crosswalk::default_table().apply(record).0)
    };
    let mut warnings = 0;
    let mut out = Vec::new();
    for attr in &mapped.flattened().attributes {
        let Value::Bytes(value) = &attr.value else {
            continue;
        };
        let Some(element) = dc_element(base_name(&attr.name)) else {
            continue;
        };
        out.push((element, xml_text(value, Charset::Utf8, &mut warnings)));
    }
    out
}

/// The text of `bytes` when it can be carried exactly (as element text, or with
/// `attribute` as an attribute value).
fn exact(bytes: &[u8], attribute: bool) -> Option<&str> {
    let s = std::str::from_utf8(bytes).ok()?;
    let bad = |c: char| xml_forbidden(c) || (attribute && matches!(c, '\t' | '\n' | '\r'));
    (!s.chars().any(bad)).then_some(s)
}

fn attribute(out: &mut String, name: &str, bytes: &[u8]) {
    match exact(bytes, true) {
        Some(s) => out.push_str(&format!(" {name}=\"{}\"", escape_text(s))),
        None => out.push_str(&format!(" {name}-base64=\"{}\"", STANDARD.encode(bytes))),
    }
}

/// Writes a record in the `soif` format: every attribute in order (lists and parts
/// flattened as SOIF writes them: `Author-1`, `Embed<1>-Type`).
pub fn soif(record: &Record, schema_url: &str, out: &mut String) {
    out.push_str(&format!(
        "<soif:record xmlns:soif=\"{SOIF_NS}\" xsi:schemaLocation=\"{SOIF_NS} {}\"",
        escape_text(schema_url)
    ));
    attribute(out, "template", &record.template);
    attribute(out, "url", &record.url);
    out.push('>');
    for attr in &record.flattened().attributes {
        let Value::Bytes(value) = &attr.value else {
            continue;
        };
        out.push_str("<soif:attribute");
        attribute(out, "name", &attr.name);
        match exact(value, false) {
            Some(s) => {
                out.push('>');
                out.push_str(&escape_text(s));
            }
            None => {
                out.push_str(" encoding=\"base64\">");
                out.push_str(&STANDARD.encode(value));
            }
        }
        out.push_str("</soif:attribute>");
    }
    out.push_str("</soif:record>");
}
