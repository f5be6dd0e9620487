//! The files a plan's own snapshots of the user's changes hold but the plan itself left as
//! they were (its step on them failed, or undid itself): undo gives their index entries back
//! as the user had them, so an edit the user had not staged is unstaged again (` M`, not
//! `M `). The work tree already holds the user's version; only the index needs it.

use git2::{Commit, Repository, Tree};

use crate::history::error::{Context, HistoryError};
use crate::history::index::IndexFile;
use crate::history::ops::scope::{self, Entry};
use crate::history::record::revert::{self, PathChange};

/// The index entries undo gives back for those files: for each path the snapshots between
/// `base` (the commit below them) and `snapshot_top` (the plan's parent tree) changed and
/// the plan did not (`changes`), the entry of `index_before` (the tree the user's index
/// followed before the plan), where the index still holds the snapshot's entry (a file the
/// user staged since keeps what they staged).
pub(crate) fn index_entries(
    repo: &Repository,
    index: &IndexFile,
    base: Option<&Commit<'_>>,
    snapshot_top: Option<&Tree<'_>>,
    index_before: Option<&Tree<'_>>,
    changes: &[PathChange],
) -> Result<Vec<(String, Option<Entry>)>, HistoryError> {
    let base_tree = match base {
        Some(c) => Some(
            c.tree()
                .ctx(|| "cannot read the commit below the plan".into())?,
        ),
        None => None,
    };
    let mut out = Vec::new();
    for c in revert::changed_paths(repo, base_tree.as_ref(), snapshot_top)? {
        if changes.iter().any(|p| p.path == c.path) || index.get(&c.path) != c.after {
            continue;
        }
        let entry = scope::tree_file(index_before, &c.path).ok().flatten();
        out.push((c.path, entry));
    }
    Ok(out)
}
