//! The keyword index: brought up to date when a loader has written since it was built,
//! once the loader's run has finished (see "The keyword language and its index").

use super::handle::{sql_err, store_err, Catalog};
use crate::error::RequestError;
use rusqlite::Connection;
use soif_store::{facets, fts, runs, SqliteStore, StoreError};

/// Tables the server derives from the records and rebuilds after a loader wrote.
struct Upkeep {
    name: &'static str,
    has: fn(&Connection) -> rusqlite::Result<bool>,
    built: fn(&Connection) -> rusqlite::Result<Option<String>>,
    rebuild: fn(&mut SqliteStore) -> Result<(), StoreError>,
}

const KEYWORD_INDEX: Upkeep = Upkeep {
    name: "keyword index",
    has: fts::has_index,
    built: fts::indexed_summary,
    rebuild: fts::rebuild,
};

const FACET_TABLES: Upkeep = Upkeep {
    name: "facet tables",
    has: facets::has_index,
    built: facets::indexed_summary,
    rebuild: facets::rebuild,
};

/// How long a `running` loader's counts must stand still before the index is rebuilt
/// anyway (see [`Catalog::ensure_index`]).
pub const LOADER_IDLE: std::time::Duration = std::time::Duration::from_secs(60);

impl Catalog {
    /// Rebuilds the keyword index when a loader has written since it was last built.
    ///
    /// While a loader's run is in progress (`soif_runs.status = 'running'`) the current
    /// index is used as it is: rebuilding after every one of its batches would be wasted,
    /// and hits whose rows have changed are read as they are now (rows since deleted are
    /// skipped). The rebuild happens once the run has finished, or once its counts have
    /// not moved for [`LOADER_IDLE`] (a loader that was killed leaves its run `running`).
    pub fn ensure_index(&self) -> Result<(), RequestError> {
        self.keep_up(&KEYWORD_INDEX, true)
    }

    /// Rebuilds the facet tables (`soif_store::facets`) when a loader has written since
    /// they were last built, under the same rules as [`Catalog::ensure_index`].
    pub fn ensure_facets(&self) -> Result<(), RequestError> {
        self.keep_up(&FACET_TABLES, true)
    }

    /// Whether the facet tables hold a complete build to read, after rebuilding them if
    /// a loader has written since — unless the writer is busy (a rebuild already under
    /// way, at start say): a page then does not wait for it. The tables may then lag a
    /// loader's latest writes, as the keyword index does while a load runs. `false` while
    /// a first build is under way, and for a catalog served read-only without them.
    pub fn facets_ready(&self) -> Result<bool, RequestError> {
        match self.keep_up(&FACET_TABLES, false) {
            Ok(()) => {}
            Err(RequestError::Unsupported(_)) => return Ok(false),
            Err(e) => return Err(e),
        }
        let reader = self.reader()?;
        let built = facets::indexed_summary(reader.store().connection())
            .map_err(sql_err(&self.path, "reading soif_meta"))?;
        Ok(built.is_some())
    }

    /// Brings `what` up to date; with `wait` false, only if the writer is free at once.
    fn keep_up(&self, what: &Upkeep, wait: bool) -> Result<(), RequestError> {
        if self.read_only() {
            // Whatever tables the database has are used as they are.
            let reader = self.reader()?;
            let has = (what.has)(reader.store().connection())
                .map_err(sql_err(&self.path, "reading sqlite_master"))?;
            if !has {
                return Err(RequestError::Unsupported(format!(
                    "catalog {} is served read-only and has no {}",
                    self.name, what.name
                )));
            }
            return Ok(());
        }
        let (now, running) = {
            let reader = self.reader()?;
            let conn = reader.store().connection();
            let now = runs::runs_summary(conn).map_err(sql_err(&self.path, "reading soif_runs"))?;
            let built = (what.built)(conn).map_err(sql_err(&self.path, "reading soif_meta"))?;
            if built.as_deref() == Some(now.as_str()) {
                return Ok(());
            }
            let running =
                runs::any_running(conn).map_err(sql_err(&self.path, "reading soif_runs"))?;
            (now, running)
        };
        if running && !self.loader_idle(&now) {
            return Ok(());
        }
        let mut writer = if wait {
            self.writer()?
        } else {
            match self.writer.as_ref().map(|w| w.try_lock()) {
                Some(Ok(w)) => w,
                Some(Err(std::sync::TryLockError::WouldBlock)) => return Ok(()),
                _ => self.writer()?,
            }
        };
        let result = (what.rebuild)(&mut writer).map_err(store_err);
        if result.is_err() && writer.in_transaction() {
            let _ = writer.rollback();
        }
        result
    }

    /// True when the `soif_runs` summary has been `summary` for [`LOADER_IDLE`].
    pub(crate) fn loader_idle(&self, summary: &str) -> bool {
        let Ok(mut seen) = self.loader_seen.lock() else {
            return true;
        };
        match &*seen {
            Some((s, since)) if s == summary => since.elapsed() >= LOADER_IDLE,
            _ => {
                *seen = Some((summary.to_string(), std::time::Instant::now()));
                false
            }
        }
    }
}
