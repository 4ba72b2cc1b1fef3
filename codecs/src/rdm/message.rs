//! Reading an RDM message from a decoded record stream, one record at a time.
//!
//! "Each RDM message contains a header and a body … Both the header and body of the RDM
//! messages is encoded using SOIF." The first object must be an `@RDMHEADER`; what the body
//! may hold depends on its RDM-Type (the note's "Body Content" column, see
//! [`BodyKind`]). [`MessageReader`] checks that as the records arrive and turns each into
//! a typed [`MessageItem`]; it keeps only the header and a little state, never the body,
//! so an `rd-response` of any size streams through it.
//!
//! ```
//! use soif_codecs::rdm::{MessageItem, MessageReader, RdmType};
//! use soif_codecs::Record;
//! let mut reader = MessageReader::new();
//! let header = Record::new("RDMHEADER", "-")
//!     .with("RDM-Version", "1.0")
//!     .with("RDM-Type", "rd-response");
//! let rd = Record::new("DOCUMENT", "http://www.netscape.com:80/")
//!     .with("Title", "Welcome to Netscape!");
//! assert!(matches!(reader.push(header), Ok(MessageItem::Header(h)) if h.rdm_type == RdmType::RdResponse));
//! assert!(matches!(reader.push(rd), Ok(MessageItem::Rd(_))));
//! assert!(reader.finish().is_ok());
//! ```

use super::header::{BodyKind, RdmHeader, RDMHEADER};
use super::query::{RdmQuery, RDMQUERY};
use super::schema::{Schema, SCHEMA};
use super::server::{ServerDescription, RDMSERVER};
use super::taxonomy::{Classification, TaxonomyInfo, CLASSIFICATION, TAXONOMY};
use super::RdmError;
use crate::record::Record;

/// One object of an RDM message, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // Short-lived: produced and consumed one at a time.
pub enum MessageItem {
    /// The `@RDMHEADER` (always the first item).
    Header(RdmHeader),
    /// The `@RDMQUERY` of a request.
    Query(RdmQuery),
    /// An `@SCHEMA`: the body of a schema-description-response, or the optional first
    /// object of an rd-response.
    Schema(Schema),
    /// The `@RDMSERVER` of a server-description-response.
    Server(ServerDescription),
    /// The `@TAXONOMY` of a taxonomy-description-response.
    Taxonomy(TaxonomyInfo),
    /// An `@CLASSIFICATION` of a taxonomy-description-response.
    Classification(Classification),
    /// A resource description of an rd-response or rd-response-deleted, as decoded.
    Rd(Record),
}

/// The `RDM-Error-Message` of the `@RDMHEADER` at the start of an RDM reply, if it has
/// one. Only the first object counts: what follows (an HTML status document, RDs) need not
/// decode as SOIF. Used by both ends of a catalog connection to report a refusal.
pub fn reply_error_message(reply: &[u8]) -> Option<String> {
    crate::soif::decode_all(reply, crate::soif::DecoderOptions::default())
        .into_iter()
        .next()?
        .ok()
        .and_then(|r| RdmHeader::from_record(&r).ok())
        .and_then(|h| h.error_message)
}

/// Reads the first record of a message as its header. The note requires the header to
/// come first, so any other object is an error ([`RdmError::WrongTemplate`]).
pub fn read_header(first: &Record) -> Result<RdmHeader, RdmError> {
    RdmHeader::from_record(first)
}

/// Checks and types the records of one RDM message as they arrive.
#[derive(Debug, Clone, Default)]
pub struct MessageReader {
    header: Option<RdmHeader>,
    /// Body objects seen so far.
    body_objects: u64,
    /// Whether the taxonomy body has had its `@TAXONOMY`.
    taxonomy_seen: bool,
}

impl MessageReader {
    /// A reader waiting for the header.
    pub fn new() -> MessageReader {
        MessageReader::default()
    }

    /// The header, once read.
    pub fn header(&self) -> Option<&RdmHeader> {
        self.header.as_ref()
    }

    /// How many body objects have been accepted.
    pub fn body_objects(&self) -> u64 {
        self.body_objects
    }

    /// Accepts the next record of the message. The first must be an `@RDMHEADER`; the
    /// others must fit the header's RDM-Type. A rejected record leaves the reader as it was,
    /// so a caller skipping bad records can go on.
    pub fn push(&mut self, record: Record) -> Result<MessageItem, RdmError> {
        let Some(header) = &self.header else {
            let header = read_header(&record)?;
            self.header = Some(header.clone());
            return Ok(MessageItem::Header(header));
        };
        let rdm_type = header.rdm_type;
        let unexpected = |reason: &'static str| RdmError::UnexpectedObject {
            rdm_type: rdm_type.to_string(),
            found: record.template_str().into_owned(),
            reason,
            position: record.position.clone().map(Box::new),
        };
        let template = |name: &str| record.template.eq_ignore_ascii_case(name.as_bytes());
        if template(RDMHEADER) {
            return Err(unexpected("a message has exactly one @RDMHEADER"));
        }
        let item = match rdm_type.body() {
            BodyKind::Empty => return Err(unexpected("this message type has an empty body")),
            BodyKind::StatusMessage => {
                return Err(unexpected(
                    "the body of a status-response is an HTML 2.0 document, not SOIF",
                ))
            }
            BodyKind::Query => {
                if !template(RDMQUERY) {
                    return Err(unexpected("a request's body is one @RDMQUERY"));
                }
                if self.body_objects > 0 {
                    return Err(unexpected("a request has at most one @RDMQUERY"));
                }
                MessageItem::Query(RdmQuery::from_record(&record)?)
            }
            BodyKind::ResourceDescriptions => {
                // "Schema Description (optional) SOIF stream": a schema may lead the RDs.
                if self.body_objects == 0 && template(SCHEMA) {
                    MessageItem::Schema(Schema::from_record(&record)?)
                } else {
                    MessageItem::Rd(record)
                }
            }
            BodyKind::ServerDescription => {
                if !template(RDMSERVER) {
                    return Err(unexpected("the body is one @RDMSERVER"));
                }
                if self.body_objects > 0 {
                    return Err(unexpected("the body holds exactly one @RDMSERVER"));
                }
                MessageItem::Server(ServerDescription::from_record(&record)?)
            }
            BodyKind::SchemaDescription => {
                if !template(SCHEMA) {
                    return Err(unexpected("the body holds @SCHEMA objects"));
                }
                MessageItem::Schema(Schema::from_record(&record)?)
            }
            BodyKind::TaxonomyDescription => {
                if !self.taxonomy_seen {
                    if !template(TAXONOMY) {
                        return Err(unexpected(
                            "a taxonomy description starts with one @TAXONOMY",
                        ));
                    }
                    let info = TaxonomyInfo::from_record(&record)?;
                    self.taxonomy_seen = true;
                    MessageItem::Taxonomy(info)
                } else if template(CLASSIFICATION) {
                    MessageItem::Classification(Classification::from_record(&record)?)
                } else {
                    return Err(unexpected(
                        "after the @TAXONOMY come only @CLASSIFICATION objects",
                    ));
                }
            }
        };
        self.body_objects += 1;
        Ok(item)
    }

    /// Checks, at the end of the stream, that the message was complete: it had a header,
    /// and a server-description or taxonomy-description response had its object.
    pub fn finish(&self) -> Result<&RdmHeader, RdmError> {
        let Some(header) = &self.header else {
            return Err(RdmError::Incomplete {
                reason: "no @RDMHEADER (the message is empty)".to_string(),
            });
        };
        let missing = match header.rdm_type.body() {
            BodyKind::ServerDescription if self.body_objects == 0 => Some("@RDMSERVER"),
            BodyKind::TaxonomyDescription if !self.taxonomy_seen => Some("@TAXONOMY"),
            BodyKind::SchemaDescription if self.body_objects == 0 => Some("@SCHEMA"),
            _ => None,
        };
        match missing {
            Some(object) => Err(RdmError::Incomplete {
                reason: format!("a {} has no {object}", header.rdm_type),
            }),
            None => Ok(header),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_from_replies() {
        let reply = b"@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{15}:\tstatus-response\n\
RDM-Error-Message{11}:\twrong token\n}\n<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">";
        assert_eq!(reply_error_message(reply).as_deref(), Some("wrong token"));
        // A message that itself holds `}` and a newline.
        let reply = b"@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{15}:\tstatus-response\n\
RDM-Error-Message{15}:\tno {SIZE}\n here\n}\n<HTML>";
        assert_eq!(
            reply_error_message(reply).as_deref(),
            Some("no {SIZE}\n here")
        );
        assert_eq!(reply_error_message(b"<html>"), None);
        assert_eq!(reply_error_message(b""), None);
    }
    use crate::record::Position;

    fn header(t: &str) -> Record {
        Record::new("RDMHEADER", "-")
            .with("RDM-Version", "1.0")
            .with("RDM-Type", t)
    }

    fn reader_after(t: &str) -> MessageReader {
        let mut r = MessageReader::new();
        r.push(header(t)).unwrap();
        r
    }

    #[test]
    fn header_must_come_first() {
        let mut r = MessageReader::new();
        let mut doc = Record::new("DOCUMENT", "http://x/");
        doc.position = Some(Position::new(0, 1));
        let e = r.push(doc).unwrap_err();
        assert_eq!(
            e.to_string(),
            "expected an @RDMHEADER object, found @DOCUMENT, at byte 0, record 1"
        );
        assert!(r.header().is_none());
        assert!(matches!(r.finish(), Err(RdmError::Incomplete { .. })));
        // A rejected record leaves the reader usable.
        assert!(matches!(
            r.push(header("status-request")),
            Ok(MessageItem::Header(_))
        ));
        assert!(r.finish().is_ok());
    }

    #[test]
    fn request_bodies() {
        let mut r = reader_after("rd-request");
        let q = Record::new("RDMQUERY", "-").with("Scope", "all");
        assert!(matches!(r.push(q.clone()), Ok(MessageItem::Query(_))));
        let e = r.push(q).unwrap_err();
        assert!(e.to_string().contains("at most one @RDMQUERY"), "{e}");
        let mut r = reader_after("status-request");
        let e = r.push(Record::new("RDMQUERY", "-")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unexpected @RDMQUERY object in the body of a status-request message: \
             this message type has an empty body"
        );
        let mut r = reader_after("schema-description-request");
        assert!(r.push(Record::new("FILE", "-")).is_err());
        let mut r = reader_after("rd-request");
        assert!(matches!(
            r.push(header("rd-request")),
            Err(RdmError::UnexpectedObject { .. })
        ));
    }

    #[test]
    fn rd_response_with_leading_schema() {
        let mut r = reader_after("rd-response");
        let schema = Record::new("SCHEMA", "-")
            .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
            .with("SOIF-Attribute-1", "Title");
        assert!(matches!(r.push(schema.clone()), Ok(MessageItem::Schema(_))));
        assert!(matches!(
            r.push(Record::new("FILE", "http://a/")),
            Ok(MessageItem::Rd(_))
        ));
        // Only the first body object can be the schema; later ones are RDs.
        assert!(matches!(r.push(schema), Ok(MessageItem::Rd(_))));
        assert_eq!(r.body_objects(), 3);
    }

    #[test]
    fn description_responses() {
        let mut r = reader_after("server-description-response");
        assert!(matches!(r.finish(), Err(RdmError::Incomplete { .. })));
        let sd = Record::new("RDMSERVER", "-")
            .with("Supported-RDM-Type", "status-request")
            .with("Supported-RDM-Query-Language", "gatherer")
            .with("SD-Last-Modified", "Thu, 16 May 1996 11:29:00 GMT")
            .with("SD-Expires", "Thu, 01 Jan 1997 00:00:00 GMT");
        assert!(matches!(r.push(sd.clone()), Ok(MessageItem::Server(_))));
        assert!(r.push(sd).is_err());
        assert!(r.finish().is_ok());

        let mut r = reader_after("taxonomy-description-response");
        let class = Record::new("CLASSIFICATION", "-")
            .with("Id", "A")
            .with("Parent-Id", "ROOT")
            .with("Taxonomy-Id", "T");
        assert!(r.push(class.clone()).is_err());
        let tax = Record::new("TAXONOMY", "-").with("Id", "T");
        assert!(matches!(r.push(tax.clone()), Ok(MessageItem::Taxonomy(_))));
        assert!(matches!(r.push(class), Ok(MessageItem::Classification(_))));
        assert!(r.push(tax).is_err());
        assert!(r.finish().is_ok());

        let mut r = reader_after("status-response");
        let e = r.push(Record::new("HTML", "-")).unwrap_err();
        assert!(e.to_string().contains("HTML 2.0 document"), "{e}");
    }

    #[test]
    fn bad_body_objects_carry_their_position() {
        let mut r = reader_after("rd-request");
        let mut q = Record::new("RDMQUERY", "-").with("View-Hits", "lots");
        q.position = Some(Position::new(99, 2));
        let e = r.push(q).unwrap_err();
        assert_eq!(e.position().map(|p| p.offset), Some(99));
        assert_eq!(r.body_objects(), 0);
    }
}
