//! The enrichment-table functions Vector's users know, over soif's lookup tables
//! ([`super::tables`]): `get_enrichment_table_record` (the one row that matches, an error
//! when none or several do) and `find_enrichment_table_records` (every row that matches,
//! in file order), with Vector's arguments:
//!
//! ```text
//! get_enrichment_table_record!("types", {"harvest_type": .attributes.Type}, case_sensitive: false)
//! find_enrichment_table_records!("types", {"mime": "text/html"}, select: ["harvest_type"])
//! ```
//!
//! - `table`: a table's name, a literal (the program is checked against the tables
//!   loaded);
//! - `condition`: an object literal whose keys are column names (checked when the program
//!   compiles) and whose values are expressions. A value is compared with the cell as
//!   text (an integer as its digits); an object `{"from": t'…', "to": t'…'}` (either key
//!   may be left out) matches cells that read as dates (RFC 3339, or `YYYY-MM-DD`) in that
//!   range, both ends included;
//! - `select`: the columns to return (all when absent; names that are not columns are
//!   left out);
//! - `case_sensitive` (a literal, default `true`): whether text must match in case;
//! - `wildcard`: a cell holding this value matches any value of an exact-match
//!   condition.
//!
//! A row comes back as an object of its cells, each bytes as in the file. Vector's file
//! tables can give columns types through a schema; soif's cells are always bytes (convert
//! with `to_int!`, `parse_timestamp!` and so on). Exact-match conditions are served by a
//! hash index built when the program compiles; a search with a `wildcard` scans the table.

use super::check::scalar_text;
use super::tables::{Case, Condition, Index, Table, Tables};
use std::sync::{Arc, LazyLock};
use vrl::diagnostic::Label;
use vrl::prelude::*;

/// The two functions, over `tables`.
pub fn functions(tables: &Tables) -> Vec<Box<dyn Function>> {
    vec![
        Box::new(Lookup {
            tables: tables.clone(),
            many: false,
        }),
        Box::new(Lookup {
            tables: tables.clone(),
            many: true,
        }),
    ]
}

static TRUE: LazyLock<Value> = LazyLock::new(|| Value::Boolean(true));

const PARAMETERS: &[Parameter] = &[
    Parameter::required("table", kind::BYTES, "The lookup table to search."),
    Parameter::required(
        "condition",
        kind::OBJECT,
        "The condition to search on: column names (literal keys) and the values they must hold.",
    ),
    Parameter::optional(
        "select",
        kind::ARRAY,
        "The columns to return (all when absent).",
    ),
    Parameter::optional(
        "case_sensitive",
        kind::BOOLEAN,
        "Whether text must match in case.",
    ),
    Parameter::optional(
        "wildcard",
        kind::BYTES,
        "A cell holding this value matches any value.",
    ),
];

/// `get_enrichment_table_record` (`many: false`) or `find_enrichment_table_records`.
#[derive(Debug, Clone)]
struct Lookup {
    tables: Tables,
    many: bool,
}

impl Function for Lookup {
    fn identifier(&self) -> &'static str {
        if self.many {
            "find_enrichment_table_records"
        } else {
            "get_enrichment_table_record"
        }
    }

    fn usage(&self) -> &'static str {
        if self.many {
            "Searches a lookup table (--table NAME=FILE.csv) for the rows that match the condition, and returns them as an array of objects (empty when none match)."
        } else {
            "Searches a lookup table (--table NAME=FILE.csv) for the one row that matches the condition, and returns it as an object. No row, or more than one, is an error."
        }
    }

    fn category(&self) -> &'static str {
        "Enrichment"
    }

    fn return_kind(&self) -> u16 {
        if self.many {
            kind::ARRAY
        } else {
            kind::OBJECT
        }
    }

    fn parameters(&self) -> &'static [Parameter] {
        PARAMETERS
    }

    fn examples(&self) -> &'static [Example] {
        &[]
    }

    fn compile(
        &self,
        state: &TypeState,
        ctx: &mut FunctionCompileContext,
        arguments: ArgumentList,
    ) -> Compiled {
        let span = ctx.span();
        let fault = |m: String| Box::new(CompileFault(m, span)) as Box<dyn DiagnosticMessage>;
        if self.tables.is_empty() {
            return Err(fault(
                "no lookup table is loaded: give one with --table NAME=FILE.csv (or [tables] in a pipeline file)".into(),
            ));
        }
        let names: Vec<Value> = self.tables.names().map(Value::from).collect();
        let name = arguments.required_enum("table", &names, state)?;
        let name = name
            .try_bytes_utf8_lossy()
            .map_err(|e| fault(e.to_string()))?;
        let table = self
            .tables
            .get(&name)
            .cloned()
            .ok_or_else(|| fault(format!("no lookup table `{name}`")))?;
        let mut condition = Vec::new();
        for (key, expr) in arguments.required_object("condition")? {
            let column = table.column(&key).ok_or_else(|| {
                fault(format!(
                    "table `{}` has no column `{key}` (its columns: {})",
                    table.name(),
                    table.columns().join(", ")
                ))
            })?;
            condition.push((column, expr));
        }
        if condition.is_empty() {
            return Err(fault("the condition names no column".into()));
        }
        let case = match arguments
            .optional_literal("case_sensitive", state)?
            .unwrap_or_else(|| TRUE.clone())
        {
            Value::Boolean(false) => Case::Insensitive,
            _ => Case::Sensitive,
        };
        // Index the columns of conditions that are not date ranges.
        let exact: Vec<usize> = condition
            .iter()
            .filter(|(_, e)| !is_range(e))
            .map(|(c, _)| *c)
            .collect();
        let index = (!exact.is_empty()).then(|| Arc::new(table.index(exact, case)));
        Ok(LookupFn {
            table,
            many: self.many,
            condition,
            index,
            case,
            select: arguments.optional("select"),
            wildcard: arguments.optional("wildcard"),
        }
        .as_expr())
    }
}

/// Whether a condition's expression is an object literal with `from` or `to`.
fn is_range(expr: &expression::Expr) -> bool {
    match expr {
        expression::Expr::Container(expression::Container {
            variant: expression::Variant::Object(map),
        }) => map.contains_key("from") || map.contains_key("to"),
        _ => false,
    }
}

#[derive(Debug, Clone)]
struct LookupFn {
    table: Arc<Table>,
    many: bool,
    condition: Vec<(usize, expression::Expr)>,
    index: Option<Arc<Index>>,
    case: Case,
    select: Option<Box<dyn Expression>>,
    wildcard: Option<Box<dyn Expression>>,
}

impl FunctionExpression for LookupFn {
    fn resolve(&self, ctx: &mut Context<'_>) -> Resolved {
        let mut conditions = Vec::with_capacity(self.condition.len());
        for (column, expr) in &self.condition {
            match condition(*column, expr.resolve(ctx)?)? {
                Some(c) => conditions.push(c),
                // A value that no cell can equal (null, an array): nothing matches.
                None => return self.none(),
            }
        }
        let wildcard = match &self.wildcard {
            Some(w) => Some(text(w.resolve(ctx)?).ok_or("wildcard must be a string")?),
            None => None,
        };
        let select = match &self.select {
            Some(s) => Some(self.columns(s.resolve(ctx)?)?),
            None => None,
        };
        let mut rows = self.table.rows_matching(
            &conditions,
            self.case,
            wildcard.as_deref(),
            self.index.as_deref(),
        );
        if self.many {
            Ok(Value::Array(
                rows.map(|r| self.object(r, select.as_deref())).collect(),
            ))
        } else {
            match (rows.next(), rows.next()) {
                (Some(r), None) => Ok(self.object(r, select.as_deref())),
                (None, _) => Err("no rows found".into()),
                (Some(_), Some(_)) => Err("more than one row found".into()),
            }
        }
    }

    fn type_def(&self, _: &TypeState) -> TypeDef {
        if self.many {
            TypeDef::array(Collection::from_unknown(Kind::object(Collection::any()))).fallible()
        } else {
            TypeDef::object(Collection::any()).fallible()
        }
    }
}

impl LookupFn {
    /// The result when nothing can match.
    fn none(&self) -> Resolved {
        if self.many {
            Ok(Value::Array(Vec::new()))
        } else {
            Err("no rows found".into())
        }
    }

    /// `select`'s column names as column numbers (names that are not columns left out).
    fn columns(&self, select: Value) -> Result<Vec<usize>, ExpressionError> {
        match select {
            Value::Array(names) => Ok(names
                .iter()
                .filter_map(|n| n.to_str_lossy().and_then(|n| self.table.column(&n)))
                .collect()),
            _ => Err("select must be an array of column names".into()),
        }
    }

    /// Row `row` as an object of its cells (all columns, or `select`'s).
    fn object(&self, row: usize, select: Option<&[usize]>) -> Value {
        let cells = self.table.row(row).unwrap_or_default();
        let columns = self.table.columns();
        let mut map = ObjectMap::new();
        let mut put = |c: usize| {
            if let (Some(name), Some(cell)) = (columns.get(c), cells.get(c)) {
                map.insert(name.as_str().into(), Value::Bytes(cell.clone()));
            }
        };
        match select {
            Some(cols) => cols.iter().copied().for_each(&mut put),
            None => (0..columns.len()).for_each(&mut put),
        }
        Value::Object(map)
    }
}

/// A condition on `column` from its resolved value; `None` when no cell can match.
fn condition(column: usize, value: Value) -> Result<Option<Condition>, ExpressionError> {
    if let Value::Object(map) = &value {
        if map.contains_key("from") || map.contains_key("to") {
            let date = |k: &str| -> Result<Option<chrono::DateTime<chrono::Utc>>, ExpressionError> {
                match map.get(k) {
                    None => Ok(None),
                    Some(Value::Timestamp(t)) => Ok(Some(*t)),
                    Some(_) => Err(format!("{k} in condition must be a timestamp").into()),
                }
            };
            return Ok(Some(Condition::Dates {
                column,
                from: date("from")?,
                to: date("to")?,
            }));
        }
    }
    Ok(text(value).map(|value| Condition::Equals { column, value }))
}

/// A value as the text a cell would hold (see [`scalar_text`]); `None` for null, arrays
/// and objects.
fn text(value: Value) -> Option<Bytes> {
    scalar_text(value).ok()
}

/// A compile-time error of these functions, pointing at the call.
#[derive(Debug)]
struct CompileFault(String, Span);

impl fmt::Display for CompileFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CompileFault {}

impl DiagnosticMessage for CompileFault {
    fn code(&self) -> usize {
        // Vector's code for enrichment-table errors.
        111
    }

    fn labels(&self) -> Vec<Label> {
        vec![Label::primary(self.0.clone(), self.1)]
    }
}

#[cfg(test)]
mod tests {
    use super::super::Remap;
    use super::*;
    use crate::Collect;
    use soif_codecs::Record;

    fn ctx() -> Tables {
        // Each test its own file: they run at the same time. The table is in memory once
        // loaded, so the directory may go.
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        let path = dir.path().join("types.csv");
        let written = std::fs::write(
            &path,
            "harvest_type,mime,since\nPostScript,application/postscript,1990-05-01\nHTML,text/html,1993-06-01\nhtml,text/x-html,1993-06-01\n",
        );
        assert!(written.is_ok());
        let tables = Tables::load(
            [("types", path.as_path())],
            &crate::transforms::Files::default(),
        );
        match tables {
            Ok(tables) => tables,
            Err(e) => panic!("{e}"),
        }
    }

    fn run(program: &str, types: &[&str]) -> Collect {
        let records: Vec<Record> = types
            .iter()
            .map(|t| Record::new("FILE", "u").with("Type", *t))
            .collect();
        let result =
            Remap::new(program, "t.vrl", &ctx()).and_then(|mut r| Collect::run(&mut r, records));
        match result {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn get_finds_the_one_row_or_fails() {
        let out = run(
            r#"row = get_enrichment_table_record!("types", {"harvest_type": .attributes.Type})
               .attributes.mime = row.mime"#,
            &["PostScript", "GIF"],
        );
        assert_eq!(out.records.len(), 1);
        assert_eq!(
            out.records[0].get_str("mime"),
            Some("application/postscript")
        );
        assert_eq!(out.rejected.len(), 1);
        assert!(out.rejected[0]
            .1
            .starts_with("remap: no rows found (t.vrl:1:"));
        let out = run(
            r#"row = get_enrichment_table_record!("types", {"harvest_type": .attributes.Type}, case_sensitive: false)
               .attributes.mime = row.mime"#,
            &["postscript", "HTML"],
        );
        assert_eq!(
            out.records[0].get_str("mime"),
            Some("application/postscript")
        );
        assert!(out.rejected[0]
            .1
            .starts_with("remap: more than one row found (t.vrl:1:"));
    }

    #[test]
    fn find_returns_every_row_selected() {
        let out = run(
            r#".attributes.mimes = map_values(find_enrichment_table_records!("types", {"since": {"from": t'1993-01-01T00:00:00Z'}}, select: ["mime"])) -> |row| { row.mime }"#,
            &["x"],
        );
        let mimes = out.records[0].get("mimes").map(|v| v.leaves().len());
        assert_eq!(mimes, Some(2));
    }

    #[test]
    fn unknown_tables_and_columns_do_not_compile() {
        let e = Remap::new(
            r#"get_enrichment_table_record!("nope", {"a": 1})"#,
            "t.vrl",
            &ctx(),
        );
        assert!(e.is_err_and(|e| e.is_config()));
        let e = Remap::new(
            r#"get_enrichment_table_record!("types", {"colour": 1})"#,
            "t.vrl",
            &ctx(),
        );
        assert!(e.is_err_and(|e| e.to_string().contains("no column `colour`")));
        let e = Remap::new(
            r#"get_enrichment_table_record!("types", {"mime": 1})"#,
            "t.vrl",
            &Tables::default(),
        );
        assert!(e.is_err_and(|e| e.to_string().contains("no lookup table is loaded")));
    }
}
