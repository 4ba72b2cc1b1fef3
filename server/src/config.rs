//! The server's configuration: [`ServerConfig`] (every limit of `soif serve`, with its
//! default), the OAI-PMH provider's [`OaiConfig`], and what is read from files at start
//! (`--db NAME=PATH`, the taxonomy). It imports nothing else of the server.

use soif_codecs::oai::ids;
use soif_codecs::rdm::{Schema, Taxonomy};
use soif_codecs::soif::{decode_all, DecoderOptions};
use soif_codecs::Record;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest schema or taxonomy file read at start.
pub(crate) const MAX_DESCRIPTION_FILE: u64 = 64 << 20;

/// How the server is set up (from `soif serve`'s options).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `(name, database)`; the first is the default catalog.
    pub catalogs: Vec<(String, PathBuf)>,
    /// The bearer token submissions need; `None` disables submissions.
    pub token: Option<String>,
    /// The schema served by schema-description requests (else derived from the tables).
    pub schema: Option<Schema>,
    /// The taxonomy served by taxonomy-description requests.
    pub taxonomy: Option<Taxonomy>,
    /// Largest request body, in bytes.
    pub max_body: u64,
    /// Largest SOIF object in a request body.
    pub max_record_size: usize,
    /// `Description` of the server description.
    pub description: Option<String>,
    /// `Maintainer` of the server description.
    pub maintainer: Option<String>,
    /// A request body that sends nothing for this long is abandoned (nothing is written);
    /// a client that reads nothing of a reply for this long is cut off (`--stall-timeout`).
    pub body_idle_timeout: Duration,
    /// Largest body of a POST without the right token (a query; `--max-open-body`). Its
    /// first object, the `@RDMHEADER`, must also fit in [`OPEN_HEADER_LIMIT`]; a
    /// submission is refused as soon as that header has been read.
    pub max_open_body: u64,
    /// Time a connection has to send a complete request head, counted from when it
    /// starts waiting for one — so also the idle time of a kept-alive connection
    /// (`--header-timeout`).
    pub header_timeout: Duration,
    /// Words (and `OR`s) in a `sample-keyword-ql` scope (`--max-query-terms`).
    pub max_query_terms: usize,
    /// Keys in a `View-Order` (`--max-order-keys`).
    pub max_order_keys: usize,
    /// Rows a `View-Order` may sort (`--max-sorted-rows`); more is an error reply.
    pub max_sorted_rows: u64,
    /// Hits a keyword query ranks (`--max-keyword-hits`): the best this many are served.
    pub max_keyword_hits: u64,
    /// Reads in flight per client address: `rd-request` replies, and server or derived
    /// schema descriptions while they read (`--max-reads-per-client`).
    pub max_reads_per_client: usize,
    /// Reads in flight in all, counted the same way (`--max-reads`).
    pub max_reads: usize,
    /// How long a read waits for one of a catalog's read connections (`--read-wait`).
    pub read_wait: Duration,
    /// Open connections per client address (`--max-connections-per-client`).
    pub max_connections_per_client: usize,
    /// Open connections in all (`--max-connections`).
    pub max_connections: usize,
    /// Serve every catalog read-only (`--read-only`); a catalog whose database or file
    /// system is not writable is served read-only anyway.
    pub read_only: bool,
    /// The OAI-PMH provider's settings.
    pub oai: OaiConfig,
    /// URLs per sitemap and per ResourceSync list (`--sitemap-size`, at most
    /// [`MAX_SITEMAP_URLS`]); a longer list is an index of parts.
    pub sitemap_size: usize,
}

/// The most URLs one sitemap (or ResourceSync list) may hold: the sitemaps protocol's
/// limit, and the default of `--sitemap-size`.
pub const MAX_SITEMAP_URLS: usize = 50_000;

/// The `@RDMHEADER` of a POST without the right token must arrive within this many bytes.
pub const OPEN_HEADER_LIMIT: usize = 64 << 10;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            catalogs: Vec::new(),
            token: None,
            schema: None,
            taxonomy: None,
            max_body: 1 << 30,
            max_record_size: 64 << 20,
            description: None,
            maintainer: None,
            body_idle_timeout: Duration::from_secs(30),
            max_open_body: 1 << 20,
            header_timeout: Duration::from_secs(10),
            max_query_terms: 32,
            max_order_keys: 4,
            max_sorted_rows: 1_000_000,
            max_keyword_hits: 10_000,
            max_reads_per_client: 8,
            max_reads: 64,
            read_wait: Duration::from_secs(5),
            max_connections_per_client: 256,
            max_connections: 4096,
            read_only: false,
            oai: OaiConfig::default(),
            sitemap_size: MAX_SITEMAP_URLS,
        }
    }
}

/// Parses a `--db` value: `NAME=PATH`, or a path whose file stem names the catalog.
pub fn parse_db_spec(spec: &str) -> Result<(String, PathBuf), String> {
    if let Some((name, path)) = spec.split_once('=') {
        let name = name.trim();
        if name.is_empty() || name.contains(['/', '?', '#', ' ']) || path.is_empty() {
            return Err(format!(
                "--db {spec:?}: expected NAME=PATH with a NAME without '/', '?', '#' or spaces"
            ));
        }
        return Ok((name.to_string(), PathBuf::from(path)));
    }
    let path = PathBuf::from(spec);
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("--db {spec:?}: cannot name a catalog after this path"))?;
    Ok((name, path))
}

pub(crate) fn read_bounded(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open the {what} {shown}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_DESCRIPTION_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the {what} {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_DESCRIPTION_FILE {
        return Err(format!(
            "the {what} {shown} is larger than {} MiB",
            MAX_DESCRIPTION_FILE >> 20
        ));
    }
    Ok(bytes)
}

/// Reads a taxonomy file: one `@TAXONOMY`, then `@CLASSIFICATION`s (the note's `{x}` sizes
/// are read leniently, as written by hand).
pub fn load_taxonomy(path: &Path) -> Result<Taxonomy, String> {
    let bytes = read_bounded(path, "taxonomy")?;
    let shown = path.display().to_string();
    let opts = DecoderOptions::default().lenient().named(shown.clone());
    let records = decode_all(&bytes, opts)
        .into_iter()
        .collect::<Result<Vec<Record>, _>>()
        .map_err(|e| format!("the taxonomy {shown} is not valid SOIF: {e}"))?;
    Taxonomy::from_records(&records).map_err(|e| format!("the taxonomy {shown}: {e}"))
}

/// Records (or headers) per list page unless `--oai-page-size` says otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 200;

/// How long a resumption token is good for.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// The repository identifier used when neither `--oai-repository-id` nor the host of
/// `--public-url` gives one (`.invalid` is reserved: set a real one).
pub const FALLBACK_REPOSITORY_ID: &str = "soif.invalid";

/// The provider's settings (`soif serve` options).
#[derive(Debug, Clone)]
pub struct OaiConfig {
    /// The server's public root (`https://example.org/catalog`): `baseURL` is this plus
    /// `/oai`; without it, the request's `Host`.
    pub public_url: Option<String>,
    /// `adminEmail` (at least one is sent: `--admin-email`, else the `--maintainer`, else
    /// `admin@` the repository identifier).
    pub admin_email: Vec<String>,
    pub page_size: usize,
    /// The repository identifier of the first catalog; the others are `NAME.` this.
    pub repository_id: Option<String>,
    pub token_lifetime: Duration,
}

impl Default for OaiConfig {
    fn default() -> Self {
        OaiConfig {
            public_url: None,
            admin_email: Vec::new(),
            page_size: DEFAULT_PAGE_SIZE,
            repository_id: None,
            token_lifetime: TOKEN_LIFETIME,
        }
    }
}

impl OaiConfig {
    /// The repository identifier of the first catalog.
    pub fn base_repository_id(&self) -> String {
        if let Some(id) = &self.repository_id {
            return id.clone();
        }
        self.public_url
            .as_deref()
            .and_then(|u| u.split("://").nth(1))
            .map(|rest| rest.split(['/', ':', '?', '#']).next().unwrap_or(""))
            .filter(|h| ids::valid_repository_id(h))
            .map_or_else(|| FALLBACK_REPOSITORY_ID.to_string(), str::to_string)
    }
}

/// The repository identifier of catalog `index` named `name`.
pub fn repository_id(config: &OaiConfig, index: usize, name: &str) -> String {
    let base = config.base_repository_id();
    if index == 0 {
        return base;
    }
    let label: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let candidate = format!("{label}.{base}");
    if ids::valid_repository_id(&candidate) {
        candidate
    } else {
        format!("c{index}-{label}.{base}")
    }
}
