//! The journal of a plan whose steps are writing: from the moment the user's
//! versions of a plan's files are saved until its commit's own record is in place, a record
//! `ops/<work tree id>.plan.json` beside the operation record names every path the plan may
//! write, with what stood there before (a blob already in the object store, or absent, and
//! its permission bits), what its steps left there so far, which paths the step under way
//! writes, and the folders that stood before the plan wrote into them. It is rewritten before
//! each step that writes (a step cannot write before its paths are named).
//!
//! A record found later is a plan whose process died mid-way: it is rolled back, never
//! finished (its commit was never made). Each path goes back to its before state when it now
//! holds what the plan's steps left there, or the step under way was writing it; a path that
//! holds neither (changed by someone since) is kept and named. Files the plan created are
//! removed with the folders they leave empty, up to a folder that stood before. The plan's
//! steps never write the index, so it stays as the user had it; the pending snapshot ref is
//! dropped when it is still the plan's.
//!
//! The plan commit takes over: once its own record is written (`Op::begin`), this one is
//! removed before anything else moves, so a crash finds one or the other (recovery removes
//! this one unread when the commit's record is a full one).

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::super::error::{Context as _, HistoryError};
use super::apply;
use super::direction::{Applied, Direction};
use super::journal_file;
use super::record::{FileMove, FileState, OpKind, Record, Source};
use crate::history::git::names;
use crate::history::ops::scope::{self, Entry};
use crate::history::ops::work_tree::{WorkEntry, WorkTree};

/// Most paths named in the recovery line.
const MAX_NAMED: usize = 5;

/// What a step about to run may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepWrites {
    /// Nothing (a READ, a SEARCH, ...).
    Nothing,
    /// These project paths (a folder stands for the files under it).
    Paths(Vec<String>),
    /// Anything in the project (a RUN command, a TOOL call).
    Anywhere,
}

/// Where the plan record of the work tree at `root` of `repo` lives.
pub(crate) fn path_for(repo: &Repository, root: &Path) -> Result<PathBuf, HistoryError> {
    Ok(beside(&journal_file::path_for(repo, root)?))
}

/// The plan record's path beside the operation record at `record`.
pub(crate) fn beside(record: &Path) -> PathBuf {
    record.with_extension("plan.json")
}

/// The journal of the plan under way (kept by the session between its steps).
pub(crate) struct PlanJournal {
    path: PathBuf,
    record: Record,
}

/// A path's state before the plan, as [`PlanJournal::note`] takes it.
pub(crate) struct Before {
    /// Project-relative path.
    pub path: String,
    /// The blob (already in the object store) and git mode; `None`: absent.
    pub entry: Option<Entry>,
    /// Permission bits, when known.
    pub perm: Option<u32>,
    /// For an absent path: the nearest folder above it that stood before, when the caller
    /// knows it (`Some(None)`: the project root); `None`: the one standing now.
    pub standing: Option<Option<String>>,
}

impl Before {
    /// The before state of `path` holding `file` (`None`: absent), its bytes put in the
    /// object store first: a record names only what is there.
    pub(crate) fn stored(
        repo: &Repository,
        path: &str,
        file: Option<&scope::WorkFile>,
        perm: Option<u32>,
    ) -> Result<Before, HistoryError> {
        if let Some(f) = file {
            repo.blob(&f.bytes)
                .ctx(|| format!("cannot keep your version of {path}"))?;
        }
        Ok(Before {
            path: path.to_string(),
            entry: file.map(|f| (f.id, f.mode)),
            perm,
            standing: None,
        })
    }
}

/// Which plan a journal is for: its number in a session, in the work tree at a root.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlanAt<'a> {
    /// The work tree's root.
    pub root: &'a Path,
    /// The session's id.
    pub session: &'a str,
    /// The plan's number.
    pub plan: u32,
}

impl PlanJournal {
    /// Add `befores` to the plan's `journal` (opened for the plan `at` when none is), and
    /// write it.
    pub(crate) fn note_befores(
        journal: &mut Option<PlanJournal>,
        repo: &Repository,
        wt: &dyn WorkTree,
        at: PlanAt<'_>,
        befores: Vec<Before>,
    ) -> Result<(), HistoryError> {
        if befores.is_empty() {
            return Ok(());
        }
        if journal.is_none() {
            *journal = Some(PlanJournal::new(repo, at)?);
        }
        match journal {
            Some(j) => j.note(wt, befores),
            None => Ok(()),
        }
    }

    /// A journal for the plan `at` (nothing written yet).
    pub(crate) fn new(repo: &Repository, at: PlanAt<'_>) -> Result<PlanJournal, HistoryError> {
        let PlanAt {
            root,
            session,
            plan,
        } = at;
        let path = path_for(repo, root)?;
        // Only a plan of this session whose files could not all be put back leaves its record
        // while the session goes on; a new plan must not write over what finishing that roll
        // back needs. (Another session's record is a crashed process's, which recovery, run
        // before every command, has already rolled back.)
        if path.exists() && Record::read(&path).is_ok_and(|r| r.session == session) {
            return Err(HistoryError::Refused {
                message: "an earlier plan's files are not all back as you had them yet".into(),
                hint: "run any pai command (`pai log`) once the cause is fixed (room on the disk, say): it finishes putting them back".into(),
            });
        }
        let mut record = Record::new(OpKind::Plan);
        record.name(session, plan);
        Ok(PlanJournal { path, record })
    }

    /// Whether `path` is recorded already (its first state is the one that counts).
    fn has(&self, path: &str) -> bool {
        self.record.files.iter().any(|m| m.path == path)
    }

    /// Record the paths of `befores` not recorded yet, each with the folder above it that
    /// stood before when it is absent; then write the record.
    pub(crate) fn note(
        &mut self,
        wt: &dyn WorkTree,
        befores: Vec<Before>,
    ) -> Result<(), HistoryError> {
        let mut added = false;
        for b in befores {
            if self.has(&b.path) {
                continue;
            }
            let standing = || {
                b.standing
                    .clone()
                    .unwrap_or_else(|| standing_folder(wt, &b.path))
            };
            if b.entry.is_none()
                && let Some(dir) = standing()
                && !self.record.kept_dirs.contains(&dir)
            {
                self.record.kept_dirs.push(dir);
            }
            if let Some(perm) = b.perm {
                self.record.perms.insert(b.path.clone(), perm);
            }
            self.record
                .files
                .push(FileMove::new(&b.path, b.entry, b.entry));
            added = true;
        }
        if added {
            self.save()?;
        }
        Ok(())
    }

    /// Before a step runs: what the steps so far left at the paths the last one wrote, the
    /// paths this one writes, and the pending snapshot ref (`pending`: its name and tip). The
    /// record is written unless the step writes nothing and nothing changed.
    pub(crate) fn step(
        &mut self,
        wt: &dyn WorkTree,
        writes: StepWrites,
        pending: Option<(String, Oid)>,
    ) -> Result<(), HistoryError> {
        let was_writing = !self.record.writing.is_empty() || self.record.writing_all;
        for i in 0..self.record.files.len() {
            if !self.in_flight(&self.record.files[i].path) {
                continue;
            }
            let path = self.record.files[i].path.clone();
            if let Ok(now) = scope::work_file(wt, &path)? {
                self.record.files[i].set_after(scope::entry_of(now.as_ref()));
            }
        }
        let pending_changed = self.set_pending(pending);
        let (writing, all) = match writes {
            StepWrites::Nothing => (Vec::new(), false),
            StepWrites::Paths(p) => (p, false),
            StepWrites::Anywhere => (Vec::new(), true),
        };
        let now_writing = !writing.is_empty() || all;
        self.record.writing = writing;
        self.record.writing_all = all;
        if was_writing || now_writing || pending_changed {
            self.save()?;
        }
        Ok(())
    }

    /// Record the pending snapshot ref at `pending`; whether that changed the record.
    fn set_pending(&mut self, pending: Option<(String, Oid)>) -> bool {
        let Some((name, tip)) = pending else {
            return false;
        };
        let now = self.record.refs.iter().find(|r| r.name == name);
        if now.is_some_and(|r| r.states().ok() == Some((None, Some(tip)))) {
            return false;
        }
        self.record.refs.retain(|r| r.name != name);
        self.record.move_ref(&name, None, Some(tip));
        true
    }

    /// Whether the step under way writes `path`.
    fn in_flight(&self, path: &str) -> bool {
        in_flight(&self.record, path)
    }

    /// Write the record: from here on a crash is rolled back by the next command.
    fn save(&self) -> Result<(), HistoryError> {
        journal_file::write_atomic(&self.path, &self.record)
    }

    /// What stood at `path` before the plan, as the plan commit's record states it (the user's
    /// exact bytes and permission bits; `Some(None)`: absent), when this journal recorded it.
    pub(crate) fn before_state(&self, path: &str) -> Option<Option<FileState>> {
        let m = self.record.files.iter().find(|m| m.path == path)?;
        let (before, _) = m.states().ok()?;
        Some(before.map(|(id, mode)| FileState {
            id,
            mode,
            perm: self.record.perms.get(path).copied(),
            from: Source::Found,
        }))
    }

    /// Every path the journal recorded, and the folders that stood before the plan wrote
    /// into them: what the plan commit's record takes over.
    pub(crate) fn recorded(&self) -> (Vec<&str>, &[String]) {
        let paths = self.record.files.iter().map(|m| m.path.as_str()).collect();
        (paths, &self.record.kept_dirs)
    }

    /// The plan's commit has its own record, or the plan ended without one: drop this one.
    pub(crate) fn close(self) -> Result<(), HistoryError> {
        journal_file::remove(&self.path)
    }

    /// The plan cannot be recorded: put its files back as they stood before it, each that
    /// still holds what the plan's steps left there (see [`roll_back`]; the pending snapshot
    /// stays, the session keeps using it). The record is removed once every file is back;
    /// when one cannot be, it stays on disk for the next pai command to finish the roll back.
    pub(crate) fn abandon(
        self,
        repo: &Repository,
        wt: &dyn WorkTree,
    ) -> Result<Applied, HistoryError> {
        let applied = roll_back_files(repo, wt, &self.record)?;
        self.close()?;
        Ok(applied)
    }
}

/// Whether `record`'s step under way writes `path` (a folder it names covers its files).
fn in_flight(record: &Record, path: &str) -> bool {
    record.writing_all
        || record.writing.iter().any(|w| {
            let w = w.trim_end_matches('/');
            path == w || w.is_empty() || path.strip_prefix(w).is_some_and(|r| r.starts_with('/'))
        })
}

/// The nearest folder above `path` that stands now (`None`: the project root).
fn standing_folder(wt: &dyn WorkTree, path: &str) -> Option<String> {
    let mut dir = path;
    while let Some((parent, _)) = dir.rsplit_once('/') {
        match wt.read(parent) {
            Ok(WorkEntry::Absent) => dir = parent,
            _ => return Some(parent.to_string()),
        }
    }
    None
}

/// Roll back the plan `record` describes (see the module documentation): its files, and the
/// pending snapshot ref it made.
pub(crate) fn roll_back(
    repo: &Repository,
    wt: &dyn WorkTree,
    record: &Record,
) -> Result<Applied, HistoryError> {
    let (mut back, kept) = roll_back_record(wt, record)?;
    drop_pending(repo, record, &mut back)?;
    carry_out(repo, wt, back, kept)
}

/// The files of [`roll_back`] only: the pending snapshot stays.
fn roll_back_files(
    repo: &Repository,
    wt: &dyn WorkTree,
    record: &Record,
) -> Result<Applied, HistoryError> {
    let (back, kept) = roll_back_record(wt, record)?;
    carry_out(repo, wt, back, kept)
}

/// Carry the roll back's record out with the executor; `kept`: the paths its building left
/// as found.
fn carry_out(
    repo: &Repository,
    wt: &dyn WorkTree,
    back: Record,
    kept: Vec<String>,
) -> Result<Applied, HistoryError> {
    let mut out = apply::apply(repo, wt, &back, Direction::Forward)?;
    out.kept.splice(0..0, kept);
    Ok(out)
}

/// The roll back of the plan `record` describes, as a record of its own: each path that
/// holds what the plan's steps left there, or that the step under way was writing, goes
/// from what stands there now to its state before the plan (its bytes and permission bits,
/// or absent, with the folders the plan made). A path already back is named only to tidy
/// the folders a killed step may have made; one in neither state is returned, kept as found.
fn roll_back_record(
    wt: &dyn WorkTree,
    record: &Record,
) -> Result<(Record, Vec<String>), HistoryError> {
    let mut back = Record::new(OpKind::Plan);
    back.name(&record.session, record.plan);
    back.kept_dirs = record.kept_dirs.clone();
    let mut kept = Vec::new();
    for m in &record.files {
        let (before, after) = m.states()?;
        let Ok(file) = scope::work_file(wt, &m.path)? else {
            kept.push(m.path.clone());
            continue;
        };
        let now = scope::entry_of(file.as_ref());
        if now == before {
            if before.is_none() {
                // Absent on both sides: the executor only removes the folders left empty.
                back.files.push(FileMove::work(&m.path, None, None));
            }
            continue;
        }
        if now != after && !in_flight(record, &m.path) {
            kept.push(m.path.clone());
            continue;
        }
        let perm = record.perms.get(&m.path).copied();
        let to = before.map(|(id, mode)| FileState {
            perm,
            ..FileState::stored((id, mode))
        });
        let from = file.map(|f| FileState::found(&f, wt.permissions(&m.path)));
        back.files.push(FileMove::work(&m.path, from, to));
    }
    Ok((back, kept))
}

/// Add to `back` the deletion of the pending snapshot ref the plan made, when it still
/// points where the record says (the files it holds the user's versions of are the user's
/// again).
fn drop_pending(repo: &Repository, record: &Record, back: &mut Record) -> Result<(), HistoryError> {
    for r in &record.refs {
        let (_, new) = r.states()?;
        let now = names::target(repo, &r.name).ctx(|| format!("cannot read {}", r.name))?;
        if now.is_some() && now == new {
            back.move_ref(&r.name, now, None);
        }
    }
    Ok(())
}

/// "rolled back plan 2 of session X, interrupted at ... before its commit: put back 3 files",
/// with what was kept as the user changed it since.
pub(crate) fn line(record: &Record, applied: &Applied) -> String {
    let mut text = format!(
        "rolled back {}, interrupted at {} before its commit: ",
        record.describe(),
        record.started
    );
    text.push_str(&match applied.changed {
        0 => "nothing to put back".to_string(),
        1 => "put back 1 file".to_string(),
        n => format!("put back {n} files"),
    });
    if !applied.kept.is_empty() {
        let kept = &applied.kept;
        let mut named = kept[..kept.len().min(MAX_NAMED)].join(", ");
        if kept.len() > MAX_NAMED {
            named.push_str(&format!(" and {} more", kept.len() - MAX_NAMED));
        }
        text.push_str(&format!("; kept as you changed them since: {named}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ops::scope::MODE_FILE;
    use crate::workspace::{Workspace, WorkspaceConfig};

    fn blob(repo: &Repository, bytes: &[u8]) -> Option<Entry> {
        Some((repo.blob(bytes).unwrap(), MODE_FILE))
    }

    /// A plan that changed `a.txt` (a step done), is writing `new/deep/b.txt` (the step
    /// under way) and had `c.txt` changed by it and then by the user: rolled back, `a.txt`
    /// and `b.txt` go back, the folders the plan made go, `mine/` (the user's empty folder)
    /// stays, and `c.txt` is kept and named.
    #[test]
    fn a_plan_killed_mid_way_is_rolled_back_and_the_users_later_edit_kept() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("mine")).unwrap();
        for (f, text) in [("a.txt", "user a\n"), ("c.txt", "user c\n")] {
            std::fs::write(root.join(f), text).unwrap();
        }
        let ws = Workspace::open(root, WorkspaceConfig::default()).unwrap();
        let mut rec = Record::new(OpKind::Plan);
        rec.name("s1", 4);
        rec.files.push(FileMove::new(
            "a.txt",
            blob(&repo, b"user a\n"),
            blob(&repo, b"plan a\n"),
        ));
        let c_after = blob(&repo, b"plan c\n");
        rec.files
            .push(FileMove::new("c.txt", blob(&repo, b"user c\n"), c_after));
        rec.files.push(FileMove::new("new/deep/b.txt", None, None));
        rec.files.push(FileMove::new("mine/x/y.txt", None, None));
        rec.kept_dirs.push("mine".into());
        rec.writing = vec!["new/deep/b.txt".into(), "mine/x/y.txt".into()];
        // What stands after the kill.
        std::fs::write(root.join("a.txt"), "plan a\n").unwrap();
        std::fs::write(root.join("c.txt"), "the user's edit after the crash\n").unwrap();
        std::fs::create_dir_all(root.join("new/deep")).unwrap();
        std::fs::write(root.join("new/deep/b.txt"), "half a plan\n").unwrap();
        std::fs::create_dir_all(root.join("mine/x")).unwrap();
        let done = roll_back(&repo, &ws, &rec).unwrap();
        assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"user a\n");
        assert_eq!(
            std::fs::read(root.join("c.txt")).unwrap(),
            b"the user's edit after the crash\n"
        );
        assert!(!root.join("new").exists());
        assert!(root.join("mine").is_dir());
        assert!(!root.join("mine/x").exists());
        assert_eq!(done.kept, ["c.txt"]);
        assert_eq!(done.changed, 2);
        let said = line(&rec, &done);
        assert!(said.starts_with("rolled back plan 4 of session s1, interrupted at "));
        assert!(said.ends_with("put back 2 files; kept as you changed them since: c.txt"));
    }

    #[test]
    fn a_step_names_its_paths_and_the_last_steps_results_before_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let root = dir.path();
        let ws = Workspace::open(root, WorkspaceConfig::default()).unwrap();
        let mut j = PlanJournal {
            path: root.join("plan.json"),
            record: Record::new(OpKind::Plan),
        };
        let before = vec![Before {
            path: "a.txt".into(),
            entry: None,
            perm: None,
            standing: None,
        }];
        j.note(&ws, before).unwrap();
        j.step(&ws, StepWrites::Paths(vec!["a.txt".into()]), None)
            .unwrap();
        std::fs::write(root.join("a.txt"), "written\n").unwrap();
        j.step(&ws, StepWrites::Nothing, None).unwrap();
        let back = Record::read(&root.join("plan.json")).unwrap();
        assert!(back.writing.is_empty() && !back.writing_all);
        let (_, after) = back.files[0].states().unwrap();
        assert_eq!(after, blob(&repo, b"written\n"));
        j.step(&ws, StepWrites::Anywhere, None).unwrap();
        assert!(Record::read(&root.join("plan.json")).unwrap().writing_all);
        j.close().unwrap();
        assert!(!root.join("plan.json").exists());
    }
}
