//! `soif serve`: the RDM catalog server (docs/server.md; crate `soif_server`).

use crate::terminal::{fail, runtime};
use clap::Args;
use soif_options::ByteSize;
use soif_pipeline::Error;
use soif_server::config::{load_taxonomy, parse_db_spec, ServerConfig};
use soif_server::connection::{self, raise_open_file_limit};
use soif_server::log;
use soif_server::rdm::RDM_PATH;
use soif_server::state::AppState;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Serve SQLite catalogs over RDM and OAI-PMH 2.0.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  soif convert All-Templates.gz --to sqlite -o catalog.db
  soif serve --db catalog.db --listen 127.0.0.1:8080 --token s3cret
  soif serve --db books=books.db --db maps=/srv/maps.db --taxonomy taxonomy.soif
  curl 'http://127.0.0.1:8080/rdm/incoming?type=rd-request&ql=gatherer&scope=all'
  soif rdm x-catalog://127.0.0.1:8080/catalog --type rd-request \\
      --ql sample-keyword-ql --scope netscape --view-hits 10
  soif convert new.soif --to rdm -o x-catalog://127.0.0.1:8080/catalog --token s3cret

Requests: GET /rdm/incoming?type=…&ql=…&scope=…&view-attributes=…&view-order=…&view-hits=…&csid=…
or POST /rdm/incoming with an application/x-rdm body (@RDMHEADER, @RDMQUERY). Reads are
open; rd-response and rd-response-deleted submissions need `Authorization: Bearer TOKEN`
(without --token / SOIF_TOKEN submissions are refused). A request picks its catalog by the
name in Catalog-Service-ID (x-catalog://host:port/NAME); without one, the first --db.

Query languages: gatherer (`all`, `since DATE` on Last-Modification-Time, Last-Modified or
Update-Time), sample-keyword-ql (words, all must occur; `OR` between two; hits ranked
with a Score by SQLite FTS5), schema-basic (`defined ATTR`), taxonomy-basic (`descendant
X`, `descendant/N X`, `children X`, `anklebiter X`; X is ROOT or a classification id).
The keyword index lives in the catalog (tables soif_fts, soif_fts_keys); submissions keep
it current, and it is rebuilt (in the background at start, else before a keyword query)
once a loader's run recorded in soif_runs has finished. A submission is applied in one
transaction once its whole body has arrived. Deletions (rd-response-deleted, or @DELETE
envelopes) are remembered in soif_deletions and served to rd-request-deleted.

OAI-PMH 2.0: GET or POST (form-encoded) /oai (the first catalog) and /oai/NAME, all six
verbs, metadata formats oai_dc (the dc crosswalk) and soif (every attribute; schema at
/oai/soif.xsd), one set per template, deletions as status=\"deleted\" headers (kept for
ever), datestamps = when each record last changed, stateless resumption tokens (signed
with a key kept in the catalog; valid 24 hours). Register http(s)://HOST/oai with an
aggregator; behind a proxy give --public-url.")]
pub struct ServeArgs {
    /// A catalog database: PATH (named after its file stem) or NAME=PATH. Repeat for
    /// several catalogs; the first is the default. Created if missing.
    #[arg(long = "db", value_name = "[NAME=]PATH", required = true)]
    pub db: Vec<String>,

    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// Bearer token that rd-response / rd-response-deleted submissions must carry.
    #[arg(long, value_name = "TOKEN", env = "SOIF_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// An RDM @SCHEMA file served for schema-description requests (default: a schema
    /// derived from the catalog's tables and columns).
    #[arg(long, value_name = "SCHEMA")]
    pub schema: Option<PathBuf>,

    /// A taxonomy file (@TAXONOMY then @CLASSIFICATION objects) served for
    /// taxonomy-description requests.
    #[arg(long, value_name = "TAXONOMY")]
    pub taxonomy: Option<PathBuf>,

    /// Largest request body accepted (e.g. 256MiB, 1GB; see --max-record-size for sizes).
    #[arg(long, value_name = "BYTES", default_value = "1GiB")]
    pub max_body: ByteSize,

    /// Largest SOIF object in a request body.
    #[arg(long, value_name = "BYTES", default_value = "64MiB")]
    pub max_record_size: ByteSize,

    /// The server description's Description.
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,

    /// The server description's Maintainer (an e-mail address).
    #[arg(long, value_name = "EMAIL")]
    pub maintainer: Option<String>,

    /// Serve every catalog read-only: submissions are refused (403, RDM error). A
    /// catalog whose database, directory or file system is not writable is served
    /// read-only anyway.
    #[arg(long)]
    pub read_only: bool,

    /// The server's public root URL when it sits behind a proxy (e.g.
    /// https://example.org/catalog): OAI-PMH's baseURL is this plus /oai (or /oai/NAME).
    /// Without it, the baseURL is taken from each request's Host. Its host also gives
    /// the default --oai-repository-id.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,

    /// OAI-PMH Identify's adminEmail (repeatable). Default: --maintainer when it is an
    /// e-mail address, else admin@ the repository identifier.
    #[arg(long, value_name = "EMAIL")]
    pub admin_email: Vec<String>,

    /// Records (or headers) per OAI-PMH list page; longer lists are continued with
    /// resumption tokens.
    #[arg(long, value_name = "N", default_value_t = soif_server::config::DEFAULT_PAGE_SIZE)]
    pub oai_page_size: usize,

    /// URLs per sitemap and per ResourceSync list (1 to 50,000, the sitemaps protocol's
    /// limit); a catalog with more records gets a sitemap index of parts.
    #[arg(long, value_name = "N", default_value_t = 50_000,
          value_parser = clap::value_parser!(u64).range(1..=50_000))]
    pub sitemap_size: u64,

    /// The OAI-PMH repository identifier of the first catalog (a domain name you control,
    /// e.g. catalog.example.org; identifiers are oai:ID:TEMPLATE/URL); other catalogs are
    /// NAME.ID. Default: the host of --public-url, else soif.invalid (set it: harvesters
    /// keep identifiers).
    #[arg(long, value_name = "ID")]
    pub oai_repository_id: Option<String>,

    /// Largest body of a POST without the right token (a query). Its @RDMHEADER must
    /// come within the first 64 KiB; a submission without the token is refused (401) once
    /// that header is read, before the rest of the body. Over this: 413.
    #[arg(long, value_name = "BYTES", default_value = "1MiB")]
    pub max_open_body: ByteSize,

    /// Seconds a connection has to send a complete request head, counted from when it
    /// starts waiting for one (so also the idle time of a kept-alive connection); then it
    /// is closed.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_seconds)]
    pub header_timeout: Duration,

    /// Seconds a client may send nothing of a request body, or read nothing of a reply,
    /// before the exchange is dropped (a body: nothing written; a reply: cut off).
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = parse_seconds)]
    pub stall_timeout: Duration,

    /// Words (OR included) in a sample-keyword-ql scope; more: 400, RDM error.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub max_query_terms: usize,

    /// Keys in a View-Order; more: 400, RDM error.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub max_order_keys: usize,

    /// Rows a View-Order may sort; more: 400, RDM error (before any RD is sent).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub max_sorted_rows: u64,

    /// Hits a keyword query ranks: the best N are served, the rest left out.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_keyword_hits: u64,

    /// Reads in flight per client address: rd-request replies (counted until their last
    /// byte is taken, or --stall-timeout cuts them off) and server or derived schema
    /// descriptions while they read; more: 429, RDM error.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_reads_per_client: usize,

    /// Reads in flight in all (as --max-reads-per-client counts them); more: 503, RDM
    /// error.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_reads: usize,

    /// Seconds a read waits for one of a catalog's 16 read connections; then 503, RDM
    /// error. (Status requests have a connection of their own and never wait.)
    #[arg(long, value_name = "SECONDS", default_value = "5", value_parser = parse_seconds)]
    pub read_wait: Duration,

    /// Open connections per client address; more are closed at once.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_connections_per_client: usize,

    /// Open connections in all; more are closed at once. (The open-file limit is raised
    /// to its hard limit at start.)
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_connections: usize,

    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Whole or fractional seconds (`10`, `0.5`).
fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("{s:?}: give between 0 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub fn run(args: ServeArgs) -> ExitCode {
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn serve(args: ServeArgs) -> Result<(), Error> {
    let catalogs = args
        .db
        .iter()
        .map(|s| parse_db_spec(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::Config)?;
    for (i, (name, _)) in catalogs.iter().enumerate() {
        if catalogs[..i].iter().any(|(n, _)| n == name) {
            return Err(Error::Config(format!(
                "two catalogs are named {name:?} (use --db NAME=PATH)"
            )));
        }
    }
    let schema = match &args.schema {
        Some(p) => Some(soif_codecs::rules::schema::load_schema(p)?),
        None => None,
    };
    let taxonomy = match &args.taxonomy {
        Some(p) => Some(load_taxonomy(p).map_err(Error::Config)?),
        None => None,
    };
    let config = ServerConfig {
        catalogs,
        token: args.token.clone().filter(|t| !t.is_empty()),
        schema,
        taxonomy,
        max_body: args.max_body.as_u64(),
        max_record_size: args.max_record_size.as_usize(),
        description: args.description.clone(),
        maintainer: args.maintainer.clone(),
        body_idle_timeout: args.stall_timeout,
        max_open_body: args.max_open_body.as_u64(),
        header_timeout: args.header_timeout,
        max_query_terms: args.max_query_terms.max(1),
        max_order_keys: args.max_order_keys,
        max_sorted_rows: args.max_sorted_rows,
        max_keyword_hits: args.max_keyword_hits.max(1),
        max_reads_per_client: args.max_reads_per_client.max(1),
        max_reads: args.max_reads.max(1),
        read_wait: args.read_wait,
        max_connections_per_client: args.max_connections_per_client.max(1),
        max_connections: args.max_connections.max(1),
        read_only: args.read_only,
        oai: soif_server::config::OaiConfig {
            public_url: args.public_url.clone(),
            admin_email: args.admin_email.clone(),
            page_size: args.oai_page_size.max(1),
            repository_id: args.oai_repository_id.clone(),
            ..Default::default()
        },
        sitemap_size: usize::try_from(args.sitemap_size)
            .unwrap_or(soif_server::config::MAX_SITEMAP_URLS),
    };
    if let Some(id) = &config.oai.repository_id {
        if !soif_codecs::oai::ids::valid_repository_id(id) {
            return Err(Error::Config(format!(
                "--oai-repository-id {id:?}: expected a domain name such as catalog.example.org"
            )));
        }
    }
    if let Some(e) = config.oai.admin_email.iter().find(|e| {
        let (user, host) = e.split_once('@').unwrap_or(("", ""));
        user.is_empty() || !host.contains('.') || e.chars().any(char::is_whitespace)
    }) {
        return Err(Error::Config(format!(
            "--admin-email {e:?} is not an e-mail address"
        )));
    }
    let repository_id = config.oai.base_repository_id();
    let names: Vec<String> = config.catalogs.iter().map(|(n, _)| n.clone()).collect();
    let submissions = config.token.is_some();
    // One descriptor per connection: the usual soft limit (1024) is far below the hard one.
    let open_files = raise_open_file_limit();
    let state = AppState::open(config).map_err(Error::Fatal)?;
    let read_only: Vec<String> = state
        .catalogs()
        .iter()
        .filter(|c| c.read_only())
        .map(|c| c.name().to_string())
        .collect();
    let rt = runtime()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .map_err(|e| Error::io(format!("listening on {}", args.listen), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("reading the listening address", e))?;
        if !args.quiet {
            // One line (tests and scripts read the address from the first line and may
            // close the pipe after it), written without panicking if stderr is gone.
            use std::io::Write;
            let read_only = if read_only.is_empty() {
                String::new()
            } else {
                format!("; served read-only: {}", read_only.join(", "))
            };
            let open_files = match open_files {
                Ok(n) => format!("; open-file limit {n}"),
                Err(e) => format!("; the open-file limit could not be raised: {e}"),
            };
            let _ = writeln!(
                std::io::stderr(),
                "soif: serving http://{addr}{RDM_PATH} (catalogs: {}; submissions {}{read_only}{open_files})",
                names
                    .iter()
                    .map(|n| format!("x-catalog://{addr}/{n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if submissions {
                    "need the token"
                } else {
                    "disabled (no --token)"
                }
            );
            log!(
                "soif: OAI-PMH at http://{addr}/oai and /oai/NAME (repository oai:{repository_id}{})",
                if repository_id == soif_server::config::FALLBACK_REPOSITORY_ID {
                    "; set --oai-repository-id or --public-url"
                } else {
                    ""
                }
            );
        }
        connection::serve(listener, state, shutdown_signal())
            .await
            .map_err(|e| Error::io("serving", e))
    })
}

/// Ctrl-C or SIGTERM: stop accepting, finish the requests in flight.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
