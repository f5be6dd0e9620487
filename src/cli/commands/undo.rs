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
        text.push_str(&file_line("restored", f, ""));
    }
    for f in &report.removed {
        text.push_str(&file_line("removed", f, ""));
    }
    for f in &report.from_trash {
        text.push_str(&file_line("recovered", f, " from .pai_history/trash"));
    }
    if let Some(saved) = &report.saved {
        text.push_str(&format!("  your previous state is saved at {saved}\n"));
    }
    if let Some(back) = &report.head_back {
        text.push_str(&format!(
            "That was the last plan on {}: HEAD is back on {back} and the empty branch is gone.\n",
            report.branch
        ));
    }
    text.push_str("Run `pai redo` (or /redo) to re-apply it.");
    text
}

/// One file of an undo or redo report: the label padded so every list lines up.
pub(crate) fn file_line(label: &str, path: &str, note: &str) -> String {
    format!("  {label:<9} {}{note}\n", crate::rawname::display(path))
}

/// `pai undo`.
pub fn undo(settings: &Settings, out: &Output, force: bool) -> Result<(), Error> {
    let project = open_project(settings)?;
    let report = history::undo(&project.root, &project.workspace, force).map_err(history_error)?;
    out.line(&describe_undo(&report));
    Ok(())
}
