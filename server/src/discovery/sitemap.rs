//! `/robots.txt` and `/NAME/sitemap.xml`: the record pages for search engines.
//!
//! A catalog's sitemap lists the page of each live record (`/NAME/TEMPLATE/record?url=`)
//! with its datestamp as `lastmod` (a catalog without records lists its own page, `/NAME`:
//! the schema wants a `<url>` at least); past `--sitemap-size` URLs (at most 50,000) it is a
//! sitemap index of parts `/NAME/sitemap.xml?part=K`. `/robots.txt` names every
//! catalog's sitemap (absolute URLs: `--public-url`, else the request's `Host`).
//!
//! ```text
//! $ curl http://127.0.0.1:8080/catalog/sitemap.xml
//! <?xml version="1.0" encoding="UTF-8"?>
//! <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
//! <url><loc>http://127.0.0.1:8080/catalog/FILE/record?url=ftp%3A%2F%2Fftp.example.org%2Fpub%2FREADME</loc><lastmod>2026-11-26T05:00:00Z</lastmod></url>
//! </urlset>
//! ```

use super::{live_list, public_root, ListShape};
use crate::state::{AppState, ClientAddr};
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use std::sync::Arc;

/// `GET /robots.txt`: every path may be crawled but RDM's; each catalog's sitemap.
pub async fn robots(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    state.count_request();
    let root = public_root(&state, &headers);
    let mut out = String::from("User-agent: *\nDisallow: /rdm/\n");
    for c in state.catalogs() {
        out.push_str(&format!(
            "Sitemap: {root}/{}/sitemap.xml\n",
            crate::web::encode_component(c.name().as_bytes())
        ));
    }
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], out).into_response()
}

/// `GET /NAME/sitemap.xml` (`?part=K`).
pub async fn sitemap(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let client = client.map(|Extension(c)| c);
    live_list(state, name, client, query, headers, |_| ListShape {
        file: "sitemap.xml",
        rs: None,
        suffix: "",
    })
    .await
}
