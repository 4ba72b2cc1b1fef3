//! Reading: the result set of a request (gatherer scopes, keywords, deletions) through
//! the view (order, hits, attributes), samples and the schema derived from the tables.

use super::handle::{sql_err, Catalog, Reader};
use crate::error::RequestError;
use rusqlite::{params, OptionalExtension};
use soif_codecs::rdm::{DataType, RdmDate, Schema, SchemaEntry, View};
use soif_codecs::rules::modified::modified;
use soif_codecs::{Action, Record};
use soif_pipeline::transforms::view::{Order, Select};
use soif_pipeline::{Emit, Transform};
use soif_store::fts;
use soif_store::tables::{key_param, value_bytes as bytes_of};

use std::collections::HashMap;

/// Memory a `View-Order` may use per request before it sorts on disk.
pub const ORDER_BUDGET: usize = 16 << 20;

/// What a request selects, before the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Gatherer `all`.
    All,
    /// Gatherer `since DATE`, in Unix seconds: modified at or after.
    Since(i64),
    /// The keyword language: the FTS5 query built by [`keyword_query`].
    Keywords(String),
}

/// One read request.
#[derive(Debug, Clone)]
pub struct Query {
    pub scope: Scope,
    /// `rd-request-deleted`: read the remembered deletions instead of the records.
    pub deleted: bool,
    pub view: View,
    /// Most rows a `View-Order` sorts: beyond, the read fails with
    /// [`RequestError::OverLimit`] (before anything of the reply was produced).
    pub max_sorted_rows: u64,
    /// Most hits a keyword query ranks: the best this many are served.
    pub max_keyword_hits: u64,
}

impl Default for Query {
    /// Gatherer `all`, no view, the default limits.
    fn default() -> Query {
        Query::new(Scope::All, false, View::default())
    }
}

impl Query {
    /// A read with the default limits.
    pub fn new(scope: Scope, deleted: bool, view: View) -> Query {
        Query {
            scope,
            deleted,
            view,
            max_sorted_rows: 1_000_000,
            max_keyword_hits: 10_000,
        }
    }
}

/// Whether the consumer of [`Catalog::query`] wants more records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// Turns the keyword scope (`netscape`, `harvest OR gatherer`) into an FTS5 query in which
/// every word is a quoted string, so that nothing a client sends is FTS5 syntax. A scope of
/// more than `max_terms` words (`OR`s included) is [`RequestError::OverLimit`]: FTS5's cost
/// grows faster than the number of `OR`ed words.
pub fn keyword_query(scope: &str, max_terms: usize) -> Result<String, RequestError> {
    let words: Vec<&str> = scope
        .split_whitespace()
        .take(max_terms.saturating_add(1))
        .collect();
    if words.len() > max_terms {
        return Err(RequestError::OverLimit(format!(
            "the keyword scope has more than {max_terms} words (this server's limit)"
        )));
    }
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if *w == "OR" && i > 0 && i + 1 < words.len() && words[i - 1] != "OR" {
            out.push_str(" OR ");
            continue;
        }
        if !out.is_empty() && !out.ends_with(" OR ") {
            out.push(' ');
        }
        out.push('"');
        out.push_str(&w.replace('"', "\"\""));
        out.push('"');
    }
    if out.is_empty() {
        return Err(RequestError::Malformed(
            "the sample-keyword-ql scope has no words (expected e.g. `Scope: netscape`)".into(),
        ));
    }
    Ok(out)
}

/// Sends records through `View-Hits` and `View-Attributes` to the consumer; also the
/// [`Emit`] the `order` transform writes its sorted output into.
pub(crate) struct Tail<'a> {
    skip: u64,
    take: Option<u64>,
    seen: u64,
    select: Option<Select>,
    out: &'a mut dyn FnMut(Record) -> Result<Flow, RequestError>,
    emitted: u64,
    stopped: bool,
    error: Option<RequestError>,
}

impl Tail<'_> {
    fn push(&mut self, record: Record) -> Result<Flow, RequestError> {
        if self.stopped {
            return Ok(Flow::Stop);
        }
        self.seen += 1;
        if self.seen <= self.skip {
            return Ok(Flow::Continue);
        }
        if self.take.is_some_and(|t| self.emitted >= t) {
            self.stopped = true;
            return Ok(Flow::Stop);
        }
        let record = match &self.select {
            Some(s) => s.select(record),
            None => record,
        };
        self.emitted += 1;
        let flow = (self.out)(record)?;
        if flow == Flow::Stop || self.take.is_some_and(|t| self.emitted >= t) {
            self.stopped = true;
            return Ok(Flow::Stop);
        }
        Ok(Flow::Continue)
    }
}

impl Emit for Tail<'_> {
    fn emit(&mut self, record: Record) -> Result<(), soif_pipeline::Error> {
        match self.push(record) {
            Ok(Flow::Continue) => Ok(()),
            // Ends the order transform's merge: nothing more is wanted.
            Ok(Flow::Stop) => Err(soif_pipeline::Error::Fatal("enough hits".into())),
            Err(e) => {
                let message = e.to_string();
                self.error = Some(e);
                Err(soif_pipeline::Error::Fatal(message))
            }
        }
    }
    fn reject(&mut self, _record: Record, _reason: String) -> Result<(), soif_pipeline::Error> {
        Ok(())
    }
    fn warn(&mut self, _message: String) {}
}

impl Catalog {
    /// Runs a read request: every record of the result set, after the view, goes to `out`
    /// (which returns [`Flow::Stop`] when it wants no more, e.g. the client went away).
    /// Returns how many records were passed on.
    pub fn query(
        &self,
        q: &Query,
        out: &mut dyn FnMut(Record) -> Result<Flow, RequestError>,
    ) -> Result<u64, RequestError> {
        if matches!(q.scope, Scope::Keywords(_)) {
            self.ensure_index()?;
        }
        let (skip, take) = match q.view.hits {
            Some(h) => (h.skip(), Some(h.take())),
            None => (0, None),
        };
        let select = q.view.attributes.as_ref().map(|a| {
            let names: Vec<&str> = a.names().iter().map(String::as_str).collect();
            Select::new(&names)
        });
        let mut order = match &q.view.order {
            Some(o) => Some(
                Order::parse(&o.to_string(), &HashMap::new(), ORDER_BUDGET, None)
                    .map_err(|e| RequestError::Malformed(format!("View-Order: {e}")))?,
            ),
            None => None,
        };
        let mut tail = Tail {
            skip,
            take,
            seen: 0,
            select,
            out,
            emitted: 0,
            stopped: take == Some(0),
            error: None,
        };
        let reader = self.reader()?;
        let scan = !(order.is_none() && take == Some(0));
        {
            let mut sorted = 0u64;
            let max_sorted = q.max_sorted_rows;
            let mut feed = |record: Record| -> Result<Flow, RequestError> {
                match &mut order {
                    Some(o) => {
                        sorted += 1;
                        if sorted > max_sorted {
                            return Err(RequestError::OverLimit(format!(
                                "View-Order would sort more than {max_sorted} RDs (this \
                                 server's limit); narrow the scope or leave out View-Order"
                            )));
                        }
                        o.apply(record, &mut tail).map_err(|e| {
                            RequestError::Internal(format!("sorting for View-Order: {e}"))
                        })?;
                        Ok(Flow::Continue)
                    }
                    None => tail.push(record),
                }
            };
            if scan {
                self.candidates(&reader, q, &mut feed)?;
            }
        }
        if let Some(mut o) = order {
            if let Err(e) = o.finish(&mut tail) {
                if let Some(err) = tail.error.take() {
                    return Err(err);
                }
                if !tail.stopped {
                    return Err(RequestError::Internal(format!(
                        "sorting for View-Order: {e}"
                    )));
                }
            }
        }
        Ok(tail.emitted)
    }

    /// Produces the result set before the view.
    pub(crate) fn candidates(
        &self,
        reader: &Reader<'_>,
        q: &Query,
        feed: &mut dyn FnMut(Record) -> Result<Flow, RequestError>,
    ) -> Result<(), RequestError> {
        let store = reader.store();
        let conn = store.connection();
        let err = |c: &str| sql_err(&self.path, c);
        let since = match q.scope {
            Scope::Since(t) => Some(t),
            _ => None,
        };
        if q.deleted {
            if let Scope::Keywords(_) = q.scope {
                return Err(RequestError::Unsupported(
                    "rd-request-deleted takes the gatherer query language (all, since DATE)".into(),
                ));
            }
            let mut st = conn
                .prepare(
                    "SELECT template, url, deleted FROM soif_deletions ORDER BY deleted, rowid",
                )
                .map_err(err("reading soif_deletions"))?;
            let mut rows = st.query([]).map_err(err("reading soif_deletions"))?;
            while let Some(row) = rows.next().map_err(err("reading soif_deletions"))? {
                let template = bytes_of(row.get_ref(0).map_err(err("reading soif_deletions"))?);
                let url = bytes_of(row.get_ref(1).map_err(err("reading soif_deletions"))?);
                let when: String = row.get(2).map_err(err("reading soif_deletions"))?;
                let secs = chrono::DateTime::parse_from_rfc3339(&when)
                    .map(|d| d.timestamp())
                    .map_err(|e| {
                        RequestError::Internal(format!(
                            "soif_deletions holds an unreadable time {when:?}: {e}"
                        ))
                    })?;
                if since.is_some_and(|s| secs < s) {
                    continue;
                }
                let mut record = Record::new(template, url)
                    .with("Last-Modified", RdmDate::from_unix(secs).to_http_string());
                record.action = Some(Action::Delete);
                if feed(record)? == Flow::Stop {
                    break;
                }
            }
            return Ok(());
        }
        match &q.scope {
            Scope::All | Scope::Since(_) => {
                for table in store.tables() {
                    let mut st = conn
                        .prepare(&table.select_sql())
                        .map_err(err(&format!("reading {}", table.table)))?;
                    let mut rows = st
                        .query([])
                        .map_err(err(&format!("reading {}", table.table)))?;
                    while let Some(row) = rows
                        .next()
                        .map_err(err(&format!("reading {}", table.table)))?
                    {
                        let record = table
                            .record_from_row(row)
                            .map_err(err(&format!("reading {}", table.table)))?;
                        if let Some(s) = since {
                            match modified(&record) {
                                Ok(t) if t >= s => {}
                                _ => continue,
                            }
                        }
                        if feed(record)? == Flow::Stop {
                            return Ok(());
                        }
                    }
                }
                Ok(())
            }
            Scope::Keywords(fts) => {
                // Without a View-Order only the first skip + take hits can be returned:
                // FTS5 then ranks with a bounded heap instead of sorting every match.
                // Never more than max_keyword_hits: FTS5 ranks those with a bounded heap.
                let wanted = match (&q.view.order, q.view.hits) {
                    (None, Some(h)) => h.skip().saturating_add(h.take()),
                    _ => u64::MAX,
                };
                let limit = i64::try_from(wanted.min(q.max_keyword_hits)).unwrap_or(i64::MAX);
                let mut st = conn.prepare(fts::SEARCH_SQL).map_err(err("searching"))?;
                let mut rows = st
                    .query(params![fts, limit])
                    .map_err(|e| RequestError::Malformed(format!("keyword query: {e}")))?;
                let mut best: Option<f64> = None;
                while let Some(row) = rows
                    .next()
                    .map_err(|e| RequestError::Malformed(format!("keyword query {fts}: {e}")))?
                {
                    let (template, url, rank) = fts::hit_key(row).map_err(err("searching"))?;
                    // bm25 is negative, more negative is better; the first hit is the best.
                    let strength = -rank;
                    let best = *best.get_or_insert(strength);
                    let score = if best > 0.0 {
                        ((strength / best) * 1000.0).round().clamp(0.0, 1000.0) as i64
                    } else {
                        1000
                    };
                    let Some(table) = store.table(&template) else {
                        continue;
                    };
                    let sql = format!("{} WHERE \"url\" = ?1", table.select_sql());
                    let record = conn
                        .prepare_cached(&sql)
                        .and_then(|mut st| {
                            st.query_row([key_param(&url)], |r| table.record_from_row(r))
                                .optional()
                        })
                        .map_err(err(&format!("reading {}", table.table)))?;
                    // The index may name a row a loader deleted since; it is simply gone.
                    let Some(record) = record else { continue };
                    let record = record.with("Score", score.to_string());
                    if feed(record)? == Flow::Stop {
                        return Ok(());
                    }
                }
                Ok(())
            }
        }
    }

    /// Up to `n` records, for the server description's samples.
    pub fn samples(&self, n: usize) -> Result<Vec<Record>, RequestError> {
        let mut out = Vec::new();
        if n == 0 {
            return Ok(out);
        }
        let q = Query::new(Scope::All, false, View::default());
        self.query(&q, &mut |r| {
            out.push(r);
            Ok(if out.len() >= n {
                Flow::Stop
            } else {
                Flow::Continue
            })
        })?;
        Ok(out)
    }

    /// A schema description of what the catalog holds: one entry per attribute name
    /// (the first table that has it gives its `Table-Name`, `Column-Name` and, when a
    /// schema named one at load time, `Data-Type`).
    pub fn layout_schema(&self, last_modified: RdmDate) -> Result<Schema, RequestError> {
        let mut schema = Schema::new(last_modified);
        schema.name = Some(self.name.clone());
        let mut seen = std::collections::HashSet::new();
        for table in self.tables()? {
            for c in &table.columns {
                let name = String::from_utf8_lossy(&c.attribute).into_owned();
                if !seen.insert(name.to_ascii_lowercase()) {
                    continue;
                }
                let mut entry = SchemaEntry::new(name);
                entry.data_type = c.data_type.as_deref().map(DataType::parse);
                entry.table_name = Some(table.table.clone());
                entry.column_name = Some(c.column.clone());
                schema.entries.push(entry);
            }
        }
        schema.number_of_entries = Some(u32::try_from(schema.entries.len()).unwrap_or(u32::MAX));
        Ok(schema)
    }
}
