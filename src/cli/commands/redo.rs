//! `pai redo`: put back the plan `pai undo` took back.

use crate::cli::assemble::{history_error, open_project};
use crate::config::Settings;
use crate::error::Error;
use crate::history::{self, RedoReport};
use crate::ui::output::Output;

/// What `pai redo` (and `/redo`) prints.
pub(crate) fn describe_redo(report: &RedoReport) -> String {
    let mut text = format!(
        "Re-applied plan {} of session {} ({}): {}",
        report.plan, report.session, report.commit, report.request
    );
    for f in report.written.iter().chain(&report.from_trash) {
        text.push_str(&format!("\n  wrote   {f}"));
    }
    for f in &report.removed {
        text.push_str(&format!("\n  removed {f}"));
    }
    for f in &report.kept {
        text.push_str(&format!(
            "\n  kept    {f} (the plan removes it, but you changed it since the undo)"
        ));
    }
    text
}

/// `pai redo`.
pub fn redo(settings: &Settings, out: &Output) -> Result<(), Error> {
    let project = open_project(settings)?;
    let report = history::redo(&project.root, &project.workspace).map_err(history_error)?;
    out.line(&describe_redo(&report));
    Ok(())
}
