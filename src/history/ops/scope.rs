//! Which files a list of touched paths covers, what git and the work tree hold for each, and
//! whether pai may record it. Everything here costs in proportion to the paths given (and the
//! directories among them), never to the size of the repository.

use std::collections::BTreeSet;

use git2::{AttrCheckFlags, ObjectType, Oid, Repository, Tree};

use crate::history::error::{Context, HistoryError};
use crate::history::git::paths;
use crate::history::git::tree_edit::Change;
use crate::history::index::IndexFile;
use crate::history::ops::work_tree::{WorkEntry, WorkTree};
use crate::rawname;

/// One path a commit changed: what it held before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathChange {
    pub path: String,
    pub before: Option<Entry>,
    pub after: Option<Entry>,
}

/// Git mode of a regular file.
pub(crate) const MODE_FILE: i32 = 0o100644;
/// Git mode of an executable file.
pub(crate) const MODE_EXEC: i32 = 0o100755;

pub(crate) use crate::history::index::Entry;

/// The blob entry at `path` in `tree`, if it is a regular or executable file. Symlinks and
/// submodules are reported as `Err(())`: pai does not record them.
pub(crate) fn tree_file(tree: Option<&Tree<'_>>, path: &str) -> Result<Option<Entry>, ()> {
    let Some(tree) = tree else { return Ok(None) };
    match tree.get_path(&rawname::path(path)) {
        Ok(entry) => match entry.filemode() {
            MODE_FILE | MODE_EXEC => Ok(Some((entry.id(), entry.filemode()))),
            _ if entry.kind() == Some(ObjectType::Tree) => Ok(None),
            _ => Err(()),
        },
        Err(_) => Ok(None),
    }
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
    let entry = read(wt, path)?;
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

/// Read through the work tree; a path under a file (the plan replaced a directory by a
/// file, or the reverse) is simply absent.
fn read(wt: &dyn WorkTree, path: &str) -> Result<WorkEntry, HistoryError> {
    match wt.read(path) {
        Ok(entry) => Ok(entry),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Ok(WorkEntry::Absent),
        Err(source) => Err(HistoryError::WorkTree {
            action: "read",
            path: path.to_string(),
            source,
        }),
    }
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
    /// Marked with another filter driver (`filter=<driver>`), which only git itself can run:
    /// committing the work-tree bytes would store unfiltered content. Plans may not write it;
    /// a command's change to it is left out with a warning and copied to the trash.
    Filtered,
}

/// Classify `path` against the base tree, the index and the ignore and attribute rules.
pub(crate) fn classify(
    repo: &Repository,
    wt: &dyn WorkTree,
    tree: Option<&Tree<'_>>,
    index: &IndexFile,
    path: &str,
) -> Class {
    if wt.is_denied(path) {
        return Class::Denied;
    }
    match filter_attr(repo, path) {
        Some("lfs") => return Class::Lfs,
        // `-filter` / `filter=false` unset it; any other value names a driver.
        Some(driver) if !driver.is_empty() && driver != "false" && driver != "true" => {
            return Class::Filtered;
        }
        _ => {}
    }
    let known =
        index.get(path).is_some() || tree.is_some_and(|t| t.get_path(&rawname::path(path)).is_ok());
    if known {
        Class::Tracked
    } else if repo.is_path_ignored(rawname::path(path)).unwrap_or(false) {
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
    index: &IndexFile,
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
    let Ok(entry) = tree.get_path(&rawname::path(path)) else {
        return Ok(());
    };
    if entry.kind() != Some(ObjectType::Tree) {
        out.insert(path.to_string());
        return Ok(());
    }
    let sub = repo
        .find_tree(entry.id())
        .ctx(|| format!("cannot read the tree of {path}"))?;
    blobs(repo, &sub, path, &mut |p, _| {
        out.insert(p);
        Ok(())
    })
    .ctx(|| format!("cannot list the tree of {path}"))?;
    Ok(())
}

/// Call `f` with the path (below `prefix`) and entry of every blob under `tree`. git2's own
/// tree walk gives up on a directory whose name is not UTF-8; names here are read as bytes and
/// spelled as [`rawname`] does.
pub(crate) fn blobs(
    repo: &Repository,
    tree: &Tree<'_>,
    prefix: &str,
    f: &mut dyn FnMut(String, &git2::TreeEntry<'_>) -> Result<(), git2::Error>,
) -> Result<(), git2::Error> {
    for entry in tree.iter() {
        let path = paths::join(prefix, &rawname::encode(entry.name_bytes()));
        match entry.kind() {
            Some(ObjectType::Blob) => f(path, &entry)?,
            Some(ObjectType::Tree) => blobs(repo, &repo.find_tree(entry.id())?, &path, f)?,
            _ => {}
        }
    }
    Ok(())
}

fn expand_index(index: &IndexFile, path: &str, out: &mut BTreeSet<String>) {
    if index.get(path).is_some() {
        out.insert(path.to_string());
    }
    out.extend(index.under(path));
}

fn expand_work(
    wt: &dyn WorkTree,
    path: &str,
    out: &mut BTreeSet<String>,
) -> Result<(), HistoryError> {
    let mut stack = vec![path.to_string()];
    while let Some(p) = stack.pop() {
        let entry = read(wt, &p)?;
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

/// The `filter` attribute `.gitattributes` gives `path`, when set.
fn filter_attr<'r>(repo: &'r Repository, path: &str) -> Option<&'r str> {
    repo.get_attr(
        &rawname::path(path),
        "filter",
        AttrCheckFlags::FILE_THEN_INDEX,
    )
    .ok()
    .flatten()
}

/// The filter driver named for `path` by `.gitattributes`, when it is one pai cannot run.
pub(crate) fn filter_driver(repo: &Repository, path: &str) -> Option<String> {
    let attr = filter_attr(repo, path)?;
    (!attr.is_empty() && !matches!(attr, "lfs" | "false" | "true")).then(|| attr.to_string())
}
