//! Worktree sessions (`pai -w`, `pai sessions`): a session's own branch and linked worktree
//! (`linked`: create, hold, start, finish, remove), checked out by pai itself on threads
//! (`fresh_checkout`) and removed on threads without following links (`tree_removal`); what
//! crosses from the user's checkout into it (`carry`); removing a session and tidying what crashes left (`removal`); and
//! what merging each session would do (`merge_preview`).

pub(super) mod carry;
mod fresh_checkout;
pub(super) mod linked;
pub(super) mod merge_preview;
pub(super) mod removal;
mod tree_removal;
