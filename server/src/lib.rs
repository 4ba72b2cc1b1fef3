//! soif server: an RDM (W3C NOTE-rdm-960724, *Resource Description Messages*) catalog
//! server over the SQLite layout of the `sqlite` sink (`docs/sqlite-layout.md`).
//!
//! - [`config`]: [`ServerConfig`], every setting and limit of `soif serve`;
//! - [`state`]: [`AppState`], what every request shares (catalogs, counters, read slots);
//! - [`connection`]: the accept loop, connection limits and timeouts, lingering close;
//! - [`routes`]: which handler answers which path;
//! - [`rdm`]: the RDM protocol — `GET /rdm/incoming?type=…` (the note's form parameters)
//!   and `POST /rdm/incoming` (`application/x-rdm`), one reply per RDM type, streamed
//!   `rd-response`s, token-checked submissions;
//! - [`catalog`]: one SQLite catalog (through the `soif_store` store) — reads (gatherer `all` / `since DATE`, the keyword
//!   language on an FTS5 index with a `Score`, views, remembered deletions) and
//!   transactional submissions;
//! - [`oai`]: the OAI-PMH 2.0 provider at `/oai` and `/oai/NAME` (all six verbs,
//!   `oai_dc` and `soif`, sets per template, deletions, stateless resumption tokens);
//! - [`spool`]: a submission's RDs between the request body and the catalog;
//! - [`status`]: the HTML 2.0 status documents;
//! - [`web`]: the browse and search pages (each record page with its schema.org JSON-LD);
//! - [`discovery`]: `/robots.txt`, a sitemap per catalog and ResourceSync;
//! - [`error`]: [`RequestError`], which every failure becomes: an RDM `status-response`
//!   with `RDM-Error-Message` and a fitting HTTP status.
//!
//! Several catalogs can be served at once; a request picks one with the name in its
//! `Catalog-Service-ID` (`x-catalog://host:port/NAME`), and requests without one go to the
//! first. `soif serve --db books=books.db --db maps=maps.db` names them explicitly; a
//! plain `--db catalog.db` is named after its file stem (`catalog`).
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use soif_server::{AppState, ServerConfig};
//! let config = ServerConfig {
//!     catalogs: vec![("catalog".into(), "catalog.db".into())],
//!     token: Some("secret".into()),
//!     ..ServerConfig::default()
//! };
//! let state = AppState::open(config)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! soif_server::serve(listener, state, std::future::pending()).await?;
//! # Ok(()) }
//! ```
//!
//! ```text
//! $ curl 'http://127.0.0.1:8080/rdm/incoming?type=rd-request&ql=sample-keyword-ql&scope=netscape&view-hits=10'
//! @RDMHEADER { -
//! RDM-Version{3}:<TAB>1.0
//! RDM-Type{11}:<TAB>rd-response
//! Catalog-Service-ID{33}:<TAB>x-catalog://127.0.0.1:8080/catalog
//! }
//! @DOCUMENT { http://www.netscape.com:80/
//! …
//! Score{4}:<TAB>1000
//! }
//! ```

/// `eprintln!` that never panics: a server must not die because whoever started it
/// stopped reading its stderr (`eprintln!` panics when the write fails, as with a closed
/// pipe).
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod catalog;
pub mod config;
pub mod connection;
pub mod discovery;
pub mod error;
pub mod oai;
pub mod rdm;
pub mod routes;
pub mod spool;
pub mod state;
pub mod status;
pub mod web;

pub use catalog::Catalog;
pub use config::ServerConfig;
pub use connection::serve;
pub use error::RequestError;
pub use routes::router;
pub use state::AppState;
