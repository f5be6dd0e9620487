//! Read-only where code runs later: before a command runs, the child moves into a private mount
//! namespace and binds git's hooks, `info` and `config`, pai's state, and the startup files and
//! configuration directories at the project root read-only over themselves. Landlock cannot
//! carve a read-only subtree out of the writable project; a bind mount can. Where the kernel or
//! the container refuses namespaces, nothing changes and the detect-and-restore around RUN
//! (`workspace::LaterState`) is the only guard; it runs in both cases.
//!
//! Everything the child needs is prepared here in the parent (paths as C strings, the uid and gid
//! maps as bytes, each mount's locked flags): between `fork` and `exec` only raw system calls are
//! made.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// One path to bind read-only, with the flags its mount must keep.
struct Bind {
    path: CString,
    keep: libc::c_ulong,
}

/// What the child does to make the guarded paths read-only.
pub(crate) struct Shield {
    binds: Vec<Bind>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Shield {
    /// The binds for the project at `root`: only real directories and files (a link is not
    /// followed: binding through it would protect whatever it points at instead). `None` when
    /// there is nothing to protect.
    pub(crate) fn prepare(root: &Path) -> Option<Shield> {
        let mut binds = Vec::new();
        // The same paths the detect-and-restore watches.
        for rel in crate::layout::runs_later_tops() {
            let path = root.join(rel);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if !(meta.is_dir() || meta.is_file()) {
                continue;
            }
            // Every ancestor below the root must be a real directory too.
            let mut ancestors_real = true;
            let mut here = root.to_path_buf();
            for part in Path::new(rel)
                .parent()
                .into_iter()
                .flat_map(Path::components)
            {
                here.push(part);
                if !std::fs::symlink_metadata(&here).is_ok_and(|m| m.is_dir()) {
                    ancestors_real = false;
                }
            }
            if !ancestors_real {
                continue;
            }
            let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
                continue;
            };
            binds.push(Bind {
                keep: locked_flags(&c),
                path: c,
            });
        }
        if binds.is_empty() {
            return None;
        }
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Some(Shield {
            binds,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        })
    }

    /// Enter a private mount namespace (through a user namespace when not privileged) and bind
    /// each guarded path read-only. Best effort: any refusal leaves the rest as it is.
    ///
    /// # Safety
    /// Meant for the child between `fork` and `exec`: raw system calls on memory prepared
    /// before the fork, nothing allocated.
    pub(crate) unsafe fn apply(&self) {
        // SAFETY: plain system calls; every pointer is to a NUL-terminated string or a byte
        // buffer owned by `self`, alive for the call.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                    return;
                }
                write_proc(c"/proc/self/setgroups", b"deny");
                if !write_proc(c"/proc/self/uid_map", &self.uid_map)
                    || !write_proc(c"/proc/self/gid_map", &self.gid_map)
                {
                    return;
                }
            }
            let none = c"none";
            if libc::mount(
                none.as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return;
            }
            for b in &self.binds {
                let p = b.path.as_ptr();
                if libc::mount(p, p, std::ptr::null(), libc::MS_BIND, std::ptr::null()) != 0 {
                    continue;
                }
                libc::mount(
                    std::ptr::null(),
                    p,
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | b.keep,
                    std::ptr::null(),
                );
            }
        }
    }
}

/// Write `bytes` to a `/proc` file; whether it worked.
///
/// # Safety
/// Async-signal-safe: open, write and close only.
unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    // SAFETY: a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        n == bytes.len() as isize
    }
}

/// The flags of the mount holding `path` that a remount inside a user namespace must keep (the
/// kernel locks them): nosuid, nodev, noexec and the access-time mode.
fn locked_flags(path: &CString) -> libc::c_ulong {
    // SAFETY: statvfs fills the zeroed struct for a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
        .fold(0, |acc, (_, ms)| acc | ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_real_paths_are_bound() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::os::unix::fs::symlink("/etc", root.join(".ssh")).unwrap();
        let shield = Shield::prepare(root).unwrap();
        let bound: Vec<String> = shield
            .binds
            .iter()
            .map(|b| b.path.to_string_lossy().into_owned())
            .collect();
        assert!(bound.iter().any(|p| p.ends_with(".git/hooks")));
        assert!(bound.iter().any(|p| p.ends_with(".git/config")));
        assert!(!bound.iter().any(|p| p.ends_with(".ssh")), "{bound:?}");
    }
}
