//! What a pai commit changed, read back from git alone (so undo, redo and log work from a fresh
//! process), and the checks that guard rewriting a session branch.

use std::collections::BTreeMap;

use git2::{Commit, Oid, Repository, Tree};

use crate::history::error::{Context, HistoryError};
use crate::history::git::names::{self, Head};
pub(crate) use crate::history::ops::scope::PathChange;
use crate::history::ops::scope::{Entry, MODE_EXEC, MODE_FILE};
use crate::history::record::message::Kind;

/// Git mode of a subtree.
const TREE_MODE: i32 = 0o040000;

/// The regular-file paths `new` changed relative to `old` (no rename detection: a move is a
/// removal and an addition, which is exactly what undo must write back). Only subtrees whose
/// ids differ are read, so the cost follows the change, not the repository (libgit2's tree
/// diff would walk every entry: about 100 ms at 100,000 files).
pub(crate) fn changed_paths(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: Option<&Tree<'_>>,
) -> Result<Vec<PathChange>, HistoryError> {
    let mut out = Vec::new();
    diff_level(repo, old, new, "", &mut out)?;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// (id, mode) of an entry on each side.
type Sides = (Option<(Oid, i32)>, Option<(Oid, i32)>);

fn diff_level(
    repo: &Repository,
    old: Option<&Tree<'_>>,
    new: Option<&Tree<'_>>,
    prefix: &str,
    out: &mut Vec<PathChange>,
) -> Result<(), HistoryError> {
    let mut names: BTreeMap<Vec<u8>, Sides> = BTreeMap::new();
    for entry in old.into_iter().flat_map(|t| t.iter()) {
        names.entry(entry.name_bytes().to_vec()).or_default().0 =
            Some((entry.id(), entry.filemode()));
    }
    for entry in new.into_iter().flat_map(|t| t.iter()) {
        names.entry(entry.name_bytes().to_vec()).or_default().1 =
            Some((entry.id(), entry.filemode()));
    }
    let subtree = |side: Option<(Oid, i32)>| -> Result<Option<Tree<'_>>, HistoryError> {
        match side {
            Some((id, TREE_MODE)) => Ok(Some(
                repo.find_tree(id)
                    .ctx(|| format!("cannot read tree {id}"))?,
            )),
            _ => Ok(None),
        }
    };
    let file = |side: Option<(Oid, i32)>| side.filter(|(_, m)| *m == MODE_FILE || *m == MODE_EXEC);
    for (name, (o, n)) in names {
        if o == n {
            continue;
        }
        let path = crate::history::git::paths::join(prefix, &crate::rawname::encode(&name));
        let (ot, nt) = (subtree(o)?, subtree(n)?);
        if ot.is_some() || nt.is_some() {
            diff_level(repo, ot.as_ref(), nt.as_ref(), &path, out)?;
        }
        let (before, after) = (file(o), file(n));
        if before != after {
            out.push(PathChange {
                path,
                before,
                after,
            });
        }
    }
    Ok(())
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
    crate::history::record::verified::trailers(commit).kind
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
    if crate::history::git::repo::is_private(repo) {
        // Outside git: no git branch names or git commands the user has no use for.
        return Err(HistoryError::NoSession {
            message: format!("cannot {action}: no pai session with plans is current here"),
            hint: "`pai log` lists the sessions and their plans; `pai resume <SESSION>` continues one with plans, where /undo works".into(),
        });
    }
    Err(HistoryError::NoSession {
        message: format!(
            "cannot {action}: HEAD is on {}, not a pai session branch",
            head.describe()
        ),
        hint: match newest {
            Some(b) => format!(
                "switch to the session branch first (e.g. `git switch {}`); to revert a plan already merged elsewhere, use `git revert <commit>`",
                crate::shell::quote(names::short(&b))
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
                // A branch under `pai/` whose name is outside pai's id grammar is not a session.
                .filter(|name| names::session_of_branch(name).is_some())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
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
