//! `pai log`: the session's plans, with their requests, files and tokens.

use crate::cli::assemble::history_error;
use crate::error::Error;
use crate::history::{self};
use crate::ui::log_text::log_text;
use crate::ui::output::Output;

/// `pai log`.
pub fn log(
    source: history::LogSource,
    out: &Output,
    session: Option<&str>,
    patch: bool,
    json: bool,
) -> Result<(), Error> {
    // No history here at all (not a repository, nothing pai recorded) is the same answer as
    // a repository without plans: nothing to list, which is no failure.
    let sessions = match source.log(session, patch) {
        Err(history::HistoryError::NoHistory { .. }) if session.is_none() => Vec::new(),
        other => other.map_err(history_error)?,
    };
    if json {
        let text = serde_json::to_string_pretty(&sessions)
            .map_err(|e| Error::failed(format!("cannot encode the log: {e}")))?;
        out.json_line(&text);
    } else {
        out.text(&log_text(&sessions));
    }
    Ok(())
}
