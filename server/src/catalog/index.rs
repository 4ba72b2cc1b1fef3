//! The keyword index: brought up to date when a loader has written since it was built,
//! once the loader's run has finished (see "The keyword language and its index").

use super::handle::{sql_err, store_err, Catalog};
use crate::error::RequestError;
use soif_store::{fts, runs, SqliteStore};

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
        if self.read_only() {
            // Whatever index the database has is used as it is.
            let reader = self.reader()?;
            let has_index = fts::has_index(reader.store().connection())
                .map_err(sql_err(&self.path, "reading sqlite_master"))?;
            if !has_index {
                return Err(RequestError::Unsupported(format!(
                    "catalog {} is served read-only and has no keyword index",
                    self.name
                )));
            }
            return Ok(());
        }
        let (now, running) = {
            let reader = self.reader()?;
            let conn = reader.store().connection();
            let now = runs::runs_summary(conn).map_err(sql_err(&self.path, "reading soif_runs"))?;
            let built =
                fts::indexed_summary(conn).map_err(sql_err(&self.path, "reading soif_meta"))?;
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
        let mut writer = self.writer()?;
        let result = self.rebuild_index(&mut writer);
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

    /// Rebuilds the index in transactions of [`INDEX_CHUNK`](soif_store::fts::INDEX_CHUNK) records, so that a loader
    /// waiting for SQLite's write lock gets it between them (it waits 30 s at most). The
    /// summary stored at the end is the one read at the start: whatever a loader writes
    /// meanwhile makes the next keyword query rebuild again. In-process keyword queries
    /// and submissions wait for the whole rebuild (the writer's mutex).
    pub(crate) fn rebuild_index(&self, writer: &mut SqliteStore) -> Result<(), RequestError> {
        fts::rebuild(writer).map_err(store_err)
    }
}
