//! Attribute-name rules shared by the transforms.
//!
//! SOIF has one flat namespace, and two conventions put structure into it:
//!
//! - a multi-valued attribute is written `Author-1`, `Author-2`, … (RFC 2655 §3.3; the RDM
//!   note's "Multivalue SOIF"); RFC 2655 §4 matches a query attribute against the part of
//!   the identifier *before* that hyphen-integer suffix, ignoring case;
//! - Harvest writes the attributes of an unnested part as `Embed<1>-Type`,
//!   `Embed<1>-Keywords` (Harvest manual, seed `004_…txt`).
//!
//! Only *canonical* suffixes count: a positive integer without leading zeros
//! (`Author-1`, `Author-12`), so that writing the number back gives the same name.
//! `Version-01` or `Part-0` are plain names.

use crate::Record;
use bytes::Bytes;

/// A numeric suffix larger than this is treated as part of the name; it keeps the
/// number in a `u64` and out of pathological data's way.
const MAX_SUFFIX_DIGITS: usize = 18;

/// Parses a canonical positive integer (no sign, no leading zero).
fn canonical_number(digits: &[u8]) -> Option<u64> {
    if digits.is_empty()
        || digits.len() > MAX_SUFFIX_DIGITS
        || digits[0] == b'0'
        || !digits.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    Some(
        digits
            .iter()
            .fold(0u64, |n, d| n * 10 + u64::from(d - b'0')),
    )
}

/// Splits `Author-12` into (`Author`, 12). `None` when the name has no canonical
/// hyphen-integer suffix or nothing before it.
pub fn split_suffix(name: &[u8]) -> Option<(&[u8], u64)> {
    // Most names end in a letter: no search then.
    if !name.last().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let dash = name.iter().rposition(|&b| b == b'-')?;
    if dash == 0 {
        return None;
    }
    let n = canonical_number(&name[dash + 1..])?;
    Some((&name[..dash], n))
}

/// The first `needle` in `hay`, eight bytes at a time. Names are short: `memchr`'s
/// set-up costs more than the search here. (The "has a zero byte" bit trick: borrows can
/// flag a byte after a true hit, never one before, so the lowest flag is the first hit.)
fn position(hay: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut chunks = hay.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word) ^ (LO * u64::from(needle));
        let hits = w.wrapping_sub(LO) & !w & HI;
        if hits != 0 {
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == needle)
        .map(|i| at + i)
}

/// Splits `Embed<1>-Type` into (`Embed`, 1, `Type`). The prefix is everything before the
/// first `<`; the part number must be canonical and the rest non-empty.
pub fn split_embed(name: &[u8]) -> Option<(&[u8], u64, &[u8])> {
    let lt = position(name, b'<')?;
    if lt == 0 {
        return None;
    }
    let after = &name[lt + 1..];
    let gt = after.iter().position(|&b| b == b'>')?;
    let n = canonical_number(&after[..gt])?;
    let rest = after[gt + 1..].strip_prefix(b"-")?;
    if rest.is_empty() {
        return None;
    }
    Some((&name[..lt], n, rest))
}

/// The name without a canonical `-N` suffix (`Author-3` → `Author`).
pub fn base_name(name: &[u8]) -> &[u8] {
    split_suffix(name).map_or(name, |(base, _)| base)
}

/// RFC 2655 §4: does the query attribute `query` match the SOIF identifier `name`?
///
/// A case-insensitive comparison with the part of `name` before any hyphen-integer
/// suffix: `author` matches `author`, `AUTHOR` and `Author-1`. A query that spells out
/// the suffix (`Author-2`) matches that identifier exactly (ignoring case).
pub fn attribute_matches(query: &[u8], name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(query) || base_name(name).eq_ignore_ascii_case(query)
}

/// Every plain value of the attributes that match `query` (RFC 2655 §4), in record order:
/// `author` finds `Author-1`, `Author-2`, or the items of a collapsed `Author` list.
pub fn values_matching<'a>(record: &'a Record, query: &[u8]) -> Vec<&'a Bytes> {
    record
        .attributes
        .iter()
        .filter(|a| attribute_matches(query, &a.name))
        .flat_map(|a| a.value.leaves())
        .collect()
}

/// True when `query` names the record's URL (`URL`, any case): RDM views count the URL
/// as an attribute.
pub fn is_url(query: &[u8]) -> bool {
    query.eq_ignore_ascii_case(b"url")
}

/// Lower-cases ASCII letters, leaving every other byte alone (values are not UTF-8).
pub fn ascii_lower(bytes: &[u8]) -> Vec<u8> {
    bytes.iter().map(u8::to_ascii_lowercase).collect()
}

/// Longest template name the SOIF decoder accepts.
pub const MAX_TEMPLATE: usize = 256;

/// Longest attribute name the SOIF decoder accepts.
pub const MAX_NAME: usize = 4096;

/// Whitespace as the SOIF decoder sees it: it ends a template or attribute name.
#[inline]
pub fn is_soif_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// Why `name` cannot be an attribute name that SOIF writes and reads back (`None` when
/// it can): a name is not empty, at most [`MAX_NAME`] bytes, and holds no whitespace and
/// no brace (the decoder reads a name up to its `{`).
pub fn name_fault(name: &[u8]) -> Option<String> {
    if name.is_empty() {
        return Some("an attribute name cannot be empty".into());
    }
    if name.len() > MAX_NAME {
        return Some(format!("an attribute name is at most {MAX_NAME} bytes"));
    }
    name.iter()
        .find(|&&b| b == b'{' || b == b'}' || is_soif_space(b))
        .map(|&b| format!("an attribute name cannot hold {}", describe_byte(b)))
}

/// Why `template` cannot be a template name (`None` when it can): not empty, at most
/// [`MAX_TEMPLATE`] bytes, no whitespace and no brace.
pub fn template_fault(template: &[u8]) -> Option<String> {
    if template.is_empty() {
        return Some("a template name cannot be empty".into());
    }
    if template.len() > MAX_TEMPLATE {
        return Some(format!("a template name is at most {MAX_TEMPLATE} bytes"));
    }
    template
        .iter()
        .find(|&&b| b == b'{' || b == b'}' || is_soif_space(b))
        .map(|&b| format!("a template name cannot hold {}", describe_byte(b)))
}

fn describe_byte(b: u8) -> String {
    match b {
        b' ' => "a space".into(),
        b'\t' => "a tab".into(),
        b'\n' | b'\r' => "a line break".into(),
        b'{' | b'}' => format!("`{}`", char::from(b)),
        _ => format!("the byte 0x{b:02x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes() {
        assert_eq!(split_suffix(b"Author-1"), Some((&b"Author"[..], 1)));
        assert_eq!(
            split_suffix(b"CONTRIBUTOR-10"),
            Some((&b"CONTRIBUTOR"[..], 10))
        );
        assert_eq!(split_suffix(b"Last-Modified"), None);
        assert_eq!(split_suffix(b"Version-01"), None);
        assert_eq!(split_suffix(b"Part-0"), None);
        assert_eq!(split_suffix(b"-1"), None);
        assert_eq!(split_suffix(b"Title"), None);
        assert_eq!(split_suffix(b"X-1234567890123456789"), None);
    }

    #[test]
    fn position_finds_the_first_byte_at_any_place() {
        for len in 0..40 {
            let hay: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert_eq!(position(&hay, b'<'), None);
            for at in 0..len {
                let mut h = hay.clone();
                h[at] = b'<';
                if at + 1 < len {
                    h[at + 1] = b'<';
                }
                // Bytes just above the needle (`=`) must not be taken for it.
                if at > 0 {
                    h[at - 1] = b'=';
                }
                assert_eq!(position(&h, b'<'), Some(at), "{h:?}");
            }
        }
    }

    #[test]
    fn embeds() {
        assert_eq!(
            split_embed(b"Embed<1>-Nested-Filename"),
            Some((&b"Embed"[..], 1, &b"Nested-Filename"[..]))
        );
        assert_eq!(
            split_embed(b"Embed<12>-Type"),
            Some((&b"Embed"[..], 12, &b"Type"[..]))
        );
        assert_eq!(split_embed(b"Embed<0>-Type"), None);
        assert_eq!(split_embed(b"Embed<1>Type"), None);
        assert_eq!(split_embed(b"Embed<1>-"), None);
        assert_eq!(split_embed(b"<1>-Type"), None);
        assert_eq!(split_embed(b"Weightlist-[IMAGE:Subject]"), None);
    }

    #[test]
    fn rfc_2655_section_4_names() {
        // "a query which asks for a match on the ATTRIBUTE "author" should match the
        // IDENTIFIERs "author", "Author", "AUTHOR", and "Author-1"."
        for id in ["author", "Author", "AUTHOR", "Author-1"] {
            assert!(attribute_matches(b"author", id.as_bytes()), "{id}");
        }
        assert!(!attribute_matches(b"author", b"Authors"));
        assert!(!attribute_matches(b"author", b"Co-Author"));
        assert!(attribute_matches(b"author-2", b"Author-2"));
        assert!(!attribute_matches(b"author-2", b"Author-1"));
    }
    #[test]
    fn names_that_soif_cannot_write_are_named() {
        assert_eq!(name_fault(b"Content-Type"), None);
        assert_eq!(name_fault(b"Embed<1>-Type"), None);
        assert!(name_fault(b"").is_some());
        assert!(name_fault(b"Bad Name").is_some_and(|m| m.contains("a space")));
        assert!(name_fault(b"a{1}").is_some_and(|m| m.contains("`{`")));
        assert!(name_fault(&[b'a'; MAX_NAME + 1]).is_some());
        assert_eq!(template_fault(b"FILE"), None);
        assert!(template_fault(b"").is_some());
        assert!(template_fault(b"A\nB").is_some_and(|m| m.contains("line break")));
    }
}
