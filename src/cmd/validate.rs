//! `soif validate --schema SCHEMA INPUT…`: check records against an RDM `@SCHEMA` and
//! print a report.
//!
//! The checks are the `validate` transform's (`soif_pipeline::transforms::validate`):
//! Data-Type, Enforce-Uniqueness (bounded memory) and unknown attributes, plus every
//! record that is not valid SOIF. Unlike `convert`, the default error policy is `skip`,
//! so that one run reports every failing record; `--on-error quarantine --quarantine
//! FILE` also collects their original bytes. The report goes to stdout (or `-o`): the
//! schema, the counts, then each failure with its reason and position (the first
//! `--max-failures`). Exit status 0 when every record passed, 3 when some failed.

use crate::input::InputArgs;
use crate::terminal::{fail, runtime, Reporter, EXIT_OK, EXIT_REJECTED};
use clap::Args;
use soif_codecs::rules::schema::load_schema;
use soif_options::ErrorPolicy;
use soif_pipeline::engine::{Observer, Progress};
use soif_pipeline::transforms;
use soif_pipeline::transforms::validate::{Unknown, Validate};
use soif_pipeline::{Engine, Error, Summary};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// Check records against an RDM @SCHEMA and report the ones that fail.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  soif validate --schema document.schema.soif archive/
  soif validate --schema s.soif --unknown reject --json All-Templates.gz
  soif validate --schema s.soif --quarantine bad.soif dump.soif

Checked: the template (when the schema has a Schema-Name), each value's Data-Type
(int, serial, float, date, datetime, varchar(N), boolean; varchar, text and blob take
anything), Enforce-Uniqueness (in bounded memory, spilling fingerprints to disk), and
attributes the schema does not describe (--unknown). Author-2 is checked as a value of
Author (RDM's multi-value convention).

Every failing record is reported: unlike convert, validate's --on-error default is
`skip` (records that are not valid SOIF count as failures too).

Exit status: 0 every record passed, 1 failed to run, 2 usage or configuration error
(e.g. an unreadable schema), 3 some records failed.")]
pub struct ValidateArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// The RDM @SCHEMA file (SOIF) to check against.
    #[arg(long, value_name = "SCHEMA")]
    pub schema: PathBuf,

    /// Attributes the schema does not describe: `allow`, `warn` (listed in the report)
    /// or `reject` (the record fails).
    #[arg(long, value_name = "POLICY", default_value = "warn", value_parser = ["allow", "warn", "reject"])]
    pub unknown: String,

    /// A transform NAME[:ARGS] applied before the check (e.g. `-t dc`); repeatable.
    #[arg(short = 't', long = "transform", value_name = "TRANSFORM")]
    pub transforms: Vec<String>,

    /// How many failures the report lists (all are counted).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_failures: usize,

    /// Write the report as JSON.
    #[arg(long)]
    pub json: bool,

    /// Write the report here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<String>,
}

/// Collects failures and warnings for the report; progress goes to the terminal.
struct Collector {
    reporter: Arc<Reporter>,
    max: usize,
    failures: Mutex<Vec<String>>,
    warnings: Mutex<Vec<String>>,
}

impl Collector {
    fn keep(&self, list: &Mutex<Vec<String>>, message: &str) {
        if let Ok(mut l) = list.lock() {
            if l.len() < self.max {
                l.push(message.to_string());
            }
        }
    }

    fn take(list: &Mutex<Vec<String>>) -> Vec<String> {
        list.lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }
}

impl Observer for Collector {
    fn progress(&self, p: &Progress) {
        self.reporter.progress(p);
    }
    fn warning(&self, message: &str) {
        self.keep(&self.warnings, message);
    }
    fn rejected(&self, message: &str) {
        self.keep(&self.failures, message);
    }
}

pub fn run(args: ValidateArgs) -> ExitCode {
    let reporter = Reporter::new(args.input.quiet);
    let collector = Arc::new(Collector {
        reporter: reporter.clone(),
        max: args.max_failures,
        failures: Mutex::new(Vec::new()),
        warnings: Mutex::new(Vec::new()),
    });
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(&e),
    };
    let result = rt.block_on(async {
        let schema = load_schema(&args.schema)?;
        let unknown = match args.unknown.as_str() {
            "allow" => Unknown::Allow,
            "reject" => Unknown::Reject,
            _ => Unknown::Warn,
        };
        let mut opts = args.input.engine_options(&reporter)?;
        // Report every failure, not just the first: `skip` unless asked otherwise.
        if args.input.on_error.is_none() && args.input.quarantine.is_none() {
            opts.policy = ErrorPolicy::Skip;
        }
        opts.observer = Some(collector.clone());
        let ctx = args.input.transform_context(Some(args.schema.clone()))?;
        let mut chain = args
            .transforms
            .iter()
            .map(|t| transforms::build(t, &ctx))
            .collect::<Result<Vec<_>, _>>()?;
        chain.push(Box::new(Validate::new(
            &schema,
            unknown,
            ctx.memory_budget,
            ctx.temp_dir.clone(),
        )));
        let specs = args.input.specs()?;
        let summary = Engine::new(opts)
            .run(
                Box::new(args.input.source(specs)),
                chain,
                vec![Box::new(soif_sinks::null::NullSink)],
            )
            .await?;
        Ok::<_, Error>((schema, summary))
    });
    rt.shutdown_background();
    let (schema, summary) = match result {
        Ok(s) => s,
        Err(e) => {
            reporter.abandon();
            return fail(&e);
        }
    };
    let failures = Collector::take(&collector.failures);
    let warnings = Collector::take(&collector.warnings);
    let report = Report {
        schema: args.schema.display().to_string(),
        schema_name: schema.name.clone(),
        entries: schema.entries.len(),
        summary: &summary,
        failures: &failures,
        warnings: &warnings,
    };
    let mut buf = Vec::new();
    if args.json {
        report.json(&mut buf);
    } else {
        report.text(&mut buf);
    }
    let written = soif_sinks::output::open_output(args.output.as_deref()).and_then(|mut out| {
        out.write_all(&buf)
            .and_then(|()| out.flush())
            .map_err(|e| Error::io("writing the report", e))
    });
    if let Err(e) = written {
        return fail(&e);
    }
    reporter.summary(&summary);
    if summary.rejected > 0 {
        ExitCode::from(EXIT_REJECTED)
    } else {
        ExitCode::from(EXIT_OK)
    }
}

struct Report<'a> {
    schema: String,
    schema_name: Option<String>,
    entries: usize,
    summary: &'a Summary,
    failures: &'a [String],
    warnings: &'a [String],
}

impl Report<'_> {
    fn valid(&self) -> u64 {
        // Filtering transforms before the check (-t match:…) drop records without
        // failing them: those are neither valid nor failed.
        self.summary.records_out
    }

    fn text(&self, out: &mut Vec<u8>) {
        let s = self.summary;
        let _ = writeln!(
            out,
            "schema: {} ({}{} entries)",
            self.schema,
            self.schema_name
                .as_deref()
                .map(|n| format!("template {n}, "))
                .unwrap_or_default(),
            self.entries
        );
        let _ = writeln!(
            out,
            "records: {} checked, {} valid, {} failed",
            s.records_in,
            self.valid(),
            s.rejected
        );
        if s.quarantined > 0 {
            let _ = writeln!(out, "quarantined: {}", s.quarantined);
        }
        if !self.failures.is_empty() {
            let _ = writeln!(out, "failures:");
            for f in self.failures {
                let _ = writeln!(out, "  {f}");
            }
            let listed = self.failures.len() as u64;
            if s.rejected > listed {
                let _ = writeln!(out, "  … and {} more", s.rejected - listed);
            }
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(out, "warnings:");
            for w in self.warnings {
                let _ = writeln!(out, "  {w}");
            }
        }
        let _ = writeln!(out, "{}", if s.rejected == 0 { "ok" } else { "FAILED" });
    }

    fn json(&self, out: &mut Vec<u8>) {
        let s = self.summary;
        let v = serde_json::json!({
            "schema": self.schema,
            "schema_name": self.schema_name,
            "entries": self.entries,
            "records": s.records_in,
            "valid": self.valid(),
            "failed": s.rejected,
            "quarantined": s.quarantined,
            "failures": self.failures,
            "warnings": self.warnings,
            "ok": s.rejected == 0,
        });
        let _ = serde_json::to_writer_pretty(&mut *out, &v);
        out.push(b'\n');
    }
}
