//! The stream path's undo of a skip: the bytes of a value stepped over as they arrived
//! go to a temporary file (the *skip file*) until what follows confirms its size; when
//! it does not, they are read again (a [`Replay`]) before any later input, byte for byte.
//! See "Undoing a skip" in [`super`].

use super::buffer::Buffer;
use super::shared::{AsRecord, Replay, SkipFile, SoifDecoder, State};
use crate::record::Record;
use crate::soif::error::{DecodeError, ErrorKind};
use bytes::BytesMut;

/// How much of a replayed skip file is read at a time.
pub(super) const REPLAY_CHUNK: usize = 256 << 10;

impl SoifDecoder {
    /// The bytes after a skipped value do not continue the object, so its declared size
    /// was wrong: give the skipped bytes back and resynchronise from just after the
    /// value's header, so that the objects inside them are read (see "Undoing a skip").
    /// `truncated`: the input ended inside the declared value. Returns whether the bytes
    /// are back in `src` (held whole); otherwise they are queued for replay and the
    /// caller returns to be fed them.
    pub(super) fn undo_skip<B: Buffer>(&mut self, src: &mut B, truncated: bool) -> bool {
        let State::Skip {
            skipped,
            err,
            prefix,
            name,
            size,
            ..
        } = std::mem::replace(&mut self.state, State::Between)
        else {
            unreachable!("undo_skip outside the Skip state")
        };
        let mut err = *err;
        *err.kind_mut() = if truncated {
            ErrorKind::Truncated {
                context: format!(
                    "the value of `{name}` declares {size} bytes, {} remain",
                    skipped.saturating_sub(1)
                ),
            }
        } else {
            ErrorKind::BadValueSize {
                name,
                declared: size,
            }
        };
        if truncated {
            self.input_end = Some(self.base);
        }
        let back = B::HELD_WHOLE;
        if back {
            // `skipped` bytes were consumed from this very window: they fit in usize.
            src.rewind(usize::try_from(skipped).unwrap_or(usize::MAX));
        } else {
            // What has been read past the skipped bytes goes after them in the skip file, and
            // the whole is read again before any later input.
            skip_file_write(&mut self.skip_file, &mut self.io_error, &src[..]);
            let rest = src.len();
            src.consume(rest);
            if let Some(file) = self.skip_file.take() {
                match file.into_replay() {
                    Ok(r) => self.replay.push(r),
                    Err(e) => self.io_error = Some(e),
                }
            }
        }
        self.base -= skipped;
        self.state = State::Resync {
            err: Some(err),
            scan_from: 1,
            lost: 0,
            owned: 1,
            braces: 0,
            prefix: Some(prefix),
        };
        back
    }
}

/// Appends skipped bytes to the skip file, creating it on first use. A failure is kept in
/// `io_error` (the stream's fatal error) and later bytes are not written.
pub(super) fn skip_file_write(
    skip_file: &mut Option<SkipFile>,
    io_error: &mut Option<std::io::Error>,
    bytes: &[u8],
) {
    use std::io::Write;
    if bytes.is_empty() || io_error.is_some() {
        return;
    }
    if skip_file.is_none() {
        match tempfile::tempfile() {
            Ok(file) => *skip_file = Some(SkipFile { file, len: 0 }),
            Err(e) => {
                *io_error = Some(e);
                return;
            }
        }
    }
    if let Some(s) = skip_file {
        match s.file.write_all(bytes) {
            Ok(()) => s.len += bytes.len() as u64,
            Err(e) => *io_error = Some(e),
        }
    }
}

impl SkipFile {
    pub(super) fn into_replay(mut self) -> std::io::Result<Replay> {
        use std::io::Seek;
        self.file.seek(std::io::SeekFrom::Start(0))?;
        Ok(Replay {
            file: self.file,
            left: self.len,
        })
    }
}

impl SoifDecoder {
    /// The stream path: decodes from `src`, but first from the bytes of undone skips
    /// (see "Undoing a skip"), which go before anything in `src`.
    pub(super) fn decode_stream(
        &mut self,
        src: &mut BytesMut,
        eof: bool,
    ) -> std::io::Result<Option<Result<Record, DecodeError>>> {
        use std::io::Read;
        loop {
            if let Some(e) = self.io_error.take() {
                return Err(e);
            }
            if self.replay.is_empty() {
                if !self.rbuf.is_empty() {
                    // The replay is over: what is left of it comes before the live bytes.
                    let mut r = std::mem::take(&mut self.rbuf);
                    r.extend_from_slice(src);
                    *src = r;
                }
                let item = self.decode_inner::<_, AsRecord>(src, eof);
                if item.is_none() && (!self.replay.is_empty() || self.io_error.is_some()) {
                    // A skip was undone: its bytes (and `src`'s) wait in the replay.
                    continue;
                }
                return Ok(item);
            }
            let mut r = std::mem::take(&mut self.rbuf);
            let item = self.decode_inner::<_, AsRecord>(&mut r, false);
            self.rbuf = r;
            if item.is_some() {
                if let Some(e) = self.io_error.take() {
                    return Err(e);
                }
                return Ok(item);
            }
            if self.io_error.is_some() {
                continue;
            }
            // More bytes: from the innermost undone skip (a skip undone while replaying
            // pushed its own bytes, which come first).
            let Some(top) = self.replay.last_mut() else {
                continue;
            };
            let want = self.want.saturating_sub(self.rbuf.len()).max(REPLAY_CHUNK);
            let n = usize::try_from(top.left).unwrap_or(usize::MAX).min(want);
            if n > 0 {
                let at = self.rbuf.len();
                self.rbuf.resize(at + n, 0);
                top.file.read_exact(&mut self.rbuf[at..])?;
                top.left -= n as u64;
            }
            if top.left == 0 {
                self.replay.pop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::soif::decoder::{decode_all, DecoderOptions};
    use bytes::Bytes;
    use std::io::Read;
    use tokio_util::codec::Decoder;

    type Item = Result<Record, DecodeError>;

    fn feed(d: &mut SoifDecoder, input: &[u8], chunk: usize) -> Vec<Item> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some(item) = d.decode(&mut buf).expect("skip file usable") {
                out.push(item);
            }
        }
        while let Some(item) = d.decode_eof(&mut buf).expect("skip file usable") {
            out.push(item);
        }
        out
    }

    #[test]
    fn the_skip_file_gives_back_every_byte() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let mut file = None;
        let mut error = None;
        for piece in bytes.chunks(4099) {
            skip_file_write(&mut file, &mut error, piece);
        }
        assert!(error.is_none());
        let mut replay = file.expect("created on first write").into_replay().unwrap();
        assert_eq!(replay.left, bytes.len() as u64);
        let mut back = Vec::new();
        replay.file.read_to_end(&mut back).unwrap();
        assert_eq!(back, bytes);
    }

    /// A value declaring more bytes than the record limit, which the input does not have:
    /// the objects inside the declared bytes must come back, and the bad object's bytes
    /// (binary ones included) in its error exactly as they were read.
    fn undone_skip_input() -> (Vec<u8>, usize) {
        let mut input = b"@FILE { http://a/\nBig{1000}:\t\0\xff\x01 bytes\n".to_vec();
        let bad_end = input.len();
        input.extend_from_slice(b"@FILE { http://b/\nT{1}:\tx\n}\n@FILE { http://c/\n}\n");
        (input, bad_end)
    }

    #[test]
    fn an_undone_skip_is_replayed_byte_for_byte() {
        let (input, bad_end) = undone_skip_input();
        let opts = DecoderOptions::with_max_record_size(64);
        for chunk in [1, 5, 16, 4096] {
            let mut d = SoifDecoder::new(opts.clone());
            let items = feed(&mut d, &input, chunk);
            assert_eq!(items.len(), 3, "chunk {chunk}: {items:?}");
            let err = items[0].as_ref().unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::Truncated { context } if context.contains("declares 1000 bytes")),
                "{err:?}"
            );
            assert_eq!(err.raw().map(|b| &b[..]), Some(&input[..bad_end]));
            assert_eq!(items[1].as_ref().unwrap().url_str(), "http://b/");
            assert_eq!(items[1].as_ref().unwrap().get_str("T"), Some("x"));
            assert_eq!(items[2].as_ref().unwrap().url_str(), "http://c/");
            assert!(d.replay.is_empty() && d.skip_file.is_none());
            assert_eq!(d.offset(), input.len() as u64);
            // Held whole, the decoder moves back instead: the same items.
            let whole: Vec<Item> = SoifDecoder::new(opts.clone())
                .decode_bytes(Bytes::from(input.clone()))
                .collect();
            assert_eq!(whole, items);
        }
    }

    #[test]
    fn a_confirmed_skip_drops_its_bytes_and_reads_on() {
        let mut input = b"@FILE { http://a/\nBig{100}:\t".to_vec();
        input.extend(std::iter::repeat_n(b'v', 100));
        input.extend_from_slice(b"\nNext{1}:\tx\n}\n@FILE { http://b/\n}\n");
        let mut d = SoifDecoder::new(DecoderOptions::with_max_record_size(64));
        let items = feed(&mut d, &input, 9);
        assert_eq!(
            items[0].as_ref().unwrap_err().kind(),
            &ErrorKind::RecordTooLarge {
                name: "Big".into(),
                declared: 128,
                max: 64
            }
        );
        assert_eq!(items[1].as_ref().unwrap().url_str(), "http://b/");
        assert_eq!(items.len(), 2);
        assert!(d.skip_file.is_none() && d.replay.is_empty());
        assert_eq!(
            items,
            decode_all(&input, DecoderOptions::with_max_record_size(64))
        );
    }

    #[test]
    fn a_skip_undone_while_replaying_is_read_first() {
        // The first undone skip's bytes hold a second object whose count also runs past
        // the end: its own bytes are replayed inside the first replay.
        let input = b"@FILE { http://a/\nBig{900}:\tx\n@FILE { http://b/\nBig{800}:\ty\n\
            @FILE { http://c/\n}\n";
        let opts = DecoderOptions::with_max_record_size(40);
        let mut d = SoifDecoder::new(opts.clone());
        let items = feed(&mut d, input, 3);
        let urls: Vec<_> = items
            .iter()
            .map(|i| match i {
                Ok(r) => r.url_str().into_owned(),
                Err(e) => format!("error at {}", e.position().offset),
            })
            .collect();
        assert_eq!(urls, ["error at 21", "error at 51", "http://c/"]);
        assert_eq!(items, decode_all(input, opts));
    }
}
