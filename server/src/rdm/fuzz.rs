//! The request decoding without a network or a catalog, for the fuzz target.

use super::body::{body_reader, BodyLimits, RdmBody};
use super::request::{check_request, check_version, parse_form};
use crate::catalog::Query;
use crate::config::{ServerConfig, OPEN_HEADER_LIMIT};
use crate::error::RequestError;
use bytes::Bytes;
use soif_codecs::rdm::RdmType;
use tokio_util::io::StreamReader;

thread_local! {
    static DECODE_RUNTIME: Option<tokio::runtime::Runtime> =
        tokio::runtime::Builder::new_current_thread().enable_time().build().ok();
}

/// Runs the server's request decoding over `data` without a network or a catalog: the
/// fuzz target `server_request` (see `fuzz/`). `data[0]` picks the path: bits 0–1 a GET
/// query string (0), a form-encoded POST (1) or an `application/x-rdm` POST (2, 3); bit 2
/// whether the POST carries the right token; bit 3 whether its body is gzip'd; bits 4–7
/// the size of the pieces the body arrives in. The rest is the query string or body.
/// Request bodies go through the same reader, limits, decoder and message reader as
/// `POST /rdm/incoming`, requests through [`check_request`]; a submission's RDs are read
/// to the end (or refused after its header without the token).
pub fn decode_request(data: &[u8]) -> Result<Option<Query>, RequestError> {
    let Some((&flags, rest)) = data.split_first() else {
        return Err(RequestError::Malformed("empty".into()));
    };
    let config = ServerConfig {
        // Small limits, so that the limit paths are reached too.
        max_body: 256 << 10,
        max_record_size: 64 << 10,
        max_open_body: 32 << 10,
        ..ServerConfig::default()
    };
    match flags & 3 {
        0 | 1 => {
            let (head, q) = parse_form(rest)?;
            if !head.rdm_type.is_request() {
                return Err(RequestError::Malformed("not a request".into()));
            }
            check_request(&config, &head, q.as_ref())
        }
        _ => {
            let authorized = flags & 4 != 0;
            let gzip = flags & 8 != 0;
            let piece = 1 + usize::from(flags >> 4) * 97;
            DECODE_RUNTIME.with(|rt| {
                let rt = rt
                    .as_ref()
                    .ok_or_else(|| RequestError::Internal("no runtime".into()))?;
                rt.block_on(decode_rdm_body(&config, rest, authorized, gzip, piece))
            })
        }
    }
}

pub(crate) async fn decode_rdm_body(
    config: &ServerConfig,
    data: &[u8],
    authorized: bool,
    gzip: bool,
    piece: usize,
) -> Result<Option<Query>, RequestError> {
    use tokio::io::AsyncReadExt;
    let bytes = if gzip {
        let mut out = Vec::new();
        async_compression::tokio::bufread::GzipEncoder::new(data)
            .read_to_end(&mut out)
            .await
            .map_err(|e| RequestError::Internal(e.to_string()))?;
        out
    } else {
        data.to_vec()
    };
    let limits = if authorized {
        BodyLimits {
            body: config.max_body,
            record: config.max_record_size,
        }
    } else {
        BodyLimits {
            body: config.max_open_body,
            record: OPEN_HEADER_LIMIT,
        }
    };
    let chunks: Vec<std::io::Result<Bytes>> = bytes
        .chunks(piece.max(1))
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let reader = body_reader(
        StreamReader::new(futures::stream::iter(chunks)),
        gzip,
        limits,
        config.body_idle_timeout,
    );
    let mut body = RdmBody::new(reader, limits);
    let head = body.header().await?;
    match head.rdm_type {
        RdmType::RdResponse | RdmType::RdResponseDeleted => {
            if !authorized {
                return Err(RequestError::Unauthorized("no token".into()));
            }
            check_version(&head)?;
            while body.next_rd().await?.is_some() {}
            Ok(None)
        }
        t if t.is_request() => {
            let query = body.query().await?;
            check_request(config, &head, query.as_ref())
        }
        other => Err(RequestError::Unsupported(other.to_string())),
    }
}
