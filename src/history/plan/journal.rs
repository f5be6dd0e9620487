//! The session's side of a plan's journal (`ops/plan.rs`): the user's versions
//! [`PlanUnderWay::prepare`] reads become the plan record's before states, every step that
//! writes names its paths first ([`PlanUnderWay::step_begins`]), what a RUN changed is added
//! once it is known, and the record is dropped when the plan's commit takes over or the plan
//! ends without one; [`PlanUnderWay::abandon`] rolls the plan back.

use super::PlanHost;
use crate::history::error::HistoryError;
use crate::history::git::names;
use crate::history::index::run_index::RunIndex;
use crate::history::ops::work_tree::WorkTree;
use crate::history::ops::{Before, PlanAt, PlanJournal, StepWrites};
use crate::history::plan::PlanUnderWay;
use crate::history::plan::baseline::RunBaseline;
use crate::workspace::Tracked as _;

impl PlanUnderWay {
    /// Before a step of the plan runs: name what it may write in the plan's journal, so a
    /// crash while it writes is rolled back by the next pai command. `Err` (and the step must
    /// not run) when the journal cannot be written. Nothing for a read-only session.
    pub fn step_begins(
        &mut self,
        session: &mut impl PlanHost,
        wt: &dyn WorkTree,
        writes: StepWrites,
    ) -> Result<(), HistoryError> {
        let id = session.id().to_string();
        let root = session.root().to_path_buf();
        let Ok(w) = session.writer() else {
            return Ok(());
        };
        if self.journal.is_none() {
            if writes == StepWrites::Nothing {
                return Ok(());
            }
            let at = PlanAt {
                root: &root,
                session: &id,
                plan: w.next_plan,
            };
            self.journal = Some(PlanJournal::new(&w.repo, at)?);
        }
        let pending = self
            .pending
            .as_ref()
            .map(|p| (names::pending_ref(&id), p.top));
        match &mut self.journal {
            Some(j) => j.step(wt, writes, pending),
            None => Ok(()),
        }
    }

    /// The plan could not be committed (its commit failed before the branch moved): its
    /// files go back to the user's versions, each that still holds what the plan's steps
    /// left there, so nothing of it stays on disk that history does not hold. What was
    /// changed since by someone else is kept and named. When the files cannot all be put back
    /// (the disk is still full, say), the plan's journal stays on disk and the next pai
    /// command finishes the roll back. Nothing to do for a read-only session or a plan that
    /// wrote nothing.
    pub fn abandon(
        mut self,
        session: &mut impl PlanHost,
        wt: &dyn WorkTree,
    ) -> Result<Abandoned, HistoryError> {
        let Ok(w) = session.writer() else {
            return Ok(Abandoned::default());
        };
        let Some(journal) = self.journal.take() else {
            return Ok(Abandoned::default());
        };
        let applied = journal.abandon(&w.repo, wt)?;
        Ok(Abandoned {
            restored: applied.changed,
            kept: applied.kept,
        })
    }

    /// The plan ended without a commit to take its journal over: drop the journal.
    pub(in crate::history) fn end_journal(&mut self) -> Result<(), HistoryError> {
        match self.journal.take() {
            Some(j) => j.close(),
            None => Ok(()),
        }
    }

    /// After a RUN, before its changes are snapshotted: every path it changed goes into the
    /// plan's journal with what stood there before it (the user's file remembered before the
    /// command, else the index's entry, else absent), so a crash before the plan's commit
    /// rolls the command's changes back too.
    pub(in crate::history) fn journal_run_changes(
        &mut self,
        session: &mut impl PlanHost,
        wt: &dyn WorkTree,
        index: &RunIndex,
        baseline: &RunBaseline,
        changed: &[String],
    ) -> Result<(), HistoryError> {
        let id = session.id().to_string();
        let root = session.root().to_path_buf();
        let w = session.writer()?;
        let plan = w.next_plan;
        let mut befores = Vec::new();
        for path in changed {
            let before = match baseline.before(path) {
                Some(Ok(file)) => Before::stored(&w.repo, path, file, baseline.perm(path))?,
                Some(Err(())) => continue,
                None => Before {
                    path: path.clone(),
                    entry: index.get(path),
                    perm: None,
                    standing: Some(stood_before(index, baseline, path)),
                },
            };
            befores.push(before);
        }
        let at = PlanAt {
            root: &root,
            session: &id,
            plan,
        };
        PlanJournal::note_befores(&mut self.journal, &w.repo, wt, at, befores)
    }
}

/// What [`PlanUnderWay::abandon`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Abandoned {
    /// Files put back as the user had them.
    pub restored: usize,
    /// Paths kept as they are: changed by someone else since the plan wrote them.
    pub kept: Vec<String>,
}

/// The nearest folder above `path` that stood before the RUN (`None`: the project root): one
/// holding a tracked file, or one the status pass before it met something in or found empty.
/// Rolled back, what the command created is removed up to there, with the folders it made.
pub(in crate::history) fn stood_before(
    index: &RunIndex,
    baseline: &RunBaseline,
    path: &str,
) -> Option<String> {
    let mut dir = path;
    while let Some((parent, _)) = dir.rsplit_once('/') {
        if index.has_under(parent.as_bytes()) || baseline.saw_under(parent) {
            return Some(parent.to_string());
        }
        dir = parent;
    }
    None
}
