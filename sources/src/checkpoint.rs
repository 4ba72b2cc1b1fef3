//! Resume points of the inputs that can be read incrementally, kept between runs by the
//! caller (`--state`): per input, named as the user gave it, an opaque text.
//!
//! | input            | resume point                                  | next run reads                     |
//! |------------------|-----------------------------------------------|------------------------------------|
//! | `oai+http(s)://` | `{"from":…,"granularity":…}` ([`crate::oai`]) | `ListRecords` `from` it            |
//! | `http(s)://`     | `{"etag":…,"last_modified":…}` ([`crate::http`]) | nothing when the server says `304` |
//! | `x-catalog://`   | `{"since":SECS}` ([`crate::catalog`])         | deletions and RDs `since` it       |
//!
//! Before a run the caller fills [`Checkpoints::new`] with what the last successful run
//! stored; as inputs are read the sources record where they got to
//! ([`Checkpoints::record`]), and after the sinks have committed the caller stores
//! [`Checkpoints::taken`] — never before, so that a run that fails or is killed reads the
//! same changes again (the sinks' upserts and deletions make that harmless).
//!
//! ```
//! use soif_sources::{Checkpoints, SourceOptions};
//! let previous = [("oai+http://h/oai".to_string(),
//!                  r#"{"from":"2026-11-24T10:00:00Z","granularity":"YYYY-MM-DDThh:mm:ssZ"}"#.to_string())];
//! let checkpoints = Checkpoints::new(previous.into_iter().collect());
//! let opts = SourceOptions { checkpoints: Some(checkpoints.clone()), ..SourceOptions::default() };
//! // … run the engine over InputSource::new(inputs, opts), let the sinks commit, then:
//! for (input, outcome) in checkpoints.taken() {
//!     println!("{input}: {} (unchanged: {})", outcome.checkpoint, outcome.unchanged);
//! }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

/// Where an input's read got to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The resume point for the next run.
    pub checkpoint: String,
    /// Nothing was read: the source had nothing new (an HTTP `304`).
    pub unchanged: bool,
}

/// The resume points of a run: the previous run's, and this run's as inputs finish.
/// Clones share the same table.
#[derive(Clone, Default)]
pub struct Checkpoints {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    previous: HashMap<String, String>,
    taken: BTreeMap<String, Outcome>,
}

impl fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (previous, taken) = self
            .inner
            .lock()
            .map(|i| (i.previous.len(), i.taken.len()))
            .unwrap_or_default();
        f.debug_struct("Checkpoints")
            .field("previous", &previous)
            .field("taken", &taken)
            .finish()
    }
}

impl Checkpoints {
    /// With the previous run's resume points, by input name.
    pub fn new(previous: HashMap<String, String>) -> Checkpoints {
        Checkpoints {
            inner: Arc::new(Mutex::new(Inner {
                previous,
                taken: BTreeMap::new(),
            })),
        }
    }

    /// The previous run's resume point of `input`.
    pub fn previous(&self, input: &str) -> Option<String> {
        self.inner
            .lock()
            .ok()
            .and_then(|i| i.previous.get(input).cloned())
    }

    /// Records where `input` got to in this run.
    pub fn record(&self, input: &str, checkpoint: String, unchanged: bool) {
        if let Ok(mut i) = self.inner.lock() {
            i.taken.insert(
                input.to_string(),
                Outcome {
                    checkpoint,
                    unchanged,
                },
            );
        }
    }

    /// This run's resume points, by input name (inputs that have none are absent).
    pub fn taken(&self) -> BTreeMap<String, Outcome> {
        self.inner
            .lock()
            .map(|i| i.taken.clone())
            .unwrap_or_default()
    }
}

/// Where sources send notices (retries): the CLI prints them as warnings.
#[derive(Clone)]
pub struct Notices(pub Arc<dyn Fn(&str) + Send + Sync>);

impl fmt::Debug for Notices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Notices")
    }
}
