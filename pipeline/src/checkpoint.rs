//! [`Checkpoints`]: what an incremental run (`--state STATE.db`) hands its sources, so
//! that each can ask for only what is new since the last successful run.
//!
//! A checkpoint is opaque to everything but the source that wrote it: a JSON text under
//! the source's key (its canonical name, e.g. the URL as given). An OAI-PMH source keeps
//! the `responseDate` of its last harvest, an HTTP source the `ETag` and
//! `Last-Modified` it was answered, an RDM catalog source the time the run started.
//!
//! The protocol, for a source:
//! 1. when it opens an input, [`Checkpoints::previous`] gives what the last successful
//!    run committed for that key (`None` the first time, or after `soif state --forget`);
//! 2. once it has read the input to its end, [`Checkpoints::stage`] leaves the new
//!    checkpoint. Staging commits nothing: the state store writes the staged checkpoints
//!    only after every sink has committed every record of the run (the `soif-state`
//!    crate's protocol). A run that fails or is killed leaves the previous checkpoints in
//!    place, so the next run asks again from the same point and nothing is lost.
//!
//! Without `--state` there is no `Checkpoints` (sources get `None`) and every input is
//! read whole, as always.
//!
//! ```
//! use soif_pipeline::checkpoint::{Checkpoint, Checkpoints};
//! let cps = Checkpoints::new(
//!     [("oai+http://h/oai?metadataPrefix=oai_dc".to_string(),
//!       Checkpoint::new("oai", r#"{"responseDate":"2026-11-23T02:00:00Z"}"#))],
//!     "2026-11-24T02:00:00Z",
//! );
//! let key = "oai+http://h/oai?metadataPrefix=oai_dc";
//! assert!(cps.previous(key).unwrap().value.contains("2026-11-23"));
//! // … harvest `from` that date, read to the end, then:
//! cps.stage(key, "oai", r#"{"responseDate":"2026-11-24T02:00:01Z"}"#);
//! assert_eq!(cps.staged().len(), 1);
//! // The previous value stays what the run started with.
//! assert!(cps.previous(key).unwrap().value.contains("2026-11-23"));
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// One source's checkpoint: its kind (`http`, `x-catalog`, `oai`, …, for `soif state`)
/// and its value, a JSON text only the source interprets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub kind: String,
    /// A JSON text (object, string, number…).
    pub value: String,
}

impl Checkpoint {
    pub fn new(kind: impl Into<String>, value: impl Into<String>) -> Checkpoint {
        Checkpoint {
            kind: kind.into(),
            value: value.into(),
        }
    }
}

/// The checkpoints of one incremental run: those committed before it (read-only) and
/// those its sources staged (see the module doc). Cheap to clone: clones share one set.
#[derive(Debug, Clone, Default)]
pub struct Checkpoints {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    previous: HashMap<String, Checkpoint>,
    staged: Mutex<BTreeMap<String, Checkpoint>>,
    started: String,
}

impl Checkpoints {
    /// The committed checkpoints, and the run's start time (RFC 3339, UTC).
    pub fn new(
        previous: impl IntoIterator<Item = (String, Checkpoint)>,
        started: impl Into<String>,
    ) -> Checkpoints {
        Checkpoints {
            inner: Arc::new(Inner {
                previous: previous.into_iter().collect(),
                staged: Mutex::new(BTreeMap::new()),
                started: started.into(),
            }),
        }
    }

    /// What the last successful run committed for `key`.
    pub fn previous(&self, key: &str) -> Option<&Checkpoint> {
        self.inner.previous.get(key)
    }

    /// When this run started (RFC 3339, UTC, e.g. `2026-11-24T02:00:00Z`): what an RDM
    /// catalog source keeps, to ask `since` it next time.
    pub fn run_started(&self) -> &str {
        &self.inner.started
    }

    /// Leaves `key`'s new checkpoint, committed only if the whole run succeeds. A second
    /// call for the same key replaces the first.
    pub fn stage(&self, key: &str, kind: &str, value: impl Into<String>) {
        if let Ok(mut staged) = self.inner.staged.lock() {
            staged.insert(key.to_string(), Checkpoint::new(kind, value));
        }
    }

    /// The staged checkpoints, by key.
    pub fn staged(&self) -> Vec<(String, Checkpoint)> {
        self.inner
            .staged
            .lock()
            .map(|s| s.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }
}
