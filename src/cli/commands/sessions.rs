//! `pai resume` without a session: the project's sessions, newest last.

use crate::agent::journal;

use crate::cli::assemble::first_line;
use crate::error::Error;
use crate::history::{self};
use crate::ui::output::Output;

/// `pai resume` without a session: this project's sessions, newest last.
pub fn list_sessions(out: &Output) -> Result<(), Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::failed(format!("cannot determine the current directory: {e}")))?;
    let root = history::project_root(&cwd);
    let sessions = journal::list_sessions(&root);
    // Worktree sessions keep their logs in their worktrees: named here, so `pai resume` finds
    // them from the checkout too.
    let linked = history::sessions::list(&root).unwrap_or_default();
    if !linked.is_empty() {
        let mut text =
            String::from("Worktree sessions (`pai sessions` shows their merge preview):\n");
        for l in &linked {
            text.push_str(&format!("  {}  {}\n", l.id, l.path.display()));
        }
        out.line(&text);
    }
    if sessions.is_empty() {
        out.line("No sessions in this project yet: start one with `pai`.");
        return Ok(());
    }
    let mut text = String::from("Sessions of this project (newest last):\n");
    for s in &sessions {
        let first = s
            .requests
            .first()
            .map(|r| format!("\"{}\"", first_line(r)))
            .unwrap_or_else(|| "(no requests)".into());
        let n = s.requests.len();
        text.push_str(&format!(
            "  {}  {n} request{}  {first}\n",
            s.id,
            if n == 1 { "" } else { "s" }
        ));
    }
    text.push_str("Continue one with `pai resume <SESSION>`, the latest with `pai --continue`.");
    out.line(&text);
    Ok(())
}
