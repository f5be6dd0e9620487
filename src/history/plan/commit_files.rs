//! The files one commit changed against its first parent, for the repository map's "recently
//! changed" signal, listed as libgit2's tree-to-tree diff lists them but with an early stop.
//!
//! Why not `Repository::diff_tree_to_tree`: it builds the whole diff before anyone can count
//! it, so a commit that adds 100,000 files (a repository's first commit, an import) costs a
//! walk of every tree and a delta per file, only for the map to throw it away as a bulk
//! commit. Here the two trees are merged entry by entry, identical subtrees are skipped (as
//! libgit2 skips them), and the walk stops as soon as the commit has more files than the
//! caller's limit: a bulk commit costs the trees holding its first `limit` files.

use std::cmp::Ordering;

use git2::{Oid, Repository};

/// A tree's mode, and the mask of the kind bits of a mode (`S_IFMT`).
const TREE_MODE: i32 = 0o040_000;
const KIND_MASK: i32 = 0o170_000;

/// What a commit changed: the paths (as libgit2's deltas name them: a deleted file by its old
/// path, and a path whose kind changed, a file becoming a symbolic link, twice, as a deletion
/// and an addition), or that there are more than the limit.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Changed {
    /// At most the limit's number of paths.
    Paths(Vec<Vec<u8>>),
    /// More than the limit.
    Bulk,
    /// The caller's `go_on` said to stop before the walk was done.
    Stopped,
}

/// The paths the commit whose tree is `new` changed against the tree `old` (`None`: a root
/// commit, everything is added), or [`Changed::Bulk`] once there are more than `limit`.
/// `None` when a tree cannot be read (the caller skips such a commit, as it skipped a diff
/// libgit2 could not make). `go_on` is asked every [`TREES_BETWEEN_CHECKS`] trees read
/// whether to go on; [`Changed::Stopped`] when it says no.
pub(crate) fn changed(
    repo: &Repository,
    old: Option<Oid>,
    new: Oid,
    limit: usize,
    go_on: &mut dyn FnMut() -> bool,
) -> Option<Changed> {
    let mut trees_read = 0;
    walk(repo, old, Some(new), limit, &mut trees_read, go_on)
}

/// Trees read between two questions to the caller's `go_on`.
const TREES_BETWEEN_CHECKS: usize = 8;

/// One entry of a tree: its name, id and mode.
struct Item {
    name: Vec<u8>,
    id: Oid,
    mode: i32,
}

impl Item {
    fn is_tree(&self) -> bool {
        self.mode & KIND_MASK == TREE_MODE
    }
}

/// The entries of the tree `id` (none for `None`), in the tree's own (git's) order.
fn items(repo: &Repository, id: Option<Oid>, trees_read: &mut usize) -> Option<Vec<Item>> {
    let Some(id) = id else {
        return Some(Vec::new());
    };
    *trees_read += 1;
    let tree = repo.find_tree(id).ok()?;
    Some(
        tree.iter()
            .map(|e| Item {
                name: e.name_bytes().to_vec(),
                id: e.id(),
                mode: e.filemode(),
            })
            .collect(),
    )
}

/// git's order of tree entries: by name, a tree's name read as if it ended in `/`.
fn git_order(a: &Item, b: &Item) -> Ordering {
    let n = a.name.len().min(b.name.len());
    a.name[..n].cmp(&b.name[..n]).then_with(|| {
        let next = |i: &Item| {
            i.name
                .get(n)
                .copied()
                .unwrap_or(if i.is_tree() { b'/' } else { 0 })
        };
        next(a).cmp(&next(b))
    })
}

/// The paths between the trees `old` and `new` (either may be absent), below `prefix`.
struct Walk<'a> {
    repo: &'a Repository,
    limit: usize,
    paths: Vec<Vec<u8>>,
    /// Subtrees still to compare: their path with its trailing `/`, old and new id.
    pending: Vec<(Vec<u8>, Option<Oid>, Option<Oid>)>,
}

impl Walk<'_> {
    /// Record `name` below `prefix` `times` times; false once over the limit.
    fn note(&mut self, prefix: &[u8], name: &[u8], times: usize) -> bool {
        for _ in 0..times {
            let mut path = prefix.to_vec();
            path.extend_from_slice(name);
            self.paths.push(path);
        }
        self.paths.len() <= self.limit
    }

    /// One side only has `item` (added or deleted): a file is one path, a tree all below it.
    fn one_side(&mut self, prefix: &[u8], item: &Item, added: bool) -> bool {
        if item.is_tree() {
            let mut dir = prefix.to_vec();
            dir.extend_from_slice(&item.name);
            dir.push(b'/');
            let (old, new) = if added {
                (None, Some(item.id))
            } else {
                (Some(item.id), None)
            };
            self.pending.push((dir, old, new));
            true
        } else {
            self.note(prefix, &item.name, 1)
        }
    }

    /// Both sides have an entry of this name and kind (both trees, or both not).
    fn both(&mut self, prefix: &[u8], old: &Item, new: &Item) -> bool {
        if old.id == new.id && old.mode == new.mode {
            return true;
        }
        if old.is_tree() {
            let mut dir = prefix.to_vec();
            dir.extend_from_slice(&new.name);
            dir.push(b'/');
            self.pending.push((dir, Some(old.id), Some(new.id)));
            return true;
        }
        // libgit2 splits a change of kind (file, symbolic link, submodule) into a deletion
        // and an addition, so the path counts twice.
        let times = if old.mode & KIND_MASK == new.mode & KIND_MASK {
            1
        } else {
            2
        };
        self.note(prefix, &new.name, times)
    }

    /// Merge the entries of one pair of trees; false once over the limit.
    fn compare(&mut self, prefix: &[u8], old: &[Item], new: &[Item]) -> bool {
        let (mut o, mut n) = (0, 0);
        while o < old.len() || n < new.len() {
            let order = match (old.get(o), new.get(n)) {
                (Some(a), Some(b)) => git_order(a, b),
                (Some(_), None) => Ordering::Less,
                _ => Ordering::Greater,
            };
            let within = match order {
                Ordering::Less => {
                    o += 1;
                    self.one_side(prefix, &old[o - 1], false)
                }
                Ordering::Greater => {
                    n += 1;
                    self.one_side(prefix, &new[n - 1], true)
                }
                Ordering::Equal => {
                    o += 1;
                    n += 1;
                    self.both(prefix, &old[o - 1], &new[n - 1])
                }
            };
            if !within {
                return false;
            }
        }
        true
    }
}

/// [`changed`], counting the trees it reads in `trees_read`.
fn walk(
    repo: &Repository,
    old: Option<Oid>,
    new: Option<Oid>,
    limit: usize,
    trees_read: &mut usize,
    go_on: &mut dyn FnMut() -> bool,
) -> Option<Changed> {
    let mut walk = Walk {
        repo,
        limit,
        paths: Vec::new(),
        pending: vec![(Vec::new(), old, new)],
    };
    let mut checked_at = 0;
    while let Some((prefix, old, new)) = walk.pending.pop() {
        if *trees_read >= checked_at + TREES_BETWEEN_CHECKS {
            checked_at = *trees_read;
            if !go_on() {
                return Some(Changed::Stopped);
            }
        }
        let old = items(walk.repo, old, trees_read)?;
        let new = items(walk.repo, new, trees_read)?;
        if !walk.compare(&prefix, &old, &new) {
            return Some(Changed::Bulk);
        }
    }
    Some(Changed::Paths(walk.paths))
}

#[cfg(test)]
mod tests {
    use crate::history::index::test_git::git;
    use crate::history::plan::commit_files::*;
    use std::collections::BTreeMap;
    use std::path::Path;

    fn commit_all(root: &Path, message: &str) {
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "--allow-empty", "-m", message]);
    }

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn remove(root: &Path, path: &str) {
        let path = root.join(path);
        if path.is_dir() {
            std::fs::remove_dir_all(path).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
    }

    /// How often each path appears, which is all "recently changed" keeps of a commit.
    fn tally(paths: impl IntoIterator<Item = Vec<u8>>) -> BTreeMap<Vec<u8>, usize> {
        let mut out = BTreeMap::new();
        for p in paths {
            *out.entry(p).or_default() += 1;
        }
        out
    }

    /// The paths libgit2's diff of the commit against its first parent names.
    fn libgit2_paths(repo: &Repository, id: Oid) -> BTreeMap<Vec<u8>, usize> {
        let commit = repo.find_commit(id).unwrap();
        let parent = commit.parent(0).ok().map(|p| p.tree().unwrap());
        let tree = commit.tree().unwrap();
        let diff = repo
            .diff_tree_to_tree(parent.as_ref(), Some(&tree), None)
            .unwrap();
        tally(
            diff.deltas()
                .map(|d| d.new_file().path_bytes().unwrap().to_vec()),
        )
    }

    fn ours(repo: &Repository, id: Oid, limit: usize) -> Option<Changed> {
        let commit = repo.find_commit(id).unwrap();
        let parent = commit.parent(0).ok().map(|p| p.tree_id());
        changed(repo, parent, commit.tree_id(), limit, &mut || true)
    }

    #[test]
    fn a_commit_lists_the_paths_libgit2_diff_names() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        // Names that sort differently as files and as folders ("a" < "a-b" < "a/").
        for p in [
            "a-b", "a.txt", "a/x", "a/y/z", "b", "c/d", "same/s", "link", "mode.sh",
        ] {
            write(root, p, &format!("{p}\n"));
        }
        commit_all(root, "first");
        // Every kind of change, each in its own commit and then all at once.
        type Step = Box<dyn Fn(&Path)>;
        let steps: Vec<Step> = vec![
            Box::new(|r| write(r, "a/y/z", "changed\n")),
            Box::new(|r| write(r, "a/new/deep/file", "new\n")),
            Box::new(|r| remove(r, "a-b")),
            Box::new(|r| {
                let p = r.join("mode.sh");
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }),
            Box::new(|r| {
                remove(r, "link");
                symlink("b", r.join("link")).unwrap();
            }),
            Box::new(|r| {
                // A file becomes a folder and a folder becomes a file.
                remove(r, "b");
                write(r, "b/inner", "x\n");
                remove(r, "c");
                write(r, "c", "now a file\n");
            }),
            Box::new(|r| {
                std::fs::rename(r.join("a.txt"), r.join("renamed.txt")).unwrap();
            }),
            Box::new(|r| {
                write(r, "a/x", "again\n");
                remove(r, "a/new");
                write(r, "z/1", "1\n");
                remove(r, "renamed.txt");
            }),
            Box::new(|_| {}),
        ];
        let repo = Repository::open(root).unwrap();
        let first = repo.head().unwrap().target().unwrap();
        let Some(Changed::Paths(got)) = ours(&repo, first, 100) else {
            panic!("the first commit: no paths");
        };
        assert_eq!(tally(got), libgit2_paths(&repo, first), "the first commit");
        for (i, step) in steps.iter().enumerate() {
            step(root);
            commit_all(root, &format!("step {i}"));
            let id = repo.head().unwrap().target().unwrap();
            let Some(Changed::Paths(got)) = ours(&repo, id, 100) else {
                panic!("step {i}: no paths");
            };
            assert_eq!(tally(got), libgit2_paths(&repo, id), "step {i}");
        }
        // A submodule (a commit in the tree) added, moved to another commit, made a file.
        let first = first.to_string();
        let second = repo.head().unwrap().target().unwrap().to_string();
        let gitlink = |id: &str| format!("160000,{id},sub");
        let empty = repo.blob(b"").unwrap().to_string();
        let file = format!("100644,{empty},sub");
        let changes: [&[&str]; 3] = [
            &["update-index", "--add", "--cacheinfo", &gitlink(&first)],
            &["update-index", "--cacheinfo", &gitlink(&second)],
            &["update-index", "--cacheinfo", &file],
        ];
        for (i, change) in changes.iter().enumerate() {
            git(root, change);
            git(root, &["commit", "-q", "-m", &format!("submodule {i}")]);
            let id = repo.head().unwrap().target().unwrap();
            let Some(Changed::Paths(got)) = ours(&repo, id, 100) else {
                panic!("submodule {i}: no paths");
            };
            assert_eq!(tally(got), libgit2_paths(&repo, id), "submodule {i}");
        }
    }

    /// A commit of 30 folders of 10 files each.
    fn wide_repository() -> (tempfile::TempDir, Repository) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        for d in 0..30 {
            for f in 0..10 {
                write(root, &format!("d{d:02}/f{f}"), &format!("{d} {f}\n"));
            }
        }
        commit_all(root, "import");
        let repo = Repository::open(root).unwrap();
        (tmp, repo)
    }

    #[test]
    fn a_bulk_commit_is_found_out_from_its_first_trees() {
        let (tmp, repo) = wide_repository();
        let import = repo.head().unwrap().target().unwrap();
        let tree = repo.find_commit(import).unwrap().tree_id();
        // Exactly at the limit the commit is listed; one over, it is bulk.
        let mut reads = 0;
        let Some(Changed::Paths(all)) =
            walk(&repo, None, Some(tree), 300, &mut reads, &mut || true)
        else {
            panic!("300 files at a limit of 300 are not bulk");
        };
        assert_eq!(all.len(), 300);
        assert_eq!(reads, 31, "the root tree and each folder once");
        let mut reads = 0;
        assert_eq!(
            walk(&repo, None, Some(tree), 299, &mut reads, &mut || true),
            Some(Changed::Bulk)
        );
        // A limit of 25 is passed in the third folder: the walk stops there, without reading
        // the other 27.
        let mut reads = 0;
        assert_eq!(
            walk(&repo, None, Some(tree), 25, &mut reads, &mut || true),
            Some(Changed::Bulk)
        );
        assert_eq!(reads, 4, "the root tree and three folders");
        // A reformat touching every file on top of it stops as early.
        let root = tmp.path();
        for d in 0..30 {
            for f in 0..10 {
                write(
                    root,
                    &format!("d{d:02}/f{f}"),
                    &format!("reformatted {d} {f}\n"),
                );
            }
        }
        commit_all(root, "reformat");
        let head = repo.head().unwrap().target().unwrap();
        let mut reads = 0;
        let commit = repo.find_commit(head).unwrap();
        assert_eq!(
            walk(
                &repo,
                Some(tree),
                Some(commit.tree_id()),
                25,
                &mut reads,
                &mut || true
            ),
            Some(Changed::Bulk)
        );
        assert_eq!(reads, 8, "both sides of the root and of three folders");
        assert_eq!(
            libgit2_paths(&repo, head).len(),
            300,
            "libgit2 agrees on the size"
        );
    }

    #[test]
    fn the_caller_stops_a_long_walk_between_trees() {
        let (_tmp, repo) = wide_repository();
        let import = repo.head().unwrap().target().unwrap();
        let tree = repo.find_commit(import).unwrap().tree_id();
        let mut asked = 0;
        let mut reads = 0;
        let mut stop_second_time = || {
            asked += 1;
            asked < 2
        };
        assert_eq!(
            walk(
                &repo,
                None,
                Some(tree),
                1_000,
                &mut reads,
                &mut stop_second_time
            ),
            Some(Changed::Stopped)
        );
        assert_eq!(asked, 2);
        assert_eq!(
            reads,
            2 * TREES_BETWEEN_CHECKS,
            "asked after every {TREES_BETWEEN_CHECKS} trees"
        );
    }
}
