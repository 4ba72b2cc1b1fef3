//! The `sparql` sink: records mirrored into a SPARQL store through SPARQL 1.1 Update.
//!
//! `--to sparql -o http://HOST:PORT/update` POSTs batches of updates to that SPARQL 1.1
//! Update endpoint (`Content-Type: application/sparql-update`, the protocol's "update via
//! POST directly"; Oxigraph's is `/update`, Fuseki's `/DATASET/update`). The token
//! (`--token` or `SOIF_TOKEN`), when there is one, is sent as `Authorization: Bearer`.
//!
//! **One graph per record.** A record's triples (the mapping of
//! [`crate::rdf::mapping`], docs/linked-data.md) go into a named graph of their own,
//! named by the record's URL ([`graph_iri`]: the URL itself when it is an IRI as it
//! stands, so the graph and the record's subject share the name; else `urn:x-soif:url:`
//! and the URL percent-encoded). Each record becomes `DROP SILENT GRAPH <g>` followed by
//! its triples in `INSERT DATA { GRAPH <g> { … } }`, so a changed record replaces what
//! an earlier run stored, and a deleted one (a Harvest `@DELETE { }` envelope, an OAI-PMH
//! record whose header says `deleted`: [`Action::Delete`]) is only `DROP SILENT GRAPH
//! <g>`. A batch is one request: the drops of its records, then one `INSERT DATA` with a
//! `GRAPH` block per record that is not deleted (the blank subjects of records whose URL
//! names no IRI are labelled apart by the mapping, `_:r1`, `_:r2`, …, so each stays its
//! record's):
//!
//! ```text
//! DROP SILENT GRAPH <http://a/> ;
//! DROP SILENT GRAPH <http://b/> ;
//! INSERT DATA {
//! GRAPH <http://a/> {
//! <http://a/> <http://purl.org/dc/terms/title> "A" .
//! }
//! }
//! ```
//!
//! A record whose URL is already in the pending batch sends the batch first, so the
//! drops-then-inserts order is the records' order. A batch holds at most `--batch-size`
//! records (default [`DEFAULT_BATCH_RECORDS`]) and [`MAX_BATCH_BYTES`] of text (for a
//! Graph Store load, below: [`DEFAULT_LOAD_RECORDS`] and [`MAX_LOAD_BYTES`]).
//!
//! **Loading through the Graph Store.** With `--graph-store URL` (a store's endpoint that
//! takes a POST of N-Quads and adds them, Oxigraph's `/store`) a batch is two requests
//! instead: the drops alone to the Update endpoint, then the records' triples as
//! N-Quads, each in its record's graph, POSTed to that URL. A store parses N-Quads much
//! faster than an `INSERT DATA`, and Oxigraph loads a POST to
//! `/store?no_transaction` with its bulk loader (docs/linked-data.md,
//! docs/performance.md#loading-a-sparql-store); a bulk loader works best on large
//! loads, hence the larger batches. A retry sends both again, drops first,
//! so a load broken off half-way is dropped before it is sent again.
//!
//! **What counts as stored.** A batch is stored when the endpoint answers it with a 2xx
//! (the protocol's success); only then are its records counted ([`Sink::stored`]). A
//! `429` or a `503` is retried after `Retry-After`, a connection error or another 5xx
//! with backoff ([`crate::http`]). A batch refused for what it holds (a `400`, `413` or
//! `422`) is split in halves, sent again, and so on down to the records refused, which
//! are handed back to the engine with the server's message ([`Sink::take_refused`]: each
//! is rejected under `--on-error`, as a record refused when written would be); a
//! redirect or another 4xx (a wrong endpoint or token) stops the run with the server's
//! message and the number of records stored before it.
//!
//! **One batch in flight.** A full batch is handed to a thread of its own, which sends
//! it (and splits it, if refused) while the sink converts the records of the next; when
//! that one is full too, the sink waits for the reply to the first before it hands it
//! over. So soif's work and the store's overlap, at most two batches are held (the one
//! in flight and the one being filled), and the requests still go one at a time, in the
//! records' order. What became of a batch (its records stored, refused, or an error that
//! stops the run) is taken when the next is handed over, or by [`Sink::finish`], which
//! returns only once the last batch is answered.
//!
//! **Exactly once.** Every request is idempotent (drop, then insert the whole graph), so
//! sending a batch again, or a whole run again after a `kill -9` under `--state`
//! (docs/nightly-runs.md), leaves the store as one clean run would. Records without a
//! URL (`-`) cannot be keyed and are rejected here, one by one, under `--on-error`.

use crate::http::{Attempt, Bearer, Failure, Poster, Reply};
use crate::rdf::mapping::{subject_iri, Mapping};
use bytes::Bytes;
use foldhash::HashSet;
use percent_encoding::{percent_encode, AsciiSet, NON_ALPHANUMERIC};
use soif_codecs::{Action, Record};
use soif_pipeline::{Error, Refused, Sink, SinkError};
use std::io::Write as _;
use std::ops::Range;
use std::time::Duration;

/// `[[sink]] format = "sparql"` / `--to sparql`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The SPARQL 1.1 Update endpoint, an http(s) URL (required).
    pub output: Option<String>,
    /// Bearer token (the `SOIF_TOKEN` environment variable when absent).
    pub token: Option<String>,
    /// Records per request (default [`DEFAULT_BATCH_RECORDS`], or
    /// [`DEFAULT_LOAD_RECORDS`] with a graph store).
    pub batch_size: Option<usize>,
    /// Where the triples are POSTed as N-Quads (see the module doc), when not in the
    /// update.
    pub graph_store: Option<String>,
}

/// The SPARQL 1.1 Protocol's media type of an update sent as the POST body.
const UPDATE_CONTENT_TYPE: &str = "application/sparql-update";

/// The media type of a Graph Store load.
const NQUADS_CONTENT_TYPE: &str = "application/n-quads";

/// Records per request unless `--batch-size` says otherwise.
pub const DEFAULT_BATCH_RECORDS: usize = 1000;

/// The most text (update, or N-Quads) one batch carries: a batch is sent earlier when it
/// reaches this.
pub const MAX_BATCH_BYTES: usize = 8 << 20;

/// Records per batch loaded through a Graph Store endpoint unless `--batch-size` says
/// otherwise: a bulk loader's cost per load is high (Oxigraph's takes about 1.8× the CPU
/// for loads of 600 records as for loads of 10,000).
pub const DEFAULT_LOAD_RECORDS: usize = 10_000;

/// The most N-Quads one batch loaded through a Graph Store endpoint carries. The sink
/// holds two batches at most (one in flight, one being filled): with 128 MiB the store
/// spent about as long on the generated 200 MB corpus as with 64 MiB (the second batch's
/// conversion is hidden behind the first's load either way), and soif held 321 MiB
/// instead of 181 MiB (docs/performance.md#loading-a-sparql-store).
pub const MAX_LOAD_BYTES: usize = 64 << 20;

/// The longest part of a refusal's body quoted in the error.
const MAX_QUOTED: usize = 500;

/// The prefix of the graph of a record whose URL is no IRI as it is.
pub const URL_GRAPH: &str = "urn:x-soif:url:";

/// The graph a record's triples go to, named by its URL: the record's subject when the
/// URL names an IRI ([`subject_iri`]), else [`URL_GRAPH`] followed by the URL with every
/// byte but ASCII letters, digits and `-._~` percent-encoded.
pub fn graph_iri(url: &[u8]) -> String {
    if let Some(iri) = subject_iri(url) {
        return iri.into_string();
    }
    const KEEP: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    format!("{URL_GRAPH}{}", percent_encode(url, KEEP))
}

/// One batch's text, built record by record (see the module doc): an update, or (for a
/// Graph Store load) the drops and the N-Quads apart. [`Batch::seal`] makes it the
/// [`Sealed`] batch that is sent.
#[derive(Debug, Default, Clone)]
pub struct Batch {
    /// Whether the triples are N-Quads lines for a Graph Store load.
    quads: bool,
    /// `DROP SILENT GRAPH <g> ;` lines.
    drops: Vec<u8>,
    /// The `GRAPH <g> { … }` blocks of the records not deleted, or their N-Quads.
    inserts: Vec<u8>,
    /// The graphs in the batch, so that a record seen twice sends the batch first.
    graphs: HashSet<String>,
    /// Where each record's text ends in `drops` and in `inserts`, so that part of the
    /// batch can be sent alone.
    ends: Vec<(usize, usize)>,
}

impl Batch {
    /// An empty batch for a Graph Store load: [`Batch::add`]'s `triples` are N-Quads
    /// lines in the record's graph, [`Sealed::update`] holds the drops only and
    /// [`Sealed::quads`] the triples.
    pub fn of_quads() -> Batch {
        Batch {
            quads: true,
            ..Batch::default()
        }
    }

    /// An empty batch of the same kind.
    fn empty_like(&self) -> Batch {
        Batch {
            quads: self.quads,
            ..Batch::default()
        }
    }

    /// Records in the batch.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The update text's size so far.
    pub fn bytes(&self) -> usize {
        self.drops.len() + self.inserts.len()
    }

    /// True when `graph` is in the batch already.
    pub fn has(&self, graph: &str) -> bool {
        self.graphs.contains(graph)
    }

    /// Adds a record: its graph dropped, then (unless it is a deletion) refilled with
    /// `triples`, N-Triples lines (N-Quads lines in `graph` for a batch
    /// [`Batch::of_quads`]).
    pub fn add(&mut self, graph: &str, deleted: bool, triples: &[u8]) {
        self.drops.extend_from_slice(b"DROP SILENT GRAPH <");
        self.drops.extend_from_slice(graph.as_bytes());
        self.drops.extend_from_slice(b"> ;\n");
        if !deleted && self.quads {
            self.inserts.extend_from_slice(triples);
        } else if !deleted {
            self.inserts.extend_from_slice(b"GRAPH <");
            self.inserts.extend_from_slice(graph.as_bytes());
            self.inserts.extend_from_slice(b"> {\n");
            self.inserts.extend_from_slice(triples);
            self.inserts.extend_from_slice(b"}\n");
        }
        self.graphs.insert(graph.to_string());
        self.ends.push((self.drops.len(), self.inserts.len()));
    }

    /// The batch as it is sent: its text no longer grows, and its N-Quads are sent
    /// (whole or in part) without a copy.
    pub fn seal(self) -> Sealed {
        Sealed {
            quads: self.quads,
            drops: self.drops,
            inserts: Bytes::from(self.inserts),
            ends: self.ends,
        }
    }
}

/// A batch ready to send ([`Batch::seal`]): the requests' bodies, for the whole batch or
/// for some of its records.
#[derive(Debug)]
pub struct Sealed {
    quads: bool,
    drops: Vec<u8>,
    inserts: Bytes,
    ends: Vec<(usize, usize)>,
}

impl Sealed {
    /// Records in the batch.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Where the text of records `records` lies in `drops` and in `inserts`.
    fn span(&self, records: &Range<usize>) -> (Range<usize>, Range<usize>) {
        let end_of = |i: usize| match i {
            0 => (0, 0),
            i => self.ends[i - 1],
        };
        let (start, end) = (end_of(records.start), end_of(records.end));
        (start.0..end.0, start.1..end.1)
    }

    /// The update request's body: the drops, then one `INSERT DATA` of the graphs (the
    /// drops alone for a batch [`Batch::of_quads`]).
    pub fn update(&self) -> Vec<u8> {
        self.update_of(0..self.len())
    }

    /// [`Sealed::update`] for records `records` of the batch only.
    pub fn update_of(&self, records: Range<usize>) -> Vec<u8> {
        let (drops, inserts) = self.span(&records);
        let inserts = &self.inserts[inserts];
        let mut out = Vec::with_capacity(drops.len() + inserts.len() + 32);
        out.extend_from_slice(&self.drops[drops]);
        if inserts.is_empty() || self.quads {
            // No insert: end on the last drop (a trailing `;` is allowed, but some
            // servers have refused it).
            while out.last().is_some_and(|b| b" ;\n".contains(b)) {
                out.pop();
            }
            out.push(b'\n');
        } else {
            out.extend_from_slice(b"INSERT DATA {\n");
            out.extend_from_slice(inserts);
            out.extend_from_slice(b"}\n");
        }
        out
    }

    /// The N-Quads of a batch [`Batch::of_quads`] (none when every record in it is a
    /// deletion).
    pub fn quads(&self) -> Option<Bytes> {
        self.quads_of(0..self.len())
    }

    /// [`Sealed::quads`] of records `records` of the batch only: a view of the batch's
    /// text, not a copy.
    pub fn quads_of(&self, records: Range<usize>) -> Option<Bytes> {
        let quads = self.span(&records).1;
        (self.quads && !quads.is_empty()).then(|| self.inserts.slice(quads))
    }
}

/// The `sparql` sink (see the module doc).
#[derive(Debug)]
pub struct SparqlSink {
    batch_size: usize,
    /// The most text a batch carries.
    max_bytes: usize,
    /// The batch being filled.
    batch: Batch,
    /// Its records, to hand back those the endpoint refuses.
    pending: Vec<Record>,
    mapping: Mapping,
    /// One record's triples as N-Triples (or N-Quads) lines, reused.
    triples: Vec<u8>,
    /// What sends the batches, while no batch is in flight.
    sender: Option<Sender>,
    /// The batch being sent, on a thread of its own; it hands the sender back.
    in_flight: Option<std::thread::JoinHandle<(Sender, Outcome)>>,
    /// The endpoint, for messages.
    endpoint: String,
    /// Records refused, not yet taken by the engine ([`Sink::take_refused`]).
    refused: Vec<Refused>,
    /// Retries not yet reported ([`Sink::take_notices`]).
    notices: Vec<String>,
    /// Records stored (the endpoint answered their batch with a 2xx).
    sent: u64,
}

/// Sends sealed batches (see [`Sender::send`]); moves to the thread of the batch in
/// flight and back.
#[derive(Debug)]
struct Sender {
    endpoint: String,
    /// Where the triples are POSTed as N-Quads, when not in the update.
    graph_store: Option<String>,
    token: Option<Bearer>,
    poster: Poster,
    /// Records stored before the batch in flight (for messages).
    stored: u64,
}

/// What became of a batch sent.
#[derive(Debug, Default)]
struct Outcome {
    /// Its records stored.
    stored: u64,
    /// Its records refused.
    refused: Vec<Refused>,
    /// Retries.
    notices: Vec<String>,
    /// Why the rest of it was not sent (the run stops).
    failed: Option<Error>,
}

/// `url` if it is an http(s) URL; else the error names it as the sink's `what`.
fn http_url(url: &str, what: &str, example: &str) -> Result<String, Error> {
    if !crate::http::is_http(url) {
        return Err(Error::Config(format!(
            "sparql {url:?}: expected the http(s):// URL of {what} (e.g. {example})"
        )));
    }
    reqwest::Url::parse(url).map_err(|e| Error::Config(format!("sparql {url:?}: {e}")))?;
    Ok(url.to_string())
}

impl SparqlSink {
    /// A sink POSTing to the SPARQL Update endpoint `endpoint` (an http(s) URL).
    pub fn new(
        endpoint: &str,
        token: Option<String>,
        batch_size: usize,
    ) -> Result<SparqlSink, Error> {
        let endpoint = http_url(
            endpoint,
            "a SPARQL Update endpoint",
            "http://localhost:7878/update",
        )?;
        Ok(SparqlSink {
            batch_size: batch_size.max(1),
            max_bytes: MAX_BATCH_BYTES,
            batch: Batch::default(),
            pending: Vec::new(),
            mapping: Mapping::new(),
            triples: Vec::new(),
            sender: Some(Sender {
                endpoint: endpoint.clone(),
                graph_store: None,
                token: Bearer::new(token),
                // A redirected POST may come back as a GET: refuse instead (the 3xx
                // names where the endpoint moved).
                poster: Poster::new("sparql", false)?,
                stored: 0,
            }),
            in_flight: None,
            endpoint,
            refused: Vec::new(),
            notices: Vec::new(),
            sent: 0,
        })
    }

    /// Loads the triples by POSTing them as N-Quads to `url` (see the module doc); the
    /// Update endpoint then only drops graphs.
    pub fn with_graph_store(mut self, url: &str) -> Result<SparqlSink, Error> {
        let url = http_url(
            url,
            "a Graph Store endpoint taking N-Quads",
            "http://localhost:7878/store",
        )?;
        if let Some(sender) = self.sender.as_mut() {
            sender.graph_store = Some(url);
        }
        self.batch = Batch::of_quads();
        self.max_bytes = MAX_LOAD_BYTES;
        Ok(self)
    }

    /// Sets the first retry's wait (tests use a short one).
    pub fn with_backoff(mut self, base: Duration) -> SparqlSink {
        if let Some(sender) = self.sender.take() {
            self.sender = Some(Sender {
                poster: sender.poster.with_backoff(base),
                ..sender
            });
        }
        self
    }

    /// Records the endpoint has stored.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Hands the pending batch to a thread that sends it, once the batch sent before
    /// has been answered: one batch in flight at a time, in the records' order, while
    /// the next is filled.
    fn flush(&mut self) -> Result<(), Error> {
        if self.batch.is_empty() {
            return Ok(());
        }
        self.wait()?;
        let mut sender = self
            .sender
            .take()
            .ok_or_else(|| Error::Fatal("sparql: no sender (an earlier batch failed)".into()))?;
        let next = self.batch.empty_like();
        let batch = std::mem::replace(&mut self.batch, next).seal();
        let records = std::mem::take(&mut self.pending);
        let thread = std::thread::Builder::new()
            .name("soif-sparql-send".into())
            .spawn(move || {
                let mut outcome = Outcome::default();
                if let Err(e) = sender.send(&batch, &records, 0..batch.len(), &mut outcome) {
                    outcome.failed = Some(e);
                }
                outcome.notices = sender.poster.take_notices();
                sender.stored += outcome.stored;
                (sender, outcome)
            })
            .map_err(|e| Error::io("sparql: starting the thread that sends batches", e))?;
        self.in_flight = Some(thread);
        Ok(())
    }

    /// Waits for the batch in flight, if any, and takes its outcome: its records
    /// counted as stored, those refused kept for the engine; an error if the rest of it
    /// could not be sent.
    fn wait(&mut self) -> Result<(), Error> {
        let Some(thread) = self.in_flight.take() else {
            return Ok(());
        };
        let (sender, outcome) = thread.join().map_err(|_| {
            Error::Fatal(format!(
                "sparql {}: the thread sending a batch panicked ({} records stored before it)",
                self.endpoint, self.sent
            ))
        })?;
        self.sent += outcome.stored;
        self.refused.extend(outcome.refused);
        self.notices.extend(outcome.notices);
        match outcome.failed {
            Some(e) => Err(e),
            None => {
                self.sender = Some(sender);
                Ok(())
            }
        }
    }
}

impl Sender {
    /// Sends records `records` of `batch` (whose records are `pending`). When the
    /// endpoint refuses them for what they hold ([`refuses_content`]), each half is sent
    /// on its own, down to single records, which are refused with the endpoint's reason
    /// ([`Sink::take_refused`]); any other refusal, or giving up, stops the run.
    fn send(
        &mut self,
        batch: &Sealed,
        pending: &[Record],
        records: Range<usize>,
        outcome: &mut Outcome,
    ) -> Result<(), Error> {
        let n = records.len();
        let update = Bytes::from(batch.update_of(records.clone()));
        let quads = batch.quads_of(records.clone());
        let sent = {
            let (endpoint, token) = (&self.endpoint, self.token.as_ref());
            let post = |url, content_type, body| request(url, content_type, body, token);
            let drop_then_update = post(endpoint, UPDATE_CONTENT_TYPE, &update);
            let load = match (&self.graph_store, &quads) {
                (Some(store), Some(quads)) => Some(post(store, NQUADS_CONTENT_TYPE, quads)),
                _ => None,
            };
            let mut steps: Vec<&dyn Fn(&reqwest::Client) -> reqwest::RequestBuilder> =
                vec![&drop_then_update];
            if let Some(load) = &load {
                steps.push(load);
            }
            // With two endpoints, a failure names the one it came from.
            let two = self.graph_store.is_some();
            let judge = |reply: &Reply| match judge(reply) {
                Attempt::Retry(m, wait) if two => {
                    Attempt::Retry(format!("{}: {m}", reply.url), wait)
                }
                Attempt::Refused(m) if two => Attempt::Refused(format!("{}: {m}", reply.url)),
                a => a,
            };
            let what = match n {
                1 => "the batch of 1 record".to_string(),
                n => format!("the batch of {n} records"),
            };
            self.poster.post_all(&what, &steps, judge)
        };
        let failed = |m: String| {
            Error::Fatal(format!(
                "sparql {}: {m} ({} records stored before this)",
                self.endpoint,
                self.stored + outcome.stored
            ))
        };
        match sent {
            Ok(()) => outcome.stored += n as u64,
            Err(Failure::Refused(m)) if refuses_content(self.poster.last_status()) => {
                if n == 1 {
                    outcome.refused.push(Refused {
                        record: pending[records.start].clone(),
                        reason: format!("the endpoint refused it: {m}"),
                    });
                } else {
                    let half = records.start + n / 2;
                    self.send(batch, pending, records.start..half, outcome)?;
                    self.send(batch, pending, half..records.end, outcome)?;
                }
            }
            Err(Failure::Refused(m)) => {
                return Err(failed(format!("the endpoint refused {n} records: {m}")))
            }
            Err(Failure::GaveUp { attempts, last }) => {
                return Err(failed(format!(
                    "giving up after {attempts} attempts: {last}"
                )))
            }
        }
        Ok(())
    }
}

/// What the sink keeps of a record until its batch is answered, to hand it back if the
/// endpoint refuses it: what a rejection reports and quarantines (its template, URL,
/// envelope, position and original bytes), without its attributes when it has its
/// original bytes (they are slices of those bytes, but their list is not).
fn kept(record: &Record) -> Record {
    match &record.raw {
        Some(raw) => Record {
            template: record.template.clone(),
            url: record.url.clone(),
            attributes: Vec::new(),
            action: record.action,
            position: record.position.clone(),
            raw: Some(raw.clone()),
            repairs: Vec::new(),
        },
        None => record.clone(),
    }
}

/// Whether a refusal with this status is about what the request holds, so that part of
/// it may be taken: `400 Bad Request` (an update or N-Quads the store will not take),
/// `413 Content Too Large`, `422 Unprocessable Content`. Any other (a redirect, `401`,
/// `403`, `404`, `405`, `415`: the endpoint or the credentials are wrong) refuses every
/// request alike.
fn refuses_content(status: Option<reqwest::StatusCode>) -> bool {
    use reqwest::StatusCode as S;
    matches!(
        status,
        Some(S::BAD_REQUEST | S::PAYLOAD_TOO_LARGE | S::UNPROCESSABLE_ENTITY)
    )
}

/// A POST of `body` to `url` (with the token, when there is one), built for each attempt.
fn request<'a>(
    url: &'a str,
    content_type: &'static str,
    body: &'a Bytes,
    token: Option<&'a Bearer>,
) -> impl Fn(&reqwest::Client) -> reqwest::RequestBuilder + 'a {
    move |client| {
        let req = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body.clone());
        Bearer::authorize(token, req)
    }
}

/// What a reply says about a batch: any 2xx is the protocol's success.
fn judge(reply: &Reply) -> Attempt {
    if reply.status.is_success() {
        return Attempt::Done;
    }
    if reply.status.is_redirection() {
        let to = reply.location.as_deref().unwrap_or("(no Location)");
        return reply.failure(format!("redirected to {to}: give the endpoint's own URL"));
    }
    let text = String::from_utf8_lossy(&reply.body);
    let text = text.trim();
    let mut end = text.len().min(MAX_QUOTED);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    reply.failure(match text {
        "" => "(empty reply)".to_string(),
        t if end < t.len() => format!("{}…", &t[..end]),
        t => t.to_string(),
    })
}

impl Sink for SparqlSink {
    fn name(&self) -> &str {
        "sparql"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        if record.has_no_url() || record.url.is_empty() {
            return Err(SinkError::Rejected(
                "record has no URL (`-`); its graph is named by its URL".into(),
            ));
        }
        let graph = graph_iri(&record.url);
        if self.batch.has(&graph) {
            self.flush()?;
        }
        let deleted = record.action == Some(Action::Delete);
        if !deleted {
            self.triples.clear();
            let out = &mut self.triples;
            let written = match self.batch.quads {
                false => self.mapping.record(record, |t| writeln!(out, "{t} .")),
                true => self
                    .mapping
                    .record(record, |t| writeln!(out, "{t} <{graph}> .")),
            };
            written.map_err(|e| SinkError::Fatal(Error::io("sparql: writing triples", e)))?;
        }
        self.batch.add(&graph, deleted, &self.triples);
        self.pending.push(kept(record));
        if self.batch.len() >= self.batch_size || self.batch.bytes() >= self.max_bytes {
            self.flush()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.flush()?;
        self.wait()
    }

    fn warnings(&self) -> u64 {
        self.mapping.warnings()
    }

    fn stored(&self) -> Option<u64> {
        Some(self.sent)
    }

    fn take_notices(&mut self) -> Vec<String> {
        let mut notices = self.mapping.take_notices();
        notices.append(&mut self.notices);
        notices
    }

    fn take_refused(&mut self) -> Vec<Refused> {
        std::mem::take(&mut self.refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::StatusCode;
    use soif_pipeline::engine::rejection_of;

    fn text(batch: Batch) -> String {
        String::from_utf8(batch.seal().update()).unwrap()
    }

    #[test]
    fn a_batch_drops_every_graph_then_inserts_those_not_deleted() {
        let mut b = Batch::default();
        b.add("http://a/", false, b"<http://a/> <http://p/> \"A\" .\n");
        b.add("http://b/", true, b"");
        b.add("http://c/", false, b"<http://c/> <http://p/> \"C\" .\n");
        assert_eq!(b.len(), 3);
        assert!(b.has("http://b/") && !b.has("http://d/"));
        assert!(!b.empty_like().has("http://a/") && b.empty_like().is_empty());
        let bytes = b.bytes();
        let sealed = b.seal();
        assert_eq!(sealed.len(), 3);
        assert_eq!(bytes + "INSERT DATA {\n}\n".len(), sealed.update().len());
        assert_eq!(
            String::from_utf8(sealed.update_of(1..2)).unwrap(),
            "DROP SILENT GRAPH <http://b/>\n",
            "a deletion alone"
        );
        assert_eq!(
            String::from_utf8(sealed.update()).unwrap(),
            "DROP SILENT GRAPH <http://a/> ;\nDROP SILENT GRAPH <http://b/> ;\n\
             DROP SILENT GRAPH <http://c/> ;\nINSERT DATA {\n\
             GRAPH <http://a/> {\n<http://a/> <http://p/> \"A\" .\n}\n\
             GRAPH <http://c/> {\n<http://c/> <http://p/> \"C\" .\n}\n}\n"
        );
    }

    #[test]
    fn a_graph_store_batch_keeps_the_drops_and_the_quads_apart() {
        let mut b = Batch::of_quads();
        b.add(
            "http://a/",
            false,
            b"<http://a/> <http://p/> \"A\" <http://a/> .\n",
        );
        b.add("http://b/", true, b"");
        b.add(
            "http://c/",
            false,
            b"<http://c/> <http://p/> \"C\" <http://c/> .\n",
        );
        assert!(b.empty_like().quads, "the next batch is a load too");
        let sealed = b.seal();
        assert_eq!(
            String::from_utf8(sealed.update()).unwrap(),
            "DROP SILENT GRAPH <http://a/> ;\nDROP SILENT GRAPH <http://b/> ;\n\
             DROP SILENT GRAPH <http://c/>\n"
        );
        assert_eq!(
            sealed.quads().as_deref(),
            Some(
                &b"<http://a/> <http://p/> \"A\" <http://a/> .\n\
                    <http://c/> <http://p/> \"C\" <http://c/> .\n"[..]
            )
        );
        assert_eq!(
            sealed.quads_of(1..3).as_deref(),
            Some(&b"<http://c/> <http://p/> \"C\" <http://c/> .\n"[..])
        );
        assert_eq!(sealed.quads_of(1..2), None, "a deletion: nothing to load");
        let mut b = Batch::of_quads();
        b.add("http://b/", true, b"");
        assert_eq!(b.seal().quads(), None, "nothing to load");
        assert_eq!(Batch::default().seal().quads(), None);
    }

    #[test]
    fn a_graph_store_sink_writes_each_triple_in_its_record_graph() {
        let mut sink = SparqlSink::new("http://127.0.0.1:9/update", None, 10)
            .unwrap()
            .with_graph_store("http://127.0.0.1:9/store")
            .unwrap();
        sink.write(&Record::new("FILE", "http://h/a").with("Title", "A"))
            .unwrap();
        let batch = std::mem::take(&mut sink.batch).seal();
        let quads = String::from_utf8(batch.quads().unwrap().to_vec()).unwrap();
        assert!(
            quads.contains("<http://h/a> <http://purl.org/dc/terms/title> \"A\" <http://h/a> .\n"),
            "{quads}"
        );
        assert!(
            quads.lines().all(|l| l.ends_with(" <http://h/a> .")),
            "{quads}"
        );
        assert!(SparqlSink::new("http://127.0.0.1:9/update", None, 10)
            .unwrap()
            .with_graph_store("store.nq")
            .is_err());
    }

    #[test]
    fn a_batch_of_deletions_only_ends_on_its_last_drop() {
        let mut b = Batch::default();
        b.add("http://a/", true, b"");
        b.add("http://b/", true, b"");
        assert_eq!(
            text(b),
            "DROP SILENT GRAPH <http://a/> ;\nDROP SILENT GRAPH <http://b/>\n"
        );
    }

    fn reply(status: StatusCode, body: &str) -> Reply {
        Reply {
            url: "http://127.0.0.1/update".into(),
            status,
            content_type: Some("text/plain".into()),
            body: body.as_bytes().to_vec(),
            retry_after: None,
            location: None,
        }
    }

    #[test]
    fn any_2xx_is_stored_a_refusal_quotes_the_server() {
        for s in [StatusCode::OK, StatusCode::NO_CONTENT] {
            assert_eq!(judge(&reply(s, "")), Attempt::Done);
        }
        assert_eq!(
            judge(&reply(
                StatusCode::BAD_REQUEST,
                " Parser error at line 3 \n"
            )),
            Attempt::Refused("HTTP 400 Bad Request: Parser error at line 3".into())
        );
        let long = "é".repeat(400);
        let Attempt::Refused(m) = judge(&reply(StatusCode::BAD_REQUEST, &long)) else {
            panic!()
        };
        assert!(m.ends_with('…') && m.len() < 600, "{m}");
        assert!(matches!(
            judge(&reply(StatusCode::SERVICE_UNAVAILABLE, "")),
            Attempt::Retry(m, None) if m.ends_with("(empty reply)")
        ));
        let mut moved = reply(StatusCode::MOVED_PERMANENTLY, "");
        moved.location = Some("https://h/update".into());
        assert_eq!(
            judge(&moved),
            Attempt::Refused(
                "HTTP 301 Moved Permanently: redirected to https://h/update: give the \
                 endpoint's own URL"
                    .into()
            )
        );
    }

    #[test]
    fn a_graph_is_named_by_the_url_or_its_percent_encoding() {
        assert_eq!(graph_iri(b"http://h/a?b=c#d"), "http://h/a?b=c#d");
        // As the mapping makes the subject.
        assert_eq!(graph_iri(b"http://h/a b"), "http://h/a%20b");
        assert_eq!(graph_iri(b"no-scheme\xff"), "urn:x-soif:url:no-scheme%FF");
        assert_eq!(graph_iri(b"x y"), "urn:x-soif:url:x%20y");
        assert_eq!(graph_iri(b"ftp://h/\xff"), "ftp://h/%FF");
        for url in [&b"http://h/a b"[..], b"\xff\xfe", b"a<b>"] {
            assert!(oxrdf::NamedNode::new(graph_iri(url)).is_ok());
        }
        // A graph has the name of the record's subject whenever that is an IRI.
        for url in [
            "http://h/é",
            "http://h/a b",
            "http://[::1]:80/x y#a#b",
            "mailto:a@b",
        ] {
            let subject = Mapping::new().subject(&Record::new("FILE", url));
            assert_eq!(
                subject.to_string(),
                format!("<{}>", graph_iri(url.as_bytes()))
            );
        }
    }

    #[test]
    fn a_record_becomes_its_graph_a_deletion_drops_it() {
        let mut sink = SparqlSink::new("http://127.0.0.1:9/update", None, 10).unwrap();
        sink.write(&Record::new("FILE", "http://h/a").with("Title", "A \"quoted\"\nline"))
            .unwrap();
        let mut gone = Record::new("FILE", "http://h/b");
        gone.action = Some(Action::Delete);
        sink.write(&gone).unwrap();
        let text = String::from_utf8(sink.batch.clone().seal().update()).unwrap();
        assert!(text.starts_with(
            "DROP SILENT GRAPH <http://h/a> ;\nDROP SILENT GRAPH <http://h/b> ;\nINSERT DATA {\nGRAPH <http://h/a> {\n"
        ), "{text}");
        assert!(
            text.contains(
                "<http://h/a> <http://purl.org/dc/terms/title> \"A \\\"quoted\\\"\\nline\" .\n"
            ),
            "{text}"
        );
        assert!(!text.contains("GRAPH <http://h/b> {"), "{text}");
        // The same URL again sends the pending batch first, and goes into the next
        // batch meanwhile; the batch sent fails to connect (after retries that the short
        // backoff keeps quick), which the sink says when it next sends, or finishes.
        let mut sink = sink.with_backoff(Duration::from_millis(1));
        sink.write(&Record::new("FILE", "http://h/a")).unwrap();
        assert_eq!(sink.batch.len(), 1);
        let e = sink.finish().unwrap_err().to_string();
        assert!(e.contains("giving up after 7 attempts"), "{e}");
        assert!(e.ends_with("(0 records stored before this)"), "{e}");
        assert_eq!(sink.sent(), 0);
    }

    #[test]
    fn a_record_kept_for_its_reply_is_rejected_as_the_record_itself() {
        let input = b"@FILE { http://h/a\nTitle{1}:\tA\nAuthor{1}:\tB\n}\n";
        let decoded = soif_codecs::soif::decode_all(input, Default::default());
        let record = decoded[0].as_ref().unwrap();
        let slim = kept(record);
        assert!(slim.raw.is_some() && slim.attributes.is_empty());
        let (a, b) = (
            rejection_of(record, "refused"),
            rejection_of(&slim, "refused"),
        );
        assert_eq!(
            (a.message, a.position, a.raw),
            (b.message, b.position, b.raw)
        );
        // Without its original bytes, a record is kept whole (a rejection encodes it).
        let built = Record::new("FILE", "http://h/b").with("Title", "B");
        assert_eq!(kept(&built), built);
    }

    #[test]
    fn the_output_must_be_an_http_url() {
        for bad in ["store.nt", "ftp://h/update", "http://[::1/update"] {
            assert!(SparqlSink::new(bad, None, 10).is_err(), "{bad}");
        }
        assert!(SparqlSink::new("HTTP://127.0.0.1:9/update", None, 10).is_ok());
    }

    #[test]
    fn records_without_url_are_rejected_one_by_one() {
        let mut sink = SparqlSink::new("http://127.0.0.1:9/update", None, 10).unwrap();
        let e = sink.write(&Record::new("FILE", "-")).unwrap_err();
        assert!(matches!(e, SinkError::Rejected(_)));
        assert!(sink.batch.is_empty());
    }
}
