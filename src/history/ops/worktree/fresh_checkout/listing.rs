//! A commit's tree as the list of entries a fresh checkout writes, in the index's order (a
//! tree walked depth first, each tree's entries in git's order, is sorted by full path), with
//! every name checked before anything is written.
//!
//! Names git and libgit2 refuse or treat specially (`.git` and the spellings Windows and macOS
//! take for it, a symbolic link named like `.gitmodules`, `..`, an empty or slashed name) and
//! modes other than git's five make the list `None`: such a tree is left whole to libgit2's
//! checkout, which applies git's exact rules (and refuses what they refuse).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use git2::{Oid, Repository, Tree};

use crate::history::error::{Context, HistoryError};

/// A regular file.
pub(crate) const MODE_FILE: i32 = 0o100644;
/// An executable file.
pub(crate) const MODE_EXEC: i32 = 0o100755;
/// A symbolic link.
pub(crate) const MODE_LINK: i32 = 0o120000;
/// A submodule's commit (a gitlink): checked out as an empty directory.
pub(crate) const MODE_GITLINK: i32 = 0o160000;
const MODE_TREE: i32 = 0o040000;

/// One file of the tree.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The path from the worktree's root, `/`-separated, as git spells it (any bytes).
    pub path: Vec<u8>,
    /// The blob (or, for a gitlink, the commit).
    pub id: Oid,
    /// Git's mode: one of the `MODE_*` constants.
    pub mode: i32,
}

impl Entry {
    /// The path as a relative file-system path.
    pub fn rel(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.path))
    }

    /// The directory holding the entry (empty at the root).
    pub fn parent(&self) -> &[u8] {
        match self.path.iter().rposition(|&b| b == b'/') {
            Some(at) => &self.path[..at],
            None => &[],
        }
    }
}

/// The tree's files, in the index's order.
#[derive(Debug)]
pub(crate) struct Listing {
    /// Every blob, link and gitlink.
    pub entries: Vec<Entry>,
    /// Whether any directory of the tree holds a `.gitattributes` file.
    pub has_attributes_file: bool,
}

/// The entries of `tree`, or `None` when a name or mode is one only libgit2's checkout
/// should judge.
pub(crate) fn list(repo: &Repository, tree: &Tree<'_>) -> Result<Option<Listing>, HistoryError> {
    let mut listing = Listing {
        entries: Vec::new(),
        has_attributes_file: false,
    };
    // Trees being read, each with the index of its next entry and its path prefix: an explicit
    // stack, so a deep tree cannot exhaust the thread's stack.
    let mut stack: Vec<(Tree<'_>, usize, Vec<u8>)> = vec![(tree.clone(), 0, Vec::new())];
    while let Some((current, at, prefix)) = stack.last_mut() {
        let Some(entry) = current.get(*at) else {
            stack.pop();
            continue;
        };
        *at += 1;
        let (mode, id) = (entry.filemode(), entry.id());
        let name = entry.name_bytes();
        if !plain_name(name, mode == MODE_LINK) {
            return Ok(None);
        }
        let is_rules = name == b".gitattributes";
        let mut path = prefix.clone();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        drop(entry);
        match mode {
            MODE_TREE => {
                let sub = repo
                    .find_tree(id)
                    .ctx(|| format!("cannot read the tree {id}"))?;
                stack.push((sub, 0, path));
            }
            MODE_FILE | MODE_EXEC | MODE_LINK | MODE_GITLINK => {
                listing.has_attributes_file |= is_rules;
                listing.entries.push(Entry { path, id, mode });
            }
            _ => return Ok(None),
        }
    }
    if nested_or_twice(&listing.entries) {
        return Ok(None);
    }
    Ok(Some(listing))
}

/// Whether a path is listed twice, or below a file, link or gitlink (a tree whose entries
/// repeat a name, which no git command makes): checked out, one could make another be
/// written through a link.
fn nested_or_twice(entries: &[Entry]) -> bool {
    let mut paths: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
    if !entries.iter().all(|e| paths.insert(&e.path)) {
        return true;
    }
    entries.iter().any(|e| {
        e.path
            .iter()
            .enumerate()
            .any(|(at, &b)| b == b'/' && paths.contains(&e.path[..at]))
    })
}

/// Whether `name` is one pai writes itself: not empty, `.` or `..`, no `/`, `\`, `:` or NUL,
/// not `.git` in any spelling a file system may take for it (trailing dots or spaces, the
/// short name `git~1`), and, for a link, nothing that starts like `.git`.
fn plain_name(name: &[u8], link: bool) -> bool {
    if name.is_empty() || name == b"." || name == b".." {
        return false;
    }
    if name.iter().any(|&b| matches!(b, b'/' | b'\\' | b':' | 0)) {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    if lower.starts_with(b"git~") || (lower.starts_with(b"gi") && lower.contains(&b'~')) {
        return false;
    }
    if let Some(rest) = lower.strip_prefix(b".git")
        && (link || rest.iter().all(|&b| b == b'.' || b == b' '))
    {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::plain_name;

    #[test]
    fn names_git_treats_specially_are_left_to_libgit2() {
        for name in [
            &b""[..],
            b".",
            b"..",
            b".git",
            b".GIT",
            b".git.",
            b".git ",
            b"git~1",
            b"GIT~2",
            b"gi7eba~1",
            b"a:b",
            b"a\\b",
            b"a/b",
        ] {
            assert!(!plain_name(name, false), "{name:?}");
        }
        assert!(!plain_name(b".gitmodules", true));
        assert!(!plain_name(b".gitattributes", true));
        for name in [
            &b".gitignore"[..],
            b".github",
            b".gitattributes",
            b"caf\xc3\xa9.txt",
            b"\xff\xfe.bin",
            b"file~",
            b"notes.git",
        ] {
            assert!(plain_name(name, false), "{name:?}");
        }
    }
}
