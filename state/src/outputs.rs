//! File outputs under `--state`: one new file per run, named by the run, written under a
//! temporary name and published (renamed) only when the state says the run is complete.
//!
//! `-o out/records.parquet` in run 42, started 2026-11-24 02:00:00 UTC, writes
//! `out/.records.20261124T020000Z-r42.parquet.pending` and publishes it as
//! `out/records.20261124T020000Z-r42.parquet`. A name holding `{run}` has it replaced
//! instead (`-o 'out/{run}.parquet'` → `out/20261124T020000Z-r42.parquet`). Names sort in
//! run order. The temporary name starts with a dot, so that readers globbing
//! `out/*.parquet` never see a file still being written.
//!
//! ```
//! use soif_state::outputs::{plan, run_label};
//! let label = run_label(42, "2026-11-24T02:00:00Z");
//! assert_eq!(label, "20261124T020000Z-r42");
//! let p = plan(std::path::Path::new("/out/records.parquet"), &label);
//! assert_eq!(p.final_path, std::path::Path::new("/out/records.20261124T020000Z-r42.parquet"));
//! assert_eq!(p.temp, std::path::Path::new("/out/.records.20261124T020000Z-r42.parquet.pending"));
//! ```

use crate::StateError;
use std::path::{Path, PathBuf};

/// Where a run writes one output, and where it is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedOutput {
    pub temp: PathBuf,
    pub final_path: PathBuf,
}

/// A run's label in output names: its start time (UTC, basic ISO 8601) and its number.
pub fn run_label(run: i64, started: &str) -> String {
    let compact: String = started
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    format!("{compact}-r{run}")
}

/// The temporary and final names of `output` for the run labelled `label` (see the
/// module doc). `output` should be absolute, so that a later run started elsewhere can
/// finish or clean up after this one.
pub fn plan(output: &Path, label: &str) -> PlannedOutput {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".to_string());
    let final_name = if name.contains("{run}") {
        name.replace("{run}", label)
    } else {
        // Before the extensions: `records.parquet` → `records.LABEL.parquet`. A leading
        // dot is part of the stem (`.hidden` → `.hidden.LABEL`).
        let skip = usize::from(!name.is_empty());
        match name[skip..].find('.') {
            Some(i) => {
                let at = i + skip;
                format!("{}.{label}{}", &name[..at], &name[at..])
            }
            None => format!("{name}.{label}"),
        }
    };
    let dir = output.parent().unwrap_or(Path::new(""));
    PlannedOutput {
        temp: dir.join(format!(".{final_name}.pending")),
        final_path: dir.join(final_name),
    }
}

/// Removes a run's temporary output and what a sink left beside it when killed while
/// writing it (the Parquet and Arrow sinks write `.NAME.XXXXXX.part` and rename it to
/// `NAME` when done). Missing files are fine.
pub fn remove_temp(temp: &Path) -> Result<(), StateError> {
    remove_if_exists(temp)?;
    let (Some(dir), Some(name)) = (temp.parent(), temp.file_name()) else {
        return Ok(());
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let n = entry.file_name();
        let n = n.to_string_lossy();
        if n.starts_with(&prefix) && n.ends_with(".part") {
            remove_if_exists(&entry.path())?;
        }
    }
    Ok(())
}

fn remove_if_exists(path: &Path) -> Result<(), StateError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StateError::io(format!("removing {}", path.display()), e)),
    }
}

/// Flushes a finished temporary output to disk, so that a published file is whole even
/// after a power cut.
pub fn sync_file(path: &Path) -> Result<(), StateError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| StateError::io(format!("syncing {}", path.display()), e))
}

/// Renames `temp` to `final_path` and syncs the directory, so that the rename itself
/// survives a power cut before the state records it as done.
pub fn publish(temp: &Path, final_path: &Path) -> Result<(), StateError> {
    std::fs::rename(temp, final_path).map_err(|e| {
        StateError::io(
            format!("renaming {} to {}", temp.display(), final_path.display()),
            e,
        )
    })?;
    sync_dir(final_path)
}

fn sync_dir(path: &Path) -> Result<(), StateError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // Directories can be opened and synced on Unix; elsewhere renames are left to the OS.
    #[cfg(unix)]
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StateError::io(format!("syncing directory {}", dir.display()), e))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let p = |o: &str| plan(Path::new(o), "L").final_path;
        assert_eq!(p("/o/a.jsonl"), Path::new("/o/a.L.jsonl"));
        assert_eq!(p("/o/a"), Path::new("/o/a.L"));
        assert_eq!(p("/o/a.b.c"), Path::new("/o/a.L.b.c"));
        assert_eq!(p("/o/.h"), Path::new("/o/.h.L"));
        assert_eq!(p("/o/x-{run}.csv"), Path::new("/o/x-L.csv"));
        assert_eq!(
            plan(Path::new("a.csv"), "L").temp,
            Path::new(".a.L.csv.pending")
        );
    }

    #[test]
    fn temp_and_part_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let p = plan(&dir.path().join("r.parquet"), "L");
        std::fs::write(&p.temp, "x").unwrap();
        let part = dir.path().join("..r.L.parquet.pending.a1B2c3.part");
        std::fs::write(&part, "x").unwrap();
        let other = dir.path().join("keep.parquet");
        std::fs::write(&other, "x").unwrap();
        remove_temp(&p.temp).unwrap();
        assert!(!p.temp.exists() && !part.exists() && other.exists());
        remove_temp(&p.temp).unwrap();
    }
}
