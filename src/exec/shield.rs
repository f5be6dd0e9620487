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

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, StatVfsMountFlags};
use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::thread::UnshareFlags;

/// One path to bind read-only, with the flags its mount must keep.
struct Bind {
    path: CString,
    keep: MountFlags,
}

/// What the child does to make the guarded paths read-only and the outside channels unreachable.
pub(crate) struct Shield {
    binds: Vec<Bind>,
    /// Directories of sockets to outside processes, covered by an empty read-only tmpfs.
    hide_dirs: Vec<CString>,
    /// Socket files, covered by `/dev/null`.
    hide_files: Vec<CString>,
    /// Give the command its own empty `/tmp` (only when the project is not under it).
    private_tmp: bool,
    /// pai's own directories, covered for every child (see [`super::reach`]).
    covers: Vec<super::hidden::Cover>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Shield {
    /// What covers pai's own directories (`hidden`) and nothing else: the shield of a command
    /// that runs unconfined, or of an MCP server.
    pub(crate) fn covering(hidden: &[PathBuf], root: &Path) -> Shield {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        Shield {
            binds: Vec::new(),
            hide_dirs: Vec::new(),
            hide_files: Vec::new(),
            private_tmp: false,
            covers: super::hidden::covers(hidden, root),
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }

    /// The binds for the project at `root`: only real directories and files (a link is not
    /// followed: binding through it would protect whatever it points at instead); the sockets
    /// to hide ([`channels`]), whether `/tmp` is private, and pai's own directories (`hidden`).
    pub(crate) fn prepare(root: &Path, hidden: &[PathBuf]) -> Shield {
        let mut binds = Vec::new();
        // The same paths the detect-and-restore watches, those the repository's configuration
        // adds included (`core.hooksPath`, included config files, MCP servers' files).
        let configured = crate::layout::configured_runs_later(root);
        let tops = crate::layout::runs_later_tops()
            .map(str::to_string)
            .chain(configured.into_iter().map(|(p, _)| p));
        for rel in tops {
            let rel = rel.as_str();
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
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        let (hide_dirs, hide_files) = channels(root, uid);
        let private_tmp = !root.starts_with("/tmp") && std::env::temp_dir() == Path::new("/tmp");
        Shield {
            binds,
            hide_dirs,
            hide_files,
            private_tmp,
            covers: super::hidden::covers(hidden, root),
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }

    /// Enter a private mount namespace (through a user namespace when not privileged), bind
    /// each guarded path read-only and cover pai's own directories. Best effort: any refusal
    /// leaves the rest as it is. Whether pai's directories are covered (a path that no longer
    /// resolves, under the private `/tmp`, counts as covered).
    ///
    /// Meant for the child between `fork` and `exec` (calling it elsewhere would move the
    /// caller into a new mount namespace): only raw system calls on memory prepared before the
    /// fork, nothing allocated. rustix takes the paths as C strings as they are, without
    /// copying.
    pub(crate) fn apply(&self) -> bool {
        // SAFETY: rustix marks unshare unsafe because unsharing the descriptor table
        // (CLONE_FILES) can invalidate descriptors other threads use; only the mount and user
        // namespaces are unshared here, which touches no memory or descriptor.
        let unshare = |flags| unsafe { rustix::thread::unshare_unsafe(flags) };
        if unshare(UnshareFlags::NEWNS).is_err() {
            if unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNS).is_err() {
                return false;
            }
            write_proc(c"/proc/self/setgroups", b"deny");
            if !write_proc(c"/proc/self/uid_map", &self.uid_map)
                || !write_proc(c"/proc/self/gid_map", &self.gid_map)
            {
                return false;
            }
        }
        // mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL): the kernel ignores the source of a
        // propagation change, which used to be spelled "none".
        if rustix::mount::mount_change(
            c"/",
            MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
        )
        .is_err()
        {
            return false;
        }
        self.hide_channels();
        for b in &self.binds {
            let p = b.path.as_c_str();
            if rustix::mount::mount_bind(p, p).is_err() {
                continue;
            }
            // mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | keep, ""): a bind
            // remount ignores its data, which rustix passes as an empty string instead of NULL.
            let _ = rustix::mount::mount_remount(
                p,
                MountFlags::BIND | MountFlags::RDONLY | b.keep,
                c"",
            );
        }
        // After the binds: a bind of a directory holding one of them would not carry the
        // cover along.
        self.cover_own()
    }

    /// Cover each of pai's directories with an empty read-only tmpfs, each file with
    /// `/dev/null`; whether all are covered. Raw system calls only (see [`Shield::apply`]).
    fn cover_own(&self) -> bool {
        let mut all = true;
        for c in &self.covers {
            let p = c.path.as_c_str();
            let done = if c.dir {
                rustix::mount::mount(
                    c"tmpfs",
                    p,
                    c"tmpfs",
                    MountFlags::NOSUID
                        | MountFlags::NODEV
                        | MountFlags::NOEXEC
                        | MountFlags::RDONLY,
                    c"size=4k,mode=500",
                )
            } else {
                rustix::mount::mount_bind(c"/dev/null", p)
            };
            all &= match done {
                Ok(()) => true,
                Err(e) => e == rustix::io::Errno::NOENT,
            };
        }
        all
    }
}

impl Shield {
    /// Mount the private `/tmp`, then cover the sockets to outside processes. Best effort, raw
    /// system calls only (see [`Shield::apply`]).
    fn hide_channels(&self) {
        let tmpfs = MountFlags::NOSUID | MountFlags::NODEV;
        if self.private_tmp {
            let _ = rustix::mount::mount(c"tmpfs", c"/tmp", c"tmpfs", tmpfs, c"mode=1777");
        }
        for dir in &self.hide_dirs {
            let _ = rustix::mount::mount(
                c"tmpfs",
                dir.as_c_str(),
                c"tmpfs",
                tmpfs | MountFlags::RDONLY | MountFlags::NOEXEC,
                c"size=4k,mode=755",
            );
        }
        for file in &self.hide_files {
            let _ = rustix::mount::mount_bind(c"/dev/null", file.as_c_str());
        }
    }
}

/// Where processes outside listen for commands: the user's runtime directory (session bus,
/// ssh and gpg agents, Wayland, container sockets), tmux's and X11's socket directories, the
/// container daemons' sockets, and every socket a [`super::env::CHANNEL_VARIABLES`] names.
/// Directories and socket files separately; never the project or anything holding it.
fn channels(root: &Path, uid: u32) -> (Vec<CString>, Vec<CString>) {
    let mut dirs: Vec<PathBuf> = [
        format!("/run/user/{uid}"),
        format!("/tmp/tmux-{uid}"),
        "/tmp/.X11-unix".into(),
        "/run/screen".into(),
        "/tmp/uscreens".into(),
        "/run/podman".into(),
        "/run/containerd".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect();
    let mut files: Vec<PathBuf> = ["/run/docker.sock", "/var/run/docker.sock"]
        .into_iter()
        .map(PathBuf::from)
        .collect();
    for (name, value) in std::env::vars_os() {
        if !super::env::is_channel_variable(&name) {
            continue;
        }
        let Some(path) = socket_path(&value) else {
            continue;
        };
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => dirs.push(path),
            Ok(_) => files.push(path),
            Err(_) => {}
        }
    }
    let usable = |p: &PathBuf, want_dir: bool| {
        let outside = !root.starts_with(p) && !p.starts_with(root);
        outside && std::fs::metadata(p).is_ok_and(|m| m.is_dir() == want_dir)
    };
    let to_c = |p: PathBuf| CString::new(p.into_os_string().into_vec()).ok();
    let dirs = dirs
        .into_iter()
        .filter(|p| usable(p, true))
        .filter_map(to_c);
    let files = files
        .into_iter()
        .filter(|p| usable(p, false))
        .filter_map(to_c);
    (dirs.collect(), files.collect())
}

/// The absolute socket path in a channel variable's value: `TMUX=/tmp/tmux-0/default,12,0`,
/// `DOCKER_HOST=unix:///run/docker.sock`, `KITTY_LISTEN_ON=unix:/tmp/kitty`,
/// `DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/0/bus`, `SSH_AUTH_SOCK=/tmp/ssh-x/agent.1`.
fn socket_path(value: &std::ffi::OsStr) -> Option<PathBuf> {
    let text = value.to_str()?;
    let text = text.split(',').next()?;
    let text = text
        .strip_prefix("unix:path=")
        .or_else(|| text.strip_prefix("unix://"))
        .or_else(|| text.strip_prefix("unix:"))
        .unwrap_or(text);
    let path = Path::new(text.split(';').next()?);
    path.is_absolute().then(|| path.to_path_buf())
}

/// Write `bytes` to a `/proc` file; whether it worked. Async-signal-safe: open, write and
/// close only.
fn write_proc(path: &CStr, bytes: &[u8]) -> bool {
    let Ok(fd) = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty()) else {
        return false;
    };
    // Dropping `fd` closes it.
    rustix::io::write(&fd, bytes).is_ok_and(|n| n == bytes.len())
}

/// The flags of the mount holding `path` that a remount inside a user namespace must keep (the
/// kernel locks them): nosuid, nodev, noexec and the access-time mode.
fn locked_flags(path: &CStr) -> MountFlags {
    let Ok(st) = rustix::fs::statvfs(path) else {
        return MountFlags::empty();
    };
    let pairs = [
        (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
        (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st_flag, _)| st.f_flag.contains(*st_flag))
        .fold(MountFlags::empty(), |acc, (_, ms)| acc | *ms)
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
        let shield = Shield::prepare(root, &[]);
        let bound: Vec<String> = shield
            .binds
            .iter()
            .map(|b| b.path.to_string_lossy().into_owned())
            .collect();
        assert!(bound.iter().any(|p| p.ends_with(".git/hooks")));
        assert!(bound.iter().any(|p| p.ends_with(".git/config")));
        assert!(!bound.iter().any(|p| p.ends_with(".ssh")), "{bound:?}");
    }

    #[test]
    fn socket_paths_are_read_from_each_spelling() {
        use std::ffi::OsStr;
        let cases = [
            ("/tmp/tmux-0/default,12,0", Some("/tmp/tmux-0/default")),
            ("unix:///run/docker.sock", Some("/run/docker.sock")),
            ("unix:/tmp/kitty", Some("/tmp/kitty")),
            ("unix:path=/run/user/0/bus", Some("/run/user/0/bus")),
            ("tcp://127.0.0.1:2375", None),
            (":0", None),
        ];
        for (value, want) in cases {
            assert_eq!(
                socket_path(OsStr::new(value)),
                want.map(PathBuf::from),
                "{value}"
            );
        }
    }
}
