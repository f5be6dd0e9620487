//! Trash copies: files git would not keep (ignored, untracked, `filter=lfs`) are copied to
//! `.pai_history/trash/<session>/<plan>/<path>` before a plan overwrites or removes them, and
//! undo puts the ones git could not restore back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use crate::workspace::StateDir;

use super::error::{Context, HistoryError};
use super::tree_edit::{self, Change};
use super::{names, store};

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

/// The components (under `.pai_history/`) of the list of files undo brought back from the
/// trash where nothing stood: redo removes them again.
fn absent_list(session: &str, plan: u32) -> [String; 3] {
    [
        "trash".into(),
        session.to_string(),
        format!("{plan}.absent"),
    ]
}

/// Record the files undo restored from the trash into an empty place (one path per line).
pub(crate) fn save_absent(
    root: &Path,
    session: &str,
    plan: u32,
    paths: &[String],
) -> Result<(), HistoryError> {
    let state = store::open(root)?;
    let parts = absent_list(session, plan);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    if paths.is_empty() {
        return state
            .remove(&parts)
            .ctx(|| "cannot update the trash list".into());
    }
    let text: String = paths
        .iter()
        .filter(|p| !p.contains('\n'))
        .map(|p| format!("{p}\n"))
        .collect();
    state
        .replace(&parts, text.as_bytes(), 0o600)
        .ctx(|| "cannot record the files undo restored".into())
}

/// The files [`save_absent`] recorded for `plan` (and forget the list).
pub(crate) fn take_absent(root: &Path, session: &str, plan: u32) -> Vec<String> {
    let Ok(state) = StateDir::open(root, false) else {
        return Vec::new();
    };
    let parts = absent_list(session, plan);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let text = state.read(&parts).ok().flatten().unwrap_or_default();
    let _ = state.remove(&parts);
    String::from_utf8_lossy(&text)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where undo keeps what it replaced when restoring a trash copy, so redo can put it back.
pub(crate) fn undone_dir(root: &Path, session: &str, plan: u32) -> PathBuf {
    root.join(store::DIR)
        .join("trash")
        .join(session)
        .join(format!("{plan}.undone"))
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

/// Remove the trash folder `dir` (under `.pai_history/`) without following any link in it.
pub(crate) fn remove(root: &Path, dir: &Path) -> Result<(), HistoryError> {
    let state = match StateDir::open(root, false) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).ctx(|| format!("cannot open {}", root.join(store::DIR).display())),
    };
    let parts = state_components(root, dir, "")?;
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    state
        .remove_tree(&parts)
        .ctx(|| format!("cannot remove {}", dir.display()))
}

/// Every regular file under `dir`, as `/`-separated paths relative to it, with its bytes and
/// permission bits. An absent directory holds nothing. Walked without following links: a link
/// or special file planted in the trash is refused, so undo never copies in what it points at.
pub(crate) fn list(root: &Path, dir: &Path) -> Result<Vec<(String, Vec<u8>, u32)>, HistoryError> {
    let state = match StateDir::open(root, false) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).ctx(|| format!("cannot open {}", root.join(store::DIR).display())),
    };
    let base = state_components(root, dir, "")?;
    let mut out = Vec::new();
    let mut stack = vec![(base, String::new())];
    while let Some((parts, rel)) = stack.pop() {
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let entries = match state.entries(&refs) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).ctx(|| format!("cannot list {}", dir.join(&rel).display())),
        };
        for (name, is_dir) in entries {
            let child_rel = super::paths::join(&rel, &name);
            let mut child = parts.clone();
            child.push(name);
            if is_dir {
                stack.push((child, child_rel));
            } else {
                let refs: Vec<&str> = child.iter().map(String::as_str).collect();
                let (bytes, mode) = state
                    .read_with_mode(&refs)
                    .ctx(|| format!("cannot read trash copy {}", dir.join(&child_rel).display()))?;
                out.push((child_rel, bytes, mode & 0o7777));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Record a plan's trash copies in the object store, kept reachable at
/// `refs/pai/trash/<session>/<plan>`: a tree holding `files` (the copies, by path) and `modes`
/// (one `<octal permission bits> <path>` line per copy, as git keeps only the execute bit). Its
/// id goes into the plan commit (`Pai-Trash`). `None` when the plan saved nothing.
pub(crate) fn record(
    repo: &Repository,
    session: &str,
    plan: u32,
    copies: &BTreeMap<String, (Oid, u32)>,
) -> Result<Option<Oid>, HistoryError> {
    if copies.is_empty() {
        return Ok(None);
    }
    let what = || format!("cannot record the trash copies of plan {plan}");
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
    let files = tree_edit::edit_tree(repo, None, &changes).ctx(what)?;
    let modes: String = copies
        .iter()
        .filter(|(path, _)| !path.contains('\n'))
        .map(|(path, (_, perm))| format!("{:o} {path}\n", perm & 0o7777))
        .collect();
    let modes = repo.blob(modes.as_bytes()).ctx(what)?;
    let mut top = repo.treebuilder(None).ctx(what)?;
    top.insert("files", files, 0o040000).ctx(what)?;
    top.insert("modes", modes, MODE_FILE).ctx(what)?;
    let tree = top.write().ctx(what)?;
    repo.reference(
        &names::trash_ref(session, plan),
        tree,
        true,
        "pai: trash copies",
    )
    .ctx(what)?;
    Ok(Some(tree))
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
    fn first_copy_wins_and_lists_back() {
        let root = tempfile::tempdir().unwrap();
        let dir = plan_dir(root.path(), "s", 1);
        assert!(save(root.path(), &dir, "a/b.txt", b"user", 0o700).unwrap());
        assert!(!save(root.path(), &dir, "a/b.txt", b"agent", 0o644).unwrap());
        assert_eq!(
            list(root.path(), &dir).unwrap(),
            vec![("a/b.txt".to_string(), b"user".to_vec(), 0o700)]
        );
        assert!(
            list(root.path(), &plan_dir(root.path(), "s", 2))
                .unwrap()
                .is_empty()
        );
    }
}
