//! What the parser reads from: the streaming read buffer (`BytesMut`) or a [`Window`]
//! over an input held whole.

use bytes::{Buf, Bytes, BytesMut};

/// Values larger than this get their buffer reserved in one step once their size is known.
const BIG_VALUE: usize = 1 << 20;

/// What the parser reads from: the bytes from the start of the current object (or
/// whatever comes next) to the end of what has arrived.
///
/// Two implementations share the one parser: the streaming read buffer (`BytesMut`, which
/// `FramedRead` or the engine fills) and a [`Window`] over an input already held whole (a
/// memory-mapped file). The parser only ever looks at the bytes, drops bytes from the
/// front, and splits a finished object off the front, so those are the whole interface.
pub(super) trait Buffer: std::ops::Deref<Target = [u8]> {
    /// Whether every byte of the input stays reachable, so that a skip is undone by
    /// [`rewind`](Buffer::rewind) rather than from a skip file.
    const HELD_WHOLE: bool;
    /// Gives back the last `n` consumed bytes (held whole only).
    fn rewind(&mut self, n: usize);
    /// Drops `n` bytes from the front.
    fn consume(&mut self, n: usize);
    /// Splits the first `n` bytes off the front, as a shared slice.
    fn take(&mut self, n: usize) -> Bytes;
    /// The pending value needs the buffer to hold `want` bytes (0: nothing known).
    fn make_room(&mut self, want: usize);
}

impl Buffer for BytesMut {
    const HELD_WHOLE: bool = false;

    fn rewind(&mut self, _n: usize) {
        // Never called: the stream path undoes a skip from its skip file.
    }

    fn consume(&mut self, n: usize) {
        self.advance(n);
    }

    fn take(&mut self, n: usize) -> Bytes {
        self.split_to(n).freeze()
    }

    fn make_room(&mut self, want: usize) {
        // A value whose size is known (and within max_record_size) gets its whole
        // buffer now: a 100 MB value then costs one allocation instead of a doubling
        // series with its copies.
        if want > self.capacity() && want - self.len() > BIG_VALUE {
            self.reserve(want - self.len());
        }
    }
}

/// The part of an input held whole that the parser has been shown so far: `data[start..end]`.
///
/// The window grows as a read buffer would fill (see [`DecodeBytes`]), so the parser sees
/// the same sequence of states as when streaming, and a record is a slice of `data`.
pub(super) struct Window {
    pub(super) data: Bytes,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl std::ops::Deref for Window {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }
}

impl Buffer for Window {
    const HELD_WHOLE: bool = true;

    fn rewind(&mut self, n: usize) {
        self.start = self.start.saturating_sub(n);
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
    }

    fn take(&mut self, n: usize) -> Bytes {
        let out = self.data.slice(self.start..self.start + n);
        self.start += n;
        out
    }

    fn make_room(&mut self, _want: usize) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_shows_what_the_parser_has_been_given() {
        let mut w = Window {
            data: Bytes::from_static(b"abcdef"),
            start: 0,
            end: 4,
        };
        assert_eq!(&w[..], b"abcd");
        let taken = w.take(2);
        assert_eq!(&taken[..], b"ab");
        assert_eq!(&w[..], b"cd");
        w.rewind(2);
        assert_eq!(&w[..], b"abcd");
        w.consume(1);
        assert_eq!(&w[..], b"bcd");
        w.end = 6;
        assert_eq!(&w[..], b"bcdef");
    }

    #[test]
    fn a_read_buffer_reserves_a_big_value_at_once() {
        let mut b = BytesMut::from(&b"head"[..]);
        b.make_room(100);
        assert!(b.capacity() < BIG_VALUE);
        b.make_room(4 + BIG_VALUE + 1);
        assert!(b.capacity() > 4 + BIG_VALUE);
        assert_eq!(&Buffer::take(&mut b, 2)[..], b"he");
        Buffer::consume(&mut b, 1);
        assert_eq!(&b[..], b"d");
    }
}
