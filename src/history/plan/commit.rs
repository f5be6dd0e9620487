//! One executed plan, one commit: the branch tip's tree plus exactly the paths the plan
//! touched (built tree by tree, never from the user's index), then the user's index entries
//! for those paths brought in line so `git status` is clean for them.

use std::collections::{BTreeMap, BTreeSet};

use git2::{Commit, Oid, Repository, Tree};
use serde::Serialize;

use super::files as plan_files;
use super::{PlanHost, Writer};
use crate::history::error::{Context, HistoryError};
use crate::history::git::meta::Meta;
use crate::history::git::names;
use crate::history::git::names::Head;
use crate::history::git::repo;
use crate::history::git::tree_edit;
use crate::history::index::{self, IndexFile, LockedIndex};
use crate::history::ops::convert;
use crate::history::ops::scope::{self, Class, Entry};
use crate::history::ops::work_tree::WorkTree;
use crate::history::ops::{Op, OpKind, Record, found, produced};
use crate::history::plan::{NotCommitted, Pending, PlanUnderWay};
use crate::history::record::made::Made;
use crate::history::record::message::{self, PlanRecord};
use crate::history::record::trash;

/// A path of the plan that the commit does not hold, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    /// Project-relative path.
    pub path: String,
    /// `deny-listed`, `ignored`, `filter=lfs`, `symlink or submodule` or `not a regular file`.
    pub reason: &'static str,
}

/// What [`PlanUnderWay::commit`] recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitInfo {
    /// Full commit id.
    pub id: String,
    /// Abbreviated commit id.
    pub short_id: String,
    /// Session id.
    pub session: String,
    /// Plan number within the session.
    pub plan: u32,
    /// The session branch (`pai/<id>`).
    pub branch: String,
    /// Paths whose content the commit changed.
    pub files: Vec<String>,
    /// The snapshot of the user's changes below the plan commit, if one was needed.
    pub snapshot: Option<String>,
    /// Touched paths not recorded.
    pub left_out: Vec<LeftOut>,
    /// Things the user should know (e.g. an LFS file left out).
    pub warnings: Vec<String>,
}

impl PlanUnderWay {
    /// Commit the executed plan on the session branch, ending it. `Ok(None)` when the touched
    /// paths hold nothing new (a failed or read-only plan): then no commit is made and any
    /// snapshot taken by [`PlanUnderWay::prepare`] is dropped, the user's changes staying
    /// uncommitted as they were. A commit that fails before the branch moved gives the plan
    /// back ([`NotCommitted`]), for [`PlanUnderWay::abandon`] to put its files back.
    pub fn commit(
        mut self,
        session: &mut impl PlanHost,
        wt: &dyn WorkTree,
        plan: &PlanRecord,
    ) -> Result<Option<CommitInfo>, Box<NotCommitted>> {
        let nothing = plan.touched.is_empty() && !self.made_ignored_files();
        let result = if nothing || session.read_only_reason().is_some() {
            Ok(None)
        } else {
            self.commit_on(session, wt, plan)
        };
        match result.and_then(|info| self.end_journal().map(|()| info)) {
            Ok(info) => Ok(info),
            Err(error) => Err(Box::new(NotCommitted { error, plan: self })),
        }
    }

    /// [`PlanUnderWay::commit`] of a plan that touched something, in a writable session.
    fn commit_on(
        &mut self,
        session: &mut impl PlanHost,
        wt: &dyn WorkTree,
        plan: &PlanRecord,
    ) -> Result<Option<CommitInfo>, HistoryError> {
        let id = session.id().to_string();
        let root = session.root().to_path_buf();
        let w = session.writer()?;
        w.check_head()?;
        let tip = w.line.tip(&w.repo, &w.branch)?;
        // A transaction (history/ops): the commit only builds its record; the executor
        // carries it out, rolls it back on a failure, and the next pai command finishes it
        // after a crash.
        let mut op = Op::intent(&w.repo, &root, OpKind::PlanCommit, &id, w.next_plan)?;
        let building = Building {
            w,
            wt,
            session: &id,
            number: w.next_plan,
            plan,
            gathered: self,
        };
        let built = build_commit(&building, tip, op.record_mut());
        let result = match built {
            Ok(None) => op.commit(&w.repo, wt, None).map(|_| None),
            Ok(Some(built)) => match take_over(&op, &mut self.journal) {
                Ok(()) => {
                    let built = *built;
                    let index = built.index;
                    op.carry_out(&w.repo, wt, Some(index))
                        .map(|_| Some((built.info, built.branch, built.meta)))
                }
                Err(e) => op.close(&w.repo, wt, Err(e)),
            },
            Err(e) => op.close(&w.repo, wt, Err(e)),
        };
        let Some((info, branch, meta)) = result? else {
            return Ok(None);
        };
        // The plan is on the branch, which exists now with HEAD on it: the line's state
        // follows.
        w.branch = branch;
        w.meta = meta;
        w.line.created = true;
        w.line.recorded = true;
        w.next_plan += 1;
        Ok(Some(info))
    }
}

/// What building a plan commit works from: the session's writer, the project, the plan's
/// number and description, and what the plan under way gathered.
#[derive(Clone, Copy)]
struct Building<'a> {
    w: &'a Writer,
    wt: &'a dyn WorkTree,
    session: &'a str,
    number: u32,
    plan: &'a PlanRecord,
    gathered: &'a PlanUnderWay,
}

/// A plan commit built and recorded, waiting for the executor: what it will report, git's
/// index as checked (still locked), and the line's branch and metadata once it is carried
/// out.
struct Built {
    info: CommitInfo,
    index: LockedIndex,
    branch: String,
    meta: Meta,
}

/// The plan commit's message: subject, body and trailers (`Pai-Trash` with what the plan
/// left at trash paths, `Pai-Made`), the files it changed with line counts above the trailers
/// (so `pai log` need not diff), and `Pai-Auth` last, over the message as committed.
fn plan_commit_message(
    b: &Building<'_>,
    made: &Made,
    parent: Option<&Commit<'_>>,
    parent_tree: Option<&Tree<'_>>,
    tree: &Tree<'_>,
) -> Result<(String, Option<Oid>), HistoryError> {
    let (repo, wt, trash) = (&b.w.repo, b.wt, &b.gathered.trash);
    let (session, number, plan) = (b.session, b.number, b.plan);
    let parent_ids: Vec<Oid> = parent.iter().map(|c| c.id()).collect();
    let left = crate::history::record::left::record(repo, wt, trash)?;
    let trash_tree = trash::record(repo, number, trash, left)?;
    let mut msg = message::plan_message(session, number, plan, trash_tree);
    msg.push_str(&made.trailer());
    let files = plan_files::stats(repo, parent_tree, tree)?;
    let msg = plan_files::with_record(msg, parent_tree, tree, &files);
    Ok((
        crate::history::git::auth::sign(&msg, tree.id(), &parent_ids)?,
        trash_tree,
    ))
}

/// Build the plan's commit (its files read under the index lock, the commit made on the
/// snapshots of the user's versions) and its record: each file from what stood before the
/// plan (the user's exact bytes and permission bits, from the plan's journal) to what the
/// plan left, the index entries, and the refs and HEAD (see [`journal_refs`]). `None` when
/// the plan changed nothing to record; then the record only drops the pending snapshot.
fn build_commit(
    b: &Building<'_>,
    tip: Option<Oid>,
    record: &mut Record,
) -> Result<Option<Box<Built>>, HistoryError> {
    let Building {
        w,
        wt,
        session,
        number,
        plan,
        gathered,
    } = *b;
    let repo = &w.repo;
    let pending = gathered.pending.as_ref().filter(|p| p.base == tip);
    let trash = &gathered.trash;
    let parent = pending.map(|p| p.top).or(tip);
    let (parent_commit, parent_tree) = commit_and_tree(repo, parent)?;
    // Held from here to the end: the entries checked are the entries rewritten.
    let index = index::lock(repo.path())?;
    if let Some(b) = repo::state_blocker(repo).or_else(|| repo::index_blocker(&index)) {
        return Err(HistoryError::ReadOnly { reason: b.reason() });
    }
    let files = scope::expand(repo, wt, parent_tree.as_ref(), &index, &plan.touched)?;
    let Recorded {
        changes,
        left_out,
        warnings,
    } = record_files(repo, wt, parent_tree.as_ref(), &index, files)?;
    let mut made = gathered.made.clone();
    let ignored = left_out.iter().filter(|o| o.reason == "ignored");
    made.note_ignored(repo, wt, ignored.map(|o| o.path.as_str()), trash)?;
    // A plan that changed only ignored (or LFS) files still gets its commit when it saved
    // trash copies or created one: it changed something of the user's, and undo must find
    // that plan to put it back, not take the previous one.
    if changes.is_empty() && trash.is_empty() && made.ignored.is_empty() {
        if let Some(p) = pending {
            record.move_ref(&names::pending_ref(session), Some(p.top), None);
        }
        return Ok(None);
    }
    let tree = plan_tree(repo, parent_tree.as_ref(), &changes)?;
    let (author, committer) = repo::signatures(repo, w.identity.as_ref())?;
    let (msg, trash_tree) = plan_commit_message(
        b,
        &made,
        parent_commit.as_ref(),
        parent_tree.as_ref(),
        &tree,
    )?;
    let parents: Vec<&git2::Commit<'_>> = parent_commit.iter().collect();
    let commit = repo
        .commit(None, &author, &committer, &msg, &tree, &parents)
        .ctx(|| "cannot create the plan commit".into())?;
    for (path, entry) in &synced_entries(&tree, &changes, pending) {
        record.entry(path, index.get(path), *entry);
    }
    // The plan's files, from the user's version to the plan's: a commit that fails is
    // rolled back to the user's exact versions, so the plan is wholly undone.
    for path in changes.keys() {
        let before = match gathered.journal.as_ref().and_then(|j| j.before_state(path)) {
            Some(before) => before,
            None => match scope::tree_file(parent_tree.as_ref(), path).ok().flatten() {
                Some(entry) => Some(produced(repo, path, entry, None)?),
                None => None,
            },
        };
        record.work_file(path, before, found(wt, path)?);
    }
    let (branch, meta) = journal_refs(b, record, tip, commit, trash_tree, &made)?;
    take_over_files(gathered, wt, &changes, record)?;
    record.reflog = format!("pai: plan {number}: {}", message::subject(&plan.request));
    let info = CommitInfo {
        id: commit.to_string(),
        short_id: names::short_id(commit),
        session: session.to_string(),
        plan: number,
        branch: names::short(&branch).to_string(),
        files: changes.into_keys().collect(),
        snapshot: pending.map(|p| p.top.to_string()),
        left_out,
        warnings,
    };
    Ok(Some(Box::new(Built {
        info,
        index,
        branch,
        meta,
    })))
}

/// The commit the plan goes on (the newest snapshot of the user's changes, or the branch
/// tip) and its tree; `None` for both on an unborn branch.
fn commit_and_tree(
    repo: &Repository,
    parent: Option<Oid>,
) -> Result<(Option<Commit<'_>>, Option<Tree<'_>>), HistoryError> {
    let parent_commit = match parent {
        Some(c) => Some(
            repo.find_commit(c)
                .ctx(|| format!("cannot read commit {c}"))?,
        ),
        None => None,
    };
    let parent_tree = match &parent_commit {
        Some(c) => Some(
            c.tree()
                .ctx(|| "cannot read the session branch's tree".into())?,
        ),
        None => None,
    };
    Ok((parent_commit, parent_tree))
}

/// The plan's touched files, sorted into what its commit records and what it leaves out.
struct Recorded {
    /// The new entry of each recorded path whose content changed (`None`: removed).
    changes: BTreeMap<String, Option<Entry>>,
    left_out: Vec<LeftOut>,
    /// What the user should know about files left out.
    warnings: Vec<String>,
}

/// Sort `files` into [`Recorded`]. A file pai must not record (deny-listed, ignored) or
/// cannot record as git would (LFS, a filter driver), or that is not
/// a regular file, is left out with its reason; an unchanged one is skipped. Each recorded
/// file's blob is stored on the way, so the tree built from the entries is complete.
fn record_files(
    repo: &Repository,
    wt: &dyn WorkTree,
    parent_tree: Option<&Tree<'_>>,
    index: &IndexFile,
    files: BTreeSet<String>,
) -> Result<Recorded, HistoryError> {
    let mut changes = BTreeMap::new();
    let mut left_out = Vec::new();
    let mut warnings = Vec::new();
    for path in files {
        if let Some(reason) = class_reason(repo, wt, parent_tree, index, &path, &mut warnings) {
            left_out.push(LeftOut { path, reason });
            continue;
        }
        let Ok(before) = scope::tree_file(parent_tree, &path) else {
            left_out.push(LeftOut {
                path,
                reason: "symlink or submodule",
            });
            continue;
        };
        let Ok(file) = scope::work_file(wt, &path)? else {
            left_out.push(LeftOut {
                path,
                reason: "not a regular file",
            });
            continue;
        };
        // What git stores (its line-ending and ident conversions run): a converted blob is
        // written on the way, any other just below.
        let file = match file {
            Some(f) => Some(convert::as_stored(repo, &path, f, index.get(&path))?),
            None => None,
        };
        let after = scope::entry_of(file.as_ref());
        if after == before {
            continue;
        }
        if let Some(f) = &file
            && !convert::is_converted(f)
        {
            repo.blob(&f.bytes).ctx(|| format!("cannot store {path}"))?;
        }
        changes.insert(path, after);
    }
    Ok(Recorded {
        changes,
        left_out,
        warnings,
    })
}

/// Why `path`'s class keeps it out of the commit, if it does. An LFS or filtered file also
/// gets a warning in `warnings` telling the user how to add it themselves.
fn class_reason(
    repo: &Repository,
    wt: &dyn WorkTree,
    parent_tree: Option<&Tree<'_>>,
    index: &IndexFile,
    path: &str,
    warnings: &mut Vec<String>,
) -> Option<&'static str> {
    match scope::classify(repo, wt, parent_tree, index, path) {
        Class::Denied => Some("deny-listed"),
        Class::Ignored => Some("ignored"),
        Class::Lfs => {
            warnings.push(format!(
                "{path} is stored with Git LFS (filter=lfs); pai left it out of the commit: add it with `git add {}`",
                crate::shell::quote_bytes(&crate::rawname::decode(path))
            ));
            Some("filter=lfs")
        }
        Class::Filtered => {
            let driver = scope::filter_driver(repo, path).unwrap_or_default();
            warnings.push(format!(
                "{path} goes through the git filter `{driver}`, which only git can run; pai left it out of the commit (its previous version is in the trash): add it with `git add {}`",
                crate::shell::quote_bytes(&crate::rawname::decode(path))
            ));
            Some("filter driver")
        }
        Class::Tracked | Class::Untracked => None,
    }
}

/// The plan's tree: the parent's tree with exactly the recorded changes applied, built tree
/// by tree (never from the user's index).
fn plan_tree<'r>(
    repo: &'r Repository,
    parent_tree: Option<&Tree<'_>>,
    changes: &BTreeMap<String, Option<Entry>>,
) -> Result<Tree<'r>, HistoryError> {
    let edits = changes
        .iter()
        .map(|(p, e)| (p.clone(), scope::change_to(*e)))
        .collect();
    let tree_id = tree_edit::edit_tree(repo, parent_tree, &edits)
        .ctx(|| "cannot build the plan's tree".into())?;
    repo.find_tree(tree_id)
        .ctx(|| "cannot build the plan's tree".into())
}

/// The index entries that follow the branch, so `git status` is clean for them: the recorded
/// paths and the snapshotted ones, each at the plan tree's entry.
fn synced_entries(
    tree: &Tree<'_>,
    changes: &BTreeMap<String, Option<Entry>>,
    pending: Option<&Pending>,
) -> BTreeMap<String, Option<Entry>> {
    let mut synced: BTreeSet<&String> = changes.keys().collect();
    if let Some(p) = pending {
        synced.extend(p.paths.iter());
    }
    synced
        .into_iter()
        .map(|p| (p.clone(), scope::tree_file(Some(tree), p).ok().flatten()))
        .collect()
}

/// Write the commit's record: it takes over from the plan's own journal (`ops/plan.rs`),
/// which goes now, before anything moves, so a crash from here on is finished, never rolled
/// back.
fn take_over(
    op: &Op,
    journal: &mut Option<crate::history::ops::PlanJournal>,
) -> Result<(), HistoryError> {
    op.begin()?;
    match journal.take() {
        Some(j) => j.close(),
        None => Ok(()),
    }
}

/// The rest of what the plan's journal recorded, which the commit's record takes over: each
/// path the plan wrote that its commit does not hold (an ignored file it changed, removed
/// or made, an LFS file) from the user's version to what the plan left, and the folders
/// that stood before the plan wrote into them. Carried out forward they change nothing; a
/// commit rolled back puts them back with the rest.
fn take_over_files(
    plan: &PlanUnderWay,
    wt: &dyn WorkTree,
    changes: &BTreeMap<String, Option<Entry>>,
    record: &mut Record,
) -> Result<(), HistoryError> {
    let Some(journal) = plan.journal.as_ref() else {
        return Ok(());
    };
    let (paths, kept_dirs) = journal.recorded();
    for path in paths.into_iter().filter(|p| !changes.contains_key(*p)) {
        if let Some(before) = journal.before_state(path) {
            record.work_file(path, before, found(wt, path)?);
        }
    }
    for dir in kept_dirs {
        if !record.kept_dirs.contains(dir) {
            record.kept_dirs.push(dir.clone());
        }
    }
    Ok(())
}

/// The refs a plan commit moves, as the operation journal records them: the branch to the
/// commit (created, with HEAD put on it, for a new line: a name another session took gets a
/// suffix), the pending-snapshot ref gone, the trash copies' ref and, for a session's first
/// plan, its metadata ref (the session's start); and the user's folders (`made`), where
/// removing the plan's files stops when the commit is rolled back. The branch's name and the
/// line's metadata once the record is carried out.
fn journal_refs(
    b: &Building<'_>,
    record: &mut Record,
    tip: Option<Oid>,
    commit: Oid,
    trash_tree: Option<Oid>,
    made: &Made,
) -> Result<(String, Meta), HistoryError> {
    let (w, repo) = (b.w, &b.w.repo);
    let pending = b.gathered.pending.as_ref().filter(|p| p.base == tip);
    record.kept_dirs = made.kept.iter().cloned().collect();
    let mut meta = w.meta.clone();
    let mut name = w.branch.clone();
    if w.line.created {
        record.move_ref(&name, tip, Some(commit));
    } else {
        let mut n = 1;
        while repo.find_reference(&name).is_ok() {
            n += 1;
            name = format!("{}-{n}", w.branch);
            meta.branch = Some(name.clone());
        }
        // The line starts where HEAD's branch is now (the user may have committed there
        // since the session started).
        meta.base = tip;
        record.move_ref(&name, None, Some(commit));
        record.move_head(&w.line.start_head, &Head::Branch(name.clone()));
    }
    // The plan's trash copies' ref, set with its message: gone again if it is rolled back.
    if let Some(tree) = trash_tree {
        let trash = names::trash_ref(&record.session, record.plan);
        let old = names::target(repo, &trash).ctx(|| format!("cannot read {trash}"))?;
        record.move_ref(&trash, old, Some(tree));
    }
    // The session's start (its metadata ref), written with its first plan.
    if !w.line.recorded {
        let meta_ref = crate::history::git::meta::ref_name(&record.session);
        let old = names::target(repo, &meta_ref).ctx(|| format!("cannot read {meta_ref}"))?;
        let blob = crate::history::git::meta::blob(repo, &record.session, &meta)?;
        record.move_ref(&meta_ref, old, Some(blob));
    }
    if let Some(p) = pending {
        let pending_ref = names::pending_ref(&record.session);
        record.move_ref(&pending_ref, Some(p.top), None);
    }
    Ok((name, meta))
}
