//! pai's own state directory, `.pai_history/`, opened the way the gate opens the model's paths:
//! relative to a descriptor on the project root, one component at a time, never following a
//! symlink and never opening a special file blocking. In a cloned repository everything under
//! `.pai_history` is attacker-controlled: a planted `.pai_history -> ~/.config`, a
//! `session.lock -> ~/.bashrc` or a trash folder that is a link must make pai refuse, never
//! write through it.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::{atomic, sys};

pub use crate::layout::STATE_DIR;

/// One entry [`StateDir::walk`] found: its path components, and its bytes and permission bits
/// when it is a regular file (`None` for a link or special file).
pub type WalkedEntry = (Vec<String>, Option<(Vec<u8>, u32)>);

/// An open `.pai_history/` of one project.
#[derive(Debug)]
pub struct StateDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// The error for an entry that is a link or of the wrong type.
fn not_plain(path: &Path, what: &str) -> io::Error {
    io::Error::other(format!(
        "{} is a symbolic link or not a {what}; pai keeps its own state there and never follows \
         a link or opens a special file in it: remove it (`rm {}`) and try again",
        path.display(),
        crate::shell::quote_path(path)
    ))
}

fn is_link_or_wrong_type(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ELOOP) | Some(libc::ENOTDIR) | Some(libc::EMLINK)
    )
}

/// Open the directory `name` under `dir` without following a link, creating it if asked.
fn open_child_dir(dir: &OwnedFd, name: &str, create: bool, shown: &Path) -> io::Result<OwnedFd> {
    let c = sys::cstr(name)?;
    match sys::openat(dir.as_fd(), &c, sys::DIR_READ, 0) {
        Ok(fd) => Ok(fd),
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
            match sys::mkdirat(dir.as_fd(), &c, 0o755) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            sys::openat(dir.as_fd(), &c, sys::DIR_READ, 0).map_err(|e| {
                if is_link_or_wrong_type(&e) {
                    not_plain(shown, "directory")
                } else {
                    e
                }
            })
        }
        Err(e) if is_link_or_wrong_type(&e) => Err(not_plain(shown, "directory")),
        Err(e) => Err(e),
    }
}

impl StateDir {
    /// Open (creating when `create`) `<root>/.pai_history`. A `.gitignore` of `*` is written on
    /// creation so the directory never shows in `git status`.
    pub fn open(root: &Path, create: bool) -> io::Result<StateDir> {
        Self::open_named(root, STATE_DIR, create)
    }

    /// Open (creating when `create`) the directory `name` at the project root the same way
    /// (`.git`, for guarding what runs later). Only `.pai_history` gets a `.gitignore`.
    pub fn open_named(root: &Path, name: &str, create: bool) -> io::Result<StateDir> {
        // The root itself is where the user started pai: trusted, and followed like a cd.
        let root_fd: OwnedFd = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY)
                .open(root)?
                .into()
        };
        let path = root.join(name);
        let fd = open_child_dir(&root_fd, name, create, &path)?;
        let dir = StateDir { fd, path };
        if create && name == STATE_DIR {
            dir.own_gitignore()?;
        }
        Ok(dir)
    }

    /// Make `.gitignore` pai's own (`*`): one a repository shipped (`!session_*`, say, so the
    /// user's session logs would show in `git status` and be pushed) is rewritten, never kept;
    /// a link or special file there is refused, as everywhere in the state directory.
    fn own_gitignore(&self) -> io::Result<()> {
        const OURS: &[u8] = b"*\n";
        let name = [".gitignore"];
        match self.read(&name)? {
            Some(bytes) if bytes == OURS => Ok(()),
            Some(_) => self.replace(&name, OURS, 0o644),
            None => self.write_new(&name, OURS, 0o644).map(drop),
        }
    }

    /// The directory's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory at `components` under the state directory (created when `create`), every
    /// step refusing a link.
    pub fn dir(&self, components: &[&str], create: bool) -> io::Result<OwnedFd> {
        let mut fd = sys::reopen_dir(self.fd.as_fd())?;
        let mut shown = self.path.clone();
        for c in components {
            check_component(c)?;
            shown.push(c);
            fd = open_child_dir(&fd, c, create, &shown)?;
        }
        Ok(fd)
    }

    /// The parent directory of a file at `components`, created as needed, and the file's name.
    fn parent<'c>(&self, components: &[&'c str]) -> io::Result<(OwnedFd, &'c str, PathBuf)> {
        let (name, dirs) = components
            .split_last()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty state path"))?;
        check_component(name)?;
        let fd = self.dir(dirs, true)?;
        let mut shown = self.path.clone();
        shown.extend(components);
        Ok((fd, name, shown))
    }

    /// Open a regular file for reading and writing (created when missing), refusing a link, a
    /// FIFO or a device: for the lock file.
    pub fn open_rw(&self, components: &[&str]) -> io::Result<File> {
        self.open_file(
            components,
            libc::O_RDWR | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK,
        )
    }

    /// Open a regular file for appending (created when missing), refusing a link or special
    /// file: for the session logs.
    pub fn open_append(&self, components: &[&str]) -> io::Result<File> {
        self.open_file(
            components,
            libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK,
        )
    }

    fn open_file(&self, components: &[&str], flags: libc::c_int) -> io::Result<File> {
        let (dir, name, shown) = self.parent(components)?;
        let fd = sys::openat(dir.as_fd(), &sys::cstr(name)?, flags, 0o600).map_err(|e| {
            if is_link_or_wrong_type(&e) || e.raw_os_error() == Some(libc::ENXIO) {
                not_plain(&shown, "regular file")
            } else {
                e
            }
        })?;
        ensure_regular(&fd, &shown)?;
        clear_nonblock(&fd)?;
        Ok(File::from(fd))
    }

    /// Write a new regular file with `bytes` and `mode`, whole or not at all (an unnamed file
    /// linked into place, so a full disk or a kill never leaves a short file that a later run
    /// would take for complete, and no temporary name shows in `git status` before the
    /// directory's `.gitignore` exists). `Ok(false)` when a regular file is already there (left as
    /// it is); an existing link or special file is an error.
    pub fn write_new(&self, components: &[&str], bytes: &[u8], mode: u32) -> io::Result<bool> {
        let (dir, name, shown) = self.parent(components)?;
        let c = sys::cstr(name)?;
        match atomic::write_new_unnamed(&dir, &c, bytes, mode) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let st = sys::lstatat(dir.as_fd(), &c)?;
                if st.kind == sys::Kind::File {
                    Ok(false)
                } else {
                    Err(not_plain(&shown, "regular file"))
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Read a regular file; `Ok(None)` when it does not exist. A link or special file is an
    /// error, never followed or opened blocking.
    pub fn read(&self, components: &[&str]) -> io::Result<Option<Vec<u8>>> {
        let (name, dirs) = components
            .split_last()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty state path"))?;
        let dir = match self.dir(dirs, false) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut shown = self.path.clone();
        shown.extend(components);
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let fd = match sys::openat(dir.as_fd(), &sys::cstr(name)?, flags, 0) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if is_link_or_wrong_type(&e) => return Err(not_plain(&shown, "regular file")),
            Err(e) => return Err(e),
        };
        ensure_regular(&fd, &shown)?;
        sys::read_up_to(&fd, usize::MAX >> 1).map(Some)
    }
}

impl StateDir {
    /// Put `bytes` at `components` (mode `mode`), whatever is there now, in one step: a file,
    /// link or special file in the way is replaced, never written through.
    pub fn replace(&self, components: &[&str], bytes: &[u8], mode: u32) -> io::Result<()> {
        // A rename replaces a link or special file itself, never what it points to; the old
        // content stays until the new one is complete.
        let (dir, name, _) = self.parent(components)?;
        atomic::write(
            &dir,
            &sys::cstr(name)?,
            bytes,
            atomic::Mode::Exact(mode),
            false,
            None,
        )
    }

    /// Remove the file, link or special file at `components` (not a directory); absent is
    /// fine.
    pub fn remove(&self, components: &[&str]) -> io::Result<()> {
        let (dir, name, _) = self.parent(components)?;
        match sys::unlinkat(dir.as_fd(), &sys::cstr(name)?, false) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Remove the entry at `components` and, for a directory, everything below it, never
    /// following a link (a link is removed itself). Absent is fine.
    pub fn remove_tree(&self, components: &[&str]) -> io::Result<()> {
        let (dir, name, _) = match self.parent(components) {
            Ok(found) => found,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let c = sys::cstr(name)?;
        match sys::lstatat(dir.as_fd(), &c) {
            Ok(st) if st.kind == sys::Kind::Dir => {
                let sub = sys::openat(dir.as_fd(), &c, sys::DIR_READ, 0)?;
                empty_dir(&sub, 0)?;
                sys::unlinkat(dir.as_fd(), &c, true)
            }
            Ok(_) => sys::unlinkat(dir.as_fd(), &c, false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Make sure every directory on the way to `components` is a real directory: a link or
    /// file planted in place of one is removed (the directories are recreated by a write).
    pub fn clear_way(&self, components: &[&str]) -> io::Result<()> {
        let Some((_, dirs)) = components.split_last() else {
            return Ok(());
        };
        let mut fd = sys::reopen_dir(self.fd.as_fd())?;
        for d in dirs {
            check_component(d)?;
            let c = sys::cstr(d)?;
            match sys::lstatat(fd.as_fd(), &c) {
                Ok(st) if st.kind == sys::Kind::Dir => {}
                Ok(_) => sys::unlinkat(fd.as_fd(), &c, false)?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            match sys::openat(fd.as_fd(), &c, sys::DIR_READ, 0) {
                Ok(next) => fd = next,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Every entry under the directory at `components`, recursively (at most `depth` levels):
    /// `(path components, Some(bytes, mode))` for regular files and `(path, None)` for links
    /// and special files, which are never followed or opened. A missing directory, or one that
    /// is itself a link, reads as `[(components, None)]` when it is a link and as nothing when
    /// it is missing. A regular file (as its directory's listing types it) for which `unread`
    /// holds, given its path components, is neither stat'ed nor opened: it reads as
    /// `Some((empty, 0))`, present and nothing more (pai's own session logs, hundreds of
    /// megabytes in an old project, are only checked for being there).
    pub fn walk(
        &self,
        components: &[&str],
        depth: usize,
        unread: &dyn Fn(&[String]) -> bool,
    ) -> io::Result<Vec<WalkedEntry>> {
        let base: Vec<String> = components.iter().map(|c| c.to_string()).collect();
        let mut out = Vec::new();
        let dir = match self.dir(components, false) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(_) => {
                out.push((base, None));
                return Ok(out);
            }
        };
        let mut stack = vec![(dir, base, 0usize)];
        while let Some((dir, at, level)) = stack.pop() {
            for e in sys::read_dir(dir.as_fd())? {
                let mut path = at.clone();
                path.push(crate::rawname::encode(e.name.to_bytes()).into_owned());
                if e.kind == sys::Kind::File && unread(&path) {
                    // The listing's type says enough: no stat, no read.
                    out.push((path, Some((Vec::new(), 0))));
                    continue;
                }
                let st = sys::lstatat(dir.as_fd(), &e.name)?;
                match st.kind {
                    sys::Kind::Dir if level < depth => {
                        let sub = sys::openat(dir.as_fd(), &e.name, sys::DIR_READ, 0)?;
                        stack.push((sub, path, level + 1));
                    }
                    sys::Kind::File => {
                        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
                        let fd = sys::openat(dir.as_fd(), &e.name, flags, 0)?;
                        let bytes = sys::read_up_to_sized(&fd, 1 << 22, st.size)?;
                        out.push((path, Some((bytes, st.perm))));
                    }
                    _ => out.push((path, None)),
                }
            }
        }
        Ok(out)
    }

    /// The entries of the directory at `components`: `(name, is_directory)` for directories
    /// and regular files. A link or special file inside is an error, so nothing is silently
    /// skipped or followed.
    pub fn entries(&self, components: &[&str]) -> io::Result<Vec<(String, bool)>> {
        let dir = self.dir(components, false)?;
        let mut out = Vec::new();
        for e in sys::read_dir(dir.as_fd())? {
            let name = crate::rawname::encode(e.name.to_bytes()).into_owned();
            if name == "." || name == ".." {
                continue;
            }
            let st = sys::lstatat(dir.as_fd(), &e.name)?;
            match st.kind {
                sys::Kind::Dir => out.push((name, true)),
                sys::Kind::File => out.push((name, false)),
                _ => {
                    let mut shown = self.path.clone();
                    shown.extend(components);
                    shown.push(&name);
                    return Err(not_plain(&shown, "regular file or directory"));
                }
            }
        }
        Ok(out)
    }

    /// Read a regular file and its permission bits (see [`StateDir::read`]).
    pub fn read_with_mode(&self, components: &[&str]) -> io::Result<(Vec<u8>, u32)> {
        let (name, dirs) = components
            .split_last()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty state path"))?;
        let dir = self.dir(dirs, false)?;
        let mut shown = self.path.clone();
        shown.extend(components);
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let fd = sys::openat(dir.as_fd(), &sys::cstr(name)?, flags, 0).map_err(|e| {
            if is_link_or_wrong_type(&e) {
                not_plain(&shown, "regular file")
            } else {
                e
            }
        })?;
        let st = sys::fstat(fd.as_fd())?;
        if st.kind != sys::Kind::File {
            return Err(not_plain(&shown, "regular file"));
        }
        Ok((sys::read_up_to(&fd, usize::MAX >> 1)?, st.perm))
    }
}

/// A state path component: one plain name, never `..`, `.` or empty.
/// Remove everything inside `dir`, deepest first, without following links.
fn empty_dir(dir: &OwnedFd, depth: usize) -> io::Result<()> {
    if depth > 64 {
        return Err(io::Error::other("nested too deeply to remove"));
    }
    for e in sys::read_dir(dir.as_fd())? {
        let st = sys::lstatat(dir.as_fd(), &e.name)?;
        if st.kind == sys::Kind::Dir {
            let sub = sys::openat(dir.as_fd(), &e.name, sys::DIR_READ, 0)?;
            empty_dir(&sub, depth + 1)?;
            sys::unlinkat(dir.as_fd(), &e.name, true)?;
        } else {
            sys::unlinkat(dir.as_fd(), &e.name, false)?;
        }
    }
    Ok(())
}

fn check_component(c: &str) -> io::Result<()> {
    if c.is_empty() || c == "." || c == ".." || c.contains('/') || c.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{c}` is not a plain name"),
        ));
    }
    Ok(())
}

fn ensure_regular(fd: &OwnedFd, shown: &Path) -> io::Result<()> {
    if sys::fstat(fd.as_fd())?.kind == sys::Kind::File {
        Ok(())
    } else {
        Err(not_plain(shown, "regular file"))
    }
}

/// Files are opened non-blocking so a FIFO cannot hang pai; a regular file is then used
/// normally.
fn clear_nonblock(fd: &OwnedFd) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    Ok(rustix::fs::fcntl_setfl(
        fd,
        flags - rustix::fs::OFlags::NONBLOCK,
    )?)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn planted_links_are_refused_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("p");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        // .pai_history itself a link
        symlink(&outside, root.join(STATE_DIR)).unwrap();
        let err = StateDir::open(&root, true).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        std::fs::remove_file(root.join(STATE_DIR)).unwrap();
        // a file inside is a link
        let state = StateDir::open(&root, true).unwrap();
        let victim = outside.join("bashrc");
        std::fs::write(&victim, "keep me\n").unwrap();
        symlink(&victim, root.join(STATE_DIR).join("session.lock")).unwrap();
        assert!(state.open_rw(&["session.lock"]).is_err());
        assert!(state.open_append(&["session.lock"]).is_err());
        assert!(state.write_new(&["session.lock"], b"x", 0o644).is_err());
        assert!(state.read(&["session.lock"]).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
        // a directory on the way is a link
        symlink(&outside, root.join(STATE_DIR).join("trash")).unwrap();
        assert!(
            state
                .write_new(&["trash", "s", "1", "a.txt"], b"x", 0o644)
                .is_err()
        );
        assert!(!outside.join("s").exists());
    }

    #[test]
    fn a_fifo_is_refused_without_hanging() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::open(tmp.path(), true).unwrap();
        let fifo = tmp.path().join(STATE_DIR).join("session.lock");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(state.open_rw(&["session.lock"]).is_err());
        assert!(state.read(&["session.lock"]).is_err());
    }

    #[test]
    fn remove_tree_removes_links_not_what_they_point_at() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep.txt"), "keep").unwrap();
        let state = StateDir::open(root.path(), true).unwrap();
        state
            .write_new(&["trash", "s", "1", "a.txt"], b"a", 0o644)
            .unwrap();
        std::os::unix::fs::symlink(
            outside.path(),
            root.path().join(".pai_history/trash/s/1/link"),
        )
        .unwrap();
        state.remove_tree(&["trash", "s", "1"]).unwrap();
        assert!(!root.path().join(".pai_history/trash/s/1").exists());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("keep.txt")).unwrap(),
            "keep"
        );
        state.remove_tree(&["trash", "s", "1"]).unwrap();
    }

    #[test]
    fn plain_files_work() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::open(tmp.path(), true).unwrap();
        assert!(
            state
                .write_new(&["trash", "s", "1", "a.txt"], b"hi", 0o600)
                .unwrap()
        );
        assert!(
            !state
                .write_new(&["trash", "s", "1", "a.txt"], b"no", 0o600)
                .unwrap()
        );
        assert_eq!(
            state.read(&["trash", "s", "1", "a.txt"]).unwrap().unwrap(),
            b"hi"
        );
        assert_eq!(state.read(&["nothing"]).unwrap(), None);
        let gi = state.read(&[".gitignore"]).unwrap().unwrap();
        assert_eq!(gi, b"*\n");
    }

    #[test]
    fn a_shipped_gitignore_is_rewritten_to_pais_own() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join(STATE_DIR)).unwrap();
        let shipped = tmp.path().join(STATE_DIR).join(".gitignore");
        std::fs::write(&shipped, "*\n!session_*\n").unwrap();
        StateDir::open(tmp.path(), false).unwrap();
        assert_eq!(
            std::fs::read(&shipped).unwrap(),
            b"*\n!session_*\n",
            "opening to read writes nothing"
        );
        StateDir::open(tmp.path(), true).unwrap();
        assert_eq!(std::fs::read(&shipped).unwrap(), b"*\n");
    }
}
