//! What an action outside pai's own file steps changes in the project: a RUN command or an MCP
//! tool call runs with the user's rights in the project root, so a plan is everything such an
//! action changed. Before it, [`around`] makes one status pass (git's index and its stat data,
//! one ignore-aware walk for untracked files, and the files that make code run later, all in
//! the same pass) and history remembers the user's uncommitted files; after it, one
//! more pass against the same index, finds what changed, records the user's versions so undo
//! covers them, and puts back whatever would run later. Without writable history a stat walk
//! finds the changes instead.

use std::path::Path;

use crate::history::{PlanUnderWay, RunIndex, RunPasses, RunWatched, Session};
use crate::workspace::{Later, LaterState, StatusPass, Workspace};

/// Most files a stat walk looks at, for a session without writable history.
const STAT_WALK_MAX_FILES: usize = 50_000;

/// What the action changed.
pub(super) struct Collected {
    /// Project paths it changed (added, modified, removed).
    pub changed: Vec<String>,
    /// Files that make code run later it changed; already put back.
    pub tampered: Vec<String>,
    /// Recording the user's versions of `changed` failed, with why.
    pub unrecorded: Option<String>,
}

/// Carry out `action` (a RUN command, a tool call) watched: `Err` (and the action did not
/// run) when the user's uncommitted files cannot be read first; else its result and what it
/// changed, or why that cannot be found (undo could not cover it). The files that run later
/// are put back either way. `history`: the session and its plan under way, when it keeps a
/// record.
pub(super) async fn around<R>(
    history: Option<(&mut Session, &mut PlanUnderWay)>,
    ws: &Workspace,
    root: &Path,
    action: impl Future<Output = R>,
) -> Result<(R, Result<Collected, String>), String> {
    if let Some((h, plan)) = history
        && h.read_only_reason().is_none()
    {
        let mut passes = Passes {
            ws,
            root,
            later: None,
            tampered: Vec::new(),
        };
        return match plan.around_run(h, ws, &mut passes, action).await {
            RunWatched::NotRun(e) => Err(e),
            RunWatched::Ran(r, recorded) => Ok((
                r,
                recorded.map(|rec| Collected {
                    changed: rec.changed,
                    tampered: passes.tampered,
                    unrecorded: rec.unrecorded,
                }),
            )),
        };
    }
    // Without writable history, a stat walk is what finds the changes.
    let before = ws.stat_snapshot(STAT_WALK_MAX_FILES);
    let later = LaterState::record(ws.root());
    let r = action.await;
    let tampered = later.restore_changes(root);
    let changed = before.changed_in(&ws.stat_snapshot(STAT_WALK_MAX_FILES));
    Ok((
        r,
        Ok(Collected {
            changed,
            tampered,
            unrecorded: None,
        }),
    ))
}

/// The status passes around the action: the one before records the files that make code
/// run later, the one after puts back what the action changed of them (or, when it fails,
/// they are put back from the record).
struct Passes<'a> {
    ws: &'a Workspace,
    root: &'a Path,
    later: Option<LaterState>,
    tampered: Vec<String>,
}

impl RunPasses for Passes<'_> {
    fn before(&mut self, index: &RunIndex) -> Result<StatusPass, String> {
        let mut pass = self
            .ws
            .status_pass(index, Later::Record)
            .map_err(|e| format!("cannot list the project: {e}"))?;
        self.later = Some(std::mem::take(&mut pass.later));
        Ok(pass)
    }

    fn after(&mut self, index: &RunIndex) -> Result<StatusPass, String> {
        let later = self.later.take().unwrap_or_default();
        match self.ws.status_pass(index, Later::Restore(&later)) {
            Ok(pass) => {
                self.tampered = pass.tampered.clone();
                Ok(pass)
            }
            Err(e) => {
                self.tampered = later.restore_changes(self.root);
                Err(format!("cannot list the project: {e}"))
            }
        }
    }
}

impl Collected {
    /// The step's failure when the action left something undo cannot cover or that would run
    /// later; `what` names the action ("command", "tool").
    pub(super) fn check(&self, what: &str) -> Result<(), String> {
        if let Some(e) = &self.unrecorded {
            return Err(format!(
                "the {what} ran, but pai could not record your versions of the files it changed: {e}"
            ));
        }
        if !self.tampered.is_empty() {
            return Err(format!(
                "the {what} changed {}: files that make code run later, outside pai's control; \
                 pai put them back as they were and stopped the plan",
                self.tampered.join(", ")
            ));
        }
        Ok(())
    }
}
