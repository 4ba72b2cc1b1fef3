//! The RDM view (seed `000_…txt`, "RDM View Specification"): `select`, `order`, `hits`.
//!
//! - `select:URL,Title,Author` — View-Attributes: keep only these attributes, in the
//!   order listed. Names match as in RFC 2655 §4 (`Author` keeps `Author-1…N` or the
//!   collapsed `Author` list; `Embed` keeps the `Embed<n>-` parts). `URL` counts as an
//!   attribute: when it is not listed the record's URL is written as `-` (SOIF's "no
//!   URL"). `Score`, which a keyword query adds, is an ordinary attribute.
//! - `order:-Score,+Title` — View-Order: sort by several keys, `+` ascending (the
//!   default), `-` descending. Ties keep input order (the sort is stable). See [`Order`]
//!   for how values compare and how the sort stays within its memory budget.
//! - `hits:10` (the first ten) or `hits:11..20` (the 11th through 20th, inclusive) —
//!   View-Hits; `hits:11..` is everything from the 11th on.

use crate::{Emit, Error, Transform};
use bytes::Bytes;
use soif_codecs::packed;
use soif_codecs::rules::dates;
use soif_codecs::rules::names::{ascii_lower, attribute_matches, is_url, split_embed};
use soif_codecs::Record;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{BufReader, BufWriter, Seek, SeekFrom};
use std::path::PathBuf;

/// Splits a comma-separated list, trimming blanks and dropping empty items.
fn list(arg: &str) -> impl Iterator<Item = &str> {
    arg.split(',').map(str::trim).filter(|s| !s.is_empty())
}

// --- select ------------------------------------------------------------------------------

/// The `select` transform (View-Attributes).
#[derive(Debug, Clone)]
pub struct Select {
    attributes: Vec<Vec<u8>>,
    keep_url: bool,
}

impl Select {
    /// From `A,B,…`.
    pub fn parse(arg: &str) -> Result<Select, Error> {
        let names: Vec<&str> = list(arg).collect();
        if names.is_empty() {
            return Err(Error::Config(
                "select: expected attribute names, e.g. `select:URL,Title,Author`".into(),
            ));
        }
        Ok(Select::new(&names))
    }

    /// Keeps the named attributes (and the URL when `URL` is among them).
    pub fn new(names: &[&str]) -> Select {
        Select {
            keep_url: names.iter().any(|n| is_url(n.as_bytes())),
            attributes: names
                .iter()
                .filter(|n| !is_url(n.as_bytes()))
                .map(|n| n.as_bytes().to_vec())
                .collect(),
        }
    }

    fn selects(query: &[u8], name: &[u8]) -> bool {
        attribute_matches(query, name)
            || split_embed(name).is_some_and(|(prefix, _, _)| prefix.eq_ignore_ascii_case(query))
    }

    /// The record with only the selected attributes.
    pub fn select(&self, mut record: Record) -> Record {
        let mut taken = vec![false; record.attributes.len()];
        let mut order = Vec::new();
        for q in &self.attributes {
            for (i, a) in record.attributes.iter().enumerate() {
                if !taken[i] && Select::selects(q, &a.name) {
                    taken[i] = true;
                    order.push(i);
                }
            }
        }
        let mut slots: Vec<_> = record.attributes.drain(..).map(Some).collect();
        record.attributes = order.into_iter().filter_map(|i| slots[i].take()).collect();
        if !self.keep_url {
            record.url = Bytes::from_static(b"-");
        }
        record
    }
}

impl Transform for Select {
    fn name(&self) -> &str {
        "select"
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        out.emit(self.select(record))
    }
    fn fork(&self) -> Option<Box<dyn Transform>> {
        Some(Box::new(self.clone()))
    }
}

// --- hits --------------------------------------------------------------------------------

/// The `hits` transform (View-Hits): passes records `first..=last` (1-based).
#[derive(Debug)]
pub struct Hits {
    first: u64,
    last: Option<u64>,
    seen: u64,
}

impl Hits {
    /// From `N`, `M..N` or `M..`.
    pub fn parse(arg: &str) -> Result<Hits, Error> {
        let bad = || {
            Error::Config(format!(
                "hits: expected `N` (the first N), `M..N` (the Mth through the Nth) or `M..`, \
                 with 1 <= M <= N; got `{arg}`"
            ))
        };
        let num = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
        let (first, last) = match arg.split_once("..") {
            None => (1, Some(num(arg)?)),
            Some((a, b)) if b.trim().is_empty() => (num(a)?, None),
            Some((a, b)) => (num(a)?, Some(num(b)?)),
        };
        if first == 0 || last.is_some_and(|l| l < first) {
            return Err(bad());
        }
        Ok(Hits {
            first,
            last,
            seen: 0,
        })
    }
}

impl Transform for Hits {
    fn name(&self) -> &str {
        "hits"
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        self.seen += 1;
        if self.seen >= self.first && self.last.is_none_or(|l| self.seen <= l) {
            out.emit(record)?;
        }
        Ok(())
    }
}

// --- order -------------------------------------------------------------------------------

/// How one sort key's values compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyType {
    /// No schema type: values that read as numbers compare as numbers, the rest as text.
    Auto,
    /// The schema says `int` (or another numeric type): numbers, the rest as text.
    Numeric,
    /// The schema says `date`: dates ([`dates::parse`]) in time order, the rest as text.
    Date,
    /// The schema says `varchar`, `blob`, …: always text, even when it looks like a number.
    Text,
}

impl KeyType {
    /// The comparison for an RDM schema `Data-Type` (`int`, `date`, `varchar`, …).
    pub fn from_data_type(data_type: &str) -> KeyType {
        let t = data_type.trim().to_ascii_lowercase();
        let base = t.split(['(', ' ']).next().unwrap_or("");
        match base {
            "int" | "integer" | "smallint" | "bigint" | "tinyint" | "serial" | "bigserial"
            | "float" | "real" | "double" | "decimal" | "numeric" | "number" => KeyType::Numeric,
            "date" | "datetime" | "timestamp" | "time" => KeyType::Date,
            _ => KeyType::Text,
        }
    }
}

/// One `(+|-)attr` of View-Order.
#[derive(Debug, Clone)]
pub struct SortKey {
    /// The attribute (RFC 2655 §4 matching), or `URL` for the record's URL.
    pub attribute: Vec<u8>,
    /// `-attr`.
    pub descending: bool,
    /// How values compare.
    pub key_type: KeyType,
}

/// A record's value for one key. Within one key, numbers come before text (so the order is
/// total even when a column mixes both) and a record without the attribute comes last,
/// whichever the direction; the direction only reverses the order within numbers and
/// within text.
#[derive(Debug, Clone, PartialEq)]
enum KeyValue {
    Number(f64),
    /// ASCII-lower-cased for the comparison, then the raw bytes to break ties.
    Text(Vec<u8>, Bytes),
    Missing,
}

impl KeyValue {
    fn of(value: Option<&Bytes>, key_type: KeyType) -> KeyValue {
        let Some(v) = value else {
            return KeyValue::Missing;
        };
        let number = || {
            std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .filter(|f| !f.is_nan())
        };
        let parsed = match key_type {
            KeyType::Auto | KeyType::Numeric => number(),
            KeyType::Date => dates::parse(v).map(|w| w.unix() as f64),
            KeyType::Text => None,
        };
        match parsed {
            Some(n) => KeyValue::Number(n),
            // A copy, not a slice: a slice would keep the decoder's whole read buffer
            // alive while the record waits in memory.
            None => KeyValue::Text(ascii_lower(v), Bytes::copy_from_slice(v)),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            KeyValue::Number(_) => 0,
            KeyValue::Text(..) => 1,
            KeyValue::Missing => 2,
        }
    }

    fn compare(&self, other: &KeyValue, descending: bool) -> Ordering {
        let ord = match (self, other) {
            (KeyValue::Number(a), KeyValue::Number(b)) => a.total_cmp(b),
            (KeyValue::Text(a, ra), KeyValue::Text(b, rb)) => a.cmp(b).then_with(|| ra.cmp(rb)),
            // Different classes (or both missing): numbers, then text, then missing,
            // whatever the direction — `-Score` puts the best scores first and stray text
            // and records without a score after them.
            _ => return self.rank().cmp(&other.rank()),
        };
        if descending {
            ord.reverse()
        } else {
            ord
        }
    }
}

/// The `order` transform (View-Order): a stable external merge sort.
///
/// **Comparison.** Each key takes the first value of the first attribute that matches it
/// (RFC 2655 §4; the first item of a collapsed list); `URL` is the record's URL. With a
/// schema, `int`-like types compare numerically, `date` in time order, other types as
/// text; without one, two values that both read as numbers compare numerically. Text
/// compares ASCII-case-insensitively, then byte for byte. In either direction numbers
/// come before text and a missing value last (`-` reverses the order within each of
/// those classes), which keeps the order total when a column mixes numbers and text.
///
/// **Memory.** Arriving records are serialized ([`packed`](soif_codecs::packed)) into a buffer — which also
/// lets go of the decoder's read buffers they point into. When the buffer passes the
/// memory budget it is sorted and written to an anonymous temporary file (a *run*;
/// the operating system removes it when it is closed, even after a crash). At the end,
/// runs are merged [`MERGE_FAN_IN`] at a time with a heap (k-way merge) until one merge
/// emits the records in order. Runs are also merged while the input streams in, whenever
/// [`MERGE_FAN_IN`] runs of the same level exist, so the number of open files stays
/// small (`MERGE_FAN_IN` × levels, levels = log₁₆ of input / budget). Memory stays at the budget plus, during merges, one
/// buffered reader and one record per open run. Input that fits the budget never touches
/// the disk.
pub struct Order {
    keys: Vec<SortKey>,
    budget: usize,
    temp_dir: Option<PathBuf>,
    held: Vec<Held>,
    held_bytes: usize,
    /// Sorted runs on disk with their merge level (0 = written from memory).
    runs: Vec<(File, u32)>,
    /// Runs written from memory so far.
    spills: usize,
    seq: u64,
    /// The longest payload written: bounds what reading a run may allocate.
    max_payload: usize,
}

/// How many runs one merge step reads at once.
pub const MERGE_FAN_IN: usize = 16;

/// Buffered-I/O size per run file.
const RUN_BUFFER: usize = 64 << 10;

struct Held {
    keys: Vec<KeyValue>,
    seq: u64,
    data: Vec<u8>,
}

impl Order {
    /// From `-Score,+Title,Author`. `types` gives schema types by attribute name
    /// (lower-case); attributes not in it use [`KeyType::Auto`].
    pub fn parse(
        arg: &str,
        types: &HashMap<String, KeyType>,
        budget: usize,
        temp_dir: Option<PathBuf>,
    ) -> Result<Order, Error> {
        let mut keys = Vec::new();
        for item in list(arg) {
            let (descending, name) = match item.as_bytes()[0] {
                b'-' => (true, item[1..].trim()),
                b'+' => (false, item[1..].trim()),
                _ => (false, item),
            };
            if name.is_empty() {
                return Err(Error::Config(format!(
                    "order: `{item}` names no attribute in `{arg}`"
                )));
            }
            let key_type = types
                .get(&name.to_ascii_lowercase())
                .copied()
                .unwrap_or(KeyType::Auto);
            keys.push(SortKey {
                attribute: name.as_bytes().to_vec(),
                descending,
                key_type,
            });
        }
        if keys.is_empty() {
            return Err(Error::Config(
                "order: expected sort keys, e.g. `order:-Score,+Title`".into(),
            ));
        }
        Ok(Order::new(keys, budget, temp_dir))
    }

    /// Sorts by `keys` within `budget` bytes, spilling to `temp_dir` (or the system's).
    pub fn new(keys: Vec<SortKey>, budget: usize, temp_dir: Option<PathBuf>) -> Order {
        Order {
            keys,
            budget: budget.max(1),
            temp_dir,
            held: Vec::new(),
            held_bytes: 0,
            runs: Vec::new(),
            spills: 0,
            seq: 0,
            max_payload: 0,
        }
    }

    /// How many sorted runs have been written from memory to disk so far.
    pub fn runs_spilled(&self) -> usize {
        self.spills
    }

    /// How many run files are open now (merging keeps this small).
    pub fn runs_open(&self) -> usize {
        self.runs.len()
    }

    fn key_values(&self, record: &Record) -> Vec<KeyValue> {
        self.keys
            .iter()
            .map(|k| {
                let value = if is_url(&k.attribute) {
                    Some(&record.url)
                } else {
                    record
                        .attributes
                        .iter()
                        .filter(|a| attribute_matches(&k.attribute, &a.name))
                        .find_map(|a| a.value.leaves().into_iter().next())
                };
                KeyValue::of(value, k.key_type)
            })
            .collect()
    }

    fn compare(&self, a: &[KeyValue], a_seq: u64, b: &[KeyValue], b_seq: u64) -> Ordering {
        self.keys
            .iter()
            .zip(a.iter().zip(b))
            .map(|(k, (x, y))| x.compare(y, k.descending))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then(a_seq.cmp(&b_seq))
    }

    fn temp_file(&self) -> Result<File, Error> {
        match &self.temp_dir {
            Some(dir) => tempfile::tempfile_in(dir),
            None => tempfile::tempfile(),
        }
        .map_err(|e| {
            Error::io(
                format!(
                    "order: creating a temporary file for a sorted run in {}",
                    super::seen::temp_dir_name(&self.temp_dir)
                ),
                e,
            )
        })
    }

    fn sort_held(&mut self) {
        let mut held = std::mem::take(&mut self.held);
        held.sort_by(|a, b| self.compare(&a.keys, a.seq, &b.keys, b.seq));
        self.held = held;
    }

    /// Sorts what is held and writes it out as one run.
    fn spill(&mut self) -> Result<(), Error> {
        if self.held.is_empty() {
            return Ok(());
        }
        self.sort_held();
        let file = self.temp_file()?;
        let io_err = |e| Error::io("order: writing a sorted run to a temporary file", e);
        let mut w = BufWriter::with_capacity(RUN_BUFFER, file);
        for h in self.held.drain(..) {
            packed::write_entry(&mut w, h.seq, &h.data).map_err(io_err)?;
        }
        let mut file = w.into_inner().map_err(|e| io_err(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io_err)?;
        self.runs.push((file, 0));
        self.spills += 1;
        self.held_bytes = 0;
        // Whenever MERGE_FAN_IN runs of one level exist, merge them into one of the next
        // level: open files stay at MERGE_FAN_IN per level (a handful of levels for any
        // input), and each record is rewritten once per level.
        loop {
            let n = self.runs.len();
            if n < MERGE_FAN_IN {
                break;
            }
            let level = self.runs[n - 1].1;
            if self.runs[n - MERGE_FAN_IN..]
                .iter()
                .any(|(_, l)| *l != level)
            {
                break;
            }
            let group: Vec<File> = self
                .runs
                .drain(n - MERGE_FAN_IN..)
                .map(|(f, _)| f)
                .collect();
            let merged = self.merge_to_file(group)?;
            self.runs.push((merged, level + 1));
        }
        Ok(())
    }

    /// Merges sorted runs into one new run.
    fn merge_to_file(&self, group: Vec<File>) -> Result<File, Error> {
        let io_err = |e| Error::io("order: writing a merged run to a temporary file", e);
        let mut w = BufWriter::with_capacity(RUN_BUFFER, self.temp_file()?);
        self.merge(group, |seq, data, _| {
            packed::write_entry(&mut w, seq, &data).map_err(io_err)
        })?;
        let mut file = w.into_inner().map_err(|e| io_err(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io_err)?;
        Ok(file)
    }

    /// Merges `files` (sorted runs) and hands each record, in order, to `sink`.
    fn merge(
        &self,
        files: Vec<File>,
        mut sink: impl FnMut(u64, Bytes, Record) -> Result<(), Error>,
    ) -> Result<(), Error> {
        struct Head {
            keys: Vec<KeyValue>,
            seq: u64,
            data: Bytes,
            record: Record,
            source: usize,
        }
        struct ByKey<'a>(&'a Order, Head);
        impl PartialEq for ByKey<'_> {
            fn eq(&self, other: &Self) -> bool {
                self.cmp(other).is_eq()
            }
        }
        impl Eq for ByKey<'_> {}
        impl PartialOrd for ByKey<'_> {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(self.cmp(other))
            }
        }
        impl Ord for ByKey<'_> {
            // BinaryHeap is a max-heap: reverse, so the smallest record is on top.
            fn cmp(&self, other: &Self) -> Ordering {
                self.0
                    .compare(&self.1.keys, self.1.seq, &other.1.keys, other.1.seq)
                    .reverse()
            }
        }

        let read_err = |e| {
            Error::io(
                "order: reading a sorted run back from its temporary file",
                e,
            )
        };
        let mut readers: Vec<_> = files
            .into_iter()
            .map(|f| BufReader::with_capacity(RUN_BUFFER, f))
            .collect();
        let next =
            |readers: &mut Vec<BufReader<File>>, source: usize| -> Result<Option<Head>, Error> {
                let Some((seq, data)) =
                    packed::read_entry(&mut readers[source], self.max_payload).map_err(read_err)?
                else {
                    return Ok(None);
                };
                let record = packed::decode(data.clone()).map_err(|e| {
                    Error::Fatal(format!(
                        "order: a sorted run's temporary file is damaged: {e}"
                    ))
                })?;
                Ok(Some(Head {
                    keys: self.key_values(&record),
                    seq,
                    data,
                    record,
                    source,
                }))
            };
        let mut heap = BinaryHeap::with_capacity(readers.len());
        for source in 0..readers.len() {
            if let Some(h) = next(&mut readers, source)? {
                heap.push(ByKey(self, h));
            }
        }
        while let Some(ByKey(_, head)) = heap.pop() {
            if let Some(h) = next(&mut readers, head.source)? {
                heap.push(ByKey(self, h));
            }
            sink(head.seq, head.data, head.record)?;
        }
        Ok(())
    }
}

impl Transform for Order {
    fn name(&self) -> &str {
        "order"
    }

    fn apply(&mut self, record: Record, _out: &mut dyn Emit) -> Result<(), Error> {
        let keys = self.key_values(&record);
        let mut data = Vec::new();
        packed::encode(&record, &mut data);
        drop(record);
        self.max_payload = self.max_payload.max(data.len());
        let key_bytes: usize = keys
            .iter()
            .map(|k| match k {
                KeyValue::Text(a, b) => a.len() + b.len(),
                _ => 0,
            })
            .sum();
        // Per-record bookkeeping (the Held struct, Vec headers) on top of the payload.
        self.held_bytes += data.capacity() + key_bytes + 96;
        self.held.push(Held {
            keys,
            seq: self.seq,
            data,
        });
        self.seq += 1;
        if self.held_bytes >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn Emit) -> Result<(), Error> {
        let decode_err = |e: packed::PackedError| Error::Fatal(format!("order: {e}"));
        if self.runs.is_empty() {
            self.sort_held();
            self.held_bytes = 0;
            for h in std::mem::take(&mut self.held) {
                out.emit(packed::decode(Bytes::from(h.data)).map_err(decode_err)?)?;
            }
            return Ok(());
        }
        self.spill()?;
        // Merge passes until at most MERGE_FAN_IN runs are left.
        let mut runs: Vec<File> = std::mem::take(&mut self.runs)
            .into_iter()
            .map(|(f, _)| f)
            .collect();
        while runs.len() > MERGE_FAN_IN {
            let mut merged = Vec::new();
            let mut rest = runs.into_iter();
            loop {
                let group: Vec<File> = rest.by_ref().take(MERGE_FAN_IN).collect();
                if group.is_empty() {
                    break;
                }
                merged.push(self.merge_to_file(group)?);
            }
            runs = merged;
        }
        self.merge(runs, |_, _, record| out.emit(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Collect;

    fn run(t: &mut dyn Transform, records: Vec<Record>) -> Collect {
        Collect::run(t, records).unwrap()
    }

    fn urls(c: &Collect) -> Vec<String> {
        c.records.iter().map(|r| r.url_str().into_owned()).collect()
    }

    #[test]
    fn select_rdm_example() {
        // Seed 000: "View-Attributes{x}: URL,Title,Author,Last-Modified".
        let s = Select::parse("URL,Title,Author,Last-Modified").unwrap();
        let r = Record::new("DOCUMENT", "http://home.netscape.com/eng/ssl3/ssl-toc.html")
            .with("Content-Type", "text/html")
            .with("Author-1", "Alan O. Freier")
            .with("Title", "SSL Protocol V. 3.0")
            .with("Author-2", "Philip Karlton");
        let got = s.select(r);
        let names: Vec<_> = got
            .attributes
            .iter()
            .map(|a| a.name_str().into_owned())
            .collect();
        assert_eq!(names, ["Title", "Author-1", "Author-2"]);
        assert_eq!(
            got.url_str(),
            "http://home.netscape.com/eng/ssl3/ssl-toc.html"
        );
        let no_url = Select::parse("title, embed").unwrap().select(
            Record::new("FILE", "ftp://x/")
                .with("Title", "t")
                .with("Embed<1>-Type", "PostScript"),
        );
        assert_eq!(no_url.url_str(), "-");
        assert_eq!(no_url.attributes.len(), 2);
        assert!(Select::parse(" , ").is_err());
    }

    #[test]
    fn hits_forms() {
        let records: Vec<_> = (1..=25).map(|i| Record::new("D", format!("{i}"))).collect();
        let first = run(&mut Hits::parse("10").unwrap(), records.clone());
        assert_eq!(
            urls(&first),
            (1..=10).map(|i| i.to_string()).collect::<Vec<_>>()
        );
        let page = run(&mut Hits::parse("11..20").unwrap(), records.clone());
        assert_eq!(
            urls(&page),
            (11..=20).map(|i| i.to_string()).collect::<Vec<_>>()
        );
        let tail = run(&mut Hits::parse("24..").unwrap(), records);
        assert_eq!(urls(&tail), ["24", "25"]);
        for bad in ["", "0", "5..3", "x", "0..2", "1..x"] {
            assert!(Hits::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn order_score_then_title() {
        // Seed 000: "View-Order{x}: -Score,+Title".
        let mut o = Order::parse("-Score,+Title", &HashMap::new(), 1 << 20, None).unwrap();
        let recs = vec![
            Record::new("D", "a")
                .with("Score", "9")
                .with("Title", "beta"),
            Record::new("D", "b")
                .with("Score", "10")
                .with("Title", "zeta"),
            Record::new("D", "c")
                .with("Score", "9")
                .with("Title", "Alpha"),
            Record::new("D", "d").with("Title", "no score"),
            Record::new("D", "e")
                .with("Score", "10")
                .with("Title", "zeta"),
        ];
        let out = run(&mut o, recs);
        // 10 before 9 (numbers, not text); ties by Title case-insensitively; stable.
        assert_eq!(urls(&out), ["b", "e", "c", "a", "d"]);
    }

    #[test]
    fn schema_types_decide() {
        let mut types = HashMap::new();
        types.insert("code".to_string(), KeyType::from_data_type("varchar"));
        types.insert("when".to_string(), KeyType::from_data_type("date"));
        let mut o = Order::parse("code", &types, 1 << 20, None).unwrap();
        let out = run(
            &mut o,
            vec![
                Record::new("D", "9").with("Code", "9"),
                Record::new("D", "10").with("Code", "10"),
            ],
        );
        assert_eq!(urls(&out), ["10", "9"]);
        let mut o = Order::parse("When", &types, 1 << 20, None).unwrap();
        let out = run(
            &mut o,
            vec![
                Record::new("D", "late").with("When", "Tuesday, 11-Jun-96 19:18:44 GMT"),
                Record::new("D", "early").with("When", "774988159"),
            ],
        );
        assert_eq!(urls(&out), ["early", "late"]);
        assert_eq!(KeyType::from_data_type("INT(11)"), KeyType::Numeric);
        assert!(Order::parse("+", &types, 1, None).is_err());
        assert!(Order::parse("", &types, 1, None).is_err());
    }

    #[test]
    fn small_budget_spills_and_merges() {
        let mut o = Order::parse("Title", &HashMap::new(), 1, None).unwrap();
        let mut out = Collect::default();
        for i in (0..40).rev() {
            o.apply(
                Record::new("D", format!("{i}")).with("Title", format!("t{i:03}")),
                &mut out,
            )
            .unwrap();
        }
        assert_eq!(o.runs_spilled(), 40);
        assert!(o.runs_open() < 2 * MERGE_FAN_IN, "{} open", o.runs_open());
        o.finish(&mut out).unwrap();
        assert_eq!(
            urls(&out),
            (0..40).map(|i| i.to_string()).collect::<Vec<_>>()
        );
    }
}
