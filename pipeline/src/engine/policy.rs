//! The error policy shared by the stages: rejections counted once, the quarantine file,
//! the sinks' warnings.

use super::options::{EngineOptions, Observer};
use super::summary::PerInput;
use super::summary::INPUT_MESSAGES;
use crate::quarantine::QuarantineFile;
use crate::source::Rejection;
use crate::Error;
use soif_codecs::Record;
use soif_options::ErrorPolicy;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// A rejection for a decoded record refused later (by a transform or a sink): the reason,
/// then the input, byte offset, record number and URL.
pub fn rejection_of(record: &Record, reason: &str) -> Rejection {
    let position = record.position.clone().unwrap_or_default();
    // Input, byte offset, record number and URL, as the decoder's own errors give them.
    let message = match &record.position {
        Some(p) if p.url.is_none() && !record.url.is_empty() => {
            let p = p.clone().with_url(Some(record.url_str().into_owned()));
            format!("{reason}, at {p}")
        }
        Some(p) => format!("{reason}, at {p}"),
        None => format!("{reason}, record {}", record.url_str()),
    };
    // `Record::raw` ends at `}`: add the newline that followed it, so quarantined records
    // stay one per line (`}\n@FILE {`), as the decoder's rejected bytes do.
    let raw = match (&record.raw, record.action) {
        (Some(raw), None) if raw.ends_with(b"\n") => raw.clone(),
        (raw, action) => {
            let mut buf = Vec::with_capacity(raw.as_ref().map_or(0, |r| r.len()) + 1);
            match raw {
                Some(raw) => {
                    buf.extend_from_slice(raw);
                    if !raw.ends_with(b"\n") {
                        buf.push(b'\n');
                    }
                }
                None => soif_codecs::soif::encode_record(record, &mut buf),
            }
            // A record from inside `@DELETE { … }` (or `@REFRESH`, `@UPDATE`) goes to the
            // quarantine inside its own envelope: its bytes are exact, and feeding the
            // repaired file back deletes (or refreshes) it as the original would have,
            // instead of storing a deleted record.
            match action {
                Some(action) => crate::source::in_envelope(action, &buf, false),
                None => buf.into(),
            }
        }
    };
    Rejection {
        message,
        position,
        raw: Some(raw),
    }
}

/// State shared by the stages: the error policy and its counts.
pub(super) struct Shared {
    pub(super) policy: ErrorPolicy,
    observer: Option<Arc<dyn Observer>>,
    rejects: Mutex<Rejects>,
    /// Locked only while `rejects` is held (one lock order, no deadlock).
    quarantine: Mutex<Option<QuarantineFile>>,
    sink_warnings: Mutex<u64>,
}

#[derive(Debug, Default, Clone)]
pub(super) struct Rejects {
    pub(super) rejected: u64,
    pub(super) quarantined: u64,
    pub(super) not_quarantined: u64,
    pub(super) sink_rejected_distinct: u64,
    /// Sequence numbers refused by some sink that not every sink has reached yet;
    /// pruned as the sinks advance, so it holds at most a few batches.
    pub(super) pending: BTreeSet<u64>,
    /// Per sink: every sequence number below this has been written or refused.
    pub(super) watermarks: Vec<u64>,
    /// Rejections per input.
    pub(super) per_input: PerInput,
}

impl Shared {
    pub(super) fn new(opts: &EngineOptions, sinks: usize) -> Result<Shared, Error> {
        let quarantine = match &opts.policy {
            ErrorPolicy::Quarantine(path) => Some(QuarantineFile::open(path).map_err(|e| {
                Error::io(
                    format!("cannot replace quarantine file {}", path.display()),
                    e,
                )
            })?),
            ErrorPolicy::Column => {
                return Err(Error::Config(
                    "on_error=column is for the Python and Spark readers, whose rows have a corrupt-record column; the engine's sinks have none (use fail, skip or quarantine)".to_string(),
                ))
            }
            ErrorPolicy::Fail | ErrorPolicy::Skip => None,
        };
        Ok(Shared {
            policy: opts.policy.clone(),
            observer: opts.observer.clone(),
            rejects: Mutex::new(Rejects {
                watermarks: vec![0; sinks],
                ..Rejects::default()
            }),
            quarantine: Mutex::new(quarantine),
            sink_warnings: Mutex::new(0),
        })
    }

    pub(super) fn rejects(&self) -> Rejects {
        self.rejects.lock().map(|r| r.clone()).unwrap_or_default()
    }

    pub(super) fn warn(&self, message: &str) {
        if let Some(o) = &self.observer {
            o.warning(message);
        }
    }

    /// A sink's notice (see [`Sink::take_notices`]): a warning, counted as one.
    pub(super) fn sink_notice(&self, sink: &str, notice: &str) {
        self.add_sink_warnings(1);
        self.warn(&format!("{sink} output: {notice}"));
    }

    pub(super) fn add_sink_warnings(&self, n: u64) {
        if let Ok(mut w) = self.sink_warnings.lock() {
            *w += n;
        }
    }

    pub(super) fn sink_warnings(&self) -> u64 {
        self.sink_warnings.lock().map(|w| *w).unwrap_or(0)
    }

    /// Applies the policy to a rejected record.
    pub(super) fn reject(&self, rejection: Rejection) -> Result<(), Error> {
        let mut rejects = self
            .rejects
            .lock()
            .map_err(|_| Error::Fatal("a pipeline stage panicked".to_string()))?;
        self.reject_locked(&mut rejects, rejection)
    }

    fn reject_locked(&self, rejects: &mut Rejects, rejection: Rejection) -> Result<(), Error> {
        if let Some(t) = rejects.per_input.tally(Some(&rejection.position)) {
            t.rejected += 1;
            if t.messages.len() < INPUT_MESSAGES {
                t.messages.push(rejection.message.clone());
            }
        }
        match &self.policy {
            ErrorPolicy::Fail => {
                // Counted, so that the summary of the failed run adds up.
                rejects.rejected += 1;
                return Err(Error::Rejected(rejection.message));
            }
            // `Column` is refused when the run starts ([`Shared::new`]).
            ErrorPolicy::Skip | ErrorPolicy::Column => {}
            ErrorPolicy::Quarantine(path) => match &rejection.raw {
                Some(raw) => {
                    let mut file = self
                        .quarantine
                        .lock()
                        .map_err(|_| Error::Fatal("a pipeline stage panicked".to_string()))?;
                    // Created by the first record it receives (see `QuarantineFile`).
                    if let Some(f) = file.as_mut() {
                        f.write(raw).map_err(|e| {
                            Error::io(format!("quarantine file {}", path.display()), e)
                        })?;
                    }
                    rejects.quarantined += 1;
                }
                None => {
                    rejects.not_quarantined += 1;
                    self.warn(&format!(
                        "record not quarantined (its bytes were not kept): {}",
                        rejection.message
                    ));
                }
            },
        }
        rejects.rejected += 1;
        if let Some(o) = &self.observer {
            o.rejected(&rejection.message);
        }
        Ok(())
    }

    /// A sink refused record `seq`: counted once however many sinks refuse it.
    /// A record a sink refused: `seq` is its sequence number when the sink refused it as
    /// it was written (then a record refused by several sinks counts once), `None` for
    /// one refused later ([`Sink::take_refused`]).
    pub(super) fn sink_reject(
        &self,
        seq: Option<u64>,
        record: &Record,
        reason: &str,
    ) -> Result<(), Error> {
        let mut rejects = self
            .rejects
            .lock()
            .map_err(|_| Error::Fatal("a pipeline stage panicked".to_string()))?;
        if seq.is_none_or(|seq| rejects.pending.insert(seq)) {
            rejects.sink_rejected_distinct += 1;
            if let Some(t) = rejects.per_input.tally(record.position.as_ref()) {
                t.sink_rejected += 1;
            }
            self.reject_locked(&mut rejects, rejection_of(record, reason))
        } else {
            // Another sink refused it too: report the reason, count it once.
            if let Some(o) = &self.observer {
                o.rejected(&rejection_of(record, reason).message);
            }
            Ok(())
        }
    }

    /// Sink `index` has handled every record below `seq`.
    pub(super) fn sink_done(&self, index: usize, seq: u64) {
        if let Ok(mut rejects) = self.rejects.lock() {
            if let Some(w) = rejects.watermarks.get_mut(index) {
                *w = seq;
            }
            let low = rejects.watermarks.iter().copied().min().unwrap_or(seq);
            rejects.pending = rejects.pending.split_off(&low);
        }
    }

    pub(super) fn finish_quarantine(&self) -> Result<(), Error> {
        if let ErrorPolicy::Quarantine(path) = &self.policy {
            let mut file = self
                .quarantine
                .lock()
                .map_err(|_| Error::Fatal("a pipeline stage panicked".to_string()))?;
            if let Some(f) = file.as_mut() {
                f.flush()
                    .map_err(|e| Error::io(format!("quarantine file {}", path.display()), e))?;
            }
        }
        Ok(())
    }
}
