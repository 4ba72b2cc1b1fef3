//! The home page (`/`, `/.json`): the catalogs, their templates, record counts and
//! latest load.

use super::page::{guarded, html, json_body, render, Crumb};
use super::results::SearchForm;
use super::summary::catalog_row;
use crate::state::{AppState, ClientAddr};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use minijinja::context;
use std::sync::Arc;

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

pub(crate) async fn home_page(
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
