//! pai's refs read in one pass: every ref under `refs/pai/` and `refs/heads/pai/` with its
//! target, sorted by name. A repository can plant any number of refs there; commands that
//! look at every session (`pai log`) or every kept ref (`pai gc`) take what they need from
//! this index (a binary search for one name or for the refs under a prefix) instead of
//! looking refs up or globbing once per session, so their cost grows with the number of refs,
//! not its square.

use std::collections::BTreeSet;

use git2::{Oid, Repository};

use super::names;

/// The prefixes whose refs the index holds.
const PREFIXES: [&str; 2] = [names::PAI_PREFIX, names::BRANCH_PREFIX];

/// pai's refs, read once: name and target (symbolic refs resolved), sorted by name.
#[derive(Default)]
pub(crate) struct RefIndex {
    refs: Vec<(String, Oid)>,
}

impl RefIndex {
    /// Read pai's refs of `repo`: one iteration over the repository's refs.
    pub(crate) fn read(repo: &Repository) -> RefIndex {
        let mut refs = Vec::new();
        if let Ok(all) = repo.references() {
            for r in all.flatten() {
                let Ok(name) = r.name() else { continue };
                if !PREFIXES.iter().any(|p| name.starts_with(p)) {
                    continue;
                }
                let target = match r.target() {
                    Some(t) => Some(t),
                    None => r.resolve().ok().and_then(|r| r.target()),
                };
                if let Some(target) = target {
                    refs.push((name.to_string(), target));
                }
            }
        }
        refs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        RefIndex { refs }
    }

    /// The refs whose names start with `prefix`, in name order.
    pub(crate) fn under(&self, prefix: &str) -> &[(String, Oid)] {
        let start = self.refs.partition_point(|(n, _)| n.as_str() < prefix);
        let len = self.refs[start..].partition_point(|(n, _)| n.starts_with(prefix));
        &self.refs[start..start + len]
    }

    /// Every session id a branch, an undone plan or a metadata ref names, in order.
    pub(crate) fn sessions(&self) -> BTreeSet<String> {
        let branches = self
            .under(names::BRANCH_PREFIX)
            .iter()
            .filter_map(|(n, _)| names::session_of_branch(n));
        let undone = self
            .under(names::UNDONE_PREFIX)
            .iter()
            .filter_map(|(n, _)| names::session_of_undone(n));
        let metas = self
            .under(names::SESSIONS_PREFIX)
            .iter()
            .filter_map(|(n, _)| n.strip_prefix(names::SESSIONS_PREFIX));
        let mut ids: Vec<&str> = branches
            .chain(undone)
            .chain(metas)
            .filter(|id| names::is_id(id))
            .collect();
        // Sorted runs (one per prefix) with repeats: dedup after one sort.
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().map(str::to_string).collect()
    }

    /// The undone refs of `session` (`refs/pai/undone/<session>/...`: name and target).
    pub(crate) fn undone(&self, session: &str) -> &[(String, Oid)] {
        self.under(&names::undone_prefix(session))
    }

    /// Where `refname` points: from the index when it lies under pai's prefixes (absent
    /// there means absent), else looked up.
    pub(crate) fn target(
        &self,
        repo: &Repository,
        refname: &str,
    ) -> Result<Option<Oid>, git2::Error> {
        if PREFIXES.iter().any(|p| refname.starts_with(p)) {
            return Ok(self
                .refs
                .binary_search_by(|(n, _)| n.as_str().cmp(refname))
                .ok()
                .and_then(|i| self.refs.get(i))
                .map(|(_, target)| *target));
        }
        names::target(repo, refname)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_grouped_by_session_and_looked_up_from_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let c = repo
            .commit(Some("HEAD"), &sig, &sig, "x", &tree, &[])
            .unwrap();
        for name in [
            "refs/pai/undone/20260101_000000/1",
            "refs/pai/undone/20260101_000000/2",
            "refs/pai/undone/20260202_000000/1",
            "refs/heads/pai/20260303_000000",
            "refs/pai/undone/_x/1",
        ] {
            let _ = repo.reference(name, c, true, "t");
        }
        let index = RefIndex::read(&repo);
        let sessions: Vec<String> = index.sessions().into_iter().collect();
        assert_eq!(
            sessions,
            ["20260101_000000", "20260202_000000", "20260303_000000"]
        );
        assert_eq!(index.undone("20260101_000000").len(), 2);
        assert_eq!(index.undone("20260303_000000").len(), 0);
        assert_eq!(
            index
                .target(&repo, "refs/heads/pai/20260303_000000")
                .unwrap(),
            Some(c)
        );
        assert_eq!(index.target(&repo, "refs/heads/pai/none").unwrap(), None);
        assert_eq!(index.under("refs/pai/undone/").len(), 4);
        assert_eq!(index.under("refs/pai/kept/").len(), 0);
        let head = repo.head().unwrap().name().unwrap().to_string();
        assert_eq!(index.target(&repo, &head).unwrap(), Some(c));
    }
}
