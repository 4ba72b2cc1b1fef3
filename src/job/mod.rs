//! Running a conversion: a [`Job`] (made by `soif convert` from its flags or by `soif
//! run` from a pipeline file) goes through the engine once ([`pass`]), or, with a state,
//! as an incremental run ([`incremental`]) that takes only what is new and commits its
//! outputs exactly once.

pub mod incremental;
pub mod pass;
pub mod state;

pub use pass::Job;
pub use state::IncrementalArgs;

use crate::terminal::{exit_for, fail, Reporter};
use pass::run_job;
use std::process::ExitCode;

/// Runs a job and returns the exit status (printing the summary or the error). With
/// `--state`, [`super::incremental`] decides what to take and commits it.
pub fn execute(mut job: Job) -> ExitCode {
    if job.state.is_some() {
        return incremental::execute(job);
    }
    let reporter = Reporter::new(job.quiet);
    let started = soif_state::now_rfc3339();
    let (summary, result) = match run_job(&mut job, &reporter) {
        Ok(pair) => pair,
        Err(e) => return fail(&e),
    };
    let code = match &result {
        Ok(()) => {
            reporter.summary(&summary);
            exit_for(&summary)
        }
        Err(e) => reporter.failed(&summary, e),
    };
    if let Some(path) = &job.report {
        let report = incremental::plain_report(&job, &started, &summary, &result);
        if let Err(e) = incremental::write_report(path, &report) {
            return fail(&e);
        }
    }
    code
}
