//! The object parser: an object's header (`@TEMPLATE { URL`), its attributes
//! (`NAME{SIZE}:<TAB>VALUE`) and its `}`, resumed where it stopped when more bytes arrive.
//! Where a byte count does not land on a boundary in lenient mode, the guess of where the
//! value really ends is [`super::lenient`]'s.

use super::lenient::{
    boundary_at, crosses_object, line_boundary, object_start_in, search_boundary,
};
use super::scan::{is_object_start, is_ws, lossy, parse_size, skip_ws, SizeText};
use super::shared::{
    Pending, SoifDecoder, LOOKAHEAD, MAX_NAME, MAX_SIZE_TEXT, MAX_TEMPLATE, MAX_URL, SEARCH_NAME,
};
use crate::record::{Action, Position, Repair};
use crate::soif::error::{DecodeError, ErrorKind};

pub(super) enum Progress {
    /// More bytes are needed.
    NeedMore,
    /// An object ends at this offset (exclusive).
    Complete(usize),
    /// An envelope header (or an empty envelope) ends at this offset.
    Envelope(usize),
    /// A bad object: resynchronise from this offset.
    Error(DecodeError, usize),
    /// A value's declared size takes the object over `max_record_size`: the value starts
    /// at `start` (relative to the object) and declares `size` bytes for attribute `name`.
    TooLarge {
        err: DecodeError,
        start: usize,
        size: u64,
        name: String,
    },
    /// What was parsed of the object (up to `cursor`) is already over
    /// `max_record_size`, and how far it goes is not known.
    Oversized,
}

impl SoifDecoder {
    /// The position of `src[rel]` in the object being parsed, with its URL once read.
    pub(super) fn position_in(&self, src: &[u8], rel: usize) -> Position {
        let url = match (&self.obj.url_joined, self.obj.header_done) {
            (Some(u), _) => Some(lossy(u)),
            (None, true) => src.get(self.obj.url.clone()).map(lossy),
            (None, false) => None,
        };
        Position::new(self.base + rel as u64, self.records + 1)
            .with_input(self.opts.input.clone())
            .with_url(url)
    }

    pub(super) fn current_name(&self, src: &[u8]) -> String {
        let range = self
            .obj
            .pending
            .as_ref()
            .map(|p| p.name.clone())
            .or_else(|| self.obj.attrs.last().map(|a| a.0.clone()));
        match range.and_then(|r| src.get(r)) {
            Some(n) => String::from_utf8_lossy(n).into_owned(),
            None => String::new(),
        }
    }

    pub(super) fn repair(&mut self, rel: usize, message: String) {
        self.obj.repairs.push(Repair {
            offset: self.base + rel as u64,
            message,
        });
    }

    pub(super) fn error(&self, src: &[u8], kind: ErrorKind, rel: usize) -> DecodeError {
        let mut err = DecodeError::new(kind, self.position_in(src, rel));
        err.set_lenient(self.opts.lenient);
        err
    }

    /// Parses the object at `src[0]` from where it stopped last time.
    pub(super) fn parse_object(&mut self, src: &[u8], eof: bool) -> Progress {
        let buf = src;
        let len = buf.len();
        if !self.obj.header_done {
            match self.parse_header(src, eof) {
                Ok(None) => {}
                Ok(Some(progress)) => return progress,
                Err((kind, at)) => return Progress::Error(self.error(src, kind, at), 1),
            }
        }
        let lenient = self.opts.lenient;
        let max = self.opts.max_record_size;
        loop {
            if let Some(p) = self.obj.pending.take() {
                match self.finish_value(src, p, eof) {
                    Ok(true) => continue,
                    Ok(false) => return self.need_more(src, eof),
                    Err(progress) => return progress,
                }
            }
            let c = skip_ws(buf, self.obj.cursor);
            self.obj.cursor = c;
            // Before every attribute name or `}`: a long URL, a value of unknown size or
            // whitespace can take the object past the limit without any declared size
            // saying so. (Checked here, at a point every way of reading reaches, so the
            // outcome does not depend on where reads ended.)
            if c > max {
                return Progress::Oversized;
            }
            if c >= len {
                return self.need_more(src, eof);
            }
            if buf[c] == b'}' {
                return Progress::Complete(c + 1);
            }
            // The attribute name: up to `{`.
            let limit = len.min(c + MAX_NAME + 1);
            // Names exclude braces: `a}b{1}:` is not an attribute.
            let stop = buf[c..limit]
                .iter()
                .position(|&b| b == b'{' || b == b'}' || is_ws(b))
                .map(|i| c + i);
            let n = match stop {
                None if limit == len => return self.need_more(src, eof),
                None => {
                    return Progress::Error(
                        self.error(src, ErrorKind::NameTooLong { max: MAX_NAME }, c),
                        self.obj.last_value_start,
                    )
                }
                Some(n) => n,
            };
            if buf[n] != b'{' || n == c {
                // Whitespace before any `{`: not an attribute.
                if lenient && self.obj.attrs.is_empty() && n > c && is_ws(buf[n]) {
                    // `@T { ftp://host/dir/ file.txt\n`: a URL broken by a line wrap.
                    let mut url = self
                        .obj
                        .url_joined
                        .take()
                        .unwrap_or_else(|| buf[self.obj.url.clone()].to_vec());
                    url.extend_from_slice(&buf[c..n]);
                    self.obj.url_joined = Some(url);
                    self.repair(
                        c,
                        format!(
                            "URL continued after whitespace: joined `{}`",
                            lossy(&buf[c..n])
                        ),
                    );
                    self.obj.cursor = n;
                    continue;
                }
                match is_object_start(buf, c, eof) {
                    // `@FILE {` where an attribute or `}` was expected: this object was
                    // never closed. It is rejected and the next one decodes normally.
                    Some(true) => {
                        let kind = ErrorKind::Unclosed;
                        return Progress::Error(self.error(src, kind, c), c);
                    }
                    // `@FILE ` with its `{` not read yet: which error this is depends on
                    // bytes still to come (found by fuzzing with one-byte reads).
                    None => return self.need_more(src, eof),
                    Some(false) => {}
                }
                let kind = match self.obj.attrs.last() {
                    Some((name, value)) => ErrorKind::BadValueSize {
                        name: lossy(&buf[name.clone()]),
                        declared: value.len() as u64,
                    },
                    None if n == c => ErrorKind::BadHeader {
                        reason: "expected an attribute name or `}` after the URL".into(),
                    },
                    None => ErrorKind::MissingSize {
                        name: lossy(&buf[c..n]),
                    },
                };
                return Progress::Error(self.error(src, kind, c), self.obj.last_value_start);
            }
            let mut name = c..n;
            // The size: `{DIGITS}`.
            let limit = len.min(n + 1 + MAX_SIZE_TEXT);
            let close = match memchr::memchr(b'}', &buf[n + 1..limit]) {
                Some(i) => n + 1 + i,
                None if limit == len && !eof => return Progress::NeedMore,
                None => {
                    let kind = ErrorKind::MissingSize {
                        name: lossy(&buf[name.clone()]),
                    };
                    return Progress::Error(self.error(src, kind, n), self.obj.last_value_start);
                }
            };
            let size_text = &buf[n + 1..close];
            let size = match parse_size(size_text) {
                SizeText::Number(s) => Some(s),
                SizeText::Overflow => {
                    let kind = ErrorKind::SizeOverflow {
                        name: lossy(&buf[name.clone()]),
                        size: lossy(size_text),
                    };
                    return Progress::Error(self.error(src, kind, n), self.obj.last_value_start);
                }
                SizeText::NotNumber if lenient => None,
                SizeText::NotNumber => {
                    let kind = ErrorKind::BadSize {
                        name: lossy(&buf[name.clone()]),
                        size: lossy(size_text),
                    };
                    return Progress::Error(self.error(src, kind, n), self.obj.last_value_start);
                }
            };
            // The delimiter: `:<TAB>`.
            let d = close + 1;
            if len < d + 2 && !eof {
                return Progress::NeedMore;
            }
            let b0 = buf.get(d).copied();
            let b1 = buf.get(d + 1).copied();
            let start = match (b0, b1) {
                (Some(b':'), Some(b'\t')) => d + 2,
                // `IDENTIFIER:{21} draft-kunze-dc-00.txt` (RFC 2655 App. C as printed).
                (Some(b' ' | b'\t'), _) if lenient && n - c > 1 && buf[n - 1] == b':' => {
                    name = c..n - 1;
                    self.repair(
                        c,
                        format!(
                            "attribute `{}`: `NAME:{{n}}` read as `NAME{{n}}:`",
                            lossy(&buf[name.clone()])
                        ),
                    );
                    d + 1
                }
                (Some(b':'), Some(b' ')) if lenient => {
                    self.repair(
                        d,
                        format!(
                            "attribute `{}`: `: ` instead of `:<TAB>`",
                            lossy(&buf[name.clone()])
                        ),
                    );
                    d + 2
                }
                (Some(b':'), _) if lenient => {
                    self.repair(
                        d,
                        format!(
                            "attribute `{}`: no TAB after `:`",
                            lossy(&buf[name.clone()])
                        ),
                    );
                    d + 1
                }
                (Some(b' ' | b'\t'), _) if lenient => {
                    self.repair(
                        d,
                        format!(
                            "attribute `{}`: no `:` after the size",
                            lossy(&buf[name.clone()])
                        ),
                    );
                    d + 1
                }
                _ => {
                    let kind = ErrorKind::MissingDelimiter {
                        name: lossy(&buf[name.clone()]),
                    };
                    return Progress::Error(self.error(src, kind, d), self.obj.last_value_start);
                }
            };
            if let Some(s) = size {
                // Checked before anything is buffered for the value. The size is the
                // input's word: `start + s` may not even fit in a u64.
                let end = (start as u64).checked_add(s);
                let at = self.base + start as u64;
                if let Some(input_end) = self.input_end.filter(|&e| at.saturating_add(s) > e) {
                    // Known to run past the end of the input (see "Undoing a skip").
                    let kind = ErrorKind::Truncated {
                        context: format!(
                            "the value of `{}` declares {s} bytes, {} remain",
                            lossy(&buf[name.clone()]),
                            input_end.saturating_sub(at)
                        ),
                    };
                    return Progress::Error(self.error(src, kind, n), start);
                }
                if end.is_none_or(|end| end > max as u64) {
                    let kind = ErrorKind::RecordTooLarge {
                        name: lossy(&buf[name.clone()]),
                        declared: end.unwrap_or(u64::MAX),
                        max,
                    };
                    return Progress::TooLarge {
                        err: self.error(src, kind, n),
                        start,
                        size: s,
                        name: lossy(&buf[name.clone()]),
                    };
                }
            } else {
                self.repair(n, format!("attribute `{}`: size {{{}}} is not a number; value read to the end of the line", lossy(&buf[name.clone()]), lossy(size_text)));
            }
            self.obj.last_value_start = start;
            self.obj.cursor = start;
            self.obj.pending = Some(Pending {
                name,
                start,
                size,
                scan_from: start,
            });
        }
    }

    pub(super) fn need_more(&mut self, src: &[u8], eof: bool) -> Progress {
        if !eof {
            return Progress::NeedMore;
        }
        let context = match &self.obj.pending {
            Some(p) => match p.size {
                Some(s) => format!(
                    "the value of `{}` declares {} bytes, {} remain",
                    lossy(&src[p.name.clone()]),
                    s,
                    src.len().saturating_sub(p.start)
                ),
                None => format!("in the value of `{}`", lossy(&src[p.name.clone()])),
            },
            None if !self.obj.header_done => "in the object header".to_string(),
            None => "no closing `}`".to_string(),
        };
        let at = src.len();
        Progress::Error(
            self.error(src, ErrorKind::Truncated { context }, at),
            self.obj.last_value_start,
        )
    }

    /// `@TEMPLATE { URL`. Returns `Ok(None)` when the header is done and attributes follow.
    #[allow(clippy::type_complexity)]
    pub(super) fn parse_header(
        &mut self,
        src: &[u8],
        eof: bool,
    ) -> Result<Option<Progress>, (ErrorKind, usize)> {
        let buf = src;
        let len = buf.len();
        let need = |at: usize| -> Result<Option<Progress>, (ErrorKind, usize)> {
            if eof {
                Err((
                    ErrorKind::Truncated {
                        context: "in the object header".into(),
                    },
                    at,
                ))
            } else {
                Ok(Some(Progress::NeedMore))
            }
        };
        let mut i = 1;
        while i < len && i <= MAX_TEMPLATE && !is_ws(buf[i]) && buf[i] != b'{' {
            i += 1;
        }
        if i >= len {
            return need(len);
        }
        if i > MAX_TEMPLATE {
            return Err((
                ErrorKind::BadHeader {
                    reason: format!("template name longer than {MAX_TEMPLATE} bytes"),
                },
                0,
            ));
        }
        if i == 1 {
            return Err((
                ErrorKind::BadHeader {
                    reason: "`@` not followed by a template name".into(),
                },
                0,
            ));
        }
        let template = 1..i;
        let j = skip_ws(buf, i);
        if j >= len {
            return need(len);
        }
        if buf[j] != b'{' {
            return Err((
                ErrorKind::BadHeader {
                    reason: format!("expected `{{` after `@{}`", lossy(&buf[template])),
                },
                j,
            ));
        }
        let k = skip_ws(buf, j + 1);
        if k >= len {
            return need(len);
        }
        if let Some(action) = std::str::from_utf8(&buf[template.clone()])
            .ok()
            .and_then(Action::parse)
        {
            match buf[k] {
                // `@UPDATE {` followed by objects. A new envelope implicitly closes an
                // open one: Harvest never nests them, and a broken record before an
                // envelope's `}` must not turn every later envelope into an error.
                b'@' => {
                    self.envelope = Some(action);
                    self.envelope_at = self.base;
                    return Ok(Some(Progress::Envelope(k)));
                }
                // `@DELETE { }`: an empty section.
                b'}' => return Ok(Some(Progress::Envelope(k + 1))),
                _ => {}
            }
        }
        let limit = len.min(k + MAX_URL + 1);
        let e = match buf[k..limit].iter().position(|&b| is_ws(b)) {
            Some(p) => k + p,
            None if limit == len => return need(len),
            None => {
                return Err((
                    ErrorKind::BadHeader {
                        reason: format!("URL longer than {MAX_URL} bytes"),
                    },
                    k,
                ))
            }
        };
        self.obj.template = template;
        self.obj.url = k..e;
        self.obj.header_done = true;
        self.obj.cursor = e;
        Ok(None)
    }

    /// Completes a pending value. `Ok(true)`: done; `Ok(false)`: more bytes needed.
    // The error is a `Progress` by value: this runs once per attribute, and boxing it
    // would allocate on the error path only, which is not worth the indirection.
    #[allow(clippy::result_large_err)]
    pub(super) fn finish_value(
        &mut self,
        src: &[u8],
        p: Pending,
        eof: bool,
    ) -> Result<bool, Progress> {
        let buf = src;
        let len = buf.len();
        let lenient = self.opts.lenient;
        let end = match p.size {
            Some(size) => {
                // Fits in usize: checked against max_record_size when the size was read.
                let end = p.start + size as usize;
                if !lenient {
                    if len < end {
                        self.want = end;
                        self.obj.pending = Some(p);
                        return Ok(false);
                    }
                    end
                } else {
                    if len < end + LOOKAHEAD && !eof {
                        self.want = end + LOOKAHEAD;
                        self.obj.pending = Some(p);
                        return Ok(false);
                    }
                    // The declared end is taken when it is a clean boundary: an attribute
                    // or `}` after whitespace, or whitespace before it (a name glued to
                    // the value's last byte means the count cut that name in two).
                    let at_end = if len >= end {
                        let clean = end == len
                            || is_ws(buf[end])
                            || buf[end] == b'}'
                            || is_ws(buf[end - 1]);
                        // Only whitespace then the end of the input is no boundary here:
                        // the object's `}` would be missing (it may be inside the value).
                        let at_eof = eof && skip_ws(buf, end) >= len;
                        boundary_at(buf, end, eof, 0, MAX_NAME).map(|b| b && clean && !at_eof)
                    } else {
                        Some(false)
                    };
                    if at_end.is_none() && !eof {
                        // A long run of whitespace after the value: wait to see what follows.
                        self.obj.pending = Some(p);
                        return Ok(false);
                    }
                    // Even a clean end is checked for lines the value would swallow (see
                    // `line_boundary`), so the window past it must be there too.
                    let window = 256 + size as usize / 8;
                    if len < end + window && !eof {
                        self.want = end + window;
                        self.obj.pending = Some(p);
                        return Ok(false);
                    }
                    // What the repair may look at: the same bytes however the input
                    // arrived (never more than `end + window`), and never past the next
                    // object's start, so that a repair cannot merge two objects.
                    let wide_end = len.min(end + window);
                    let wide = &buf[..wide_end];
                    let wide_eof = eof && wide_end == len;
                    let hi = object_start_in(wide, p.start, wide_eof).unwrap_or(wide_end);
                    let view = &buf[..hi];
                    let view_eof = eof && hi == len;
                    // ... but never across an object boundary (a `}` line, then the next
                    // object): in lenient mode a count that would merge two objects is
                    // taken as wrong, even when it happens to land on a boundary.
                    let exact = at_end == Some(true) && !crosses_object(buf, p.start, end, eof);
                    // A count that lands on a clean boundary is believed, whatever the
                    // value holds (a value may quote SOIF). Otherwise the first line that
                    // reads as the next attribute or the object's end wins over the
                    // boundary nearest the count (see `line_boundary`).
                    let chosen = if exact {
                        None
                    } else {
                        line_boundary(wide, p.start, wide_eof)
                            .filter(|&(q, _)| q < hi)
                            .or_else(|| {
                                search_boundary(view, p.start, end, view.len(), view_eof)
                                    .map(|q| (q, "the next attribute on the same line"))
                            })
                    };
                    match chosen {
                        None if exact => end,
                        Some((q, what)) => {
                            let got = (q - p.start) as u64;
                            self.repair(
                                p.start,
                                format!(
                                    "attribute `{}` declares {} bytes; read {} ({} {}), up to {}",
                                    lossy(&buf[p.name.clone()]),
                                    size,
                                    got,
                                    size.abs_diff(got),
                                    if got < size { "fewer" } else { "more" },
                                    what
                                ),
                            );
                            q
                        }
                        None if len < end => {
                            self.obj.pending = Some(p);
                            return Err(self.need_more(src, true));
                        }
                        None => {
                            let kind = ErrorKind::BadValueSize {
                                name: lossy(&buf[p.name.clone()]),
                                declared: size,
                            };
                            return Err(Progress::Error(self.error(src, kind, end), p.start));
                        }
                    }
                }
            }
            None => {
                // `{x}`: to the end of the line, or to the next boundary when the object
                // was flattened onto one line.
                let mut i = p.scan_from;
                let mut found = None;
                while i < len {
                    let b = buf[i];
                    if b == b'\n' {
                        found = Some(i);
                        break;
                    }
                    if is_ws(b) {
                        match boundary_at(buf, i, eof, 1, SEARCH_NAME) {
                            Some(true) => {
                                found = Some(i);
                                break;
                            }
                            Some(false) => {}
                            None => break,
                        }
                    }
                    i += 1;
                }
                match found {
                    Some(mut e) => {
                        if e > p.start && buf[e - 1] == b'\r' {
                            e -= 1;
                        }
                        e
                    }
                    None if eof => len,
                    None => {
                        self.obj.pending = Some(Pending { scan_from: i, ..p });
                        return Ok(false);
                    }
                }
            }
        };
        if self.obj.attrs.len() >= self.max_attributes {
            let kind = ErrorKind::TooManyAttributes {
                max: self.max_attributes,
            };
            return Err(Progress::Error(self.error(src, kind, p.name.start), end));
        }
        self.obj.attrs.push((p.name, p.start..end));
        self.obj.cursor = end;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use crate::soif::decoder::{decode_all, DecoderOptions, SoifDecoder};
    use crate::soif::error::ErrorKind;
    use bytes::BytesMut;
    use tokio_util::codec::Decoder;

    #[test]
    fn the_parser_resumes_where_it_stopped() {
        let mut d = SoifDecoder::default();
        let mut buf = BytesMut::from(&b"@FILE { http://a/\nA{1}:\tx\nB{5}:\tab"[..]);
        assert!(d.decode(&mut buf).unwrap().is_none());
        // `A` is done, `B` waits for its bytes, and the buffer must reach its end.
        assert_eq!(d.obj.attrs.len(), 1);
        let pending = d.obj.pending.clone().expect("B is pending");
        assert_eq!(&buf[pending.name.clone()], b"B");
        assert_eq!(pending.size, Some(5));
        assert_eq!(d.want, pending.start + 5);
        buf.extend_from_slice(b"cde\n}\n");
        let record = d.decode(&mut buf).unwrap().unwrap().unwrap();
        assert_eq!(record.get_str("A"), Some("x"));
        assert_eq!(record.get_str("B"), Some("abcde"));
    }

    #[test]
    fn strict_errors_name_the_attribute_and_the_next_object_decodes() {
        let cases: [(&[u8], ErrorKind); 4] = [
            (
                b"@FILE { http://a/\nT{1} x\n}\n",
                ErrorKind::MissingDelimiter { name: "T".into() },
            ),
            (
                b"@FILE { http://a/\nT{one}:\tx\n}\n",
                ErrorKind::BadSize {
                    name: "T".into(),
                    size: "one".into(),
                },
            ),
            (
                b"@FILE { http://a/\nT:\tx\n}\n",
                ErrorKind::MissingSize { name: "T:".into() },
            ),
            (
                b"@FILE http://a/\n}\n",
                ErrorKind::BadHeader {
                    reason: "expected `{` after `@FILE`".into(),
                },
            ),
        ];
        for (bad, kind) in cases {
            let mut input = bad.to_vec();
            input.extend_from_slice(b"@FILE { http://next/\n}\n");
            let items = decode_all(&input, DecoderOptions::default());
            assert_eq!(items[0].as_ref().unwrap_err().kind(), &kind);
            assert_eq!(items[1].as_ref().unwrap().url_str(), "http://next/");
            assert_eq!(items.len(), 2);
        }
    }

    #[test]
    fn the_end_of_the_input_inside_a_value_says_how_much_is_missing() {
        let items = decode_all(b"@FILE { http://a/\nT{10}:\tab", DecoderOptions::default());
        let err = items[0].as_ref().unwrap_err();
        assert_eq!(
            err.kind(),
            &ErrorKind::Truncated {
                context: "the value of `T` declares 10 bytes, 2 remain".into()
            }
        );
        assert_eq!(err.position().url.as_deref(), Some("http://a/"));
    }

    #[test]
    fn lenient_mode_repairs_delimiters_sizes_and_wrapped_urls() {
        let input =
            b"@FILE { ftp://h/d/ f.txt\nA{2}: Hi\nB:{3}\tabc\nC{x}:\tto the end\nD{1}:\tz\n}\n";
        let items = decode_all(input, DecoderOptions::default().lenient());
        let record = items[0].as_ref().unwrap();
        assert_eq!(record.url_str(), "ftp://h/d/f.txt");
        assert_eq!(record.get_str("A"), Some("Hi"));
        assert_eq!(record.get_str("B"), Some("abc"));
        assert_eq!(record.get_str("C"), Some("to the end"));
        assert_eq!(record.get_str("D"), Some("z"));
        let repairs: Vec<&str> = record.repairs.iter().map(|r| r.message.as_str()).collect();
        assert_eq!(repairs.len(), 4, "{repairs:?}");
        assert!(repairs[0].starts_with("URL continued after whitespace"));
        assert!(repairs[1].contains("`: ` instead of `:<TAB>`"));
        assert!(repairs[2].contains("`NAME:{n}` read as `NAME{n}:`"));
        assert!(repairs[3].contains("size {x} is not a number"));
        // Strict mode takes none of it.
        assert!(decode_all(input, DecoderOptions::default())[0].is_err());
    }

    #[test]
    fn too_many_attributes_is_an_error() {
        let opts = DecoderOptions {
            max_attributes: Some(2),
            ..DecoderOptions::default()
        };
        let items = decode_all(b"@FILE { http://a/\nA{0}:\t\nB{0}:\t\nC{0}:\t\n}\n", opts);
        assert_eq!(
            items[0].as_ref().unwrap_err().kind(),
            &ErrorKind::TooManyAttributes { max: 2 }
        );
    }
}
