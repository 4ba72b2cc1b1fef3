//! Which files a run takes: each input file is compared with what the state recorded
//! when it was last taken (size, modification time, content hash).
//!
//! | what the file is like now | decision |
//! |---|---|
//! | modified less than `--settle` ago (or in the future) | [`Reason::Settling`]: left for the next run, nothing recorded |
//! | never taken | [`Reason::New`]: taken |
//! | same size and modification time as recorded | [`Reason::Unchanged`]: skipped, not even read |
//! | size or time differ, content hash differs | [`Reason::Changed`]: taken again (its records upserted as usual) |
//! | size and time differ… but the hash is the same (`touch`, a copy) | [`Reason::Touched`]: skipped; the new time is recorded |
//!
//! Size and time are enough to tell a file unchanged, as `make` and `rsync` do, so a run
//! over ten thousand unchanged files reads no file content at all (one `stat` each). The
//! hash (BLAKE3 over the bytes as stored, read in 1 MiB steps: bounded memory whatever the
//! size) is computed only for files about to be taken or whose size or time moved, so
//! that a file rewritten with the same bytes is not taken twice.
//!
//! The file is examined *before* it is read. If it changes while the run reads it, the
//! state records the earlier size and time, so the next run sees a difference and takes
//! it again: a change is never missed, at worst read twice.
//!
//! ```
//! use soif_state::scan::{decide, Reason};
//! use std::time::{Duration, SystemTime};
//! let dir = tempfile::tempdir().unwrap();
//! let f = dir.path().join("a.soif");
//! std::fs::write(&f, "@FILE { http://x/\n}\n").unwrap();
//! let d = decide(&f, None, SystemTime::now(), Duration::ZERO).unwrap();
//! assert_eq!(d.reason, Reason::New);
//! // Just written: with a settle time it waits for the next run.
//! let d = decide(&f, None, SystemTime::now(), Duration::from_secs(60)).unwrap();
//! assert_eq!(d.reason, Reason::Settling);
//! ```

use crate::StateError;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The default `--settle`: a file modified less than this long ago is left for the next
/// run. A minute is long enough for a gatherer that writes at least every few seconds,
/// and short next to a nightly schedule.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(60);

/// What the state knows about a file it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// The canonical absolute path (the key).
    pub path: String,
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// BLAKE3 of the file's bytes as stored, hex.
    pub hash: String,
    /// The run that last took it, and when that run committed.
    pub run: i64,
    pub taken: String,
    /// Records read from it by that run.
    pub records: Option<u64>,
}

/// Why a file is taken or skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    New,
    Changed,
    /// Size or time moved but the content is the same: skipped, new time recorded.
    Touched,
    Unchanged,
    /// Modified within the settle time: left for the next run.
    Settling,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::New => "new",
            Reason::Changed => "changed",
            Reason::Touched => "touched",
            Reason::Unchanged => "unchanged",
            Reason::Settling => "settling",
        }
    }

    /// True when the file is read by this run.
    pub fn is_taken(self) -> bool {
        matches!(self, Reason::New | Reason::Changed)
    }
}

/// The decision for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDecision {
    /// The path as the inputs named it.
    pub given: PathBuf,
    /// The canonical absolute path, the state's key.
    pub key: String,
    pub size: u64,
    pub mtime_ns: i64,
    /// Computed for taken and touched files only.
    pub hash: Option<String>,
    pub reason: Reason,
    /// How long ago the file was modified (zero when in the future).
    pub age: Duration,
}

/// The state's key for a file: its canonical absolute path (symbolic links resolved), so
/// that `dumps/a.soif`, `./dumps/a.soif` and a link to it are one file. A path that is
/// not UTF-8 is keyed by its lossy form.
pub fn canonical(path: &Path) -> Result<String, StateError> {
    let abs =
        std::fs::canonicalize(path).map_err(|e| StateError::io(path.display().to_string(), e))?;
    Ok(abs.to_string_lossy().into_owned())
}

/// Nanoseconds since the Unix epoch (negative before it).
pub fn mtime_ns(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

/// Decides about the file at `path`, given what the state recorded (`known`, looked up
/// by [`canonical`]), the time now and the settle time (see the module doc).
pub fn decide(
    path: &Path,
    known: Option<&FileRecord>,
    now: SystemTime,
    settle: Duration,
) -> Result<FileDecision, StateError> {
    let key = canonical(path)?;
    decide_keyed(path, key, known, now, settle)
}

/// As [`decide`], with the key already computed.
pub fn decide_keyed(
    path: &Path,
    key: String,
    known: Option<&FileRecord>,
    now: SystemTime,
    settle: Duration,
) -> Result<FileDecision, StateError> {
    let meta =
        std::fs::metadata(path).map_err(|e| StateError::io(path.display().to_string(), e))?;
    let modified = meta
        .modified()
        .map_err(|e| StateError::io(path.display().to_string(), e))?;
    let age = now.duration_since(modified).unwrap_or(Duration::ZERO);
    let in_future = modified > now;
    let mut d = FileDecision {
        given: path.to_path_buf(),
        key,
        size: meta.len(),
        mtime_ns: mtime_ns(modified),
        hash: None,
        reason: Reason::New,
        age,
    };
    if !settle.is_zero() && (in_future || age < settle) {
        d.reason = Reason::Settling;
        return Ok(d);
    }
    match known {
        Some(k) if k.size == d.size && k.mtime_ns == d.mtime_ns => {
            d.reason = Reason::Unchanged;
        }
        Some(k) => {
            let hash = hash_file(path)?;
            d.reason = if k.size == d.size && k.hash == hash {
                Reason::Touched
            } else {
                Reason::Changed
            };
            d.hash = Some(hash);
        }
        None => {
            d.hash = Some(hash_file(path)?);
        }
    }
    Ok(d)
}

/// BLAKE3 of a file's bytes, hex; read in 1 MiB steps.
pub fn hash_file(path: &Path) -> Result<String, StateError> {
    let context = || format!("hashing {}", path.display());
    let mut file = std::fs::File::open(path).map_err(|e| StateError::io(context(), e))?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(StateError::io(context(), e)),
        };
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// Parses a settle time: seconds (`60`), or with a unit (`90s`, `5m`, `1h`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (e.g. 60, 90s, 5m, 1h)"))?;
    let mult = match unit.trim() {
        "" | "s" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        _ => return Err(format!("unknown unit in `{s}` (use s, m or h)")),
    };
    n.checked_mul(mult)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("duration `{s}` is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use filetime::FileTime;

    fn at(f: &Path, secs_ago: i64) {
        let now = FileTime::now();
        filetime::set_file_mtime(
            f,
            FileTime::from_unix_time(now.unix_seconds() - secs_ago, 0),
        )
        .unwrap();
    }

    #[test]
    fn every_reason() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.soif");
        std::fs::write(&f, "one").unwrap();
        at(&f, 3600);
        let settle = Duration::from_secs(60);
        let d = decide(&f, None, SystemTime::now(), settle).unwrap();
        assert_eq!(d.reason, Reason::New);
        let known = FileRecord {
            path: d.key.clone(),
            size: d.size,
            mtime_ns: d.mtime_ns,
            hash: d.hash.clone().unwrap(),
            run: 1,
            taken: String::new(),
            records: None,
        };
        let unchanged = decide(&f, Some(&known), SystemTime::now(), settle).unwrap();
        assert_eq!(
            (unchanged.reason, unchanged.hash),
            (Reason::Unchanged, None)
        );
        // Same bytes, new time.
        at(&f, 1800);
        let d = decide(&f, Some(&known), SystemTime::now(), settle).unwrap();
        assert_eq!(d.reason, Reason::Touched);
        // Same size and different bytes.
        std::fs::write(&f, "two").unwrap();
        at(&f, 1800);
        assert_eq!(
            decide(&f, Some(&known), SystemTime::now(), settle)
                .unwrap()
                .reason,
            Reason::Changed
        );
        // Being written, and in the future.
        at(&f, 5);
        assert_eq!(
            decide(&f, Some(&known), SystemTime::now(), settle)
                .unwrap()
                .reason,
            Reason::Settling
        );
        at(&f, -600);
        assert_eq!(
            decide(&f, None, SystemTime::now(), settle).unwrap().reason,
            Reason::Settling
        );
        assert_eq!(
            decide(&f, None, SystemTime::now(), Duration::ZERO)
                .unwrap()
                .reason,
            Reason::New
        );
    }

    #[test]
    fn hash_is_blake3_of_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("big");
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&f, &data).unwrap();
        assert_eq!(
            hash_file(&f).unwrap(),
            blake3::hash(&data).to_hex().to_string()
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5 days").is_err());
    }
}
