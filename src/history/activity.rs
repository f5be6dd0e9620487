//! What the user has been doing, as git records it, for the repository map's ranking: the
//! files recent commits changed, and the blob each tracked file has in the index (a file whose
//! content differs from it has uncommitted changes). Read-only, and never an error: a project
//! without git, or a repository pai cannot read, simply has no activity.

use std::collections::HashMap;
use std::path::Path;

use super::commit_files::{self, Changed};
use super::repo::{self, Found};
use super::{index_file, index_stream};

/// Commits read for "recently changed".
pub const RECENT_COMMITS: usize = 100;

/// A commit changing more files than this (an import, a reformat, vendored code, a
/// repository's first commit) says nothing about what the user is working on: it is left out
/// of "recently changed", which would otherwise name every file of a big project.
pub const BULK_COMMIT_FILES: usize = 1_000;

/// The HEAD commit of the project's repository (`None` outside git or on an unborn branch).
pub fn head_commit(root: &Path) -> Option<String> {
    let Ok(Found::Repo(hr)) = repo::find(root) else {
        return None;
    };
    if hr.private {
        return None;
    }
    let head = hr.repo.head().ok()?.target()?;
    Some(head.to_string())
}

/// The files the last `max` first-parent commits on HEAD changed, with how many of those
/// commits changed each. Merge commits are skipped (their changes are the branches'), and so
/// are bulk commits ([`BULK_COMMIT_FILES`]).
pub fn recently_changed(root: &Path, max: usize) -> Vec<(String, u32)> {
    let Ok(Found::Repo(hr)) = repo::find(root) else {
        return Vec::new();
    };
    if hr.private {
        return Vec::new();
    }
    let repo = &hr.repo;
    let mut counts: HashMap<String, u32> = HashMap::new();
    let Ok(mut walk) = repo.revwalk() else {
        return Vec::new();
    };
    if walk.push_head().is_err() || walk.simplify_first_parent().is_err() {
        return Vec::new();
    }
    for oid in walk.take(max).flatten() {
        let Ok(commit) = repo.find_commit(oid) else {
            continue;
        };
        if commit.parent_count() > 1 {
            continue;
        }
        // The diff stops once a commit is bulk: a repository's first commit (after an
        // undo, HEAD may well be it) is not read through all its files.
        let parent = commit.parent(0).ok().map(|p| p.tree_id());
        let Some(Changed::Paths(paths)) =
            commit_files::changed(repo, parent, commit.tree_id(), BULK_COMMIT_FILES)
        else {
            continue;
        };
        for p in paths {
            if let Ok(p) = String::from_utf8(p) {
                *counts.entry(p).or_default() += 1;
            }
        }
    }
    counts.into_iter().collect()
}

/// Each tracked file's blob id in the index (stage 0), as raw bytes.
pub fn index_blobs(root: &Path) -> Vec<(String, [u8; 20])> {
    let Ok(Found::Repo(hr)) = repo::find(root) else {
        return Vec::new();
    };
    if hr.private {
        return Vec::new();
    }
    // Streamed: the map holds what this returns while it is built, and needs nothing else
    // of the index (the whole file and its table of entries are 12 MB at 100,000 files).
    index_stream::stage0_blobs(&index_file::index_path(hr.repo.path())).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "T")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "T")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    #[test]
    fn index_blobs_are_what_git_stages() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a b.py"), "a = 1\n").unwrap();
        std::fs::write(root.join("README"), "hello\n").unwrap();
        git(root, &["add", "-A"]);
        let out = Command::new("git")
            .args(["ls-files", "-s", "-z"])
            .current_dir(root)
            .output()
            .unwrap();
        // "<mode> <id> <stage>\t<path>\0" per entry.
        let expected: Vec<(String, String)> = String::from_utf8(out.stdout)
            .unwrap()
            .split('\0')
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (meta, path) = l.split_once('\t').unwrap();
                (
                    path.to_string(),
                    meta.split(' ').nth(1).unwrap().to_string(),
                )
            })
            .collect();
        let got: Vec<(String, String)> = index_blobs(root)
            .into_iter()
            .map(|(p, id)| (p, id.iter().map(|b| format!("{b:02x}")).collect()))
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn bulk_commits_are_not_recent_work() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir(root.join("vendor")).unwrap();
        for i in 0..=BULK_COMMIT_FILES {
            std::fs::write(root.join(format!("vendor/f{i}.c")), format!("{i}\n")).unwrap();
        }
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "import"]);
        std::fs::write(root.join("vendor/f1.c"), "changed\n").unwrap();
        std::fs::write(root.join("app.py"), "x = 1\n").unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "work"]);
        let mut recent = recently_changed(root, RECENT_COMMITS);
        recent.sort();
        assert_eq!(
            recent,
            [("app.py".to_string(), 1), ("vendor/f1.c".to_string(), 1)]
        );
    }
}
