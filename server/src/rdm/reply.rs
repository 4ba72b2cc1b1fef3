//! RDM replies: `application/x-rdm` messages with their `Expires` header, error replies
//! (a `status-response` with `RDM-Error-Message`), and the catalog service ID a reply
//! names.

use crate::error::RequestError;
use crate::state::AppState;
use crate::status::{self};
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use soif_codecs::rdm::{Csid, RdmHeader, RdmType};
use soif_codecs::soif::encode_record;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

/// The RDM content type.
pub const RDM_CONTENT_TYPE: &str = "application/x-rdm";

/// Size of the chunks an `rd-response` is streamed in.
pub(crate) const CHUNK: usize = 64 << 10;

/// How long descriptions may be cached (`SD-Expires`, `Expires`).
pub(crate) const DESCRIPTION_TTL: Duration = Duration::from_secs(3600);

pub(crate) fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

pub(crate) fn rdm_response(
    status: StatusCode,
    body: Body,
    expires: SystemTime,
    length: Option<usize>,
) -> Response {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(RDM_CONTENT_TYPE),
    );
    if let Ok(v) = HeaderValue::from_str(&http_date(expires)) {
        h.insert(header::EXPIRES, v);
    }
    if let Some(n) = length {
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    r
}

/// A complete message: a header then body objects (or raw body bytes).
pub(crate) fn message(
    status: StatusCode,
    head: &RdmHeader,
    body: &[u8],
    expires: SystemTime,
) -> Response {
    let mut out = Vec::with_capacity(256 + body.len());
    encode_record(&head.to_record(), &mut out);
    out.extend_from_slice(body);
    let n = out.len();
    rdm_response(status, Body::from(out), expires, Some(n))
}

pub(crate) fn error_response(state: &AppState, e: &RequestError) -> Response {
    state.failed.fetch_add(1, Ordering::Relaxed);
    let head = RdmHeader::new(RdmType::StatusResponse).with_error(e.to_string());
    let doc = status::message_document("RDM request failed", &e.to_string());
    let mut r = message(e.status(), &head, doc.as_bytes(), SystemTime::now());
    if matches!(e, RequestError::Unauthorized(_)) {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"rdm\""),
        );
    }
    r
}

pub(crate) fn host_of(headers: &HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or("localhost")
        .to_string()
}

pub(crate) fn csid_for(host: &str, name: &str) -> Csid {
    Csid::parse(&format!("x-catalog://{host}/{name}"))
        .unwrap_or_else(|_| Csid::new("localhost", None, name))
}

pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RequestError> + Send + 'static,
) -> Result<T, RequestError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RequestError::Internal(format!("a catalog task failed: {e}")))?
}
