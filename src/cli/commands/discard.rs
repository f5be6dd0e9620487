//! `pai discard [SESSION]`: undo every plan of a session and return HEAD to where it started, keeping the branch under `refs/pai/discarded/`.

use crate::cli::assemble::{history_error, open_project};
use crate::cli::worktree::{self, Entered};
use crate::config::Settings;
use crate::error::Error;
use crate::history::{self};
use crate::ui::output::Output;

/// `pai discard`.
pub fn discard(
    settings: &Settings,
    out: &Output,
    session: Option<&str>,
    force: bool,
) -> Result<(), Error> {
    let project = open_project(settings)?;
    let report = history::discard(&project.root, &project.workspace, session, force)
        .map_err(history_error)?;
    let plans = match report.undone.len() {
        0 => "no plan to undo".to_string(),
        1 => "1 plan undone".to_string(),
        n => format!("{n} plans undone"),
    };
    let mut text = format!(
        "Discarded session {} ({plans}): the files it touched are as you had them, your own uncommitted edits included.",
        report.session
    );
    if !report.head.is_empty() {
        text.push_str(&format!(
            "
HEAD is back on {}.",
            report.head
        ));
    }
    text.push_str(&format!(
        "
The session's commits are kept at {} (`git log -p {}`).",
        report.kept_at,
        crate::shell::quote(&report.kept_at)
    ));
    out.line(&text);
    Ok(())
}

/// `pai discard SESSION` of a worktree session: refused, changing nothing, while its worktree
/// holds changes in no commit; then the session's plans are discarded there and the worktree
/// removed (its branch kept under `refs/pai/discarded/`).
pub fn discard_worktree(
    entered: Entered,
    settings: &Settings,
    out: &Output,
    force: bool,
) -> Result<(), Error> {
    worktree::check_discardable(&entered)?;
    // With every plan undone there is no branch left to discard: only the worktree goes.
    if history::sessions::has_branch(&entered.held.linked) {
        discard(settings, out, Some(&entered.held.linked.id), force)?;
    }
    worktree::remove_discarded(entered, out)
}
