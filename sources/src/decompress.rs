//! Transparent decompression: gzip, bzip2, xz and zstd recognised by their magic bytes.
//!
//! The first bytes of every input are peeked (never more than [`MAGIC_LEN`]) and put back
//! in front of the stream, so detection works on pipes and HTTP bodies as well as files,
//! whatever the file is called. Concatenated members (`cat a.gz b.gz`, multi-frame zstd)
//! are decoded as one stream, the way `zcat` does.
//!
//! gzip is inflated by `flate2` (under `async-compression`) with its `zlib-rs` backend,
//! which this crate turns on only for that reason: a Rust port of zlib-ng's inflate,
//! nearly twice as fast as the default `miniz_oxide` on Harvest archives (200 MB of
//! SOIF from a 50 MB `.gz`: 0.67 s → 0.39 s for `soif convert --to null`, three runs
//! each), which matters because decompression runs on one thread ahead of everything
//! else.
//!
//! ```no_run
//! # async fn f() -> std::io::Result<()> {
//! use soif_sources::decompress::{decompress, Compression};
//! let file = tokio::fs::File::open("All-Templates.gz").await?;
//! let (compression, reader) = decompress(Box::new(file)).await?;
//! assert_eq!(compression, Compression::Gzip);
//! # let _ = reader; Ok(()) }
//! ```

use async_compression::tokio::bufread::{BzDecoder, GzipDecoder, XzDecoder, ZstdDecoder};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, BufReader, ReadBuf};

/// Bytes needed to recognise every supported format (xz has the longest magic).
pub const MAGIC_LEN: usize = 6;

/// Read buffer for the compressed side.
const BUF_SIZE: usize = 128 * 1024;

/// A boxed byte stream, as every source hands it on.
pub type Reader = Box<dyn AsyncRead + Send + Unpin>;

/// The compression found at the start of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    None,
    Gzip,
    Bzip2,
    Xz,
    Zstd,
}

impl Compression {
    /// Recognises a format from the first bytes of a stream.
    pub fn detect(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(b"BZh") {
            Compression::Bzip2
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// The compression a file starts with (its first [`MAGIC_LEN`] bytes): what every
    /// front end asks before splitting a file, which a compressed one cannot be.
    pub fn of_file(path: &std::path::Path) -> io::Result<Compression> {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let mut head = [0u8; MAGIC_LEN];
        let mut n = 0;
        while n < MAGIC_LEN {
            match file.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(got) => n += got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Compression::detect(&head[..n]))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
        }
    }
}

/// Reads up to `n` bytes (fewer only at end of stream) and returns them with a reader
/// that yields those bytes again followed by the rest of `reader`. A read error after
/// some bytes is kept for the reader to return after them, so that what came before a
/// broken-off input is still read.
pub async fn peek(mut reader: Reader, n: usize) -> io::Result<(Vec<u8>, Reader)> {
    let mut head = vec![0u8; n];
    let mut filled = 0;
    let mut failed = None;
    while filled < n {
        match reader.read(&mut head[filled..]).await {
            Ok(0) => break,
            Ok(got) => filled += got,
            Err(e) if filled > 0 => {
                failed = Some(e);
                break;
            }
            Err(e) => return Err(e),
        }
    }
    head.truncate(filled);
    let replay = std::io::Cursor::new(head.clone());
    let rest: Reader = match failed {
        Some(e) => Box::new(Failed(Some(e))),
        None => reader,
    };
    Ok((head, Box::new(replay.chain(rest))))
}

/// A reader that returns its error once, then the end of stream.
struct Failed(Option<io::Error>);

impl AsyncRead for Failed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        _buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Poll::Ready(self.0.take().map_or(Ok(()), Err))
    }
}

/// Detects the compression of `reader` and returns the decompressed stream.
///
/// Concatenated members of one format (`cat a.gz b.gz`, multi-stream bzip2 and xz,
/// zstd frames including skippable ones) are one stream, as `zcat` reads them. Anything
/// else after a member is an error naming its compressed offset: bytes that start no
/// member (trailing garbage) or a stream of another format (`cat a.gz b.zst`). Every
/// decompression error names the compressed offset reached and the bytes decompressed so
/// far, and says what went wrong in words (see [`Members`]).
pub async fn decompress(reader: Reader) -> io::Result<(Compression, Reader)> {
    let (head, reader) = peek(reader, MAGIC_LEN).await?;
    let compression = Compression::detect(&head);
    if compression == Compression::None {
        return Ok((compression, reader));
    }
    let counted = BufReader::with_capacity(
        BUF_SIZE,
        Counted {
            inner: reader,
            read: 0,
            ended: false,
        },
    );
    let out: Reader = match compression {
        Compression::Gzip | Compression::None => {
            Box::new(Members::new(compression, counted, GzipDecoder::new))
        }
        Compression::Bzip2 => Box::new(Members::new(compression, counted, BzDecoder::new)),
        // xz: the decoder reads stream after stream itself, with the stream padding between
        // them that the format allows.
        Compression::Xz => Box::new(Members::new(compression, counted, |r| {
            let mut d = XzDecoder::new(r);
            d.multiple_members(true);
            d
        })),
        Compression::Zstd => Box::new(Members::new(compression, counted, ZstdDecoder::new)),
    };
    Ok((compression, out))
}

/// The compressed side of a decoder: counts the bytes read and notes the end of input.
struct Counted {
    inner: Reader,
    read: u64,
    ended: bool,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let n = buf.filled().len() - before;
            self.read += n as u64;
            if n == 0 && buf.remaining() > 0 {
                self.ended = true;
            }
        }
        r
    }
}

type Compressed = BufReader<Counted>;

/// A one-member decoder over the [`Compressed`] side, which it hands back at the end.
trait Decoding: AsyncRead + Send + Unpin {
    fn compressed(&self) -> &Compressed;
    fn into_compressed(self) -> Compressed;
}

macro_rules! decoding {
    ($($d:ident),*) => {$(
        impl Decoding for $d<Compressed> {
            fn compressed(&self) -> &Compressed {
                self.get_ref()
            }
            fn into_compressed(self) -> Compressed {
                self.into_inner()
            }
        }
    )*};
}
decoding!(GzipDecoder, BzDecoder, XzDecoder, ZstdDecoder);

enum State<D> {
    /// Inside a member.
    Member(D),
    /// A member has ended: what follows decides.
    Between(Compressed),
    Done,
}

/// Decodes member after member of one format, and says where an error happened.
struct Members<D> {
    format: Compression,
    state: State<D>,
    start: fn(Compressed) -> D,
    /// Bytes decompressed so far.
    decoded: u64,
    /// Members read to their end.
    members: u64,
}

impl<D: Decoding> Members<D> {
    fn new(format: Compression, compressed: Compressed, start: fn(Compressed) -> D) -> Self {
        Members {
            format,
            state: State::Member(start(compressed)),
            start,
            decoded: 0,
            members: 0,
        }
    }

    /// The compressed offset the decoder has taken (the rest of what was read waits in
    /// the buffer).
    fn offset(compressed: &Compressed) -> u64 {
        compressed.get_ref().read - compressed.buffer().len() as u64
    }

    /// A decoder's error in words, with the compressed offset and the bytes decompressed.
    fn explain(&self, compressed: &Compressed, e: io::Error) -> io::Error {
        let fmt = self.format.as_str();
        let decoded = self.decoded;
        let counted = compressed.get_ref();
        let (kind, message) = if counted.ended
            && (compressed.buffer().is_empty() || e.kind() == io::ErrorKind::UnexpectedEof)
        {
            (
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{fmt} data truncated: the input ends at compressed byte {} inside a \
                     {fmt} stream, after {decoded} bytes decompressed",
                    counted.read
                ),
            )
        } else {
            (
                io::ErrorKind::InvalidData,
                format!(
                    "{fmt} data damaged at compressed byte {}, after {decoded} bytes \
                     decompressed ({e})",
                    Self::offset(compressed)
                ),
            )
        };
        io::Error::new(kind, message)
    }

    /// What follows a member, when it is not another member: an error naming its offset.
    fn after_member(&self, compressed: &Compressed, next: &[u8]) -> io::Error {
        let fmt = self.format.as_str();
        let offset = Self::offset(compressed);
        let decoded = self.decoded;
        let message = match Compression::detect(next) {
            Compression::None => format!(
                "trailing garbage after the {fmt} data at compressed byte {offset}, after \
                 {decoded} bytes decompressed: it starts no {fmt} member"
            ),
            other => format!(
                "a {} stream follows the {fmt} data at compressed byte {offset}, after \
                 {decoded} bytes decompressed: one input holds one compression format \
                 (give the parts as separate inputs)",
                other.as_str()
            ),
        };
        io::Error::new(io::ErrorKind::InvalidData, message)
    }

    /// Whether `next` (the first bytes after a member, maybe only a few) starts another
    /// member of this format.
    fn continues(&self, next: &[u8], ended: bool) -> bool {
        let magic: &[u8] = match self.format {
            Compression::Gzip => &[0x1f, 0x8b],
            Compression::Bzip2 => b"BZh",
            Compression::Xz => &[0xfd, b'7', b'z', b'X', b'Z', 0x00],
            Compression::Zstd => {
                // A skippable frame: 0x184D2A50..=0x184D2A5F, little-endian.
                if next.len() >= 4 && next[0] & 0xf0 == 0x50 && next[1..4] == [0x2a, 0x4d, 0x18] {
                    return true;
                }
                &[0x28, 0xb5, 0x2f, 0xfd]
            }
            Compression::None => return false,
        };
        let n = next.len().min(magic.len());
        // Fewer bytes than the magic so far: the decoder will check the rest.
        next[..n] == magic[..n] && (n == magic.len() || !ended)
    }
}

impl<D: Decoding> AsyncRead for Members<D> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        use tokio::io::AsyncBufRead;
        let this = &mut *self;
        loop {
            match std::mem::replace(&mut this.state, State::Done) {
                State::Done => return Poll::Ready(Ok(())),
                State::Member(mut d) => {
                    let before = buf.filled().len();
                    match Pin::new(&mut d).poll_read(cx, buf) {
                        Poll::Pending => {
                            this.state = State::Member(d);
                            return Poll::Pending;
                        }
                        Poll::Ready(Err(e)) => {
                            let e = this.explain(d.compressed(), e);
                            return Poll::Ready(Err(e));
                        }
                        Poll::Ready(Ok(())) => {
                            let n = buf.filled().len() - before;
                            if n > 0 || buf.remaining() == 0 {
                                this.decoded += n as u64;
                                this.state = State::Member(d);
                                return Poll::Ready(Ok(()));
                            }
                            this.members += 1;
                            this.state = State::Between(d.into_compressed());
                        }
                    }
                }
                State::Between(mut compressed) => {
                    let next = match Pin::new(&mut compressed).poll_fill_buf(cx) {
                        Poll::Pending => {
                            this.state = State::Between(compressed);
                            return Poll::Pending;
                        }
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Ready(Ok(next)) => next,
                    };
                    if next.is_empty() {
                        return Poll::Ready(Ok(()));
                    }
                    let head = next[..next.len().min(MAGIC_LEN)].to_vec();
                    if this.continues(&head, compressed.get_ref().ended) {
                        this.state = State::Member((this.start)(compressed));
                    } else {
                        return Poll::Ready(Err(this.after_member(&compressed, &head)));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_s_compression_from_its_first_bytes() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for (name, head, want) in [
            ("a.gz", &[0x1f, 0x8b, 8, 0][..], Compression::Gzip),
            ("a.bz2", b"BZh91AY", Compression::Bzip2),
            (
                "a.xz",
                &[0xfd, b'7', b'z', b'X', b'Z', 0, 0][..],
                Compression::Xz,
            ),
            ("a.zst", &[0x28, 0xb5, 0x2f, 0xfd][..], Compression::Zstd),
            ("a.soif", b"@FILE { http://a/\n}\n", Compression::None),
            ("empty", b"", Compression::None),
            ("short", &[0x1f][..], Compression::None),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, head).expect("a file");
            assert_eq!(Compression::of_file(&path).expect("read"), want, "{name}");
        }
        assert!(Compression::of_file(&dir.path().join("missing")).is_err());
    }
    use async_compression::tokio::write::{BzEncoder, GzipEncoder, XzEncoder, ZstdEncoder};
    use tokio::io::AsyncWriteExt;

    const TEXT: &[u8] = b"@FILE { http://x/\nTitle{1}:\tt\n}\n";

    async fn roundtrip(compressed: Vec<u8>, want: Compression) {
        let (c, mut r) = decompress(Box::new(std::io::Cursor::new(compressed)))
            .await
            .unwrap();
        assert_eq!(c, want);
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, TEXT);
    }

    #[tokio::test]
    async fn every_format() {
        let mut g = GzipEncoder::new(Vec::new());
        g.write_all(TEXT).await.unwrap();
        g.shutdown().await.unwrap();
        roundtrip(g.into_inner(), Compression::Gzip).await;

        let mut b = BzEncoder::new(Vec::new());
        b.write_all(TEXT).await.unwrap();
        b.shutdown().await.unwrap();
        roundtrip(b.into_inner(), Compression::Bzip2).await;

        let mut x = XzEncoder::new(Vec::new());
        x.write_all(TEXT).await.unwrap();
        x.shutdown().await.unwrap();
        roundtrip(x.into_inner(), Compression::Xz).await;

        let mut z = ZstdEncoder::new(Vec::new());
        z.write_all(TEXT).await.unwrap();
        z.shutdown().await.unwrap();
        roundtrip(z.into_inner(), Compression::Zstd).await;

        roundtrip(TEXT.to_vec(), Compression::None).await;
    }

    #[tokio::test]
    async fn concatenated_gzip_members() {
        let mut all = Vec::new();
        for part in [&TEXT[..10], &TEXT[10..]] {
            let mut g = GzipEncoder::new(Vec::new());
            g.write_all(part).await.unwrap();
            g.shutdown().await.unwrap();
            all.extend(g.into_inner());
        }
        roundtrip(all, Compression::Gzip).await;
    }

    async fn gzip(text: &[u8]) -> Vec<u8> {
        let mut g = GzipEncoder::new(Vec::new());
        g.write_all(text).await.unwrap();
        g.shutdown().await.unwrap();
        g.into_inner()
    }

    /// Decompresses to the end; the error's message, and what came before it.
    async fn failure(compressed: Vec<u8>) -> (String, Vec<u8>) {
        let (_, mut r) = decompress(Box::new(std::io::Cursor::new(compressed)))
            .await
            .unwrap();
        let mut out = Vec::new();
        let e = r.read_to_end(&mut out).await.unwrap_err();
        (e.to_string(), out)
    }

    #[tokio::test]
    async fn errors_say_where_and_what() {
        let whole = gzip(TEXT).await;
        let (m, _) = failure(whole[..whole.len() - 5].to_vec()).await;
        let end = whole.len() - 5;
        assert!(
            m.contains(&format!(
                "gzip data truncated: the input ends at compressed byte {end}"
            )),
            "{m}"
        );

        let mut garbage = whole.clone();
        garbage.extend_from_slice(b"not gzip at all");
        let (m, out) = failure(garbage).await;
        assert_eq!(out, TEXT, "the member is read");
        assert!(
            m.contains(&format!(
                "trailing garbage after the gzip data at compressed byte {}",
                whole.len()
            )),
            "{m}"
        );
        assert!(
            m.contains(&format!("after {} bytes decompressed", TEXT.len())),
            "{m}"
        );

        let mut z = ZstdEncoder::new(Vec::new());
        z.write_all(TEXT).await.unwrap();
        z.shutdown().await.unwrap();
        let mut mixed = whole.clone();
        mixed.extend(z.into_inner());
        let (m, _) = failure(mixed).await;
        assert!(
            m.contains(&format!(
                "a zstd stream follows the gzip data at compressed byte {}",
                whole.len()
            )),
            "{m}"
        );
    }

    #[tokio::test]
    async fn short_and_empty_streams() {
        let (c, mut r) = decompress(Box::new(std::io::Cursor::new(b"@".to_vec())))
            .await
            .unwrap();
        assert_eq!(c, Compression::None);
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, b"@");
        let (c, _) = decompress(Box::new(std::io::Cursor::new(Vec::new())))
            .await
            .unwrap();
        assert_eq!(c, Compression::None);
    }
}
