//! When pai must not write to a repository (SPEC section 6, "Refuse to write"): an operation
//! of git's in progress, unresolved conflicts, an index pai cannot read, and the refusal each
//! one gives, naming what is wrong and what the user can do.

use git2::{Repository, RepositoryState};

use crate::history::error::HistoryError;

/// Why pai must not write: what is wrong and what the user can do about it.
#[derive(Debug, Clone)]
pub(crate) struct Blocker {
    /// What is wrong.
    pub what: String,
    /// What to do about it.
    pub todo: String,
}

impl Blocker {
    pub(super) fn new(what: impl Into<String>, todo: impl Into<String>) -> Blocker {
        Blocker {
            what: what.into(),
            todo: todo.into(),
        }
    }

    /// One sentence for a read-only session.
    pub fn reason(&self) -> String {
        format!("{}; {}", self.what, self.todo)
    }

    /// A refusal of `action` (e.g. "undo").
    pub fn refusal(&self, action: &str) -> HistoryError {
        HistoryError::Refused {
            message: format!("cannot {action}: {}", self.what),
            hint: self.todo.clone(),
        }
    }
}

/// Why pai must not write to `repo` now: an operation in progress or unresolved conflicts.
pub(crate) fn blocker(repo: &Repository) -> Option<Blocker> {
    if let Some(b) = state_blocker(repo) {
        return Some(b);
    }
    match crate::history::index::load_shared(repo) {
        Ok(index) => index_blocker(&index),
        Err(e) => Some(unreadable_index(&e)),
    }
}

/// The blocker for an index pai cannot read.
pub(crate) fn unreadable_index(e: &HistoryError) -> Blocker {
    Blocker::new(
        e.to_string(),
        "pai will not write history with an index it cannot update; check the repository with `git status`",
    )
}

/// Unresolved conflicts in `index`.
pub(crate) fn index_blocker(index: &crate::history::index::IndexFile) -> Option<Blocker> {
    let files = index.conflicts();
    if files.is_empty() {
        return None;
    }
    Some(Blocker::new(
        format!("the index has unresolved conflicts ({})", files.join(", ")),
        "resolve them and `git add` the files, then try again",
    ))
}

/// A merge, rebase, cherry-pick, revert, bisect or `git am` in progress.
pub(crate) fn state_blocker(repo: &Repository) -> Option<Blocker> {
    let in_progress = |what: &str, todo: &str| {
        Some(Blocker::new(
            format!("{what} is in progress"),
            todo.to_string(),
        ))
    };
    match repo.state() {
        RepositoryState::Clean => {}
        RepositoryState::Merge => {
            return in_progress(
                "a merge",
                "finish it (`git commit`) or abort it (`git merge --abort`), then try again",
            );
        }
        RepositoryState::Rebase
        | RepositoryState::RebaseInteractive
        | RepositoryState::RebaseMerge => {
            return in_progress(
                "a rebase",
                "finish it (`git rebase --continue`) or abort it (`git rebase --abort`), then try again",
            );
        }
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => {
            return in_progress(
                "a cherry-pick",
                "finish it (`git cherry-pick --continue`) or abort it (`git cherry-pick --abort`), then try again",
            );
        }
        RepositoryState::Revert | RepositoryState::RevertSequence => {
            return in_progress(
                "a revert",
                "finish it (`git revert --continue`) or abort it (`git revert --abort`), then try again",
            );
        }
        RepositoryState::Bisect => {
            return in_progress("a bisect", "end it with `git bisect reset`, then try again");
        }
        RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => {
            return in_progress(
                "`git am`",
                "finish it (`git am --continue`) or abort it (`git am --abort`), then try again",
            );
        }
    }
    None
}
