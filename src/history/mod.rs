//! Git history (SPEC section 6): one plan, one commit on a session branch `pai/<id>`, so a
//! session is reviewable (`pai log`), revertible (`pai undo` / `pai redo`) and mergeable with
//! plain git — and nothing of the user's is ever lost: no clean, no reset, no whole-tree
//! checkout, the user's own edits snapshotted before a plan touches them.
//!
//! History knows nothing of models or terminals; it receives lists of project-relative paths
//! and reaches project files only through [`WorkTree`], which the workspace gate implements.
//! Every operation costs in proportion to the paths involved, not to the repository's size.
//!
//! Modules: `repo` (discovery, refusals, identity), `session` (start, lock, summary),
//! `snapshot` (user snapshots and trash before a plan), `commit` (the plan commit), `undo`
//! (undo/redo), `log` (listing); helpers `scope` (which files a path list covers),
//! `tree_edit` (new trees from a few changes), `index_file` (the user's index, read and
//! spliced directly), `revert` (what a commit changed), `message` (subjects and trailers),
//! `names` and `meta` (refs), `trash`, `store`, `paths`, `lock`; `ops` (the operation
//! journal: every plan commit, undo, redo and discard recorded before it touches anything,
//! finished by the next pai command after a crash); pai's mark on its own state (`auth`: the
//! per-user secret, `Pai-Auth` trailers, sealed session records), what it says about state it
//! did not mark (`forged`), what undo replaced kept for redo (`kept`), what the model wrote on
//! the line of work (`chain`), what a plan left at its trash paths (`left`).

mod activity;
mod auth;
mod chain;
mod convert;
mod error;
mod file_bytes;
mod forged;
mod fresh_checkout;
mod gc;
mod index_file;
mod left;
mod leftover;
mod line;
mod linked;
mod lock;
mod log;
mod merge_preview;
mod meta;
mod names;
mod ops;
mod own_snapshots;
mod paths;
mod plan;
mod record;
mod ref_index;
mod repo;
mod revert;
mod run_index;
mod scope;
mod session;
mod store;
#[cfg(test)]
mod test_git;
mod tracked;
mod tree_edit;
mod tree_removal;
mod undo;
mod unverified;
mod user_state;
mod worktree;

pub use activity::{RECENT_COMMITS, head_commit, recently_changed};
pub use auth::{key_forms, open_record, seal_record};
pub use error::HistoryError;
pub use gc::{GcOptions, GcReport, gc};
pub use leftover::LeftoverSnapshot;
pub use linked::{CreateOptions, Held, Linked};
pub use log::{
    FileStat, LogSource, PlanLog, SessionLog, UnverifiedCommit, log, open_log, render_json,
    render_text,
};
pub use merge_preview::{SessionView, render_sessions};
pub use ops::{StepWrites, interrupted, recover};
pub use plan::commit::{CommitInfo, LeftOut};
pub use plan::journal::Abandoned;
pub use plan::{NotCommitted, PlanUnderWay, RunPasses, RunRecorded, RunWatched};
pub use record::message::{Kind, PlanRecord};
pub use repo::project_root;
pub use run_index::RunIndex;
pub use session::{Session, SessionSummary, StartOptions, head_session, why_no_branch};
pub use store::note_once;
pub use tracked::TrackedBlobs;
pub use undo::discard::{DiscardReport, discard};
pub use undo::{RedoReport, UndoReport, redo, undo};
pub use user_state::project_dir;
pub use worktree::{WorkEntry, WorkTree};

/// Worktree sessions (`pai -w`): create, find, hold, tidy and remove them, and preview their
/// merges.
pub mod sessions {
    pub use super::linked::{
        carry, copy_included, create, finish, has_branch, hold, is_running, list, lost_if_removed,
        remove, start_session, tidy, uncommitted,
    };
    pub use super::merge_preview::sessions as preview;
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
