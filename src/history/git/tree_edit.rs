//! Build a new tree from a base tree plus a handful of path changes, rewriting only the trees
//! on the changed paths. This is what keeps a plan commit's cost independent of repository
//! size: no index of the whole tree is ever loaded.

use std::collections::BTreeMap;

use git2::{Oid, Repository, Tree};

/// Mode of a subtree entry.
const TREE_MODE: i32 = 0o040000;

/// The new state of one file path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// The file is gone.
    Remove,
    /// The file holds this blob with this git file mode (0o100644 or 0o100755).
    Blob {
        /// The blob.
        id: Oid,
        /// Its git file mode.
        mode: i32,
    },
}

/// Apply `changes` (keyed by normalised `/`-separated path) to `base` and write the new tree.
/// Directories left empty disappear, as git has no empty trees.
pub(crate) fn edit_tree(
    repo: &Repository,
    base: Option<&Tree<'_>>,
    changes: &BTreeMap<String, Change>,
) -> Result<Oid, git2::Error> {
    let list: Vec<(Vec<&str>, Change)> = changes
        .iter()
        .map(|(path, change)| (path.split('/').collect(), *change))
        .collect();
    let refs: Vec<(&[&str], Change)> = list.iter().map(|(p, c)| (p.as_slice(), *c)).collect();
    match edit(repo, base, &refs)? {
        Some(id) => Ok(id),
        None => repo.treebuilder(None)?.write(),
    }
}

/// The changes under one name of a tree: to the name itself, and below it.
type Group<'a> = (Option<Change>, Vec<(&'a [&'a str], Change)>);

/// Returns the new tree's id, or `None` when the tree ends up empty.
fn edit(
    repo: &Repository,
    base: Option<&Tree<'_>>,
    changes: &[(&[&str], Change)],
) -> Result<Option<Oid>, git2::Error> {
    let mut builder = repo.treebuilder(base)?;
    // Group by first segment; `changes` is sorted by path, but "a" < "a-b" < "a/c" means a
    // name's direct and nested changes need not be adjacent, so group explicitly.
    let mut groups: BTreeMap<&str, Group<'_>> = BTreeMap::new();
    for (segments, change) in changes {
        let Some((first, rest)) = segments.split_first() else {
            continue;
        };
        let group = groups.entry(first).or_default();
        if rest.is_empty() {
            group.0 = Some(*change);
        } else {
            group.1.push((rest, *change));
        }
    }
    for (name, (direct, nested)) in groups {
        // Names are spelled as `rawname` does; git stores the bytes they stand for.
        let name = crate::rawname::path(name);
        let name = name.as_ref();
        let current = builder.get(name)?.map(|e| (e.id(), e.filemode()));
        if !nested.is_empty() {
            let subtree = match current {
                Some((id, mode)) if mode == TREE_MODE => Some(repo.find_tree(id)?),
                _ => None,
            };
            match edit(repo, subtree.as_ref(), &nested)? {
                Some(id) => {
                    // A directory wins over a file of the same name: the work tree can only
                    // hold one, and the nested changes are what it holds.
                    builder.insert(name, id, TREE_MODE)?;
                    continue;
                }
                None if subtree.is_some() => {
                    builder.remove(name)?;
                }
                None => {}
            }
        }
        match direct {
            Some(Change::Blob { id, mode }) => {
                builder.insert(name, id, mode)?;
            }
            Some(Change::Remove)
                if builder
                    .get(name)?
                    .is_some_and(|e| e.filemode() != TREE_MODE) =>
            {
                builder.remove(name)?;
            }
            Some(Change::Remove) | None => {}
        }
    }
    if builder.is_empty() {
        Ok(None)
    } else {
        builder.write().map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(repo: &Repository, text: &str) -> Change {
        Change::Blob {
            id: repo.blob(text.as_bytes()).unwrap(),
            mode: 0o100644,
        }
    }

    fn paths(repo: &Repository, tree: Oid) -> Vec<String> {
        let tree = repo.find_tree(tree).unwrap();
        let mut out = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                out.push(format!("{dir}{}", entry.name().unwrap()));
            }
            git2::TreeWalkResult::Ok
        })
        .unwrap();
        out.sort();
        out
    }

    #[test]
    fn adds_nested_removes_and_prunes_empty_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let mut changes = BTreeMap::new();
        changes.insert("a/b/c.txt".to_string(), blob(&repo, "c"));
        changes.insert("a-b".to_string(), blob(&repo, "x"));
        changes.insert("a/d.txt".to_string(), blob(&repo, "d"));
        let first = edit_tree(&repo, None, &changes).unwrap();
        assert_eq!(paths(&repo, first), ["a-b", "a/b/c.txt", "a/d.txt"]);

        let mut changes = BTreeMap::new();
        changes.insert("a/b/c.txt".to_string(), Change::Remove);
        changes.insert("missing/x".to_string(), Change::Remove);
        let base = repo.find_tree(first).unwrap();
        let second = edit_tree(&repo, Some(&base), &changes).unwrap();
        assert_eq!(paths(&repo, second), ["a-b", "a/d.txt"]);
    }

    #[test]
    fn file_replaced_by_directory_and_everything_removed() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let mut changes = BTreeMap::new();
        changes.insert("a".to_string(), blob(&repo, "file"));
        let first = edit_tree(&repo, None, &changes).unwrap();
        let mut changes = BTreeMap::new();
        changes.insert("a".to_string(), Change::Remove);
        changes.insert("a/inner".to_string(), blob(&repo, "inner"));
        let base = repo.find_tree(first).unwrap();
        let second = edit_tree(&repo, Some(&base), &changes).unwrap();
        assert_eq!(paths(&repo, second), ["a/inner"]);

        let mut changes = BTreeMap::new();
        changes.insert("a/inner".to_string(), Change::Remove);
        let base = repo.find_tree(second).unwrap();
        let empty = edit_tree(&repo, Some(&base), &changes).unwrap();
        assert_eq!(repo.find_tree(empty).unwrap().len(), 0);
    }
}
