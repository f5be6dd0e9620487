//! `pai undo` and `pai redo`: move the session branch back over its newest plan commit (the
//! previous contents written back through the workspace) or forward again. Both only check
//! and build the operation's record; the executor (`ops`) makes every move. Everything is derived
//! from git — the checked-out `pai/*` branch, the `Pai-*` trailers and
//! `refs/pai/undone/<session>/<n>` — so both work long after the session ended. Nothing here
//! runs clean, reset or a whole-tree checkout: only the plan's own paths are written.
//! Undo's checks and record are `take_back.rs`, redo's `redo.rs`, and `discard.rs` undoes a
//! whole session; this file holds the reports, the entry points and what both halves share.

pub(super) mod discard;
pub(super) mod own_snapshots;
mod redo;
mod take_back;

pub(in crate::history) use redo::redo_in;
pub(crate) use take_back::undo_in;

use std::path::Path;

use git2::{Commit, Oid, Repository};
use serde::Serialize;

use super::error::{Context, HistoryError};
use crate::history::git::lock::WorkTreeLock;
use crate::history::git::names;
use crate::history::git::names::Head;
use crate::history::git::repo;
use crate::history::ops::work_tree::WorkTree;
use crate::history::record::line;
use crate::history::record::message::{self, Kind};
use crate::history::record::revert::{self, PathChange};

/// What `undo` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UndoReport {
    /// Session of the undone plan.
    pub session: String,
    /// Its plan number.
    pub plan: u32,
    /// Abbreviated id of the undone commit.
    pub commit: String,
    /// The plan's request.
    pub request: String,
    /// The session branch (`pai/<id>`).
    pub branch: String,
    /// Files written back to their previous contents.
    pub restored: Vec<String>,
    /// Files the plan had created, now removed.
    pub removed: Vec<String>,
    /// Ignored or LFS files put back from the trash.
    pub from_trash: Vec<String>,
    /// Where `--force` saved the state it overwrote.
    pub saved: Option<String>,
    /// The ref keeping the undone commit for `pai redo`.
    pub undone_ref: String,
    /// Where HEAD went when this was the line's last plan: the branch (or commit) the line
    /// started from; the empty session branch is gone.
    pub head_back: Option<String>,
}

/// What `redo` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RedoReport {
    /// Session of the re-applied plan.
    pub session: String,
    /// Its plan number.
    pub plan: u32,
    /// Abbreviated id of the re-applied commit.
    pub commit: String,
    /// The plan's request.
    pub request: String,
    /// The session branch (`pai/<id>`).
    pub branch: String,
    /// Files written with the plan's contents.
    pub written: Vec<String>,
    /// Files the plan removes, removed again.
    pub removed: Vec<String>,
    /// Files undo had replaced from the trash, put back.
    pub from_trash: Vec<String>,
    /// Files the plan removes that undo had brought back from the trash and the user changed
    /// since: kept as the user left them, not removed again.
    pub kept: Vec<String>,
    /// The line redo came back to: its branch was created again and HEAD put on it.
    pub reentered: bool,
}

/// Undo the newest plan of the checked-out session branch of the project at `root`, from any
/// process. Refuses (naming the files and what to do) when HEAD is not a session branch, the
/// plan is already on another branch or a remote-tracking ref, or a file the plan touched has
/// changed since — unless `force`, which first saves the current state under
/// `refs/pai/saved/<session>/<n>`.
pub fn undo(root: &Path, wt: &dyn WorkTree, force: bool) -> Result<UndoReport, HistoryError> {
    let hr = repo::open_existing(root)?;
    let _lock = WorkTreeLock::acquire(root)?;
    undo_in(&hr.repo, root, wt, force, None)
}

/// Re-apply the plan the last undo took off the checked-out session branch.
pub fn redo(root: &Path, wt: &dyn WorkTree) -> Result<RedoReport, HistoryError> {
    let hr = repo::open_existing(root)?;
    let _lock = WorkTreeLock::acquire(root)?;
    redo_in(&hr.repo, root, wt)
}

/// Where the session stood before plan `number`: the commit below the snapshots of the user's
/// changes pai committed for the plan (`None` on an unborn branch), and the tree the index
/// followed for the plan's paths (the snapshot of the user's staged changes when there is one,
/// else that commit's tree).
fn before_plan<'r>(
    plan_commit: &Commit<'r>,
    number: u32,
) -> Result<(Option<Commit<'r>>, Option<git2::Tree<'r>>), HistoryError> {
    let mut below = plan_commit.parents().next();
    let mut staged: Option<git2::Tree<'r>> = None;
    while let Some(c) = below {
        let msg = c.message().unwrap_or_default();
        let t = crate::history::record::verified::trailers(&c);
        if t.kind != Some(Kind::User) || t.plan != Some(number) {
            let tree = c.tree().ctx(|| "cannot read a parent tree".into())?;
            return Ok((Some(c), Some(staged.unwrap_or(tree))));
        }
        if message::is_staged_snapshot(msg) && staged.is_none() {
            staged = Some(c.tree().ctx(|| "cannot read a snapshot".into())?);
        }
        below = c.parents().next();
    }
    Ok((None, staged))
}

fn read_commit<'r>(repo: &'r Repository, id: Oid) -> Result<Commit<'r>, HistoryError> {
    repo.find_commit(id)
        .ctx(|| format!("cannot read commit {id}"))
}

/// The checked-out session branch an undo or redo moves, as read before anything is touched.
struct SessionBranch {
    /// Redo comes back to a line whose last plan undo took off: the branch does not exist
    /// and HEAD is on the branch (or commit) the line started from.
    reenter: bool,
    /// The full ref name (`refs/heads/pai/<id>`).
    name: String,
    /// `pai/<id>`, as messages name it.
    short: String,
    /// Its tip; `None` on an unborn branch.
    tip: Option<Oid>,
}

/// The checked-out session branch and its tip. Refuses `action` first while git is in the
/// middle of an operation (a merge, a rebase), which owns the index and work tree then.
fn checked_out_branch(repo: &Repository, action: &str) -> Result<SessionBranch, HistoryError> {
    if let Some(b) = repo::state_blocker(repo) {
        return Err(b.refusal(action));
    }
    let name = revert::session_branch(repo, action)?;
    let short = names::short(&name).to_string();
    let tip = names::target(repo, &name).ctx(|| format!("cannot read {short}"))?;
    Ok(SessionBranch {
        reenter: false,
        name,
        short,
        tip,
    })
}

/// The branch redo moves: the checked-out session branch, or, when HEAD is where a line
/// whose plans were all undone started, that line (created again by the redo).
fn redo_branch(repo: &Repository) -> Result<SessionBranch, HistoryError> {
    let refusal = match checked_out_branch(repo, "redo") {
        Ok(branch) => return Ok(branch),
        Err(e) => e,
    };
    if repo::state_blocker(repo).is_some() {
        return Err(refusal);
    }
    let head = names::head(repo).ctx(|| "cannot read HEAD".into())?;
    let tip = match &head {
        Head::Branch(b) => names::target(repo, b).ctx(|| format!("cannot read {b}"))?,
        Head::Detached(oid) => Some(*oid),
    };
    let lands = |id: Oid| repo.find_commit(id).is_ok_and(|c| lands_on(&c, tip));
    let Some(name) = line::to_reenter(repo, &head, lands) else {
        return Err(refusal);
    };
    Ok(SessionBranch {
        reenter: true,
        short: names::short(&name).to_string(),
        name,
        tip,
    })
}

/// The paths `plan` changed (with their entries before and after it), and the tree below it
/// (`None` for a branch's first commit).
fn plan_changes<'r>(
    repo: &'r Repository,
    plan: &Commit<'r>,
) -> Result<(Option<git2::Tree<'r>>, Vec<PathChange>), HistoryError> {
    let plan_tree = plan.tree().ctx(|| "cannot read the plan's tree".into())?;
    let before_tree = revert::parent_tree(plan)?;
    let changes = revert::changed_paths(repo, before_tree.as_ref(), Some(&plan_tree))?;
    Ok((before_tree, changes))
}

/// The paths an undo's or redo's record moves, as its report names them.
#[derive(Default)]
pub(super) struct Moved {
    pub(super) restored: Vec<String>,
    pub(super) removed: Vec<String>,
    pub(super) from_trash: Vec<String>,
}

/// Whether `commit`'s first parent is `tip`, possibly through snapshots of the user's changes.
pub(super) fn lands_on(commit: &Commit<'_>, tip: Option<Oid>) -> bool {
    let mut parent = commit.parents().next();
    loop {
        match (&parent, tip) {
            (None, None) => return true,
            (Some(p), Some(t)) if p.id() == t => return true,
            (Some(p), _) if revert::kind(p) == Some(Kind::User) => {
                parent = p.parents().next();
            }
            _ => return false,
        }
    }
}
