//! What every page shares: the templates and their rendering, the headers every reply
//! carries, errors as pages, query parameters, the read slot a page takes, and the
//! catalog a URL names.

use crate::catalog::Catalog;
use crate::error::RequestError;
use crate::state::{AppState, ClientAddr};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use minijinja::{context, Environment};
use percent_encoding::{percent_decode, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Serialize;
use std::sync::{Arc, OnceLock};

/// Records per result page.
pub const PAGE_SIZE: u64 = 25;

/// The highest page number served (deeper pages are reached by narrowing the search).
pub const MAX_PAGE: u64 = 400;

/// The policy every page is served with: no script, no frames, styles from the server.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
                       form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// What may stay unescaped in a query-string value or path segment we build.
pub(crate) const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

pub(crate) fn env() -> &'static Environment<'static> {
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
            ("facets.html", include_str!("templates/facets.html")),
            ("facet_box.html", include_str!("templates/facet_box.html")),
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

pub(crate) fn encode_str(s: &str) -> String {
    utf8_percent_encode(s, COMPONENT).to_string()
}

/// A page's query string, values as bytes (`+` is a space), the first of each name.
#[derive(Debug, Default)]
pub(crate) struct Params(Vec<(String, Vec<u8>)>);

impl Params {
    pub(crate) fn parse(raw: Option<&str>) -> Params {
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
    /// Every pair, in order (repeated names included).
    pub(crate) fn pairs(&self) -> &[(String, Vec<u8>)] {
        &self.0
    }
    pub(crate) fn bytes(&self, name: &str) -> Option<&[u8]> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_slice())
    }
    pub(crate) fn text(&self, name: &str) -> String {
        self.bytes(name)
            .map(|b| String::from_utf8_lossy(b).trim().to_string())
            .unwrap_or_default()
    }
    pub(crate) fn page(&self) -> Result<u64, WebError> {
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
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            WebError::NotFound(_) => StatusCode::NOT_FOUND,
            WebError::BadRequest(_) => StatusCode::BAD_REQUEST,
            WebError::Request(e) => e.status(),
        }
    }
    pub(crate) fn message(&self) -> String {
        match self {
            WebError::NotFound(m) | WebError::BadRequest(m) => m.clone(),
            WebError::Request(e) => e.to_string(),
        }
    }
}

/// The security headers every page and download carries.
pub(crate) fn harden(mut resp: Response) -> Response {
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

pub(crate) fn error_page(e: &WebError, json: bool) -> Response {
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

pub(crate) fn render(name: &str, ctx: minijinja::Value) -> Result<String, WebError> {
    env()
        .get_template(name)
        .and_then(|t| t.render(ctx))
        .map_err(|e| WebError::Request(RequestError::Internal(format!("rendering {name}: {e}"))))
}

pub(crate) fn html(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

pub(crate) fn json_body(
    v: &serde_json::Value,
) -> ([(header::HeaderName, &'static str); 1], String) {
    (
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".into()),
    )
}

/// One breadcrumb.
#[derive(Debug, Serialize)]
pub(crate) struct Crumb {
    pub(crate) text: String,
    pub(crate) href: Option<String>,
}

/// The handler's common part: a read slot, then `f` on a blocking thread.
pub(crate) async fn guarded(
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
pub(crate) fn data_form(segment: &str) -> (&str, bool) {
    match segment.strip_suffix(".json") {
        Some(s) => (s, true),
        None => (segment, false),
    }
}

pub(crate) fn catalog_of(st: &AppState, name: &str) -> Result<(usize, Arc<Catalog>), WebError> {
    st.catalog_named(Some(name))
        .ok_or_else(|| WebError::NotFound(format!("no catalog named {name}")))
}

/// The catalog a `/NAME` or `/NAME.json` segment names, and whether JSON is wanted.
pub(crate) fn catalog_segment(
    st: &AppState,
    segment: &str,
) -> Result<(usize, Arc<Catalog>, bool), WebError> {
    if let Some(found) = st.catalog_named(Some(segment)) {
        return Ok((found.0, found.1, false));
    }
    let (name, json) = data_form(segment);
    let (i, c) = catalog_of(st, name)?;
    Ok((i, c, json))
}
