//! What the model wrote on the line of work a session continues: under `--yes`, an allow-list
//! rule covers a command only when the model has written nothing it could run. That memory
//! must outlive the turn and the process (a `py_compile.py` written in yesterday's `--yes`
//! session is still the model's), so it is read from the line itself: any plan commit pai made
//! for this user on it that the user has not merged into the branch the line started from.

use git2::{Oid, Repository};

use crate::history::git::meta::Meta;
use crate::history::git::names;
use crate::history::record::message::Kind;
use crate::history::record::verified;

/// Most commits looked at down the line (a line holds a few plans and snapshots each).
const MAX_COMMITS: usize = 10_000;

/// Whether the line whose tip is `tip` (its metadata `meta`) holds a plan of pai's that
/// changed files and is not merged into the base branch: what the model wrote there is in
/// the project until the user reviews and merges it.
pub(in crate::history) fn holds_unmerged_plans(repo: &Repository, tip: Oid, meta: &Meta) -> bool {
    let merged_into = meta
        .base_branch
        .as_deref()
        .and_then(|b| names::target(repo, b).ok().flatten());
    let mut at: Option<Oid> = Some(tip);
    for _ in 0..MAX_COMMITS {
        let Some(id) = at else { return false };
        if Some(id) == meta.base {
            return false;
        }
        let Ok(commit) = repo.find_commit(id) else {
            return false;
        };
        if verified::trailers(&commit).kind == Some(Kind::Plan) {
            let merged = merged_into.is_some_and(|m| {
                m == id
                    || (!(Some(m) == meta.base && above(repo, id, m))
                        && repo.graph_descendant_of(m, id).unwrap_or(false))
            });
            return !merged;
        }
        at = commit.parent_id(0).ok();
    }
    true
}

/// Whether `base` is down `id`'s line of first parents (within [`MAX_COMMITS`]): then `id` is
/// above `base` and cannot also be below it. A base branch still where the line started is
/// answered so, from the line's own few commits; asking git whether it holds `id` would walk
/// the base branch's whole history out of the pack.
fn above(repo: &Repository, id: Oid, base: Oid) -> bool {
    let mut at = id;
    for _ in 0..MAX_COMMITS {
        match repo.find_commit(at).and_then(|c| c.parent_id(0)) {
            Ok(parent) if parent == base => return true,
            Ok(parent) => at = parent,
            Err(_) => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit on `parents` with an empty tree and the message `m`.
    fn commit(repo: &Repository, m: &str, parents: &[Oid]) -> Oid {
        let sig = git2::Signature::now("t", "t@example.invalid").unwrap();
        let tree = repo
            .find_tree(repo.treebuilder(None).unwrap().write().unwrap())
            .unwrap();
        let parents: Vec<_> = parents
            .iter()
            .map(|p| repo.find_commit(*p).unwrap())
            .collect();
        let refs: Vec<_> = parents.iter().collect();
        repo.commit(None, &sig, &sig, m, &tree, &refs).unwrap()
    }

    #[test]
    fn a_commit_is_above_only_the_commits_down_its_first_parents() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let base = commit(&repo, "base", &[]);
        let side = commit(&repo, "side", &[base]);
        let one = commit(&repo, "one", &[base]);
        let two = commit(&repo, "two", &[one, side]);
        assert!(above(&repo, one, base));
        assert!(above(&repo, two, base));
        assert!(above(&repo, two, one));
        // Reached only through a second parent, below, or not at all: git must be asked.
        assert!(!above(&repo, two, side));
        assert!(!above(&repo, base, two));
        assert!(!above(&repo, one, side));
        assert!(!above(&repo, base, base));
    }
}
