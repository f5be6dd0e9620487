//! The per-work-tree lock: one pai process at a time may write a work tree's history. An
//! advisory `flock` on `.pai_history/session.lock`, released by the kernel when the process
//! dies, so a crashed session never leaves a stale lock behind.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::store;
use crate::history::error::{Context, HistoryError};

/// Attempts before reporting another holder.
const RETRIES: u32 = 10;
/// Pause between attempts.
const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// Held for as long as the session (or the undo/redo) runs.
#[derive(Debug)]
pub(crate) struct WorkTreeLock {
    _file: File,
}

impl WorkTreeLock {
    /// Take the lock for the work tree at `root`, or report who holds it.
    pub(crate) fn acquire(root: &Path) -> Result<WorkTreeLock, HistoryError> {
        let state = store::open(root)?;
        let path = state.path().join("session.lock");
        // Never through a link: a shipped `session.lock -> ~/.bashrc` would otherwise be
        // opened and rewritten.
        let mut file = state
            .open_rw(&["session.lock"])
            .ctx(|| format!("cannot open the lock file {}", path.display()))?;
        // A process forked by this one (a git or RUN child between fork and exec) briefly
        // shares the descriptor of a lock just released; give such a window time to close.
        let mut locked = false;
        for _ in 0..RETRIES {
            locked = try_flock(&file).ctx(|| format!("cannot lock {}", path.display()))?;
            if locked {
                break;
            }
            std::thread::sleep(RETRY_PAUSE);
        }
        if !locked {
            let mut text = String::new();
            // The holder's pid is informational; an unreadable file only loses the pid.
            let _ = file.read_to_string(&mut text);
            return Err(HistoryError::Busy {
                pid: text.trim().parse().ok(),
            });
        }
        // Best effort: the pid only improves the message another process shows.
        let _ = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| write!(file, "{}", std::process::id()));
        Ok(WorkTreeLock { _file: file })
    }
}

/// `Ok(false)` when another open file description holds the lock.
fn try_flock(file: &File) -> std::io::Result<bool> {
    match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_until_the_first_drops() {
        let dir = tempfile::tempdir().unwrap();
        let first = WorkTreeLock::acquire(dir.path()).unwrap();
        match WorkTreeLock::acquire(dir.path()) {
            Err(HistoryError::Busy { pid }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("expected Busy, got {other:?}"),
        }
        drop(first);
        assert!(WorkTreeLock::acquire(dir.path()).is_ok());
    }
}
