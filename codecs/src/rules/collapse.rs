//! Collapsing and expanding: between SOIF's flat names and lists / nested parts (the
//! rules of the `collapse` and `expand` transforms).
//!
//! `collapse` turns the naming conventions of RFC 2655 §3.3 and Harvest into structure:
//!
//! - `Author-1`, `Author-2`, `Author-3` → `Author: [a, b, c]`, in numeric order of the
//!   suffix (Sun's servers numbered with gaps: `Author-2`, `Author-7` is a two-item list);
//!   a plain `Author` in the same record comes first, and a plain name repeated in one
//!   record also becomes a list (nothing is dropped);
//! - `Embed<1>-Type`, `Embed<1>-MD5`, `Embed<2>-Type` → `Embed: [{Type, MD5}, {Type}]`,
//!   ordered by the part number; inside each part the same rules apply again, so
//!   `Embed<1>-Author-2` becomes an `Author` list inside part 1.
//!
//! Only canonical suffixes count (see [`super::names`]): `Version-01` stays a plain name.
//!
//! **Attribute order.** A collapsed attribute takes the place of the *first* attribute of
//! its group; the others close up behind it. `expand` writes a list's items one after
//! the other at that place, numbered from 1, using [`Record::flattened`] (the rule every
//! flat sink uses). So `expand(collapse(r)) == r` for *canonical* records — each group's
//! names contiguous, numbered 1‥N without gaps, no plain name mixed with its numbered
//! forms, no repeated names. For other records `expand(collapse(r))` is the canonical
//! form of `r`: same values in the same per-attribute order, renumbered.
//!
//! `expand` also numbers a plain name repeated in a flat record (`Author`, `Author` →
//! `Author-1`, `Author-2`): that is how a collapsed list comes back from JSON Lines.
//!
//! ```
//! use soif_codecs::{Record, Value};
//! use soif_codecs::rules::collapse::collapse;
//! let r = Record::new("DOCUMENT", "http://home.netscape.com/eng/ssl3/ssl-toc.html")
//!     .with("Author-1", "Alan O. Freier")
//!     .with("Author-2", "Philip Karlton");
//! let c = collapse(&r);
//! assert_eq!(
//!     c.get("Author"),
//!     Some(&Value::List(vec!["Alan O. Freier".into(), "Philip Karlton".into()]))
//! );
//! assert_eq!(c.flattened().into_owned(), r);
//! ```

use super::names::{split_embed, split_suffix};
use crate::{Attribute, Record, Value};
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap, HashSet};

/// One item of a group, keyed by (number, kind, duplicate counter) so that `-N` values and
/// `<N>-` parts with the same number stay apart and repeated names keep input order.
enum Item {
    Value(Value),
    Part(Vec<Attribute>),
}

/// All the attributes that collapse into one name.
struct Group {
    name: Bytes,
    plain: Vec<Value>,
    numbered: BTreeMap<(u64, u8, usize), Item>,
}

const KIND_VALUE: u8 = 0;
const KIND_PART: u8 = 1;

/// Collapses a record's multi-value names and embedded parts (see the module docs).
/// A record that is already (partly) collapsed is flattened first, so `collapse` is
/// idempotent.
pub fn collapse(record: &Record) -> Record {
    collapse_record(record.flattened().into_owned()).0
}

/// [`collapse`] of a record the caller gives up, its names and values moved rather than
/// copied; also says whether its (flattened) attributes were canonical
/// ([`is_canonical`]), which decides how: canonical attributes — the rule — collapse in
/// one pass that allocates only the lists, others through [`collapse_attributes`].
pub fn collapse_record(record: Record) -> (Record, bool) {
    let mut record = if record.is_flat() {
        record
    } else {
        record.flattened().into_owned()
    };
    let canonical = is_canonical(&record.attributes);
    if canonical {
        collapse_canonical(&mut record.attributes);
    } else {
        record.attributes = collapse_attributes(&record.attributes);
    }
    (record, canonical)
}

/// What a flat name says about the group it belongs to. Offsets are into the name.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// A plain name, its own group.
    Plain,
    /// `Base-N`: the group is `name[..base]`.
    Value { base: usize, n: u64 },
    /// `Prefix<N>-Rest`: the group is `name[..base]`, the name inside the part
    /// `name[rest..]`.
    Part { base: usize, n: u64, rest: usize },
}

fn shape(name: &[u8]) -> Shape {
    if let Some((prefix, n, rest)) = split_embed(name) {
        return Shape::Part {
            base: prefix.len(),
            n,
            rest: name.len() - rest.len(),
        };
    }
    match split_suffix(name) {
        Some((base, n)) => Shape::Value {
            base: base.len(),
            n,
        },
        None => Shape::Plain,
    }
}

/// The one-pass collapse of canonical attributes ([`is_canonical`]), in place: each
/// group is contiguous and numbered in order, so a group only ever continues the last
/// attribute written, and the attributes written never overtake the ones read.
fn collapse_canonical(attrs: &mut Vec<Attribute>) {
    // attrs[..written] is the output; attrs[written..i] are emptied slots.
    let mut written = 0;
    // The part being gathered (names inside it), for the list at attrs[written - 1].
    let mut part: Vec<Attribute> = Vec::new();
    let mut part_n = 0;
    for i in 0..attrs.len() {
        let shape = shape(&attrs[i].name);
        if let Shape::Plain = shape {
            close_part(&mut attrs[..written], &mut part);
            attrs.swap(written, i);
            written += 1;
            continue;
        }
        let attr = std::mem::replace(&mut attrs[i], EMPTY);
        match shape {
            Shape::Plain => {} // Moved above.
            Shape::Value { base, .. } => {
                let group = &attr.name[..base];
                if let Some(Attribute {
                    name,
                    value: Value::List(items),
                }) = attrs[..written].last_mut()
                {
                    if part.is_empty() && name.as_ref() == group {
                        items.push(attr.value);
                        continue;
                    }
                }
                close_part(&mut attrs[..written], &mut part);
                let mut items = Vec::with_capacity(4);
                items.push(attr.value);
                attrs[written] = Attribute {
                    name: attr.name.slice(..base),
                    value: Value::List(items),
                };
                written += 1;
            }
            Shape::Part { base, n, rest } => {
                let continues = !part.is_empty()
                    && attrs[..written]
                        .last()
                        .is_some_and(|l| l.name[..] == attr.name[..base]);
                if !continues || n != part_n {
                    close_part(&mut attrs[..written], &mut part);
                }
                if !continues {
                    attrs[written] = Attribute {
                        name: attr.name.slice(..base),
                        value: Value::List(Vec::with_capacity(2)),
                    };
                    written += 1;
                }
                part_n = n;
                part.push(Attribute {
                    name: attr.name.slice(rest..),
                    value: attr.value,
                });
            }
        }
    }
    close_part(&mut attrs[..written], &mut part);
    attrs.truncate(written);
}

/// What an emptied slot holds (no allocation).
const EMPTY: Attribute = Attribute {
    name: Bytes::new(),
    value: Value::Bytes(Bytes::new()),
};

/// Adds the part gathered to the list at the end of `out`.
fn close_part(out: &mut [Attribute], part: &mut Vec<Attribute>) {
    if part.is_empty() {
        return;
    }
    let mut attrs = std::mem::take(part);
    collapse_canonical(&mut attrs);
    if let Some(Attribute {
        value: Value::List(items),
        ..
    }) = out.last_mut()
    {
        items.push(Value::Object(attrs));
    }
}

/// Collapses a flat attribute list (the body of [`collapse`], also used for the
/// attributes inside an embedded part).
pub fn collapse_attributes(attrs: &[Attribute]) -> Vec<Attribute> {
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<Bytes, usize> = HashMap::new();
    let mut counter = 0usize;

    let mut group_of = |groups: &mut Vec<Group>, name: &[u8]| -> usize {
        if let Some(&i) = index.get(name) {
            return i;
        }
        let name = Bytes::copy_from_slice(name);
        groups.push(Group {
            name: name.clone(),
            plain: Vec::new(),
            numbered: BTreeMap::new(),
        });
        index.insert(name, groups.len() - 1);
        groups.len() - 1
    };

    for attr in attrs {
        let name = attr.name.as_ref();
        if let Some((prefix, n, rest)) = split_embed(name) {
            let g = group_of(&mut groups, prefix);
            let part = groups[g]
                .numbered
                .entry((n, KIND_PART, 0))
                .or_insert_with(|| Item::Part(Vec::new()));
            if let Item::Part(part_attrs) = part {
                part_attrs.push(Attribute {
                    name: attr.name.slice_ref(rest),
                    value: attr.value.clone(),
                });
            }
        } else if let Some((base, n)) = split_suffix(name) {
            let g = group_of(&mut groups, base);
            counter += 1;
            groups[g]
                .numbered
                .insert((n, KIND_VALUE, counter), Item::Value(attr.value.clone()));
        } else {
            let g = group_of(&mut groups, name);
            groups[g].plain.push(attr.value.clone());
        }
    }

    groups
        .into_iter()
        .map(|g| {
            let value = if g.plain.len() == 1 && g.numbered.is_empty() {
                g.plain
                    .into_iter()
                    .next()
                    .unwrap_or(Value::List(Vec::new()))
            } else {
                let mut items = g.plain;
                items.extend(g.numbered.into_values().map(|item| match item {
                    Item::Value(v) => v,
                    Item::Part(attrs) => Value::Object(collapse_attributes(&attrs)),
                }));
                Value::List(items)
            };
            Attribute {
                name: g.name,
                value,
            }
        })
        .collect()
}

/// Writes lists and parts back as flat SOIF names ([`Record::flattened`]), and numbers a
/// plain name repeated in the record (see [`number_repeats`]).
pub fn expand(record: &Record) -> Record {
    number_repeats(record.flattened().into_owned())
}

/// Numbers a plain name that occurs more than once — `Author`, `Author`, `Author` →
/// `Author-1`, `Author-2`, `Author-3`, each in its place — unless the record also has
/// numbered forms of it (`Author-4`), which would clash.
///
/// `collapse` reads a repeated name as a list, so its inverse writes the list as
/// `-N` names; and the JSON Lines reader gives back a collapsed list of plain values as
/// a repeated name (JSON cannot tell the two apart), so `collapse → jsonl → expand` ends
/// where `collapse → expand` does.
pub fn number_repeats(mut record: Record) -> Record {
    let mut plain: HashMap<&[u8], usize> = HashMap::new();
    let mut numbered: HashSet<&[u8]> = HashSet::new();
    for a in &record.attributes {
        if split_embed(&a.name).is_some() {
            continue;
        }
        match split_suffix(&a.name) {
            Some((base, _)) => {
                numbered.insert(base);
            }
            None => *plain.entry(a.name.as_ref()).or_default() += 1,
        }
    }
    let repeated: HashSet<Bytes> = plain
        .into_iter()
        .filter(|(name, n)| *n > 1 && !numbered.contains(name))
        .map(|(name, _)| Bytes::copy_from_slice(name))
        .collect();
    if repeated.is_empty() {
        return record;
    }
    let mut next: HashMap<Bytes, u64> = HashMap::new();
    for a in &mut record.attributes {
        if repeated.contains(&a.name) {
            let n = next.entry(a.name.clone()).or_insert(0);
            *n += 1;
            let mut name = Vec::with_capacity(a.name.len() + 4);
            name.extend_from_slice(&a.name);
            name.extend_from_slice(format!("-{n}").as_bytes());
            a.name = Bytes::from(name);
        }
    }
    record
}

/// True when `expand(collapse(r))` gives these (flat) attributes back unchanged: each
/// group's names adjacent, numbered 1‥N in order, no plain name beside its numbered forms
/// or repeated, `Embed<n>-` parts numbered 1‥N with each part's attributes adjacent and
/// canonical themselves. (Values and parts under one name, `Embed-1` beside
/// `Embed<2>-Type`, count as not canonical even where they would survive.)
pub fn is_canonical(attrs: &[Attribute]) -> bool {
    canonical_from(attrs, 0)
}

/// [`is_canonical`] of the names from byte `skip` on (the names inside a part, whose
/// `Prefix<N>-` is `skip` bytes long). Allocates nothing for records of up to
/// [`Closed::SMALL`] groups.
fn canonical_from(attrs: &[Attribute], skip: usize) -> bool {
    /// The group being read: what kind of names it has, and for a part where its
    /// attributes start and how long their prefix is.
    #[derive(Clone, Copy)]
    enum Run {
        Plain,
        Values(u64),
        Part { n: u64, start: usize, skip: usize },
    }
    let mut closed = Closed::default();
    let mut current: Option<&[u8]> = None;
    let mut run = Run::Plain;
    for (i, a) in attrs.iter().enumerate() {
        let Some(name) = a.name.get(skip..) else {
            return false;
        };
        let (base, next) = match shape(name) {
            Shape::Plain => (name, Run::Plain),
            Shape::Value { base, n } => (&name[..base], Run::Values(n)),
            Shape::Part { base, n, rest } => (
                &name[..base],
                Run::Part {
                    n,
                    start: i,
                    skip: skip + rest,
                },
            ),
        };
        if current == Some(base) {
            run = match (run, next) {
                (Run::Values(k), Run::Values(n)) if n == k + 1 => next,
                (Run::Part { n: k, .. }, Run::Part { n, .. }) if n == k => run,
                (Run::Part { n: k, start, skip }, Run::Part { n, .. }) if n == k + 1 => {
                    if !canonical_from(&attrs[start..i], skip) {
                        return false;
                    }
                    next
                }
                // A repeated plain name, a plain name beside numbered ones, a gap, a
                // number out of order, values mixed with parts.
                _ => return false,
            };
            continue;
        }
        if let Run::Part { start, skip, .. } = run {
            if !canonical_from(&attrs[start..i], skip) {
                return false;
            }
        }
        if let Some(done) = current {
            closed.insert(done);
        }
        if closed.contains(base) {
            return false; // The group was interrupted by another name.
        }
        match next {
            Run::Values(n) | Run::Part { n, .. } if n != 1 => return false,
            _ => {}
        }
        current = Some(base);
        run = next;
    }
    match run {
        Run::Part { start, skip, .. } => canonical_from(&attrs[start..], skip),
        _ => true,
    }
}

/// The names of the groups already read: a short array compared by a cheap key first
/// (length and three bytes), with a 64-bit mask of the keys seen in front of it (most
/// names are new, and the mask says so at once), and a hash set beyond
/// [`Closed::SMALL`] names.
struct Closed<'a> {
    mask: u64,
    keys: [u64; Closed::SMALL],
    names: [&'a [u8]; Closed::SMALL],
    len: usize,
    more: HashSet<&'a [u8]>,
}

impl Default for Closed<'_> {
    fn default() -> Self {
        Closed {
            mask: 0,
            keys: [0; Closed::SMALL],
            names: [&[]; Closed::SMALL],
            len: 0,
            more: HashSet::new(),
        }
    }
}

impl<'a> Closed<'a> {
    const SMALL: usize = 32;

    fn key(name: &[u8]) -> u64 {
        match name {
            [] => 0,
            [first, .., last] | [first @ last] => {
                name.len() as u64
                    | u64::from(*first) << 32
                    | u64::from(*last) << 40
                    | u64::from(name[name.len() / 2]) << 48
            }
        }
    }

    /// The key's bit in `mask`.
    fn bit(key: u64) -> u64 {
        1 << (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58)
    }

    fn insert(&mut self, name: &'a [u8]) {
        let key = Closed::key(name);
        self.mask |= Closed::bit(key);
        if self.len < Closed::SMALL {
            self.keys[self.len] = key;
            self.names[self.len] = name;
            self.len += 1;
        } else {
            self.more.insert(name);
        }
    }

    fn contains(&self, name: &[u8]) -> bool {
        let key = Closed::key(name);
        if self.mask & Closed::bit(key) == 0 {
            return false;
        }
        self.keys[..self.len]
            .iter()
            .zip(&self.names)
            .any(|(k, n)| *k == key && *n == name)
            || (!self.more.is_empty() && self.more.contains(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(r: &Record) -> Vec<String> {
        r.attributes
            .iter()
            .map(|a| a.name_str().into_owned())
            .collect()
    }

    #[test]
    fn gaps_and_plain_first() {
        let r = Record::new("FILE", "-")
            .with("Author-7", "g")
            .with("Title", "t")
            .with("Author-2", "b")
            .with("Author", "plain");
        let c = collapse(&r);
        assert_eq!(names(&c), ["Author", "Title"]);
        assert_eq!(
            c.get("Author"),
            Some(&Value::List(vec!["plain".into(), "b".into(), "g".into()]))
        );
        // Canonical form: renumbered from 1, group at its first position.
        assert_eq!(
            names(&expand(&c)),
            ["Author-1", "Author-2", "Author-3", "Title"]
        );
    }

    #[test]
    fn repeated_plain_name_is_a_list() {
        let r = Record::new("FILE", "-")
            .with("Keywords", "a")
            .with("Keywords", "b");
        let c = collapse(&r);
        assert_eq!(
            c.get("Keywords"),
            Some(&Value::List(vec!["a".into(), "b".into()]))
        );
    }

    #[test]
    fn non_canonical_suffixes_stay() {
        let r = Record::new("FILE", "-")
            .with("Version-01", "x")
            .with("Last-Modified", "y")
            .with("Weightlist-[IMAGE:Subject]", "Moon;15");
        assert_eq!(collapse(&r), r);
    }

    #[test]
    fn nested_parts_collapse_inside() {
        let r = Record::new("FILE", "-")
            .with("Embed<2>-Type", "HTML")
            .with("Embed<1>-Author-2", "b")
            .with("Embed<1>-Author-1", "a");
        let c = collapse(&r);
        assert_eq!(
            c.get("Embed"),
            Some(&Value::List(vec![
                Value::Object(vec![Attribute {
                    name: Bytes::from_static(b"Author"),
                    value: Value::List(vec!["a".into(), "b".into()]),
                }]),
                Value::Object(vec![Attribute::new("Type", "HTML")]),
            ]))
        );
        assert_eq!(
            names(&expand(&c)),
            ["Embed<1>-Author-1", "Embed<1>-Author-2", "Embed<2>-Type"]
        );
    }

    #[test]
    fn expand_numbers_repeated_plain_names() {
        let r = Record::new("FILE", "-")
            .with("Author", "a")
            .with("Title", "t")
            .with("Author", "b")
            .with("Keywords", "k");
        assert_eq!(
            names(&expand(&r)),
            ["Author-1", "Title", "Author-2", "Keywords"]
        );
        assert_eq!(expand(&r).get_str("Author-2"), Some("b"));
        // With numbered forms present, numbering would clash: left alone.
        let r = Record::new("FILE", "-")
            .with("Author", "a")
            .with("Author", "b")
            .with("Author-3", "c");
        assert_eq!(expand(&r), r);
    }

    #[test]
    fn canonical_records_are_recognised() {
        let canonical = |r: &Record| is_canonical(&r.attributes);
        let base = || Record::new("FILE", "-");
        assert!(canonical(&base()));
        assert!(canonical(
            &base()
                .with("Title", "t")
                .with("Author-1", "a")
                .with("Author-2", "b")
                .with("Embed<1>-Type", "PostScript")
                .with("Embed<1>-Author-1", "x")
                .with("Embed<2>-Type", "HTML")
        ));
        for bad in [
            base().with("Author-2", "b"),
            base().with("Author-1", "a").with("Author-3", "c"),
            base().with("Author-2", "b").with("Author-1", "a"),
            base()
                .with("Author-1", "a")
                .with("Title", "t")
                .with("Author-2", "b"),
            base().with("Author", "p").with("Author-1", "a"),
            base().with("Keywords", "a").with("Keywords", "b"),
            base().with("Embed<2>-Type", "HTML"),
            base().with("Embed<1>-Type", "a").with("Embed<3>-Type", "b"),
            base()
                .with("Embed<1>-Type", "a")
                .with("Embed<2>-Type", "b")
                .with("Embed<1>-MD5", "m"),
            base().with("Embed<1>-Author-2", "x"),
        ] {
            assert!(!canonical(&bad), "{bad:?}");
            // The definition: exactly the records expand(collapse(r)) does not give back.
            assert_ne!(expand(&collapse(&bad)), bad, "{bad:?}");
        }
    }

    #[test]
    fn idempotent() {
        let r = Record::new("FILE", "-")
            .with("Author-1", "a")
            .with("Embed<1>-Type", "HTML");
        let once = collapse(&r);
        assert_eq!(collapse(&once), once);
    }
}
