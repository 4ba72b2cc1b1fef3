//! ResourceSync (ANSI/NISO Z39.99-2017): what a copy of a catalog needs to stay equal to
//! it — a baseline from the resource list, then the change list, again and again.
//!
//! - `/.well-known/resourcesync`: the source description, one capability list per
//!   catalog; `/NAME/.well-known/resourcesync` names only that catalog's (clients such
//!   as `resync` look there first, and want one);
//! - `/NAME/capabilitylist.xml`: the catalog's resource list and change list;
//! - `/NAME/resourcelist.xml`: every live record as a resource, its `record.soif`
//!   (`/NAME/TEMPLATE/record.soif?url=URL`), `lastmod` its datestamp; `at` is the time
//!   the list was made;
//! - `/NAME/changelist.xml`: the latest changes, oldest first: records by the time they
//!   last changed (`created` when the row was new then — its `soif_created` is its
//!   datestamp —, else `updated`) and deletions (`deleted`; kept for ever) by the time
//!   they were deleted, each with its `datetime`. It holds at most `--sitemap-size` changes, whole
//!   seconds of them: `from` is the catalog's earliest datestamp when every change fits,
//!   else the first second it holds whole; `until` is the time the list was made. A
//!   client keeps the time of the last change it applied and skips the changes before
//!   it; one whose time is before `from` has missed changes and needs a new baseline.
//!
//! The resource list comes in the datestamps' listing order (template, then URL); past
//! `--sitemap-size` URLs it is a sitemap index of parts `?part=K`. The change list is one
//! document: making it reads every table once, keeping the newest changes only. No
//! change list index is served (the stock client would follow one): the catalog keeps
//! no history, so every change since its earliest datestamp is one entry per record and
//! deletion — the resource list again, in time order — and a client that has missed
//! more than one list holds does as well with a new baseline. Resources whose URL is
//! longer than the sitemaps schema allows (2,048 characters) are left out.
//!
//! ```text
//! $ resync --baseline --delete http://127.0.0.1:8080/catalog=copy
//! $ resync --incremental --delete http://127.0.0.1:8080/catalog=copy
//! ```

use super::{
    live_list, public_root, source, stream, DocError, ListShape, Source, RS_NS, SITEMAP_NS,
};
use crate::state::{AppState, ClientAddr};
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use soif_codecs::rules::text::escape_text;
use soif_store::datestamps::{earliest, latest};
use std::sync::Arc;

const XML: &str = "application/xml; charset=utf-8";

fn urlset(md: &str, links: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"{SITEMAP_NS}\" \
         xmlns:rs=\"{RS_NS}\">\n{links}<rs:md {md}/>\n"
    )
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn small(body: String) -> Response {
    ([(header::CONTENT_TYPE, XML)], body).into_response()
}

/// A source description naming the capability lists of `names`.
fn description<'a>(root: &str, names: impl Iterator<Item = &'a str>) -> Response {
    let mut out = urlset("capability=\"description\"", "");
    for name in names {
        out.push_str(&format!(
            "<url><loc>{}</loc><rs:md capability=\"capabilitylist\"/></url>\n",
            escape_text(&format!(
                "{root}/{}/capabilitylist.xml",
                crate::web::encode_component(name.as_bytes())
            ))
        ));
    }
    out.push_str("</urlset>\n");
    small(out)
}

/// `GET /.well-known/resourcesync`: the source description of every catalog.
pub async fn source_description(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Response {
    state.count_request();
    let root = public_root(&state, &headers);
    description(&root, state.catalogs().iter().map(|c| c.name()))
}

/// `GET /NAME/.well-known/resourcesync`: the source description of one catalog.
pub async fn catalog_description(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    state.count_request();
    match source(&state, &name, &headers) {
        Ok(src) => description(&src.root, std::iter::once(name.as_str())),
        Err(e) => e.reply(),
    }
}

/// `GET /NAME/capabilitylist.xml`.
pub async fn capability_list(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    state.count_request();
    let src = match source(&state, &name, &headers) {
        Ok(s) => s,
        Err(e) => return e.reply(),
    };
    let up = format!(
        "<rs:ln rel=\"up\" href=\"{}\"/>\n",
        escape_text(&format!("{}/.well-known/resourcesync", src.root))
    );
    let mut out = urlset("capability=\"capabilitylist\"", &up);
    for cap in ["resourcelist", "changelist"] {
        out.push_str(&format!(
            "<url><loc>{}</loc><rs:md capability=\"{cap}\"/></url>\n",
            src.doc(&format!("{cap}.xml"), None)
        ));
    }
    out.push_str("</urlset>\n");
    small(out)
}

/// `GET /NAME/resourcelist.xml` (`?part=K`).
pub async fn resource_list(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let client = client.map(|Extension(c)| c);
    live_list(state, name, client, query, headers, |src| ListShape {
        file: "resourcelist.xml",
        rs: Some(format!(
            "{}<rs:md capability=\"resourcelist\" at=\"{}\"/>\n",
            up_link(src),
            now()
        )),
        suffix: ".soif",
    })
    .await
}

/// The link from a list to the catalog's capability list.
fn up_link(src: &Source) -> String {
    format!(
        "<rs:ln rel=\"up\" href=\"{}\"/>\n",
        src.doc("capabilitylist.xml", None)
    )
}

/// `GET /NAME/changelist.xml`: the latest `--sitemap-size` changes, oldest first.
pub async fn change_list(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
) -> Response {
    let src = match source(&state, &name, &headers) {
        Ok(s) => s,
        Err(e) => return e.reply(),
    };
    let client = client.map(|Extension(c)| c);
    stream(state, client, XML, move |sink| {
        let n = usize::try_from(src.size).unwrap_or(usize::MAX);
        let read_err =
            |e: soif_store::StoreError| DocError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
        let mut changes = src
            .catalog
            .read(|s| latest(s, n.saturating_add(1)))?
            .map_err(read_err)?;
        let until = now();
        let from = if changes.len() > n {
            // More changes than a list holds: it covers the seconds it holds whole.
            let cut = changes[n].entry.datestamp.clone();
            changes.retain(|c| c.entry.datestamp > cut);
            next_second(&cut)
        } else {
            src.catalog
                .read(earliest)?
                .map_err(read_err)?
                .unwrap_or_else(|| until.clone())
        };
        let up = up_link(&src);
        sink.push(&urlset(
            &format!("capability=\"changelist\" from=\"{from}\" until=\"{until}\""),
            &up,
        ))?;
        let mut line = String::new();
        for c in changes.iter().rev() {
            let e = &c.entry;
            let Some(loc) = src.record_loc(e, ".soif") else {
                continue;
            };
            let ds = &e.datestamp;
            let change = match (e.deleted, c.created) {
                (true, _) => "deleted",
                (false, true) => "created",
                (false, false) => "updated",
            };
            line.clear();
            line.push_str(&format!(
                "<url><loc>{loc}</loc><lastmod>{ds}</lastmod>\
                 <rs:md change=\"{change}\" datetime=\"{ds}\"/></url>\n"
            ));
            sink.push(&line)?;
        }
        sink.push("</urlset>\n")
    })
    .await
}

/// The second after a datestamp (`YYYY-MM-DDThh:mm:ssZ`); the datestamp itself if it
/// is not one.
fn next_second(stamp: &str) -> String {
    chrono::NaiveDateTime::parse_from_str(stamp, "%Y-%m-%dT%H:%M:%SZ")
        .map(|t| {
            (t + chrono::Duration::seconds(1))
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        })
        .unwrap_or_else(|_| stamp.to_string())
}
