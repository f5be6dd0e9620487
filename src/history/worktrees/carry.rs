//! What crosses from the user's checkout into a worktree session: `--carry`'s uncommitted
//! changes and the files `worktree_include` names, copied by the executor without following a
//! link in either tree (`ops::WorktreeMove::CopyIn`); and what removing a worktree would lose.

use std::path::{Path, PathBuf};

use git2::Repository;

use super::linked::{Held, Linked, write_record};
use crate::history::error::{Context, HistoryError};
use crate::history::ops::{self, CopyKind, OpKind, Record, WorktreeMove};

/// `--carry`: bring the user's uncommitted changes (edited, deleted and untracked files that
/// are not ignored) from their checkout into the held session's worktree, as uncommitted
/// edits there: a plan that touches one first snapshots it as the user's (`Pai-Kind: user`),
/// as in the user's own checkout, so undo gives it back exactly. The record lists them.
pub fn carry(held: &mut Held) -> Result<usize, HistoryError> {
    let linked = &mut held.linked;
    let changed = uncommitted(&linked.origin)?;
    let repo = Repository::open(&linked.origin)
        .ctx(|| format!("cannot open {}", linked.origin.display()))?;
    for rel in &changed {
        copy_in(&repo, linked, rel, CopyKind::AsItIs)?;
    }
    linked.carried = changed;
    let state = linked
        .path
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    write_record(&state, linked)?;
    Ok(linked.carried.len())
}

/// Copy `rel` of the user's checkout into `linked`'s worktree (the executor's move, at once:
/// the worktree is the session's own, made a moment ago).
fn copy_in(
    repo: &Repository,
    linked: &Linked,
    rel: &str,
    kind: CopyKind,
) -> Result<(), HistoryError> {
    let mut record = Record::new(OpKind::Worktree);
    record.name(&linked.id, 0);
    record.move_worktree(WorktreeMove::CopyIn {
        from: linked.origin.clone(),
        to: linked.path.clone(),
        rel: rel.to_string(),
        kind,
    });
    ops::at_once(repo, None, &record).map(drop)
}

/// The worktree's changes that are in no commit and would be lost with it: what `--carry`
/// copied and nobody changed since is still in the user's checkout, so it does not count.
pub fn lost_if_removed(linked: &Linked) -> Result<Vec<String>, HistoryError> {
    let mut dirty = uncommitted(&linked.path)?;
    dirty.retain(|p| !(linked.carried.contains(p) && same_as_origin(linked, p)));
    Ok(dirty)
}

/// Whether the worktree's `rel` is what the user's checkout has (both absent counts).
fn same_as_origin(linked: &Linked, rel: &str) -> bool {
    let read = |p: PathBuf| match std::fs::symlink_metadata(&p) {
        Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&p)
            .ok()
            .map(|t| t.into_os_string().into_encoded_bytes()),
        Ok(_) => std::fs::read(&p).ok(),
        Err(_) => None,
    };
    read(linked.origin.join(rel)) == read(linked.path.join(rel))
}

/// The paths of the worktree at `path` that differ from its HEAD (untracked ones included,
/// ignored ones and pai's state directory not).
pub fn uncommitted(path: &Path) -> Result<Vec<String>, HistoryError> {
    let repo = Repository::open(path).ctx(|| format!("cannot open {}", path.display()))?;
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .ctx(|| format!("cannot read the status of {}", path.display()))?;
    Ok(statuses
        .iter()
        .filter_map(|s| s.path().ok().map(str::to_string))
        .filter(|p| p != crate::layout::STATE_DIR && !p.starts_with(".pai_history/"))
        .collect())
}

/// Copy what `include` names (paths relative to the user's checkout: files and whole
/// directories, links skipped) into the worktree. Returns one line per path it could not
/// copy; nothing is copied unless the user listed it.
pub fn copy_included(linked: &Linked, include: &[String]) -> Vec<String> {
    let repo = match Repository::open(&linked.origin) {
        Ok(repo) => repo,
        Err(e) => return vec![format!("worktree_include: cannot open the repository: {e}")],
    };
    let mut problems = Vec::new();
    for rel in include {
        let clean = Path::new(rel);
        if clean.is_absolute()
            || clean
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            problems.push(format!(
                "worktree_include: {rel} is not a path inside the project"
            ));
            continue;
        }
        if let Err(e) = copy_in(&repo, linked, rel, CopyKind::Included) {
            problems.push(format!("worktree_include: {e}"));
        }
    }
    problems
}
