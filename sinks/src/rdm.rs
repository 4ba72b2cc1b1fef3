//! The `rdm` sink: records POSTed to an RDM catalog server as `rd-response` submissions.
//!
//! `--to rdm -o x-catalog://host:port/name` sends to `http://host:port/rdm/incoming` with
//! `Catalog-Service-ID: x-catalog://host:port/name` in each message's `@RDMHEADER`;
//! `-o http://host:port/` (or a full `…/rdm/incoming` URL) sends to the server's default
//! catalog. Each POST is one RDM message (`Content-Type: application/x-rdm`): an
//! `@RDMHEADER` with `RDM-Type: rd-response` and `RDM-Response-Interpret: 1000 FILE
//! objects` (or `N objects` when templates are mixed), then up to `--batch-size` records
//! (and at most [`MAX_BATCH_BYTES`] of SOIF) in canonical SOIF. Records inside a Harvest `@DELETE
//! { }` envelope (action `delete`) go in `rd-response-deleted` messages instead; the order
//! of upserts and deletions is kept, since a batch is sent whenever the kind changes.
//! The token (`--token` or `SOIF_TOKEN`) is sent as `Authorization: Bearer TOKEN`.
//! With `--gzip-posts` each body is gzip'd (`Content-Encoding: gzip`, which the note
//! lists as optional): SOIF text shrinks to about a third, which pays on links slower
//! than about 100 MB/s. It is off by default, because a catalog server other than `soif
//! serve` may not accept it.
//!
//! **What counts as stored.** A batch is stored only when the server says so: a 2xx reply
//! with `Content-Type: application/x-rdm` whose first object is an `@RDMHEADER` of
//! `RDM-Type: status-response` without `RDM-Error-Message` (what `soif serve` sends,
//! e.g. `RDM-Response-Interpret: 2 RDs stored in books`). Any other 2xx — a proxy or a
//! captive portal answering `200` with an HTML page, an empty body, another message —
//! stops the run: nothing of that batch is counted, and the summary's `out` is the
//! records of the batches the server acknowledged ([`Sink::stored`]).
//!
//! **Failures.** A connection error, a broken-off exchange, an HTTP 5xx, a `429` or a
//! `503` is retried as [`crate::http`] says (backoff, `Retry-After`), each retry reported
//! as a warning. Any other 4xx stops the run with the server's `RDM-Error-Message` (a
//! wrong token, a record the catalog refuses). The error of a stopped run says how many
//! records the catalog had stored before it. Retrying is safe: the server applies a
//! message whole or not at all, and every record is an upsert or a delete keyed on its
//! URL, so a batch that was stored although its reply was lost is only stored again.
//! Records without a URL (`-`) cannot be keyed and are rejected here, one by one, under
//! `--on-error`.

use crate::http::{Attempt, Failure, Poster, Reply};
use bytes::Bytes;
use soif_codecs::rdm::message::reply_error_message;
use soif_codecs::rdm::{Csid, RdmHeader, RdmType};
use soif_codecs::soif::encode_record;
use soif_codecs::{Action, Record};
use soif_pipeline::{Error, Sink, SinkError};
use std::time::Duration;

/// `[[sink]] format = "rdm"` / `--to rdm`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The catalog: `x-catalog://host:port/name` or an http(s) URL (required).
    pub output: Option<String>,
    /// Bearer token (the `SOIF_TOKEN` environment variable when absent).
    pub token: Option<String>,
    /// Records per POST (default [`DEFAULT_BATCH_RECORDS`]).
    pub batch_size: Option<usize>,
    /// Gzip each POST's body.
    pub gzip_posts: bool,
}

/// The RDM media type (the note's HTTP transport).
const RDM_CONTENT_TYPE: &str = "application/x-rdm";

/// Records per POST unless `--batch-size` says otherwise.
pub const DEFAULT_BATCH_RECORDS: usize = 1000;

/// The most SOIF bytes one POST carries (a batch is sent earlier when it reaches this).
pub const MAX_BATCH_BYTES: usize = 8 << 20;

/// Where the sink sends: the endpoint URL and the catalog id, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http://host:port/rdm/incoming`.
    pub endpoint: String,
    /// The catalog, for the header's `Catalog-Service-ID`.
    pub catalog: Option<Csid>,
}

impl Target {
    /// Parses `x-catalog://host:port/name`, `http(s)://host:port/` or a full endpoint URL.
    pub fn parse(output: &str) -> Result<Target, Error> {
        if Csid::is_csid(output) {
            let csid =
                Csid::parse(output).map_err(|e| Error::Config(format!("-o {output}: {e}")))?;
            return Ok(Target {
                endpoint: csid.endpoint(),
                catalog: Some(csid),
            });
        }
        if !crate::http::is_http(output) {
            return Err(Error::Config(format!(
                "rdm output {output:?}: expected x-catalog://host:port/name or an http(s):// URL"
            )));
        }
        let scheme_end = output.find("://").map_or(0, |i| i + 3);
        let endpoint = match output[scheme_end..].find('/') {
            None => format!("{output}/rdm/incoming"),
            Some(i) if output[scheme_end + i..] == *"/" => format!("{output}rdm/incoming"),
            Some(_) => output.to_string(),
        };
        Ok(Target {
            endpoint,
            catalog: None,
        })
    }
}

/// The `rdm` sink (see the module doc).
pub struct RdmSink {
    target: Target,
    token: Option<String>,
    batch_size: usize,
    poster: Poster,
    /// The pending batch's records, canonical SOIF.
    buf: Vec<u8>,
    pending: usize,
    /// The pending batch's template, while all its records share one (for the header's
    /// `RDM-Response-Interpret`).
    batch_template: Option<Bytes>,
    mixed_templates: bool,
    kind: RdmType,
    /// Gzip each POST's body.
    gzip: bool,
    /// Records sent (acknowledged by the server).
    sent: u64,
}

impl std::fmt::Debug for RdmSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmSink")
            .field("target", &self.target)
            .field("batch_size", &self.batch_size)
            .field("sent", &self.sent)
            .finish()
    }
}

impl RdmSink {
    /// A sink for `output` (see [`Target::parse`]).
    pub fn new(output: &str, token: Option<String>, batch_size: usize) -> Result<RdmSink, Error> {
        let target = Target::parse(output)?;
        let poster = Poster::new("rdm", true)?;
        Ok(RdmSink {
            target,
            token: token.filter(|t| !t.is_empty()),
            batch_size: batch_size.max(1),
            poster,
            buf: Vec::new(),
            pending: 0,
            batch_template: None,
            mixed_templates: false,
            kind: RdmType::RdResponse,
            gzip: false,
            sent: 0,
        })
    }

    /// Gzip each POST's body (`Content-Encoding: gzip`).
    pub fn with_gzip(mut self, gzip: bool) -> RdmSink {
        self.gzip = gzip;
        self
    }

    /// Sets the first retry's wait (tests use a short one).
    pub fn with_backoff(mut self, base: Duration) -> RdmSink {
        self.poster = self.poster.with_backoff(base);
        self
    }

    /// Where the sink sends.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Records the server has acknowledged.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Failed attempts that were retried.
    pub fn retried(&self) -> u64 {
        self.poster.retried()
    }

    fn message(&self) -> Vec<u8> {
        let mut head = RdmHeader::new(self.kind);
        head.catalog = self.target.catalog.clone();
        head.response_interpret = Some(self.interpret());
        let mut body = Vec::with_capacity(self.buf.len() + 256);
        encode_record(&head.to_record(), &mut body);
        body.extend_from_slice(&self.buf);
        body
    }

    /// The POST's body: the message, gzip'd when asked. Level 1: on 100 MB of generated
    /// records, 31 MB against level 6's 25 MB, in a third of the time (`gzip -1`: 1.9 s,
    /// `gzip -6`: 6.2 s), so compressing keeps up with the link it is meant for.
    fn body(&self) -> Result<Vec<u8>, Error> {
        let message = self.message();
        if !self.gzip {
            return Ok(message);
        }
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(
            Vec::with_capacity(message.len() / 3),
            flate2::Compression::fast(),
        );
        gz.write_all(&message)
            .and_then(|()| gz.finish())
            .map_err(|e| Error::io("rdm: compressing a POST", e))
    }

    /// The batch's `RDM-Response-Interpret`: the note's "how to interpret the response
    /// stream (e.g., 25 DOCUMENT objects)".
    fn interpret(&self) -> String {
        match &self.batch_template {
            Some(t) if !self.mixed_templates => {
                format!("{} {} objects", self.pending, String::from_utf8_lossy(t))
            }
            _ => format!("{} objects", self.pending),
        }
    }

    /// Sends the pending batch, retrying as the module doc says.
    fn flush(&mut self) -> Result<(), Error> {
        if self.pending == 0 {
            return Ok(());
        }
        let body = Bytes::from(self.body()?);
        let (endpoint, token, gzip) = (&self.target.endpoint, self.token.as_deref(), self.gzip);
        let sent = self.poster.post(
            &format!("the batch of {} records", self.pending),
            |client| {
                let mut req = client
                    .post(endpoint)
                    .header(reqwest::header::CONTENT_TYPE, RDM_CONTENT_TYPE)
                    .body(body.clone());
                if gzip {
                    req = req.header(reqwest::header::CONTENT_ENCODING, "gzip");
                }
                if let Some(t) = token {
                    req = req.bearer_auth(t);
                }
                req
            },
            judge,
        );
        match sent {
            Ok(()) => {}
            Err(Failure::Refused(m)) => {
                return Err(Error::Fatal(format!(
                    "rdm {}: the server refused {} {} records: {m} ({} records stored \
                     in the catalog before this)",
                    self.target.endpoint, self.kind, self.pending, self.sent
                )))
            }
            Err(Failure::GaveUp { attempts, last }) => {
                return Err(Error::Fatal(format!(
                    "rdm {}: giving up after {attempts} attempts: {last} ({} records stored \
                     in the catalog before this)",
                    self.target.endpoint, self.sent
                )))
            }
        }
        self.sent += self.pending as u64;
        self.pending = 0;
        self.batch_template = None;
        self.mixed_templates = false;
        self.buf.clear();
        Ok(())
    }
}

/// What a reply says about the batch (see the module doc).
fn judge(reply: &Reply) -> Attempt {
    let is_rdm = reply.is_type(RDM_CONTENT_TYPE);
    let header = is_rdm
        .then(|| soif_codecs::soif::decode_all(&reply.body, Default::default()))
        .and_then(|objects| objects.into_iter().next())
        .and_then(|first| first.ok())
        .and_then(|first| RdmHeader::from_record(&first).ok());
    let message = header.as_ref().and_then(|h| h.error_message.clone());
    let status = reply.status;
    if status.is_success() {
        return match (header, message) {
            (_, Some(m)) => Attempt::Refused(format!("HTTP {status}: {m}")),
            (Some(h), None) if h.rdm_type == RdmType::StatusResponse => Attempt::Done,
            (Some(h), None) => Attempt::Refused(format!(
                "HTTP {status} with an RDM {} instead of a status-response: the batch is not \
                 known to be stored",
                h.rdm_type
            )),
            (None, None) => Attempt::Refused(format!(
                "HTTP {status} with {}, not an RDM status-response: the batch is not known to \
                 be stored (a proxy or captive portal answering instead of the catalog \
                 server?)",
                match &reply.content_type {
                    Some(t) if is_rdm => format!("a {t} reply that holds no @RDMHEADER"),
                    Some(t) => format!("a {t} reply"),
                    None => "a reply without Content-Type".to_string(),
                }
            )),
        };
    }
    reply.failure(
        message
            .or_else(|| reply_error_message(&reply.body))
            .unwrap_or_else(|| "(no RDM-Error-Message)".into()),
    )
}

impl Sink for RdmSink {
    fn name(&self) -> &str {
        "rdm"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        if record.has_no_url() || record.url.is_empty() {
            return Err(SinkError::Rejected(
                "record has no URL (`-`); a catalog keys RDs on their URL".into(),
            ));
        }
        let kind = if record.action == Some(Action::Delete) {
            RdmType::RdResponseDeleted
        } else {
            RdmType::RdResponse
        };
        if kind != self.kind {
            self.flush()?;
            self.kind = kind;
        }
        encode_record(record, &mut self.buf);
        match &self.batch_template {
            None if self.pending == 0 => self.batch_template = Some(record.template.clone()),
            Some(t) if *t != record.template => self.mixed_templates = true,
            _ => {}
        }
        self.pending += 1;
        if self.pending >= self.batch_size || self.buf.len() >= MAX_BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.flush()
    }

    fn stored(&self) -> Option<u64> {
        Some(self.sent)
    }

    fn take_notices(&mut self) -> Vec<String> {
        self.poster.take_notices()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`super::judge`] of a reply made of these parts.
    fn judge(
        status: reqwest::StatusCode,
        content_type: Option<&str>,
        body: &[u8],
        retry_after: Option<Duration>,
    ) -> Attempt {
        super::judge(&Reply {
            url: "http://127.0.0.1/rdm/incoming".into(),
            status,
            content_type: content_type.map(str::to_string),
            body: body.to_vec(),
            retry_after,
            location: None,
        })
    }

    #[test]
    fn targets() {
        let t = Target::parse("x-catalog://127.0.0.1:8080/books").unwrap();
        assert_eq!(t.endpoint, "http://127.0.0.1:8080/rdm/incoming");
        assert_eq!(t.catalog.unwrap().name, "books");
        for (given, endpoint) in [
            ("http://h:1", "http://h:1/rdm/incoming"),
            ("http://h:1/", "http://h:1/rdm/incoming"),
            ("https://h/rdm/incoming", "https://h/rdm/incoming"),
        ] {
            let t = Target::parse(given).unwrap();
            assert_eq!(t.endpoint, endpoint);
            assert!(t.catalog.is_none());
        }
        assert!(Target::parse("catalog.db").is_err());
        assert!(Target::parse("x-catalog://h:notaport/x").is_err());
    }

    #[test]
    fn each_batch_says_how_to_interpret_it() {
        let mut sink = RdmSink::new("http://127.0.0.1:9/", None, 10).unwrap();
        for url in ["http://a/", "http://b/"] {
            sink.write(&Record::new("DOCUMENT", url)).unwrap();
        }
        let head = |sink: &RdmSink| {
            let msg = sink.message();
            let text = String::from_utf8_lossy(&msg).into_owned();
            text.lines()
                .find(|l| l.starts_with("RDM-Response-Interpret"))
                .map(str::to_string)
        };
        assert_eq!(
            head(&sink).as_deref(),
            Some("RDM-Response-Interpret{18}:\t2 DOCUMENT objects")
        );
        sink.write(&Record::new("FILE", "http://c/")).unwrap();
        assert_eq!(
            head(&sink).as_deref(),
            Some("RDM-Response-Interpret{9}:\t3 objects")
        );
    }

    #[test]
    fn a_gzip_body_inflates_to_the_message() {
        let mut sink = RdmSink::new("http://127.0.0.1:9/", None, 10)
            .unwrap()
            .with_gzip(true);
        for i in 0..5 {
            sink.write(
                &Record::new("DOCUMENT", format!("http://h/{i}")).with("Title", "x".repeat(500)),
            )
            .unwrap();
        }
        let body = sink.body().unwrap();
        assert_eq!(&body[..2], b"\x1f\x8b", "gzip magic");
        assert!(
            body.len() < sink.message().len() / 4,
            "{} bytes",
            body.len()
        );
        let mut inflated = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut inflated)
            .unwrap();
        assert_eq!(inflated, sink.message());
        let plain = sink.with_gzip(false);
        assert_eq!(
            plain.body().unwrap(),
            plain.message(),
            "without gzip: the message"
        );
    }

    #[test]
    fn only_an_rdm_status_response_without_error_means_stored() {
        use reqwest::StatusCode;
        let ok = b"@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{15}:\tstatus-response\n}\n<HTML>stored</HTML>\n";
        let rdm = Some("application/x-rdm");
        assert_eq!(judge(StatusCode::OK, rdm, ok, None), Attempt::Done);
        assert_eq!(
            judge(
                StatusCode::OK,
                Some("Application/X-RDM; charset=utf-8"),
                ok,
                None
            ),
            Attempt::Done
        );
        // A captive portal, a bare 204, an RDM body under another type, another message.
        for (status, ctype, body) in [
            (
                StatusCode::OK,
                Some("text/html"),
                &b"<html>Log in</html>"[..],
            ),
            (StatusCode::NO_CONTENT, None, &b""[..]),
            (StatusCode::OK, Some("text/plain"), &ok[..]),
            (StatusCode::OK, rdm, &b"<html></html>"[..]),
            (
                StatusCode::OK,
                rdm,
                &b"@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{11}:\trd-response\n}\n"[..],
            ),
        ] {
            let got = judge(status, ctype, body, None);
            assert!(matches!(got, Attempt::Refused(_)), "{ctype:?}: {got:?}");
        }
        let refused = b"@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{15}:\tstatus-response\nRDM-Error-Message{4}:\tfull\n}\n";
        assert_eq!(
            judge(StatusCode::OK, rdm, refused, None),
            Attempt::Refused("HTTP 200 OK: full".into())
        );
        let wait = Some(Duration::from_secs(1));
        assert!(matches!(
            judge(StatusCode::TOO_MANY_REQUESTS, None, b"", wait),
            Attempt::Retry(_, Some(w)) if w == Duration::from_secs(1)
        ));
        assert!(matches!(
            judge(StatusCode::SERVICE_UNAVAILABLE, rdm, refused, wait),
            Attempt::Retry(m, Some(_)) if m.contains("full")
        ));
        assert!(matches!(
            judge(StatusCode::BAD_GATEWAY, None, b"", wait),
            Attempt::Retry(_, None)
        ));
        assert!(matches!(
            judge(StatusCode::PAYLOAD_TOO_LARGE, rdm, refused, None),
            Attempt::Refused(_)
        ));
    }

    #[test]
    fn records_without_url_are_rejected_one_by_one() {
        let mut sink = RdmSink::new("http://127.0.0.1:9/", None, 10).unwrap();
        let e = sink.write(&Record::new("FILE", "-")).unwrap_err();
        assert!(matches!(e, SinkError::Rejected(_)));
        assert_eq!(sink.pending, 0);
    }
}
