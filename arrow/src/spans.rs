//! Batches straight from the input: objects decoded in place
//! ([`DecodeBytes::next_in_place`](soif_codecs::soif::DecodeBytes::next_in_place)) are
//! gathered as byte ranges of the input they were read from ([`Spans`]), and a batch is
//! built by copying each name and value once from the input into the Arrow buffers.
//!
//! The batches are equal, column for column, to what [`BatchBuilder`](crate::BatchBuilder)
//! makes of the same records (the tests check it on hostile input): this is only a
//! faster way to the same layout, for the common case of a file held whole in memory (a
//! memory-mapped file, a `bytes` object in Python). Where the time went before, and why
//! each piece of this is there:
//!
//! - no [`Record`](soif_codecs::Record) per object: a record holds a
//!   [`Bytes`] handle per name and value, two atomic reference-count updates each plus
//!   the vector that holds them, which cost about as much as parsing the object;
//! - UTF-8 is checked with SIMD ([`simdutf8`]), once per value, and the value is then
//!   copied to the text or the bytes column (exactly one of them, as the layout says);
//! - the large buffers (the values' text) are mapped fresh with transparent huge pages
//!   where the kernel offers them ([`HUGE_MIN`]): filling 8 MB of new memory otherwise
//!   costs 2048 page faults, each zeroing and mapping 4 KB, which was a third of all the
//!   time a read took. With 2 MB pages it is four faults.
//!
//! ```
//! use bytes::Bytes;
//! use soif_arrow::{records, Spans};
//! use soif_codecs::soif::SoifDecoder;
//! let input = Bytes::from_static(b"@FILE { http://a/\nTitle{5}:\tHello\n}\n");
//! let mut objects = SoifDecoder::default().decode_bytes(input.clone());
//! let mut spans = Spans::new();
//! while let Some(object) = objects.next_in_place() {
//!     spans.push(&object.unwrap());
//! }
//! let batch = spans.build();
//! assert_eq!(records(&batch).unwrap()[0].get_str("Title"), Some("Hello"));
//! ```

use crate::layout::{attribute_fields, item_field, schema};
use arrow_array::{Array, BinaryArray, ListArray, RecordBatch, StringArray, StructArray};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use bytes::Bytes;
use soif_codecs::soif::ObjectSpans;
use soif_codecs::Action;
use std::ops::Range;
use std::sync::Arc;

/// Buffers at least this large are mapped with transparent huge pages.
pub const HUGE_MIN: usize = 4 << 20;
/// The huge page size the mapping is aligned to.
const HUGE_PAGE: usize = 2 << 20;

/// Where a row's URL lies: in the input, or (joined by a lenient repair) in
/// [`Spans::joined`].
#[derive(Clone)]
enum Url {
    Input(Range<usize>),
    Joined(Range<usize>),
}

struct Row {
    /// The row's input in [`Spans::inputs`].
    input: usize,
    template: Range<usize>,
    url: Url,
    action: Option<Action>,
    /// End of the row's attributes in [`Spans::attrs`].
    attrs_end: usize,
}

/// Objects decoded in place, gathered for one batch (see the module documentation).
/// Memory: the inputs are shared, not copied; each object costs its ranges (32 bytes an
/// attribute).
pub struct Spans {
    /// The inputs the objects were read from (one, or a few small files).
    inputs: Vec<Bytes>,
    rows: Vec<Row>,
    /// Name and value ranges of every attribute, rows after rows.
    attrs: Vec<(Range<usize>, Range<usize>)>,
    /// URLs joined by a lenient repair (they are not in the input as one piece).
    joined: Vec<u8>,
    name_bytes: usize,
    value_bytes: usize,
    object_bytes: usize,
}

impl Default for Spans {
    fn default() -> Self {
        Spans::new()
    }
}

impl Spans {
    /// Empty.
    pub fn new() -> Spans {
        Spans {
            inputs: Vec::new(),
            rows: Vec::new(),
            attrs: Vec::new(),
            joined: Vec::new(),
            name_bytes: 0,
            value_bytes: 0,
            object_bytes: 0,
        }
    }

    /// Adds one object.
    pub fn push(&mut self, object: &ObjectSpans<'_>) {
        let input = object.input();
        let same = self
            .inputs
            .last()
            .is_some_and(|i| i.as_ptr() == input.as_ptr() && i.len() == input.len());
        if !same {
            self.inputs.push(input.clone());
        }
        let url = match object.url_range() {
            Some(r) => Url::Input(r),
            None => {
                let start = self.joined.len();
                self.joined.extend_from_slice(object.url());
                Url::Joined(start..self.joined.len())
            }
        };
        for (n, v) in object.attribute_ranges() {
            self.name_bytes += n.len();
            self.value_bytes += v.len();
            self.attrs.push((n, v));
        }
        self.object_bytes += object.bytes().len();
        self.rows.push(Row {
            input: self.inputs.len() - 1,
            template: object.template_range(),
            url,
            action: object.action(),
            attrs_end: self.attrs.len(),
        });
    }

    /// Objects added.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no object was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The input bytes the objects added span, in all.
    pub fn object_bytes(&self) -> usize {
        self.object_bytes
    }

    /// The batch of the objects added, equal to what [`BatchBuilder`](crate::BatchBuilder)
    /// makes of their records.
    pub fn build(&self) -> RecordBatch {
        let rows = self.rows.len();
        let mut template = Pair::new(rows, 0);
        let mut url = Pair::new(rows, 0);
        let mut action = Column::new(rows, 0);
        let mut action_valid = Bits::new(rows);
        for row in &self.rows {
            let input = &self.inputs[row.input][..];
            template.push(&input[row.template.clone()]);
            url.push(match &row.url {
                Url::Input(r) => &input[r.clone()],
                Url::Joined(r) => &self.joined[r.clone()],
            });
            match row.action {
                Some(a) => {
                    action.push(a.as_str().as_bytes());
                    action_valid.push(true);
                }
                None => {
                    action.skip();
                    action_valid.push(false);
                }
            }
        }
        let n = self.attrs.len();
        let mut names = Pair::new(n, self.name_bytes);
        let mut values = Pair::new(n, self.value_bytes);
        let mut from = 0;
        for row in &self.rows {
            let input = &self.inputs[row.input][..];
            for (name, value) in &self.attrs[from..row.attrs_end] {
                names.push(&input[name.clone()]);
                values.push(&input[value.clone()]);
            }
            from = row.attrs_end;
        }
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0i32);
        for row in &self.rows {
            offsets.push(offset(row.attrs_end));
        }
        let (names, name_bytes) = names.finish();
        let (values, value_bytes) = values.finish();
        let items = StructArray::new(
            attribute_fields(),
            vec![
                Arc::new(names),
                Arc::new(values),
                Arc::new(value_bytes),
                Arc::new(name_bytes),
            ],
            None,
        );
        let attributes = ListArray::new(
            item_field(),
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Arc::new(items),
            None,
        );
        let (template, template_bytes) = template.finish();
        let (url, url_bytes) = url.finish();
        let action = action.finish(action_valid.finish());
        let columns: Vec<Arc<dyn Array>> = vec![
            Arc::new(template),
            Arc::new(url),
            Arc::new(action),
            Arc::new(attributes),
            Arc::new(template_bytes),
            Arc::new(url_bytes),
        ];
        RecordBatch::try_new(schema(), columns)
            .unwrap_or_else(|e| panic!("soif-arrow builds batches to its own schema: {e}"))
    }
}

/// An offset in a batch as Arrow's `i32`. More than 2^31 attributes or bytes in one
/// batch: arrow's own builders panic alike (batches are bounded far below it).
fn offset(n: usize) -> i32 {
    i32::try_from(n).unwrap_or_else(|_| panic!("more than 2^31 items or bytes in one batch"))
}

/// A validity bitmap, appended bit by bit.
struct Bits {
    words: Vec<u64>,
    len: usize,
    valid: usize,
}

impl Bits {
    fn new(capacity: usize) -> Bits {
        Bits {
            words: Vec::with_capacity(capacity.div_ceil(64)),
            len: 0,
            valid: 0,
        }
    }

    #[inline]
    fn push(&mut self, valid: bool) {
        let bit = self.len % 64;
        if bit == 0 {
            self.words.push(0);
        }
        if valid {
            if let Some(w) = self.words.last_mut() {
                *w |= 1 << bit;
            }
            self.valid += 1;
        }
        self.len += 1;
    }

    /// `None` when every bit is set (as arrow's builders leave an array with no nulls).
    fn finish(self) -> Option<NullBuffer> {
        if self.valid == self.len {
            return None;
        }
        let buffer = BooleanBuffer::new(Buffer::from(self.words), 0, self.len);
        // SAFETY: `valid` counts the bits set among the first `len`.
        Some(unsafe { NullBuffer::new_unchecked(buffer, self.len - self.valid) })
    }

    /// The complement (the other column of a text-or-bytes pair), `None` when full.
    fn inverted(&self) -> Option<NullBuffer> {
        if self.valid == 0 {
            return None;
        }
        let words: Vec<u64> = self.words.iter().map(|w| !w).collect();
        let buffer = BooleanBuffer::new(Buffer::from(words), 0, self.len);
        // SAFETY: the bits set among the first `len` are those not set in `self`.
        Some(unsafe { NullBuffer::new_unchecked(buffer, self.valid) })
    }
}

/// The data and offsets of one variable-size column.
struct Column {
    offsets: Vec<i32>,
    data: Data,
}

impl Column {
    fn new(items: usize, bytes: usize) -> Column {
        let mut offsets = Vec::with_capacity(items + 1);
        offsets.push(0);
        Column {
            offsets,
            data: Data::with_capacity(bytes),
        }
    }

    #[inline]
    fn push(&mut self, b: &[u8]) {
        self.data.extend(b);
        self.offsets.push(offset(self.data.len()));
    }

    /// A null slot: no bytes.
    #[inline]
    fn skip(&mut self) {
        self.offsets.push(offset(self.data.len()));
    }

    fn parts(self) -> (OffsetBuffer<i32>, Buffer) {
        // SAFETY: offsets start at 0 and never decrease (each is the data's length
        // after a push), and the last is the data's length.
        let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(self.offsets)) };
        (offsets, self.data.finish())
    }

    /// As a `Utf8` array.
    fn finish(self, nulls: Option<NullBuffer>) -> StringArray {
        let (offsets, data) = self.parts();
        // SAFETY: every slot's bytes were checked to be UTF-8 before they were pushed
        // (null slots hold none), and offsets and nulls have one entry per slot.
        unsafe { StringArray::new_unchecked(offsets, data, nulls) }
    }

    /// As a `Binary` array.
    fn finish_binary(self, nulls: Option<NullBuffer>) -> BinaryArray {
        let (offsets, data) = self.parts();
        BinaryArray::new(offsets, data, nulls)
    }
}

/// A text-or-bytes pair of columns (`value`/`bytes`, `name`/`name_bytes`,
/// `url`/`url_bytes`…): each item goes to exactly one, the text when it is UTF-8.
struct Pair {
    text: Column,
    bytes: Column,
    utf8: Bits,
}

impl Pair {
    /// Room for `items` items of `bytes` bytes in all (the text column's; the bytes
    /// column, usually small, grows).
    fn new(items: usize, bytes: usize) -> Pair {
        Pair {
            text: Column::new(items, bytes),
            bytes: Column::new(items, 0),
            utf8: Bits::new(items),
        }
    }

    #[inline]
    fn push(&mut self, b: &[u8]) {
        let utf8 = is_utf8(b);
        if utf8 {
            self.text.push(b);
            self.bytes.skip();
        } else {
            self.text.skip();
            self.bytes.push(b);
        }
        self.utf8.push(utf8);
    }

    fn finish(self) -> (StringArray, BinaryArray) {
        let bytes_nulls = self.utf8.inverted();
        let text = self.text.finish(self.utf8.finish());
        // The bytes column of a pair with no text at all: every slot valid, `None`.
        (text, self.bytes.finish_binary(bytes_nulls))
    }
}

/// Whether `b` is UTF-8: SIMD for long values; short ones (names, most small values),
/// for which `simdutf8` calls the standard library's check anyway, are first tested
/// for ASCII, word by word, which is most of them.
#[inline]
fn is_utf8(b: &[u8]) -> bool {
    if b.len() < 64 {
        b.is_ascii() || std::str::from_utf8(b).is_ok()
    } else {
        simdutf8::basic::from_utf8(b).is_ok()
    }
}

/// The bytes of a column: a plain vector, or for large ones a fresh mapping with
/// transparent huge pages (see the module documentation) that never grows.
enum Data {
    Vec(Vec<u8>),
    Huge(HugeRegion),
}

impl Data {
    fn with_capacity(bytes: usize) -> Data {
        if bytes >= HUGE_MIN {
            if let Some(region) = HugeRegion::new(bytes) {
                return Data::Huge(region);
            }
        }
        Data::Vec(Vec::with_capacity(bytes))
    }

    fn len(&self) -> usize {
        match self {
            Data::Vec(v) => v.len(),
            Data::Huge(h) => h.len,
        }
    }

    #[inline]
    fn extend(&mut self, b: &[u8]) {
        match self {
            Data::Vec(v) => v.extend_from_slice(b),
            Data::Huge(h) => {
                if !h.extend(b) {
                    // Never: the region is sized to everything the column holds. Were
                    // it full, the column goes on in a vector rather than failing.
                    let mut v = Vec::with_capacity(h.len + b.len());
                    v.extend_from_slice(h.filled());
                    v.extend_from_slice(b);
                    *self = Data::Vec(v);
                }
            }
        }
    }

    fn finish(self) -> Buffer {
        match self {
            Data::Vec(v) => Buffer::from(v),
            Data::Huge(h) => Buffer::from(Bytes::from_owner(h)),
        }
    }
}

/// Anonymous memory mapped for one column's bytes, its start aligned to a huge page and
/// the kernel asked for huge pages (`MADV_HUGEPAGE`; where they are not on offer it is
/// plain memory). Only what is written is ever touched, so room never used costs no
/// memory. Handed to Arrow as the buffer's owner: when the last array using it goes,
/// the mapping goes back to a pool for the next batches ([`POOL_BYTES`] kept, more for
/// [`POOL_DECAY`]), and is unmapped after that.
struct HugeRegion {
    map: Option<memmap2::MmapMut>,
    start: usize,
    capacity: usize,
    len: usize,
}

/// This much memory of released batches is kept mapped for the next ones for as long
/// as the process runs; more is kept for [`POOL_DECAY`] only.
///
/// Why: a fresh page costs a fault and the kernel zeroing it before it is written,
/// which took a third of the time of building a batch. A consumer that streams (DuckDB,
/// a Parquet writer, Spark) releases each batch soon after it gets it, so a few batches'
/// worth of memory, reused, makes every later batch free of faults. The bound keeps
/// what a finished read leaves behind small (an allocator keeps freed memory alike).
pub const POOL_BYTES: usize = 64 << 20;

/// How long memory beyond [`POOL_BYTES`] is kept after its batches are released.
///
/// Why: a table that holds a whole file (`pyarrow.table(soif.read(path))`) releases all
/// of its batches at once, and a notebook that reads the file again, or reads the next
/// file of an archive, then needs as much memory again. Zeroing it afresh was half of
/// the time such a read took. Keeping it mapped for a short while (one second, as the
/// `dirty_decay_ms:1000` that Arrow C++ configures jemalloc with) makes the next read
/// reuse it, and a process that stops reading gets it back to the system a second later
/// (a background thread unmaps it). The pool never holds more than the consumer held.
pub const POOL_DECAY: std::time::Duration = std::time::Duration::from_secs(1);

/// Mappings of released batches (oldest first, with the time of their release) and
/// their total size.
struct Pool {
    maps: std::collections::VecDeque<(memmap2::MmapMut, std::time::Instant)>,
    bytes: usize,
    reaper: bool,
}

static POOL: std::sync::Mutex<Pool> = std::sync::Mutex::new(Pool {
    maps: std::collections::VecDeque::new(),
    bytes: 0,
    reaper: false,
});

/// Wakes the reaper when the pool grows past [`POOL_BYTES`].
static POOL_GREW: std::sync::Condvar = std::sync::Condvar::new();

impl Pool {
    /// Takes out the mappings released more than [`POOL_DECAY`] ago while the pool is
    /// over [`POOL_BYTES`]; returns them (to be unmapped outside the lock) and how long
    /// until the next one is due, if any is.
    fn expired(
        &mut self,
        now: std::time::Instant,
    ) -> (Vec<memmap2::MmapMut>, Option<std::time::Duration>) {
        let mut gone = Vec::new();
        while self.bytes > POOL_BYTES {
            let Some((_, at)) = self.maps.front() else {
                break;
            };
            let age = now.saturating_duration_since(*at);
            if age < POOL_DECAY {
                return (gone, Some(POOL_DECAY - age));
            }
            if let Some((map, _)) = self.maps.pop_front() {
                self.bytes -= map.len();
                gone.push(map);
            }
        }
        (gone, None)
    }
}

/// The thread that unmaps what the pool holds beyond [`POOL_BYTES`] once it is
/// [`POOL_DECAY`] old. It sleeps while the pool is within its bound.
fn reaper() {
    let Ok(mut pool) = POOL.lock() else { return };
    loop {
        let (gone, next) = pool.expired(std::time::Instant::now());
        if !gone.is_empty() {
            drop(pool);
            // Unmapping a large region takes a while: not under the lock.
            drop(gone);
            pool = match POOL.lock() {
                Ok(pool) => pool,
                Err(_) => return,
            };
            continue;
        }
        pool = match next {
            Some(wait) => match POOL_GREW.wait_timeout(pool, wait) {
                Ok((pool, _)) => pool,
                Err(_) => return,
            },
            None => match POOL_GREW.wait(pool) {
                Ok(pool) => pool,
                Err(_) => return,
            },
        };
    }
}

impl HugeRegion {
    fn new(capacity: usize) -> Option<HugeRegion> {
        // Sizes rounded to huge pages, so that batches of about the same size share.
        let size = capacity.checked_add(2 * HUGE_PAGE - 1)? / HUGE_PAGE * HUGE_PAGE;
        let pooled = POOL.lock().ok().and_then(|mut pool| {
            // The most recently released first: the oldest are the next to be unmapped.
            let i = pool
                .maps
                .iter()
                .rposition(|(m, _)| m.len() >= size && m.len() <= 2 * size)?;
            let (map, _) = pool.maps.remove(i)?;
            pool.bytes -= map.len();
            Some(map)
        });
        let map = match pooled {
            Some(map) => map,
            None => {
                let map = memmap2::MmapMut::map_anon(size).ok()?;
                #[cfg(target_os = "linux")]
                // An advice: where it fails the memory is plain pages, only slower to fill.
                let _ = map.advise(memmap2::Advice::HugePage);
                map
            }
        };
        let start = map.as_ptr().align_offset(HUGE_PAGE).min(HUGE_PAGE);
        let capacity = map.len() - start;
        Some(HugeRegion {
            map: Some(map),
            start,
            capacity,
            len: 0,
        })
    }

    #[inline]
    fn extend(&mut self, b: &[u8]) -> bool {
        let Some(end) = self
            .len
            .checked_add(b.len())
            .filter(|&e| e <= self.capacity)
        else {
            return false;
        };
        let Some(map) = self.map.as_mut() else {
            return false;
        };
        let at = self.start + self.len;
        map[at..at + b.len()].copy_from_slice(b);
        self.len = end;
        true
    }

    fn filled(&self) -> &[u8] {
        match &self.map {
            Some(map) => &map[self.start..self.start + self.len],
            None => &[],
        }
    }
}

impl Drop for HugeRegion {
    fn drop(&mut self) {
        let Some(map) = self.map.take() else { return };
        let Ok(mut pool) = POOL.lock() else { return };
        pool.bytes += map.len();
        pool.maps.push_back((map, std::time::Instant::now()));
        if pool.bytes > POOL_BYTES {
            if !pool.reaper {
                // Where no thread can be started, the memory is unmapped at once.
                pool.reaper = std::thread::Builder::new()
                    .name("soif-pool".into())
                    .spawn(reaper)
                    .is_ok();
                if !pool.reaper {
                    let gone = pool.maps.pop_back();
                    pool.bytes -= gone.as_ref().map_or(0, |(m, _)| m.len());
                    drop(pool);
                    drop(gone);
                    return;
                }
            }
            POOL_GREW.notify_one();
        }
    }
}

impl AsRef<[u8]> for HugeRegion {
    fn as_ref(&self) -> &[u8] {
        self.filled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled() -> usize {
        POOL.lock().map_or(0, |p| p.bytes)
    }

    /// Memory released beyond `POOL_BYTES` is reused by the next region while it is
    /// fresh, and given back to the system once it is `POOL_DECAY` old.
    #[test]
    fn released_memory_is_reused_then_given_back() {
        let size = 48 << 20;
        let regions: Vec<HugeRegion> = (0..4).filter_map(|_| HugeRegion::new(size)).collect();
        assert_eq!(regions.len(), 4);
        drop(regions);
        // Kept at first (other tests may take a region meanwhile, not three).
        let kept = pooled();
        assert!(kept > POOL_BYTES, "kept at first: {kept}");
        // A region of the same size is taken from the pool, not mapped afresh.
        let again = HugeRegion::new(size);
        assert!(again.is_some());
        assert!(
            pooled() < kept,
            "taken from the pool: {} of {kept}",
            pooled()
        );
        drop(again);
        // No bound on how long a loaded machine takes to run the reaper; it must run.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while pooled() > POOL_BYTES && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(pooled() <= POOL_BYTES, "still pooled: {}", pooled());
    }
}
