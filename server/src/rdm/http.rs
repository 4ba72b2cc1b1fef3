//! The RDM endpoint's handlers: `GET` and `POST` on [`RDM_PATH`], dispatching on the
//! RDM type.

use super::answer::answer;
use super::body::{body_reader, gzipped, BodyLimits, RdmBody};
use super::reply::{error_response, host_of, RDM_CONTENT_TYPE};
use super::request::parse_form;
use super::submit::{check_token, submit};
use crate::config::OPEN_HEADER_LIMIT;
use crate::error::RequestError;
use crate::state::{AppState, ClientAddr};
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap};
use axum::response::Response;
use axum::Extension;
use futures::StreamExt;
use soif_codecs::rdm::RdmType;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio_util::io::StreamReader;

/// Where RDM messages go (the note's Request-URI).
pub const RDM_PATH: &str = "/rdm/incoming";

/// Largest form-encoded POST body.
pub(crate) const MAX_FORM_BODY: usize = 64 << 10;

/// `GET /rdm/incoming?type=…`: a request as form parameters.
pub async fn get_incoming(
    State(state): State<Arc<AppState>>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let client = client.map(|Extension(ClientAddr(ip))| ip);
    state.requests.fetch_add(1, Ordering::Relaxed);
    let result = async {
        let query = query.ok_or_else(|| {
            RequestError::Malformed(
                "GET /rdm/incoming needs form parameters, e.g. ?type=status-request".into(),
            )
        })?;
        let (head, q) = parse_form(query.as_bytes())?;
        if !head.rdm_type.is_request() {
            return Err(RequestError::Malformed(format!(
                "{} is not a request; submissions are POSTed as application/x-rdm",
                head.rdm_type
            )));
        }
        answer(&state, head, q, &host_of(&headers), client).await
    }
    .await;
    result.unwrap_or_else(|e| error_response(&state, &e))
}

/// `POST /rdm/incoming`: a request or a submission, `application/x-rdm` or a form.
pub async fn post_incoming(
    State(state): State<Arc<AppState>>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    state.requests.fetch_add(1, Ordering::Relaxed);
    let client = client.map(|Extension(ClientAddr(ip))| ip);
    post(&state, &headers, body, client)
        .await
        .unwrap_or_else(|e| error_response(&state, &e))
}

pub(crate) async fn post(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    client: Option<IpAddr>,
) -> Result<Response, RequestError> {
    // The token is in the HTTP header: looked at before any of the body is read. Without
    // it the body may only be a small request, and a submission is refused as soon as its
    // @RDMHEADER has been read.
    let auth = check_token(state, headers);
    let wrong_token = auth.is_err() && headers.contains_key(header::AUTHORIZATION);
    let limits = if auth.is_ok() {
        BodyLimits {
            body: state.config.max_body,
            record: state.config.max_record_size,
        }
    } else {
        BodyLimits {
            body: state.config.max_open_body.min(state.config.max_body),
            record: OPEN_HEADER_LIMIT,
        }
    };
    let gzip = gzipped(headers)?;
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        if len > limits.body {
            // A wrong token is reported as such (the client's mistake to fix); without a
            // token only small requests are read.
            return Err(match auth {
                Err(e) if wrong_token => e,
                _ => RequestError::TooLarge { limit: limits.body },
            });
        }
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    let host = host_of(headers);
    if content_type.as_deref() == Some("application/x-www-form-urlencoded") {
        let bytes = axum::body::to_bytes(body, MAX_FORM_BODY)
            .await
            .map_err(|e| RequestError::Malformed(format!("reading the form body: {e}")))?;
        let (head, q) = parse_form(&bytes)?;
        if !head.rdm_type.is_request() {
            return Err(RequestError::Malformed(format!(
                "{} cannot be sent as a form; POST it as application/x-rdm",
                head.rdm_type
            )));
        }
        return answer(state, head, q, &host, client).await;
    }
    if let Some(ct) = content_type.as_deref() {
        if ct != RDM_CONTENT_TYPE {
            return Err(RequestError::Malformed(format!(
                "Content-Type {ct:?}: RDM messages are {RDM_CONTENT_TYPE}"
            )));
        }
    }
    let stream = body
        .into_data_stream()
        .map(|chunk| chunk.map_err(std::io::Error::other));
    let reader = body_reader(
        StreamReader::new(stream),
        gzip,
        limits,
        state.config.body_idle_timeout,
    );
    let mut body = RdmBody::new(reader, limits);
    let head = body.header().await?;
    match head.rdm_type {
        RdmType::RdResponse | RdmType::RdResponseDeleted => {
            // Refused on the header alone: nothing after the @RDMHEADER is read.
            auth?;
            submit(state, headers, head, body).await
        }
        t if t.is_request() => {
            let query = body.query().await?;
            answer(state, head, query, &host, client).await
        }
        other => Err(RequestError::Unsupported(format!(
            "this server does not accept {other} messages (it takes requests, rd-response \
             and rd-response-deleted)"
        ))),
    }
}
