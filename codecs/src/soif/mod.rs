//! SOIF: the streaming decoder, the canonical encoder and their errors.
//!
//! - [`decoder`]: bytes → records, incremental, bounded memory, strict or lenient.
//! - [`encoder`]: records → canonical SOIF (with Harvest envelopes).
//! - [`error`]: what can be wrong with an object, and where.
//! - [`split`]: byte ranges of a file that decode independently, with exactly the items
//!   of one sequential decode (the boundary pass and range decodes).

pub mod decoder;
pub mod encoder;
pub mod error;
pub mod split;

pub use decoder::{
    decode_all, DecodeBytes, DecoderOptions, ObjectSpans, SoifDecoder, DEFAULT_MAX_RECORD_SIZE,
};
pub use encoder::{encode_record, SoifEncoder};
pub use error::{DecodeError, ErrorKind};
