//! `remap`: a program in VRL, the Vector Remap Language, run on every record.
//!
//! ```
//! use soif_pipeline::transforms::remap::Remap;
//! use soif_pipeline::transforms::remap::tables::Tables;
//! use soif_pipeline::{Collect, Transform};
//! use soif_codecs::Record;
//!
//! let program = r#"
//!     .attributes.title = upcase(string!(.attributes.Title))
//!     del(.attributes.Title)
//!     .attributes.collection = "ECRC"
//! "#;
//! let mut remap = Remap::new(program, "example.vrl", &Tables::default()).unwrap();
//! let out = Collect::run(&mut remap, [Record::new("FILE", "ftp://x/").with("Title", "Sorts")]).unwrap();
//! assert_eq!(out.records[0].get_str("title"), Some("SORTS"));
//! assert_eq!(out.records[0].get_str("collection"), Some("ECRC"));
//! ```
//!
//! The program is compiled once, when the transform is built: a program that does not
//! compile is an [`Error::Config`] holding VRL's own diagnostic (file, line, column, the
//! caret, the hint), before any record is read. Then, for each record:
//! - the record is the event `.` in its JSON Lines shape, and where it came from is
//!   metadata (`%soif.input`, `%soif.offset`, `%soif.record`) — see [`value`];
//! - the event after the program is the record passed on, checked ([`check`]); an array
//!   of objects is several records, in order (the records added are reported through
//!   [`Emit::added`], so the run's counts still add up);
//! - `abort` drops the record on purpose (it counts as *filtered*);
//! - a runtime error, such as a failed `assert!(…, message: "…")`, rejects the record
//!   with the program's message, as does a result that cannot be a record; the engine
//!   adds the record's position and applies `--on-error` (quarantine keeps its original
//!   bytes).
//!
//! The functions are VRL's standard library without those that reach the network, the
//! environment or the system (see the `vrl` dependency in the workspace's Cargo.toml),
//! plus the lookup-table functions of [`enrichment`]. Times are in UTC. The user's guide
//! is docs/transforms.md#remap.

pub mod check;
pub mod enrichment;
pub mod tables;
pub mod value;

use super::files::Files;
use crate::{Emit, Error, Transform};
use soif_codecs::Record;
use std::path::Path;
use std::sync::Arc;
use tables::Tables;
use vrl::compiler::runtime::{Runtime, Terminate};
use vrl::compiler::state::{ExternalEnv, TypeState};
use vrl::compiler::unused_expression_checker::check_for_unused_results;
use vrl::compiler::{CompileConfig, Compiler, Function, Program, TargetValue, TimeZone};
use vrl::diagnostic::{DiagnosticList, Formatter};
use vrl::parser::ast::{Expr, Literal, Node, QueryTarget, RootExpr};
use vrl::parser::Span;
use vrl::path::PathPrefix;
use vrl::value::{ObjectMap, Secrets, Value};

/// The largest program file read: 16 MiB.
pub const MAX_PROGRAM_FILE: u64 = 16 << 20;

/// The `remap` transform: one compiled program and the runtime that runs it.
pub struct Remap {
    program: Arc<Program>,
    /// The program's text and name, to tell where a runtime error happened.
    source: Arc<str>,
    origin: Arc<str>,
    runtime: Runtime,
    timezone: TimeZone,
    /// Whether the program reads `%…`: metadata is built per record only then.
    reads_metadata: bool,
    /// The compiler's warnings, reported once when the first record arrives.
    warnings: Option<String>,
    /// The records of one result (reused).
    results: Vec<Record>,
    /// The tables the program was compiled with, for the copies ([`Transform::fork`]).
    tables: Tables,
    /// A copy compiles the program again, on its own thread when its first record
    /// arrives: copies that shared one program would share its values (literals), whose
    /// reference counts would then bounce between cores on every record.
    compile_again: bool,
    /// Makes each record's event, reusing the keys of the last.
    events: value::Events,
}

impl Remap {
    /// Compiles the program in the file `path` (`-t remap:FILE.vrl`), read through
    /// `files`; its lookup functions search `tables`.
    pub fn from_file(path: &Path, files: &Files, tables: &Tables) -> Result<Remap, Error> {
        let bytes = files.read(path, "remap program", MAX_PROGRAM_FILE)?;
        let source = String::from_utf8(bytes.to_vec()).map_err(|_| {
            Error::Config(format!(
                "remap: the program {} is not UTF-8 text",
                path.display()
            ))
        })?;
        Remap::new(&source, &path.display().to_string(), tables)
    }

    /// Compiles the program `source`; `origin` names it in messages (a file name, or
    /// where a pipeline file holds it).
    pub fn new(source: &str, origin: &str, tables: &Tables) -> Result<Remap, Error> {
        let (program, warnings) = compile(source, origin, tables)?;
        Ok(Remap::with_program(
            Arc::new(program),
            Arc::from(source),
            Arc::from(origin),
            tables.clone(),
            warnings,
        ))
    }

    fn with_program(
        program: Arc<Program>,
        source: Arc<str>,
        origin: Arc<str>,
        tables: Tables,
        warnings: Option<String>,
    ) -> Remap {
        let reads_metadata = program
            .info()
            .target_queries
            .iter()
            .chain(&program.info().target_assignments)
            .any(|p| p.prefix == PathPrefix::Metadata);
        Remap {
            program,
            source,
            origin,
            runtime: Runtime::default(),
            timezone: TimeZone::parse("UTC").unwrap_or_default(),
            reads_metadata,
            warnings,
            results: Vec::new(),
            tables,
            compile_again: false,
            events: value::Events::default(),
        }
    }
}

/// The functions a program may call: VRL's standard library (as built) and the
/// lookup-table functions over `tables`.
pub fn functions(tables: &Tables) -> Vec<Box<dyn Function>> {
    let mut fns = vrl::stdlib::all();
    fns.extend(enrichment::functions(tables));
    fns
}

/// Compiles `source`: the program and its warnings (formatted), or a config error with
/// VRL's diagnostic (those of the program as written, as `compile_with_state` gives
/// them). The program compiled is the one written in the form [`as_run`] gives it,
/// which does the same to the event without copying it as the program's value.
fn compile(
    source: &str,
    origin: &str,
    tables: &Tables,
) -> Result<(Program, Option<String>), Error> {
    let not_compiled = |errors| {
        Error::Config(format!(
            "remap: the program {origin} does not compile:\n{}",
            diagnostics(source, origin, errors)
        ))
    };
    let ast = vrl::parser::parse(source)
        .map_err(|e| not_compiled(DiagnosticList::from(vec![Box::new(e) as Box<_>])))?;
    let state = TypeState {
        local: Default::default(),
        external: ExternalEnv::new_with_kind(value::event_kind(), value::metadata_kind()),
    };
    let fns = functions(tables);
    let run = Compiler::compile(
        &fns,
        as_run(ast.clone(), source.len()),
        &state,
        CompileConfig::default(),
    );
    let mut compiled = match run {
        Ok(compiled) => compiled,
        // The diagnostics of the program as written.
        Err(_) => Compiler::compile(&fns, ast.clone(), &state, CompileConfig::default())
            .map_err(not_compiled)?,
    };
    compiled.warnings.extend(check_for_unused_results(&ast));
    let warnings =
        (!compiled.warnings.is_empty()).then(|| diagnostics(source, origin, compiled.warnings));
    Ok((compiled.program, warnings))
}

/// A program in the form it runs in. Its value is never used (the event is the
/// result), yet VRL computes the last expression's value by copying it: the whole event
/// for a program ending in `.`, the value assigned for one ending in an assignment. So
/// queries of the event or metadata standing alone at the top level (`.`, `.url`,
/// `%soif`: they cannot fail and change nothing) are left out, and the program ends
/// with a `null` of its own, before which every expression runs as one whose value is
/// unused (an assignment then stores its value without copying it).
fn as_run(mut ast: vrl::parser::Program, end: usize) -> vrl::parser::Program {
    ast.0.retain(|root| {
        !matches!(root.inner(), RootExpr::Expr(e) if matches!(e.inner(),
            Expr::Query(q) if matches!(q.inner().target.inner(), QueryTarget::External(_))))
    });
    let end = Span::new(end, end);
    ast.0.push(Node::new(
        end,
        RootExpr::Expr(Node::new(end, Expr::Literal(Node::new(end, Literal::Null)))),
    ));
    ast
}

/// VRL's diagnostics as it prints them, with `origin` as the file name in each
/// location line (`┌─ map.vrl:3:9`); in colour when standard error is a terminal.
fn diagnostics(source: &str, origin: &str, list: DiagnosticList) -> String {
    let mut f = Formatter::new(source, list);
    f.enable_colors(colours());
    f.to_string()
        .trim_start_matches('\n')
        .replace("┌─ :", &format!("┌─ {origin}:"))
}

fn colours() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

impl Remap {
    /// A runtime error as a rejection's reason: the program's message, then where in
    /// the program. VRL says `function call error for "assert" at (43:89): no bad URLs`,
    /// with byte offsets; this gives `remap: no bad URLs (map.vrl:2:5, assert)`.
    fn runtime_error(&self, message: &str) -> String {
        let parsed = message
            .strip_prefix("function call error for \"")
            .and_then(|m| m.split_once("\" at ("))
            .and_then(|(function, m)| {
                let (span, text) = m.split_once("): ")?;
                let start: usize = span.split_once(':')?.0.parse().ok()?;
                Some((function, start, text))
            });
        match parsed {
            Some((function, start, text)) => {
                let (line, column) = line_column(&self.source, start);
                format!(
                    "remap: {text} ({}:{line}:{column}, {function})",
                    self.origin
                )
            }
            None => format!("remap: {message}"),
        }
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `source`.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl Transform for Remap {
    fn name(&self) -> &str {
        "remap"
    }

    /// The same program with a runtime of its own, compiled again on the copy's thread
    /// (see `compile_again`); the compiler's warnings stay with the original.
    fn fork(&self) -> Option<Box<dyn Transform>> {
        let mut copy = Remap::with_program(
            self.program.clone(),
            self.source.clone(),
            self.origin.clone(),
            self.tables.clone(),
            None,
        );
        copy.compile_again = true;
        Some(Box::new(copy))
    }

    fn apply(&mut self, record: Record, out: &mut dyn Emit) -> Result<(), Error> {
        if std::mem::take(&mut self.compile_again) {
            // It compiled once already: the same program again (or, should that fail,
            // the shared one).
            if let Ok((program, _)) = compile(&self.source, &self.origin, &self.tables) {
                self.program = Arc::new(program);
            }
        }
        if let Some(w) = self.warnings.take() {
            out.warn(format!("remap: the program compiled with warnings:\n{w}"));
        }
        let metadata = if self.reads_metadata {
            value::metadata(&record)
        } else {
            Value::Object(ObjectMap::new())
        };
        let mut target = TargetValue {
            value: self.events.event(&record),
            metadata,
            secrets: Secrets::default(),
        };
        let resolved = self
            .runtime
            .resolve(&mut target, &self.program, &self.timezone);
        self.runtime.clear();
        match resolved {
            Ok(_) => {}
            // `abort`: dropped on purpose.
            Err(Terminate::Abort(_)) => return Ok(()),
            Err(Terminate::Error(e)) => {
                let reason = self.runtime_error(&e.to_string());
                return out.reject(record, reason);
            }
            Err(Terminate::Interrupted) => {
                return out.reject(record, "remap: the program was interrupted".into())
            }
        }
        self.results.clear();
        let checked = check::records(&mut target.value, &record, &mut self.results);
        self.events.recycle(target.value);
        if let Err(fault) = checked {
            return out.reject(
                record,
                format!("remap: the result is not a record: {fault}"),
            );
        }
        let n = self.results.len();
        if n > 1 {
            out.added(&record, n as u64 - 1);
        }
        // Every record made from this one carries its position and original bytes (a
        // rejection later on quarantines what was read).
        let mut source = record;
        let mut results = std::mem::take(&mut self.results);
        let last = results.pop();
        for mut r in results.drain(..) {
            r.position.clone_from(&source.position);
            r.raw.clone_from(&source.raw);
            r.repairs.clone_from(&source.repairs);
            out.emit(r)?;
        }
        self.results = results;
        if let Some(mut r) = last {
            r.position = source.position.take();
            r.raw = source.raw.take();
            r.repairs = std::mem::take(&mut source.repairs);
            out.emit(r)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Collect;
    use bytes::Bytes;
    use soif_codecs::Position;

    fn remap(program: &str) -> Remap {
        match Remap::new(program, "test.vrl", &Tables::default()) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        }
    }

    fn run(program: &str, records: Vec<Record>) -> Collect {
        match Collect::run(&mut remap(program), records) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    fn positioned(url: &str, n: u64) -> Record {
        let mut r = Record::new("FILE", url.to_string()).with("Title", "T");
        r.position = Some(Position::new(n * 100, n).with_input(Some(Arc::from("in.soif"))));
        r.raw = Some(Bytes::from(format!("@FILE {{ {url}\nTitle{{1}}:\tT\n}}\n")));
        r
    }

    #[test]
    fn the_event_after_the_program_is_passed_on() {
        let out = run(
            ".attributes.Title = downcase!(.attributes.Title); .attributes.n = 3",
            vec![positioned("u", 1)],
        );
        assert_eq!(out.records.len(), 1);
        let r = &out.records[0];
        assert_eq!(r.get_str("Title"), Some("t"));
        assert_eq!(r.get_str("n"), Some("3"));
        assert!(
            r.raw.is_some() && r.position.is_some(),
            "keeps raw and position"
        );
    }

    #[test]
    fn abort_filters_and_errors_reject_with_the_programs_message() {
        let out = run(
            r#"if .url == "drop" { abort }
               assert!(.url != "bad", message: "no bad URLs")"#,
            vec![
                positioned("drop", 1),
                positioned("bad", 2),
                positioned("ok", 3),
            ],
        );
        assert_eq!(out.records.len(), 1);
        assert_eq!(out.rejected.len(), 1);
        assert_eq!(
            out.rejected[0].1,
            "remap: no bad URLs (test.vrl:2:16, assert)"
        );
        assert!(
            out.rejected[0].0.raw.is_some(),
            "the rejected record keeps its bytes"
        );
        assert_eq!(out.added, 0);
    }

    #[test]
    fn a_result_that_is_not_a_record_is_rejected_naming_the_attribute() {
        let out = run(".attributes.\"Bad Name\" = 1", vec![positioned("u", 1)]);
        assert_eq!(out.rejected.len(), 1);
        assert!(
            out.rejected[0].1.contains(".attributes.\"Bad Name\""),
            "{}",
            out.rejected[0].1
        );
    }

    #[test]
    fn an_array_of_objects_fans_out_in_order() {
        let out = run(
            r#"a = .; b = .; a.url = "first"; b.url = "second"; . = [a, b]"#,
            vec![positioned("u", 1)],
        );
        let urls: Vec<_> = out
            .records
            .iter()
            .map(|r| r.url_str().into_owned())
            .collect();
        assert_eq!(urls, ["first", "second"]);
        assert_eq!(out.added, 1);
        assert!(out
            .records
            .iter()
            .all(|r| r.position.as_ref().is_some_and(|p| p.record == 1)));
    }

    #[test]
    fn metadata_tells_where_the_record_came_from() {
        let out = run(
            r##".attributes.from = %soif.input + "#" + to_string(%soif.record) + "@" + to_string(%soif.offset)"##,
            vec![positioned("u", 7)],
        );
        assert_eq!(out.records[0].get_str("from"), Some("in.soif#7@700"));
    }

    #[test]
    fn binary_values_pass_untouched() {
        let bytes = Bytes::from_static(b"\x89PNG\r\n\x1a\n\x00\xff");
        let r = Record::new("FILE", "u")
            .with("Thumbnail", bytes.clone())
            .with("T", "x");
        let out = run(".attributes.T = \"y\"", vec![r]);
        assert_eq!(
            out.records[0].get("Thumbnail").and_then(|v| v.as_bytes()),
            Some(&bytes)
        );
    }

    #[test]
    fn the_program_runs_without_copying_its_value() {
        // Queries standing alone are left out of the program run.
        let r = remap(".url\n.attributes.n = 1\n.");
        let queries = &r.program.info().target_queries;
        assert!(queries.is_empty(), "{queries:?}");
        let out = run(".attributes.n = 1\n.", vec![positioned("u", 1)]);
        assert_eq!(out.records[0].get_str("n"), Some("1"));
        let out = run("abort", vec![positioned("u", 1)]);
        assert!(out.records.is_empty() && out.rejected.is_empty());
        let out = run(".", vec![positioned("u", 1)]);
        assert_eq!(out.records[0], positioned("u", 1));
    }

    #[test]
    fn keys_reused_from_record_to_record_change_no_result() {
        // Records whose names come and go, repeat, or are not UTF-8, through one
        // transform (keys reused) and through a new one for each record.
        let records = || {
            vec![
                Record::new("FILE", "1").with("A", "a").with("B", "b"),
                Record::new("FILE", "2").with("B", "b2").with("C", "c"),
                Record::new("FILE", "3")
                    .with("K", "1")
                    .with("A", "a3")
                    .with("K", "2"),
                Record::new("FILE", "4").with("K", "x").with("B", ""),
                Record::new("FILE", "5")
                    .with("A", "a5")
                    .with("K", "3")
                    .with("K", "4")
                    .with("K", "5"),
                Record::new("FILE", "6"),
                Record {
                    attributes: vec![soif_codecs::Attribute::new(
                        Bytes::from_static(b"Ann\xe9e"),
                        "1994",
                    )],
                    ..Record::new("FILE", "7")
                },
                Record::new("FILE", "8").with("A", "a8").with("B", "b8"),
            ]
        };
        for program in [
            ".",
            "del(.attributes.A)",
            ".attributes.New = 1",
            ".attributes.K = [\"k\"]",
            "if .url == \"4\" { .attributes.New = null }",
            "if .url == \"2\" { .attributes.A = null }",
            ".attributes = {\"only\": .url}",
            "if .url == \"5\" { . = [., .] }",
        ] {
            let mut one = remap(program);
            let together = match Collect::run(&mut one, records()) {
                Ok(c) => c,
                Err(e) => panic!("{e}"),
            };
            let mut apart = Collect::default();
            for r in records() {
                let c = run(program, vec![r]);
                apart.records.extend(c.records);
                apart.rejected.extend(c.rejected);
            }
            assert_eq!(together.records, apart.records, "{program}");
            assert_eq!(together.rejected, apart.rejected, "{program}");
        }
    }

    #[test]
    fn a_compile_error_is_a_config_error_with_the_diagnostic() {
        let e = Remap::new(
            "\n.x = upcase(.attributes.Title)\n",
            "map.vrl",
            &Tables::default(),
        )
        .err()
        .map(|e| (e.is_config(), e.to_string()));
        let (config, message) = e.unwrap_or_default();
        assert!(config);
        assert!(message.contains("map.vrl does not compile"), "{message}");
        assert!(message.contains("┌─ map.vrl:2:"), "{message}");
        assert!(message.contains("error[E"), "{message}");
    }
}
