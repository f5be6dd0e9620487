//! `pai discard`: end a session without keeping its work, and without losing anything of the
//! user's. Every plan of the session is undone (so the files it touched return to the user's
//! own state, their snapshotted edits included), HEAD goes back to where the session started
//! (without a checkout: the work tree already holds that state), and the branch is kept under
//! `refs/pai/discarded/<id>` instead of being deleted: `git branch -D` would have dropped the
//! only copy of the edits pai snapshotted.

use std::path::Path;

use git2::{Oid, Repository};
use serde::Serialize;

use crate::history::error::{Context, HistoryError};
use crate::history::git::lock::WorkTreeLock;
use crate::history::git::meta;
use crate::history::git::names;
use crate::history::git::names::Head;
use crate::history::git::repo;
use crate::history::ops::work_tree::WorkTree;
use crate::history::ops::{Op, OpKind, Record};
use crate::history::record::message::Kind;
use crate::history::record::revert;
use crate::history::undo;

/// What `discard` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiscardReport {
    /// The discarded session.
    pub session: String,
    /// Plans undone, newest first.
    pub undone: Vec<u32>,
    /// Where HEAD is now (a branch name, or a commit when detached).
    pub head: String,
    /// The ref keeping the session's commits.
    pub kept_at: String,
}

/// Discard the session whose branch HEAD is on (it must be `session` when given). Refuses
/// before changing anything when the branch holds a commit pai did not make (the user's own
/// work), or when HEAD is not on a session branch.
pub fn discard(
    root: &Path,
    wt: &dyn WorkTree,
    session: Option<&str>,
    force: bool,
) -> Result<DiscardReport, HistoryError> {
    let hr = repo::open_existing(root)?;
    let _lock = WorkTreeLock::acquire(root)?;
    let repo = &hr.repo;
    if let Some(b) = repo::state_blocker(repo) {
        return Err(b.refusal("discard"));
    }
    let branch = revert::session_branch(repo, "discard")?;
    let id = names::session_of_branch(&branch)
        .unwrap_or_default()
        .to_string();
    // A session that continued this line of work discards the line with it.
    if let Some(want) = session
        && want != id
        && meta::branch_of(repo, want) != branch
    {
        return Err(HistoryError::Refused {
            message: format!("HEAD is on session {id}, not {want}"),
            hint: format!(
                "switch to it first: `git switch {}`, then `pai discard`",
                crate::shell::quote(&names::branch_name(want))
            ),
        });
    }
    let info = meta::read(repo, &id).unwrap_or_default();
    let start = names::target(repo, &branch).ctx(|| "cannot read the session branch".into())?;
    check_only_pai_commits(repo, start, info.base, &id, &branch)?;

    let mut undone = Vec::new();
    loop {
        let tip = names::target(repo, &branch).ctx(|| "cannot read the session branch".into())?;
        // Undoing the line's last plan removes the branch and puts HEAD back itself.
        if tip == info.base || repo.find_reference(&branch).is_err() {
            break;
        }
        let report = undo::undo_in(repo, root, wt, force, None)?;
        undone.push(report.plan);
    }

    // HEAD back to where the session started; the work tree and index already hold it.
    // One transaction (history/ops) with keeping the branch and removing it.
    let (target, head) = head_back(repo, &info);
    let kept_at = names::discarded_ref(&id);
    let mut op = Op::intent(repo, root, OpKind::Discard, &id, 0)?;
    match leave_session(
        repo,
        op.record_mut(),
        target.as_ref(),
        start,
        &kept_at,
        &branch,
    ) {
        Ok(()) => {
            op.commit(repo, wt, None)?;
        }
        Err(e) => return op.close(repo, wt, Err(e)),
    }
    Ok(DiscardReport {
        session: id,
        undone,
        head,
        kept_at,
    })
}

/// The end of a discard, as its record says it for the executor: HEAD to `target`, the
/// branch kept at `kept_at` (when it has commits, from `start`) and removed.
fn leave_session(
    repo: &Repository,
    record: &mut Record,
    target: Option<&Head>,
    start: Option<Oid>,
    kept_at: &str,
    branch: &str,
) -> Result<(), HistoryError> {
    if let Some(target) = target {
        let now = names::head(repo).ctx(|| "cannot read HEAD".into())?;
        record.move_head(&now, target);
    }
    if let Some(start) = start {
        let old = names::target(repo, kept_at).ctx(|| format!("cannot read {kept_at}"))?;
        record.move_ref(kept_at, old, Some(start));
    }
    let now = names::target(repo, branch).ctx(|| "cannot read the session branch".into())?;
    record.move_ref(branch, now, None);
    record.reflog = "pai: session discarded".into();
    Ok(())
}

/// Where HEAD goes back to when a session is discarded, and how the report names it: the
/// branch the session started from, or its base commit (detached) when that branch moved
/// since or the session started detached.
fn head_back(repo: &Repository, info: &meta::Meta) -> (Option<Head>, String) {
    match (&info.base_branch, info.base) {
        (Some(b), base) => {
            let moved = names::target(repo, b).ok().flatten() != base;
            if moved && let Some(base) = base {
                let text = format!(
                    "{} (detached: {} moved since the session started)",
                    names::short_id(base),
                    names::short(b)
                );
                (Some(Head::Detached(base)), text)
            } else {
                (Some(Head::Branch(b.clone())), names::short(b).to_string())
            }
        }
        (None, Some(base)) => (Some(Head::Detached(base)), names::short_id(base)),
        (None, None) => (None, String::new()),
    }
}

/// Refuse when a commit between the branch tip and the session's base is not pai's own for this
/// session: discarding would take the user's commit off the branch.
fn check_only_pai_commits(
    repo: &Repository,
    tip: Option<Oid>,
    base: Option<Oid>,
    session: &str,
    branch: &str,
) -> Result<(), HistoryError> {
    let mut at = tip;
    while let Some(id) = at {
        if Some(id) == base {
            return Ok(());
        }
        let c = repo
            .find_commit(id)
            .ctx(|| format!("cannot read commit {id}"))?;
        let t = crate::history::record::verified::trailers(&c);
        let ours = matches!(t.kind, Some(Kind::Plan) | Some(Kind::User))
            && t.session
                .as_deref()
                .is_some_and(|s| s == session || meta::branch_of(repo, s) == branch);
        if !ours {
            let short = names::short_id(id);
            return Err(HistoryError::Refused {
                message: format!(
                    "cannot discard session {session}: its branch holds {short} \"{}\", a commit pai did not make{}",
                    c.summary().ok().flatten().unwrap_or_default(),
                    crate::history::record::forged::why_unverified(&c)
                        .map(|why| format!(" ({why})"))
                        .unwrap_or_default()
                ),
                hint: format!(
                    "move that commit to a branch of your own first (`git branch keep {}`), or undo the session's plans one by one with `pai undo`",
                    crate::shell::quote(&short)
                ),
            });
        }
        at = c.parents().next().map(|p| p.id());
    }
    Ok(())
}
