//! Atomic file replacement and the clean-up of temporaries a crashed run left behind.
//!
//! A write goes to a temporary file in the target's own directory (so the rename cannot cross
//! file systems), named `.pai-tmp-<pid>-<seq>-<nonce>`; it is written, given the target's
//! permission bits, fsynced, renamed over the target, and then the directory is fsynced so the
//! rename itself is durable. A reader (or a crash) sees the complete old or the complete new
//! content, never a mix. On any failure the temporary is unlinked; if the process is killed
//! first, the next [`super::Workspace::open`] removes temporaries whose process is gone.

use std::ffi::{CStr, CString};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use super::deny::{DenyList, TEMP_PREFIX};
use super::sys;

/// Which permission bits the written file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The existing target's bits (`rwx` for user, group, other); for a new file the default
    /// `0666` less the umask.
    Keep,
    /// Exactly these bits (masked to `0777`).
    Exact(u32),
}

static SEQ: AtomicU64 = AtomicU64::new(0);

fn temp_name() -> io::Result<CString> {
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    sys::cstr(&format!(
        "{TEMP_PREFIX}{}-{}-{nonce:08x}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Removes the temporary file unless disarmed (after the rename succeeded).
struct TempGuard<'a> {
    dir: BorrowedFd<'a>,
    name: &'a CStr,
    armed: bool,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = sys::unlinkat(self.dir, self.name, false);
        }
    }
}

/// The error [`write`] returns when the target is no longer the version the caller read.
#[derive(Debug)]
pub(crate) struct ChangedOnDisk;

impl std::fmt::Display for ChangedOnDisk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the file changed on disk")
    }
}

impl std::error::Error for ChangedOnDisk {}

/// A file as it was read: its metadata and its bytes.
#[derive(Clone, Copy)]
pub(crate) struct ReadVersion<'a> {
    /// `fstat` of the descriptor it was read through.
    pub stat: &'a sys::Stat,
    /// Everything that was read.
    pub bytes: &'a [u8],
}

impl ReadVersion<'_> {
    /// Whether `name` in `dir` is still this version: metadata first (cheap, and it catches a
    /// rename over the file), then the bytes (timestamps are too coarse to catch every write).
    fn still_there(self, dir: BorrowedFd<'_>, name: &CStr) -> bool {
        let Ok(now) = sys::lstatat(dir, name) else {
            return false;
        };
        if !now.same_version(self.stat) {
            return false;
        }
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let Ok(fd) = sys::openat(dir, name, flags, 0) else {
            return false;
        };
        sys::read_up_to(&fd, self.bytes.len().saturating_add(1)).is_ok_and(|now| now == self.bytes)
    }
}

/// Whether `e` is [`ChangedOnDisk`].
pub(crate) fn is_changed_on_disk(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<ChangedOnDisk>())
}

/// Atomically make `name` in `dir` hold `bytes`. With `no_replace`, fail with `EEXIST` instead
/// of replacing an existing entry (WRITE of a new file). Permission bits: see [`Mode`]; only the
/// `rwx` bits are kept, so a rewritten file never keeps set-uid or set-gid.
///
/// `unchanged_since`: the target as the caller read it. Just before the rename, when the
/// new content is already on disk, the target must still be that version (same inode, times
/// and bytes), or nothing is replaced and the error is [`ChangedOnDisk`]: an editor saving the
/// file while pai worked on it keeps its content. (The check and the rename are separate
/// system calls; what it closes is the window of reading, editing, diffing and syncing, not
/// the microseconds between them.)
pub(crate) fn write(
    dir: &OwnedFd,
    name: &CStr,
    bytes: &[u8],
    mode: Mode,
    no_replace: bool,
    unchanged_since: Option<ReadVersion<'_>>,
) -> io::Result<()> {
    let dir = dir.as_fd();
    let perm = match mode {
        Mode::Exact(m) => Some(m & 0o777),
        Mode::Keep => match sys::lstatat(dir, name) {
            Ok(st) if st.kind == sys::Kind::File => Some(st.perm & 0o777),
            Ok(st) if st.kind == sys::Kind::Dir => {
                return Err(io::Error::from_raw_os_error(libc::EISDIR));
            }
            _ => None,
        },
    };
    let mut attempt = 0;
    let (tmp, fd) = loop {
        let tmp = temp_name()?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        match sys::openat(dir, &tmp, flags, if perm.is_some() { 0o600 } else { 0o666 }) {
            Ok(fd) => break (tmp, fd),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    let mut guard = TempGuard {
        dir,
        name: &tmp,
        armed: true,
    };
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    if let Some(p) = perm {
        sys::fchmod(file.as_fd(), p)?;
    }
    sys::fsync(file.as_fd())?;
    drop(file);
    if let Some(read) = unchanged_since
        && !read.still_there(dir, name)
    {
        return Err(io::Error::other(ChangedOnDisk));
    }
    sys::renameat(dir, &tmp, dir, name, no_replace)?;
    guard.armed = false;
    // The rename is only durable once the directory is; a failure here does not undo it, and
    // descriptors opened with O_PATH cannot be fsynced at all, so it is best effort.
    let _ = sys::fsync(dir);
    Ok(())
}

/// Make the new file `name` in `dir` hold `bytes` with permission bits `mode`, whole or not at
/// all, without a temporary name ever showing: the bytes go to an unnamed file that is linked
/// into place once synced. A kill or a full disk leaves nothing. `EEXIST` when `name` exists.
/// Where the file system has no unnamed files, this is [`write`] with `no_replace`.
pub(crate) fn write_new_unnamed(
    dir: &OwnedFd,
    name: &CStr,
    bytes: &[u8],
    mode: u32,
) -> io::Result<()> {
    let Some(fd) = sys::open_unnamed(dir.as_fd(), 0o600)? else {
        return write(dir, name, bytes, Mode::Exact(mode), true, None);
    };
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    sys::fchmod(file.as_fd(), mode & 0o777)?;
    sys::fsync(file.as_fd())?;
    if !sys::link_unnamed(file.as_fd(), dir.as_fd(), name)? {
        return write(dir, name, bytes, Mode::Exact(mode), true, None);
    }
    let _ = sys::fsync(dir.as_fd());
    Ok(())
}

/// Parse the pid out of a temporary file name.
fn temp_pid(name: &[u8]) -> Option<i32> {
    let rest = name.strip_prefix(TEMP_PREFIX.as_bytes())?;
    let end = rest.iter().position(|&b| b == b'-')?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// Deepest directory level the clean-up descends to.
const MAX_DEPTH: usize = 256;

/// Remove temporaries left by processes that no longer run, anywhere in the tree below `root`
/// except inside denied directories (pai never writes there). Returns how many were removed.
pub(crate) fn remove_stale(root: BorrowedFd<'_>, deny: &DenyList) -> usize {
    let me = std::process::id() as i32;
    let mut removed = 0;
    let Ok(dup) = sys::reopen_dir(root) else {
        return 0;
    };
    sweep(&dup, deny, me, 0, &mut removed);
    removed
}

fn sweep(dir: &OwnedFd, deny: &DenyList, me: i32, depth: usize, removed: &mut usize) {
    let Ok(entries) = sys::read_dir(dir.as_fd()) else {
        return;
    };
    for e in entries {
        let bytes = e.name.to_bytes();
        if bytes.starts_with(TEMP_PREFIX.as_bytes()) {
            if e.kind == sys::Kind::File
                && let Some(pid) = temp_pid(bytes)
                && pid != me
                && !sys::process_alive(pid)
                && sys::unlinkat(dir.as_fd(), &e.name, false).is_ok()
            {
                *removed += 1;
            }
            continue;
        }
        if e.kind != sys::Kind::Dir || depth >= MAX_DEPTH {
            continue;
        }
        if let Ok(name) = std::str::from_utf8(bytes)
            && deny.segment(name).is_some()
        {
            continue;
        }
        if let Ok(sub) = sys::openat(dir.as_fd(), &e.name, sys::DIR_READ, 0) {
            sweep(&sub, deny, me, depth + 1, removed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_is_parsed() {
        assert_eq!(temp_pid(b".pai-tmp-1234-5-abc"), Some(1234));
        assert_eq!(temp_pid(b".pai-tmp-x-5"), None);
        assert_eq!(temp_pid(b"other"), None);
    }

    #[test]
    fn write_keeps_mode_and_leaves_no_temp() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("x.sh");
        std::fs::write(&f, "old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir: OwnedFd = std::fs::File::open(t.path()).unwrap().into();
        let name = sys::cstr("x.sh").unwrap();
        write(&dir, &name, b"new", Mode::Keep, false, None).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        let err = write(&dir, &name, b"x", Mode::Keep, true, None).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EEXIST));
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_target_changed_since_it_was_read_is_not_replaced() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("f.txt");
        std::fs::write(&f, "read by pai").unwrap();
        let dir: OwnedFd = std::fs::File::open(t.path()).unwrap().into();
        let name = sys::cstr("f.txt").unwrap();
        let read = || {
            (
                sys::lstatat(dir.as_fd(), &name).unwrap(),
                std::fs::read(&f).unwrap(),
            )
        };
        let write_if_unchanged = |(stat, bytes): &(sys::Stat, Vec<u8>), new: &[u8]| {
            let version = ReadVersion { stat, bytes };
            write(&dir, &name, new, Mode::Keep, false, Some(version))
        };
        // Unchanged: replaced.
        let v = read();
        write_if_unchanged(&v, b"pai's edit").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "pai's edit");
        // Rewritten in place by another program: kept, and no temporary left.
        let v = read();
        std::fs::write(&f, "editor save").unwrap();
        let err = write_if_unchanged(&v, b"stale edit").unwrap_err();
        assert!(is_changed_on_disk(&err), "{err}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "editor save");
        // Replaced by rename (as editors save): a new inode, also detected.
        let v = read();
        std::fs::write(t.path().join("other"), "renamed in").unwrap();
        std::fs::rename(t.path().join("other"), &f).unwrap();
        let err = write_if_unchanged(&v, b"stale edit").unwrap_err();
        assert!(is_changed_on_disk(&err), "{err}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "renamed in");
        // Removed meanwhile: not recreated.
        let v = read();
        std::fs::remove_file(&f).unwrap();
        let err = write_if_unchanged(&v, b"stale edit").unwrap_err();
        assert!(is_changed_on_disk(&err), "{err}");
        assert!(!f.exists());
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
    }
}
