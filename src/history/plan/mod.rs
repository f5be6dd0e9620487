//! The plan under way, as a value: [`Session::begin_plan`](super::Session::begin_plan) gives
//! a [`PlanUnderWay`] that owns everything a plan in progress holds (the paths already
//! prepared, the snapshots of the user's versions waiting for the commit, the trash copies,
//! what the plan made that its tree will not say, and its journal). The agent holds one per
//! plan and ends it with [`PlanUnderWay::commit`] or [`PlanUnderWay::abandon`]; each call
//! takes the session it belongs to.
//!
//! In order: `prepare` before the plan's steps write (`prepare.rs`: the user's versions
//! snapshotted, trash copies kept), `step_begins` before each step (`journal.rs`: the plan's
//! journal names what it may write), [`PlanUnderWay::around_run`] around each RUN or tool
//! call (`run.rs`, with `baseline.rs` and `run_made.rs`), then `commit` (`commit.rs`, its
//! files sorted by `commit_files.rs` and stated by `files.rs`) or, when the commit fails,
//! `abandon`.

mod baseline;
pub(super) mod commit;
pub(super) mod commit_files;
pub(super) mod files;
mod host;
pub(super) mod journal;
pub(super) mod prepare;
mod run;
pub(super) mod run_made;
pub(super) mod user_edits;

use std::collections::{BTreeMap, BTreeSet};

use git2::Oid;

use super::error::HistoryError;
use super::ops::PlanJournal;
use crate::history::record::made::Made;

pub use host::{PlanHost, Writer};
pub use run::{RunPasses, RunRecorded, RunWatched};

/// A plan in progress (see the module documentation): dropping one without
/// [`PlanUnderWay::commit`] or [`PlanUnderWay::abandon`] leaves its journal on disk, and the
/// next pai command rolls its files back.
#[must_use = "a plan under way ends with `commit` or `abandon`"]
#[derive(Default)]
pub struct PlanUnderWay {
    /// Paths already prepared (their work-tree state may be the agent's by now, so they are
    /// never snapshotted twice).
    pub(in crate::history) prepared: BTreeSet<String>,
    /// Trash copies made: path, the copy's blob in the object store, permission bits.
    /// Recorded in the plan commit so undo restores only what pai saved.
    pub(in crate::history) trash: BTreeMap<String, (Oid, u32)>,
    /// What the plan made that its tree will not say (see [`Made`]).
    pub(in crate::history) made: Made,
    /// Snapshot commits of the user's changes, waiting for the plan commit on top of them.
    pub(in crate::history) pending: Option<Pending>,
    /// The plan's journal, from its first saved version to its commit.
    pub(in crate::history) journal: Option<PlanJournal>,
}

/// User-snapshot commits waiting for the plan commit on top of them.
pub(in crate::history) struct Pending {
    /// The branch tip they were made on.
    pub base: Option<Oid>,
    /// The newest snapshot commit.
    pub top: Oid,
    /// The paths they recorded.
    pub paths: BTreeSet<String>,
}

/// A plan whose commit failed before the branch moved: why, and the plan, whose files
/// [`PlanUnderWay::abandon`] puts back as the user had them.
#[must_use = "a plan that could not be committed is abandoned"]
pub struct NotCommitted {
    /// Why the commit failed.
    pub error: HistoryError,
    /// The plan, still under way.
    pub plan: PlanUnderWay,
}

impl std::fmt::Debug for NotCommitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NotCommitted({})", self.error)
    }
}

impl PlanUnderWay {
    /// Whether the plan made ignored files a command created: its commit must be made for
    /// undo to find them, even when it changed nothing git sees.
    pub fn made_ignored_files(&self) -> bool {
        !self.made.ignored.is_empty()
    }
}
