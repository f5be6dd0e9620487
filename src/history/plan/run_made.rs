//! What a RUN made that its plan's commit cannot say, found from the status
//! passes around it: the ignored files it created (git's tree never holds them; the pass
//! before and the pass after each list the ignored files and folders they stopped at, and a
//! new one is the command's) and the user's empty folders it wrote into. Both go into the
//! plan's [`Made`](crate::history::record::made::Made) record, as they do for a WRITE, so undo removes exactly
//! what the command made: its ignored files (while they hold what it left) and the folders it
//! created, never a folder the user had. An ignored file inside an ignored folder that stood
//! before (`build/` holding the user's own files) is not seen: the passes do not enter
//! ignored folders, and walking them around every command would cost as much as the build.

use std::collections::BTreeSet;

use super::PlanHost;
use crate::history::error::{Context as _, HistoryError};
use crate::history::index::run_index::RunIndex;
use crate::history::ops::scope;
use crate::history::ops::work_tree::{WorkEntry, WorkTree};
use crate::history::ops::{Before, PlanJournal};
use crate::history::plan::PlanUnderWay;
use crate::history::plan::baseline::RunBaseline;
use crate::workspace::StatusPass;

/// Most ignored files recorded for one command: a command that makes more (an install, a
/// full build) made build output, none of which is recorded: undo leaves it whole, as git
/// leaves it.
pub const MAX_RUN_IGNORED: usize = 500;

impl PlanUnderWay {
    /// After a RUN: record in the plan what the command made beyond what git sees (see the
    /// module documentation): `changed` are the paths it changed, `pass` the status pass
    /// after it, made against `index`. The number of ignored files it created that were not
    /// recorded (over the limit).
    pub(in crate::history) fn note_run_made(
        &mut self,
        session: &mut impl PlanHost,
        wt: &dyn WorkTree,
        index: &RunIndex,
        baseline: &RunBaseline,
        pass: &StatusPass,
        changed: &[String],
    ) -> Result<usize, HistoryError> {
        let id = session.id().to_string();
        let root = session.root().to_path_buf();
        let w = session.writer()?;
        let (ignored, left_out) = new_ignored_files(wt, baseline, pass);
        let mut befores = Vec::new();
        for path in &ignored {
            let Ok(Some(file)) = scope::work_file(wt, path)? else {
                continue;
            };
            let id = w
                .repo
                .blob(&file.bytes)
                .ctx(|| format!("cannot store {path}"))?;
            self.made.ignored.insert(path.clone(), id.to_string());
            befores.push(Before {
                path: path.clone(),
                entry: None,
                perm: None,
                standing: Some(crate::history::plan::journal::stood_before(
                    index, baseline, path,
                )),
            });
        }
        let created = changed
            .iter()
            .filter(|p| baseline.before(p).is_none() && index.get(p).is_none());
        for path in created.chain(ignored.iter()) {
            let mut dir = path.as_str();
            while let Some((parent, _)) = dir.rsplit_once('/') {
                if baseline.empty_dirs.contains(parent) {
                    self.made.kept.insert(parent.to_string());
                    break;
                }
                dir = parent;
            }
        }
        let at = crate::history::ops::PlanAt {
            root: root.as_path(),
            session: id.as_str(),
            plan: w.next_plan,
        };
        PlanJournal::note_befores(&mut self.journal, &w.repo, wt, at, befores)?;
        Ok(left_out)
    }
}

/// The ignored files the command created: the ignored files the pass after it stopped at
/// that the pass before did not, and every file in an ignored folder that is new. More than
/// [`MAX_RUN_IGNORED`] is build output: none is recorded (undo leaves it whole, as git
/// does), and the walk stops there; the second value is then how many it had counted.
fn new_ignored_files(
    wt: &dyn WorkTree,
    baseline: &RunBaseline,
    pass: &StatusPass,
) -> (BTreeSet<String>, usize) {
    let mut found = BTreeSet::new();
    let mut stack: Vec<String> = pass
        .ignored
        .iter()
        .filter(|p| !baseline.ignored.contains(*p))
        .cloned()
        .collect();
    while let Some(entry) = stack.pop() {
        if found.len() > MAX_RUN_IGNORED {
            return (BTreeSet::new(), found.len());
        }
        let Some(dir) = entry.strip_suffix('/') else {
            found.insert(entry);
            continue;
        };
        if wt.is_denied(dir) {
            continue;
        }
        // Only names are listed: a file is told by its permission bits, never read here.
        let Ok(WorkEntry::Dir(names)) = wt.read(dir) else {
            continue;
        };
        for name in names {
            let path = format!("{dir}/{name}");
            if wt.is_denied(&path) {
                continue;
            }
            if wt.permissions(&path).is_some() {
                stack.push(path);
            } else if matches!(wt.read(&path), Ok(WorkEntry::Dir(_))) {
                stack.push(format!("{path}/"));
            }
        }
    }
    (found, 0)
}
