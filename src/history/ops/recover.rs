//! Recovery at the start of every pai command: an operation record left in the journal is an
//! operation whose process died (or whose roll back failed). It is finished — the record is
//! the point of no return, and everything it names is in the object store — after removing
//! the lock files it left; the caller shows the one line returned.

use std::path::Path;

use super::super::error::HistoryError;
use super::super::lock::WorkTreeLock;
use super::super::repo;
use super::super::worktree::WorkTree;
use super::apply::{self, Direction};
use super::locks;
use super::record::{self, Record};

/// Most paths named in the recovery line.
const MAX_NAMED: usize = 5;

/// Finish the operation an earlier pai process left unfinished in the work tree at `root`,
/// if any, and say in one line what was done. `Ok(None)` when there is none, when there is
/// no history here, or when another pai process is still running it.
pub fn recover(root: &Path, wt: &dyn WorkTree) -> Result<Option<String>, HistoryError> {
    let Ok(hr) = repo::open_existing(root) else {
        return Ok(None);
    };
    // No state directory (no HOME): nothing was ever journaled there either.
    let Ok(path) = record::path_for(&hr.repo, root) else {
        return Ok(None);
    };
    if !path.exists() {
        return Ok(None);
    }
    let _lock = match WorkTreeLock::acquire(root) {
        Ok(lock) => lock,
        Err(HistoryError::Busy { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let rec = Record::read(&path)?;
    let removed = locks::remove_ours(&hr.repo, &rec)?;
    let applied = apply::apply(&hr.repo, wt, &rec, Direction::Forward)?;
    record::remove(&path)?;
    Ok(Some(line(&rec, &removed, &applied.kept)))
}

/// "finished the undo of plan 3 of session X interrupted at ..." (shown as a note), plus the locks removed
/// and what was kept as the user left it.
fn line(rec: &Record, removed: &[String], kept: &[String]) -> String {
    let mut text = if rec.has_moves() {
        format!("finished {} interrupted at {}", rec.describe(), rec.started)
    } else {
        format!(
            "cleaned up after {} interrupted at {} before it changed anything",
            rec.describe(),
            rec.started
        )
    };
    if !removed.is_empty() {
        text.push_str(&format!(
            "; removed the lock {} it left",
            removed.join(", ")
        ));
    }
    if !kept.is_empty() {
        let mut named = kept[..kept.len().min(MAX_NAMED)].join(", ");
        if kept.len() > MAX_NAMED {
            named.push_str(&format!(" and {} more", kept.len() - MAX_NAMED));
        }
        text.push_str(&format!("; kept as you changed them since: {}", named));
    }
    text
}
