//! `@RDMSERVER`: a server description ([`ServerDescription`]).
//!
//! "A server description is written as a single SOIF object with the object type of
//! RDMSERVER." Required: `Supported-RDM-Type`, `Supported-RDM-Query-Language` (both
//! comma-separated lists), `SD-Last-Modified`, `SD-Expires`. Optional: `Description`,
//! `Supported-Catalog-Service-ID`, `Maintainer`, and sample RDs. The note's table calls
//! the samples `Sample-RD-*` while its example writes `RD-Sample-1`; both are read, and
//! each keeps its name. A sample's value is a SOIF object, so it is kept as bytes.
//!
//! ```
//! use soif_codecs::rdm::{RdmType, ServerDescription};
//! use soif_codecs::Record;
//! let r = Record::new("RDMSERVER", "x-catalog://localhost:8080/main")
//!     .with("Supported-RDM-Type", "rd-request,status-request")
//!     .with("Supported-RDM-Query-Language", "gatherer")
//!     .with("SD-Last-Modified", "Thu, 16 May 1996 11:29:00 GMT")
//!     .with("SD-Expires", "Thu, 01 Jan 1997 00:00:00 GMT");
//! let sd = ServerDescription::from_record(&r).unwrap();
//! assert!(sd.supports(RdmType::StatusRequest));
//! assert_eq!(sd.to_record(), r);
//! ```

use super::fields::{
    check_template, is, keyword, new_record, plain, set_once, split_list, text, url_of,
};
use super::{Csid, QueryLanguage, RdmDate, RdmError, RdmType};
use crate::record::{Attribute, Record};

/// The template type of a server description object.
pub const RDMSERVER: &str = "RDMSERVER";

/// An `@RDMSERVER` object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerDescription {
    /// The object's URL: in the note, the server's CSID (`None` for `-`).
    pub url: Option<String>,
    /// `Description`: human-readable description of the content.
    pub description: Option<String>,
    /// `Supported-RDM-Type` (required).
    pub supported_types: Vec<RdmType>,
    /// `Supported-Catalog-Service-ID`.
    pub supported_catalogs: Vec<Csid>,
    /// `Supported-RDM-Query-Language` (required).
    pub supported_query_languages: Vec<QueryLanguage>,
    /// `Maintainer`: RFC 822 e-mail address.
    pub maintainer: Option<String>,
    /// Sample RDs (`RD-Sample-N` / `Sample-RD-N`), names and values as read.
    pub samples: Vec<Attribute>,
    /// `SD-Last-Modified` (required).
    pub last_modified: RdmDate,
    /// `SD-Expires` (required).
    pub expires: RdmDate,
    /// Attributes the note does not define, kept in order.
    pub extra: Vec<Attribute>,
}

impl ServerDescription {
    /// A description with the required attributes and nothing else.
    pub fn new(
        supported_types: Vec<RdmType>,
        supported_query_languages: Vec<QueryLanguage>,
        last_modified: RdmDate,
        expires: RdmDate,
    ) -> ServerDescription {
        ServerDescription {
            url: None,
            description: None,
            supported_types,
            supported_catalogs: Vec::new(),
            supported_query_languages,
            maintainer: None,
            samples: Vec::new(),
            last_modified,
            expires,
            extra: Vec::new(),
        }
    }

    /// True when the server lists this RDM type.
    pub fn supports(&self, t: RdmType) -> bool {
        self.supported_types.contains(&t)
    }

    /// True when the server lists this query language.
    pub fn supports_query_language(&self, ql: &QueryLanguage) -> bool {
        self.supported_query_languages.contains(ql)
    }

    /// The object's URL as a CSID, when it is one.
    pub fn csid(&self) -> Option<Csid> {
        self.url.as_deref().and_then(|u| Csid::parse(u).ok())
    }

    /// True for a sample-RD attribute name: `RD-Sample-*` or `Sample-RD-*`.
    pub fn is_sample_name(name: &[u8]) -> bool {
        let starts = |prefix: &[u8]| {
            name.len() > prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix)
        };
        starts(b"RD-Sample-") || starts(b"Sample-RD-")
    }

    /// Reads an `@RDMSERVER` object.
    pub fn from_record(record: &Record) -> Result<ServerDescription, RdmError> {
        Self::read(record).map_err(|e| e.with_position(record.position.as_ref()))
    }

    fn read(record: &Record) -> Result<ServerDescription, RdmError> {
        check_template(record, RDMSERVER)?;
        let mut description = None;
        let mut types = None;
        let mut catalogs = None;
        let mut languages = None;
        let mut maintainer = None;
        let mut last_modified = None;
        let mut expires = None;
        let mut samples = Vec::new();
        let mut extra = Vec::new();
        let date = |attr: &Attribute, name: &str| -> Result<RdmDate, RdmError> {
            let v = keyword(attr)?;
            RdmDate::parse(v).map_err(|e| RdmError::invalid(name, v, e.to_string()))
        };
        for attr in &record.attributes {
            if is(attr, "Description") {
                set_once(&mut description, attr, text(attr)?)?;
            } else if is(attr, "Supported-RDM-Type") {
                let list = split_list(keyword(attr)?)
                    .map(|t| {
                        RdmType::parse(t).map_err(|_| {
                            RdmError::invalid(
                                "Supported-RDM-Type",
                                t,
                                "unknown RDM type in the list",
                            )
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                set_once(&mut types, attr, list)?;
            } else if is(attr, "Supported-Catalog-Service-ID") {
                let list = split_list(keyword(attr)?)
                    .map(Csid::parse)
                    .collect::<Result<Vec<_>, _>>()?;
                set_once(&mut catalogs, attr, list)?;
            } else if is(attr, "Supported-RDM-Query-Language") {
                let list = split_list(keyword(attr)?)
                    .map(QueryLanguage::parse)
                    .collect();
                set_once(&mut languages, attr, list)?;
            } else if is(attr, "Maintainer") {
                set_once(&mut maintainer, attr, text(attr)?)?;
            } else if is(attr, "SD-Last-Modified") {
                set_once(&mut last_modified, attr, date(attr, "SD-Last-Modified")?)?;
            } else if is(attr, "SD-Expires") {
                set_once(&mut expires, attr, date(attr, "SD-Expires")?)?;
            } else if ServerDescription::is_sample_name(&attr.name) {
                plain(attr)?;
                samples.push(attr.clone());
            } else {
                extra.push(attr.clone());
            }
        }
        let required = |attribute: &str| RdmError::missing(RDMSERVER, attribute);
        Ok(ServerDescription {
            url: url_of(record),
            description,
            supported_types: types.ok_or_else(|| required("Supported-RDM-Type"))?,
            supported_catalogs: catalogs.unwrap_or_default(),
            supported_query_languages: languages
                .ok_or_else(|| required("Supported-RDM-Query-Language"))?,
            maintainer,
            samples,
            last_modified: last_modified.ok_or_else(|| required("SD-Last-Modified"))?,
            expires: expires.ok_or_else(|| required("SD-Expires"))?,
            extra,
        })
    }

    /// Writes the description back as `@RDMSERVER`, in the order of the note's example:
    /// Description, Supported-RDM-Type, Supported-Catalog-Service-ID,
    /// Supported-RDM-Query-Language, Maintainer, samples, SD-Last-Modified, SD-Expires.
    pub fn to_record(&self) -> Record {
        let mut r = new_record(RDMSERVER, self.url.as_deref());
        if let Some(d) = &self.description {
            r.push("Description", d.as_str());
        }
        let join = |items: Vec<String>| items.join(",");
        r.push(
            "Supported-RDM-Type",
            join(self.supported_types.iter().map(|t| t.to_string()).collect()),
        );
        if !self.supported_catalogs.is_empty() {
            r.push(
                "Supported-Catalog-Service-ID",
                join(
                    self.supported_catalogs
                        .iter()
                        .map(|c| c.to_string())
                        .collect(),
                ),
            );
        }
        r.push(
            "Supported-RDM-Query-Language",
            join(
                self.supported_query_languages
                    .iter()
                    .map(|q| q.to_string())
                    .collect(),
            ),
        );
        if let Some(m) = &self.maintainer {
            r.push("Maintainer", m.as_str());
        }
        r.attributes.extend(self.samples.iter().cloned());
        r.push("SD-Last-Modified", self.last_modified.to_string());
        r.push("SD-Expires", self.expires.to_string());
        r.attributes.extend(self.extra.iter().cloned());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note_example() -> Record {
        Record::new("RDMSERVER", "x-catalog://powell.mcom.com:80/wwwdvl")
            .with(
                "Description",
                "Contains information intended for World Wide Web developers1",
            )
            .with(
                "Supported-RDM-Type",
                "rd-request,taxonomy-description-request,server-description-request,\
                 schema-description-request,status-request",
            )
            .with(
                "Supported-Catalog-Service-ID",
                "x-catalog://powell.mcom.com:80/wwwdvl",
            )
            .with("Supported-RDM-Query-Language", "gatherer,sample-keyword-ql")
            .with("RD-Sample-1", "@DOCUMENT ...")
            .with("RD-Sample-2", "@DOCUMENT ...")
            .with("RD-Sample-3", "@DOCUMENT ...")
            .with("SD-Last-Modified", "Thu, 16 May 1996 11:29:00 GMT")
            .with("SD-Expires", "Thu, 01 Jan 1997 00:00:00 GMT")
    }

    #[test]
    fn note_example_parses_and_round_trips_exactly() {
        let r = note_example();
        let sd = ServerDescription::from_record(&r).unwrap();
        assert_eq!(sd.supported_types.len(), 5);
        assert!(sd.supports(RdmType::TaxonomyDescriptionRequest));
        assert!(!sd.supports(RdmType::RdRequestDeleted));
        assert!(sd.supports_query_language(&QueryLanguage::SampleKeyword));
        assert_eq!(sd.samples.len(), 3);
        assert_eq!(sd.csid().map(|c| c.name), Some("wwwdvl".to_string()));
        assert_eq!(sd.supported_catalogs[0].host, "powell.mcom.com");
        assert!(sd.last_modified < sd.expires);
        assert_eq!(sd.to_record(), r);
    }

    #[test]
    fn both_sample_spellings() {
        assert!(ServerDescription::is_sample_name(b"Sample-RD-1"));
        assert!(ServerDescription::is_sample_name(b"rd-sample-12"));
        assert!(!ServerDescription::is_sample_name(b"RD-Sample-"));
        assert!(!ServerDescription::is_sample_name(b"Sample"));
    }

    #[test]
    fn required_and_invalid() {
        for name in [
            "Supported-RDM-Type",
            "Supported-RDM-Query-Language",
            "SD-Last-Modified",
            "SD-Expires",
        ] {
            let mut r = note_example();
            r.remove(name);
            let e = ServerDescription::from_record(&r).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("@RDMSERVER object is missing required attribute {name}")
            );
        }
        let mut r = note_example();
        r.set("Supported-RDM-Type", "rd-request,rd-teleport");
        let e = ServerDescription::from_record(&r).unwrap_err();
        assert!(e.to_string().contains("\"rd-teleport\""), "{e}");
        let mut r = note_example();
        r.set("SD-Expires", "soon");
        let e = ServerDescription::from_record(&r).unwrap_err();
        assert!(
            e.to_string().starts_with("invalid SD-Expires \"soon\""),
            "{e}"
        );
    }

    #[test]
    fn built_in_code_round_trips() {
        let mut sd = ServerDescription::new(
            RdmType::ALL.to_vec(),
            vec![QueryLanguage::Gatherer, QueryLanguage::Other("x-ql".into())],
            RdmDate::from_unix(0),
            RdmDate::from_unix(86_400),
        );
        sd.maintainer = Some("admin@example.com".into());
        sd.samples
            .push(Attribute::new("Sample-RD-1", &b"@FILE { - \xff }"[..]));
        sd.extra.push(Attribute::new("X-Load", "low"));
        assert_eq!(ServerDescription::from_record(&sd.to_record()), Ok(sd));
    }
}
