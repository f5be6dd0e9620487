//! Which of pai's own files its children must not reach, and how to say so to the kernel:
//! pai's directories ([`private_dirs`]), what covers them in a child's mount namespace
//! ([`covers`]), and Landlock rules that grant rights everywhere but beneath them
//! ([`add_rules_except`]). `reach.rs` puts these together for each child.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, AccessFs, BitFlags, PathBeneath, RulesetCreated, RulesetCreatedAttr, RulesetError,
};
use rustix::fs::{FileType, Mode, OFlags};

/// How deep [`add_rules_except`] descends: pai's directories are a few levels below `/`; a
/// deeper path (or a loop through bind mounts) stops the descent there, granting nothing more.
const MAX_DEPTH: usize = 32;

/// The directories pai keeps for itself: its configuration (`pai-code`: the key and the
/// credentials), its state (`pai`: records of operations, sessions, worktrees) and its cache
/// (`pai`: the map's cache). The first two are made (mode 0700) when missing, so a child
/// cannot plant one for pai to adopt later (the cache, which vouches for nothing, is covered
/// when it exists). Each is given as its canonical path (symlinked parents resolved), since
/// that is where the kernel finds it whatever name a child uses.
pub fn private_dirs() -> Vec<PathBuf> {
    let wanted = [
        (dirs::config_dir().map(|d| d.join("pai-code")), true),
        (dirs::state_dir().map(|d| d.join("pai")), true),
        (dirs::cache_dir().map(|d| d.join("pai")), false),
    ];
    let mut out: Vec<PathBuf> = Vec::new();
    for (dir, make) in wanted {
        let Some(dir) = dir.filter(|d| d.is_absolute()) else {
            continue;
        };
        if make {
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir);
        }
        if let Ok(real) = std::fs::canonicalize(&dir)
            && !out.contains(&real)
        {
            out.push(real);
        }
    }
    out
}

/// One path to cover in the child's mount namespace.
pub(crate) struct Cover {
    /// The path, as the kernel resolves it.
    pub(crate) path: CString,
    /// A directory (covered by an empty tmpfs) rather than a file (covered by `/dev/null`).
    pub(crate) dir: bool,
}

/// What to cover so that `hidden` is out of reach while `root` (the project, which may lie
/// inside one of them, as a worktree session's does) stays as it is: each hidden path, or,
/// when it holds the root, each of its entries not on the way to the root.
pub(crate) fn covers(hidden: &[PathBuf], root: &Path) -> Vec<Cover> {
    let mut out = Vec::new();
    for h in hidden {
        cover_except(h, root, 0, &mut out);
    }
    out
}

fn cover_except(path: &Path, root: &Path, depth: usize, out: &mut Vec<Cover>) {
    if depth > MAX_DEPTH || path == root {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !root.starts_with(path) {
        if meta.is_symlink() {
            return;
        }
        if let Ok(c) = CString::new(path.as_os_str().as_bytes()) {
            out.push(Cover {
                path: c,
                dir: meta.is_dir(),
            });
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        cover_except(&entry.path(), root, depth + 1, out);
    }
}

/// Add rules granting `rights` beneath `base`, except beneath any of `hidden`: one rule for
/// `base` when it holds none of them; otherwise one per entry of `base` (descending towards
/// each hidden path), plus `READ_DIR` beneath `base` so its entries can still be listed. A
/// symbolic link gets no rule (its target is judged where it lies); a file gets the file
/// rights among `rights`.
pub(crate) fn add_rules_except(
    ruleset: RulesetCreated,
    base: &Path,
    rights: BitFlags<AccessFs>,
    hidden: &[PathBuf],
) -> Result<RulesetCreated, RulesetError> {
    let Ok(fd) = rustix::fs::open(
        base,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return Ok(ruleset);
    };
    grant(ruleset, fd, base, rights, hidden, 0)
}

fn grant(
    ruleset: RulesetCreated,
    fd: OwnedFd,
    path: &Path,
    rights: BitFlags<AccessFs>,
    hidden: &[PathBuf],
    depth: usize,
) -> Result<RulesetCreated, RulesetError> {
    if hidden.iter().any(|h| h == path) {
        return Ok(ruleset);
    }
    let Ok(stat) = rustix::fs::fstat(&fd) else {
        return Ok(ruleset);
    };
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind == FileType::Symlink {
        return Ok(ruleset);
    }
    if kind != FileType::Directory {
        let file_rights = rights & AccessFs::from_file(ABI::V6);
        return ruleset.add_rule(PathBeneath::new(fd, file_rights));
    }
    let holds_hidden = hidden.iter().any(|h| h.starts_with(path));
    if !holds_hidden || depth > MAX_DEPTH {
        return ruleset.add_rule(PathBeneath::new(fd, rights));
    }
    let listing = rights & AccessFs::ReadDir;
    let mut ruleset = if listing.is_empty() {
        ruleset
    } else {
        ruleset.add_rule(PathBeneath::new(fd.as_fd(), listing))?
    };
    let Ok(entries) = std::fs::read_dir(path) else {
        return Ok(ruleset);
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Ok(child) = rustix::fs::openat(
            &fd,
            name.as_os_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            continue;
        };
        ruleset = grant(ruleset, child, &path.join(&name), rights, hidden, depth + 1)?;
    }
    Ok(ruleset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_inside_a_hidden_directory_stays_and_its_neighbours_are_covered() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state/pai");
        let root = state.join("worktrees/abc");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(state.join("worktrees/other")).unwrap();
        std::fs::create_dir_all(state.join("projects/p1/ops")).unwrap();
        std::fs::write(state.join("note"), "x").unwrap();
        let config = dir.path().join("config/pai-code");
        std::fs::create_dir_all(&config).unwrap();
        let got = covers(&[config.clone(), state.clone()], &root);
        let mut paths: Vec<(String, bool)> = got
            .iter()
            .map(|c| (c.path.to_string_lossy().into_owned(), c.dir))
            .collect();
        paths.sort();
        let want = |p: &Path, d: bool| (p.to_string_lossy().into_owned(), d);
        let mut expected = vec![
            want(&config, true),
            want(&state.join("note"), false),
            want(&state.join("projects"), true),
            want(&state.join("worktrees/other"), true),
        ];
        expected.sort();
        assert_eq!(paths, expected);
    }

    #[test]
    fn a_hidden_directory_inside_the_root_is_covered_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let config = root.join("xdg/pai-code");
        std::fs::create_dir_all(&config).unwrap();
        let got = covers(std::slice::from_ref(&config), &root);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path.to_str().unwrap(), config.to_str().unwrap());
        assert!(got[0].dir);
    }
}
