//! `pai sessions`: the project's worktree sessions with what merging them would do, computed
//! by in-memory merges (libgit2's `merge_commits`, nothing written to the index or the work
//! tree): commits ahead of and behind the base, whether the branch merges cleanly into its
//! base, and which other open sessions it conflicts with (the paths named).

use std::path::Path;

use git2::{Oid, Repository};
use serde::Serialize;

use super::linked::{self, Linked};
use crate::history::error::{Context, HistoryError};
use crate::history::git::names;
use crate::history::session::count_plans;

/// One session's line in `pai sessions`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionView {
    /// Session id.
    pub id: String,
    /// The user's name for it.
    pub name: Option<String>,
    /// Its branch (`pai/<id>`); `None` when it no longer exists (every plan undone).
    pub branch: Option<String>,
    /// Its worktree.
    pub worktree: String,
    /// What it started from (a branch, else a short commit id).
    pub base: String,
    /// Plan commits on its branch.
    pub plans: usize,
    /// Another pai process is running it.
    pub running: bool,
    /// Commits on its branch that the base lacks.
    pub ahead: usize,
    /// Commits on the base that its branch lacks.
    pub behind: usize,
    /// Paths that conflict when it is merged into its base (empty: it merges cleanly).
    pub conflicts_with_base: Vec<String>,
    /// Other open sessions it conflicts with, each with the paths.
    pub conflicts_with: Vec<(String, Vec<String>)>,
    /// The command that reviews it.
    pub review: String,
    /// The command that merges it (pai never merges by itself).
    pub merge: String,
}

/// Every worktree session of the project at `root`, with its merge preview.
pub fn sessions(root: &Path) -> Result<Vec<SessionView>, HistoryError> {
    let records = linked::list(root)?;
    let repo = match crate::history::git::repo::find(root)? {
        crate::history::git::repo::Found::Repo(hr) => hr.repo,
        _ => return Ok(Vec::new()),
    };
    let tips: Vec<Option<Oid>> = records
        .iter()
        .map(|l| names::target(&repo, &l.branch_ref()).ok().flatten())
        .collect();
    let mut views = Vec::new();
    for (i, l) in records.iter().enumerate() {
        let mut view = view_of(&repo, root, l, tips[i])?;
        for (j, other) in records.iter().enumerate() {
            if i == j {
                continue;
            }
            if let (Some(a), Some(b)) = (tips[i], tips[j]) {
                let paths = conflicts(&repo, a, b)?;
                if !paths.is_empty() {
                    view.conflicts_with.push((other.id.clone(), paths));
                }
            }
        }
        views.push(view);
    }
    Ok(views)
}

/// One session's facts against its base.
fn view_of(
    repo: &Repository,
    root: &Path,
    l: &Linked,
    tip: Option<Oid>,
) -> Result<SessionView, HistoryError> {
    let base_tip = match &l.base_branch {
        Some(b) => names::target(repo, b).ok().flatten(),
        None => None,
    }
    .or_else(|| Oid::from_str(&l.base).ok());
    let (ahead, behind, conflicts_with_base) = match (tip, base_tip) {
        (Some(tip), Some(base)) => {
            let (ahead, behind) = repo
                .graph_ahead_behind(tip, base)
                .ctx(|| format!("cannot compare pai/{} with {}", l.id, l.base_name()))?;
            let paths = if behind == 0 {
                Vec::new()
            } else {
                conflicts(repo, base, tip)?
            };
            (ahead, behind, paths)
        }
        _ => (0, 0, Vec::new()),
    };
    let branch = names::branch_name(&l.id);
    let base = l.base_name();
    let plans = tip.map_or(0, |_| {
        count_plans(repo, &l.id, &l.branch_ref(), Oid::from_str(&l.base).ok())
    });
    let merge = {
        // Printed as a command the user may paste.
        let (base, branch) = (crate::shell::quote(&base), crate::shell::quote(&branch));
        match &l.base_branch {
            Some(_) => format!("git switch {base} && git merge {branch}"),
            None => format!("git switch --detach {base} && git merge {branch}"),
        }
    };
    Ok(SessionView {
        id: l.id.clone(),
        name: l.name.clone(),
        branch: tip.map(|_| branch.clone()),
        worktree: l.path.display().to_string(),
        review: format!("git diff {base}...{branch}"),
        merge,
        base,
        plans,
        running: linked::is_running(root, l),
        ahead,
        behind,
        conflicts_with_base,
        conflicts_with: Vec::new(),
    })
}

/// The paths an in-memory merge of `ours` and `theirs` leaves in conflict (none when one
/// contains the other).
pub(crate) fn conflicts(
    repo: &Repository,
    ours: Oid,
    theirs: Oid,
) -> Result<Vec<String>, HistoryError> {
    if ours == theirs
        || repo.graph_descendant_of(ours, theirs).unwrap_or(false)
        || repo.graph_descendant_of(theirs, ours).unwrap_or(false)
    {
        return Ok(Vec::new());
    }
    let what = || {
        format!(
            "cannot preview the merge of {} and {}",
            names::short_id(ours),
            names::short_id(theirs)
        )
    };
    let (a, b) = (
        repo.find_commit(ours).ctx(what)?,
        repo.find_commit(theirs).ctx(what)?,
    );
    let index = repo.merge_commits(&a, &b, None).ctx(what)?;
    if !index.has_conflicts() {
        return Ok(Vec::new());
    }
    let mut paths: Vec<String> = index
        .conflicts()
        .ctx(what)?
        .flatten()
        .filter_map(|c| c.our.or(c.their).or(c.ancestor))
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}
