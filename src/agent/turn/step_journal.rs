//! Before each step: what it may write is named in the plan's journal (history's
//! `PlanUnderWay::step_begins`), so a plan killed while its steps write is rolled back by the
//! next pai command instead of being left on disk unrecorded.

use super::Agent;
use super::steps::StepError;
use crate::agent::plan::Step;
use crate::history::StepWrites;
use crate::workspace::Workspace;

impl Agent {
    /// Name what `step` may write in the plan's journal; `Err` (the step does not run) when
    /// the journal cannot be written.
    pub(super) fn journal_step(&mut self, step: &Step) -> Result<(), StepError> {
        let (Some(history), Some(plan)) = (self.history.as_mut(), self.plan.as_mut()) else {
            return Ok(());
        };
        plan.step_begins(history, &self.workspace, writes_of(&self.workspace, step))
            .map_err(|e| {
                StepError::fatal(format!(
                    "pai could not journal the step before running it, so it did not run: {e}"
                ))
            })
    }
}

/// What `step` may write: its paths as the gate names them, or anything for a command or a
/// tool call. A path the gate refuses is left out (the step itself will be refused).
fn writes_of(ws: &Workspace, step: &Step) -> StepWrites {
    match step {
        Step::Run { .. } | Step::Tool { .. } => StepWrites::Anywhere,
        _ => {
            let paths: Vec<String> = step
                .written_paths()
                .into_iter()
                .filter_map(|p| ws.check(p).ok())
                .map(|p| p.as_str().to_string())
                .collect();
            if paths.is_empty() {
                StepWrites::Nothing
            } else {
                StepWrites::Paths(paths)
            }
        }
    }
}
