//! What crosses from the user's checkout into a worktree session: `--carry`'s uncommitted
//! changes and the files `worktree_include` names, copied without following a link out of
//! either tree; and what removing a worktree would lose.

use std::path::{Path, PathBuf};

use git2::Repository;

use super::linked::{Held, Linked, write_record};
use crate::history::error::{Context, HistoryError};

/// `--carry`: bring the user's uncommitted changes (edited, deleted and untracked files that
/// are not ignored) from their checkout into the held session's worktree, as uncommitted
/// edits there: a plan that touches one first snapshots it as the user's (`Pai-Kind: user`),
/// as in the user's own checkout, so undo gives it back exactly. The record lists them.
pub fn carry(held: &mut Held) -> Result<usize, HistoryError> {
    let linked = &mut held.linked;
    let changed = uncommitted(&linked.origin)?;
    for rel in &changed {
        let (from, to) = match (below(&linked.origin, rel), below(&linked.path, rel)) {
            (Ok(from), Ok(to)) => (from, to),
            (Err(e), _) | (_, Err(e)) => {
                return Err(e).ctx(|| format!("cannot carry {rel} into the worktree"));
            }
        };
        let copied = match std::fs::symlink_metadata(&from) {
            Err(_) => match std::fs::remove_file(&to) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
            Ok(meta) if meta.file_type().is_symlink() => {
                let _ = std::fs::remove_file(&to);
                std::fs::read_link(&from).and_then(|target| {
                    if let Some(parent) = to.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    std::os::unix::fs::symlink(target, &to)
                })
            }
            Ok(_) => copy_tree(&from, &to),
        };
        copied.ctx(|| format!("cannot carry {rel} into the worktree"))?;
    }
    linked.carried = changed;
    let state = linked
        .path
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    write_record(&state, linked)?;
    Ok(linked.carried.len())
}

/// The worktree's changes that are in no commit and would be lost with it: what `--carry`
/// copied and nobody changed since is still in the user's checkout, so it does not count.
pub fn lost_if_removed(linked: &Linked) -> Result<Vec<String>, HistoryError> {
    let mut dirty = uncommitted(&linked.path)?;
    dirty.retain(|p| !(linked.carried.contains(p) && same_as_origin(linked, p)));
    Ok(dirty)
}

/// Whether the worktree's `rel` is what the user's checkout has (both absent counts).
fn same_as_origin(linked: &Linked, rel: &str) -> bool {
    let read = |p: PathBuf| match std::fs::symlink_metadata(&p) {
        Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&p)
            .ok()
            .map(|t| t.into_os_string().into_encoded_bytes()),
        Ok(_) => std::fs::read(&p).ok(),
        Err(_) => None,
    };
    read(linked.origin.join(rel)) == read(linked.path.join(rel))
}

/// The paths of the worktree at `path` that differ from its HEAD (untracked ones included,
/// ignored ones and pai's state directory not).
pub fn uncommitted(path: &Path) -> Result<Vec<String>, HistoryError> {
    let repo = Repository::open(path).ctx(|| format!("cannot open {}", path.display()))?;
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .ctx(|| format!("cannot read the status of {}", path.display()))?;
    Ok(statuses
        .iter()
        .filter_map(|s| s.path().ok().map(str::to_string))
        .filter(|p| p != crate::layout::STATE_DIR && !p.starts_with(".pai_history/"))
        .collect())
}

/// Copy what `include` names (paths relative to the user's checkout: files and whole
/// directories, links skipped) into the worktree. Returns one line per path it could not
/// copy; nothing is copied unless the user listed it.
pub fn copy_included(linked: &Linked, include: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for rel in include {
        let clean = Path::new(rel);
        if clean.is_absolute()
            || clean
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            problems.push(format!(
                "worktree_include: {rel} is not a path inside the project"
            ));
            continue;
        }
        let copied = below(&linked.origin, rel)
            .and_then(|from| Ok((from, below(&linked.path, rel)?)))
            .and_then(|(from, to)| copy_tree(&from, &to));
        if let Err(e) = copied {
            problems.push(format!("worktree_include: cannot copy {rel}: {e}"));
        }
    }
    problems
}

/// `base/rel`, refused when a folder on the way is a symbolic link: one checkout can hold a
/// link where the other holds a folder (the user replaced a committed link), and reading or
/// writing through it would leave the tree.
fn below(base: &Path, rel: &str) -> std::io::Result<PathBuf> {
    let mut at = base.to_path_buf();
    let mut parts = Path::new(rel).components().peekable();
    while let Some(part) = parts.next() {
        let std::path::Component::Normal(name) = part else {
            return Err(std::io::Error::other("not a path inside the project"));
        };
        at.push(name);
        let link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if link && parts.peek().is_some() {
            return Err(std::io::Error::other(format!(
                "{} is a symbolic link",
                at.display()
            )));
        }
    }
    Ok(at)
}

/// Copy the file or folder `from` to `to` (links inside skipped). A link standing at `to`
/// is replaced, never written through.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if std::fs::symlink_metadata(to).is_ok_and(|m| m.file_type().is_symlink())
        && (meta.is_dir() || meta.is_file())
    {
        std::fs::remove_file(to)?;
    }
    if meta.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
    } else if meta.is_file() {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(from, to)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_on_the_way_is_refused_and_a_link_at_the_target_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let (origin, tree, outside) = (
            tmp.path().join("origin"),
            tmp.path().join("tree"),
            tmp.path().join("outside"),
        );
        for d in [&origin, &tree, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        // The user replaced a committed link `dir` with a folder; the worktree still has it.
        std::fs::create_dir_all(origin.join("dir")).unwrap();
        std::fs::write(origin.join("dir/x"), "mine").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("dir")).unwrap();
        assert!(below(&tree, "dir/x").is_err());
        assert_eq!(below(&origin, "dir/x").unwrap(), origin.join("dir/x"));
        copy_tree(&origin.join("dir"), &tree.join("dir")).unwrap();
        assert!(
            !std::fs::symlink_metadata(tree.join("dir"))
                .unwrap()
                .is_symlink()
        );
        assert_eq!(std::fs::read(tree.join("dir/x")).unwrap(), b"mine");
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        // A file where the worktree has a link to a file outside: the link goes, not the file.
        std::fs::write(outside.join("victim"), "theirs").unwrap();
        std::os::unix::fs::symlink(outside.join("victim"), tree.join("f")).unwrap();
        std::fs::write(origin.join("f"), "mine").unwrap();
        copy_tree(&origin.join("f"), &tree.join("f")).unwrap();
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"theirs");
        assert_eq!(std::fs::read(tree.join("f")).unwrap(), b"mine");
    }
}
