//! `pai gc`: prune pai's old redo refs, discarded sessions and session logs.

use crate::cli::assemble::{history_error, open_project};
use crate::config::Settings;
use crate::error::Error;
use crate::history::{self, GcOptions, GcReport};
use crate::ui::output::Output;

/// `pai gc [--days N]`.
pub fn gc(settings: &Settings, out: &Output, days: Option<u32>) -> Result<(), Error> {
    let project = open_project(settings)?;
    let days = days.unwrap_or(settings.history_days);
    let report = history::gc(
        &project.root,
        GcOptions {
            days,
            budget: None,
            now: chrono::Local::now(),
        },
    )
    .map_err(history_error)?;
    out.line(&describe(&report, days));
    Ok(())
}

/// What a gc pass removed, in words.
pub(crate) fn describe(report: &GcReport, days: u32) -> String {
    if report.refs.is_empty() && report.logs.is_empty() && report.records.is_empty() {
        return format!("Nothing older than {days} days to prune.");
    }
    let mut text = format!("Pruned what was older than {days} days:\n");
    for r in &report.refs {
        text.push_str(&format!("  ref  {r}\n"));
    }
    for l in &report.logs {
        text.push_str(&format!("  log  .pai_history/{l}\n"));
    }
    for r in &report.records {
        text.push_str(&format!(
            "  kept for redo  {r} (in pai's state directory)\n"
        ));
    }
    text.trim_end().to_string()
}
