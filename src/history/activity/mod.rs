//! What the user has been doing, as git records it, for the repository map's ranking: the
//! files recent commits changed. Read-only, and never an error: a project
//! without git, or a repository pai cannot read, simply has no activity.

pub(super) mod tracked;

use std::collections::HashMap;
use std::path::Path;

use crate::history::git::repo::{self, Found};
use crate::history::plan::commit_files::{self, Changed};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::index::test_git::git;

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
