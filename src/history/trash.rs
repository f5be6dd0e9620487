//! Trash copies: files git would not keep (ignored, untracked, `filter=lfs`) are copied to
//! `.pai_history/trash/<session>/<plan>/<path>` before a plan overwrites or removes them (a
//! copy the user can look at), and recorded in git's object store with the plan commit
//! (`Pai-Trash`): undo puts back only the recorded copies, never a file of the folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::error::{Context, HistoryError};
use super::tree_edit::{self, Change};
use crate::history::git::store;

/// Git file modes of trash copies.
const MODE_FILE: i32 = 0o100644;
const MODE_EXEC: i32 = 0o100755;

/// The trash directory of one plan.
pub(crate) fn plan_dir(root: &Path, session: &str, plan: u32) -> PathBuf {
    root.join(store::DIR)
        .join("trash")
        .join(session)
        .join(plan.to_string())
}

/// The trash directory of a session; its existence reserves the session id.
pub(crate) fn session_dir(root: &Path, session: &str) -> PathBuf {
    root.join(store::DIR).join("trash").join(session)
}

/// The components of `dir/rel` below `.pai_history/`: trash paths always live there.
fn state_components(root: &Path, dir: &Path, rel: &str) -> Result<Vec<String>, HistoryError> {
    let base = root.join(store::DIR);
    let inner = dir.strip_prefix(&base).map_err(|_| HistoryError::Io {
        context: format!("{} is not under {}", dir.display(), base.display()),
        source: std::io::Error::other("trash path outside the state directory"),
    })?;
    let mut out: Vec<String> = inner
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    out.extend(rel.split('/').filter(|c| !c.is_empty()).map(str::to_string));
    Ok(out)
}

/// Copy `bytes` to `dir/rel` unless a copy is already there: the first copy is the user's
/// version, later ones would be the plan's own output. Written through the state directory:
/// a link planted anywhere on the way is refused, never followed.
pub(crate) fn save(
    root: &Path,
    dir: &Path,
    rel: &str,
    bytes: &[u8],
    mode: u32,
) -> Result<bool, HistoryError> {
    let state = store::open(root)?;
    let parts = state_components(root, dir, rel)?;
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let mode = mode & 0o7777;
    state
        .write_new(&parts, bytes, mode)
        .ctx(|| format!("cannot write trash copy {}", dir.join(rel).display()))
}

/// Record a plan's trash copies in the object store: a tree holding `files` (the copies, by
/// path) and `modes` (one `<octal permission bits> <path>` line per copy, as git keeps only
/// the execute bit). Its id goes into the plan commit (`Pai-Trash`), and the commit's record
/// keeps it reachable at `refs/pai/trash/<session>/<plan>`. `None` when the plan saved
/// nothing.
pub(crate) fn record(
    repo: &Repository,
    plan: u32,
    copies: &BTreeMap<String, (Oid, u32)>,
    left: Option<Oid>,
) -> Result<Option<Oid>, HistoryError> {
    if copies.is_empty() {
        return Ok(None);
    }
    let what = || format!("cannot record the trash copies of plan {plan}");
    let tree = copies_tree(repo, copies, left.map(|l| (super::left::NAME, l))).ctx(what)?;
    Ok(Some(tree))
}

/// The tree [`record`] writes for `copies` (`files` and `modes`), with `extra` (a name and a
/// blob) beside them when given.
pub(crate) fn copies_tree(
    repo: &Repository,
    copies: &BTreeMap<String, (Oid, u32)>,
    extra: Option<(&str, Oid)>,
) -> Result<Oid, git2::Error> {
    let changes: BTreeMap<String, Change> = copies
        .iter()
        .map(|(path, (id, perm))| {
            let mode = if perm & 0o111 != 0 {
                MODE_EXEC
            } else {
                MODE_FILE
            };
            (path.clone(), Change::Blob { id: *id, mode })
        })
        .collect();
    let files = tree_edit::edit_tree(repo, None, &changes)?;
    let modes: String = copies
        .iter()
        .filter(|(path, _)| !path.contains('\n'))
        .map(|(path, (_, perm))| format!("{:o} {path}\n", perm & 0o7777))
        .collect();
    let modes = repo.blob(modes.as_bytes())?;
    let mut top = repo.treebuilder(None)?;
    top.insert("files", files, 0o040000)?;
    top.insert("modes", modes, MODE_FILE)?;
    if let Some((name, blob)) = extra {
        top.insert(name, blob, MODE_FILE)?;
    }
    top.write()
}

/// The trash copies a plan commit recorded (`Pai-Trash`): path, bytes, permission bits. Read
/// from the object store, so what undo puts back is exactly what pai saved, whatever happened
/// to the copies in the trash folder since.
pub(crate) fn recorded(
    repo: &Repository,
    tree: Oid,
) -> Result<Vec<(String, Vec<u8>, u32)>, HistoryError> {
    let what = || format!("cannot read the recorded trash copies (tree {tree})");
    let top = repo.find_tree(tree).ctx(what)?;
    let mut perms: BTreeMap<String, u32> = BTreeMap::new();
    if let Some(entry) = top.get_name("modes") {
        let blob = repo.find_blob(entry.id()).ctx(what)?;
        for line in String::from_utf8_lossy(blob.content()).lines() {
            if let Some((mode, path)) = line.split_once(' ')
                && let Ok(mode) = u32::from_str_radix(mode, 8)
            {
                perms.insert(path.to_string(), mode & 0o7777);
            }
        }
    }
    let Some(files) = top.get_name("files") else {
        return Ok(Vec::new());
    };
    let files = repo.find_tree(files.id()).ctx(what)?;
    let mut out = Vec::new();
    super::scope::blobs(repo, &files, "", &mut |path, entry| {
        let fallback = if entry.filemode() == MODE_EXEC {
            0o755
        } else {
            0o644
        };
        let blob = repo.find_blob(entry.id())?;
        let perm = perms.get(&path).copied().unwrap_or(fallback);
        out.push((path, blob.content().to_vec(), perm));
        Ok(())
    })
    .ctx(what)?;
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_copy_wins() {
        let root = tempfile::tempdir().unwrap();
        let dir = plan_dir(root.path(), "s", 1);
        assert!(save(root.path(), &dir, "a/b.txt", b"user", 0o700).unwrap());
        assert!(!save(root.path(), &dir, "a/b.txt", b"agent", 0o644).unwrap());
        assert_eq!(std::fs::read(dir.join("a/b.txt")).unwrap(), b"user");
        assert!(!plan_dir(root.path(), "s", 2).exists());
    }
}
