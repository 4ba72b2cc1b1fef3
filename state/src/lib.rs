//! soif's state store: what incremental runs (`soif convert … --state STATE.db`, a
//! pipeline file's `[state] path = …`) have taken, so that each run takes only what is
//! new, exactly once even when runs are killed, and only one run at a time.
//!
//! The state is an SQLite database of its own (tables in [`tables`] and
//! `docs/state-layout.md`, versioned), beside which `STATE.db.lock` holds the run lock
//! ([`lock`]). Per source, by canonical name:
//! - a file (absolute path): size, modification time and BLAKE3 content hash when it was
//!   last taken ([`scan`] decides: new, changed, unchanged, touched, settling);
//! - any other source (a URL): an opaque checkpoint, a JSON text that only the source
//!   interprets (an OAI-PMH `responseDate`, an HTTP `ETag`, a run start time), handed to
//!   sources as [`soif_pipeline::Checkpoints`];
//! - every run: its times, status, counts, report, outputs and what it took (history).
//!
//! ```
//! use soif_state::{Staged, RunStatus, StateStore};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("state.db");
//! let mut store = StateStore::open(&path).unwrap(); // takes the run lock
//! store.recover().unwrap();                         // finishes what a killed run left
//! let run = store.begin_run(&["soif".into()], &["dumps/".into()]).unwrap();
//! // … convert, every sink commits …
//! store.stage(run.id, &Staged::default(), RunStatus::Ok, "{}").unwrap();
//! store.complete(run.id).unwrap();
//! assert_eq!(store.runs(10).unwrap()[0].status, "ok");
//! // A second run on the same state while this one holds the lock is refused at once.
//! assert!(StateStore::open(&path).unwrap_err().is_already_running());
//! ```
//!
//! # Exactly once, even after `kill -9`
//!
//! A run goes through these steps, each durable before the next starts (SQLite commits
//! with `synchronous = FULL`; files and their directory are `fsync`ed):
//!
//! 1. **lock** `STATE.db.lock` (`flock`; the kernel drops it when the process dies), then
//!    **recover** (below);
//! 2. **begin**: a `runs` row, status `running`, and the run's file outputs planned
//!    (`run_outputs`: temporary name → final name, see [`outputs`]);
//! 3. **convert**: the engine reads the inputs to take and every sink writes. The SQLite
//!    sink commits batches into its database and the `rdm` and `sparql` sinks POST
//!    batches, all as upserts by URL (and deletions; in a SPARQL store a record's named
//!    graph is dropped and filled again); file outputs go to their temporary names;
//! 4. **stage** ([`StateStore::stage`]), only once every sink has finished, i.e.
//!    committed everything: outputs synced; then one transaction records what the run
//!    took (`run_files`, `run_sources` with the sources' new checkpoints), which outputs
//!    to publish, the report, and status `committing`;
//! 5. **publish and apply** ([`StateStore::complete`]): each temporary output renamed to
//!    its final name (directory synced); then one transaction copies the staged progress
//!    into `files` and `sources` and sets the status `ok` (or `rejected`).
//!
//! Why no record is lost or duplicated, wherever the process dies:
//! - *before step 4 commits*: the state says nothing was taken, so the next run takes
//!   the same inputs again (from the same checkpoints). What the dead run's sinks had
//!   committed is written again: in SQLite, over RDM and in a SPARQL store that is an
//!   upsert or a repeated deletion of the same URL, so the result is as if the dead run
//!   had never been; its file outputs were never published, and the next run's recovery
//!   removes the temporary files (and any `.part` file a sink left), so every record
//!   reaches exactly one published file, the next run's;
//! - *after step 4 commits*: everything the run produced is complete on disk, and the
//!   state knows what it took and what to publish. Recovery rolls the run forward: it
//!   renames what is still under a temporary name (a file already renamed is left
//!   alone), applies the staged progress, and marks the run done. The inputs are not
//!   taken again. [`StateStore::complete`] is idempotent, so dying during it is the same
//!   case again;
//! - *after step 5*: done.
//!
//! The window between the rename and the state's commit is thus closed by recording the
//! intent (step 4) before the rename, not after: the state never needs to guess whether
//! a file on disk belongs to a finished run.
//!
//! The unit of progress is the run: a killed run's inputs are all taken again by the
//! next, which the sinks' idempotence makes harmless (it costs time, not correctness).
//! A run that fails with an error ([`StateStore::fail`]) is treated as a killed one.

pub mod error;
pub mod lock;
pub mod outputs;
pub mod scan;
pub mod store;
pub mod tables;
mod time;

pub use error::StateError;
pub use lock::RunLock;
pub use scan::{FileDecision, FileRecord, Reason, DEFAULT_SETTLE};
pub use store::{
    Counts, Recovery, RunRow, RunStart, RunStatus, SourceProgress, SourceRow, Staged, StateStore,
    TakenFile,
};

/// The exit status of a run refused because another run holds the state (EX_TEMPFAIL in
/// BSD's sysexits.h: "try again later"; soif's other statuses are 0 to 3).
pub const EXIT_ALREADY_RUNNING: u8 = 75;

pub use time::now_rfc3339;

#[cfg(test)]
mod tests;
