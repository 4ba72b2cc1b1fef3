//! Records for the sink tests: the seed examples, from the corrected canonical copies in
//! `tests/fixtures/` (RFC 2655 §6 DOCUMENTs, App. C Dublin-Core, the Harvest manual's
//! FILE record with `Embed<1>-` attributes inside `@UPDATE { }`).

#![allow(dead_code)]

use soif_codecs::soif::{decode_all, DecoderOptions};
use soif_codecs::Record;

pub fn fixture_path(path: &str) -> String {
    format!("{}/../tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// Decodes a SOIF text strictly; every record must decode.
pub fn decode(bytes: &[u8]) -> Vec<Record> {
    decode_all(bytes, DecoderOptions::default())
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("fixture does not decode: {e}")))
        .collect()
}

pub fn fixture(path: &str) -> Vec<Record> {
    let full = fixture_path(path);
    decode(&std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}")))
}

/// RFC 2655 §6: three DOCUMENT records (the second with Author-1..3).
pub fn documents() -> Vec<Record> {
    fixture("rfc2655/documents.soif")
}

/// RFC 2655 App. C: the Dublin-Core-1 example.
pub fn dublin_core() -> Record {
    fixture("rfc2655/dublin-core.soif").remove(0)
}

/// Harvest manual: the ECRC-93-10 FILE record, action `update`.
pub fn harvest_file() -> Record {
    fixture("harvest/ecrc-93-10.soif").remove(0)
}

pub fn all_seed_records() -> Vec<Record> {
    let mut v = documents();
    v.push(dublin_core());
    v.push(harvest_file());
    v
}
