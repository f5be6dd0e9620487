//! Redo's half: find the newest undone plan that sits on the session branch's tip, check
//! that its files are as undo left them, and build the record that moves the branch forward
//! again over it, writing the plan's contents (and its trash copies' bytes) back.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{Oid, Repository};

use super::{
    Moved, RedoReport, SessionBranch, before_plan, lands_on, plan_changes, read_commit, redo_branch,
};
use crate::history::error::{Context, HistoryError};
use crate::history::git::meta;
use crate::history::git::names;
use crate::history::git::names::{Head, PlanId};
use crate::history::git::repo;
use crate::history::index::{self, IndexFile};
use crate::history::ops::convert;
use crate::history::ops::scope::{self, Entry};
use crate::history::ops::work_tree::WorkTree;
use crate::history::ops::{Op, OpKind, Record, copy_state, found, produced};
use crate::history::record::forged;
use crate::history::record::made::Made;
use crate::history::record::message::{self};
use crate::history::record::revert::{self, PathChange};
use crate::history::record::verified;
use crate::history::record::{kept, trash};

/// The newest undone plan that sits on `branch`'s tip (directly or through snapshots of the
/// user's changes), as (plan number, undone ref, commit): this session's, or one of a session
/// whose branch is gone (undone here because this branch was started from theirs). Refuses
/// when there is none, naming this session's undone plans the branch has moved on from, with
/// the command that re-applies each.
fn newest_undone(
    repo: &Repository,
    branch: &SessionBranch,
    branch_session: &str,
) -> Result<(u32, String, Oid), HistoryError> {
    let mut fitting: Vec<(u32, String, Oid)> = Vec::new();
    let mut stale: Vec<String> = Vec::new();
    let refs = repo
        .references_glob(&names::all_undone_glob())
        .ctx(|| "cannot list undone plans".into())?;
    for r in refs.flatten() {
        let (Ok(name), Some(id)) = (r.name().map(str::to_string), r.target()) else {
            continue;
        };
        let Some(session) = names::session_of_undone(&name).filter(|s| names::is_id(s)) else {
            continue;
        };
        let own = session == branch_session;
        // Another session's undone plan is redone here when its plans went on this line,
        // or when its own branch is gone (this branch was started from theirs).
        let line = meta::branch_of(repo, session);
        if !own && line != branch.name && repo.find_reference(&line).is_ok() {
            continue;
        }
        let commit = read_commit(repo, id)?;
        // Only a plan pai made for this user, kept under its own session and number.
        let Some(number) = forged::undone_plan(&commit, &name) else {
            if let Some(why) = forged::why_unverified(&commit).filter(|_| own) {
                stale.push(format!(
                    "commit {} (kept for redo) is not pai's as it stands: {why}",
                    names::short_id(id)
                ));
            }
            continue;
        };
        if lands_on(&commit, branch.tip) {
            fitting.push((number, name, id));
        } else if own {
            stale.push(format!(
                "plan {number} ({}): `git cherry-pick {}`",
                names::short_id(id),
                crate::shell::quote(&names::short_id(id))
            ));
        }
    }
    fitting.sort();
    fitting.pop().ok_or_else(|| HistoryError::Refused {
        message: format!("nothing to redo on {}", branch.short),
        hint: if stale.is_empty() {
            "pai redo re-applies a plan taken off the session branch by pai undo".into()
        } else {
            format!(
                "these plans cannot be redone by pai (the branch moved on since the undo, or the plan is not verified); re-apply one with git if you want it: {}",
                stale.join("; ")
            )
        },
    })
}

/// Compare each path the plan changed with what undo left: the work tree must hold what the
/// plan replaced, and the index one of the entries undo can have left there (the plan's
/// parent's, the tip's, or the one `before_plan` finds). What differs, as the refusal names
/// it.
fn drift_since_undo(
    repo: &Repository,
    wt: &dyn WorkTree,
    index: &IndexFile,
    changes: &[PathChange],
    tip_tree: Option<&git2::Tree<'_>>,
    index_before: Option<&git2::Tree<'_>>,
) -> Result<Vec<String>, HistoryError> {
    let mut changed = Vec::new();
    for c in changes {
        let Ok(file) = convert::work_file(repo, wt, &c.path, index.get(&c.path))? else {
            changed.push(format!("{} (no longer a regular file)", c.path));
            continue;
        };
        let now = scope::entry_of(file.as_ref());
        if now != c.before {
            changed.push(format!(
                "{} ({})",
                c.path,
                revert::describe_difference(c.before, now)
            ));
        } else {
            // Undo left the index at the tip's entry, which for a path under a snapshot of
            // the user's changes is not the plan's parent's entry.
            let in_index = index.get(&c.path);
            let at_tip = scope::tree_file(tip_tree, &c.path).ok().flatten();
            let left_by_undo = scope::tree_file(index_before, &c.path).ok().flatten();
            if in_index != c.before && in_index != at_tip && in_index != left_by_undo {
                changed.push(format!("{} (staged changes)", c.path));
            }
        }
    }
    Ok(changed)
}

/// The tree of the branch's tip (`None` on an unborn branch).
fn tree_at_tip(
    repo: &Repository,
    tip: Option<Oid>,
) -> Result<Option<git2::Tree<'_>>, HistoryError> {
    Ok(match tip {
        Some(t) => Some(
            read_commit(repo, t)?
                .tree()
                .ctx(|| "cannot read the tip".into())?,
        ),
        None => None,
    })
}

/// Refuse a redo that would overwrite the `changed` paths (as [`drift_since_undo`] names
/// them), pointing to `git cherry-pick` instead.
fn refuse_redo(changed: &[String], number: u32, short: &str) -> Result<(), HistoryError> {
    if changed.is_empty() {
        return Ok(());
    }
    Err(HistoryError::Refused {
        message: format!(
            "cannot redo plan {number} ({short}): changed since the undo: {}",
            changed.join(", ")
        ),
        hint: format!(
            "redo would overwrite those changes; commit or move them away first, or re-apply the plan with `git cherry-pick {}`",
            crate::shell::quote(short)
        ),
    })
}

/// The index entries redo puts back: the plan's for its paths, and for snapshot paths
/// between the tip and the plan, the snapshot's where the index entry is still the tip's.
fn redo_index_entries(
    repo: &Repository,
    index: &IndexFile,
    changes: &[PathChange],
    before_tree: Option<&git2::Tree<'_>>,
    tip_tree: Option<&git2::Tree<'_>>,
) -> Result<Vec<(String, Option<Entry>)>, HistoryError> {
    let mut entries: Vec<(String, Option<Entry>)> =
        changes.iter().map(|c| (c.path.clone(), c.after)).collect();
    if let Some(below) = before_tree {
        for c in revert::changed_paths(repo, tip_tree, Some(below))? {
            if index.get(&c.path) == c.before && !entries.iter().any(|(p, _)| *p == c.path) {
                entries.push((c.path, c.after));
            }
        }
    }
    Ok(entries)
}

/// The trash copies a plan commit recorded, by path.
fn recorded_copies(
    repo: &Repository,
    recorded_trash: Option<Oid>,
) -> Result<BTreeMap<String, Vec<u8>>, HistoryError> {
    Ok(match recorded_trash {
        Some(tree) => trash::recorded(repo, tree)?
            .into_iter()
            .map(|(p, b, _)| (p, b))
            .collect(),
        None => BTreeMap::new(),
    })
}

/// What redo would overwrite among the files undo restored from the trash: each file undo
/// replaced must still hold the copy undo wrote there (checked before redo's first write).
/// Only paths the plan saved a copy of count; the rest of the record is never written.
fn drift_in_trash(
    wt: &dyn WorkTree,
    kept: &kept::Kept,
    copies: &BTreeMap<String, Vec<u8>>,
) -> Result<Vec<String>, HistoryError> {
    let mut changed = Vec::new();
    for (path, _, _) in &kept.replaced {
        let Some(copy) = copies.get(path) else {
            continue;
        };
        let now = scope::work_file(wt, path)?.ok().flatten();
        if now.as_ref().map(|f| &f.bytes) != Some(copy) {
            changed.push(format!("{path} (changed since the undo)"));
        }
    }
    Ok(changed)
}

/// [`redo`] and [`Session::redo`], under the work-tree lock: a transaction carried out by
/// the executor, like [`undo_in`].
pub(in crate::history) fn redo_in(
    repo: &Repository,
    root: &Path,
    wt: &dyn WorkTree,
) -> Result<RedoReport, HistoryError> {
    let mut op = Op::intent(repo, root, OpKind::Redo, "", 0)?;
    match build_redo(repo, root, wt, op.record_mut()) {
        Ok((report, index)) => {
            op.commit(repo, wt, Some(index))?;
            kept::forget_records(repo, root, &report.session, report.plan);
            Ok(report)
        }
        Err(e) => op.close(repo, wt, Err(e)),
    }
}

/// The redo as a record, like [`build_undo`]: every check first, then the plan's files
/// again, what undo's trash restore replaced put back, the index entries, the branch
/// forward (created again with HEAD on it when redo re-enters the line) and the undone ref
/// gone. Returns git's index still locked, as it was checked.
fn build_redo(
    repo: &Repository,
    root: &Path,
    wt: &dyn WorkTree,
    record: &mut Record,
) -> Result<(RedoReport, index::LockedIndex), HistoryError> {
    let branch = redo_branch(repo)?;
    let branch_session = names::session_of_branch(&branch.name)
        .unwrap_or_default()
        .to_string();
    let (number, undone_ref, id) = newest_undone(repo, &branch, &branch_session)?;
    record.name(&branch_session, number);
    let commit = read_commit(repo, id)?;
    let short = names::short_id(id);
    record.reflog = format!("pai: redo plan {number} ({short})");
    let (before_tree, changes) = plan_changes(repo, &commit)?;
    let tip_tree = tree_at_tip(repo, branch.tip)?;
    // Held to the end, so the entries checked are the entries rewritten.
    let index = index::lock(repo.path())?;
    if let Some(b) = repo::index_blocker(&index) {
        return Err(b.refusal("redo"));
    }
    // What undo left in the index for the plan's paths (see `before_plan`).
    let (_, index_before) = before_plan(&commit, number)?;
    let mut changed = drift_since_undo(
        repo,
        wt,
        &index,
        &changes,
        tip_tree.as_ref(),
        index_before.as_ref(),
    )?;
    let trailers = verified::trailers(&commit);
    let session = trailers.session.clone().unwrap_or(branch_session);
    let copies = recorded_copies(repo, trailers.trash)?;
    let kept = kept::read(repo, root, &session, number)?;
    changed.extend(drift_in_trash(wt, &kept, &copies)?);
    refuse_redo(&changed, number, &short)?;
    let entries = redo_index_entries(
        repo,
        &index,
        &changes,
        before_tree.as_ref(),
        tip_tree.as_ref(),
    )?;
    let made = Made::of_message(commit.message().unwrap_or_default());
    let plan_id = PlanId {
        session: &session,
        plan: number,
    };
    let rewrites = vouched_rewrites(repo, root, wt, plan_id, &made, &changes)?;
    let mut moved = redo_files(repo, wt, &changes, &rewrites, record)?;
    let restored = Restored {
        kept: &kept,
        copies: &copies,
    };
    let kept_paths = trash_moves(repo, wt, restored, &rewrites, &mut moved, record)?;
    kept::forget(repo, &session, number, record);
    journal_redo(repo, record, &branch, &undone_ref, id)?;
    // Rolled back, removing the plan's files stops at the user's own folders.
    record.kept_dirs = made.kept.into_iter().collect();
    for (path, entry) in &entries {
        record.entry(path, index.get(path), *entry);
    }
    let report = RedoReport {
        session,
        plan: number,
        commit: short,
        request: message::request_of(commit.message().unwrap_or_default()),
        branch: branch.short,
        written: moved.restored,
        removed: moved.removed,
        from_trash: moved.from_trash,
        kept: kept_paths,
        reentered: branch.reenter,
    };
    Ok((report, index))
}

/// What undo kept of the plan's own files for redo (bytes git's checkout would not give,
/// ignored files the plan created), each only where the plan commit vouches for those bytes
/// at that path: path, bytes, permission bits.
fn vouched_rewrites(
    repo: &Repository,
    root: &Path,
    wt: &dyn WorkTree,
    PlanId {
        session,
        plan: number,
    }: PlanId<'_>,
    made: &Made,
    changes: &[PathChange],
) -> Result<Vec<(String, Vec<u8>, u32)>, HistoryError> {
    let mut out = Vec::new();
    for (path, bytes, perm) in kept::read_rewrite(repo, root, session, number)? {
        let vouched =
            made.left_at(&path, &bytes) || convert::left_by_plan(repo, &path, &bytes, changes)?;
        if vouched && !wt.is_denied(&path) {
            out.push((path, bytes, perm));
        }
    }
    Ok(out)
}

/// The plan's files again, into `record`: each path it changed from what undo left to the
/// exact bytes the plan left (kept by undo, for a file git converts) or git's checkout of
/// the plan's blob; each path it removed removed again.
fn redo_files(
    repo: &Repository,
    wt: &dyn WorkTree,
    changes: &[PathChange],
    rewrites: &[(String, Vec<u8>, u32)],
    record: &mut Record,
) -> Result<Moved, HistoryError> {
    let mut moved = Moved::default();
    for c in changes {
        let now = found(wt, &c.path)?;
        let Some(after) = c.after else {
            record.work_file(&c.path, now, None);
            moved.removed.push(c.path.clone());
            continue;
        };
        let copy = rewrites
            .iter()
            .find(|(p, _, _)| *p == c.path)
            .map(|(_, bytes, perm)| (bytes.as_slice(), *perm));
        record.work_file(&c.path, now, Some(produced(repo, &c.path, after, copy)?));
        moved.restored.push(c.path.clone());
    }
    Ok(moved)
}

/// What undo's trash restore did: what it recorded it replaced, and the plan's trash copies
/// it put back, by path.
#[derive(Clone, Copy)]
struct Restored<'a> {
    kept: &'a kept::Kept,
    copies: &'a BTreeMap<String, Vec<u8>>,
}

/// What undo's trash restore did, taken back, into `record`: files it brought back where
/// the plan had removed them go again (unless the user changed them since: those are kept,
/// and returned), the files it replaced are put back, and the ignored files the plan made
/// (among `rewrites`) are written again.
fn trash_moves(
    repo: &Repository,
    wt: &dyn WorkTree,
    Restored { kept, copies }: Restored<'_>,
    rewrites: &[(String, Vec<u8>, u32)],
    moved: &mut Moved,
    record: &mut Record,
) -> Result<Vec<String>, HistoryError> {
    let mut kept_paths = Vec::new();
    let taken = |record: &Record, path: &str| record.files.iter().any(|m| m.path == path);
    for path in &kept.absent {
        if wt.is_denied(path) || taken(record, path) {
            continue;
        }
        let Ok(Some(now)) = scope::work_file(wt, path)? else {
            continue;
        };
        if copies.get(path).is_some_and(|b| *b == now.bytes) {
            record.work_file(path, found(wt, path)?, None);
            moved.removed.push(path.clone());
        } else {
            kept_paths.push(path.clone());
        }
    }
    let replaced = kept
        .replaced
        .iter()
        .filter(|(path, _, _)| copies.contains_key(path));
    for (path, bytes, perm) in replaced.chain(rewrites) {
        if wt.is_denied(path) || taken(record, path) {
            continue;
        }
        let copy = copy_state(repo, path, bytes, *perm)?;
        record.work_file(path, found(wt, path)?, Some(copy));
        moved.from_trash.push(path.clone());
    }
    Ok(kept_paths)
}

/// The refs a redo moves, as the journal records them: the branch forward to the plan
/// (created again, with HEAD on it, when redo re-enters the line), and the undone ref gone.
fn journal_redo(
    repo: &Repository,
    record: &mut Record,
    branch: &SessionBranch,
    undone_ref: &str,
    id: Oid,
) -> Result<(), HistoryError> {
    let old = if branch.reenter { None } else { branch.tip };
    record.move_ref(&branch.name, old, Some(id));
    if branch.reenter {
        let head = names::head(repo).ctx(|| "cannot read HEAD".into())?;
        record.move_head(&head, &Head::Branch(branch.name.clone()));
    }
    record.move_ref(undone_ref, Some(id), None);
    Ok(())
}
