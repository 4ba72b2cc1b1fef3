//! The codecs' integration tests, one binary (`cargo test -p soif-codecs --test codecs`):
//! one module per topic. A new topic is a new file here and a `mod` line below.

mod hostile;
mod malformed;
mod rdm_seed;
mod roundtrip;
mod seeds;
mod split;
