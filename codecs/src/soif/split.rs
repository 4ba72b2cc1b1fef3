//! Splitting a plain SOIF file into byte ranges that decode independently, with exactly
//! the items of one sequential decode.
//!
//! # Why a boundary cannot be guessed
//!
//! A value is exactly `VALUE-SIZE` bytes of anything: it may hold a line `@FILE {`, whole
//! fake objects, an envelope's `}`. Whether a given `@FILE {` starts an object depends on
//! everything before it (the sizes of the values around it, an earlier damaged object
//! that was skipped, a lenient repair that moved a value's end), so no local test on the
//! bytes near a split point can tell a real object start from one quoted inside a value.
//! A reader that starts at "the next line that looks like an object" invents records out
//! of values and loses the ones around them.
//!
//! # The design: a boundary pass, then range decodes
//!
//! **The boundary pass** ([`Splitter`]) runs the decoder itself once over the file, front
//! to back, with the options the ranges will be decoded with (strict or lenient,
//! `max_record_size`, the attribute limit): same options, same object ends. It does not
//! build records (values are parsed, which is what decides where they end, but no
//! attribute list is made), and it stops at the first *object boundary* at or after each
//! split point. An object boundary is the moment the decoder, between objects, finds the
//! `@` of the next one: everything before it has been handed out (records, rejections,
//! their quarantine bytes), and only four things carry on to what follows — the byte
//! offset, the number of objects so far (record numbers in errors), the Harvest envelope
//! that is open (`@UPDATE {` … `}`: its action goes on every record inside it, and its
//! offset on the error if it is never closed), and whether a skipped value has already
//! run into the end of the input (the decoder then rejects values declared past the end
//! at once; see the decoder's "Undoing a skip"). A [`Split`] is a byte range between two
//! such boundaries plus that carried state at its start.
//!
//! **A range decode** ([`decode_range`]) starts a decoder at the split's start in that
//! carried state, over the whole file (so the end of the input is the file's real end,
//! and a value or a damaged object may be read on past the range's end), and stops at the
//! first object boundary at or after the range's end. Because the decoder's output is a
//! function of its state and the bytes from there on, whatever window of the input it is
//! shown (the decoder is built and fuzzed for that: a mapped file and a stream read in
//! any sizes give the same items), the range decode hands out exactly the items a whole
//! file decode hands out between those two boundaries: the same records with the same
//! absolute offsets and record numbers, the same errors with the same positions and raw
//! bytes, the same lenient repairs. Concatenated over all the splits, that is the whole
//! decode, each item once. Envelopes are carried rather than avoided: a Harvest gatherer's
//! dump is typically one `@UPDATE { … }` around every object, and never splitting inside
//! an envelope would make such a file one split.
//!
//! The first split starts at byte 0 (leading garbage belongs to it), the last ends at the
//! file's end (so do the errors found at the end: an unclosed envelope, a truncated
//! object). Split points are the multiples of a size, or `parts` equal fractions of the
//! file; each moves forward to the next object boundary, so a split is never empty, and
//! several points inside one large object give one split. A split that would hold no
//! record and no error (only an envelope's header) runs on to the next point instead. The pass stops at the boundary
//! after the last split point: the rest of the file is not read.
//!
//! # Cost
//!
//! The pass parses every object's header and attribute headers and steps over values of
//! known size without reading them (strict mode); lenient mode also looks at each value's
//! lines, as the decoder does. On `soif-gen` Harvest data held in memory
//! (`cargo bench -p soif-codecs --bench split`, a loaded 2-core VM) it runs at 10.6 GiB/s
//! strict and 2.6 GiB/s lenient, against 6.3 GiB/s for a decode that builds the records;
//! `soif split --parts 8` over a 1 GB file in the page cache takes 0.11–0.21 s strict
//! (docs/splitting.md).
//!
//! ```
//! use bytes::Bytes;
//! use soif_codecs::soif::split::{decode_range, Splitter};
//! use soif_codecs::soif::DecoderOptions;
//! // The second object's value holds a whole fake object.
//! let input = Bytes::from_static(
//!     b"@FILE { http://a/\nNote{30}:\t@FILE { http://fake/\nX{1}:\tx\n}\n}\n@FILE { http://b/\n}\n",
//! );
//! let splits: Vec<_> = Splitter::by_size(input.clone(), DecoderOptions::default(), 8).collect();
//! assert_eq!(splits.len(), 2);
//! let urls: Vec<String> = splits
//!     .iter()
//!     .flat_map(|s| decode_range(input.clone(), DecoderOptions::default(), s).unwrap())
//!     .map(|r| r.unwrap().url_str().into_owned())
//!     .collect();
//! assert_eq!(urls, ["http://a/", "http://b/"]);
//! ```

use super::decoder::{DecodeBytes, DecoderOptions, SoifDecoder};
use crate::record::Action;
use bytes::Bytes;
use std::fmt;
use std::str::FromStr;

/// The Harvest envelope open at a split's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Envelope {
    /// What it asks for (`@UPDATE {` → [`Action::Update`]).
    pub action: Action,
    /// The byte offset of its `@`.
    pub offset: u64,
}

impl Envelope {
    /// The envelope whose header (`@DELETE {`, `@REFRESH {`, `@UPDATE {`) starts at
    /// `offset` of `data`, read as the decoder reads it.
    pub fn at(data: &[u8], offset: u64) -> Result<Envelope, SplitError> {
        let not = SplitError::NotAnEnvelope { offset };
        let at = usize::try_from(offset).map_err(|_| not.clone())?;
        let rest = data.get(at..).ok_or_else(|| not.clone())?;
        if rest.first() != Some(&b'@') {
            return Err(not);
        }
        let name = rest[1..]
            .iter()
            .take(16)
            .take_while(|&&b| !b.is_ascii_whitespace() && b != b'{')
            .count();
        let action = std::str::from_utf8(&rest[1..1 + name])
            .ok()
            .and_then(Action::parse)
            .ok_or(not)?;
        Ok(Envelope { action, offset })
    }
}

/// A byte range of a file, between two object boundaries, and the decoder's state at its
/// start (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Split {
    /// The first byte: 0, or an object boundary (an `@`).
    pub start: u64,
    /// One past the last byte: an object boundary, or the file's end.
    pub end: u64,
    /// Objects (records and rejected objects) before `start`: the range's first object is
    /// record `first_record + 1` in error messages.
    pub first_record: u64,
    /// The envelope open at `start`.
    pub envelope: Option<Envelope>,
    /// Whether the decoder knows where the input ends at `start` (a skipped value ran
    /// into it earlier).
    pub end_known: bool,
}

impl Split {
    /// The whole of an input of `len` bytes, as one split.
    pub fn whole(len: u64) -> Split {
        Split {
            start: 0,
            end: len,
            first_record: 0,
            envelope: None,
            end_known: false,
        }
    }

    /// Checks it against `data` (the file it is a split of), as far as the bytes allow:
    /// inside the file, starting at 0 or at an `@`. Whether it is a boundary the pass
    /// found, with the state the pass found there, only the pass can tell.
    pub fn check(&self, data: &[u8]) -> Result<(), SplitError> {
        let len = data.len() as u64;
        if self.start > self.end || self.end > len {
            return Err(SplitError::OutOfBounds {
                start: self.start,
                end: self.end,
                len,
            });
        }
        if self.start > 0 && self.start < len && data[self.start as usize] != b'@' {
            return Err(SplitError::NotABoundary { offset: self.start });
        }
        Ok(())
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The text form `soif split` prints and `soif convert --range` reads: `START..END`, then
/// the carried state where it is not the file start's, as `,record=N`, `,envelope=OFFSET`
/// and `,end-known`. For example `0..1048576` and `1048576..2097152,record=5210,envelope=12`.
impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)?;
        if self.first_record > 0 {
            write!(f, ",record={}", self.first_record)?;
        }
        if let Some(e) = self.envelope {
            write!(f, ",envelope={}", e.offset)?;
        }
        if self.end_known {
            f.write_str(",end-known")?;
        }
        Ok(())
    }
}

/// A split in text form, before its envelope's action has been read from the file (see
/// [`RangeSpec::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RangeSpec {
    pub start: u64,
    pub end: u64,
    pub first_record: u64,
    /// The offset of the envelope open at `start`.
    pub envelope: Option<u64>,
    pub end_known: bool,
}

impl RangeSpec {
    /// The split, its envelope's action read from `data` (the file the range is of).
    pub fn resolve(&self, data: &[u8]) -> Result<Split, SplitError> {
        let envelope = match self.envelope {
            Some(offset) => Some(Envelope::at(data, offset)?),
            None => None,
        };
        Ok(Split {
            start: self.start,
            end: self.end,
            first_record: self.first_record,
            envelope,
            end_known: self.end_known,
        })
    }
}

impl From<Split> for RangeSpec {
    fn from(s: Split) -> RangeSpec {
        RangeSpec {
            start: s.start,
            end: s.end,
            first_record: s.first_record,
            envelope: s.envelope.map(|e| e.offset),
            end_known: s.end_known,
        }
    }
}

impl FromStr for RangeSpec {
    type Err = SplitError;

    fn from_str(text: &str) -> Result<RangeSpec, SplitError> {
        let bad = |reason: &str| SplitError::Syntax {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let mut parts = text.trim().split(',');
        let range = parts.next().unwrap_or_default();
        let (start, end) = range
            .split_once("..")
            .ok_or_else(|| bad("expected START..END"))?;
        let number = |s: &str, what: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| bad(&format!("{what} is not a byte offset")))
        };
        let mut spec = RangeSpec {
            start: number(start, "START")?,
            end: number(end, "END")?,
            first_record: 0,
            envelope: None,
            end_known: false,
        };
        if spec.end < spec.start {
            return Err(bad("END is before START"));
        }
        for part in parts {
            match part.trim().split_once('=') {
                Some(("record", n)) => spec.first_record = number(n, "record")?,
                Some(("envelope", n)) => spec.envelope = Some(number(n, "envelope")?),
                None if part.trim() == "end-known" => spec.end_known = true,
                _ => {
                    return Err(bad(&format!(
                        "unknown `{part}` (expected record=N, envelope=OFFSET or end-known)"
                    )))
                }
            }
        }
        Ok(spec)
    }
}

/// Why a range cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    /// The range does not lie inside the input.
    #[error("range {start}..{end} is not inside the input ({len} bytes)")]
    OutOfBounds { start: u64, end: u64, len: u64 },
    /// A range starts neither at 0 nor at an `@`: it cannot be a boundary the pass found.
    #[error(
        "byte {offset} is not an object boundary (an `@`): take ranges from `soif split` / soif.split()"
    )]
    NotABoundary { offset: u64 },
    /// The envelope offset does not point at an envelope header.
    #[error("byte {offset} does not start a Harvest envelope (`@DELETE {{`, `@REFRESH {{` or `@UPDATE {{`)")]
    NotAnEnvelope { offset: u64 },
    /// A range in text form that does not parse.
    #[error("bad range `{text}`: {reason}")]
    Syntax { text: String, reason: String },
}

/// Decodes the objects of one split of `data` (the whole file): see the module
/// documentation. The items are those a decode of the whole file hands out between the
/// split's two boundaries, with the same offsets, record numbers, errors and repairs.
///
/// `opts` must be the options the splits were found with. The split is checked as far as
/// the bytes allow (inside the file, starting at 0 or an `@`); a split that does not come
/// from a [`Splitter`] over the same file and options decodes as if an object started
/// there.
pub fn decode_range(
    data: Bytes,
    opts: DecoderOptions,
    split: &Split,
) -> Result<DecodeBytes, SplitError> {
    split.check(&data)?;
    let len = data.len() as u64;
    // Checked to be in bounds, so it fits in usize.
    let start = split.start as usize;
    let mut decoder = SoifDecoder::resumed(
        opts,
        split.start,
        split.first_record,
        split.envelope.map(|e| (e.action, e.offset)),
        split.end_known.then_some(len),
    );
    // The last split runs to the end of the input, where the decoder reports what was
    // left open (an envelope, a truncated object); the others stop at their end boundary.
    decoder.stop_at = (split.end < len).then_some(split.end);
    Ok(decoder.decode_bytes_from(data, start))
}

/// Where the split points fall.
#[derive(Debug, Clone, Copy)]
enum Points {
    /// Every multiple of this many bytes.
    Size(u64),
    /// This many equal fractions of the file.
    Parts(u64),
}

/// The boundary pass: the splits of a plain file held whole (a memory-mapped file), in
/// order, found as the module documentation describes. An iterator, so that `soif split`
/// prints each split as soon as it is known, whatever their number.
pub struct Splitter {
    items: DecodeBytes,
    len: u64,
    points: Points,
    /// The split point last used (its index: the k-th multiple or fraction).
    k: u64,
    /// Where the next split starts, and the state there.
    start: Split,
    done: bool,
    /// Told the offset the pass has reached after each object (see `with_progress`).
    progress: Option<Box<dyn FnMut(u64) + Send>>,
}

impl Splitter {
    /// Splits of about `size` bytes: the split points are the multiples of `size`, each
    /// moved on to the next object boundary. `size` 0 is taken as 1.
    pub fn by_size(data: Bytes, opts: DecoderOptions, size: u64) -> Splitter {
        Splitter::new(data, opts, Points::Size(size.max(1)))
    }

    /// At most `parts` splits: the split points divide the file into `parts` equal
    /// fractions, each moved on to the next object boundary. `parts` 0 is taken as 1.
    pub fn by_parts(data: Bytes, opts: DecoderOptions, parts: u64) -> Splitter {
        Splitter::new(data, opts, Points::Parts(parts.max(1)))
    }

    fn new(data: Bytes, opts: DecoderOptions, points: Points) -> Splitter {
        let len = data.len() as u64;
        let mut decoder = SoifDecoder::new(opts);
        decoder.skim = true;
        Splitter {
            items: decoder.decode_bytes(data),
            len,
            points,
            k: 0,
            start: Split::whole(len),
            done: false,
            progress: None,
        }
    }

    /// Calls `f` with the offset the pass has reached after each object: a mapped file's
    /// owner lets go of the pages behind it (`soif_sources::file::Mapped::consumed`), so
    /// that the pass over a large file does not hold it resident.
    pub fn with_progress(mut self, f: impl FnMut(u64) + Send + 'static) -> Splitter {
        self.progress = Some(Box::new(f));
        self
    }

    /// The `k`-th split point (from 1), or `None` past the last one.
    fn point(&self, k: u64) -> Option<u64> {
        let p = match self.points {
            Points::Size(size) => k.checked_mul(size)?,
            Points::Parts(parts) if k < parts => {
                // k * len / parts without overflow.
                (u128::from(k) * u128::from(self.len) / u128::from(parts)) as u64
            }
            Points::Parts(_) => return None,
        };
        (p < self.len).then_some(p)
    }

    /// The bytes the pass has read so far.
    pub fn offset(&self) -> u64 {
        self.items.offset()
    }
}

impl Iterator for Splitter {
    type Item = Split;

    fn next(&mut self) -> Option<Split> {
        if self.done {
            return None;
        }
        // This split's start and the decoder's state there; it ends at the file's end
        // unless a boundary ends it first.
        let mut split = self.start;
        // The boundary the decoder stands at.
        let mut at = split.start;
        // Whether the split holds an item (a record or an error) yet: one that holds
        // none (only an envelope's header) goes on to the next point instead of
        // becoming a split without rows.
        let mut holds = false;
        loop {
            // The next split point past the boundary.
            let point = loop {
                self.k += 1;
                match self.point(self.k) {
                    Some(p) if p <= at => continue,
                    other => break other,
                }
            };
            let Some(point) = point else {
                // No point left: the rest of the file is the last split (not read).
                self.done = true;
                return (!split.is_empty()).then_some(split);
            };
            let d = &mut self.items;
            d.decoder.stop_at = Some(point);
            d.decoder.stopped = false;
            while d.next().is_some() {
                holds = true;
                if let Some(f) = self.progress.as_mut() {
                    f(d.offset());
                }
            }
            if !d.decoder.stopped {
                // The end of the input came first.
                self.done = true;
                return (!split.is_empty()).then_some(split);
            }
            at = d.offset();
            if holds {
                let (records, envelope, end_known) = d.decoder.carried();
                self.start = Split {
                    start: at,
                    end: self.len,
                    first_record: records,
                    envelope: envelope.map(|(action, offset)| Envelope { action, offset }),
                    end_known,
                };
                // Never empty: the boundary is at or past a point past the split's start.
                split.end = at;
                return Some(split);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips() {
        let s: RangeSpec = "10..20,record=3,envelope=0,end-known".parse().unwrap();
        assert_eq!(
            s,
            RangeSpec {
                start: 10,
                end: 20,
                first_record: 3,
                envelope: Some(0),
                end_known: true
            }
        );
        let split = s.resolve(b"@UPDATE {\n").unwrap();
        assert_eq!(split.envelope.unwrap().action, Action::Update);
        assert_eq!(split.to_string(), "10..20,record=3,envelope=0,end-known");
        assert_eq!(Split::whole(5).to_string(), "0..5");
        for bad in ["", "1..", "5..1", "1..2,record=x", "1..2,foo"] {
            assert!(bad.parse::<RangeSpec>().is_err(), "{bad}");
        }
        assert!(s.resolve(b"@FILE {\n").is_err());
    }

    #[test]
    fn ranges_are_checked() {
        let data = Bytes::from_static(b"@FILE { a\n}\n@FILE { b\n}\n");
        let opts = DecoderOptions::default();
        let mut s = Split::whole(data.len() as u64);
        s.end += 1;
        assert!(matches!(
            decode_range(data.clone(), opts.clone(), &s),
            Err(SplitError::OutOfBounds { .. })
        ));
        s = Split::whole(data.len() as u64);
        s.start = 3;
        assert!(matches!(
            decode_range(data.clone(), opts.clone(), &s),
            Err(SplitError::NotABoundary { offset: 3 })
        ));
        s.start = 12;
        let urls: Vec<_> = decode_range(data, opts, &s)
            .unwrap()
            .map(|r| r.unwrap().url_str().into_owned())
            .collect();
        assert_eq!(urls, ["b"]);
    }
}
