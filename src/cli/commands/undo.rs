//! `pai undo`: take back the last plan of the session HEAD is on.

use crate::cli::assemble::{history_error, open_project};
use crate::config::Settings;
use crate::error::Error;
use crate::history::{self, UndoReport};
use crate::ui::output::Output;

/// What `pai undo` (and `/undo`) prints: the plan taken back and every file it put back.
pub(crate) fn describe_undo(report: &UndoReport) -> String {
    let mut text = format!(
        "Undid plan {} of session {} ({}): {}\n",
        report.plan, report.session, report.commit, report.request
    );
    for f in &report.restored {
        text.push_str(&format!("  restored  {}\n", crate::rawname::display(f)));
    }
    for f in &report.removed {
        text.push_str(&format!("  removed   {}\n", crate::rawname::display(f)));
    }
    for f in &report.from_trash {
        text.push_str(&format!(
            "  recovered {} from .pai_history/trash\n",
            crate::rawname::display(f)
        ));
    }
    if let Some(saved) = &report.saved {
        text.push_str(&format!("  your previous state is saved at {saved}\n"));
    }
    text.push_str("Run `pai redo` (or /redo) to re-apply it.");
    text
}

/// `pai undo`.
pub fn undo(settings: &Settings, out: &Output, force: bool) -> Result<(), Error> {
    let project = open_project(settings)?;
    let report = history::undo(&project.root, &project.workspace, force).map_err(history_error)?;
    out.line(&describe_undo(&report));
    Ok(())
}
