//! Before a plan touches files: snapshot the user's own changes to them as `Pai-Kind: user`
//! commits (so the plan commit holds only the agent's change and undo gives back the user's
//! exact bytes), and copy files git would not keep to the trash.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature, Tree};

use super::error::{Context, HistoryError};
use super::index_file::{self, IndexFile};
use super::scope::{self, Class, Entry};
use super::session::{Pending, Session, Writer};
use super::tree_edit::{self, Change};
use super::worktree::WorkTree;
use super::{message, names, repo, trash};

/// What stood at a path before a RUN: its blob id and git mode (`None`: nothing, or nothing
/// pai reads), and its permission bits.
type Seen = (Option<(Oid, i32)>, Option<u32>);

/// The user's uncommitted files as they were before a RUN (see
/// [`Session::remember_uncommitted`]).
#[derive(Default)]
pub struct RunBaseline {
    files: BTreeMap<String, (Option<scope::WorkFile>, Option<u32>)>,
    /// Every path git status listed: what stood there (blob id and git mode) and its
    /// permission bits, to find what the command changed.
    seen: BTreeMap<String, Seen>,
    /// Files not remembered (over the limit).
    pub left_out: usize,
}

/// At most this many paths are remembered before a RUN; past it the rest is left out and
/// said so (a project with that many uncommitted files is rare, and reading them all before
/// every command would cost more than the command).
pub const MAX_UNCOMMITTED: usize = 5_000;

impl Session {
    /// Before a RUN: the content of every project file that differs from the session branch's
    /// tip or its index, untracked files included and ignored ones left out (what a command
    /// could change that git alone could not give back). Found the way `git status` finds them
    /// (the index's stat data; no content is read for unchanged files). After the command,
    /// [`Session::prepare_after_run`] snapshots the ones it changed. At most
    /// [`MAX_UNCOMMITTED`] files. `None` for a read-only session, which records nothing (the
    /// caller finds the command's changes another way).
    pub fn remember_uncommitted(
        &mut self,
        wt: &dyn WorkTree,
    ) -> Result<Option<RunBaseline>, HistoryError> {
        let mut baseline = RunBaseline::default();
        let Ok(w) = self.writer() else {
            return Ok(None);
        };
        for path in status_paths(w)? {
            // Deny-listed files (`.env`, keys) are never read or recorded.
            if wt.is_denied(&path) {
                continue;
            }
            // What the file is now, to tell afterwards whether the command changed it.
            let seen = match scope::work_file(wt, &path) {
                Ok(Ok(file)) => file.as_ref().map(|f| (f.id, f.mode)),
                _ => None,
            };
            let perm = wt.permissions(&path);
            baseline.seen.insert(path.clone(), (seen, perm));
            if w.prepared.contains(&path) {
                continue;
            }
            if baseline.files.len() >= MAX_UNCOMMITTED {
                baseline.left_out += 1;
                continue;
            }
            // A file the gate will not open (a link out of the project, say) is not pai's to
            // remember; the command's change to it is not recorded either.
            let Ok(Ok(file)) = scope::work_file(wt, &path) else {
                baseline.left_out += 1;
                continue;
            };
            baseline.files.insert(path, (file, perm));
        }
        Ok(Some(baseline))
    }

    /// After a RUN: the paths the command changed, from git status now against what
    /// [`Session::remember_uncommitted`] saw before (a file dirty before and changed again is
    /// compared by content, mode and permission bits). Every non-ignored file counts, however
    /// big the project. `None` for a read-only session (the caller looks another way).
    pub fn run_changes(
        &mut self,
        wt: &dyn WorkTree,
        baseline: &RunBaseline,
    ) -> Result<Option<Vec<String>>, HistoryError> {
        let Ok(w) = self.writer() else {
            return Ok(None);
        };
        let now = status_paths(w)?;
        let mut changed: BTreeSet<String> = BTreeSet::new();
        for path in &now {
            if wt.is_denied(path) {
                continue;
            }
            let Some((before, perm)) = baseline.seen.get(path) else {
                changed.insert(path.clone());
                continue;
            };
            let current = match scope::work_file(wt, path) {
                Ok(Ok(file)) => file.as_ref().map(|f| (f.id, f.mode)),
                _ => None,
            };
            if current != *before || wt.permissions(path) != *perm {
                changed.insert(path.clone());
            }
        }
        let now: BTreeSet<&String> = now.iter().collect();
        for path in baseline.seen.keys() {
            if !now.contains(path) {
                changed.insert(path.clone());
            }
        }
        Ok(Some(changed.into_iter().collect()))
    }

    /// After a RUN: snapshot the user's versions (from `baseline`) of the files the command
    /// changed, as [`Session::prepare`] does before a plan's own steps.
    pub fn prepare_after_run(
        &mut self,
        wt: &dyn WorkTree,
        mut baseline: RunBaseline,
        changed: &[String],
    ) -> Result<(), HistoryError> {
        let paths: Vec<String> = changed
            .iter()
            .filter(|p| baseline.files.contains_key(*p))
            .cloned()
            .collect();
        if paths.is_empty() {
            return Ok(());
        }
        self.prepare_from(wt, &paths, &mut baseline.files)
    }

    /// Call before a plan creates, changes or removes `paths` (files or directories; calling
    /// again for more paths of the same plan is fine). Changes the user made to them that the
    /// session branch does not hold are committed as `Pai-Kind: user` snapshots (staged
    /// content that differs from both the branch and the work tree gets its own snapshot);
    /// ignored, untracked and `filter=lfs` files are copied to
    /// `.pai_history/trash/<session>/<plan>/`. The branch itself moves only with the plan
    /// commit; until then the snapshots are kept at `refs/pai/pending/<session>`.
    pub fn prepare(&mut self, wt: &dyn WorkTree, paths: &[String]) -> Result<(), HistoryError> {
        if let Ok(w) = self.writer() {
            for path in paths {
                if let Ok(Ok(Some(file))) = scope::work_file(wt, path).map(|r| r.map_err(drop))
                    && scope::git_would_convert(&w.repo, path, &file.bytes)
                {
                    return Err(HistoryError::Refused {
                        message: format!(
                            "git would store {path} with different bytes than it has (line endings from core.autocrlf or the text/eol attributes, or ident): pai records files as they are and would record it wrongly"
                        ),
                        hint: format!(
                            "change {path} with your own tools, or normalise it first (`git add --renormalize {path}` and commit)"
                        ),
                    });
                }
                if let Some(driver) = scope::filter_driver(&w.repo, path) {
                    return Err(HistoryError::Refused {
                        message: format!(
                            "{path} goes through the git filter `{driver}` (.gitattributes), which only git can run: pai would record unfiltered content"
                        ),
                        hint: format!(
                            "change {path} with your own tools and `git add` it, or ask for a change that does not touch it"
                        ),
                    });
                }
            }
        }
        self.prepare_from(wt, paths, &mut BTreeMap::new())
    }

    /// [`Session::prepare`], taking a path's earlier content from `earlier` when it is there
    /// (a RUN changed the file since) instead of reading the work tree.
    fn prepare_from(
        &mut self,
        wt: &dyn WorkTree,
        paths: &[String],
        earlier: &mut BTreeMap<String, (Option<scope::WorkFile>, Option<u32>)>,
    ) -> Result<(), HistoryError> {
        let session = self.id.clone();
        let root = self.root.clone();
        let w = self.writer()?;
        w.check_head()?;
        let plan = w.next_plan;
        let (tip, base) = w.snapshot_base()?;
        let repo = &w.repo;
        let base_tree = match base {
            Some(c) => Some(
                repo.find_commit(c)
                    .and_then(|c| c.tree())
                    .ctx(|| "cannot read the session branch".into())?,
            ),
            None => None,
        };
        let index = index_file::load(repo)?;
        if let Some(b) = repo::state_blocker(repo).or_else(|| repo::index_blocker(&index)) {
            return Err(HistoryError::ReadOnly { reason: b.reason() });
        }
        let files = scope::expand(repo, wt, base_tree.as_ref(), &index, paths)?;
        let preparing = Preparing {
            repo,
            wt,
            root: &root,
            trash_dir: trash::plan_dir(&root, &session, plan),
            base_tree: base_tree.as_ref(),
            index: &index,
        };
        let found = preparing.gather(files, &mut w.prepared, &mut w.trash, earlier)?;
        if found.staged.is_empty() && found.work.is_empty() {
            return Ok(());
        }
        let Some(top) = found.commit(repo, base, &session, plan, w.identity.as_ref())? else {
            return Ok(());
        };
        repo.reference(
            &names::pending_ref(&session),
            top,
            true,
            &format!("pai: snapshot before plan {plan}"),
        )
        .ctx(|| "cannot keep the snapshot of your changes".into())?;
        add_pending(&mut w.pending, tip, top, found.into_paths());
        Ok(())
    }
}

/// One `prepare` call's view of the project: what each path is compared with, and where its
/// trash copies go.
struct Preparing<'a, 'r> {
    repo: &'r Repository,
    wt: &'a dyn WorkTree,
    root: &'a Path,
    /// `.pai_history/trash/<session>/<plan>/`.
    trash_dir: PathBuf,
    /// The tree the snapshots go on (the newest pending snapshot's, or the tip's).
    base_tree: Option<&'a Tree<'r>>,
    index: &'a IndexFile,
}

impl Preparing<'_, '_> {
    /// Read each path not yet `prepared` for this plan (marking it prepared, so it is never
    /// snapshotted twice: its work-tree state may be the agent's by then), copy the files git
    /// would not keep to the trash (recording the copies in `trash`), and gather the user's
    /// changes the branch does not hold. Deny-listed files are skipped before they are read.
    fn gather(
        &self,
        files: BTreeSet<String>,
        prepared: &mut BTreeSet<String>,
        trash: &mut BTreeMap<String, (Oid, u32)>,
        earlier: &mut BTreeMap<String, (Option<scope::WorkFile>, Option<u32>)>,
    ) -> Result<UserChanges, HistoryError> {
        let mut found = UserChanges::default();
        for path in files {
            if prepared.contains(&path) {
                continue;
            }
            prepared.insert(path.clone());
            let class = scope::classify(self.repo, self.wt, self.base_tree, self.index, &path);
            if class == Class::Denied {
                continue;
            }
            let (file, known_perm) = match earlier.remove(&path) {
                Some(before) => before,
                None => {
                    let Ok(file) = scope::work_file(self.wt, &path)? else {
                        continue;
                    };
                    (file, self.wt.permissions(&path))
                }
            };
            if matches!(
                class,
                Class::Ignored | Class::Lfs | Class::Filtered | Class::Untracked
            ) && let Some(f) = &file
            {
                self.save_trash_copy(&path, f, known_perm, trash)?;
            }
            if matches!(class, Class::Ignored | Class::Lfs | Class::Filtered) {
                continue;
            }
            let Ok(in_tree) = scope::tree_file(self.base_tree, &path) else {
                continue;
            };
            let in_index = self.index.get(&path);
            found.note(path, in_tree, in_index, file);
        }
        Ok(found)
    }

    /// Copy `f` to the plan's trash folder (with `known_perm`, or the bits its git mode
    /// implies) and, when a copy was made, record it in `trash` by its blob in the object
    /// store: content-addressed, so a copy changed later in the trash folder cannot pass for
    /// it.
    fn save_trash_copy(
        &self,
        path: &str,
        f: &scope::WorkFile,
        known_perm: Option<u32>,
        trash: &mut BTreeMap<String, (Oid, u32)>,
    ) -> Result<(), HistoryError> {
        let perm = known_perm.unwrap_or(if f.mode == scope::MODE_EXEC {
            0o755
        } else {
            0o644
        });
        if trash::save(self.root, &self.trash_dir, path, &f.bytes, perm)? {
            let id = self
                .repo
                .blob(&f.bytes)
                .ctx(|| format!("cannot record the trash copy of {path}"))?;
            trash.insert(path.to_string(), (id, perm));
        }
        Ok(())
    }
}

/// The user's changes to a plan's paths that the session branch does not hold.
#[derive(Default)]
struct UserChanges {
    /// Staged content that is neither the branch's nor the work tree's.
    staged: BTreeMap<String, Option<Entry>>,
    /// Work-tree content that neither the branch nor the staged snapshot holds.
    work: BTreeMap<String, Option<Entry>>,
    /// The bytes of the `work` files, stored only once a snapshot is certain to be made.
    blobs: Vec<Vec<u8>>,
}

impl UserChanges {
    /// Note what the user changed at `path`: the branch has `in_tree`, the index `in_index`,
    /// the work tree `file`.
    fn note(
        &mut self,
        path: String,
        in_tree: Option<Entry>,
        in_index: Option<Entry>,
        file: Option<scope::WorkFile>,
    ) {
        let in_work = scope::entry_of(file.as_ref());
        // Staged content that is neither the branch's nor the work tree's would be lost
        // when the plan rewrites the index entry: record it first.
        let recorded = if in_index != in_tree && in_index != in_work {
            self.staged.insert(path.clone(), in_index);
            in_index
        } else {
            in_tree
        };
        if in_work != recorded {
            self.work.insert(path, in_work);
            if let Some(f) = file {
                self.blobs.push(f.bytes);
            }
        }
    }

    /// Commit the snapshots on top of `base` (the staged content first, then the work tree),
    /// without moving any ref; the newest one, `None` when there was nothing to commit.
    fn commit(
        &self,
        repo: &Repository,
        base: Option<Oid>,
        session: &str,
        plan: u32,
        identity: Option<&(String, String)>,
    ) -> Result<Option<Oid>, HistoryError> {
        for bytes in &self.blobs {
            repo.blob(bytes)
                .ctx(|| "cannot store a snapshot of your changes".into())?;
        }
        let sigs = repo::signatures(repo, identity)?;
        let mut top = base;
        for (changes, is_staged) in [(&self.staged, true), (&self.work, false)] {
            if changes.is_empty() {
                continue;
            }
            let files: Vec<String> = changes.keys().cloned().collect();
            let msg = message::user_message(session, plan, is_staged, &files);
            top = Some(commit_changes(repo, top, changes, &msg, &sigs)?);
        }
        Ok(top)
    }

    /// The paths the snapshots record.
    fn into_paths(self) -> BTreeSet<String> {
        let mut paths: BTreeSet<String> = self.staged.into_keys().collect();
        paths.extend(self.work.into_keys());
        paths
    }
}

impl Writer {
    /// The session branch's tip, and the commit the next snapshot of the user's changes goes
    /// on: the newest pending snapshot, or the tip.
    fn snapshot_base(&mut self) -> Result<(Option<Oid>, Option<Oid>), HistoryError> {
        let tip = self.line.tip(&self.repo, &self.branch)?;
        if self.pending.as_ref().is_some_and(|p| p.base != tip) {
            // The branch moved under the plan (the user committed): those snapshots no longer
            // sit on the tip. They stay reachable at the pending ref until the next snapshot.
            self.pending = None;
        }
        Ok((tip, self.pending.as_ref().map(|p| p.top).or(tip)))
    }

    /// Refuse to record when HEAD is no longer where the session's plans go.
    pub(super) fn check_head(&self) -> Result<(), HistoryError> {
        self.line.check_head(&self.repo, &self.branch)
    }
}

/// Add snapshot commits made on `tip` (the newest being `top`, recording `paths`) to the
/// plan's `pending` ones. A free function so it can run while the session's repository is
/// borrowed (the base tree's borrow lasts to the end of `prepare_from`).
fn add_pending(pending: &mut Option<Pending>, tip: Option<Oid>, top: Oid, paths: BTreeSet<String>) {
    match pending {
        Some(p) => {
            p.top = top;
            p.paths.extend(paths);
        }
        None => {
            *pending = Some(Pending {
                base: tip,
                top,
                paths,
            })
        }
    }
}

/// Commit `parent`'s tree with `changes` applied, without moving any ref.
pub(super) fn commit_changes(
    repo: &Repository,
    parent: Option<Oid>,
    changes: &BTreeMap<String, Option<Entry>>,
    msg: &str,
    sigs: &(Signature<'static>, Signature<'static>),
) -> Result<Oid, HistoryError> {
    let parent = match parent {
        Some(p) => Some(
            repo.find_commit(p)
                .ctx(|| format!("cannot read commit {p}"))?,
        ),
        None => None,
    };
    let base_tree = match &parent {
        Some(p) => Some(p.tree().ctx(|| "cannot read a tree".into())?),
        None => None,
    };
    let edits: BTreeMap<String, Change> = changes
        .iter()
        .map(|(p, e)| (p.clone(), scope::change_to(*e)))
        .collect();
    let tree_id = tree_edit::edit_tree(repo, base_tree.as_ref(), &edits)
        .ctx(|| "cannot build a tree".into())?;
    let tree = repo
        .find_tree(tree_id)
        .ctx(|| "cannot build a tree".into())?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(None, &sigs.0, &sigs.1, msg, &tree, &parents)
        .ctx(|| "cannot create a commit".into())
}

/// The paths git status lists for the session's repository (untracked included, ignored and
/// pai's own state left out), as `git status` finds them: with the real index and its stat
/// data (the session's handle has an empty in-memory index, see `repo::detach_index`). Names
/// that are not UTF-8 are spelled as [`crate::rawname`] does.
fn status_paths(w: &super::session::Writer) -> Result<Vec<String>, HistoryError> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .include_unmodified(false)
        .exclude_submodules(true)
        .renames_head_to_index(false)
        .renames_index_to_workdir(false);
    let what = || "cannot list your uncommitted files".to_string();
    let status_repo = Repository::open(w.repo.path()).ctx(what)?;
    if let Some(dir) = w.repo.workdir() {
        status_repo.set_workdir(dir, false).ctx(what)?;
    }
    let mut index = git2::Index::open(&index_file::index_path(w.repo.path())).ctx(what)?;
    status_repo.set_index(&mut index).ctx(what)?;
    let statuses = status_repo.statuses(Some(&mut opts)).ctx(what)?;
    let mut out = Vec::new();
    for entry in statuses.iter() {
        let path = crate::rawname::encode(entry.path_bytes());
        if !path.starts_with(super::store::DIR) {
            out.push(path.into_owned());
        }
    }
    Ok(out)
}

impl Session {
    /// Which of `paths` (files) hold changes of the user's that the session branch does not:
    /// what [`Session::prepare`] would commit as a snapshot before a plan touches them. Told
    /// with the plan, before approval. Empty for a read-only session or when nothing can be
    /// read.
    pub fn user_edits_in(&self, wt: &dyn WorkTree, paths: &[String]) -> Vec<String> {
        let super::session::State::Writable(w) = &self.state else {
            return Vec::new();
        };
        let Ok(tip) = w.line.tip(&w.repo, &w.branch) else {
            return Vec::new();
        };
        let tree = tip.and_then(|t| w.repo.find_commit(t).ok()?.tree().ok());
        let Ok(index) = index_file::load(&w.repo) else {
            return Vec::new();
        };
        paths
            .iter()
            .filter(|p| !wt.is_denied(p))
            .filter(|p| {
                let Ok(in_tree) = scope::tree_file(tree.as_ref(), p) else {
                    return false;
                };
                let Ok(Ok(file)) = scope::work_file(wt, p) else {
                    return false;
                };
                let class = scope::classify(&w.repo, wt, tree.as_ref(), &index, p);
                if matches!(class, Class::Ignored | Class::Lfs | Class::Filtered) {
                    return false;
                }
                let in_work = scope::entry_of(file.as_ref());
                in_work != in_tree || index.get(p) != in_tree
            })
            .cloned()
            .collect()
    }
}
