//! The end-of-session facts and the commands that review, merge or discard a session, and the
//! counts of its plans and snapshots they are made from. `ui/session_end.rs` renders them.

use crate::history::git::meta::Meta;
use crate::history::git::names::{self};
use crate::history::git::store;
use crate::history::record::message::Kind;
use git2::{Oid, Repository};
use serde::Serialize;

/// Plan commits of `session` on `branch` above `base`.
pub(in crate::history) fn count_plans(
    repo: &Repository,
    session: &str,
    branch: &str,
    base: Option<Oid>,
) -> usize {
    count_of(repo, session, branch, &[base])[0]
}

/// Commits made by `session` on `branch` not reachable from any of `below`: its plans, and
/// its snapshots of the user's files, counted in one walk.
pub(super) fn count_of(
    repo: &Repository,
    session: &str,
    branch: &str,
    below: &[Option<Oid>],
) -> [usize; 2] {
    let mut counts = [0, 0];
    let Ok(Some(tip)) = names::target(repo, branch) else {
        return counts;
    };
    let Ok(mut walk) = repo.revwalk() else {
        return counts;
    };
    if walk.push(tip).is_err() {
        return counts;
    }
    for hidden in below.iter().flatten() {
        let _ = walk.hide(*hidden);
    }
    for commit in walk.flatten().filter_map(|oid| repo.find_commit(oid).ok()) {
        let t = crate::history::record::verified::trailers(&commit);
        if t.session.as_deref() != Some(session) {
            continue;
        }
        match t.kind {
            Some(Kind::Plan) => counts[0] += 1,
            Some(Kind::User) => counts[1] += 1,
            _ => {}
        }
    }
    counts
}

/// The end-of-session facts and the commands that review, merge or discard the session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    /// Session id.
    pub session: String,
    /// The session branch (`pai/<id>`, or the line the session continued); `None` when
    /// read-only or when no branch exists (the session carried out nothing, or its plans
    /// were all undone).
    pub branch: Option<String>,
    /// Short id of the commit the session started from (`None` on an unborn branch).
    pub base_commit: Option<String>,
    /// The branch the session started from (`None` when HEAD was detached).
    pub base_branch: Option<String>,
    /// Plan commits on the session branch.
    pub plans: usize,
    /// Snapshots of the user's uncommitted edits this session committed below its plans: the
    /// branch's review diff and merge include them.
    pub snapshots: usize,
    /// Whether history lives in the private `.pai_history/git`.
    pub private: bool,
    /// Why the session could not record history.
    pub read_only: Option<String>,
    /// Command to review the session's changes.
    pub review: Option<String>,
    /// Command to merge them into the base branch.
    pub merge: Option<String>,
    /// Command to throw the session away.
    pub discard: Option<String>,
}

pub(in crate::history) fn summary_for(
    session: &str,
    meta: &Meta,
    plans: usize,
    private: bool,
    branch_exists: bool,
) -> SessionSummary {
    let branch = meta.branch.as_deref().map_or_else(
        || names::branch_name(session),
        |b| names::short(b).to_string(),
    );
    // Outside git the private repository's own branch (an unborn `master`) and commits mean
    // nothing to the user: only the session branch is named.
    let base_short = meta.base.filter(|_| !private).map(names::short_id);
    let base_branch = meta
        .base_branch
        .as_deref()
        .filter(|_| !private)
        .map(|b| names::short(b).to_string());
    let (review, merge, discard) = suggested_commands(
        session,
        &branch,
        base_short.as_deref(),
        base_branch.as_deref(),
        private,
    );
    SessionSummary {
        session: session.to_string(),
        branch: branch_exists.then_some(branch),
        base_commit: base_short,
        base_branch,
        plans,
        snapshots: 0,
        private,
        read_only: None,
        review,
        merge,
        discard,
    }
}

/// The commands a session's end suggests (review, merge, discard), every name in them
/// shell-quoted: the user may paste them.
fn suggested_commands(
    session: &str,
    branch: &str,
    base_short: Option<&str>,
    base_branch: Option<&str>,
    private: bool,
) -> (Option<String>, Option<String>, Option<String>) {
    use crate::shell::quote;
    let branch = quote(branch);
    if private {
        return (
            Some(format!("git --git-dir={}/git log -p {branch}", store::DIR)),
            None,
            None,
        );
    }
    let base_short = base_short.map(quote);
    let review = match &base_short {
        Some(base) => format!("git diff {base}...{branch}"),
        None => format!("git log -p {branch}"),
    };
    // Discarding undoes the plans and keeps the branch under refs/pai/discarded/: a
    // `git branch -D` would drop the only copy of the edits pai snapshotted.
    let discard = format!("pai discard {}", quote(session));
    let merge = match (base_branch.map(quote), &base_short) {
        (Some(b), Some(_)) => format!("git switch {b} && git merge {branch}"),
        (Some(b), None) => format!("git switch -c {b} {branch}"),
        (None, Some(base)) => format!("git switch --detach {base} && git merge {branch}"),
        (None, None) => return (Some(review), None, None),
    };
    (Some(review), Some(merge), Some(discard))
}
