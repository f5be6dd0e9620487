//! Questions the agent asks about the project without reading or changing a file: is a path a
//! directory, which files did a command change (by their stat data), and the removal of a
//! directory an undo left empty. All of it beneath the root, never following a link, like
//! every other operation of the workspace.

use std::collections::BTreeMap;
use std::os::fd::AsFd;

use super::Workspace;
use super::beneath::open_parent;
use super::error::WorkspaceError;
use super::sys::{self, Kind, Stat};

/// The stat data of the project's files at one moment, to tell afterwards which ones a command
/// changed (a `chmod` changes neither content nor size, so permission bits count too).
pub struct StatSnapshot {
    files: BTreeMap<String, Stat>,
}

impl StatSnapshot {
    /// Paths whose stat data differ in `later`, or that only one of the two holds.
    pub fn changed_in(&self, later: &StatSnapshot) -> Vec<String> {
        let mut out: Vec<String> = later
            .files
            .iter()
            .filter(|(path, now)| {
                self.files
                    .get(*path)
                    .is_none_or(|was| was.perm != now.perm || !was.same_version(now))
            })
            .map(|(path, _)| path.clone())
            .collect();
        out.extend(
            self.files
                .keys()
                .filter(|p| !later.files.contains_key(*p))
                .cloned(),
        );
        out
    }
}

impl Workspace {
    /// What stands at `path` once the gate resolved its links inside the project (a link out
    /// of it is refused); `None` when nothing is there or the gate refuses the path.
    fn stat(&self, path: &str) -> Option<Stat> {
        let rel = self.gate.check(path, true).ok()?;
        if rel.is_root() {
            return sys::fstat(self.gate.root_fd.as_fd()).ok();
        }
        let (dir, name) = open_parent(&self.gate, &rel, false, "inspect").ok()?;
        sys::lstatat(dir.as_fd(), &name).ok()
    }

    /// Whether `path` is a directory (`None`: nothing is there, or the gate refuses it).
    pub fn is_dir(&self, path: &str) -> Option<bool> {
        self.stat(path).map(|st| st.kind == Kind::Dir)
    }

    /// The stat data of up to `max` of the project's files (the ones [`Workspace::project_files`]
    /// lists).
    pub fn stat_snapshot(&self, max: usize) -> StatSnapshot {
        let (paths, _) = self.project_files(max);
        let files = paths
            .into_iter()
            .filter_map(|p| self.stat(&p).map(|st| (p, st)))
            .collect();
        StatSnapshot { files }
    }

    /// Remove the directory `path` when it is empty: `Ok(true)` when it was removed, `Ok(false)`
    /// when it stays for a reason that is no failure (not empty, not there, not a directory,
    /// the project root, refused by the gate), and an error when the system failed (an I/O
    /// error, a permission): an undo that emptied the folder must then not be reported done
    /// with the folder left behind, and its journal has the next command finish it.
    pub fn remove_empty_dir(&self, path: &str) -> Result<bool, WorkspaceError> {
        let Ok(rel) = self.gate.check(path, false) else {
            return Ok(false);
        };
        if rel.is_root() {
            return Ok(false);
        }
        let (dir, name) = match open_parent(&self.gate, &rel, false, "rmdir") {
            Ok(found) => found,
            Err(WorkspaceError::NotFound { .. } | WorkspaceError::Refused { .. }) => {
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        match sys::unlinkat(dir.as_fd(), &name, true) {
            Ok(()) => Ok(true),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOTEMPTY | libc::EEXIST | libc::ENOENT | libc::ENOTDIR)
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(WorkspaceError::io("remove the emptied folder", path, e)),
        }
    }
}
