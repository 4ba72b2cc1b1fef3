//! The OAI-PMH 2.0 provider: every catalog is a repository, at `/oai` (the default
//! catalog) and `/oai/NAME`, `GET` or `POST` (form-encoded), `text/xml; charset=utf-8`.
//!
//! - all six verbs; `Identify` gives the `baseURL` (from `--public-url`, else the
//!   request's `Host`), the earliest datestamp, `deletedRecord` `persistent`, second
//!   granularity, an `oai-identifier` description and the admin e-mail (`--admin-email`);
//! - metadata formats `oai_dc` and `soif` ([`soif_codecs::oai::write`]); one set per
//!   template; identifiers `oai:REPOSITORY-ID:TEMPLATE/URL` ([`soif_codecs::oai::ids`]);
//! - datestamps are the catalog's (`soif_store::datestamps`): when a record last
//!   changed, or when it was deleted (deletions are `status="deleted"` headers, kept for
//!   ever);
//! - lists come a page at a time (`--oai-page-size`, default [`DEFAULT_PAGE_SIZE`](crate::config::DEFAULT_PAGE_SIZE)), read
//!   from SQLite page by page, with stateless, authenticated resumption tokens
//!   ([`token`]);
//! - every protocol error with its code, and the `<request>` element as section 3.2 says
//!   ([`args`]).
//!
//! The server's limits apply: each request takes one of the client's read slots
//! (`--max-reads-per-client`, `--max-reads`) and one of the catalog's read connections
//! (`--read-wait`), a form body is at most 64 KiB and must arrive within
//! `--stall-timeout`, and the connection limits and timeouts are those of every request.
//!
//! ```text
//! $ curl 'http://127.0.0.1:8080/oai?verb=ListRecords&metadataPrefix=oai_dc&set=DOCUMENT'
//! ```

pub mod args;
pub mod token;

use crate::catalog::Catalog;
use crate::error::RequestError;
use crate::state::{AppState, ClientAddr};
use args::{Args, OaiError, Verb};
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use soif_codecs::oai::{ids, write, OAI_DC_NS, OAI_DC_XSD, SOIF_NS, SOIF_XSD};
use soif_codecs::rules::text::escape_text;
use soif_store::datestamps::{self, Entry, Window};
use soif_store::SqliteStore;
use std::sync::Arc;
use std::time::Duration;

use crate::config::repository_id;

/// Largest form-encoded POST body.
const MAX_FORM_BODY: usize = 64 << 10;

/// `GET /oai`.
pub async fn get_default(
    State(state): State<Arc<AppState>>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let form = query.unwrap_or_default().into_bytes();
    respond(state, None, form, headers, client.map(|Extension(c)| c)).await
}

/// `GET /oai/NAME`.
pub async fn get_named(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let form = query.unwrap_or_default().into_bytes();
    respond(
        state,
        Some(name),
        form,
        headers,
        client.map(|Extension(c)| c),
    )
    .await
}

/// `POST /oai` (form-encoded).
pub async fn post_default(
    State(state): State<Arc<AppState>>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match read_form(&state, &headers, body).await {
        Ok(form) => respond(state, None, form, headers, client.map(|Extension(c)| c)).await,
        Err(r) => r,
    }
}

/// `POST /oai/NAME` (form-encoded).
pub async fn post_named(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match read_form(&state, &headers, body).await {
        Ok(form) => {
            respond(
                state,
                Some(name),
                form,
                headers,
                client.map(|Extension(c)| c),
            )
            .await
        }
        Err(r) => r,
    }
}

/// `GET /oai/soif.xsd`: the `soif` format's schema.
pub async fn soif_xsd() -> Response {
    (
        [(header::CONTENT_TYPE, "application/xml; charset=utf-8")],
        SOIF_XSD,
    )
        .into_response()
}

fn plain(status: StatusCode, message: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message + "\n",
    )
        .into_response()
}

async fn read_form(state: &AppState, headers: &HeaderMap, body: Body) -> Result<Vec<u8>, Response> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if content_type != "application/x-www-form-urlencoded" {
        return Err(plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "OAI-PMH POST requests are application/x-www-form-urlencoded".into(),
        ));
    }
    let read = axum::body::to_bytes(body, MAX_FORM_BODY);
    match tokio::time::timeout(state.config().body_idle_timeout, read).await {
        Ok(Ok(b)) => Ok(b.to_vec()),
        Ok(Err(e)) => Err(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the form body could not be read (at most {MAX_FORM_BODY} bytes): {e}"),
        )),
        Err(_) => Err(plain(
            StatusCode::REQUEST_TIMEOUT,
            "the form body did not arrive in time".into(),
        )),
    }
}

/// What a request needs to be answered on a blocking thread.
struct Context {
    catalog: Arc<Catalog>,
    base_url: String,
    repo: String,
    xsd_url: String,
    page_size: usize,
    admin_email: Vec<String>,
    token_lifetime: Duration,
    key: [u8; 32],
}

async fn respond(
    state: Arc<AppState>,
    name: Option<String>,
    form: Vec<u8>,
    headers: HeaderMap,
    client: Option<ClientAddr>,
) -> Response {
    state.count_request();
    let (index, catalog) = match state.catalog_named(name.as_deref()) {
        Some(c) => c,
        None => {
            return plain(
                StatusCode::NOT_FOUND,
                format!(
                    "no catalog named {:?} on this server",
                    name.unwrap_or_default()
                ),
            )
        }
    };
    let oai = &state.config().oai;
    let root = crate::discovery::public_root(&state, &headers);
    let base_url = match &name {
        Some(n) => format!("{root}/oai/{}", percent_path(n)),
        None => format!("{root}/oai"),
    };
    let repo = repository_id(oai, index, catalog.name());
    let admin_email = if oai.admin_email.is_empty() {
        match &state.config().maintainer {
            Some(m) if m.contains('@') => vec![m.clone()],
            _ => vec![format!("admin@{repo}")],
        }
    } else {
        oai.admin_email.clone()
    };
    let ctx = Context {
        key: catalog.oai_key(),
        catalog,
        base_url,
        repo,
        xsd_url: format!("{root}/oai/soif.xsd"),
        page_size: oai.page_size.max(1),
        admin_email,
        token_lifetime: oai.token_lifetime,
    };
    let slot = match state.acquire_read(client.map(|c| c.0)) {
        Ok(s) => s,
        Err(e) => {
            state.count_failure();
            let mut r = plain(e.status(), e.to_string());
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
            return r;
        }
    };
    let pairs: Vec<(String, String)> = form_urlencoded::parse(&form).into_owned().collect();
    let result = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        answer(&ctx, pairs)
    })
    .await
    .map_err(|e| RequestError::Internal(format!("an OAI-PMH task failed: {e}")))
    .and_then(|r| r);
    match result {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/xml; charset=utf-8")],
            body,
        )
            .into_response(),
        Err(e) => {
            state.count_failure();
            let mut r = plain(e.status(), e.to_string());
            if e.status() == StatusCode::SERVICE_UNAVAILABLE {
                r.headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
            }
            r
        }
    }
}

fn percent_path(name: &str) -> String {
    percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

fn datestamp(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The response document around `body` (the verb's element, or errors).
fn document(ctx: &Context, args: Option<&Args>, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    out.push_str(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\" \
         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xsi:schemaLocation=\"http://www.openarchives.org/OAI/2.0/ \
         http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd\">\n",
    );
    out.push_str(&format!(
        "<responseDate>{}</responseDate>\n<request",
        datestamp(now_secs())
    ));
    if let Some(a) = args {
        for (k, v) in &a.pairs {
            out.push_str(&format!(" {k}=\"{}\"", escape_text(v)));
        }
    }
    out.push_str(&format!(">{}</request>\n", escape_text(&ctx.base_url)));
    out.push_str(body);
    out.push_str("\n</OAI-PMH>\n");
    out
}

fn error_body(errors: &[OaiError]) -> String {
    errors
        .iter()
        .map(|e| {
            format!(
                "<error code=\"{}\">{}</error>",
                e.code,
                escape_text(&e.message)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Answers one request: `Ok` with the document (protocol errors included), `Err` only
/// when the catalog could not be read.
fn answer(ctx: &Context, pairs: Vec<(String, String)>) -> Result<String, RequestError> {
    let args = match args::parse(pairs) {
        Ok(a) => a,
        Err(e) => return Ok(document(ctx, None, &error_body(&[e]))),
    };
    let result = ctx.catalog.read(|store| verb(ctx, store, &args))??;
    Ok(match result {
        Ok(body) => document(ctx, Some(&args), &body),
        Err(e) => {
            let shown = if e.bare_request() { None } else { Some(&args) };
            document(ctx, shown, &error_body(&[e]))
        }
    })
}

type VerbResult = Result<Result<String, OaiError>, RequestError>;

fn store_err(e: soif_store::StoreError) -> RequestError {
    RequestError::Internal(e.to_string())
}

fn verb(ctx: &Context, store: &SqliteStore, args: &Args) -> VerbResult {
    match args.verb {
        Some(Verb::Identify) => identify(ctx, store),
        Some(Verb::ListMetadataFormats) => list_formats(ctx, store, args),
        Some(Verb::ListSets) => list_sets(store, args),
        Some(Verb::GetRecord) => get_record(ctx, store, args),
        Some(v @ (Verb::ListIdentifiers | Verb::ListRecords)) => list(ctx, store, args, v),
        None => Ok(Err(OaiError::new("badVerb", "no verb"))),
    }
}

fn identify(ctx: &Context, store: &SqliteStore) -> VerbResult {
    let earliest = datestamps::earliest(store)
        .map_err(store_err)?
        .unwrap_or_else(|| datestamp(now_secs()));
    let mut out = String::from("<Identify>");
    out.push_str(&format!(
        "<repositoryName>{}</repositoryName><baseURL>{}</baseURL><protocolVersion>2.0</protocolVersion>",
        escape_text(&format!("soif catalog {}", ctx.catalog.name())),
        escape_text(&ctx.base_url)
    ));
    for e in &ctx.admin_email {
        out.push_str(&format!("<adminEmail>{}</adminEmail>", escape_text(e)));
    }
    out.push_str(&format!(
        "<earliestDatestamp>{earliest}</earliestDatestamp><deletedRecord>persistent</deletedRecord>\
         <granularity>YYYY-MM-DDThh:mm:ssZ</granularity>"
    ));
    out.push_str(&format!(
        "<description><oai-identifier xmlns=\"http://www.openarchives.org/OAI/2.0/oai-identifier\" \
         xsi:schemaLocation=\"http://www.openarchives.org/OAI/2.0/oai-identifier \
         http://www.openarchives.org/OAI/2.0/oai-identifier.xsd\"><scheme>oai</scheme>\
         <repositoryIdentifier>{}</repositoryIdentifier><delimiter>:</delimiter>\
         <sampleIdentifier>{}</sampleIdentifier></oai-identifier></description>",
        ctx.repo,
        escape_text(&ids::identifier(&ctx.repo, b"FILE", b"ftp://ftp.example.org/pub/README"))
    ));
    out.push_str("</Identify>");
    Ok(Ok(out))
}

/// The item an identifier names (live or deleted), or `idDoesNotExist`.
fn find(
    ctx: &Context,
    store: &SqliteStore,
    id: &str,
) -> Result<Result<Entry, OaiError>, RequestError> {
    let missing = || OaiError::new("idDoesNotExist", format!("no item {id} in this repository"));
    let Some((template, url)) = ids::parse_identifier(&ctx.repo, id) else {
        return Ok(Err(missing()));
    };
    Ok(datestamps::entry(store, &template, &url)
        .map_err(store_err)?
        .ok_or_else(missing))
}

fn list_formats(ctx: &Context, store: &SqliteStore, args: &Args) -> VerbResult {
    if let Some(id) = &args.identifier {
        if let Err(e) = find(ctx, store, id)? {
            return Ok(Err(e));
        }
    }
    Ok(Ok(format!(
        "<ListMetadataFormats><metadataFormat><metadataPrefix>oai_dc</metadataPrefix>\
         <schema>{}</schema><metadataNamespace>{}</metadataNamespace></metadataFormat>\
         <metadataFormat><metadataPrefix>soif</metadataPrefix><schema>{}</schema>\
         <metadataNamespace>{}</metadataNamespace></metadataFormat></ListMetadataFormats>",
        OAI_DC_XSD,
        OAI_DC_NS,
        escape_text(&ctx.xsd_url),
        SOIF_NS
    )))
}

fn list_sets(store: &SqliteStore, args: &Args) -> VerbResult {
    if args.token.is_some() {
        return Ok(Err(OaiError::new(
            "badResumptionToken",
            "ListSets is always complete: this repository issues no resumption token for it",
        )));
    }
    let templates = datestamps::templates(store).map_err(store_err)?;
    if templates.is_empty() {
        return Ok(Err(OaiError::new(
            "noSetHierarchy",
            "the catalog is empty: it has no templates, so no sets",
        )));
    }
    let mut out = String::from("<ListSets>");
    for t in templates {
        out.push_str(&format!(
            "<set><setSpec>{}</setSpec><setName>{}</setName></set>",
            ids::set_spec(&t),
            escape_text(&soif_codecs::rules::text::xml_chars(&String::from_utf8_lossy(&t)).0)
        ));
    }
    out.push_str("</ListSets>");
    Ok(Ok(out))
}

fn check_prefix(prefix: &str) -> Result<(), OaiError> {
    match prefix {
        "oai_dc" | "soif" => Ok(()),
        other => Err(OaiError::new(
            "cannotDisseminateFormat",
            format!("no metadata format {other:?} here: oai_dc or soif"),
        )),
    }
}

fn header(ctx: &Context, e: &Entry, out: &mut String) {
    if e.deleted {
        out.push_str("<header status=\"deleted\">");
    } else {
        out.push_str("<header>");
    }
    out.push_str(&format!(
        "<identifier>{}</identifier><datestamp>{}</datestamp><setSpec>{}</setSpec></header>",
        escape_text(&ids::identifier(&ctx.repo, &e.template, &e.url)),
        e.datestamp,
        ids::set_spec(&e.template)
    ));
}

fn record(ctx: &Context, e: &Entry, prefix: &str, out: &mut String) {
    out.push_str("<record>");
    header(ctx, e, out);
    if let (false, Some(r)) = (e.deleted, &e.record) {
        out.push_str("<metadata>");
        match prefix {
            "soif" => write::soif(r, &ctx.xsd_url, out),
            _ => write::oai_dc(r, out),
        }
        out.push_str("</metadata>");
    }
    out.push_str("</record>");
}

fn get_record(ctx: &Context, store: &SqliteStore, args: &Args) -> VerbResult {
    let prefix = args.prefix.as_deref().unwrap_or("");
    if let Err(e) = check_prefix(prefix) {
        return Ok(Err(e));
    }
    let id = args.identifier.as_deref().unwrap_or("");
    let entry = match find(ctx, store, id)? {
        Ok(e) => e,
        Err(e) => return Ok(Err(e)),
    };
    let mut out = String::from("<GetRecord>");
    record(ctx, &entry, prefix, &mut out);
    out.push_str("</GetRecord>");
    Ok(Ok(out))
}

fn list(ctx: &Context, store: &SqliteStore, args: &Args, verb: Verb) -> VerbResult {
    let now = now_secs();
    let resumed = match &args.token {
        Some(t) => match token::decode(&ctx.key, t, now) {
            Ok(s) if s.verb == verb.as_str() => Some(s),
            Ok(_) => {
                return Ok(Err(OaiError::new(
                    "badResumptionToken",
                    "the resumption token belongs to another verb",
                )))
            }
            Err(m) => return Ok(Err(OaiError::new("badResumptionToken", m))),
        },
        None => None,
    };
    let (prefix, set, window, after, cursor) = match &resumed {
        Some(s) => (
            s.prefix.clone(),
            s.set.clone(),
            Window {
                from: s.from.clone(),
                until: s.until.clone(),
            },
            Some(s.after.clone()),
            s.cursor,
        ),
        None => {
            let prefix = args.prefix.clone().unwrap_or_default();
            if let Err(e) = check_prefix(&prefix) {
                return Ok(Err(e));
            }
            let set = match &args.set {
                Some(spec) => match ids::parse_set_spec(spec) {
                    Some(t) => Some(t),
                    None => {
                        return Ok(Err(OaiError::new(
                            "noRecordsMatch",
                            format!("no set {spec} here"),
                        )))
                    }
                },
                None => None,
            };
            let window = Window {
                from: args.from.clone(),
                until: args.until.clone(),
            };
            (prefix, set, window, None, 0)
        }
    };
    let records = verb == Verb::ListRecords;
    let n = ctx.page_size;
    let mut page = datestamps::page(
        store,
        set.as_deref(),
        &window,
        after.as_ref().map(|(t, u)| (t.as_slice(), u.as_slice())),
        n + 1,
        records,
    )
    .map_err(store_err)?;
    let more = page.len() > n;
    page.truncate(n);
    if resumed.is_none() && page.is_empty() {
        return Ok(Err(OaiError::new(
            "noRecordsMatch",
            "no records match these arguments",
        )));
    }
    let total = match &resumed {
        Some(s) => s.total,
        None if !more => page.len() as u64,
        None => datestamps::count(store, set.as_deref(), &window).map_err(store_err)?,
    };
    let mut out = format!("<{}>", verb.as_str());
    for e in &page {
        if records {
            record(ctx, e, &prefix, &mut out);
        } else {
            header(ctx, e, &mut out);
        }
    }
    let sent = cursor + page.len() as u64;
    if more {
        let last = page
            .last()
            .map(|e| (e.template.to_vec(), e.url.to_vec()))
            .unwrap_or_default();
        let expires = now + i64::try_from(ctx.token_lifetime.as_secs()).unwrap_or(86_400);
        let state = token::ListState {
            verb: verb.as_str().to_string(),
            prefix,
            set,
            from: window.from,
            until: window.until,
            after: last,
            cursor: sent,
            // A load during the harvest may have added records: never below what was sent.
            total: total.max(sent + 1),
            expires,
        };
        out.push_str(&format!(
            "<resumptionToken expirationDate=\"{}\" completeListSize=\"{}\" cursor=\"{cursor}\">{}</resumptionToken>",
            datestamp(expires),
            state.total,
            token::encode(&ctx.key, &state)
        ));
    } else if resumed.is_some() {
        out.push_str(&format!(
            "<resumptionToken completeListSize=\"{}\" cursor=\"{cursor}\"/>",
            total.max(sent)
        ));
    }
    out.push_str(&format!("</{}>", verb.as_str()));
    Ok(Ok(out))
}
