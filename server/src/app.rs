//! The server's entry points, gathered for its users (`soif serve`, the tests, the fuzz
//! target): its configuration ([`crate::config`]), shared state ([`crate::state`]),
//! connection handling ([`crate::connection`]), routes ([`crate::routes`]) and the RDM
//! protocol's public parts ([`crate::rdm`]). Nothing inside the server imports it.

pub use crate::config::{load_taxonomy, parse_db_spec, ServerConfig, OPEN_HEADER_LIMIT};
pub use crate::connection::{raise_open_file_limit, serve};
pub use crate::rdm::{
    check_request, decode_request, supported_types, BodyLimits, RdmBody, RDM_CONTENT_TYPE, RDM_PATH,
};
pub use crate::routes::router;
pub use crate::state::{AppState, ClientAddr};
