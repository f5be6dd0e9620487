//! Updating the index under git's own lock (`index.lock`, created exclusively, renamed over
//! the index), so an update never interleaves with a git command.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::file::IndexFile;
use super::format::{Entry, bad};
use super::shared::{index_path, load_shared_at};
use super::update::by_bytes;
use crate::history::error::HistoryError;

/// Removes the lock file unless the update went through.
struct LockGuard {
    path: PathBuf,
    done: bool,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A rewritten index waiting in `index.lock`: the lock is held (so no git command can
/// change the index meanwhile) until [`PendingIndex::commit`] renames it into place; dropping
/// it leaves the index as it was.
pub(crate) struct PendingIndex {
    index_path: PathBuf,
    guard: LockGuard,
}

impl PendingIndex {
    /// Put the new index in place.
    pub(crate) fn commit(mut self) -> Result<(), HistoryError> {
        fs::rename(&self.guard.path, &self.index_path).map_err(|e| bad(&self.index_path, e))?;
        self.guard.done = true;
        Ok(())
    }
}

/// The index read under git's `index.lock`: no git command can change it until this is
/// dropped (lock removed, index unchanged) or [`LockedIndex::stage`]d.
pub(crate) struct LockedIndex {
    index: Arc<IndexFile>,
    index_path: PathBuf,
    file: File,
    guard: LockGuard,
}

impl std::ops::Deref for LockedIndex {
    type Target = IndexFile;
    fn deref(&self) -> &IndexFile {
        &self.index
    }
}

/// Take the index's lock (`index.lock` beside it) and read the index of the repository whose
/// git directory is `git_dir` (see [`index_path`]).
pub(crate) fn lock(git_dir: &Path) -> Result<LockedIndex, HistoryError> {
    let index_path = index_path(git_dir);
    let mut lock_name = index_path.clone().into_os_string();
    lock_name.push(".lock");
    let lock_path = PathBuf::from(lock_name);
    let file = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock_path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(bad(
                &index_path,
                format!(
                    "{} exists: another git command is running (or one crashed; if none is running, remove that file)",
                    lock_path.display()
                ),
            ));
        }
        Err(e) => return Err(bad(&lock_path, e)),
    };
    let guard = LockGuard {
        path: lock_path,
        done: false,
    };
    // Read under the lock, so no git command changes it before the update lands; the index the
    // plan already read is reused when the file still holds it.
    let index = load_shared_at(index_path.clone())?;
    Ok(LockedIndex {
        index,
        index_path,
        file,
        guard,
    })
}

impl LockedIndex {
    /// Write the index with `updates` applied into the lock file; it takes effect with
    /// [`PendingIndex::commit`]. `None` (and the lock released) when there is nothing to do.
    pub(crate) fn stage(
        mut self,
        updates: &BTreeMap<String, Option<Entry>>,
    ) -> Result<Option<PendingIndex>, HistoryError> {
        if updates.is_empty() {
            return Ok(None);
        }
        let lock_path = self.guard.path.clone();
        self.index
            .write_updated(&by_bytes(updates), &mut self.file)
            .map_err(|e| bad(&lock_path, e))?;
        if let Ok(meta) = fs::metadata(&self.index_path) {
            // Keep the index's permission bits (shared repositories).
            let _ = fs::set_permissions(&lock_path, meta.permissions());
        }
        Ok(Some(PendingIndex {
            index_path: self.index_path,
            guard: self.guard,
        }))
    }
}
