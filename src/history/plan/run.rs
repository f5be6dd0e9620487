//! A RUN (or a tool call) under a plan, in one call: the user's uncommitted files remembered
//! before it, what it changed found after it, the user's versions of those snapshotted and
//! what it made noted, so undo covers everything the command did.

use super::super::error::HistoryError;
use super::PlanHost;
use super::PlanUnderWay;
use crate::history::index::run_index::RunIndex;
use crate::history::ops::work_tree::WorkTree;
use crate::workspace::StatusPass;

/// How the project is listed around a RUN: the caller's status passes against git's index
/// (the workspace makes them; history reads what they found).
pub trait RunPasses {
    /// The pass before the command; `Err` (why) stops the command from running.
    fn before(&mut self, index: &RunIndex) -> Result<StatusPass, String>;
    /// The pass after it; `Err` (why) when what it changed cannot be listed.
    fn after(&mut self, index: &RunIndex) -> Result<StatusPass, String>;
}

/// What a command under a plan changed.
#[derive(Debug, Default)]
pub struct RunRecorded {
    /// Project paths it changed (added, modified, removed).
    pub changed: Vec<String>,
    /// Recording the user's versions of `changed` failed, with why: undo cannot cover them.
    pub unrecorded: Option<String>,
}

/// How a command went under a plan.
#[derive(Debug)]
pub enum RunWatched<R> {
    /// The user's uncommitted files could not be read first: the command did not run.
    NotRun(String),
    /// It ran, giving `R`; then what it changed, or why that could not be found.
    Ran(R, Result<RunRecorded, String>),
}

impl PlanUnderWay {
    /// Carry out `run` (a RUN command, a tool call: a future, which does nothing until this
    /// awaits it) as part of the plan: before it, the user's
    /// uncommitted files are remembered from the `passes` before-pass; after it, whatever
    /// way it ended, the paths it changed are found from the after-pass, named in the plan's
    /// journal, and the user's versions of them snapshotted, as `prepare` does before a
    /// plan's own steps, with the ignored files it created and the user's empty folders it
    /// wrote into noted for undo. A read-only session records nothing: `run` runs alone.
    pub async fn around_run<R, W, P>(
        &mut self,
        session: &mut impl PlanHost,
        wt: &W,
        passes: &mut P,
        run: impl Future<Output = R>,
    ) -> RunWatched<R>
    where
        W: WorkTree,
        P: RunPasses + ?Sized,
    {
        let index = match session.writer() {
            Ok(w) => match RunIndex::read(w.repo.path()) {
                Ok(index) => index,
                Err(e) => return RunWatched::NotRun(e.to_string()),
            },
            Err(_) => return RunWatched::Ran(run.await, Ok(RunRecorded::default())),
        };
        let baseline = match passes.before(&index).and_then(|pass| {
            self.remember_uncommitted(session, wt, &index, &pass)
                .map_err(|e| e.to_string())
        }) {
            Ok(baseline) => baseline,
            Err(e) => return RunWatched::NotRun(e),
        };
        let ran = run.await;
        let recorded = passes.after(&index).and_then(|pass| {
            let changed = super::baseline::run_changes(wt, &index, &pass, &baseline)
                .map_err(|e: HistoryError| e.to_string())?;
            let made = self.note_run_made(session, wt, &index, &baseline, &pass, &changed);
            let unrecorded = made
                .err()
                .or_else(|| {
                    self.prepare_after_run(session, wt, &index, baseline, &changed)
                        .err()
                })
                .map(|e| e.to_string());
            Ok(RunRecorded {
                changed,
                unrecorded,
            })
        });
        RunWatched::Ran(ran, recorded)
    }
}
