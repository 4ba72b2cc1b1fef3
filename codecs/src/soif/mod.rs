//! SOIF: the streaming decoder, the canonical encoder and their errors.
//!
//! - [`decoder`]: bytes → records, incremental, bounded memory, strict or lenient.
//! - [`encoder`]: records → canonical SOIF (with Harvest envelopes).
//! - [`error`]: what can be wrong with an object, and where.

pub mod decoder;
pub mod encoder;
pub mod error;

pub use decoder::{
    decode_all, DecodeBytes, DecoderOptions, ObjectSpans, SoifDecoder, DEFAULT_MAX_RECORD_SIZE,
};
pub use encoder::{encode_record, SoifEncoder};
pub use error::{DecodeError, ErrorKind};
