//! History's records as plain text for people: `pai log` (each session's plans, its merge and
//! review commands, the commits that claim to be pai's but do not verify) and `pai sessions`
//! (worktree sessions with what merging each would do). History returns the data; the JSON
//! forms are its serialisation.

use chrono::DateTime;

use crate::history::{PlanLog, SessionLog, SessionView, UnverifiedCommit};

/// Plain text for `pai log`.
pub fn log_text(sessions: &[SessionLog]) -> String {
    if sessions.is_empty() {
        return "No pai plans recorded here yet.\n".into();
    }
    let mut out = String::new();
    for s in sessions {
        render_session_head(&mut out, s);
        if s.plans.is_empty() {
            out.push_str("  no plans\n");
        }
        for p in &s.plans {
            render_plan(&mut out, p);
        }
        render_unverified(&mut out, &s.unverified);
    }
    out
}

/// A session's heading: its id, branch and base, then the merge and review commands, which
/// are shown only while its branch exists.
fn render_session_head(out: &mut String, s: &SessionLog) {
    out.push_str(&format!("Session {}", s.session));
    match &s.branch {
        Some(b) => out.push_str(&format!("  {b}")),
        None => out.push_str("  (branch deleted)"),
    }
    match (&s.base_commit, &s.base_branch) {
        (Some(c), Some(b)) => out.push_str(&format!("  from {b} at {c}")),
        (Some(c), None) => out.push_str(&format!("  from detached {c}")),
        (None, Some(b)) => out.push_str(&format!("  from unborn {b}")),
        (None, None) => {}
    }
    out.push('\n');
    if s.branch.is_some() {
        if let Some(merge) = &s.merge {
            out.push_str(&format!("  merge: {merge}\n"));
        }
        if let Some(review) = &s.review {
            out.push_str(&format!("  review: {review}\n"));
        }
    }
}

/// One plan: its number, commit, time (at the committer's offset) and the first line of its
/// request (marked when partly failed or undone), its steps, the failed steps left undone, its files, the calls, tokens and model when known,
/// and its patch when asked for (indented under the plan).
fn render_plan(out: &mut String, p: &PlanLog) {
    let when = DateTime::parse_from_rfc3339(&p.time)
        .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|_| p.time.clone());
    let request = p.request.lines().next().unwrap_or_default();
    out.push_str(&format!(
        "  plan {:<3} {}  {}  {}{}{}\n",
        p.plan,
        p.commit,
        when,
        request,
        if p.failed_steps.is_empty() {
            ""
        } else {
            "  [partly failed]"
        },
        if p.undone { "  [undone]" } else { "" }
    ));
    let files: Vec<String> = p
        .files
        .iter()
        .map(|f| {
            if f.binary {
                format!("{} (binary, {})", f.path, f.status)
            } else {
                format!("{} +{} -{}", f.path, f.added, f.deleted)
            }
        })
        .collect();
    for step in &p.steps {
        out.push_str(&format!("           - {step}\n"));
    }
    for failed in &p.failed_steps {
        out.push_str(&format!("           not done: {failed}\n"));
    }
    out.push_str(&format!("           {}\n", files.join(", ")));
    let calls = p
        .calls
        .map(|c| format!("{c} call{}", if c == 1 { "" } else { "s" }));
    let details: Vec<String> = [calls, token_counts(p), p.model.clone()]
        .into_iter()
        .flatten()
        .collect();
    if !details.is_empty() {
        out.push_str(&format!("           {}\n", details.join(" · ")));
    }
    if let Some(patch) = &p.patch {
        for line in patch.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
}

/// `tokens I in / O out`, with the cached and reasoning counts when there were any; `None`
/// unless the plan commit recorded both the input and the output count.
fn token_counts(p: &PlanLog) -> Option<String> {
    let (Some(i), Some(o)) = (p.input_tokens, p.output_tokens) else {
        return None;
    };
    let mut extra = Vec::new();
    if let Some(c) = p.cached_tokens.filter(|&c| c > 0) {
        extra.push(format!("{c} cached"));
    }
    if let Some(r) = p.reasoning_tokens.filter(|&r| r > 0) {
        extra.push(format!("{r} reasoning"));
    }
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(" ({})", extra.join(", "))
    };
    Some(format!("tokens {i} in / {o} out{extra}"))
}

/// The lines `pai log` prints for a session's unverified commits.
fn render_unverified(out: &mut String, commits: &[UnverifiedCommit]) {
    for c in commits {
        let when = DateTime::parse_from_rfc3339(&c.time)
            .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_else(|_| c.time.clone());
        out.push_str(&format!(
            "  not verified {}  {when}  {}\n           pai takes no action on it; `{}` takes its change out\n",
            c.commit, c.reason, c.revert
        ));
    }
}

/// Plain text for `pai sessions`.
pub fn sessions_text(views: &[SessionView]) -> String {
    if views.is_empty() {
        return "No worktree sessions in this project: start one with `pai -w`.\n".into();
    }
    let mut out = String::new();
    for v in views {
        let label = v
            .name
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        out.push_str(&format!(
            "{}{label}  {}  {}  {} ahead, {} behind {}\n",
            v.id,
            if v.running { "running" } else { "finished" },
            plural(v.plans, "plan", "plans"),
            v.ahead,
            v.behind,
            v.base
        ));
        out.push_str(&format!(
            "  branch    {}\n  worktree  {}\n",
            v.branch.as_deref().unwrap_or("(none: every plan undone)"),
            v.worktree
        ));
        if v.branch.is_some() {
            if v.conflicts_with_base.is_empty() {
                out.push_str(&format!("  merges cleanly into {}\n", v.base));
            } else {
                out.push_str(&format!(
                    "  conflicts with {} in: {}\n",
                    v.base,
                    v.conflicts_with_base.join(", ")
                ));
            }
            for (other, paths) in &v.conflicts_with {
                out.push_str(&format!(
                    "  conflicts with session {other} in: {} (once one of them is merged)\n",
                    paths.join(", ")
                ));
            }
            out.push_str(&format!(
                "  review    {}\n  merge     {}\n",
                v.review, v.merge
            ));
        }
    }
    out
}

/// `1 plan`, `2 plans`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
