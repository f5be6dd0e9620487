//! What a pai commit changed, read back from git alone (so undo, redo and log work from a fresh
//! process), and the checks that guard rewriting a session branch.

use git2::{Commit, DiffOptions, Oid, Repository, Tree};

use super::error::{Context, HistoryError};
use super::message::{self, Kind};
use super::names::{self, Head};
use super::scope::{Entry, MODE_EXEC, MODE_FILE};

/// One path a commit changed: what it held before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathChange {
    pub path: String,
    pub before: Option<Entry>,
    pub after: Option<Entry>,
}

/// The regular-file paths `new` changed relative to `old` (no rename detection: a move is a
/// removal and an addition, which is exactly what undo must write back).
pub(crate) fn changed_paths(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: Option<&Tree<'_>>,
) -> Result<Vec<PathChange>, HistoryError> {
    let mut opts = DiffOptions::new();
    let diff = repo
        .diff_tree_to_tree(old, new, Some(&mut opts))
        .ctx(|| "cannot compare trees".into())?;
    let entry = |f: git2::DiffFile<'_>| -> Option<Entry> {
        let mode = i32::from(f.mode());
        (f.exists() && (mode == MODE_FILE || mode == MODE_EXEC)).then(|| (f.id(), mode))
    };
    let mut out = Vec::new();
    for delta in diff.deltas() {
        let file = if delta.new_file().exists() {
            delta.new_file()
        } else {
            delta.old_file()
        };
        let Some(path) = file.path().and_then(|p| p.to_str()) else {
            continue;
        };
        out.push(PathChange {
            path: path.to_string(),
            before: entry(delta.old_file()),
            after: entry(delta.new_file()),
        });
    }
    Ok(out)
}

/// The tree of a commit's first parent (`None` for a root commit).
pub(crate) fn parent_tree<'r>(commit: &Commit<'r>) -> Result<Option<Tree<'r>>, HistoryError> {
    match commit.parents().next() {
        Some(p) => Ok(Some(p.tree().ctx(|| "cannot read a parent tree".into())?)),
        None => Ok(None),
    }
}

/// The pai kind of a commit, if it is one of pai's.
pub(crate) fn kind(commit: &Commit<'_>) -> Option<Kind> {
    message::parse(commit.message().unwrap_or_default()).kind
}

/// The checked-out session branch (`refs/heads/pai/<id>`), or a refusal of `action`.
pub(crate) fn session_branch(repo: &Repository, action: &str) -> Result<String, HistoryError> {
    let head = names::head(repo).ctx(|| "cannot read HEAD".into())?;
    if let Head::Branch(name) = &head
        && names::session_of_branch(name).is_some()
    {
        return Ok(name.clone());
    }
    let newest = session_branches(repo).into_iter().next_back();
    Err(HistoryError::Refused {
        message: format!(
            "cannot {action}: HEAD is on {}, not a pai session branch",
            head.describe()
        ),
        hint: match newest {
            Some(b) => format!(
                "switch to the session branch first (e.g. `git switch {}`); to revert a plan already merged elsewhere, use `git revert <commit>`",
                names::short(&b)
            ),
            None => "this repository has no pai session branches".into(),
        },
    })
}

/// All `refs/heads/pai/*` branches, sorted by name (session ids sort by time).
pub(crate) fn session_branches(repo: &Repository) -> Vec<String> {
    let mut out: Vec<String> = repo
        .references_glob(&format!("{}*", names::BRANCH_PREFIX))
        .map(|refs| {
            refs.flatten()
                .filter_map(|r| r.name().ok().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Local branches (other than `own`) and remote-tracking refs that contain `commit`.
pub(crate) fn refs_containing(
    repo: &Repository,
    commit: Oid,
    own: &str,
) -> Result<Vec<String>, HistoryError> {
    let mut out = Vec::new();
    let refs = repo.references().ctx(|| "cannot list refs".into())?;
    for r in refs.flatten() {
        let Ok(name) = r.name() else { continue };
        if name == own || !(name.starts_with("refs/heads/") || name.starts_with("refs/remotes/")) {
            continue;
        }
        if r.symbolic_target().ok().flatten().is_some() {
            continue;
        }
        let Some(target) = r.target() else { continue };
        let contains = target == commit
            || repo
                .graph_descendant_of(target, commit)
                .ctx(|| format!("cannot compare {name} with {commit}"))?;
        if contains {
            let short = name
                .strip_prefix("refs/heads/")
                .or_else(|| name.strip_prefix("refs/remotes/"))
                .unwrap_or(name);
            out.push(short.to_string());
        }
    }
    Ok(out)
}

/// Describe how the work tree differs from what a commit recorded.
pub(crate) fn describe_difference(recorded: Option<Entry>, now: Option<Entry>) -> &'static str {
    match (recorded, now) {
        (Some(_), None) => "deleted",
        (None, Some(_)) => "created",
        (Some((a, _)), Some((b, _))) if a == b => "mode changed",
        _ => "modified",
    }
}
