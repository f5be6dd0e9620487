//! The worktree moves a record names (see the folder's `mod.rs` for how they are made).

use std::path::PathBuf;

use git2::Oid;

/// How a path is copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CopyKind {
    /// As the checkout has it: a file or folder, a link (copied as a link), or nothing (the
    /// worktree's copy removed): `--carry`'s uncommitted changes.
    AsItIs,
    /// A file or a whole folder, links inside skipped; nothing there is an error:
    /// `worktree_include`.
    Included,
}

/// One worktree move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WorktreeMove {
    /// A new linked worktree at `path` (a directory that must not exist), git's admin entry
    /// `<common dir>/worktrees/<admin>`, checked out on `branch_ref`, which must point at
    /// `commit`. `turns`: the lock file sessions starting at once take turns by while each
    /// adds its admin entry.
    Add {
        /// The worktree's directory.
        path: PathBuf,
        /// The admin entry's name.
        admin: String,
        /// The branch it is checked out on.
        branch_ref: String,
        /// The commit the branch points at.
        commit: Oid,
        /// The lock file of the turns.
        turns: PathBuf,
    },
    /// The worktree directory at `path` removed (links inside removed, never followed), with
    /// the scratch folder its checkout may have left beside it.
    RemoveTree {
        /// The worktree's directory.
        path: PathBuf,
    },
    /// Git's admin entry `<common dir>/worktrees/<admin>` removed (what `git worktree prune`
    /// removes).
    RemoveAdmin {
        /// The admin entry's name.
        admin: String,
    },
    /// The path `rel` of the user's checkout `from` copied into the worktree `to`, as `kind`
    /// says (see `copy_in`).
    CopyIn {
        /// The user's checkout.
        from: PathBuf,
        /// The worktree.
        to: PathBuf,
        /// The path, relative to both.
        rel: String,
        /// How it is copied.
        kind: CopyKind,
    },
}
