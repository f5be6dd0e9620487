//! Git history (SPEC section 6): one plan, one commit on a session branch `pai/<id>`, so a
//! session is reviewable (`pai log`), revertible (`pai undo` / `pai redo`) and mergeable with
//! plain git — and nothing of the user's is ever lost: no clean, no reset, no whole-tree
//! checkout, the user's own edits snapshotted before a plan touches them.
//!
//! History knows nothing of models or terminals; it receives lists of project-relative paths
//! and reaches project files only through [`WorkTree`], which the workspace gate implements.
//! Every operation costs in proportion to the paths involved, not to the repository's size.
//!
//! An operation (a plan commit, an undo, a redo, a discard, a worktree made or removed) only
//! builds a record of its moves; the one executor (`ops`) makes every move of a ref, HEAD,
//! git's index, a work tree's file or pai's state directory, forward, back, or again after a
//! crash (`tests/it/architecture.rs` checks that no other file makes one).
//!
//! Folders: `git` (the repository and when not to write to it, every `refs/pai/*` name,
//! session metadata, the lock, pai's mark and what it says of state it cannot verify, its
//! state directories, tree edits), `index` (git's index, read and spliced directly),
//! `activity` (what the repository map learns from git, the index's blobs included), `ops`
//! (the one executor and its records, the `WorkTree` door to project files, which files a
//! list of paths covers, worktrees' checkout and removal), `plan` (the plan under way,
//! [`PlanUnderWay`]), `record` (messages, trailers, trash and what a plan left there, what a plan made,
//! what undo kept for redo, what a commit changed, git's conversions, notes given once),
//! `session` (the one `impl Session`, the line of work, what the model wrote on it, leftover
//! snapshots), `undo` (undo, redo, discard), `worktrees` (worktree sessions), `gc`
//! (pruning); files: `log` (`pai log`'s records), `error`.
//! docs/ARCHITECTURE.md gives each folder's public interface.

mod activity;
mod error;
mod gc;
mod git;
mod index;
mod log;
mod ops;
mod plan;
mod record;
mod session;
mod undo;
mod worktrees;

pub use activity::tracked::TrackedBlobs;
pub use activity::{RECENT_COMMITS, head_commit, recently_changed};
pub use error::HistoryError;
pub use gc::{GcOptions, GcReport, gc};
pub use git::auth::{key_forms, open_record, seal_record};
pub use git::repo::project_root;
pub use git::user_state::project_dir;
pub use index::run_index::RunIndex;
pub use log::{FileStat, LogSource, PlanLog, SessionLog, UnverifiedCommit, log, open_log};
pub use ops::work_tree::{WorkEntry, WorkTree};
pub use ops::{StepWrites, interrupted, recover};
pub use plan::commit::{CommitInfo, LeftOut};
pub use plan::journal::Abandoned;
pub use plan::{NotCommitted, PlanUnderWay, RunPasses, RunRecorded, RunWatched};
pub use record::message::{Kind, PlanRecord};
pub use record::note::note_once;
pub use session::leftover::LeftoverSnapshot;
pub use session::{Session, SessionSummary, StartOptions, head_session, why_no_branch};
pub use undo::discard::{DiscardReport, discard};
pub use undo::{RedoReport, UndoReport, redo, undo};
pub use worktrees::linked::{CreateOptions, Held, Linked};
pub use worktrees::merge_preview::SessionView;

/// Worktree sessions (`pai -w`): create, find, hold, tidy and remove them, and preview their
/// merges.
pub mod sessions {
    pub use super::worktrees::carry::{carry, copy_included, lost_if_removed, uncommitted};
    pub use super::worktrees::linked::{
        create, finish, has_branch, hold, is_running, list, start_session,
    };
    pub use super::worktrees::merge_preview::sessions as preview;
    pub use super::worktrees::removal::{remove, tidy};
}

#[cfg(test)]
mod tests {
    /// The agent may hold a session across tasks and threads.
    #[test]
    fn session_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<super::Session>();
        assert_send::<super::HistoryError>();
    }
}
