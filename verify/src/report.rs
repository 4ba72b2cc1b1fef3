//! [`Report`]: what a verification found, as the summary printed at the end, as JSON
//! (`--report FILE.json`), and [`Examples`] of each class kept for both.

use crate::compare::{Change, Class, Counts, Finding};
use crate::quarantine::QuarantineCheck;
use crate::read::SideCounts;
use std::collections::BTreeMap;
use std::fmt;

/// Records of each class kept as examples (the counts cover them all; `--list` prints
/// every one).
pub const EXAMPLES: usize = 20;

/// One record that does not match, for the report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Example {
    pub template: String,
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
}

/// The first [`EXAMPLES`] findings of each class.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Examples(pub BTreeMap<&'static str, Vec<Example>>);

impl Examples {
    pub fn keep(&mut self, f: &Finding) {
        let list = self.0.entry(f.class.as_str()).or_default();
        if list.len() < EXAMPLES {
            list.push(Example {
                template: String::from_utf8_lossy(&f.template).into_owned(),
                url: String::from_utf8_lossy(&f.url).into_owned(),
                change: f.change.clone(),
            });
        }
    }
}

/// The result of one verification.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The target as given, and its format.
    pub target: String,
    pub format: String,
    /// `match` or `mismatch`.
    pub verdict: &'static str,
    /// The conversion's `--on-error` policy (`fail`, `skip`, `quarantine`): under `fail`
    /// a record the conversion would reject makes the target not match.
    pub policy: &'static str,
    /// Under `quarantine`: whether its file holds the rejected records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<QuarantineCheck>,
    pub counts: Counts,
    /// The sources: records read, records the target would hold, records the conversion
    /// would reject (with the first reasons).
    pub sources: SideCounts,
    /// The target: records read back, and those that could not be read (with reasons).
    pub target_side: SideCounts,
    /// The target's content digest (hex; independent of record order).
    pub target_digest: String,
    pub examples: Examples,
    pub elapsed_seconds: f64,
}

impl Report {
    /// True when the target holds exactly what converting the sources would write.
    pub fn matches(&self) -> bool {
        self.counts.mismatches() == 0
            && self.target_side.rejected == 0
            && !self.conversion_stops()
            && self.quarantine.as_ref().is_none_or(|q| q.holds)
    }

    /// True when the conversion, under `fail`, would stop at a record it rejects.
    pub fn conversion_stops(&self) -> bool {
        self.policy == "fail" && self.sources.rejected > 0
    }
}

/// `what` with its count: `1 record`, `3 records`.
fn records(n: u64) -> String {
    if n == 1 {
        "1 record".into()
    } else {
        format!("{n} records")
    }
}

impl fmt::Display for Report {
    /// The summary: a verdict line, then each class that is not empty with its first
    /// examples.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        writeln!(
            f,
            "soif verify: {}: {} ({})",
            self.verdict, self.target, self.format
        )?;
        writeln!(
            f,
            "  {} matched, {} missing, {} extra, {} changed, {} deletions not applied{}",
            c.matched,
            c.missing,
            c.extra,
            c.changed,
            c.deletion_not_applied,
            if c.deleted > 0 {
                format!(", {} deletions applied", c.deleted)
            } else {
                String::new()
            }
        )?;
        writeln!(
            f,
            "  sources: {} read, {} after the transforms, {} the conversion would reject",
            records(self.sources.records),
            self.sources.entries,
            self.sources.rejected
        )?;
        writeln!(
            f,
            "  target: {} read{}",
            records(self.target_side.entries),
            if self.target_side.rejected > 0 {
                format!(", {} unreadable", self.target_side.rejected)
            } else {
                String::new()
            }
        )?;
        for class in Class::ALL {
            let Some(list) = self.examples.0.get(class.as_str()) else {
                continue;
            };
            writeln!(
                f,
                "  {} ({}):",
                class.as_str().replace('_', " "),
                c.of(class)
            )?;
            for e in list {
                write!(f, "    {} {}", e.template, e.url)?;
                if let Some(ch) = &e.change {
                    let show = |v: &Option<String>| match v {
                        Some(v) => format!("{v:?}"),
                        None => "(absent)".into(),
                    };
                    write!(
                        f,
                        ": {}: {} -> {}",
                        ch.attribute,
                        show(&ch.source),
                        show(&ch.target)
                    )?;
                }
                writeln!(f)?;
            }
            if c.of(class) > list.len() as u64 {
                writeln!(f, "    … (--list prints them all)")?;
            }
        }
        let rejected = if self.conversion_stops() {
            "would be rejected by the conversion (under --on-error fail it stops at the first)"
        } else {
            "would be rejected by the conversion (not expected in the target)"
        };
        for (what, side) in [
            (rejected, &self.sources),
            ("unreadable in the target", &self.target_side),
        ] {
            if side.rejected > 0 {
                writeln!(f, "  {} {what}:", records(side.rejected))?;
                for r in side.reasons.iter().take(EXAMPLES) {
                    writeln!(f, "    {r}")?;
                }
            }
        }
        if let Some(q) = &self.quarantine {
            if q.holds {
                writeln!(
                    f,
                    "  quarantine {}: holds the rejected records byte for byte ({} bytes)",
                    q.file, q.found_bytes
                )?;
            } else {
                writeln!(
                    f,
                    "  quarantine {}: does not hold the rejected records ({} bytes expected, {} found)",
                    q.file, q.expected_bytes, q.found_bytes
                )?;
            }
        }
        Ok(())
    }
}
