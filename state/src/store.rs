//! [`StateStore`]: the state database, its runs, and the commit protocol (see the crate
//! doc for why it gives exactly-once results).

use crate::lock::RunLock;
use crate::outputs::{self, PlannedOutput};
use crate::scan::{FileRecord, Reason};
use crate::tables;
use crate::StateError;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use soif_pipeline::checkpoint::Checkpoint;
use std::path::{Path, PathBuf};

/// The state database of incremental runs.
pub struct StateStore {
    conn: Connection,
    path: PathBuf,
    /// Held by a store opened for a run ([`StateStore::open`]).
    lock: Option<RunLock>,
}

/// A run just begun.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStart {
    pub id: i64,
    /// RFC 3339 UTC.
    pub started: String,
    /// For output names ([`outputs::run_label`]).
    pub label: String,
}

/// How a finished run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Every record converted.
    Ok,
    /// Finished, but records were skipped or quarantined (exit status 3).
    Rejected,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Rejected => "rejected",
        }
    }
}

/// A file a run took (or, `Touched`, whose new time it records), with its counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenFile {
    /// The canonical path (key).
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
    pub hash: String,
    pub reason: Reason,
    pub counts: Counts,
}

/// A source's new checkpoint, with its counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceProgress {
    pub key: String,
    pub checkpoint: Checkpoint,
    pub counts: Counts,
}

/// Records in / out / rejected (of one file, source or run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub records_in: u64,
    pub records_out: u64,
    pub rejected: u64,
}

/// What a run staged when its sinks had committed (see [`StateStore::stage`]).
#[derive(Debug, Clone, Default)]
pub struct Staged {
    pub files: Vec<TakenFile>,
    pub sources: Vec<SourceProgress>,
    /// Outputs written (`true`: publish) or left empty (`false`: remove).
    pub outputs: Vec<(PathBuf, bool)>,
    /// Files skipped as unchanged, and left to settle (for the run's row).
    pub unchanged: u64,
    pub settling: u64,
    pub totals: Counts,
    pub exit_status: i32,
}

/// What [`StateStore::recover`] found of earlier runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Runs killed before their sinks had committed: their temporary outputs removed,
    /// marked `interrupted`; their files are taken again.
    pub interrupted: Vec<i64>,
    /// Runs killed while committing: finished now (outputs published, progress applied).
    pub completed: Vec<i64>,
    /// Messages worth a warning (an output that had vanished).
    pub notes: Vec<String>,
}

/// One `runs` row, for `soif state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRow {
    pub id: i64,
    pub started: String,
    pub finished: Option<String>,
    pub status: String,
    pub taken: Option<u64>,
    pub unchanged: Option<u64>,
    pub settling: Option<u64>,
    pub records_in: Option<u64>,
    pub records_out: Option<u64>,
    pub rejected: Option<u64>,
    pub exit_status: Option<i32>,
    pub error: Option<String>,
    pub outputs: Vec<String>,
}

/// One `sources` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRow {
    pub key: String,
    pub checkpoint: Checkpoint,
    pub run: i64,
    pub updated: String,
}

impl std::fmt::Debug for StateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateStore")
            .field("path", &self.path)
            .field("locked", &self.lock.is_some())
            .finish()
    }
}

fn u(v: Option<i64>) -> Option<u64> {
    v.and_then(|v| u64::try_from(v).ok())
}

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl StateStore {
    /// Opens (creating it if needed) the state at `path` for a run: takes the run lock
    /// first, failing at once with [`StateError::AlreadyRunning`] if another run holds
    /// it. Call [`StateStore::recover`] next.
    pub fn open(path: &Path) -> Result<StateStore, StateError> {
        let lock = RunLock::try_acquire(path)?;
        let conn = Connection::open(path).map_err(|e| StateError::Sqlite {
            path: path.to_path_buf(),
            context: "opening".to_string(),
            source: e,
        })?;
        let store = StateStore {
            conn,
            path: path.to_path_buf(),
            lock: Some(lock),
        };
        let _ = store.conn.busy_timeout(std::time::Duration::from_secs(10));
        // Checked first: another SQLite database (a catalog given by mistake) is refused
        // untouched, not switched to WAL.
        tables::init(&store.conn, path)?;
        // WAL: `soif state` can read while a run writes. FULL: a commit is on disk when
        // it returns, which the protocol's order of steps relies on.
        store
            .conn
            .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
            .map_err(|e| store.err("setting up", e))?;
        Ok(store)
    }

    /// Opens an existing state to read it (`--dry-run`, `soif state`), without the lock;
    /// `None` when there is no state yet.
    pub fn open_read_only(path: &Path) -> Result<Option<StateStore>, StateError> {
        if !path.exists() {
            return Ok(None);
        }
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|e| {
                StateError::Sqlite {
                    path: path.to_path_buf(),
                    context: "opening".to_string(),
                    source: e,
                }
            })?;
        let _ = conn.busy_timeout(std::time::Duration::from_secs(10));
        tables::check(&conn, path).map_err(|e| match e {
            StateError::Sqlite { .. } => StateError::NotAState {
                path: path.to_path_buf(),
                reason: "no soif state layout".to_string(),
            },
            e => e,
        })?;
        Ok(Some(StateStore {
            conn,
            path: path.to_path_buf(),
            lock: None,
        }))
    }

    /// The state's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, context: &str, e: rusqlite::Error) -> StateError {
        StateError::Sqlite {
            path: self.path.clone(),
            context: context.to_string(),
            source: e,
        }
    }

    fn in_tx<T>(
        &mut self,
        context: &str,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StateError> {
        let path = self.path.clone();
        let sql = |e| StateError::Sqlite {
            path: path.clone(),
            context: context.to_string(),
            source: e,
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let out = f(&tx).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(out)
    }

    /// Finishes what earlier runs left (call it after [`StateStore::open`], before
    /// anything else): a run killed while `committing` is completed; a run killed while
    /// `running` has its temporary outputs removed and is marked `interrupted`.
    pub fn recover(&mut self) -> Result<Recovery, StateError> {
        let mut recovery = Recovery::default();
        let rows: Vec<(i64, String)> = self
            .conn
            .prepare(
                "SELECT id, status FROM runs WHERE status IN ('running', 'committing') ORDER BY id",
            )
            .and_then(|mut st| {
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err("reading unfinished runs", e))?;
        for (id, status) in rows {
            if status == "committing" {
                recovery.notes.extend(self.complete(id)?);
                recovery.completed.push(id);
            } else {
                for (temp, _) in self.outputs_of(id)? {
                    outputs::remove_temp(Path::new(&temp))?;
                }
                self.in_tx("marking a killed run interrupted", |tx| {
                    tx.execute(
                        "UPDATE run_outputs SET state = 'removed' WHERE run = ?1",
                        [id],
                    )?;
                    tx.execute(
                        "UPDATE runs SET status = 'interrupted',
                         error = 'killed before its outputs were committed; its inputs are taken again'
                         WHERE id = ?1",
                        [id],
                    )
                })?;
                recovery.interrupted.push(id);
            }
        }
        Ok(recovery)
    }

    /// What the state knows of the file with this canonical path.
    pub fn file(&self, key: &str) -> Result<Option<FileRecord>, StateError> {
        self.conn
            .prepare_cached(
                "SELECT path, size, mtime_ns, hash, run, taken, records FROM files WHERE path = ?1",
            )
            .and_then(|mut st| st.query_row([key], file_record).optional())
            .map_err(|e| self.err("reading files", e))
    }

    /// Every file taken, by path; under `prefix` (a directory, ending in `/`) only.
    pub fn files(&self, prefix: Option<&str>) -> Result<Vec<FileRecord>, StateError> {
        let pattern = format!("{}*", glob_escape(prefix.unwrap_or("")));
        self.conn
            .prepare(
                "SELECT path, size, mtime_ns, hash, run, taken, records FROM files
                 WHERE path GLOB ?1 ORDER BY path",
            )
            .and_then(|mut st| {
                st.query_map([pattern], file_record)?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err("reading files", e))
    }

    /// How many files the state has taken.
    pub fn file_count(&self) -> Result<u64, StateError> {
        self.conn
            .query_row("SELECT count(*) FROM files", [], |r| r.get::<_, i64>(0))
            .map(|n| u64::try_from(n).unwrap_or(0))
            .map_err(|e| self.err("counting files", e))
    }

    /// The committed checkpoint of every source other than files.
    pub fn sources(&self) -> Result<Vec<SourceRow>, StateError> {
        self.conn
            .prepare("SELECT key, kind, checkpoint, run, updated FROM sources ORDER BY key")
            .and_then(|mut st| {
                st.query_map([], |r| {
                    Ok(SourceRow {
                        key: r.get(0)?,
                        checkpoint: Checkpoint::new(r.get::<_, String>(1)?, r.get::<_, String>(2)?),
                        run: r.get(3)?,
                        updated: r.get(4)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err("reading sources", e))
    }

    /// The checkpoints for a run's [`soif_pipeline::Checkpoints`].
    pub fn checkpoints(&self) -> Result<Vec<(String, Checkpoint)>, StateError> {
        Ok(self
            .sources()?
            .into_iter()
            .map(|s| (s.key, s.checkpoint))
            .collect())
    }

    /// Starts a run: a `runs` row with status `running`, committed at once.
    pub fn begin_run(
        &mut self,
        command: &[String],
        inputs: &[String],
    ) -> Result<RunStart, StateError> {
        let started = crate::now_rfc3339();
        let command = serde_json::to_string(command).unwrap_or_else(|_| "[]".into());
        let inputs = serde_json::to_string(inputs).unwrap_or_else(|_| "[]".into());
        let pid = std::process::id();
        let id = self.in_tx("recording the run", |tx| {
            tx.execute(
                "INSERT INTO runs (started, status, pid, command, inputs)
                 VALUES (?1, 'running', ?2, ?3, ?4)",
                params![started, pid, command, inputs],
            )?;
            Ok(tx.last_insert_rowid())
        })?;
        Ok(RunStart {
            id,
            label: outputs::run_label(id, &started),
            started,
        })
    }

    /// Records the run's file outputs before anything is written to them, so that a
    /// killed run's temporary files are found and removed.
    pub fn plan_outputs(&mut self, run: i64, planned: &[PlannedOutput]) -> Result<(), StateError> {
        self.in_tx("recording the run's outputs", |tx| {
            for p in planned {
                tx.execute(
                    "INSERT INTO run_outputs (run, temp, final_path, state) VALUES (?1, ?2, ?3, 'planned')",
                    params![run, p.temp.to_string_lossy(), p.final_path.to_string_lossy()],
                )?;
            }
            Ok(())
        })
    }

    /// Call once every sink has committed everything of the run: syncs the outputs to
    /// disk, then in one transaction records the run's progress (files, checkpoints,
    /// which outputs to publish) and its report, and sets it `committing`. From here on
    /// the run is as good as done: [`StateStore::complete`] finishes it, or the next
    /// run's [`StateStore::recover`] does.
    pub fn stage(
        &mut self,
        run: i64,
        progress: &Staged,
        status: RunStatus,
        report: &str,
    ) -> Result<(), StateError> {
        for (temp, keep) in &progress.outputs {
            if *keep {
                outputs::sync_file(temp)?;
            }
        }
        self.in_tx("staging the run's progress", |tx| {
            for f in &progress.files {
                let read = f.reason != Reason::Touched;
                tx.execute(
                    "INSERT OR REPLACE INTO run_files (run, path, size, mtime_ns, hash, reason,
                     records_in, records_out, rejected) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    params![
                        run,
                        f.path,
                        i(f.size),
                        f.mtime_ns,
                        f.hash,
                        f.reason.as_str(),
                        read.then(|| i(f.counts.records_in)),
                        read.then(|| i(f.counts.records_out)),
                        read.then(|| i(f.counts.rejected))
                    ],
                )?;
            }
            for s in &progress.sources {
                tx.execute(
                    "INSERT OR REPLACE INTO run_sources (run, key, kind, checkpoint, records_in,
                     records_out, rejected) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        run,
                        s.key,
                        s.checkpoint.kind,
                        s.checkpoint.value,
                        i(s.counts.records_in),
                        i(s.counts.records_out),
                        i(s.counts.rejected)
                    ],
                )?;
            }
            for (temp, keep) in &progress.outputs {
                tx.execute(
                    "UPDATE run_outputs SET state = ?3 WHERE run = ?1 AND temp = ?2",
                    params![run, temp.to_string_lossy(), if *keep { "ready" } else { "empty" }],
                )?;
            }
            tx.execute(
                "UPDATE runs SET status = 'committing', final_status = ?2, report = ?3,
                 taken = ?4, unchanged = ?5, settling = ?6, records_in = ?7, records_out = ?8,
                 rejected = ?9, exit_status = ?10 WHERE id = ?1",
                params![
                    run,
                    status.as_str(),
                    report,
                    i(progress.files.iter().filter(|f| f.reason.is_taken()).count() as u64),
                    i(progress.unchanged),
                    i(progress.settling),
                    i(progress.totals.records_in),
                    i(progress.totals.records_out),
                    i(progress.totals.rejected),
                    progress.exit_status
                ],
            )?;
            Ok(())
        })
    }

    /// Finishes a `committing` run: publishes its ready outputs (rename, directory
    /// synced), removes empty ones, then in one transaction applies its staged progress
    /// to `files` and `sources` and marks it done. Idempotent: safe to repeat after a
    /// crash at any point. Returns notes (an output that vanished).
    pub fn complete(&mut self, run: i64) -> Result<Vec<String>, StateError> {
        let mut notes = Vec::new();
        for (temp, final_path, state) in self.outputs_full(run)? {
            let (temp, final_path) = (PathBuf::from(temp), PathBuf::from(final_path));
            match state.as_str() {
                "ready" => {
                    if temp.exists() {
                        outputs::publish(&temp, &final_path)?;
                    } else if !final_path.exists() {
                        notes.push(format!(
                            "run {run}: output {} is missing (removed by hand?)",
                            final_path.display()
                        ));
                    }
                }
                "empty" | "planned" => outputs::remove_temp(&temp)?,
                _ => {}
            }
        }
        let now = crate::now_rfc3339();
        self.in_tx("committing the run", |tx| {
            tx.execute(
                // A touched file (not read: same content, new time) keeps the run and
                // record count of the run that read it.
                "INSERT INTO files (path, size, mtime_ns, hash, run, taken, records)
                 SELECT path, size, mtime_ns, hash, run, ?2, records_in
                 FROM run_files WHERE run = ?1
                 ON CONFLICT (path) DO UPDATE SET size = excluded.size,
                   mtime_ns = excluded.mtime_ns, hash = excluded.hash,
                   run = CASE WHEN excluded.records IS NULL THEN files.run ELSE excluded.run END,
                   taken = CASE WHEN excluded.records IS NULL THEN files.taken ELSE excluded.taken END,
                   records = COALESCE(excluded.records, files.records)",
                params![run, now],
            )?;
            tx.execute(
                "INSERT INTO sources (key, kind, checkpoint, run, updated)
                 SELECT key, kind, checkpoint, run, ?2 FROM run_sources WHERE run = ?1
                 ON CONFLICT (key) DO UPDATE SET kind = excluded.kind,
                   checkpoint = excluded.checkpoint, run = excluded.run, updated = excluded.updated",
                params![run, now],
            )?;
            tx.execute(
                "UPDATE run_outputs SET state = CASE state WHEN 'ready' THEN 'published'
                 ELSE 'removed' END WHERE run = ?1 AND state != 'published'",
                [run],
            )?;
            tx.execute(
                "UPDATE runs SET status = COALESCE(final_status, 'ok'), finished = ?2
                 WHERE id = ?1",
                params![run, now],
            )?;
            Ok(())
        })?;
        Ok(notes)
    }

    /// Ends a run that failed (nothing of it is recorded as taken): removes its temporary
    /// outputs and records the error and report.
    pub fn fail(
        &mut self,
        run: i64,
        error: &str,
        exit_status: i32,
        report: &str,
    ) -> Result<(), StateError> {
        for (temp, _) in self.outputs_of(run)? {
            outputs::remove_temp(Path::new(&temp))?;
        }
        let now = crate::now_rfc3339();
        self.in_tx("recording the failed run", |tx| {
            tx.execute(
                "UPDATE run_outputs SET state = 'removed' WHERE run = ?1",
                [run],
            )?;
            tx.execute(
                "UPDATE runs SET status = 'failed', finished = ?2, error = ?3, exit_status = ?4,
                 report = ?5 WHERE id = ?1",
                params![run, now, error, exit_status, report],
            )?;
            Ok(())
        })
    }

    fn outputs_of(&self, run: i64) -> Result<Vec<(String, String)>, StateError> {
        Ok(self
            .outputs_full(run)?
            .into_iter()
            .map(|(t, f, _)| (t, f))
            .collect())
    }

    fn outputs_full(&self, run: i64) -> Result<Vec<(String, String, String)>, StateError> {
        self.conn
            .prepare("SELECT temp, final_path, state FROM run_outputs WHERE run = ?1 ORDER BY temp")
            .and_then(|mut st| {
                st.query_map([run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err("reading the run's outputs", e))
    }

    /// The last `limit` runs, newest first.
    pub fn runs(&self, limit: usize) -> Result<Vec<RunRow>, StateError> {
        let mut rows: Vec<RunRow> = self
            .conn
            .prepare(
                "SELECT id, started, finished, status, taken, unchanged, settling, records_in,
                 records_out, rejected, exit_status, error FROM runs ORDER BY id DESC LIMIT ?1",
            )
            .and_then(|mut st| {
                st.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                    Ok(RunRow {
                        id: r.get(0)?,
                        started: r.get(1)?,
                        finished: r.get(2)?,
                        status: r.get(3)?,
                        taken: u(r.get(4)?),
                        unchanged: u(r.get(5)?),
                        settling: u(r.get(6)?),
                        records_in: u(r.get(7)?),
                        records_out: u(r.get(8)?),
                        rejected: u(r.get(9)?),
                        exit_status: r.get(10)?,
                        error: r.get(11)?,
                        outputs: Vec::new(),
                    })
                })?
                .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err("reading runs", e))?;
        for row in &mut rows {
            row.outputs = self
                .outputs_full(row.id)?
                .into_iter()
                .filter(|(_, _, s)| s == "published")
                .map(|(_, f, _)| f)
                .collect();
        }
        Ok(rows)
    }

    /// A run's report (the `--report` JSON), when it has finished or is committing.
    pub fn report(&self, run: i64) -> Result<Option<String>, StateError> {
        self.conn
            .query_row("SELECT report FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .optional()
            .map(Option::flatten)
            .map_err(|e| self.err("reading the report", e))
    }

    /// The files a run took (history).
    pub fn run_files(&self, run: i64) -> Result<Vec<(String, String, Counts)>, StateError> {
        self.conn
            .prepare(
                "SELECT path, reason, records_in, records_out, rejected FROM run_files
                 WHERE run = ?1 ORDER BY path",
            )
            .and_then(|mut st| {
                st.query_map([run], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        Counts {
                            records_in: u(r.get(2)?).unwrap_or(0),
                            records_out: u(r.get(3)?).unwrap_or(0),
                            rejected: u(r.get(4)?).unwrap_or(0),
                        },
                    ))
                })?
                .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.err("reading the run's files", e))
    }

    /// Forgets a file, every file under a directory, or a source's checkpoint, so that
    /// the next run takes it again from scratch. `name` is a canonical path, a directory
    /// path ending in `/`, or a source key. Returns how many entries were forgotten.
    /// Needs the lock ([`StateStore::open`]): a run going on would otherwise commit
    /// over it.
    pub fn forget(&mut self, name: &str) -> Result<usize, StateError> {
        if self.lock.is_none() {
            return Err(StateError::Invalid(
                "forgetting needs the state opened for writing".to_string(),
            ));
        }
        let pattern = format!("{}*", glob_escape(name));
        let dir = name.ends_with('/');
        self.in_tx("forgetting", |tx| {
            let mut n = tx.execute("DELETE FROM files WHERE path = ?1", [name])?;
            if dir {
                n += tx.execute("DELETE FROM files WHERE path GLOB ?1", [&pattern])?;
            }
            n += tx.execute("DELETE FROM sources WHERE key = ?1", [name])?;
            Ok(n)
        })
    }
}

fn file_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<FileRecord> {
    Ok(FileRecord {
        path: r.get(0)?,
        size: u(r.get(1)?).unwrap_or(0),
        mtime_ns: r.get(2)?,
        hash: r.get(3)?,
        run: r.get(4)?,
        taken: r.get(5)?,
        records: u(r.get(6)?),
    })
}

/// `*`, `?` and `[` taken literally in a GLOB pattern.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '*' | '?' | '[' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}
