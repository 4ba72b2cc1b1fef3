//! Reading each side into [`Partitions`]: the sources through the engine and the
//! conversion's transforms into a [`ProjectSink`]; a file target through the engine and
//! its format's source (no transforms) into the same sink; a SQLite catalog row by row.
//! Records either side cannot read are counted with their reasons, not fatal.

use crate::entry::Builder;
use crate::project::{sql_cell, Projection};
use crate::spill::{Partitions, Spilled};
use soif_codecs::Record;
use soif_options::ErrorPolicy;
use soif_pipeline::engine::{Observer, Progress};
use soif_pipeline::{Engine, EngineOptions, Error, Sink, SinkError, Source, Transform};
use soif_store::{SqliteStore, TableInfo};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Reasons kept per side for the report (the count covers them all).
pub const MAX_REASONS: usize = 100;

/// What reading one side found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SideCounts {
    /// Records read (before transforms, for the sources).
    pub records: u64,
    /// Records in the comparison (as the target holds them).
    pub entries: u64,
    /// Records refused: by the decoder, a transform or (sources) the target's sink.
    pub rejected: u64,
    /// The first [`MAX_REASONS`] reasons.
    pub reasons: Vec<String>,
}

/// The projecting sink: each record becomes an [`Entry`] in its partition; a record the
/// target's sink would refuse is rejected with that sink's reason.
pub struct ProjectSink {
    projection: Projection,
    /// The entry of the record in hand.
    entry: Builder,
    parts: Arc<Mutex<Option<Partitions>>>,
    /// Keep deletions (a side that applies them, or a file that holds them); `false`
    /// for a catalog read back, where a deleted record is an absent one.
    tombstones: bool,
}

impl Sink for ProjectSink {
    fn name(&self) -> &str {
        "verify"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        if !self.tombstones && record.action == Some(soif_codecs::Action::Delete) {
            return Ok(());
        }
        self.projection
            .project(record, &mut self.entry)
            .map_err(SinkError::Rejected)?;
        let mut guard = self
            .parts
            .lock()
            .map_err(|_| SinkError::Fatal(Error::Fatal("verify: a reader panicked".into())))?;
        if let Some(p) = guard.as_mut() {
            p.push(&self.entry)
                .map_err(|e| SinkError::Fatal(Error::io("writing verify's temporary files", e)))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

/// Counts rejections with their reasons; passes progress on.
struct Rejections {
    inner: Option<Arc<dyn Observer>>,
    reasons: Mutex<(u64, Vec<String>)>,
}

impl Observer for Rejections {
    fn progress(&self, p: &Progress) {
        if let Some(o) = &self.inner {
            o.progress(p);
        }
    }

    fn warning(&self, message: &str) {
        if let Some(o) = &self.inner {
            o.warning(message);
        }
    }

    fn rejected(&self, message: &str) {
        if let Ok(mut r) = self.reasons.lock() {
            r.0 += 1;
            if r.1.len() < MAX_REASONS {
                r.1.push(message.to_string());
            }
        }
    }
}

/// Reads `source` through `transforms` into partitions of `projection`'s entries. The
/// engine runs under `skip` (or `quarantine`, into the file `engine.policy` names): a
/// record the conversion would reject is reported, not fatal. `observer` gets the
/// progress. `tombstones`: keep deleted records (see [`ProjectSink`]).
pub async fn read_records(
    source: Box<dyn Source>,
    transforms: Vec<Box<dyn Transform>>,
    projection: Projection,
    parts: Partitions,
    mut engine: EngineOptions,
    observer: Option<Arc<dyn Observer>>,
    tombstones: bool,
) -> Result<(Spilled, SideCounts), Error> {
    let shared = Arc::new(Mutex::new(Some(parts)));
    let rejections = Arc::new(Rejections {
        inner: observer,
        reasons: Mutex::new((0, Vec::new())),
    });
    if !matches!(engine.policy, ErrorPolicy::Quarantine(_)) {
        engine.policy = ErrorPolicy::Skip;
    }
    engine.observer = Some(rejections.clone());
    let sink = ProjectSink {
        projection,
        entry: Builder::default(),
        parts: shared.clone(),
        tombstones,
    };
    let summary = Engine::new(engine)
        .run(source, transforms, vec![Box::new(sink)])
        .await?;
    let parts = shared
        .lock()
        .ok()
        .and_then(|mut g| g.take())
        .ok_or_else(|| Error::Fatal("verify: a reader panicked".into()))?;
    let spilled = parts
        .finish()
        .map_err(|e| Error::io("writing verify's temporary files", e))?;
    let (rejected, reasons) = rejections
        .reasons
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    let counts = SideCounts {
        records: summary.records_in,
        entries: spilled.entries,
        rejected,
        reasons,
    };
    Ok((spilled, counts))
}

/// Reads every row of every table of a SQLite catalog into partitions (a table at a time,
/// a row at a time).
pub fn read_sqlite(path: &Path, mut parts: Partitions) -> Result<(Spilled, SideCounts), Error> {
    if !path.is_file() {
        return Err(Error::Config(format!(
            "{}: no such SQLite catalog",
            path.display()
        )));
    }
    let store = SqliteStore::open_read_only(path)
        .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
    let fail = |e: rusqlite::Error| Error::Fatal(format!("{}: reading: {e}", path.display()));
    let mut counts = SideCounts::default();
    let mut scratch = String::new();
    let mut entry = Builder::default();
    for table in store.tables() {
        let mut st = store
            .connection()
            .prepare(&table.select_sql())
            .map_err(fail)?;
        let mut rows = st.query([]).map_err(fail)?;
        while let Some(row) = rows.next().map_err(fail)? {
            row_entry(&table, row, &mut entry, &mut scratch).map_err(fail)?;
            parts
                .push(&entry)
                .map_err(|e| Error::io("writing verify's temporary files", e))?;
            counts.records += 1;
        }
    }
    let spilled = parts
        .finish()
        .map_err(|e| Error::io("writing verify's temporary files", e))?;
    counts.entries = spilled.entries;
    Ok((spilled, counts))
}

/// A row as an entry, made in `e`: each column that is not NULL is an attribute.
fn row_entry(
    table: &TableInfo,
    row: &rusqlite::Row<'_>,
    e: &mut Builder,
    scratch: &mut String,
) -> rusqlite::Result<()> {
    let url = soif_store::tables::value_bytes(row.get_ref(0)?);
    e.start(table.template.clone(), url, None);
    for (i, c) in table.columns.iter().enumerate() {
        if let Some((kind, v)) = sql_cell(row.get_ref(i + 1)?, scratch) {
            e.push(&c.attribute, kind, v);
        }
    }
    e.finish();
    Ok(())
}
