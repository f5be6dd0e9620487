//! Undo's half: check that the newest plan on the session branch can be taken back (pai's,
//! verified, on no other branch, its files as it left them or the user's edits kept), and
//! build the record that moves the branch back over it, writes the files' previous contents,
//! brings the index entries in line and keeps what it replaced for redo.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{Commit, Oid, Repository};

use super::{
    Moved, SessionBranch, UndoReport, before_plan, checked_out_branch, plan_changes, read_commit,
};
use crate::history::error::{Context, HistoryError};
use crate::history::git::names;
use crate::history::git::names::{Head, PlanId};
use crate::history::git::repo;
use crate::history::index::{self, IndexFile};
use crate::history::ops::convert;
use crate::history::ops::scope::{self, Entry, MODE_EXEC};
use crate::history::ops::work_tree::WorkTree;
use crate::history::ops::{Op, OpKind, Record, copy_state, found, produced};
use crate::history::plan::prepare::commit_changes;
use crate::history::record::forged;
use crate::history::record::line;
use crate::history::record::made::Made;
use crate::history::record::message::{self, Kind};
use crate::history::record::revert::{self, PathChange};
use crate::history::record::verified;
use crate::history::record::{holders, kept, trash};
use crate::history::undo::own_snapshots;

/// The plan commit an undo takes off the branch, and the names its messages and refs use.
struct PlanToUndo<'r> {
    commit: Commit<'r>,
    /// Snapshots of the user's changes taken after the plan, newest first.
    above: Vec<Commit<'r>>,
    session: String,
    number: u32,
    /// The plan commit's abbreviated id.
    short: String,
}

/// The newest plan on `branch` (whose tip is `tip`), under any snapshots of the user's
/// changes taken after it. Refuses when that commit is not a pai plan, or when another branch
/// or a remote-tracking ref already holds it: moving this branch back would not take it off
/// there.
fn newest_plan<'r>(
    repo: &'r Repository,
    branch: &SessionBranch,
    tip: Oid,
) -> Result<PlanToUndo<'r>, HistoryError> {
    let short_branch = &branch.short;
    let mut plan_commit = read_commit(repo, tip)?;
    let mut above: Vec<Commit<'_>> = Vec::new();
    while revert::kind(&plan_commit) == Some(Kind::User) {
        let Some(parent) = plan_commit.parents().next() else {
            break;
        };
        above.push(plan_commit);
        plan_commit = parent;
    }
    if revert::kind(&plan_commit) != Some(Kind::Plan) {
        let short = names::short_id(plan_commit.id());
        if let Some(forged) = forged::refusal(&plan_commit, "undo") {
            return Err(forged);
        }
        return Err(HistoryError::Refused {
            message: format!(
                "nothing to undo on {short_branch}: its newest commit {short} \"{}\" is not a pai plan",
                plan_commit.summary().ok().flatten().unwrap_or_default()
            ),
            hint: format!(
                "to revert a commit pai did not make, use `git revert {}`",
                crate::shell::quote(&short)
            ),
        });
    }
    let trailers = verified::trailers(&plan_commit);
    let session = trailers
        .session
        .clone()
        .or_else(|| names::session_of_branch(&branch.name).map(str::to_string))
        .unwrap_or_default();
    let number = trailers.plan.unwrap_or(0);
    let short = names::short_id(plan_commit.id());
    let holders = holders::refs_containing(repo, plan_commit.id(), &branch.name)?;
    if !holders.is_empty() {
        return Err(HistoryError::Refused {
            message: format!(
                "cannot undo plan {number} ({short}): it is already on {}",
                holders.join(", ")
            ),
            hint: format!(
                "moving {short_branch} back would not take it off there; revert it instead with `git revert {}`",
                crate::shell::quote(&short)
            ),
        });
    }
    Ok(PlanToUndo {
        commit: plan_commit,
        above,
        session,
        number,
        short,
    })
}

/// How the plan's paths differ from what the plan wrote: what the refusal names, and the
/// states `--force` saves before overwriting them.
struct Drift {
    /// `path (what changed)`, in the order of the plan's paths.
    changed: Vec<String>,
    /// Index entries that are neither the plan's nor the work tree's.
    staged_now: BTreeMap<String, Option<Entry>>,
    /// Work-tree files that are not what the plan wrote.
    work_now: BTreeMap<String, Option<Entry>>,
}

/// Compare each path the plan changed with what it wrote, in the work tree, then in the
/// index. A changed file's bytes go into the object store here, so that `--force` can commit
/// them before they are overwritten.
fn drift_since_plan(
    repo: &Repository,
    wt: &dyn WorkTree,
    index: &IndexFile,
    changes: &[PathChange],
) -> Result<Drift, HistoryError> {
    let mut changed: Vec<String> = Vec::new();
    let mut staged_now: BTreeMap<String, Option<Entry>> = BTreeMap::new();
    let mut work_now: BTreeMap<String, Option<Entry>> = BTreeMap::new();
    for c in changes {
        let Ok(file) = convert::work_file(repo, wt, &c.path, index.get(&c.path))? else {
            changed.push(format!("{} (no longer a regular file)", c.path));
            continue;
        };
        let now = scope::entry_of(file.as_ref());
        let in_index = index.get(&c.path);
        if now != c.after {
            changed.push(format!(
                "{} ({})",
                c.path,
                revert::describe_difference(c.after, now)
            ));
            if let Some(f) = &file {
                repo.blob(&f.bytes)
                    .ctx(|| format!("cannot save {}", c.path))?;
            }
            work_now.insert(c.path.clone(), now);
        } else if in_index != c.after {
            changed.push(format!("{} (staged changes)", c.path));
        }
        if in_index != c.after && in_index != now {
            staged_now.insert(c.path.clone(), in_index);
        }
    }
    Ok(Drift {
        changed,
        staged_now,
        work_now,
    })
}

/// How an undo goes about what changed since the plan.
#[derive(Clone, Copy)]
struct UndoOptions<'a> {
    /// `--force`: save what changed under `refs/pai/saved/` and undo anyway.
    force: bool,
    /// The committer of that saved state, when git has none configured.
    identity: Option<&'a (String, String)>,
}

/// Refuse to overwrite what changed since the plan, unless `force`: then that state is
/// committed (in the object store) and `record` sets a ref under `refs/pai/saved/` to it,
/// whose name is returned. `None` when nothing changed.
fn refuse_or_save(
    repo: &Repository,
    tip: Oid,
    plan: &PlanToUndo<'_>,
    drift: &Drift,
    UndoOptions { force, identity }: UndoOptions<'_>,
    record: &mut Record,
) -> Result<Option<String>, HistoryError> {
    let changed = &drift.changed;
    if changed.is_empty() {
        return Ok(None);
    }
    if !force {
        let (number, short) = (plan.number, &plan.short);
        return Err(HistoryError::Refused {
            message: format!(
                "cannot undo plan {number} ({short}): {} changed since the plan wrote {}: {}",
                if changed.len() == 1 { "this file" } else { "these files" },
                if changed.len() == 1 { "it" } else { "them" },
                changed.join(", ")
            ),
            hint: "undo would overwrite those changes; commit or move them away first, or run `pai undo --force` to save the current state under refs/pai/saved/ and undo anyway".into(),
        });
    }
    let id = PlanId {
        session: &plan.session,
        plan: plan.number,
    };
    let (name, top) = save_state(repo, tip, id, drift, identity)?;
    record.move_ref(&name, None, Some(top));
    Ok(Some(name))
}

/// The index entries undo gives back. The plan's paths get what the index held before the
/// plan (`index_before`: the tree below the snapshots pai took of the user's changes for it,
/// or the staged snapshot's), so the user's unstaged edits and untracked files return
/// unstaged and untracked. Snapshot paths above the plan get the entry below the plan
/// (`before_tree`), going back to being the uncommitted changes they were, unless the user
/// staged them since.
fn undo_index_entries(
    repo: &Repository,
    plan: &PlanToUndo<'_>,
    index: &IndexFile,
    changes: &[PathChange],
    index_before: Option<&git2::Tree<'_>>,
    before_tree: Option<&git2::Tree<'_>>,
) -> Result<Vec<(String, Option<Entry>)>, HistoryError> {
    let mut entries: Vec<(String, Option<Entry>)> = changes
        .iter()
        .map(|c| {
            let entry = scope::tree_file(index_before, &c.path).ok().flatten();
            (c.path.clone(), entry)
        })
        .collect();
    for snap in &plan.above {
        let snap_tree = snap.tree().ctx(|| "cannot read a snapshot".into())?;
        let below = revert::parent_tree(snap)?;
        for c in revert::changed_paths(repo, below.as_ref(), Some(&snap_tree))? {
            if entries.iter().any(|(p, _)| *p == c.path) {
                continue;
            }
            if index.get(&c.path) == c.after {
                let base = scope::tree_file(before_tree, &c.path).ok().flatten();
                entries.push((c.path, base));
            }
        }
    }
    Ok(entries)
}

/// [`undo`] and [`Session::undo`], under the work-tree lock: a transaction (`history/ops`),
/// its intent recorded before [`build_undo`] takes the index lock. The undo only builds its
/// record; the executor carries it out (`Op::commit`), rolls it back on a failure, and the
/// next pai command finishes it after a crash, by the same call.
pub(crate) fn undo_in(
    repo: &Repository,
    root: &Path,
    wt: &dyn WorkTree,
    force: bool,
    identity: Option<&(String, String)>,
) -> Result<UndoReport, HistoryError> {
    let mut op = Op::intent(repo, root, OpKind::Undo, "", 0)?;
    match build_undo(
        repo,
        root,
        wt,
        UndoOptions { force, identity },
        op.record_mut(),
    ) {
        Ok((report, index)) => {
            op.commit(repo, wt, Some(index))?;
            Ok(report)
        }
        Err(e) => op.close(repo, wt, Err(e)),
    }
}

/// The undo as a record: every check first, then each move it makes — the undone ref, each
/// file the plan changed or made and each trash copy back (with how its bytes are produced
/// and its permission bits), the index entries, the branch (and HEAD, when the line ends) —
/// with what the report says of them. Returns git's index still locked, as it was checked.
fn build_undo(
    repo: &Repository,
    root: &Path,
    wt: &dyn WorkTree,
    opts: UndoOptions<'_>,
    record: &mut Record,
) -> Result<(UndoReport, index::LockedIndex), HistoryError> {
    let branch = checked_out_branch(repo, "undo")?;
    let tip = branch.tip.ok_or_else(|| HistoryError::Refused {
        message: format!("nothing to undo: {} has no commits yet", branch.short),
        hint: "pai undo reverts plans pai committed on the session branch".into(),
    })?;
    let plan = newest_plan(repo, &branch, tip)?;
    record.name(&plan.session, plan.number);
    record.reflog = format!("pai: undo plan {} ({})", plan.number, plan.short);
    let (before_tree, changes) = plan_changes(repo, &plan.commit)?;

    // Everything the plan wrote must still be exactly as it wrote it.
    // Held to the end, so the entries checked are the entries rewritten.
    let index = index::lock(repo.path())?;
    if let Some(b) = repo::index_blocker(&index) {
        return Err(b.refusal("undo"));
    }
    let mut drift = drift_since_plan(repo, wt, &index, &changes)?;
    let made = Made::of_message(plan.commit.message().unwrap_or_default());
    drift.changed.extend(made.drift(wt)?);
    let saved = refuse_or_save(repo, tip, &plan, &drift, opts, record)?;
    // What redo writes back after the plan's blobs, kept before the first write.
    let mut rewrite = convert::keep_for_redo(repo, wt, &changes, &index)?;
    rewrite.extend(made.kept_for_redo(repo, wt)?);
    let id = PlanId {
        session: &plan.session,
        plan: plan.number,
    };
    kept::save_rewrite(repo, root, id, &rewrite, record)?;

    let (base_commit, index_before) = before_plan(&plan.commit, plan.number)?;
    let mut entries = undo_index_entries(
        repo,
        &plan,
        &index,
        &changes,
        index_before.as_ref(),
        before_tree.as_ref(),
    )?;
    // Snapshotted for the plan, left alone by it (a failed step): unstaged again.
    for (path, entry) in own_snapshots::index_entries(
        repo,
        &index,
        base_commit.as_ref(),
        before_tree.as_ref(),
        index_before.as_ref(),
        &changes,
    )? {
        if !entries.iter().any(|(p, _)| *p == path) {
            entries.push((path, entry));
        }
    }
    for (path, entry) in &entries {
        record.entry(path, index.get(path), *entry);
    }
    // Removing the plan's files stops at the user's own folders, finished after a crash too.
    record.kept_dirs = made.kept.iter().cloned().collect();
    let (undone_ref, head_back) = journal_refs(repo, record, &branch, base_commit.as_ref(), &plan)?;
    let recorded_trash = verified::trailers(&plan.commit).trash;
    // Every trash copy checked (and what undo replaces kept) before the first write.
    let take = TakeBack {
        plan: &plan,
        force: opts.force,
        changes: &changes,
        made: &made,
        recorded_trash,
    };
    let trash_writes = prepare_trash(repo, root, wt, &take, record)?;
    let moved = undo_files(repo, wt, &take, trash_writes, record)?;

    let report = UndoReport {
        request: message::request_of(plan.commit.message().unwrap_or_default()),
        session: plan.session,
        plan: plan.number,
        commit: plan.short,
        branch: branch.short,
        restored: moved.restored,
        removed: moved.removed,
        from_trash: moved.from_trash,
        saved,
        undone_ref,
        head_back,
    };
    Ok((report, index))
}

/// What undo takes back, as its two file stages ([`prepare_trash`], [`undo_files`]) read it.
#[derive(Clone, Copy)]
struct TakeBack<'a> {
    /// The plan undone.
    plan: &'a PlanToUndo<'a>,
    /// `--force`: what the user changed since goes too.
    force: bool,
    /// Each path the plan changed.
    changes: &'a [PathChange],
    /// What the plan made beyond its tree.
    made: &'a Made,
    /// The plan's trash copies in the object store (`Pai-Trash`).
    recorded_trash: Option<Oid>,
}

/// The files an undo moves, into `record`: each path the plan changed back to what stood
/// before it (the plan's trash copy of the user's exact bytes, with its permission bits, when
/// the plan kept one git stores as that blob: a file git converts, a private file; else git's
/// checkout of the blob), each file it created removed, each ignored file it made and still
/// holding what it left removed, and the trash copies [`prepare_trash`] chose written back.
fn undo_files(
    repo: &Repository,
    wt: &dyn WorkTree,
    take: &TakeBack<'_>,
    trash_writes: Vec<(String, Vec<u8>, u32)>,
    record: &mut Record,
) -> Result<Moved, HistoryError> {
    let TakeBack {
        changes,
        made,
        recorded_trash,
        ..
    } = *take;
    let copies = match recorded_trash {
        Some(tree) => trash::recorded(repo, tree)?,
        None => Vec::new(),
    };
    let mut moved = Moved::default();
    for c in changes {
        let now = found(wt, &c.path)?;
        let Some((id, mode)) = c.before else {
            record.work_file(&c.path, now, None);
            moved.removed.push(c.path.clone());
            continue;
        };
        let copy = copies.iter().find(|(p, _, _)| *p == c.path);
        let gives_back = match copy {
            Some((_, bytes, _)) => {
                Oid::hash_object(git2::ObjectType::Blob, bytes).ok() == Some(id)
                    || convert::replaced_bytes(repo, &copies, &c.path, id)?.is_some()
            }
            None => false,
        };
        let copy = copy
            .filter(|_| gives_back)
            .map(|(_, bytes, perm)| (bytes.as_slice(), *perm));
        let to = produced(repo, &c.path, (id, mode), copy)?;
        record.work_file(&c.path, now, Some(to));
        moved.restored.push(c.path.clone());
    }
    for path in made.still_left(wt)? {
        record.work_file(&path, found(wt, &path)?, None);
        moved.removed.push(path);
    }
    for (path, bytes, perm) in trash_writes {
        let copy = copy_state(repo, &path, &bytes, perm)?;
        record.work_file(&path, found(wt, &path)?, Some(copy));
        moved.from_trash.push(path);
    }
    Ok(moved)
}

/// The refs an undo moves, as the journal records them: the undone ref set to the plan, and
/// the branch back to `base` (or gone, with HEAD back where the line started). The undone
/// ref's name, and where HEAD goes as the report names it.
fn journal_refs(
    repo: &Repository,
    record: &mut Record,
    branch: &SessionBranch,
    base: Option<&Commit<'_>>,
    plan: &PlanToUndo<'_>,
) -> Result<(String, Option<String>), HistoryError> {
    let undone = names::undone_ref(&plan.session, plan.number);
    let kept = names::target(repo, &undone).ctx(|| format!("cannot read {undone}"))?;
    record.move_ref(&undone, kept, Some(plan.commit.id()));
    let base = base.map(Commit::id);
    let head_back = match line::leaves_to(repo, &branch.name, base)? {
        Some(back) => {
            record.move_head(&Head::Branch(branch.name.clone()), &back);
            record.move_ref(&branch.name, branch.tip, None);
            Some(match back {
                Head::Branch(b) => names::short(&b).to_string(),
                Head::Detached(base) => format!("detached HEAD at {}", names::short_id(base)),
            })
        }
        None => {
            record.move_ref(&branch.name, branch.tip, base);
            None
        }
    };
    Ok((undone, head_back))
}

/// Commit the state `--force` is about to overwrite (staged content first, then the work
/// tree) on top of `tip`: the commit, and the free name `refs/pai/saved/<session>/<plan>[-n]`
/// the undo's record keeps it at.
fn save_state(
    repo: &Repository,
    tip: Oid,
    PlanId { session, plan }: PlanId<'_>,
    drift: &Drift,
    identity: Option<&(String, String)>,
) -> Result<(String, Oid), HistoryError> {
    let sigs = repo::signatures(repo, identity)?;
    let mut top = tip;
    for changes in [&drift.staged_now, &drift.work_now] {
        if changes.is_empty() {
            continue;
        }
        let files: Vec<String> = changes.keys().cloned().collect();
        let msg = message::saved_message(session, plan, &files);
        top = commit_changes(repo, Some(top), changes, &msg, &sigs)?;
    }
    let mut n = 1;
    let name = loop {
        let name = names::saved_ref(session, plan, n);
        if repo.find_reference(&name).is_err() {
            break name;
        }
        n += 1;
    };
    Ok((name, top))
}

/// The trash copies undo puts back (ignored or LFS files the plan overwrote or removed, which
/// git cannot restore): path, bytes, permission bits. Only copies the plan commit recorded in
/// the object store (`Pai-Trash`, authenticated with the commit) at paths the plan saved, never
/// a file of the trash folder, where anything may have been planted. What each copy replaces
/// goes into the object store and is recorded for redo (see `kept`) here, before the first
/// write.
fn prepare_trash(
    repo: &Repository,
    root: &Path,
    wt: &dyn WorkTree,
    take: &TakeBack<'_>,
    record: &mut Record,
) -> Result<Vec<(String, Vec<u8>, u32)>, HistoryError> {
    let TakeBack {
        plan,
        force,
        changes,
        recorded_trash: recorded,
        ..
    } = *take;
    let Some(tree) = recorded else {
        return Ok(Vec::new());
    };
    let left = crate::history::record::left::read(repo, tree);
    let mut drifted: Vec<String> = Vec::new();
    let mut writes = Vec::new();
    let mut replaced: BTreeMap<String, (Oid, u32)> = BTreeMap::new();
    let mut absent: Vec<String> = Vec::new();
    for (path, bytes, perm) in trash::recorded(repo, tree)? {
        if changes.iter().any(|c| c.path == path) || wt.is_denied(&path) {
            continue;
        }
        let Ok(current) = scope::work_file(wt, &path)? else {
            continue;
        };
        let current_perm = wt.permissions(&path);
        if current
            .as_ref()
            .is_some_and(|f| f.bytes == bytes && current_perm.unwrap_or(perm) == perm)
        {
            continue;
        }
        if left
            .get(&path)
            .is_some_and(|l| *l != current.as_ref().map(|f| f.id))
        {
            drifted.push(path.clone());
        }
        match &current {
            Some(f) => {
                let kept = current_perm.unwrap_or(if f.mode == MODE_EXEC { 0o755 } else { 0o644 });
                let id = repo
                    .blob(&f.bytes)
                    .ctx(|| format!("cannot keep {path} for redo"))?;
                replaced.insert(path.clone(), (id, kept));
            }
            None => absent.push(path.clone()),
        }
        writes.push((path, bytes, perm));
    }
    if !drifted.is_empty() && !force {
        return Err(HistoryError::Refused {
            message: format!(
                "cannot undo plan {} ({}): changed since the plan left {}: {}",
                plan.number,
                plan.short,
                if drifted.len() == 1 { "it" } else { "them" },
                drifted.join(", ")
            ),
            hint: "undo would overwrite those changes; move them away first, or run `pai undo --force` (what stands there now is kept, and `pai redo` puts it back)".into(),
        });
    }
    let id = PlanId {
        session: &plan.session,
        plan: plan.number,
    };
    let what = kept::Replaced {
        files: &replaced,
        absent: &absent,
    };
    kept::save(repo, root, id, what, record)?;
    Ok(writes)
}
