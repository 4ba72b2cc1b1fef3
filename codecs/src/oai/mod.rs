//! OAI-PMH 2.0 at the bottom of the crate graph: the identifier scheme ([`ids`]), the
//! metadata formats as XML ([`write`]: a record as `oai_dc` or `soif`) and a harvest's
//! view of a reply ([`read`]: a `ListRecords` page back into records, `Identify`'s
//! granularity). `soif serve`'s provider writes with these, the OAI-PMH source reads
//! with them, so what one writes the other reads back (docs/oai-pmh.md).
//!
//! ```
//! use soif_codecs::oai::read::{parse_page, MetadataFormat, PageContext};
//! use soif_codecs::oai::write;
//! use soif_codecs::Record;
//!
//! let record = Record::new("FILE", "http://example.com/").with("Title", "Example");
//! let mut xml = String::from(
//!     "<OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\" \
//!      xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><ListRecords><record>\
//!      <header><identifier>oai:h:FILE/http://example.com/</identifier></header><metadata>",
//! );
//! write::soif(&record, "http://h/oai/soif.xsd", &mut xml);
//! xml.push_str("</metadata></record></ListRecords></OAI-PMH>");
//! let ctx = PageContext {
//!     name: "oai+http://h/oai".into(),
//!     page: 1,
//!     url: "http://h/oai?verb=ListRecords&metadataPrefix=soif",
//!     offset: 0,
//!     records: 0,
//! };
//! let page = parse_page(xml.as_bytes(), MetadataFormat::Soif, &ctx).unwrap();
//! assert_eq!(page.items[0].as_ref().unwrap().get_str("Title"), Some("Example"));
//! ```

pub mod ids;
pub mod read;
pub mod write;

/// The OAI-PMH 2.0 namespace.
pub const OAI_NS: &str = "http://www.openarchives.org/OAI/2.0/";
/// Dublin Core's element namespace (the `dc:` of `oai_dc`).
pub const DC_NS: &str = "http://purl.org/dc/elements/1.1/";
/// The `oai_dc` container's namespace.
pub const OAI_DC_NS: &str = "http://www.openarchives.org/OAI/2.0/oai_dc/";
/// The `oai_dc` container's schema.
pub const OAI_DC_XSD: &str = "http://www.openarchives.org/OAI/2.0/oai_dc.xsd";
/// The `soif` metadata format's namespace.
pub const SOIF_NS: &str = "urn:x-soif:record:1";
/// The project's schema for the `soif` format (`soif serve` serves it at
/// `/oai/soif.xsd`).
pub const SOIF_XSD: &str = include_str!("soif.xsd");
