//! The RDM server's request decoding (`soif_server::rdm::decode_request`): GET query
//! strings and form bodies, `application/x-rdm` POST bodies (plain or gzip'd, with or
//! without the token, arriving in pieces of any size) through the server's body limits,
//! SOIF decoder, RDM message reader and request checks. Any input must give a request or
//! a `RequestError`, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = soif_server::rdm::decode_request(data);
});
