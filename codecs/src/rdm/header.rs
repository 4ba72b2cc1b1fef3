//! `@RDMHEADER`: the first object of every RDM message ([`RdmHeader`]), its
//! [`RdmType`] and [`QueryLanguage`].
//!
//! The note: "The RDM header section begins with a SOIF object of type RDMHEADER which must
//! contain as least the following attributes: RDM-Version … RDM-Type … RDM-Query-Language:
//! (required only for *Request* messages)". Its own first example, a `status-request`, has
//! no query language, and its body table gives "none" for status and server-description
//! requests; so [`RdmHeader::from_record`] does not demand one and
//! [`RdmType::query_language`] says which language the table expects instead.
//!
//! ```
//! use soif_codecs::rdm::{RdmHeader, RdmType, QueryLanguage};
//! use soif_codecs::Record;
//! let r = Record::new("RDMHEADER", "-")
//!     .with("RDM-Version", "1.0")
//!     .with("RDM-Type", "rd-request")
//!     .with("RDM-Query-Language", "gatherer");
//! let h = RdmHeader::from_record(&r).unwrap();
//! assert_eq!(h.rdm_type, RdmType::RdRequest);
//! assert_eq!(h.query_language, Some(QueryLanguage::Gatherer));
//! assert_eq!(h.rdm_type.reply(), Some(RdmType::RdResponse));
//! assert_eq!(h.to_record(), r);
//! ```

use super::fields::{check_template, is, keyword, new_record, set_once, text};
use super::{Csid, RdmError};
use crate::record::{Attribute, Record};
use std::fmt;
use std::str::FromStr;

/// The template type of an RDM header object.
pub const RDMHEADER: &str = "RDMHEADER";

/// The version this crate writes (`RDM-Version: 1.0`, the note's).
pub const RDM_VERSION: &str = "1.0";

/// The nature of an RDM message: the note's table of RDM-Type values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RdmType {
    /// Request to send RD's based on given query.
    RdRequest,
    /// Request to send RD's that have been deleted, based on given query.
    RdRequestDeleted,
    /// Contains RD's.
    RdResponse,
    /// Contains RD's which should be deleted.
    RdResponseDeleted,
    /// Request to send the schema definition.
    SchemaDescriptionRequest,
    /// Contains the schema definition.
    SchemaDescriptionResponse,
    /// Request to send the server description.
    ServerDescriptionRequest,
    /// Contains the server description.
    ServerDescriptionResponse,
    /// Request to send the taxonomy description.
    TaxonomyDescriptionRequest,
    /// Contains the taxonomy description.
    TaxonomyDescriptionResponse,
    /// Request to send status message — used to test existence.
    StatusRequest,
    /// Contains general status information about the result of the request.
    StatusResponse,
}

/// What the body of a message of a given [`RdmType`] holds (the note's "Body Content").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyKind {
    /// Nothing (server-description and status requests).
    Empty,
    /// One `@RDMQUERY`: a gatherer scope/view, a schema-basic or taxonomy-basic query.
    Query,
    /// An optional `@SCHEMA`, then a SOIF stream of RD's (rd-response, rd-response-deleted).
    ResourceDescriptions,
    /// One `@RDMSERVER`.
    ServerDescription,
    /// `@SCHEMA` object(s).
    SchemaDescription,
    /// One `@TAXONOMY`, then `@CLASSIFICATION` objects.
    TaxonomyDescription,
    /// "A status message is a HTML 2.0 document": raw HTML after the header, not SOIF.
    StatusMessage,
}

impl RdmType {
    /// All twelve types, in the note's table order.
    pub const ALL: [RdmType; 12] = [
        RdmType::RdRequest,
        RdmType::RdRequestDeleted,
        RdmType::RdResponse,
        RdmType::RdResponseDeleted,
        RdmType::SchemaDescriptionRequest,
        RdmType::SchemaDescriptionResponse,
        RdmType::ServerDescriptionRequest,
        RdmType::ServerDescriptionResponse,
        RdmType::TaxonomyDescriptionRequest,
        RdmType::TaxonomyDescriptionResponse,
        RdmType::StatusRequest,
        RdmType::StatusResponse,
    ];

    /// The lower-case name the note's examples use (`rd-request`, `status-request`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RdmType::RdRequest => "rd-request",
            RdmType::RdRequestDeleted => "rd-request-deleted",
            RdmType::RdResponse => "rd-response",
            RdmType::RdResponseDeleted => "rd-response-deleted",
            RdmType::SchemaDescriptionRequest => "schema-description-request",
            RdmType::SchemaDescriptionResponse => "schema-description-response",
            RdmType::ServerDescriptionRequest => "server-description-request",
            RdmType::ServerDescriptionResponse => "server-description-response",
            RdmType::TaxonomyDescriptionRequest => "taxonomy-description-request",
            RdmType::TaxonomyDescriptionResponse => "taxonomy-description-response",
            RdmType::StatusRequest => "status-request",
            RdmType::StatusResponse => "status-response",
        }
    }

    /// Parses a type name ignoring ASCII case (`RD-Request` as in the note's table,
    /// `rd-request` as in its examples). The short names of the note's GET table
    /// (`schema-request`, `server-request`, `taxonomy-request`) are accepted as aliases.
    pub fn parse(s: &str) -> Result<RdmType, RdmError> {
        let t = s.trim();
        if let Some(found) = RdmType::ALL
            .into_iter()
            .find(|ty| t.eq_ignore_ascii_case(ty.as_str()))
        {
            return Ok(found);
        }
        let alias = [
            ("schema-request", RdmType::SchemaDescriptionRequest),
            ("server-request", RdmType::ServerDescriptionRequest),
            ("taxonomy-request", RdmType::TaxonomyDescriptionRequest),
        ];
        alias
            .into_iter()
            .find(|(name, _)| t.eq_ignore_ascii_case(name))
            .map(|(_, ty)| ty)
            .ok_or_else(|| {
                RdmError::invalid(
                    "RDM-Type",
                    s,
                    "unknown RDM type (expected one of rd-request, rd-request-deleted, \
                     rd-response, rd-response-deleted, schema-description-request, \
                     schema-description-response, server-description-request, \
                     server-description-response, taxonomy-description-request, \
                     taxonomy-description-response, status-request, status-response)",
                )
            })
    }

    /// True for the `*-request` types.
    pub fn is_request(self) -> bool {
        self.as_str().ends_with("-request") || self == RdmType::RdRequestDeleted
    }

    /// True for the `*-response` types.
    pub fn is_response(self) -> bool {
        !self.is_request()
    }

    /// The note's "Reply RDM Type": what a server answers to this message
    /// (`None` for a status-response, which gets no reply).
    pub fn reply(self) -> Option<RdmType> {
        Some(match self {
            RdmType::RdRequest | RdmType::RdRequestDeleted => RdmType::RdResponse,
            RdmType::ServerDescriptionRequest => RdmType::ServerDescriptionResponse,
            RdmType::SchemaDescriptionRequest => RdmType::SchemaDescriptionResponse,
            RdmType::TaxonomyDescriptionRequest => RdmType::TaxonomyDescriptionResponse,
            RdmType::StatusResponse => return None,
            _ => RdmType::StatusResponse,
        })
    }

    /// The query language the note's body table gives this type (`None`: "none").
    pub fn query_language(self) -> Option<QueryLanguage> {
        match self {
            RdmType::RdRequest | RdmType::RdRequestDeleted => Some(QueryLanguage::Gatherer),
            RdmType::SchemaDescriptionRequest => Some(QueryLanguage::SchemaBasic),
            RdmType::TaxonomyDescriptionRequest => Some(QueryLanguage::TaxonomyBasic),
            _ => None,
        }
    }

    /// What the message body holds.
    pub fn body(self) -> BodyKind {
        match self {
            RdmType::RdRequest
            | RdmType::RdRequestDeleted
            | RdmType::SchemaDescriptionRequest
            | RdmType::TaxonomyDescriptionRequest => BodyKind::Query,
            RdmType::RdResponse | RdmType::RdResponseDeleted => BodyKind::ResourceDescriptions,
            RdmType::ServerDescriptionRequest | RdmType::StatusRequest => BodyKind::Empty,
            RdmType::ServerDescriptionResponse => BodyKind::ServerDescription,
            RdmType::SchemaDescriptionResponse => BodyKind::SchemaDescription,
            RdmType::TaxonomyDescriptionResponse => BodyKind::TaxonomyDescription,
            RdmType::StatusResponse => BodyKind::StatusMessage,
        }
    }
}

impl fmt::Display for RdmType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RdmType {
    type Err = RdmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RdmType::parse(s)
    }
}

/// An `RDM-Query-Language`. The note defines three and uses a "toy" fourth in its GET
/// examples; any other name is kept as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum QueryLanguage {
    /// `gatherer`: `Scope: all` or `Scope: since DATE`, with a view.
    Gatherer,
    /// `schema-basic`: `Scope: defined ATTRIBUTE`.
    SchemaBasic,
    /// `taxonomy-basic`: `descendant`, `descendant/N`, `children`, `anklebiter`.
    TaxonomyBasic,
    /// `sample-keyword-ql`: the note's keyword search (`scope=netscape`).
    SampleKeyword,
    /// Any other language, as written.
    Other(String),
}

impl QueryLanguage {
    /// Parses a language name ignoring ASCII case; unknown names become [`Other`](Self::Other).
    pub fn parse(s: &str) -> QueryLanguage {
        let t = s.trim();
        [
            QueryLanguage::Gatherer,
            QueryLanguage::SchemaBasic,
            QueryLanguage::TaxonomyBasic,
            QueryLanguage::SampleKeyword,
        ]
        .into_iter()
        .find(|ql| t.eq_ignore_ascii_case(ql.as_str()))
        .unwrap_or_else(|| QueryLanguage::Other(t.to_string()))
    }

    /// The name as written in RDM (`gatherer`, `schema-basic`, …).
    pub fn as_str(&self) -> &str {
        match self {
            QueryLanguage::Gatherer => "gatherer",
            QueryLanguage::SchemaBasic => "schema-basic",
            QueryLanguage::TaxonomyBasic => "taxonomy-basic",
            QueryLanguage::SampleKeyword => "sample-keyword-ql",
            QueryLanguage::Other(s) => s,
        }
    }
}

impl fmt::Display for QueryLanguage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for QueryLanguage {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(QueryLanguage::parse(s))
    }
}

/// An `@RDMHEADER` object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmHeader {
    /// `RDM-Version` (required), e.g. `1.0`.
    pub version: String,
    /// `RDM-Type` (required).
    pub rdm_type: RdmType,
    /// `RDM-Query-Language`.
    pub query_language: Option<QueryLanguage>,
    /// `Catalog-Service-ID`; absent means the server's default catalog.
    pub catalog: Option<Csid>,
    /// `RDM-Response-Interpret`, e.g. `25 DOCUMENT objects`.
    pub response_interpret: Option<String>,
    /// `RDM-Error-Message`, e.g. `0 results`.
    pub error_message: Option<String>,
    /// Attributes the note does not define, kept in order so nothing is lost.
    pub extra: Vec<Attribute>,
}

impl RdmHeader {
    /// A version-1.0 header of this type with nothing else set.
    pub fn new(rdm_type: RdmType) -> RdmHeader {
        RdmHeader {
            version: RDM_VERSION.to_string(),
            rdm_type,
            query_language: None,
            catalog: None,
            response_interpret: None,
            error_message: None,
            extra: Vec::new(),
        }
    }

    /// Sets the query language (builder style).
    pub fn with_query_language(mut self, ql: QueryLanguage) -> RdmHeader {
        self.query_language = Some(ql);
        self
    }

    /// Sets the catalog (builder style).
    pub fn with_catalog(mut self, csid: Csid) -> RdmHeader {
        self.catalog = Some(csid);
        self
    }

    /// Sets the error message (builder style).
    pub fn with_error(mut self, message: impl Into<String>) -> RdmHeader {
        self.error_message = Some(message.into());
        self
    }

    /// True when `record` is an `@RDMHEADER` (ignoring ASCII case).
    pub fn is_header(record: &Record) -> bool {
        record.template.eq_ignore_ascii_case(RDMHEADER.as_bytes())
    }

    /// Reads an `@RDMHEADER` object.
    pub fn from_record(record: &Record) -> Result<RdmHeader, RdmError> {
        Self::read(record).map_err(|e| e.with_position(record.position.as_ref()))
    }

    fn read(record: &Record) -> Result<RdmHeader, RdmError> {
        check_template(record, RDMHEADER)?;
        let mut version = None;
        let mut rdm_type = None;
        let mut query_language = None;
        let mut catalog = None;
        let mut response_interpret = None;
        let mut error_message = None;
        let mut extra = Vec::new();
        for attr in &record.attributes {
            if is(attr, "RDM-Version") {
                let v = keyword(attr)?;
                if v.is_empty() {
                    return Err(RdmError::invalid("RDM-Version", v, "empty"));
                }
                set_once(&mut version, attr, v.to_string())?;
            } else if is(attr, "RDM-Type") {
                set_once(&mut rdm_type, attr, RdmType::parse(keyword(attr)?)?)?;
            } else if is(attr, "RDM-Query-Language") {
                let ql = keyword(attr)?;
                if ql.is_empty() {
                    return Err(RdmError::invalid("RDM-Query-Language", ql, "empty"));
                }
                set_once(&mut query_language, attr, QueryLanguage::parse(ql))?;
            } else if is(attr, "Catalog-Service-ID") {
                set_once(&mut catalog, attr, Csid::parse(keyword(attr)?)?)?;
            } else if is(attr, "RDM-Response-Interpret") {
                set_once(&mut response_interpret, attr, text(attr)?)?;
            } else if is(attr, "RDM-Error-Message") {
                set_once(&mut error_message, attr, text(attr)?)?;
            } else {
                extra.push(attr.clone());
            }
        }
        Ok(RdmHeader {
            version: version.ok_or_else(|| RdmError::missing(RDMHEADER, "RDM-Version"))?,
            rdm_type: rdm_type.ok_or_else(|| RdmError::missing(RDMHEADER, "RDM-Type"))?,
            query_language,
            catalog,
            response_interpret,
            error_message,
            extra,
        })
    }

    /// Writes the header back as an `@RDMHEADER { - … }` object, attributes in the order of
    /// the note's examples.
    pub fn to_record(&self) -> Record {
        let mut r = new_record(RDMHEADER, None);
        r.push("RDM-Version", self.version.as_str());
        r.push("RDM-Type", self.rdm_type.as_str());
        if let Some(ql) = &self.query_language {
            r.push("RDM-Query-Language", ql.as_str());
        }
        if let Some(csid) = &self.catalog {
            r.push("Catalog-Service-ID", csid.to_string());
        }
        if let Some(s) = &self.response_interpret {
            r.push("RDM-Response-Interpret", s.as_str());
        }
        if let Some(s) = &self.error_message {
            r.push("RDM-Error-Message", s.as_str());
        }
        r.attributes.extend(self.extra.iter().cloned());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Position;

    #[test]
    fn every_type_round_trips_and_parses_any_case() {
        for ty in RdmType::ALL {
            assert_eq!(RdmType::parse(ty.as_str()).ok(), Some(ty));
            assert_eq!(RdmType::parse(&ty.as_str().to_uppercase()).ok(), Some(ty));
            assert_eq!(ty.to_string(), ty.as_str());
        }
        // The note's table spelling.
        assert_eq!(
            RdmType::parse("Taxonomy-Description-Request").ok(),
            Some(RdmType::TaxonomyDescriptionRequest)
        );
        assert_eq!(
            RdmType::parse("server-request").ok(),
            Some(RdmType::ServerDescriptionRequest)
        );
        let e = RdmType::parse("rd-fetch").unwrap_err();
        assert!(
            e.to_string().starts_with("invalid RDM-Type \"rd-fetch\""),
            "{e}"
        );
    }

    #[test]
    fn note_table_replies_and_bodies() {
        use RdmType::*;
        assert_eq!(RdRequestDeleted.reply(), Some(RdResponse));
        assert_eq!(RdResponseDeleted.reply(), Some(StatusResponse));
        assert_eq!(
            SchemaDescriptionRequest.reply(),
            Some(SchemaDescriptionResponse)
        );
        assert_eq!(StatusRequest.reply(), Some(StatusResponse));
        assert_eq!(StatusResponse.reply(), None);
        assert_eq!(StatusRequest.body(), BodyKind::Empty);
        assert_eq!(RdResponse.body(), BodyKind::ResourceDescriptions);
        assert_eq!(
            TaxonomyDescriptionRequest.query_language(),
            Some(QueryLanguage::TaxonomyBasic)
        );
        let requests: Vec<_> = RdmType::ALL
            .into_iter()
            .filter(|t| t.is_request())
            .collect();
        assert_eq!(requests.len(), 6);
        assert!(requests
            .iter()
            .all(|t| t.reply().is_some_and(|r| r.is_response())));
    }

    #[test]
    fn query_languages() {
        assert_eq!(QueryLanguage::parse("Gatherer"), QueryLanguage::Gatherer);
        assert_eq!(
            QueryLanguage::parse("sample-keyword-ql"),
            QueryLanguage::SampleKeyword
        );
        assert_eq!(
            QueryLanguage::parse("z39.50"),
            QueryLanguage::Other("z39.50".into())
        );
        assert_eq!(QueryLanguage::Other("z39.50".into()).to_string(), "z39.50");
    }

    #[test]
    fn full_header_round_trips() {
        let h = RdmHeader::new(RdmType::RdResponse)
            .with_catalog(Csid::new("localhost", Some(8080), "main"))
            .with_error("0 results");
        let mut h = h;
        h.response_interpret = Some("25 DOCUMENT objects".into());
        h.extra.push(Attribute::new("X-Note", "kept"));
        let r = h.to_record();
        assert_eq!(r.template_str(), "RDMHEADER");
        assert_eq!(r.url_str(), "-");
        assert_eq!(RdmHeader::from_record(&r), Ok(h));
    }

    #[test]
    fn missing_and_invalid_attributes_are_named() {
        let mut r = Record::new("RDMHEADER", "-").with("RDM-Version", "1.0");
        r.position = Some(Position::new(0, 1));
        let e = RdmHeader::from_record(&r).unwrap_err();
        assert_eq!(
            e.to_string(),
            "@RDMHEADER object is missing required attribute RDM-Type, at byte 0, record 1"
        );
        let r = Record::new("RDMHEADER", "-")
            .with("RDM-Version", "1.0")
            .with("RDM-Type", "status-request")
            .with("RDM-Type", "rd-request");
        assert!(matches!(
            RdmHeader::from_record(&r),
            Err(RdmError::Duplicate { .. })
        ));
        let r = Record::new("RDMHEADER", "-")
            .with("RDM-Version", "1.0")
            .with("RDM-Type", b"status-\xffrequest".to_vec());
        assert!(matches!(
            RdmHeader::from_record(&r),
            Err(RdmError::NotUtf8 { .. })
        ));
        let r = Record::new("RDMHEADER", "-")
            .with("RDM-Version", "1.0")
            .with("RDM-Type", "status-request")
            .with("Catalog-Service-ID", "http://x/");
        let e = RdmHeader::from_record(&r).unwrap_err();
        assert!(e.to_string().contains("Catalog-Service-ID"), "{e}");
        let r = Record::new("FILE", "http://x/");
        assert!(matches!(
            RdmHeader::from_record(&r),
            Err(RdmError::WrongTemplate {
                expected: "RDMHEADER",
                ..
            })
        ));
    }

    #[test]
    fn names_are_case_insensitive() {
        let r = Record::new("rdmheader", "-")
            .with("rdm-version", "1.0")
            .with("rdm-type", "Status-Request");
        let h = RdmHeader::from_record(&r).unwrap();
        assert_eq!(h.rdm_type, RdmType::StatusRequest);
    }
}
