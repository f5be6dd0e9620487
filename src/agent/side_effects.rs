//! What an action outside pai's own file steps changes in the project: a RUN command or an MCP
//! tool call runs with the user's rights in the project root, so a plan is everything such an
//! action changed. Before it, [`watch`] remembers the user's uncommitted files (git status
//! against the session's history, or a stat walk without writable history) and the files that
//! make code run later; after it, [`collect`] finds what changed, records the user's versions
//! so undo covers them, and puts back whatever would run later.

use std::path::Path;

use crate::history::{RunBaseline, Session};
use crate::workspace::{LaterState, StatSnapshot, Workspace};

/// Most files a stat walk looks at, for a session without writable history.
const STAT_WALK_MAX_FILES: usize = 50_000;

/// What was seen before the action.
pub(super) struct Watch {
    baseline: Option<RunBaseline>,
    before: Option<StatSnapshot>,
    later: LaterState,
}

/// What the action changed.
pub(super) struct Collected {
    /// Project paths it changed (added, modified, removed).
    pub changed: Vec<String>,
    /// Files that make code run later it changed; already put back.
    pub tampered: Vec<String>,
    /// Recording the user's versions of `changed` failed, with why.
    pub unrecorded: Option<String>,
}

/// Before the action: `Err` (and the action must not run) when the user's uncommitted files
/// cannot be read.
pub(super) fn watch(history: Option<&mut Session>, ws: &Workspace) -> Result<Watch, String> {
    let baseline = match history {
        Some(h) => h.remember_uncommitted(ws).map_err(|e| e.to_string())?,
        None => None,
    };
    // Without writable history, a stat walk is what finds the changes; with it, git status
    // against the baseline does, at any project size.
    let before = baseline
        .is_none()
        .then(|| ws.stat_snapshot(STAT_WALK_MAX_FILES));
    Ok(Watch {
        baseline,
        before,
        later: LaterState::record(ws.root()),
    })
}

/// After the action, however it ended. `Err` when what it changed cannot be found (undo could
/// not cover it).
pub(super) fn collect(
    watch: Watch,
    history: Option<&mut Session>,
    ws: &Workspace,
    root: &Path,
) -> Result<Collected, String> {
    let tampered = watch.later.restore_changes(root);
    let (changed, unrecorded) = match (history, watch.baseline, watch.before) {
        (Some(h), Some(baseline), _) => {
            let changed = h
                .run_changes(ws, &baseline)
                .map_err(|e| e.to_string())?
                .unwrap_or_default();
            let unrecorded = h
                .prepare_after_run(ws, baseline, &changed)
                .err()
                .map(|e| e.to_string());
            (changed, unrecorded)
        }
        (_, _, Some(before)) => (
            before.changed_in(&ws.stat_snapshot(STAT_WALK_MAX_FILES)),
            None,
        ),
        _ => (Vec::new(), None),
    };
    Ok(Collected {
        changed,
        tampered,
        unrecorded,
    })
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
