//! `@RDMQUERY`: a request's scope and view ([`RdmQuery`], [`View`]).
//!
//! The note's view has three attributes:
//! - `View-Attributes`: `attr[,attr...]` — which attributes to return ([`ViewAttributes`]);
//! - `View-Order`: `(+|-)attr[,(+|-)attr...]`, "Ascending order is the default, if not
//!   specified" ([`ViewOrder`]);
//! - `View-Hits`: "`10` means the first 10 hits, `11..20` means the 11th through 20th
//!   hits" ([`ViewHits`]).
//!
//! `Scope` is text whose meaning depends on the header's query language:
//! [`GathererScope`] (`all`, `since DATE`), [`SchemaScope`] (`defined ATTRIBUTE`) and
//! [`TaxonomyScope`](super::TaxonomyScope) (`descendant ROOT`, …). The view parsers are
//! also what the `select`, `order` and `hits` transforms use.
//!
//! ```
//! use soif_codecs::rdm::{Direction, RdmQuery, ViewHits};
//! use soif_codecs::Record;
//! let r = Record::new("RDMQUERY", "-")
//!     .with("View-Attributes", "URL,Title,Author,Last-Modified,Score")
//!     .with("View-Hits", "10")
//!     .with("View-Order", "-Score,+Title");
//! let q = RdmQuery::from_record(&r).unwrap();
//! assert_eq!(q.view.hits, Some(ViewHits::First(10)));
//! assert_eq!(q.view.order.unwrap().keys()[0].direction, Direction::Descending);
//! ```

use super::fields::{check_template, is, keyword, new_record, set_once, split_list};
use super::{RdmDate, RdmError};
use crate::record::{Attribute, Record};
use std::fmt;
use std::str::FromStr;

/// The template type of an RDM query object.
pub const RDMQUERY: &str = "RDMQUERY";

/// `View-Attributes`: the attributes to return for each hit, in the order given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ViewAttributes(pub Vec<String>);

impl ViewAttributes {
    /// Parses `URL,Title,Author` (spaces around items are ignored, as in the note's
    /// `URL, Title, Author`). An empty list is an error: it would select nothing.
    pub fn parse(s: &str) -> Result<ViewAttributes, RdmError> {
        let names: Vec<String> = split_list(s).map(str::to_string).collect();
        if names.is_empty() {
            return Err(RdmError::invalid(
                "View-Attributes",
                s,
                "no attribute names (expected attr[,attr...])",
            ));
        }
        if let Some(bad) = names.iter().find(|n| n.contains(char::is_whitespace)) {
            return Err(RdmError::invalid(
                "View-Attributes",
                s,
                format!("{bad:?} is not an attribute name"),
            ));
        }
        Ok(ViewAttributes(names))
    }

    /// The attribute names.
    pub fn names(&self) -> &[String] {
        &self.0
    }

    /// True when `name` is selected (ignoring ASCII case, as RFC 2655 §4 matches names).
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for ViewAttributes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

impl FromStr for ViewAttributes {
    type Err = RdmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ViewAttributes::parse(s)
    }
}

/// Sort direction of one `View-Order` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Direction {
    /// `+attr` or plain `attr` (the note's default).
    #[default]
    Ascending,
    /// `-attr`.
    Descending,
}

/// One key of a `View-Order`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrderKey {
    pub attribute: String,
    pub direction: Direction,
    /// Whether the sign was written (`+Title`) or left to the default (`Title`); kept so
    /// that the view is written back as it was read.
    pub explicit: bool,
}

/// `View-Order`: sort keys, most significant first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ViewOrder(pub Vec<OrderKey>);

impl ViewOrder {
    /// Parses `-Score,+Title` or `Title`.
    pub fn parse(s: &str) -> Result<ViewOrder, RdmError> {
        let mut keys = Vec::new();
        for item in split_list(s) {
            let (direction, explicit, name) = match item.as_bytes()[0] {
                b'+' => (Direction::Ascending, true, &item[1..]),
                b'-' => (Direction::Descending, true, &item[1..]),
                _ => (Direction::Ascending, false, item),
            };
            let name = name.trim();
            if name.is_empty() || name.contains(char::is_whitespace) || name.starts_with(['+', '-'])
            {
                return Err(RdmError::invalid(
                    "View-Order",
                    s,
                    format!("{item:?} is not (+|-)attribute"),
                ));
            }
            keys.push(OrderKey {
                attribute: name.to_string(),
                direction,
                explicit,
            });
        }
        if keys.is_empty() {
            return Err(RdmError::invalid(
                "View-Order",
                s,
                "no sort keys (expected (+|-)attr[,(+|-)attr...])",
            ));
        }
        Ok(ViewOrder(keys))
    }

    /// The keys, most significant first.
    pub fn keys(&self) -> &[OrderKey] {
        &self.0
    }
}

impl fmt::Display for ViewOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, key) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match (key.direction, key.explicit) {
                (Direction::Descending, _) => f.write_str("-")?,
                (Direction::Ascending, true) => f.write_str("+")?,
                (Direction::Ascending, false) => {}
            }
            f.write_str(&key.attribute)?;
        }
        Ok(())
    }
}

impl FromStr for ViewOrder {
    type Err = RdmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ViewOrder::parse(s)
    }
}

/// `View-Hits`: which hits of the (ordered) result set to return. Hit numbers are 1-based
/// and inclusive, as in the note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViewHits {
    /// `10`: the first 10 hits.
    First(u64),
    /// `11..20`: the 11th through the 20th hit.
    Range { first: u64, last: u64 },
}

impl ViewHits {
    /// Parses `10` or `11..20`.
    pub fn parse(s: &str) -> Result<ViewHits, RdmError> {
        let t = s.trim();
        let number = |n: &str| {
            n.trim().parse::<u64>().map_err(|_| {
                RdmError::invalid("View-Hits", s, "expected N (the first N hits) or M..N")
            })
        };
        match t.split_once("..") {
            None => Ok(ViewHits::First(number(t)?)),
            Some((a, b)) => {
                let (first, last) = (number(a)?, number(b)?);
                if first == 0 {
                    return Err(RdmError::invalid(
                        "View-Hits",
                        s,
                        "hits are numbered from 1",
                    ));
                }
                if last < first {
                    return Err(RdmError::invalid(
                        "View-Hits",
                        s,
                        "the range ends before it starts",
                    ));
                }
                Ok(ViewHits::Range { first, last })
            }
        }
    }

    /// How many hits to skip before the first one returned.
    pub fn skip(&self) -> u64 {
        match self {
            ViewHits::First(_) => 0,
            ViewHits::Range { first, .. } => first - 1,
        }
    }

    /// How many hits to return at most.
    pub fn take(&self) -> u64 {
        match self {
            ViewHits::First(n) => *n,
            ViewHits::Range { first, last } => last - first + 1,
        }
    }

    /// True when the hit at 0-based `index` in the ordered result set is returned.
    pub fn includes(&self, index: u64) -> bool {
        index >= self.skip() && index - self.skip() < self.take()
    }
}

impl fmt::Display for ViewHits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ViewHits::First(n) => write!(f, "{n}"),
            ViewHits::Range { first, last } => write!(f, "{first}..{last}"),
        }
    }
}

impl FromStr for ViewHits {
    type Err = RdmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ViewHits::parse(s)
    }
}

/// An RDM view: the three optional `View-*` attributes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    /// `View-Attributes`; `None` returns every attribute.
    pub attributes: Option<ViewAttributes>,
    /// `View-Order`; `None` keeps the server's order.
    pub order: Option<ViewOrder>,
    /// `View-Hits`; `None` returns every hit.
    pub hits: Option<ViewHits>,
}

impl View {
    /// True when no view attribute is set (the default view).
    pub fn is_default(&self) -> bool {
        self.attributes.is_none() && self.order.is_none() && self.hits.is_none()
    }
}

/// The gatherer query language's scope (Harvest Gatherer command language).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GathererScope {
    /// `all`: every RD.
    All,
    /// `since DATE`: RDs modified since the date (HTTP/1.0 date format).
    Since(RdmDate),
}

impl GathererScope {
    /// Parses `all` or `since Sun, 06 Nov 1994 08:49:37 GMT` (keywords in any case).
    pub fn parse(s: &str) -> Result<GathererScope, RdmError> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("all") {
            return Ok(GathererScope::All);
        }
        let (word, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
        if word.eq_ignore_ascii_case("since") {
            return RdmDate::parse(rest)
                .map(GathererScope::Since)
                .map_err(|e| RdmError::invalid("Scope", s, e.to_string()));
        }
        Err(RdmError::invalid(
            "Scope",
            s,
            "the gatherer query language accepts `all` or `since DATE`",
        ))
    }
}

impl fmt::Display for GathererScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GathererScope::All => f.write_str("all"),
            GathererScope::Since(d) => write!(f, "since {d}"),
        }
    }
}

impl FromStr for GathererScope {
    type Err = RdmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GathererScope::parse(s)
    }
}

/// The schema-basic query language's scope: "Scope is defined Attribute".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaScope {
    /// The schema attribute that must be defined, e.g. `SOIF-Attribute` (every entry) or
    /// `Default-View-Attribute` (the entries in the default view).
    pub defined: String,
}

impl SchemaScope {
    /// Parses `defined ATTRIBUTE`.
    pub fn parse(s: &str) -> Result<SchemaScope, RdmError> {
        let t = s.trim();
        let (word, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
        let attr = rest.trim();
        if !word.eq_ignore_ascii_case("defined")
            || attr.is_empty()
            || attr.contains(char::is_whitespace)
        {
            return Err(RdmError::invalid(
                "Scope",
                s,
                "the schema-basic query language accepts `defined ATTRIBUTE`",
            ));
        }
        Ok(SchemaScope {
            defined: attr.to_string(),
        })
    }
}

impl fmt::Display for SchemaScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "defined {}", self.defined)
    }
}

impl FromStr for SchemaScope {
    type Err = RdmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SchemaScope::parse(s)
    }
}

/// An `@RDMQUERY` object: a scope (its syntax depends on the query language) and a view.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RdmQuery {
    /// `Scope`, as written (trimmed). Interpret it with [`GathererScope::parse`],
    /// [`SchemaScope::parse`], [`TaxonomyScope::parse`](super::TaxonomyScope::parse) or a
    /// keyword language. The note's view-only examples have none.
    pub scope: Option<String>,
    /// `View-Attributes`, `View-Order`, `View-Hits`.
    pub view: View,
    /// Attributes the note does not define, kept in order.
    pub extra: Vec<Attribute>,
}

impl RdmQuery {
    /// A query with this scope and the default view.
    pub fn with_scope(scope: impl Into<String>) -> RdmQuery {
        RdmQuery {
            scope: Some(scope.into()),
            ..RdmQuery::default()
        }
    }

    /// Reads an `@RDMQUERY` object.
    pub fn from_record(record: &Record) -> Result<RdmQuery, RdmError> {
        Self::read(record).map_err(|e| e.with_position(record.position.as_ref()))
    }

    fn read(record: &Record) -> Result<RdmQuery, RdmError> {
        check_template(record, RDMQUERY)?;
        let mut q = RdmQuery::default();
        for attr in &record.attributes {
            if is(attr, "Scope") {
                set_once(&mut q.scope, attr, keyword(attr)?.to_string())?;
            } else if is(attr, "View-Attributes") {
                set_once(
                    &mut q.view.attributes,
                    attr,
                    ViewAttributes::parse(keyword(attr)?)?,
                )?;
            } else if is(attr, "View-Order") {
                set_once(&mut q.view.order, attr, ViewOrder::parse(keyword(attr)?)?)?;
            } else if is(attr, "View-Hits") {
                set_once(&mut q.view.hits, attr, ViewHits::parse(keyword(attr)?)?)?;
            } else {
                q.extra.push(attr.clone());
            }
        }
        Ok(q)
    }

    /// The scope as a gatherer query; `Ok(None)` when there is no scope.
    pub fn gatherer_scope(&self) -> Result<Option<GathererScope>, RdmError> {
        self.scope.as_deref().map(GathererScope::parse).transpose()
    }

    /// The scope as a schema-basic query; `Ok(None)` when there is no scope.
    pub fn schema_scope(&self) -> Result<Option<SchemaScope>, RdmError> {
        self.scope.as_deref().map(SchemaScope::parse).transpose()
    }

    /// The scope as a taxonomy-basic query; `Ok(None)` when there is no scope.
    pub fn taxonomy_scope(&self) -> Result<Option<super::TaxonomyScope>, RdmError> {
        self.scope
            .as_deref()
            .map(super::TaxonomyScope::parse)
            .transpose()
    }

    /// Writes the query back as `@RDMQUERY { - … }`: Scope, then View-Attributes,
    /// View-Hits, View-Order (the order of the note's examples).
    pub fn to_record(&self) -> Record {
        let mut r = new_record(RDMQUERY, None);
        if let Some(scope) = &self.scope {
            r.push("Scope", scope.as_str());
        }
        if let Some(a) = &self.view.attributes {
            r.push("View-Attributes", a.to_string());
        }
        if let Some(h) = &self.view.hits {
            r.push("View-Hits", h.to_string());
        }
        if let Some(o) = &self.view.order {
            r.push("View-Order", o.to_string());
        }
        r.attributes.extend(self.extra.iter().cloned());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_order_directions() {
        // "-Score,+Title for descending order for Score, and then ascending order for Title.
        // Ascending order is the default, if not specified."
        let o = ViewOrder::parse("-Score,+Title").unwrap();
        assert_eq!(o.keys()[0].attribute, "Score");
        assert_eq!(o.keys()[0].direction, Direction::Descending);
        assert_eq!(o.keys()[1].direction, Direction::Ascending);
        assert_eq!(o.to_string(), "-Score,+Title");
        let o = ViewOrder::parse("Title").unwrap();
        assert_eq!(o.keys()[0].direction, Direction::Ascending);
        assert_eq!(o.to_string(), "Title");
        for bad in ["", ",", "-", "+-Title", "Two Words"] {
            assert!(ViewOrder::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn view_hits_first_and_range() {
        // "10 means the first 10 hits, 11..20 means the 11th through 20th hits."
        let h = ViewHits::parse("10").unwrap();
        assert_eq!((h.skip(), h.take()), (0, 10));
        assert!(h.includes(9) && !h.includes(10));
        let h = ViewHits::parse("11..20").unwrap();
        assert_eq!(
            h,
            ViewHits::Range {
                first: 11,
                last: 20
            }
        );
        assert_eq!((h.skip(), h.take()), (10, 10));
        assert!(!h.includes(9) && h.includes(10) && h.includes(19) && !h.includes(20));
        assert_eq!(h.to_string(), "11..20");
        assert_eq!(ViewHits::parse("5..5").unwrap().take(), 1);
        for bad in [
            "",
            "x",
            "-1",
            "0..3",
            "20..11",
            "1..",
            "..5",
            "1...5",
            "99999999999999999999",
        ] {
            let e = ViewHits::parse(bad).unwrap_err();
            assert!(e.to_string().contains("View-Hits"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn view_attributes() {
        let a = ViewAttributes::parse("url, title,author").unwrap();
        assert_eq!(a.names(), ["url", "title", "author"]);
        assert!(a.contains("Title"));
        assert_eq!(a.to_string(), "url,title,author");
        assert!(ViewAttributes::parse(" , ").is_err());
    }

    #[test]
    fn gatherer_scopes() {
        assert_eq!(GathererScope::parse("all").unwrap(), GathererScope::All);
        assert_eq!(GathererScope::parse("ALL").unwrap(), GathererScope::All);
        let s = GathererScope::parse("since Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        match &s {
            GathererScope::Since(d) => assert_eq!(d.unix_seconds(), 784_111_777),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.to_string(), "since Sun, 06 Nov 1994 08:49:37 GMT");
        assert!(GathererScope::parse("since last week").is_err());
        assert!(GathererScope::parse("netscape").is_err());
    }

    #[test]
    fn schema_scopes() {
        let s = SchemaScope::parse("defined Default-View-Attribute").unwrap();
        assert_eq!(s.defined, "Default-View-Attribute");
        assert_eq!(s.to_string(), "defined Default-View-Attribute");
        assert!(SchemaScope::parse("defined").is_err());
        assert!(SchemaScope::parse("all").is_err());
    }

    #[test]
    fn query_round_trip_and_errors() {
        let q = RdmQuery {
            scope: Some("all".into()),
            view: View {
                attributes: Some(ViewAttributes::parse("URL,Title").unwrap()),
                order: Some(ViewOrder::parse("-Score,Title").unwrap()),
                hits: Some(ViewHits::Range {
                    first: 11,
                    last: 20,
                }),
            },
            extra: vec![Attribute::new("X-Extra", "1")],
        };
        assert_eq!(RdmQuery::from_record(&q.to_record()), Ok(q));
        let r = Record::new("RDMQUERY", "-").with("View-Hits", "ten");
        let e = RdmQuery::from_record(&r).unwrap_err();
        assert!(
            e.to_string().starts_with("invalid View-Hits \"ten\""),
            "{e}"
        );
        let r = Record::new("RDMQUERY", "-")
            .with("Scope", "all")
            .with("scope", "all");
        assert!(matches!(
            RdmQuery::from_record(&r),
            Err(RdmError::Duplicate { .. })
        ));
    }
}
