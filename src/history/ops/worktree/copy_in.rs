//! Files copied from the user's checkout into a session's worktree (`--carry`,
//! `worktree_include`). Both trees are the user's and the repository's to shape, so every
//! path is opened below its tree's root one name at a time without following a link
//! (`O_NOFOLLOW`, `AT_SYMLINK_NOFOLLOW`): a folder on the way that is a link in either tree
//! refuses the path, and a link standing where a file or folder is copied is replaced, never
//! written through.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::moves::CopyKind;

fn open_root(path: &Path) -> io::Result<OwnedFd> {
    // A root is where the user works or pai's own worktree: trusted, and followed like a cd.
    Ok(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

fn open_dir(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(dir, name, flags, Mode::empty()).map_err(|e| match e {
        Errno::LOOP | Errno::NOTDIR => io::Error::other(format!(
            "{} is a symbolic link or not a folder",
            name.to_string_lossy()
        )),
        e => e.into(),
    })
}

/// The folder holding `rel` below `root`, and `rel`'s last name; missing folders are made
/// when `create`.
fn parent_of<'r>(root: &Path, rel: &'r str, create: bool) -> io::Result<(OwnedFd, &'r OsStr)> {
    let mut parts = rel.split('/').filter(|p| !p.is_empty()).peekable();
    let mut dir = open_root(root)?;
    while let Some(part) = parts.next() {
        if part == "." || part == ".." {
            return Err(io::Error::other("not a path inside the project"));
        }
        let name = OsStr::new(part);
        if parts.peek().is_none() {
            return Ok((dir, name));
        }
        dir = match open_dir(dir.as_fd(), name) {
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                rustix::fs::mkdirat(dir.as_fd(), name, Mode::from_raw_mode(0o777))?;
                open_dir(dir.as_fd(), name)?
            }
            other => other?,
        };
    }
    Err(io::Error::other("an empty path"))
}

/// Copy `rel` of the tree `from` into the tree `to` as `kind` says.
pub(crate) fn copy_in(from: &Path, to: &Path, rel: &str, kind: CopyKind) -> io::Result<()> {
    let absent_is_fine =
        |e: &io::Error| kind == CopyKind::AsItIs && e.kind() == io::ErrorKind::NotFound;
    let found = match parent_of(from, rel, false) {
        Ok((src, name)) => match rustix::fs::statat(src.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Some((src, name, FileType::from_raw_mode(st.st_mode))),
            Err(e) if absent_is_fine(&e.into()) => None,
            Err(e) => return Err(e.into()),
        },
        Err(e) if absent_is_fine(&e) => None,
        Err(e) => return Err(e),
    };
    let Some((src, name, found)) = found else {
        // Gone from the checkout: gone from the worktree too.
        return match parent_of(to, rel, false) {
            Ok((dst, name)) => remove_file(dst.as_fd(), name),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
    };
    let (dst, _) = parent_of(to, rel, true)?;
    if found == FileType::Symlink && kind == CopyKind::AsItIs {
        let target = rustix::fs::readlinkat(src.as_fd(), name, Vec::new())?;
        remove_file(dst.as_fd(), name)?;
        return Ok(rustix::fs::symlinkat(
            OsStr::from_bytes(target.as_bytes()),
            dst.as_fd(),
            name,
        )?);
    }
    copy_entry(src.as_fd(), dst.as_fd(), name)
}

/// Remove the file or link `name` of `dir`; nothing there is fine.
fn remove_file(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Copy the file or folder `name` of `src` to `dst` (links inside skipped).
fn copy_entry(src: BorrowedFd<'_>, dst: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    let st = rustix::fs::statat(src, name, AtFlags::SYMLINK_NOFOLLOW)?;
    let kind = FileType::from_raw_mode(st.st_mode);
    let standing = rustix::fs::statat(dst, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|s| FileType::from_raw_mode(s.st_mode));
    match kind {
        FileType::Directory => {
            if standing.is_some_and(|t| t != FileType::Directory) {
                remove_file(dst, name)?;
            }
            match rustix::fs::mkdirat(dst, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            let from = open_dir(src, name)?;
            let into = open_dir(dst, name)?;
            for entry in rustix::fs::Dir::read_from(&from)? {
                let entry = entry?;
                let child = OsStr::from_bytes(entry.file_name().to_bytes());
                if child != "." && child != ".." {
                    copy_entry(from.as_fd(), into.as_fd(), child)?;
                }
            }
            Ok(())
        }
        FileType::RegularFile => {
            if standing.is_some() {
                remove_file(dst, name)?;
            }
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let input = rustix::fs::openat(src, name, flags, Mode::empty())?;
            let out_flags =
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let perm = Mode::from_raw_mode(st.st_mode & 0o777);
            let output = rustix::fs::openat(dst, name, out_flags, perm)?;
            let (mut input, mut output) = (std::fs::File::from(input), std::fs::File::from(output));
            io::copy(&mut input, &mut output)?;
            // The creation mask may have taken bits the file had.
            Ok(rustix::fs::fchmod(&output, perm)?)
        }
        // Links inside a copied folder, and special files, are not copied.
        _ => Ok(()),
    }
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
        assert!(copy_in(&origin, &tree, "dir/x", CopyKind::AsItIs).is_err());
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        copy_in(&origin, &tree, "dir", CopyKind::Included).unwrap();
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
        copy_in(&origin, &tree, "f", CopyKind::AsItIs).unwrap();
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"theirs");
        assert_eq!(std::fs::read(tree.join("f")).unwrap(), b"mine");
        // A link in the checkout is carried as a link; a file gone from it goes.
        std::os::unix::fs::symlink("f", origin.join("l")).unwrap();
        copy_in(&origin, &tree, "l", CopyKind::AsItIs).unwrap();
        assert_eq!(std::fs::read_link(tree.join("l")).unwrap(), Path::new("f"));
        std::fs::remove_file(origin.join("f")).unwrap();
        copy_in(&origin, &tree, "f", CopyKind::AsItIs).unwrap();
        assert!(std::fs::symlink_metadata(tree.join("f")).is_err());
        // A link on the way in the checkout is refused too, and nothing is read through it.
        std::fs::write(outside.join("secret"), "theirs").unwrap();
        std::os::unix::fs::symlink(&outside, origin.join("out")).unwrap();
        assert!(copy_in(&origin, &tree, "out/secret", CopyKind::Included).is_err());
        assert!(std::fs::symlink_metadata(tree.join("out")).is_err());
        // Permission bits come along.
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::write(origin.join("run.sh"), "x").unwrap();
        std::fs::set_permissions(
            origin.join("run.sh"),
            std::fs::Permissions::from_mode(0o750),
        )
        .unwrap();
        copy_in(&origin, &tree, "run.sh", CopyKind::Included).unwrap();
        let mode = std::fs::metadata(tree.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o750);
    }
}
