//! Which branches and remote-tracking refs already hold a commit: undo refuses to take a plan
//! off its session branch when another ref holds it, and gc keeps what a ref still reaches.
//!
//! libgit2's `graph_descendant_of` answers by computing merge bases, which without git's
//! commit-graph file walks both histories down to where they meet, or to their roots when
//! they never meet: a ref of another, unrelated history (a packaging branch, old
//! documentation) makes it read every commit below the plan, thousands in a large project,
//! with the pack's pages they lie on. Here each ref's history is walked from its tip instead,
//! and a path ends at a commit known to lie below the commit asked about (a commit's
//! ancestors never lead back to it), so a branch the session started from ends at once and an
//! unrelated one at its own roots. A walk that grows past a bound falls back to libgit2's
//! answer, which is exact at any size; the bounded walk is exact too, only limited.

use std::collections::HashSet;

use git2::{Oid, Repository};

use crate::history::error::{Context, HistoryError};

/// Commits below the asked-about one gathered first (nearest first): a session's line of
/// plans and the commit it started from lie among them.
const KNOWN_BELOW: usize = 256;

/// Commits a ref's walk may read before libgit2's merge-base computation decides instead.
const WALK_LIMIT: usize = 2048;

/// Local branches (other than `own`) and remote-tracking refs that contain `commit`.
pub(crate) fn refs_containing(
    repo: &Repository,
    commit: Oid,
    own: &str,
) -> Result<Vec<String>, HistoryError> {
    let mut out = Vec::new();
    let mut below: Option<HashSet<Oid>> = None;
    let refs = repo.references().ctx(|| "cannot list refs".into())?;
    for r in refs.flatten() {
        let Ok(name) = r.name() else { continue };
        if name == own || !(name.starts_with("refs/heads/") || name.starts_with("refs/remotes/")) {
            continue;
        }
        if r.symbolic_target().ok().flatten().is_some() {
            continue;
        }
        let Some(target) = r.target() else { continue };
        let contains = target == commit || {
            let below = below.get_or_insert_with(|| ancestors(repo, commit, KNOWN_BELOW));
            match reaches(repo, target, commit, below, WALK_LIMIT) {
                Some(answer) => answer,
                None => repo
                    .graph_descendant_of(target, commit)
                    .ctx(|| format!("cannot compare {name} with {commit}"))?,
            }
        };
        if contains {
            let short = name
                .strip_prefix("refs/heads/")
                .or_else(|| name.strip_prefix("refs/remotes/"))
                .unwrap_or(name);
            out.push(short.to_string());
        }
    }
    Ok(out)
}

/// Up to `limit` ancestors of `commit` (itself excluded), nearest first; fewer when a commit
/// cannot be read (the set only ever holds true ancestors, so a short one costs time, never
/// an answer).
fn ancestors(repo: &Repository, commit: Oid, limit: usize) -> HashSet<Oid> {
    let mut out = HashSet::new();
    let mut queue = std::collections::VecDeque::new();
    if let Ok(c) = repo.find_commit(commit) {
        queue.extend(c.parent_ids());
    }
    while let Some(id) = queue.pop_front() {
        if out.len() >= limit {
            break;
        }
        if !out.insert(id) {
            continue;
        }
        if let Ok(c) = repo.find_commit(id) {
            queue.extend(c.parent_ids());
        }
    }
    out
}

/// Whether `commit` is reachable from `tip`, walking `tip`'s history and ending each path at
/// a commit of `below` (ancestors of `commit`); `None` when the walk would read more than
/// `limit` commits or meets one it cannot read (the caller then asks libgit2).
fn reaches(
    repo: &Repository,
    tip: Oid,
    commit: Oid,
    below: &HashSet<Oid>,
    limit: usize,
) -> Option<bool> {
    let mut seen = HashSet::new();
    let mut todo = vec![tip];
    while let Some(id) = todo.pop() {
        if id == commit {
            return Some(true);
        }
        if below.contains(&id) || !seen.insert(id) {
            continue;
        }
        if seen.len() > limit {
            return None;
        }
        todo.extend(repo.find_commit(id).ok()?.parent_ids());
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::index::test_git::git;

    fn commit_on(root: &std::path::Path, file: &str) -> Oid {
        std::fs::write(root.join(file), file).unwrap();
        git(root, &["add", file]);
        git(root, &["commit", "-q", "-m", file]);
        let out = git(root, &["rev-parse", "HEAD"]);
        Oid::from_str(String::from_utf8_lossy(&out).trim()).unwrap()
    }

    #[test]
    fn the_refs_holding_a_commit_are_found_whatever_their_history() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q", "-b", "main"]);
        git(root, &["config", "user.name", "t"]);
        git(root, &["config", "user.email", "t@t"]);
        let base = commit_on(root, "a");
        git(root, &["checkout", "-q", "-b", "line"]);
        let plan = commit_on(root, "b");
        let above = commit_on(root, "c");
        // A branch holding the plan through a merge, one that moved on from it, one of an
        // unrelated history, and the base the line started from.
        git(root, &["checkout", "-q", "-b", "merged", "main"]);
        commit_on(root, "d");
        git(root, &["merge", "-q", "--no-edit", "line"]);
        git(root, &["branch", "moved", &above.to_string()]);
        git(root, &["checkout", "-q", "--orphan", "other"]);
        git(root, &["rm", "-rq", "--cached", "."]);
        commit_on(root, "e");
        git(
            root,
            &["update-ref", "refs/remotes/origin/line", &plan.to_string()],
        );
        let repo = Repository::open(root).unwrap();
        let mut held = refs_containing(&repo, plan, "refs/heads/line").unwrap();
        held.sort();
        assert_eq!(held, ["merged", "moved", "origin/line"]);
        let mut held = refs_containing(&repo, above, "refs/heads/line").unwrap();
        held.sort();
        assert_eq!(held, ["merged", "moved"]);
        let mut all = refs_containing(&repo, base, "").unwrap();
        all.sort();
        assert_eq!(all, ["line", "main", "merged", "moved", "origin/line"]);
        // The bounded walk and libgit2 agree, and a walk past its bound asks libgit2.
        let below = ancestors(&repo, plan, KNOWN_BELOW);
        assert!(below.contains(&base) && !below.contains(&plan));
        for tip in [base, plan, above] {
            assert_eq!(
                reaches(&repo, tip, plan, &below, WALK_LIMIT),
                Some(tip == plan || repo.graph_descendant_of(tip, plan).unwrap())
            );
        }
        assert_eq!(reaches(&repo, above, base, &HashSet::new(), 1), None);
    }
}
