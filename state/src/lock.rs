//! One run at a time: an advisory lock on `STATE.db.lock`, a file beside the state.
//!
//! The lock is the operating system's (`flock`, through [`std::fs::File::try_lock`]): it
//! belongs to the open file, so the kernel releases it when the process ends, however it
//! ends (`kill -9`, a crash, a power cut). A lock "left by a killed run" therefore does
//! not exist: the next run simply gets it. Nothing is inferred from PIDs, which can be
//! reused. A second run never waits: [`RunLock::try_acquire`] fails at once with
//! [`StateError::AlreadyRunning`], naming the holder from what it wrote into the file
//! (its PID and start time, for the message only).

use crate::StateError;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The run lock, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
}

impl RunLock {
    /// The lock file of the state at `state`: `STATE.db.lock`.
    pub fn path(state: &Path) -> PathBuf {
        let mut name = state.as_os_str().to_os_string();
        name.push(".lock");
        PathBuf::from(name)
    }

    /// Takes the lock, or fails at once when another process holds it.
    pub fn try_acquire(state: &Path) -> Result<RunLock, StateError> {
        let path = RunLock::path(state);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| StateError::io(format!("cannot open the lock {}", path.display()), e))?;
        match file.try_lock() {
            Ok(()) => {
                // Who holds it, for the message a refused run prints. Best effort: the
                // lock itself is what counts.
                let who = format!(
                    "pid {}, started {}\n",
                    std::process::id(),
                    crate::now_rfc3339()
                );
                let _ = file
                    .set_len(0)
                    .and_then(|()| file.rewind())
                    .and_then(|()| file.write_all(who.as_bytes()))
                    .and_then(|()| file.flush());
                Ok(RunLock { _file: file })
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.take(256).read_to_string(&mut holder);
                let holder = holder.trim();
                Err(StateError::AlreadyRunning {
                    path: state.to_path_buf(),
                    holder: if holder.is_empty() {
                        "a run that has just started".to_string()
                    } else {
                        holder.to_string()
                    },
                })
            }
            Err(std::fs::TryLockError::Error(e)) => {
                Err(StateError::io(format!("cannot lock {}", path.display()), e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_at_once_and_free_after_drop() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("s.db");
        let first = RunLock::try_acquire(&state).unwrap();
        let e = RunLock::try_acquire(&state).unwrap_err();
        assert!(e.is_already_running(), "{e}");
        assert!(
            e.to_string()
                .contains(&format!("pid {}", std::process::id())),
            "{e}"
        );
        drop(first);
        RunLock::try_acquire(&state).unwrap();
    }
}
