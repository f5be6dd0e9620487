//! pai's refs read in one pass: every ref under `refs/pai/` and `refs/heads/pai/` with its
//! target, the session ids they name and each session's undone plans. A repository can plant
//! any number of refs there; commands that look at every session (`pai log`) take what they
//! need from this index instead of looking refs up per session, so their cost grows with the
//! number of refs, not its square.

use std::collections::{BTreeSet, HashMap};

use git2::{Oid, Repository};

use super::names;

/// The prefixes whose refs the index holds.
const PREFIXES: [&str; 2] = ["refs/pai/", "refs/heads/pai/"];

/// pai's refs, read once.
#[derive(Default)]
pub(crate) struct RefIndex {
    /// Each ref's target (symbolic refs resolved), undone plans of valid ids apart.
    targets: HashMap<String, Oid>,
    /// Every session id a branch, an undone plan or a metadata ref names.
    sessions: BTreeSet<String>,
    /// Each session's undone refs: name and target.
    undone: HashMap<String, Vec<(String, Oid)>>,
}

impl RefIndex {
    /// Read pai's refs of `repo`: one iteration over the repository's refs.
    pub(crate) fn read(repo: &Repository) -> RefIndex {
        let mut index = RefIndex::default();
        let Ok(refs) = repo.references() else {
            return index;
        };
        for r in refs.flatten() {
            let Ok(name) = r.name() else { continue };
            if !PREFIXES.iter().any(|p| name.starts_with(p)) {
                continue;
            }
            let target = match r.target() {
                Some(t) => Some(t),
                None => r.resolve().ok().and_then(|r| r.target()),
            };
            let Some(target) = target else { continue };
            index.add(name, target);
        }
        index
    }

    fn add(&mut self, name: &str, target: Oid) {
        let undone_of = name
            .strip_prefix("refs/pai/undone/")
            .and_then(|s| s.split('/').next());
        let id = names::session_of_branch(name)
            .or(undone_of)
            .or_else(|| name.strip_prefix("refs/pai/sessions/"));
        if let Some(id) = id.filter(|id| names::is_id(id)) {
            if undone_of.is_some() {
                self.undone
                    .entry(id.to_string())
                    .or_default()
                    .push((name.to_string(), target));
            }
            self.sessions.insert(id.to_string());
            if undone_of.is_some() {
                return;
            }
        }
        self.targets.insert(name.to_string(), target);
    }

    /// Every session id pai's refs name, in order.
    pub(crate) fn sessions(&self) -> &BTreeSet<String> {
        &self.sessions
    }

    /// The undone refs of `session` (name and target), in no particular order.
    pub(crate) fn undone(&self, session: &str) -> &[(String, Oid)] {
        self.undone.get(session).map_or(&[], Vec::as_slice)
    }

    /// Where `refname` points: from the index when it lies under pai's prefixes (absent
    /// there means absent), else looked up. Not for undone refs (see [`RefIndex::undone`]).
    pub(crate) fn target(
        &self,
        repo: &Repository,
        refname: &str,
    ) -> Result<Option<Oid>, git2::Error> {
        if PREFIXES.iter().any(|p| refname.starts_with(p)) {
            return Ok(self.targets.get(refname).copied());
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
            "refs/pai/undone/not an id/1",
        ] {
            let _ = repo.reference(name, c, true, "t");
        }
        let index = RefIndex::read(&repo);
        let sessions: Vec<&String> = index.sessions().iter().collect();
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
        let head = repo.head().unwrap().name().unwrap().to_string();
        assert_eq!(index.target(&repo, &head).unwrap(), Some(c));
    }
}
