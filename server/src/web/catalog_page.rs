//! A catalog's page (`/NAME`, `/NAME.json`) and its search form.

use super::page::{catalog_segment, guarded, html, json_body, render, Crumb};
use super::results::SearchForm;
use super::summary::catalog_row;
use crate::state::{AppState, ClientAddr};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use minijinja::context;
use std::sync::Arc;

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
