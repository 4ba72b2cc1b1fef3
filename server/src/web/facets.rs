//! Facets (`docs/server.md#facets`): how many records there are by template, by Harvest
//! `Type`, by year and by host, on the browse and search pages and on a page of their
//! own, `/NAME/-/facets`, also as JSON and CSV.
//!
//! ```text
//! /NAME/-/facets?type=Text                 all facets over the records of Type Text
//! /NAME/-/facets.json?type=Text&_facet=year  the year facet only, as JSON
//! /NAME/-/facets.csv?_size=100             the 100 largest values of each, as CSV
//! /NAME/FILE?year=1996&host=example.org    FILE records narrowed, with their facets
//! /NAME/FILE.csv?year=1996                 the same records as CSV, a page at a time
//! /NAME/-/search?q=harvest&type__isnull=1  keyword hits without a Type
//! ```
//!
//! A facet narrows a page with a query parameter of its name (`template`, `type`, `year`,
//! `host`); `NAME__isnull=1` selects the records without a value. `_facet=NAME` (repeat it)
//! shows only those facets, `_size=N` the N values with most records (default
//! [`DEFAULT_SIZE`], at most [`MAX_SIZE`]); the rest is summed up as "other". The data
//! forms are the page's URL with `.json` or `.csv` before the query string, or
//! `?_format=json` / `?_format=csv` (as Datasette names them); the list pages take them
//! too ([`Format`]; their CSV: `super::results`).
//!
//! What each facet's value is, and why the counts come from a count table in the
//! catalog: [`soif_store::facets`]. A page whose records are exactly a narrowing (a
//! template's list, a search without keywords, match or date) reads its counts from that
//! table, whatever the catalog's size. A search with keywords, a match or a date counts
//! its own results, reading at most `--max-keyword-hits` of them (the limit keyword
//! searches already have); beyond, the counts say `"complete": false`.

use super::page::{
    catalog_of, encode_component, encode_str, guarded, html, json_body, render, Crumb, Params,
    WebError,
};
use crate::catalog::Catalog;
use crate::error::RequestError;
use crate::state::{AppState, ClientAddr};
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, Uri};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use bytes::Bytes;
use minijinja::context;
use serde::Serialize;
use soif_codecs::Record;
use soif_store::facets::{self as store, Facet, FacetCounts, Narrowing};
use std::collections::HashMap;
use std::sync::Arc;

/// Values shown per facet unless `_size` says otherwise.
pub const DEFAULT_SIZE: usize = 10;

/// The most values `_size` may ask for.
pub const MAX_SIZE: usize = 1000;

/// The data form a page is asked in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Html,
    Json,
    Csv,
}

impl Format {
    /// The form a `.json` / `.csv` suffix or `_format` asks for, and the segment without
    /// its suffix.
    pub(crate) fn of<'a>(segment: &'a str, params: &Params) -> Result<(&'a str, Format), WebError> {
        let (segment, by_suffix) = if let Some(s) = segment.strip_suffix(".json") {
            (s, Some(Format::Json))
        } else if let Some(s) = segment.strip_suffix(".csv") {
            (s, Some(Format::Csv))
        } else {
            (segment, None)
        };
        Ok((
            segment,
            Format::by_param(params)?
                .or(by_suffix)
                .unwrap_or(Format::Html),
        ))
    }

    /// The form `_format` alone asks for (a segment that is a name as it stands, such as
    /// a template called `x.json`, has no suffix to read).
    pub(crate) fn of_params(params: &Params) -> Result<Format, WebError> {
        Ok(Format::by_param(params)?.unwrap_or(Format::Html))
    }

    fn by_param(params: &Params) -> Result<Option<Format>, WebError> {
        match params.text("_format").as_str() {
            "" => Ok(None),
            "json" => Ok(Some(Format::Json)),
            "csv" => Ok(Some(Format::Csv)),
            "html" => Ok(Some(Format::Html)),
            other => Err(WebError::BadRequest(format!(
                "_format: {other:?} is not json, csv or html"
            ))),
        }
    }

    /// Whether errors are answered as data rather than as a page.
    pub(crate) fn is_data(self) -> bool {
        self != Format::Html
    }

    /// A page URL in this form: `.json` or `.csv` before the query string.
    pub(crate) fn href(self, href: &str) -> String {
        let suffix = match self {
            Format::Html => return href.to_string(),
            Format::Json => ".json",
            Format::Csv => ".csv",
        };
        match href.split_once('?') {
            Some((p, q)) => format!("{p}{suffix}?{q}"),
            None => format!("{href}{suffix}"),
        }
    }
}

/// What a page's query string asks of its facets.
#[derive(Debug, Clone)]
pub(crate) struct FacetQuery {
    pub(crate) narrowing: Narrowing,
    /// The facets to show, in [`Facet::ALL`] order.
    pub(crate) shown: Vec<Facet>,
    pub(crate) size: usize,
    /// The page's query pairs other than `page`, to build links from.
    pairs: Vec<(String, Vec<u8>)>,
}

/// The query parameter that selects records without a value of `facet`.
fn isnull_param(facet: Facet) -> String {
    format!("{}__isnull", facet.name())
}

impl FacetQuery {
    /// Reads the narrowing, `_facet` and `_size` from the query string.
    pub(crate) fn parse(params: &Params) -> Result<FacetQuery, WebError> {
        let mut narrowing = Vec::new();
        for facet in Facet::ALL {
            let value = params.bytes(facet.name()).filter(|v| !v.is_empty());
            let isnull = !params.text(&isnull_param(facet)).is_empty();
            match (value, isnull) {
                (Some(_), true) => {
                    return Err(WebError::BadRequest(format!(
                        "{} and {} both narrow the {0} facet: give one",
                        facet.name(),
                        isnull_param(facet)
                    )))
                }
                (Some(v), false) => {
                    if facet == Facet::Year && !(v.len() <= 6 && v.iter().all(u8::is_ascii_digit)) {
                        return Err(WebError::BadRequest(format!(
                            "year: {:?} is not a year (e.g. 1996)",
                            String::from_utf8_lossy(v)
                        )));
                    }
                    narrowing.push((facet, Some(Bytes::copy_from_slice(v))));
                }
                (None, true) => narrowing.push((facet, None)),
                (None, false) => {}
            }
        }
        let mut shown = Vec::new();
        for (k, v) in params.pairs() {
            if k != "_facet" {
                continue;
            }
            let name = String::from_utf8_lossy(v);
            let facet = Facet::from_name(name.trim()).ok_or_else(|| {
                WebError::BadRequest(format!(
                    "_facet: {name:?} is not a facet (template, type, year or host)"
                ))
            })?;
            if !shown.contains(&facet) {
                shown.push(facet);
            }
        }
        if shown.is_empty() {
            shown = Facet::ALL.to_vec();
        }
        shown.sort_by_key(|f| Facet::ALL.iter().position(|g| g == f));
        let size = match params.text("_size").as_str() {
            "" => DEFAULT_SIZE,
            s => match s.parse::<usize>() {
                Ok(n) if (1..=MAX_SIZE).contains(&n) => n,
                _ => {
                    return Err(WebError::BadRequest(format!(
                        "_size must be a number from 1 to {MAX_SIZE}"
                    )))
                }
            },
        };
        let pairs = params
            .pairs()
            .iter()
            .filter(|(k, _)| k != "page")
            .cloned()
            .collect();
        Ok(FacetQuery {
            narrowing: Narrowing(narrowing),
            shown,
            size,
            pairs,
        })
    }

    /// `here` with this query string, `facet` narrowed to `value` (`None`: no value) or,
    /// with `set` false, no longer narrowed; the page number dropped.
    fn href(&self, here: &str, facet: Facet, value: Option<&[u8]>, set: bool) -> String {
        let isnull = isnull_param(facet);
        let mut q: Vec<String> = self
            .pairs
            .iter()
            .filter(|(k, _)| k != facet.name() && *k != isnull)
            .map(|(k, v)| format!("{}={}", encode_str(k), encode_component(v)))
            .collect();
        if set {
            q.push(match value {
                Some(v) => format!("{}={}", facet.name(), encode_component(v)),
                None => format!("{isnull}=1"),
            });
        }
        if q.is_empty() {
            here.to_string()
        } else {
            format!("{here}?{}", q.join("&"))
        }
    }
}

/// One value of a facet, as the pages and JSON show it.
#[derive(Debug, Serialize)]
pub(crate) struct ValueView {
    /// The value (JSON `null` for "no value"; `{"base64": …}` when not UTF-8).
    pub(crate) value: serde_json::Value,
    pub(crate) label: String,
    pub(crate) count: u64,
    pub(crate) selected: bool,
    /// The page narrowed to this value, or — when it is selected — no longer narrowed.
    pub(crate) toggle_url: String,
    #[serde(skip)]
    raw: Option<Bytes>,
}

/// One facet over a page's records.
#[derive(Debug, Serialize)]
pub(crate) struct FacetView {
    pub(crate) name: &'static str,
    pub(crate) results: Vec<ValueView>,
    /// How many values and records the values not shown add up to.
    pub(crate) other_values: u64,
    pub(crate) other_count: u64,
    /// Records counted.
    pub(crate) total: u64,
    /// False when only the first records of a search were counted.
    pub(crate) complete: bool,
}

fn value_json(v: Option<&[u8]>) -> serde_json::Value {
    match v {
        None => serde_json::Value::Null,
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => serde_json::Value::String(s.to_string()),
            Err(_) => {
                use base64::Engine as _;
                serde_json::json!({ "base64": base64::engine::general_purpose::STANDARD.encode(b) })
            }
        },
    }
}

/// The views of `counts` for a page at `here` (`data_suffix`: `.json` for the JSON form,
/// so that its links lead to JSON).
pub(crate) fn views(
    q: &FacetQuery,
    here: &str,
    counts: Vec<FacetCounts>,
    complete: bool,
) -> Vec<FacetView> {
    counts
        .into_iter()
        .filter_map(|c| {
            let facet = c.facet?;
            let selected = q.narrowing.get(facet);
            let results = c
                .values
                .into_iter()
                .map(|(v, count)| {
                    let is_selected = selected.is_some_and(|s| s.as_deref() == v.as_deref());
                    ValueView {
                        value: value_json(v.as_deref()),
                        label: v
                            .as_deref()
                            .map(|b| String::from_utf8_lossy(b).into_owned())
                            .unwrap_or_else(|| "(none)".into()),
                        count,
                        selected: is_selected,
                        toggle_url: q.href(here, facet, v.as_deref(), !is_selected),
                        raw: v,
                    }
                })
                .collect();
            Some(FacetView {
                name: facet.name(),
                results,
                other_values: c.other_values,
                other_count: c.other_records,
                total: c.total,
                complete,
            })
        })
        .collect()
}

/// The counts of the shown facets over exactly the narrowed records (from the count
/// table; check [`facets_available`] first). `fixed` facets (a template list's template) are not shown.
pub(crate) fn indexed_counts(
    catalog: &Catalog,
    q: &FacetQuery,
    fixed: &[Facet],
) -> Result<Vec<FacetCounts>, WebError> {
    let r = catalog.read(|s| -> rusqlite::Result<Vec<FacetCounts>> {
        q.shown
            .iter()
            .filter(|f| !fixed.contains(f))
            .map(|f| store::counts(s.connection(), *f, &q.narrowing, q.size))
            .collect()
    })?;
    r.map_err(|e| internal(catalog, "counting facets", e))
}

/// Whether the catalog's facet tables can be read ([`Catalog::facets_ready`]): when not,
/// pages show no facets.
pub(crate) fn facets_available(catalog: &Catalog) -> Result<bool, WebError> {
    Ok(catalog.facets_ready()?)
}

/// The refusal of a narrowing that needs the facet tables when they cannot be read.
pub(crate) fn facets_missing(catalog: &Catalog) -> WebError {
    let why = if catalog.read_only() {
        "it is served read-only and has none"
    } else {
        "they are being built"
    };
    WebError::Request(RequestError::Busy(format!(
        "catalog {} cannot narrow by facets now: {why}",
        catalog.name()
    )))
}

fn internal(catalog: &Catalog, what: &str, e: rusqlite::Error) -> WebError {
    WebError::Request(RequestError::Internal(format!(
        "sqlite {}: {what}: {e}",
        catalog.path().display()
    )))
}

/// One facet's tally while counting a search's results.
#[derive(Default)]
pub(crate) struct Tally(HashMap<Option<Bytes>, u64>);

impl Tally {
    /// Counts one record with this value.
    pub(crate) fn add(&mut self, value: Option<Bytes>) {
        *self.0.entry(value).or_default() += 1;
    }

    /// The `size` values with most records first, of `total` records counted.
    pub(crate) fn counts(self, facet: Facet, size: usize, total: u64) -> FacetCounts {
        let mut all: Vec<(Option<Bytes>, u64)> = self.0.into_iter().collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let distinct = all.len() as u64;
        all.truncate(size);
        let shown: u64 = all.iter().map(|v| v.1).sum();
        FacetCounts {
            facet: Some(facet),
            other_values: distinct - all.len() as u64,
            other_records: total - shown,
            total,
            values: all,
        }
    }
}

/// The narrowed records from `offset` on, at most `limit`, in `(template, url)` order,
/// read through the facet tables (check [`facets_available`] first).
pub(crate) fn narrowed_records(
    catalog: &Catalog,
    narrowing: &Narrowing,
    offset: u64,
    limit: u64,
) -> Result<Vec<Record>, WebError> {
    catalog.read(|s| -> Result<Vec<Record>, WebError> {
        let keys = store::page(s.connection(), narrowing, offset, limit)
            .map_err(|e| internal(catalog, "reading the facet tables", e))?;
        let mut out = Vec::with_capacity(keys.len());
        for (template, url) in keys {
            // Read in the same snapshot as the keys. A key whose row a loader has deleted
            // since the last rebuild is skipped; a changed row is shown as it is now.
            let record = s.get(&template, &url).map_err(|e| {
                WebError::Request(RequestError::Internal(format!(
                    "reading the narrowed records: {e}"
                )))
            })?;
            out.extend(record);
        }
        Ok(out)
    })?
}

/// The CSV form: `facet,value,count,kind` — `kind` is `value`, `none` (the records
/// without a value) or `other` (the values not shown, summed).
pub(crate) fn csv_reply(facets: &[FacetView]) -> Result<Response, WebError> {
    let body = csv_body(|w| {
        w.write_record(["facet", "value", "count", "kind"])?;
        for f in facets {
            for v in &f.results {
                let kind = if v.raw.is_some() { "value" } else { "none" };
                let count = v.count.to_string();
                let value: &[u8] = v.raw.as_deref().unwrap_or_default();
                w.write_record([f.name.as_bytes(), value, count.as_bytes(), kind.as_bytes()])?;
            }
            if f.other_values > 0 {
                w.write_record([f.name, "", &f.other_count.to_string(), "other"])?;
            }
        }
        Ok(())
    })?;
    Ok(([(header::CONTENT_TYPE, CSV)], body).into_response())
}

/// The media type of the CSV forms.
pub(crate) const CSV: &str = "text/csv; charset=utf-8";

/// A CSV document written by `rows`.
pub(crate) fn csv_body(
    rows: impl FnOnce(&mut csv::Writer<Vec<u8>>) -> csv::Result<()>,
) -> Result<Vec<u8>, WebError> {
    let failed = |e: &dyn std::fmt::Display| {
        WebError::Request(RequestError::Internal(format!("writing CSV: {e}")))
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    rows(&mut w)
        .and_then(|()| w.flush().map_err(csv::Error::from))
        .map_err(|e| failed(&e))?;
    w.into_inner().map_err(|e| failed(&e))
}

/// `GET /NAME/-/facets`, `.json`, `.csv`: the facets of the catalog's records, narrowed
/// by the query string.
pub async fn facets_page(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    client: Option<Extension<ClientAddr>>,
    uri: Uri,
    RawQuery(raw): RawQuery,
) -> Response {
    let params = Params::parse(raw.as_deref());
    let segment = uri
        .path()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let json = Format::of(&segment, &params).is_ok_and(|(_, f)| f != Format::Html);
    guarded(state, client, json, move |st| {
        let (segment, format) = Format::of(&segment, &params)?;
        if segment != "facets" {
            return Err(WebError::NotFound("no such page".into()));
        }
        let (_, catalog) = catalog_of(st, &name)?;
        let q = FacetQuery::parse(&params)?;
        let base = format!("/{}", encode_str(&name));
        let here = format!("{base}/-/facets");
        if !facets_available(&catalog)? {
            return Err(facets_missing(&catalog));
        }
        let counts = indexed_counts(&catalog, &q, &[])?;
        match format {
            Format::Csv => csv_reply(&views(&q, &here, counts, true)),
            Format::Json => {
                let facets = views(&q, &format!("{here}.json"), counts, true);
                Ok(json_body(&serde_json::json!({
                    "catalog": name,
                    "narrowing": narrowing_json(&q.narrowing),
                    "facets": facets,
                }))
                .into_response())
            }
            Format::Html => {
                let facets = views(&q, &here, counts, true);
                let records = facets.first().map_or(0, |f| f.total);
                let search = with_suffix(&format!("{base}/-/search"), narrowing_query(&q.narrowing), "");
                let crumbs = vec![
                    Crumb {
                        text: name.clone(),
                        href: Some(base.clone()),
                    },
                    Crumb {
                        text: "facets".into(),
                        href: None,
                    },
                ];
                let data_href = with_suffix(&here, raw_query(&q), ".json");
                let csv_href = with_suffix(&here, raw_query(&q), ".csv");
                Ok(html(render(
                    "facets.html",
                    context! {
                        heading => format!("Facets of {name}"), facets, records, search_href => search,
                        crumbs, data_href, csv_href, version => env!("CARGO_PKG_VERSION"),
                    },
                )?))
            }
        }
    })
    .await
}

/// The narrowing as JSON: facet name → value (`null`: records without one).
pub(crate) fn narrowing_json(n: &Narrowing) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for (f, v) in &n.0 {
        map.insert(f.name().into(), value_json(v.as_deref()));
    }
    serde_json::Value::Object(map)
}

/// The narrowing as a query string (`type=Text&year__isnull=1`).
pub(crate) fn narrowing_query(n: &Narrowing) -> String {
    n.0.iter()
        .map(|(f, v)| match v {
            Some(v) => format!("{}={}", f.name(), encode_component(v)),
            None => format!("{}=1", isnull_param(*f)),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The narrowing as form fields, so that submitting the search form again keeps it
/// (a value that is not UTF-8 cannot be a form field's value and is left out).
pub(crate) fn hidden_fields(n: &Narrowing) -> Vec<(String, String)> {
    n.0.iter()
        .filter_map(|(f, v)| match v {
            Some(v) => std::str::from_utf8(v)
                .ok()
                .map(|v| (f.name().to_string(), v.to_string())),
            None => Some((isnull_param(*f), "1".to_string())),
        })
        .collect()
}

fn raw_query(q: &FacetQuery) -> String {
    q.pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode_str(k), encode_component(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn with_suffix(here: &str, query: String, suffix: &str) -> String {
    if query.is_empty() {
        format!("{here}{suffix}")
    } else {
        format!("{here}{suffix}?{query}")
    }
}
