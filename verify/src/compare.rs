//! The comparison, one partition at a time: the source side's entries of a partition go
//! into a map of key hash → digest and offset (what the records would be in the
//! target), then the target side's entries of the same partition are looked up in it.
//! Memory holds one partition's keys, never the whole side.
//!
//! A catalog keeps the last record of each key, applies `@DELETE` and merges `@REFRESH`;
//! a file holds every record written, in order, so a key written twice is two entries to
//! find (each matched with an equal one first).

use crate::entry::{Digest, Entry, KeyHash};
use crate::spill::{Spilled, PARTS};
use bytes::Bytes;
use soif_codecs::Action;
use std::collections::HashMap;
use std::io;

/// What a record that does not match is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// In the sources, not in the target.
    Missing,
    /// In the target, not in the sources.
    Extra,
    /// In both, with different content.
    Changed,
    /// Deleted by the sources, still in the target (or, in a file, the deletion is not
    /// there).
    DeletionNotApplied,
}

impl Class {
    pub const ALL: [Class; 4] = [
        Class::Missing,
        Class::Extra,
        Class::Changed,
        Class::DeletionNotApplied,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Missing => "missing",
            Class::Extra => "extra",
            Class::Changed => "changed",
            Class::DeletionNotApplied => "deletion_not_applied",
        }
    }
}

/// The first attribute that differs between a record and its row, line or object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    /// The attribute's name (`(action)` when the actions differ).
    pub attribute: String,
    /// Its value in the sources (shortened), `None` when absent.
    pub source: Option<String>,
    /// Its value in the target (shortened), `None` when absent.
    pub target: Option<String>,
}

/// One record that does not match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub class: Class,
    pub template: Bytes,
    pub url: Bytes,
    pub change: Option<Change>,
}

/// The counts of a comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Records in both with the same content.
    pub matched: u64,
    /// Deletions found applied (the key is gone from a catalog).
    pub deleted: u64,
    pub missing: u64,
    pub extra: u64,
    pub changed: u64,
    pub deletion_not_applied: u64,
}

impl Counts {
    pub fn of(&self, class: Class) -> u64 {
        match class {
            Class::Missing => self.missing,
            Class::Extra => self.extra,
            Class::Changed => self.changed,
            Class::DeletionNotApplied => self.deletion_not_applied,
        }
    }

    fn add(&mut self, class: Class) {
        match class {
            Class::Missing => self.missing += 1,
            Class::Extra => self.extra += 1,
            Class::Changed => self.changed += 1,
            Class::DeletionNotApplied => self.deletion_not_applied += 1,
        }
    }

    /// Records that do not match.
    pub fn mismatches(&self) -> u64 {
        self.missing + self.extra + self.changed + self.deletion_not_applied
    }
}

/// One source entry of the partition in hand.
struct Slot {
    offset: u64,
    deleted: bool,
    digest: Digest,
    matched: bool,
}

/// Compares the two sides partition by partition. `finding` gets every record that does
/// not match (sorted by key within a partition); `progress` the partitions done.
pub fn compare(
    source: &Spilled,
    target: &Spilled,
    catalog: bool,
    finding: &mut dyn FnMut(&Finding) -> io::Result<()>,
    progress: &mut dyn FnMut(usize),
) -> io::Result<Counts> {
    let mut out = Counts::default();
    for part in 0..PARTS {
        let mut found = Vec::new();
        compare_part(source, target, part, catalog, &mut out, &mut found)?;
        found.sort_by(|a, b| (&a.template, &a.url, a.class).cmp(&(&b.template, &b.url, b.class)));
        for f in &found {
            out.add(f.class);
            finding(f)?;
        }
        progress(part + 1);
    }
    Ok(out)
}

fn compare_part(
    source: &Spilled,
    target: &Spilled,
    part: usize,
    catalog: bool,
    out: &mut Counts,
    found: &mut Vec<Finding>,
) -> io::Result<()> {
    let mut src = source.read(part)?;
    let mut slots: HashMap<KeyHash, Vec<Slot>> = HashMap::new();
    // Catalog rows merged from `@REFRESH` records (rare): the merged entry.
    let mut merged: HashMap<KeyHash, Entry> = HashMap::new();
    while let Some((offset, head, payload)) = src.next_entry()? {
        let kh = head.key;
        if !catalog {
            slots.entry(kh).or_default().push(Slot {
                offset,
                deleted: head.action == Some(Action::Delete),
                digest: head.digest,
                matched: false,
            });
            continue;
        }
        let v = slots.entry(kh).or_default();
        let prev_row = v.first().filter(|s| !s.deleted).map(|s| s.offset);
        let (deleted, digest) = match prev_row {
            Some(prev) if head.action == Some(Action::Refresh) => {
                let before = match merged.remove(&kh) {
                    Some(m) => m,
                    None => src.at(prev)?,
                };
                let m = merge(before, Entry::decode(payload)?);
                let digest = m.digest(false);
                merged.insert(kh, m);
                (false, digest)
            }
            _ => {
                merged.remove(&kh);
                (head.action == Some(Action::Delete), head.digest)
            }
        };
        v.clear();
        v.push(Slot {
            offset,
            deleted,
            digest,
            matched: false,
        });
    }
    let mut tgt = target.read(part)?;
    // Entries are compared by their heads; decoded only when they are reported.
    while let Some((_, head, payload)) = tgt.next_entry()? {
        let (kh, td) = (head.key, head.digest);
        let open = slots
            .get_mut(&kh)
            .and_then(|v| pick(v, &td))
            .filter(|s| !s.matched);
        let Some(slot) = open else {
            found.push(finding(Class::Extra, &Entry::decode(payload)?, None));
            continue;
        };
        slot.matched = true;
        if catalog && slot.deleted {
            let t = Entry::decode(payload)?;
            found.push(finding(Class::DeletionNotApplied, &t, None));
        } else if slot.digest == td {
            out.matched += 1;
        } else {
            let s = match merged.get(&kh) {
                Some(m) => m.clone(),
                None => src.at(slot.offset)?,
            };
            let t = Entry::decode(payload)?;
            let change = first_difference(&s, &t, !catalog);
            found.push(finding(Class::Changed, &t, Some(change)));
        }
    }
    for (kh, v) in &slots {
        for slot in v.iter().filter(|s| !s.matched) {
            match (slot.deleted, catalog) {
                (true, true) => out.deleted += 1,
                (true, false) => {
                    let s = src.at(slot.offset)?;
                    found.push(finding(Class::DeletionNotApplied, &s, None));
                }
                (false, _) => {
                    let s = match merged.get(kh) {
                        Some(m) => m.clone(),
                        None => src.at(slot.offset)?,
                    };
                    found.push(finding(Class::Missing, &s, None));
                }
            }
        }
    }
    Ok(())
}

/// The slot a target entry is matched with: an open one with the same digest, else the
/// first open one, else (all taken) the first.
fn pick<'a>(v: &'a mut [Slot], digest: &Digest) -> Option<&'a mut Slot> {
    let i = v
        .iter()
        .position(|s| !s.matched && &s.digest == digest)
        .or_else(|| v.iter().position(|s| !s.matched))
        .unwrap_or(0);
    v.get_mut(i)
}

/// `@REFRESH` into a row: its attributes replace those of the same name, others stay.
fn merge(mut row: Entry, refresh: Entry) -> Entry {
    row.attrs
        .retain(|a| !refresh.attrs.iter().any(|b| b.name == a.name));
    row.attrs.extend(refresh.attrs);
    row.action = None;
    row.finish()
}

fn finding(class: Class, e: &Entry, change: Option<Change>) -> Finding {
    Finding {
        class,
        template: e.template.clone(),
        url: e.url.clone(),
        change,
    }
}

/// The first attribute (in name order) whose value differs, or that only one side has.
pub fn first_difference(source: &Entry, target: &Entry, with_action: bool) -> Change {
    let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
    if with_action && source.action != target.action {
        let name = |a: Option<Action>| a.map(|a| a.as_str().to_string());
        return Change {
            attribute: "(action)".into(),
            source: name(source.action),
            target: name(target.action),
        };
    }
    let (s, t) = (&source.attrs, &target.attrs);
    let (mut i, mut j) = (0, 0);
    loop {
        match (s.get(i), t.get(j)) {
            (Some(a), Some(b)) if a.name == b.name => {
                if a.digest != b.digest {
                    return Change {
                        attribute: text(&a.name),
                        source: Some(text(&a.shown)),
                        target: Some(text(&b.shown)),
                    };
                }
                i += 1;
                j += 1;
            }
            (Some(a), b) if b.is_none_or(|b| a.name < b.name) => {
                return Change {
                    attribute: text(&a.name),
                    source: Some(text(&a.shown)),
                    target: None,
                }
            }
            (_, Some(b)) => {
                return Change {
                    attribute: text(&b.name),
                    source: None,
                    target: Some(text(&b.shown)),
                }
            }
            _ => {
                return Change {
                    attribute: "(none)".into(),
                    source: None,
                    target: None,
                }
            }
        }
    }
}
