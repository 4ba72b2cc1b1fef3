//! `soif_runs`: one row per load, with its inputs, times, status and counts.

use crate::store::{SqliteStore, StoreError};
use crate::tables::now;
use rusqlite::{params, Connection, OptionalExtension};

/// Counts for one run, stored in `soif_runs`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunCounts {
    /// Records handed to the sink.
    pub records: u64,
    pub upserted: u64,
    pub deleted: u64,
    /// Records the store refused.
    pub rejected: u64,
}

impl SqliteStore {
    /// Starts a run: a `soif_runs` row with status `running`, committed at once so that
    /// even a killed run is on record. Returns its id.
    pub fn begin_run(&mut self, inputs: &[String]) -> Result<i64, StoreError> {
        let inputs = serde_json::to_string(inputs).unwrap_or_else(|_| "[]".to_string());
        self.in_write(|s| {
            s.conn
                .execute(
                    "INSERT INTO soif_runs (inputs, started, status) VALUES (?1, ?2, 'running')",
                    params![inputs, now()],
                )
                .map_err(|e| s.err("recording the run", e))?;
            Ok(s.conn.last_insert_rowid())
        })
    }

    /// Marks every run still `running` as `interrupted` and returns how many there were.
    /// Call it only when no loader is alive ([`LoaderLock`]): their runs were killed.
    pub fn interrupt_stale_runs(&mut self) -> Result<usize, StoreError> {
        self.in_write(|s| {
            s.conn
                .execute(
                    "UPDATE soif_runs SET status = 'interrupted' WHERE status = 'running'",
                    [],
                )
                .map_err(|e| s.err("marking killed runs interrupted", e))
        })
    }

    /// Updates a run's counts; with `status` (`ok`, `failed`) also marks it finished.
    pub fn update_run(
        &mut self,
        id: i64,
        counts: RunCounts,
        status: Option<&str>,
    ) -> Result<(), StoreError> {
        let finished = status.map(|_| now());
        self.in_write(|s| {
            s.conn
                .prepare_cached(
                    "UPDATE soif_runs SET records = ?2, upserted = ?3, deleted = ?4,
                     rejected = ?5, finished = COALESCE(?6, finished),
                     status = COALESCE(?7, status) WHERE id = ?1",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        id,
                        counts.records as i64,
                        counts.upserted as i64,
                        counts.deleted as i64,
                        counts.rejected as i64,
                        finished,
                        status
                    ])
                })
                .map_err(|e| s.err("updating soif_runs", e))?;
            Ok(())
        })
    }
}

/// One `soif_runs` row: a load by `soif convert --to sqlite` (the server's own
/// submissions are not runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    pub id: i64,
    /// `running`, `ok`, `failed` or `interrupted` (a killed loader leaves `running` until
    /// the next run marks it).
    pub status: String,
    pub started: String,
    pub finished: Option<String>,
    pub records: i64,
    pub upserted: i64,
    pub deleted: i64,
    pub rejected: i64,
}

/// The latest run, if any.
pub fn latest_run(conn: &Connection) -> rusqlite::Result<Option<RunSummary>> {
    conn.query_row(
        "SELECT id, status, started, finished, records, upserted, deleted, rejected
         FROM soif_runs ORDER BY id DESC LIMIT 1",
        [],
        |r| {
            Ok(RunSummary {
                id: r.get(0)?,
                status: r.get(1)?,
                started: r.get(2)?,
                finished: r.get(3)?,
                records: r.get(4)?,
                upserted: r.get(5)?,
                deleted: r.get(6)?,
                rejected: r.get(7)?,
            })
        },
    )
    .optional()
}

/// A summary of `soif_runs` that changes whenever a loader commits (the keyword index
/// compares it with the one it was built at).
pub fn runs_summary(conn: &Connection) -> rusqlite::Result<String> {
    conn.query_row(
        "SELECT count(*) || ':' || coalesce(max(id), 0) || ':' || coalesce(sum(records), 0)
                || ':' || coalesce(sum(upserted), 0) || ':' || coalesce(sum(deleted), 0)
                || ':' || coalesce(sum(status = 'running'), 0)
         FROM soif_runs",
        [],
        |r| r.get(0),
    )
}

/// Whether a load is running (or was killed and not yet marked `interrupted`).
pub fn any_running(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM soif_runs WHERE status = 'running')",
        [],
        |r| r.get(0),
    )
}
