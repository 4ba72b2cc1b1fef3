//! A catalog's summary: its templates with their record counts and its latest load,
//! shown on the home page and atop each of its pages.

use super::page::{encode_component, encode_str, WebError};
use crate::catalog::Catalog;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub(crate) struct TemplateRow {
    pub(crate) template: String,
    pub(crate) records: u64,
    pub(crate) href: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct RunRow {
    pub(crate) id: i64,
    pub(crate) status: String,
    pub(crate) started: String,
    pub(crate) finished: Option<String>,
    pub(crate) records: i64,
    pub(crate) upserted: i64,
    pub(crate) deleted: i64,
    pub(crate) rejected: i64,
}

#[derive(Debug, Serialize)]
pub(crate) struct CatalogRow {
    pub(crate) name: String,
    pub(crate) href: String,
    pub(crate) search_href: String,
    pub(crate) oai_href: String,
    pub(crate) read_only: bool,
    pub(crate) templates: Vec<TemplateRow>,
    pub(crate) last_run: Option<RunRow>,
}

pub(crate) fn catalog_row(catalog: &Catalog) -> Result<CatalogRow, WebError> {
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
