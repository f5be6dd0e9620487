//! Around a RUN: what the user's uncommitted files were before it (a [`RunBaseline`], from
//! the status pass before the command), which paths the command changed (from the pass
//! after it), and the user's versions of those snapshotted as `prepare` does before a plan's
//! own steps.

use std::collections::{BTreeMap, BTreeSet};

use git2::Oid;

use super::PlanHost;
use crate::history::error::{Context, HistoryError};
use crate::history::index::run_index::RunIndex;
use crate::history::ops::scope::{self};
use crate::history::ops::work_tree::WorkTree;
use crate::history::plan::PlanUnderWay;
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
    pub(in crate::history) ignored: BTreeSet<String>,
    pub(in crate::history) empty_dirs: BTreeSet<String>,
}

impl RunBaseline {
    /// What stood at `path` before the RUN, when the baseline knows: `Ok` with the file
    /// (`None`: absent), `Err` for a path it saw but did not keep; `None` when the path was
    /// what the index holds.
    pub(in crate::history) fn before(
        &self,
        path: &str,
    ) -> Option<Result<Option<&scope::WorkFile>, ()>> {
        if let Some((file, _)) = self.files.get(path) {
            return Some(Ok(file.as_ref()));
        }
        self.seen.contains_key(path).then_some(Err(()))
    }

    /// Whether the status pass before the RUN met anything below the folder `dir` (a file
    /// that differed from the index, an untracked or ignored one), or found `dir` empty.
    pub(in crate::history) fn saw_under(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        let under = |set: &mut dyn Iterator<Item = &String>| {
            set.next().is_some_and(|p| p.starts_with(&prefix))
        };
        self.empty_dirs.contains(dir)
            || under(&mut self.seen.range(prefix.clone()..).map(|(p, _)| p))
            || under(&mut self.ignored.range(prefix.clone()..))
    }

    /// The permission bits `path` had before the RUN, when known.
    pub(in crate::history) fn perm(&self, path: &str) -> Option<u32> {
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
    pub(in crate::history) fn remember_uncommitted(
        &mut self,
        session: &mut impl PlanHost,
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
    pub(in crate::history) fn prepare_after_run(
        &mut self,
        session: &mut impl PlanHost,
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
        session: &mut impl PlanHost,
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
}

/// After a RUN: the paths the command changed, from the status pass `pass` made after it
/// against the same `index`, compared with what `remember_uncommitted` saw
/// before (a file dirty before and changed again is compared by content, mode and
/// permission bits). Every non-ignored file counts, however big the project.
pub(in crate::history) fn run_changes(
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
