//! Writing a record as OAI-PMH metadata: `oai_dc` (the project's `dc` crosswalk, written
//! as the RDF/XML sink writes Dublin Core) and `soif` (the whole record, in the project's
//! own schema, [`SOIF_XSD`](super::SOIF_XSD), which `soif serve` serves and
//! [`super::read`] reads back).
//!
//! Whatever bytes a record holds, the XML is well formed and valid. `oai_dc` follows the
//! RDF/XML sink's policy ([`crate::rules::text::xml_text`]): invalid UTF-8 and the
//! characters XML 1.0 forbids become U+FFFD, a CR is written `&#13;`. `soif` keeps every
//! byte: a value that is UTF-8 without forbidden characters is text, any other is
//! base64 with `encoding="base64"`; a template, URL or attribute name that could not
//! survive as an XML attribute (forbidden characters, invalid UTF-8, or tab, CR, LF,
//! which attribute normalisation would turn into spaces) goes in `template-base64`,
//! `url-base64`, `name-base64` instead.

use super::{DC_NS, OAI_DC_NS, OAI_DC_XSD, SOIF_NS};
use crate::rules::dc::{is_dublin_core, xml_element, Crosswalk};
use crate::rules::names::base_name;
use crate::rules::text::{escape_text, xml_forbidden, xml_text, Charset};
use crate::{Record, Value};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use std::borrow::Cow;

/// Writes a record as `oai_dc`.
pub fn oai_dc(record: &Record, out: &mut String) {
    out.push_str(&format!(
        "<oai_dc:dc xmlns:oai_dc=\"{OAI_DC_NS}\" xmlns:dc=\"{DC_NS}\" \
         xsi:schemaLocation=\"{OAI_DC_NS} {OAI_DC_XSD}\">"
    ));
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
    let mut warnings = 0;
    dublin_core_values(record)
        .into_iter()
        .map(|(element, value)| (element, xml_text(&value, Charset::Utf8, &mut warnings)))
        .collect()
}

/// The values [`dublin_core`] gives, as bytes: each element (`title`, `creator`, …) with
/// one value, in order (the record pages' schema.org description reads these).
pub fn dublin_core_values(record: &Record) -> Vec<(&'static str, bytes::Bytes)> {
    let mapped = if is_dublin_core(&record.template) {
        Cow::Borrowed(record)
    } else {
        Cow::Owned(Crosswalk::default_table().apply(record).0)
    };
    let mut out = Vec::new();
    for attr in &mapped.flattened().attributes {
        let Value::Bytes(value) = &attr.value else {
            continue;
        };
        let Some(element) = xml_element(base_name(&attr.name)) else {
            continue;
        };
        out.push((element, value.clone()));
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

#[cfg(test)]
mod tests {
    use super::super::read::{parse_page, MetadataFormat, Page, PageContext};
    use super::*;
    use crate::{Action, Attribute};
    use std::sync::Arc;

    /// `metadata` (written by this module) as the one item of a `ListRecords` page
    /// under `identifier`, read back by [`super::super::read`].
    fn harvest(identifier: &str, metadata: &str, format: MetadataFormat) -> Page {
        let xml = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\" \
             xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">\
             <responseDate>2026-11-24T10:00:00Z</responseDate><ListRecords><record>\
             <header><identifier>{}</identifier><datestamp>2026-11-24T10:00:00Z</datestamp>\
             </header><metadata>{metadata}</metadata></record></ListRecords></OAI-PMH>",
            escape_text(identifier)
        );
        let ctx = PageContext {
            name: Arc::from("oai+http://h/oai"),
            page: 1,
            url: "http://h/oai?verb=ListRecords",
            offset: 0,
            records: 0,
        };
        parse_page(xml.as_bytes(), format, &ctx).unwrap()
    }

    #[test]
    fn soif_reads_back_every_byte() {
        let mut record = Record::new(&b"DOC/X\tY"[..], &b"http://x/\xe9 <a&b>\r\n"[..])
            .with("Title", "A & B\r\nline two\t<tab>")
            .with(
                "Author",
                crate::Value::List(vec!["first".into(), "second".into()]),
            );
        record
            .attributes
            .push(Attribute::new(&b"Bad\x01Name"[..], &b"\x00\xff binary"[..]));
        record.attributes.push(Attribute::new("Empty", ""));
        record
            .attributes
            .push(Attribute::new("Forbidden", "\u{1}\u{fffe}"));
        let mut xml = String::new();
        soif(&record, "http://h/oai/soif.xsd", &mut xml);
        let page = harvest("oai:h:x", &xml, MetadataFormat::Soif);
        let back = page.items[0].as_ref().unwrap();
        let flat = record.flattened();
        assert_eq!(back.template, flat.template);
        assert_eq!(back.url, flat.url);
        assert_eq!(back.attributes, flat.attributes);
        assert_eq!(back.get_str("Author-2"), Some("second"));
    }

    #[test]
    fn oai_dc_reads_back_as_the_same_dublin_core_record() {
        let record = Record::new("Dublin-Core", "oai:h:1")
            .with("TITLE", "A & B")
            .with("CREATOR-1", "X")
            .with("CREATOR-2", "Y <z>")
            .with("SUBJECT", "physics");
        let mut xml = String::new();
        oai_dc(&record, &mut xml);
        let page = harvest("oai:h:1", &xml, MetadataFormat::OaiDc);
        let back = page.items[0].as_ref().unwrap();
        assert_eq!(back.template_str(), "Dublin-Core");
        assert_eq!(back.url, record.url);
        assert_eq!(back.attributes, record.attributes);
        assert_eq!(back.action, None::<Action>);
    }
}
