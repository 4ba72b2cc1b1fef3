//! The decoder's state machine: between objects, inside one, stepping over a value too
//! large to hold, resynchronising after an error. [`SoifDecoder::decode_inner`] drives it
//! over whatever [`Buffer`] the bytes are in; the object parser ([`super::object`])
//! decides each object, and a finished one becomes a [`Record`] here (or stays in place,
//! [`super::in_place`]).

use super::buffer::Buffer;
use super::lenient::boundary_at;
use super::object::Progress;
use super::replay::skip_file_write;
use super::scan::{is_object_start, is_ws, trailing_braces};
use super::shared::{SoifDecoder, State, Take, LOOKAHEAD, MAX_NAME};
use crate::record::{Attribute, Position, Record, Value};
use crate::soif::error::{DecodeError, ErrorKind};
use bytes::{Bytes, BytesMut};

impl SoifDecoder {
    pub(super) fn advance<B: Buffer>(&mut self, src: &mut B, n: usize) {
        src.consume(n);
        self.base += n as u64;
    }

    pub(super) fn decode_inner<B: Buffer, T: Take>(
        &mut self,
        src: &mut B,
        eof: bool,
    ) -> Option<Result<T::Out, DecodeError>> {
        loop {
            match &mut self.state {
                State::Between => {
                    let n = src.iter().position(|b| !is_ws(*b)).unwrap_or(src.len());
                    self.advance(src, n);
                    if src.is_empty() {
                        if eof {
                            if let Some(action) = self.envelope.take() {
                                // Every record since the envelope's `@` was read with its
                                // action; the file probably did not mean that. Said
                                // loudly, at the end, with where the envelope began.
                                let kind = ErrorKind::UnclosedEnvelope {
                                    envelope: action.envelope().to_string(),
                                    opened_at: self.envelope_at,
                                };
                                let pos = Position::new(self.envelope_at, self.records + 1)
                                    .with_input(self.opts.input.clone());
                                let mut err = DecodeError::new(kind, pos);
                                err.set_envelope(Some(action), false);
                                return Some(Err(err));
                            }
                        }
                        return None;
                    }
                    match src[0] {
                        b'@' => {
                            // An object boundary: everything before it has been handed
                            // out, and only `carried()` goes on to what follows.
                            if self.stop_at.is_some_and(|s| self.base >= s) {
                                self.stopped = true;
                                return None;
                            }
                            self.obj.reset();
                            self.state = State::Object;
                        }
                        b'}' if self.envelope.is_some() => {
                            self.advance(src, 1);
                            self.envelope = None;
                        }
                        _ => {
                            let err = DecodeError::new(
                                ErrorKind::Garbage { len: 0 },
                                Position::new(self.base, self.records + 1)
                                    .with_input(self.opts.input.clone()),
                            );
                            self.state = State::Resync {
                                err: Some(err),
                                scan_from: 0,
                                lost: 0,
                                owned: 0,
                                braces: 0,
                                prefix: None,
                            };
                        }
                    }
                }
                State::Object => {
                    // The parser is shown at most `limit` bytes of an object: the object
                    // itself (at most max_record_size) plus the lenient search window
                    // past its last value. Needing more means the object is too large;
                    // and since the parser never sees beyond, what it decides does not
                    // depend on how much had arrived when it looked (a mapped file and
                    // a stream read in any sizes give the same items).
                    let max = self.opts.max_record_size;
                    let limit = max.saturating_add(max / 8).saturating_add(2 * LOOKAHEAD);
                    let view = src.len().min(limit);
                    match self.parse_object(&src[..view], eof && src.len() <= limit) {
                        // Over the limit only once a byte past it has arrived: with
                        // exactly `limit` bytes the input may end there, and a mapped
                        // file, which knows its end, would call that truncated (found by
                        // fuzzing: the two paths disagreed).
                        Progress::NeedMore if src.len() > limit => {
                            return Some(Err(self.oversized(src, view)));
                        }
                        Progress::NeedMore if view >= limit => return None,
                        // Known only to be over: where exactly the parser stood depends
                        // on how much whitespace had arrived.
                        Progress::Oversized => {
                            return Some(Err(self.oversized(src, max.saturating_add(1))));
                        }
                        Progress::NeedMore => {
                            // A value whose size is known (and within max_record_size)
                            // gets its whole buffer now: a 100 MB value then costs one
                            // allocation instead of a doubling series with its copies.
                            src.make_room(self.want);
                            return None;
                        }
                        Progress::Complete(end) if end > self.opts.max_record_size => {
                            let name = self.current_name(src);
                            let mut err = DecodeError::new(
                                ErrorKind::RecordTooLarge {
                                    name,
                                    declared: end as u64,
                                    max: self.opts.max_record_size,
                                },
                                self.position_in(src, 0),
                            );
                            err.set_raw(src.take(end));
                            err.set_envelope(self.envelope, false);
                            self.base += end as u64;
                            self.records += 1;
                            self.state = State::Between;
                            return Some(Err(err));
                        }
                        Progress::Complete(end) => {
                            let out = T::take(self, src, end);
                            self.state = State::Between;
                            return Some(Ok(out));
                        }
                        Progress::Envelope(end) => {
                            self.advance(src, end);
                            self.state = State::Between;
                        }
                        Progress::Error(err, from) => {
                            self.records += 1;
                            self.state = State::Resync {
                                err: Some(err),
                                scan_from: from.max(1),
                                lost: 0,
                                owned: 1,
                                braces: 0,
                                prefix: None,
                            };
                        }
                        Progress::TooLarge {
                            mut err,
                            start,
                            size,
                            name,
                        } => {
                            err.set_envelope(self.envelope, false);
                            self.records += 1;
                            // The skip starts at the delimiter's last byte, so that an
                            // object starting right at the value's first byte is found
                            // if the skip is undone (resynchronisation never takes the
                            // first byte of what it scans).
                            let head = start - 1;
                            let prefix = src.take(head);
                            self.base += head as u64;
                            self.skip_file = None;
                            self.state = State::Skip {
                                remaining: size.saturating_add(1),
                                skipped: 0,
                                err: Box::new(err),
                                prefix,
                                name,
                                size,
                            };
                        }
                    }
                }
                State::Skip {
                    remaining, skipped, ..
                } => {
                    // Step over the declared bytes as they arrive (in the stream path
                    // keeping them on disk), then over whitespace, and look at what
                    // follows: another attribute or the object's `}` confirms the size.
                    let mut n = (*remaining).min(src.len() as u64) as usize;
                    *remaining -= n as u64;
                    if *remaining == 0 {
                        n += src[n..].iter().take_while(|&&b| is_ws(b)).count();
                    }
                    *skipped += n as u64;
                    let in_value = *remaining > 0;
                    if !B::HELD_WHOLE {
                        skip_file_write(&mut self.skip_file, &mut self.io_error, &src[..n]);
                    }
                    src.consume(n);
                    self.base += n as u64;
                    let verdict = if in_value {
                        if eof {
                            Some(false)
                        } else {
                            return None;
                        }
                    } else {
                        boundary_at(src, 0, eof, 0, MAX_NAME)
                    };
                    match verdict {
                        None => return None,
                        Some(true) => {
                            // The size was right: the object really is too large. The
                            // rest of it (attributes after the value, its `}`) is
                            // discarded up to the next object start.
                            self.skip_file = None;
                            let State::Skip { err, .. } = std::mem::replace(
                                &mut self.state,
                                State::Resync {
                                    err: None,
                                    scan_from: 0,
                                    lost: 0,
                                    owned: 1,
                                    braces: 0,
                                    prefix: None,
                                },
                            ) else {
                                unreachable!("in the Skip state")
                            };
                            return Some(Err(*err));
                        }
                        Some(false) => {
                            if !self.undo_skip(src, in_value) {
                                return None;
                            }
                        }
                    }
                }
                State::Resync {
                    err,
                    scan_from,
                    lost,
                    owned,
                    braces,
                    prefix,
                } => {
                    let mut found = None;
                    // Everything before `undecided` is known not to start an object; an
                    // `@` there needs more bytes to tell.
                    let mut undecided = src.len();
                    let mut from = *scan_from;
                    while let Some(i) = memchr::memchr(b'@', &src[from.min(src.len())..]) {
                        let p = from + i;
                        match is_object_start(src, p, eof) {
                            Some(true) => {
                                found = Some(p);
                                break;
                            }
                            Some(false) => from = p + 1,
                            None => {
                                undecided = p;
                                break;
                            }
                        }
                    }
                    let end = match found {
                        Some(p) => p,
                        None if eof => src.len(),
                        None => {
                            // Keep at most one record's worth of skipped bytes for the
                            // quarantine; beyond that they are counted, not kept. What is
                            // dropped is only what is decided: a possible object start
                            // at the end stays, with the byte before it, which tells
                            // whether the `@` follows whitespace. (The undecided rest is
                            // short: a template name and a bounded gap before `{`.)
                            let n = undecided.saturating_sub(1);
                            if undecided > self.opts.max_record_size {
                                *braces = trailing_braces(*braces, &src[..n]);
                                *lost += n as u64;
                                src.consume(n);
                                self.base += n as u64;
                                *scan_from = undecided - n;
                            } else {
                                *scan_from = undecided;
                            }
                            return None;
                        }
                    };
                    let lost = *lost;
                    let err = err.take();
                    let prefix = prefix.take();
                    // Did the skipped bytes hold the envelope's `}`? (See "Errors inside
                    // envelopes".) Decided on the bytes alone, however they arrived.
                    let envelope = self.envelope;
                    let closes =
                        envelope.is_some() && trailing_braces(*braces, &src[..end]) > *owned;
                    if closes {
                        self.envelope = None;
                    }
                    let raw = src.take(end);
                    self.base += end as u64;
                    self.state = State::Between;
                    if let Some(mut e) = err {
                        e.set_envelope(envelope, closes);
                        if let ErrorKind::Garbage { len } = e.kind_mut() {
                            *len = lost + end as u64;
                        }
                        // The same rule however the input arrived: a region longer than
                        // one record is counted, not kept (`lost` is only the part that
                        // was already dropped while waiting for its end).
                        let head = prefix.as_ref().map_or(0, |p| p.len() as u64);
                        let whole = head + lost + end as u64;
                        if whole <= self.opts.max_record_size as u64 && whole > 0 {
                            e.set_raw(match prefix {
                                Some(p) if !p.is_empty() => {
                                    let mut joined = BytesMut::with_capacity(whole as usize);
                                    joined.extend_from_slice(&p);
                                    joined.extend_from_slice(&raw);
                                    joined.freeze()
                                }
                                _ => raw,
                            });
                        }
                        return Some(Err(e));
                    }
                }
            }
        }
    }

    /// The object being parsed is over `max_record_size` and how far it goes is not
    /// known: it is rejected (`declared` is what is known of its size) and its bytes are
    /// skipped up to the next object start, counted but not kept.
    pub(super) fn oversized(&mut self, src: &[u8], declared: usize) -> DecodeError {
        let mut err = DecodeError::new(
            ErrorKind::RecordTooLarge {
                name: self.current_name(src),
                declared: declared as u64,
                max: self.opts.max_record_size,
            },
            self.position_in(src, 0),
        );
        err.set_envelope(self.envelope, false);
        self.records += 1;
        self.state = State::Resync {
            err: None,
            scan_from: self.obj.cursor.max(1),
            lost: 0,
            owned: 1,
            braces: 0,
            prefix: None,
        };
        err
    }

    pub(super) fn take_record<B: Buffer>(&mut self, src: &mut B, end: usize) -> Record {
        if self.skim {
            // The boundary pass: the object is parsed (that decides where it ends) but
            // nothing of it is kept.
            src.consume(end);
            self.base += end as u64;
            self.records += 1;
            return Record::default();
        }
        let raw = src.take(end);
        let o = &mut self.obj;
        let attributes = o
            .attrs
            .iter()
            .map(|(n, v)| Attribute {
                name: raw.slice(n.clone()),
                value: Value::Bytes(raw.slice(v.clone())),
            })
            .collect();
        let url = match o.url_joined.take() {
            Some(u) => Bytes::from(u),
            None => raw.slice(o.url.clone()),
        };
        let repairs = std::mem::take(&mut o.repairs);
        let record = Record {
            template: raw.slice(o.template.clone()),
            url,
            attributes,
            action: self.envelope,
            position: Some(
                Position::new(self.base, self.records + 1).with_input(self.opts.input.clone()),
            ),
            raw: Some(raw),
            repairs,
        };
        self.base += end as u64;
        self.records += 1;
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Action;
    use crate::soif::decoder::{decode_all, DecoderOptions};
    use tokio_util::codec::Decoder;

    type Item = Result<Record, DecodeError>;

    /// Feeds `input` to a fresh decoder `chunk` bytes at a time, as a read loop does.
    fn feed(input: &[u8], chunk: usize, opts: DecoderOptions) -> Vec<Item> {
        let mut d = SoifDecoder::new(opts);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some(item) = d.decode(&mut buf).expect("no skip file in play") {
                out.push(item);
            }
        }
        while let Some(item) = d.decode_eof(&mut buf).expect("no skip file in play") {
            out.push(item);
        }
        out
    }

    #[test]
    fn a_header_split_across_reads_waits_in_the_object_state() {
        let mut d = SoifDecoder::default();
        let mut buf = BytesMut::from(&b"@FI"[..]);
        assert!(d.decode(&mut buf).unwrap().is_none());
        assert!(matches!(d.state, State::Object));
        // Nothing is consumed while the header is incomplete.
        assert_eq!(d.offset(), 0);
        assert_eq!(&buf[..], b"@FI");
        buf.extend_from_slice(b"LE { http://a/\nTitle{2}:\tHi\n}\n");
        let record = d.decode(&mut buf).unwrap().unwrap().unwrap();
        assert_eq!(record.template_str(), "FILE");
        assert_eq!(record.url_str(), "http://a/");
        assert_eq!(record.get_str("Title"), Some("Hi"));
        assert!(matches!(d.state, State::Between));
        assert_eq!(d.objects(), 1);
        assert_eq!(d.offset(), 32);
    }

    #[test]
    fn every_way_of_splitting_the_input_gives_the_same_items() {
        let input: &[u8] = b"@FILE { http://a/\nTitle{5}:\tHello\nBody{12}:\tline\n}\nline\n}\n\
            junk\n@DELETE {\n@FILE { http://b/\n}\n}\n@URL { http://c/\nT{x}:\tv\n}\n\
            @FILE { http://d/\n}\n";
        let whole = decode_all(input, DecoderOptions::default());
        assert_eq!(whole.len(), 5, "{whole:?}");
        for chunk in 1..=9 {
            assert_eq!(
                feed(input, chunk, DecoderOptions::default()),
                whole,
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn garbage_between_objects_is_one_error_with_its_bytes() {
        let items = feed(
            b"garbage\n@FILE { http://a/\n}\n",
            3,
            DecoderOptions::default(),
        );
        let err = items[0].as_ref().unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::Garbage { len: 8 });
        assert_eq!(err.raw().map(|b| &b[..]), Some(&b"garbage\n"[..]));
        assert_eq!(err.position().offset, 0);
        assert_eq!(items[1].as_ref().unwrap().url_str(), "http://a/");
        assert_eq!(items.len(), 2);
    }

    #[test]
    fn the_braces_after_a_bad_object_decide_whether_its_envelope_closed() {
        // Two `}` after the bad object: its own and the envelope's.
        let closed = b"@DELETE {\n@FILE { http://bad/\nT{x}:\tv\n}\n}\n@FILE { http://good/\n}\n";
        let items = decode_all(closed, DecoderOptions::default());
        let err = items[0].as_ref().unwrap_err();
        assert_eq!(err.envelope(), Some(Action::Delete));
        assert!(err.closes_envelope());
        assert_eq!(items[1].as_ref().unwrap().action, None);
        // One `}`: the bad object's own; the envelope is still open.
        let open = b"@DELETE {\n@FILE { http://bad/\nT{x}:\tv\n}\n@FILE { http://good/\n}\n}\n";
        let items = decode_all(open, DecoderOptions::default());
        assert!(!items[0].as_ref().unwrap_err().closes_envelope());
        assert_eq!(items[1].as_ref().unwrap().action, Some(Action::Delete));
        assert_eq!(items.len(), 2);
    }

    #[test]
    fn an_envelope_never_closed_is_reported_where_it_began() {
        let items = decode_all(
            b"\n@UPDATE {\n@FILE { http://a/\n}\n",
            DecoderOptions::default(),
        );
        assert_eq!(items[0].as_ref().unwrap().action, Some(Action::Update));
        let err = items[1].as_ref().unwrap_err();
        assert_eq!(
            err.kind(),
            &ErrorKind::UnclosedEnvelope {
                envelope: "UPDATE".into(),
                opened_at: 1
            }
        );
    }

    #[test]
    fn an_object_over_the_limit_without_a_declared_size_is_rejected_and_skipped() {
        // No value declares the size: the URL alone takes the object over.
        let long_url = format!(
            "@FILE {{ http://a/{}\n}}\n@FILE {{ http://b/\n}}\n",
            "x".repeat(100)
        );
        let opts = DecoderOptions::with_max_record_size(48);
        for chunk in [1, 7, 1000] {
            let items = feed(long_url.as_bytes(), chunk, opts.clone());
            assert!(
                matches!(
                    items[0].as_ref().unwrap_err().kind(),
                    ErrorKind::RecordTooLarge { max: 48, .. }
                ),
                "{items:?}"
            );
            assert_eq!(items[1].as_ref().unwrap().url_str(), "http://b/");
            assert_eq!(items.len(), 2);
        }
    }
}
