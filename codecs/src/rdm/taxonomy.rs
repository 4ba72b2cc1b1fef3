//! `@TAXONOMY` and `@CLASSIFICATION`: a taxonomy description ([`Taxonomy`]) and the
//! taxonomy-basic query language ([`TaxonomyScope`]).
//!
//! The note: "The Taxonomy description is represented as a stream of SOIF objects that
//! consists of one TAXONOMY object and one or more CLASSIFICATION objects." Each
//! classification names its parent (`Parent-Id`, `ROOT` at the top) and its taxonomy.
//!
//! Taxonomy-basic has "only 2 commands: descendant and children and their aliases":
//!
//! ```text
//! Scope = descendant Classification | descendant/N Classification
//!         children Classification   | anklebiter Classification
//! where Classification = ROOT | Classification-Id
//! ```
//!
//! `descendant X` is "node and everything below", `descendant/N X` the node and N levels
//! below it, and `children X` with its alias `anklebiter X` the "node and 1 directly below".
//! `ROOT` is not a classification, so it contributes no node of its own.
//!
//! ```
//! use soif_codecs::rdm::{Classification, Taxonomy, TaxonomyInfo, TaxonomyScope};
//! let t = Taxonomy::new(
//!     TaxonomyInfo::new("Sample"),
//!     vec![
//!         Classification::new("A", "ROOT", "Sample"),
//!         Classification::new("A:1", "A", "Sample"),
//!         Classification::new("A:1:x", "A:1", "Sample"),
//!     ],
//! )
//! .unwrap();
//! let ids = |scope: &str| -> Vec<String> {
//!     let scope = TaxonomyScope::parse(scope).unwrap();
//!     t.select(&scope).unwrap().iter().map(|c| c.id.clone()).collect()
//! };
//! assert_eq!(ids("anklebiter ROOT"), ["A"]);
//! assert_eq!(ids("children A"), ["A", "A:1"]);
//! assert_eq!(ids("descendant ROOT"), ["A", "A:1", "A:1:x"]);
//! ```

use super::fields::{check_template, is, keyword, new_record, set_once, text, url_of};
use super::RdmError;
use crate::record::{Attribute, Record};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

/// The template type of a taxonomy object.
pub const TAXONOMY: &str = "TAXONOMY";
/// The template type of a classification object.
pub const CLASSIFICATION: &str = "CLASSIFICATION";
/// The `Parent-Id` of top-level classifications, and the taxonomy-basic name of the top.
pub const ROOT: &str = "ROOT";

/// An `@TAXONOMY` object: the taxonomy's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaxonomyInfo {
    /// `Id` (required).
    pub id: String,
    /// `Description`: a human-readable one-line description.
    pub description: Option<String>,
    /// The object's URL (`None` for `-`, as in the note).
    pub url: Option<String>,
    /// Attributes the note does not define, kept in order.
    pub extra: Vec<Attribute>,
}

impl TaxonomyInfo {
    /// A taxonomy with this id and nothing else.
    pub fn new(id: impl Into<String>) -> TaxonomyInfo {
        TaxonomyInfo {
            id: id.into(),
            description: None,
            url: None,
            extra: Vec::new(),
        }
    }

    /// Reads an `@TAXONOMY` object.
    pub fn from_record(record: &Record) -> Result<TaxonomyInfo, RdmError> {
        Self::read(record).map_err(|e| e.with_position(record.position.as_ref()))
    }

    fn read(record: &Record) -> Result<TaxonomyInfo, RdmError> {
        check_template(record, TAXONOMY)?;
        let mut id = None;
        let mut description = None;
        let mut extra = Vec::new();
        for attr in &record.attributes {
            if is(attr, "Id") {
                set_once(&mut id, attr, identifier(attr)?)?;
            } else if is(attr, "Description") {
                set_once(&mut description, attr, text(attr)?)?;
            } else {
                extra.push(attr.clone());
            }
        }
        Ok(TaxonomyInfo {
            id: id.ok_or_else(|| RdmError::missing(TAXONOMY, "Id"))?,
            description,
            url: url_of(record),
            extra,
        })
    }

    /// Writes the object back as `@TAXONOMY`.
    pub fn to_record(&self) -> Record {
        let mut r = new_record(TAXONOMY, self.url.as_deref());
        r.push("Id", self.id.as_str());
        if let Some(d) = &self.description {
            r.push("Description", d.as_str());
        }
        r.attributes.extend(self.extra.iter().cloned());
        r
    }
}

/// An `@CLASSIFICATION` object: one category of a taxonomy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// `Id` (required), e.g. `Education/Training:Internal Training Classes`.
    pub id: String,
    /// `Parent-Id` (required): the parent's id, or [`ROOT`].
    pub parent_id: String,
    /// `Taxonomy-Id` (required): the taxonomy this classification belongs to.
    pub taxonomy_id: String,
    /// `Description`: a human-readable one-line description.
    pub description: Option<String>,
    /// The object's URL (`None` for `-`).
    pub url: Option<String>,
    /// Attributes the note does not define, kept in order.
    pub extra: Vec<Attribute>,
}

impl Classification {
    /// A classification with no description.
    pub fn new(
        id: impl Into<String>,
        parent_id: impl Into<String>,
        taxonomy_id: impl Into<String>,
    ) -> Classification {
        Classification {
            id: id.into(),
            parent_id: parent_id.into(),
            taxonomy_id: taxonomy_id.into(),
            description: None,
            url: None,
            extra: Vec::new(),
        }
    }

    /// True for a top-level classification (`Parent-Id: ROOT`).
    pub fn is_top_level(&self) -> bool {
        self.parent_id == ROOT
    }

    /// Reads an `@CLASSIFICATION` object.
    pub fn from_record(record: &Record) -> Result<Classification, RdmError> {
        Self::read(record).map_err(|e| e.with_position(record.position.as_ref()))
    }

    fn read(record: &Record) -> Result<Classification, RdmError> {
        check_template(record, CLASSIFICATION)?;
        let mut id = None;
        let mut parent_id = None;
        let mut taxonomy_id = None;
        let mut description = None;
        let mut extra = Vec::new();
        for attr in &record.attributes {
            if is(attr, "Id") {
                set_once(&mut id, attr, identifier(attr)?)?;
            } else if is(attr, "Parent-Id") {
                set_once(&mut parent_id, attr, identifier(attr)?)?;
            } else if is(attr, "Taxonomy-Id") {
                set_once(&mut taxonomy_id, attr, identifier(attr)?)?;
            } else if is(attr, "Description") {
                set_once(&mut description, attr, text(attr)?)?;
            } else {
                extra.push(attr.clone());
            }
        }
        let id = id.ok_or_else(|| RdmError::missing(CLASSIFICATION, "Id"))?;
        if id == ROOT {
            return Err(RdmError::invalid(
                "Id",
                &id,
                "ROOT names the top of the taxonomy, not a classification",
            ));
        }
        Ok(Classification {
            id,
            parent_id: parent_id.ok_or_else(|| RdmError::missing(CLASSIFICATION, "Parent-Id"))?,
            taxonomy_id: taxonomy_id
                .ok_or_else(|| RdmError::missing(CLASSIFICATION, "Taxonomy-Id"))?,
            description,
            url: url_of(record),
            extra,
        })
    }

    /// Writes the object back as `@CLASSIFICATION` (Id, Parent-Id, Taxonomy-Id,
    /// Description: the note's order).
    pub fn to_record(&self) -> Record {
        let mut r = new_record(CLASSIFICATION, self.url.as_deref());
        r.push("Id", self.id.as_str());
        r.push("Parent-Id", self.parent_id.as_str());
        r.push("Taxonomy-Id", self.taxonomy_id.as_str());
        if let Some(d) = &self.description {
            r.push("Description", d.as_str());
        }
        r.attributes.extend(self.extra.iter().cloned());
        r
    }
}

/// An id: UTF-8, trimmed, not empty.
fn identifier(attr: &Attribute) -> Result<String, RdmError> {
    let v = keyword(attr)?;
    if v.is_empty() {
        return Err(RdmError::invalid(&attr.name_str(), v, "empty identifier"));
    }
    Ok(v.to_string())
}

/// The node a taxonomy-basic query starts from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaxonomyNode {
    /// `ROOT`: the top of the taxonomy.
    Root,
    /// A classification id.
    Classification(String),
}

impl fmt::Display for TaxonomyNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaxonomyNode::Root => f.write_str(ROOT),
            TaxonomyNode::Classification(id) => f.write_str(id),
        }
    }
}

/// A taxonomy-basic scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaxonomyScope {
    /// `descendant X` (`depth: None`: everything below) or `descendant/N X`.
    Descendant {
        node: TaxonomyNode,
        depth: Option<u32>,
    },
    /// `children X`: the node and one level below.
    Children(TaxonomyNode),
    /// `anklebiter X`: the note's alias of `children`.
    Anklebiter(TaxonomyNode),
}

impl TaxonomyScope {
    /// Parses `descendant ROOT`, `descendant/2 Education/Training`, `children X` or
    /// `anklebiter Education/Training:Internal Training Classes` (the id is the rest of
    /// the line, spaces included; keywords in any case).
    pub fn parse(s: &str) -> Result<TaxonomyScope, RdmError> {
        let t = s.trim();
        let syntax = || {
            RdmError::invalid(
                "Scope",
                s,
                "taxonomy-basic accepts `descendant X`, `descendant/N X`, `children X` or \
                 `anklebiter X`, where X is ROOT or a classification id",
            )
        };
        let (command, rest) = t.split_once(char::is_whitespace).ok_or_else(syntax)?;
        let id = rest.trim();
        if id.is_empty() {
            return Err(syntax());
        }
        let node = if id == ROOT {
            TaxonomyNode::Root
        } else {
            TaxonomyNode::Classification(id.to_string())
        };
        let (word, depth) = match command.split_once('/') {
            Some((w, n)) => (
                w,
                Some(n.parse::<u32>().map_err(|_| {
                    RdmError::invalid("Scope", s, "descendant/N needs a number of levels N")
                })?),
            ),
            None => (command, None),
        };
        if word.eq_ignore_ascii_case("descendant") {
            Ok(TaxonomyScope::Descendant { node, depth })
        } else if depth.is_some() {
            Err(syntax())
        } else if word.eq_ignore_ascii_case("children") {
            Ok(TaxonomyScope::Children(node))
        } else if word.eq_ignore_ascii_case("anklebiter") {
            Ok(TaxonomyScope::Anklebiter(node))
        } else {
            Err(syntax())
        }
    }

    /// The node the query starts from.
    pub fn node(&self) -> &TaxonomyNode {
        match self {
            TaxonomyScope::Descendant { node, .. }
            | TaxonomyScope::Children(node)
            | TaxonomyScope::Anklebiter(node) => node,
        }
    }

    /// How many levels below the node are included (`None`: all).
    pub fn depth(&self) -> Option<u32> {
        match self {
            TaxonomyScope::Descendant { depth, .. } => *depth,
            TaxonomyScope::Children(_) | TaxonomyScope::Anklebiter(_) => Some(1),
        }
    }
}

impl fmt::Display for TaxonomyScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaxonomyScope::Descendant { node, depth: None } => write!(f, "descendant {node}"),
            TaxonomyScope::Descendant {
                node,
                depth: Some(n),
            } => write!(f, "descendant/{n} {node}"),
            TaxonomyScope::Children(node) => write!(f, "children {node}"),
            TaxonomyScope::Anklebiter(node) => write!(f, "anklebiter {node}"),
        }
    }
}

impl FromStr for TaxonomyScope {
    type Err = RdmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TaxonomyScope::parse(s)
    }
}

/// One taxonomy with its classifications, checked to form a tree under `ROOT`, with an
/// index for the taxonomy-basic queries. Loaded once (e.g. at server start), so it is held
/// in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taxonomy {
    info: TaxonomyInfo,
    classifications: Vec<Classification>,
    /// Id -> index into `classifications`.
    by_id: HashMap<String, usize>,
    /// Parent id (or ROOT) -> indexes of its children, in input order.
    children: HashMap<String, Vec<usize>>,
}

impl Taxonomy {
    /// Builds a taxonomy, checking that every classification belongs to it, ids are
    /// unique, every parent exists, and there are no cycles.
    pub fn new(
        info: TaxonomyInfo,
        classifications: Vec<Classification>,
    ) -> Result<Taxonomy, RdmError> {
        Taxonomy::build(info, classifications).map_err(|(_, e)| e)
    }

    /// [`Taxonomy::new`], also returning which classification (by index) an error is about.
    fn build(
        info: TaxonomyInfo,
        classifications: Vec<Classification>,
    ) -> Result<Taxonomy, (usize, RdmError)> {
        let taxonomy_id = info.id.clone();
        let bad = |i: usize, reason: String| {
            (
                i,
                RdmError::BadTaxonomy {
                    taxonomy: taxonomy_id.clone(),
                    reason,
                    position: None,
                },
            )
        };
        let mut by_id = HashMap::with_capacity(classifications.len());
        let mut children: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, c) in classifications.iter().enumerate() {
            if c.taxonomy_id != info.id {
                return Err(bad(
                    i,
                    format!(
                        "classification {:?} belongs to taxonomy {:?}",
                        c.id, c.taxonomy_id
                    ),
                ));
            }
            if by_id.insert(c.id.clone(), i).is_some() {
                return Err(bad(
                    i,
                    format!("classification {:?} is defined twice", c.id),
                ));
            }
            children.entry(c.parent_id.clone()).or_default().push(i);
        }
        for (i, c) in classifications.iter().enumerate() {
            if c.parent_id != ROOT && !by_id.contains_key(&c.parent_id) {
                return Err(bad(
                    i,
                    format!(
                        "classification {:?} has unknown parent {:?}",
                        c.id, c.parent_id
                    ),
                ));
            }
        }
        let t = Taxonomy {
            info,
            classifications,
            by_id,
            children,
        };
        // Every classification must be reachable from ROOT; what is not hangs in a cycle.
        let seen: HashSet<usize> = t.walk(None, None).into_iter().collect();
        if let Some(stray) = (0..t.classifications.len()).find(|i| !seen.contains(i)) {
            return Err(bad(
                stray,
                format!(
                    "classification {:?} is part of a parent cycle, not under ROOT",
                    t.classifications[stray].id
                ),
            ));
        }
        Ok(t)
    }

    /// Reads a taxonomy description: one `@TAXONOMY` object, then `@CLASSIFICATION`
    /// objects. Errors carry the offending record's position.
    pub fn from_records<'a>(
        records: impl IntoIterator<Item = &'a Record>,
    ) -> Result<Taxonomy, RdmError> {
        let mut records = records.into_iter();
        let first = records.next().ok_or_else(|| RdmError::WrongTemplate {
            expected: TAXONOMY,
            found: "nothing (empty taxonomy description)".to_string(),
            position: None,
        })?;
        let info = TaxonomyInfo::from_record(first)?;
        let mut classifications = Vec::new();
        let mut positions = Vec::new();
        for r in records {
            classifications.push(Classification::from_record(r)?);
            positions.push(r.position.clone());
        }
        Taxonomy::build(info, classifications)
            .map_err(|(i, e)| e.with_position(positions.get(i).and_then(Option::as_ref)))
    }

    /// The `@TAXONOMY` object.
    pub fn info(&self) -> &TaxonomyInfo {
        &self.info
    }

    /// All classifications, in input order.
    pub fn classifications(&self) -> &[Classification] {
        &self.classifications
    }

    /// The classification with this id.
    pub fn get(&self, id: &str) -> Option<&Classification> {
        self.by_id.get(id).map(|&i| &self.classifications[i])
    }

    /// The classifications directly under `node`.
    pub fn children_of(&self, node: &TaxonomyNode) -> Vec<&Classification> {
        let key = match node {
            TaxonomyNode::Root => ROOT,
            TaxonomyNode::Classification(id) => id.as_str(),
        };
        self.children
            .get(key)
            .map(|v| v.iter().map(|&i| &self.classifications[i]).collect())
            .unwrap_or_default()
    }

    /// Runs a taxonomy-basic query: the node (unless it is ROOT) and the classifications
    /// up to `scope.depth()` levels below it, in the taxonomy's order (so parents come
    /// before their children when they did in the input).
    pub fn select(&self, scope: &TaxonomyScope) -> Result<Vec<&Classification>, RdmError> {
        let start = match scope.node() {
            TaxonomyNode::Root => None,
            TaxonomyNode::Classification(id) => {
                Some(
                    *self
                        .by_id
                        .get(id)
                        .ok_or_else(|| RdmError::UnknownClassification {
                            taxonomy: self.info.id.clone(),
                            id: id.clone(),
                        })?,
                )
            }
        };
        let mut picked = self.walk(start, scope.depth());
        picked.sort_unstable();
        Ok(picked
            .into_iter()
            .map(|i| &self.classifications[i])
            .collect())
    }

    /// Breadth-first from `start` (None: ROOT), at most `depth` levels down; returns
    /// indexes, the start node included. A visited set guards against cycles.
    fn walk(&self, start: Option<usize>, depth: Option<u32>) -> Vec<usize> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut frontier: Vec<usize> = match start {
            Some(i) => {
                seen.insert(i);
                out.push(i);
                vec![i]
            }
            None => {
                let top = self.children.get(ROOT).cloned().unwrap_or_default();
                if depth == Some(0) {
                    return out;
                }
                for &i in &top {
                    seen.insert(i);
                    out.push(i);
                }
                top
            }
        };
        // ROOT's children are one level below ROOT already.
        let mut level = u32::from(start.is_none());
        while !frontier.is_empty() && depth.is_none_or(|d| level < d) {
            let mut next = Vec::new();
            for i in frontier {
                if let Some(kids) = self.children.get(&self.classifications[i].id) {
                    for &k in kids {
                        if seen.insert(k) {
                            out.push(k);
                            next.push(k);
                        }
                    }
                }
            }
            frontier = next;
            level += 1;
        }
        out
    }

    /// The taxonomy description as records: `@TAXONOMY`, then every `@CLASSIFICATION`.
    pub fn to_records(&self) -> Vec<Record> {
        std::iter::once(self.info.to_record())
            .chain(self.classifications.iter().map(Classification::to_record))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Position;

    const T: &str = "Netscape Sample 1";
    const ET: &str = "Education/Training";
    const ITC: &str = "Education/Training:Internal Training Classes";
    const CD: &str = "Education/Training:Internal Training Classes:Course Descriptions";
    const SCHED: &str = "Education/Training:Internal Training Classes:Schedule";

    /// The note's example taxonomy, plus a second top-level branch.
    fn sample() -> Taxonomy {
        let mut info = TaxonomyInfo::new(T);
        info.description = Some(
            "Sample Taxonomy which captures a basic Business organizational structure.".into(),
        );
        Taxonomy::new(
            info,
            vec![
                Classification::new(ET, ROOT, T),
                Classification::new(ITC, ET, T),
                Classification::new(CD, ITC, T),
                Classification::new(SCHED, ITC, T),
                Classification::new("Sales", ROOT, T),
            ],
        )
        .unwrap()
    }

    fn ids(t: &Taxonomy, scope: &str) -> Vec<String> {
        let scope = TaxonomyScope::parse(scope).unwrap();
        t.select(&scope)
            .unwrap()
            .iter()
            .map(|c| c.id.clone())
            .collect()
    }

    #[test]
    fn note_queries() {
        let t = sample();
        // "To send the entire taxonomy (node and everything below)"
        assert_eq!(ids(&t, "descendant ROOT"), [ET, ITC, CD, SCHED, "Sales"]);
        // "To send the entire only the children (e.g., node and 1 directly below)"
        assert_eq!(ids(&t, "anklebiter ROOT"), [ET, "Sales"]);
        assert_eq!(
            ids(
                &t,
                "anklebiter Education/Training:Internal Training Classes"
            ),
            [ITC, CD, SCHED]
        );
        assert_eq!(ids(&t, &format!("children {ITC}")), [ITC, CD, SCHED]);
    }

    #[test]
    fn descendant_depths() {
        let t = sample();
        assert_eq!(ids(&t, &format!("descendant {ET}")), [ET, ITC, CD, SCHED]);
        assert_eq!(ids(&t, &format!("descendant/0 {ET}")), [ET]);
        assert_eq!(ids(&t, &format!("descendant/1 {ET}")), [ET, ITC]);
        assert_eq!(ids(&t, &format!("descendant/2 {ET}")), [ET, ITC, CD, SCHED]);
        assert!(ids(&t, "descendant/0 ROOT").is_empty());
        assert_eq!(ids(&t, "descendant/1 ROOT"), [ET, "Sales"]);
        assert_eq!(ids(&t, "descendant/2 ROOT"), [ET, ITC, "Sales"]);
        assert_eq!(ids(&t, &format!("children {CD}")), [CD]);
    }

    #[test]
    fn scope_syntax() {
        let s = TaxonomyScope::parse("Descendant/3 Education/Training").unwrap();
        assert_eq!(s.depth(), Some(3));
        assert_eq!(s.node(), &TaxonomyNode::Classification(ET.into()));
        assert_eq!(s.to_string(), "descendant/3 Education/Training");
        assert_eq!(
            TaxonomyScope::parse("anklebiter ROOT").unwrap(),
            TaxonomyScope::Anklebiter(TaxonomyNode::Root)
        );
        for bad in [
            "",
            "descendant",
            "descendant/x ROOT",
            "children/2 ROOT",
            "parent ROOT",
        ] {
            let e = TaxonomyScope::parse(bad).unwrap_err();
            assert!(e.to_string().contains("Scope"), "{bad:?}: {e}");
        }
        let e = sample()
            .select(&TaxonomyScope::parse("children Marketing").unwrap())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "taxonomy \"Netscape Sample 1\" has no classification \"Marketing\""
        );
    }

    #[test]
    fn records_round_trip() {
        let t = sample();
        let records = t.to_records();
        assert_eq!(records[0].template_str(), "TAXONOMY");
        assert_eq!(records[1].get_str("Parent-Id"), Some("ROOT"));
        assert_eq!(Taxonomy::from_records(&records), Ok(t));
    }

    #[test]
    fn broken_trees_are_refused_with_the_record_position() {
        let mut records = sample().to_records();
        for (i, r) in records.iter_mut().enumerate() {
            r.position = Some(Position::new(i as u64 * 100, i as u64 + 1));
        }
        let mut unknown_parent = records.clone();
        unknown_parent[3].set("Parent-Id", "Nowhere");
        let e = Taxonomy::from_records(&unknown_parent).unwrap_err();
        assert!(e.to_string().contains("unknown parent \"Nowhere\""), "{e}");
        assert_eq!(e.position().map(|p| p.record), Some(4));

        let mut cycle = records.clone();
        cycle[1].set("Parent-Id", CD);
        let e = Taxonomy::from_records(&cycle).unwrap_err();
        assert!(e.to_string().contains("cycle"), "{e}");

        let mut other = records.clone();
        other[2].set("Taxonomy-Id", "Another");
        let e = Taxonomy::from_records(&other).unwrap_err();
        assert!(
            e.to_string().contains("belongs to taxonomy \"Another\""),
            "{e}"
        );

        let mut twice = records.clone();
        twice.push(records[1].clone());
        assert!(Taxonomy::from_records(&twice).is_err());

        let mut missing = records.clone();
        missing[2].remove("Parent-Id");
        let e = Taxonomy::from_records(&missing).unwrap_err();
        assert_eq!(
            e.to_string(),
            "@CLASSIFICATION object is missing required attribute Parent-Id, at byte 200, record 3"
        );
        assert!(Taxonomy::from_records(&records[1..]).is_err());
        assert!(Taxonomy::from_records(&[]).is_err());
    }
}
