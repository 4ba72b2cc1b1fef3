//! What passes between the stages: the decoder's batches of records and rejections, and
//! the batches of records on their way to the sinks.

use crate::source::Rejection;
use soif_codecs::Record;
use tokio::sync::OwnedSemaphorePermit;

/// What the decoder hands the transform stage.
pub(super) enum Item {
    Record(Record),
    Rejected(Rejection),
}

/// Records on their way to the sinks, numbered so a record refused by several sinks is
/// counted once.
pub(super) struct OutBatch {
    pub(super) first_seq: u64,
    pub(super) records: Vec<Record>,
    /// The batch's share of [`IN_FLIGHT_BYTES`](super::IN_FLIGHT_BYTES), given back when the last sink drops it.
    pub(super) _budget: Option<OwnedSemaphorePermit>,
}

/// A batch from the decoder, with its share of [`IN_FLIGHT_BYTES`](super::IN_FLIGHT_BYTES).
pub(super) struct Decoded {
    pub(super) items: Vec<Item>,
    pub(super) budget: OwnedSemaphorePermit,
}
