//! [`DecoderOptions`]: the record size limit, lenient mode, the input's name and the
//! attribute limit.

use std::sync::Arc;

/// Default `max_record_size`: 64 MiB.
pub const DEFAULT_MAX_RECORD_SIZE: usize = 64 << 20;

/// Options for [`SoifDecoder`](crate::soif::SoifDecoder).
#[derive(Debug, Clone)]
pub struct DecoderOptions {
    /// The largest object accepted, in bytes (default 64 MiB). Larger objects are
    /// rejected with [`ErrorKind::RecordTooLarge`](crate::soif::ErrorKind::RecordTooLarge) and skipped without being buffered.
    pub max_record_size: usize,
    /// Repair what legacy data is known to carry (see the module docs).
    pub lenient: bool,
    /// The input's name, for error positions.
    pub input: Option<Arc<str>>,
    /// The most attributes one record may hold; `None`: one per 64 bytes of
    /// `max_record_size`, at least 4096 (see [`DecoderOptions::attribute_limit`]).
    pub max_attributes: Option<usize>,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        DecoderOptions {
            max_record_size: DEFAULT_MAX_RECORD_SIZE,
            lenient: false,
            input: None,
            max_attributes: None,
        }
    }
}

impl DecoderOptions {
    /// Default options with this maximum record size.
    pub fn with_max_record_size(max_record_size: usize) -> DecoderOptions {
        DecoderOptions {
            max_record_size,
            ..DecoderOptions::default()
        }
    }

    /// The same options in lenient mode.
    pub fn lenient(mut self) -> DecoderOptions {
        self.lenient = true;
        self
    }

    /// The same options naming the input in error positions.
    pub fn named(mut self, input: impl Into<Arc<str>>) -> DecoderOptions {
        self.input = Some(input.into());
        self
    }

    /// The most attributes a record may hold before it is rejected with
    /// [`ErrorKind::TooManyAttributes`](crate::soif::ErrorKind::TooManyAttributes).
    ///
    /// Why a limit: each attribute costs about a hundred bytes of bookkeeping (its ranges
    /// while parsing, then its name and value handles in the [`Record`](crate::Record)), while the
    /// smallest attribute, `A{0}:<TAB>`, is six bytes of input. Without a cap, a 63 MB
    /// record of empty attributes takes about 1 GB. One attribute per 64 bytes of
    /// `max_record_size` keeps a record's memory within about three times
    /// `max_record_size` whatever its shape; real records hold tens to a few thousand.
    pub fn attribute_limit(&self) -> usize {
        self.max_attributes
            .unwrap_or_else(|| (self.max_record_size / 64).max(4096))
    }
}
