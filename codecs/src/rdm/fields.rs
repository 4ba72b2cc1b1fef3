//! Shared helpers for reading and writing the attributes of RDM objects.
//!
//! RDM attribute names are matched ignoring ASCII case (RFC 2655 §4 makes SOIF names
//! case-insensitive, and the note itself writes `soif-attribute` for `SOIF-Attribute`).
//! Keywords, numbers, dates and identifiers must be UTF-8; free text is decoded lossily.

use super::RdmError;
use crate::record::{Attribute, Record, Value};
use bytes::Bytes;

/// Fails unless the record's template is `expected` (ignoring ASCII case).
pub(crate) fn check_template(record: &Record, expected: &'static str) -> Result<(), RdmError> {
    if record.template.eq_ignore_ascii_case(expected.as_bytes()) {
        Ok(())
    } else {
        Err(RdmError::WrongTemplate {
            expected,
            found: record.template_str().into_owned(),
            position: None,
        })
    }
}

/// The value's bytes, or an error for a collapsed list/object.
pub(crate) fn plain(attr: &Attribute) -> Result<&Bytes, RdmError> {
    match &attr.value {
        Value::Bytes(b) => Ok(b),
        _ => Err(RdmError::NotPlain {
            attribute: attr.name_str().into_owned(),
            position: None,
        }),
    }
}

/// A keyword-like value: valid UTF-8, surrounding whitespace removed (lenient decoding of
/// one-line examples can leave a trailing space or newline).
pub(crate) fn keyword(attr: &Attribute) -> Result<&str, RdmError> {
    let bytes = plain(attr)?;
    std::str::from_utf8(bytes)
        .map(str::trim)
        .map_err(|_| RdmError::NotUtf8 {
            attribute: attr.name_str().into_owned(),
            position: None,
        })
}

/// Free text: invalid UTF-8 is replaced (a Latin-1 description is still worth showing).
pub(crate) fn text(attr: &Attribute) -> Result<String, RdmError> {
    Ok(String::from_utf8_lossy(plain(attr)?).trim().to_string())
}

/// Stores `value` in `slot`, refusing a second value for a single-valued attribute.
pub(crate) fn set_once<T>(
    slot: &mut Option<T>,
    attr: &Attribute,
    value: T,
) -> Result<(), RdmError> {
    if slot.is_some() {
        return Err(RdmError::Duplicate {
            attribute: attr.name_str().into_owned(),
            position: None,
        });
    }
    *slot = Some(value);
    Ok(())
}

/// The record's URL as text, `None` for the RFC's "no URL" hyphen.
pub(crate) fn url_of(record: &Record) -> Option<String> {
    if record.has_no_url() || record.url.is_empty() {
        None
    } else {
        Some(record.url_str().into_owned())
    }
}

/// A new record with the given URL (or `-`).
pub(crate) fn new_record(template: &str, url: Option<&str>) -> Record {
    Record::new(
        Bytes::copy_from_slice(template.as_bytes()),
        Bytes::copy_from_slice(url.unwrap_or("-").as_bytes()),
    )
}

/// The items of a comma-separated list (`a,b, c`), trimmed, empty items skipped.
pub(crate) fn split_list(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|item| !item.is_empty())
}

/// `true` when the name (ignoring ASCII case) is `expected`.
pub(crate) fn is(attr: &Attribute, expected: &str) -> bool {
    attr.name.eq_ignore_ascii_case(expected.as_bytes())
}

/// The note's boolean flags: `0` or `1`.
pub(crate) fn parse_flag(attribute: &str, value: &str) -> Result<bool, RdmError> {
    match value {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(RdmError::invalid(attribute, value, "expected 0 or 1")),
    }
}

/// A non-negative integer (priorities, positions, counts).
pub(crate) fn parse_u32(attribute: &str, value: &str) -> Result<u32, RdmError> {
    value
        .parse::<u32>()
        .map_err(|_| RdmError::invalid(attribute, value, "expected a non-negative integer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_trims_and_requires_utf8() {
        let ok = Attribute::new("RDM-Type", " rd-request\n");
        assert_eq!(keyword(&ok).ok(), Some("rd-request"));
        let bad = Attribute::new("RDM-Type", &b"rd-\xffrequest"[..]);
        assert!(matches!(keyword(&bad), Err(RdmError::NotUtf8 { .. })));
        // Free text is decoded lossily instead.
        let latin1 = Attribute::new("Description", &b"caf\xe9"[..]);
        assert_eq!(text(&latin1).ok().as_deref(), Some("caf\u{fffd}"));
    }

    #[test]
    fn lists_skip_empty_items() {
        let items: Vec<_> = split_list(" URL, Title,,Author ").collect();
        assert_eq!(items, ["URL", "Title", "Author"]);
    }

    #[test]
    fn flags_and_numbers() {
        assert_eq!(parse_flag("Is-Internal-1", "1").ok(), Some(true));
        assert!(parse_flag("Is-Internal-1", "yes").is_err());
        assert_eq!(parse_u32("Index-Attribute-2", "1").ok(), Some(1));
        assert!(parse_u32("Index-Attribute-2", "-1").is_err());
    }

    #[test]
    fn lists_and_objects_are_not_plain() {
        let a = Attribute {
            name: Bytes::from_static(b"Scope"),
            value: Value::List(vec!["all".into()]),
        };
        assert!(matches!(plain(&a), Err(RdmError::NotPlain { .. })));
    }
}
