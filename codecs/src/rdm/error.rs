//! [`RdmError`]: why an object could not be read as an RDM struct.
//!
//! Every variant names the attribute (or object) at fault and, when the record came from
//! the decoder, where it was found, in the same `what, at input: byte N, record M (url)`
//! shape as the SOIF decoder's errors.

use crate::record::Position;

/// Longest value quoted back in an error message: values come from untrusted input and can
/// be megabytes long; the start is enough to recognise them.
const QUOTE_LIMIT: usize = 80;

/// An RDM object that is missing something, holds something invalid, or turns up where
/// the message does not allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RdmError {
    /// The record is not of the template this struct reads (e.g. `@FILE` given to
    /// [`RdmHeader::from_record`](super::RdmHeader::from_record)).
    #[error("expected an @{expected} object, found @{found}{}", at(.position))]
    WrongTemplate {
        expected: &'static str,
        found: String,
        position: Option<Box<Position>>,
    },
    /// A required attribute is absent.
    #[error("@{template} object is missing required attribute {attribute}{}", at(.position))]
    Missing {
        template: &'static str,
        attribute: String,
        position: Option<Box<Position>>,
    },
    /// An attribute's value does not parse (an unknown RDM type, a bad date, `0..x` hits).
    #[error("invalid {attribute} {value:?}: {reason}{}", at(.position))]
    Invalid {
        attribute: String,
        /// The start of the offending value (at most 80 characters).
        value: String,
        reason: String,
        position: Option<Box<Position>>,
    },
    /// A single-valued attribute appears twice; taking either one would drop the other
    /// silently.
    #[error("{attribute} is given more than once{}", at(.position))]
    Duplicate {
        attribute: String,
        position: Option<Box<Position>>,
    },
    /// A keyword, number, date or identifier that is not UTF-8 (free text is decoded
    /// lossily instead).
    #[error("{attribute} is not valid UTF-8{}", at(.position))]
    NotUtf8 {
        attribute: String,
        position: Option<Box<Position>>,
    },
    /// The value is a list or nested object (made by `collapse`); RDM objects are flat.
    #[error("{attribute} is a list or nested object, not a plain value{}", at(.position))]
    NotPlain {
        attribute: String,
        position: Option<Box<Position>>,
    },
    /// A taxonomy query names a classification the taxonomy does not have.
    #[error("taxonomy {taxonomy:?} has no classification {id:?}")]
    UnknownClassification { taxonomy: String, id: String },
    /// The objects of a taxonomy description do not form a tree (unknown parent, a
    /// cycle, a classification of another taxonomy, a repeated id).
    #[error("invalid taxonomy {taxonomy:?}: {reason}{}", at(.position))]
    BadTaxonomy {
        taxonomy: String,
        reason: String,
        position: Option<Box<Position>>,
    },
    /// An object that the message's RDM type does not allow in its body (the note's
    /// "Body Content" column), e.g. an `@RDMQUERY` in a `status-request`.
    #[error("unexpected @{found} object in the body of a {rdm_type} message: {reason}{}", at(.position))]
    UnexpectedObject {
        rdm_type: String,
        found: String,
        reason: &'static str,
        position: Option<Box<Position>>,
    },
    /// The message ended before its body held what its RDM type requires (e.g. a
    /// `server-description-response` without an `@RDMSERVER`), or had no header at all.
    #[error("incomplete RDM message: {reason}")]
    Incomplete { reason: String },
}

impl RdmError {
    /// Where the offending record was found, when known.
    pub fn position(&self) -> Option<&Position> {
        match self {
            RdmError::WrongTemplate { position, .. }
            | RdmError::Missing { position, .. }
            | RdmError::Invalid { position, .. }
            | RdmError::Duplicate { position, .. }
            | RdmError::NotUtf8 { position, .. }
            | RdmError::NotPlain { position, .. }
            | RdmError::BadTaxonomy { position, .. }
            | RdmError::UnexpectedObject { position, .. } => position.as_deref(),
            RdmError::UnknownClassification { .. } | RdmError::Incomplete { .. } => None,
        }
    }

    /// Attaches the record's position unless the error already carries one. Parsers of
    /// single values do not know the record; `from_record` adds it on the way out.
    pub fn with_position(mut self, at: Option<&Position>) -> RdmError {
        let Some(at) = at else { return self };
        match &mut self {
            RdmError::WrongTemplate { position, .. }
            | RdmError::Missing { position, .. }
            | RdmError::Invalid { position, .. }
            | RdmError::Duplicate { position, .. }
            | RdmError::NotUtf8 { position, .. }
            | RdmError::NotPlain { position, .. }
            | RdmError::BadTaxonomy { position, .. }
            | RdmError::UnexpectedObject { position, .. } => {
                if position.is_none() {
                    *position = Some(Box::new(at.clone()));
                }
            }
            RdmError::UnknownClassification { .. } | RdmError::Incomplete { .. } => {}
        }
        self
    }

    /// An [`RdmError::Invalid`] without a position (the caller's `from_record` adds it).
    pub(crate) fn invalid(attribute: &str, value: &str, reason: impl Into<String>) -> RdmError {
        RdmError::Invalid {
            attribute: attribute.to_string(),
            value: quote(value),
            reason: reason.into(),
            position: None,
        }
    }

    pub(crate) fn missing(template: &'static str, attribute: &str) -> RdmError {
        RdmError::Missing {
            template,
            attribute: attribute.to_string(),
            position: None,
        }
    }
}

/// The first [`QUOTE_LIMIT`] characters of a value, with `…` when cut.
fn quote(value: &str) -> String {
    match value.char_indices().nth(QUOTE_LIMIT) {
        Some((cut, _)) => format!("{}…", &value[..cut]),
        None => value.to_string(),
    }
}

fn at(position: &Option<Box<Position>>) -> String {
    match position {
        Some(p) => format!(", at {p}"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_attribute_and_position() {
        let e = RdmError::missing("RDMHEADER", "RDM-Type")
            .with_position(Some(&Position::new(120, 3).with_url(Some("-".into()))));
        assert_eq!(
            e.to_string(),
            "@RDMHEADER object is missing required attribute RDM-Type, at byte 120, record 3 (-)"
        );
        assert_eq!(e.position().map(|p| p.record), Some(3));
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let long = "x".repeat(1000);
        let e = RdmError::invalid("View-Hits", &long, "not a number");
        let text = e.to_string();
        assert!(text.len() < 200, "{text}");
        assert!(text.contains('…'));
    }

    #[test]
    fn existing_position_is_kept() {
        let e = RdmError::invalid("RDM-Type", "x", "unknown")
            .with_position(Some(&Position::new(1, 1)))
            .with_position(Some(&Position::new(2, 2)));
        assert_eq!(e.position().map(|p| p.offset), Some(1));
    }
}
