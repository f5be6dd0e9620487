//! Before a plan touches files: snapshot the user's own changes to them as `Pai-Kind: user`
//! commits (so the plan commit holds only the agent's change and undo gives back the user's
//! exact bytes), and copy files git would not keep to the trash.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature, Tree};

use super::error::{Context, HistoryError};
use super::index_file::{self, IndexFile};
use super::ops::{OpKind, Record, at_once};
use super::plan::{Pending, PlanUnderWay};
use super::run_index::RunIndex;
use super::scope::{self, Class, Entry};
use super::session::{Session, Writer};
use super::tree_edit::{self, Change};
use super::worktree::WorkTree;
use super::{convert, message, names, repo, trash};
use crate::workspace::{StatusPass, Tracked};

/// What the work tree holds at a path: a file (`None`: nothing), or `Err` for what pai does
/// not record.
type Found = Result<Option<scope::WorkFile>, ()>;

/// The paths of `pass` (made against `index`) whose content differs from the index, and
/// untracked ones, with what the work tree holds there; deny-listed files are never read.
/// A tracked file whose stat changed but whose content and mode are the index's is left out,
/// as `git status` leaves it out.
fn differing(
    wt: &dyn WorkTree,
    index: &RunIndex,
    pass: &StatusPass,
) -> Result<Vec<(String, Found)>, HistoryError> {
    let mut out = Vec::new();
    for &i in &pass.changed {
        let path = crate::rawname::encode(index.path(i)).into_owned();
        if wt.is_denied(&path) {
            continue;
        }
        let file = scope::work_file(wt, &path)?;
        let now = file
            .as_ref()
            .ok()
            .and_then(|f| f.as_ref().map(|f| (f.id, f.mode)));
        if now.is_some() && now == index.entry(i) {
            continue;
        }
        out.push((path, file));
    }
    for path in &pass.untracked {
        if wt.is_denied(path) {
            continue;
        }
        out.push((path.clone(), scope::work_file(wt, path)?));
    }
    Ok(out)
}

/// What stood at a path before a RUN: its blob id and git mode (`None`: nothing, or nothing
/// pai reads), and its permission bits.
type Seen = (Option<(Oid, i32)>, Option<u32>);

/// The user's uncommitted files as they were before a RUN (see
/// `remember_uncommitted`).
#[derive(Default)]
pub struct RunBaseline {
    files: BTreeMap<String, (Option<scope::WorkFile>, Option<u32>)>,
    /// Every path that differed from the index (or was untracked): what stood there (blob id
    /// and git mode) and its permission bits, to find what the command changed. Every other
    /// file was what the index holds.
    seen: BTreeMap<String, Seen>,
    /// Files not remembered (over the limit).
    pub left_out: usize,
    /// The ignored files and folders the status pass stopped at, and the empty folders it
    /// met (see `run_made.rs`).
    pub(super) ignored: BTreeSet<String>,
    pub(super) empty_dirs: BTreeSet<String>,
}

impl RunBaseline {
    /// What stood at `path` before the RUN, when the baseline knows: `Ok` with the file
    /// (`None`: absent), `Err` for a path it saw but did not keep; `None` when the path was
    /// what the index holds.
    pub(super) fn before(&self, path: &str) -> Option<Result<Option<&scope::WorkFile>, ()>> {
        if let Some((file, _)) = self.files.get(path) {
            return Some(Ok(file.as_ref()));
        }
        self.seen.contains_key(path).then_some(Err(()))
    }

    /// Whether the status pass before the RUN met anything below the folder `dir` (a file
    /// that differed from the index, an untracked or ignored one), or found `dir` empty.
    pub(super) fn saw_under(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        let under = |set: &mut dyn Iterator<Item = &String>| {
            set.next().is_some_and(|p| p.starts_with(&prefix))
        };
        self.empty_dirs.contains(dir)
            || under(&mut self.seen.range(prefix.clone()..).map(|(p, _)| p))
            || under(&mut self.ignored.range(prefix.clone()..))
    }

    /// The permission bits `path` had before the RUN, when known.
    pub(super) fn perm(&self, path: &str) -> Option<u32> {
        self.files.get(path).and_then(|(_, perm)| *perm)
    }
}

/// At most this many paths are remembered before a RUN; past it the rest is left out and
/// said so (a project with that many uncommitted files is rare, and reading them all before
/// every command would cost more than the command).
pub const MAX_UNCOMMITTED: usize = 5_000;

impl PlanUnderWay {
    /// Before a RUN: the content of every project file that differs from the index, untracked
    /// files included and ignored ones left out (what a command could change that git alone
    /// could not give back), from the status pass `pass` made against `index`: only the files
    /// whose stat changed are read. After the command, `prepare_after_run`
    /// snapshots the ones it changed (a file the index holds is taken from the index). At
    /// most [`MAX_UNCOMMITTED`] files.
    pub(super) fn remember_uncommitted(
        &mut self,
        session: &mut Session,
        wt: &dyn WorkTree,
        index: &RunIndex,
        pass: &StatusPass,
    ) -> Result<RunBaseline, HistoryError> {
        let mut baseline = RunBaseline {
            ignored: pass.ignored.iter().cloned().collect(),
            empty_dirs: pass.empty_dirs.iter().cloned().collect(),
            ..RunBaseline::default()
        };
        session.writer()?;
        for (path, file) in differing(wt, index, pass)? {
            let perm = wt.permissions(&path);
            let seen = file
                .as_ref()
                .ok()
                .and_then(|f| f.as_ref().map(|f| (f.id, f.mode)));
            baseline.seen.insert(path.clone(), (seen, perm));
            if self.prepared.contains(&path) {
                continue;
            }
            // A file the gate will not open (a link out of the project, say) is not pai's to
            // remember; the command's change to it is not recorded either.
            let Ok(file) = file else {
                baseline.left_out += 1;
                continue;
            };
            if baseline.files.len() >= MAX_UNCOMMITTED {
                baseline.left_out += 1;
                continue;
            }
            baseline.files.insert(path, (file, perm));
        }
        Ok(baseline)
    }

    /// After a RUN: snapshot the user's versions of the files the command changed, as
    /// [`PlanUnderWay::prepare`] does before a plan's own steps: from `baseline` for the files that
    /// differed from the index, from `index` for the others that git's branch does not hold
    /// (staged changes).
    pub(super) fn prepare_after_run(
        &mut self,
        session: &mut Session,
        wt: &dyn WorkTree,
        index: &RunIndex,
        mut baseline: RunBaseline,
        changed: &[String],
    ) -> Result<(), HistoryError> {
        self.journal_run_changes(session, wt, index, &baseline, changed)?;
        let staged = self.staged_before(session, index, &baseline, changed)?;
        for (path, file) in staged {
            baseline.files.insert(path, (Some(file), None));
        }
        let paths: Vec<String> = changed
            .iter()
            .filter(|p| baseline.files.contains_key(*p))
            .cloned()
            .collect();
        if paths.is_empty() {
            return Ok(());
        }
        self.prepare_from(session, wt, &paths, &mut baseline.files)
    }

    /// The files among `changed` that were what the index holds before the command (not in
    /// `baseline`), where the index differs from the session branch: the user's staged
    /// content, read back from the object store.
    fn staged_before(
        &mut self,
        session: &mut Session,
        index: &RunIndex,
        baseline: &RunBaseline,
        changed: &[String],
    ) -> Result<Vec<(String, scope::WorkFile)>, HistoryError> {
        let w = session.writer()?;
        let (_, base) = w.snapshot_base(&mut self.pending)?;
        let repo = &w.repo;
        let tree = match base {
            Some(c) => Some(
                repo.find_commit(c)
                    .and_then(|c| c.tree())
                    .ctx(|| "cannot read the session branch".into())?,
            ),
            None => None,
        };
        let mut out = Vec::new();
        for path in changed.iter().filter(|p| !baseline.seen.contains_key(*p)) {
            let Some((id, mode)) = index.get(path) else {
                continue;
            };
            if scope::tree_file(tree.as_ref(), path) == Ok(Some((id, mode))) {
                continue;
            }
            let blob = repo
                .find_blob(id)
                .ctx(|| format!("cannot read the staged version of {path}"))?;
            out.push((
                path.clone(),
                scope::WorkFile {
                    bytes: blob.content().to_vec(),
                    mode,
                    id,
                },
            ));
        }
        Ok(out)
    }

    /// Call before a plan creates, changes or removes `paths` (files or directories; calling
    /// again for more paths of the same plan is fine). Changes the user made to them that the
    /// session branch does not hold are committed as `Pai-Kind: user` snapshots (staged
    /// content that differs from both the branch and the work tree gets its own snapshot);
    /// ignored, untracked and `filter=lfs` files are copied to
    /// `.pai_history/trash/<session>/<plan>/`. The branch itself moves only with the plan
    /// commit; until then the snapshots are kept at `refs/pai/pending/<session>`.
    pub fn prepare(
        &mut self,
        session: &mut Session,
        wt: &dyn WorkTree,
        paths: &[String],
    ) -> Result<(), HistoryError> {
        if let Ok(w) = session.writer() {
            self.made.note_before(wt, paths);
            for path in paths {
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
        self.prepare_from(session, wt, paths, &mut BTreeMap::new())
    }

    /// [`PlanUnderWay::prepare`], taking a path's earlier content from `earlier` when it is there
    /// (a RUN changed the file since) instead of reading the work tree.
    fn prepare_from(
        &mut self,
        session: &mut Session,
        wt: &dyn WorkTree,
        paths: &[String],
        earlier: &mut BTreeMap<String, (Option<scope::WorkFile>, Option<u32>)>,
    ) -> Result<(), HistoryError> {
        let id = session.id.clone();
        let root = session.root.clone();
        let w = session.writer()?;
        w.check_head()?;
        let plan = w.next_plan;
        let (tip, base) = w.snapshot_base(&mut self.pending)?;
        let repo = &w.repo;
        let base_tree = match base {
            Some(c) => Some(
                repo.find_commit(c)
                    .and_then(|c| c.tree())
                    .ctx(|| "cannot read the session branch".into())?,
            ),
            None => None,
        };
        let index = index_file::load_shared(repo)?;
        if let Some(b) = repo::state_blocker(repo).or_else(|| repo::index_blocker(&index)) {
            return Err(HistoryError::ReadOnly { reason: b.reason() });
        }
        let files = scope::expand(repo, wt, base_tree.as_ref(), &index, paths)?;
        let preparing = Preparing {
            repo,
            wt,
            root: &root,
            trash_dir: trash::plan_dir(&root, &id, plan),
            base_tree: base_tree.as_ref(),
            index: &index,
        };
        let mut found = preparing.gather(files, &mut self.prepared, &mut self.trash, earlier)?;
        // The plan's journal names these paths' before states before any step writes them.
        let befores = std::mem::take(&mut found.befores);
        let at = (root.as_path(), id.as_str(), plan);
        super::ops::PlanJournal::note_befores(&mut self.journal, repo, wt, at, befores)?;
        if found.staged.is_empty() && found.work.is_empty() {
            return Ok(());
        }
        let Some(top) = found.commit(repo, base, &id, plan, w.identity.as_ref())? else {
            return Ok(());
        };
        set_pending(repo, &id, plan, top)?;
        add_pending(&mut self.pending, tip, top, found.into_paths());
        Ok(())
    }
}

/// After a RUN: the paths the command changed, from the status pass `pass` made after it
/// against the same `index`, compared with what `remember_uncommitted` saw
/// before (a file dirty before and changed again is compared by content, mode and
/// permission bits). Every non-ignored file counts, however big the project.
pub(super) fn run_changes(
    wt: &dyn WorkTree,
    index: &RunIndex,
    pass: &StatusPass,
    baseline: &RunBaseline,
) -> Result<Vec<String>, HistoryError> {
    let mut changed: BTreeSet<String> = BTreeSet::new();
    let mut now: BTreeSet<String> = BTreeSet::new();
    for (path, file) in differing(wt, index, pass)? {
        let current = file.ok().flatten().map(|f| (f.id, f.mode));
        let differs = baseline
            .seen
            .get(&path)
            .is_none_or(|(before, perm)| current != *before || wt.permissions(&path) != *perm);
        if differs {
            changed.insert(path.clone());
        }
        now.insert(path);
    }
    // What differed from the index before and is what the index holds now.
    for path in baseline.seen.keys() {
        if !now.contains(path) {
            changed.insert(path.clone());
        }
    }
    Ok(changed.into_iter().collect())
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
            found.befores.push(super::ops::Before::stored(
                self.repo,
                &path,
                file.as_ref(),
                known_perm,
            )?);
            // Compared with git's trees as git stores it; its exact bytes kept besides.
            let file = match file {
                Some(f) if matches!(class, Class::Tracked | Class::Untracked) => {
                    let f = convert::as_stored(self.repo, &path, f, self.index.get(&path))?;
                    convert::keep_replaced(self.repo, &path, &f, known_perm, trash)?;
                    Some(f)
                }
                other => other,
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
        let id = self
            .repo
            .blob(&f.bytes)
            .ctx(|| format!("cannot record the trash copy of {path}"))?;
        let mut record = Record::new(OpKind::Prepare);
        let parts = trash::copy_parts(self.root, &self.trash_dir, path)?;
        record.copy(self.root, parts, id, perm);
        if at_once(self.repo, None, &record)?.changed > 0 {
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
    /// What stood at each path read, for the plan's journal (`ops/plan.rs`).
    befores: Vec<super::ops::Before>,
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
    fn snapshot_base(
        &self,
        pending: &mut Option<Pending>,
    ) -> Result<(Option<Oid>, Option<Oid>), HistoryError> {
        let tip = self.line.tip(&self.repo, &self.branch)?;
        if pending.as_ref().is_some_and(|p| p.base != tip) {
            // The branch moved under the plan (the user committed): those snapshots no longer
            // sit on the tip. They stay reachable at the pending ref until the next snapshot.
            *pending = None;
        }
        Ok((tip, pending.as_ref().map(|p| p.top).or(tip)))
    }

    /// Refuse to record when HEAD is no longer where the session's plans go.
    pub(super) fn check_head(&self) -> Result<(), HistoryError> {
        self.line.check_head(&self.repo, &self.branch)
    }
}

/// Point the pending snapshot ref of `session` at `top`, the newest snapshot made for plan
/// `plan`, through the executor.
fn set_pending(repo: &Repository, session: &str, plan: u32, top: Oid) -> Result<(), HistoryError> {
    let name = names::pending_ref(session);
    let old = names::target(repo, &name).ctx(|| format!("cannot read {name}"))?;
    let mut record = Record::new(OpKind::Prepare);
    record.name(session, plan);
    record.reference(&name, old, Some(top));
    record.reflog = format!("pai: snapshot before plan {plan}");
    let done = at_once(repo, None, &record)?;
    if !done.kept.is_empty() {
        return Err(HistoryError::Refused {
            message: format!("{name} moved while pai was setting it"),
            hint: "another program is changing pai's refs; try again once it is done".into(),
        });
    }
    Ok(())
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
    let parent_ids: Vec<Oid> = parent.iter().map(git2::Commit::id).collect();
    let msg = super::auth::sign(msg, tree_id, &parent_ids)?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(None, &sigs.0, &sigs.1, &msg, &tree, &parents)
        .ctx(|| "cannot create a commit".into())
}

impl Session {
    /// Which of `paths` (files) hold changes of the user's that the session branch does not:
    /// what [`PlanUnderWay::prepare`] would commit as a snapshot before a plan touches them. Told
    /// with the plan, before approval. Empty for a read-only session or when nothing can be
    /// read.
    pub fn user_edits_in(&self, wt: &dyn WorkTree, paths: &[String]) -> Vec<String> {
        let super::session::State::Writable(w) = &self.state else {
            return Vec::new();
        };
        // A plan that names no file (a RUN) needs no read of the index.
        if paths.is_empty() {
            return Vec::new();
        }
        let Ok(tip) = w.line.tip(&w.repo, &w.branch) else {
            return Vec::new();
        };
        let tree = tip.and_then(|t| w.repo.find_commit(t).ok()?.tree().ok());
        let Ok(index) = index_file::load_shared(&w.repo) else {
            return Vec::new();
        };
        paths
            .iter()
            .filter(|p| !wt.is_denied(p))
            .filter(|p| {
                let Ok(in_tree) = scope::tree_file(tree.as_ref(), p) else {
                    return false;
                };
                // Compared as git stores it: a CRLF file git keeps as LF is no edit.
                let Ok(Ok(file)) = convert::work_file(&w.repo, wt, p, index.get(p)) else {
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
