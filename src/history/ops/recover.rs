//! Recovery at the start of every pai command: an operation record left in the journal is an
//! operation whose process died (or whose roll back failed). It is finished — the record is
//! the point of no return, and everything it names is in the object store — after removing
//! the lock files it left; the caller shows the one line returned. A plan record
//! (`plan.rs`) is a plan killed while its steps were writing: it is rolled back.

use std::path::Path;

use git2::Repository;

use super::super::error::HistoryError;
use super::apply;
use super::direction::Direction;
use super::journal_file;
use super::locks;
use super::plan;
use super::record::{OpKind, Record};
use crate::history::git::lock::WorkTreeLock;
use crate::history::git::repo;
use crate::history::ops::work_tree::WorkTree;

/// Most paths named in the recovery line.
const MAX_NAMED: usize = 5;

/// Whether an operation or a plan of the work tree at `root` was interrupted and waits for
/// [`recover`] (a look at the user's state directory, nothing more).
pub fn interrupted(root: &Path) -> bool {
    let Ok(hr) = repo::open_existing(root) else {
        return false;
    };
    interrupted_in(&hr.repo, root)
}

/// [`interrupted`], for the work tree at `root` of `repo`, already open.
pub(crate) fn interrupted_in(repo: &Repository, root: &Path) -> bool {
    journal_file::path_for(repo, root)
        .is_ok_and(|record| record.exists() || plan::beside(&record).exists())
}

/// Finish the operation an earlier pai process left unfinished in the work tree at `root`,
/// if any, and say in one line what was done. `Ok(None)` when there is none, when there is
/// no history here, or when another pai process is still running it.
pub fn recover(root: &Path, wt: &dyn WorkTree) -> Result<Option<String>, HistoryError> {
    let Ok(hr) = repo::open_existing(root) else {
        return Ok(None);
    };
    // No state directory (no HOME): nothing was ever journaled there either.
    let (Ok(path), Ok(plan_path)) = (
        journal_file::path_for(&hr.repo, root),
        plan::path_for(&hr.repo, root),
    ) else {
        return Ok(None);
    };
    if !path.exists() && !plan_path.exists() {
        return Ok(None);
    }
    let _lock = match WorkTreeLock::acquire(root) {
        Ok(lock) => lock,
        Err(HistoryError::Busy { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut said = Vec::new();
    let mut removed = Vec::new();
    if path.exists() {
        let rec = Record::read(&path)?;
        removed = locks::remove_ours(&hr.repo, &rec)?;
        let applied = apply::apply(&hr.repo, wt, &rec, Direction::Forward)?;
        // A plan commit whose full record was written took over from the plan's own record:
        // that one goes first, so a crash here never finds it alone and rolls the plan back.
        let committed = rec.kind == OpKind::PlanCommit && rec.has_moves();
        if committed {
            journal_file::remove(&plan_path)?;
        }
        journal_file::remove(&path)?;
        // A commit that had only recorded its intent changed nothing: the plan's roll back
        // below is the line to say.
        if committed || !plan_path.exists() {
            said.push(line(&rec, &removed, &applied.kept));
            removed.clear();
        }
    }
    if plan_path.exists() {
        let rec = Record::read(&plan_path)?;
        let applied = plan::roll_back(&hr.repo, wt, &rec)?;
        journal_file::remove(&plan_path)?;
        let mut text = plan::line(&rec, &applied);
        if !removed.is_empty() {
            text.push_str(&format!(
                "; removed the lock {} it left",
                removed.join(", ")
            ));
        }
        said.push(text);
    }
    Ok((!said.is_empty()).then(|| said.join("; ")))
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
