//! The lock files an interrupted operation leaves: libgit2's `<ref>.lock`, `HEAD.lock` and
//! `packed-refs.lock`, and pai's own `index.lock`. Removed only for what the record says the
//! operation was writing, and only by a process holding the work-tree lock (so the process
//! that ran the operation is gone); any other lock is left for the user, named by
//! [`super::super::error`]'s lock message with the command that frees it.

use std::path::{Path, PathBuf};

use git2::Repository;

use super::super::error::{Context as _, HistoryError};
use super::record::Record;
use crate::history::index;

/// The lock files `record`'s operation may have left, whether or not they exist.
fn candidates(repo: &Repository, record: &Record) -> Vec<PathBuf> {
    let git_dir = repo.path();
    let common = repo.commondir();
    let mut out: Vec<PathBuf> = record
        .refs
        .iter()
        .map(|r| lock_of(&common.join(&r.name)))
        .collect();
    if !record.refs.is_empty() {
        out.push(common.join("packed-refs.lock"));
    }
    if record.head.is_some() || !record.refs.is_empty() {
        out.push(git_dir.join("HEAD.lock"));
    }
    // An intent (no moves yet) is written just before the operation takes the index lock.
    if !record.index.is_empty() || !record.has_moves() {
        out.push(lock_of(&index::index_path(git_dir)));
    }
    out
}

fn lock_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

/// Remove the locks `record`'s operation left; the caller holds the work-tree lock. The
/// names of the files removed.
pub(crate) fn remove_ours(repo: &Repository, record: &Record) -> Result<Vec<String>, HistoryError> {
    remove_all(candidates(repo, record))
}

/// Remove the lock files of the refs `names` (full names) that a process found dead left;
/// the caller knows it is gone (it holds what that process held). The names of the files
/// removed.
pub(crate) fn remove_ref_locks(
    repo: &Repository,
    names: &[String],
) -> Result<Vec<String>, HistoryError> {
    let common = repo.commondir();
    let locks: Vec<PathBuf> = names.iter().map(|n| lock_of(&common.join(n))).collect();
    remove_all(locks)
}

fn remove_all(locks: Vec<PathBuf>) -> Result<Vec<String>, HistoryError> {
    let mut removed = Vec::new();
    for lock in locks {
        match std::fs::remove_file(&lock) {
            Ok(()) => removed.push(
                lock.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).ctx(|| format!("cannot remove {}", lock.display())),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ops::record::OpKind;

    #[test]
    fn only_the_locks_the_record_names_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let git = repo.path().to_path_buf();
        std::fs::create_dir_all(git.join("refs/heads/pai")).unwrap();
        for lock in [
            "refs/heads/pai/s1.lock",
            "index.lock",
            "refs/heads/main.lock",
        ] {
            std::fs::write(git.join(lock), "").unwrap();
        }
        let mut rec = Record::new(OpKind::Undo);
        let id = git2::Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        rec.move_ref("refs/heads/pai/s1", Some(id), None);
        rec.entry("a.txt", None, Some((id, 0o100644)));
        let removed = remove_ours(&repo, &rec).unwrap();
        assert_eq!(removed, ["s1.lock", "index.lock"]);
        assert!(git.join("refs/heads/main.lock").exists());
    }
}
