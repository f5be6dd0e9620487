//! The executor's worktree moves: a worktree session's linked worktree added (git's admin
//! entry, the files of its commit's tree, its index) or removed (its directory, what its
//! checkout left beside it, git's admin entry), and files copied into it from the user's
//! checkout (`copy_in`, never following a link in either tree). A worktree is made in a new directory in the
//! user's state directory, outside every project, and is whole only once its checkout ends:
//! the session's `making` mark (`worktrees/linked.rs`) stands for it until then, and the
//! next command tidies a half-made one, so these moves are carried out at once
//! ([`super::at_once`]), never journaled.
//!
//! The checkout is pai's own, on threads (`fresh_checkout`), or libgit2's for a tree holding
//! a name git treats specially; removal runs on threads and never follows a link
//! (`tree_removal`).

mod copy_in;
mod fresh_checkout;
pub(super) mod moves;
mod tree_removal;

use std::fs::File;
use std::path::Path;

use git2::{Oid, Repository, WorktreeAddOptions};

use super::super::error::{Context as _, HistoryError};
use super::direction::{Applied, Direction};
use super::record::Record;
use crate::history::git::names;
pub(crate) use moves::{CopyKind, WorktreeMove};

/// Carry out `record`'s worktree moves forward (backward they are not taken back: a half-made
/// worktree is tidied by the next command, a removed one is gone).
pub(super) fn apply(
    repo: &Repository,
    record: &Record,
    dir: Direction,
    out: &mut Applied,
) -> Result<(), HistoryError> {
    if dir == Direction::Back {
        return Ok(());
    }
    for m in &record.worktrees {
        let changed = match m {
            WorktreeMove::Add {
                path,
                admin,
                branch_ref,
                commit,
                turns,
            } => {
                add(repo, path, admin, branch_ref, *commit, turns)?;
                true
            }
            WorktreeMove::RemoveTree { path } => remove_tree(path)?,
            WorktreeMove::RemoveAdmin { admin } => remove_admin(repo, admin)?,
            WorktreeMove::CopyIn {
                from,
                to,
                rel,
                kind,
            } => {
                copy_in::copy_in(from, to, rel, *kind)
                    .ctx(|| format!("cannot copy {rel} into the worktree"))?;
                true
            }
        };
        if changed {
            out.changed += 1;
        }
    }
    Ok(())
}

/// The linked worktree checked out on `branch_ref` at `commit`: pai's own checkout on
/// threads (`fresh_checkout`), or libgit2's for a tree holding a name git treats specially.
fn add(
    repo: &Repository,
    path: &Path,
    admin: &str,
    branch_ref: &str,
    commit: Oid,
    turns: &Path,
) -> Result<(), HistoryError> {
    let short = names::short_id(commit);
    if names::target(repo, branch_ref).ok().flatten() != Some(commit) {
        return Err(HistoryError::Io {
            context: format!("cannot create the worktree {}", path.display()),
            source: std::io::Error::other(format!("{branch_ref} is not at {short}")),
        });
    }
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .ctx(|| format!("cannot read the tree of {short}"))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).ctx(|| format!("cannot create {}", parent.display()))?;
    }
    let Some(listing) = fresh_checkout::list(repo, &tree)? else {
        let _turn = take_turn(turns)?;
        return add_with_libgit2(repo, path, admin, branch_ref);
    };
    let entry = {
        let _turn = take_turn(turns)?;
        fresh_checkout::add_admin(repo, admin, path, branch_ref)?
    };
    fresh_checkout::check_out(repo, &tree, &listing, path, &entry)
}

/// This process's turn to add a worktree, until dropped: libgit2 checks whether a branch is
/// checked out by reading every worktree, and one being added by another process at the same
/// moment can make it refuse a branch nobody else has. Sessions started together take turns
/// for the few milliseconds each takes.
fn take_turn(path: &Path) -> Result<File, HistoryError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ctx(|| format!("cannot open {}", path.display()))?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
        .map_err(std::io::Error::from)
        .ctx(|| format!("cannot lock {}", path.display()))?;
    Ok(file)
}

/// The worktree added by libgit2, checkout included.
fn add_with_libgit2(
    repo: &Repository,
    path: &Path,
    admin: &str,
    branch_ref: &str,
) -> Result<(), HistoryError> {
    // libgit2 makes git's `worktrees` folder as it adds the first worktree and fails when a
    // session starting at the same moment made it first; made here, it already exists.
    let worktrees = repo.commondir().join("worktrees");
    std::fs::create_dir_all(&worktrees).ctx(|| format!("cannot create {}", worktrees.display()))?;
    let branch = repo
        .find_reference(branch_ref)
        .ctx(|| format!("cannot read {branch_ref}"))?;
    let mut opts = WorktreeAddOptions::new();
    opts.reference(Some(&branch));
    repo.worktree(admin, path, Some(&opts))
        .ctx(|| format!("cannot create the worktree {}", path.display()))?;
    Ok(())
}

/// Remove the worktree at `path` and its checkout's scratch folder; whether anything was
/// there.
fn remove_tree(path: &Path) -> Result<bool, HistoryError> {
    let mut removed = false;
    for dir in [path.to_path_buf(), fresh_checkout::scratch_path(path)] {
        if std::fs::symlink_metadata(&dir).is_ok() {
            tree_removal::remove_tree(&dir).ctx(|| format!("cannot remove {}", dir.display()))?;
            removed = true;
        }
    }
    Ok(removed)
}

/// Remove git's admin entry `admin`; whether it was there.
fn remove_admin(repo: &Repository, admin: &str) -> Result<bool, HistoryError> {
    let dir = repo.commondir().join("worktrees").join(admin);
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(false);
    }
    std::fs::remove_dir_all(&dir)
        .ctx(|| format!("cannot remove the worktree's entry {}", dir.display()))?;
    Ok(true)
}
