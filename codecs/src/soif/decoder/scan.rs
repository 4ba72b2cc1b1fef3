//! Byte-level tests shared by every part of the decoder: whether an object starts at a
//! byte, a size's digits, the trailing `}` of a skipped region, whitespace.

use super::shared::{MAX_HEADER_GAP, MAX_TEMPLATE};

/// Whether an object starts at `p` (`@`, a template name, whitespace of
/// at most [`MAX_HEADER_GAP`] bytes, `{`). `None`: more bytes are needed to tell. The
/// answer depends only on the bytes, never on where a read ended, so resynchronising
/// finds the same objects however the input arrives. `p == 0` is never a start: it is the
/// first byte of the region being skipped (or a byte already looked at).
pub(super) fn is_object_start(buf: &[u8], p: usize, eof: bool) -> Option<bool> {
    // Anywhere, not only after whitespace: Harvest's own parser finds `@FILE {` after
    // garbage on the same line, and so must resynchronisation, or that object is lost.
    if p == 0 || buf.get(p) != Some(&b'@') {
        return Some(false);
    }
    let len = buf.len();
    let mut i = p + 1;
    while i < len
        && i - p <= MAX_TEMPLATE
        && !is_ws(buf[i])
        && buf[i] != b'{'
        && buf[i] != b'@'
        && buf[i] != b'}'
    {
        i += 1;
    }
    if i >= len {
        return if eof { Some(false) } else { None };
    }
    if i == p + 1 || i - p > MAX_TEMPLATE || buf[i] == b'@' || buf[i] == b'}' {
        return Some(false);
    }
    let gap_end = len.min(i + MAX_HEADER_GAP + 1);
    let j = i + buf[i..gap_end].iter().take_while(|&&b| is_ws(b)).count();
    if j - i > MAX_HEADER_GAP {
        return Some(false);
    }
    if j >= len {
        return if eof { Some(false) } else { None };
    }
    Some(buf[j] == b'{')
}

pub(super) enum SizeText {
    Number(u64),
    Overflow,
    NotNumber,
}

pub(super) fn parse_size(text: &[u8]) -> SizeText {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return SizeText::NotNumber;
    }
    let mut n: u64 = 0;
    for &b in text {
        n = match n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(b - b'0')))
        {
            Some(n) => n,
            None => return SizeText::Overflow,
        };
    }
    SizeText::Number(n)
}

/// The number of `}` in the longest suffix of `bytes` made only of `}` and whitespace,
/// plus `before` (the same count for the bytes that came before) when that suffix is all
/// of `bytes`. Folding it over consecutive pieces gives the count for the whole.
pub(super) fn trailing_braces(before: u32, bytes: &[u8]) -> u32 {
    let mut n = 0u32;
    for &b in bytes.iter().rev() {
        if b == b'}' {
            n = n.saturating_add(1);
        } else if !is_ws(b) {
            return n;
        }
    }
    before.saturating_add(n)
}

#[inline]
pub(super) fn is_ws(b: u8) -> bool {
    crate::rules::names::is_soif_space(b)
}

#[inline]
pub(super) fn skip_ws(buf: &[u8], mut i: usize) -> usize {
    while i < buf.len() && is_ws(buf[i]) {
        i += 1;
    }
    i
}

pub(super) fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_starts() {
        assert_eq!(is_object_start(b"x@FILE {", 1, false), Some(true));
        assert_eq!(is_object_start(b"x@FILE\n\n{", 1, false), Some(true));
        // The first byte of a region is never a start.
        assert_eq!(is_object_start(b"@FILE {", 0, false), Some(false));
        // Undecided until the `{` (or something else) arrives, unless the input ended.
        assert_eq!(is_object_start(b"x@FILE ", 1, false), None);
        assert_eq!(is_object_start(b"x@FILE ", 1, true), Some(false));
        assert_eq!(is_object_start(b"x@ {", 1, true), Some(false));
        assert_eq!(is_object_start(b"x@A@B {", 1, true), Some(false));
        let gap = format!("x@FILE{}{{", " ".repeat(MAX_HEADER_GAP + 1));
        assert_eq!(is_object_start(gap.as_bytes(), 1, true), Some(false));
        let name = format!("x@{} {{", "T".repeat(MAX_TEMPLATE + 1));
        assert_eq!(is_object_start(name.as_bytes(), 1, true), Some(false));
    }

    #[test]
    fn sizes() {
        assert!(matches!(parse_size(b"123"), SizeText::Number(123)));
        assert!(matches!(
            parse_size(b"18446744073709551615"),
            SizeText::Number(u64::MAX)
        ));
        assert!(matches!(
            parse_size(b"18446744073709551616"),
            SizeText::Overflow
        ));
        assert!(matches!(parse_size(b""), SizeText::NotNumber));
        assert!(matches!(parse_size(b"12a"), SizeText::NotNumber));
        assert!(matches!(parse_size(b"-1"), SizeText::NotNumber));
    }

    #[test]
    fn trailing_braces_fold_over_pieces() {
        let whole: &[u8] = b"x } }\n";
        for cut in 0..=whole.len() {
            let (a, b) = whole.split_at(cut);
            assert_eq!(trailing_braces(trailing_braces(0, a), b), 2, "cut at {cut}");
        }
        // A piece that is not all braces and whitespace does not add what came before.
        assert_eq!(trailing_braces(5, b"ab}"), 1);
        assert_eq!(trailing_braces(5, b" \n"), 5);
    }

    #[test]
    fn whitespace() {
        assert_eq!(skip_ws(b" \t\r\n\x0b\x0cx", 0), 6);
        assert!(!is_ws(0xa0));
        assert_eq!(lossy(b"a\xffb"), "a\u{fffd}b");
    }
}
