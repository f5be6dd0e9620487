//! `pai undo` and `pai redo`: move the session branch back over its newest plan commit (writing
//! the previous contents back through the workspace) or forward again. Everything is derived
//! from git — the checked-out `pai/*` branch, the `Pai-*` trailers and
//! `refs/pai/undone/<session>/<n>` — so both work long after the session ended. Nothing here
//! runs clean, reset or a whole-tree checkout: only the plan's own paths are written.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{Commit, Oid, Repository};
use serde::Serialize;

use super::error::{Context, HistoryError};
use super::lock::WorkTreeLock;
use super::message::{self, Kind};
use super::revert::{self, PathChange};
use super::scope::{self, Entry, MODE_EXEC};
use super::session::Session;
use super::snapshot::commit_changes;
use super::worktree::WorkTree;
use super::{index_file, names, repo, trash};

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
        undo_in(&w.repo, &root, wt, force, w.identity.as_ref())
    }

    /// `/redo` inside a session: [`redo`] with this session's lock.
    pub fn redo(&mut self, wt: &dyn WorkTree) -> Result<RedoReport, HistoryError> {
        let root = self.root.clone();
        let w = self.writer()?;
        redo_in(&w.repo, &root, wt)
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
        let t = message::parse(msg);
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

pub(crate) fn undo_in(
    repo: &Repository,
    root: &Path,
    wt: &dyn WorkTree,
    force: bool,
    identity: Option<&(String, String)>,
) -> Result<UndoReport, HistoryError> {
    if let Some(b) = repo::state_blocker(repo) {
        return Err(b.refusal("undo"));
    }
    let branch = revert::session_branch(repo, "undo")?;
    let short_branch = names::short(&branch).to_string();
    let tip = names::target(repo, &branch)
        .ctx(|| format!("cannot read {short_branch}"))?
        .ok_or_else(|| HistoryError::Refused {
            message: format!("nothing to undo: {short_branch} has no commits yet"),
            hint: "pai undo reverts plans pai committed on the session branch".into(),
        })?;
    // The newest plan, under any snapshots of the user's changes taken after it.
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
        return Err(HistoryError::Refused {
            message: format!(
                "nothing to undo on {short_branch}: its newest commit {short} \"{}\" is not a pai plan",
                plan_commit.summary().ok().flatten().unwrap_or_default()
            ),
            hint: format!("to revert a commit pai did not make, use `git revert {short}`"),
        });
    }
    let trailers = message::parse(plan_commit.message().unwrap_or_default());
    let session = trailers
        .session
        .clone()
        .or_else(|| names::session_of_branch(&branch).map(str::to_string))
        .unwrap_or_default();
    let number = trailers.plan.unwrap_or(0);
    let short = names::short_id(plan_commit.id());
    let holders = revert::refs_containing(repo, plan_commit.id(), &branch)?;
    if !holders.is_empty() {
        return Err(HistoryError::Refused {
            message: format!(
                "cannot undo plan {number} ({short}): it is already on {}",
                holders.join(", ")
            ),
            hint: format!(
                "moving {short_branch} back would not take it off there; revert it instead with `git revert {short}`"
            ),
        });
    }
    let plan_tree = plan_commit
        .tree()
        .ctx(|| "cannot read the plan's tree".into())?;
    let before_tree = revert::parent_tree(&plan_commit)?;
    let changes = revert::changed_paths(repo, before_tree.as_ref(), Some(&plan_tree))?;

    // Everything the plan wrote must still be exactly as it wrote it.
    // Held to the end, so the entries checked are the entries rewritten.
    let index = index_file::lock(repo.path())?;
    if let Some(b) = repo::index_blocker(&index) {
        return Err(b.refusal("undo"));
    }
    let mut changed: Vec<String> = Vec::new();
    let mut staged_now: BTreeMap<String, Option<Entry>> = BTreeMap::new();
    let mut work_now: BTreeMap<String, Option<Entry>> = BTreeMap::new();
    for c in &changes {
        let Ok(file) = scope::work_file(wt, &c.path)? else {
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
    let mut saved = None;
    if !changed.is_empty() {
        if !force {
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
        saved = Some(save_state(
            repo,
            tip,
            &session,
            number,
            &staged_now,
            &work_now,
            identity,
        )?);
    }

    // The index gets back what it held before the plan for the plan's paths (the tree below
    // the snapshots pai took of the user's changes for it, or the staged snapshot's): the
    // user's unstaged edits and untracked files return unstaged and untracked. Snapshot paths
    // above the plan go back to being the uncommitted changes they were, unless the user
    // staged them since.
    let (base_commit, index_before) = before_plan(&plan_commit, number)?;
    let mut entries: Vec<(String, Option<Entry>)> = changes
        .iter()
        .map(|c| {
            let entry = scope::tree_file(index_before.as_ref(), &c.path)
                .ok()
                .flatten();
            (c.path.clone(), entry)
        })
        .collect();
    for snap in &above {
        let snap_tree = snap.tree().ctx(|| "cannot read a snapshot".into())?;
        let below = revert::parent_tree(snap)?;
        for c in revert::changed_paths(repo, below.as_ref(), Some(&snap_tree))? {
            if entries.iter().any(|(p, _)| *p == c.path) {
                continue;
            }
            if index.get(&c.path) == c.after {
                let base = scope::tree_file(before_tree.as_ref(), &c.path)
                    .ok()
                    .flatten();
                entries.push((c.path, base));
            }
        }
    }
    // Prepared (holding index.lock) before any file is written; put in place once the
    // branch has moved.
    let new_index = index.stage(&entries.into_iter().collect())?;

    let undone_ref = names::undone_ref(&session, number);
    repo.reference(
        &undone_ref,
        plan_commit.id(),
        true,
        &format!("pai: undo plan {number}"),
    )
    .ctx(|| format!("cannot keep the undone plan at {undone_ref}"))?;

    // Removals first: a directory the plan created may stand where a file comes back.
    let mut removed = Vec::new();
    for c in changes.iter().filter(|c| c.before.is_none()) {
        remove_file(wt, &c.path)?;
        removed.push(c.path.clone());
    }
    let recorded_trash = message::parse(plan_commit.message().unwrap_or_default()).trash;
    // An untracked file's permission bits are not in git: the trash copy pai recorded for it
    // has them (a private 0600 file comes back private).
    let recorded_perms: BTreeMap<String, (Oid, u32)> = match recorded_trash {
        Some(tree) => trash::recorded(repo, tree)?
            .into_iter()
            .filter_map(|(path, bytes, perm)| {
                Oid::hash_object(git2::ObjectType::Blob, &bytes)
                    .ok()
                    .map(|id| (path, (id, perm)))
            })
            .collect(),
        None => BTreeMap::new(),
    };
    let mut restored = Vec::new();
    for c in &changes {
        if let Some((id, mode)) = c.before {
            match recorded_perms.get(&c.path) {
                Some((copy, perm)) if *copy == id => {
                    let blob = repo
                        .find_blob(id)
                        .ctx(|| format!("cannot read {} from git", c.path))?;
                    wt.write_with_mode(&c.path, blob.content(), *perm)
                        .map_err(|source| HistoryError::WorkTree {
                            action: "write",
                            path: c.path.clone(),
                            source,
                        })?;
                }
                _ => write_blob(repo, wt, &c.path, id, mode)?,
            }
            restored.push(c.path.clone());
        }
    }
    let from_trash = restore_trash(repo, root, wt, &session, number, &changes, recorded_trash)?;

    let reflog = format!("pai: undo plan {number} ({short})");
    // Below the plan's own snapshots too: they were taken for the plan, and the work tree and
    // index hold the user's changes again (the undone ref keeps them reachable).
    match &base_commit {
        Some(base) => repo
            .reference_matching(&branch, base.id(), true, tip, &reflog)
            .map(|_| ()),
        None => repo.find_reference(&branch).and_then(|mut r| r.delete()),
    }
    .ctx(|| format!("cannot move {short_branch} back"))?;
    if let Some(index) = new_index {
        index.commit()?;
    }

    Ok(UndoReport {
        session,
        plan: number,
        commit: short,
        request: message::request_of(plan_commit.message().unwrap_or_default()),
        branch: short_branch,
        restored,
        removed,
        from_trash,
        saved,
        undone_ref,
    })
}

/// Commit the state `--force` is about to overwrite (staged content first, then the work
/// tree) on top of `tip`, kept at `refs/pai/saved/<session>/<plan>[-n]`.
fn save_state(
    repo: &Repository,
    tip: Oid,
    session: &str,
    plan: u32,
    staged: &BTreeMap<String, Option<Entry>>,
    work: &BTreeMap<String, Option<Entry>>,
    identity: Option<&(String, String)>,
) -> Result<String, HistoryError> {
    let sigs = repo::signatures(repo, identity)?;
    let mut top = tip;
    for changes in [staged, work] {
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
    repo.reference(
        &name,
        top,
        false,
        &format!("pai: saved before undoing plan {plan}"),
    )
    .ctx(|| format!("cannot save the current state at {name}"))?;
    Ok(name)
}

fn write_blob(
    repo: &Repository,
    wt: &dyn WorkTree,
    path: &str,
    id: Oid,
    mode: i32,
) -> Result<(), HistoryError> {
    let blob = repo
        .find_blob(id)
        .ctx(|| format!("cannot read {path} from git"))?;
    wt.write(path, blob.content(), mode == MODE_EXEC)
        .map_err(|source| HistoryError::WorkTree {
            action: "write",
            path: path.to_string(),
            source,
        })
}

fn remove_file(wt: &dyn WorkTree, path: &str) -> Result<(), HistoryError> {
    wt.remove(path).map_err(|source| HistoryError::WorkTree {
        action: "remove",
        path: path.to_string(),
        source,
    })
}

/// Put back trash copies git could not restore (ignored or LFS files the plan overwrote),
/// keeping what they replace so redo can put that back in turn. A plan commit that recorded
/// its copies (`Pai-Trash`) is restored from the object store, never from the trash folder, so
/// a copy changed or swapped there since cannot be brought into the project; older commits
/// fall back to the folder (read without following links).
fn restore_trash(
    repo: &Repository,
    root: &Path,
    wt: &dyn WorkTree,
    session: &str,
    plan: u32,
    changes: &[PathChange],
    recorded: Option<git2::Oid>,
) -> Result<Vec<String>, HistoryError> {
    let mut out = Vec::new();
    let mut absent: Vec<(String, Vec<u8>)> = Vec::new();
    let keep = trash::undone_dir(root, session, plan);
    let copies = match recorded {
        Some(tree) => trash::recorded(repo, tree)?,
        None => trash::list(root, &trash::plan_dir(root, session, plan))?,
    };
    for (path, bytes, perm) in copies {
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
        match &current {
            Some(f) => {
                let kept = current_perm.unwrap_or(if f.mode == MODE_EXEC { 0o755 } else { 0o644 });
                trash::save(root, &keep, &path, &f.bytes, kept)?;
            }
            None => absent.push((path.clone(), bytes.clone())),
        }
        wt.write_with_mode(&path, &bytes, perm)
            .map_err(|source| HistoryError::WorkTree {
                action: "write",
                path: path.clone(),
                source,
            })?;
        out.push(path);
    }
    let paths: Vec<String> = absent.into_iter().map(|(p, _)| p).collect();
    trash::save_absent(root, session, plan, &paths)?;
    Ok(out)
}

fn redo_in(repo: &Repository, root: &Path, wt: &dyn WorkTree) -> Result<RedoReport, HistoryError> {
    if let Some(b) = repo::state_blocker(repo) {
        return Err(b.refusal("redo"));
    }
    let branch = revert::session_branch(repo, "redo")?;
    let short_branch = names::short(&branch).to_string();
    let branch_session = names::session_of_branch(&branch)
        .unwrap_or_default()
        .to_string();
    let tip = names::target(repo, &branch).ctx(|| format!("cannot read {short_branch}"))?;

    // Undone plans of this session, and whether each one sits on the current tip (directly
    // or through snapshots of the user's changes).
    let mut fitting: Vec<(u32, String, Oid)> = Vec::new();
    let mut stale: Vec<String> = Vec::new();
    let refs = repo
        .references_glob("refs/pai/undone/*")
        .ctx(|| "cannot list undone plans".into())?;
    for r in refs.flatten() {
        let (Ok(name), Some(id)) = (r.name().map(str::to_string), r.target()) else {
            continue;
        };
        // This session's undone plans, and those of sessions whose branch is gone (undone
        // here because this branch was started from theirs).
        let Some(session) = name
            .strip_prefix("refs/pai/undone/")
            .and_then(|rest| rest.split('/').next())
        else {
            continue;
        };
        let own = session == branch_session;
        if !own && repo.find_reference(&names::branch_ref(session)).is_ok() {
            continue;
        }
        let commit = read_commit(repo, id)?;
        let number = message::parse(commit.message().unwrap_or_default())
            .plan
            .unwrap_or(0);
        if lands_on(&commit, tip) {
            fitting.push((number, name, id));
        } else if own {
            stale.push(format!(
                "plan {number} ({}): `git cherry-pick {}`",
                names::short_id(id),
                names::short_id(id)
            ));
        }
    }
    fitting.sort();
    let Some((number, undone_ref, id)) = fitting.pop() else {
        return Err(HistoryError::Refused {
            message: format!("nothing to redo on {short_branch}"),
            hint: if stale.is_empty() {
                "pai redo re-applies a plan taken off the session branch by pai undo".into()
            } else {
                format!(
                    "the branch has moved on since these plans were undone; re-apply one with git: {}",
                    stale.join("; ")
                )
            },
        });
    };
    let commit = read_commit(repo, id)?;
    let short = names::short_id(id);
    let tree = commit.tree().ctx(|| "cannot read the plan's tree".into())?;
    let before_tree = revert::parent_tree(&commit)?;
    let changes = revert::changed_paths(repo, before_tree.as_ref(), Some(&tree))?;
    let tip_tree = match tip {
        Some(t) => Some(
            read_commit(repo, t)?
                .tree()
                .ctx(|| "cannot read the tip".into())?,
        ),
        None => None,
    };
    // Held to the end, so the entries checked are the entries rewritten.
    let index = index_file::lock(repo.path())?;
    if let Some(b) = repo::index_blocker(&index) {
        return Err(b.refusal("redo"));
    }
    // What undo left in the index for the plan's paths (see `before_plan`).
    let (_, index_before) = before_plan(&commit, number)?;
    let mut changed = Vec::new();
    for c in &changes {
        let Ok(file) = scope::work_file(wt, &c.path)? else {
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
            let at_tip = scope::tree_file(tip_tree.as_ref(), &c.path).ok().flatten();
            let left_by_undo = scope::tree_file(index_before.as_ref(), &c.path)
                .ok()
                .flatten();
            if in_index != c.before && in_index != at_tip && in_index != left_by_undo {
                changed.push(format!("{} (staged changes)", c.path));
            }
        }
    }
    if !changed.is_empty() {
        return Err(HistoryError::Refused {
            message: format!(
                "cannot redo plan {number} ({short}): changed since the undo: {}",
                changed.join(", ")
            ),
            hint: format!(
                "redo would overwrite those changes; commit or move them away first, or re-apply the plan with `git cherry-pick {short}`"
            ),
        });
    }
    // Index: the plan's paths, and snapshot paths between the tip and the plan whose index
    // entry is still the tip's.
    let mut entries: Vec<(String, Option<Entry>)> =
        changes.iter().map(|c| (c.path.clone(), c.after)).collect();
    if let Some(below) = &before_tree {
        for c in revert::changed_paths(repo, tip_tree.as_ref(), Some(below))? {
            if index.get(&c.path) == c.before && !entries.iter().any(|(p, _)| *p == c.path) {
                entries.push((c.path, c.after));
            }
        }
    }
    let new_index = index.stage(&entries.into_iter().collect())?;

    let mut removed = Vec::new();
    for c in changes.iter().filter(|c| c.after.is_none()) {
        remove_file(wt, &c.path)?;
        removed.push(c.path.clone());
    }
    let mut written = Vec::new();
    for c in &changes {
        if let Some((blob, mode)) = c.after {
            write_blob(repo, wt, &c.path, blob, mode)?;
            written.push(c.path.clone());
        }
    }
    let session = message::parse(commit.message().unwrap_or_default())
        .session
        .unwrap_or(branch_session);
    // Files undo brought back from the trash where the plan had removed them: gone again,
    // unless the user changed them since (then they stay, and are said to).
    let recorded_trash = message::parse(commit.message().unwrap_or_default()).trash;
    let copies: BTreeMap<String, Vec<u8>> = match recorded_trash {
        Some(tree) => trash::recorded(repo, tree)?
            .into_iter()
            .map(|(p, b, _)| (p, b))
            .collect(),
        None => BTreeMap::new(),
    };
    for path in trash::take_absent(root, &session, number) {
        if wt.is_denied(&path) {
            continue;
        }
        let Ok(Some(now)) = scope::work_file(wt, &path)? else {
            continue;
        };
        if copies.get(&path).is_some_and(|b| *b == now.bytes) {
            remove_file(wt, &path)?;
            removed.push(path);
        }
    }
    let keep = trash::undone_dir(root, &session, number);
    let mut from_trash = Vec::new();
    for (path, bytes, perm) in trash::list(root, &keep)? {
        if wt.is_denied(&path) {
            continue;
        }
        wt.write_with_mode(&path, &bytes, perm)
            .map_err(|source| HistoryError::WorkTree {
                action: "write",
                path: path.clone(),
                source,
            })?;
        from_trash.push(path);
    }
    trash::remove(root, &keep)?;

    let reflog = format!("pai: redo plan {number} ({short})");
    match tip {
        Some(old) => repo.reference_matching(&branch, id, true, old, &reflog),
        None => repo.reference(&branch, id, false, &reflog),
    }
    .ctx(|| format!("cannot move {short_branch} forward"))?;
    if let Some(index) = new_index {
        index.commit()?;
    }
    if let Ok(mut r) = repo.find_reference(&undone_ref) {
        r.delete().ctx(|| format!("cannot remove {undone_ref}"))?;
    }
    Ok(RedoReport {
        session,
        plan: number,
        commit: short,
        request: message::request_of(commit.message().unwrap_or_default()),
        branch: short_branch,
        written,
        removed,
        from_trash,
    })
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
