//! The RDM protocol: `GET` and `POST /rdm/incoming` (axum), dispatching on the RDM type.
//!
//! | request (`RDM-Type`)            | reply                                              |
//! |---------------------------------|----------------------------------------------------|
//! | `rd-request`                    | `rd-response`: the RDs (gatherer `all` / `since DATE`, or `sample-keyword-ql` with `Score`), through the view |
//! | `rd-request-deleted`            | `rd-response`: one RD per remembered deletion (`Last-Modified` = when) |
//! | `server-description-request`    | `server-description-response`: one `@RDMSERVER`    |
//! | `schema-description-request`    | `schema-description-response`: `@SCHEMA` (schema-basic `defined ATTR`) |
//! | `taxonomy-description-request`  | `taxonomy-description-response`: `@TAXONOMY` + `@CLASSIFICATION`s (taxonomy-basic) |
//! | `status-request`                | `status-response`: an HTML 2.0 document            |
//! | `rd-response` (POST, token)     | `status-response`: the RDs were stored             |
//! | `rd-response-deleted` (POST, token) | `status-response`: the RDs were deleted        |
//!
//! Every reply is `Content-Type: application/x-rdm` with an `Expires` header. Replies of
//! known size have a `Content-Length`; an `rd-response` larger than one chunk (64 KiB) is
//! streamed with chunked transfer encoding as the catalog is read, never held whole. A
//! failure is a `status-response` whose `@RDMHEADER` has `RDM-Error-Message`, with the
//! HTTP status of [`RequestError::status`](crate::error::RequestError::status).
//!
//! POST bodies are decoded while they arrive (the SOIF decoder over the body stream), are
//! limited to [`ServerConfig::max_body`](crate::config::ServerConfig::max_body) bytes (sent, and inflated when the body is
//! `Content-Encoding: gzip`) and [`ServerConfig::max_record_size`](crate::config::ServerConfig::max_record_size) per object, and may also
//! be `application/x-www-form-urlencoded` (the GET parameters).
//! A submission is written in one transaction once its whole body has been read (and
//! spooled, see [`crate::spool`]): a body that breaks off or holds a bad object writes
//! nothing, and a slow client never holds the catalog's write lock.
//!
//! The bearer token is looked at before any of a body is read: without it a body may only
//! be a small request ([`ServerConfig::max_open_body`](crate::config::ServerConfig::max_open_body), its header within
//! [`OPEN_HEADER_LIMIT`](crate::config::OPEN_HEADER_LIMIT)) and a submission is refused once its `@RDMHEADER` is read. What
//! a client can hold is bounded by the other limits of [`ServerConfig`](crate::config::ServerConfig) (keyword terms,
//! `View-Order` keys and rows, reads in flight per client address and in all, the wait for
//! a read connection, the request-head and stall timeouts, connections); every limit, its
//! default and what exceeding it gets are listed in docs/server.md ("Limits").
//!
//! Its parts: `http` (the handlers), `request` (the checks a request needs before any
//! catalog is read), `answer` (the replies to requests, `rd-response`s streamed),
//! `submit` (token-checked submissions), `body` (a POST body read within its limits and
//! decoded as it arrives), `reply` (RDM messages and error replies), `fuzz` (the request
//! decoding without a network).

mod answer;
mod body;
mod fuzz;
mod http;
mod reply;
mod request;
mod submit;

pub use answer::supported_types;
pub use body::{BodyLimits, RdmBody};
pub use fuzz::decode_request;
pub use http::{get_incoming, post_incoming, RDM_PATH};
pub use reply::RDM_CONTENT_TYPE;
pub use request::check_request;
