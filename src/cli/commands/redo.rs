//! `pai redo`: put back the plan `pai undo` took back.

use crate::cli::assemble::{history_error, open_project};
use crate::cli::commands::undo::file_line;
use crate::config::Settings;
use crate::error::Error;
use crate::history::{self, RedoReport};
use crate::ui::output::Output;

/// What `pai redo` (and `/redo`) prints.
pub(crate) fn describe_redo(report: &RedoReport) -> String {
    let mut text = format!(
        "Re-applied plan {} of session {} ({}): {}\n",
        report.plan, report.session, report.commit, report.request
    );
    for f in report.written.iter().chain(&report.from_trash) {
        text.push_str(&file_line("wrote", f, ""));
    }
    for f in &report.removed {
        text.push_str(&file_line("removed", f, ""));
    }
    for f in &report.kept {
        text.push_str(&file_line(
            "kept",
            f,
            " (the plan removes it, but you changed it since the undo)",
        ));
    }
    if report.reentered {
        text.push_str(&format!("HEAD is on {} again.\n", report.branch));
    }
    text.trim_end().to_string()
}

/// `pai redo`.
pub fn redo(settings: &Settings, out: &Output) -> Result<(), Error> {
    let project = open_project(settings)?;
    let report = history::redo(&project.root, &project.workspace).map_err(history_error)?;
    out.line(&describe_redo(&report));
    Ok(())
}
