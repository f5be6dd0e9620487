//! What the user has been doing, as git records it, for the repository map's ranking: the
//! files recent commits changed, and the blob each tracked file has in the index (a file whose
//! content differs from it has uncommitted changes). Read-only, and never an error: a project
//! without git, or a repository pai cannot read, simply has no activity.

use std::collections::HashMap;
use std::path::Path;

use super::index_file;
use super::repo::{self, Found};

/// Commits read for "recently changed".
pub const RECENT_COMMITS: usize = 100;

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
/// commits changed each. Merge commits are skipped (their changes are the branches').
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
        let parent = commit.parent(0).ok().and_then(|p| p.tree().ok());
        let Ok(tree) = commit.tree() else { continue };
        let Ok(diff) = repo.diff_tree_to_tree(parent.as_ref(), Some(&tree), None) else {
            continue;
        };
        for d in diff.deltas() {
            if let Some(p) = d.new_file().path().and_then(|p| p.to_str()) {
                *counts.entry(p.to_string()).or_default() += 1;
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
    let Ok(index) = index_file::load(&hr.repo) else {
        return Vec::new();
    };
    index
        .stage0()
        .into_iter()
        .map(|(path, (oid, _))| {
            let mut id = [0u8; 20];
            let bytes = oid.as_bytes();
            if bytes.len() == 20 {
                id.copy_from_slice(bytes);
            }
            (path, id)
        })
        .collect()
}
