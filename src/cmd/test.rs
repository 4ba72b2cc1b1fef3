//! `soif test PIPELINE.toml`: run the `[[test]]` cases of a pipeline file through its
//! transform chain and report each as passed or failed, with a diff on failure
//! (docs/testing.md).
//!
//! ```text
//! $ soif test configs/crosswalk.toml
//! running 2 tests from configs/crosswalk.toml
//! test a FILE record becomes a flat record ... ok
//! test records without a title are rejected ... ok
//!
//! 2 passed, 0 failed
//! ```
//!
//! Each case gets a chain of its own, built as `soif run` builds it (the pipeline's
//! `transforms` with [`PipelineConfig::transform_context`]), and its input is read with
//! the `[source]` decoder options (`lenient`, `max_record_size`). The sinks, the
//! `[errors]` policy and the `[state]` are not used: nothing is written. The outcome is
//! checked whole: the records out against `output`, the rejections against `rejected`,
//! the count of records filtered against `filtered`.

use crate::pipeline_file::{Filtered, PipelineConfig, TestCase};
use crate::record_diff::{self, Change};
use crate::terminal::{fail, EXIT_FAILED, EXIT_OK};
use crate::trial::{Read, Records, Trial};
use clap::Args;
use serde_json::Value as Json;
use similar::{Algorithm, DiffTag};
use soif_pipeline::source::Rejection;
use soif_pipeline::transforms::TransformContext;
use soif_pipeline::Error;
use soif_sources::{InputSource, InputSpec};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Run a pipeline file's [[test]] cases: each passed or failed, with a diff.
#[derive(Debug, Args)]
#[command(after_help = "A test case in the pipeline file (docs/testing.md):

  [[test]]
  name = \"titles survive\"
  input = '''
  @FILE { http://example.org/a.html
  Title{4}:\tMaps
  }
  '''                                  # SOIF or JSON Lines; or input_file = \"PATH\"
  output = '''
  {\"template\":\"FILE\",\"url\":\"http://example.org/a.html\",\"attributes\":{\"Title\":\"Maps\"}}
  '''                                  # the records expected out (JSON Lines); none if absent
  # rejected = \"missing\"             # a part of each rejection's reason, or a list of them
  # filtered = 1                      # records dropped on purpose, or true: every record

The pipeline's transforms run as `soif run` runs them; its sinks, [errors] and [state]
are not used. Exit status: 0 every case passed, 1 a case failed, 2 usage error (a bad
file, no [[test]], a transform that cannot be built, an input file that cannot be read).")]
pub struct TestArgs {
    /// The pipeline file.
    #[arg(value_name = "PIPELINE.toml")]
    pub pipeline: PathBuf,

    /// Run only the cases whose name contains this text.
    #[arg(value_name = "FILTER")]
    pub filter: Option<String>,
}

pub fn run(args: TestArgs) -> ExitCode {
    let suite = match Suite::load(&args.pipeline, args.filter.as_deref()) {
        Ok(suite) => suite,
        Err(e) => return fail(&e),
    };
    let stdout = std::io::stdout();
    match suite.run(&mut stdout.lock()) {
        Ok(true) => ExitCode::from(EXIT_OK),
        Ok(false) => ExitCode::from(EXIT_FAILED),
        Err(e) => fail(&e),
    }
}

/// A pipeline file's cases, checked before any runs.
struct Suite {
    path: PathBuf,
    config: PipelineConfig,
    /// What the transforms get (the `[tables]` loaded once).
    context: TransformContext,
    /// The cases to run, each with its `output` read.
    cases: Vec<(TestCase, Vec<Json>)>,
}

impl Suite {
    fn load(path: &Path, filter: Option<&str>) -> Result<Suite, Error> {
        // A pipeline file that cannot be read is a usage error too.
        let config = PipelineConfig::load(path).map_err(|e| match e {
            Error::Io { .. } => Error::Config(e.to_string()),
            e => e,
        })?;
        let at = |what: String| Error::Config(format!("{}: {what}", path.display()));
        if config.tests.is_empty() {
            return Err(at(
                "no [[test]] to run (docs/testing.md says how to write one)".to_string(),
            ));
        }
        // A chain that cannot be built is a usage error before any case runs.
        let context = config.transform_context()?;
        Trial::build(&config.transforms, &context)?;
        let mut cases = Vec::new();
        for (i, case) in config.tests.iter().enumerate() {
            let which = || format!("[[test]] {} ({:?})", i + 1, case.name);
            let output = match &case.output {
                Some(text) => record_diff::parse_lines(text)
                    .map_err(|e| at(format!("{}: output {e}", which())))?,
                None => Vec::new(),
            };
            if let Some(file) = &case.input_file {
                if let Err(e) = std::fs::metadata(file) {
                    return Err(at(format!(
                        "{}: input_file {}: {e}",
                        which(),
                        file.display()
                    )));
                }
            }
            if filter.is_none_or(|f| case.name.contains(f)) {
                cases.push((case.clone(), output));
            }
        }
        if cases.is_empty() {
            return Err(at(format!(
                "no [[test]] name contains {:?}",
                filter.unwrap_or_default()
            )));
        }
        Ok(Suite {
            path: path.to_path_buf(),
            config,
            context,
            cases,
        })
    }

    /// Runs every case, printing the report to `out`; true when all passed.
    fn run(&self, out: &mut dyn Write) -> Result<bool, Error> {
        let io = |e| Error::io("writing the report", e);
        let n = self.cases.len();
        writeln!(
            out,
            "running {n} test{} from {}",
            plural(n),
            self.path.display()
        )
        .map_err(io)?;
        let mut failures = Vec::new();
        for (case, expected) in &self.cases {
            let report = match self.actual(case) {
                Ok(actual) => check(case, expected, &actual),
                Err(e) if e.is_config() => return Err(e),
                Err(e) => vec![format!("  the chain stopped: {e}")],
            };
            let verdict = if report.is_empty() { "ok" } else { "FAILED" };
            writeln!(out, "test {} ... {verdict}", case.name).map_err(io)?;
            if !report.is_empty() {
                failures.push((case.name.as_str(), report));
            }
        }
        if !failures.is_empty() {
            writeln!(out, "\nfailures:").map_err(io)?;
            for (name, report) in &failures {
                writeln!(out, "\n---- {name} ----").map_err(io)?;
                for line in report {
                    writeln!(out, "{line}").map_err(io)?;
                }
            }
        }
        writeln!(
            out,
            "\n{} passed, {} failed",
            n - failures.len(),
            failures.len()
        )
        .map_err(io)?;
        Ok(failures.is_empty())
    }

    /// What the chain makes of a case's input.
    fn actual(&self, case: &TestCase) -> Result<Actual, Error> {
        let source_options = soif_sources::InputSettings {
            format: case.format,
            ..soif_sources::InputSettings::from(&self.config.source)
        };
        // Inline text is read from a temporary file, as a run reads a file (the format
        // found by content unless `format` says).
        let mut _held = None;
        let specs = match (&case.input, &case.input_file) {
            (Some(text), _) => {
                let mut file = tempfile::NamedTempFile::new()
                    .map_err(|e| Error::io("a temporary file for the test input", e))?;
                file.write_all(text.as_bytes())
                    .map_err(|e| Error::io("a temporary file for the test input", e))?;
                let spec = InputSpec::Spooled {
                    path: file.path().to_path_buf(),
                    name: format!("test {:?}", case.name),
                };
                _held = Some(file);
                vec![spec]
            }
            (None, Some(file)) => soif_sources::expand(&[file.display().to_string()])?,
            (None, None) => Vec::new(),
        };
        let source = InputSource::new(specs, source_options);
        let mut records = Records::new(Box::new(source), self.config.source.decoder_options())?;
        let mut trial = Trial::build(&self.config.transforms, &self.context)?;
        let mut actual = Actual::default();
        while let Some(read) = records.next_read()? {
            actual.records_in += 1;
            match read {
                Read::Record(record) => actual.add(trial.apply(record)?),
                Read::Rejected(rejection) => actual.rejected.push(rejection),
            }
        }
        actual.add(trial.finish()?);
        Ok(actual)
    }
}

/// What came out of a case.
#[derive(Debug, Default)]
struct Actual {
    records_in: u64,
    /// Records made beyond one per record in (fan-out).
    added: u64,
    records: Vec<Json>,
    rejected: Vec<Rejection>,
    warnings: Vec<String>,
}

impl Actual {
    fn add(&mut self, outcome: crate::trial::Outcome) {
        self.records
            .extend(outcome.records.iter().map(record_diff::shape));
        self.rejected.extend(outcome.rejected);
        self.warnings.extend(outcome.warnings);
        self.added += outcome.added;
    }

    /// As a run counts them: records in and added, less those out and those rejected.
    fn filtered(&self) -> u64 {
        (self.records_in + self.added)
            .saturating_sub(self.records.len() as u64 + self.rejected.len() as u64)
    }
}

/// The report of a failed case, one line each; empty when it passed.
fn check(case: &TestCase, expected: &[Json], actual: &Actual) -> Vec<String> {
    let mut report = records_report(expected, &actual.records);
    report.extend(rejections_report(case.rejected.items(), &actual.rejected));
    let want = match case.filtered {
        None | Some(Filtered::All(false)) => 0,
        Some(Filtered::All(true)) => actual.records_in,
        Some(Filtered::Count(n)) => n,
    };
    let got = actual.filtered();
    if want != got {
        report.push(format!(
            "  filtered: expected {want}, actual {got} (of {} record{} read)",
            actual.records_in,
            plural(actual.records_in as usize)
        ));
    }
    if !report.is_empty() && !actual.warnings.is_empty() {
        report.push("  warnings:".to_string());
        report.extend(actual.warnings.iter().map(|w| format!("    {w}")));
    }
    report
}

/// The records out against those expected: matched by URL in order (so one record
/// missing does not make every later one differ), then attribute by attribute.
fn records_report(expected: &[Json], actual: &[Json]) -> Vec<String> {
    let url = |r: &Json| r.get("url").map(Json::to_string).unwrap_or_default();
    let (old, new): (Vec<String>, Vec<String>) = (
        expected.iter().map(url).collect(),
        actual.iter().map(url).collect(),
    );
    let mut report = Vec::new();
    let missing = |report: &mut Vec<String>, i: usize| {
        report.push(format!(
            "  record {} expected, not produced: {}",
            i + 1,
            record_diff::line(&expected[i])
        ));
    };
    let extra = |report: &mut Vec<String>, j: usize| {
        report.push(format!(
            "  record {} not expected: {}",
            j + 1,
            record_diff::line(&actual[j])
        ));
    };
    for op in similar::capture_diff_slices(Algorithm::Myers, &old, &new) {
        let (tag, olds, news) = op.as_tag_tuple();
        match tag {
            DiffTag::Delete => olds.for_each(|i| missing(&mut report, i)),
            DiffTag::Insert => news.for_each(|j| extra(&mut report, j)),
            DiffTag::Equal | DiffTag::Replace => {
                let (olds, news): (Vec<usize>, Vec<usize>) = (olds.collect(), news.collect());
                for (&i, &j) in olds.iter().zip(&news) {
                    let changes: Vec<Change> = record_diff::changes(&expected[i], &actual[j]);
                    if changes.is_empty() {
                        continue;
                    }
                    let which = match expected[i].get("url").and_then(Json::as_str) {
                        Some(u) if i == j => format!("record {} ({u})", i + 1),
                        Some(u) => format!("record {} ({u}; expected as record {})", j + 1, i + 1),
                        None => format!("record {}", j + 1),
                    };
                    report.push(format!("  {which}:"));
                    report.extend(
                        changes
                            .iter()
                            .map(|c| record_diff::expected_actual(c, "    ")),
                    );
                }
                olds.iter()
                    .skip(news.len())
                    .for_each(|&i| missing(&mut report, i));
                news.iter()
                    .skip(olds.len())
                    .for_each(|&j| extra(&mut report, j));
            }
        }
    }
    if !report.is_empty() {
        let counts = if expected.len() == actual.len() {
            String::new()
        } else {
            format!(" expected {}, actual {}", expected.len(), actual.len())
        };
        report.insert(0, format!("  records out:{counts}"));
    }
    report
}

/// The rejections against those expected, in order: each must contain its text.
fn rejections_report(expected: &[String], actual: &[Rejection]) -> Vec<String> {
    let mut report = Vec::new();
    for (i, want) in expected.iter().enumerate() {
        match actual.get(i) {
            Some(r) if r.message.contains(want.as_str()) => {}
            Some(r) => report.push(format!(
                "    rejection {}: expected a reason containing {:?}, actual {:?}",
                i + 1,
                want,
                r.message
            )),
            None => report.push(format!(
                "    rejection {}: expected a reason containing {:?}, but none",
                i + 1,
                want
            )),
        }
    }
    for (i, r) in actual.iter().enumerate().skip(expected.len()) {
        report.push(format!(
            "    rejection {} not expected: {:?}",
            i + 1,
            r.message
        ));
    }
    if !report.is_empty() {
        report.insert(
            0,
            format!(
                "  rejected: expected {}, actual {}",
                expected.len(),
                actual.len()
            ),
        );
    }
    report
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rejection(message: &str) -> Rejection {
        Rejection {
            message: message.to_string(),
            position: Default::default(),
            raw: None,
        }
    }

    #[test]
    fn a_missing_record_does_not_shift_the_others() {
        let a = json!({"template":"FILE","url":"a","attributes":{"T":"1"}});
        let b = json!({"template":"FILE","url":"b","attributes":{"T":"2"}});
        let c = json!({"template":"FILE","url":"c","attributes":{"T":"3"}});
        let c2 = json!({"template":"FILE","url":"c","attributes":{"T":"three"}});
        let report = records_report(&[a.clone(), b.clone(), c], &[a, c2]);
        assert_eq!(
            report,
            vec![
                "  records out: expected 3, actual 2".to_string(),
                format!("  record 2 expected, not produced: {b}"),
                "  record 2 (c; expected as record 3):".to_string(),
                "    attributes.T: expected \"3\", actual \"three\"".to_string(),
            ]
        );
    }

    #[test]
    fn rejections_are_matched_in_order_by_a_part_of_the_reason() {
        let actual = [rejection("no Title, at t: byte 0, record 1 (u)")];
        assert!(rejections_report(&["no Title".into()], &actual).is_empty());
        let report = rejections_report(&["no Date".into(), "x".into()], &actual);
        assert_eq!(report[0], "  rejected: expected 2, actual 1");
        assert!(report[1].contains("\"no Date\""), "{report:?}");
        assert!(report[2].ends_with("but none"), "{report:?}");
        let report = rejections_report(&[], &actual);
        assert!(report[1].contains("not expected"), "{report:?}");
    }
}
