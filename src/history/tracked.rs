//! The blob git's index records for each tracked file, looked up by path, for the repository
//! map: a tracked file's version is its index blob, so the map knows what it holds without
//! a `stat` of every file (at 100,000 files those stats alone cost five times `git ls-files`).
//! The index is kept as read (one buffer and a small record per entry, no string per path).

use std::path::Path;

use super::index_file::{self, IndexFile};
use super::repo::{self, Found};

/// git's modes for regular files: the only entries a file's text can be looked up for.
const REGULAR: [i32; 2] = [0o100_644, 0o100_755];

/// The project's index, for looking up tracked files' blobs.
#[derive(Debug)]
pub struct TrackedBlobs {
    index: IndexFile,
}

impl TrackedBlobs {
    /// The index of the repository at `root` (`None` outside git, in pai's private repository,
    /// or when the index cannot be read: the map then reads files by their stat data).
    pub fn read(root: &Path) -> Option<TrackedBlobs> {
        let Ok(Found::Repo(hr)) = repo::find(root) else {
            return None;
        };
        if hr.private {
            return None;
        }
        let index = index_file::load(&hr.repo).ok()?;
        Some(TrackedBlobs { index })
    }

    /// The raw blob id the index records for the regular file at project-relative `path`
    /// (stage 0; `None` for untracked, conflicted, symlinks and submodules).
    pub fn blob(&self, path: &str) -> Option<[u8; 20]> {
        let (id, mode) = self.index.get(path)?;
        if !REGULAR.contains(&mode) {
            return None;
        }
        id.as_bytes().try_into().ok()
    }

    /// How many entries the index has.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the index has no entries.
    pub fn is_empty(&self) -> bool {
        self.index.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        out.stdout
    }

    #[test]
    fn tracked_blobs_are_what_git_stages() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a b.py"), "a = 1\n").unwrap();
        std::fs::write(root.join("README"), "hello\n").unwrap();
        std::fs::write(root.join("run.sh"), "echo\n").unwrap();
        std::os::unix::fs::symlink("README", root.join("link")).unwrap();
        git(root, &["add", "-A"]);
        git(root, &["update-index", "--chmod=+x", "run.sh"]);
        std::fs::write(root.join("untracked.txt"), "new\n").unwrap();
        let listing = git(root, &["ls-files", "-s", "-z"]);
        let tracked = TrackedBlobs::read(root).unwrap();
        let mut checked = 0;
        // "<mode> <id> <stage>\t<path>\0" per entry.
        for line in String::from_utf8(listing).unwrap().split('\0') {
            let Some((meta, path)) = line.split_once('\t') else {
                continue;
            };
            let mut meta = meta.split(' ');
            let (mode, id) = (meta.next().unwrap(), meta.next().unwrap());
            let got = tracked
                .blob(path)
                .map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>());
            if mode == "120000" {
                assert_eq!(got, None, "{path} is a symlink");
            } else {
                assert_eq!(got.as_deref(), Some(id), "{path}");
                checked += 1;
            }
        }
        assert_eq!(checked, 3);
        assert_eq!(tracked.blob("untracked.txt"), None);
        assert_eq!(tracked.blob("src"), None);
    }
}
