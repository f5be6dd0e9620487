//! `pai undo` and `pai redo`: move the session branch back over its newest plan commit (the
//! previous contents written back through the workspace) or forward again. Both only check
//! and build the operation's record; the executor (`ops`) makes every move. Everything is derived
//! from git — the checked-out `pai/*` branch, the `Pai-*` trailers and
//! `refs/pai/undone/<session>/<n>` — so both work long after the session ended. Nothing here
//! runs clean, reset or a whole-tree checkout: only the plan's own paths are written.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{Commit, Oid, Repository};
use serde::Serialize;

use super::error::{Context, HistoryError};
use super::index::{self, IndexFile};
use super::made::Made;
use super::message::{self, Kind};
use super::ops::{Op, OpKind, Record, copy_state, found, produced};
use super::revert::{self, PathChange};
use super::scope::{self, Entry, MODE_EXEC};
use super::session::Session;
use super::snapshot::commit_changes;
use super::worktree::WorkTree;
use super::{convert, line, own_snapshots, trash};
use crate::history::git::lock::WorkTreeLock;
use crate::history::git::meta;
use crate::history::git::names;
use crate::history::git::names::Head;
use crate::history::git::repo;

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

impl Session {
    /// `/undo` inside a session: [`undo`] with this session's lock and identity.
    pub fn undo(&mut self, wt: &dyn WorkTree, force: bool) -> Result<UndoReport, HistoryError> {
        let root = self.root.clone();
        let w = self.writer()?;
        let report = undo_in(&w.repo, &root, wt, force, w.identity.as_ref());
        self.follow_head();
        report
    }

    /// `/redo` inside a session: [`redo`] with this session's lock.
    pub fn redo(&mut self, wt: &dyn WorkTree) -> Result<RedoReport, HistoryError> {
        let root = self.root.clone();
        let w = self.writer()?;
        let report = redo_in(&w.repo, &root, wt);
        self.follow_head();
        report
    }
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
        let t = crate::history::git::auth::trailers(&c);
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
        if let Some(forged) = crate::history::git::forged::refusal(&plan_commit, "undo") {
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
    let trailers = crate::history::git::auth::trailers(&plan_commit);
    let session = trailers
        .session
        .clone()
        .or_else(|| names::session_of_branch(&branch.name).map(str::to_string))
        .unwrap_or_default();
    let number = trailers.plan.unwrap_or(0);
    let short = names::short_id(plan_commit.id());
    let holders = revert::refs_containing(repo, plan_commit.id(), &branch.name)?;
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

/// Refuse to overwrite what changed since the plan, unless `force`: then that state is
/// committed (in the object store) and `record` sets a ref under `refs/pai/saved/` to it,
/// whose name is returned. `None` when nothing changed.
fn refuse_or_save(
    repo: &Repository,
    tip: Oid,
    plan: &PlanToUndo<'_>,
    drift: &Drift,
    (force, identity): (bool, Option<&(String, String)>),
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
    let (name, top) = save_state(repo, tip, (&plan.session, plan.number), drift, identity)?;
    record.reference(&name, None, Some(top));
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
    match build_undo(repo, root, wt, (force, identity), op.record_mut()) {
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
    (force, identity): (bool, Option<&(String, String)>),
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
    let saved = refuse_or_save(repo, tip, &plan, &drift, (force, identity), record)?;
    // What redo writes back after the plan's blobs, kept before the first write.
    let mut rewrite = convert::keep_for_redo(repo, wt, &changes, &index)?;
    rewrite.extend(made.kept_for_redo(repo, wt)?);
    super::kept::save_rewrite(repo, root, (&plan.session, plan.number), &rewrite, record)?;

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
    let recorded_trash = crate::history::git::auth::trailers(&plan.commit).trash;
    // Every trash copy checked (and what undo replaces kept) before the first write.
    let trash_writes = prepare_trash(
        repo,
        root,
        wt,
        (&plan, force),
        &changes,
        recorded_trash,
        record,
    )?;
    let moved = undo_files(
        repo,
        wt,
        (&changes, &made),
        recorded_trash,
        trash_writes,
        record,
    )?;

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

/// The paths an undo's or redo's record moves, as its report names them.
#[derive(Default)]
struct Moved {
    restored: Vec<String>,
    removed: Vec<String>,
    from_trash: Vec<String>,
}

/// The files an undo moves, into `record`: each path the plan changed back to what stood
/// before it (the plan's trash copy of the user's exact bytes, with its permission bits, when
/// the plan kept one git stores as that blob: a file git converts, a private file; else git's
/// checkout of the blob), each file it created removed, each ignored file it made and still
/// holding what it left removed, and the trash copies [`prepare_trash`] chose written back.
fn undo_files(
    repo: &Repository,
    wt: &dyn WorkTree,
    (changes, made): (&[PathChange], &Made),
    recorded_trash: Option<Oid>,
    trash_writes: Vec<(String, Vec<u8>, u32)>,
    record: &mut Record,
) -> Result<Moved, HistoryError> {
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
    record.reference(&undone, kept, Some(plan.commit.id()));
    let base = base.map(Commit::id);
    let head_back = match line::leaves_to(repo, &branch.name, base)? {
        Some(back) => {
            record.move_head(&Head::Branch(branch.name.clone()), &back);
            record.reference(&branch.name, branch.tip, None);
            Some(match back {
                Head::Branch(b) => names::short(&b).to_string(),
                Head::Detached(base) => format!("detached HEAD at {}", names::short_id(base)),
            })
        }
        None => {
            record.reference(&branch.name, branch.tip, base);
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
    (session, plan): (&str, u32),
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
    (plan, force): (&PlanToUndo<'_>, bool),
    changes: &[PathChange],
    recorded: Option<git2::Oid>,
    record: &mut Record,
) -> Result<Vec<(String, Vec<u8>, u32)>, HistoryError> {
    let Some(tree) = recorded else {
        return Ok(Vec::new());
    };
    let left = super::left::read(repo, tree);
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
    super::kept::save(
        repo,
        root,
        (&plan.session, plan.number),
        (&replaced, &absent),
        record,
    )?;
    Ok(writes)
}

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
        .references_glob("refs/pai/undone/*")
        .ctx(|| "cannot list undone plans".into())?;
    for r in refs.flatten() {
        let (Ok(name), Some(id)) = (r.name().map(str::to_string), r.target()) else {
            continue;
        };
        let Some(session) = name
            .strip_prefix("refs/pai/undone/")
            .and_then(|rest| rest.split('/').next())
            .filter(|s| names::is_id(s))
        else {
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
        let Some(number) = crate::history::git::forged::undone_plan(&commit, &name) else {
            if let Some(why) = crate::history::git::forged::why_unverified(&commit).filter(|_| own)
            {
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
    kept: &super::kept::Kept,
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
fn redo_in(repo: &Repository, root: &Path, wt: &dyn WorkTree) -> Result<RedoReport, HistoryError> {
    let mut op = Op::intent(repo, root, OpKind::Redo, "", 0)?;
    match build_redo(repo, root, wt, op.record_mut()) {
        Ok((report, index)) => {
            op.commit(repo, wt, Some(index))?;
            super::kept::forget_records(repo, root, &report.session, report.plan);
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
    let trailers = crate::history::git::auth::trailers(&commit);
    let session = trailers.session.clone().unwrap_or(branch_session);
    let copies = recorded_copies(repo, trailers.trash)?;
    let kept = super::kept::read(repo, root, &session, number)?;
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
    let rewrites = vouched_rewrites(repo, root, wt, (&session, number), &made, &changes)?;
    let mut moved = redo_files(repo, wt, &changes, &rewrites, record)?;
    let kept_paths = trash_moves(repo, wt, (&kept, &copies), &rewrites, &mut moved, record)?;
    super::kept::forget(repo, &session, number, record);
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
    (session, number): (&str, u32),
    made: &Made,
    changes: &[PathChange],
) -> Result<Vec<(String, Vec<u8>, u32)>, HistoryError> {
    let mut out = Vec::new();
    for (path, bytes, perm) in super::kept::read_rewrite(repo, root, session, number)? {
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

/// What undo's trash restore did, taken back, into `record`: files it brought back where
/// the plan had removed them go again (unless the user changed them since: those are kept,
/// and returned), the files it replaced are put back, and the ignored files the plan made
/// (among `rewrites`) are written again.
fn trash_moves(
    repo: &Repository,
    wt: &dyn WorkTree,
    (kept, copies): (&super::kept::Kept, &BTreeMap<String, Vec<u8>>),
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
    record.reference(&branch.name, old, Some(id));
    if branch.reenter {
        let head = names::head(repo).ctx(|| "cannot read HEAD".into())?;
        record.move_head(&head, &Head::Branch(branch.name.clone()));
    }
    record.reference(undone_ref, Some(id), None);
    Ok(())
}

/// Whether `commit`'s first parent is `tip`, possibly through snapshots of the user's changes.
fn lands_on(commit: &Commit<'_>, tip: Option<Oid>) -> bool {
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
