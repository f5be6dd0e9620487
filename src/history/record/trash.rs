//! Trash copies: files git would not keep (ignored, untracked, `filter=lfs`) are copied to
//! `.pai_history/trash/<session>/<plan>/<path>` before a plan overwrites or removes them (a
//! copy the user can look at), and recorded in git's object store with the plan commit
//! (`Pai-Trash`): undo puts back only the recorded copies, never a file of the folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use crate::history::error::{Context, HistoryError};
use crate::history::git::store;
use crate::history::git::tree_edit::{self, Change};

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

/// The path components of the trash copy `dir/rel` below the state directory, where the
/// executor writes it (`ops::Record::copy`): unless a copy is already there, for the first
/// copy is the user's version and later ones would be the plan's own output, and through the
/// state directory, so a link planted anywhere on the way is refused, never followed.
pub(crate) fn copy_parts(root: &Path, dir: &Path, rel: &str) -> Result<Vec<String>, HistoryError> {
    state_components(root, dir, rel)
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
    let tree = copies_tree(
        repo,
        copies,
        left.map(|l| (crate::history::record::left::NAME, l)),
    )
    .ctx(what)?;
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
    crate::history::ops::scope::blobs(repo, &files, "", &mut |path, entry| {
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
    use crate::history::record::trash::*;

    #[test]
    fn first_copy_wins() {
        use crate::history::ops::{OpKind, Record, at_once};
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let repo = Repository::init(root.path()).unwrap();
        let dir = plan_dir(root.path(), "s", 1);
        let save = |bytes: &[u8], perm: u32| {
            let mut record = Record::new(OpKind::Prepare);
            let parts = copy_parts(root.path(), &dir, "a/b.txt").unwrap();
            record.copy(root.path(), parts, repo.blob(bytes).unwrap(), perm);
            at_once(&repo, None, &record).unwrap()
        };
        assert_eq!(save(b"user", 0o700).changed, 1);
        let again = save(b"agent", 0o644);
        assert_eq!(
            (again.changed, again.kept),
            (0, vec!["trash/s/1/a/b.txt".to_string()])
        );
        let copy = dir.join("a/b.txt");
        assert_eq!(std::fs::read(&copy).unwrap(), b"user");
        let perm = std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777;
        assert_eq!(perm, 0o700);
        assert!(!plan_dir(root.path(), "s", 2).exists());
    }
}
