//! Lenient boundary guessing: where a value ends when its byte count is wrong or
//! missing. A boundary is whitespace then the next attribute (`NAME{n}`) or the object's
//! `}`; a line that reads as an attribute header or as the object's `}` line is the best
//! evidence; and no guess may cross into the next object.

use super::scan::{is_object_start, is_ws, skip_ws};
use super::shared::SEARCH_NAME;

/// Whether a valid boundary starts at `at`: at least `min_ws` whitespace bytes, then `}`
/// (followed by whitespace, `@` or the end) or `NAME{SIZE}` followed by `:` or
/// whitespace. `None`: more bytes are needed to tell.
pub(super) fn boundary_at(
    buf: &[u8],
    at: usize,
    eof: bool,
    min_ws: usize,
    max_name: usize,
) -> Option<bool> {
    let len = buf.len();
    let i = skip_ws(buf, at);
    if i - at < min_ws {
        return Some(false);
    }
    if i >= len {
        return if eof { Some(true) } else { None };
    }
    if buf[i] == b'}' {
        return match buf.get(i + 1) {
            None if eof => Some(true),
            None => None,
            Some(&b) => Some(is_ws(b) || b == b'@'),
        };
    }
    let limit = len.min(i + max_name + 1);
    let brace = match buf[i..limit]
        .iter()
        .position(|&b| b == b'{' || is_ws(b) || b == b'}')
    {
        Some(k) if buf[i + k] == b'{' && k > 0 => i + k,
        Some(_) => return Some(false),
        None if limit == len && !eof => return None,
        None => return Some(false),
    };
    let limit = len.min(brace + 1 + 25);
    let close = match buf[brace + 1..limit]
        .iter()
        .position(|&b| b == b'}' || is_ws(b) || b == b'{')
    {
        Some(k) if buf[brace + 1 + k] == b'}' => brace + 1 + k,
        Some(_) => return Some(false),
        None if limit == len && !eof => return None,
        None => return Some(false),
    };
    match buf.get(close + 1) {
        None if eof => Some(true),
        None => None,
        Some(&b) => Some(b == b':' || is_ws(b)),
    }
}

/// The first place in `buf[start..]` where a value can end at a line break: a newline
/// (the value stops before it, and before a `\r` ahead of it) followed by a line that reads
/// as an attribute header (`Name{n}:` then a tab or space, indented or not) or as the
/// object's end (`}` lines, then the next object or the end of the input). Returns the
/// value's end and what follows it, for the repair message.
///
/// Why lines: every writer of SOIF puts an attribute on a line of its own, so when a
/// byte count is wrong, the next line that parses as an attribute is the best evidence
/// of where the value ended, better than whichever boundary lies nearest the count. A
/// value's own text rarely has such a line (its `}` lines, as in program code, are not
/// followed by an object).
pub(super) fn line_boundary(buf: &[u8], start: usize, eof: bool) -> Option<(usize, &'static str)> {
    for i in memchr::memchr_iter(b'\n', &buf[start.min(buf.len())..]).map(|i| start + i) {
        let what = if attr_line_at(buf, i + 1) {
            "the next attribute line"
        } else if close_line_at(buf, i + 1, eof) {
            "the object's `}` line"
        } else {
            continue;
        };
        let q = if i > start && buf[i - 1] == b'\r' {
            i - 1
        } else {
            i
        };
        return Some((q, what));
    }
    None
}

/// Whether `buf[j..]` starts with an attribute header: spaces or tabs, `NAME{DIGITS}:`
/// then a tab or a space (or `NAME:{DIGITS}` then one, as RFC 2655 prints it).
pub(super) fn attr_line_at(buf: &[u8], mut j: usize) -> bool {
    while j < buf.len() && (buf[j] == b' ' || buf[j] == b'\t') {
        j += 1;
    }
    let name = j;
    while j < buf.len() && !is_ws(buf[j]) && buf[j] != b'{' && buf[j] != b'}' {
        j += 1;
        if j - name > SEARCH_NAME {
            return false;
        }
    }
    if j == name || buf.get(j) != Some(&b'{') {
        return false;
    }
    let colon_before = buf[j - 1] == b':' && j - name > 1;
    j += 1;
    let digits = j;
    while j < buf.len() && buf[j].is_ascii_digit() {
        j += 1;
    }
    if j == digits || j - digits > 20 || buf.get(j) != Some(&b'}') {
        return false;
    }
    match (buf.get(j + 1), buf.get(j + 2)) {
        (Some(b':'), Some(b'\t' | b' ')) => true,
        (Some(b'\t' | b' '), _) => colon_before,
        _ => false,
    }
}

/// Whether `buf[j..]` starts with the object's closing `}` line: spaces or tabs, `}`, then
/// only whitespace and `}` (an envelope's) up to the next object or the end of the input.
pub(super) fn close_line_at(buf: &[u8], mut j: usize, eof: bool) -> bool {
    while j < buf.len() && (buf[j] == b' ' || buf[j] == b'\t') {
        j += 1;
    }
    if buf.get(j) != Some(&b'}') {
        return false;
    }
    loop {
        j += 1;
        j = skip_ws(buf, j);
        match buf.get(j) {
            None => return eof,
            Some(b'}') => {}
            Some(b'@') => return is_object_start(buf, j, eof) == Some(true),
            Some(_) => return false,
        }
    }
}

/// Whether `buf[start..end]` holds an object boundary: a `}` at the value's start or at
/// a line's start, then only whitespace and `}`, then an object start before `end`.
pub(super) fn crosses_object(buf: &[u8], start: usize, end: usize, eof: bool) -> bool {
    let starts = std::iter::once(start)
        .chain(memchr::memchr_iter(b'\n', &buf[start..end]).map(|i| start + i + 1));
    for mut j in starts {
        while j < end && (buf[j] == b' ' || buf[j] == b'\t') {
            j += 1;
        }
        if j >= end || buf[j] != b'}' {
            continue;
        }
        while j < end && (buf[j] == b'}' || is_ws(buf[j])) {
            j += 1;
        }
        if j < end && buf[j] == b'@' && is_object_start(buf, j, eof) == Some(true) {
            return true;
        }
    }
    false
}

/// The first object start (`@TEMPLATE {`) at or after `from`, if one is decided within
/// `buf`.
pub(super) fn object_start_in(buf: &[u8], from: usize, eof: bool) -> Option<usize> {
    let mut at = from.max(1);
    while at < buf.len() {
        let p = at + memchr::memchr(b'@', &buf[at..])?;
        if is_object_start(buf, p, eof) == Some(true) {
            return Some(p);
        }
        at = p + 1;
    }
    None
}

/// The boundary nearest to `end`, searching back to `start` and forward `window` bytes.
pub(super) fn search_boundary(
    buf: &[u8],
    start: usize,
    end: usize,
    window: usize,
    eof: bool,
) -> Option<usize> {
    let len = buf.len();
    let hi = len.min(end.saturating_add(window));
    let mut d = 1;
    loop {
        let back = end.checked_sub(d).filter(|&q| q >= start && q < len);
        let fwd = Some(end + d).filter(|&q| q < hi);
        if back.is_none() && fwd.is_none() && (end < d || end - d < start) && end + d >= hi {
            return None;
        }
        for q in [back, fwd].into_iter().flatten() {
            if is_ws(buf[q]) && boundary_at(buf, q, eof, 1, SEARCH_NAME) == Some(true) {
                return Some(q);
            }
        }
        d += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soif::decoder::{decode_all, DecoderOptions};
    use crate::soif::error::ErrorKind;

    #[test]
    fn a_boundary_is_whitespace_then_an_attribute_or_the_objects_end() {
        assert_eq!(
            boundary_at(b"\nTitle{3}:\tabc", 0, false, 1, 256),
            Some(true)
        );
        assert_eq!(boundary_at(b"\n}\n", 0, false, 1, 256), Some(true));
        assert_eq!(boundary_at(b" x y", 0, false, 1, 256), Some(false));
        // No whitespace where at least one byte of it is required.
        assert_eq!(boundary_at(b"Title{3}:", 0, false, 1, 256), Some(false));
        // `}` at the end of what has arrived: more bytes decide, unless that is the end.
        assert_eq!(boundary_at(b"\n}", 0, false, 1, 256), None);
        assert_eq!(boundary_at(b"\n}", 0, true, 1, 256), Some(true));
        // A name longer than the search allows is no attribute.
        assert_eq!(boundary_at(b" abcdefgh{3}:", 0, true, 1, 4), Some(false));
    }

    #[test]
    fn attribute_and_closing_lines() {
        assert!(attr_line_at(b"  Title{12}:\tx", 0));
        assert!(attr_line_at(b"Title:{12} x", 0));
        assert!(!attr_line_at(b"Title{12}x", 0));
        assert!(!attr_line_at(b"Title{ab}:\tx", 0));
        assert!(close_line_at(b"}\n@FILE { http://b/", 0, false));
        assert!(close_line_at(b" }\n}\n", 0, true));
        assert!(!close_line_at(b"}\n", 0, false));
        assert!(!close_line_at(b"}\nreturn x;", 0, true));
    }

    #[test]
    fn a_value_ends_before_the_first_line_that_reads_as_the_next_attribute() {
        let buf = b"one\r\nnot: an attribute\r\nNext{1}:\tx";
        assert_eq!(
            line_boundary(buf, 0, false),
            Some((22, "the next attribute line"))
        );
        let buf = b"code {\n}\n}\n@FILE { http://b/\n";
        assert_eq!(
            line_boundary(buf, 0, false),
            Some((6, "the object's `}` line"))
        );
        assert_eq!(line_boundary(b"no line here", 0, true), None);
    }

    #[test]
    fn object_boundaries_inside_a_value() {
        let buf = b"x\n}\n@FILE { http://b/\n";
        assert!(crosses_object(buf, 0, buf.len(), true));
        assert!(!crosses_object(b"x\n}\nmore", 0, 8, true));
        assert_eq!(object_start_in(buf, 0, true), Some(4));
        assert_eq!(object_start_in(b"mail@host {", 0, true), Some(4));
        assert_eq!(object_start_in(b"mail@host", 0, true), None);
    }

    #[test]
    fn the_nearest_boundary_is_searched_both_ways() {
        let buf = b"Hello world Next{1}:\tv";
        // Declared to end at 8: the nearest boundary is the space at 11.
        assert_eq!(search_boundary(buf, 0, 8, buf.len(), true), Some(11));
        // Nothing within a window that stops short of it.
        assert_eq!(search_boundary(buf, 0, 8, 2, true), None);
    }

    #[test]
    fn lenient_mode_resynchronises_on_a_corrupted_boundary() {
        // `Title` declares 20 bytes but holds 7: the count runs into the next attribute.
        let input = b"@FILE { http://a/\nTitle{20}:\tExample\nDescription{5}:\tShort\n}\n\
            @FILE { http://b/\n}\n";
        let items = decode_all(input, DecoderOptions::default().lenient());
        let record = items[0].as_ref().unwrap();
        assert_eq!(record.get_str("Title"), Some("Example"));
        assert_eq!(record.get_str("Description"), Some("Short"));
        assert_eq!(
            record.repairs[0].message,
            "attribute `Title` declares 20 bytes; read 7 (13 fewer), up to the next attribute line"
        );
        assert_eq!(items[1].as_ref().unwrap().url_str(), "http://b/");
        // Strict: the object is rejected and the next one still decodes.
        let items = decode_all(input, DecoderOptions::default());
        assert_eq!(
            items[0].as_ref().unwrap_err().kind(),
            &ErrorKind::BadValueSize {
                name: "Title".into(),
                declared: 20
            }
        );
        assert_eq!(items[1].as_ref().unwrap().url_str(), "http://b/");
    }

    #[test]
    fn lenient_mode_does_not_let_a_count_merge_two_objects() {
        // The count lands cleanly on the second object's `}`, swallowing the first's `}`
        // and the second's header.
        let input = b"@FILE { http://a/\nT{22}:\tv\n}\n@FILE { http://b/\n}\n";
        let items = decode_all(input, DecoderOptions::default().lenient());
        assert_eq!(items.len(), 2, "{items:?}");
        assert_eq!(items[0].as_ref().unwrap().get_str("T"), Some("v"));
        assert_eq!(items[1].as_ref().unwrap().url_str(), "http://b/");
    }
}
