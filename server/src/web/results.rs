//! A page of records, as search results or a template's list: its rows, links to each
//! record, the search form above it, and its pages.

use super::facets::{csv_body, FacetView, Format, CSV};
use super::page::{
    encode_component, encode_str, html, json_body, render, Crumb, Params, WebError, PAGE_SIZE,
};
use super::summary::CatalogRow;
use super::view::{self, text_of};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use minijinja::context;
use serde::Serialize;
use soif_codecs::Record;

/// What the search form holds.
#[derive(Debug, Default, Serialize, Clone)]
pub(crate) struct SearchForm {
    pub(crate) q: String,
    #[serde(rename = "match")]
    pub(crate) match_: String,
    pub(crate) since: String,
    pub(crate) template: String,
}

impl SearchForm {
    pub(crate) fn from(p: &Params) -> SearchForm {
        SearchForm {
            q: p.text("q"),
            match_: p.text("match"),
            since: p.text("since"),
            template: p.text("template"),
        }
    }
    /// The form's fields, `extra` (a query string, e.g. the facets' narrowing) and `page`.
    pub(crate) fn query_string(&self, page: u64, extra: &str) -> String {
        let mut s = String::new();
        for (k, v) in [
            ("q", &self.q),
            ("match", &self.match_),
            ("since", &self.since),
            ("template", &self.template),
        ] {
            if !v.is_empty() {
                s.push_str(&format!("{k}={}&", encode_str(v)));
            }
        }
        if !extra.is_empty() {
            s.push_str(extra);
            s.push('&');
        }
        s.push_str(&format!("page={page}"));
        s
    }
}

/// One row of a result list.
#[derive(Debug, Serialize)]
pub(crate) struct ResultRow {
    pub(crate) n: u64,
    pub(crate) template: String,
    pub(crate) url: String,
    pub(crate) title: String,
    pub(crate) score: Option<String>,
    pub(crate) href: String,
}

pub(crate) fn result_row(catalog: &str, n: u64, r: &Record) -> ResultRow {
    let url = String::from_utf8_lossy(&r.url).into_owned();
    let title = ["Title", "TITLE", "Headline", "Description"]
        .iter()
        .find_map(|a| {
            r.get_ignore_case(a)
                .and_then(|v| v.leaves().first().map(|b| text_of(b)))
        })
        .filter(|t| !t.trim().is_empty())
        .map(|t| view::shorten(&t, 200))
        .unwrap_or_else(|| url.clone());
    ResultRow {
        n,
        template: String::from_utf8_lossy(&r.template).into_owned(),
        href: record_href(catalog, &r.template, &r.url, ""),
        score: r.get_str("Score").map(str::to_string),
        url,
        title,
    }
}

/// `/NAME/TEMPLATE/record{suffix}?url=URL`.
pub fn record_href(catalog: &str, template: &[u8], url: &[u8], suffix: &str) -> String {
    format!(
        "/{}/{}/record{suffix}?url={}",
        encode_str(catalog),
        encode_component(template),
        encode_component(url)
    )
}

pub(crate) struct ListReply<'a, F: Fn(u64) -> String> {
    /// The page, or its JSON or CSV form.
    pub(crate) format: Format,
    pub(crate) catalog: &'a str,
    pub(crate) heading: String,
    pub(crate) records: Vec<Record>,
    pub(crate) more: bool,
    pub(crate) page: u64,
    pub(crate) here: &'a str,
    pub(crate) query: F,
    pub(crate) crumbs: Vec<Crumb>,
    pub(crate) form: Option<SearchForm>,
    pub(crate) row: CatalogRow,
    pub(crate) error: Option<String>,
    /// The facets of the listed records (`None`: the catalog has no facet tables).
    pub(crate) facets: Option<Vec<FacetView>>,
    /// Query pairs the search form keeps as hidden fields (the facets' narrowing).
    pub(crate) hidden: Vec<(String, String)>,
}

pub(crate) fn list_reply<F: Fn(u64) -> String>(l: ListReply<'_, F>) -> Result<Response, WebError> {
    let first = (l.page - 1) * PAGE_SIZE;
    let rows: Vec<ResultRow> = l
        .records
        .iter()
        .enumerate()
        .map(|(i, r)| result_row(l.catalog, first + i as u64 + 1, r))
        .collect();
    let next_href = l
        .more
        .then(|| format!("{}?{}", l.here, (l.query)(l.page + 1)));
    let prev_href = (l.page > 1).then(|| format!("{}?{}", l.here, (l.query)(l.page - 1)));
    let mut facets = l.facets;
    match l.format {
        Format::Json => {
            for v in facets
                .iter_mut()
                .flatten()
                .flat_map(|f| f.results.iter_mut())
            {
                v.toggle_url = Format::Json.href(&v.toggle_url);
            }
            let v = serde_json::json!({
                "facets": facets,
                "page": l.page,
                "page_size": PAGE_SIZE,
                "next": next_href.as_ref().map(|h| Format::Json.href(h)),
                "previous": prev_href.as_ref().map(|h| Format::Json.href(h)),
                "records": l.records.iter().map(view::record_json).collect::<Vec<_>>(),
                "rows": rows,
            });
            return Ok(json_body(&v).into_response());
        }
        Format::Csv => return csv_rows(&l.records, &rows, next_href, prev_href),
        Format::Html => {}
    }
    let this = format!("{}?{}", l.here, (l.query)(l.page));
    let data_href = Format::Json.href(&this);
    let csv_href = Format::Csv.href(&this);
    let show_score = rows.iter().any(|r| r.score.is_some());
    let summary = if rows.is_empty() {
        String::new()
    } else {
        format!(
            "Records {}–{}{}",
            first + 1,
            first + rows.len() as u64,
            if l.more { " (more follow)" } else { "" }
        )
    };
    Ok(html(render(
        "list.html",
        context! {
            heading => l.heading, rows, summary, page => l.page, next_href, prev_href,
            crumbs => l.crumbs, data_href, csv_href, show_score, show_template => l.form.is_some(),
            show_form => l.form.is_some(), form => l.form.unwrap_or_default(),
            catalog => l.catalog, search_action => l.row.search_href, templates => l.row.templates,
            error => l.error, facets, hidden => l.hidden, version => env!("CARGO_PKG_VERSION"),
        },
    )?))
}

/// The CSV form of a page of records: `n,template,url,title,score,href`, one row per
/// record (the template and URL as their bytes, the title as the page shows it); the
/// next and previous pages, in CSV, in a `Link` header (`rel="next"`, `rel="prev"`).
fn csv_rows(
    records: &[Record],
    rows: &[ResultRow],
    next_href: Option<String>,
    prev_href: Option<String>,
) -> Result<Response, WebError> {
    let body = csv_body(|w| {
        w.write_record(["n", "template", "url", "title", "score", "href"])?;
        for (r, row) in records.iter().zip(rows) {
            w.write_record([
                row.n.to_string().as_bytes(),
                &r.template,
                &r.url,
                row.title.as_bytes(),
                row.score.as_deref().unwrap_or_default().as_bytes(),
                row.href.as_bytes(),
            ])?;
        }
        Ok(())
    })?;
    let links: Vec<String> = [(next_href, "next"), (prev_href, "prev")]
        .into_iter()
        .filter_map(|(h, rel)| h.map(|h| format!("<{}>; rel=\"{rel}\"", Format::Csv.href(&h))))
        .collect();
    let mut reply = ([(header::CONTENT_TYPE, CSV)], body).into_response();
    if let Ok(v) = HeaderValue::from_str(&links.join(", ")) {
        if !links.is_empty() {
            reply.headers_mut().insert(header::LINK, v);
        }
    }
    Ok(reply)
}
