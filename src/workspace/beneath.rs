//! Use-time safety: opening a checked path beneath the root without following any symlink.
//!
//! The gate resolves symlinks at check time and hands over a symlink-free relative path. Here
//! that path is opened one component at a time with `openat(O_NOFOLLOW | O_DIRECTORY)`, starting
//! from the root descriptor. If anything on the path was replaced by a symlink after the check,
//! the kernel refuses to follow it (`ELOOP`/`ENOTDIR`) and the operation is refused; no name is
//! ever resolved from `/` or through a link. The final name is then used with the `*at` calls
//! (`openat(O_NOFOLLOW)`, `renameat2`, `unlinkat`, `mkdirat`, `utimensat(AT_SYMLINK_NOFOLLOW)`),
//! none of which follow a final symlink either.
//!
//! Why a component walk rather than one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`: the
//! walk gives the same guarantee with calls every kernel and every seccomp profile allows, costs
//! one call per directory level (operations are not the hot path; the gate is), and lets us
//! create missing parents on the way and say exactly which component changed.

use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use super::error::WorkspaceError;
use super::gate::{Gate, RelPath};
use super::sys;

/// Open directory `comps` (resolved components) beneath the root, readable and fsync-able.
/// With `create`, missing directories are made on the way (like `mkdir -p`); the returned flag
/// says whether the last one was created.
pub(crate) fn open_dir<'a>(
    gate: &Gate,
    comps: impl Iterator<Item = &'a str>,
    create: bool,
    op: &'static str,
    shown: &str,
) -> Result<(OwnedFd, bool), WorkspaceError> {
    let mut cur: Option<OwnedFd> = None;
    let mut prefix = String::new();
    let mut created_last = false;
    for comp in comps {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(comp);
        let dir: BorrowedFd<'_> = match &cur {
            Some(fd) => fd.as_fd(),
            None => gate.root_fd.as_fd(),
        };
        let name = sys::cstr(comp).map_err(|e| WorkspaceError::io(op, shown, e))?;
        created_last = false;
        let fd = match sys::openat(dir, &name, sys::DIR_READ, 0) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) && create => {
                match sys::mkdirat(dir, &name, 0o777) {
                    Ok(()) => {
                        created_last = true;
                        // Make the new entry durable; best effort, as for renames.
                        let _ = sys::fsync(dir);
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                    Err(e) => return Err(WorkspaceError::io(op, shown, e)),
                }
                sys::openat(dir, &name, sys::DIR_READ, 0)
                    .map_err(|e| diagnose(dir, &name, &prefix, e, op, shown))?
            }
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
                // Searchable but unreadable directory: walking through it is still fine.
                sys::openat(dir, &name, sys::DIR_PATH, 0)
                    .map_err(|e| diagnose(dir, &name, &prefix, e, op, shown))?
            }
            Err(e) => return Err(diagnose(dir, &name, &prefix, e, op, shown)),
        };
        cur = Some(fd);
    }
    let fd = match cur {
        Some(fd) => fd,
        None => gate
            .root_fd
            .try_clone()
            .map_err(|e| WorkspaceError::io(op, shown, e))?,
    };
    Ok((fd, created_last))
}

/// Turn a failed directory open into a message saying what is in the way.
pub(crate) fn diagnose(
    dir: BorrowedFd<'_>,
    name: &std::ffi::CStr,
    prefix: &str,
    e: std::io::Error,
    op: &'static str,
    shown: &str,
) -> WorkspaceError {
    match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => match sys::lstatat(dir, name) {
            Ok(st) if st.kind == sys::Kind::Symlink => WorkspaceError::refused(
                shown,
                format!(
                    "changed after it was checked: {prefix} is now a symbolic link, which pai \
                     does not follow"
                ),
            ),
            _ => WorkspaceError::failed(op, shown, format!("{prefix} is not a directory")),
        },
        Some(libc::ENOENT) => WorkspaceError::not_found(op, shown, ""),
        _ => WorkspaceError::io(op, shown, e),
    }
}

/// Open the parent directory of `rel` and return it with the final name.
pub(crate) fn open_parent(
    gate: &Gate,
    rel: &RelPath,
    create: bool,
    op: &'static str,
) -> Result<(OwnedFd, CString), WorkspaceError> {
    let shown = rel.display();
    let parent = rel.parent();
    let (dir, _) = open_dir(
        gate,
        parent.split('/').filter(|s| !s.is_empty()),
        create,
        op,
        shown,
    )?;
    let name = sys::cstr(rel.file_name()).map_err(|e| WorkspaceError::io(op, shown, e))?;
    Ok((dir, name))
}
