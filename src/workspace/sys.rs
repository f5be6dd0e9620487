//! Thin, safe wrappers over the `*at` system calls the workspace is built on.
//!
//! Every file operation in the workspace is expressed relative to an open directory descriptor
//! (ultimately the project root), never as an absolute path, so that the kernel resolves names
//! one component at a time under our control. The calls go through rustix, whose wrappers are
//! safe, so this module has no `unsafe`; everything works with [`OwnedFd`], [`BorrowedFd`] and
//! [`CStr`]. Callers still pass `libc` flag values and match `libc` errno values:
//! `io::Error::from(Errno)` keeps the raw OS error.

use std::cell::Cell;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, RenameFlags, ResolveFlags};
use rustix::io::Errno;

thread_local! {
    /// Directory listings and stat calls this thread made (see [`counts`]).
    static COUNTS: Cell<SysCounts> = const { Cell::new(SysCounts { listings: 0, stats: 0 }) };
}

/// How many directory listings and stat calls the workspace made on one thread: what a test
/// pins so that a regression to several walks of the tree fails without timing anything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SysCounts {
    /// Directories listed (one per directory read, however many `getdents64` calls it took).
    pub listings: u64,
    /// `fstatat`/`fstat` calls.
    pub stats: u64,
}

/// The calls the calling thread made so far. Counted per thread, so tests running side by
/// side do not see each other's; a walk that spreads over threads is counted on each.
pub fn counts() -> SysCounts {
    COUNTS.with(Cell::get)
}

/// Add calls another thread made on this thread's behalf (a walk spread over helpers) to
/// this thread's counts.
pub(crate) fn add_counts(more: SysCounts) {
    COUNTS.with(|c| {
        let n = c.get();
        c.set(SysCounts {
            listings: n.listings + more.listings,
            stats: n.stats + more.stats,
        });
    });
}

fn count(listing: bool) {
    COUNTS.with(|c| {
        let mut n = c.get();
        if listing {
            n.listings += 1;
        } else {
            n.stats += 1;
        }
        c.set(n);
    });
}

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

impl From<FileType> for Kind {
    fn from(t: FileType) -> Kind {
        match t {
            FileType::Directory => Kind::Dir,
            FileType::RegularFile => Kind::File,
            FileType::Symlink => Kind::Symlink,
            _ => Kind::Other,
        }
    }
}

/// What a file's stat says about its version: equal stamps mean the file was not rewritten
/// (the test git's index uses, with the inode and the status-change time for renames and
/// same-second edits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    /// Size in bytes.
    pub size: u64,
    /// Inode number.
    pub ino: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds since the epoch.
    pub ctime_ns: i64,
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
    /// Hard links to the inode (`st_nlink`).
    pub links: u64,
    /// Device and inode, modification and status-change times: together they tell whether
    /// the entry is still the file version that was read.
    version: (u64, u64, i64, u64, i64, u64),
}

impl Stat {
    /// Whether `self` and `other` may describe the same version of the same file: same inode
    /// on the same device, same size, same modification and status-change times. A rename
    /// over the file gives a new inode; a write in place changes the times, but only to the
    /// file system's timestamp granularity, so a caller that must be sure compares content too.
    pub(crate) fn same_version(&self, other: &Stat) -> bool {
        self.kind == other.kind && self.size == other.size && self.version == other.version
    }

    /// The version parts the repository map's cache compares (see [`Stamp`]).
    pub(crate) fn stamp(&self) -> Stamp {
        let (_, ino, m_s, m_ns, c_s, c_ns) = self.version;
        let ns = |s: i64, n: u64| s.saturating_mul(1_000_000_000).saturating_add(n as i64);
        Stamp {
            size: self.size,
            ino,
            mtime_ns: ns(m_s, m_ns),
            ctime_ns: ns(c_s, c_ns),
        }
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

/// `openat(2)` with `libc` open flags and mode; `O_CLOEXEC` is always added.
pub(crate) fn openat(
    dir: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    // The bits are the kernel's either way: retaining them passes every flag a caller gives
    // through unchanged, including any rustix has no name for.
    let flags = OFlags::from_bits_retain(flags.cast_unsigned()) | OFlags::CLOEXEC;
    let mode = Mode::from_raw_mode(mode);
    loop {
        match rustix::fs::openat(dir, name, flags, mode) {
            // A FIFO opened without O_NONBLOCK may wait, and a signal then interrupts it.
            Err(Errno::INTR) => continue,
            r => return r.map_err(io::Error::from),
        }
    }
}

/// Open flags for a directory we only walk through.
pub(crate) const DIR_PATH: libc::c_int = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
/// Open flags for a directory we read or fsync.
pub(crate) const DIR_READ: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;

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
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(dir, rel, flags, Mode::empty(), resolve) {
        // Dropping the descriptor closes it: only the walk's outcome matters.
        Ok(_fd) => Probe::Plain,
        // A component is missing, is not a directory, or may not be searched: everything
        // before it was walked without a symlink, and nothing after it exists for us.
        Err(Errno::NOENT | Errno::NOTDIR | Errno::ACCESS) => Probe::Plain,
        Err(Errno::NAMETOOLONG) => Probe::TooLong,
        Err(Errno::NOSYS | Errno::PERM | Errno::INVAL | Errno::TOOBIG) => {
            OPENAT2_UNAVAILABLE.store(true, Ordering::Relaxed);
            Probe::NeedsSlowPath
        }
        Err(_) => Probe::NeedsSlowPath,
    }
}

// The field types differ between architectures (and some are the same type as the target on
// x86_64), so the widening conversions are written once for all of them.
#[allow(clippy::unnecessary_cast)]
fn stat_from(st: &rustix::fs::Stat) -> Stat {
    Stat {
        kind: Kind::from(FileType::from_raw_mode(st.st_mode)),
        perm: st.st_mode & 0o7777,
        size: u64::try_from(st.st_size).unwrap_or(0),
        links: st.st_nlink as u64,
        version: (
            st.st_dev as u64,
            st.st_ino as u64,
            st.st_mtime as i64,
            st.st_mtime_nsec as u64,
            st.st_ctime as i64,
            st.st_ctime_nsec as u64,
        ),
    }
}

/// `fstatat(2)` without following a final symlink.
pub(crate) fn lstatat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Stat> {
    count(false);
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(stat_from(&st))
}

/// `fstatat(2)` without following a final symlink, with every field git's index records.
pub(crate) fn lstatat_full(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<FileStat> {
    count(false);
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(full_stat_from(&st))
}

/// `fstat(2)` with every field git's index records: an open folder's own stamp without a
/// lookup of `.` in it.
pub(crate) fn fstat_full(fd: BorrowedFd<'_>) -> io::Result<FileStat> {
    count(false);
    Ok(full_stat_from(&rustix::fs::fstat(fd)?))
}

#[allow(clippy::unnecessary_cast)]
fn full_stat_from(st: &rustix::fs::Stat) -> FileStat {
    FileStat {
        mode: st.st_mode as u32,
        size: u64::try_from(st.st_size).unwrap_or(0),
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        uid: st.st_uid as u32,
        gid: st.st_gid as u32,
        mtime: (st.st_mtime as i64, st.st_mtime_nsec as u32),
        ctime: (st.st_ctime as i64, st.st_ctime_nsec as u32),
    }
}

/// Everything `stat(2)` says that tells one version of a file from another: what git records
/// in its index for each file, to trust an unchanged stat instead of reading the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// `st_mode`: file type and permission bits.
    pub mode: u32,
    /// Size in bytes.
    pub size: u64,
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Modification time: seconds, nanoseconds.
    pub mtime: (i64, u32),
    /// Status-change time: seconds, nanoseconds.
    pub ctime: (i64, u32),
}

/// `fstat(2)`.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<Stat> {
    count(false);
    Ok(stat_from(&rustix::fs::fstat(fd)?))
}

/// `readlinkat(2)`: the raw target bytes of a symlink.
pub(crate) fn readlinkat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Vec<u8>> {
    // rustix grows the buffer until the target fits; Linux caps targets below 4096 bytes, so
    // one call of this size is the usual case.
    let target = rustix::fs::readlinkat(dir, name, Vec::with_capacity(4096))?;
    Ok(target.into_bytes())
}

/// `mkdirat(2)`.
pub(crate) fn mkdirat(dir: BorrowedFd<'_>, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    Ok(rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(mode))?)
}

/// `unlinkat(2)`; `dir_entry` selects `AT_REMOVEDIR`.
pub(crate) fn unlinkat(dir: BorrowedFd<'_>, name: &CStr, dir_entry: bool) -> io::Result<()> {
    let flags = if dir_entry {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    Ok(rustix::fs::unlinkat(dir, name, flags)?)
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
    if !no_replace {
        // Plain renameat, as the C library's renameat2 does for flags 0.
        return Ok(rustix::fs::renameat(from_dir, from, to_dir, to)?);
    }
    match rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        // The file system does not know RENAME_NOREPLACE.
        Err(Errno::INVAL) => {
            match lstatat(to_dir, to) {
                Ok(_) => return Err(io::Error::from(Errno::EXIST)),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) => return Err(e),
            }
            Ok(rustix::fs::renameat(from_dir, from, to_dir, to)?)
        }
        Err(e) => Err(e.into()),
    }
}

/// An unnamed regular file in `dir` (`O_TMPFILE`), writable, with `mode`: it has no name until
/// [`link_unnamed`] gives it one, so nobody (`git status`, a reader, a crash) ever sees it
/// half written. `Ok(None)` when the file system or kernel does not offer it.
pub(crate) fn open_unnamed(dir: BorrowedFd<'_>, mode: libc::mode_t) -> io::Result<Option<OwnedFd>> {
    match openat(dir, c".", libc::O_TMPFILE | libc::O_WRONLY, mode) {
        Ok(fd) => Ok(Some(fd)),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Give the unnamed file `fd` ([`open_unnamed`]) the name `name` in `dir`; `EEXIST` when the
/// name is taken (never replaced). Linking through `/proc/self/fd` needs no privilege (the
/// `AT_EMPTY_PATH` form does); `Ok(false)` when `/proc` is not mounted.
pub(crate) fn link_unnamed(
    fd: BorrowedFd<'_>,
    dir: BorrowedFd<'_>,
    name: &CStr,
) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let proc_path = CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in path"))?;
    match rustix::fs::linkat(
        rustix::fs::CWD,
        proc_path.as_c_str(),
        dir,
        name,
        AtFlags::SYMLINK_FOLLOW,
    ) {
        Ok(()) => Ok(true),
        Err(Errno::NOENT)
            if rustix::fs::access(c"/proc/self/fd", rustix::fs::Access::EXISTS).is_err() =>
        {
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// `fsync(2)`.
pub(crate) fn fsync(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::fs::fsync(fd)?)
}

/// `fchmod(2)`.
pub(crate) fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    Ok(rustix::fs::fchmod(fd, Mode::from_raw_mode(mode))?)
}

/// Set access and modification time of `name` to now, without following a symlink.
pub(crate) fn touch_at(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    let now = rustix::fs::Timespec {
        tv_sec: 0,
        tv_nsec: rustix::fs::UTIME_NOW,
    };
    let times = rustix::fs::Timestamps {
        last_access: now,
        last_modification: now,
    };
    Ok(rustix::fs::utimensat(
        dir,
        name,
        &times,
        AtFlags::SYMLINK_NOFOLLOW,
    )?)
}

/// Whether a process with this id exists (used to tell stale temporary files of a crashed run
/// from those of a live one).
pub(crate) fn process_alive(pid: i32) -> bool {
    // Checked before `Pid::from_raw`, which debug-asserts a non-negative id.
    let Some(pid) = (pid > 0)
        .then(|| rustix::process::Pid::from_raw(pid))
        .flatten()
    else {
        return false;
    };
    // Signal 0 only checks for existence and permission; EPERM means it exists as someone else.
    matches!(
        rustix::process::test_kill_process(pid),
        Ok(()) | Err(Errno::PERM)
    )
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
/// allocate one per directory. Only the buffer's spare capacity is used, never zeroed.
pub(crate) fn read_dir_with(dir: BorrowedFd<'_>, buf: &mut Vec<u8>) -> io::Result<Vec<DirEntry>> {
    count(true);
    rustix::fs::seek(dir, rustix::fs::SeekFrom::Start(0))?;
    buf.clear();
    buf.reserve(DIRENT_BUF);
    let mut entries = RawDir::new(dir, buf.spare_capacity_mut());
    let mut out = Vec::new();
    while let Some(entry) = entries.next() {
        let entry = match entry {
            Ok(entry) => entry,
            // The buffer was empty when the call was interrupted: asking again reads on.
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b".." | b"") {
            continue;
        }
        let name = CString::from(name);
        let kind = match entry.file_type() {
            // DT_UNKNOWN: this file system does not report types in directory entries.
            FileType::Unknown => match lstatat(dir, &name) {
                Ok(st) => st.kind,
                Err(_) => Kind::Other,
            },
            t => Kind::from(t),
        };
        out.push(DirEntry { name, kind });
    }
    Ok(out)
}

/// [`read_up_to`] for a file an `lstat` just said holds `size` bytes: room for them up front,
/// so a small file takes two `read` calls (from an empty buffer, reading to the end starts
/// with 32-byte probes: about ten calls for a 4 KiB file).
pub(crate) fn read_up_to_sized(fd: &OwnedFd, limit: usize, size: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::from(fd.try_clone()?);
    let room = usize::try_from(size).unwrap_or(limit).min(limit);
    let mut out = Vec::with_capacity(room.saturating_add(1));
    file.take(limit as u64).read_to_end(&mut out)?;
    Ok(out)
}

/// Read a whole file from an open descriptor, at most `limit` bytes.
pub(crate) fn read_up_to(fd: &OwnedFd, limit: usize) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::from(fd.try_clone()?);
    let mut out = Vec::new();
    file.take(limit as u64).read_to_end(&mut out)?;
    Ok(out)
}
