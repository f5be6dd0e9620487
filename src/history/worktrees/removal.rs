//! Removing worktree sessions: one the user discards (its worktree, never its branch or
//! refs, and never while it holds changes in no commit) and what crashed or abandoned
//! sessions left (limited to pai's own entries).

use std::path::Path;

use git2::Repository;

use super::carry::{lost_if_removed, uncommitted};
use super::linked::{
    ADMIN_PREFIX, Held, carried_out_nothing, hold, making_path, open, read_records, record_path,
    remove_parts, remove_worktree,
};
use crate::history::error::HistoryError;
use crate::history::git::meta;
use crate::history::ops::{self, OpKind, Record, WorktreeMove};

/// Remove a held worktree session's worktree (and its git admin entry) and record, keeping
/// its branch and refs. Refused, changing nothing, while the worktree holds changes that are
/// in no commit (`pai_state`, pai's own session logs, aside).
pub fn remove(held: Held, root: &Path) -> Result<(), HistoryError> {
    let (repo, state) = open(root)?;
    if held.linked.path.exists() {
        let dirty = lost_if_removed(&held.linked)?;
        if !dirty.is_empty() {
            return Err(HistoryError::Refused {
                message: format!(
                    "the worktree {} holds changes that are in no commit: {}",
                    held.linked.path.display(),
                    dirty.join(", ")
                ),
                hint: "commit them there (or move them elsewhere), then discard again".into(),
            });
        }
    }
    remove_worktree(&repo, &held.linked)?;
    let _ = std::fs::remove_file(record_path(&state, &held.linked.id));
    Ok(())
}

/// Tidy what crashed or abandoned worktree sessions left: a session nobody runs that carried
/// out nothing is removed whole, and so is one killed while its worktree was being checked
/// out (whatever the checkout got to); a worktree directory that is gone takes its admin
/// entry and record with it; admin entries `pai-*` pai no longer records are pruned. The ids removed.
pub fn tidy(root: &Path) -> Result<Vec<String>, HistoryError> {
    let (repo, state) = open(root)?;
    let mut removed = Vec::new();
    for linked in read_records(&state) {
        let Ok(Some(held)) = hold(root, &linked.id) else {
            continue;
        };
        let gone = !held.linked.path.exists();
        let nothing = carried_out_nothing(&repo, &held.linked);
        // A half-made worktree holds only what pai's own checkout put there.
        let half_made = nothing && making_path(&state, &held.linked.id).exists();
        if gone
            || half_made
            || (nothing && uncommitted(&held.linked.path).is_ok_and(|d| d.is_empty()))
        {
            // Its process is dead (this one holds its record's lock), so a lock on its own
            // refs is one it was killed holding, and would block deleting its branch.
            let refs = [held.linked.branch_ref(), meta::ref_name(&held.linked.id)];
            let _ = ops::remove_ref_locks(&repo, &refs);
            if gone && !half_made {
                remove_worktree(&repo, &held.linked)?;
                let _ = std::fs::remove_file(record_path(&state, &held.linked.id));
            } else {
                remove_parts(&repo, &state, &held.linked)?;
            }
            removed.push(held.linked.id.clone());
        }
    }
    prune_unrecorded(&repo, &state);
    Ok(removed)
}

/// Git admin entries named `pai-<id>` whose session pai no longer records and whose
/// directory is gone: what `git worktree prune` would remove, limited to pai's own.
fn prune_unrecorded(repo: &Repository, state: &Path) {
    let Ok(names) = repo.worktrees() else {
        return;
    };
    for name in names.iter().flatten().flatten() {
        let Some(id) = name.strip_prefix(ADMIN_PREFIX) else {
            continue;
        };
        if record_path(state, id).exists() {
            continue;
        }
        if let Ok(wt) = repo.find_worktree(name)
            && wt.validate().is_err()
        {
            let mut record = Record::new(OpKind::Worktree);
            record.move_worktree(WorktreeMove::RemoveAdmin {
                admin: name.to_string(),
            });
            let _ = ops::at_once(repo, None, &record);
        }
    }
}
