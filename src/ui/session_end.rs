//! The end of a session as plain text for people: its plans on their branch and base, the
//! snapshots of the user's edits below them, and the commands that review, merge or discard
//! it. History returns the facts (`SessionSummary`) and renders none.

use crate::history::SessionSummary;

/// Plain text for the end of a session.
pub fn session_end_text(s: &SessionSummary) -> String {
    if let Some(reason) = &s.read_only {
        return format!("Session {}: no history recorded ({reason}).\n", s.session);
    }
    if s.plans == 0 && s.branch.is_none() {
        return format!(
            "Session {}: no plans recorded; nothing changed in git.\n",
            s.session
        );
    }
    let mut out = format!(
        "Session {}: {} on {}",
        s.session,
        plural(s.plans, "plan", "plans"),
        s.branch.as_deref().unwrap_or("(no branch)")
    );
    match (&s.base_branch, &s.base_commit) {
        (Some(b), Some(c)) => out.push_str(&format!(" (from {b} at {c})")),
        (Some(b), None) => out.push_str(&format!(" (from unborn {b})")),
        (None, Some(c)) => out.push_str(&format!(" (from detached {c})")),
        (None, None) => {}
    }
    out.push('\n');
    if s.snapshots > 0 {
        out.push_str(&format!(
            "  the branch also holds {} of your uncommitted edits, taken before the plans that changed those files: the review and the merge include them; `pai discard` gives them back uncommitted\n",
            plural(s.snapshots, "snapshot", "snapshots")
        ));
    }
    for (label, cmd) in [
        ("review ", &s.review),
        ("merge  ", &s.merge),
        ("discard", &s.discard),
    ] {
        if let Some(cmd) = cmd {
            out.push_str(&format!("  {label}  {cmd}\n"));
        }
    }
    if let Some(branch) = &s.branch {
        if s.private {
            out.push_str(
                "The next `pai` here continues this line of work (`pai undo` walks back across sessions); `pai --continue` also brings back this session's memory.\n",
            );
        } else {
            out.push_str(&format!(
                "HEAD stays on {branch}: the next `pai` here continues this line of work on it (`pai undo` walks back across sessions); `pai --continue` also brings back this session's memory.\n"
            ));
        }
    }
    out
}

/// `1 plan`, `2 plans`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
