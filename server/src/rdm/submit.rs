//! Submissions (`rd-response`, `rd-response-deleted`): the bearer token, then the body
//! spooled whole and written in one transaction.

use super::body::RdmBody;
use super::reply::{csid_for, host_of, message};
use super::request::check_version;
use crate::catalog::Submission;
use crate::error::RequestError;
use crate::spool::Spool;
use crate::state::AppState;
use crate::status::{self};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use soif_codecs::rdm::{RdmHeader, RdmType};
use soif_codecs::Record;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

pub(crate) fn check_token(state: &AppState, headers: &HeaderMap) -> Result<(), RequestError> {
    let Some(expected) = &state.config.token else {
        return Err(RequestError::SubmissionsDisabled);
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| {
            RequestError::Unauthorized(
                "submissions need an Authorization: Bearer <token> header".into(),
            )
        })?
        .as_bytes();
    let token = bearer_token(given).ok_or_else(|| {
        RequestError::Unauthorized("the Authorization header is not `Bearer <token>`".into())
    })?;
    // Compared in time independent of where the first difference is.
    let expected = expected.as_bytes();
    let mut diff = u8::from(token.len() != expected.len());
    for (i, &b) in expected.iter().enumerate() {
        diff |= b ^ token.get(i).copied().unwrap_or(0);
    }
    if diff != 0 {
        return Err(RequestError::Unauthorized("wrong token".into()));
    }
    Ok(())
}

/// The credentials of an `Authorization: Bearer TOKEN` header: the scheme is matched
/// without regard to case (RFC 7235: `BEARER` is `Bearer`), one or more spaces follow it.
pub(crate) fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let value = value.trim_ascii();
    let split = value.iter().position(|&b| b == b' ' || b == b'\t')?;
    let (scheme, rest) = value.split_at(split);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    Some(rest.trim_ascii_start()).filter(|t| !t.is_empty())
}

pub(crate) enum Msg {
    Rd(Record),
    Fail(RequestError),
    End,
}

pub(crate) async fn submit(
    state: &AppState,
    headers: &HeaderMap,
    head: RdmHeader,
    mut body: RdmBody,
) -> Result<Response, RequestError> {
    // Before reading any RD: a refused submission reads and writes nothing more.
    check_token(state, headers)?;
    check_version(&head)?;
    let catalog = state.catalog(&head)?;
    if catalog.read_only() {
        return Err(RequestError::ReadOnly(catalog.name().to_string()));
    }
    let kind = if head.rdm_type == RdmType::RdResponseDeleted {
        Submission::Delete
    } else {
        Submission::Upsert
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Msg>(64);
    let writer = {
        let catalog = catalog.clone();
        tokio::task::spawn_blocking(move || {
            // The whole body first (see `spool`): the catalog's write lock is held only
            // while a complete submission is applied, never while a client sends.
            let mut spool = Spool::new();
            loop {
                match rx.blocking_recv() {
                    Some(Msg::Rd(r)) => spool.push(&r)?,
                    Some(Msg::Fail(e)) => return Err(e),
                    Some(Msg::End) => break,
                    // The request went away before its end: write nothing.
                    None => {
                        return Err(RequestError::Malformed(
                            "the request body ended early".into(),
                        ))
                    }
                }
            }
            let mut records = spool.reader()?;
            catalog.submit(kind, &mut || records.next_record())
        })
    };
    loop {
        let msg = match body.next_rd().await {
            Ok(None) => Msg::End,
            Ok(Some(rd)) => Msg::Rd(rd),
            Err(e) => Msg::Fail(e),
        };
        let last = !matches!(msg, Msg::Rd(_));
        // A closed channel means the writer stopped on an error, which it returns below.
        if tx.send(msg).await.is_err() || last {
            break;
        }
    }
    drop(tx);
    let counts = writer
        .await
        .map_err(|e| RequestError::Internal(format!("the catalog writer failed: {e}")))??;
    state
        .submitted
        .fetch_add(counts.upserted, Ordering::Relaxed);
    state.deleted.fetch_add(counts.deleted, Ordering::Relaxed);
    let text = match (kind, counts.deleted) {
        (Submission::Upsert, 0) => format!("{} RDs stored in {}", counts.upserted, catalog.name()),
        // An rd-response may carry @DELETE { } envelopes.
        (Submission::Upsert, d) => format!(
            "{} RDs stored in {}, {d} deleted",
            counts.upserted,
            catalog.name()
        ),
        (Submission::Delete, d) => format!("{d} RDs deleted from {}", catalog.name()),
    };
    let mut reply = RdmHeader::new(RdmType::StatusResponse);
    reply.catalog = Some(csid_for(&host_of(headers), catalog.name()));
    reply.response_interpret = Some(text.clone());
    let doc = status::message_document("RDM submission accepted", &text);
    Ok(message(
        StatusCode::OK,
        &reply,
        doc.as_bytes(),
        SystemTime::now(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_matched_without_regard_to_case() {
        assert_eq!(bearer_token(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"  bEaReR \t abc "), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"Basic abc"), None);
        assert_eq!(bearer_token(b"Bearer"), None);
        assert_eq!(bearer_token(b"Bearer   "), None);
    }
}
