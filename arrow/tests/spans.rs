//! The fast path ([`Spans`], objects decoded in place) against [`BatchBuilder`] (records):
//! the same batches, on hostile input — errors between good objects, lenient repairs
//! (a URL joined from pieces), envelopes, non-UTF-8 templates, URLs, names and values,
//! empty values — and on values large enough for the huge-page buffers.

use arrow_array::{Array, RecordBatch, StructArray};
use bytes::Bytes;
use proptest::prelude::*;
use soif_arrow::{BatchBuilder, Spans, HUGE_MIN};
use soif_codecs::soif::{DecoderOptions, SoifDecoder};

/// Both ways, in batches of at most `rows` objects; errors are skipped by both.
fn both(input: &[u8], opts: DecoderOptions, rows: usize) -> (Vec<RecordBatch>, Vec<RecordBatch>) {
    let data = Bytes::copy_from_slice(input);
    let mut slow = Vec::new();
    let mut builder = BatchBuilder::new();
    for record in SoifDecoder::new(opts.clone())
        .decode_bytes(data.clone())
        .flatten()
    {
        builder.push(&record);
        if builder.len() == rows {
            slow.push(builder.finish());
        }
    }
    if !builder.is_empty() {
        slow.push(builder.finish());
    }
    let mut fast = Vec::new();
    let mut spans = Spans::new();
    let mut objects = SoifDecoder::new(opts).decode_bytes(data.clone());
    while let Some(item) = objects.next_in_place() {
        let Ok(object) = item else { continue };
        spans.push(&object);
        if spans.len() == rows {
            fast.push(spans.build());
            spans = Spans::new();
        }
    }
    if !spans.is_empty() {
        fast.push(spans.build());
    }
    for b in &fast {
        // Arrow's own full check: offsets, and UTF-8 of every text slot.
        StructArray::from(b.clone())
            .into_data()
            .validate_full()
            .expect("a valid batch");
    }
    (slow, fast)
}

fn same(input: &[u8]) {
    for opts in [
        DecoderOptions::default(),
        DecoderOptions::default().lenient(),
    ] {
        for rows in [1, 3, 4096] {
            let (slow, fast) = both(input, opts.clone(), rows);
            assert_eq!(slow.len(), fast.len());
            for (s, f) in slow.iter().zip(&fast) {
                assert_eq!(s, f, "lenient: {}, rows {rows}", opts.lenient);
                // Null bitmaps present in the same columns, not only equal logically.
                for (a, b) in s.columns().iter().zip(f.columns()) {
                    assert_eq!(a.logical_null_count(), b.logical_null_count());
                }
            }
        }
    }
}

#[test]
fn hostile_input_gives_the_same_batches() {
    let mut input = Vec::new();
    input.extend_from_slice(
        b"@FILE { http://a/\nTitle{5}:\tHello\nAuthor-1{3}:\tAnn\nEmpty{0}:\t\n}\n",
    );
    // Non-UTF-8 everywhere.
    input.extend_from_slice(
        b"@F\xe9LE { http://b/\xff\nN\xe9{3}:\t\xff\xd8\x00\nThumb{2}:\t\xc3\x28\n}\n",
    );
    // An error between good objects, and garbage.
    input.extend_from_slice(b"@FILE { http://bad/\nTitle{999}:\tshort\n}\njunk junk\n");
    // Lenient repairs: `: ` for `:<TAB>`, a URL broken by a line wrap, a size `{x}`.
    input
        .extend_from_slice(b"@FILE { ftp://host/dir/ file.txt\nTitle{5}: Hello\nHits{x}:\t12\n}\n");
    // Envelopes: the action column.
    input.extend_from_slice(b"@DELETE {\n@FILE { http://gone/\n}\n}\n@UPDATE {\n@FILE { http://new/\nTitle{3}:\tNew\n}\n}\n");
    // A URL-less object and no attributes.
    input.extend_from_slice(b"@FILE { -\n}\n");
    same(&input);
    same(b"");
    same(b"@FILE { http://only/\n}\n");
}

#[test]
fn large_values_use_the_huge_buffers_and_agree() {
    let big = "x".repeat(HUGE_MIN / 2 + 1);
    let mut input = Vec::new();
    for i in 0..3 {
        input.extend_from_slice(
            format!(
                "@FILE {{ http://big/{i}\nFull-Text{{{}}}:\t{big}\n}}\n",
                big.len()
            )
            .as_bytes(),
        );
        input.extend_from_slice(b"@FILE { http://bin/\nThumb{3}:\t\xff\xfe\xfd\n}\n");
    }
    same(&input);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Random objects of random bytes, some damaged: the two ways agree.
    #[test]
    fn random_objects_give_the_same_batches(
        objects in prop::collection::vec(
            (
                prop::collection::vec(any::<u8>(), 0..6),
                prop::collection::vec(
                    (prop::collection::vec(any::<u8>(), 1..6), prop::collection::vec(any::<u8>(), 0..20)),
                    0..5,
                ),
                0u8..8,
            ),
            0..8,
        )
    ) {
        let mut input = Vec::new();
        for (url, attrs, damage) in &objects {
            input.extend_from_slice(b"@FILE { http://x/");
            input.extend(url.iter().filter(|b| !b.is_ascii_whitespace()));
            input.push(b'\n');
            for (name, value) in attrs {
                let name: Vec<u8> = name
                    .iter()
                    .map(|&b| if b.is_ascii_whitespace() || b == b'{' || b == b'}' { b'n' } else { b })
                    .collect();
                input.extend_from_slice(&name);
                let size = if *damage == 1 { value.len() + 3 } else { value.len() };
                input.extend_from_slice(format!("{{{size}}}:").as_bytes());
                input.extend_from_slice(if *damage == 2 { b" " } else { b"\t" });
                input.extend_from_slice(value);
                input.push(b'\n');
            }
            input.extend_from_slice(b"}\n");
            if *damage == 3 {
                input.extend_from_slice(b"@DELETE {\n@FILE { http://d/\n}\n}\n");
            }
        }
        same(&input);
    }
}

#[test]
fn objects_of_several_inputs_share_a_batch() {
    let inputs = [
        Bytes::from_static(b"@FILE { http://a/\nTitle{1}:\tA\n}\n"),
        Bytes::from_static(b"@FILE { http://b/\nThumb{2}:\t\xff\xfe\n}\n@FILE { http://c/\n}\n"),
    ];
    let mut builder = BatchBuilder::new();
    let mut spans = Spans::new();
    for input in &inputs {
        for r in SoifDecoder::default().decode_bytes(input.clone()) {
            builder.push(&r.unwrap());
        }
        let mut objects = SoifDecoder::default().decode_bytes(input.clone());
        while let Some(o) = objects.next_in_place() {
            spans.push(&o.unwrap());
        }
    }
    assert_eq!(spans.len(), 3);
    assert_eq!(builder.finish(), spans.build());
}
