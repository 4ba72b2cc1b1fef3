//! `soif try -t TRANSFORM… INPUT`: the first records of an input before and after a
//! transform chain, and what became of each (docs/testing.md#trying-a-chain).
//!
//! ```text
//! $ soif try -t collapse -n 1 tests/fixtures/rfc2655/documents.soif
//! record 1 (tests/fixtures/rfc2655/documents.soif: byte 0, record 1): passed
//! < {"template":"DOCUMENT","url":"http://…","attributes":{"Author-1":"…",…}}
//! > {"template":"DOCUMENT","url":"http://…","attributes":{"Author":["…"],…}}
//! ```
//!
//! Records are read as `soif convert` reads them (the same input flags) and go through
//! the chain a run builds, one at a time (see [`crate::trial`]). Nothing is written but
//! the report on stdout: no quarantine, no state.

use crate::input::InputArgs;
use crate::record_diff;
use crate::terminal::{fail, EXIT_OK};
use crate::trial::{Outcome, Read, Records, Trial};
use clap::Args;
use soif_pipeline::transforms::TransformSpec;
use soif_pipeline::Error;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Show the first records of an input before and after a transform chain.
#[derive(Debug, Args)]
#[command(
    after_help = "For each record: a header line with its position and what became \
of it (passed, passed unchanged, filtered, rejected with the reason, or fanned out into K \
records), then `<` the record before the chain and `>` each record after it, in the JSON \
Lines shape (docs/formats.md#jsonl). With --changes, the differences attribute by \
attribute instead of the records after.

Examples:
  soif try -t collapse tests/fixtures/rfc2655/documents.soif
  soif try -t collapse -t select:Title,Author --changes -n 2 archive/
  curl -s http://host/All-Templates.gz | soif try -t dc -n 1 -"
)]
pub struct TryArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// A transform NAME[:ARGS]; repeat to chain them in order (as `soif convert -t`).
    #[arg(short = 't', long = "transform", value_name = "TRANSFORM")]
    pub transforms: Vec<String>,

    /// How many records to read (0: all of them).
    #[arg(short = 'n', long = "records", value_name = "N", default_value_t = 5)]
    pub records: u64,

    /// Show what the chain changed in each record (`-` removed, `+` added, `~` changed)
    /// instead of the records after it.
    #[arg(long)]
    pub changes: bool,

    /// Records as indented JSON, one key a line.
    #[arg(long, conflicts_with = "changes")]
    pub pretty: bool,

    /// Print what the chain does now as a `[[test]]` case named NAME for a pipeline file
    /// (`soif test`): the records read as its input, and the records out, the
    /// rejections and the count filtered as what it expects. Review it before keeping it.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["changes", "pretty"])]
    pub as_test: Option<String>,

    /// An RDM @SCHEMA for the transforms (`validate`, `order`), as `soif convert --schema`.
    #[arg(long, value_name = "SCHEMA.soif")]
    pub schema: Option<PathBuf>,
}

pub fn run(args: TryArgs) -> ExitCode {
    let stdout = std::io::stdout();
    match try_chain(&args, &mut stdout.lock()) {
        Ok(()) => ExitCode::from(EXIT_OK),
        Err(e) => fail(&e),
    }
}

/// The counts of the closing line.
#[derive(Debug, Default)]
struct Tally {
    read: u64,
    passed: u64,
    filtered: u64,
    rejected: u64,
    out: u64,
}

fn try_chain(args: &TryArgs, out: &mut dyn Write) -> Result<(), Error> {
    if args.input.on_error.is_some() || args.input.quarantine.is_some() {
        return Err(Error::Config(
            "soif try shows every rejected record and writes none: --on-error and --quarantine do not apply".into(),
        ));
    }
    let decoder = args.input.options()?.decoder_options();
    let specs: Vec<TransformSpec> = args.transforms.iter().map(|t| t.as_str().into()).collect();
    let mut trial = Trial::build(&specs, &args.input.transform_context(args.schema.clone())?)?;
    let source = args.input.source(args.input.specs()?);
    let mut records = Records::new(Box::new(source), decoder)?;
    if let Some(name) = &args.as_test {
        return as_test(name, args.records, &mut records, &mut trial, out);
    }
    let mut tally = Tally::default();
    let io = |e| Error::io("writing to stdout", e);
    while args.records == 0 || tally.read < args.records {
        let Some(read) = records.next_read()? else {
            break;
        };
        tally.read += 1;
        if tally.read > 1 {
            writeln!(out).map_err(io)?;
        }
        match read {
            Read::Rejected(rejection) => {
                tally.rejected += 1;
                writeln!(
                    out,
                    "record {}: not read: {}",
                    tally.read, rejection.message
                )
                .map_err(io)?;
            }
            Read::Record(record) => {
                let position = record
                    .position
                    .as_ref()
                    .map(|p| format!(" ({p})"))
                    .unwrap_or_default();
                let before = record_diff::shape(&record);
                let outcome = trial.apply(record)?;
                let after: Vec<_> = outcome.records.iter().map(record_diff::shape).collect();
                let what = verdict(&outcome, &before, &after, &mut tally);
                writeln!(out, "record {}{position}: {what}", tally.read).map_err(io)?;
                writeln!(out, "< {}", args.show(&before)).map_err(io)?;
                write_after(args, out, &before, &after, &outcome).map_err(io)?;
            }
        }
    }
    // What the chain held back (`order`) comes out at the end.
    let rest = trial.finish()?;
    if !rest.records.is_empty() || !rest.rejected.is_empty() {
        let after: Vec<_> = rest.records.iter().map(record_diff::shape).collect();
        tally.out += after.len() as u64;
        writeln!(
            out,
            "\nend of input: the chain let go {} record{} it held back",
            after.len(),
            if after.len() == 1 { "" } else { "s" }
        )
        .map_err(io)?;
        for r in &after {
            writeln!(out, "> {}", args.show(r)).map_err(io)?;
        }
        for r in &rest.rejected {
            tally.rejected += 1;
            writeln!(out, "  rejected: {}", r.message).map_err(io)?;
        }
    }
    writeln!(
        out,
        "\n{} record{} read: {} passed, {} filtered, {} rejected; {} out",
        tally.read,
        if tally.read == 1 { "" } else { "s" },
        tally.passed,
        tally.filtered,
        tally.rejected,
        tally.out
    )
    .map_err(io)?;
    Ok(())
}

/// `--as-test NAME`: the records and what the chain makes of them, as a `[[test]]`
/// table. A record the decoder cannot read has no JSON Lines form: it is left out, and a
/// comment says so.
fn as_test(
    name: &str,
    limit: u64,
    records: &mut Records,
    trial: &mut Trial,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let (mut input, mut output, mut rejected) = (String::new(), String::new(), Vec::new());
    let (mut read, mut unreadable) = (0u64, Vec::new());
    // Records out less those added (fan-out): what a run's filtered count weighs them as.
    let add = |outcome: Outcome, output: &mut String, rejected: &mut Vec<String>| {
        for r in &outcome.records {
            output.push_str(&record_diff::line(&record_diff::shape(r)));
            output.push('\n');
        }
        rejected.extend(outcome.reasons);
        (outcome.records.len() as u64).saturating_sub(outcome.added)
    };
    let mut records_out = 0;
    while limit == 0 || read + (unreadable.len() as u64) < limit {
        match records.next_read()? {
            None => break,
            Some(Read::Rejected(r)) => unreadable.push(r.message),
            Some(Read::Record(record)) => {
                read += 1;
                input.push_str(&record_diff::line(&record_diff::shape(&record)));
                input.push('\n');
                records_out += add(trial.apply(record)?, &mut output, &mut rejected);
            }
        }
    }
    records_out += add(trial.finish()?, &mut output, &mut rejected);
    let filtered = read.saturating_sub(records_out + rejected.len() as u64);
    let case = AsTest {
        test: vec![Case {
            name,
            input: &input,
            output: (!output.is_empty()).then_some(output.as_str()),
            rejected,
            filtered: (filtered > 0).then_some(filtered),
        }],
    };
    let text =
        toml::to_string(&case).map_err(|e| Error::Fatal(format!("writing the test case: {e}")))?;
    let io = |e| Error::io("writing to stdout", e);
    for message in &unreadable {
        writeln!(out, "# left out, not readable: {message}").map_err(io)?;
    }
    out.write_all(text.as_bytes()).map_err(io)
}

/// A `[[test]]` table as `--as-test` prints it.
#[derive(serde::Serialize)]
struct AsTest<'a> {
    test: Vec<Case<'a>>,
}

#[derive(serde::Serialize)]
struct Case<'a> {
    name: &'a str,
    input: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rejected: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filtered: Option<u64>,
}

/// What became of one record.
fn verdict(
    outcome: &Outcome,
    before: &serde_json::Value,
    after: &[serde_json::Value],
    tally: &mut Tally,
) -> String {
    tally.out += after.len() as u64;
    match (after, outcome.rejected.as_slice()) {
        ([], []) => {
            tally.filtered += 1;
            "filtered (no record out)".to_string()
        }
        ([], [one]) => {
            tally.rejected += 1;
            format!("rejected: {}", one.message)
        }
        ([one], []) => {
            tally.passed += 1;
            if record_diff::changes(before, one).is_empty() {
                "passed unchanged".to_string()
            } else {
                "passed".to_string()
            }
        }
        (records, rejected) => {
            tally.passed += 1;
            tally.rejected += rejected.len() as u64;
            let mut s = format!("fanned out into {} records", records.len());
            if !rejected.is_empty() {
                s.push_str(&format!(", {} rejected", rejected.len()));
            }
            s
        }
    }
}

/// The records after the chain (or what changed), the rejections of a fan-out and the
/// warnings.
fn write_after(
    args: &TryArgs,
    out: &mut dyn Write,
    before: &serde_json::Value,
    after: &[serde_json::Value],
    outcome: &Outcome,
) -> std::io::Result<()> {
    for (i, r) in after.iter().enumerate() {
        if args.changes {
            if after.len() > 1 {
                writeln!(out, "> record {} of {}:", i + 1, after.len())?;
            }
            for c in record_diff::changes(before, r) {
                writeln!(out, "{}", record_diff::before_after(&c, "  "))?;
            }
        } else {
            writeln!(out, "> {}", args.show(r))?;
        }
    }
    if !after.is_empty() || outcome.rejected.len() > 1 {
        for r in &outcome.rejected {
            writeln!(out, "  rejected: {}", r.message)?;
        }
    }
    for w in &outcome.warnings {
        writeln!(out, "  warning: {w}")?;
    }
    Ok(())
}

impl TryArgs {
    fn show(&self, record: &serde_json::Value) -> String {
        if self.pretty {
            serde_json::to_string_pretty(record).unwrap_or_else(|_| record.to_string())
        } else {
            record_diff::line(record)
        }
    }
}
