//! Before a plan touches files: snapshot the user's own changes to them as `Pai-Kind: user`
//! commits (so the plan commit holds only the agent's change and undo gives back the user's
//! exact bytes), and copy files git would not keep to the trash.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Signature, Tree};

use super::{PlanHost, Writer};
use crate::history::error::{Context, HistoryError};
use crate::history::git::names;
use crate::history::git::repo;
use crate::history::git::tree_edit::{self, Change};
use crate::history::index::{self, IndexFile};
use crate::history::ops::convert;
use crate::history::ops::scope::{self, Class, Entry};
use crate::history::ops::work_tree::WorkTree;
use crate::history::ops::{OpKind, Record, at_once};
use crate::history::plan::{Pending, PlanUnderWay};
use crate::history::record::{message, trash};

impl PlanUnderWay {
    /// Call before a plan creates, changes or removes `paths` (files or directories; calling
    /// again for more paths of the same plan is fine). Changes the user made to them that the
    /// session branch does not hold are committed as `Pai-Kind: user` snapshots (staged
    /// content that differs from both the branch and the work tree gets its own snapshot);
    /// ignored, untracked and `filter=lfs` files are copied to
    /// `.pai_history/trash/<session>/<plan>/`. The branch itself moves only with the plan
    /// commit; until then the snapshots are kept at `refs/pai/pending/<session>`.
    pub fn prepare(
        &mut self,
        session: &mut impl PlanHost,
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
    pub(super) fn prepare_from(
        &mut self,
        session: &mut impl PlanHost,
        wt: &dyn WorkTree,
        paths: &[String],
        earlier: &mut BTreeMap<String, (Option<scope::WorkFile>, Option<u32>)>,
    ) -> Result<(), HistoryError> {
        let id = session.id().to_string();
        let root = session.root().to_path_buf();
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
        let index = index::load_shared(repo)?;
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
        let at = crate::history::ops::PlanAt {
            root: root.as_path(),
            session: id.as_str(),
            plan,
        };
        crate::history::ops::PlanJournal::note_befores(&mut self.journal, repo, wt, at, befores)?;
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
            found.befores.push(crate::history::ops::Before::stored(
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
    befores: Vec<crate::history::ops::Before>,
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
    pub(super) fn snapshot_base(
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
    pub(in crate::history) fn check_head(&self) -> Result<(), HistoryError> {
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
    record.move_ref(&name, old, Some(top));
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
pub(in crate::history) fn commit_changes(
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
    let msg = crate::history::git::auth::sign(msg, tree_id, &parent_ids)?;
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(None, &sigs.0, &sigs.1, &msg, &tree, &parents)
        .ctx(|| "cannot create a commit".into())
}
