//! Decoding an input held whole (a memory-mapped file): [`DecodeBytes`], an iterator of
//! records that are slices of the input, and [`DecodeBytes::next_in_place`], which hands
//! out a good object as the ranges of its parts ([`ObjectSpans`]) without building a
//! [`Record`].

use super::buffer::{Buffer, Window};
use super::shared::{AsRecord, HeldObject, InPlace, SoifDecoder, State, Take, LOOKAHEAD, MAX_NAME};
use crate::record::{Action, Attribute, Position, Record, Repair, Value};
use crate::soif::error::DecodeError;
use bytes::Bytes;
use std::ops::Range;
use std::sync::Arc;

impl SoifDecoder {
    /// Finishes a complete object without building a [`Record`]: its ranges stay in
    /// `self.obj` (until the next object starts) for [`DecodeBytes::next_in_place`].
    pub(super) fn keep_in_place<B: Buffer>(&mut self, src: &mut B, end: usize) {
        self.held = HeldObject {
            start: self.base,
            end,
            record: self.records + 1,
        };
        src.consume(end);
        self.base += end as u64;
        self.records += 1;
    }
}

/// How far the window over an input held whole grows when the parser needs more bytes
/// and nothing tells it how many: the same order as a streaming read.
pub(super) const WINDOW_STEP: usize = 1 << 20;

/// Decodes an input held whole in memory, such as a memory-mapped file: an iterator of
/// records whose values are slices of the input, so nothing is copied at all.
///
/// Made by [`SoifDecoder::decode_bytes`]. It runs the same parser as the streaming
/// decoder and yields the same items as feeding the input through `FramedRead` would,
/// errors and repairs included. A value whose size is declared is stepped over in one
/// move instead of being read through, which is why one huge record costs no more than
/// its header.
///
/// ```
/// use bytes::Bytes;
/// use soif_codecs::soif::SoifDecoder;
/// let input = Bytes::from_static(b"@FILE { http://a/\nTitle{2}:\tHi\n}\n@FILE { http://b/\n}\n");
/// let urls: Vec<_> = SoifDecoder::default()
///     .decode_bytes(input)
///     .map(|r| r.unwrap().url_str().into_owned())
///     .collect();
/// assert_eq!(urls, ["http://a/", "http://b/"]);
/// ```
pub struct DecodeBytes {
    pub(crate) decoder: SoifDecoder,
    window: Window,
    done: bool,
}

impl DecodeBytes {
    /// Bytes of the input consumed so far (the offset of the next object or gap).
    pub fn offset(&self) -> u64 {
        self.decoder.offset()
    }

    /// The decoder, for its counters.
    pub fn decoder(&self) -> &SoifDecoder {
        &self.decoder
    }
}

impl Iterator for DecodeBytes {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_with::<AsRecord>()
    }
}

impl DecodeBytes {
    fn next_with<T: Take>(&mut self) -> Option<Result<T::Out, DecodeError>> {
        while !self.done {
            let len = self.window.data.len();
            let eof = self.window.end == len;
            if let Some(item) = self.decoder.decode_inner::<_, T>(&mut self.window, eof) {
                return Some(item);
            }
            if self.decoder.stopped {
                // At the range's end (see `split`): not the end of the input, and going
                // on from here is possible once the stop is moved.
                return None;
            }
            if eof {
                self.done = true;
                break;
            }
            // Show the parser more: to the end of a pending value of known size when
            // there is one (it is then checked once, not read through), else one step.
            let w = &mut self.window;
            let want = w.start + self.decoder.pending_end().unwrap_or(0);
            w.end = (w.end + WINDOW_STEP).max(want).min(len);
        }
        None
    }

    /// The next item as [`next`](Iterator::next) gives it, except that a good object is
    /// not made into a [`Record`]: it is handed out as the ranges of its parts in the
    /// input ([`ObjectSpans`]), valid until the next call. Rejections are the same
    /// [`DecodeError`]s, with their raw bytes.
    ///
    /// Why: a record costs a [`Bytes`] handle per name and value (two atomic reference
    /// count updates each, and a vector to hold them), which is most of the decoding
    /// cost of small attributes. A caller that copies the bytes out anyway (the Arrow
    /// batch builder) reads them straight from the input instead.
    ///
    /// ```
    /// use bytes::Bytes;
    /// use soif_codecs::soif::SoifDecoder;
    /// let input = Bytes::from_static(b"@FILE { http://a/\nTitle{2}:\tHi\n}\n");
    /// let mut objects = SoifDecoder::default().decode_bytes(input);
    /// let object = objects.next_in_place().unwrap().unwrap();
    /// assert_eq!(object.url(), b"http://a/");
    /// assert_eq!(object.attributes().collect::<Vec<_>>(), [(&b"Title"[..], &b"Hi"[..])]);
    /// assert_eq!(object.to_record().get_str("Title"), Some("Hi"));
    /// ```
    pub fn next_in_place(&mut self) -> Option<Result<ObjectSpans<'_>, DecodeError>> {
        match self.next_with::<InPlace>()? {
            Err(e) => Some(Err(e)),
            Ok(()) => {
                let d = &self.decoder;
                let h = d.held;
                // The object lies in the window's data (the decoder's `base` is the
                // window's start, moved in step), so the offset fits in usize.
                let start = usize::try_from(h.start).unwrap_or(usize::MAX);
                Some(Ok(ObjectSpans {
                    input: &self.window.data,
                    object: &self.window.data[start..start + h.end],
                    start,
                    template: d.obj.template.clone(),
                    url: d.obj.url.clone(),
                    joined_url: d.obj.url_joined.as_deref(),
                    attrs: &d.obj.attrs,
                    action: d.envelope,
                    repairs: &d.obj.repairs,
                    record: h.record,
                    name: d.opts.input.as_ref(),
                }))
            }
        }
    }
}

/// A good object decoded in place by [`DecodeBytes::next_in_place`]: its parts as
/// ranges of the input, which it borrows.
#[derive(Clone)]
pub struct ObjectSpans<'a> {
    input: &'a Bytes,
    object: &'a [u8],
    start: usize,
    template: Range<usize>,
    url: Range<usize>,
    joined_url: Option<&'a [u8]>,
    attrs: &'a [(Range<usize>, Range<usize>)],
    action: Option<Action>,
    repairs: &'a [Repair],
    record: u64,
    name: Option<&'a Arc<str>>,
}

impl<'a> ObjectSpans<'a> {
    /// The whole input the object was read from.
    pub fn input(&self) -> &'a Bytes {
        self.input
    }

    /// The object's bytes, exactly as read (`@` to `}`).
    pub fn bytes(&self) -> &'a [u8] {
        self.object
    }

    /// Where the object starts in the input.
    pub fn offset(&self) -> usize {
        self.start
    }

    /// The template, as a range of the input.
    pub fn template_range(&self) -> Range<usize> {
        self.template.start + self.start..self.template.end + self.start
    }

    /// The template.
    pub fn template(&self) -> &'a [u8] {
        &self.object[self.template.clone()]
    }

    /// The URL as a range of the input; `None` when a lenient repair joined it from
    /// pieces (then [`url`](Self::url) has the joined bytes).
    pub fn url_range(&self) -> Option<Range<usize>> {
        match self.joined_url {
            Some(_) => None,
            None => Some(self.url.start + self.start..self.url.end + self.start),
        }
    }

    /// The URL.
    pub fn url(&self) -> &'a [u8] {
        self.joined_url.unwrap_or(&self.object[self.url.clone()])
    }

    /// How many attributes the object has.
    pub fn attribute_count(&self) -> usize {
        self.attrs.len()
    }

    /// The attributes' names and values as ranges of the input, in order.
    pub fn attribute_ranges(
        &self,
    ) -> impl ExactSizeIterator<Item = (Range<usize>, Range<usize>)> + 'a {
        let s = self.start;
        self.attrs
            .iter()
            .map(move |(n, v)| (n.start + s..n.end + s, v.start + s..v.end + s))
    }

    /// The attributes' names and values, in order.
    pub fn attributes(&self) -> impl ExactSizeIterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let o = self.object;
        self.attrs
            .iter()
            .map(move |(n, v)| (&o[n.clone()], &o[v.clone()]))
    }

    /// The envelope's action, when the object is inside one.
    pub fn action(&self) -> Option<Action> {
        self.action
    }

    /// The lenient repairs made to the object.
    pub fn repairs(&self) -> &'a [Repair] {
        self.repairs
    }

    /// The object's position (offset of its `@`, record number, input name).
    pub fn position(&self) -> Position {
        Position::new(self.start as u64, self.record).with_input(self.name.cloned())
    }

    /// The [`Record`] that [`DecodeBytes`]'s iterator would have handed out for it
    /// (its values are slices of the input, nothing is copied).
    pub fn to_record(&self) -> Record {
        let raw = self.input.slice(self.start..self.start + self.object.len());
        Record {
            template: raw.slice(self.template.clone()),
            url: match self.joined_url {
                Some(u) => Bytes::copy_from_slice(u),
                None => raw.slice(self.url.clone()),
            },
            attributes: self
                .attrs
                .iter()
                .map(|(n, v)| Attribute {
                    name: raw.slice(n.clone()),
                    value: Value::Bytes(raw.slice(v.clone())),
                })
                .collect(),
            action: self.action,
            position: Some(self.position()),
            raw: Some(raw),
            repairs: self.repairs.to_vec(),
        }
    }
}

impl SoifDecoder {
    /// Decodes `input`, held whole, without copying it: see [`DecodeBytes`].
    pub fn decode_bytes(self, input: Bytes) -> DecodeBytes {
        self.decode_bytes_from(input, 0)
    }

    /// Decodes `input`, held whole, from byte `from` on, the decoder standing there (its
    /// offset is `from`: see `resumed`).
    pub(crate) fn decode_bytes_from(self, input: Bytes, from: usize) -> DecodeBytes {
        let from = from.min(input.len());
        DecodeBytes {
            decoder: self,
            window: Window {
                data: input,
                start: from,
                end: from,
            },
            done: false,
        }
    }

    /// Where the pending value of the object being parsed ends (with the lenient
    /// look-ahead), relative to the object's start; `None` when no value of known size is
    /// pending.
    fn pending_end(&self) -> Option<usize> {
        if let State::Skip { remaining, .. } = self.state {
            // Step over a skipped value in one move, with room to see what follows it.
            let r = usize::try_from(remaining).ok()?;
            return Some(r.saturating_add(2 * LOOKAHEAD + MAX_NAME));
        }
        if !matches!(self.state, State::Object) {
            return None;
        }
        let p = self.obj.pending.as_ref()?;
        let end = p.start.checked_add(usize::try_from(p.size?).ok()?)?;
        Some(if self.opts.lenient {
            end.saturating_add(LOOKAHEAD)
        } else {
            end
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::record::Action;
    use crate::soif::decoder::{DecoderOptions, SoifDecoder};
    use crate::soif::error::ErrorKind;
    use bytes::Bytes;

    const INPUT: &[u8] = b"  @FILE { http://a/\nTitle{2}:\tHi\nEmpty{0}:\t\n}\n\
        @FILE { http://bad/\nT{x}:\tv\n}\n@DELETE { @FILE { http://b/\n} }\n";

    #[test]
    fn spans_are_ranges_of_the_input() {
        let input = Bytes::from_static(INPUT);
        let records: Vec<_> = SoifDecoder::default().decode_bytes(input.clone()).collect();
        let mut objects = SoifDecoder::default().decode_bytes(input.clone());

        let a = objects.next_in_place().unwrap().unwrap();
        assert_eq!(a.offset(), 2);
        assert_eq!(a.bytes(), &INPUT[2..45]);
        assert_eq!(&INPUT[a.template_range()], b"FILE");
        assert_eq!(a.template(), b"FILE");
        assert_eq!(&INPUT[a.url_range().unwrap()], b"http://a/");
        let ranges: Vec<_> = a
            .attribute_ranges()
            .map(|(n, v)| (&INPUT[n], &INPUT[v]))
            .collect();
        assert_eq!(ranges, [(&b"Title"[..], &b"Hi"[..]), (b"Empty", b"")]);
        assert_eq!(a.attributes().collect::<Vec<_>>(), ranges);
        assert_eq!(a.attribute_count(), 2);
        assert_eq!(a.action(), None);
        assert_eq!(a.position().record, 1);
        assert_eq!(Ok(a.to_record()), records[0]);

        // A rejected object is the same error as the iterator's, with its bytes.
        let Some(Err(bad)) = objects.next_in_place() else {
            panic!("the second object is rejected")
        };
        assert!(matches!(bad.kind(), ErrorKind::BadSize { .. }));
        assert_eq!(Err(bad), records[1]);

        let b = objects.next_in_place().unwrap().unwrap();
        assert_eq!(b.action(), Some(Action::Delete));
        assert_eq!(b.url(), b"http://b/");
        assert_eq!(b.position().record, 3);
        assert_eq!(b.input(), &input);
        assert_eq!(Ok(b.to_record()), records[2]);
        assert!(objects.next_in_place().is_none());
        assert_eq!(objects.offset(), INPUT.len() as u64);
    }

    #[test]
    fn a_joined_url_has_no_range() {
        let input = Bytes::from_static(b"@FILE { ftp://h/d/ f.txt\nT{1}:\tv\n}\n");
        let mut objects = SoifDecoder::new(DecoderOptions::default().lenient()).decode_bytes(input);
        let o = objects.next_in_place().unwrap().unwrap();
        assert_eq!(o.url_range(), None);
        assert_eq!(o.url(), b"ftp://h/d/f.txt");
        assert_eq!(o.repairs().len(), 1);
        assert_eq!(o.to_record().url_str(), "ftp://h/d/f.txt");
    }

    #[test]
    fn a_huge_value_is_stepped_over_in_one_move() {
        // 8 MiB declared and present: the window jumps to the value's end instead of
        // growing a step at a time, and the value is a slice of the input.
        let size = 8 << 20;
        let mut input = format!("@FILE {{ http://a/\nBig{{{size}}}:\t").into_bytes();
        let start = input.len();
        input.resize(start + size, b'z');
        input.extend_from_slice(b"\n}\n");
        let input = Bytes::from(input);
        let mut objects = SoifDecoder::default().decode_bytes(input.clone());
        let o = objects.next_in_place().unwrap().unwrap();
        let (_, value) = o.attribute_ranges().next().unwrap();
        assert_eq!(value, start..start + size);
        assert!(objects.next_in_place().is_none());
    }
}
