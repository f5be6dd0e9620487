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
/// are bulk commits ([`BULK_COMMIT_FILES`]) and commits whose trees alone would grow the
/// resident memory by more than [`RESIDENT_GROWTH`].
pub fn recently_changed(root: &Path, max: usize) -> Vec<(String, u32)> {
    read_recent(root, max, RESIDENT_GROWTH)
}

/// [`recently_changed`], reopening the repository whenever the resident memory has grown by
/// more than `bound` since it was opened.
fn read_recent(root: &Path, max: usize, bound: u64) -> Vec<(String, u32)> {
    let Some(mut repo) = open(root) else {
        return Vec::new();
    };
    let Some(mut next) = repo.head().ok().and_then(|h| h.target()) else {
        return Vec::new();
    };
    let mut counts: HashMap<String, u32> = HashMap::new();
    let mut opened_at = crate::procfs::resident_bytes();
    // Each object read maps pages of the pack's index and data (hundreds of kB a lookup in a
    // long history's pack, as the kernel maps the pages around each one touched), and libgit2
    // keeps them mapped while the repository is open: a hundred commits' trees would map most
    // of a 40 MB index. Reopened, the repository maps none.
    let grown = |at: Option<u64>| match (at, crate::procfs::resident_bytes()) {
        (Some(at), Some(now)) => now >= at + bound,
        _ => false,
    };
    let mut commits = 0;
    let mut retried = false;
    while commits < max {
        if grown(opened_at) {
            // Closed before it is opened again: both would hold their mappings at once.
            drop(repo);
            let Some(again) = open(root) else {
                break;
            };
            repo = again;
            opened_at = crate::procfs::resident_bytes();
        }
        let Ok(commit) = repo.find_commit(next) else {
            break;
        };
        // Merges are skipped: their changes are the branches'.
        if commit.parent_count() <= 1 {
            let parent = commit.parent(0).ok().map(|p| p.tree_id());
            // The diff stops once a commit is bulk: a repository's first commit (after an
            // undo, HEAD may well be it) is not read through all its files.
            let changed = commit_files::changed(
                &repo,
                parent,
                commit.tree_id(),
                BULK_COMMIT_FILES,
                &mut || !grown(opened_at),
            );
            match changed {
                Some(Changed::Paths(paths)) => {
                    for p in paths {
                        if let Ok(p) = String::from_utf8(p) {
                            *counts.entry(p).or_default() += 1;
                        }
                    }
                }
                // Read again with the repository reopened; a commit whose trees alone map
                // more than the bound is left out, as a bulk one is.
                Some(Changed::Stopped) if !retried => {
                    retried = true;
                    continue;
                }
                _ => {}
            }
        }
        retried = false;
        commits += 1;
        let Ok(parent) = commit.parent_id(0) else {
            break;
        };
        next = parent;
    }
    counts.into_iter().collect()
}

/// How much the resident memory may grow while recent commits are read before the
/// repository is reopened, which unmaps what libgit2 mapped of its packs.
const RESIDENT_GROWTH: u64 = 8 << 20;

/// The repository of the project at `root`, unless there is none or it is pai's private one.
fn open(root: &Path) -> Option<git2::Repository> {
    let Ok(Found::Repo(hr)) = repo::find(root) else {
        return None;
    };
    (!hr.private).then_some(hr.repo)
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

    #[test]
    fn a_commit_whose_trees_outgrow_the_memory_bound_is_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join("app.py"), "x = 0\n").unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "start"]);
        // Ten new folders: more trees than are read between two checks of the bound.
        for d in 0..10 {
            std::fs::create_dir(root.join(format!("d{d}"))).unwrap();
            std::fs::write(root.join(format!("d{d}/f.c")), "int x;\n").unwrap();
        }
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "spread"]);
        std::fs::write(root.join("app.py"), "x = 1\n").unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "work"]);
        let unbounded = read_recent(root, RECENT_COMMITS, u64::MAX / 2);
        assert_eq!(unbounded.len(), 11, "{unbounded:?}");
        // With no room at all, the repository is reopened before every commit and the spread
        // commit is stopped twice (once more after a reopen) and left out; the small ones,
        // whose trees are read before the first check, still count.
        let mut bounded = read_recent(root, RECENT_COMMITS, 0);
        bounded.sort();
        assert_eq!(bounded, [("app.py".to_string(), 2)]);
    }
}
