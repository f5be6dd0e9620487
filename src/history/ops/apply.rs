//! Carry out a record's moves, forwards (finish the operation) or backwards (roll it back).
//! Each thing is brought to its target state only from the other state: a file, ref or index
//! entry found in neither (the user changed it after the crash) is left as found and named.
//! The order is the operations' own: pai's state files (copies kept), removals, writes, refs
//! set, worktrees (a new one's branch is set first), HEAD, refs deleted, index.

use std::collections::BTreeMap;

use git2::{Oid, Repository};

use super::super::error::{Context as _, HistoryError};
pub(crate) use super::direction::{Applied, Direction};
use super::record::{FileState, Record};
use super::state_files;
use super::worktree;
use crate::history::git::names::{self, Head};
use crate::history::index::{self, LockedIndex};
use crate::history::ops::scope::{self, Entry, MODE_EXEC, WorkFile};
use crate::history::ops::work_tree::{WorkEntry, WorkTree};

/// Carry out `record` in `dir`.
pub(crate) fn apply(
    repo: &Repository,
    wt: &dyn WorkTree,
    record: &Record,
    dir: Direction,
) -> Result<Applied, HistoryError> {
    apply_holding(repo, wt, record, dir, None)
}

/// [`apply`], with git's index already locked and read by the caller (`held`): the live
/// operation checked its entries under that lock, so the entries it checked are the ones
/// rewritten.
pub(crate) fn apply_holding(
    repo: &Repository,
    wt: &dyn WorkTree,
    record: &Record,
    dir: Direction,
    held: Option<LockedIndex>,
) -> Result<Applied, HistoryError> {
    let mut out = Applied::default();
    state_files::apply(Some(repo), record, dir, &mut out)?;
    files(repo, wt, record, dir, false, &mut out)?;
    files(repo, wt, record, dir, true, &mut out)?;
    refs(repo, record, dir, true, &mut out)?;
    worktree::apply(repo, record, dir, &mut out)?;
    head(repo, record, dir, &mut out)?;
    refs(repo, record, dir, false, &mut out)?;
    index(repo, record, dir, held, &mut out)?;
    Ok(out)
}

/// Whether the work file `file` (with permission bits `perm`) is in `state` (`None`: absent).
fn is_in(state: Option<&FileState>, file: Option<&WorkFile>, perm: Option<u32>) -> bool {
    match (state, file) {
        (None, None) => true,
        (Some(s), Some(f)) => s.holds(f, perm),
        _ => false,
    }
}

/// The work-tree files whose target is a file (`writes`) or absent (`!writes`).
fn files(
    repo: &Repository,
    wt: &dyn WorkTree,
    record: &Record,
    dir: Direction,
    writes: bool,
    out: &mut Applied,
) -> Result<(), HistoryError> {
    for m in &record.files {
        let (old, new) = m.file_states()?;
        let (from, to) = dir.pick(old, new);
        if to.is_some() != writes {
            continue;
        }
        let Ok(file) = scope::work_file(wt, &m.path)? else {
            out.kept.push(m.path.clone());
            continue;
        };
        let perm = file.as_ref().and_then(|_| wt.permissions(&m.path));
        if is_in(to.as_ref(), file.as_ref(), perm) {
            if to.is_none() {
                // Removed before the crash, maybe not the folders it left empty.
                tidy_folders(wt, record, &m.path);
            }
            continue;
        }
        if !is_in(from.as_ref(), file.as_ref(), perm) {
            out.kept.push(m.path.clone());
            continue;
        }
        let done = match to {
            Some(state) => {
                let blob = repo
                    .find_blob(state.id)
                    .ctx(|| format!("cannot read {} from git", m.path))?;
                match state.perm {
                    Some(perm) => wt.write_with_mode(&m.path, blob.content(), perm),
                    None => wt.write(&m.path, blob.content(), state.mode == MODE_EXEC),
                }
            }
            None => wt.remove_up_to(&m.path, &|dir| record.kept_dirs.iter().any(|k| k == dir)),
        };
        done.map_err(|source| HistoryError::WorkTree {
            action: if writes { "write" } else { "remove" },
            path: m.path.clone(),
            source,
        })?;
        out.changed += 1;
    }
    Ok(())
}

/// Remove the folders above the absent `path` that are left empty, as removing it would
/// have, up to a folder the record says stood before (the user's). Best effort: a folder
/// that cannot go is only left behind, and git does not see empty folders.
pub(crate) fn tidy_folders(wt: &dyn WorkTree, record: &Record, path: &str) {
    // From the deepest folder still standing: the walk up stops at the first one missing.
    let mut child = path;
    while let Some((parent, _)) = child.rsplit_once('/') {
        match wt.read(parent) {
            Ok(WorkEntry::Absent) => child = parent,
            Ok(WorkEntry::Dir(_)) => break,
            _ => return,
        }
    }
    let _ = wt.remove_up_to(child, &|dir| record.kept_dirs.iter().any(|k| k == dir));
}

/// The refs whose target exists (`set`) or is absent (`!set`).
fn refs(
    repo: &Repository,
    record: &Record,
    dir: Direction,
    set: bool,
    out: &mut Applied,
) -> Result<(), HistoryError> {
    for m in &record.refs {
        let (old, new) = m.states()?;
        let (from, to) = dir.pick(old, new);
        if to.is_some() != set {
            continue;
        }
        let now = names::target(repo, &m.name).ctx(|| format!("cannot read {}", m.name))?;
        if now == to {
            continue;
        }
        if now != from {
            out.kept.push(m.name.clone());
            continue;
        }
        set_ref(repo, &m.name, to, record)?;
        out.changed += 1;
    }
    Ok(())
}

fn set_ref(
    repo: &Repository,
    name: &str,
    to: Option<Oid>,
    record: &Record,
) -> Result<(), HistoryError> {
    let what = || format!("cannot move {name} while finishing {}", record.describe());
    let reflog = if record.reflog.is_empty() {
        format!("pai: {}", record.describe())
    } else {
        record.reflog.clone()
    };
    match to {
        Some(id) => repo
            .reference(name, id, true, &reflog)
            .map(|_| ())
            .ctx(what),
        None => match repo.find_reference(name) {
            Ok(mut r) => r.delete().ctx(what),
            Err(_) => Ok(()),
        },
    }
}

fn head(
    repo: &Repository,
    record: &Record,
    dir: Direction,
    out: &mut Applied,
) -> Result<(), HistoryError> {
    let Some(m) = &record.head else {
        return Ok(());
    };
    let (old, new) = m.states()?;
    let (from, to) = dir.pick(old, new);
    let now = names::head(repo).ctx(|| "cannot read HEAD".into())?;
    if now == to {
        return Ok(());
    }
    if now != from {
        out.kept.push("HEAD".into());
        return Ok(());
    }
    match &to {
        Head::Branch(name) => repo.set_head(name),
        Head::Detached(oid) => repo.set_head_detached(*oid),
    }
    .ctx(|| {
        format!(
            "cannot point HEAD back while finishing {}",
            record.describe()
        )
    })?;
    out.changed += 1;
    Ok(())
}

fn index(
    repo: &Repository,
    record: &Record,
    dir: Direction,
    held: Option<LockedIndex>,
    out: &mut Applied,
) -> Result<(), HistoryError> {
    if record.index.is_empty() {
        return Ok(());
    }
    let locked = match held {
        Some(locked) => locked,
        None => index::lock(repo.path())?,
    };
    let mut updates: BTreeMap<String, Option<Entry>> = BTreeMap::new();
    for m in &record.index {
        let (old, new) = m.states()?;
        let (from, to) = dir.pick(old, new);
        let now = locked.get(&m.path);
        if now == to {
            continue;
        }
        if now != from {
            out.kept.push(format!("{} (staged)", m.path));
            continue;
        }
        updates.insert(m.path.clone(), to);
    }
    out.changed += updates.len();
    if let Some(pending) = locked.stage(&updates)? {
        pending.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ops::record::{OpKind, Record};
    use crate::workspace::{Workspace, WorkspaceConfig};

    /// A repository with `a.txt` committed and staged as `one`, and the blob `two`.
    fn repo() -> (tempfile::TempDir, Repository, Oid, Oid, Oid) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(std::path::Path::new("a.txt")).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let commit = repo
            .commit(Some("HEAD"), &sig, &sig, "initial", &tree, &[])
            .unwrap();
        let one = repo.blob(b"one\n").unwrap();
        let two = repo.blob(b"two\n").unwrap();
        drop(tree);
        (dir, repo, commit, one, two)
    }

    fn record(commit: Oid, one: Oid, two: Oid) -> Record {
        let mut r = Record::new(OpKind::Undo);
        r.name("s1", 1);
        r.file("a.txt", Some((one, MODE_FILE)), Some((two, MODE_FILE)));
        r.file("new.txt", None, Some((two, MODE_FILE)));
        r.entry("a.txt", Some((one, MODE_FILE)), Some((two, MODE_FILE)));
        r.move_ref("refs/pai/undone/s1/1", None, Some(commit));
        r
    }

    use crate::history::ops::scope::MODE_FILE;

    #[test]
    fn forward_finishes_and_back_rolls_back_exactly() {
        let (dir, repo, commit, one, two) = repo();
        let ws = Workspace::open(dir.path(), WorkspaceConfig::default()).unwrap();
        let rec = record(commit, one, two);
        let done = apply(&repo, &ws, &rec, Direction::Forward).unwrap();
        assert!(done.kept.is_empty(), "{:?}", done.kept);
        assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"two\n");
        assert_eq!(std::fs::read(dir.path().join("new.txt")).unwrap(), b"two\n");
        let index = index::load_shared(&repo).unwrap();
        assert_eq!(index.get("a.txt"), Some((two, MODE_FILE)));
        assert_eq!(
            names::target(&repo, "refs/pai/undone/s1/1").unwrap(),
            Some(commit)
        );
        // Finishing twice changes nothing more.
        assert_eq!(
            apply(&repo, &ws, &rec, Direction::Forward).unwrap().changed,
            0
        );
        apply(&repo, &ws, &rec, Direction::Back).unwrap();
        assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"one\n");
        assert!(!dir.path().join("new.txt").exists());
        let index = index::load_shared(&repo).unwrap();
        assert_eq!(index.get("a.txt"), Some((one, MODE_FILE)));
        assert_eq!(names::target(&repo, "refs/pai/undone/s1/1").unwrap(), None);
    }

    #[test]
    fn a_file_in_neither_state_is_kept_and_named() {
        let (dir, repo, commit, one, two) = repo();
        let ws = Workspace::open(dir.path(), WorkspaceConfig::default()).unwrap();
        std::fs::write(
            dir.path().join("a.txt"),
            "the user's edit after the crash\n",
        )
        .unwrap();
        let done = apply(&repo, &ws, &record(commit, one, two), Direction::Forward).unwrap();
        assert_eq!(done.kept, ["a.txt"]);
        assert_eq!(
            std::fs::read(dir.path().join("a.txt")).unwrap(),
            b"the user's edit after the crash\n"
        );
        // The rest of the operation is finished all the same.
        assert_eq!(std::fs::read(dir.path().join("new.txt")).unwrap(), b"two\n");
    }

    /// A copy's permission bits are part of its state: written forward, back, and after a
    /// crash, and a file with the right bytes but other bits is in neither state.
    #[test]
    fn permission_bits_a_state_names_are_written_and_checked() {
        use crate::history::ops::record::FileState;
        use std::os::unix::fs::PermissionsExt as _;
        let (dir, repo, _, one, two) = repo();
        let ws = Workspace::open(dir.path(), WorkspaceConfig::default()).unwrap();
        let path = dir.path().join("secret.txt");
        std::fs::write(&path, "two\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let perm = || std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        let mut rec = Record::new(OpKind::Undo);
        let found = FileState {
            perm: Some(0o640),
            ..FileState::stored((two, MODE_FILE))
        };
        rec.work_file("secret.txt", Some(found), Some(FileState::copy(one, 0o600)));
        apply(&repo, &ws, &rec, Direction::Forward).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one\n");
        assert_eq!(perm(), 0o600);
        apply(&repo, &ws, &rec, Direction::Back).unwrap();
        assert_eq!(
            (std::fs::read(&path).unwrap(), perm()),
            (b"two\n".to_vec(), 0o640)
        );
        // The copy's bytes with other bits: not what the record wrote, so left and named.
        std::fs::write(&path, "one\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let done = apply(&repo, &ws, &rec, Direction::Back).unwrap();
        assert_eq!(done.kept, ["secret.txt"]);
        assert_eq!(perm(), 0o644);
    }
}
