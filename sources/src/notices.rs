//! Notices from the sources (retries) to whoever runs them.

use std::sync::Arc;

/// Where sources send notices (retries): the CLI prints them as warnings.
#[derive(Clone)]
pub struct Notices(pub Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for Notices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notices")
    }
}
