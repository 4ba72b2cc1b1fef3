//! The malformed-input table: each bad input between two good records. The decoder must
//! report the expected error (with its position), keep the bad bytes for the quarantine,
//! and still decode the good records around it (what `--on-error skip` relies on).

use bytes::Bytes;
use soif_codecs::soif::{decode_all, DecodeError, DecoderOptions, ErrorKind, SoifDecoder};
use soif_codecs::{Action, Record};
use tokio_util::codec::Decoder;

const BEFORE: &[u8] = b"@FILE { http://before/\nTitle{6}:\tBefore\n}\n";
const AFTER: &[u8] = b"@FILE { http://after/\nTitle{5}:\tAfter\n}\n";

fn run(bad: &[u8], opts: DecoderOptions) -> (Vec<Record>, Vec<DecodeError>, Vec<u8>) {
    let mut input = BEFORE.to_vec();
    input.extend_from_slice(bad);
    input.extend_from_slice(AFTER);
    let mut good = Vec::new();
    let mut bad_items = Vec::new();
    let items = decode_all(&input, opts.clone());
    // The memory-mapped path (the input held whole) gives exactly the same items.
    let held: Vec<_> = SoifDecoder::new(opts)
        .decode_bytes(Bytes::copy_from_slice(&input))
        .collect();
    assert_eq!(held, items, "held whole and streamed differ");
    for item in items {
        match item {
            Ok(r) => good.push(r),
            Err(e) => bad_items.push(e),
        }
    }
    (good, bad_items, input)
}

fn urls(records: &[Record]) -> Vec<String> {
    records.iter().map(|r| r.url_str().into_owned()).collect()
}

/// One error of the expected kind, both good records, and the error keeps exactly the
/// bad bytes.
fn check(name: &str, bad: &[u8], expect: fn(&ErrorKind) -> bool) {
    let (good, errors, _) = run(bad, DecoderOptions::default());
    assert_eq!(
        urls(&good),
        ["http://before/", "http://after/"],
        "{name}: good records"
    );
    assert_eq!(errors.len(), 1, "{name}: {errors:?}");
    let err = &errors[0];
    assert!(expect(err.kind()), "{name}: unexpected error {err}");
    assert!(err.is_recoverable());
    assert!(
        err.position().offset >= BEFORE.len() as u64,
        "{name}: {err}"
    );
    let raw = err.raw().expect("bad bytes kept");
    assert_eq!(raw.as_ref(), bad, "{name}: raw bytes");
}

#[test]
fn truncated_value() {
    // A truncated value can only be at the end of the input.
    let (good, errors, input) = run(b"", DecoderOptions::default());
    assert_eq!(good.len(), 2);
    assert!(errors.is_empty());
    let mut cut = input.clone();
    cut.extend_from_slice(b"@FILE { http://cut/\nFull-Text{100}:\tonly a little");
    let items = decode_all(&cut, DecoderOptions::default());
    assert_eq!(items.len(), 3);
    let err = items[2].as_ref().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Truncated { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("Full-Text") && msg.contains("100 bytes") && msg.contains("record 3"),
        "{msg}"
    );
    assert!(msg.contains("http://cut/"), "{msg}");
    assert_eq!(err.raw().unwrap().as_ref(), &cut[input.len()..]);
}

#[test]
fn truncated_object() {
    let mut input = BEFORE.to_vec();
    input.extend_from_slice(b"@FILE { http://cut/\nTitle{1}:\tx\n");
    let items = decode_all(&input, DecoderOptions::default());
    assert_eq!(items.len(), 2);
    let err = items[1].as_ref().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");
    assert!(err.to_string().contains("no closing `}`"), "{err}");
}

#[test]
fn size_larger_than_u64() {
    check(
        "u64 overflow",
        b"@FILE { http://bad/\nTitle{99999999999999999999999}:\tx\n}\n",
        |k| matches!(k, ErrorKind::SizeOverflow { .. }),
    );
}

#[test]
fn huge_declared_size_is_rejected_without_buffering() {
    // 2 MiB declared (and present) with a 1 MiB limit: rejected before buffering, the
    // bytes skipped as they come, and the next record decodes.
    let mut bad = b"@FILE { http://huge/\nFull-Text{2097152}:\t".to_vec();
    bad.extend(std::iter::repeat_n(b'x', 2 << 20));
    bad.extend_from_slice(b"\nTitle{1}:\ty\n}\n");
    let (good, errors, _) = run(&bad, DecoderOptions::with_max_record_size(1 << 20));
    assert_eq!(urls(&good), ["http://before/", "http://after/"]);
    assert_eq!(errors.len(), 1);
    let err = &errors[0];
    assert!(
        matches!(err.kind(), ErrorKind::RecordTooLarge { declared, max, .. } if *declared > 2 << 20 && *max == 1 << 20),
        "{err}"
    );
    assert!(err.raw().is_none(), "too large to keep");
    assert!(err.to_string().contains("Full-Text"), "{err}");
}

#[test]
fn absurd_declared_size_does_not_allocate() {
    // 1 TB declared in a tiny input: an error, no allocation, no hang. The input ends
    // inside the declared value, so the error says so (it is not merely "too large").
    let input = b"@FILE { http://x/\nA{1000000000000}:\tabc\n}\n";
    let items = decode_all(input, DecoderOptions::default());
    assert_eq!(items.len(), 1);
    let err = items[0].as_ref().unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Truncated { context } if context.contains("1000000000000")),
        "{err}"
    );
    assert_eq!(err.raw().map(|r| r.as_ref()), Some(&input[..]));
}

#[test]
fn non_numeric_size() {
    let bad = b"@RDMQUERY { -\nScope{x}:\tall\n}\n";
    check(
        "{x} strict",
        bad,
        |k| matches!(k, ErrorKind::BadSize { size, .. } if size == "x"),
    );
    // Lenient: the value runs to the end of the line, and the repair is reported.
    let (good, errors, _) = run(bad, DecoderOptions::default().lenient());
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(good.len(), 3);
    assert_eq!(good[1].get_str("Scope"), Some("all"));
    assert_eq!(good[1].repairs.len(), 1);
}

#[test]
fn missing_delimiter() {
    check(
        "no :<TAB>",
        b"@FILE { http://bad/\nTitle{3}abc\n}\n",
        |k| matches!(k, ErrorKind::MissingDelimiter { name } if name == "Title"),
    );
}

#[test]
fn garbage_between_objects() {
    check(
        "garbage",
        b"this is not soif\nat all\n",
        |k| matches!(k, ErrorKind::Garbage { len } if *len == 24),
    );
}

#[test]
fn nul_bytes() {
    // NULs inside a value are data.
    let (good, errors, _) = run(
        b"@FILE { http://nul/\nData{3}:\t\0\0\0\n}\n",
        DecoderOptions::default(),
    );
    assert!(errors.is_empty());
    assert_eq!(
        good[1]
            .get("Data")
            .and_then(|v| v.as_bytes())
            .map(|b| b.as_ref()),
        Some(&b"\0\0\0"[..])
    );
    // NULs between objects are garbage.
    check("NUL garbage", b"\0\0\0\0\n", |k| {
        matches!(k, ErrorKind::Garbage { len: 5 })
    });
}

#[test]
fn missing_closing_brace() {
    check("no }", b"@FILE { http://open/\nTitle{4}:\tOpen\n", |k| {
        matches!(k, ErrorKind::Unclosed)
    });
}

#[test]
fn wrong_byte_count() {
    check(
        "count too small",
        b"@FILE { http://miscount/\nTitle{3}:\tHello\n}\n",
        |k| matches!(k, ErrorKind::BadValueSize { name, declared: 3 } if name == "Title"),
    );
}

#[test]
fn count_too_large_swallowing_the_next_object_is_recovered() {
    // The count runs past the object's end into the next object; resynchronising from the
    // bad value's start still finds `@FILE { http://after/`.
    let (good, errors, _) = run(
        b"@FILE { http://long/\nTitle{60}:\tshort\n}\n",
        DecoderOptions::default(),
    );
    assert_eq!(urls(&good), ["http://before/", "http://after/"]);
    assert_eq!(errors.len(), 1);
}

#[test]
fn bad_header() {
    check("no {", b"@FILE http://x/\nTitle{1}:\tx\n}\n", |k| {
        matches!(k, ErrorKind::BadHeader { .. })
    });
}

#[test]
fn empty_and_whitespace_only_input() {
    assert!(decode_all(b"", DecoderOptions::default()).is_empty());
    assert!(decode_all(b" \n\t\r\n   \n", DecoderOptions::default()).is_empty());
}

#[test]
fn html_instead_of_soif() {
    let html = b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n<body>mail me@example.com</body></html>\n";
    let items = decode_all(html, DecoderOptions::default());
    assert_eq!(items.len(), 1);
    let err = items[0].as_ref().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Garbage { .. }), "{err}");
    assert_eq!(err.raw().unwrap().as_ref(), &html[..]);
    assert_eq!(err.position().offset, 0);
}

#[test]
fn errors_name_the_input() {
    let items = decode_all(b"junk", DecoderOptions::default().named("archive.soif"));
    let msg = items[0].as_ref().unwrap_err().to_string();
    assert!(msg.starts_with("archive.soif: byte 0, record 1: "), "{msg}");
}

#[test]
fn envelopes_set_actions_and_empty_sections_are_fine() {
    let input = b"@DELETE { }\n@REFRESH {\n}\n@DELETE {\n@FILE { http://gone/\n}\n}\n@UPDATE {\n@FILE { http://new/\nTitle{1}:\tn\n}\n}\n@FILE { http://plain/\n}\n";
    let records: Vec<Record> = decode_all(input, DecoderOptions::default())
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let actions: Vec<_> = records
        .iter()
        .map(|r| r.action.map(|a| a.as_str()))
        .collect();
    assert_eq!(actions, [Some("delete"), Some("update"), None]);
}

/// A bad object inside an envelope is skipped up to the next object start, and the
/// skipped bytes can hold the envelope's own `}`. Harvest manual (seed 004): "Deleted
/// objects are listed inside a `@DELETE { }` envelope", so what follows the envelope must
/// not be read as deleted.
#[test]
fn a_bad_object_ending_an_envelope_closes_it() {
    let input = b"@DELETE {\n@FILE { http://x/1\n}\n@FILE { http://x/2\nTitle{9}:\tab\n}\n}\n@FILE { http://x/3\nTitle{3}:\tdef\n}\n";
    let items = decode_all(input, DecoderOptions::default());
    assert_eq!(items.len(), 3);
    assert_eq!(items[0].as_ref().unwrap().action, Some(Action::Delete));
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(err.envelope(), Some(Action::Delete));
    assert!(err.closes_envelope());
    assert_eq!(
        err.raw().unwrap().as_ref(),
        b"@FILE { http://x/2\nTitle{9}:\tab\n}\n}\n"
    );
    let after = items[2].as_ref().unwrap();
    assert_eq!(after.url_str(), "http://x/3");
    assert_eq!(
        after.action, None,
        "the record after the envelope is not deleted"
    );
}

#[test]
fn a_bad_object_inside_an_envelope_leaves_it_open() {
    let input = b"@DELETE {\n@FILE { http://x/1\nTitle{9}:\tab\n}\n@FILE { http://x/2\n}\n}\n@FILE { http://x/3\n}\n";
    let items = decode_all(input, DecoderOptions::default());
    assert_eq!(items.len(), 3);
    let err = items[0].as_ref().unwrap_err();
    assert_eq!(err.envelope(), Some(Action::Delete));
    assert!(!err.closes_envelope());
    assert_eq!(items[1].as_ref().unwrap().action, Some(Action::Delete));
    assert_eq!(items[2].as_ref().unwrap().action, None);
}

#[test]
fn stray_bytes_and_the_envelopes_brace() {
    // Stray bytes own no `}`: one after them closes the envelope.
    let input = b"@UPDATE {\n@FILE { http://x/1\n}\njunk\n}\n@FILE { http://x/2\n}\n";
    let items = decode_all(input, DecoderOptions::default());
    assert_eq!(items.len(), 3);
    assert_eq!(items[0].as_ref().unwrap().action, Some(Action::Update));
    let err = items[1].as_ref().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Garbage { .. }));
    assert_eq!(err.envelope(), Some(Action::Update));
    assert!(err.closes_envelope());
    assert_eq!(items[2].as_ref().unwrap().action, None);
    // Outside an envelope, nothing is said of one.
    let items = decode_all(
        b"junk\n}\n@FILE { http://x/2\n}\n",
        DecoderOptions::default(),
    );
    let err = items[0].as_ref().unwrap_err();
    assert_eq!(err.envelope(), None);
    assert!(!err.closes_envelope());
}

/// The same decision when the skipped stretch is longer than a record and its bytes are
/// dropped while the decoder waits for its end, read in any sizes.
#[test]
fn the_envelope_decision_holds_when_the_skipped_bytes_are_not_kept() {
    let mut input = b"@DELETE {\n@FILE { http://x/1\nTitle{9}:\tab\n".to_vec();
    input.extend(std::iter::repeat_n(b'y', 500));
    input.extend_from_slice(b"\n}\n \n}\n@FILE { http://x/2\n}\n");
    let opts = DecoderOptions::with_max_record_size(100);
    let whole = decode_all(&input, opts.clone());
    assert_eq!(whole.last().unwrap().as_ref().unwrap().action, None);
    for chunk in [1, 2, 3, 7, 64] {
        let mut decoder = SoifDecoder::new(opts.clone());
        let mut buf = bytes::BytesMut::new();
        let mut items = Vec::new();
        for piece in input.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Some(item) = decoder.decode(&mut buf).unwrap() {
                items.push(item);
            }
        }
        while let Some(item) = decoder.decode_eof(&mut buf).unwrap() {
            items.push(item);
        }
        assert_eq!(items, whole, "reads of {chunk}");
    }
}
