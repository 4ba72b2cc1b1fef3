//! Why a request failed, and the HTTP status it gets.
//!
//! Every failure is answered with an RDM `status-response` whose `@RDMHEADER` carries the
//! reason in `RDM-Error-Message` (the note: "A string identifying the nature of the error
//! while processing the request"), followed by a short HTML 2.0 document saying the same
//! for people. [`RequestError::status`] picks the HTTP status that fits.

use axum::http::StatusCode;

/// A request the server could not carry out.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The message is not a well-formed RDM request (bad SOIF, unknown type, bad scope…).
    #[error("{0}")]
    Malformed(String),
    /// A well-formed request this server does not serve (a query language, a type).
    #[error("{0}")]
    Unsupported(String),
    /// The `Catalog-Service-ID` names a catalog this server does not have.
    #[error("no catalog named {0:?} on this server")]
    UnknownCatalog(String),
    /// A submission without the right `Authorization: Bearer` token.
    #[error("{0}")]
    Unauthorized(String),
    /// Submissions are disabled (the server was started without a token).
    #[error("submissions are disabled: the server was started without --token")]
    SubmissionsDisabled,
    /// The request body is larger than the server accepts.
    #[error("the request body is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    /// The request is well formed but asks for more than a limit of this server allows
    /// (keyword terms, `View-Order` keys, rows to sort; see docs/server.md, "Limits").
    #[error("{0}")]
    OverLimit(String),
    /// This client already has as many reads in flight as the server allows it.
    #[error("{0}")]
    TooManyRequests(String),
    /// The server (or the catalog) has no capacity for this read now; retry later.
    #[error("{0}")]
    Busy(String),
    /// A submission to a catalog served read-only.
    #[error("catalog {0} is served read-only (its database or file system is not writable)")]
    ReadOnly(String),
    /// The catalog could not be read or written (SQLite, I/O).
    #[error("{0}")]
    Internal(String),
}

impl RequestError {
    /// The HTTP status for this failure.
    pub fn status(&self) -> StatusCode {
        match self {
            RequestError::Malformed(_) => StatusCode::BAD_REQUEST,
            RequestError::Unsupported(_) => StatusCode::NOT_IMPLEMENTED,
            RequestError::UnknownCatalog(_) => StatusCode::NOT_FOUND,
            RequestError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            RequestError::SubmissionsDisabled => StatusCode::FORBIDDEN,
            RequestError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            RequestError::OverLimit(_) => StatusCode::BAD_REQUEST,
            RequestError::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            RequestError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            RequestError::ReadOnly(_) => StatusCode::FORBIDDEN,
            RequestError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<soif_codecs::rdm::RdmError> for RequestError {
    fn from(e: soif_codecs::rdm::RdmError) -> RequestError {
        RequestError::Malformed(e.to_string())
    }
}
