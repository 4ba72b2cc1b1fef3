//! What every request shares: [`AppState`] (the open catalogs, the configuration, the
//! counters of the status page) and the read slots that bound the reads in flight per
//! client address and in all. Imported by each protocol's handlers; imports none of them.

use crate::catalog::{Catalog, CatalogOptions};
use crate::config::ServerConfig;
use crate::error::RequestError;
use soif_codecs::rdm::RdmHeader;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Shared by all requests.
pub struct AppState {
    pub(crate) catalogs: Vec<Arc<Catalog>>,
    pub(crate) by_name: HashMap<String, usize>,
    pub(crate) config: ServerConfig,
    pub(crate) started: SystemTime,
    pub(crate) requests: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) submitted: AtomicU64,
    pub(crate) deleted: AtomicU64,
    pub(crate) reads: Arc<ReadSlots>,
}

/// The address a request came from, put in the request's extensions by [`serve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// The `rd-request` replies in flight, per client address and in all.
#[derive(Debug, Default)]
pub(crate) struct ReadSlots {
    in_flight: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// One reply in flight; released when dropped (the reply ended, or was cut off).
pub(crate) struct ReadSlot {
    slots: Arc<ReadSlots>,
    client: Option<IpAddr>,
}

impl ReadSlots {
    pub(crate) fn acquire(
        self: &Arc<Self>,
        client: Option<IpAddr>,
        config: &ServerConfig,
    ) -> Result<ReadSlot, RequestError> {
        let mut guard = self
            .in_flight
            .lock()
            .map_err(|_| RequestError::Internal("the read counter failed earlier".into()))?;
        let (total, per_client) = &mut *guard;
        if *total >= config.max_reads {
            return Err(RequestError::Busy(format!(
                "{} reads are in flight (this server's limit); retry later",
                config.max_reads
            )));
        }
        if let Some(ip) = client {
            let n = per_client.entry(ip).or_insert(0);
            if *n >= config.max_reads_per_client {
                return Err(RequestError::TooManyRequests(format!(
                    "{ip} already has {} reads in flight (this server's limit per \
                     client); read them first",
                    config.max_reads_per_client
                )));
            }
            *n += 1;
        }
        *total += 1;
        Ok(ReadSlot {
            slots: self.clone(),
            client,
        })
    }
}

impl Drop for ReadSlot {
    fn drop(&mut self) {
        if let Ok(mut guard) = self.slots.in_flight.lock() {
            let (total, per_client) = &mut *guard;
            *total = total.saturating_sub(1);
            if let Some(ip) = self.client {
                if let Some(n) = per_client.get_mut(&ip) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        per_client.remove(&ip);
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("catalogs", &self.catalogs)
            .finish()
    }
}

impl AppState {
    /// Opens every catalog (blocking: call before serving, or on a blocking thread).
    pub fn open(config: ServerConfig) -> Result<Arc<AppState>, String> {
        if config.catalogs.is_empty() {
            return Err("no catalog: give at least one --db".into());
        }
        let mut catalogs = Vec::new();
        let mut by_name = HashMap::new();
        for (name, path) in &config.catalogs {
            if by_name.insert(name.clone(), catalogs.len()).is_some() {
                return Err(format!("two catalogs are named {name:?}"));
            }
            let opts = CatalogOptions {
                read_only: config.read_only,
                read_wait: config.read_wait,
            };
            let c = Catalog::open_with(name, path, &opts)
                .map_err(|e| format!("catalog {name} ({}): {e}", path.display()))?;
            catalogs.push(Arc::new(c));
        }
        Ok(Arc::new(AppState {
            catalogs,
            by_name,
            config,
            started: SystemTime::now(),
            requests: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            submitted: AtomicU64::new(0),
            deleted: AtomicU64::new(0),
            reads: Arc::new(ReadSlots::default()),
        }))
    }

    /// The catalogs, in `--db` order.
    pub fn catalogs(&self) -> &[Arc<Catalog>] {
        &self.catalogs
    }

    /// The settings the server runs with.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The catalog named `name` (the default one for `None`) and its index.
    pub(crate) fn catalog_named(&self, name: Option<&str>) -> Option<(usize, Arc<Catalog>)> {
        let i = match name {
            None => 0,
            Some(n) => *self.by_name.get(n)?,
        };
        Some((i, self.catalogs.get(i)?.clone()))
    }

    /// One of the client's read slots (`--max-reads-per-client`, `--max-reads`), held
    /// until the returned guard is dropped.
    pub(crate) fn acquire_read(
        &self,
        client: Option<IpAddr>,
    ) -> Result<impl Send + 'static, RequestError> {
        self.reads.acquire(client, &self.config)
    }

    pub(crate) fn count_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_failure(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn catalog(&self, header: &RdmHeader) -> Result<Arc<Catalog>, RequestError> {
        match &header.catalog {
            None => Ok(self.catalogs[0].clone()),
            Some(csid) => self
                .by_name
                .get(&csid.name)
                .map(|&i| self.catalogs[i].clone())
                .ok_or_else(|| RequestError::UnknownCatalog(csid.name.clone())),
        }
    }
}
