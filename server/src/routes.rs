//! The routes: which handler answers which path, for every protocol and page.

use crate::rdm::{get_incoming, post_incoming, RDM_PATH};
use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// The router: `GET` and `POST` on [`RDM_PATH`]; OAI-PMH on `/oai` and `/oai/NAME`
/// (see [`crate::oai`]) and the `soif` format's schema at `/oai/soif.xsd`; the browse
/// and search pages on `/` and below (see [`crate::web`]); robots, sitemaps and
/// ResourceSync (see [`crate::discovery`]).
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route(RDM_PATH, get(get_incoming).post(post_incoming))
        .route(
            "/oai",
            get(crate::oai::get_default).post(crate::oai::post_default),
        )
        .route("/oai/soif.xsd", get(crate::oai::soif_xsd))
        .route(
            "/oai/{name}",
            get(crate::oai::get_named).post(crate::oai::post_named),
        )
        // What the web follows (see crate::discovery).
        .route("/robots.txt", get(crate::discovery::sitemap::robots))
        .route(
            "/{name}/sitemap.xml",
            get(crate::discovery::sitemap::sitemap),
        )
        .route(
            "/.well-known/resourcesync",
            get(crate::discovery::resourcesync::source_description),
        )
        .route(
            "/{name}/.well-known/resourcesync",
            get(crate::discovery::resourcesync::catalog_description),
        )
        .route(
            "/{name}/capabilitylist.xml",
            get(crate::discovery::resourcesync::capability_list),
        )
        .route(
            "/{name}/resourcelist.xml",
            get(crate::discovery::resourcesync::resource_list),
        )
        .route(
            "/{name}/changelist.xml",
            get(crate::discovery::resourcesync::change_list),
        )
        // The browse and search pages (read-only: GET only; see crate::web).
        .route("/", get(crate::web::home))
        .route("/.json", get(crate::web::home_json))
        .route("/-/style.css", get(crate::web::stylesheet))
        .route("/{name}", get(crate::web::catalog_page))
        .route("/{name}/-/{page}", get(crate::web::search_page))
        .route("/{name}/-/facets", get(crate::web::facets_page))
        .route("/{name}/-/facets.json", get(crate::web::facets_page))
        .route("/{name}/-/facets.csv", get(crate::web::facets_page))
        .route("/{name}/{template}", get(crate::web::list_page))
        .route("/{name}/{template}/{leaf}", get(crate::web::record_page))
        // The body is limited while it streams (ServerConfig::max_body), not buffered.
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}
