//! Removing a worktree's directory on many threads. Removing a file is mostly waiting: once
//! its data has reached the disk, freeing its blocks can wait on the device (a discard, on
//! file systems mounted so), so one thread removing 100,000 files spends minutes where many
//! threads overlap the waits. The tree is split into subtrees (the directories a level or
//! two down), each removed by `std::fs::remove_dir_all`, which opens every directory beneath
//! its parent without following a link: a link inside is removed, never what it points to.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How many threads remove: they mostly wait on the device, not the processors.
const THREADS: usize = 16;
/// Split further while there are fewer subtrees than this.
const ENOUGH: usize = THREADS * 4;
/// How many levels are split at most.
const LEVELS: usize = 3;

/// Remove `root` and everything below it (a link or file at `root` is removed itself).
pub(crate) fn remove_tree(root: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(root)?;
    if !meta.is_dir() {
        return std::fs::remove_file(root);
    }
    // The directories split (to remove, emptied, deepest last) and the subtrees found.
    let mut split = vec![root.to_path_buf()];
    let mut level = vec![root.to_path_buf()];
    let mut subtrees = Vec::new();
    for depth in 1..=LEVELS {
        let mut below = Vec::new();
        for dir in &level {
            for entry in std::fs::read_dir(dir)? {
                let entry = entry?;
                // The entry's own type: a link to a directory is a link.
                if entry.file_type()?.is_dir() {
                    below.push(entry.path());
                } else {
                    std::fs::remove_file(entry.path())?;
                }
            }
        }
        if below.len() >= ENOUGH || depth == LEVELS {
            subtrees = below;
            break;
        }
        split.extend(below.iter().cloned());
        level = below;
    }
    remove_all(subtrees)?;
    for dir in split.iter().rev() {
        std::fs::remove_dir(dir)?;
    }
    Ok(())
}

/// Remove each of `subtrees` whole, on up to [`THREADS`] threads; the first error, if any.
fn remove_all(subtrees: Vec<PathBuf>) -> std::io::Result<()> {
    let queue = Mutex::new(subtrees);
    let take = || queue.lock().ok().and_then(|mut q| q.pop());
    let first_error: Mutex<Option<std::io::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                while let Some(dir) = take() {
                    if let Err(e) = std::fs::remove_dir_all(&dir)
                        && let Ok(mut slot) = first_error.lock()
                    {
                        slot.get_or_insert(e);
                    }
                }
            });
        }
    });
    match first_error.into_inner() {
        Ok(Some(e)) => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::remove_tree;

    #[test]
    fn removes_a_deep_tree_and_never_follows_a_link_out_of_it() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, outside) = (tmp.path().join("wt"), tmp.path().join("outside"));
        std::fs::create_dir_all(outside.join("keep")).unwrap();
        std::fs::write(outside.join("keep/file"), "theirs").unwrap();
        for i in 0..300 {
            let dir = root.join(format!("a{}/b{}/c{}", i % 3, i % 7, i % 11));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("f{i}")), "x").unwrap();
        }
        std::fs::write(root.join("top.txt"), "x").unwrap();
        // Links at every level of the split, to a directory and a file outside.
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("a0/link")).unwrap();
        std::os::unix::fs::symlink(outside.join("keep"), root.join("a1/b1/link")).unwrap();
        std::os::unix::fs::symlink(outside.join("keep/file"), root.join("a2/b2/c2/f")).unwrap();
        remove_tree(&root).unwrap();
        assert!(!root.exists());
        assert_eq!(std::fs::read(outside.join("keep/file")).unwrap(), b"theirs");
        // A link as the root is removed itself.
        std::os::unix::fs::symlink(&outside, &root).unwrap();
        remove_tree(&root).unwrap();
        assert!(std::fs::symlink_metadata(&root).is_err());
        assert!(outside.join("keep/file").exists());
    }
}
