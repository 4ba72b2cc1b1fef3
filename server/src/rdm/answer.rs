//! Answers to RDM requests: the descriptions, the status document, and `rd-response`s
//! streamed from the catalog as it is read.

use super::reply::{blocking, csid_for, http_date, message, rdm_response, CHUNK, DESCRIPTION_TTL};
use super::request::check_request;
use crate::catalog::{Catalog, Flow, Query};
use crate::error::RequestError;
use crate::state::{AppState, ReadSlot};
use crate::status::{self, CatalogStatus, ServerStatus};
use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use soif_codecs::rdm::{
    QueryLanguage, RdmDate, RdmHeader, RdmQuery, RdmType, SchemaScope, ServerDescription,
    TaxonomyScope,
};
use soif_codecs::soif::encode_record;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How many sample RDs the server description carries.
pub(crate) const SAMPLES: usize = 3;

pub(crate) async fn answer(
    state: &AppState,
    head: RdmHeader,
    query: Option<RdmQuery>,
    host: &str,
    client: Option<IpAddr>,
) -> Result<Response, RequestError> {
    // Everything that needs no catalog first (the fuzz target drives this part too).
    let read = check_request(&state.config, &head, query.as_ref())?;
    let catalog = state.catalog(&head)?;
    let csid = csid_for(host, catalog.name());
    let scope = query.as_ref().and_then(|q| q.scope.clone());
    let later = SystemTime::now() + DESCRIPTION_TTL;
    match head.rdm_type {
        RdmType::StatusRequest => {
            let doc = status::status_document(&server_status(state, host).await?);
            let mut reply = RdmHeader::new(RdmType::StatusResponse);
            reply.catalog = Some(csid);
            Ok(message(
                StatusCode::OK,
                &reply,
                doc.as_bytes(),
                SystemTime::now(),
            ))
        }
        RdmType::ServerDescriptionRequest => {
            // It reads samples through the read connections: counted like a read.
            let _slot = state.reads.acquire(client, &state.config)?;
            let sd = server_description(state, &catalog, host).await?;
            let mut body = Vec::new();
            encode_record(&sd.to_record(), &mut body);
            let reply = RdmHeader::new(RdmType::ServerDescriptionResponse).with_catalog(csid);
            Ok(message(StatusCode::OK, &reply, &body, later))
        }
        RdmType::SchemaDescriptionRequest => {
            let scope = SchemaScope::parse(scope.as_deref().unwrap_or("defined SOIF-Attribute"))?;
            let schema = match &state.config.schema {
                Some(s) => s.clone(),
                None => {
                    let _slot = state.reads.acquire(client, &state.config)?;
                    let c = catalog.clone();
                    let started = RdmDate::from_system_time(state.started);
                    blocking(move || c.layout_schema(started)).await?
                }
            };
            let mut selected = schema.select(&scope)?;
            if let Some(v) = query.as_ref().and_then(|q| q.view.attributes.as_ref()) {
                selected.project(v);
            }
            let mut body = Vec::new();
            encode_record(&selected.to_record(), &mut body);
            let reply = RdmHeader::new(RdmType::SchemaDescriptionResponse).with_catalog(csid);
            Ok(message(StatusCode::OK, &reply, &body, later))
        }
        RdmType::TaxonomyDescriptionRequest => {
            let taxonomy = state.config.taxonomy.as_ref().ok_or_else(|| {
                RequestError::Unsupported(
                    "this server has no taxonomy (start it with --taxonomy FILE)".into(),
                )
            })?;
            let scope = TaxonomyScope::parse(scope.as_deref().unwrap_or("descendant ROOT"))?;
            let picked = taxonomy.select(&scope)?;
            let mut body = Vec::new();
            encode_record(&taxonomy.info().to_record(), &mut body);
            for c in picked {
                encode_record(&c.to_record(), &mut body);
            }
            let reply = RdmHeader::new(RdmType::TaxonomyDescriptionResponse).with_catalog(csid);
            Ok(message(StatusCode::OK, &reply, &body, later))
        }
        RdmType::RdRequest | RdmType::RdRequestDeleted => {
            let query = read.ok_or_else(|| {
                RequestError::Internal("an rd-request without its read plan".into())
            })?;
            let slot = state.reads.acquire(client, &state.config)?;
            let reply = RdmHeader::new(RdmType::RdResponse).with_catalog(csid);
            stream_rds(catalog, query, reply, state.config.body_idle_timeout, slot).await
        }
        other => Err(RequestError::Malformed(format!(
            "{other} is not a request this server answers"
        ))),
    }
}

pub(crate) enum Chunk {
    More(Bytes),
    Last(Bytes),
    Failed(RequestError),
}

/// Streams an `rd-response`: a blocking task reads the catalog and sends 64 KiB chunks
/// through a small channel (so a slow client slows the reading, nothing piles up). A
/// failure before the first chunk is an ordinary error reply; after it, the chunked body
/// is cut off, which the client sees as an incomplete response.
pub(crate) async fn stream_rds(
    catalog: Arc<Catalog>,
    query: Query,
    reply: RdmHeader,
    stall: Duration,
    slot: ReadSlot,
) -> Result<Response, RequestError> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Chunk>(4);
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        // Held while the catalog is read for this reply (the last chunks wait in the
        // channel and the socket).
        let _slot = slot;
        // A client that stops reading would hold one of the catalog's read connections
        // for good: after `stall` without progress the reply is cut off.
        let send = |chunk: Chunk| {
            rt.block_on(tokio::time::timeout(stall, tx.send(chunk)))
                .is_ok_and(|sent| sent.is_ok())
        };
        let mut buf = Vec::with_capacity(CHUNK + 4096);
        encode_record(&reply.to_record(), &mut buf);
        let header_len = buf.len();
        let result = catalog.query(&query, &mut |record| {
            encode_record(&record, &mut buf);
            if buf.len() >= CHUNK {
                let chunk = Bytes::from(std::mem::replace(
                    &mut buf,
                    Vec::with_capacity(CHUNK + 4096),
                ));
                if !send(Chunk::More(chunk)) {
                    // The client went away or stopped reading.
                    return Ok(Flow::Stop);
                }
            }
            Ok(Flow::Continue)
        });
        let last = match result {
            // The note's own example: "RDM-Type{11}: rd-response RDM-Error-Message{9}: 0
            // results". (Nothing was sent yet: the header is still alone in the buffer.)
            Ok(0) if buf.len() == header_len => {
                let mut head = Vec::new();
                encode_record(&reply.with_error("0 results").to_record(), &mut head);
                Chunk::Last(Bytes::from(head))
            }
            Ok(_) => Chunk::Last(Bytes::from(buf)),
            Err(e) => Chunk::Failed(e),
        };
        send(last);
    });
    let expires = SystemTime::now();
    match rx.recv().await {
        None => Err(RequestError::Internal("the catalog reader stopped".into())),
        Some(Chunk::Failed(e)) => Err(e),
        Some(Chunk::Last(all)) => {
            let n = all.len();
            Ok(rdm_response(
                StatusCode::OK,
                Body::from(all),
                expires,
                Some(n),
            ))
        }
        Some(Chunk::More(first)) => {
            let rest = futures::stream::unfold((rx, false), |(mut rx, done)| async move {
                if done {
                    return None;
                }
                match rx.recv().await {
                    Some(Chunk::More(b)) => Some((Ok(b), (rx, false))),
                    Some(Chunk::Last(b)) => Some((Ok(b), (rx, true))),
                    Some(Chunk::Failed(e)) => Some((Err(std::io::Error::other(e)), (rx, true))),
                    None => Some((
                        Err(std::io::Error::other("the catalog reader stopped")),
                        (rx, true),
                    )),
                }
            });
            let body =
                futures::stream::once(async move { Ok::<_, std::io::Error>(first) }).chain(rest);
            Ok(rdm_response(
                StatusCode::OK,
                Body::from_stream(body),
                expires,
                None,
            ))
        }
    }
}

pub(crate) async fn server_status(
    state: &AppState,
    host: &str,
) -> Result<ServerStatus, RequestError> {
    let mut catalogs = Vec::new();
    for (i, c) in state.catalogs.iter().enumerate() {
        let cat = c.clone();
        let overview = blocking(move || cat.overview()).await?;
        catalogs.push(CatalogStatus {
            csid: csid_for(host, c.name()).to_string(),
            default: i == 0,
            templates: overview
                .tables
                .into_iter()
                .map(|(t, rows)| {
                    (
                        String::from_utf8_lossy(&t.template).into_owned(),
                        t.table,
                        rows,
                    )
                })
                .collect(),
            last_run: overview.last_run,
        });
    }
    Ok(ServerStatus {
        version: env!("CARGO_PKG_VERSION"),
        started: http_date(state.started),
        uptime_seconds: state.started.elapsed().map(|d| d.as_secs()).unwrap_or(0),
        requests: state.requests.load(Ordering::Relaxed),
        failed_requests: state.failed.load(Ordering::Relaxed),
        records_submitted: state.submitted.load(Ordering::Relaxed),
        records_deleted: state.deleted.load(Ordering::Relaxed),
        catalogs,
        schema: state.config.schema.is_some(),
        taxonomy: state.config.taxonomy.as_ref().map(|t| t.info().id.clone()),
    })
}

/// The types this server answers or accepts.
/// (Submissions only when the server has a token; the taxonomy request only with one.)
pub fn supported_types(has_taxonomy: bool, submissions: bool) -> Vec<RdmType> {
    let mut v = vec![RdmType::RdRequest, RdmType::RdRequestDeleted];
    if submissions {
        v.extend([RdmType::RdResponse, RdmType::RdResponseDeleted]);
    }
    v.extend([
        RdmType::ServerDescriptionRequest,
        RdmType::SchemaDescriptionRequest,
    ]);
    if has_taxonomy {
        v.push(RdmType::TaxonomyDescriptionRequest);
    }
    v.push(RdmType::StatusRequest);
    v
}

pub(crate) async fn server_description(
    state: &AppState,
    catalog: &Arc<Catalog>,
    host: &str,
) -> Result<ServerDescription, RequestError> {
    let has_taxonomy = state.config.taxonomy.is_some();
    let mut languages = vec![
        QueryLanguage::Gatherer,
        QueryLanguage::SampleKeyword,
        QueryLanguage::SchemaBasic,
    ];
    if has_taxonomy {
        languages.push(QueryLanguage::TaxonomyBasic);
    }
    let mut sd = ServerDescription::new(
        supported_types(has_taxonomy, state.config.token.is_some()),
        languages,
        RdmDate::from_system_time(state.started),
        RdmDate::from_system_time(SystemTime::now() + DESCRIPTION_TTL),
    );
    sd.url = Some(csid_for(host, catalog.name()).to_string());
    sd.supported_catalogs = state
        .catalogs
        .iter()
        .map(|c| csid_for(host, c.name()))
        .collect();
    sd.description = Some(state.config.description.clone().unwrap_or_else(|| {
        format!(
            "soif catalog {} (Harvest/RDM resource descriptions)",
            catalog.name()
        )
    }));
    sd.maintainer = state.config.maintainer.clone();
    let c = catalog.clone();
    let samples = blocking(move || c.samples(SAMPLES)).await?;
    for (i, rd) in samples.iter().enumerate() {
        let mut soif = Vec::new();
        encode_record(rd, &mut soif);
        sd.samples.push(soif_codecs::Attribute::new(
            format!("RD-Sample-{}", i + 1),
            Bytes::from(soif),
        ));
    }
    Ok(sd)
}
