//! What a run reports: its progress while it reads, and its counts at the end, for the
//! whole run and for each input (`records_in + added = records_out + rejected +
//! filtered`, see the engine's module doc).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A progress report.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Bytes read from the inputs as stored.
    pub bytes: u64,
    /// All inputs' size, when known.
    pub total_bytes: Option<u64>,
    /// Records (and rejected records) decoded so far.
    pub records: u64,
}

/// The counts of a run (see the module doc for how they relate).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub records_in: u64,
    pub records_out: u64,
    pub rejected: u64,
    pub filtered: u64,
    /// Records transforms made beyond one per record in (a `remap` result that is an
    /// array of records).
    pub added: u64,
    /// Records that needed at least one lenient repair.
    pub repaired: u64,
    pub warnings: u64,
    /// Rejected records whose bytes went to the quarantine file.
    pub quarantined: u64,
    /// Rejected records whose bytes were not kept (see the module doc).
    pub not_quarantined: u64,
    /// Bytes read from the inputs as stored.
    pub bytes: u64,
    pub elapsed: Duration,
    /// The counts of each input (by the name records carry in their position), in the
    /// order the inputs were read; records without a position are not in any.
    pub inputs: Vec<InputCounts>,
}

/// One input's share of a run's counts (see [`Summary::inputs`]). `records_in + added =
/// records_out + rejected + filtered`, as for the whole run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputCounts {
    /// The input's name as given (path, URL).
    pub name: String,
    pub records_in: u64,
    pub records_out: u64,
    pub rejected: u64,
    pub filtered: u64,
    pub added: u64,
    /// The first [`INPUT_MESSAGES`] reasons for rejected records.
    pub rejections: Vec<String>,
}

/// How many rejection messages [`InputCounts`] keeps per input.
pub const INPUT_MESSAGES: usize = 10;

/// Tallies per input, keyed by the name in records' positions. Records of one input
/// share one `Arc<str>`, so the last input looked up is found by pointer first.
#[derive(Debug, Default, Clone)]
pub(super) struct PerInput {
    pub(super) index: std::collections::HashMap<Arc<str>, usize>,
    pub(super) tallies: Vec<(Arc<str>, Tally)>,
    pub(super) last: Option<(Arc<str>, usize)>,
}

#[derive(Debug, Default, Clone)]
pub(super) struct Tally {
    pub(super) records_in: u64,
    pub(super) emitted: u64,
    pub(super) added: u64,
    pub(super) rejected: u64,
    pub(super) sink_rejected: u64,
    pub(super) messages: Vec<String>,
}

impl PerInput {
    pub(super) fn tally(&mut self, position: Option<&soif_codecs::Position>) -> Option<&mut Tally> {
        self.tally_of(position?.input.as_ref())
    }

    /// The tally of the input named `name`.
    pub(super) fn tally_of(&mut self, name: Option<&Arc<str>>) -> Option<&mut Tally> {
        let name = name?;
        let i = match &self.last {
            Some((last, i)) if Arc::ptr_eq(last, name) || **last == **name => *i,
            _ => {
                let next = self.tallies.len();
                let i = *self.index.entry(name.clone()).or_insert(next);
                if i == next {
                    self.tallies.push((name.clone(), Tally::default()));
                }
                self.last = Some((name.clone(), i));
                i
            }
        };
        self.tallies.get_mut(i).map(|(_, t)| t)
    }

    /// The inputs' counts: `self` from the transform stage (in, emitted), `rejects`
    /// from the error policy (rejected, refused by sinks, messages).
    pub(super) fn finish(self, rejects: &PerInput) -> Vec<InputCounts> {
        let mut out: Vec<InputCounts> = self
            .tallies
            .iter()
            .map(|(name, t)| {
                let r = rejects
                    .index
                    .get(name)
                    .and_then(|&i| rejects.tallies.get(i))
                    .map(|(_, r)| r.clone())
                    .unwrap_or_default();
                let records_out = t.emitted.saturating_sub(r.sink_rejected);
                InputCounts {
                    name: name.to_string(),
                    records_in: t.records_in,
                    records_out,
                    rejected: r.rejected,
                    filtered: (t.records_in + t.added).saturating_sub(records_out + r.rejected),
                    added: t.added,
                    rejections: r.messages,
                }
            })
            .collect();
        // Inputs whose every record was refused before it was counted in (none today,
        // but a rejection must never vanish from the report).
        for (name, r) in &rejects.tallies {
            if !self.index.contains_key(name) {
                out.push(InputCounts {
                    name: name.to_string(),
                    rejected: r.rejected,
                    rejections: r.messages.clone(),
                    ..InputCounts::default()
                });
            }
        }
        out
    }
}

impl Summary {
    /// Input throughput in MB/s (10^6 bytes).
    pub fn mb_per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.bytes as f64 / 1e6 / secs
        } else {
            0.0
        }
    }
}

impl fmt::Display for Summary {
    /// `1000 records in, 990 out, 10 rejected, 0 filtered, 3 repaired; 12.3 MB in 0.52 s (23.6 MB/s)`
    /// (with `, N added` after `filtered` when transforms made records).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} records in, {} out, {} rejected, {} filtered, ",
            self.records_in, self.records_out, self.rejected, self.filtered,
        )?;
        if self.added > 0 {
            write!(f, "{} added, ", self.added)?;
        }
        write!(
            f,
            "{} repaired; {:.1} MB in {:.2} s ({:.1} MB/s)",
            self.repaired,
            self.bytes as f64 / 1e6,
            self.elapsed.as_secs_f64(),
            self.mb_per_sec()
        )
    }
}
