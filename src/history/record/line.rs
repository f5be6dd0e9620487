//! A line of work: the session branch `pai/<id>` is created at a session's first plan commit,
//! never earlier (a session that carries out nothing leaves no branch, ref or HEAD move); a
//! later session started on HEAD of a session branch continues that branch; undo leaves the
//! line for the branch it started from once its last plan is undone, and redo comes back.

use git2::{Oid, Repository};

use crate::history::error::{Context, HistoryError};
use crate::history::git::meta::{self, Meta};
use crate::history::git::names::{self, Head};

/// Where a session's plans go, and whether their branch exists yet.
pub(crate) struct Line {
    /// The branch exists (the session continued a line, or made its first plan commit) and
    /// HEAD is on it.
    pub created: bool,
    /// Where HEAD was when the session started; while `created` is false, HEAD must still be
    /// there for a plan to be recorded (the branch will start from that branch's tip).
    pub start_head: Head,
    /// The session's metadata ref is written (at its first plan commit).
    pub recorded: bool,
}

/// The line HEAD is on at a session's start: a session branch (its full name, and the
/// metadata of the line's first session, which says where the line started), or `None`.
pub(crate) fn at_head(repo: &Repository, head: &Head) -> Option<(String, Meta)> {
    let Head::Branch(name) = head else {
        return None;
    };
    names::session_of_branch(name)?;
    let line = line_meta(repo, name).unwrap_or_default();
    Some((
        name.clone(),
        Meta {
            base: line.base,
            base_branch: line.base_branch,
            branch: Some(name.clone()),
        },
    ))
}

/// Where a new line would start: HEAD's branch (or commit, when detached) and its commit.
pub(crate) fn start_point(repo: &Repository, head: &Head) -> Result<Meta, HistoryError> {
    Ok(match head {
        Head::Branch(name) => Meta {
            base: names::target(repo, name).ctx(|| format!("cannot read {name}"))?,
            base_branch: Some(name.clone()),
            branch: None,
        },
        Head::Detached(oid) => Meta {
            base: Some(*oid),
            base_branch: None,
            branch: None,
        },
    })
}

impl Line {
    /// The commit the next plan goes on: the branch's tip, or before the branch exists the
    /// tip of the branch (or the commit) HEAD was on at the start.
    pub(crate) fn tip(&self, repo: &Repository, branch: &str) -> Result<Option<Oid>, HistoryError> {
        let what = || "cannot read the session branch".to_string();
        if self.created {
            return names::target(repo, branch).ctx(what);
        }
        match &self.start_head {
            Head::Branch(name) => names::target(repo, name).ctx(what),
            Head::Detached(oid) => Ok(Some(*oid)),
        }
    }

    /// Refuse to record when HEAD is no longer where the session's plans go.
    pub(crate) fn check_head(&self, repo: &Repository, branch: &str) -> Result<(), HistoryError> {
        let head = names::head(repo).ctx(|| "cannot read HEAD".into())?;
        let expected = if self.created {
            Head::Branch(branch.to_string())
        } else {
            self.start_head.clone()
        };
        if head == expected {
            return Ok(());
        }
        Err(HistoryError::HeadMoved {
            expected: match &expected {
                Head::Branch(b) => names::short(b).to_string(),
                Head::Detached(oid) => format!("detached HEAD at {}", names::short_id(*oid)),
            },
            found: head.describe(),
        })
    }

    /// After an undo or redo inside the session moved HEAD: follow it. On a session branch
    /// the session's plans go there; anywhere else a new line starts at the next plan.
    pub(crate) fn follow_head(
        &mut self,
        repo: &Repository,
        session: &str,
        branch: &mut String,
        meta: &mut Meta,
    ) {
        let Ok(head) = names::head(repo) else {
            return;
        };
        if let Some((name, line_meta)) = at_head(repo, &head) {
            self.created = true;
            self.recorded = false;
            *meta = line_meta;
            if name == names::branch_ref(session) {
                meta.branch = None;
            }
            *branch = name;
        } else if let Ok(start) = start_point(repo, &head) {
            self.created = false;
            self.recorded = false;
            *meta = start;
            *branch = names::branch_ref(session);
        }
        self.start_head = head;
    }
}

/// The session whose plan is newest on the line `branch`: the one `pai --continue` picks up.
pub(crate) fn newest_session(repo: &Repository, branch: &str) -> Option<String> {
    let tip = names::target(repo, branch).ok()??;
    let mut walk = repo.revwalk().ok()?;
    walk.push(tip).ok()?;
    walk.simplify_first_parent().ok()?;
    for oid in walk.flatten().take(1_000) {
        let commit = repo.find_commit(oid).ok()?;
        let t = crate::history::record::verified::trailers(&commit);
        if let Some(s) = t.session {
            return Some(s);
        }
        if t.kind.is_none() {
            break;
        }
    }
    names::session_of_branch(branch).map(str::to_string)
}

/// Where HEAD goes once undo takes the last plan off the line `branch` (to be left at
/// `base`): the line's base branch while it is still at `base`, or its base commit when the
/// line started detached; `None` when HEAD stays on `branch`. Nothing is moved here: the
/// undo's record moves HEAD and removes the emptied branch, so neither index nor work tree
/// changes.
pub(crate) fn leaves_to(
    repo: &Repository,
    branch: &str,
    base: Option<Oid>,
) -> Result<Option<Head>, HistoryError> {
    let Some(line) = line_meta(repo, branch) else {
        return Ok(None);
    };
    if line.base != base {
        return Ok(None);
    }
    let what = || format!("cannot move HEAD off {}", names::short(branch));
    Ok(match (&line.base_branch, base) {
        (Some(b), base) => {
            if names::target(repo, b).ctx(what)? != base {
                return Ok(None);
            }
            Some(Head::Branch(b.clone()))
        }
        (None, Some(base)) => Some(Head::Detached(base)),
        (None, None) => None,
    })
}

/// When HEAD is not on a session branch: the line redo comes back to, from the undone plans
/// that land on HEAD's commit and whose line started at HEAD's branch and no longer exists.
/// The branch's full name.
pub(crate) fn to_reenter(
    repo: &Repository,
    head: &Head,
    lands: impl Fn(Oid) -> bool,
) -> Option<String> {
    let refs = repo.references_glob(&names::all_undone_glob()).ok()?;
    let mut best: Option<(i64, String)> = None;
    for r in refs.flatten() {
        let (Ok(name), Some(id)) = (r.name(), r.target()) else {
            continue;
        };
        let Some(session) = names::session_of_undone(name) else {
            continue;
        };
        let branch = meta::branch_of(repo, session);
        if repo.find_reference(&branch).is_ok() || !lands(id) {
            continue;
        }
        let line = line_meta(repo, &branch).unwrap_or_default();
        let started_here = match head {
            Head::Branch(b) => line.base_branch.as_deref() == Some(b.as_str()),
            Head::Detached(oid) => line.base_branch.is_none() && line.base == Some(*oid),
        };
        let when = repo
            .find_commit(id)
            .map(|c| c.time().seconds())
            .unwrap_or(0);
        if started_here && best.as_ref().is_none_or(|(t, _)| when >= *t) {
            best = Some((when, branch));
        }
    }
    best.map(|(_, b)| b)
}

/// The metadata of the session that started the line `branch` (`refs/heads/pai/<id>`, or
/// `pai/<id>-<n>` when that name was taken): where the line started.
fn line_meta(repo: &Repository, branch: &str) -> Option<Meta> {
    let id = names::session_of_branch(branch)?;
    let mut candidates = vec![id];
    if let Some((first, n)) = id.rsplit_once('-')
        && n.chars().all(|c| c.is_ascii_digit())
    {
        candidates.push(first);
    }
    candidates.into_iter().find_map(|first| {
        meta::read(repo, first)
            .filter(|m| m.branch.as_deref().unwrap_or(&names::branch_ref(first)) == branch)
    })
}
