//! Which files a list of touched paths covers, what git and the work tree hold for each, and
//! whether pai may record it. Everything here costs in proportion to the paths given (and the
//! directories among them), never to the size of the repository.

use std::collections::BTreeSet;
use std::path::Path;

use git2::{AttrCheckFlags, Index, ObjectType, Oid, Repository, Tree};

use super::error::{Context, HistoryError};
use super::paths;
use super::tree_edit::Change;
use super::worktree::{WorkEntry, WorkTree};

/// Git mode of a regular file.
pub(crate) const MODE_FILE: i32 = 0o100644;
/// Git mode of an executable file.
pub(crate) const MODE_EXEC: i32 = 0o100755;

/// A blob as git records a file: its id and mode.
pub(crate) type Entry = (Oid, i32);

/// The blob entry at `path` in `tree`, if it is a regular or executable file. Symlinks and
/// submodules are reported as `Err(())`: pai does not record them.
pub(crate) fn tree_file(tree: Option<&Tree<'_>>, path: &str) -> Result<Option<Entry>, ()> {
    let Some(tree) = tree else { return Ok(None) };
    match tree.get_path(Path::new(path)) {
        Ok(entry) => match entry.filemode() {
            MODE_FILE | MODE_EXEC => Ok(Some((entry.id(), entry.filemode()))),
            _ if entry.kind() == Some(ObjectType::Tree) => Ok(None),
            _ => Err(()),
        },
        Err(_) => Ok(None),
    }
}

/// The stage-0 index entry at `path`, if any.
pub(crate) fn index_file(index: &Index, path: &str) -> Option<Entry> {
    index
        .get_path(Path::new(path), 0)
        .map(|e| (e.id, e.mode as i32))
}

/// A file in the work tree, hashed the way git would store it (raw bytes, no filters).
pub(crate) struct WorkFile {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Its git mode.
    pub mode: i32,
    /// The blob id these bytes would have.
    pub id: Oid,
}

/// What the work tree holds at `path` as a file, `None` when there is no file there.
/// `Err(())` for something pai does not record (socket, device, ...).
pub(crate) fn work_file(
    wt: &dyn WorkTree,
    path: &str,
) -> Result<Result<Option<WorkFile>, ()>, HistoryError> {
    let entry = wt.read(path).map_err(|source| HistoryError::WorkTree {
        action: "read",
        path: path.to_string(),
        source,
    })?;
    Ok(match entry {
        WorkEntry::File { bytes, executable } => {
            let id =
                Oid::hash_object(ObjectType::Blob, &bytes).ctx(|| format!("cannot hash {path}"))?;
            let mode = if executable { MODE_EXEC } else { MODE_FILE };
            Ok(Some(WorkFile { bytes, mode, id }))
        }
        WorkEntry::Absent | WorkEntry::Dir(_) => Ok(None),
        WorkEntry::Other => Err(()),
    })
}

/// The entry a work file would become.
pub(crate) fn entry_of(file: Option<&WorkFile>) -> Option<Entry> {
    file.map(|f| (f.id, f.mode))
}

/// The change that makes a tree hold `entry` at a path.
pub(crate) fn change_to(entry: Option<Entry>) -> Change {
    match entry {
        Some((id, mode)) => Change::Blob { id, mode },
        None => Change::Remove,
    }
}

/// How git and pai treat one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// On the workspace deny-list: never recorded, never copied.
    Denied,
    /// Known to git (in the base tree or the index).
    Tracked,
    /// Unknown to git and not ignored.
    Untracked,
    /// Unknown to git and ignored: never recorded, copied to the trash.
    Ignored,
    /// Marked `filter=lfs`: left out of commits with a warning, copied to the trash.
    Lfs,
}

/// Classify `path` against the base tree, the index and the ignore and attribute rules.
pub(crate) fn classify(
    repo: &Repository,
    wt: &dyn WorkTree,
    tree: Option<&Tree<'_>>,
    index: &Index,
    path: &str,
) -> Class {
    if wt.is_denied(path) {
        return Class::Denied;
    }
    let attr = repo
        .get_attr(Path::new(path), "filter", AttrCheckFlags::FILE_THEN_INDEX)
        .ok()
        .flatten();
    if attr == Some("lfs") {
        return Class::Lfs;
    }
    let known = index_file(index, path).is_some()
        || tree.is_some_and(|t| t.get_path(Path::new(path)).is_ok());
    if known {
        Class::Tracked
    } else if repo.is_path_ignored(Path::new(path)).unwrap_or(false) {
        Class::Ignored
    } else {
        Class::Untracked
    }
}

/// Every file path `paths` covers: the paths themselves, and for directories every file below
/// them in the base tree, the index or the work tree. Deny-listed entries of work-tree
/// directories are not descended into.
pub(crate) fn expand(
    repo: &Repository,
    wt: &dyn WorkTree,
    tree: Option<&Tree<'_>>,
    index: &Index,
    paths: &[String],
) -> Result<BTreeSet<String>, HistoryError> {
    let mut out = BTreeSet::new();
    for raw in paths {
        let path = paths::normalize(raw)?;
        if wt.is_denied(&path) {
            out.insert(path);
            continue;
        }
        expand_tree(repo, tree, &path, &mut out)?;
        expand_index(index, &path, &mut out);
        expand_work(wt, &path, &mut out)?;
    }
    Ok(out)
}

fn expand_tree(
    repo: &Repository,
    tree: Option<&Tree<'_>>,
    path: &str,
    out: &mut BTreeSet<String>,
) -> Result<(), HistoryError> {
    let Some(tree) = tree else { return Ok(()) };
    let Ok(entry) = tree.get_path(Path::new(path)) else {
        return Ok(());
    };
    if entry.kind() != Some(ObjectType::Tree) {
        out.insert(path.to_string());
        return Ok(());
    }
    let sub = repo
        .find_tree(entry.id())
        .ctx(|| format!("cannot read the tree of {path}"))?;
    sub.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
        if e.kind() == Some(ObjectType::Blob)
            && let Ok(name) = e.name()
        {
            out.insert(format!("{path}/{dir}{name}"));
        }
        git2::TreeWalkResult::Ok
    })
    .ctx(|| format!("cannot list the tree of {path}"))?;
    Ok(())
}

fn expand_index(index: &Index, path: &str, out: &mut BTreeSet<String>) {
    if index.get_path(Path::new(path), 0).is_some() {
        out.insert(path.to_string());
    }
    let prefix = format!("{path}/");
    let Ok(start) = index.find_prefix(prefix.as_str()) else {
        return;
    };
    let mut n = start;
    while let Some(entry) = index.get(n) {
        if !entry.path.starts_with(prefix.as_bytes()) {
            break;
        }
        if let Ok(p) = String::from_utf8(entry.path) {
            out.insert(p);
        }
        n += 1;
    }
}

fn expand_work(
    wt: &dyn WorkTree,
    path: &str,
    out: &mut BTreeSet<String>,
) -> Result<(), HistoryError> {
    let mut stack = vec![path.to_string()];
    while let Some(p) = stack.pop() {
        let entry = wt.read(&p).map_err(|source| HistoryError::WorkTree {
            action: "read",
            path: p.clone(),
            source,
        })?;
        match entry {
            WorkEntry::Dir(names) => {
                // A nested repository (submodule or not) is not ours to record.
                if p != path && names.iter().any(|n| n == ".git") {
                    continue;
                }
                for name in names {
                    let child = paths::join(&p, &name);
                    if !wt.is_denied(&child) && !name.eq_ignore_ascii_case(".git") {
                        stack.push(child);
                    }
                }
            }
            _ => {
                out.insert(p);
            }
        }
    }
    Ok(())
}
