//! Thin, safe wrappers over the `*at` system calls the workspace is built on.
//!
//! Every file operation in the workspace is expressed relative to an open directory descriptor
//! (ultimately the project root), never as an absolute path, so that the kernel resolves names
//! one component at a time under our control. This file holds all the `unsafe` of the module;
//! everything else works with [`OwnedFd`], [`BorrowedFd`] and [`CStr`].

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// The kind of a directory entry or file, as far as the workspace cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link (never followed by the workspace's own walks).
    Symlink,
    /// A FIFO, socket or device node.
    Other,
}

impl Kind {
    fn from_mode(mode: libc::mode_t) -> Kind {
        match mode & libc::S_IFMT {
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFREG => Kind::File,
            libc::S_IFLNK => Kind::Symlink,
            _ => Kind::Other,
        }
    }
}

/// The parts of `struct stat` the workspace uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    /// What the entry is.
    pub kind: Kind,
    /// Permission bits (`st_mode & 0o7777`).
    pub perm: u32,
    /// Size in bytes.
    pub size: u64,
    /// Device and inode, modification and status-change times: together they tell whether
    /// the entry is still the file version that was read.
    version: (u64, u64, i64, i64, i64, i64),
}

impl Stat {
    /// Whether `self` and `other` may describe the same version of the same file: same inode
    /// on the same device, same size, same modification and status-change times. A rename
    /// over the file gives a new inode; a write in place changes the times, but only to the
    /// file system's timestamp granularity, so a caller that must be sure compares content too.
    pub(crate) fn same_version(&self, other: &Stat) -> bool {
        self.kind == other.kind && self.size == other.size && self.version == other.version
    }
}

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Turn a path component or relative path into a C string, with the bytes its spelling stands
/// for (see [`crate::rawname`]: names that are not UTF-8 are escaped in pai's strings); a NUL
/// byte is refused by the gate long before this, so hitting it here is reported as an
/// invalid-input error.
pub(crate) fn cstr(s: &str) -> io::Result<CString> {
    CString::new(crate::rawname::decode(s).into_owned())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in path"))
}

/// `openat(2)`; `O_CLOEXEC` is always added.
pub(crate) fn openat(
    dir: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: `name` is a valid NUL-terminated string and `dir` a live descriptor.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_CLOEXEC,
                libc::c_uint::from(mode),
            )
        };
        if fd >= 0 {
            // SAFETY: the kernel just handed us this descriptor; nobody else owns it.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Open flags for a directory we only walk through.
pub(crate) const DIR_PATH: libc::c_int = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
/// Open flags for a directory we read or fsync.
pub(crate) const DIR_READ: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;

/// `struct open_how` for `openat2(2)`; declared here because the libc crate marks its copy
/// non-exhaustive.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// Set once `openat2` turned out to be unavailable (old kernel or a seccomp filter), so the
/// gate stops trying it.
static OPENAT2_UNAVAILABLE: AtomicBool = AtomicBool::new(false);

/// Outcome of probing a relative path with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Every existing component was walked without meeting a symlink or leaving `dir`: the
    /// lexical path is the resolved path.
    Plain,
    /// A symlink (or something the fast path cannot judge) is on the way: resolve by hand.
    NeedsSlowPath,
    /// The path is too long for the kernel.
    TooLong,
}

/// Ask the kernel, in one call, whether `rel` can be walked beneath `dir` without following any
/// symlink. This is the gate's fast path; see `gate.rs` for why a missing component still
/// counts as plain.
pub(crate) fn probe_beneath(dir: BorrowedFd<'_>, rel: &CStr) -> Probe {
    if OPENAT2_UNAVAILABLE.load(Ordering::Relaxed) {
        return Probe::NeedsSlowPath;
    }
    // No O_NOFOLLOW: with O_PATH | O_NOFOLLOW the kernel hands back a descriptor to a final
    // symlink instead of failing, which would let `link -> /tmp` pass as plain. Without it, a
    // final symlink is a symlink to resolve, and RESOLVE_NO_SYMLINKS turns that into ELOOP.
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: `how` is a correctly laid out `struct open_how` that outlives the call, its size
    // is passed alongside, and `rel` is NUL-terminated.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            rel.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if ret >= 0 {
        // SAFETY: a successful openat2 returns a fresh descriptor that only we own; wrapping it
        // closes it.
        drop(unsafe { OwnedFd::from_raw_fd(ret as libc::c_int) });
        return Probe::Plain;
    }
    match io::Error::last_os_error().raw_os_error() {
        // A component is missing, is not a directory, or may not be searched: everything
        // before it was walked without a symlink, and nothing after it exists for us.
        Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::EACCES) => Probe::Plain,
        Some(libc::ENAMETOOLONG) => Probe::TooLong,
        Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::EINVAL) | Some(libc::E2BIG) => {
            OPENAT2_UNAVAILABLE.store(true, Ordering::Relaxed);
            Probe::NeedsSlowPath
        }
        _ => Probe::NeedsSlowPath,
    }
}

fn stat_from(st: &libc::stat) -> Stat {
    Stat {
        kind: Kind::from_mode(st.st_mode),
        perm: st.st_mode & 0o7777,
        size: u64::try_from(st.st_size).unwrap_or(0),
        version: (
            st.st_dev,
            st.st_ino,
            st.st_mtime,
            st.st_mtime_nsec,
            st.st_ctime,
            st.st_ctime_nsec,
        ),
    }
}

/// `fstatat(2)` without following a final symlink.
pub(crate) fn lstatat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is a valid out-pointer for one `struct stat`; `name` is NUL-terminated.
    cvt(unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    // SAFETY: fstatat succeeded, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Ok(stat_from(&st))
}

/// `fstat(2)`.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<Stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is a valid out-pointer for one `struct stat`.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Ok(stat_from(&st))
}

/// `readlinkat(2)`: the raw target bytes of a symlink.
pub(crate) fn readlinkat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 4096];
    // SAFETY: `buf` is writable for `buf.len()` bytes; `name` is NUL-terminated.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// `mkdirat(2)`.
pub(crate) fn mkdirat(dir: BorrowedFd<'_>, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated and `dir` is live.
    cvt(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) }).map(drop)
}

/// `unlinkat(2)`; `dir_entry` selects `AT_REMOVEDIR`.
pub(crate) fn unlinkat(dir: BorrowedFd<'_>, name: &CStr, dir_entry: bool) -> io::Result<()> {
    let flags = if dir_entry { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: `name` is NUL-terminated and `dir` is live.
    cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

/// `renameat2(2)`. With `no_replace`, an existing target makes it fail with `EEXIST`; on a
/// file system without `RENAME_NOREPLACE` it falls back to a check followed by a plain rename.
pub(crate) fn renameat(
    from_dir: BorrowedFd<'_>,
    from: &CStr,
    to_dir: BorrowedFd<'_>,
    to: &CStr,
    no_replace: bool,
) -> io::Result<()> {
    let flags = if no_replace {
        libc::RENAME_NOREPLACE
    } else {
        0
    };
    // SAFETY: both names are NUL-terminated and both descriptors live.
    let ret = unsafe {
        libc::renameat2(
            from_dir.as_raw_fd(),
            from.as_ptr(),
            to_dir.as_raw_fd(),
            to.as_ptr(),
            flags,
        )
    };
    if ret == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if no_replace && err.raw_os_error() == Some(libc::EINVAL) {
        match lstatat(to_dir, to) {
            Ok(_) => return Err(io::Error::from_raw_os_error(libc::EEXIST)),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(e),
        }
        // SAFETY: as above.
        return cvt(unsafe {
            libc::renameat(
                from_dir.as_raw_fd(),
                from.as_ptr(),
                to_dir.as_raw_fd(),
                to.as_ptr(),
            )
        })
        .map(drop);
    }
    Err(err)
}

/// `fsync(2)`.
pub(crate) fn fsync(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: `fd` is live.
    cvt(unsafe { libc::fsync(fd.as_raw_fd()) }).map(drop)
}

/// `fchmod(2)`.
pub(crate) fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    // SAFETY: `fd` is live.
    cvt(unsafe { libc::fchmod(fd.as_raw_fd(), mode as libc::mode_t) }).map(drop)
}

/// Set access and modification time of `name` to now, without following a symlink.
pub(crate) fn touch_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    let now = libc::timespec {
        tv_sec: 0,
        tv_nsec: libc::UTIME_NOW,
    };
    let times = [now, now];
    // SAFETY: `times` holds two timespecs as utimensat requires; `name` is NUL-terminated.
    cvt(unsafe {
        libc::utimensat(
            dir.as_raw_fd(),
            name.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

/// Whether a process with this id exists (used to tell stale temporary files of a crashed run
/// from those of a live one).
pub(crate) fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission; it delivers nothing.
    let ret = unsafe { libc::kill(pid, 0) };
    ret == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// One entry of a directory listing.
#[derive(Debug)]
pub(crate) struct DirEntry {
    /// The entry's name (never `.` or `..`).
    pub name: CString,
    /// Its kind, from `d_type` or, where the file system does not report it, `fstatat`.
    pub kind: Kind,
}

/// A new open file description for the directory `dir`, with its own read offset. Listing
/// reads through the offset, so a descriptor shared between threads (the root's) must not be
/// read directly.
pub(crate) fn reopen_dir(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    openat(dir, c".", DIR_READ, 0)
}

/// Size of the buffer handed to `getdents64`.
const DIRENT_BUF: usize = 32 * 1024;

/// Read every entry of the directory open as `dir`. The read goes through the descriptor's
/// offset (rewound first), so a descriptor shared between threads must be reopened first (see
/// [`reopen_dir`]). Uses `getdents64` directly: no `DIR` stream, no duplicated descriptor, one
/// system call per 32 KiB of entries.
pub(crate) fn read_dir(dir: BorrowedFd<'_>) -> io::Result<Vec<DirEntry>> {
    read_dir_with(dir, &mut Vec::new())
}

/// [`read_dir`] with a caller-kept buffer, so a walk over thousands of directories does not
/// allocate and zero one per directory.
pub(crate) fn read_dir_with(dir: BorrowedFd<'_>, buf: &mut Vec<u8>) -> io::Result<Vec<DirEntry>> {
    // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name[].
    const NAME_AT: usize = 19;
    // SAFETY: lseek on a live descriptor has no memory effects.
    if unsafe { libc::lseek(dir.as_raw_fd(), 0, libc::SEEK_SET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    if buf.len() < DIRENT_BUF {
        buf.resize(DIRENT_BUF, 0);
    }
    let mut out = Vec::new();
    loop {
        // SAFETY: `buf` is writable for `buf.len()` bytes and `dir` is a live descriptor.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        let n = n as usize;
        if n == 0 {
            return Ok(out);
        }
        let mut off = 0usize;
        while off + NAME_AT <= n {
            let reclen = usize::from(u16::from_ne_bytes([buf[off + 16], buf[off + 17]]));
            if reclen <= NAME_AT || off + reclen > n {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "malformed directory entry",
                ));
            }
            let d_type = buf[off + 18];
            let raw = &buf[off + NAME_AT..off + reclen];
            let name = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
            off += reclen;
            if name == b"." || name == b".." || name.is_empty() {
                continue;
            }
            let name = CString::new(name)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "NUL in a file name"))?;
            let kind = match d_type {
                libc::DT_DIR => Kind::Dir,
                libc::DT_REG => Kind::File,
                libc::DT_LNK => Kind::Symlink,
                libc::DT_UNKNOWN => match lstatat(dir, &name) {
                    Ok(st) => st.kind,
                    Err(_) => Kind::Other,
                },
                _ => Kind::Other,
            };
            out.push(DirEntry { name, kind });
        }
    }
}

/// Read a whole file from an open descriptor, at most `limit` bytes.
pub(crate) fn read_up_to(fd: &OwnedFd, limit: usize) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::from(fd.try_clone()?);
    let mut out = Vec::new();
    file.take(limit as u64).read_to_end(&mut out)?;
    Ok(out)
}
