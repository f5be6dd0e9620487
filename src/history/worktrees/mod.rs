//! Worktree sessions (`pai -w`, `pai sessions`): a session's own branch and linked worktree
//! (`linked`: create, hold, start, finish, remove; the executor checks it out and removes it,
//! `ops::WorktreeMove`); what crosses from the user's checkout into it (`carry`); removing a
//! session and tidying what crashes left (`removal`); and what merging each session would do
//! (`merge_preview`).

pub(super) mod carry;
pub(super) mod linked;
pub(super) mod merge_preview;
pub(super) mod removal;
