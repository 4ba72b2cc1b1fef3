//! The browse and search pages (`GET /`): server-rendered HTML over the same catalogs as
//! RDM and OAI-PMH, each page also as JSON.
//!
//! | URL | page |
//! |---|---|
//! | `/` (`/.json`) | the catalogs, their templates, record counts and latest load |
//! | `/NAME` (`/NAME.json`) | one catalog and its search form |
//! | `/NAME/-/search?q=&match=&since=&template=&page=` (`search.json`) | search results |
//! | `/NAME/TEMPLATE?page=` (`/NAME/TEMPLATE.json`) | a template's records |
//! | `/NAME/TEMPLATE/record?url=URL` | one record; `record.json`, `record.soif`, `record.rdf` |
//! | `/NAME/TEMPLATE/record.value?url=URL&i=N` | the N-th value (flattened order), as bytes |
//! | `/-/style.css` | the stylesheet |
//!
//! Templates are [`minijinja`] with HTML auto-escaping, so every value is escaped; a value
//! is a link only when it is an `http`, `https`, `ftp`, `gopher`, `news` or `mailto` URL
//! ([`safe_href`]). Every reply carries a `Content-Security-Policy` that allows no script
//! at all, `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`. The pages
//! only read: each request takes one of the client's read slots (`--max-reads-per-client`,
//! `--max-reads`) and reads through the catalog's read connections (`--read-wait`), like
//! `rd-request`s and OAI-PMH requests.

pub mod view;

use crate::catalog::{keyword_query, Catalog, Flow, Query, Scope};
use crate::error::RequestError;
use crate::state::{AppState, ClientAddr};
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use minijinja::{context, Environment};
use percent_encoding::{percent_decode, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Serialize;
use soif_codecs::rdm::View;
use soif_codecs::Record;
use soif_pipeline::transforms::matching::Match;
use soif_pipeline::transforms::scope::Since;
use std::sync::{Arc, OnceLock};
use view::{safe_href, text_of};

/// Records per result page.
pub const PAGE_SIZE: u64 = 25;

/// The highest page number served (deeper pages are reached by narrowing the search).
pub const MAX_PAGE: u64 = 400;

/// The policy every page is served with: no script, no frames, styles from the server.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
                       form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// What may stay unescaped in a query-string value or path segment we build.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn env() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        // `.html` names get HTML auto-escaping (minijinja's default for that suffix).
        for (name, src) in [
            ("base.html", include_str!("templates/base.html")),
            (
                "search_form.html",
                include_str!("templates/search_form.html"),
            ),
            ("overview.html", include_str!("templates/overview.html")),
            ("home.html", include_str!("templates/home.html")),
            ("catalog.html", include_str!("templates/catalog.html")),
            ("list.html", include_str!("templates/list.html")),
            ("record.html", include_str!("templates/record.html")),
            ("error.html", include_str!("templates/error.html")),
        ] {
            if let Err(e) = env.add_template(name, src) {
                // The templates are part of the binary: the tests render each one.
                eprintln!("soif serve: web template {name}: {e}");
            }
        }
        env
    })
}

/// Percent-encodes `bytes` for a query-string value or a path segment.
pub fn encode_component(bytes: &[u8]) -> String {
    percent_encoding::percent_encode(bytes, COMPONENT).to_string()
}

fn encode_str(s: &str) -> String {
    utf8_percent_encode(s, COMPONENT).to_string()
}

/// A page's query string, values as bytes (`+` is a space), the first of each name.
#[derive(Debug, Default)]
struct Params(Vec<(String, Vec<u8>)>);

impl Params {
    fn parse(raw: Option<&str>) -> Params {
        let mut out = Vec::new();
        for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let dec = |s: &str| -> Vec<u8> {
                let plus = s.replace('+', " ");
                percent_decode(plus.as_bytes()).collect()
            };
            out.push((String::from_utf8_lossy(&dec(k)).into_owned(), dec(v)));
        }
        Params(out)
    }
    fn bytes(&self, name: &str) -> Option<&[u8]> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_slice())
    }
    fn text(&self, name: &str) -> String {
        self.bytes(name)
            .map(|b| String::from_utf8_lossy(b).trim().to_string())
            .unwrap_or_default()
    }
    fn page(&self) -> Result<u64, WebError> {
        let p = self.text("page");
        if p.is_empty() {
            return Ok(1);
        }
        match p.parse::<u64>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
            _ => Err(WebError::BadRequest(format!(
                "page must be a number from 1 to {MAX_PAGE}"
            ))),
        }
    }
}

/// What a page failed with.
#[derive(Debug)]
pub enum WebError {
    NotFound(String),
    BadRequest(String),
    Request(RequestError),
}

impl From<RequestError> for WebError {
    fn from(e: RequestError) -> WebError {
        match e {
            RequestError::UnknownCatalog(n) => WebError::NotFound(format!("no catalog named {n}")),
            e => WebError::Request(e),
        }
    }
}

impl WebError {
    fn status(&self) -> StatusCode {
        match self {
            WebError::NotFound(_) => StatusCode::NOT_FOUND,
            WebError::BadRequest(_) => StatusCode::BAD_REQUEST,
            WebError::Request(e) => e.status(),
        }
    }
    fn message(&self) -> String {
        match self {
            WebError::NotFound(m) | WebError::BadRequest(m) => m.clone(),
            WebError::Request(e) => e.to_string(),
        }
    }
}

/// The security headers every page and download carries.
fn harden(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    resp
}

fn error_page(e: &WebError, json: bool) -> Response {
    let status = e.status();
    let mut resp = if json {
        let body = serde_json::json!({"error": e.message(), "status": status.as_u16()});
        (status, json_body(&body)).into_response()
    } else {
        let html = render(
            "error.html",
            context! { status => status.to_string(), message => e.message(), crumbs => Vec::<Crumb>::new(), version => env!("CARGO_PKG_VERSION") },
        )
        .unwrap_or_else(|_| "error".into());
        (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            html,
        )
            .into_response()
    };
    if status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    resp
}

fn render(name: &str, ctx: minijinja::Value) -> Result<String, WebError> {
    env()
        .get_template(name)
        .and_then(|t| t.render(ctx))
        .map_err(|e| WebError::Request(RequestError::Internal(format!("rendering {name}: {e}"))))
}

fn html(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

fn json_body(v: &serde_json::Value) -> ([(header::HeaderName, &'static str); 1], String) {
    (
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".into()),
    )
}

/// One breadcrumb.
#[derive(Debug, Serialize)]
struct Crumb {
    text: String,
    href: Option<String>,
}

/// The handler's common part: a read slot, then `f` on a blocking thread.
async fn guarded(
    state: Arc<AppState>,
    client: Option<Extension<ClientAddr>>,
    json: bool,
    f: impl FnOnce(&AppState) -> Result<Response, WebError> + Send + 'static,
) -> Response {
    state.count_request();
    let client = client.map(|Extension(ClientAddr(ip))| ip);
    let result = match state.acquire_read(client) {
        Err(e) => Err(WebError::from(e)),
        Ok(slot) => {
            let st = state.clone();
            match tokio::task::spawn_blocking(move || {
                let r = f(&st);
                drop(slot);
                r
            })
            .await
            {
                Ok(r) => r,
                Err(e) => Err(WebError::Request(RequestError::Internal(format!(
                    "a page task failed: {e}"
                )))),
            }
        }
    };
    harden(match result {
        Ok(r) => r,
        Err(e) => {
            if matches!(e, WebError::Request(_)) {
                state.count_failure();
            }
            error_page(&e, json)
        }
    })
}

/// `GET /-/style.css`.
pub async fn stylesheet() -> Response {
    harden(
        (
            [
                (header::CONTENT_TYPE, "text/css; charset=utf-8"),
                (header::CACHE_CONTROL, "max-age=3600"),
            ],
            include_str!("style.css"),
        )
            .into_response(),
    )
}

/// Removes a `.json` suffix: the page's data form.
fn data_form(segment: &str) -> (&str, bool) {
    match segment.strip_suffix(".json") {
        Some(s) => (s, true),
        None => (segment, false),
    }
}

#[derive(Debug, Serialize)]
struct TemplateRow {
    template: String,
    records: u64,
    href: String,
}

#[derive(Debug, Serialize)]
struct RunRow {
    id: i64,
    status: String,
    started: String,
    finished: Option<String>,
    records: i64,
    upserted: i64,
    deleted: i64,
    rejected: i64,
}

#[derive(Debug, Serialize)]
struct CatalogRow {
    name: String,
    href: String,
    search_href: String,
    oai_href: String,
    read_only: bool,
    templates: Vec<TemplateRow>,
    last_run: Option<RunRow>,
}

fn catalog_row(catalog: &Catalog) -> Result<CatalogRow, WebError> {
    let o = catalog.overview()?;
    let name = catalog.name().to_string();
    let base = format!("/{}", encode_str(&name));
    Ok(CatalogRow {
        templates: o
            .tables
            .iter()
            .map(|(t, n)| {
                let template = String::from_utf8_lossy(&t.template).into_owned();
                TemplateRow {
                    href: format!("{base}/{}", encode_component(&t.template)),
                    template,
                    records: *n,
                }
            })
            .collect(),
        last_run: o.last_run.map(|r| RunRow {
            id: r.id,
            status: r.status,
            started: r.started,
            finished: r.finished,
            records: r.records,
            upserted: r.upserted,
            deleted: r.deleted,
            rejected: r.rejected,
        }),
        search_href: format!("{base}/-/search"),
        oai_href: format!("/oai/{}?verb=Identify", encode_str(&name)),
        read_only: catalog.read_only(),
        href: base,
        name,
    })
}

/// `GET /` and `GET /.json`.
pub async fn home(
    State(state): State<Arc<AppState>>,
    client: Option<Extension<ClientAddr>>,
) -> Response {
    home_page(state, client, false).await
}

/// `GET /.json`.
pub async fn home_json(
    State(state): State<Arc<AppState>>,
    client: Option<Extension<ClientAddr>>,
) -> Response {
    home_page(state, client, true).await
}

async fn home_page(
    state: Arc<AppState>,
    client: Option<Extension<ClientAddr>>,
    json: bool,
) -> Response {
    guarded(state, client, json, move |st| {
        let rows = st
            .catalogs()
            .iter()
            .map(|c| catalog_row(c))
            .collect::<Result<Vec<_>, _>>()?;
        if json {
            let v = serde_json::json!({ "catalogs": rows });
            return Ok(json_body(&v).into_response());
        }
        Ok(html(render(
            "home.html",
            context! { catalogs => rows, crumbs => Vec::<Crumb>::new(), data_href => "/.json",
            form => SearchForm::default(), version => env!("CARGO_PKG_VERSION") },
        )?))
    })
    .await
}

fn catalog_of(st: &AppState, name: &str) -> Result<(usize, Arc<Catalog>), WebError> {
    st.catalog_named(Some(name))
        .ok_or_else(|| WebError::NotFound(format!("no catalog named {name}")))
}

/// The catalog a `/NAME` or `/NAME.json` segment names, and whether JSON is wanted.
fn catalog_segment(st: &AppState, segment: &str) -> Result<(usize, Arc<Catalog>, bool), WebError> {
    if let Some(found) = st.catalog_named(Some(segment)) {
        return Ok((found.0, found.1, false));
    }
    let (name, json) = data_form(segment);
    let (i, c) = catalog_of(st, name)?;
    Ok((i, c, json))
}

/// `GET /NAME` and `/NAME.json`.
pub async fn catalog_page(
    State(state): State<Arc<AppState>>,
    Path(segment): Path<String>,
    client: Option<Extension<ClientAddr>>,
) -> Response {
    let json = segment.ends_with(".json");
    guarded(state, client, json, move |st| {
        let (_, catalog, json) = catalog_segment(st, &segment)?;
        let row = catalog_row(&catalog)?;
        if json {
            return Ok(json_body(&serde_json::json!(row)).into_response());
        }
        let crumbs = vec![Crumb {
            text: row.name.clone(),
            href: None,
        }];
        let data_href = format!("{}.json", row.href);
        Ok(html(render(
            "catalog.html",
            context! { c => row, crumbs, data_href, form => SearchForm::default(), version => env!("CARGO_PKG_VERSION") },
        )?))
    })
    .await
}

/// What the search form holds.
#[derive(Debug, Default, Serialize, Clone)]
struct SearchForm {
    q: String,
    #[serde(rename = "match")]
    match_: String,
    since: String,
    template: String,
}

impl SearchForm {
    fn from(p: &Params) -> SearchForm {
        SearchForm {
            q: p.text("q"),
            match_: p.text("match"),
            since: p.text("since"),
            template: p.text("template"),
        }
    }
    fn query_string(&self, page: u64) -> String {
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
        s.push_str(&format!("page={page}"));
        s
    }
}

/// One row of a result list.
#[derive(Debug, Serialize)]
struct ResultRow {
    n: u64,
    template: String,
    url: String,
    title: String,
    score: Option<String>,
    href: String,
}

fn result_row(catalog: &str, n: u64, r: &Record) -> ResultRow {
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

/// A search's parts, checked.
struct Search {
    scope: Scope,
    since: Option<i64>,
    matcher: Option<Match>,
    template: Option<Vec<u8>>,
}

fn parse_search(st: &AppState, form: &SearchForm) -> Result<Search, WebError> {
    let since = if form.since.is_empty() {
        None
    } else {
        let when =
            soif_pipeline::transforms::dates::parse(form.since.as_bytes()).ok_or_else(|| {
                WebError::BadRequest(format!(
                    "since: {:?} is not a date (e.g. 1996-01-31, or Sun, 06 Nov 1994 08:49:37 GMT)",
                    form.since
                ))
            })?;
        Some(when.unix())
    };
    let matcher = if form.match_.is_empty() {
        None
    } else {
        Some(
            Match::parse(&form.match_)
                .map_err(|e| WebError::BadRequest(format!("attribute match: {e}")))?,
        )
    };
    let scope = if !form.q.is_empty() {
        Scope::Keywords(
            keyword_query(&form.q, st.config().max_query_terms).map_err(WebError::from)?,
        )
    } else if let Some(s) = since {
        Scope::Since(s)
    } else {
        Scope::All
    };
    Ok(Search {
        scope,
        since,
        matcher,
        template: (!form.template.is_empty()).then(|| form.template.as_bytes().to_vec()),
    })
}

/// Runs a search: the records of page `page`, and whether there is a next one.
fn run_search(
    st: &AppState,
    catalog: &Catalog,
    s: &Search,
    page: u64,
) -> Result<(Vec<Record>, bool), WebError> {
    let mut q = Query::new(s.scope.clone(), false, View::default());
    q.max_sorted_rows = st.config().max_sorted_rows;
    q.max_keyword_hits = st.config().max_keyword_hits;
    let skip = (page - 1) * PAGE_SIZE;
    let mut seen = 0u64;
    let mut out = Vec::new();
    let mut more = false;
    let keyword = matches!(s.scope, Scope::Keywords(_));
    catalog.query(&q, &mut |r: Record| {
        if s.template.as_deref().is_some_and(|t| t != &r.template[..]) {
            return Ok(Flow::Continue);
        }
        if keyword {
            if let Some(since) = s.since {
                match Since::modified(&r) {
                    Ok(t) if t >= since => {}
                    _ => return Ok(Flow::Continue),
                }
            }
        }
        if s.matcher.as_ref().is_some_and(|m| !m.matches(&r)) {
            return Ok(Flow::Continue);
        }
        seen += 1;
        if seen <= skip {
            return Ok(Flow::Continue);
        }
        if out.len() as u64 >= PAGE_SIZE {
            more = true;
            return Ok(Flow::Stop);
        }
        out.push(r);
        Ok(Flow::Continue)
    })?;
    Ok((out, more))
}

/// `GET /NAME/TEMPLATE` (a template's records) and `/NAME/-/search` (results), with
/// their `.json` forms.
pub async fn list_page(
    State(state): State<Arc<AppState>>,
    Path((name, segment)): Path<(String, String)>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let json = segment.ends_with(".json");
    guarded(state, client, json, move |st| {
        let (_, catalog) = catalog_of(st, &name)?;
        let params = Params::parse(raw.as_deref());
        let page = params.page()?;
        let (segment, json) = if catalog_has_template(&catalog, segment.as_bytes())? {
            (segment.as_str(), false)
        } else {
            data_form(&segment)
        };
        let base = format!("/{}", encode_str(&name));
        let row = catalog_row(&catalog)?;
        let template = segment.as_bytes().to_vec();
        if !catalog_has_template(&catalog, &template)? {
            return Err(WebError::NotFound(format!(
                "catalog {name} has no template {segment}"
            )));
        }
        let (records, more) = read_table(&catalog, &template, page)?;
        let tpl = String::from_utf8_lossy(&template).into_owned();
        let here = format!("{base}/{}", encode_component(&template));
        list_reply(ListReply {
            json,
            catalog: &name,
            heading: format!("{tpl} records in {name}"),
            records,
            more,
            page,
            here: &here,
            query: |p| format!("page={p}"),
            crumbs: vec![
                Crumb {
                    text: name.clone(),
                    href: Some(base.clone()),
                },
                Crumb {
                    text: tpl.clone(),
                    href: None,
                },
            ],
            form: None,
            row,
            error: None,
        })
    })
    .await
}

/// `GET /NAME/-/search` and `/NAME/-/search.json`.
pub async fn search_page(
    State(state): State<Arc<AppState>>,
    Path((name, segment)): Path<(String, String)>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let json = segment == "search.json";
    guarded(state, client, json, move |st| {
        if segment != "search" && segment != "search.json" {
            return Err(WebError::NotFound("no such page".into()));
        }
        let (_, catalog) = catalog_of(st, &name)?;
        let params = Params::parse(raw.as_deref());
        let page = params.page()?;
        let form = SearchForm::from(&params);
        let base = format!("/{}", encode_str(&name));
        let row = catalog_row(&catalog)?;
        let search = parse_search(st, &form)?;
        let (records, more) = run_search(st, &catalog, &search, page)?;
        let here = format!("{base}/-/search");
        let f2 = form.clone();
        list_reply(ListReply {
            json,
            catalog: &name,
            heading: format!("Search {name}"),
            records,
            more,
            page,
            here: &here,
            query: move |p| f2.query_string(p),
            crumbs: vec![
                Crumb {
                    text: name.clone(),
                    href: Some(base.clone()),
                },
                Crumb {
                    text: "search".into(),
                    href: None,
                },
            ],
            form: Some(form),
            row,
            error: None,
        })
    })
    .await
}

fn catalog_has_template(catalog: &Catalog, template: &[u8]) -> Result<bool, WebError> {
    Ok(catalog.read(|s| s.table(template).is_some())?)
}

/// A page of a template's records, in `url` order, and whether more follow.
fn read_table(
    catalog: &Catalog,
    template: &[u8],
    page: u64,
) -> Result<(Vec<Record>, bool), WebError> {
    let offset = (page - 1) * PAGE_SIZE;
    let r = catalog.read(|store| -> rusqlite::Result<Option<(Vec<Record>, bool)>> {
        let Some(table) = store.table(template) else {
            return Ok(None);
        };
        let sql = format!("{} ORDER BY \"url\" LIMIT ?1 OFFSET ?2", table.select_sql());
        let mut st = store.connection().prepare(&sql)?;
        let limit = i64::try_from(PAGE_SIZE + 1).unwrap_or(i64::MAX);
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        let mut rows = st.query(rusqlite::params![limit, offset])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(table.record_from_row(row)?);
        }
        let more = out.len() as u64 > PAGE_SIZE;
        out.truncate(PAGE_SIZE as usize);
        Ok(Some((out, more)))
    })?;
    match r {
        Ok(Some(x)) => Ok(x),
        Ok(None) => Err(WebError::NotFound("no such template".into())),
        Err(e) => Err(WebError::Request(RequestError::Internal(format!(
            "reading {}: {e}",
            String::from_utf8_lossy(template)
        )))),
    }
}

struct ListReply<'a, F: Fn(u64) -> String> {
    json: bool,
    catalog: &'a str,
    heading: String,
    records: Vec<Record>,
    more: bool,
    page: u64,
    here: &'a str,
    query: F,
    crumbs: Vec<Crumb>,
    form: Option<SearchForm>,
    row: CatalogRow,
    error: Option<String>,
}

fn list_reply<F: Fn(u64) -> String>(l: ListReply<'_, F>) -> Result<Response, WebError> {
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
    if l.json {
        let v = serde_json::json!({
            "page": l.page,
            "page_size": PAGE_SIZE,
            "next": next_href.as_ref().map(|h| json_href(h)),
            "previous": prev_href.as_ref().map(|h| json_href(h)),
            "records": l.records.iter().map(view::record_json).collect::<Vec<_>>(),
            "rows": rows,
        });
        return Ok(json_body(&v).into_response());
    }
    let data_href = json_href(&format!("{}?{}", l.here, (l.query)(l.page)));
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
            crumbs => l.crumbs, data_href, show_score, show_template => l.form.is_some(),
            show_form => l.form.is_some(), form => l.form.unwrap_or_default(),
            catalog => l.catalog, search_action => l.row.search_href, templates => l.row.templates,
            error => l.error, version => env!("CARGO_PKG_VERSION"),
        },
    )?))
}

/// The `.json` form of a page URL: `.json` before the query string.
fn json_href(href: &str) -> String {
    match href.split_once('?') {
        Some((p, q)) => format!("{p}.json?{q}"),
        None => format!("{href}.json"),
    }
}

/// `GET /NAME/TEMPLATE/{record,record.json,record.soif,record.rdf,record.value}?url=URL`.
pub async fn record_page(
    State(state): State<Arc<AppState>>,
    Path((name, template, leaf)): Path<(String, String, String)>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let json = leaf == "record.json";
    guarded(state, client, json, move |st| {
        let (index, catalog) = catalog_of(st, &name)?;
        let params = Params::parse(raw.as_deref());
        let url = params
            .bytes("url")
            .ok_or_else(|| WebError::BadRequest("which record? give ?url=URL".into()))?
            .to_vec();
        let tpl = template.as_bytes();
        let record = catalog
            .read(|s| s.get(tpl, &url))?
            .map_err(|e| {
                WebError::Request(RequestError::Internal(format!("reading a record: {e}")))
            })?
            .ok_or_else(|| {
                WebError::NotFound(format!(
                    "catalog {name} has no {template} record with this URL"
                ))
            })?;
        match leaf.as_str() {
            "record" => {}
            "record.json" => {
                return Ok(json_body(&view::record_json(&record)).into_response());
            }
            "record.soif" => {
                let mut out = Vec::new();
                soif_codecs::soif::encode_record(&record, &mut out);
                return Ok(download(out, "application/x-soif", "record.soif"));
            }
            "record.rdf" => {
                let out = view::rdf_xml(&record);
                return Ok(download(
                    out.into_bytes(),
                    "application/rdf+xml",
                    "record.rdf",
                ));
            }
            "record.value" => {
                let i: usize = params
                    .text("i")
                    .parse()
                    .map_err(|_| WebError::BadRequest("i must be a value's number".into()))?;
                let flat = record.flattened();
                let v = flat
                    .attributes
                    .get(i)
                    .and_then(|a| a.value.as_bytes())
                    .ok_or_else(|| WebError::NotFound(format!("the record has no value {i}")))?;
                return Ok(download(
                    v.to_vec(),
                    "application/octet-stream",
                    "value.bin",
                ));
            }
            _ => return Err(WebError::NotFound("no such page".into())),
        }
        let repo = crate::oai::repository_id(&st.config().oai, index, &name);
        let identifier = crate::oai::ids::identifier(&repo, tpl, &url);
        let links = context! {
            soif => record_href(&name, tpl, &url, ".soif"),
            json => record_href(&name, tpl, &url, ".json"),
            rdf => record_href(&name, tpl, &url, ".rdf"),
            oai => format!("/oai/{}?verb=GetRecord&metadataPrefix=oai_dc&identifier={}",
                           encode_str(&name), encode_str(&identifier)),
        };
        let value_href = record_href(&name, tpl, &url, ".value");
        let (fields, count) = view::fields(&record, &value_href);
        let url_text = String::from_utf8_lossy(&url).into_owned();
        let title = result_row(&name, 1, &record).title;
        let base = format!("/{}", encode_str(&name));
        let template_href = format!("{base}/{}", encode_component(tpl));
        let crumbs = vec![
            Crumb {
                text: name.clone(),
                href: Some(base.clone()),
            },
            Crumb {
                text: template.clone(),
                href: Some(template_href.clone()),
            },
            Crumb {
                text: "record".into(),
                href: None,
            },
        ];
        Ok(html(render(
            "record.html",
            context! {
                title, url_href => safe_href(&url), url => url_text, template, template_href,
                links, fields, count, crumbs, data_href => record_href(&name, tpl, &url, ".json"),
                version => env!("CARGO_PKG_VERSION"),
            },
        )?))
    })
    .await
}

fn download(bytes: Vec<u8>, content_type: &'static str, file: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (
                header::CONTENT_DISPOSITION,
                if content_type == "application/octet-stream" {
                    match file {
                        "value.bin" => "attachment; filename=\"value.bin\"",
                        _ => "attachment",
                    }
                } else {
                    "inline"
                },
            ),
        ],
        bytes,
    )
        .into_response()
}
