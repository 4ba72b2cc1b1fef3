//! Fuzzes the SOIF decoder: `cargo +nightly fuzz run decode` (see docs/fuzzing.md).
//!
//! The first input byte chooses strict or lenient mode, a small `max_record_size`, and a
//! read size; the rest is fed to the decoder in reads of that size, as `FramedRead` would.
//! Checked: no panic, `decode_eof` consumes everything, the input held whole
//! (`decode_bytes`, the memory-mapped file path) gives exactly the same items, every
//! decoded record re-encodes and decodes back to the same attributes, and a record's `raw`
//! bytes are the input's bytes at its position.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use soif_codecs::soif::{decode_all, encode_record, DecoderOptions, SoifDecoder};
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    let mut opts = DecoderOptions::with_max_record_size(if mode & 2 == 0 { 1 << 20 } else { 300 });
    opts.lenient = mode & 1 == 1;
    let read = 1 + (mode as usize >> 2) * 7;

    let mut decoder = SoifDecoder::new(opts.clone());
    let mut buf = BytesMut::new();
    let mut items = Vec::new();
    for chunk in input.chunks(read) {
        buf.extend_from_slice(chunk);
        while let Some(item) = decoder.decode(&mut buf).expect("no I/O") {
            items.push(item);
        }
    }
    while let Some(item) = decoder.decode_eof(&mut buf).expect("no I/O") {
        items.push(item);
    }
    assert!(buf.is_empty());

    let held: Vec<_> = SoifDecoder::new(opts.clone())
        .decode_bytes(Bytes::copy_from_slice(input))
        .collect();
    assert!(held == items, "held whole and streamed differ");

    for item in items.into_iter().flatten() {
        let raw = item.raw.clone().expect("decoded records keep their bytes");
        let at = item.position.as_ref().expect("position").offset as usize;
        assert_eq!(&input[at..at + raw.len()], raw.as_ref());
        let mut out = Vec::new();
        encode_record(&item, &mut out);
        let again = decode_all(&out, DecoderOptions::with_max_record_size(usize::MAX >> 1));
        assert_eq!(again.len(), 1);
        let again = again.into_iter().next().unwrap().expect("canonical output decodes");
        assert_eq!(again.attributes, item.attributes);
        assert_eq!(again.url, item.url);
    }
});
