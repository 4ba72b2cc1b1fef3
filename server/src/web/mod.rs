//! The browse and search pages (`GET /`): server-rendered HTML over the same catalogs as
//! RDM and OAI-PMH, each page also as JSON.
//!
//! | URL | page |
//! |---|---|
//! | `/` (`/.json`) | the catalogs, their templates, record counts and latest load |
//! | `/NAME` (`/NAME.json`) | one catalog and its search form |
//! | `/NAME/-/search?q=&match=&since=&template=&page=` (`search.json`, `search.csv`) | search results, with their facets |
//! | `/NAME/TEMPLATE?page=` (`/NAME/TEMPLATE.json`, `.csv`) | a template's records, with their facets |
//! | `/NAME/-/facets?type=&year=&host=&template=` (`facets.json`, `facets.csv`) | counts by template, `Type`, year and host ([`facets`]) |
//! | `/NAME/TEMPLATE/record?url=URL` | one record (with its schema.org JSON-LD, [`jsonld`]); `record.json`, `record.soif`, `record.rdf` |
//! | `/NAME/TEMPLATE/record.value?url=URL&i=N` | the N-th value (flattened order), as bytes |
//! | `/-/style.css` | the stylesheet |
//!
//! Templates are [`minijinja`] with HTML auto-escaping, so every value is escaped; a value
//! is a link only when it is an `http`, `https`, `ftp`, `gopher`, `news` or `mailto` URL
//! ([`view::safe_href`]). Every reply carries a `Content-Security-Policy` that allows no
//! script at all (a record page's JSON-LD is data, never run), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`. The pages
//! only read: each request takes one of the client's read slots (`--max-reads-per-client`,
//! `--max-reads`) and reads through the catalog's read connections (`--read-wait`), like
//! `rd-request`s and OAI-PMH requests.

//!
//! One module per kind of page: `home`, `catalog_page`, `search`, `list` (a template's
//! records), `record`, `facets` (also the facets on search and list pages); `results` renders a page of records for search and list, `summary` a catalog's summary row, `page`
//! what every page shares, [`view`] how a record's values are shown.

mod catalog_page;
mod facets;
mod home;
pub mod jsonld;
mod list;
mod page;
mod record;
mod results;
mod search;
mod summary;
pub mod view;

pub use catalog_page::catalog_page;
pub use facets::facets_page;
pub use home::{home, home_json};
pub use list::list_page;
pub use page::{encode_component, stylesheet, WebError, CSP, MAX_PAGE, PAGE_SIZE};
pub use record::record_page;
pub use results::record_href;
pub use search::search_page;
