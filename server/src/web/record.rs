//! One record (`/NAME/TEMPLATE/record?url=`), and the same record as JSON, SOIF, RDF,
//! or one value as bytes.

use super::page::{
    catalog_of, encode_component, encode_str, guarded, html, json_body, render, Crumb, Params,
    WebError,
};
use super::results::{record_href, result_row};
use super::view::{self, safe_href};
use crate::error::RequestError;
use crate::state::{AppState, ClientAddr};
use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use minijinja::context;
use std::sync::Arc;

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
                let out = view::rdf_xml(&record).map_err(|e| {
                    WebError::Request(RequestError::Internal(format!("writing RDF/XML: {e}")))
                })?;
                return Ok(download(out, "application/rdf+xml", "record.rdf"));
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
        let repo = crate::config::repository_id(&st.config().oai, index, &name);
        let identifier = soif_codecs::oai::ids::identifier(&repo, tpl, &url);
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
                jsonld => super::jsonld::script_text(&record),
            },
        )?))
    })
    .await
}

pub(crate) fn download(bytes: Vec<u8>, content_type: &'static str, file: &'static str) -> Response {
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
