//! A template's records (`/NAME/TEMPLATE`), a page at a time.

use super::facets::{
    facets_available, facets_missing, indexed_counts, narrowed_records, narrowing_query, views,
    FacetQuery, Format,
};
use super::page::{
    catalog_of, encode_component, encode_str, guarded, Crumb, Params, WebError, PAGE_SIZE,
};
use super::results::{list_reply, ListReply};
use super::summary::catalog_row;
use crate::catalog::Catalog;
use crate::error::RequestError;
use crate::state::{AppState, ClientAddr};
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::Extension;
use bytes::Bytes;
use soif_codecs::Record;
use soif_store::facets::{Facet, Narrowing};
use std::sync::Arc;

/// `GET /NAME/TEMPLATE` (a template's records), with its `.json` and `.csv` forms.
pub async fn list_page(
    State(state): State<Arc<AppState>>,
    Path((name, segment)): Path<(String, String)>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let params = Params::parse(raw.as_deref());
    let data = Format::of(&segment, &params).is_ok_and(|(_, f)| f.is_data());
    guarded(state, client, data, move |st| {
        let (_, catalog) = catalog_of(st, &name)?;
        let page = params.page()?;
        let (segment, format) = if catalog_has_template(&catalog, segment.as_bytes())? {
            (segment.as_str(), Format::of_params(&params)?)
        } else {
            Format::of(&segment, &params)?
        };
        let base = format!("/{}", encode_str(&name));
        let row = catalog_row(&catalog)?;
        let template = segment.as_bytes().to_vec();
        if !catalog_has_template(&catalog, &template)? {
            return Err(WebError::NotFound(format!(
                "catalog {name} has no template {segment}"
            )));
        }
        let mut fq = FacetQuery::parse(&params)?;
        // The path names the template: a `template` parameter is not a narrowing here.
        let by = fq.narrowing.without(Facet::Template);
        let available = facets_available(&catalog)?;
        fq.narrowing = Narrowing(
            std::iter::once((Facet::Template, Some(Bytes::from(template.clone()))))
                .chain(by.0.iter().cloned())
                .collect(),
        );
        let (records, more) = if by.is_empty() {
            read_table(&catalog, &template, page)?
        } else if available {
            let offset = (page - 1) * PAGE_SIZE;
            let mut records = narrowed_records(&catalog, &fq.narrowing, offset, PAGE_SIZE + 1)?;
            let more = records.len() as u64 > PAGE_SIZE;
            records.truncate(PAGE_SIZE as usize);
            (records, more)
        } else {
            return Err(facets_missing(&catalog));
        };
        let tpl = String::from_utf8_lossy(&template).into_owned();
        let here = format!("{base}/{}", encode_component(&template));
        let facets = if available {
            let counts = indexed_counts(&catalog, &fq, &[Facet::Template])?;
            Some(views(&fq, &here, counts, true))
        } else {
            None
        };
        let narrowed = narrowing_query(&by);
        list_reply(ListReply {
            format,
            catalog: &name,
            heading: format!("{tpl} records in {name}"),
            records,
            more,
            page,
            here: &here,
            query: |p| {
                if narrowed.is_empty() {
                    format!("page={p}")
                } else {
                    format!("{narrowed}&page={p}")
                }
            },
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
            facets,
            hidden: Vec::new(),
        })
    })
    .await
}

pub(crate) fn catalog_has_template(catalog: &Catalog, template: &[u8]) -> Result<bool, WebError> {
    Ok(catalog.read(|s| s.table(template).is_some())?)
}

/// A page of a template's records, in `url` order, and whether more follow.
pub(crate) fn read_table(
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
