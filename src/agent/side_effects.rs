//! What an action outside pai's own file steps changes in the project: a RUN command or an MCP
//! tool call runs with the user's rights in the project root, so a plan is everything such an
//! action changed. Before it, [`watch`] makes one status pass (git's index and its stat data,
//! one ignore-aware walk for untracked files, and the files that make code run later, all in
//! the same pass) and remembers the user's uncommitted files; after it, [`collect`] makes one
//! more pass against the same index, finds what changed, records the user's versions so undo
//! covers them, and puts back whatever would run later. Without writable history a stat walk
//! finds the changes instead.

use std::path::Path;

use crate::history::{RunBaseline, RunIndex, Session};
use crate::workspace::{Later, LaterState, StatSnapshot, Workspace};

/// Most files a stat walk looks at, for a session without writable history.
const STAT_WALK_MAX_FILES: usize = 50_000;

/// What was seen before the action.
pub(super) struct Watch {
    /// The index the passes compare with, and the user's files that differed from it.
    run: Option<(RunIndex, RunBaseline)>,
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
    if let Some(h) = history
        && let Some(index) = h.run_index().map_err(|e| e.to_string())?
    {
        let pass = ws
            .status_pass(&index, Later::Record)
            .map_err(|e| format!("cannot list the project: {e}"))?;
        let baseline = h
            .remember_uncommitted(ws, &index, &pass)
            .map_err(|e| e.to_string())?;
        return Ok(Watch {
            run: Some((index, baseline)),
            before: None,
            later: pass.later,
        });
    }
    // Without writable history, a stat walk is what finds the changes.
    Ok(Watch {
        run: None,
        before: Some(ws.stat_snapshot(STAT_WALK_MAX_FILES)),
        later: LaterState::record(ws.root()),
    })
}

/// After the action, however it ended. `Err` when what it changed cannot be found (undo could
/// not cover it); the files that run later are put back either way.
pub(super) fn collect(
    watch: Watch,
    history: Option<&mut Session>,
    ws: &Workspace,
    root: &Path,
) -> Result<Collected, String> {
    let Watch { run, before, later } = watch;
    if let (Some(h), Some((index, baseline))) = (history, run) {
        let pass = match ws.status_pass(&index, Later::Restore(&later)) {
            Ok(pass) => pass,
            Err(e) => {
                later.restore_changes(root);
                return Err(format!("cannot list the project: {e}"));
            }
        };
        let changed = h
            .run_changes(ws, &index, &pass, &baseline)
            .map_err(|e| e.to_string())?;
        // The ignored files it created and the user's empty folders it wrote into, for undo.
        let made = h.note_run_made(ws, &index, &baseline, &pass, &changed);
        let unrecorded = made
            .err()
            .or_else(|| h.prepare_after_run(ws, &index, baseline, &changed).err())
            .map(|e| e.to_string());
        return Ok(Collected {
            changed,
            tampered: pass.tampered,
            unrecorded,
        });
    }
    let tampered = later.restore_changes(root);
    let changed = before.map_or_else(Vec::new, |b| {
        b.changed_in(&ws.stat_snapshot(STAT_WALK_MAX_FILES))
    });
    Ok(Collected {
        changed,
        tampered,
        unrecorded: None,
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
